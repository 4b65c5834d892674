//! A trace as Chrome trace-event JSON ([`Format::Chrome`]) or as a Perfetto protobuf
//! `Trace` ([`Format::Perfetto`]), both of which Perfetto's UI opens (`hrx-trace export`).
//!
//! # What is exported
//!
//! - **Tracks.** Each runtime is a process (`pid` = runtime id); each of its queues on which
//!   a region ran is a track (`GPU Upload`, `GPU Compute`, `GPU Download`, `NPU`, `Host`), and
//!   an `Events` track holds the instant events when there are any.
//! - **Slices.** One per region timing (host clock, ns in the trace, µs in the JSON), named
//!   by the region's label as the timeline names it ([`crate::label_region`]), with
//!   arguments: submission, region, slot, kind, the region's buffer ranges (`buf 3 [0..64000)
//!   read-write`) and its hazards (`RAW buf 2 [0..192000) on region 0`). An operation timing
//!   becomes a slice nested in its region's.
//! - **Flows** (arrows producer → consumer), one per distinct pair of timed regions: a
//!   region dependency of the prepared graph (within one submission) or a cross-submission
//!   wait (a region waiting on a region of an earlier submission). Dependencies between
//!   operations inside one native graph have no timings of their own and are listed in the
//!   slice's arguments only.
//! - **Instant events** on the `Events` track: failed and cancelled regions, quarantine,
//!   poison, unhealthy copy streams, injected faults, refused submits, lost records,
//!   capture fences and recorder waits, with the recorded cause; and the signal that ended
//!   the process (`fatal signal: SIGSEGV`, from a [`FatalSignal`] record) on the first
//!   runtime's events track.
//! - **Running regions.** A region that started and has no timing when the trace ends (the
//!   region a crash or a hang was in) is a slice from its start to the trace's end (its last
//!   host time), named `LABEL (running at end)` with the argument `state`: `still running
//!   when the trace ends`, as the timeline draws it: its length is not a duration.
//!
//! # Streaming, in bounded memory
//!
//! Both passes read through [`crate::scan_reader`], so every timing is joined to its
//! submission, prepared graph and region by the one [`crate::Joiner`]. Pass 1
//! ([`ExportPlan::build`]) keeps the structural [`Index`], each region's argument texts and
//! which tracks have something on them: state that grows with graphs and labels. Pass 2
//! ([`write`]) streams every slice and event to the output.
//!
//! A flow needs both of its ends timed, and the producer's slice must carry it, so pass 2
//! holds each submission's region timings back until the submission is settled: a
//! submission of runtime `r` is written once a `Submit` two [`WINDOW`]s later is read,
//! and its cross-submission flows are decided then, from the waits of the submissions
//! up to [`WINDOW`] after it (all read by then, as records of one submission lie within a
//! window of each other in the file; a writer thread flushes every 100 ms). What is held
//! is at most two windows of submissions. A wait on a submission more than a window
//! earlier, or a timing read after its submission was written, is still exported (the
//! wait in the slice's hazards, the timing as a slice) without its flow, and counted in
//! [`ExportCounts::flows_not_drawn`]: the caller says so.

mod chrome;
mod perfetto;

use crate::index::{Index, QUEUES, RegionRef, queue_name, queue_slot};
use crate::scan::{JoinedSpan, RunningRegion, ScanSummary, Visitor, scan_reader};
use hrx_capture::schema::{
    Access, CrossWait, FatalSignal, NodeIndex, Record, RefusalKind, RegionIndex, RegionKind,
    RuntimeId, SignalWitness, Status, SubmissionIndex, Use,
};
use hrx_capture::{ReadError, Recovery, TraceReader, Warning};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};

/// Submissions per settling window (see the module docs).
pub const WINDOW: u64 = 1 << 14;

/// Track slot of the `Events` track, after the five queues.
const EVENTS_SLOT: usize = QUEUES.len();

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Chrome trace-event JSON (`{"traceEvents": [...]}`).
    Chrome,
    /// A Perfetto protobuf `Trace`.
    Perfetto,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The trace could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The output could not be written.
    #[error("{0}")]
    Write(#[from] io::Error),
}

