#!/bin/bash
# Run on the device machine from the repository root (issues 17 point 4 and 22 point 5,
# BENCHMARKS.md session 40): a large host write's hash put off until the upload that reads
# it has run. The GPU bench's `pipeline_traced` (200 paired rounds) of old (.device-bin/s40:
# f5ef1f3) and new (.device-bin/s40b: the change), PASSES times in turn, one process each;
# then the replay gate's 20 unchanged replays of a capture by new (s22-gate.sh, SLOWED=0).
# Device tool `run`, carry [".device-bin/s40", ".device-bin/s40b"]: stripped release builds
# (gpu-bench: `cargo bench -p hrx --bench gpu --no-run`; hrx-trace), photo/ in s40. OLD
# names the old build's folder; GATE=0 leaves out the gate.
set -u
mkdir -p $OUT/gate
for pass in $(seq 1 ${PASSES:-2}); do
  for b in ${OLD:-s40} s40b; do
    HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/p-$b-$pass timeout 150 .device-bin/$b/gpu-bench --bench no-criterion-group > $OUT/pipeline-$b-$pass.txt 2>&1
    echo "== $b $pass: $(grep -h 'regions only' $OUT/pipeline-$b-$pass.txt | head -1 | sed 's/.*rounds: //')"
    echo "   control: $(grep -h -A1 'regions only' $OUT/pipeline-$b-$pass.txt | grep control | head -1 | sed 's/.*rounds: //')"
  done
done
[ "${GATE:-1}" = 1 ] || exit 0
mkdir -p .device-bin/s40b/photo && cp .device-bin/s40/photo/* .device-bin/s40b/photo/
OUT=$OUT/gate SLOWED=0 BIN=$PWD/.device-bin/s40b bash scripts/device/s22-gate.sh
cat $OUT/gate/gate.txt
