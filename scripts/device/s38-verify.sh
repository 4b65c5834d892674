#!/bin/bash
# Run on the device machine from the repository root (BENCHMARKS.md, "Operation times",
# session 38): session 37's matching of CUPTI's records to their batch, on the H200. First
# s36-cupti.sh (the CUPTI hardware test, the pipeline recorded with CUPTI and regions only,
# `stats` and operation times against regions), then s36-fidelity.sh with the tests
# (s29-markers.sh: CUDA hardware tests, conformance on sim and CUDA, self-timed, regions-only
# and CUPTI traces against ncu, replay --per-op; the GPU bench's traced pipeline).
# Device tool `run`, carry [".device-bin/s38"]: stripped release builds of one tree:
# hrx-trace, hrx-lib and tests (`cargo test --release -p hrx --lib --test tests --no-run`),
# gpu-bench (`cargo bench -p hrx --bench gpu --no-run`), and photo/Aqua.jpg.
set -u
export BIN=${BIN:-.device-bin/s38}
out=$OUT
mkdir -p $out/cupti $out/fidelity
OUT=$out/cupti REGIONS=1 bash scripts/device/s36-cupti.sh
echo "== fidelity"
OUT=$out/fidelity SKIP_TESTS=${SKIP_TESTS-} bash scripts/device/s36-fidelity.sh
