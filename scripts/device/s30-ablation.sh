#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 30): what each
# part of region-only capture costs the traced pipeline. gpu-bench-scratch is the GPU bench
# built with session 30's scratch switches (not committed): HRX_SCRATCH_UNTIMED_COPIES (copy
# batches without their event pair), HRX_SCRATCH_NO_DIGESTS (no output digests),
# HRX_SCRATCH_NO_HOST_WRITES (host writes not recorded), HRX_SCRATCH_ONLY_REGIONS (only the
# region-only paired rounds). One process per line, variants in turn, PASSES times.
# Device tool `run`, carry [".device-bin/s30"].
set -u
bin=$PWD/.device-bin/s30/gpu-bench-scratch
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
uptime
for pass in $(seq ${PASSES:-2}); do
  for v in base copies digests hostwrites none; do
    env=(HRX_SCRATCH_ONLY_REGIONS=1)
    case $v in
      copies) env+=(HRX_SCRATCH_UNTIMED_COPIES=1);;
      digests) env+=(HRX_SCRATCH_NO_DIGESTS=1);;
      hostwrites) env+=(HRX_SCRATCH_NO_HOST_WRITES=1);;
      none) env+=(HRX_SCRATCH_UNTIMED_COPIES=1 HRX_SCRATCH_NO_DIGESTS=1 HRX_SCRATCH_NO_HOST_WRITES=1);;
    esac
    env "${env[@]}" HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-300} CRITERION_HOME=/tmp/c-$v-$pass timeout 120 $bin --bench no-criterion-group > $v-$pass.txt 2>&1
    echo "$v pass $pass rc=$?: $(grep -A1 'pipeline_traced (regions only)' $v-$pass.txt | tr '\n' ' ')"
  done
done
