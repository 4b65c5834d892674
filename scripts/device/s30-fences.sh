#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 30): the traced
# pipeline rounds of the scratch GPU bench (see s30-ablation.sh) with the first epoch's trace
# kept, host writes recorded and not, then `stats` and `info` of each kept trace.
# Device tool `run`, carry [".device-bin/s30"].
set -u
d=$PWD/.device-bin/s30
cd $OUT
for v in base hostwrites; do
  env=(HRX_SCRATCH_ONLY_REGIONS=1 HRX_SCRATCH_KEEP_TRACE=$OUT/$v.hrxt)
  [ $v = hostwrites ] && env+=(HRX_SCRATCH_NO_HOST_WRITES=1)
  env "${env[@]}" HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-100} CRITERION_HOME=/tmp/c-$v timeout 120 $d/gpu-bench-scratch --bench no-criterion-group > $v.txt 2>&1
  echo "$v rc=$?: $(grep -A1 'regions only)' $v.txt | head -1)"
  $d/hrx-trace stats $v.hrxt > $v-stats.txt 2>&1
  $d/hrx-trace info $v.hrxt > $v-info.txt 2>&1
  $d/hrx-trace stats --json $v.hrxt > $v-stats.json 2>&1
  [ -n "${KEEP:-}" ] || rm -f $v.hrxt
done
