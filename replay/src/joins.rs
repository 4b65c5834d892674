//! What replay reads of a trace's completions, timings, events, output digests and
//! cross-submission waits, joined to their submissions and regions by the one join of every
//! reader (`hrx_analysis::scan`):
//! the capture's records when a chunk is planned (module `plan`), and the replay's own when
//! they are read back (module `execute`). Replay matches no timing, completion, event or
//! digest to a submission itself; it looks the joined submission up in its plan.
//!
//! Records that never join (a timing or completion naming a submission the trace lacks, or
//! a region its graph does not have) are not compared: the plan refuses a trace whose
//! records name what it lacks (module `plan`), so only those of a range's earlier
//! submissions (in flight when it opened) are left unjoined there. A digest that never
//! joins is kept, after those that joined, under the submission it names: the plan refuses
//! it or leaves it out as it does any record naming such a submission.
//!
//! A cross wait is kept where it joined at both ends, or at its consumer with its producer
//! before the trace's range (`Visitor::link_before_range`: a trim's, or a streamed replay's
//! chunk, whose earlier chunks hold the producer). One of or on a submission whose `Submit`
//! the trace simply lacks (lost while recording) stays unresolved and is not kept: a chain of
//! waits through that submission no longer orders its ends (replay read every `CrossWait`
//! record itself before, and kept those).
//!
//! An explicit producer (`submit_after`) that the join hands over as before the trace's
//! range is kept too ([`Joined::producers_before`]): the plan accepts it without finding its
//! `Submit`, where it refuses a producer that is simply missing. It is the join, not the
//! plan, that says what lies before the range: the plan once compared a producer with the
//! lowest range start, which in a later chunk of a ranged trace (the recording's range kept
//! beside the chunk's own) left a producer of an earlier chunk neither before the range nor
//! in it, and refused the chunk.

use crate::plan::Sample;
use hrx_analysis::Index;
use hrx_analysis::scan::{
    JoinedEvent, JoinedLink, JoinedRegion, JoinedSpan, JoinedSubmission, Joiner, LinkBeforeRange,
    Outcome, Visitor,
};
use hrx_capture::schema::{self as s, NodeIndex, Record, RuntimeId, SubmissionIndex};
use std::collections::{BTreeMap, HashMap};

/// One runtime's joined records, in the order they joined.
#[derive(Debug, Default)]
pub(crate) struct Joined<'t> {
    /// Each `SubmissionDone`: its submission and status.
    pub done: Vec<(SubmissionIndex, &'t s::Status)>,
    /// Each `RegionDone` of a region of its submission's graph: submission, region, status
    /// and when it was recorded.
    pub region_done: Vec<(SubmissionIndex, u32, s::Status, u64)>,
    /// Each `RegionTiming`: submission, region, time.
    pub region_times: Vec<(SubmissionIndex, u32, Sample)>,
    /// Each `OpTiming`: submission, operation (node), time.
    pub op_times: Vec<(SubmissionIndex, u32, Sample)>,
    /// Each `Quarantine` naming a submission.
    pub quarantines: Vec<SubmissionIndex>,
    /// Each `FaultInjected` naming a submission, with its description.
    pub faults: Vec<(SubmissionIndex, &'t str)>,
    /// Each `Poison` naming a submission.
    pub poisons: Vec<&'t s::Poison>,
    /// Each `OutputDigest`: its submission (the one it joined to, else the one it names)
    /// and the record; a submission's digests in file order.
    pub outputs: Vec<(SubmissionIndex, &'t s::OutputDigest)>,
    /// Each `CrossWait` joined (see the module docs): the submission that waited and the
    /// one it waited on.
    pub cross_waits: Vec<(SubmissionIndex, SubmissionIndex)>,
    /// Each explicit producer that lies before the trace's range (see the module docs): the
    /// submission that named it and the producer.
    pub producers_before: Vec<(SubmissionIndex, SubmissionIndex)>,
}

/// The joins of one pass over records held in memory, per runtime.
pub(crate) struct Joins<'t> {
    /// Per runtime.
    pub runtimes: BTreeMap<RuntimeId, Joined<'t>>,
}

struct Collect<'a, 't> {
    records: &'a [&'t Record],
    runtimes: BTreeMap<RuntimeId, Joined<'t>>,
    /// Each joined submission by ordinal (`JoinedSubmission::ordinal`): what a link that
    /// joined at its consumer only names it by.
    ordinals: HashMap<u64, SubmissionIndex>,
}

