//! The model of one trace: lanes of spans, submissions, prepared graphs and their regions,
//! events, statistics and the first failure. Built once by [`super::ModelBuilder`], then
//! only queried.
//!
//! # Layout
//!
//! ```text
//! lanes[runtime × 5 queues] ── spans (sorted by start) ──▶ SubId ──▶ submissions[]
//!                                   └──────▶ RegionRef ──▶ index.regions[] ──▶ index.prepared[]
//! submissions[s].region_base + region ──▶ region_spans[] ──▶ SpanRef (lane, index)
//! ```
//!
//! Everything a span needs to be drawn is in its 40 bytes; everything else (kind, kernel,
//! bindings, hazards) is shared per region of a prepared graph and found through the two
//! dense indices [`SubId`] and [`RegionRef`]. Submissions are sorted by (runtime, index), so
//! a captured submission index is found by binary search.
//!
//! The structure (lanes' identities, buffers, kernels, graph operations, prepared graphs,
//! their regions and labels) is not the model's own: it is the [`Index`] the joiner built
//! in the same pass, the one every `hrx-trace` verb reads, numbered alike ([`RegionRef`],
//! [`LaneRef`], [`LabelRef`], [`PreparedRef`]). The model adds only what the timeline needs
//! on top: the spans, per-submission tables, search keys and span counts per label.

use super::column::{Column, Plain};
use super::hazards::FirstFailure;
use super::lanes::{Lane, Span, SpanStatus, TimeWindow};
use crate::stats::Stats;
use hrx_capture::Recovery;
use hrx_capture::schema::{
    BufferCreated, BufferId, ClockCalibration, GraphOp, HazardKind, KernelId, KernelLoaded,
    Lane as GpuLane, NodeIndex, OpKind, PreparedId, Queue, Record, RegionIndex, RuntimeId,
    RuntimeStart, SessionEnd, SessionStart, SubmissionIndex,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::index::{Index, index_newtype};

index_newtype!(
    /// A submission: index into the model's submissions (sorted by runtime, index).
    SubId
);
index_newtype!(
    /// An event: index into [`Model::events`] (sorted by time).
    EventId
);
/// The index's numbering of prepared graphs, regions (model-wide), lanes (five per runtime)
/// and labels: the model reads its structure from the joiner's [`Index`] and numbers it
/// alike.
pub use crate::index::{LabelRef, LaneRef, PreparedRef, RegionRef};

// SAFETY: each is one u32 (`#[repr(transparent)]`).
unsafe impl Plain for SubId {}
// SAFETY: as above.
unsafe impl Plain for EventId {}
// SAFETY: as above.
unsafe impl Plain for RegionRef {}
// SAFETY: as above.
unsafe impl Plain for LaneRef {}
// SAFETY: as above.
unsafe impl Plain for LabelRef {}

/// A span: its lane and its index in the lane's sorted spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SpanRef {
    /// The lane.
    pub lane: LaneRef,
    /// Index into the lane's spans.
    pub index: u32,
}

impl SpanRef {
    pub(crate) const NONE: u64 = u64::MAX;

    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.lane.0) << 32) | u64::from(self.index)
    }

    pub(crate) fn unpack(packed: u64) -> Option<SpanRef> {
        (packed != SpanRef::NONE).then_some(SpanRef {
            lane: LaneRef((packed >> 32) as u32),
            index: packed as u32,
        })
    }
}

/// A region of one submission (what a span executes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C)]
pub struct RegionKey {
    /// The submission.
    pub submission: SubId,
    /// The region's index in the submission's prepared graph.
    pub region: u32,
}

/// The five queues in timeline order, their positions and display names: the one
/// definition, `hrx-analysis`'s, shared with every `hrx-trace` verb.
pub use crate::{QUEUES, queue_name, queue_slot};

/// The GPU lane of a copy queue.
pub fn gpu_lane_queue(lane: GpuLane) -> Queue {
    match lane {
        GpuLane::Upload => Queue::GpuUpload,
        GpuLane::Compute => Queue::GpuCompute,
        GpuLane::Download => Queue::GpuDownload,
    }
}

