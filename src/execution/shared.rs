//! The state the runtime's handles, its workers and the execution stages share: the
//! scheduler's [`Core`] (workers hold it) and the [`RuntimeOwner`] (handles, buffers, kernels
//! and prepared graphs hold it; dropping the last stops the workers).

use super::region::CopyStream;
use super::scheduler::{Doorbells, Scheduler, Wake};
use super::types::{GpuLane, Queue};
use crate::Result;
use crate::fault::FaultInjector;
use crate::gpu::NativeDevice;
use crate::runtime::TraceDigests;
use crate::sync::lock;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Shared counters (see [`crate::Counters`]): those not kept by the scheduler, which counts
/// submissions and the regions waiters ran under its lock (two atomic increments fewer per
/// round trip).
#[derive(Default)]
pub(crate) struct CounterCells {
    pub native_graphs_prepared: AtomicU64,
    pub copy_streams_created: AtomicU64,
    pub copied_bytes: AtomicU64,
    pub lane_copy_bytes: [AtomicU64; 3],
    pub visibility_syncs: AtomicU64,
}

/// Scheduler state shared with the workers.
pub(crate) struct Core {
    /// Runtime id; trace records carry it.
    pub id: u32,
    /// The trace this runtime records into, if any.
    pub recorder: Option<hrx_capture::Recorder>,
    /// Whether output contents, not only digests, are traced.
    pub trace_contents: bool,
    /// Which written ranges are digested.
    pub trace_digests: TraceDigests,
    pub counters: CounterCells,
    /// Every hot shared field has a cache line of its own: a submit, the workers and the
    /// waiters touch them from different cores on every round trip.
    pub state: CachePadded<Mutex<Scheduler>>,
    pub queues: [Condvar; 5],
    /// Per queue: its worker is parked on its condition variable (set under the lock).
    pub parked: [AtomicBool; 5],
    /// Per queue: the doorbell its spinning worker watches (and no other queue's); only the
    /// scheduler, under its lock, rings them.
    pub doorbells: Doorbells,
    /// Read by every spinning worker on every poll: on its own line, away from the counters
    /// that each submit and wait write.
    pub shutdown: CachePadded<AtomicBool>,
}

impl Core {
    /// Notifies queues and signals; call after dropping the scheduler lock. A queue whose
    /// worker is spinning, not parked, sees its epoch move and needs no syscall.
    pub fn wake(&self, mut wake: Wake) {
        wake.release();
        for queue in Queue::ALL {
            let q = queue as usize;
            // The doorbell was rung under the lock; a parked worker needs a notification.
            if wake.queues & (1 << q) != 0 && self.parked[q].load(Ordering::SeqCst) {
                self.queues[q].notify_one();
            }
        }
    }
}

pub(crate) struct RuntimeOwner {
    pub id: u32,
    pub core: Arc<Core>,
    pub device: Arc<dyn NativeDevice>,
    pub faults: Arc<FaultInjector>,
    pub npu_device: u32,
    /// The NPU backend's device (the simulator or XRT).
    pub npu: crate::npu::NpuDevice,
    pub copy_streams: [Mutex<Option<Arc<Mutex<CopyStream>>>>; 3],
    pub workers: Mutex<Vec<JoinHandle<()>>>,
}

impl RuntimeOwner {
    /// The cached copy stream of `lane`, created on first use.
    pub fn copy_stream(&self, lane: GpuLane) -> Result<Arc<Mutex<CopyStream>>> {
        let mut slot = lock(&self.copy_streams[lane as usize]);
        if let Some(stream) = &*slot {
            return Ok(stream.clone());
        }
        let mut native = self.device.stream()?;
        native.set_timed(self.core.recorder.is_some());
        let stream = Arc::new(Mutex::new(CopyStream {
            stream: native,
            healthy: true,
        }));
        self.core
            .counters
            .copy_streams_created
            .fetch_add(1, Ordering::Relaxed);
        *slot = Some(stream.clone());
        Ok(stream)
    }
}

impl Drop for RuntimeOwner {
    fn drop(&mut self) {
        self.core.shutdown.store(true, Ordering::Release);
        drop(lock(&self.core.state));
        for queue in &self.core.queues {
            queue.notify_all();
        }
        let current = std::thread::current().id();
        for handle in lock(&self.workers).drain(..) {
            // A worker can drop the last owner (a scoped callback holding a clone); it
            // exits on its own once the flight list is empty.
            if handle.thread().id() != current {
                let _ = handle.join();
            }
        }
        crate::trace::runtime_dropped(self);
    }
}
