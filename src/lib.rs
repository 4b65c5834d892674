//! hrx: a heterogeneous GPU/NPU runtime.
//!
//! Graphs of operations that declare the byte ranges they read and write; hazards inferred
//! from those declarations (read-after-write, write-after-read, write-after-write at byte
//! precision); `prepare()` lowering runs of operations into native GPU graphs, batched copy
//! lanes (Upload, Compute, Download), NPU runs and scoped native callbacks; bounded,
//! reusable submission slots; ordering of conflicting work across submissions; quarantine
//! and poisoning after device failures.
//!
//! ```
//! use hrx::{Placement, Runtime, RuntimeOptions, kernels};
//! let runtime = Runtime::new(RuntimeOptions::sim())?;
//! let x = runtime.buffer(4 * 1024, Placement::HostVisible)?;
//! let y = runtime.buffer(4 * 1024, Placement::GpuLocal)?;
//! let saxpy = runtime.kernel(&kernels::saxpy(1024, 2.0))?;
//! let mut graph = runtime.graph();
//! graph.fill(y.whole(), 0)?;
//! graph.gpu(&saxpy, &[x.whole(), y.whole()])?;
//! let executable = graph.prepare()?;
//! executable.submit()?.wait()?;
//! # Ok::<(), hrx::Error>(())
//! ```
#![warn(missing_docs)]

mod access;
pub mod annotate;
mod buffer;
mod clock;
mod context;
mod contract;
mod dma_memory;
mod error;
pub mod execution;
pub mod fault;
pub mod gpu;
mod huge_pages;
pub mod kernels;
pub mod npu;
mod nvtx;
mod runtime;
#[cfg(all(test, feature = "cuda"))]
mod stand_in;
mod switch;
mod sync;
pub mod trace;

pub use buffer::{Access, Buffer, BufferView, HostRead, HostWrite, Placement};
pub use contract::{BindingContract, KernelContract};
pub use error::{BindingError, DeviceCall, DeviceError, Error, Result};
pub use execution::build::Graph;
pub use execution::completion::Completion;
pub use execution::dependencies::{Hazard, HazardKind};
pub use execution::gpu_kernel::GpuKernel;
pub use execution::npu_kernel::NpuKernel;
pub use execution::region::HostViews;
pub use execution::submit::ExecutableGraph;
pub use execution::types::{GpuAccess, GpuLane, Node, Queue, RegionInfo, RegionKind, Status};
pub use fault::{FaultKind, FaultSpec, FaultTarget};
pub use npu::{NpuBackendChoice, NpuInfo};
pub use runtime::{BackendChoice, Counters, Runtime, RuntimeOptions, TraceDigests};
pub use trace::close_trace;

/// The GPU backends built into this hrx, as [`BackendChoice`] names them: the software
/// device always, `cuda` and `hip` by feature (CUDA loads libcuda at run time, so it is
/// listed where the driver is missing too).
pub const GPU_BACKENDS: &[&str] = &[
    "sim",
    #[cfg(feature = "cuda")]
    "cuda",
    #[cfg(feature = "hip")]
    "hip",
];

/// The NPU backends built into this hrx: the software NPU always, `xrt` by feature.
pub const NPU_BACKENDS: &[&str] = &[
    "sim",
    #[cfg(feature = "xrt")]
    "xrt",
];

/// An execution engine; visibility is tracked between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// A GPU.
    Gpu = 0,
    /// An NPU.
    Npu = 1,
    /// The host CPU.
    Host = 2,
}
