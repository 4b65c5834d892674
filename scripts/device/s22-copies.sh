#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 5, copy regions): does a
# replay's copy time depend on how many repeats' runtimes it keeps open? The 24-frame
# pipeline trace replayed 8 times with --repeat 1 (one runtime) and 8 times with --repeat 10
# (ten runtimes open at once in a streamed replay): per replay the upload, download and
# compute regions' medians against the capture's.
# Device tool `run`, carry [".device-bin/s22"].
set -u
d=$PWD/.device-bin/s22
cd $OUT
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o c.hrxt
for r in 1 10; do
  for i in $(seq 1 8); do
    $d/hrx-trace replay c.hrxt --backend cuda --repeat $r --report json > r.json 2>/dev/null
    python3 - $r $i <<'PY'
import json, sys
r = json.load(open("r.json"))
k = {t["label"].split(",")[0].replace("GPU ", ""): t["ratio"] for t in r["timing"] if t["ratio"]}
print(f"repeat {sys.argv[1]} #{sys.argv[2]}: " + " ".join(f"{a} {b:.3f}" for a, b in k.items()))
PY
  done
done
