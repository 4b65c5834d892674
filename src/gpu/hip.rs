//! The AMD HIP backend (feature `hip`, off by default): HIP runtime through hip-runtime-sys
//! 0.1.2's types and link, with the calls declared in [`api`] (see there why: an `i32`
//! result, converted without undefined behaviour).
//!
//! Mirrors the CUDA backend. [`map_error`] is the one place that turns a HIP result code into
//! a [`DeviceError`]: kernel faults and other sticky errors of uncertain extent (illegal
//! address, launch failure, ECC, `hipErrorUnknown`, and any code the bindings do not know,
//! conservatively) are device losses; out of memory, invalid arguments and unsupported calls
//! keep their kind; each names the call and the code. Hazards, contracts and alignment are checked above the backend.
//!
//! - **Opening.** `hipGetDeviceCount`; `hipErrorNoDevice` or too few devices answer
//!   [`Error::Unsupported`] naming libamdhip64 ("no device"), never a crash. HIP's current
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
//!   carrying only PTX is [`Error::Unsupported`]: HIP cannot load PTX. The kernel parameter ABI
//!   is CUDA's: one 64-bit device address per binding, then one 32-bit word per constant word.
//!
//! Verified here (CI, no AMD GPU): it builds and links against Debian's HIP 5.2; opening
//! answers "no device"; `auto` skips it; unknown result codes convert without UB; hipRTC
//! compiles every built-in kernel but `hrx_fail` to a gfx90a code object. Not run on AMD
//! hardware: device memory, graphs (in particular kernel nodes with a module function, which
//! HIP documents for its own kernel handles) and timing are untested.

use super::{
    Allocation, DeviceInfo, DeviceSpan, GraphExec, GraphNode, Kernel, NativeAllocation,
    NativeDevice, NativeGraphBuilder, NativeGraphExec, NativeKernel, NativeStream, Stream, View,
    foreign_object,
};
use crate::kernels::KernelSpec;
use crate::sync::lock;
use crate::{DeviceCall, DeviceError, Error, Result};
use api::{HipError, HipResult};
use hip_runtime_sys as sys;
use std::any::Any;
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex, OnceLock};

mod api;
mod codes;

/// `hipErrorNoDevice`.
const NO_DEVICE: i32 = 100;

/// The name of a raw HIP result code: the bindings' variant name, or a description of a code
/// they do not know.
pub(crate) fn code_name(code: i32) -> String {
    match codes::known(code) {
        Some(known) => format!("{known:?}"),
        None => format!(
            "unknown hipError_t {code} (not in the HIP 5.4 headers of hip-runtime-sys 0.1.2)"
        ),
    }
}

/// Whether `code` is a sticky error of uncertain extent. Codes the bindings do not know are
/// treated as uncertain: nothing says what they left behind.
fn is_uncertain(code: i32) -> bool {
    use sys::hipError_t::*;
    match codes::known(code) {
        None => true,
        Some(known) => matches!(
            known,
            hipErrorIllegalAddress
                | hipErrorLaunchFailure
                | hipErrorLaunchTimeOut
                | hipErrorAssert
                | hipErrorECCNotCorrectable
                | hipErrorContextIsDestroyed
                | hipErrorDeinitialized
                | hipErrorIllegalState
                | hipErrorUnknown
                | hipErrorRuntimeOther
        ),
    }
}

