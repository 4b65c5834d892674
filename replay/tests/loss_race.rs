//! Device-loss races: a submission that fails with a device loss because a concurrent
//! submission lost the device first is timing-dependent, not a regression, and so are its
//! consequences (a cancelled consumer, later copies on the lane refused by its unhealthy
//! copy stream).
//!
//! On the software device a failed copy batch leaves its lane's copy stream unhealthy, so
//! every later copy on that lane fails with `DeviceLost` whatever it copies: the lane-wide
//! analogue of CUDA's sticky context error (found on the H200: frame 2's
//! `CUDA_ERROR_ILLEGAL_ADDRESS` caught frame 1's Download still running in the replay,
//! where the capture had seen it finish). The capture here runs everything in order, and is
//! then rewritten into the capture that the other timing gives: the submissions after the
//! loss finished before it.

use crate::common::{assert_same, file, record, replay_with, rewrite, submit};
use crate::records;
use hrx::{Placement, RuntimeOptions};
use hrx_capture::Trace;
use hrx_capture::schema::{Record, Status, SubmissionIndex};
use hrx_replay::{DivergenceKind, Outcome, ReplayOptions, Report, replay_file};

const LEN: usize = 4096;

/// The captured indexes: `x` downloads its own buffers (graph X, one slot), `f` downloads
/// others and loses the device (the injected fault), `x_again` is X after the loss,
/// `consumer` names `x_again` as its producer, `x_last` is X once more.
struct Indexes {
    f: u64,
    x_again: u64,
    consumer: u64,
    x_last: u64,
}

/// Records: X, wait; F (its download loses the device), wait; X (fails: the Download
/// stream is unhealthy, a refusal that quarantines and poisons nothing), Y after it
/// (cancelled), wait; X again (refused: its one slot is still held).
fn lost_download_trace() -> (Trace, Indexes) {
    let options = RuntimeOptions::sim()
        .graph_slots(1)
        .trace_digests(hrx::TraceDigests::All)
        .fault("op=2:device-lost".parse().expect("fault"));
    let (trace, indexes) = record(options, lose_the_download);
    let f = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Quarantine(q) if q.submission.is_some_and(|s| s.0 < indexes.x_again) => {
                q.submission
            }
            _ => None,
        })
        .expect("F's quarantine")
        .0;
    (
        trace,
        Indexes {
            f,
            x_last: indexes.consumer + 1,
            ..indexes
        },
    )
}

/// The program of [`lost_download_trace`] on `rt` (its fault injected at `op=2`).
fn lose_the_download(rt: &hrx::Runtime) -> Indexes {
    let download = |len| {
        let gpu = rt.buffer(len, Placement::GpuLocal).expect("buffer");
        let host = rt.buffer(len, Placement::HostVisible).expect("buffer");
        let mut graph = rt.graph();
        graph.copy(host.whole(), gpu.whole()).expect("copy");
        (graph.prepare().expect("prepare"), gpu, host)
    };
    let (x, _xg, _xh) = download(LEN);
    let (f, _fg, _fh) = download(LEN);
    let (y, _yg, _yh) = download(LEN);
    x.submit().expect("x").wait().expect("x runs");
    let lost = f
        .submit()
        .expect("f")
        .wait()
        .expect_err("f loses the device");
    assert!(lost.is_device_loss(), "{lost}");
    let x_again = x.submit().expect("x again");
    let consumer = y
        .submit_after(std::slice::from_ref(&x_again))
        .expect("consumer");
    let (x_again_index, consumer_index) = (x_again.submission(), consumer.submission());
    let unhealthy = x_again
        .wait()
        .expect_err("the Download stream is unhealthy");
    assert!(unhealthy.is_device_loss(), "{unhealthy}");
    consumer.wait().expect_err("its producer failed");
    assert!(
        !x.quarantined(),
        "an unhealthy stream's refusal quarantines nothing"
    );
    x.submit().expect_err("X's one slot is held by `x_again`");
    Indexes {
        f: 0,
        x_again: x_again_index,
        consumer: consumer_index,
        x_last: 0,
    }
}

