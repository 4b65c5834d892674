#!/bin/bash
# Run on the device machine from the repository root (session 42). Device tool `run`, kind
# `nvidia-h100-x1`, carry [".device-bin/s42"]: release builds of HEAD, `strip --strip-debug`
# (symbols kept for backtraces): the GPU bench (`cargo bench -p hrx --bench gpu --no-run`,
# gpu-bench), hrx's lib and integration test binaries (`cargo test --release -p hrx --lib
# --test tests --no-run`, hrx-lib and conformance) and hrx-capture's lib tests
# (capture-lib). On the GPU host's 16 CPUs the recorder runs two compression threads by
# default (HRX_TRACE_COMPRESSION_THREADS=auto), which this VM (2 CPUs) never does:
# 1. the CUDA tests (conformance on sim and CUDA, execution, hardware);
# 2. hrx-capture's lib tests as they are (defaults: two compression threads);
# 3. the crash hunt of session 40-41: the GPU bench's `pipeline_traced` (CUPTI turn
#    included) in fresh processes until DEADLINE seconds of this script have passed, each
#    crash's backtrace printed (the bench prints it on SIGSEGV, SIGBUS, SIGILL, SIGFPE).
set -u
d=.device-bin/s42
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cuda_tests() {
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  for f in conformance execution-tests hardware; do echo "$f: $(grep 'test result' $OUT/$f.txt | tail -1)"; done
}
cuda_tests
timeout 150 $d/capture-lib > $OUT/capture-lib.txt 2>&1
echo "capture-lib rc=$?: $(grep 'test result' $OUT/capture-lib.txt | tail -1)"
grep -E "FAILED|panicked" $OUT/*.txt | head -20
i=0
while [ $SECONDS -lt ${DEADLINE:-400} ]; do
  i=$((i + 1))
  t=$(mktemp -d /tmp/hunt-XXXX)
  TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/h-$i timeout 150 $d/gpu-bench --bench no-criterion-group > $t/out.txt 2>&1
  rc=$?
  echo "== hunt $i rc=$rc at ${SECONDS}s"
  if [ $rc -ne 0 ]; then cp $t/out.txt $OUT/crash-$i.txt; grep -B3 -A60 "bench: signal" $t/out.txt | head -80; tail -5 $t/out.txt; fi
  [ $i = 1 ] && cp $t/out.txt $OUT/hunt-1.txt
  rm -rf $t
done