/// What was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Tracks declared (queues and events tracks, not processes).
    pub tracks: usize,
    /// Slices (region and operation timings).
    pub slices: u64,
    /// Flows drawn.
    pub flows: u64,
    /// Instant events.
    pub instants: u64,
    /// Cross-submission waits and timings exported without their flow: the wait named a
    /// submission more than [`WINDOW`] earlier, or the timing was read after its
    /// submission had been written.
    pub flows_not_drawn: u64,
}

/// One region's argument texts, computed once per prepared graph.
#[derive(Debug)]
struct RegionArgs {
    kind: RegionKind,
    operations: u64,
    uses: Vec<String>,
    /// Dependencies on earlier regions of the graph, as text.
    hazards: Vec<String>,
    internal_edges: u64,
    copy_bytes: u64,
    /// Distinct producer regions of its dependencies.
    producers: Vec<u32>,
    /// Distinct regions whose dependencies name it.
    consumers: Vec<u32>,
}

/// A timeline row: one queue of one runtime, or its events.
#[derive(Clone, Debug)]
pub(crate) struct Track {
    runtime: RuntimeId,
    /// 0..5: the queue's position in [`QUEUES`]; 5: events.
    slot: usize,
    name: &'static str,
    /// The runtime's display name.
    process: String,
}

impl Track {
    /// A stable number for the track: Chrome's `tid`.
    fn tid(&self) -> u32 {
        self.slot as u32 + 1
    }
}

/// Perfetto uuid of the process track of `runtime`.
fn process_uuid(runtime: RuntimeId) -> u64 {
    (u64::from(runtime.0) + 1) << 8
}

/// Perfetto uuid of track `slot` of `runtime`.
fn track_uuid(runtime: RuntimeId, slot: usize) -> u64 {
    process_uuid(runtime) | (slot as u64 + 1)
}

/// Pass 1: what names things, and which tracks are used (see the module docs).
#[derive(Debug)]
pub struct ExportPlan {
    index: Index,
    regions: Vec<RegionArgs>,
    tracks: Vec<Track>,
    /// Damage and skipped parts of the file, as read in pass 1.
    pub warnings: Vec<Warning>,
    /// How the file ended.
    pub recovery: Option<Recovery>,
    /// Region and operation timings that never joined a recorded submission and region:
    /// they are not exported.
    pub unplaced_timings: u64,
    /// Regions still running when the trace ends, with a known region.
    running: Vec<RunningRegion>,
    /// The signals that ended the process, and the runtime whose events track shows them.
    fatal: Vec<(RuntimeId, FatalSignal)>,
    /// The trace's last host time, ns: where a running region's slice ends.
    end_ns: u64,
}

#[derive(Default)]
struct Pass1 {
    runtimes: BTreeMap<RuntimeId, String>,
    used: BTreeMap<RuntimeId, [bool; QUEUES.len() + 1]>,
    regions: Vec<RegionArgs>,
    fatal: Vec<FatalSignal>,
    end_ns: u64,
}

