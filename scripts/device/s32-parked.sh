#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, GPU section, session 32):
# what the Compute worker's idle spin costs `one_kernel`. gpu-bench-a is main; gpu-bench-b is
# main with scripts/device/s32-parked-worker.patch (an experiment, not correct in general:
# the worker parks at once when idle and `launched` does not wake it, so during `one_kernel`
# it sleeps and the waiting thread completes every launch, as it does in a). Builds in
# rotation, one process each (`HRX_BENCH_ONLY=one_kernel`, 2000 paired rounds of 100 round
# trips), PAIRS times.
d=.device-bin/s32
builds=${BUILDS:-"a b"}
uptime > $OUT/uptime.txt
nproc >> $OUT/uptime.txt
lscpu | grep -E "Thread|Core|Socket|Model name" >> $OUT/uptime.txt
for i in $(seq 1 ${PAIRS:-8}); do
  for b in $builds; do
    HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-$b-$i timeout 60 $d/gpu-bench-$b --bench no-criterion-group > $OUT/one-$b-$i.txt 2>&1
    echo "== one_kernel $b $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$b-$i.txt | sed 's/.*rounds: //')"
  done
done
uptime >> $OUT/uptime.txt