/// The capture the other timing gives: X again (and so its consumer) finished before F's
/// loss, and X was submitted once more, successfully, as `x_last`.
fn raced(trace: &Trace, ix: &Indexes) -> Trace {
    let ok_again = |s: SubmissionIndex| s.0 == ix.x_again || s.0 == ix.consumer;
    let mut x_records = Vec::new();
    let mut rewritten = rewrite(trace, |record, _| {
        match record {
            Record::SubmissionDone(d) if ok_again(d.submission) => d.status = Status::Ok,
            Record::RegionDone(d) if ok_again(d.submission) => d.status = Status::Ok,
            Record::Quarantine(q) if q.submission.is_some_and(ok_again) => return false,
            Record::Poison(p) if p.submission.is_some_and(ok_again) => return false,
            Record::SubmitRefused(_) => return false,
            // The program let go of its buffers after its last submission, `x_last` too.
            Record::BufferDropped(d) => d.time_ns += 2_000_000_000,
            _ => {}
        }
        // X's records, once more as `x_last`, a second later.
        let mut copy = record.clone();
        let again = match &mut copy {
            Record::Submit(s) if s.submission.0 == ix.x_again => {
                s.submission.0 = ix.x_last;
                s.time_ns += 1_000_000_000;
                true
            }
            Record::SubmissionDone(d) if d.submission.0 == ix.x_again => {
                d.submission.0 = ix.x_last;
                d.time_ns += 1_000_000_000;
                true
            }
            Record::RegionDone(d) if d.submission.0 == ix.x_again => {
                d.submission.0 = ix.x_last;
                d.time_ns += 1_000_000_000;
                true
            }
            _ => false,
        };
        if again {
            x_records.push(copy);
        }
        true
    });
    rewritten.records.extend(x_records);
    rewritten
}

#[test]
fn a_download_caught_by_a_concurrent_device_loss_is_timing_dependent_with_its_consequences() {
    let (trace, ix) = lost_download_trace();
    // The capture as recorded replays identically: the same order loses the same work.
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    assert!(
        report.timing_dependent.is_empty(),
        "{:?}",
        report.timing_dependent
    );

    let raced = raced(&trace, &ix);
    let report = replay_with(&raced, &ReplayOptions::default());
    // Before device-loss races were told apart, X again read as a regression (captured ok,
    // replayed failed), and so did its consequences.
    assert!(report.divergences.is_empty(), "{:?}", report.divergences);
    assert_eq!(report.exit_code(), 0);
    let why = |submission: u64| {
        report
            .timing_dependent
            .iter()
            .find(|d| d.submission == submission)
            .and_then(|d| Some((&d.kind, d.timing_dependent.as_deref()?)))
            .unwrap_or_else(|| panic!("submission {submission}: {:?}", report.timing_dependent))
    };
    let (kind, reason) = why(ix.x_again);
    assert!(matches!(kind, DivergenceKind::Status { .. }), "{kind:?}");
    assert!(
        reason.starts_with(&format!(
            "replayed region 0 failed with a device loss after submission {} region 0 lost \
             the device, which is not ordered before it",
            ix.f
        )),
        "{reason}"
    );
    let (kind, reason) = why(ix.consumer);
    assert!(matches!(kind, DivergenceKind::Status { .. }), "{kind:?}");
    assert!(
        reason.contains(&format!("its producer, submission {}, failed", ix.x_again)),
        "{reason}"
    );
    // X once more meets the unhealthy stream too (its graph is not quarantined: the
    // stream's refusal came before any copy).
    let (kind, reason) = why(ix.x_last);
    assert!(matches!(kind, DivergenceKind::Status { .. }), "{kind:?}");
    assert!(
        reason.starts_with(&format!(
            "replayed region 0 failed with a device loss after submission {} region 0 lost \
             the device, which is not ordered before it",
            ix.f
        )),
        "{reason}"
    );
    // F's own loss is reproduced, not a divergence.
    assert!(report.timing_dependent.iter().all(|d| d.submission != ix.f));
    let text = report.to_text();
    assert!(text.contains("verdict: SAME (exit 0)"), "{text}");
    // The heading names the rows' failure: a device loss, not a poison.
    assert!(
        text.contains(
            "timing-dependent, not a regression (3): a device-loss failure whose cause, a \
             concurrent failure, may come before or after it from run to run, and what \
             follows from it:"
        ),
        "{text}"
    );
}