/// The one decision from a HIP error to an [`Error`] (a [`DeviceError`] naming the call and
/// the code): kernel faults and other sticky or unknown codes are device losses
/// ([`Error::is_device_loss`]); out of memory, invalid arguments and unsupported calls keep
/// their kind; the rest is [`DeviceError::Other`].
pub(crate) fn map_error(error: HipError) -> Error {
    use sys::hipError_t::*;
    let HipError { call, code } = error;
    let uncertain = is_uncertain(code);
    let device_call = DeviceCall {
        backend: "HIP",
        call,
        code: i64::from(code),
        name: code_name(code),
        detail: if uncertain {
            "sticky: the HIP device is unusable until every runtime on it is dropped".into()
        } else {
            String::new()
        },
    };
    match codes::known(code) {
        Some(
            hipErrorIllegalAddress | hipErrorLaunchFailure | hipErrorLaunchTimeOut | hipErrorAssert,
        ) => DeviceError::KernelFault(device_call),
        _ if uncertain => DeviceError::Lost(device_call),
        Some(hipErrorOutOfMemory) => DeviceError::OutOfMemory(device_call),
        Some(
            hipErrorInvalidValue
            | hipErrorInvalidHandle
            | hipErrorInvalidDevice
            | hipErrorInvalidContext
            | hipErrorInvalidImage
            | hipErrorInvalidDeviceFunction
            | hipErrorInvalidDevicePointer
            | hipErrorInvalidConfiguration
            | hipErrorLaunchOutOfResources
            | hipErrorNotFound,
        ) => DeviceError::InvalidArgument(device_call),
        Some(hipErrorNotSupported | hipErrorNoBinaryForGpu) => {
            DeviceError::Unsupported(device_call)
        }
        _ => DeviceError::Other(device_call),
    }
    .into()
}

/// Why `Auto` last skipped HIP.
static FALLBACK_NOTE: Mutex<Option<String>> = Mutex::new(None);

/// Records why `Auto` skipped HIP.
pub(crate) fn note_fallback(reason: String) {
    *lock(&FALLBACK_NOTE) = Some(reason);
}

/// Why `Auto` last skipped HIP, if it did.
#[allow(dead_code)] // Read by tests; kept for a `Runtime` accessor like CUDA's.
pub(crate) fn fallback_note() -> Option<String> {
    lock(&FALLBACK_NOTE).clone()
}

/// Per-device state shared by everything made on it.
struct Shared {
    ordinal: i32,
    /// The first device loss; every later call answers it.
    lost: Mutex<Option<String>>,
    /// A non-fatal error from a `Drop`, answered once by the next call.
    deferred: Mutex<Option<Error>>,
    /// Modules by code object; unloaded with the device.
    modules: Mutex<HashMap<Arc<[u8]>, Module>>,
}

struct Module(sys::hipModule_t);

