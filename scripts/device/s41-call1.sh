#!/bin/bash
# Run on the device machine from the repository root (session 41). Device tool `run`, carry
# [".device-bin/s41"]: stripped release builds of the GPU bench (`cargo bench -p hrx --bench
# gpu --no-run`) of 12e3d5a (`diag`: Counters::worker_wakes printed by the kernel chains),
# of 12e3d5a with GPU queue workers spinning 1 ms before they park (`spin`, also its
# `hrx-lib` and `conformance` test binaries) and of 12e3d5a with every queue worker counted
# for `sync::relax` (`relax`) and with the put-off host-write hash (`parked`, cc49c2a
# reverted again), session 40's crash candidates, symbols kept.
# PARTS (default "rt tests hunt") picks the parts:
# 1. issue 16 point 4: `one_kernel` and `hundred_kernels` against raw CUDA, diag and spin
#    alternating (PAIRS processes each); 2. the CUDA tests of spin; 3. the crash hunt:
#    `pipeline_traced` (CUPTI turn included) of BUILDS (default relax, parked, diag) in
#    turn, the candidates under gdb where the host has it, HUNT processes each.
set -u
d=.device-bin/s41/link
mkdir -p $d
for b in diag spin relax parked; do ln -sf ../$b/gpu-bench $d/gpu-bench-$b; done
ln -sf ../spin/hrx-lib $d/hrx-lib; ln -sf ../spin/conformance $d/conformance
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
(uptime; nproc; which gdb) > $OUT/host.txt 2>&1
. scripts/device/s32-common.sh
parts=${PARTS:-rt tests hunt}
if [[ $parts == *rt* ]]; then
  one_kernel_rounds "diag spin" ${PAIRS:-3}
  hundred_kernels "diag spin"
  mv $OUT/hundred-diag.txt $OUT/hundred-diag-1.txt; mv $OUT/hundred-spin.txt $OUT/hundred-spin-1.txt
  hundred_kernels "spin diag"
  grep -h "woken" $OUT/one-*.txt $OUT/hundred-*.txt
fi
[[ $parts == *tests* ]] && cuda_tests
[[ $parts == *hunt* ]] && for i in $(seq 1 ${HUNT:-4}); do
  for b in ${BUILDS:-relax parked diag}; do
    t=$(mktemp -d /tmp/hunt-XXXX)
    run() { TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/h-$b-$i timeout 150 "$@"; }
    if [ $b != diag ] && command -v gdb > /dev/null; then
      run gdb -q -batch -ex run -ex bt -ex "info threads" --args $d/gpu-bench-$b --bench no-criterion-group > $OUT/hunt-$b-$i.txt 2>&1
    else
      run $d/gpu-bench-$b --bench no-criterion-group > $OUT/hunt-$b-$i.txt 2>&1
    fi
    echo "== hunt $b $i rc=$? $(grep -c -E 'SIGSEGV|SIGABRT|corrupted|signal' $OUT/hunt-$b-$i.txt) signal lines"
    rm -rf $t
  done
done
cat $OUT/gpu.txt $OUT/host.txt
