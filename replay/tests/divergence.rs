//! Changes between capture and replay are found and named (exit code 1).

use crate::common::*;
use crate::records;
use hrx::kernels::{HostLaunch, builtin_code};
use hrx_capture::schema::{self as s, Record};
use hrx_replay::{DivergenceKind, Outcome, ReplayOptions, Verdict};
use std::time::Duration;

/// A Sobel that writes a constant instead of the gradient magnitude.
fn sobel_writes_constant(launch: &HostLaunch<'_>) -> Result<(), String> {
    let out = launch.bindings.get(1).ok_or("no output binding")?;
    // SAFETY: the runtime checked the binding against the contract; `len` bytes at `ptr`
    // belong to this launch's output.
    unsafe { std::ptr::write_bytes(out.ptr, 0x42, out.len) };
    Ok(())
}

/// The real Sobel, 20 ms late.
fn slow_sobel(launch: &HostLaunch<'_>) -> Result<(), String> {
    std::thread::sleep(Duration::from_millis(20));
    let host = builtin_code("hrx_sobel")
        .and_then(|c| c.host)
        .ok_or("no built-in sobel")?;
    host(launch)
}

#[test]
fn a_kernel_that_changed_behaviour_is_the_first_divergence() {
    let trace = pipeline_trace();
    let options = ReplayOptions::default().kernel_override("hrx_sobel", sobel_writes_constant);
    let report = replay_with(trace, &options);
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.verdict, Verdict::Regression);
    let first = report.first_divergence.as_ref().expect("a divergence");
    let sobel = kernel_binding(trace, submit(trace, 1).prepared, "hrx_sobel", 1);
    assert_eq!(
        (first.submission, first.region, first.buffer),
        (1, Some(1), Some(sobel.0)),
        "{first}"
    );
    assert_eq!(first.range, Some((0, (WIDTH * HEIGHT) as u64)));
    assert!(matches!(first.kind, DivergenceKind::Output { .. }));
    assert_eq!(
        first.region_label.as_deref(),
        Some("GPU Compute, native graph: hrx_sobel")
    );
    // Named as `diff` names an output: the operation and use (binding) writing it.
    let node = kernel_node(trace, submit(trace, 1).prepared, "hrx_sobel");
    assert_eq!((first.node, first.use_index), (Some(node), Some(1)));
    let text = report.to_text();
    let line = format!(
        "first divergence: submission 1 region 1 (GPU Compute, native graph: hrx_sobel) node {node} use 1 (buffer {}) bytes 0..{}: digest 0x",
        sobel.0,
        WIDTH * HEIGHT
    );
    assert!(text.contains(&line), "{text}");
    // Everything downstream of the Sobel image differs too, in every frame.
    assert!(report.submissions.iter().all(|s| s.diverged));
}

