#!/bin/bash
# Run on the device machine from the repository root (session 49, issue 17 point 4 (d)): the
# traced pipeline with a large host write's hash taken beside its copy (`trace::hash_beside`)
# and without. Device tool `run`, carry [".device-bin/s49"]: `gpu-bench` is the GPU bench
# (`cargo bench -p hrx --bench gpu --no-run`, stripped) of the change with
# scripts/device/s49-beside-scratch.patch, whose HRX_SCRATCH_NO_BESIDE turns it off. PASSES (3)
# passes of `beside` and `parked` in turn, the traced pipeline's paired rounds (100).
source scripts/device/s48-pipe.sh
d=$PWD/.device-bin/s49
for i in $(seq 1 ${PASSES:-3}); do
  pipe beside-$i gpu-bench
  pipe parked-$i gpu-bench HRX_SCRATCH_NO_BESIDE=1
done
