#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 32):
# `one_kernel`'s paired rounds against raw CUDA (builds in rotation, one process each, PAIRS
# times), `hundred_kernels` once per build, then the CUDA tests of the newest build
# (s32-common.sh).
d=.device-bin/s32
. scripts/device/s32-common.sh
builds=${BUILDS:-"a c"}
uptime > $OUT/uptime.txt
one_kernel_rounds "$builds" ${PAIRS:-8}
hundred_kernels "$builds"
cuda_tests
uptime >> $OUT/uptime.txt
