//! A trace file replayed in chunks (`replay_file`, bounded memory) reports what the whole
//! trace replayed at once (`replay`) reports: the same verdict, statuses, outputs, counts
//! and divergences, whatever the chunk size.

use crate::common::*;
use crate::records;
use hrx::{RuntimeOptions, TraceDigests};
use hrx_capture::Trace;
use hrx_replay::{
    DivergenceKind, OutputResult, ReplayOptions, Verdict, replay_file, replay_file_streaming,
};

#[test]
fn a_trace_replayed_in_chunks_reports_what_the_whole_replay_reports() {
    let frames: Vec<_> = (0..9).map(|seed| synthetic(24, 16, seed)).collect();
    let options = RuntimeOptions::sim().trace_digests(TraceDigests::All);
    let (trace, result) = record(options, |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 9);
    let whole = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(whole.exit_code(), 0);
    let (_dir, path) = file(&trace, "pipeline.hrxt");
    for chunk in [1, 2, 4, 1000] {
        let options = ReplayOptions::default().chunk_submissions(chunk);
        let streamed = replay_file(&path, &options).expect("replay");
        assert_same(&whole, &streamed, &format!("chunks of {chunk}"));
    }
}

/// Twelve frames with three in flight: the three identical graphs pool into rows of twelve
/// captured samples, judged (not too few), whether replayed whole or in chunks; their
/// per-operation rows pool alike.
#[test]
fn identical_graphs_pool_alike_whole_and_in_chunks() {
    let frames: Vec<_> = (0..12).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, result) = record(RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 12);
    // A ratio no machine reaches: which rows are judged is under test, not their times.
    let options = || ReplayOptions::default().repeat(2).max_slowdown(1e9);
    let whole = replay_with(&trace, &options().per_op(true));
    assert_eq!(whole.exit_code(), 0, "{}", whole.to_text());
    assert_eq!(whole.timing.len(), 4, "{:?}", whole.timing);
    let graphs = whole.timing[0].graphs.clone();
    assert_eq!(graphs.len(), 3);
    let judged = |captured: Option<hrx_replay::Durations>,
                  replayed: Option<hrx_replay::Durations>| {
        (captured.map(|c| c.samples), replayed.map(|r| r.samples))
    };
    assert_eq!(whole.op_timing.len(), 9, "{:?}", whole.op_timing);
    let rows = (whole.timing.iter())
        .map(|t| (&t.graphs, t.captured, t.replayed, t.too_few, t.interval))
        .chain(
            (whole.op_timing.iter())
                .map(|t| (&t.graphs, t.captured, t.replayed, t.too_few, t.interval)),
        );
    for (row_graphs, captured, replayed, too_few, interval) in rows {
        assert_eq!(*row_graphs, graphs);
        assert_eq!(judged(captured, replayed), (Some(12), Some(24)));
        assert!(!too_few && interval.is_some(), "{row_graphs:?}");
    }
    assert_eq!(whole.summary.too_few, 0);
    // No row too few to judge (whether a live timing row is too spread is the run's).
    assert!(
        !whole.to_text().contains("with too few samples"),
        "{}",
        whole.to_text()
    );
    let whole = replay_with(&trace, &options());
    let (_dir, path) = file(&trace, "pipeline.hrxt");
    for chunk in [1, 5, 1000] {
        let streamed = replay_file(&path, &options().chunk_submissions(chunk)).expect("replay");
        assert_same(&whole, &streamed, &format!("pooled, chunks of {chunk}"));
    }
}

#[test]
fn failures_quarantines_and_until_replay_the_same_in_chunks() {
    // The faulty pipeline: a device loss in the second frame's Sobel, a quarantine, refused
    // submits; and a changed kernel that diverges.
    let (_dir, path) = file(faulty_pipeline_trace(), "faults.hrxt");
    for options in [
        ReplayOptions::default,
        || ReplayOptions::default().captured_fault(false),
        || ReplayOptions::default().until(2),
    ] {
        let whole = replay_with(faulty_pipeline_trace(), &options());
        for chunk in [1, 3] {
            let streamed = replay_file(&path, &options().chunk_submissions(chunk)).expect("replay");
            assert_same(
                &whole,
                &streamed,
                &format!("chunks of {chunk}: {:?}", options()),
            );
        }
    }
    let (_dir, path) = file(hazards_trace(), "hazards.hrxt");
    let whole = replay_with(hazards_trace(), &ReplayOptions::default());
    let streamed =
        replay_file(&path, &ReplayOptions::default().chunk_submissions(1)).expect("replay");
    assert_same(&whole, &streamed, "hazards in chunks of 1");
}

