//! The model of a trace that is still being written, kept finished and updated in place
//! (`view --follow`): a publish finishes what came after the *settled* submissions, not the
//! whole trace.
//!
//! [`ModelBuilder`] finishes a model once, from tables in the order records arrived. A
//! followed trace is published after every read of appended blocks; finishing a copy of the
//! builder each time costs the whole trace (1.8 s of CPU at 10M regions) and holds it twice.
//! [`LiveBuilder`] keeps one finished [`Model`] instead, the view borrowing it between
//! publishes, and splits its per-submission tables at a watermark:
//!
//! ```text
//!                 settled (final, never written again)  | tail (finished again each publish)
//! submissions     ordinals 0..K = the K first by key    | arrival order → sorted, SubIds K..
//! each lane       its spans of settled submissions,     | timed spans in join order, untimed,
//!                 all starting before any tail span     | running and timing-lost spans → sorted
//! span table      slots of settled submissions          | slots after them
//! waits           consumer settled (sorted by consumer) | consumer in the tail
//! by producer,    a settled run, then settled items a   | merged with the settled items that
//! explicit edges, tail item sorts before ("rest")       | sort after a tail item
//! submit times
//! op timings      sorted by region slot                 | arrived since: sorted into the end
//! ```
//!
//! A submission is *settled* when its outcome, every region's completion and a span for
//! every region (timed, or untimed: cancelled, failed or its timing lost; not running) were
//! read: nothing still to come changes it. The watermark K only moves forward over
//! submissions that are settled, are the first K by (runtime, index) as well as by arrival,
//! whose waits and explicit producers name settled producers, and whose spans come, on
//! every lane, strictly before every span after them (so no tie in start time crosses it).
//!
//! A publish ([`LiveBuilder::publish`]) then costs what is in the tail and the new records:
//! it sorts the tail's submissions, places the tail's spans after the lanes' settled spans
//! and rebuilds the block index from the last settled block, resolves the tail's waits and
//! explicit producers, merges them into the producer-sorted indexes (a wait on a settled
//! submission, the usual case, sorts near their end: the settled items after it are pulled
//! back and merged; the cost is how far back it reaches), and counts spans per label from
//! per-region counts of the settled spans. What is per prepared graph or per runtime
//! (regions, labels, the index's copy) or rare (events, busy times, the first failure) is
//! done whole. The joiner's end (submits whose `Prepared` never came, entered without their
//! graph; regions still running) and the statistics are taken without consuming them
//! ([`crate::Joiner::finish_copy`], [`crate::StatsVisitor::copy_without_busy`]): what
//! finishing changes is copied (what is in flight), what it only reads is read in place
//! (the joiner's retired submissions, the lanes' busy intervals); what the end adds is
//! published and then taken back.
//!
//! A record that would change the settled part makes the next publish finish the whole
//! model ([`LiveBuilder::unsettle`]): a `Submit` that sorts before a settled submission (a
//! renumbering: records of several runtimes, or submits out of order), a span starting no
//! later than a lane's last settled span, a timing, completion or outcome of a settled
//! submission, a wait whose consumer is settled. The settled tables are then turned back
//! into what arrived (the settled timed spans in lane order, which is their arrival order
//! wherever it matters: no tail span ties with them) and finished whole, as
//! [`ModelBuilder::finish`] would; the watermark is recomputed. Every publish equals
//! [`ModelBuilder::finish`] of the same records (the tests check it after every record, in
//! file order and in the worst thread order).
//!
//! What stays in the tail for long: a submission that never settles (a region that never
//! completes, a completion lost in a lossy recording) keeps every submission after it in the
//! tail, so publishes grow with what came after it; in a trace of several runtimes
//! submitting at once, their submissions interleave by key, so a renumbering falls back to
//! the whole model and one runtime's submissions then stay in the tail.
//!
//! Why one model updated in place rather than columns of two parts (a shared, frozen prefix
//! and an owned tail): every reader of the model (lanes, the span table, hazards, the view
//! cache) stays as it is, and the process holds one model instead of a builder and a copy.
//! The price is that a publish needs the model mutably: the view borrows it between
//! publishes.

use super::hazards;
use super::ingest::{Joined, ModelBuilder, link_events, name_regions, time_range};
use super::lanes::{Span, SpanStatus};
use super::model::{
    CrossEdge, Event, LaneRef, Model, RegionKey, RegionRef, SpanRef, SubId, Submission,
};
use super::ops::OpSpan;
use hrx_capture::schema::{Record, RuntimeId, SubmissionIndex};

/// What the latest [`LiveBuilder::publish`] finished.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Publish {
    /// Whether it finished the whole model (nothing was settled: the first publish, or a
    /// record changed the settled part).
    pub whole: bool,
    /// Submissions it finished: those after the settled ones.
    pub submissions: usize,
    /// Spans it placed: those after the lanes' settled spans.
    pub spans: usize,
    /// Submissions settled after it.
    pub settled: usize,
}

