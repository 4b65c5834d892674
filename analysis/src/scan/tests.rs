//! The pass's joins: order of records, bounds, what never joins.

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
    fn outcome(&mut self, _: &Index, _: &JoinedSubmission, _: Option<Outcome>, _: Outcome) {
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
    let mut reordered: Vec<Record> = records.iter().filter(|r| !definition(r)).cloned().collect();
    reordered.extend(records.iter().filter(|r| definition(r)).cloned());
    let mut count = Count::default();
    let summary = scan_records(&reordered, &mut count);
    assert_eq!(summary.unplaced_timings, 0);
    assert_eq!(count.spans, 40);
    assert_eq!(count.outcomes, 10);
}

#[test]
fn submits_of_a_graph_never_prepared_keep_their_outcomes() {
    // The preparing thread's ring was lost (a killed recording): the submissions
    // still completed, and stats counts them (every timing unplaced, never dropped).
    let records: Vec<Record> = pipeline(PipelineSpec::ops(40))
        .filter(|r| !matches!(r, Record::Prepared(_)))
        .collect();
    let mut count = Count::default();
    let summary = scan_records(&records, &mut count);
    assert_eq!(count.outcomes, 10);
    assert_eq!(count.spans, 0);
    assert_eq!(summary.unplaced_timings, 40);
}

#[test]
fn more_submits_waiting_than_the_limit_enter_oldest_first_and_keep_their_outcomes() {
    let submissions = PARK_LIMIT as u64 + 10;
    let mut joiner = Joiner::new();
    let mut count = Count::default();
    let spec = PipelineSpec::ops(submissions * REGIONS_PER_SUBMISSION);
    for r in pipeline(spec).filter(|r| !matches!(r, Record::Prepared(_))) {
        joiner.push(&r, &mut count);
        assert!(joiner.parked_submits.len() <= PARK_LIMIT);
        // Every waiting submit is counted under its graph, and only those.
        assert_eq!(
            joiner.parked_graphs.values().sum::<usize>(),
            joiner.parked_submits.len()
        );
    }
    // The 10 oldest entered when the queue was full, in the order read.
    assert_eq!(joiner.entered, 10);
    let first = joiner.parked_submits.front().unwrap().0.submission;
    assert_eq!(first, SubmissionIndex(10));
    let summary = joiner.finish(&mut count, None, Vec::new());
    assert_eq!(count.outcomes, submissions);
    assert_eq!(
        summary.unplaced_timings,
        submissions * REGIONS_PER_SUBMISSION
    );
}

#[test]
fn state_stays_bounded_by_the_window_not_the_trace() {
    let submissions = 3 * RETIRE_WINDOW as u64;
    let mut joiner = Joiner::new();
    let mut count = Count::default();
    for (i, r) in pipeline(PipelineSpec::ops(submissions * REGIONS_PER_SUBMISSION)).enumerate() {
        joiner.push(&r, &mut count);
        assert!(joiner.live.len() <= RETIRE_WINDOW + 2);
        // What is in flight, not what the window keeps joinable.
        if i % (1 << 16) == 0 {
            assert!(joiner.in_flight().len() <= 2, "{:?}", joiner.in_flight());
        }
    }
    assert!(joiner.retired.len() <= RETIRE_WINDOW);
    let summary = joiner.finish(&mut count, None, Vec::new());
    assert!(summary.in_flight.is_empty(), "{:?}", summary.in_flight);
    assert_eq!(count.spans, submissions * REGIONS_PER_SUBMISSION);
    assert_eq!(summary.unplaced_timings, 0);
}

/// The joins a timeline reads: submissions, region outcomes and links, by ordinal.
#[derive(Default)]
struct Joins {
    submitted: Vec<(u64, u64)>,
    regions: Vec<(u64, u32, Outcome, u64)>,
    links: Vec<(u64, u64, bool)>,
    /// Links whose producer is before the range: consumer ordinal, producer index, wait.
    before_range: Vec<(u64, u64, bool)>,
    outcomes: Vec<(u64, Outcome)>,
}

impl Visitor for Joins {
    fn submitted(&mut self, _: &Index, s: &JoinedSubmission, submit: &Submit) {
        assert_eq!(
            (s.runtime, s.submission),
            (submit.runtime, submit.submission)
        );
        assert!(s.prepared.is_some());
        self.submitted.push((s.ordinal, s.submission.0));
    }
    fn region_outcome(&mut self, index: &Index, r: &JoinedRegion, o: Outcome, t: u64) {
        assert_eq!(index.region_of(r.prepared, r.index), Some(r.region));
        assert_eq!(index.region(r.region).lane, r.lane);
        self.regions.push((r.submission.ordinal, r.index.0, o, t));
    }
    fn link(&mut self, _: &Index, l: &JoinedLink) {
        self.links.push((l.consumer, l.producer, l.wait.is_some()));
    }
    fn link_before_range(&mut self, _: &Index, l: &LinkBeforeRange) {
        if let Some(w) = l.wait {
            assert_eq!((w.runtime, w.on_submission), (l.runtime, l.producer));
        }
        self.before_range
            .push((l.consumer, l.producer.0, l.wait.is_some()));
    }
    fn outcome(&mut self, _: &Index, s: &JoinedSubmission, _: Option<Outcome>, o: Outcome) {
        self.outcomes.push((s.ordinal, o));
    }
}

