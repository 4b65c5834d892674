//! `hrx-trace diff BASE NEW [--json] [--max-slowdown R]`: what changed between two traces of
//! the same program.
//!
//! - **Kernels** are matched by name; each has its count, median (p50), p99, min and max on
//!   both sides. Where both traces timed their operations (`OpTiming`), a kernel is an
//!   operation's name (a kernel's entry, `fill`, `copy`), as `stats` lists them; else a
//!   region label (`hrx_rgb_to_gray +5`), and an `operations` line says which trace has no
//!   per-operation times. A kernel only in NEW is *new*, one only in BASE *missing*.
//! - **Operations** of each graph both traces prepared are matched by the graph, their
//!   name and their place among the graph's operations of that name (the k-th `hrx_blur`
//!   of graph 1), timed or not: one in a trace only is a kernel *added* to or *removed*
//!   from the graph (`graph 1 region 1: + hrx_foo (added)`), one-sided; the region label
//!   that changed with it is listed as *relabelled*, not as a new or missing kernel (a
//!   kernel that, so added or removed, runs in one trace only is counted as new or missing).
//!   Operations timed in both have their medians on both sides (judged by the kernel rule,
//!   reported: the kernels by name decide the verdict).
//! - **Regions** are matched by (runtime, prepared graph, region index), runtimes and
//!   graphs by rank (the n-th runtime of the trace, its m-th prepared graph, in id order,
//!   since ids differ between runs that shared a process; where a runtime of each trace
//!   prepared the same graph structures in another order, as threads preparing graphs
//!   concurrently do, by structure: `hrx_analysis::diff::align`). Within a graph whose
//!   region labels differ (a region added or removed shifts every later index), regions
//!   are paired by label (`hrx_analysis::diff::align_regions`: the longest common
//!   subsequence, as a text diff pairs lines, the rest in order between) and take base's
//!   index; a matched region whose label changed is *relabelled* (the graph was built
//!   differently). Each matched
//!   region has its median on both sides, pooled over the prepared graphs that compute the
//!   same thing in both traces, and a graph one trace alone prepared with the graphs identical
//!   to it (a pipeline's frame contexts, at any `--in-flight`: one row, `"graphs": [1, 2, 3]`;
//!   operations' times alike; the text lists the largest ratios first, reported, not
//!   judged). Kernels and regions are paired and pooled by
//!   `hrx_analysis::matching`, the rule `replay` uses too.
//! - **Outputs** (the `OutputDigest` records) are matched by (runtime by rank, submitted prepared
//!   graph by rank, the submission's index among that graph's submissions, the first
//!   operation and use of the graph that writes the range, byte range) when both traces
//!   submitted the same prepared graphs (however often each: a graph's extra submissions,
//!   another run length, are one-sided, never compared with another graph's): not by submission
//!   number, which the threads of a program take in whatever order they are scheduled (two
//!   runs of a two-thread program number the same graph's submissions differently). Else
//!   (graphs rotated over another number of buffer sets, as
//!   `--in-flight 3` against `--in-flight 1`) by (runtime, submission number, operation and
//!   use, byte range). Never by buffer id, which depends on how a run allocated. Graphs
//!   prepared concurrently by several threads may swap ranks between runs: where both
//!   traces hold the same structures, graphs are matched by structure (as regions); graphs
//!   of one structure keep their id order, so only identical graphs can still swap. Their xxh3 digests are compared by the rule `replay` uses too
//!   (`hrx_analysis::compare::digests`).
//! - **Memory**: both traces are streamed (`hrx_analysis::diff`): a first pass each for
//!   kernel and region durations (bounded sketches: percentiles exact up to
//!   `hrx_analysis::sketch::EXACT_LIMIT` runs, within its `RELATIVE_ERROR` past that) and the
//!   graphs' shapes, then both at once, in step by submission, matching outcomes and
//!   outputs as they arrive. Where the two submission sequences differ, a key that waited
//!   past the match window is counted one-sided and the report says how many
//!   (`streaming`, a `window` line and a reason), never silently.
//! - **Submissions** are matched as outputs are (by graph and index, else by submission
//!   index) and their outcomes (ok,
//!   failed, cancelled) compared (`hrx_analysis::compare::outcomes`, as `replay`); one
//!   without a recorded outcome on either side (a trace cut short) is counted as unknown,
//!   not compared.
//!
//! The verdict is `hrx_analysis::compare::Verdict::of` its counts (below). The comparison
//! (the kernel rule, the regions' pairing, the counts and reasons) is hrx-analysis's
//! (`hrx_analysis::diff::compare`); this verb reads the traces, and prints.
//!
//! # Verdict
//!
//! A kernel is **slow** when both hold: the confidence interval of the ratio of its medians
//! (each median's 97.5% interval from its order statistics, `hrx_analysis::compare::timing`,
//! as `replay` judges) lies wholly past `R`, so one-off outliers on a busy machine do not
//! count; and its median grew by more than [`NOISE_FLOOR_NS`] (timer and scheduling noise of
//! microsecond kernels). The tables show each judged row's ratio with that interval
//! (`1.50x [1.25x..1.75x]`, replay's formatter), and `too few to judge` where a side has
//! fewer than 7 runs (no interval: never slow), `too spread to judge` where the interval
//! holds 1 and its ends differ by more than 10x (its samples do: unlike work under one
//! name). A **regression** is a slow kernel, an output
//! whose digest differs or a submission whose outcome changed: exit 1. New, missing and
//! relabelled kernels and regions, and outputs present on one side only, are not
//! regressions (they mean a different program or run length, not a slower one) but they
//! are differences: the verdict is then **different**, exit 0; **same** only when every
//! count of one-sided or relabelled items is zero and both traces were read whole: where
//! one is incomplete (damaged, cut short, or it lost records while recording) and nothing
//! else differs, the verdict is **same as far as both traces go** (JSON
//! `same_as_far_as_both_go`), exit 0 as for "different" (nothing regressed in what both
//! hold; exit 2 is for input that cannot be used, and a damaged trace is compared on what
//! was recovered), with a `because` line naming the incomplete side. A trace that holds no
//! submission beside
//! one that holds some is a **regression** (the program did none of its work: "different"
//! with exit 0 let a run that stopped before its first submit pass a CI gate). The text's
//! `because` line and the JSON's `reasons` say what decided the verdict, from the same
//! counts, and name a difference of the recordings' arguments. Exit 2 when either trace cannot be read,
//! `R` is not a finite number ≥ 1, or the traces' ranges hold no submission in common
//! (see Ranges).
//!
//! # Arguments
//!
//! Each session record holds the recorded process's command line. They are compared
//! without the trace's own name (the value of `-o`/`--output`, which always differs
//! between two recordings) and with the program reduced to its file name (a debug and a
//! release build of one program are one program); when they differ, both are printed, so
//! a "different" verdict from a run with `--frames 8` against one with `--frames 4` says
//! why. `hrx-trace record`'s range options (`--capture-range`, `--delay`, `--duration`)
//! are left out: they choose what of the run is recorded; its other options are compared in
//! any order and form (`--frames=8` as `--frames 8`, each with its value as one item), the
//! recorded program's own arguments after `--` in their order.
//!
//! # Ranges
//!
//! Where either trace holds a range (a `--capture-range` recording, a `trim`: its
//! `TraceRange` records), only the submissions both hold are compared, paired by
//! submission number (a trim keeps the run's numbers): the whole run's submission 1 is not
//! paired with a trim 4..7's first, and the submissions outside the range are not
//! one-sided. Their outputs, outcomes and timings alike: kernels and regions are timed
//! over those submissions only (a side holding more is read once more for them,
//! `hrx_analysis::diff::limit_timings`). The reasons say so, `compared submissions 4..7,
//! the range new holds; base's others are not compared`, and the JSON's `compared_range`
//! names them. Ranges with no submission in common compare nothing: one error line, `error:
//! the traces hold no submission in common (base 1..3, new 5..7): nothing compared`, exit 2
//! (with `--json`, the report's verdict `nothing_compared`, its first reason, exit 2).
//!
//! JSON (`--json`), times in ns:
//!
//! ```text
//! {"base", "new", "max_slowdown", "noise_floor_ns",
//!  "verdict": "same"|"same_as_far_as_both_go"|"different"|"regression"|"nothing_compared",
//!  "reasons": [text]: what decided the verdict (the text's `because` line),
//!  "warnings": [text]: what standard error warned of either trace (damage, how it ends,
//!              records it lacks), each naming its trace (`cut.hrxt: not closed cleanly;
//!              ...`), as the other verbs' JSON lists its warnings,
//!  "complete": {"base", "new"}: each trace read whole and its recorder lost nothing,
//!  "lost": {"base", "new"}: each {"total", "lossy", "by_kind"}, as the other verbs' JSON
//!          says one trace's (`complete`, `lost.total` and `lost.lossy` are alike in
//!          `info`, `stats`, `replay` and, per side, `diff`),
//!  "records_lost": {"base", "new"} (each side's lost.total), "exit_code",
//!  "compared_range": null (both whole)|{"held_by": "base"|"new"|"both", "runtimes":
//!                    [{"runtime", "submissions": "4..7", "ranges": [[start, end|null]]}]},
//!  "streaming": {"unmatched_past_window": {"base", "new"}, "late_records": {"base", "new"}},
//!  "graphs_matched_by_structure": graphs of NEW given BASE's rank by their structure,
//!  "regions_matched_by_label": regions of NEW given another index (BASE's) by their label,
//!                              in graphs that gained or lost a region,
//!  "arguments": {"base": [..]|null, "new": [..]|null, "differ"},
//!  "host_load": {"base", "new"}: the highest `hrx: host load per CPU` sample of each trace
//!  (null without one); 1 or more is a loaded host, whose host-side times include waits for
//!  a CPU (the text says so on a `host load` line),
//!  "kernels": [{"name", "status": "matched"|"new"|"missing"|"relabelled"|"added"|"removed",
//!               "base": {stats}|null, "new": {stats}|null, "ratio": p50 ratio|null,
//!               "interval": [low, high] (the ratio's confidence interval, at least 95%)|null
//!               (one-sided, or too few runs), "too_few": fewer than 7 runs on a side (not
//!               judged), "too_spread": the interval holds 1 and its ends differ by more
//!               than 10x (not judged), "delta_ns"|null, "slow"}]: "relabelled", "added", "removed": a row
//!               of one trace only that an operation added to or removed from a graph explains,
//!  "operations": {"kernels_by": "operation"|"region label", "note": what a trace without
//!                 operation timings lacks|null,
//!                 "graph_changes": [{"runtime", "prepared", "region", "node", "name", "nth"
//!                                    (its place among the graph's operations of that name,
//!                                    from 1), "change": "added"|"removed"}],
//!                 "times": [{"runtime", "prepared" (the first of "graphs"), "graphs" (the
//!                            prepared graphs pooled: identical in both traces), "name", "nth",
//!                            "base_region", "new_region", "base_node", "new_node" (its
//!                            index in its graph), "base": {stats}, "new": {stats},
//!                            "ratio", "interval", "too_few", "too_spread", "slow"}] by
//!                            runtime, graph, name and nth (the text: the slow first, then
//!                            by runtime, graph, region and node: as the graph runs)},
//!  "annotations": [as "kernels"]: the application's ranges by name (format 1.14), their
//!                   times without the thread's waits on the recorder and at capture fences
//!                   inside them (each side's "capture_wait_ns"; its
//!                   "capture_wait_untold_ranges" began among more such waits than are kept,
//!                   and keep those in their times, as `stats`), judged
//!                 by the kernel rule but deciding nothing (the text marks a slow one
//!                 "past R (reported, not judged)", as an operation's row by place, and one
//!                 "too_few" or "too_spread" `too few ranges to compare` or `too spread to
//!                 compare`, saying where its few ranges are why: at 9 or fewer a side the
//!                 median's interval spans every sample),
//!  "regions": {"matched", "only_base", "only_new" (regions of prepared graphs, by graph
//!              and index, each over its runs: not runs), "relabelled": [{"runtime" (the n-th
//!              runtime, from 1), "prepared" (the n-th prepared graph, from 1), "region",
//!              "base", "new"}],
//!              "times": [{"runtime", "prepared" (the first of "graphs"), "graphs" (the
//!                         prepared graphs pooled), "region", "label", "base_p50_ns",
//!                         "new_p50_ns", "ratio"}] by runtime, graph and region (the text:
//!                         the worst ratio first)},
//!  "outputs": {"compared", "identical", "only_base", "only_new", "differing":
//!              [{"runtime", "prepared"|null, "nth" (the n-th submission of that graph,
//!                from 1; the submission number where "prepared" is null), "submission",
//!                "new_submission", "node"|null, "use"|null, "buffer", "new_buffer",
//!                "start", "end", "base_xxh3", "new_xxh3"}]},
//!  "submissions": {"compared", "unknown", "only_base", "only_new", "changed":
//!                  [{"runtime", "submission", "base", "new"}]},
//!  "summary": {"slow_kernels", "new_kernels", "missing_kernels" (kernels by name that
//!              run in one trace only: "new" or "added" rows, "missing" or "removed" rows;
//!              a "relabelled" one is none), "graph_changes",
//!              "differing_outputs", "changed_submissions", "one_sided": regions, outputs
//!              and submissions in one trace only, relabelled regions, new and missing
//!              kernels, operations added to or removed from graphs, "past_an_end": of
//!              those, the ones an incomplete trace lacks (not a difference),
//!              "empty_side": "base"|"new"|null (the trace without a submission)}}
//! ```
//!
//! Interrupted while it reads and compares (SIGINT, SIGTERM, SIGHUP, and the signals
//! `record` forwards: `crate::record::signals::SIGNALS`), it says so in one line, `error:
//! interrupted by signal 2 (SIGINT): the comparison of a.hrxt and b.hrxt stopped before its
//! verdict: nothing judged`, and exits 128+N ([`crate::partial`]); after it, what of its
//! report was printed: `... stopped before its report was printed: nothing of it on standard
//! output`, `... stopped as its report began to be printed: none or part of it on standard
//! output` (its first write under way), `... stopped while its report was printed: the
//! report on standard output is incomplete`, or `... was done: its report on standard output
//! is whole`
//! ([`crate::partial::Interruptible::print_report`]).

