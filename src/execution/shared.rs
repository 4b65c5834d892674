//! The state the runtime's handles, its workers and the execution stages share.
//!
//! - [`Core`]: the scheduler behind its lock, the queues' condition variables and doorbells,
//!   and the shutdown flag. The workers hold it (so it cannot stop them when dropped).
//! - [`RuntimeOwner`]: the core, the cached per-lane copy streams and the worker threads.
//!   Handles, kernels and prepared graphs hold it; dropping the last stops the workers once
//!   the submissions in flight retired.
//!
//! Both keep their fields private: the stages go through the methods below, so that what
//! may happen under the scheduler lock, and what only after it (see [`Core::wake`]), is
//! decided here.

use super::region::CopyStream;
use super::scheduler::{Doorbell, Doorbells, Scheduler, Wake};
use super::types::{GpuLane, Queue};
use super::worker::WaiterHooks;
use crate::context::Context;
use crate::sync::lock;
use crate::sync::protocol as parking;
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Which queues' workers wait on their condition variables: a field of the state behind the
/// scheduler lock, read and changed only under it.
///
/// A worker sets its bit under the lock, after its last look at the state, and waits on its
/// condition variable (which releases the lock once the worker is registered as a waiter). A
/// waker that changed the state under the lock takes the bits of the queues it made work for
/// ([`Parked::take`]), still under it, and notifies those after dropping it ([`notify`]). So a
/// bit a waker sees belongs to a worker that is registered and had not seen its change, and
/// only the first waker after a park notifies: later ones, until the worker parks again, make
/// no `futex` call. (The bit used to be an atomic read after the lock and cleared by the
/// woken worker: on a loaded machine a notified worker can wait milliseconds for a core, and
/// meanwhile every submission made a wake-up system call, about one per round trip.
/// Taking the bit after the lock instead loses wake-ups: a waker whose change the worker had
/// already seen can take the bit of the worker's next park before the worker is registered,
/// and its notification then goes to nobody; the loom model `worker_parking` finds that.)
#[derive(Debug, Default)]
pub(crate) struct Parked(u8);

impl Parked {
    /// Of `queues`, those whose worker waits, taken off: notify them ([`notify`]) once the
    /// lock is dropped.
    pub fn take(&mut self, queues: u8) -> u8 {
        let waiting = queues & self.0;
        self.0 &= !waiting;
        waiting
    }
}

/// State behind the scheduler lock that keeps the [`Parked`] bits.
pub(crate) trait HasParked {
    /// The parked bits.
    fn parked(&mut self) -> &mut Parked;
}

/// Parks queue `queue`'s worker on `condvar` until a waker notifies it; call with the lock
/// held, after finding nothing to do under it. A wake-up can be spurious: look again.
pub(crate) fn park<'a, S: HasParked>(
    condvar: &parking::Condvar,
    queue: usize,
    mut guard: parking::MutexGuard<'a, S>,
) -> parking::MutexGuard<'a, S> {
    #[cfg(all(test, feature = "model-check"))]
    let flag = !super::model_check::seeded(super::model_check::Bug::ParkWithoutFlag);
    #[cfg(not(all(test, feature = "model-check")))]
    let flag = true;
    if flag {
        guard.parked().0 |= 1 << queue;
    }
    let mut guard = condvar
        .wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Taken by the waker that notified; still set after a spurious wake-up.
    guard.parked().0 &= !(1 << queue);
    guard
}

/// Notifies the workers of `queues`, bits that [`Parked::take`] returned; call after
/// dropping the lock.
pub(crate) fn notify(condvars: &[parking::Condvar], mut queues: u8) {
    while queues != 0 {
        let q = queues.trailing_zeros() as usize;
        queues &= queues - 1;
        condvars[q].notify_one();
    }
}

/// Scheduler state shared with the workers.
pub(crate) struct Core {
    context: Arc<Context>,
    /// Every hot shared field has a cache line of its own: a submit, the workers and the
    /// waiters touch them from different cores on every round trip.
    state: CachePadded<parking::Mutex<Scheduler>>,
    /// Per queue: the condition variable its worker parks on (see [`Parked`]).
    queues: [parking::Condvar; 5],
    /// Per queue: the doorbell its spinning worker watches (and no other queue's); only the
    /// scheduler, under its lock, rings them.
    doorbells: Doorbells,
    /// Read by every spinning worker on every poll: on its own line, away from the counters
    /// that each submit and wait write.
    shutdown: CachePadded<AtomicBool>,
    /// Written by traced waiters around their regions' trace hooks, read by workers in their
    /// claim grace: on its own line.
    waiter_hooks: CachePadded<WaiterHooks>,
    /// The process's fork count when the runtime was created ([`crate::sync::watch_forks`]).
    forks: u64,
}

