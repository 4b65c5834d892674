#!/bin/bash
# Run on the device machine from the repository root: which hardware test, run in parallel
# with the others, crashes the test process (a segfault in 1 of 3 parallel runs on
# 2026-12-03), and whether running them one at a time (ONE_AT_A_TIME) avoids it.
# .device-bin/s20/hrx-lib-old: the lib tests before the serialization; hrx-lib: after.
set -u
d=$PWD/.device-bin/s20
runs() { n=0; for i in 1 2 3 4 5 6; do HRX_CUDA_HARDWARE=1 timeout 60 "$@" > /dev/null 2>&1; [ $? = 139 ] && n=$((n+1)); done; echo "$n of 6 segfaulted"; }
echo "old, all in parallel: $(runs $d/hrx-lib-old gpu::cuda::hardware_tests --skip hardware_fault)"
echo "old, without hardware_kernel_times (CUPTI): $(runs $d/hrx-lib-old gpu::cuda::hardware_tests --skip hardware_fault --skip hardware_kernel_times)"
echo "old, without hardware_builtin_kernel_times: $(runs $d/hrx-lib-old gpu::cuda::hardware_tests --skip hardware_fault --skip hardware_builtin_kernel_times)"
echo "new (one at a time): $(runs $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault)"