use crate::args::DiffArgs;
use crate::failure::{Failure, TraceError};
use crate::kernel_stats::print_report_to;
use hrx_analysis::KernelStats;
use hrx_analysis::compare::too_spread;
use hrx_analysis::diff::{
    Comparison, DiffError, Matched, NOISE_FLOOR_NS, Place, Profile, SAME_AS_FAR_AS_BOTH_GO, Side,
    UNKNOWN_GRAPH, compare,
};
use hrx_analysis::units::{duration, id_runs, plural, ratio, ratio_with_interval};
use hrx_capture::ShowPath;
use serde_json::{Value, json};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// The first pass over one trace ([`hrx_analysis::diff::profile`]).
///
/// # Errors
///
/// [`TraceError`] when the trace cannot be read. Reader warnings and how a damaged trace
/// ends go to standard error, one `warning:` line each, and are returned beside the
/// profile (the JSON's `warnings`).
fn load(path: &Path) -> anyhow::Result<(Profile, Vec<String>)> {
    let (profile, held) =
        crate::record::read_while_held(path, || hrx_analysis::diff::profile(path));
    let mut profile = profile.map_err(|error| TraceError {
        path: path.to_owned(),
        error,
    })?;
    profile.being_recorded = held;
    // Records of submissions the trace lacks, as `info` and `stats` say them.
    let mut warned: Vec<String> = crate::info::warn_unjoined(path, profile.unjoined)
        .into_iter()
        .collect();
    warned.extend(crate::failure::warn_partial_as(
        path,
        &profile.warnings,
        profile.recovery.as_ref(),
        "these figures cover only what was recovered",
        || held,
    ));
    warned.extend(crate::output::warn_ends_before_start(
        path,
        profile.ends_before_start,
        "compared",
    ));
    // A lossy recording that lost nothing compares as a lossless one: its mode is a note.
    if let Some(mode) = profile
        .recovery
        .as_ref()
        .and_then(|r| r.lost.lossy_without_loss())
    {
        crate::output::note(format_args!("{}: lost {mode}", path.shown()));
    }
    Ok((profile, warned))
}

/// One kernel's durations as JSON.
fn kernel_json(k: &KernelStats) -> Value {
    json!({
        "name": k.name, "count": k.count, "total_ns": k.total_ns, "mean_ns": k.mean_ns,
        "p50_ns": k.p50_ns, "p99_ns": k.p99_ns, "min_ns": k.min_ns, "max_ns": k.max_ns,
    })
}

