//! The AMD HIP backend (feature `hip`, off by default): HIP runtime through hip-runtime-sys
//! 0.1.2's types and link, with the calls declared in [`api`] (see there why: an `i32`
//! result, converted without undefined behaviour).
//!
//! Mirrors the CUDA backend. [`map_error`](error::map_error) is the one place that turns a HIP result code into
//! a [`DeviceError`](crate::DeviceError): kernel faults and other sticky errors of uncertain extent (illegal
//! address, launch failure, ECC, `hipErrorUnknown`, and any code the bindings do not know,
//! conservatively) are device losses; out of memory, invalid arguments and unsupported calls
//! keep their kind; each names the call and the code. Hazards, contracts and alignment are checked above the backend.
//!
//! - **Opening.** `hipGetDeviceCount`; `hipErrorNoDevice` or too few devices answer
//!   [`Error::Unsupported`](crate::Error::Unsupported) naming libamdhip64 ("no device"), never a crash. HIP's current
//!   device is per thread, so every operation first calls `hipSetDevice`.
//! - **Sticky slot.** The first device loss is kept per device: later calls answer it. Errors
//!   in `Drop` are recorded there (never a panic) and surface on the next call.
//! - **Memory.** GPU-local: `hipMalloc`; host-visible: `hipHostMalloc(Mapped | Portable)` and
//!   `hipHostGetDevicePointer`. New allocations are zero-filled. `write`/`read` are synchronous.
//! - **Streams.** `hipStreamCreateWithFlags(NonBlocking)`; copies `hipMemcpyAsync(Default)`;
//!   every batch enqueued between synchronizes is timed by an event pair around it
//!   (`hipEventRecord`, `hipEventElapsedTime`), placed on the host trace clock like CUDA's.
//! - **Native graphs.** `hipGraphCreate`; fill -> `hipGraphAddMemsetNode` (element size 1);
//!   copy -> `hipGraphAddMemcpyNode1D(hipMemcpyDefault)`; dispatch -> `hipGraphAddKernelNode`
//!   with the module function as `func`; empty ranges -> `hipGraphAddEmptyNode`; finish ->
//!   `hipGraphInstantiateWithFlags`; launch -> `hipGraphLaunch`.
//! - **Kernels.** A code object is loaded with `hipModuleLoadData`. The built-in kernels'
//!   CUDA C sources ([`crate::kernels::cuda_source`], valid HIP C++ apart from `hrx_fail`'s
//!   inline PTX) are compiled once per process with hipRTC (in libamdhip64) for the current
//!   device's architecture, or for `HRX_HIP_ARCH` (e.g. `gfx90a`) when set, with
//!   `-ffp-contract=off` (no FMA contraction, as the CUDA build uses `--fmad=false`). A spec
//!   carrying only PTX is [`Error::Unsupported`](crate::Error::Unsupported): HIP cannot load PTX. The kernel parameter ABI
//!   is CUDA's: one 64-bit device address per binding, then one 32-bit word per constant word.
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
