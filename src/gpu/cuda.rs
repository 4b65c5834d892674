//! The CUDA backend: cudarc 0.19's driver API, loaded at run time.
//!
//! Layers (cudarc's own): raw `cudarc::driver::sys` -> [`api`], one checked wrapper per driver
//! call returning [`CuError`] -> this backend. [`map_error`] is the one place that turns a
//! `CUresult` into a [`DeviceError`]: kernel faults (illegal address, launch failure, ...) and
//! other sticky errors of uncertain extent (ECC, unknown, ...) are device losses; out of
//! memory, invalid arguments and unsupported calls keep their kind; each names the call and
//! the CUDA code. Hazards, contracts and alignment are checked above the backend.
//!
//! - **Loading.** cudarc panics when libcuda is absent, so [`CudaDevice::open`] first asks
//!   `sys::is_culib_present()`, then resolves every driver symbol the backend calls, and only
//!   then calls into the driver: without a driver it answers [`Error::Unsupported`].
//! - **Contexts.** Each device ordinal uses its primary context, shared by every runtime of the
//!   process on that device (one [`Context`] per ordinal, with its loaded modules). Runtime
//!   workers are different threads, so every operation first makes the context current
//!   (`cuCtxSetCurrent`, a thread-local store).
//! - **Sticky slot.** A device-loss error poisons the shared context: every later call answers
//!   `DeviceLost` naming the first cause (the driver would answer the same sticky error). Errors
//!   in `Drop` are never panics: they go into the slot and surface on the next call.
//! - **Memory.** GPU-local: `cuMemAlloc`. Host-visible: `cuMemHostAlloc(DEVICEMAP | PORTABLE)`
//!   with a page more, used from its first 4 KiB boundary (XRT imports only page-aligned host
//!   memory), its device address from `cuMemHostGetDevicePointer`. New allocations are
//!   zero-filled, as on the software device. `write`/`read` are synchronous
//!   (`cuMemcpyHtoD`/`DtoH` on the legacy stream, then a synchronize of that stream; the
//!   runtime's streams are non-blocking).
//! - **Streams.** `cuStreamCreate(NON_BLOCKING)`; copies are `cuMemcpyAsync` between device
//!   addresses. [`NativeStream::last_span`] times everything enqueued since the last
//!   synchronize, from the batch's first start event to its last end event. CUDA events have
//!   no absolute time, so the span is placed on the host trace clock: `end_ns` is the host time
//!   at which `cuStreamSynchronize` returned and `start_ns = end_ns - elapsed(start, end)`. The
//!   position is late by the synchronize wake-up latency (microseconds).
//!   - A copy batch is bracketed by the stream's own event pair (`cuEventRecord` before the
//!     first copy and before the synchronize).
//!   - A native graph is timed by two event-record nodes inside the executable graph itself
//!     (`cuGraphAddEventRecordNode`): a start node that every root of the graph depends on,
//!     and an end node that depends on every leaf; each executable graph owns its event pair.
//!     Relaunching the same executable graph before a synchronize re-records its events, so
//!     the span then covers the last launch only (the runtime never does this).
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
//! - **Native graphs.** `cuGraphCreate`; fill -> `cuGraphAddMemsetNode` (element size 1, with
//!   the context); copy -> `cuGraphAddMemcpyNode` (a 1-D `CUDA_MEMCPY3D`); dispatch ->
//!   `cuGraphAddKernelNode_v2` (`kern`/`ctx` null); empty ranges -> `cuGraphAddEmptyNode`;
//!   finish -> `cuGraphInstantiateWithFlags`; launch -> `cuGraphLaunch`.
//! - **Kernels.** A spec's PTX when it has one, else the built-in CUDA C source
//!   ([`crate::kernels::cuda_source`]) compiled once per process with NVRTC (`--fmad=false`,
//!   no flush-to-zero). Modules are loaded once per context and PTX text.
//!
//! # Kernel parameter ABI
//!
//! A dispatch passes, in order: one 64-bit device address (`CUdeviceptr`) per binding (view
//! address = allocation address + view offset), then each 4-byte little-endian constant word as
//! its own 32-bit parameter. In CUDA C, bindings are pointers and words are `unsigned` or
//! `float`: `extern "C" __global__ void hrx_saxpy(const float* x, float* y, unsigned n,
//! float a)`. Constant bytes must be a whole number of words.
//!
//! # Faults
//!
//! `hrx_fail` stores to an unmapped address: on hardware that is `CUDA_ERROR_ILLEGAL_ADDRESS`,
//! reported as `DeviceLost` (the software device reports a kernel error of known extent). The
//! primary context stays unusable until every runtime on the device is dropped.

use super::{
    Allocation, DeviceInfo, DeviceSpan, GraphExec, GraphNode, Kernel, NativeAllocation,
    NativeDevice, NativeGraphBuilder, NativeGraphExec, NativeKernel, NativeStream, Stream, View,
    foreign_object,
};
use crate::kernels::KernelSpec;
use crate::sync::lock;
use crate::{DeviceCall, DeviceError, Error, Result};
use cudarc::driver::sys::{self, CUresult};
use std::any::Any;
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A failed driver call: its name and result code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CuError {
    /// The driver function, e.g. `cuMemAlloc_v2`.
    pub call: &'static str,
    /// What it returned.
    pub code: CUresult,
}

type CuResult<T> = std::result::Result<T, CuError>;

fn check(call: &'static str, code: CUresult) -> CuResult<()> {
    match code {
        CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(CuError { call, code }),
    }
}

