//! Why a span waited: hazards between regions, and the first failure with what it took down.
//!
//! A region waits on three kinds of producers, all kept with their cause:
//!
//! ```text
//! in graph          Prepared.regions[r].dependencies: region p of the same submission,
//!                   kind (RAW/WAR/WAW), buffer and byte range
//! across submission CrossWait: region p of an earlier submission, kind, buffer and range
//! explicit          Submit.producers (submit_after): a whole earlier submission, no range
//! ```
//!
//! Consumers are the same edges read backwards: sibling regions whose dependencies name
//! this one, waits recorded on it (an index sorted by producer), and submissions that
//! named this one as an explicit producer (shown on the span of the submission that ended
//! last).
//!
//! Of a `Submit` naming more than
//! [`EXPLICIT_PRODUCERS_KEPT`](super::EXPLICIT_PRODUCERS_KEPT) explicit producers, the
//! model keeps the latest ([`crate::scan::latest_producers`]) and counts the rest: the
//! hazards say how many producers they leave out ([`Hazards::producers_left_out`]), and
//! that a submission's consumers may be missing where any `Submit` of the trace named more
//! ([`Hazards::consumers_incomplete`]).

use super::lanes::SpanStatus;
use super::model::{EventId, EventKind, Model, RegionKey, SpanRef, SubId};
use hrx_capture::schema::{BufferId, HazardKind, PreparedId};
use std::collections::{HashSet, VecDeque};

/// Where a hazard edge comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HazardScope {
    /// Between regions of one submission (the prepared graph's dependencies).
    InGraph,
    /// On a region of an earlier submission (a recorded cross-submission wait).
    CrossSubmission,
    /// On a whole earlier submission named by `submit_after`.
    Explicit,
}

impl HazardScope {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            HazardScope::InGraph => "in graph",
            HazardScope::CrossSubmission => "cross-submission",
            HazardScope::Explicit => "submit_after",
        }
    }
}

/// One ordering edge: the consumer waited for the producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HazardEdge {
    /// Where the edge comes from.
    pub scope: HazardScope,
    /// The hazard (`None` for explicit edges).
    pub kind: Option<HazardKind>,
    /// The buffer of the conflicting ranges (`None` for explicit edges).
    pub buffer: Option<BufferId>,
    /// The conflicting byte range `start..end` (`None` for explicit edges).
    pub bytes: Option<(u64, u64)>,
    /// The region that had to finish first.
    pub producer: RegionKey,
    /// The region that waited.
    pub consumer: RegionKey,
}

/// The hazards of one region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hazards {
    /// What it waited on.
    pub producers: Vec<HazardEdge>,
    /// What waited on it.
    pub consumers: Vec<HazardEdge>,
    /// Explicit producers of its submission not listed: named past the
    /// [`EXPLICIT_PRODUCERS_KEPT`](super::EXPLICIT_PRODUCERS_KEPT) latest of its `Submit`.
    pub producers_left_out: u32,
    /// Whether its explicit consumers may be more than listed: it is the region that
    /// lists them, and some `Submit` of the trace named more than
    /// [`EXPLICIT_PRODUCERS_KEPT`](super::EXPLICIT_PRODUCERS_KEPT) producers (of which
    /// only the latest are linked).
    pub consumers_incomplete: bool,
}

impl Hazards {
    /// Producers then consumers, as one list (the hazards pane's order).
    pub fn all(&self) -> impl Iterator<Item = &HazardEdge> {
        self.producers.iter().chain(&self.consumers)
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.producers.len() + self.consumers.len()
    }

    /// Whether there is no edge.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The first failure of the trace and what it took down.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FirstFailure {
    /// The failure event (the first failed region, else the first other failure).
    pub event: EventId,
    /// Its span, where it is on the timeline.
    pub span: Option<SpanRef>,
    /// Dependent regions that were cancelled (downstream through hazards, explicit
    /// producers, or in the same submission).
    pub cancelled: Vec<SpanRef>,
    /// Dependent regions that failed too.
    pub failed: Vec<SpanRef>,
    /// Buffers poisoned with it (recorded just before its completion) or after it.
    pub poisoned: Vec<BufferId>,
    /// Prepared graphs quarantined with it (recorded just before its completion) or
    /// after it.
    pub quarantined: Vec<PreparedId>,
}

