#!/bin/bash
# Run on the device machine from the repository root (session 57): this session's changes on
# CUDA. Device tool `run`, carry [".device-bin/s57"]: this session's build (hrx-trace, the
# examples two_runtimes, host_visible, crashing of hrx-trace and linked, pipeline of hrx, the
# conformance tests and the hrx lib tests, release, stripped, and photo/) and old-hrx-trace,
# session 56's hrx-trace, the "before" of the replay order.
# 1. `two_runtimes` (runtime 1 loses its GPU to a kernel fault after runtime 2 ran) recorded
#    on CUDA and replayed there: by this build (runtime 2 first, then runtime 1 once) and by
#    s56's (runtime 1 first, after which runtime 2 cannot open CUDA).
# 2. `host_visible 2000 4` recorded twice on CUDA and diffed: the same, whichever thread
#    prepared first.
# 3. Every verb on CUDA traces (`s56-cuda-cli.sh` with BIN), conformance, hardware tests.
set -u
d=${BIN:-$PWD/.device-bin/s57}
old=${OLD:-$d/old-hrx-trace}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd "$OUT"
echo "== two_runtimes on CUDA"
$d/hrx-trace record -q -o two.hrxt -- env HRX_BACKEND=cuda $d/two_runtimes 6; echo "record rc=$?"
$d/hrx-trace info two.hrxt | grep -E "^runtime|failures|submissions"
$d/hrx-trace replay two.hrxt --backend cuda > new.txt 2>&1; echo "replay (this build) rc=$?"
grep -E "verdict|replayed|runtime [0-9]+ replayed|not replayed|error" new.txt | cut -c1-400 | head -8
if [ -x "$old" ]; then
  $old replay two.hrxt --backend cuda > old.txt 2>&1; echo "replay (s56) rc=$?"
  grep -E "verdict|replayed|error" old.txt | cut -c1-300 | head -4
else
  echo "(no $old: the s56 comparison is skipped)"
fi
$d/hrx-trace replay two.hrxt --backend cuda --repeat 3 --report json > r.json 2> r.err; echo "replay --repeat 3 json rc=$?"
python3 -c "import json; r=json.load(open('r.json')); print('verdict', r.get('verdict')); [print(' runtime', x.get('runtime'), x.get('replay_backend'), x.get('replayed_submissions')) for x in r.get('runtimes', [])]" 2>&1 | head -6
echo "== host_visible 2000 4 on CUDA, twice, diffed"
for t in a b; do HRX_BACKEND=cuda $d/hrx-trace record -q -o hv$t.hrxt -- $d/host_visible 2000 4 > /dev/null 2>&1; echo "record $t rc=$?"; done
$d/hrx-trace diff hva.hrxt hvb.hrxt > d.txt 2>&1; echo "diff rc=$?"; grep -E "verdict|outputs|graphs|warning" d.txt | head -5
rm -f *.hrxt* r.json r.err new.txt old.txt d.txt
cd - > /dev/null
BIN=$d bash scripts/device/cuda-checks.sh
echo "done at ${SECONDS}s"
