//! One streaming pass over a trace: every record goes into the [`Index`] and to a
//! [`Visitor`], and every region timing and submission outcome is joined once to its
//! submission, prepared graph, region, queue and lane.
//!
//! Records arrive in file order, which is only per-thread order: a region's timing may be
//! written before its submission's `Submit` (another thread's ring went out first), a
//! completion before its timing. The joiner keeps only submissions *in flight*: a submission
//! enters at its `Submit` and leaves [`RETIRE_WINDOW`] completed submissions after its
//! `SubmissionDone`, so a late timing of a finished submission still joins while memory stays
//! bounded by the window, not by the trace. Timings and outcomes that arrive before their
//! `Submit` wait in a parked list (at most [`PARK_LIMIT`] timings), and so does a `Submit`
//! read before its graph's `Prepared` (prepared on another thread; at most [`PARK_LIMIT`],
//! oldest let in first). A submit whose `Prepared` never comes (that thread's records were
//! lost) enters without its graph, at the latest in [`Joiner::finish`]: its outcome still
//! counts. A timing that never joins (its submission was never recorded, or arrived later
//! than the window allows) is counted in [`ScanSummary::unplaced_timings`], never dropped
//! silently.
//!
//! Beside timings, the pass joins what a timeline needs of each submission: the `Submit`
//! itself to its prepared graph ([`Visitor::submitted`], with the submission's *ordinal*,
//! its place among the `Submit` records read, a dense id for readers that keep
//! per-submission tables), each region's completion ([`Visitor::region_outcome`]), each
//! cross-submission wait and explicit producer (`submit_after`) to the submissions at both
//! ends ([`Visitor::link`]; an end not read yet waits, like a timing, and a wait whose end
//! never joins is counted in [`ScanSummary::unresolved_waits`]), and each region still
//! running at the end ([`ScanSummary::running`], joined at the end, so a `RegionStarted`
//! read before its `Submit` joins too). A region started and never timed is no hang when
//! its submission's outcome was read (its timing never reached the file: dropped by a lossy
//! recorder, or not written before a kill cut the recording short while the thread that
//! wrote the outcome was flushed), or when the trace says records were lost (a
//! `RecordsLost` count, or the session end's dropped records: lossy mode drops records when
//! a thread's buffer is full) and was closed cleanly: it is listed in
//! [`ScanSummary::timing_lost`] instead, for every reader to say "timing lost (records
//! dropped)" and none to draw it running to the trace's end. Records about a submission that the timeline lists
//! as events (a failed or cancelled region's completion, a quarantine, a poisoning, an
//! injected fault, where they name a submission) join to it too ([`Visitor::event`]), and
//! to their region where they name one: read before the `Submit`, they wait for it like a
//! timing; one that never joins is counted in [`ScanSummary::unjoined_events`]. Output
//! digests join to their submission the same way ([`Visitor::output`]): one read before its
//! `Submit` waits for it (at most [`PARK_LIMIT`], oldest given up first), and one whose
//! `Submit` never comes is handed over without it, counted in
//! [`ScanSummary::unjoined_outputs`].
//!
//! A wait or explicit producer whose producer lies before the trace's range (a trim, a
//! range recorded with `start()`/`stop()`, or a chunk of a streamed replay: the
//! `TraceRange` records, module `ranges` says how they are read) cannot join at both ends:
//! the trace holds no `Submit` of its producer and never will. Joined at its consumer, it is
//! handed over at once with the producer's index ([`Visitor::link_before_range`], the
//! waits counted in [`ScanSummary::waits_before_range`]), not parked and counted unresolved;
//! one parked before the `TraceRange` that leaves its producer out was read is handed over
//! when it is. Readers that draw a dependency between two submissions of the trace (the
//! timeline's hazard edges) have nothing to draw for it and take only [`Visitor::link`]: the
//! timeline no longer counts such a wait as naming an unrecorded submission, since the
//! trace left its producer out on purpose; replay takes both (`hrx-replay`: the cross waits
//! that order a chunk's submissions). A wait whose producer is simply missing (no range
//! leaves it out) stays unresolved.
//!
//! A `Submit` may name any number of explicit producers (a crafted trace, or a fan-in of
//! thousands: each costs a few bytes in the file, which compresses runs of them well). A
//! reader that keeps a row per joined link (the timeline) can ask for at most `limit` of
//! each `Submit` ([`Joiner::limit_explicit_producers`]): the joiner then joins only its
//! `limit` latest ones ([`latest_producers`]) and the reader counts the rest itself.

use crate::hash::IdMap;
use crate::index::{Index, LaneRef, PreparedRef, RegionRef};
use hrx_capture::schema::{
    CrossWait, DeviceSpan, FatalSignal, NodeIndex, OutputDigest, PreparedId, Record, RegionIndex,
    RegionTiming, RuntimeId, Status, SubmissionIndex, Submit,
};
use hrx_capture::{MappedTrace, ReadError, Recovery, TraceReader, Warning};
use ranges::Ranges;
use std::collections::VecDeque;
use std::path::Path;

/// Completed submissions kept joinable after their `SubmissionDone`.
pub const RETIRE_WINDOW: usize = 1 << 16;

/// Timings kept waiting for their `Submit`; past this, the oldest is counted unplaced.
pub const PARK_LIMIT: usize = 1 << 18;

/// Explicit producers (`submit_after`) held, all together, by the `Submit`s that wait for
/// their graph's `Prepared` (8 MiB of them). A `Submit` parked past it holds its latest that
/// still fit ([`latest_producers`]), none once it is full; the rest are never joined and
/// are counted in [`ScanSummary::producers_not_parked`]. Without it, a crafted trace whose
/// `Prepared` comes last made every verb hold 8 bytes per producer of up to [`PARK_LIMIT`]
/// parked submits, which the file stores in a few bytes that compress well in runs (2^18
/// submits naming 1000 each: 2 GiB). A real trace parks a few submits for a few
/// milliseconds. A reader that holds the records itself and needs every producer (replay)
/// holds them all ([`Joiner::park_every_producer`]).
pub const PARKED_PRODUCERS_LIMIT: usize = 1 << 20;

/// How a submission or region ended, without its message (what `diff` and `replay`
/// compare: [`crate::compare::outcomes`]); `ok`, `failed` or `cancelled` in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Completed.
    Ok,
    /// Failed.
    Failed,
    /// Cancelled (a failed producer, or a failure before it).
    Cancelled,
}

impl Outcome {
    /// The outcome of a recorded status.
    pub fn of(status: &Status) -> Outcome {
        match status {
            Status::Ok => Outcome::Ok,
            Status::Failed { .. } => Outcome::Failed,
            Status::Cancelled { .. } => Outcome::Cancelled,
        }
    }

    /// Lower-case name: `ok`, `failed`, `cancelled`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// A submission (its `Submit` record) joined to its prepared graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedSubmission {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// The runtime's index for it.
    pub submission: SubmissionIndex,
    /// Its place among the submissions of the pass in the order they were joined, 0 for
    /// the first (a `Submit` read before its graph's `Prepared` joins when that is read; a
    /// second `Submit` of the same index gets a new ordinal and replaces the first in later
    /// joins).
    pub ordinal: u64,
    /// Its prepared graph, where that was recorded.
    pub prepared: Option<PreparedRef>,
    /// Explicit producers its `Submit` named that the joiner did not hold while the `Submit`
    /// waited for its graph's `Prepared` ([`PARKED_PRODUCERS_LIMIT`], or past a reader's
    /// own [`Joiner::limit_explicit_producers`]): the `Submit` [`Visitor::submitted`] gets
    /// lacks them (its latest are kept), and none is joined. 0 for nearly every submission.
    pub producers_not_held: u32,
}

