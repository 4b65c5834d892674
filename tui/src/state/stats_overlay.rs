//! The rows of the statistics overlay (`s`): the figures `hrx-trace stats` prints, from the
//! same [`Stats`] (gathered in the model's pass, and in a followed trace's refreshes),
//! laid out for a pane of a given width. The view draws these rows and scrolls over them;
//! ↑/↓ scroll down to the last of them ([`stats_rows`]).
//!
//! From the top: what the trace holds of operation timings (`operations`: how many were
//! timed, or the note `stats` gives when there are none) and which clock the durations are
//! on (`clock`), both wrapped to the width; the kernels by operation name (from
//! `OpTiming`: one row per kernel entry, fills and copies by kind) where the trace has
//! operation times; the regions by label; host callbacks when there are any; queue
//! utilisation; copy bandwidth per lane.
//!
//! Duration tables have the columns of `stats`: count, total, mean, p50, p99, max (device
//! spans where recorded, host spans otherwise; failed runs left out of them) and the runs
//! left out, blank for none: a region's `failed` (runs that failed or were cancelled); an
//! operation's `in failed` (its runs in regions that failed or were cancelled, whichever
//! operation failed: `stats`' `+N in failed runs`, said in a note under the table). At 80
//! columns all of them fit with a name of 15; wider, the durations take the width `stats` gives them and the name grows
//! up to 32; narrower, durations go from the right: max, then p99, p50, mean, total.

use super::{Model, Stats, units};
use crate::state::KernelStats;

/// How the view draws a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowStyle {
    /// A table's heading.
    Heading,
    /// Something the trace lacks.
    Missing,
    /// Figures.
    Plain,
}

/// One row of the overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsRow {
    /// Its text, at most the width asked for where it can be (a table wider than a very
    /// narrow pane is cut by the pane).
    pub text: String,
    /// How it is drawn.
    pub style: RowStyle,
}

/// Width of the notes' labels (`operations`, `clock`) with the space after them.
const LABEL: usize = 12;
/// Width of the count column (right-aligned).
const COUNT: usize = 7;
/// Width of a duration column (right-aligned; a duration is at most 7 characters), and
/// where every column fits with it, the wider one of `stats`.
const DURATION: usize = 9;
const DURATION_WIDE: usize = 11;
/// Width of the column of runs left out (right-aligned): `failed`, or an operation's `in
/// failed`, two spaces after `max` as the durations are apart (at 10 it read `max in
/// failed`, three words, to a user).
const FAILED: usize = 11;
/// Narrowest name column: what is left of 78 inner columns (an 80-column terminal) with
/// every duration shown.
const NAME_MIN: usize = 15;
/// Widest name column.
const NAME_MAX: usize = 32;

