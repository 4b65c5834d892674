#!/bin/bash
# Run on the device machine from the repository root (issue 19 points 1-2 on CUDA): where
# libnvToolsExt is, and whether the pipeline recorded on CUDA with host threads and
# annotations replays and reports them. Device tool `run`, carry [".device-bin"]; .device-bin/s17/
# holds a stripped hrx-trace (debug build is enough) and photo/FreshFlower.jpg.
set -u
d=.device-bin/s17
{
  echo "== libnvToolsExt / libnvtx on this host"
  ldconfig -p | grep -i -E "nvtoolsext|nvtx" || echo "(none in ldconfig)"
  find / -xdev \( -name 'libnvToolsExt*' -o -name 'libnvtx*' \) 2>/dev/null | head
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} > $OUT/host.txt 2>&1
cd $OUT
$OLDPWD/$d/hrx-trace record --workload pipeline --backend cuda --input $OLDPWD/$d/photo --frames 6 -o cuda.hrxt > record.txt 2>&1; echo "record rc=$?" >> record.txt
$OLDPWD/$d/hrx-trace stats cuda.hrxt > stats.txt 2>&1
$OLDPWD/$d/hrx-trace replay --backend cuda --repeat 3 cuda.hrxt > replay.txt 2>&1; echo "replay rc=$?" >> replay.txt
$OLDPWD/$d/hrx-trace info --json cuda.hrxt > info.json 2>&1
cat host.txt record.txt replay.txt | tail -60
sed -n '/annotation/,$p' stats.txt | head -30