/// Runs `diff`; exit 0 no regression, 1 a regression.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]), a bad `--max-slowdown` ([`Failure`]) or a write
/// error.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let wide = crate::replay::check_max_slowdown(
        args.max_slowdown,
        |wide| format!("a kernel's median must grow over {wide} times"),
        "output digests and outcomes",
    )?;
    crate::failure::require_rereadable(&args.base, "diff")?;
    crate::failure::require_rereadable(&args.new, "diff")?;
    // Interrupted (Ctrl-C, a CI runner's timeout), the comparison says so in one line and
    // exits 128+N, as `export` and `trim` do (it exited 130 without a word); until its
    // report is made, which is then printed at once.
    let interruptible = crate::partial::Interruptible::install_saying(&format!(
        "the comparison of {} and {} stopped before its verdict: nothing judged",
        args.base.shown(),
        args.new.shown()
    ));
    let (mut base, base_warned) = load(&args.base)?;
    let (mut new, new_warned) = load(&args.new)?;
    let trace_error = |e: DiffError| match e {
        DiffError::Base(error) => TraceError {
            path: args.base.clone(),
            error,
        },
        DiffError::New(error) => TraceError {
            path: args.new.clone(),
            error,
        },
    };
    // Where either holds a range, timings only of the submissions both hold (before
    // `align`, which renumbers new's graphs).
    hrx_analysis::diff::limit_timings((&mut base, &args.base), (&mut new, &args.new))
        .map_err(trace_error)?;
    // Graphs prepared in another order matched by their structure (before the second pass,
    // which keys outputs by graph rank).
    let reordered = hrx_analysis::diff::align(&base, &mut new);
    // Regions of a graph that gained or lost one paired by label, not by index.
    let realigned = hrx_analysis::diff::align_regions(&base, &mut new);
    // A graph whose changed regions were too many to pair by label says so (they were left
    // paired in order without a word: a break-it pass).
    let in_order: Vec<String> = (realigned.in_order.iter())
        .map(|((runtime, graph), (b, n))| {
            format!(
                "graph {graph} of runtime {runtime}: its regions differ in a run of {b} (base) \
                 against {n} (new), too many to pair by label; those are paired in order"
            )
        })
        .collect();
    for line in &in_order {
        crate::output::warn(line);
    }
    let matched = hrx_analysis::diff::match_files((&base, &args.base), (&new, &args.new))
        .map_err(trace_error)?;
    let comparison = compare(&base, &new, &matched, args.max_slowdown);
    let mut report = report(&args, &comparison, &matched);
    report["graphs_matched_by_structure"] = reordered.into();
    report["regions_matched_by_label"] = realigned.matched.into();
    // A side recorded on a loaded host has host-side times that include waits for a CPU.
    report["host_load"] = json!({"base": base.host_load_max, "new": new.host_load_max});
    // What standard error warned of either trace, as the other verbs' JSON lists it.
    report["warnings"] = json!([Vec::from_iter(wide), base_warned, new_warned, in_order].concat());
    // Each side's losses under every verb's keys (`records_lost` stays).
    let lost = |p: &Profile| {
        crate::info::lost_json(&p.recovery.as_ref().map(|r| r.lost).unwrap_or_default())
    };
    report["lost"] = json!({"base": lost(&base), "new": lost(&new)});
    // As replay: nothing compared is not a match (two recordings cut short before their
    // first submit would otherwise read "same" and pass a CI gate). Ranges with no
    // submission in common say so in the report (exit 2).
    let submissions = &report["submissions"];
    let held: u64 = ["compared", "unknown", "only_base", "only_new"]
        .iter()
        .map(|k| submissions[k].as_u64().unwrap_or(0))
        .sum();
    if held == 0 && comparison.nothing_compared.is_none() {
        return Err(Failure::new(format!(
            "neither {} nor {} holds a submission: nothing to compare, which is not a match",
            args.base.shown(),
            args.new.shown()
        ))
        .hint("`hrx-trace info` says what each trace holds (a recording cut short before its first submit holds none)")
        .into());
    }
    // Submissions in common, none with an outcome on both sides and no output compared
    // (two recordings killed before their first completion): a match of nothing.
    let count = |k: &str| submissions[k].as_u64().unwrap_or(0);
    if count("compared") == 0
        && count("unknown") > 0
        && count("only_base") + count("only_new") == 0
        && ["compared", "only_base", "only_new"]
            .iter()
            .all(|k| report["outputs"][k].as_u64().unwrap_or(0) == 0)
        && comparison.nothing_compared.is_none()
    {
        let line = format!(
            "{} and {} hold {} in common, none with a recorded outcome in both and no output \
             to compare: nothing compared, which is not a match",
            args.base.shown(),
            args.new.shown(),
            hrx_analysis::units::plural(count("unknown"), "submission")
        );
        if !args.json {
            return Err(Failure::new(line)
                .hint("`hrx-trace info` says which submissions end without an outcome (in flight where a trace cut short ends)")
                .into());
        }
        // The JSON report says it as its verdict, as for ranges with nothing in common.
        report["verdict"] = hrx_analysis::diff::NOTHING_COMPARED.into();
        report["exit_code"] = 2.into();
        if let Some(reasons) = report["reasons"].as_array_mut() {
            reasons.insert(0, line.into());
        }
    }
    // As every exit 2 of the text report: one `error:` line on standard error (the JSON
    // report says it as its verdict, for scripts).
    if let (Some(line), false) = (&comparison.nothing_compared, args.json) {
        return Err(Failure::new(line.clone())
            .hint("diff traces that hold some submissions in common (`hrx-trace info` says which each holds)")
            .into());
    }
    // One file on both sides is most likely a slip (a fresh-user pass: no word of it);
    // said beside a report, after any error's one line.
    if let (Ok(a), Ok(b)) = (
        std::fs::canonicalize(&args.base),
        std::fs::canonicalize(&args.new),
    ) && a == b
    {
        crate::output::note(format_args!(
            "{} and {} are the same file: it is compared with itself",
            args.base.shown(),
            args.new.shown()
        ));
    }
    // From here on what is cut short is the report (a long JSON one on a slow pipe was left
    // half written, killed silently), and what an interruption says follows what of it was
    // printed.
    let comparison_of = format!(
        "the comparison of {} and {}",
        args.base.shown(),
        args.new.shown()
    );
    let printed = interruptible.print_report(&comparison_of, "", |out| {
        print_report_to(out, &report, args.json, |mut out, r| {
            write_text(&mut out, r)
        })
    });
    interruptible.finished();
    let code = report["exit_code"].as_u64().unwrap_or(2) as u8;
    crate::failure::verdict(code, printed, &format!("the report of {comparison_of}"))
}

/// A rank (0-based) as the JSON numbers it: from 1, as every other verb numbers runtimes
/// and prepared graphs (`rt=1 prepared=1` in `dump`).
fn from_one(rank: u64) -> u64 {
    rank.saturating_add(1)
}

/// One side of an annotation row of the report (`stats`' fields for a range name).
fn annotation_json(s: &hrx_analysis::AnnotationStats) -> Value {
    json!({
        "name": s.name, "count": s.count, "total_ns": s.total_ns,
        "mean_ns": s.mean_ns, "p50_ns": s.p50_ns, "p99_ns": s.p99_ns,
        "min_ns": s.min_ns, "max_ns": s.max_ns,
        "capture_wait_ns": s.capture_wait_ns,
        "capture_wait_untold_ranges": s.capture_wait_untold_ranges,
    })
}

