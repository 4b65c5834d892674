#!/bin/bash
# Run on the device machine from the repository root: the runtime's changes of session 19
# (operation times through every region's run, kernel times) on CUDA. The conformance
# suite on sim and CUDA, the CUDA hardware tests (kernel times among them), and the pipeline
# recorded with kernel times then replayed with --per-op. Device tool `run`, carry
# [".device-bin"]; .device-bin/s19/ holds stripped release builds: tests (tests/tests.rs),
# hrx-lib, hrx-trace, photo/.
set -u
d=$PWD/.device-bin/s19
cd $OUT
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > conformance.txt 2>&1; echo "conformance rc=$?" >> conformance.txt
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
$d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 6 --kernel-times -o k.hrxt > rec.txt 2>&1; echo "rec rc=$?" >> rec.txt
timeout 120 $d/hrx-trace replay k.hrxt --backend cuda --per-op --repeat 3 > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
$d/hrx-trace stats k.hrxt > stats.txt 2>&1
tail -n 3 conformance.txt hw.txt rec.txt; grep -E "verdict|rc=" replay.txt; grep -A9 "^kernel" stats.txt
