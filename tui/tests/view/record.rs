//! The traces under test: the real `pipeline`, `hazards` and `faults` workloads recorded
//! in this process on the software device into a [`MemorySink`], then normalised so that a
//! screen depends only on what the workload did, not on when or in which process.
//!
//! # What changes from run to run, and what normalisation does about it
//!
//! - **Times.** Every host time is replaced by a synthetic schedule ([`Schedule`]) built
//!   from the trace's structure only: submissions in index order, each submitted
//!   [`SUBMIT_GAP_NS`] after the previous one but not before the submission `window` places
//!   earlier is done (the workload's frames in flight); each region that ran starts when
//!   its submission, its queue, its in-graph producers and the regions it waited on across
//!   submissions allow, and lasts a fixed duration per region kind (copies by their
//!   bytes); a region's operations share its time equally, in the order they ran.
//!   Completions, faults, quarantines and poisonings follow the region they concern
//!   at fixed offsets, in the order the runtime records them (fault, quarantine, poison,
//!   then the failed and the cancelled completions), so every event has its own time.
//! - **Ids.** Runtime, buffer, kernel, graph and prepared-graph ids come from process-wide
//!   counters, so they depend on what else ran first; each is renumbered by its rank among
//!   the trace's ids of its kind (from 1), which keeps their order.
//! - **Run slots.** Which slot a submission takes depends on whether the previous
//!   submission of the same graph had released its slot yet; it becomes the submission's
//!   ordinal among its graph's submissions modulo the graph's slots.
//! - **The session.** Host, pid, command line, wall clock and producer version are fixed.
//!
//! The record set itself is deterministic for these workloads: the pipeline's frame
//! contexts share no buffer (no cross-submission waits), the faults run keeps one frame
//! in flight (the failure stops it before another submit), and the hazards workload's four
//! submits are accepted before its first region finishes; [`hazards`] checks that last
//! point and records again if a slow start let a region finish first.

use hrx::{Runtime, RuntimeOptions};
use hrx_capture::schema::*;
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use hrx_tui::state::ListKind;
use hrx_tui::{Action, Model, ViewState};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

/// Frame size of the pipeline runs: small, so the runs take milliseconds.
pub const FRAME: (usize, usize) = (48, 32);

/// The fault of `hrx-trace record --workload faults`: the second Sobel dispatch loses the
/// device.
pub const FAULT: &str = "kernel=hrx_sobel#2:device-lost";

/// Screen size of every snapshot.
pub const SCREEN: (u16, u16) = (120, 40);

/// First submit.
const START_NS: u64 = 10_000;
/// Between back-to-back submits.
const SUBMIT_GAP_NS: u64 = 2_000;
/// From a frame's completion to the submit that reuses its context.
const HOST_GAP_NS: u64 = 3_000;
/// From submit to the earliest start of a region.
const DISPATCH_NS: u64 = 1_000;
/// From a region's producers (or its queue's previous region) to its start.
const GAP_NS: u64 = 500;
/// Device clock offset, where a region has device times.
const DEVICE_BASE_NS: u64 = 1_000_000_000;

/// The three normalised traces, recorded once per test process.
pub struct Traces {
    /// `pipeline`: 6 frames, 3 in flight.
    pub pipeline: Model,
    /// `hazards`: submissions A, D, B, C back to back.
    pub hazards: Model,
    /// `faults`: 4 frames, 1 in flight, [`FAULT`] injected.
    pub faults: Model,
}

/// The traces (recorded by the first test that asks).
pub fn traces() -> &'static Traces {
    static TRACES: OnceLock<Traces> = OnceLock::new();
    TRACES.get_or_init(|| Traces {
        pipeline: Model::from_records(&pipeline()),
        hazards: Model::from_records(&hazards()),
        faults: Model::from_records(&faults()),
    })
}

