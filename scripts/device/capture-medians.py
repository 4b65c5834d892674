"""Prints, for a replay's JSON report (`replay --report json`), each region kind's captured and
replayed medians in µs (median over the kind's rows). Session 51: whether the capture's own
medians move from one capture process to the next as much as a replay's.

    python3 capture-medians.py REPORT.json LABEL
"""
import json
import statistics
import sys

path, label = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{label}: no report ({e})")
    sys.exit()
kinds = {}
for t in r["timing"]:
    name = t["label"]
    if not (name.startswith("GPU ") or name.startswith("NPU")):
        continue
    k = name.split(",")[0].replace("GPU ", "")
    kinds.setdefault(k, []).append((t["captured"]["median_ns"], t["replayed"]["median_ns"]))
out = []
for k, v in kinds.items():
    c = statistics.median(x[0] for x in v) / 1e3
    p = statistics.median(x[1] for x in v) / 1e3
    out.append(f"{k} {c:.1f}/{p:.1f}")
print(f"{label:10} captured/replayed µs: " + "; ".join(out))
