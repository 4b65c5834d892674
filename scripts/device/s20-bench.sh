#!/bin/bash
# Run on the device machine from the repository root (issue 20 point 4's cost on the H200):
# the GPU bench's pipeline rounds, regions only against the built-in kernels timing themselves
# (paired round by round) and against kernel times through CUPTI. Device tool `run`, carry
# [".device-bin/s20"]; .device-bin/s20/gpu-bench from `cargo bench -p hrx --bench gpu --no-run`.
set -u
d=$PWD/.device-bin/s20
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
CRITERION_HOME=/tmp/criterion timeout 540 $d/gpu-bench --bench pipeline_traced > bench.txt 2>&1; echo "bench rc=$?" >> bench.txt
cat gpu.txt; grep -E "paired|ratio|pipeline_traced|regions only|built-in|control|rc=" bench.txt | head -40
# A kernel of 4 blocks (iota over 1024 words, 70 in a chain): its own time against Nsight
# Compute's, to show what ncu's gpu__time_duration adds to any kernel (launch and drain).
HRX_CUDA_HARDWARE=1 $d/hrx-lib gpu::cuda::hardware_tests::hardware_builtin_kernel_times --nocapture > tiny.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 120 ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum $d/hrx-lib gpu::cuda::hardware_tests::hardware_builtin_kernel_times > tiny-ncu.csv 2>tiny-ncu.err
grep -E "70 iota|test result" tiny.txt
python3 - <<'PY'
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
