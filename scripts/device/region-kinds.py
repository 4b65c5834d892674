"""Prints one line for a replay's JSON report (`replay --report json`): each region kind's
median ratio (range over the kind's rows), the widest captured-median interval of the kind
(relative) and the sample counts. Used by the session 48 and 49 device scripts.

    python3 region-kinds.py REPORT.json ROUND LABEL RC
"""
import json
import sys

path, j, label, rc = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"#{j} {label}: rc={rc}, no report ({e})")
    sys.exit()
kinds = {}
for t in r["timing"]:
    name = t["label"]
    if not (name.startswith("GPU ") or name.startswith("NPU")):
        continue
    k = name.split(",")[0].replace("GPU ", "")
    c = t["captured"]
    lo, hi = c["median_interval_ns"]
    width = max(hi / c["median_ns"] - 1, 1 - lo / c["median_ns"])
    kinds.setdefault(k, []).append((t["ratio"], width, c["samples"], t["replayed"]["samples"]))
out = []
for k, v in kinds.items():
    rs = [x[0] for x in v]
    out.append(f"{k} {min(rs):.3f}-{max(rs):.3f} (±{max(x[1] for x in v)*100:.1f}%, n {v[0][2]}/{v[0][3]})")
print(f"#{j} {label:16} {r.get('verdict', '?')}: " + "; ".join(out))
