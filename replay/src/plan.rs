//! Stage 1: parse an untrusted trace into a replay plan.
//!
//! The plan holds, per captured runtime: its buffers (length, placement), kernels (entry,
//! contract, launch dimensions, captured code), prepared graphs (their operations in build
//! order and the captured regions), the timeline of host writes and submits, and what each
//! submission is expected to produce (status, quarantine, output digests attributed to
//! regions). Nothing in the trace is trusted: every reference is checked (ids exist, ranges
//! lie inside their buffer, payload lengths agree, operations match their kernel's
//! contract), and any inconsistency is a [`ReplayError::Unreplayable`] naming the record.
//!
//! # Order
//!
//! Records of one thread keep their order in the file; records of different threads are
//! ordered only by their timestamps. So the timeline orders submits by submission index and
//! places each host write before the first submit recorded after it (`time_ns`), ties going
//! to the write. Output digests carry no region: a digest is attributed to the region of
//! its submission's graph whose summarized uses write exactly that range; when several
//! regions write the same range, the k-th digest of that range (file order) goes to the
//! k-th such region (the runtime orders them write-after-write, and digests are taken
//! before successors run).

use crate::error::ReplayError;
use crate::report::Outcome;
use hrx_capture::Trace;
use hrx_capture::schema::{
    self as s, Access, BlobHash, BufferId, Engine, KernelId, Lane, OpKind, Payload, PreparedId,
    Record, RegionKind, RuntimeId, SubmissionIndex,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Largest buffer replay allocates (1 TiB): larger lengths are a damaged trace.
const MAX_BUFFER_BYTES: u64 = 1 << 40;
/// Most run slots per prepared graph replay reserves: larger counts are a damaged trace.
const MAX_GRAPH_SLOTS: u32 = 4096;

/// A captured buffer.
#[derive(Clone, Debug)]
pub(crate) struct BufferPlan {
    pub id: BufferId,
    pub len: usize,
    pub placement: s::Placement,
}

/// A captured kernel.
#[derive(Clone, Debug)]
pub(crate) struct KernelPlan<'t> {
    pub id: KernelId,
    pub entry: String,
    pub engine: Engine,
    pub contract: Vec<s::BindingContract>,
    pub constants: Vec<u8>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub npu_groups: Vec<u32>,
    /// The captured module code (PTX, NPU instructions), when the trace has it.
    pub code: Option<&'t [u8]>,
}

/// One operation of a prepared graph, checked against its buffers and kernel.
#[derive(Clone, Debug)]
pub(crate) struct OpPlan {
    pub op: OpKind,
    pub lane: Lane,
    pub uses: Vec<s::Use>,
}

/// A prepared graph: its operations and the captured lowering.
#[derive(Clone, Debug)]
pub(crate) struct GraphPlan {
    pub prepared: PreparedId,
    pub ops: Vec<OpPlan>,
    pub regions: Vec<s::Region>,
}

/// A host write, with its captured bytes.
#[derive(Clone, Debug)]
pub(crate) struct HostWritePlan<'t> {
    pub buffer: BufferId,
    pub offset: usize,
    pub bytes: &'t [u8],
    pub time_ns: u64,
    /// Whether the bytes match the recorded xxh3 (false: the trace was edited or damaged).
    pub digest_ok: bool,
}

/// An output digest the capture recorded.
#[derive(Clone, Debug)]
pub(crate) struct Output<'t> {
    pub region: Option<u32>,
    pub buffer: BufferId,
    pub start: u64,
    pub end: u64,
    pub xxh3: u64,
    pub contents: Option<&'t [u8]>,
}

/// A captured submission and what it is expected to produce.
#[derive(Clone, Debug)]
pub(crate) struct SubmissionPlan<'t> {
    pub index: SubmissionIndex,
    pub graph: usize,
    pub producers: Vec<SubmissionIndex>,
    pub time_ns: u64,
    /// Captured status and its text; `None` when the trace ends before it retired.
    pub status: Option<(Outcome, String)>,
    pub region_status: BTreeMap<u32, s::Status>,
    /// The first failed region and when it failed (capture clock).
    pub failure: Option<crate::concurrent::Failure>,
    pub quarantined: bool,
    pub faults: Vec<String>,
    pub outputs: Vec<Output<'t>>,
    /// Written ranges excluded from comparison: (region, buffer, start, end, why).
    pub excluded: Vec<(u32, BufferId, u64, u64, Arc<str>)>,
}

impl SubmissionPlan<'_> {
    /// Why an output of `region` over `buffer[start..end]` is excluded, if it is.
    pub fn exclusion(
        &self,
        region: Option<u32>,
        buffer: BufferId,
        start: u64,
        end: u64,
    ) -> Option<&str> {
        self.excluded
            .iter()
            .find(|(r, b, s, e, _)| {
                region.is_none_or(|region| region == *r) && *b == buffer && *s < end && start < *e
            })
            .map(|(.., why)| &**why)
    }
}

