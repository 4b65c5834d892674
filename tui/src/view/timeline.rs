//! The header, the ruler, the submit/Busy ticks, the event markers and the lanes.

use super::theme::{self, Symbols};
use crate::state::{
    Area, GUTTER, LaneRaster, LaneRow, ListKind, Model, Raster, ScreenLayout, SpanRef, SpanStatus,
    ThreadRowArea, TimeWindow, ViewState, count_in,
};
use crate::state::{fit, units};
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};
use std::collections::HashSet;

pub(super) fn draw(model: &Model, state: &ViewState, layout: &ScreenLayout, buf: &mut Buffer) {
    let sym = Symbols::for_ascii(state.ascii);
    header(model, state, layout, buf);
    ruler(state, layout, buf, sym);
    ticks(model, state, layout, buf, sym);
    markers(model, state, layout, buf, sym);
    let highlights = Highlights::new(model, state);
    for row in &layout.lanes {
        let raster = lane(model, state, layout, row, &highlights, buf, sym);
        if let Some(area) = row.ops {
            ops_row(model, state, layout, row, area, &raster, buf, sym);
        }
    }
    for row in &layout.threads {
        thread(model, state, layout, row, buf, sym);
    }
}

/// A host thread's row (format 1.14): its spans as bars (a range nested in another drawn
/// over it), its markers as the marker symbol.
fn thread(
    model: &Model,
    state: &ViewState,
    layout: &ScreenLayout,
    row: &ThreadRowArea,
    buf: &mut Buffer,
    sym: &Symbols,
) {
    let a = row.area;
    let thread = &model.threads()[row.row];
    put(
        buf,
        a.x,
        a.y,
        &format!(" {}", fit(&thread.name, usize::from(GUTTER) - 2)),
        GUTTER,
        theme::DIM,
    );
    let cols = layout.timeline_cols;
    if cols == 0 {
        return;
    }
    let w: TimeWindow = state.window;
    for span in thread.visible(w.start_ns, w.end_ns) {
        let clipped = (span.start_ns < w.start_ns, span.end_ns > w.end_ns);
        let first = w.col(span.start_ns.max(w.start_ns), cols);
        let last = w.col(
            span.end_ns.min(w.end_ns).saturating_sub(1).max(w.start_ns),
            cols,
        );
        let width = last.saturating_sub(first) + 1;
        let label = thread.label(model.index(), span);
        let text = bar_text(&label, width, clipped, SpanStatus::Ok, sym);
        put(
            buf,
            GUTTER + first,
            a.y,
            &text,
            width,
            theme::thread_style(span.what),
        );
    }
    for &(t, _) in thread.markers_in(w.start_ns, w.end_ns) {
        let col = w.col(t, cols);
        put(buf, GUTTER + col, a.y, sym.marker, 1, theme::MARKER);
    }
}

/// Writes `text` at `(x, y)` clipped to `width` columns.
fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, width: u16, style: Style) {
    if width > 0 && y < buf.area.bottom() && x < buf.area.right() {
        buf.set_stringn(x, y, text, usize::from(width), style);
    }
}

fn header(model: &Model, state: &ViewState, layout: &ScreenLayout, buf: &mut Buffer) {
    let a = layout.header;
    let info = model.info();
    let source = match &info.session {
        Some(s) if !s.device.is_empty() => format!("{} · {}  ·  ", s.backend, s.device),
        Some(s) if !s.backend.is_empty() => format!("{}  ·  ", s.backend),
        _ => String::new(),
    };
    let counts = format!(
        "{}  ·  {} events",
        model.spans_summary(),
        model.events().len()
    );
    let w = state.window;
    let right = format!(
        "{} – {}  ({}) ",
        units::time(w.start_ns),
        units::time(w.end_ns),
        units::duration(w.width_ns())
    );
    let rw = right.chars().count() as u16;
    let fits = |left: &String| rw + left.chars().count() as u16 + 2 <= a.width;
    // The time window outranks the backend and device (the Trace pane names them too).
    let full = format!(" hrx-trace view  {source}{counts}");
    let short = format!(" hrx-trace view  {counts}");
    let (left, with_window) = if fits(&full) {
        (full, true)
    } else if fits(&short) {
        (short, true)
    } else {
        (full, false)
    };
    let style = Style::new().add_modifier(Modifier::BOLD);
    put(buf, a.x, a.y, &left, a.width, style);
    if with_window {
        put(buf, a.x + a.width - rw, a.y, &right, rw, Style::new());
    }
}

