#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 33, third call):
# the whole runtime bench of the old (`head`, 5bfecd2) and new builds in turns, each
# group's median printed, then the CUDA tests of the new build (s32-common.sh).
d=.device-bin/s33
. scripts/device/s32-common.sh
for b in head new; do
  CRITERION_HOME=/tmp/w-$b timeout 150 $d/runtime-$b --bench > /tmp/whole-runtime-$b.txt 2>&1
  echo "runtime $b rc=$?"
  grep -B1 -E "^\s*time:|time:" /tmp/whole-runtime-$b.txt | grep -vE "^--|Benchmarking" | paste - - | awk '{$1=$1; print}' | sed 's/ time: / /' | cut -c1-120
done
cuda_tests
