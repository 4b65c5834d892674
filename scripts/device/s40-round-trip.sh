#!/bin/bash
# Run on the device machine from the repository root (issue 16 point 4, BENCHMARKS.md GPU,
# session 40): `one_kernel` against raw CUDA (PAIRS processes), `hundred_kernels` once,
# criterion's `submit` and `submit_to_complete` (ROUNDS processes), all of one build, then
# the host-visible graph's (b) and (c) (scripts/device/s40-host-visible.sh). Device tool
# `run`, carry [".device-bin/s40"]: gpu-bench, runtime-bench, host_visible and hrx-trace,
# stripped release builds of one tree (see s40-host-visible.sh).
set -u
d=${BIN:-.device-bin/s40}
mkdir -p $d/link && ln -sf ../gpu-bench $d/link/gpu-bench-new && ln -sf ../runtime-bench $d/link/runtime-new
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
uptime > $OUT/uptime.txt
(d=$d/link; . scripts/device/s32-common.sh; one_kernel_rounds new ${PAIRS:-4}; hundred_kernels new; submit_criterion new ${ROUNDS:-2})
mkdir -p $OUT/hv && OUT=$OUT/hv BIN=$PWD/$d bash scripts/device/s40-host-visible.sh
uptime >> $OUT/uptime.txt
cat $OUT/gpu.txt $OUT/uptime.txt
