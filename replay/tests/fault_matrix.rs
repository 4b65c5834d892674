//! The fault matrix: every device operation of the `pipeline` workload, failed once with a
//! device loss and once with a kernel error, on the software device.
//!
//! Two frames of 24x16 pixels give 20 device operations (per frame: the upload copy, five
//! kernels and a fill in the native graph, two download copies, the NPU threshold). Each
//! operation index `op=1..=20` is failed with each fault kind, with one frame in flight
//! (the operation order is then fixed, so the case names the exact operation it fails)
//! and with two (frames overlap across queues; which operation `op=N` hits then depends
//! on timing, and the checks read it from the trace's `FaultInjected` record): 80 cases.
//!
//! Each case runs under a watchdog (no deadlock: the case fails after 60 s), then checks
//! the outcome rule of its fault kind against the trace, probes the runtime afterwards,
//! and replays the trace with hrx-replay, which must reproduce every status and
//! quarantine (exit 0).
//!
//! # The outcome rule
//!
//! For the failed region R of submission S (the one `FaultInjected` names):
//!
//! - both kinds: R's `RegionDone` and S's `SubmissionDone` are `Failed` with the injected
//!   error; regions of S before R (the pipeline's regions form a chain) succeeded and every
//!   region after R is `Cancelled` without running (no `RegionTiming`); the pipeline's run
//!   answers the error; every submission and region has exactly one completion record.
//! - both kinds, when R is a copy batch: its lane's copy stream is marked unhealthy (one
//!   `CopyStreamUnhealthy`; the seed does so on every error of a batch), and every later
//!   copy region on that lane fails with `DeviceLost` ("copy stream is quarantined"), a
//!   refusal before any copy: it quarantines nothing and poisons nothing (the seed's
//!   `Operation::run` refuses it before it issues a copy, as it refuses a poisoned input). No
//!   other submission fails.
//! - `kernel-error` (known extent): no `Quarantine` or `Poison` for S itself; when R is not
//!   a copy batch every other submission succeeds and the pipeline runs again.
//! - `device-lost` (uncertain extent): S's prepared graph is quarantined (one `Quarantine`
//!   naming S and R) and exactly the buffers R writes are poisoned (one `Poison` each,
//!   "poisoned by submission S region R"); the pipeline cannot run again (`DeviceLost`).

use crate::common::*;
use hrx::{Error, FaultSpec, RuntimeOptions};
use hrx_capture::Trace;
use hrx_capture::schema::{self as s, Record, Status};
use hrx_replay::ReplayOptions;
use hrx_workloads::{Pipeline, PipelineOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;
use std::time::Duration;

const FRAMES: usize = 2;
const OPERATIONS_PER_FRAME: u64 = 10;
const WATCHDOG: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    DeviceLost,
    KernelError,
}

impl Kind {
    fn spec(self, op: u64) -> FaultSpec {
        let kind = match self {
            Kind::DeviceLost => "device-lost",
            Kind::KernelError => "kernel-error",
        };
        format!("op={op}:{kind}").parse().expect("fault spec")
    }
}

/// What one case produced.
struct Case {
    name: String,
    trace: Trace,
    first: hrx::Result<usize>,
    second: hrx::Result<usize>,
}

/// Runs the pipeline twice (two frames each) on a runtime with `fault`, traced; the second
/// run probes what the failure left behind.
fn run_case(kind: Kind, op: u64, in_flight: usize) -> Case {
    let name = format!("op={op} {kind:?} in_flight={in_flight}");
    let (tx, rx) = mpsc::channel();
    let thread_name = name.clone();
    std::thread::Builder::new()
        .name(thread_name)
        .spawn(move || {
            let frames: Vec<_> = (0..FRAMES as u32).map(|i| synthetic(24, 16, i)).collect();
            let options = RuntimeOptions::sim()
                .fault(kind.spec(op))
                .trace_digests(hrx::TraceDigests::All);
            let (trace, (first, second)) = record(options, |rt| {
                let options = PipelineOptions {
                    frames_in_flight: in_flight,
                    threshold: 64,
                    ..PipelineOptions::default()
                };
                let mut pipeline = Pipeline::new(rt, 24, 16, options).expect("pipeline");
                let mut run = || {
                    let mut delivered = 0;
                    pipeline
                        .run(frames.iter().cloned(), |_, _| delivered += 1)
                        .map(|_| delivered)
                };
                let first = run();
                assert!(rt.fault_fired(), "the fault fired");
                let second = run();
                (first, second)
            });
            let _ = tx.send((trace, first, second));
        })
        .expect("spawn");
    let (trace, first, second) = rx
        .recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{name}: deadlock or panic (no result within {WATCHDOG:?})"));
    Case {
        name,
        trace,
        first,
        second,
    }
}

