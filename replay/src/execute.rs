//! Stage 2: re-execute one captured runtime in a fresh replay runtime.
//!
//! build -> walk the timeline -> retire -> read the replay's own trace:
//!
//! 1. A new [`Runtime`] records into a runtime-local [`Recorder`] over a [`MemorySink`],
//!    so the replay's region timings, output digests and failures come back as trace
//!    records of the same schema as the capture's, without touching the process's trace.
//! 2. Buffers are created in capture order, kernels loaded (built-in code by entry name,
//!    else the captured code), every prepared graph rebuilt operation by operation with
//!    the captured byte ranges, and prepared. Captured ids map to the new objects through
//!    the plan's indices; the replay's own ids map back through the returned tables.
//! 3. The timeline is walked: host writes with [`Buffer::write`], submits in submission
//!    order with [`ExecutableGraph::submit_after`] for captured producers. Whenever the
//!    runtime answers `Busy` (capacity, slots, a host write conflicting with work in
//!    flight), the oldest outstanding submission is waited for and the call retried.
//! 4. Scoped callbacks and host operations are replaced by callbacks that write the
//!    captured contents of their written bindings (or fail as the capture's did); see
//!    [`crate::substitute`] for what is substituted.

use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{Event, KernelPlan, OpPlan, RuntimePlan, Sample};
use crate::report::Outcome;
use crate::substitute::Substitute;
use hrx::kernels::{KernelSpec, NpuKernelSpec, builtin_code};
use hrx::{
    Access, BindingContract, Buffer, BufferView, Completion, Error, ExecutableGraph, GpuAccess,
    GpuKernel, GpuLane, HostViews, KernelContract, NpuKernel, Placement, Runtime, RuntimeOptions,
    TraceDigests,
};
use hrx_capture::schema::{self as s, BufferId, OpKind, Record, SubmissionIndex};
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Sink, Trace, TraceReader};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Counts work done for the progress callback.
pub(crate) struct Ticker<'o> {
    pub done: u64,
    pub total: u64,
    pub callback: Option<&'o (dyn Fn(u64, u64) + Send + Sync)>,
}

impl Ticker<'_> {
    pub fn tick(&mut self) {
        self.done += 1;
        if let Some(callback) = self.callback {
            callback(self.done.min(self.total), self.total);
        }
    }

    /// Reports completion (work planned but skipped, such as failed per-op runs).
    pub fn finish(&mut self) {
        if self.done < self.total {
            self.done = self.total;
            if let Some(callback) = self.callback {
                callback(self.total, self.total);
            }
        }
    }
}

/// An output digest the replay recorded, mapped back to captured ids.
#[derive(Clone, Debug)]
pub(crate) struct ReplayOutput {
    pub region: Option<u32>,
    pub buffer: BufferId,
    pub start: u64,
    pub end: u64,
    pub xxh3: u64,
    pub contents: Option<Vec<u8>>,
}

/// What one replay of one runtime did, keyed by captured ids.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub backend: String,
    pub device: String,
    pub statuses: HashMap<SubmissionIndex, (Outcome, String)>,
    pub refused: HashMap<SubmissionIndex, String>,
    /// Host writes that failed: (host write index, error).
    pub host_write_errors: Vec<(usize, String)>,
    pub outputs: HashMap<SubmissionIndex, Vec<ReplayOutput>>,
    pub failed_region: HashMap<SubmissionIndex, u32>,
    /// When the failed region failed (the replay's clock).
    pub failed_at: HashMap<SubmissionIndex, u64>,
    /// Buffers the replay poisoned, mapped to captured ids.
    pub poisons: Vec<crate::concurrent::PoisonEvent>,
    pub quarantined: HashSet<SubmissionIndex>,
    pub region_times: HashMap<(usize, u32), Vec<Sample>>,
    pub notes: Vec<String>,
}

/// What a substituted callback does in its next run.
enum Entry {
    Write(Vec<(usize, Arc<[u8]>)>),
    Fail { device_lost: bool, message: String },
    Noop,
}

type EntryQueue = Arc<Mutex<VecDeque<Entry>>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

enum Loaded {
    Gpu(GpuKernel),
    Npu(NpuKernel),
}

/// The replay runtime's objects, parallel to the plan's vectors.
struct Objects {
    buffers: Vec<Buffer>,
    kernels: Vec<Loaded>,
    graphs: Vec<ExecutableGraph>,
    /// Callback queues of substituted operations by (graph, node).
    queues: HashMap<(usize, usize), EntryQueue>,
}

fn access(access: s::Access) -> Access {
    match access {
        s::Access::Read => Access::Read,
        s::Access::Write => Access::Write,
        s::Access::ReadWrite => Access::ReadWrite,
    }
}