#[test]
fn a_streamed_replay_hands_out_every_row_and_keeps_only_grouped_lines() {
    let frames: Vec<_> = (0..7).map(|seed| synthetic(24, 16, seed)).collect();
    let (trace, _) = record(RuntimeOptions::sim(), |rt| run_pipeline(rt, &frames));
    let (_dir, path) = file(&trace, "pipeline.hrxt");
    let (mut rows, mut checks) = (Vec::new(), 0);
    let options = ReplayOptions::default().chunk_submissions(2);
    let report = replay_file_streaming(&path, &options, &mut |r, c| {
        rows.extend(r.iter().map(|r| r.submission));
        checks += c.len();
    })
    .expect("replay");
    assert_eq!(rows, (1..=7).collect::<Vec<u64>>());
    assert_eq!(checks, report.summary.outputs_compared);
    assert!(report.submissions.is_empty() && report.outputs.is_empty());
    // Three frame contexts in turn, every outcome equal: one line naming the three graphs.
    let groups = &report.submission_groups.groups;
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!((groups[0].first, groups[0].last), (1, 7));
    assert_eq!(groups[0].graphs.len(), 3);
    let text = report.to_text();
    assert!(text.contains("verdict: SAME (exit 0)"), "{text}");
    assert!(!matches!(
        report.first_divergence.map(|d| d.kind),
        Some(DivergenceKind::Status { .. })
    ));
}

#[test]
fn several_runtimes_replay_the_same_in_chunks() {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
    let frames: Vec<_> = (0..5).map(|seed| synthetic(16, 16, seed)).collect();
    {
        let options = || {
            RuntimeOptions::sim()
                .recorder(recorder.clone())
                .trace_digests(TraceDigests::All)
        };
        let first = hrx::Runtime::new(options()).expect("first");
        let second = hrx::Runtime::new(options()).expect("second");
        hrx_workloads::run_hazards(&first).expect("hazards");
        assert_eq!(run_pipeline(&second, &frames).expect("pipeline"), 5);
    }
    recorder.close().expect("close");
    let trace = Trace::from_bytes(&sink.contents()).expect("trace");
    let whole = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(whole.exit_code(), 0);
    let (_dir, path) = file(&trace, "two.hrxt");
    for chunk in [1, 3] {
        let streamed =
            replay_file(&path, &ReplayOptions::default().chunk_submissions(chunk)).expect("replay");
        assert_same(
            &whole,
            &streamed,
            &format!("two runtimes in chunks of {chunk}"),
        );
    }
}

/// The submission a record of a submission's life names.
fn named(record: &hrx_capture::schema::Record) -> Option<u64> {
    use hrx_capture::schema::Record;
    match record {
        Record::Submit(r) => Some(r.submission.0),
        Record::CrossWait(r) => Some(r.submission.0),
        Record::RegionTiming(r) => Some(r.submission.0),
        Record::RegionStarted(r) => Some(r.submission.0),
        Record::RegionDone(r) => Some(r.submission.0),
        Record::SubmissionDone(r) => Some(r.submission.0),
        Record::OutputDigest(r) => Some(r.submission.0),
        _ => None,
    }
}

/// `trace` with its records far out of file order, as a writer whose threads flush their
/// buffers late produces: everything else first (host writes included), then the later
/// half's submits before the earlier half's, then every completion, timing and digest, the
/// last submission's first.
fn scrambled(trace: &Trace) -> Trace {
    use hrx_capture::schema::Record;
    let submits: Vec<u64> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some(s.submission.0),
            _ => None,
        })
        .collect();
    let half = submits[submits.len() / 2];
    let mut out = trace.clone();
    let (mut unnamed, mut named_records): (Vec<Record>, Vec<Record>) = trace
        .records
        .iter()
        .cloned()
        .partition(|r| named(r).is_none());
    // Blobs first: the recorder writes each where it is interned.
    unnamed.sort_by_key(|r| !matches!(r, Record::Blob(_)));
    let (mut submit_records, mut rest): (Vec<Record>, Vec<Record>) = named_records
        .drain(..)
        .partition(|r| matches!(r, Record::Submit(_)));
    submit_records.sort_by_key(|r| named(r).is_some_and(|n| n < half));
    rest.reverse();
    out.records = unnamed;
    out.records.append(&mut submit_records);
    out.records.append(&mut rest);
    out
}

