//! What the user is looking at, and every way input changes it.
//!
//! [`ViewState`] holds the visible time window (ns), the time cursor, the focused lane, the
//! selected span, which pane has focus and which list is open, the search filter and the
//! overlays. Input is first mapped to an [`Action`] (keys and mouse in `app.rs`, or tests
//! directly), then [`ViewState::update`] applies it. The views only read this state.
//!
//! Conventions: zooming keeps the time under the cursor (or the mouse) in place; any jump
//! (event, producer, search hit) keeps the zoom and recentres the window only when the
//! target is outside it; the search filter matches span labels and the names of the
//! operations a span's region runs, case-insensitively, and restricts span navigation to
//! matches; while it is typed it searches from where `/` was pressed, and Esc returns
//! there. With a search active, `n`/`N` step through its matches in time (as in less and
//! vim), wrapping at either end with a message; without one they step through events.
//! The details pane scrolls (PgUp/PgDn, `J`/`K`, the wheel over it) and starts at its top
//! again whenever the selection changes.

use super::Hazards;
use super::layout::ScreenLayout;
use super::live::Live;
use super::{LaneRef, Model, SpanRef};
use super::{Span, TimeWindow};

/// Narrowest window, in ns (the summary frame's zoom stops there too).
pub use hrx_analysis::timeline::MIN_WINDOW_NS;

/// Which pane receives list keys (↑/↓, Enter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Focus {
    /// The timeline: arrows move between spans and lanes.
    #[default]
    Timeline,
    /// The open list: arrows move its cursor.
    List,
}

/// The list shown beside the details pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Producers and consumers of the selected span.
    Hazards,
    /// Every event, by time.
    Events,
}

/// One input, already decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Halve the window around the cursor.
    ZoomIn,
    /// Double the window around the cursor.
    ZoomOut,
    /// Move the window a quarter to the left.
    PanLeft,
    /// Move the window a quarter to the right.
    PanRight,
    /// Show the whole trace.
    Fit,
    /// Show the selected span (with margins).
    ZoomToSelection,
    /// Select the first span of the focused lane.
    Home,
    /// Select the last span of the focused lane.
    End,
    /// Select the next span on the focused lane (→).
    SelectNext,
    /// Select the previous span on the focused lane (←).
    SelectPrev,
    /// Focus the next lane down (↓); in a focused list, move down.
    NextQueue,
    /// Focus the previous lane up (↑); in a focused list, move up.
    PrevQueue,
    /// Select the next span in time on any visible lane.
    Tab,
    /// Select the previous span in time on any visible lane.
    BackTab,
    /// A mouse click, mapped through the layout.
    Click {
        /// Column.
        column: u16,
        /// Row.
        row: u16,
    },
    /// A mouse wheel step: zoom around the pointer (or scroll a list).
    Wheel {
        /// Column.
        column: u16,
        /// Row.
        row: u16,
        /// Zoom in (wheel up) or out.
        zoom_in: bool,
    },
    /// `n`: the next search match while a search is active, else the next event.
    NextEvent,
    /// `N`: the previous search match while a search is active, else the previous event.
    PrevEvent,
    /// Scroll the details pane by `lines` (negative: up), to at most `limit` lines down
    /// (the keys' mapping knows how many lines the pane hides; see `app.rs`).
    ScrollDetails {
        /// Lines to scroll; negative scrolls up.
        lines: i16,
        /// The largest scroll that still fills the pane.
        limit: u16,
    },
    /// Select the producer of the selection that ended last.
    JumpToProducer,
    /// Open or close the hazards list.
    ToggleHazards,
    /// Open and focus the events list; close it when it has focus.
    ToggleEvents,
    /// Show or hide statistics.
    ToggleStats,
    /// Show or hide help.
    ToggleHelp,
    /// Show or hide lanes without spans.
    ToggleEmptyLanes,
    /// Show or hide a row of operations (sub-spans) under each queue that has them.
    ToggleOps,
    /// Start typing a search.
    StartSearch,
    /// Append to the search.
    Search(char),
    /// Delete the last search character.
    SearchBackspace,
    /// Stop typing, keep the filter.
    EndSearch,
    /// Clear the search and its filter.
    ClearSearch,
    /// Enter: jump to the list item under the cursor.
    Activate,
    /// Esc: close help, the search, the list focus, the list, or the selection.
    Escape,
    /// `F`: follow the newest time again (a live trace).
    ResumeFollow,
    /// The terminal was resized.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// Leave.
    Quit,
}

