//! Building a [`Model`] from records in one pass.
//!
//! Records arrive in file order, which is only per-thread order: a region's timing may
//! precede its submission's `Submit` record, a completion its timing, and a `Submit` the
//! `Prepared` of its graph (prepared on another thread). The builder
//! therefore places what it can at once (the usual case: prepare, then submit, then
//! timings and completions) and parks the rest in small pending lists resolved by
//! [`ModelBuilder::finish`]. Every step is linear in the number of records, except sorting
//! spans by start time, which is adaptive (already-ordered runs cost linear time).
//!
//! `finish` runs the stages in this order:
//!
//! 1. sort submissions by (runtime, index) and renumber span references;
//! 2. place parked timings and completions;
//! 3. add an untimed span for every failed or cancelled region that has no timing, and a
//!    span to the trace's end for every region that started and never finished
//!    ([`SpanStatus::Running`]: what a hang or a crash was in);
//! 4. sort each lane, fill the (submission, region) → span table and copy statuses in;
//! 5. resolve cross-submission waits and explicit producers, label regions, sort events;
//! 6. statistics and the first failure.

use super::hazards;
use super::lanes::{Lane, Span, SpanStatus, TimeWindow};
use super::model::{
    CrossEdge, Event, EventId, EventKind, LabelId, LaneId, Model, PreparedInfo, PreparedRef,
    QUEUES, RegionId, RegionInfo, RegionKey, SpanRef, SubId, Submission, queue_slot,
};
use hrx_capture::schema::{
    CrossWait, OpKind, PreparedId, Queue, Record, RefusalKind, RegionIndex, RegionTiming,
    RuntimeId, Status, SubmissionIndex, Submit,
};
use hrx_capture::{Trace, TraceReader};
use std::collections::HashMap;
use std::io::Read;

/// A completion parked until its submission is known.
#[derive(Clone, Copy, Debug)]
struct PendingDone {
    runtime: RuntimeId,
    submission: SubmissionIndex,
    region: RegionIndex,
    status: SpanStatus,
}

/// Builds a [`Model`] from records pushed one at a time.
#[derive(Clone, Debug, Default)]
pub struct ModelBuilder {
    pub(super) model: Model,
    /// The statistics: `hrx-analysis`'s joiner and visitor over the same records.
    joiner: hrx_analysis::Joiner,
    stats: hrx_analysis::StatsVisitor,
    runtimes: Vec<RuntimeId>,
    sub_ids: HashMap<(RuntimeId, SubmissionIndex), SubId>,
    region_status: Vec<SpanStatus>,
    pending_timings: Vec<RegionTiming>,
    pending_done: Vec<PendingDone>,
    /// Submission outcomes read before their submit (another thread's ring was written
    /// out first).
    pending_submission_done: Vec<(RuntimeId, SubmissionIndex, SpanStatus)>,
    cross_raw: Vec<CrossWait>,
    /// Submits read before their `Prepared`.
    parked_submits: Vec<Submit>,
    /// Regions started and not finished yet, with their start.
    started: HashMap<(RuntimeId, SubmissionIndex, RegionIndex), u64>,
    /// The latest host time of any record.
    pub(super) last_ns: u64,
}

impl ModelBuilder {
    /// An empty builder.
    pub fn new() -> ModelBuilder {
        ModelBuilder::default()
    }

    /// The lane of `queue` on `runtime`, creating the runtime's five lanes on first use.
    pub(super) fn lane_of(&mut self, runtime: RuntimeId, queue: Queue) -> LaneId {
        let ordinal = match self.runtimes.iter().position(|&r| r == runtime) {
            Some(i) => i,
            None => {
                self.runtimes.push(runtime);
                self.model
                    .lanes
                    .extend(QUEUES.iter().map(|&q| Lane::new(runtime, q)));
                self.runtimes.len() - 1
            }
        };
        LaneId((ordinal * QUEUES.len() + queue_slot(queue)) as u32)
    }

    /// Ingests one record.
    pub fn push(&mut self, record: &Record) {
        self.push_shared(record);
        match record {
            Record::RegionStarted(r) => {
                self.started
                    .insert((r.runtime, r.submission, r.region), r.time_ns);
            }
            // A submit read before its `Prepared` (another thread prepared the graph and its
            // buffer was written out later) waits for it: its regions come from it.
            Record::Submit(s)
                if !self
                    .model
                    .prepared_ids
                    .contains_key(&(s.runtime, s.prepared)) =>
            {
                self.parked_submits.push(s.clone());
            }
            Record::Submit(s) => self.submit(s),
            Record::Prepared(p) => {
                for s in take_parked(&mut self.parked_submits, p.runtime, p.prepared) {
                    self.submit(&s);
                }
            }
            Record::CrossWait(w) => self.cross_raw.push(*w),
            Record::RegionTiming(t) => self.timing(t),
            Record::RegionDone(d) => {
                self.started.remove(&(d.runtime, d.submission, d.region));
                let done = PendingDone {
                    runtime: d.runtime,
                    submission: d.submission,
                    region: d.region,
                    status: span_status(&d.status),
                };
                if !self.set_status(done) {
                    self.pending_done.push(done);
                }
            }
            Record::SubmissionDone(d) => match self.sub_ids.get(&(d.runtime, d.submission)) {
                Some(&id) => self.model.submissions[id.get()].set_status(span_status(&d.status)),
                None => self.pending_submission_done.push((
                    d.runtime,
                    d.submission,
                    span_status(&d.status),
                )),
            },
            _ => {}
        }
    }

