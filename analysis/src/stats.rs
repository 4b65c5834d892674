//! Statistics of a trace in one streaming pass and bounded memory: per operation durations
//! (kernel name, `fill`, `copy`), per region label durations, per lane utilisation, copy
//! bandwidth per GPU lane, submission outcomes, refusals and failures.
//!
//! - **Operations.** Where the backend timed a region's operations (`OpTiming` records,
//!   joined to their region by [`crate::scan`]), each operation's durations count under its
//!   name ([`Stats::operations`]): a kernel's entry, or its kind (`fill`, `scoped`, `host`;
//!   a copy by its lane: `upload`, `download`, else `copy`, [`crate::index::copy_name`]),
//!   so a native graph of six kernels is six rows, not one label. Older traces and
//!   backends that time only whole regions have none ([`OperationTimes::recorded`] is 0):
//!   readers say so, and the region labels below are all there is.
//! - **Clock.** A duration is the device clock's span where the backend recorded one (a GPU
//!   event pair, CUPTI), else the host clock's (the software device times its work on the
//!   host): queueing and launch latency inflate host spans of GPU work, the device span is
//!   what the GPU spent. Each row counts how many of its durations are device spans
//!   ([`KernelStats::device`]). Lane utilisation stays on the host clock (every span of a
//!   trace is on it, and the lanes' intervals must share one clock).
//! - Region durations are those of region timings joined to their region (untimed
//!   cancelled regions are left out). A region "kernel" is a region label ([`crate::label_region`])
//!   of regions that are no copies ([`crate::is_copy_region`]): copies' durations are kept
//!   apart, per copy label ([`Stats::copy_labels`]), and counted in the copy bandwidth;
//!   host callbacks (regions of kind `Host`: host work run by a worker thread, no device
//!   kernel) are kept apart too, per label ([`Stats::host_callbacks`]).
//!   Only runs that succeeded count: a region's timing waits for its completion
//!   (`RegionDone`) in a bounded window ([`PENDING_LIMIT`] timings), and a failed or
//!   cancelled run is left out of the durations and of the copy bandwidth (the queue was
//!   busy all the same); [`KernelStats::failed`] counts each label's failed runs. A timing
//!   whose completion was never read, or not within the window, counts as succeeded. The
//!   operation timings of a run wait with it and are settled alike: those of a failed or
//!   cancelled run are left out and counted ([`OperationTimes::failed`]; a failure often
//!   stretches what ran before it, the H200's faults trace had a 200 ms p99 from one).
//!   Count, total, mean, min and max are exact; p50 and p99 are nearest-rank, exact up to
//!   [`crate::sketch::EXACT_LIMIT`] spans of a label and within
//!   [`crate::sketch::RELATIVE_ERROR`] past it ([`KernelStats::exact`] says which).
//! - Utilisation is the union of a lane's span intervals (overlaps counted once) over the
//!   trace span: first span start to last span end, over every lane. Spans arrive in file
//!   order, which is per recording thread: the blocks of several threads interleave, so a
//!   lane's spans come out of start order, a block of one thread often thousands of spans
//!   behind another's. The union is kept exactly in a reorder window of at most
//!   [`OPEN_INTERVALS`] disjoint intervals per lane; past it, the oldest half is retired into
//!   a running total and the lane's *floor* (the end of the last retired interval) rises. A
//!   span that starts below the floor (a *late* span: its block came more than the window
//!   behind) cannot be merged with the retired intervals any more: its part below the floor
//!   is added in full, as if it overlapped none of them. That is exact on a queue whose spans
//!   do not overlap (a GPU queue runs its work in order), and otherwise too high by at most
//!   that part ([`Stats::late_spans`] and [`Stats::late_ns`] say how many and how much);
//!   never too low. Earlier versions clipped such a span at the floor and lost it, under-
//!   counting the busy time of multi-threaded recordings by up to the lag of their threads.
//! - Copy bandwidth is the sum of `copy_bytes` of copy-batch regions that succeeded over the
//!   sum of their durations (device spans where recorded), per GPU lane.
//!
//! - Annotations (format 1.14): the application's ranges by name, as kernels are (count,
//!   total, mean, p50, p99, min, max of their host durations); its markers counted by name;
//!   its counters' samples, minimum, maximum and last value (the sample with the latest
//!   time). Host threads: per recording thread with a name record, its `submit` calls,
//!   blocking waits and host callbacks (count and total time each) and its annotations.
//!
//! State: one distribution per region of each prepared graph, per timed operation of each
//! and per annotation name, one interval set per lane,
//! the timings waiting for their completion (at most [`PENDING_LIMIT`]), and the joiner's
//! in-flight window ([`crate::scan`]): nothing grows with submissions.

use crate::hash::IdMap;
use crate::index::{Index, LabelRef, LaneRef, RegionRef, is_gpu_queue};
use crate::scan::{JoinedRegion, JoinedSpan, Outcome, ScanSummary, Visitor};
use crate::sketch::Sketch;
use hrx_capture::schema::{
    AnnotationId, HostSpanKind, NodeIndex, OpKind, Queue, Record, RefusalKind, RegionKind,
    RuntimeId, SubmissionIndex, TraceRange,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Timings kept waiting for their region's completion (see the module docs).
pub const PENDING_LIMIT: usize = 1 << 16;

/// Disjoint busy intervals kept per lane before the oldest half is retired (the reorder
/// window, see the module docs): about 2 MiB per lane at most.
pub const OPEN_INTERVALS: usize = 1 << 16;

/// Duration statistics of one kernel (region label).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelStats {
    /// The label.
    pub label: LabelRef,
    /// Its text.
    pub name: String,
    /// Spans.
    pub count: u64,
    /// Sum of durations in ns.
    pub total_ns: u64,
    /// Mean duration in ns.
    pub mean_ns: u64,
    /// Median (nearest rank) in ns.
    pub p50_ns: u64,
    /// 99th percentile (nearest rank) in ns.
    pub p99_ns: u64,
    /// Shortest in ns.
    pub min_ns: u64,
    /// Longest in ns.
    pub max_ns: u64,
    /// Whether p50 and p99 are exact (see the module docs).
    pub exact: bool,
    /// Runs that failed, left out of the durations above.
    #[serde(default)]
    pub failed: u64,
    /// Of `count`, the durations measured on the device clock (the rest: host clock; see
    /// the module docs).
    #[serde(default)]
    pub device: u64,
    /// A 97.5% confidence interval of the median in ns
    /// ([`crate::sketch::Sketch::median_interval`]); `None` with fewer than 7 spans.
    #[serde(default)]
    pub p50_interval_ns: Option<(u64, u64)>,
}

/// The label of a row that is no region label (an operation's, [`Stats::operations`]).
pub const NO_LABEL: LabelRef = LabelRef(u32::MAX);

/// Duration statistics of one operation name, from the operations' own timings
/// (`OpTiming`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationStats {
    /// `kernel` (a GPU kernel or an NPU run, named by its entry), or the operation's kind:
    /// `fill`, `copy`, `scoped`, `host` (named so too); `unknown` for an operation its trace
    /// never described (named `op N`).
    pub kind: String,
    /// Its durations, as a kernel's: `name` is the entry or the kind, `label` is
    /// [`NO_LABEL`], `failed` counts its timings in runs that failed or were cancelled.
    /// (Not `serde(flatten)`: the view cache stores [`Stats`] with postcard, which needs
    /// every map's length up front.)
    pub stats: KernelStats,
}

/// What the trace holds of operation timings (`OpTiming`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationTimes {
    /// Operation timings joined to a region (0: the trace times whole regions only).
    pub recorded: u64,
    /// Of those, in runs that failed or were cancelled: left out of the durations.
    pub failed: u64,
    /// Of those counted, measured on the device clock.
    pub device: u64,
    /// Operation timings that joined no region (not counted).
    pub unplaced: u64,
    /// Timed runs of native-graph regions (whose operations a backend could time).
    pub native_graph_runs: u64,
    /// Operations of the native-graph runs that succeeded (each counts its region's).
    #[serde(default)]
    pub native_graph_ops: u64,
    /// Operation timings of those runs (`recorded` also counts copy batches' and failed
    /// runs').
    #[serde(default)]
    pub native_graph_timed: u64,
}

impl OperationTimes {
    /// Operations of native-graph runs that succeeded and have no time of their own, where
    /// the trace times some operations: on CUDA only the built-in kernels time themselves
    /// unless kernel times (CUPTI) were on; elsewhere their timings are not in the trace (cut
    /// short). A failed run's operations are not counted (those after the failing one never
    /// ran).
    pub fn untimed_native_ops(&self) -> u64 {
        if self.recorded == 0 {
            return 0;
        }
        self.native_graph_ops
            .saturating_sub(self.native_graph_timed)
    }
}

/// Utilisation of one lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaneStats {
    /// The lane.
    pub lane: LaneRef,
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its queue.
    pub queue: Queue,
    /// Spans that ran on it.
    pub spans: u64,
    /// Time with at least one span running, in ns.
    pub busy_ns: u64,
    /// `busy_ns` over the trace span, 0..=1.
    pub utilisation: f64,
}

/// Copy throughput of one GPU lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyStats {
    /// The lane.
    pub lane: LaneRef,
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its queue.
    pub queue: Queue,
    /// Copy batches that ran.
    pub batches: u64,
    /// Bytes they copied.
    pub bytes: u64,
    /// Sum of their durations in ns (device spans where recorded).
    pub busy_ns: u64,
    /// `bytes` over `busy_ns`, in bytes per second.
    pub bytes_per_s: f64,
    /// Of `batches`, those timed on the device clock.
    #[serde(default)]
    pub device: u64,
}

