//! The summary `record` prints after a recording: what the written trace holds, read back
//! from the file.
//!
//! ```text
//! records      1 234 (12 kinds)
//! operations   36 in 3 prepared graphs
//! submissions  12 accepted, 0 refused
//! failures     submissions 0 failed, 0 cancelled; regions 0 failed, 0 cancelled
//! quarantines  0 graphs, 0 poisoned buffers
//! bytes        52.10 KiB on disk, 1.20 MiB copied
//! duration     412.3 ms
//! file         hrx.hrxt (clean close)
//! ```

use hrx_analysis::info::TraceInfo;
use hrx_analysis::units::{bytes, bytes_alike, duration, plural};
use hrx_capture::ShowPath;
use std::io::{self, Write};
use std::path::Path;

/// Writes the summary of the trace at `path`.
///
/// # Errors
///
/// Write errors.
pub fn write(out: &mut impl Write, path: &Path, stats: &TraceInfo) -> io::Result<()> {
    let mut line = |key: &str, value: String| writeln!(out, "{key:<12} {value}");
    line(
        "records",
        format!("{} ({} kinds)", stats.records, stats.kinds.len()),
    )?;
    line(
        "operations",
        format!(
            "{} in {}",
            stats.operations,
            plural(stats.prepared, "prepared graph")
        ),
    )?;
    for (key, value) in outcomes(stats) {
        line(key, value)?;
    }
    let sizes = match stats.copied_bytes() {
        Some(copied) => {
            let [disk, copied] = bytes_alike([stats.file_len_bytes, copied]);
            format!("{disk} on disk, {copied} copied")
        }
        None => format!("{} on disk", bytes(stats.file_len_bytes)),
    };
    line("bytes", sizes)?;
    let span = match (stats.duration_ns(), stats.end.is_some()) {
        (Some(ns), true) => duration(ns),
        (Some(ns), false) => format!("at least {} (to the last record read)", duration(ns)),
        (None, _) => "unknown (no timed records)".to_string(),
    };
    line("duration", span)?;
    for (label, range) in crate::info::labelled_ranges(stats) {
        line(label, range)?;
    }
    if let Some(lost) = stats.recovery.lost.said() {
        line("lost", lost)?;
    }
    if let Some(unjoined) = crate::info::unjoined(stats) {
        line("incomplete", unjoined)?;
    }
    let waits = &stats.recovery.waits;
    if waits.count > 0 {
        line(
            "waited",
            format!(
                "{} on the recorder ({})",
                duration(waits.total_ns),
                plural(waits.count, "wait")
            ),
        )?;
    }
    // A trace cut short says where: the signal and the region that was running, in the
    // words of `info` and `stats` (`TraceInfo::ending`). The program has ended: nothing
    // writes its trace any more.
    if let Some(ending) = stats.ending(false) {
        line("ended", ending.to_string())?;
    }
    line(
        "file",
        format!("{} ({})", path.shown(), stats.close_state()),
    )
}

/// The `device` line of a recorded program's summary: the devices its runtimes ran on, each
/// once ("sim: hrx software device", "cuda: NVIDIA H200 ..., sim: hrx software device (3
/// runtimes)"), so that a program that fell back from a GPU to the software device says so
/// where `record` reports (the workloads print their own).
pub(crate) fn devices(stats: &TraceInfo) -> String {
    let mut seen: Vec<String> = Vec::new();
    for runtime in &stats.runtimes {
        let device = format!("{}: {}", runtime.backend, runtime.device);
        if !seen.contains(&device) {
            seen.push(device);
        }
    }
    match stats.runtimes.len() {
        0 => stats.device().unwrap_or_else(|| "(none recorded)".into()),
        1 => seen.join(", "),
        n => format!("{} ({n} runtimes)", seen.join(", ")),
    }
}

/// The `submissions`, `failures` and `quarantines` lines of the summary, which `info` prints
/// too: what became of the submissions, the first failure's error, what was quarantined and
/// poisoned.
pub(crate) fn outcomes(stats: &TraceInfo) -> [(&'static str, String); 3] {
    let busy = match stats.refused_busy {
        0 => String::new(),
        n => format!(" ({n} busy)"),
    };
    let first = match &stats.first_failure {
        Some(error) => format!("; first: {error}"),
        None => String::new(),
    };
    let faults = match stats.faults {
        0 => String::new(),
        n => format!(", {} injected", plural(n, "fault")),
    };
    // A trace cut short: the submissions it ends in the middle of (no outcome recorded);
    // in a trace whose recorder dropped records, their completions may be what was lost.
    let (cut, lost) = (!stats.recovery.closed, !stats.recovery.lost.is_none());
    let why = match (cut, lost) {
        (_, false) => "in flight where the trace ends",
        (false, true) => "their completions among the records the recorder lost",
        (true, true) => "in flight where the trace ends, or their completions lost",
    };
    let unfinished = match stats.in_flight.len() {
        0 => String::new(),
        n => format!(", {n} without an outcome ({why})"),
    };
    [
        (
            "submissions",
            format!(
                "{} accepted, {} refused{busy}{unfinished}",
                stats.submissions, stats.refused
            ),
        ),
        (
            "failures",
            crate::failure::one_line(&format!(
                "submissions {} failed, {} cancelled; regions {} failed, {} cancelled{faults}{first}",
                stats.failed, stats.cancelled, stats.regions_failed, stats.regions_cancelled
            )),
        ),
        (
            "quarantines",
            format!(
                "{}, {}",
                plural(stats.quarantines, "graph"),
                plural(stats.poisoned, "poisoned buffer")
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_capture::schema::{LostKind, RecordsLost};
    use hrx_capture::{Record, Recorder, RecorderOptions, TraceMode};

    /// `record`'s summary of a lossy recording says how many records of which kinds it lost
    /// (issue 17: every verb; the others are tested in `tests/cli/lost.rs`).
    #[test]
    fn the_summary_of_a_lossy_recording_says_what_was_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lossy.hrxt");
        let options = RecorderOptions {
            mode: TraceMode::Lossy,
            ..RecorderOptions::default()
        };
        let recorder = Recorder::create(&path, options).unwrap();
        recorder.record(&Record::RecordsLost(RecordsLost {
            time_ns: recorder.now_ns(),
            lossy: true,
            total: 3,
            by_kind: vec![LostKind {
                kind: "RegionTiming".into(),
                records: 3,
            }],
        }));
        recorder.close().unwrap();
        let stats = TraceInfo::read(&path).unwrap();
        let mut out = Vec::new();
        write(&mut out, &path, &stats).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("lost         3 records lost (RegionTiming 3)"),
            "{text}"
        );
    }
}
