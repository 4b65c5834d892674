#!/bin/bash
# Run on the device machine from the repository root (issue 22 point 1: the GPU's clocks in
# the replay's report): nvidia-smi's view of the clocks for comparison; the NVML hardware test;
# a 24-frame pipeline trace replayed on CUDA (text and JSON: `GPU clocks:` beside `host:`,
# `replay.gpu_clocks`), on the software device (no clocks line), and as a baseline saved then
# judged (its clocks kept in the file; a note only if they differ by more than 5%).
# Device tool `run`, carry [".device-bin/s22"]; .device-bin/s22/ holds stripped release builds:
# hrx-trace (cargo build --release -p hrx-trace), hrx-lib (cargo test --release -p hrx --lib
# --no-run), photo/ (cli/assets/photo.jpg).
set -u
d=$PWD/.device-bin/s22
cd $OUT
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,clocks_event_reasons.active --format=csv > gpu.txt 2>&1
HRX_CUDA_HARDWARE=1 timeout 120 $d/hrx-lib gpu::cuda::hardware_tests::hardware_clocks_through_nvml --nocapture > hw.txt 2>&1; echo "hw rc=$?" >> hw.txt
$d/hrx-trace record -q --workload pipeline --backend cuda --input $d/photo --frames 24 -o p.hrxt > record.txt 2>&1; echo "record rc=$?" >> record.txt
timeout 120 $d/hrx-trace replay p.hrxt --backend cuda --repeat 3 > text.txt 2>&1; echo "rc=$?" >> text.txt
timeout 120 $d/hrx-trace replay p.hrxt --backend cuda --repeat 3 --report json > r.json 2> r.err; echo "rc=$?" >> r.err
python3 -c 'import json; print(json.dumps(json.load(open("r.json"))["replay"]["gpu_clocks"], indent=1))' > clocks.json 2>&1
timeout 120 $d/hrx-trace replay p.hrxt --backend sim > sim.txt 2>&1; echo "rc=$?" >> sim.txt
timeout 200 $d/hrx-trace replay p.hrxt --backend cuda --save-baseline b.json > save.txt 2>&1; echo "rc=$?" >> save.txt
python3 -c 'import json; print(json.dumps(json.load(open("b.json")).get("gpu_clocks"), indent=1))' > b-clocks.json 2>&1
timeout 200 $d/hrx-trace replay p.hrxt --backend cuda --baseline b.json > judged.txt 2>&1; echo "rc=$?" >> judged.txt
cat gpu.txt; grep -E "^device 0|MHz|^test |rc=" hw.txt
echo "--- cuda, text"; grep -E "^(replayed|host|GPU clocks|verdict)|rc=" text.txt
echo "--- cuda, json"; cat clocks.json; cat r.err
echo "--- sim"; grep -E "^(replayed|host|GPU clocks|verdict)|rc=" sim.txt
echo "--- baseline"; grep -E "GPU clocks|baseline|rc=" save.txt; head -c 600 b-clocks.json; echo
grep -E "^(host|GPU clocks|verdict)|GPU's clocks|rc=" judged.txt
