//! Loom models of the slot, signal and completion protocol ([`super::completion`]), of
//! a queue worker's parking ([`super::shared::park`]), and of a waiter's deferred retirement
//! ([`super::defer`]).
//!
//! Every model runs the runtime's own code: [`Signal`], [`Completion`], [`claim_slot`],
//! [`retire_slot`], [`retire_own_slot`], [`publish_all`], [`park`], [`Parked::take`], [`notify`] and
//! [`super::defer::Deferral`], whose mutexes,
//! condition variables and atomics are loom's under the `model-check` feature (see [`super::sync`]). Loom runs each model once
//! per schedule, exhaustively, and fails on a panic in any schedule or on a deadlock (every
//! thread blocked: a lost wake-up). The `seeded_*` tests switch on a deliberate bug in that
//! code and expect loom to find it, proving the models can fail.
//!
//! Run: `cargo test -p hrx --lib --features model-check model_check -- --nocapture` (each
//! model prints the schedules it explored).
//!
//! Loom's `Condvar::wait_timeout` never times out (it is `wait`): the timed wait is modelled
//! as an untimed one, so the models prove that a timed waiter is woken by `publish` but never
//! explore a timeout racing `publish`; that path returns `Error::Timeout` without touching
//! shared state other than the `PARKED` bit it set (left set: `publish` then takes the
//! parking mutex and notifies nobody).

use super::completion::{
    Completion, PARKED, PUBLISHED, RETIRED, Signal, claim_slot, publish_all, retire_own_slot,
    retire_slot,
};
use super::shared::{HasParked, Parked, notify, park};
use super::types::Status;
use crate::Error;
use crate::sync::lock;
use crate::sync::protocol::{self as sync, Mutex};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// A bug seeded into the protocol's code for one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bug {
    /// `publish` reads `PARKED` before it sets `PUBLISHED`: a waiter that parks in between
    /// is never notified (a lost wake-up).
    LostWakeup,
    /// `publish` notifies without taking the parking mutex first: a waiter that set
    /// `PARKED` and checked the word, but is not yet asleep, misses the notification.
    NotifyWithoutLock,
    /// `complete` stores the word (retired, then published) before a failure's status:
    /// `is_complete()` is true while `status()` is still `None`.
    PublishedBeforeStatus,
    /// A slot is reused while a `Completion` (or the scheduler's clone) still holds it.
    ReuseWhileHeld,
    /// A queue's worker parks without setting its parked bit: wakers, which notify only a
    /// worker whose bit they take, leave it asleep over new work.
    ParkWithoutFlag,
    /// A lock holder resolving a taken deferral resets it: the graph's last handle, dropped
    /// meanwhile, no longer waits for that retirement (`super::defer`).
    ResetTakenDeferral,
}

thread_local! {
    /// The bug seeded on this OS thread: loom runs a model's threads on the calling thread,
    /// so a test seeds only its own models.
    static SEEDED: Cell<Option<Bug>> = const { Cell::new(None) };
}

/// Whether `bug` is seeded.
pub(crate) fn seeded(bug: Bug) -> bool {
    SEEDED.with(|seeded| seeded.get() == Some(bug))
}

/// `Signal::publish` with a seeded bug; false when none is seeded (the real code runs).
pub(crate) fn publish_seeded(signal: &Signal) -> bool {
    if seeded(Bug::LostWakeup) {
        let parked = signal.word.load(Ordering::Acquire) & PARKED != 0;
        signal.word.fetch_or(PUBLISHED, Ordering::AcqRel);
        if parked {
            drop(lock(&signal.status));
            signal.changed.notify_all();
        }
        true
    } else if seeded(Bug::NotifyWithoutLock) {
        if signal.word.fetch_or(PUBLISHED, Ordering::AcqRel) & PARKED != 0 {
            signal.changed.notify_all();
        }
        true
    } else {
        false
    }
}

/// `Signal::complete` with a seeded bug; false when none is seeded (the real code runs).
pub(crate) fn complete_seeded(signal: &Signal, status: &Status) -> bool {
    if !seeded(Bug::PublishedBeforeStatus) {
        return false;
    }
    signal.word.fetch_or(RETIRED | PUBLISHED, Ordering::AcqRel);
    *lock(&signal.status) = Some(status.clone());
    true
}

/// Runs `model` under loom (every schedule) with `bug` seeded; prints and returns the
/// number of schedules explored.
/// Preemptions per schedule explored by default (loom's guidance: two or three find most
/// bugs; see `check_counting`).
const DEFAULT_PREEMPTIONS: usize = 3;

