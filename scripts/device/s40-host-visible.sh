#!/bin/bash
# Run on the device machine from the repository root (issue 17 point 4 (b), (c)): the
# three-region host-visible graph on the H200 host's CPUs (the software device; 16 cores, no
# other load), (b) the runtime bench's `host_visible_graph` (criterion and 60 paired rounds
# of 1000 submit+wait, untraced and traced), (c) `host_visible N` (N submissions, 3N regions)
# untraced, traced through HRX_TRACE, and under `hrx-trace record`, each under
# /usr/bin/time, in turn, ROUNDS times. Device tool `run`, carry [".device-bin/s40"]:
# stripped release builds of one tree: runtime-bench (`cargo bench -p hrx --bench runtime
# --no-run`), host_visible (`cargo build --release -p hrx-trace --example host_visible`),
# hrx-trace.
set -u
d=${BIN:-$PWD/.device-bin/s40}
n=${N:-3333334}
cd $OUT
(nproc; uptime; lscpu | grep -E "Model name|^CPU\(s\)") > host.txt 2>&1
CRITERION_HOME=/tmp/criterion timeout ${BENCH_S:-150} $d/runtime-bench --bench host_visible_graph > hv-bench.txt 2>&1
grep -E "time:|b/a|waiting thread" hv-bench.txt
t() { /usr/bin/time -f "$1 %e s wall %U s user %S s sys %M KiB" "${@:2}" > /dev/null 2>> times.txt; }
for r in $(seq 1 ${ROUNDS:-2}); do
  rm -f hv.hrxt rec.hrxt
  t "untraced" $d/host_visible $n
  HRX_TRACE=$PWD/hv.hrxt t "HRX_TRACE" $d/host_visible $n
  t "record" $d/hrx-trace record -q -o rec.hrxt -- $d/host_visible $n
done
cat times.txt
$d/hrx-trace info rec.hrxt | grep -E "waited|duration|closed|records " | head -6
rm -f hv.hrxt rec.hrxt
