#!/bin/bash
# Run on the device machine from the repository root (session 60). Device tool `run`, carry
# [".device-bin/s60"] (this session's build at 05d3cb6: as s59-gpu.sh lists). On an H200 first issue 22 point 5's
# captures (`s54-numa.sh`, plain, 4 captures of 240 frames each replayed at `--pace captured`);
# on any card then session 59's scheduler change on CUDA and the CUDA checks (`s59-gpu.sh`).
set -u
d=${BIN:-$PWD/.device-bin/s60}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
case "$name" in
  *H200*) BIN=$d PARTS=captures MODES=plain CAPTURES=4 timeout 330 bash scripts/device/s54-numa.sh ;;
esac
BIN=$d timeout 240 bash scripts/device/s59-gpu.sh