/// Sentinel for "no prepared graph recorded" in [`Submission`].
const NO_PREPARED: u32 = u32::MAX;

/// A submission of a prepared graph (48 bytes, stored as they are in the view cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Submission {
    /// The captured submission index.
    pub index: SubmissionIndex,
    /// Host time of the submit.
    pub submit_ns: u64,
    /// The runtime.
    pub runtime: RuntimeId,
    /// The run slot it occupied.
    pub slot: u32,
    prepared: u32,
    pub(crate) region_base: u32,
    pub(crate) producers_start: u32,
    /// Its explicit producers kept (at most [`EXPLICIT_PRODUCERS_KEPT`]).
    pub(crate) producers_len: u32,
    /// How it ended ([`SpanStatus`] as a byte).
    status: u8,
    _pad: [u8; 3],
    /// Explicit producers it named past those kept.
    pub(crate) producers_left_out: u32,
}

const _: () = assert!(size_of::<Submission>() == 8 + 8 + 4 * 6 + 1 + 3 + 4);
const _: () = assert!(size_of::<RegionKey>() == 8);
const _: () = assert!(size_of::<SubmissionIndex>() == 8 && size_of::<RuntimeId>() == 4);
// SAFETY: integer fields and integer newtypes, no padding (asserted above).
unsafe impl Plain for Submission {}
// SAFETY: as above.
unsafe impl Plain for RegionKey {}
// SAFETY: one u64 (asserted above).
unsafe impl Plain for SubmissionIndex {}
// SAFETY: two u32 newtypes, no padding (asserted).
unsafe impl Plain for (SubId, SubId) {}
const _: () = assert!(size_of::<(SubId, SubId)>() == 8);

impl Submission {
    pub(crate) fn new(
        runtime: RuntimeId,
        index: SubmissionIndex,
        slot: u32,
        submit_ns: u64,
        prepared: Option<PreparedRef>,
    ) -> Submission {
        Submission {
            index,
            submit_ns,
            runtime,
            slot,
            prepared: prepared.map_or(NO_PREPARED, |p| p.0),
            region_base: 0,
            producers_start: 0,
            producers_len: 0,
            status: SpanStatus::Unknown as u8,
            _pad: [0; 3],
            producers_left_out: 0,
        }
    }

    /// How it ended ([`SpanStatus::Unknown`] without a completion record).
    pub fn status(&self) -> SpanStatus {
        SpanStatus::from_byte(self.status)
    }

    /// Sets how it ended.
    pub(crate) fn set_status(&mut self, status: SpanStatus) {
        self.status = status as u8;
    }

    /// The prepared graph it ran, where its `Prepared` record was read.
    pub fn prepared(&self) -> Option<PreparedRef> {
        (self.prepared != NO_PREPARED).then_some(PreparedRef(self.prepared))
    }
}

/// A prepared graph: the index's own record of it ([`crate::index::PreparedInfo`]), stored
/// in the view cache as it is.
pub use crate::index::PreparedInfo;

/// One region of a prepared graph, shared by every submission of it: the index's
/// ([`crate::index::RegionInfo`]); its label and search key are the model's
/// ([`Model::region_label`], [`Model::search_key`]).
pub use crate::index::RegionInfo;

/// What an [`Event`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// A submit was refused because capacity or slots were exhausted.
    Busy,
    /// A submit was refused for another reason.
    Refused,
    /// A submit was refused because the graph is quarantined or the device lost.
    DeviceLost,
    /// A prepared graph was quarantined.
    Quarantine,
    /// A buffer was poisoned.
    Poison,
    /// A lane's copy stream was marked unhealthy.
    CopyStreamUnhealthy,
    /// An injected fault fired.
    FaultInjected,
    /// A region ran and failed.
    RegionFailed,
    /// A region was cancelled.
    RegionCancelled,
}

