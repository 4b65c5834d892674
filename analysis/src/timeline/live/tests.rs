//! A followed trace's model, published after any number of records, is the model of a
//! whole read of the same records; a publish finishes only what came after the settled
//! submissions, and a record that changes them makes it finish the whole model.

use super::{LiveBuilder, Publish};
use crate::synthetic::{PipelineSpec, pipeline};
use crate::timeline::fixtures::{
    Fixture, RT, adverse, assert_same, cancelled, failed, three_stage,
};
use crate::timeline::{Model, ModelBuilder, Span};
use hrx_capture::schema::*;

/// Pushes `records` into a live builder in steps of `steps` records (cycled), publishing
/// after each: every publish equals a whole read of the records pushed so far. Returns
/// each publish's figures with the records it followed.
fn follow(records: &[Record], steps: &[usize]) -> Vec<(usize, Publish)> {
    let mut live = LiveBuilder::new();
    let mut publishes = Vec::new();
    let mut at = 0;
    for &step in steps.iter().cycle() {
        let to = (at + step).min(records.len());
        for record in &records[at..to] {
            live.push(record);
        }
        assert!(live.model().is_none(), "out of date until published");
        let model = live.publish();
        let whole = ModelBuilder::from_records(&records[..to]);
        assert_same(model, &whole);
        assert_eq!(model.info().timing_lost, whole.info().timing_lost);
        publishes.push((to, live.last_publish()));
        at = to;
        if at == records.len() {
            break;
        }
    }
    publishes
}

/// Step sizes that end anywhere: one record, a few, a flush's worth.
const STEPS: [usize; 9] = [1, 3, 7, 1, 40, 2, 13, 120, 5];

/// A pipeline whose submission `fail_at` fails, with its compute regions' operation
/// timings.
fn failing(ops: u64, fail_at: u64) -> Vec<Record> {
    crate::synthetic::with_op_timings(pipeline(PipelineSpec {
        fail_at: Some(fail_at),
        busy_every: Some(7),
        ..PipelineSpec::ops(ops)
    }))
    .collect()
}

#[test]
fn every_publish_equals_a_whole_read_in_file_order() {
    let records = failing(400, 80);
    let publishes = follow(&records, &[1]);
    assert_eq!(publishes.len(), records.len());
    follow(&records, &STEPS);
}

#[test]
fn every_publish_equals_a_whole_read_in_the_worst_thread_order() {
    // Each flush's records in the worst order: waits and timings before their submits,
    // the graph's definition last (so its first submits wait for it).
    let records = failing(400, 80);
    let mut reordered = Vec::new();
    for run in records.chunks(60) {
        let mut with_start = vec![records[0].clone()];
        with_start.extend_from_slice(run);
        reordered.extend(adverse(&with_start).into_iter().skip(1));
    }
    follow(&reordered, &[1]);
    follow(&reordered, &STEPS);
    let whole = adverse(&records);
    follow(&whole, &STEPS);
}

/// A region left running (its timing, completion and its submission's outcome dropped)
/// reaches the trace's end at every publish, and what comes after it stays in the tail.
#[test]
fn a_region_left_running_reaches_the_end_at_every_publish() {
    let records = failing(200, 1_000);
    let timing = records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some(*t),
            _ => None,
        })
        .nth(60)
        .unwrap();
    let records: Vec<Record> = records
        .into_iter()
        .map(|r| match r {
            Record::RegionTiming(t) if t == timing => Record::RegionStarted(RegionStarted {
                runtime: t.runtime,
                submission: t.submission,
                region: t.region,
                time_ns: t.start_ns,
            }),
            r => r,
        })
        .filter(|r| match r {
            Record::RegionDone(d) => (d.submission, d.region) != (timing.submission, timing.region),
            Record::SubmissionDone(d) => d.submission != timing.submission,
            _ => true,
        })
        .collect();
    let publishes = follow(&records, &STEPS);
    let (_, last) = publishes.last().unwrap();
    let stuck = timing.submission.0 as usize;
    assert!(
        last.settled <= stuck,
        "{last:?}: nothing settles past the running region"
    );
}

