//! The details pane (the selected span, or the trace when nothing is selected), the
//! hazards list and the events list.
//!
//! - The details pane scrolls ([`ViewState::details_scroll`]); a cut shows how many lines
//!   are above and below and which keys reach them.
//! - **The failed operation.** The trace's failure record ([`RegionDone`]'s error) names
//!   the region, not the operation, so it is derived from the error's text: the runtime
//!   ends every native failure it raises with the operation it was running in
//!   parentheses (`… at device operation 9 (hrx_blur_h)`: the kernel's entry name, `fill`
//!   or `copy`), and the region's operation with that name is marked `✖`. Two operations
//!   of that name in one region are both marked (`failed here?`) and said to be
//!   ambiguous; an error that
//!   names no operation (a native graph failing as a whole, as CUDA reports it) marks
//!   none and says so.
//! - **Flows.** A terminal has no room for arrows from each submit to the regions it
//!   started, so the flow is listed and marked instead: the details of a span list every
//!   region its submission started, with each one's start after the submit (`after 12
//!   µs`),
//!   and the timeline marks the selection's submit tick.
//!
//! [`RegionDone`]: hrx_capture::schema::RegionDone

use super::theme::{self, Symbols};
use crate::state::fit;
use crate::state::units;
use crate::state::{
    EXPLICIT_PRODUCERS_KEPT, Event, Focus, HazardEdge, HazardScope, ListKind, Model, OpClock,
    OpSpan, RegionKey, SpanRef, SpanStatus, ViewState, list_offset, queue_name,
};
use hrx_capture::schema::{Access, OpKind, Placement, RegionKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span as Text};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

/// A `name  value` line.
fn field<'a>(name: &'a str, value: impl Into<Text<'a>>) -> Line<'a> {
    Line::from(vec![
        Text::styled(format!("{name:<11} "), theme::KEY),
        value.into(),
    ])
}

fn access(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "read-write",
    }
}

fn kind_name(kind: RegionKind) -> &'static str {
    match kind {
        RegionKind::NativeGraph => "native graph",
        RegionKind::CopyBatch => "copy batch",
        RegionKind::Scoped => "scoped callback",
        RegionKind::NpuRun => "NPU run",
        RegionKind::Host => "host work",
    }
}

/// `sub 12 r1 blur`: a region of a submission, for lists.
pub(super) fn region_name(model: &Model, key: RegionKey) -> String {
    let sub = model.submission(key.submission);
    let label = model
        .region_of(key)
        .map_or("?", |r| model.label(model.region_label(r)));
    format!("sub {} r{} {label}", sub.index, key.region)
}

fn pane<'a>(title: String, focused: bool) -> Block<'a> {
    let block = Block::new().borders(Borders::ALL).title(title);
    if focused {
        block.border_style(theme::FOCUSED)
    } else {
        block
    }
}

pub(super) fn details(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let (title, lines) = details_content(model, state);
    let lines = wrap(lines, usize::from(area.width.saturating_sub(2)));
    let rows = usize::from(area.height.saturating_sub(2));
    let lines = scroll_rows(lines, rows, usize::from(state.details_scroll));
    Paragraph::new(lines)
        .block(pane(title, false))
        .render(area, buf);
}

/// The details pane's content: title and lines (before wrapping).
fn details_content(model: &Model, state: &ViewState) -> (String, Vec<Line<'static>>) {
    // An event of the open list that has no span (a lost device, an unhealthy stream, a
    // refused submit) is shown whole when nothing is selected.
    let event = state
        .event_cursor
        .filter(|_| state.list == Some(ListKind::Events) && state.selection.is_none())
        .and_then(|i| model.events().get(i))
        .filter(|e| e.span.is_none());
    match state.selection.filter(|&s| model.get_span(s).is_some()) {
        Some(s) => (
            " Details ".to_owned(),
            span_lines(model, s, Symbols::for_ascii(state.ascii)),
        ),
        None => match event {
            Some(e) => (" Event ".to_owned(), event_lines(e)),
            None => (" Trace ".to_owned(), trace_lines(model, state)),
        },
    }
}

/// How far the details pane of `area` scrolls at most, and a page (for PgUp/PgDn).
pub(super) fn details_scroll_limit(model: &Model, state: &ViewState, area: Rect) -> (u16, u16) {
    let (_, lines) = details_content(model, state);
    let len = wrap(lines, usize::from(area.width.saturating_sub(2))).len();
    let rows = usize::from(area.height.saturating_sub(2));
    let limit = if len <= rows { 0 } else { len - (rows - 1) };
    let page = rows.saturating_sub(2).max(1);
    (limit.min(usize::from(u16::MAX)) as u16, page as u16)
}