impl EventKind {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Busy => "busy",
            EventKind::Refused => "refused",
            EventKind::DeviceLost => "device lost",
            EventKind::Quarantine => "quarantine",
            EventKind::Poison => "poison",
            EventKind::CopyStreamUnhealthy => "stream unhealthy",
            EventKind::FaultInjected => "fault injected",
            EventKind::RegionFailed => "failed",
            EventKind::RegionCancelled => "cancelled",
        }
    }

    /// Whether it is a failure (not a refusal or a cancellation).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            EventKind::DeviceLost
                | EventKind::Quarantine
                | EventKind::CopyStreamUnhealthy
                | EventKind::FaultInjected
                | EventKind::RegionFailed
        )
    }
}

/// A failure, refusal or cancellation, with its time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Host time.
    pub time_ns: u64,
    /// What happened.
    pub kind: EventKind,
    /// The runtime.
    pub runtime: RuntimeId,
    /// The submission concerned, if any.
    pub submission: Option<SubmissionIndex>,
    /// The region concerned, if any.
    pub region: Option<RegionIndex>,
    /// The prepared graph concerned, if any.
    pub prepared: Option<PreparedId>,
    /// The buffer concerned (poison), if any.
    pub buffer: Option<BufferId>,
    /// The GPU lane concerned (unhealthy copy stream), if any.
    pub lane: Option<GpuLane>,
    /// The error, cause or description as recorded.
    pub text: String,
    /// The span of the region concerned, where it is on the timeline.
    pub span: Option<SpanRef>,
}

/// Facts about the recording itself.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceInfo {
    /// The session start record.
    pub session: Option<SessionStart>,
    /// The session end record (absent after a crash).
    pub end: Option<SessionEnd>,
    /// Every runtime.
    pub runtimes: Vec<RuntimeStart>,
    /// What the reader recovered (absent for records not read from a file).
    pub recovery: Option<Recovery>,
    /// Reader warnings, one line each.
    pub warnings: Vec<String>,
    /// Records ingested.
    pub records: u64,
    /// Region timings whose submission or prepared graph was never recorded.
    pub unplaced_timings: u64,
    /// Cross-submission waits naming an unknown submission.
    pub unresolved_waits: u64,
    /// Regions started whose timing or completion a lossy recording dropped: untimed spans
    /// at their start ([`SpanStatus::TimingLost`]), not running.
    #[serde(default)]
    pub timing_lost: u64,
    /// Per-operation timing records read (`OpTiming`); those joined to a region are
    /// [`Model::span_ops`]'s.
    pub op_timings: u64,
    /// The latest clock calibration of each runtime.
    pub clocks: Vec<ClockCalibration>,
    /// The signal that ended the recorded process (its own handler's record preferred to
    /// its parent's), where one was recorded: what the trace pane says it died of.
    #[serde(default)]
    pub fatal: Option<hrx_capture::schema::FatalSignal>,
    /// The ranges of a recording the trace holds (`TraceRange` records, the latest of each
    /// runtime's range, at most [`RANGES_KEPT`]): a trim or a capture range lacks the
    /// submissions outside them.
    #[serde(default)]
    pub ranges: Vec<hrx_capture::schema::TraceRange>,
    /// The highest of the runtimes' `hrx: host load per CPU` samples: 1 or more, recorded on
    /// a loaded host (its host-side times include waits for a CPU).
    #[serde(default)]
    pub host_load_max: Option<f64>,
    /// The id of `hrx: host load per CPU`, once named.
    #[serde(default)]
    pub host_load_name: Option<hrx_capture::schema::AnnotationId>,
    /// Records whose time span ends before it starts ([`crate::scan::ends_before_start`]:
    /// crafted or damaged times), drawn as 0 ns long.
    #[serde(default)]
    pub ends_before_start: u64,
    /// Explicit producers named past the [`EXPLICIT_PRODUCERS_KEPT`] latest of their
    /// `Submit`, all `Submit`s together: the model keeps no edge for them.
    #[serde(default)]
    pub explicit_producers_left_out: u64,
    /// Explicit producers of `Submit`s read before their graph's `Prepared` that the joiner
    /// did not hold while they waited ([`crate::scan::ScanSummary::producers_not_parked`],
    /// past [`crate::scan::PARKED_PRODUCERS_LIMIT`]): not linked either.
    #[serde(default)]
    pub producers_not_parked: u64,
    /// Regions still running where the trace ends that no lane can draw: their
    /// submission's `Submit` is not in the trace (a cut trace whose end lies before it), so
    /// their graph, queue and label are unknown. `stats` lists them in the same words.
    #[serde(default)]
    pub running_not_drawn: Vec<RunningNotDrawn>,
    /// What the runtime was doing where the trace ends, in `stats`' words ("after 5
    /// submissions", "during submission 12, region 2 running"): the trace pane's `ended`
    /// line of a trace not closed ([`crate::info::timeline_ending`]).
    #[serde(default)]
    pub at_the_end: String,
}

