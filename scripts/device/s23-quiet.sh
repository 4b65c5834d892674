#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5, copy regions): capture
# jobs that wait for the copies to stop (trace::quiet) against the build before them. For each
# build, alternating, the pipeline recorded with 96 frames, one and three in flight, then each
# trace replayed 4 times (--repeat 10) by the same build: per replay the copy and compute
# regions' captured and replayed medians [p10, p90] and their ratio.
# Device tool `run`, carry [".device-bin/s23"]: hrx-trace (this change), hrx-trace-old (main
# before it), photo/ (Aqua.jpg).
set -u
root=$PWD
d=$root/.device-bin/s23
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
for round in $(seq 1 ${ROUNDS:-2}); do
for b in hrx-trace-old hrx-trace; do
for f in 1 3; do
  t=$b-$f.hrxt
  $d/$b record -q --workload pipeline --backend cuda --input $d/photo --frames 96 --in-flight $f -o $t
  for i in 1 2 3 4; do
    timeout 120 $d/$b replay $t --backend cuda --repeat 10 --report json > r.json 2> r.err; rc=$?
    python3 "$root/scripts/device/copies_line.py" "r$round $(printf %-13s $b) 96:$f #$i" $rc >> quiet.txt
  done
  rm -f $t
done
done
done
rm -f r.json