impl Core {
    fn new(context: Arc<Context>, capacity: usize) -> Self {
        let doorbells = Doorbells::default();
        Self {
            forks: crate::sync::watch_forks(),
            context,
            state: CachePadded::new(parking::Mutex::new(Scheduler::new(
                capacity,
                doorbells.clone(),
            ))),
            queues: Default::default(),
            doorbells,
            shutdown: CachePadded::new(AtomicBool::new(false)),
            waiter_hooks: CachePadded::default(),
        }
    }

    /// The runtime's devices, counters and trace.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The scheduler, locked, a waiter's deferred retirement resolved first
    /// ([`Scheduler::resolve`]).
    pub fn scheduler(&self) -> parking::MutexGuard<'_, Scheduler> {
        let mut state = lock(&self.state);
        state.resolve();
        state
    }

    /// The scheduler, locked, as it is: a deferred retirement left for the next lock holder
    /// (tests of [`super::defer`]).
    #[cfg(test)]
    pub fn scheduler_unresolved(&self) -> parking::MutexGuard<'_, Scheduler> {
        lock(&self.state)
    }

    /// Notifies queues and signals; call after dropping the scheduler lock. A queue whose
    /// worker is spinning, not parked, sees its epoch move and needs no syscall.
    pub fn wake(&self, mut wake: Wake) {
        if wake.is_empty() {
            return;
        }
        wake.release();
        // The doorbells were rung under the lock; a parked worker needs a notification.
        notify(&self.queues, wake.queues);
    }

    /// The doorbell `queue`'s worker watches while it spins.
    pub fn doorbell(&self, queue: Queue) -> &Doorbell {
        &self.doorbells[queue as usize]
    }

    /// The time waiters spend in trace hooks, for the workers' claim grace.
    pub fn waiter_hooks(&self) -> &WaiterHooks {
        &self.waiter_hooks
    }

    /// Whether this process is a child forked since the runtime was created (see
    /// [`crate::sync::forked_error`]): one relaxed load.
    #[inline]
    pub fn forked(&self) -> bool {
        crate::sync::forks() != self.forks
    }

    /// Whether the runtime is shutting down (its workers exit once nothing is in flight).
    pub fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Parks `queue`'s worker, which holds `state`, until a waker notifies it (see
    /// [`Parked`]).
    pub fn park<'a>(
        &'a self,
        queue: Queue,
        state: parking::MutexGuard<'a, Scheduler>,
    ) -> parking::MutexGuard<'a, Scheduler> {
        park(&self.queues[queue as usize], queue as usize, state)
    }

    /// Tells the workers to exit once nothing is in flight, and wakes them.
    fn stop(&self) {
        self.shutdown.store(true, Ordering::Release);
        drop(self.scheduler());
        for queue in &self.queues {
            queue.notify_all();
        }
    }
}

impl crate::buffer::DeviceUses for Core {
    fn host_access(
        &self,
        buffer: u64,
        range: &std::ops::Range<usize>,
        access: crate::Access,
        register: &mut dyn FnMut() -> crate::Result<u64>,
    ) -> crate::Result<u64> {
        let state = self.scheduler();
        state.host_conflict(buffer, range, access)?;
        register()
    }
}

/// What keeps a runtime's workers running: the core, the cached copy streams and the worker
/// threads, one per queue.
pub(crate) struct RuntimeOwner {
    /// The core's context, one pointer nearer for the stages.
    context: Arc<Context>,
    core: Arc<Core>,
    copy_streams: [Mutex<Option<Arc<CopyStream>>>; 3],
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// What failed scoped callbacks left ([`super::region::Region::quarantined_resources`]),
    /// held until the runtime is dropped, after its workers stopped. A callback that captured
    /// a clone of its own runtime keeps that runtime alive with it (a cycle): its resources
    /// then live until the process exits, which the seed's "preserving native lifetimes"
    /// allows and a use after free does not.
    quarantined: Mutex<Vec<Box<dyn std::any::Any + Send>>>,
}

