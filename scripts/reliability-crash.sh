#!/usr/bin/env bash
# Reliability benchmark: does a crash keep the call that crashed? Records
# `cli/examples/crashing.rs` with `hrx-trace record` RUNS times in each of three ways (aborts
# in a host callback; segfaults right after its submit; hangs in the callback and is stopped
# by SIGTERM sent to `record`, through `sh -c`), then counts the traces that kept the
# crashing submission (its `Submit`), named the running region (`info`: "region 1 running")
# and the signal. A fourth way, `survive`, is a program with its own SIGSEGV handler that
# survives a fault after 5 submissions, submits 7 more, then really crashes: its trace must
# hold all 12 submissions and the real crash ("crashed: SIGSEGV after 12 submissions").
# Prints one line per way; the figures go to RELIABILITY.md with the machine, its load and
# the date. PROFILE=debug uses the debug build (the figures are counts, not times).
#   scripts/reliability-crash.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
profile=${PROFILE:-release}
if [ "$profile" = release ]; then
  cargo build --release -q -p hrx-trace --bin hrx-trace --example crashing
else
  cargo build -q -p hrx-trace --bin hrx-trace --example crashing
fi
bin=$PWD/target/$profile/hrx-trace
prog=$PWD/target/$profile/examples/crashing
dir=$(mktemp -d /tmp/reliability-crash.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "$(date -u '+%F %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in abort segv hang survive; do
  submit=0 region=0 signal=0
  start=$(date +%s)
  for i in $(seq 1 "$runs"); do
    t="$dir/$mode$i.hrxt"
    if [ "$mode" = hang ]; then
      : >"$dir/out"
      "$bin" record -o "$t" -- sh -c "\"$prog\" hang; true" >"$dir/out" 2>/dev/null &
      rec=$!
      until grep -q '^running' "$dir/out"; do sleep 0.01; done
      kill -TERM "$rec"
      wait "$rec" || true
    else
      "$bin" record -o "$t" -- "$prog" "$mode" >/dev/null 2>&1 || true
    fi
    info=$("$bin" info "$t" 2>/dev/null || true)
    if [ "$mode" = survive ]; then
      # Every submission, those after the survived fault too; no region runs at the crash.
      if grep -Eq '^  Submit +12$' <<<"$info"; then submit=$((submit + 1)); fi
      if grep -Eq '^capture +crashed: SIGSEGV after 12 submissions' <<<"$info"; then
        signal=$((signal + 1))
      fi
    else
      if grep -Eq '^  Submit +1$' <<<"$info"; then submit=$((submit + 1)); fi
      if grep -Eq '^capture .*region [0-9]+ running' <<<"$info"; then region=$((region + 1)); fi
      if grep -Eq '^capture +(crashed: SIG(ABRT|SEGV)|killed by SIGTERM)' <<<"$info"; then
        signal=$((signal + 1))
      fi
    fi
    rm -f "$t"
  done
  echo "$mode: $runs runs, crashing submission kept $submit, running region named $region, signal noted $signal ($(( $(date +%s) - start )) s)"
done
