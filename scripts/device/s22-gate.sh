#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5): a 24-frame pipeline
# trace (self-timed kernels, 3 in flight: rows pool the 3 prepared graphs, 24 captured
# samples each) replayed 20 times unchanged and 20 times with hrx_blur_h slowed 15%
# (--inject-slowdown), each with --max-slowdown 1.1 --per-op (10 repeats, 1 warm-up): one line
# per replay: verdict, slow rows named, too few, region ratios by kind, operation ratios.
# PACE=captured paces the replays (unchanged and slowed) as captured; SLOWED=0 leaves out the slowed ones;
# FRAMES=N records N frames (default 24); BIN=DIR takes hrx-trace and photo/ from DIR.
# Device tool `run`, carry [".device-bin/s22"]; .device-bin/s22/ holds hrx-trace (release,
# stripped) and photo/ (Aqua.jpg).
set -u
d=${BIN:-$PWD/.device-bin/s22}
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-24} -o gate.hrxt
line() { python3 $s/gate_line.py "$@"; }
# PACE=captured: the unchanged replays submit at the captured pace (--pace captured).
for i in $(seq 1 20); do
  timeout 120 $d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --pace ${PACE:-none} --report json > r.json 2> r.err
  line same $i $? >> gate.txt
done
[ "${SLOWED:-1}" = 1 ] || exit 0
for i in $(seq 1 20); do
  timeout 120 $d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --pace ${PACE:-none} --inject-slowdown hrx_blur_h=15 --report json > r.json 2> r.err
  line slowed $i $? >> gate.txt
done
$d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --inject-slowdown hrx_blur_h=15 > slowed.txt 2>&1