/// One step of the replay timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Index into [`RuntimePlan::host_writes`].
    HostWrite(usize),
    /// Index into [`RuntimePlan::submissions`].
    Submit(usize),
}

/// A captured time: host span, and device span where the backend had one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub host_ns: u64,
    pub device_ns: Option<u64>,
}

impl Sample {
    pub fn of(timing: &s::RegionTiming) -> Sample {
        Sample {
            host_ns: timing.end_ns.saturating_sub(timing.start_ns),
            device_ns: timing
                .device
                .filter(|d| d.end_ns >= d.start_ns)
                .map(|d| d.end_ns - d.start_ns),
        }
    }
}

/// Everything replay needs about one captured runtime.
#[derive(Debug)]
pub(crate) struct RuntimePlan<'t> {
    pub id: RuntimeId,
    pub backend: String,
    pub device: String,
    pub graph_slots: u32,
    pub capacity: u32,
    pub fault: Option<String>,
    /// The first submission of a range or trim (`TraceRange`): the run before it is absent.
    pub range_start: Option<SubmissionIndex>,
    /// The run's injected fault counted from a range's start (`TraceRange::fault`, format
    /// 1.13), with that start.
    pub range_fault: Option<(SubmissionIndex, s::RangeFault)>,
    pub buffers: Vec<BufferPlan>,
    pub buffer_index: HashMap<BufferId, usize>,
    pub kernels: Vec<KernelPlan<'t>>,
    pub kernel_index: HashMap<KernelId, usize>,
    pub graphs: Vec<GraphPlan>,
    pub graph_index: HashMap<PreparedId, usize>,
    pub host_writes: Vec<HostWritePlan<'t>>,
    pub submissions: Vec<SubmissionPlan<'t>>,
    pub submission_index: HashMap<SubmissionIndex, usize>,
    pub timeline: Vec<Event>,
    pub substitutions: Vec<crate::substitute::SubstitutionPlan<'t>>,
    /// Captured region times by (graph index, region).
    pub region_times: HashMap<(usize, u32), Vec<Sample>>,
    /// Captured operation times by (graph index, node), where the backend had them.
    pub op_times: HashMap<(usize, u32), Vec<Sample>>,
    /// Buffers the capture poisoned, with their cause (format 1.3 `Poison` records).
    pub poisons: Vec<crate::concurrent::PoisonEvent>,
    /// The earlier submissions each submission's regions waited for (`CrossWait`).
    pub cross_waits: HashMap<SubmissionIndex, Vec<SubmissionIndex>>,
    /// Submits the capture saw refused (Busy, quarantine, ...): not replayed.
    pub refusals: usize,
    /// Submissions left out by `until`.
    pub cut: usize,
    /// Whether the capture digested every written range (`TraceDigests::All`), inferred
    /// from a digest of a GPU-local buffer; otherwise only host-observable outputs.
    pub digests_all: bool,
}

impl RuntimePlan<'_> {
    /// A short label for region `region` of graph `graph`: queue, kind and the names of its
    /// operations; with `range`, only the operations writing it.
    pub fn region_label(
        &self,
        graph: usize,
        region: u32,
        range: Option<(BufferId, u64, u64)>,
    ) -> String {
        let Some(plan) = self.graphs.get(graph) else {
            return format!("region {region}");
        };
        let Some(r) = plan.regions.get(region as usize) else {
            return format!("region {region}");
        };
        let queue = match r.queue {
            s::Queue::GpuUpload => "GPU Upload",
            s::Queue::GpuCompute => "GPU Compute",
            s::Queue::GpuDownload => "GPU Download",
            s::Queue::Npu => "NPU",
            s::Queue::Host => "Host",
        };
        let kind = match r.kind {
            RegionKind::NativeGraph => "native graph",
            RegionKind::CopyBatch => "copy batch",
            RegionKind::Scoped => "scoped callback",
            RegionKind::NpuRun => "NPU run",
            RegionKind::Host => "host callback",
        };
        let mut names: Vec<String> = Vec::new();
        for node in &r.nodes {
            let Some(op) = plan.ops.get(node.0 as usize) else {
                continue;
            };
            if let Some((buffer, start, end)) = range {
                let writes = op.uses.iter().any(|u| {
                    u.buffer == buffer && u.access != Access::Read && u.start < end && start < u.end
                });
                if !writes {
                    continue;
                }
            }
            let name = self.op_name(op);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        if names.is_empty() {
            format!("{queue}, {kind}")
        } else {
            format!("{queue}, {kind}: {}", names.join(", "))
        }
    }

    /// The display name of an operation: the kernel entry, or fill/copy/scoped/host.
    pub fn op_name(&self, op: &OpPlan) -> String {
        match &op.op {
            OpKind::Fill { .. } => "fill".into(),
            OpKind::Copy => "copy".into(),
            OpKind::Kernel { kernel } | OpKind::Npu { kernel } => self
                .kernel_index
                .get(kernel)
                .map(|&k| self.kernels[k].entry.clone())
                .unwrap_or_else(|| format!("kernel {kernel}")),
            OpKind::Scoped => "scoped callback".into(),
            OpKind::Host => "host callback".into(),
        }
    }

    /// The captured total of submissions, including those cut by `until`.
    pub fn captured_submissions(&self) -> usize {
        self.submissions.len() + self.cut
    }
}