fn check(name: &str, bug: Option<Bug>, model: impl Fn() + Sync + Send + 'static) -> usize {
    check_counting(name, bug, &Arc::new(AtomicUsize::new(0)), model)
}

/// As [`check`], counting schedules in `schedules` (read back after a failure).
fn check_counting(
    name: &str,
    bug: Option<Bug>,
    schedules: &Arc<AtomicUsize>,
    model: impl Fn() + Sync + Send + 'static,
) -> usize {
    let counted = schedules.clone();
    SEEDED.with(|seeded| seeded.set(bug));
    let start = Instant::now();
    let mut builder = loom::model::Builder::new();
    // Bounded by default so that CI's run stays minutes long on two busy cores (the
    // one-word completion signal grew `waiters_and_publisher` past an hour unbounded): three
    // preemptions per schedule, which finds each seeded bug below. `LOOM_MAX_PREEMPTIONS`
    // sets another bound; `HRX_LOOM_EXHAUSTIVE=1` explores every schedule.
    if builder.preemption_bound.is_none() && std::env::var_os("HRX_LOOM_EXHAUSTIVE").is_none() {
        builder.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let explored = schedules.load(Ordering::Relaxed);
    println!(
        "model_check {name}: {explored} schedules in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    explored
}

/// Runs `model` with `bug` seeded and returns loom's failure message (panics if loom found
/// nothing).
fn seeded_failure(name: &str, bug: Bug, model: impl Fn() + Sync + Send + 'static) -> String {
    let schedules = Arc::new(AtomicUsize::new(0));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_counting(name, Some(bug), &schedules, model);
    }));
    SEEDED.with(|seeded| seeded.set(None));
    let Err(panic) = result else {
        panic!("loom explored every schedule of {name} and missed the seeded {bug:?}");
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_default();
    println!(
        "model_check {name}: seeded {bug:?} found in schedule {}: {message}",
        schedules.load(Ordering::Relaxed)
    );
    message
}

fn completion(signal: &Arc<Signal>) -> Completion {
    let submission = signal.submission.load(Ordering::Relaxed);
    Completion::new(signal.clone(), submission)
}

fn failed(what: &str) -> Status {
    Status::Failed(Arc::new(Error::Message(what.into())))
}

/// The message of a submission's `Failed(Message)` result, if that is what it is.
fn failure_message(result: &crate::Result<()>) -> Option<&str> {
    match result {
        Err(Error::Message(message)) => Some(message),
        _ => None,
    }
}

/// Model 1: waiters and a publisher. One thread waits with `wait`, one with `wait_timeout`
/// (loom: never times out), while the scheduler completes and publishes. Neither wait
/// returns before `publish` set `published` (each sees the outcome), and neither misses
/// the wake-up (a lost wake-up leaves a thread parked forever: loom reports a deadlock).
fn waiters_and_publisher() {
    waiters_and(
        |signal| {
            signal.complete(failed("one"));
            signal.publish();
        },
        Some("one"),
    );
}

/// Model 1b: as model 1, the outcome a success that the waiter running the submission
/// records and publishes at once ([`Signal::publish_success`], a deferred retirement).
fn waiters_and_own_publisher() {
    waiters_and(Signal::publish_success, None);
}

/// Asserts `result` is the failure of message `failure`, or a success where it is `None`.
fn assert_outcome(result: &crate::Result<()>, failure: Option<&str>, what: &str) {
    match failure {
        Some(_) => assert_eq!(failure_message(result), failure, "{what}: {result:?}"),
        None => assert!(result.is_ok(), "{what}: {result:?}"),
    }
}

/// Models 1 and 1b: two waiters beside a thread that runs `publish` on the signal; each
/// wait's failure message is `failure` (`None`: a success).
fn waiters_and(publish: fn(&Signal), failure: Option<&'static str>) {
    let signal = Signal::new(Weak::new());
    signal.reset(1);
    let timed = completion(&signal);
    let timed = loom::thread::spawn(move || {
        let result = timed.wait_timeout(Duration::from_secs(3600));
        assert_outcome(&result, failure, "timed wait");
    });
    let publisher = {
        let signal = signal.clone();
        loom::thread::spawn(move || publish(&signal))
    };
    let result = completion(&signal).wait();
    assert_outcome(&result, failure, "wait");
    assert!(
        signal.word.load(Ordering::SeqCst) & PUBLISHED != 0,
        "wait returned before publish"
    );
    publisher.join().unwrap();
    timed.join().unwrap();
}

/// The graph's `occupied` flags behind the scheduler lock, as the slot models hold them.
type Occupied = sync::Arc<Mutex<Vec<std::sync::atomic::AtomicBool>>>;