/// Whether `code` is a sticky error of uncertain extent: the context is corrupted and device
/// memory written by in-flight work is undefined. Every kernel fault is one.
fn is_uncertain(code: CUresult) -> bool {
    use CUresult::*;
    is_kernel_fault(code)
        || matches!(
            code,
            CUDA_ERROR_ECC_UNCORRECTABLE
                | CUDA_ERROR_NVLINK_UNCORRECTABLE
                | CUDA_ERROR_CONTAINED
                | CUDA_ERROR_TENSOR_MEMORY_LEAK
                | CUDA_ERROR_EXTERNAL_DEVICE
                | CUDA_ERROR_CONTEXT_IS_DESTROYED
                | CUDA_ERROR_DEINITIALIZED
                | CUDA_ERROR_MPS_CONNECTION_FAILED
                | CUDA_ERROR_MPS_RPC_FAILURE
                | CUDA_ERROR_MPS_CLIENT_TERMINATED
                | CUDA_ERROR_UNKNOWN
        )
}

/// Whether `code` says a kernel faulted (a sticky error, part of [`is_uncertain`]).
fn is_kernel_fault(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
    )
}

/// The one decision from a driver error to an [`Error`] (a [`DeviceError`] naming the call
/// and the CUDA code): kernel faults and other sticky errors are device losses
/// ([`Error::is_device_loss`]); out of memory, invalid arguments and unsupported calls keep
/// their kind; the rest is [`DeviceError::Other`].
pub(crate) fn map_error(error: CuError) -> Error {
    use CUresult::*;
    let CuError { call, code } = error;
    let uncertain = is_uncertain(code);
    let device_call = DeviceCall {
        backend: "CUDA",
        call,
        code: code as i64,
        name: format!("{code:?}"),
        detail: if uncertain {
            "sticky: the CUDA context is unusable until every runtime on the device is dropped"
                .into()
        } else {
            String::new()
        },
    };
    match code {
        code if is_kernel_fault(code) => DeviceError::KernelFault(device_call),
        _ if uncertain => DeviceError::Lost(device_call),
        CUDA_ERROR_OUT_OF_MEMORY => DeviceError::OutOfMemory(device_call),
        CUDA_ERROR_INVALID_VALUE
        | CUDA_ERROR_INVALID_HANDLE
        | CUDA_ERROR_INVALID_DEVICE
        | CUDA_ERROR_INVALID_CONTEXT
        | CUDA_ERROR_INVALID_IMAGE
        | CUDA_ERROR_INVALID_PTX
        | CUDA_ERROR_INVALID_SOURCE
        | CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        | CUDA_ERROR_NOT_FOUND => DeviceError::InvalidArgument(device_call),
        CUDA_ERROR_NOT_SUPPORTED
        | CUDA_ERROR_NOT_PERMITTED
        | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | CUDA_ERROR_NO_BINARY_FOR_GPU => DeviceError::Unsupported(device_call),
        _ => DeviceError::Other(device_call),
    }
    .into()
}

mod api;
#[cfg(test)]
mod hardware_tests;

/// The oldest driver with every call the backend makes (`cuEventElapsedTime_v2`: 12.8).
const MIN_DRIVER_VERSION: i32 = 12080;

/// Alignment of host-visible memory (XRT's rule for imported host memory).
const PAGE: usize = 4096;

/// Why CUDA cannot be used here, or `None`: checks the library and its symbols without
/// initializing the driver.
fn library_problem() -> Option<String> {
    // SAFETY: only tries to dlopen the driver library (running its initializers).
    if !unsafe { sys::is_culib_present() } {
        return Some(
            "CUDA driver library libcuda.so.1 not found (install the NVIDIA driver); the \
             software device (backend sim) needs none"
                .into(),
        );
    }
    // SAFETY: the library is present, so cudarc's loader does not panic.
    unsafe { api::missing_symbol() }.map(|name| {
        format!(
            "the NVIDIA driver's libcuda lacks {name} (update to driver 570 or newer); the \
             software device (backend sim) needs none"
        )
    })
}

/// Errors recorded where they could not be returned.
#[derive(Default)]
struct Sticky {
    /// The first device loss: every later call answers it.
    lost: Option<String>,
    /// A non-fatal error from a `Drop`, answered once by the next call.
    deferred: Option<Error>,
}

/// A loaded module.
struct Module(sys::CUmodule);

/// A device's primary context, shared by every runtime of the process on that device.
struct Context {
    ordinal: usize,
    device: sys::CUdevice,
    raw: sys::CUcontext,
    /// Whether the sticky slot holds anything (the fast path reads only this).
    flagged: AtomicBool,
    sticky: Mutex<Sticky>,
    /// Modules by PTX text; unloaded with the context.
    modules: Mutex<HashMap<Arc<str>, Module>>,
}

// SAFETY: the driver API is thread-safe; a context handle may be made current on any thread.
unsafe impl Send for Context {}
// SAFETY: as above; mutable state is behind mutexes and atomics.
unsafe impl Sync for Context {}