#[test]
fn a_failure_of_its_own_beside_a_concurrent_loss_or_poison_stays_a_regression() {
    let (trace, ix) = lost_download_trace();
    let raced = raced(&trace, &ix);

    // Replayed with a loss of its own at X again (an injected fault there instead of F's):
    // no other submission lost the device before it, so the capture's ok X again against
    // the replay's loss is a regression.
    let options = ReplayOptions::default().fault("op=3:device-lost".parse().expect("fault"));
    let report = replay_with(&raced, &options);
    assert_eq!(report.exit_code(), 1);
    let regression = |report: &hrx_replay::Report| {
        report
            .divergences
            .iter()
            .any(|d| d.submission == ix.x_again && d.timing_dependent.is_none())
    };
    assert!(regression(&report), "{:?}", report.timing_dependent);

    // The capture says X again failed with a kernel error of its own after F poisoned a
    // buffer it uses (a Poison record added for its host buffer); replayed without the
    // fault, it succeeds. The poison did not cause that failure (its error names no
    // poisoned buffer): a regression, which the poison rule once called timing-dependent.
    let x_host = trace
        .records
        .iter()
        .find_map(|r| match r {
            // X's first submission (before F's) wrote its host buffer.
            Record::OutputDigest(d) if d.submission.0 < ix.f => Some(d.buffer),
            _ => None,
        })
        .expect("X's output, its host buffer");
    let own = Status::Failed {
        error: "kernel error: out of range".into(),
    };
    let edited = rewrite(&raced, |record, recorder| {
        match record {
            Record::SubmissionDone(d) if d.submission.0 == ix.x_again => d.status = own.clone(),
            Record::RegionDone(d) if d.submission.0 == ix.x_again => d.status = own.clone(),
            Record::Poison(p) if p.submission.is_some_and(|s| s.0 == ix.f) => {
                let mut x = p.clone();
                x.buffer = x_host;
                recorder.record(&Record::Poison(x));
            }
            _ => {}
        }
        true
    });
    let report = replay_with(&edited, &ReplayOptions::default().captured_fault(false));
    assert!(regression(&report), "{:?}", report.timing_dependent);
}

/// A sticky loss surfaces at whichever synchronization comes first (found on the H200:
/// frame 1's Download recorded `CUDA_ERROR_ILLEGAL_ADDRESS` before frame 2, whose kernel
/// caused it, recorded its own). Here the capture is rewritten so that the first X, which
/// F does not wait for, failed with F's device loss *before* F's failure was recorded: F's
/// loss is reproduced by the replay, X succeeds there, and X's divergence is timing, not a
/// regression (it was one while the rule asked for the loss to be recorded first).
#[test]
fn a_failure_recorded_before_the_concurrent_loss_that_caused_it_is_timing_dependent() {
    let (trace, ix) = lost_download_trace();
    let first_x = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Submit(s) => Some(s.submission.0),
            _ => None,
        })
        .expect("a submit");
    assert!(first_x < ix.f);
    let (f_status, f_time) = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::RegionDone(d) if d.submission.0 == ix.f && d.status != Status::Ok => {
                Some((d.status.clone(), d.time_ns))
            }
            _ => None,
        })
        .expect("F's failed region");
    let edited = rewrite(&trace, |record, _| {
        match record {
            Record::SubmissionDone(d) if d.submission.0 == first_x => {
                d.status = f_status.clone();
                d.time_ns = f_time - 1_000;
            }
            Record::RegionDone(d) if d.submission.0 == first_x => {
                d.status = f_status.clone();
                d.time_ns = f_time - 1_000;
            }
            _ => {}
        }
        true
    });
    let report = replay_with(&edited, &ReplayOptions::default());
    assert!(report.divergences.is_empty(), "{:?}", report.divergences);
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let row = report
        .timing_dependent
        .iter()
        .find(|d| d.submission == first_x)
        .unwrap_or_else(|| panic!("{:?}", report.timing_dependent));
    let reason = row.timing_dependent.as_deref().expect("a reason");
    assert!(
        reason.starts_with(&format!(
            "captured region 0 failed with a device loss beside submission {} region 0, \
             which lost the device on both sides",
            ix.f
        )),
        "{reason}"
    );

    // Replayed without F's fault (a fault that never fires instead): F's loss is not
    // reproduced, so no loss both sides share explains X's captured failure: a regression.
    let report = replay_with(
        &edited,
        &ReplayOptions::default()
            .captured_fault(false)
            .fault("op=99:device-lost".parse().expect("fault")),
    );
    assert!(
        report
            .divergences
            .iter()
            .any(|d| d.submission == first_x && d.timing_dependent.is_none()),
        "{:?} {:?}",
        report.divergences,
        report.timing_dependent
    );
}

