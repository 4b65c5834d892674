#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 30): the GPU
# bench's traced pipeline rounds for builds named in BUILDS (gpu-bench-NAME in
# .device-bin/s30), one process each, in turn, PASSES times. Device tool `run`, carry
# [".device-bin/s30"].
set -u
d=$PWD/.device-bin/s30
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for pass in $(seq ${PASSES:-2}); do
  for b in ${BUILDS:-old new}; do
    HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/c-$b-$pass timeout ${LIMIT:-150} $d/gpu-bench-$b --bench no-criterion-group > $b-$pass.txt 2>&1
    echo "$b pass $pass rc=$?"
    grep -E "xxh3 of one|regions only\)|with built-in|same rounds|CUPTI\)" -A1 $b-$pass.txt | grep -E "median|xxh3" | sed 's/10 epochs of fresh runtimes, //'
  done
done
