#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5's copy regions, issue 17
# point 2): the copy regions' replayed medians against the captured ones. Builds, each a
# stripped release hrx-trace: OLD (before), NT (large host writes into pinned memory streamed
# past the CPU's caches, src/dma_memory.rs), RH (NT, and the replay hashing each host write as
# the capture did: `.trace_host_writes(true)` in replay/src/execute/open.rs; an experiment).
# Two rounds; in each, for each capture (frames:in flight): OLD captures and replays 6 times;
# NT captures, then NT and RH each replay that capture 6 times (--repeat 10, 1 warm-up); a
# line each (scripts/device/copies_line.py). Then NT's GPU bench `pipeline_traced` (the traced
# pipeline against untraced, paired rounds) when $D/gpu-bench exists.
# Device tool `run`, carry [".device-bin/s25", ".device-bin/s26"].
set -u
root=$PWD
D=${D:-$root/.device-bin/s26}
old=${OLD:-$root/.device-bin/s25/hrx-trace}
nt=${NT:-$D/hrx-trace-nt}
rh=${RH:-$D/hrx-trace-rh}
photo=$D/photo
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
replays() { # TAG BINARY TRACE
  for i in $(seq 1 6); do
    timeout 120 $2 replay $3 --backend cuda --repeat 10 --report json > r.json 2> r.err; rc=$?
    python3 "$root/scripts/device/copies_line.py" "$1 #$i" $rc >> copies.txt
  done
}
for round in 1 2; do
  for spec in 24:3 96:3 96:1; do
    n=${spec%:*}; f=${spec#*:}
    $old record -q --workload pipeline --backend cuda --input $photo --frames $n --in-flight $f -o old.hrxt
    replays "old r$round $spec" $old old.hrxt
    $nt record -q --workload pipeline --backend cuda --input $photo --frames $n --in-flight $f -o nt.hrxt
    replays "nt r$round $spec" $nt nt.hrxt
    replays "rh r$round $spec" $rh nt.hrxt
    rm -f old.hrxt nt.hrxt
  done
done
if [ -x $D/gpu-bench ]; then
  CRITERION_HOME=/tmp/criterion timeout 300 $D/gpu-bench --bench pipeline_traced > bench.txt 2>&1; echo "bench rc=$?" >> bench.txt
fi
cat gpu.txt; cat copies.txt; grep -E "paired|ratio|pipeline_traced|regions only|built-in|control|rc=" bench.txt | head -40
