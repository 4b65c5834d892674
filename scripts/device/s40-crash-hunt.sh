#!/bin/bash
# Run on the device machine from the repository root (session 40): the GPU bench's
# `pipeline_traced` of the build with parked host-write hashes (.device-bin/s40b), RUNS
# processes, then of f5ef1f3 (.device-bin/s40old); a process that dies of a signal has its
# traces (left in its temporary folder) described with `hrx-trace info`. Device tool `run`,
# carry [".device-bin/s40old", ".device-bin/s40b"].
set -u
for b in ${BUILDS:-s40b s40old}; do
  for i in $(seq 1 ${RUNS:-4}); do
    t=$(mktemp -d /tmp/hunt-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-100} CRITERION_HOME=/tmp/h-$b-$i timeout 150 .device-bin/$b/gpu-bench --bench no-criterion-group > $OUT/hunt-$b-$i.txt 2>&1
    rc=$?
    echo "== $b $i rc=$rc $(grep -h 'regions only' $OUT/hunt-$b-$i.txt | head -1 | sed 's/.*per round: //')"
    if [ $rc -ge 128 ]; then
      for f in $(find $t -name '*.hrxt'); do echo "-- $f"; .device-bin/s40b/hrx-trace info $f 2>&1 | grep -E "capture|crashed|closed|ended|signal" | head -5; done
      tail -3 $OUT/hunt-$b-$i.txt
    fi
    rm -rf $t
  done
done