/// A region of a joined submission (a region's completion, [`Visitor::region_outcome`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedRegion {
    /// Its submission.
    pub submission: JoinedSubmission,
    /// Its prepared graph.
    pub prepared: PreparedRef,
    /// Its region, model-wide.
    pub region: RegionRef,
    /// Its region within the prepared graph.
    pub index: RegionIndex,
    /// Its lane.
    pub lane: LaneRef,
}

/// A dependency between two submissions joined at both ends, by ordinal
/// ([`JoinedSubmission::ordinal`]): a cross-submission wait (`wait`), or an explicit
/// producer named by the consumer's `Submit` (`submit_after`, `wait` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedLink {
    /// The runtime of both submissions.
    pub runtime: RuntimeId,
    /// The submission that waited.
    pub consumer: u64,
    /// The submission it waited on.
    pub producer: u64,
    /// The wait as recorded (its regions, hazard, buffer and range).
    pub wait: Option<CrossWait>,
}

/// A dependency whose producer lies before the trace's range (see the module docs), joined
/// at its consumer: a cross-submission wait (`wait`), or an explicit producer named by the
/// consumer's `Submit` (`submit_after`, `wait` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkBeforeRange {
    /// The runtime of both submissions.
    pub runtime: RuntimeId,
    /// The submission that waited, by ordinal ([`JoinedSubmission::ordinal`]).
    pub consumer: u64,
    /// The submission it waited on, which the trace does not hold.
    pub producer: SubmissionIndex,
    /// The wait as recorded (its regions, hazard, buffer and range).
    pub wait: Option<CrossWait>,
}

/// A record about a submission (a failed or cancelled region's completion, a quarantine,
/// a poisoning, an injected fault) joined to its submission and, where it names one, its
/// region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedEvent {
    /// The record's place in the pass, 0 for the first record read (the count of records
    /// read before it).
    pub record: u64,
    /// Its submission.
    pub submission: JoinedSubmission,
    /// The region it names, within its submission's prepared graph, as recorded.
    pub index: Option<RegionIndex>,
    /// That region, model-wide, where it is one of the prepared graph's.
    pub region: Option<RegionRef>,
}

/// A region timing joined to its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedSpan {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its submission.
    pub submission: SubmissionIndex,
    /// Its submission's ordinal ([`JoinedSubmission::ordinal`]).
    pub ordinal: u64,
    /// Its prepared graph.
    pub prepared: PreparedRef,
    /// Its region, model-wide.
    pub region: RegionRef,
    /// Its lane.
    pub lane: LaneRef,
    /// Host start, ns since the session start.
    pub start_ns: u64,
    /// Host end, ns since the session start.
    pub end_ns: u64,
    /// Device clock span, where the backend recorded one.
    pub device: Option<DeviceSpan>,
}

impl JoinedSpan {
    /// `end_ns - start_ns` (0 for a span recorded backwards).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Whether `record` holds a time span (host or device) that ends before it starts: no
/// recorder writes one (crafted or damaged times). Readers take such a span as 0 ns long
/// and say how many they read ([`ScanSummary::ends_before_start`]).
pub fn ends_before_start(record: &Record) -> bool {
    let backwards = |start: u64, end: u64| end < start;
    let timing = |t: &RegionTiming| {
        backwards(t.start_ns, t.end_ns) || t.device.is_some_and(|d| backwards(d.start_ns, d.end_ns))
    };
    match record {
        Record::RegionTiming(t) => timing(t),
        Record::OpTiming(o) => timing(&o.timing),
        Record::HostSpan(h) => backwards(h.start_ns, h.end_ns),
        Record::AnnotationRange(a) => backwards(a.start_ns, a.end_ns),
        Record::RecorderWait(w) => backwards(w.start_ns, w.end_ns),
        Record::CaptureFence(f) => backwards(f.start_ns, f.end_ns),
        Record::DigestSpan(d) => backwards(d.start_ns, d.end_ns),
        _ => false,
    }
}

/// What a pass hands to its consumer. Every method has an empty default.
pub trait Visitor {
    /// A record as read, after the index absorbed it.
    fn record(&mut self, _index: &Index, _record: &Record) {}
    /// A region timing joined to its region (at most once per timing record).
    fn span(&mut self, _index: &Index, _span: &JoinedSpan) {}
    /// An operation timing (`OpTiming`) joined to the region holding operation `node`
    /// (at most once per timing record).
    fn op_span(&mut self, _index: &Index, _span: &JoinedSpan, _node: NodeIndex) {}
    /// A submitted submission's outcome was recorded: `previous` is its earlier outcome
    /// when a second `SubmissionDone` replaced it.
    fn outcome(
        &mut self,
        _index: &Index,
        _submission: &JoinedSubmission,
        _previous: Option<Outcome>,
        _outcome: Outcome,
    ) {
    }
    /// A submission's `SubmissionDone` joined to it, after [`Visitor::outcome`]: `done`'s
    /// [`JoinedEvent::record`] is the record's place in the pass, for a reader that holds
    /// the records (a trace in memory) and needs what `outcome` leaves out (the status's
    /// message); its `index` and `region` are `None`.
    fn submission_done(&mut self, _index: &Index, _done: &JoinedEvent) {}
    /// A `Submit` joined to its prepared graph, before any timing or outcome of it.
    fn submitted(&mut self, _index: &Index, _submission: &JoinedSubmission, _submit: &Submit) {}
    /// A region's completion (`RegionDone`) joined to its region, at `time_ns`.
    fn region_outcome(
        &mut self,
        _index: &Index,
        _region: &JoinedRegion,
        _outcome: Outcome,
        _time_ns: u64,
    ) {
    }
    /// A cross-submission wait or explicit producer joined at both ends (at most once per
    /// wait record or producer named).
    fn link(&mut self, _index: &Index, _link: &JoinedLink) {}
    /// A cross-submission wait or explicit producer whose producer lies before the trace's
    /// range, joined at its consumer (at most once per wait record or producer named; see
    /// the module docs). Never handed to [`Visitor::link`] as well.
    fn link_before_range(&mut self, _index: &Index, _link: &LinkBeforeRange) {}
    /// A record about a submission joined to it (at most once per record; see the module
    /// docs for which records).
    fn event(&mut self, _index: &Index, _event: &JoinedEvent) {}
    /// An output digest (at most once per digest record), with its record's place in the
    /// pass (as [`JoinedEvent::record`], for a reader that holds the records): joined to its
    /// submission (`Some`) when its `Submit` is read, or given up (`None`) when that
    /// `Submit` was not read while [`PARK_LIMIT`] digests waited after it, or by the end of
    /// the pass (counted in [`ScanSummary::unjoined_outputs`]).
    fn output(
        &mut self,
        _index: &Index,
        _record: u64,
        _digest: &OutputDigest,
        _submission: Option<&JoinedSubmission>,
    ) {
    }
}

/// How every reader words a [`RunningRegion`] of a trace nobody writes any more: the view's
/// region pane, the exports' `state`, `stats`' `running` line. (Of a trace being recorded,
/// it is running now: `hrx_capture::BEING_RECORDED`.)
pub const RUNNING_AT_END: &str = "still running when the trace ends";

/// How every reader words a [`RunningRegion`]'s state where the trace ends: `live`, a
/// recorder still writes the trace, it is running now (`running now (being recorded now:
/// its end is not written yet)`, `stats`' words); else [`RUNNING_AT_END`]. The exports of
/// a trace being recorded said `still running when the trace ends` where `stats` said
/// `running now` (a break-it pass).
pub fn running_state(live: bool) -> String {
    if live {
        format!("running now ({})", hrx_capture::BEING_RECORDED)
    } else {
        RUNNING_AT_END.to_owned()
    }
}

/// The short form of [`running_state`] the exports name a running region by (`LABEL
/// (running now)`, `LABEL (running at end)`; Parquet's `events` row).
pub fn running_mark(live: bool) -> &'static str {
    if live {
        "running now"
    } else {
        "running at end"
    }
}

