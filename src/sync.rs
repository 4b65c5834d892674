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
//! capture fences and hashing threads); [`relax`] is each spin's pause, which gives the core
//! away when hrx's spinning threads outnumber the CPUs.

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

/// Polls `done` for up to [`SPIN`], pausing with [`relax`]; whether it became true.
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
            relax();
        }
        if start.elapsed() >= SPIN {
            return false;
        }
    }
}

/// hrx's threads that spin while idle and are counted for [`relax`], alive now: the queue
/// workers of runtimes on the software device and the trace's hashing threads.
static SPINNERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts the thread holding it among the threads that spin while idle ([`relax`]).
pub(crate) struct Spinner(());

impl Spinner {
    pub(crate) fn new() -> Spinner {
        SPINNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Spinner(())
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        SPINNERS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether hrx's spinning threads and one application thread outnumber the CPUs this
/// process may use (`available_parallelism`: affinity and cgroup quota included).
#[cfg_attr(feature = "model-check", allow(dead_code))] // loom's spins never yield
pub(crate) fn oversubscribed() -> bool {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    outnumbered(SPINNERS.load(std::sync::atomic::Ordering::Relaxed), cpus)
}

/// CUDA's rule (see [`relax`]): `spinners` and the one thread that submits and waits
/// outnumber `cpus`.
#[cfg_attr(feature = "model-check", allow(dead_code))]
fn outnumbered(spinners: usize, cpus: usize) -> bool {
    spinners + 1 > cpus
}

/// One pause in a spin for work or for a flag: a spin-loop hint, or, where the spinning
/// threads outnumber the CPUs ([`oversubscribed`]), a yield of the CPU. That is CUDA's rule
/// for `cudaDeviceScheduleAuto` (the CUDA Runtime API, `cudaSetDeviceFlags`: with more active
/// contexts than logical processors, yield while waiting, else spin): on a 2-core machine
/// the queue workers' spin (three of the five are rung a round trip) took half the CPU from
/// the thread that submits and runs its regions and from the trace's writer (`host_visible
/// 1000000` untraced 0.90-1.12 s spinning, 0.49-0.52 s yielding; BENCHMARKS.md, session 40).
/// A yield with nothing else to run returns at once, so the spin still picks work up
/// without sleeping.
///
/// A GPU backend's queue workers are not counted, so that a process of GPU runtimes alone
/// spins as before: on the H100 host the GPU bench, whose three CUDA runtimes' fifteen
/// workers made every spin yield there, died in its CUPTI turn in 3 of 24 processes (heap
/// corruption) against none of 22 without this session's changes; the cause is not known,
/// and the yield stays off GPU hosts until it is (RELIABILITY.md, session 40).
#[inline]
pub(crate) fn relax() {
    #[cfg(not(feature = "model-check"))]
    if oversubscribed() {
        std::thread::yield_now();
        return;
    }
    std::hint::spin_loop();
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

    /// The spin yields only where hrx's spinning threads and the application's thread
    /// outnumber the CPUs: a software-device runtime's five queue workers on 2 CPUs (the CI
    /// machine), not on 16, nor with the trace's four hashing threads and a second runtime
    /// beside them there; three traced runtimes there do.
    #[test]
    fn spins_yield_only_where_the_spinning_threads_outnumber_the_cpus() {
        use super::outnumbered;
        assert!(outnumbered(5, 2));
        assert!(outnumbered(5, 5));
        assert!(!outnumbered(5, 6));
        assert!(!outnumbered(2 * 5 + 4, 16));
        assert!(outnumbered(3 * 5 + 4, 16));
        assert!(
            !outnumbered(0, 1),
            "an application thread alone never yields"
        );
    }
}
