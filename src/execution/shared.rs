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
use crate::context::Context;
use crate::sync::lock;
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Scheduler state shared with the workers.
pub(crate) struct Core {
    context: Arc<Context>,
    /// Every hot shared field has a cache line of its own: a submit, the workers and the
    /// waiters touch them from different cores on every round trip.
    state: CachePadded<Mutex<Scheduler>>,
    queues: [Condvar; 5],
    /// Per queue: its worker is parked on its condition variable (set under the lock).
    parked: [AtomicBool; 5],
    /// Per queue: the doorbell its spinning worker watches (and no other queue's); only the
    /// scheduler, under its lock, rings them.
    doorbells: Doorbells,
    /// Read by every spinning worker on every poll: on its own line, away from the counters
    /// that each submit and wait write.
    shutdown: CachePadded<AtomicBool>,
}

impl Core {
    fn new(context: Arc<Context>, capacity: usize) -> Self {
        let doorbells = Doorbells::default();
        Self {
            context,
            state: CachePadded::new(Mutex::new(Scheduler::new(capacity, doorbells.clone()))),
            queues: Default::default(),
            parked: Default::default(),
            doorbells,
            shutdown: CachePadded::new(AtomicBool::new(false)),
        }
    }

    /// The runtime's devices, counters and trace.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The scheduler, locked.
    pub fn scheduler(&self) -> MutexGuard<'_, Scheduler> {
        lock(&self.state)
    }

    /// Notifies queues and signals; call after dropping the scheduler lock. A queue whose
    /// worker is spinning, not parked, sees its epoch move and needs no syscall.
    pub fn wake(&self, mut wake: Wake) {
        if wake.is_empty() {
            return;
        }
        wake.release();
        let mut queues = wake.queues;
        while queues != 0 {
            let q = queues.trailing_zeros() as usize;
            queues &= queues - 1;
            // The doorbell was rung under the lock; a parked worker needs a notification.
            if self.parked[q].load(Ordering::SeqCst) {
                self.queues[q].notify_one();
            }
        }
    }

    /// The doorbell `queue`'s worker watches while it spins.
    pub fn doorbell(&self, queue: Queue) -> &Doorbell {
        &self.doorbells[queue as usize]
    }

    /// Whether the runtime is shutting down (its workers exit once nothing is in flight).
    pub fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Parks `queue`'s worker, which holds `state`, until a waker notifies it. The parked
    /// flag is set under the lock, so a waker that changes the state after the worker's
    /// last look sees it and notifies.
    pub fn park<'a>(
        &'a self,
        queue: Queue,
        state: MutexGuard<'a, Scheduler>,
    ) -> MutexGuard<'a, Scheduler> {
        let q = queue as usize;
        self.parked[q].store(true, Ordering::SeqCst);
        let state = self.queues[q]
            .wait(state)
            .unwrap_or_else(|e| e.into_inner());
        self.parked[q].store(false, Ordering::SeqCst);
        state
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

/// What keeps a runtime's workers running: the core, the cached copy streams and the worker
/// threads, one per queue.
pub(crate) struct RuntimeOwner {
    /// The core's context, one pointer nearer for the stages.
    context: Arc<Context>,
    core: Arc<Core>,
    copy_streams: [Mutex<Option<Arc<Mutex<CopyStream>>>>; 3],
    workers: Mutex<Vec<JoinHandle<()>>>,
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
        });
        for queue in Queue::ALL {
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

    /// The cached copy stream of `lane`, created on first use.
    pub fn copy_stream(&self, lane: GpuLane) -> Result<Arc<Mutex<CopyStream>>> {
        let mut slot = lock(&self.copy_streams[lane as usize]);
        if let Some(stream) = &*slot {
            return Ok(stream.clone());
        }
        let context = self.context();
        let mut native = context.device.stream()?;
        native.set_timed(context.tracer.on());
        let stream = Arc::new(Mutex::new(CopyStream {
            stream: native,
            healthy: true,
        }));
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