/// Every `Submit` moved after its submission's other records (another thread's ring
/// written out later).
fn submits_last(records: Vec<Record>) -> Vec<Record> {
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
    reordered.extend(held);
    reordered
}

#[test]
fn submissions_region_outcomes_and_waits_join_in_any_record_order() {
    let spec = PipelineSpec {
        fail_at: Some(6),
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let region_dones = records
        .iter()
        .filter(|r| matches!(r, Record::RegionDone(_)))
        .count();
    let mut in_order = Joins::default();
    let summary = scan_records(&records, &mut in_order);
    assert_eq!(summary.unresolved_waits, 0);
    // Ordinals are the order of the Submit records: here, the submissions' indices.
    assert!(in_order.submitted.iter().all(|&(o, i)| o == i));
    assert_eq!(in_order.submitted.len(), 7);
    assert_eq!(in_order.regions.len(), region_dones);
    // Submission 6's compute region failed, its download and host were cancelled.
    let failed: Vec<_> = in_order
        .regions
        .iter()
        .filter(|r| r.0 == 6)
        .map(|r| (r.1, r.2))
        .collect();
    assert!(failed.contains(&(1, Outcome::Failed)), "{failed:?}");
    assert!(failed.contains(&(2, Outcome::Cancelled)), "{failed:?}");
    // Two waits of each submission on the one before it.
    assert_eq!(in_order.links.len(), 2 * 6);
    assert!(
        in_order
            .links
            .iter()
            .all(|&(c, p, wait)| c == p + 1 && wait)
    );

    let mut reordered = Joins::default();
    let summary = scan_records(&submits_last(records), &mut reordered);
    assert_eq!(summary.unresolved_waits, 0);
    let sorted = |mut v: Vec<(u64, u32, Outcome, u64)>| {
        v.sort_by_key(|r| (r.0, r.1));
        v
    };
    assert_eq!(sorted(reordered.regions), sorted(in_order.regions));
    let mut links = reordered.links;
    links.sort_unstable();
    let mut expected = in_order.links;
    expected.sort_unstable();
    assert_eq!(links, expected);
    reordered.outcomes.sort_by_key(|o| o.0);
    assert_eq!(reordered.outcomes, in_order.outcomes);
}

#[test]
fn explicit_producers_join_and_a_wait_on_an_unknown_submission_is_counted() {
    let mut records: Vec<Record> = pipeline(PipelineSpec::ops(12)).collect();
    // Submission 2 names 0 and an unrecorded 9 as producers; a wait on 9 too.
    for r in &mut records {
        if let Record::Submit(s) = r
            && s.submission.0 == 2
        {
            s.producers = vec![SubmissionIndex(0), SubmissionIndex(9)];
        }
    }
    let mut wait = records
        .iter()
        .find_map(|r| match r {
            Record::CrossWait(w) => Some(*w),
            _ => None,
        })
        .unwrap();
    wait.on_submission = SubmissionIndex(9);
    records.push(Record::CrossWait(wait));
    let mut joins = Joins::default();
    let summary = scan_records(&records, &mut joins);
    assert!(joins.links.contains(&(2, 0, false)), "{:?}", joins.links);
    assert_eq!(joins.links.iter().filter(|l| !l.2).count(), 1);
    assert_eq!(summary.unresolved_waits, 1);
}

/// Submissions 0..10 trimmed to 4..10 (every record naming one before 4 left out), with a
/// `TraceRange` saying so where `range_at` puts it (`None`: none), submission 5 naming 2
/// and 4 as explicit producers, and submission 7's `Submit` lost.
fn trimmed(range_at: Option<fn(&mut Vec<Record>, Record)>) -> Vec<Record> {
    let mut records: Vec<Record> = pipeline(PipelineSpec::ops(10 * REGIONS_PER_SUBMISSION))
        .filter(|r| match r {
            Record::Submit(s) => s.submission.0 >= 4 && s.submission.0 != 7,
            Record::CrossWait(w) => w.submission.0 >= 4,
            Record::RegionTiming(t) => t.submission.0 >= 4,
            Record::RegionDone(d) => d.submission.0 >= 4,
            Record::SubmissionDone(d) => d.submission.0 >= 4,
            _ => true,
        })
        .collect();
    for r in &mut records {
        if let Record::Submit(s) = r
            && s.submission.0 == 5
        {
            s.producers = vec![SubmissionIndex(2), SubmissionIndex(4)];
        }
    }
    if let Some(put) = range_at {
        let range = Record::TraceRange(hrx_capture::schema::TraceRange {
            runtime: RuntimeId(1),
            start: SubmissionIndex(4),
            end: Some(SubmissionIndex(10)),
            trigger: "submissions:4..10".into(),
            trimmed_from: Some("whole.hrxt".into()),
            time_ns: 0,
            fault: None,
        });
        put(&mut records, range);
    }
    records
}

#[test]
fn a_wait_on_a_producer_before_the_range_is_handed_over_and_a_missing_one_stays_unresolved() {
    // The trim's range first (where `trim` writes it), or read after every wait.
    let first: fn(&mut Vec<Record>, Record) = |records, range| {
        let at = records
            .iter()
            .position(|r| matches!(r, Record::Submit(_)))
            .unwrap();
        records.insert(at, range);
    };
    let last: fn(&mut Vec<Record>, Record) = |records, range| records.push(range);
    let mut seen = Vec::new();
    for range_at in [first, last] {
        let mut joins = Joins::default();
        let summary = scan_records(&trimmed(Some(range_at)), &mut joins);
        let index = |ordinal: u64| {
            let at = joins.submitted.iter().position(|s| s.0 == ordinal).unwrap();
            joins.submitted[at].1
        };
        let mut before: Vec<_> = joins
            .before_range
            .iter()
            .map(|&(c, p, wait)| (index(c), p, wait))
            .collect();
        before.sort_unstable();
        // Submission 4's two waits on 3 and 5's explicit producer 2, each once.
        assert_eq!(before, [(4, 3, true), (4, 3, true), (5, 2, false)]);
        assert_eq!(summary.waits_before_range, 2);
        // What joined at both ends is unchanged: every wait within the range but those of
        // and on the lost 7, and 5's explicit producer 4.
        let mut links: Vec<_> = joins
            .links
            .iter()
            .map(|&(c, p, wait)| (index(c), index(p), wait))
            .collect();
        links.sort_unstable();
        let mut expected = vec![(5, 4, false)];
        for s in [5, 6, 9] {
            expected.extend([(s, s - 1, true), (s, s - 1, true)]);
        }
        expected.sort_unstable();
        assert_eq!(links, expected);
        // The waits of 7 (never submitted) and on 7 (simply missing: no range leaves it
        // out) stay unresolved.
        assert_eq!(summary.unresolved_waits, 4);
        seen.push((before, links));
    }
    assert_eq!(seen[0], seen[1]);
    // Without the `TraceRange`, 4's waits on 3 are as unresolved as those on 7.
    let mut joins = Joins::default();
    let summary = scan_records(&trimmed(None), &mut joins);
    assert!(joins.before_range.is_empty());
    assert_eq!(
        (summary.unresolved_waits, summary.waits_before_range),
        (6, 0)
    );
}

/// What a joiner (`set` up) hands over of `trimmed`'s submissions 5 and 6 naming `five`
/// and `six` explicit producers before the range, their graph's `Prepared` read last (each
/// `Submit` parked): the explicit producers handed over, those counted not parked, and each
/// submission's [`JoinedSubmission::producers_not_held`]. The parked producers stay within
/// what `bound` says at every record.
fn parked_producers(
    set: fn(&mut Joiner),
    five: usize,
    six: usize,
    bound: usize,
) -> (usize, u64, Vec<(u64, u32)>) {
    #[derive(Default)]
    struct Held(Joins, Vec<(u64, u32)>);
    impl Visitor for Held {
        fn submitted(&mut self, index: &Index, s: &JoinedSubmission, submit: &Submit) {
            self.0.submitted(index, s, submit);
            self.1.push((s.submission.0, s.producers_not_held));
        }
        fn link_before_range(&mut self, index: &Index, l: &LinkBeforeRange) {
            self.0.link_before_range(index, l);
        }
    }
    let first: fn(&mut Vec<Record>, Record) = |records, range| {
        let at = records
            .iter()
            .position(|r| matches!(r, Record::Submit(_)))
            .unwrap();
        records.insert(at, range);
    };
    let mut records = trimmed(Some(first));
    for r in &mut records {
        if let Record::Submit(s) = r {
            let named = match s.submission.0 {
                5 => five,
                6 => six,
                _ => continue,
            };
            s.producers = (0..named).map(|p| SubmissionIndex(p as u64 % 4)).collect();
        }
    }
    let (prepared, mut records): (Vec<_>, Vec<_>) = records
        .into_iter()
        .partition(|r| matches!(r, Record::Prepared(_)));
    records.extend(prepared);
    let mut joiner = Joiner::new();
    set(&mut joiner);
    let mut held = Held::default();
    for r in &records {
        joiner.push(r, &mut held);
        assert!(
            joiner.parked_producers <= bound,
            "{}",
            joiner.parked_producers
        );
    }
    let summary = joiner.finish(&mut held, None, Vec::new());
    held.1.sort_unstable();
    // Explicit producers only (submission 4's two waits on 3 are before the range too).
    let producers = held.0.before_range.iter().filter(|l| !l.2).count();
    (producers, summary.producers_not_parked, held.1)
}

/// `Submit`s read before their graph's `Prepared` hold at most [`PARKED_PRODUCERS_LIMIT`]
/// explicit producers all together while they wait: one parked when the rest is full holds
/// its latest that fit, and the others are counted ([`ScanSummary::producers_not_parked`],
/// [`JoinedSubmission::producers_not_held`]), never joined; a reader limiting what it joins
/// holds no more than its limit, and counts the rest itself (none counted here); a reader
/// that needs them all (replay) holds them all. Each parked `Submit` held its whole list
/// (8 bytes a producer, up to [`PARK_LIMIT`] submits: session 55 left it).
#[test]
fn parked_submits_hold_at_most_the_limit_of_producers_and_count_the_rest() {
    // Each names submissions 0 to 3 (before the range) in turn: four distinct producers.
    let (five, six) = (PARKED_PRODUCERS_LIMIT - 2, 30);
    let (handed, not_parked, not_held) =
        parked_producers(|_| {}, five, six, PARKED_PRODUCERS_LIMIT);
    // Five fits whole; six has room for 2: its latest two distinct (3 and 2), the other two
    // counted as every reader counts producers, distinct (a repeat is none).
    assert_eq!(handed, PARKED_PRODUCERS_LIMIT);
    assert_eq!(not_parked, 2);
    assert_eq!(not_held, [(4, 0), (5, 0), (6, 2), (8, 0), (9, 0)]);
    let limit: fn(&mut Joiner) = |j| j.limit_explicit_producers(16);
    let (handed, not_parked, not_held) = parked_producers(limit, five, six, 32);
    // At most 16 held of each, its distinct four: nothing left out.
    assert_eq!((handed, not_parked), (8, 0));
    assert!(not_held.iter().all(|&(_, n)| n == 0), "{not_held:?}");
    let all: fn(&mut Joiner) = |j| j.park_every_producer();
    let (handed, not_parked, not_held) = parked_producers(all, five, six, five + six);
    assert_eq!((handed, not_parked), (five + six, 0));
    assert!(not_held.iter().all(|&(_, n)| n == 0), "{not_held:?}");
}

#[test]
fn a_region_started_before_its_submit_is_joined_at_the_end() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(4)).collect();
    let submit = records
        .iter()
        .position(|r| matches!(r, Record::Submit(_)))
        .unwrap();
    let mut cut: Vec<Record> = records[..submit].to_vec();
    cut.push(Record::RegionStarted(hrx_capture::schema::RegionStarted {
        runtime: RuntimeId(1),
        submission: SubmissionIndex(0),
        region: RegionIndex(1),
        time_ns: 5,
    }));
    cut.push(records[submit].clone());
    let summary = scan_records(&cut, &mut Joins::default());
    let running = summary.running[0];
    assert_eq!(running.ordinal, Some(0));
    let region = running.region_ref.expect("joined at the end");
    assert_eq!(summary.index.region(region).index, RegionIndex(1));
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