/// A failed or cancelled region's completion, by its submission's ordinal.
#[derive(Clone, Copy, Debug)]
struct RegionEnd {
    /// Its place among the completions joined (their order decides ties in start time).
    seq: u64,
    lane: LaneRef,
    ordinal: u64,
    region: RegionRef,
    status: SpanStatus,
    time_ns: u64,
}

/// What arrived for the submissions after the settled ones, as it arrived.
#[derive(Clone, Debug, Default)]
struct Tail {
    /// Their rows by ordinal (region base, explicit producers, outcome).
    subs: Vec<Submission>,
    /// Per lane, their timed spans in join order (`submission`: the ordinal).
    spans: Vec<Vec<Span>>,
    /// Their waits in join order (`submission` of both keys: the ordinal).
    cross: Vec<CrossEdge>,
    /// Their explicit producers: (consumer, producer) ordinals.
    explicit: Vec<(u64, u64)>,
    /// Their failed and cancelled regions' completions, in join order.
    region_ends: Vec<RegionEnd>,
}

/// A sorted column of a settled run (`len` items, final) then the rest, finished again at
/// each publish: the settled items that sort after a tail item (`rest`, sorted), merged
/// with the tail's.
#[derive(Clone, Debug, Default)]
struct SettledRun<T> {
    len: usize,
    rest: Vec<T>,
}

impl<T: Copy> SettledRun<T> {
    /// Writes `column` from the settled run on: `rest` merged with `tail` (sorted by `key`,
    /// a total order); settled items that a tail item sorts before are pulled back into
    /// `rest` first. `moved` sees each rest item at its new position.
    fn publish<K: Ord>(
        &mut self,
        column: &mut Vec<T>,
        tail: &[T],
        key: impl Fn(&T) -> K,
        mut moved: impl FnMut(&T, usize),
        mut pulled: impl FnMut(&T, usize),
    ) {
        if let Some(first) = tail.first() {
            let first = key(first);
            let p = column[..self.len].partition_point(|x| key(x) <= first);
            if p < self.len {
                for (i, x) in column[p..self.len].iter().enumerate() {
                    pulled(x, p + i);
                }
                self.rest.extend_from_slice(&column[p..self.len]);
                self.rest.sort_by_key(&key);
                self.len = p;
            }
        }
        column.truncate(self.len);
        let (mut r, mut t) = (0, 0);
        while r < self.rest.len() || t < tail.len() {
            let take_rest =
                t == tail.len() || (r < self.rest.len() && key(&self.rest[r]) <= key(&tail[t]));
            if take_rest {
                moved(&self.rest[r], column.len());
                column.push(self.rest[r]);
                r += 1;
            } else {
                column.push(tail[t]);
                t += 1;
            }
        }
    }

    /// Settles the items of `column` after the run that `settled` says are: the run grows
    /// over those that come first, the others are the new `rest`.
    fn advance(&mut self, column: &[T], settled: impl Fn(&T) -> bool) {
        let after = &column[self.len..];
        let run = after
            .iter()
            .position(|x| !settled(x))
            .unwrap_or(after.len());
        self.len += run;
        self.rest = column[self.len..]
            .iter()
            .filter(|x| settled(x))
            .copied()
            .collect();
    }
}

/// The settled part of the published model (see the module docs).
#[derive(Clone, Debug, Default)]
struct Settled {
    /// Submissions settled: ordinals `0..subs`, which are also the first `subs` by key.
    subs: usize,
    /// Their ids by ordinal, where arrival and key orders differ (`None`: the same).
    ids: Option<Vec<u32>>,
    /// The key of the last.
    last_key: Option<(RuntimeId, SubmissionIndex)>,
    /// Their region slots: `0..slots`.
    slots: usize,
    /// Per lane, its settled spans (a prefix) and the start of the last.
    lanes: Vec<(usize, u64)>,
    /// Waits whose consumer is settled (a prefix of the waits).
    cross: usize,
    by_producer: SettledRun<u32>,
    /// Explicit edges of settled consumers; their entries of the rest and where those are
    /// in `explicit_by_consumer`.
    explicit: SettledRun<(SubId, SubId)>,
    explicit_entries: Vec<usize>,
    /// Entries of settled consumers in `explicit_by_consumer` (a prefix).
    by_consumer: usize,
    /// Submit times of settled submissions: a settled run, then the rest (values).
    submit_times: SettledRun<u64>,
    /// Settled spans that are untimed, and settled spans per region ([`RegionRef`]).
    untimed: usize,
    region_spans: Vec<u64>,
    /// Failed and cancelled regions' completions of settled submissions.
    region_ends: Vec<RegionEnd>,
}

impl Settled {
    /// The id of settled ordinal `o`.
    fn id(&self, o: usize) -> u32 {
        self.ids.as_ref().map_or(o as u32, |ids| ids[o])
    }
}

/// The tail finished by a publish: each tail submission's rank by key.
struct Finished {
    rank: Vec<u32>,
}

/// A record changed the settled part: finish the whole model.
struct Unsettle;

