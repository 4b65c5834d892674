//! The runtime: options, backend selection, workers, counters.

use crate::buffer::Storage;
use crate::context::Context;
use crate::execution::shared::RuntimeOwner;
use crate::fault::{FaultInjector, FaultSpec};
use crate::gpu::{DeviceInfo, NativeDevice};
use crate::kernels::{KernelSpec, NpuKernelSpec};
use crate::trace::{TraceTarget, Tracer};
use crate::{Buffer, Error, GpuKernel, Graph, Placement, Result};
use hrx_capture::schema as s;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Which backend a runtime uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// `HRX_BACKEND` if set, else CUDA when this build has it (feature `cuda`), libcuda loads
    /// and the GPU ordinal exists, else `Sim` (also `Sim` when a fault is injected: fault
    /// injection is a software-device feature). With `HRX_VERBOSE=1`, the reason for falling
    /// back is printed to stderr.
    #[default]
    Auto,
    /// The software device.
    Sim,
    /// NVIDIA CUDA (feature `cuda`, on by default): loads libcuda.so.1 at run time; without
    /// it, or without a device, `Runtime::new` answers [`Error::Unsupported`].
    Cuda,
    /// AMD HIP (feature `hip`, off by default; links libamdhip64 from ROCm): without an AMD
    /// GPU, `Runtime::new` answers [`Error::Unsupported`]. `Auto` tries it after CUDA.
    Hip,
}

impl BackendChoice {
    /// The names [`FromStr`] takes, as its errors list them.
    const NAMES: &str = "auto, sim, cuda or hip";

    /// The backend an environment variable's `text` names, refused in the shape of every
    /// bad variable (`HRX_BACKEND: expected ..., got "x"`); `--backend` keeps [`FromStr`]'s.
    ///
    /// # Errors
    ///
    /// [`Error::Message`] naming `variable` for a name no backend has (or `xrt`).
    pub fn from_variable(variable: &str, text: &str) -> Result<Self> {
        Self::named(text)
            .unwrap_or_else(|| {
                Err(Error::Message(format!(
                    "expected {}, got {text:?}",
                    Self::NAMES
                )))
            })
            .map_err(|e| Error::Message(format!("{variable}: {e}")))
    }

    /// The backend `text` names; `None` for a name no backend has.
    fn named(text: &str) -> Option<Result<Self>> {
        Some(Ok(match text.to_ascii_lowercase().as_str() {
            "auto" | "" => BackendChoice::Auto,
            "sim" | "software" => BackendChoice::Sim,
            "cuda" => BackendChoice::Cuda,
            "hip" => BackendChoice::Hip,
            "xrt" => {
                return Some(Err(Error::Message(
                    "xrt is an NPU backend: choose it with HRX_NPU_BACKEND=xrt \
                     (RuntimeOptions::npu_backend)"
                        .into(),
                )));
            }
            _ => return None,
        }))
    }
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        Self::named(text).unwrap_or_else(|| {
            Err(Error::Message(format!(
                "unknown backend {:?} (expected {})",
                text.to_ascii_lowercase(),
                Self::NAMES
            )))
        })
    }
}

/// Which written ranges the trace digests after each region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceDigests {
    /// Ranges the host can observe: host-visible and NPU-shared buffers (downloads, NPU
    /// outputs). Cheap: no device reads, little hashing.
    #[default]
    Outputs,
    /// Every written range, GPU-local intermediates too (GPU-local ones are read back from
    /// the device): replay then names the first diverging region exactly.
    All,
}