impl Visitor for Pass1 {
    fn record(&mut self, _: &Index, record: &Record) {
        if let Some(time_ns) = crate::dump::host_time_ns(record) {
            self.end_ns = self.end_ns.max(time_ns);
        }
        match record {
            Record::FatalSignal(f) => self.fatal.push(*f),
            Record::RuntimeStart(r) => {
                self.runtimes.insert(
                    r.runtime,
                    format!("hrx runtime {} ({}: {})", r.runtime, r.backend, r.device),
                );
            }
            Record::Prepared(p) => {
                let first = self.regions.len();
                for r in &p.regions {
                    let mut producers: Vec<u32> =
                        r.dependencies.iter().map(|e| e.producer).collect();
                    producers.sort_unstable();
                    producers.dedup();
                    let hazards = r
                        .dependencies
                        .iter()
                        .map(|e| {
                            format!(
                                "{} buf {} [{}..{}) on region {}",
                                e.kind.abbreviation(),
                                e.buffer,
                                e.start,
                                e.end,
                                e.producer
                            )
                        })
                        .collect();
                    self.regions.push(RegionArgs {
                        kind: r.kind,
                        operations: r.nodes.len() as u64,
                        uses: r.uses.iter().map(use_text).collect(),
                        hazards,
                        internal_edges: r.internal_edges.len() as u64,
                        copy_bytes: r.copy_bytes,
                        producers,
                        consumers: Vec::new(),
                    });
                }
                let graph = &mut self.regions[first..];
                for consumer in 0..graph.len() {
                    for p in graph[consumer].producers.clone() {
                        if let Some(producer) = graph.get_mut(p as usize) {
                            producer.consumers.push(consumer as u32);
                        }
                    }
                }
            }
            other => {
                if let Some(runtime) = instant_runtime(other) {
                    self.used.entry(runtime).or_default()[EVENTS_SLOT] = true;
                }
            }
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let slot = queue_slot(index.region(span.region).queue);
        self.used.entry(span.runtime).or_default()[slot] = true;
    }

    fn op_span(&mut self, index: &Index, span: &JoinedSpan, _: NodeIndex) {
        self.span(index, span);
    }
}

impl ExportPlan {
    /// Pass 1 over `reader`.
    ///
    /// # Errors
    ///
    /// The reader's [`ReadError`] when a part of the file that must be read is unusable.
    pub fn build<R: Read>(reader: TraceReader<R>) -> Result<ExportPlan, ReadError> {
        ExportPlan::build_from(reader)
    }

    fn build_from(source: impl Source) -> Result<ExportPlan, ReadError> {
        let mut pass = Pass1::default();
        let summary = source.scan(&mut pass)?;
        let running: Vec<RunningRegion> = summary
            .running
            .iter()
            .filter(|r| r.region_ref.is_some())
            .copied()
            .collect();
        for r in &running {
            if let Some(region) = r.region_ref {
                let slot = queue_slot(summary.index.region(region).queue);
                pass.used.entry(r.runtime).or_default()[slot] = true;
            }
        }
        // Session-level: on the first runtime's events track.
        let first = pass
            .runtimes
            .keys()
            .next()
            .or_else(|| pass.used.keys().next())
            .copied()
            .unwrap_or_default();
        let fatal: Vec<(RuntimeId, FatalSignal)> = pass.fatal.iter().map(|&f| (first, f)).collect();
        if !fatal.is_empty() {
            pass.used.entry(first).or_default()[EVENTS_SLOT] = true;
        }
        let mut tracks = Vec::new();
        for (&runtime, used) in &pass.used {
            let process = pass
                .runtimes
                .get(&runtime)
                .cloned()
                .unwrap_or_else(|| format!("hrx runtime {runtime}"));
            for (slot, _) in used.iter().enumerate().filter(|(_, used)| **used) {
                tracks.push(Track {
                    runtime,
                    slot,
                    name: QUEUES.get(slot).map_or("Events", |&q| queue_name(q)),
                    process: process.clone(),
                });
            }
        }
        Ok(ExportPlan {
            index: summary.index,
            regions: pass.regions,
            tracks,
            warnings: summary.warnings,
            recovery: summary.recovery,
            unplaced_timings: summary.unplaced_timings + summary.unplaced_op_timings,
            running,
            fatal,
            end_ns: pass.end_ns,
        })
    }
}

/// A slice argument.
#[derive(Clone, Debug)]
pub(crate) enum Arg<'a> {
    Uint(u64),
    Str(Cow<'a, str>),
    List(Vec<Cow<'a, str>>),
}

/// A slice (a timed region or operation).
#[derive(Debug)]
pub(crate) struct Slice<'a> {
    runtime: RuntimeId,
    slot: usize,
    name: &'a str,
    category: &'static str,
    start_ns: u64,
    end_ns: u64,
    args: Vec<(&'static str, Arg<'a>)>,
    /// Flows starting here.
    flows_out: &'a [u64],
    /// Flows ending here.
    flows_in: &'a [u64],
}

/// An instant event.
#[derive(Debug)]
pub(crate) struct Instant<'a> {
    runtime: RuntimeId,
    name: &'static str,
    time_ns: u64,
    args: Vec<(&'static str, Arg<'a>)>,
}

