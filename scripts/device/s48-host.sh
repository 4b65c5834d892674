# Sourced by session 48's device scripts (run from the repository root): the builds' folder
# `d`, the photo folder `photo`, the host's GPU and CPUs said, then into $OUT.
set -u
d=$PWD/.device-bin/s48
photo=$PWD/.device-bin/s45/photo
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
echo "cpus $(nproc), $(uptime)"
cd "$OUT"