/// The trace, indexed.
struct Index<'t> {
    prepared: BTreeMap<u64, &'t s::Prepared>,
    /// Submission -> prepared id, in submission order.
    submits: BTreeMap<u64, u64>,
    regions: BTreeMap<(u64, u32), Vec<&'t Status>>,
    timed: BTreeSet<(u64, u32)>,
    submissions: BTreeMap<u64, Vec<&'t Status>>,
}

fn index(trace: &Trace) -> Index<'_> {
    let mut index = Index {
        prepared: BTreeMap::new(),
        submits: BTreeMap::new(),
        regions: BTreeMap::new(),
        timed: BTreeSet::new(),
        submissions: BTreeMap::new(),
    };
    for record in &trace.records {
        match record {
            Record::Prepared(p) => {
                index.prepared.insert(p.prepared.0, p);
            }
            Record::Submit(x) => {
                index.submits.insert(x.submission.0, x.prepared.0);
            }
            Record::RegionDone(d) => index
                .regions
                .entry((d.submission.0, d.region.0))
                .or_default()
                .push(&d.status),
            Record::RegionTiming(t) => {
                assert!(
                    index.timed.insert((t.submission.0, t.region.0)),
                    "one timing per region"
                );
            }
            Record::SubmissionDone(d) => index
                .submissions
                .entry(d.submission.0)
                .or_default()
                .push(&d.status),
            _ => {}
        }
    }
    index
}

fn failed(status: &Status) -> Option<&str> {
    match status {
        Status::Failed { error } => Some(error),
        _ => None,
    }
}

/// Buffers a region writes.
fn written(region: &s::Region) -> BTreeSet<u64> {
    region
        .uses
        .iter()
        .filter(|u| matches!(u.access, s::Access::Write | s::Access::ReadWrite))
        .map(|u| u.buffer.0)
        .collect()
}

