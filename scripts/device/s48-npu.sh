#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 22 point 5): whether the
# software NPU's host-timed regions replay closer to their capture when a GPU runtime's NPU
# worker spins idle as its GPU workers do (1 ms where 8 CPUs or more) instead of parking after
# 50 µs. Device tool `run`, carry [".device-bin/s48"]: `hrx-trace-base` (b910def) and
# `hrx-trace-npuspin` (b910def with scripts/device/s48-npuspin.patch), stripped release
# builds; `.device-bin/s45/photo` the photo (carry it too).
# ROUNDS (2) rounds of, for each build in turn: a 24-frame pipeline capture on CUDA, then
# REPLAYS (3) replays at `--pace captured` (the default `--repeat`) without and with
# `--per-op`; one line per replay: each region kind's ratio and the captured/replayed NPU spread.
source scripts/device/s48-host.sh
for i in $(seq 1 ${ROUNDS:-2}); do
  for b in base npuspin; do
    timeout 60 $d/hrx-trace-$b record -q --workload pipeline --backend cuda --input $photo --frames 24 -o $b-$i.hrxt
    for j in $(seq 1 ${REPLAYS:-3}); do
      for perop in "" --per-op; do
        timeout 90 $d/hrx-trace-$b replay $b-$i.hrxt --backend cuda --pace captured $perop --report json > r.json 2> r.err
        rc=$?
        python3 - "$b" "$i" "$j" "${perop:-plain}" "$rc" <<'PY'
import json, sys, statistics
b, i, j, mode, rc = sys.argv[1:]
try:
    r = json.load(open("r.json"))
except Exception as e:
    print(f"{b} r{i} #{j} {mode}: rc={rc}, no report ({e})"); sys.exit()
kinds = {}
npu = ""
for t in r["timing"]:
    label = t["label"]
    k = label.split(",")[0].replace("GPU ", "")
    if t.get("kind") == "operation" or label.startswith("hrx_"):
        continue
    kinds.setdefault(k[:12], []).append(t["ratio"])
    if "NPU" in label:
        c, p = t["captured"], t["replayed"]
        npu = f" NPU med {c['median_ns']/1e3:.0f}->{p['median_ns']/1e3:.0f} min {c['min_ns']/1e3:.0f}->{p['min_ns']/1e3:.0f} p90 {c['p90_ns']/1e3:.0f}->{p['p90_ns']/1e3:.0f} us"
print(f"{b} r{i} #{j} {mode:7} {r.get('verdict', '?')}: " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in kinds.items()) + npu)
PY
      done
    done
  done
done
tar czf /tmp/out.tar.gz *.hrxt && rm -f *.hrxt && mv /tmp/out.tar.gz .
