#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 17 point 4 (d)): what
# region-only tracing of the GPU bench's pipeline costs without each part of its capture.
# Device tool `run`, carry [".device-bin/s48"]: `gpu-bench-abl` is the GPU bench of 7440ddf
# with scripts/device/s48-ablation.patch (HRX_SCRATCH_NO_DIGESTS: the traced turn takes no
# output digest). PASSES (2) passes of four processes in turn: everything; no host writes'
# capture (HRX_BENCH_NO_HOST_WRITES); no output digests; neither. 100 paired rounds each.
source scripts/device/s48-pipe.sh
for i in $(seq 1 ${PASSES:-2}); do
  pipe all-$i gpu-bench-abl
  pipe nohw-$i gpu-bench-abl HRX_BENCH_NO_HOST_WRITES=1
  pipe nodig-$i gpu-bench-abl HRX_SCRATCH_NO_DIGESTS=1
  pipe none-$i gpu-bench-abl HRX_BENCH_NO_HOST_WRITES=1 HRX_SCRATCH_NO_DIGESTS=1
done
