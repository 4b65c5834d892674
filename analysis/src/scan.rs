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
//! read before its graph's `Prepared` (prepared on another thread; at most [`PARK_LIMIT`]). A timing that never
//! joins (its submission was never recorded, or arrived later than the window allows) is
//! counted in [`ScanSummary::unplaced_timings`], never dropped silently.

use crate::hash::IdMap;
use crate::index::{Index, LaneRef, PreparedRef, RegionRef};
use hrx_capture::schema::{
    DeviceSpan, FatalSignal, NodeIndex, PreparedId, Record, RegionIndex, RegionTiming, RuntimeId,
    Status, SubmissionIndex,
};
use hrx_capture::{MappedTrace, ReadError, Recovery, TraceReader, Warning};
use std::collections::VecDeque;
use std::path::Path;

/// Completed submissions kept joinable after their `SubmissionDone`.
pub const RETIRE_WINDOW: usize = 1 << 16;

/// Timings kept waiting for their `Submit`; past this, the oldest is counted unplaced.
pub const PARK_LIMIT: usize = 1 << 18;

/// How a submission or region ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
}

/// A region timing joined to its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinedSpan {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its submission.
    pub submission: SubmissionIndex,
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
        _runtime: RuntimeId,
        _submission: SubmissionIndex,
        _previous: Option<Outcome>,
        _outcome: Outcome,
    ) {
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
    /// When it started, ns since the session start.
    pub start_ns: u64,
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
    /// Operation timings whose submission or region was never found.
    pub unplaced_op_timings: u64,
    /// How the file ended (`None` for records read from memory).
    pub recovery: Option<Recovery>,
    /// Damage and skipped parts.
    pub warnings: Vec<Warning>,
}

#[derive(Clone, Copy, Debug)]
struct Live {
    prepared: Option<PreparedRef>,
    outcome: Option<Outcome>,
}

/// A timing waiting for its `Submit`: a region's, or an operation's (`Some(node)`).
type Parked = (RegionTiming, Option<NodeIndex>);

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
    parked_outcomes: IdMap<(RuntimeId, SubmissionIndex), Outcome>,
    /// Submits read before their graph's `Prepared`, oldest first.
    parked_submits: Vec<((RuntimeId, SubmissionIndex), PreparedId)>,
    records: u64,
    submissions: u64,
    session_ended: bool,
    fatal: Option<FatalSignal>,
    unplaced_timings: u64,
    /// Regions started and not timed yet (bounded by the regions in flight).
    started: IdMap<(RuntimeId, SubmissionIndex, RegionIndex), RunningRegion>,
    unplaced_op_timings: u64,
}

impl Joiner {
    /// An empty joiner.
    pub fn new() -> Joiner {
        Joiner::default()
    }

    /// The index so far.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Whether the session's end record was read.
    pub fn session_ended(&self) -> bool {
        self.session_ended
    }

    /// What [`Joiner::finish`] would return now, the joiner kept for more records (a trace
    /// still being written): timings waiting for their `Submit` are not counted unplaced,
    /// as it may still come.
    pub fn snapshot(&self, recovery: Option<Recovery>, warnings: Vec<Warning>) -> ScanSummary {
        let mut index = self.index.clone();
        index.label_regions();
        let mut running: Vec<RunningRegion> = self.started.values().copied().collect();
        running.sort_by_key(|r| (r.runtime, r.submission, r.region));
        ScanSummary {
            index,
            records: self.records,
            submissions: self.submissions,
            session_ended: self.session_ended,
            unplaced_timings: self.unplaced_timings,
            running,
            unplaced_op_timings: self.unplaced_op_timings,
            fatal: self.fatal,
            recovery,
            warnings,
        }
    }

