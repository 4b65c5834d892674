#!/usr/bin/env python3
"""Range and trim figures for RELIABILITY.md.

Records the pipeline workload over the photographs on the software device (whole, and with
a capture range), trims the whole trace to N random submission ranges, replays every trace
and checks that each range's replayed output digests equal the whole replay's for the same
submission numbers. Prints sizes and counts as a Markdown table row set.

usage: scripts/reliability-range.py [--bin target/release/hrx-trace] [--ranges 20]
                                    [--seed S] [--frames 24] [--max-width 640]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

PHOTOS = "/usr/share/backgrounds/mate/nature"


def run(binary, *args, env=None, check=True):
    out = subprocess.run([binary, *args], capture_output=True, text=True, env=env)
    if check and out.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return out


def outputs(binary, trace):
    report = json.loads(run(binary, "replay", trace, "--report", "json").stdout)
    return {
        (o["submission"], o["buffer"], o["start"], o["end"]): o["replayed"]
        for o in report["outputs"]
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="target/release/hrx-trace")
    p.add_argument("--ranges", type=int, default=20)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--max-width", default="640")
    a = p.parse_args()
    binary = os.path.abspath(a.bin)
    rng = random.Random(a.seed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HRX_")}
    with tempfile.TemporaryDirectory(prefix="range-") as d:
        os.chdir(d)
        common = ["record", "--workload", "pipeline", "--backend", "sim", "--input", PHOTOS,
                  "--frames", str(a.frames), "--max-width", a.max_width]
        run(binary, *common, "-o", "whole.hrxt", env=env)
        whole = outputs(binary, "whole.hrxt")
        n = max(s for s, *_ in whole)
        size = os.path.getsize("whole.hrxt")
        print(f"seed {a.seed}, {a.frames} frames at --max-width {a.max_width}, "
              f"whole trace {size / 1024:.1f} KiB, {n} submissions")
        matched = 0
        trimmed_sizes = []
        for _ in range(a.ranges):
            start = rng.randint(1, n)
            end = rng.randint(start + 1, n + 1)
            t = f"t{start}-{end}.hrxt"
            out = run(binary, "trim", "whole.hrxt", "-o", t, "--submissions", f"{start}..{end}")
            if out.stderr:
                print(f"  {start}..{end}: {out.stderr.strip()}")
            got = outputs(binary, t)
            want = {k: v for k, v in whole.items() if start <= k[0] < end}
            ok = got == want and len(want) > 0
            matched += ok
            trimmed_sizes.append((end - start, os.path.getsize(t)))
            if not ok:
                print(f"  {start}..{end}: MISMATCH ({len(got)} outputs vs {len(want)})")
            os.remove(t)
        per_sub = [s / k for k, s in trimmed_sizes]
        print(f"trims: {matched} of {a.ranges} random ranges replay (exit 0) with the whole "
              f"replay's outputs; trimmed size per kept submission "
              f"{min(per_sub) / 1024:.1f}-{max(per_sub) / 1024:.1f} KiB "
              f"(whole: {size / n / 1024:.1f} KiB per submission)")
        # A range recorded at run time: the middle third.
        start, end = n // 3 + 1, 2 * n // 3 + 1
        run(binary, *common, "-o", "range.hrxt", "--capture-range",
            f"submissions:{start}..{end}", env=env)
        got = outputs(binary, "range.hrxt")
        want = {k: v for k, v in whole.items() if start <= k[0] < end}
        info = run(binary, "info", "range.hrxt").stdout
        snapshot = [l for l in info.splitlines() if "state snapshot" in l]
        print(f"range recording submissions:{start}..{end}: "
              f"{'match' if got == want and want else 'MISMATCH'}, "
              f"{os.path.getsize('range.hrxt') / 1024:.1f} KiB; "
              f"{snapshot[0].split('range', 1)[1].strip() if snapshot else 'no snapshot'}")
        run(binary, "trim", "whole.hrxt", "-o", "same.hrxt", "--submissions", f"{start}..{end}")
        print(f"trim of the same range: {os.path.getsize('same.hrxt') / 1024:.1f} KiB")
        if matched != a.ranges or got != want:
            sys.exit(1)


if __name__ == "__main__":
    main()
