//! `hrx-trace info FILE`: the file header, the session, record counts per kind, the time
//! span, the host clock the times were read on, whether the trace was closed cleanly or
//! recovered (with every warning), and what became of the submissions (failed, cancelled,
//! the first failure's error, quarantines and poisoned buffers), as `record`'s summary says.

use crate::args::InfoArgs;
use crate::failure::TraceError;
use hrx_analysis::info::{Ending, TraceInfo};
use hrx_analysis::units::{bytes, duration, plural};
use hrx_capture::ShowPath;
use hrx_capture::format::{Codec, Compression};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// Reads what `info` and `record`'s summary say of the trace at `path`
/// ([`TraceInfo::read`]: the one pass of `hrx_analysis::scan`).
///
/// # Errors
///
/// [`TraceError`] when the file cannot be opened, has no valid header, or a read fails.
pub fn read(path: &Path) -> Result<TraceInfo, TraceError> {
    TraceInfo::read(path).map_err(|error| TraceError {
        path: path.to_path_buf(),
        error,
    })
}

/// Runs `info`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]) or a write error.
pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    // An unclosed trace whose recorder held its lock as it was read is being written, not
    // crashed (asked before the read: a recording may end during it).
    let (stats, held) = crate::record::read_while_held(&args.file, || read(&args.file));
    let stats = stats?;
    let live = !stats.recovery.closed && held;
    // On standard error too, as every verb says what a trace lacks (never silenced by -q);
    // with -v, what was read.
    let covers = "the report covers only what was recovered";
    // The reader's warnings too, as every other verb prints them (`info` printed only how
    // the trace ended, without the `byte N: the file ends inside a block` line: a fresh
    // user's pass).
    crate::failure::warn_partial_as(
        &args.file,
        &stats.warnings,
        Some(&stats.recovery),
        covers,
        || held,
    );
    if args.json {
        crate::kernel_stats::print_report(&json(&args.file, &stats, live), true, |_, _| Ok(()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = crate::output::stdout();
    write(&mut out, &args.file, &stats, live)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Whether a trace was read whole (closed cleanly, nothing damaged, skipped or missing) and
/// its recorder lost no record: every verb's JSON `complete` (`diff`'s of each side), in one
/// sense (`info`'s `closed.complete` is the file's alone, losses aside).
pub(crate) fn complete(recovery: Option<&hrx_capture::Recovery>) -> bool {
    recovery.is_none_or(|r| r.is_complete() && r.lost.is_none())
}

/// The records a trace's recorder lost, as every verb's JSON `lost` says them: `{"total",
/// "lossy" (recorded in lossy mode, whether or not it lost any), "by_kind": {kind:
/// records}}` (`diff`'s of each side; `stats` keeps `records` and `lossy_mode` beside them,
/// its names before these were shared).
pub(crate) fn lost_json(lost: &hrx_capture::Lost) -> Value {
    json!({
        "total": lost.total,
        "lossy": lost.lossy,
        "by_kind": lost.by_kind().into_iter().collect::<BTreeMap<_, _>>(),
    })
}

/// `info --json`: what the text says, as one object (times in ns since the session start;
/// the sentences the text prints, `capture`, `range`, `clock`, `end`, kept as strings).
pub(crate) fn json(path: &Path, stats: &TraceInfo, live: bool) -> Value {
    let h = &stats.header;
    let r = &stats.recovery;
    json!({
        "file": {"path": path.display().to_string(), "bytes": stats.file_len_bytes},
        // As every verb's JSON says it: read whole, and nothing lost while recording.
        "complete": complete(Some(r)),
        "format": {
            "version": h.version.to_string(),
            "codec": codec_name(h.codec),
            "compression": compression_name(h.compression),
        },
        "session": stats.session.as_ref().map(|s| json!({
            "wall_clock_utc": s.wall_clock_utc.to_rfc3339(),
            "monotonic_base_ns": s.monotonic_base_ns,
            "host": s.host,
            "pid": s.pid,
            "producer": s.producer,
            "args": s.args,
        })),
        "runtimes": stats.runtimes.iter().map(|rt| json!({
            "runtime": rt.runtime.0,
            "backend": rt.backend,
            "device": rt.device,
            "graph_slots": rt.graph_slots,
            "capacity": rt.capacity,
            "fault": rt.fault,
            "op_times": stats.op_times.iter().find(|o| o.runtime == rt.runtime)
                .map(|o| format!("{:?}", o.source)),
        })).collect::<Vec<_>>(),
        "time_span": {
            "first_ns": stats.span_ns.map(|(first, _)| first),
            "end_ns": stats.duration_ns(),
            "first_submit_ns": stats.first_submit_ns,
            "last_activity_ns": stats.last_activity_ns,
        },
        "capture": what_it_is(stats, live),
        // `stats`' shape (a fresh user found each verb's its own), with `info`'s older keys:
        // `per_cpu_last` is `last_per_cpu` under its older name, equal at every count of
        // samples (it was null at one sample beside `last_per_cpu`'s figure, two answers).
        "host_load": stats.host_load.map(|h| {
            let mut load = crate::kernel_stats::host_load_value(h.samples, h.highest, h.last);
            load["per_cpu_first"] = h.first.into();
            load["per_cpu_last"] = load["last_per_cpu"].clone();
            load
        }),
        "live": live,
        "ranges": ranges(stats),
        // By the header's format: one without calibrations, or one that lost them.
        "clock": r.clock.describe(h.version).to_string(),
        "closed": {
            "complete": r.is_complete(),
            "clean_close": r.clean_close,
            "closed": r.closed,
            "end": r.end_as(live),
            "complete_blocks": r.complete_blocks,
            "records": r.records,
            "bytes_discarded": r.bytes_discarded,
            "skipped_blocks": r.skipped_blocks,
            "skipped_records": r.skipped_records,
            "missing_submissions": r.missing_submissions,
            "unwritten_submissions": r.unwritten_submissions,
        },
        "lost": lost_json(&r.lost),
        "recorder_waits": {
            "count": r.waits.count,
            "total_ns": r.waits.total_ns,
            "max_ns": r.waits.max_ns,
            "threads": r.waits.threads,
            "in_regions": r.waits.in_regions,
            "by_thread": stats.thread_waits.iter().map(|(thread, (name, count, total_ns))| json!({
                "thread": thread, "name": name, "count": count, "total_ns": total_ns,
            })).collect::<Vec<_>>(),
        },
        "submissions": {
            "accepted": stats.submissions,
            "refused": stats.refused,
            "refused_busy": stats.refused_busy,
            "failed": stats.failed,
            "cancelled": stats.cancelled,
            "in_flight_at_end": stats.in_flight.len(),
        },
        "regions": {
            "failed": stats.regions_failed,
            "cancelled": stats.regions_cancelled,
            "running_at_end": stats.running.len(),
        },
        "operations": stats.operations,
        "prepared": stats.prepared,
        "first_failure": stats.first_failure,
        "quarantines": stats.quarantines,
        "poisoned": stats.poisoned,
        "faults": stats.faults,
        "warnings": stats
            .warnings
            .iter()
            .filter(|w| crate::failure::said(w, live))
            .map(|w| crate::failure::one_line(&w.to_string()))
            .chain(unjoined(stats))
            .chain(crate::failure::lacks_as(&stats.recovery, || live))
            .collect::<Vec<_>>(),
        "records": {
            "total": stats.records,
            "by_kind": stats.kinds_in_order().into_iter().collect::<BTreeMap<_, _>>(),
        },
    })
}

/// What the trace is, on one line: the whole run, a run stopped by a signal (after N of M
/// frames), or cut short (crashed, killed, or never closed), with where it ended.
///
/// A trace of part of a run (a capture range, or `trim` output) says so here as well: its
/// record decides it, ahead of the cases below ("a range: submissions 10..20 of ...",
/// "trimmed from FILE ...").
fn what_it_is(stats: &TraceInfo, live: bool) -> String {
    // A range or a trim is not the whole run, even when the recording ran to its end.
    let whole = if stats.ranges.values().any(|r| r.trimmed_from.is_some()) {
        "trimmed: a range cut from a recording (see range)"
    } else if !stats.ranges.is_empty() {
        "a range of the run, recorded to the program's end (see range)"
    } else {
        "whole: recorded to the program's end"
    };
    // How it ends where that is news, in the words `stats` and `record` share
    // (`TraceInfo::ending`): a trim of an incomplete recording, or a trace never closed.
    match stats.ending(live) {
        Some(ending @ Ending::TrimmedFromIncomplete(_)) => return ending.to_string(),
        Some(ending @ Ending::Died(_)) => return format!("{ending} (cut short: never closed)"),
        Some(ending @ Ending::NeverClosed(_)) => {
            return format!(
                "cut short: {ending} (the process was killed or crashed, or writing the trace \
                 failed)"
            );
        }
        Some(ending @ Ending::BeingRecorded(_)) => {
            return format!(
                "{ending} (a recorder holds the file; `view --follow` and `stats --follow` \
                 follow it)"
            );
        }
        Some(ending) => return ending.to_string(),
        None => {}
    }
    // Closed, a signal's record in it: the program's own handler took the signal and the
    // run went on to its end.
    if let Some(fatal) = stats.fatal
        && stats.recovery.closed
    {
        return format!(
            "{whole} (it survived {})",
            crate::record::signal_name(fatal.signal).unwrap_or("a signal")
        );
    }
    if let Some(stopped) = &stats.stopped {
        let signal = match stopped.signal {
            // The program stopped its own work on an error (a photograph that does not
            // decode), `SessionStopped`'s signal 0.
            0 => "an error".to_owned(),
            n => crate::record::signal_name(n).map_or_else(|| format!("signal {n}"), str::to_owned),
        };
        let progress = match (stopped.done, stopped.asked) {
            (Some(done), Some(asked)) => format!(" after {done} of {asked} frames"),
            (Some(done), None) => format!(" after {done} frames"),
            _ => String::new(),
        };
        return format!("stopped by {signal}{progress}, then closed");
    }
    whole.into()
}

/// [`ranges`]' lines with the label the text reports give them: `range`, but `snapshot` for
/// a whole recording's state snapshot (the bytes its first submissions read that nothing
/// traced had written: a `range` line read as if the trace were a part of the run, a fresh
/// user's pass).
pub(crate) fn labelled_ranges(stats: &TraceInfo) -> Vec<(&'static str, String)> {
    (ranges(stats).into_iter())
        .map(|line| match line.strip_prefix(SNAPSHOT) {
            Some(rest) if stats.ranges.is_empty() => (
                "snapshot",
                format!("{rest}: read before anything traced wrote them, kept for a replay"),
            ),
            _ => ("range", line),
        })
        .collect()
}

/// How [`ranges`] begins its state snapshot's line (`stats`' text reads it there too).
pub(crate) const SNAPSHOT: &str = "state snapshot: ";

/// What part of a recording the trace holds, one line per range (none: the whole run),
/// and its state snapshot.
pub(crate) fn ranges(stats: &TraceInfo) -> Vec<String> {
    let mut lines: Vec<String> = stats
        .ranges
        .values()
        .map(|r| hrx_analysis::info::range_text(r, stats.runtimes.len() > 1))
        .collect();
    // A fault counts operations from the run's start, which the range lacks.
    for r in stats.ranges.values() {
        let Some(fault) = &r.fault else { continue };
        let configured = stats
            .runtimes
            .iter()
            .find(|rt| rt.runtime == r.runtime)
            .and_then(|rt| rt.fault.as_deref())
            .unwrap_or("the run's");
        lines.push(match (&fault.from_start, fault.fired_in) {
            (Some(spec), _) => format!(
                "fault {configured} counted from submission {}: {spec}",
                r.start
            ),
            (None, Some(at)) => format!(
                "fault {configured} fired in submission {at}, before submission {}: \
                 none injected",
                r.start
            ),
            (None, None) => format!(
                "fault {configured} fired before submission {}: none injected",
                r.start
            ),
        });
    }
    let (count, known, unknown) = stats.snapshots;
    if count > 0 {
        let mut line = format!(
            "{SNAPSHOT}{}, {}",
            hrx_analysis::units::plural(count, "buffer range"),
            bytes(known)
        );
        if unknown > 0 {
            line.push_str(&format!(
                ", {} not held by the source: not replayable exactly",
                bytes(unknown)
            ));
        }
        lines.push(line);
    }
    lines
}

/// `live`: a recorder is writing the trace now (it holds the file's lock).
fn write(out: &mut impl Write, path: &Path, stats: &TraceInfo, live: bool) -> io::Result<()> {
    let h = &stats.header;
    writeln!(
        out,
        "{:<12} {} ({})",
        "file",
        path.shown(),
        bytes(stats.file_len_bytes)
    )?;
    let blocks = match h.compression {
        Compression::None => "uncompressed blocks".to_string(),
        other => format!("{}-compressed blocks", compression_name(other)),
    };
    writeln!(
        out,
        "{:<12} {} ({} records, {blocks})",
        "format",
        h.version,
        codec_name(h.codec),
    )?;
    match &stats.session {
        Some(s) => {
            writeln!(
                out,
                "{:<12} {} on {}, pid {}",
                "session",
                s.wall_clock_utc.format("%Y-%m-%d %H:%M:%S%.3f UTC"),
                s.host,
                s.pid
            )?;
            writeln!(out, "{:<12} {}", "producer", s.producer)?;
            writeln!(out, "{:<12} {}", "args", shell_words(&s.args))?;
        }
        None => writeln!(out, "{:<12} (no session record: it was lost)", "session")?,
    }
    if stats.runtimes.is_empty() {
        let device = stats.device().unwrap_or_else(|| "(none recorded)".into());
        writeln!(out, "{:<12} {device}", "device")?;
    }
    for r in &stats.runtimes {
        let fault = match &r.fault {
            Some(fault) => format!(", fault {fault}"),
            None => String::new(),
        };
        writeln!(
            out,
            "{:<12} {} {}: {} ({} slots per graph, {} submission slots{fault})",
            "runtime", r.runtime, r.backend, r.device, r.graph_slots, r.capacity
        )?;
        if let Some(o) = stats.op_times.iter().find(|o| o.runtime == r.runtime) {
            writeln!(out, "{:<12} operation times: {}", "", o.source.describe())?;
        }
    }
    let span = match (stats.span_ns, stats.duration_ns()) {
        // A range's span is its own submissions', not that of the definitions it holds from
        // before it (recorded at their times: a trim keeps every one), nor of their teardown
        // at the session's end.
        (Some((first, _)), Some(end)) if !stats.ranges.is_empty() => {
            let end = stats.last_activity_ns.unwrap_or(end).min(end);
            let start = stats.first_submit_ns.unwrap_or(first).min(end);
            format!(
                "{} .. {} ({}, the range; its definitions from {})",
                duration(start),
                duration(end),
                duration(end - start),
                duration(first)
            )
        }
        (Some((first, _)), Some(end)) => format!(
            "{} .. {} ({})",
            duration(first),
            duration(end),
            duration(end.saturating_sub(first))
        ),
        (None, Some(end)) => format!("0 .. {}", duration(end)),
        _ => "unknown (no timed records)".into(),
    };
    writeln!(out, "{:<12} {span}", "time span")?;

    writeln!(out, "{:<12} {}", "capture", what_it_is(stats, live))?;
    if let Some(line) = host_load(stats) {
        writeln!(out, "{:<12} {line}", "host load")?;
    }
    for (label, line) in labelled_ranges(stats) {
        writeln!(out, "{label:<12} {line}")?;
    }
    writeln!(
        out,
        "{:<12} {}",
        "clock",
        stats.recovery.clock.describe(stats.header.version)
    )?;
    let r = &stats.recovery;
    if r.is_complete() {
        writeln!(
            out,
            "{:<12} cleanly ({} blocks)",
            "closed", r.complete_blocks
        )?;
    } else {
        let skipped = r.skipped_blocks > 0 || r.skipped_records > 0;
        // The signal a fatal-signal record names is the cause, not one of three guesses
        // (the `capture` line above says it too).
        let died = stats
            .fatal
            .map(|fatal| crate::record::signal_name(fatal.signal).unwrap_or("a signal"))
            .map(|signal| format!(" (the recording process died of {signal})"));
        let more = match (r.clean_close, r.closed) {
            (true, _) => "",
            // A block lost before the end (its header damaged, say) also unsettles the end.
            (false, true) if skipped => " (see the warnings)",
            (false, true) => " (see the warnings): every block before it is read",
            (false, false) if live => " (not yet: a recorder is writing it)",
            (false, false) => died.as_deref().unwrap_or(
                " (the recording process crashed or was killed, or the trace could not be written whole)",
            ),
        };
        writeln!(out, "{:<12} {}{more}", "recovered", r.end())?;
        // In the sentence every verb explains it with.
        writeln!(out, "{:<12} {}", "", hrx_analysis::info::recovered(r))?;
    }
    let lost = &stats.recovery.lost;
    if !lost.is_none() {
        let cause = if lost.lossy {
            "full thread buffers dropped them"
        } else {
            "write errors, records too large to store, or captures a fatal signal left unrun"
        };
        writeln!(out, "{:<12} {lost}: {cause}", "lost")?;
    } else if let Some(mode) = lost.lossy_without_loss() {
        writeln!(out, "{:<12} {mode}", "lost")?;
    }
    let waits = &stats.recovery.waits;
    if waits.count > 0 {
        writeln!(
            out,
            "{:<12} {} on the recorder, {} in all, longest {} ({}; {} while recording a region)",
            "waited",
            plural(waits.count, "wait"),
            duration(waits.total_ns),
            duration(waits.max_ns),
            plural(waits.threads.into(), "thread"),
            waits.in_regions
        )?;
        for (thread, (name, count, total_ns)) in &stats.thread_waits {
            let name = if name.is_empty() { "unnamed" } else { name };
            writeln!(
                out,
                "{:<12} thread {thread} ({name}): {}, {}",
                "",
                plural(*count, "wait"),
                duration(*total_ns)
            )?;
        }
    }
    for warning in &stats.warnings {
        writeln!(
            out,
            "{:<12} {}",
            "warning",
            crate::failure::one_line(&warning.to_string())
        )?;
    }
    if let Some(line) = unjoined(stats) {
        writeln!(out, "{:<12} {line}", "warning")?;
    }
    for (key, value) in crate::summary::outcomes(stats) {
        writeln!(out, "{key:<12} {value}")?;
    }
    writeln!(out, "{:<12} {}", "records", stats.records)?;
    for (kind, count) in stats.kinds_in_order() {
        let holds = (kind == "RecordsLost")
            .then(|| records_lost_holds(&stats.recovery.lost))
            .flatten();
        match holds {
            Some(holds) => writeln!(out, "  {kind:<20} {count:>10}  ({holds})")?,
            None => writeln!(out, "  {kind:<20} {count:>10}")?,
        }
    }
    Ok(())
}

/// What the `RecordsLost` records of a trace that lost nothing hold, beside their count in
/// `info`'s kind table: a lossy recorder writes one at its first flush, losses or not, so
/// that every reader knows its mode (it is recorded nowhere else). Its bare count read as a
/// loss beside `lost none` (a fresh user's pass); `None` where records were lost (the
/// `lost` line above counts them).
pub(crate) fn records_lost_holds(lost: &hrx_capture::Lost) -> Option<&'static str> {
    (lost.is_none() && lost.lossy).then_some("0 lost: the lossy mode's mark")
}

/// The codec's name.
fn codec_name(codec: Codec) -> &'static str {
    match codec {
        Codec::Postcard => "postcard",
    }
}

/// The compression's name.
fn compression_name(compression: Compression) -> &'static str {
    match compression {
        Compression::None => "none",
        Compression::Zstd => "zstd",
    }
}