/// Runtime configuration. Unset fields fall back to the environment: `HRX_BACKEND`
/// (`auto`, `sim`, `cuda`, `hip`), `HRX_NPU_BACKEND` (`auto`, `sim`, `xrt`), `HRX_FAULT` (see [`crate::fault`]) and `HRX_TRACE`.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Backend; `Auto` consults `HRX_BACKEND`.
    pub backend: BackendChoice,
    /// NPU backend; `Auto` consults `HRX_NPU_BACKEND`.
    pub npu_backend: crate::npu::NpuBackendChoice,
    /// GPU ordinal.
    pub gpu_index: usize,
    /// Reusable submission slots per prepared graph (at least 1).
    pub graph_slots: usize,
    /// Submissions in flight per runtime before `submit` answers `Busy` (at least 1).
    pub capacity: usize,
    /// Fault to inject on the software device; `None` consults `HRX_FAULT`.
    pub fault: Option<FaultSpec>,
    /// Trace file; `None` consults `HRX_TRACE`.
    pub trace: Option<PathBuf>,
    /// Capture the full contents of written ranges in the trace, not only their digests
    /// (`HRX_TRACE_CONTENTS=1`); replay can then compare floats within a tolerance.
    pub trace_contents: bool,
    /// Which written ranges are digested (`HRX_TRACE_DIGESTS=outputs|all`).
    pub trace_digests: TraceDigests,
    /// When traced, time each operation of a native graph or copy batch on the device
    /// (`HRX_TRACE_KERNELS=1`): CUDA through CUPTI's activity API, whose cost (1.1-1.5x on
    /// graphs of short kernels on the H200) is why it is asked for. The software device times
    /// every operation of a traced runtime regardless (one clock reading between two operations).
    pub kernel_times: bool,
    /// When traced and without [`RuntimeOptions::kernel_times`], launch the self-timing builds
    /// of hrx's built-in kernels, so each records its own device start and end (CUDA:
    /// `%globaltimer` read by each block; BENCHMARKS.md gives the cost). On by default;
    /// `HRX_TRACE_KERNELS=0` turns it off (regions only; the variable is read only where both
    /// this and `kernel_times` are at their defaults). Other operations (copies, memsets,
    /// kernels from PTX hrx did not compile) are timed only with `kernel_times`.
    pub builtin_kernel_times: bool,
    /// When traced, record host writes with their bytes (what a replay re-applies). On by
    /// default; a replay's own measuring runtime turns it off: it re-applies the trace's writes
    /// and would otherwise hold a copy of every one per repeat (a frame's bytes each).
    pub trace_host_writes: bool,
    /// Whether a trace opened by this runtime may drop records when a thread's buffer is
    /// full (`HRX_TRACE_MODE=lossless|lossy`); `None`: lossless, unless the environment says
    /// otherwise.
    pub trace_mode: Option<hrx_capture::TraceMode>,
    /// Which submissions a trace records (`HRX_TRACE_RANGE`); `None`: all of them, unless
    /// [`crate::trace::stop`] pauses it. See [`crate::trace`].
    pub trace_range: Option<hrx_capture::CaptureRange>,
    /// Whether unset fields fall back to the environment (`HRX_BACKEND`, `HRX_FAULT`,
    /// `HRX_TRACE`, `HRX_TRACE_CONTENTS`, `HRX_TRACE_DIGESTS`, `HRX_TRACE_KERNELS`, `HRX_TRACE_MODE`,
    /// `HRX_TRACE_RANGE`); a replay turns this off so
    /// the replayed run is exactly what it asks for.
    pub environment: bool,
    /// Record into this recorder instead of the process's trace (a replay's own
    /// measurements, an in-memory trace in a test). Takes precedence over `trace`.
    pub recorder: Option<hrx_capture::Recorder>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            backend: BackendChoice::Auto,
            npu_backend: crate::npu::NpuBackendChoice::Auto,
            gpu_index: 0,
            graph_slots: 2,
            capacity: 64,
            fault: None,
            trace: None,
            trace_contents: false,
            trace_digests: TraceDigests::Outputs,
            kernel_times: false,
            builtin_kernel_times: true,
            trace_host_writes: true,
            trace_mode: None,
            trace_range: None,
            environment: true,
            recorder: None,
        }
    }
}