/// A region that started ([`Record::RegionStarted`]) and has no timing when the trace ends:
/// it was still running, the region a hang or a crash was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningRegion {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its submission.
    pub submission: SubmissionIndex,
    /// Its region within the submission's prepared graph.
    pub region: RegionIndex,
    /// The region, model-wide, where its submission was found.
    pub region_ref: Option<RegionRef>,
    /// Its submission's ordinal ([`JoinedSubmission::ordinal`]), where it was found.
    pub ordinal: Option<u64>,
    /// When it started, ns since the session start.
    pub start_ns: u64,
    /// Whether its submission's outcome (`SubmissionDone`) was read: it did not run on
    /// past it.
    pub submission_done: bool,
}

/// What a pass read, beside what its visitor gathered.
#[derive(Debug)]
pub struct ScanSummary {
    /// The structural index, labels assigned.
    pub index: Index,
    /// Records read.
    pub records: u64,
    /// `Submit` records.
    pub submissions: u64,
    /// Whether the session's end record was read (the recorder closed the trace).
    pub session_ended: bool,
    /// The signal that ended the recorded process, when a [`FatalSignal`] was read (the
    /// last one).
    pub fatal: Option<FatalSignal>,
    /// Region timings whose submission or region was never found (see the module docs).
    pub unplaced_timings: u64,
    /// Regions still running when the trace ends, by submission.
    pub running: Vec<RunningRegion>,
    /// Submissions in flight when the trace ends (their `Submit` read, no
    /// `SubmissionDone`), by runtime and submission: what a hang or a crash was in. A
    /// `SubmissionDone` read before its `Submit` (another thread's block written out first)
    /// counts, so this holds only what is in flight, not every submission
    /// ([`Joiner::in_flight`]).
    pub in_flight: Vec<(RuntimeId, SubmissionIndex)>,
    /// Regions started and never timed whose timing or completion was dropped, not running
    /// (see the module docs), by submission.
    pub timing_lost: Vec<RunningRegion>,
    /// Whether the trace says records were lost while recording.
    pub records_lost: bool,
    /// Cross-submission waits whose submission or the one it waited on was never found
    /// (explicit producers that never join are not counted: `submit_after` may name a
    /// submission of an earlier recording). A wait on a submission before the trace's range
    /// is not unresolved: it is counted in [`ScanSummary::waits_before_range`].
    pub unresolved_waits: u64,
    /// Cross-submission waits on a submission before the trace's range, handed over to
    /// [`Visitor::link_before_range`] (see the module docs).
    pub waits_before_range: u64,
    /// Operation timings whose submission or region was never found.
    pub unplaced_op_timings: u64,
    /// Records about a submission ([`Visitor::event`]) whose submission was never found.
    pub unjoined_events: u64,
    /// Output digests ([`Visitor::output`]) whose submission was never found (those still
    /// waiting for their `Submit`, in [`Joiner::snapshot`]).
    pub unjoined_outputs: u64,
    /// Submission completions (`SubmissionDone`) whose `Submit` never came (those still
    /// waiting for it, in [`Joiner::snapshot`]): with the unplaced timings and unjoined
    /// digests, what a trace cut short keeps of submissions whose `Submit` it lost.
    pub unjoined_outcomes: u64,
    /// Records whose time span ends before it starts ([`ends_before_start`]: crafted or
    /// damaged times): read as 0 ns long, and counted here so that every verb says so.
    pub ends_before_start: u64,
    /// Explicit producers (`submit_after`) of `Submit`s read before their graph's `Prepared`
    /// that the joiner did not hold while they waited, past [`PARKED_PRODUCERS_LIMIT`]:
    /// never handed to [`Visitor::link`] or [`Visitor::link_before_range`] (a crafted
    /// trace). Those past a reader's own [`Joiner::limit_explicit_producers`] are not
    /// counted here: that reader counts them itself.
    pub producers_not_parked: u64,
    /// How the file ended (`None` for records read from memory).
    pub recovery: Option<Recovery>,
    /// Damage and skipped parts.
    pub warnings: Vec<Warning>,
}

impl ScanSummary {
    /// Records naming submissions whose `Submit` the trace lacks, as `[region timings,
    /// completions, output digests]`: what every verb that says so counts.
    pub fn unjoined(&self) -> [u64; 3] {
        [
            self.unplaced_timings,
            self.unjoined_outcomes,
            self.unjoined_outputs,
        ]
    }
}

#[derive(Clone, Copy, Debug)]
struct Live {
    joined: JoinedSubmission,
    outcome: Option<Outcome>,
}

/// A timing waiting for its `Submit`: a region's, or an operation's (`Some(node)`).
type Parked = (RegionTiming, Option<NodeIndex>);

type SubmissionKey = (RuntimeId, SubmissionIndex);

/// A record about a submission waiting for its `Submit`: its place in the pass and the
/// region it names.
type ParkedEvent = (u64, Option<RegionIndex>);

/// A wait or explicit producer with an end whose `Submit` was not read yet.
#[derive(Clone, Copy, Debug)]
struct ParkedLink {
    consumer: SubmissionKey,
    /// The consumer's ordinal, once joined.
    consumer_ordinal: Option<u64>,
    producer: SubmissionKey,
    wait: Option<CrossWait>,
}