/// What an output format does with the stream of tracks, slices and instants.
trait Sink {
    /// Declares every track, before anything else.
    fn tracks(&mut self, tracks: &[Track]) -> io::Result<()>;
    /// Writes one slice.
    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()>;
    /// Writes one instant event.
    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()>;
    /// Ends the output and flushes it.
    fn finish(&mut self) -> io::Result<()>;
}

/// Pass 2: streams every timing and event of `reader` (the same trace as the plan's) into
/// `out` in `format`. Give `out` a large buffer: it is written in small pieces.
///
/// # Errors
///
/// [`ExportError::Read`] when the trace cannot be read, [`ExportError::Write`] when the
/// output cannot be written.
pub fn write<R: Read, W: Write>(
    plan: &ExportPlan,
    reader: TraceReader<R>,
    format: Format,
    out: W,
) -> Result<ExportCounts, ExportError> {
    write_from(plan, format, out, reader)
}

/// Where a pass reads records: a trace file, or records in memory (tests).
trait Source {
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError>;
}

impl<R: Read> Source for TraceReader<R> {
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
        scan_reader(self, visitor)
    }
}

impl Source for &[Record] {
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
        Ok(crate::scan::scan_records(self, visitor))
    }
}

fn write_from<W: Write>(
    plan: &ExportPlan,
    format: Format,
    out: W,
    source: impl Source,
) -> Result<ExportCounts, ExportError> {
    match format {
        Format::Chrome => write_to(plan, chrome::Writer::new(out), source),
        Format::Perfetto => write_to(plan, perfetto::Writer::new(out), source),
    }
}

fn write_to<S: Sink>(
    plan: &ExportPlan,
    sink: S,
    source: impl Source,
) -> Result<ExportCounts, ExportError> {
    let mut pass = Pass2 {
        plan,
        sink,
        counts: ExportCounts {
            tracks: plan.tracks.len(),
            ..ExportCounts::default()
        },
        runtimes: HashMap::new(),
        error: None,
    };
    pass.sink.tracks(&plan.tracks)?;
    source.scan(&mut pass)?;
    let runtimes: Vec<RuntimeId> = pass.runtimes.keys().copied().collect();
    for runtime in runtimes {
        pass.settle(runtime, u64::MAX);
    }
    pass.at_the_end();
    if let Some(error) = pass.error.take() {
        return Err(error.into());
    }
    pass.sink.finish()?;
    Ok(pass.counts)
}

/// A submission held back until it settles.
#[derive(Debug, Default)]
struct Held {
    slot: u32,
    /// Its region timings, with each one's region index in the prepared graph.
    spans: Vec<(RegionIndex, JoinedSpan)>,
    /// Its waits on earlier submissions.
    waits: Vec<CrossWait>,
    /// Waits of later submissions on it: (consumer submission, consumer region, its
    /// region), distinct.
    waited_by: Vec<(SubmissionIndex, RegionIndex, RegionIndex)>,
    /// Cross-submission flows ending at its regions, decided when their producer settled.
    flows_in: Vec<(RegionIndex, u64)>,
}

impl Held {
    fn timed(&self, region: RegionIndex) -> bool {
        self.spans.iter().any(|(r, _)| *r == region)
    }
}

/// Pass 2's submissions of one runtime.
#[derive(Debug, Default)]
struct RuntimeHeld {
    held: BTreeMap<u64, Held>,
    /// Every submission below this one was written.
    written_below: u64,
}

struct Pass2<'p, S> {
    plan: &'p ExportPlan,
    sink: S,
    counts: ExportCounts,
    runtimes: HashMap<RuntimeId, RuntimeHeld>,
    /// The first write error; the pass stops writing after it.
    error: Option<io::Error>,
}

