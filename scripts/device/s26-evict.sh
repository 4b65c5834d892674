#!/bin/bash
# Run on the device machine from the repository root (session 26; the change it measured was
# reverted, see BENCHMARKS.md): output digests of pinned
# memory that evict the lines they read (src/dma_memory.rs, `xxh3_evicting`) against the
# build before (HEAD: streamed host writes only). The GPU bench's traced pipeline (paired
# rounds, traced against untraced) for each build, then per build one 24-frame capture and 10
# replays (--repeat 10), a line each (scripts/device/copies_line.py).
# Device tool `run`, carry [".device-bin/s26"]; .device-bin/s26/ holds gpu-bench-head,
# gpu-bench-ev (`cargo bench -p hrx --bench gpu --no-run`, stripped), hrx-trace (HEAD),
# hrx-trace-ev and photo/Aqua.jpg.
set -u
root=$PWD
d=$root/.device-bin/s26
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
for b in head ev; do
  CRITERION_HOME=/tmp/criterion-$b timeout 250 $d/gpu-bench-$b --bench pipeline_traced > bench-$b.txt 2>&1; echo "bench rc=$?" >> bench-$b.txt
done
for b in head ev; do
  bin=$d/hrx-trace; [ $b = ev ] && bin=$d/hrx-trace-ev
  $bin record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o $b.hrxt
  for i in $(seq 1 10); do
    timeout 120 $bin replay $b.hrxt --backend cuda --repeat 10 --report json > r.json 2> r.err; rc=$?
    python3 "$root/scripts/device/copies_line.py" "$b #$i" $rc >> copies.txt
  done
  rm -f $b.hrxt
done
cat gpu.txt copies.txt; for b in head ev; do echo "== $b"; grep -E "device spans" -A4 bench-$b.txt; grep -E "^pipeline_traced|control|regions only|rc=" bench-$b.txt; done
