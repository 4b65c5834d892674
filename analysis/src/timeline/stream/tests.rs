//! The streamed entry holds what the in-memory builder's model holds, record orders and
//! failures included.

use super::*;
use crate::synthetic::{PipelineSpec, pipeline};
use crate::timeline::fixtures::*;
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

#[test]
fn a_failing_pipeline_streams_into_the_same_model() {
    let records: Vec<Record> = crate::synthetic::with_op_timings(pipeline(PipelineSpec {
        busy_every: Some(7),
        fail_at: Some(150),
        ..PipelineSpec::ops(800)
    }))
    .collect();
    let memory = ModelBuilder::from_records(&records);
    let stream = streamed(&records);
    assert!(stream.submissions.is_mapped() && stream.cross.is_mapped());
    assert!(stream.op_spans.is_mapped());
    assert!(memory.first_failure().is_some() && !memory.cross.is_empty());
    assert!(memory.op_span_count() > 0);
    assert_same(&stream, &memory);
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
    // (Operation timings included: the worker threads' records reach the file first.)
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

/// A `Submit` naming more explicit producers than the model keeps streams into the same
/// model: its latest kept, the rest counted, in the entry's columns too.
#[test]
fn a_submit_naming_more_producers_than_kept_streams_into_the_same_model() {
    let kept = crate::timeline::EXPLICIT_PRODUCERS_KEPT;
    let f = fan_in(kept as u64 + 40);
    let memory = f.model();
    let stream = streamed(&f.records);
    assert_eq!(stream.explicit_producers.len(), kept);
    assert_eq!(stream.explicit_edges.len(), kept);
    assert_eq!(stream.info().explicit_producers_left_out, 40);
    assert_same(&stream, &memory);
}
