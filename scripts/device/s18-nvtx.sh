#!/bin/bash
# Run on the device machine from the repository root (issue 19 point 1 on CUDA 13): hrx's
# regions and annotations reach Nsight tools through NVTX 3's injection protocol
# (NVTX_INJECTION64_PATH, src/nvtx/injection.rs). Nsight Compute's `--nvtx` sets that
# variable; each profiled kernel's NVTX push/pop stack then names the hrx region around it.
# Device tool `run`, carry [".device-bin"]; .device-bin/s18/ holds a stripped release
# hrx-trace and photo/FreshFlower.jpg.
set -u
d=$PWD/.device-bin/s18
cd $OUT
{
  echo "== tools"
  for t in ncu nsys; do command -v $t || echo "$t: not on PATH"; done
  ls -d /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems* 2>/dev/null
  ncu --version | tail -1
} > tools.txt 2>&1
# A few kernels under ncu with NVTX on; the report's NVTX section per kernel.
timeout 300 ncu --nvtx --launch-count 6 --section LaunchStats \
  $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 2 -o ncu.hrxt \
  > ncu.txt 2>&1; echo "ncu rc=$?" >> ncu.txt
# Only kernels inside an hrx region pushed under the Compute queue's name: the NVTX filter
# matches, so a count above zero means the ranges arrived (ncu's --nvtx-include syntax:
# "range name/" for push/pop ranges).
timeout 300 ncu --nvtx --nvtx-include "regex:hrx GPU Compute.*/" --launch-count 3 --section LaunchStats \
  $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 2 -o ncu-filtered.hrxt \
  > ncu-filtered.txt 2>&1; echo "ncu filtered rc=$?" >> ncu-filtered.txt
# Without a tool: no warning, the trace as usual.
$d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 2 -o plain.hrxt > plain.txt 2>&1; echo "plain rc=$?" >> plain.txt
# A tool path that does not load: one warning, the recording goes on.
NVTX_INJECTION64_PATH=/nonexistent/libtool.so $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 2 -o bad.hrxt > bad.txt 2>&1; echo "bad rc=$?" >> bad.txt
if command -v nsys >/dev/null; then
  timeout 300 nsys profile -t nvtx,cuda -o nsys-report --force-overwrite true \
    $d/hrx-trace record --workload pipeline --backend cuda --input $d/photo --frames 2 -o nsys.hrxt > nsys.txt 2>&1
  nsys stats --report nvtx_sum nsys-report.nsys-rep >> nsys.txt 2>&1
fi
cat tools.txt
grep -c "NVTX" ncu.txt; grep -A4 -m3 "NVTX" ncu.txt
grep -E "^  [a-z_0-9]+.*\(|==PROF==|rc=" ncu-filtered.txt | head -20
tail -n 3 plain.txt bad.txt