/// The whole trace's plan.
#[derive(Debug)]
pub(crate) struct Plan<'t> {
    pub runtimes: Vec<RuntimePlan<'t>>,
    pub notes: Vec<String>,
    pub format_version: String,
    pub complete: bool,
    /// Records the capture lost while recording.
    pub lost: hrx_capture::Lost,
}

fn bad(why: impl Into<String>) -> ReplayError {
    ReplayError::unreplayable(why)
}

fn to_usize(value: u64, what: impl FnOnce() -> String) -> Result<usize, ReplayError> {
    usize::try_from(value).map_err(|_| bad(format!("{}: {value} does not fit in memory", what())))
}

/// Resolves captured contents to their bytes: `Ok(None)` when they were not captured.
fn contents<'t>(
    p: &'t Payload,
    expected_len: u64,
    blobs: &HashMap<BlobHash, &'t [u8]>,
    what: &dyn Fn() -> String,
) -> Result<Option<&'t [u8]>, ReplayError> {
    let bytes: &'t [u8] = match p {
        Payload::Omitted { .. } => return Ok(None),
        Payload::Inline(bytes) => bytes,
        Payload::Blob { hash, len_bytes } => {
            if *len_bytes != expected_len {
                return Err(bad(format!(
                    "{}: the blob reference says {len_bytes} bytes, the record {expected_len}",
                    what()
                )));
            }
            blobs.get(hash).copied().ok_or_else(|| {
                bad(format!(
                    "{}: blob {:#018x} is not in the trace (damaged trace?)",
                    what(),
                    hash.0
                ))
            })?
        }
    };
    if bytes.len() as u64 != expected_len {
        return Err(bad(format!(
            "{}: captured contents are {} bytes, the record says {expected_len}",
            what(),
            bytes.len()
        )));
    }
    Ok(Some(bytes))
}

/// Per-runtime records gathered in file order before validation.
#[derive(Default)]
struct Gather<'t> {
    start: Option<&'t s::RuntimeStart>,
    buffers: Vec<&'t s::BufferCreated>,
    kernels: Vec<&'t s::KernelLoaded>,
    ops: Vec<&'t s::GraphOp>,
    prepared: Vec<&'t s::Prepared>,
    submits: Vec<&'t s::Submit>,
    refusals: usize,
    host_writes: Vec<&'t s::HostWrite>,
    outputs: Vec<&'t s::OutputDigest>,
    timings: Vec<&'t s::RegionTiming>,
    op_timings: Vec<&'t s::OpTiming>,
    region_done: Vec<&'t s::RegionDone>,
    done: Vec<&'t s::SubmissionDone>,
    quarantines: Vec<&'t s::Quarantine>,
    faults: Vec<&'t s::FaultInjected>,
    poisons: Vec<&'t s::Poison>,
    cross_waits: Vec<&'t s::CrossWait>,
    snapshots: Vec<&'t s::BufferSnapshot>,
    /// The first submission of the earliest range, when the trace holds ranges.
    range_start: Option<SubmissionIndex>,
    range_fault: Option<(SubmissionIndex, s::RangeFault)>,
}

/// What the reader's recovery means for the replay: notes (records lost while recording, a
/// damaged or cut-short file) and whether the trace is complete.
pub(crate) fn recovery_notes(recovery: &hrx_capture::Recovery) -> (Vec<String>, bool) {
    let mut notes = Vec::new();
    // First of all: a trace that lost records cannot be replayed exactly.
    let lost = recovery.lost;
    if !lost.is_none() {
        notes.push(format!(
            "cannot be exact: {lost} while recording: missing submissions, host writes or \
             digests show up as divergences"
        ));
    }
    let complete = recovery.is_complete() && lost.is_none();
    if !complete {
        let r = recovery;
        notes.push(format!(
            "the trace is incomplete (clean close: {}, {} damaged or missing blocks and {} \
             records skipped, {} bytes discarded, {} submissions missing): what it lacks cannot \
             be compared",
            r.clean_close,
            r.skipped_blocks,
            r.skipped_records,
            r.bytes_discarded,
            r.missing_submissions
        ));
    }
    (notes, complete)
}

