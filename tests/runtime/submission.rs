//! Submission: slots, capacity, producers, ordering and overlap, completions.

use hrx::{Access, Error, GpuAccess, Placement, Runtime, RuntimeOptions, Status};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

/// A graph with one scoped region on `view` that blocks until released.
fn gated(
    rt: &Runtime,
    view: hrx::BufferView,
    access: Access,
) -> (hrx::ExecutableGraph, mpsc::Sender<()>) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(&[GpuAccess::new(view, access)], move |_| {
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(20));
                Ok(())
            })
            .unwrap();
    }
    (graph.prepare().unwrap(), release)
}

conformance! {
    fn completions_report_status_and_wait(rt) {
        let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), 4).unwrap();
        let executable = graph.prepare().unwrap();
        let completion = executable.submit().unwrap();
        completion.wait().unwrap();
        assert!(completion.is_complete());
        assert!(matches!(completion.status(), Some(Status::Succeeded)));
        completion.wait_timeout(Duration::from_millis(1)).unwrap();
        assert_eq!(completion.submission(), 1);
        assert_eq!(buffer.to_vec().unwrap(), vec![4; 64]);
    }
}

#[test]
fn wait_timeout_times_out_while_work_is_blocked() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(8, Placement::HostVisible).unwrap();
    let (executable, release) = gated(&rt, buffer.whole(), Access::Write);
    let completion = executable.submit().unwrap();
    assert!(matches!(
        completion.wait_timeout(Duration::from_millis(30)),
        Err(Error::Timeout(_))
    ));
    assert!(!completion.is_complete() && completion.status().is_none());
    release.send(()).unwrap();
    completion.wait().unwrap();
}

#[test]
fn slots_are_reused_only_after_completion_and_drop() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(2)).unwrap();
    let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let executable = graph.prepare().unwrap();
    let first = executable.submit().unwrap();
    let second = executable.submit().unwrap();
    first.wait().unwrap();
    second.wait().unwrap();
    let error = executable.submit().unwrap_err();
    assert!(
        matches!(error, Error::Busy(_)),
        "completed but still observed: {error}"
    );
    assert!(error.to_string().contains("slots"), "{error}");
    let clone = first.clone();
    drop(first);
    assert!(
        matches!(executable.submit(), Err(Error::Busy(_))),
        "a clone still observes the slot"
    );
    drop(clone);
    let third = executable.submit().unwrap();
    third.wait().unwrap();
    assert_eq!(third.submission(), 3);
    assert_eq!(
        second.submission(),
        2,
        "an old completion still observes its own submission"
    );
}

#[test]
fn a_slot_in_flight_is_not_reused_even_when_dropped() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1)).unwrap();
    let buffer = rt.buffer(8, Placement::HostVisible).unwrap();
    let (executable, release) = gated(&rt, buffer.whole(), Access::Write);
    drop(executable.submit().unwrap());
    assert!(matches!(executable.submit(), Err(Error::Busy(_))));
    release.send(()).unwrap();
    let retry = loop {
        match executable.submit() {
            Ok(completion) => break completion,
            Err(Error::Busy(_)) => std::thread::sleep(Duration::from_millis(1)),
            Err(other) => panic!("{other}"),
        }
    };
    release.send(()).unwrap();
    retry.wait().unwrap();
}

#[test]
fn capacity_exhaustion_answers_busy() {
    let rt = Runtime::new(RuntimeOptions::sim().capacity(2).graph_slots(4)).unwrap();
    let buffer = rt.buffer(8, Placement::HostVisible).unwrap();
    let (executable, release) = gated(&rt, buffer.whole(), Access::Write);
    let a = executable.submit().unwrap();
    let b = executable.submit().unwrap();
    let error = executable.submit().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("capacity exhausted: 2 submissions"),
        "{error}"
    );
    assert_eq!(rt.in_flight(), 2);
    release.send(()).unwrap();
    release.send(()).unwrap();
    a.wait().unwrap();
    b.wait().unwrap();
    assert_eq!(rt.in_flight(), 0);
}

