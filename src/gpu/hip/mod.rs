//! The AMD HIP backend (feature `hip`, off by default): the HIP runtime through
//! hip-runtime-sys 0.1.2's types and link, with the calls declared in [`api`] (see there why:
//! an `i32` result, converted without undefined behaviour).
//!
//! It mirrors the CUDA backend file for file; what the two share (the sticky slot, module
//! cache, host access, the kernel parameter ABI, graph node bookkeeping, span placement) is in
//! [`crate::gpu::common`], and this folder keeps what is HIP's. Hazards, contracts and
//! alignment are checked above the backend. Each file imports only those listed before it (no
//! import cycles inside the folder), and nothing above `gpu/` but the kernel library, `sync`
//! and `clock`.
//!
//! # Files, and the vendor rules that shape them
//!
//! The rules are the HIP runtime API's
//! (<https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/modules.html>).
//!
//! - `timing.rs`: kernel times' rules over generic handles (how a timed node is wired, how
//!   event pairs become operation spans on the host clock), tested without a device.
//! - `codes.rs`: every `hipError_t` the bindings know, for converting a raw code by lookup
//!   (a code from a newer ROCm has no variant: transmuting it would be undefined behaviour).
//! - `api.rs`: the calls, declared with the C ABI's `int` result, one checked wrapper each,
//!   and hipRTC (in libamdhip64 for HIP 5.x).
//! - `error.rs`: [`map_error`](error::map_error), the one place that turns a HIP result code
//!   into a [`DeviceError`](crate::DeviceError): kernel faults and other sticky errors of
//!   uncertain extent (illegal address, launch failure, ECC, `hipErrorUnknown`, and any code
//!   the bindings do not know, conservatively) are device losses; out of memory, invalid
//!   arguments and unsupported calls keep their kind; each names the call and the code.
//! - `context.rs`: [`Context`](context::Context), the per-device state (HIP's current device is
//!   per thread, so every operation first calls `hipSetDevice`): the sticky slot (the first
//!   device loss is kept, later calls answer it; errors in `Drop` are recorded there, never a
//!   panic, and surface on the next call) and the loaded modules.
//! - `memory.rs`: GPU-local: `hipMalloc`; host-visible: `hipHostMalloc(Mapped | Portable)` and
//!   `hipHostGetDevicePointer`. New allocations are zero-filled (`hipMemset`, then
//!   `hipDeviceSynchronize`).
//! - `kernel.rs`: a code object is loaded with `hipModuleLoadData`. The built-in kernels' CUDA C
//!   sources ([`crate::kernels::cuda_source`], valid HIP C++ apart from `hrx_fail`'s inline
//!   PTX) are compiled once per process with hipRTC for the current device's architecture, or
//!   for `HRX_HIP_ARCH` (e.g. `gfx90a`) when set, with `-ffp-contract=off` (no FMA
//!   contraction, as the CUDA build uses `--fmad=false`). A spec carrying only PTX is
//!   [`Error::Unsupported`](crate::Error::Unsupported): HIP cannot load PTX. The kernel
//!   parameter ABI is CUDA's ([`crate::gpu::common`]).
//! - `graph.rs`: `hipGraphCreate`; fill -> `hipGraphAddMemsetNode` (element size 1); copy ->
//!   `hipGraphAddMemcpyNode1D(hipMemcpyDefault)`; dispatch -> `hipGraphAddKernelNode` with the
//!   module function as `func`; empty ranges -> `hipGraphAddEmptyNode`; finish ->
//!   `hipGraphInstantiateWithFlags`. With kernel times, each operation node sits between two
//!   `hipGraphAddEventRecordNode` nodes (see "Kernel times").
//! - `stream.rs`: `hipStreamCreateWithFlags(NonBlocking)`; copies `hipMemcpyAsync(Default)`;
//!   launch -> `hipGraphLaunch`; every batch enqueued between synchronizes is timed by an
//!   event pair around it (`hipEventRecord`, `hipEventElapsedTime`), placed on the host trace
//!   clock like CUDA's. With kernel times, copies are separated by events, and the operation
//!   spans are read after the synchronize (see "Kernel times").
//! - `device.rs`: [`HipDevice`], the [`crate::gpu::NativeDevice`]: opening
//!   (`hipGetDeviceCount`; `hipErrorNoDevice` or too few devices answer
//!   [`Error::Unsupported`](crate::Error::Unsupported) naming libamdhip64, "no device", never a
//!   crash), allocation, streams, kernels, synchronous host `write`/`read`
//!   (`hipMemcpyHtoD`/`DtoH`).
//!
//! # Kernel times
//!
//! [`NativeStream::set_kernel_times`](crate::gpu::NativeStream::set_kernel_times) (opt-in:
//! `RuntimeOptions::kernel_times`, `HRX_TRACE_KERNELS=1`, `record --kernel-times`) gives each
//! operation of a graph or copy batch its device span
//! ([`NativeStream::op_spans`](crate::gpu::NativeStream::op_spans), `device: true`).
//!
//! - **What HIP offers.** The profiler libraries (roctracer's activity API, rocprofiler: the
//!   counterparts of CUPTI) are separate ROCm packages, absent from Debian's HIP 5.2 and not
//!   linked by hrx. The runtime itself offers event-record graph nodes
//!   (`hipGraphAddEventRecordNode`, in libamdhip64 since HIP 4.5, documented as beta; bound
//!   by hip-runtime-sys, declared in `api.rs` with an `int` result like every call) and
//!   stream events (`hipEventRecord`); both read with `hipEventElapsedTime` (milliseconds as a
//!   float, "a resolution of approximately 1 µs"). hrx uses those.
//! - **Graphs.** A graph built by a stream with kernel times on places each operation node
//!   (not the empty nodes of zero-byte ranges, which do no work) between two event-record
//!   nodes: one after the operation's dependencies, which the operation alone waits for, and
//!   one after the operation, which its dependents wait for (`timing::wire_timed`). Each
//!   executable graph owns its event pairs; the stream that launched it holds them until it
//!   synchronized. Off, no event-record node is added.
//! - **Copy batches.** One event between consecutive copies (`hipEventRecord` on the stream):
//!   a copy runs from the event before it (the batch's start event for the first) to the one
//!   after it; each copy is numbered by its place in the batch, zero-byte copies included.
//! - **Clock.** After a successful synchronize, each event is read against the batch's start
//!   event, and the operation is placed at the batch's start (the region span: `end_ns` at the
//!   synchronize's return, `start_ns = end_ns - elapsed(start, end)`, as CUDA's) plus that
//!   offset, kept inside the region. A failed synchronize gives no operation times (the
//!   events after a fault are never recorded).
//! - **Cost.** Two more nodes per operation, each a marker command that the device executes
//!   in order: an operation starts only after its start marker, its dependents only after its
//!   end marker, so each operation is serialized between its markers, and every marker is a
//!   timestamped command of its own. Independent operations stay independent. The overhead
//!   is not measured.
//! - **Untested on hardware.** Whether HIP records an event-record node's timestamp
//!   comparably to a stream event, whether the graph executor's internal streams keep the
//!   markers next to their operation, and the overhead, are unknown until run on an AMD GPU
//!   (`stream::tests::kernel_times_on_hardware` runs where one is present).
//!
//! Verified here (CI, no AMD GPU): it builds and links against Debian's HIP 5.2; opening
//! answers "no device"; `auto` skips it; unknown result codes convert without UB; hipRTC
//! compiles every built-in kernel but `hrx_fail` to a gfx90a code object; kernel times'
//! wiring and event-to-span placement (`timing.rs`, on generic handles). Not run on AMD
//! hardware: device memory, graphs (in particular kernel nodes with a module function, which
//! HIP documents for its own kernel handles), timing and kernel times are untested.

mod api;
mod codes;
mod context;
mod device;
mod error;
mod graph;
mod kernel;
mod memory;
mod stream;
mod timing;

pub(crate) use device::{HipDevice, note_fallback};