/// A duration column: its heading and its value.
type Column = (&'static str, fn(&KernelStats) -> u64);

const DURATIONS: [Column; 5] = [
    ("total", |k| k.total_ns),
    ("mean", |k| k.mean_ns),
    ("p50", |k| k.p50_ns),
    ("p99", |k| k.p99_ns),
    ("max", |k| k.max_ns),
];

/// The rows of the overlay for a pane `width` columns wide (inside its border).
pub fn stats_overlay(model: &Model, width: usize) -> Vec<StatsRow> {
    let stats = model.stats();
    let mut rows = Vec::new();
    let plain = |text: String| StatsRow {
        text,
        style: RowStyle::Plain,
    };
    let heading = |text: String| StatsRow {
        text,
        style: RowStyle::Heading,
    };
    let (operations, missing) = match stats.operation_times_note() {
        Some(note) => (note.to_owned(), true),
        None => (operations_timed(stats), false),
    };
    for line in labelled("operations", &operations, width) {
        rows.push(StatsRow {
            text: line,
            style: if missing {
                RowStyle::Missing
            } else {
                RowStyle::Plain
            },
        });
    }
    if let Some(clock) = clock(stats) {
        rows.extend(labelled("clock", &clock, width).into_iter().map(plain));
    }
    let table = Table::for_width(width);
    // Kernels by operation name from their own timings (none without them), then regions
    // by label, as `stats` lists them.
    if !stats.operations.is_empty() {
        rows.push(plain(String::new()));
        rows.push(heading(table.heading("kernel", "in failed")));
        rows.extend(stats.operations.iter().map(|o| plain(table.row(&o.stats))));
        // Not the operation's own failures: its runs in regions that failed (as `stats`).
        if stats.operations.iter().any(|o| o.stats.failed > 0) {
            let note = "(in failed: runs of the operation in regions that failed or were \
                        cancelled, left out of its times, whichever operation of the region \
                        failed)";
            rows.push(plain(String::new()));
            rows.extend(wrap(note, width).into_iter().map(plain));
        }
    }
    rows.push(plain(String::new()));
    rows.push(heading(table.heading("region", "failed")));
    rows.extend(stats.kernels.iter().map(|k| plain(table.row(k))));
    // Host work run by worker threads is no kernel: its own table, when there is any.
    if !stats.host_callbacks.is_empty() {
        rows.push(plain(String::new()));
        rows.push(heading(table.heading("host callback", "failed")));
        rows.extend(stats.host_callbacks.iter().map(|k| plain(table.row(k))));
    }
    rows.push(plain(String::new()));
    rows.push(heading(format!(
        "{:<22}{:>8}{:>11}  utilisation over {}",
        "queue",
        "spans",
        "busy",
        units::duration(stats.span_ns)
    )));
    for l in &stats.lanes {
        rows.push(plain(format!(
            "{:<22}{:>8}{:>11}  {:>5.1}% {}",
            fit(&model.queue_lane_name(l.runtime, l.queue), 21),
            l.spans,
            units::duration(l.busy_ns),
            l.utilisation * 100.0,
            // After name, spans, busy and percentage (50 columns), up to 30 wide.
            gauge(l.utilisation, width.saturating_sub(50).min(30))
        )));
    }
    rows.push(plain(String::new()));
    rows.push(heading(format!(
        "{:<22}{:>8}{:>11}{:>11}{:>13}",
        "copy bandwidth", "batches", "bytes", "time", "bandwidth"
    )));
    if stats.copies.is_empty() {
        rows.push(StatsRow {
            text: "no copy batches".to_owned(),
            style: RowStyle::Missing,
        });
    }
    for c in &stats.copies {
        rows.push(plain(format!(
            "{:<22}{:>8}{:>11}{:>11}{:>13}",
            fit(&model.queue_lane_name(c.runtime, c.queue), 21),
            c.batches,
            units::bytes(c.bytes),
            units::duration(c.busy_ns),
            units::bandwidth(c.bytes_per_s)
        )));
    }
    rows
}

/// Rows of the overlay for a pane `width` columns wide: ↑/↓ scroll over them.
pub fn stats_rows(model: &Model, width: usize) -> usize {
    stats_overlay(model, width).len()
}

/// `text` cut to `width` characters, with `…` when cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else if width == 0 {
        String::new()
    } else {
        let mut s: String = text.chars().take(width - 1).collect();
        s.push('…');
        s
    }
}

/// The operation timings counted, and those left out, as `stats` says it.
fn operations_timed(stats: &Stats) -> String {
    let o = &stats.op_times;
    let mut text = format!("{} timed", o.recorded.saturating_sub(o.failed));
    if o.failed > 0 {
        text.push_str(&format!(
            "; {} in failed or cancelled runs left out",
            o.failed
        ));
    }
    if o.unplaced > 0 {
        text.push_str(&format!("; {} joined no region", o.unplaced));
    }
    text
}

/// Which clock the durations are on, as `stats` says it: how many operation, region and
/// copy batch times are device spans, where any is; `None` with no durations at all.
fn clock(stats: &Stats) -> Option<String> {
    let device = |rows: &mut dyn Iterator<Item = &KernelStats>| {
        rows.fold((0, 0), |(d, n), k| (d + k.device, n + k.count))
    };
    let copies = stats
        .copies
        .iter()
        .fold((0, 0), |(d, n), c| (d + c.device, n + c.batches));
    hrx_analysis::stats::clock_note(
        device(&mut stats.operations.iter().map(|o| &o.stats)),
        device(&mut stats.kernels.iter()),
        copies,
    )
}