/// Builds the plan of `trace`, keeping the first `until` submissions of each runtime.
///
/// # Errors
/// [`ReplayError::Unreplayable`] for any inconsistency or missing data.
pub(crate) fn plan(trace: &Trace, until: Option<u64>) -> Result<Plan<'_>, ReplayError> {
    let blobs = trace.blobs();
    let lost = trace.recovery.lost;
    let (mut notes, complete) = recovery_notes(&trace.recovery);
    let mut format_version = format!(
        "{}.{}",
        trace.header.version.major.0, trace.header.version.minor.0
    );
    let mut gathered: BTreeMap<RuntimeId, Gather<'_>> = BTreeMap::new();
    for record in &trace.records {
        match record {
            Record::SessionStart(start) => {
                format_version = format!("{}.{}", start.format_version.0, start.format_version.1);
                continue;
            }
            Record::SessionEnd(_) => continue,
            _ => {}
        }
        let Some(runtime) = record.runtime() else {
            continue;
        };
        let g = gathered.entry(runtime).or_default();
        match record {
            Record::RuntimeStart(r) => {
                if g.start.is_some() {
                    return Err(bad(format!("runtime {runtime} starts twice")));
                }
                g.start = Some(r);
            }
            Record::BufferCreated(r) => g.buffers.push(r),
            Record::KernelLoaded(r) => g.kernels.push(r),
            Record::GraphOp(r) => g.ops.push(r),
            Record::Prepared(r) => g.prepared.push(r),
            Record::Submit(r) => g.submits.push(r),
            Record::SubmitRefused(_) => g.refusals += 1,
            Record::HostWrite(r) => g.host_writes.push(r),
            Record::OutputDigest(r) => g.outputs.push(r),
            Record::RegionTiming(r) => g.timings.push(r),
            Record::OpTiming(r) => g.op_timings.push(r),
            Record::RegionDone(r) => g.region_done.push(r),
            Record::SubmissionDone(r) => g.done.push(r),
            Record::Quarantine(r) => g.quarantines.push(r),
            Record::FaultInjected(r) => g.faults.push(r),
            Record::Poison(r) => g.poisons.push(r),
            Record::CrossWait(r) => g.cross_waits.push(r),
            Record::BufferSnapshot(r) => g.snapshots.push(r),
            Record::TraceRange(r) => {
                g.range_start = Some(g.range_start.map_or(r.start, |s| s.min(r.start)));
                if let Some(fault) = &r.fault
                    && g.range_fault.as_ref().is_none_or(|(s, _)| r.start < *s)
                {
                    g.range_fault = Some((r.start, fault.clone()));
                }
            }
            _ => {}
        }
    }
    let mut runtimes = Vec::new();
    for (id, g) in gathered {
        runtimes.push(runtime_plan(id, g, &blobs, until, &mut notes)?);
    }
    // Nothing to compare is not a match: a CI gate must not pass on a capture that was cut
    // short before its first submit, or that never used hrx.
    if runtimes.iter().all(|r| r.captured_submissions() == 0) {
        return Err(ReplayError::NoSubmissions {
            runtimes: runtimes.len(),
            complete,
        });
    }
    Ok(Plan {
        runtimes,
        notes,
        format_version,
        complete,
        lost,
    })
}

