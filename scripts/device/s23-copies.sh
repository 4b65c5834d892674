#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5, copy regions): how far
# a copy region's replayed median is from its captured one, by the capture's length and frames
# in flight. For each trace: 8 replays (--repeat 10, 1 warm-up), each a line with every
# region kind's captured and replayed median [p10, p90] and their ratio; the captures are
# exported (Chrome JSON) for the per-sample analysis here.
# Device tool `run`, carry [".device-bin/s22"].
set -u
root=$PWD
d=$root/.device-bin/s22
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
for spec in 24:3 96:3 96:1; do
  n=${spec%:*}; f=${spec#*:}
  t=c$n-$f.hrxt
  $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames $n --in-flight $f -o $t
  $d/hrx-trace export -q $t -o c$n-$f.json
  for i in $(seq 1 8); do
    timeout 120 $d/hrx-trace replay $t --backend cuda --repeat 10 --report json > r.json 2> r.err; rc=$?
    python3 "$root/scripts/device/copies_line.py" "$n:$f #$i" $rc >> copies.txt
  done
done
rm -f *.hrxt r.json; ls -la