/// The streaming join (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Joiner {
    index: Index,
    live: IdMap<(RuntimeId, SubmissionIndex), Live>,
    retired: VecDeque<(RuntimeId, SubmissionIndex)>,
    /// Timings waiting for their `Submit`: a region's, or an operation's (`Some(node)`).
    parked_timings: IdMap<(RuntimeId, SubmissionIndex), Vec<Parked>>,
    /// Parked submissions, oldest first (a key may repeat after it was taken).
    parked_order: VecDeque<(RuntimeId, SubmissionIndex)>,
    parked_count: usize,
    /// Outcomes read before their `Submit`, with their record's place in the pass.
    parked_outcomes: IdMap<(RuntimeId, SubmissionIndex), (Outcome, u64)>,
    /// Submits read before their graph's `Prepared`, oldest first (a queue: past
    /// [`PARK_LIMIT`] each new one lets the oldest in), each with the explicit producers it
    /// named that it does not hold ([`JoinedSubmission::producers_not_held`]).
    parked_submits: VecDeque<(Submit, u32)>,
    /// The explicit producers `parked_submits` hold, all together (at most
    /// [`PARKED_PRODUCERS_LIMIT`] unless [`Joiner::park_every_producer`]).
    parked_producers: usize,
    /// Explicit producers parked submits did not hold, past [`PARKED_PRODUCERS_LIMIT`].
    producers_not_parked: u64,
    /// Whether parked submits hold every producer ([`Joiner::park_every_producer`]).
    park_every_producer: bool,
    /// How many of `parked_submits` wait for each graph: a `Prepared` nobody waits for
    /// does not walk the queue.
    parked_graphs: IdMap<(RuntimeId, PreparedId), usize>,
    /// Submissions joined so far (the next ordinal).
    entered: u64,
    /// Region completions waiting for their `Submit` (at most [`PARK_LIMIT`]).
    parked_region_outcomes: IdMap<SubmissionKey, Vec<(RegionIndex, Outcome, u64)>>,
    parked_region_outcome_count: usize,
    /// Waits and explicit producers waiting for the `Submit` of one end (at most
    /// [`PARK_LIMIT`]).
    parked_links: IdMap<SubmissionKey, Vec<ParkedLink>>,
    parked_link_count: usize,
    /// The trace's ranges, per runtime (`TraceRange` records).
    ranges: Ranges,
    waits_before_range: u64,
    /// Records about a submission waiting for its `Submit` (at most [`PARK_LIMIT`]).
    parked_events: IdMap<SubmissionKey, Vec<ParkedEvent>>,
    parked_event_count: usize,
    unjoined_events: u64,
    /// Output digests waiting for their `Submit` (at most [`PARK_LIMIT`]).
    parked_outputs: IdMap<SubmissionKey, Vec<(u64, OutputDigest)>>,
    /// Submissions with parked digests, oldest first (a key may repeat after it was taken).
    parked_output_order: VecDeque<SubmissionKey>,
    parked_output_count: usize,
    unjoined_outputs: u64,
    unresolved_waits: u64,
    records: u64,
    submissions: u64,
    session_ended: bool,
    fatal: Option<FatalSignal>,
    unplaced_timings: u64,
    /// Regions started and not timed yet (bounded by the regions in flight).
    started: IdMap<(RuntimeId, SubmissionIndex, RegionIndex), RunningRegion>,
    unplaced_op_timings: u64,
    /// Whether a `RecordsLost` or the session end counted lost records.
    records_lost: bool,
    /// Records whose time span ends before it starts.
    ends_before_start: u64,
    /// Explicit producers joined of each `Submit`, at most (`None`: all).
    explicit_limit: Option<usize>,
}

/// The `limit` latest of a `Submit`'s explicit producers (the highest submission indices),
/// in the order named; all of them where there are no more. A producer named more than once
/// is one producer (its first naming kept): repeats took places from producers named once
/// (`submit_after` of one completion 16 times and five others linked the one alone, and
/// said five "not kept": a break-it pass). The latest are the ones a submission most likely
/// waited on last (an explicit producer's own producers are earlier), so a chain of
/// `submit_after` stays linked.
pub fn latest_producers(producers: &[SubmissionIndex], limit: usize) -> Vec<SubmissionIndex> {
    if producers.len() <= limit {
        return producers.to_vec();
    }
    let mut kept = distinct_producers(producers);
    if kept.len() > limit {
        kept.select_nth_unstable_by_key(limit, |&i| (std::cmp::Reverse(producers[i]), i));
        kept.truncate(limit);
    }
    kept.sort_unstable();
    kept.into_iter().map(|i| producers[i]).collect()
}

/// How many of a `Submit`'s explicit producers [`latest_producers`] leaves out: the
/// distinct producers past the `limit` latest (a repeat is none).
pub fn producers_left_out(producers: &[SubmissionIndex], limit: usize) -> usize {
    if producers.len() <= limit {
        return 0;
    }
    distinct_producers(producers).len().saturating_sub(limit)
}

/// The positions of the first naming of each distinct producer, in no order.
fn distinct_producers(producers: &[SubmissionIndex]) -> Vec<usize> {
    let mut by_value: Vec<usize> = (0..producers.len()).collect();
    by_value.sort_unstable_by_key(|&i| (producers[i], i));
    by_value.dedup_by_key(|i| producers[*i]);
    by_value
}

impl Joiner {
    /// An empty joiner.
    pub fn new() -> Joiner {
        Joiner::default()
    }

    /// Joins at most `limit` explicit producers of each `Submit`, its latest
    /// ([`latest_producers`]): for a reader that keeps no more (the timeline's model),
    /// so that a `Submit` naming thousands costs it no link per producer. The visitor's
    /// [`Visitor::submitted`] still gets the `Submit` as recorded.
    pub fn limit_explicit_producers(&mut self, limit: usize) {
        self.explicit_limit = Some(limit);
    }

    /// Holds every explicit producer of a `Submit` that waits for its graph's `Prepared`,
    /// past [`PARKED_PRODUCERS_LIMIT`]: for a reader that holds the records themselves, so
    /// that the copies cost it at most what its records do, and that needs every producer
    /// joined (replay orders a submission after each producer before the trace's range that
    /// [`Visitor::link_before_range`] hands over, and refuses one it was not handed).
    pub fn park_every_producer(&mut self) {
        self.park_every_producer = true;
    }

    /// The index so far.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Whether the session's end record was read.
    pub fn session_ended(&self) -> bool {
        self.session_ended
    }

    /// The submissions in flight now, by runtime and submission: those whose `Submit` was
    /// read and whose `SubmissionDone` was not (one read first waits for its `Submit` and
    /// takes it out; a `Submit` still waiting for its graph's `Prepared` is in flight too).
    /// The joiner keeps a submission without an outcome until the end, so this costs no
    /// state of its own: it is as large as what is in flight.
    pub fn in_flight(&self) -> Vec<(RuntimeId, SubmissionIndex)> {
        let joined = self
            .live
            .iter()
            .filter(|(_, live)| live.outcome.is_none())
            .map(|(&key, _)| key);
        let waiting = self
            .parked_submits
            .iter()
            .map(|(s, _)| (s.runtime, s.submission))
            .filter(|key| !self.parked_outcomes.contains_key(key));
        let mut in_flight: Vec<_> = joined.chain(waiting).collect();
        in_flight.sort_unstable();
        in_flight.dedup();
        in_flight
    }

    /// What [`Joiner::finish`] would return now, the joiner kept for more records (a trace
    /// still being written): timings waiting for their `Submit` are not counted unplaced,
    /// as it may still come.
    pub fn snapshot(&self, recovery: Option<Recovery>, warnings: Vec<Warning>) -> ScanSummary {
        let mut index = self.index.clone();
        index.label_regions();
        let (running, timing_lost) = self.running(self.started.values().copied().collect());
        let unresolved_waits = self.unresolved_waits
            + self
                .parked_links
                .values()
                .flatten()
                .filter(|l| l.wait.is_some())
                .count() as u64;
        ScanSummary {
            index,
            records: self.records,
            submissions: self.submissions,
            session_ended: self.session_ended,
            unplaced_timings: self.unplaced_timings,
            running,
            in_flight: self.in_flight(),
            timing_lost,
            records_lost: self.records_lost,
            unresolved_waits,
            waits_before_range: self.waits_before_range,
            unplaced_op_timings: self.unplaced_op_timings,
            unjoined_events: self.unjoined_events + self.parked_event_count as u64,
            unjoined_outputs: self.unjoined_outputs + self.parked_output_count as u64,
            unjoined_outcomes: self.parked_outcomes.len() as u64,
            ends_before_start: self.ends_before_start,
            producers_not_parked: self.producers_not_parked,
            fatal: self.fatal,
            recovery,
            warnings,
        }
    }

