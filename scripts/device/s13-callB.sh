#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, session 13, the lead's call B):
# issue 17 point 4 (b), (c) by scripts/device/s13-lossless.sh; issue 21's export of 10M regions by
# scripts/device/s13-export.sh; then where a traced submission's time goes on idle cores: perf
# (Debian 12's perf 6.1 and its libraries, carried as .device-bin/perfbundle.tar.xz) of
# host_visible (built at 53a2ec0, symbols kept) traced and untraced.
NEW=hrx-trace-7aa53e5 bash scripts/device/s13-export.sh
bash scripts/device/s13-lossless.sh > $OUT/lossless-summary.txt 2>&1
mkdir -p /tmp/pb && tar xJf .device-bin/perfbundle.tar.xz -C /tmp/pb
P="/tmp/pb/perfbundle/lib/ld-linux-x86-64.so.2 --library-path /tmp/pb/perfbundle/lib /tmp/pb/perfbundle/perf"
hv=.device-bin/s13-lossless/host_visible-sym
{ cat /proc/sys/kernel/perf_event_paranoid
  $P stat -e task-clock,context-switches,cpu-migrations,cycles,instructions -- $hv 1000000
  HRX_TRACE=/tmp/t.hrxt $P stat -e task-clock,context-switches,cpu-migrations,cycles,instructions -- $hv 1000000; rm -f /tmp/t.hrxt
  $P stat --per-thread -e task-clock,instructions -- env HRX_TRACE=/tmp/t.hrxt $hv 1000000; rm -f /tmp/t.hrxt
} > $OUT/perf-stat.txt 2>&1
for m in untraced traced; do
  if [ $m = traced ]; then export HRX_TRACE=/tmp/t.hrxt; fi
  $P record -F 1999 -g -o /tmp/perf-$m.data -- $hv 1000000 > /dev/null 2>&1
  $P report -i /tmp/perf-$m.data --stdio --no-children --sort comm,sym 2>/dev/null | grep -v "^$" | grep -E "^ +[0-9]" | head -70 > $OUT/perf-$m.txt
  $P report -i /tmp/perf-$m.data --stdio --no-children --sort comm 2>/dev/null | grep -E "^ +[0-9]" | head -20 >> $OUT/perf-$m.txt
  unset HRX_TRACE; rm -f /tmp/t.hrxt
done
cat $OUT/export10m.txt; head -5 $OUT/perf-stat.txt
