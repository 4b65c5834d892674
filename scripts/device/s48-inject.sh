#!/bin/bash
# Run on the device machine from the repository root (session 48): how exactly
# `--inject-slowdown` slows a kernel on CUDA, each block's stretch timed on `%globaltimer`
# (`hrx-trace-head`, 820c076) or on its SM's cycle counter (`hrx-trace-cycles`, 820c076 with
# scripts/device/s48-cycles.patch), or BUILDS="head shared" (`hrx-trace-shared`: 820c076 with
# s48-shared.patch, which holds s48-cycles.patch too: the start kept in shared memory). Device
# tool `run`, carry [".device-bin/s48", ".device-bin/s45/photo"]. A 24-frame pipeline capture,
# then for each build in turn, ROUNDS (2) rounds of replays (`--per-op --pace
# captured --max-slowdown 100`: 10 repeats) with hrx_sobel slowed 1, 5 and 15% and hrx_blur_h
# 15%: each slowed kernel's replay / capture ratio.
source scripts/device/s48-host.sh
$d/hrx-trace-head record -q --workload pipeline --backend cuda --input $photo --frames 24 -o i.hrxt
for i in $(seq 1 ${ROUNDS:-2}); do
  for b in ${BUILDS:-head cycles}; do
    for slow in hrx_sobel=1 hrx_sobel=5 hrx_sobel=15 hrx_blur_h=15; do
      timeout 90 $d/hrx-trace-$b replay i.hrxt --backend cuda --per-op --pace captured \
        --max-slowdown 100 --inject-slowdown $slow --report json > r.json 2> r.err
      rc=$?
      python3 - "$b" "$slow" "$rc" <<'PY'
import json, sys
b, slow, rc = sys.argv[1:]
entry = slow.split("=")[0]
try:
    r = json.load(open("r.json"))
except Exception as e:
    print(f"{b} {slow}: rc={rc}, no report ({e})"); sys.exit()
rows = [t for t in r["op_timing"] if t["label"] == entry]
others = [t["ratio"] for t in r["op_timing"] if t["label"] != entry and t["label"].startswith("hrx_") and t["ratio"]]
print(f"{b:6} {slow:14} {entry} " + ", ".join(f"{t['ratio']:.3f}" for t in rows)
      + f"; other kernels {min(others):.3f}-{max(others):.3f}")
PY
    done
  done
done
rm -f i.hrxt r.json r.err
