#!/bin/bash
# Run on the device machine from the repository root (session 46, issue 22 point 5): why the
# software NPU's regions replay 1.1-1.3x of their capture on GPU hosts (0.8x on the 2-CPU VM).
# One 24-frame pipeline capture on CUDA, then ROUNDS (3) rounds of replays, `--repeat 1` and
# `--repeat 10`, each at `--pace none` and `--pace captured`: per replay, each region kind's
# replayed median, min and p90 against the captured ones. Device tool `run`, carry
# [".device-bin/s45"].
set -u
d=$PWD/.device-bin/s45
cd $OUT
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o n.hrxt
for i in $(seq 1 ${ROUNDS:-3}); do
  for rep in 1 10; do
    for pace in none captured; do
      timeout 60 $d/hrx-trace replay n.hrxt --backend cuda --repeat $rep --pace $pace --report json > r.json 2>/dev/null
      python3 - $i $rep $pace <<'PY'
import json, sys
r = json.load(open("r.json"))
out = []
for t in r["timing"]:
    c, p = t["captured"], t["replayed"]
    k = t["label"].split(",")[0].replace("GPU ", "")[:8]
    out.append(f"{k} {t['ratio']:.3f} (med {c['median_ns']/1e3:.0f}->{p['median_ns']/1e3:.0f} min {c['min_ns']/1e3:.0f}->{p['min_ns']/1e3:.0f} p90 {c['p90_ns']/1e3:.0f}->{p['p90_ns']/1e3:.0f} us)")
print(f"round {sys.argv[1]} repeat {sys.argv[2]:>2} pace {sys.argv[3]:<8} " + "; ".join(out))
PY
    done
  done
done