    /// Adds submission `s` (its `Prepared`, when in the trace, already read).
    fn submit(&mut self, s: &Submit) {
        let prepared = self
            .model
            .prepared_ids
            .get(&(s.runtime, s.prepared))
            .copied();
        let mut sub = Submission::new(s.runtime, s.submission, s.slot, s.time_ns, prepared);
        let regions = prepared.map_or(0, |p| self.model.prepared[p.get()].regions.len());
        sub.region_base = self.model.region_spans.len() as u32;
        let region_spans = self.model.region_spans.vec_mut();
        region_spans.resize(region_spans.len() + regions, SpanRef::NONE);
        self.region_status
            .resize(self.region_status.len() + regions, SpanStatus::Unknown);
        sub.producers_start = self.model.explicit_producers.len() as u32;
        sub.producers_len = s.producers.len() as u32;
        self.model.explicit_producers.vec_mut().extend(&s.producers);
        let id = SubId(self.model.submissions.len() as u32);
        self.model.submissions.vec_mut().push(sub);
        self.sub_ids.insert((s.runtime, s.submission), id);
        self.model.submit_times.vec_mut().push(s.time_ns);
    }

    /// Ingests what of a record does not grow with submissions or regions (the structure,
    /// events, the recording's facts): everything but the per-submission joins, which
    /// [`ModelBuilder::push`] keeps in memory and the streaming builder
    /// ([`super::stream`]) on disk.
    pub(super) fn push_shared(&mut self, record: &Record) {
        self.joiner.push(record, &mut self.stats);
        self.model.info.records += 1;
        if let Some(ns) = hrx_analysis::dump::host_time_ns(record) {
            self.last_ns = self.last_ns.max(ns);
        }
        match record {
            Record::SessionStart(s) => self.model.info.session = Some(s.clone()),
            Record::SessionEnd(e) => self.model.info.end = Some(*e),
            Record::RuntimeStart(r) => {
                self.lane_of(r.runtime, Queue::GpuUpload);
                self.model.info.runtimes.push(r.clone());
            }
            Record::BufferCreated(b) => {
                self.model.buffers.insert((b.runtime, b.buffer), b.clone());
            }
            Record::KernelLoaded(k) => {
                self.model.kernels.insert((k.runtime, k.kernel), k.clone());
            }
            Record::GraphOp(op) => {
                self.model
                    .graphs
                    .insert((op.runtime, op.graph, op.node), op.clone());
            }
            Record::Prepared(p) => {
                let prepared = PreparedRef(self.model.prepared.len() as u32);
                let first = self.model.regions.len() as u32;
                for (i, r) in p.regions.iter().enumerate() {
                    self.lane_of(p.runtime, r.queue);
                    self.model.regions.push(RegionInfo {
                        prepared,
                        index: RegionIndex(i as u32),
                        queue: r.queue,
                        engine: r.engine,
                        kind: r.kind,
                        nodes: r.nodes.clone(),
                        internal_edges: r.internal_edges.clone(),
                        dependencies: r.dependencies.clone(),
                        uses: r.uses.clone(),
                        copy_bytes: r.copy_bytes,
                        label: LabelId(0),
                        search_key: 0,
                    });
                }
                self.model.prepared.push(PreparedInfo {
                    runtime: p.runtime,
                    id: p.prepared,
                    graph: p.graph,
                    slots: p.slots,
                    time_ns: p.time_ns,
                    regions: first..self.model.regions.len() as u32,
                });
                self.model
                    .prepared_ids
                    .insert((p.runtime, p.prepared), prepared);
            }
            Record::SubmitRefused(r) => {
                let kind = match r.kind {
                    RefusalKind::Busy => EventKind::Busy,
                    RefusalKind::DeviceLost => EventKind::DeviceLost,
                    _ => EventKind::Refused,
                };
                if kind == EventKind::Busy {
                    self.model.busy_times.push(r.time_ns);
                }
                self.event(Event {
                    prepared: Some(r.prepared),
                    ..event(r.time_ns, kind, r.runtime, &r.reason)
                });
            }
            Record::OpTiming(_) => self.model.info.op_timings += 1,
            Record::ClockCalibration(c) => {
                let clocks = &mut self.model.info.clocks;
                match clocks.iter_mut().find(|k| k.runtime == c.runtime) {
                    Some(k) => *k = *c,
                    None => clocks.push(*c),
                }
            }
            Record::RegionDone(d) => {
                let (kind, text) = match &d.status {
                    Status::Failed { error } => (EventKind::RegionFailed, error.as_str()),
                    // The runtime's reason reads "cancelled: ..." (`hrx::Error::Cancelled`);
                    // the event's kind already says it.
                    Status::Cancelled { reason } => (
                        EventKind::RegionCancelled,
                        reason.strip_prefix("cancelled: ").unwrap_or(reason),
                    ),
                    Status::Ok => return,
                };
                self.event(Event {
                    submission: Some(d.submission),
                    region: Some(d.region),
                    ..event(d.time_ns, kind, d.runtime, text)
                });
            }
            Record::Quarantine(q) => self.event(Event {
                submission: q.submission,
                region: q.region,
                prepared: Some(q.prepared),
                ..event(q.time_ns, EventKind::Quarantine, q.runtime, &q.cause)
            }),
            Record::Poison(p) => self.event(Event {
                buffer: Some(p.buffer),
                ..event(p.time_ns, EventKind::Poison, p.runtime, &p.cause)
            }),
            Record::CopyStreamUnhealthy(c) => self.event(Event {
                lane: Some(c.lane),
                ..event(
                    c.time_ns,
                    EventKind::CopyStreamUnhealthy,
                    c.runtime,
                    &c.cause,
                )
            }),
            Record::FaultInjected(f) => self.event(Event {
                submission: f.submission,
                region: f.region,
                ..event(
                    f.time_ns,
                    EventKind::FaultInjected,
                    f.runtime,
                    &f.description,
                )
            }),
            // Per-submission joins (see `push`); buffer contents, digests, blobs, counters
            // and drops do not appear on the timeline.
            _ => {}
        }
    }

