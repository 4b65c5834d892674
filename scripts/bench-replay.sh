#!/usr/bin/env bash
# Wall time and peak RSS of `replay` and `diff` (a trace against itself) on recorded traces,
# a baseline binary against this checkout's, in the same run (BENCHMARKS.md, "Replay at
# scale").
#
#   BASE_BIN=PATH NEW_BIN=PATH scripts/bench-replay.sh TRACE...
#
# Traces must replay, so they are recordings, not `gen-trace`'s synthetic ones (whose copy
# uses are in another order than the runtime's and whose kernels have no code): record one
# with `hrx-trace record --workload pipeline --frames N --max-width 16 --input PHOTO -o
# pipeline-N.hrxt` (one submission of four regions per frame). VERBS (default "replay
# diff") picks the verbs; SKIP_BASE="replay" skips the baseline's replay (at 10M regions it
# does not fit in this machine's memory). MEM_LIMIT_KB caps each process's address space
# (`ulimit -v`, default none) so that a baseline that cannot fit fails instead of starving
# the machine. Each cell is one run of `/usr/bin/time -v`: elapsed wall clock and maximum
# resident set size.
set -euo pipefail

: "${BASE_BIN:?BASE_BIN=path of the baseline hrx-trace}"
: "${NEW_BIN:?NEW_BIN=path of the new hrx-trace}"
VERBS=${VERBS:-"replay diff"}
SKIP_BASE=${SKIP_BASE:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# measure LABEL BIN VERB TRACE: prints "LABEL VERB wall_s rss_mib exit".
measure() {
    local label=$1 bin=$2 verb=$3 trace=$4 code=0 args
    case $verb in
        # The software device, as measured so far (the default, auto, picks a GPU where one is).
        replay) args=(replay --backend sim "$trace") ;;
        diff) args=(diff --json "$trace" "$trace") ;;
        *) echo "unknown verb $verb" >&2; return 1 ;;
    esac
    (
        [ -z "${MEM_LIMIT_KB:-}" ] || ulimit -v "$MEM_LIMIT_KB"
        /usr/bin/time -v "$bin" "${args[@]}" >"$work/stdout" 2>"$work/time.log"
    ) || code=$?
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.log" |
        awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$work/time.log")
    printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$verb" "${wall:-?}" "${rss:-?}" "$code"
    rm -f "$work/stdout"
}

printf 'trace\tbinary\tverb\twall_s\tpeak_rss_mib\texit\n'
for trace in "$@"; do
    for verb in $VERBS; do
        printf '%s\t' "$(basename "$trace")"; measure new "$NEW_BIN" "$verb" "$trace"
        if [[ " $SKIP_BASE " != *" $verb "* ]]; then
            printf '%s\t' "$(basename "$trace")"; measure base "$BASE_BIN" "$verb" "$trace"
        fi
    done
done
