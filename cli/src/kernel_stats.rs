//! `hrx-trace stats FILE [--json] [--follow]`: per-kernel durations, per-queue
//! utilisation, copy bandwidth per lane, submissions, `Busy` refusals and failures.
//!
//! With `--follow` the trace may still be being written: the summary is printed again
//! each second (over the previous one on a terminal, after a `live:` line with the record
//! count and rate, `rate: measuring` on the first line, before a second count gives one;
//! one compact JSON object a line with `--json`, its `"live"` holding them, its
//! `"records_per_s"` null on the first) until the trace is closed or its recorded process
//! died of a signal (a `FatalSignal`: `live: ended: crashed: SIGSEGV`, nothing more will come), or it is
//! neither and nobody writes it any more (no recorder holds its lock and it stopped
//! growing: a recorder killed with no note of it, a file cut short; `live: ended: not
//! closed and no recorder is writing it (killed, or cut short)`), then once more in full,
//! the final report after a `live: ended: closed`, `live: ended: crashed: ...` or
//! `live: ended: not closed ...` line (with `--json`, its `"follow"` says which), exit 0;
//! or until Ctrl-C. Each refresh reads only the blocks
//! appended since the last one (`hrx_analysis::stats_follow`), and for about a second at
//! most ([`REFRESH`]): a recording written faster than it is read is summarised as far as it
//! was read, the `live:` line saying how much of the file is not read yet (`behind: 1.25 GiB
//! not read yet`; JSON `"unread_bytes"`), and the next refresh goes on from there without
//! waiting; the final report reads the rest first. A trace that does not exist yet is waited
//! for, up to 30 s, as `view --follow` waits.
//!
//! The numbers come from `hrx_analysis::stats`: one streaming pass over the memory-mapped
//! trace in bounded memory (nothing is kept per submission or region). The timeline's
//! statistics view computes the same figures the same way.
//!
//! Kernels come from the operations' own timings (`OpTiming`) where the backend recorded
//! them: one row per kernel name, and fills and copies inside native graphs under their kind
//! (`fill`, `copy`). Regions are a table of their own, by region label: a native graph of
//! several operations counts under its first kernel and the count of the others
//! (`hrx_rgb_to_gray +5`). A trace without operation timings (older traces, backends that
//! time whole regions) says so (`operations   per-operation times: none recorded; ...`)
//! and has only the region table. Durations are device spans where the backend recorded
//! them, host spans otherwise (the `clock` line says how many of each); a failed run's
//! region and operation times are left out and counted apart (`+N failed` on a region's
//! row; `+N in failed runs` on an operation's, its runs in regions that failed, whichever
//! operation failed), and so is a
//! failed copy batch's from the bandwidth. Copy batches are no kernels: they are counted in the copy
//! table, per lane (`diff` still compares their durations, as `upload`, `download` or
//! `copy`). Host callbacks (host work run by a worker thread, label `host`) are no kernels
//! either: they are their own table, count and time per label.
//!
//! Percentiles are nearest-rank: exact up to 1,024 spans of a kernel, then from a
//! log-bucketed histogram within 1/256 (0.4%) of the exact value; each kernel's `"exact"`
//! says which, and `"quantiles"` states the method. Count, total, mean, min and max are
//! always exact.
//!
//! JSON (`--json`), times in ns, bandwidth in bytes per second:
//!
//! ```text
//! {"file", "span_ns",
//!  "quantiles": {"method", "exact_up_to", "relative_error"},
//!  "operations": [{"kind", "name", "count", "total_ns", "mean_ns", "p50_ns", "p99_ns",
//!                  "min_ns", "max_ns", "exact", "failed", "device"}]: per kernel name
//!                  ("kind" "kernel") or operation kind ("fill", "copy", "scoped", "host"),
//!                  from operation timings; empty without them; "failed" counts the
//!                  operation's runs in regions that failed or were cancelled,
//!  "operation_times": {"recorded", "failed", "device", "unplaced", "native_graph_runs",
//!                      "native_graph_ops", "untimed_native_ops", "sources", "note"}:
//!                      operation timings joined to a region, those in failed or cancelled
//!                      runs (left out), those counted on the device clock, those that joined
//!                      no region, timed native-graph runs, the operations of those that
//!                      succeeded and of these the ones without a time where the trace times
//!                      some (0 otherwise); how they were timed ("Host", "BuiltinKernels",
//!                      "Cupti", "Events", "Off": format 1.16's `OpTimes`, empty in older
//!                      traces); "note" says what a trace without any lacks (null with them),
//!  "regions": [{"name", "count", "total_ns", "mean_ns", "p50_ns", "p99_ns", "min_ns",
//!               "max_ns", "exact", "failed", "device"}]: per region label of regions that
//!               are no copies or host callbacks; succeeded runs only; "failed" counts the
//!               runs that failed (the text says "+N failed" after their row); "device" how
//!               many durations are device spans (the rest host spans),
//!  "kernels": deprecated: the same rows as "regions" (region labels, not kernels),
//!             under the name schema 2 gave them; kept for older scripts, read "regions",
//!  "host_callbacks": [per label, as "regions"],
//!  "queues": [{"runtime", "queue", "spans", "busy_ns", "utilisation"}] (host clock),
//!  "copies": [{"runtime", "queue", "batches", "bytes", "busy_ns", "bytes_per_s", "device"}]:
//!            copy batches that succeeded, "device" of them timed on the device clock,
//!  "complete": whether the whole trace was read and its recorder lost nothing, "end": how
//!  it ends (`being recorded now: its end is not written yet` of one a recorder holds, as
//!  `info --json` says), "warnings": [what standard error warned of the trace, one line
//!  each, as `info --json` lists them], "signal": how a signal ended the recorded process ("crashed:
//!  SIGSEGV", "killed by SIGKILL") or null, "ended": how the trace ends where it lacks its
//!  end, as `info` and `record` say it (`hrx_analysis::info::Ending`: "crashed: SIGSEGV
//!  during submission 12, region 2 running", "never closed after 5 submissions", "trimmed
//!  from an incomplete recording (the process crashed: SIGSEGV; see range)", "being
//!  recorded now: read after 5 submissions"), else null,
//!  "lost": {"total", "lossy", "by_kind": {kind: records}, "records", "lossy_mode"}: records
//!          the recorder lost, whether the trace was recorded in lossy mode (false for a write
//!          error's losses) and by kind, under every verb's keys (`complete`, `lost.total`
//!          and `lost.lossy` are alike in `info`, `stats`, `replay` and, per side, `diff`);
//!          "records" and "lossy_mode" are "total" and "lossy" under this verb's
//!          first names, kept for older scripts; "lossy" is true for a lossy recording that
//!          lost nothing too (its writer records the mode at its first flush; a trace cut
//!          before it, or recorded before session 45, reads as lossless),
//!  "submissions": {"accepted", "ok", "failed", "cancelled", "unknown", "busy_refusals",
//!                  "other_refusals"},
//!  "failures": {"regions_failed", "regions_cancelled", "quarantines", "poisoned_buffers",
//!               "unhealthy_streams", "faults_injected"},
//!  "ranges": [the ranges of a recording the trace holds (a capture range or a trim), in
//!             words, as `info` says them; empty for a whole recording],
//!  "host_load": {"samples", "max_per_cpu", "last_per_cpu", "loaded"} (the runtimes'
//!               `hrx: host load per CPU` samples; "loaded" at 1 or more) or null,
//!  "unplaced_timings": timings that joined no region, "ends_before_start": records whose
//!  time span (host or device) ends before it starts, each counted as 0 ns long, "late_spans": spans that arrived after
//!  their lane's older busy time was retired into a sum (a loaded recording's threads can
//!  flush far out of order), counted in full, "late_ns": their time below it, by which the
//!  busy times are too high at most (their overlap with older spans, none where a queue's
//!  spans never overlap; the text report says so whenever either count is not 0),
//!  "running": [{"runtime", "submission", "region", "label", "queue", "start_ns",
//!  "submitted"}]: regions started and not finished where the trace ends: running now in a
//!  trace still being written, what a hang, a crash or a kill was in otherwise (the text says
//!  which: `running now` or `still running when the trace ends`); `submitted` false where the
//!  trace lacks the submission's `Submit` (the text: `its Submit not in the trace`),
//!  "timing_lost": [as "running"]: regions started whose timing or completion a lossy
//!  recording dropped (the trace counts lost records, and the submission's outcome was read
//!  or the trace closed cleanly): not running, and not in the figures (the text says how
//!  many),
//!  "annotations": [{"name", "count", "total_ns", "mean_ns", "p50_ns", "p99_ns", "min_ns",
//!                   "max_ns", "exact", "capture_wait_ns", "capture_wait_ranges",
//!                   "capture_wait_untold_ranges"}]: the application's ranges by name
//!                   (format 1.14), their times without the thread's waits on the recorder
//!                   and at capture fences inside them ("capture_wait_ns" in all, in
//!                   "capture_wait_ranges" ranges; "capture_wait_untold_ranges" began among
//!                   more such waits than are kept, 4,096 a thread, and keep those in),
//!  "markers": [{"name", "count"}], "counters": [{"name", "samples", "min", "max", "last"}]
//!  (values in the application's unit),
//!  "threads": [{"thread", "name", "submits", "submit_ns", "waits", "wait_ns",
//!               "host_callbacks", "host_callback_ns", "ranges", "capture_fences",
//!               "capture_fence_ns"}]: per host thread, its `submit` calls, waits that
//!  blocked, host callbacks, annotation ranges and waits at the capture fence (format 1.15)}
//!
//! The text report lists the annotations, markers, counters and host threads after the
//! failures, when the trace has any.
//! ```