    /// Takes one record.
    pub fn push(&mut self, record: &Record, visitor: &mut impl Visitor) {
        self.records += 1;
        self.ends_before_start += u64::from(ends_before_start(record));
        self.index.push(record);
        visitor.record(&self.index, record);
        match record {
            Record::SessionEnd(e) => {
                self.session_ended = true;
                self.records_lost |= e.dropped_records > 0;
            }
            Record::RecordsLost(l) => self.records_lost |= l.total > 0,
            Record::FatalSignal(f) => self.fatal = Some(*f),
            Record::Submit(s) => {
                self.submissions += 1;
                match self.index.find_prepared(s.runtime, s.prepared) {
                    Some(prepared) => self.enter(s, Some(prepared), 0, visitor),
                    // Its graph was prepared on another thread whose records were written out
                    // later: it waits for the `Prepared`, whose regions its timings need.
                    None => self.park_submit(s.clone(), visitor),
                }
            }
            Record::Prepared(p) if self.parked_graphs.contains_key(&(p.runtime, p.prepared)) => {
                self.parked_graphs.remove(&(p.runtime, p.prepared));
                let prepared = self.index.find_prepared(p.runtime, p.prepared);
                let (ready, waiting): (VecDeque<_>, VecDeque<_>) =
                    std::mem::take(&mut self.parked_submits)
                        .into_iter()
                        .partition(|(s, _)| (s.runtime, s.prepared) == (p.runtime, p.prepared));
                self.parked_submits = waiting;
                for (s, not_held) in ready {
                    self.parked_producers -= s.producers.len();
                    self.enter(&s, prepared, not_held, visitor);
                    // A region it started while it waited names its region now.
                    let mut started: Vec<RunningRegion> = self
                        .started
                        .values()
                        .filter(|r| (r.runtime, r.submission) == (s.runtime, s.submission))
                        .copied()
                        .collect();
                    for r in &mut started {
                        r.ordinal = None;
                        self.join_running(r);
                        self.started.insert((r.runtime, r.submission, r.region), *r);
                    }
                }
            }
            Record::RegionStarted(r) => {
                let mut running = RunningRegion {
                    runtime: r.runtime,
                    submission: r.submission,
                    region: r.region,
                    region_ref: None,
                    ordinal: None,
                    start_ns: r.time_ns,
                    submission_done: false,
                };
                self.join_running(&mut running);
                self.started
                    .insert((r.runtime, r.submission, r.region), running);
            }
            Record::RegionDone(d) => {
                if !matches!(d.status, Status::Ok) {
                    self.event((d.runtime, d.submission), Some(d.region), visitor);
                }
                self.started.remove(&(d.runtime, d.submission, d.region));
                let key = (d.runtime, d.submission);
                let outcome = Outcome::of(&d.status);
                if self.live.contains_key(&key) {
                    self.region_outcome(key, d.region, outcome, d.time_ns, visitor);
                } else if self.parked_region_outcome_count < PARK_LIMIT {
                    self.parked_region_outcomes
                        .entry(key)
                        .or_default()
                        .push((d.region, outcome, d.time_ns));
                    self.parked_region_outcome_count += 1;
                }
            }
            Record::TraceRange(r) => {
                self.ranges.push(r);
                self.unpark_before_range(r.runtime, visitor);
            }
            Record::CrossWait(w) => {
                let link = ParkedLink {
                    consumer: (w.runtime, w.submission),
                    consumer_ordinal: None,
                    producer: (w.runtime, w.on_submission),
                    wait: Some(*w),
                };
                self.link(link, visitor);
            }
            Record::RegionTiming(t) => {
                self.started.remove(&(t.runtime, t.submission, t.region));
                if self.live.contains_key(&(t.runtime, t.submission)) {
                    self.place(t, None, visitor);
                } else {
                    self.park(*t, None);
                }
            }
            Record::OpTiming(o) => {
                let t = &o.timing;
                if self.live.contains_key(&(t.runtime, t.submission)) {
                    self.place(t, Some(o.node), visitor);
                } else {
                    self.park(*t, Some(o.node));
                }
            }
            Record::SubmissionDone(d) => {
                let key = (d.runtime, d.submission);
                let outcome = Outcome::of(&d.status);
                let record = self.records - 1;
                if self.live.contains_key(&key) {
                    self.set_outcome(key, (outcome, record), visitor);
                } else if self.parked_outcomes.len() < PARK_LIMIT {
                    self.parked_outcomes.insert(key, (outcome, record));
                }
            }
            Record::Quarantine(q) => {
                if let Some(s) = q.submission {
                    self.event((q.runtime, s), q.region, visitor);
                }
            }
            Record::Poison(p) => {
                if let Some(s) = p.submission {
                    self.event((p.runtime, s), p.region, visitor);
                }
            }
            Record::FaultInjected(f) => {
                if let Some(s) = f.submission {
                    self.event((f.runtime, s), f.region, visitor);
                }
            }
            Record::OutputDigest(d) => match self.live.get(&(d.runtime, d.submission)) {
                Some(live) => visitor.output(&self.index, self.records - 1, d, Some(&live.joined)),
                None => self.park_output(d, visitor),
            },
            _ => {}
        }
    }

    /// Joins the record just read, about submission `key` (and region `index`), or parks
    /// it until the `Submit` is read.
    fn event(
        &mut self,
        key: SubmissionKey,
        index: Option<RegionIndex>,
        visitor: &mut impl Visitor,
    ) {
        let record = self.records - 1;
        if self.live.contains_key(&key) {
            self.join_event(key, (record, index), visitor);
        } else if self.parked_event_count < PARK_LIMIT {
            self.parked_events
                .entry(key)
                .or_default()
                .push((record, index));
            self.parked_event_count += 1;
        } else {
            self.unjoined_events += 1;
        }
    }

    /// Parks digest `d` until its `Submit` is read; past [`PARK_LIMIT`] digests waiting,
    /// the oldest submission's are given up.
    fn park_output(&mut self, d: &OutputDigest, visitor: &mut impl Visitor) {
        while self.parked_output_count >= PARK_LIMIT {
            let Some(oldest) = self.parked_output_order.pop_front() else {
                break;
            };
            for (record, d) in self.parked_outputs.remove(&oldest).into_iter().flatten() {
                self.parked_output_count -= 1;
                self.unjoined_outputs += 1;
                visitor.output(&self.index, record, &d, None);
            }
        }
        let key = (d.runtime, d.submission);
        let waiting = self.parked_outputs.entry(key).or_default();
        let first = waiting.is_empty();
        waiting.push((self.records - 1, d.clone()));
        self.parked_output_count += 1;
        if first {
            self.parked_output_order.push_back(key);
            // Keys taken by their `Submit` stay in the order list; drop them now and then
            // so it stays proportional to what is parked.
            if self.parked_output_order.len() > 2 * self.parked_outputs.len() + 1024 {
                let parked = &self.parked_outputs;
                self.parked_output_order.retain(|k| parked.contains_key(k));
            }
        }
    }

    fn join_event(&mut self, key: SubmissionKey, event: ParkedEvent, visitor: &mut impl Visitor) {
        let Some(submission) = self.live.get(&key).map(|l| l.joined) else {
            self.unjoined_events += 1;
            return;
        };
        let (record, index) = event;
        let region = index.and_then(|i| self.index.region_of(submission.prepared?, i));
        let joined = JoinedEvent {
            record,
            submission,
            index,
            region,
        };
        visitor.event(&self.index, &joined);
    }