/// Where a [`field`]'s value starts: the name padded to 11 columns and a space.
const VALUE_COLUMN: usize = 12;

/// `lines` wrapped to `width` columns so that nothing is clipped at the pane's edge. A line
/// breaks at a space (dropped) other than one after a plain number, or after a hyphen, else
/// mid-word. Continuations are indented to the value column, or to the line's own
/// indentation where that is deeper (an operation's sub-rows); in a pane under 30 columns,
/// by 2, a sub-row's own indentation shrinking to 2 too. Styles are kept.
pub(super) fn wrap(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    if width < 8 {
        return lines;
    }
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let chars: Vec<(char, Style)> = line
            .spans
            .iter()
            .flat_map(|t| t.content.chars().map(move |c| (c, t.style)))
            .collect();
        if chars.len() <= width {
            out.push(line);
            continue;
        }
        let lead = chars.iter().take_while(|&&(c, _)| c == ' ').count();
        // Below 30 columns the value column would leave room for a word or two.
        let narrow = width < 30;
        let hanging = if narrow {
            2
        } else {
            lead.max(VALUE_COLUMN).min(width / 2)
        };
        let mut rest = &chars[..];
        if narrow && lead > 2 {
            rest = &rest[lead - 2..];
        }
        let mut indent = 0;
        while !rest.is_empty() {
            let room = width - indent;
            let take = if rest.len() <= room {
                rest.len()
            } else {
                // Before a space (trimmed below) or after a hyphen, the last that fits.
                (1..=room)
                    .rev()
                    .find(|&at| match rest[at].0 {
                        ' ' => rest[at - 1].0 != ' ' && !number_before(rest, at),
                        _ => rest[at - 1].0 == '-',
                    })
                    .unwrap_or(room)
            };
            let (head, tail) = rest.split_at(take);
            let mut spans = vec![Text::raw(" ".repeat(indent))];
            for run in head.chunk_by(|a, b| a.1 == b.1) {
                spans.push(Text::styled(
                    run.iter().map(|&(c, _)| c).collect::<String>(),
                    run[0].1,
                ));
            }
            out.push(Line::from(spans).style(line.style));
            rest = &tail[tail.iter().take_while(|&&(c, _)| c == ' ').count()..];
            indent = hanging;
        }
    }
    out
}

/// Whether the space at `at` follows a plain number (`86.2`, `(+5`), which then stays with
/// the word after it: its unit or what it counts (`86.2 ms`, `(+5 untimed)`). A number
/// that ends a clause (`2,`) or a shape (`20×13×1`) can end a line.
fn number_before(chars: &[(char, Style)], at: usize) -> bool {
    let word: Vec<char> = chars[..at]
        .iter()
        .rev()
        .map(|&(c, _)| c)
        .take_while(|&c| c != ' ')
        .collect();
    let mut digits = word.iter().rev().skip_while(|&&c| c == '(' || c == '+');
    word.first().is_some_and(char::is_ascii_digit)
        && digits.all(|c| c.is_ascii_digit() || *c == '.')
}