use crate::args::StatsArgs;
use crate::failure::TraceError;
use hrx_analysis::sketch::{EXACT_LIMIT, RELATIVE_ERROR};
use hrx_analysis::stats_follow::{FollowError, ReadBudget, StatsTail, TailState};
use hrx_analysis::units::{bandwidth, bytes, duration, plural, rate};
use hrx_analysis::{
    KernelStats, OperationStats, RunningRegion, ScanSummary, Stats, StatsVisitor, queue_name,
};
use hrx_capture::ShowPath;
use serde_json::{Value, json};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs `stats`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]) or a write error.
pub fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    if args.follow {
        return follow(&args);
    }
    let (stats, summary, held) = load(&args.file)?;
    let report = report(&args.file, &stats, &summary, held);
    print_report(&report, args.json, |mut out, r| {
        write_text(&mut out, r, held)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The `live:` line's rate until a second count gives one (`stats --follow`'s first line).
const RATE_MEASURING: &str = "rate: measuring";

/// How long `stats --follow` waits for a trace that does not exist yet (as `view --follow`).
const FOLLOW_WAIT: Duration = Duration::from_secs(30);

/// How often `stats --follow` prints, and how long one refresh reads at most before it
/// prints what it has (a recording may be written faster than it is read).
const REFRESH: Duration = Duration::from_secs(1);

/// `stats --follow`: a summary each second, read one new block at a time, until the trace
/// is closed or its program crashed; then the final report (see the module docs).
fn follow(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let terminal = io::stdout().is_terminal();
    let path = &args.file;
    let fail = |error: FollowError| follow_error(path, error);
    let mut tail = wait_for_trace(path, FOLLOW_WAIT)?;
    // A new recording to the same path: said once each time, then followed from its start.
    let read_new = |tail: &mut StatsTail, budget: ReadBudget| -> anyhow::Result<()> {
        let restarts = tail.restarts();
        tail.read_new_within(budget).map_err(fail)?;
        if tail.restarts() > restarts {
            crate::output::note(format_args!(
                "{}: a new recording replaced the trace; following it from its start",
                path.shown()
            ));
        }
        Ok(())
    };
    let mut last: Option<(Instant, u64)> = None;
    loop {
        if tail.state() != TailState::Live {
            // The final report covers the whole file: what the last refresh left is read now.
            if tail.unread_bytes() > 0 {
                read_new(&mut tail, ReadBudget::UNBOUNDED)?;
            }
            if tail.state() == TailState::Closed {
                // The session end is written before the footer and trailer: give the recorder
                // a moment to finish them, so that the final report says how the file ends.
                let deadline = Instant::now() + Duration::from_secs(5);
                while tail.state() == TailState::Closed
                    && !tail.recovery().closed
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(100));
                    read_new(&mut tail, ReadBudget::UNBOUNDED)?;
                }
            }
            // A final read that found a new recording in the file (written again in place)
            // follows that one.
            if tail.state() != TailState::Live {
                break;
            }
            continue;
        }
        let (stats, summary) = tail.snapshot();
        let now = Instant::now();
        let records = tail.records();
        // A rate needs two counts: the first line has none yet (it read `0 records/s`, as if
        // the recording had stalled).
        let per_s = last.map(|(then, before): (Instant, u64)| {
            records.saturating_sub(before) as f64 / now.duration_since(then).as_secs_f64()
        });
        last = Some((now, records));
        // A live line is of a recording being written while a recorder holds the file, or
        // while the follower has not read to its end: a cut or killed trace read whole was
        // "being recorded now" until the watch concluded that nobody writes it (two probes a
        // second apart), and a closed one not yet read to its end is not "never closed"
        // (break-it passes, session 58).
        let live = tail.being_recorded() || tail.unread_bytes() > 0;
        let report = report(path, &stats, &summary, live);
        let unread = tail.unread_bytes();
        let mut out = crate::output::stdout();
        if args.json {
            let mut line = report;
            line["live"] = json!({
                "records": records,
                "records_per_s": per_s,
                "unread_bytes": unread,
                "recorded_again": tail.recorded_again(),
            });
            serde_json::to_writer(&mut out, &crate::output::versioned(line))
                .map_err(io::Error::from)?;
            writeln!(out)?;
        } else {
            if terminal {
                // Home and clear: each summary replaces the last.
                write!(out, "\x1b[H\x1b[2J")?;
            }
            let behind = match unread {
                0 => String::new(),
                n => format!(", behind: {} not read yet", bytes(n)),
            };
            // Its path names a newer recording now: this one is read to its end.
            let until = if tail.recorded_again() {
                "recorded again: reading the earlier recording to its end"
            } else {
                "refreshed each second until the trace is closed"
            };
            writeln!(
                out,
                "live: {records} records, {}{behind} ({until}; Ctrl-C stops)\n",
                per_s.map_or_else(|| RATE_MEASURING.to_owned(), |r| rate(r, "records"))
            )?;
            write_text(&mut out, &report, true)?;
            writeln!(out)?;
        }
        out.flush()?;
        drop(out);
        // Behind the recording: the next refresh reads on at once, for one period.
        if unread == 0 {
            std::thread::sleep(REFRESH);
        }
        read_new(&mut tail, ReadBudget::refresh(Instant::now() + REFRESH))?;
    }
    let state = tail.state();
    let records = tail.records();
    // The follower read the recording it opened to its end: a new one at the path since
    // is not in this report.
    let recorded_again = tail.recorded_again();
    if recorded_again {
        crate::output::note(format_args!(
            "{0} was recorded again while it was followed; this report is of the earlier \
             recording (read {0} again for the new one)",
            path.shown()
        ));
    }
    // Whether a recorder still writes the recording followed (the loop ends once it is
    // over, so only one found written again in place and followed anew): asked of the file
    // read, not of the path, which names the new recording when it was recorded again (an
    // earlier recording killed, then recorded again, was "being recorded now (a recorder
    // holds it)" under a report that said it ended with nobody writing it).
    let held = state == TailState::Live && tail.being_recorded();
    let (stats, summary) = tail.finish();
    crate::failure::warn_partial_as(
        path,
        &summary.warnings,
        summary.recovery.as_ref(),
        "these figures cover only what was recovered",
        || held,
    );
    let mut report = report(path, &stats, &summary, held);
    let ended = match state {
        TailState::Crashed(fatal) => fatal.describe(),
        TailState::Unclosed => hrx_capture::UNCLOSED_ENDING.to_owned(),
        _ => "closed".to_owned(),
    };
    if args.json {
        report["follow"] = json!({
            "records": records,
            "ended": ended,
            "recorded_again": recorded_again,
        });
    } else {
        let mut out = crate::output::stdout();
        if terminal {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        writeln!(
            out,
            "live: ended: {ended} ({records} records; the final report follows)\n"
        )?;
    }
    if args.json {
        // One object a line, as the live snapshots before it: a line reader reads it too.
        let mut out = crate::output::stdout();
        serde_json::to_writer(&mut out, &crate::output::versioned(report))
            .map_err(io::Error::from)?;
        writeln!(out)?;
        out.flush()?;
    } else {
        print_report(&report, args.json, |mut out, r| {
            write_text(&mut out, r, held)
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A followed trace's error as every verb tells a trace's ([`TraceError`]).
fn follow_error(path: &Path, error: FollowError) -> anyhow::Error {
    match error {
        FollowError::Read(error) => TraceError {
            path: path.to_owned(),
            error,
        }
        .into(),
        other => other.into(),
    }
}

/// Opens `path` for following, waiting up to `wait` while it does not exist yet or is
/// shorter than a header (the recording may be starting), as `view --follow` does.
///
/// # Errors
///
/// The trace's error; where it gave up waiting, one line that says so first (`gave up
/// waiting 30 s for PATH to be written: PATH: cannot open it: ...`).
fn wait_for_trace(path: &Path, wait: Duration) -> anyhow::Result<StatsTail> {
    let open =
        |path: &Path| StatsTail::open_within(path, ReadBudget::refresh(Instant::now() + REFRESH));
    hrx_capture::wait_for_trace(path, wait, open).map_err(|w| {
        let gave_up = w.gave_up(path);
        let error = follow_error(path, w.error);
        match gave_up {
            Some(line) => error.context(line),
            None => error,
        }
    })
}

/// Prints a verb's report to stdout: pretty JSON with `json` (with its `schema_version`),
/// else as `text` writes it.
///
/// # Errors
///
/// A write error (a closed stdout included).
pub fn print_report(
    report: &Value,
    json: bool,
    text: impl FnOnce(&mut dyn Write, &Value) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = crate::output::stdout();
    print_report_to(&mut out, report, json, text)?;
    out.flush()
}

/// [`print_report`] into `out`.
///
/// # Errors
///
/// The writes'.
pub fn print_report_to(
    mut out: &mut dyn Write,
    report: &Value,
    json: bool,
    text: impl FnOnce(&mut dyn Write, &Value) -> io::Result<()>,
) -> io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut out, &crate::output::versioned(report.clone()))
            .map_err(io::Error::from)?;
        writeln!(out)
    } else {
        text(out, report)
    }
}

/// Reads a trace's statistics in one streaming pass, and whether a recorder held the trace
/// as the read began.
///
/// # Errors
///
/// [`TraceError`] when the trace cannot be read.
///
/// A damaged or cut-short trace is read as far as it was recovered; its reader warnings and
/// how it ends go to standard error, one `warning:` line each, so that numbers from part of
/// a trace are never mistaken for the whole.
pub fn load(path: &Path) -> anyhow::Result<(Stats, ScanSummary, bool)> {
    let mut visitor = StatsVisitor::new();
    let (summary, held) =
        crate::record::read_while_held(path, || hrx_analysis::scan(path, &mut visitor));
    let summary = summary.map_err(|error| TraceError {
        path: path.to_path_buf(),
        error,
    })?;
    crate::failure::warn_partial_as(
        path,
        &summary.warnings,
        summary.recovery.as_ref(),
        "these figures cover only what was recovered",
        || held,
    );
    // Records of submissions the trace lacks, as `info` and `export` say them.
    crate::info::warn_unjoined(path, summary.unjoined());
    Ok((visitor.finish(&summary), summary, held))
}

/// One kernel's durations as JSON.
pub fn kernel_json(k: &KernelStats) -> Value {
    json!({
        "name": k.name, "count": k.count, "total_ns": k.total_ns, "mean_ns": k.mean_ns,
        "p50_ns": k.p50_ns, "p99_ns": k.p99_ns, "min_ns": k.min_ns, "max_ns": k.max_ns,
        "exact": k.exact, "failed": k.failed, "device": k.device,
    })
}

/// One operation name's durations as JSON: its kind, then its row as a kernel's.
pub fn operation_json(o: &OperationStats) -> Value {
    let mut row = kernel_json(&o.stats);
    if let Some(map) = row.as_object_mut() {
        map.insert("kind".to_owned(), json!(o.kind));
    }
    row
}

/// What a trace without operation timings lacks, in words (`None` with them).
pub fn operation_times_note(stats: &Stats) -> Option<&'static str> {
    stats.operation_times_note()
}