/// Checks the outcome rule (module docs) against the trace; returns the failed operation's
/// description, for the coverage check.
fn check_rule(case: &Case, kind: Kind) -> String {
    let name = &case.name;
    let trace = &case.trace;
    let ix = index(trace);
    let faults: Vec<_> = crate::records!(trace, FaultInjected).collect();
    assert_eq!(faults.len(), 1, "{name}: the fault fires exactly once");
    let fault = faults[0];
    let s_fail = fault.submission.expect("fault names its submission").0;
    let r_fail = fault.region.expect("fault names its region").0;
    let prepared = ix.prepared[&ix.submits[&s_fail]];
    let failed_region = &prepared.regions[r_fail as usize];

    // Every submission and region retired exactly once.
    for (&submission, &graph) in &ix.submits {
        let done = ix.submissions.get(&submission).map_or(0, Vec::len);
        assert_eq!(done, 1, "{name}: SubmissionDone of submission {submission}");
        for region in 0..ix.prepared[&graph].regions.len() as u32 {
            let statuses = ix.regions.get(&(submission, region)).map_or(0, Vec::len);
            assert_eq!(statuses, 1, "{name}: RegionDone of {submission}/{region}");
            let ran = !matches!(
                ix.regions[&(submission, region)][0],
                Status::Cancelled { .. }
            );
            assert_eq!(
                ix.timed.contains(&(submission, region)),
                ran,
                "{name}: a region is timed iff it ran ({submission}/{region})"
            );
        }
    }

    // The failed submission: earlier regions succeeded, R failed, later ones cancelled.
    let message = failed(ix.regions[&(s_fail, r_fail)][0])
        .unwrap_or_else(|| panic!("{name}: region {r_fail} of {s_fail} failed"));
    assert!(message.contains("injected fault"), "{name}: {message}");
    assert_eq!(
        failed(ix.submissions[&s_fail][0]),
        Some(message),
        "{name}: the submission fails with the region's error"
    );
    for region in 0..prepared.regions.len() as u32 {
        let status = ix.regions[&(s_fail, region)][0];
        match region.cmp(&r_fail) {
            std::cmp::Ordering::Less => assert_eq!(*status, Status::Ok, "{name}: {region}"),
            std::cmp::Ordering::Equal => {}
            std::cmp::Ordering::Greater => assert!(
                matches!(status, Status::Cancelled { reason } if reason.contains(&format!("region {r_fail} of submission {s_fail} failed"))),
                "{name}: region {region} after the failure is cancelled: {status:?}"
            ),
        }
    }

    let quarantines: Vec<_> = crate::records!(trace, Quarantine).collect();
    let poisons: Vec<_> = crate::records!(trace, Poison).collect();
    let unhealthy: Vec<_> = crate::records!(trace, CopyStreamUnhealthy).collect();
    let other_failures: Vec<(u64, &str)> = ix
        .submissions
        .iter()
        .filter(|(submission, _)| **submission != s_fail)
        .filter_map(|(submission, statuses)| match statuses[0] {
            Status::Ok => None,
            Status::Failed { error } => Some((*submission, error.as_str())),
            Status::Cancelled { reason } => {
                panic!("{name}: submission {submission} cancelled: {reason}")
            }
        })
        .collect();

    // When R is a copy batch, its lane's copy stream is unhealthy whatever the kind (the
    // seed sets `healthy = false` on every error of a batch): every other failed submission
    // is a later copy region on that lane answering `DeviceLost`, a refusal that quarantines
    // and poisons nothing.
    let copy_lane = (failed_region.kind == s::RegionKind::CopyBatch).then_some(failed_region.queue);
    let mut expected_quarantines = Vec::new();
    let mut expected_poison: BTreeSet<(u64, String)> = BTreeSet::new();
    if kind == Kind::DeviceLost {
        expected_quarantines.push((prepared.prepared.0, s_fail, r_fail));
        expected_poison.extend(written(failed_region).into_iter().map(|b| {
            (
                b,
                format!("poisoned by submission {s_fail} region {r_fail} "),
            )
        }));
    }
    for &(submission, error) in &other_failures {
        let lane = copy_lane
            .unwrap_or_else(|| panic!("{name}: submission {submission} failed too: {error}"));
        assert!(
            error.contains("copy stream is quarantined"),
            "{name}: {submission}: {error}"
        );
        let graph = ix.prepared[&ix.submits[&submission]];
        let (region, _) = graph
            .regions
            .iter()
            .enumerate()
            .find(|(r, _)| failed(ix.regions[&(submission, *r as u32)][0]).is_some())
            .expect("a failed region");
        assert_eq!(graph.regions[region].queue, lane, "{name}: same lane");
    }
    let got: Vec<_> = quarantines
        .iter()
        .map(|q| {
            (
                q.prepared.0,
                q.submission.expect("submission").0,
                q.region.expect("region").0,
            )
        })
        .collect();
    assert_eq!(
        got.iter().collect::<BTreeSet<_>>(),
        expected_quarantines.iter().collect::<BTreeSet<_>>(),
        "{name}: quarantines"
    );
    assert_eq!(got.len(), expected_quarantines.len(), "{name}: one each");
    assert_eq!(
        poisons.len(),
        expected_poison.len(),
        "{name}: one Poison per written buffer: {poisons:?}"
    );
    for (buffer, cause) in &expected_poison {
        assert!(
            poisons
                .iter()
                .any(|p| p.buffer.0 == *buffer && p.cause.starts_with(cause.as_str())),
            "{name}: buffer {buffer} {cause}: {poisons:?}"
        );
    }
    let lanes: Vec<_> = unhealthy.iter().map(|u| u.lane).collect();
    let expected_lanes: Vec<_> = copy_lane
        .map(|q| match q {
            s::Queue::GpuUpload => s::Lane::Upload,
            s::Queue::GpuDownload => s::Lane::Download,
            _ => s::Lane::Compute,
        })
        .into_iter()
        .collect();
    assert_eq!(lanes, expected_lanes, "{name}: unhealthy copy streams");

    match kind {
        Kind::KernelError => {
            assert!(message.contains("kernel-error"), "{name}: {message}");
            assert!(
                matches!(&case.first, Err(Error::Kernel(m)) if m.contains("injected fault")),
                "{name}: {:?}",
                case.first
            );
            if copy_lane.is_some() {
                assert!(
                    matches!(&case.second, Err(e) if e.is_device_loss()),
                    "{name}: the pipeline's copies on the unhealthy lane fail: {:?}",
                    case.second
                );
            } else {
                assert_eq!(
                    case.second.as_ref().ok(),
                    Some(&FRAMES),
                    "{name}: the pipeline runs again"
                );
            }
        }
        Kind::DeviceLost => {
            assert!(message.contains("device-lost"), "{name}: {message}");
            assert!(
                matches!(&case.first, Err(e) if e.is_device_loss()),
                "{name}: {:?}",
                case.first
            );
            assert!(
                matches!(&case.second, Err(e) if e.is_device_loss()),
                "{name}: the quarantined pipeline does not run again: {:?}",
                case.second
            );
        }
    }
    fault.description.clone()
}

