//! What the execution stages record in the trace: the `hrx_capture` schema values built from
//! the stages' own types, handed to the runtime's [`Tracer`] (which imports nothing of them).
//!
//! What is recorded where: build operations as they are added, the regions with their
//! hazards at `prepare`, every submit and refused submit, cross-submission waits at submit,
//! each region's host (and, where the backend has it, device) time and outcome, output
//! digests (xxh3) of the ranges a region wrote (by default those the host can observe:
//! host-visible and NPU-shared buffers; with `TraceDigests::All` every one) taken before
//! any later writer may run, quarantine, poison, unhealthy copy streams, injected faults.
//! Every hook starts with [`Tracer::hook`]: with tracing off, one branch and nothing built.
//! A submission's own records go through [`Tracer::submission_hook`] (and the submit through
//! [`Tracer::submit_hook`]), so that a capture range keeps only its submissions.
//!
//! This file imports only the stages' vocabulary ([`super::types`], [`super::dependencies`]),
//! so that every stage can record through it; a region describes itself
//! (`Region::record`) with the conversions here.

use super::dependencies::{Hazard, HazardKind, Use};
use super::types::{GpuLane, Queue, Status};
use crate::trace::{Captured, Hook, INLINE_DIGEST_BYTES, Output, Tracer};
use crate::{Access, Engine, Error, KernelContract};
use hrx_capture::RawRecord;
use hrx_capture::schema as s;

pub(crate) fn access(access: Access) -> s::Access {
    match access {
        Access::Read => s::Access::Read,
        Access::Write => s::Access::Write,
        Access::ReadWrite => s::Access::ReadWrite,
    }
}

pub(crate) fn lane(lane: GpuLane) -> s::Lane {
    match lane {
        GpuLane::Upload => s::Lane::Upload,
        GpuLane::Compute => s::Lane::Compute,
        GpuLane::Download => s::Lane::Download,
    }
}

pub(crate) fn engine(engine: Engine) -> s::Engine {
    match engine {
        Engine::Gpu => s::Engine::Gpu,
        Engine::Npu => s::Engine::Npu,
        Engine::Host => s::Engine::Host,
    }
}

