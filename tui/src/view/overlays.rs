//! Statistics, the help overlay and the status line.

use super::theme;
use crate::state::units;
use crate::state::{KEYS, ListKind, Model, RowStyle, ViewState, stats_overlay};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span as Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

/// The statistics over the lower panes, the figures of `stats`: operation times and their
/// clock, kernels by operation name (where the trace has operation times), regions by
/// label, host callbacks, queue utilisation and copy bandwidth ([`stats_overlay`] lays
/// them out for the width), scrolled by ↑/↓.
pub(super) fn stats(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let inner = usize::from(area.width.saturating_sub(2));
    let lines: Vec<Line<'_>> = stats_overlay(model, inner)
        .into_iter()
        .map(|row| {
            let style = match row.style {
                RowStyle::Heading => theme::KEY,
                RowStyle::Missing => theme::DIM,
                RowStyle::Plain => Style::new(),
            };
            Line::styled(row.text, style)
        })
        .collect();
    let rows = usize::from(area.height.saturating_sub(2));
    let scroll = usize::from(state.stats_scroll).min(lines.len().saturating_sub(rows));
    let title = if lines.len() > rows {
        " Statistics (↑/↓ scroll, s or Esc closes) "
    } else {
        " Statistics (s or Esc closes) "
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
///
/// Over the statistics, the keys of that pane first: ↑/↓ scroll it and `h`/`e` replace it
/// with their list (it hid an open hazards list, whose `h hide hazards` read as a key doing
/// nothing there; fresh-user pass).
fn key_hints(state: &ViewState, room: usize) -> String {
    let hazards = if state.list == Some(ListKind::Hazards) {
        "h hide hazards"
    } else {
        "h hazards"
    };
    let keys: [&str; 8] = if state.show_stats {
        [
            "↑/↓ scroll",
            "s/Esc close",
            "←/→ span",
            "+/- zoom",
            "f fit",
            "h hazards",
            "e events",
            "/ search",
        ]
    } else {
        [
            "←/→ span",
            "↑/↓ queue",
            "+/- zoom",
            "f fit",
            hazards,
            "e events",
            "s stats",
            "/ search",
        ]
    };
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
            let behind = match live.behind_bytes {
                0 => String::new(),
                n => format!("behind: {} not read · ", units::bytes(n)),
            };
            format!(
                "live · {} · {behind}{} ",
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