    fn event(&mut self, event: Event) {
        self.model.events.push(event);
    }

    /// The region of a timing or completion: its submission and model-wide region.
    fn resolve(
        &self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
        region: RegionIndex,
    ) -> Option<(SubId, RegionId)> {
        let &sub = self.sub_ids.get(&(runtime, submission))?;
        let prepared = self.model.submissions[sub.get()].prepared()?;
        let regions = &self.model.prepared[prepared.get()].regions;
        let id = regions.start.checked_add(region.0)?;
        (id < regions.end).then_some((sub, RegionId(id)))
    }

    /// Places a timing now, or parks it until its submission is known.
    fn timing(&mut self, t: &RegionTiming) {
        self.started.remove(&(t.runtime, t.submission, t.region));
        if !self.place(t) {
            self.pending_timings.push(*t);
        }
    }

    /// Places a timing on its lane; false when its submission is not known yet.
    fn place(&mut self, t: &RegionTiming) -> bool {
        let Some((sub, region)) = self.resolve(t.runtime, t.submission, t.region) else {
            return false;
        };
        let queue = self.model.regions[region.get()].queue;
        let lane = self.lane_of(t.runtime, queue);
        self.model.lanes[lane.get()].push(Span::timed(t.start_ns, t.end_ns, t.device, sub, region));
        true
    }

    /// Records a completion status; false when its submission is not known yet.
    fn set_status(&mut self, done: PendingDone) -> bool {
        let Some((sub, _)) = self.resolve(done.runtime, done.submission, done.region) else {
            return false;
        };
        let slot = self.model.submissions[sub.get()].region_base as usize + done.region.0 as usize;
        self.region_status[slot] = done.status;
        true
    }

    /// Finishes the model (see the module docs for the stages).
    pub fn finish(mut self) -> Model {
        // Submits of a graph whose `Prepared` is not in the trace: submissions without
        // regions, as when read.
        for s in std::mem::take(&mut self.parked_submits) {
            self.submit(&s);
        }
        self.sort_submissions();
        for t in std::mem::take(&mut self.pending_timings) {
            if !self.place(&t) {
                self.model.info.unplaced_timings += 1;
            }
        }
        for d in std::mem::take(&mut self.pending_done) {
            self.set_status(d);
        }
        for (runtime, submission, status) in std::mem::take(&mut self.pending_submission_done) {
            if let Some(&id) = self.sub_ids.get(&(runtime, submission)) {
                self.model.submissions[id.get()].set_status(status);
            }
        }
        self.add_untimed_spans();
        self.add_running_spans();
        self.index_spans();
        self.resolve_edges();
        self.label_regions();
        self.finish_events();
        let stats = self.take_stats();
        let mut model = self.model;
        model.range = time_range(&model);
        model.stats = stats;
        model.first_failure = hazards::first_failure(&model);
        model
    }

    /// The statistics of every record pushed (`hrx-analysis`'s, as `hrx-trace stats`
    /// computes them).
    pub(super) fn take_stats(&mut self) -> hrx_analysis::Stats {
        let summary = std::mem::take(&mut self.joiner).finish(None, Vec::new());
        std::mem::take(&mut self.stats).finish(&summary)
    }

    /// Sorts submissions by (runtime, index) and renumbers every [`SubId`] held so far.
    fn sort_submissions(&mut self) {
        let subs = &self.model.submissions;
        if subs
            .windows(2)
            .all(|w| (w[0].runtime, w[0].index) < (w[1].runtime, w[1].index))
        {
            return;
        }
        let mut order: Vec<u32> = (0..subs.len() as u32).collect();
        order.sort_by_key(|&i| (subs[i as usize].runtime, subs[i as usize].index));
        let mut new_id = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        self.model.submissions = order
            .iter()
            .map(|&old| self.model.submissions[old as usize])
            .collect::<Vec<_>>()
            .into();
        for lane in &mut self.model.lanes {
            for span in lane.spans_mut() {
                span.submission = SubId(new_id[span.submission.get()]);
            }
        }
        for id in self.sub_ids.values_mut() {
            *id = SubId(new_id[id.get()]);
        }
    }