/// The records about a submission joined: (record, ordinal, region index, region).
#[derive(Default)]
struct Events(Vec<(u64, u64, Option<RegionIndex>, Option<RegionRef>)>);

impl Visitor for Events {
    fn event(&mut self, index: &Index, e: &JoinedEvent) {
        if let (Some(i), Some(p)) = (e.index, e.submission.prepared) {
            assert_eq!(index.region_of(p, i), e.region);
        }
        self.0
            .push((e.record, e.submission.ordinal, e.index, e.region));
    }
}

#[test]
fn an_event_read_before_its_submit_joins_to_its_submission_and_region() {
    let spec = PipelineSpec {
        fail_at: Some(3),
        ..PipelineSpec::ops(40)
    };
    let records = submits_last(pipeline(spec).collect());
    // The fault, the failed and the two cancelled regions, the quarantine and the poisoning
    // of submission 3, all written before its `Submit`.
    let submit = records
        .iter()
        .position(|r| matches!(r, Record::Submit(s) if s.submission.0 == 3))
        .unwrap();
    let expected: Vec<u64> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| match r {
            Record::RegionDone(d) => !matches!(d.status, Status::Ok),
            Record::FaultInjected(_) | Record::Quarantine(_) | Record::Poison(_) => true,
            _ => false,
        })
        .map(|(i, _)| i as u64)
        .collect();
    assert_eq!(expected.len(), 6);
    assert!(expected.iter().all(|&i| i < submit as u64));
    let mut events = Events::default();
    let summary = scan_records(&records, &mut events);
    assert_eq!(summary.unjoined_events, 0);
    let mut joined = events.0;
    joined.sort_by_key(|e| e.0);
    assert_eq!(joined.iter().map(|e| e.0).collect::<Vec<_>>(), expected);
    // Submits were moved, so ordinals are still the submissions' order: 3.
    assert!(joined.iter().all(|e| e.1 == 3), "{joined:?}");
    for (_, _, index, region) in &joined {
        let region = region.expect("a region of the prepared graph");
        assert_eq!(Some(summary.index.region(region).index), *index);
    }
}

