//! The model of a trace and the state of the view. Nothing here knows about ratatui or
//! crossterm: the model answers queries, the view state changes only through
//! [`ViewState::update`].
//!
//! - [`ingest`](ModelBuilder): records → [`Model`] in one linear pass, every join of a
//!   record to its submission, graph, region and lane read from `hrx-analysis`'s joiner.
//! - `model`: the tables (submissions, prepared graphs, regions, events) and accessors.
//! - `lanes`: [`Span`]s per lane sorted by start, with the block index behind window
//!   queries, per-cell summaries and rasterisation ([`Lane::raster`]).
//! - `hazards`: producers/consumers of a region ([`Model::hazards`]) and the
//!   [`FirstFailure`].
//! - [`Stats`]: per-kernel durations, lane utilisation, copy bandwidth: `hrx-analysis`'s
//!   statistics, gathered by its joiner in the same pass as the model.
//! - [`ViewState`], [`Action`]: what is shown and how input changes it;
//!   [`ScreenLayout`]: where things go, shared by drawing and click mapping.
//! - [`Overview`]: the whole trace from the recorder's block summaries, drawn as the first
//!   frame while the index is built.
//! - [`cache`]: the view cache: a model written once per trace and reopened by mapping
//!   its columns (`column`), so a large trace opens without being read again. A large
//!   trace's entry is written by the streaming builder (`stream`: spans, submissions and
//!   waits go to files as they are read and come back sorted through `spill`), so building
//!   it does not hold the trace's regions in memory either.
//! - [`units`]: time, byte and bandwidth formatting; [`synthetic`]: generated traces for
//!   tests and measurements.

pub mod cache;
mod column;
#[cfg(test)]
pub(crate) mod fixtures;
mod hazards;
mod ingest;
mod lanes;
mod layout;
mod live;
mod model;
mod navigation;
mod overview;
mod spill;
pub(crate) mod stream;
mod view_state;

/// Generated traces (moved to `hrx-analysis`, where benchmarks and generators share them).
pub use hrx_analysis::synthetic;
/// The one units module (`hrx-analysis`), shared with every `hrx-trace` verb.
pub use hrx_analysis::units;

pub use hazards::{FirstFailure, HazardEdge, HazardScope, Hazards};
/// The statistics are `hrx-analysis`'s, gathered in the same pass as the model.
pub use hrx_analysis::stats::{CopyStats, KernelStats, LaneStats, Stats, percentile};
pub use ingest::{ModelBuilder, label_region};
pub use lanes::{
    BLOCK_SPANS, Bar, CellSummary, DenseCell, Lane, Raster, SPANS_PER_COLUMN, Span, SpanStatus,
    TimeWindow,
};
pub use layout::{Area, GUTTER, Hit, LaneRow, ScreenLayout, list_offset, stats_rows};
pub use live::Live;
pub use model::{
    Event, EventId, EventKind, LabelId, LaneId, Model, PreparedInfo, PreparedRef, QUEUES, RegionId,
    RegionInfo, RegionKey, SpanRef, SubId, Submission, TraceInfo, count_in, gpu_lane_queue,
    queue_name, queue_slot,
};
pub use overview::{LoadProgress, Overview, OverviewLane, OverviewMove, OverviewWindow};
pub use view_state::{Action, Focus, KEYS, ListKind, MIN_WINDOW_NS, ViewState};
