#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU, session 36): the
# round trip without `cuCtxGetCurrent` on the launch and the untimed synchronize. `old` =
# 598aa45 (main before), `new` = the change; .device-bin/s36 holds stripped builds:
# gpu-bench-{old,new} and runtime-{old,new} (`cargo bench -p hrx --bench gpu --bench runtime
# --no-run`), hrx-lib and conformance of `new` (`cargo test --release -p hrx --lib --test
# tests --no-run`). First the CUDA tests of `new` (the hardware tests with the new
# `hardware_untimed_synchronize_needs_no_current_context`, the execution tests, the
# conformance suite on sim and CUDA), then `one_kernel` pairs (PAIRS, builds alternating, one
# process each), `hundred_kernels` once each, criterion's `submit` groups (ROUNDS pairs).
# Device tool `run`, carry [".device-bin/s36"].
d=.device-bin/s36
. scripts/device/s32-common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
uptime > $OUT/uptime.txt
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --nocapture --test-threads 1 > $OUT/hardware.txt 2>&1
echo "hardware rc=$?"; grep -E "^test |panicked|assert" $OUT/hardware.txt | head -20
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
echo "execution rc=$?"; tail -n 3 $OUT/execution-tests.txt | grep "test result"
HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance runtime:: > $OUT/conformance.txt 2>&1
echo "conformance rc=$?"; tail -n 3 $OUT/conformance.txt | grep "test result"
one_kernel_rounds "old new" ${PAIRS:-4}
hundred_kernels "new old"
submit_criterion "old new" ${ROUNDS:-2}
# The ablation once (new): hrx's µs a round trip beside raw + `cuCtxGetCurrent`.
if [ -n "${ABLATION:-}" ]; then
  HRX_BENCH_ONLY=ablation HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/abl timeout 120 $d/gpu-bench-new --bench no-criterion-group > $OUT/ablation.txt 2>&1
  grep -A12 "ablation" $OUT/ablation.txt | head -14
fi
uptime >> $OUT/uptime.txt
cat $OUT/gpu.txt $OUT/uptime.txt
