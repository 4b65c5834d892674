//! Tests of the fatal-signal flush: each runs itself again as a child process that dies of
//! (or survives) a signal, and reads the trace the child left.

use crate::schema::{FatalSignal, Record, RegionIndex, RegionStarted, RuntimeId};
use crate::schema::{SignalWitness, SubmissionIndex};
use crate::{Recorder, RecorderOptions, read_all};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Set in the child process: `MODE PATH`.
const CHILD_ENV: &str = "HRX_CAPTURE_FATAL_CHILD";
const THREADS: u32 = 3;
const PER_THREAD: u64 = 200;

fn started(thread: u32, i: u64) -> Record {
    Record::RegionStarted(RegionStarted {
        runtime: RuntimeId(thread),
        submission: SubmissionIndex(i),
        region: RegionIndex(0),
        time_ns: i,
    })
}

/// The child: records from several threads that stay alive, with a flush period no test
/// reaches, then dies of the signal MODE asks for. Only the fatal-signal flush can write
/// the records.
fn child(mode: &str, path: &str) -> ! {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).unwrap();
    let (done, recorded) = std::sync::mpsc::channel();
    for thread in 0..THREADS {
        let (recorder, done) = (recorder.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..PER_THREAD {
                recorder.record(&started(thread, i));
            }
            done.send(()).unwrap();
            loop {
                std::thread::park();
            }
        });
    }
    for _ in 0..THREADS {
        recorded.recv().unwrap();
    }
    match mode {
        // SAFETY: none: this write to an unmapped page is the crash under test.
        "segv" => unsafe { std::ptr::write_volatile(16 as *mut u64, 1) },
        "abort" => std::process::abort(),
        // SAFETY: raise has no memory preconditions.
        "usr1" => unsafe {
            libc::raise(libc::SIGUSR1);
        },
        // SAFETY: as above.
        "alrm" => unsafe {
            libc::raise(libc::SIGALRM);
        },
        // Two signals at once: both pending on this thread, then let in together. The
        // first's handler runs with the second held back until it passed its own signal on,
        // so the process dies of the first (the lower number) with its records flushed.
        // SAFETY: signal set operations on local sets; raise has no memory preconditions.
        "usr1+alrm" => unsafe {
            let mut both: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut both);
            libc::sigaddset(&mut both, libc::SIGUSR1);
            libc::sigaddset(&mut both, libc::SIGALRM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &both, std::ptr::null_mut());
            libc::raise(libc::SIGUSR1);
            libc::raise(libc::SIGALRM);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &both, std::ptr::null_mut());
        },
        // SAFETY: as above.
        _ => unsafe {
            libc::raise(libc::SIGTERM);
        },
    }
    unreachable!("the signal ends the process");
}

/// The page the program's own handler owns (the survived fault), else 0.
static GUARD_PAGE: AtomicUsize = AtomicUsize::new(0);
const PAGE: usize = 4096;
/// Records before and after the survived signal.
const BEFORE: u64 = 5;
const AFTER: u64 = 7;

