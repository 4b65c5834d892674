"""Prints one line for a replay's JSON report (`replay --report json`): each region kind's
median ratio (range over the kind's rows), the widest captured-median interval of the kind
(relative) and the sample counts. Used by the session 48-51 device scripts. With
`--medians` (session 51), each kind's captured and replayed medians in µs instead (median
over the kind's rows).

    python3 region-kinds.py REPORT.json ROUND LABEL RC
    python3 region-kinds.py --medians REPORT.json LABEL
"""
import json
import statistics
import sys

medians = sys.argv[1] == "--medians"
if medians:
    path, label = sys.argv[2:]
    j = rc = "-"
else:
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
    kinds.setdefault(k, []).append(t)
out = []
for k, rows in kinds.items():
    if medians:
        c = statistics.median(t["captured"]["median_ns"] for t in rows) / 1e3
        p = statistics.median(t["replayed"]["median_ns"] for t in rows) / 1e3
        out.append(f"{k} {c:.1f}/{p:.1f}")
        continue
    rs = [t["ratio"] for t in rows]
    width = max(
        max(hi / t["captured"]["median_ns"] - 1, 1 - lo / t["captured"]["median_ns"])
        for t in rows
        for lo, hi in [t["captured"]["median_interval_ns"]]
    )
    n = (rows[0]["captured"]["samples"], rows[0]["replayed"]["samples"])
    out.append(f"{k} {min(rs):.3f}-{max(rs):.3f} (±{width*100:.1f}%, n {n[0]}/{n[1]})")
if medians:
    print(f"{label:10} captured/replayed µs: " + "; ".join(out))
else:
    print(f"#{j} {label:16} {r.get('verdict', '?')}: " + "; ".join(out))