/// Two runtimes submitting at once: their submissions interleave by key, so most
/// publishes renumber and finish the whole model; each equals a whole read.
#[test]
fn two_runtimes_submitting_at_once() {
    let runtime = |records: Vec<Record>, id: u32| -> Vec<Record> {
        crate::synthetic::on_runtime(&records, id)
    };
    let a: Vec<Record> = pipeline(PipelineSpec::ops(160)).collect();
    let b = runtime(pipeline(PipelineSpec::ops(160)).collect(), 2);
    let mut records = a[..a.len() - 1].to_vec();
    let setup = b
        .iter()
        .position(|r| matches!(r, Record::Submit(_)))
        .unwrap();
    let mut at = records
        .iter()
        .position(|r| matches!(r, Record::Submit(_)))
        .unwrap();
    records.splice(at..at, b[1..setup].iter().cloned());
    at += setup - 1;
    // Interleave the two runtimes' submissions, chunk by chunk.
    let (head, mut left) = records.split_at(at);
    let mut mixed = head.to_vec();
    let mut right = &b[setup..b.len() - 1];
    while !left.is_empty() || !right.is_empty() {
        let (x, y) = left.split_at(left.len().min(37));
        mixed.extend_from_slice(x);
        left = y;
        let (x, y) = right.split_at(right.len().min(29));
        mixed.extend_from_slice(x);
        right = y;
    }
    let publishes = follow(&mixed, &STEPS);
    assert!(publishes.iter().filter(|(_, p)| p.whole).count() > 1);
}

/// In file order, a publish after the first finishes what arrived since and what is still
/// in flight, not the trace: its submissions and spans stay bounded while the trace grows,
/// and the settled submissions only grow.
#[test]
fn a_publish_finishes_only_the_tail() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(1_600)).collect();
    let publishes = follow(&records, &[50]);
    assert!(publishes.len() > 90);
    let (_, first) = publishes[0];
    assert!(first.whole, "the first publish finishes everything");
    let mut settled = 0;
    for &(to, p) in &publishes[1..] {
        assert!(!p.whole, "after {to} records: {p:?}");
        // 50 records hold about 4 submissions (12 records each) and a few more are in
        // flight; the trace holds up to 400.
        assert!(
            p.submissions <= 12 && p.spans <= 48,
            "after {to} records: {p:?}"
        );
        assert!(p.settled >= settled, "after {to} records: {p:?}");
        settled = p.settled;
    }
    assert_eq!(settled, 400);
}

/// The settled part of the model is left as it was by a publish of the tail: the lanes'
/// settled spans stay where they were, unchanged.
#[test]
fn a_publish_leaves_the_settled_spans_in_place() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(2_000)).collect();
    let mut live = LiveBuilder::new();
    let (half, rest) = records.split_at(records.len() / 2);
    for r in half {
        live.push(r);
    }
    live.publish();
    let model = live.model().unwrap();
    let settled: Vec<(usize, Vec<Span>)> = live
        .settled
        .lanes
        .iter()
        .zip(model.lanes())
        .map(|(&(len, _), lane)| (len, lane.spans()[..len].to_vec()))
        .collect();
    assert!(settled.iter().map(|(len, _)| len).sum::<usize>() > 900);
    // Room for what comes, so that the columns are not moved by their growth.
    for lane in &mut live.inner.model.lanes {
        lane.reserve(4_000);
    }
    let addresses: Vec<*const Span> = live
        .model()
        .unwrap()
        .lanes()
        .iter()
        .map(|l| l.spans().as_ptr())
        .collect();
    for r in &rest[..rest.len() / 2] {
        live.push(r);
    }
    live.publish();
    assert!(!live.last_publish().whole);
    let model = live.model().unwrap();
    for ((lane, (len, before)), address) in model.lanes().iter().zip(&settled).zip(addresses) {
        assert_eq!(lane.spans().as_ptr(), address, "the column was not copied");
        assert_eq!(
            &lane.spans()[..*len],
            &before[..],
            "the settled spans are unchanged"
        );
    }
}

/// One submission of `three_stage`'s graph that ran and completed, its upload starting at
/// `t`.
fn completed(f: &mut Fixture, sub: u64, t: u64) {
    f.submit(1, sub, &[], t);
    ran_three(f, sub, t);
}

/// The three regions of submission `sub` ran from `t`, and it completed.
fn ran_three(f: &mut Fixture, sub: u64, t: u64) {
    f.ran(sub, 0, t, t + 100)
        .ran(sub, 1, t + 200, t + 300)
        .ran(sub, 2, t + 400, t + 500)
        .push(SubmissionDone {
            runtime: RT,
            submission: SubmissionIndex(sub),
            status: Status::Ok,
            time_ns: t + 600,
        });
}

/// The records of `f`, then of `more` after a publish: the second publish finishes the
/// whole model (something it read changed the settled part) and equals a whole read.
fn falls_back(f: &Fixture, more: &Fixture) -> Model {
    let mut live = LiveBuilder::new();
    for r in &f.records {
        live.push(r);
    }
    live.publish();
    assert!(
        live.last_publish().settled >= 3,
        "{:?}",
        live.last_publish()
    );
    for r in &more.records {
        live.push(r);
    }
    let model = live.publish().clone();
    assert!(live.last_publish().whole, "{:?}", live.last_publish());
    let all: Vec<Record> = f.records.iter().chain(&more.records).cloned().collect();
    assert_same(&model, &Model::from_records(&all));
    // And the watermark moves on from there.
    let mut after = Fixture {
        records: Vec::new(),
    };
    completed(&mut after, 90, 90_000);
    completed(&mut after, 91, 91_000);
    for r in &after.records {
        live.push(r);
    }
    let all: Vec<Record> = all.into_iter().chain(after.records).collect();
    assert_same(live.publish(), &Model::from_records(&all));
    model
}

