//! Captured workloads replay identically (exit code 0).

use crate::common::*;
use hrx::RuntimeOptions;
use hrx_capture::schema::Record;
use hrx_replay::{Outcome, OutputResult, ReplayOptions, Verdict};
use hrx_workloads::{Pipeline, PipelineOptions};

#[test]
fn the_hazards_workload_replays_with_every_output_matching() {
    let trace = hazards_trace();
    let report = replay_with(trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.verdict, Verdict::Same);
    assert_eq!(report.submissions.len(), 4);
    assert!(report.outputs.len() >= 8, "{:?}", report.outputs);
    assert!(
        report
            .outputs
            .iter()
            .all(|o| o.result == OutputResult::Match)
    );
    assert_eq!(report.summary.outputs_matched, report.outputs.len());
    // Every region of every graph has a captured and a replayed time.
    assert!(!report.timing.is_empty());
    assert!(
        report
            .timing
            .iter()
            .all(|t| t.captured.is_some() && t.replayed.is_some() && t.ratio.is_some())
    );
    let text = report.to_text();
    assert!(text.contains("verdict: SAME (exit 0)"), "{text}");
    assert!(text.contains("no divergence"), "{text}");
}

#[test]
fn the_photographic_pipeline_replays_repeatedly_with_per_operation_times() {
    let trace = pipeline_trace();
    let report = replay_with(trace, &ReplayOptions::default().repeat(2).per_op(true));
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.submissions.len(), 4);
    assert!(report.submissions.iter().all(|s| s.captured == s.replayed));
    // Four regions per frame context; each submission wrote every region's outputs.
    assert!(report.outputs.len() >= 4 * 8);
    // Region times pool both repeats and the 3 frame contexts, identical graphs: one row
    // per region of the 4, each with every frame's sample.
    assert_eq!(report.timing.len(), 4);
    assert!(
        report.timing.iter().all(|t| t.graphs.len() == 3
            && t.graph == t.graphs[0]
            && t.captured.is_some_and(|c| c.samples == 4)
            && t.replayed.is_some_and(|r| r.samples == 8)),
        "{:?}",
        report.timing
    );
    let compute = report
        .timing
        .iter()
        .find(|t| t.label.contains("hrx_sobel"))
        .expect("compute region row");
    assert_eq!(compute.region, 1);
    assert!(
        compute
            .label
            .starts_with("GPU Compute, native graph: hrx_rgb_to_gray")
    );
    // Per operation: of 10 operations per graph, the 9 in native graphs and copy batches,
    // each timed there by the software device, at capture and in both replays (the NPU run
    // is a region of its own, timed as a region); the 3 identical graphs pooled.
    assert_eq!(report.op_timing.len(), 9);
    assert!(report.op_timing.iter().all(|t| t.graphs.len() == 3));
    assert!(!report.op_timing.iter().any(|t| t.label.contains("npu")));
    assert!(report.op_timing.iter().all(|t| {
        t.captured.is_some()
            && t.replayed.is_some_and(|s| s.samples >= 2)
            && t.ratio.is_some()
            && t.clock == hrx_replay::Clock::Host
    }));
    let text = report.to_text();
    assert!(
        text.contains(
            "per-operation timing (each operation inside its native graph or copy batch):"
        ),
        "{text}"
    );
    // The sum of a graph's operations is at most its region's time (they run inside it).
    let sobel = |t: &&hrx_replay::OpTimingRow| t.label == "hrx_sobel";
    let op = report
        .op_timing
        .iter()
        .find(sobel)
        .expect("hrx_sobel's row");
    let region = (report.timing.iter())
        .find(|t| t.graph == op.graph && t.region == op.region)
        .expect("its region's row");
    assert!(op.replayed.unwrap().median_ns <= region.replayed.unwrap().median_ns);
}

