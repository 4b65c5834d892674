#!/bin/bash
# Run on the device machine from the repository root, after s13-call2.sh, with the same
# binaries in .device-bin/s13/ (BENCHMARKS.md, GPU section, session 13).
# session 13 device call 3: one_kernel and hundred_kernels again, old first this time.
d=.device-bin/s13
for v in -old ""; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c3$v timeout 200 $d/gpu-bench$v --bench "one_kernel|hundred_kernels" > $OUT/gpu3${v:-"-new"}.txt 2>&1
done
grep -h -A12 "paired" $OUT/gpu3-old.txt $OUT/gpu3-new.txt | head -60
