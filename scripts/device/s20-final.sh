#!/bin/bash
# Run on the device machine from the repository root: the session's last build on the H200.
# Hardware tests, the conformance suite, and the pipeline recorded three ways (self-timed
# kernels, the default; CUPTI; regions only), each replayed with --per-op, to check that the
# repeats are timed as the capture was. Device tool `run`, carry [".device-bin/s20"].
set -u
d=$PWD/.device-bin/s20
cd $OUT
HRX_CUDA_HARDWARE=1 timeout 150 $d/hrx-lib gpu::cuda::hardware_tests --skip hardware_fault > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
HRX_TEST_BACKENDS=sim,cuda timeout 200 $d/tests runtime:: > conformance.txt 2>&1; echo "conformance rc=$?" >> conformance.txt
for how in default --kernel-times --no-kernel-times; do
  flag=$how; [ $how = default ] && flag=
  $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 6 $flag -o t$how.hrxt > rec$how.txt 2>&1
  timeout 120 $d/hrx-trace replay t$how.hrxt --backend cuda --per-op --repeat 2 > replay$how.txt 2>&1; echo "replay rc=$?" >> replay$how.txt
  $d/hrx-trace stats t$how.hrxt > stats$how.txt 2>&1
done
tail -n 2 hw.txt conformance.txt
for how in default --kernel-times --no-kernel-times; do
  echo "== $how"; grep -E "^verdict|rc=|CUPTI|per-operation timing" replay$how.txt; grep -E "^operations" stats$how.txt; grep -cE "device +hrx_|device +fill|device +copy" replay$how.txt
done
for how in default --kernel-times --no-kernel-times; do
  echo "== info $how"; $d/hrx-trace info t$how.hrxt | grep -E "operation times"; grep -E "^operations" stats$how.txt
done
