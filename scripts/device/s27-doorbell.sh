#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 27):
# the early launch's doorbell rung after `submit`'s claim, not before (issue 16 point 4).
# .device-bin/s27/ holds stripped release builds: gpu-bench-old (`cargo bench -p hrx --bench gpu
# --no-run` at the commit before), gpu-bench-new, hrx-lib and conformance (`cargo test -p hrx
# --release --no-run`) of the change. First the correctness of the early launch on CUDA, then
# one_kernel and hundred_kernels against raw CUDA, old and new alternating, one process each.
# Each process runs every paired group (the pipeline's 1000 rounds too): about 150 s, so two
# pairs fit a 600 s call (session 27 ran `for i in 1 2 3 4` and reached the limit after two).
d=.device-bin/s27
uptime > $OUT/uptime.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance runtime:: > $OUT/conformance.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution::submit > $OUT/submit-tests.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
tail -n 2 $OUT/conformance.txt $OUT/submit-tests.txt $OUT/hardware.txt
for i in 1 2; do
  for b in old new; do
    HRX_BENCH_ROUNDS=1000 CRITERION_HOME=/tmp/c-$b-$i timeout 150 $d/gpu-bench-$b --bench "one_kernel|hundred_kernels" > $OUT/gpu-$b-$i.txt 2>&1
    echo "== $b $i"; grep -h -A3 "raw (a) vs hrx (b)" $OUT/gpu-$b-$i.txt
  done
done
