#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 28):
# `one_kernel`'s paired rounds against raw CUDA, builds in rotation, one process each
# (`HRX_BENCH_ONLY=one_kernel`, criterion's own groups filtered out, 2000 paired rounds of
# 100 round trips), PAIRS times; then `hundred_kernels` once per build; then the CUDA tests.
# .device-bin/s28/ holds stripped builds: gpu-bench-<build> (`cargo bench -p hrx --bench gpu
# --no-run`), hrx-lib and conformance (`cargo test -p hrx --release --no-run`) of the newest.
d=.device-bin/s28
builds=${BUILDS:-"old c"}
uptime > $OUT/uptime.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
for i in $(seq 1 ${PAIRS:-10}); do
  for b in $builds; do
    HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-$b-$i timeout 60 $d/gpu-bench-$b --bench no-criterion-group > $OUT/one-$b-$i.txt 2>&1
    echo "== one_kernel $b $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$b-$i.txt | sed 's/.*rounds: //')"
  done
done
for b in $builds; do
  HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$b timeout 120 $d/gpu-bench-$b --bench no-criterion-group > $OUT/hundred-$b.txt 2>&1
  echo "== hundred_kernels $b: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$b.txt | sed 's/.*rounds: //')"
done
if [ -x $d/conformance ]; then
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance runtime:: > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution::submit > $OUT/submit-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  tail -qn 3 $OUT/conformance.txt $OUT/submit-tests.txt $OUT/hardware.txt | grep "test result"
fi
uptime >> $OUT/uptime.txt
