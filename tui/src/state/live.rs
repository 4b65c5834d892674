//! Following a trace that is still being written (`view --follow`).
//!
//! The app re-reads the trace when it grows ([`crate::app`]), updating its model in place;
//! [`ViewState::carry_over`] then carries the view over to it from keys taken before the
//! refresh ([`ViewState::carried`]): the selection by (runtime, submission index, region)
//! and the focused lane by (runtime, queue), since indexes into the new model's lanes may
//! differ; the search filter is recomputed in place; and while
//! *following*, the window and the time cursor move to the newest time. Following starts
//! on, showing the whole trace as it grows; any action that moves the window (a pan, a
//! zoom, a jump that reveals a span elsewhere) stops it, and `F` resumes it at the current
//! zoom, the window ending at the newest time (Tracy's live view behaves so).
//!
//! Selecting a span stops following too, where the selection is (its details stay on
//! screen with it): a followed window would leave it behind, off screen, with the cursor.
//! So nothing is selected while following: `F` clears the selection as it resumes.

use super::view_state::ViewState;
use super::{LaneRef, Model, RegionKey, SpanRef};
use hrx_capture::schema::{Queue, RuntimeId, SubmissionIndex};

/// What of the view a refresh carries over, by keys that hold in the next model: taken
/// from the model before it changes ([`ViewState::carried`]), since a followed trace's
/// model is updated in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Carried {
    /// The selected span's region: runtime, submission index, region.
    selection: Option<(RuntimeId, SubmissionIndex, u32)>,
    /// The focused lane's runtime and queue.
    lane: Option<(RuntimeId, Queue)>,
}

/// The state of a live (followed) trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Live {
    /// Whether the window follows the newest time.
    pub following: bool,
    /// The window width kept while following; `None`: the whole trace.
    pub width_ns: Option<u64>,
    /// Records per second over the last refresh interval (the app measures it).
    pub records_per_s: f64,
    /// The trace was closed (its session end was read): nothing more will come.
    pub closed: bool,
    /// The recorded process died of a signal (a `FatalSignal` was read): nothing more will
    /// come; how, in `info`'s words (`crashed: SIGSEGV`).
    pub ended_by: Option<String>,
    /// Neither closed nor crashed, and nobody writes it any more (a recorder killed with
    /// no note of it, a file cut short): nothing more will come.
    pub unclosed: bool,
    /// Bytes of the file the latest refresh left for the next (it is behind the recording).
    pub behind_bytes: u64,
}

impl ViewState {
    /// Starts following (`view --follow`).
    pub fn start_live(&mut self) {
        self.live = Some(Live {
            following: true,
            ..Live::default()
        });
    }

    /// Resumes following at the current zoom (`F`), clearing the selection (see the
    /// module docs).
    pub(super) fn resume_follow(&mut self, model: &Model) {
        match &mut self.live {
            Some(live) => {
                live.following = true;
                live.width_ns = Some(self.window.width_ns());
                self.selection = None;
                self.follow(model);
            }
            None => self.message = Some("not a live trace (view --follow FILE)".into()),
        }
    }

    /// Moves the window and the cursor to the newest time while following.
    pub(super) fn follow(&mut self, model: &Model) {
        let Some(live) = &self.live else { return };
        if !live.following {
            return;
        }
        let Some(range) = model.time_range() else {
            return;
        };
        match live.width_ns {
            None => self.fit(model),
            Some(width) => {
                let end = range.end_ns.saturating_add(width / 50);
                self.set_window(model, end.saturating_sub(width), width);
            }
        }
        // In the window, so that a zoom keeps the newest time in place.
        self.cursor_ns = range
            .end_ns
            .clamp(self.window.start_ns, self.window.end_ns.saturating_sub(1));
    }

    /// Stops following because `action` selected a span (see the module docs); says so.
    pub(super) fn stop_following_on_selection(&mut self) {
        if let Some(live) = &mut self.live
            && live.following
        {
            live.following = false;
            self.message = Some(
                "a span is selected: following stopped (F follows the newest time again)".into(),
            );
        }
    }

    /// The recorded process of a live trace died of a signal (`text`: `crashed: SIGSEGV`),
    /// or, with `None`, is not known to have.
    pub fn live_ended_by(&mut self, text: Option<String>) {
        if let Some(live) = &mut self.live {
            live.ended_by = text;
        }
    }

    /// Bytes of a live trace the latest refresh left for the next: it is behind the
    /// recording (0: it read to the file's end).
    pub fn live_behind(&mut self, bytes: u64) {
        if let Some(live) = &mut self.live {
            live.behind_bytes = bytes;
        }
    }

    /// Whether a live trace ended without a close, nobody writing it any more.
    pub fn live_unclosed(&mut self, unclosed: bool) {
        if let Some(live) = &mut self.live {
            live.unclosed = unclosed;
        }
    }

    /// A live trace was truncated and written again by a new recording and opened afresh:
    /// the view starts over (following the whole trace, nothing selected) and says so.
    /// [`ViewState::model_changed`] then carries it to the new model.
    pub fn live_reloaded(&mut self) {
        self.selection = None;
        self.event_cursor = None;
        self.start_live();
        self.message = Some("the trace was written again by a new recording: reloaded".into());
    }

    /// Carries the view from `old` to `new`, a re-read of the same trace that has grown
    /// (see the module docs); `records_per_s` is the latest record rate.
    pub fn model_changed(&mut self, old: &Model, new: &Model, records_per_s: f64) {
        let carried = self.carried(old);
        self.carry_over(carried, new, records_per_s);
    }

    /// The keys of the selection and the focused lane in `model`, the model shown before a
    /// refresh.
    pub fn carried(&self, model: &Model) -> Carried {
        let region_of = |r: SpanRef| {
            let key = model.key_of(model.get_span(r)?);
            let sub = model.submission(key.submission);
            Some((sub.runtime, sub.index, key.region))
        };
        let lane_of = |l: LaneRef| {
            let lane = model.lanes().get(l.0 as usize)?;
            Some((lane.runtime, lane.queue))
        };
        Carried {
            selection: self.selection.and_then(region_of),
            lane: self.lane.and_then(lane_of),
        }
    }

    /// Carries the view over to `new`, the model after a refresh, from the keys taken
    /// before it (what was cleared since, by a reload, stays cleared); `records_per_s` is
    /// the latest record rate.
    pub fn carry_over(&mut self, carried: Carried, new: &Model, records_per_s: f64) {
        let find_lane = |(runtime, queue)| {
            new.lanes()
                .iter()
                .position(|l| l.runtime == runtime && l.queue == queue)
                .map(|i| LaneRef(i as u32))
        };
        self.selection = self
            .selection
            .and(carried.selection)
            .and_then(|(rt, index, region)| {
                let submission = new.find_submission(rt, index)?;
                new.span_of(RegionKey { submission, region })
            });
        self.lane = self
            .lane
            .and(carried.lane)
            .and_then(find_lane)
            .or_else(|| self.visible_lanes(new).first().copied());
        let events = new.events().len();
        self.event_cursor = self.event_cursor.filter(|&i| i < events);
        self.refilter(new);
        if let Some(live) = &mut self.live {
            live.records_per_s = records_per_s;
            live.closed = new.info().end.is_some();
        }
        self.follow(new);
    }
}