impl Context {
    /// The process's context for `ordinal`, retained on first use.
    fn get(ordinal: usize) -> Result<Arc<Context>> {
        static CONTEXTS: OnceLock<Mutex<HashMap<usize, Weak<Context>>>> = OnceLock::new();
        let mut contexts = lock(CONTEXTS.get_or_init(Default::default));
        if let Some(context) = contexts.get(&ordinal).and_then(Weak::upgrade) {
            return Ok(context);
        }
        let unsupported = |what: String| Error::Unsupported(format!("CUDA: {what}"));
        api::init().map_err(|e| {
            unsupported(format!(
                "the driver did not initialize ({:?}); is the NVIDIA kernel module loaded and \
                 a GPU visible?",
                e.code
            ))
        })?;
        let version = api::driver_version().map_err(map_error)?;
        if version < MIN_DRIVER_VERSION {
            return Err(unsupported(format!(
                "driver supports CUDA {}.{}, the backend needs {}.{} or newer",
                version / 1000,
                version % 1000 / 10,
                MIN_DRIVER_VERSION / 1000,
                MIN_DRIVER_VERSION % 1000 / 10
            )));
        }
        let count = api::device_count().map_err(map_error)?;
        let index = i32::try_from(ordinal)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| {
                unsupported(format!("no device {ordinal} ({count} CUDA devices found)"))
            })?;
        let device = api::device(index).map_err(map_error)?;
        let raw = api::primary_ctx_retain(device).map_err(map_error)?;
        let context = Arc::new(Context {
            ordinal,
            device,
            raw,
            flagged: AtomicBool::new(false),
            sticky: Mutex::default(),
            modules: Mutex::default(),
        });
        contexts.insert(ordinal, Arc::downgrade(&context));
        Ok(context)
    }

    /// Fails with the sticky error, if any; else makes the context current on this thread.
    fn enter(&self) -> Result<()> {
        self.check()?;
        api::ctx_set_current(self.raw).map_err(|e| self.error(e))
    }

    /// The sticky slot: the device loss, or a deferred error (answered once).
    fn check(&self) -> Result<()> {
        if !self.flagged.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut sticky = lock(&self.sticky);
        if let Some(cause) = &sticky.lost {
            return Err(Error::DeviceLost(format!(
                "CUDA device {} was lost earlier: {cause}",
                self.ordinal
            )));
        }
        let deferred = sticky.deferred.take();
        self.flagged.store(false, Ordering::Release);
        deferred.map_or(Ok(()), Err)
    }

    /// Maps `error`; a device loss also fills the sticky slot.
    fn error(&self, error: CuError) -> Error {
        let mapped = map_error(error);
        if mapped.is_device_loss() {
            lock(&self.sticky)
                .lost
                .get_or_insert_with(|| mapped.to_string());
            self.flagged.store(true, Ordering::Release);
        }
        mapped
    }

    /// Records an error that cannot be returned (in `Drop`).
    fn record(&self, error: CuError) {
        let mapped = self.error(error);
        if !mapped.is_device_loss() {
            lock(&self.sticky).deferred.get_or_insert(mapped);
            self.flagged.store(true, Ordering::Release);
        }
    }

    /// For `Drop`: makes the context current, recording a failure; whether that worked.
    fn enter_for_drop(&self) -> bool {
        match api::ctx_set_current(self.raw) {
            Ok(()) => true,
            Err(error) => {
                self.record(error);
                false
            }
        }
    }

    /// `entry` from the module of `ptx`, loading it on first use. The context is current.
    fn function(&self, ptx: &Arc<str>, entry: &str) -> Result<sys::CUfunction> {
        let name = CString::new(entry)
            .map_err(|_| Error::Message(format!("kernel entry {entry:?} contains NUL")))?;
        let mut modules = lock(&self.modules);
        let module = match modules.get(ptx) {
            Some(module) => module.0,
            None => {
                let text = CString::new(ptx.as_bytes())
                    .map_err(|_| Error::Message(format!("PTX of kernel {entry} contains NUL")))?;
                let module = api::module_load_data(&text).map_err(|e| self.error(e))?;
                modules.insert(ptx.clone(), Module(module));
                module
            }
        };
        api::module_function(module, &name).map_err(|e| match e.code {
            CUresult::CUDA_ERROR_NOT_FOUND => Error::Unsupported(format!(
                "kernel {entry}: its PTX has no entry point of that name"
            )),
            _ => self.error(e),
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Errors here have nowhere left to go: the context and its slot end now.
        if api::ctx_set_current(self.raw).is_ok() {
            for (_, module) in lock(&self.modules).drain() {
                let _ = api::module_unload(module.0);
            }
            let _ = api::ctx_set_current(std::ptr::null_mut());
        }
        let _ = api::primary_ctx_release(self.device);
    }
}

/// PTX of a built-in kernel source, compiled once per process.
fn compile(entry: &str, source: &'static str) -> Result<Arc<str>> {
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Arc<str>>>> = OnceLock::new();
    let mut cache = lock(CACHE.get_or_init(Default::default));
    if let Some(ptx) = cache.get(source) {
        return Ok(ptx.clone());
    }
    // SAFETY: only tries to dlopen libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Unsupported(format!(
            "kernel {entry}: the NVRTC library libnvrtc.so was not found (install the CUDA \
             toolkit's NVRTC, e.g. the cuda-nvrtc package), or give the spec PTX"
        )));
    }
    let options = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        ftz: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        name: Some(format!("{entry}.cu")),
        ..Default::default()
    };
    // cudarc panics on a missing NVRTC symbol; answer an error instead.
    let compiled = std::panic::catch_unwind(|| {
        cudarc::nvrtc::compile_ptx_with_opts(source, options).map(|ptx| ptx.to_src())
    })
    .map_err(|_| Error::Unsupported(format!("kernel {entry}: NVRTC could not be loaded")))?;
    let ptx: Arc<str> = compiled
        .map_err(|error| {
            let detail = match error {
                cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. } => {
                    format!("{nvrtc:?}: {}", log.to_string_lossy())
                }
                other => format!("{other:?}"),
            };
            Error::Message(format!("NVRTC could not compile kernel {entry}: {detail}"))
        })?
        .into();
    cache.insert(source, ptx.clone());
    Ok(ptx)
}

