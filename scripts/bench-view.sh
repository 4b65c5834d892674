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
#   base              the baseline binary, its own empty view cache (a first open)
#   new, first frame  this checkout, empty view cache: a trace over the cache threshold
#                     is drawn from its block summaries (format 1.9) and the process exits
#                     (`view` would go on building the index behind that frame)
#   new, index built  the same, then the index built as `view` builds it behind the first
#                     frame (HRX_TUI_HEADLESS_INDEX=1: reads the trace, writes the cache
#                     entry, reopens it mapped, prints the full frame): wall and peak RSS of
#                     the whole process, first frame included
#   new, reopen       this checkout again: the cache entry is current, nothing of the trace
#                     is read but its first and last 64 KiB
# With BASE_INDEX=1 the baseline gets the "index built" and "reopen" rows too (its cache is
# removed before this checkout's rows, so one entry is on disk at a time: at 100M regions an
# entry is about 8.5 GB); SKIP_BASE=1 / SKIP_NEW=1 leave out one binary's rows.
# With SESSION=reopen, only the session on a current entry runs (after the "reopen" row of
# each binary that built one): at 100M a session from an empty cache is a second index build.
# With SESSION=1, two more rows per binary drive the real viewer in a private tmux server
# (a 120x40 pane; `tmux` must be installed), whole process under `/usr/bin/time -v`:
#   base/new, session           empty view cache: the summary frame, the index built behind
#                               it, then a session: zoom in six times, pan right ten times,
#                               the queue's last and first span, Tab through three spans,
#                               statistics, zoom out, fit, a search (`/blur`, Enter, three
#                               `n`, one `N`), quit. Peak RSS is the whole session's; the
#                               wall time includes the pauses between keys (not a figure).
#   new, session reopen         the same session again, the cache entry current
# The view caches live in a scratch directory removed at exit (HRX_VIEW_CACHE, one for each
# binary); the trace and the cache files are in the page cache for every row after the
# first.
# Traces: `cargo run --release -p hrx-analysis --example gen-trace -- --regions N -o FILE`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${BASE_BIN:?set BASE_BIN to the baseline hrx-trace binary}"
NEW_BIN=${NEW_BIN:-$root/target/release/hrx-trace}
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -p hrx-trace >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() { # TRACE LABEL TIMEFILE
    local wall rss cpu
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$3")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$3")
    # User + system CPU seconds: what a loaded machine's wall clock hides.
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$3")
    printf '%s\t%s\twall %s\tCPU %s s\tpeak RSS %d MiB\n' "$1" "$2" "$wall" "$cpu" $((rss / 1024))
}

frame() { # BIN TIMEFILE CACHE [INDEX]
    HRX_TUI_HEADLESS_FRAME=120x40 HRX_VIEW_CACHE=$3 HRX_TUI_HEADLESS_INDEX=${4:-0} \
        /usr/bin/time -v -o "$2" "$1" view "$trace" >"$out/frame.txt"
    grep -q 'GPU' "$out/frame.txt" || { echo "no lanes in the first frame" >&2; exit 1; }
}

tmux_cmd() { tmux -S "$out/tmux.sock" "$@"; }

screen() { tmux_cmd capture-pane -p -t bench 2>/dev/null || true; }

wait_screen() { # WHAT GREP-PATTERN [NOT-PATTERN]
    local i s
    for i in $(seq 1 3000); do
        s=$(screen)
        if grep -q -- "$2" <<<"$s" && { [ -z "${3:-}" ] || ! grep -q -- "$3" <<<"$s"; }; then
            return 0
        fi
        tmux_cmd has-session -t bench 2>/dev/null || break
        sleep 0.2
    done
    echo "session: timed out waiting for $1; the screen:" >&2
    screen >&2
    exit 1
}

keys() { # KEY... (tmux key names), a pause after each for the frame to be drawn
    local k
    for k in "$@"; do
        tmux_cmd send-keys -t bench "$k"
        sleep 0.3
    done
}

