//! The CUDA backend: cudarc 0.19's driver API, loaded at run time.
//!
//! Layers (cudarc's own): raw `cudarc::driver::sys` -> [`api`], one checked wrapper per driver
//! call -> one file per driver object. What CUDA and HIP share (the sticky slot, module cache,
//! host access, the kernel parameter ABI, graph node bookkeeping, span placement) is in
//! [`crate::gpu::common`]; this folder keeps what is CUDA's. Hazards, contracts and alignment
//! are checked above the backend. Each file imports only those listed before it (no import
//! cycles inside the folder), and nothing above `gpu/` but the kernel library, `sync` and
//! `clock`.
//!
//! # Files, and the vendor rules that shape them
//!
//! The rules are the CUDA Driver API's
//! (<https://docs.nvidia.com/cuda/cuda-driver-api/index.html>); each wrapper in `api.rs` links
//! its function's page.
//!
//! - `error.rs`: [`CuError`](error::CuError) (a call and its `CUresult`) and
//!   [`map_error`](error::map_error), the one place that turns a `CUresult` into a
//!   [`DeviceError`](crate::DeviceError): kernel faults (illegal address, launch failure, ...)
//!   and other sticky errors of uncertain extent (ECC, unknown, ...) are device losses; out of
//!   memory, invalid arguments and unsupported calls keep their kind; each names the call and
//!   the CUDA code. (The driver API documents those codes as sticky: the context cannot be
//!   used again.)
//! - `api.rs`: the checked wrappers, and the list of symbols resolved before the first call.
//!   cudarc panics when libcuda or one of its symbols is absent, so `device.rs` first asks
//!   `sys::is_culib_present()`, then resolves every symbol, and only then calls into the
//!   driver: without a driver it answers [`Error::Unsupported`](crate::Error::Unsupported).
//! - `context.rs`: [`Context`](context::Context), the device's primary context
//!   (`cuDevicePrimaryCtxRetain`), shared by every runtime of the process on that device (one
//!   per ordinal, with its loaded modules). A context is current per thread
//!   (`cuCtxSetCurrent`, a thread-local store) and runtime workers are different threads, so
//!   every operation first makes sure it is current: `cuCtxGetCurrent`, then
//!   `cuCtxSetCurrent` only when another context is current (cudarc's `bind_to_thread`
//!   rule; the application may switch contexts on its own thread between two calls). Its sticky slot: a device-loss error poisons the
//!   shared context, every later call answers `DeviceLost` naming the first cause (the driver
//!   would answer the same sticky error); errors in `Drop` are never panics, they go into the
//!   slot and surface on the next call. `cuInit` and a driver of CUDA 12.8 or newer
//!   (`cuEventElapsedTime_v2`) are checked here.
//! - `memory.rs`: GPU-local memory is `cuMemAlloc`; host-visible memory is
//!   `cuMemHostAlloc(DEVICEMAP | PORTABLE)` with a page more, used from its first 4 KiB
//!   boundary (the driver promises no page alignment, and XRT imports only page-aligned host
//!   memory), its device address from `cuMemHostGetDevicePointer`. New allocations are
//!   zero-filled, as on the software device (`cuMemsetD8` on the legacy stream, then a
//!   synchronize of that stream: the runtime's streams are non-blocking and do not wait for it).
//! - `kernel.rs`: a spec's PTX when it has one, else the built-in CUDA C source with its
//!   self-timing entry and collector (`crate::kernels::cuda_instrumented_source`) compiled once
//!   per process with NVRTC (`--fmad=false`, no flush-to-zero). Modules are loaded once per
//!   context and PTX text (`cuModuleLoadData`, `cuModuleGetFunction`); a module that declares
//!   the self-timing entry of this build's layout gives the kernel its timed function and the
//!   largest block it launches with (`cuFuncGetAttribute`).
//! - `timing.rs`: built-in kernels that time themselves in a traced graph (`%globaltimer`
//!   folded per node, a collector kernel after the end event-record node writing each launch's
//!   times into mapped host memory) and their placement inside the launch's span.
//! - `activity.rs`: kernel times through CUPTI's activity API, when asked.
//! - `graph.rs`: native graphs. `cuGraphCreate`; fill -> `cuGraphAddMemsetNode` (element size
//!   1, with the context); copy -> `cuGraphAddMemcpyNode` (a 1-D `CUDA_MEMCPY3D`); dispatch ->
//!   `cuGraphAddKernelNode_v2` (`kern`/`ctx` null; the parameter ABI of
//!   [`crate::gpu::common`]); empty ranges -> `cuGraphAddEmptyNode` (the driver refuses
//!   zero-byte memsets and copies); finish -> `cuGraphInstantiateWithFlags`. A timed graph
//!   carries two event-record nodes (`cuGraphAddEventRecordNode`): a start node that every
//!   root depends on and an end node that depends on every leaf; each executable graph owns
//!   its event pair.
//! - `stream.rs`: `cuStreamCreate(NON_BLOCKING)`; copies are `cuMemcpyAsync` between device
//!   addresses; launch -> `cuGraphLaunch`. [`NativeStream::last_span`](crate::gpu::NativeStream::last_span)
//!   times everything enqueued since the last synchronize, from the batch's first start event
//!   to its last end event. CUDA events have no absolute time, so the span is placed on the
//!   host trace clock: `end_ns` is the host time at which `cuStreamSynchronize` returned and
//!   `start_ns = end_ns - elapsed(start, end)`. The position is late by the synchronize
//!   wake-up latency (microseconds).
//!   - A copy batch is bracketed by the stream's own event pair (`cuEventRecord` before the
//!     first copy and before the synchronize).
//!   - A graph is bracketed by its own event-record nodes. Relaunching the same executable
//!     graph before a synchronize re-records its events, so the span then covers the last
//!     launch only (the runtime never does this).
//!   - Measured on the H200 (driver 580.159.04, `cargo bench -p hrx --bench gpu`, its span
//!     check; BENCHMARKS.md): on warm launches the nodes and a stream event pair around
//!     `cuGraphLaunch` agree within 0.4 µs (one iota kernel over 64 MiB: 42.7 vs 43.0 µs, the
//!     kernel alone 44.8; 100 chained kernels: 127.7 vs 127.8; a four-node memset/memcpy
//!     graph through pinned host memory: 22.0 vs 22.1), and the runtime's traced spans match
//!     (42.7, 127.5). The nodes cost 0.7-1.3 µs more per launch than the pair (one-kernel
//!     graph launch-to-synchronized: untimed 7.6-8.0 µs, pair 10.8, nodes 11.5).
//!   - Not explained yet: `hardware_tests::hardware_graph_nodes_and_stream_copies` (one launch
//!     of a five-node graph: a fill of host-visible memory, copies through pinned host
//!     memory, an empty node) reads 107-168 ns with either method, where the same shape
//!     without the empty node, warm, reads 22 µs. Suspects: the first launch of a graph
//!     instance, or the empty node; a span from such a graph may be a lower bound.
//! - `nvml.rs`: the GPU's clocks ([`crate::gpu::GpuClocks`]) through NVML
//!   (`libnvidia-ml.so.1`, loaded at run time with `libloading`; not a CUDA library, but
//!   its device is the one `cuDeviceGetPCIBusId` names): SM and memory clocks, their
//!   maxima, the clocks event reasons, the temperature. Without NVML, a one-line reason.
//! - `device.rs`: [`CudaDevice`], the [`crate::gpu::NativeDevice`]: opening (library check,
//!   then the context), allocation, streams, kernels, and the synchronous host `write`/`read`
//!   of GPU-local memory (`cuMemcpyHtoD`/`DtoH` on the legacy stream, then a synchronize of
//!   that stream); its clock reader, NVML opened at the device's PCI bus id.
//! - `hardware_tests.rs`: tests on a real NVIDIA GPU, skipped without `HRX_CUDA_HARDWARE`.
//!
//! # Faults
//!
//! `hrx_fail` stores to an unmapped address: on hardware that is `CUDA_ERROR_ILLEGAL_ADDRESS`,
//! reported as `DeviceLost` (the software device reports a kernel error of known extent). CUDA
//! cannot be used again in the process: the driver documents that the process must end, and
//! a runtime opened after every other was dropped fails the same way (`hardware_fault`).

mod activity;
mod api;
mod context;
mod device;
mod error;
mod graph;
#[cfg(test)]
mod hardware_tests;
mod kernel;
mod memory;
mod nvml;
mod stream;
mod timing;

pub(crate) use device::{CudaDevice, note_fallback};

/// Whether kernel times through CUPTI can be had in this process (libcupti found, its symbols
/// present, no other subscriber); starts the CUPTI session the streams then share.
pub(crate) fn kernel_times_available() -> bool {
    activity::cupti().is_ok()
}
