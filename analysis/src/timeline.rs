//! The timeline's model of a trace: every span per lane, the submissions, prepared graphs,
//! regions, events, hazards and the first failure, built once and answering the view's
//! queries. `hrx-tui` draws it; nothing here knows about a terminal.
//!
//! - [`ModelBuilder`]: records → [`Model`] in one linear pass, every join of a record to
//!   its submission, graph, region and lane read from this crate's [`Joiner`](crate::Joiner).
//! - [`LiveBuilder`]: the model of a trace still being written, kept finished: a publish
//!   finishes what came after its settled submissions, in place (`view --follow`).
//! - `model`: the tables (submissions, prepared graphs, regions, events) and accessors.
//! - `ops`: operation timings ([`OpSpan`]) as sub-spans of their region's span
//!   ([`Model::span_ops`]).
//! - `lanes`: [`Span`]s per [`Lane`] sorted by start, with the block index behind window
//!   queries ([`Lane::candidates`], [`Lane::visible`], [`Lane::nearest`], [`Lane::pick`]).
//! - `hazards`: producers/consumers of a region ([`Model::hazards`]) and the
//!   [`FirstFailure`].
//! - [`Stats`](crate::Stats): per-kernel durations, lane utilisation, copy bandwidth,
//!   gathered by the joiner in the same pass as the model.
//! - `threads`: a row per host thread (format 1.14), its runtime spans and the
//!   application's ranges and markers ([`Model::threads`]).
//! - [`Overview`]: the whole trace from the recorder's block summaries, the first frame's
//!   content while the model is built.
//! - [`cache`]: the view cache: a model written once per trace and reopened by mapping its
//!   columns (`column`), so a large trace opens without being read again. A large trace's
//!   entry is written by the streaming builder ([`stream`]: spans, submissions and waits
//!   go to files as they are read and come back sorted through `spill`), so building it
//!   does not hold the trace's regions in memory either.
//! - [`fixtures`]: hand-built traces for tests (this crate's and `hrx-tui`'s).
//!
//! ```
//! use hrx_analysis::synthetic::{PipelineSpec, pipeline};
//! use hrx_analysis::timeline::Model;
//!
//! let records: Vec<_> = pipeline(PipelineSpec::ops(40)).collect();
//! let model = Model::from_records(&records);
//! assert_eq!(model.span_count(), 40);
//! ```

pub mod cache;
mod column;
pub mod fixtures;
mod hazards;
mod ingest;
mod lanes;
mod live;
mod model;
mod ops;
mod overview;
mod spill;
pub mod stream;
mod threads;

pub use hazards::{FirstFailure, HazardEdge, HazardScope, Hazards};
pub use ingest::ModelBuilder;
pub use lanes::{BLOCK_SPANS, Block, Lane, Span, SpanStatus, TimeWindow};
pub use live::{LiveBuilder, Publish};
pub use model::{
    EXPLICIT_PRODUCERS_KEPT, Event, EventId, EventKind, LabelRef, LaneRef, Model, PreparedInfo,
    PreparedRef, RegionInfo, RegionKey, RegionRef, RunningNotDrawn, SpanRef, SubId, Submission,
    TraceInfo, count_in, gpu_lane_queue,
};
pub use ops::{OpClock, OpSpan};
pub use overview::{LoadProgress, Overview, OverviewLane, OverviewMove, OverviewWindow};
pub use threads::{ROW_SPANS_LIMIT, ThreadRow, ThreadSpan, ThreadWhat};

/// The narrowest window the timeline zooms to, in ns.
pub const MIN_WINDOW_NS: u64 = 10;
