#!/bin/bash
# Run on the device machine from the repository root (session 54, issue 22 point 5): whether
# binding the process to the GPU's NUMA node's CPUs (and memory) narrows how far captures'
# region medians lie apart, and how far replays lie from their capture. NVIDIA's advice for
# a GPU process is to run on the CPUs and memory nearest the GPU (`nvidia-smi topo -m`'s "CPU
# Affinity" and "NUMA Affinity"); a process left to the scheduler draws where its threads and
# its pinned buffers land. Device tool `run`, carry [".device-bin/s54"]: hrx-trace and
# gpu-bench (`cargo bench -p hrx --bench gpu --no-run`), release, stripped, and photo/.
# MODES (default "plain near"): `plain` as the scheduler places it; `near` under `taskset`
# on the GPU's CPUs, with `numactl --membind` of its node where numactl exists; `far` on the
# other node's CPUs where there is one. Per mode CAPTURES (4) captures of FRAMES (240) frames
# on CUDA, each replayed once at `--pace captured` under the same binding: one line per
# replay (`scripts/device/region-kinds.py --medians`). Part `pipe`: issue 17 point 4 (d), the
# GPU bench's `pipeline_traced`, PIPE_ROUNDS (60) paired rounds, per mode. Part `hv`: (b).
# Prepared in session 54; the device lent no machine that session (not yet run).
set -u
d=${BIN:-$PWD/.device-bin/s54}
sd=$PWD/scripts/device
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,pci.bus_id --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
lscpu | grep -iE "model name|numa|socket|thread|l3" 
nvidia-smi topo -m 2>&1 | head -8
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-Z' 'a-z')
g=/sys/bus/pci/devices/${bus: -12}
node=$(cat $g/numa_node 2>/dev/null)
near=$(cat $g/local_cpulist 2>/dev/null)
echo "gpu $g numa_node $node local_cpulist $near"
ls -d /sys/devices/system/node/node* 2>/dev/null | xargs -n1 basename | while read n; do echo "$n cpus $(cat /sys/devices/system/node/$n/cpulist)"; done
nodes=$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)
far=""
if [ "$nodes" -gt 1 ] && [ -n "$node" ] && [ "$node" != "-1" ]; then
  for n in /sys/devices/system/node/node*; do
    [ "$(basename $n)" != "node$node" ] && far=$(cat $n/cpulist) && break
  done
fi
# A NUMA-less VM gives the GPU no local list (or all CPUs): then `near` is the first half.
all="0-$(( $(nproc) - 1 ))"
if [ -z "$near" ] || [ "$near" = "$all" ]; then near="0-$(( $(nproc) / 2 - 1 ))"; far="$(( $(nproc) / 2 ))-$(( $(nproc) - 1 ))"; fi
echo "near=$near far=$far node=$node nodes=$nodes numactl=$(command -v numactl || echo none)"
bind() {
  case $1 in
    plain) ;;
    near) if command -v numactl > /dev/null && [ -n "$node" ] && [ "$node" != "-1" ] && [ "$nodes" -gt 1 ]; then echo "numactl --cpunodebind=$node --membind=$node"; else echo "taskset -c $near"; fi ;;
    far) [ -n "$far" ] && echo "taskset -c $far" ;;
  esac
}
part_captures() {
cd "$OUT"
for r in $(seq 1 ${CAPTURES:-4}); do
  for mode in ${MODES:-plain near}; do
    b=$(bind $mode)
    [ "$mode" != plain ] && [ -z "$b" ] && continue
    $b timeout 60 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-240} -o c.hrxt 2> rec.err
    $b timeout 60 $d/hrx-trace replay c.hrxt --backend cuda --pace captured --report json > r.json 2> r.err
    python3 $sd/region-kinds.py --medians r.json "c$r $mode" | tr -d '\n'
    echo "  (replay $(python3 -c "import json; print(json.load(open('r.json')).get('verdict'))" 2>&1 | tail -1))"
    grep -h "error" rec.err r.err | head -2
  done
done
rm -f r.json r.err rec.err *.hrxt
cd - > /dev/null
echo "captures done at ${SECONDS}s"
}
part_pipe() {
  for mode in ${MODES:-plain near}; do
    b=$(bind $mode)
    [ "$mode" != plain ] && [ -z "$b" ] && continue
    t=$(mktemp -d /tmp/p-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${PIPE_ROUNDS:-60} CRITERION_HOME=$t/c $b timeout 200 $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$mode.txt 2>&1
    echo "pipe $mode rc=$? $(grep -E '^pipeline_traced \(regions only\)' $OUT/pipe-$mode.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $OUT/pipe-$mode.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
    rm -rf $t
  done
}
part_hv() {
  # Issue 17 point 4 (b): the runtime bench's `host_visible_graph` (software device), paired
  # rounds untraced/traced, per mode (runtime-bench: `cargo bench -p hrx --bench runtime
  # --no-run`).
  for mode in ${MODES:-plain near}; do
    b=$(bind $mode)
    [ "$mode" != plain ] && [ -z "$b" ] && continue
    t=$(mktemp -d /tmp/h-XXXX)
    TMPDIR=$t CRITERION_HOME=$t/c $b timeout 120 $d/runtime-bench --bench host_visible_graph > $OUT/hv-$mode.txt 2>&1
    echo "hv $mode rc=$? $(grep -E 'untraced \(a\) vs traced' $OUT/hv-$mode.txt) at ${SECONDS}s"
    rm -rf $t
  done
}
for p in ${PARTS:-captures pipe hv}; do part_$p; done
echo "done at ${SECONDS}s"
