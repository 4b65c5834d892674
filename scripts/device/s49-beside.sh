#!/bin/bash
# Run on the device machine from the repository root (session 49, issue 17 point 4 (d)): the
# traced pipeline with a large host write's hash taken beside its copy (`trace::hash_beside`)
# and without. Device tool `run`, carry [".device-bin/s49"]: `gpu-bench` is the GPU bench
# (`cargo bench -p hrx --bench gpu --no-run`, stripped) of the change with
# scripts/device/s49-beside-scratch.patch, whose HRX_SCRATCH_NO_BESIDE turns it off. PASSES (3)
# passes of `beside` and `parked` in turn, the traced pipeline's paired rounds (100).
source scripts/device/s48-pipe.sh
d=$PWD/.device-bin/s49
# A CUDA capture whose host writes were hashed beside their copies replays exactly
# (`hrx-trace`: release build of the change, stripped; `photo/`: the photographs of s45).
if [ -n "${REPLAY:-1}" ]; then
  t=$d/hrx-trace
  (cd /tmp && $t record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o b.hrxt \
    && $t info b.hrxt | head -30 && timeout 120 $t replay b.hrxt --backend cuda) > $OUT/replay.txt 2>&1
  echo "== replay rc=$? at ${SECONDS}s"
  grep -E "^verdict|lost|dropped" $OUT/replay.txt | head -4
fi
for i in $(seq 1 ${PASSES:-3}); do
  pipe beside-$i gpu-bench
  pipe parked-$i gpu-bench HRX_SCRATCH_NO_BESIDE=1
done
# The software device's traced pipeline on this host's CPUs (`cargo bench -p hrx --bench
# runtime --no-run` with the scratch patch, stripped: runtime-bench), criterion groups and
# the paired rounds, with and without.
if [ -n "${SIM:-1}" ]; then
  for v in beside parked; do
    e=; [ $v = parked ] && e=HRX_SCRATCH_NO_BESIDE=1
    env $e CRITERION_HOME=/tmp/rs-$v timeout 150 $d/runtime-bench --bench pipeline_traced > $OUT/sim-$v.txt 2>&1
    echo "== sim $v rc=$? at ${SECONDS}s"
    grep -A1 -E '^pipeline_traced: untraced' $OUT/sim-$v.txt | grep -oE 'median [0-9.]+ \[[^]]*\]'
  done
fi
