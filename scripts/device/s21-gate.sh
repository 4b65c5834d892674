#!/bin/bash
# Run on the device machine from the repository root (issue 20's CUPTI fix; issue 22 point 5's
# unchanged gate on the H200): the hardware tests; the pipeline with --kernel-times, each
# region's operation times against its region time; a 24-frame pipeline trace (self-timed)
# replayed 20 times with --max-slowdown 1.1 --per-op (defaults: 10 repeats, 1 warm-up), one
# line per replay: verdict, slow rows, rows too few to judge, region ratios replay/capture.
# Device tool `run`, carry [".device-bin/s21"]; .device-bin/s21/ as for s21.sh.
set -u
d=$PWD/.device-bin/s21
s=$PWD/scripts/device
cd $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > gpu.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
rec() { $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo "$@"; }
rec --frames 12 --kernel-times -o cupti.hrxt; $d/hrx-trace dump --json cupti.hrxt > cupti.jsonl 2>/dev/null
python3 $s/optimes.py cupti.jsonl > optimes.txt 2>&1
rec --frames 24 -o gate.hrxt
for i in $(seq 1 20); do
  timeout 120 $d/hrx-trace replay gate.hrxt --backend cuda --max-slowdown 1.1 --per-op --report json > r.json 2> r.err; rc=$?
  python3 - "$i" "$rc" >> gate.txt <<'PY'
import json, statistics, sys
i, rc = sys.argv[1], sys.argv[2]
try:
    r = json.load(open("r.json"))
except Exception as e:
    print(f"replay {i}: rc {rc}, no report: {open('r.err').read()[:200]}"); sys.exit()
s = r["summary"]
ratios = [t["ratio"] for t in r["timing"] if t["ratio"]]
ops = [t["ratio"] for t in r["op_timing"] if t["ratio"]]
slow = [t["label"][:40] for t in r["timing"] + r["op_timing"] if t["regression"]]
h = r["replay"]["host"]
print(f"replay {i}: rc {rc} {r['verdict']} slow {s['slow']} too_few {s['too_few']} "
      f"regions median {statistics.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}] "
      f"ops median {statistics.median(ops) if ops else 0:.3f} [{min(ops) if ops else 0:.3f}..{max(ops) if ops else 0:.3f}] "
      f"load {h['load_before']} {slow[:3]}")
PY
done
cat gpu.txt; grep -E "^test |rc=" hw.txt | tail -8; tail -n 9 optimes.txt; cat gate.txt