#[test]
fn a_trace_written_far_out_of_order_replays_in_chunks_as_a_whole() {
    // Completions and digests thousands of records after their submit, and another thread's
    // submits after later ones: each chunk is handed out only once its last record was read.
    let frames: Vec<_> = (0..9).map(|seed| synthetic(24, 16, seed)).collect();
    let options = RuntimeOptions::sim().trace_digests(TraceDigests::All);
    let (trace, result) = record(options, |rt| run_pipeline(rt, &frames));
    assert_eq!(result.expect("pipeline"), 9);
    let whole = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(whole.exit_code(), 0);
    let (_dir, path) = file(&scrambled(&trace), "scrambled.hrxt");
    for chunk in [1, 2, 5, 1000] {
        let options = ReplayOptions::default().chunk_submissions(chunk);
        let streamed = replay_file(&path, &options).expect("replay");
        assert_eq!(
            streamed.exit_code(),
            0,
            "chunks of {chunk}: {:?}",
            streamed.divergences
        );
        assert_same(&whole, &streamed, &format!("scrambled, chunks of {chunk}"));
    }
    let (_dir, path) = file(&scrambled(faulty_pipeline_trace()), "faults.hrxt");
    let whole = replay_with(faulty_pipeline_trace(), &ReplayOptions::default());
    for chunk in [1, 3] {
        let options = ReplayOptions::default().chunk_submissions(chunk);
        let streamed = replay_file(&path, &options).expect("replay");
        assert_same(
            &whole,
            &streamed,
            &format!("scrambled faults, chunks of {chunk}"),
        );
    }
}

/// A multi-thread recording cut short can keep a submission's completion and lose its
/// output digests (written from another thread, into a later block past the cut). In that
/// incomplete trace the digest the replay writes counts as not compared, with a note; in a
/// whole, cleanly closed trace the same missing digest stays a regression.
#[test]
fn a_digest_lost_with_a_cut_is_not_compared_but_one_missing_from_a_whole_trace_diverges() {
    use hrx_capture::schema::Record;
    let trace = pipeline_trace();
    // The last submission that retired with digests.
    let last = records!(trace, OutputDigest)
        .map(|o| (o.runtime, o.submission))
        .max()
        .expect("digests");
    assert!(records!(trace, SubmissionDone).any(|d| (d.runtime, d.submission) == last));
    let lost =
        |r: &Record| matches!(r, Record::OutputDigest(o) if (o.runtime, o.submission) == last);
    let dir = tempfile::tempdir().expect("tempdir");
    // Everything but those digests, flushed; then the digests: cut at the flush.
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) => {}
            Record::Blob(b) => {
                recorder.intern_blob(&b.bytes).expect("blob");
            }
            other if !lost(other) => recorder.record(other),
            _ => {}
        }
    }
    recorder.flush().expect("flush");
    let cut_at = sink.contents().len();
    for record in trace.records.iter().filter(|r| lost(r)) {
        recorder.record(record);
    }
    recorder.close().expect("close");
    let bytes = sink.contents();
    let options = ReplayOptions::default();
    let replayed = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let report = replay_file(&path, &options).expect("replay");
        println!("{}", report.to_text());
        report
    };

    let whole = replayed("whole.hrxt", &bytes);
    assert_eq!(whole.verdict, Verdict::Same);
    assert_eq!(whole.summary.outputs_not_captured, 0);

    let cut = replayed("cut.hrxt", &bytes[..cut_at]);
    assert!(!cut.trace.complete);
    assert_eq!(cut.verdict, Verdict::Same, "{:?}", cut.divergences);
    assert_eq!(cut.exit_code(), 0);
    let lost_outputs = records!(trace, OutputDigest)
        .filter(|o| (o.runtime, o.submission) == last)
        .count();
    assert_eq!(cut.summary.outputs_not_captured, lost_outputs);
    assert_eq!(cut.summary.divergences, 0);
    let row = cut
        .submissions
        .iter()
        .find(|r| r.submission == last.1.0)
        .expect("row");
    assert!(!row.diverged && row.outputs == 0, "{row:?}");
    assert!(!cut.to_text().contains("DIVERGED"), "{}", cut.to_text());
    assert!(
        cut.outputs
            .iter()
            .any(|o| o.submission == last.1.0 && o.result == OutputResult::NotCaptured)
    );
    assert!(
        cut.notes
            .iter()
            .any(|n| n.contains("no captured digest") && n.contains("not compared")),
        "{:?}",
        cut.notes
    );
    // The same trace read whole in memory agrees.
    let in_memory = replay_with(
        &Trace::from_bytes(&bytes[..cut_at]).expect("read"),
        &options,
    );
    assert_eq!(in_memory.verdict, Verdict::Same);
    assert_eq!(in_memory.summary.outputs_not_captured, lost_outputs);

    // Closed cleanly without those digests: a regression.
    let without = rewrite(trace, |r, _| !lost(r));
    let (_d, path) = file(&without, "without.hrxt");
    let report = replay_file(&path, &options).expect("replay");
    assert!(report.trace.complete);
    assert_eq!(report.verdict, Verdict::Regression);
    assert!(
        report
            .divergences
            .iter()
            .any(|d| matches!(d.kind, DivergenceKind::ExtraOutput { .. }))
    );
    assert_eq!(report.summary.outputs_not_captured, 0);
}