/// `trace` as a range recorded (or trimmed) from its first submission to its last: a
/// `TraceRange` record before its first `Submit`.
fn ranged(trace: &Trace) -> Trace {
    let submits: Vec<(hrx_capture::schema::RuntimeId, u64)> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some((s.runtime, s.submission.0)),
            _ => None,
        })
        .collect();
    let runtime = submits[0].0;
    let first = submits.iter().map(|s| s.1).min().expect("a submit");
    let last = submits.iter().map(|s| s.1).max().expect("a submit");
    let mut added = false;
    rewrite(trace, |record, recorder| {
        if matches!(record, Record::Submit(_)) && !std::mem::replace(&mut added, true) {
            recorder.record(&Record::TraceRange(hrx_capture::schema::TraceRange {
                runtime,
                start: SubmissionIndex(first),
                end: Some(SubmissionIndex(last + 1)),
                trigger: format!("submissions:{first}..{}", last + 1),
                trimmed_from: Some("loss-race.hrxt".into()),
                time_ns: 0,
                fault: None,
            }));
        }
        true
    })
}

/// The replays of `trace` (a file) in chunks of one, two and a thousand submissions
/// report what its whole replay reports; returns the whole replay's report.
fn alike_in_chunks(name: &str, trace: &Trace, options: fn() -> ReplayOptions) -> Report {
    let whole = replay_with(trace, &options());
    let (_dir, path) = file(trace, "trace.hrxt");
    for chunk in [1, 2, 1000] {
        let streamed = replay_file(&path, &options().chunk_submissions(chunk))
            .unwrap_or_else(|e| panic!("{name}, chunks of {chunk}: {e}"));
        println!("{name}, chunks of {chunk}:\n{}", streamed.to_text());
        assert_same(&whole, &streamed, &format!("{name}, chunks of {chunk}"));
    }
    whole
}

/// In chunks of one or two submissions, the consumer's explicit producer (X again) lies in
/// an earlier chunk. The replay of the consumer's chunk once submitted it without that
/// producer (the plan had dropped it as before the chunk's range): it ran, and failed on
/// the unhealthy Download stream where the whole replay cancels it (its producer failed), a
/// regression in chunks only. The replay keeps the completion for the later chunk. Ranged,
/// the trace's chunks were refused outright: the plan took the recording's range start for
/// where each chunk begins ("submission 4 waits on submission 3, which is not an earlier
/// submission").
#[test]
fn a_failed_producer_of_an_earlier_chunk_cancels_its_consumer() {
    let (trace, ix) = lost_download_trace();
    let ranged = ranged(&trace);
    assert_eq!(records!(ranged, TraceRange).count(), 1);
    for (name, trace) in [("as recorded", &trace), ("ranged", &ranged)] {
        let consumer = submit(trace, ix.consumer);
        assert_eq!(consumer.producers, [SubmissionIndex(ix.x_again)]);
        let whole = alike_in_chunks(name, trace, ReplayOptions::default);
        assert_eq!(whole.exit_code(), 0, "{name}");
        let row = whole
            .submissions
            .iter()
            .find(|r| r.submission == ix.consumer)
            .expect("the consumer's row");
        assert_eq!(row.replayed, Some(Outcome::Cancelled), "{name}");
    }
}