impl<S: Sink> Pass2<'_, S> {
    /// The held submission, or `None` when it was already written.
    fn held(&mut self, runtime: RuntimeId, submission: SubmissionIndex) -> Option<&mut Held> {
        let rt = self.runtimes.entry(runtime).or_default();
        (submission.0 >= rt.written_below).then(|| rt.held.entry(submission.0).or_default())
    }

    /// Writes every submission of `runtime` below `below - 2 * WINDOW`, oldest first.
    fn settle(&mut self, runtime: RuntimeId, newest: u64) {
        let horizon = newest.saturating_sub(2 * WINDOW);
        loop {
            let Some(rt) = self.runtimes.get_mut(&runtime) else {
                return;
            };
            let Some(entry) = rt.held.first_entry() else {
                rt.written_below = rt.written_below.max(horizon);
                return;
            };
            if *entry.key() >= horizon && newest != u64::MAX {
                rt.written_below = rt.written_below.max(horizon);
                return;
            }
            let submission = *entry.key();
            let held = entry.remove();
            rt.written_below = rt.written_below.max(submission + 1);
            self.emit(runtime, SubmissionIndex(submission), held);
        }
    }

    /// Writes a settled submission's region slices with their flows.
    fn emit(&mut self, runtime: RuntimeId, submission: SubmissionIndex, held: Held) {
        // Cross-submission flows out: the consumers are still held (they are later).
        let mut out_cross: Vec<(RegionIndex, u64)> = Vec::new();
        if !held.waited_by.is_empty()
            && let Some(rt) = self.runtimes.get_mut(&runtime)
        {
            for &(consumer_sub, consumer_region, region) in &held.waited_by {
                if !held.timed(region) {
                    continue;
                }
                let Some(consumer) = rt.held.get_mut(&consumer_sub.0) else {
                    continue;
                };
                if consumer.timed(consumer_region) {
                    let id = flow_id(
                        1,
                        (runtime, submission, region),
                        (runtime, consumer_sub, consumer_region),
                    );
                    out_cross.push((region, id));
                    consumer.flows_in.push((consumer_region, id));
                }
            }
        }
        let mut flows_in = Vec::new();
        let mut flows_out = Vec::new();
        let plan = self.plan;
        for &(region, ref span) in &held.spans {
            let args = &plan.regions[span.region.0 as usize];
            let here = |r: u32| (runtime, submission, RegionIndex(r));
            flows_in.clear();
            flows_out.clear();
            let timed = |r: u32| held.timed(RegionIndex(r));
            flows_in.extend(
                args.producers
                    .iter()
                    .filter(|&&p| timed(p))
                    .map(|&p| flow_id(0, here(p), here(region.0))),
            );
            flows_out.extend(
                args.consumers
                    .iter()
                    .filter(|&&c| timed(c))
                    .map(|&c| flow_id(0, here(region.0), here(c))),
            );
            let mut hazards: Vec<Cow<'_, str>> = args
                .hazards
                .iter()
                .map(|h| Cow::Borrowed(h.as_str()))
                .collect();
            for w in held.waits.iter().filter(|w| w.region == region) {
                hazards.push(Cow::Owned(format!(
                    "{} buf {} [{}..{}) on submission {} region {}",
                    w.kind.abbreviation(),
                    w.buffer,
                    w.start,
                    w.end,
                    w.on_submission,
                    w.on_region
                )));
            }
            flows_in.extend(
                held.flows_in
                    .iter()
                    .filter(|(r, _)| *r == region)
                    .map(|&(_, id)| id),
            );
            flows_out.extend(
                out_cross
                    .iter()
                    .filter(|(r, _)| *r == region)
                    .map(|&(_, id)| id),
            );
            let slice = region_slice(
                plan, span, region, held.slot, hazards, &flows_in, &flows_out,
            );
            self.slice(&slice);
        }
    }

    /// Writes what the trace's end shows: each region still running (a slice to the end)
    /// and the signal that ended the process.
    fn at_the_end(&mut self) {
        let plan = self.plan;
        for r in &plan.running {
            let Some(region) = r.region_ref else { continue };
            let info = plan.index.region(region);
            let span = JoinedSpan {
                runtime: r.runtime,
                submission: r.submission,
                prepared: info.prepared,
                region,
                lane: crate::index::LaneRef(0),
                start_ns: r.start_ns,
                end_ns: plan.end_ns.max(r.start_ns),
                device: None,
            };
            let hazards = plan.regions[region.0 as usize]
                .hazards
                .iter()
                .map(|h| Cow::Borrowed(h.as_str()))
                .collect();
            let mut slice = region_slice(plan, &span, r.region, 0, hazards, &[], &[]);
            slice.args.retain(|(name, _)| *name != "slot");
            slice.args.push((
                "state",
                Arg::Str(Cow::Borrowed("still running when the trace ends")),
            ));
            let name = format!("{} (running at end)", slice.name);
            slice.name = &name;
            self.slice(&slice);
        }
        for &(runtime, f) in &plan.fatal {
            if self.error.is_some() {
                return;
            }
            let signal = hrx_capture::schema::signal_name(f.signal)
                .map_or_else(|| format!("signal {}", f.signal), str::to_owned);
            let mut args = vec![
                ("signal", Arg::Str(Cow::Owned(signal))),
                (
                    "seen_by",
                    Arg::Str(Cow::Borrowed(match f.witness {
                        SignalWitness::Handler => "the process's own handler",
                        SignalWitness::Parent => "hrx-trace record (the process's parent)",
                    })),
                ),
            ];
            if let Some(address) = f.fault_address {
                args.push((
                    "fault_address",
                    Arg::Str(Cow::Owned(format!("{address:#x}"))),
                ));
            }
            let instant = Instant {
                runtime,
                name: "fatal signal",
                time_ns: f.time_ns,
                args,
            };
            self.counts.instants += 1;
            if let Err(e) = self.sink.instant(&instant) {
                self.error = Some(e);
            }
        }
    }

    fn slice(&mut self, slice: &Slice<'_>) {
        if self.error.is_some() {
            return;
        }
        self.counts.slices += 1;
        self.counts.flows += slice.flows_out.len() as u64;
        if let Err(e) = self.sink.slice(slice) {
            self.error = Some(e);
        }
    }
}

