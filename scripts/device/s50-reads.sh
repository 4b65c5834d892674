#!/bin/bash
# Run on the device machine from the repository root (session 50, issue 22 point 5): whether
# the software NPU's replayed runs are slower than its captured ones because the capture's
# program read its outputs after each frame (the pipeline reads the edge mask and the
# histogram) and the replay does not. Device tool `run`, carry [".device-bin/s50"]:
# `hrx-trace` (release build of this session's tree with scripts/device/s50-reads.patch,
# stripped) and `photo/`. One FRAMES (240)-frame pipeline capture on CUDA, then REPLAYS (4)
# rounds of replays at `--pace captured`: `plain`, and `read` (HRX_SCRATCH_READ_OUTPUTS=1: the
# replay reads each host-mapped buffer a submission's graph writes and does not read, whole,
# when it retires the submission); one line per replay (scripts/device/region-kinds.py).
set -u
d=$PWD/.device-bin/s50
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cd "$OUT"
frames=${FRAMES:-240}
timeout 120 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames $frames -o cap.hrxt
echo "recorded rc=$? at ${SECONDS}s"
for j in $(seq 1 ${REPLAYS:-4}); do
  for p in plain read; do
    if [ $p = read ]; then export HRX_SCRATCH_READ_OUTPUTS=1; else unset HRX_SCRATCH_READ_OUTPUTS; fi
    timeout 120 $d/hrx-trace replay cap.hrxt --backend cuda --pace ${PACE:-captured} --report json > r.json 2> r.err
    rc=$?
    python3 $d/../../scripts/device/region-kinds.py r.json "$j" "$p" "$rc"
  done
done
unset HRX_SCRATCH_READ_OUTPUTS
rm -f r.json r.err *.hrxt