impl Model {
    /// The hazards of the region a span executes.
    pub fn hazards(&self, span: SpanRef) -> Hazards {
        self.hazards_of(self.key_of(self.span(span)))
    }

    /// The hazards of a region of a submission.
    pub fn hazards_of(&self, key: RegionKey) -> Hazards {
        let mut out = Hazards::default();
        let regions = self.submission_regions(key.submission);
        let Some(region) = regions.get(key.region as usize) else {
            return out;
        };
        let in_graph = |producer: u32, consumer: u32, e: &hrx_capture::schema::Edge| HazardEdge {
            scope: HazardScope::InGraph,
            kind: Some(e.kind),
            buffer: Some(e.buffer),
            bytes: Some((e.start, e.end)),
            producer: RegionKey {
                submission: key.submission,
                region: producer,
            },
            consumer: RegionKey {
                submission: key.submission,
                region: consumer,
            },
        };
        for e in &region.dependencies {
            out.producers.push(in_graph(e.producer, key.region, e));
        }
        for (i, other) in regions.iter().enumerate() {
            for e in other
                .dependencies
                .iter()
                .filter(|e| e.producer == key.region)
            {
                out.consumers.push(in_graph(key.region, i as u32, e));
            }
        }

        let cross = |e: &super::model::CrossEdge| HazardEdge {
            scope: HazardScope::CrossSubmission,
            kind: Some(e.kind()),
            buffer: Some(e.buffer),
            bytes: Some((e.start, e.end)),
            producer: e.producer,
            consumer: e.consumer,
        };
        let lo = self.cross.partition_point(|e| e.consumer < key);
        let hi = self.cross.partition_point(|e| e.consumer <= key);
        out.producers.extend(self.cross[lo..hi].iter().map(cross));
        let by_producer = &self.cross_by_producer;
        let lo = by_producer.partition_point(|&i| self.cross[i as usize].producer < key);
        let hi = by_producer.partition_point(|&i| self.cross[i as usize].producer <= key);
        out.consumers.extend(
            by_producer[lo..hi]
                .iter()
                .map(|&i| cross(&self.cross[i as usize])),
        );

        let explicit = |producer, consumer| HazardEdge {
            scope: HazardScope::Explicit,
            kind: None,
            buffer: None,
            bytes: None,
            producer,
            consumer,
        };
        // The joiner's links (`submit_after` joined at both ends): a producer never
        // recorded (a submission of an earlier recording) has none.
        let edge = |i: u32| self.explicit_edges[i as usize];
        let by_consumer = &self.explicit_by_consumer;
        let lo = by_consumer.partition_point(|&i| edge(i).1 < key.submission);
        for &i in by_consumer[lo..]
            .iter()
            .take_while(|&&i| edge(i).1 == key.submission)
        {
            out.producers
                .push(explicit(self.last_region_of(edge(i).0), key));
        }
        out.producers_left_out = self.explicit_producers_left_out(key.submission);
        if self.last_region_of(key.submission) == key {
            out.consumers_incomplete = self.info.explicit_producers_left_out > 0;
            let lo = self
                .explicit_edges
                .partition_point(|&(p, _)| p < key.submission);
            for &(_, c) in self.explicit_edges[lo..]
                .iter()
                .take_while(|&&(p, _)| p == key.submission)
            {
                out.consumers.push(explicit(key, self.first_region_of(c)));
            }
        }
        out
    }

    /// The region of a submission whose span ended last (its last region without spans).
    fn last_region_of(&self, sub: SubId) -> RegionKey {
        let region = self
            .submission_spans(sub)
            .max_by_key(|&r| (self.span(r).end_ns, r))
            .map(|r| self.key_of(self.span(r)).region)
            .unwrap_or_else(|| self.submission_regions(sub).len().saturating_sub(1) as u32);
        RegionKey {
            submission: sub,
            region,
        }
    }

    /// The region of a submission whose span started first (region 0 without spans).
    fn first_region_of(&self, sub: SubId) -> RegionKey {
        let region = self
            .submission_spans(sub)
            .min_by_key(|&r| (self.span(r).start_ns, r))
            .map_or(0, |r| self.key_of(self.span(r)).region);
        RegionKey {
            submission: sub,
            region,
        }
    }

