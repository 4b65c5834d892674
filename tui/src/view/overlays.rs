//! Statistics, the help overlay and the status line.

use super::theme;
use super::timeline::fit;
use crate::state::units;
use crate::state::{KEYS, KernelStats, ListKind, Model, ViewState};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span as Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

/// A bar of `width` cells filled to `fraction`.
fn gauge(fraction: f64, width: usize) -> String {
    let filled = ((fraction.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

/// The statistics over the lower panes: per kernel durations (the columns that fit the
/// width, from the left), host callbacks alike (when there are any: host work is no
/// kernel), queue utilisation and copy bandwidth, scrolled by ↑/↓.
pub(super) fn stats(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let stats = model.stats();
    let heading = |text: String| Line::styled(text, theme::KEY);
    type Column = (&'static str, fn(&KernelStats) -> u64);
    let columns: [Column; 6] = [
        ("total", |k| k.total_ns),
        ("mean", |k| k.mean_ns),
        ("p50", |k| k.p50_ns),
        ("p99", |k| k.p99_ns),
        ("min", |k| k.min_ns),
        ("max", |k| k.max_ns),
    ];
    // Name 22 and count 8, then 11 per duration, as many as fit: min goes first, then max,
    // p99, ... (at 80 columns, min and max; below 41, all of them).
    let inner = usize::from(area.width.saturating_sub(2));
    let fit_columns = (inner.saturating_sub(30) / 11).min(columns.len());
    const DROPPED_FIRST: [&str; 6] = ["min", "max", "p99", "p50", "mean", "total"];
    let dropped = &DROPPED_FIRST[..columns.len() - fit_columns];
    let shown: Vec<&Column> = columns
        .iter()
        .filter(|(name, _)| !dropped.contains(name))
        .collect();
    let durations = |lines: &mut Vec<Line<'_>>, title: &str, rows: &[KernelStats]| {
        let mut head = format!("{title:<22}{:>8}", "count");
        for (name, _) in &shown {
            head.push_str(&format!("{name:>11}"));
        }
        lines.push(heading(head));
        for k in rows {
            let mut row = format!("{:<22}{:>8}", fit(&k.name, 21), k.count);
            for (_, value) in &shown {
                row.push_str(&format!("{:>11}", units::duration(value(k))));
            }
            // Failed runs are not in the durations.
            if k.failed > 0 {
                row.push_str(&format!("  +{} failed", k.failed));
            }
            lines.push(Line::raw(row));
        }
    };
    let mut lines = Vec::new();
    durations(&mut lines, "kernel", &stats.kernels);
    if !stats.host_callbacks.is_empty() {
        lines.push(Line::default());
        durations(&mut lines, "host callback", &stats.host_callbacks);
    }
    lines.push(Line::default());
    lines.push(heading(format!(
        "{:<22}{:>8}{:>11}  utilisation over {}",
        "queue",
        "spans",
        "busy",
        units::duration(stats.span_ns)
    )));
    for l in &stats.lanes {
        lines.push(Line::raw(format!(
            "{:<22}{:>8}{:>11}  {:>5.1}% {}",
            fit(&model.queue_lane_name(l.runtime, l.queue), 21),
            l.spans,
            units::duration(l.busy_ns),
            l.utilisation * 100.0,
            // After name, spans, busy and percentage (49 columns), up to 30 wide.
            gauge(l.utilisation, inner.saturating_sub(49).min(30))
        )));
    }
    lines.push(Line::default());
    lines.push(heading(format!(
        "{:<22}{:>8}{:>11}{:>11}{:>13}",
        "copy bandwidth", "batches", "bytes", "time", "bandwidth"
    )));
    if stats.copies.is_empty() {
        lines.push(Line::styled("no copy batches", theme::DIM));
    }
    for c in &stats.copies {
        lines.push(Line::raw(format!(
            "{:<22}{:>8}{:>11}{:>11}{:>13}",
            fit(&model.queue_lane_name(c.runtime, c.queue), 21),
            c.batches,
            units::bytes(c.bytes),
            units::duration(c.busy_ns),
            units::bandwidth(c.bytes_per_s)
        )));
    }
    debug_assert_eq!(
        lines.len(),
        crate::state::stats_rows(stats),
        "the rows ↑/↓ scroll over"
    );
    let rows = usize::from(area.height.saturating_sub(2));
    let scroll = usize::from(state.stats_scroll).min(lines.len().saturating_sub(rows));
    let title = if lines.len() > rows {
        " Statistics (↑/↓ scroll, s closes) "
    } else {
        " Statistics (s closes) "
    };
    Paragraph::new(lines)
        .scroll((scroll as u16, 0))
        .block(Block::new().borders(Borders::ALL).title(title))
        .render(area, buf);
}

pub(super) fn help(_state: &ViewState, area: Rect, buf: &mut Buffer) {
    Clear.render(area, buf);
    let lines: Vec<Line<'_>> = KEYS
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Text::styled(format!(" {key:<16}"), theme::KEY),
                Text::raw(*what),
            ])
        })
        .collect();
    Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .border_style(theme::FOCUSED)
                .title(" Keys (? or Esc closes) "),
        )
        .render(area, buf);
}