/// A region still running where the trace ends that the timeline cannot draw
/// ([`TraceInfo::running_not_drawn`]): what `stats` says of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningNotDrawn {
    /// Its runtime.
    pub runtime: u32,
    /// Its submission, whose `Submit` the trace lacks.
    pub submission: u64,
    /// Its region within the submission's graph.
    pub region: u32,
    /// When it started, ns since the session start.
    pub start_ns: u64,
}

impl RunningNotDrawn {
    /// The regions of `running` ([`crate::ScanSummary::running`]) that joined no
    /// submission of the trace: no lane draws them.
    pub fn of(running: &[crate::RunningRegion]) -> Vec<RunningNotDrawn> {
        running
            .iter()
            .filter(|r| r.ordinal.is_none() || r.region_ref.is_none())
            .map(|r| RunningNotDrawn {
                runtime: r.runtime.0,
                submission: r.submission.0,
                region: r.region.0,
                start_ns: r.start_ns,
            })
            .collect()
    }
}

/// Ranges [`TraceInfo::ranges`] keeps: a trace opening a range per submission keeps the
/// first ones.
pub const RANGES_KEPT: usize = 64;

/// Explicit producers (`submit_after`) the model keeps of a `Submit`: its latest
/// ([`crate::scan::latest_producers`]), the rest counted
/// ([`Model::explicit_producers_left_out`], [`TraceInfo::explicit_producers_left_out`]).
/// A producer costs the file a few bytes, which compress well in runs (a crafted trace of
/// 10^5 submits naming 1000 each took 1.1 MB more), and the model a row in three tables
/// (about 20 bytes, twice that while built): kept all, that trace took 3.8 GB to view.
pub const EXPLICIT_PRODUCERS_KEPT: usize = 16;

impl TraceInfo {
    /// Takes what a record says of the trace as a whole: its ranges, host load and spans
    /// that end before they start.
    pub(crate) fn observe(&mut self, record: &Record) {
        self.ends_before_start += u64::from(crate::scan::ends_before_start(record));
        match record {
            Record::Submit(s) => {
                let left_out =
                    crate::scan::producers_left_out(&s.producers, EXPLICIT_PRODUCERS_KEPT);
                self.explicit_producers_left_out += left_out as u64;
            }
            Record::TraceRange(r) => {
                let same = |k: &hrx_capture::schema::TraceRange| {
                    (k.runtime, k.start) == (r.runtime, r.start)
                };
                if let Some(known) = self.ranges.iter_mut().find(|k| same(k)) {
                    *known = r.clone();
                } else if self.ranges.len() < RANGES_KEPT {
                    self.ranges.push(r.clone());
                }
            }
            Record::AnnotationName(n) if n.text == hrx_capture::schema::HOST_LOAD_COUNTER => {
                self.host_load_name = Some(n.name);
            }
            Record::CounterSample(c) if Some(c.name) == self.host_load_name => {
                let load = c.value.0;
                self.host_load_max = Some(self.host_load_max.map_or(load, |m| m.max(load)));
            }
            _ => {}
        }
    }
}