    /// Adds a span at its completion time for every failed or cancelled region without a
    /// timing (a cancelled region never ran; a failed one may have lost its timing).
    fn add_untimed_spans(&mut self) {
        let model = &mut self.model;
        for lane in &model.lanes {
            for span in lane.spans() {
                let base = model.submissions[span.submission.get()].region_base as usize;
                let region = model.regions[span.region.get()].index.0 as usize;
                model.region_spans[base + region] = 0; // timed
            }
        }
        let mut untimed = Vec::new();
        for e in &self.model.events {
            let (Some(submission), Some(region)) = (e.submission, e.region) else {
                continue;
            };
            let status = match e.kind {
                EventKind::RegionFailed => SpanStatus::Failed,
                EventKind::RegionCancelled => SpanStatus::Cancelled,
                _ => continue,
            };
            if let Some((sub, region_id)) = self.resolve(e.runtime, submission, region) {
                let slot =
                    self.model.submissions[sub.get()].region_base as usize + region.0 as usize;
                if self.model.region_spans[slot] == SpanRef::NONE {
                    self.model.region_spans[slot] = 0;
                    let queue = self.model.regions[region_id.get()].queue;
                    untimed.push((
                        e.runtime,
                        queue,
                        Span::untimed(e.time_ns, sub, region_id, status),
                    ));
                }
            }
        }
        self.model.untimed_spans = untimed.len();
        for (runtime, queue, span) in untimed {
            let lane = self.lane_of(runtime, queue);
            self.model.lanes[lane.get()].push(span);
        }
    }

    /// A span from its start to the trace's end for every region that started and has no
    /// timing nor completion: it was running when the trace ended.
    fn add_running_spans(&mut self) {
        let mut started: Vec<_> = std::mem::take(&mut self.started).into_iter().collect();
        started.sort_unstable();
        for ((runtime, submission, region), start_ns) in started {
            let Some((sub, region_id)) = self.resolve(runtime, submission, region) else {
                continue;
            };
            let slot = self.model.submissions[sub.get()].region_base as usize + region.0 as usize;
            if self.model.region_spans[slot] != SpanRef::NONE {
                continue;
            }
            self.model.region_spans[slot] = 0;
            let queue = self.model.regions[region_id.get()].queue;
            let lane = self.lane_of(runtime, queue);
            let end_ns = self.last_ns.max(start_ns);
            self.model.untimed_spans += 1;
            self.model.lanes[lane.get()].push(Span::unfinished(start_ns, end_ns, sub, region_id));
        }
    }

    /// Sorts every lane, fills the span table and copies completion statuses into spans.
    fn index_spans(&mut self) {
        self.model.region_spans.fill(SpanRef::NONE);
        let model = &mut self.model;
        for (lane_index, lane) in model.lanes.iter_mut().enumerate() {
            lane.sort();
            for (i, span) in lane.spans_mut().iter_mut().enumerate() {
                let sub = &model.submissions[span.submission.get()];
                let region = &model.regions[span.region.get()];
                let slot = sub.region_base as usize + region.index.0 as usize;
                model.region_spans[slot] = SpanRef {
                    lane: LaneId(lane_index as u32),
                    index: i as u32,
                }
                .pack();
                if span.ran() {
                    span.set_status(self.region_status[slot]);
                }
            }
            lane.build_index();
        }
        self.region_status = Vec::new();
        self.sub_ids = HashMap::new();
    }

    /// Resolves cross-submission waits and explicit producers to model indices.
    fn resolve_edges(&mut self) {
        let model = &mut self.model;
        let key = |runtime, submission, region: RegionIndex| {
            model
                .find_submission(runtime, submission)
                .map(|submission| RegionKey {
                    submission,
                    region: region.0,
                })
        };
        let mut cross = Vec::with_capacity(self.cross_raw.len());
        let mut unresolved = 0;
        for w in &self.cross_raw {
            match (
                key(w.runtime, w.submission, w.region),
                key(w.runtime, w.on_submission, w.on_region),
            ) {
                (Some(consumer), Some(producer)) => cross.push(CrossEdge::new(
                    consumer, producer, w.kind, w.buffer, w.start, w.end,
                )),
                _ => unresolved += 1,
            }
        }
        model.info.unresolved_waits += unresolved;
        cross.sort_by_key(|e| e.consumer);
        let mut by_producer: Vec<u32> = (0..cross.len() as u32).collect();
        by_producer.sort_by_key(|&i| cross[i as usize].producer);
        model.cross = cross.into();
        model.cross_by_producer = by_producer.into();
        self.cross_raw = Vec::new();

        let mut explicit = Vec::new();
        for (i, s) in model.submissions.iter().enumerate() {
            let start = s.producers_start as usize;
            for &p in &model.explicit_producers[start..start + s.producers_len as usize] {
                if let Some(producer) = model.find_submission(s.runtime, p) {
                    explicit.push((producer, SubId(i as u32)));
                }
            }
        }
        explicit.sort_unstable();
        model.explicit_edges = explicit.into();
    }

    /// Names every region, gives it its search key, and counts spans per label and key.
    fn label_regions(&mut self) {
        name_regions(&mut self.model);
        let model = &mut self.model;
        for lane in &model.lanes {
            for span in lane.spans() {
                count_label(
                    &model.regions,
                    &mut model.label_spans,
                    &mut model.search_key_spans,
                    span,
                );
            }
        }
    }