    /// Submission `s` of `prepared` is in flight: it joins, then its parked timings,
    /// outcomes and links. `not_held`: producers it named that its parked `s` lacks.
    fn enter(
        &mut self,
        s: &Submit,
        prepared: Option<PreparedRef>,
        not_held: u32,
        visitor: &mut impl Visitor,
    ) {
        let key = (s.runtime, s.submission);
        let joined = JoinedSubmission {
            runtime: s.runtime,
            submission: s.submission,
            ordinal: self.entered,
            prepared,
            producers_not_held: not_held,
        };
        self.entered += 1;
        self.live.insert(
            key,
            Live {
                joined,
                outcome: None,
            },
        );
        visitor.submitted(&self.index, &joined, s);
        if let Some(parked) = self.parked_outputs.remove(&key) {
            self.parked_output_count -= parked.len();
            for (record, d) in parked {
                visitor.output(&self.index, record, &d, Some(&joined));
            }
        }
        let latest;
        let producers = match self.explicit_limit {
            Some(limit) if s.producers.len() > limit => {
                latest = latest_producers(&s.producers, limit);
                &latest
            }
            _ => &s.producers,
        };
        for &producer in producers {
            let link = ParkedLink {
                consumer: key,
                consumer_ordinal: Some(joined.ordinal),
                producer: (s.runtime, producer),
                wait: None,
            };
            self.link(link, visitor);
        }
        if let Some(parked) = self.parked_timings.remove(&key) {
            self.parked_count -= parked.len();
            for (t, node) in parked {
                self.place(&t, node, visitor);
            }
        }
        if let Some(done) = self.parked_outcomes.remove(&key) {
            self.set_outcome(key, done, visitor);
        }
        if let Some(parked) = self.parked_region_outcomes.remove(&key) {
            self.parked_region_outcome_count -= parked.len();
            for (region, outcome, time_ns) in parked {
                self.region_outcome(key, region, outcome, time_ns, visitor);
            }
        }
        if let Some(parked) = self.parked_links.remove(&key) {
            self.parked_link_count -= parked.len();
            for link in parked {
                self.link(link, visitor);
            }
        }
        if let Some(parked) = self.parked_events.remove(&key) {
            self.parked_event_count -= parked.len();
            for event in parked {
                self.join_event(key, event, visitor);
            }
        }
    }

    /// Parks submit `s` until the `Prepared` of its graph is read; past [`PARK_LIMIT`]
    /// submits waiting, the oldest enters without its graph. It holds at most the explicit
    /// producers the reader joins ([`Joiner::limit_explicit_producers`]) and, all parked
    /// submits together, [`PARKED_PRODUCERS_LIMIT`]: its latest that fit; the others short
    /// of the reader's own limit are counted in [`ScanSummary::producers_not_parked`].
    fn park_submit(&mut self, mut s: Submit, visitor: &mut impl Visitor) {
        if self.parked_submits.len() >= PARK_LIMIT
            && let Some((oldest, not_held)) = self.parked_submits.pop_front()
        {
            self.parked_producers -= oldest.producers.len();
            self.unpark_graph((oldest.runtime, oldest.prepared));
            self.enter(&oldest, None, not_held, visitor);
        }
        let named = s.producers.len();
        let joined = named.min(self.explicit_limit.unwrap_or(usize::MAX));
        let room = if self.park_every_producer {
            joined
        } else {
            joined.min(PARKED_PRODUCERS_LIMIT.saturating_sub(self.parked_producers))
        };
        // Counted as every reader counts them: distinct producers (a repeat is none).
        let mut not_held = 0;
        if room < named {
            not_held = producers_left_out(&s.producers, room);
            // Those past the reader's own limit it would have left out anyway.
            let past_limit = producers_left_out(&s.producers, joined);
            s.producers = latest_producers(&s.producers, room);
            s.producers.shrink_to_fit();
            self.producers_not_parked += not_held.saturating_sub(past_limit) as u64;
        }
        debug_assert!(room >= named || s.producers.len() <= room);
        self.parked_producers += s.producers.len();
        *self
            .parked_graphs
            .entry((s.runtime, s.prepared))
            .or_default() += 1;
        let not_held = u32::try_from(not_held).unwrap_or(u32::MAX);
        self.parked_submits.push_back((s, not_held));
    }

    /// One submit waiting for `graph` entered.
    fn unpark_graph(&mut self, graph: (RuntimeId, PreparedId)) {
        if let Some(n) = self.parked_graphs.get_mut(&graph) {
            *n -= 1;
            if *n == 0 {
                self.parked_graphs.remove(&graph);
            }
        }
    }

    /// Joins a region's completion to its region (ignored where the region is not one of
    /// its submission's prepared graph, as a timing would be).
    fn region_outcome(
        &mut self,
        key: SubmissionKey,
        index: RegionIndex,
        outcome: Outcome,
        time_ns: u64,
        visitor: &mut impl Visitor,
    ) {
        let Some(submission) = self.live.get(&key).map(|l| l.joined) else {
            return;
        };
        let Some(prepared) = submission.prepared else {
            return;
        };
        let Some(region) = self.index.region_of(prepared, index) else {
            return;
        };
        let lane = self.index.region(region).lane;
        let joined = JoinedRegion {
            submission,
            prepared,
            region,
            index,
            lane,
        };
        visitor.region_outcome(&self.index, &joined, outcome, time_ns);
    }

    /// Joins both ends of a wait or explicit producer, or parks it on the end not read yet.
    fn link(&mut self, mut link: ParkedLink, visitor: &mut impl Visitor) {
        let ordinal = |key| self.live.get(&key).map(|l| l.joined.ordinal);
        let consumer = link.consumer_ordinal.or_else(|| ordinal(link.consumer));
        let Some(consumer) = consumer else {
            return self.park_link(link.consumer, link);
        };
        link.consumer_ordinal = Some(consumer);
        let Some(producer) = ordinal(link.producer) else {
            let (runtime, producer) = link.producer;
            if self.ranges.before(runtime, producer) {
                return self.before_range(consumer, link, visitor);
            }
            return self.park_link(link.producer, link);
        };
        let joined = JoinedLink {
            runtime: link.consumer.0,
            consumer,
            producer,
            wait: link.wait,
        };
        visitor.link(&self.index, &joined);
    }

    /// Hands over `link`, joined at its consumer (`consumer`), whose producer lies before
    /// the trace's range.
    fn before_range(&mut self, consumer: u64, link: ParkedLink, visitor: &mut impl Visitor) {
        self.waits_before_range += u64::from(link.wait.is_some());
        let joined = LinkBeforeRange {
            runtime: link.consumer.0,
            consumer,
            producer: link.producer.1,
            wait: link.wait,
        };
        visitor.link_before_range(&self.index, &joined);
    }

    /// Hands over the links parked on a producer of `runtime` that its ranges now leave
    /// before the range (a `TraceRange` read after the wait).
    fn unpark_before_range(&mut self, runtime: RuntimeId, visitor: &mut impl Visitor) {
        let ranges = &self.ranges;
        let keys: Vec<SubmissionKey> = self
            .parked_links
            .keys()
            .filter(|&&(r, s)| r == runtime && ranges.before(r, s))
            .copied()
            .collect();
        for key in keys {
            let Some(parked) = self.parked_links.remove(&key) else {
                continue;
            };
            // Those parked on their consumer (not read yet) stay.
            let (ready, waiting): (Vec<_>, Vec<_>) = parked
                .into_iter()
                .partition(|l| l.producer == key && l.consumer_ordinal.is_some());
            self.parked_link_count -= ready.len();
            if !waiting.is_empty() {
                self.parked_links.insert(key, waiting);
            }
            for link in ready {
                if let Some(consumer) = link.consumer_ordinal {
                    self.before_range(consumer, link, visitor);
                }
            }
        }
    }