/// `--isolated`: each operation launched on its own (at least three runs each); a capture
/// whose backend timed regions only (its `OpTiming` records removed) has nothing to compare,
/// and the report says why.
#[test]
fn isolated_operations_are_timed_on_their_own_and_a_region_only_capture_says_so() {
    let trace = rewrite(pipeline_trace(), |r, _| !matches!(r, Record::OpTiming(_)));
    let report = replay_with(&trace, &ReplayOptions::default().isolated(true));
    assert_eq!(report.exit_code(), 0);
    // 10 operations, each pooled over the 3 identical graphs: at least 9 runs.
    assert_eq!(report.op_timing.len(), 10);
    assert!(
        report
            .op_timing
            .iter()
            .all(|t| t.replayed.is_some_and(|s| s.samples >= 9) && t.captured.is_none())
    );
    let text = report.to_text();
    assert!(
        text.contains("per-operation timing (each operation launched on its own; the capture timed whole regions only"),
        "{text}"
    );
}

#[test]
fn small_synthetic_frames_replay_with_a_float_tolerance_noted_as_unused() {
    let frames: Vec<_> = (0..5).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 5);
    let report = replay_with(&trace, &ReplayOptions::default().tolerance(1e-6));
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.submissions.len(), 5);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("no output contents")),
        "{:?}",
        report.notes
    );
}

#[test]
fn the_faulty_pipeline_replays_its_failure_and_quarantine() {
    let trace = faulty_pipeline_trace();
    let failed: Vec<u64> = crate::records!(trace, SubmissionDone)
        .filter(|d| d.status != hrx_capture::schema::Status::Ok)
        .map(|d| d.submission.0)
        .collect();
    assert_eq!(failed, [2], "the second frame lost the device");
    let report = replay_with(trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let row = report
        .submissions
        .iter()
        .find(|s| s.submission == 2)
        .expect("row");
    assert_eq!(row.captured, Some(hrx_replay::Outcome::Failed));
    assert_eq!(row.replayed, Some(hrx_replay::Outcome::Failed));
    assert!(row.replayed_error.contains("injected fault"), "{row:?}");
    assert_eq!(
        report.trace.runtimes[0].replay_fault.as_deref(),
        Some("kernel=hrx_sobel#2:device-lost")
    );
}

#[test]
fn until_replays_a_prefix() {
    let report = replay_with(pipeline_trace(), &ReplayOptions::default().until(2));
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.submissions.len(), 2);
    assert_eq!(report.trace.runtimes[0].submissions, 4);
    assert_eq!(report.trace.runtimes[0].replayed_submissions, 2);
}

#[test]
fn one_trace_replays_identically_twenty_times() {
    let trace = hazards_trace();
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = progress.clone();
    let options = ReplayOptions::default().progress(move |done, total| {
        seen.lock().unwrap().push((done, total));
    });
    let first = replay_with(trace, &options);
    let digests = |r: &hrx_replay::Report| r.outputs.iter().map(|o| o.replayed).collect::<Vec<_>>();
    assert_eq!(*progress.lock().unwrap().last().unwrap(), (4, 4));
    for _ in 1..20 {
        let report = hrx_replay::replay(trace, &ReplayOptions::default()).expect("replay");
        assert_eq!(report.exit_code(), 0, "{}", report.to_text());
        assert_eq!(digests(&report), digests(&first));
    }
}

#[test]
fn the_json_report_carries_the_verdict_and_rows() {
    let report = replay_with(hazards_trace(), &ReplayOptions::default());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    assert_eq!(json["verdict"], "same");
    assert_eq!(json["submissions"].as_array().map(Vec::len), Some(4));
    assert_eq!(json["outputs"][0]["result"], "match");
    assert!(json["first_divergence"].is_null());
}

#[test]
fn several_runtimes_in_one_trace_replay_each_in_their_own_runtime() {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
    let frames: Vec<_> = (0..2).map(|seed| synthetic(16, 16, seed)).collect();
    {
        let options = || {
            RuntimeOptions::sim()
                .recorder(recorder.clone())
                .trace_digests(hrx::TraceDigests::All)
        };
        let first = hrx::Runtime::new(options()).expect("first");
        let second = hrx::Runtime::new(options()).expect("second");
        hrx_workloads::run_hazards(&first).expect("hazards");
        assert_eq!(run_pipeline(&second, &frames).expect("pipeline"), 2);
    }
    recorder.close().expect("close");
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).expect("trace");
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.trace.runtimes.len(), 2);
    assert_eq!(report.submissions.len(), 4 + 2);
    let text = report.to_text();
    let header = text
        .lines()
        .skip_while(|l| *l != "submissions:")
        .nth(1)
        .unwrap_or_default();
    assert!(
        header.split_whitespace().take(2).eq(["runtime", "sub"]),
        "{text}"
    );
}