fn lane(lane: s::Lane) -> GpuLane {
    match lane {
        s::Lane::Upload => GpuLane::Upload,
        s::Lane::Compute => GpuLane::Compute,
        s::Lane::Download => GpuLane::Download,
    }
}

/// Refuses a trace whose buffers cannot fit: GPU-local ones in the device's memory (where the
/// backend knows it), all of them in host memory on the software device and host-visible
/// ones anywhere. A trace is untrusted; a few bytes can declare terabytes of buffers, and
/// allocating them would swap or exhaust the machine before failing.
fn check_memory(runtime: &Runtime, plan: &RuntimePlan<'_>) -> Result<(), ReplayError> {
    let total = |filter: &dyn Fn(s::Placement) -> bool| -> u64 {
        plan.buffers
            .iter()
            .filter(|b| filter(b.placement))
            .map(|b| b.len as u64)
            .fold(0, u64::saturating_add)
    };
    let info = runtime.device_info();
    let device_local = total(&|p| matches!(p, s::Placement::GpuLocal));
    let on_host = match info.backend {
        "sim" => total(&|_| true),
        _ => total(&|p| !matches!(p, s::Placement::GpuLocal)),
    };
    let refuse = |what: &str, bytes: u64, limit: u64| ReplayError::Unreplayable {
        why: format!(
            "runtime {} declares {bytes} bytes of {what} buffers, more than the {limit} bytes of {what} memory here",
            plan.id.0
        ),
    };
    if info.backend != "sim" && info.memory_bytes > 0 && device_local > info.memory_bytes {
        return Err(refuse("device", device_local, info.memory_bytes));
    }
    if let Some(host) = host_memory_bytes()
        && on_host > host
    {
        return Err(refuse("host", on_host, host));
    }
    Ok(())
}

/// Physical memory of this machine, where the OS says.
fn host_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

fn placement(placement: s::Placement) -> Placement {
    match placement {
        s::Placement::GpuLocal => Placement::GpuLocal,
        s::Placement::HostVisible => Placement::HostVisible,
        s::Placement::NpuShared { group } => Placement::NpuShared { group },
    }
}

pub(crate) fn outcome(status: &hrx::Status) -> (Outcome, String) {
    match status {
        hrx::Status::Succeeded => (Outcome::Ok, String::new()),
        hrx::Status::Failed(error) => (Outcome::Failed, error.to_string()),
        hrx::Status::Cancelled(cause) => (Outcome::Cancelled, cause.to_string()),
    }
}

/// A fresh runtime recording into a memory sink.
fn open_runtime(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    fault: Option<hrx::FaultSpec>,
    contents: bool,
    sink: impl Sink,
) -> Result<(Runtime, Recorder), ReplayError> {
    let recorder = Recorder::with_sink(
        sink,
        RecorderOptions {
            // The replay must not lose its own measurements: a full ring waits for the
            // writer rather than dropping.
            full_buffer_wait: Duration::from_secs(2),
            ..RecorderOptions::default()
        },
    )
    .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
    let mut runtime_options = RuntimeOptions::default()
        .backend(options.backend)
        .graph_slots(plan.graph_slots as usize)
        .capacity(plan.capacity as usize)
        .trace_contents(contents)
        // Digest everything: the comparison looks up whatever the capture digested.
        .trace_digests(TraceDigests::All)
        // The replayed run is what the trace and the options say, not the environment.
        .environment(false)
        .recorder(recorder.clone());
    if let Some(fault) = fault {
        runtime_options = runtime_options.fault(fault);
    }
    let runtime = Runtime::new(runtime_options).map_err(|source| ReplayError::Runtime {
        runtime: plan.id.0,
        context: "opening the replay backend".into(),
        source,
    })?;
    // A slowdown judged against another backend's times would be noise (or hide one):
    // refused before anything runs (`auto` may pick a backend the capture did not use).
    let replaying = runtime.device_info().backend;
    if options.max_slowdown.is_some()
        && !crate::compare::timings_comparable(&plan.backend, replaying)
    {
        return Err(ReplayError::TimingsNotComparable {
            runtime: plan.id.0,
            recorded: plan.backend.clone(),
            replaying: replaying.to_owned(),
        });
    }
    Ok((runtime, recorder))
}

