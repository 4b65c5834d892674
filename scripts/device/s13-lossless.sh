#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped
# into .device-bin/s13-lossless/ (BENCHMARKS.md, Capture, "Session 13": issue 17 point 4
# (b), (c)): host_visible built at main 8080c07 (old) and at 53a2ec0 or later (new), the
# runtime bench and hrx-trace of the new build.
d=.device-bin/s13-lossless
{ nproc; uptime; cat /sys/devices/system/clocksource/clocksource0/current_clocksource
  grep -m1 -o -w 'constant_tsc\|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; } > $OUT/machine.txt 2>&1
# Per submission: context switches, syscalls (where perf can count them), recorder waits.
scripts/bench-handoffs.sh 1000000 $d/hrx-trace $d/host_visible-8080c07 $d/host_visible > $OUT/handoffs.txt 2>&1
# (b) submit+wait of the three-region graph, criterion then 60 paired rounds (new build).
CRITERION_HOME=/tmp/criterion timeout 240 $d/runtime-bench --bench host_visible_graph > $OUT/hv-bench.txt 2>&1
# (c) 10M regions, whole process, old and new alternating; each trace's waits and records.
for round in 1 2; do for b in host_visible-8080c07 host_visible; do
  /usr/bin/time -f "$b untraced %e s %M KiB %w vol %c invol" $d/$b 3333334
  HRX_TRACE=/tmp/t.hrxt /usr/bin/time -f "$b traced %e s %M KiB %w vol %c invol" $d/$b 3333334
  $d/hrx-trace info /tmp/t.hrxt | grep -E '^(waited|records|closed) '
  rm -f /tmp/t.hrxt
done; done > $OUT/hv-whole.txt 2>&1
cat $OUT/machine.txt $OUT/handoffs.txt $OUT/hv-whole.txt; grep -E "time:|paired|ratio" $OUT/hv-bench.txt
