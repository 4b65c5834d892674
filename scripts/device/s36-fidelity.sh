#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times" and
# "Capture", session 36): session 29's s29-markers.sh on this session's build, without the
# tests (s36-round-trip.sh runs them), then the GPU bench's traced pipeline (issue 17:
# region-only tracing against untraced), PASSES processes of ROUNDS paired rounds.
# Device tool `run`, carry [".device-bin/s36b"]: stripped release builds hrx-trace and
# gpu-bench (`cargo bench -p hrx --bench gpu --no-run`), and photo/Aqua.jpg.
set -u
BIN=${BIN:-.device-bin/s36b} SKIP_TESTS=${SKIP_TESTS-1} bash scripts/device/s29-markers.sh
d=$PWD/${BIN:-.device-bin/s36b}
cd $OUT
for pass in $(seq ${PASSES:-3}); do
  HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/p-$pass timeout 150 $d/gpu-bench --bench no-criterion-group > pipeline-$pass.txt 2>&1
  echo "pipeline pass $pass rc=$?"
  grep -E "xxh3 of one|regions only\)|with built-in|same rounds|CUPTI\)" -A1 pipeline-$pass.txt | grep -E "median|xxh3" | sed 's/10 epochs of fresh runtimes, //'
done
