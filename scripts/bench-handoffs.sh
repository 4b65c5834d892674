#!/usr/bin/env bash
# Issue 17 point 4 (b), (c) (BENCHMARKS.md, "Session 13"): what a traced submission of the
# three-region host-visible graph makes other threads do, in counts that a loaded machine
# does not change much, per submission, traced against untraced, for each binary given
# (old and new builds of `cli/examples/host_visible.rs` in the same run).
#
#   scripts/bench-handoffs.sh SUBMISSIONS HRX_TRACE BINARY...
#
# HRX_TRACE is an `hrx-trace` binary (to read each trace's `info`). For each BINARY, an
# untraced then a traced process of SUBMISSIONS submissions (one thread), each one line:
#   - `/usr/bin/time`: voluntary and involuntary context switches of the whole process (a
#     thread that blocks, e.g. on a futex, and is woken makes one voluntary switch), user
#     and system CPU seconds, wall seconds and peak RSS;
#   - `perf stat`, where it can count tracepoints: all system calls and `futex` calls;
#   - traced: the trace's recorder waits (`hrx-trace info`: times a recording thread found
#     its buffer full and handed its records over itself, the one place it blocks), and
#     their total time;
# each count also divided by SUBMISSIONS. With PER_THREAD=1 (needs `perf record`), the
# futex calls and context switches of each thread (`perf script`, by thread name) as well.
# Scratch traces go to a temporary directory removed at exit (SCRATCH overrides its parent).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 SUBMISSIONS HRX_TRACE BINARY..." >&2; exit 2; }
n=$1
cli=$2
shift 2
out=$(mktemp -d "${SCRATCH:-/tmp}/bench-handoffs.XXXXXX")
trap 'rm -rf "$out"' EXIT
perf_ok=
if perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_futex true >/dev/null 2>&1; then
    perf_ok=1
fi
per() { awk -v a="$1" -v n="$n" 'BEGIN { printf "%.3f", a / n }'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')," \
    "$n submissions a process"
for bin in "$@"; do
    for mode in untraced traced; do
        trace=
        if [ "$mode" = traced ]; then trace=$out/t.hrxt; fi
        run=(env ${trace:+HRX_TRACE=$trace} /usr/bin/time -f "%w %c %U %S %e %M" -o "$out/time" "$bin" "$n")
        if [ -n "$perf_ok" ]; then
            perf stat -x, -o "$out/perf" -e raw_syscalls:sys_enter,syscalls:sys_enter_futex \
                -- "${run[@]}" >/dev/null
            syscalls=$(awk -F, '$3 == "raw_syscalls:sys_enter" { print $1 }' "$out/perf")
            futex=$(awk -F, '$3 == "syscalls:sys_enter_futex" { print $1 }' "$out/perf")
        else
            "${run[@]}" >/dev/null
            syscalls=NA futex=NA
        fi
        read -r vol invol user sys wall rss < <(tail -1 "$out/time")
        line="$(basename "$bin") $mode: voluntary switches $vol ($(per "$vol")/submission)"
        line+=", involuntary $invol ($(per "$invol"))"
        if [ -n "$perf_ok" ]; then
            line+=", syscalls $syscalls ($(per "$syscalls")), futex $futex ($(per "$futex"))"
        fi
        line+=", cpu ${user}+${sys} s, wall ${wall} s, peak RSS ${rss} KiB"
        if [ -n "$trace" ]; then
            waited=$("$cli" info "$trace" | awk '$1 == "waited" { print $2, $7, $8 }')
            read -r waits wait_time wait_unit <<<"${waited:-0 0 ms}"
            line+=", recorder waits $waits ($(per "$waits")), ${wait_time} ${wait_unit%,} waited"
        fi
        echo "$line"
        if [ -n "${PER_THREAD:-}" ]; then
            perf record -q -o "$out/p.data" -e syscalls:sys_enter_futex -e sched:sched_switch \
                -- env ${trace:+HRX_TRACE=$trace} "$bin" "$n" >/dev/null 2>&1
            perf script -i "$out/p.data" -F comm,event 2>/dev/null |
                awk -v n="$n" '{ k = $1 " " ($2 ~ /futex/ ? "futex" : "switches"); c[k]++ }
                    END { for (k in c) printf "    %s %d (%.4f/submission)\n", k, c[k], c[k] / n }' |
                sort
            rm -f "$out/p.data"
        fi
        rm -f "$out/t.hrxt"
    done
done