/// Every statistic as JSON (the shape in the module docs); `live`: a recorder held the
/// trace as it was read, and its `warnings` say so, as standard error does.
pub fn report(path: &Path, stats: &Stats, summary: &ScanSummary, live: bool) -> Value {
    let queues: Vec<Value> = stats
        .lanes
        .iter()
        .map(|l| {
            json!({
                "runtime": l.runtime.0, "queue": queue_name(l.queue),
                "spans": l.spans, "busy_ns": l.busy_ns, "utilisation": l.utilisation,
            })
        })
        .collect();
    let copies: Vec<Value> = stats
        .copies
        .iter()
        .map(|c| {
            json!({
                "runtime": c.runtime.0, "queue": queue_name(c.queue),
                "batches": c.batches, "bytes": c.bytes, "busy_ns": c.busy_ns,
                "bytes_per_s": c.bytes_per_s, "device": c.device,
            })
        })
        .collect();
    let s = &stats.submissions;
    let f = &stats.failures;
    let o = &stats.op_times;
    let recovery = summary.recovery.as_ref();
    let lost = recovery.map(|r| r.lost).unwrap_or_default();
    // Every verb's `total`, `lossy` and `by_kind`, and this verb's first names for them
    // (`records`, `lossy_mode`), kept for the scripts that read them.
    let mut lost_said = crate::info::lost_json(&lost);
    lost_said["records"] = lost.total.into();
    lost_said["lossy_mode"] = lost.lossy.into();
    let waits = recovery.map(|r| r.waits).unwrap_or_default();
    json!({
        "file": path.display().to_string(),
        "complete": crate::info::complete(recovery),
        // A trace being recorded is not "not closed cleanly" (`info --json` says the same).
        "end": recovery.map(|r| r.end_as(live)),
        // What standard error warned, as `info --json` lists it: the reader's warnings (damage,
        // parts of a newer format skipped), how the trace ends and the records it lost.
        "warnings": summary
            .warnings
            .iter()
            .filter(|w| crate::failure::said(w, live && recovery.is_some_and(|r| !r.is_complete())))
            .map(|w| crate::failure::one_line(&w.to_string()))
            .chain(crate::info::unjoined_line(summary.unjoined()))
            .chain(
                recovery
                    .map(|r| crate::failure::lacks_as(r, || live))
                    .unwrap_or_default(),
            )
            .collect::<Vec<_>>(),
        "signal": summary.fatal.map(|f| f.describe()),
        // How the trace ends where that is news (a signal and where, never closed, or
        // trimmed from an incomplete recording), as `info`'s `capture` line and `record`'s
        // `ended` line say it.
        "ended": summary.ending(&stats.ranges, live).map(|e| e.to_string()),
        "lost": lost_said,
        "recorder_waits": {
            "count": waits.count, "total_ns": waits.total_ns, "max_ns": waits.max_ns,
            "threads": waits.threads, "in_regions": waits.in_regions,
        },
        "span_ns": stats.span_ns,
        "quantiles": {
            "method": "nearest rank; exact up to exact_up_to spans of a kernel, else a \
                       log-bucketed histogram within relative_error",
            "exact_up_to": EXACT_LIMIT,
            "relative_error": RELATIVE_ERROR,
        },
        "operations": stats.operations.iter().map(operation_json).collect::<Vec<_>>(),
        "operation_times": {
            "recorded": o.recorded, "failed": o.failed, "device": o.device,
            "unplaced": o.unplaced, "native_graph_runs": o.native_graph_runs,
            "native_graph_ops": o.native_graph_ops, "untimed_native_ops": o.untimed_native_ops(),
            "sources": stats.op_time_sources.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>(),
            "note": operation_times_note(stats),
        },
        "regions": stats.kernels.iter().map(kernel_json).collect::<Vec<_>>(),
        // Deprecated (the rows are regions): kept for scripts written against schema 2's
        // first form, which read region rows here.
        "kernels": stats.kernels.iter().map(kernel_json).collect::<Vec<_>>(),
        "host_callbacks": stats.host_callbacks.iter().map(kernel_json).collect::<Vec<_>>(),
        "queues": queues,
        "copies": copies,
        "submissions": {
            "accepted": s.accepted,
            "ok": s.ok,
            "failed": s.failed,
            "cancelled": s.cancelled,
            "unknown": s.unknown,
            "busy_refusals": s.busy_refusals,
            "other_refusals": s.other_refusals,
        },
        "failures": {
            "regions_failed": f.regions_failed,
            "regions_cancelled": f.regions_cancelled,
            "quarantines": f.quarantines,
            "poisoned_buffers": f.poisoned_buffers,
            "unhealthy_streams": f.unhealthy_streams,
            "faults_injected": f.faults_injected,
        },
        "unplaced_timings": stats.unplaced_timings,
        "ends_before_start": summary.ends_before_start,
        "ranges": ranges(stats),
        "host_load": host_load(stats),
        "late_spans": stats.late_spans,
        "late_ns": stats.late_ns,
        "running": running_json(summary, &summary.running),
        "timing_lost": running_json(summary, &summary.timing_lost),
        "annotations": stats.annotations,
        "markers": stats.markers,
        "counters": stats.counters,
        "threads": stats.threads,
    })
}