/// Replays the case's trace: every captured status and quarantine must come back.
fn check_replay(case: &Case) {
    let report = hrx_replay::replay(&case.trace, &ReplayOptions::default())
        .unwrap_or_else(|e| panic!("{}: replay failed: {e}", case.name));
    // Statuses, refusals, quarantines and every output digest must all come back.
    assert_eq!(
        report.exit_code(),
        0,
        "{}: {:?}\n{}",
        case.name,
        report.divergences,
        report.to_text()
    );
    let replayed = crate::records!(case.trace, Submit).count();
    assert_eq!(report.submissions.len(), replayed, "{}", case.name);
    for row in &report.submissions {
        assert!(row.captured.is_some(), "{}: {row:?}", case.name);
        assert_eq!(row.captured, row.replayed, "{}: {row:?}", case.name);
    }
    assert!(
        report
            .submissions
            .iter()
            .any(|r| r.replayed_error.contains("injected fault")),
        "{}: the replay injects the fault",
        case.name
    );
}

fn matrix(in_flight: usize) -> usize {
    let mut described = BTreeSet::new();
    let mut cases = 0;
    for kind in [Kind::DeviceLost, Kind::KernelError] {
        for op in 1..=FRAMES as u64 * OPERATIONS_PER_FRAME {
            let case = run_case(kind, op, in_flight);
            let description = check_rule(&case, kind);
            assert!(
                description.contains(&format!("at device operation {op} ")),
                "{}: {description}",
                case.name
            );
            described.insert(
                description
                    .split_once(" (")
                    .map(|(_, what)| what.to_string())
                    .unwrap_or_default(),
            );
            check_replay(&case);
            cases += 1;
        }
    }
    // Every kind of operation was failed: copies, the fill, the five kernels, the NPU run.
    for what in [
        "copy)",
        "fill)",
        "hrx_rgb_to_gray)",
        "hrx_blur_h)",
        "hrx_blur_v)",
        "hrx_sobel)",
        "hrx_histogram256)",
        "hrx_npu_threshold)",
    ] {
        assert!(
            described.contains(what),
            "{what} not covered: {described:?}"
        );
    }
    cases
}

#[test]
fn every_pipeline_operation_fails_with_the_documented_outcome_serially() {
    assert_eq!(matrix(1), 40);
}

#[test]
fn every_pipeline_operation_fails_with_the_documented_outcome_with_frames_overlapping() {
    assert_eq!(matrix(2), 40);
}
