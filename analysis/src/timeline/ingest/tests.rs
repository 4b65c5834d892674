//! The model built from records: joins, record order, untimed and running spans.

use super::super::fixtures::*;
use super::*;
use crate::queue_name;
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
        runtime: crate::timeline::fixtures::RT,
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
        runtime: crate::timeline::fixtures::RT,
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
    assert_eq!(model.spans_summary(), "1 span (+1 untimed)");
    // A region whose timing arrived is not running, in any record order.
    let mut f = three_stage();
    f.submit(1, 0, &[], 0);
    f.push(hrx_capture::schema::RegionStarted {
        runtime: crate::timeline::fixtures::RT,
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
    use crate::synthetic::{PipelineSpec, REGIONS_PER_SUBMISSION, pipeline};
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
/// Run with `cargo test -p hrx-analysis --release -- --ignored million --nocapture`.
#[test]
#[ignore = "measurement: run in release"]
fn million_operations() {
    use crate::synthetic::{PipelineSpec, pipeline};
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

    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let peak = status.lines().find(|l| l.starts_with("VmHWM"));
        println!("peak resident memory of the whole test: {peak:?}");
    }
}