impl Sample {
    /// The time of a joined span.
    fn of_span(span: &JoinedSpan) -> Sample {
        Sample {
            host_ns: span.duration_ns(),
            device_ns: span
                .device
                .filter(|d| d.end_ns >= d.start_ns)
                .map(|d| d.end_ns - d.start_ns),
        }
    }
}

impl<'t> Visitor for Collect<'_, 't> {
    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let region = index.region(span.region).index.0;
        self.runtimes
            .entry(span.runtime)
            .or_default()
            .region_times
            .push((span.submission, region, Sample::of_span(span)));
    }

    fn op_span(&mut self, _: &Index, span: &JoinedSpan, node: NodeIndex) {
        self.runtimes
            .entry(span.runtime)
            .or_default()
            .op_times
            .push((span.submission, node.0, Sample::of_span(span)));
    }

    fn region_outcome(&mut self, _: &Index, r: &JoinedRegion, outcome: Outcome, time_ns: u64) {
        // Failures and cancellations come with their message as events.
        if outcome == Outcome::Ok {
            let s = &r.submission;
            self.runtimes
                .entry(s.runtime)
                .or_default()
                .region_done
                .push((s.submission, r.index.0, s::Status::Ok, time_ns));
        }
    }

    fn submission_done(&mut self, _: &Index, done: &JoinedEvent) {
        if let Some(Record::SubmissionDone(d)) = self.records.get(done.record as usize) {
            let s = &done.submission;
            self.runtimes
                .entry(s.runtime)
                .or_default()
                .done
                .push((s.submission, &d.status));
        }
    }

    fn output(
        &mut self,
        _: &Index,
        record: u64,
        digest: &s::OutputDigest,
        submission: Option<&JoinedSubmission>,
    ) {
        let Some(Record::OutputDigest(d)) = self.records.get(record as usize) else {
            return;
        };
        debug_assert_eq!(d, digest);
        let (runtime, index) =
            submission.map_or((d.runtime, d.submission), |s| (s.runtime, s.submission));
        self.runtimes
            .entry(runtime)
            .or_default()
            .outputs
            .push((index, d));
    }

    fn link(&mut self, _: &Index, link: &JoinedLink) {
        // Joined at both ends, by the wait's own submissions.
        if let Some(w) = link.wait {
            self.runtimes
                .entry(link.runtime)
                .or_default()
                .cross_waits
                .push((w.submission, w.on_submission));
        }
    }

    fn link_before_range(&mut self, _: &Index, link: &LinkBeforeRange) {
        let joined = self.runtimes.entry(link.runtime).or_default();
        match link.wait {
            Some(w) => joined.cross_waits.push((w.submission, link.producer)),
            None => {
                if let Some(&consumer) = self.ordinals.get(&link.consumer) {
                    joined.producers_before.push((consumer, link.producer));
                }
            }
        }
    }

    fn submitted(&mut self, _: &Index, submission: &JoinedSubmission, _: &s::Submit) {
        self.ordinals
            .insert(submission.ordinal, submission.submission);
    }

    fn event(&mut self, _: &Index, event: &JoinedEvent) {
        let Some(record) = self.records.get(event.record as usize) else {
            return;
        };
        let submission = event.submission.submission;
        let joined = self.runtimes.entry(event.submission.runtime).or_default();
        match record {
            // A region of its submission's graph, as a timing is.
            Record::RegionDone(d) if event.region.is_some() => {
                joined
                    .region_done
                    .push((submission, d.region.0, d.status.clone(), d.time_ns));
            }
            Record::Quarantine(_) => joined.quarantines.push(submission),
            Record::FaultInjected(f) => joined.faults.push((submission, &f.description)),
            Record::Poison(p) => joined.poisons.push(p),
            _ => {}
        }
    }
}