/// A graph of one slot, the scheduler lock together with its `occupied` flags (always
/// taken together), and submission 1 claimed and armed in it as `submit` does, with its
/// completion.
fn one_slot() -> (Arc<Vec<Arc<Signal>>>, Occupied, Completion) {
    let signals = Arc::new(vec![Signal::new(Weak::new())]);
    let scheduler = sync::Arc::new(Mutex::new(vec![std::sync::atomic::AtomicBool::new(false)]));
    let first = {
        let occupied = lock(&scheduler);
        let slot = claim_slot(&occupied, &signals).expect("a fresh slot is free");
        signals[slot].reset(1);
        completion(&signals[slot])
    };
    (signals, scheduler, first)
}

/// The second submitter of a one-slot model: claims the slot if it can, then checks with
/// `released` that every completion of submission 1 was let go (else panics with `held`),
/// arms the slot for submission 2, retires it (as the waiter running it, `own`, or as a
/// worker) and waits for its own outcome.
fn second_submitter(
    signals: Arc<Vec<Arc<Signal>>>,
    scheduler: Occupied,
    released: impl Fn() -> bool + Send + 'static,
    held: &'static str,
    own: bool,
) -> loom::thread::JoinHandle<()> {
    loom::thread::spawn(move || {
        let occupied = lock(&scheduler);
        let Some(slot) = claim_slot(&occupied, &signals) else {
            return;
        };
        assert!(released(), "{held}");
        signals[slot].reset(2);
        let second = completion(&signals[slot]);
        drop(occupied);
        assert_eq!(second.submission(), 2);
        if own {
            retire_own_slot(&lock(&scheduler), slot, &signals, Status::Succeeded);
            second.signal.publish();
        } else {
            let wake = [retire_slot(
                &lock(&scheduler),
                slot,
                &signals,
                Status::Succeeded,
            )];
            publish_all(wake);
        }
        assert!(second.wait().is_ok(), "completion 2 saw another outcome");
    })
}

/// Model 2: slot reuse. One slot; submission 1 is claimed and armed, a worker retires it
/// (`retire_slot`, then `publish_all` with no lock held), its submitter waits on its
/// completion and drops it, while a second submitter tries to claim the slot. The slot is
/// re-armed only after submission 1 retired, was published and its completion was
/// dropped, so completion 1 always observes submission 1 and its outcome, and completion 2
/// its own.
fn slot_reuse() {
    let (signals, scheduler, first) = one_slot();
    // Witness, not protocol: set by the first submitter just before it drops its completion.
    // A plain `std` atomic, like the signal's `std` `Arc` count that `claim_slot` reads: both
    // are seen in loom's execution order (the happens-before that makes `reset` safe comes
    // from the signal's mutex, which loom does model: completion 1 checks what it observed).
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let worker = {
        let (signals, scheduler) = (signals.clone(), scheduler.clone());
        loom::thread::spawn(move || {
            let wake = [retire_slot(&lock(&scheduler), 0, &signals, failed("one"))];
            publish_all(wake);
        })
    };
    let second = {
        let released = released.clone();
        let released = move || released.load(Ordering::SeqCst);
        let held = "slot re-armed while completion 1 was held";
        second_submitter(signals.clone(), scheduler.clone(), released, held, false)
    };
    let result = first.wait();
    assert_eq!(first.submission(), 1, "completion 1 saw another submission");
    assert_eq!(
        failure_message(&result),
        Some("one"),
        "completion 1: {result:?}"
    );
    released.store(true, Ordering::SeqCst);
    drop(first);
    worker.join().unwrap();
    second.join().unwrap();
}

/// Model 2b: slot reuse when the waiter retires its own submission (`worker::help`): it
/// retires it under the lock without the scheduler's clone of the signal
/// ([`retire_own_slot`]), publishes it through its own completion after the lock, then
/// drops that completion, while a second submitter tries to claim the slot, and a clone of
/// the first completion waits on another thread. The slot is re-armed only after the first
/// submission was published and both its completions were dropped: each observes
/// submission 1 and its outcome.
fn own_slot_reuse() {
    let (signals, scheduler, first) = one_slot();
    // Witness, as in `slot_reuse`: set before the last completion of submission 1 drops.
    let released = Arc::new(AtomicUsize::new(0));
    let other = {
        let (clone, released) = (first.clone(), released.clone());
        loom::thread::spawn(move || {
            let result = clone.wait();
            assert_eq!(clone.submission(), 1, "the clone saw another submission");
            assert_eq!(failure_message(&result), Some("one"), "clone: {result:?}");
            released.fetch_add(1, Ordering::SeqCst);
            drop(clone);
        })
    };
    let second = {
        let released = released.clone();
        let released = move || released.load(Ordering::SeqCst) == 2;
        let held = "slot re-armed while a completion of submission 1 was held";
        second_submitter(signals.clone(), scheduler.clone(), released, held, true)
    };
    // The waiter runs its own region: retires it under the lock, publishes after it.
    retire_own_slot(&lock(&scheduler), 0, &signals, failed("one"));
    first.signal.publish();
    let result = first.wait();
    assert_eq!(first.submission(), 1, "completion 1 saw another submission");
    assert_eq!(
        failure_message(&result),
        Some("one"),
        "completion 1: {result:?}"
    );
    released.fetch_add(1, Ordering::SeqCst);
    drop(first);
    other.join().unwrap();
    second.join().unwrap();
}

