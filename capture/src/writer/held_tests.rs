//! Break-it tests of `Recorder::record_deferred_when`: a job not ready holds its thread's
//! later records back (`Consumer::held`).

use super::tests::{memory_recorder, read, timing};
use super::*;
use crate::reader::Trace;
use crate::schema::{Blob, BlobHash};
use std::sync::atomic::{AtomicBool, AtomicUsize};

fn timings_in_order(trace: &Trace) -> Vec<(u32, u64)> {
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some((t.runtime.0, t.submission.0)),
            _ => None,
        })
        .collect()
}

fn held(rec: &Recorder) -> usize {
    let core = rec.handle.shared.core();
    core.consumers.iter().map(|c| c.held.len()).sum::<usize>()
}

/// Polls `done` for at most `secs` seconds; whether it held.
fn within(secs: u64, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Queues a job that is never ready on this thread, between timings (0, first) and
/// (0, first + 1); returns the flag set when it ran.
fn never_ready(rec: &Recorder, first: u64) -> Arc<AtomicBool> {
    let ran = Arc::new(AtomicBool::new(false));
    let has_run = ran.clone();
    rec.record(&timing(0, first));
    rec.record_deferred_when(
        crate::DeferredKind::Other,
        || false,
        move |out| {
            has_run.store(true, Ordering::SeqCst);
            out.record(&timing(1, first));
        },
    );
    rec.record(&timing(0, first + 1));
    ran
}

/// Without any flush or tick, the writer runs a job that never becomes ready once its hold
/// limit has passed (a fatal signal soon after then finds its records written).
#[test]
fn a_never_ready_job_runs_after_the_hold_limit() {
    let (rec, sink) = memory_recorder(RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        ..RecorderOptions::default()
    });
    let ran = never_ready(&rec, 1);
    assert!(within(120, || ran.load(Ordering::SeqCst)), "never ran");
    assert!(within(120, || held(&rec) == 0), "records still held");
    rec.close().unwrap();
    assert_eq!(timings_in_order(&read(&sink)), [(0, 1), (1, 1), (0, 2)]);
}

/// Without any flush, the periodic flush runs a job that never becomes ready.
#[test]
fn a_never_ready_job_runs_at_the_periodic_flush() {
    let options = RecorderOptions {
        flush_interval: Duration::from_millis(50),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let ran = never_ready(&rec, 1);
    assert!(
        within(120, || ran.load(Ordering::SeqCst)),
        "the tick never ran it"
    );
    assert!(within(120, || held(&rec) == 0));
    rec.close().unwrap();
    assert_eq!(timings_in_order(&read(&sink)), [(0, 1), (1, 1), (0, 2)]);
}

/// The periodic flush still runs a job not ready while the writer is woken all the time (a
/// busy lossy program: three threads recording as fast as they can keep a wake queued).
/// `recv_deadline` returns a queued message before it looks at the deadline, so a writer
/// that always has a wake queued did not reach its 50 ms tick for 3-7 s (2 cores): the job,
/// and every record its thread made after it, stayed held that long (nor was anything
/// flushed or calibrated meanwhile). Counted, not timed (a 1 s bound on the job's run was a
/// race on a loaded machine): the writer handles at most one message once its tick is due,
/// however many wakes are queued; the old writer handled them until the channel ran dry.
#[test]
fn a_never_ready_job_runs_at_the_periodic_flush_under_constant_wakes() {
    let options = RecorderOptions {
        flush_interval: Duration::from_millis(50),
        hold_limit: Duration::from_secs(3600),
        mode: TraceMode::Lossy,
        ..RecorderOptions::default()
    };
    let (rec, _sink) = memory_recorder(options);
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..3)
        .map(|t| {
            let (rec, stop) = (rec.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    rec.record(&timing(10 + t, i));
                    i += 1;
                }
            })
        })
        .collect();
    let most = || {
        rec.handle
            .shared
            .most_handled_past_tick
            .load(Ordering::Relaxed)
    };
    // The busy threads under way first (not a bound: the count below waits for them).
    std::thread::sleep(Duration::from_millis(200));
    let ran = never_ready(&rec, 1);
    // Ran (by the tick: the hold limit is an hour away), and a tick came due while a wake
    // was queued at least once, so that the count below says something.
    let ran_and_busy = within(120, || ran.load(Ordering::SeqCst) && most() > 0);
    stop.store(true, Ordering::Relaxed);
    for thread in busy {
        thread.join().unwrap();
    }
    rec.close().unwrap();
    assert!(
        ran.load(Ordering::SeqCst),
        "the 50 ms tick never ran the job"
    );
    assert!(
        ran_and_busy,
        "no tick came due with a wake queued: the test proves nothing"
    );
    assert_eq!(
        most(),
        1,
        "messages handled in a row while the periodic flush was due"
    );
}