/// The command line as one line, quoting arguments that need it.
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c));
            if plain { a.clone() } else { format!("{a:?}") }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Records of submissions whose `Submit` the trace lacks, in one line (none: `None`): a
/// trace cut short can keep one thread's records of submissions whose submitting thread's
/// records were lost, and those submissions are then missing from every count.
pub(crate) fn unjoined(stats: &TraceInfo) -> Option<String> {
    unjoined_line(stats.unjoined)
}

/// Warns on standard error of records naming submissions whose `Submit` the trace at
/// `path` lacks ([`unjoined_line`] of `counts`, as [`hrx_analysis::ScanSummary::unjoined`]
/// counts them): what `stats`, `diff` and `dump` say, in `info`'s words. Returns the line
/// warned, without its `warning: ` (a JSON report's `warnings`).
pub(crate) fn warn_unjoined(path: &Path, counts: [u64; 3]) -> Option<String> {
    let line = format!("{}: {}", path.shown(), unjoined_line(counts)?);
    crate::output::warn(&line);
    Some(line)
}

/// The line of [`unjoined`]: `[timings, completions, digests]` naming submissions whose
/// `Submit` the trace lacks.
pub(crate) fn unjoined_line([timings, completions, digests]: [u64; 3]) -> Option<String> {
    let parts: Vec<String> = [
        (timings, "region timing"),
        (completions, "completion"),
        (digests, "output digest"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, what)| hrx_analysis::units::plural(n, what))
    .collect();
    // One record names one submission ("1 region timing name submissions" read garbled).
    let one = timings + completions + digests == 1;
    (!parts.is_empty()).then(|| {
        format!(
            "{} {} whose Submit the trace lacks (lost while recording, or cut off at its \
             end): {} missing from the counts",
            parts.join(", "),
            if one {
                "names a submission"
            } else {
                "name submissions"
            },
            if one {
                "that submission is"
            } else {
                "those submissions are"
            }
        )
    })
}