/// `lines` scrolled down by `scroll` and cut to `rows`: a first row says how many lines
/// are above, a last row how many more are below (a cut with no mark reads as the end),
/// each with the keys that reach them. `scroll` past the end shows the end.
fn scroll_rows(lines: Vec<Line<'static>>, rows: usize, scroll: usize) -> Vec<Line<'static>> {
    if lines.len() <= rows || rows < 3 {
        return lines;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let scroll = scroll.min(lines.len() - (rows - 1));
    let mut out = Vec::with_capacity(rows);
    let mut room = rows;
    if scroll > 0 {
        out.push(Line::styled(
            format!("… {scroll} line{} above (PgUp)", plural(scroll)),
            theme::DIM,
        ));
        room -= 1;
    }
    let below = lines.len() - scroll;
    let shown = if below > room { room - 1 } else { below };
    let more = below - shown;
    out.extend(lines.into_iter().skip(scroll).take(shown));
    if more > 0 {
        out.push(Line::styled(
            format!("… {more} more line{} (PgDn)", plural(more)),
            theme::DIM,
        ));
    }
    out
}

fn span_lines(model: &Model, r: SpanRef, sym: &Symbols) -> Vec<Line<'static>> {
    let span = *model.span(r);
    let region = model.region(span.region);
    let sub = *model.submission(span.submission);
    let prepared = &model.prepared()[region.prepared.get()];
    let runtime = prepared.runtime;
    let mut lines = vec![Line::from(vec![
        Text::styled(
            format!(
                "{}  ·  sub {} · region {} · {}  ",
                model.span_label(&span),
                sub.index,
                region.index,
                queue_name(region.queue)
            ),
            Style::new().add_modifier(ratatui::style::Modifier::BOLD),
        ),
        Text::styled(span.status().name(), theme::status_fg(span.status())),
    ])];
    // Why it failed or was cancelled comes first: below the operations it was out of sight.
    let event = model.span_event(r);
    if let Some(e) = event {
        lines.push(field(
            "status",
            Text::styled(
                format!("{}: {}", e.kind.name(), e.text),
                theme::status_fg(span.status()),
            ),
        ));
    }
    let failed_name = event
        .filter(|_| span.status() == SpanStatus::Failed)
        .and_then(|e| failed_operation(&e.text));
    let op_names: Vec<Option<String>> = region
        .nodes
        .iter()
        .map(|&n| {
            model
                .op(region.prepared, n)
                .map(|op| model.op_name(runtime, &op.op))
        })
        .collect();
    let failed_ops = failed_name.as_deref().map_or(0, |name| {
        op_names
            .iter()
            .filter(|n| n.as_deref().is_some_and(|n| op_is(n, name)))
            .count()
    });
    if span.status() == SpanStatus::Failed && !region.nodes.is_empty() {
        let note = match (failed_name.as_deref(), failed_ops) {
            (Some(name), 1) => format!("{} {name}, marked below", sym.failure),
            (Some(name), n @ 2..) => {
                format!("one of the {n} ops named {name} (the error does not say which)")
            }
            _ => "not named by the error (the region failed as a whole)".to_owned(),
        };
        lines.push(field(
            "failed op",
            Text::styled(note, theme::status_fg(span.status())),
        ));
    }
    lines.push(field(
        "kind",
        format!(
            "{}, {} op{}, {:?} engine",
            kind_name(region.kind),
            region.nodes.len(),
            if region.nodes.len() == 1 { "" } else { "s" },
            region.engine
        ),
    ));
    let ops = model.span_ops(&span);
    let clock = model.clock(runtime);
    lines.extend(op_times_line(model, &span, region, ops));
    for (i, &node) in region.nodes.iter().enumerate() {
        let Some(op) = model.op(region.prepared, node) else {
            lines.push(field("op", format!("#{node} (not recorded)")));
            continue;
        };
        let name = op_names[i].clone().unwrap_or_default();
        let failed = failed_name.as_deref().is_some_and(|f| op_is(&name, f));
        // Shown as every other verb lists it (a copy by its lane: `upload`, `download`),
        // matched against the failure by its own name.
        let shown = model.listed_op_name(runtime, &op.op, region.queue);
        let mut text = format!("#{node} {shown}");
        let timed = ops.iter().find(|o| o.node() == node);
        let time = timed.map(|o| op_time(o, &span, clock));
        let mut launch = None;
        if let OpKind::Kernel { kernel } | OpKind::Npu { kernel } = op.op
            && let Some(k) = model.kernel(runtime, kernel)
        {
            let [gx, gy, gz] = k.grid;
            let [bx, by, bz] = k.block;
            launch = Some(format!(
                "  grid {gx}×{gy}×{gz}  block {bx}×{by}×{bz}  const {}",
                units::bytes(k.constants.len() as u64)
            ));
        }
        if let OpKind::Fill { value } = op.op {
            text.push_str(&format!("  value {value:#04x}"));
        }
        // The time, in the region's failure colour when the region failed.
        let time_style = match span.status() {
            SpanStatus::Failed => theme::status_fg(SpanStatus::Failed),
            _ => Style::new(),
        };
        let time = match time {
            Some(t) => Some(Text::styled(format!("  {t}"), time_style)),
            // Its region's others were timed: this one was not (a failed region's
            // operations after the failure never ran).
            None if !ops.is_empty() => Some(Text::styled("  not timed", theme::DIM)),
            None => None,
        };
        if failed {
            lines.push(Line::from(
                [
                    Text::styled(
                        format!("{:<11} ", format!("op {}", sym.failure)),
                        theme::status_fg(SpanStatus::Failed),
                    ),
                    Text::styled(
                        // Ambiguous when several operations have the failure's name.
                        format!(
                            "{text}  failed here{}",
                            if failed_ops > 1 { "?" } else { "" }
                        ),
                        theme::status_fg(SpanStatus::Failed),
                    ),
                ]
                .into_iter()
                .chain(time)
                .collect::<Vec<_>>(),
            ));
        } else {
            let mut line = field("op", text);
            line.spans.extend(time);
            lines.push(line);
        }
        lines.extend(launch.map(|l| field("", l)));
        for u in &op.uses {
            lines.push(field(
                "",
                format!(
                    "  {}  {}  {}",
                    buffer_name(model, runtime, u.buffer),
                    units::range(u.start, u.end),
                    access(u.access)
                ),
            ));
        }
    }
    if region.nodes.is_empty()
        || region
            .nodes
            .iter()
            .all(|&n| model.op(region.prepared, n).is_none())
    {
        for u in &region.uses {
            lines.push(field(
                "uses",
                format!(
                    "buf {} {}  {}",
                    u.buffer,
                    units::range(u.start, u.end),
                    access(u.access)
                ),
            ));
        }
    }
    if region.copy_bytes > 0 {
        lines.push(field("copied", units::bytes(region.copy_bytes)));
    }
    if span.status() == SpanStatus::Running {
        lines.push(field(
            "host",
            format!(
                "{} {} {} ({})",
                units::time(span.start_ns),
                sym.to,
                hrx_analysis::RUNNING_AT_END,
                units::time(span.end_ns)
            ),
        ));
    } else if span.ran() {
        lines.push(field(
            "host",
            format!(
                "{} {} {}  ({})",
                units::time(span.start_ns),
                sym.to,
                units::time(span.end_ns),
                units::duration(span.duration_ns())
            ),
        ));
    } else {
        lines.push(field(
            "host",
            format!("never ran; done at {}", units::time(span.start_ns)),
        ));
    }
    // Its recorded times end before they start (crafted or damaged): drawn as 0 ns, said.
    if span.ends_before_start() {
        lines.push(field(
            "times",
            Text::styled(
                "end before they start (crafted or damaged): drawn as 0 ns long",
                theme::status_fg(SpanStatus::Failed),
            ),
        ));
    }
    if let Some((d0, d1)) = span.device_ns() {
        let times = match model.clock(runtime) {
            Some(c) => format!(
                "{} {} {}",
                units::time(c.to_host_ns(d0)),
                sym.to,
                units::time(c.to_host_ns(d1))
            ),
            None => format!("device clock {d0} {} {d1} ns", sym.to),
        };
        lines.push(field(
            "device",
            format!("{}  {times}", units::duration(d1 - d0)),
        ));
    }
    let after: Vec<String> = model
        .explicit_producers(span.submission)
        .iter()
        .map(ToString::to_string)
        .collect();
    lines.push(field(
        "submission",
        format!(
            "{} · slot {} · submitted {} · {}",
            sub.index,
            sub.slot,
            units::time(sub.submit_ns),
            sub.status().name(),
        ),
    ));
    if !after.is_empty() {
        lines.push(field("after", format!("submissions {}", after.join(", "))));
    }
    let left_out = model.explicit_producers_left_out(span.submission);
    if left_out > 0 {
        // Those past the latest the model keeps (`EXPLICIT_PRODUCERS_KEPT`), counted.
        lines.push(field(
            "",
            Text::styled(
                format!("+{left_out} more not kept (the view keeps {EXPLICIT_PRODUCERS_KEPT})"),
                theme::DIM,
            ),
        ));
    }
    lines.push(field(
        "prepared",
        format!(
            "{} from graph {} · {} slots",
            prepared.id, prepared.graph, prepared.slots
        ),
    ));
    lines.extend(started_lines(model, span.submission));
    let hazards = model.hazards(r);
    lines.push(field(
        "hazards",
        format!(
            "waited on {}{}, released {}{}",
            hazards.producers.len(),
            not_kept(hazards.producers_left_out),
            hazards.consumers.len(),
            if hazards.consumers_incomplete {
                " (maybe more, not kept)"
            } else {
                ""
            }
        ),
    ));
    // On its own line: after the counts it was clipped in a pane of 120 columns.
    lines.push(field(
        "",
        Text::styled("h lists them, p jumps to the producer", theme::DIM),
    ));
    lines
}

/// What the trace says of the span's operations' times (`op times`): how many were timed
/// and on which clock, their sum against the region's time, that a failed region's are
/// not durations of completed work; or that none were recorded, where a region of several
/// operations (a native graph) would have them.
fn op_times_line(
    model: &Model,
    span: &crate::state::Span,
    region: &crate::state::RegionInfo,
    ops: &[OpSpan],
) -> Option<Line<'static>> {
    if ops.is_empty() {
        let graph = region.kind == RegionKind::NativeGraph || region.nodes.len() > 1;
        return match (model.has_op_timings(), graph && span.ran()) {
            (false, true) => Some(field(
                "op times",
                Text::styled("no per-operation times recorded in this trace", theme::DIM),
            )),
            (true, true) => Some(field(
                "op times",
                Text::styled("none recorded for this region", theme::DIM),
            )),
            _ => None,
        };
    }
    let on_device = ops.iter().filter(|o| o.device_ns().is_some()).count();
    let clock = match on_device {
        0 => "on the host (no device time)",
        n if n == ops.len() => "on the device",
        _ => "on the device where recorded, else the host",
    };
    let sum: u64 = ops.iter().map(|o| o.time().0).sum();
    let region_ns = span
        .device_ns()
        .filter(|_| on_device > 0)
        .map_or(span.duration_ns(), |(d0, d1)| d1 - d0);
    let mut text = format!(
        "{} of {} timed {clock} · sum {} of the region's {}",
        ops.len(),
        region.nodes.len(),
        units::duration(sum),
        units::duration(region_ns)
    );
    if span.status() == SpanStatus::Failed {
        text.push_str(" · failed region, work not completed");
        return Some(field(
            "op times",
            Text::styled(text, theme::status_fg(SpanStatus::Failed)),
        ));
    }
    Some(field("op times", text))
}

