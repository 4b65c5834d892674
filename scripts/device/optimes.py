#!/usr/bin/env python3
"""Per-kernel operation times of an hrx trace against Nsight Compute (issue 20 point 5).

    hrx-trace dump --json TRACE > trace.jsonl
    ncu --csv --clock-control none --metrics gpu__time_duration.sum PROGRAM > ncu.csv
    optimes.py trace.jsonl [ncu.csv]

Prints, per kernel name, the count and median of the trace's operation times (device time
where recorded, else host; failed regions left out) and, with an ncu CSV, ncu's median
`gpu__time_duration.sum` for the same kernel name and the ratio trace/ncu. Then, over the
regions with operation times, the sum of each region's operation times against its region
time (issue 20 point 5: at most it).
"""
import csv
import json
import statistics
import sys


def trace_times(path):
    kernels, ops, graph_of, prepared_of, failed = {}, {}, {}, {}, set()
    times, regions = {}, {}
    for line in open(path):
        record = json.loads(line)
        (kind, r), = record.items()
        if kind == "KernelLoaded":
            kernels[(r["runtime"], r["kernel"])] = r["entry"]
        elif kind == "GraphOp":
            op = r["op"]
            name = None
            if isinstance(op, dict) and "Kernel" in op:
                name = ("kernel", op["Kernel"]["kernel"])
            elif isinstance(op, dict) and "Fill" in op:
                name = "fill"
            elif op == "Copy":
                name = "copy"
            ops[(r["runtime"], r["graph"], r["node"])] = name
        elif kind == "Prepared":
            graph_of[(r["runtime"], r["prepared"])] = r["graph"]
        elif kind == "Submit":
            prepared_of[(r["runtime"], r["submission"])] = r["prepared"]
        elif kind == "RegionDone" and r["status"] != "Ok":
            failed.add((r["runtime"], r["submission"], r["region"]))
        elif kind == "RegionTiming":
            span = r["device"] or r
            regions[(r["runtime"], r["submission"], r["region"])] = span["end_ns"] - span["start_ns"]
        elif kind == "OpTiming":
            t = r["timing"]
            key = (t["runtime"], t["submission"], t["region"])
            span = t["device"] or t
            times.setdefault((key, r["node"]), []).append(span["end_ns"] - span["start_ns"])
    by_name = {}
    for ((runtime, submission, region), node), samples in times.items():
        if (runtime, submission, region) in failed:
            continue
        graph = graph_of.get((runtime, prepared_of.get((runtime, submission))))
        name = ops.get((runtime, graph, node))
        if isinstance(name, tuple):
            name = kernels.get((runtime, name[1]), f"kernel {name[1]}")
        by_name.setdefault(name or f"node {node}", []).extend(samples)
    sums = {}
    for (key, _), samples in times.items():
        if key not in failed and key in regions:
            sums[key] = sums.get(key, 0) + sum(samples)
    ratios = sorted(total / regions[key] for key, total in sums.items() if regions[key] > 0)
    return by_name, ratios


UNITS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
         "second": 1e9, "s": 1e9}


def ncu_times(path):
    rows = [line for line in open(path, errors="replace") if line.startswith('"')]
    by_name = {}
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        # A self-timing build is the same kernel (issue 20 point 4); the collector is hrx's
        # capture work, not a pipeline kernel.
        name = row["Kernel Name"].split("(")[0].strip().removesuffix("__hrx_timed_v1")
        if name == "hrx_collect_times_v1":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        by_name.setdefault(name, []).append(value * UNITS.get(row["Metric Unit"], 1))
    return by_name


def main():
    ours, ratios = trace_times(sys.argv[1])
    theirs = ncu_times(sys.argv[2]) if len(sys.argv) > 2 else {}
    print(f"{'operation':<22} {'n':>5} {'trace median':>13} {'ncu n':>6} {'ncu median':>11} {'ratio':>6}")
    for name in sorted(ours, key=lambda n: -statistics.median(ours[n])):
        median = statistics.median(ours[name])
        line = f"{name:<22} {len(ours[name]):>5} {median / 1e3:>10.2f} µs"
        if name in theirs:
            other = statistics.median(theirs[name])
            line += f" {len(theirs[name]):>6} {other / 1e3:>8.2f} µs {median / other:>6.3f}"
        print(line)
    if ratios:
        over = sum(r > 1.0 for r in ratios)
        print(f"sum of operation times / region time over {len(ratios)} regions: min {ratios[0]:.3f} "
              f"median {statistics.median(ratios):.3f} max {ratios[-1]:.3f}; {over} over 1")


if __name__ == "__main__":
    main()