/// The ranges of a recording the trace holds, in words (as `info` says them): a trim or a
/// capture range lacks the submissions outside them.
fn ranges(stats: &Stats) -> Vec<String> {
    let mut runtimes: Vec<_> = stats.ranges.iter().map(|r| r.runtime).collect();
    runtimes.dedup();
    stats
        .ranges
        .iter()
        .map(|r| hrx_analysis::info::range_text(r, runtimes.len() > 1))
        .collect()
}

/// The runtimes' samples of the host's load per CPU (`hrx: host load per CPU`, at their
/// starts and ends), as JSON: `loaded` at 1 or more, when host-side times include waits for
/// a CPU; `null` without samples.
fn host_load(stats: &Stats) -> Value {
    let load = stats
        .counters
        .iter()
        .find(|c| c.name == hrx_capture::schema::HOST_LOAD_COUNTER);
    load.map_or(Value::Null, |c| host_load_value(c.samples, c.max, c.last))
}

/// The JSON `host_load` of `samples` samples of the host's load per CPU, the highest `max`
/// and the latest `last`: `stats`' and `info`'s one shape (`{"samples", "max_per_cpu",
/// "last_per_cpu", "loaded"}`, `loaded` at 1 or more; `info` adds its older keys).
pub(crate) fn host_load_value(samples: u64, max: f64, last: f64) -> Value {
    json!({
        "samples": samples, "max_per_cpu": max, "last_per_cpu": last,
        "loaded": max >= 1.0,
    })
}

