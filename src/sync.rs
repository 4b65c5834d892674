//! Locking that survives a panicked holder, and the primitives of the completion protocol.
//!
//! [`lock`] is the runtime's one way to take a mutex. It ignores poisoning: every critical
//! section of the runtime leaves its state consistent at each point a panic can leave it
//! (a panic inside a native callback is caught and answered as a device loss), so a
//! panicked holder is no reason to fail every later caller.
//!
//! [`protocol`] is the facade of the completion protocol and of the workers' parking: `std`'s
//! types, or loom's with the `model-check` feature, so that `execution::model_check` explores
//! every schedule of the real code. [`lock`] takes both.
//!
//! [`spin_until`] is the runtime's one bounded spin (completion waits, idle workers, trace
//! capture fences and hashing threads).

/// A mutex [`lock`] can take: `std`'s, and loom's in model-checking builds.
pub(crate) trait Lockable {
    /// The guard.
    type Guard<'a>
    where
        Self: 'a;
    /// Locks, ignoring poisoning.
    fn lock_ignoring_poison(&self) -> Self::Guard<'_>;
}

impl<T: ?Sized> Lockable for std::sync::Mutex<T> {
    type Guard<'a>
        = std::sync::MutexGuard<'a, T>
    where
        T: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(feature = "model-check")]
impl<T> Lockable for loom::sync::Mutex<T> {
    type Guard<'a>
        = loom::sync::MutexGuard<'a, T>
    where
        T: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

// Shared and boxed mutexes lock through their pointer, as `Mutex::lock` would by auto-deref.
impl<M: Lockable + ?Sized> Lockable for std::sync::Arc<M> {
    type Guard<'a>
        = M::Guard<'a>
    where
        Self: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        (**self).lock_ignoring_poison()
    }
}

impl<M: Lockable + ?Sized> Lockable for Box<M> {
    type Guard<'a>
        = M::Guard<'a>
    where
        Self: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        (**self).lock_ignoring_poison()
    }
}

impl<M: Lockable> Lockable for crossbeam_utils::CachePadded<M> {
    type Guard<'a>
        = M::Guard<'a>
    where
        Self: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        (**self).lock_ignoring_poison()
    }
}

#[cfg(feature = "model-check")]
impl<M: Lockable + ?Sized> Lockable for loom::sync::Arc<M> {
    type Guard<'a>
        = M::Guard<'a>
    where
        Self: 'a;
    fn lock_ignoring_poison(&self) -> Self::Guard<'_> {
        (**self).lock_ignoring_poison()
    }
}

/// Locks `mutex`, ignoring poisoning (see the module docs for why that is sound here).
pub(crate) fn lock<M: Lockable + ?Sized>(mutex: &M) -> M::Guard<'_> {
    mutex.lock_ignoring_poison()
}

/// How long `wait` spins on the done flag before parking (cf. CUDA's
/// `cudaDeviceScheduleAuto`, which spins while cores are free): a short region completes
/// without two context switches.
#[cfg_attr(feature = "model-check", allow(dead_code))] // `MODEL_SPINS` polls instead
pub(crate) const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// Polls `done` for up to [`SPIN`]; whether it became true.
#[cfg(not(feature = "model-check"))]
pub(crate) fn spin_until(done: impl Fn() -> bool) -> bool {
    // Checked before the clock is read: a wait that finds its submission done reads none.
    if done() {
        return true;
    }
    let start = std::time::Instant::now();
    loop {
        for _ in 0..64 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= SPIN {
            return false;
        }
    }
}

/// Under loom (no wall clock): polls `done` a fixed [`MODEL_SPINS`] times, so a model
/// explores both a spin that sees the flag and one that gives up and parks.
#[cfg(feature = "model-check")]
pub(crate) fn spin_until(done: impl Fn() -> bool) -> bool {
    (0..MODEL_SPINS).any(|_| done())
}

/// Polls of `done` in [`spin_until`] under the `model-check` feature.
#[cfg(feature = "model-check")]
pub(crate) const MODEL_SPINS: usize = 2;

/// The primitives of the slot, signal and completion protocol and of the workers' parking
/// (the scheduler lock and the queues' condition variables), from `std` or from loom.
///
/// Without the `model-check` feature these are plain re-exports of `std`'s types: the same
/// types, the same code, no wrapper. With it they are loom's, so the tests in
/// `execution::model_check` explore every schedule (and the weak memory orderings loom
/// models) of the real code. A runtime built with the feature cannot run outside
/// `loom::model`; the feature exists only for
/// `cargo test -p hrx --lib --features model-check model_check`.
///
/// The signal's `Arc` stays `std`'s in both builds (`completion::Signal::new`): prepared
/// graphs hold their slots' signals in `std::sync::Arc`s. Under loom its count is read at
/// loom's schedule points like any other state, not modelled as an atomic.
pub(crate) mod protocol {
    #[cfg(not(feature = "model-check"))]
    #[allow(unused_imports)] // the facade's full set; the protocol uses part of it
    pub(crate) use std::sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    };

    #[cfg(feature = "model-check")]
    #[allow(unused_imports)] // the facade's full set; the protocol uses part of it
    pub(crate) use loom::sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    };
}