/// Each `SubmissionDone` joined: (record, submission).
#[derive(Default)]
struct Dones(Vec<(u64, u64)>);

impl Visitor for Dones {
    fn submission_done(&mut self, _: &Index, d: &JoinedEvent) {
        assert_eq!((d.index, d.region), (None, None));
        self.0.push((d.record, d.submission.submission.0));
    }
}

#[test]
fn a_completion_read_before_its_submit_joins_with_its_record() {
    let records = submits_last(pipeline(PipelineSpec::ops(40)).collect());
    let mut dones = Dones::default();
    scan_records(&records, &mut dones);
    let mut joined = dones.0;
    joined.sort_unstable();
    // Every one names its own record: the record a reader holding the trace looks up.
    assert_eq!(joined.len(), 10);
    for (record, submission) in joined {
        let Record::SubmissionDone(d) = &records[record as usize] else {
            panic!("record {record} is no SubmissionDone");
        };
        assert_eq!(d.submission.0, submission);
    }
    // Those of a submission never submitted do not join.
    let mut records = records;
    records.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 3));
    let mut dones = Dones::default();
    scan_records(&records, &mut dones);
    assert_eq!(dones.0.len(), 9);
    assert!(dones.0.iter().all(|d| d.1 != 3));
}

#[test]
fn an_event_whose_submit_never_comes_is_counted() {
    let spec = PipelineSpec {
        fail_at: Some(3),
        ..PipelineSpec::ops(40)
    };
    let mut records: Vec<Record> = pipeline(spec).collect();
    records.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 3));
    let mut events = Events::default();
    let summary = scan_records(&records, &mut events);
    assert!(events.0.is_empty(), "{:?}", events.0);
    assert_eq!(summary.unjoined_events, 6);
    // A snapshot counts those still waiting.
    let mut joiner = Joiner::new();
    for r in &records {
        joiner.push(r, &mut Events::default());
    }
    assert_eq!(joiner.snapshot(None, Vec::new()).unjoined_events, 6);
}

