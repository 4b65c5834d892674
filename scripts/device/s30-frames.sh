#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 30): where the
# pipeline's main thread spends a frame, untraced (U) and traced regions only (T), with the
# scratch timing prints of gpu-bench-scratch2 (scripts/device/s30-frames.patch, applied to
# the pool-hashing build): means over the region-only paired rounds.
# Device tool `run`, carry [".device-bin/s30"].
set -u
bin=$PWD/.device-bin/s30/gpu-bench-scratch2
cd $OUT
for pass in 1 2; do
  HRX_SCRATCH_FRAME_TIMES=1 HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-150} CRITERION_HOME=/tmp/c-$pass timeout 200 $bin --bench no-criterion-group > frames-$pass.txt 2>&1
  awk '/regions only\)/ {print; exit} /^scratchF/ {n[$2]++; for (i=4;i<=7;i++) f[$2,i]+=$i} /^scratchW/ {m[$2]++; for (i=3;i<=5;i++) w[$2,i]+=$i}
       END {for (t in n) printf "%s frames %d: collect %.1f write %.1f drop %.1f submit %.1f us | write: map %.1f copy %.1f unmap %.1f\n", t, n[t], f[t,4]/n[t], f[t,5]/n[t], f[t,6]/n[t], f[t,7]/n[t], w[t,3]/m[t], w[t,4]/m[t], w[t,5]/m[t]}' frames-$pass.txt
  awk '/regions only\)/ {exit} /^scratchW T/ && $3 > 50 {c++} END {print "traced writes with map > 50 us:", c+0}' frames-$pass.txt
  grep -A1 "regions only)" frames-$pass.txt | head -2
done
