#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5 diagnosis): why replayed
# regions read 1.09-1.32x of the capture. Two captures of the same 24-frame pipeline (capture
# against capture), then replays default and --pace captured, one line per region row:
# label, clock, samples, captured and replayed medians and p10/p90. Also what NVML offers.
# Device tool `run`, carry [".device-bin/s22"].
set -u
d=$PWD/.device-bin/s22
cd $OUT
ls -la /usr/lib/x86_64-linux-gnu/libnvidia-ml* 2>&1 | head -3 > nvml.txt
nvidia-smi -q -d CLOCK,PERFORMANCE 2>&1 | head -60 >> nvml.txt
rec() { $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo "$@"; }
rec --frames 24 -o a.hrxt; rec --frames 24 -o b.hrxt
rows() {
python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["timing"]:
    c, p = t["captured"], t["replayed"]
    if not c or not p: continue
    print(f"  g{t['graph']} r{t['region']} {t['label'][:34]:34} {t['clock']:6} n{c['samples']}/{p['samples']} "
          f"cap {c['median_ns']/1e3:8.1f} [{c['p10_ns']/1e3:.1f},{c['p90_ns']/1e3:.1f}] "
          f"rep {p['median_ns']/1e3:8.1f} [{p['p10_ns']/1e3:.1f},{p['p90_ns']/1e3:.1f}] x{t['ratio'] or 0:.3f}")
PY
}
$d/hrx-trace replay b.hrxt --backend cuda --repeat 1 --warmup 0 --report json > ab.json 2>/dev/null
echo "== capture b replayed once (no warmup)"; rows ab.json
for mode in "" "--pace captured"; do
  $d/hrx-trace replay a.hrxt --backend cuda --repeat 10 --warmup 1 $mode --report json > r.json 2>r.err
  echo "== a replayed x10 $mode rc=$?"; rows r.json
done
$d/hrx-trace stats a.hrxt 2>&1 | head -40 > stats_a.txt
$d/hrx-trace stats b.hrxt 2>&1 | head -40 > stats_b.txt
$d/hrx-trace diff a.hrxt b.hrxt 2>&1 | head -40 > diff_ab.txt
# The slowed kernel (--inject-slowdown, hrx_blur_h +15%): its operation rows per replay.
for i in 1 2 3; do
  $d/hrx-trace replay a.hrxt --backend cuda --max-slowdown 1.1 --per-op --inject-slowdown hrx_blur_h=15 --report json > s.json 2>s.err
  echo "== slowed replay $i rc=$? $(head -c 300 s.err)"
  python3 - s.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  verdict", r["verdict"], "slow", r["summary"]["slow"], "too_few", r["summary"]["too_few"], r["replay"].get("slowdowns"))
for t in r["op_timing"]:
    c, p = t["captured"], t["replayed"]
    if not c or not p: continue
    print(f"  op g{t['graph']} n{t['node']} {t['label'][:24]:24} n{c['samples']}/{p['samples']} "
          f"cap {c['median_ns']/1e3:7.2f} rep {p['median_ns']/1e3:7.2f} x{t['ratio'] or 0:.3f} "
          f"[{(t['interval'] or [0,0])[0]:.3f},{(t['interval'] or [0,0])[1]:.3f}] spread {t['spread']:.3f} slow {t['regression']}")
PY
done