/// A pipeline whose regions each record `RegionStarted` before their timing, with the
/// timing and completion of submission 3's region 2 and submission 5's region 1 dropped;
/// `lost` adds the loss counts a lossy recording writes (a `RecordsLost` and the session
/// end's dropped records), `closed` keeps the session end, `done` keeps submission 5's
/// `SubmissionDone`.
fn lossy(lost: bool, closed: bool, done: bool) -> Vec<Record> {
    let dropped = |r: &RegionTiming| matches!((r.submission.0, r.region.0), (3, 2) | (5, 1));
    let mut out = Vec::new();
    for record in pipeline(PipelineSpec::ops(40)) {
        match record {
            Record::RegionTiming(t) => {
                out.push(Record::RegionStarted(hrx_capture::schema::RegionStarted {
                    runtime: t.runtime,
                    submission: t.submission,
                    region: t.region,
                    time_ns: t.start_ns,
                }));
                if !dropped(&t) {
                    out.push(Record::RegionTiming(t));
                }
            }
            Record::RegionDone(d) if matches!((d.submission.0, d.region.0), (3, 2) | (5, 1)) => {}
            Record::SubmissionDone(d) if d.submission.0 == 5 && !done => {}
            Record::SessionEnd(mut end) => {
                if lost {
                    end.dropped_records = 4;
                    out.push(Record::RecordsLost(hrx_capture::schema::RecordsLost {
                        time_ns: end.time_ns,
                        lossy: true,
                        total: 4,
                        by_kind: Vec::new(),
                    }));
                }
                if closed {
                    out.push(Record::SessionEnd(end));
                }
            }
            r => out.push(r),
        }
    }
    out
}

/// A region whose timing and completion a lossy recording dropped is "timing lost", not
/// running at the end, when the trace says records were lost and its submission's outcome
/// was read or the trace closed cleanly (both were listed running, a hang to the trace's
/// end). Without a loss count, a region of a submission whose outcome was read is timing
/// lost too: a killed recording wrote the outcome's thread and not the region's (`info`
/// said "no region running" while its JSON and `stats` listed one running in a submission
/// they counted ok; break-it pass 2026-12-03); one whose outcome was not read stays running.
#[test]
fn a_region_whose_timing_was_dropped_is_timing_lost_not_running() {
    let regions = |list: &[RunningRegion]| -> Vec<(u64, u32)> {
        list.iter().map(|r| (r.submission.0, r.region.0)).collect()
    };
    let summary = scan_records(&lossy(true, true, true), &mut Count::default());
    assert!(summary.records_lost);
    assert_eq!(regions(&summary.timing_lost), [(3, 2), (5, 1)]);
    assert!(summary.running.is_empty(), "{:?}", summary.running);
    assert!(summary.timing_lost.iter().all(|r| r.region_ref.is_some()));
    // Not closed: submission 3's outcome says it is over; submission 5's was dropped too.
    let summary = scan_records(&lossy(true, false, false), &mut Count::default());
    assert_eq!(regions(&summary.timing_lost), [(3, 2)]);
    assert_eq!(regions(&summary.running), [(5, 1)]);
    // No loss counted, closed or cut short: the regions of submissions whose outcome was
    // read are over.
    for closed in [true, false] {
        let summary = scan_records(&lossy(false, closed, true), &mut Count::default());
        assert!(!summary.records_lost);
        assert_eq!(regions(&summary.timing_lost), [(3, 2), (5, 1)]);
        assert!(summary.running.is_empty(), "{:?}", summary.running);
    }
    let summary = scan_records(&lossy(false, false, false), &mut Count::default());
    assert_eq!(regions(&summary.timing_lost), [(3, 2)]);
    assert_eq!(regions(&summary.running), [(5, 1)]);
}

