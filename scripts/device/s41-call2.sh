#!/bin/bash
# Run on the device machine from the repository root (session 41). Device tool `run`, carry
# [".device-bin/s41b"]: stripped release builds of runtime-bench (`cargo bench -p hrx --bench
# runtime --no-run`) and host_visible (`cargo build --release -p hrx-trace --example
# host_visible`) of e9df302 (`new`: block compression on threads beside the trace writer)
# and of the same tree with capture/ of 4173487 (`old`), hrx-trace of e9df302; the GPU
# bench of a973da6 with every queue worker counted for `sync::relax` (`relax`, backtrace on
# a crash). PARTS (default "hv hunt"):
# hv: issue 17 point 4 (b), (c), scripts/device/s40-host-visible.sh for old then new (N
#     submissions, ROUNDS rounds, criterion's host_visible_graph first);
# hunt: HUNT processes of relax's `pipeline_traced` (CUPTI turn included), each crash's
#     backtrace kept.
set -u
b=$PWD/.device-bin/s41b
ln -sf $b/new/hrx-trace $b/old/hrx-trace
parts=${PARTS:-hv hunt}
if [[ $parts == *hv* ]]; then
  for v in ${BUILDS:-old new}; do
    mkdir -p $OUT/hv-$v
    echo "== $v"
    OUT=$OUT/hv-$v BIN=$b/$v N=${N:-1000000} ROUNDS=${ROUNDS:-2} BENCH_S=${BENCH_S:-100} bash scripts/device/s40-host-visible.sh 2>&1 | tail -12
  done
fi
if [[ $parts == *hunt* ]]; then
  for i in $(seq 1 ${HUNT:-12}); do
    t=$(mktemp -d /tmp/hunt-XXXX)
    TMPDIR=$t HRX_BENCH_ONLY=pipeline_traced HRX_BENCH_ROUNDS=${ROUNDS:-60} CRITERION_HOME=/tmp/h-$i timeout 150 $b/relax/gpu-bench --bench no-criterion-group > $t/out.txt 2>&1
    rc=$?
    echo "== hunt relax $i rc=$rc"
    if [ $rc -ne 0 ]; then cp $t/out.txt $OUT/crash-$i.txt; grep -A60 "bench: signal" $t/out.txt | head -80; fi
    rm -rf $t
  done
fi
