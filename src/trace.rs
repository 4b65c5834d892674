//! Instrumentation hooks. Disabled: one relaxed atomic load per hook, no allocation.
#![allow(dead_code)] // Hook arguments are read once capture lands.

use crate::buffer::Storage;
use crate::execution::completion::Status;
use crate::execution::dependencies::{Hazard, Use};
use crate::execution::graph::{GpuLane, Prepared};
use crate::runtime::{Core, RuntimeOwner};
use crate::{Completion, Error, Runtime};
use std::sync::OnceLock;
use std::time::Instant;

/// What a graph operation is, for the trace.
pub(crate) enum OpKind {
    Fill(u8),
    Copy,
    Kernel(u64),
    Scoped,
    Npu(u64),
    Host,
}

fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Nanoseconds on the host monotonic clock since the process's trace base.
pub(crate) fn now_ns() -> u64 {
    base().elapsed().as_nanos() as u64
}

pub(crate) fn runtime_created(_runtime: &Runtime) {}
pub(crate) fn runtime_dropped(_owner: &RuntimeOwner) {}
pub(crate) fn buffer_created(_storage: &Storage) {}
pub(crate) fn buffer_dropped(_owner: &RuntimeOwner, _buffer: u64) {}
pub(crate) fn host_write(_storage: &Storage, _offset: usize, _data: &[u8]) {}
pub(crate) fn kernel_loaded(
    _owner: &RuntimeOwner,
    _kernel: u64,
    _spec: &crate::kernels::KernelSpec,
) {
}
pub(crate) fn graph_op(
    _owner: &RuntimeOwner,
    _graph: u64,
    _node: usize,
    _kind: &OpKind,
    _lane: GpuLane,
    _uses: &[Use],
) {
}
pub(crate) fn prepared(_prepared: &Prepared) {}
pub(crate) fn submitted(
    _prepared: &Prepared,
    _submission: u64,
    _slot: usize,
    _producers: &[Completion],
) {
}
pub(crate) fn submit_refused(_prepared: &Prepared, _error: &Error) {}
pub(crate) fn cross_wait(
    _prepared: &Prepared,
    _submission: u64,
    _region: usize,
    _on_submission: u64,
    _on_region: usize,
    _hazards: &[Hazard],
) {
}
pub(crate) fn region_timing(
    _prepared: &Prepared,
    _submission: u64,
    _region: usize,
    _start_ns: u64,
    _end_ns: u64,
) {
}
pub(crate) fn region_done(_prepared: &Prepared, _submission: u64, _region: usize, _ok: bool) {}
pub(crate) fn submission_done(_prepared: &Prepared, _submission: u64, _status: &Status) {}
pub(crate) fn quarantine(_prepared: &Prepared, _submission: u64, _region: usize, _error: &Error) {}
pub(crate) fn poison(_prepared: &Prepared, _use: &Use, _cause: &str) {}
pub(crate) fn copy_stream_unhealthy(_core: &Core, _lane: GpuLane, _error: &Error) {}