/// A program's own SIGSEGV handler, as a JVM's: a fault on its guard page is expected (it
/// makes the page writable and the access repeats); any other is a real crash, met by the
/// default action (put back before returning, as Rust's own handler does).
extern "C" fn program_handler(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    let page = GUARD_PAGE.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo_t; si_addr is valid for a fault.
    let address = unsafe { (*info).si_addr() } as usize;
    // SAFETY: mprotect of the page this test mapped; sigaction with a zeroed (default)
    // action. Both are async-signal-safe.
    unsafe {
        if page != 0 && (page..page + PAGE).contains(&address) {
            libc::mprotect(page as *mut _, PAGE, libc::PROT_READ | libc::PROT_WRITE);
        } else {
            let action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The child of the survival tests: BEFORE records, a signal the program survives (MODE
/// `fault`: a fault its own handler, installed before the recorder, fixes; `sent`: a
/// SIGSEGV sent to it, which Rust's handler returns from), AFTER records, then a
/// real crash (`fault`: a write to address 16; `sent`: the same signal sent again, which
/// now meets the default action). PATH `-`: no recorder (the program alone).
fn survivor(mode: &str, path: &str) -> ! {
    if mode == "fault" {
        // SAFETY: a fresh anonymous mapping, and a handler of the SA_SIGINFO shape.
        unsafe {
            let page = libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(page, libc::MAP_FAILED);
            GUARD_PAGE.store(page as usize, Ordering::SeqCst);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = program_handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            assert_eq!(
                libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()),
                0
            );
        }
    }
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = (path != "-").then(|| Recorder::create(path, options).unwrap());
    let record = |i| {
        if let Some(recorder) = &recorder {
            recorder.record(&started(0, i));
        }
    };
    (0..BEFORE).for_each(record);
    let survive = || match mode {
        // SAFETY: a write to the guard page this test mapped; its handler makes it
        // writable and the write repeats.
        "fault" => unsafe {
            std::ptr::write_volatile(GUARD_PAGE.load(Ordering::SeqCst) as *mut u64, 7);
        },
        // To this thread (`tgkill`): a test runs on a thread other than the process's
        // first, which a process-directed `kill` would reach later, at its own pace.
        // SAFETY: tgkill has no memory preconditions.
        _ => unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                libc::getpid(),
                libc::syscall(libc::SYS_gettid),
                libc::SIGSEGV,
            );
        },
    };
    survive();
    println!("survived");
    (BEFORE..BEFORE + AFTER).for_each(record);
    match mode {
        // SAFETY: none: this write to an unmapped page is the crash under test.
        "fault" => unsafe { std::ptr::write_volatile(16 as *mut u64, 1) },
        _ => survive(),
    }
    println!("survived twice");
    std::process::exit(3);
}

/// Runs test `name` as a child with `spec`; its exit status and standard output.
fn run_child(name: &str, spec: &str) -> (std::process::ExitStatus, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture"])
        .env(CHILD_ENV, spec)
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The survival tests' check: the program survived the first signal and died of the
/// second, as it does without a recorder, and its trace holds every record and one
/// [`FatalSignal`], the last record, for the real crash.
fn check_survivor(mode: &str, test: &str) {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let (alone, out) = run_child(test, &format!("{mode} -"));
    assert_eq!(alone.signal(), Some(libc::SIGSEGV), "{mode} alone: {out}");
    assert!(
        out.contains("survived\n") && !out.contains("survived twice"),
        "{out}"
    );
    let path = dir.path().join("t.hrxt");
    let (status, out) = run_child(test, &format!("{mode} {}", path.display()));
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{mode}: {out}");
    assert!(
        out.contains("survived\n") && !out.contains("survived twice"),
        "{out}"
    );
    let trace = read_all(&path).unwrap();
    let fatal: Vec<&Record> = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::FatalSignal(_)))
        .collect();
    assert_eq!(fatal.len(), 1, "{mode}: one crash, not two: {fatal:?}");
    let expected: Vec<Record> = (0..BEFORE + AFTER).map(|i| started(0, i)).collect();
    let kept: Vec<&Record> = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::RegionStarted(_)))
        .collect();
    assert_eq!(
        kept,
        expected.iter().collect::<Vec<_>>(),
        "{mode}: every record, those after the survived signal too"
    );
    match trace.records.last() {
        Some(Record::FatalSignal(FatalSignal {
            signal: libc::SIGSEGV,
            witness: SignalWitness::Handler,
            fault_address,
            ..
        })) => assert_eq!(
            *fault_address,
            (mode == "fault").then_some(16),
            "{mode}: the real crash's address"
        ),
        other => panic!("{mode}: last record {other:?}"),
    }
}

#[test]
fn a_program_handler_that_survives_a_fault_keeps_the_recorder_for_a_later_crash() {
    const NAME: &str = "writer::fatal::tests::\
                        a_program_handler_that_survives_a_fault_keeps_the_recorder_for_a_later_crash";
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (mode, path) = spec.split_once(' ').unwrap();
        survivor(mode, path);
    }
    check_survivor("fault", NAME);
}

