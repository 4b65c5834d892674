#!/bin/bash
# Run on the device machine from the repository root (session 42). Device tool `run`, kind
# `nvidia-h100-x1`, carry [".device-bin/s42b"]: stripped GPU benches (`cargo bench -p hrx
# --bench gpu --no-run`) of c572451 (`head`) and of c572451 with `SPARE_CPUS = usize::MAX`
# in src/execution/worker.rs (`nospin`: GPU queue workers spin 50 µs idle, as before
# 4173487). The GPU bench's `pipeline_traced` (regions only against untraced, paired rounds)
# of head, of head with HRX_TRACE_COMPRESSION_THREADS=0 and of nospin with 0, in turn,
# PASSES times, one process each; each line the regions-only ratio and its control.
set -u
d=.device-bin/s42b
for i in $(seq 1 ${PASSES:-3}); do
  for v in head head0 nospin0; do
    case $v in head) b=$d/gpu-head; c=auto;; head0) b=$d/gpu-head; c=0;; nospin0) b=$d/gpu-nospin; c=0;; esac
    t=$(mktemp -d /tmp/p-XXXX)
    HRX_TRACE_COMPRESSION_THREADS=$c TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/c-$v-$i timeout 100 $b --bench no-criterion-group > $t/out.txt 2>&1
    echo "$v $i rc=$? $(grep -E '^pipeline_traced \(regions only\)' $t/out.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $t/out.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
    rm -rf $t
  done
done
