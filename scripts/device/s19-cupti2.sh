#!/bin/bash
# Run on the device machine from the repository root (issue 20 points 1, 3 and 5 on the
# H200): per-kernel operation times (kernel times, CUPTI) against Nsight Compute with its
# caches left warm as in the graph (--cache-control none) and flushed (all, its default);
# the faults workload's statistics (a failed region's time out of the bandwidth); the
# benchmark's paired rounds with kernel times beside region-only tracing (benches/gpu.rs
# pipeline_traced). Device tool `run`, carry [".device-bin"]; .device-bin/s19/ holds a stripped
# release hrx-trace, gpu-bench (cargo bench -p hrx --bench gpu --no-run) and photo/.
set -u
d=$PWD/.device-bin/s19
s=$PWD/scripts/device
cd $OUT
$d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 --kernel-times -o kernels.hrxt > rec.txt 2>&1
$d/hrx-trace dump --json kernels.hrxt > kernels.jsonl 2>/dev/null
for cache in none all; do
  timeout 200 ncu --csv --clock-control none --cache-control $cache --metrics gpu__time_duration.sum \
    $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 12 -o ncu-$cache.hrxt > ncu-$cache.csv 2> ncu-$cache.err
  echo "== ncu --cache-control $cache" >> optimes.txt
  python3 $s/optimes.py kernels.jsonl ncu-$cache.csv >> optimes.txt 2>&1
done
$d/hrx-trace record --workload faults --backend cuda -o faults.hrxt > faults-rec.txt 2>&1
$d/hrx-trace stats faults.hrxt > faults-stats.txt 2>&1
# Can a kernel time itself (issue 20 point 4)? %globaltimer's resolution here.
nvcc -o globaltimer $s/globaltimer.cu > gt.txt 2>&1 && ./globaltimer >> gt.txt 2>&1
CRITERION_HOME=/tmp/criterion timeout 420 $d/gpu-bench --bench pipeline_traced > bench.txt 2>&1; echo "bench rc=$?" >> bench.txt
cat optimes.txt gt.txt
grep -B2 -A12 "^copy\|bandwidth\|^clock\|^operations" faults-stats.txt | head -40
grep -E "paired|ratio|pipeline_traced|one_kernel|hundred|rc=" bench.txt | head -40