/// Submissions by outcome, and refused submits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmissionCounts {
    /// `Submit` records.
    pub accepted: u64,
    /// Ended ok.
    pub ok: u64,
    /// Ended failed.
    pub failed: u64,
    /// Ended cancelled.
    pub cancelled: u64,
    /// No outcome recorded (cut trace, or still running at the end).
    pub unknown: u64,
    /// Submits refused `Busy`.
    pub busy_refusals: u64,
    /// Submits refused otherwise (device lost, other).
    pub other_refusals: u64,
}

/// Failure records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCounts {
    /// Regions that ran and failed.
    pub regions_failed: u64,
    /// Regions cancelled.
    pub regions_cancelled: u64,
    /// Prepared graphs quarantined.
    pub quarantines: u64,
    /// Buffers poisoned.
    pub poisoned_buffers: u64,
    /// Copy streams marked unhealthy.
    pub unhealthy_streams: u64,
    /// Injected faults that fired.
    pub faults_injected: u64,
}

/// Duration statistics of one annotation range name (format 1.14), host ns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnotationStats {
    /// The range's name.
    pub name: String,
    /// Ranges.
    pub count: u64,
    /// Sum of durations in ns.
    pub total_ns: u64,
    /// Mean duration in ns.
    pub mean_ns: u64,
    /// Median (nearest rank) in ns.
    pub p50_ns: u64,
    /// 99th percentile (nearest rank) in ns.
    pub p99_ns: u64,
    /// Shortest in ns.
    pub min_ns: u64,
    /// Longest in ns.
    pub max_ns: u64,
    /// Whether p50 and p99 are exact (see the module docs).
    pub exact: bool,
    /// A 97.5% confidence interval of the median in ns; `None` with fewer than 7 ranges.
    #[serde(default)]
    pub p50_interval_ns: Option<(u64, u64)>,
    /// Capture work left out of the durations, in ns: the thread's waits on the trace
    /// recorder ([`RecorderWait`]) and at capture fences ([`HostSpanKind::CaptureFence`])
    /// inside its ranges. Capture never appears inside a measured time.
    #[serde(default)]
    pub capture_wait_ns: u64,
    /// Ranges that held any such wait.
    #[serde(default)]
    pub capture_wait_ranges: u64,
    /// Ranges that began among the waits let go of (more than [`CAPTURE_WAITS_KEPT`] on
    /// their thread since): waits of theirs among those are not left out of their times.
    #[serde(default)]
    pub capture_wait_untold_ranges: u64,
}

/// One marker name's count (format 1.14).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerStats {
    /// The marker's name.
    pub name: String,
    /// Markers.
    pub count: u64,
}

/// One counter's samples (format 1.14), values in the application's unit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterStats {
    /// The counter's name.
    pub name: String,
    /// Samples.
    pub samples: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// The value of the latest sample (by time).
    pub last: f64,
}

/// What one host thread did in the runtime and annotated (format 1.14).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStats {
    /// The thread's index in the session.
    pub thread: u32,
    /// Its name (`thread N` when it has none).
    pub name: String,
    /// `submit` calls.
    pub submits: u64,
    /// Their total time in ns.
    pub submit_ns: u64,
    /// Waits that blocked.
    pub waits: u64,
    /// Their total time in ns.
    pub wait_ns: u64,
    /// Host callbacks it ran.
    pub host_callbacks: u64,
    /// Their total time in ns.
    pub host_callback_ns: u64,
    /// Annotation ranges it recorded.
    pub ranges: u64,
    /// Waits at the capture fence before a region it ran (format 1.15; 0 in older traces).
    #[serde(default)]
    pub capture_fences: u64,
    /// Their total time in ns.
    #[serde(default)]
    pub capture_fence_ns: u64,
}

/// Every statistic of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Per operation name (kernel entry, `fill`, `copy`, ...), from operation timings, by
    /// total time (largest first, then by name); empty without them ([`Stats::op_times`]).
    #[serde(default)]
    pub operations: Vec<OperationStats>,
    /// What the trace holds of operation timings.
    #[serde(default)]
    pub op_times: OperationTimes,
    /// How the runtimes timed their operations, where the trace says (format 1.16's
    /// `OpTimes`), each method once.
    #[serde(default)]
    pub op_time_sources: Vec<hrx_capture::schema::OpTimeSource>,
    /// Per region label of regions that are no copies and no host callbacks (a native
    /// graph of several operations under its first kernel's name, `blur +1`), by total time
    /// (largest first, then by name).
    pub kernels: Vec<KernelStats>,
    /// Per copy label (`upload`, `download`, `copy`), as `kernels` are: the copies'
    /// durations, which `diff` compares as it compares kernels (`copies` has their
    /// bandwidth per lane).
    pub copy_labels: Vec<KernelStats>,
    /// Per host callback label (`host`, `host +1`), as `kernels` are: host work run by a
    /// worker thread is no kernel; `diff` compares their durations as it compares kernels.
    #[serde(default)]
    pub host_callbacks: Vec<KernelStats>,
    /// Per lane with spans, in lane order.
    pub lanes: Vec<LaneStats>,
    /// Per GPU lane with copy batches, in lane order.
    pub copies: Vec<CopyStats>,
    /// The trace span in ns: first span start to last span end.
    pub span_ns: u64,
    /// Submission outcomes.
    pub submissions: SubmissionCounts,
    /// Failure records.
    pub failures: FailureCounts,
    /// Timings that could not be joined to a region.
    pub unplaced_timings: u64,
    /// Spans that started below their lane's retired intervals, later than the reorder
    /// window allows (see the module docs): their part below was counted in full.
    pub late_spans: u64,
    /// The time of those parts, in ns: the lanes' busy time is too high by at most this
    /// (by their overlap with older spans, which is 0 where a queue's spans never overlap).
    #[serde(default)]
    pub late_ns: u64,
    /// Annotation ranges by name, by total time (largest first, then by name).
    #[serde(default)]
    pub annotations: Vec<AnnotationStats>,
    /// Markers by name, by name.
    #[serde(default)]
    pub markers: Vec<MarkerStats>,
    /// Counters by name, by name.
    #[serde(default)]
    pub counters: Vec<CounterStats>,
    /// Host threads with spans or annotations, by thread index.
    #[serde(default)]
    pub threads: Vec<ThreadStats>,
    /// The ranges of a recording the trace holds (its `TraceRange` records: a capture range
    /// or a trim), by runtime and first submission; empty for a whole recording. The figures
    /// cover those submissions only.
    #[serde(default)]
    pub ranges: Vec<TraceRange>,
}

impl Stats {
    /// What a trace without operation timings lacks, in words, as every reader says it
    /// (`stats`, the timeline's statistics); `None` with them, and where no region ran
    /// (a trace cut before its first submission holds no kernel whose operation times it
    /// could lack: the note read as if the recording had not timed them, a fresh user's pass).
    pub fn operation_times_note(&self) -> Option<&'static str> {
        let regions = !(self.kernels.is_empty()
            && self.copy_labels.is_empty()
            && self.host_callbacks.is_empty());
        (regions && self.op_times.recorded == 0).then_some(
            "per-operation times: none recorded; kernels are listed by region label only (a \
             native graph under its first kernel, +N the others)",
        )
    }
}

/// The busy-time union of one lane (see the module docs).
#[derive(Clone, Debug)]
struct Busy {
    /// Disjoint intervals at or above `floor`, start to end.
    open: BTreeMap<u64, u64>,
    /// Their total length (disjoint intervals of `u64` time sum within it).
    open_ns: u64,
    /// Intervals kept before the oldest half is retired.
    window: usize,
    retired_ns: u64,
    floor: u64,
    spans: u64,
    late: u64,
    late_ns: u64,
}

impl Default for Busy {
    fn default() -> Busy {
        Busy::with_window(OPEN_INTERVALS)
    }
}

impl Busy {
    fn with_window(window: usize) -> Busy {
        Busy {
            open: BTreeMap::new(),
            open_ns: 0,
            window: window.max(2),
            retired_ns: 0,
            floor: 0,
            spans: 0,
            late: 0,
            late_ns: 0,
        }
    }

    fn add(&mut self, start: u64, end: u64) {
        self.spans += 1;
        if end <= start {
            return;
        }
        let mut start = start;
        if start < self.floor {
            // Below the retired intervals: counted in full (see the module docs).
            let below = end.min(self.floor) - start;
            self.late += 1;
            self.late_ns = self.late_ns.saturating_add(below);
            self.retired_ns = self.retired_ns.saturating_add(below);
            start = self.floor;
            if end <= start {
                return;
            }
        }
        let mut end = end;
        // Merge with the interval starting at or before `start` when it reaches `start`.
        if let Some((&s, &e)) = self.open.range(..=start).next_back()
            && e >= start
        {
            if e >= end {
                return;
            }
            start = s;
            self.open.remove(&s);
            self.open_ns -= e - s;
        }
        // Swallow every interval starting inside [start, end].
        while let Some((&s, &e)) = self.open.range(start..=end).next() {
            end = end.max(e);
            self.open.remove(&s);
            self.open_ns -= e - s;
        }
        self.open.insert(start, end);
        self.open_ns += end - start;
        if self.open.len() > self.window {
            while self.open.len() > self.window / 2 {
                let Some((s, e)) = self.open.pop_first() else {
                    break;
                };
                self.open_ns -= e - s;
                self.retired_ns = self.retired_ns.saturating_add(e - s);
                self.floor = e;
            }
        }
    }

    /// The busy time: retired and open intervals (kept as they change, so that statistics
    /// taken while a pass goes on do not walk the open intervals).
    fn busy_ns(&self) -> u64 {
        debug_assert_eq!(
            self.open_ns,
            self.open.iter().map(|(s, e)| e - s).sum::<u64>()
        );
        self.retired_ns.saturating_add(self.open_ns)
    }
}

#[derive(Clone, Debug, Default)]
struct CopyAcc {
    batches: u64,
    bytes: u64,
    busy_ns: u64,
    device: u64,
}

/// A run, by runtime, submission and region (model-wide).
type RunKey = (RuntimeId, SubmissionIndex, RegionRef);

