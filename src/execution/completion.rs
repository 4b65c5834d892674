//! Completions: the host's handle on one submission.
//!
//! A submission's [`Signal`] lives in its prepared graph's slot and is reused by later
//! submissions of that slot. A slot is reused only when its submission retired *and* every
//! [`Completion`] of it was dropped (the signal's `Arc` is then unique), so a completion
//! always observes exactly its own submission.
//!
//! The slot protocol, in the order the runtime runs it:
//!
//! 1. `submit`, under the scheduler lock: [`claim_slot`] picks a slot that is not occupied
//!    and whose signal is [`Signal::reusable`] (retired, its `Arc` unique), then
//!    [`Signal::reset`] arms it for the new submission.
//! 2. The scheduler, under its lock, retires the submission: [`retire_slot`] records the
//!    outcome ([`Signal::complete`]) and frees the slot, keeping a clone of the signal.
//! 3. With no lock held, the scheduler drops what the submission held, then [`publish_all`]
//!    announces the outcomes ([`Signal::publish`]) and drops its clones. A waiter that runs
//!    its own submission's last region retires it with [`retire_own_slot`] instead (no
//!    clone: its own `Completion` keeps the signal and the slot) and publishes it itself,
//!    through that completion, once the lock is dropped and the rest let go.
//! 4. [`Completion::wait`] spins on the signal's word until `PUBLISHED`, then sets
//!    `PARKED` and parks on the condition variable; `publish` takes the parking mutex and
//!    notifies only when `PARKED` is set.
//!
//! The signal's state is one atomic word (retired, published, succeeded): a successful
//! round trip arms, retires, publishes and observes it without taking a lock; only a
//! failure's status and parking use the signal's mutex.
//!
//! Its synchronization comes from [`super::sync`]: `std`'s types, or loom's under the
//! `model-check` feature, with which `execution::model_check` explores every schedule of
//! this code.