impl RuntimeOptions {
    /// Defaults on the software device.
    pub fn sim() -> Self {
        Self {
            backend: BackendChoice::Sim,
            ..Self::default()
        }
    }
    /// Sets the backend.
    pub fn backend(mut self, backend: BackendChoice) -> Self {
        self.backend = backend;
        self
    }
    /// Sets the NPU backend.
    pub fn npu_backend(mut self, backend: crate::npu::NpuBackendChoice) -> Self {
        self.npu_backend = backend;
        self
    }
    /// Sets the slots per prepared graph.
    pub fn graph_slots(mut self, slots: usize) -> Self {
        self.graph_slots = slots;
        self
    }
    /// Sets the submission capacity.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }
    /// Sets the injected fault.
    pub fn fault(mut self, fault: FaultSpec) -> Self {
        self.fault = Some(fault);
        self
    }
    /// Sets the GPU ordinal.
    pub fn gpu_index(mut self, index: usize) -> Self {
        self.gpu_index = index;
        self
    }
    /// Sets the trace file.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }
    /// Records into `recorder` rather than the process's trace.
    pub fn recorder(mut self, recorder: hrx_capture::Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }
    /// Whether unset fields fall back to the environment.
    pub fn environment(mut self, on: bool) -> Self {
        self.environment = on;
        self
    }
    /// Sets which written ranges are digested.
    pub fn trace_digests(mut self, digests: TraceDigests) -> Self {
        self.trace_digests = digests;
        self
    }
    /// Turns device times of each operation on or off ([`RuntimeOptions::kernel_times`]).
    pub fn kernel_times(mut self, on: bool) -> Self {
        self.kernel_times = on;
        self
    }
    /// Turns the self-timing builds of built-in kernels on or off
    /// ([`RuntimeOptions::builtin_kernel_times`]).
    pub fn builtin_kernel_times(mut self, on: bool) -> Self {
        self.builtin_kernel_times = on;
        self
    }
    /// Records host writes when traced, or not ([`RuntimeOptions::trace_host_writes`]).
    pub fn trace_host_writes(mut self, on: bool) -> Self {
        self.trace_host_writes = on;
        self
    }
    /// Sets the trace mode (lossless or lossy) of a trace this runtime opens.
    pub fn trace_mode(mut self, mode: hrx_capture::TraceMode) -> Self {
        self.trace_mode = Some(mode);
        self
    }

    /// Records only the submissions inside `range` (see [`crate::trace`]).
    pub fn trace_range(mut self, range: hrx_capture::CaptureRange) -> Self {
        self.trace_range = Some(range);
        self
    }

    /// Captures full output contents in the trace, not only digests.
    pub fn trace_contents(mut self, on: bool) -> Self {
        self.trace_contents = on;
        self
    }

    fn resolve(self) -> Result<Self> {
        if self.graph_slots == 0 || self.capacity == 0 {
            return Err(Error::Message(
                "graph_slots and capacity must be at least 1".into(),
            ));
        }
        if !self.environment {
            return Ok(self);
        }
        // Every error below is a variable's: its own line (`record` printed it behind
        // `cannot start the hrx runtime:`, where `replay` printed the line alone).
        self.read_environment()
            .map_err(|e| Error::Variable(e.to_string()))
    }

    /// The options the environment's `HRX_` variables set (see [`RuntimeOptions::resolve`]).
    fn read_environment(mut self) -> Result<Self> {
        if self.backend == BackendChoice::Auto
            && let Ok(text) = std::env::var("HRX_BACKEND")
        {
            self.backend = BackendChoice::from_variable("HRX_BACKEND", &text)?;
        }
        if self.npu_backend == crate::npu::NpuBackendChoice::Auto
            && let Ok(text) = std::env::var("HRX_NPU_BACKEND")
        {
            self.npu_backend =
                crate::npu::NpuBackendChoice::from_variable("HRX_NPU_BACKEND", &text)?;
        }
        if self.fault.is_none()
            && let Ok(text) = std::env::var("HRX_FAULT")
            && !text.is_empty()
        {
            self.fault = Some(FaultSpec::from_variable("HRX_FAULT", &text)?);
        }
        if self.trace.is_none()
            && self.recorder.is_none()
            && let Some(path) = std::env::var_os("HRX_TRACE").filter(|p| !p.is_empty())
        {
            if path == "-" {
                return Err(Error::Message(
                    "HRX_TRACE=-: a trace cannot go to standard output (it is a seekable \
                     file); name a file"
                        .to_owned(),
                ));
            }
            self.trace = Some(path.into());
        }
        // Read at the software device's first allocation, where it would fail every one.
        crate::gpu::sim::memory_limit().map_err(|why| Error::Message(why.to_owned()))?;
        // Read at the first large allocation, where `off` would leave huge pages on.
        crate::huge_pages::setting().map_err(Error::Message)?;
        // Read by the clock at its first use, where a typo would fall back silently.
        hrx_capture::clock::ClockChoice::from_env()
            .map_err(|text| Error::Message(hrx_capture::WriteError::BadClock(text).to_string()))?;
        if self.trace_mode.is_none() {
            self.trace_mode =
                hrx_capture::TraceMode::from_env().map_err(|e| Error::Message(e.to_string()))?;
        }
        if self.trace_range.is_none() {
            self.trace_range =
                hrx_capture::CaptureRange::from_env().map_err(|e| Error::Message(e.to_string()))?;
        }
        // Read by the recorder as it opens, where a typo would leave the process untraced
        // (`HRX_TRACE`: "cannot record there") and `record -- PROGRAM` exiting 0.
        hrx_capture::compression_threads_from_env().map_err(|e| Error::Message(e.to_string()))?;
        // Each widens only (as HRX_TRACE_DIGESTS): an explicit `true` option stays.
        self.trace_contents |= env_flag("HRX_TRACE_CONTENTS")?;
        // Read where `auto` skips a backend, long after a typo could be said.
        env_flag(crate::switch::VERBOSE_ENV)?;
        if !self.kernel_times && self.builtin_kernel_times {
            self = self.kernels_switch(env_switch("HRX_TRACE_KERNELS")?);
        }
        match std::env::var("HRX_TRACE_DIGESTS").as_deref() {
            // Widens the default only: an explicit `All` is never narrowed.
            Ok("all") => self.trace_digests = TraceDigests::All,
            Ok("outputs") => {}
            Ok(other) => {
                return Err(Error::Message(format!(
                    "HRX_TRACE_DIGESTS: expected outputs or all, got {other:?}"
                )));
            }
            Err(_) => {}
        }
        Ok(self)
    }
}

