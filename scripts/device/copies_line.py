"""One line of a replay report's copy and compute regions (issue 22, the s23 device scripts).

Usage: python3 copies_line.py PREFIX RC [REPORT]   (REPORT defaults to r.json)

Prints `PREFIX: rc RC` and, for the Upload, Compute and Download regions with a ratio, the
captured median [p10, p90] -> the replayed median [p10, p90] = their ratio, in µs.
"""
import json
import sys

prefix, rc = sys.argv[1], sys.argv[2]
path = sys.argv[3] if len(sys.argv) > 3 else "r.json"
try:
    report = json.load(open(path))
except Exception:
    print(f"{prefix}: rc {rc} no report")
    sys.exit()
kinds = {}
for row in report["timing"]:
    if not row["ratio"]:
        continue
    kind = row["label"].split(",")[0].replace("GPU ", "")
    c, p = row["captured"], row["replayed"]
    kinds.setdefault(kind, []).append(
        f"{c['median_ns']/1e3:.1f}[{c['p10_ns']/1e3:.0f},{c['p90_ns']/1e3:.0f}]"
        f"->{p['median_ns']/1e3:.1f}[{p['p10_ns']/1e3:.0f},{p['p90_ns']/1e3:.0f}]={row['ratio']:.3f}"
    )
print(
    f"{prefix}: rc {rc} "
    + " | ".join(
        f"{k} " + " ".join(v) for k, v in kinds.items() if k in ("Upload", "Download", "Compute")
    )
)