#[test]
fn with_output_digests_only_the_divergence_shows_where_it_becomes_visible() {
    let frames: Vec<_> = (0..3).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 3);
    let options = ReplayOptions::default().kernel_override("hrx_sobel", sobel_writes_constant);
    let report = replay_with(&trace, &options);
    assert_eq!(report.exit_code(), 1);
    let first = report.first_divergence.as_ref().expect("a divergence");
    // The Sobel image first reaches host-visible memory in the download copy batch.
    assert_eq!((first.submission, first.region), (1, Some(2)), "{first}");
    assert_eq!(
        first.region_label.as_deref(),
        Some("GPU Download, copy batch: 1 download")
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("HRX_TRACE_DIGESTS=all")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_flipped_input_byte_diverges_at_the_first_region_reading_it() {
    let trace = pipeline_trace();
    // The second frame's RGB bytes (the second host write of the run).
    let mut writes_seen = 0;
    let flipped = rewrite(trace, |record, recorder| {
        if let Record::HostWrite(write) = record {
            writes_seen += 1;
            if writes_seen == 2 {
                let mut bytes = payload_bytes(trace, &write.contents);
                bytes[1234] ^= 0x10;
                write.contents = recorder.payload(&bytes);
                assert!(matches!(write.contents, s::Payload::Blob { .. }));
            }
        }
        true
    });
    let report = replay_with(&flipped, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 1);
    let first = report.first_divergence.as_ref().expect("a divergence");
    // Frame 2 is submission 2; its upload copy batch (region 0) reads the host buffer and
    // writes the GPU-local RGB image.
    let upload = records!(flipped, GraphOp)
        .find(|op| op.graph.0 == submit(&flipped, 2).prepared.0 && op.node.0 == 0)
        .expect("upload op");
    assert_eq!(
        (first.submission, first.region, first.buffer),
        (2, Some(0), Some(upload.uses[0].buffer.0)),
        "{first}"
    );
    assert_eq!(
        first.region_label.as_deref(),
        Some("GPU Upload, copy batch: 1 upload")
    );
    // Frames 1, 3 and 4 are untouched.
    let diverged: Vec<u64> = report
        .submissions
        .iter()
        .filter(|s| s.diverged)
        .map(|s| s.submission)
        .collect();
    assert_eq!(diverged, [2]);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("do not match their recorded digest")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_fault_injected_at_replay_only_is_a_status_divergence() {
    let trace = pipeline_trace();
    let fault = "kernel=hrx_sobel#2:device-lost".parse().expect("fault");
    let report = replay_with(trace, &ReplayOptions::default().fault(fault));
    assert_eq!(report.exit_code(), 1);
    let first = report.first_divergence.as_ref().expect("a divergence");
    assert_eq!(first.submission, 2);
    assert_eq!(first.region, Some(1));
    match &first.kind {
        DivergenceKind::Status {
            expected,
            replayed,
            replayed_error,
            ..
        } => {
            assert_eq!((*expected, *replayed), (Outcome::Ok, Outcome::Failed));
            assert!(replayed_error.contains("device lost"), "{replayed_error}");
        }
        other => panic!("{other:?}"),
    }
    let text = report.to_text();
    assert!(
        text.contains("first divergence: submission 2 region 1 (GPU Compute, native graph: "),
        "{text}"
    );
    assert!(
        text.contains(": replay failed (device lost: injected fault"),
        "{text}"
    );
}

#[test]
fn a_fault_the_capture_had_but_the_replay_does_not_is_a_divergence_too() {
    let report = replay_with(
        faulty_pipeline_trace(),
        &ReplayOptions::default().captured_fault(false),
    );
    assert_eq!(report.exit_code(), 1);
    let first = report.first_divergence.as_ref().expect("a divergence");
    assert_eq!(first.submission, 2);
    assert!(matches!(
        first.kind,
        DivergenceKind::Status {
            expected: Outcome::Failed,
            replayed: Outcome::Ok,
            ..
        }
    ));
}

#[test]
fn a_slowed_region_past_max_slowdown_is_a_timing_regression() {
    // Small frames: their compute region takes well under 20 ms even on a loaded machine,
    // so the slowed replay is far past 2x. 24 of them (8 for each of the pipeline's three
    // prepared graphs), replayed twice: enough samples for the medians' intervals and the
    // replay's own spread.
    let frames: Vec<_> = (0..24).map(|seed| synthetic(24, 16, seed)).collect();
    let options = hrx::RuntimeOptions::sim().trace_digests(hrx::TraceDigests::All);
    let (trace, result) = record(options, |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 24);
    let trace = &trace;
    let options = ReplayOptions::default()
        .kernel_override("hrx_sobel", slow_sobel)
        .repeat(2)
        .max_slowdown(2.0);
    let report = replay_with(trace, &options);
    assert_eq!(report.exit_code(), 1);
    assert!(report.divergences.is_empty(), "outputs still match");
    let slow: Vec<_> = report.timing.iter().filter(|t| t.regression).collect();
    assert!(
        slow.iter()
            .any(|t| t.region == 1 && t.label.contains("hrx_sobel")),
        "{slow:?}"
    );
    for t in &slow {
        assert!(t.ratio.expect("ratio") > 2.0);
    }
    let text = report.to_text();
    assert!(text.contains("SLOW"), "{text}");
    assert!(text.contains("verdict: REGRESSION (exit 1)"), "{text}");
    // Without a threshold the same replay is a match.
    let report = replay_with(
        trace,
        &ReplayOptions::default().kernel_override("hrx_sobel", slow_sobel),
    );
    assert_eq!(report.exit_code(), 0);
}

/// Three frames replayed once: three samples a side are too few for a confidence interval
/// of the median, so even a 20 ms slower sobel is not judged, and the report says so rather
/// than call it the same or slow.
#[test]
fn a_region_with_too_few_samples_is_not_judged_and_said_so() {
    let frames: Vec<_> = (0..3).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 3);
    let options = ReplayOptions::default()
        .kernel_override("hrx_sobel", slow_sobel)
        .max_slowdown(2.0);
    let report = replay_with(&trace, &options);
    assert_eq!(report.exit_code(), 0);
    let sobel = (report.timing.iter())
        .find(|t| t.label.contains("hrx_sobel"))
        .expect("sobel's region");
    assert!(sobel.ratio.expect("a ratio") > 2.0, "{sobel:?}");
    assert!(sobel.too_few && !sobel.regression && sobel.interval.is_none());
    assert_eq!(report.summary.too_few, report.timing.len());
    let text = report.to_text();
    assert!(text.contains("too few to judge"), "{text}");
    assert!(
        text.contains(&format!(
            "not judged: {} timing rows with too few samples",
            report.timing.len()
        )),
        "{text}"
    );
}

/// saxpy, then every result one ULP larger: a float kernel that changed slightly.
fn saxpy_one_ulp_off(launch: &HostLaunch<'_>) -> Result<(), String> {
    let saxpy = builtin_code("hrx_saxpy")
        .and_then(|c| c.host)
        .ok_or("no saxpy")?;
    saxpy(launch)?;
    let y = launch.bindings.get(1).ok_or("no y")?;
    for i in 0..y.len / 4 {
        // SAFETY: `y` holds `len` bytes of f32s written by this launch.
        unsafe {
            let p = y.ptr.add(i * 4).cast::<f32>();
            p.write_unaligned(f32::from_bits(p.read_unaligned().to_bits() + 1));
        }
    }
    Ok(())
}

#[test]
fn float_outputs_compare_within_a_tolerance_when_contents_were_captured() {
    let n = 256;
    let options = hrx::RuntimeOptions::sim()
        .trace_contents(true)
        .trace_digests(hrx::TraceDigests::All);
    let (trace, ()) = record(options, |rt| {
        let x = rt.buffer(n * 4, hrx::Placement::HostVisible).unwrap();
        let y = rt.buffer(n * 4, hrx::Placement::GpuLocal).unwrap();
        let xs: Vec<u8> = (0..n)
            .flat_map(|i| (i as f32 * 0.25).to_le_bytes())
            .collect();
        x.write(0, &xs).unwrap();
        y.write(0, &xs).unwrap();
        let saxpy = rt.kernel(&hrx::kernels::saxpy(n, 1.5)).unwrap();
        let mut graph = rt.graph();
        graph.gpu(&saxpy, &[x.whole(), y.whole()]).unwrap();
        graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    });
    let changed = || ReplayOptions::default().kernel_override("hrx_saxpy", saxpy_one_ulp_off);
    let exact = replay_with(&trace, &changed());
    assert_eq!(exact.exit_code(), 1);
    let tolerant = replay_with(&trace, &changed().tolerance(1e-5));
    assert_eq!(tolerant.exit_code(), 0);
    assert_eq!(tolerant.summary.outputs_within_tolerance, 1);
    assert!(matches!(
        tolerant.outputs[0].result,
        hrx_replay::OutputResult::WithinTolerance { max_abs_diff } if max_abs_diff > 0.0
    ));
    let strict = replay_with(&trace, &changed().tolerance(1e-9));
    assert_eq!(strict.exit_code(), 1);
    let text = strict.to_text();
    assert!(text.contains("past the tolerance"), "{text}");
}

/// A trace that ends before a submission finished (a crash, a kill) holds no outcome for
/// it: its status is not compared, so it is not counted as a match, and the report says so.
#[test]
fn a_submission_without_a_recorded_outcome_is_not_a_matching_status() {
    let trace = pipeline_trace();
    let last = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some(s.submission),
            _ => None,
        })
        .max()
        .expect("a submission");
    let cut = rewrite(
        trace,
        |r, _| !matches!(r, Record::SubmissionDone(d) if d.submission == last),
    );
    let report = replay_with(&cut, &ReplayOptions::default());
    let s = report.summary;
    assert_eq!(s.outcomes_unknown, 1);
    assert_eq!(s.statuses_matched, s.submissions - 1);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("1 submission without a recorded outcome")),
        "{:?}",
        report.notes
    );
}