/// An operation's time: its duration (device preferred), the clock, and when it started
/// after its region's start (`18.2 µs device at +0.5 µs`).
fn op_time(
    op: &OpSpan,
    span: &crate::state::Span,
    clock: Option<&hrx_capture::schema::ClockCalibration>,
) -> String {
    let (ns, on) = op.time();
    let on = match on {
        OpClock::Device => "device",
        OpClock::Host => "host",
    };
    let at = op.placed_ns(clock).0.saturating_sub(span.start_ns);
    format!("{} {on} at +{}", units::duration(ns), units::duration(at))
}

/// The operation a native failure's text names ([`hrx_analysis::failed_operation`]).
pub(super) fn failed_operation(text: &str) -> Option<String> {
    hrx_analysis::failed_operation(text).map(str::to_owned)
}

/// Whether an operation's name ([`Model::op_name`]) is the one a failure names.
fn op_is(op_name: &str, failed: &str) -> bool {
    op_name == failed
}

/// Every region the span's submission started, by start, with its delay after the submit:
/// the flow from the submit to its work (see the module docs).
fn started_lines(model: &Model, submission: crate::state::SubId) -> Vec<Line<'static>> {
    let sub = model.submission(submission);
    let mut spans: Vec<_> = model
        .submission_spans(submission)
        .map(|s| (*model.span(s), s))
        .collect();
    spans.sort_by_key(|(s, _)| s.start_ns);
    let items: Vec<String> = spans
        .iter()
        .map(|(s, _)| {
            let (region, label) = (model.region(s.region), model.region_label(s.region));
            let when = if s.ran() {
                format!(
                    "after {}",
                    units::duration(s.start_ns.saturating_sub(sub.submit_ns))
                )
            } else {
                s.status().name().to_owned()
            };
            format!("r{} {} {when}", region.index, model.label(label))
        })
        .collect();
    if items.is_empty() {
        return Vec::new();
    }
    vec![field("started", items.join(" · "))]
}

