#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, Capture, session 16:
# issue 17 point 4 (b), (c) after the traced submission's recording was cut: the snapshot's
# settled graphs, raw records pushed straight into the thread's ring, one batch a region's
# end, the waiters' hook marks without locked adds). Device tool `run`, carry
# [".device-bin"]; about 8 minutes.
#
# Binaries in .device-bin/s16/, stripped, old = main at c947e5d (this session's base), new =
# branch s16-perf (5c20388 or later):
#   runtime-bench-old, runtime-bench   `cargo bench -p hrx --bench runtime --no-run`
#                                      (target/release/deps/runtime-<hash>)
#   host_visible-old, host_visible     `cargo build --release -p hrx-trace --example host_visible`
#   hrx-trace                          `cargo build --release -p hrx-trace` (new; it reads both
#                                      builds' traces: the format did not change)
set -u
d=.device-bin/s16
for b in runtime-bench-old runtime-bench host_visible-old host_visible hrx-trace; do
  [ -x "$d/$b" ] || { echo "missing $d/$b (see the comment at the top)"; exit 2; }
done
{
  nproc; uptime
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null
  grep -o -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
} > $OUT/machine.txt 2>&1
# (b) submit+wait of the three-region graph: criterion medians, then 60 paired rounds of 1000
# submissions (untraced and traced in turn, the order swapped every round), and the share of
# the regions the waiting thread ran; old then new, twice, each its own process.
for i in 1 2; do for v in -old ""; do
  CRITERION_HOME=/tmp/hv$v$i timeout 110 $d/runtime-bench$v --bench host_visible_graph \
    > $OUT/hv-bench${v:--new}-$i.txt 2>&1
done; done
# (c) 10M regions (3,333,334 submissions of three regions), whole process, untraced then
# traced, old and new alternating; each traced run's recorder waits (hand-overs: the
# recording thread doing the writer's work) and records from `info`.
for b in host_visible-old host_visible host_visible-old host_visible; do
  /usr/bin/time -f "$b untraced %e s %U user %M KiB" $d/$b 3333334
  HRX_TRACE=/tmp/t.hrxt /usr/bin/time -f "$b traced %e s %U user %M KiB" $d/$b 3333334
  $d/hrx-trace info /tmp/t.hrxt | grep -E "^ *(records|waited|closed|capture)" | sed "s/^/$b   /"
  rm -f /tmp/t.hrxt
done > $OUT/hv-whole.txt 2>&1
cat $OUT/machine.txt $OUT/hv-whole.txt
for f in $OUT/hv-bench-*.txt; do
  echo "== $f"; grep -E "time:|host_visible_graph|waiting|ratio" $f
done
