//! GPU backend traits and the always-built software device.
//!
//! One trait family, one module per backend (wgpu-hal's layout): a [`NativeDevice`] allocates
//! memory, opens streams and loads kernels; a [`NativeStream`] runs copies and launches
//! executable native graphs; a [`NativeGraphBuilder`] records fill, copy and dispatch nodes
//! with their dependencies and finishes into a [`NativeGraphExec`].
//!
//! Who validates what: hazards, contracts, alignment and runtime identity are checked above
//! the backend (in [`crate::Graph`]). A backend only reports failed device calls
//! ([`crate::DeviceError`], from one `map_error` per backend: out of memory, device lost,
//! kernel fault, invalid argument, unsupported, with the vendor code and the call), device
//! loss noticed otherwise ([`Error::DeviceLost`]) or a kernel failure of known extent
//! ([`Error::Kernel`]).
//!
//! The backends are pure: nothing here imports the runtime, the execution stages or the
//! trace (checked by `scripts/layers.py`). A backend returns what the layers above record
//! (a stream's [`NativeStream::last_span`], a kernel's [`NativeKernel::code`]); it is handed
//! what it needs (a [`KernelSpec`], [`View`]s) and never reaches up for it.
//!
//! - `mod.rs`: the traits, [`Allocation`] and [`View`] (how the runtime's buffers reach a
//!   backend).
//! - `sim.rs`: the software device, always built.
//! - `clocks.rs`: the GPU's clocks at one moment and why they are there ([`GpuClocks`],
//!   read by a backend's [`ClockReader`]: NVML on CUDA), pure data.
//! - `common.rs`: what the CUDA and HIP backends share (built with either).
//! - `op_times.rs`: operation times inside a native graph counted from what each waits on,
//!   as Nsight Compute counts a kernel's (CUDA's self-timed kernels and CUPTI).
//! - `cuda/`, `hip/`: one folder per vendor backend, one file per driver object (their
//!   `mod.rs` lists the files and the vendor rules behind each).

pub mod clocks;
#[cfg(any(feature = "cuda", feature = "hip"))]
pub(crate) mod common;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
#[cfg(feature = "hip")]
pub(crate) mod hip;
#[cfg(feature = "cuda")]
pub(crate) mod op_times;
pub(crate) mod sim;

pub use clocks::{ClockLimits, ClockReader, GpuClocks, GpuClocksError, NativeClockReader};

use crate::kernels::KernelSpec;
use crate::{Error, Result};
use std::any::Any;
use std::sync::Arc;

/// What a device says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Backend name (`sim`, `cuda`, `hip`).
    pub backend: &'static str,
    /// Device name.
    pub name: String,
    /// Device ordinal.
    pub ordinal: usize,
    /// Device memory in bytes (0 where unknown).
    pub memory_bytes: u64,
}

/// A device memory allocation owned by a backend.
pub trait NativeAllocation: Send + Sync + Any {
    /// Device address of the first byte.
    fn device_address(&self) -> u64;
    /// Host pointer of the first byte, null when the memory has no host mapping.
    fn host_pointer(&self) -> *mut u8;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the device reads the host mapping across the bus (pinned host memory on CUDA
    /// and HIP, read by copy engines and kernels; `false`, the default, where the device's
    /// copies are the CPU's own): large host writes into it are then streamed past the CPU's
    /// caches on x86-64 (`crate::dma_memory`).
    fn read_by_dma(&self) -> bool {
        false
    }
    /// Whether the allocation has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// For the owning backend's downcasts.
    fn as_any(&self) -> &dyn Any;
}

/// A device allocation, kept alive by the buffer that owns it.
pub struct Allocation(Arc<dyn NativeAllocation>);

impl Allocation {
    /// Wraps a backend allocation.
    pub fn new(native: Arc<dyn NativeAllocation>) -> Self {
        Self(native)
    }
    /// Device address of the first byte (the alignment checks use it).
    ///
    /// # Errors
    /// Never on the built-in backends; reserved for backends without address queries.
    pub fn allocation_address(&self) -> Result<u64> {
        Ok(self.0.device_address())
    }
    pub(crate) fn address(&self) -> u64 {
        self.0.device_address()
    }
    pub(crate) fn host_pointer(&self) -> *mut u8 {
        self.0.host_pointer()
    }
    pub(crate) fn read_by_dma(&self) -> bool {
        self.0.read_by_dma()
    }
    pub(crate) fn same_memory(&self, other: &Allocation) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// The backend's allocation, for its own downcasts.
    pub fn native(&self) -> &dyn NativeAllocation {
        &*self.0
    }
}

/// A byte range of a device allocation, as backends see a binding.
#[derive(Clone, Copy)]
pub struct View<'a> {
    owner: &'a Allocation,
    offset: usize,
    len: usize,
}