/// A thread that queues a job never ready and exits: its orphaned ring runs the job at the
/// next wake, in order.
#[test]
fn a_never_ready_job_of_a_thread_gone_runs_at_the_next_wake() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let ran = {
        let rec = rec.clone();
        std::thread::spawn(move || {
            let ran = never_ready(&rec, 1);
            assert!(within(120, || held(&rec) > 0), "never held");
            ran
        })
        .join()
        .unwrap()
    };
    rec.wake_writer();
    assert!(within(120, || ran.load(Ordering::SeqCst)), "never ran");
    rec.close().unwrap();
    assert_eq!(timings_in_order(&read(&sink)), [(0, 1), (1, 1), (0, 2)]);
}

/// A record too large for the ring, behind records held back: written after them.
#[test]
fn a_large_record_behind_held_records_keeps_its_place() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        thread_buffer_bytes: 4096,
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let ran = never_ready(&rec, 1);
    assert!(within(120, || held(&rec) > 0), "never held");
    let large = Record::Blob(Blob {
        hash: BlobHash(xxh3_64(&[1; 3000])),
        bytes: vec![1; 3000],
    });
    rec.record(&large);
    assert!(
        ran.load(Ordering::SeqCst),
        "the large record did not run the job"
    );
    rec.record(&timing(0, 3));
    rec.close().unwrap();
    let trace = read(&sink);
    let order: Vec<String> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some(format!("{}/{}", t.runtime.0, t.submission.0)),
            Record::Blob(_) => Some("blob".into()),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["0/1", "1/1", "0/2", "blob", "0/3"]);
}

/// Lossless, a 4 KiB ring, a job never ready: every record, in order, none lost, and the
/// records held back stay bounded by about the ring's size.
#[test]
fn lossless_tiny_ring_behind_a_never_ready_job_keeps_every_record_bounded() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        thread_buffer_bytes: 4096,
        full_buffer_wait: Duration::ZERO,
        mode: TraceMode::Lossless,
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let most = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (rec, most, stop) = (rec.clone(), most.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let core = rec.handle.shared.core();
                for c in &core.consumers {
                    most.fetch_max(c.held.len(), Ordering::Relaxed);
                }
                drop(core);
                std::thread::yield_now();
            }
        })
    };
    let threads = 3u32;
    let per_thread = 20_000u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            let rec = rec.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    if i % 1000 == 0 {
                        rec.record_deferred_when(crate::DeferredKind::Other, || false, |_| {});
                    }
                    rec.record(&timing(t, i));
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let summary = rec.close().unwrap();
    assert_eq!(summary.dropped_records, 0);
    let mut next = vec![0u64; threads as usize];
    for r in &read(&sink).records {
        match r {
            Record::RegionTiming(t) => {
                let slot = &mut next[t.runtime.0 as usize];
                assert_eq!(*slot, t.submission.0, "thread {} out of order", t.runtime);
                *slot += 1;
            }
            Record::RecordsLost(_) => panic!("a lossless session lost records"),
            _ => {}
        }
    }
    assert_eq!(next, vec![per_thread; threads as usize]);
    let most = most.load(Ordering::Relaxed);
    assert!(most <= 2 * 4096, "{most} bytes held behind a 4 KiB ring");
}

