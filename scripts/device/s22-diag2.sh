#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5 diagnosis, second
# call): copy regions replay 1.2-2x slower than captured (s22-diag.sh). Captures with 1 and 3
# frames in flight; each replayed (3 repeats): region rows. Where NVML lives.
# Device tool `run`, carry [".device-bin/s22"].
set -u
d=$PWD/.device-bin/s22
cd $OUT
{ ldconfig -p | grep -i nvidia-ml; find / -xdev -name 'libnvidia-ml.so*' 2>/dev/null | head -5; } > nvml.txt
rec() { $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo "$@"; }
rows() {
python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["timing"]:
    c, p = t["captured"], t["replayed"]
    if not c or not p: continue
    print(f"  g{t['graph']} r{t['region']} {t['label'][:22]:22} n{c['samples']}/{p['samples']} "
          f"cap {c['median_ns']/1e3:7.1f} [{c['p10_ns']/1e3:.1f},{c['p90_ns']/1e3:.1f}] "
          f"rep {p['median_ns']/1e3:7.1f} [{p['p10_ns']/1e3:.1f},{p['p90_ns']/1e3:.1f}] x{t['ratio'] or 0:.3f}")
PY
}
for f in 1 3; do
  rec --frames 24 --in-flight $f -o f$f.hrxt
  $d/hrx-trace replay f$f.hrxt --backend cuda --repeat 3 --report json > f$f.json 2>/dev/null
  echo "== in flight $f"; rows f$f.json
done
# The capture's own region spans (host and device) for the first 6 submissions of f3.
$d/hrx-trace dump --json f3.hrxt 2>/dev/null | grep -E '"(Submit|RegionTiming)"' | head -40 | cut -c1-260 > f3.dump