fn event_lines(e: &Event) -> Vec<Line<'static>> {
    let style = theme::event_style(e.kind);
    vec![
        field("time", units::time(e.time_ns)),
        field("kind", Text::styled(e.kind.name(), style)),
        field("subject", event_subject(e)),
        field("what", Text::styled(e.text.clone(), style)),
    ]
}

fn trace_lines(model: &Model, state: &ViewState) -> Vec<Line<'static>> {
    let info = model.info();
    let mut lines = Vec::new();
    if let Some(s) = &info.session {
        lines.push(field(
            "session",
            format!("{} · {} · pid {}", s.producer, s.host, s.pid),
        ));
    }
    for r in &info.runtimes {
        lines.push(field(
            "runtime",
            format!(
                "r{} {} ({}) · {} slots · capacity {}{}",
                r.runtime,
                r.backend,
                r.device,
                r.graph_slots,
                r.capacity,
                r.fault
                    .as_ref()
                    .map(|f| format!(" · fault {f}"))
                    .unwrap_or_default()
            ),
        ));
    }
    let recovery = match (&info.recovery, &info.end) {
        (Some(r), _) if !r.is_complete() => format!(
            "{} · {} records recovered · {} skipped · {} discarded",
            // Not written yet, as `diff` says it: "not closed cleanly" read as a crash.
            r.end_as(state.recording_now()),
            r.records,
            hrx_analysis::units::plural(r.skipped_blocks, "block"),
            // In the units every other verb's recovery sentence gives.
            hrx_analysis::units::bytes(r.bytes_discarded),
        ),
        (_, Some(end)) if end.dropped_records > 0 => {
            format!(
                "{} records · {} dropped by the recorder",
                info.records, end.dropped_records
            )
        }
        _ => format!("{} records, complete", info.records),
    };
    lines.push(field("recording", recovery));
    // What a trim or a capture range lacks, and a loaded host's times, as `info` says them.
    let several = info
        .ranges
        .iter()
        .any(|r| r.runtime != info.ranges[0].runtime);
    for range in &info.ranges {
        lines.push(field(
            "range",
            format!(
                "{}: the submissions outside it are not in the trace",
                hrx_analysis::info::range_text(range, several)
            ),
        ));
    }
    if let Some(load) = info.host_load_max.filter(|&l| l >= 1.0) {
        lines.push(field(
            "host load",
            format!(
                "loaded: up to {}: host-side times include waits for a CPU",
                hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(load))
            ),
        ));
    }
    // Spans with crafted or damaged times, drawn as 0 ns, as `stats` counts them.
    if info.ends_before_start > 0 {
        lines.push(field(
            "backwards",
            format!(
                "{} {} (crafted or damaged times): each drawn as 0 ns long",
                info.ends_before_start,
                if info.ends_before_start == 1 {
                    "span or range ends before it starts"
                } else {
                    "spans or ranges end before they start"
                }
            ),
        ));
    }
    // How the recording ended where that is news, in `stats`' words: a signal (a crash is
    // never left to `info` alone), a trace cut short or still being written.
    // A signal's line is kept where its trace was closed after it, as before.
    if let Some(fatal) = info.fatal {
        let red = theme::status_fg(crate::state::SpanStatus::Failed);
        let died = format!("{} {}", fatal.describe(), info.at_the_end);
        lines.push(field(
            "ended",
            Text::styled(died.trim_end().to_owned(), red),
        ));
    } else if let Some(ended) = hrx_analysis::info::timeline_ending(info, state.recording_now()) {
        lines.push(field("ended", ended.to_string()));
    }
    if let Some(r) = info.recovery.as_ref() {
        if let Some(lost) = r.lost.said() {
            lines.push(field("lost", lost));
        }
        if r.waits.count > 0 {
            lines.push(field(
                "recorder",
                format!(
                    "threads waited {} on the recorder, {} in all (longest {})",
                    units::plural(r.waits.count, "time"),
                    units::duration(r.waits.total_ns),
                    units::duration(r.waits.max_ns)
                ),
            ));
        }
    }
    for w in info.warnings.iter().take(3) {
        lines.push(field("warning", w.clone()));
    }
    lines.push(field(
        "timeline",
        format!(
            "{} · {} submissions · {} events",
            model.spans_summary(),
            model.submissions().len(),
            model.events().len()
        ),
    ));
    if let Some(range) = model.time_range() {
        lines.push(field(
            "time",
            format!(
                "{} {} {}  ({})",
                units::time(range.start_ns),
                Symbols::for_ascii(state.ascii).to,
                units::time(range.end_ns),
                units::duration(range.width_ns())
            ),
        ));
    }
    if info.unplaced_timings + info.unresolved_waits > 0 {
        lines.push(field(
            "unplaced",
            format!(
                "{} and {} name an unrecorded submission",
                units::plural(info.unplaced_timings, "timing"),
                units::plural(info.unresolved_waits, "wait")
            ),
        ));
    }
    // Explicit producers the model keeps no link for (see `hrx_analysis::timeline::hazards`).
    if info.explicit_producers_left_out > 0 {
        lines.push(field(
            "not kept",
            format!(
                "{} named past a submission's {EXPLICIT_PRODUCERS_KEPT} latest: not linked \
                 (hazards, what a failure took down)",
                units::plural(info.explicit_producers_left_out, "submit_after producer"),
            ),
        ));
    }
    // Producers of submits that waited for their graph's `Prepared`, past what the joiner
    // holds of them (a crafted trace: `hrx_analysis::scan::PARKED_PRODUCERS_LIMIT`).
    if info.producers_not_parked > 0 {
        lines.push(field(
            "not held",
            format!(
                "{} of submits read before their graph was prepared, past the {} the reader \
                 holds while they wait: not linked",
                units::plural(info.producers_not_parked, "submit_after producer"),
                hrx_analysis::scan::PARKED_PRODUCERS_LIMIT
            ),
        ));
    }
    if info.timing_lost > 0 {
        lines.push(field(
            "timing lost",
            format!(
                "{}: timing lost (records dropped): not running, untimed at their start",
                units::plural(info.timing_lost, "region")
            ),
        ));
    }
    // Running at the end but on no lane: its `Submit` is not in the trace (a cut trace),
    // so its graph and queue are unknown. In `stats`' words, the first few.
    let not_drawn = &info.running_not_drawn;
    for r in not_drawn.iter().take(3) {
        // The runtime named where the trace has several, as the `ended` line names it.
        let runtime = match info.runtimes.len() {
            0 | 1 => String::new(),
            _ => format!("runtime {} ", r.runtime),
        };
        lines.push(field(
            "running",
            format!(
                "{runtime}submission {}, region {}: started at {}, {}; not drawn: its Submit \
                 is not in the trace (queue unknown)",
                r.submission,
                r.region,
                units::time(r.start_ns),
                hrx_analysis::running_state(state.recording_now())
            ),
        ));
    }
    if not_drawn.len() > 3 {
        lines.push(field(
            "running",
            format!(
                "+{} more not drawn (see `hrx-trace stats`)",
                not_drawn.len() - 3
            ),
        ));
    }
    match model.first_failure() {
        None => lines.push(field("failures", "none")),
        Some(f) => {
            let e = &model.events()[f.event.get()];
            let red = theme::status_fg(crate::state::SpanStatus::Failed);
            lines.push(field(
                "first fail",
                Text::styled(
                    format!(
                        "{} {} at {}",
                        event_subject(e),
                        e.kind.name(),
                        units::time(e.time_ns)
                    ),
                    red,
                ),
            ));
            lines.push(field("", Text::styled(e.text.clone(), red)));
            let names = |spans: &[SpanRef]| {
                spans
                    .iter()
                    .take(6)
                    .map(|&s| region_name(model, model.key_of(model.span(s))))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if spans.len() > 6 { ", …" } else { "" }
            };
            lines.push(field(
                "took down",
                format!("{} cancelled: {}", f.cancelled.len(), names(&f.cancelled)),
            ));
            if !f.failed.is_empty() {
                lines.push(field(
                    "",
                    format!("{} failed: {}", f.failed.len(), names(&f.failed)),
                ));
            }
            let list = |v: Vec<String>| {
                if v.is_empty() {
                    "none".to_owned()
                } else {
                    v.join(", ")
                }
            };
            lines.push(field(
                "poisoned",
                list(f.poisoned.iter().map(|b| format!("buf {b}")).collect()),
            ));
            lines.push(field(
                "quarantined",
                list(
                    f.quarantined
                        .iter()
                        .map(|p| format!("prepared {p}"))
                        .collect(),
                ),
            ));
        }
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        "Tab next span · n next event · s statistics · ? every key",
        theme::DIM,
    ));
    lines
}

