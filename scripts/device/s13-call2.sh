#!/bin/bash
# Run on the device machine from the repository root, after s13-call1.sh, with the same
# binaries in .device-bin/s13/ (BENCHMARKS.md, GPU section, session 13).
# session 13 device call 2: every other software-device group once per build (old first),
# a third pair of the round trip (new first), then the CUDA checks of the new build (the
# conformance suite on sim and CUDA, the CUDA hardware tests).
d=.device-bin/s13
for v in -old ""; do
  CRITERION_HOME=/tmp/p$v timeout 120 $d/runtime-bench$v --bench "pipeline_frame|pipeline_8_frames|host_visible_graph" > $OUT/runtime-rest${v:-"-new"}.txt 2>&1
done
for v in "" -old; do
  CRITERION_HOME=/tmp/r3$v timeout 60 $d/runtime-bench$v --bench "^submit" > /dev/null 2>&1
  for b in submit submit_to_complete; do echo "3 runtime${v:-"-new"} $b $(sed 's/.*"median":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.e+-]*\).*/\1/' /tmp/r3$v/$b/new/estimates.json) ns"; done
done > $OUT/runtime3.txt
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib gpu::cuda::hardware_tests -- --skip hardware_fault > $OUT/hardware.txt 2>&1
HRX_TEST_BACKENDS=sim,cuda timeout 120 $d/conformance > $OUT/conformance.txt 2>&1
cat $OUT/runtime3.txt; tail -3 $OUT/conformance.txt; tail -3 $OUT/hardware.txt
grep -h "time:" -B1 $OUT/runtime-rest-old.txt $OUT/runtime-rest-new.txt