// SAFETY: HIP handles may be used from any thread once the device is current; mutable state
// is behind mutexes.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// Fails with the sticky or deferred error, else makes the device current on this thread.
    fn enter(&self) -> Result<()> {
        if let Some(cause) = &*lock(&self.lost) {
            return Err(Error::DeviceLost(format!(
                "HIP device {} was lost earlier: {cause}",
                self.ordinal
            )));
        }
        if let Some(error) = lock(&self.deferred).take() {
            return Err(error);
        }
        api::set_device(self.ordinal).map_err(|e| self.error(e))
    }

    /// Maps `error`; a device loss also fills the sticky slot.
    fn error(&self, error: HipError) -> Error {
        let mapped = map_error(error);
        if mapped.is_device_loss() {
            lock(&self.lost).get_or_insert_with(|| mapped.to_string());
        }
        mapped
    }

    /// Records an error that cannot be returned (in `Drop`).
    fn record(&self, error: HipError) {
        let mapped = self.error(error);
        if !mapped.is_device_loss() {
            lock(&self.deferred).get_or_insert(mapped);
        }
    }

    /// For `Drop`: makes the device current; whether that worked.
    fn enter_for_drop(&self) -> bool {
        match api::set_device(self.ordinal) {
            Ok(()) => true,
            Err(error) => {
                self.record(error);
                false
            }
        }
    }

    /// `entry` of the module loaded from `code`, loading it on first use. Device current.
    fn function(&self, code: &Arc<[u8]>, entry: &str) -> Result<sys::hipFunction_t> {
        let name = CString::new(entry)
            .map_err(|_| Error::Message(format!("kernel entry {entry:?} contains NUL")))?;
        let mut modules = lock(&self.modules);
        let module = match modules.get(code) {
            Some(module) => module.0,
            None => {
                let module = api::module_load_data(code).map_err(|e| self.error(e))?;
                modules.insert(code.clone(), Module(module));
                module
            }
        };
        api::module_function(module, &name).map_err(|e| {
            if e.code == sys::hipError_t::hipErrorNotFound as i32 {
                Error::Unsupported(format!(
                    "kernel {entry}: its code object has no entry point of that name"
                ))
            } else {
                self.error(e)
            }
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if api::set_device(self.ordinal).is_ok() {
            for (_, module) in lock(&self.modules).drain() {
                let _ = api::module_unload(module.0);
            }
        }
    }
}

/// The architecture option for hipRTC: `HRX_HIP_ARCH`, else none (hipRTC then compiles for
/// the current device).
fn arch_options() -> Vec<CString> {
    let mut options = vec![CString::new("-ffp-contract=off").expect("no NUL")];
    if let Ok(arch) = std::env::var("HRX_HIP_ARCH")
        && !arch.is_empty()
        && let Ok(option) = CString::new(format!("--offload-arch={arch}"))
    {
        options.push(option);
    }
    options
}

/// A code object of a built-in kernel source, compiled once per process and option set.
fn compile(entry: &str, source: &'static str, options: &[CString]) -> Result<Arc<[u8]>> {
    type Cache = HashMap<(&'static str, Vec<CString>), Arc<[u8]>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let key = (source, options.to_vec());
    if let Some(code) = lock(CACHE.get_or_init(Default::default)).get(&key) {
        return Ok(code.clone());
    }
    let text = CString::new(source)
        .map_err(|_| Error::Message(format!("kernel {entry}: source contains NUL")))?;
    let name = CString::new(format!("{entry}.hip")).expect("entry names have no NUL");
    let refs: Vec<&std::ffi::CStr> = options.iter().map(CString::as_c_str).collect();
    let code: Arc<[u8]> = api::rtc_compile(&text, &name, &refs)
        .map_err(|(error, log)| {
            Error::Unsupported(format!(
                "hipRTC could not compile kernel {entry} ({} returned hiprtcResult {}): {}",
                error.call,
                error.code,
                log.trim()
            ))
        })?
        .into();
    lock(CACHE.get_or_init(Default::default)).insert(key, code.clone());
    Ok(code)
}

/// The HIP device.
pub(crate) struct HipDevice {
    shared: Arc<Shared>,
    name: String,
    memory_bytes: u64,
}

impl HipDevice {
    /// Opens device `ordinal`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming libamdhip64 when HIP finds no device (or not that many);
    /// a mapped HIP error otherwise.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        let version = api::runtime_version().unwrap_or(0);
        let no_device = |detail: String| {
            Error::Unsupported(format!(
                "HIP: no device {ordinal} ({detail}; hrx links libamdhip64.so.5, HIP runtime \
                 {}.{}); the hip backend needs an AMD GPU with the ROCm driver (/dev/kfd); the \
                 software device (backend sim) needs none",
                version / 10_000_000,
                version / 100_000 % 100
            ))
        };
        let count = match api::device_count() {
            Ok(count) => count,
            Err(e) if e.code == NO_DEVICE => return Err(no_device(code_name(e.code))),
            Err(e) => {
                return Err(no_device(format!(
                    "hipGetDeviceCount: {}",
                    code_name(e.code)
                )));
            }
        };
        let index = i32::try_from(ordinal)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| no_device(format!("{count} HIP devices found")))?;
        let shared = Arc::new(Shared {
            ordinal: index,
            lost: Mutex::default(),
            deferred: Mutex::default(),
            modules: Mutex::default(),
        });
        shared.enter()?;
        let device = api::device(index).map_err(|e| shared.error(e))?;
        let name = api::device_name(device).map_err(|e| shared.error(e))?;
        let memory_bytes = api::device_total_mem(device).map_err(|e| shared.error(e))? as u64;
        Ok(Self {
            shared,
            name,
            memory_bytes,
        })
    }
}

fn allocation<'a>(shared: &Arc<Shared>, view: &View<'a>) -> Result<&'a HipAllocation> {
    view.owner()
        .native()
        .as_any()
        .downcast_ref::<HipAllocation>()
        .filter(|a| Arc::ptr_eq(&a.shared, shared))
        .ok_or_else(|| foreign_object("allocation"))
}

fn device_pointer(view: &View<'_>) -> *mut c_void {
    view.address() as usize as *mut c_void
}

struct HipAllocation {
    shared: Arc<Shared>,
    /// Device address (of the mapping, for host memory).
    address: u64,
    /// Pinned host memory, or null for device memory.
    host: *mut u8,
    len: usize,
}

