#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 17 point 4 (d)): whether
# fewer hashing threads, reading the captured bytes less at once, cost the traced pipeline
# less. Device tool `run`, carry [".device-bin/s48"]: `gpu-bench-hashers` is the GPU bench of
# 0b0eff3 with scripts/device/s48-hashers.patch (HRX_SCRATCH_HASHERS: the hashing threads'
# count; 4 on this host's 16 CPUs by default). PASSES (2) passes of COUNTS (1 2 4) threads in turn,
# the traced pipeline's paired rounds (100).
source scripts/device/s48-pipe.sh
for i in $(seq 1 ${PASSES:-2}); do
  for n in ${COUNTS:-1 2 4}; do
    pipe $n-threads-$i gpu-bench-hashers HRX_SCRATCH_HASHERS=$n
  done
done
