#!/bin/bash
# Run on the device machine from the repository root (session 40): the CUDA tests of the
# build with host writes' hashes put off until a reading region ran (.device-bin/s40b:
# hrx-lib and tests, `cargo test --release -p hrx --lib --test tests --no-run`), then
# s40-parked.sh's `pipeline_traced` pairs again (PASSES, no gate). Device tool `run`, carry
# [".device-bin/s40old", ".device-bin/s40b"] (s40old: the GPU bench of f5ef1f3).
set -u
d=.device-bin/s40b
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --test-threads 1 > $OUT/hw.txt 2>&1; echo "hw rc=$?"; grep "test result" $OUT/hw.txt
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution.txt 2>&1; echo "execution rc=$?"; grep "test result" $OUT/execution.txt
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > $OUT/conformance.txt 2>&1; echo "conformance rc=$?"; grep "test result" $OUT/conformance.txt
for pass in $(seq 1 ${PASSES:-2}); do
  for b in s40old s40b; do
    HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/q-$b-$pass timeout 150 .device-bin/$b/gpu-bench --bench no-criterion-group > $OUT/pipeline-$b-$pass.txt 2>&1
    echo "== $b $pass: $(grep -h 'regions only' $OUT/pipeline-$b-$pass.txt | head -1 | sed 's/.*rounds: //')"
    echo "   control: $(grep -h -A1 'regions only' $OUT/pipeline-$b-$pass.txt | grep control | head -1 | sed 's/.*rounds: //')"
  done
done