fn ruler(state: &ViewState, layout: &ScreenLayout, buf: &mut Buffer, sym: &Symbols) {
    let a = layout.ruler;
    let cols = layout.timeline_cols;
    let w = state.window;
    put(buf, a.x, a.y, " time", GUTTER, theme::DIM);
    if cols == 0 {
        return;
    }
    let ticks = units::ruler_ticks(w.start_ns, w.width_ns(), cols);
    let mut t = w
        .start_ns
        .div_ceil(ticks.step_ns)
        .saturating_mul(ticks.step_ns);
    while t < w.end_ns {
        let col = w.col(t, cols);
        let x = GUTTER + col;
        put(buf, x, a.y, sym.tick, 1, theme::DIM);
        let label = ticks.label(t);
        // Only whole labels: a cut one reads as another time.
        if (label.chars().count() as u16) < cols - col {
            put(buf, x + 1, a.y, &label, cols - col - 1, Style::new());
        }
        t = match t.checked_add(ticks.step_ns) {
            Some(next) => next,
            None => break,
        };
    }
    if state.cursor_ns >= w.start_ns && state.cursor_ns < w.end_ns {
        let x = GUTTER + w.col(state.cursor_ns, cols);
        let cell = &mut buf[(x, a.y)];
        if cell.symbol() == " " {
            cell.set_symbol(sym.cursor).set_fg(Color::Yellow);
        } else {
            cell.set_bg(Color::Yellow).set_fg(Color::Black);
        }
    }
}

fn ticks(model: &Model, state: &ViewState, layout: &ScreenLayout, buf: &mut Buffer, sym: &Symbols) {
    let a = layout.ticks;
    let cols = layout.timeline_cols;
    put(buf, a.x, a.y, " submits", GUTTER, theme::DIM);
    for col in 0..cols {
        let (t0, t1) = state.window.cell(col, cols);
        let x = GUTTER + col;
        if count_in(model.busy_times(), t0, t1) > 0 {
            put(
                buf,
                x,
                a.y,
                sym.busy,
                1,
                theme::event_style(crate::state::EventKind::Busy),
            );
        } else if count_in(model.submit_times(), t0, t1) > 0 {
            put(buf, x, a.y, sym.submit, 1, Style::new());
        }
    }
    // The submit that started the selection, in the selection's colours: the start of its
    // flow (the details pane lists the regions it started).
    if let Some(sel) = state.selection.and_then(|s| model.get_span(s)) {
        let t = model.submission(sel.submission).submit_ns;
        if t >= state.window.start_ns && t < state.window.end_ns {
            let x = GUTTER + state.window.col(t, cols);
            put(buf, x, a.y, sym.submit, 1, theme::SELECTED);
        }
    }
}

fn markers(
    model: &Model,
    state: &ViewState,
    layout: &ScreenLayout,
    buf: &mut Buffer,
    sym: &Symbols,
) {
    let a = layout.markers;
    let cols = layout.timeline_cols;
    put(buf, a.x, a.y, " events", GUTTER, theme::DIM);
    let events = model.events();
    let mut i = model.first_event_at(state.window.start_ns);
    for col in 0..cols {
        let (_, t1) = state.window.cell(col, cols);
        let mut best = None;
        // At most 64 events are inspected per cell; the rest only move the index.
        let mut seen = 0;
        while i < events.len() && events[i].time_ns < t1 {
            if seen < 64 {
                let kind = events[i].kind;
                if best.is_none_or(|b| theme::event_rank(kind) > theme::event_rank(b)) {
                    best = Some(kind);
                }
                seen += 1;
            }
            i += 1;
        }
        if let Some(kind) = best {
            let current = state
                .event_cursor
                .and_then(|c| events.get(c))
                .is_some_and(|e| {
                    state.window.col(e.time_ns, cols) == col
                        && e.time_ns >= state.window.start_ns
                        && e.time_ns < state.window.end_ns
                });
            let mut style = theme::event_style(kind);
            if current {
                style = style.add_modifier(Modifier::REVERSED);
            }
            put(buf, GUTTER + col, a.y, sym.event(kind), 1, style);
        }
    }
}

/// Spans drawn specially: the selection and, with the hazards list open, its producers
/// and consumers.
struct Highlights {
    selected: Option<SpanRef>,
    producers: HashSet<SpanRef>,
    consumers: HashSet<SpanRef>,
}