    /// Sorts events and submit times, and links failures and cancellations to their spans.
    fn finish_events(&mut self) {
        self.model.submit_times.vec_mut().sort_unstable();
        link_events(&mut self.model);
    }

    /// Builds a model from records.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Model {
        let mut builder = ModelBuilder::new();
        for record in records {
            builder.push(record);
        }
        builder.finish()
    }
}

/// Takes the submits of `prepared` of `runtime` out of `parked`, in the order they were read.
pub(super) fn take_parked(
    parked: &mut Vec<Submit>,
    runtime: RuntimeId,
    prepared: PreparedId,
) -> Vec<Submit> {
    if parked.is_empty() {
        return Vec::new();
    }
    let (taken, kept) = std::mem::take(parked)
        .into_iter()
        .partition(|s| (s.runtime, s.prepared) == (runtime, prepared));
    *parked = kept;
    taken
}

/// Names every region and gives it its search key; the counts of spans per label and key
/// start at zero ([`count_label`] adds each span).
pub(super) fn name_regions(model: &mut Model) {
    let mut interned: HashMap<String, LabelId> = HashMap::new();
    let mut labels = Vec::new();
    let mut keys: HashMap<String, u32> = HashMap::new();
    let mut texts = Vec::new();
    for i in 0..model.regions.len() {
        let (name, ops) = region_label(model, RegionId(i as u32));
        let mut text = name.to_lowercase();
        for (_, op) in &ops {
            text.push('\n');
            text.push_str(&op.to_lowercase());
        }
        let id = *interned.entry(name).or_insert_with_key(|name| {
            labels.push(name.clone());
            LabelId(labels.len() as u32 - 1)
        });
        let key = *keys.entry(text).or_insert_with_key(|text| {
            texts.push(text.clone());
            texts.len() as u32 - 1
        });
        model.regions[i].label = id;
        model.regions[i].search_key = key;
    }
    model.label_spans = vec![0; labels.len()];
    model.search_key_spans = vec![0; texts.len()];
    model.labels = labels;
    model.search_texts = texts;
}

/// Counts `span` in its region's label and search key.
pub(super) fn count_label(
    regions: &[RegionInfo],
    label_spans: &mut [u64],
    search_key_spans: &mut [u64],
    span: &Span,
) {
    let region = &regions[span.region.get()];
    label_spans[region.label.get()] += 1;
    search_key_spans[region.search_key as usize] += 1;
}

/// Sorts events and busy times by time and links failures and cancellations to their spans
/// (a lookup each in the submissions and the span table, mapped or not).
pub(super) fn link_events(model: &mut Model) {
    model.events.sort_by_key(|e| e.time_ns);
    model.busy_times.sort_unstable();
    let spans: Vec<Option<SpanRef>> = model
        .events
        .iter()
        .map(|e| {
            let submission = model.find_submission(e.runtime, e.submission?)?;
            model.span_of(RegionKey {
                submission,
                region: e.region?.0,
            })
        })
        .collect();
    for (i, (e, span)) in model.events.iter_mut().zip(spans).enumerate() {
        e.span = span;
        if let (Some(span), EventKind::RegionFailed | EventKind::RegionCancelled) = (span, e.kind) {
            model.span_events.insert(span, EventId(i as u32));
        }
    }
}

/// A blank event.
fn event(time_ns: u64, kind: EventKind, runtime: RuntimeId, text: &str) -> Event {
    Event {
        time_ns,
        kind,
        runtime,
        submission: None,
        region: None,
        prepared: None,
        buffer: None,
        lane: None,
        text: text.to_owned(),
        span: None,
    }
}

fn span_status(status: &Status) -> SpanStatus {
    match status {
        Status::Ok => SpanStatus::Ok,
        Status::Failed { .. } => SpanStatus::Failed,
        Status::Cancelled { .. } => SpanStatus::Cancelled,
    }
}

/// The label of a region (its kernel name, `upload`/`download`/`copy` for copy batches,
/// `kernel +N` when a native graph holds several operations), and its operations' names,
/// each with whether it is a kernel.
fn region_label(model: &Model, id: RegionId) -> (String, Vec<(bool, String)>) {
    let region = model.region(id);
    let runtime = model.prepared[region.prepared.get()].runtime;
    let names: Vec<(bool, String)> = region
        .nodes
        .iter()
        .filter_map(|&n| model.op(region.prepared, n))
        .map(|op| {
            let kernel = matches!(op.op, OpKind::Kernel { .. } | OpKind::Npu { .. });
            (kernel, model.op_name(runtime, &op.op))
        })
        .collect();
    (label_region(region.kind, region.queue, &names), names)
}

pub use hrx_analysis::label_region;