/// A duration, and whether it is a device span.
#[derive(Clone, Copy, Debug)]
struct Timed {
    ns: u64,
    device: bool,
}

impl Timed {
    /// A span's preferred duration: its device span's where recorded, else its host span's.
    fn of(span: &JoinedSpan) -> Timed {
        match span.device {
            Some(d) => Timed {
                ns: d.end_ns.saturating_sub(d.start_ns),
                device: true,
            },
            None => Timed {
                ns: span.duration_ns(),
                device: false,
            },
        }
    }
}

/// A run's timings waiting for its completion: its region's (lane and duration) and its
/// operations'.
#[derive(Clone, Debug, Default)]
struct Pending {
    region: Option<(usize, Timed)>,
    ops: Vec<(NodeIndex, Timed)>,
}

/// The durations of one region's runs or one operation's, with how many were device spans.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    /// Durations of the runs that succeeded, ns.
    pub sketch: Sketch,
    /// Of those, device spans.
    pub device: u64,
    /// Runs that failed (an operation's: failed or cancelled), left out of `sketch`.
    pub failed: u64,
}

/// The [`Visitor`] that gathers [`Stats`]; [`StatsVisitor::finish`] turns it into them.
#[derive(Clone, Debug, Default)]
pub struct StatsVisitor {
    /// Per region (model-wide), the durations of its runs that succeeded.
    durations: Vec<Sketch>,
    /// Per region (model-wide), how many of those were device spans.
    device: Vec<u64>,
    /// Per region (model-wide), its runs that failed.
    failed: Vec<u64>,
    /// Per operation (its region, model-wide, and node), its timings.
    ops: IdMap<(RegionRef, NodeIndex), Timings>,
    op_times: OperationTimes,
    op_time_sources: Vec<hrx_capture::schema::OpTimeSource>,
    /// Timings waiting for their run's completion.
    pending: IdMap<RunKey, Pending>,
    /// Their keys, oldest first (a key may have left `pending` already).
    pending_order: VecDeque<RunKey>,
    /// Completions (at most [`PENDING_LIMIT`], oldest forgotten first): a timing read
    /// after its run's completion is settled with it.
    settled: IdMap<RunKey, Outcome>,
    settled_order: VecDeque<RunKey>,
    busy: Vec<Busy>,
    copies: Vec<CopyAcc>,
    first_ns: Option<u64>,
    last_ns: u64,
    submissions: SubmissionCounts,
    failures: FailureCounts,
    annotations: Annotations,
    /// The trace's ranges (`TraceRange` records), by runtime and first submission, at most
    /// [`RANGES_KEPT`].
    ranges: BTreeMap<(RuntimeId, u64), TraceRange>,
}

/// Ranges kept: a trace opening a range per submission keeps the first ones.
const RANGES_KEPT: usize = 1024;

/// What [`StatsVisitor`] gathers of annotations and host threads (format 1.14), by id.
#[derive(Clone, Debug, Default)]
struct Annotations {
    ranges: BTreeMap<AnnotationId, Sketch>,
    /// Per name: capture waits left out of its ranges (ns), the ranges that held any, and
    /// the ranges that began among the waits let go of ([`CaptureWaits::within`]).
    capture_in_ranges: BTreeMap<AnnotationId, (u64, u64, u64)>,
    /// The threads' capture waits, to leave out of the ranges around them.
    capture_waits: CaptureWaits,
    markers: BTreeMap<AnnotationId, u64>,
    /// Samples, min, max, (time, value) of the latest.
    counters: BTreeMap<AnnotationId, (u64, f64, f64, (u64, f64))>,
    threads: BTreeMap<u32, ThreadStats>,
}

/// Capture waits kept per thread to leave out of the ranges around them: a range is left
/// its newest ones (waits are rare: a few per second on a loaded host).
pub const CAPTURE_WAITS_KEPT: usize = 4096;

/// Each thread's capture waits (recorder waits, capture fences), read in file order, to
/// leave out of the annotation ranges around them, as `stats` and `diff` do and the
/// Parquet export's `annotations.capture_wait_ns` says.
#[derive(Clone, Debug, Default)]
pub(crate) struct CaptureWaits {
    /// Per thread: its latest capture waits, `(start, end)`, oldest first, at most
    /// [`CAPTURE_WAITS_KEPT`]. A wait is recorded before the range around it (ranges are
    /// recorded as they close, on the same thread, in order).
    kept: BTreeMap<u32, VecDeque<(u64, u64)>>,
    /// Per thread: the waits let go of to keep that bound, as (first start, last end, total
    /// ns): a range around all of them (one around a whole `main`) still leaves them out.
    evicted: BTreeMap<u32, (u64, u64, u64)>,
}

impl CaptureWaits {
    /// Takes note of `record` if it is a capture wait (a recorder wait, a capture fence).
    pub(crate) fn record(&mut self, record: &Record) {
        match record {
            Record::HostSpan(h) if h.kind == HostSpanKind::CaptureFence => {
                self.wait(h.thread, (h.start_ns, h.end_ns));
            }
            Record::RecorderWait(w) => self.wait(w.thread, (w.start_ns, w.end_ns)),
            _ => {}
        }
    }

    /// A capture wait of `thread`, to leave out of the ranges around it.
    fn wait(&mut self, thread: u32, (start_ns, end_ns): (u64, u64)) {
        let waits = self.kept.entry(thread).or_default();
        if waits.len() == CAPTURE_WAITS_KEPT
            && let Some((start, end)) = waits.pop_front()
        {
            let evicted = self.evicted.entry(thread).or_insert((start, end, 0));
            evicted.1 = end;
            evicted.2 += end - start;
        }
        waits.push_back((start_ns, end_ns.max(start_ns)));
    }

    /// The time `thread`'s capture waits take of `start_ns..end_ns`, and whether the range
    /// may hold waits that cannot be told. Of the waits let go of (past
    /// [`CAPTURE_WAITS_KEPT`]), those of a range around all of them; a range that began
    /// among them is left those it can be told, the kept ones (and is counted, to be said).
    pub(crate) fn within(&self, thread: u32, (start_ns, end_ns): (u64, u64)) -> (u64, bool) {
        let Some(waits) = self.kept.get(&thread) else {
            return (0, false);
        };
        let kept: u64 = waits
            .iter()
            .rev()
            // Newest first, in time order on one thread: older ones end before the range.
            .take_while(|&&(_, end)| end > start_ns)
            .map(|&(start, end)| end.min(end_ns).saturating_sub(start.max(start_ns)))
            .sum();
        let (evicted, untold) = match self.evicted.get(&thread) {
            Some(&(first, last, total)) if start_ns <= first && last <= end_ns => (total, false),
            // Some of the waits let go of may lie inside the range.
            Some(&(first, last, _)) => (0, start_ns < last && first < end_ns),
            None => (0, false),
        };
        (
            (kept + evicted).min(end_ns.saturating_sub(start_ns)),
            untold,
        )
    }
}

impl Annotations {
    fn thread(&mut self, thread: u32) -> &mut ThreadStats {
        self.threads.entry(thread).or_insert_with(|| ThreadStats {
            thread,
            ..ThreadStats::default()
        })
    }

    fn record(&mut self, record: &Record) {
        self.capture_waits.record(record);
        match record {
            Record::HostSpan(h) => {
                let ns = h.end_ns.saturating_sub(h.start_ns);
                let t = self.thread(h.thread);
                let (count, total) = match h.kind {
                    HostSpanKind::Submit => (&mut t.submits, &mut t.submit_ns),
                    HostSpanKind::Wait => (&mut t.waits, &mut t.wait_ns),
                    HostSpanKind::HostCallback => (&mut t.host_callbacks, &mut t.host_callback_ns),
                    HostSpanKind::CaptureFence => (&mut t.capture_fences, &mut t.capture_fence_ns),
                };
                *count += 1;
                *total = total.saturating_add(ns);
            }
            Record::AnnotationRange(a) => {
                let (capture, untold) = self.capture_waits.within(a.thread, (a.start_ns, a.end_ns));
                let ns = a.end_ns.saturating_sub(a.start_ns) - capture;
                self.ranges.entry(a.name).or_default().add(ns);
                if capture > 0 || untold {
                    let left_out = self.capture_in_ranges.entry(a.name).or_default();
                    left_out.0 += capture;
                    left_out.1 += u64::from(capture > 0);
                    left_out.2 += u64::from(untold);
                }
                self.thread(a.thread).ranges += 1;
            }
            Record::AnnotationMarker(m) => *self.markers.entry(m.name).or_default() += 1,
            Record::CounterSample(c) => {
                let v = c.value.0;
                let e = self
                    .counters
                    .entry(c.name)
                    .or_insert((0, v, v, (c.time_ns, v)));
                e.0 += 1;
                e.1 = e.1.min(v);
                e.2 = e.2.max(v);
                if c.time_ns >= e.3.0 {
                    e.3 = (c.time_ns, v);
                }
            }
            _ => {}
        }
    }

    fn finish(&self, index: &Index, stats: &mut Stats) {
        for (&name, d) in &self.ranges {
            let mut d = d.clone();
            stats.annotations.push(AnnotationStats {
                name: index.annotation_name(name).into_owned(),
                count: d.count(),
                total_ns: d.total(),
                mean_ns: d.total().checked_div(d.count()).unwrap_or(0),
                p50_ns: d.percentile(50.0),
                p99_ns: d.percentile(99.0),
                min_ns: d.min(),
                max_ns: d.max(),
                exact: d.is_exact(),
                p50_interval_ns: d.median_interval(),
                capture_wait_ns: self.capture_in_ranges.get(&name).map_or(0, |c| c.0),
                capture_wait_ranges: self.capture_in_ranges.get(&name).map_or(0, |c| c.1),
                capture_wait_untold_ranges: self.capture_in_ranges.get(&name).map_or(0, |c| c.2),
            });
        }
        stats.annotations.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        for (&name, &count) in &self.markers {
            let name = index.annotation_name(name).into_owned();
            stats.markers.push(MarkerStats { name, count });
        }
        stats.markers.sort_by(|a, b| a.name.cmp(&b.name));
        for (&name, &(samples, min, max, (_, last))) in &self.counters {
            let name = index.annotation_name(name).into_owned();
            stats.counters.push(CounterStats {
                name,
                samples,
                min,
                max,
                last,
            });
        }
        stats.counters.sort_by(|a, b| a.name.cmp(&b.name));
        stats.threads = self
            .threads
            .values()
            .map(|t| ThreadStats {
                name: index.thread_name(t.thread).into_owned(),
                ..t.clone()
            })
            .collect();
    }
}