/// Model 3: status and outcome visibility, polled while the scheduler completes and
/// publishes. `is_complete()` implies `status()` is set; a published status implies the
/// scheduler's `outcome()`; the status is the submission's own; and after `publish` every
/// view agrees.
fn visibility() {
    let signal = Signal::new(Weak::new());
    signal.reset(7);
    let observed = completion(&signal);
    let publisher = {
        let signal = signal.clone();
        loom::thread::spawn(move || {
            signal.complete(failed("seven"));
            signal.publish();
        })
    };
    for _ in 0..2 {
        let complete = observed.is_complete();
        let status = observed.status();
        if complete {
            assert!(status.is_some(), "is_complete() but status() is None");
        }
        if let Some(status) = status {
            assert!(
                observed.outcome().is_some(),
                "published but the scheduler has no outcome"
            );
            assert_eq!(failure_message(&status.into_result()), Some("seven"));
        }
        assert_eq!(observed.submission(), 7);
    }
    publisher.join().unwrap();
    assert!(observed.is_complete() && observed.status().is_some());
}

/// The state behind the scheduler lock, as far as a worker's parking goes: work items and
/// the parked bits.
#[derive(Default)]
struct Work {
    items: u32,
    parked: Parked,
}

impl HasParked for Work {
    fn parked(&mut self) -> &mut Parked {
        &mut self.parked
    }
}

/// Model 4: a queue worker's parking ([`park`], [`Parked::take`], [`notify`]). The worker
/// takes two items of work from a state behind a mutex (the scheduler), parking whenever it
/// finds none; two wakers each add one item and take the parked bit under the lock, and
/// notify after dropping it when they took it. Only the first waker after a park notifies;
/// the worker never sleeps over work (a lost wake-up leaves every thread blocked: loom
/// reports a deadlock). A first version took the bit after the lock with an atomic swap:
/// this model found its lost wake-up (a waker whose item the worker had already taken
/// consumed the bit of the worker's next park before the worker was registered as a waiter).
fn worker_parking() {
    let shared = sync::Arc::new((Mutex::new(Work::default()), sync::Condvar::new()));
    let wakers: Vec<_> = (0..2)
        .map(|_| {
            let shared = shared.clone();
            loom::thread::spawn(move || {
                let waiting = {
                    let mut work = lock(&shared.0);
                    work.items += 1;
                    work.parked.take(1)
                };
                notify(std::slice::from_ref(&shared.1), waiting);
            })
        })
        .collect();
    let mut taken = 0;
    let mut work = lock(&shared.0);
    while taken < 2 {
        if work.items == 0 {
            work = park(&shared.1, 0, work);
            continue;
        }
        taken += work.items;
        work.items = 0;
    }
    drop(work);
    for waker in wakers {
        waker.join().unwrap();
    }
}

