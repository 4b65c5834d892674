#!/usr/bin/env bash
# Issue 22 point 5 on the software device (BENCHMARKS.md, "Replay as a gate", session 53): how
# far captures of one build lie apart, and their replays from them, with large host buffers
# on 4 KiB pages (`HRX_HUGE_PAGES=0`) and on 2 MiB huge pages (the default, src/huge_pages.rs).
#
#   scripts/bench-huge-pages.sh HRX_TRACE_BINARY [ROUNDS (8)] [FRAMES (48)]
#
# Each round, for each mode in turn: `record --workload pipeline --backend sim` of FRAMES
# frames (the README's main job, Aqua.jpg), then `replay --pace captured --report json` of
# it under the same mode; one line per replay, each region kind's captured/replayed median
# in µs (scripts/device/region-kinds.py --medians). Scratch files in a temporary directory.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 HRX_TRACE_BINARY [ROUNDS] [FRAMES]" >&2; exit 2; }
bin=$(realpath "$1")
kinds=$(realpath "$(dirname "$0")/device/region-kinds.py")
out=$(mktemp -d "${SCRATCH:-/tmp}/bench-huge.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$out"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo none)"
for round in $(seq "${2:-8}"); do
    for mode in 0 1; do
        HRX_HUGE_PAGES=$mode "$bin" record -q --workload pipeline --backend sim \
            --frames "${3:-48}" -o t.hrxt
        HRX_HUGE_PAGES=$mode "$bin" replay t.hrxt --pace captured --report json > r.json || true
        python3 "$kinds" --medians r.json "r$round huge=$mode"
    done
done
