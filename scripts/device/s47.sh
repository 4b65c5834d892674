#!/bin/bash
# Run on the device machine from the repository root (session 47). Device tool `run`, carry
# [".device-bin/s47"]: stripped release builds of c168dc8 (`gpu-bench`: `cargo bench -p hrx
# --bench gpu --no-run`; `conformance` and `hrx-lib`: `cargo test --release -p hrx --lib --test
# tests --no-run`). The CUDA tests (conformance on sim and CUDA, execution, hardware, buffer),
# then PIPES (1) processes of the traced pipeline's paired rounds (PIPE_ROUNDS, 100), whose
# lines now say where the traced turn's host time went (issue 17 (d)). $OUT is packed into
# out.tar.gz.
set -u
d=$PWD/.device-bin/s47
. scripts/device/s32-common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cuda_tests
timeout 60 $d/hrx-lib buffer:: 2>&1 | grep "test result"
grep -hE "FAILED|panicked" $OUT/*.txt | head -20
echo "tests done at ${SECONDS}s"
for i in $(seq 1 ${PIPES:-1}); do
  t=$(mktemp -d /tmp/p-XXXX)
  TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${PIPE_ROUNDS:-100} CRITERION_HOME=/tmp/pq-$i timeout ${PIPE_TIMEOUT:-200} $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$i.txt 2>&1
  echo "pipe $i rc=$? at ${SECONDS}s"
  grep -A12 -E '^pipeline_traced (\(regions only\)|with)' $OUT/pipe-$i.txt | grep -vE "^\s*$"
  rm -rf $t
done
(cd $OUT && tar czf /tmp/out.tar.gz . && rm -rf ./* && mv /tmp/out.tar.gz .)
echo "all done at ${SECONDS}s"