/// Traces recorded on the software device replay on CUDA with identical outputs (the
/// built-in kernels are rebuilt by entry name; their integer arithmetic is bit-exact on
/// every backend). Skipped, saying so, where no CUDA device is present.
#[test]
fn traces_from_the_software_device_replay_on_cuda() {
    if let Err(error) =
        hrx::Runtime::new(RuntimeOptions::default().backend(hrx::BackendChoice::Cuda))
    {
        println!("skipped: no CUDA device ({error})");
        return;
    }
    let options = ReplayOptions::default()
        .backend(hrx::BackendChoice::Cuda)
        .repeat(3);
    for trace in [hazards_trace(), pipeline_trace()] {
        let report = replay_with(trace, &options);
        assert_eq!(report.replay.backend, "cuda");
        assert_eq!(report.exit_code(), 0);
    }
    // The captured fault cannot be injected on CUDA: the report says so and the captured
    // failure diverges.
    let report = replay_with(faulty_pipeline_trace(), &options);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("software device only")),
        "{:?}",
        report.notes
    );
    assert_eq!(report.exit_code(), 1);
}

/// The rows of the text report's submission table ("submissions:", a header, the rows,
/// then a blank line), trimmed.
fn submission_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "submissions:")
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(str::trim)
        .collect()
}

/// Records the pipeline over six small frames with one frame in flight (one graph,
/// submitted once per frame), with `options`; returns the trace.
fn one_graph_trace(options: RuntimeOptions) -> hrx_capture::Trace {
    let frames: Vec<_> = (0..6).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, _run) = record(options, |rt| {
        let options = PipelineOptions {
            frames_in_flight: 1,
            ..PipelineOptions::default()
        };
        let mut pipeline = Pipeline::new(rt, 24, 16, options)?;
        pipeline.run(frames.iter().cloned(), |_, _| {})
    });
    trace
}

#[test]
fn equal_rows_of_consecutive_submissions_share_one_line_of_the_text_report() {
    let report = replay_with(
        &one_graph_trace(RuntimeOptions::sim()),
        &ReplayOptions::default(),
    );
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let rows = &report.submissions;
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.graph == rows[0].graph));
    let text = report.to_text();
    let lines = submission_rows(&text);
    assert_eq!(lines.len(), 1, "{text}");
    let range = format!("{}..={} ", rows[0].submission, rows[5].submission);
    assert!(lines[0].starts_with(&range), "{text}");
    // The JSON still lists every submission.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    assert_eq!(json["submissions"].as_array().map(Vec::len), Some(6));
}

#[test]
fn a_submission_with_another_outcome_breaks_a_group_of_equal_rows() {
    // The third Sobel dispatch fails (a kernel error), in the capture and in the replay;
    // the pipeline stops at the failed frame.
    let fault = "kernel=hrx_sobel#3:kernel-error".parse().expect("fault");
    let report = replay_with(
        &one_graph_trace(RuntimeOptions::sim().fault(fault)),
        &ReplayOptions::default(),
    );
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let rows = &report.submissions;
    assert_eq!(rows.len(), 3, "{}", report.to_text());
    assert!(rows.iter().all(|r| r.graph == rows[0].graph));
    assert_eq!(rows[2].captured, Some(Outcome::Failed));
    let text = report.to_text();
    let lines = submission_rows(&text);
    assert_eq!(lines.len(), 2, "{text}");
    let range = format!("{}..={} ", rows[0].submission, rows[1].submission);
    assert!(lines[0].starts_with(&range), "{text}");
    assert!(
        lines[1].starts_with(&format!("{} ", rows[2].submission)),
        "{text}"
    );
    assert!(lines[1].contains("failed"), "{text}");
}

