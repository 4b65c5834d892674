#!/bin/bash
# Run on the device machine from the repository root (issue 20 points 4 and 5 on the H200):
# hrx's built-in kernels timing themselves (%globaltimer, the default when traced) against
# CUPTI (--kernel-times) and Nsight Compute in the same run; the hardware tests and the
# conformance suite with the self-timing builds; replay --per-op of a default trace.
# Device tool `run`, carry [".device-bin"]; .device-bin/s20/ holds stripped release builds:
# hrx-trace, hrx-lib (cargo test --release -p hrx --lib --no-run), tests (tests/tests.rs),
# photo/.
set -u
d=$PWD/.device-bin/s20
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --nocapture > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > conformance.txt 2>&1; echo "conformance rc=$?" >> conformance.txt
rec() { $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 "$@"; }
rec -o builtin.hrxt > rec-builtin.txt 2>&1; echo "rc=$?" >> rec-builtin.txt
rec --kernel-times -o cupti.hrxt > rec-cupti.txt 2>&1; echo "rc=$?" >> rec-cupti.txt
rec --no-kernel-times -o plain.hrxt > rec-plain.txt 2>&1; echo "rc=$?" >> rec-plain.txt
for t in builtin cupti plain; do $d/hrx-trace dump --json $t.hrxt > $t.jsonl 2>/dev/null; done
# ncu on the plain kernels (what an untraced run launches) and on the self-timing builds.
ncu_run() { timeout 200 ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum "$@"; }
ncu_run $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 --no-kernel-times -o ncu-plain.hrxt > ncu-plain.csv 2> ncu-plain.err
ncu_run $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 -o ncu-builtin.hrxt > ncu-builtin.csv 2> ncu-builtin.err
for t in builtin cupti; do
  echo "== $t vs ncu on the plain kernels" >> optimes.txt; python3 $s/optimes.py $t.jsonl ncu-plain.csv >> optimes.txt 2>&1
done
echo "== builtin vs ncu on the self-timing builds" >> optimes.txt; python3 $s/optimes.py builtin.jsonl ncu-builtin.csv >> optimes.txt 2>&1
echo "== plain (regions only)" >> optimes.txt; python3 $s/optimes.py plain.jsonl >> optimes.txt 2>&1
timeout 150 $d/hrx-trace replay builtin.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
$d/hrx-trace stats builtin.hrxt > stats.txt 2>&1
$d/hrx-trace stats plain.hrxt > stats-plain.txt 2>&1
ls -l *.hrxt > sizes.txt
cat gpu.txt; grep -E "^test |rc=|sum of|region" hw.txt | tail -25; tail -n 3 conformance.txt; tail -n 2 rec-*.txt
cat optimes.txt; grep -E "verdict|rc=|µs|note" replay.txt | head -30; grep -A10 "^kernel" stats.txt | head -12; grep -B1 -A8 "^region" stats.txt | head -20; cat sizes.txt
