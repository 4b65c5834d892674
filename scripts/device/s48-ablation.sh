#!/bin/bash
# Run on the device machine from the repository root (session 48, issue 17 point 4 (d)): what
# region-only tracing of the GPU bench's pipeline costs without each part of its capture.
# Device tool `run`, carry [".device-bin/s48"]: `gpu-bench-abl` is the GPU bench of 7440ddf
# with scripts/device/s48-ablation.patch (HRX_SCRATCH_NO_DIGESTS: the traced turn takes no
# output digest). PASSES (2) passes of four processes in turn: everything; no host writes'
# capture (HRX_BENCH_NO_HOST_WRITES); no output digests; neither. 100 paired rounds each.
set -u
d=$PWD/.device-bin/s48
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
for i in $(seq 1 ${PASSES:-2}); do
  for v in all nohw nodig none; do
    case $v in
      all) env=() ;;
      nohw) env=(HRX_BENCH_NO_HOST_WRITES=1) ;;
      nodig) env=(HRX_SCRATCH_NO_DIGESTS=1) ;;
      none) env=(HRX_BENCH_NO_HOST_WRITES=1 HRX_SCRATCH_NO_DIGESTS=1) ;;
    esac
    t=$(mktemp -d /tmp/p-XXXX)
    env "${env[@]}" TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=100 CRITERION_HOME=/tmp/pq-$v-$i \
      timeout 100 $d/gpu-bench-abl --bench no-criterion-group > $OUT/pipe-$v-$i.txt 2>&1
    echo "== $v $i rc=$? at ${SECONDS}s"
    grep -E '^pipeline_traced \(regions only\)|^  control: untraced \(a\) vs a second' $OUT/pipe-$v-$i.txt | head -2
    grep -E '^    (digest|host fence|submit|wait)' $OUT/pipe-$v-$i.txt | head -5
    rm -rf $t
  done
done
(cd $OUT && tar czf /tmp/out.tar.gz . && rm -rf ./* && mv /tmp/out.tar.gz .)
