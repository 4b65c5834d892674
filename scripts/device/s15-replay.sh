#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Replay at scale",
# session 15: issue 21 point 2, 10M submissions replay in at most 500 MiB, on the code that
# closes point 1). Binaries stripped into .device-bin/s15/: hrx-trace-new and host_visible
# (`cargo build --release -p hrx-trace --example host_visible`, the same commit).
# 10,000,000 submissions of the three-region host-visible graph from two threads, recorded,
# then replayed on the software device under /usr/bin/time -v.
d=.device-bin/s15
{ nproc; uptime; date -u; } > $OUT/machine.txt 2>&1
HRX_TRACE=/tmp/hv10m.hrxt /usr/bin/time -f "record %e s %M KiB" $d/host_visible 10000000 2 > $OUT/replay10m.txt 2>&1
$d/hrx-trace-new info /tmp/hv10m.hrxt >> $OUT/replay10m.txt 2>&1
timeout 480 /usr/bin/time -v $d/hrx-trace-new replay --backend sim /tmp/hv10m.hrxt > /tmp/stdout.txt 2>/tmp/t.log
echo "replay exit $?" >> $OUT/replay10m.txt
grep -E 'Elapsed|User time|System time|Maximum resident|Exit status' /tmp/t.log >> $OUT/replay10m.txt
tail -5 /tmp/stdout.txt >> $OUT/replay10m.txt
cat $OUT/machine.txt $OUT/replay10m.txt
