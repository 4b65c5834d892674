#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped into .device-bin/s12/ (BENCHMARKS.md, session 12).
# session 12 device call 1: rt ablation (new 2a8112e vs old dfae669)
d=.device-bin/s12
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/smi.txt 2>&1
uptime >> $OUT/smi.txt
for v in "" -old; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c$v timeout 200 $d/gpu-bench$v --bench "one_kernel|hundred_kernels" > $OUT/gpu$v.txt 2>&1
done
for i in 1 2; do for v in -old ""; do
  CRITERION_HOME=/tmp/r$v$i timeout 60 $d/runtime-bench$v --bench "^submit" > /dev/null 2>&1
  for b in submit submit_to_complete; do echo "$i runtime$v $b $(sed 's/.*"median":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.e+-]*\).*/\1/' /tmp/r$v$i/$b/new/estimates.json) ns"; done
done; done | tee $OUT/runtime.txt