impl<S: Sink> Visitor for Pass2<'_, S> {
    fn record(&mut self, _: &Index, record: &Record) {
        match record {
            Record::Submit(s) => {
                if let Some(held) = self.held(s.runtime, s.submission) {
                    held.slot = s.slot;
                }
                self.settle(s.runtime, s.submission.0);
            }
            Record::CrossWait(w) => {
                let (consumer, producer) = (w.submission, w.on_submission);
                match self.held(w.runtime, consumer) {
                    Some(held) => held.waits.push(*w),
                    // Its timing was written already: the slice's hazards miss it too.
                    None => self.counts.flows_not_drawn += 1,
                }
                let pair = (consumer, w.region, w.on_region);
                match self.held(w.runtime, producer) {
                    Some(held) => {
                        if !held.waited_by.contains(&pair) {
                            held.waited_by.push(pair);
                        }
                    }
                    None => self.counts.flows_not_drawn += 1,
                }
            }
            other => {
                if self.error.is_none()
                    && let Some(instant) = instant(other)
                {
                    self.counts.instants += 1;
                    if let Err(e) = self.sink.instant(&instant) {
                        self.error = Some(e);
                    }
                }
            }
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let region = index.region(span.region).index;
        match self.held(span.runtime, span.submission) {
            Some(held) => held.spans.push((region, *span)),
            None => {
                // Its submission was written already: a slice without flows.
                self.counts.flows_not_drawn += 1;
                let plan = self.plan;
                let slice = region_slice(plan, span, region, 0, Vec::new(), &[], &[]);
                self.slice(&slice);
            }
        }
    }

    fn op_span(&mut self, _: &Index, span: &JoinedSpan, node: NodeIndex) {
        let index = &self.plan.index;
        let info = index.region(span.region);
        let p = &index.prepared()[info.prepared.0 as usize];
        let name: Cow<'_, str> = match index.op(p.runtime, p.graph, node) {
            Some(op) => Cow::Owned(index.op_name(p.runtime, op)),
            None => Cow::Owned(format!("op {node}")),
        };
        let slice = Slice {
            runtime: span.runtime,
            slot: queue_slot(info.queue),
            name: &name,
            category: "operation",
            start_ns: span.start_ns,
            end_ns: span.end_ns.max(span.start_ns),
            args: vec![
                ("submission", Arg::Uint(span.submission.0)),
                ("region", Arg::Uint(info.index.0.into())),
                ("node", Arg::Uint(node.0.into())),
            ],
            flows_out: &[],
            flows_in: &[],
        };
        self.slice(&slice);
    }
}

/// A region of one submission.
type Key = (RuntimeId, SubmissionIndex, RegionIndex);