/// Regions started and never timed (still running when the trace ends, or whose timing
/// was lost), as JSON.
fn running_json(summary: &ScanSummary, regions: &[RunningRegion]) -> Vec<Value> {
    let index = &summary.index;
    regions
        .iter()
        .map(|r| {
            let (label, queue) = match r.region_ref {
                Some(region) => (
                    index
                        .label(region)
                        .map(|l| index.labels()[l.0 as usize].clone()),
                    Some(queue_name(index.region(region).queue)),
                ),
                None => (None, None),
            };
            json!({
                "runtime": r.runtime.0, "submission": r.submission.0, "region": r.region.0,
                "label": label, "queue": queue, "start_ns": r.start_ns,
                "submitted": r.ordinal.is_some(),
            })
        })
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The text report of `r` (the JSON [`report`] made); `live`: a recorder held the trace as
/// it was read.
fn write_text(out: &mut impl Write, r: &Value, live: bool) -> io::Result<()> {
    // Names as the trace holds them, escaped: no terminal control from a trace.
    let printable = crate::output::printable(r);
    let r = &printable;
    writeln!(out, "{:<12} {}", "file", r["file"].as_str().unwrap_or(""))?;
    writeln!(out, "{:<12} {}", "span", duration(u(&r["span_ns"])))?;
    // How the recorded process ended, where a signal ended it, and where the trace ends, as
    // `info` and `record`'s summary say (it said the signal alone).
    if let Some(ended) = r["ended"].as_str() {
        writeln!(out, "{:<12} {ended}", "ended")?;
    }
    // A range of a recording lacks the submissions outside it, as `info` says.
    for range in r["ranges"].as_array().into_iter().flatten() {
        let range = range.as_str().unwrap_or("");
        // The state snapshot is bytes, not submissions: no cover of figures to say (a whole
        // recording's read "range  state snapshot: ...: these figures cover the range's
        // submissions only").
        if let Some(snapshot) = range.strip_prefix(crate::info::SNAPSHOT) {
            writeln!(out, "{:<12} {snapshot}", "snapshot")?;
            continue;
        }
        writeln!(
            out,
            "{:<12} {range}: these figures cover the range's submissions only",
            "range",
        )?;
    }
    let load = &r["host_load"];
    if load["loaded"].as_bool() == Some(true) {
        // Where the trace holds one sample (it ends before a runtime's end), it says so,
        // as `info` does: "at the runtimes' starts and ends" claimed an end sample it lacks.
        let when = match u(&load["samples"]) {
            1 => "at its one sample, no later one",
            _ => "at the runtimes' starts and ends",
        };
        writeln!(
            out,
            "{:<12} loaded: up to {} (1-minute average, {when}): host-side times include \
             waits for a CPU",
            "host load",
            hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(
                load["max_per_cpu"].as_f64().unwrap_or(0.0)
            ))
        )?;
    }
    let lost = &r["lost"];
    if u(&lost["records"]) > 0 {
        // Largest first, as `info`, `record` and every warning list them (the JSON object
        // came alphabetically: a fresh user's pass).
        let mut kinds: Vec<(&str, u64)> = (lost["by_kind"].as_object().into_iter().flatten())
            .map(|(kind, n)| (kind.as_str(), u(n)))
            .collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let kinds: Vec<String> = (kinds.into_iter())
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        writeln!(
            out,
            "{:<12} {} records lost while recording ({}): these figures miss them",
            "lost",
            u(&lost["records"]),
            kinds.join(", ")
        )?;
    } else if lost["lossy_mode"].as_bool() == Some(true) {
        // A lossy recording that lost nothing, in every other verb's words (the text said
        // nothing of the mode, only `--json` did: a fresh user's pass).
        let mut said = hrx_capture::Lost::default();
        said.lossy = true;
        writeln!(out, "{:<12} {}", "lost", said.said().unwrap_or_default())?;
    }
    let waits = &r["recorder_waits"];
    if u(&waits["count"]) > 0 {
        writeln!(
            out,
            "{:<12} {} on the recorder, {} in all, longest {}",
            "waited",
            hrx_analysis::units::plural(u(&waits["count"]), "wait"),
            duration(u(&waits["total_ns"])),
            duration(u(&waits["max_ns"]))
        )?;
    }
    // Figures these spans could not enter exactly are said, not hidden in the tables.
    let unplaced = u(&r["unplaced_timings"]);
    if unplaced > 0 {
        writeln!(
            out,
            "{:<12} {} joined no submission (a submit missing or far out of order): the \
             kernel and queue figures leave them out",
            "unplaced",
            plural(unplaced, "region timing")
        )?;
    }
    let backwards = u(&r["ends_before_start"]);
    if backwards > 0 {
        writeln!(
            out,
            "{:<12} {backwards} {} (crafted or damaged times): each counted as 0 ns long",
            "backwards",
            if backwards == 1 {
                "span or range ends before it starts"
            } else {
                "spans or ranges end before they start"
            }
        )?;
    }
    // The runtime named where the trace has several, as the `ended` line names it.
    let runtimes: std::collections::BTreeSet<u64> = (r["queues"].as_array().into_iter())
        .chain(r["running"].as_array())
        .flatten()
        .filter_map(|row| row["runtime"].as_u64())
        .collect();
    for running in r["running"].as_array().into_iter().flatten() {
        let runtime = match runtimes.len() {
            0 | 1 => String::new(),
            _ => format!("runtime {} ", u(&running["runtime"])),
        };
        let what = match (running["label"].as_str(), running["queue"].as_str()) {
            (Some(label), Some(queue)) => format!(" ({label} on {queue})"),
            // Said as `info` and the timeline say it (a fresh user's pass found only the
            // timeline did).
            _ if running["submitted"] == false => " (its Submit not in the trace)".to_owned(),
            _ => String::new(),
        };
        // Running now only where a recorder writes the trace; else, as `view` and the
        // exports say it, still running when it ends (a killed recording's last submission
        // read "running now", a fresh user's pass).
        let state = hrx_analysis::running_state(live);
        writeln!(
            out,
            "{:<12} {runtime}submission {}, region {}{what}: started at {}, {state}",
            "running",
            u(&running["submission"]),
            u(&running["region"]),
            duration(u(&running["start_ns"]))
        )?;
    }
    let timing_lost = r["timing_lost"].as_array().map_or(0, Vec::len);
    if timing_lost > 0 {
        writeln!(
            out,
            "{:<12} {}: timing lost (records dropped): started, then their timing or \
             completion was lost (dropped by a lossy recording, or not written before the \
             recording was cut short); not running, and not in the figures",
            "timing lost",
            plural(timing_lost as u64, "region")
        )?;
    }
    let late = u(&r["late_spans"]);
    if late > 0 {
        writeln!(
            out,
            "{:<12} {late} spans arrived after their queue's older busy time was summed (a \
             recording thread far behind the others): counted in full, so busy time and \
             utilisation may be too high by their overlap with older spans, at most {} (none \
             where a queue's spans never overlap)",
            "late",
            duration(u(&r["late_ns"]))
        )?;
    }
    let o = &r["operation_times"];
    match o["note"].as_str() {
        Some(note) => writeln!(out, "{:<12} {note}", "operations")?,
        None => {
            let left_out = match u(&o["failed"]) {
                0 => String::new(),
                n => format!("; {n} in failed or cancelled runs left out"),
            };
            let unplaced = match u(&o["unplaced"]) {
                0 => String::new(),
                n => format!("; {n} joined no region"),
            };
            let sources: Vec<&str> = o["sources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str())
                .collect();
            let untimed = match u(&o["untimed_native_ops"]) {
                0 => String::new(),
                n => format!(
                    "; {n} of the {} operations of native-graph runs that succeeded have no \
                     time ({})",
                    u(&o["native_graph_ops"]),
                    if sources.contains(&"BuiltinKernels") {
                        "only hrx's built-in kernels time themselves; copies, fills and other \
                         kernels are timed with record --kernel-times"
                    } else {
                        "their timings are not in the trace"
                    }
                ),
            };
            let how = sources
                .iter()
                .filter_map(|name| source_words(name))
                .collect::<Vec<_>>()
                .join("; ");
            let how = if how.is_empty() {
                how
            } else {
                format!(" ({how})")
            };
            writeln!(
                out,
                "{:<12} {} timed{how}{left_out}{unplaced}{untimed}",
                "operations",
                u(&o["recorded"]).saturating_sub(u(&o["failed"])),
            )?;
        }
    }
    // Which clock the durations are on, where any is a device span.
    let device = |rows: &Value| -> (u64, u64) {
        rows.as_array()
            .into_iter()
            .flatten()
            .fold((0, 0), |(d, n), k| {
                (d + u(&k["device"]), n + u(&k["count"]))
            })
    };
    let copies = r["copies"].as_array().into_iter().flatten();
    let (copy_device, batches) = copies.fold((0, 0), |(d, n), c| {
        (d + u(&c["device"]), n + u(&c["batches"]))
    });
    let note = hrx_analysis::stats::clock_note(
        device(&r["operations"]),
        device(&r["regions"]),
        (copy_device, batches),
    );
    if let Some(note) = note {
        writeln!(out, "{:<12} {note}", "clock")?;
    }
    let header = |out: &mut dyn Write, what: &str| {
        writeln!(
            out,
            "\n{:<28} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11}",
            what, "count", "total", "mean", "p50", "p99", "max"
        )
    };
    // Failed runs are not in the durations: said after them, `failed` as what they are (a
    // region failed; an operation ran in a region that failed, whichever operation did).
    let durations = |out: &mut dyn Write, rows: &Value, failed: &str| -> io::Result<()> {
        for k in rows.as_array().into_iter().flatten() {
            let failed = match u(&k["failed"]) {
                0 => String::new(),
                n => format!("  +{n} {failed}"),
            };
            // A row whose every run failed has no durations: dashes, not 0 ns.
            let time = |field: &str| match u(&k["count"]) {
                0 => "-".to_owned(),
                _ => duration(u(&k[field])),
            };
            writeln!(
                out,
                "{} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11}{failed}",
                crate::output::padded(k["name"].as_str().unwrap_or(""), 28),
                u(&k["count"]),
                time("total_ns"),
                time("mean_ns"),
                time("p50_ns"),
                time("p99_ns"),
                time("max_ns"),
            )?;
        }
        Ok(())
    };
    // Kernels by name from their own timings (none without them), then regions by label.
    if r["operations"].as_array().is_some_and(|o| !o.is_empty()) {
        header(out, "kernel")?;
        durations(out, &r["operations"], "in failed runs")?;
        let mut operations = r["operations"].as_array().into_iter().flatten();
        if operations.any(|k| u(&k["failed"]) > 0) {
            writeln!(
                out,
                "\n(+N in failed runs: runs of the operation in regions that failed or were \
                 cancelled, left out of its times, whichever operation of the region failed)"
            )?;
        }
    }
    // A trace without native work (copies only, say) has no region rows: no empty table.
    if r["regions"].as_array().is_some_and(|o| !o.is_empty()) {
        header(out, "region")?;
        durations(out, &r["regions"], "failed")?;
    }
    // Host work run by worker threads: no kernel, its own rows (none without any).
    if r["host_callbacks"]
        .as_array()
        .is_some_and(|h| !h.is_empty())
    {
        header(out, "host callback")?;
        durations(out, &r["host_callbacks"], "failed")?;
    }
    writeln!(
        out,
        "\n{:<16} {:>7} {:>11} {:>12}",
        "queue", "spans", "busy", "utilisation"
    )?;
    for q in r["queues"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "{:<16} {:>7} {:>11} {:>11.1}%",
            format!(
                "r{} {}",
                u(&q["runtime"]),
                q["queue"].as_str().unwrap_or("")
            ),
            u(&q["spans"]),
            duration(u(&q["busy_ns"])),
            q["utilisation"].as_f64().unwrap_or(0.0) * 100.0
        )?;
    }
    writeln!(
        out,
        "\n{:<16} {:>7} {:>11} {:>11} {:>12}",
        "copies", "batches", "bytes", "busy", "bandwidth"
    )?;
    for c in r["copies"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "{:<16} {:>7} {:>11} {:>11} {:>12}",
            format!(
                "r{} {}",
                u(&c["runtime"]),
                c["queue"].as_str().unwrap_or("")
            ),
            u(&c["batches"]),
            bytes(u(&c["bytes"])),
            duration(u(&c["busy_ns"])),
            bandwidth(c["bytes_per_s"].as_f64().unwrap_or(0.0)),
        )?;
    }
    let s = &r["submissions"];
    writeln!(
        out,
        "\n{:<12} {} accepted: {} ok, {} failed, {} cancelled, {} unknown; {} refused busy, {} refused otherwise",
        "submissions",
        u(&s["accepted"]),
        u(&s["ok"]),
        u(&s["failed"]),
        u(&s["cancelled"]),
        u(&s["unknown"]),
        u(&s["busy_refusals"]),
        u(&s["other_refusals"]),
    )?;
    let f = &r["failures"];
    writeln!(
        out,
        "{:<12} regions {} failed, {} cancelled; {}, {}, {}, {} injected",
        "failures",
        u(&f["regions_failed"]),
        u(&f["regions_cancelled"]),
        plural(u(&f["quarantines"]), "quarantine"),
        plural(u(&f["poisoned_buffers"]), "poisoned buffer"),
        plural(u(&f["unhealthy_streams"]), "unhealthy stream"),
        plural(u(&f["faults_injected"]), "fault"),
    )?;
    write_annotations(out, r)
}

