# Sourced by session 32's device scripts (scripts/device/s32-*.sh), run on the device machine
# from the repository root. $d holds the stripped builds: gpu-bench-<build> (`cargo bench -p
# hrx --bench gpu --no-run`); hrx-lib and conformance (`cargo test -p hrx --release
# --no-run`) of the newest.

# `one_kernel`'s paired rounds against raw CUDA, builds ($1) in rotation, one process each
# (`HRX_BENCH_ONLY=one_kernel`, 2000 paired rounds of 100 round trips), $2 times.
one_kernel_rounds() {
  for i in $(seq 1 $2); do
    for b in $1; do
      HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-$b-$i timeout 60 $d/gpu-bench-$b --bench no-criterion-group > $OUT/one-$b-$i.txt 2>&1
      echo "== one_kernel $b $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$b-$i.txt | sed 's/.*rounds: //')"
    done
  done
}

# `hundred_kernels` (400 paired rounds) once per build ($1).
hundred_kernels() {
  for b in $1; do
    HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$b timeout 120 $d/gpu-bench-$b --bench no-criterion-group > $OUT/hundred-$b.txt 2>&1
    echo "== hundred_kernels $b: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$b.txt | sed 's/.*rounds: //')"
  done
}

# The conformance suite on sim and CUDA, the execution tests and the CUDA hardware tests.
cuda_tests() {
  [ -x $d/conformance ] || return 0
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  tail -qn 3 $OUT/conformance.txt $OUT/execution-tests.txt $OUT/hardware.txt | grep "test result"
}

# Criterion's `submit` and `submit_to_complete` of the runtime bench builds ($1, runtime-<build>)
# in turns, $2 rounds, each line the two medians (session 33).
submit_criterion() {
  for i in $(seq 1 $2); do
    for b in $1; do
      CRITERION_HOME=/tmp/s-$b-$i $d/runtime-$b --bench '^submit' > $OUT/submit-$b-$i.txt 2>&1
      echo "criterion $b $i $(grep -E 'time:' $OUT/submit-$b-$i.txt | awk '{print $1, $5, $6}' | tr '\n' ' ')"
    done
  done
}
