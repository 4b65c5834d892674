#!/usr/bin/env bash
# Reliability: lossless capture under CPU contention (issue 17 point 5; RELIABILITY.md).
# SUBMISSIONS submissions of the three-region host-visible graph from two threads
# (`cli/examples/host_visible.rs`) recorded with `hrx-trace record -- PROGRAM` while two
# busy-loop processes compete for the cores; then `info` (records by kind, losses, waits) and
# `replay`, each whole process under `/usr/bin/time -v` (wall clock, peak RSS). Exits 1 when
# a record was lost or replay did not exit 0.
#   scripts/reliability-contention.sh [SUBMISSIONS]      (default 10000000)
# The trace goes to a temporary directory (SCRATCH overrides its parent), removed at exit:
# 10M submissions take about 0.5 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
submissions=${1:-10000000}
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p hrx-trace --bin hrx-trace --example host_visible
cli=target/release/hrx-trace
out=$(mktemp -d "${SCRATCH:-/tmp}/contention.XXXXXX")
busy=()
cleanup() {
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$out"
}
trap cleanup EXIT
report() { # LABEL TIMEFILE
    printf '%s\twall %s\tpeak RSS %d MiB\texit %s\n' "$1" \
        "$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$2")" \
        $(($(sed -n 's/.*Maximum resident set size (kbytes): //p' "$2") / 1024)) \
        "$(sed -n 's/.*Exit status: //p' "$2")"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in 1 2; do
    sh -c 'while :; do :; done' &
    busy+=($!)
done
status=0
/usr/bin/time -v -o "$out/record.time" "$cli" record -o "$out/t.hrxt" -- \
    target/release/examples/host_visible "$submissions" 2 >"$out/record.txt" || status=$?
for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
busy=()
report "record ($submissions submissions, 2 threads, 2 busy loops)" "$out/record.time"
[ "$status" = 0 ] || { cat "$out/record.txt"; exit 1; }
printf 'trace\t%s bytes\n' "$(stat -c %s "$out/t.hrxt")"
"$cli" info "$out/t.hrxt" >"$out/info.txt"
grep -E '^(closed|records|lost)|^  (Submit|SubmissionDone|RegionTiming|OutputDigest|RecorderWait|RecordsLost) ' \
    "$out/info.txt" || true
lost=0
grep -q '^lost' "$out/info.txt" && lost=1
[ "$(awk '$1 == "Submit" { print $2 }' "$out/info.txt")" = "$submissions" ] || lost=1
[ "$(awk '$1 == "RegionTiming" { print $2 }' "$out/info.txt")" = "$((3 * submissions))" ] || lost=1
replayed=0
/usr/bin/time -v -o "$out/replay.time" "$cli" replay "$out/t.hrxt" >"$out/replay.txt" 2>&1 || replayed=$?
report "replay" "$out/replay.time"
head -5 "$out/replay.txt"
if [ "$lost" != 0 ] || [ "$replayed" != 0 ]; then
    echo "FAILED: records lost ($lost) or replay exit $replayed"
    exit 1
fi
echo "OK: 0 records lost, replay exit 0"