/// A baseline saved from a good replay judges a later replay by the same rule: the same
/// build is no regression against it; a build whose sobel is 20 ms slower is, naming the
/// region, even with no captured time judged; a baseline of another device judges nothing
/// and says so; rows it lacks are counted.
#[test]
fn a_baseline_judges_later_replays_by_the_timing_rule() {
    let frames: Vec<_> = (0..24).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 24);
    let good = replay_with(&trace, &ReplayOptions::default().repeat(2));
    let baseline = hrx_replay::Baseline::of(&good);
    assert_eq!(baseline.rows.len(), good.timing.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    baseline.save(&path).unwrap();
    let baseline = hrx_replay::Baseline::load(&path).unwrap();

    let options = ReplayOptions::default().repeat(2).max_slowdown(2.0);
    let mut same = replay_with(&trace, &options);
    baseline.judge(&mut same, &options).unwrap();
    assert!(same.timing.iter().all(|t| t.baseline.is_some()));
    assert_eq!(same.summary.baseline_slow, 0, "{}", same.to_text());

    // Slower by 20 ms a frame; no captured time judged (a threshold the capture passes).
    let slow_options = ReplayOptions::default()
        .repeat(2)
        .max_slowdown(2.0)
        .kernel_override("hrx_sobel", slow_sobel);
    let mut slow = replay_with(&trace, &slow_options);
    baseline.judge(&mut slow, &slow_options).unwrap();
    let flagged: Vec<_> = (slow.timing.iter())
        .filter(|t| t.baseline.is_some_and(|b| b.regression))
        .collect();
    assert!(!flagged.is_empty() && flagged.iter().all(|t| t.label.contains("hrx_sobel")));
    assert_eq!(slow.summary.baseline_slow, flagged.len());
    assert_eq!(slow.exit_code(), 1);
    assert!(slow.to_text().contains("slow against the baseline"));

    // Another device's baseline: nothing judged, said.
    let mut other = baseline.clone();
    other.device = "another device".into();
    other.rows.pop();
    let mut report = replay_with(&trace, &options);
    let why = other.judge(&mut report, &options).unwrap_err();
    assert!(report.timing.iter().all(|t| t.baseline.is_none()));
    assert!(why.contains("no baseline"), "{why}");
    // A row it lacks is counted.
    let mut fewer = baseline.clone();
    fewer.rows.pop();
    let mut report = replay_with(&trace, &options);
    fewer.judge(&mut report, &options).unwrap();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("1 timing row without")),
        "{:?}",
        report.notes
    );
    // Not a baseline, or another version: refused naming the file.
    std::fs::write(&path, "{\"hrx_replay_baseline\": 9}").unwrap();
    let error = hrx_replay::Baseline::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("baseline version 9") && error.contains("b.json"),
        "{error}"
    );
}