/// The status line's key hints in `room` columns: as many of the others as fit, in order,
/// and always `? help` and `q quit` (cut off at the end, they were the first to go in a
/// narrow terminal). Each says what its key does now: `h hide hazards` while the hazards
/// list is open (the first press closes it), `n/N match` while a search is active.
fn key_hints(state: &ViewState, room: usize) -> String {
    let hazards = if state.list == Some(ListKind::Hazards) {
        "h hide hazards"
    } else {
        "h hazards"
    };
    let keys: [&str; 8] = [
        "←/→ span",
        "↑/↓ queue",
        "+/- zoom",
        "f fit",
        hazards,
        "e events",
        "s stats",
        "/ search",
    ];
    const ALWAYS: &str = "? help  q quit";
    (0..=keys.len())
        .rev()
        .map(|shown| {
            keys[..shown]
                .iter()
                .chain([&ALWAYS])
                .fold(String::new(), |line, key| line + " " + key + " ")
        })
        .find(|line| line.trim_end().chars().count() <= room)
        .unwrap_or_else(|| format!(" {ALWAYS}"))
        .trim_end()
        .to_owned()
}

pub(super) fn status_line(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let mut left: Vec<Text<'_>> = Vec::new();
    if state.searching || state.filtering() {
        let matches = state
            .filter_matches(model)
            .unwrap_or(model.span_count() as u64);
        left.push(Text::styled(
            format!(
                " /{}{}",
                state.search,
                if state.searching { "▏" } else { "" }
            ),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        left.push(Text::raw(format!(
            "  {matches} spans match · n/N next/previous "
        )));
    }
    if let Some(message) = &state.message {
        left.push(Text::styled(
            format!(" {message} "),
            Style::new().fg(ratatui::style::Color::Yellow),
        ));
    }
    // A live trace says so, with its record rate, before the cursor's time (and keeps it
    // when the cursor's time does not fit).
    let live = state.live.as_ref().map(|live| {
        if let Some(how) = &live.ended_by {
            format!("{how} (the recording ended) ")
        } else if live.closed {
            "closed (the recording ended) ".to_owned()
        } else if live.unclosed {
            format!("ended: {} ", hrx_capture::UNCLOSED_ENDING)
        } else {
            format!(
                "live · {} · {} ",
                units::rate(live.records_per_s, "records"),
                if live.following {
                    "following"
                } else {
                    "F follows"
                }
            )
        }
    });
    let mut right = format!("cursor {} ", units::time(state.cursor_ns),);
    // Whatever is on the left (the keys, the search, a message) outranks the cursor's time,
    // which the ruler also shows: below room for both the cursor goes.
    let left_needs = if left.is_empty() {
        " ? help  q quit".chars().count()
    } else {
        left.iter().map(|t| t.content.chars().count()).sum()
    };
    if let Some(live) = &live {
        right = format!("{live}· {right}");
    }
    if usize::from(area.width) < left_needs + 1 + right.chars().count() {
        right = live.unwrap_or_default();
    }
    let rw = right.chars().count() as u16;
    // Without the cursor time the left takes the whole row, so no cell keeps an old letter.
    let left_width = if rw == 0 {
        area.width
    } else {
        area.width.saturating_sub(rw + 1)
    };
    if left.is_empty() {
        left.push(Text::styled(
            key_hints(state, usize::from(left_width)),
            theme::DIM,
        ));
    }
    Paragraph::new(Line::from(left)).render(Rect::new(area.x, area.y, left_width, 1), buf);
    if rw > 0 && area.width > rw {
        buf.set_stringn(
            area.x + area.width - rw,
            area.y,
            &right,
            usize::from(rw),
            theme::DIM,
        );
    }
}