impl Visitor for StatsVisitor {
    fn record(&mut self, _index: &Index, record: &Record) {
        self.annotations.record(record);
        // The latest record of each range (a range's closing one restates it with its end).
        if let Record::TraceRange(range) = record
            && (self.ranges.len() < RANGES_KEPT
                || self.ranges.contains_key(&(range.runtime, range.start.0)))
        {
            self.ranges
                .insert((range.runtime, range.start.0), range.clone());
        }
        if let Record::OpTimes(o) = record
            && !self.op_time_sources.contains(&o.source)
        {
            self.op_time_sources.push(o.source);
        }
        let f = &mut self.failures;
        match record {
            Record::SubmitRefused(r) => match r.kind {
                RefusalKind::Busy => self.submissions.busy_refusals += 1,
                _ => self.submissions.other_refusals += 1,
            },
            Record::RegionDone(d) => match Outcome::of(&d.status) {
                Outcome::Ok => {}
                Outcome::Failed => f.regions_failed += 1,
                Outcome::Cancelled => f.regions_cancelled += 1,
            },
            Record::Quarantine(_) => f.quarantines += 1,
            Record::Poison(_) => f.poisoned_buffers += 1,
            Record::CopyStreamUnhealthy(_) => f.unhealthy_streams += 1,
            Record::FaultInjected(_) => f.faults_injected += 1,
            _ => {}
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let lane = span.lane.0 as usize;
        if self.busy.len() <= lane {
            self.busy.resize(lane + 1, Busy::default());
            self.copies.resize(lane + 1, CopyAcc::default());
        }
        self.busy[lane].add(span.start_ns, span.end_ns.max(span.start_ns));
        let first = self.first_ns.get_or_insert(span.start_ns);
        *first = (*first).min(span.start_ns);
        self.last_ns = self.last_ns.max(span.end_ns);
        if index.region(span.region).kind == RegionKind::NativeGraph {
            self.op_times.native_graph_runs += 1;
        }
        let key = (span.runtime, span.submission, span.region);
        let timed = Timed::of(span);
        if let Some(&outcome) = self.settled.get(&key) {
            self.commit(index, key.2, lane, timed, outcome);
            return;
        }
        let (pending, new) = self.pending_entry(key);
        // A second timing of the same run replaces nothing: the first is settled as ok.
        if let Some((lane, timed)) = pending.region.replace((lane, timed)) {
            self.commit(index, key.2, lane, timed, Outcome::Ok);
        }
        if new {
            self.trim_pending(index);
        }
    }

    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: NodeIndex) {
        self.op_times.recorded += 1;
        let key = (span.runtime, span.submission, span.region);
        let timed = Timed::of(span);
        if let Some(&outcome) = self.settled.get(&key) {
            self.commit_op(key.2, node, timed, outcome);
            return;
        }
        let (pending, new) = self.pending_entry(key);
        pending.ops.push((node, timed));
        if new {
            self.trim_pending(index);
        }
    }

    fn region_outcome(
        &mut self,
        index: &Index,
        region: &JoinedRegion,
        outcome: Outcome,
        _time_ns: u64,
    ) {
        let r = region.region.0 as usize;
        if outcome == Outcome::Failed {
            if self.failed.len() <= r {
                self.failed.resize(r + 1, 0);
            }
            self.failed[r] += 1;
        }
        let key = (
            region.submission.runtime,
            region.submission.submission,
            region.region,
        );
        if let Some(pending) = self.pending.remove(&key) {
            self.settle_run(index, key, pending, outcome);
        }
        // Timings read after it (another thread's block, or the operation timings a
        // backend records after the region's success) are settled with it: a successful
        // outcome too, or every such run would wait until the window evicts it.
        if self.settled.insert(key, outcome).is_none() {
            self.settled_order.push_back(key);
        }
        while self.settled.len() > PENDING_LIMIT {
            let Some(old) = self.settled_order.pop_front() else {
                break;
            };
            self.settled.remove(&old);
        }
    }

    fn outcome(
        &mut self,
        _index: &Index,
        _submission: &crate::scan::JoinedSubmission,
        previous: Option<Outcome>,
        outcome: Outcome,
    ) {
        fn count(s: &mut SubmissionCounts, o: Outcome) -> &mut u64 {
            match o {
                Outcome::Ok => &mut s.ok,
                Outcome::Failed => &mut s.failed,
                Outcome::Cancelled => &mut s.cancelled,
            }
        }
        let s = &mut self.submissions;
        if let Some(previous) = previous {
            *count(s, previous) -= 1;
        }
        *count(s, outcome) += 1;
    }
}

impl StatsVisitor {
    /// An empty gatherer.
    pub fn new() -> StatsVisitor {
        StatsVisitor::default()
    }

    /// The run's waiting timings, and whether they were not waiting yet.
    fn pending_entry(&mut self, key: RunKey) -> (&mut Pending, bool) {
        let mut new = false;
        let pending = self.pending.entry(key).or_insert_with(|| {
            new = true;
            Pending::default()
        });
        if new {
            self.pending_order.push_back(key);
        }
        (pending, new)
    }

    /// Settles the oldest waiting runs past [`PENDING_LIMIT`]: their completion did not
    /// come within the window, so they count as succeeded.
    fn trim_pending(&mut self, index: &Index) {
        while self.pending.len() > PENDING_LIMIT {
            let Some(old) = self.pending_order.pop_front() else {
                break;
            };
            if let Some(pending) = self.pending.remove(&old) {
                self.settle_run(index, old, pending, Outcome::Ok);
            }
        }
        // Keys of settled runs (and a run that waits again after it settled) are left in
        // the order; dropped here, each live key once, so the order shrinks back to at most
        // the live runs and this runs once per `PENDING_LIMIT` new runs at most.
        if self.pending_order.len() > 2 * PENDING_LIMIT {
            let pending = &self.pending;
            let mut seen: std::collections::HashSet<RunKey, crate::hash::IdBuildHasher> =
                Default::default();
            self.pending_order
                .retain(|k| pending.contains_key(k) && seen.insert(*k));
        }
    }

    /// A run's waiting timings with its outcome.
    fn settle_run(&mut self, index: &Index, key: RunKey, pending: Pending, outcome: Outcome) {
        if let Some((lane, timed)) = pending.region {
            self.commit(index, key.2, lane, timed, outcome);
        }
        for (node, timed) in pending.ops {
            self.commit_op(key.2, node, timed, outcome);
        }
    }

    /// A run's timing with its outcome: its duration counts when it succeeded.
    fn commit(
        &mut self,
        index: &Index,
        region: RegionRef,
        lane: usize,
        timed: Timed,
        outcome: Outcome,
    ) {
        if outcome != Outcome::Ok {
            return;
        }
        let r = region.0 as usize;
        if self.durations.len() <= r {
            self.durations.resize(r + 1, Sketch::new());
            self.device.resize(r + 1, 0);
        }
        self.durations[r].add(timed.ns);
        self.device[r] += u64::from(timed.device);
        let info = index.region(region);
        if info.kind == RegionKind::NativeGraph {
            self.op_times.native_graph_ops += info.nodes.len() as u64;
        }
        if info.kind == RegionKind::CopyBatch {
            let copy = &mut self.copies[lane];
            copy.batches += 1;
            copy.bytes = copy.bytes.saturating_add(info.copy_bytes);
            copy.busy_ns = copy.busy_ns.saturating_add(timed.ns);
            copy.device += u64::from(timed.device);
        }
    }

    /// An operation's timing with its run's outcome: counted when the run succeeded, else
    /// counted apart.
    fn commit_op(&mut self, region: RegionRef, node: NodeIndex, timed: Timed, outcome: Outcome) {
        let op = self.ops.entry((region, node)).or_default();
        if outcome != Outcome::Ok {
            op.failed += 1;
            self.op_times.failed += 1;
            return;
        }
        op.sketch.add(timed.ns);
        op.device += u64::from(timed.device);
        self.op_times.device += u64::from(timed.device);
    }

    /// Settles every timing still waiting for its completion: the pass is over, so none
    /// will come (a cut or lossy trace), and it counts as succeeded.
    fn settle(&mut self, index: &Index) {
        for key in std::mem::take(&mut self.pending_order) {
            if let Some(pending) = self.pending.remove(&key) {
                self.settle_run(index, key, pending, Outcome::Ok);
            }
        }
        self.settled.clear();
        self.settled_order.clear();
    }

    /// The durations of each region's runs that succeeded, by [`crate::RegionRef`] (regions
    /// past the end have none), once the pass is over (timings still waiting for their
    /// completion are settled as succeeded).
    pub fn region_durations(&mut self, index: &Index) -> &[Sketch] {
        self.settle(index);
        &self.durations
    }

    /// The timings of each timed operation, by its region (model-wide) and node, once the
    /// pass is over (settled as [`StatsVisitor::region_durations`]).
    pub fn op_durations(&mut self, index: &Index) -> &IdMap<(RegionRef, NodeIndex), Timings> {
        self.settle(index);
        &self.ops
    }

    /// The statistics, given the pass's summary (labels, submissions, unplaced timings).
    pub fn finish(mut self, summary: &ScanSummary) -> Stats {
        self.settle(&summary.index);
        self.stats(&self.busy, summary)
    }