#[test]
fn a_segv_sent_to_a_rust_program_that_survives_it_is_not_a_crash() {
    const NAME: &str =
        "writer::fatal::tests::a_segv_sent_to_a_rust_program_that_survives_it_is_not_a_crash";
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (mode, path) = spec.split_once(' ').unwrap();
        survivor(mode, path);
    }
    check_survivor("sent", NAME);
}

#[test]
fn a_fatal_signal_writes_every_threads_pending_records() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (mode, path) = spec.split_once(' ').unwrap();
        child(mode, path);
    }
    let dir = tempfile::tempdir().unwrap();
    for (mode, signal) in [
        ("segv", libc::SIGSEGV),
        ("abort", libc::SIGABRT),
        ("term", libc::SIGTERM),
        // Signals whose default action ends a program that never expected them.
        ("usr1", libc::SIGUSR1),
        ("alrm", libc::SIGALRM),
        ("usr1+alrm", libc::SIGUSR1),
    ] {
        let path = dir.path().join(format!("{mode}.hrxt"));
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "writer::fatal::tests::a_fatal_signal_writes_every_threads_pending_records",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD_ENV, format!("{mode} {}", path.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal), "{mode}: {status:?}");
        let trace = read_all(&path).unwrap();
        let r = &trace.recovery;
        assert!(!r.closed, "{mode}: {r:?}");
        assert_eq!(
            (r.bytes_discarded, r.skipped_blocks),
            (0, 0),
            "{mode}: {r:?}"
        );
        // Every thread's records, in each thread's order, then the signal.
        for thread in 0..THREADS {
            let mine: Vec<&Record> = trace
                .records
                .iter()
                .filter(|r| r.runtime() == Some(RuntimeId(thread)))
                .collect();
            let expected: Vec<Record> = (0..PER_THREAD).map(|i| started(thread, i)).collect();
            assert_eq!(mine, expected.iter().collect::<Vec<_>>(), "{mode}");
        }
        match trace.records.last() {
            Some(Record::FatalSignal(FatalSignal {
                signal: s,
                witness: SignalWitness::Handler,
                fault_address,
                ..
            })) => {
                assert_eq!(*s, signal, "{mode}");
                assert_eq!(fault_address.is_some(), mode == "segv", "{mode}");
            }
            other => panic!("{mode}: last record {other:?}"),
        }
    }
}

/// A recorder writing `t.hrxt` in `dir` that neither ticks nor gives up holding a job back
/// (an hour each), after `started(0, 0)` and a flush: this thread's ring exists before a
/// test holds the core (registering takes the lock).
fn registered_recorder(dir: &tempfile::TempDir) -> (std::path::PathBuf, Recorder) {
    let path = dir.path().join("t.hrxt");
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(&path, options).unwrap();
    recorder.record(&started(0, 0));
    recorder.flush().unwrap();
    (path, recorder)
}

/// Drives the fatal-signal flush of a SIGTERM with `core` held, as the handler holds it
/// (so that the writer thread cannot run anything first), then closes `recorder` and reads
/// the trace at `path`; returns the flush's note and the trace.
fn flush_at_sigterm(
    recorder: &Recorder,
    mut core: super::super::CoreGuard<'_>,
    path: &std::path::Path,
) -> (Record, crate::reader::Trace) {
    let (note, losses) = super::test_sigterm();
    core.write_on_signal(recorder.handle.shared.signal_fd.unwrap(), &note, losses);
    drop(core);
    recorder.close().unwrap();
    (note, read_all(path).unwrap())
}