/// The submissions in flight at the end are those submitted and not done, in whatever
/// order their records were written: a done read before its submit takes it out, and a
/// submit waiting for its graph's `Prepared` is in flight too.
#[test]
fn the_submissions_in_flight_are_those_submitted_and_not_done() {
    let numbers = |keys: &[(RuntimeId, SubmissionIndex)]| -> Vec<u64> {
        keys.iter().map(|k| k.1.0).collect()
    };
    let records: Vec<Record> = pipeline(PipelineSpec::ops(40)).collect();
    let summary = scan_records(&records, &mut Count::default());
    assert!(summary.in_flight.is_empty(), "{:?}", summary.in_flight);
    // Each `SubmissionDone` read before its `Submit`.
    let summary = scan_records(&submits_last(records.clone()), &mut Count::default());
    assert_eq!(summary.submissions, 10);
    assert!(summary.in_flight.is_empty(), "{:?}", summary.in_flight);
    // Submissions 3 and 7 never done.
    let undone: Vec<Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::SubmissionDone(d) if matches!(d.submission.0, 3 | 7)))
        .cloned()
        .collect();
    let summary = scan_records(&undone, &mut Count::default());
    assert_eq!(numbers(&summary.in_flight), [3, 7]);
    assert_eq!(
        numbers(&scan_records(&submits_last(undone.clone()), &mut Count::default()).in_flight),
        [3, 7]
    );
    // Their graph never prepared: every submit waits for it, done or not.
    let mut joiner = Joiner::new();
    let mut count = Count::default();
    for r in undone.iter().filter(|r| !matches!(r, Record::Prepared(_))) {
        joiner.push(r, &mut count);
    }
    assert_eq!(numbers(&joiner.in_flight()), [3, 7]);
    assert_eq!(
        numbers(&joiner.snapshot(None, Vec::new()).in_flight),
        [3, 7]
    );
    assert_eq!(
        numbers(&joiner.finish(&mut count, None, Vec::new()).in_flight),
        [3, 7]
    );
}

/// Two output digests of each submission, written just before its `SubmissionDone` (its
/// buffer: the submission's number, xxh3: the digest's place among them).
fn with_digests(records: Vec<Record>) -> Vec<Record> {
    use hrx_capture::schema::{BufferId, Payload};
    let mut out = Vec::new();
    let mut n = 0;
    for r in records {
        if let Record::SubmissionDone(d) = &r {
            for start in [0, 64] {
                out.push(Record::OutputDigest(OutputDigest {
                    runtime: d.runtime,
                    submission: d.submission,
                    buffer: BufferId(d.submission.0),
                    start,
                    end: start + 64,
                    xxh3: n,
                    contents: Payload::Omitted { len_bytes: 64 },
                }));
                n += 1;
            }
        }
        out.push(r);
    }
    out
}

/// Submissions joined and digests handed over, in order: `Submitted(ordinal, submission)`,
/// `Output(digest's xxh3, its submission, the ordinal joined to)`.
#[derive(Debug, Default)]
struct Outputs(Vec<Handed>, Vec<(u64, OutputDigest)>);

#[derive(Debug, PartialEq)]
enum Handed {
    Submitted(u64, u64),
    Output(u64, u64, Option<u64>),
}

impl Visitor for Outputs {
    fn submitted(&mut self, _: &Index, s: &JoinedSubmission, _: &Submit) {
        self.0.push(Handed::Submitted(s.ordinal, s.submission.0));
    }
    fn output(&mut self, _: &Index, r: u64, d: &OutputDigest, s: Option<&JoinedSubmission>) {
        self.1.push((r, d.clone()));
        if let Some(s) = s {
            assert_eq!((s.runtime, s.submission), (d.runtime, d.submission));
        }
        let ordinal = s.map(|s| s.ordinal);
        self.0.push(Handed::Output(d.xxh3, d.submission.0, ordinal));
    }
}

impl Outputs {
    /// Each digest handed over is its record's, at the place it was handed with.
    fn check_places(&self, records: &[Record]) {
        assert!(!self.1.is_empty());
        for (r, d) in &self.1 {
            assert_eq!(&records[*r as usize], &Record::OutputDigest(d.clone()));
        }
    }

    /// The digests handed over, by xxh3.
    fn digests(&self) -> Vec<(u64, u64, Option<u64>)> {
        let mut digests: Vec<_> = self
            .0
            .iter()
            .filter_map(|h| match *h {
                Handed::Output(x, s, o) => Some((x, s, o)),
                Handed::Submitted(..) => None,
            })
            .collect();
        digests.sort_unstable();
        digests
    }
}

#[test]
fn output_digests_join_to_their_submission_in_order() {
    let records = with_digests(pipeline(PipelineSpec::ops(40)).collect());
    let mut outputs = Outputs::default();
    let summary = scan_records(&records, &mut outputs);
    assert_eq!(summary.unjoined_outputs, 0);
    outputs.check_places(&records);
    // Each handed once, as read, to its own submission (submission n is ordinal n).
    let expected: Vec<_> = (0..20).map(|x| (x, x / 2, Some(x / 2))).collect();
    assert_eq!(outputs.digests(), expected);
    let position = |h: Handed| outputs.0.iter().position(|x| *x == h).unwrap();
    for s in 0..10 {
        assert!(position(Handed::Submitted(s, s)) < position(Handed::Output(2 * s, s, Some(s))));
    }
}