fn settled_three() -> Fixture {
    let mut f = three_stage();
    for sub in 0..4 {
        completed(&mut f, sub * 2, 1_000 * (sub + 1));
    }
    f
}

#[test]
fn a_submit_sorting_before_settled_ones_finishes_the_whole_model() {
    let mut more = Fixture {
        records: Vec::new(),
    };
    // Submission 3 sorts between the settled 2 and 4: the settled ones after it renumber.
    completed(&mut more, 3, 10_000);
    let model = falls_back(&settled_three(), &more);
    let indices: Vec<u64> = model.submissions().iter().map(|s| s.index.0).collect();
    assert_eq!(indices, [0, 2, 3, 4, 6]);
}

#[test]
fn a_span_before_a_lanes_settled_spans_finishes_the_whole_model() {
    let mut more = Fixture {
        records: Vec::new(),
    };
    // Submission 8's upload starts before submission 6's, which is settled.
    completed(&mut more, 8, 3_500);
    falls_back(&settled_three(), &more);
}

#[test]
fn a_late_record_of_a_settled_submission_finishes_the_whole_model() {
    let late: [fn(&mut Fixture); 4] = [
        // Its region fails after all: a failure event, the span's status.
        |f| {
            f.done(2, 1, failed("late"), 2_350);
        },
        // A second outcome replaces the first.
        |f| {
            f.push(SubmissionDone {
                runtime: RT,
                submission: SubmissionIndex(4),
                status: failed("late"),
                time_ns: 3_700,
            });
        },
        // A wait it had, written late by another thread.
        |f| {
            f.cross(4, 0, (2, 1), HazardKind::WriteAfterRead, 1, (0, 64));
        },
        // A second timing of one of its regions.
        |f| {
            f.timing(6, 2, 4_450, 4_460);
        },
    ];
    for record in late {
        let mut more = Fixture {
            records: Vec::new(),
        };
        record(&mut more);
        falls_back(&settled_three(), &more);
    }
}

/// A failure earlier in time than the first one shown, read later: the first failure is
/// found whole at every publish.
#[test]
fn an_earlier_failure_read_late_becomes_the_first() {
    let mut f = settled_three();
    f.submit(1, 10, &[], 20_000)
        .ran(10, 0, 20_000, 20_100)
        .timing(10, 1, 20_200, 20_300)
        .done(10, 1, failed("second"), 20_301)
        .done(10, 2, cancelled("producer failed"), 20_302);
    let mut more = Fixture {
        records: Vec::new(),
    };
    more.submit(1, 9, &[], 9_000);
    more.ran(9, 0, 30_000, 30_100)
        .timing(9, 1, 30_200, 30_300)
        .done(9, 1, failed("first in time"), 15_000);
    let mut live = LiveBuilder::new();
    for r in &f.records {
        live.push(r);
    }
    assert!(live.publish().first_failure().is_some());
    for r in &more.records {
        live.push(r);
    }
    let all: Vec<Record> = f.records.iter().chain(&more.records).cloned().collect();
    let model = live.publish();
    assert_same(model, &Model::from_records(&all));
    let first = model.first_failure().unwrap();
    assert_eq!(model.events()[first.event.get()].text, "first in time");
}

/// Explicit producers (`submit_after`) and waits on settled submissions, near and far back:
/// they are merged into the settled edges' order by producer (far ones pull settled edges
/// back), and each publish equals a whole read.
#[test]
fn producers_reaching_back_into_the_settled_part() {
    let mut f = three_stage();
    for sub in 0..60u64 {
        let t = 1_000 * (sub + 1);
        let producers: Vec<u64> = match sub % 5 {
            0 => vec![],
            1 => vec![sub - 1],
            2 => vec![sub - 2, sub - 1],
            3 => vec![sub / 2],
            _ => vec![0, sub - 3],
        };
        f.submit(1, sub, &producers, t);
        // Waits are recorded before the region runs: on a recent submission, or far back.
        if sub > 2 && sub % 4 == 0 {
            f.cross(sub, 0, (sub - 3, 1), HazardKind::WriteAfterRead, 1, (0, 64));
        }
        if sub % 4 == 2 {
            f.cross(sub, 1, (sub / 2, 2), HazardKind::ReadAfterWrite, 2, (0, 64));
        }
        ran_three(&mut f, sub, t);
    }
    let publishes = follow(&f.records, &[1]);
    let whole: Vec<_> = publishes.iter().skip(40).filter(|(_, p)| p.whole).collect();
    assert!(whole.is_empty(), "{whole:?}");
    follow(&f.records, &STEPS);
}

