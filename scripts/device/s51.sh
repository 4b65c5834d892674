#!/bin/bash
# Run on the device machine from the repository root (session 51). Device tool `run`, carry
# [".device-bin/s51"]: stripped release builds of HEAD (`hrx-trace`; `gpu-bench`: `cargo bench
# -p hrx --bench gpu --no-run`) and photo/ (Aqua.jpg). PARTS (default "rt luck"), in order:
# rt:   issue 16 point 4: `one_kernel` (RT_ONE, 3 processes) and `hundred_kernels` (2) against
#       raw `cuGraphLaunch` + synchronize, paired rounds;
# luck: issue 22 point 5: scripts/device/s50-luck.sh on these builds (CAPTURES, REPLAYS, PACES);
# pipe: issue 17 point 4 (d): `pipeline_traced` regions only against untraced, PIPES (2)
#       processes of PIPE_ROUNDS (100) paired rounds.
set -u
d=$PWD/.device-bin/s51
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
part_rt() {
  for i in $(seq 1 ${RT_ONE:-3}); do
    HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-one-$i timeout 60 $d/gpu-bench --bench no-criterion-group > $OUT/one-$i.txt 2>&1
    echo "== one_kernel $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$i.txt | sed 's/.*rounds: //')"
  done
  for i in 1 2; do
    HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$i timeout 120 $d/gpu-bench --bench no-criterion-group > $OUT/hundred-$i.txt 2>&1
    echo "== hundred_kernels $i: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$i.txt | sed 's/.*rounds: //')"
  done
  echo "rt done at ${SECONDS}s"
}
part_luck() {
  BIN=$d bash scripts/device/s50-luck.sh | grep -v "^NVIDIA\|^cpus"
  echo "luck done at ${SECONDS}s"
}
part_pipe() {
  for i in $(seq 1 ${PIPES:-2}); do
    t=$(mktemp -d /tmp/p-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${PIPE_ROUNDS:-100} CRITERION_HOME=/tmp/pp-$i timeout 150 $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$i.txt 2>&1
    echo "pipe $i rc=$? $(grep -E '^pipeline_traced \(regions only\)' $OUT/pipe-$i.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $OUT/pipe-$i.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
    rm -rf $t
  done
}
for p in ${PARTS:-rt luck}; do part_$p; done
echo "all done at ${SECONDS}s"
