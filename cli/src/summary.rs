//! The summary `record` prints after a recording: what the written trace holds, read back
//! from the file.
//!
//! ```text
//! records      1 234 (12 kinds)
//! operations   36 in 3 prepared graphs
//! submissions  12 accepted, 0 refused
//! failures     submissions 0 failed, 0 cancelled; regions 0 failed, 0 cancelled
//! quarantines  0 graphs, 0 poisoned buffers
//! bytes        52.1 KiB on disk, 1.2 MiB copied
//! duration     412.3 ms
//! file         hrx.hrxt (clean close)
//! ```

use crate::stats::{TraceStats, bytes, duration, plural};
use std::io::{self, Write};
use std::path::Path;

/// Writes the summary of the trace at `path`.
///
/// # Errors
///
/// Write errors.
pub fn write(out: &mut impl Write, path: &Path, stats: &TraceStats) -> io::Result<()> {
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
    let busy = match stats.refused_busy {
        0 => String::new(),
        n => format!(" ({n} busy)"),
    };
    line(
        "submissions",
        format!(
            "{} accepted, {} refused{busy}",
            stats.submissions, stats.refused
        ),
    )?;
    let first = match &stats.first_failure {
        Some(error) => format!("; first: {error}"),
        None => String::new(),
    };
    let faults = match stats.faults {
        0 => String::new(),
        n => format!(", {} injected", plural(n, "fault")),
    };
    line(
        "failures",
        crate::failure::one_line(&format!(
            "submissions {} failed, {} cancelled; regions {} failed, {} cancelled{faults}{first}",
            stats.failed, stats.cancelled, stats.regions_failed, stats.regions_cancelled
        )),
    )?;
    line(
        "quarantines",
        format!(
            "{}, {}",
            plural(stats.quarantines, "graph"),
            plural(stats.poisoned, "poisoned buffer")
        ),
    )?;
    let copied = match stats.copied_bytes() {
        Some(n) => format!(", {} copied", bytes(n)),
        None => String::new(),
    };
    line(
        "bytes",
        format!("{} on disk{copied}", bytes(stats.file_len_bytes)),
    )?;
    let span = match (stats.duration_ns(), stats.end.is_some()) {
        (Some(ns), true) => duration(ns),
        (Some(ns), false) => format!("at least {} (to the last record read)", duration(ns)),
        (None, _) => "unknown (no timed records)".to_string(),
    };
    line("duration", span)?;
    for range in crate::info::ranges(stats) {
        line("range", range)?;
    }
    let lost = &stats.recovery.lost;
    if !lost.is_none() {
        line("lost", lost.to_string())?;
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
    // A trace cut short says where: the signal and the region that was running.
    if !stats.recovery.closed {
        let ended = stats
            .death()
            .unwrap_or_else(|| format!("never closed {}", stats.at_the_end()));
        line("ended", ended)?;
    }
    line(
        "file",
        format!("{} ({})", path.display(), stats.close_state()),
    )
}