/// A flow id, the same for both ends: a mix of the edge, 53 bits (exact in JSON numbers).
/// A fixed mix (splitmix64's finalizer over the fields), not a keyed hasher: the ids are
/// the same in every run, and cheap at a million flows a second.
fn flow_id(tag: u8, producer: Key, consumer: Key) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let fields = [
        u64::from(tag),
        u64::from(producer.0.0),
        producer.1.0,
        u64::from(producer.2.0),
        u64::from(consumer.0.0),
        consumer.1.0,
        u64::from(consumer.2.0),
    ];
    let h = fields
        .iter()
        .fold(0x9e37_79b9_7f4a_7c15, |h, &f| mix(h ^ f).wrapping_add(f));
    (h & ((1 << 53) - 1)).max(1)
}

fn region_slice<'a>(
    plan: &'a ExportPlan,
    span: &JoinedSpan,
    index_in_graph: RegionIndex,
    slot: u32,
    hazards: Vec<Cow<'a, str>>,
    flows_in: &'a [u64],
    flows_out: &'a [u64],
) -> Slice<'a> {
    let region: RegionRef = span.region;
    let args = &plan.regions[region.0 as usize];
    let info = plan.index.region(region);
    let name = plan
        .index
        .label(region)
        .and_then(|l| plan.index.labels().get(l.0 as usize))
        .map_or("region", String::as_str);
    let mut list = vec![
        ("submission", Arg::Uint(span.submission.0)),
        ("region", Arg::Uint(index_in_graph.0.into())),
        ("slot", Arg::Uint(slot.into())),
        ("kind", Arg::Str(Cow::Borrowed(kind_name(args.kind)))),
        ("operations", Arg::Uint(args.operations)),
        (
            "uses",
            Arg::List(
                args.uses
                    .iter()
                    .map(|u| Cow::Borrowed(u.as_str()))
                    .collect(),
            ),
        ),
        ("hazards", Arg::List(hazards)),
    ];
    if args.internal_edges > 0 {
        list.push(("internal_edges", Arg::Uint(args.internal_edges)));
    }
    if args.copy_bytes > 0 {
        list.push(("copy_bytes", Arg::Uint(args.copy_bytes)));
    }
    if let Some(device) = span.device {
        list.push((
            "device_ns",
            Arg::Uint(device.end_ns.saturating_sub(device.start_ns)),
        ));
    }
    Slice {
        runtime: span.runtime,
        slot: queue_slot(info.queue),
        name,
        category: "region",
        start_ns: span.start_ns,
        end_ns: span.end_ns.max(span.start_ns),
        args: list,
        flows_out,
        flows_in,
    }
}

/// The runtime whose events track shows `record`, if it is an instant event.
fn instant_runtime(record: &Record) -> Option<RuntimeId> {
    Some(match record {
        Record::RegionDone(d) if !matches!(d.status, Status::Ok) => d.runtime,
        Record::Quarantine(q) => q.runtime,
        Record::RecordsLost(_) => RuntimeId(0),
        Record::RecorderWait(w) => w.runtime.unwrap_or_default(),
        Record::CaptureFence(f) => f.runtime,
        Record::DigestSpan(d) => d.runtime,
        Record::Poison(p) => p.runtime,
        Record::CopyStreamUnhealthy(c) => c.runtime,
        Record::FaultInjected(f) => f.runtime,
        Record::SubmitRefused(r) => r.runtime,
        _ => return None,
    })
}