fn runtime_plan<'t>(
    id: RuntimeId,
    g: Gather<'t>,
    blobs: &HashMap<BlobHash, &'t [u8]>,
    until: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<RuntimePlan<'t>, ReplayError> {
    let start = g.start.ok_or_else(|| {
        bad(format!(
            "runtime {id} has records but no RuntimeStart (damaged trace?)"
        ))
    })?;
    if start.graph_slots == 0 || start.capacity == 0 || start.graph_slots > MAX_GRAPH_SLOTS {
        return Err(bad(format!(
            "runtime {id} has {} graph slots and capacity {}: both must be at least 1, and slots at most {MAX_GRAPH_SLOTS}",
            start.graph_slots, start.capacity
        )));
    }
    let mut plan = RuntimePlan {
        id,
        backend: start.backend.clone(),
        device: start.device.clone(),
        graph_slots: start.graph_slots,
        capacity: start.capacity,
        fault: start.fault.clone(),
        range_start: g.range_start,
        range_fault: g.range_fault,
        buffers: Vec::new(),
        buffer_index: HashMap::new(),
        kernels: Vec::new(),
        kernel_index: HashMap::new(),
        graphs: Vec::new(),
        graph_index: HashMap::new(),
        host_writes: Vec::new(),
        submissions: Vec::new(),
        submission_index: HashMap::new(),
        timeline: Vec::new(),
        substitutions: Vec::new(),
        region_times: HashMap::new(),
        op_times: HashMap::new(),
        poisons: g
            .poisons
            .iter()
            .filter_map(|p| crate::concurrent::PoisonEvent::of(p))
            .collect(),
        cross_waits: HashMap::new(),
        refusals: g.refusals,
        cut: 0,
        digests_all: false,
    };

    // Buffers.
    for b in &g.buffers {
        if plan.buffer_index.contains_key(&b.buffer) {
            return Err(bad(format!(
                "runtime {id}: buffer {} is created twice",
                b.buffer
            )));
        }
        if b.len_bytes > MAX_BUFFER_BYTES {
            return Err(bad(format!(
                "runtime {id}: buffer {} is {} bytes, more than replay allocates ({MAX_BUFFER_BYTES})",
                b.buffer, b.len_bytes
            )));
        }
        let len = to_usize(b.len_bytes, || format!("buffer {}", b.buffer))?;
        plan.buffer_index.insert(b.buffer, plan.buffers.len());
        plan.buffers.push(BufferPlan {
            id: b.buffer,
            len,
            placement: b.placement,
        });
    }
    let buffer_len = |plan: &RuntimePlan<'_>, buffer: BufferId| -> Result<u64, ReplayError> {
        plan.buffer_index
            .get(&buffer)
            .map(|&i| plan.buffers[i].len as u64)
            .ok_or_else(|| {
                bad(format!(
                    "runtime {id}: buffer {buffer} is used but never created"
                ))
            })
    };
    let check_range = |plan: &RuntimePlan<'_>,
                       buffer: BufferId,
                       start: u64,
                       end: u64,
                       what: &dyn Fn() -> String| {
        let len = buffer_len(plan, buffer)?;
        if start > end || end > len {
            return Err(bad(format!(
                "{}: bytes {start}..{end} are outside buffer {buffer} of {len} bytes",
                what()
            )));
        }
        Ok(())
    };

    // Kernels.
    for k in &g.kernels {
        if plan.kernel_index.contains_key(&k.kernel) {
            return Err(bad(format!(
                "runtime {id}: kernel {} is loaded twice",
                k.kernel
            )));
        }
        for (index, c) in k.contract.iter().enumerate() {
            if c.alignment > 1 && !c.alignment.is_power_of_two() {
                return Err(bad(format!(
                    "runtime {id}: kernel {} ({}) binding {index} has alignment {}, not a power of two",
                    k.kernel, k.entry, c.alignment
                )));
            }
            to_usize(c.extent_bytes, || {
                format!("kernel {} binding {index} extent", k.kernel)
            })?;
            to_usize(c.alignment, || {
                format!("kernel {} binding {index} alignment", k.kernel)
            })?;
        }
        if k.engine == Engine::Npu && k.npu_groups.len() != k.contract.len() {
            return Err(bad(format!(
                "runtime {id}: NPU kernel {} ({}) has {} argument groups for {} bindings",
                k.kernel,
                k.entry,
                k.npu_groups.len(),
                k.contract.len()
            )));
        }
        let code = k.code.and_then(|hash| blobs.get(&hash).copied());
        plan.kernel_index.insert(k.kernel, plan.kernels.len());
        plan.kernels.push(KernelPlan {
            id: k.kernel,
            entry: k.entry.clone(),
            engine: k.engine,
            contract: k.contract.clone(),
            constants: k.constants.clone(),
            grid: k.grid,
            block: k.block,
            npu_groups: k.npu_groups.clone(),
            code,
        });
    }

    // Graph operations, by graph, checked against buffers and kernels.
    let mut ops_by_graph: HashMap<s::GraphId, BTreeMap<u32, &s::GraphOp>> = HashMap::new();
    for op in &g.ops {
        if ops_by_graph
            .entry(op.graph)
            .or_default()
            .insert(op.node.0, op)
            .is_some()
        {
            return Err(bad(format!(
                "runtime {id}: graph {} has operation {} twice",
                op.graph, op.node
            )));
        }
    }
    for prepared in &g.prepared {
        if plan.graph_index.contains_key(&prepared.prepared) {
            return Err(bad(format!(
                "runtime {id}: graph {} is prepared twice",
                prepared.prepared
            )));
        }
        let ops = ops_by_graph.get(&prepared.graph).ok_or_else(|| {
            bad(format!(
                "runtime {id}: prepared graph {} has no recorded operations (graph {})",
                prepared.prepared, prepared.graph
            ))
        })?;
        let mut checked = Vec::with_capacity(ops.len());
        for (position, (&node, op)) in ops.iter().enumerate() {
            if node as usize != position {
                return Err(bad(format!(
                    "runtime {id}: graph {} lacks operation {position} (damaged trace?)",
                    prepared.graph
                )));
            }
            let what = || format!("runtime {id} graph {} operation {node}", prepared.graph);
            for u in &op.uses {
                check_range(&plan, u.buffer, u.start, u.end, &what)?;
            }
            check_op(&plan, op, &what)?;
            checked.push(OpPlan {
                op: op.op.clone(),
                lane: op.lane,
                uses: op.uses.clone(),
            });
        }
        for (index, region) in prepared.regions.iter().enumerate() {
            let what = || format!("runtime {id} graph {} region {index}", prepared.prepared);
            if region.nodes.is_empty() {
                return Err(bad(format!("{}: has no operations", what())));
            }
            if let Some(node) = region.nodes.iter().find(|n| n.0 as usize >= checked.len()) {
                return Err(bad(format!(
                    "{}: names operation {node}, the graph has {}",
                    what(),
                    checked.len()
                )));
            }
            for u in &region.uses {
                check_range(&plan, u.buffer, u.start, u.end, &what)?;
            }
        }
        plan.graph_index
            .insert(prepared.prepared, plan.graphs.len());
        plan.graphs.push(GraphPlan {
            prepared: prepared.prepared,
            ops: checked,
            regions: prepared.regions.clone(),
        });
    }

    // Submissions, in index order.
    let mut submits: Vec<&s::Submit> = g.submits.clone();
    submits.sort_by_key(|s| s.submission);
    let mut all_submissions = HashMap::new();
    for (position, submit) in submits.iter().enumerate() {
        if all_submissions
            .insert(submit.submission, position)
            .is_some()
        {
            return Err(bad(format!(
                "runtime {id}: submission {} is submitted twice",
                submit.submission
            )));
        }
        let graph = *plan.graph_index.get(&submit.prepared).ok_or_else(|| {
            bad(format!(
                "runtime {id}: submission {} names graph {}, which was never prepared",
                submit.submission, submit.prepared
            ))
        })?;
        for producer in &submit.producers {
            // A producer before the trace's range completed before the range started.
            if g.range_start.is_some_and(|start| *producer < start) {
                continue;
            }
            if *producer >= submit.submission || !all_submissions.contains_key(producer) {
                return Err(bad(format!(
                    "runtime {id}: submission {} waits on submission {producer}, which is not an earlier submission",
                    submit.submission
                )));
            }
        }
        if until.is_some_and(|n| position as u64 >= n) {
            plan.cut += 1;
            continue;
        }
        plan.submission_index
            .insert(submit.submission, plan.submissions.len());
        plan.submissions.push(SubmissionPlan {
            index: submit.submission,
            graph,
            producers: submit
                .producers
                .iter()
                .copied()
                .filter(|p| g.range_start.is_none_or(|start| *p >= start))
                .collect(),
            time_ns: submit.time_ns,
            status: None,
            region_status: BTreeMap::new(),
            failure: None,
            quarantined: false,
            faults: Vec::new(),
            outputs: Vec::new(),
            excluded: Vec::new(),
        });
    }
    // `Some(position)` for a kept submission, `None` for one cut by `until`; unknown ones
    // are an error.
    let locate = |plan: &RuntimePlan<'_>, submission: SubmissionIndex, what: &str| {
        if let Some(&position) = plan.submission_index.get(&submission) {
            Ok(Some(position))
        } else if all_submissions.contains_key(&submission)
            || g.range_start.is_some_and(|start| submission < start)
        {
            Ok(None)
        } else {
            Err(bad(format!(
                "runtime {id}: {what} names submission {submission}, which was never submitted"
            )))
        }
    };
    let check_region = |plan: &RuntimePlan<'_>, position: usize, region: u32, what: &str| {
        let graph = &plan.graphs[plan.submissions[position].graph];
        if region as usize >= graph.regions.len() {
            return Err(bad(format!(
                "runtime {id}: {what} names region {region} of submission {}, whose graph has {} regions",
                plan.submissions[position].index,
                graph.regions.len()
            )));
        }
        Ok(())
    };

    for done in &g.done {
        if let Some(position) = locate(&plan, done.submission, "SubmissionDone")? {
            plan.submissions[position].status = Some(Outcome::of(&done.status));
        }
    }
    for done in &g.region_done {
        if let Some(position) = locate(&plan, done.submission, "RegionDone")? {
            check_region(&plan, position, done.region.0, "RegionDone")?;
            let submission = &mut plan.submissions[position];
            submission
                .region_status
                .insert(done.region.0, done.status.clone());
            if matches!(done.status, s::Status::Failed { .. })
                && submission.failure.is_none_or(|f| f.region > done.region.0)
            {
                submission.failure = Some(crate::concurrent::Failure {
                    region: done.region.0,
                    time_ns: done.time_ns,
                });
            }
        }
    }
    for wait in &g.cross_waits {
        plan.cross_waits
            .entry(wait.submission)
            .or_default()
            .push(wait.on_submission);
    }
    for q in &g.quarantines {
        if let Some(submission) = q.submission
            && let Some(position) = locate(&plan, submission, "Quarantine")?
        {
            plan.submissions[position].quarantined = true;
        }
    }
    for f in &g.faults {
        if let Some(submission) = f.submission
            && let Some(position) = locate(&plan, submission, "FaultInjected")?
        {
            plan.submissions[position]
                .faults
                .push(f.description.clone());
        }
    }
    for t in &g.timings {
        if let Some(position) = locate(&plan, t.submission, "RegionTiming")? {
            check_region(&plan, position, t.region.0, "RegionTiming")?;
            let graph = plan.submissions[position].graph;
            plan.region_times
                .entry((graph, t.region.0))
                .or_default()
                .push(Sample::of(t));
        }
    }
    for t in &g.op_timings {
        if let Some(position) = locate(&plan, t.timing.submission, "OpTiming")? {
            let graph = plan.submissions[position].graph;
            if t.node.0 as usize >= plan.graphs[graph].ops.len() {
                return Err(bad(format!(
                    "runtime {id}: OpTiming names operation {} of graph {}, which has {}",
                    t.node,
                    plan.graphs[graph].prepared,
                    plan.graphs[graph].ops.len()
                )));
            }
            plan.op_times
                .entry((graph, t.node.0))
                .or_default()
                .push(Sample::of(&t.timing));
        }
    }

    // Output digests, attributed to regions per submission.
    for o in &g.outputs {
        let Some(position) = locate(&plan, o.submission, "OutputDigest")? else {
            continue;
        };
        let what = || format!("runtime {id} output digest of submission {}", o.submission);
        check_range(&plan, o.buffer, o.start, o.end, &what)?;
        let contents = contents(&o.contents, o.end - o.start, blobs, &what)?;
        plan.submissions[position].outputs.push(Output {
            region: None,
            buffer: o.buffer,
            start: o.start,
            end: o.end,
            xxh3: o.xxh3,
            contents,
        });
    }
    plan.digests_all = g
        .outputs
        .iter()
        .any(|o| plan.buffers[plan.buffer_index[&o.buffer]].placement == s::Placement::GpuLocal);
    if !plan.digests_all && !g.outputs.is_empty() {
        notes.push(format!(
            "runtime {id}: the capture digested only host-observable outputs: a divergence shows where it becomes visible, not necessarily where it started (record with HRX_TRACE_DIGESTS=all to name the first diverging region)"
        ));
    }
    for submission in &mut plan.submissions {
        let regions = &plan.graphs[submission.graph].regions;
        let keys: Vec<_> = submission
            .outputs
            .iter()
            .map(|o| (o.buffer, o.start, o.end))
            .collect();
        for (output, region) in submission.outputs.iter_mut().zip(attribute(regions, &keys)) {
            output.region = region;
        }
    }

    // Host writes and the timeline.
    let last_submit_ns = plan.submissions.last().map(|s| s.time_ns);
    let mut writes: Vec<(usize, &s::HostWrite)> =
        g.host_writes.iter().copied().enumerate().collect();
    writes.sort_by_key(|(file_order, w)| (w.time_ns, *file_order));
    for (_, w) in writes {
        if plan.cut > 0 && last_submit_ns.is_none_or(|last| w.time_ns > last) {
            continue;
        }
        let what = || {
            format!(
                "runtime {id} host write into buffer {} at byte {}",
                w.buffer, w.offset
            )
        };
        let end = w
            .offset
            .checked_add(w.len_bytes)
            .ok_or_else(|| bad(format!("{}: the range overflows", what())))?;
        check_range(&plan, w.buffer, w.offset, end, &what)?;
        let bytes = contents(&w.contents, w.len_bytes, blobs, &what)?.ok_or_else(|| {
            bad(format!(
                "{}: its {} bytes were not captured, so the input cannot be reproduced",
                what(),
                w.len_bytes
            ))
        })?;
        plan.host_writes.push(HostWritePlan {
            buffer: w.buffer,
            offset: to_usize(w.offset, what)?,
            bytes,
            time_ns: w.time_ns,
            digest_ok: xxhash_rust::xxh3::xxh3_64(bytes) == w.xxh3,
        });
    }
    // The state a range starts from: applied before everything else the range does.
    let mut unknown = 0u64;
    let mut snapshots = Vec::new();
    for snap in &g.snapshots {
        let what = || {
            format!(
                "runtime {id} snapshot of buffer {} at byte {}",
                snap.buffer, snap.offset
            )
        };
        let end = snap
            .offset
            .checked_add(snap.len_bytes)
            .ok_or_else(|| bad(format!("{}: the range overflows", what())))?;
        check_range(&plan, snap.buffer, snap.offset, end, &what)?;
        match contents(&snap.contents, snap.len_bytes, blobs, &what)? {
            Some(bytes) => snapshots.push(HostWritePlan {
                buffer: snap.buffer,
                offset: to_usize(snap.offset, what)?,
                bytes,
                time_ns: 0,
                digest_ok: xxhash_rust::xxh3::xxh3_64(bytes) == snap.xxh3,
            }),
            None => unknown += snap.len_bytes,
        }
    }
    if unknown > 0 {
        notes.push(format!(
            "runtime {id}: cannot be exact: the range reads {unknown} bytes whose contents at its start the trace lacks (trimmed from a recording without HRX_TRACE_CONTENTS=1?)"
        ));
    }
    if !snapshots.is_empty() {
        snapshots.append(&mut plan.host_writes);
        plan.host_writes = snapshots;
    }
    let edited = plan.host_writes.iter().filter(|w| !w.digest_ok).count();
    if edited > 0 {
        notes.push(format!(
            "runtime {id}: {edited} host writes carry contents that do not match their recorded digest (edited or damaged trace); replayed as captured"
        ));
    }
    let mut next_write = 0;
    for (position, submission) in plan.submissions.iter().enumerate() {
        while next_write < plan.host_writes.len()
            && plan.host_writes[next_write].time_ns <= submission.time_ns
        {
            plan.timeline.push(Event::HostWrite(next_write));
            next_write += 1;
        }
        plan.timeline.push(Event::Submit(position));
    }
    plan.timeline
        .extend((next_write..plan.host_writes.len()).map(Event::HostWrite));

    crate::substitute::plan_substitutions(&mut plan)?;
    crate::substitute::exclusions(&mut plan);
    if plan.refusals > 0 {
        notes.push(format!(
            "runtime {id}: the capture saw {} refused submits (Busy or quarantined); replay submits only accepted submissions and waits instead of being refused",
            plan.refusals
        ));
    }
    Ok(plan)
}