/// The CUDA device.
pub(crate) struct CudaDevice {
    context: Arc<Context>,
    name: String,
    memory_bytes: u64,
}

/// Why [`CudaDevice::open`] last failed for `BackendChoice::Auto` (surfaced with
/// `HRX_VERBOSE`; kept for a later `Runtime` accessor).
static FALLBACK_NOTE: Mutex<Option<String>> = Mutex::new(None);

/// Records why `Auto` fell back to the software device.
pub(crate) fn note_fallback(reason: String) {
    *lock(&FALLBACK_NOTE) = Some(reason);
}

/// Why `Auto` last fell back to the software device, if it did.
#[allow(dead_code)] // For a `Runtime` accessor; the runtime's owner decides.
pub(crate) fn fallback_note() -> Option<String> {
    lock(&FALLBACK_NOTE).clone()
}

impl CudaDevice {
    /// Opens device `ordinal` on its primary context.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when libcuda is missing or too old, the driver does not
    /// initialize or the device does not exist; a mapped driver error otherwise.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        if let Some(problem) = library_problem() {
            return Err(Error::Unsupported(problem));
        }
        let context = Context::get(ordinal)?;
        let name = api::device_name(context.device).map_err(|e| context.error(e))?;
        let memory_bytes = api::device_total_mem(context.device).map_err(|e| context.error(e))?;
        Ok(Self {
            context,
            name,
            memory_bytes: memory_bytes as u64,
        })
    }

    /// The CUDA allocation behind a view of this device.
    fn allocation<'a>(&self, view: &View<'a>) -> Result<&'a CudaAllocation> {
        allocation(&self.context, view)
    }
}

fn allocation<'a>(context: &Arc<Context>, view: &View<'a>) -> Result<&'a CudaAllocation> {
    view.owner()
        .native()
        .as_any()
        .downcast_ref::<CudaAllocation>()
        .filter(|a| Arc::ptr_eq(&a.context, context))
        .ok_or_else(|| foreign_object("allocation"))
}

struct CudaAllocation {
    context: Arc<Context>,
    /// Device address (of the mapping, for host memory).
    address: sys::CUdeviceptr,
    /// Pinned host memory (page-aligned, inside `host_base`'s allocation), or null for device
    /// memory.
    host: *mut u8,
    /// What `cuMemHostAlloc` returned, freed on drop.
    host_base: *mut u8,
    len: usize,
}

// SAFETY: device memory and pinned host memory may be used from any thread; concurrent access
// is ordered by the runtime's hazard tracking.
unsafe impl Send for CudaAllocation {}
// SAFETY: as above.
unsafe impl Sync for CudaAllocation {}

impl Drop for CudaAllocation {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        // SAFETY: allocated in `CudaDevice::allocate`, freed once here; the runtime drops a
        // buffer only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::mem_free(self.address)
            } else {
                api::mem_free_host(self.host_base.cast())
            }
        };
        if let Err(error) = result {
            self.context.record(error);
        }
    }
}

