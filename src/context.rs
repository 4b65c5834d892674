//! What a runtime's buffers, kernels and execution stages share: its id, its GPU and NPU
//! devices, the fault injector, the counters and the trace.
//!
//! Buffers hold the context rather than the runtime: they sit below the execution stages
//! (which order their uses), so they must not name them. The execution stages' owner
//! ([`crate::execution::shared::RuntimeOwner`]) holds it too; the context is dropped with
//! the last of them, and only then records the runtime's end (its counters and
//! `RuntimeEnd`), after every buffer's release, as the trace has always had it.

use crate::fault::FaultInjector;
use crate::gpu::NativeDevice;
use crate::npu::NpuDevice;
use crate::trace::Tracer;
use hrx_capture::schema as s;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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

/// A runtime's devices, faults, counters and trace.
pub(crate) struct Context {
    /// Runtime id; trace records carry it.
    pub id: u32,
    pub device: Arc<dyn NativeDevice>,
    pub faults: Arc<FaultInjector>,
    /// The NPU backend's device (the simulator or XRT).
    pub npu: NpuDevice,
    pub npu_device: u32,
    pub counters: CounterCells,
    pub tracer: Tracer,
    /// Submissions accepted, set once the runtime's workers stopped: the context then records
    /// the runtime's end when it drops.
    submissions_at_end: OnceLock<u64>,
}

impl Context {
    /// A context for runtime `id`.
    pub fn new(
        id: u32,
        device: Arc<dyn NativeDevice>,
        faults: Arc<FaultInjector>,
        npu: NpuDevice,
        tracer: Tracer,
    ) -> Self {
        Self {
            id,
            device,
            faults,
            npu,
            npu_device: 0,
            counters: CounterCells::default(),
            tracer,
            submissions_at_end: OnceLock::new(),
        }
    }

    /// The runtime stopped its workers after `submissions` submissions: its end is recorded
    /// once nothing holds this context any more.
    pub fn stopped(&self, submissions: u64) {
        let _ = self.submissions_at_end.set(submissions);
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let (Some(hook), Some(&submissions)) = (self.tracer.hook(), self.submissions_at_end.get())
        else {
            return;
        };
        self.tracer.runtime_ended(submissions);
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let counters = &self.counters;
        let time_ns = hook.now_ns();
        hook.record(s::Record::Counters(s::Counters {
            runtime: hook.runtime,
            time_ns,
            submissions,
            native_graphs_prepared: load(&counters.native_graphs_prepared),
            copy_streams_created: load(&counters.copy_streams_created),
            copied_bytes: load(&counters.copied_bytes),
            lane_copy_bytes: [0, 1, 2].map(|i| load(&counters.lane_copy_bytes[i])),
        }));
        hook.host_load();
        hook.record(s::Record::RuntimeEnd(s::RuntimeEnd {
            runtime: hook.runtime,
            time_ns,
        }));
        hook.flush();
    }
}