/// The range from the first to the last thing on the timeline (lanes indexed, events and
/// ticks sorted: it reads the lanes' first spans and last blocks, and the ticks' ends).
pub(super) fn time_range(model: &Model) -> Option<TimeWindow> {
    let spans = model.lanes.iter().filter(|l| !l.is_empty());
    let starts = spans.clone().map(|l| l.spans()[0].start_ns);
    let ends = spans.map(Lane::max_end_ns);
    let events = model.events.iter().map(|e| e.time_ns);
    let ticks = [&model.submit_times[..], &model.busy_times[..]];
    let first_ticks = ticks.iter().filter_map(|t| t.first().copied());
    let last_ticks = ticks.iter().filter_map(|t| t.last().copied());
    let start = starts.chain(events.clone()).chain(first_ticks).min()?;
    let end = ends
        .chain(events.map(|t| t.saturating_add(1)))
        .chain(last_ticks.map(|t| t.saturating_add(1)))
        .max()?;
    Some(TimeWindow::new(start, end))
}

impl Model {
    /// Builds a model from records in memory.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Model {
        ModelBuilder::from_records(records)
    }

    /// Builds a model from a trace read whole, keeping its recovery report and warnings.
    pub fn from_trace(trace: &Trace) -> Model {
        let mut model = Model::from_records(&trace.records);
        model.info.recovery = Some(trace.recovery);
        model.info.warnings = trace.warnings.iter().map(ToString::to_string).collect();
        model
    }

    /// Builds a model while streaming a trace (no record is kept beyond its ingestion).
    ///
    /// # Errors
    ///
    /// The reader's [`hrx_capture::ReadError`] for an unreadable header or an I/O error.
    pub fn from_reader<R: Read>(
        mut reader: TraceReader<R>,
    ) -> Result<Model, hrx_capture::ReadError> {
        let mut builder = ModelBuilder::new();
        for item in reader.by_ref() {
            let (_, record) = item?;
            builder.push(&record);
        }
        let mut model = builder.finish();
        model.info.recovery = Some(*reader.recovery());
        model.info.warnings = reader.warnings().iter().map(ToString::to_string).collect();
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::state::model::queue_name;
    use hrx_capture::schema::{
        BufferId, HazardKind, Poison, PreparedId, Queue, RefusalKind, RegionIndex, RegionKind,
        SubmissionIndex, SubmitRefused,
    };
    use hrx_capture::{MemorySink, Recorder, RecorderOptions};

    fn lane_named(model: &Model, queue: Queue) -> &Lane {
        model.lanes().iter().find(|l| l.queue == queue).unwrap()
    }

    #[test]
    fn spans_join_timings_with_prepare_and_submit() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 10)
            .ran(0, 0, 100, 200)
            .ran(0, 1, 210, 500)
            .ran(0, 2, 510, 600);
        let model = f.model();
        assert_eq!(model.lanes().len(), 5);
        assert_eq!(model.span_count(), 3);
        let compute = lane_named(&model, Queue::GpuCompute);
        let span = compute.spans()[0];
        assert_eq!(
            (span.start_ns, span.end_ns, span.status()),
            (210, 500, SpanStatus::Ok)
        );
        assert_eq!(model.span_label(&span), "saxpy");
        let region = model.region(span.region);
        assert_eq!(region.kind, RegionKind::NativeGraph);
        assert_eq!(region.index, RegionIndex(1));
        let sub = model.submission(span.submission);
        assert_eq!(
            (sub.index, sub.slot, sub.submit_ns),
            (SubmissionIndex(0), 0, 10)
        );
        let op = model.op(region.prepared, region.nodes[0]).unwrap();
        assert_eq!(op.uses[1].end, 512);
        assert_eq!(
            model.span_label(&lane_named(&model, Queue::GpuUpload).spans()[0]),
            "upload"
        );
        assert_eq!(
            model.span_label(&lane_named(&model, Queue::GpuDownload).spans()[0]),
            "download"
        );
        // The (submission, region) table points back at the span.
        let key = model.key_of(&span);
        let r = model.span_of(key).unwrap();
        assert_eq!(*model.span(r), span);
        assert_eq!(queue_name(model.lane(r.lane).queue), "GPU Compute");
        assert_eq!(model.time_range(), Some(TimeWindow::new(10, 600)));
    }

    #[test]
    fn records_out_of_file_order_still_join() {
        let mut f = three_stage();
        // Completion before timing, timing before its submit (other threads' records).
        f.done(3, 1, failed("boom"), 900)
            .timing(3, 1, 400, 800)
            .submit(1, 3, &[], 300)
            .ran(3, 0, 310, 390);
        // The submission's outcome before its submit, too.
        f.push(hrx_capture::schema::SubmissionDone {
            runtime: crate::state::fixtures::RT,
            submission: SubmissionIndex(3),
            status: failed("boom"),
            time_ns: 901,
        });
        let model = f.model();
        assert_eq!(model.span_count(), 2);
        let span = lane_named(&model, Queue::GpuCompute).spans()[0];
        assert_eq!((span.start_ns, span.status()), (400, SpanStatus::Failed));
        assert!(span.ran());
        assert_eq!(model.info().unplaced_timings, 0);
        assert_eq!(model.submissions()[0].status(), SpanStatus::Failed);
    }

    #[test]
    fn cancelled_region_without_timing_gets_an_untimed_span() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .ran(0, 0, 10, 20)
            .timing(0, 1, 30, 40)
            .done(0, 1, failed("kernel error"), 41)
            .done(0, 2, cancelled("cancelled: producer region 1 failed"), 45);
        let model = f.model();
        let download = lane_named(&model, Queue::GpuDownload).spans()[0];
        assert!(!download.ran());
        assert_eq!((download.start_ns, download.end_ns), (45, 45));
        assert_eq!(download.status(), SpanStatus::Cancelled);
        // Two regions ran (one failed with its timing); the header counts them as `stats` does.
        assert_eq!((model.span_count(), model.untimed_span_count()), (3, 1));
        assert_eq!(model.spans_summary(), "2 spans (+1 untimed)");
        let r = model.span_of(model.key_of(&download)).unwrap();
        let event = model.span_event(r).unwrap();
        assert_eq!(event.kind, EventKind::RegionCancelled);
        // Shown after the kind's name: "cancelled: cancelled: ..." before.
        assert_eq!(event.text, "producer region 1 failed");
    }

    #[test]
    fn a_region_started_and_never_finished_runs_to_the_trace_end() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0).ran(0, 0, 10, 20);
        f.push(hrx_capture::schema::RegionStarted {
            runtime: crate::state::fixtures::RT,
            submission: SubmissionIndex(0),
            region: RegionIndex(1),
            time_ns: 30,
        });
        // The last record: the trace ends here, the region still running.
        f.push(hrx_capture::schema::FatalSignal {
            time_ns: 95,
            signal: 11,
            ..Default::default()
        });
        let model = f.model();
        let compute = lane_named(&model, Queue::GpuCompute).spans()[0];
        assert_eq!(
            (compute.start_ns, compute.end_ns, compute.status()),
            (30, 95, SpanStatus::Running)
        );
        assert!(!compute.ran(), "its bar is not a duration");
        assert_eq!(model.spans_summary(), "1 spans (+1 untimed)");
        // A region whose timing arrived is not running, in any record order.
        let mut f = three_stage();
        f.submit(1, 0, &[], 0);
        f.push(hrx_capture::schema::RegionStarted {
            runtime: crate::state::fixtures::RT,
            submission: SubmissionIndex(0),
            region: RegionIndex(0),
            time_ns: 5,
        });
        f.ran(0, 0, 10, 20);
        let model = f.model();
        let upload = lane_named(&model, Queue::GpuUpload).spans()[0];
        assert_eq!(upload.status(), SpanStatus::Ok);
    }

    #[test]
    fn unknown_submissions_are_counted_not_placed() {
        let mut f = three_stage();
        f.timing(9, 0, 0, 10)
            .cross(9, 0, (8, 1), HazardKind::WriteAfterRead, 1, (0, 4));
        let model = f.model();
        assert_eq!(model.span_count(), 0);
        assert_eq!(model.info().unplaced_timings, 1);
        assert_eq!(model.info().unresolved_waits, 1);
    }

    #[test]
    fn submissions_are_sorted_and_spans_renumbered() {
        let mut f = three_stage();
        f.submit(1, 5, &[], 50)
            .submit(1, 2, &[], 20)
            .ran(5, 0, 60, 70)
            .ran(2, 0, 30, 40);
        let model = f.model();
        let indices: Vec<_> = model.submissions().iter().map(|s| s.index.0).collect();
        assert_eq!(indices, vec![2, 5]);
        for span in lane_named(&model, Queue::GpuUpload).spans() {
            let sub = model.submission(span.submission);
            assert_eq!(sub.submit_ns + 10, span.start_ns);
        }
        let id = model.find_submission(RT, SubmissionIndex(5)).unwrap();
        assert_eq!(model.submission(id).submit_ns, 50);
    }

    #[test]
    fn events_are_sorted_by_time() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .push(Poison {
                runtime: RT,
                buffer: BufferId(2),
                cause: "x".into(),
                time_ns: 90,
                submission: None,
                region: None,
            })
            .push(SubmitRefused {
                runtime: RT,
                prepared: PreparedId(1),
                kind: RefusalKind::Busy,
                reason: "busy".into(),
                time_ns: 5,
            })
            .timing(0, 1, 30, 40)
            .done(0, 1, failed("kernel error"), 41);
        let model = f.model();
        let kinds: Vec<_> = model.events().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![EventKind::Busy, EventKind::RegionFailed, EventKind::Poison]
        );
        assert_eq!(model.busy_times(), &[5]);
        assert!(model.events()[1].span.is_some());
    }

    #[test]
    fn reads_a_recorded_trace() {
        let sink = MemorySink::new();
        let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        let mut f = three_stage();
        f.submit(1, 0, &[], 10)
            .ran(0, 0, 100, 200)
            .ran(0, 1, 210, 300);
        for r in &f.records {
            recorder.record(r);
        }
        recorder.close().unwrap();
        let bytes = sink.contents();
        let reader = hrx_capture::TraceReader::new(&bytes[..]).unwrap();
        let model = Model::from_reader(reader).unwrap();
        assert_eq!(model.span_count(), 2);
        assert!(model.info().recovery.unwrap().is_complete());
        assert!(model.info().session.is_some());
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(Model::from_trace(&trace).span_count(), 2);
    }

    #[test]
    fn synthetic_pipeline_builds() {
        use crate::state::synthetic::{PipelineSpec, REGIONS_PER_SUBMISSION, pipeline};
        let spec = PipelineSpec::ops(400);
        let model = ModelBuilder::from_records(&pipeline(spec).collect::<Vec<_>>());
        assert_eq!(model.span_count() as u64, 100 * REGIONS_PER_SUBMISSION);
        assert_eq!(model.submissions().len(), 100);
        assert!(model.events().is_empty());
        assert_eq!(model.cross.len(), 2 * 99);
        let labels: Vec<_> = model.labels().iter().map(String::as_str).collect();
        assert_eq!(labels, vec!["upload", "blur +1", "download", "host"]);
    }

    /// Builds a model of a million operations and prints the time and memory it took.
    /// Run with `cargo test -p hrx-tui --release -- --ignored million --nocapture`.
    #[test]
    #[ignore = "measurement: run in release"]
    fn million_operations() {
        use crate::state::synthetic::{PipelineSpec, pipeline};
        use std::time::Instant;
        let spec = PipelineSpec::ops(1_000_000);
        let start = Instant::now();
        let records = pipeline(spec.clone()).count();
        println!("generating {records} records alone: {:?}", start.elapsed());
        let start = Instant::now();
        let mut builder = ModelBuilder::new();
        for record in pipeline(spec.clone()) {
            builder.push(&record);
        }
        let model = builder.finish();
        let ingest = start.elapsed();
        let spans = model.span_count();
        println!(
            "ingest of {spans} spans from generated records: {ingest:?}, {:.1} bytes/span in span structures",
            model.heap_bytes() as f64 / spans as f64
        );
        assert_eq!(spans, 1_000_000);

        // The same trace through the real writer and reader.
        let sink = MemorySink::new();
        let options = RecorderOptions {
            full_buffer_wait: std::time::Duration::from_secs(5),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        for record in pipeline(spec) {
            recorder.record(&record);
        }
        recorder.close().unwrap();
        let bytes = sink.contents();
        let start = Instant::now();
        let reader = hrx_capture::TraceReader::new(&bytes[..]).unwrap();
        let from_file = Model::from_reader(reader).unwrap();
        println!(
            "decode + ingest of a {} MiB trace file: {:?}",
            bytes.len() >> 20,
            start.elapsed()
        );
        assert_eq!(from_file.span_count(), spans);

        let mut state = crate::state::ViewState::new(&model, 200, 60);
        let start = Instant::now();
        let frames = 20;
        for _ in 0..frames {
            std::hint::black_box(crate::view::render_to_string(&model, &state, 200, 60));
            state.update(&model, crate::state::Action::ZoomIn);
        }
        println!(
            "render (fit, then zooming in): {:?} per frame",
            start.elapsed() / frames
        );
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            let peak = status.lines().find(|l| l.starts_with("VmHWM"));
            println!("peak resident memory of the whole test: {peak:?}");
        }
    }
}