    /// A copy of the gatherer for statistics while the pass goes on (a followed trace's
    /// publish): all of it but the lanes' busy intervals (up to [`OPEN_INTERVALS`] a lane),
    /// which [`StatsVisitor::finish_beside`] reads from the original, since finishing only
    /// reads them. The copy must see no further span.
    pub fn copy_without_busy(&self) -> StatsVisitor {
        StatsVisitor {
            durations: self.durations.clone(),
            device: self.device.clone(),
            failed: self.failed.clone(),
            ops: self.ops.clone(),
            op_times: self.op_times,
            op_time_sources: self.op_time_sources.clone(),
            pending: self.pending.clone(),
            // Settled from `pending` by `finish_beside`, whose order is unknown.
            pending_order: VecDeque::new(),
            settled: IdMap::default(),
            settled_order: VecDeque::new(),
            busy: Vec::new(),
            copies: self.copies.clone(),
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            submissions: self.submissions,
            failures: self.failures,
            annotations: self.annotations.clone(),
            ranges: self.ranges.clone(),
        }
    }

    /// [`StatsVisitor::finish`] of a copy made by [`StatsVisitor::copy_without_busy`],
    /// with the busy intervals of `original`, the gatherer it copied.
    pub fn finish_beside(mut self, original: &StatsVisitor, summary: &ScanSummary) -> Stats {
        debug_assert!(self.busy.is_empty(), "the copy saw a span");
        // Settled in the map's order, not the original's queue (which also holds the keys
        // of timings settled since, up to twice `PENDING_LIMIT`): a sketch holds a
        // multiset, so the order of its values changes nothing it answers.
        for (key, pending) in std::mem::take(&mut self.pending) {
            self.settle_run(&summary.index, key, pending, Outcome::Ok);
        }
        self.stats(&original.busy, summary)
    }

    /// The statistics of a settled gatherer with the lanes' busy intervals `busy`.
    fn stats(&self, busy: &[Busy], summary: &ScanSummary) -> Stats {
        let index = &summary.index;
        let mut stats = Stats {
            span_ns: self
                .first_ns
                .map_or(0, |first| self.last_ns.saturating_sub(first)),
            submissions: self.submissions,
            failures: self.failures,
            unplaced_timings: summary.unplaced_timings,
            op_times: OperationTimes {
                unplaced: summary.unplaced_op_timings,
                ..self.op_times
            },
            op_time_sources: self.op_time_sources.clone(),
            ..Stats::default()
        };
        let s = &mut stats.submissions;
        s.accepted = summary.submissions;
        s.unknown = s.accepted.saturating_sub(s.ok + s.failed + s.cancelled);
        for (i, busy) in busy.iter().enumerate() {
            let lane = LaneRef(i as u32);
            let info = index.lane(lane);
            stats.late_spans += busy.late;
            stats.late_ns = stats.late_ns.saturating_add(busy.late_ns);
            if busy.spans > 0 {
                let busy_ns = busy.busy_ns();
                let utilisation = if stats.span_ns > 0 {
                    busy_ns as f64 / stats.span_ns as f64
                } else {
                    0.0
                };
                stats.lanes.push(LaneStats {
                    lane,
                    runtime: info.runtime,
                    queue: info.queue,
                    spans: busy.spans,
                    busy_ns,
                    utilisation,
                });
            }
            let copy = &self.copies[i];
            if is_gpu_queue(info.queue) && copy.batches > 0 {
                let bytes_per_s = if copy.busy_ns > 0 {
                    copy.bytes as f64 * 1e9 / copy.busy_ns as f64
                } else {
                    0.0
                };
                stats.copies.push(CopyStats {
                    lane,
                    runtime: info.runtime,
                    queue: info.queue,
                    batches: copy.batches,
                    bytes: copy.bytes,
                    busy_ns: copy.busy_ns,
                    bytes_per_s,
                    device: copy.device,
                });
            }
        }
        // Per label, its kernels' durations, its copies' and its host callbacks' (a kernel
        // named `upload` or `host` stays a kernel).
        let mut by_label: Vec<[Timings; 3]> = vec![Default::default(); index.labels().len()];
        let regions = self.durations.len().max(self.failed.len());
        for r in 0..regions {
            let region = RegionRef(r as u32);
            if let Some(label) = index.label(region) {
                let group = if index.is_copy(region) {
                    1
                } else if index.region(region).kind == RegionKind::Host {
                    2
                } else {
                    0
                };
                let t = &mut by_label[label.0 as usize][group];
                if let Some(durations) = self.durations.get(r) {
                    t.sketch.merge(durations);
                }
                t.device += self.device.get(r).copied().unwrap_or(0);
                t.failed += self.failed.get(r).copied().unwrap_or(0);
            }
        }
        for (label, groups) in by_label.into_iter().enumerate() {
            let [kernels, copies, hosts] = groups;
            for (t, list) in [
                (kernels, &mut stats.kernels),
                (copies, &mut stats.copy_labels),
                (hosts, &mut stats.host_callbacks),
            ] {
                if t.sketch.count() == 0 && t.failed == 0 {
                    continue;
                }
                let name = index.labels()[label].clone();
                list.push(row(LabelRef(label as u32), name, t));
            }
        }
        // Per operation name: a kernel's entry, or the operation's kind.
        let mut by_name: BTreeMap<(&'static str, String), Timings> = BTreeMap::new();
        for (&(region, node), t) in &self.ops {
            if index.region(region).kind == RegionKind::NativeGraph {
                stats.op_times.native_graph_timed += t.sketch.count();
            }
            let sum = by_name
                .entry(operation_row(index, region, node))
                .or_default();
            sum.sketch.merge(&t.sketch);
            sum.device += t.device;
            sum.failed += t.failed;
        }
        stats.operations = by_name
            .into_iter()
            .map(|((kind, name), t)| OperationStats {
                kind: kind.to_owned(),
                stats: row(NO_LABEL, name, t),
            })
            .collect();
        stats.operations.sort_by(|a, b| {
            b.stats
                .total_ns
                .cmp(&a.stats.total_ns)
                .then_with(|| a.stats.name.cmp(&b.stats.name))
        });
        for list in [
            &mut stats.kernels,
            &mut stats.copy_labels,
            &mut stats.host_callbacks,
        ] {
            list.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then_with(|| a.name.cmp(&b.name))
            });
        }
        self.annotations.finish(index, &mut stats);
        stats.ranges = self.ranges.values().cloned().collect();
        stats
    }
}

/// An operation's kind as [`Stats::operations`] groups it: `kernel` (a GPU kernel or an
/// NPU run), `fill`, `copy`, `scoped`, `host`.
pub fn operation_kind(op: &OpKind) -> &'static str {
    match op {
        OpKind::Kernel { .. } | OpKind::Npu { .. } => "kernel",
        OpKind::Fill { .. } => "fill",
        OpKind::Copy => "copy",
        OpKind::Scoped => "scoped",
        OpKind::Host => "host",
    }
}

/// The kind and name an operation (`node` of `region`'s graph) is counted under in
/// [`Stats::operations`], and the Parquet export's `op_timings` names it by: its kind
/// ([`operation_kind`]) and a kernel's entry, or `fill`, ...; a copy by its lane
/// ([`crate::index::copy_name`]: one lane's transfers, one row); `unknown` / `op N` where the trace lacks
/// the operation.
pub fn operation_row(index: &Index, region: RegionRef, node: NodeIndex) -> (&'static str, String) {
    let p = &index.prepared()[index.region(region).prepared.0 as usize];
    match index.op(p.runtime, p.graph, node) {
        Some(op) => (
            operation_kind(op),
            index.listed_op_name(p.runtime, op, index.region(region).queue),
        ),
        None => ("unknown", format!("op {node}")),
    }
}

