#!/bin/bash
# Run on the device machine from the repository root (session 47). Device tool `run`, carry
# [".device-bin/s47"]: `gpu-bench` (HEAD, its traced rounds naming each recorder wait's kind and
# thread) and `gpu-bench-spin` (the same with scripts/device/s47-spin.patch: a host access at a capture
# fence spins up to 2 ms before it sleeps in 20 µs steps), PASSES (2) processes of each in turn,
# the traced pipeline's paired rounds (100): issue 17 (d).
set -u
d=$PWD/.device-bin/s47
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
for i in $(seq 1 ${PASSES:-2}); do
  for b in ${BUILDS:-gpu-bench gpu-bench-spin}; do
    t=$(mktemp -d /tmp/p-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=100 CRITERION_HOME=/tmp/pq-$b-$i timeout 100 $d/$b --bench no-criterion-group > $OUT/pipe-$b-$i.txt 2>&1
    echo "== $b $i rc=$? at ${SECONDS}s"
    grep -A24 -E '^pipeline_traced \(regions only\)' $OUT/pipe-$b-$i.txt | grep -vE "^\s*$"
    grep -E '^  regions only \(a\) vs' $OUT/pipe-$b-$i.txt
    rm -rf $t
  done
done
(cd $OUT && tar czf /tmp/out.tar.gz . && rm -rf ./* && mv /tmp/out.tar.gz .)
