#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 33, second call):
# old (`head`: runtime and round_trip at 5bfecd2; `e`: the gpu bench of session 32's final
# build) against `new` (the committed change): the round trip and criterion's `submit`
# groups in turns, `one_kernel` pairs, the whole runtime and gpu benches once per build in
# turns, then (TESTS=1) the CUDA tests of the new build (s32-common.sh).
d=.device-bin/s33
. scripts/device/s32-common.sh
uptime > $OUT/uptime.txt
for i in 1 2 3; do
  for b in head new; do echo "rt $b $i $($d/rt-$b 1000000)"; done
done
submit_criterion "head new" 3
one_kernel_rounds "e new" ${PAIRS:-3}
hundred_kernels "new e"
for pair in "head e" "new new"; do
  set -- $pair
  CRITERION_HOME=/tmp/w-$1 timeout 150 $d/runtime-$1 --bench > $OUT/whole-runtime-$1.txt 2>&1
  echo "runtime $1 rc=$?"
  HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/g-$2 timeout 150 $d/gpu-bench-$2 --bench > $OUT/whole-gpu-$2.txt 2>&1
  echo "gpu $2 rc=$?"
done
[ -n "$TESTS" ] && cuda_tests
uptime >> $OUT/uptime.txt
