//! Instrumentation hooks: the runtime's side of the trace (`hrx-capture`).
//!
//! A runtime opens the process's trace when `RuntimeOptions::trace` (or `HRX_TRACE`) names
//! a file, or joins the trace another runtime of the process opened; every record carries
//! the runtime id. The recorder handle lives in the runtime's [`Core`]: with tracing off a
//! hook is one branch on `None` and allocates nothing. The trace is closed (footer written)
//! by [`close_trace`], which an `atexit` handler also runs when the process exits normally;
//! a process killed outright keeps everything flushed up to 100 ms before its death.
//!
//! What is recorded where: build operations as they are added, the regions with their
//! hazards at `prepare`, every submit and refused submit, cross-submission waits at submit,
//! each region's host (and, where the backend has it, device) time and outcome, output
//! digests (xxh3) of the ranges a region wrote — by default those the host can observe
//! (host-visible and NPU-shared buffers), with `TraceDigests::All` every one — taken before
//! any later writer may run,
//! quarantine, poison, unhealthy copy streams, injected faults, host writes with their
//! bytes, counters at runtime drop.

use crate::buffer::Storage;
use crate::execution::completion::Status;
use crate::execution::dependencies::{Hazard, HazardKind, Use};
use crate::execution::region::Region;
use crate::execution::shared::{Core, RuntimeOwner};
use crate::execution::submit::Prepared;
use crate::execution::types::{GpuLane, Queue, RegionKind};
use crate::{Access, Completion, Engine, Error, Placement, Runtime};
use hrx_capture::schema as s;
use hrx_capture::{Recorder, RecorderOptions};
use std::sync::{Arc, Once, OnceLock};

/// What a graph operation is, for the trace.
pub(crate) enum OpKind {
    Fill(u8),
    Copy,
    Kernel(u64),
    Scoped,
    Npu(u64),
    Host,
}

/// `process_ns` (from [`crate::clock::now_ns`]: region start and end times, the host times
/// backends map device timestamps onto) on `recorder`'s session clock (each recorder has its
/// own base), so that every record of a trace is on one clock.
fn session_ns(recorder: &Recorder, process_ns: u64) -> u64 {
    crate::clock::to_session_ns(process_ns, recorder.base())
}

/// Flushes and closes the process's trace, writing its footer. Runtimes that record
/// afterwards record nothing until a new trace is opened. Runs automatically at normal
/// process exit.
///
/// # Errors
/// [`Error::Message`] when the trace file could not be written.
pub fn close_trace() -> crate::Result<()> {
    hrx_capture::shutdown()
        .map(|_| ())
        .map_err(|e| Error::Message(format!("closing the trace: {e}")))
}

extern "C" fn close_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Err(error) = close_trace() {
            eprintln!("hrx: {error}");
        }
    });
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// The recorder for a new runtime: the trace named by the options, or the one already
/// open in this process, or none.
pub(crate) fn open(
    options: &crate::RuntimeOptions,
    info: &crate::gpu::DeviceInfo,
) -> crate::Result<Option<Recorder>> {
    if let Some(recorder) = &options.recorder {
        return Ok(Some(recorder.clone()));
    }
    let recorder = match &options.trace {
        Some(path) => {
            let recorder_options = RecorderOptions {
                backend: info.backend.to_string(),
                device: info.name.clone(),
                mode: options.trace_mode.unwrap_or_default(),
                ..RecorderOptions::default()
            };
            Some(
                hrx_capture::install_or_current(path, recorder_options).map_err(|e| {
                    Error::Message(format!("cannot open trace {}: {e}", path.display()))
                })?,
            )
        }
        None => hrx_capture::current(),
    };
    if recorder.is_some() {
        static AT_EXIT: Once = Once::new();
        // SAFETY: `close_at_exit` is a plain function that catches every panic.
        AT_EXIT.call_once(|| unsafe {
            atexit(close_at_exit);
        });
    }
    Ok(recorder)
}

