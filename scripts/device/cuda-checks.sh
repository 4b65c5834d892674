#!/bin/bash
# Run on the device machine from the repository root: every verb of hrx-trace on CUDA traces
# (`s56-cuda-cli.sh`), the conformance tests on sim and CUDA, and the CUDA hardware tests
# (the fault one apart), for the build in BIN (hrx-trace, the examples, `conformance` and
# `hrx-lib` test binaries, photo/). The common end of the session scripts s57-gpu.sh and
# s59-gpu.sh.
set -u
d=${BIN:?BIN names the build folder}
echo "== every verb on CUDA"
BIN=$d bash scripts/device/s56-cuda-cli.sh
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/conformance runtime:: > $OUT/conformance.txt 2>&1; echo "conformance rc=$?"; tail -3 $OUT/conformance.txt
HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > $OUT/hardware.txt 2>&1; echo "hardware rc=$?"; grep "test result" $OUT/hardware.txt
HRX_CUDA_HARDWARE=fault timeout 60 $d/hrx-lib gpu::cuda::hardware_tests::hardware_fault > $OUT/fault.txt 2>&1; echo "hardware_fault rc=$?"; grep "test result" $OUT/fault.txt