/// A cross-submission wait resolved to model indices (48 bytes, stored as they are in the
/// view cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct CrossEdge {
    pub buffer: BufferId,
    pub start: u64,
    pub end: u64,
    pub consumer: RegionKey,
    pub producer: RegionKey,
    /// [`HazardKind`] as a byte ([`CrossEdge::kind`]).
    kind: u8,
    _pad: [u8; 7],
}

const _: () = assert!(size_of::<CrossEdge>() == 8 * 3 + 8 * 2 + 1 + 7);
const _: () = assert!(size_of::<BufferId>() == 8);
// SAFETY: integer fields and integer newtypes, no padding (asserted above).
unsafe impl Plain for CrossEdge {}

impl CrossEdge {
    pub(crate) fn new(
        consumer: RegionKey,
        producer: RegionKey,
        kind: HazardKind,
        buffer: BufferId,
        start: u64,
        end: u64,
    ) -> CrossEdge {
        let kind = match kind {
            HazardKind::ReadAfterWrite => 0,
            HazardKind::WriteAfterRead => 1,
            HazardKind::WriteAfterWrite => 2,
        };
        CrossEdge {
            buffer,
            start,
            end,
            consumer,
            producer,
            kind,
            _pad: [0; 7],
        }
    }

    /// The hazard's kind (a byte not written by [`CrossEdge::new`] reads as
    /// write-after-write, the most conservative).
    pub(crate) fn kind(&self) -> HazardKind {
        match self.kind {
            0 => HazardKind::ReadAfterWrite,
            1 => HazardKind::WriteAfterRead,
            _ => HazardKind::WriteAfterWrite,
        }
    }
}

/// One loaded trace, ready to query.
///
/// Serialised by the view cache ([`super::cache`]) without its columns (the lanes and the
/// per-submission tables), which it writes as files of their own and maps back.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Model {
    #[serde(skip)]
    pub(crate) lanes: Vec<Lane>,
    /// Spans of regions that never ran or lost their timing (counted in `lanes`).
    pub(crate) untimed_spans: usize,
    #[serde(skip)]
    pub(crate) submissions: Column<Submission>,
    #[serde(skip)]
    pub(crate) region_spans: Column<u64>,
    #[serde(skip)]
    pub(crate) explicit_producers: Column<SubmissionIndex>,
    /// (producer, consumer) pairs of `submit_after`, sorted, as the joiner joined them
    /// ([`crate::scan::Visitor::link`]).
    #[serde(skip)]
    pub(crate) explicit_edges: Column<(SubId, SubId)>,
    /// Indices into `explicit_edges`, sorted by consumer (then index).
    #[serde(skip)]
    pub(crate) explicit_by_consumer: Column<u32>,
    /// The structure (runtimes, lanes, buffers, kernels, graph operations, prepared graphs
    /// and their regions, region labels): the joiner's, taken when the model is finished.
    pub(crate) index: Index,
    /// Spans per label, by [`LabelRef`].
    pub(crate) label_spans: Vec<u64>,
    /// Per region, its search key ([`Model::search_key`]).
    pub(crate) search_keys: Vec<u32>,
    /// Per search key: the label and the operations' names, lowercase, one per line; and
    /// the spans of its regions.
    pub(crate) search_texts: Vec<String>,
    pub(crate) search_key_spans: Vec<u64>,
    /// Sorted by consumer.
    #[serde(skip)]
    pub(crate) cross: Column<CrossEdge>,
    /// Indices into `cross`, sorted by producer.
    #[serde(skip)]
    pub(crate) cross_by_producer: Column<u32>,
    pub(crate) events: Vec<Event>,
    pub(crate) span_events: HashMap<SpanRef, EventId>,
    #[serde(skip)]
    pub(crate) submit_times: Column<u64>,
    /// Operation timings joined to their regions, sorted by region slot
    /// ([`super::ops`]).
    #[serde(skip)]
    pub(crate) op_spans: Column<super::OpSpan>,
    /// Operation timings per lane, by [`LaneRef`] (shorter when the last lanes have none).
    #[serde(default)]
    pub(crate) lane_op_spans: Vec<u64>,
    pub(crate) busy_times: Vec<u64>,
    pub(crate) range: Option<TimeWindow>,
    pub(crate) stats: Stats,
    pub(crate) first_failure: Option<FirstFailure>,
    pub(crate) info: TraceInfo,
    /// A row per host thread (format 1.14), by thread index.
    #[serde(default)]
    pub(crate) threads: Vec<super::ThreadRow>,
}

