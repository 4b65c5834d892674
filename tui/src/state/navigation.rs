//! Moving the selection: along a lane, across lanes, in time, by click and wheel, through
//! events, to producers and along the hazards list. Every move goes through
//! `select`, which focuses the span's lane, puts the cursor on it and reveals it without
//! changing the zoom.

use super::layout::Hit;
use super::view_state::{Focus, ListKind, ViewState};
use super::{LaneRef, Model, RegionRef, SpanRef};

impl ViewState {
    /// Selects `r`, focuses its lane, moves the cursor to it and reveals it.
    pub(super) fn select(&mut self, model: &Model, r: SpanRef) {
        let span = *model.span(r);
        self.selection = Some(r);
        self.lane = Some(r.lane);
        self.cursor_ns = span.start_ns;
        self.hazard_cursor = 0;
        self.reveal(model, span.start_ns, span.query_end_ns());
    }

    pub(super) fn select_step(&mut self, model: &Model, forward: bool) {
        let Some(lane_id) = self.lane else { return };
        let lane = model.lane(lane_id);
        let spans = lane.spans();
        let mut i: isize = match self.selection {
            Some(s) if s.lane == lane_id => s.index as isize + if forward { 1 } else { -1 },
            _ if forward => lane.first_starting_at(self.cursor_ns) as isize,
            _ => lane.first_starting_at(self.cursor_ns) as isize - 1,
        };
        while i >= 0 && (i as usize) < spans.len() {
            if self.matches(model, &spans[i as usize]) {
                let r = SpanRef {
                    lane: lane_id,
                    index: i as u32,
                };
                return self.select(model, r);
            }
            i += if forward { 1 } else { -1 };
        }
        self.message = Some(
            if forward {
                "last span of the queue"
            } else {
                "first span of the queue"
            }
            .into(),
        );
    }

    pub(super) fn select_end(&mut self, model: &Model, last: bool) {
        let Some(lane_id) = self.lane else { return };
        let spans = model.lane(lane_id).spans();
        let found = if last {
            spans.iter().rposition(|s| self.matches(model, s))
        } else {
            spans.iter().position(|s| self.matches(model, s))
        };
        if let Some(i) = found {
            self.select(
                model,
                SpanRef {
                    lane: lane_id,
                    index: i as u32,
                },
            );
        }
    }

    pub(super) fn change_lane(&mut self, model: &Model, down: bool) {
        let lanes = self.visible_lanes(model);
        if lanes.is_empty() {
            return;
        }
        let pos = self.lane.and_then(|l| lanes.iter().position(|&x| x == l));
        let next = match pos {
            Some(p) if down => (p + 1).min(lanes.len() - 1),
            Some(p) => p.saturating_sub(1),
            None => 0,
        };
        let lane_id = lanes[next];
        self.lane = Some(lane_id);
        let lane = model.lane(lane_id);
        let t = self
            .selection
            .map_or(self.cursor_ns, |s| model.span(s).start_ns);
        self.selection = lane.nearest(t).map(|i| SpanRef {
            lane: lane_id,
            index: i as u32,
        });
        if let Some(s) = self.selection {
            self.select(model, s);
        }
    }

    /// The next (or previous) span in (start, lane, index) order after `from`, on visible
    /// lanes, matching the filter when `filtered`.
    pub(super) fn next_in_time(
        &self,
        model: &Model,
        from: (u64, LaneRef, u32),
        forward: bool,
        filtered: bool,
    ) -> Option<SpanRef> {
        let mut best: Option<(u64, LaneRef, u32)> = None;
        for lane_id in self.visible_lanes(model) {
            if filtered && !self.lane_may_match(model, lane_id) {
                continue;
            }
            let spans = model.lane(lane_id).spans();
            let key = |i: usize| (spans[i].start_ns, lane_id, i as u32);
            let ok = |i: usize| !filtered || self.matches(model, &spans[i]);
            let found = if forward {
                let mut i = model.lane(lane_id).first_starting_at(from.0);
                while i < spans.len() && (key(i) <= from || !ok(i)) {
                    i += 1;
                }
                (i < spans.len()).then(|| key(i))
            } else {
                let mut i = spans.partition_point(|s| s.start_ns <= from.0);
                loop {
                    if i == 0 {
                        break None;
                    }
                    i -= 1;
                    if key(i) < from && ok(i) {
                        break Some(key(i));
                    }
                }
            };
            best = match (best, found) {
                (Some(b), Some(f)) if (f < b) == forward => Some(f),
                (None, f) => f,
                (b, _) => b,
            };
        }
        best.map(|(_, lane, index)| SpanRef { lane, index })
    }