#[test]
fn conflicting_work_is_ordered_across_submissions() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    let device = rt.buffer(64, Placement::GpuLocal).unwrap();
    // Submission 1 reads `host` (blocked); submission 2 uploads from `host`... and writes it.
    let (reader, release) = gated(&rt, host.whole(), Access::Read);
    let mut graph = rt.graph();
    graph.copy(device.whole(), host.whole()).unwrap(); // Upload: reads host — no conflict
    let upload = graph.prepare().unwrap();
    let mut graph = rt.graph();
    graph.copy(host.whole(), device.whole()).unwrap(); // Download: writes host — WAR
    let download = graph.prepare().unwrap();
    let first = reader.submit().unwrap();
    let second = upload.submit().unwrap();
    second
        .wait_timeout(Duration::from_secs(10))
        .expect("read-read overlaps");
    let third = download.submit().unwrap();
    assert!(
        matches!(
            third.wait_timeout(Duration::from_millis(50)),
            Err(Error::Timeout(_))
        ),
        "write-after-read must wait"
    );
    release.send(()).unwrap();
    first.wait().unwrap();
    third.wait().unwrap();
}

#[test]
fn non_conflicting_work_overlaps_across_queues() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let a = rt.buffer(64, Placement::HostVisible).unwrap();
    let b = rt.buffer(64, Placement::HostVisible).unwrap();
    // A Compute region and a Host region rendezvous: each announces itself and waits for
    // the other, which only succeeds if both run at the same time.
    let (compute_arrived, compute_seen) = mpsc::channel::<()>();
    let (host_arrived, host_seen) = mpsc::channel::<()>();
    let (results, outcome) = mpsc::channel::<bool>();
    let (host_seen, compute_seen) = (Mutex::new(host_seen), Mutex::new(compute_seen));
    let mut compute = rt.graph();
    let compute_results = results.clone();
    // SAFETY: the callback touches no memory.
    unsafe {
        compute
            .gpu_scoped(&[GpuAccess::new(a.whole(), Access::Write)], move |_| {
                compute_arrived.send(()).unwrap();
                let met = host_seen
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(10))
                    .is_ok();
                compute_results.send(met).unwrap();
                Ok(())
            })
            .unwrap();
    }
    let mut host = rt.graph();
    host.host(&[GpuAccess::new(b.whole(), Access::Write)], move |_| {
        host_arrived.send(()).unwrap();
        let met = compute_seen
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(10))
            .is_ok();
        results.send(met).unwrap();
        Ok(())
    })
    .unwrap();
    let (compute, host) = (compute.prepare().unwrap(), host.prepare().unwrap());
    let first = compute.submit().unwrap();
    let second = host.submit().unwrap();
    assert!(
        outcome.recv().unwrap() && outcome.recv().unwrap(),
        "both regions ran at once"
    );
    first.wait().unwrap();
    second.wait().unwrap();
}

#[test]
fn submit_after_waits_for_producers_even_without_overlap() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let a = rt.buffer(8, Placement::HostVisible).unwrap();
    let b = rt.buffer(8, Placement::HostVisible).unwrap();
    let (producer, release) = gated(&rt, a.whole(), Access::Write);
    let mut graph = rt.graph();
    graph.fill(b.whole(), 2).unwrap();
    let consumer = graph.prepare().unwrap();
    let first = producer.submit().unwrap();
    let second = consumer.submit_after(std::slice::from_ref(&first)).unwrap();
    assert!(matches!(
        second.wait_timeout(Duration::from_millis(50)),
        Err(Error::Timeout(_))
    ));
    release.send(()).unwrap();
    second.wait().unwrap();
    assert!(first.is_complete());
    // A producer that already completed is fine.
    consumer.submit_after(&[first]).unwrap().wait().unwrap();
}

#[test]
fn producers_of_another_or_a_dropped_runtime() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let other = Runtime::new(RuntimeOptions::sim()).unwrap();
    let mk = |rt: &Runtime| {
        let buffer = rt.buffer(8, Placement::HostVisible).unwrap();
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), 1).unwrap();
        graph.prepare().unwrap()
    };
    let local = mk(&rt);
    let foreign = mk(&other).submit().unwrap();
    assert!(matches!(
        local.submit_after(std::slice::from_ref(&foreign)),
        Err(Error::ForeignRuntime { what: "completion" })
    ));
    foreign.wait().unwrap();
    drop(other);
    // The runtime is gone but the producer completed: accepted.
    local.submit_after(&[foreign]).unwrap().wait().unwrap();
}

