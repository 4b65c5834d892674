#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped into .device-bin/s12/ (BENCHMARKS.md, session 12).
# session 12 device call 2: export at 10M (old f3edc13 vs new 64e29f5), then issue 17 (b)/(c) (host_visible old f3edc13 vs new main)
cd .device-bin/s12
{ nproc; uptime; } > $OUT/export10m.txt
./gen-trace --regions 10000000 -o /tmp/p10m.hrxt && ls -l /tmp/p10m.hrxt >> $OUT/export10m.txt
for f in perfetto chrome; do for b in hrx-trace-f3edc13 hrx-trace-64e29f5 hrx-trace-f3edc13 hrx-trace-64e29f5; do
  /usr/bin/time -v ./$b export --format $f -o /tmp/o.$f /tmp/p10m.hrxt >/dev/null 2>/tmp/t.log
  echo "$f $b $(grep -E 'Elapsed|User time|System time|Maximum resident|Exit status' /tmp/t.log | awk -F': ' '{printf "%s; ", $2}') bytes $(stat -c %s /tmp/o.$f)"
  rm -f /tmp/o.$f
done; done >> $OUT/export10m.txt 2>&1
rm -f /tmp/p10m.hrxt
CRITERION_HOME=/tmp/criterion timeout 150 ./runtime-bench --bench host_visible_graph > $OUT/hv-bench.txt 2>&1
for round in 1 2; do for b in host_visible-f3edc13 host_visible; do
  /usr/bin/time -f "$b untraced %e s %M KiB" ./$b 3333334
  HRX_TRACE=/tmp/t.hrxt /usr/bin/time -f "$b traced %e s %M KiB" ./$b 3333334
  rm -f /tmp/t.hrxt
done; done > $OUT/hv-whole.txt 2>&1
