#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5, copy regions): how far
# a copy region's replayed median is from its captured one, by the capture's length and frames
# in flight. For each trace: 8 replays (--repeat 10, 1 warm-up), each a line with every
# region kind's captured and replayed median [p10, p90] and their ratio; the captures are
# exported (Chrome JSON) for the per-sample analysis here.
# Device tool `run`, carry [".device-bin/s22"].
set -u
d=$PWD/.device-bin/s22
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv > gpu.txt 2>&1
for spec in 24:3 96:3 96:1; do
  n=${spec%:*}; f=${spec#*:}
  t=c$n-$f.hrxt
  $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames $n --in-flight $f -o $t
  $d/hrx-trace export -q $t -o c$n-$f.json
  for i in $(seq 1 8); do
    timeout 120 $d/hrx-trace replay $t --backend cuda --repeat 10 --report json > r.json 2> r.err
    python3 - $n $f $i $? <<'PY' >> copies.txt
import json, sys
n, f, i, rc = sys.argv[1:5]
try:
    r = json.load(open("r.json"))
except Exception:
    print(f"{n}:{f} #{i}: rc {rc} no report"); sys.exit()
kinds = {}
for t in r["timing"]:
    if not t["ratio"]:
        continue
    k = t["label"].split(",")[0].replace("GPU ", "")
    c, p = t["captured"], t["replayed"]
    kinds.setdefault(k, []).append(f"{c['median_ns']/1e3:.1f}[{c['p10_ns']/1e3:.0f},{c['p90_ns']/1e3:.0f}]n{c['samples']}->{p['median_ns']/1e3:.1f}[{p['p10_ns']/1e3:.0f},{p['p90_ns']/1e3:.0f}]={t['ratio']:.3f}")
print(f"{n}:{f} #{i}: rc {rc} " + " | ".join(f"{k} " + " ".join(v) for k, v in kinds.items() if k in ("Upload", "Download", "Compute")))
PY
  done
done
rm -f *.hrxt r.json; ls -la