fn load_kernel(
    runtime: &Runtime,
    plan: &RuntimePlan<'_>,
    k: &KernelPlan<'_>,
    options: &ReplayOptions,
) -> Result<Loaded, ReplayError> {
    let contract = KernelContract {
        bindings: k
            .contract
            .iter()
            .map(|c| {
                BindingContract::new(
                    access(c.access),
                    c.extent_bytes as usize,
                    c.alignment as usize,
                )
            })
            .collect(),
        constants: k.constants.clone(),
    };
    let backend = runtime.device_info().backend.to_string();
    let missing = |error: Error| match error {
        Error::Unsupported(reason) => ReplayError::KernelMissing {
            runtime: plan.id.0,
            kernel: k.id.0,
            entry: k.entry.clone(),
            backend: backend.clone(),
            reason,
        },
        source => ReplayError::Runtime {
            runtime: plan.id.0,
            context: format!("loading kernel {} ({})", k.id, k.entry),
            source,
        },
    };
    let override_host = options.override_for(&k.entry);
    match k.engine {
        s::Engine::Gpu => {
            let mut code = builtin_code(&k.entry).unwrap_or_default();
            if code.host.is_none() && code.ptx.is_none() {
                // Not a built-in: the captured module (PTX text on CUDA).
                code.ptx = k
                    .code
                    .and_then(|bytes| std::str::from_utf8(bytes).ok())
                    .map(Arc::from);
            }
            if override_host.is_some() {
                code.host = override_host;
            }
            let spec = KernelSpec {
                entry: k.entry.clone(),
                contract,
                grid: k.grid,
                block: k.block,
                code,
            };
            runtime.kernel(&spec).map(Loaded::Gpu).map_err(missing)
        }
        s::Engine::Npu => {
            let spec = NpuKernelSpec {
                name: k.entry.clone(),
                contract,
                groups: k.npu_groups.clone(),
                instructions: k.code.map(<[u8]>::to_vec).unwrap_or_default(),
                host: override_host.or_else(|| builtin_code(&k.entry).and_then(|c| c.host)),
            };
            runtime.npu_kernel(&spec).map(Loaded::Npu).map_err(missing)
        }
        s::Engine::Host => Err(ReplayError::unreplayable(format!(
            "runtime {}: kernel {} ({}) runs on the host, which no backend loads",
            plan.id, k.id, k.entry
        ))),
    }
}

/// Runs the next queued entry of a replaced callback: nothing, the captured failure, or
/// the captured bytes handed to `write` (binding index, bytes).
fn apply_next(
    queue: &EntryQueue,
    mut write: impl FnMut(usize, &[u8]) -> hrx::Result<()>,
) -> hrx::Result<()> {
    let entry = lock(queue).pop_front();
    match entry {
        None | Some(Entry::Noop) => Ok(()),
        Some(Entry::Fail {
            device_lost,
            message,
        }) => Err(failure(device_lost, message)),
        Some(Entry::Write(writes)) => writes
            .into_iter()
            .try_for_each(|(binding, bytes)| write(binding, &bytes)),
    }
}

fn length_mismatch(what: &str, binding: usize, captured: usize, len: usize) -> Error {
    Error::Message(format!(
        "replayed {what} binding {binding}: {captured} captured bytes for {len} bytes"
    ))
}

