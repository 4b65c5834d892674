#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Readers at scale",
# session 15: issue 21 point 2's figures re-measured on the code that closes point 1).
# Binaries stripped into .device-bin/s15/: hrx-trace-base (main 4380693, this session's
# start) and hrx-trace-new (main after issue 21's last structural changes), both
# `cargo build --release -p hrx-trace --bin hrx-trace`; gen-trace (`cargo build --release
# -p hrx-analysis --example gen-trace`); FreshFlower.jpg (mate-backgrounds' photograph: the
# device machine lacks the package). Each cell one whole process under /usr/bin/time -v,
# base and new alternating, twice.
d=.device-bin/s15
{ nproc; uptime; date -u; } > $OUT/machine.txt 2>&1
m() {
  local label=$1; shift
  /usr/bin/time -v "$@" >/tmp/stdout.txt 2>/tmp/t.log
  echo "$label $(grep -E 'Elapsed|User time|System time|Maximum resident|Exit status' /tmp/t.log | awk -F': ' '{printf "%s; ", $2}')"
}
$d/gen-trace --regions 10000000 -o /tmp/g10m.hrxt > $OUT/gen.txt 2>&1; ls -l /tmp/g10m.hrxt >> $OUT/gen.txt
for b in base new base new; do
  m "$b info-10M" $d/hrx-trace-$b info /tmp/g10m.hrxt
  m "$b stats-json-10M" $d/hrx-trace-$b stats --json /tmp/g10m.hrxt
  m "$b diff-json-10M" $d/hrx-trace-$b diff --json /tmp/g10m.hrxt /tmp/g10m.hrxt
  m "$b export-perfetto-10M" $d/hrx-trace-$b export --format perfetto -o /tmp/o.pb /tmp/g10m.hrxt
  m "$b export-chrome-10M" $d/hrx-trace-$b export --format chrome -o /tmp/o.json /tmp/g10m.hrxt
  rm -f /tmp/o.pb /tmp/o.json
done > $OUT/readers10m.txt 2>&1
rm -f /tmp/g10m.hrxt
# A replayable trace: the pipeline workload, 250,000 frames of 16 px (1M regions).
m "new record-pipeline-250k" $d/hrx-trace-new record --workload pipeline --backend sim --frames 250000 --max-width 16 --input $d/FreshFlower.jpg -o /tmp/p250k.hrxt > $OUT/replay1m.txt 2>&1
for b in base new; do
  m "$b replay-1M" $d/hrx-trace-$b replay --backend sim /tmp/p250k.hrxt
  tail -3 /tmp/stdout.txt
done >> $OUT/replay1m.txt 2>&1
cat $OUT/machine.txt $OUT/gen.txt $OUT/readers10m.txt $OUT/replay1m.txt