/// What an event is about: `sub 4 r1`, `buf 3`, `prepared 1`, ...
fn event_subject(e: &Event) -> String {
    match (e.submission, e.region, e.buffer, e.lane, e.prepared) {
        (Some(s), Some(r), ..) => format!("sub {s} r{r}"),
        (Some(s), None, ..) => format!("sub {s}"),
        (_, _, Some(b), ..) => format!("buf {b}"),
        (_, _, _, Some(l), _) => format!("{l:?} copy stream"),
        (_, _, _, _, Some(p)) => format!("prepared {p}"),
        _ => format!("r{}", e.runtime),
    }
}

pub(super) fn list(model: &Model, state: &ViewState, area: Rect, buf: &mut Buffer) {
    let focused = state.focus == Focus::List;
    let rows = usize::from(area.height.saturating_sub(2));
    let width = usize::from(area.width.saturating_sub(2));
    let sym = Symbols::for_ascii(state.ascii);
    let (title, items): (String, Vec<Line<'static>>) = match state.list {
        Some(ListKind::Events) if model.events().is_empty() => {
            // Said, not an empty box (a user read `Events (0)` over nothing): what would be
            // listed, as the hazards list says `no hazards`.
            let text = "no events: no failure, cancellation, quarantine, poison, injected \
                        fault or refused submit in this trace";
            let items = crate::state::wrap(text, width.max(1))
                .into_iter()
                .take(rows)
                .map(|line| Line::styled(line, theme::DIM))
                .collect();
            (" Events (0) ".to_owned(), items)
        }
        Some(ListKind::Events) => {
            let events = model.events();
            let cursor = state.event_cursor.unwrap_or(0);
            // In a narrow pane the symbol alone names the kind, leaving room for the
            // subject and the text (at 80 columns every poison row read "buf 1…").
            let with_kind = width >= 50;
            let offset = list_offset(cursor, events.len(), rows);
            let items = events
                .iter()
                .enumerate()
                .skip(offset)
                .take(rows)
                .map(|(i, e)| {
                    let kind = if with_kind {
                        // The longest kind's name, "stream unhealthy".
                        format!(" {:<16}", e.kind.name())
                    } else {
                        String::new()
                    };
                    let text = format!(
                        "{}{:>11} {}{} {:<11} {}",
                        if state.event_cursor == Some(i) {
                            sym.focus
                        } else {
                            " "
                        },
                        units::time(e.time_ns),
                        sym.event(e.kind),
                        kind,
                        event_subject(e),
                        e.text
                    );
                    let style = if state.event_cursor == Some(i) {
                        theme::LIST_CURSOR
                    } else {
                        theme::event_style(e.kind)
                    };
                    Line::styled(fit(&text, width), style)
                })
                .collect();
            (format!(" Events ({}) ", events.len()), items)
        }
        Some(ListKind::Hazards) => {
            let hazards = state.hazards(model);
            let n_producers = hazards.producers.len();
            let all: Vec<&HazardEdge> = hazards.all().collect();
            let offset = list_offset(state.hazard_cursor, all.len(), rows);
            let mut items: Vec<Line<'static>> = all
                .iter()
                .enumerate()
                .skip(offset)
                .take(rows)
                .map(|(i, e)| {
                    let producer_side = i < n_producers;
                    let mark = if focused && i == state.hazard_cursor {
                        sym.focus
                    } else {
                        ""
                    };
                    let text = format!("{mark}{}", hazard_text(model, e, producer_side, sym));
                    let style = if focused && i == state.hazard_cursor {
                        theme::LIST_CURSOR
                    } else if producer_side {
                        Style::new().fg(ratatui::style::Color::Yellow)
                    } else {
                        Style::new().fg(ratatui::style::Color::Cyan)
                    };
                    Line::styled(fit(&text, width), style)
                })
                .collect();
            // What the model does not keep is said (see `hrx_analysis::timeline::hazards`):
            // in the title, and below the items where there is room.
            let mut notes = Vec::new();
            if hazards.producers_left_out > 0 {
                notes.push(format!(
                    "+{} submit_after producers not kept (view keeps {EXPLICIT_PRODUCERS_KEPT})",
                    hazards.producers_left_out
                ));
            }
            if hazards.consumers_incomplete {
                notes.push(format!(
                    "maybe more: a submit naming over {EXPLICIT_PRODUCERS_KEPT} links its latest"
                ));
            }
            items.extend(
                notes
                    .iter()
                    .map(|note| Line::styled(fit(note, width), theme::DIM)),
            );
            if state.selection.is_none() {
                items.push(Line::styled(
                    "select a span to see why it waited",
                    theme::DIM,
                ));
            } else if all.is_empty() && hazards.producers_left_out == 0 {
                items.push(Line::styled("no hazards: it waited on nothing", theme::DIM));
            }
            (
                format!(
                    " Hazards: waited on {}{} · released {} ",
                    n_producers,
                    not_kept(hazards.producers_left_out),
                    hazards.consumers.len()
                ),
                items,
            )
        }
        None => return,
    };
    Paragraph::new(items)
        .block(pane(title, focused))
        .render(area, buf);
}