impl NativeAllocation for CudaAllocation {
    fn device_address(&self) -> u64 {
        self.address
    }
    fn host_pointer(&self) -> *mut u8 {
        self.host
    }
    fn len(&self) -> usize {
        self.len
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct CudaKernel {
    context: Arc<Context>,
    entry: String,
    function: sys::CUfunction,
    /// `(bindings, words)` for built-in sources, checked at dispatch.
    parameters: Option<(usize, usize)>,
    /// The PTX the module was loaded from (the trace stores it; replay needs no NVRTC).
    ptx: std::sync::Arc<str>,
}

// SAFETY: a function handle may be used from any thread with its context current; its module
// lives as long as the context this value holds.
unsafe impl Send for CudaKernel {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for CudaKernel {}

impl NativeKernel for CudaKernel {
    fn code(&self) -> Option<&[u8]> {
        Some(self.ptx.as_bytes())
    }
    fn entry(&self) -> &str {
        &self.entry
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl NativeDevice for CudaDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            backend: "cuda",
            name: self.name.clone(),
            ordinal: self.context.ordinal,
            memory_bytes: self.memory_bytes,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        let context = &self.context;
        context.enter()?;
        let bytes = len.max(1);
        let allocation = if host_visible {
            // `cuMemHostAlloc` does not promise page alignment (1 byte came back 1 KiB-aligned
            // on the H200), but XRT imports host memory only at 4 KiB-aligned addresses: take
            // a page more and start at the first page boundary.
            let padded = bytes.checked_add(PAGE).ok_or_else(|| {
                Error::Message(format!("cannot allocate {len} bytes of pinned host memory"))
            })?;
            let base = api::mem_host_alloc(padded).map_err(|e| context.error(e))?;
            let offset = (base as usize).next_multiple_of(PAGE) - base as usize;
            // Owned from here: dropping it frees the host memory.
            let mut allocation = CudaAllocation {
                context: context.clone(),
                address: 0,
                // SAFETY: `offset < PAGE`, inside the allocation of `padded` bytes.
                host: unsafe { base.cast::<u8>().add(offset) },
                host_base: base.cast(),
                len,
            };
            // SAFETY: `host..host + bytes` lies in the live allocation, owned here; zeroed as
            // on the software device.
            unsafe { std::ptr::write_bytes(allocation.host, 0, bytes) };
            // SAFETY: `base` came from cuMemHostAlloc and is live; the mapping is linear.
            let device =
                unsafe { api::mem_host_device_pointer(base) }.map_err(|e| context.error(e))?;
            allocation.address = device + offset as u64;
            allocation
        } else {
            let address = api::mem_alloc(bytes).map_err(|e| context.error(e))?;
            let allocation = CudaAllocation {
                context: context.clone(),
                address,
                host: std::ptr::null_mut(),
                host_base: std::ptr::null_mut(),
                len,
            };
            // SAFETY: the fresh allocation of `bytes` bytes; waited for before returning
            // (non-blocking streams do not wait for the legacy stream).
            unsafe { api::memset_d8(address, 0, bytes) }.map_err(|e| context.error(e))?;
            api::stream_synchronize(std::ptr::null_mut()).map_err(|e| context.error(e))?;
            allocation
        };
        Ok(Allocation::new(Arc::new(allocation)))
    }

    fn stream(&self) -> Result<Stream> {
        self.context.enter()?;
        Ok(Box::new(CudaStream::new(self.context.clone())?))
    }

    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        let (ptx, parameters) = match &spec.code.ptx {
            Some(ptx) => (ptx.clone(), None),
            None => {
                let source = crate::kernels::cuda_source(&spec.entry).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "kernel {} has no PTX and no built-in CUDA source",
                        spec.entry
                    ))
                })?;
                let parameters = crate::kernels::cuda_parameters(&spec.entry);
                (compile(&spec.entry, source)?, parameters)
            }
        };
        self.context.enter()?;
        let function = self.context.function(&ptx, &spec.entry)?;
        Ok(Arc::new(CudaKernel {
            context: self.context.clone(),
            entry: spec.entry.clone(),
            function,
            parameters,
            ptx,
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        let allocation = self.allocation(dst)?;
        let data = &data[..data.len().min(dst.len())];
        if let Some(host) = dst.host_pointer() {
            // SAFETY: the caller registered exclusive host access to `dst`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        self.context.enter()?;
        let address = allocation.address + dst.offset() as u64;
        // SAFETY: the view is in bounds of the allocation; the caller registered exclusive
        // access. The legacy stream is synchronized before returning.
        unsafe { api::memcpy_htod(address, data) }.map_err(|e| self.context.error(e))?;
        api::stream_synchronize(std::ptr::null_mut()).map_err(|e| self.context.error(e))
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        let allocation = self.allocation(src)?;
        let len = out.len().min(src.len());
        let out = &mut out[..len];
        if let Some(host) = src.host_pointer() {
            // SAFETY: the caller registered host read access to `src`.
            unsafe { std::ptr::copy_nonoverlapping(host, out.as_mut_ptr(), len) };
            return Ok(());
        }
        if out.is_empty() {
            return Ok(());
        }
        self.context.enter()?;
        let address = allocation.address + src.offset() as u64;
        // SAFETY: the view is in bounds; nothing writes it meanwhile (registered access).
        unsafe { api::memcpy_dtoh(out, address) }.map_err(|e| self.context.error(e))
    }
}

struct CudaStream {
    context: Arc<Context>,
    raw: sys::CUstream,
    /// The stream's own timing events (copy batches).
    start: sys::CUevent,
    end: sys::CUevent,
    /// The timed batch enqueued since the last synchronize.
    batch: Option<Batch>,
    last: Option<DeviceSpan>,
    /// Whether copies and new graphs are timed (only when the runtime is traced: events
    /// cost 3-4 µs per one-kernel launch-to-synchronize, BENCHMARKS.md).
    timed: bool,
}

/// The events that bracket a batch of enqueued work.
#[derive(Clone, Copy)]
struct Batch {
    /// Recorded before the batch's first operation: the stream's start event (a copy came
    /// first) or the start node's event of the first graph launched.
    start: sys::CUevent,
    /// The end node's event of the last graph launched, when nothing was enqueued after it;
    /// `None`: the stream's end event is recorded at synchronize.
    end: Option<sys::CUevent>,
}

// SAFETY: stream and event handles may be used from any thread with the context current.
unsafe impl Send for CudaStream {}

impl CudaStream {
    /// A stream with its timing events. The context is current.
    fn new(context: Arc<Context>) -> Result<Self> {
        let raw = api::stream_create().map_err(|e| context.error(e))?;
        let mut stream = Self {
            context,
            raw,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            batch: None,
            last: None,
            timed: true,
        };
        stream.start = api::event_create().map_err(|e| stream.context.error(e))?;
        stream.end = api::event_create().map_err(|e| stream.context.error(e))?;
        Ok(stream)
    }

    /// Makes the context current and, for a stream operation (a copy), opens a timed batch
    /// with the stream's start event or extends the open one.
    fn begin(&mut self) -> Result<()> {
        self.context.enter()?;
        if !self.timed {
            return Ok(());
        }
        match &mut self.batch {
            Some(batch) => batch.end = None,
            None => {
                api::event_record(self.start, self.raw).map_err(|e| self.context.error(e))?;
                self.batch = Some(Batch {
                    start: self.start,
                    end: None,
                });
            }
        }
        Ok(())
    }

    /// [`NativeStream::launch`] with the context current.
    fn launch_entered(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = graph
            .as_any_mut()
            .downcast_mut::<CudaGraphExec>()
            .filter(|g| Arc::ptr_eq(&g.context, &self.context))
            .ok_or_else(|| foreign_object("graph"))?;
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.context.error(e))?;
        // The graph's own event-record nodes bracket its execution (an untimed graph has none).
        let (start, end) = (graph.events.start, graph.events.end);
        if start.is_null() {
            self.batch = None;
            return Ok(());
        }
        match &mut self.batch {
            Some(batch) => batch.end = Some(end),
            None => {
                self.batch = Some(Batch {
                    start,
                    end: Some(end),
                });
            }
        }
        Ok(())
    }

    /// [`NativeStream::synchronize`] with the context current.
    fn synchronize_entered(&mut self) -> Result<()> {
        let Some(batch) = self.batch.take() else {
            return api::stream_synchronize(self.raw).map_err(|e| self.context.error(e));
        };
        self.last = None;
        let end = match batch.end {
            Some(end) => end,
            None => {
                api::event_record(self.end, self.raw).map_err(|e| self.context.error(e))?;
                self.end
            }
        };
        api::stream_synchronize(self.raw).map_err(|e| self.context.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(batch.start, end).map_err(|e| self.context.error(e))?;
        let elapsed_ns = (f64::from(ms.max(0.0)) * 1e6) as u64;
        self.last = Some(DeviceSpan {
            start_ns: end_ns.saturating_sub(elapsed_ns),
            end_ns,
        });
        Ok(())
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        for event in [self.start, self.end] {
            if !event.is_null()
                && let Err(error) = api::event_destroy(event)
            {
                self.context.record(error);
            }
        }
        if let Err(error) = api::stream_destroy(self.raw) {
            self.context.record(error);
        }
    }
}

impl NativeStream for CudaStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        allocation(&self.context, dst)?;
        allocation(&self.context, src)?;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        // SAFETY: both views are in bounds of live allocations that the runtime keeps alive
        // until this stream is synchronized; hazards order access.
        unsafe { api::memcpy_async(dst.address(), src.address(), len, self.raw) }
            .map_err(|e| self.context.error(e))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.context.enter()?;
        self.synchronize_entered()
    }

    fn launch_and_synchronize(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        self.context.enter()?;
        self.launch_entered(graph)?;
        self.synchronize_entered()
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.context.enter()?;
        let raw = api::graph_create().map_err(|e| self.context.error(e))?;
        // Owned from here: dropping the builder destroys the graph and the events.
        let mut builder = CudaGraphBuilder {
            context: self.context.clone(),
            raw,
            nodes: Vec::new(),
            has_dependents: Vec::new(),
            events: GraphEvents::none(self.context.clone()),
            start_node: std::ptr::null_mut(),
        };
        if self.timed {
            builder.events = GraphEvents::new(self.context.clone())?;
            builder.start_node = api::graph_add_event_record(raw, &[], builder.events.start)
                .map_err(|e| self.context.error(e))?;
        }
        Ok(Box::new(builder))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        self.context.enter()?;
        self.launch_entered(graph)
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }

    fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }
}

