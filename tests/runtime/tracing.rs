//! The runtime's trace: what a traced process leaves in its file.
//!
//! Tracing is process-wide (every runtime of a process records into one trace), so the
//! traced work runs in a child process: this test binary again, running `traced_child`.

use hrx::{FaultSpec, Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::{self as s, Record};
use std::collections::BTreeSet;

#[test]
fn traced_child() {
    if std::env::var_os("HRX_TEST_CHILD").is_none() {
        return;
    }
    // Runtime 1 opens the trace from HRX_TRACE; it runs the hazards workload.
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1)).unwrap();
    hrx_workloads::run_hazards(&rt).unwrap();
    // A wait across submissions every time: the hazards workload's depend on timing.
    hrx_workloads::run_held_wait(&rt).unwrap();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    host.write(0, &[7; 64]).unwrap();
    let device = rt.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.copy(device.whole(), host.whole()).unwrap();
    let upload = graph.prepare().unwrap();
    let first = upload.submit().unwrap();
    first.wait().unwrap();
    assert!(upload.submit().is_err());
    drop(first);
    // Runtime 2 joins the same trace; its kernel loses the device.
    let faulty = Runtime::new(
        RuntimeOptions::sim().fault("kernel=hrx_iota:device-lost".parse::<FaultSpec>().unwrap()),
    )
    .unwrap();
    let out = faulty.buffer(256, Placement::GpuLocal).unwrap();
    let iota = faulty.kernel(&hrx::kernels::iota(64, 0, 1)).unwrap();
    let mut graph = faulty.graph();
    graph.gpu(&iota, &[out.whole()]).unwrap();
    let executable = graph.prepare().unwrap();
    assert!(executable.submit().unwrap().wait().is_err());
    drop((executable, out, iota, faulty, upload, host, device, rt));
    hrx::close_trace().unwrap();
    println!("CHILD done");
}