// SAFETY: device and pinned host memory may be used from any thread; access is ordered by the
// runtime's hazard tracking.
unsafe impl Send for HipAllocation {}
// SAFETY: as above.
unsafe impl Sync for HipAllocation {}

impl Drop for HipAllocation {
    fn drop(&mut self) {
        if self.address == 0 && self.host.is_null() {
            return;
        }
        if !self.shared.enter_for_drop() {
            return;
        }
        // SAFETY: allocated in `HipDevice::allocate`, freed once; the runtime drops a buffer
        // only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::free(self.address as usize as *mut c_void)
            } else {
                api::host_free(self.host.cast())
            }
        };
        if let Err(error) = result {
            self.shared.record(error);
        }
    }
}

impl NativeAllocation for HipAllocation {
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

struct HipKernel {
    shared: Arc<Shared>,
    entry: String,
    function: sys::hipFunction_t,
    /// `(bindings, words)` for built-in sources, checked at dispatch.
    parameters: Option<(usize, usize)>,
}

// SAFETY: a function handle may be used from any thread; its module lives as long as the
// device state this value holds.
unsafe impl Send for HipKernel {}
// SAFETY: as above; never mutated.
unsafe impl Sync for HipKernel {}

impl NativeKernel for HipKernel {
    fn entry(&self) -> &str {
        &self.entry
    }
    // No `code()`: traces store PTX for kernels' code, and an AMD code object is not PTX;
    // replay rebuilds built-in kernels from their entry names.
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl NativeDevice for HipDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            backend: "hip",
            name: self.name.clone(),
            ordinal: self.shared.ordinal as usize,
            memory_bytes: self.memory_bytes,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        let shared = &self.shared;
        shared.enter()?;
        let bytes = len.max(1);
        let mut allocation = HipAllocation {
            shared: shared.clone(),
            address: 0,
            host: std::ptr::null_mut(),
            len,
        };
        if host_visible {
            let host = api::host_malloc(bytes).map_err(|e| shared.error(e))?;
            allocation.host = host.cast();
            // SAFETY: a live allocation of `bytes` bytes, owned here; zeroed as on the
            // software device.
            unsafe { std::ptr::write_bytes(allocation.host, 0, bytes) };
            // SAFETY: `host` came from hipHostMalloc and is live.
            let device = unsafe { api::host_device_pointer(host) }.map_err(|e| shared.error(e))?;
            allocation.address = device as usize as u64;
        } else {
            let device = api::malloc(bytes).map_err(|e| shared.error(e))?;
            allocation.address = device as usize as u64;
            // SAFETY: the fresh allocation of `bytes` bytes; waited for before returning.
            unsafe { api::memset(device, 0, bytes) }.map_err(|e| shared.error(e))?;
            api::device_synchronize().map_err(|e| shared.error(e))?;
        }
        Ok(Allocation::new(Arc::new(allocation)))
    }

