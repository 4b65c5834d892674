#!/bin/bash
# Run on the device machine from the repository root (session 56): every verb of hrx-trace on
# CUDA traces, as a user on the GPU would run them, each command's exit code and key lines.
# Device tool `run`, carry [".device-bin/s56"]: hrx-trace, the `linked` and `pipeline`
# examples of hrx and `crashing` of hrx-trace (release, stripped), and photo/.
set -u
d=${BIN:-$PWD/.device-bin/s56}
cd "$OUT"
t() { echo "== $*"; timeout 120 "$@" > o.txt 2> e.txt; rc=$?; echo "rc=$rc"; grep -hE "^(verdict|replayed|error|warning)|regression|slow|SAME|DIFFER|records  |closed|lost" o.txt e.txt | cut -c1-300 | head -${LINES_SHOWN:-6}; }
t $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 48 -o p.hrxt
HRX_TRACE_KERNELS=1 t $d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 48 -o k.hrxt
t $d/hrx-trace info k.hrxt
t $d/hrx-trace stats p.hrxt
t $d/hrx-trace stats --json k.hrxt
t $d/hrx-trace diff p.hrxt k.hrxt
t $d/hrx-trace export p.hrxt -o p.json
t $d/hrx-trace export p.hrxt -o p.perfetto-trace
t $d/hrx-trace export k.hrxt -o k.parquet --format parquet
HRX_TUI_HEADLESS_FRAME=120x40 t $d/hrx-trace view k.hrxt
t $d/hrx-trace replay p.hrxt --backend cuda --per-op
t $d/hrx-trace replay k.hrxt --backend cuda --per-op
t $d/hrx-trace replay p.hrxt --backend cuda --per-op --isolated
t $d/hrx-trace replay p.hrxt --backend cuda --save-baseline b.json
t $d/hrx-trace replay p.hrxt --backend cuda --baseline b.json
t $d/hrx-trace replay p.hrxt --backend cuda --baseline b.json --inject-slowdown hrx_sobel=15 --max-slowdown 1.1
t $d/hrx-trace replay p.hrxt --backend sim
t $d/hrx-trace record -o app.hrxt -- env HRX_BACKEND=cuda $d/linked
t $d/hrx-trace replay app.hrxt --backend cuda
t $d/hrx-trace record -o pl.hrxt -- env HRX_BACKEND=cuda $d/pipeline --input $d/photo --frames 12 --out "$OUT/pl-out"
t $d/hrx-trace replay pl.hrxt --backend cuda
t $d/hrx-trace record -o crash.hrxt -- env HRX_BACKEND=cuda $d/crashing segv
t $d/hrx-trace info crash.hrxt
t $d/hrx-trace record -q --workload faults --backend cuda --input $d/photo --frames 12 -o f.hrxt
t $d/hrx-trace replay f.hrxt --backend cuda --max-slowdown 2
t $d/hrx-trace replay f.hrxt --backend sim
rm -rf *.hrxt* p.json p.perfetto-trace k.parquet b.json o.txt e.txt
echo "done at ${SECONDS}s"