/// How a traced runtime of `backend` with `options` times its operations (the trace's
/// `OpTimes`): what its streams are set to ([`crate::gpu::NativeStream::set_kernel_times`],
/// [`crate::gpu::NativeStream::set_builtin_kernel_times`]).
fn op_time_source(backend: &str, options: &RuntimeOptions) -> s::OpTimeSource {
    match backend {
        "sim" => s::OpTimeSource::Host,
        #[cfg(feature = "cuda")]
        "cuda" if options.kernel_times => {
            if crate::gpu::cuda::kernel_times_available() {
                s::OpTimeSource::Cupti
            } else {
                s::OpTimeSource::Off
            }
        }
        "cuda" if options.builtin_kernel_times => s::OpTimeSource::BuiltinKernels,
        "hip" if options.kernel_times => s::OpTimeSource::Events,
        _ => s::OpTimeSource::Off,
    }
}

impl RuntimeOptions {
    /// `HRX_TRACE_KERNELS` as [`env_switch`] reads it: `1` turns kernel times (CUPTI) on, `0`
    /// leaves regions only (built-in kernels untimed too), unset changes nothing. Options that
    /// ask for kernel times or turn them off win: the variable applies only where both are at
    /// their defaults ([`RuntimeOptions::resolve`] does not even read it then).
    fn kernels_switch(mut self, switch: Option<bool>) -> Self {
        if self.kernel_times || !self.builtin_kernel_times {
            return self;
        }
        match switch {
            Some(true) => self.kernel_times = true,
            Some(false) => self.builtin_kernel_times = false,
            None => {}
        }
        self
    }
}

/// Environment variable `name` as a flag: `1` is on; `0`, empty or unset is off.
///
/// # Errors
/// Anything else, naming the variable.
fn env_flag(name: &str) -> Result<bool> {
    Ok(env_switch(name)?.unwrap_or(false))
}

/// Environment variable `name` as a switch: `Some(true)` for `1`, `Some(false)` for `0`, `None`
/// when empty or unset.
///
/// # Errors
/// Anything else, naming the variable.
fn env_switch(name: &str) -> Result<Option<bool>> {
    crate::switch::switch_value(name, std::env::var_os(name).as_deref()).map_err(Error::Message)
}

/// A snapshot of the runtime's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Submissions accepted.
    pub submissions: u64,
    /// Native GPU graphs built by `prepare`.
    pub native_graphs_prepared: u64,
    /// Cached per-lane copy streams created.
    pub copy_streams_created: u64,
    /// Bytes copied by completed copy work, all lanes.
    pub copied_bytes: u64,
    /// Bytes copied per lane (Upload, Compute, Download).
    pub lane_copy_bytes: [u64; 3],
    /// NPU buffer-object syncs performed for cross-engine visibility.
    pub visibility_syncs: u64,
    /// Native regions that a thread in `Completion::wait` ran itself, its queue being idle,
    /// instead of the queue's worker.
    pub regions_run_by_waiters: u64,
    /// Notifications of a parked queue worker (each a futex wake on the notifying thread, an
    /// inter-processor interrupt where the worker's CPU sleeps): work that came after the
    /// worker's idle spin ended.
    pub worker_wakes: u64,
}

