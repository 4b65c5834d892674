#!/bin/bash
# Run on the device machine from the repository root (session 51, issue 22 point 5): how far
# captures' own region medians lie apart, against their replays'. Device tool `run`, carry
# [".device-bin/s51"] (scripts/device/s51.sh). CAPTURES (8) pipeline captures of FRAMES (240)
# frames on CUDA, each replayed REPLAYS (2) times at `--pace captured`; one line per replay
# (`scripts/device/region-kinds.py --medians`; capture-medians.py, as run, folded into it since).
set -u
d=$PWD/.device-bin/s51
sd=$PWD/scripts/device
cd "$OUT"
for c in $(seq 1 ${CAPTURES:-8}); do
  timeout 60 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-240} -o c.hrxt
  for j in $(seq 1 ${REPLAYS:-2}); do
    timeout 60 $d/hrx-trace replay c.hrxt --backend cuda --pace captured --report json > r.json 2> r.err
    python3 $sd/region-kinds.py --medians r.json "c$c r$j"
  done
done
rm -f r.json r.err *.hrxt
echo "done at ${SECONDS}s"
