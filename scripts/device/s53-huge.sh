#!/bin/bash
# Run on the device machine from the repository root (session 53, issue 22 point 5): whether
# large host buffers on transparent huge pages (src/huge_pages.rs; `HRX_HUGE_PAGES=0` turns
# them off) narrow how far captures' region medians lie apart. Device tool `run`, carry
# [".device-bin/s53"]: hrx-trace (release, stripped) and photo/ (Aqua.jpg). ROUNDS (4) of a
# capture of FRAMES (240) frames on CUDA and one replay at `--pace captured`, huge pages off
# then on; one line per replay (`scripts/device/region-kinds.py --medians`: each kind's
# captured/replayed median, µs), after the capture's AnonHugePages 1 s in (part `captures`);
# then part `pipe` (below), which needs gpu-bench (`cargo bench -p hrx --bench gpu --no-run`).
set -u
d=$PWD/.device-bin/s53
sd=$PWD/scripts/device
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
echo "thp $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
part_pipe() {
  # Issue 17 point 4 (d) with huge pages off and on: the GPU bench's `pipeline_traced`
  # (regions only against untraced, PIPE_ROUNDS (100) paired rounds), one process each.
  for mode in ${MODES:-0 1}; do
    t=$(mktemp -d /tmp/p-XXXX)
    HRX_HUGE_PAGES=$mode TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${PIPE_ROUNDS:-100} CRITERION_HOME=$t/c timeout 150 $d/gpu-bench --bench no-criterion-group > $OUT/pipe-$mode.txt 2>&1
    echo "pipe huge=$mode rc=$? $(grep -E '^pipeline_traced \(regions only\)' $OUT/pipe-$mode.txt | grep -oE 'median [0-9.]+ \[[^]]*\]') control $(grep -A1 '^pipeline_traced (regions only)' $OUT/pipe-$mode.txt | tail -1 | grep -oE 'median [0-9.]+') at ${SECONDS}s"
    rm -rf $t
  done
}
part_tests() {
  # The CUDA tests with huge pages (the default): conformance on sim and CUDA, execution,
  # hardware (`conformance` and `hrx-lib`: `cargo test --release -p hrx --lib --test tests
  # --no-run`, stripped).
  . scripts/device/s32-common.sh
  cuda_tests
  grep -E "FAILED|panicked" $OUT/*.txt | head -20
  echo "tests done at ${SECONDS}s"
}
part_captures() {
cd "$OUT"
for r in $(seq 1 ${ROUNDS:-4}); do
  for mode in ${MODES:-0 1}; do
    HRX_HUGE_PAGES=$mode timeout 60 $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames ${FRAMES:-240} -o c.hrxt 2> rec.err &
    pid=$!
    sleep 1
    huge=$(grep -h AnonHugePages /proc/$pid/smaps_rollup 2>/dev/null | tr -s ' ')
    wait $pid
    HRX_HUGE_PAGES=$mode timeout 60 $d/hrx-trace replay c.hrxt --backend cuda --pace captured --report json > r.json 2> r.err
    python3 $sd/region-kinds.py --medians r.json "r$r huge=$mode" | tr -d '\n'
    echo "  ($huge; replay $(python3 -c "import json; print(json.load(open('r.json')).get('verdict'))" 2>&1 | tail -1))"
    grep -h "error" rec.err r.err | head -2
  done
done
rm -f r.json r.err rec.err *.hrxt
cd - > /dev/null
echo "captures done at ${SECONDS}s"
}
for p in ${PARTS:-captures tests pipe}; do part_$p; done
echo "done at ${SECONDS}s"