#[test]
fn a_traced_process_records_builds_prepares_submits_timings_failures_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.hrxt");
    let output = super::failure::run_child(
        "runtime::tracing::traced_child",
        &[
            ("HRX_TRACE", path.to_str().unwrap()),
            ("HRX_TRACE_DIGESTS", "all"),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("CHILD done"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let trace = hrx_capture::read_all(&path).unwrap();
    assert!(
        trace.recovery.clean_close && trace.warnings.is_empty(),
        "{:?}",
        trace.recovery
    );
    let records = &trace.records;
    assert!(matches!(records.first(), Some(Record::SessionStart(_))));
    assert!(matches!(records.last(), Some(Record::SessionEnd(_))));
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();

    let runtimes: BTreeSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::RuntimeStart(start) => Some(start.runtime.0),
            _ => None,
        })
        .collect();
    assert_eq!(runtimes.len(), 2, "two runtimes share the trace");
    assert_eq!(count(&|r| matches!(r, Record::RuntimeEnd(_))), 2);
    assert_eq!(count(&|r| matches!(r, Record::Counters(_))), 2);

    // Every prepared region of every submission that ran has a timing and an outcome.
    let submits: Vec<&s::Submit> = records
        .iter()
        .filter_map(|r| {
            if let Record::Submit(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .collect();
    let done = count(&|r| matches!(r, Record::SubmissionDone(_)));
    assert_eq!(submits.len(), done, "every submission retired");
    let timings: Vec<&s::RegionTiming> = records
        .iter()
        .filter_map(|r| {
            if let Record::RegionTiming(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .collect();
    assert!(!timings.is_empty() && timings.iter().all(|t| t.start_ns <= t.end_ns));
    assert!(count(&|r| matches!(r, Record::GraphOp(_))) >= 10);

    // Hazards inside graphs carry kind and range; waits across submissions are explicit.
    let edges: Vec<s::Edge> = records
        .iter()
        .filter_map(|r| {
            if let Record::Prepared(p) = r {
                Some(p)
            } else {
                None
            }
        })
        .flat_map(|p| {
            p.regions
                .iter()
                .flat_map(|r| r.dependencies.iter().chain(&r.internal_edges).copied())
        })
        .collect();
    let kinds: BTreeSet<_> = edges.iter().map(|e| e.kind.abbreviation()).collect();
    assert_eq!(kinds, BTreeSet::from(["RAW", "WAR", "WAW"]));
    assert!(edges.iter().all(|e| e.start < e.end));
    let waits: Vec<&s::CrossWait> = records
        .iter()
        .filter_map(|r| {
            if let Record::CrossWait(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .collect();
    assert!(!waits.is_empty());
    assert!(
        waits
            .iter()
            .all(|w| w.on_submission.0 < w.submission.0 && w.start < w.end)
    );

    // The refused submit, the injected fault and what it took down.
    assert!(
        records
            .iter()
            .any(|r| matches!(r, Record::SubmitRefused(x) if x.kind == s::RefusalKind::Busy))
    );
    let fault = records
        .iter()
        .find_map(|r| {
            if let Record::FaultInjected(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .unwrap();
    assert!(
        fault.description.contains("kernel=hrx_iota:device-lost"),
        "{}",
        fault.description
    );
    let quarantine = records
        .iter()
        .find_map(|r| {
            if let Record::Quarantine(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(
        (quarantine.submission, quarantine.region),
        (fault.submission, fault.region)
    );
    assert_eq!(count(&|r| matches!(r, Record::Poison(_))), 1);
    assert!(records.iter().any(
        |r| matches!(r, Record::RegionDone(x) if matches!(x.status, s::Status::Failed { .. }))
    ));

    // Host writes carry their bytes; output digests are xxh3 of what was written.
    let write = records
        .iter()
        .find_map(|r| {
            if let Record::HostWrite(x) = r {
                (x.len_bytes == 64).then_some(x)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(write.contents, s::Payload::Inline(vec![7; 64]));
    let digest_of_upload = records
        .iter()
        .filter_map(|r| {
            if let Record::OutputDigest(x) = r {
                Some(x)
            } else {
                None
            }
        })
        .find(|d| d.end - d.start == 64 && d.xxh3 == xxhash_rust::xxh3::xxh3_64(&[7; 64]));
    let sixty_four: Vec<_> = records
        .iter()
        .filter_map(|r| {
            if let Record::OutputDigest(x) = r {
                (x.end - x.start == 64).then_some(x)
            } else {
                None
            }
        })
        .collect();
    assert!(
        digest_of_upload.is_some(),
        "the upload's output digest: {sixty_four:?}"
    );
}

#[test]
fn a_runtime_can_record_into_its_own_recorder() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let buffer = rt.buffer(32, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 3).unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    drop((buffer, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let submits = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::Submit(_)))
        .count();
    let timings = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::RegionTiming(_)))
        .count();
    assert_eq!((submits, timings), (1, 1));
    let digest = trace.records.iter().find_map(|r| {
        if let Record::OutputDigest(d) = r {
            Some(d.xxh3)
        } else {
            None
        }
    });
    assert_eq!(digest, Some(xxhash_rust::xxh3::xxh3_64(&[3; 32])));
}

/// A capacity past `u32::MAX` (a program asking for no practical limit) is recorded as
/// `u32::MAX`, not truncated: `1 << 32` was recorded as 0, which `replay` refuses as a
/// runtime that can take no submission, and `(1 << 32) + 5` as 5, a replay's much smaller
/// capacity that would answer `Busy` where the program was not refused.
#[test]
fn a_capacity_past_u32_is_recorded_saturated_not_truncated() {
    for capacity in [1usize << 32, (1 << 32) + 5, usize::MAX] {
        let (recorder, sink) = crate::common::memory_recorder();
        let options = RuntimeOptions::sim()
            .recorder(recorder.clone())
            .capacity(capacity);
        drop(Runtime::new(options).unwrap());
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let recorded = trace.records.iter().find_map(|r| match r {
            Record::RuntimeStart(start) => Some(start.capacity),
            _ => None,
        });
        assert_eq!(recorded, Some(u32::MAX), "capacity {capacity}");
    }
}

#[test]
fn by_default_only_host_observable_outputs_are_digested() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let device = rt.buffer(16, Placement::GpuLocal).unwrap();
    let host = rt.buffer(16, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(device.whole(), 1).unwrap();
    graph.copy(host.whole(), device.whole()).unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    drop((device, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let digested: Vec<u64> = trace
        .records
        .iter()
        .filter_map(|r| {
            if let Record::OutputDigest(d) = r {
                Some(d.buffer.0)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        digested,
        vec![host.id()],
        "the GPU-local intermediate is not digested"
    );
}

/// Contents are hashed and stored on the trace writer's thread, after the call that wrote
/// them returned; the capture fence makes the next writer of the same bytes wait. Back-to-back
/// host writes and regions that overwrite one host-visible buffer must each leave their own
/// bytes in the trace, never a later writer's.
#[test]
fn deferred_captures_keep_each_writers_bytes() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(
        RuntimeOptions::sim()
            .recorder(recorder.clone())
            .trace_contents(true),
    )
    .unwrap();
    const LEN: usize = 200_000; // a blob of its own, not inline
    let host = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let fills: Vec<_> = (0..8u8)
        .map(|value| {
            let mut graph = rt.graph();
            graph.fill(host.whole(), 100 + value).unwrap();
            graph.prepare().unwrap()
        })
        .collect();
    let pattern = |round: u8| -> Vec<u8> {
        (0..LEN)
            .map(|i| (i as u8).wrapping_mul(round | 1).wrapping_add(round))
            .collect()
    };
    for round in 0..8u8 {
        host.write(0, &pattern(round)).unwrap();
        host.write(0, &pattern(round + 50)).unwrap();
        fills[round as usize].submit().unwrap().wait().unwrap();
    }
    drop((fills, host, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let blob = |payload: &s::Payload| -> Vec<u8> {
        match payload {
            s::Payload::Inline(bytes) => bytes.clone(),
            s::Payload::Blob { hash, .. } => trace
                .records
                .iter()
                .find_map(|r| match r {
                    Record::Blob(b) if b.hash == *hash => Some(b.bytes.clone()),
                    _ => None,
                })
                .expect("the blob precedes its record"),
            s::Payload::Omitted { .. } => panic!("contents were asked for"),
        }
    };
    let writes = host_writes(&trace);
    assert_eq!(writes.len(), 16);
    for (i, write) in writes.iter().enumerate() {
        let round = (i / 2) as u8 + if i % 2 == 1 { 50 } else { 0 };
        let bytes = blob(&write.contents);
        assert!(
            bytes == pattern(round),
            "host write {i} holds another writer's bytes"
        );
        assert_eq!(write.xxh3, xxhash_rust::xxh3::xxh3_64(&bytes));
    }
    let digests: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::OutputDigest(d) => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(digests.len(), 8);
    for (round, digest) in digests.iter().enumerate() {
        let expected = vec![100 + round as u8; LEN];
        assert_eq!(
            digest.xxh3,
            xxhash_rust::xxh3::xxh3_64(&expected),
            "fill {round}"
        );
        assert!(blob(&digest.contents) == expected, "fill {round}");
    }
}

/// A frame uploaded again is stored once: every host write names exactly its own bytes, a
/// repeated one by the blob stored the first time.
#[test]
fn repeated_host_writes_name_the_blob_stored_once() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    const LEN: usize = 300_000;
    let host = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let frame = |seed: u8| -> Vec<u8> {
        (0..LEN)
            .map(|i| (i as u8).wrapping_mul(seed | 1) ^ seed)
            .collect()
    };
    let (a, b) = (frame(1), frame(2));
    host.write(0, &a).unwrap();
    // The blob of `a` is in the trace now: the writes of `a` below find it.
    recorder.flush().unwrap();
    let mut expected = vec![a.clone()];
    for round in 0..6u8 {
        let other = frame(10 + round);
        host.write(0, &a).unwrap();
        host.write(0, &other).unwrap();
        host.write(0, &b).unwrap();
        expected.extend([a.clone(), other, b.clone()]);
    }
    drop((host, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let blobs: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => Some(b),
            _ => None,
        })
        .collect();
    let writes = host_writes(&trace);
    assert_eq!(writes.len(), expected.len());
    for (i, (write, bytes)) in writes.iter().zip(&expected).enumerate() {
        let s::Payload::Blob { hash, len_bytes } = &write.contents else {
            panic!("host write {i}: {:?}", write.contents);
        };
        let stored = blobs.iter().find(|b| b.hash == *hash).expect("its blob");
        assert!(&stored.bytes == bytes, "host write {i} names other bytes");
        assert_eq!(
            (write.xxh3, *len_bytes),
            (hash.0, LEN as u64),
            "host write {i}"
        );
    }
    // a, b and the six others, each stored once.
    assert_eq!(blobs.len(), 8);
}

/// A runtime recording into a recorder of its own (not the process's trace) puts region
/// times on that recorder's clock, like every other record: each region ran after its
/// submit and before its submission's completion.
#[test]
fn region_times_share_the_recorders_clock() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let warm = rt.buffer(16, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(warm.whole(), 1).unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    // The recorder's base comes well after the process's first host time.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (recorder, sink) = crate::common::memory_recorder();
    let traced = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let host = traced.buffer(4096, Placement::HostVisible).unwrap();
    let device = traced.buffer(4096, Placement::GpuLocal).unwrap();
    let mut graph = traced.graph();
    graph.fill(device.whole(), 7).unwrap();
    graph.copy(host.whole(), device.whole()).unwrap();
    let executable = graph.prepare().unwrap();
    for _ in 0..5 {
        executable.submit().unwrap().wait().unwrap();
    }
    drop((executable, host, device, traced));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let mut submitted = std::collections::HashMap::new();
    let mut done = std::collections::HashMap::new();
    for record in &trace.records {
        match record {
            Record::Submit(s) => {
                submitted.insert(s.submission, s.time_ns);
            }
            Record::SubmissionDone(d) => {
                done.insert(d.submission, d.time_ns);
            }
            _ => {}
        }
    }
    let timings: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(timings.len(), 10);
    for t in timings {
        let (submit, finished) = (submitted[&t.submission], done[&t.submission]);
        assert!(
            submit <= t.start_ns && t.start_ns <= t.end_ns && t.end_ns <= finished,
            "region {:?} ran {}..{} ns, submitted at {submit}, done at {finished}",
            t.region,
            t.start_ns,
            t.end_ns
        );
    }
}

/// A region that succeeded is done when it ends: its `RegionDone` carries its timing's end
/// (no clock reading of its own) and follows its timing and its output's digest, being
/// recorded by the same thread before the scheduler lock (`record::region_ran`).
#[test]
fn a_succeeded_regions_outcome_is_stamped_at_its_end_after_its_digest() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let host = rt.buffer(256, Placement::HostVisible).unwrap();
    let device = rt.buffer(256, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(device.whole(), 7).unwrap();
    graph.copy(host.whole(), device.whole()).unwrap();
    let executable = graph.prepare().unwrap();
    for _ in 0..20 {
        executable.submit().unwrap().wait().unwrap();
    }
    drop((executable, host, device, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let at = |want: &dyn Fn(&Record) -> bool| trace.records.iter().position(want);
    let mut checked = 0;
    for (i, record) in trace.records.iter().enumerate() {
        let Record::RegionDone(done) = record else {
            continue;
        };
        assert_eq!(done.status, s::Status::Ok);
        let timing = at(&|r| {
            matches!(r, Record::RegionTiming(t)
                if t.submission == done.submission && t.region == done.region)
        })
        .unwrap();
        let Record::RegionTiming(t) = &trace.records[timing] else {
            unreachable!()
        };
        assert_eq!(done.time_ns, t.end_ns, "{done:?} against {t:?}");
        assert!(timing < i);
        if done.region.0 == 1 {
            let digest =
                at(&|r| matches!(r, Record::OutputDigest(d) if d.submission == done.submission))
                    .unwrap();
            assert!(timing < digest && digest < i);
        }
        checked += 1;
    }
    assert_eq!(checked, 40);
}

/// A runtime traced without host writes (a replay's own measuring runtime) records none of
/// them, nor their bytes, and still records the buffers and what else it did.
#[test]
fn a_runtime_traced_without_host_writes_records_none_of_their_bytes() {
    for on in [true, false] {
        let (recorder, sink) = crate::common::memory_recorder();
        let options = RuntimeOptions::sim()
            .recorder(recorder.clone())
            .trace_host_writes(on);
        let rt = Runtime::new(options).unwrap();
        for placement in [Placement::HostVisible, Placement::GpuLocal] {
            let buffer = rt.buffer(4096, placement).unwrap();
            buffer.write(0, &[7; 4096]).unwrap();
        }
        drop(rt);
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let buffers = (trace.records.iter())
            .filter(|r| matches!(r, Record::BufferCreated(_)))
            .count();
        assert_eq!(buffers, 2, "on: {on}");
        assert_eq!(
            host_writes(&trace).len(),
            if on { 2 } else { 0 },
            "on: {on}"
        );
    }
}

/// The trace's host writes, in file order.
fn host_writes(trace: &hrx_capture::Trace) -> Vec<&s::HostWrite> {
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::HostWrite(w) => Some(w),
            _ => None,
        })
        .collect()
}

/// Capture never sits inside a measured time: a region that overwrites an output still being
/// hashed waits at the capture fence before its start time is read, and the wait is a
/// `CaptureFence` span of its own. A small host-visible output is digested with no fence.
#[test]
fn capture_fence_waits_are_spans_of_their_own_outside_region_times() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    // Hashing 16 MiB takes milliseconds; the next submission's fill starts within
    // microseconds of the previous one's end, so it finds the digest still running.
    const LEN: usize = 16 << 20;
    let large = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let small = rt.buffer(256, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(large.whole(), 7).unwrap();
    let fill_large = graph.prepare().unwrap();
    let mut graph = rt.graph();
    graph.fill(small.whole(), 9).unwrap();
    let fill_small = graph.prepare().unwrap();
    for _ in 0..20 {
        fill_large.submit().unwrap().wait().unwrap();
    }
    for _ in 0..20 {
        fill_small.submit().unwrap().wait().unwrap();
    }
    drop((fill_large, fill_small, large, small, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let timing = |submission: s::SubmissionIndex, region: s::RegionIndex| {
        trace
            .records
            .iter()
            .find_map(|r| match r {
                Record::RegionTiming(t) if t.submission == submission && t.region == region => {
                    Some(*t)
                }
                _ => None,
            })
            .expect("the waiting region ran")
    };
    let fences: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::CaptureFence(f) => Some(*f),
            _ => None,
        })
        .collect();
    assert!(!fences.is_empty(), "no region waited at a capture fence");
    // Each wait is on the row of the thread that waited too (issue 19: host threads show
    // their capture-fence waits): a host span of that kind, the same times, a named thread.
    let fence_spans: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::HostSpan(h) if h.kind == s::HostSpanKind::CaptureFence => Some(*h),
            _ => None,
        })
        .collect();
    assert_eq!(fence_spans.len(), fences.len());
    let named: std::collections::BTreeSet<u32> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::ThreadName(t) => Some(t.thread),
            _ => None,
        })
        .collect();
    for fence in &fences {
        let span = fence_spans
            .iter()
            .find(|h| h.submission == fence.submission && h.region == Some(fence.region))
            .expect("the fence's wait is on its thread's row");
        assert_eq!((span.start_ns, span.end_ns), (fence.start_ns, fence.end_ns));
        assert!(
            named.contains(&span.thread),
            "thread {} has no name record",
            span.thread
        );
    }
    for fence in &fences {
        assert!(fence.start_ns <= fence.end_ns);
        let region = timing(fence.submission, fence.region);
        assert!(
            region.start_ns >= fence.end_ns,
            "the capture fence {fence:?} is inside the region's time {region:?}"
        );
    }
    // The small outputs: every one digested, none behind a fence.
    let small_digests = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::OutputDigest(d) if d.end == 256))
        .count();
    assert_eq!(small_digests, 20);
    assert!(fences.iter().all(|f| f.submission.0 < 20 + 20));
    let small_buffer = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::OutputDigest(d) if d.end == 256 => Some(d.buffer),
            _ => None,
        })
        .unwrap();
    assert!(fences.iter().all(|f| f.buffer != small_buffer));
}

/// Capture work is never inside a measured time (issue 17): a large host-visible output is
/// hashed off the region's thread, and that work is a `DigestSpan` of its own, starting after
/// the writing region's recorded end (so the region's time cannot hold the hash); a small one
/// is hashed on the region's thread after its timing was taken (the digest follows the timing
/// in that thread's record order), with no span.
#[test]
fn digest_work_is_a_span_of_its_own_after_the_region_it_digests() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    const LEN: usize = 4 << 20;
    let large = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let small = rt.buffer(256, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(large.whole(), 3).unwrap();
    let fill_large = graph.prepare().unwrap();
    let mut graph = rt.graph();
    graph.fill(small.whole(), 5).unwrap();
    let fill_small = graph.prepare().unwrap();
    for _ in 0..5 {
        fill_large.submit().unwrap().wait().unwrap();
        fill_small.submit().unwrap().wait().unwrap();
    }
    let (large_id, small_id) = (large.id(), small.id());
    drop((fill_large, fill_small, large, small, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let position = |found: &dyn Fn(&Record) -> bool| {
        trace
            .records
            .iter()
            .position(found)
            .expect("the record is in the trace")
    };
    let spans: Vec<s::DigestSpan> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::DigestSpan(d) => Some(*d),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 5, "one span per large output: {spans:?}");
    for span in &spans {
        assert_eq!(
            (span.buffer.0, span.start, span.end),
            (large_id, 0, LEN as u64)
        );
        assert!(span.start_ns <= span.end_ns, "{span:?}");
        let timing = &trace.records[position(
            &|r| matches!(r, Record::RegionTiming(t) if t.submission == span.submission),
        )];
        let Record::RegionTiming(timing) = timing else {
            unreachable!()
        };
        assert!(
            span.start_ns >= timing.end_ns,
            "the digest's work {span:?} began inside its region's time {timing:?}"
        );
        position(&|r| {
            matches!(r, Record::OutputDigest(d)
                if d.submission == span.submission && d.buffer == span.buffer)
        });
    }
    let small_digests: Vec<s::SubmissionIndex> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::OutputDigest(d) if d.buffer.0 == small_id => Some(d.submission),
            _ => None,
        })
        .collect();
    assert_eq!(small_digests.len(), 5);
    for submission in small_digests {
        let timing =
            position(&|r| matches!(r, Record::RegionTiming(t) if t.submission == submission));
        let digest =
            position(&|r| matches!(r, Record::OutputDigest(d) if d.submission == submission));
        assert!(
            timing < digest,
            "submission {submission:?}: digest before its timing"
        );
    }
}

/// A recorded output digest is of the bytes its region wrote, however soon the buffer's next
/// writer follows: large host-visible outputs are hashed after the region's end, off its
/// thread (a hashing thread, or the trace writer when contents are traced), while the next
/// submission's fill of the same bytes is already ready to run and a host write follows each
/// round at once. Four graphs fill one buffer with four values back to back, rounds after
/// rounds; every `OutputDigest` must be the hash of its own submission's value (and every
/// `HostWrite` of what the host wrote), never of a later writer's bytes. Each digest keeps
/// the buffer's bytes fenced until it is taken; without that wait the later fills land
/// while the hash runs (tried: removing the waits fails this test).
#[test]
fn every_output_digest_is_of_its_regions_bytes_though_the_next_writer_follows_at_once() {
    // Over the inline limit (4 KiB), so that hashing is deferred; large enough that a debug
    // build's hash outlasts the next fill's start.
    const LEN: usize = 1 << 20;
    const VALUES: [u8; 4] = [0x11, 0x22, 0x33, 0x44];
    const HOST: u8 = 0x5a;
    const ROUNDS: usize = 12;
    for contents in [false, true] {
        let (recorder, sink) = crate::common::memory_recorder();
        let rt = Runtime::new(
            RuntimeOptions::sim()
                .recorder(recorder.clone())
                .trace_contents(contents),
        )
        .unwrap();
        let buffer = rt.buffer(LEN, Placement::HostVisible).unwrap();
        let host = vec![HOST; LEN];
        let fills: Vec<_> = VALUES
            .iter()
            .map(|&value| {
                let mut graph = rt.graph();
                graph.fill(buffer.whole(), value).unwrap();
                graph.prepare().unwrap()
            })
            .collect();
        for _ in 0..ROUNDS {
            // Back to back: each fill is ordered after the previous one only by the hazard.
            let done: Vec<_> = fills.iter().map(|f| f.submit().unwrap()).collect();
            for completion in done {
                completion.wait().unwrap();
            }
            buffer.write(0, &host).unwrap();
        }
        let id = buffer.id();
        drop((fills, buffer, rt));
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        // Graphs were prepared in `VALUES` order on this thread: their records are in order.
        let prepared: Vec<s::PreparedId> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Prepared(p) => Some(p.prepared),
                _ => None,
            })
            .collect();
        assert_eq!(prepared.len(), VALUES.len());
        let value_of: std::collections::HashMap<s::SubmissionIndex, u8> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Submit(submit) => {
                    let graph = prepared.iter().position(|p| *p == submit.prepared)?;
                    Some((submit.submission, VALUES[graph]))
                }
                _ => None,
            })
            .collect();
        assert_eq!(value_of.len(), ROUNDS * VALUES.len());
        let hashes: Vec<(u8, u64)> = VALUES
            .iter()
            .chain([&HOST])
            .map(|&v| (v, xxhash_rust::xxh3::xxh3_64(&vec![v; LEN])))
            .collect();
        let hash_of = |value: u8| hashes.iter().find(|h| h.0 == value).expect("a value").1;
        let mut digested = BTreeSet::new();
        for record in &trace.records {
            let Record::OutputDigest(d) = record else {
                continue;
            };
            assert_eq!((d.buffer.0, d.start, d.end), (id, 0, LEN as u64));
            let value = value_of[&d.submission];
            assert!(
                d.xxh3 == hash_of(value),
                "contents {contents}: submission {:?} filled {value:#04x}; its digest {:#x} \
                 is of other bytes ({})",
                d.submission,
                d.xxh3,
                hashes
                    .iter()
                    .find(|h| h.1 == d.xxh3)
                    .map_or("unknown".to_string(), |h| format!(
                        "{:#04x}, a later writer's",
                        h.0
                    )),
            );
            if contents {
                assert!(
                    !matches!(d.contents, s::Payload::Omitted { .. }),
                    "{:?}",
                    d.submission
                );
            }
            digested.insert(d.submission);
        }
        assert_eq!(digested.len(), ROUNDS * VALUES.len(), "contents {contents}");
        let writes = host_writes(&trace);
        assert_eq!(writes.len(), ROUNDS, "contents {contents}");
        for write in writes {
            assert_eq!(write.xxh3, hash_of(HOST), "contents {contents}: {write:?}");
        }
    }
}

/// Issue 20 point 2: on the software device every operation of a traced native graph and of
/// a copy batch is timed as it runs: one `OpTiming` per operation, naming its graph node,
/// inside its region's host span, in node order without overlap, host-measured (no device
/// span). A failed graph keeps the operations timed up to the fault, the failing one last;
/// an untraced runtime's streams time nothing (nothing to record them).
#[test]
fn the_software_device_times_every_operation_of_a_traced_native_graph() {
    let (recorder, sink) = crate::common::memory_recorder();
    let options = RuntimeOptions::sim()
        .fault("kernel=hrx_iota:device-lost".parse::<FaultSpec>().unwrap())
        .recorder(recorder.clone());
    let rt = Runtime::new(options).unwrap();
    let host = rt.buffer(4096, Placement::HostVisible).unwrap();
    let (a, b) = (
        rt.buffer(4096, Placement::GpuLocal).unwrap(),
        rt.buffer(4096, Placement::GpuLocal).unwrap(),
    );
    let mut graph = rt.graph();
    // Node 0, 1: an upload batch of two copies; nodes 2-4: a native graph (fill, copy,
    // fill); node 5: a download.
    graph
        .copy(a.view(0..2048).unwrap(), host.view(0..2048).unwrap())
        .unwrap();
    graph
        .copy(a.view(2048..4096).unwrap(), host.view(2048..4096).unwrap())
        .unwrap();
    graph.fill(b.view(0..1024).unwrap(), 3).unwrap();
    graph
        .copy(b.view(1024..4096).unwrap(), a.view(1024..4096).unwrap())
        .unwrap();
    graph.fill(b.view(0..512).unwrap(), 4).unwrap();
    graph.copy(host.whole(), b.whole()).unwrap();
    let pipeline = graph.prepare().unwrap();
    for _ in 0..3 {
        pipeline.submit().unwrap().wait().unwrap();
    }
    let iota = rt.kernel(&hrx::kernels::iota(64, 0, 1)).unwrap();
    let mut graph = rt.graph();
    graph.fill(a.view(0..256).unwrap(), 1).unwrap();
    graph.gpu(&iota, &[a.view(0..256).unwrap()]).unwrap();
    graph.fill(a.view(256..512).unwrap(), 2).unwrap();
    let failing = graph.prepare().unwrap();
    assert!(failing.submit().unwrap().wait().is_err());
    drop((pipeline, failing, iota, host, a, b, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    // The trace says how the operations were timed, right after the runtime's start.
    let start = trace
        .records
        .iter()
        .position(|r| matches!(r, Record::RuntimeStart(_)))
        .expect("a runtime");
    assert!(
        matches!(
            &trace.records[start + 1],
            Record::OpTimes(o) if o.source == hrx_capture::schema::OpTimeSource::Host
        ),
        "{:?}",
        trace.records.get(start + 1)
    );
    let prepared: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Prepared(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let submits: std::collections::BTreeMap<_, _> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some((s.submission, s.prepared)),
            _ => None,
        })
        .collect();
    let regions: std::collections::BTreeMap<_, _> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some(((t.submission, t.region), *t)),
            _ => None,
        })
        .collect();
    let mut ops: std::collections::BTreeMap<_, Vec<s::OpTiming>> = Default::default();
    for r in &trace.records {
        if let Record::OpTiming(o) = r {
            ops.entry((o.timing.submission, o.timing.region))
                .or_default()
                .push(*o);
        }
    }
    let mut timed_regions = 0;
    for (&(submission, region), timing) in &regions {
        let prepared = prepared
            .iter()
            .find(|p| p.prepared == submits[&submission])
            .unwrap();
        let shape = &prepared.regions[region.0 as usize];
        let ops = ops.get(&(submission, region)).cloned().unwrap_or_default();
        let failed = prepared.prepared != submits[&s::SubmissionIndex(1)];
        match shape.kind {
            s::RegionKind::NativeGraph | s::RegionKind::CopyBatch => {
                let nodes: Vec<_> = ops.iter().map(|o| o.node).collect();
                if failed {
                    // fill, then iota fails: two operations timed, the failing one last.
                    assert_eq!(nodes, shape.nodes[..2], "{submission} {region}");
                } else {
                    assert_eq!(nodes, shape.nodes, "{submission} {region}");
                }
                let mut previous_end = timing.start_ns;
                for op in &ops {
                    assert_eq!(
                        op.timing.device, None,
                        "host-measured on the software device"
                    );
                    assert!(
                        op.timing.start_ns >= previous_end,
                        "{op:?} overlaps or precedes"
                    );
                    assert!(op.timing.start_ns <= op.timing.end_ns);
                    previous_end = op.timing.end_ns;
                }
                assert!(
                    previous_end <= timing.end_ns,
                    "operations inside their region"
                );
                timed_regions += 1;
            }
            _ => assert!(ops.is_empty()),
        }
    }
    // Three pipelines of three regions (upload, compute, download), then the failing graph.
    assert_eq!(timed_regions, 3 * 3 + 1);
    let region_kinds: Vec<_> = prepared[0]
        .regions
        .iter()
        .map(|r| (r.kind, r.nodes.len()))
        .collect();
    assert_eq!(
        region_kinds,
        [
            (s::RegionKind::CopyBatch, 2),
            (s::RegionKind::NativeGraph, 3),
            (s::RegionKind::CopyBatch, 1)
        ]
    );
}

/// A thread that submits and waits from a thread-local's destructor, after it first
/// recorded: the runtime's and the recorder's thread-locals are gone by then (destroyed in
/// the reverse order of their first use). Run by
/// `a_thread_may_submit_and_wait_in_a_thread_locals_destructor` in a child process, as a
/// panic there aborts the process; prints each host span's thread and each thread's name.
#[test]
fn thread_local_destructor_child() {
    if std::env::var_os("HRX_TEST_TLS_CHILD").is_none() {
        return;
    }
    struct Late(Option<hrx::ExecutableGraph>);
    impl Drop for Late {
        fn drop(&mut self) {
            if let Some(graph) = self.0.take() {
                for _ in 0..20 {
                    graph.submit().unwrap().wait().unwrap();
                }
            }
        }
    }
    thread_local! {
        static LATE: std::cell::RefCell<Late> = const { std::cell::RefCell::new(Late(None)) };
    }
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let graph = |rt: &Runtime| {
        let host = rt.buffer(64, Placement::HostVisible).unwrap();
        let device = rt.buffer(64, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        graph.copy(device.whole(), host.whole()).unwrap();
        graph.fill(device.whole(), 1).unwrap();
        graph.copy(host.whole(), device.whole()).unwrap();
        graph.prepare().unwrap()
    };
    let (first, late) = (graph(&rt), graph(&rt));
    std::thread::Builder::new()
        .name("exiting".into())
        .spawn(move || {
            // The graph's thread-local first, then the runtime's and the recorder's.
            LATE.with(|l| l.borrow_mut().0 = Some(late));
            for _ in 0..5 {
                first.submit().unwrap().wait().unwrap();
            }
        })
        .unwrap()
        .join()
        .unwrap();
    drop(rt);
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    for record in &trace.records {
        match record {
            Record::HostSpan(span) if span.kind != s::HostSpanKind::HostCallback => {
                println!("span {:?} thread {}", span.kind, span.thread);
            }
            Record::ThreadName(name) => println!("name {} {}", name.thread, name.name),
            _ => {}
        }
    }
}

#[test]
fn a_thread_may_submit_and_wait_in_a_thread_locals_destructor() {
    let output = super::failure::run_child(
        "runtime::tracing::thread_local_destructor_child",
        &[("HRX_TEST_TLS_CHILD", "1")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Traced, the waiting thread's buffer of operation times was read after its
    // destruction: a panic in a destructor, which aborts.
    assert!(
        output.status.success(),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let submits = stdout.matches("span Submit thread ").count();
    assert_eq!(submits, 25, "{stdout}");
    // Each span names the thread that submitted and waited, by its index, in its destructor
    // too (it read `u32::MAX` there before: the recorder's thread-local state was gone).
    let exiting: Vec<&str> = stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .filter(|w| w[0] == "name" && w[2] == "exiting")
        .map(|w| w[1])
        .collect();
    let threads: BTreeSet<&str> = stdout
        .split("span ")
        .skip(1)
        .filter_map(|s| s.split_whitespace().nth(2))
        .collect();
    assert_eq!(exiting.len(), 1, "{stdout}");
    assert_eq!(threads, BTreeSet::from([exiting[0]]), "{stdout}");
}

/// A trace the program names that the runtime cannot open fails `Runtime::new` with one line
/// naming it quoted and escaped where it holds control characters (`cannot open trace
/// "no\u{1b}[1mdir\n/t.hrxt": ...`): the name was printed raw, a newline splitting the
/// error and an escape sequence reaching the terminal (a break-it pass).
#[test]
fn a_trace_the_runtime_cannot_open_is_named_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no\u{1b}[1mdir\n").join("t.hrxt");
    let error = Runtime::new(RuntimeOptions::sim().trace(&path))
        .err()
        .expect("a trace in a folder that is not there cannot be opened")
        .to_string();
    assert!(
        !error.contains('\n') && !error.contains('\u{1b}'),
        "{error:?}"
    );
    assert!(
        error.contains(r#"cannot open trace ""#) && error.contains(r#"no\u{1b}[1mdir\n/t.hrxt""#),
        "{error:?}"
    );
}
