#!/bin/bash
# Run on the device machine from the repository root (session 59): this session's scheduler
# change on CUDA. Device tool `run`, carry [".device-bin/s59"]: this session's build
# (hrx-trace, the examples two_runtimes, host_visible, crashing and regions of hrx-trace,
# linked and pipeline of hrx, the conformance tests and the hrx lib tests, release,
# stripped, and photo/).
# 1. Large graphs in flight together on CUDA (`regions` with `HRX_BACKEND=cuda` and
#    `REGIONS_IN_FLIGHT`): later submissions wait on the earlier graph's frontier's end;
#    recorded, checked by `info`, replayed on CUDA; then timed untraced, and with a device
#    fault (`HRX_FAULT`), which must end (no hang) with the failure said.
# 2. Every verb on CUDA traces (`s56-cuda-cli.sh` with BIN), conformance, hardware tests.
set -u
d=${BIN:-$PWD/.device-bin/s59}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd "$OUT"
echo "== regions in flight on CUDA"
HRX_BACKEND=cuda REGIONS_IN_FLIGHT=2 timeout 120 $d/hrx-trace record -q -o r.hrxt -- $d/regions 2000 4 4; echo "record rc=$?"
$d/hrx-trace info r.hrxt | grep -E "^runtime|CrossWait|Submit |failures|capture" | head -6
timeout 120 $d/hrx-trace replay r.hrxt --backend cuda > rr.txt 2>&1; echo "replay rc=$?"
grep -E "verdict|replayed|statuses|outputs|error" rr.txt | cut -c1-300 | head -5
for n in 2000 20000; do
  /usr/bin/time -f "regions $n 4 4, 2 in flight, CUDA untraced: %e s, %M KiB" env HRX_BACKEND=cuda REGIONS_IN_FLIGHT=2 timeout 120 $d/regions $n 4 4; echo "rc=$?"
done
# Fault injection is the software device's (`src/fault.rs`): the failure case on sim.
HRX_FAULT=op=3000:kernel-error REGIONS_IN_FLIGHT=3 timeout 120 $d/hrx-trace record -q -o f.hrxt -- $d/regions 2000 6 4 > f.txt 2>&1; echo "fault record (sim) rc=$? (the program fails: exit 1 expected)"; tail -2 f.txt | cut -c1-300
$d/hrx-trace info f.hrxt | grep -E "failures|quarantine|poison|Submit " | head -4
rm -f *.hrxt* rr.txt f.txt
cd - > /dev/null
BIN=$d bash scripts/device/cuda-checks.sh
echo "done at ${SECONDS}s"
