#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 32):
# what the Compute worker's idle spin costs `one_kernel`. gpu-bench-a is main; gpu-bench-b is
# main with scripts/device/s32-parked-worker.patch (an experiment, not correct in general:
# the worker parks at once when idle and `launched` does not wake it, so during `one_kernel`
# it sleeps and the waiting thread completes every launch, as it does in a). PAIRS rounds of
# one process per build (s32-common.sh).
d=.device-bin/s32
. scripts/device/s32-common.sh
uptime > $OUT/uptime.txt
nproc >> $OUT/uptime.txt
lscpu | grep -E "Thread|Core|Socket|Model name" >> $OUT/uptime.txt
one_kernel_rounds "${BUILDS:-a b}" ${PAIRS:-8}
uptime >> $OUT/uptime.txt
