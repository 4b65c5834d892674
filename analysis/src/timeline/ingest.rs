//! Building a [`Model`] from records in one pass.
//!
//! Every join of a record to its submission, prepared graph, region, queue and lane is
//! `hrx-analysis`'s ([`crate::Joiner`], the pass `stats`, `export` and `diff` read
//! through): records arrive in file order, which is only per-thread order, and the joiner
//! holds a timing, completion or wait read before its `Submit` until that arrives. The
//! builder takes what the joiner hands over ([`Joined`]: submissions by ordinal, joined
//! spans, submission and region outcomes, waits and explicit producers joined at both ends)
//! and fills the model's tables, which are indexed by the submission's ordinal until
//! [`ModelBuilder::finish`] sorts them. Every step is linear in the number of records,
//! except sorting spans by start time, which is adaptive (already-ordered runs cost linear
//! time).
//!
//! `finish` runs the stages in this order:
//!
//! 1. sort submissions by (runtime, index) and renumber span references;
//! 2. add an untimed span for every failed or cancelled region that has no timing, and a
//!    span to the trace's end for every region that started and never finished
//!    ([`SpanStatus::Running`]: what a hang or a crash was in; the joiner's
//!    [`crate::ScanSummary::running`]);
//! 3. sort each lane, fill the (submission, region) → span table and copy statuses in;
//!    sort the operation timings by region slot ([`super::ops`]);
//! 4. number the joined waits and explicit producers by sorted submission, take the
//!    joiner's index (regions labelled there) and give each region its search key,
//!    sort events and link each to the span of the region it names (the joiner joined it to
//!    its submission, [`crate::JoinedEvent`]);
//! 5. statistics and the first failure.

use super::hazards;
use super::lanes::{Lane, Span, SpanStatus, TimeWindow};
use super::model::{
    CrossEdge, EXPLICIT_PRODUCERS_KEPT, Event, EventId, EventKind, LaneRef, Model, RegionKey,
    RegionRef, SpanRef, SubId, Submission,
};
use super::ops::OpSpan;
use crate::{
    Index, JoinedEvent, JoinedLink, JoinedRegion, JoinedSpan, JoinedSubmission, Outcome,
    ScanSummary,
};
use hrx_capture::schema::{
    CrossWait, Record, RefusalKind, RegionIndex, RuntimeId, Status, SubmissionIndex, Submit,
};
use hrx_capture::{Trace, TraceReader};
use std::collections::HashMap;
use std::io::Read;

/// What `hrx-analysis`'s joiner handed over for a record: the joins the model is built from.
#[derive(Clone, Debug)]
pub(super) enum Joined {
    /// A `Submit`, joined to its prepared graph; its ordinal is its id until sorted.
    Submitted {
        joined: JoinedSubmission,
        slot: u32,
        time_ns: u64,
        /// Its explicit producers: all, or its [`EXPLICIT_PRODUCERS_KEPT`] latest (the
        /// joiner joins no more) and how many it named past them.
        producers: Vec<SubmissionIndex>,
        left_out: u32,
        /// Regions of its prepared graph (0 when that was not recorded).
        regions: u32,
    },
    /// A region timing joined to its region.
    Span(JoinedSpan),
    /// An operation timing joined to its region: the operation `node`.
    OpSpan(JoinedSpan, hrx_capture::schema::NodeIndex),
    /// A submission's outcome.
    Outcome(u64, SpanStatus),
    /// A region's completion joined to its region, at its time.
    Region(JoinedRegion, SpanStatus, u64),
    /// A wait or explicit producer joined at both ends.
    Link(JoinedLink),
    /// A record about a submission (an event) joined to it.
    Event(JoinedEvent),
}

/// The visitor of the builder's joiner: the statistics, and the joins kept for the builder
/// to take after each record.
#[derive(Clone, Debug, Default)]
pub(super) struct Joins {
    stats: crate::StatsVisitor,
    pub(super) threads: super::threads::HostThreads,
    pub(super) out: Vec<Joined>,
}