/// Builds a followed trace's [`Model`] and keeps it finished (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct LiveBuilder {
    /// The structure, events and facts (its model is the published one), the joiner and
    /// the statistics.
    inner: ModelBuilder,
    /// Per region slot (submissions by arrival), its completion status.
    region_status: Vec<SpanStatus>,
    settled: Settled,
    tail: Tail,
    /// Completions of failed and cancelled regions joined so far.
    region_ends_seq: u64,
    /// The events in the order pushed, while the model's are sorted (after a publish).
    pushed_events: Option<Vec<Event>>,
    /// Explicit producers of the submissions joined (a publish appends those of
    /// submissions the joiner's end enters, taken back at the next record).
    producers_len: usize,
    /// Operation timings already sorted into the model's column (a prefix); those after
    /// it arrived since the last publish ([`super::ops`]).
    ops_sorted: usize,
    /// Whether the model is published and no record was pushed since.
    published: bool,
    last: Publish,
}

impl LiveBuilder {
    /// An empty builder.
    pub fn new() -> LiveBuilder {
        LiveBuilder::default()
    }

    /// Ingests one record (the published model is out of date until the next
    /// [`LiveBuilder::publish`]).
    pub fn push(&mut self, record: &Record) {
        self.unpublish();
        self.inner.push_shared(record);
        let joined = std::mem::take(&mut self.inner.joins.out);
        for j in &joined {
            self.apply(j);
        }
        self.inner.joins.out = joined;
        self.inner.joins.out.clear();
    }

    /// Takes back what only the published model holds, for more records: the events in
    /// the order pushed, the explicit producers of what the joiner's end entered.
    fn unpublish(&mut self) {
        if self.published {
            self.published = false;
            if let Some(events) = self.pushed_events.take() {
                self.inner.model.events = events;
            }
            let producers = self.inner.model.explicit_producers.vec_mut();
            producers.truncate(self.producers_len);
        }
    }

    /// The model as of the latest publish; `None` when records were pushed since.
    pub fn model(&self) -> Option<&Model> {
        self.published.then_some(&self.inner.model)
    }

    /// What the latest publish finished.
    pub fn last_publish(&self) -> Publish {
        self.last
    }

    /// Makes the next publish finish the whole model, as a record that changes the settled
    /// part does (see the module docs); the cost of that publish is what it measures.
    pub fn unsettle(&mut self) {
        self.unpublish();
        if self.settled.subs == 0 {
            return;
        }
        let k = self.settled.subs;
        let settled = std::mem::take(&mut self.settled);
        let ordinal_of: Option<Vec<u32>> = settled.ids.as_ref().map(|ids| {
            let mut ordinals = vec![0u32; ids.len()];
            for (o, &id) in ids.iter().enumerate() {
                ordinals[id as usize] = o as u32;
            }
            ordinals
        });
        let ordinal = |id: SubId| ordinal_of.as_ref().map_or(id.0, |o| o[id.get()]);
        let model = &self.inner.model;
        let mut subs: Vec<Submission> = (0..k)
            .map(|o| model.submissions[settled.id(o) as usize])
            .collect();
        subs.append(&mut self.tail.subs);
        self.tail.subs = subs;
        for (l, &(len, _)) in settled.lanes.iter().enumerate() {
            let mut spans: Vec<Span> = model.lanes[l].spans()[..len]
                .iter()
                .filter(|s| s.ran())
                .map(|s| {
                    let mut span = *s;
                    span.submission = SubId(ordinal(s.submission));
                    span
                })
                .collect();
            spans.append(&mut self.tail.spans[l]);
            self.tail.spans[l] = spans;
        }
        let by_ordinal = |key: RegionKey| RegionKey {
            submission: SubId(ordinal(key.submission)),
            ..key
        };
        let mut cross: Vec<CrossEdge> = model.cross[..settled.cross]
            .iter()
            .map(|e| {
                let mut edge = *e;
                (edge.consumer, edge.producer) = (by_ordinal(e.consumer), by_ordinal(e.producer));
                edge
            })
            .collect();
        cross.append(&mut self.tail.cross);
        self.tail.cross = cross;
        let mut explicit: Vec<(u64, u64)> = model
            .explicit_edges
            .iter()
            .filter(|&&(_, c)| c.get() < k)
            .map(|&(p, c)| (u64::from(ordinal(c)), u64::from(ordinal(p))))
            .collect();
        explicit.append(&mut self.tail.explicit);
        self.tail.explicit = explicit;
        let mut ends = settled.region_ends;
        ends.append(&mut self.tail.region_ends);
        ends.sort_by_key(|e| e.seq);
        self.tail.region_ends = ends;
    }

