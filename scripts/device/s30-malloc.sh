#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 30): the scratch
# GPU bench's region-only traced pipeline rounds (s30-ablation.sh) as built, and with glibc's
# heap kept (MALLOC_MMAP_THRESHOLD_ 32 MiB, MALLOC_TRIM_THRESHOLD_ 4 GiB: no frame freed
# inside a timed run returns memory to the kernel), PASSES processes each, alternating.
# Device tool `run`, carry [".device-bin/s30"].
set -u
bin=$PWD/.device-bin/s30/gpu-bench-scratch
cd $OUT
for pass in $(seq ${PASSES:-3}); do
  for v in default kept; do
    env=(HRX_SCRATCH_ONLY_REGIONS=1 HRX_SCRATCH_FRAME_TIMES=1)
    [ $v = kept ] && env+=(MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296)
    env "${env[@]}" HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-300} CRITERION_HOME=/tmp/c-$v-$pass timeout 120 $bin --bench no-criterion-group > $v-$pass.txt 2>&1
    echo "$v $pass rc=$? slow drops $(grep -c 'drop [0-9.]*ms' $v-$pass.txt) slow maps $(grep -c 'map [0-9.]*ms' $v-$pass.txt): $(grep -A1 'regions only)' $v-$pass.txt | grep -o 'a [0-9.]* ms, b [0-9.]* ms.*median [0-9.]*' | head -2 | tr '\n' ' ')"
  done
done