/// A `Submit` naming more explicit producers than the model keeps: each publish equals a
/// whole read (its latest kept, the rest counted).
#[test]
fn a_submit_naming_more_producers_than_kept() {
    let kept = crate::timeline::EXPLICIT_PRODUCERS_KEPT as u64;
    let f = crate::timeline::fixtures::fan_in(kept + 40);
    follow(&f.records, &[1]);
    follow(&f.records, &STEPS);
    let mut live = LiveBuilder::new();
    for r in &f.records {
        live.push(r);
    }
    let model = live.publish();
    assert_eq!(model.info().explicit_producers_left_out, 40);
    assert_eq!(model.explicit_producers.len() as u64, kept);
}

/// A region running at the end whose `Submit` the trace lacks is on no lane, and the model
/// names it (`TraceInfo::running_not_drawn`) for the Trace pane, in every publish and in a
/// whole read alike; it was dropped, `stats` alone naming it.
#[test]
fn a_running_region_whose_submit_is_past_the_cut_is_named_not_drawn() {
    let f = crate::timeline::fixtures::running_past_the_cut();
    let expected = [crate::timeline::RunningNotDrawn {
        runtime: crate::timeline::fixtures::RT.0,
        submission: 3,
        region: 1,
        start_ns: 350,
    }];
    let whole = f.model();
    assert_eq!(whole.info().running_not_drawn, expected);
    assert_eq!(whole.lanes.iter().map(|l| l.len()).sum::<usize>(), 9);
    let mut live = LiveBuilder::new();
    for r in &f.records {
        live.push(r);
    }
    assert_eq!(live.publish().info().running_not_drawn, expected);
}

/// Submits whose graph's `Prepared` is read later enter at each publish's end without their
/// graph (as a whole read of the same records has them), and with it once it is read.
#[test]
fn submits_waiting_for_their_graph() {
    let mut f = settled_three();
    let prepared = f
        .records
        .iter()
        .find(|r| matches!(r, Record::Prepared(_)))
        .cloned()
        .unwrap();
    let Record::Prepared(mut second) = prepared else {
        unreachable!()
    };
    second.prepared = PreparedId(2);
    f.submit(2, 20, &[0], 20_000)
        .cross(20, 0, (6, 1), HazardKind::ReadAfterWrite, 1, (0, 64))
        .submit(2, 21, &[20], 21_000)
        .push(SubmissionDone {
            runtime: RT,
            submission: SubmissionIndex(20),
            status: Status::Ok,
            time_ns: 20_600,
        });
    completed(&mut f, 22, 22_000);
    f.push(Record::Prepared(second));
    completed(&mut f, 23, 23_000);
    follow(&f.records, &[1]);
    follow(&f.records, &STEPS);
}

#[test]
fn unsettle_finishes_the_whole_model_once() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(400)).collect();
    let mut live = LiveBuilder::new();
    for r in &records {
        live.push(r);
    }
    live.publish();
    assert!(live.last_publish().settled > 90);
    live.unsettle();
    assert!(live.model().is_none());
    let model = live.publish();
    assert_same(model, &Model::from_records(&records));
    assert!(live.last_publish().whole && live.last_publish().spans == 400);
}

/// Recorded traces (a CUDA faults run, the faults pipeline, the hazards workload) in any
/// order of records, not only an order threads can write: a seeded shuffle of windows of
/// the file, then of the whole file, followed in uneven steps. Every publish equals a whole
/// read (a record that changes the settled part makes it finish the whole model) and none
/// panics.
#[test]
fn recorded_traces_in_any_order_publish_as_a_whole_read() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for path in [
        "tui/tests/data/faults-cuda-h200.hrxt",
        "replay/tests/data/pipeline-faults-v1.0.hrxt",
        "replay/tests/data/hazards-v1.0.hrxt",
    ] {
        let records = hrx_capture::read_all(format!("{dir}/{path}"))
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .records;
        for window in [16, 64, records.len()] {
            let mut shuffled = records.clone();
            for chunk in shuffled.chunks_mut(window) {
                for i in (1..chunk.len()).rev() {
                    chunk.swap(i, next(i + 1));
                }
            }
            let steps: Vec<usize> = (0..7).map(|_| 1 + next(30)).collect();
            follow(&shuffled, &steps);
        }
    }
}
