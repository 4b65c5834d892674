#!/bin/bash
# Run on the device machine from the repository root (session 48): this session's replay
# changes on CUDA. Device tool `run`, carry [".device-bin/s48", ".device-bin/s45/photo"]:
# `hrx-trace-head` (stripped release build of 820c076). A 24-frame pipeline capture, 3 replays
# added to a baseline, then a gate replay (`--max-slowdown 1.1 --per-op --pace captured`)
# against it with two injections, hrx_blur_h +15% (caught) and hrx_sobel +1% (missed): its
# verdict, the warning of the one missed and the baseline header.
source scripts/device/s48-host.sh
t=$d/hrx-trace-head
$t record -q --workload pipeline --backend cuda --input $photo --frames 24 -o g.hrxt
for i in 1 2 3; do
  timeout 90 $t replay g.hrxt --backend cuda --per-op --pace captured --add-to-baseline b.json > /dev/null 2>&1
  echo "added run $i: rc=$?"
done
timeout 120 $t replay g.hrxt --backend cuda --per-op --pace captured --max-slowdown 1.1 --baseline b.json \
  --inject-slowdown hrx_blur_h=15 --inject-slowdown hrx_sobel=1 > r.txt 2> r.err
echo "gate: rc=$?"
grep -E "^verdict|^against the baseline|SLOW" r.txt | head -8
cat r.err
rm -f g.hrxt
