#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 22 point 5): how far a
# replay's region medians lie from the capture's when the capture is long enough that its own
# medians are known within a few percent. Device tool `run`, carry [".device-bin/s48",
# ".device-bin/s45/photo"]: `hrx-trace-base` (b910def, stripped), and for BUILDS="base rehash"
# `hrx-trace-rehash` (b910def with scripts/device/s48-rehash.patch: replays hash the host
# writes they re-apply, as the capture did, recording hash and length only). FRAMES
# (240) frames of the pipeline on CUDA recorded by `base`, then REPLAYS (5) rounds of replays,
# each build's at `--pace captured` and `none` (REPEAT (1) repeats after the warm-up), in turn;
# one line per replay: each region kind's median ratio (range over the kind's rows) and the
# widest captured-median interval of the kind, relative.
source scripts/device/s48-host.sh
frames=${FRAMES:-240}
timeout 120 $d/hrx-trace-base record -q --workload pipeline --backend cuda --input $photo --frames $frames -o long.hrxt
echo "recorded $frames frames rc=$? at ${SECONDS}s"
for j in $(seq 1 ${REPLAYS:-5}); do
  for b in ${BUILDS:-base}; do
  for pace in captured none; do
    timeout 120 $d/hrx-trace-$b replay long.hrxt --backend cuda --pace $pace --repeat ${REPEAT:-1} ${EXTRA:-} --report json > r.json 2> r.err
    rc=$?
    python3 $d/../../scripts/device/region-kinds.py r.json "$j" "$b $pace" "$rc"
  done
  done
done
rm -f r.json r.err