/// The callback replacing a scoped native callback: it writes captured bytes through the
/// bindings' host mappings, fails as the captured one failed, or does nothing.
fn scoped_callback(
    queue: EntryQueue,
) -> impl FnMut(&[hrx::gpu::View<'_>]) -> hrx::Result<()> + Send + 'static {
    move |views| {
        apply_next(&queue, |binding, bytes| {
            let view = views.get(binding).ok_or_else(|| {
                Error::Message(format!("replayed callback has no binding {binding}"))
            })?;
            let pointer = view.host_pointer().ok_or_else(|| {
                Error::Unsupported(format!(
                    "replayed callback binding {binding} has no host mapping"
                ))
            })?;
            if bytes.len() != view.len() {
                return Err(length_mismatch(
                    "callback",
                    binding,
                    bytes.len(),
                    view.len(),
                ));
            }
            // SAFETY: the binding was declared written; the runtime orders every
            // conflicting use around this callback; `pointer` maps `view.len()` bytes of
            // host-visible memory, exactly the length copied.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), pointer, bytes.len()) };
            Ok(())
        })
    }
}

/// The callback replacing a host operation (see [`scoped_callback`]).
fn host_callback(
    queue: EntryQueue,
) -> impl FnMut(&mut HostViews<'_>) -> hrx::Result<()> + Send + 'static {
    move |views| {
        apply_next(&queue, |binding, bytes| {
            let target = views.write(binding)?;
            if target.len() != bytes.len() {
                return Err(length_mismatch(
                    "host callback",
                    binding,
                    bytes.len(),
                    target.len(),
                ));
            }
            target.copy_from_slice(bytes);
            Ok(())
        })
    }
}

fn failure(device_lost: bool, message: String) -> Error {
    let message = format!("replayed failure of the captured callback: {message}");
    if device_lost {
        Error::DeviceLost(message)
    } else {
        Error::Kernel(message)
    }
}

/// Whether a kernel operation binds a written range that overlaps another binding (the
/// capture used `gpu_aliasing`).
fn aliases(op: &OpPlan) -> bool {
    op.uses.iter().enumerate().any(|(i, a)| {
        op.uses.iter().skip(i + 1).any(|b| {
            (a.access != s::Access::Read || b.access != s::Access::Read)
                && a.buffer == b.buffer
                && a.start < b.end
                && b.start < a.end
        })
    })
}

/// Adds captured operation `op` to `graph`.
fn add_op(
    graph: &mut hrx::Graph,
    plan: &RuntimePlan<'_>,
    objects: &Objects,
    op: &OpPlan,
    queue: Option<EntryQueue>,
) -> hrx::Result<()> {
    let views = op
        .uses
        .iter()
        .map(|u| {
            objects.buffers[plan.buffer_index[&u.buffer]].view(u.start as usize..u.end as usize)
        })
        .collect::<hrx::Result<Vec<BufferView>>>()?;
    let bindings = || {
        views
            .iter()
            .zip(&op.uses)
            .map(|(view, u)| GpuAccess::new(view.clone(), access(u.access)))
            .collect::<Vec<_>>()
    };
    let queue = queue.unwrap_or_default();
    match &op.op {
        OpKind::Fill { value } => graph.fill(views[0].clone(), *value)?,
        OpKind::Copy => graph.copy_on(views[0].clone(), views[1].clone(), lane(op.lane))?,
        OpKind::Kernel { kernel } => {
            let Loaded::Gpu(kernel) = &objects.kernels[plan.kernel_index[kernel]] else {
                return Err(Error::Message(format!(
                    "kernel {kernel} is not a GPU kernel"
                )));
            };
            if aliases(op) {
                // SAFETY: the captured application made this same call with these ranges
                // (the plan checked them against the kernel's contract), so it vouched for
                // the kernel being valid for the aliased bindings.
                unsafe { graph.gpu_aliasing(kernel, &views)? }
            } else {
                graph.gpu(kernel, &views)?
            }
        }
        OpKind::Npu { kernel } => {
            let Loaded::Npu(kernel) = &objects.kernels[plan.kernel_index[kernel]] else {
                return Err(Error::Message(format!(
                    "kernel {kernel} is not an NPU kernel"
                )));
            };
            graph.npu(kernel, &views)?
        }
        // SAFETY: the callback retains no native resource, writes only bindings declared
        // written (through their host mappings, within their length), lets nothing escape,
        // and reports a captured device loss as `DeviceLost`.
        OpKind::Scoped => unsafe { graph.gpu_scoped(&bindings(), scoped_callback(queue))? },
        OpKind::Host => graph.host(&bindings(), host_callback(queue))?,
    };
    Ok(())
}

/// Whether the replay lowered a graph as the capture did.
fn same_lowering(captured: &[s::Region], replayed: &[hrx::RegionInfo]) -> bool {
    captured.len() == replayed.len()
        && captured.iter().zip(replayed).all(|(c, r)| {
            let kind = match r.kind {
                hrx::RegionKind::NativeGraph => s::RegionKind::NativeGraph,
                hrx::RegionKind::CopyBatch => s::RegionKind::CopyBatch,
                hrx::RegionKind::Scoped => s::RegionKind::Scoped,
                hrx::RegionKind::NpuRun => s::RegionKind::NpuRun,
                hrx::RegionKind::HostCallback => s::RegionKind::Host,
            };
            c.kind == kind && c.nodes.iter().map(|n| n.0 as usize).eq(r.nodes.clone())
        })
}

/// Creates buffers, loads kernels, rebuilds and prepares every graph.
fn build(
    runtime: &Runtime,
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    notes: &mut Vec<String>,
) -> Result<Objects, ReplayError> {
    check_memory(runtime, plan)?;
    let mut objects = Objects {
        buffers: Vec::with_capacity(plan.buffers.len()),
        kernels: Vec::with_capacity(plan.kernels.len()),
        graphs: Vec::with_capacity(plan.graphs.len()),
        queues: HashMap::new(),
    };
    build_more(runtime, plan, options, notes, &mut objects)?;
    Ok(objects)
}

/// Creates the buffers, kernels and graphs of `plan` that `objects` lacks: those after its
/// own (a later chunk of a streamed trace names every object of the earlier ones first, in
/// the same order).
fn build_more(
    runtime: &Runtime,
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    notes: &mut Vec<String>,
    objects: &mut Objects,
) -> Result<(), ReplayError> {
    let runtime_error = |context: String| {
        move |source| ReplayError::Runtime {
            runtime: plan.id.0,
            context,
            source,
        }
    };
    for b in plan.buffers.iter().skip(objects.buffers.len()) {
        let buffer = runtime
            .buffer(b.len, placement(b.placement))
            .map_err(runtime_error(format!(
                "allocating buffer {} ({} bytes, {:?})",
                b.id, b.len, b.placement
            )))?;
        objects.buffers.push(buffer);
    }
    for k in plan.kernels.iter().skip(objects.kernels.len()) {
        let loaded = load_kernel(runtime, plan, k, options)?;
        objects.kernels.push(loaded);
    }
    for sub in &plan.substitutions {
        objects.queues.entry((sub.graph, sub.node)).or_default();
    }
    for (index, g) in plan.graphs.iter().enumerate().skip(objects.graphs.len()) {
        let mut graph = runtime.graph();
        for (node, op) in g.ops.iter().enumerate() {
            let queue = objects.queues.get(&(index, node)).cloned();
            add_op(&mut graph, plan, objects, op, queue).map_err(runtime_error(format!(
                "rebuilding graph {} operation {node} ({})",
                g.prepared,
                plan.op_name(op)
            )))?;
        }
        let executable = graph
            .prepare()
            .map_err(runtime_error(format!("preparing graph {}", g.prepared)))?;
        if !same_lowering(&g.regions, &executable.describe()) {
            notes.push(format!(
                "runtime {}: graph {} lowers into different regions at replay ({} captured, {} replayed): region attribution may be off",
                plan.id,
                g.prepared,
                g.regions.len(),
                executable.regions()
            ));
        }
        objects.graphs.push(executable);
    }
    Ok(())
}

/// Submissions waited on in submission order, and completions kept for later producers.
struct Flight {
    outstanding: VecDeque<(SubmissionIndex, Completion)>,
    /// Completions later submissions name as producers, until their last consumer.
    held: HashMap<SubmissionIndex, Completion>,
    statuses: HashMap<SubmissionIndex, (Outcome, String)>,
}

impl Flight {
    /// Waits for the oldest outstanding submission; false when none is outstanding.
    fn retire_oldest(&mut self, ticker: &mut Ticker<'_>) -> bool {
        let Some((index, completion)) = self.outstanding.pop_front() else {
            return false;
        };
        let _ = completion.wait();
        let status = completion
            .status()
            .map(|s| outcome(&s))
            .unwrap_or((Outcome::Failed, "no status after wait".into()));
        self.statuses.insert(index, status);
        ticker.tick();
        true
    }
}

/// A sink whose bytes are taken away chunk by chunk (the replay's own trace is read back
/// as it is written, so it never exists whole in memory).
#[derive(Clone, Default)]
struct DrainSink(Arc<Mutex<Vec<u8>>>);

impl Sink for DrainSink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(())
    }
}

/// What one chunk's replay left to read back: the flight's statuses, refusals and host
/// write errors, the replay's submission numbers (replay index to captured index) and the
/// records the replay wrote about them.
pub(crate) struct ChunkRun {
    observed: Observed,
    replay_index: HashMap<u64, SubmissionIndex>,
    records: Vec<Record>,
    buffer_of: Arc<HashMap<u64, BufferId>>,
}

impl ChunkRun {
    /// Moves the records of `later` that are about this chunk's submissions (digests hashed
    /// after the chunk was drained) here.
    pub fn take_late(&mut self, later: &mut ChunkRun) {
        let (mine, theirs): (Vec<Record>, Vec<Record>) = std::mem::take(&mut later.records)
            .into_iter()
            .partition(|r| {
                crate::chunk::submission_of(r).is_some_and(|s| self.replay_index.contains_key(&s.0))
            });
        // Blobs stay with both: either side's digests may name them.
        let blobs = theirs
            .iter()
            .filter(|r| matches!(r, Record::Blob(_)))
            .cloned();
        self.records.extend(mine.into_iter().chain(blobs));
        later.records = theirs;
    }

    /// Adds records the replay wrote after this chunk (its last ones, at the runtime's end).
    pub fn extend(&mut self, records: Vec<Record>) {
        self.records.extend(records);
    }

    /// Maps the replay's records onto captured ids: what the replay observed.
    pub fn observe(mut self, plan: &RuntimePlan<'_>) -> Observed {
        read_back(
            plan,
            &self.records,
            &self.replay_index,
            &self.buffer_of,
            &mut self.observed,
        );
        self.observed
    }
}

/// A replay runtime and its objects, kept across the chunks of a streamed trace.
pub(crate) struct Session {
    // Dropped in this order: the objects, then the runtime (its workers joined).
    objects: Option<Objects>,
    runtime: Option<Runtime>,
    recorder: Recorder,
    sink: DrainSink,
    /// The replay trace's file header, put before every drained piece to decode it.
    header: Vec<u8>,
    buffer_of: Arc<HashMap<u64, BufferId>>,
    backend: String,
    device: String,
    notes: Vec<String>,
}

impl Session {
    /// A fresh runtime with `plan`'s buffers, kernels and graphs.
    pub fn open(
        plan: &RuntimePlan<'_>,
        options: &ReplayOptions,
        fault: Option<hrx::FaultSpec>,
        contents: bool,
    ) -> Result<Session, ReplayError> {
        let sink = DrainSink::default();
        let (runtime, recorder) = open_runtime(plan, options, fault, contents, sink.clone())?;
        let info = runtime.device_info();
        let mut notes = Vec::new();
        let objects = build(&runtime, plan, options, &mut notes)?;
        let buffer_of: HashMap<u64, BufferId> = objects
            .buffers
            .iter()
            .zip(&plan.buffers)
            .map(|(b, p)| (b.id(), p.id))
            .collect();
        Ok(Session {
            objects: Some(objects),
            runtime: Some(runtime),
            recorder,
            sink,
            header: Vec::new(),
            buffer_of: Arc::new(buffer_of),
            backend: info.backend.to_string(),
            device: info.name.clone(),
            notes,
        })
    }

    /// Decodes what the recorder wrote since the last call.
    fn drain(&mut self) -> Result<Vec<Record>, ReplayError> {
        let measurement = |why: String| ReplayError::Measurement { why };
        let bytes = std::mem::take(&mut *lock(&self.sink.0));
        let mut input = Vec::with_capacity(self.header.len() + bytes.len());
        if self.header.is_empty() {
            self.header = bytes
                .get(..hrx_capture::format::FILE_HEADER_LEN)
                .ok_or_else(|| measurement("the replay's trace has no header".into()))?
                .to_vec();
            input.extend_from_slice(&bytes);
        } else {
            input.extend_from_slice(&self.header);
            input.extend_from_slice(&bytes);
        }
        let reader = TraceReader::new(input.as_slice()).map_err(|e| measurement(e.to_string()))?;
        reader
            .map(|item| item.map(|(_, record)| record))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| measurement(e.to_string()))
    }

    /// Replays `plan`'s timeline (one chunk: every submission of it retired before this
    /// returns) and takes what the replay recorded so far.
    pub fn run_chunk(
        &mut self,
        plan: &RuntimePlan<'_>,
        options: &ReplayOptions,
        ticker: &mut Ticker<'_>,
    ) -> Result<ChunkRun, ReplayError> {
        let (Some(runtime), Some(objects)) = (&self.runtime, &mut self.objects) else {
            unreachable!("the runtime and objects live until finish");
        };
        build_more(runtime, plan, options, &mut self.notes, objects)?;
        let grown = objects.buffers.len() != self.buffer_of.len();
        if grown {
            self.buffer_of = Arc::new(
                objects
                    .buffers
                    .iter()
                    .zip(&plan.buffers)
                    .map(|(b, p)| (b.id(), p.id))
                    .collect(),
            );
        }
        let objects = &*objects;
        let mut observed = Observed {
            backend: self.backend.clone(),
            device: self.device.clone(),
            notes: std::mem::take(&mut self.notes),
            ..Observed::default()
        };
        let replay_index = walk(plan, objects, &mut observed, ticker)?;
        self.recorder
            .flush()
            .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
        let records = self.drain()?;
        Ok(ChunkRun {
            observed,
            replay_index,
            records,
            buffer_of: self.buffer_of.clone(),
        })
    }

    /// Ends the replay runtime (its workers joined, its pending digests written) and takes
    /// the records written since the last chunk.
    pub fn finish(mut self) -> Result<Vec<Record>, ReplayError> {
        drop(self.objects.take());
        drop(self.runtime.take());
        let summary = self
            .recorder
            .close()
            .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
        if summary.dropped_records > 0 {
            return Err(ReplayError::Measurement {
                why: format!(
                    "the replay's recorder dropped {} records (the machine is overloaded?)",
                    summary.dropped_records
                ),
            });
        }
        self.drain()
    }
}