/// ` (+N not kept)` after a count of producers, where `left_out` are not kept.
fn not_kept(left_out: u32) -> String {
    if left_out == 0 {
        String::new()
    } else {
        format!(" (+{left_out} not kept)")
    }
}

/// `← RAW in graph  buf 1 0..4096  sub 3 r0 upload`.
fn hazard_text(model: &Model, e: &HazardEdge, producer_side: bool, sym: &Symbols) -> String {
    let (arrow, other) = if producer_side {
        (sym.arrows[0], e.producer)
    } else {
        (sym.arrows[1], e.consumer)
    };
    let scope = match e.scope {
        HazardScope::InGraph => "in graph",
        HazardScope::CrossSubmission => "cross-sub",
        HazardScope::Explicit => "explicit",
    };
    // The kind, scope and range first and the region's label last: a narrow pane cuts the
    // label, never the kind ("cross-s…" at 120 columns).
    let what = match (e.kind, e.buffer, e.bytes) {
        (Some(kind), Some(buffer), Some((start, end))) => {
            format!(
                "{} {scope:<9} buf {buffer} {}",
                kind.abbreviation(),
                units::range(start, end)
            )
        }
        _ => format!("after {scope:<9} (whole submission)"),
    };
    format!("{arrow} {what:<32} {}", region_name(model, other))
}

/// A buffer's description: `buf 3 (1 MiB, GPU)` (where its memory lives).
fn buffer_name(
    model: &Model,
    runtime: hrx_capture::schema::RuntimeId,
    id: hrx_capture::schema::BufferId,
) -> String {
    match model.buffer(runtime, id) {
        Some(b) => format!(
            "buf {id} ({}, {})",
            units::bytes(b.len_bytes),
            match b.placement {
                Placement::GpuLocal => "GPU",
                Placement::HostVisible => "host",
                Placement::NpuShared { .. } => "NPU",
            }
        ),
        None => format!("buf {id}"),
    }
}