impl crate::Visitor for Joins {
    fn record(&mut self, index: &Index, record: &Record) {
        self.stats.record(index, record);
        self.threads.record(record);
    }
    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        self.stats.span(index, span);
        self.out.push(Joined::Span(*span));
    }
    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: hrx_capture::schema::NodeIndex) {
        self.stats.op_span(index, span, node);
        self.out.push(Joined::OpSpan(*span, node));
    }
    fn outcome(
        &mut self,
        index: &Index,
        submission: &JoinedSubmission,
        previous: Option<Outcome>,
        outcome: Outcome,
    ) {
        self.stats.outcome(index, submission, previous, outcome);
        self.out
            .push(Joined::Outcome(submission.ordinal, outcome_status(outcome)));
    }
    fn submitted(&mut self, index: &Index, submission: &JoinedSubmission, submit: &Submit) {
        self.stats.submitted(index, submission, submit);
        self.out.push(Joined::Submitted {
            joined: *submission,
            slot: submit.slot,
            time_ns: submit.time_ns,
            producers: crate::scan::latest_producers(&submit.producers, EXPLICIT_PRODUCERS_KEPT),
            // Those the joiner did not hold while the `Submit` waited for its graph, too.
            left_out: u32::try_from(crate::scan::producers_left_out(
                &submit.producers,
                EXPLICIT_PRODUCERS_KEPT,
            ))
            .unwrap_or(u32::MAX)
            .saturating_add(submission.producers_not_held),
            regions: submission
                .prepared
                .map_or(0, |p| index.prepared()[p.get()].regions.len() as u32),
        });
    }
    fn region_outcome(&mut self, index: &Index, region: &JoinedRegion, outcome: Outcome, at: u64) {
        self.stats.region_outcome(index, region, outcome, at);
        self.out
            .push(Joined::Region(*region, outcome_status(outcome), at));
    }
    fn link(&mut self, index: &Index, link: &JoinedLink) {
        self.stats.link(index, link);
        self.out.push(Joined::Link(*link));
    }
    fn event(&mut self, index: &Index, event: &JoinedEvent) {
        self.stats.event(index, event);
        self.out.push(Joined::Event(*event));
    }
}

fn outcome_status(outcome: Outcome) -> SpanStatus {
    match outcome {
        Outcome::Ok => SpanStatus::Ok,
        Outcome::Failed => SpanStatus::Failed,
        Outcome::Cancelled => SpanStatus::Cancelled,
    }
}

/// The submission id of an ordinal before submissions are sorted.
pub(super) fn arrival(ordinal: u64) -> SubId {
    SubId(ordinal as u32)
}

/// Builds a [`Model`] from records pushed one at a time.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    pub(super) model: Model,
    /// `hrx-analysis`'s joiner, and its visitor (the statistics and the joins).
    joiner: crate::Joiner,
    pub(super) joins: Joins,
    /// Per region slot (submission by arrival, region), its completion status.
    region_status: Vec<SpanStatus>,
    /// Failed and cancelled regions, in the order their completions joined: each gets an
    /// untimed span if it has no timing.
    pub(super) region_ends: Vec<(SubId, RegionRef, SpanStatus, u64)>,
    /// Waits and explicit producers joined, by submission ordinal.
    cross: Vec<(u64, u64, CrossWait)>,
    explicit: Vec<(u64, u64)>,
    /// Submission ids by arrival → sorted, once sorted out of order.
    new_ids: Option<Vec<u32>>,
    /// The latest host time of any record.
    pub(super) last_ns: u64,
    /// Per event (as pushed, before sorting), its record's place in the pass, and the
    /// ordinal of the submission the joiner joined it to.
    event_records: Vec<u64>,
    event_ordinals: Vec<Option<u64>>,
    /// Whether the joiner finished (its index is then the model's).
    joined: bool,
}