    /// The producer that ended last: the one that decided when `span` could start.
    pub fn critical_producer(&self, span: SpanRef) -> Option<SpanRef> {
        self.hazards(span)
            .producers
            .iter()
            .filter_map(|e| self.span_of(e.producer))
            .max_by_key(|&r| (self.span(r).end_ns, r))
    }

    /// Every region that waited on `key`, directly.
    pub fn dependents(&self, key: RegionKey) -> Vec<RegionKey> {
        let mut out: Vec<RegionKey> = Vec::new();
        for e in self.hazards_of(key).consumers {
            if e.scope == HazardScope::Explicit {
                let n = self.submission_regions(e.consumer.submission).len() as u32;
                out.extend((0..n).map(|region| RegionKey {
                    submission: e.consumer.submission,
                    region,
                }));
            } else {
                out.push(e.consumer);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Finds the first failure and walks everything downstream of it; `keys` is the region each
/// event names, joined to its submission by the joiner ([`super::ingest::link_events`]).
pub(crate) fn first_failure(model: &Model, keys: &[Option<RegionKey>]) -> Option<FirstFailure> {
    let events = model.events();
    let index = events
        .iter()
        .position(|e| e.kind == EventKind::RegionFailed)
        .or_else(|| events.iter().position(|e| e.kind.is_failure()))?;
    let event = &events[index];
    let mut failure = FirstFailure {
        event: EventId(index as u32),
        span: event.span,
        cancelled: Vec::new(),
        failed: Vec::new(),
        poisoned: Vec::new(),
        quarantined: Vec::new(),
    };
    // The runtime records the quarantine and the poisonings of a failure just before the
    // failed region's completion: take those recorded since the failed region started.
    let since = event
        .span
        .and_then(|s| model.get_span(s))
        .filter(|s| s.ran())
        .map_or(event.time_ns, |s| s.start_ns.min(event.time_ns));
    let from = events.partition_point(|e| e.time_ns < since).min(index);
    for e in &events[from..] {
        if e.runtime != event.runtime {
            continue;
        }
        match e.kind {
            EventKind::Poison => failure.poisoned.extend(e.buffer),
            EventKind::Quarantine => failure.quarantined.extend(e.prepared),
            _ => {}
        }
    }
    failure.poisoned.sort_unstable();
    failure.poisoned.dedup();
    failure.quarantined.sort_unstable();
    failure.quarantined.dedup();

    let Some(start) = keys.get(index).copied().flatten() else {
        return Some(failure);
    };
    let mut seen = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    // Regions of the failed submission that were cancelled count as taken down too.
    let siblings = model.submission_regions(start.submission).len() as u32;
    for region in 0..siblings {
        let key = RegionKey {
            submission: start.submission,
            region,
        };
        if seen.insert(key) {
            queue.push_back(key);
        }
    }
    while let Some(key) = queue.pop_front() {
        let span = model.span_of(key);
        let status = span.map(|s| model.span(s).status());
        if key != start {
            match (span, status) {
                (Some(span), Some(SpanStatus::Cancelled)) => failure.cancelled.push(span),
                (Some(span), Some(SpanStatus::Failed)) => failure.failed.push(span),
                // A region that completed stops the walk: what follows it did not depend
                // on the failure through it.
                (_, Some(SpanStatus::Ok)) => continue,
                _ => {}
            }
        }
        for next in model.dependents(key) {
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    let by_time = |r: &SpanRef| (model.span(*r).start_ns, *r);
    failure.cancelled.sort_by_key(by_time);
    failure.failed.sort_by_key(by_time);
    Some(failure)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::timeline::EXPLICIT_PRODUCERS_KEPT;
    use hrx_capture::schema::{HazardKind, Poison, PreparedId, Quarantine, SubmissionIndex};

    fn key(model: &Model, sub: u64, region: u32) -> RegionKey {
        RegionKey {
            submission: model.find_submission(RT, SubmissionIndex(sub)).unwrap(),
            region,
        }
    }

    #[test]
    fn in_graph_hazards_name_kind_buffer_and_range() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .ran(0, 0, 10, 20)
            .ran(0, 1, 30, 40)
            .ran(0, 2, 50, 60);
        let model = f.model();
        let h = model.hazards_of(key(&model, 0, 1));
        assert_eq!(h.producers.len(), 1);
        let p = h.producers[0];
        assert_eq!(p.scope, HazardScope::InGraph);
        assert_eq!(p.kind, Some(HazardKind::ReadAfterWrite));
        assert_eq!(
            (p.buffer, p.bytes),
            (Some(hrx_capture::schema::BufferId(1)), Some((0, 1024)))
        );
        assert_eq!(p.producer, key(&model, 0, 0));
        assert_eq!(h.consumers.len(), 1);
        assert_eq!(h.consumers[0].consumer, key(&model, 0, 2));
        assert_eq!(h.consumers[0].bytes, Some((0, 512)));
        // The first region waited on nothing.
        assert!(model.hazards_of(key(&model, 0, 0)).producers.is_empty());
    }

    #[test]
    fn cross_submission_waits_in_both_directions() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[], 5)
            .ran(0, 0, 10, 20)
            .ran(0, 1, 30, 40)
            .ran(1, 0, 41, 50)
            .cross(1, 0, (0, 1), HazardKind::WriteAfterRead, 1, (0, 1024));
        let model = f.model();
        let waiting = model.hazards_of(key(&model, 1, 0));
        assert_eq!(waiting.producers.len(), 1);
        let e = waiting.producers[0];
        assert_eq!(e.scope, HazardScope::CrossSubmission);
        assert_eq!(e.kind, Some(HazardKind::WriteAfterRead));
        assert_eq!(e.producer, key(&model, 0, 1));
        let released = model.hazards_of(key(&model, 0, 1));
        // Region 2 of submission 0 (in graph) and region 0 of submission 1 (cross).
        assert_eq!(released.consumers.len(), 2);
        assert!(released.consumers.iter().any(|c| c.scope == HazardScope::CrossSubmission
            && c.consumer == key(&model, 1, 0)));
        // p from the waiting upload jumps to the compute it waited on.
        let upload = model.span_of(key(&model, 1, 0)).unwrap();
        assert_eq!(
            model.critical_producer(upload),
            model.span_of(key(&model, 0, 1))
        );
    }

    #[test]
    fn critical_producer_is_the_one_that_ended_last() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[], 0)
            .ran(0, 2, 10, 90)
            .ran(1, 0, 10, 20)
            .ran(1, 1, 95, 99)
            .cross(1, 1, (0, 2), HazardKind::WriteAfterRead, 2, (0, 512));
        let model = f.model();
        let compute = model.span_of(key(&model, 1, 1)).unwrap();
        // Producers: upload of sub 1 (ends 20, in graph) and download of sub 0 (ends 90).
        assert_eq!(model.hazards(compute).producers.len(), 2);
        assert_eq!(
            model.critical_producer(compute),
            model.span_of(key(&model, 0, 2))
        );
    }

    /// Explicit producers are the joiner's links: each recorded producer once, one never
    /// recorded (a submission of an earlier recording) none, one read after its consumer
    /// joined when it is read.
    #[test]
    fn explicit_producers_are_the_joined_ones() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[], 1)
            .submit(1, 2, &[0, 9, 3], 2)
            .submit(1, 3, &[], 3)
            .ran(0, 2, 5, 8)
            .ran(1, 2, 10, 20)
            .ran(3, 2, 21, 22)
            .ran(2, 0, 30, 40);
        let model = f.model();
        let producers: Vec<RegionKey> = model
            .hazards_of(key(&model, 2, 0))
            .producers
            .iter()
            .filter(|e| e.scope == HazardScope::Explicit)
            .map(|e| e.producer)
            .collect();
        assert_eq!(producers, [key(&model, 0, 2), key(&model, 3, 2)]);
        // Submission 1 is no producer of 2: it released nothing.
        assert!(
            model
                .hazards_of(key(&model, 1, 2))
                .consumers
                .iter()
                .all(|e| e.scope != HazardScope::Explicit)
        );
    }

    /// A `Submit` naming more explicit producers than the model keeps (the break-it pass's
    /// crafted trace named 1000 each: 10^5 of them took 3.8 GB to view, a row in three
    /// tables per producer) keeps its latest in the order named, links only those and
    /// counts the rest, which its hazards say; the one that decided when it could start is
    /// still its critical producer.
    #[test]
    fn a_submit_naming_more_producers_than_kept_keeps_its_latest_and_counts_the_rest() {
        let kept = EXPLICIT_PRODUCERS_KEPT as u64;
        let n = kept + 40;
        let model = fan_in(n).model();
        let consumer = key(&model, n, 0).submission;
        let latest: Vec<SubmissionIndex> = (n - kept..n).rev().map(SubmissionIndex).collect();
        assert_eq!(model.explicit_producers(consumer), latest);
        assert_eq!(model.explicit_producers_left_out(consumer), 40);
        assert_eq!(model.info().explicit_producers_left_out, 40);
        // One row per producer kept, in each table: at most `kept` per `Submit`.
        assert_eq!(model.explicit_producers.len() as u64, kept);
        assert_eq!(model.explicit_edges.len() as u64, kept);
        assert_eq!(model.explicit_by_consumer.len() as u64, kept);

        for region in 0..3 {
            let h = model.hazards_of(key(&model, n, region));
            let explicit: Vec<RegionKey> = h
                .producers
                .iter()
                .filter(|e| e.scope == HazardScope::Explicit)
                .map(|e| e.producer)
                .collect();
            let expected: Vec<RegionKey> = (n - kept..n).map(|s| key(&model, s, 2)).collect();
            assert_eq!(explicit, expected, "region {region}");
            assert_eq!(h.producers_left_out, 40);
        }
        let waiting = model.span_of(key(&model, n, 0)).unwrap();
        assert_eq!(
            model.critical_producer(waiting),
            model.span_of(key(&model, n - 1, 2))
        );
        // A producer left out lists no consumer, and says some may be missing; so does a
        // kept one, which lists its consumer.
        let old = model.hazards_of(key(&model, 0, 2));
        assert!(
            old.consumers
                .iter()
                .all(|e| e.scope != HazardScope::Explicit)
        );
        assert!(old.consumers_incomplete);
        let last = model.hazards_of(key(&model, n - 1, 2));
        assert_eq!(last.consumers.len(), 1);
        assert!(last.consumers_incomplete);
        // Without a `Submit` over the limit, nothing is said to be missing.
        let few = fan_in(kept).model();
        let h = few.hazards_of(key(&few, kept - 1, 2));
        assert_eq!(
            few.explicit_producers(key(&few, kept, 0).submission).len() as u64,
            kept
        );
        assert_eq!((h.consumers.len(), h.consumers_incomplete), (1, false));
        assert_eq!(few.hazards_of(key(&few, kept, 0)).producers_left_out, 0);
    }

    /// The latest producers are the highest indices, in the order named; past the limit, a
    /// producer named again is one producer (its first naming), never a place taken from
    /// another: a repeat counts as none left out.
    #[test]
    fn the_latest_producers_are_the_highest_in_the_order_named() {
        let named = |v: &[u64]| v.iter().copied().map(SubmissionIndex).collect::<Vec<_>>();
        let latest = |v: &[u64], limit| crate::scan::latest_producers(&named(v), limit);
        let left_out = |v: &[u64], limit| crate::scan::producers_left_out(&named(v), limit);
        assert_eq!(latest(&[3, 9, 1, 7, 9, 2], 3), named(&[3, 9, 7]));
        assert_eq!(left_out(&[3, 9, 1, 7, 9, 2], 3), 2);
        assert_eq!(latest(&[1, 2, 3, 4], 2), named(&[3, 4]));
        assert_eq!(latest(&[5, 5, 5], 2), named(&[5]));
        assert_eq!(left_out(&[5, 5, 5], 2), 0);
        assert_eq!(latest(&[4, 1], 2), named(&[4, 1]));
        assert_eq!(latest(&[4, 1], 0), named(&[]));
        // One completion named 16 times before five earlier ones: all six are linked.
        let mut repeated = vec![6; 16];
        repeated.extend([1, 2, 3, 4, 5]);
        let kept = EXPLICIT_PRODUCERS_KEPT;
        assert_eq!(latest(&repeated, kept), named(&[6, 1, 2, 3, 4, 5]));
        assert_eq!(left_out(&repeated, kept), 0);
    }

    #[test]
    fn explicit_producers_link_whole_submissions() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[0], 1)
            .ran(0, 0, 10, 20)
            .ran(0, 1, 30, 40)
            .ran(0, 2, 50, 60)
            .ran(1, 0, 61, 70);
        let model = f.model();
        let h = model.hazards_of(key(&model, 1, 0));
        let explicit: Vec<_> = h
            .producers
            .iter()
            .filter(|e| e.scope == HazardScope::Explicit)
            .collect();
        assert_eq!(explicit.len(), 1);
        assert_eq!(
            explicit[0].producer,
            key(&model, 0, 2),
            "the region that ended last"
        );
        assert_eq!(explicit[0].kind, None);
        let released = model.hazards_of(key(&model, 0, 2));
        assert!(
            released
                .consumers
                .iter()
                .any(|e| e.scope == HazardScope::Explicit && e.consumer == key(&model, 1, 0))
        );
        // Only the last region of the producer shows the explicit consumers.
        assert!(
            model
                .hazards_of(key(&model, 0, 0))
                .consumers
                .iter()
                .all(|e| e.scope != HazardScope::Explicit)
        );
    }

    #[test]
    fn first_failure_and_what_it_took_down() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .ran(0, 0, 10, 20)
            .timing(0, 1, 30, 40)
            .done(0, 1, failed("device lost"), 41)
            .done(0, 2, cancelled("producer failed"), 42)
            // Submission 1 runs after 0 explicitly: everything in it is cancelled.
            .submit(1, 1, &[0], 5)
            .done(1, 0, cancelled("producer submission 0 failed"), 43)
            .done(1, 1, cancelled("producer submission 0 failed"), 43)
            .done(1, 2, cancelled("producer submission 0 failed"), 43)
            // An unrelated, later failure.
            .submit(1, 2, &[], 50)
            .timing(2, 0, 60, 70)
            .done(2, 0, failed("other"), 71)
            .push(Quarantine {
                runtime: RT,
                prepared: PreparedId(1),
                submission: Some(SubmissionIndex(0)),
                region: Some(hrx_capture::schema::RegionIndex(1)),
                cause: "device lost".into(),
                time_ns: 44,
            })
            .push(Poison {
                runtime: RT,
                buffer: hrx_capture::schema::BufferId(2),
                cause: "device lost".into(),
                time_ns: 45,
                submission: None,
                region: None,
            });
        let model = f.model();
        let failure = model.first_failure().unwrap();
        let event = &model.events()[failure.event.get()];
        assert_eq!(event.kind, EventKind::RegionFailed);
        assert_eq!(event.text, "device lost");
        assert_eq!(failure.span, model.span_of(key(&model, 0, 1)));
        let cancelled: Vec<_> = failure
            .cancelled
            .iter()
            .map(|&s| model.key_of(model.span(s)))
            .collect();
        assert_eq!(cancelled.len(), 4, "{cancelled:?}");
        assert!(cancelled.contains(&key(&model, 0, 2)));
        assert!(cancelled.contains(&key(&model, 1, 0)));
        assert!(
            failure.failed.is_empty(),
            "submission 2 did not depend on it"
        );
        assert_eq!(failure.poisoned, vec![hrx_capture::schema::BufferId(2)]);
        assert_eq!(failure.quarantined, vec![PreparedId(1)]);
    }

    /// As the runtime records a device loss: fault, quarantine and poison, then the failed
    /// completion.
    #[test]
    fn quarantine_and_poison_recorded_before_the_failure_belong_to_it() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .push(Poison {
                runtime: RT,
                buffer: hrx_capture::schema::BufferId(3),
                cause: "an earlier, unrelated poisoning".into(),
                time_ns: 5,
                submission: None,
                region: None,
            })
            .ran(0, 0, 10, 20)
            .timing(0, 1, 30, 40)
            .push(Quarantine {
                runtime: RT,
                prepared: PreparedId(1),
                submission: Some(SubmissionIndex(0)),
                region: Some(hrx_capture::schema::RegionIndex(1)),
                cause: "device lost".into(),
                time_ns: 40,
            })
            .push(Poison {
                runtime: RT,
                buffer: hrx_capture::schema::BufferId(2),
                cause: "device lost".into(),
                time_ns: 41,
                submission: None,
                region: None,
            })
            .done(0, 1, failed("device lost"), 42)
            .done(0, 2, cancelled("producer failed"), 43);
        let model = f.model();
        let failure = model.first_failure().unwrap();
        assert_eq!(
            model.events()[failure.event.get()].kind,
            EventKind::RegionFailed
        );
        assert_eq!(failure.quarantined, vec![PreparedId(1)]);
        assert_eq!(failure.poisoned, vec![hrx_capture::schema::BufferId(2)]);
    }

    #[test]
    fn no_failure_no_first_failure() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0).ran(0, 0, 10, 20);
        assert!(f.model().first_failure().is_none());
    }
}