    fn park_link(&mut self, key: SubmissionKey, link: ParkedLink) {
        if self.parked_link_count >= PARK_LIMIT {
            self.unresolved_waits += u64::from(link.wait.is_some());
            return;
        }
        self.parked_links.entry(key).or_default().push(link);
        self.parked_link_count += 1;
    }

    /// Joins a running region to its submission and region where its `Submit` was read.
    fn join_running(&self, running: &mut RunningRegion) {
        if running.ordinal.is_some() {
            return;
        }
        let key = (running.runtime, running.submission);
        running.submission_done |= self.parked_outcomes.contains_key(&key);
        if let Some(live) = self.live.get(&key) {
            running.submission_done |= live.outcome.is_some();
            running.ordinal = Some(live.joined.ordinal);
            running.region_ref = live
                .joined
                .prepared
                .and_then(|p| self.index.region_of(p, running.region));
        }
    }

    /// The regions started and never timed, joined where their `Submit` was read since they
    /// started, by submission: those still running, and those whose timing was lost (see
    /// the module docs).
    fn running(&self, mut running: Vec<RunningRegion>) -> (Vec<RunningRegion>, Vec<RunningRegion>) {
        for r in &mut running {
            self.join_running(r);
            if let Some(live) = self.live.get(&(r.runtime, r.submission)) {
                r.submission_done |= live.outcome.is_some();
            }
        }
        running.sort_by_key(|r| (r.runtime, r.submission, r.region));
        // A region of a submission whose outcome was read is not running in any trace: its
        // timing never reached the file (dropped by a lossy recorder, or not written before
        // a kill cut the recording short, where the thread that wrote the outcome was
        // flushed and the region's was not).
        running
            .into_iter()
            .partition(|r| !(r.submission_done || (self.records_lost && self.session_ended)))
    }

    fn park(&mut self, t: RegionTiming, node: Option<NodeIndex>) {
        while self.parked_count >= PARK_LIMIT {
            let Some(oldest) = self.parked_order.pop_front() else {
                break;
            };
            if let Some(dropped) = self.parked_timings.remove(&oldest) {
                self.parked_count -= dropped.len();
                for (_, node) in dropped {
                    self.count_unplaced(node);
                }
            }
        }
        let key = (t.runtime, t.submission);
        let waiting = self.parked_timings.entry(key).or_default();
        let first = waiting.is_empty();
        waiting.push((t, node));
        self.parked_count += 1;
        if first {
            self.parked_order.push_back(key);
            // Keys taken by their `Submit` stay in the order list; drop them now and then
            // so it stays proportional to what is parked.
            if self.parked_order.len() > 2 * self.parked_timings.len() + 1024 {
                let parked = &self.parked_timings;
                self.parked_order.retain(|k| parked.contains_key(k));
            }
        }
    }

    fn count_unplaced(&mut self, node: Option<NodeIndex>) {
        match node {
            None => self.unplaced_timings += 1,
            Some(_) => self.unplaced_op_timings += 1,
        }
    }

    fn place(&mut self, t: &RegionTiming, node: Option<NodeIndex>, visitor: &mut impl Visitor) {
        let joined = self.live.get(&(t.runtime, t.submission)).and_then(|live| {
            let p = live.joined.prepared?;
            Some((live.joined.ordinal, p, self.index.region_of(p, t.region)?))
        });
        let Some((ordinal, prepared, region)) = joined else {
            self.count_unplaced(node);
            return;
        };
        let queue = self.index.region(region).queue;
        let lane = self.index.lane_of(t.runtime, queue);
        let span = JoinedSpan {
            runtime: t.runtime,
            submission: t.submission,
            ordinal,
            prepared,
            region,
            lane,
            start_ns: t.start_ns,
            end_ns: t.end_ns,
            device: t.device,
        };
        match node {
            None => visitor.span(&self.index, &span),
            Some(node) => visitor.op_span(&self.index, &span, node),
        }
    }

    fn set_outcome(
        &mut self,
        key: (RuntimeId, SubmissionIndex),
        (outcome, record): (Outcome, u64),
        visitor: &mut impl Visitor,
    ) {
        let Some(live) = self.live.get_mut(&key) else {
            return;
        };
        let previous = live.outcome.replace(outcome);
        let joined = live.joined;
        visitor.outcome(&self.index, &joined, previous, outcome);
        let done = JoinedEvent {
            record,
            submission: joined,
            index: None,
            region: None,
        };
        visitor.submission_done(&self.index, &done);
        if previous.is_none() {
            // Its regions started and not timed did not run on past it (their timing may
            // have been dropped): said at the end, after it may have left the window.
            if !self.started.is_empty()
                && let Some(p) = joined.prepared
            {
                let regions = self.index.prepared()[p.0 as usize].regions.len() as u32;
                for i in 0..regions {
                    if let Some(r) = self.started.get_mut(&(key.0, key.1, RegionIndex(i))) {
                        r.submission_done = true;
                    }
                }
            }
            self.retired.push_back(key);
            if self.retired.len() > RETIRE_WINDOW
                && let Some(old) = self.retired.pop_front()
            {
                self.live.remove(&old);
            }
        }
    }

    /// What [`Joiner::finish`] would return and hand `visitor` now, the joiner kept for more
    /// records (a followed trace's publish). Nothing enters while no submit waits for its
    /// graph's `Prepared`: then only the structural index is copied (to label it) and what
    /// is in flight is read in place; while one waits, the whole joiner is (its submissions
    /// in flight and retired, up to [`RETIRE_WINDOW`]) and finished.
    pub fn finish_copy(
        &self,
        visitor: &mut impl Visitor,
        recovery: Option<Recovery>,
        warnings: Vec<Warning>,
    ) -> ScanSummary {
        if !self.parked_submits.is_empty() {
            return self.clone().finish(visitor, recovery, warnings);
        }
        // `finish`'s steps, reading.
        let (mut unplaced_timings, mut unplaced_op_timings) =
            (self.unplaced_timings, self.unplaced_op_timings);
        for (_, node) in self.parked_timings.values().flatten() {
            match node {
                None => unplaced_timings += 1,
                Some(_) => unplaced_op_timings += 1,
            }
        }
        let mut parked: Vec<_> = self.parked_outputs.iter().collect();
        parked.sort_unstable_by_key(|(key, _)| **key);
        let mut unjoined_outputs = self.unjoined_outputs;
        for (record, d) in parked.into_iter().flat_map(|(_, d)| d) {
            unjoined_outputs += 1;
            visitor.output(&self.index, *record, d, None);
        }
        // The rest as a snapshot reads it, with the parked timings and outputs counted.
        let mut summary = self.snapshot(recovery, warnings);
        summary.unplaced_timings = unplaced_timings;
        summary.unplaced_op_timings = unplaced_op_timings;
        summary.unjoined_outputs = unjoined_outputs;
        summary
    }

