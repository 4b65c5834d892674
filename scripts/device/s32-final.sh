#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 32):
# `one_kernel` paired rounds (builds in rotation, one process each, 2000 rounds of 100 round
# trips), `hundred_kernels`, the software device's `submit` and `submit_to_complete`
# (criterion, old and new alternating) and the other runtime groups once each, then the CUDA
# tests of the new build. .device-bin/s32/: gpu-bench-<b> and runtime-bench-<b>
# (`cargo bench -p hrx --bench gpu --bench runtime --no-run`, stripped), a = 7266681 (before
# the session), e = the session's runtime changes; hrx-lib and conformance of e.
d=.device-bin/s32
builds=${BUILDS:-"a e"}
uptime > $OUT/uptime.txt
for i in $(seq 1 ${PAIRS:-8}); do
  for b in $builds; do
    HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-$b-$i timeout 60 $d/gpu-bench-$b --bench no-criterion-group > $OUT/one-$b-$i.txt 2>&1
    echo "== one_kernel $b $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$b-$i.txt | sed 's/.*rounds: //')"
  done
done
for b in $builds; do
  HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$b timeout 120 $d/gpu-bench-$b --bench no-criterion-group > $OUT/hundred-$b.txt 2>&1
  echo "== hundred_kernels $b: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$b.txt | sed 's/.*rounds: //')"
done
for i in 1 2 3; do
  for b in $builds; do
    CRITERION_HOME=/tmp/r-$b-$i timeout 100 $d/runtime-bench-$b --bench "^submit" > /dev/null 2>&1
    for g in submit submit_to_complete; do
      echo "== $g $b $i: $(sed 's/.*"median":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.e+-]*\).*/\1/' /tmp/r-$b-$i/$g/new/estimates.json) ns"
    done
  done
done
for b in $builds; do
  CRITERION_HOME=/tmp/p-$b timeout 200 $d/runtime-bench-$b --bench "pipeline_frame|pipeline_8_frames|host_visible_graph" > $OUT/runtime-rest-$b.txt 2>&1
  grep -E "^[a-z_0-9/]+ +time:|^[a-z_0-9/]+$|time: " $OUT/runtime-rest-$b.txt | sed "s/^/== $b /"
done
if [ -x $d/conformance ]; then
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  tail -qn 3 $OUT/conformance.txt $OUT/execution-tests.txt $OUT/hardware.txt | grep "test result"
fi
uptime >> $OUT/uptime.txt
