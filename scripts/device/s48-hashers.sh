#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 17 point 4 (d)): whether
# fewer hashing threads, reading the captured bytes less at once, cost the traced pipeline
# less. Device tool `run`, carry [".device-bin/s48"]: `gpu-bench-hashers` is the GPU bench of
# 0b0eff3 with scripts/device/s48-hashers.patch (HRX_SCRATCH_HASHERS: the hashing threads'
# count; 4 on this host's 16 CPUs by default). PASSES (2) passes of COUNTS (1 2 4) threads in turn,
# the traced pipeline's paired rounds (100).
set -u
d=$PWD/.device-bin/s48
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
for i in $(seq 1 ${PASSES:-2}); do
  for n in 1 2 4; do
    t=$(mktemp -d /tmp/p-XXXX)
    HRX_SCRATCH_HASHERS=$n TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=100 CRITERION_HOME=/tmp/pq-$n-$i \
      timeout 100 $d/gpu-bench-hashers --bench no-criterion-group > $OUT/pipe-$n-$i.txt 2>&1
    echo "== $n hashing threads, pass $i: rc=$? at ${SECONDS}s"
    grep -E '^pipeline_traced \(regions only\)|^  control: untraced \(a\) vs a second' $OUT/pipe-$n-$i.txt | head -2
    grep -E '^    (digest|host fence)' $OUT/pipe-$n-$i.txt | head -2
    rm -rf $t
  done
done
(cd $OUT && tar czf /tmp/out.tar.gz . && rm -rf ./* && mv /tmp/out.tar.gz .)