#[test]
fn many_threads_submit_concurrently_and_everything_retires() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(4).capacity(8)).unwrap();
    let buffer = rt.buffer(1024, Placement::HostVisible).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let rt = rt.clone();
            let buffer = buffer.clone();
            scope.spawn(move || {
                let mut graph = rt.graph();
                graph
                    .fill(buffer.view(t * 256..(t + 1) * 256).unwrap(), t as u8 + 1)
                    .unwrap();
                let executable = graph.prepare().unwrap();
                let mut done = 0;
                while done < 200 {
                    match executable.submit() {
                        Ok(completion) => {
                            completion.wait().unwrap();
                            done += 1;
                        }
                        Err(Error::Busy(_)) => std::thread::yield_now(),
                        Err(other) => panic!("{other}"),
                    }
                }
            });
        }
    });
    assert_eq!(rt.counters().submissions, 800);
    assert_eq!(rt.in_flight(), 0);
    let bytes = buffer.to_vec().unwrap();
    for t in 0..4 {
        assert!(
            bytes[t * 256..(t + 1) * 256]
                .iter()
                .all(|&b| b == t as u8 + 1)
        );
    }
}

#[test]
fn dropping_the_runtime_with_work_in_flight_finishes_it() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(1 << 20, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 5).unwrap();
    let completion = graph.prepare().unwrap().submit().unwrap();
    drop(rt);
    completion.wait().unwrap();
    assert!(buffer.to_vec().unwrap().iter().all(|&b| b == 5));
}

/// The seed's prepared graph holds its runtime and the scheduler each submission's prepared
/// graph: work in flight runs to its end once every handle is dropped (the runtime's, the
/// graph's, the completion's, a buffer's it writes first). A held host callback, then the
/// copy its bytes feed, both run after every handle but the copy's destination went.
#[test]
fn work_in_flight_runs_to_its_end_when_every_handle_is_dropped() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let staging = rt.buffer(64, Placement::HostVisible).unwrap();
    let out = rt.buffer(64, Placement::HostVisible).unwrap();
    let (release, wait) = crate::common::gate(Duration::from_secs(20));
    let mut graph = rt.graph();
    graph
        .host(
            &[GpuAccess::new(staging.whole(), Access::Write)],
            move |views| {
                wait();
                views.write(0)?.fill(9);
                Ok(())
            },
        )
        .unwrap();
    graph.copy(out.whole(), staging.whole()).unwrap();
    let completion = graph.prepare().unwrap().submit().unwrap();
    drop((completion, staging, rt));
    release.send(()).unwrap();
    // `Busy` while the copy is in flight; anything else once the submission retired.
    let bytes = loop {
        match out.to_vec() {
            Err(Error::Busy(_)) => std::thread::sleep(Duration::from_millis(1)),
            other => break other.unwrap(),
        }
    };
    assert_eq!(bytes, vec![9; 64]);
}

/// A submit right after `wait` of the previous submission in a one-slot graph never meets
/// `Busy`: the slot is waited for while the worker that published the completion still
/// drops its reference.
#[test]
fn resubmitting_right_after_wait_is_never_busy() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1)).unwrap();
    let buffer = rt.buffer(64, hrx::Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let executable = graph.prepare().unwrap();
    for round in 0..5_000 {
        match executable.submit() {
            Ok(completion) => completion.wait().unwrap(),
            Err(error) => panic!("round {round}: {error}"),
        }
    }
}

conformance! {
    /// `wait` runs its submission's ready native region on the waiting thread when the
    /// queue's worker is idle: with the workers parked (idle long past their spin), the waiter
    /// claims the fill before a woken worker can.
    fn a_waiting_thread_runs_its_ready_native_regions(rt) {
        let buffer = rt.buffer(4096, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), 9).unwrap();
        let executable = graph.prepare().unwrap();
        let before = rt.counters().regions_run_by_waiters;
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(2));
            executable.submit().unwrap().wait().unwrap();
        }
        let helped = rt.counters().regions_run_by_waiters - before;
        assert!(helped > 0, "no region of 20 ran on the waiting thread");
        assert!(helped <= 20, "{helped} regions counted for 20 one-region submissions");
    }
}

