#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times",
# session 36): with kernel times through CUPTI, a region or copy batch whose every operation
# CUPTI timed runs over its operations. The CUPTI hardware test, then the pipeline recorded
# with CUPTI (and regions only with REGIONS=1), `stats` of each and the operation times against the regions
# (scripts/device/optimes.py). Device tool `run`, carry [".device-bin/s36c"]: stripped
# release builds hrx-trace and hrx-lib (`cargo test --release -p hrx --lib --no-run`), and
# photo/Aqua.jpg.
set -u
d=$PWD/${BIN:-.device-bin/s36c}
s=$PWD/scripts/device
cd $OUT
HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests::hardware_kernel_times --nocapture > hw.txt 2>&1; echo "hw rc=$?"
grep -E "^launch|copy batch|test result|panicked" hw.txt | cut -c1-300
rec() { $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-12} "$@"; }
rec --kernel-times -o cupti.hrxt > rec-cupti.txt 2>&1; echo "cupti rc=$?"
[ -n "${REGIONS:-}" ] && { rec --no-kernel-times -o regions.hrxt > rec-regions.txt 2>&1; echo "regions rc=$?"; }
for t in cupti ${REGIONS:+regions}; do
  $d/hrx-trace stats $t.hrxt > stats-$t.txt 2>&1
  $d/hrx-trace dump --json $t.hrxt > $t.jsonl 2>/dev/null
  echo "== $t"; grep -E "^(upload|download|hrx_|region|hrx_rgb)|GPU (Upload|Compute|Download)|clock|operations" stats-$t.txt
  python3 $s/optimes.py $t.jsonl | tail -1
done