/// A capture that digested every range (`TraceDigests::All`) whose first chunk writes only
/// host-visible memory and whose later chunks write GPU-local memory: the streamed replay
/// digests what the whole capture digested (not what its first chunk did), so the later
/// GPU-local ranges are compared, not "not written at replay", as a whole replay does.
#[test]
fn a_capture_digesting_gpu_local_ranges_only_after_the_first_chunk_replays_the_same_in_chunks() {
    let options = RuntimeOptions::sim().trace_digests(TraceDigests::All);
    let (trace, result) = record(options, |rt| -> hrx::Result<()> {
        let visible = rt.buffer(256, hrx::Placement::HostVisible)?;
        let local = rt.buffer(256, hrx::Placement::GpuLocal)?;
        let mut g = rt.graph();
        g.fill(visible.whole(), 1)?;
        let first = g.prepare()?;
        let mut g = rt.graph();
        g.fill(local.whole(), 2)?;
        let later = g.prepare()?;
        for _ in 0..3 {
            first.submit()?.wait()?;
        }
        for _ in 0..2 {
            later.submit()?.wait()?;
        }
        Ok(())
    });
    result.expect("record");
    let whole = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(whole.exit_code(), 0, "{}", whole.to_text());
    assert_eq!(whole.summary.outputs_compared, 5, "{}", whole.to_text());
    let (_dir, path) = file(&trace, "late-local.hrxt");
    for chunk in [2, 3, 1000] {
        let options = ReplayOptions::default().chunk_submissions(chunk);
        let streamed = replay_file(&path, &options).expect("replay");
        assert_eq!(
            streamed.exit_code(),
            0,
            "chunks of {chunk}: {}",
            streamed.to_text()
        );
        assert_same(&whole, &streamed, &format!("chunks of {chunk}"));
        assert!(
            !streamed
                .notes
                .iter()
                .any(|n| n.contains("only host-observable")),
            "chunks of {chunk}: {:?}",
            streamed.notes
        );
    }
}