/// The event pair that a native graph's event-record nodes record: created with the
/// builder, owned by the executable graph, destroyed after it.
struct GraphEvents {
    context: Arc<Context>,
    start: sys::CUevent,
    end: sys::CUevent,
}

// SAFETY: event handles may be used from any thread with the context current.
unsafe impl Send for GraphEvents {}

impl GraphEvents {
    /// No events: an untimed graph.
    fn none(context: Arc<Context>) -> Self {
        Self {
            context,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
        }
    }

    /// Two timing events. The context is current.
    fn new(context: Arc<Context>) -> Result<Self> {
        let mut events = Self {
            context,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
        };
        events.start = api::event_create().map_err(|e| events.context.error(e))?;
        events.end = api::event_create().map_err(|e| events.context.error(e))?;
        Ok(events)
    }
}

impl Drop for GraphEvents {
    fn drop(&mut self) {
        if (self.start.is_null() && self.end.is_null()) || !self.context.enter_for_drop() {
            return;
        }
        for event in [self.start, self.end] {
            if !event.is_null()
                && let Err(error) = api::event_destroy(event)
            {
                self.context.record(error);
            }
        }
    }
}

struct CudaGraphBuilder {
    context: Arc<Context>,
    raw: sys::CUgraph,
    /// The operation nodes, by [`GraphNode`] index.
    nodes: Vec<sys::CUgraphNode>,
    /// Whether each operation node has a dependent (the leaves have none).
    has_dependents: Vec<bool>,
    /// The timing events of the start and end event-record nodes.
    events: GraphEvents,
    /// The start event-record node: every root depends on it.
    start_node: sys::CUgraphNode,
}

// SAFETY: the graph is mutated only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for CudaGraphBuilder {}

impl Drop for CudaGraphBuilder {
    fn drop(&mut self) {
        if !self.raw.is_null()
            && self.context.enter_for_drop()
            && let Err(error) = api::graph_destroy(self.raw)
        {
            self.context.record(error);
        }
    }
}

impl CudaGraphBuilder {
    /// The driver nodes of `dependencies`, each of which must precede the new node.
    fn dependencies(&self, dependencies: &[GraphNode]) -> Result<Vec<sys::CUgraphNode>> {
        let index = self.nodes.len();
        dependencies
            .iter()
            .map(|d| {
                self.nodes.get(d.0).copied().ok_or_else(|| {
                    Error::Message(format!(
                        "graph node {index} depends on node {} that does not precede it",
                        d.0
                    ))
                })
            })
            .collect()
    }

