//! The state of the view: the lanes drawn, the layout, navigation and what is shown.
//! Nothing here knows about ratatui or crossterm, and nothing here builds or stores the
//! trace's model: that is `hrx-analysis`'s [`timeline`](hrx_analysis::timeline) (re-exported
//! below, so the view names [`Model`], [`Lane`], [`Span`] from here). The view state changes
//! only through [`ViewState::update`].
//!
//! - `lanes`: what a screen draws of a [`Lane`] ([`LaneRaster`]): per-cell summaries, bars
//!   and coverage, from the lane's block index.
//! - [`ViewState`], [`Action`]: what is shown and how input changes it (`view_state`), the
//!   moves between spans, events and search hits (`navigation`); [`ScreenLayout`]: where
//!   things go, shared by drawing and click mapping (`layout`).
//! - [`Live`]: what a followed trace's refresh keeps of the view (`live`).
//! - [`stats_overlay`]: the statistics overlay's rows for a width, the figures of `stats`.
//! - Re-exported from `hrx-analysis`: the model ([`Model`], [`ModelBuilder`], [`Hazards`],
//!   [`FirstFailure`], [`Overview`]), the view cache ([`cache`]) and its streaming builder
//!   ([`stream`]), [`Stats`], [`units`] and [`synthetic`] traces.

mod lanes;
mod layout;
mod live;
mod navigation;
mod stats_overlay;
mod view_state;

/// Generated traces (moved to `hrx-analysis`, where benchmarks and generators share them).
pub use hrx_analysis::synthetic;
/// The view cache (`hrx-analysis`'s).
pub use hrx_analysis::timeline::cache;
/// The streaming builder of a view cache entry (`hrx-analysis`'s).
pub use hrx_analysis::timeline::stream;
/// The one units module (`hrx-analysis`), shared with every `hrx-trace` verb.
pub use hrx_analysis::units;

/// The statistics are `hrx-analysis`'s, gathered in the same pass as the model.
pub use hrx_analysis::stats::{CopyStats, KernelStats, LaneStats, Stats, percentile};
/// The model of a trace is `hrx-analysis`'s timeline.
pub use hrx_analysis::timeline::{
    BLOCK_SPANS, EXPLICIT_PRODUCERS_KEPT, Event, EventId, EventKind, FirstFailure, HazardEdge,
    HazardScope, Hazards, LabelRef, Lane, LaneRef, LoadProgress, Model, ModelBuilder, OpClock,
    OpSpan, Overview, OverviewLane, OverviewMove, OverviewWindow, PreparedInfo, PreparedRef,
    RegionInfo, RegionKey, RegionRef, Span, SpanRef, SpanStatus, SubId, Submission, TimeWindow,
    TraceInfo, count_in, gpu_lane_queue,
};
pub use hrx_analysis::{QUEUES, label_region, queue_name, queue_slot};
pub use lanes::{Bar, CellSummary, DenseCell, LaneRaster, Raster, SPANS_PER_COLUMN};
pub use layout::{Area, GUTTER, Hit, LaneRow, ScreenLayout, ThreadRowArea, list_offset};
pub use live::{Carried, Live};
pub use stats_overlay::{RowStyle, StatsRow, fit, stats_overlay, stats_rows, wrap};
pub use view_state::{Action, Focus, KEYS, ListKind, MIN_WINDOW_NS, ViewState};
