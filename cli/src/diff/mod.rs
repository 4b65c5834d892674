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
//!   from the graph (`graph 1 region 1: + hrx_foo (node 5, added)`; `#2` the graph's second of its name), one-sided; the region label
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
//!   index (the text's operation rows name base's index too, as the region rows do:
//!   `OpTimes::place`); a matched region whose label changed is *relabelled* (the graph was
//!   built differently). Each matched
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
//!   of one structure (each thread's own, over its own data) by what they computed, their
//!   outputs' and inputs' digests (`hrx_analysis::diff::Fingerprint`), whichever thread
//!   prepared first; only where those do not tell them apart by id order, with a warning
//!   where that pairs graphs that computed different things. Their xxh3 digests are compared by the rule `replay` uses too
//!   (`hrx_analysis::compare::digests`).
//! - **Memory**: both traces are streamed (`hrx_analysis::diff`): a first pass each for
//!   kernel and region durations (bounded sketches: percentiles exact up to
//!   `hrx_analysis::sketch::EXACT_LIMIT` runs, within its `RELATIVE_ERROR` past that) and the
//!   graphs' shapes, then both at once, in step by submission, matching outcomes and
//!   outputs as they arrive. Where the two submission sequences differ, a key that waited
//!   past the match window is counted one-sided and the report says how many
//!   (`streaming`, a `window` line and a reason), never silently. The report is the
//!   comparison's typed rows, borrowed, written as it is serialized (`report`, `text`): a
//!   JSON tree of every region's and operation's row took about 10 KB a region.
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
//!  "outputs": {"compared", "identical", "only_base", "only_new", "other_graphs" (pairs
//!              at one submission number made by different graphs, not compared: see
//!              `because`), "differing":
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

mod report;
mod text;

use crate::args::DiffArgs;
use crate::failure::{Failure, TraceError};
use hrx_analysis::diff::{DiffError, Profile, compare};
use hrx_capture::ShowPath;
use report::{Report, from_one};
use std::io;
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
    // which keys outputs by graph rank); graphs of one structure (each thread's own) by what
    // they computed, whichever thread prepared first.
    let aligned = hrx_analysis::diff::align_graphs(&base, &mut new);
    let reordered = aligned.moved;
    // Regions of a graph that gained or lost one paired by label, not by index.
    let realigned = hrx_analysis::diff::align_regions(&base, &mut new);
    // A graph whose changed regions were too many to pair by label says so (they were left
    // paired in order without a word: a break-it pass).
    let in_order: Vec<String> = (realigned.in_order.iter())
        .map(|((runtime, graph), (b, n))| {
            let (runtime, graph) = (from_one((*runtime).into()), from_one(*graph));
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
    // So do graphs that computed different things, yet were paired in the order they were
    // prepared (nothing recorded told them apart), once the comparison named a difference
    // that the pairing could put on the wrong one: where nothing differs, it named none (a
    // trim against another recording, whose graphs' outputs over other submissions match
    // nothing, warned though all 36 outputs were identical: a fresh user's pass).
    let differs = !(matched.differing.is_empty() && matched.changed.is_empty());
    let graphs_in_order: Vec<String> = (aligned.in_order.iter())
        .filter(|_| differs)
        .map(|(runtime, graphs)| {
            let graphs: Vec<String> = graphs.iter().map(|g| from_one(*g).to_string()).collect();
            format!(
                "graphs {} of runtime {}: of one structure, and what each computed (its \
                 outputs, its inputs) matches none of the other trace's: paired in the order \
                 they were prepared, which threads preparing them concurrently do not keep, so \
                 a difference may be named on the wrong one of them",
                graphs.join(", "),
                from_one((*runtime).into())
            )
        })
        .collect();
    for line in &graphs_in_order {
        crate::output::warn(line);
    }
    let in_order = [graphs_in_order, in_order].concat();
    let comparison = compare(&base, &new, &matched, args.max_slowdown);
    // Each side's losses under every verb's keys (`records_lost` stays).
    let lost = |p: &Profile| p.recovery.as_ref().map(|r| r.lost).unwrap_or_default();
    let mut report = Report {
        base: &args.base,
        new: &args.new,
        max_slowdown: args.max_slowdown,
        c: &comparison,
        m: &matched,
        graphs_matched_by_structure: reordered,
        regions_matched_by_label: realigned.matched,
        // A side recorded on a loaded host has host-side times that include waits for a CPU.
        host_load: [base.host_load_max, new.host_load_max],
        // What standard error warned of either trace, as the other verbs' JSON lists it.
        warnings: [Vec::from_iter(wide), base_warned, new_warned, in_order].concat(),
        lost: [lost(&base), lost(&new)],
        verdict: comparison.verdict_name(),
        exit_code: comparison.exit_code(),
        reasons: comparison.reasons.clone(),
    };
    // As replay: nothing compared is not a match (two recordings cut short before their
    // first submit would otherwise read "same" and pass a CI gate). Ranges with no
    // submission in common say so in the report (exit 2).
    let m = &matched;
    let [subs_only_base, subs_only_new] = m.submissions_one_sided;
    let held = m.outcomes_compared + m.outcomes_unknown + subs_only_base + subs_only_new;
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
    if m.outcomes_compared == 0
        && m.outcomes_unknown > 0
        && subs_only_base + subs_only_new == 0
        && report.outputs_compared() == 0
        && m.outputs_one_sided == [0, 0]
        && comparison.nothing_compared.is_none()
    {
        let line = format!(
            "{} and {} hold {} in common, none with a recorded outcome in both and no output \
             to compare: nothing compared, which is not a match",
            args.base.shown(),
            args.new.shown(),
            hrx_analysis::units::plural(m.outcomes_unknown, "submission")
        );
        if !args.json {
            return Err(Failure::new(line)
                .hint("`hrx-trace info` says which submissions end without an outcome (in flight where a trace cut short ends)")
                .into());
        }
        // The JSON report says it as its verdict, as for ranges with nothing in common.
        report.verdict = hrx_analysis::diff::NOTHING_COMPARED;
        report.exit_code = 2;
        report.reasons.insert(0, line);
    }
    // Outcomes compared and no output, as `replay` says it (diff said nothing of it: a fresh
    // user's pass, session 59): a `same` over statuses alone.
    if m.outcomes_compared > 0 && report.outputs_compared() == 0 && m.outputs_one_sided == [0, 0] {
        let line = format!(
            "no output was compared: neither trace holds an output digest (their submissions \
             wrote no output hrx digests, or digests were off); only {} {} compared",
            hrx_analysis::units::plural(m.outcomes_compared, "submission status"),
            if m.outcomes_compared == 1 {
                "was"
            } else {
                "were"
            }
        );
        crate::output::warn(&line);
        report.warnings.push(line);
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
    // Printed as it is serialized, row by row (no JSON tree of every row: see `report`).
    let printed = interruptible.print_report(&comparison_of, "", |mut out| {
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report).map_err(io::Error::from)?;
            writeln!(out)
        } else {
            text::write_text(&mut out, &report)
        }
    });
    interruptible.finished();
    let code = report.exit_code;
    crate::failure::verdict(code, printed, &format!("the report of {comparison_of}"))
}
