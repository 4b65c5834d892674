#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 33): the
# software device's round trip (examples/round_trip, 1,000,000 round trips a process) of
# each build in rotation; criterion's `submit` and `submit_to_complete` of two builds in
# turns; `one_kernel` and `hundred_kernels` against raw CUDA (s32-common.sh); then the whole
# runtime bench once per build (with WHOLE=1). $d holds the stripped builds (rt-<build>,
# runtime-<build>, gpu-bench-<build>).
d=.device-bin/s33
. scripts/device/s32-common.sh
uptime > $OUT/uptime.txt
nproc >> $OUT/uptime.txt; lscpu | grep -E "Model name|Thread|Core|Socket" >> $OUT/uptime.txt
for i in 1 2 3 4; do
  for b in ${RT:-head defer claims quiet}; do
    echo "rt $b $i $($d/rt-$b 1000000)"
  done
  echo "rt claims-poll250 $i $(HRX_WORKER_POLL_NS=250 $d/rt-claims 1000000)"
  echo "rt claims-poll1000 $i $(HRX_WORKER_POLL_NS=1000 $d/rt-claims 1000000)"
done
submit_criterion "head claims" 3
one_kernel_rounds "e claims" ${PAIRS:-4}
hundred_kernels "e claims"
[ -n "$WHOLE" ] && for b in head claims; do
  CRITERION_HOME=/tmp/w-$b timeout 200 $d/runtime-$b --bench > $OUT/whole-$b.txt 2>&1
  echo "whole $b: $(grep -E 'time:' $OUT/whole-$b.txt | awk '{print $1, $5, $6}' | tr '\n' ';')"
done
uptime >> $OUT/uptime.txt
