//! Host threads and application annotations in the trace (issue 19 points 1 and 2): every
//! thread that submits, waits or runs host callbacks is named once, and its spans and
//! annotations carry its index.

use hrx::{Access, GpuAccess, Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::{self as s, Record};

/// Runs child test `name` with `HRX_TRACE` set, checks it finished, and reads its trace.
fn child_trace(name: &str) -> hrx_capture::Trace {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.hrxt");
    let output = super::failure::run_child(name, &[("HRX_TRACE", path.to_str().unwrap())]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("CHILD done"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    hrx_capture::Trace::from_bytes(&std::fs::read(&path).unwrap()).unwrap()
}

/// The trace's annotation names by id.
fn annotation_names(
    trace: &hrx_capture::Trace,
) -> std::collections::HashMap<s::AnnotationId, &str> {
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationName(n) => Some((n.name, n.text.as_str())),
            _ => None,
        })
        .collect()
}

#[test]
fn annotated_child() {
    if std::env::var_os("HRX_TEST_CHILD").is_none() {
        return;
    }
    // Untraced until the runtime opens the trace: annotations record nothing.
    assert!(!hrx::annotate::range("before the trace").is_recorded());
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    // Still open when the trace closes: recorded to the close as `session (open at end)`.
    let session = hrx::annotate::range("session");
    let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    // The submitting thread's id, once its submit returned.
    let submitted = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let waiter = submitted.clone();
    graph
        .host(&[GpuAccess::new(buffer.whole(), Access::Read)], move |_| {
            // Until the submitter's wait blocks (the submitter asleep once its submit
            // returned, its state in /proc): a fixed 20 ms let a loaded machine run the
            // whole region before `wait` looked, which then recorded no span. A liveness
            // limit, not a time bound.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while !thread_sleeps(waiter.load(std::sync::atomic::Ordering::SeqCst))
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Ok(())
        })
        .unwrap();
    let executable = graph.prepare().unwrap();
    std::thread::Builder::new()
        .name("submitter".into())
        .spawn(move || {
            {
                let decode = hrx::annotate::range("decode");
                assert!(decode.is_recorded());
                let _inner = hrx::annotate::range("inner");
                hrx::annotate::marker("decoded");
            }
            hrx::annotate::counter("frames in flight", 1.5);
            let completion = executable.submit().unwrap();
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            submitted.store(tid, std::sync::atomic::Ordering::SeqCst);
            completion.wait().unwrap();
            hrx::annotate::counter("frames in flight", 0.0);
        })
        .unwrap()
        .join()
        .unwrap();
    drop((buffer, rt));
    // `executable` moved into the thread and dropped there.
    hrx::close_trace().unwrap();
    drop(session);
    println!("CHILD done");
}

/// Whether thread `tid` of this process sleeps (its state in /proc: `S`); false for 0.
fn thread_sleeps(tid: i32) -> bool {
    tid != 0
        && std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
            .ok()
            .and_then(|stat| Some(stat.rsplit(')').next()?.trim_start().starts_with('S')))
            .unwrap_or(false)
}

#[test]
fn submitting_waiting_and_callback_threads_are_named_and_carry_their_spans_and_annotations() {
    let trace = child_trace("runtime::threads::annotated_child");
    let threads: Vec<&s::ThreadName> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::ThreadName(t) => Some(t),
            _ => None,
        })
        .collect();
    let submitter = threads
        .iter()
        .find(|t| t.name == "submitter")
        .expect("the submitting thread is named");
    assert!(submitter.os_tid > 0);
    let mut indices: Vec<u32> = threads.iter().map(|t| t.thread).collect();
    indices.sort_unstable();
    indices.dedup();
    assert_eq!(
        indices.len(),
        threads.len(),
        "one name per thread: {threads:?}"
    );

    let spans: Vec<&s::HostSpan> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::HostSpan(h) => Some(h),
            _ => None,
        })
        .collect();
    let kinds_on = |thread: u32| -> Vec<s::HostSpanKind> {
        spans
            .iter()
            .filter(|h| h.thread == thread)
            .map(|h| h.kind)
            .collect()
    };
    assert_eq!(
        kinds_on(submitter.thread),
        [s::HostSpanKind::Submit, s::HostSpanKind::Wait],
        "{spans:?}"
    );
    let submit = spans[spans
        .iter()
        .position(|h| h.kind == s::HostSpanKind::Submit)
        .unwrap()];
    let wait = spans
        .iter()
        .find(|h| h.kind == s::HostSpanKind::Wait)
        .unwrap();
    assert_eq!(wait.submission, submit.submission);
    assert!(submit.start_ns <= submit.end_ns && submit.end_ns <= wait.start_ns);
    // The callback ran on the Host queue's worker: a span on that thread, the region's own
    // times.
    let callback = spans
        .iter()
        .find(|h| h.kind == s::HostSpanKind::HostCallback)
        .expect("the host callback's span");
    assert_ne!(callback.thread, submitter.thread);
    assert!(threads.iter().any(|t| t.thread == callback.thread));
    let timing = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::RegionTiming(t) if Some(t.region) == callback.region => Some(t),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (callback.start_ns, callback.end_ns),
        (timing.start_ns, timing.end_ns)
    );
    assert!(wait.start_ns <= callback.end_ns && callback.end_ns <= wait.end_ns);

    // Annotations: each name once, on the submitting thread, nested and before the submit.
    let names = annotation_names(&trace);
    // The application's, and the runtime's own host-load counter (set at its start and end
    // where the host says its load).
    let own = s::HOST_LOAD_COUNTER;
    let mut texts: Vec<&str> = names.values().copied().filter(|&n| n != own).collect();
    texts.sort_unstable();
    // A range's name comes with its `(open at end)` name, interned at its first opening.
    assert_eq!(
        texts,
        [
            "decode",
            "decode (open at end)",
            "decoded",
            "frames in flight",
            "inner",
            "inner (open at end)",
            "session",
            "session (open at end)"
        ]
    );
    let ranges: Vec<(&str, &s::AnnotationRange)> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationRange(a) => Some((names[&a.name], a)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ranges.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["inner", "decode", "session (open at end)"],
        "closed innermost first, then the one open at the trace's close"
    );
    let (inner, decode, session) = (ranges[0].1, ranges[1].1, ranges[2].1);
    assert!(
        ranges[..2]
            .iter()
            .all(|(_, a)| a.thread == submitter.thread)
    );
    assert_ne!(session.thread, submitter.thread);
    let end = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::SessionEnd(e) => Some(e.time_ns),
            _ => None,
        })
        .unwrap();
    assert!(session.start_ns <= decode.start_ns && session.end_ns <= end);
    assert!(decode.start_ns <= inner.start_ns && inner.end_ns <= decode.end_ns);
    assert!(decode.end_ns <= submit.start_ns);
    let markers: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationMarker(m) => Some((names[&m.name], m.thread, m.time_ns)),
            _ => None,
        })
        .collect();
    assert_eq!(markers.len(), 1);
    assert_eq!((markers[0].0, markers[0].1), ("decoded", submitter.thread));
    assert!(inner.start_ns <= markers[0].2 && markers[0].2 <= inner.end_ns);
    let samples: Vec<_> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::CounterSample(c) => Some((names[&c.name], c.thread, c.value.0)),
            _ => None,
        })
        .collect();
    let (host_load, samples): (Vec<_>, Vec<_>) = samples.into_iter().partition(|s| s.0 == own);
    assert_eq!(
        samples,
        [
            ("frames in flight", submitter.thread, 1.5),
            ("frames in flight", submitter.thread, 0.0)
        ]
    );
    if std::path::Path::new("/proc/loadavg").exists() {
        assert_eq!(host_load.len(), 2, "{host_load:?}");
        assert!(host_load.iter().all(|s| s.2 >= 0.0), "{host_load:?}");
    }
}

