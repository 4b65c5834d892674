#!/bin/bash
# Run on the device machine from the repository root (session 46). Device tool `run`, carry
# [".device-bin/s45"] (the builds of scripts/device/s45.sh). PARTS of s45.sh (default "topo
# fid"; "topo fid gate" adds the gate), then the traced pipeline with each turn's line (regions
# only, built-in kernel times and CUPTI against untraced: issue 20 point 5's overhead, issue 17
# (d)), PIPE_ROUNDS (200) paired rounds, PIPES (2) processes; then the round trip (issue 16).
# Everything written under $OUT is packed into one archive, out.tar.gz (traces and JSON lines
# left out), as the device tool brings back a few files only.
set -u
d=$PWD/.device-bin/s45
PARTS=${PARTS:-"topo fid"} DEADLINE=${DEADLINE:-500} bash scripts/device/s45.sh
for i in $(seq 1 ${PIPES:-2}); do
  t=$(mktemp -d /tmp/p-XXXX)
  TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${PIPE_ROUNDS:-200} CRITERION_HOME=/tmp/pq-$i timeout 150 $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$i.txt 2>&1
  echo "pipe $i rc=$? at ${SECONDS}s"
  grep -A3 -E '^pipeline_traced (\(regions only\)|with)' $OUT/pipe-$i.txt
  rm -rf $t
done
PARTS=rt DEADLINE=900 bash scripts/device/s45.sh | grep "=="
(cd $OUT && tar czf /tmp/out.tar.gz --exclude='*.hrxt' --exclude='*.jsonl' . && rm -rf ./* && mv /tmp/out.tar.gz .)
echo "all done at ${SECONDS}s"