/// Every key binding, for the help overlay (`app.rs` maps the same keys).
pub const KEYS: &[(&str, &str)] = &[
    ("←/→", "previous/next span on the queue"),
    ("Shift+←/→  </>", "pan left/right"),
    (
        "↑/↓",
        "previous/next queue (list: move; statistics: scroll)",
    ),
    ("+/=  -/_", "zoom in/out around the cursor"),
    ("wheel", "zoom around the pointer"),
    ("click", "select a span, event or hazard"),
    ("f", "fit the whole trace"),
    ("z", "zoom to the selection"),
    ("Home/End", "first/last span of the queue"),
    ("Tab/Shift+Tab", "next/previous span in time, any queue"),
    ("h", "show/hide the hazards list (producers ←, consumers →)"),
    ("p", "jump to the producer that ended last"),
    ("n/N", "next/previous search match, else event"),
    ("PgDn/PgUp  J/K", "scroll the details pane"),
    ("e", "events list (focus it; again: close)"),
    ("s", "statistics (kernels, regions, queues, copies)"),
    ("a", "show/hide empty queues"),
    ("o", "show/hide operations under their regions (sub-spans)"),
    ("/", "search labels and kernels (Enter keeps, Esc clears)"),
    ("Enter", "jump to the list item"),
    ("Esc", "close help/statistics/list, clear search/selection"),
    ("F", "follow the newest time (selecting a span stops it)"),
    ("?", "this help"),
    ("q", "quit"),
];

/// What the user is looking at.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewState {
    /// The visible time window.
    pub window: TimeWindow,
    /// The time cursor (zoom centre).
    pub cursor_ns: u64,
    /// The focused lane.
    pub lane: Option<LaneRef>,
    /// The selected span.
    pub selection: Option<SpanRef>,
    /// The pane receiving list keys.
    pub focus: Focus,
    /// The open list.
    pub list: Option<ListKind>,
    /// Statistics shown instead of details and list.
    pub show_stats: bool,
    /// Rows the statistics overlay is scrolled down by.
    pub stats_scroll: u16,
    /// Lines the details pane is scrolled down by (0 whenever the selection changes).
    pub details_scroll: u16,
    /// Help overlay shown.
    pub show_help: bool,
    /// Lanes without spans shown.
    pub show_empty_lanes: bool,
    /// A row of the regions' operations (sub-spans) under each queue's row that has them.
    pub show_ops: bool,
    /// The search text.
    pub search: String,
    /// Whether the search is being typed.
    pub searching: bool,
    /// The current event (events list cursor).
    pub event_cursor: Option<usize>,
    /// The hazards list cursor.
    pub hazard_cursor: usize,
    /// A one-line message for the status line (cleared by the next action).
    pub message: Option<String>,
    /// Use ASCII symbols instead of Unicode.
    pub ascii: bool,
    /// Set by [`Action::Quit`].
    pub quit: bool,
    /// Terminal columns.
    pub width: u16,
    /// Terminal rows.
    pub height: u16,
    /// Following a trace being written (`view --follow`); `None` for a finished file.
    pub live: Option<Live>,
    /// A recorder held the trace when a plain `view` opened it: what it shows ends where
    /// the recording had got to, not where it was cut short ([`ViewState::recording_now`]).
    pub being_recorded: bool,
    /// Per search key ([`crate::state::RegionInfo`]'s): matches the search (`None`: no
    /// filter).
    pub(super) filter: Option<Vec<bool>>,
    /// Where the view was when `/` was pressed, while the search is typed: each keystroke
    /// searches from there, a text that matches nothing shows it again, and Esc returns
    /// to it (as an incremental search in an editor does).
    search_origin: Option<SearchOrigin>,
}