impl Highlights {
    fn new(model: &Model, state: &ViewState) -> Highlights {
        let mut h = Highlights {
            selected: state.selection,
            producers: HashSet::new(),
            consumers: HashSet::new(),
        };
        if state.list == Some(ListKind::Hazards) {
            let hazards = state.hazards(model);
            h.producers = hazards
                .producers
                .iter()
                .filter_map(|e| model.span_of(e.producer))
                .collect();
            h.consumers = hazards
                .consumers
                .iter()
                .filter_map(|e| model.span_of(e.consumer))
                .collect();
        }
        h
    }

    fn style(&self, r: SpanRef) -> Option<Style> {
        if self.selected == Some(r) {
            Some(theme::SELECTED)
        } else if self.producers.contains(&r) {
            Some(theme::PRODUCER)
        } else if self.consumers.contains(&r) {
            Some(theme::CONSUMER)
        } else {
            None
        }
    }
}

/// The text of a bar `width` columns wide: `[label  ]`, `‹label  ]` when clipped.
fn bar_text(
    label: &str,
    width: u16,
    clipped: (bool, bool),
    status: SpanStatus,
    sym: &Symbols,
) -> String {
    match width {
        0 => String::new(),
        1 => match status {
            SpanStatus::Failed => sym.failure.to_owned(),
            SpanStatus::Cancelled => sym.cancel.to_owned(),
            _ => sym.thin.to_owned(),
        },
        _ => {
            let inner = usize::from(width - 2);
            let open = if clipped.0 { sym.ends[2] } else { sym.ends[0] };
            let close = if clipped.1 { sym.ends[3] } else { sym.ends[1] };
            // In one column, the status mark says more than an ellipsis.
            let text = match status {
                SpanStatus::Failed if inner == 1 => sym.failure.to_owned(),
                SpanStatus::Cancelled if inner == 1 => sym.cancel.to_owned(),
                _ => fit(label, inner),
            };
            format!("{open}{text:<inner$}{close}")
        }
    }
}

/// Draws a lane's rows; returns its raster (the operations' row draws under its bars).
fn lane(
    model: &Model,
    state: &ViewState,
    layout: &ScreenLayout,
    row: &LaneRow,
    highlights: &Highlights,
    buf: &mut Buffer,
    sym: &Symbols,
) -> Raster {
    let a = row.area;
    let focused = state.lane == Some(row.lane);
    let name = model.lane_name(row.lane);
    let (marker, style) = if focused {
        (sym.focus, Style::new().add_modifier(Modifier::BOLD))
    } else {
        (" ", Style::new())
    };
    put(
        buf,
        a.x,
        a.y,
        &format!("{marker}{}", fit(&name, usize::from(GUTTER) - 2)),
        GUTTER,
        style,
    );
    let cols = layout.timeline_cols;
    let lane = model.lane(row.lane);
    let window: TimeWindow = state.window;
    let raster = lane.raster(window, cols);
    let meta_row = (a.height > 1).then_some(a.y + 1);
    for bar in &raster.bars {
        let span = &lane.spans()[bar.index as usize];
        let r = SpanRef {
            lane: row.lane,
            index: bar.index,
        };
        let submission = model.submission(span.submission);
        let style = highlights.style(r).unwrap_or_else(|| {
            if state.matches(model, span) {
                theme::span_style(submission.index.0, span.status())
            } else {
                theme::FILTERED_OUT
            }
        });
        let width = bar.last_col - bar.first_col + 1;
        let label = match span.status() {
            SpanStatus::Failed => format!("{} {}", sym.failure, model.span_label(span)),
            SpanStatus::Cancelled => format!("{} {}", sym.cancel, model.span_label(span)),
            // Unfinished: its bar runs to the trace's end.
            SpanStatus::Running => format!("{} running at end", model.span_label(span)),
            SpanStatus::TimingLost => format!("{} timing lost", model.span_label(span)),
            _ => model.span_label(span).to_owned(),
        };
        let text = bar_text(
            &label,
            width,
            (bar.clipped_start, bar.clipped_end),
            span.status(),
            sym,
        );
        let x = GUTTER + bar.first_col;
        put(buf, x, a.y, &text, width, style);
        if let Some(y) = meta_row
            && width >= 4
        {
            let mut meta = format!(
                "#{} {}",
                submission.index,
                units::duration(span.duration_ns())
            );
            if meta.chars().count() > usize::from(width) {
                meta = format!("#{}", submission.index);
            }
            let meta_style = if highlights.style(r).is_some() {
                style
            } else {
                theme::DIM
            };
            put(
                buf,
                x,
                y,
                &fit(&meta, usize::from(width)),
                width,
                meta_style,
            );
        }
    }
    // Summarised cells are a bar chart of how much of each cell's time is covered, over
    // the lane's two rows when it has them (the lower row fills first), so a lane busy 9%
    // of the time reads as low bars, not as solid blocks.
    let two_rows = raster.summarised && meta_row.is_some();
    let steps: u64 = if two_rows { 16 } else { 8 };
    for cell in &raster.dense {
        let s = cell.summary;
        let style = match s.worst {
            Some(status @ (SpanStatus::Failed | SpanStatus::Cancelled)) => theme::status_fg(status),
            _ => Style::new(),
        };
        // Anything at all in the cell shows at least the lowest step.
        let level = (u64::from(s.covered_permille) * steps)
            .div_ceil(1000)
            .max(1) as u16;
        let x = GUTTER + cell.col;
        match meta_row {
            Some(y) if two_rows => {
                put(buf, x, y, sym.level(level.min(8)), 1, style);
                put(buf, x, a.y, sym.level(level.saturating_sub(8)), 1, style);
            }
            _ => put(buf, x, a.y, sym.level(level), 1, style),
        }
    }
    raster
}

