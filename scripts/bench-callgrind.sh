#!/usr/bin/env bash
# Issue 17 point 4 (b), (c) (BENCHMARKS.md, Capture, "Session 16"): instructions per
# submission of the three-region host-visible graph, untraced and traced, by thread, and
# where the traced extra goes on the submitting thread (per function, inclusive), for each
# build of `cli/examples/host_visible.rs` given. Instruction counts, unlike wall time, are
# not moved by a loaded machine.
#
#   scripts/bench-callgrind.sh BINARY...
#
# Build the binaries with symbols: `CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release
# -p hrx-trace --example host_visible`. For each BINARY, `valgrind --tool=callgrind
# --fair-sched=yes --separate-threads=yes` runs of 10,000 and 30,000 submissions, untraced,
# traced, and traced with the writer's work that a recording thread does when it finds its
# ring full (`Entry::hand_over`, rare on idle cores, frequent under valgrind's one-thread-
# at-a-time scheduling) left out of the count; per submission = (count at 30,000 - count at
# 10,000) / 20,000, so start-up and close cancel out. Threads: the submitting thread (the
# example's scoped thread, which also runs its regions in `wait`), the trace writer, the
# trace's compression threads (none on fewer than 4 CPUs: set
# HRX_TRACE_COMPRESSION_THREADS=1 or 2 to have them), the runtime's workers (mostly their
# spin). Which thread runs a region moves the submitting
# thread's count by a few hundred instructions from run to run (the workers take a few
# regions): compare builds over repeated runs (REPEAT, default 1).
# Needs valgrind (callgrind_annotate) and python3. Scratch files in a temporary directory.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
out=$(mktemp -d "${SCRATCH:-/tmp}/bench-callgrind.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "HRX_TRACE_COMPRESSION_THREADS=${HRX_TRACE_COMPRESSION_THREADS-unset}"
for round in $(seq "${REPEAT:-1}"); do
    for bin in "$@"; do
        dir="$out/$(basename "$bin")-$round"
        mkdir -p "$dir"
        for mode in untraced traced handed; do
            for n in 10000 30000; do
                extra=()
                trace=()
                if [ "$mode" != untraced ]; then trace=(env "HRX_TRACE=$dir/t.hrxt"); fi
                # --collect-atstart after --toggle-collect, which otherwise turns it off.
                if [ "$mode" = handed ]; then
                    extra=("--toggle-collect=*Entry::hand_over*" --collect-atstart=yes)
                fi
                "${trace[@]}" valgrind --tool=callgrind --fair-sched=yes --separate-threads=yes \
                    "${extra[@]}" --callgrind-out-file="$dir/$mode-$n.%p" "$bin" "$n" \
                    > "$dir/$mode-$n.out" 2>/dev/null
                rm -f "$dir/t.hrxt"
            done
        done
        echo "## $bin (round $round)"
        python3 - "$dir" <<'EOF'
import collections, glob, re, subprocess, sys

d = sys.argv[1]
N = 20000

def functions(f, inclusive):
    text = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", "--auto=no", f],
        capture_output=True, text=True, check=True).stdout
    out = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not m or m.group(2).startswith("PROGRAM"):
            continue
        name = re.sub(r"\s*\[.*\]$", "", m.group(2))
        name = name.split(":", 1)[1] if ":" in name else name
        count = int(m.group(1).replace(",", ""))
        # Inlined code shows under several files: inclusive counts overlap, self ones add.
        out[name] = max(out[name], count) if inclusive else out[name] + count
    return out

def threads(mode, n):
    files = sorted(f for f in glob.glob(f"{d}/{mode}-{n}.*") if re.search(r"-\d\d$", f))
    total = lambda f: int(next(l for l in open(f) if l.startswith("totals:")).split()[1])
    by = collections.Counter()
    submitter = None
    for f in files:
        names = functions(f, True)
        if names.get("hrx_capture::writer::run_writer"):
            kind = "writer"
        elif names.get("hrx_capture::writer::compress::compress"):
            kind = "compressing"
        elif names.get("hrx::execution::completion::Completion::wait"):
            kind, submitter = "submitting", f
        else:
            kind = "workers"
        by[kind] += total(f)
        # The writer's work done on the submitting thread, in a hand-over, is the writer's.
        handed = names.get("hrx_capture::writer::Entry::hand_over", 0)
        by[kind] -= handed
        by["writer"] += handed
        by["hand-overs"] += handed
    return by, submitter

rows = {}
for mode in ("untraced", "traced", "handed"):
    (a, fa), (b, fb) = threads(mode, 10000), threads(mode, 30000)
    rows[mode] = ({k: (b[k] - a[k]) / N for k in b}, (fa, fb))
for mode in ("untraced", "traced"):
    per, _ = rows[mode]
    print(f"{mode:9}  " + "  ".join(
        f"{k} {per.get(k, 0):,.0f}"
        for k in ("submitting", "writer", "compressing", "workers", "hand-overs")))
waiter = [open(f"{d}/{m}-30000.out").read().strip() for m in ("untraced", "traced")]
print("           " + " / ".join(waiter))
un, tr = rows["untraced"][1], rows["handed"][1]
counts = [{k: (b[k] - a.get(k, 0)) / N for k in b}
          for a, b in ((functions(un[0], True), functions(un[1], True)),
                       (functions(tr[0], True), functions(tr[1], True)))]
print("submitting thread, hand-overs left out, inclusive per submission: traced untraced extra")
names = sorted(set(counts[0]) | set(counts[1]), key=lambda k: counts[0].get(k, 0) - counts[1].get(k, 0))
for k in names:
    t, u = counts[1].get(k, 0), counts[0].get(k, 0)
    if abs(t - u) >= 40:
        print(f"  {t:8,.0f} {u:8,.0f} {t - u:8,.0f}  {k[:110]}")
EOF
    done
done