/// The selection and window a typed search started from.
#[derive(Clone, Copy, Debug, PartialEq)]
struct SearchOrigin {
    selection: Option<SpanRef>,
    lane: Option<LaneRef>,
    cursor_ns: u64,
    window: TimeWindow,
}

impl ViewState {
    /// The initial view: the whole trace, the first busy lane focused, the events list
    /// open when there are events (else the hazards list).
    pub fn new(model: &Model, width: u16, height: u16) -> ViewState {
        let mut state = ViewState {
            window: TimeWindow::new(0, 1_000),
            cursor_ns: 0,
            lane: None,
            selection: None,
            focus: Focus::Timeline,
            list: Some(if model.events().is_empty() {
                ListKind::Hazards
            } else {
                ListKind::Events
            }),
            show_stats: false,
            stats_scroll: 0,
            details_scroll: 0,
            show_help: false,
            show_empty_lanes: false,
            show_ops: false,
            search: String::new(),
            searching: false,
            event_cursor: None,
            hazard_cursor: 0,
            message: None,
            ascii: false,
            quit: false,
            width,
            height,
            live: None,
            being_recorded: false,
            filter: None,
            search_origin: None,
        };
        state.fit(model);
        state.lane = state.visible_lanes(model).first().copied();
        state.cursor_ns = state.window.start_ns;
        state
    }

    /// Whether the trace shown is still being recorded: opened while a recorder held it,
    /// or followed and not ended (closed, crashed, or left unclosed by a recorder gone).
    /// Its missing end is then the part not written yet, not a crash.
    pub fn recording_now(&self) -> bool {
        self.being_recorded
            || self
                .live
                .as_ref()
                .is_some_and(|l| !l.closed && l.ended_by.is_none() && !l.unclosed)
    }

    /// Lanes shown, top to bottom: those with spans, or all when empty lanes are shown
    /// (or when no lane has spans).
    pub fn visible_lanes(&self, model: &Model) -> Vec<LaneRef> {
        let all = (0..model.lanes().len() as u32).map(LaneRef);
        let busy: Vec<LaneRef> = all.clone().filter(|&l| !model.lane(l).is_empty()).collect();
        if self.show_empty_lanes || busy.is_empty() {
            all.collect()
        } else {
            busy
        }
    }

    /// The current layout.
    pub fn layout(&self, model: &Model) -> ScreenLayout {
        ScreenLayout::compute(self.width, self.height, model, self)
    }