/// A failure's classification reads what came before it: the loss that caught X again (F's,
/// an earlier chunk's in chunks of one), the quarantine that refused X last (X again's),
/// the producer whose failure cancelled the consumer. A chunk was once classified against
/// its own failures only, and the raced trace's three timing-dependent rows read as
/// regressions in chunks of one (two in chunks of two: exit 1 where the whole replay exits
/// 0). In chunks of one, two or the whole trace, the same rows, reasons and verdict; so too
/// ranged, and for the faults traces (the committed fixture, with and without its fault,
/// the photographic one, and the H200's).
#[test]
fn failures_are_told_alike_across_chunks() {
    let (trace, ix) = lost_download_trace();
    let raced = raced(&trace, &ix);
    for (name, trace) in [("raced", &raced), ("raced, ranged", &ranged(&raced))] {
        let whole = alike_in_chunks(name, trace, ReplayOptions::default);
        assert_eq!(whole.exit_code(), 0, "{name}");
        let rows: Vec<u64> = whole
            .timing_dependent
            .iter()
            .map(|d| d.submission)
            .collect();
        assert_eq!(rows, [ix.x_again, ix.consumer, ix.x_last], "{name}");
    }
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/pipeline-faults-v1.0.hrxt"
    );
    let fixture = Trace::from_bytes(&std::fs::read(fixture).expect("fixture")).expect("read");
    let whole = alike_in_chunks("faults fixture", &fixture, ReplayOptions::default);
    assert_eq!(whole.exit_code(), 0);
    let whole = alike_in_chunks("faults fixture, no fault", &fixture, || {
        ReplayOptions::default().captured_fault(false)
    });
    assert_eq!(whole.exit_code(), 1);
    let whole = alike_in_chunks(
        "faulty pipeline",
        crate::common::faulty_pipeline_trace(),
        ReplayOptions::default,
    );
    assert_eq!(whole.exit_code(), 0);
    // The `faults` workload recorded on the H200 (the timeline's fixture), replayed on the
    // software device: frame 2's sticky loss caught frames 3 and 4 in the capture, two
    // timing-dependent rows read against frame 2's loss, an earlier chunk's in chunks of
    // one; frame 2's quarantine is not reproduced (a regression, in every chunking).
    let h200 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tui/tests/data/faults-cuda-h200.hrxt"
    );
    let h200 = Trace::from_bytes(&std::fs::read(h200).expect("fixture")).expect("read");
    let whole = alike_in_chunks("faults on the H200", &h200, || {
        ReplayOptions::default().backend(hrx::BackendChoice::Sim)
    });
    assert_eq!(whole.exit_code(), 1);
    assert_eq!(whole.timing_dependent.len(), 2);
}

/// The raced trace with the consumer made a waiter instead: it names no producer, waits on
/// X again (a cross wait), which waits on F. In the replay both run on the Download lane
/// that F's loss left unhealthy and fail where the capture saw them succeed; both are
/// ordered after F's loss (the chain consumer -> X again -> F), so neither failure is a
/// race: both are regressions. In chunks of one, the consumer's chain to F passes through
/// X again, of an earlier chunk: the comparison carries that X again is ordered after F
/// (a later chunk names it), else the consumer read as timing-dependent in chunks only.
#[test]
fn a_failure_ordered_after_an_earlier_chunks_loss_through_a_chain_stays_a_regression() {
    use hrx_capture::schema::{CrossWait, HazardKind, RegionIndex};
    let (trace, ix) = lost_download_trace();
    let raced = raced(&trace, &ix);
    let wait = |runtime, submission: u64, on_submission: u64, buffer| {
        Record::CrossWait(CrossWait {
            runtime,
            submission: SubmissionIndex(submission),
            region: RegionIndex(0),
            on_submission: SubmissionIndex(on_submission),
            on_region: RegionIndex(0),
            kind: HazardKind::WriteAfterWrite,
            buffer,
            start: 0,
            end: 1,
        })
    };
    let chained = rewrite(&raced, |record, recorder| {
        if let Record::Submit(s) = record {
            let buffer = hrx_capture::schema::BufferId(1);
            if s.submission.0 == ix.x_again {
                recorder.record(&wait(s.runtime, ix.x_again, ix.f, buffer));
            }
            if s.submission.0 == ix.consumer {
                s.producers.clear();
                recorder.record(&wait(s.runtime, ix.consumer, ix.x_again, buffer));
            }
        }
        true
    });
    let whole = alike_in_chunks("chained", &chained, ReplayOptions::default);
    assert_eq!(whole.exit_code(), 1);
    let regressions: Vec<u64> = whole.divergences.iter().map(|d| d.submission).collect();
    assert!(
        regressions.contains(&ix.x_again) && regressions.contains(&ix.consumer),
        "{:?}",
        whole.divergences
    );
}

