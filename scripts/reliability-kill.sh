#!/usr/bin/env bash
# Reliability benchmark: how many milliseconds of a recording a SIGKILL loses (the writer
# flushes every 100 ms). Prints per-kill lags and median / 90th percentile / max; the figures
# go to RELIABILITY.md with the machine, its load and the date. Run it on a quiet machine:
# other processes' scheduling delays add to the lag (the kill test checks structure instead).
#   scripts/reliability-kill.sh [KILLS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
photo=/usr/share/backgrounds/mate/nature/FreshFlower.jpg
[ -f "$photo" ] || { echo "error: $photo is absent (Debian package mate-backgrounds)" >&2; exit 2; }
cargo build --release -q -p hrx-trace --bin hrx-trace --example kill_lag
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
target/release/examples/kill_lag target/release/hrx-trace "$photo" "${1:-100}" ${2:+"$2"}