fn access(access: Access) -> s::Access {
    match access {
        Access::Read => s::Access::Read,
        Access::Write => s::Access::Write,
        Access::ReadWrite => s::Access::ReadWrite,
    }
}

fn lane(lane: GpuLane) -> s::Lane {
    match lane {
        GpuLane::Upload => s::Lane::Upload,
        GpuLane::Compute => s::Lane::Compute,
        GpuLane::Download => s::Lane::Download,
    }
}

fn engine(engine: Engine) -> s::Engine {
    match engine {
        Engine::Gpu => s::Engine::Gpu,
        Engine::Npu => s::Engine::Npu,
        Engine::Host => s::Engine::Host,
    }
}

fn queue(queue: Queue) -> s::Queue {
    match queue {
        Queue::GpuUpload => s::Queue::GpuUpload,
        Queue::GpuCompute => s::Queue::GpuCompute,
        Queue::GpuDownload => s::Queue::GpuDownload,
        Queue::Npu => s::Queue::Npu,
        Queue::Host => s::Queue::Host,
    }
}

fn hazard_kind(kind: HazardKind) -> s::HazardKind {
    match kind {
        HazardKind::ReadAfterWrite => s::HazardKind::ReadAfterWrite,
        HazardKind::WriteAfterRead => s::HazardKind::WriteAfterRead,
        HazardKind::WriteAfterWrite => s::HazardKind::WriteAfterWrite,
    }
}

fn use_record(use_: &Use) -> s::Use {
    let range = use_.view.range();
    s::Use {
        buffer: s::BufferId(use_.buffer_id()),
        start: range.start as u64,
        end: range.end as u64,
        access: access(use_.access),
    }
}

fn edge(producer: usize, consumer: usize, hazard: &Hazard) -> s::Edge {
    s::Edge {
        producer: producer as u32,
        consumer: consumer as u32,
        kind: hazard_kind(hazard.kind),
        buffer: s::BufferId(hazard.buffer),
        start: hazard.range.start as u64,
        end: hazard.range.end as u64,
    }
}

fn status(status: &Status) -> s::Status {
    match status {
        Status::Succeeded => s::Status::Ok,
        Status::Failed(error) => s::Status::Failed {
            error: error.to_string(),
        },
        Status::Cancelled(reason) => s::Status::Cancelled {
            reason: reason.to_string(),
        },
    }
}

fn runtime_id(core: &Core) -> s::RuntimeId {
    s::RuntimeId(core.id)
}

