//! The first frame of a trace whose index is still being built: the whole trace zoomed out
//! from the recorder's block summaries ([`Overview`]), with a line saying that it is a
//! summary and how far the index has got. Nothing in it can be selected.

use super::theme::{self, Symbols};
use crate::state::fit;
use crate::state::units;
use crate::state::{GUTTER, LoadProgress, Overview, TimeWindow};
use ratatui::Frame;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Modifier, Style};

fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, width: u16, style: Style) {
    if width > 0 && y < buf.area.bottom() && x < buf.area.right() {
        buf.set_stringn(x, y, text, usize::from(width), style);
    }
}

/// Draws the summary frame of `overview` over `window` (`None`: the whole trace) while the
/// index loads (`progress`).
pub fn render_overview(
    overview: &Overview,
    window: Option<TimeWindow>,
    progress: &LoadProgress,
    ascii: bool,
    frame: &mut Frame<'_>,
) {
    let area = frame.area();
    let window = window.or(overview.time_range());
    let buf = frame.buffer_mut();
    draw(
        overview,
        window,
        progress,
        ascii,
        buf,
        area.width,
        area.height,
    );
    if ascii {
        theme::asciify(buf);
    }
}

/// The summary frame as text (one line per row, trailing spaces trimmed), as
/// [`super::render_to_string`] renders a full frame; in ASCII only with `ascii`.
pub fn overview_to_string(
    overview: &Overview,
    progress: &LoadProgress,
    ascii: bool,
    width: u16,
    height: u16,
) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(never) => match never {},
    };
    if let Err(never) = terminal.draw(|f| render_overview(overview, None, progress, ascii, f)) {
        match never {}
    }
    super::buffer_to_string(terminal.backend().buffer())
}

fn draw(
    overview: &Overview,
    window: Option<TimeWindow>,
    progress: &LoadProgress,
    ascii: bool,
    buf: &mut Buffer,
    width: u16,
    height: u16,
) {
    let sym = Symbols::for_ascii(ascii);
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let cols = width.saturating_sub(GUTTER + 1);
    // Header: what this frame is drawn from, and the time it covers.
    let left = if overview.is_empty() {
        " hrx-trace view  no block summaries in this trace".to_owned()
    } else {
        // Every region timing the summaries count, those on no lane too (a header of 41
        // regions for a trace of 48, 7 unexplained: a fresh user's pass), and the summaries
        // read, not the trace's blocks (18 of them in a trace of 56 blocks).
        format!(
            " hrx-trace view  summary of {} from {}",
            units::plural(overview.regions() + overview.unplaced, "timed region"),
            match overview.blocks {
                1 => "1 block summary".to_owned(),
                n => format!("{n} block summaries"),
            },
        )
    };
    put(buf, 0, 0, &left, width, bold);
    if let Some(w) = window {
        let right = format!(
            "{} – {}  ({}) ",
            units::time(w.start_ns),
            units::time(w.end_ns),
            units::duration(w.width_ns())
        );
        let rw = right.chars().count() as u16;
        if rw + left.chars().count() as u16 + 2 <= width {
            put(buf, width - rw, 0, &right, rw, Style::new());
        }
    }
    let notes = summary_notes(overview);
    let footer_rows = notes.len() as u16 + 1;
    if let Some(w) = window.filter(|_| cols > 0 && height > 1) {
        ruler(w, cols, buf, sym);
        let mut y = 2;
        for lane in overview.lanes() {
            if y + 2 + footer_rows > height {
                break;
            }
            let name = overview.lane_name(lane);
            put(
                buf,
                0,
                y,
                &format!(" {}", fit(&name, usize::from(GUTTER) - 2)),
                GUTTER,
                Style::new(),
            );
            // Two rows of a bar chart per lane (the lower fills first), as the index's
            // zoomed-out lanes are drawn.
            for (col, &permille) in lane.coverage(w, cols).iter().enumerate() {
                if permille == 0 && !lane_touches(lane, w, col as u16, cols) {
                    continue;
                }
                let level = (u64::from(permille) * 16).div_ceil(1000).max(1) as u16;
                let x = GUTTER + col as u16;
                put(buf, x, y + 1, sym.level(level.min(8)), 1, Style::new());
                put(
                    buf,
                    x,
                    y,
                    sym.level(level.saturating_sub(8)),
                    1,
                    Style::new(),
                );
            }
            y += 2;
        }
    }
    if height > footer_rows {
        for (i, note) in notes.iter().enumerate() {
            put(
                buf,
                0,
                height - footer_rows + i as u16,
                &fit(note, usize::from(width)),
                width,
                theme::DIM,
            );
        }
        let status = progress_line(overview, progress);
        put(
            buf,
            0,
            height - 1,
            &fit(&status, usize::from(width)),
            width,
            bold,
        );
    }
}

