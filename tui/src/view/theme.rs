//! Colours and symbols.

use crate::state::{EventKind, SpanStatus};
use ratatui::style::{Color, Modifier, Style};

/// Background colours of submissions, cycled by submission index (no red, grey, yellow or
/// cyan: those mean failed, cancelled, producer and consumer).
const PALETTE: [Color; 6] = [
    Color::Blue,
    Color::Green,
    Color::Magenta,
    Color::LightBlue,
    Color::LightGreen,
    Color::LightMagenta,
];

/// The style of a span bar.
pub(super) fn span_style(submission: u64, status: SpanStatus) -> Style {
    match status {
        SpanStatus::Failed => Style::new()
            .bg(Color::Red)
            .fg(Color::White)
            .add_modifier(Modifier::BOLD),
        SpanStatus::Cancelled | SpanStatus::TimingLost => {
            Style::new().bg(Color::DarkGray).fg(Color::Gray)
        }
        SpanStatus::Running => Style::new()
            .bg(Color::Yellow)
            .fg(Color::Black)
            .add_modifier(Modifier::BOLD),
        SpanStatus::Ok | SpanStatus::Unknown => {
            let bg = PALETTE[(submission % PALETTE.len() as u64) as usize];
            let fg = if bg == Color::Blue || bg == Color::Magenta {
                Color::White
            } else {
                Color::Black
            };
            let style = Style::new().bg(bg).fg(fg);
            if status == SpanStatus::Unknown {
                style.add_modifier(Modifier::ITALIC)
            } else {
                style
            }
        }
    }
}

/// The selected span.
pub(super) const SELECTED: Style = Style::new()
    .bg(Color::White)
    .fg(Color::Black)
    .add_modifier(Modifier::BOLD);
/// A producer of the selection (hazards list open).
pub(super) const PRODUCER: Style = Style::new().bg(Color::Yellow).fg(Color::Black);
/// A consumer of the selection (hazards list open).
pub(super) const CONSUMER: Style = Style::new().bg(Color::Cyan).fg(Color::Black);
/// A span that does not match the search.
pub(super) const FILTERED_OUT: Style = Style::new().fg(Color::DarkGray);
/// Secondary text.
pub(super) const DIM: Style = Style::new().fg(Color::DarkGray);
/// Field names and headings.
pub(super) const KEY: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
/// The cursor of a list.
pub(super) const LIST_CURSOR: Style = Style::new().bg(Color::DarkGray).fg(Color::White);
/// The focused pane's border.
pub(super) const FOCUSED: Style = Style::new().fg(Color::Yellow);

/// A host thread's marker (format 1.14).
pub(super) const MARKER: Style = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);

/// A host thread's span: the runtime's (submit, wait, host callback) in grey tones, a
/// recorder wait in red, the application's ranges in blue.
pub(super) fn thread_style(what: hrx_analysis::timeline::ThreadWhat) -> Style {
    use hrx_analysis::timeline::ThreadWhat;
    use hrx_capture::schema::HostSpanKind;
    match what {
        ThreadWhat::Host(HostSpanKind::Wait, _) => {
            Style::new().bg(Color::DarkGray).fg(Color::White)
        }
        // Capture work holding the thread, as a recorder wait is.
        ThreadWhat::Host(HostSpanKind::CaptureFence, _) => {
            Style::new().bg(Color::LightRed).fg(Color::Black)
        }
        ThreadWhat::Host(_, _) => Style::new().bg(Color::Gray).fg(Color::Black),
        ThreadWhat::RecorderWait => Style::new().bg(Color::Red).fg(Color::White),
        ThreadWhat::Range(_) => Style::new().bg(Color::Blue).fg(Color::White),
    }
}

/// The colour of a status in text.
pub(super) fn status_fg(status: SpanStatus) -> Style {
    match status {
        SpanStatus::Ok => Style::new().fg(Color::Green),
        SpanStatus::Unknown => Style::new().fg(Color::Yellow),
        SpanStatus::Cancelled | SpanStatus::TimingLost => Style::new().fg(Color::Gray),
        SpanStatus::Failed => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        SpanStatus::Running => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    }
}

/// The colour of an event marker.
pub(super) fn event_style(kind: EventKind) -> Style {
    match kind {
        EventKind::Busy | EventKind::Refused => Style::new().fg(Color::Yellow),
        EventKind::RegionCancelled => Style::new().fg(Color::Gray),
        EventKind::CopyStreamUnhealthy => Style::new().fg(Color::LightRed),
        EventKind::Poison => Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
        _ => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
    }
}

/// Marker precedence when several events share a cell (higher wins).
pub(super) fn event_rank(kind: EventKind) -> u8 {
    match kind {
        EventKind::RegionFailed | EventKind::DeviceLost | EventKind::Quarantine => 7,
        EventKind::FaultInjected => 6,
        EventKind::Poison => 5,
        EventKind::CopyStreamUnhealthy => 4,
        EventKind::RegionCancelled => 3,
        EventKind::Busy => 2,
        EventKind::Refused => 1,
    }
}

