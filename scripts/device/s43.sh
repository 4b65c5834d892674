#!/bin/bash
# Run on the device machine from the repository root (session 43). Device tool `run`, kind
# `nvidia-h100-x1`, carry [".device-bin/s43"]: stripped release builds of HEAD (`gpu-bench`:
# `cargo bench -p hrx --bench gpu --no-run`; `runtime-bench`: `--bench runtime`;
# `host_visible`: `cargo build --release -p hrx-trace --example host_visible`; `conformance`
# and `hrx-lib`: `cargo test --release -p hrx --lib --test tests --no-run`; `capture-lib`:
# `cargo test --release -p hrx-capture --lib --no-run`), `gpu-nospin` (HEAD's GPU bench with
# `SPARE_CPUS = usize::MAX` in src/execution/worker.rs: GPU queue workers spin 50 µs idle, as
# before 4173487) and `host_visible-old` (875aa16's). PARTS (default "tests pipe hv"):
# tests: the CUDA tests (conformance on sim and CUDA, execution, hardware), hrx-capture's
#        lib tests;
# pipe:  issue 17 point 4 (d): the GPU bench's `pipeline_traced` (regions only against
#        untraced, paired rounds), PASSES times each of: head, head with
#        HRX_TRACE_COMPRESSION_THREADS=0, nospin, nospin with 0; one process each;
# hv:    issue 17 point 4 (b), (c): the runtime bench's `host_visible_graph` (criterion and
#        paired rounds), then `host_visible N` untraced and under HRX_TRACE for old and new in
#        turn, ROUNDS times; where the host has two threads a core, the same traced and
#        untraced pinned to one thread of each core (`taskset`).
set -u
d=$PWD/.device-bin/s43
parts=${PARTS:-tests pipe hv}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
lscpu | grep -E "Model name|^CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket"
if [[ $parts == *tests* ]]; then
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  timeout 150 $d/capture-lib > $OUT/capture-lib.txt 2>&1
  for f in conformance execution-tests hardware capture-lib; do
    echo "$f: $(grep 'test result' $OUT/$f.txt | tail -1)"
  done
  grep -E "FAILED|panicked" $OUT/*.txt | head -20
  echo "tests done at ${SECONDS}s"
fi
if [[ $parts == *pipe* ]]; then
  for i in $(seq 1 ${PASSES:-2}); do
    for v in head head0 nospin nospin0; do
      # Leave the host-visible part its time.
      [ $SECONDS -gt ${PIPE_DEADLINE:-330} ] && break 2
      case $v in
        head) b=$d/gpu-bench; c=auto;; head0) b=$d/gpu-bench; c=0;;
        nospin) b=$d/gpu-nospin; c=auto;; nospin0) b=$d/gpu-nospin; c=0;;
      esac
      t=$(mktemp -d /tmp/p-XXXX)
      HRX_TRACE_COMPRESSION_THREADS=$c TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/c-$v-$i timeout 100 $b --bench no-criterion-group > $t/out.txt 2>&1
      rc=$?
      echo "$v $i rc=$rc $(grep -E '^pipeline_traced \(regions only\)' $t/out.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $t/out.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
      [ $rc -ne 0 ] && tail -20 $t/out.txt
      [ $i = 1 ] && cp $t/out.txt $OUT/pipe-$v.txt
      rm -rf $t
    done
  done
fi
if [[ $parts == *hv* ]]; then
  CRITERION_HOME=/tmp/criterion timeout ${BENCH_S:-100} $d/runtime-bench --bench host_visible_graph > $OUT/hv-bench.txt 2>&1
  grep -E "time:|b/a|waiting thread" $OUT/hv-bench.txt
  n=${N:-1000000}
  t() { /usr/bin/time -f "$1 %e s wall %U s user %S s sys" "${@:2}" > /dev/null 2>> $OUT/times.txt; }
  for r in $(seq 1 ${HV_ROUNDS:-3}); do
    for v in old new; do
      b=$d/host_visible; [ $v = old ] && b=$d/host_visible-old
      t "$v untraced" $b $n
      HRX_TRACE=/tmp/hv.hrxt t "$v traced" $b $n
      rm -f /tmp/hv.hrxt
    done
  done
  if [ "$(lscpu | awk -F: '/Thread\(s\) per core/ {gsub(/ /, "", $2); print $2}')" = 2 ]; then
    # One logical CPU of each core: the writer and compression threads never share the
    # submitting thread's core.
    cpus=$(lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2,2n -u | cut -d, -f1 | paste -sd,)
    echo "one thread a core: $cpus"
    for r in $(seq 1 ${HV_ROUNDS:-3}); do
      t "new untraced, one thread a core" taskset -c $cpus $d/host_visible $n
      HRX_TRACE=/tmp/hv.hrxt t "new traced, one thread a core" taskset -c $cpus $d/host_visible $n
      rm -f /tmp/hv.hrxt
    done
  fi
  cat $OUT/times.txt
fi
