#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times",
# session 29): a timed graph bracketed by a start marker and its collectors instead of
# event-record nodes. The CUDA hardware tests and the conformance suite; the pipeline recorded
# self-timed (default), regions only (--no-kernel-times) and with CUPTI (--kernel-times), its
# operation times against Nsight Compute's gpu__time_duration of the plain kernels (warm
# caches) in the same run; replay --per-op of the self-timed trace.
# Device tool `run`, carry [".device-bin/s29"]; .device-bin/s29/ holds stripped release builds:
# hrx-trace, hrx-lib (cargo test --release -p hrx --lib --no-run), tests (tests/tests.rs),
# photo/Aqua.jpg. BIN names another folder of such builds; SKIP_TESTS=1 leaves out the tests.
set -u
d=$PWD/${BIN:-.device-bin/s29}
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then
  HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --nocapture --test-threads 1 > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
  HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > conformance.txt 2>&1; echo "conformance rc=$?" >> conformance.txt
fi
rec() { $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-12} "$@"; }
rec -o builtin.hrxt > rec-builtin.txt 2>&1; echo "rc=$?" >> rec-builtin.txt
rec --no-kernel-times -o regions.hrxt > rec-regions.txt 2>&1; echo "rc=$?" >> rec-regions.txt
rec --kernel-times -o cupti.hrxt > rec-cupti.txt 2>&1; echo "rc=$?" >> rec-cupti.txt
for t in builtin regions cupti; do $d/hrx-trace dump --json $t.hrxt > $t.jsonl 2>/dev/null; done
timeout 200 ncu --csv --clock-control none --cache-control none --metrics gpu__time_duration.sum $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-12} --no-kernel-times -o ncu.hrxt > ncu.csv 2> ncu.err
for t in builtin cupti; do echo "== $t vs ncu --cache-control none (plain kernels)" >> optimes.txt; python3 $s/optimes.py $t.jsonl ncu.csv >> optimes.txt 2>&1; done
for t in builtin regions cupti; do $d/hrx-trace stats $t.hrxt > stats-$t.txt 2>&1; done
timeout 150 $d/hrx-trace replay builtin.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
cat gpu.txt; grep -E "^test |rc=|sum of|70 iota" hw.txt 2>/dev/null | tail -14; tail -n 3 conformance.txt 2>/dev/null; tail -qn 2 rec-*.txt
cat optimes.txt; grep -E "verdict|rc=|SAME|REGRESS|note" replay.txt | head -12
grep -E "Compute|Upload|Download" stats-builtin.txt stats-regions.txt stats-cupti.txt | head -24