/// `text` after `label`, word-wrapped to `width`, its further lines indented as the first.
fn labelled(label: &str, text: &str, width: usize) -> Vec<String> {
    let indent = " ".repeat(LABEL);
    wrap(text, width.saturating_sub(LABEL).max(1))
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                format!("{label:<LABEL$}{line}")
            } else {
                format!("{indent}{line}")
            }
        })
        .collect()
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word is cut).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word.to_owned();
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        while word.chars().count() > width {
            let rest = word.split_off(word.char_indices().nth(width).map_or(0, |(i, _)| i));
            lines.push(std::mem::replace(&mut word, rest));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A bar of `width` cells filled to `fraction`.
fn gauge(fraction: f64, width: usize) -> String {
    let filled = ((fraction.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

/// The columns of a duration table in a given width.
struct Table {
    name: usize,
    /// Width of each duration column.
    duration: usize,
    durations: &'static [Column],
}

impl Table {
    fn for_width(width: usize) -> Table {
        let room = width.saturating_sub(NAME_MIN + COUNT + FAILED);
        let duration = if room >= DURATIONS.len() * DURATION_WIDE {
            DURATION_WIDE
        } else {
            DURATION
        };
        let shown = (room / duration).min(DURATIONS.len());
        let name = width
            .saturating_sub(COUNT + FAILED + shown * duration)
            .clamp(NAME_MIN, NAME_MAX);
        Table {
            name,
            duration,
            durations: &DURATIONS[..shown],
        }
    }

    /// The heading row: `title`, the columns, and `left_out` over the runs left out.
    fn heading(&self, title: &str, left_out: &str) -> String {
        let mut text = format!(
            "{:<w$}{:>COUNT$}",
            fit(title, self.name - 1),
            "count",
            w = self.name
        );
        for (name, _) in self.durations {
            text.push_str(&format!("{name:>w$}", w = self.duration));
        }
        text.push_str(&format!("{left_out:>FAILED$}"));
        text
    }

    fn row(&self, k: &KernelStats) -> String {
        let mut text = format!(
            "{:<w$}{:>COUNT$}",
            fit(&k.name, self.name - 1),
            k.count,
            w = self.name
        );
        for (_, value) in self.durations {
            text.push_str(&format!(
                "{:>w$}",
                units::duration(value(k)),
                w = self.duration
            ));
        }
        // Failed runs are not in the durations: counted here, blank for none.
        let failed = match k.failed {
            0 => String::new(),
            n => n.to_string(),
        };
        text.push_str(&format!("{failed:>FAILED$}"));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefghij x", 4), ["abcd", "efgh", "ij x"]);
        assert_eq!(wrap("", 4), [""]);
        for line in wrap(
            "per-operation times: none recorded; kernels are listed by region label only",
            20,
        ) {
            assert!(line.chars().count() <= 20, "{line}");
        }
    }

    /// At 78 inner columns (an 80-column terminal) every duration and the failed count
    /// fit; narrower, max goes first; wider, the durations and the name widen.
    #[test]
    fn tables_keep_every_column_at_80_columns() {
        let t = Table::for_width(78);
        assert_eq!((t.name, t.durations.len()), (NAME_MIN, 5));
        assert!(t.heading("kernel", "in failed").chars().count() <= 78);
        // The last heading stands apart from `max` as the durations' do.
        assert!(
            t.heading("kernel", "in failed")
                .ends_with("    max  in failed"),
            "{}",
            t.heading("kernel", "in failed")
        );
        let narrow = Table::for_width(70);
        assert_eq!(narrow.durations.len(), 4);
        assert!(!narrow.heading("kernel", "in failed").contains("max"));
        let wide = Table::for_width(118);
        assert_eq!(
            (wide.name, wide.duration, wide.durations.len()),
            (NAME_MAX, DURATION_WIDE, 5)
        );
    }
}