/// Runs `workload` on a software-device runtime recording into memory; returns the
/// records as read back from the trace bytes.
fn record(options: RuntimeOptions, workload: impl FnOnce(&Runtime)) -> Vec<Record> {
    let sink = MemorySink::new();
    let recorder_options = RecorderOptions {
        full_buffer_wait: std::time::Duration::from_secs(5),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::with_sink(sink.clone(), recorder_options).expect("recorder");
    let runtime = Runtime::new(options.recorder(recorder.clone())).expect("sim runtime");
    workload(&runtime);
    // The runtime's last records (counters, drops) precede the close.
    drop(runtime);
    recorder.close().expect("trace closes");
    let trace = Trace::from_bytes(&sink.contents()).expect("trace reads back");
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
    trace.records
}

/// A synthetic RGB8 frame: gradients and a diagonal pattern, so the Sobel has edges.
fn frame(k: usize) -> Frame {
    let (width, height) = FRAME;
    let mut rgb = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let edge = if (x + y + k) % 16 < 8 { 255 } else { 0 };
            rgb.extend([(x * 5) as u8, (y * 7) as u8, edge]);
        }
    }
    Frame { width, height, rgb }
}

/// `pipeline`: 6 frames through the pipeline, 3 in flight.
pub fn pipeline() -> Vec<Record> {
    let records = record(RuntimeOptions::sim(), |runtime| {
        let (width, height) = FRAME;
        let mut pipeline = Pipeline::new(runtime, width, height, PipelineOptions::default())
            .expect("pipeline builds");
        let stats = pipeline
            .run((0..6).map(frame), |_, _| {})
            .expect("pipeline runs");
        assert_eq!(stats.frames, 6);
    });
    normalise(records, Some(PipelineOptions::default().frames_in_flight))
}

/// `faults`: the pipeline with [`FAULT`], one frame in flight: frame 0 completes, frame
/// 1's compute loses the device, its download and NPU regions are cancelled.
pub fn faults() -> Vec<Record> {
    let fault = FAULT.parse().expect("fault spec");
    let records = record(RuntimeOptions::sim().fault(fault), |runtime| {
        let (width, height) = FRAME;
        let options = PipelineOptions {
            frames_in_flight: 1,
            ..PipelineOptions::default()
        };
        let mut pipeline = Pipeline::new(runtime, width, height, options).expect("pipeline");
        let result = pipeline.run((0..4).map(frame), |_, _| {});
        assert!(result.is_err(), "the injected device loss stops the run");
        assert!(runtime.fault_fired());
    });
    normalise(records, Some(1))
}

/// Cross-submission waits of the hazards workload when all four submissions are in
/// flight at once.
const HAZARD_WAITS: usize = 11;

/// `hazards`: [`hrx_workloads::run_hazards`].
pub fn hazards() -> Vec<Record> {
    // Tries enough for a loaded machine (5 ran out once, under three test processes).
    for _ in 0..30 {
        let records = record(RuntimeOptions::sim(), |runtime| {
            hrx_workloads::run_hazards(runtime).expect("hazards workload");
        });
        let waits = records
            .iter()
            .filter(|r| matches!(r, Record::CrossWait(_)))
            .count();
        if waits == HAZARD_WAITS {
            return normalise(records, None);
        }
        // A region finished before a later submit: that submit recorded fewer waits.
        eprintln!("hazards: {waits} cross-submission waits, expected {HAZARD_WAITS}; again");
    }
    panic!("the hazards workload never had all four submissions in flight at once");
}

/// Rewrites ids, slots, the session and every time (see the module docs). `window`: how
/// many submissions may be in flight (`None`: no limit).
pub fn normalise(mut records: Vec<Record>, window: Option<usize>) -> Vec<Record> {
    // A capture fence or a recorder wait happens only when the recording machine is slow
    // (a region overwrites an output still being hashed; a thread buffer fills before the
    // writer drains it): how many a run has depends on load, not on the workload, so the
    // snapshots leave them out. Likewise the host clock's calibrations, one per flush.
    // A digest's span is capture work on another thread, timed by that thread's schedule.
    // A region's start adds nothing to the view of a region that finished (its timing
    // says when it ran), and the schedule below rewrites times from the timings alone.
    records.retain(|r| {
        !matches!(
            r,
            Record::CaptureFence(_)
                | Record::RecorderWait(_)
                | Record::RegionStarted(_)
                | Record::HostClock(_)
                | Record::DigestSpan(_)
                // Host threads' spans and annotations: timed by the threads' schedule too.
                | Record::ThreadName(_)
                | Record::HostSpan(_)
                | Record::AnnotationName(_)
                | Record::AnnotationRange(_)
                | Record::AnnotationMarker(_)
                | Record::CounterSample(_)
        )
    });
    renumber(&mut records);
    let schedule = Schedule::build(&records, window);
    schedule.apply(&mut records);
    records
}