/// Checks an operation's shape against its kind and kernel contract.
fn check_op(
    plan: &RuntimePlan<'_>,
    op: &s::GraphOp,
    what: &dyn Fn() -> String,
) -> Result<(), ReplayError> {
    let accesses: Vec<Access> = op.uses.iter().map(|u| u.access).collect();
    match &op.op {
        OpKind::Fill { .. } => {
            if accesses != [Access::Write] {
                return Err(bad(format!(
                    "{}: a fill must have one written use, has {accesses:?}",
                    what()
                )));
            }
        }
        OpKind::Copy => {
            if accesses != [Access::Write, Access::Read] {
                return Err(bad(format!(
                    "{}: a copy must have uses [Write destination, Read source], has {accesses:?}",
                    what()
                )));
            }
            let (dst, src) = (&op.uses[0], &op.uses[1]);
            if dst.end - dst.start != src.end - src.start {
                return Err(bad(format!(
                    "{}: copy of {} bytes into {} bytes",
                    what(),
                    src.end - src.start,
                    dst.end - dst.start
                )));
            }
        }
        OpKind::Kernel { kernel } | OpKind::Npu { kernel } => {
            let npu = matches!(op.op, OpKind::Npu { .. });
            let k = plan
                .kernel_index
                .get(kernel)
                .map(|&i| &plan.kernels[i])
                .ok_or_else(|| bad(format!("{}: kernel {kernel} was never loaded", what())))?;
            if (k.engine == Engine::Npu) != npu || k.engine == Engine::Host {
                return Err(bad(format!(
                    "{}: kernel {kernel} ({}) runs on {:?}, the operation is {}",
                    what(),
                    k.entry,
                    k.engine,
                    if npu { "an NPU run" } else { "a GPU dispatch" }
                )));
            }
            let contract: Vec<Access> = k.contract.iter().map(|c| c.access).collect();
            if contract != accesses {
                return Err(bad(format!(
                    "{}: uses {accesses:?} do not match kernel {} ({}) bindings {contract:?}",
                    what(),
                    kernel,
                    k.entry
                )));
            }
        }
        OpKind::Scoped | OpKind::Host => {}
    }
    Ok(())
}