/// A row of durations.
fn row(label: LabelRef, name: String, t: Timings) -> KernelStats {
    let Timings {
        sketch: mut d,
        device,
        failed,
    } = t;
    KernelStats {
        label,
        name,
        count: d.count(),
        total_ns: d.total(),
        mean_ns: d.total().checked_div(d.count()).unwrap_or(0),
        p50_ns: d.percentile(50.0),
        p99_ns: d.percentile(99.0),
        min_ns: d.min(),
        max_ns: d.max(),
        exact: d.is_exact(),
        failed,
        device,
        p50_interval_ns: d.median_interval(),
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted values; 0 when empty (p50 of
/// `[1, 2, 3, 4]` is 2).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Which clock `stats`' durations are on, in its words: how many of the operation, region
/// and copy batch times (`(device spans, all)` each) are device spans, where any is; `None`
/// with no durations at all. The one wording of `stats` and `view`'s statistics.
pub fn clock_note(
    operations: (u64, u64),
    regions: (u64, u64),
    copy_batches: (u64, u64),
) -> Option<String> {
    let timed = [
        (operations, "operation"),
        (regions, "region"),
        (copy_batches, "copy batch"),
    ];
    let counts: Vec<String> = timed
        .iter()
        .filter(|((_, n), _)| *n > 0)
        .map(|((d, n), what)| format!("{d} of {n} {what} times"))
        .collect();
    if timed.iter().any(|((d, _), _)| *d > 0) {
        Some(format!(
            "device spans where recorded ({}), host spans otherwise",
            counts.join(", ")
        ))
    } else if !counts.is_empty() {
        Some("host spans (no device times recorded)".to_owned())
    } else {
        None
    }
}

/// Statistics of records held in memory (tests, in-memory traces).
pub fn stats_of<'a>(records: impl IntoIterator<Item = &'a Record>) -> (Stats, ScanSummary) {
    let mut visitor = StatsVisitor::new();
    let summary = crate::scan::scan_records(records, &mut visitor);
    (visitor.finish(&summary), summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace without regions (one cut before its first submission) lacks no operation
    /// times: no note; one whose regions have none says so.
    #[test]
    fn only_a_trace_with_regions_lacks_operation_times() {
        let (stats, _) = stats_of(&[]);
        assert_eq!(stats.operation_times_note(), None);
        let mut with_region = stats.clone();
        with_region
            .kernels
            .push(row(NO_LABEL, "blur".into(), Timings::default()));
        assert!(
            (with_region.operation_times_note())
                .is_some_and(|n| n.starts_with("per-operation times: none recorded"))
        );
        with_region.op_times.recorded = 1;
        assert_eq!(with_region.operation_times_note(), None);
    }

    /// `n` waits of 10 ns on the recorder by thread 0, one every 100 ns from 1 µs.
    fn waits_every_100ns(n: u64) -> Vec<Record> {
        (0..n)
            .map(|i| {
                Record::RecorderWait(hrx_capture::schema::RecorderWait {
                    thread: 0,
                    thread_name: String::new(),
                    start_ns: 1_000 + i * 100,
                    end_ns: 1_000 + i * 100 + 10,
                    runtime: None,
                    submission: None,
                    region: None,
                })
            })
            .collect()
    }

    /// A thread's waits on the recorder and at capture fences inside its own ranges are left
    /// out of their durations, and counted: capture never appears inside a measured time (a
    /// fresh user's pass: a 6 ms range held 5 ms of waits on the recorder). Another thread's
    /// waits, and the thread's own before the range, are not.
    /// More waits on one thread than are kept one by one: a range around all of them (a
    /// whole `main`) still leaves every one out (a break-it pass: only the newest 4,096 were).
    #[test]
    fn a_range_around_more_waits_than_are_kept_leaves_them_all_out() {
        use hrx_capture::schema::AnnotationRange;
        let n = CAPTURE_WAITS_KEPT as u64 + 1_000;
        let mut records = waits_every_100ns(n);
        records.push(Record::AnnotationRange(AnnotationRange {
            thread: 0,
            name: AnnotationId(0),
            start_ns: 0,
            end_ns: 1_000 + n * 100,
        }));
        let (stats, _) = stats_of(&records);
        let a = &stats.annotations[0];
        assert_eq!(a.capture_wait_ns, n * 10);
        assert_eq!(a.total_ns, 1_000 + n * 100 - n * 10);
    }

    /// A range that began among the waits let go of (past [`CAPTURE_WAITS_KEPT`] on its
    /// thread) keeps those of them inside it in its time: it is counted, to be said (it was
    /// left them in silence); a range around all of them, or after them, is not.
    #[test]
    fn a_range_that_began_among_the_waits_let_go_of_is_counted() {
        use hrx_capture::schema::AnnotationRange;
        let n = CAPTURE_WAITS_KEPT as u64 + 1_000;
        let mut records = waits_every_100ns(n);
        let range = |name, start_ns, end_ns| {
            Record::AnnotationRange(AnnotationRange {
                thread: 0,
                name: AnnotationId(name),
                start_ns,
                end_ns,
            })
        };
        let end = 1_000 + n * 100;
        // Began among the first 1,000 waits, which were let go of.
        records.push(range(0, 1_000 + 500 * 100, end));
        // Around all of them, and past them all (a range among the kept ones).
        records.push(range(1, 0, end));
        records.push(range(2, end - 50 * 100, end));
        let (stats, _) = stats_of(&records);
        let by = |name: &str| {
            stats
                .annotations
                .iter()
                .find(|a| a.name == name)
                .unwrap_or_else(|| panic!("{name} in {:?}", stats.annotations))
        };
        let [among, around, after] = [0, 1, 2].map(|i| by(&format!("annotation {i}")));
        assert_eq!(among.capture_wait_untold_ranges, 1);
        assert_eq!(around.capture_wait_untold_ranges, 0);
        assert_eq!(after.capture_wait_untold_ranges, 0);
        assert_eq!(after.capture_wait_ns, 50 * 10);
    }

    #[test]
    fn capture_waits_inside_a_range_are_left_out_of_its_duration() {
        use hrx_capture::schema::{AnnotationName, HostSpan};
        let wait = crate::synthetic::recorder_wait;
        let range = |start_ns, end_ns| {
            crate::synthetic::range_on_first_thread(AnnotationId(0), start_ns, end_ns)
        };
        let records = [
            Record::AnnotationName(AnnotationName {
                name: AnnotationId(0),
                text: "fill staging".into(),
            }),
            wait(0, 0, 500),
            // Inside the first range: a recorder wait, a capture fence, another thread's wait.
            wait(0, 1_000, 1_400),
            Record::HostSpan(HostSpan {
                thread: 0,
                kind: HostSpanKind::CaptureFence,
                runtime: hrx_capture::schema::RuntimeId(0),
                submission: hrx_capture::schema::SubmissionIndex(1),
                region: None,
                start_ns: 1_500,
                end_ns: 1_600,
            }),
            wait(1, 1_000, 1_900),
            range(800, 2_000),
            // Straddling the second range's start: only its part inside counts.
            wait(0, 2_900, 3_100),
            range(3_000, 4_000),
            range(5_000, 6_000),
        ];
        let (stats, _) = stats_of(&records);
        let [a] = &stats.annotations[..] else {
            panic!("{:?}", stats.annotations)
        };
        assert_eq!(a.name, "fill staging");
        assert_eq!((a.count, a.total_ns), (3, 700 + 900 + 1_000));
        assert_eq!((a.min_ns, a.max_ns), (700, 1_000));
        assert_eq!((a.capture_wait_ns, a.capture_wait_ranges), (600, 2));
    }

    #[test]
    fn annotations_markers_counters_and_host_threads_are_summed_by_name_and_thread() {
        let mut records = crate::synthetic::annotations(8, 10_000_000, 1_000_000);
        // The decoder waited twice at the capture fence before a region it ran (format 1.15).
        for (submission, start_ns) in [(2, 13_000_000), (5, 16_000_000)] {
            records.push(Record::HostSpan(hrx_capture::schema::HostSpan {
                thread: 1,
                kind: HostSpanKind::CaptureFence,
                runtime: hrx_capture::schema::RuntimeId(0),
                submission: hrx_capture::schema::SubmissionIndex(submission),
                region: Some(hrx_capture::schema::RegionIndex(1)),
                start_ns,
                end_ns: start_ns + 30_000,
            }));
        }
        let (stats, _) = stats_of(&records);
        // Six ranges of 1 ms, two of 2 ms.
        assert_eq!(
            stats.annotations,
            [AnnotationStats {
                name: "decode".into(),
                count: 8,
                total_ns: 10_000_000,
                mean_ns: 1_250_000,
                p50_ns: 1_000_000,
                p99_ns: 2_000_000,
                min_ns: 1_000_000,
                max_ns: 2_000_000,
                exact: true,
                p50_interval_ns: Some((1_000_000, 2_000_000)),
                capture_wait_ns: 0,
                capture_wait_ranges: 0,
                capture_wait_untold_ranges: 0,
            }]
        );
        assert_eq!(
            stats.markers,
            [MarkerStats {
                name: "frame ready".into(),
                count: 8
            }]
        );
        assert_eq!(
            stats.counters,
            [CounterStats {
                name: "in flight".into(),
                samples: 16,
                min: 0.0,
                max: 1.0,
                last: 0.0,
            }]
        );
        let main = ThreadStats {
            thread: 0,
            name: "main".into(),
            submits: 8,
            submit_ns: 80_000,
            waits: 8,
            wait_ns: 800_000,
            ..ThreadStats::default()
        };
        let decoder = ThreadStats {
            thread: 1,
            name: "decoder".into(),
            ranges: 8,
            capture_fences: 2,
            capture_fence_ns: 60_000,
            ..ThreadStats::default()
        };
        assert_eq!(stats.threads, [main, decoder]);
    }

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[7], 99.0), 7);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 99.0), 99);
        assert_eq!(percentile(&hundred, 100.0), 100);
        assert_eq!(percentile(&hundred, 0.0), 1);
    }

    /// The records of a synthetic pipeline of `submissions` recorded by `threads` threads
    /// (submission `i` by thread `i % threads`), each thread's records in file blocks of
    /// `block` submissions, the blocks of the threads interleaved, and thread 0's written
    /// last of all (its ring went out after everyone else's): a lane's spans arrive far out
    /// of start order, as a loaded multi-threaded recording writes them.
    fn interleaved(submissions: u64, threads: u64, block: usize) -> Vec<Record> {
        let spec = crate::synthetic::PipelineSpec::ops(submissions * 4);
        let mut setup = Vec::new();
        let mut groups: Vec<Vec<Record>> = Vec::new();
        let mut end = Vec::new();
        for record in crate::synthetic::pipeline(spec) {
            match record {
                Record::Submit(_) => groups.push(vec![record]),
                Record::SessionEnd(_) => end.push(record),
                _ => match groups.last_mut() {
                    Some(group) => group.push(record),
                    None => setup.push(record),
                },
            }
        }
        let mut per_thread: Vec<Vec<Vec<Record>>> = vec![Vec::new(); threads as usize];
        for (i, group) in groups.into_iter().enumerate() {
            per_thread[i % threads as usize].push(group);
        }
        let blocks: Vec<Vec<Vec<Record>>> = per_thread
            .into_iter()
            .map(|groups| groups.chunks(block).map(|c| c.concat()).collect())
            .collect();
        let mut out = setup;
        let rounds = blocks.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..rounds {
            for thread in blocks.iter().skip(1) {
                out.extend(thread.get(round).into_iter().flatten().cloned());
            }
        }
        out.extend(blocks[0].iter().flatten().cloned());
        out.extend(end);
        out
    }

    /// Per queue, the exact union of the spans' intervals in ns (sorted and merged).
    fn exact_busy(records: &[Record]) -> BTreeMap<u32, u64> {
        let mut spans: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for r in records {
            if let Record::RegionTiming(t) = r {
                spans
                    .entry(t.region.0)
                    .or_default()
                    .push((t.start_ns, t.end_ns));
            }
        }
        spans
            .into_iter()
            .map(|(region, mut list)| {
                list.sort_unstable();
                let (mut busy, mut reach) = (0, 0);
                for (s, e) in list {
                    let s = s.max(reach);
                    if e > s {
                        busy += e - s;
                        reach = e;
                    }
                }
                (region, busy)
            })
            .collect()
    }

    /// A lane's busy time is the exact union of its spans when several recording threads'
    /// blocks interleave and one thread's arrive thousands of spans late (it was the sum of
    /// only the spans that came in start order: the late blocks were clipped away, a
    /// quarter of each queue's busy time lost here), and no span is counted late.
    #[test]
    fn busy_time_is_exact_when_recording_threads_interleave() {
        let records = interleaved(12_000, 4, 64);
        let (stats, summary) = stats_of(&records);
        assert_eq!(summary.unplaced_timings, 0);
        let exact = exact_busy(&records);
        // Region r of the pipeline runs on its own lane (see the synthetic module docs).
        let queues = [
            Queue::GpuUpload,
            Queue::GpuCompute,
            Queue::GpuDownload,
            Queue::Host,
        ];
        for (region, busy) in exact {
            let lane = stats
                .lanes
                .iter()
                .find(|l| l.queue == queues[region as usize])
                .expect("a lane per region");
            assert_eq!(lane.spans, 12_000, "{lane:?}");
            assert_eq!(lane.busy_ns, busy, "{lane:?}");
        }
        assert_eq!((stats.late_spans, stats.late_ns), (0, 0));
    }

    /// Past the reorder window, a late span is counted in full, never clipped: on a queue
    /// whose spans never overlap the busy time stays exact, and where they overlap it is
    /// never below the union and above it by at most the late time the stats report.
    #[test]
    fn late_spans_past_the_window_are_counted_in_full_and_said() {
        // Serial spans of 10 ns every 15 ns, written by 3 threads, thread 0's block last.
        let serial: Vec<(u64, u64)> = (0..300).map(|i| (i * 15, i * 15 + 10)).collect();
        let order: Vec<(u64, u64)> = (1..3)
            .chain([0])
            .flat_map(|t| serial.iter().copied().skip(t).step_by(3))
            .collect();
        let mut busy = Busy::with_window(16);
        for &(s, e) in &order {
            busy.add(s, e);
        }
        assert!(busy.late > 0, "the window must be overrun");
        assert_eq!(busy.busy_ns(), 300 * 10);
        assert_eq!(busy.spans, 300);
        // The same spans 20 ns long: each overlaps the next by 5 ns.
        let overlapping: Vec<(u64, u64)> = order.iter().map(|&(s, _)| (s, s + 20)).collect();
        let union = 299 * 15 + 20;
        let mut busy = Busy::with_window(16);
        for &(s, e) in &overlapping {
            busy.add(s, e);
        }
        assert!(busy.late > 0);
        assert!(
            busy.busy_ns() >= union && busy.busy_ns() <= union + busy.late_ns,
            "busy {} union {union} late {}",
            busy.busy_ns(),
            busy.late_ns
        );
        // In start order nothing is late and the union is exact, window or not.
        let mut busy = Busy::with_window(16);
        let mut sorted = overlapping.clone();
        sorted.sort_unstable();
        for &(s, e) in &sorted {
            busy.add(s, e);
        }
        assert_eq!((busy.busy_ns(), busy.late, busy.late_ns), (union, 0, 0));
    }

    /// A failed run is no duration of its kernel: the compute region that fails after 7 µs
    /// is left out of count, mean, min and percentiles and counted in `failed` (it was the
    /// minimum of its kernel, one of six runs), whether its completion is read after its
    /// timing or before it.
    #[test]
    fn failed_runs_are_counted_apart_from_kernel_durations() {
        let spec = crate::synthetic::PipelineSpec {
            fail_at: Some(5),
            ..crate::synthetic::PipelineSpec::ops(40)
        };
        let records: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        // The same, the failed region's completion read before its timing.
        let mut early = records.clone();
        let timing = early
            .iter()
            .position(
                |r| matches!(r, Record::RegionTiming(t) if t.submission.0 == 5 && t.region.0 == 1),
            )
            .unwrap();
        let done = early
            .iter()
            .position(
                |r| matches!(r, Record::RegionDone(d) if d.submission.0 == 5 && d.region.0 == 1),
            )
            .unwrap();
        early.swap(timing, done);
        for records in [records, early] {
            let (stats, _) = stats_of(&records);
            let compute = stats
                .kernels
                .iter()
                .find(|k| k.name.starts_with("blur"))
                .expect("the compute kernel");
            assert_eq!((compute.count, compute.failed), (5, 1), "{compute:?}");
            assert!(compute.min_ns >= 40_000, "{compute:?}");
            let lanes: u64 = stats.lanes.iter().map(|l| l.spans).sum();
            let counted: u64 = [&stats.kernels, &stats.copy_labels, &stats.host_callbacks]
                .iter()
                .flat_map(|list| list.iter())
                .map(|k| k.count + k.failed)
                .sum();
            assert_eq!(counted, lanes, "every span once: succeeded or failed");
            assert_eq!(stats.kernels.iter().filter(|k| k.failed > 0).count(), 1);
        }
    }

    /// Upload and download copy batches are copies, not kernels: their durations are in
    /// `copy_labels`, their bytes in `copies`, and every timed span is in exactly one of
    /// `kernels` and `copy_labels` (they were listed as kernels too).
    #[test]
    fn copies_are_no_kernels() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let records: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        let (stats, _) = stats_of(&records);
        let copy_names = ["upload", "download", "copy"];
        let names =
            |list: &[KernelStats]| -> Vec<String> { list.iter().map(|k| k.name.clone()).collect() };
        assert!(
            stats
                .kernels
                .iter()
                .all(|k| !copy_names.contains(&k.name.as_str())),
            "{:?}",
            names(&stats.kernels)
        );
        assert!(!stats.kernels.is_empty());
        let mut copies = names(&stats.copy_labels);
        copies.sort();
        assert_eq!(copies, ["download", "upload"]);
        let copy_spans: u64 = stats.copy_labels.iter().map(|k| k.count).sum();
        let batches: u64 = stats.copies.iter().map(|c| c.batches).sum();
        assert_eq!(copy_spans, batches);
        let kernel_spans: u64 = stats.kernels.iter().map(|k| k.count).sum();
        let lane_spans: u64 = stats.lanes.iter().map(|l| l.spans).sum();
        let host_spans: u64 = stats.host_callbacks.iter().map(|k| k.count).sum();
        assert_eq!(kernel_spans + copy_spans + host_spans, lane_spans);
    }

    /// Host callbacks (regions of kind `Host`) are no kernels: their durations are in
    /// `host_callbacks`, one row per label, and every timed span is in exactly one of
    /// `kernels`, `copy_labels` and `host_callbacks` (they were listed as kernels too).
    #[test]
    fn host_callbacks_are_no_kernels() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let submissions = spec.submissions;
        let records: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        let (stats, _) = stats_of(&records);
        assert!(
            stats.kernels.iter().all(|k| k.name != "host"),
            "{:?}",
            stats.kernels
        );
        assert!(!stats.kernels.is_empty());
        let hosts: Vec<(&str, u64)> = stats
            .host_callbacks
            .iter()
            .map(|k| (k.name.as_str(), k.count))
            .collect();
        assert_eq!(hosts, [("host", submissions)]);
        let host_lane = stats
            .lanes
            .iter()
            .find(|l| l.queue == Queue::Host)
            .expect("a host lane");
        assert_eq!(host_lane.spans, submissions);
        let spans = |list: &[KernelStats]| list.iter().map(|k| k.count).sum::<u64>();
        let lane_spans: u64 = stats.lanes.iter().map(|l| l.spans).sum();
        assert_eq!(
            spans(&stats.kernels) + spans(&stats.copy_labels) + spans(&stats.host_callbacks),
            lane_spans
        );
    }

    /// The operation timings of every compute region, by (submission, node): device span
    /// where recorded (else host) and whether it was one.
    fn op_durations(records: &[Record]) -> Vec<(u64, u32, u64, bool)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::OpTiming(o) => {
                    let t = &o.timing;
                    let (ns, device) = match t.device {
                        Some(d) => (d.end_ns - d.start_ns, true),
                        None => (t.end_ns - t.start_ns, false),
                    };
                    Some((t.submission.0, o.node.0, ns, device))
                }
                _ => None,
            })
            .collect()
    }

    fn operation<'a>(stats: &'a Stats, name: &str) -> &'a OperationStats {
        stats
            .operations
            .iter()
            .find(|o| o.stats.name == name)
            .unwrap_or_else(|| panic!("no operation {name}: {:?}", stats.operations))
    }

    /// A native graph of two kernels is two rows of its kernels' names from their own
    /// timings (it was one `blur +1` row of region times), each on the device clock, with
    /// the region label row kept apart in `kernels`.
    #[test]
    fn operations_are_counted_per_kernel_name_from_their_own_timings() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let records: Vec<Record> =
            crate::synthetic::with_op_timings(crate::synthetic::pipeline(spec)).collect();
        let (stats, _) = stats_of(&records);
        let ops = op_durations(&records);
        for (node, name) in [(1, "blur"), (2, "sobel")] {
            let mine: Vec<u64> = ops.iter().filter(|o| o.1 == node).map(|o| o.2).collect();
            let o = operation(&stats, name);
            assert_eq!(o.kind, "kernel");
            assert_eq!(o.stats.count, mine.len() as u64);
            assert_eq!(o.stats.total_ns, mine.iter().sum::<u64>());
            assert_eq!(o.stats.max_ns, *mine.iter().max().unwrap());
            assert_eq!((o.stats.device, o.stats.failed), (o.stats.count, 0));
            assert_eq!(o.stats.label, NO_LABEL);
        }
        assert_eq!(stats.operations.len(), 2, "{:?}", stats.operations);
        let t = stats.op_times;
        assert_eq!((t.recorded, t.failed, t.device), (20, 0, 20));
        assert_eq!(t.native_graph_runs, 10);
        assert!(stats.kernels.iter().any(|k| k.name == "blur +1"));
    }

    /// Where the trace times some operations of a native graph and not others (on CUDA, the
    /// built-in kernels time themselves, a fill does not), the others are counted as having
    /// no time; a trace that times all of them, or none, counts none.
    #[test]
    fn operations_of_native_graph_runs_without_a_time_are_counted() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let all: Vec<Record> =
            crate::synthetic::with_op_timings(crate::synthetic::pipeline(spec.clone())).collect();
        let (stats, _) = stats_of(&all);
        let t = stats.op_times;
        assert_eq!((t.native_graph_runs, t.native_graph_ops), (10, 20));
        assert_eq!((t.native_graph_timed, t.untimed_native_ops()), (20, 0));
        let some: Vec<Record> = all
            .iter()
            .filter(|r| !matches!(r, Record::OpTiming(o) if o.node.0 == 2))
            .cloned()
            .collect();
        let (stats, _) = stats_of(&some);
        assert_eq!(stats.op_times.untimed_native_ops(), 10);
        let none: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        let (stats, _) = stats_of(&none);
        assert_eq!(stats.op_times.untimed_native_ops(), 0);
    }

    /// Operation timings recorded after their region's success (as the software device
    /// records them) are settled at once, not left waiting for the window to evict them: the
    /// window and its order stay as small as the runs in flight (found by a break-it pass:
    /// `stats` of 300,000 traced submissions took 604 s, the order's pruning running on
    /// every new run), and the figures are those of timings read before the success.
    #[test]
    fn operation_timings_after_their_regions_success_wait_for_nothing() {
        let spec = crate::synthetic::PipelineSpec::ops(4 * 3000);
        let before: Vec<Record> =
            crate::synthetic::with_op_timings(crate::synthetic::pipeline(spec)).collect();
        // Each compute region's operation timings moved after its `RegionDone`.
        let mut after = Vec::with_capacity(before.len());
        let mut held = Vec::new();
        for r in &before {
            match r {
                Record::OpTiming(_) => held.push(r.clone()),
                Record::RegionDone(d) if d.region.0 == 1 => {
                    after.push(r.clone());
                    after.append(&mut held);
                }
                _ => after.push(r.clone()),
            }
        }
        let mut visitor = StatsVisitor::new();
        let summary = crate::scan::scan_records(&after, &mut visitor);
        assert!(
            visitor.pending.is_empty(),
            "{} runs wait",
            visitor.pending.len()
        );
        assert!(visitor.pending_order.len() <= 2 * PENDING_LIMIT);
        let late = visitor.finish(&summary);
        let (early, _) = stats_of(&before);
        assert_eq!(late.operations, early.operations);
        assert_eq!(late.op_times.recorded, 2 * 3000);
    }

    /// Without operation timings the trace says so: none recorded beside timed native
    /// graphs, and no operation rows.
    #[test]
    fn a_trace_without_operation_timings_has_none_and_says_how_many_graphs_ran() {
        let records: Vec<Record> =
            crate::synthetic::pipeline(crate::synthetic::PipelineSpec::ops(40)).collect();
        let (stats, _) = stats_of(&records);
        assert!(stats.operations.is_empty());
        assert_eq!(stats.op_times.recorded, 0);
        assert_eq!(stats.op_times.native_graph_runs, 10);
    }

    /// The operation timings of a failed run are left out of their kernels' durations and
    /// counted apart, whether its completion is read before or after them.
    #[test]
    fn operation_timings_of_a_failed_run_are_counted_apart() {
        let spec = crate::synthetic::PipelineSpec {
            fail_at: Some(5),
            ..crate::synthetic::PipelineSpec::ops(40)
        };
        let records: Vec<Record> =
            crate::synthetic::with_op_timings(crate::synthetic::pipeline(spec)).collect();
        // The failed region's completion read before its operation timings.
        let mut early = records.clone();
        let done = early
            .iter()
            .position(
                |r| matches!(r, Record::RegionDone(d) if d.submission.0 == 5 && d.region.0 == 1),
            )
            .unwrap();
        let done = early.remove(done);
        let first_op = early
            .iter()
            .position(|r| matches!(r, Record::OpTiming(o) if o.timing.submission.0 == 5))
            .unwrap();
        early.insert(first_op, done);
        for records in [records, early] {
            let (stats, _) = stats_of(&records);
            let failed: Vec<u64> = op_durations(&records)
                .iter()
                .filter(|o| o.0 == 5)
                .map(|o| o.2)
                .collect();
            assert_eq!(failed.len(), 2);
            for name in ["blur", "sobel"] {
                let o = &operation(&stats, name).stats;
                assert_eq!((o.count, o.failed), (5, 1), "{o:?}");
            }
            let all: u64 = op_durations(&records).iter().map(|o| o.2).sum();
            let counted: u64 = stats.operations.iter().map(|o| o.stats.total_ns).sum();
            assert_eq!(counted, all - failed.iter().sum::<u64>());
            assert_eq!((stats.op_times.recorded, stats.op_times.failed), (12, 2));
        }
    }

    /// Region durations, their rows and the copy bandwidth are device spans where the
    /// backend recorded them, host spans otherwise (the host callback here).
    #[test]
    fn device_time_is_preferred_where_recorded() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let records: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        let host_only: Vec<Record> = records
            .iter()
            .cloned()
            .map(|r| match r {
                Record::RegionTiming(mut t) => {
                    t.device = None;
                    Record::RegionTiming(t)
                }
                r => r,
            })
            .collect();
        let sum = |region: u32, device: bool| -> u64 {
            records
                .iter()
                .filter_map(|r| match r {
                    Record::RegionTiming(t) if t.region.0 == region => Some(match t.device {
                        Some(d) if device => d.end_ns - d.start_ns,
                        _ => t.end_ns - t.start_ns,
                    }),
                    _ => None,
                })
                .sum()
        };
        let (stats, _) = stats_of(&records);
        let (host, _) = stats_of(&host_only);
        let compute = |s: &Stats| s.kernels.iter().find(|k| k.name == "blur +1").cloned();
        let (d, h) = (compute(&stats).unwrap(), compute(&host).unwrap());
        assert_eq!((d.total_ns, d.device), (sum(1, true), d.count));
        assert_eq!((h.total_ns, h.device), (sum(1, false), 0));
        assert!(d.total_ns < h.total_ns);
        let upload = |s: &Stats| {
            s.copies
                .iter()
                .find(|c| c.queue == Queue::GpuUpload)
                .cloned()
                .unwrap()
        };
        let (du, hu) = (upload(&stats), upload(&host));
        assert_eq!((du.busy_ns, du.device), (sum(0, true), du.batches));
        assert_eq!((hu.busy_ns, hu.device), (sum(0, false), 0));
        assert!(du.bytes_per_s > hu.bytes_per_s);
        let callback = &stats.host_callbacks[0];
        assert_eq!((callback.total_ns, callback.device), (sum(3, false), 0));
    }

    /// A fill or a copy inside a native graph is listed under its kind, not as a kernel
    /// named after its region.
    #[test]
    fn fills_and_copies_in_a_native_graph_are_listed_under_their_kind() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let records: Vec<Record> =
            crate::synthetic::with_op_timings(crate::synthetic::pipeline(spec))
                .map(|r| match r {
                    Record::GraphOp(mut op) if op.node.0 == 1 => {
                        op.op = OpKind::Fill { value: 0 };
                        Record::GraphOp(op)
                    }
                    Record::GraphOp(mut op) if op.node.0 == 2 => {
                        op.op = OpKind::Copy;
                        Record::GraphOp(op)
                    }
                    r => r,
                })
                .collect();
        let (stats, _) = stats_of(&records);
        let rows: Vec<(&str, &str, u64)> = stats
            .operations
            .iter()
            .map(|o| (o.kind.as_str(), o.stats.name.as_str(), o.stats.count))
            .collect();
        let mut rows = rows;
        rows.sort();
        assert_eq!(rows, [("copy", "copy", 10), ("fill", "fill", 10)]);
    }

    /// Copy operations are rows by direction (`upload`, `download`), as Nsight Systems lists
    /// memcpys: an upload's and a download's times are never pooled under one `copy`.
    #[test]
    fn copy_operations_are_listed_by_direction() {
        let spec = crate::synthetic::PipelineSpec::ops(40);
        let records: Vec<Record> = crate::synthetic::pipeline(spec)
            .flat_map(|r| {
                // The upload's copy is node 0, the download's node 3.
                let op = match &r {
                    Record::RegionTiming(t) if t.region.0 == 0 || t.region.0 == 2 => {
                        Some(Record::OpTiming(hrx_capture::schema::OpTiming {
                            timing: *t,
                            node: NodeIndex(if t.region.0 == 0 { 0 } else { 3 }),
                        }))
                    }
                    _ => None,
                };
                std::iter::once(r).chain(op)
            })
            .collect();
        let (stats, _) = stats_of(&records);
        let mut rows: Vec<(&str, &str, u64)> = stats
            .operations
            .iter()
            .map(|o| (o.kind.as_str(), o.stats.name.as_str(), o.stats.count))
            .collect();
        rows.sort();
        let timed = |region: u32| {
            records
                .iter()
                .filter(|r| matches!(r, Record::RegionTiming(t) if t.region.0 == region))
                .count() as u64
        };
        assert!(timed(0) > 0 && timed(2) > 0);
        assert_eq!(
            rows,
            [("copy", "download", timed(2)), ("copy", "upload", timed(0))]
        );
    }
}