/// Every id field of a record, by kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum IdKind {
    Runtime,
    Buffer,
    Kernel,
    Graph,
    Prepared,
}

type Visit<'a> = &'a mut dyn FnMut(IdKind, &mut u64);

fn runtime(id: &mut RuntimeId, f: Visit<'_>) {
    let mut v = u64::from(id.0);
    f(IdKind::Runtime, &mut v);
    id.0 = u32::try_from(v).expect("a runtime id");
}

fn uses(uses: &mut [Use], f: Visit<'_>) {
    for u in uses {
        f(IdKind::Buffer, &mut u.buffer.0);
    }
}

fn edges(edges: &mut [Edge], f: Visit<'_>) {
    for e in edges {
        f(IdKind::Buffer, &mut e.buffer.0);
    }
}

/// Calls `f` on every id of `record`.
fn visit_ids(record: &mut Record, f: Visit<'_>) {
    match record {
        Record::SessionStart(_) | Record::Blob(_) | Record::SessionEnd(_) => {}
        Record::RuntimeStart(r) => runtime(&mut r.runtime, f),
        Record::RuntimeEnd(r) => runtime(&mut r.runtime, f),
        Record::BufferCreated(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::BufferDropped(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::KernelLoaded(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Kernel, &mut r.kernel.0);
        }
        Record::GraphOp(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Graph, &mut r.graph.0);
            if let OpKind::Kernel { kernel } | OpKind::Npu { kernel } = &mut r.op {
                f(IdKind::Kernel, &mut kernel.0);
            }
            uses(&mut r.uses, f);
        }
        Record::Prepared(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Graph, &mut r.graph.0);
            f(IdKind::Prepared, &mut r.prepared.0);
            for region in &mut r.regions {
                edges(&mut region.internal_edges, f);
                edges(&mut region.dependencies, f);
                uses(&mut region.uses, f);
            }
        }
        Record::Submit(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Prepared, &mut r.prepared.0);
        }
        Record::SubmitRefused(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Prepared, &mut r.prepared.0);
        }
        Record::CrossWait(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::RegionTiming(r) => runtime(&mut r.runtime, f),
        Record::OpTiming(r) => runtime(&mut r.timing.runtime, f),
        Record::ClockCalibration(r) => runtime(&mut r.runtime, f),
        Record::RegionDone(r) => runtime(&mut r.runtime, f),
        Record::SubmissionDone(r) => runtime(&mut r.runtime, f),
        Record::Quarantine(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Prepared, &mut r.prepared.0);
        }
        Record::Poison(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::CopyStreamUnhealthy(r) => runtime(&mut r.runtime, f),
        Record::FaultInjected(r) => runtime(&mut r.runtime, f),
        Record::HostWrite(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::OutputDigest(r) => {
            runtime(&mut r.runtime, f);
            f(IdKind::Buffer, &mut r.buffer.0);
        }
        Record::Counters(r) => runtime(&mut r.runtime, f),
        Record::OpTimes(r) => runtime(&mut r.runtime, f),
        other => panic!("a record kind normalisation does not know: {other:?}"),
    }
}

/// Renumbers every id by its rank among the trace's ids of its kind, from 1.
fn renumber(records: &mut [Record]) {
    let mut seen: HashMap<IdKind, BTreeSet<u64>> = HashMap::new();
    for record in records.iter_mut() {
        visit_ids(record, &mut |kind: IdKind, id: &mut u64| {
            seen.entry(kind).or_default().insert(*id);
        });
    }
    let rank: HashMap<(IdKind, u64), u64> = seen
        .iter()
        .flat_map(|(&kind, ids)| {
            ids.iter()
                .enumerate()
                .map(move |(i, &id)| ((kind, id), i as u64 + 1))
        })
        .collect();
    for record in records.iter_mut() {
        visit_ids(record, &mut |kind: IdKind, id: &mut u64| {
            *id = rank[&(kind, *id)];
        });
    }
}