/// The row under a lane (`o`): the operations of each region drawn as a bar
/// above, as sub-spans labelled with their kernel's name (`fill`, `copy`), placed at their
/// device times where recorded ([`OpSpan::placed_ns`](crate::state::OpSpan::placed_ns)) and in their region's colours (a
/// failed region's in red, marked `✖`; the selection's highlighted). Only regions drawn as
/// bars are read, so a frame reads the operations of at most a few spans per column; where
/// the lane is summarised, the row says to zoom in, and a trace without operation timings
/// says so.
#[allow(clippy::too_many_arguments)]
fn ops_row(
    model: &Model,
    state: &ViewState,
    layout: &ScreenLayout,
    row: &LaneRow,
    area: Area,
    raster: &Raster,
    buf: &mut Buffer,
    sym: &Symbols,
) {
    put(buf, area.x, area.y, "   ops", GUTTER, theme::DIM);
    let cols = layout.timeline_cols;
    if cols == 0 {
        return;
    }
    if !model.has_op_timings() {
        let note = "no per-operation times recorded in this trace";
        put(buf, GUTTER + 1, area.y, note, cols - 1, theme::DIM);
        return;
    }
    let w = state.window;
    let lane = model.lane(row.lane);
    let clock = model.clock(lane.runtime);
    let mut drawn = false;
    for bar in &raster.bars {
        let span = &lane.spans()[bar.index as usize];
        let ops = model.span_ops(span);
        if ops.is_empty() {
            continue;
        }
        let r = SpanRef {
            lane: row.lane,
            index: bar.index,
        };
        let submission = model.submission(span.submission);
        let style = if state.selection == Some(r) {
            theme::SELECTED
        } else if state.matches(model, span) {
            theme::span_style(submission.index.0, span.status())
        } else {
            theme::FILTERED_OUT
        };
        let region = model.region(span.region);
        let runtime = model.prepared()[region.prepared.get()].runtime;
        for op in ops {
            let (start, end) = op.placed_ns(clock);
            let end = end.max(start.saturating_add(1));
            if end <= w.start_ns || start >= w.end_ns {
                continue;
            }
            let first = w.col(start.max(w.start_ns), cols);
            let last = w.col(end.min(w.end_ns).saturating_sub(1).max(w.start_ns), cols);
            let width = last.saturating_sub(first) + 1;
            let name = model.op(region.prepared, op.node()).map_or_else(
                || format!("#{}", op.node()),
                |o| model.listed_op_name(runtime, &o.op, region.queue),
            );
            let label = match span.status() {
                SpanStatus::Failed => format!("{} {name}", sym.failure),
                _ => name,
            };
            let clipped = (start < w.start_ns, end > w.end_ns);
            // Two columns hold brackets only: a failed region's mark says more.
            let text = match (width, span.status()) {
                (2, SpanStatus::Failed) => format!("{} ", sym.failure),
                _ => bar_text(&label, width, clipped, span.status(), sym),
            };
            put(buf, GUTTER + first, area.y, &text, width, style);
            drawn = true;
        }
    }
    if !drawn && !raster.dense.is_empty() {
        let note = "zoom in to see operations";
        put(buf, GUTTER + 1, area.y, note, cols - 1, theme::DIM);
    }
}