    /// Finishes what came after the settled part, or the whole model when a record changed
    /// it, and moves the watermark (see the module docs); the model, whose recording facts
    /// ([`Model::info_mut`]: the reader's recovery and warnings) are the caller's to add.
    pub fn publish(&mut self) -> &mut Model {
        if self.published {
            return &mut self.inner.model;
        }
        let (mut summary, extra, stats) = self.inner.finish_joiner_copy();
        // The structure read so far, labelled: the model's (it is the joiner's, copied).
        self.inner.model.index = std::mem::take(&mut summary.index);
        // A provisional wait or producer of a settled consumer changes the settled part.
        let settled = self.settled.subs as u64;
        if extra
            .iter()
            .any(|j| matches!(j, Joined::Link(l) if l.consumer < settled))
        {
            self.unsettle();
        }
        // What the joiner's end adds is published, then taken back from the tail.
        let lengths = |tail: &Tail| (tail.subs.len(), tail.cross.len(), tail.explicit.len());
        let real = lengths(&self.tail);
        self.producers_len = self.inner.model.explicit_producers.len();
        let mut extra_events = Vec::new();
        for j in &extra {
            match j {
                Joined::Event(e) => extra_events.push(*e),
                Joined::Submitted { .. } | Joined::Outcome(..) | Joined::Link(_) => self.apply(j),
                // The joiner's end enters submissions without their graph: none of their
                // timings or region completions joins.
                Joined::Span(_) | Joined::OpSpan(..) | Joined::Region(..) => {
                    debug_assert!(false, "the joiner's end joined {j:?}");
                }
            }
        }
        let all = lengths(&self.tail);
        let added = (all.0 - real.0, all.1 - real.1, all.2 - real.2);
        let whole = self.settled.subs == 0;
        let finished = match self.finish_tail(&summary) {
            Ok(f) => f,
            Err(Unsettle) => {
                self.unsettle();
                match self.finish_tail(&summary) {
                    Ok(f) => f,
                    Err(Unsettle) => unreachable!("nothing settled"),
                }
            }
        };
        // Operation timings since the last publish, sorted into the column's end.
        let ops = self.inner.model.op_spans.vec_mut();
        super::ops::sort_from(ops, self.ops_sorted);
        self.ops_sorted = ops.len();
        self.last = Publish {
            whole: whole || self.settled.subs == 0,
            submissions: self.tail.subs.len(),
            ..self.last
        };
        // Events (in the order pushed, kept for the next records), the range, statistics
        // and the first failure, whole.
        let model = &mut self.inner.model;
        self.pushed_events = Some(model.events.clone());
        model.span_events.clear();
        let k = self.settled.subs;
        let (settled, rank) = (&self.settled, &finished.rank);
        let final_id = |ordinal: u64| final_id(settled, rank, ordinal);
        let mut subs = self.inner.event_submissions(final_id);
        for e in &extra_events {
            if let Some(i) = self.inner.event_of(e) {
                subs[i] = Some(final_id(e.submission.ordinal));
            }
        }
        let threads = self.inner.thread_rows();
        let model = &mut self.inner.model;
        model.threads = threads;
        let keys = link_events(model, subs);
        model.range = time_range(model);
        model.info.unplaced_timings = summary.unplaced_timings;
        model.info.unresolved_waits = summary.unresolved_waits;
        model.info.producers_not_parked = summary.producers_not_parked;
        model.info.running_not_drawn = super::RunningNotDrawn::of(&summary.running);
        model.info.timing_lost = summary.timing_lost.len() as u64;
        model.info.at_the_end = summary.at_the_end();
        model.stats = stats;
        model.first_failure = hazards::first_failure(model, &keys);
        debug_assert_eq!(k, self.settled.subs);
        // Take back what the joiner's end added (the last of the tail, which a fallback
        // lengthened at its start), then settle.
        let tail = &mut self.tail;
        let real = (
            tail.subs.len() - added.0,
            tail.cross.len() - added.1,
            tail.explicit.len() - added.2,
        );
        let extra_min_ns = tail.subs[real.0..].iter().map(|s| s.submit_ns).min();
        tail.subs.truncate(real.0);
        tail.cross.truncate(real.1);
        tail.explicit.truncate(real.2);
        self.advance(&finished, extra_min_ns);
        self.last.settled = self.settled.subs;
        self.published = true;
        &mut self.inner.model
    }