#[test]
fn output_digests_read_before_their_submit_wait_for_it() {
    let records = submits_last(with_digests(pipeline(PipelineSpec::ops(40)).collect()));
    let digest = |s: u64| {
        records
            .iter()
            .position(|r| matches!(r, Record::OutputDigest(d) if d.submission.0 == s))
    };
    let submit = |s: u64| {
        records
            .iter()
            .position(|r| matches!(r, Record::Submit(x) if x.submission.0 == s))
    };
    assert!((0..10).all(|s| digest(s) < submit(s)));
    let mut outputs = Outputs::default();
    let summary = scan_records(&records, &mut outputs);
    assert_eq!(summary.unjoined_outputs, 0);
    outputs.check_places(&records);
    let expected: Vec<_> = (0..20).map(|x| (x, x / 2, Some(x / 2))).collect();
    assert_eq!(outputs.digests(), expected);
    // Handed when the submission joins: right after it, in the order read.
    for s in 0..10 {
        let at = outputs
            .0
            .iter()
            .position(|x| *x == Handed::Submitted(s, s))
            .unwrap();
        assert_eq!(
            outputs.0[at + 1..at + 3],
            [
                Handed::Output(2 * s, s, Some(s)),
                Handed::Output(2 * s + 1, s, Some(s))
            ]
        );
    }
}

#[test]
fn output_digests_whose_submit_never_comes_are_handed_without_it_and_counted() {
    let mut records = with_digests(pipeline(PipelineSpec::ops(40)).collect());
    records.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 3));
    // A snapshot counts those still waiting, and hands nothing over.
    let mut joiner = Joiner::new();
    let mut waiting = Outputs::default();
    for r in &records {
        joiner.push(r, &mut waiting);
    }
    assert_eq!(joiner.snapshot(None, Vec::new()).unjoined_outputs, 2);
    assert!(waiting.digests().iter().all(|d| d.1 != 3));
    // The end hands them over without their submission, once each.
    let summary = joiner.finish(&mut waiting, None, Vec::new());
    assert_eq!(summary.unjoined_outputs, 2);
    let digests = waiting.digests();
    assert_eq!(digests.len(), 20);
    waiting.check_places(&records);
    let lost: Vec<_> = digests.iter().filter(|d| d.2.is_none()).collect();
    assert_eq!(lost, [&(6, 3, None), &(7, 3, None)]);
}

#[test]
fn output_digests_waiting_past_the_limit_are_given_up_oldest_first() {
    use hrx_capture::schema::{BufferId, Payload};
    // Digests of submissions never submitted, one more than the limit: the first is given
    // up when the last arrives, the rest at the end; every one is counted once.
    let digest = |s: u64| {
        Record::OutputDigest(OutputDigest {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(s),
            buffer: BufferId(s),
            start: 0,
            end: 64,
            xxh3: s,
            contents: Payload::Omitted { len_bytes: 64 },
        })
    };
    let mut joiner = Joiner::new();
    let mut outputs = Outputs::default();
    for s in 0..=PARK_LIMIT as u64 {
        joiner.push(&digest(s), &mut outputs);
    }
    assert_eq!(outputs.0, [Handed::Output(0, 0, None)]);
    assert_eq!(joiner.parked_output_count, PARK_LIMIT);
    let summary = joiner.finish(&mut outputs, None, Vec::new());
    assert_eq!(summary.unjoined_outputs, PARK_LIMIT as u64 + 1);
    assert_eq!(outputs.0.len(), PARK_LIMIT + 1);
}

/// Every call a visitor is handed, in order.
#[derive(Default)]
struct Calls(Vec<String>);

impl Visitor for Calls {
    fn span(&mut self, _: &Index, span: &JoinedSpan) {
        self.0.push(format!("span {span:?}"));
    }
    fn op_span(&mut self, _: &Index, span: &JoinedSpan, node: NodeIndex) {
        self.0.push(format!("op {span:?} {node:?}"));
    }
    fn outcome(&mut self, _: &Index, s: &JoinedSubmission, p: Option<Outcome>, o: Outcome) {
        self.0.push(format!("outcome {s:?} {p:?} {o:?}"));
    }
    fn submission_done(&mut self, _: &Index, done: &JoinedEvent) {
        self.0.push(format!("done {done:?}"));
    }
    fn submitted(&mut self, _: &Index, s: &JoinedSubmission, submit: &Submit) {
        self.0.push(format!("submitted {s:?} {submit:?}"));
    }
    fn region_outcome(&mut self, _: &Index, r: &JoinedRegion, o: Outcome, t: u64) {
        self.0.push(format!("region {r:?} {o:?} {t}"));
    }
    fn link(&mut self, _: &Index, link: &JoinedLink) {
        self.0.push(format!("link {link:?}"));
    }
    fn event(&mut self, _: &Index, e: &JoinedEvent) {
        self.0.push(format!("event {e:?}"));
    }
    fn output(&mut self, _: &Index, record: u64, d: &OutputDigest, s: Option<&JoinedSubmission>) {
        self.0.push(format!("output {record} {d:?} {s:?}"));
    }
}

