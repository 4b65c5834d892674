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
//!    announces the outcomes ([`Signal::publish`]) and drops its clones.
//! 4. [`Completion::wait`] spins on the `done` flag, then parks on the condition variable
//!    counted in `waiters`; `publish` skips the notify when nobody is counted.
//!
//! Its synchronization comes from [`super::sync`]: `std`'s types, or loom's under the
//! `model-check` feature, with which `execution::model_check` explores every schedule of
//! this code.

use super::shared::Core;
use super::types::Status;
use crate::sync::protocol::{AtomicBool, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};
use crate::sync::{lock, spin_until};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool as Flag, Ordering as StdOrdering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct SignalState {
    /// Retired, as the scheduler sees it (set under the scheduler lock).
    pub done: bool,
    /// Announced to completions: set once the scheduler dropped everything the submission
    /// held, so a waiter that returns can rely on the runtime having let go.
    pub published: bool,
    pub submission: u64,
    pub status: Option<Status>,
}

/// One slot's completion signal.
#[derive(Debug)]
pub(crate) struct Signal {
    pub state: Mutex<SignalState>,
    pub(super) changed: Condvar,
    /// Mirrors `state.published` for lock-free spinning in `wait`.
    pub(super) done: AtomicBool,
    /// Set before `done` when the published outcome is a success: `wait` then returns
    /// without taking the lock.
    succeeded: AtomicBool,
    /// Mirrors `state.done` (retired) for the lock-free slot checks.
    retired: AtomicBool,
    /// Threads parked on `changed`; `notify` skips the syscall when there are none.
    pub(super) waiters: AtomicUsize,
    /// Live [`Completion`]s of this signal. Not part of the slot protocol (that is the
    /// `Arc`'s uniqueness, [`Signal::reusable`]): `submit` uses it to tell a slot that only
    /// the publishing worker still references, free a moment later, from one a caller holds.
    pub(super) completions: AtomicUsize,
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

/// Publishes retired signals (with no lock held, after what their submissions held was
/// dropped) and drops the scheduler's clones of them.
pub(crate) fn publish_all(signals: impl IntoIterator<Item = Arc<Signal>>) {
    for signal in signals {
        signal.publish();
    }
}

impl Signal {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(SignalState {
                done: true,
                published: true,
                submission: 0,
                status: None,
            }),
            changed: Condvar::new(),
            done: AtomicBool::new(true),
            succeeded: AtomicBool::new(false),
            retired: AtomicBool::new(true),
            waiters: AtomicUsize::new(0),
            completions: AtomicUsize::new(0),
        })
    }
    /// Arms the signal for `submission`.
    pub fn reset(&self, submission: u64) {
        let mut state = lock(&self.state);
        state.done = false;
        state.published = false;
        state.submission = submission;
        state.status = None;
        self.retired.store(false, Ordering::Release);
        self.succeeded.store(false, Ordering::Relaxed);
        self.done.store(false, Ordering::Release);
    }
    /// Records the outcome; the caller calls [`Signal::notify`] after dropping its locks.
    pub fn complete(&self, status: Status) {
        let mut state = lock(&self.state);
        state.done = true;
        state.status = Some(status);
        self.retired.store(true, Ordering::Release);
    }
    /// Whether a slot holding this signal may be re-armed: its submission retired and nothing
    /// else holds the signal (no [`Completion`], no scheduler clone awaiting publication).
    pub fn reusable(this: &Arc<Self>) -> bool {
        let unique = Arc::strong_count(this) == 1;
        if unique {
            // Pairs with the release decrement of the last other clone's drop: whatever that
            // holder stored before letting go (a publisher's late `succeeded`/`done`) is then
            // visible here and is overwritten by `reset`, not after it (on weakly ordered CPUs
            // the count alone would not order them).
            std::sync::atomic::fence(StdOrdering::Acquire);
        }
        #[cfg(all(test, feature = "model-check"))]
        let unique = unique || super::model_check::seeded(super::model_check::Bug::ReuseWhileHeld);
        unique && this.is_done()
    }
    /// Announces the outcome to completions and wakes waiters; call with no lock held.
    pub fn publish(&self) {
        #[cfg(all(test, feature = "model-check"))]
        if super::model_check::publish_seeded(self) {
            return;
        }
        let mut state = lock(&self.state);
        state.published = true;
        let succeeded = matches!(state.status, Some(Status::Succeeded));
        drop(state);
        self.succeeded.store(succeeded, Ordering::Relaxed);
        self.done.store(true, Ordering::Release);
        if self.waiters.load(Ordering::SeqCst) != 0 {
            self.changed.notify_all();
        }
    }
    /// The outcome as the scheduler sees it, published or not.
    pub fn outcome(&self) -> Option<Status> {
        let state = lock(&self.state);
        if state.done {
            state.status.clone()
        } else {
            None
        }
    }
    /// Parks on the condition variable, counted in `waiters`.
    fn park<'a>(
        &self,
        state: MutexGuard<'a, SignalState>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, SignalState> {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let state = match timeout {
            None => self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(timeout) => {
                self.changed
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        state
    }
    /// Whether the submission retired (as the scheduler sees it, published or not).
    pub fn is_done(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }
}

