//! A waiter's deferred retirement (issue 16: the round trip's serial path).
//!
//! A thread that waits for a submission alone in flight with one region runs that region
//! itself, or completes it when `submit` launched it early ([`super::worker::help`]). Once
//! the region succeeded (the device synchronized), what the submission's retirement must do
//! before `wait` returns is small: record and publish the outcome (one read-modify-write,
//! [`super::completion::Signal::publish_success`]). The rest (taking it out of the
//! scheduler's list, which is also its buffers' device-use registration
//! ([`crate::buffer::DeviceUses`]: a host access takes the lock too), freeing its slot, its
//! queue idle again) only matters to whoever takes the scheduler lock next: so the waiter leaves
//! it to them, and the next lock holder (in a round-trip loop, the next `submit`, which takes
//! the lock anyway) retires it first ([`super::scheduler::Scheduler::resolve`], from
//! [`super::shared::Core::scheduler`]). The waiter's own trip through the lock (`finish`)
//! and the wake-ups after it leave the path from the device's completion to the next launch.
//!
//! The hand-over is one word per prepared graph ([`Deferral`]): the scheduler *arms* it, under
//! its lock, when the waiter claims the region and the submission is alone and untraced;
//! the waiter *takes* it after its region succeeded; any lock holder *resolves* it (first
//! thing under the lock): an armed deferral is disarmed, and the waiter, whose take then
//! fails, retires through `finish` as before; a taken one is retired there.
//!
//! Why a taken submission never waits forever for a lock holder: the graph's submission,
//! while in the scheduler's list, holds the runtime (its prepared graph holds the runtime's
//! owner), so a deferral nobody resolved would keep the runtime, its worker threads and its
//! trace open after the program dropped it. The word therefore also counts the
//! [`super::submit::ExecutableGraph`] handles: the waiter takes a deferral only while a handle
//! lives, and a handle dropped while one is armed or taken resolves it (under the lock)
//! before it lets its graph go. Both sides change the one word with read-modify-writes, so
//! one of them sees the other: either the take finds no handle (and the waiter retires
//! through `finish`), or the drop finds the deferral taken (and retires it). The retirement
//! of a taken submission therefore always happens while a handle of its graph is alive, and
//! never drops the last reference to the graph (or the runtime) under the scheduler lock.
//!
//! Only untraced submissions defer, so a deferred retirement has no trace records to write
//! (a traced one records its `SubmissionDone` when it retires). Session 32 deferred only
//! early launches (CUDA, HIP); session 33 the software device's synchronous regions too
//! (`submit_to_complete`: one scheduler lock a round trip fewer there).

use crate::sync::protocol::{AtomicUsize, Ordering};

/// The state bits of a [`Deferral`]'s word.
const STATE: usize = 0b11;
/// No deferral.
const IDLE: usize = 0;
/// Armed by the scheduler for the claiming waiter.
const ARMED: usize = 1;
/// Taken by the waiter: the submission's outcome is published; the scheduler retires it.
const TAKEN: usize = 2;
/// One [`super::submit::ExecutableGraph`] handle, counted above the state bits.
const HANDLE: usize = 1 << 2;

/// How a lock holder found a deferral it resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// None was armed (a handle's drop resolved it first, say).
    Idle,
    /// Armed, not taken: now disarmed; the waiter retires through `finish`.
    Disarmed,
    /// Taken: the waiter published the outcome; the lock holder retires the submission.
    Taken,
}

/// A prepared graph's deferral word: the live handles of the graph and the state of the
/// deferred retirement of its submission, if any (at most one per runtime: the submission
/// must be alone in flight).
#[derive(Debug)]
pub(crate) struct Deferral(AtomicUsize);

impl Deferral {
    /// A graph's first handle.
    pub fn new() -> Self {
        Self(AtomicUsize::new(HANDLE))
    }

    /// Another handle of the graph (a clone).
    pub fn handle_added(&self) {
        self.0.fetch_add(HANDLE, Ordering::Relaxed);
    }

