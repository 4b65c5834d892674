#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Readers at scale",
# session 15, after the digest join): `diff` of a 10M-region trace with itself by the base
# (main 4380693), the new binary of the first call (ce7eb33) and hrx-trace-new2 (main after
# output digests were joined by the one scan, 1338e45), alternating, twice; and `stats`,
# `info` by new2. Binaries in .device-bin/s15/ as in s15-readers.sh.
d=.device-bin/s15
{ nproc; uptime; date -u; } > $OUT/machine.txt 2>&1
m() {
  local label=$1; shift
  /usr/bin/time -v "$@" >/tmp/stdout.txt 2>/tmp/t.log
  echo "$label $(grep -E 'Elapsed|User time|System time|Maximum resident|Exit status' /tmp/t.log | awk -F': ' '{printf "%s; ", $2}')"
}
$d/gen-trace --regions 10000000 -o /tmp/g10m.hrxt > /dev/null 2>&1
for i in 1 2; do for b in base new new2; do
  m "$b diff-json-10M" $d/hrx-trace-$b diff --json /tmp/g10m.hrxt /tmp/g10m.hrxt
done; done > $OUT/diff10m.txt 2>&1
m "new2 stats-json-10M" $d/hrx-trace-new2 stats --json /tmp/g10m.hrxt >> $OUT/diff10m.txt 2>&1
m "new2 info-10M" $d/hrx-trace-new2 info /tmp/g10m.hrxt >> $OUT/diff10m.txt 2>&1
cat $OUT/machine.txt $OUT/diff10m.txt