pub(crate) fn queue(queue: Queue) -> s::Queue {
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

pub(crate) fn use_record(use_: &Use) -> s::Use {
    let range = use_.view.range();
    s::Use {
        buffer: s::BufferId(use_.buffer_id()),
        start: range.start as u64,
        end: range.end as u64,
        access: access(use_.access),
    }
}

pub(crate) fn edge(producer: usize, consumer: usize, hazard: &Hazard) -> s::Edge {
    s::Edge {
        producer: producer as u32,
        consumer: consumer as u32,
        kind: hazard_kind(hazard.kind),
        buffer: s::BufferId(hazard.buffer),
        start: hazard.range.start as u64,
        end: hazard.range.end as u64,
    }
}

pub(crate) fn status(status: &Status) -> s::Status {
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

/// What a graph operation is, for the trace.
pub(crate) enum OpKind {
    Fill(u8),
    Copy,
    Kernel(u64),
    Scoped,
    Npu(u64),
    Host,
}

/// A loaded GPU or NPU kernel.
pub(crate) struct KernelRecord<'a> {
    pub id: u64,
    pub entry: &'a str,
    pub code: Option<&'a [u8]>,
    pub contract: &'a KernelContract,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub engine: Engine,
    pub npu_groups: &'a [u32],
}

pub(crate) fn kernel_loaded(tracer: &Tracer, kernel: KernelRecord<'_>) {
    let Some(hook) = tracer.hook() else { return };
    let code = kernel.code.and_then(|code| hook.intern_blob(code));
    hook.record(s::Record::KernelLoaded(s::KernelLoaded {
        runtime: hook.runtime,
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
    tracer: &Tracer,
    graph: u64,
    node: usize,
    kind: &OpKind,
    op_lane: GpuLane,
    uses: &[Use],
) {
    let Some(hook) = tracer.hook() else { return };
    hook.record(s::Record::GraphOp(s::GraphOp {
        runtime: hook.runtime,
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

/// Graph `graph` prepared into `regions` (built only when traced), with `slots` slots.
pub(crate) fn prepared(
    tracer: &Tracer,
    graph: u64,
    slots: usize,
    parallel: bool,
    regions: impl Iterator<Item = s::Region>,
) {
    let Some(hook) = tracer.hook() else {
        return;
    };
    hook.record(s::Record::Prepared(s::Prepared {
        runtime: hook.runtime,
        graph: s::GraphId(graph),
        prepared: s::PreparedId(graph),
        slots: u32::try_from(slots).unwrap_or(u32::MAX),
        parallel,
        regions: regions.collect(),
        time_ns: hook.now_ns(),
    }));
}

/// `submission` of prepared graph `prepared` accepted into `slot`, after `producers`
/// (their submission indices).
/// A submit; an untraced runtime pays one inlined branch (this and the two `*_done` hooks
/// below are on every round trip).
#[inline]
pub(crate) fn submitted(
    tracer: &Tracer,
    prepared: u64,
    submission: u64,
    slot: usize,
    producers: impl Iterator<Item = u64>,
) {
    if tracer.on() {
        submitted_traced(tracer, prepared, submission, slot, producers);
    }
}

#[inline(never)]
fn submitted_traced(
    tracer: &Tracer,
    prepared: u64,
    submission: u64,
    slot: usize,
    producers: impl Iterator<Item = u64>,
) {
    let Some(hook) = tracer.submit_hook(submission) else {
        return;
    };
    hook.record_raw(RawRecord::Submit(&s::Submit {
        runtime: hook.runtime,
        prepared: s::PreparedId(prepared),
        submission: s::SubmissionIndex(submission),
        slot: slot as u32,
        producers: producers.map(s::SubmissionIndex).collect(),
        time_ns: hook.now_ns(),
    }));
}

/// A span of the calling thread's time for `submission` that began at `start_ns`
/// ([`crate::clock::now_ns`]) and ends now: its `submit` call or its blocking wait
/// ([`s::HostSpan`]).
#[inline(never)]
pub(crate) fn host_span(tracer: &Tracer, kind: s::HostSpanKind, submission: u64, start_ns: u64) {
    let Some(hook) = tracer.submission_hook(submission) else {
        return;
    };
    hook.host_span(kind, submission, None, (start_ns, crate::clock::now_ns()));
}

pub(crate) fn submit_refused(tracer: &Tracer, prepared: u64, error: &Error) {
    let Some(hook) = tracer.open_hook() else {
        return;
    };
    hook.record(s::Record::SubmitRefused(s::SubmitRefused {
        runtime: hook.runtime,
        prepared: s::PreparedId(prepared),
        kind: match error {
            Error::Busy(_) => s::RefusalKind::Busy,
            error if error.is_device_loss() => s::RefusalKind::DeviceLost,
            _ => s::RefusalKind::Other,
        },
        reason: error.to_string(),
        time_ns: hook.now_ns(),
    }));
}

pub(crate) fn cross_wait(
    tracer: &Tracer,
    submission: u64,
    region: usize,
    on_submission: u64,
    on_region: usize,
    hazards: &[Hazard],
) {
    let Some(hook) = tracer.submission_hook(submission) else {
        return;
    };
    for hazard in hazards {
        hook.record(s::Record::CrossWait(s::CrossWait {
            runtime: hook.runtime,
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

/// Before a region runs, `hook` being its submission's ([`Tracer::submission_hook`], read
/// once a region): waits for the captures (hashing, storing contents) still reading buffers
/// it writes, recording each wait as a span of its own, outside the region's timing
/// (`Region::run` waits too, but then finds nothing to wait for); then records its
/// [`s::RegionStarted`], so that a region still running when the process hangs or crashes is
/// in the trace (the fatal-signal flush writes it out). `entered_ns` ([`crate::clock::now_ns`]
/// as the hooks began) is its time unless a capture fence waited.
pub(crate) fn region_starting(
    hook: &Hook<'_>,
    (submission, index, uses): (u64, usize, &[Use]),
    entered_ns: u64,
) {
    let mut waited = false;
    for use_ in uses.iter().filter(|u| u.access.writes()) {
        let storage = &use_.view.buffer().storage;
        waited |= hook.capture_fence(submission, index, storage.id, &storage.captures);
    }
    let time_ns = if waited {
        crate::clock::now_ns()
    } else {
        entered_ns
    };
    hook.record_raw(RawRecord::RegionStarted(&s::RegionStarted {
        runtime: hook.runtime,
        submission: s::SubmissionIndex(submission),
        region: s::RegionIndex(index as u32),
        time_ns: hook.session_ns(time_ns),
    }));
}

/// The times of the operations a region's backend timed
/// ([`crate::gpu::NativeStream::op_spans`]), as [`s::OpTiming`] records naming each
/// operation's graph node, into the region's end batch (`region_ran`); a failed region's
/// too, which readers leave out of durations as they leave out its region time. Nothing for
/// an untimed backend.
fn ops_ran(
    hook: &Hook<'_>,
    batch: &mut hrx_capture::RawBatch<'_>,
    (submission, index, region): (u64, usize, &super::region::Region),
    ops: &[crate::gpu::OpSpan],
) {
    for op in ops {
        let Some(node) = region.operation(op.index) else {
            continue;
        };
        let (start_ns, end_ns) = (
            hook.session_ns(op.span.start_ns),
            hook.session_ns(op.span.end_ns),
        );
        batch.record_raw(RawRecord::OpTiming(&s::OpTiming {
            timing: s::RegionTiming {
                runtime: hook.runtime,
                submission: s::SubmissionIndex(submission),
                region: s::RegionIndex(index as u32),
                start_ns,
                end_ns,
                device: op.device.then_some(s::DeviceSpan { start_ns, end_ns }),
            },
            node: s::NodeIndex(node as u32),
        }));
    }
}

/// After a region ran, `hook` being its submission's: its timing, the injected fault it hit,
/// digests of what it wrote and, when it succeeded, its [`s::RegionDone`] at its end time,
/// then the times of its operations (`ops`), handed to the thread's trace buffer at once (a
/// [`hrx_capture::RawBatch`]: one push a region, not one for the region and one for its
/// operations). Here, before the scheduler lock is taken, not under it (a failure's outcome,
/// which may poison and cancel, is recorded there): the other workers and the submitter wait
/// for that lock. And at the end time already read, not a fresh clock reading: three fewer a
/// submission of three regions.
pub(crate) fn region_ran(
    hook: &Hook<'_>,
    (submission, index, region): (u64, usize, &super::region::Region),
    host_callback: bool,
    times_ns: (u64, u64),
    (result, ops): (
        &crate::Result<Option<crate::gpu::DeviceSpan>>,
        &[crate::gpu::OpSpan],
    ),
    fault: Option<String>,
) {
    let uses = &region.uses[..];
    let mut batch = hook.raw_batch();
    let device = result.as_ref().ok().copied().flatten();
    if host_callback {
        // The same span on the thread that ran it, so the thread's row shows its callbacks.
        hook.host_span(
            s::HostSpanKind::HostCallback,
            submission,
            Some(index),
            times_ns,
        );
    }
    hook.region_timing(
        &mut batch,
        (submission, index),
        times_ns,
        device.map(|span| (span.start_ns, span.end_ns)),
    );
    if let Some(description) = fault {
        batch.record(&s::Record::FaultInjected(s::FaultInjected {
            runtime: hook.runtime,
            submission: Some(s::SubmissionIndex(submission)),
            region: Some(s::RegionIndex(index as u32)),
            description,
            time_ns: hook.session_ns(times_ns.1),
        }));
    }
    if result.is_err() {
        ops_ran(hook, &mut batch, (submission, index, region), ops);
        return;
    }
    for use_ in uses.iter().filter(|u| u.access.writes()) {
        let storage = &use_.view.buffer().storage;
        if !hook.all_outputs && storage.pointer.is_null() {
            continue;
        }
        let range = use_.view.range();
        if !storage.pointer.is_null() && !hook.contents && range.len() <= INLINE_DIGEST_BYTES {
            // Small, in a host mapping, digest only: hashed here, after the region's end
            // time, on the thread that ran it. No fence: nothing writes these bytes before
            // the region's outcome is recorded (host writes are refused while it is in
            // flight, later writers of the range are ordered after it).
            // SAFETY: the range is in bounds of the buffer's host mapping (the region wrote
            // it), which the buffer's use by this in-flight submission keeps allocated.
            let bytes = unsafe {
                std::slice::from_raw_parts(storage.pointer.add(range.start), range.len())
            };
            batch.record_raw(RawRecord::OutputDigest(&s::OutputDigest {
                runtime: hook.runtime,
                submission: s::SubmissionIndex(submission),
                buffer: s::BufferId(storage.id),
                start: range.start as u64,
                end: range.end as u64,
                xxh3: xxhash_rust::xxh3::xxh3_64(bytes),
                contents: s::Payload::Omitted {
                    len_bytes: bytes.len() as u64,
                },
            }));
            continue;
        }
        // The bytes stay put behind a capture fence in a host-mapped buffer; a GPU-local range
        // is read back now.
        let source = if storage.pointer.is_null() {
            let mut staged = vec![0; range.len()];
            let Ok(view) = use_.view.gpu() else { continue };
            if storage.context.device.read(&view, &mut staged).is_err() {
                continue;
            }
            Output::Staged(staged)
        } else {
            // SAFETY: the range is in bounds of the buffer's host mapping (the region wrote
            // it); `Storage`'s drop and every writer wait for the capture's fence.
            let bytes = unsafe {
                std::slice::from_raw_parts(storage.pointer.add(range.start), range.len())
            };
            // SAFETY: as above.
            Output::Captured(unsafe { Captured::new(&storage.captures, bytes) })
        };
        batch.push();
        hook.output_digest(submission, storage.id, range, source);
    }
    batch.record_raw(RawRecord::RegionDone(&s::RegionDone {
        runtime: hook.runtime,
        submission: s::SubmissionIndex(submission),
        region: s::RegionIndex(index as u32),
        status: s::Status::Ok,
        time_ns: hook.session_ns(times_ns.1),
    }));
    ops_ran(hook, &mut batch, (submission, index, region), ops);
}

#[inline]
pub(crate) fn region_done(tracer: &Tracer, submission: u64, region: usize, outcome: &Status) {
    if tracer.on() {
        region_done_traced(tracer, submission, region, outcome);
    }
}

#[inline(never)]
fn region_done_traced(tracer: &Tracer, submission: u64, region: usize, outcome: &Status) {
    let Some(hook) = tracer.submission_hook(submission) else {
        return;
    };
    hook.record(s::Record::RegionDone(s::RegionDone {
        runtime: hook.runtime,
        submission: s::SubmissionIndex(submission),
        region: s::RegionIndex(region as u32),
        status: status(outcome),
        time_ns: hook.now_ns(),
    }));
}

#[inline]
pub(crate) fn submission_done(tracer: &Tracer, submission: u64, outcome: &Status) {
    if tracer.on() {
        submission_done_traced(tracer, submission, outcome);
    }
}

#[inline(never)]
fn submission_done_traced(tracer: &Tracer, submission: u64, outcome: &Status) {
    let Some(hook) = tracer.submission_hook(submission) else {
        return;
    };
    hook.record_raw(RawRecord::SubmissionDone(&s::SubmissionDone {
        runtime: hook.runtime,
        submission: s::SubmissionIndex(submission),
        status: status(outcome),
        time_ns: hook.now_ns(),
    }));
}

pub(crate) fn quarantine(
    tracer: &Tracer,
    prepared: u64,
    (submission, region): (u64, usize),
    error: &Error,
) {
    let Some(hook) = tracer.hook() else {
        return;
    };
    hook.record(s::Record::Quarantine(s::Quarantine {
        runtime: hook.runtime,
        prepared: s::PreparedId(prepared),
        submission: Some(s::SubmissionIndex(submission)),
        region: Some(s::RegionIndex(region as u32)),
        cause: error.to_string(),
        time_ns: hook.now_ns(),
    }));
}

/// `use_`'s buffer was poisoned by the failure of `region` of `submission`.
pub(crate) fn poison(tracer: &Tracer, (submission, region): (u64, usize), use_: &Use, cause: &str) {
    let Some(hook) = tracer.hook() else {
        return;
    };
    hook.record(s::Record::Poison(s::Poison {
        runtime: hook.runtime,
        buffer: s::BufferId(use_.buffer_id()),
        cause: cause.to_string(),
        time_ns: hook.now_ns(),
        submission: Some(s::SubmissionIndex(submission)),
        region: Some(s::RegionIndex(region as u32)),
    }));
}

pub(crate) fn copy_stream_unhealthy(tracer: &Tracer, copy_lane: GpuLane, error: &Error) {
    let Some(hook) = tracer.hook() else { return };
    hook.record(s::Record::CopyStreamUnhealthy(s::CopyStreamUnhealthy {
        runtime: hook.runtime,
        lane: lane(copy_lane),
        cause: error.to_string(),
        time_ns: hook.now_ns(),
    }));
}

/// The injected fault as a capture range opening before submission `next` counts it
/// ([`s::TraceRange::fault`]): the operations numbered and the target kernel's dispatches
/// run before the range come off its count (the runtime has drained: every earlier
/// submission ran). `None` without a fault, or when the range starts the run.
pub(crate) fn range_fault(
    faults: &crate::fault::FaultInjector,
    next: u64,
    operations_before: u64,
) -> Option<s::RangeFault> {
    let spec = faults.spec().filter(|_| next > 1)?;
    let from_start = if faults.fired() {
        None
    } else {
        hrx_capture::range::fault_from_range(&spec.to_string(), operations_before, |_| {
            faults.kernel_hits()
        })
    };
    Some(s::RangeFault {
        from_start,
        fired_in: None,
    })
}