impl<'a> View<'a> {
    pub(crate) fn new(owner: &'a Allocation, offset: usize, len: usize) -> Self {
        Self { owner, offset, len }
    }
    /// The allocation.
    pub fn owner(&self) -> &'a Allocation {
        self.owner
    }
    /// Byte offset into the allocation.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Host address of the first byte, where the memory has a host mapping.
    pub fn host_pointer(&self) -> Option<*mut u8> {
        let base = self.owner.host_pointer();
        // SAFETY: the view is in bounds of its allocation.
        (!base.is_null()).then(|| unsafe { base.add(self.offset) })
    }
    /// Device address of the first byte.
    pub fn address(&self) -> u64 {
        self.owner.address() + self.offset as u64
    }
}

/// A node of a native graph under construction (its insertion index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphNode(pub usize);

/// A loaded kernel.
pub trait NativeKernel: Send + Sync + Any {
    /// Entry point name.
    fn entry(&self) -> &str;
    /// The code the kernel was loaded from (PTX on CUDA), where there is some.
    fn code(&self) -> Option<&[u8]> {
        None
    }
    /// For the owning backend's downcasts.
    fn as_any(&self) -> &dyn Any;
}

/// A loaded kernel, shared by every graph that dispatches it.
pub type Kernel = Arc<dyn NativeKernel>;

/// Device start/end of a launch in device nanoseconds, where the backend can time it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSpan {
    /// Start in ns on the device clock.
    pub start_ns: u64,
    /// End in ns on the device clock.
    pub end_ns: u64,
}

/// The times of one operation of the work a stream synchronized last, where the backend
/// times operations ([`NativeStream::op_spans`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpSpan {
    /// The operation: its [`GraphNode`] index in a launched graph, its position in a copy
    /// batch.
    pub index: usize,
    /// Its start and end, in ns on the host clock ([`crate::clock::now_ns`]).
    pub span: DeviceSpan,
    /// Whether the device measured it (a device span mapped onto the host clock), not the
    /// host around it (the software device, which runs operations on the calling thread).
    pub device: bool,
}

/// A device: memory, streams, kernels.
pub trait NativeDevice: Send + Sync {
    /// Name, ordinal, memory.
    fn info(&self) -> DeviceInfo;
    /// Allocates `len` bytes; `host_visible` asks for pinned host memory mapped for the GPU.
    ///
    /// # Errors
    /// Out of memory, or a device error.
    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation>;
    /// Opens a stream.
    ///
    /// # Errors
    /// A device error.
    fn stream(&self) -> Result<Stream>;
    /// Loads a kernel from its spec (host code on the software device, PTX on CUDA).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the spec has no code for this backend.
    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel>;
    /// Synchronous host-to-device write (host helpers of GPU-local buffers).
    ///
    /// # Errors
    /// A device error.
    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()>;
    /// Synchronous device-to-host read.
    ///
    /// # Errors
    /// A device error.
    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()>;
    /// A reader of this GPU's clocks ([`GpuClocks`]), open until dropped.
    ///
    /// # Errors
    /// [`GpuClocksError::NotApplicable`] where the backend has none to read (the default);
    /// on CUDA, why NVML could not be opened for this device
    /// ([`GpuClocksError::LibraryMissing`], [`GpuClocksError::SymbolMissing`],
    /// [`GpuClocksError::NoBusId`], [`GpuClocksError::DeviceNotFound`],
    /// [`GpuClocksError::Call`]).
    fn clock_reader(&self) -> std::result::Result<ClockReader, GpuClocksError> {
        Err(GpuClocksError::NotApplicable {
            backend: self.info().backend,
        })
    }
}