    /// Whether a span matches the search filter.
    pub fn matches(&self, model: &Model, span: &Span) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f[model.search_key(span.region)])
    }

    /// Whether a search filter is active.
    pub fn filtering(&self) -> bool {
        self.filter.is_some()
    }

    /// Spans matching the filter (`None` without a filter).
    pub fn filter_matches(&self, model: &Model) -> Option<u64> {
        let filter = self.filter.as_ref()?;
        Some(
            model
                .search_key_spans()
                .iter()
                .zip(filter)
                .filter(|(_, m)| **m)
                .map(|(c, _)| c)
                .sum(),
        )
    }

    /// The hazards of the selection.
    pub fn hazards(&self, model: &Model) -> Hazards {
        self.selection.map(|s| model.hazards(s)).unwrap_or_default()
    }

    /// Items in the open list.
    pub fn list_len(&self, model: &Model) -> usize {
        match self.list {
            Some(ListKind::Events) => model.events().len(),
            Some(ListKind::Hazards) => self.hazards(model).len(),
            None => 0,
        }
    }

    /// The cursor of the open list.
    pub fn list_cursor(&self) -> usize {
        match self.list {
            Some(ListKind::Events) => self.event_cursor.unwrap_or(0),
            Some(ListKind::Hazards) => self.hazard_cursor,
            None => 0,
        }
    }

    /// Applies one action.
    pub fn update(&mut self, model: &Model, action: Action) {
        let (selection, list, event) = (self.selection, self.list, self.event_cursor);
        let window = self.window;
        self.apply(model, action);
        // A pan, a zoom or a jump elsewhere stops following the newest time; so does a new
        // selection, which following would leave behind, off screen (`live.rs`).
        if let Some(live) = &mut self.live
            && self.window != window
            && !matches!(action, Action::ResumeFollow | Action::Resize { .. })
        {
            live.following = false;
        }
        if self.selection.is_some() && self.selection != selection {
            self.stop_following_on_selection();
        }
        // The details pane shows something else: from its top again.
        if (selection, list, event) != (self.selection, self.list, self.event_cursor) {
            self.details_scroll = 0;
        }
    }

    fn apply(&mut self, model: &Model, action: Action) {
        self.message = None;
        if self.searching {
            match action {
                Action::Search(c) => return self.set_search(model, format!("{}{c}", self.search)),
                Action::SearchBackspace => {
                    let mut s = self.search.clone();
                    s.pop();
                    return self.set_search(model, s);
                }
                Action::EndSearch | Action::Activate => {
                    self.searching = false;
                    self.search_origin = None;
                    return;
                }
                Action::ClearSearch | Action::Escape => return self.clear_search(),
                _ => {}
            }
        }
        match action {
            Action::ZoomIn => self.zoom(model, self.zoom_centre(), true),
            Action::ZoomOut => self.zoom(model, self.zoom_centre(), false),
            Action::PanLeft => self.pan(model, false),
            Action::PanRight => self.pan(model, true),
            Action::Fit => self.fit(model),
            Action::ZoomToSelection => self.zoom_to_selection(model),
            Action::Home => self.select_end(model, false),
            Action::End => self.select_end(model, true),
            Action::SelectNext => self.select_step(model, true),
            Action::SelectPrev => self.select_step(model, false),
            Action::NextQueue | Action::PrevQueue => {
                let down = action == Action::NextQueue;
                if self.show_stats {
                    // Over the overlay, the arrows scroll it (the lane behind is hidden),
                    // down to where its last row is at the bottom.
                    let area = self.layout(model).stats;
                    let (width, visible) = area.map_or((0, 0), |a| (a.width - 2, a.height - 2));
                    let last =
                        super::stats_rows(model, width.into()).saturating_sub(visible.into());
                    self.stats_scroll = if down {
                        (usize::from(self.stats_scroll) + 1).min(last) as u16
                    } else {
                        self.stats_scroll.saturating_sub(1)
                    };
                } else if self.focus == Focus::List && self.list.is_some() {
                    self.move_list(model, down);
                } else {
                    self.change_lane(model, down);
                }
            }
            Action::Tab => self.select_in_time(model, true),
            Action::BackTab => self.select_in_time(model, false),
            Action::Click { column, row } => self.click(model, column, row),
            Action::Wheel {
                column,
                row,
                zoom_in,
            } => self.wheel(model, column, row, zoom_in),
            Action::NextEvent if self.filtering() => self.step_match(model, true),
            Action::PrevEvent if self.filtering() => self.step_match(model, false),
            Action::NextEvent => self.step_event(model, true),
            Action::PrevEvent => self.step_event(model, false),
            Action::ScrollDetails { lines, limit } => {
                let to = i32::from(self.details_scroll) + i32::from(lines);
                self.details_scroll = to.clamp(0, i32::from(limit)) as u16;
            }
            Action::JumpToProducer => self.jump_to_producer(model),
            Action::ToggleHazards => {
                // Over the statistics the list is hidden: `h` shows it (it closed it unseen).
                let show = self.show_stats || self.list != Some(ListKind::Hazards);
                self.list = show.then_some(ListKind::Hazards);
                self.hazard_cursor = 0;
                self.focus = Focus::Timeline;
                self.show_stats = false;
            }
            Action::ToggleEvents => {
                if self.list == Some(ListKind::Events)
                    && self.focus == Focus::List
                    && !self.show_stats
                {
                    self.list = None;
                    self.focus = Focus::Timeline;
                } else {
                    self.list = Some(ListKind::Events);
                    self.focus = Focus::List;
                    self.show_stats = false;
                    if self.event_cursor.is_none() && !model.events().is_empty() {
                        self.event_cursor = Some(
                            model
                                .first_event_at(self.cursor_ns)
                                .min(model.events().len() - 1),
                        );
                    }
                }
            }
            Action::ToggleStats => {
                self.show_stats = !self.show_stats;
                self.stats_scroll = 0;
            }
            Action::ToggleHelp => self.show_help = !self.show_help,
            Action::ToggleEmptyLanes => self.show_empty_lanes = !self.show_empty_lanes,
            Action::ToggleOps => {
                self.show_ops = !self.show_ops;
                if self.show_ops && !model.has_op_timings() {
                    self.message =
                        Some("no per-operation times recorded in this trace: regions only".into());
                }
            }
            Action::StartSearch => {
                self.searching = true;
                self.search_origin = Some(SearchOrigin {
                    selection: self.selection,
                    lane: self.lane,
                    cursor_ns: self.cursor_ns,
                    window: self.window,
                });
                self.set_search(model, String::new());
            }
            Action::Search(_) | Action::SearchBackspace | Action::EndSearch => {}
            Action::ClearSearch => self.clear_search(),
            Action::Activate => self.activate(model),
            Action::Escape => self.escape(),
            Action::Resize { width, height } => {
                self.width = width;
                self.height = height;
            }
            Action::ResumeFollow => self.resume_follow(model),
            Action::Quit => self.quit = true,
        }
    }

    /// Recomputes the search filter for a new model, moving nothing.
    pub(super) fn refilter(&mut self, model: &Model) {
        if self.filter.is_some() {
            let needle = self.search.to_lowercase();
            self.filter = Some(
                (0..model.search_key_count())
                    .map(|key| model.search_key_matches(key, &needle))
                    .collect(),
            );
        }
    }

    pub(super) fn set_search(&mut self, model: &Model, search: String) {
        self.return_to_search_origin();
        self.search = search;
        self.filter = (!self.search.is_empty()).then(|| {
            let needle = self.search.to_lowercase();
            (0..model.search_key_count())
                .map(|key| model.search_key_matches(key, &needle))
                .collect()
        });
        // Keep a matching selection; otherwise select the first match after the cursor.
        if let Some(sel) = self.selection
            && self.matches(model, model.span(sel))
        {
            return;
        }
        if self.filter.is_some() {
            let from = (
                self.cursor_ns.saturating_sub(1),
                LaneRef(u32::MAX),
                u32::MAX,
            );
            // The first match from the cursor on, else the nearest before it.
            let found = self
                .next_in_time(model, from, true, true)
                .or_else(|| self.next_in_time(model, from, false, true));
            match found {
                Some(r) => self.select(model, r),
                None => self.message = Some(format!("no span matches /{}", self.search)),
            }
        }
    }

    fn clear_search(&mut self) {
        self.return_to_search_origin();
        self.search_origin = None;
        self.searching = false;
        self.search.clear();
        self.filter = None;
    }

    /// Back to where a search being typed started (nothing once it was kept with Enter).
    fn return_to_search_origin(&mut self) {
        if let Some(o) = self.search_origin {
            self.selection = o.selection;
            self.lane = o.lane;
            self.cursor_ns = o.cursor_ns;
            self.window = o.window;
        }
    }

    fn escape(&mut self) {
        if self.show_help {
            self.show_help = false;
        } else if self.show_stats {
            self.show_stats = false;
        } else if self.filter.is_some() {
            self.clear_search();
        } else if self.focus == Focus::List {
            self.focus = Focus::Timeline;
        } else if self.list.is_some() {
            // Before the selection, as help says: the hazards list is the selection's.
            self.list = None;
        } else {
            self.selection = None;
        }
    }

    /// The zoom centre: the cursor when visible, else the window's middle.
    fn zoom_centre(&self) -> u64 {
        if self.cursor_ns >= self.window.start_ns && self.cursor_ns < self.window.end_ns {
            self.cursor_ns
        } else {
            self.window.start_ns + self.window.width_ns() / 2
        }
    }

    /// The widest window: twice the trace.
    fn max_width(model: &Model) -> u64 {
        model
            .time_range()
            .map_or(1_000_000_000, |r| r.width_ns().saturating_mul(2))
            .max(1_000)
    }

    pub(super) fn set_window(&mut self, model: &Model, start_ns: u64, width_ns: u64) {
        let width_ns = width_ns.clamp(MIN_WINDOW_NS, Self::max_width(model));
        self.window = TimeWindow::new(start_ns, start_ns.saturating_add(width_ns));
    }

    pub(super) fn zoom(&mut self, model: &Model, centre: u64, zoom_in: bool) {
        let w = self.window.width_ns();
        let new_w = if zoom_in { w / 2 } else { w.saturating_mul(2) }
            .clamp(MIN_WINDOW_NS, Self::max_width(model));
        if new_w == w {
            self.message = Some(
                if zoom_in {
                    "fully zoomed in"
                } else {
                    "fully zoomed out"
                }
                .into(),
            );
            return;
        }
        // Keep `centre` at the same fraction of the window.
        let offset = u128::from(centre.saturating_sub(self.window.start_ns));
        let new_offset = (offset * u128::from(new_w) / u128::from(w)) as u64;
        self.set_window(model, centre.saturating_sub(new_offset), new_w);
    }

    fn pan(&mut self, model: &Model, right: bool) {
        let w = self.window.width_ns();
        let step = (w / 4).max(1);
        let start = if right {
            self.window.start_ns.saturating_add(step)
        } else {
            self.window.start_ns.saturating_sub(step)
        };
        self.set_window(model, start, w);
    }

    pub(super) fn fit(&mut self, model: &Model) {
        let Some(range) = model.time_range() else {
            return;
        };
        let pad = range.width_ns() / 50;
        let start = range.start_ns.saturating_sub(pad);
        self.set_window(model, start, range.end_ns.saturating_add(pad) - start);
    }

    fn zoom_to_selection(&mut self, model: &Model) {
        let Some(sel) = self.selection else {
            self.message = Some("nothing selected".into());
            return;
        };
        let span = model.span(sel);
        let w = (span.query_end_ns() - span.start_ns).max(MIN_WINDOW_NS);
        let pad = w / 4;
        self.set_window(
            model,
            span.start_ns.saturating_sub(pad),
            w.saturating_add(2 * pad),
        );
    }

    /// Moves the window so that `[t0, t1)` is visible, keeping the zoom.
    pub(super) fn reveal(&mut self, model: &Model, t0: u64, t1: u64) {
        let w = self.window.width_ns();
        if t0 >= self.window.start_ns && t1 <= self.window.end_ns {
            return;
        }
        let start = if t1 - t0 >= w {
            t0
        } else {
            (t0 / 2 + t1 / 2).saturating_sub(w / 2)
        };
        self.set_window(model, start, w);
    }
}

#[cfg(test)]
#[path = "view_state_tests.rs"]
mod tests;