    /// A handle dropped: whether a deferral is armed or taken, which the dropper must then
    /// resolve under the scheduler lock before letting its graph go.
    pub fn handle_dropped(&self) -> bool {
        self.0.fetch_sub(HANDLE, Ordering::AcqRel) & STATE != IDLE
    }

    /// Arms the deferral (under the scheduler lock, before the waiter synchronizes: not on
    /// the path from the device's completion to the next launch). A taken state an earlier
    /// resolve left (see [`Deferral::resolve`]) is overwritten.
    pub fn arm(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
                Some(word & !STATE | ARMED)
            });
    }

    /// Whether a deferral is armed (a load: the waiter's first look, before its work).
    pub fn armed(&self) -> bool {
        self.0.load(Ordering::Relaxed) & STATE == ARMED
    }

    /// The waiter takes the armed deferral, if it still is and a handle lives: after this,
    /// a lock holder may retire the submission at any moment.
    pub fn take(&self) -> bool {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if word & STATE != ARMED || word < HANDLE {
                return false;
            }
            match self.0.compare_exchange_weak(
                word,
                word - ARMED + TAKEN,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// Ends the deferral (under the scheduler lock), saying how it was found. A taken one is
    /// left taken (only the next [`Deferral::arm`] changes it: the waiter takes only an armed
    /// one): a handle dropped meanwhile then sees it taken and waits for this lock holder
    /// before it lets its graph go, so the retirement that follows never drops the graph's
    /// last reference (the loom model `deferred_retirement` found that resetting it let the
    /// last handle go during that retirement). Reading it, not resetting it, also spares the
    /// next `submit` a locked read-modify-write on its way to the launch. An armed one is
    /// disarmed, unless the waiter takes it first.
    pub fn resolve(&self) -> Resolved {
        #[cfg(all(test, feature = "model-check"))]
        if super::model_check::seeded(super::model_check::Bug::ResetTakenDeferral) {
            return match self.0.fetch_and(!STATE, Ordering::AcqRel) & STATE {
                TAKEN => Resolved::Taken,
                ARMED => Resolved::Disarmed,
                _ => Resolved::Idle,
            };
        }
        let mut word = self.0.load(Ordering::Acquire);
        loop {
            match word & STATE {
                TAKEN => return Resolved::Taken,
                IDLE => return Resolved::Idle,
                _ => match self.0.compare_exchange_weak(
                    word,
                    word & !STATE,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Resolved::Disarmed,
                    Err(now) => word = now,
                },
            }
        }
    }
}

#[cfg(all(test, not(feature = "model-check")))]
mod tests {
    use super::{Deferral, Resolved};

    #[test]
    fn a_taken_deferral_is_resolved_once_and_an_armed_one_disarmed() {
        let d = Deferral::new();
        assert!(!d.take(), "nothing armed");
        d.arm();
        assert!(d.armed());
        assert_eq!(d.resolve(), Resolved::Disarmed);
        assert!(!d.take(), "disarmed before the take");
        d.arm();
        assert!(d.take());
        assert!(!d.armed());
        assert_eq!(d.resolve(), Resolved::Taken);
        // Left taken until the next arm; the scheduler resolves a submission once (its
        // `deferred` names it until then).
        assert!(!d.take());
        d.arm();
        assert!(d.armed());
        assert_eq!(d.resolve(), Resolved::Disarmed);
        assert_eq!(d.resolve(), Resolved::Idle);
    }

    #[test]
    fn the_last_handle_gone_the_waiter_does_not_take() {
        let d = Deferral::new();
        d.handle_added();
        assert!(!d.handle_dropped(), "nothing armed: no resolve");
        d.arm();
        // The last handle dropped while armed: its dropper resolves.
        assert!(d.handle_dropped());
        assert!(!d.take(), "no handle lives: nobody would resolve a take");
    }

    #[test]
    fn a_handle_dropped_after_the_take_resolves_it() {
        let d = Deferral::new();
        d.arm();
        assert!(d.take());
        assert!(d.handle_dropped());
        assert_eq!(d.resolve(), Resolved::Taken);
    }
}