impl Model {
    /// Every lane (five per runtime, in [`QUEUES`] order), empty ones included.
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// The lane `id`.
    ///
    /// # Panics
    ///
    /// If `id` is not a lane of this model.
    pub fn lane(&self, id: LaneRef) -> &Lane {
        &self.lanes[id.get()]
    }

    /// The display name of a lane: the queue, prefixed by the runtime when the trace has
    /// several.
    pub fn lane_name(&self, id: LaneRef) -> String {
        let lane = self.lane(id);
        self.queue_lane_name(lane.runtime, lane.queue)
    }

    /// The display name of the lane of `queue` on `runtime` (see [`Model::lane_name`]).
    pub fn queue_lane_name(&self, runtime: RuntimeId, queue: Queue) -> String {
        if self.lanes.len() > QUEUES.len() {
            format!("r{runtime} {}", queue_name(queue))
        } else {
            queue_name(queue).to_owned()
        }
    }

    /// The span `r`.
    ///
    /// # Panics
    ///
    /// If `r` is not a span of this model.
    pub fn span(&self, r: SpanRef) -> &Span {
        &self.lanes[r.lane.get()].spans()[r.index as usize]
    }

    /// The span `r`, if it exists.
    pub fn get_span(&self, r: SpanRef) -> Option<&Span> {
        self.lanes.get(r.lane.get())?.spans().get(r.index as usize)
    }

    /// Total number of spans.
    pub fn span_count(&self) -> usize {
        self.lanes.iter().map(Lane::len).sum()
    }

    /// How many of the spans are untimed: regions cancelled before they ran, or failed ones
    /// whose timing was lost ([`Span::ran`] is false).
    pub fn untimed_span_count(&self) -> usize {
        self.untimed_spans
    }

    /// "N spans", or "N spans (M untimed)": the spans that ran, as `stats` counts them, then
    /// the regions shown without timing.
    pub fn spans_summary(&self) -> String {
        let ran = self.span_count() - self.untimed_spans;
        match self.untimed_spans {
            0 => crate::units::plural(ran as u64, "span"),
            untimed => format!(
                "{} (+{untimed} untimed)",
                crate::units::plural(ran as u64, "span")
            ),
        }
    }

    /// Every submission, sorted by (runtime, index).
    pub fn submissions(&self) -> &[Submission] {
        &self.submissions
    }

    /// The submission `id`.
    pub fn submission(&self, id: SubId) -> &Submission {
        &self.submissions[id.get()]
    }

    /// The submission with captured index `index` of `runtime`: a binary search, for
    /// navigation by a submission's captured number (a selection carried to a re-read of a
    /// live trace). The model's own joins (spans, events, waits, explicit producers) are
    /// `hrx-analysis`'s joiner's, not this lookup's.
    pub fn find_submission(&self, runtime: RuntimeId, index: SubmissionIndex) -> Option<SubId> {
        self.submissions
            .binary_search_by_key(&(runtime, index), |s| (s.runtime, s.index))
            .ok()
            .map(|i| SubId(i as u32))
    }

    /// The explicit producers (`submit_after`) of a submission, as captured: all of
    /// them, or its [`EXPLICIT_PRODUCERS_KEPT`] latest where it named more
    /// ([`Model::explicit_producers_left_out`]).
    pub fn explicit_producers(&self, id: SubId) -> &[SubmissionIndex] {
        let s = self.submission(id);
        let start = s.producers_start as usize;
        &self.explicit_producers[start..start + s.producers_len as usize]
    }