/// A deferred job still in a ring when the fatal-signal flush drains it cannot run there:
/// in its place, a `RecordsLost` names the record it would have made, cumulatively, so that
/// every reader says what the trace lacks (a lost host write made replay re-execute later
/// submissions over stale inputs and report a regression: a break-it pass). The flush is
/// driven directly, with the core locked as the handler holds it, so that the writer thread
/// cannot have run the jobs first.
#[test]
fn a_deferred_job_the_flush_cannot_run_leaves_a_loss_at_its_place() {
    use crate::DeferredKind;
    use crate::schema::{LostKind, RecordsLost};
    let dir = tempfile::tempdir().unwrap();
    let (path, recorder) = registered_recorder(&dir);
    let shared = recorder.handle.shared.clone();
    let core = shared.core();
    recorder.record(&started(0, 1));
    recorder.record_deferred_of(DeferredKind::HostWrite, |out| out.record(&started(0, 90)));
    recorder.record(&started(0, 2));
    recorder.record_deferred_of(DeferredKind::OutputDigest, |out| {
        out.record(&started(0, 91));
    });
    recorder.record(&started(0, 3));
    let (note, trace) = flush_at_sigterm(&recorder, core, &path);
    let lost = |host_writes: u64, digests: u64| {
        Record::RecordsLost(RecordsLost {
            time_ns: 7,
            lossy: false,
            total: host_writes + digests,
            by_kind: [
                ("HostWrite", host_writes),
                ("OutputDigest", digests),
                ("unknown", 0),
            ]
            .into_iter()
            .map(|(kind, records)| LostKind {
                kind: kind.into(),
                records,
            })
            .collect(),
        })
    };
    let seen: Vec<&Record> = trace
        .records
        .iter()
        .filter(|r| {
            matches!(
                r,
                Record::RegionStarted(_) | Record::RecordsLost(_) | Record::FatalSignal(_)
            )
        })
        .collect();
    let expected = [
        started(0, 0),
        started(0, 1),
        lost(1, 0),
        started(0, 2),
        lost(1, 1),
        started(0, 3),
        note,
    ];
    assert_eq!(seen, expected.iter().collect::<Vec<_>>());
    let by_kind = trace.recovery.lost.by_kind();
    assert_eq!(
        by_kind,
        [("HostWrite", 1), ("OutputDigest", 1)],
        "{by_kind:?}"
    );
}

/// Records the writer holds back behind a job not ready yet (`Recorder::record_deferred_when`)
/// are written by the fatal-signal flush in their place, before the ring's later ones, the
/// job a loss at its place.
#[test]
fn records_held_behind_a_job_not_ready_are_flushed_at_a_signal() {
    use crate::DeferredKind;
    use crate::schema::RecordsLost;
    let dir = tempfile::tempdir().unwrap();
    let (path, recorder) = registered_recorder(&dir);
    recorder.record(&started(0, 1));
    recorder.record_deferred_when(
        DeferredKind::HostWrite,
        || false,
        |out| out.record(&started(0, 90)),
    );
    recorder.record(&started(0, 2));
    let shared = recorder.handle.shared.clone();
    let held = || {
        shared
            .core()
            .consumers
            .iter()
            .map(|c| c.held.len())
            .sum::<usize>()
    };
    // The job's push woke the writer, which held the job and what follows it back.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while held() == 0 {
        assert!(std::time::Instant::now() < deadline, "never held back");
        std::thread::sleep(Duration::from_millis(1));
    }
    let core = shared.core();
    recorder.record(&started(0, 3));
    let (_, trace) = flush_at_sigterm(&recorder, core, &path);
    let seen: Vec<String> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionStarted(s) => Some(format!("started {}", s.submission.0)),
            Record::RecordsLost(RecordsLost { total, .. }) => Some(format!("lost {total}")),
            Record::FatalSignal(_) => Some("signal".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "started 0",
            "started 1",
            "lost 1",
            "started 2",
            "started 3",
            "signal"
        ]
    );
}

/// The child of [`ranges_open_at_a_crash_are_recorded_to_the_signal`]: the installed
/// recorder, an outer range open on a parked thread and on this one, an inner range closed,
/// then a crash.
fn ranges_child(path: &str) -> ! {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).unwrap();
    crate::install(recorder);
    let (opened, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _decode = crate::open_range("decode");
        opened.send(()).unwrap();
        loop {
            std::thread::park();
        }
    });
    ready.recv().unwrap();
    let _frame = crate::open_range("frame");
    let inner = crate::open_range("inner").unwrap();
    crate::close_range(&inner);
    // SAFETY: none: this write to an unmapped page is the crash under test.
    unsafe { std::ptr::write_volatile(16 as *mut u64, 1) };
    unreachable!("the fault ends the process");
}