/// A region of a submission.
type Key = (SubmissionIndex, u32);

/// The synthetic times of a trace (see the module docs).
#[derive(Default)]
struct Schedule {
    submit: HashMap<SubmissionIndex, u64>,
    /// The slot of each submission.
    slot: HashMap<SubmissionIndex, u32>,
    /// (start, end) of each region that ran.
    ran: HashMap<Key, (u64, u64)>,
    /// Completion time of each region.
    done: HashMap<Key, u64>,
    submission_done: HashMap<SubmissionIndex, u64>,
    /// Rank of each poisoned buffer.
    poisoned: HashMap<BufferId, u64>,
    /// The end of the first failed region (or the last time, without failure).
    first_failure: u64,
    last: u64,
}

/// How long a region runs, by what it does.
fn duration(region: &Region) -> u64 {
    match region.kind {
        RegionKind::CopyBatch => 4_000 + region.copy_bytes / 4,
        RegionKind::NativeGraph | RegionKind::Scoped => 3_000 * region.nodes.len().max(1) as u64,
        RegionKind::NpuRun => 6_000,
        RegionKind::Host => 2_000,
    }
}

impl Schedule {
    fn build(records: &[Record], window: Option<usize>) -> Schedule {
        let mut prepared: HashMap<PreparedId, &Prepared> = HashMap::new();
        let mut submits: Vec<&Submit> = Vec::new();
        let mut waits: HashMap<Key, Vec<Key>> = HashMap::new();
        let mut timed: BTreeSet<Key> = BTreeSet::new();
        let mut status: HashMap<Key, &Status> = HashMap::new();
        let mut poisoned: BTreeSet<BufferId> = BTreeSet::new();
        for record in records {
            match record {
                Record::Prepared(p) => {
                    prepared.insert(p.prepared, p);
                }
                Record::Submit(s) => submits.push(s),
                Record::CrossWait(w) => waits
                    .entry((w.submission, w.region.0))
                    .or_default()
                    .push((w.on_submission, w.on_region.0)),
                Record::RegionTiming(t) => {
                    timed.insert((t.submission, t.region.0));
                }
                Record::RegionDone(d) => {
                    status.insert((d.submission, d.region.0), &d.status);
                }
                Record::Poison(p) => {
                    poisoned.insert(p.buffer);
                }
                _ => {}
            }
        }
        submits.sort_by_key(|s| s.submission);
        let mut s = Schedule {
            poisoned: poisoned
                .into_iter()
                .enumerate()
                .map(|(i, b)| (b, i as u64))
                .collect(),
            ..Schedule::default()
        };
        let mut queue_free: HashMap<Queue, u64> = HashMap::new();
        let mut per_graph: HashMap<PreparedId, u32> = HashMap::new();
        let mut finished: Vec<u64> = Vec::new();
        let mut failures: Vec<u64> = Vec::new();
        for (k, submit) in submits.iter().enumerate() {
            let sub = submit.submission;
            let mut t = if k == 0 {
                START_NS
            } else {
                s.submit[&submits[k - 1].submission] + SUBMIT_GAP_NS
            };
            if let Some(w) = window
                && k >= w
            {
                t = t.max(finished[k - w] + HOST_GAP_NS);
            }
            s.submit.insert(sub, t);
            let ordinal = per_graph.entry(submit.prepared).or_default();
            let regions = prepared
                .get(&submit.prepared)
                .map_or(&[][..], |p| &p.regions);
            let slots = prepared.get(&submit.prepared).map_or(1, |p| p.slots.max(1));
            s.slot.insert(sub, *ordinal % slots);
            *ordinal += 1;
            for (r, region) in regions.iter().enumerate() {
                let key = (sub, r as u32);
                if !timed.contains(&key) {
                    continue;
                }
                let mut start =
                    (t + DISPATCH_NS).max(queue_free.get(&region.queue).map_or(0, |&e| e + GAP_NS));
                let producers = region
                    .dependencies
                    .iter()
                    .map(|e| (sub, e.producer))
                    .chain(waits.get(&key).into_iter().flatten().copied());
                for producer in producers {
                    if let Some(&(_, end)) = s.ran.get(&producer) {
                        start = start.max(end + GAP_NS);
                    }
                }
                let failed = matches!(status.get(&key), Some(Status::Failed { .. }));
                let length = if failed {
                    duration(region) / 2
                } else {
                    duration(region)
                };
                s.ran.insert(key, (start, start + length));
                queue_free.insert(region.queue, start + length);
                if failed {
                    failures.push(start + length);
                }
            }
            // Regions that ran complete 100 ns after their end; the others (cancelled)
            // after the failure of their submission, in region order.
            let failure = (0..regions.len() as u32)
                .filter(|&r| matches!(status.get(&(sub, r)), Some(Status::Failed { .. })))
                .filter_map(|r| s.ran.get(&(sub, r)).map(|&(_, end)| end))
                .min()
                .or_else(|| failures.first().copied());
            let mut last = t;
            for r in 0..regions.len() as u32 {
                let key = (sub, r);
                let time = match s.ran.get(&key) {
                    Some(&(_, end)) => end + 100,
                    None => failure.unwrap_or(t) + 150 + 50 * u64::from(r),
                };
                s.done.insert(key, time);
                last = last.max(time);
            }
            s.submission_done.insert(sub, last + 200);
            finished.push(last + 200);
        }
        s.last = finished.iter().copied().max().unwrap_or(START_NS);
        s.first_failure = failures.iter().copied().min().unwrap_or(s.last);
        s
    }