/// Whether any summary of `lane` reaches column `col` (so a column with a sliver of busy
/// time shows the lowest step, as the index's frame does).
fn lane_touches(lane: &crate::state::OverviewLane, w: TimeWindow, col: u16, cols: u16) -> bool {
    let (a, b) = w.cell(col, cols);
    let first = lane.entries().partition_point(|e| e.1.max(e.0 + 1) <= a);
    lane.entries()
        .get(first)
        .is_some_and(|&(s, _, busy)| s < b && busy > 0)
}

fn ruler(w: TimeWindow, cols: u16, buf: &mut Buffer, sym: &Symbols) {
    put(buf, 0, 1, " time", GUTTER, theme::DIM);
    let ticks = units::ruler_ticks(w.start_ns, w.width_ns(), cols);
    let mut t = w
        .start_ns
        .div_ceil(ticks.step_ns)
        .saturating_mul(ticks.step_ns);
    while t < w.end_ns {
        let col = w.col(t, cols);
        put(buf, GUTTER + col, 1, sym.tick, 1, theme::DIM);
        let label = ticks.label(t);
        if (label.chars().count() as u16) < cols - col {
            put(
                buf,
                GUTTER + col + 1,
                1,
                &label,
                cols - col - 1,
                Style::new(),
            );
        }
        t = match t.checked_add(ticks.step_ns) {
            Some(next) => next,
            None => break,
        };
    }
}

/// What the frame is drawn from and what it leaves out: a line, and one more where some
/// regions are on no lane.
fn summary_notes(overview: &Overview) -> Vec<String> {
    if overview.is_empty() {
        return vec![
            " this trace has no block summaries (written before format 1.9, or nothing \
             timed): the timeline appears when the index is built"
                .to_owned(),
        ];
    }
    let mut note =
        " summary frame: busy time per column from the recorder's block summaries, not spans"
            .to_owned();
    if let Some((at, why)) = &overview.stopped {
        note.push_str(&format!("; summaries stop at byte {at} ({why})"));
    }
    let mut notes = vec![note];
    // What the trace lacks, as every verb says it: the footer's count of dropped records,
    // or that there is no footer yet.
    match (overview.dropped_records, overview.being_recorded) {
        (Some(0), _) => {}
        (Some(n), _) => notes.push(format!(
            " the recorder lost {} while recording: the index says of which kinds",
            units::plural(n, "record")
        )),
        (None, true) => notes
            .push(" being recorded now: the summaries cover the blocks written so far".to_owned()),
        (None, false) => notes.push(
            " not closed cleanly: the summaries cover the blocks written before it ended; \
             the index says what was recovered"
                .to_owned(),
        ),
    }
    // What "not placed on a lane" meant, on a line of its own (it was 7 words at the end of
    // a long one): the recorder summarised their timings before it read their submissions,
    // so it could not tell their queue; the index can.
    if overview.unplaced > 0 {
        let (n, timings, them) = match overview.unplaced {
            1 => (
                "1 region is".to_owned(),
                "its timing before it read its",
                "it",
            ),
            n => (
                format!("{n} regions are"),
                "their timings before it read their",
                "them",
            ),
        };
        notes.push(format!(
            " {n} on no lane: the recorder summarised {timings} submission; the index places \
             {them}"
        ));
    }
    notes
}