/// The host's load per CPU as the runtimes set it at their start and end
/// ([`hrx_capture::schema::HOST_LOAD_COUNTER`]), and whether that made it loaded; `None` for
/// a trace that does not say (recorded by an older hrx, or without `/proc/loadavg`).
fn host_load(stats: &TraceInfo) -> Option<String> {
    stats.host_load.map(host_load_line)
}

/// The `host load` line of samples `h`: `info`'s, and `export`'s `note:` of a loaded host.
pub(crate) fn host_load_line(h: hrx_analysis::info::HostLoadSamples) -> String {
    // As every verb writes a load; a trace holds the value per CPU alone.
    let load = |l| hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(l));
    let samples = match h.samples {
        // Set at a runtime's start and end: a trace that ends before, or a trim, holds one.
        1 => format!(
            "{} at its one sample (1-minute average; no later one)",
            load(h.first)
        ),
        n => format!(
            "{} at the first of {n} samples, {} at the last (1-minute average, at the \
             runtimes' starts and ends)",
            load(h.first),
            load(h.last)
        ),
    };
    format!(
        "{samples}{}",
        if h.loaded() {
            ": loaded, its host-side times include waits for a CPU (a poor reference for \
             `replay --max-slowdown`)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    /// One record naming a submission the trace lacks reads in the singular (it read "1
    /// region timing name submissions ...": a fresh-user pass); several in the plural.
    #[test]
    fn records_of_submissions_the_trace_lacks_are_counted_in_words() {
        assert_eq!(super::unjoined_line([0, 0, 0]), None);
        let one = super::unjoined_line([1, 0, 0]).unwrap();
        assert!(
            one.starts_with("1 region timing names a submission whose Submit the trace lacks"),
            "{one}"
        );
        assert!(
            one.ends_with(": that submission is missing from the counts"),
            "{one}"
        );
        let several = super::unjoined_line([2, 1, 0]).unwrap();
        assert!(
            several.starts_with("2 region timings, 1 completion name submissions whose"),
            "{several}"
        );
        assert!(several.ends_with("those submissions are missing from the counts"));
    }
}