static RUNTIME_IDS: AtomicU32 = AtomicU32::new(1);
static BUFFER_IDS: AtomicU64 = AtomicU64::new(1);

/// A runtime: one device, five queues, bounded submissions. Cloning shares it.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeOwner>,
    pub(crate) options: Arc<RuntimeOptions>,
}

/// Opens the device `options` choose (see [`BackendChoice`]).
pub(crate) fn open_device(
    options: &RuntimeOptions,
    faults: &Arc<FaultInjector>,
) -> Result<Arc<dyn NativeDevice>> {
    let sim = || {
        Arc::new(crate::gpu::sim::SimDevice::new(
            options.gpu_index,
            faults.clone(),
        )) as Arc<dyn NativeDevice>
    };
    match options.backend {
        BackendChoice::Sim => Ok(sim()),
        BackendChoice::Auto => {
            #[cfg(feature = "cuda")]
            {
                let opened = match options.fault {
                    Some(_) => Err(Error::Unsupported(
                        "a fault is injected, which only the software device supports".into(),
                    )),
                    None => crate::gpu::cuda::CudaDevice::open(options.gpu_index),
                };
                match opened {
                    Ok(device) => return Ok(Arc::new(device)),
                    Err(error) => {
                        if crate::switch::verbose() {
                            crate::error::to_stderr(format_args!("hrx: using the software device: {error}"));
                        }
                        crate::gpu::cuda::note_fallback(error.to_string());
                    }
                }
            }
            #[cfg(feature = "hip")]
            {
                let opened = match options.fault {
                    Some(_) => Err(Error::Unsupported(
                        "a fault is injected, which only the software device supports".into(),
                    )),
                    None => crate::gpu::hip::HipDevice::open(options.gpu_index),
                };
                match opened {
                    Ok(device) => return Ok(Arc::new(device)),
                    Err(error) => {
                        if crate::switch::verbose() {
                            crate::error::to_stderr(format_args!("hrx: skipping HIP: {error}"));
                        }
                        crate::gpu::hip::note_fallback(error.to_string());
                    }
                }
            }
            Ok(sim())
        }
        #[cfg(feature = "cuda")]
        BackendChoice::Cuda => {
            if options.fault.is_some() {
                return Err(Error::Unsupported(
                    "fault injection works on the software device (backend sim) only"
                        .into(),
                ));
            }
            Ok(Arc::new(crate::gpu::cuda::CudaDevice::open(
                options.gpu_index,
            )?))
        }
        #[cfg(not(feature = "cuda"))]
        BackendChoice::Cuda => Err(Error::Unsupported(
            "the CUDA backend is not built into this hrx (rebuild with --features cuda; it loads libcuda.so.1 from the NVIDIA driver); the software device (backend sim) is always built".into(),
        )),
        #[cfg(feature = "hip")]
        BackendChoice::Hip => {
            if options.fault.is_some() {
                return Err(Error::Unsupported(
                    "fault injection works on the software device (backend sim) only"
                        .into(),
                ));
            }
            Ok(Arc::new(crate::gpu::hip::HipDevice::open(options.gpu_index)?))
        }
        #[cfg(not(feature = "hip"))]
        BackendChoice::Hip => Err(Error::Unsupported(
            "the HIP backend is not built into this hrx (rebuild with --features hip and HIP_PATH=/usr; it links libamdhip64 from ROCm, Debian package libamdhip64-dev); the software device (backend sim) is always built".into(),
        )),
    }
}