    /// `n`/`N` with a search active: the next (previous) match in time on any visible
    /// lane; past the last (first) one, wraps to the first (last) and says so, as vim
    /// does.
    pub(super) fn step_match(&mut self, model: &Model, forward: bool) {
        let from = match self.selection {
            Some(s) => (model.span(s).start_ns, s.lane, s.index),
            None if forward => (
                self.cursor_ns.saturating_sub(1),
                LaneRef(u32::MAX),
                u32::MAX,
            ),
            None => (self.cursor_ns, LaneRef(0), 0),
        };
        if let Some(r) = self.next_in_time(model, from, forward, true) {
            return self.select(model, r);
        }
        let wrapped = if forward {
            self.first_match(model)
        } else {
            let end = (u64::MAX, LaneRef(u32::MAX), u32::MAX);
            self.next_in_time(model, end, false, true)
        };
        match wrapped {
            Some(r) => {
                self.select(model, r);
                self.message = Some(
                    if forward {
                        "search hit the end, continuing at the start"
                    } else {
                        "search hit the start, continuing at the end"
                    }
                    .into(),
                );
            }
            None => self.message = Some(format!("no span matches /{}", self.search)),
        }
    }

    /// Whether any region that runs on `lane` matches the search filter: a lane where none
    /// does is not walked span by span (its file, mapped from the view cache, would be
    /// paged in whole for nothing).
    fn lane_may_match(&self, model: &Model, lane: LaneRef) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        (0..model.regions().len() as u32)
            .map(RegionRef)
            .any(|r| model.region(r).lane == lane && filter[model.search_key(r)])
    }

    /// The earliest matching span on the visible lanes.
    fn first_match(&self, model: &Model) -> Option<SpanRef> {
        self.visible_lanes(model)
            .into_iter()
            .filter(|&lane| self.lane_may_match(model, lane))
            .filter_map(|lane| {
                let spans = model.lane(lane).spans();
                let i = spans.iter().position(|s| self.matches(model, s))?;
                Some((spans[i].start_ns, lane, i as u32))
            })
            .min()
            .map(|(_, lane, index)| SpanRef { lane, index })
    }

    pub(super) fn select_in_time(&mut self, model: &Model, forward: bool) {
        let from = match self.selection {
            Some(s) => (model.span(s).start_ns, s.lane, s.index),
            None if forward => (
                self.cursor_ns.saturating_sub(1),
                LaneRef(u32::MAX),
                u32::MAX,
            ),
            None => (self.cursor_ns, LaneRef(0), 0),
        };
        match self.next_in_time(model, from, forward, true) {
            Some(r) => self.select(model, r),
            None => self.message = Some("no more spans".into()),
        }
    }

    pub(super) fn click(&mut self, model: &Model, column: u16, row: u16) {
        let layout = self.layout(model);
        let cols = layout.timeline_cols;
        match layout.hit(column, row, self.list_len(model), self.list_cursor()) {
            Hit::Lane { lane, col } => {
                self.focus = Focus::Timeline;
                self.lane = Some(lane);
                let (t0, t1) = self.window.cell(col, cols);
                self.cursor_ns = t0;
                match model
                    .lane(lane)
                    .pick(t0, t1.max(t0.saturating_add(1)), 100_000)
                {
                    Some(i) => self.select(
                        model,
                        SpanRef {
                            lane,
                            index: i as u32,
                        },
                    ),
                    None => self.selection = None,
                }
            }
            Hit::Axis { col, markers } => {
                let (t0, t1) = self.window.cell(col, cols);
                self.cursor_ns = t0;
                if markers {
                    let i = model.first_event_at(t0);
                    if model
                        .events()
                        .get(i)
                        .is_some_and(|e| e.time_ns < t1.max(t0.saturating_add(1)))
                    {
                        self.event_cursor = Some(i);
                        self.jump_to_event(model);
                    }
                }
            }
            Hit::ListItem(i) => {
                self.focus = Focus::List;
                match self.list {
                    Some(ListKind::Events) => {
                        self.event_cursor = Some(i);
                        self.jump_to_event(model);
                    }
                    Some(ListKind::Hazards) => {
                        self.hazard_cursor = i;
                        self.activate(model);
                    }
                    None => {}
                }
            }
            Hit::Nothing => {}
        }
    }

    pub(super) fn wheel(&mut self, model: &Model, column: u16, row: u16, zoom_in: bool) {
        let layout = self.layout(model);
        match layout.hit(column, row, self.list_len(model), self.list_cursor()) {
            Hit::Lane { col, .. } | Hit::Axis { col, .. } => {
                let (t0, _) = self.window.cell(col, layout.timeline_cols);
                self.cursor_ns = t0;
                self.zoom(model, t0, zoom_in);
            }
            Hit::ListItem(_) => self.move_list(model, !zoom_in),
            Hit::Nothing => {}
        }
    }

    pub(super) fn move_list(&mut self, model: &Model, down: bool) {
        let len = self.list_len(model);
        if len == 0 {
            return;
        }
        let step = |c: usize| {
            if down {
                (c + 1).min(len - 1)
            } else {
                c.saturating_sub(1)
            }
        };
        match self.list {
            Some(ListKind::Events) => {
                self.event_cursor = Some(self.event_cursor.map_or(0, step));
                self.jump_to_event(model);
            }
            Some(ListKind::Hazards) => self.hazard_cursor = step(self.hazard_cursor),
            None => {}
        }
    }

    pub(super) fn step_event(&mut self, model: &Model, forward: bool) {
        let n = model.events().len();
        if n == 0 {
            self.message = Some("no events".into());
            return;
        }
        let next = match self.event_cursor {
            Some(i) if forward => (i + 1).min(n - 1),
            Some(i) => i.saturating_sub(1),
            None if forward => model.first_event_at(self.cursor_ns).min(n - 1),
            None => model.first_event_at(self.cursor_ns).saturating_sub(1),
        };
        if Some(next) == self.event_cursor {
            self.message = Some(if forward { "last event" } else { "first event" }.into());
        }
        self.event_cursor = Some(next);
        self.jump_to_event(model);
    }

    pub(super) fn jump_to_event(&mut self, model: &Model) {
        let Some(event) = self.event_cursor.and_then(|i| model.events().get(i)) else {
            return;
        };
        match event.span {
            Some(span) => self.select(model, span),
            None => {
                // The details pane then shows the event, not the span selected before.
                self.selection = None;
                self.cursor_ns = event.time_ns;
                self.reveal(model, event.time_ns, event.time_ns.saturating_add(1));
            }
        }
    }

    pub(super) fn jump_to_producer(&mut self, model: &Model) {
        let Some(sel) = self.selection else {
            self.message = Some("nothing selected".into());
            return;
        };
        match model.critical_producer(sel) {
            Some(p) => self.select(model, p),
            None => self.message = Some("no producer on the timeline".into()),
        }
    }

    pub(super) fn activate(&mut self, model: &Model) {
        match self.list {
            Some(ListKind::Events) => self.jump_to_event(model),
            Some(ListKind::Hazards) => {
                let hazards = self.hazards(model);
                let n_producers = hazards.producers.len();
                let Some(edge) = hazards.all().nth(self.hazard_cursor).copied() else {
                    return;
                };
                let target = if self.hazard_cursor < n_producers {
                    edge.producer
                } else {
                    edge.consumer
                };
                match model.span_of(target) {
                    Some(r) => self.select(model, r),
                    None => self.message = Some("that region is not on the timeline".into()),
                }
            }
            None => {}
        }
    }
}
