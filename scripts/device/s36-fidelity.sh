#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times",
# session 36): session 29's s29-markers.sh on this session's build, without the tests (run by
# s36-round-trip.sh). The pipeline recorded
# self-timed (default), regions only (--no-kernel-times) and with CUPTI (--kernel-times), its
# operation times against Nsight Compute's gpu__time_duration of the plain kernels (warm
# caches) in the same run; replay --per-op of the self-timed trace.
# Device tool `run`, carry [".device-bin/s36b"]; .device-bin/s36b/ holds stripped release
# builds, hrx-trace and gpu-bench (`cargo bench -p hrx --bench gpu --no-run`), and
# photo/Aqua.jpg.
set -u
d=$PWD/.device-bin/s36b
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
rec() { $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-12} "$@"; }
rec -o builtin.hrxt > rec-builtin.txt 2>&1; echo "rc=$?" >> rec-builtin.txt
rec --no-kernel-times -o regions.hrxt > rec-regions.txt 2>&1; echo "rc=$?" >> rec-regions.txt
rec --kernel-times -o cupti.hrxt > rec-cupti.txt 2>&1; echo "rc=$?" >> rec-cupti.txt
for t in builtin regions cupti; do $d/hrx-trace dump --json $t.hrxt > $t.jsonl 2>/dev/null; done
timeout 200 ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-12} --no-kernel-times -o ncu.hrxt > ncu.csv 2> ncu.err
for t in builtin cupti; do echo "== $t vs ncu --cache-control none (plain kernels)" >> optimes.txt; python3 $s/optimes.py $t.jsonl ncu.csv >> optimes.txt 2>&1; done
for t in builtin regions cupti; do $d/hrx-trace stats $t.hrxt > stats-$t.txt 2>&1; done
timeout 150 $d/hrx-trace replay builtin.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
cat gpu.txt; tail -qn 2 rec-*.txt
cat optimes.txt; grep -E "verdict|rc=|SAME|REGRESS|note" replay.txt | head -12
grep -E "Compute|Upload|Download" stats-builtin.txt stats-regions.txt stats-cupti.txt | head -24
# Then the GPU bench's traced pipeline (issue 17: region-only tracing against untraced),
# PASSES processes of ROUNDS paired rounds (gpu-bench in .device-bin/s36b).
for pass in $(seq ${PASSES:-3}); do
  HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-200} CRITERION_HOME=/tmp/p-$pass timeout 150 $d/gpu-bench --bench no-criterion-group > pipeline-$pass.txt 2>&1
  echo "pipeline pass $pass rc=$?"
  grep -E "xxh3 of one|regions only\)|with built-in|same rounds|CUPTI\)" -A1 pipeline-$pass.txt | grep -E "median|xxh3" | sed 's/10 epochs of fresh runtimes, //'
done