/// The application's annotations and the host threads (format 1.14), when there are any.
fn write_annotations(out: &mut dyn Write, r: &Value) -> io::Result<()> {
    let rows = |key: &str| r[key].as_array().cloned().unwrap_or_default();
    let ranges = rows("annotations");
    if !ranges.is_empty() {
        writeln!(
            out,
            "\n{:<28} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "annotation", "count", "total", "mean", "p50", "p99", "max"
        )?;
        for a in &ranges {
            writeln!(
                out,
                "{} {:>7} {:>11} {:>11} {:>11} {:>11} {:>11}",
                crate::output::padded(a["name"].as_str().unwrap_or(""), 28),
                u(&a["count"]),
                duration(u(&a["total_ns"])),
                duration(u(&a["mean_ns"])),
                duration(u(&a["p50_ns"])),
                duration(u(&a["p99_ns"])),
                duration(u(&a["max_ns"])),
            )?;
        }
        // Capture work inside the ranges, left out of their times: said, never silent.
        let (left_out, held) = ranges.iter().fold((0, 0), |(ns, n), a| {
            (
                ns + u(&a["capture_wait_ns"]),
                n + u(&a["capture_wait_ranges"]),
            )
        });
        if left_out > 0 {
            writeln!(
                out,
                "(times leave out {} of waits on the trace recorder and at capture fences \
                 inside {})",
                duration(left_out),
                plural(held, "range")
            )?;
        }
        let untold: u64 = ranges
            .iter()
            .map(|a| u(&a["capture_wait_untold_ranges"]))
            .sum();
        if untold > 0 {
            writeln!(
                out,
                "({} began among more than {} earlier waits of their thread on the recorder \
                 and at capture fences: those inside them are not left out of their times)",
                plural(untold, "range"),
                hrx_analysis::stats::CAPTURE_WAITS_KEPT
            )?;
        }
    }
    let markers = rows("markers");
    if !markers.is_empty() {
        writeln!(out, "\n{:<28} {:>7}", "marker", "count")?;
        for m in &markers {
            let name = m["name"].as_str().unwrap_or("");
            writeln!(
                out,
                "{} {:>7}",
                crate::output::padded(name, 28),
                u(&m["count"])
            )?;
        }
    }
    let counters = rows("counters");
    if !counters.is_empty() {
        writeln!(
            out,
            "\n{:<28} {:>7} {:>11} {:>11} {:>11}",
            "counter", "samples", "min", "max", "last"
        )?;
        // JSON has no infinity or NaN (serde_json writes null): `-` here, said below. Huge
        // and tiny values in exponent form (1e308 was 309 digits; a break-it pass).
        let mut non_finite = false;
        let mut value = |v: &Value| match v.as_f64() {
            None => {
                non_finite = true;
                "-".to_owned()
            }
            Some(x) if x != 0.0 && !(1e-6..1e12).contains(&x.abs()) => format!("{x:e}"),
            Some(x) => format!("{x}"),
        };
        for c in &counters {
            writeln!(
                out,
                "{} {:>7} {:>11} {:>11} {:>11}",
                crate::output::padded(c["name"].as_str().unwrap_or(""), 28),
                u(&c["samples"]),
                value(&c["min"]),
                value(&c["max"]),
                value(&c["last"]),
            )?;
        }
        if non_finite {
            writeln!(out, "(-: not a finite number, null in --json)")?;
        }
    }
    let threads = rows("threads");
    if !threads.is_empty() {
        writeln!(
            out,
            "\n{:<20} {:>8} {:>11} {:>7} {:>11} {:>9} {:>11} {:>7} {:>7} {:>11}",
            "host thread",
            "submits",
            "in submit",
            "waits",
            "waiting",
            "callbacks",
            "in callback",
            "ranges",
            "fences",
            "at fence"
        )?;
        for t in &threads {
            writeln!(
                out,
                "{} {:>8} {:>11} {:>7} {:>11} {:>9} {:>11} {:>7} {:>7} {:>11}",
                crate::output::padded(t["name"].as_str().unwrap_or(""), 20),
                u(&t["submits"]),
                duration(u(&t["submit_ns"])),
                u(&t["waits"]),
                duration(u(&t["wait_ns"])),
                u(&t["host_callbacks"]),
                duration(u(&t["host_callback_ns"])),
                u(&t["ranges"]),
                u(&t["capture_fences"]),
                duration(u(&t["capture_fence_ns"])),
            )?;
        }
    }
    Ok(())
}