/// The host's handle on one submission. Hold it while you need the outcome; dropping it
/// lets the graph's slot be reused once the submission retired.
pub struct Completion {
    pub(crate) signal: Arc<Signal>,
    pub(crate) core: Weak<Core>,
    /// The signal's submission, fixed while any completion of it is alive.
    submission: u64,
}

impl Completion {
    /// A completion of `signal`'s `submission` (the one it was just armed for), counted in
    /// [`Signal`]'s `completions`.
    pub(crate) fn new(signal: Arc<Signal>, core: Weak<Core>, submission: u64) -> Self {
        signal.completions.fetch_add(1, Ordering::AcqRel);
        Self {
            signal,
            core,
            submission,
        }
    }
}

impl Clone for Completion {
    fn clone(&self) -> Self {
        Self::new(self.signal.clone(), self.core.clone(), self.submission)
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
        let state = lock(&self.signal.state);
        f.debug_struct("Completion")
            .field("submission", &state.submission)
            .field("status", &state.status)
            .finish()
    }
}

impl Completion {
    /// The submission's index (from 1, per runtime).
    pub fn submission(&self) -> u64 {
        self.submission
    }

    /// Whether the submission retired.
    pub fn is_complete(&self) -> bool {
        self.signal.done.load(Ordering::Acquire)
    }

    /// The outcome once retired.
    pub fn status(&self) -> Option<Status> {
        let state = lock(&self.signal.state);
        if state.published {
            state.status.clone()
        } else {
            None
        }
    }

    /// The outcome as the scheduler sees it (under its lock), before it is published.
    pub(crate) fn outcome(&self) -> Option<Status> {
        self.signal.outcome()
    }

    /// Blocks until the submission retired. First the calling thread runs those of the
    /// submission's native regions (native graph, copy batch, NPU run) that are ready while
    /// their queue is idle, as the queue's worker would have, sparing the hand-off to and from
    /// that worker; the workers run the rest, and user callbacks always.
    ///
    /// # Errors
    /// The failure of the submission or [`Error::Cancelled`].
    pub fn wait(&self) -> Result<()> {
        let done = || self.signal.done.load(Ordering::Acquire);
        if !done()
            && let Some(core) = self.core.upgrade()
        {
            super::worker::help(&core, self.submission(), done);
        }
        // `done` is stored after `succeeded`: a success needs no lock.
        if spin_until(done) && self.signal.succeeded.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut state = lock(&self.signal.state);
        while !state.published {
            state = self.signal.park(state, None);
        }
        state.status.clone().map_or(Ok(()), Status::into_result)
    }

    /// Blocks until the submission retired or `timeout` passed.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it did not retire in time; otherwise as [`Completion::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.signal.state);
        while !state.published {
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout(timeout));
            }
            state = self.signal.park(state, Some(deadline - now));
        }
        state.status.clone().map_or(Ok(()), Status::into_result)
    }
}
