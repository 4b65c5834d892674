#!/bin/bash
# Issue 22 point 5 on the software device: a 24-frame pipeline trace (320 px, 3 in flight:
# rows pool the 3 prepared graphs) replayed N times unchanged and N times with hrx_blur_h
# slowed (--inject-slowdown hrx_blur_h=P), each with --max-slowdown R --per-op (10 repeats, 1
# warm-up): per replay the verdict, the slow rows named, and blur_h's operation ratio.
# Usage: [W=320] [K=hrx_blur_h] scripts/sim-gate.sh HRX_TRACE_BINARY PHOTO [N=20] [R=1.1] [P=15]
# (W: the frames' largest width; K: the kernel slowed and printed)
set -u
bin=$1 photo=$2 n=${3:-20} r=${4:-1.1} p=${5:-15}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" record -q --workload pipeline --backend sim --frames 24 --max-width "${W:-320}" --input "$photo" -o "$dir/g.hrxt"
one() {
  "$bin" replay "$dir/g.hrxt" --backend sim --max-slowdown "$r" --per-op --report json "$@" > "$dir/r.json" 2>/dev/null
  python3 - "$dir/r.json" "${K:-hrx_blur_h}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
slow = sorted({t["label"][:20] for t in r["timing"] + r["op_timing"] if t["regression"]})
blur = [t for t in r["op_timing"] if t["label"].startswith(sys.argv[2])][0]
lo, hi = blur["interval"] or (0, 0)
print(f"{r['verdict']} slow={len(slow)} {slow} {sys.argv[2]} x{blur['ratio']:.3f} [{lo:.3f},{hi:.3f}] load {r['replay']['host']['load_before']}")
PY
}
for i in $(seq 1 "$n"); do echo "same $i: $(one)"; done
for i in $(seq 1 "$n"); do echo "slowed $i: $(one --inject-slowdown ${K:-hrx_blur_h}=$p)"; done