/// Joins `records` (one pass of `hrx_analysis::scan`): every timing, completion, event,
/// cross wait and explicit producer before the range to its submission and region.
///
/// Every explicit producer of a `Submit` read before its graph's `Prepared` is held while it
/// waits ([`Joiner::park_every_producer`]), past the bound the other readers keep
/// (`hrx_analysis::scan::PARKED_PRODUCERS_LIMIT`): the plan orders a submission after each
/// producer before the range that the join hands over and refuses one it was not handed,
/// so a producer dropped there would refuse a replayable trace. The records are held here
/// already, so the copies cost at most what they do.
pub(crate) fn join<'t>(records: &[&'t Record]) -> Joins<'t> {
    let mut collect = Collect {
        records,
        runtimes: BTreeMap::new(),
        ordinals: HashMap::new(),
    };
    let mut joiner = Joiner::new();
    joiner.park_every_producer();
    for &record in records {
        joiner.push(record, &mut collect);
    }
    joiner.finish(&mut collect, None, Vec::new());
    Joins {
        runtimes: collect.runtimes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};

    /// What a pass joined, comparable: (runtime, completions, region completions, timings,
    /// quarantines, faults, poisoned submissions), each sorted.
    type Summary = Vec<(
        u32,
        Vec<(u64, String)>,
        Vec<(u64, u32, String, u64)>,
        Vec<(u64, u32, u64, Option<u64>)>,
        Vec<u64>,
        Vec<(u64, String)>,
        Vec<u64>,
    )>;

    fn summary(records: &[Record]) -> Summary {
        let refs: Vec<&Record> = records.iter().collect();
        let joins = join(&refs);
        fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
            v.sort();
            v
        }
        joins
            .runtimes
            .into_iter()
            .map(|(runtime, j)| {
                (
                    runtime.0,
                    sorted(
                        j.done
                            .iter()
                            .map(|(s, d)| (s.0, format!("{d:?}")))
                            .collect(),
                    ),
                    sorted(
                        j.region_done
                            .iter()
                            .map(|(s, r, d, t)| (s.0, *r, format!("{d:?}"), *t))
                            .collect(),
                    ),
                    sorted(
                        j.region_times
                            .iter()
                            .map(|(s, r, t)| (s.0, *r, t.host_ns, t.device_ns))
                            .collect(),
                    ),
                    sorted(j.quarantines.iter().map(|s| s.0).collect()),
                    sorted(j.faults.iter().map(|(s, f)| (s.0, f.to_string())).collect()),
                    sorted(
                        j.poisons
                            .iter()
                            .filter_map(|p| p.submission)
                            .map(|s| s.0)
                            .collect(),
                    ),
                )
            })
            .collect()
    }

    #[test]
    fn records_join_to_their_submissions_in_any_record_order() {
        let spec = PipelineSpec {
            fail_at: Some(3),
            ..PipelineSpec::ops(40)
        };
        let records: Vec<Record> = pipeline(spec).collect();
        let joined = summary(&records);
        let count = |f: fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
        let [(_, done, region_done, times, quarantines, faults, poisons)] = &joined[..] else {
            panic!("one runtime: {joined:?}");
        };
        // Every record joined once.
        assert_eq!(
            done.len(),
            count(|r| matches!(r, Record::SubmissionDone(_)))
        );
        assert_eq!(
            region_done.len(),
            count(|r| matches!(r, Record::RegionDone(_)))
        );
        assert_eq!(times.len(), count(|r| matches!(r, Record::RegionTiming(_))));
        // The failure's records, with their messages, joined to submission 3.
        assert_eq!(
            (quarantines.as_slice(), poisons.as_slice()),
            (&[3][..], &[3][..])
        );
        assert!(faults.iter().all(|f| f.0 == 3) && !faults.is_empty());
        assert!(
            region_done
                .iter()
                .any(|(s, _, d, _)| *s == 3 && d.starts_with("Failed"))
        );
        // Every `Submit` written after the other records of its submission (another
        // thread's ring written out later): the same joins.
        let mut reordered: Vec<Record> = Vec::new();
        let mut submits = Vec::new();
        for r in records {
            match r {
                Record::Submit(_) => submits.push(r),
                r => reordered.push(r),
            }
        }
        reordered.extend(submits);
        assert_eq!(summary(&reordered), joined);
        // A submission the trace lacks: its records do not join.
        reordered.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 1));
        let without = summary(&reordered);
        assert!(without[0].1.iter().all(|d| d.0 != 1));
        assert!(without[0].3.iter().all(|t| t.0 != 1));
        assert_eq!(without[0].1.len(), joined[0].1.len() - 1);
    }

    #[test]
    fn digests_join_to_their_submissions_and_unjoined_ones_are_kept_last() {
        // One digest per submission, before its completion; every `Submit` moved after
        // the other records (another thread's ring written out later).
        let mut records = Vec::new();
        let mut submits = Vec::new();
        for r in pipeline(PipelineSpec::ops(40)) {
            match r {
                Record::Submit(_) => submits.push(r),
                Record::SubmissionDone(ref d) => {
                    records.push(Record::OutputDigest(s::OutputDigest {
                        runtime: d.runtime,
                        submission: d.submission,
                        buffer: s::BufferId(d.submission.0),
                        start: 0,
                        end: 64,
                        xxh3: 100 + d.submission.0,
                        contents: s::Payload::Omitted { len_bytes: 64 },
                    }));
                    records.push(r);
                }
                r => records.push(r),
            }
        }
        records.extend(submits);
        let outputs = |records: &[Record]| -> Vec<(u64, u64)> {
            let refs: Vec<&Record> = records.iter().collect();
            let joins = join(&refs);
            let [(_, joined)] = &joins.runtimes.iter().collect::<Vec<_>>()[..] else {
                panic!("one runtime");
            };
            joined
                .outputs
                .iter()
                .map(|(s, d)| {
                    assert_eq!(*s, d.submission);
                    (s.0, d.xxh3)
                })
                .collect()
        };
        // Each joined when its `Submit` was read, in submission order.
        let all = outputs(&records);
        assert_eq!(all, (0..10).map(|s| (s, 100 + s)).collect::<Vec<_>>());
        // A submission the trace lacks: its digest is kept under the submission it names,
        // after those that joined.
        records.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 1));
        let without = outputs(&records);
        assert_eq!(without.last(), Some(&(1, 101)));
        assert_eq!(without.len(), 10);
    }

    /// A `Submit` read before its graph's `Prepared` naming more explicit producers before
    /// the trace's range than the other readers hold while it waits
    /// (`hrx_analysis::scan::PARKED_PRODUCERS_LIMIT`): replay's join hands over every one,
    /// so the plan orders the submission after each instead of refusing it for a producer
    /// it was not handed.
    #[test]
    fn a_parked_submit_keeps_every_producer_before_the_range() {
        let named = hrx_analysis::scan::PARKED_PRODUCERS_LIMIT + 10;
        let mut records: Vec<Record> = pipeline(PipelineSpec::ops(8))
            .filter(|r| !matches!(r, Record::Submit(s) if s.submission.0 < 1))
            .collect();
        let at = records
            .iter()
            .position(|r| matches!(r, Record::Submit(_)))
            .unwrap();
        records.insert(
            at,
            Record::TraceRange(s::TraceRange {
                runtime: RuntimeId(1),
                start: SubmissionIndex(1),
                end: None,
                trigger: "submissions:1..".into(),
                trimmed_from: None,
                time_ns: 0,
                fault: None,
            }),
        );
        for r in &mut records {
            if let Record::Submit(submit) = r
                && submit.submission.0 == 1
            {
                submit.producers = vec![SubmissionIndex(0); named];
            }
        }
        // Every `Prepared` last: each `Submit` waits for its graph.
        let (prepared, mut records): (Vec<_>, Vec<_>) = records
            .into_iter()
            .partition(|r| matches!(r, Record::Prepared(_)));
        records.extend(prepared);
        let refs: Vec<&Record> = records.iter().collect();
        let joins = join(&refs);
        let before = &joins.runtimes[&RuntimeId(1)].producers_before;
        assert_eq!(before.len(), named);
        assert!(
            before
                .iter()
                .all(|&p| p == (SubmissionIndex(1), SubmissionIndex(0)))
        );
    }
}