/// Test hooks, read on the thread that starts a runtime.
#[cfg(test)]
pub(crate) mod test_hooks {
    use super::Queue;
    use std::cell::Cell;

    thread_local! {
        /// A runtime started on this thread has no worker for this queue: only its waiters
        /// run its regions there, so a test can observe what a waiter does without racing a
        /// worker's claim (whose grace a loaded machine can outlast).
        pub(crate) static WITHOUT_WORKER: Cell<Option<Queue>> = const { Cell::new(None) };
    }
}

impl RuntimeOwner {
    /// Starts one worker per queue over a scheduler of `capacity` submissions.
    ///
    /// # Errors
    /// [`Error::Message`] when a worker thread cannot be started (those started stop again).
    pub fn start(context: Arc<Context>, capacity: usize) -> Result<Arc<Self>> {
        let owner = Arc::new(Self {
            core: Arc::new(Core::new(context.clone(), capacity)),
            context,
            copy_streams: Default::default(),
            workers: Mutex::new(Vec::new()),
            quarantined: Mutex::new(Vec::new()),
        });
        for queue in Queue::ALL {
            #[cfg(test)]
            if test_hooks::WITHOUT_WORKER.get() == Some(queue) {
                continue;
            }
            let core = owner.core.clone();
            let handle = std::thread::Builder::new()
                .name(format!(
                    "hrx-{}",
                    queue.name().to_ascii_lowercase().replace(' ', "-")
                ))
                .spawn(move || super::worker::worker(core, queue))
                .map_err(|e| Error::Message(format!("cannot start a worker thread: {e}")))?;
            lock(&owner.workers).push(handle);
        }
        Ok(owner)
    }

    /// The runtime's devices, counters and trace.
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// The scheduler's shared state.
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// Holds what a failed scoped callback left until the runtime is dropped.
    pub fn keep_quarantined(&self, resources: Box<dyn std::any::Any + Send>) {
        lock(&self.quarantined).push(resources);
    }

    /// The cached copy stream of `lane`, created on first use.
    pub fn copy_stream(&self, lane: GpuLane) -> Result<Arc<CopyStream>> {
        let mut slot = lock(&self.copy_streams[lane as usize]);
        if let Some(stream) = &*slot {
            return Ok(stream.clone());
        }
        let context = self.context();
        let mut native = context.device.stream()?;
        native.set_timed(context.tracer.on());
        native.set_kernel_times(context.tracer.times_kernels());
        native.set_builtin_kernel_times(context.tracer.times_builtin_kernels());
        let stream = Arc::new(CopyStream {
            stream: Mutex::new(native),
            healthy: std::sync::atomic::AtomicBool::new(true),
        });
        context
            .counters
            .copy_streams_created
            .fetch_add(1, Ordering::Relaxed);
        *slot = Some(stream.clone());
        Ok(stream)
    }
}

impl Drop for RuntimeOwner {
    fn drop(&mut self) {
        if self.core.forked() {
            // In a forked child the workers are the parent's, not here to stop or join (the
            // join would fail, a lock a parent's thread held at the fork never frees): the
            // handles go without a join, the rest as usual.
            std::mem::forget(std::mem::take(&mut *lock(&self.workers)));
            return;
        }
        self.core.stop();
        let current = std::thread::current().id();
        for handle in lock(&self.workers).drain(..) {
            // A worker can drop the last owner (a scoped callback holding a clone); it
            // exits on its own once the flight list is empty.
            if handle.thread().id() != current {
                let _ = handle.join();
            }
        }
        let submissions = self.core.scheduler().submissions();
        self.context.stopped(submissions);
    }
}

#[cfg(test)]
mod tests {
    use super::Parked;

    #[test]
    fn only_the_first_waker_after_a_park_takes_the_workers_bit() {
        let mut parked = Parked::default();
        parked.0 |= 1 << 1; // queue 1's worker parks
        assert_eq!(
            parked.take(0b0011),
            0b0010,
            "the first waker notifies queue 1"
        );
        assert_eq!(parked.take(0b0011), 0, "later wakers find the bit taken");
        assert_eq!(parked.0, 0);
    }
}