    fn apply(&self, records: &mut [Record]) {
        let device = records.iter().find_map(|r| match r {
            Record::RuntimeStart(r) => Some((r.backend.clone(), r.device.clone())),
            _ => None,
        });
        let mut last_submit = START_NS - SUBMIT_GAP_NS;
        // The end of the region a failure record names (else the first failure's).
        let failure_end = |sub: Option<SubmissionIndex>, region: Option<RegionIndex>| {
            sub.zip(region)
                .and_then(|(sub, r)| self.ran.get(&(sub, r.0)))
                .map_or(self.first_failure, |&(_, end)| end)
        };
        // Operation timings per region, and those rewritten so far.
        let mut ops: HashMap<Key, u64> = HashMap::new();
        for record in records.iter() {
            if let Record::OpTiming(t) = record {
                *ops.entry((t.timing.submission, t.timing.region.0))
                    .or_default() += 1;
            }
        }
        let mut seen_ops: HashMap<Key, u64> = HashMap::new();
        for record in records.iter_mut() {
            match record {
                Record::SessionStart(s) => {
                    s.producer = "hrx-capture".into();
                    s.wall_clock_utc =
                        chrono::DateTime::from_timestamp(1_750_000_000, 0).expect("a date");
                    s.monotonic_base_ns = 0;
                    s.host = "snapshot".into();
                    s.pid = 1;
                    s.args = vec!["view-tests".into()];
                    if let Some((backend, device)) = &device {
                        s.backend = backend.clone();
                        s.device = device.clone();
                    }
                }
                Record::Submit(s) => {
                    s.time_ns = self.submit[&s.submission];
                    s.slot = self.slot[&s.submission];
                    last_submit = s.time_ns;
                }
                // Refusals are recorded by the submitting thread, so their place among
                // the submits is fixed.
                Record::SubmitRefused(r) => r.time_ns = last_submit + SUBMIT_GAP_NS / 2,
                Record::RegionTiming(t) => *t = self.timing(*t),
                Record::OpTiming(t) => {
                    let key = (t.timing.submission, t.timing.region.0);
                    let i = seen_ops.entry(key).or_insert(0);
                    t.timing = self.op_timing(t.timing, *i, ops[&key]);
                    *i += 1;
                }
                Record::ClockCalibration(c) => {
                    c.host_ns = START_NS;
                    c.device_ns = START_NS + DEVICE_BASE_NS;
                    c.device_offset_ns = -(DEVICE_BASE_NS as i64);
                    c.uncertainty_ns = 50;
                }
                Record::RegionDone(d) => d.time_ns = self.done[&(d.submission, d.region.0)],
                Record::SubmissionDone(d) => d.time_ns = self.submission_done[&d.submission],
                // As the runtime records a failure: the fault as the region ends, then the
                // quarantine and the poisonings, then the failed completion (+100 ns).
                Record::FaultInjected(f) => f.time_ns = failure_end(f.submission, f.region),
                Record::Quarantine(q) => q.time_ns = failure_end(q.submission, q.region) + 20,
                Record::Poison(p) => {
                    p.time_ns = self.first_failure + 30 + 2 * self.poisoned[&p.buffer]
                }
                Record::CopyStreamUnhealthy(c) => c.time_ns = self.first_failure + 25,
                Record::Prepared(p) => p.time_ns = START_NS / 2,
                Record::RuntimeStart(r) => r.time_ns = 0,
                Record::BufferCreated(b) => b.time_ns = 0,
                Record::BufferDropped(b) => b.time_ns = self.last + 1_000,
                Record::RuntimeEnd(r) => r.time_ns = self.last + 2_000,
                Record::HostWrite(w) => w.time_ns = 0,
                Record::Counters(c) => c.time_ns = self.last + 2_000,
                Record::SessionEnd(e) => e.time_ns = self.last + 3_000,
                _ => {}
            }
        }
    }