    /// Keeps one of the joins the joiner handed over in the tail; one about the settled
    /// part unsettles first.
    fn apply(&mut self, joined: &Joined) {
        let settled = self.settled.subs as u64;
        let touches = match joined {
            // Operation timings are a column of their own, by region slot: nothing settled
            // depends on them.
            Joined::Submitted { .. } | Joined::Event(_) | Joined::OpSpan(..) => false,
            Joined::Span(t) => t.ordinal < settled,
            Joined::Outcome(ordinal, _) => *ordinal < settled,
            Joined::Region(r, ..) => r.submission.ordinal < settled,
            Joined::Link(link) => link.consumer < settled,
        };
        if touches {
            self.unsettle();
        }
        let k = self.settled.subs;
        match joined {
            Joined::Submitted {
                joined,
                slot,
                time_ns,
                producers,
                left_out,
                regions,
            } => {
                let mut sub = self
                    .inner
                    .submission(joined, *slot, *time_ns, producers, *left_out);
                let model = &mut self.inner.model;
                let regions = *regions as usize;
                sub.region_base = self.region_status.len() as u32;
                self.region_status
                    .resize(self.region_status.len() + regions, SpanStatus::Unknown);
                sub.producers_start = model.explicit_producers.len() as u32;
                model.explicit_producers.vec_mut().extend(producers);
                debug_assert_eq!((k + self.tail.subs.len()) as u64, joined.ordinal);
                self.tail.subs.push(sub);
            }
            Joined::Span(t) => {
                let sub = SubId(t.ordinal as u32);
                let span = Span::timed(t.start_ns, t.end_ns, t.device, sub, t.region);
                self.lane_spans(t.lane).push(span);
            }
            Joined::OpSpan(t, node) => {
                let o = t.ordinal as usize;
                let base = match o.checked_sub(k) {
                    None => self.inner.model.submissions[self.settled.id(o) as usize].region_base,
                    Some(j) => self.tail.subs[j].region_base,
                };
                let slot = base + self.inner.index().region(t.region).index.0;
                let op = OpSpan::new(slot, *node, t.start_ns, t.end_ns, t.device);
                self.inner.model.op_spans.vec_mut().push(op);
                self.inner.model.count_op_span(t.lane);
            }
            Joined::Outcome(ordinal, status) => {
                self.tail.subs[*ordinal as usize - k].set_status(*status);
            }
            Joined::Region(r, status, time_ns) => {
                let ordinal = r.submission.ordinal;
                let slot =
                    self.tail.subs[ordinal as usize - k].region_base as usize + r.index.0 as usize;
                self.region_status[slot] = *status;
                if matches!(status, SpanStatus::Failed | SpanStatus::Cancelled) {
                    self.tail.region_ends.push(RegionEnd {
                        seq: self.region_ends_seq,
                        lane: r.lane,
                        ordinal,
                        region: r.region,
                        status: *status,
                        time_ns: *time_ns,
                    });
                    self.region_ends_seq += 1;
                }
            }
            Joined::Link(link) => match link.wait {
                Some(w) => {
                    let key = |ordinal: u64, region: u32| RegionKey {
                        submission: SubId(ordinal as u32),
                        region,
                    };
                    self.tail.cross.push(CrossEdge::new(
                        key(link.consumer, w.region.0),
                        key(link.producer, w.on_region.0),
                        w.kind,
                        w.buffer,
                        w.start,
                        w.end,
                    ));
                }
                None => self.tail.explicit.push((link.consumer, link.producer)),
            },
            Joined::Event(e) => self.inner.join_event(e),
        }
    }

    /// The tail's timed spans of `lane`.
    fn lane_spans(&mut self, lane: LaneRef) -> &mut Vec<Span> {
        if self.tail.spans.len() <= lane.get() {
            self.tail.spans.resize(lane.get() + 1, Vec::new());
        }
        &mut self.tail.spans[lane.get()]
    }

    /// Finishes the tail into the model's tables after their settled parts: checks first
    /// that it comes after them (else nothing is written).
    fn finish_tail(&mut self, summary: &crate::ScanSummary) -> Result<Finished, Unsettle> {
        let k = self.settled.subs;
        let lanes = self.inner.model.lanes.len();
        self.settled.lanes.resize(lanes, (0, 0));
        self.tail.spans.resize(lanes, Vec::new());
        // Submissions: sorted by key, stably (ties keep arrival order).
        let subs = &self.tail.subs;
        let key = |s: &Submission| (s.runtime, s.index);
        let mut order: Vec<u32> = (0..subs.len() as u32).collect();
        if !subs.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
            order.sort_by_key(|&j| key(&subs[j as usize]));
        }
        if let (Some(last), Some(&first)) = (self.settled.last_key, order.first())
            && key(&subs[first as usize]) < last
        {
            return Err(Unsettle);
        }
        let mut rank = vec![0u32; order.len()];
        for (r, &j) in order.iter().enumerate() {
            rank[j as usize] = r as u32;
        }
        // Spans: timed in join order, then untimed, running and timing lost, per lane.
        let slots0 = self.settled.slots;
        let mut has_span = vec![false; self.region_status.len() - slots0];
        let mut items: Vec<Vec<Span>> = vec![Vec::new(); lanes];
        let model = &self.inner.model;
        let slot_of = |ordinal: usize, region: RegionRef| {
            subs[ordinal - k].region_base as usize + model.region(region).index.0 as usize
        };
        let settled = &self.settled;
        let id = |ordinal: u64| final_id(settled, &rank, ordinal);
        for (l, spans) in self.tail.spans.iter().enumerate() {
            for s in spans {
                let slot = slot_of(s.submission.get(), s.region);
                has_span[slot - slots0] = true;
                let mut span = *s;
                span.submission = id(u64::from(s.submission.0));
                span.set_status(self.region_status[slot]);
                items[l].push(span);
            }
        }
        let mut untimed = 0;
        for e in &self.tail.region_ends {
            let slot = slot_of(e.ordinal as usize, e.region);
            if !std::mem::replace(&mut has_span[slot - slots0], true) {
                let span = Span::untimed(e.time_ns, id(e.ordinal), e.region, e.status);
                items[e.lane.get()].push(span);
                untimed += 1;
            }
        }
        let last_ns = self.inner.last_ns;
        let ended = [(&summary.running, true), (&summary.timing_lost, false)];
        for (regions, running) in ended {
            for r in regions {
                let (Some(ordinal), Some(region)) = (r.ordinal, r.region_ref) else {
                    continue;
                };
                // A settled submission has a span for every region.
                if (ordinal as usize) < k {
                    continue;
                }
                let slot = slot_of(ordinal as usize, region);
                if std::mem::replace(&mut has_span[slot - slots0], true) {
                    continue;
                }
                let span = if running {
                    Span::unfinished(r.start_ns, last_ns.max(r.start_ns), id(ordinal), region)
                } else {
                    Span::untimed(r.start_ns, id(ordinal), region, SpanStatus::TimingLost)
                };
                items[model.region(region).lane.get()].push(span);
                untimed += 1;
            }
        }
        for (l, spans) in items.iter_mut().enumerate() {
            spans.sort_by_key(|s| s.start_ns);
            let (len, last_start) = self.settled.lanes[l];
            if len > 0 && spans.first().is_some_and(|s| s.start_ns <= last_start) {
                return Err(Unsettle);
            }
        }

