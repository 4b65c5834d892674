#!/usr/bin/env bash
# Issue 17 point 4 (BENCHMARKS.md, "Session 11"): every capture target but the Tracy zone,
# each with its baseline in the same run, in one command.
#
#   scripts/bench-lossless.sh [REGIONS]      (default 10000000)
#
# Builds (release) the capture and runtime benches, the `host_visible` example and hrx-trace
# unless SKIP_BUILD is set, then prints one block per target:
#   (a) lossless/threads_{1,4}: sustained timing records/s, every record kept (criterion)
#   (b) host_visible_graph/{untraced,traced}: submit + wait of the three-region graph
#       (criterion, then paired rounds of 1000 submissions; the ratio is the paired one)
#   (c) REGIONS regions of that graph (REGIONS/3 submissions, one thread), untraced then
#       traced then untraced then traced, each a whole process under `/usr/bin/time -v`:
#       wall clock and peak RSS, the traced/untraced ratio of the sums, and the trace's
#       records, losses and bytes (`hrx-trace info`)
#   (d) pipeline_traced: the traced image pipeline on the software device (paired rounds)
#   (e) timing_bytes: bytes per timing record on disk
# Scratch traces go to a temporary directory removed at exit (SCRATCH overrides its parent).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
regions=${1:-10000000}
submissions=$(((regions + 2) / 3))
if [ -z "${SKIP_BUILD:-}" ]; then
    cargo bench -p hrx-capture --bench capture --no-run >&2
    cargo bench -p hrx --bench runtime --no-run >&2
    cargo build --release -p hrx-trace --example host_visible >&2
    cargo build --release -p hrx-trace >&2
fi
newest() { ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
capture=$(newest capture)
runtime=$(newest runtime)
example=target/release/examples/host_visible
cli=target/release/hrx-trace
out=$(mktemp -d "${SCRATCH:-/tmp}/bench-lossless.XXXXXX")
trap 'rm -rf "$out"' EXIT
export CRITERION_HOME=$out/criterion

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# (a) sustained lossless throughput"
"$capture" --bench 'lossless' 2>&1 | grep -E '^lossless|thrpt:|time:'
echo "# (b) three-region host-visible graph, submit + wait"
"$runtime" --bench 'host_visible_graph' 2>&1 | grep -E '^host_visible|time:'

echo "# (c) $regions regions ($submissions submissions), whole process"
wall() { # TIMEFILE -> seconds
    sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }'
}
rss() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }
untraced=0
traced=0
for round in 1 2; do
    for mode in untraced traced; do
        time=$out/$mode-$round.time
        if [ "$mode" = traced ]; then
            HRX_TRACE=$out/t.hrxt /usr/bin/time -v -o "$time" "$example" "$submissions" >/dev/null
        else
            env -u HRX_TRACE /usr/bin/time -v -o "$time" "$example" "$submissions" >/dev/null
        fi
        seconds=$(wall "$time")
        printf '%s %s\twall %s s\tpeak RSS %d MiB\n' "$mode" "$round" "$seconds" $(($(rss "$time") / 1024))
        if [ "$mode" = traced ]; then
            traced=$(echo "$traced + $seconds" | bc -l)
            "$cli" info "$out/t.hrxt" | grep -E '^(records|lost|closed)|RecorderWait' || true
            printf 'trace bytes\t%s\n' "$(stat -c %s "$out/t.hrxt")"
            rm -f "$out/t.hrxt"
        else
            untraced=$(echo "$untraced + $seconds" | bc -l)
        fi
    done
done
printf 'traced/untraced wall\t%.3f\n' "$(echo "$traced / $untraced" | bc -l)"

echo "# (d) traced image pipeline, software device"
"$runtime" --bench 'pipeline_traced' 2>&1 | grep -E '^pipeline_traced|time:'
echo "# (e) bytes per timing record"
"$capture" --bench 'timing_bytes' 2>&1 | grep -E '^timing_bytes'