#[cfg(test)]
/// The model's statistics are `hrx-analysis`'s, gathered over the records it was built from.
mod statistics_tests {
    use super::super::fixtures::*;
    use hrx_capture::schema::Queue;

    #[test]
    fn statistics_from_known_spans() {
        let mut f = three_stage();
        // saxpy (compute) durations 10, 20, 30 and 40; uploads 100 each (4096 B copies).
        for (i, d) in [10u64, 20, 30, 40].into_iter().enumerate() {
            let i = i as u64;
            let t = 1_000 * i;
            f.submit(1, i, &[], t)
                .ran(i, 0, t, t + 100)
                .ran(i, 1, t + 200, t + 200 + d);
        }
        let model = f.model();
        let stats = model.stats();
        let saxpy = stats.kernels.iter().find(|k| k.name == "saxpy").unwrap();
        assert_eq!(
            (
                saxpy.count,
                saxpy.total_ns,
                saxpy.mean_ns,
                saxpy.p50_ns,
                saxpy.p99_ns,
                saxpy.min_ns,
                saxpy.max_ns
            ),
            (4, 100, 25, 20, 40, 10, 40)
        );
        // Uploads are copies, not kernels (the table listed them first, by total time).
        assert!(stats.kernels.iter().all(|k| k.name != "upload"));
        let upload = &stats.copy_labels[0];
        assert_eq!(
            (upload.name.as_str(), upload.count, upload.total_ns),
            ("upload", 4, 400)
        );
        // Trace span: 0 .. 3240.
        assert_eq!(stats.span_ns, 3_240);
        let lane_stats = |q| stats.lanes.iter().find(|l| l.queue == q).unwrap();
        assert_eq!(lane_stats(Queue::GpuUpload).busy_ns, 400);
        assert!((lane_stats(Queue::GpuCompute).utilisation - 100.0 / 3_240.0).abs() < 1e-12);
        let copy = &stats.copies[0];
        assert_eq!(copy.queue, Queue::GpuUpload);
        assert_eq!((copy.batches, copy.bytes, copy.busy_ns), (4, 4 * 4096, 400));
        assert!((copy.bytes_per_s - 4096.0 / 100e-9).abs() < 1.0);
    }

    #[test]
    fn overlapping_spans_count_once_in_utilisation() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[], 0)
            .ran(0, 1, 0, 100)
            .ran(1, 1, 50, 150);
        let model = f.model();
        let lane = &model.stats().lanes[0];
        assert_eq!((lane.spans, lane.busy_ns), (2, 150));
        assert!((lane.utilisation - 1.0).abs() < 1e-12);
    }
}

#[cfg(test)]
pub(crate) mod order_tests;