    /// A timing with the region's synthetic times (device times offset by
    /// [`DEVICE_BASE_NS`] where it had some).
    fn timing(&self, mut t: RegionTiming) -> RegionTiming {
        let (start, end) = self.ran[&(t.submission, t.region.0)];
        t.start_ns = start;
        t.end_ns = end;
        t.device = t.device.map(|_| DeviceSpan {
            start_ns: start + DEVICE_BASE_NS + 100,
            end_ns: end + DEVICE_BASE_NS - 100,
        });
        t
    }

    /// The `i`-th of a region's `n` operation timings (in the order recorded, which is the
    /// order they ran): the `i`-th of `n` equal parts of the region's synthetic time.
    fn op_timing(&self, mut t: RegionTiming, i: u64, n: u64) -> RegionTiming {
        let (start, end) = self.ran[&(t.submission, t.region.0)];
        let part = (end - start) / n.max(1);
        t.start_ns = start + i * part;
        t.end_ns = t.start_ns + part;
        t.device = t.device.map(|_| DeviceSpan {
            start_ns: t.start_ns + DEVICE_BASE_NS,
            end_ns: t.end_ns + DEVICE_BASE_NS,
        });
        t
    }
}

/// A fresh view of `model` on the snapshot screen.
pub fn view(model: &Model) -> ViewState {
    ViewState::new(model, SCREEN.0, SCREEN.1)
}

/// Applies `actions` in order.
pub fn act(model: &Model, state: &mut ViewState, actions: &[Action]) {
    for &action in actions {
        state.update(model, action);
    }
}

/// The screen as text.
pub fn screen(model: &Model, state: &ViewState) -> String {
    hrx_tui::render_to_string(model, state, SCREEN.0, SCREEN.1)
}

/// Selects the span of region `region` of the submission with captured index `sub`,
/// walking the timeline with Tab as a user would; panics when Tab never reaches it.
pub fn select(model: &Model, state: &mut ViewState, sub: u64, region: u32) {
    state.update(model, Action::Fit);
    state.selection = None;
    for _ in 0..=model.span_count() {
        state.update(model, Action::Tab);
        let selected = state.selection.expect("Tab selects a span");
        let span = model.span(selected);
        if model.submission(span.submission).index == SubmissionIndex(sub)
            && model.key_of(span).region == region
        {
            return;
        }
    }
    panic!("Tab never reached sub {sub} r{region}");
}

/// Opens the hazards list (`h`), unless it is open already (as it is at the start of a
/// trace without events).
pub fn open_hazards(model: &Model, state: &mut ViewState) {
    if state.list != Some(ListKind::Hazards) {
        state.update(model, Action::ToggleHazards);
    }
    assert_eq!(state.list, Some(ListKind::Hazards));
}