session() { # BIN TIMEFILE CACHE
    rm -f "$2"
    tmux_cmd -f /dev/null new-session -d -s bench -x 120 -y 40 \
        "HRX_VIEW_CACHE=$3 /usr/bin/time -v -o $2 $1 view $trace"
    wait_screen "the index" " spans" "summary of"
    keys + + + + + + '>' '>' '>' '>' '>' '>' '>' '>' '>' '>' End Home Tab Tab Tab s s
    keys - - - f / b l u r Enter n n n N
    wait_screen "a search match" "blur"
    screen >"$out/session.txt"
    keys q
    for _ in $(seq 1 300); do
        [ -s "$2" ] && ! tmux_cmd has-session -t bench 2>/dev/null && break
        sleep 0.2
    done
    tmux_cmd kill-server 2>/dev/null || true
}

for trace in "$@"; do
    name=$(basename "$trace")
    rm -rf "$out/cache" "$out/cache-base"
    if [ -z "${SKIP_BASE:-}" ]; then
        frame "$BASE_BIN" "$out/base.time" "$out/cache-base"
        row "$name" "base" "$out/base.time"
        rm -rf "$out/cache-base"
        if [ -n "${BASE_INDEX:-}" ]; then
            frame "$BASE_BIN" "$out/base-first.time" "$out/cache-base" 1
            row "$name" "base, index built" "$out/base-first.time"
            frame "$BASE_BIN" "$out/base-reopen.time" "$out/cache-base"
            row "$name" "base, reopen" "$out/base-reopen.time"
            if [ "${SESSION:-}" = reopen ]; then
                session "$BASE_BIN" "$out/base-session-reopen.time" "$out/cache-base"
                row "$name" "base, session reopen" "$out/base-session-reopen.time"
            fi
            printf '%s\tbase cache entry\t%s\n' "$name" "$(du -sh "$out/cache-base" | cut -f1)"
            rm -rf "$out/cache-base"
        fi
    fi
    [ -z "${SKIP_NEW:-}" ] || continue
    frame "$NEW_BIN" "$out/summary.time" "$out/cache"
    row "$name" "new, first frame" "$out/summary.time"
    frame "$NEW_BIN" "$out/first.time" "$out/cache" 1
    row "$name" "new, index built" "$out/first.time"
    frame "$NEW_BIN" "$out/reopen.time" "$out/cache"
    row "$name" "new, reopen" "$out/reopen.time"
    if [ "${SESSION:-}" = reopen ]; then
        session "$NEW_BIN" "$out/session-reopen.time" "$out/cache"
        row "$name" "new, session reopen" "$out/session-reopen.time"
        printf '%s\tsession, last screen\t%s\n' "$name" "$(grep -v '^ *$' "$out/session.txt" | tail -1)"
    elif [ -n "${SESSION:-}" ]; then
        if [ -z "${SKIP_BASE:-}" ]; then
            rm -rf "$out/cache-base"
            session "$BASE_BIN" "$out/base-session.time" "$out/cache-base"
            row "$name" "base, session" "$out/base-session.time"
            rm -rf "$out/cache-base"
        fi
        rm -rf "$out/cache"
        session "$NEW_BIN" "$out/session.time" "$out/cache"
        row "$name" "new, session" "$out/session.time"
        printf '%s\tsession, last screen\t%s\n' "$name" "$(grep -v '^ *$' "$out/session.txt" | tail -1)"
        session "$NEW_BIN" "$out/session-reopen.time" "$out/cache"
        row "$name" "new, session reopen" "$out/session-reopen.time"
    fi
    if [ -d "$out/cache" ]; then
        printf '%s\tcache entry\t%s\n' "$name" "$(du -sh "$out/cache" | cut -f1)"
    else
        printf '%s\tcache entry\tnone (below HRX_VIEW_CACHE_MIN_BYTES)\n' "$name"
    fi
done