    /// Takes one record.
    pub fn push(&mut self, record: &Record, visitor: &mut impl Visitor) {
        self.records += 1;
        self.index.push(record);
        visitor.record(&self.index, record);
        match record {
            Record::SessionEnd(_) => self.session_ended = true,
            Record::FatalSignal(f) => self.fatal = Some(*f),
            Record::Submit(s) => {
                self.submissions += 1;
                let key = (s.runtime, s.submission);
                match self.index.find_prepared(s.runtime, s.prepared) {
                    Some(prepared) => self.enter(key, Some(prepared), visitor),
                    // Its graph was prepared on another thread whose records were written out
                    // later: it waits for the `Prepared`, whose regions its timings need.
                    None => self.park_submit(key, s.prepared, visitor),
                }
            }
            Record::Prepared(p) if !self.parked_submits.is_empty() => {
                let prepared = self.index.find_prepared(p.runtime, p.prepared);
                let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parked_submits)
                    .into_iter()
                    .partition(|&(key, id)| (key.0, id) == (p.runtime, p.prepared));
                self.parked_submits = waiting;
                for (key, _) in ready {
                    self.enter(key, prepared, visitor);
                    // A region it started while it waited names its region now.
                    for r in self.started.values_mut() {
                        if (r.runtime, r.submission) == key && r.region_ref.is_none() {
                            r.region_ref = prepared.and_then(|p| self.index.region_of(p, r.region));
                        }
                    }
                }
            }
            Record::RegionStarted(r) => {
                let region_ref = self
                    .live
                    .get(&(r.runtime, r.submission))
                    .and_then(|live| live.prepared)
                    .and_then(|p| self.index.region_of(p, r.region));
                self.started.insert(
                    (r.runtime, r.submission, r.region),
                    RunningRegion {
                        runtime: r.runtime,
                        submission: r.submission,
                        region: r.region,
                        region_ref,
                        start_ns: r.time_ns,
                    },
                );
            }
            Record::RegionDone(d) => {
                self.started.remove(&(d.runtime, d.submission, d.region));
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
                if self.live.contains_key(&key) {
                    self.set_outcome(key, outcome, visitor);
                } else if self.parked_outcomes.len() < PARK_LIMIT {
                    self.parked_outcomes.insert(key, outcome);
                }
            }
            _ => {}
        }
    }

    /// Submission `key` of `prepared` is in flight: its parked timings and outcome join.
    fn enter(
        &mut self,
        key: (RuntimeId, SubmissionIndex),
        prepared: Option<PreparedRef>,
        visitor: &mut impl Visitor,
    ) {
        self.live.insert(
            key,
            Live {
                prepared,
                outcome: None,
            },
        );
        if let Some(parked) = self.parked_timings.remove(&key) {
            self.parked_count -= parked.len();
            for (t, node) in parked {
                self.place(&t, node, visitor);
            }
        }
        if let Some(outcome) = self.parked_outcomes.remove(&key) {
            self.set_outcome(key, outcome, visitor);
        }
    }

    /// Parks submission `key` until the `Prepared` of `prepared` is read; past
    /// [`PARK_LIMIT`] submits waiting, the oldest enters without its graph.
    fn park_submit(
        &mut self,
        key: (RuntimeId, SubmissionIndex),
        prepared: PreparedId,
        visitor: &mut impl Visitor,
    ) {
        if self.parked_submits.len() >= PARK_LIMIT {
            let (oldest, _) = self.parked_submits.remove(0);
            self.enter(oldest, None, visitor);
        }
        self.parked_submits.push((key, prepared));
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
        let joined = self
            .live
            .get(&(t.runtime, t.submission))
            .and_then(|live| live.prepared)
            .and_then(|p| Some((p, self.index.region_of(p, t.region)?)));
        let Some((prepared, region)) = joined else {
            self.count_unplaced(node);
            return;
        };
        let queue = self.index.region(region).queue;
        let lane = self.index.lane_of(t.runtime, queue);
        let span = JoinedSpan {
            runtime: t.runtime,
            submission: t.submission,
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
        outcome: Outcome,
        visitor: &mut impl Visitor,
    ) {
        let Some(live) = self.live.get_mut(&key) else {
            return;
        };
        let previous = live.outcome.replace(outcome);
        visitor.outcome(&self.index, key.0, key.1, previous, outcome);
        if previous.is_none() {
            self.retired.push_back(key);
            if self.retired.len() > RETIRE_WINDOW
                && let Some(old) = self.retired.pop_front()
            {
                self.live.remove(&old);
            }
        }
    }

    /// Ends the pass: parked timings that never joined are counted, labels assigned.
    pub fn finish(mut self, recovery: Option<Recovery>, warnings: Vec<Warning>) -> ScanSummary {
        // Submits whose `Prepared` never came: their timings cannot join.
        for (key, _) in std::mem::take(&mut self.parked_submits) {
            self.live.insert(
                key,
                Live {
                    prepared: None,
                    outcome: None,
                },
            );
        }
        let parked = std::mem::take(&mut self.parked_timings);
        for (_, node) in parked.into_values().flatten() {
            self.count_unplaced(node);
        }
        self.index.label_regions();
        let mut running: Vec<RunningRegion> = self.started.into_values().collect();
        running.sort_by_key(|r| (r.runtime, r.submission, r.region));
        ScanSummary {
            index: self.index,
            records: self.records,
            submissions: self.submissions,
            session_ended: self.session_ended,
            fatal: self.fatal,
            unplaced_timings: self.unplaced_timings,
            running,
            unplaced_op_timings: self.unplaced_op_timings,
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
/// [`scan_mapped`] reads a trace already mapped or held in memory.
///
/// # Errors
///
/// The reader's [`ReadError`]: the file cannot be opened, has no valid header, or a read
/// fails.
pub fn scan(path: &Path, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
    scan_reader_threaded(TraceReader::open(path)?, visitor)
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
    Ok(joiner.finish(recovery, warnings))
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
        Ok(joiner.finish(Some(recovery), warnings))
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
    joiner.finish(None, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{PipelineSpec, REGIONS_PER_SUBMISSION, pipeline};

    #[derive(Default)]
    struct Count {
        spans: u64,
        outcomes: u64,
    }

    impl Visitor for Count {
        fn span(&mut self, _: &Index, _: &JoinedSpan) {
            self.spans += 1;
        }
        fn outcome(
            &mut self,
            _: &Index,
            _: RuntimeId,
            _: SubmissionIndex,
            _: Option<Outcome>,
            _: Outcome,
        ) {
            self.outcomes += 1;
        }
    }

    /// Everything a visitor is handed, in order.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Visitor for Log {
        fn record(&mut self, _: &Index, record: &Record) {
            self.0.push(format!("{record:?}"));
        }
        fn span(&mut self, _: &Index, span: &JoinedSpan) {
            self.0.push(format!("{span:?}"));
        }
    }

    #[test]
    fn the_threaded_pass_hands_the_same_records_in_the_same_order() {
        use hrx_capture::{MemorySink, Recorder, RecorderOptions};
        let sink = MemorySink::new();
        let options = RecorderOptions {
            block_bytes: 1 << 10,
            compression_level: None,
            // Wait for room rather than drop: every record is written.
            full_buffer_wait: std::time::Duration::from_secs(60),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        for record in pipeline(PipelineSpec::ops(3 * BATCH as u64)) {
            recorder.record(&record);
        }
        assert_eq!(recorder.close().unwrap().dropped_records, 0);
        let bytes = sink.contents();
        // Whole, damaged in the middle, and cut short.
        let mut damaged = bytes.clone();
        let middle = damaged.len() / 2;
        damaged[middle..middle + 64].fill(0xA5);
        let cut = &bytes[..bytes.len() * 2 / 3];
        for (i, file) in [&bytes[..], &damaged[..], cut].into_iter().enumerate() {
            let (mut one, mut two) = (Log::default(), Log::default());
            let a = scan_reader(TraceReader::new(file).unwrap(), &mut one);
            let b = scan_reader_threaded(TraceReader::new(file).unwrap(), &mut two);
            assert!(one.0 == two.0, "{} against {}", one.0.len(), two.0.len());
            // The whole trace: more than a batch.
            assert!(i > 0 || two.0.len() > 3 * BATCH, "{}", two.0.len());
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.records, b.records);
                    assert_eq!(a.unplaced_timings, b.unplaced_timings);
                    assert_eq!(a.recovery, b.recovery);
                    assert_eq!(a.warnings, b.warnings);
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{a:?} against {b:?}"),
            }
        }
    }

    #[test]
    fn timings_written_before_their_submit_still_join() {
        let records: Vec<Record> = pipeline(PipelineSpec::ops(40)).collect();
        // Move every Submit after the records of its submission (another thread's ring
        // written out later).
        let mut reordered = Vec::new();
        let mut held = None;
        for r in records {
            match r {
                Record::Submit(_) => {
                    if let Some(s) = held.replace(r) {
                        reordered.push(s);
                    }
                }
                Record::SubmissionDone(_) => {
                    reordered.push(r);
                    reordered.extend(held.take());
                }
                _ => reordered.push(r),
            }
        }
        let mut count = Count::default();
        let summary = scan_records(&reordered, &mut count);
        assert_eq!(summary.unplaced_timings, 0);
        assert_eq!(count.spans, 40);
        assert_eq!(count.outcomes, 10);
    }

    #[test]
    fn submits_written_before_their_prepared_still_join() {
        let records: Vec<Record> = pipeline(PipelineSpec::ops(40)).collect();
        // The graph's definitions last (another thread built and prepared it, and its
        // ring went out after the submitting thread's and the workers'): its submits,
        // timings and outcomes all come first. Every timing was unplaced.
        let definition = |r: &Record| {
            matches!(
                r,
                Record::Prepared(_)
                    | Record::GraphOp(_)
                    | Record::KernelLoaded(_)
                    | Record::BufferCreated(_)
            )
        };
        let mut reordered: Vec<Record> =
            records.iter().filter(|r| !definition(r)).cloned().collect();
        reordered.extend(records.iter().filter(|r| definition(r)).cloned());
        let mut count = Count::default();
        let summary = scan_records(&reordered, &mut count);
        assert_eq!(summary.unplaced_timings, 0);
        assert_eq!(count.spans, 40);
        assert_eq!(count.outcomes, 10);
    }

    #[test]
    fn state_stays_bounded_by_the_window_not_the_trace() {
        let submissions = 3 * RETIRE_WINDOW as u64;
        let mut joiner = Joiner::new();
        let mut count = Count::default();
        for r in pipeline(PipelineSpec::ops(submissions * REGIONS_PER_SUBMISSION)) {
            joiner.push(&r, &mut count);
            assert!(joiner.live.len() <= RETIRE_WINDOW + 2);
        }
        assert!(joiner.retired.len() <= RETIRE_WINDOW);
        let summary = joiner.finish(None, Vec::new());
        assert_eq!(count.spans, submissions * REGIONS_PER_SUBMISSION);
        assert_eq!(summary.unplaced_timings, 0);
    }

    #[test]
    fn a_timing_of_an_unknown_submission_is_counted_not_dropped() {
        let mut records: Vec<Record> = pipeline(PipelineSpec::ops(8)).collect();
        records.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 1));
        let mut count = Count::default();
        let summary = scan_records(&records, &mut count);
        assert_eq!(summary.unplaced_timings, REGIONS_PER_SUBMISSION);
        assert_eq!(count.spans, 4);
    }
}