use super::shared::Core;
use super::types::Status;
use crate::sync::protocol::{AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use crate::sync::{lock, spin_until};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool as Flag, Ordering as StdOrdering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// [`Signal`]'s word: the submission retired (as the scheduler sees it).
pub(super) const RETIRED: usize = 1;
/// The outcome is announced to completions: set once the scheduler dropped everything the
/// submission held, so a waiter that returns can rely on the runtime having let go.
pub(super) const PUBLISHED: usize = 2;
/// Set with `RETIRED` when the outcome is a success (no status to read under the lock).
pub(super) const SUCCEEDED: usize = 4;
/// A waiter parks (or parked) on the condition variable: `publish` must notify it.
pub(super) const PARKED: usize = 8;

/// One slot's completion signal: one atomic word for its state, a mutex only for a failed
/// outcome's status and for parking.
///
/// The word moves `0 -> RETIRED [| SUCCEEDED] -> ... | PUBLISHED`, set by the thread that
/// retires the submission (under the scheduler lock, then after it), with `PARKED` set by a
/// waiter at any point, and back to 0 only at [`Signal::reset`], when nothing else holds
/// the signal. Every change after the reset is a read-modify-write of the one word, so the
/// changes are totally ordered without `SeqCst` (see [`Signal::publish`]). A successful
/// round trip takes no lock of the signal: the waiter spins on the word and reads
/// `SUCCEEDED` from it.
#[derive(Debug)]
pub(crate) struct Signal {
    pub(super) word: AtomicUsize,
    /// The failure or cancellation of the current submission (`None` for a success): written
    /// before `RETIRED` is stored, read only after it is seen. Also the parking mutex.
    pub(super) status: Mutex<Option<Status>>,
    /// The submission the signal is armed for (for `Debug` and the models).
    pub(super) submission: AtomicU64,
    pub(super) changed: Condvar,
    /// Live [`Completion`]s of this signal. Not part of the slot protocol (that is the
    /// `Arc`'s uniqueness, [`Signal::reusable`]): `submit` uses it to tell a slot that only
    /// the publishing worker still references, free a moment later, from one a caller holds.
    pub(super) completions: AtomicUsize,
    /// The runtime's core, for [`Completion::wait`] to run ready regions itself and for
    /// `submit_after` to tell its producers' runtimes: set once when the graph is prepared,
    /// so that a submit does not make a `Weak` per completion (two atomic read-modify-writes
    /// per round trip fewer). Dangling once the runtime is gone.
    pub(super) core: Weak<Core>,
}

/// Picks and marks a free slot (called under the scheduler lock, with the graph's
/// `occupied` flags, which only the lock holder reads or writes): one not occupied whose
/// signal is [`Signal::reusable`].
pub(crate) fn claim_slot(occupied: &[Flag], signals: &[Arc<Signal>]) -> Option<usize> {
    let slot = (0..occupied.len())
        .find(|&i| !occupied[i].load(StdOrdering::Relaxed) && Signal::reusable(&signals[i]))?;
    occupied[slot].store(true, StdOrdering::Relaxed);
    Some(slot)
}

/// Retires a slot's submission (called under the scheduler lock): records `status` and
/// frees the slot; the returned clone of the signal is published by [`publish_all`] once the
/// lock is dropped, and keeps the slot from being reused until then.
pub(crate) fn retire_slot(
    occupied: &[Flag],
    slot: usize,
    signals: &[Arc<Signal>],
    status: Status,
) -> Arc<Signal> {
    let signal = signals[slot].clone();
    signal.complete(status);
    occupied[slot].store(false, StdOrdering::Relaxed);
    signal
}

/// Retires a slot's submission for the thread that holds a [`Completion`] of it and will
/// publish it itself ([`Signal::publish`] through that completion, once the lock is
/// dropped): as [`retire_slot`], without the scheduler's clone of the signal. The
/// completion's own reference keeps the signal alive and the slot from being re-armed
/// ([`Signal::reusable`]) until its holder drops it, after publishing: a waiter that runs
/// its own submission's last region (`worker::help`) spares two reference-count changes
/// between its device's completion and its next launch (issue 16).
pub(crate) fn retire_own_slot(
    occupied: &[Flag],
    slot: usize,
    signals: &[Arc<Signal>],
    status: Status,
) {
    signals[slot].complete(status);
    occupied[slot].store(false, StdOrdering::Relaxed);
}

/// Publishes retired signals (with no lock held, after what their submissions held was
/// dropped) and drops the scheduler's clones of them.
pub(crate) fn publish_all(signals: impl IntoIterator<Item = Arc<Signal>>) {
    for signal in signals {
        signal.publish();
    }
}

impl Signal {
    /// A retired signal of a slot of a graph prepared on `core`'s runtime.
    pub fn new(core: Weak<Core>) -> Arc<Self> {
        Arc::new(Self {
            word: AtomicUsize::new(RETIRED | PUBLISHED),
            status: Mutex::new(None),
            submission: AtomicU64::new(0),
            changed: Condvar::new(),
            completions: AtomicUsize::new(0),
            core,
        })
    }
    /// Arms the signal for `submission` (under the scheduler lock, the signal unique).
    pub fn reset(&self, submission: u64) {
        if self.word.load(Ordering::Relaxed) & SUCCEEDED == 0 {
            // An earlier failure's status (or none): cleared, so `outcome` never reads it.
            *lock(&self.status) = None;
        }
        self.submission.store(submission, Ordering::Relaxed);
        self.word.store(0, Ordering::Release);
    }
    /// Records the outcome (under the scheduler lock); the caller publishes it
    /// ([`Signal::publish`]) after dropping its locks.
    pub fn complete(&self, status: Status) {
        #[cfg(all(test, feature = "model-check"))]
        if super::model_check::complete_seeded(self, &status) {
            return;
        }
        let word = if matches!(status, Status::Succeeded) {
            RETIRED | SUCCEEDED
        } else {
            *lock(&self.status) = Some(status);
            RETIRED
        };
        // Release: whoever sees `RETIRED` sees the status stored above. A read-modify-write:
        // a waiter may have set `PARKED` already.
        self.word.fetch_or(word, Ordering::Release);
    }
    /// Whether a slot holding this signal may be re-armed: its submission retired and nothing
    /// else holds the signal (no [`Completion`], no scheduler clone awaiting publication).
    pub fn reusable(this: &Arc<Self>) -> bool {
        let unique = Arc::strong_count(this) == 1;
        if unique {
            // Pairs with the release decrement of the last other clone's drop: whatever that
            // holder stored before letting go (a publisher's late `PUBLISHED`) is then
            // visible here and is overwritten by `reset`, not after it (on weakly ordered CPUs
            // the count alone would not order them).
            std::sync::atomic::fence(StdOrdering::Acquire);
        }
        #[cfg(all(test, feature = "model-check"))]
        let unique = unique || super::model_check::seeded(super::model_check::Bug::ReuseWhileHeld);
        unique && this.is_done()
    }
    /// Announces the outcome to completions and wakes waiters; call with no lock held, by the
    /// thread that called [`Signal::complete`].
    ///
    /// The hand-shake with a parking waiter ([`Signal::park`]): both set their bit with a
    /// read-modify-write of the word, which orders them. Set first, `PUBLISHED` keeps the
    /// waiter from sleeping; set first, `PARKED` is seen here, and this takes and drops the
    /// parking mutex before notifying: the waiter holds that mutex from setting its bit until
    /// the condition variable releases it, so the notification cannot come between its check
    /// and its sleep.
    pub fn publish(&self) {
        #[cfg(all(test, feature = "model-check"))]
        if super::model_check::publish_seeded(self) {
            return;
        }
        if self.word.fetch_or(PUBLISHED, Ordering::AcqRel) & PARKED != 0 {
            drop(lock(&self.status));
            self.changed.notify_all();
        }
    }
    /// Records a success and publishes it in one read-modify-write: [`Signal::complete`]
    /// then [`Signal::publish`] with nothing between, for a waiter that retires its own
    /// submission outside the scheduler lock (`worker::settle_own`, `super::defer`). A
    /// waiter parked on another completion of it is woken as `publish` wakes it.
    pub fn publish_success(&self) {
        if self
            .word
            .fetch_or(RETIRED | SUCCEEDED | PUBLISHED, Ordering::AcqRel)
            & PARKED
            != 0
        {
            drop(lock(&self.status));
            self.changed.notify_all();
        }
    }
    /// The status behind a word with `RETIRED` set (`None` only for a signal never armed).
    fn status_of(&self, word: usize) -> Option<Status> {
        if word & SUCCEEDED != 0 {
            return Some(Status::Succeeded);
        }
        lock(&self.status).clone()
    }
    /// The outcome as the scheduler sees it, published or not.
    pub fn outcome(&self) -> Option<Status> {
        let word = self.word.load(Ordering::Acquire);
        if word & RETIRED == 0 {
            return None;
        }
        self.status_of(word)
    }
    /// The published outcome.
    fn published(&self) -> Option<Status> {
        let word = self.word.load(Ordering::Acquire);
        if word & PUBLISHED == 0 {
            return None;
        }
        self.status_of(word)
    }
    /// Whether the outcome is published.
    pub(super) fn is_published(&self) -> bool {
        self.word.load(Ordering::Acquire) & PUBLISHED != 0
    }
    /// The published outcome as a result (`Ok` for a success or a signal never armed).
    fn result(&self) -> Result<()> {
        self.published().map_or(Ok(()), Status::into_result)
    }
    /// Parks until the outcome is published or `deadline` passed; whether it was published.
    fn park(&self, deadline: Option<Instant>) -> bool {
        let mut guard = lock(&self.status);
        let mut published = self.word.fetch_or(PARKED, Ordering::AcqRel) & PUBLISHED != 0;
        while !published {
            match deadline {
                None => guard = self.changed.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    guard = self
                        .changed
                        .wait_timeout(guard, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
            published = self.word.load(Ordering::Acquire) & PUBLISHED != 0;
        }
        drop(guard);
        published
    }
    /// Whether the submission retired (as the scheduler sees it, published or not).
    pub fn is_done(&self) -> bool {
        self.word.load(Ordering::Acquire) & RETIRED != 0
    }
}

/// The host's handle on one submission. Hold it while you need the outcome; dropping it
/// lets the graph's slot be reused once the submission retired.
pub struct Completion {
    pub(crate) signal: Arc<Signal>,
    /// The signal's submission, fixed while any completion of it is alive.
    submission: u64,
}

impl Completion {
    /// A completion of `signal`'s `submission` (the one it was just armed for), counted in
    /// [`Signal`]'s `completions`.
    pub(crate) fn new(signal: Arc<Signal>, submission: u64) -> Self {
        signal.completions.fetch_add(1, Ordering::AcqRel);
        Self { signal, submission }
    }

    /// The runtime's core (dangling once the runtime is gone).
    pub(crate) fn core(&self) -> &Weak<Core> {
        &self.signal.core
    }
}

impl Clone for Completion {
    fn clone(&self) -> Self {
        Self::new(self.signal.clone(), self.submission)
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        self.signal.completions.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Signal {
    /// Whether only the worker publishing this signal's retired submission may still hold
    /// it: retired, and no [`Completion`] of it is alive.
    pub(crate) fn settling(&self) -> bool {
        self.completions.load(Ordering::Acquire) == 0 && self.is_done()
    }
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field(
                "submission",
                &self.signal.submission.load(Ordering::Relaxed),
            )
            .field("status", &self.signal.outcome())
            .finish()
    }
}

/// In a child forked since `core`'s runtime was created, a submission not yet retired never
/// will be (its workers are the parent's): an error, not a wait for ever. Asked only of a
/// submission found not retired (a retired one answers its outcome), with the core the wait
/// takes anyway: no extra reference count on a round trip.
fn refuse_if_forked(core: &Core) -> Result<()> {
    if core.forked() {
        return Err(crate::sync::forked_error());
    }
    Ok(())
}

impl Completion {
    /// The submission's index (from 1, per runtime).
    pub fn submission(&self) -> u64 {
        self.submission
    }

    /// Whether the submission retired.
    pub fn is_complete(&self) -> bool {
        self.signal.is_published()
    }

    /// The outcome once retired.
    pub fn status(&self) -> Option<Status> {
        self.signal.published()
    }

    /// The outcome as the scheduler sees it (under its lock), before it is published.
    pub(crate) fn outcome(&self) -> Option<Status> {
        self.signal.outcome()
    }

    /// Blocks until the submission retired. First the calling thread runs those of the
    /// submission's native regions (native graph, copy batch, NPU run) that are ready while
    /// their queue is idle, as the queue's worker would have, sparing the hand-off to and from
    /// that worker, and completes (synchronizes) a graph that `submit` launched early; the
    /// workers run the rest, and user callbacks always.
    ///
    /// Traced, a wait that blocked (found the submission not yet retired) is recorded as a
    /// [`hrx_capture::schema::HostSpan`] of kind `Wait` on the calling thread; one that found
    /// it retired records nothing.
    ///
    /// # Errors
    /// The failure of the submission or [`Error::Cancelled`]; [`Error::Unsupported`] in a
    /// child process forked after the runtime was created, for a submission not yet retired
    /// (the parent's workers run it, not the child's).
    pub fn wait(&self) -> Result<()> {
        let done = || self.signal.is_published();
        let mut traced_from = None;
        if !done()
            && let Some(core) = self.core().upgrade()
        {
            refuse_if_forked(&core)?;
            traced_from = core.context().tracer.on().then(crate::clock::now_ns);
            super::worker::help(&core, &self.signal, self.submission(), done);
        }
        if !spin_until(done) {
            self.signal.park(None);
        }
        if let Some(start_ns) = traced_from {
            self.waited(start_ns);
        }
        self.signal.result()
    }

    /// Records a blocking wait that began at `start_ns` and ends now.
    #[cold]
    fn waited(&self, start_ns: u64) {
        if let Some(core) = self.core().upgrade() {
            let tracer = &core.context().tracer;
            let kind = hrx_capture::schema::HostSpanKind::Wait;
            super::record::host_span(tracer, kind, self.submission, start_ns);
        }
    }

    /// Blocks until the submission retired or `timeout` passed.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it did not retire in time; otherwise as [`Completion::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        if self.signal.is_published() {
            return self.signal.result();
        }
        let core = self.core().upgrade();
        if let Some(core) = &core {
            refuse_if_forked(core)?;
        }
        let traced_from =
            core.and_then(|core| core.context().tracer.on().then(crate::clock::now_ns));
        let retired = self.signal.park(Some(Instant::now() + timeout));
        if let Some(start_ns) = traced_from {
            self.waited(start_ns);
        }
        if !retired {
            return Err(Error::Timeout(timeout));
        }
        self.signal.result()
    }
}
