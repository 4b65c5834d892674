//! Drawing, with ratatui 0.30: every function takes the model and the view state by shared
//! reference and writes only into the frame's buffer.
//!
//! - `timeline`: header, ruler, submit/Busy ticks, event markers and one or two rows per
//!   lane; drawn cell by cell from [`Lane::raster`](crate::state::Lane::raster), so a frame
//!   costs the same for a thousand spans or a million.
//! - `panes`: details of the selection (or of the trace), the hazards list and the events
//!   list.
//! - `overlays`: statistics, help and the status line.
//! - `overview`: the summary frame shown while a large trace's index is built.
//! - `theme`: colours (a cycling palette per submission; failed red, cancelled grey;
//!   producers yellow and consumers cyan while the hazards list is open) and symbols
//!   (Unicode, or ASCII with [`ViewState::ascii`], which then also turns every other glyph
//!   drawn, borders and text alike, into ASCII).
//!
//! The layout comes from [`ScreenLayout`], which click handling shares.

mod overlays;
mod overview;
mod panes;
mod theme;
mod timeline;

use crate::state::{Model, ScreenLayout, ViewState};
use ratatui::Frame;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub use overview::{overview_to_string, render_overview};
pub use theme::Symbols;

/// Draws the whole screen.
pub fn render(model: &Model, state: &ViewState, frame: &mut Frame<'_>) {
    let area = frame.area();
    let layout = ScreenLayout::compute(area.width, area.height, model, state);
    let buf = frame.buffer_mut();
    draw(model, state, &layout, buf);
    if state.ascii {
        theme::asciify(buf);
    }
}

/// Draws the screen into `buf` (whose area is the whole terminal).
fn draw(model: &Model, state: &ViewState, layout: &ScreenLayout, buf: &mut Buffer) {
    timeline::draw(model, state, layout, buf);
    if let Some(area) = layout.stats {
        overlays::stats(model, state, rect(area), buf);
    }
    if let Some(area) = layout.details {
        panes::details(model, state, rect(area), buf);
    }
    if let Some(area) = layout.list {
        panes::list(model, state, rect(area), buf);
    }
    // In a terminal too short for the top rows they fall on the status row (the layout
    // keeps every row on screen); the status line is kept whole, not mixed with them.
    ratatui::widgets::Widget::render(ratatui::widgets::Clear, rect(layout.status), buf);
    overlays::status_line(model, state, rect(layout.status), buf);
    if let Some(area) = layout.help {
        overlays::help(state, rect(area), buf);
    }
}

/// How far the details pane scrolls at most on this screen, and a page of it (for
/// PgUp/PgDn): `(0, _)` when there is no pane or nothing is hidden.
pub fn details_scroll_limit(model: &Model, state: &ViewState) -> (u16, u16) {
    match state.layout(model).details {
        Some(area) => panes::details_scroll_limit(model, state, rect(area)),
        None => (0, 1),
    }
}

/// A layout area as a ratatui rectangle.
fn rect(a: crate::state::Area) -> Rect {
    Rect::new(a.x, a.y, a.width, a.height)
}

/// Renders a `width`×`height` screen and returns it as text: one line per row, trailing
/// spaces trimmed (for snapshot tests and end-to-end checks).
pub fn render_to_string(model: &Model, state: &ViewState, width: u16, height: u16) -> String {
    let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(never) => match never {},
    };
    if let Err(never) = terminal.draw(|frame| render(model, state, frame)) {
        match never {}
    }
    buffer_to_string(terminal.backend().buffer())
}

/// The text of a buffer, one line per row, trailing spaces trimmed.
pub fn buffer_to_string(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod ops_tests;
#[cfg(test)]
mod same_screens;
#[cfg(test)]
mod stats_tests;
#[cfg(test)]
mod tests;