/// The instant event of a record, if it is one.
fn instant(record: &Record) -> Option<Instant<'_>> {
    fn str(s: &str) -> Arg<'_> {
        Arg::Str(Cow::Borrowed(s))
    }
    let sub = |s: Option<SubmissionIndex>| s.map(|s| ("submission", Arg::Uint(s.0)));
    let region = |r: Option<RegionIndex>| r.map(|r| ("region", Arg::Uint(r.0.into())));
    let runtime = instant_runtime(record)?;
    let (name, time_ns, args) = match record {
        Record::RegionDone(d) => {
            let (name, text) = match &d.status {
                Status::Ok => return None,
                Status::Failed { error } => ("failed", error),
                Status::Cancelled { reason } => ("cancelled", reason),
            };
            let args = vec![
                ("submission", Arg::Uint(d.submission.0)),
                ("region", Arg::Uint(d.region.0.into())),
                ("cause", str(text)),
            ];
            (name, d.time_ns, args)
        }
        Record::Quarantine(q) => {
            let mut args = vec![("prepared", Arg::Uint(q.prepared.0))];
            args.extend(sub(q.submission));
            args.extend(region(q.region));
            args.push(("cause", str(&q.cause)));
            ("quarantine", q.time_ns, args)
        }
        // Session-level: shown on the first runtime's events track, at the count's time.
        Record::RecordsLost(lost) => {
            let kinds = lost
                .by_kind
                .iter()
                .map(|k| Cow::Owned(format!("{} {}", k.kind, k.records)))
                .collect();
            let args = vec![
                ("records", Arg::Uint(lost.total)),
                ("by_kind", Arg::List(kinds)),
                ("lossy_mode", Arg::Str(Cow::Owned(lost.lossy.to_string()))),
            ];
            ("records lost", lost.time_ns, args)
        }
        Record::RecorderWait(w) => {
            let mut args = vec![
                ("thread", Arg::Uint(w.thread.into())),
                ("thread_name", str(&w.thread_name)),
                ("wait_ns", Arg::Uint(w.end_ns.saturating_sub(w.start_ns))),
            ];
            args.extend(sub(w.submission));
            args.extend(region(w.region));
            ("recorder wait", w.start_ns, args)
        }
        Record::CaptureFence(f) => {
            let args = vec![
                ("submission", Arg::Uint(f.submission.0)),
                ("region", Arg::Uint(f.region.0.into())),
                ("buffer", Arg::Uint(f.buffer.0)),
                ("wait_ns", Arg::Uint(f.end_ns.saturating_sub(f.start_ns))),
            ];
            ("capture fence", f.start_ns, args)
        }
        Record::DigestSpan(d) => {
            let args = vec![
                ("submission", Arg::Uint(d.submission.0)),
                ("buffer", Arg::Uint(d.buffer.0)),
                ("start", Arg::Uint(d.start)),
                ("end", Arg::Uint(d.end)),
                ("took_ns", Arg::Uint(d.end_ns.saturating_sub(d.start_ns))),
            ];
            ("output digest", d.start_ns, args)
        }
        Record::Poison(p) => {
            let args = vec![("buffer", Arg::Uint(p.buffer.0)), ("cause", str(&p.cause))];
            ("poison", p.time_ns, args)
        }
        Record::CopyStreamUnhealthy(c) => {
            let args = vec![
                ("lane", Arg::Str(Cow::Owned(format!("{:?}", c.lane)))),
                ("cause", str(&c.cause)),
            ];
            ("stream unhealthy", c.time_ns, args)
        }
        Record::FaultInjected(f) => {
            let mut args: Vec<_> = sub(f.submission).into_iter().collect();
            args.extend(region(f.region));
            args.push(("description", str(&f.description)));
            ("fault injected", f.time_ns, args)
        }
        Record::SubmitRefused(r) => {
            let name = match r.kind {
                RefusalKind::Busy => "busy",
                RefusalKind::DeviceLost => "device lost",
                RefusalKind::Other => "refused",
            };
            let args = vec![
                ("prepared", Arg::Uint(r.prepared.0)),
                ("reason", str(&r.reason)),
            ];
            (name, r.time_ns, args)
        }
        _ => return None,
    };
    Some(Instant {
        runtime,
        name,
        time_ns,
        args,
    })
}

/// `buf 3 [0..64000) read-write`.
fn use_text(u: &Use) -> String {
    let access = match u.access {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "read-write",
    };
    format!("buf {} [{}..{}) {access}", u.buffer, u.start, u.end)
}

fn kind_name(kind: RegionKind) -> &'static str {
    match kind {
        RegionKind::NativeGraph => "native graph",
        RegionKind::CopyBatch => "copy batch",
        RegionKind::Scoped => "scoped",
        RegionKind::NpuRun => "npu run",
        RegionKind::Host => "host",
    }
}

#[cfg(test)]
mod tests;