    fn stream(&self) -> Result<Stream> {
        self.shared.enter()?;
        Ok(Box::new(HipStream::new(self.shared.clone())?))
    }

    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        let source = crate::kernels::cuda_source(&spec.entry).ok_or_else(|| {
            Error::Unsupported(format!(
                "kernel {}: HIP needs an AMD code object and hrx has no built-in source of \
                 that name{}",
                spec.entry,
                if spec.code.ptx.is_some() {
                    " (its PTX is for CUDA only)"
                } else {
                    ""
                }
            ))
        })?;
        self.shared.enter()?;
        let code = compile(&spec.entry, source, &arch_options())?;
        let function = self.shared.function(&code, &spec.entry)?;
        Ok(Arc::new(HipKernel {
            shared: self.shared.clone(),
            entry: spec.entry.clone(),
            function,
            parameters: crate::kernels::cuda_parameters(&spec.entry),
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        allocation(&self.shared, dst)?;
        let data = &data[..data.len().min(dst.len())];
        if let Some(host) = dst.host_pointer() {
            // SAFETY: the caller registered exclusive host access to `dst`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        self.shared.enter()?;
        // SAFETY: the view is in bounds; the caller registered exclusive access.
        unsafe { api::memcpy_htod(device_pointer(dst), data) }.map_err(|e| self.shared.error(e))?;
        api::device_synchronize().map_err(|e| self.shared.error(e))
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        allocation(&self.shared, src)?;
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
        self.shared.enter()?;
        // SAFETY: the view is in bounds; nothing writes it meanwhile (registered access).
        unsafe { api::memcpy_dtoh(out, device_pointer(src)) }.map_err(|e| self.shared.error(e))
    }
}

struct HipStream {
    shared: Arc<Shared>,
    raw: sys::hipStream_t,
    start: sys::hipEvent_t,
    end: sys::hipEvent_t,
    /// Whether work was enqueued (and `start` recorded) since the last synchronize.
    open: bool,
    last: Option<DeviceSpan>,
}

// SAFETY: stream and event handles may be used from any thread with the device current.
unsafe impl Send for HipStream {}

impl HipStream {
    fn new(shared: Arc<Shared>) -> Result<Self> {
        let raw = api::stream_create().map_err(|e| shared.error(e))?;
        let mut stream = Self {
            shared,
            raw,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            open: false,
            last: None,
        };
        stream.start = api::event_create().map_err(|e| stream.shared.error(e))?;
        stream.end = api::event_create().map_err(|e| stream.shared.error(e))?;
        Ok(stream)
    }

    /// Makes the device current and opens a timed batch if none is open.
    fn begin(&mut self) -> Result<()> {
        self.shared.enter()?;
        if !self.open {
            api::event_record(self.start, self.raw).map_err(|e| self.shared.error(e))?;
            self.open = true;
        }
        Ok(())
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if !self.shared.enter_for_drop() {
            return;
        }
        for event in [self.start, self.end] {
            if !event.is_null()
                && let Err(error) = api::event_destroy(event)
            {
                self.shared.record(error);
            }
        }
        if let Err(error) = api::stream_destroy(self.raw) {
            self.shared.record(error);
        }
    }
}

impl NativeStream for HipStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        allocation(&self.shared, dst)?;
        allocation(&self.shared, src)?;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        // SAFETY: both views are in bounds of live allocations kept alive until this stream
        // is synchronized; hazards order access.
        unsafe { api::memcpy_async(device_pointer(dst), device_pointer(src), len, self.raw) }
            .map_err(|e| self.shared.error(e))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.shared.enter()?;
        if !std::mem::take(&mut self.open) {
            return api::stream_synchronize(self.raw).map_err(|e| self.shared.error(e));
        }
        self.last = None;
        api::event_record(self.end, self.raw).map_err(|e| self.shared.error(e))?;
        api::stream_synchronize(self.raw).map_err(|e| self.shared.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(self.start, self.end).map_err(|e| self.shared.error(e))?;
        let elapsed_ns = (f64::from(ms.max(0.0)) * 1e6) as u64;
        self.last = Some(DeviceSpan {
            start_ns: end_ns.saturating_sub(elapsed_ns),
            end_ns,
        });
        Ok(())
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.shared.enter()?;
        let raw = api::graph_create().map_err(|e| self.shared.error(e))?;
        Ok(Box::new(HipGraphBuilder {
            shared: self.shared.clone(),
            raw,
            nodes: Vec::new(),
        }))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = graph
            .as_any_mut()
            .downcast_mut::<HipGraphExec>()
            .filter(|g| Arc::ptr_eq(&g.shared, &self.shared))
            .ok_or_else(|| foreign_object("graph"))?;
        self.begin()?;
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.shared.error(e))
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }
}

struct HipGraphBuilder {
    shared: Arc<Shared>,
    raw: sys::hipGraph_t,
    nodes: Vec<sys::hipGraphNode_t>,
}

// SAFETY: mutated only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphBuilder {}

impl Drop for HipGraphBuilder {
    fn drop(&mut self) {
        if !self.raw.is_null()
            && self.shared.enter_for_drop()
            && let Err(error) = api::graph_destroy(self.raw)
        {
            self.shared.record(error);
        }
    }
}

impl HipGraphBuilder {
    /// Adds the node made by `add` after `dependencies` (an empty node when `empty`).
    fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::hipGraph_t, &[sys::hipGraphNode_t]) -> HipResult<sys::hipGraphNode_t>,
    ) -> Result<GraphNode> {
        let index = self.nodes.len();
        let deps = dependencies
            .iter()
            .map(|d| {
                self.nodes.get(d.0).copied().ok_or_else(|| {
                    Error::Message(format!(
                        "graph node {index} depends on node {} that does not precede it",
                        d.0
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.shared.enter()?;
        let node = if empty {
            api::graph_add_empty(self.raw, &deps)
        } else {
            add(self.raw, &deps)
        }
        .map_err(|e| self.shared.error(e))?;
        self.nodes.push(node);
        Ok(GraphNode(index))
    }
}

impl NativeGraphBuilder for HipGraphBuilder {
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode> {
        allocation(&self.shared, dst)?;
        let params = sys::hipMemsetParams {
            dst: device_pointer(dst),
            elementSize: 1,
            height: 1,
            pitch: dst.len(),
            value: u32::from(value),
            width: dst.len(),
        };
        // SAFETY: the view is in bounds; the prepared graph keeps its buffer alive.
        self.add(dependencies, dst.is_empty(), |graph, deps| unsafe {
            api::graph_add_memset(graph, deps, &params)
        })
    }

    fn copy(
        &mut self,
        dependencies: &[GraphNode],
        dst: &View<'_>,
        src: &View<'_>,
    ) -> Result<GraphNode> {
        allocation(&self.shared, dst)?;
        allocation(&self.shared, src)?;
        let len = dst.len().min(src.len());
        let (dst, src) = (device_pointer(dst), device_pointer(src));
        // SAFETY: both views are in bounds; the prepared graph keeps their buffers alive.
        self.add(dependencies, len == 0, |graph, deps| unsafe {
            api::graph_add_memcpy(graph, deps, dst, src, len)
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
            .downcast_ref::<HipKernel>()
            .filter(|k| Arc::ptr_eq(&k.shared, &self.shared))
            .ok_or_else(|| foreign_object("kernel"))?;
        for view in views {
            allocation(&self.shared, view)?;
        }
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "kernel {}: {} constant bytes are not whole 4-byte words (the parameter ABI)",
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
        let dim = |d: [u32; 3]| sys::dim3 {
            x: d[0],
            y: d[1],
            z: d[2],
        };
        let params = sys::hipKernelNodeParams {
            blockDim: dim(block),
            extra: std::ptr::null_mut(),
            func: kernel.function.cast(),
            gridDim: dim(grid),
            kernelParams: if parameters.is_empty() {
                std::ptr::null_mut()
            } else {
                parameters.as_mut_ptr()
            },
            sharedMemBytes: 0,
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.shared.enter()?;
        let instantiated = api::graph_instantiate(self.raw);
        let graph = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        if let Err(error) = api::graph_destroy(graph) {
            self.shared.record(error);
        }
        let raw = instantiated.map_err(|e| self.shared.error(e))?;
        Ok(Box::new(HipGraphExec {
            shared: self.shared.clone(),
            raw,
        }))
    }
}

struct HipGraphExec {
    shared: Arc<Shared>,
    raw: sys::hipGraphExec_t,
}

// SAFETY: launched only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphExec {}

impl Drop for HipGraphExec {
    fn drop(&mut self) {
        if self.shared.enter_for_drop()
            && let Err(error) = api::graph_exec_destroy(self.raw)
        {
            self.shared.record(error);
        }
    }
}

impl NativeGraphExec for HipGraphExec {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeOptions;

    #[test]
    fn raw_codes_convert_by_lookup_and_unknown_ones_without_ub() {
        assert_eq!(codes::known(0), Some(sys::hipError_t::hipSuccess));
        assert_eq!(codes::known(100), Some(sys::hipError_t::hipErrorNoDevice));
        assert_eq!(
            codes::known(700),
            Some(sys::hipError_t::hipErrorIllegalAddress)
        );
        // Values no variant has: a code newer than the bindings, a negative one, the gap.
        for code in [5000, -1, 1055, i32::MAX, i32::MIN] {
            assert_eq!(codes::known(code), None, "{code}");
            let name = code_name(code);
            assert!(
                name.contains(&format!("unknown hipError_t {code}")),
                "{name}"
            );
            let error = map_error(HipError {
                call: "hipTest",
                code,
            });
            assert!(
                error.is_device_loss(),
                "unknown codes are uncertain: {error}"
            );
            assert!(error.to_string().contains("hipTest"), "{error}");
        }
        // Every variant round-trips through its integer value.
        for &variant in codes::KNOWN {
            let code = variant as u32 as i32;
            assert_eq!(codes::known(code), Some(variant));
        }
    }

    #[test]
    fn error_mapping_table() {
        let map = |code: sys::hipError_t| {
            map_error(HipError {
                call: "hipTest",
                code: code as u32 as i32,
            })
        };
        use sys::hipError_t::*;
        for code in [
            hipErrorIllegalAddress,
            hipErrorLaunchFailure,
            hipErrorAssert,
            hipErrorECCNotCorrectable,
            hipErrorUnknown,
        ] {
            let error = map(code);
            assert!(error.is_device_loss(), "{code:?} -> {error}");
            assert!(error.to_string().contains(&format!("{code:?}")), "{error}");
        }
        assert!(matches!(
            map(hipErrorIllegalAddress),
            Error::Device(DeviceError::KernelFault(_))
        ));
        let oom = map(hipErrorOutOfMemory);
        assert!(
            matches!(&oom, Error::Device(DeviceError::OutOfMemory(c)) if c.call == "hipTest"),
            "{oom}"
        );
        assert!(oom.to_string().starts_with("out of device memory"), "{oom}");
        for code in [
            hipErrorInvalidValue,
            hipErrorInvalidHandle,
            hipErrorNotFound,
        ] {
            let error = map(code);
            assert!(
                matches!(&error, Error::Device(DeviceError::InvalidArgument(_))),
                "{code:?} -> {error}"
            );
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("invalid argument: HIP hipTest failed: {code:?}")),
                "{code:?} -> {error}"
            );
        }
        let other = map(hipErrorHostMemoryAlreadyRegistered);
        assert!(
            matches!(&other, Error::Device(DeviceError::Other(_))) && !other.is_device_loss(),
            "{other}"
        );
    }

    fn device_present() -> bool {
        api::device_count().is_ok_and(|n| n > 0)
    }

    #[test]
    fn without_a_device_open_is_unsupported_and_names_the_library() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        let Err(error) = HipDevice::open(0) else {
            panic!("no device, yet HIP opened one");
        };
        assert!(
            matches!(&error, Error::Unsupported(m) if m.contains("HIP: no device 0") && m.contains("libamdhip64")),
            "{error}"
        );
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default()
            .environment(false)
            .backend(crate::BackendChoice::Hip);
        let error = crate::runtime::open_device(&options, &faults)
            .err()
            .unwrap();
        assert!(error.to_string().contains("libamdhip64"), "{error}");
    }

    #[test]
    fn without_a_device_auto_skips_hip() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default().environment(false);
        let device = crate::runtime::open_device(&options, &faults).unwrap();
        assert_ne!(device.info().backend, "hip");
        assert!(fallback_note().unwrap().contains("HIP: no device"));
    }

    #[test]
    fn hiprtc_compiles_the_builtin_kernels_to_amd_code_objects() {
        // No device needed: an explicit architecture (MI200, gfx90a).
        let options = vec![
            CString::new("-ffp-contract=off").unwrap(),
            CString::new("--offload-arch=gfx90a").unwrap(),
        ];
        for entry in crate::kernels::builtin_entries() {
            let Some(source) = crate::kernels::cuda_source(entry) else {
                continue;
            };
            let compiled = compile(entry, source, &options);
            if *entry == "hrx_fail" {
                // Its store to an unmapped address is inline PTX.
                let error = compiled.expect_err("PTX assembly is not HIP");
                assert!(
                    matches!(&error, Error::Unsupported(m) if m.contains("hrx_fail")),
                    "{error}"
                );
                continue;
            }
            let code = compiled.unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert!(
                code.starts_with(b"\x7fELF"),
                "{entry}: not an ELF code object"
            );
            assert!(
                code.windows(entry.len()).any(|w| w == entry.as_bytes()),
                "{entry}: symbol missing from the code object"
            );
        }
    }
}
