#!/bin/bash
# Run on the device machine from the repository root (session 52, issue 16 point 4). Device
# tool `run`, carry [".device-bin/s52b"]: stripped release benches (`cargo bench -p hrx
# --bench runtime --bench gpu --no-run`): `runtime-new` and `gpu-bench` of this session's
# tree, `runtime-prev` of fe570f2 (the session's base).
# 1. criterion `submit` and `submit_to_complete` (software device), prev and new in turn,
#    SUBMITS (4) processes each;
# 2. `one_kernel` and `hundred_kernels` of this tree's GPU bench (RT_ONE, 4 processes);
# 3. every runtime bench group once a build, prev then new (until DEADLINE s).
set -u
d=$PWD/.device-bin/s52b
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
for i in $(seq 1 ${SUBMITS:-4}); do
  for b in prev new; do
    CRITERION_HOME=/tmp/s-$b-$i $d/runtime-$b --bench '^submit' > $OUT/submit-$b-$i.txt 2>&1
    echo "criterion $b $i: $(grep -E 'time:' $OUT/submit-$b-$i.txt | awk '{print $1, $5, $6}' | tr '\n' ' ')"
  done
done
for i in $(seq 1 ${RT_ONE:-4}); do
  HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-one-$i timeout 60 $d/gpu-bench --bench no-criterion-group > $OUT/one-$i.txt 2>&1
  echo "== one_kernel $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$i.txt | sed 's/.*rounds: //')"
done
for i in 1 2; do
  HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$i timeout 120 $d/gpu-bench --bench no-criterion-group > $OUT/hundred-$i.txt 2>&1
  echo "== hundred_kernels $i: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$i.txt | sed 's/.*rounds: //')"
done
echo "rt done at ${SECONDS}s"
for b in prev new; do
  [ $SECONDS -gt ${DEADLINE:-300} ] && echo "-- all $b skipped at ${SECONDS}s" && continue
  CRITERION_HOME=/tmp/all-$b timeout 200 $d/runtime-$b --bench > $OUT/all-$b.txt 2>&1
  echo "all $b rc=$? at ${SECONDS}s"
  grep -E "^[a-z_/0-9]+ +time:|^[a-z_/0-9]+$|^ +time:" $OUT/all-$b.txt | paste - - 2>/dev/null | awk '{print $1, $5, $6}' | head -40
done
echo "all done at ${SECONDS}s"