/// User callbacks never run on a waiting thread: a host callback always runs on the Host
/// queue's worker, and a scoped native callback on its lane's worker (the seed: "the callback
/// runs on a worker, never in `poll`"), even while the caller waits with nothing else to do.
#[test]
fn callbacks_never_run_on_the_waiting_thread() {
    for scoped in [false, true] {
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
        let threads = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut graph = rt.graph();
        let seen = threads.clone();
        let callback = move || seen.lock().unwrap().push(std::thread::current().id());
        let bindings = [GpuAccess::new(buffer.whole(), Access::Write)];
        if scoped {
            // SAFETY: the callback touches no memory and owns no native resource.
            unsafe {
                graph.gpu_scoped(&bindings, move |_| {
                    callback();
                    Ok(())
                })
            }
            .unwrap();
        } else {
            graph
                .host(&bindings, move |_| {
                    callback();
                    Ok(())
                })
                .unwrap();
        }
        let executable = graph.prepare().unwrap();
        for _ in 0..20 {
            // Let the workers park first, so that the waiter could claim before a woken one.
            std::thread::sleep(Duration::from_millis(2));
            executable.submit().unwrap().wait().unwrap();
        }
        let threads = threads.lock().unwrap();
        assert_eq!(threads.len(), 20, "scoped: {scoped}");
        assert!(
            !threads.contains(&std::thread::current().id()),
            "scoped: {scoped}"
        );
        assert_eq!(rt.counters().regions_run_by_waiters, 0, "scoped: {scoped}");
    }
}

/// At most one region of a queue runs at a time, whether a worker or a waiting thread runs
/// it: four threads submit and wait on fills of their own buffers (no hazards between them,
/// all on the Compute queue), and the host intervals the trace holds never overlap.
#[test]
fn regions_of_one_queue_never_overlap_when_waiters_run_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.hrxt");
    let recorder =
        hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let start = std::sync::Barrier::new(4);
    std::thread::scope(|scope| {
        for t in 0..4u8 {
            let (rt, start) = (rt.clone(), &start);
            scope.spawn(move || {
                let buffer = rt.buffer(1 << 18, Placement::GpuLocal).unwrap();
                let mut graph = rt.graph();
                graph.fill(buffer.whole(), t).unwrap();
                let executable = graph.prepare().unwrap();
                assert_eq!(executable.describe()[0].queue, hrx::Queue::GpuCompute);
                start.wait();
                for _ in 0..500 {
                    executable.submit().unwrap().wait().unwrap();
                }
            });
        }
    });
    let helped = rt.counters().regions_run_by_waiters;
    drop(rt);
    recorder.close().unwrap();
    let trace = hrx_capture::read_all(&path).unwrap();
    let mut spans: Vec<(u64, u64)> = trace
        .records
        .iter()
        .filter_map(|record| match record {
            hrx_capture::Record::RegionTiming(t) => Some((t.start_ns, t.end_ns)),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 2000);
    assert!(
        helped > 0,
        "no waiter ran a region: the test proves nothing"
    );
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "Compute regions overlap: {:?} and {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// Maps of `buffer` while another thread keeps calling `submit`, which must answer `Busy`
/// every time: a refused submit never registers a use, so no map of `buffer` is `Busy`.
fn maps_stay_free_while_submits_are_refused(
    buffer: &hrx::Buffer,
    executable: &hrx::ExecutableGraph,
) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut maps, mut busy) = (0u64, Vec::new());
    std::thread::scope(|scope| {
        let submitter = scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert!(matches!(executable.submit(), Err(Error::Busy(_))));
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < deadline {
            maps += 1;
            match buffer.map_write(0..64) {
                Ok(mapping) => drop(mapping),
                Err(Error::Busy(message)) => busy.push(message),
                Err(other) => panic!("{other}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        submitter.join().unwrap();
    });
    assert!(
        busy.is_empty(),
        "{} of {maps} maps Busy, first: {}",
        busy.len(),
        busy[0]
    );
}

#[test]
fn a_submit_refused_for_its_slot_leaves_its_buffers_mappable() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1)).unwrap();
    let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let executable = graph.prepare().unwrap();
    let held = executable.submit().unwrap();
    held.wait().unwrap();
    maps_stay_free_while_submits_are_refused(&buffer, &executable);
}