/// A baseline's stored name of its source trace is shown as a path is: one holding a
/// newline or an escape sequence quoted and escaped in each note and error naming it
/// (written raw, it broke the line, and its escape sequence reached the terminal: a
/// break-it pass).
#[test]
fn a_baseline_shows_its_source_name_on_one_line() {
    let frames: Vec<_> = (0..24).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 24);
    let options = ReplayOptions::default().repeat(2).max_slowdown(1e9);
    let good = replay_with(&trace, &options);
    let mut baseline = hrx_replay::Baseline::of(&good);
    baseline.source = Some("a\nb\u{1b}[2J.hrxt".into());
    let shown = r#""a\nb\u{1b}[2J.hrxt""#;
    // Another pace, and a row it lacks: each said in a note naming the source.
    baseline.pace_captured = Some(!good.replay.pace_captured);
    baseline.rows.pop();
    let mut report = replay_with(&trace, &options);
    baseline.judge(&mut report, &options).unwrap();
    // (A third where this host was loaded as the baseline was taken.)
    let naming = report.notes.iter().filter(|n| n.contains(shown)).count();
    assert!(naming >= 2, "{:?}", report.notes);
    assert!(
        report.notes.iter().all(|n| !n.contains(['\n', '\u{1b}'])),
        "{:?}",
        report.notes
    );
    // Saved from another recording: refused naming it.
    baseline.recorded = Some("elsewhere pid 1 at 2026-01-01T00:00:00+00:00".into());
    let why = baseline.check_recording(Some("here")).unwrap_err();
    assert!(
        why.contains(shown) && !why.contains(['\n', '\u{1b}']),
        "{why}"
    );
}