/// `trace` with submission `ix.f`'s device loss in CUDA's words for a kernel fault: sticky.
fn sticky_trace(trace: &Trace, ix: &Indexes) -> Trace {
    let cuda_words = |error: &mut String| {
        if error.starts_with("device lost:") && !error.contains("quarantined") {
            *error = format!(
                "{error}; CUDA cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700); \
                 sticky: CUDA cannot be used again in this process (the driver's rule for a \
                 kernel fault: the process must end)"
            );
        }
    };
    rewrite(trace, |record, _| {
        match record {
            Record::SubmissionDone(d) if d.submission.0 == ix.f => {
                if let Status::Failed { error } = &mut d.status {
                    cuda_words(error);
                }
            }
            Record::RegionDone(d) if d.submission.0 == ix.f => {
                if let Status::Failed { error } = &mut d.status {
                    cuda_words(error);
                }
            }
            _ => {}
        }
        true
    })
}

/// A capture that lost its GPU to a sticky error (CUDA's kernel faults: "To continue using
/// CUDA, the process must be terminated and relaunched") is replayed once, with no warm-up,
/// wherever the replay may run on a GPU, and the report says why: its first run reproduces the
/// loss, after which nothing of the device opens again in the process. On the H100 the
/// replay's default warm-up left the measured run `cuDevicePrimaryCtxRetain` failing with
/// `CUDA_ERROR_ILLEGAL_ADDRESS` (exit 2), and `--repeat 3` made two of three runs fail by the
/// first one's loss. On the software device (`--backend sim`) the runs asked are run. Here
/// the software device's lost download is rewritten into CUDA's words; `auto` falls back to
/// the software device on a machine without a GPU (and with a fault to inject), so the test
/// states what a GPU host decides (`ReplayOptions::auto_opens_gpu`), injecting no fault, in
/// the whole and the streamed replay.
#[test]
fn a_capture_that_lost_its_gpu_to_a_sticky_error_is_replayed_once_on_a_gpu() {
    let (trace, ix) = lost_download_trace();
    let sticky = sticky_trace(&trace, &ix);
    let options = |backend| {
        ReplayOptions::default()
            .backend(backend)
            .repeat(3)
            .warmup(1)
            .captured_fault(false)
            .auto_opens_gpu(true)
    };
    let once = |report: &Report| {
        let note = report
            .notes
            .iter()
            .find(|n| n.contains("replayed once, without a warm-up"));
        (report.replay.repeat, note.cloned())
    };
    let (_dir, path) = file(&sticky, "sticky.hrxt");
    for (what, report) in [
        (
            "whole",
            replay_with(&sticky, &options(hrx::BackendChoice::Auto)),
        ),
        (
            "streamed",
            replay_file(&path, &options(hrx::BackendChoice::Auto)).expect("streamed replay"),
        ),
    ] {
        let (repeat, note) = once(&report);
        assert_eq!((repeat, report.replay.warmup), (1, 0), "{what}");
        let note = note.unwrap_or_else(|| panic!("{what}: {:?}", report.notes));
        assert!(
            note.contains(
                ": replayed once, without a warm-up (not the 1 warm-up and 3 repeats asked): \
                 the capture lost the device to a sticky error (submission "
            ) && note.contains(&format!("submission {}: device lost:", ix.f))
                && note.contains("cannot be used again in the replay's process")
                && note.ends_with("(`--backend sim` replays it as asked)"),
            "{what}: {note}"
        );
        // The vendor's note is the reason the note gives in its own words, not repeated.
        assert!(!note.contains("sticky: CUDA"), "{what}: {note}");
    }
    // The software device replays it as asked; a capture of no sticky loss likewise.
    for (what, trace, backend) in [
        ("sim", &sticky, hrx::BackendChoice::Sim),
        ("not sticky", &trace, hrx::BackendChoice::Auto),
    ] {
        let report = replay_with(trace, &options(backend));
        assert_eq!(once(&report), (3, None), "{what}");
        assert_eq!(report.replay.warmup, 1, "{what}");
    }
}

