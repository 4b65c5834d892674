#!/bin/bash
# Run on the device machine from the repository root (issue 20 points 1 and 5 on the H200):
# kernel times through CUPTI's activity API. The hardware test (graph nodes by their CUPTI
# ids through instantiation's clones, a copy batch by stream), the pipeline recorded with
# and without --kernel-times (per-kernel medians from the trace, scripts/device/optimes.py),
# Nsight Compute's gpu__time_duration.sum for the same kernels in the same session, and
# replay --per-op on CUDA. Device tool `run`, carry [".device-bin"]; .device-bin/s19/ holds a
# stripped release hrx-trace, the hrx lib test binary (hrx-lib) and photo/.
set -u
d=$PWD/.device-bin/s19
s=$PWD/scripts/device
cd $OUT
{
  echo "== libcupti"; find / -name "libcupti.so*" -not -path "*/proc/*" 2>/dev/null | head
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  ncu --version | tail -1
} > env.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests::hardware_kernel_times --nocapture > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
# The pipeline, 12 frames: region-only tracing, then with kernel times.
for mode in regions kernels; do
  flag=""; [ $mode = kernels ] && flag=--kernel-times
  /usr/bin/time -f "$mode wall %e s" $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 $flag -o $mode.hrxt > rec-$mode.txt 2>&1
  echo "rc=$?" >> rec-$mode.txt
  $d/hrx-trace dump --json $mode.hrxt > $mode.jsonl 2>/dev/null
  $d/hrx-trace stats $mode.hrxt > stats-$mode.txt 2>&1
done
# Nsight Compute on the same workload (no CUPTI subscriber of ours: no --kernel-times).
timeout 300 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
  $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 -o ncu.hrxt > ncu.csv 2> ncu.err
echo "ncu rc=$?" >> ncu.err
python3 $s/optimes.py kernels.jsonl ncu.csv > optimes.txt 2>&1
timeout 200 $d/hrx-trace replay kernels.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
cat env.txt; tail -n 30 hw.txt; tail -n 4 rec-*.txt; cat optimes.txt; tail -n 4 ncu.err
grep -c OpTiming kernels.jsonl regions.jsonl
grep -A14 "^operation\|^kernel" stats-kernels.txt | head -30
grep -B2 -A20 "per-operation timing" replay.txt | head -40; tail -n 8 replay.txt
