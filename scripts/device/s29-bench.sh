#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 29): the GPU
# bench's pipeline rounds (issue 17's traced pipeline, issue 20 point 4's cost), the build
# before the start markers (gpu-bench-old) and after (gpu-bench), one process each, in turn.
# Device tool `run`, carry [".device-bin/s29"]; gpu-bench from `cargo bench -p hrx --bench gpu
# --no-run`, stripped.
set -u
d=$PWD/.device-bin/s29
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
i=0
for b in ${BUILDS:-old new}; do
  i=$((i+1)); bin=$d/gpu-bench; [ $b = old ] && bin=$d/gpu-bench-old
  HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/c-$b-$i timeout ${LIMIT:-270} $bin --bench no-criterion-group > bench-$i-$b.txt 2>&1; echo "bench $b rc=$?" >> bench-$i-$b.txt
done
cat gpu.txt
for f in bench-*.txt; do echo "== $f"; grep -E "${PATTERN:-paired|ratio|regions only|built-in|control|rc=|span check|event|marker}" $f | head -30; done
