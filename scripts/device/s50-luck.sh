#!/bin/bash
# Run on the device machine from the repository root (session 50, issue 22 point 5): whether a
# replay's region ratios follow the capture process (its own luck) or the replay process.
# Device tool `run`, carry [".device-bin/s50"] (as s50-reads.sh), or BIN (a folder of those builds). CAPTURES (3) pipeline captures
# of FRAMES (240) frames on CUDA, each replayed REPLAYS (3) times at each of PACES (`captured none`), captures in turn; then
# the first capture replayed REPLAYS times with `--repeat 5` (each repeat a fresh runtime, the
# samples pooled). One line per replay (scripts/device/region-kinds.py).
set -u
d=${BIN:-$PWD/.device-bin/s50}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cd "$OUT"
frames=${FRAMES:-240}
for c in $(seq 1 ${CAPTURES:-3}); do
  timeout 120 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames $frames -o c$c.hrxt
  echo "recorded c$c rc=$? at ${SECONDS}s"
done
for pace in ${PACES:-captured none}; do
  for j in $(seq 1 ${REPLAYS:-3}); do
    for c in $(seq 1 ${CAPTURES:-3}); do
      timeout 120 $d/hrx-trace replay c$c.hrxt --backend cuda --pace $pace --report json > r.json 2> r.err
      python3 $d/../../scripts/device/region-kinds.py r.json "$j" "c$c $pace" "$?"
    done
  done
done
for j in $(seq 1 ${REPLAYS:-3}); do
  timeout 200 $d/hrx-trace replay c1.hrxt --backend cuda --pace captured --repeat 5 --report json > r.json 2> r.err
  python3 $d/../../scripts/device/region-kinds.py r.json "$j" "c1 repeat 5" "$?"
done
rm -f r.json r.err *.hrxt