/// After every record of a trace whose records come in the worst order (timings, outcomes,
/// waits and digests before their submits, submits before their graph's `Prepared`), what
/// `finish_copy` returns and hands over is what a finished copy of the joiner does, and the
/// joiner goes on as if it had not been asked.
#[test]
fn finish_copy_is_a_finished_copy() {
    let records: Vec<Record> = pipeline(PipelineSpec {
        fail_at: Some(30),
        busy_every: Some(5),
        ..PipelineSpec::ops(160)
    })
    .collect();
    let mut with_digests = Vec::new();
    for r in records {
        if let Record::SubmissionDone(d) = &r {
            with_digests.push(Record::OutputDigest(OutputDigest {
                runtime: d.runtime,
                submission: d.submission,
                buffer: hrx_capture::schema::BufferId(4),
                start: 0,
                end: 64,
                xxh3: d.submission.0,
                contents: hrx_capture::schema::Payload::Omitted { len_bytes: 64 },
            }));
        }
        with_digests.push(r);
    }
    let reordered = submits_last(crate::timeline::fixtures::adverse(&with_digests));
    let (mut joiner, mut alone) = (Joiner::new(), Joiner::new());
    let (mut calls, mut alone_calls) = (Calls::default(), Calls::default());
    let mut parked = 0;
    for record in &reordered {
        joiner.push(record, &mut calls);
        alone.push(record, &mut alone_calls);
        parked += usize::from(!joiner.parked_submits.is_empty());
        let (mut copy, mut finished) = (Calls::default(), Calls::default());
        let summary = joiner.finish_copy(&mut copy, None, Vec::new());
        let expected = joiner.clone().finish(&mut finished, None, Vec::new());
        assert_eq!(format!("{summary:?}"), format!("{expected:?}"));
        assert_eq!(copy.0, finished.0);
    }
    assert!(parked > 0 && parked < reordered.len() / 2, "{parked}");
    assert_eq!(calls.0, alone_calls.0);
    // (Their indexes' maps are seeded apart: the labels stand for them.)
    let facts = |mut s: ScanSummary| {
        let labels = s.index.labels().to_vec();
        s.index = Index::new();
        format!("{s:?} {labels:?}")
    };
    let (mut a, mut b) = (Calls::default(), Calls::default());
    let ended = facts(joiner.finish(&mut a, None, Vec::new()));
    assert_eq!(ended, facts(alone.finish(&mut b, None, Vec::new())));
    assert_eq!(a.0, b.0);
}

/// Every record that holds a time span is counted when that span (host or device) ends
/// before it starts, and only then: a span of 0 ns is no such span.
#[test]
fn spans_that_end_before_they_start_are_counted() {
    use hrx_capture::schema::{
        AnnotationId, AnnotationRange, BufferId, CaptureFence, DigestSpan, HostSpan, HostSpanKind,
        OpTiming, RecorderWait,
    };
    let timing = |(start_ns, end_ns), device: Option<(u64, u64)>| RegionTiming {
        runtime: RuntimeId(1),
        submission: SubmissionIndex(1),
        region: RegionIndex(0),
        start_ns,
        end_ns,
        device: device.map(|(start_ns, end_ns)| DeviceSpan { start_ns, end_ns }),
    };
    let spans = |(start_ns, end_ns): (u64, u64)| {
        vec![
            Record::RegionTiming(timing((start_ns, end_ns), None)),
            Record::OpTiming(OpTiming {
                timing: timing((start_ns, end_ns), None),
                node: NodeIndex(0),
            }),
            Record::RegionTiming(timing((5, 5), Some((start_ns, end_ns)))),
            Record::HostSpan(HostSpan {
                thread: 1,
                kind: HostSpanKind::Submit,
                runtime: RuntimeId(1),
                submission: SubmissionIndex(1),
                region: None,
                start_ns,
                end_ns,
            }),
            Record::AnnotationRange(AnnotationRange {
                thread: 1,
                name: AnnotationId(1),
                start_ns,
                end_ns,
            }),
            Record::RecorderWait(RecorderWait {
                thread: 1,
                thread_name: "main".into(),
                start_ns,
                end_ns,
                runtime: None,
                submission: None,
                region: None,
            }),
            Record::CaptureFence(CaptureFence {
                runtime: RuntimeId(1),
                submission: SubmissionIndex(1),
                region: RegionIndex(0),
                buffer: BufferId(1),
                start_ns,
                end_ns,
            }),
            Record::DigestSpan(DigestSpan {
                runtime: RuntimeId(1),
                submission: SubmissionIndex(1),
                buffer: BufferId(1),
                start: 0,
                end: 8,
                start_ns,
                end_ns,
            }),
        ]
    };
    let forwards = [spans((10, 20)), spans((10, 10))].concat();
    assert!(forwards.iter().all(|r| !ends_before_start(r)));
    let summary = scan_records(&forwards, &mut Count::default());
    assert_eq!(summary.ends_before_start, 0);
    let backwards = spans((20, 10));
    assert!(backwards.iter().all(ends_before_start));
    let summary = scan_records(
        &[forwards, backwards.clone()].concat(),
        &mut Count::default(),
    );
    assert_eq!(summary.ends_before_start, backwards.len() as u64);
}