/// Attributes output ranges of one submission to regions (see the module docs).
pub(crate) fn attribute(regions: &[s::Region], keys: &[(BufferId, u64, u64)]) -> Vec<Option<u32>> {
    let mut seen: HashMap<(BufferId, u64, u64), usize> = HashMap::new();
    keys.iter()
        .map(|&(buffer, start, end)| {
            let candidates: Vec<u32> = regions
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    r.uses.iter().any(|u| {
                        u.buffer == buffer
                            && u.start == start
                            && u.end == end
                            && u.access != Access::Read
                    })
                })
                .map(|(i, _)| i as u32)
                .collect();
            let k = seen.entry((buffer, start, end)).or_default();
            let region = candidates
                .get((*k).min(candidates.len().saturating_sub(1)))
                .copied();
            *k += 1;
            region
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(uses: &[(u64, u64, u64, Access)]) -> s::Region {
        s::Region {
            queue: s::Queue::GpuCompute,
            engine: Engine::Gpu,
            kind: RegionKind::NativeGraph,
            nodes: vec![s::NodeIndex(0)],
            internal_edges: Vec::new(),
            dependencies: Vec::new(),
            uses: uses
                .iter()
                .map(|&(buffer, start, end, access)| s::Use {
                    buffer: BufferId(buffer),
                    start,
                    end,
                    access,
                })
                .collect(),
            copy_bytes: 0,
        }
    }

    #[test]
    fn digests_go_to_the_region_writing_exactly_that_range() {
        let regions = [
            region(&[(1, 0, 16, Access::Read), (2, 0, 16, Access::Write)]),
            region(&[(2, 0, 16, Access::ReadWrite), (3, 0, 8, Access::Write)]),
            region(&[(2, 0, 16, Access::Write)]),
        ];
        let keys = [
            (BufferId(2), 0, 16),
            (BufferId(3), 0, 8),
            (BufferId(2), 0, 16),
            (BufferId(2), 0, 16),
            (BufferId(2), 0, 16),
            (BufferId(1), 0, 16),
        ];
        assert_eq!(
            attribute(&regions, &keys),
            [Some(0), Some(1), Some(1), Some(2), Some(2), None]
        );
    }
}
