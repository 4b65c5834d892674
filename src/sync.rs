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

/// The process's fork count ([`hrx_capture::fork`], the trace's own): a runtime keeps the
/// count it was created under, so that one relaxed load tells it that it is in a child
/// forked since ([`forked_error`]).
pub(crate) use hrx_capture::fork::{forks, watch_forks};

/// What a runtime answers in a child forked after it was created: its workers (and any
/// device context, as CUDA's) are not in the child, so it would wait for them for ever.
pub(crate) fn forked_error() -> crate::Error {
    crate::Error::Unsupported(
        "this runtime was created before this process was forked: its worker threads and \
         device contexts are not in the child (as CUDA's are not); create a runtime in the \
         child, or fork before creating one"
            .into(),
    )
}

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

/// A value that one thread at a time uses, where the caller's protocol already guarantees
/// that: a region's native stream and graph (the scheduler runs a region on one thread at a
/// time: at most one region of a queue runs at once, and a region belongs to one queue).
///
/// Cheaper than a mutex on the path every region takes: one read-modify-write to claim it
/// and a plain release store to let it go, where a mutex's lock and unlock take one each,
/// and no poisoning to handle. It never blocks: a second claim while the value is held means
/// that protocol broke, and panics (a region's panic is caught and answered as a failure),
/// so a broken protocol is a failure, never a data race.
pub(crate) struct Exclusive<T> {
    held: std::sync::atomic::AtomicBool,
    value: std::cell::UnsafeCell<T>,
}

// SAFETY: the value is reached only through an `ExclusiveGuard`, and `claim` hands out at
// most one at a time (the swap below), so sharing an `Exclusive` shares no `&mut T` between
// threads; the value itself moves between threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    /// Wraps `value`, not held.
    pub fn new(value: T) -> Self {
        Self {
            held: std::sync::atomic::AtomicBool::new(false),
            value: std::cell::UnsafeCell::new(value),
        }
    }

    /// The value, for the calling thread alone until the guard drops.
    ///
    /// # Panics
    /// When another guard of it is alive: the caller's one-thread-at-a-time protocol broke.
    pub fn claim(&self) -> ExclusiveGuard<'_, T> {
        // Acquire: what the previous holder wrote before its release store is visible.
        let held = self.held.swap(true, std::sync::atomic::Ordering::Acquire);
        assert!(
            !held,
            "a region's native stream was claimed by two threads at once"
        );
        ExclusiveGuard { cell: self }
    }
}

/// The value of an [`Exclusive`] while claimed; dropping it lets the value go.
pub(crate) struct ExclusiveGuard<'a, T> {
    cell: &'a Exclusive<T>,
}

impl<T> std::ops::Deref for ExclusiveGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one alive (`claim`), so no `&mut T` exists elsewhere.
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> std::ops::DerefMut for ExclusiveGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.cell.value.get() }
    }
}

impl<T> Drop for ExclusiveGuard<'_, T> {
    fn drop(&mut self) {
        // Release: the next claim sees what this holder wrote. A plain store, not a
        // read-modify-write: only the holder clears the flag.
        self.cell
            .held
            .store(false, std::sync::atomic::Ordering::Release);
    }
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

#[cfg(test)]
mod tests {
    use super::Exclusive;

    #[test]
    fn an_exclusive_value_is_claimed_once_at_a_time() {
        let cell = Exclusive::new(1);
        {
            let mut guard = cell.claim();
            *guard += 1;
            let second = std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        let claim = std::panic::AssertUnwindSafe(|| drop(cell.claim()));
                        std::panic::catch_unwind(claim).is_err()
                    })
                    .join()
                    .unwrap()
            });
            assert!(second, "a second claim while held must panic");
        }
        assert_eq!(*cell.claim(), 2, "claimable again once the guard dropped");
    }
}
