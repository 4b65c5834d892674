#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times",
# session 29): scripts/device/s29-events.cu built with nvcc, each graph shape three times
# interleaved (one process each, 2000 launches after 200), then Nsight Compute's
# gpu__time_duration of the same two kernels launched by the untimed graph.
set -u
nvcc -O2 -arch=sm_90 -o /tmp/events scripts/device/s29-events.cu || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader
for round in 1 2 3; do
  for shape in ${SHAPES:-0 1 2 3 4}; do /tmp/events $shape ${N:-2000}; done
done
[ "${NCU:-1}" = 1 ] || exit 0
ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv /tmp/events 0 40 2>/dev/null > $OUT/ncu.csv
python3 - $OUT/ncu.csv <<'PY'
import csv, sys, statistics
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; ki = head.index("Kernel Name"); vi = head.index("Metric Value"); ui = head.index("Metric Unit"); idi = head.index("ID")
vals = [float(r[vi].replace(",", "")) * (1000 if r[ui] == "usecond" else 1) for r in rows[1:]]
# Kernels alternate K1, K2 in launch order; the first 200 launches' are warm-up (400 kernels).
k1 = vals[400::2]; k2 = vals[401::2]
print(f"ncu gpu__time_duration (ns): K1 median {statistics.median(k1):.0f} (n {len(k1)}), K2 median {statistics.median(k2):.0f}, units {rows[1][ui]}")
PY
