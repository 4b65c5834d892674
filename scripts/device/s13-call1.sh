#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped
# into .device-bin/s13/ (BENCHMARKS.md, GPU section, session 13).
# session 13 device call 1: issue 16 point 4, main 9f882d2 (new: this session's runtime
# changes) against main 8080c07 (old), alternating: one_kernel and hundred_kernels once each
# (new first), then two pairs of the software device's round trip (old first).
d=.device-bin/s13
uptime > $OUT/uptime.txt
for v in "" -old; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c$v timeout 200 $d/gpu-bench$v --bench "one_kernel|hundred_kernels" > $OUT/gpu${v:-"-new"}.txt 2>&1
done
for i in 1 2; do for v in -old ""; do
  CRITERION_HOME=/tmp/r$v$i timeout 60 $d/runtime-bench$v --bench "^submit" > /dev/null 2>&1
  for b in submit submit_to_complete; do echo "$i runtime${v:-"-new"} $b $(sed 's/.*"median":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.e+-]*\).*/\1/' /tmp/r$v$i/$b/new/estimates.json) ns"; done
done; done > $OUT/runtime.txt
cat $OUT/runtime.txt; grep -h -A12 "paired" $OUT/gpu-new.txt $OUT/gpu-old.txt | head -60