/// The words for an operation-time method named as `stats --json` names it (`"Cupti"`, ...).
fn source_words(name: &str) -> Option<&'static str> {
    use hrx_capture::schema::OpTimeSource as S;
    [S::Off, S::Host, S::BuiltinKernels, S::Cupti, S::Events]
        .into_iter()
        .find(|s| format!("{s:?}") == name)
        .map(S::describe)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timings that joined nothing and spans that came too late for the exact union are
    /// named in the text report, as the JSON has them; a report with neither says nothing.
    #[test]
    fn unplaced_timings_and_late_spans_are_said_in_the_text_report() {
        let text = |report: &Value| {
            let mut out = Vec::new();
            write_text(&mut out, report, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        let clean = text(&serde_json::json!({"file": "t.hrxt", "span_ns": 1000}));
        assert!(
            !clean.contains("unplaced") && !clean.contains("late "),
            "{clean}"
        );
        let report = serde_json::json!({
            "file": "t.hrxt", "span_ns": 1000, "unplaced_timings": 431, "late_spans": 923,
            "late_ns": 5_000_000,
        });
        let said = text(&report);
        assert!(
            said.lines()
                .any(|l| l.starts_with("unplaced     431 region timings")),
            "{said}"
        );
        assert!(
            said.lines()
                .any(|l| l.starts_with("late         923 spans") && l.contains("at most 5")),
            "{said}"
        );
    }

    /// `stats --follow` of a trace never written says so in one error line: it printed a
    /// `gave up waiting` line of its own and then the open error, read as two failures.
    #[test]
    fn a_trace_never_written_is_one_error_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("never.hrxt");
        // Long enough to wait once (each try is 100 ms apart).
        let error = wait_for_trace(&path, Duration::from_millis(150))
            .err()
            .unwrap();
        let said = format!("{error:#}");
        assert!(
            said.starts_with(&format!(
                "gave up waiting 0 s for {0} to be written: {0}: cannot open it:",
                path.display()
            )),
            "{said}"
        );
        assert!(error.chain().any(|c| c.is::<TraceError>()));
        // A file that is there but no trace fails at once, without that line.
        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![7u8; 4096]).unwrap();
        let error = wait_for_trace(&junk, Duration::from_secs(600))
            .err()
            .unwrap();
        assert!(!format!("{error:#}").contains("gave up"), "{error:#}");
    }

    /// Ranges that began among more capture waits than `stats` keeps are said under the
    /// annotation table: waits among those it let go of stay in their times.
    #[test]
    fn ranges_that_keep_untold_capture_waits_are_said() {
        let text = |untold: u64| {
            let report = serde_json::json!({
                "file": "t.hrxt", "span_ns": 1000,
                "annotations": [{"name": "main", "count": 3, "total_ns": 9000,
                                 "capture_wait_ns": 0, "capture_wait_ranges": 0,
                                 "capture_wait_untold_ranges": untold}],
            });
            let mut out = Vec::new();
            write_text(&mut out, &report, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        let said = text(2);
        assert!(
            said.contains(
                "(2 ranges began among more than 4096 earlier waits of their thread on the \
                 recorder and at capture fences: those inside them are not left out of their \
                 times)"
            ),
            "{said}"
        );
        assert!(!text(0).contains("began among"));
    }

    /// A loaded host's line says when the load was sampled: a trace cut before a runtime's
    /// end holds one sample, and the line claimed "at the runtimes' starts and ends" (a
    /// fresh user's pass; `info` said "at its one sample").
    #[test]
    fn a_loaded_host_with_one_sample_says_it_had_one() {
        let text = |samples: u64| {
            let report = serde_json::json!({
                "file": "t.hrxt", "span_ns": 1000,
                "host_load": {"samples": samples, "max_per_cpu": 3.31, "last_per_cpu": 3.31,
                              "loaded": true},
            });
            let mut out = Vec::new();
            write_text(&mut out, &report, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(
            text(1).contains("(1-minute average, at its one sample, no later one)"),
            "{}",
            text(1)
        );
        assert!(text(2).contains("(1-minute average, at the runtimes' starts and ends)"));
    }

    /// A name of wide characters (CJK, emoji: two terminal columns each) is padded to its
    /// width on screen, so the columns after it line up with an ASCII name's: padded by
    /// characters, `日本語の長い名前` (8 characters, 16 columns) pushed its row's figures 8
    /// columns right (break-it pass, session 53).
    #[test]
    fn wide_names_keep_the_columns_aligned() {
        let row = |name: &str| {
            serde_json::json!({"name": name, "count": 1, "total_ns": 1000, "mean_ns": 1000,
                               "p50_ns": 1000, "p99_ns": 1000, "max_ns": 1000})
        };
        let report = serde_json::json!({
            "file": "t.hrxt", "span_ns": 1000,
            "annotations": [row("decode"), row("日本語の長い名前"), row("😀 emoji")],
            "markers": [{"name": "decode", "count": 1}, {"name": "日本語の長い名前", "count": 1}],
            "counters": [{"name": "decode", "samples": 1, "min": 1, "max": 1, "last": 1},
                         {"name": "😀 emoji", "samples": 1, "min": 1, "max": 1, "last": 1}],
        });
        let mut out = Vec::new();
        write_text(&mut out, &report, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        // The column (in terminal cells) where each row's first figure ends.
        let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
        let count_end = |name: &str, table: &str| {
            let line = text
                .split("\n\n")
                .find(|t| t.starts_with(table))
                .and_then(|t| t.lines().find(|l| l.starts_with(name)))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            let figure = line[name.len()..].trim_start();
            let first = figure.split(' ').next().unwrap();
            width(&line[..line.len() - figure.len()]) + width(first)
        };
        for (table, names) in [
            (
                "annotation",
                &["decode", "日本語の長い名前", "😀 emoji"][..],
            ),
            ("marker", &["decode", "日本語の長い名前"][..]),
            ("counter", &["decode", "😀 emoji"][..]),
        ] {
            let ends: Vec<usize> = names.iter().map(|n| count_end(n, table)).collect();
            assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?} in\n{text}");
        }
    }

    /// A counter's value that JSON cannot hold (infinite, NaN: null there) reads `-` with a
    /// note, not `NaN` for an infinite maximum; a huge one is in exponent form, not 309 digits.
    #[test]
    fn counters_that_json_cannot_hold_read_as_such() {
        let report = serde_json::json!({
            "file": "t.hrxt", "span_ns": 1000,
            "counters": [{"name": "queue depth", "samples": 3, "min": -1.5, "max": null,
                          "last": 1e308}],
        });
        let mut out = Vec::new();
        write_text(&mut out, &report, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = text
            .lines()
            .find(|l| l.starts_with("queue depth"))
            .unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<_> = row.split_whitespace().collect();
        assert_eq!(cells[2..], ["3", "-1.5", "-", "1e308"], "{text}");
        assert!(text.contains("(-: not a finite number"), "{text}");
    }

    /// A region started and never finished is running now only in a trace a recorder still
    /// writes; in one nobody writes (killed, crashed, cut short) it was still running when
    /// the trace ends, as `view` and the exports say (it read "running now" of a killed
    /// recording's last submission).
    #[test]
    fn a_region_running_at_the_end_is_running_now_only_while_recorded() {
        let mut report = serde_json::json!({
            "file": "t.hrxt", "span_ns": 1000,
            "running": [{"runtime": 1, "submission": 3, "region": 2, "label": "host",
                         "queue": "Host", "start_ns": 5}],
        });
        let line = |report: &serde_json::Value, live| {
            let mut out = Vec::new();
            write_text(&mut out, report, live).unwrap();
            let text = String::from_utf8(out).unwrap();
            let line = text
                .lines()
                .find(|l| l.starts_with("running "))
                .map(str::to_owned);
            line.unwrap_or_else(|| panic!("{text}"))
        };
        let ended = line(&report, false);
        assert!(
            ended.starts_with("running      submission 3, region 2 (host on Host): started at ")
                && ended.ends_with(&format!(", {}", hrx_analysis::RUNNING_AT_END)),
            "{ended}"
        );
        assert!(!ended.contains("now"), "{ended}");
        let live = line(&report, true);
        assert!(
            live.ends_with(&format!(", running now ({})", hrx_capture::BEING_RECORDED)),
            "{live}"
        );
        // Of a trace of several runtimes, each names its runtime.
        report["queues"] = serde_json::json!([{"runtime": 1}, {"runtime": 2}]);
        assert!(
            line(&report, false).starts_with("running      runtime 1 submission 3, region 2 "),
            "{}",
            line(&report, false)
        );
        report["queues"] = serde_json::json!([]);
        // One whose Submit the trace lacks says so, as `info` and the timeline do.
        report["running"][0] = serde_json::json!({"runtime": 1, "submission": 4, "region": 0,
            "label": null, "queue": null, "start_ns": 5, "submitted": false});
        let lacking = line(&report, false);
        assert!(
            lacking.starts_with(
                "running      submission 4, region 0 (its Submit not in the trace): started at "
            ),
            "{lacking}"
        );
    }

    /// Regions whose timing a lossy recording dropped are said as timing lost, one line with
    /// their count, and are not listed as running (a hang) in the text report.
    #[test]
    fn regions_whose_timing_was_lost_are_said_not_running() {
        let region = serde_json::json!({
            "runtime": 1, "submission": 7, "region": 2, "label": "download",
            "queue": "GPU Download", "start_ns": 5,
        });
        let report = serde_json::json!({
            "file": "t.hrxt", "span_ns": 1000, "running": [],
            "timing_lost": [region.clone(), region],
        });
        let mut out = Vec::new();
        write_text(&mut out, &report, false).unwrap();
        let said = String::from_utf8(out).unwrap();
        assert!(
            said.lines()
                .any(|l| l.starts_with("timing lost  2 regions: timing lost (records dropped)")),
            "{said}"
        );
        assert!(!said.lines().any(|l| l.starts_with("running")), "{said}");
    }
}