/// Where `auto` replays on the software device (it injects the captured fault, or opens no
/// GPU here), or `--until` ends before the loss, a capture that lost its GPU to a sticky error
/// is replayed as asked, in the whole and the streamed replay alike. `auto` replayed on the
/// software device once, without its warm-up, saying a GPU would reproduce the loss; a
/// streamed replay ran once for a loss past `--until`, naming it, where the whole replay ran
/// as asked (a break-it pass).
#[test]
fn a_sticky_capture_runs_as_asked_where_auto_picks_the_software_device_or_until_ends_before() {
    let (trace, ix) = lost_download_trace();
    let sticky = sticky_trace(&trace, &ix);
    let (_dir, path) = file(&sticky, "sticky.hrxt");
    let runs = |r: &Report| {
        let once = r.notes.iter().find(|n| n.contains("replayed once"));
        (r.replay.repeat, r.replay.warmup, once.cloned())
    };
    let auto = || {
        ReplayOptions::default()
            .backend(hrx::BackendChoice::Auto)
            .repeat(3)
            .warmup(1)
    };
    for (what, options) in [
        (
            "auto injecting the captured fault",
            auto().auto_opens_gpu(true),
        ),
        (
            "auto with no GPU",
            auto().auto_opens_gpu(false).captured_fault(false),
        ),
        (
            "until before the loss",
            auto()
                .auto_opens_gpu(true)
                .captured_fault(false)
                .until(ix.f - 1),
        ),
    ] {
        let whole = replay_with(&sticky, &options);
        let streamed = replay_file(&path, &options).expect("streamed replay");
        assert_eq!(runs(&whole), (3, 1, None), "{what}: whole");
        assert_eq!(runs(&streamed), (3, 1, None), "{what}: streamed");
    }
    // `--until` at the loss keeps it: once, in both.
    let at = auto()
        .auto_opens_gpu(true)
        .captured_fault(false)
        .until(ix.f);
    let whole = replay_with(&sticky, &at);
    let streamed = replay_file(&path, &at).expect("streamed replay");
    for (what, report) in [("whole", whole), ("streamed", streamed)] {
        let (repeat, warmup, note) = runs(&report);
        assert_eq!((repeat, warmup), (1, 0), "until at the loss: {what}");
        assert!(
            note.is_some_and(|n| n.contains(&format!("submission {}: device lost:", ix.f))),
            "until at the loss: {what}"
        );
    }
}