/// Two graphs alike but for their buffers' placements (a copy between host-visible buffers,
/// one between GPU-local buffers, both on the Compute lane) do not compute at one speed:
/// their timing rows stay apart, whole and in chunks.
#[test]
fn graphs_alike_but_for_their_buffers_placements_do_not_pool() {
    let (trace, result) = record(RuntimeOptions::sim(), |rt| -> hrx::Result<()> {
        let mut graphs = Vec::new();
        for placement in [hrx::Placement::HostVisible, hrx::Placement::GpuLocal] {
            let (a, b) = (rt.buffer(4096, placement)?, rt.buffer(4096, placement)?);
            let mut g = rt.graph();
            g.copy(b.whole(), a.whole())?;
            graphs.push((g.prepare()?, a, b));
        }
        for _ in 0..3 {
            for (g, _, _) in &graphs {
                g.submit()?.wait()?;
            }
        }
        Ok(())
    });
    result.expect("record");
    let whole = replay_with(&trace, &ReplayOptions::default().per_op(true));
    let rows = |r: &hrx_replay::Report| {
        (
            r.timing.iter().map(|t| t.graphs.len()).collect::<Vec<_>>(),
            r.op_timing
                .iter()
                .map(|t| t.graphs.len())
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        rows(&whole),
        (vec![1, 1], vec![1, 1]),
        "{}",
        whole.to_text()
    );
    let (_dir, path) = file(&trace, "placements.hrxt");
    for chunk in [2, 1000] {
        let options = ReplayOptions::default()
            .per_op(true)
            .chunk_submissions(chunk);
        let streamed = replay_file(&path, &options).expect("replay");
        // In chunks, operations are timed in the first chunk only (its note).
        assert_eq!(rows(&streamed).0, rows(&whole).0, "{}", streamed.to_text());
        if chunk == 1000 {
            assert_eq!(rows(&streamed), rows(&whole), "{}", streamed.to_text());
        }
    }
}

/// A trim of a recording without contents lacks bytes its range reads before writing them
/// (the hazards workload's submissions 3.. read what 1 and 2 wrote). The outputs that
/// depend on them are excluded with that reason, whole and in chunks of one submission
/// (the taint outlives its chunk: the snapshot is in the first, the output that reads it
/// in the second); replay used to compare them and call the difference a REGRESSION. An
/// output whose operation reads nothing is compared, even in a region beside one that
/// reads missing bytes (a break-it pass: submission 4's fills were excluded with it).
#[test]
fn outputs_that_read_bytes_a_trim_lacks_are_excluded_in_every_chunk() {
    let options = RuntimeOptions::sim().trace_digests(TraceDigests::All);
    let (trace, result) = record(options, hrx_workloads::run_hazards);
    result.expect("hazards");
    let (dir, whole) = file(&trace, "whole.hrxt");
    for start in [3, 4] {
        let selection = hrx_analysis::trim::Selection::Submissions { start, end: None };
        let open = || hrx_analysis::trim::open_checked(&whole);
        let (summary, bytes) =
            hrx_analysis::trim::trim(open, selection, "whole.hrxt", Vec::new()).expect("trim");
        assert!(summary.unknown_bytes() > 0, "the range reads earlier bytes");
        let trimmed = dir.path().join(format!("trimmed-{start}.hrxt"));
        std::fs::write(&trimmed, &bytes).unwrap();
        // The operations that read nothing, by (submission, node).
        let trimmed_trace = hrx_capture::Trace::from_bytes(&bytes).unwrap();
        let reads_nothing = reads_nothing(&trimmed_trace);
        for chunk in [1, 1000] {
            let options = ReplayOptions::default().chunk_submissions(chunk);
            let report = replay_file(&trimmed, &options).expect("replay");
            let what = format!("from {start}, chunks of {chunk}: {}", report.to_text());
            assert_eq!(report.exit_code(), 0, "{what}");
            assert_eq!(report.verdict, Verdict::Same, "{what}");
            assert!(report.summary.outputs_excluded > 0, "{what}");
            assert!(report.summary.outputs_matched > 0, "{what}");
            for output in &report.outputs {
                match &output.result {
                    OutputResult::Excluded { why } => {
                        assert!(
                            why.contains("whose contents at the range's start the trace lacks"),
                            "{why}"
                        );
                        // An output placed by its operation (not a range several write).
                        let node = output.node.map(|n| (output.submission, n));
                        assert!(
                            node.is_none_or(|n| !reads_nothing.contains(&n)),
                            "{output:?} is written by an operation that reads nothing: {what}"
                        );
                    }
                    OutputResult::Match => {}
                    other => panic!("{other:?}: {what}"),
                }
            }
        }
    }
}

/// The `(submission, node)` of every operation of `trace`'s submissions that reads nothing.
fn reads_nothing(trace: &Trace) -> std::collections::HashSet<(u64, u32)> {
    use hrx_capture::schema::{Access, Record};
    let mut graph_of = std::collections::HashMap::new();
    let mut ops = std::collections::HashMap::new();
    for record in &trace.records {
        match record {
            Record::Prepared(p) => {
                graph_of.insert(p.prepared, p.graph);
            }
            Record::GraphOp(op) => {
                let reads = op.uses.iter().any(|u| u.access != Access::Write);
                ops.entry(op.graph)
                    .or_insert_with(Vec::new)
                    .push((op.node.0, reads));
            }
            _ => {}
        }
    }
    let mut out = std::collections::HashSet::new();
    for record in &trace.records {
        if let Record::Submit(submit) = record {
            let graph = graph_of[&submit.prepared];
            for &(node, reads) in &ops[&graph] {
                if !reads {
                    out.insert((submit.submission.0, node));
                }
            }
        }
    }
    out
}