pub(crate) fn runtime_created(runtime: &Runtime) {
    let core = &runtime.inner.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    let info = runtime.inner.device.info();
    let options = runtime.options();
    recorder.record(&s::Record::RuntimeStart(s::RuntimeStart {
        runtime: runtime_id(core),
        backend: info.backend.to_string(),
        device: format!("{} (ordinal {})", info.name, info.ordinal),
        graph_slots: options.graph_slots as u32,
        capacity: options.capacity as u32,
        fault: options.fault.as_ref().map(ToString::to_string),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn runtime_dropped(owner: &RuntimeOwner) {
    let core = &owner.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    let counters = &core.counters;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let time_ns = recorder.now_ns();
    recorder.record(&s::Record::Counters(s::Counters {
        runtime: runtime_id(core),
        time_ns,
        submissions: crate::sync::lock(&core.state).submissions(),
        native_graphs_prepared: load(&counters.native_graphs_prepared),
        copy_streams_created: load(&counters.copy_streams_created),
        copied_bytes: load(&counters.copied_bytes),
        lane_copy_bytes: [0, 1, 2].map(|i| load(&counters.lane_copy_bytes[i])),
    }));
    recorder.record(&s::Record::RuntimeEnd(s::RuntimeEnd {
        runtime: runtime_id(core),
        time_ns,
    }));
    let _ = recorder.flush();
}

pub(crate) fn buffer_created(storage: &Storage) {
    let core = &storage.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::BufferCreated(s::BufferCreated {
        runtime: runtime_id(core),
        buffer: s::BufferId(storage.id),
        len_bytes: storage.len as u64,
        placement: match storage.placement {
            Placement::GpuLocal => s::Placement::GpuLocal,
            Placement::HostVisible => s::Placement::HostVisible,
            Placement::NpuShared { group } => s::Placement::NpuShared { group },
        },
        device_address: storage.allocation.address(),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn buffer_dropped(owner: &RuntimeOwner, buffer: u64) {
    let core = &owner.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::BufferDropped(s::BufferDropped {
        runtime: runtime_id(core),
        buffer: s::BufferId(buffer),
        time_ns: recorder.now_ns(),
    }));
}

/// A host write of `data` at `offset`. For a buffer with a host mapping the bytes are in
/// the buffer: hashing and storing them is deferred to the trace writer's thread behind a
/// capture fence (writers of the buffer wait for it). For a GPU-local buffer `data` is the
/// caller's and is captured now.
pub(crate) fn host_write(storage: &Arc<Storage>, offset: usize, data: &[u8]) {
    let core = &storage.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    let (runtime, buffer, time_ns) = (runtime_id(core), s::BufferId(storage.id), recorder.now_ns());
    let host_write = move |out: &mut dyn FnMut(&[u8]) -> s::Payload, bytes: &[u8]| {
        let contents = out(bytes);
        let xxh3 = match contents {
            // A blob is named by the xxh3 of its bytes: no second pass over them.
            s::Payload::Blob { hash, .. } => hash.0,
            _ => xxhash_rust::xxh3::xxh3_64(bytes),
        };
        s::Record::HostWrite(s::HostWrite {
            runtime,
            buffer,
            offset: offset as u64,
            len_bytes: bytes.len() as u64,
            xxh3,
            contents,
            time_ns,
        })
    };
    if storage.pointer.is_null() {
        let record = host_write(&mut |bytes| recorder.payload(bytes), data);
        recorder.record(&record);
        return;
    }
    let captured = Captured::new(storage, offset..offset + data.len());
    recorder.record_deferred(move |out| {
        let record = host_write(&mut |bytes| out.payload(bytes), captured.bytes());
        out.record(&record);
    });
}

/// Bytes of a host-mapped buffer that a deferred capture reads on the trace writer's thread,
/// with the fence that keeps writers (and the buffer's release) waiting until it drops.
struct Captured {
    pointer: usize,
    len: usize,
    _fence: crate::buffer::CaptureFence,
}

impl Captured {
    fn new(storage: &Storage, range: std::ops::Range<usize>) -> Self {
        debug_assert!(!storage.pointer.is_null() && range.end <= storage.len);
        Self {
            _fence: storage.captures.fence(),
            pointer: storage.pointer as usize + range.start,
            len: range.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the range is in bounds of the buffer's host mapping (checked by the caller
        // that wrote or produced it), and while the fence lives nothing writes these bytes
        // (`Region::run` and host write mappings wait for it) and the allocation is not freed
        // (`Storage`'s drop waits for it).
        unsafe { std::slice::from_raw_parts(self.pointer as *const u8, self.len) }
    }
}

/// A loaded GPU or NPU kernel.
pub(crate) struct KernelRecord<'a> {
    pub id: u64,
    pub entry: &'a str,
    pub code: Option<&'a [u8]>,
    pub contract: &'a crate::KernelContract,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub engine: Engine,
    pub npu_groups: &'a [u32],
}

pub(crate) fn kernel_loaded(core: &Core, kernel: KernelRecord<'_>) {
    let Some(recorder) = &core.recorder else {
        return;
    };
    let code = kernel.code.and_then(|code| recorder.intern_blob(code));
    recorder.record(&s::Record::KernelLoaded(s::KernelLoaded {
        runtime: runtime_id(core),
        kernel: s::KernelId(kernel.id),
        entry: kernel.entry.to_string(),
        code,
        contract: kernel
            .contract
            .bindings
            .iter()
            .map(|b| s::BindingContract {
                access: access(b.access),
                extent_bytes: b.extent_bytes as u64,
                alignment: b.alignment as u64,
            })
            .collect(),
        constants: kernel.contract.constants.clone(),
        grid: kernel.grid,
        block: kernel.block,
        engine: engine(kernel.engine),
        npu_groups: kernel.npu_groups.to_vec(),
    }));
}

pub(crate) fn graph_op(
    owner: &RuntimeOwner,
    graph: u64,
    node: usize,
    kind: &OpKind,
    op_lane: GpuLane,
    uses: &[Use],
) {
    let core = &owner.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::GraphOp(s::GraphOp {
        runtime: runtime_id(core),
        graph: s::GraphId(graph),
        node: s::NodeIndex(node as u32),
        op: match kind {
            OpKind::Fill(value) => s::OpKind::Fill { value: *value },
            OpKind::Copy => s::OpKind::Copy,
            OpKind::Kernel(kernel) => s::OpKind::Kernel {
                kernel: s::KernelId(*kernel),
            },
            OpKind::Scoped => s::OpKind::Scoped,
            OpKind::Npu(kernel) => s::OpKind::Npu {
                kernel: s::KernelId(*kernel),
            },
            OpKind::Host => s::OpKind::Host,
        },
        lane: lane(op_lane),
        uses: uses.iter().map(use_record).collect(),
    }));
}

fn region_record(index: usize, region: &Region) -> s::Region {
    s::Region {
        queue: queue(region.queue()),
        engine: engine(region.engine()),
        kind: match region.kind {
            RegionKind::NativeGraph => s::RegionKind::NativeGraph,
            RegionKind::CopyBatch => s::RegionKind::CopyBatch,
            RegionKind::Scoped => s::RegionKind::Scoped,
            RegionKind::NpuRun => s::RegionKind::NpuRun,
            RegionKind::HostCallback => s::RegionKind::Host,
        },
        nodes: region
            .nodes
            .clone()
            .map(|n| s::NodeIndex(n as u32))
            .collect(),
        internal_edges: region
            .internal
            .iter()
            .map(|(consumer, h)| edge(h.producer, *consumer, h))
            .collect(),
        dependencies: region
            .hazards
            .iter()
            .map(|h| edge(h.producer, index, h))
            .collect(),
        uses: region.uses.iter().map(use_record).collect(),
        copy_bytes: region.copy_bytes as u64,
    }
}

pub(crate) fn prepared(prepared: &Prepared) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::Prepared(s::Prepared {
        runtime: runtime_id(core),
        graph: s::GraphId(prepared.id),
        prepared: s::PreparedId(prepared.id),
        slots: prepared.signals.len() as u32,
        parallel: prepared.parallel,
        regions: prepared
            .regions
            .iter()
            .enumerate()
            .map(|(i, r)| region_record(i, r))
            .collect(),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn submitted(
    prepared: &Prepared,
    submission: u64,
    slot: usize,
    producers: &[Completion],
) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::Submit(s::Submit {
        runtime: runtime_id(core),
        prepared: s::PreparedId(prepared.id),
        submission: s::SubmissionIndex(submission),
        slot: slot as u32,
        producers: producers
            .iter()
            .map(|p| s::SubmissionIndex(p.submission()))
            .collect(),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn submit_refused(prepared: &Prepared, error: &Error) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::SubmitRefused(s::SubmitRefused {
        runtime: runtime_id(core),
        prepared: s::PreparedId(prepared.id),
        kind: match error {
            Error::Busy(_) => s::RefusalKind::Busy,
            error if error.is_device_loss() => s::RefusalKind::DeviceLost,
            _ => s::RefusalKind::Other,
        },
        reason: error.to_string(),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn cross_wait(
    prepared: &Prepared,
    submission: u64,
    region: usize,
    on_submission: u64,
    on_region: usize,
    hazards: &[Hazard],
) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    for hazard in hazards {
        recorder.record(&s::Record::CrossWait(s::CrossWait {
            runtime: runtime_id(core),
            submission: s::SubmissionIndex(submission),
            region: s::RegionIndex(region as u32),
            on_submission: s::SubmissionIndex(on_submission),
            on_region: s::RegionIndex(on_region as u32),
            kind: hazard_kind(hazard.kind),
            buffer: s::BufferId(hazard.buffer),
            start: hazard.range.start as u64,
            end: hazard.range.end as u64,
        }));
    }
}

/// Before a region runs: waits for the captures (hashing, storing contents) still reading
/// buffers it writes, recording each wait as a [`s::CaptureFence`] span, outside the
/// region's timing. `Region::run` waits too, but then finds nothing to wait for.
pub(crate) fn capture_fences(core: &Core, prepared: &Prepared, submission: u64, index: usize) {
    let Some(recorder) = &core.recorder else {
        return;
    };
    let region = &prepared.regions[index];
    for use_ in region.uses.iter().filter(|u| u.access.writes()) {
        let storage = &use_.view.buffer().storage;
        if !storage.captures.busy() {
            continue;
        }
        let start_ns = crate::clock::now_ns();
        storage.captures.wait();
        let end_ns = crate::clock::now_ns();
        recorder.record(&s::Record::CaptureFence(s::CaptureFence {
            runtime: runtime_id(core),
            submission: s::SubmissionIndex(submission),
            region: s::RegionIndex(index as u32),
            buffer: s::BufferId(storage.id),
            start_ns: session_ns(recorder, start_ns),
            end_ns: session_ns(recorder, end_ns),
        }));
    }
}

/// A region is about to run: [`s::RegionStarted`], so that a region still running when the
/// process hangs or crashes is in the trace (the fatal-signal flush writes it out).
pub(crate) fn region_started(core: &Core, submission: u64, index: usize) {
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::RegionStarted(s::RegionStarted {
        runtime: runtime_id(core),
        submission: s::SubmissionIndex(submission),
        region: s::RegionIndex(index as u32),
        time_ns: session_ns(recorder, crate::clock::now_ns()),
    }));
}

/// Outputs up to this size in host-mapped buffers are hashed on the worker right after the
/// region's end time was read, with no capture fence: xxh3 hashes 4 KiB in about 0.2 µs,
/// less than handing it to another thread costs, and nothing later waits on it. Before, a
/// 256 B download waited for the previous submission's digest (taken on a hashing thread)
/// at a fence, 13-78 µs, inside its own recorded time.
const INLINE_DIGEST_BYTES: usize = 4 << 10;

/// After a region ran: its timing, the injected fault it hit, and digests of what it wrote.
pub(crate) fn region_ran(
    core: &Core,
    prepared: &Prepared,
    submission: u64,
    index: usize,
    (start_ns, end_ns): (u64, u64),
    result: &crate::Result<Option<crate::gpu::DeviceSpan>>,
    fault: Option<String>,
) {
    let Some(recorder) = &core.recorder else {
        return;
    };
    let on_session = |span: crate::gpu::DeviceSpan| crate::gpu::DeviceSpan {
        start_ns: session_ns(recorder, span.start_ns),
        end_ns: session_ns(recorder, span.end_ns),
    };
    let device = result.as_ref().ok().copied().flatten().map(on_session);
    let (start_ns, end_ns) = (session_ns(recorder, start_ns), session_ns(recorder, end_ns));
    let runtime = runtime_id(core);
    let (submission_id, region_id) = (s::SubmissionIndex(submission), s::RegionIndex(index as u32));
    if let Some(span) = device {
        static CALIBRATED: Once = Once::new();
        // Backends map device spans onto the host clock themselves; state the identity.
        CALIBRATED.call_once(|| {
            recorder.record(&s::Record::ClockCalibration(s::ClockCalibration {
                runtime,
                host_ns: span.end_ns,
                device_ns: span.end_ns,
                device_offset_ns: 0,
                uncertainty_ns: 0,
            }));
        });
    }
    recorder.record(&s::Record::RegionTiming(s::RegionTiming {
        runtime,
        submission: submission_id,
        region: region_id,
        start_ns,
        end_ns,
        device: device.map(|d| s::DeviceSpan {
            start_ns: d.start_ns,
            end_ns: d.end_ns,
        }),
    }));
    if let Some(description) = fault {
        recorder.record(&s::Record::FaultInjected(s::FaultInjected {
            runtime,
            submission: Some(submission_id),
            region: Some(region_id),
            description,
            time_ns: end_ns,
        }));
    }
    if result.is_err() {
        return;
    }
    let region = &prepared.regions[index];
    let all = core.trace_digests == crate::runtime::TraceDigests::All;
    let contents = core.trace_contents;
    for use_ in region.uses.iter().filter(|u| u.access.writes()) {
        let storage = &use_.view.buffer().storage;
        if !all && storage.pointer.is_null() {
            continue;
        }
        let range = use_.view.range();
        let (buffer, start, end) = (
            s::BufferId(storage.id),
            range.start as u64,
            range.end as u64,
        );
        let digest = move |xxh3: u64, contents: s::Payload| {
            s::Record::OutputDigest(s::OutputDigest {
                runtime,
                submission: submission_id,
                buffer,
                start,
                end,
                xxh3,
                contents,
            })
        };
        if !storage.pointer.is_null() && range.len() <= INLINE_DIGEST_BYTES {
            // Small: hashed (and copied) now, after the end time, with no fence.
            let captured = Captured::new(storage, range);
            let bytes = captured.bytes();
            let payload = if contents {
                recorder.payload(bytes)
            } else {
                s::Payload::Omitted {
                    len_bytes: bytes.len() as u64,
                }
            };
            recorder.record(&digest(xxhash_rust::xxh3::xxh3_64(bytes), payload));
            continue;
        }
        // The bytes stay put behind a capture fence in a host-mapped buffer; a GPU-local range
        // is read back now.
        let source = if storage.pointer.is_null() {
            let mut staged = vec![0; range.len()];
            let Ok(view) = use_.view.gpu() else { continue };
            if storage.runtime.device.read(&view, &mut staged).is_err() {
                continue;
            }
            Source::Staged(staged)
        } else {
            Source::Captured(Captured::new(storage, range))
        };
        // Hashing runs off this thread: on the hashing threads when only the digest is
        // traced (the fence drops once it is taken), else with the contents on the writer's.
        match hashing_threads().filter(|_| !contents) {
            Some(threads) => {
                let (hashed, hash) = crossbeam_channel::bounded(1);
                let len_bytes = source.bytes().len() as u64;
                let job = Box::new(move || {
                    let _ = hashed.send(xxhash_rust::xxh3::xxh3_64(source.bytes()));
                });
                if threads.send(job).is_err() {
                    continue;
                }
                recorder.record_deferred(move |out| {
                    if let Ok(xxh3) = hash.recv() {
                        out.record(&digest(xxh3, s::Payload::Omitted { len_bytes }));
                    }
                });
            }
            None => recorder.record_deferred(move |out| {
                let bytes = source.bytes();
                let payload = if contents {
                    out.payload(bytes)
                } else {
                    s::Payload::Omitted {
                        len_bytes: bytes.len() as u64,
                    }
                };
                out.record(&digest(xxhash_rust::xxh3::xxh3_64(bytes), payload));
            }),
        }
    }
}

/// The bytes an output digest hashes.
enum Source {
    /// In the buffer's host mapping, behind a capture fence.
    Captured(Captured),
    /// Read back from GPU-local memory.
    Staged(Vec<u8>),
}

impl Source {
    fn bytes(&self) -> &[u8] {
        match self {
            Source::Captured(captured) => captured.bytes(),
            Source::Staged(staged) => staged,
        }
    }
}

type HashJob = Box<dyn FnOnce() + Send>;

/// The process's output-digest hashing threads (`hrx-trace-hash-N`, a quarter of the cores,
/// 1 to 4), started on first use; `None` if none could be started.
///
/// Why not the trace writer: on the H200 host the writer alone hashed a 1280x720 pipeline
/// frame's host write (2.7 MB) and two output digests (0.9 MB each) in about 0.7 ms of every
/// 0.78 ms frame, so digests queued behind host writes and the next writer of an output
/// buffer stalled at its capture fence (45-70 µs per frame, the traced pipeline 5% slower);
/// hashed here in parallel, a digest's fence drops as soon as its hash is taken. So a later
/// record about the same buffer from another thread (a host write, the buffer's release) may
/// precede its `OutputDigest` in the file; the schema lets records of different threads
/// interleave and names the digest's submission, buffer and range by id.
fn hashing_threads() -> Option<&'static crossbeam_channel::Sender<HashJob>> {
    static THREADS: OnceLock<Option<crossbeam_channel::Sender<HashJob>>> = OnceLock::new();
    THREADS
        .get_or_init(|| {
            let (jobs, queue) = crossbeam_channel::unbounded::<HashJob>();
            let count = std::thread::available_parallelism()
                .map_or(1, |n| n.get() / 4)
                .clamp(1, 4);
            let started = (0..count)
                .filter(|i| {
                    let queue = queue.clone();
                    std::thread::Builder::new()
                        .name(format!("hrx-trace-hash-{i}"))
                        .spawn(move || run_hash_jobs(&queue))
                        .is_ok()
                })
                .count();
            (started > 0).then_some(jobs)
        })
        .as_ref()
}

/// A hashing thread: like a runtime worker, it spins a while for the next job before it
/// blocks, so that a busy program hands it jobs without a syscall.
fn run_hash_jobs(queue: &crossbeam_channel::Receiver<HashJob>) {
    loop {
        let next = std::cell::Cell::new(None);
        crate::execution::completion::spin_until(|| match queue.try_recv() {
            Ok(job) => {
                next.set(Some(job));
                true
            }
            Err(_) => false,
        });
        let job = match next.into_inner() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        job();
    }
}

pub(crate) fn region_done(prepared: &Prepared, submission: u64, region: usize, outcome: &Status) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::RegionDone(s::RegionDone {
        runtime: runtime_id(core),
        submission: s::SubmissionIndex(submission),
        region: s::RegionIndex(region as u32),
        status: status(outcome),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn submission_done(prepared: &Prepared, submission: u64, outcome: &Status) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::SubmissionDone(s::SubmissionDone {
        runtime: runtime_id(core),
        submission: s::SubmissionIndex(submission),
        status: status(outcome),
        time_ns: recorder.now_ns(),
    }));
}

pub(crate) fn quarantine(prepared: &Prepared, submission: u64, region: usize, error: &Error) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::Quarantine(s::Quarantine {
        runtime: runtime_id(core),
        prepared: s::PreparedId(prepared.id),
        submission: Some(s::SubmissionIndex(submission)),
        region: Some(s::RegionIndex(region as u32)),
        cause: error.to_string(),
        time_ns: recorder.now_ns(),
    }));
}

/// `use_`'s buffer was poisoned by the failure of `region` of `submission`.
pub(crate) fn poison(
    prepared: &Prepared,
    (submission, region): (u64, usize),
    use_: &Use,
    cause: &str,
) {
    let core = &prepared.runtime.core;
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::Poison(s::Poison {
        runtime: runtime_id(core),
        buffer: s::BufferId(use_.buffer_id()),
        cause: cause.to_string(),
        time_ns: recorder.now_ns(),
        submission: Some(s::SubmissionIndex(submission)),
        region: Some(s::RegionIndex(region as u32)),
    }));
}

pub(crate) fn copy_stream_unhealthy(core: &Core, copy_lane: GpuLane, error: &Error) {
    let Some(recorder) = &core.recorder else {
        return;
    };
    recorder.record(&s::Record::CopyStreamUnhealthy(s::CopyStreamUnhealthy {
        runtime: runtime_id(core),
        lane: lane(copy_lane),
        cause: error.to_string(),
        time_ns: recorder.now_ns(),
    }));
}