        // Written from here on: the submissions, their submit times, the lanes and the
        // span table, the label counts.
        let model = &mut self.inner.model;
        let all = model.submissions.vec_mut();
        all.truncate(k);
        all.extend(order.iter().map(|&j| subs[j as usize]));
        let mut times: Vec<u64> = subs.iter().map(|s| s.submit_ns).collect();
        times.sort_unstable();
        let column = model.submit_times.vec_mut();
        self.settled
            .submit_times
            .publish(column, &times, |&t| t, |_, _| {}, |_, _| {});
        let region_spans = model.region_spans.vec_mut();
        region_spans.resize(self.region_status.len(), SpanRef::NONE);
        region_spans[slots0..].fill(SpanRef::NONE);
        let mut region_counts = vec![0u64; model.index.regions().len()];
        let mut placed = 0;
        for (l, spans) in items.iter().enumerate() {
            let from = self.settled.lanes[l].0;
            for (i, s) in spans.iter().enumerate() {
                let sub = &model.submissions[s.submission.get()];
                let slot = sub.region_base as usize + model.index.region(s.region).index.0 as usize;
                region_spans[slot] = SpanRef {
                    lane: LaneRef(l as u32),
                    index: (from + i) as u32,
                }
                .pack();
                region_counts[s.region.get()] += 1;
            }
            placed += spans.len();
            model.lanes[l].replace_from(from, spans);
        }
        self.last.spans = placed;
        model.untimed_spans = self.settled.untimed + untimed;
        name_regions(model);
        self.settled.region_spans.resize(region_counts.len(), 0);
        for (r, (&tail, &settled)) in region_counts
            .iter()
            .zip(&self.settled.region_spans)
            .enumerate()
        {
            let region = RegionRef(r as u32);
            if let Some(label) = model.index.label(region) {
                model.label_spans[label.get()] += tail + settled;
            }
            model.search_key_spans[model.search_keys[r] as usize] += tail + settled;
        }

        // Waits: the tail's, sorted by consumer, after the settled ones; by producer, merged.
        let settled = &self.settled;
        let by_id = |key: RegionKey| RegionKey {
            submission: final_id(settled, &rank, u64::from(key.submission.0)),
            ..key
        };
        let mut tail_cross: Vec<CrossEdge> = self
            .tail
            .cross
            .iter()
            .map(|e| {
                let mut edge = *e;
                (edge.consumer, edge.producer) = (by_id(e.consumer), by_id(e.producer));
                edge
            })
            .collect();
        tail_cross.sort_by_key(|e| e.consumer);
        let cross = model.cross.vec_mut();
        cross.truncate(self.settled.cross);
        cross.extend_from_slice(&tail_cross);
        let mut tail_by_producer: Vec<u32> =
            (self.settled.cross as u32..cross.len() as u32).collect();
        tail_by_producer.sort_by_key(|&i| cross[i as usize].producer);
        let producer = |&i: &u32| (cross[i as usize].producer, i);
        let by_producer = model.cross_by_producer.vec_mut();
        self.settled.by_producer.publish(
            by_producer,
            &tail_by_producer,
            producer,
            |_, _| {},
            |_, _| {},
        );

