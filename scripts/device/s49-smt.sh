#!/bin/bash
# Run on the device machine from the repository root (session 49, issue 22 point 5): whether
# the replays' copies and software-NPU runs move from process to process because hrx's
# threads share cores (SMT siblings) with spinning threads. Device tool `run`, carry
# [".device-bin/s49"]: `hrx-trace` (release build of this session's tree, stripped) and
# `photo/`. Two FRAMES (240)-frame pipeline captures on CUDA, one as the process is placed
# (`plain`) and one under `taskset` on one logical CPU of each core (`core`), then REPLAYS (4)
# rounds of each capture's replay at `--pace captured`, under the same placement; one line
# per replay (scripts/device/region-kinds.py): each region kind's median ratio (range over the
# kind's rows).
set -u
d=$PWD/.device-bin/s49
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
lscpu | grep -E "Thread|Core|Socket|Model name"
cores=$(lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2,2n -u | cut -d, -f1 | paste -sd,)
echo "one logical CPU a core: $cores"
cd "$OUT"
frames=${FRAMES:-240}
run() { if [ "$1" = core ]; then taskset -c $cores "${@:2}"; else "${@:2}"; fi; }
for p in plain core; do
  run $p timeout 120 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames $frames -o $p.hrxt
  echo "recorded $p rc=$? at ${SECONDS}s"
done
for j in $(seq 1 ${REPLAYS:-4}); do
  for p in plain core; do
    run $p timeout 120 $d/hrx-trace replay $p.hrxt --backend cuda --pace captured --report json > r.json 2> r.err
    rc=$?
    python3 $d/../../scripts/device/region-kinds.py r.json "$j" "$p" "$rc"
  done
done
rm -f r.json r.err *.hrxt