/// Ranges open when the process dies of a signal are in the trace, to the signal, as `NAME
/// (open at end)` on their threads; a range closed before is there once, as itself (they
/// were lost: a range was recorded only when it closed).
#[test]
fn ranges_open_at_a_crash_are_recorded_to_the_signal() {
    use crate::schema::{AnnotationId, AnnotationRange};
    use std::os::unix::process::ExitStatusExt;
    const NAME: &str = "writer::fatal::tests::ranges_open_at_a_crash_are_recorded_to_the_signal";
    if let Ok(path) = std::env::var(CHILD_ENV) {
        ranges_child(&path);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    let (status, _) = run_child(NAME, &path.display().to_string());
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    let trace = read_all(&path).unwrap();
    let names: std::collections::HashMap<AnnotationId, String> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationName(n) => Some((n.name, n.text.clone())),
            _ => None,
        })
        .collect();
    let ranges: Vec<(&str, &AnnotationRange)> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::AnnotationRange(a) => Some((names[&a.name].as_str(), a)),
            _ => None,
        })
        .collect();
    let signal_ns = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::FatalSignal(f) => Some(f.time_ns),
            _ => None,
        })
        .expect("the signal");
    let mut seen: Vec<&str> = ranges.iter().map(|(n, _)| *n).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        ["decode (open at end)", "frame (open at end)", "inner"]
    );
    for (name, range) in &ranges {
        assert!(range.start_ns <= range.end_ns, "{name}");
        if name.ends_with("(open at end)") {
            assert_eq!(range.end_ns, signal_ns, "{name}");
        }
    }
    let thread = |n: &str| ranges.iter().find(|(name, _)| *name == n).unwrap().1.thread;
    assert_eq!(thread("frame (open at end)"), thread("inner"));
    assert_ne!(thread("decode (open at end)"), thread("inner"));
}

/// The alternate stack of the calling thread: (size, enabled).
fn alternate_stack() -> (usize, bool) {
    // SAFETY: querying the calling thread's alternate stack only writes `current`.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        assert_eq!(libc::sigaltstack(std::ptr::null(), &mut current), 0);
        (current.ss_size, current.ss_flags & libc::SS_DISABLE == 0)
    }
}

/// The flush's stack (module docs): a thread that records gets an alternate stack of
/// `SIGNAL_STACK_BYTES` (Rust's 8 KiB one overflowed in an unoptimized build on an AVX-512
/// host), given back when the thread ends; only SIGSEGV and SIGBUS run on it, every other
/// signal on the interrupted thread's own stack.
#[test]
fn a_recording_thread_gets_a_signal_stack_the_flush_fits_on() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::create(dir.path().join("t.hrxt"), RecorderOptions::default()).unwrap();
    let thread = {
        let recorder = recorder.clone();
        std::thread::spawn(move || {
            let before = alternate_stack();
            recorder.record(&started(0, 1));
            (before, alternate_stack())
        })
    };
    let (before, after) = thread.join().unwrap();
    assert!(
        before.0 < super::SIGNAL_STACK_BYTES,
        "Rust's own: {before:?}"
    );
    assert_eq!(after, (super::SIGNAL_STACK_BYTES, true));
    for (signal, on_stack) in [
        (libc::SIGSEGV, true),
        (libc::SIGBUS, true),
        (libc::SIGTERM, false),
        (libc::SIGABRT, false),
        (libc::SIGFPE, false),
    ] {
        // SAFETY: querying an action only writes `action`.
        let flags = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut action), 0);
            action.sa_flags
        };
        assert_eq!(flags & libc::SA_ONSTACK != 0, on_stack, "signal {signal}");
    }
    drop(recorder);
}
