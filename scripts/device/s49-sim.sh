#!/bin/bash
# Run on the device machine from the repository root (session 49, issue 17 point 4): the
# software device's traced pipeline with a large host write hashed one piece behind its copy
# (151d2bc) and parked, on this host's CPUs, and a CUDA capture of the same tree replayed.
# Device tool `run`, carry [".device-bin/s49"]: `runtime-bench` (`cargo bench -p hrx --bench
# runtime --no-run` of 151d2bc with scripts/device/s49-beside-scratch.patch, stripped),
# `hrx-trace` (release build of 151d2bc, stripped), `photo/`. PASSES (2) passes of each in turn.
set -u
d=$PWD/.device-bin/s49
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
(cd /tmp && $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o c.hrxt \
  && timeout 120 $d/hrx-trace replay c.hrxt --backend cuda) > $OUT/replay.txt 2>&1
echo "== replay rc=$?"; grep -E "^verdict" $OUT/replay.txt
for i in $(seq 1 ${PASSES:-2}); do
  for v in beside parked; do
    e=; [ $v = parked ] && e=HRX_SCRATCH_NO_BESIDE=1
    env $e CRITERION_HOME=/tmp/rs-$v timeout 150 $d/runtime-bench --bench pipeline_traced > $OUT/sim-$v-$i.txt 2>&1
    echo "== sim $v $i rc=$? at ${SECONDS}s: $(grep -A1 '^pipeline_traced: untraced' $OUT/sim-$v-$i.txt | grep -oE 'median [0-9.]+ \[[^]]*\]' | tr '\n' ' ')"
  done
done
