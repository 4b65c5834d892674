#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 32):
# `one_kernel` paired rounds (builds in rotation, one process each, 2000 rounds of 100 round
# trips), `hundred_kernels`, the software device's `submit` and `submit_to_complete`
# (criterion, old and new alternating) and the other runtime groups once each, then the CUDA
# tests of the new build. .device-bin/s32/: gpu-bench-<b> and runtime-bench-<b>
# (`cargo bench -p hrx --bench gpu --bench runtime --no-run`, stripped), a = 7266681 (before
# the session), e = the session's runtime changes; hrx-lib and conformance of e.
d=.device-bin/s32
. scripts/device/s32-common.sh
builds=${BUILDS:-"a e"}
uptime > $OUT/uptime.txt
one_kernel_rounds "$builds" ${PAIRS:-8}
hundred_kernels "$builds"
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
cuda_tests
uptime >> $OUT/uptime.txt
