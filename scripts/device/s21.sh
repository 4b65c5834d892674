#!/bin/bash
# Run on the device machine from the repository root (issue 20 point 5 on the H200): operation
# times counted from the end of what each waits on (format 1.17) against Nsight Compute, warm
# and with its default cache flush, in the same run; the sum of each region's operation times
# against its region time; the hardware tests run in parallel six times (the segfault seen on
# 2026-12-03), the conformance suite, replay --per-op.
# Device tool `run`, carry [".device-bin/s21"]; .device-bin/s21/ holds stripped release builds:
# hrx-trace, hrx-lib (cargo test --release -p hrx --lib --no-run), tests (tests/tests.rs),
# photo/.
set -u
d=$PWD/.device-bin/s21
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
[ "${PAR:-1}" = 0 ] || { n=0; for i in 1 2 3 4 5 6; do HRX_CUDA_HARDWARE=1 timeout 90 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > par$i.txt 2>&1; rc=$?; echo "parallel run $i rc=$rc" >> par.txt; [ $rc = 0 ] || n=$((n+1)); done
echo "hardware tests, default test threads: $n of 6 runs failed" >> par.txt; }
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --nocapture --test-threads 1 > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > conformance.txt 2>&1; echo "conformance rc=$?" >> conformance.txt
rec() { $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 "$@"; }
rec -o builtin.hrxt > rec-builtin.txt 2>&1; echo "rc=$?" >> rec-builtin.txt
rec --kernel-times -o cupti.hrxt > rec-cupti.txt 2>&1; echo "rc=$?" >> rec-cupti.txt
for t in builtin cupti; do $d/hrx-trace dump --json $t.hrxt > $t.jsonl 2>/dev/null; done
ncu_run() { cache=$1; shift; timeout 200 ncu --csv --clock-control none --cache-control $cache --metrics gpu__time_duration.sum "$@"; }
for cache in none all; do
  ncu_run $cache $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 --no-kernel-times -o ncu-$cache.hrxt > ncu-$cache.csv 2> ncu-$cache.err
  for t in builtin cupti; do
    echo "== $t vs ncu --cache-control $cache (plain kernels)" >> optimes.txt; python3 $s/optimes.py $t.jsonl ncu-$cache.csv >> optimes.txt 2>&1
  done
done
timeout 150 $d/hrx-trace replay builtin.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
$d/hrx-trace stats builtin.hrxt > stats.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 120 ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum $d/hrx-lib gpu::cuda::hardware_tests::hardware_builtin_kernel_times > tiny-ncu.csv 2>tiny-ncu.err
python3 - > tiny.txt <<'PY'
import csv, statistics
rows = [l for l in open("tiny-ncu.csv", errors="replace") if l.startswith('"')]
by = {}
for r in csv.DictReader(rows):
    if r.get("Metric Name") == "gpu__time_duration.sum":
        unit = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6}.get(r["Metric Unit"], 1)
        by.setdefault((r["Kernel Name"].split("(")[0], r["Grid Size"]), []).append(float(r["Metric Value"].replace(",", "")) * unit)
for k, v in sorted(by.items()):
    print("ncu", k, len(v), "median", statistics.median(v), "ns")
PY
cat gpu.txt par.txt; grep -E "^test |rc=|sum of|70 iota" hw.txt | tail -25; cat tiny.txt; tail -n 3 conformance.txt; tail -n 2 rec-*.txt
cat optimes.txt; grep -E "verdict|rc=|SAME|REGRESS|note" replay.txt | head -20; grep -A9 "^kernel" stats.txt | head -10
