#!/bin/bash
# Run on the device machine from the repository root: the software NPU region's host time per
# frame in pipeline captures (is the slow start a warm-up or capture work?). Three captures:
# 24 frames, 72 frames, and 72 frames after 2 s of a busy loop on every core (clocks raised
# before the capture starts). Prints, per capture, the NPU region's duration per frame (µs)
# and the time since the first submit (ms). Device tool `run`, carry [".device-bin/s24"].
set -u
d=${BIN:-$PWD/.device-bin/s24}
cd $OUT
npu() {
  $d/hrx-trace dump --json $1 | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin]
subs = {r["Submit"]["submission"]: r["Submit"]["time_ns"] for r in recs if "Submit" in r}
t0 = min(subs.values())
npu = sorted((r["RegionTiming"]["submission"], r["RegionTiming"]) for r in recs
             if "RegionTiming" in r and r["RegionTiming"]["region"] == 3)
print(" ".join(f"{s}:{(t["end_ns"]-t["start_ns"])//1000}us@{(t["start_ns"]-t0)/1e6:.1f}ms" for s, t in npu))
'
}
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o a.hrxt
echo "24 frames: $(npu a.hrxt)"
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 72 -o b.hrxt
echo "72 frames: $(npu b.hrxt)"
for i in $(seq 1 $(nproc)); do timeout 2 sh -c 'while :; do :; done' & done; wait
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 72 -o c.hrxt
echo "72 frames after 2 s busy: $(npu c.hrxt)"
