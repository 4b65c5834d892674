#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, Capture, session 14:
# issue 17 point 4 (b), (c) with the workers' grace counting the waiters' own time, 5922d02).
# Binaries in .device-bin/s14/: runtime-bench (built at f372d0c, old) and runtime-bench-new
# (main f8afd66), host_visible-old (24aaf2b: the runtime of f372d0c) and host_visible (f8afd66),
# from `cargo bench -p hrx --bench runtime --no-run` and
# `cargo build --release -p hrx-trace --example host_visible`, stripped.
d=.device-bin/s14
{ nproc; uptime; } > $OUT/machine.txt 2>&1
# (b) submit+wait of the three-region graph: criterion and paired rounds, old then new, twice.
for i in 1 2; do for v in "" -new; do
  CRITERION_HOME=/tmp/hv$v$i timeout 100 $d/runtime-bench$v --bench host_visible_graph > $OUT/hv-bench${v:--old}-$i.txt 2>&1
done; done
# (c) 10M regions, whole process, old and new alternating.
for b in host_visible-old host_visible host_visible-old host_visible; do
  /usr/bin/time -f "$b untraced %e s %M KiB" $d/$b 3333334
  HRX_TRACE=/tmp/t.hrxt /usr/bin/time -f "$b traced %e s %M KiB" $d/$b 3333334
  rm -f /tmp/t.hrxt
done > $OUT/hv-whole.txt 2>&1
cat $OUT/machine.txt $OUT/hv-whole.txt
for f in $OUT/hv-bench-*.txt; do echo "== $f"; grep -E "time:|paired|ratio|waiting" $f; done