    /// Adds the node made by `add` after `dependencies` (an empty node instead when `empty`:
    /// the driver refuses zero-byte memsets and copies).
    fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::CUgraph, &[sys::CUgraphNode]) -> CuResult<sys::CUgraphNode>,
    ) -> Result<GraphNode> {
        let mut deps = self.dependencies(dependencies)?;
        if deps.is_empty() && !self.start_node.is_null() {
            deps.push(self.start_node);
        }
        self.context.enter()?;
        let node = if empty {
            api::graph_add_empty(self.raw, &deps)
        } else {
            add(self.raw, &deps)
        }
        .map_err(|e| self.context.error(e))?;
        for dependency in dependencies {
            self.has_dependents[dependency.0] = true;
        }
        self.nodes.push(node);
        self.has_dependents.push(false);
        Ok(GraphNode(self.nodes.len() - 1))
    }
}

/// One side of a 1-D memcpy node: pinned host memory by host pointer, else device memory.
fn memcpy_side(view: &View<'_>) -> (sys::CUmemorytype, *mut c_void, sys::CUdeviceptr) {
    match view.host_pointer() {
        Some(host) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, host.cast(), 0),
        None => (
            sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            std::ptr::null_mut(),
            view.address(),
        ),
    }
}

impl NativeGraphBuilder for CudaGraphBuilder {
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode> {
        allocation(&self.context, dst)?;
        let params = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: dst.address(),
            pitch: dst.len(),
            value: u32::from(value),
            elementSize: 1,
            width: dst.len(),
            height: 1,
        };
        let context = self.context.raw;
        // SAFETY: the view is in bounds; the prepared graph keeps its buffer alive.
        self.add(dependencies, dst.is_empty(), |graph, deps| unsafe {
            api::graph_add_memset(graph, deps, &params, context)
        })
    }

    fn copy(
        &mut self,
        dependencies: &[GraphNode],
        dst: &View<'_>,
        src: &View<'_>,
    ) -> Result<GraphNode> {
        allocation(&self.context, dst)?;
        allocation(&self.context, src)?;
        let len = dst.len().min(src.len());
        let (src_type, src_host, src_device) = memcpy_side(src);
        let (dst_type, dst_host, dst_device) = memcpy_side(dst);
        let params = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: src_type,
            srcHost: src_host,
            srcDevice: src_device,
            srcArray: std::ptr::null_mut(),
            reserved0: std::ptr::null_mut(),
            srcPitch: len,
            srcHeight: 1,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: std::ptr::null_mut(),
            reserved1: std::ptr::null_mut(),
            dstPitch: len,
            dstHeight: 1,
            WidthInBytes: len,
            Height: 1,
            Depth: 1,
        };
        let context = self.context.raw;
        // SAFETY: both views are in bounds; the prepared graph keeps their buffers alive.
        self.add(dependencies, len == 0, |graph, deps| unsafe {
            api::graph_add_memcpy(graph, deps, &params, context)
        })
    }

    unsafe fn dispatch(
        &mut self,
        dependencies: &[GraphNode],
        kernel: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        constants: &[u8],
        views: &[View<'_>],
    ) -> Result<GraphNode> {
        let kernel = kernel
            .as_any()
            .downcast_ref::<CudaKernel>()
            .filter(|k| Arc::ptr_eq(&k.context, &self.context))
            .ok_or_else(|| foreign_object("kernel"))?;
        for view in views {
            allocation(&self.context, view)?;
        }
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "kernel {}: {} constant bytes are not whole 4-byte words (the CUDA parameter ABI)",
                kernel.entry,
                constants.len()
            )));
        }
        let words: Vec<u32> = constants
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        if let Some((bindings, count)) = kernel.parameters
            && (bindings, count) != (views.len(), words.len())
        {
            return Err(Error::Message(format!(
                "kernel {} takes {bindings} bindings and {count} constant words, got {} and {}",
                kernel.entry,
                views.len(),
                words.len()
            )));
        }
        // The parameter values; the driver copies them in cuGraphAddKernelNode.
        let addresses: Vec<u64> = views.iter().map(View::address).collect();
        let mut parameters: Vec<*mut c_void> = addresses
            .iter()
            .map(|a| std::ptr::from_ref(a).cast_mut().cast())
            .chain(
                words
                    .iter()
                    .map(|w| std::ptr::from_ref(w).cast_mut().cast()),
            )
            .collect();
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: kernel.function,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: 0,
            kernelParams: if parameters.is_empty() {
                std::ptr::null_mut()
            } else {
                parameters.as_mut_ptr()
            },
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.context.enter()?;
        // The end event-record node waits for every leaf (the start node in an empty graph).
        let mut leaves: Vec<sys::CUgraphNode> = self
            .nodes
            .iter()
            .zip(&self.has_dependents)
            .filter(|(_, has)| !**has)
            .map(|(node, _)| *node)
            .collect();
        if leaves.is_empty() {
            leaves.push(self.start_node);
        }
        if !self.events.end.is_null() {
            api::graph_add_event_record(self.raw, &leaves, self.events.end)
                .map_err(|e| self.context.error(e))?;
        }
        let instantiated = api::graph_instantiate(self.raw);
        let graph = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // The executable graph does not need its template any more.
        if let Err(error) = api::graph_destroy(graph) {
            self.context.record(error);
        }
        let raw = instantiated.map_err(|e| self.context.error(e))?;
        // The executable graph owns the events from here (the builder keeps null handles).
        let events = std::mem::replace(&mut self.events, GraphEvents::none(self.context.clone()));
        Ok(Box::new(CudaGraphExec {
            context: self.context.clone(),
            raw,
            events,
        }))
    }
}