/// The glyphs the views draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbols {
    /// Device lost, quarantine, failed region.
    pub failure: &'static str,
    /// Injected fault.
    pub fault: &'static str,
    /// Poisoned buffer.
    pub poison: &'static str,
    /// Cancelled region.
    pub cancel: &'static str,
    /// Unhealthy copy stream.
    pub unhealthy: &'static str,
    /// Busy refusal.
    pub busy: &'static str,
    /// Another refusal.
    pub refused: &'static str,
    /// A submit tick.
    pub submit: &'static str,
    /// A ruler tick.
    pub tick: &'static str,
    /// The time cursor on the ruler.
    pub cursor: &'static str,
    /// A one-column span.
    pub thin: &'static str,
    /// Bar ends: start, end, clipped start, clipped end.
    pub ends: [&'static str; 4],
    /// A summarised cell covered 1/8, 2/8, ... 8/8 of its time (a bar chart of the
    /// lane's utilisation, from the bottom of the cell).
    pub levels: [&'static str; 8],
    /// Focused lane marker.
    pub focus: &'static str,
    /// An application's marker on a host thread's row.
    pub marker: &'static str,
    /// Between the two ends of a time range ("1.2 ms → 1.5 ms").
    pub to: &'static str,
    /// Producer / consumer arrows in the hazards list.
    pub arrows: [&'static str; 2],
}

impl Symbols {
    /// Unicode symbols.
    pub const UNICODE: Symbols = Symbols {
        failure: "✖",
        fault: "↯",
        poison: "☠",
        cancel: "∅",
        unhealthy: "!",
        busy: "B",
        refused: "?",
        submit: "╵",
        tick: "│",
        cursor: "▼",
        thin: "▌",
        ends: ["[", "]", "‹", "›"],
        levels: ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"],
        focus: "▶",
        marker: "◆",
        to: "→",
        arrows: ["←", "→"],
    };

    /// ASCII symbols, for terminals without the Unicode ones.
    pub const ASCII: Symbols = Symbols {
        failure: "X",
        fault: "F",
        poison: "P",
        cancel: "C",
        unhealthy: "!",
        busy: "B",
        refused: "?",
        submit: "'",
        tick: "|",
        cursor: "v",
        thin: "|",
        ends: ["[", "]", "<", ">"],
        levels: [".", ".", ":", ":", "+", "+", "#", "#"],
        focus: ">",
        marker: "*",
        // Two columns: [`asciify`]'s one-column `>` read as "greater than" between two
        // times (a break-it pass).
        to: "->",
        arrows: ["<-", "->"],
    };

    /// The symbols for `ascii`.
    pub fn for_ascii(ascii: bool) -> &'static Symbols {
        if ascii {
            &Symbols::ASCII
        } else {
            &Symbols::UNICODE
        }
    }

    /// The marker of an event kind.
    pub fn event(&self, kind: EventKind) -> &'static str {
        match kind {
            EventKind::RegionFailed | EventKind::DeviceLost | EventKind::Quarantine => self.failure,
            EventKind::FaultInjected => self.fault,
            EventKind::Poison => self.poison,
            EventKind::CopyStreamUnhealthy => self.unhealthy,
            EventKind::RegionCancelled => self.cancel,
            EventKind::Busy => self.busy,
            EventKind::Refused => self.refused,
        }
    }

    /// The glyph of `eighths` (1..=8) of a cell covered; 0 draws nothing.
    pub fn level(&self, eighths: u16) -> &'static str {
        match eighths {
            0 => " ",
            e => self.levels[usize::from(e.min(8)) - 1],
        }
    }
}

/// The one-column ASCII stand-in of a glyph, for [`asciify`]: what the ASCII [`Symbols`]
/// use for the timeline's own, a look-alike for the rest, `?` for any other (a label's
/// letters of another script). An ASCII letter with combining marks (`e\u{301}`) is drawn
/// by [`asciify`] as its letter.
fn ascii_of(glyph: &str) -> &'static str {
    match glyph.chars().next().unwrap_or(' ') {
        '─' | '━' | '═' | '–' | '—' | '╌' => "-",
        '│' | '┃' | '║' | '▌' | '▏' | '╎' => "|",
        '┌' | '┐' | '└' | '┘' | '├' | '┤' | '┬' | '┴' | '┼' | '╭' | '╮' | '╰' | '╯' => {
            "+"
        }
        '…' | '≈' => "~",
        'µ' => "u",
        '×' => "x",
        // "61 °C": a degree sign, not a letter lost.
        '°' => "o",
        '·' | '░' | '▁' | '▂' => ".",
        '▃' | '▄' => ":",
        '▅' | '▆' => "+",
        '▇' | '█' | '▓' | '▒' => "#",
        '←' | '‹' | '≤' => "<",
        // Left in text, `→` is an arrow key (`←/→`); a time range writes [`Symbols::to`].
        '→' | '›' | '≥' | '▶' => ">",
        '↑' => "^",
        '↓' | '▼' => "v",
        '‰' => "%",
        '✖' => "X",
        '↯' => "F",
        '☠' => "P",
        '∅' => "C",
        '◆' => "*",
        '╵' => "'",
        _ => "?",
    }
}

/// Replaces every glyph in `buf` that is not ASCII with its stand-in ([`ascii_of`]), so
/// `HRX_TUI_ASCII=1` draws ASCII only: borders, bars, cut labels and units drawn by
/// ratatui and by the panes' text too, not only the timeline's [`Symbols`]. A wide glyph
/// becomes one column; the cell after it, blank already, is then drawn as a space.
pub(crate) fn asciify(buf: &mut ratatui::buffer::Buffer) {
    for cell in &mut buf.content {
        if cell.symbol().is_ascii() {
            continue;
        }
        match cell.symbol().chars().next() {
            // Its combining marks dropped, the letter kept (it was `?`: a break-it pass).
            Some(base) if base.is_ascii() => {
                cell.set_symbol(base.encode_utf8(&mut [0; 4]));
            }
            _ => {
                cell.set_symbol(ascii_of(cell.symbol()));
            }
        }
    }
}