/// The report (`--json`'s layout, see the module docs) of hrx-analysis's comparison `c`
/// and second pass `m`.
fn report(args: &DiffArgs, c: &Comparison, m: &Matched) -> Value {
    let kernels: Vec<Value> = c
        .kernels
        .iter()
        .map(|k| {
            json!({
                "name": k.name, "status": k.status(),
                "base": k.base.as_ref().map(kernel_json), "new": k.new.as_ref().map(kernel_json),
                "ratio": k.ratio(), "interval": k.interval.map(|(l, h)| [l, h]),
                "too_few": k.too_few, "too_spread": too_spread(k.interval),
                "delta_ns": k.delta_ns(), "slow": k.slow,
            })
        })
        .collect();
    let annotations: Vec<Value> = c
        .annotations
        .iter()
        .map(|a| {
            let stats = annotation_json;
            let (base, new) = (a.base.as_ref(), a.new.as_ref());
            let status = match (base, new) {
                (Some(_), Some(_)) => "matched",
                (None, _) => "new",
                (_, None) => "missing",
            };
            let ratio = base
                .zip(new)
                .filter(|(b, _)| b.p50_ns > 0)
                .map(|(b, n)| n.p50_ns as f64 / b.p50_ns as f64);
            let delta_ns = base
                .zip(new)
                .map(|(b, n)| n.p50_ns as i64 - b.p50_ns as i64);
            json!({
                "name": a.name, "status": status, "base": base.map(stats),
                "new": new.map(stats), "ratio": ratio, "interval": a.interval.map(|(l, h)| [l, h]),
                "too_few": a.too_few, "too_spread": too_spread(a.interval),
                "delta_ns": delta_ns, "slow": a.slow,
            })
        })
        .collect();
    let relabelled: Vec<Value> = c
        .regions
        .relabelled
        .iter()
        .map(|r| {
            json!({"runtime": from_one(r.key.runtime.into()), "prepared": from_one(r.key.prepared),
                   "region": r.key.region, "base": r.base, "new": r.new})
        })
        .collect();
    let times: Vec<Value> = c
        .regions
        .times
        .iter()
        .map(|t| {
            json!({"runtime": from_one(t.key.runtime.into()),
                "prepared": from_one(t.key.prepared),
                "graphs": t.graphs.iter().map(|&g| from_one(g)).collect::<Vec<_>>(),
                "region": t.key.region, "label": t.label,
                "base_p50_ns": t.base_p50_ns, "new_p50_ns": t.new_p50_ns, "ratio": t.ratio()})
        })
        .collect();
    let differing: Vec<Value> = m
        .differing
        .iter()
        .map(|d| {
            let key = d.key;
            let (node, use_) = match key.3 {
                Place::Use(node, use_) | Place::Op { node, use_, .. } => (Some(node), Some(use_)),
                Place::Buffer(_) => (None, None),
            };
            let by_graph = key.1 != UNKNOWN_GRAPH;
            json!({
                "runtime": from_one(key.0.into()), "prepared": by_graph.then(|| from_one(key.1)),
                "nth": if by_graph { from_one(key.2) } else { key.2 }, "submission": d.base.2, "new_submission": d.new.2,
                "node": node, "use": use_,
                "buffer": d.base.1, "new_buffer": d.new.1, "start": key.4, "end": key.5,
                "base_xxh3": format!("{:#018x}", d.base.0),
                "new_xxh3": format!("{:#018x}", d.new.0),
            })
        })
        .collect();
    let identical = m.identical as usize;
    let compared = identical + differing.len();
    let changed: Vec<Value> = m
        .changed
        .iter()
        .map(|c| {
            json!({"runtime": from_one(c.key.0.into()), "submission": c.submission[0],
                   "new_submission": c.submission[1],
                   "base": c.base.name(), "new": c.new.name()})
        })
        .collect();
    let graph_changes: Vec<Value> = c
        .graph_changes
        .iter()
        .map(|g| {
            json!({"runtime": from_one(g.key.runtime.into()), "prepared": from_one(g.key.prepared),
                   "region": g.region, "node": g.node, "name": g.key.name,
                   "nth": from_one(g.key.nth.into()),
                   "change": if g.added { "added" } else { "removed" }})
        })
        .collect();
    let op_times: Vec<Value> = c
        .op_times
        .iter()
        .map(|o| {
            let ratio = (o.base.p50_ns > 0).then(|| o.new.p50_ns as f64 / o.base.p50_ns as f64);
            json!({"runtime": from_one(o.key.runtime.into()), "prepared": from_one(o.key.prepared),
                   "graphs": o.graphs.iter().map(|&g| from_one(g)).collect::<Vec<_>>(),
                   "name": o.key.name, "nth": from_one(o.key.nth.into()),
                   "base_region": o.region[0], "new_region": o.region[1],
                   "base_node": o.node[0], "new_node": o.node[1],
                   "base": kernel_json(&o.base), "new": kernel_json(&o.new),
                   "ratio": ratio, "interval": o.interval.map(|(l, h)| [l, h]),
                   "too_few": o.too_few, "too_spread": too_spread(o.interval), "slow": o.slow})
        })
        .collect();
    let [outputs_only_base, outputs_only_new] = m.outputs_one_sided.map(|n| n as usize);
    let [subs_only_base, subs_only_new] = m.submissions_one_sided.map(|n| n as usize);
    let [base_args, new_args] = &c.arguments;
    json!({
        "base": args.base.display().to_string(),
        "new": args.new.display().to_string(),
        "max_slowdown": args.max_slowdown,
        "noise_floor_ns": NOISE_FLOOR_NS,
        "verdict": c.verdict_name(),
        "reasons": c.reasons,
        "arguments": {"base": base_args, "new": new_args, "differ": c.arguments_differ()},
        // Whether each trace was read whole; a damaged or cut-short one is compared on what
        // was recovered (standard error warns), which can leave most of it unmatched.
        "complete": {"base": c.complete[0], "new": c.complete[1]},
        "records_lost": {"base": c.records_lost[0], "new": c.records_lost[1]},
        // Where either trace holds a range (a range recording, a trim): the submissions
        // compared, those both hold (an open end is null), and which trace holds a range.
        "compared_range": c.compared.as_ref().map(|compared| json!({
            "held_by": c.ranged_side(),
            "runtimes": compared.iter().map(|(rank, held)| json!({
                "runtime": from_one((*rank).into()),
                "submissions": hrx_analysis::diff::describe_range(held),
                "ranges": held.iter().map(|&(s, e)| json!([s, (e != u64::MAX).then_some(e)]))
                    .collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })),
        // What the streamed match could not pair (see `hrx_analysis::diff`); zero when both
        // traces have the same submission sequence.
        "streaming": {
            "unmatched_past_window": {"base": m.unmatched_past_window[0],
                                      "new": m.unmatched_past_window[1]},
            "late_records": {"base": m.late_records[0], "new": m.late_records[1]},
        },
        "exit_code": c.exit_code(),
        "summary": {
            "slow_kernels": c.slow_kernels, "new_kernels": c.new_kernels,
            "missing_kernels": c.missing_kernels, "graph_changes": c.graph_changes.len(),
            "differing_outputs": differing.len(), "changed_submissions": changed.len(),
            "one_sided": c.one_sided, "past_an_end": c.past_an_end,
            "empty_side": c.empty_side.map(Side::name),
        },
        "submissions": {"compared": m.outcomes_compared, "unknown": m.outcomes_unknown,
                        "only_base": subs_only_base, "only_new": subs_only_new,
                        "changed": changed},
        "kernels": kernels,
        "operations": {
            "kernels_by": if c.by_operation { "operation" } else { "region label" },
            "note": c.op_note,
            "graph_changes": graph_changes,
            "times": op_times,
        },
        "annotations": annotations,
        "regions": {"matched": c.regions.matched, "only_base": c.regions.only_base,
                    "only_new": c.regions.only_new, "relabelled": relabelled, "times": times},
        "outputs": {
            "compared": compared, "identical": identical,
            "only_base": outputs_only_base,
            "only_new": outputs_only_new,
            "differing": differing,
        },
    })
}

/// A judged row's ratio of medians as `replay` writes it, with its confidence interval
/// where it has one (`1.50x [1.25x..1.75x]`, the one formatter:
/// [`hrx_analysis::units::ratio_with_interval`]); `-` without a ratio.
fn judged_ratio(row: &Value) -> String {
    let interval = row["interval"]
        .as_array()
        .and_then(|i| Some((i.first()?.as_f64()?, i.get(1)?.as_f64()?)));
    row["ratio"]
        .as_f64()
        .map_or_else(|| "-".to_owned(), |r| ratio_with_interval(r, interval))
}

/// The mark of a judged row that is not judged: too few runs on a side (under 7), or an
/// interval around 1 too wide to mean anything ([`hrx_analysis::compare::TOO_WIDE`]), which was printed as if it
/// were a judgement (`0.85x [0.00x..243.62x]`: a fresh user's pass). A wide interval wholly
/// on one side of 1 still says faster or slower. Why it is too spread is said as for the
/// rows that are not judged ([`spread_why`]): a kernel row over 8 runs a side gave "unlike
/// work under one name, or a loaded host?" where the same samples' operation row said its
/// few runs were why (a break-it pass).
fn too_few_mark(row: &Value) -> String {
    if row["too_few"].as_bool() == Some(true) {
        "  too few to judge".to_owned()
    } else if row["too_spread"].as_bool() == Some(true) {
        match spread_why(row, "runs") {
            SpreadWhy::Magnitude(why) => {
                format!(
                    "  too spread to judge: {why} (unlike work under one name, or a loaded host?)"
                )
            }
            SpreadWhy::Few(why) | SpreadWhy::Interval(why) => {
                format!("  too spread to judge: {why}")
            }
        }
    } else {
        String::new()
    }
}

/// Why a row's ratio's interval is too spread, as its samples show it ([`spread_why`]).
enum SpreadWhy {
    /// Few samples: the median's interval runs from a side's fastest sample to its slowest
    /// (at 9 or fewer a side).
    Few(String),
    /// A side's slowest sample is 10 times its fastest or more.
    Magnitude(String),
    /// Neither: the ratio's interval spans more than 10x (what `too_spread` means).
    Interval(String),
}

/// Why `row`'s interval is too spread, its samples called `noun` (`runs`, `ranges`), in
/// words that are true of it: at 9 or fewer samples on its fewer side, the median's
/// interval spans all of them (`at 8 ranges a side`, or `at 8 and 12 ranges` where the
/// sides differ); where a side's slowest is 10 times its fastest or more, they differ by an
/// order of magnitude; else the ratio's interval spans more than 10x at so many samples.
/// (A break-it pass: rows of 10 to 14 samples a side, their sides within 3x, read "a side's
/// ranges differ by an order of magnitude", and sides of 8 and 12 "at 8 ranges a side".)
fn spread_why(row: &Value, noun: &str) -> SpreadWhy {
    let counts: Vec<u64> = ["base", "new"]
        .iter()
        .filter_map(|side| row[side]["count"].as_u64())
        .collect();
    let fewer = counts.iter().copied().min().unwrap_or(0);
    let at = match counts[..] {
        [a, b] if a != b => format!("at {a} and {b} {noun}"),
        _ => format!("at {fewer} {noun} a side"),
    };
    let magnitude = ["base", "new"].iter().any(|side| {
        let (Some(min), Some(max)) = (row[side]["min_ns"].as_u64(), row[side]["max_ns"].as_u64())
        else {
            return false;
        };
        max > 0 && max as f64 >= min as f64 * hrx_analysis::compare::TOO_WIDE
    });
    if fewer > 0 && hrx_analysis::sketch::median_ranks(fewer) == Some((1, fewer)) {
        SpreadWhy::Few(match counts[..] {
            [a, b] if a != b => format!("{at} the interval spans all {fewer} of a side"),
            _ => format!("{at} the interval spans them all"),
        })
    } else if magnitude {
        SpreadWhy::Magnitude(format!("a side's {noun} differ by an order of magnitude"))
    } else {
        SpreadWhy::Interval(format!(
            "{at} the ratio's interval spans more than {}x",
            hrx_analysis::compare::TOO_WIDE
        ))
    }
}

/// The mark of a row compared by the kernel rule but not judged (an annotation range, an
/// operation by place: the kernels' rows decide the verdict), its samples `noun` (`ranges`,
/// `runs`): one whose ratio's interval lies past `--max-slowdown` is what it is, not
/// `slower`, which a user read as a judgement beside a `same` verdict while the README says
/// such rows are "reported, not judged"; one too few or too spread to say faster or slower
/// is too few or too spread to compare, not "to judge" (it never is), and not for "unlike
/// work under one name, or a loaded host?" where its few samples are why: at 9 or fewer a
/// side, the median's interval runs from a side's fastest sample to its slowest (a fresh
/// user's 8 frames called four of five annotation ranges `too spread to judge`). Why is
/// [`spread_why`]'s.
fn not_judged_mark(r: &Value, row: &Value, noun: &str) -> String {
    if row["slow"].as_bool() == Some(true) {
        format!(
            "  past {} (reported, not judged)",
            ratio(r["max_slowdown"].as_f64().unwrap_or(0.0))
        )
    } else if row["too_few"].as_bool() == Some(true) {
        format!("  too few {noun} to compare (reported, not judged)")
    } else if row["too_spread"].as_bool() != Some(true) {
        String::new()
    } else {
        let (SpreadWhy::Few(why) | SpreadWhy::Magnitude(why) | SpreadWhy::Interval(why)) =
            spread_why(row, noun);
        format!("  too spread to compare: {why} (reported, not judged)")
    }
}

/// Differing outputs and changed outcomes the text report lists, each; `--json` has all.
const LISTED: usize = 20;

/// Says how many rows past [`LISTED`] the text report left out.
fn more(out: &mut impl Write, rows: usize) -> io::Result<()> {
    match rows.saturating_sub(LISTED) {
        0 => Ok(()),
        n => writeln!(out, "  ... and {n} more (all with --json)"),
    }
}

fn write_text(out: &mut impl Write, r: &Value) -> io::Result<()> {
    // Names as the trace holds them, escaped: no terminal control from a trace.
    let printable = crate::output::printable(r);
    let r = &printable;
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    let ns = |v: &Value| v.as_u64().map_or_else(|| "-".to_owned(), duration);
    for side in ["base", "new"] {
        let lost = u(&r["records_lost"][side]);
        if lost > 0 {
            writeln!(
                out,
                "{side} trace lost {lost} records while recording: what it lacks reads as changed"
            )?;
        }
    }
    let kernels = r["kernels"].as_array().map_or(&[][..], Vec::as_slice);
    let w = runs_width(kernels);
    writeln!(
        out,
        "{:<28} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}",
        "kernel", "runs", "base p50", "new p50", "base p99", "new p99", "ratio [95% interval]"
    )?;
    for k in kernels {
        let runs = format!("{}/{}", u(&k["base"]["count"]), u(&k["new"]["count"]));
        let mark = match (k["status"].as_str(), k["slow"].as_bool()) {
            (_, Some(true)) => "  SLOW".to_owned(),
            (Some("new"), _) => "  NEW".to_owned(),
            (Some("missing"), _) => "  MISSING".to_owned(),
            (Some("added"), _) => "  added to a graph (below)".to_owned(),
            (Some("removed"), _) => "  removed from a graph (below)".to_owned(),
            (Some("relabelled"), _) => "  relabelled region (below)".to_owned(),
            _ => too_few_mark(k),
        };
        writeln!(
            out,
            "{} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}{mark}",
            crate::output::padded(k["name"].as_str().unwrap_or(""), 28),
            runs,
            ns(&k["base"]["p50_ns"]),
            ns(&k["new"]["p50_ns"]),
            ns(&k["base"]["p99_ns"]),
            ns(&k["new"]["p99_ns"]),
            judged_ratio(k),
        )?;
    }
    write_operations(out, r)?;
    // The application's ranges (format 1.14): reported, never judged.
    if let Some(rows) = r["annotations"].as_array().filter(|a| !a.is_empty()) {
        let w = runs_width(rows);
        writeln!(
            out,
            "\n{:<28} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}",
            "annotation",
            "ranges",
            "base p50",
            "new p50",
            "base p99",
            "new p99",
            "ratio [95% interval]"
        )?;
        for a in rows {
            let runs = format!("{}/{}", u(&a["base"]["count"]), u(&a["new"]["count"]));
            let mark = match a["status"].as_str() {
                Some("new") => "  new".to_owned(),
                Some("missing") => "  missing".to_owned(),
                _ => not_judged_mark(r, a, "ranges"),
            };
            writeln!(
                out,
                "{} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}{mark}",
                crate::output::padded(a["name"].as_str().unwrap_or(""), 28),
                runs,
                ns(&a["base"]["p50_ns"]),
                ns(&a["new"]["p50_ns"]),
                ns(&a["base"]["p99_ns"]),
                ns(&a["new"]["p99_ns"]),
                judged_ratio(a),
            )?;
        }
        // Capture work inside the ranges, left out of their times (`stats` does the same).
        let left_out = |side: &str| rows.iter().map(|a| u(&a[side]["capture_wait_ns"])).sum();
        let (base, new): (u64, u64) = (left_out("base"), left_out("new"));
        if base + new > 0 {
            writeln!(
                out,
                "(times leave out waits on the trace recorder and at capture fences inside the \
                 ranges: {} in base, {} in new)",
                duration(base),
                duration(new)
            )?;
        }
        // Ranges that began among the waits let go of keep those in their times (as `stats`).
        let untold = |side: &str| -> u64 {
            rows.iter()
                .map(|a| u(&a[side]["capture_wait_untold_ranges"]))
                .sum()
        };
        let (base, new) = (untold("base"), untold("new"));
        if base + new > 0 {
            writeln!(
                out,
                "(ranges that began among more than {} earlier waits of their thread on the \
                 recorder and at capture fences: {base} in base, {new} in new; those waits \
                 inside them are not left out of their times)",
                hrx_analysis::stats::CAPTURE_WAITS_KEPT
            )?;
        }
    }
    let g = &r["regions"];
    // The table below pools the regions of identical graphs (one row a place): say so where
    // it has fewer rows than regions matched.
    let rows = g["times"].as_array().map_or(0, Vec::len) as u64;
    let pooled = match u(&g["matched"]) {
        matched if rows > 0 && rows < matched => {
            format!(
                " (in {} below: identical graphs' regions pooled)",
                hrx_analysis::units::plural(rows, "row")
            )
        }
        _ => String::new(),
    };
    // Regions of prepared graphs, as their rows below (each over its runs, as the kernels'
    // `runs` column counts them): a count of runs read "1 matched" beside "8/8 runs" as if
    // the other 7 were unmatched.
    writeln!(
        out,
        "\nregions      {} matched (each a prepared graph's region, over its runs), {} only in \
         base, {} only in new, {} relabelled{pooled}",
        u(&g["matched"]),
        u(&g["only_base"]),
        u(&g["only_new"]),
        g["relabelled"].as_array().map_or(0, Vec::len)
    )?;
    write_region_times(out, g)?;
    let o = &r["outputs"];
    writeln!(
        out,
        "outputs      {} compared, {} identical, {} differ; {} only in base, {} only in new",
        u(&o["compared"]),
        u(&o["identical"]),
        o["differing"].as_array().map_or(0, Vec::len),
        u(&o["only_base"]),
        u(&o["only_new"])
    )?;
    let differing = o["differing"].as_array().map_or(&[][..], Vec::as_slice);
    for d in differing.iter().take(LISTED) {
        let place = match (d["node"].as_u64(), d["use"].as_u64()) {
            (Some(node), Some(use_)) => {
                format!("node {node} use {use_} (buffer {}", u(&d["buffer"]))
            }
            _ => format!("(buffer {}", u(&d["buffer"])),
        };
        let new_buffer = match u(&d["new_buffer"]) {
            b if b == u(&d["buffer"]) => String::new(),
            b => format!(", {b} in new"),
        };
        writeln!(
            out,
            "  differs    submission {} {place}{new_buffer}) bytes {}..{}: {} -> {}",
            u(&d["submission"]),
            u(&d["start"]),
            u(&d["end"]),
            d["base_xxh3"].as_str().unwrap_or(""),
            d["new_xxh3"].as_str().unwrap_or("")
        )?;
    }
    more(out, differing.len())?;
    let c = &r["submissions"];
    writeln!(
        out,
        "submissions  {} compared, {}{}{}",
        u(&c["compared"]),
        plural(
            c["changed"].as_array().map_or(0, Vec::len) as u64,
            "changed outcome"
        ),
        match u(&c["unknown"]) {
            0 => String::new(),
            n => format!("; {n} without a recorded outcome (not compared)"),
        },
        match (u(&c["only_base"]), u(&c["only_new"])) {
            (0, 0) => String::new(),
            (b, n) => format!("; {b} only in base, {n} only in new"),
        }
    )?;
    let changed = c["changed"].as_array().map_or(&[][..], Vec::as_slice);
    for d in changed.iter().take(LISTED) {
        let new_submission = match u(&d["new_submission"]) {
            n if n == u(&d["submission"]) => String::new(),
            n => format!(" ({n} in new)"),
        };
        writeln!(
            out,
            "  changed    submission {}{new_submission}: {} -> {}",
            u(&d["submission"]),
            d["base"].as_str().unwrap_or(""),
            d["new"].as_str().unwrap_or("")
        )?;
    }
    more(out, changed.len())?;
    match u(&r["graphs_matched_by_structure"]) {
        0 => {}
        n => writeln!(
            out,
            "graphs       {n} of new matched by structure (prepared in another order than in base)"
        )?,
    }
    match u(&r["regions_matched_by_label"]) {
        0 => {}
        n => writeln!(
            out,
            "regions      {n} of new matched by label (their graph gained or lost a region; \
             indices are base's)"
        )?,
    }
    let w = &r["streaming"];
    for side in ["base", "new"] {
        let (past, late) = (
            u(&w["unmatched_past_window"][side]),
            u(&w["late_records"][side]),
        );
        if past > 0 {
            writeln!(
                out,
                "window       {past} {side} items left the match window unmatched (the submission sequences differ): counted as only in {side}"
            )?;
        }
        if late > 0 {
            writeln!(
                out,
                "window       {late} {side} digests or completions came too late to join their submission: compared as if its submit were missing"
            )?;
        }
    }
    let a = &r["arguments"];
    if a["differ"].as_bool() == Some(true) {
        let line = |v: &Value| match v.as_array() {
            Some(args) => args
                .iter()
                .map(|x| x.as_str().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" "),
            None => "(no session record)".to_owned(),
        };
        writeln!(
            out,
            "arguments    differ (the traces record different runs)"
        )?;
        writeln!(out, "  base       {}", line(&a["base"]))?;
        writeln!(out, "  new        {}", line(&a["new"]))?;
    }
    let s = &r["summary"];
    let past = u(&s["past_an_end"]);
    let mut one_sided = match u(&s["one_sided"]).saturating_sub(past) {
        0 => String::new(),
        n => format!(
            "; {} in one trace only or relabelled (see above)",
            plural(n, "item")
        ),
    };
    if past > 0 {
        one_sided.push_str(&format!(
            "; {} past an incomplete trace's end, not compared",
            plural(past, "item")
        ));
    }
    let graph_changes = match u(&s["graph_changes"]) {
        0 => String::new(),
        n => format!(
            ", {} added to or removed from a graph",
            plural(n, "operation")
        ),
    };
    for side in ["base", "new"] {
        if let Some(load) = r["host_load"][side].as_f64().filter(|&l| l >= 1.0) {
            writeln!(
                out,
                "host load    {side} was recorded on a loaded host (up to {}, 1-minute \
                 average): its host-side times include waits for a CPU",
                hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(load))
            )?;
        }
    }
    let reasons: Vec<&str> = r["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !reasons.is_empty() {
        writeln!(out, "because      {}", reasons.join("; "))?;
    }
    writeln!(
        out,
        "verdict      {} (exit {}): {} (the median ratio's interval past {}), {}, {}, {}, {}{graph_changes}{one_sided}",
        {
            let name = r["verdict"].as_str().unwrap_or("");
            let text = match name {
                SAME_AS_FAR_AS_BOTH_GO => "same as far as both traces go",
                name => name,
            };
            crate::output::paint_out(text, crate::output::verdict_tone(name))
        },
        u(&r["exit_code"]),
        plural(u(&s["slow_kernels"]), "slow kernel"),
        ratio(r["max_slowdown"].as_f64().unwrap_or(0.0)),
        plural(u(&s["differing_outputs"]), "differing output"),
        plural(u(&s["changed_submissions"]), "changed outcome"),
        plural(u(&s["new_kernels"]), "new kernel"),
        plural(u(&s["missing_kernels"]), "missing kernel"),
    )
}

/// What changed in the graphs' operations: what a trace without operation timings lacks,
/// kernels added to or removed from a graph, and each operation's medians by its place.
/// The matched regions' medians (`regions.times`), reported, never judged (the kernels
/// decide): the largest ratio first, as the header says, so that the [`LISTED`] shown are
/// the worst; all with `--json`, by place.
fn write_region_times(out: &mut impl Write, g: &Value) -> io::Result<()> {
    let times = g["times"].as_array().map_or(&[][..], Vec::as_slice);
    if times.is_empty() {
        return Ok(());
    }
    let ns = |v: &Value| v.as_u64().map_or_else(|| "-".to_owned(), duration);
    writeln!(
        out,
        "{:<28} {:>11} {:>11} {:>9}",
        "  region (worst ratio first)", "base p50", "new p50", "ratio"
    )?;
    let of = |t: &Value| t["ratio"].as_f64().unwrap_or(f64::NAN);
    let mut rows: Vec<&Value> = times.iter().collect();
    rows.sort_by(|a, b| of(b).total_cmp(&of(a)));
    for t in rows.iter().take(LISTED) {
        let graphs: Vec<u64> = t["graphs"].as_array().map_or_else(
            || vec![t["prepared"].as_u64().unwrap_or(0)],
            |g| g.iter().filter_map(Value::as_u64).collect(),
        );
        let name = format!(
            "  g{} r{} {}",
            id_runs(&graphs),
            t["region"].as_u64().unwrap_or(0),
            t["label"].as_str().unwrap_or("")
        );
        let ratio = t["ratio"].as_f64().map_or_else(|| "-".to_owned(), ratio);
        writeln!(
            out,
            "{} {:>11} {:>11} {ratio:>9}",
            crate::output::padded(&name, 28),
            ns(&t["base_p50_ns"]),
            ns(&t["new_p50_ns"]),
        )?;
    }
    more(out, times.len())
}

fn write_operations(out: &mut impl Write, r: &Value) -> io::Result<()> {
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    let ns = |v: &Value| v.as_u64().map_or_else(|| "-".to_owned(), duration);
    let o = &r["operations"];
    // `graph 2 region 1`, with the runtime where there are several.
    let place = |v: &Value, region: u64| match u(&v["runtime"]) {
        1 => format!("graph {} region {region}", u(&v["prepared"])),
        rt => format!("runtime {rt} graph {} region {region}", u(&v["prepared"])),
    };
    if let Some(note) = o["note"].as_str() {
        writeln!(out, "{:<12} {note}", "operations")?;
    }
    let changes = o["graph_changes"].as_array().map_or(&[][..], Vec::as_slice);
    for g in changes.iter().take(LISTED) {
        let added = g["change"] == "added";
        writeln!(
            out,
            "{:<12} {}: {} {} ({})",
            "operation",
            place(g, u(&g["region"])),
            if added { "+" } else { "-" },
            g["name"].as_str().unwrap_or(""),
            if added { "added" } else { "removed" },
        )?;
    }
    more(out, changes.len())?;
    let times = o["times"].as_array().map_or(&[][..], Vec::as_slice);
    if times.is_empty() {
        return Ok(());
    }
    let w = runs_width(times);
    writeln!(
        out,
        "\n{:<28} {:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}",
        "operation (slow, then place)",
        "runs",
        "base p50",
        "new p50",
        "base p99",
        "new p99",
        "ratio [95% interval]"
    )?;
    // The slow first, then by place as a graph runs (graph, region, node), as the header
    // says (a region's operations went by name: `fill` before `rgb_to_gray`, a break-it
    // pass); the JSON is by graph and name. The text lists LISTED, `--json` all.
    let mut rows: Vec<&Value> = times.iter().collect();
    rows.sort_by_key(|t| {
        let at = |key: &str| u(&t[key]);
        let place = (
            at("runtime"),
            at("prepared"),
            at("new_region"),
            at("new_node"),
        );
        let name = t["name"].as_str().unwrap_or("");
        (t["slow"].as_bool() != Some(true), place, name, at("nth"))
    });
    for t in rows.iter().take(LISTED) {
        let nth = match u(&t["nth"]) {
            1 => String::new(),
            n => format!(" #{n}"),
        };
        // The graphs the row pools (`g1-3`: three identical graphs), else its graph.
        let graphs: Vec<u64> = t["graphs"]
            .as_array()
            .map_or_else(|| vec![u(&t["prepared"])], |g| g.iter().map(u).collect());
        let name = format!(
            "g{} r{} {}{nth}",
            id_runs(&graphs),
            u(&t["new_region"]),
            t["name"].as_str().unwrap_or("")
        );
        let runs = format!("{}/{}", u(&t["base"]["count"]), u(&t["new"]["count"]));
        let mark = not_judged_mark(r, t, "runs");
        writeln!(
            out,
            "{} {runs:>w$} {:>11} {:>11} {:>11} {:>11} {:>22}{mark}",
            crate::output::padded(&name, 28),
            ns(&t["base"]["p50_ns"]),
            ns(&t["new"]["p50_ns"]),
            ns(&t["base"]["p99_ns"]),
            ns(&t["new"]["p99_ns"]),
            judged_ratio(t),
        )?;
    }
    more(out, times.len())
}

/// The width of a table's `runs` column (`BASE/NEW` counts): at least its header's 9, so
/// that 15,000,000 runs a side do not push the later columns out of line.
fn runs_width(rows: &[Value]) -> usize {
    let count = |row: &Value, side: &str| row[side]["count"].as_u64().unwrap_or(0);
    (rows.iter())
        .map(|row| format!("{}/{}", count(row, "base"), count(row, "new")).len())
        .fold(9, usize::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_column_is_as_wide_as_its_widest_count() {
        let rows = [
            serde_json::json!({"base": {"count": 15_000_000}, "new": {"count": 15_000_000}}),
            serde_json::json!({"base": {"count": 3}, "new": {"count": 4}}),
        ];
        assert_eq!(runs_width(&rows), "15000000/15000000".len());
        assert_eq!(runs_width(&rows[1..]), 9);
        assert_eq!(runs_width(&[]), 9);
    }

    #[test]
    fn a_row_too_few_or_too_spread_to_judge_says_so() {
        // As `report` makes a row: `too_spread` from the interval.
        let row = |interval: Value, too_few| {
            let ends = interval
                .as_array()
                .map(|i| (i[0].as_f64().unwrap(), i[1].as_f64().unwrap()));
            serde_json::json!({"interval": interval, "too_few": too_few,
                               "too_spread": too_spread(ends)})
        };
        assert_eq!(too_few_mark(&row(Value::Null, true)), "  too few to judge");
        assert_eq!(too_few_mark(&row(serde_json::json!([0.9, 1.2]), false)), "");
        assert_eq!(too_few_mark(&row(serde_json::json!([0.3, 2.9]), false)), "");
        assert!(
            too_few_mark(&row(serde_json::json!([0.0, 243.62]), false)).starts_with("  too spread")
        );
        assert!(
            too_few_mark(&row(serde_json::json!([0.2, 2.5]), false)).starts_with("  too spread")
        );
        // Wide, but wholly faster or slower: judged.
        assert_eq!(
            too_few_mark(&row(serde_json::json!([0.0283, 0.293]), false)),
            ""
        );
        assert_eq!(
            too_few_mark(&row(serde_json::json!([1.5, 40.0]), false)),
            ""
        );
    }

    /// A range named in wide characters (two terminal columns each) keeps the columns after
    /// it in line with an ASCII name's, as `stats`' tables do (padded by characters, its
    /// figures stood 8 columns right: break-it pass, session 53).
    #[test]
    fn wide_names_keep_the_columns_aligned() {
        let side = || {
            annotation_json(&hrx_analysis::AnnotationStats {
                name: "x".into(),
                count: 3,
                ..Default::default()
            })
        };
        let row = |name: &str| serde_json::json!({"name": name, "status": "matched", "base": side(), "new": side()});
        let report = serde_json::json!({
            "annotations": [row("decode"), row("日本語の長い名前"), row("😀 emoji")],
        });
        let mut out = Vec::new();
        write_text(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let runs_end = |name: &str| {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            let rest = line[name.len()..].trim_start();
            let runs = rest.split(' ').next().unwrap();
            unicode_width::UnicodeWidthStr::width(&line[..line.len() - rest.len() + runs.len()])
        };
        let ends: Vec<usize> = ["decode", "日本語の長い名前", "😀 emoji"]
            .iter()
            .map(|n| runs_end(n))
            .collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?} in\n{text}");
    }

    /// Ranges that began among more capture waits than are kept are counted in the JSON and
    /// said under the annotation table, per side, as `stats` does.
    #[test]
    fn ranges_that_keep_untold_capture_waits_are_said() {
        let side = |untold| {
            annotation_json(&hrx_analysis::AnnotationStats {
                name: "main".into(),
                count: 3,
                capture_wait_untold_ranges: untold,
                ..Default::default()
            })
        };
        let text = |base: u64, new: u64| {
            let report = serde_json::json!({
                "annotations": [{"name": "main", "status": "matched",
                                 "base": side(base), "new": side(new)}],
            });
            let mut out = Vec::new();
            write_text(&mut out, &report).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(side(2)["capture_wait_untold_ranges"], 2);
        let said = text(0, 2);
        assert!(
            said.contains(
                "(ranges that began among more than 4096 earlier waits of their thread on the \
                 recorder and at capture fences: 0 in base, 2 in new; those waits inside them \
                 are not left out of their times)"
            ),
            "{said}"
        );
        assert!(!text(0, 0).contains("began among"));
    }

    /// Rows reported, not judged (annotation ranges, operations by place), too few or too
    /// spread to say faster or slower, say so without "to judge" (they never are), and why
    /// in words true of their samples: 8 ranges a side make the median's interval every
    /// sample's (a fresh user's 8 frames called four of five annotation rows `too spread to
    /// judge (unlike work under one name, or a loaded host?)`); an order of magnitude only
    /// where a side's slowest is 10 times its fastest (rows of 12 ranges a side within 3x
    /// were said to differ so), and sides of 8 and 12 as such. A kernel's row, judged, says
    /// too spread to judge, and its few runs where those are why, as the operation row over
    /// the same runs does (a break-it pass: the two gave two explanations).
    #[test]
    fn rows_not_judged_say_they_are_too_few_or_too_spread_to_compare_and_why() {
        let side = |count: u64, (min, max): (u64, u64)| {
            serde_json::json!({"count": count, "p50_ns": 1_000_000, "min_ns": min,
                               "max_ns": max})
        };
        let close = (800_000, 1_500_000);
        let row =
            |name: &str, (base, new): (u64, u64), spread: (u64, u64), (lo, hi): (f64, f64)| {
                serde_json::json!({"name": name, "status": "matched", "slow": false,
                               "ratio": 1.01, "interval": [lo, hi], "too_few": false,
                               "too_spread": too_spread(Some((lo, hi))),
                               "base": side(base, spread), "new": side(new, spread)})
            };
        let mut op = row("hrx_sobel", (8, 8), close, (0.22, 3.45));
        op["nth"] = 1.into();
        op["prepared"] = 1.into();
        op["new_region"] = 1.into();
        let once = serde_json::json!({"name": "open", "status": "matched", "slow": false,
                                      "too_few": true, "base": side(3, close),
                                      "new": side(3, close)});
        let report = serde_json::json!({
            "max_slowdown": 1.5,
            "kernels": [row("hrx_sobel", (8, 8), close, (0.22, 3.45)),
                        row("hrx_blur", (40, 40), (10_000, 900_000), (0.01, 134.0)),
                        row("hrx_scale", (12, 14), close, (0.3, 3.2))],
            "annotations": [row("scale photo", (8, 8), close, (0.22, 3.45)),
                            row("wait for a photo", (40, 40), (10_000, 900_000), (0.01, 134.0)),
                            row("decode", (12, 12), close, (0.3, 3.2)),
                            row("write", (8, 12), close, (0.3, 3.2)),
                            once],
            "operations": {"times": [op]},
        });
        let mut out = Vec::new();
        write_text(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap();
        for (row, mark) in [
            (
                "hrx_sobel ",
                "  too spread to judge: at 8 runs a side the interval spans them all",
            ),
            (
                "hrx_blur ",
                "  too spread to judge: a side's runs differ by an order of magnitude (unlike \
                 work under one name, or a loaded host?)",
            ),
            (
                "hrx_scale ",
                "  too spread to judge: at 12 and 14 runs the ratio's interval spans more than \
                 10x",
            ),
            (
                "scale photo ",
                "  too spread to compare: at 8 ranges a side the interval spans them all \
                 (reported, not judged)",
            ),
            (
                "wait for a photo ",
                "  too spread to compare: a side's ranges differ by an order of magnitude \
                 (reported, not judged)",
            ),
            (
                "decode ",
                "  too spread to compare: at 12 ranges a side the ratio's interval spans more \
                 than 10x (reported, not judged)",
            ),
            (
                "write ",
                "  too spread to compare: at 8 and 12 ranges the interval spans all 8 of a side \
                 (reported, not judged)",
            ),
            (
                "open ",
                "  too few ranges to compare (reported, not judged)",
            ),
            (
                "g1 r1 hrx_sobel ",
                "  too spread to compare: at 8 runs a side the interval spans them all \
                 (reported, not judged)",
            ),
        ] {
            assert!(line(row).ends_with(mark), "{row:?}: {text}");
        }
    }

    /// An annotation range, or an operation by place, whose ratio lies past `--max-slowdown`
    /// is marked as reported, not judged (the kernels' rows decide the verdict), never
    /// `slower` as if it were judged; a kernel so slow is `SLOW`.
    #[test]
    fn rows_that_are_not_judged_do_not_read_as_judged() {
        let stats = serde_json::json!({"count": 12, "p50_ns": 1_000_000, "p99_ns": 2_000_000});
        let slow = serde_json::json!({"name": "hrx_sobel", "status": "matched", "slow": true,
                                      "ratio": 4.29, "interval": [1.93, 8.06],
                                      "base": stats, "new": stats});
        let mut op = slow.clone();
        op["nth"] = 1.into();
        op["prepared"] = 1.into();
        op["new_region"] = 1.into();
        let mut range = slow.clone();
        range["name"] = "scale photo".into();
        let report = serde_json::json!({
            "max_slowdown": 1.5, "kernels": [slow], "annotations": [range],
            "operations": {"times": [op]},
        });
        let mut out = Vec::new();
        write_text(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap();
        assert!(
            line("hrx_sobel ").ends_with("4.29x [1.93x..8.06x]  SLOW"),
            "{text}"
        );
        for row in ["scale photo ", "g1 r1 hrx_sobel "] {
            assert!(
                line(row).ends_with("4.29x [1.93x..8.06x]  past 1.50x (reported, not judged)"),
                "{text}"
            );
        }
        assert!(!text.contains("slower"), "{text}");
    }

    /// The by-place tables say their order in their headers and keep it: operations the slow
    /// first, then by place (graph, region, node: as a graph runs); regions the worst ratio
    /// first (`--json` has them all, by place). Neither order was said, and operations went
    /// by name (`r2 download` before `r0 upload`), which read as none (fresh-user pass); a
    /// region's operations still did (`fill` before `gray`: a break-it pass).
    #[test]
    fn the_by_place_tables_say_their_order() {
        let stats = serde_json::json!({"count": 12, "p50_ns": 1000, "p99_ns": 2000});
        let op = |region: u64, node: u64, name: &str, slow: bool| {
            serde_json::json!({"name": name, "nth": 1, "prepared": 1, "new_region": region,
                               "new_node": node, "slow": slow, "ratio": 1.0,
                               "interval": [0.9, 1.1], "base": stats, "new": stats})
        };
        let place = |region: u64, label: &str, ratio: f64| {
            serde_json::json!({"prepared": 1, "region": region, "label": label,
                               "base_p50_ns": 1000, "new_p50_ns": 1000, "ratio": ratio})
        };
        let report = serde_json::json!({
            "max_slowdown": 1.5,
            "operations": {"times": [op(2, 5, "download", false), op(1, 3, "fill", false),
                                     op(1, 1, "gray", false), op(1, 2, "sobel", true),
                                     op(0, 0, "upload", false)]},
            "regions": {"matched": 3, "times": [place(0, "upload", 0.7), place(1, "gray", 0.9),
                                                place(2, "download", 0.6)]},
        });
        let mut out = Vec::new();
        write_text(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows = |header: &str| -> Vec<String> {
            (text.lines())
                .skip_while(|l| !l.starts_with(header))
                .skip(1)
                .take_while(|l| l.trim_start().starts_with("g1 "))
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .collect()
        };
        assert_eq!(
            rows("operation (slow, then place)"),
            [
                "g1 r1 sobel",
                "g1 r0 upload",
                "g1 r1 gray",
                "g1 r1 fill",
                "g1 r2 download"
            ],
            "{text}"
        );
        assert_eq!(
            rows("  region (worst ratio first)"),
            ["g1 r1 gray", "g1 r0 upload", "g1 r2 download"],
            "{text}"
        );
    }
}