        // Explicit edges: the tail's, merged by (producer, consumer); the settled ones that
        // move keep their entries by consumer, which follow them.
        let settled = &self.settled;
        let id = |ordinal: u64| final_id(settled, &rank, ordinal);
        let mut tail_explicit: Vec<(SubId, SubId)> = self
            .tail
            .explicit
            .iter()
            .map(|&(consumer, producer)| (id(producer), id(consumer)))
            .collect();
        tail_explicit.sort_unstable();
        let edges = model.explicit_edges.vec_mut();
        let by_consumer = model.explicit_by_consumer.vec_mut();
        let run = &mut self.settled.explicit;
        let entries = &mut self.settled.explicit_entries;
        let settled_entries = self.settled.by_consumer;
        // Settled edges pulled back into the rest: find their entries while the column is
        // as the last publish wrote it.
        let mut pulled: Vec<((SubId, SubId), usize)> = Vec::new();
        {
            let edges_now: &[(SubId, SubId)] = edges;
            let by_consumer_now: &[u32] = by_consumer;
            let find = |pair: &(SubId, SubId), at: usize| {
                by_consumer_now[..settled_entries]
                    .binary_search_by_key(&(pair.1, at as u32), |&i| (edges_now[i as usize].1, i))
                    .expect("a settled edge has its entry")
            };
            if let Some(first) = tail_explicit.first() {
                let p = edges_now[..run.len].partition_point(|x| x <= first);
                for (i, x) in edges_now[p..run.len].iter().enumerate() {
                    pulled.push((*x, find(x, p + i)));
                }
            }
        }
        // The rest's entries, by pair (the rest is sorted, and so are the pulled edges).
        let mut rest_entries: Vec<((SubId, SubId), usize)> = run
            .rest
            .iter()
            .copied()
            .zip(entries.iter().copied())
            .chain(pulled)
            .collect();
        rest_entries.sort_unstable();
        let mut placed_rest = Vec::with_capacity(rest_entries.len());
        run.publish(
            edges,
            &tail_explicit,
            |&x| x,
            |x, at| placed_rest.push((*x, at)),
            |_, _| {},
        );
        debug_assert_eq!(placed_rest.len(), rest_entries.len());
        for (&(_, at), &(_, entry)) in placed_rest.iter().zip(&rest_entries) {
            by_consumer[entry] = at as u32;
        }
        *entries = rest_entries.iter().map(|&(_, entry)| entry).collect();
        by_consumer.truncate(settled_entries);
        let first_tail = by_consumer.len();
        let settled_consumers = k as u32;
        by_consumer.extend(
            (run.len as u32..edges.len() as u32)
                .filter(|&i| edges[i as usize].1.0 >= settled_consumers),
        );
        by_consumer[first_tail..].sort_by_key(|&i| (edges[i as usize].1, i));
        Ok(Finished { rank })
    }

    /// Moves the watermark over the tail's first submissions that are settled (see the
    /// module docs); `extra_min_ns`: the earliest submit time of what the joiner's end
    /// added (published, not settled).
    fn advance(&mut self, finished: &Finished, extra_min_ns: Option<u64>) {
        let k = self.settled.subs;
        let rank = &finished.rank;
        // Candidates: counts `c` of tail submissions, all settled, that are also the first
        // `c` by key.
        let mut closed = Vec::new();
        let mut max_rank = 0;
        for (j, &r) in rank.iter().enumerate().take(self.tail.subs.len()) {
            if !self.is_settled(j) {
                break;
            }
            max_rank = max_rank.max(r as usize);
            if max_rank == j {
                closed.push(j + 1);
            }
        }
        let Some(mut count) = closed.last().copied() else {
            return;
        };
        let model = &self.inner.model;
        // Lower the count until every lane's and every edge's condition holds.
        let mut agreed = false;
        for _ in 0..64 {
            let bound = (k + count) as u32;
            let mut lower = u32::MAX;
            for (l, lane) in model.lanes.iter().enumerate() {
                let spans = &lane.spans()[self.settled.lanes[l].0..];
                let p = spans
                    .iter()
                    .position(|s| s.submission.0 >= bound)
                    .unwrap_or(spans.len());
                let later = spans[p..].iter().map(|s| s.submission.0);
                if later.clone().any(|s| s < bound) {
                    lower = lower.min(later.min().unwrap_or(bound));
                } else if p > 0 && p < spans.len() && spans[p - 1].start_ns >= spans[p].start_ns {
                    let tie = spans[..p].partition_point(|s| s.start_ns < spans[p].start_ns);
                    let tied = spans[tie..p].iter().map(|s| s.submission.0);
                    lower = lower.min(tied.min().unwrap_or(bound));
                }
            }
            for e in &model.cross[self.settled.cross..] {
                if e.consumer.submission.0 >= bound {
                    break;
                }
                if e.producer.submission.0 >= bound {
                    lower = lower.min(e.consumer.submission.0);
                }
            }
            let settled = k as u32;
            for &(p, c) in &model.explicit_edges[self.settled.explicit.len..] {
                if c.0 >= settled && c.0 < bound && p.0 >= bound {
                    lower = lower.min(c.0);
                }
            }
            if lower == u32::MAX {
                agreed = true;
                break;
            }
            match closed.iter().rev().find(|&&c| k + c <= lower as usize) {
                Some(&c) => count = c,
                None => return,
            }
        }
        if !agreed {
            return;
        }
        self.settle(count, rank, extra_min_ns);
    }

    /// Whether tail submission `j` is settled: its outcome, every region's completion and
    /// a span for every region (not running) were read.
    fn is_settled(&self, j: usize) -> bool {
        let sub = &self.tail.subs[j];
        if sub.status() == SpanStatus::Unknown {
            return false;
        }
        let model = &self.inner.model;
        let regions = sub
            .prepared()
            .map_or(0, |p| model.index.prepared()[p.get()].regions.len());
        let base = sub.region_base as usize;
        (base..base + regions).all(|slot| {
            let Some(span) = SpanRef::unpack(model.region_spans[slot]) else {
                return false;
            };
            match model.span(span).status() {
                SpanStatus::Running => false,
                SpanStatus::TimingLost => true,
                _ => self.region_status[slot] != SpanStatus::Unknown,
            }
        })
    }

    /// Settles the tail's first `count` submissions.
    fn settle(&mut self, count: usize, rank: &[u32], extra_min_ns: Option<u64>) {
        let k = self.settled.subs;
        let k2 = k + count;
        let bound = k2 as u32;
        let model = &self.inner.model;
        let settled = &mut self.settled;
        if settled.ids.is_some() || (0..count).any(|j| rank[j] as usize != j) {
            let ids = settled.ids.get_or_insert_with(|| (0..k as u32).collect());
            ids.extend((0..count).map(|j| (k + rank[j] as usize) as u32));
        }
        let last = &model.submissions[k2 - 1];
        settled.last_key = Some((last.runtime, last.index));
        settled.slots = match self.tail.subs.get(count) {
            Some(next) => next.region_base as usize,
            None => self.region_status.len(),
        };
        for (l, lane) in model.lanes.iter().enumerate() {
            let (len, _) = settled.lanes[l];
            let moved = lane.spans()[len..]
                .iter()
                .take_while(|s| s.submission.0 < bound)
                .count();
            for s in &lane.spans()[len..len + moved] {
                settled.region_spans[s.region.get()] += 1;
                settled.untimed += usize::from(!s.ran());
            }
            if moved > 0 {
                settled.lanes[l] = (len + moved, lane.spans()[len + moved - 1].start_ns);
            }
        }
        let cross = &model.cross;
        settled.cross +=
            cross[settled.cross..].partition_point(|e| e.consumer.submission.0 < bound);
        let settled_cross = settled.cross as u32;
        settled
            .by_producer
            .advance(&model.cross_by_producer, |&i| i < settled_cross);
        // Explicit edges: the new rest's entries are the old rest's, or among the tail's
        // entries (which follow the settled ones, sorted by consumer).
        let edges = &model.explicit_edges;
        let by_consumer = &model.explicit_by_consumer;
        let old_len = settled.explicit.len;
        let mut entry_at: std::collections::HashMap<usize, usize> = settled
            .explicit_entries
            .iter()
            .map(|&entry| (by_consumer[entry] as usize, entry))
            .collect();
        let new_entries = by_consumer[settled.by_consumer..]
            .iter()
            .take_while(|&&i| edges[i as usize].1.0 < bound)
            .count();
        for entry in settled.by_consumer..settled.by_consumer + new_entries {
            entry_at.insert(by_consumer[entry] as usize, entry);
        }
        settled.by_consumer += new_entries;
        settled.explicit.advance(edges, |&(_, c)| c.0 < bound);
        let from = settled.explicit.len;
        settled.explicit_entries = (from..edges.len())
            .filter(|&at| edges[at].1.0 < bound)
            .map(|at| entry_at[&at])
            .collect();
        debug_assert!(settled.explicit.len >= old_len);
        // Submit times: values, so the run grows over the settled ones no tail time is
        // below.
        let mut rest = std::mem::take(&mut settled.submit_times.rest);
        rest.extend(self.tail.subs[..count].iter().map(|s| s.submit_ns));
        rest.sort_unstable();
        let tail_min = self.tail.subs[count..]
            .iter()
            .map(|s| s.submit_ns)
            .chain(extra_min_ns)
            .min()
            .unwrap_or(u64::MAX);
        let run = rest.partition_point(|&t| t <= tail_min);
        settled.submit_times.len += run;
        rest.drain(..run);
        settled.submit_times.rest = rest;
        // What arrived for them leaves the tail.
        self.tail.subs.drain(..count);
        for spans in &mut self.tail.spans {
            spans.retain(|s| s.submission.0 >= bound);
            shrink(spans);
        }
        self.tail.cross.retain(|e| e.consumer.submission.0 >= bound);
        shrink(&mut self.tail.cross);
        self.tail.explicit.retain(|&(c, _)| c >= u64::from(bound));
        let (done, left): (Vec<RegionEnd>, Vec<RegionEnd>) = self
            .tail
            .region_ends
            .iter()
            .partition(|e| e.ordinal < u64::from(bound));
        settled.region_ends.extend(done);
        self.tail.region_ends = left;
        shrink(&mut self.tail.subs);
        settled.subs = k2;
    }
}

/// The model's id of the submission of `ordinal`: settled, or of the tail (`rank`: each
/// tail submission's rank by key).
fn final_id(settled: &Settled, rank: &[u32], ordinal: u64) -> SubId {
    let o = ordinal as usize;
    match o.checked_sub(settled.subs) {
        None => SubId(settled.id(o)),
        Some(j) => SubId((settled.subs + rank[j] as usize) as u32),
    }
}

/// Gives back the memory of a vector most of which was taken out.
fn shrink<T>(v: &mut Vec<T>) {
    if v.capacity() > 4 * v.len() + 1024 {
        v.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests;
