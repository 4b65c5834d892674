#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 14,
# the lead's call A), binaries stripped into .device-bin/s14/ from a release build of main:
# `cargo test -p hrx --release --no-run` (hrx-lib: the lib's tests; conformance: tests/tests.rs)
# and `cargo bench -p hrx --bench gpu --bench runtime --no-run` (gpu-bench, runtime-bench).
# First the early launch's correctness on a real asynchronous stream (the conformance suite on
# sim and CUDA, the CUDA hardware tests, execution::submit's tests), then issue 16 point 4
# (one_kernel and hundred_kernels against raw CUDA in the same process, twice), then the
# software device's round trip and issue 17 (b)'s host-visible graph once.
d=.device-bin/s14
uptime > $OUT/uptime.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance runtime:: > $OUT/conformance.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > $OUT/hardware.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution::submit > $OUT/submit-tests.txt 2>&1
tail -n 3 $OUT/conformance.txt $OUT/hardware.txt $OUT/submit-tests.txt
for i in 1 2; do
  HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c$i timeout 150 $d/gpu-bench --bench "one_kernel|hundred_kernels" > $OUT/gpu-$i.txt 2>&1
done
grep -h -A12 "paired" $OUT/gpu-1.txt $OUT/gpu-2.txt | head -60
CRITERION_HOME=/tmp/r timeout 120 $d/runtime-bench --bench "^submit|host_visible_graph" > $OUT/runtime.txt 2>&1
grep -h "time:" -B1 $OUT/runtime.txt