/// A baseline keys rows as the report pools them: each row names the identical graphs it
/// pools, saved and loaded as they are, and judges a later replay's pooled rows (twelve
/// frames: judged, not too few); a baseline of version 1 (rows per graph) is refused with a
/// line saying to save it again, and may be saved over.
#[test]
fn a_baseline_keys_pooled_rows_and_refuses_a_version_1_one() {
    let frames: Vec<_> = (0..12).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 12);
    // A ratio no machine reaches: which rows are judged is under test, not their times.
    let options = ReplayOptions::default()
        .repeat(2)
        .per_op(true)
        .max_slowdown(1e9);
    let good = replay_with(&trace, &options);
    let baseline = hrx_replay::Baseline::of(&good);
    assert_eq!(
        baseline.rows.len(),
        good.timing.len() + good.op_timing.len()
    );
    assert_eq!(baseline.rows.len(), 4 + 9);
    let graphs = good.timing[0].graphs.clone();
    assert_eq!(graphs.len(), 3);
    assert!(
        baseline
            .rows
            .iter()
            .all(|r| r.graphs == graphs && r.graph == graphs[0])
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    baseline.save(&path).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(json["hrx_replay_baseline"], hrx_replay::BASELINE_VERSION);
    assert_eq!(hrx_replay::BASELINE_VERSION, 2);
    assert_eq!(json["rows"][0]["graphs"], serde_json::json!(graphs));
    let loaded = hrx_replay::Baseline::load(&path).unwrap();
    assert_eq!(loaded, baseline);

    let mut later = replay_with(&trace, &options);
    loaded.judge(&mut later, &options).unwrap();
    let matches =
        (later.timing.iter().map(|t| t.baseline)).chain(later.op_timing.iter().map(|t| t.baseline));
    for b in matches {
        let b = b.expect("every pooled row found in the baseline");
        assert!(!b.too_few && b.interval.is_some(), "{b:?}");
    }
    assert_eq!(later.summary.baseline_too_few, 0);
    assert!(
        !later.notes.iter().any(|n| n.contains("without a row")),
        "{:?}",
        later.notes
    );

    // A pool of fewer of the same graphs (a baseline saved from a replay cut short by
    // `--until`, before the third graph was prepared): still the row, found by its first
    // graph, and judged.
    let mut fewer = json.clone();
    for row in fewer["rows"].as_array_mut().unwrap() {
        row["graphs"] = serde_json::json!([graphs[0], graphs[1]]);
    }
    std::fs::write(&path, fewer.to_string()).unwrap();
    let mut judged = replay_with(&trace, &options);
    hrx_replay::Baseline::load(&path)
        .unwrap()
        .judge(&mut judged, &options)
        .unwrap();
    assert!(
        judged.timing.iter().all(|t| t.baseline.is_some()),
        "{:?}",
        judged.notes
    );

    // A row whose graphs do not start from its graph does not hold together.
    let mut bad = json.clone();
    bad["rows"][0]["graphs"] = serde_json::json!([graphs[1], graphs[0]]);
    std::fs::write(&path, bad.to_string()).unwrap();
    let error = hrx_replay::Baseline::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("row 1") && error.contains("not ascending"),
        "{error}"
    );

    // Version 1: refused, saying what to do; saved over, it is version 2 again.
    let mut old = json;
    old["hrx_replay_baseline"] = 1.into();
    std::fs::write(&path, old.to_string()).unwrap();
    let error = hrx_replay::Baseline::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("baseline version 1")
            && error.contains("save it again with --save-baseline"),
        "{error}"
    );
    hrx_replay::Baseline::check_save(&path).expect("a version 1 baseline may be saved over");
    baseline.save(&path).unwrap();
    assert_eq!(hrx_replay::Baseline::load(&path).unwrap(), baseline);

    // An empty file (as `mktemp` makes) may be saved over, as record, trim and export take
    // one; a file with anything else in it is refused.
    std::fs::write(&path, "").unwrap();
    hrx_replay::Baseline::check_save(&path).expect("an empty file may be saved over");
    std::fs::write(&path, "notes\n").unwrap();
    let error = hrx_replay::Baseline::check_save(&path)
        .unwrap_err()
        .to_string();
    assert!(error.contains("not a replay baseline"), "{error}");
}

/// A slowdown of a kernel the trace loads but no graph runs is refused, naming those that
/// run: it would slow nothing, and a gate "testing" itself with it would pass.
#[test]
fn a_slowdown_of_a_kernel_no_graph_runs_is_refused() {
    let frames: Vec<_> = (0..2).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(hrx::RuntimeOptions::sim(), |rt| {
        let _unused = rt.kernel(&hrx::kernels::iota(64, 0, 1)).expect("iota");
        run_pipeline(rt, &frames)
    });
    assert_eq!(result.expect("pipeline"), 2);
    for streamed in [false, true] {
        let options = ReplayOptions::default().slowdown("hrx_iota", 15);
        let error = if streamed {
            let (_dir, path) = file(&trace, "p.hrxt");
            hrx_replay::replay_file(&path, &options).unwrap_err()
        } else {
            hrx_replay::replay(&trace, &options).unwrap_err()
        }
        .to_string();
        assert!(
            error.contains("names kernel hrx_iota, which no graph of the trace runs")
                && error.contains("hrx_blur_h"),
            "{error}"
        );
        let slowed = ReplayOptions::default().slowdown("hrx_blur_h", 15);
        assert_eq!(replay_with(&trace, &slowed).exit_code(), 0);
    }
}