/// A trace of three runtimes, the first and the third of which lost their GPU to a sticky
/// error: on a GPU the first one's replay reproduces its loss, after which the device cannot
/// be used again in the process (CUDA: "the process must be terminated and relaunched"), so
/// a runtime opened after it failed to open (exit 2, the CUDA error named; session 56). The
/// replay runs the one that kept its device (runtime 2) first, then the first sticky one,
/// once; the third is not replayed in this process, each said in a note, in the whole and
/// the streamed replay alike (the streamed one in two passes over the file, in any chunking).
/// The software device here stands for a GPU host (`ReplayOptions::auto_opens_gpu`), as in
/// `a_capture_that_lost_its_gpu_to_a_sticky_error_is_replayed_once_on_a_gpu`.
#[test]
fn the_runtimes_of_a_trace_that_lost_its_gpu_run_before_it_and_a_second_loss_is_not_replayed() {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
    {
        let options = || {
            RuntimeOptions::sim()
                .recorder(recorder.clone())
                .graph_slots(1)
                .trace_digests(hrx::TraceDigests::All)
        };
        let lost = || options().fault("op=2:device-lost".parse().expect("fault"));
        let first = hrx::Runtime::new(lost()).expect("first");
        let kept = hrx::Runtime::new(options()).expect("second");
        let third = hrx::Runtime::new(lost()).expect("third");
        lose_the_download(&first);
        hrx_workloads::run_hazards(&kept).expect("hazards");
        lose_the_download(&third);
    }
    recorder.close().expect("close");
    let trace = Trace::from_bytes(&sink.contents()).expect("trace");
    // Every device loss in CUDA's words for a kernel fault.
    let sticky = rewrite(&trace, |record, _| {
        let error = match record {
            Record::SubmissionDone(d) => &mut d.status,
            Record::RegionDone(d) => &mut d.status,
            _ => return true,
        };
        if let Status::Failed { error } = error
            && error.starts_with("device lost:")
            && !error.contains("quarantined")
        {
            error.push_str(
                "; CUDA cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700); sticky: \
                 CUDA cannot be used again in this process (the driver's rule for a kernel \
                 fault: the process must end)",
            );
        }
        true
    });
    let options = |chunk| {
        ReplayOptions::default()
            .backend(hrx::BackendChoice::Auto)
            .repeat(2)
            .warmup(1)
            .captured_fault(false)
            .auto_opens_gpu(true)
            .chunk_submissions(chunk)
    };
    let (_dir, path) = file(&sticky, "three.hrxt");
    let whole = replay_with(&sticky, &options(2048));
    let mut reports = vec![("whole".to_owned(), whole)];
    for chunk in [2048, 2] {
        let streamed = replay_file(&path, &options(chunk)).expect("streamed replay");
        reports.push((format!("streamed in chunks of {chunk}"), streamed));
    }
    let said = |report: &Report, words: &str| {
        let notes: Vec<&String> = report.notes.iter().filter(|n| n.contains(words)).collect();
        assert!(notes.len() <= 1, "{notes:?}");
        notes.first().map(|n| n.to_string())
    };
    // Runtime ids are the process's: the three in the order they started.
    let ids: Vec<u32> = (sticky.records.iter())
        .filter_map(|r| match r {
            Record::RuntimeStart(start) => Some(start.runtime.0),
            _ => None,
        })
        .collect();
    let [a, b, c] = ids[..] else {
        panic!("{ids:?}")
    };
    let (_, whole) = &reports[0];
    for (what, report) in &reports {
        let order = said(report, "replayed after every other runtime")
            .unwrap_or_else(|| panic!("{what}: {:?}", report.notes));
        assert!(
            order
                == format!(
                    "runtime {a} replayed after every other runtime (runtime {b}): its capture \
                     lost the device to a sticky error, which its replay on a GPU reproduces, \
                     after which the device cannot be used again in the replay's process (the \
                     vendor's rule)"
                ),
            "{what}: {order}"
        );
        let not_run =
            said(report, "not replayed").unwrap_or_else(|| panic!("{what}: {:?}", report.notes));
        assert!(
            not_run.starts_with(&format!(
                "runtime {c}: not replayed, its submissions not compared: its capture lost the \
                 device to a sticky error too (submission "
            )) && not_run.contains(": device lost:")
                && not_run.contains(&format!(
                    "and runtime {a}'s replay reproduces its own loss first"
                ))
                && !not_run.contains("sticky: CUDA"),
            "{what}: {not_run}"
        );
        // Runtime 1 once, without its warm-up; runtime 2 as asked.
        let once = said(report, "replayed once, without a warm-up")
            .unwrap_or_else(|| panic!("{what}: {:?}", report.notes));
        assert!(
            once.starts_with(&format!("runtime {a}: ")),
            "{what}: {once}"
        );
        let runtimes: Vec<(u32, &str, usize)> = (report.trace.runtimes.iter())
            .map(|r| (r.runtime, r.replay_backend.as_str(), r.replayed_submissions))
            .collect();
        assert_eq!(runtimes.len(), 3, "{what}: {runtimes:?}");
        assert_eq!(
            (runtimes[0].1, runtimes[1].1, runtimes[2]),
            ("sim", "sim", (c, "", 0)),
            "{what}"
        );
        assert!(
            runtimes[0].2 > 0 && runtimes[1].2 > 0,
            "{what}: {runtimes:?}"
        );
        // Nothing of runtime 3 compared; the others' rows as in the whole replay.
        assert!(
            !(report.divergences.iter()).any(|d| d.runtime == c),
            "{what}: {:?}",
            report.divergences
        );
        assert_eq!(
            report.summary.submissions, whole.summary.submissions,
            "{what}"
        );
        assert_eq!(
            report.summary.statuses_matched, whole.summary.statuses_matched,
            "{what}"
        );
    }
    // The software device replays every runtime as asked, with no such note.
    let sim = replay_with(&sticky, &options(2048).backend(hrx::BackendChoice::Sim));
    assert!(
        !(sim.notes.iter()).any(|n| n.contains("not replayed") || n.contains("after every other")),
        "{:?}",
        sim.notes
    );
    assert!(sim.trace.runtimes.iter().all(|r| r.replay_backend == "sim"));
}