    /// Explicit producers a submission named past its [`EXPLICIT_PRODUCERS_KEPT`] latest:
    /// neither listed nor linked.
    pub fn explicit_producers_left_out(&self, id: SubId) -> u32 {
        self.submission(id).producers_left_out
    }

    /// The structure of the trace: the joiner's index, which every reader shares.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Every prepared graph.
    pub fn prepared(&self) -> &[PreparedInfo] {
        self.index.prepared()
    }

    /// A prepared graph by its captured id.
    pub fn find_prepared(&self, runtime: RuntimeId, id: PreparedId) -> Option<&PreparedInfo> {
        let p = self.index.find_prepared(runtime, id)?;
        Some(&self.prepared()[p.get()])
    }

    /// The region `id`.
    pub fn region(&self, id: RegionRef) -> &RegionInfo {
        self.index.region(id)
    }

    /// The label of region `id`.
    pub fn region_label(&self, id: RegionRef) -> LabelRef {
        self.index.label(id).unwrap_or_default()
    }

    /// The search key of region `id`: an index into the model's search texts (its label and
    /// every operation's name), shared by regions with the same.
    pub fn search_key(&self, id: RegionRef) -> usize {
        self.search_keys.get(id.get()).map_or(0, |&k| k as usize)
    }

    /// The region of a submission's prepared graph that `key` names, where it was recorded.
    pub fn region_of(&self, key: RegionKey) -> Option<RegionRef> {
        let prepared = self.submission(key.submission).prepared()?;
        self.index.region_of(prepared, RegionIndex(key.region))
    }

    /// The regions of a submission's prepared graph (empty when it was not recorded).
    pub fn submission_regions(&self, id: SubId) -> &[RegionInfo] {
        match self.submission(id).prepared() {
            Some(p) => {
                let range = &self.prepared()[p.get()].regions;
                &self.regions()[range.start as usize..range.end as usize]
            }
            None => &[],
        }
    }

    /// The span of a region of a submission, where it is on the timeline.
    pub fn span_of(&self, key: RegionKey) -> Option<SpanRef> {
        let s = self.submissions.get(key.submission.get())?;
        if key.region as usize >= self.submission_regions(key.submission).len() {
            return None;
        }
        SpanRef::unpack(self.region_spans[s.region_base as usize + key.region as usize])
    }