/// Replays `plan` once and reads back what the replay recorded.
pub(crate) fn run(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    fault: Option<hrx::FaultSpec>,
    contents: bool,
    ticker: &mut Ticker<'_>,
) -> Result<Observed, ReplayError> {
    let mut session = Session::open(plan, options, fault, contents)?;
    let mut run = session.run_chunk(plan, options, ticker)?;
    run.records.extend(session.finish()?);
    Ok(run.observe(plan))
}

/// Walks `plan`'s timeline on `objects` and retires every submission; returns the replay's
/// submission numbers mapped to captured ones.
fn walk(
    plan: &RuntimePlan<'_>,
    objects: &Objects,
    observed: &mut Observed,
    ticker: &mut Ticker<'_>,
) -> Result<HashMap<u64, SubmissionIndex>, ReplayError> {
    // Last submission (position) naming each submission as a producer.
    let mut last_consumer: HashMap<SubmissionIndex, usize> = HashMap::new();
    for (position, submission) in plan.submissions.iter().enumerate() {
        for producer in &submission.producers {
            last_consumer.insert(*producer, position);
        }
    }
    // Substitution entries per submission.
    let mut entries: HashMap<SubmissionIndex, Vec<(&EntryQueue, &Substitute<'_>)>> = HashMap::new();
    for sub in &plan.substitutions {
        if !sub.writes {
            continue;
        }
        let queue = &objects.queues[&(sub.graph, sub.node)];
        for (index, entry) in &sub.per_submission {
            entries.entry(*index).or_default().push((queue, entry));
        }
    }

    let mut flight = Flight {
        outstanding: VecDeque::new(),
        held: HashMap::new(),
        statuses: HashMap::new(),
    };
    let mut replay_index: HashMap<u64, SubmissionIndex> = HashMap::new();
    for event in &plan.timeline {
        match *event {
            Event::HostWrite(i) => {
                let w = &plan.host_writes[i];
                let buffer = &objects.buffers[plan.buffer_index[&w.buffer]];
                loop {
                    match buffer.write(w.offset, w.bytes) {
                        Ok(()) => break,
                        Err(Error::Busy(why)) => {
                            if !flight.retire_oldest(ticker) {
                                return Err(ReplayError::unreplayable(format!(
                                    "runtime {}: the host write into buffer {} stays busy with nothing in flight: {why}",
                                    plan.id, w.buffer
                                )));
                            }
                        }
                        Err(error) => {
                            observed.host_write_errors.push((i, error.to_string()));
                            break;
                        }
                    }
                }
            }
            Event::Submit(position) => {
                let submission = &plan.submissions[position];
                let pushed = entries
                    .get(&submission.index)
                    .map_or(&[][..], Vec::as_slice);
                for (queue, entry) in pushed {
                    lock(queue).push_back(match entry {
                        Substitute::Write(writes) => Entry::Write(
                            writes
                                .iter()
                                .map(|(binding, bytes)| (*binding, Arc::from(*bytes)))
                                .collect(),
                        ),
                        Substitute::Fail {
                            device_lost,
                            message,
                        } => Entry::Fail {
                            device_lost: *device_lost,
                            message: message.clone(),
                        },
                        Substitute::Unavailable => Entry::Noop,
                    });
                }
                let producers: Vec<Completion> = submission
                    .producers
                    .iter()
                    .filter_map(|p| flight.held.get(p).cloned())
                    .collect();
                let graph = &objects.graphs[submission.graph];
                let completion = loop {
                    match graph.submit_after(&producers) {
                        Ok(completion) => break Some(completion),
                        Err(Error::Busy(why)) => {
                            if !flight.retire_oldest(ticker) {
                                return Err(ReplayError::unreplayable(format!(
                                    "runtime {}: submission {} stays busy with nothing in flight: {why}",
                                    plan.id, submission.index
                                )));
                            }
                        }
                        Err(error) => {
                            observed.refused.insert(submission.index, error.to_string());
                            for (queue, _) in pushed {
                                lock(queue).pop_back();
                            }
                            ticker.tick();
                            break None;
                        }
                    }
                };
                drop(producers);
                if let Some(completion) = completion {
                    replay_index.insert(completion.submission(), submission.index);
                    if last_consumer.contains_key(&submission.index) {
                        flight.held.insert(submission.index, completion.clone());
                    }
                    flight.outstanding.push_back((submission.index, completion));
                }
                flight.held.retain(|index, _| {
                    last_consumer
                        .get(index)
                        .is_some_and(|&last| last > position)
                });
            }
        }
    }
    while flight.retire_oldest(ticker) {}
    observed.statuses = std::mem::take(&mut flight.statuses);
    Ok(replay_index)
}

/// Closes the replay's recorder and reads its trace.
fn close(recorder: &Recorder, sink: &MemorySink) -> Result<Trace, ReplayError> {
    let summary = recorder
        .close()
        .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
    if summary.dropped_records > 0 {
        return Err(ReplayError::Measurement {
            why: format!(
                "the replay's recorder dropped {} records (the machine is overloaded?)",
                summary.dropped_records
            ),
        });
    }
    Trace::from_bytes(&sink.contents()).map_err(|e| ReplayError::Measurement { why: e.to_string() })
}

/// Maps the replay's own records back onto captured ids.
fn read_back(
    plan: &RuntimePlan<'_>,
    records: &[Record],
    replay_index: &HashMap<u64, SubmissionIndex>,
    buffer_of: &HashMap<u64, BufferId>,
    observed: &mut Observed,
) {
    let captured = |submission: s::SubmissionIndex| replay_index.get(&submission.0).copied();
    let blobs: HashMap<s::BlobHash, &[u8]> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => Some((b.hash, b.bytes.as_slice())),
            _ => None,
        })
        .collect();
    for record in records {
        match record {
            Record::OutputDigest(o) => {
                let (Some(index), Some(&buffer)) =
                    (captured(o.submission), buffer_of.get(&o.buffer.0))
                else {
                    continue;
                };
                // The replay digests every range: ignore those the capture did not digest.
                if !plan.digests_all
                    && plan.buffers[plan.buffer_index[&buffer]].placement == s::Placement::GpuLocal
                {
                    continue;
                }
                let contents = match &o.contents {
                    s::Payload::Inline(bytes) => Some(bytes.clone()),
                    s::Payload::Blob { hash, .. } => blobs.get(hash).map(|bytes| bytes.to_vec()),
                    s::Payload::Omitted { .. } => None,
                };
                observed
                    .outputs
                    .entry(index)
                    .or_default()
                    .push(ReplayOutput {
                        region: None,
                        buffer,
                        start: o.start,
                        end: o.end,
                        xxh3: o.xxh3,
                        contents,
                    });
            }
            Record::RegionTiming(t) => {
                if let Some(index) = captured(t.submission) {
                    let graph = plan.submissions[plan.submission_index[&index]].graph;
                    observed
                        .region_times
                        .entry((graph, t.region.0))
                        .or_default()
                        .push(Sample::of(t));
                }
            }
            Record::RegionDone(d) => {
                if let (Some(index), s::Status::Failed { .. }) = (captured(d.submission), &d.status)
                {
                    let region = observed.failed_region.entry(index).or_insert(d.region.0);
                    if *region >= d.region.0 {
                        *region = d.region.0;
                        observed.failed_at.insert(index, d.time_ns);
                    }
                }
            }
            Record::Quarantine(q) => {
                if let Some(index) = q.submission.and_then(captured) {
                    observed.quarantined.insert(index);
                }
            }
            Record::Poison(p) => {
                if let Some(event) = crate::concurrent::PoisonEvent::of(p)
                    && let (Some(submission), Some(&buffer)) =
                        (captured(event.submission), buffer_of.get(&event.buffer.0))
                {
                    observed.poisons.push(crate::concurrent::PoisonEvent {
                        buffer,
                        submission,
                        ..event
                    });
                }
            }
            _ => {}
        }
    }
    for (index, outputs) in &mut observed.outputs {
        let regions = &plan.graphs[plan.submissions[plan.submission_index[index]].graph].regions;
        let keys: Vec<_> = outputs.iter().map(|o| (o.buffer, o.start, o.end)).collect();
        for (output, region) in outputs
            .iter_mut()
            .zip(crate::plan::attribute(regions, &keys))
        {
            output.region = region;
        }
    }
}

