#!/bin/bash
# Run on the device machine from the repository root (session 52). Device tool `run`, carry
# [".device-bin/s52"]: stripped release builds of this session's tree: `conformance` and
# `hrx-lib` (`cargo test --release -p hrx --lib --test tests --no-run`), `hrx-trace`
# (`cargo build --release -p hrx-trace`), and photo/ (Aqua.jpg).
# 1. The CUDA tests (issue 16's conformance suite on sim and CUDA, execution, hardware).
# 2. A 24-frame CUDA capture of the pipeline workload, replayed on CUDA (outputs compared).
set -u
d=$PWD/.device-bin/s52
. scripts/device/s32-common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cuda_tests
grep -E "FAILED|panicked" $OUT/*.txt | head -20
echo "tests done at ${SECONDS}s"
t=$(mktemp -d /tmp/s52-XXXX)
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o $t/p.hrxt > $OUT/record.txt 2>&1
echo "record rc=$? $(tail -1 $OUT/record.txt)"
timeout 120 $d/hrx-trace replay $t/p.hrxt --backend cuda > $OUT/replay.txt 2>&1
echo "replay rc=$?"; grep -iE "verdict|SAME|REGRESSION|outputs" $OUT/replay.txt | head -5
echo "all done at ${SECONDS}s"