    /// The spans of every region of a submission that is on the timeline.
    pub fn submission_spans(&self, id: SubId) -> impl Iterator<Item = SpanRef> + '_ {
        let base = self.submission(id).region_base as usize;
        let n = self.submission_regions(id).len();
        self.region_spans[base..base + n]
            .iter()
            .filter_map(|&p| SpanRef::unpack(p))
    }

    /// The region key of a span.
    pub fn key_of(&self, span: &Span) -> RegionKey {
        RegionKey {
            submission: span.submission,
            region: self.region(span.region).index.0,
        }
    }

    /// The label of a span's region.
    pub fn span_label(&self, span: &Span) -> &str {
        self.label(self.region_label(span.region))
    }

    /// An interned label.
    pub fn label(&self, id: LabelRef) -> &str {
        &self.labels()[id.get()]
    }

    /// Every label, by [`LabelRef`].
    pub fn labels(&self) -> &[String] {
        self.index.labels()
    }

    /// Spans per label, by [`LabelRef`].
    pub fn label_span_counts(&self) -> &[u64] {
        &self.label_spans
    }

    /// Whether search key `key` ([`Model::search_key`]) matches `needle` (lowercase):
    /// the label or the name of any operation of its regions contains it, so `/sobel`
    /// finds the native graph `hrx_rgb_to_gray +5` that runs `hrx_sobel`.
    pub fn search_key_matches(&self, key: usize, needle: &str) -> bool {
        self.search_texts[key].contains(needle)
    }

    /// Number of search keys ([`Model::search_key`]).
    pub fn search_key_count(&self) -> usize {
        self.search_texts.len()
    }

    /// Per search key, the spans of its regions.
    pub fn search_key_spans(&self) -> &[u64] {
        &self.search_key_spans
    }

    /// Every region of every prepared graph, by [`RegionRef`].
    pub fn regions(&self) -> &[RegionInfo] {
        self.index.regions()
    }

    /// The recorded operation `node` of a prepared graph's source graph.
    pub fn op(&self, prepared: PreparedRef, node: NodeIndex) -> Option<&GraphOp> {
        let p = &self.prepared()[prepared.get()];
        self.index.graph_op(p.runtime, p.graph, node)
    }

    /// A loaded kernel.
    pub fn kernel(&self, runtime: RuntimeId, id: KernelId) -> Option<&KernelLoaded> {
        self.index.kernel(runtime, id)
    }

    /// The kernel name of an operation (`fill`, `copy`, the kernel entry, ...).
    pub fn op_name(&self, runtime: RuntimeId, op: &OpKind) -> String {
        self.index.op_name(runtime, op)
    }

    /// The name an operation of a region on `queue` is listed under in every verb
    /// ([`crate::listed_op_name`]: a copy as `upload`, `download` or `copy` by its lane).
    pub fn listed_op_name(&self, runtime: RuntimeId, op: &OpKind, queue: Queue) -> String {
        self.index.listed_op_name(runtime, op, queue)
    }

    /// A created buffer.
    pub fn buffer(&self, runtime: RuntimeId, id: BufferId) -> Option<&BufferCreated> {
        self.index.buffer(runtime, id)
    }

    /// Every event, sorted by time.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The failure or cancellation event of a span, if any.
    pub fn span_event(&self, span: SpanRef) -> Option<&Event> {
        self.span_events.get(&span).map(|e| &self.events[e.get()])
    }

    /// The first event at or after `t_ns`.
    pub fn first_event_at(&self, t_ns: u64) -> usize {
        self.events.partition_point(|e| e.time_ns < t_ns)
    }

    /// Submit times, sorted.
    pub fn submit_times(&self) -> &[u64] {
        &self.submit_times
    }

    /// Busy refusal times, sorted.
    pub fn busy_times(&self) -> &[u64] {
        &self.busy_times
    }

    /// The time range of everything on the timeline (`None` for an empty trace).
    pub fn time_range(&self) -> Option<TimeWindow> {
        self.range
    }

    /// The statistics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A row per host thread that submitted, waited, ran host callbacks, waited for the
    /// recorder or annotated (format 1.14), by thread index.
    pub fn threads(&self) -> &[super::ThreadRow] {
        &self.threads
    }

    /// The first failure and what it took down.
    pub fn first_failure(&self) -> Option<&FirstFailure> {
        self.first_failure.as_ref()
    }

    /// Facts about the recording, to change (a followed trace's recovery and warnings).
    pub fn info_mut(&mut self) -> &mut TraceInfo {
        &mut self.info
    }

    /// Facts about the recording.
    pub fn info(&self) -> &TraceInfo {
        &self.info
    }

    /// The clock calibration of a runtime, if recorded.
    pub fn clock(&self, runtime: RuntimeId) -> Option<&ClockCalibration> {
        self.info.clocks.iter().find(|c| c.runtime == runtime)
    }

    /// Approximate heap bytes held by the per-span structures (lanes, span slots,
    /// submissions), which dominate on large traces.
    pub fn heap_bytes(&self) -> usize {
        self.lanes.iter().map(Lane::heap_bytes).sum::<usize>()
            + self.region_spans.heap_bytes()
            + self.submissions.heap_bytes()
            + self.submit_times.heap_bytes()
            + self.explicit_producers.heap_bytes()
            + self.explicit_edges.heap_bytes()
            + self.explicit_by_consumer.heap_bytes()
            + self.cross.heap_bytes()
            + self.cross_by_producer.heap_bytes()
            + self.op_spans.heap_bytes()
            + size_of_val(self.regions())
    }
}

/// Count of sorted `times` in `[t0, t1)`.
pub fn count_in(times: &[u64], t0: u64, t1: u64) -> usize {
    times.partition_point(|&t| t < t1) - times.partition_point(|&t| t < t0)
}
