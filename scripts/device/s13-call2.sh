#!/bin/bash
# Run on the device machine from the repository root, after s13-call1.sh, with the same
# binaries in .device-bin/s13/ (BENCHMARKS.md, GPU section, session 13).
# session 13 device call 2: the GPU groups again (old first this time), every other
# software-device group once per build, then the CUDA checks of the new build (the
# conformance suite on sim and CUDA, the CUDA hardware tests).
d=.device-bin/s13
for v in -old ""; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c2$v timeout 200 $d/gpu-bench$v --bench "one_kernel|hundred_kernels" > $OUT/gpu2${v:-"-new"}.txt 2>&1
done
for v in -old ""; do
  CRITERION_HOME=/tmp/p$v timeout 120 $d/runtime-bench$v --bench "pipeline_frame|pipeline_8_frames|host_visible_graph" > $OUT/runtime-rest${v:-"-new"}.txt 2>&1
done
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib gpu::cuda::hardware_tests -- --skip hardware_fault > $OUT/hardware.txt 2>&1
HRX_TEST_BACKENDS=sim,cuda timeout 120 $d/conformance > $OUT/conformance.txt 2>&1
tail -3 $OUT/conformance.txt; tail -3 $OUT/hardware.txt
grep -h -A12 "paired" $OUT/gpu2-old.txt $OUT/gpu2-new.txt | head -60
grep -h "time:" -B1 $OUT/runtime-rest-old.txt $OUT/runtime-rest-new.txt