#[test]
fn ranges_open_at_exit_child() {
    if std::env::var_os("HRX_TEST_CHILD").is_none() {
        return;
    }
    let _rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let ranges: Vec<hrx::annotate::Range> = (0..40)
        .map(|i| hrx::annotate::range(&format!("depth{i:02}")))
        .collect();
    assert!(ranges.iter().all(|r| r.is_recorded()));
    println!("CHILD done");
    // `exit` runs this thread's thread-local destructors (its recording state) before the
    // trace's `atexit` close: the open ranges must survive that.
    std::process::exit(0);
}

/// Ranges still open when the program calls `exit` are in the trace, to its close, as
/// `NAME (open at end)`: the innermost 32 of 40 nested ones (a break-it pass found all lost:
/// the thread's state went first, and the outermost 32 were the ones tracked).
#[test]
fn ranges_open_at_exit_are_recorded_to_the_close() {
    let trace = child_trace("runtime::threads::ranges_open_at_exit_child");
    let names = annotation_names(&trace);
    let open: Vec<&str> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationRange(a) => Some(names[&a.name]),
            _ => None,
        })
        .collect();
    let expected: Vec<String> = (8..40)
        .map(|i| format!("depth{i:02} (open at end)"))
        .collect();
    assert_eq!(open, expected);
}
