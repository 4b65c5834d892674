#!/usr/bin/env bash
# Opening a trace for the timeline at scale (BENCHMARKS.md, "Timeline at scale"): the
# baseline binary's `view` (in a detached tmux at 120x40, until its first frame shows, then
# `q`) against `hrx_analysis::spans` (the span-store example: one pass building the
# per-lane store, one zoomed-out frame of coverage and one 1 ms window of spans) and the
# bare pass (`--scan-only`), one after the other on the same trace.
#
#   BASE_BIN=path/to/hrx-trace-75bcf8a scripts/bench-view.sh TRACE...
#
# Each row is one run of `/usr/bin/time -v`: elapsed wall clock and maximum resident set
# size. For `view`, "first frame" is when tmux first shows a lane header (polled every
# 20 ms); its wall is until it quit.
# A `view` built from this checkout can be timed without a terminal:
# `HRX_TUI_HEADLESS_FRAME=120x40 /usr/bin/time -v hrx-trace view TRACE >/dev/null` loads the
# trace, draws the first frame off-screen, prints it and exits.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${BASE_BIN:?set BASE_BIN to the baseline hrx-trace binary}"
cargo build --release -p hrx-analysis --example span-store >&2
store=$root/target/release/examples/span-store
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() { # LABEL TIMEFILE [FIRST_FRAME_S]
    local wall rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$2")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$2")
    printf '%s\twall %s\tpeak RSS %d MiB\t%s\n' "$1" "$wall" $((rss / 1024)) "${3:-}"
}

for trace in "$@"; do
    name=$(basename "$trace")
    session=bench-view-$$
    start=$(date +%s.%N)
    tmux new-session -d -s "$session" -x 120 -y 40 \
        "/usr/bin/time -v -o $out/view.time $BASE_BIN view $trace; sleep 1"
    until tmux capture-pane -p -t "$session" 2>/dev/null | grep -q 'GPU'; do sleep 0.02; done
    first=$(echo "$(date +%s.%N) - $start" | bc)
    tmux send-keys -t "$session" q
    while [ ! -s "$out/view.time" ]; do sleep 0.05; done
    tmux kill-session -t "$session" 2>/dev/null || true
    row "$name base view" "$out/view.time" "first frame ${first} s"
    /usr/bin/time -v -o "$out/scan.time" "$store" --scan-only "$trace" >/dev/null
    row "$name scan only" "$out/scan.time"
    /usr/bin/time -v -o "$out/store.time" "$store" "$trace"
    row "$name span store" "$out/store.time"
done
