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
//!   `hipGraphInstantiateWithFlags`.
//! - `stream.rs`: `hipStreamCreateWithFlags(NonBlocking)`; copies `hipMemcpyAsync(Default)`;
//!   launch -> `hipGraphLaunch`; every batch enqueued between synchronizes is timed by an
//!   event pair around it (`hipEventRecord`, `hipEventElapsedTime`), placed on the host trace
//!   clock like CUDA's.
//! - `device.rs`: [`HipDevice`], the [`crate::gpu::NativeDevice`]: opening
//!   (`hipGetDeviceCount`; `hipErrorNoDevice` or too few devices answer
//!   [`Error::Unsupported`](crate::Error::Unsupported) naming libamdhip64, "no device", never a
//!   crash), allocation, streams, kernels, synchronous host `write`/`read`
//!   (`hipMemcpyHtoD`/`DtoH`).
//!
//! Verified here (CI, no AMD GPU): it builds and links against Debian's HIP 5.2; opening
//! answers "no device"; `auto` skips it; unknown result codes convert without UB; hipRTC
//! compiles every built-in kernel but `hrx_fail` to a gfx90a code object. Not run on AMD
//! hardware: device memory, graphs (in particular kernel nodes with a module function, which
//! HIP documents for its own kernel handles) and timing are untested.

mod api;
mod codes;
mod context;
mod device;
mod error;
mod graph;
mod kernel;
mod memory;
mod stream;

pub(crate) use device::{HipDevice, note_fallback};
