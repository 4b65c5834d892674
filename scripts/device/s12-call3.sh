#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped into .device-bin/s12/ (BENCHMARKS.md, session 12).
# session 12 device call 3: issue 16 point 4 at main 64e29f5 (new) vs dfae669 (old); conformance + hardware tests (a65a743)
d=.device-bin/s12
uptime > $OUT/gpu-new.txt
for v in "" -old; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c$v timeout 200 $d/gpu-bench$v --bench "one_kernel|hundred_kernels" >> $OUT/gpu${v:-"-new"}.txt 2>&1
done
for i in 1 2; do for v in -old ""; do
  CRITERION_HOME=/tmp/r$v$i timeout 60 $d/runtime-bench$v --bench "^submit" > /dev/null 2>&1
  for b in submit submit_to_complete; do echo "$i runtime$v $b $(sed 's/.*"median":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.e+-]*\).*/\1/' /tmp/r$v$i/$b/new/estimates.json) ns"; done
done; done > $OUT/runtime.txt
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib gpu::cuda::hardware_tests -- --skip hardware_fault > $OUT/hardware.txt 2>&1
HRX_TEST_BACKENDS=sim,cuda timeout 120 $d/conformance > $OUT/conformance.txt 2>&1; tail -3 $OUT/conformance.txt; tail -3 $OUT/hardware.txt; cat $OUT/runtime.txt