/// An ordered queue of device work.
pub trait NativeStream: Send {
    /// Enqueues a device copy of equal-length views.
    ///
    /// # Errors
    /// A device error.
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()>;
    /// Waits for all enqueued work.
    ///
    /// # Errors
    /// The first error of the enqueued work.
    fn synchronize(&mut self) -> Result<()>;
    /// Starts recording a native graph.
    ///
    /// # Errors
    /// A device error.
    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>>;
    /// Launches an executable graph made by this backend.
    ///
    /// # Errors
    /// A device error or the first failing node's error.
    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()>;
    /// [`NativeStream::launch`] then [`NativeStream::synchronize`], as one call so that a
    /// backend can do its per-call setup once (CUDA: make the context current).
    ///
    /// # Errors
    /// As `launch`, then as `synchronize`.
    fn launch_and_synchronize(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        self.launch(graph)?;
        self.synchronize()
    }
    /// Whether [`NativeStream::launch`] returns once the graph is queued (CUDA, HIP), not
    /// once it ran (the software device runs it in the call). The runtime launches such a
    /// graph from `submit` when its region is runnable at once, so that its bookkeeping
    /// overlaps the device's execution (see `execution::submit`).
    fn launches_asynchronously(&self) -> bool {
        false
    }
    /// Device times of the last synchronized launch or copy batch, where measurable.
    fn last_span(&mut self) -> Option<DeviceSpan> {
        None
    }
    /// Whether later copies and graphs are timed for [`NativeStream::last_span`]. The
    /// runtime turns timing off when nothing is traced: device timing has a cost per launch
    /// (event records) that an untraced run should not pay. On by default.
    fn set_timed(&mut self, _timed: bool) {}
    /// Appends to `out` the per-operation times of the work since the last call (a graph's
    /// nodes, a copy batch's copies), in the order they ran, and forgets them; nothing
    /// where the backend does not time operations or timing is off
    /// ([`NativeStream::set_timed`]). Called after every synchronize, failed ones too (a
    /// failed launch keeps the operations it timed, the failing one last).
    fn op_spans(&mut self, _out: &mut Vec<OpSpan>) {}
    /// Whether later graphs and copies are timed operation by operation on the device
    /// ([`NativeStream::op_spans`]): CUDA's kernel times through CUPTI, opt-in for their cost.
    /// The software device times operations whenever it is timed
    /// ([`NativeStream::set_timed`]), as that costs one clock reading between two operations.
    fn set_kernel_times(&mut self, _on: bool) {}
    /// Whether later timed graphs without kernel times ([`NativeStream::set_kernel_times`])
    /// launch the self-timing builds of hrx's built-in kernels, which record their own device
    /// start and end ([`NativeStream::op_spans`]): CUDA (`%globaltimer`, a few ns a block, so on
    /// whenever traced unless asked off). Off by default; nothing elsewhere.
    fn set_builtin_kernel_times(&mut self, _on: bool) {}
}

/// A stream owned by the runtime.
pub type Stream = Box<dyn NativeStream>;

/// Records a native graph.
pub trait NativeGraphBuilder: Send {
    /// Adds a byte fill of `dst` after `dependencies`.
    ///
    /// # Errors
    /// A device error.
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode>;
    /// Adds a copy of equal-length views after `dependencies`.
    ///
    /// # Errors
    /// A device error.
    fn copy(
        &mut self,
        dependencies: &[GraphNode],
        dst: &View<'_>,
        src: &View<'_>,
    ) -> Result<GraphNode>;
    /// Adds a kernel dispatch after `dependencies`.
    ///
    /// # Safety
    /// - `views` satisfy `kernel`'s contract (extents, alignment, aliasing) — the graph
    ///   builder checked them;
    /// - the memory behind `views` outlives every launch of the finished graph.
    ///
    /// # Errors
    /// A device error.
    unsafe fn dispatch(
        &mut self,
        dependencies: &[GraphNode],
        kernel: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        constants: &[u8],
        views: &[View<'_>],
    ) -> Result<GraphNode>;
    /// Instantiates the graph.
    ///
    /// # Errors
    /// A device error.
    fn finish(self: Box<Self>) -> Result<GraphExec>;
}

/// An instantiated native graph, launched once per submission.
pub trait NativeGraphExec: Send + Any {
    /// For the owning backend's downcasts.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// An executable native graph owned by the runtime.
pub type GraphExec = Box<dyn NativeGraphExec>;

/// The error when a backend is asked for another backend's object.
pub(crate) fn foreign_object(what: &str) -> Error {
    Error::Message(format!("{what} was made by another backend"))
}