    /// Ends the pass: parked timings that never joined are counted, labels assigned.
    /// Submits whose `Prepared` never came enter without their graph, in the order read:
    /// they join (with their outcomes, region completions, waits and events) to `visitor`,
    /// their timings are counted unplaced.
    pub fn finish(
        mut self,
        visitor: &mut impl Visitor,
        recovery: Option<Recovery>,
        warnings: Vec<Warning>,
    ) -> ScanSummary {
        self.parked_graphs.clear();
        self.parked_producers = 0;
        for (s, not_held) in std::mem::take(&mut self.parked_submits) {
            self.enter(&s, None, not_held, visitor);
        }
        let parked = std::mem::take(&mut self.parked_timings);
        for (_, node) in parked.into_values().flatten() {
            self.count_unplaced(node);
        }
        let mut parked: Vec<_> = std::mem::take(&mut self.parked_outputs)
            .into_iter()
            .collect();
        parked.sort_unstable_by_key(|(key, _)| *key);
        for (record, d) in parked.into_iter().flat_map(|(_, d)| d) {
            self.unjoined_outputs += 1;
            visitor.output(&self.index, record, &d, None);
        }
        self.index.label_regions();
        let started = std::mem::take(&mut self.started);
        let (running, timing_lost) = self.running(started.into_values().collect());
        let parked_links = std::mem::take(&mut self.parked_links);
        self.unresolved_waits += parked_links
            .values()
            .flatten()
            .filter(|l| l.wait.is_some())
            .count() as u64;
        let in_flight = self.in_flight();
        ScanSummary {
            index: self.index,
            records: self.records,
            submissions: self.submissions,
            session_ended: self.session_ended,
            fatal: self.fatal,
            unplaced_timings: self.unplaced_timings,
            running,
            in_flight,
            timing_lost,
            records_lost: self.records_lost,
            unresolved_waits: self.unresolved_waits,
            waits_before_range: self.waits_before_range,
            unplaced_op_timings: self.unplaced_op_timings,
            unjoined_events: self.unjoined_events + self.parked_event_count as u64,
            unjoined_outputs: self.unjoined_outputs,
            unjoined_outcomes: self.parked_outcomes.len() as u64,
            ends_before_start: self.ends_before_start,
            producers_not_parked: self.producers_not_parked,
            recovery,
            warnings,
        }
    }
}

/// Reads every record of `trace` once, in file order, into `visitor`.
///
/// # Errors
///
/// The reader's [`ReadError`] when a part of the file that must be read is unusable (a
/// damaged tail or block is recovered from and reported in [`ScanSummary::warnings`]).
pub fn scan_mapped(
    trace: &MappedTrace,
    visitor: &mut impl Visitor,
) -> Result<ScanSummary, ReadError> {
    scan_reader(trace.records()?, visitor)
}

/// Reads the trace at `path` once into `visitor`, streaming the file through a buffered
/// reader: a mapped file's pages count towards the process's resident memory as they are
/// read, so a 10M-region trace would cost its whole size; streamed, the pass holds one
/// few blocks at a time, decoded on a second thread ([`scan_reader_threaded`]).
/// [`scan_mapped`] reads a trace already mapped or held in memory. Submission numbers and
/// the session end's count of records are checked
/// ([`TraceReader::check_submission_numbers`]), as `info` reads a trace.
///
/// # Errors
///
/// The reader's [`ReadError`]: the file cannot be opened, has no valid header, or a read
/// fails.
pub fn scan(path: &Path, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
    // Checked as `info` reads a trace: what a damaged block took is counted alike.
    scan_reader_threaded(TraceReader::open(path)?.check_submission_numbers(), visitor)
}

/// The one pass of [`scan`] and [`scan_mapped`], over any reader (one that counts the bytes
/// it reads for a progress bar, say).
///
/// # Errors
///
/// The reader's [`ReadError`] when a part of the file that must be read is unusable.
pub fn scan_reader<R: std::io::Read>(
    mut reader: TraceReader<R>,
    visitor: &mut impl Visitor,
) -> Result<ScanSummary, ReadError> {
    let mut joiner = Joiner::new();
    for item in reader.by_ref() {
        let (_, record) = item?;
        joiner.push(&record, visitor);
    }
    let recovery = Some(*reader.recovery());
    let warnings = reader.warnings().to_vec();
    Ok(joiner.finish(visitor, recovery, warnings))
}

/// Threads decoding records blocks ahead of the reading thread
/// ([`hrx_capture::TraceReader::decode_ahead`]): the cores left beside the reading and
/// the joining thread, at most 3 (enough for the join to be what a pass waits for), at
/// least 1.
pub fn decode_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(2))
        .clamp(1, 3)
}

/// Records handed from the reading thread to the joining one at a time.
const BATCH: usize = 1024;

/// Batches decoded ahead of the join: bounds what the two threads hold between them.
const BATCHES_AHEAD: usize = 4;

/// [`scan_reader`] on several threads: the file is read on a second thread, its blocks
/// decompressed and decoded on [`decode_threads`] more (in parallel, handed out in file
/// order), while this one joins the records and runs `visitor`, a few batches behind. The
/// same records reach `visitor` in the same order, so the result is the same; on idle
/// cores the pass takes about as long as the join instead of the sum (one decoding pass of
/// a 10M-region trace is about 5.8 s of CPU). What is held between the threads is at most
/// [`BATCHES_AHEAD`] + 2 batches of [`BATCH`] records, and `decode_threads() + 2` decoded
/// blocks.
///
/// # Errors
///
/// The reader's [`ReadError`] when a part of the file that must be read is unusable.
pub fn scan_reader_threaded<R: std::io::Read + Send>(
    reader: TraceReader<R>,
    visitor: &mut impl Visitor,
) -> Result<ScanSummary, ReadError> {
    use std::sync::mpsc::{channel, sync_channel};
    type Batch = Result<Vec<Record>, ReadError>;
    let mut reader = reader.decode_ahead(decode_threads());
    std::thread::scope(|scope| {
        let (send, receive) = sync_channel::<Batch>(BATCHES_AHEAD);
        // Emptied batches go back, so their room is reused.
        let (give_back, take_back) = channel::<Vec<Record>>();
        let reading = scope.spawn(move || {
            let fresh = || {
                take_back
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH))
            };
            let mut batch = fresh();
            for item in reader.by_ref() {
                match item {
                    Ok((_, record)) => {
                        batch.push(record);
                        if batch.len() == BATCH {
                            let full = std::mem::replace(&mut batch, fresh());
                            if send.send(Ok(full)).is_err() {
                                return None;
                            }
                        }
                    }
                    Err(error) => {
                        let _ = send.send(Ok(batch));
                        let _ = send.send(Err(error));
                        return None;
                    }
                }
            }
            if !batch.is_empty() {
                let _ = send.send(Ok(batch));
            }
            Some((*reader.recovery(), reader.warnings().to_vec()))
        });
        let mut joiner = Joiner::new();
        let mut failed = None;
        while let Ok(batch) = receive.recv() {
            match batch {
                Ok(mut records) => {
                    // By reference: moving each record out (about 160 bytes) was a tenth
                    // of the joining thread's time.
                    for record in &records {
                        joiner.push(record, visitor);
                    }
                    records.clear();
                    let _ = give_back.send(records);
                }
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        // Ends the reading thread if it is still sending.
        drop(receive);
        let ended = reading
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if let Some(error) = failed {
            return Err(error);
        }
        let (recovery, warnings) = ended.unwrap_or_default();
        Ok(joiner.finish(visitor, Some(recovery), warnings))
    })
}

/// Reads records held in memory into `visitor` (tests, and traces recorded into a
/// [`hrx_capture::MemorySink`]).
pub fn scan_records<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    visitor: &mut impl Visitor,
) -> ScanSummary {
    let mut joiner = Joiner::new();
    for record in records {
        joiner.push(record, visitor);
    }
    joiner.finish(visitor, None, Vec::new())
}

mod ranges;

#[cfg(test)]
mod tests;