#[test]
fn submissions_of_different_graphs_with_equal_outcomes_share_a_line_naming_the_graphs() {
    // Three frames in flight rotate over three graphs; every row is otherwise equal.
    let report = replay_with(pipeline_trace(), &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    let text = report.to_text();
    let lines = submission_rows(&text);
    assert_eq!(lines.len(), 1, "{text}");
    let rows = &report.submissions;
    let mut graphs: Vec<u64> = rows.iter().map(|r| r.graph).collect();
    graphs.dedup();
    let cells: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        cells[0],
        format!("{}..={}", rows[0].submission, rows[3].submission),
        "{text}"
    );
    let named: Vec<u64> = cells[1].split(',').map(|g| g.parse().unwrap()).collect();
    assert_eq!(named, graphs[..3], "{text}");
}

/// A trace recorded before format 1.17 whose kernels timed themselves (or went through CUPTI)
/// holds each kernel's time from its first block; this replay counts a graph's operations from
/// the end of what each waits on, and says so. A 1.17 trace and an older one timed on the host
/// say nothing of it.
#[test]
fn kernel_times_recorded_before_format_1_17_are_said_to_count_differently() {
    let note = "were recorded by format 1.16, each from its first block";
    let mut old = pipeline_trace().clone();
    for record in &mut old.records {
        match record {
            Record::SessionStart(start) => start.format_version = (1, 16),
            Record::OpTimes(times) => {
                times.source = hrx_capture::schema::OpTimeSource::BuiltinKernels;
            }
            _ => {}
        }
    }
    let report = replay_with(&old, &ReplayOptions::default());
    assert!(
        report.notes.iter().any(|n| n.contains(note)),
        "{:?}",
        report.notes
    );
    let mut host = pipeline_trace().clone();
    for record in &mut host.records {
        if let Record::SessionStart(start) = record {
            start.format_version = (1, 16);
        }
    }
    let report = replay_with(&host, &ReplayOptions::default());
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("from its first block"))
    );
    let mut new = pipeline_trace().clone();
    for record in &mut new.records {
        if let Record::OpTimes(times) = record {
            times.source = hrx_capture::schema::OpTimeSource::BuiltinKernels;
        }
    }
    let report = replay_with(&new, &ReplayOptions::default());
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("from its first block"))
    );
}

/// `pace_captured`: the replay submits no faster than the capture did. The capture's submits
/// are spread 40 ms apart (host writes moved with the submit they precede), far more than
/// the pipeline takes, so the paced replay lasts at least that span (a lower bound: sleeping
/// never ends early, however loaded the machine), where an unpaced one need not; the report
/// says how it paced.
#[test]
fn a_paced_replay_submits_no_faster_than_the_capture() {
    const GAP_NS: u64 = 40_000_000;
    let mut trace = pipeline_trace().clone();
    let all = (trace.records.iter())
        .filter(|r| matches!(r, Record::Submit(_)))
        .count() as u64;
    let mut submits = 0;
    for record in &mut trace.records {
        match record {
            Record::Submit(s) => {
                s.time_ns += submits * GAP_NS;
                submits += 1;
            }
            Record::HostWrite(w) => w.time_ns += submits * GAP_NS,
            // Let go of after every submission (a worker's release may come in the file
            // before the last submits, the main thread's).
            Record::BufferDropped(d) => d.time_ns += all * GAP_NS,
            _ => {}
        }
    }
    assert!(submits > 2);
    let times: Vec<u64> = (trace.records.iter())
        .filter_map(|r| match r {
            Record::Submit(s) => Some(s.time_ns),
            _ => None,
        })
        .collect();
    let span = times.iter().max().unwrap() - times.iter().min().unwrap();
    assert!(span >= (submits - 1) * GAP_NS);
    let start = std::time::Instant::now();
    let report = replay_with(&trace, &ReplayOptions::default().pace_captured(true));
    assert!(start.elapsed().as_nanos() as u64 >= span);
    assert_eq!(report.exit_code(), 0, "paced, every output still matches");
    assert!(report.replay.pace_captured);
    assert!(report.to_text().contains("paced as captured"));
}