/// Many threads, each with a job whose readiness comes in another order: each thread's
/// records keep their order.
#[test]
fn many_threads_with_held_records_keep_their_order() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let threads = 8u32;
    let flags: Vec<Arc<AtomicBool>> = (0..threads).map(|_| Arc::default()).collect();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (rec, flag) = (rec.clone(), flags[t as usize].clone());
            s.spawn(move || {
                for i in 0..200u64 {
                    rec.record(&timing(t, 2 * i));
                    let flag = flag.clone();
                    rec.record_deferred_when(
                        crate::DeferredKind::Other,
                        move || flag.load(Ordering::SeqCst),
                        move |out| out.record(&timing(t, 2 * i + 1)),
                    );
                }
                // Still alive while the others become ready.
                std::thread::sleep(Duration::from_millis(50));
            });
        }
        for t in (0..threads).rev() {
            flags[t as usize].store(true, Ordering::SeqCst);
            rec.wake_writer();
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    rec.close().unwrap();
    let mut next = vec![0u64; threads as usize];
    for (r, s) in timings_in_order(&read(&sink)) {
        assert_eq!(next[r as usize], s, "thread {r} out of order");
        next[r as usize] += 1;
    }
    assert_eq!(next, vec![400; threads as usize]);
}
/// A `ready` that panics (a bug in the caller's closure) must not take the whole trace with
/// it: the writer thread runs it under the core lock, with the thread's held entries taken
/// out of the consumer.
#[test]
fn a_ready_that_panics_loses_no_other_records() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    rec.record(&timing(0, 1));
    rec.record_deferred_when(
        crate::DeferredKind::Other,
        || panic!("ready panicked"),
        |out| out.record(&timing(1, 1)),
    );
    rec.record(&timing(0, 2));
    rec.wake_writer();
    std::thread::sleep(Duration::from_millis(100));
    rec.record(&timing(0, 3));
    let closed = rec.close();
    assert!(closed.is_ok(), "{closed:?}");
    assert_eq!(
        timings_in_order(&read(&sink)),
        [(0, 1), (1, 1), (0, 2), (0, 3)],
        "taken for ready: the job runs in place"
    );
}

/// A job that waits for other work is not run by the writer's wake before it is ready:
/// the thread's later records are held back behind it, in order, while another thread's
/// go on; once ready and the writer woken, it runs in place.
#[test]
fn a_job_not_ready_holds_its_threads_later_records_back_until_ready() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        hold_limit: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    let ready = Arc::new(AtomicBool::new(false));
    let ran = Arc::new(AtomicBool::new(false));
    rec.record(&timing(0, 1));
    let (is_ready, has_run) = (ready.clone(), ran.clone());
    rec.record_deferred_when(
        crate::DeferredKind::Other,
        move || is_ready.load(Ordering::SeqCst),
        move |out| {
            has_run.store(true, Ordering::SeqCst);
            out.record(&timing(1, 1));
        },
    );
    rec.record(&timing(0, 2));
    // The push woke the writer, which drained the ring and held the job's entry back.
    assert!(
        within(120, || held(&rec) > 0),
        "the writer never drained the ring"
    );
    // Another thread's record is not held back (its ring is drained into `pending`).
    let other = rec.clone();
    std::thread::spawn(move || other.record(&timing(2, 1)))
        .join()
        .unwrap();
    rec.wake_writer();
    // Its ring goes once drained (the thread is gone).
    assert!(
        within(120, || { rec.handle.shared.core().consumers.len() == 1 }),
        "the other thread's record never drained"
    );
    assert!(!ran.load(Ordering::SeqCst), "run before it was ready");
    assert!(held(&rec) > 0);
    ready.store(true, Ordering::SeqCst);
    rec.wake_writer();
    assert!(
        within(120, || { ran.load(Ordering::SeqCst) }),
        "the job never ran once ready"
    );
    assert!(within(120, || held(&rec) == 0), "records still held");
    rec.close().unwrap();
    let order = timings_in_order(&read(&sink));
    let mine: Vec<_> = order.iter().filter(|(r, _)| *r != 2).copied().collect();
    assert_eq!(mine, [(0, 1), (1, 1), (0, 2)]);
    assert!(order.contains(&(2, 1)));
}

/// A flush runs a job that is not ready (the job then gets what it waits for itself):
/// everything recorded before the flush is in the sink when it returns.
#[test]
fn a_flush_runs_a_job_not_ready() {
    let options = RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let (rec, sink) = memory_recorder(options);
    rec.record(&timing(0, 1));
    rec.record_deferred_when(
        crate::DeferredKind::Other,
        || false,
        |out| out.record(&timing(1, 1)),
    );
    rec.record(&timing(0, 2));
    rec.flush().unwrap();
    assert_eq!(timings_in_order(&read(&sink)), [(0, 1), (1, 1), (0, 2)]);
    rec.close().unwrap();
}