impl Runtime {
    /// Opens the backend and starts one worker per queue.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the chosen backend is missing (the message names the
    /// library looked for); [`Error::Message`] for bad options; [`Error::Variable`] for a
    /// bad value of an `HRX_` environment variable.
    pub fn new(options: RuntimeOptions) -> Result<Self> {
        let trace_from_environment =
            options.environment && options.trace.is_none() && options.recorder.is_none();
        let options = options.resolve()?;
        let faults = Arc::new(FaultInjector::new(options.fault.clone()));
        let device = open_device(&options, &faults)?;
        let npu = crate::npu::open(options.npu_backend, options.fault.is_some())?;
        let info = device.info();
        let recorder = crate::trace::open(TraceTarget {
            recorder: options.recorder.as_ref(),
            path: options.trace.as_deref(),
            mode: options.trace_mode.unwrap_or_default(),
            backend: info.backend.to_string(),
            device: info.name.clone(),
            from_environment: trace_from_environment,
        })?;
        let id = RUNTIME_IDS.fetch_add(1, Ordering::Relaxed);
        let tracer = Tracer::new(
            recorder,
            id,
            options.trace_contents,
            options.trace_digests == TraceDigests::All,
            options.trace_range,
        )
        .kernel_times(options.kernel_times)
        .builtin_kernel_times(options.builtin_kernel_times)
        .host_writes(options.trace_host_writes);
        let context = Arc::new(Context::new(id, device, faults, npu, tracer));
        if let Some(hook) = context.tracer.hook() {
            hook.record(s::Record::RuntimeStart(s::RuntimeStart {
                runtime: hook.runtime,
                backend: info.backend.to_string(),
                device: format!("{} (ordinal {})", info.name, info.ordinal),
                // Saturated, not truncated: `1 << 32` read as 0, a runtime taking nothing.
                graph_slots: u32::try_from(options.graph_slots).unwrap_or(u32::MAX),
                capacity: u32::try_from(options.capacity).unwrap_or(u32::MAX),
                fault: options.fault.as_ref().map(ToString::to_string),
                time_ns: hook.now_ns(),
            }));
            hook.record(s::Record::OpTimes(s::OpTimes {
                runtime: hook.runtime,
                source: op_time_source(info.backend, &options),
            }));
            hook.host_load();
        }
        Ok(Self {
            inner: RuntimeOwner::start(context, options.capacity)?,
            options: Arc::new(options),
        })
    }

    fn context(&self) -> &Context {
        self.inner.context()
    }

    /// Whether both handles are the same runtime.
    pub fn same_domain(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The options in force (environment applied).
    pub fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    /// Process-unique runtime id (trace records carry it).
    pub fn id(&self) -> u32 {
        self.context().id
    }

    /// The device.
    pub fn device_info(&self) -> DeviceInfo {
        self.context().device.info()
    }

    /// A reader of the GPU's clocks (SM and memory clocks in MHz, their maxima, what limits
    /// them, the temperature: [`GpuClocks`](crate::gpu::GpuClocks)), through NVML on CUDA.
    /// The reader keeps NVML open until dropped; each [`ClockReader::read`] is a few driver
    /// calls, cheap enough to take around a measurement (not inside it).
    ///
    /// # Errors
    /// [`GpuClocksError::NotApplicable`] on the software device and HIP; on CUDA, a one-line
    /// reason NVML cannot be read: its library missing (`libnvidia-ml.so.1`) or too old, no
    /// NVML device at the runtime's GPU's PCI bus id, or a failed NVML call with its code.
    /// Never a panic, and the runtime works on either way.
    ///
    /// [`ClockReader::read`]: crate::gpu::ClockReader::read
    /// [`GpuClocksError::NotApplicable`]: crate::gpu::GpuClocksError::NotApplicable
    pub fn gpu_clock_reader(
        &self,
    ) -> std::result::Result<crate::gpu::ClockReader, crate::gpu::GpuClocksError> {
        self.context().device.clock_reader()
    }

    /// The NPU (the simulator or an XRT device).
    pub fn npu_info(&self) -> crate::npu::NpuInfo {
        self.context().npu.info()
    }

    /// A new, empty graph.
    pub fn graph(&self) -> Graph {
        Graph::new(self.inner.clone(), self.options.graph_slots)
    }

    /// Allocates a buffer of `len_bytes` with `placement` (zero-filled on the software
    /// device).
    ///
    /// # Errors
    /// Out-of-memory or device errors.
    pub fn buffer(&self, len_bytes: usize, placement: Placement) -> Result<Buffer> {
        let context = self.inner.context();
        let allocation = context
            .device
            .allocate(len_bytes, placement.host_visible())?;
        let pointer = allocation.host_pointer();
        let (bo, npu_device, group) = match placement {
            Placement::NpuShared { group } => (
                // SAFETY: `pointer` is the allocation's host memory of `len_bytes` bytes, which
                // the storage owns together with the BO.
                Some(unsafe {
                    context
                        .npu
                        .import(pointer, len_bytes, allocation.address(), group)
                }?),
                Some(context.npu_device),
                Some(group),
            ),
            _ => (None, None, None),
        };
        let storage = Arc::new(Storage {
            id: BUFFER_IDS.fetch_add(1, Ordering::Relaxed),
            context: context.clone(),
            len: len_bytes,
            placement,
            allocation,
            pointer,
            bo,
            npu_device,
            group,
            host: Default::default(),
            device_uses: {
                let core: std::sync::Weak<crate::execution::shared::Core> =
                    Arc::downgrade(self.inner.core());
                core as std::sync::Weak<dyn crate::buffer::DeviceUses>
            },
            poisoned: AtomicBool::new(false),
            visibility: Mutex::new(crate::buffer::Visibility::new()),
            visibility_seen: AtomicU8::new(0b111),
            mapped: AtomicUsize::new(0),
            captures: Default::default(),
            forks: crate::sync::forks(),
        });
        if let Some(hook) = context.tracer.hook() {
            hook.record(s::Record::BufferCreated(s::BufferCreated {
                runtime: hook.runtime,
                buffer: s::BufferId(storage.id),
                len_bytes: storage.len as u64,
                placement: match storage.placement {
                    Placement::GpuLocal => s::Placement::GpuLocal,
                    Placement::HostVisible => s::Placement::HostVisible,
                    Placement::NpuShared { group } => s::Placement::NpuShared { group },
                },
                device_address: storage.allocation.address(),
                time_ns: hook.now_ns(),
            }));
        }
        Ok(Buffer { storage })
    }

    /// Loads a GPU kernel (see [`crate::kernels`] for the built-in library).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the spec has no code for this backend.
    pub fn kernel(&self, spec: &KernelSpec) -> Result<GpuKernel> {
        GpuKernel::load(&self.inner, spec)
    }

    /// Loads an NPU kernel on this runtime's NPU device.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the spec has no code for the NPU in use;
    /// [`Error::Message`] when its groups do not match its bindings.
    pub fn npu_kernel(&self, spec: &NpuKernelSpec) -> Result<crate::NpuKernel> {
        crate::execution::npu_kernel::load(&self.inner, spec)
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        let c = &self.context().counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (submissions, regions_run_by_waiters, worker_wakes) = {
            let state = self.inner.core().scheduler();
            (
                state.submissions(),
                state.regions_run_by_waiters,
                state.worker_wakes,
            )
        };
        Counters {
            submissions,
            native_graphs_prepared: load(&c.native_graphs_prepared),
            copy_streams_created: load(&c.copy_streams_created),
            copied_bytes: load(&c.copied_bytes),
            lane_copy_bytes: [
                load(&c.lane_copy_bytes[0]),
                load(&c.lane_copy_bytes[1]),
                load(&c.lane_copy_bytes[2]),
            ],
            visibility_syncs: load(&c.visibility_syncs),
            regions_run_by_waiters,
            worker_wakes,
        }
    }

    /// Submissions in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.core().scheduler().occupied()
    }

