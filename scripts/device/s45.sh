#!/bin/bash
# Run on the device machine from the repository root (session 45). Device tool `run`, carry
# [".device-bin/s45"]: stripped release builds of HEAD (`hrx-trace`; `gpu-bench`: `cargo bench
# -p hrx --bench gpu --no-run`; `conformance` and `hrx-lib`: `cargo test --release -p hrx
# --lib --test tests --no-run`) and photo/ (Aqua.jpg). PARTS (default "topo gate rt fid tests
# pipe"), run in that order, each skipped once DEADLINE seconds (default 560) have passed:
# topo:  the host's NUMA nodes and the GPU's place among them;
# tests: the CUDA tests (conformance on sim and CUDA, execution, hardware, buffer);
# gate:  issue 22 point 5: one 24-frame capture (self-timed kernels, 3 in flight); RUNS (5)
#        replays added to a baseline (`--add-to-baseline b.json`); then REPLAYS (20) each of:
#        unchanged and hrx_blur_h slowed 15% at `--pace none` judged against the baseline too
#        (`-b`), unchanged and slowed at `--pace captured`, in turn, each `--max-slowdown 1.1
#        --per-op`; one line per replay (slow against capture+baseline, rows cleared by the
#        baseline's runs), then region ratios by kind;
# fid:   issue 20 point 5: scripts/device/s29-markers.sh without its tests (self-timed,
#        regions-only and CUPTI traces against ncu, replay --per-op);
# rt:    issue 16 point 4: `one_kernel` (3 processes) and `hundred_kernels` (2) against raw;
# pipe:  issue 17 point 4 (d): `pipeline_traced` regions only against untraced, 2 processes.
set -u
d=$PWD/.device-bin/s45
parts=${PARTS:-topo gate rt fid tests pipe}
. scripts/device/s32-common.sh
late() { [ $SECONDS -gt ${DEADLINE:-560} ] && echo "-- $1 skipped at ${SECONDS}s" && return 0; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,pci.bus_id --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
part_topo() {
  (lscpu | grep -iE "model name|numa|socket"; nvidia-smi topo -m;
   cat /sys/kernel/mm/transparent_hugepage/enabled;
   for b in /sys/bus/pci/devices/*; do [ "$(cat $b/vendor 2>/dev/null)" = 0x10de ] && echo "$b numa_node $(cat $b/numa_node)"; done) > $OUT/topo.txt 2>&1
  grep -iE "numa|socket|numa_node" $OUT/topo.txt
}
part_tests() {
  late tests && return
  cuda_tests
  timeout 60 $d/hrx-lib buffer:: 2>&1 | grep "test result"
  grep -E "FAILED|panicked" $OUT/*.txt | head -20
  echo "tests done at ${SECONDS}s"
}
sd=$PWD/scripts/device
line() { python3 $sd/gate_line.py "$@"; }
part_gate() {
  late gate && return
  mkdir -p $OUT/gate
  (cd $OUT/gate
   $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o gate.hrxt
   $d/hrx-trace stats gate.hrxt > stats.txt 2>&1
   for i in $(seq 1 ${RUNS:-5}); do
     timeout 60 $d/hrx-trace replay gate.hrxt --backend cuda --per-op --add-to-baseline b.json > add-$i.txt 2>&1
     echo "add $i rc $? $(grep -E 'baseline' add-$i.txt | tail -1)"
   done
   # The four sets in turn, so that a deadline leaves each as many replays.
   for i in $(seq 1 ${REPLAYS:-20}); do
     for set in "none same-b" "none slowed-b" "captured same" "captured slowed"; do
       [ $SECONDS -gt ${GATE_DEADLINE:-330} ] && break 2
       read pace tag <<< "$set"
       extra=""; [[ $tag == slowed* ]] && extra="--inject-slowdown hrx_blur_h=15"
       [[ $tag == *-b ]] && extra="$extra --baseline b.json"
       timeout 60 $d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --pace $pace $extra --report json > r.json 2> r.err
       line "$pace-$tag" $i $? >> gate.txt
       [ $i = 1 ] && cp r.json first-$pace-$tag.json
     done
   done)
  cat $OUT/gate/gate.txt
  python3 - $OUT/gate/gate.txt <<'PY'
import re, statistics, sys
kinds, verdicts = {}, {}
for line in open(sys.argv[1]):
    tag = line.split()[0]
    verdicts.setdefault(tag, []).append(line.split()[4] if len(line.split()) > 4 else "?")
    for k, v in re.findall(r"(Upload|Download|Compute|NPU)\w* ([0-9.]+)", line.split("|")[0]):
        kinds.setdefault((tag, k), []).append(float(v))
for tag, v in verdicts.items():
    print(tag, {x: v.count(x) for x in set(v)})
for (tag, k), v in kinds.items():
    print(f"{tag} {k}: {min(v):.3f}-{max(v):.3f} (median {statistics.median(v):.3f}) over {len(v)} replays")
PY
  echo "gate done at ${SECONDS}s"
}
part_fid() {
  late fid && return
  mkdir -p $OUT/fid
  OUT=$OUT/fid BIN=.device-bin/s45 SKIP_TESTS=1 bash scripts/device/s29-markers.sh 2>&1 | tail -40
  echo "fid done at ${SECONDS}s"
}
part_rt() {
  late rt && return
  for i in 1 2 3; do
    HRX_BENCH_ONLY=one_kernel HRX_BENCH_ROUNDS=2000 CRITERION_HOME=/tmp/c-one-$i timeout 60 $d/gpu-bench --bench no-criterion-group > $OUT/one-$i.txt 2>&1
    echo "== one_kernel $i: $(grep -h "raw (a) vs hrx (b)" $OUT/one-$i.txt | sed 's/.*rounds: //')"
  done
  for i in 1 2; do
    late hundred && break
    HRX_BENCH_ONLY=hundred_kernels HRX_BENCH_ROUNDS=400 CRITERION_HOME=/tmp/h-$i timeout 120 $d/gpu-bench --bench no-criterion-group > $OUT/hundred-$i.txt 2>&1
    echo "== hundred_kernels $i: $(grep -h "raw (a) vs hrx (b)" $OUT/hundred-$i.txt | sed 's/.*rounds: //')"
  done
}
part_pipe() {
  for i in 1 2; do
    late pipe && break
    t=$(mktemp -d /tmp/p-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=60 CRITERION_HOME=/tmp/pp-$i timeout 90 $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$i.txt 2>&1
    echo "pipe $i rc=$? $(grep -E '^pipeline_traced \(regions only\)' $OUT/pipe-$i.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $OUT/pipe-$i.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
    rm -rf $t
  done
}
for p in $parts; do part_$p; done
echo "all done at ${SECONDS}s"
