#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 22 point 5): how far a
# replay's region medians lie from the capture's when the capture is long enough that its own
# medians are known within a few percent. Device tool `run`, carry [".device-bin/s48",
# ".device-bin/s45/photo"]: `hrx-trace-base` (b910def, stripped), and for BUILDS="base rehash"
# `hrx-trace-rehash` (b910def with scripts/device/s48-rehash.patch: replays hash the host
# writes they re-apply, as the capture did, recording hash and length only). FRAMES
# (240) frames of the pipeline on CUDA recorded by `base`, then REPLAYS (5) rounds of replays,
# each build's at `--pace captured` and `none` (REPEAT (1) repeats after the warm-up), in turn;
# one line per replay: each region kind's median ratio (range over the kind's rows) and the
# widest captured-median interval of the kind, relative.
source scripts/device/s48-host.sh
frames=${FRAMES:-240}
timeout 120 $d/hrx-trace-base record -q --workload pipeline --backend cuda --input $photo --frames $frames -o long.hrxt
echo "recorded $frames frames rc=$? at ${SECONDS}s"
for j in $(seq 1 ${REPLAYS:-5}); do
  for b in ${BUILDS:-base}; do
  for pace in captured none; do
    timeout 120 $d/hrx-trace-$b replay long.hrxt --backend cuda --pace $pace --repeat ${REPEAT:-1} ${EXTRA:-} --report json > r.json 2> r.err
    rc=$?
    python3 - "$j" "$b $pace" "$rc" <<'PY'
import json, sys
j, pace, rc = sys.argv[1:]
try:
    r = json.load(open("r.json"))
except Exception as e:
    print(f"#{j} {pace}: rc={rc}, no report ({e})"); sys.exit()
kinds = {}
for t in r["timing"]:
    label = t["label"]
    if not (label.startswith("GPU ") or label.startswith("NPU")):
        continue
    k = label.split(",")[0].replace("GPU ", "")
    c = t["captured"]
    lo, hi = c["median_interval_ns"]
    width = max(hi / c["median_ns"] - 1, 1 - lo / c["median_ns"])
    kinds.setdefault(k, []).append((t["ratio"], width, c["samples"], t["replayed"]["samples"]))
out = []
for k, v in kinds.items():
    rs = [x[0] for x in v]
    out.append(f"{k} {min(rs):.3f}-{max(rs):.3f} (±{max(x[1] for x in v)*100:.1f}%, n {v[0][2]}/{v[0][3]})")
print(f"#{j} {pace:16} {r.get('verdict', '?')}: " + "; ".join(out))
PY
  done
  done
done
rm -f r.json r.err
