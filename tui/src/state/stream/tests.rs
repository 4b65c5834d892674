//! The streamed entry holds what the in-memory builder's model holds, record orders and
//! failures included.

use super::*;
use crate::state::fixtures::*;
use crate::state::synthetic::{PipelineSpec, pipeline};
use crate::state::{Action, ViewState};
use hrx_capture::schema::{HazardKind, RegionIndex, SubmissionDone};

/// The model `records` stream into, its columns mapped from the files written.
fn streamed(records: &[Record]) -> Model {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = StreamBuilder::new(dir.path()).unwrap();
    for r in records {
        builder.push(r);
    }
    let (_, model) = builder.finish(None, Vec::new()).unwrap();
    // The spills are gone; the columns stay (mapped).
    assert!(!dir.path().join("spill").exists());
    model
}

/// Every table of the two models is the same.
fn assert_same(a: &Model, b: &Model) {
    assert_eq!(a.lanes.len(), b.lanes.len());
    for (x, y) in a.lanes.iter().zip(&b.lanes) {
        assert_eq!((x.runtime, x.queue), (y.runtime, y.queue));
        assert_eq!(x.spans(), y.spans());
        assert!(x.columns().1[..] == y.columns().1[..], "blocks");
    }
    assert_eq!(a.submissions(), b.submissions());
    assert_eq!(&*a.region_spans, &*b.region_spans);
    assert_eq!(&*a.explicit_producers, &*b.explicit_producers);
    assert_eq!(&*a.explicit_edges, &*b.explicit_edges);
    assert_eq!(&*a.explicit_by_consumer, &*b.explicit_by_consumer);
    assert_eq!(&*a.cross, &*b.cross);
    assert_eq!(&*a.cross_by_producer, &*b.cross_by_producer);
    assert_eq!(a.submit_times(), b.submit_times());
    assert_eq!(a.busy_times(), b.busy_times());
    assert_eq!(a.events(), b.events());
    assert_eq!(a.span_events, b.span_events);
    assert_eq!(a.labels(), b.labels());
    assert_eq!(a.label_span_counts(), b.label_span_counts());
    assert_eq!(a.search_texts, b.search_texts);
    assert_eq!(a.search_key_spans, b.search_key_spans);
    assert_eq!(a.time_range(), b.time_range());
    assert_eq!(a.stats(), b.stats());
    assert_eq!(a.first_failure(), b.first_failure());
    assert_eq!(a.untimed_span_count(), b.untimed_span_count());
    let facts = |m: &Model| {
        let i = m.info();
        (
            i.records,
            i.unplaced_timings,
            i.unresolved_waits,
            i.op_timings,
        )
    };
    assert_eq!(facts(a), facts(b));
}

#[test]
fn a_failing_pipeline_streams_into_the_same_model() {
    let records: Vec<Record> = pipeline(PipelineSpec {
        busy_every: Some(7),
        fail_at: Some(150),
        ..PipelineSpec::ops(800)
    })
    .collect();
    let memory = ModelBuilder::from_records(&records);
    let stream = streamed(&records);
    assert!(stream.submissions.is_mapped() && stream.cross.is_mapped());
    assert!(memory.first_failure().is_some() && !memory.cross.is_empty());
    assert_same(&stream, &memory);
    // And it draws the same through a walk of the timeline.
    let mut a = ViewState::new(&stream, 120, 40);
    let mut b = ViewState::new(&memory, 120, 40);
    for action in [
        Action::ZoomIn,
        Action::SelectNext,
        Action::ToggleHazards,
        Action::JumpToProducer,
        Action::NextEvent,
        Action::ToggleStats,
    ] {
        a.update(&stream, action);
        b.update(&memory, action);
        assert_eq!(
            crate::render_to_string(&stream, &a, 120, 40),
            crate::render_to_string(&memory, &b, 120, 40)
        );
    }
}

