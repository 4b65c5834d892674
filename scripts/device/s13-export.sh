#!/bin/bash
# Run on the device machine from the repository root, with the binaries named below stripped into .device-bin/s13-export/ (BENCHMARKS.md, "Session 13: export encoded on workers, Perfetto interned").
# export of 10M regions, both formats: old 8080c07 (main before this work) against new NEW (the export as landed), alternating twice per format, each a whole process under /usr/bin/time -v; the two Chrome outputs of the first round are compared byte for byte.
NEW=${NEW:?the new binary name, hrx-trace-COMMIT}
cd .device-bin/s13-export
{ nproc; uptime; } > $OUT/export10m.txt
./gen-trace --regions 10000000 -o /tmp/p10m.hrxt && ls -l /tmp/p10m.hrxt >> $OUT/export10m.txt
for f in perfetto chrome; do for b in hrx-trace-8080c07 $NEW hrx-trace-8080c07 $NEW; do
  /usr/bin/time -v ./$b export --format $f -o /tmp/o.$f /tmp/p10m.hrxt >/dev/null 2>/tmp/t.log
  echo "$f $b $(grep -E 'Elapsed|User time|System time|Maximum resident|Exit status' /tmp/t.log | awk -F': ' '{printf "%s; ", $2}') bytes $(stat -c %s /tmp/o.$f)"
  if [ $f = chrome ] && [ ! -e /tmp/first.$b.json ]; then mv /tmp/o.$f /tmp/first.$b.json; fi
  rm -f /tmp/o.$f
done; done >> $OUT/export10m.txt 2>&1
cmp /tmp/first.hrx-trace-8080c07.json /tmp/first.$NEW.json >> $OUT/export10m.txt 2>&1 && echo "chrome outputs identical" >> $OUT/export10m.txt
rm -f /tmp/p10m.hrxt /tmp/first.*.json