impl Default for ModelBuilder {
    /// An empty builder, whose joiner joins at most [`EXPLICIT_PRODUCERS_KEPT`] explicit
    /// producers of a `Submit` (the model keeps no more).
    fn default() -> ModelBuilder {
        let mut joiner = crate::Joiner::new();
        joiner.limit_explicit_producers(EXPLICIT_PRODUCERS_KEPT);
        ModelBuilder {
            model: Model::default(),
            joiner,
            joins: Joins::default(),
            region_status: Vec::new(),
            region_ends: Vec::new(),
            cross: Vec::new(),
            explicit: Vec::new(),
            new_ids: None,
            last_ns: 0,
            event_records: Vec::new(),
            event_ordinals: Vec::new(),
            joined: false,
        }
    }
}

impl ModelBuilder {
    /// An empty builder.
    pub fn new() -> ModelBuilder {
        ModelBuilder::default()
    }

    /// Ingests one record.
    pub fn push(&mut self, record: &Record) {
        self.push_shared(record);
        self.take_joins();
    }

    /// Fills the model's tables from one join.
    fn apply(&mut self, joined: &Joined) {
        match joined {
            Joined::Submitted {
                joined,
                slot,
                time_ns,
                producers,
                left_out,
                regions,
            } => {
                let mut sub = self.submission(joined, *slot, *time_ns, producers, *left_out);
                let regions = *regions as usize;
                sub.region_base = self.model.region_spans.len() as u32;
                let region_spans = self.model.region_spans.vec_mut();
                region_spans.resize(region_spans.len() + regions, SpanRef::NONE);
                self.region_status
                    .resize(self.region_status.len() + regions, SpanStatus::Unknown);
                sub.producers_start = self.model.explicit_producers.len() as u32;
                self.model.explicit_producers.vec_mut().extend(producers);
                debug_assert_eq!(self.model.submissions.len() as u64, joined.ordinal);
                self.model.submissions.vec_mut().push(sub);
                self.model.submit_times.vec_mut().push(*time_ns);
            }
            Joined::Span(t) => {
                let (sub, region) = (arrival(t.ordinal), t.region);
                // The builder created the lanes of every `Prepared` as the index did.
                self.model.lanes[t.lane.get()]
                    .push(Span::timed(t.start_ns, t.end_ns, t.device, sub, region));
            }
            Joined::OpSpan(t, node) => {
                let base = self.model.submissions[arrival(t.ordinal).get()].region_base;
                let slot = base + self.index().region(t.region).index.0;
                let op = OpSpan::new(slot, *node, t.start_ns, t.end_ns, t.device);
                self.model.op_spans.vec_mut().push(op);
                self.model.count_op_span(t.lane);
            }
            Joined::Outcome(ordinal, status) => {
                self.model.submissions[arrival(*ordinal).get()].set_status(*status);
            }
            Joined::Region(r, status, time_ns) => {
                let sub = arrival(r.submission.ordinal);
                let slot =
                    self.model.submissions[sub.get()].region_base as usize + r.index.0 as usize;
                self.region_status[slot] = *status;
                if matches!(status, SpanStatus::Failed | SpanStatus::Cancelled) {
                    self.region_ends.push((sub, r.region, *status, *time_ns));
                }
            }
            Joined::Link(link) => match link.wait {
                Some(wait) => self.cross.push((link.consumer, link.producer, wait)),
                None => self.explicit.push((link.consumer, link.producer)),
            },
            Joined::Event(e) => self.join_event(e),
        }
    }

    /// Keeps the submission of an event the joiner joined (events that name no submission
    /// on the timeline, a poisoning's, keep none).
    pub(super) fn join_event(&mut self, joined: &JoinedEvent) {
        if let Some(i) = self.event_of(joined) {
            self.event_ordinals[i] = Some(joined.submission.ordinal);
        }
    }

    /// The event (as pushed) of an event the joiner joined, where it keeps its submission.
    pub(super) fn event_of(&self, joined: &JoinedEvent) -> Option<usize> {
        let i = self.event_records.binary_search(&joined.record).ok()?;
        (self.model.events[i].submission == Some(joined.submission.submission)).then_some(i)
    }

