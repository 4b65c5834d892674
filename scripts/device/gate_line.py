#!/usr/bin/env python3
"""One replay's gate line from its JSON report (issue 22): `gate_line.py TAG I RC`, run where
`r.json` (the report) and `r.err` (its standard error) lie. Prints the verdict, the rows slow
against the capture and against a baseline (`b:`), the rows a baseline's runs cleared, the
rows too few to judge, the median replay/capture ratio of each kind of region and each
built-in kernel's ratio. Used by s22-gate.sh and s45.sh.
"""
import json, statistics, sys
tag, i, rc = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    r = json.load(open("r.json"))
except Exception as e:
    print(f"{tag} {i}: rc {rc}, no report: {open('r.err').read()[:300]}"); sys.exit()
s = r["summary"]
kinds = {}
for t in r["timing"]:
    if t["ratio"]:
        kinds.setdefault(t["label"].split(",")[0].replace("GPU ", ""), []).append(t["ratio"])
ops = {t["label"][:14]: t["ratio"] for t in r["op_timing"] if t["ratio"] and t["label"].startswith("hrx_")}
slow = [t["label"][:24] for t in r["timing"] + r["op_timing"] if t["regression"]]
slow += ["b:" + t["label"][:22] for t in r["timing"] + r["op_timing"] if (t.get("baseline") or {}).get("regression")]
cleared = sum("not counted slow" in n for n in r.get("notes", []))
print(f"{tag} {i}: rc {rc} {r['verdict']} slow {s['slow']}+{s.get('baseline_slow', 0)} {slow} cleared {cleared} too_few {s['too_few']} "
      + " ".join(f"{k} {statistics.median(v):.3f}" for k, v in kinds.items()) + " | "
      + " ".join(f"{k} {v:.3f}" for k, v in ops.items()))