struct CudaGraphExec {
    context: Arc<Context>,
    raw: sys::CUgraphExec,
    /// Recorded by the graph's start and end nodes; dropped (destroyed) after `raw`.
    events: GraphEvents,
}

// SAFETY: launched only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for CudaGraphExec {}

impl Drop for CudaGraphExec {
    fn drop(&mut self) {
        if self.context.enter_for_drop()
            && let Err(error) = api::graph_exec_destroy(self.raw)
        {
            self.context.record(error);
        }
    }
}

impl NativeGraphExec for CudaGraphExec {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeOptions;
    use CUresult::*;

    #[test]
    fn error_mapping_table() {
        let map = |code| {
            map_error(CuError {
                call: "cuTest",
                code,
            })
        };
        for code in [
            CUDA_ERROR_ILLEGAL_ADDRESS,
            CUDA_ERROR_LAUNCH_FAILED,
            CUDA_ERROR_MISALIGNED_ADDRESS,
            CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUDA_ERROR_ECC_UNCORRECTABLE,
            CUDA_ERROR_ASSERT,
            CUDA_ERROR_UNKNOWN,
        ] {
            let error = map(code);
            assert!(error.is_device_loss(), "{code:?} -> {error}");
            assert!(error.to_string().contains(&format!("{code:?}")), "{error}");
            assert!(error.to_string().contains("cuTest"), "{error}");
        }
        assert!(matches!(
            map(CUDA_ERROR_ILLEGAL_ADDRESS),
            Error::Device(DeviceError::KernelFault(_))
        ));
        assert!(matches!(
            map(CUDA_ERROR_ECC_UNCORRECTABLE),
            Error::Device(DeviceError::Lost(_))
        ));
        let oom = map(CUDA_ERROR_OUT_OF_MEMORY);
        assert!(
            matches!(&oom, Error::Device(DeviceError::OutOfMemory(c)) if c.call == "cuTest" && c.name == "CUDA_ERROR_OUT_OF_MEMORY"),
            "{oom}"
        );
        assert!(!oom.is_device_loss());
        assert!(oom.to_string().starts_with("out of device memory"), "{oom}");
        for code in [
            CUDA_ERROR_INVALID_VALUE,
            CUDA_ERROR_INVALID_HANDLE,
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            CUDA_ERROR_INVALID_PTX,
            CUDA_ERROR_NOT_FOUND,
        ] {
            let error = map(code);
            assert!(
                matches!(&error, Error::Device(DeviceError::InvalidArgument(c)) if c.code == code as i64),
                "{code:?} -> {error}"
            );
            assert!(
                error
                    .to_string()
                    .contains(&format!("CUDA cuTest failed: {code:?}")),
                "{error}"
            );
        }
        assert!(matches!(
            map(CUDA_ERROR_NOT_SUPPORTED),
            Error::Device(DeviceError::Unsupported(_))
        ));
    }

    fn libcuda_present() -> bool {
        // SAFETY: only tries to dlopen the driver library.
        unsafe { sys::is_culib_present() }
    }

    #[test]
    fn without_libcuda_open_is_unsupported_and_names_the_library() {
        if libcuda_present() {
            eprintln!("skipped: libcuda is present on this machine");
            return;
        }
        let error = CudaDevice::open(0).err().expect("no driver, no device");
        assert!(
            matches!(&error, Error::Unsupported(m) if m.contains("libcuda.so.1")),
            "{error}"
        );
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default().backend(crate::BackendChoice::Cuda);
        let error = crate::runtime::open_device(&options, &faults)
            .err()
            .unwrap();
        assert!(error.to_string().contains("libcuda.so.1"), "{error}");
    }

    #[test]
    fn without_libcuda_auto_falls_back_to_the_software_device() {
        if libcuda_present() {
            eprintln!("skipped: libcuda is present on this machine");
            return;
        }
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let device = crate::runtime::open_device(&RuntimeOptions::default(), &faults).unwrap();
        assert_eq!(device.info().backend, "sim");
        assert!(fallback_note().unwrap().contains("libcuda.so.1"));
    }

    #[test]
    fn every_builtin_gpu_kernel_has_a_cuda_source_with_its_entry() {
        for entry in crate::kernels::builtin_entries() {
            if *entry == "hrx_npu_threshold" {
                assert!(crate::kernels::cuda_source(entry).is_none());
                continue;
            }
            let source = crate::kernels::cuda_source(entry).expect("CUDA source");
            assert!(
                source.contains(&format!("extern \"C\" __global__ void {entry}(")),
                "{entry}"
            );
            let (bindings, words) = crate::kernels::cuda_parameters(entry).unwrap();
            let signature = source.split(&format!("void {entry}(")).nth(1).unwrap();
            let signature = &signature[..signature.find(')').unwrap()];
            assert_eq!(signature.matches('*').count(), bindings, "{entry}");
            assert_eq!(
                signature.matches(',').count() + 1,
                bindings + words,
                "{entry}"
            );
        }
    }
}