/// Per-operation timing: each operation of each prepared graph launched on its own (one
/// graph per operation) in a fresh runtime without fault injection, `runs` times, after the
/// captured host writes. Scoped and host operations are not timed.
pub(crate) fn time_ops(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    runs: usize,
    ticker: &mut Ticker<'_>,
    notes: &mut Vec<String>,
) -> Result<HashMap<(usize, u32), Vec<Sample>>, ReplayError> {
    let sink = MemorySink::new();
    let (runtime, recorder) = open_runtime(plan, options, None, false, sink.clone())?;
    let mut build_notes = Vec::new();
    let objects = build(&runtime, plan, options, &mut build_notes)?;
    for w in &plan.host_writes {
        let _ = objects.buffers[plan.buffer_index[&w.buffer]].write(w.offset, w.bytes);
    }
    let mut op_of: HashMap<u64, (usize, u32)> = HashMap::new();
    for (graph_index, g) in plan.graphs.iter().enumerate() {
        for (node, op) in g.ops.iter().enumerate() {
            if matches!(op.op, OpKind::Scoped | OpKind::Host) {
                continue;
            }
            let mut graph = runtime.graph();
            let prepared =
                add_op(&mut graph, plan, &objects, op, None).and_then(|()| graph.prepare());
            let executable = match prepared {
                Ok(executable) => executable,
                Err(error) => {
                    notes.push(format!(
                        "runtime {}: graph {} operation {node} ({}) cannot run on its own: {error}",
                        plan.id,
                        g.prepared,
                        plan.op_name(op)
                    ));
                    continue;
                }
            };
            for _ in 0..runs {
                let result = executable.submit().and_then(|completion| {
                    op_of.insert(completion.submission(), (graph_index, node as u32));
                    completion.wait()
                });
                ticker.tick();
                if let Err(error) = result {
                    notes.push(format!(
                        "runtime {}: graph {} operation {node} ({}) failed on its own: {error}",
                        plan.id,
                        g.prepared,
                        plan.op_name(op)
                    ));
                    break;
                }
            }
        }
    }
    drop(objects);
    drop(runtime);
    let trace = close(&recorder, &sink)?;
    let mut times: HashMap<(usize, u32), Vec<Sample>> = HashMap::new();
    for record in &trace.records {
        if let Record::RegionTiming(t) = record
            && let Some(key) = op_of.get(&t.submission.0)
        {
            times.entry(*key).or_default().push(Sample::of(t));
        }
    }
    Ok(times)
}