#[test]
fn records_out_of_order_and_untimed_regions_stream_into_the_same_model() {
    let mut f = three_stage();
    // Submissions out of index order, timings and completions before their submit, a
    // failure with a cancelled region and no timing, a region still running at the end,
    // waits across submissions and an explicit producer, an unknown submission.
    f.done(3, 1, failed("boom"), 900)
        .timing(3, 1, 400, 800)
        .submit(1, 5, &[], 50)
        .submit(1, 3, &[5], 300)
        .submit(1, 2, &[], 20)
        .ran(3, 0, 310, 390)
        .ran(5, 0, 60, 70)
        .ran(2, 0, 30, 40)
        .timing(2, 1, 45, 55)
        .done(2, 1, failed("kernel error"), 56)
        .done(2, 2, cancelled("cancelled: producer region 1 failed"), 57)
        .cross(3, 0, (2, 1), HazardKind::ReadAfterWrite, 1, (0, 64))
        .cross(5, 1, (3, 0), HazardKind::WriteAfterRead, 2, (8, 16))
        .cross(9, 0, (8, 1), HazardKind::WriteAfterWrite, 3, (0, 4))
        .timing(9, 0, 0, 10);
    f.push(SubmissionDone {
        runtime: RT,
        submission: SubmissionIndex(3),
        status: failed("boom"),
        time_ns: 901,
    });
    f.push(hrx_capture::schema::RegionStarted {
        runtime: RT,
        submission: SubmissionIndex(5),
        region: RegionIndex(1),
        time_ns: 75,
    });
    let memory = f.model();
    let stream = streamed(&f.records);
    assert_eq!(memory.info().unplaced_timings, 1);
    assert_eq!(memory.info().unresolved_waits, 1);
    assert!(memory.untimed_span_count() >= 2);
    assert_same(&stream, &memory);
}

/// Records in the worst order the per-thread buffers can reach the file in (timings and
/// outcomes before their `Submit`, submits before their `Prepared`) stream into the model
/// of the file order (a submit before its `Prepared` lost its spans).
#[test]
fn records_in_the_adverse_order_stream_into_the_same_model() {
    use crate::state::ingest::order_tests::{adverse, in_order};
    let records = in_order();
    let expected = ModelBuilder::from_records(&records);
    assert_same(&streamed(&adverse(&records)), &expected);
    assert_same(&ModelBuilder::from_records(&adverse(&records)), &expected);
}

/// A region whose timing and completion a lossy recording dropped, in a trace that counts
/// its lost records and closed cleanly, is an untimed span at its start with status
/// "timing lost", counted in the trace's facts, in both builders (it was a bar running to
/// the trace's end, as if it hung).
#[test]
fn a_region_whose_timing_was_dropped_is_timing_lost_not_running() {
    let mut f = three_stage();
    f.submit(1, 0, &[], 0).ran(0, 0, 10, 20).ran(0, 2, 60, 70);
    f.push(hrx_capture::schema::RegionStarted {
        runtime: RT,
        submission: SubmissionIndex(0),
        region: RegionIndex(1),
        time_ns: 30,
    });
    f.push(hrx_capture::schema::RecordsLost {
        time_ns: 90,
        lossy: true,
        total: 2,
        by_kind: Vec::new(),
    });
    f.push(hrx_capture::schema::SessionEnd {
        time_ns: 95,
        records: 0,
        dropped_records: 2,
    });
    let memory = f.model();
    let compute = memory
        .lanes()
        .iter()
        .find(|l| l.queue == hrx_capture::schema::Queue::GpuCompute)
        .unwrap()
        .spans()[0];
    assert_eq!(
        (compute.start_ns, compute.end_ns, compute.status()),
        (30, 30, SpanStatus::TimingLost)
    );
    assert_eq!(compute.status().name(), "timing lost (records dropped)");
    assert!(!compute.ran());
    assert_eq!(memory.info().timing_lost, 1);
    assert_eq!(memory.spans_summary(), "2 spans (+1 untimed)");
    let stream = streamed(&f.records);
    assert_eq!(stream.info().timing_lost, 1);
    assert_same(&stream, &memory);
}