/// Model 5: a waiter's deferred retirement ([`super::defer`]). The scheduler armed the
/// deferral for the waiter's lone submission; the waiter takes it (or, refused, retires
/// through `finish`), while the graph's last handle is dropped on another thread and a third
/// thread takes the scheduler lock (a `submit`, a worker). The submission is retired exactly
/// once by the time all three are done (a taken deferral nobody resolves would keep the
/// runtime alive), and a taken one is never retired after the last handle went (that
/// retirement would drop the graph's last reference under the scheduler lock).
fn deferred_retirement() {
    use super::defer::{Deferral, Resolved};
    use crate::sync::protocol::AtomicBool;
    // The scheduler's `deferred`: the submission armed, until a lock holder resolves it.
    let scheduler = Arc::new(Mutex::new(Some(1u64)));
    let deferral = Arc::new(Deferral::new());
    deferral.arm();
    let retired = Arc::new(sync::AtomicUsize::new(0));
    let handle_gone = Arc::new(AtomicBool::new(false));
    // What every lock holder does first (`Core::scheduler`).
    let locked = {
        let (scheduler, deferral, retired, gone) = (
            scheduler.clone(),
            deferral.clone(),
            retired.clone(),
            handle_gone.clone(),
        );
        move |then: &dyn Fn()| {
            let mut deferred = lock(&scheduler);
            if deferred.take().is_some() && deferral.resolve() == Resolved::Taken {
                assert!(
                    !gone.load(sync::Ordering::SeqCst),
                    "a taken deferral retired after the graph's last handle went"
                );
                retired.fetch_add(1, sync::Ordering::SeqCst);
            }
            then();
        }
    };
    let waiter = {
        let (deferral, retired, locked) = (deferral.clone(), retired.clone(), locked.clone());
        loom::thread::spawn(move || {
            if !deferral.take() {
                // `finish`: the lock (resolving first), then its own retirement.
                locked(&|| {
                    retired.fetch_add(1, sync::Ordering::SeqCst);
                });
            }
        })
    };
    let dropper = {
        let (deferral, gone, locked) = (deferral.clone(), handle_gone.clone(), locked.clone());
        loom::thread::spawn(move || {
            if deferral.handle_dropped() {
                locked(&|| {});
            }
            gone.store(true, sync::Ordering::SeqCst);
        })
    };
    locked(&|| {});
    waiter.join().unwrap();
    dropper.join().unwrap();
    assert_eq!(
        retired.load(sync::Ordering::SeqCst),
        1,
        "the submission was not retired exactly once"
    );
}

#[test]
fn model_check_waiters_and_own_publisher() {
    assert!(check("waiters_and_own_publisher", None, waiters_and_own_publisher) > 1);
}

#[test]
fn model_check_deferred_retirement() {
    assert!(check("deferred_retirement", None, deferred_retirement) > 1);
}

#[test]
fn model_check_seeded_reset_taken_deferral_is_seen() {
    let message = seeded_failure(
        "deferred_retirement",
        Bug::ResetTakenDeferral,
        deferred_retirement,
    );
    assert!(
        message.contains("retired after the graph's last handle went"),
        "{message}"
    );
}

#[test]
fn model_check_worker_parking() {
    assert!(check("worker_parking", None, worker_parking) > 1);
}

#[test]
fn model_check_seeded_park_without_flag_is_a_deadlock() {
    let message = seeded_failure("worker_parking", Bug::ParkWithoutFlag, worker_parking);
    assert!(message.contains("deadlock"), "{message}");
}

#[test]
fn model_check_waiters_and_publisher() {
    assert!(check("waiters_and_publisher", None, waiters_and_publisher) > 1);
}

#[test]
fn model_check_slot_reuse() {
    assert!(check("slot_reuse", None, slot_reuse) > 1);
}

#[test]
fn model_check_own_slot_reuse() {
    assert!(check("own_slot_reuse", None, own_slot_reuse) > 1);
}

#[test]
fn model_check_seeded_reuse_while_held_is_seen_when_the_waiter_retires_its_own() {
    let message = seeded_failure("own_slot_reuse", Bug::ReuseWhileHeld, own_slot_reuse);
    assert!(
        message.contains("slot re-armed while a completion of submission 1 was held"),
        "{message}"
    );
}

#[test]
fn model_check_visibility() {
    assert!(check("visibility", None, visibility) > 1);
}

#[test]
fn model_check_seeded_lost_wakeup_is_a_deadlock() {
    let message = seeded_failure(
        "waiters_and_publisher",
        Bug::LostWakeup,
        waiters_and_publisher,
    );
    assert!(message.contains("deadlock"), "{message}");
}

#[test]
fn model_check_seeded_notify_without_lock_is_a_deadlock() {
    let message = seeded_failure(
        "waiters_and_publisher",
        Bug::NotifyWithoutLock,
        waiters_and_publisher,
    );
    assert!(message.contains("deadlock"), "{message}");
}

#[test]
fn model_check_seeded_published_before_status_is_seen() {
    let message = seeded_failure("visibility", Bug::PublishedBeforeStatus, visibility);
    assert!(
        message.contains("is_complete() but status() is None"),
        "{message}"
    );
}

#[test]
fn model_check_seeded_reuse_while_held_is_seen() {
    let message = seeded_failure("slot_reuse", Bug::ReuseWhileHeld, slot_reuse);
    assert!(
        message.contains("slot re-armed while completion 1 was held"),
        "{message}"
    );
}
