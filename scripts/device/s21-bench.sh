#!/bin/bash
# Run on the device machine from the repository root (issue 20 point 5's cost statement, issue 17's traced pipeline on the H200):
# the GPU bench's pipeline rounds, regions only against the built-in kernels timing themselves
# (paired round by round) and against kernel times through CUPTI. Device tool `run`, carry
# [".device-bin/s21"]; .device-bin/s21/gpu-bench from `cargo bench -p hrx --bench gpu --no-run`.
set -u
d=$PWD/.device-bin/s21
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
CRITERION_HOME=/tmp/criterion timeout 540 $d/gpu-bench --bench pipeline_traced > bench.txt 2>&1; echo "bench rc=$?" >> bench.txt
cat gpu.txt; grep -E "paired|ratio|pipeline_traced|regions only|built-in|control|rc=" bench.txt | head -40
