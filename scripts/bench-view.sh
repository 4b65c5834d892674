#!/usr/bin/env bash
# `hrx-trace view` at scale (BENCHMARKS.md, "Timeline at scale"): time to the first frame
# and peak RSS of this checkout's binary against a baseline binary, one after the other on
# the same trace in the same run.
#
#   BASE_BIN=path/to/baseline/hrx-trace scripts/bench-view.sh TRACE...
#
# The first frame is drawn off-screen (`HRX_TUI_HEADLESS_FRAME=120x40`: open the trace, lay
# out and draw the first frame at 120x40, print it, exit), so each row is one whole process
# under `/usr/bin/time -v`: elapsed wall clock (process start to first frame printed, and
# exit) and maximum resident set size. Rows per trace:
#   base            the baseline binary (reads the whole trace into its model)
#   new, first open this checkout with an empty view cache: reads the trace, writes the
#                   cache entry, reopens it mapped, draws
#   new, reopen     this checkout again: the cache entry is current, nothing of the trace is
#                   read but its first and last 64 KiB (the issue's "first frame on open")
# The view cache lives in a scratch directory removed at exit (HRX_VIEW_CACHE); the trace
# and the cache files are in the page cache for every row after the first.
# Traces: `cargo run --release -p hrx-analysis --example gen-trace -- --regions N -o FILE`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${BASE_BIN:?set BASE_BIN to the baseline hrx-trace binary}"
NEW_BIN=${NEW_BIN:-$root/target/release/hrx-trace}
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -p hrx-trace >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() { # TRACE LABEL TIMEFILE
    local wall rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$3")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$3")
    printf '%s\t%s\twall %s\tpeak RSS %d MiB\n' "$1" "$2" "$wall" $((rss / 1024))
}

frame() { # BIN TIMEFILE
    HRX_TUI_HEADLESS_FRAME=120x40 HRX_VIEW_CACHE=$out/cache \
        /usr/bin/time -v -o "$2" "$1" view "$trace" >"$out/frame.txt"
    grep -q 'GPU' "$out/frame.txt" || { echo "no lanes in the first frame" >&2; exit 1; }
}

for trace in "$@"; do
    name=$(basename "$trace")
    rm -rf "$out/cache"
    if [ -z "${SKIP_BASE:-}" ]; then
        frame "$BASE_BIN" "$out/base.time"
        row "$name" "base" "$out/base.time"
    fi
    frame "$NEW_BIN" "$out/first.time"
    row "$name" "new, first open" "$out/first.time"
    frame "$NEW_BIN" "$out/reopen.time"
    row "$name" "new, reopen" "$out/reopen.time"
    if [ -d "$out/cache" ]; then
        printf '%s\tcache entry\t%s\n' "$name" "$(du -sh "$out/cache" | cut -f1)"
    else
        printf '%s\tcache entry\tnone (below HRX_VIEW_CACHE_MIN_BYTES)\n' "$name"
    fi
done
