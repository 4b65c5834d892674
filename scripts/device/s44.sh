#!/bin/bash
# Run on the device machine from the repository root (session 44). Device tool `run`, kind
# `nvidia-h100-x1`, carry [".device-bin/s44"]: stripped release builds of HEAD (`hrx-trace`,
# `gpu-bench`: `cargo bench -p hrx --bench gpu --no-run`; `conformance` and `hrx-lib`:
# `cargo test --release -p hrx --lib --test tests --no-run`), `gpu-old` (the GPU bench of
# 092c17f, before the put-off host-write hash) and photo/ (Aqua.jpg). PARTS (default
# "tests gate"):
# tests: the CUDA tests (conformance on sim and CUDA, execution, hardware, buffer);
# gate:  issue 22 point 5's unchanged half (scripts/device/s22-gate.sh, SLOWED=0 unless set,
#        PACE as there): 20 replays of a 24-frame capture, region ratios by kind; with
#        AGAIN=PACE, 20 more replays of the same capture at that pace (`again` lines);
# pipe:  issue 17 point 4 (d) and a crash hunt: the GPU bench's `pipeline_traced` (regions
#        only against untraced, then self-timed and CUPTI turns), PASSES times each of new,
#        new with HRX_BENCH_NO_HOST_WRITES=1, old, old with it; one process each, its exit
#        status said (a signal: its traces described with `hrx-trace info`);
# sw:    issue 17 point 4 (d) on the software device: `runtime-bench --bench pipeline_traced`
#        (paired rounds) of `runtime-bench` (HEAD) and `runtime-old` (78f6479), in turn,
#        PASSES times.
set -u
d=$PWD/.device-bin/s44
parts=${PARTS:-tests gate}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
if [[ $parts == *tests* ]]; then
  HRX_TEST_BACKENDS=sim,cuda timeout 150 $d/conformance > $OUT/conformance.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 60 $d/hrx-lib execution:: > $OUT/execution-tests.txt 2>&1
  HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests --test-threads 1 > $OUT/hardware.txt 2>&1
  timeout 60 $d/hrx-lib buffer:: > $OUT/buffer-tests.txt 2>&1
  for f in conformance execution-tests hardware buffer-tests; do
    echo "$f: $(grep 'test result' $OUT/$f.txt | tail -1)"
  done
  grep -E "FAILED|panicked" $OUT/*.txt | head -20
  echo "tests done at ${SECONDS}s"
fi
if [[ $parts == *gate* ]]; then
  (BIN=$d SLOWED=${SLOWED:-0} bash scripts/device/s22-gate.sh)
  if [ -n "${AGAIN:-}" ]; then
    (cd $OUT && for i in $(seq 1 20); do
      timeout 120 $d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --pace $AGAIN --report json > r.json 2> r.err
      echo "again $i rc $? $(python3 -c "
import json, statistics
r = json.load(open('r.json'))
k = {}
for t in r['timing']:
    if t['ratio']: k.setdefault(t['label'].split(',')[0].replace('GPU ', ''), []).append(t['ratio'])
print(r['verdict'], r['summary']['slow'], ' '.join(f'{a} {statistics.median(v):.3f}' for a, v in k.items()))
")" >> gate.txt
    done)
  fi
  cat $OUT/gate.txt
  python3 - $OUT/gate.txt <<'PY'
import re, statistics, sys
kinds = {}
for line in open(sys.argv[1]):
    tag = line.split()[0]
    if tag not in ("same", "again"):
        continue
    for k, v in re.findall(r"(Upload|Download|Compute|NPU)\w* ([0-9.]+)", line.split("|")[0]):
        kinds.setdefault((tag, k), []).append(float(v))
for (tag, k), v in kinds.items():
    print(f"{tag} {k}: {min(v):.3f}-{max(v):.3f} (median {statistics.median(v):.3f}) over {len(v)} replays")
PY
  echo "gate done at ${SECONDS}s"
fi
if [[ $parts == *pipe* ]]; then
  for i in $(seq 1 ${PASSES:-2}); do
    for v in new new-nohw old old-nohw; do
      [ $SECONDS -gt ${PIPE_DEADLINE:-480} ] && break 2
      b=$d/gpu-bench; [[ $v == old* ]] && b=$d/gpu-old
      nohw=0; [[ $v == *nohw ]] && nohw=1
      t=$(mktemp -d /tmp/p-XXXX)
      HRX_BENCH_NO_HOST_WRITES=$nohw TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/c-$v-$i timeout 120 $b --bench no-criterion-group > $t/out.txt 2>&1
      rc=$?
      echo "$v $i rc=$rc $(grep -E '^pipeline_traced \(regions only\)' $t/out.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $t/out.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
      if [ $rc -ne 0 ]; then
        tail -20 $t/out.txt
        for f in $(find $t -name '*.hrxt'); do echo "-- $f"; $d/hrx-trace info $f 2>&1 | grep -E "capture|crashed|closed|ended|signal" | head -5; done
      fi
      [ $i = 1 ] && cp $t/out.txt $OUT/pipe-$v.txt
      rm -rf $t
    done
  done
fi
if [[ $parts == *sw* ]]; then
  for i in $(seq 1 ${PASSES:-2}); do
    for v in new old; do
      b=$d/runtime-bench; [ $v = old ] && b=$d/runtime-old
      CRITERION_HOME=/tmp/sw-$v-$i timeout 150 $b --bench pipeline_traced > $OUT/sw-$v-$i.txt 2>&1
      echo "sw $v $i rc=$? $(grep -E '^pipeline_traced: ' $OUT/sw-$v-$i.txt | grep -oE 'median [0-9.]+ \[[^]]*\]' | head -2 | paste -sd' ') at ${SECONDS}s"
    done
  done
fi
