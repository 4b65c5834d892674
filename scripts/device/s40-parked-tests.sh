#!/bin/bash
# Run on the device machine from the repository root (session 40): the CUDA tests of the
# build with host writes' hashes put off until a reading region ran (.device-bin/s40b:
# hrx-lib and tests, `cargo test --release -p hrx --lib --test tests --no-run`), then
# s40-parked.sh's `pipeline_traced` pairs again (PASSES, no gate). Device tool `run`, carry
# [".device-bin/s40old", ".device-bin/s40b"] (s40old: the GPU bench of f5ef1f3).
set -u
d=.device-bin/s40b
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault --test-threads 1 > $OUT/hw.txt 2>&1; echo "hw rc=$?"; grep "test result" $OUT/hw.txt
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution.txt 2>&1; echo "execution rc=$?"; grep "test result" $OUT/execution.txt
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > $OUT/conformance.txt 2>&1; echo "conformance rc=$?"; grep "test result" $OUT/conformance.txt
OLD=s40old GATE=0 bash scripts/device/s40-parked.sh
