#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5, copy regions): capture
# jobs that wait for the copies to stop (trace::quiet) against the build before them. For each
# build, alternating, the pipeline recorded with 96 frames, one and three in flight, then each
# trace replayed 4 times (--repeat 10) by the same build: per replay the copy and compute
# regions' captured and replayed medians [p10, p90] and their ratio.
# Device tool `run`, carry [".device-bin/s23"]: hrx-trace (this change), hrx-trace-old (main
# before it), photo/ (Aqua.jpg).
set -u
d=$PWD/.device-bin/s23
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
for round in $(seq 1 ${ROUNDS:-2}); do
for b in hrx-trace-old hrx-trace; do
for f in 1 3; do
  t=$b-$f.hrxt
  $d/$b record -q --workload pipeline --backend cuda --input $d/photo --frames 96 --in-flight $f -o $t
  for i in 1 2 3 4; do
    timeout 120 $d/$b replay $t --backend cuda --repeat 10 --report json > r.json 2> r.err
    python3 - $b $f $i $? $round <<'PY' >> quiet.txt
import json, sys
b, f, i, rc, rnd = sys.argv[1:6]
try:
    r = json.load(open("r.json"))
except Exception:
    print(f"{b} 96:{f} #{i}: rc {rc} no report"); sys.exit()
kinds = {}
for t in r["timing"]:
    if not t["ratio"]:
        continue
    k = t["label"].split(",")[0].replace("GPU ", "")
    c, p = t["captured"], t["replayed"]
    kinds.setdefault(k, []).append(f"{c['median_ns']/1e3:.1f}[{c['p10_ns']/1e3:.0f},{c['p90_ns']/1e3:.0f}]->{p['median_ns']/1e3:.1f}[{p['p10_ns']/1e3:.0f},{p['p90_ns']/1e3:.0f}]={t['ratio']:.3f}")
print(f"r{rnd} {b:13} 96:{f} #{i}: rc {rc} " + " | ".join(f"{k} " + " ".join(v) for k, v in kinds.items() if k in ("Upload", "Download", "Compute")))
PY
  done
  rm -f $t
done
done
done
rm -f r.json