    /// The sorted submission of each event's join, in the order events were pushed.
    pub(super) fn event_submissions(&self, final_id: impl Fn(u64) -> SubId) -> Vec<Option<SubId>> {
        self.event_ordinals
            .iter()
            .map(|o| o.map(&final_id))
            .collect()
    }

    /// The model's row of a joined `Submit` (its prepared graph numbered as the index
    /// numbers it: both count `Prepared` records in file order).
    pub(super) fn submission(
        &self,
        joined: &JoinedSubmission,
        slot: u32,
        time_ns: u64,
        producers: &[SubmissionIndex],
        left_out: u32,
    ) -> Submission {
        let prepared = joined.prepared;
        let mut sub = Submission::new(joined.runtime, joined.submission, slot, time_ns, prepared);
        sub.producers_len = producers.len() as u32;
        sub.producers_left_out = left_out;
        sub
    }

    /// Ingests what of a record does not grow with submissions or regions (the structure,
    /// events, the recording's facts): everything but the per-submission joins, which
    /// [`ModelBuilder::push`] keeps in memory and the streaming builder
    /// ([`super::stream`]) on disk.
    pub(super) fn push_shared(&mut self, record: &Record) {
        self.joiner.push(record, &mut self.joins);
        add_lanes(&mut self.model.lanes, self.joiner.index());
        self.model.info.records += 1;
        self.model.info.observe(record);
        if let Some(ns) = crate::dump::host_time_ns(record) {
            self.last_ns = self.last_ns.max(ns);
        }
        match record {
            Record::SessionStart(s) => self.model.info.session = Some(s.clone()),
            Record::SessionEnd(e) => self.model.info.end = Some(*e),
            Record::FatalSignal(f) => {
                let info = &mut self.model.info;
                if info.fatal.is_none_or(|known| {
                    known.witness != hrx_capture::schema::SignalWitness::Handler
                }) {
                    info.fatal = Some(*f);
                }
            }
            Record::RuntimeStart(r) => self.model.info.runtimes.push(r.clone()),
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
        // `push_shared` counted the record: its place in the pass, as the joiner numbers it.
        self.event_records.push(self.model.info.records - 1);
        self.event_ordinals.push(None);
    }

    /// Finishes the model (see the module docs for the stages).
    pub fn finish(mut self) -> Model {
        let summary = self.finish_joiner();
        self.take_joins();
        self.sort_submissions();
        self.add_untimed_spans();
        self.add_running_spans(&summary);
        self.index_spans();
        super::ops::sort_from(self.model.op_spans.vec_mut(), 0);
        self.resolve_edges();
        self.label_regions();
        let keys = self.finish_events();
        let stats = self.take_stats(&summary);
        let mut model = self.model;
        model.threads = self.joins.threads.rows(&model.index);
        model.range = time_range(&model);
        model.stats = stats;
        model.first_failure = hazards::first_failure(&model, &keys);
        model
    }

    /// The statistics of every record pushed (`hrx-analysis`'s, as `hrx-trace stats`
    /// computes them), and the joiner's counts of what never joined.
    /// The host threads' rows of every record pushed (finished: sorted and named).
    pub(super) fn thread_rows(&self) -> Vec<super::ThreadRow> {
        self.joins.threads.rows(self.index())
    }

    pub(super) fn take_stats(&mut self, summary: &ScanSummary) -> crate::Stats {
        self.model.info.unplaced_timings += summary.unplaced_timings;
        self.model.info.unresolved_waits += summary.unresolved_waits;
        self.model.info.producers_not_parked += summary.producers_not_parked;
        self.model.info.running_not_drawn = super::RunningNotDrawn::of(&summary.running);
        self.model.info.timing_lost += summary.timing_lost.len() as u64;
        self.model.info.at_the_end = summary.at_the_end();
        std::mem::take(&mut self.joins.stats).finish(summary)
    }

    /// The joiner's summary at the end of the records; a submit whose graph's `Prepared`
    /// never came joins then as a submission without regions (its joins wait in `joins`).
    pub(super) fn finish_joiner(&mut self) -> ScanSummary {
        let summary = std::mem::take(&mut self.joiner).finish(&mut self.joins, None, Vec::new());
        // The model reads its structure from the joiner's index (bounded by what the
        // program built, so a copy is cheap); the statistics still read the summary's.
        self.model.index = summary.index.clone();
        self.joined = true;
        add_lanes(&mut self.model.lanes, &self.model.index);
        summary
    }

    /// The structure read so far: the joiner's index, the model's once the joiner finished.
    pub(super) fn index(&self) -> &Index {
        if self.joined {
            &self.model.index
        } else {
            self.joiner.index()
        }
    }

    /// What [`ModelBuilder::finish_joiner`] would return now, from copies of the joiner and
    /// the statistics, the builder going on taking records (a followed trace's publish,
    /// [`super::live`]): the summary, the joins the end adds, and the statistics. The
    /// copies hold the structure and what is in flight, not the trace's regions (the
    /// joiner's submissions and the statistics' busy intervals are read in place where
    /// finishing does not change them: [`crate::Joiner::finish_copy`],
    /// [`crate::StatsVisitor::copy_without_busy`]).
    pub(super) fn finish_joiner_copy(&self) -> (ScanSummary, Vec<Joined>, crate::Stats) {
        let mut joins = Joins {
            stats: self.joins.stats.copy_without_busy(),
            threads: Default::default(),
            out: Vec::new(),
        };
        let summary = self.joiner.finish_copy(&mut joins, None, Vec::new());
        let stats = joins.stats.finish_beside(&self.joins.stats, &summary);
        (summary, joins.out, stats)
    }

    /// Applies what the joiner handed over since the last call.
    fn take_joins(&mut self) {
        let joined = std::mem::take(&mut self.joins.out);
        for j in &joined {
            self.apply(j);
        }
        self.joins.out = joined;
        self.joins.out.clear();
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
        for end in &mut self.region_ends {
            end.0 = SubId(new_id[end.0.get()]);
        }
        self.new_ids = Some(new_id);
    }

    /// The sorted submission id of an ordinal.
    fn final_id(&self, ordinal: u64) -> SubId {
        let id = ordinal as u32;
        SubId(self.new_ids.as_ref().map_or(id, |ids| ids[id as usize]))
    }

    /// Adds a span at its completion time for every failed or cancelled region without a
    /// timing (a cancelled region never ran; a failed one may have lost its timing).
    fn add_untimed_spans(&mut self) {
        let model = &mut self.model;
        for lane in &model.lanes {
            for span in lane.spans() {
                let base = model.submissions[span.submission.get()].region_base as usize;
                let region = model.region(span.region).index.0 as usize;
                model.region_spans[base + region] = 0; // timed
            }
        }
        let mut untimed = Vec::new();
        for &(sub, region_id, status, time_ns) in &self.region_ends {
            let region = self.model.index.region(region_id);
            let slot =
                self.model.submissions[sub.get()].region_base as usize + region.index.0 as usize;
            if self.model.region_spans[slot] == SpanRef::NONE {
                self.model.region_spans[slot] = 0;
                untimed.push((region.lane, Span::untimed(time_ns, sub, region_id, status)));
            }
        }
        self.model.untimed_spans = untimed.len();
        for (lane, span) in untimed {
            self.model.lanes[lane.get()].push(span);
        }
    }

    /// A span from its start to the trace's end for every region that started and has no
    /// timing nor completion: it was running when the trace ended.
    fn add_running_spans(&mut self, summary: &ScanSummary) {
        for r in &summary.running {
            let (Some(ordinal), Some(region_ref)) = (r.ordinal, r.region_ref) else {
                continue;
            };
            let (region, start_ns) = (r.region, r.start_ns);
            let (sub, region_id) = (self.final_id(ordinal), RegionRef(region_ref.0));
            let slot = self.model.submissions[sub.get()].region_base as usize + region.0 as usize;
            if self.model.region_spans[slot] != SpanRef::NONE {
                continue;
            }
            self.model.region_spans[slot] = 0;
            let lane = self.model.region(region_id).lane;
            let end_ns = self.last_ns.max(start_ns);
            self.model.untimed_spans += 1;
            self.model.lanes[lane.get()].push(Span::unfinished(start_ns, end_ns, sub, region_id));
        }
        // Timing lost (records dropped): no hang, an untimed span at its start.
        for r in &summary.timing_lost {
            let (Some(ordinal), Some(region_ref)) = (r.ordinal, r.region_ref) else {
                continue;
            };
            let (sub, region_id) = (self.final_id(ordinal), RegionRef(region_ref.0));
            let slot = self.model.submissions[sub.get()].region_base as usize + r.region.0 as usize;
            if self.model.region_spans[slot] != SpanRef::NONE {
                continue;
            }
            self.model.region_spans[slot] = 0;
            let lane = self.model.region(region_id).lane;
            self.model.untimed_spans += 1;
            let span = Span::untimed(r.start_ns, sub, region_id, SpanStatus::TimingLost);
            self.model.lanes[lane.get()].push(span);
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
                let region = model.index.region(span.region);
                let slot = sub.region_base as usize + region.index.0 as usize;
                model.region_spans[slot] = SpanRef {
                    lane: LaneRef(lane_index as u32),
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
    }

    /// Numbers the joined waits and explicit producers by sorted submission.
    fn resolve_edges(&mut self) {
        let key = |ordinal, region: RegionIndex| RegionKey {
            submission: self.final_id(ordinal),
            region: region.0,
        };
        let mut cross: Vec<CrossEdge> = self
            .cross
            .iter()
            .map(|&(consumer, producer, w)| {
                CrossEdge::new(
                    key(consumer, w.region),
                    key(producer, w.on_region),
                    w.kind,
                    w.buffer,
                    w.start,
                    w.end,
                )
            })
            .collect();
        cross.sort_by_key(|e| e.consumer);
        let mut by_producer: Vec<u32> = (0..cross.len() as u32).collect();
        by_producer.sort_by_key(|&i| cross[i as usize].producer);
        let mut explicit: Vec<(SubId, SubId)> = self
            .explicit
            .iter()
            .map(|&(consumer, producer)| (self.final_id(producer), self.final_id(consumer)))
            .collect();
        explicit.sort_unstable();
        let mut by_consumer: Vec<u32> = (0..explicit.len() as u32).collect();
        by_consumer.sort_by_key(|&i| (explicit[i as usize].1, i));
        let model = &mut self.model;
        model.cross = cross.into();
        model.cross_by_producer = by_producer.into();
        model.explicit_edges = explicit.into();
        model.explicit_by_consumer = by_consumer.into();
        self.cross = Vec::new();
        self.explicit = Vec::new();
    }

    /// Names every region, gives it its search key, and counts spans per label and key.
    fn label_regions(&mut self) {
        name_regions(&mut self.model);
        let model = &mut self.model;
        for lane in &model.lanes {
            for span in lane.spans() {
                count_label(
                    &model.index,
                    &model.search_keys,
                    &mut model.label_spans,
                    &mut model.search_key_spans,
                    span,
                );
            }
        }
    }

    /// Sorts events and submit times, and links failures and cancellations to their spans;
    /// returns the region each event names, by sorted event.
    fn finish_events(&mut self) -> Vec<Option<RegionKey>> {
        self.model.submit_times.vec_mut().sort_unstable();
        let subs = self.event_submissions(|o| self.final_id(o));
        link_events(&mut self.model, subs)
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

/// Gives every region its search key (its label, from the index, and its operations'
/// names); the counts of spans per label and key start at zero ([`count_label`] adds each
/// span).
pub(super) fn name_regions(model: &mut Model) {
    let index = &model.index;
    let mut keys: HashMap<String, u32> = HashMap::new();
    let mut texts = Vec::new();
    let search_keys = (0..index.regions().len())
        .map(|i| {
            let region = RegionRef(i as u32);
            let label = index.label(region).map_or("", |l| &index.labels()[l.get()]);
            let mut text = label.to_lowercase();
            for (_, op) in index.region_ops(region) {
                text.push('\n');
                text.push_str(&op.to_lowercase());
            }
            *keys.entry(text).or_insert_with_key(|text| {
                texts.push(text.clone());
                texts.len() as u32 - 1
            })
        })
        .collect();
    model.label_spans = vec![0; index.labels().len()];
    model.search_keys = search_keys;
    model.search_key_spans = vec![0; texts.len()];
    model.search_texts = texts;
}

/// Counts `span` in its region's label and search key.
pub(super) fn count_label(
    index: &Index,
    search_keys: &[u32],
    label_spans: &mut [u64],
    search_key_spans: &mut [u64],
    span: &Span,
) {
    if let Some(label) = index.label(span.region) {
        label_spans[label.get()] += 1;
    }
    search_key_spans[search_keys[span.region.get()] as usize] += 1;
}

/// Sorts events and busy times by time and links failures and cancellations to their spans
/// (a lookup each in the span table, mapped or not). `subs` is the submission each event
/// was joined to, in the order events were pushed; returns the region each names, by
/// sorted event.
pub(super) fn link_events(model: &mut Model, subs: Vec<Option<SubId>>) -> Vec<Option<RegionKey>> {
    debug_assert_eq!(subs.len(), model.events.len());
    let mut events: Vec<(Event, Option<RegionKey>)> = std::mem::take(&mut model.events)
        .into_iter()
        .zip(subs)
        .map(|(e, sub)| {
            let key = sub.zip(e.region).map(|(submission, r)| RegionKey {
                submission,
                region: r.0,
            });
            (e, key)
        })
        .collect();
    // Stable: events of one time keep their record order.
    events.sort_by_key(|(e, _)| e.time_ns);
    let (events, keys): (Vec<Event>, Vec<Option<RegionKey>>) = events.into_iter().unzip();
    model.events = events;
    model.busy_times.sort_unstable();
    let spans: Vec<Option<SpanRef>> = keys.iter().map(|key| model.span_of((*key)?)).collect();
    for (i, (e, span)) in model.events.iter_mut().zip(spans).enumerate() {
        e.span = span;
        if let (Some(span), EventKind::RegionFailed | EventKind::RegionCancelled) = (span, e.kind) {
            model.span_events.insert(span, EventId(i as u32));
        }
    }
    keys
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

/// A lane for each lane of `index` not yet in `lanes` (the index numbers lanes: five per
/// runtime, in the order runtimes are first seen).
fn add_lanes(lanes: &mut Vec<Lane>, index: &Index) {
    let all = index.lanes();
    for info in &all[lanes.len().min(all.len())..] {
        lanes.push(Lane::new(info.runtime, info.queue));
    }
}

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
    // Host threads' spans: the application's work before the first submission included.
    let thread_starts = model
        .threads
        .iter()
        .filter_map(|r| r.spans.first())
        .map(|s| s.start_ns);
    let thread_ends = model
        .threads
        .iter()
        .flat_map(|r| r.spans.iter().map(|s| s.end_ns).max());
    // And their markers (a thread may only mark: `f` fitted the GPU's spans and left them out).
    let markers = model
        .threads
        .iter()
        .flat_map(|r| r.markers.iter().map(|m| m.0));
    let start = starts
        .chain(events.clone())
        .chain(first_ticks)
        .chain(thread_starts)
        .chain(markers.clone())
        .min()?;
    let end = ends
        .chain(thread_ends)
        .chain(markers.map(|t| t.saturating_add(1)))
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
mod tests;

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
mod order_tests;