    /// Whether the injected fault (if any) has fired.
    pub fn fault_fired(&self) -> bool {
        self.context().faults.fired()
    }
}

#[cfg(test)]
mod tests {
    use super::RuntimeOptions;

    #[test]
    fn the_software_device_has_no_gpu_clocks_to_read() {
        let runtime = super::Runtime::new(RuntimeOptions::sim()).unwrap();
        let error = runtime.gpu_clock_reader().expect_err("not applicable");
        assert_eq!(
            error,
            crate::gpu::GpuClocksError::NotApplicable { backend: "sim" }
        );
        assert_eq!(
            error.to_string(),
            "GPU clocks are read through NVML on CUDA only, not on sim"
        );
    }

    #[test]
    fn hrx_trace_kernels_zero_leaves_regions_only_and_one_turns_kernel_times_on() {
        let default = RuntimeOptions::default();
        assert!(default.builtin_kernel_times && !default.kernel_times);
        let unset = RuntimeOptions::default().kernels_switch(None);
        assert!(unset.builtin_kernel_times && !unset.kernel_times);
        let off = RuntimeOptions::default().kernels_switch(Some(false));
        assert!(!off.builtin_kernel_times && !off.kernel_times);
        let on = RuntimeOptions::default().kernels_switch(Some(true));
        assert!(on.kernel_times);
        // Options win over the variable, either way.
        let asked = RuntimeOptions::default()
            .kernel_times(true)
            .kernels_switch(Some(false));
        assert!(asked.kernel_times && asked.builtin_kernel_times);
        let regions_only = RuntimeOptions::default()
            .builtin_kernel_times(false)
            .kernels_switch(Some(true));
        assert!(!regions_only.kernel_times && !regions_only.builtin_kernel_times);
    }
}
