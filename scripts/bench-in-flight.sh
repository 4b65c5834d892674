#!/usr/bin/env bash
# Large graphs in flight together (BENCHMARKS.md, "Session 60"): wall time and peak memory
# of `cli/examples/regions.rs` with several submissions of one large graph in flight, for
# each build given, alternating builds per case so that a loaded machine weighs on both.
#
#   scripts/bench-in-flight.sh BINARY...
#
# Build each with `cargo build --release -p hrx-trace --example regions` (at each commit
# compared). Cases: `REGIONS_IN_FLIGHT=8 regions N 16 PIECES` for N in CASES (default 5000,
# 20000, 100000) and PIECES N (each region its own piece), 4 and 1 (a chain), each under
# `timeout` TIMEOUT seconds (default 120: a build that does not finish reads `timeout`), and
# the traced case's `CrossWait` records (`HRX_TRACE`, `hrx-trace info` with HRX_TRACE_BIN).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in ${CASES:-5000 20000 100000}; do
    for pieces in "$n" 4 1; do
        for bin in "$@"; do
            out=$( { /usr/bin/time -f "%e s %M KiB" env REGIONS_IN_FLIGHT=8 \
                timeout "${TIMEOUT:-120}" "$bin" "$n" 16 "$pieces" > /dev/null; } 2>&1 )
            rc=$?
            [ $rc -eq 124 ] && out="timeout (${TIMEOUT:-120} s)"
            echo "regions $n 16 $pieces, 8 in flight | $(basename "$bin") | ${out##*$'\n'}"
        done
    done
done
if [ -n "${HRX_TRACE_BIN:-}" ]; then
    t=$(mktemp -d)
    for bin in "$@"; do
        HRX_TRACE=$t/t.hrxt REGIONS_IN_FLIGHT=2 timeout "${TIMEOUT:-120}" "$bin" 2000 4 4
        echo "regions 2000 4 4, 2 in flight, traced | $(basename "$bin") | $("$HRX_TRACE_BIN" info "$t/t.hrxt" | grep -E '^  CrossWait' | tr -s ' ')"
        rm -f "$t/t.hrxt"
    done
    rm -rf "$t"
fi