/// The index's progress and what waits for it.
fn progress_line(overview: &Overview, progress: &LoadProgress) -> String {
    let total = progress.total_bytes.max(overview.file_len).max(1);
    let percent = (u128::from(progress.read_bytes.min(total)) * 100 / u128::from(total)) as u64;
    let keys = "q quits  ·  +/- zoom, </> pan, f fit";
    match &progress.failed {
        Some(why) => format!(" {why}  ·  {keys}"),
        None => format!(
            " building the index: {percent}% of {}  ·  {keys}  ·  spans, selection and \
             search when it is ready",
            units::bytes(total)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_capture::schema::{Queue, RuntimeId};
    use hrx_capture::summary::{BlockSummary, LaneSummary, Summaries};

    /// The header counts every region timing the summaries hold, those on no lane too, and
    /// says it read block summaries (not the trace's blocks); the note says what a region on
    /// no lane is. It read `summary of 41 regions in 18 blocks` and `7 timings not placed on
    /// a lane` for a trace of 48 regions and 56 blocks (a fresh user's pass).
    #[test]
    fn the_summary_frame_counts_every_timed_region_and_says_why_some_are_on_no_lane() {
        let lane = |queue, regions, start_ns| LaneSummary {
            runtime: RuntimeId(1),
            queue,
            regions,
            first_start_ns: start_ns,
            last_end_ns: start_ns + 500,
            busy_ns: 400,
        };
        let summaries = Summaries {
            blocks: vec![
                BlockSummary {
                    lanes: vec![lane(Queue::GpuCompute, 30, 0)],
                    unplaced: 4,
                },
                BlockSummary {
                    lanes: vec![lane(Queue::GpuUpload, 11, 1_000)],
                    unplaced: 3,
                },
            ],
            ..Summaries::default()
        };
        let overview = Overview::from_summaries(&summaries);
        let frame = overview_to_string(&overview, &LoadProgress::default(), false, 120, 12);
        assert!(
            frame.contains(" hrx-trace view  summary of 48 timed regions from 2 block summaries"),
            "{frame}"
        );
        assert!(
            frame.contains(
                " 7 regions are on no lane: the recorder summarised their timings before it \
                 read their submission; the index places them"
            ),
            "{frame}"
        );
        assert!(!frame.contains("not placed"), "{frame}");
    }

    /// The summary frame says what the trace lacks, as every verb does: the records the
    /// recorder lost (the footer's count), or that there is no footer (not closed cleanly,
    /// or being recorded now); nothing of a trace closed cleanly that lost nothing (it said
    /// neither: only the index's frame did).
    #[test]
    fn the_summary_frame_says_lost_records_and_an_unclosed_trace() {
        let summaries = |dropped_records| Summaries {
            blocks: vec![BlockSummary {
                lanes: vec![LaneSummary {
                    runtime: RuntimeId(1),
                    queue: Queue::GpuCompute,
                    regions: 3,
                    first_start_ns: 0,
                    last_end_ns: 500,
                    busy_ns: 400,
                }],
                unplaced: 0,
            }],
            dropped_records,
            ..Summaries::default()
        };
        let frame = |dropped, held| {
            let mut overview = Overview::from_summaries(&summaries(dropped));
            overview.being_recorded = held;
            overview_to_string(&overview, &LoadProgress::default(), false, 120, 12)
        };
        let lost = frame(Some(1_234), false);
        assert!(
            lost.contains(
                " the recorder lost 1234 records while recording: the index says of which kinds"
            ),
            "{lost}"
        );
        let whole = frame(Some(0), false);
        assert!(
            !whole.contains("lost") && !whole.contains("closed"),
            "{whole}"
        );
        let cut = frame(None, false);
        assert!(
            cut.contains(
                " not closed cleanly: the summaries cover the blocks written before it ended"
            ),
            "{cut}"
        );
        let live = frame(None, true);
        assert!(
            live.contains(" being recorded now: the summaries cover the blocks written so far"),
            "{live}"
        );
    }
}