#[test]
fn a_submit_refused_for_a_host_mapping_leaves_its_other_buffers_mappable() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let free = rt.buffer(64, Placement::HostVisible).unwrap();
    let mapped = rt.buffer(64, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(free.whole(), 1).unwrap();
    graph.fill(mapped.whole(), 2).unwrap();
    let executable = graph.prepare().unwrap();
    let _held = mapped.map_write(0..64).unwrap();
    maps_stay_free_while_submits_are_refused(&free, &executable);
}

/// A graph whose host callback fails on every other run: each slot's signal alternates
/// between success and failure (its lock-free success flag must never outlive its own
/// submission), while completions are waited at once, held, dropped, waited through clones
/// on another thread, or waited after another graph's submit.
#[test]
fn reused_slots_report_each_submissions_own_outcome() {
    let runtime = Runtime::new(RuntimeOptions::sim().graph_slots(3)).unwrap();
    let host = runtime.buffer(16, Placement::HostVisible).unwrap();
    let local = runtime.buffer(16, Placement::GpuLocal).unwrap();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut graph = runtime.graph();
    graph.fill(local.whole(), 1).unwrap();
    graph.copy(host.whole(), local.whole()).unwrap();
    let seen = runs.clone();
    graph
        .host(
            &[GpuAccess::new(host.whole(), Access::ReadWrite)],
            move |_| {
                let run = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if run % 2 == 1 {
                    Err(Error::Message(format!("run {run} fails")))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap();
    let alternating = graph.prepare().unwrap();
    let mut other = runtime.graph();
    other.fill(local.whole(), 5).unwrap();
    let other = other.prepare().unwrap();

    let (clones, received) = mpsc::channel::<(hrx::Completion, bool)>();
    let waiter = std::thread::spawn(move || {
        let mut waited = 0;
        for (completion, ok) in received {
            let result = completion.wait();
            assert_eq!(
                result.is_ok(),
                ok,
                "submission {}: {result:?}",
                completion.submission()
            );
            waited += 1;
        }
        waited
    });
    let mut held: Vec<(hrx::Completion, bool)> = Vec::new();
    let mut state = 3u64; // a fixed linear congruential sequence: the same run every time
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let rounds = 1500;
    for index in 0..rounds {
        let completion = loop {
            match alternating.submit() {
                Ok(completion) => break completion,
                // The slots are held here or by clones the other thread has yet to wait.
                Err(Error::Busy(_)) => match held.pop() {
                    Some((held, ok)) => assert_eq!(held.wait().is_ok(), ok),
                    None => std::thread::yield_now(),
                },
                Err(error) => panic!("{error}"),
            }
        };
        // Runs happen in submission order (each run's callback writes what the next reads).
        let ok = index % 2 == 0;
        clones.send((completion.clone(), ok)).unwrap();
        match next() % 4 {
            0 => assert_eq!(completion.wait().is_ok(), ok),
            1 => held.push((completion, ok)),
            2 => drop(completion),
            _ => {
                let unrelated = other.submit().unwrap();
                assert_eq!(completion.wait().is_ok(), ok);
                unrelated.wait().unwrap();
            }
        }
        if held.len() > 2 {
            let (completion, ok) = held.remove((next() % held.len() as u64) as usize);
            assert_eq!(completion.wait().is_ok(), ok);
        }
    }
    drop(clones);
    assert_eq!(waiter.join().unwrap(), rounds);
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        rounds as u64
    );
}

/// `Counters::submissions` counts accepted submits only, from several threads, while some
/// are refused for capacity or slots.
#[test]
fn the_submission_counter_counts_accepted_submits_only() {
    let runtime = Runtime::new(RuntimeOptions::sim().graph_slots(2).capacity(3)).unwrap();
    let before = runtime.counters().submissions;
    let accepted = std::sync::atomic::AtomicU64::new(0);
    let refused = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for thread in 0..3u64 {
            let (runtime, accepted, refused) = (runtime.clone(), &accepted, &refused);
            scope.spawn(move || {
                let buffer = runtime.buffer(1 << 16, Placement::GpuLocal).unwrap();
                let mut graph = runtime.graph();
                graph.fill(buffer.whole(), 1).unwrap();
                let graph = graph.prepare().unwrap();
                let mut held = std::collections::VecDeque::new();
                for round in 0..1000u64 {
                    match graph.submit() {
                        Ok(completion) => {
                            accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            held.push_back(completion);
                        }
                        Err(Error::Busy(_)) => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(error) => panic!("{error}"),
                    }
                    if ((round + thread) % 3 == 0 || held.len() > 2)
                        && let Some(completion) = held.pop_front()
                    {
                        completion.wait().unwrap();
                    }
                }
            });
        }
    });
    assert!(
        refused.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "nothing was refused: the test proves nothing"
    );
    assert_eq!(
        runtime.counters().submissions - before,
        accepted.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// A graph of `regions` regions over `pieces` pieces of `piece` bytes of one GPU-local
/// buffer: region `r` fills piece `r % pieces` with `r` where `r` is even (the Compute lane)
/// and uploads it from a host-visible buffer holding `staged` where odd (the Upload lane), so
/// that regions of the two lanes run side by side and each waits for the last writer of its
/// piece. Returns the prepared graph and its device buffer.
pub(crate) fn pieces_graph(
    rt: &Runtime,
    (regions, pieces, piece): (usize, usize, usize),
    staged: &[u8],
) -> (hrx::ExecutableGraph, hrx::Buffer) {
    let device = rt.buffer(piece * pieces, Placement::GpuLocal).unwrap();
    let staging = rt.buffer(piece * pieces, Placement::HostVisible).unwrap();
    staging.write(0, staged).unwrap();
    let mut graph = rt.graph();
    for region in 0..regions {
        let range = (region % pieces) * piece..(region % pieces + 1) * piece;
        if region % 2 == 0 {
            graph
                .fill(device.view(range).unwrap(), region as u8)
                .unwrap();
        } else {
            let (to, from) = (device.view(range.clone()), staging.view(range));
            graph.copy(to.unwrap(), from.unwrap()).unwrap();
        }
    }
    (graph.prepare().unwrap(), device)
}

/// The bytes a sequential run of [`pieces_graph`] leaves on its device buffer.
pub(crate) fn pieces_expected(
    (regions, pieces, piece): (usize, usize, usize),
    staged: &[u8],
) -> Vec<u8> {
    let mut expected = vec![0u8; piece * pieces];
    for region in 0..regions {
        let range = (region % pieces) * piece..(region % pieces + 1) * piece;
        if region % 2 == 0 {
            expected[range].fill(region as u8);
        } else {
            expected[range.clone()].copy_from_slice(&staged[range]);
        }
    }
    expected
}

/// A graph of 24 regions (more than the scheduler looks through whole: it keeps each such
/// submission's regions whose dependencies are done, per queue), fills on the Compute lane
/// alternating with uploads on the Upload lane over four pieces of one buffer
/// ([`pieces_graph`]). Submitted three times without waiting between (later submissions
/// wait across), then twice on a runtime whose seventh operation fails: every successful
/// submission leaves the bytes a sequential run leaves, the failed one's later regions are
/// cancelled, the next one runs.
#[test]
fn a_graph_of_many_regions_runs_in_hazard_order_across_submissions() {
    const PIECE: usize = 16;
    const PIECES: usize = 4;
    const REGIONS: usize = 24;
    let staged: Vec<u8> = (0..PIECE * PIECES).map(|i| 100 + i as u8).collect();
    let expected = pieces_expected((REGIONS, PIECES, PIECE), &staged);
    let run = |rt: &Runtime, failing: bool| {
        let (executable, device) = pieces_graph(rt, (REGIONS, PIECES, PIECE), &staged);
        assert_eq!(executable.regions(), REGIONS);
        let completions: Vec<_> = (0..if failing { 2 } else { 3 })
            .map(|_| executable.submit().unwrap())
            .collect();
        let outcomes: Vec<_> = completions.into_iter().map(|c| c.wait()).collect();
        (device.to_vec().unwrap(), outcomes, rt.counters())
    };
    let options = || RuntimeOptions::sim().graph_slots(3);
    let (bytes, outcomes, _) = run(&Runtime::new(options()).unwrap(), false);
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(bytes, expected);

    let faulty = options().fault("op=7:kernel-error".parse().unwrap());
    let (bytes, outcomes, counters) = run(&Runtime::new(faulty).unwrap(), true);
    let error = outcomes[0].as_ref().unwrap_err().to_string();
    assert!(error.contains("injected fault op=7"), "{error}");
    assert!(outcomes[1].is_ok(), "{:?}", outcomes[1]);
    assert_eq!(bytes, expected, "the second submission ran whole");
    // The uploads (other pieces than the failed fill's) may or may not have run before the
    // failure cancelled what was pending: that is timing, not asserted. Both submissions'
    // pieces reached the device: the second's 12 at least.
    let uploads = counters.lane_copy_bytes[0] as usize / PIECE;
    assert!(
        (REGIONS / 2..=REGIONS).contains(&uploads),
        "{uploads} uploads ran"
    );
}

/// A large submission that waits across on a small earlier one whose region failed while
/// another of its regions still runs: the large one's regions on that piece wait until the
/// earlier submission leaves (a failed region stands for nothing before it), joining the
/// scheduler's ready sets only then, and the rest run meanwhile. With debug assertions the
/// scheduler checks at every lookup that its sets hold exactly the regions with nothing left
/// to wait for (a lookup once passed over every region still waiting across: eight large
/// graphs in flight were quadratic).
#[test]
fn a_large_submission_waits_on_a_failed_region_until_its_submission_leaves() {
    const SHAPE: (usize, usize, usize) = (40, 4, 16);
    let staged: Vec<u8> = (0..SHAPE.1 * SHAPE.2).map(|i| 100 + i as u8).collect();
    let faulty = RuntimeOptions::sim()
        .graph_slots(2)
        .fault("op=1:kernel-error".parse().unwrap());
    let rt = Runtime::new(faulty).unwrap();
    let (large, device) = pieces_graph(&rt, SHAPE, &staged);
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let earlier = {
        let host = rt.buffer(16, Placement::HostVisible).unwrap();
        let mut graph = rt.graph();
        graph
            .host(&[GpuAccess::new(host.whole(), Access::Write)], move |_| {
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(60));
                Ok(())
            })
            .unwrap();
        // The first device operation (the callback is none): the one the fault fails.
        let piece = device.view(SHAPE.2..2 * SHAPE.2).unwrap();
        graph.fill(piece, 7).unwrap();
        graph.prepare().unwrap()
    };
    let earlier = earlier.submit().unwrap();
    let later = large.submit().unwrap();
    assert!(
        !later.is_complete(),
        "piece 1's regions wait until the earlier submission leaves"
    );
    release.send(()).unwrap();
    let error = earlier.wait().unwrap_err().to_string();
    assert!(error.contains("injected fault op=1"), "{error}");
    later.wait_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(
        device.to_vec().unwrap(),
        pieces_expected(SHAPE, &staged),
        "the large submission ran whole, after the earlier one"
    );
}

/// Large submissions behind one earlier submission that stays in flight, each cancelled at
/// once (a failed producer) or failing its first region: each takes its waits on the
/// earlier one with it as it leaves (the scheduler kept them until the earlier one left,
/// re-sorting them at every submit: 8,000 such submissions took 25 s, a break-it pass). With
/// debug assertions the scheduler checks at every retirement that the waits it keeps are of
/// submissions in flight. The earlier one then runs, and a last large one after it.
#[test]
fn large_submissions_that_leave_first_take_their_waits_with_them() {
    const SHAPE: (usize, usize, usize) = (24, 4, 16);
    let staged: Vec<u8> = (0..SHAPE.1 * SHAPE.2).map(|i| 100 + i as u8).collect();
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(4)).unwrap();
    let (large, device) = pieces_graph(&rt, SHAPE, &staged);
    let (earlier, release) = gated(&rt, device.whole(), Access::Write);
    let failing = {
        let host = rt.buffer(16, Placement::HostVisible).unwrap();
        let mut graph = rt.graph();
        let write = GpuAccess::new(host.whole(), Access::Write);
        graph
            .host(&[write], |_| Err(Error::Message("fails".into())))
            .unwrap();
        graph.prepare().unwrap()
    };
    let failed = failing.submit().unwrap();
    assert!(failed.wait().is_err());
    let earlier = earlier.submit().unwrap();
    for _ in 0..50 {
        let cancelled = large.submit_after(std::slice::from_ref(&failed)).unwrap();
        let error = cancelled.wait().unwrap_err().to_string();
        assert!(error.contains("producer submission 1 failed"), "{error}");
    }
    assert!(!earlier.is_complete());
    release.send(()).unwrap();
    earlier.wait().unwrap();
    large.submit().unwrap().wait().unwrap();
    assert_eq!(device.to_vec().unwrap(), pieces_expected(SHAPE, &staged));
}
