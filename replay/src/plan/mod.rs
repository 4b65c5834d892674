//! Stage 1: parse an untrusted trace into a replay plan.
//!
//! The plan holds, per captured runtime: its buffers (length, placement), kernels (entry,
//! contract, launch dimensions, captured code), prepared graphs (their operations in build
//! order and the captured regions), the timeline of host writes, submits and buffer
//! releases, and what each
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
//! to the write, and each buffer's release (`BufferDropped`, written by whichever thread let
//! the buffer go last, often a worker, so anywhere in the file) before the first submit
//! recorded after it, ties going to the submit: the runtime lets a buffer go only once every
//! submission using it retired. A release of a buffer the trace does not create is left out;
//! one released twice is refused. A record using a buffer after its release is refused when
//! the replay reaches it (module `execute`), where a streamed replay knows earlier chunks'
//! releases too. Output digests carry no region: a digest is attributed to the region of
//! its submission's graph whose summarized uses write exactly that range; when several
//! regions write the same range, the k-th digest of that range (file order) goes to the
//! k-th such region (the runtime orders them write-after-write, and digests are taken
//! before successors run): what a substituted callback writes is taken from there. The
//! comparison keys digests as `diff` does, not by region (module `compare`).
//!
//! The files: this one holds the plan's types; `gather` reads the trace's records per
//! runtime and builds the [`Plan`] ([`plan`], [`recovery_notes`]); `runtime` validates one
//! runtime's records into its [`RuntimePlan`]; `check` checks operations against their
//! kernel's contract and attributes output digests to regions ([`attribute`]).

mod check;
mod gather;
mod runtime;

pub(crate) use gather::{
    ends, ends_notes, host_load_sample, incompleteness, past_the_end, plan, plan_of,
    recovery_notes, refuse_gaps, trimmed_from_incomplete,
};
pub(crate) use runtime::host_observable_note;
pub(crate) use runtime::orphans_note;

use crate::report::Outcome;
use hrx_capture::schema::{
    self as s, Access, BufferId, Engine, KernelId, Lane, OpKind, PreparedId, RegionKind, RuntimeId,
    SubmissionIndex,
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
    /// The prepared graphs (indices into [`RuntimePlan::graphs`]) whose operations use it:
    /// a replay lets them go with it ([`Event::Release`]).
    pub graphs: Vec<usize>,
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
    /// What the trace records of its parameters, as `diff` hashes them
    /// ([`hrx_analysis::diff::kernel_params`]): a graph's signature reads it.
    pub params: u64,
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
    /// The buffers (indices into [`RuntimePlan::buffers`]) its operations use, ascending.
    pub buffers: Vec<usize>,
    /// Each operation's region: the first of `regions` naming it (`None`: none does). Looked
    /// up once per operation timing, substitution and output: a scan of the regions for each
    /// made a graph of 100,000 regions take minutes to plan and read back.
    region_of: Vec<Option<u32>>,
    /// The regions whose summarized uses write each exact byte range (buffer, start, end),
    /// in order: what an output is attributed to, looked up once per output.
    writers: HashMap<(BufferId, u64, u64), Vec<u32>>,
}

impl GraphPlan {
    /// A prepared graph of `ops` lowered into `regions`; every node a region names is below
    /// `ops.len()` (the plan checked it).
    pub fn new(
        prepared: PreparedId,
        ops: Vec<OpPlan>,
        regions: Vec<s::Region>,
        buffers: Vec<usize>,
    ) -> GraphPlan {
        let mut region_of = vec![None; ops.len()];
        for (index, region) in regions.iter().enumerate() {
            for node in &region.nodes {
                debug_assert!((node.0 as usize) < ops.len(), "a checked region");
                if let Some(slot @ None) = region_of.get_mut(node.0 as usize) {
                    *slot = Some(index as u32);
                }
            }
        }
        let mut writers: HashMap<(BufferId, u64, u64), Vec<u32>> = HashMap::new();
        for (index, region) in regions.iter().enumerate() {
            for u in region.uses.iter().filter(|u| u.access != s::Access::Read) {
                let regions = writers.entry((u.buffer, u.start, u.end)).or_default();
                if regions.last() != Some(&(index as u32)) {
                    regions.push(index as u32);
                }
            }
        }
        GraphPlan {
            prepared,
            ops,
            regions,
            buffers,
            region_of,
            writers,
        }
    }

    /// The region holding operation `node`: the first naming it, as the capture lowered the
    /// graph; `None` for a node no region names or past the graph's operations.
    pub fn region_of_node(&self, node: u32) -> Option<u32> {
        self.region_of.get(node as usize).copied().flatten()
    }

    /// The regions whose summarized uses write exactly `buffer[start..end]`, in order.
    pub fn writers(&self, buffer: BufferId, start: u64, end: u64) -> &[u32] {
        self.writers
            .get(&(buffer, start, end))
            .map_or(&[], Vec::as_slice)
    }
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
    /// Its explicit producers (`submit_after`), those before the trace's range included
    /// (module `joins`): replay submits it after those it replayed (in a streamed replay, an
    /// earlier chunk's too), and orders a failure before it through any of them.
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
    /// The program let go of a buffer (its `BufferDropped`: the runtime released its memory,
    /// every graph and submission using it gone): index into [`RuntimePlan::buffers`].
    Release(usize),
}

/// A captured time: host span, and device span where the backend had one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub host_ns: u64,
    pub device_ns: Option<u64>,
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
    /// How the capture timed operations, where the trace says (format 1.16's `OpTimes`).
    pub op_time_source: Option<s::OpTimeSource>,
    /// The first submission of a range or trim (`TraceRange`): the run before it is absent.
    pub range_start: Option<SubmissionIndex>,
    /// The run's injected fault counted from a range's start (`TraceRange::fault`, format
    /// 1.13), with that start.
    pub range_fault: Option<(SubmissionIndex, s::RangeFault)>,
    /// Bytes the range reads whose contents at its start the trace lacks (a trim of a
    /// recording without contents): the replay cannot be exact.
    pub range_unknown_bytes: u64,
    /// Those bytes, as `(time_ns, buffer, start, end)` in host-time order: the state
    /// snapshots whose contents the trace lacks. Outputs that depend on them are excluded
    /// from comparison (module `substitute`).
    pub range_unknown: Vec<(u64, BufferId, u64, u64)>,
    pub buffers: Vec<BufferPlan>,
    pub buffer_index: HashMap<BufferId, usize>,
    pub kernels: Vec<KernelPlan<'t>>,
    pub kernel_index: HashMap<KernelId, usize>,
    pub graphs: Vec<GraphPlan>,
    pub graph_index: HashMap<PreparedId, usize>,
    pub host_writes: Vec<HostWritePlan<'t>>,
    pub submissions: Vec<SubmissionPlan<'t>>,
    pub submission_index: HashMap<SubmissionIndex, usize>,
    /// Host writes, submits and releases in replay order (see the module docs).
    pub timeline: Vec<Event>,
    pub substitutions: Vec<crate::substitute::SubstitutionPlan<'t>>,
    /// Captured region times by (graph index, region).
    pub region_times: HashMap<(usize, u32), Vec<Sample>>,
    /// Captured operation times by (graph index, node), where the backend had them.
    pub op_times: HashMap<(usize, u32), Vec<Sample>>,
    /// Buffers the capture poisoned, with their cause (format 1.3 `Poison` records).
    pub poisons: Vec<crate::concurrent::PoisonEvent>,
    /// The earlier submissions each submission's regions waited for (`CrossWait`, as the
    /// one join joined them, module `joins`: those before the trace's range included).
    pub cross_waits: HashMap<SubmissionIndex, Vec<SubmissionIndex>>,
    /// Submits the capture saw refused (Busy, quarantine, ...): not replayed.
    pub refusals: usize,
    /// Submissions left out by `until`.
    pub cut: usize,
    /// The lowest and highest submission numbers the trace holds (kept or cut by `until`).
    pub first_captured: Option<SubmissionIndex>,
    pub last_captured: Option<SubmissionIndex>,
    /// Whether the capture digested every written range (`TraceDigests::All`), inferred
    /// from a digest of a GPU-local buffer; otherwise only host-observable outputs.
    pub digests_all: bool,
    /// The capture's first submission failed by a sticky device loss
    /// ([`hrx::DeviceCall::is_sticky_loss`]), with its error: a replay on a GPU reproduces it
    /// and cannot use the device again in its process ([`RuntimePlan::runs`]). A streamed
    /// replay takes it from the first pass over the whole file, not from one chunk.
    pub sticky_loss: Option<(SubmissionIndex, String)>,
}

/// Whether `BackendChoice::Auto` opens a GPU in this process (a runtime opened with no fault
/// and dropped, once): where it does not, `auto` replays on the software device.
fn auto_opens_gpu() -> bool {
    static OPENS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OPENS.get_or_init(|| {
        hrx::Runtime::new(
            hrx::RuntimeOptions::default()
                .backend(hrx::BackendChoice::Auto)
                .environment(false),
        )
        .is_ok_and(|runtime| runtime.device_info().backend != "sim")
    })
}

/// [`RuntimePlan::replays_on_sim`] of a runtime that injected a fault in its capture
/// (`captured_fault`: its `RuntimeStart` names one) and whose trace's range says of it
/// `range_fault` (the earliest range's), as `replay_fault` decides what is injected: a
/// stream's first pass tells it for every runtime before the first chunk.
pub(crate) fn replays_on_sim(
    options: &crate::options::ReplayOptions,
    captured_fault: bool,
    range_fault: Option<&s::RangeFault>,
) -> bool {
    match options.backend {
        hrx::BackendChoice::Sim => true,
        hrx::BackendChoice::Auto => {
            // As `replay_fault` decides: a fault asked, or the captured one injected (not
            // where it fired before this trace's range).
            let captured = options.captured_fault
                && captured_fault
                && !matches!(
                    range_fault,
                    Some(s::RangeFault {
                        from_start: None,
                        ..
                    })
                );
            options.fault.is_some()
                || captured
                || !options.auto_opens_gpu.unwrap_or_else(auto_opens_gpu)
        }
        _ => false,
    }
}

/// The order a replay runs a trace's runtimes in. A runtime whose capture lost its GPU to a
/// sticky error, replayed on a GPU, reproduces the loss, and after it the device cannot be
/// used again in the replay's process (CUDA: "the process must be terminated and
/// relaunched"): a runtime opened after it failed to open (exit 2, session 56). So every
/// other runtime runs first, in id order; then the first (lowest id) of those that lose the
/// GPU; the others of them are not replayed in this process, and the report says so
/// ([`Order::notes`]). The whole and the streamed replay take it alike (the streamed one from
/// its first pass over the whole file: `ChunkIndex::order`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Order {
    /// Runtimes that keep the device, in id order: run first.
    pub first: Vec<RuntimeId>,
    /// The runtime run last, which reproduces its capture's sticky loss.
    pub last: Option<RuntimeId>,
    /// Runtimes that lost the device too: not replayed in this process.
    pub not_run: Vec<RuntimeId>,
}

impl Order {
    /// The order of `runtimes`, each with whether it loses the GPU
    /// ([`RuntimePlan::loses_the_gpu`]).
    pub(crate) fn of(runtimes: impl IntoIterator<Item = (RuntimeId, bool)>) -> Order {
        let mut runtimes: Vec<(RuntimeId, bool)> = runtimes.into_iter().collect();
        runtimes.sort_by_key(|(id, _)| *id);
        let mut order = Order::default();
        for (id, loses) in runtimes {
            match (loses, order.last) {
                (false, _) => order.first.push(id),
                (true, None) => order.last = Some(id),
                (true, Some(_)) => order.not_run.push(id),
            }
        }
        order
    }

    /// The runtimes replayed, in the order they run.
    pub(crate) fn runs(&self) -> impl Iterator<Item = RuntimeId> + '_ {
        self.first.iter().copied().chain(self.last)
    }

    /// Whether `runtime` is replayed in this process.
    pub(crate) fn replays(&self, runtime: RuntimeId) -> bool {
        !self.not_run.contains(&runtime)
    }

    /// What the report says of the order: the runtime run last and why, and each runtime
    /// not replayed with its capture's loss (`losses`: [`RuntimePlan::sticky_loss`]).
    pub(crate) fn notes(
        &self,
        losses: impl Fn(RuntimeId) -> Option<(SubmissionIndex, String)>,
    ) -> Vec<String> {
        let Some(last) = self.last else {
            return Vec::new();
        };
        let list = |ids: &[RuntimeId]| {
            let ids: Vec<String> = ids.iter().map(|id| id.0.to_string()).collect();
            format!(
                "runtime{} {}",
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            )
        };
        let rule = "after which the device cannot be used again in the replay's process (the \
                    vendor's rule)";
        let mut notes = Vec::new();
        if !self.first.is_empty() {
            notes.push(format!(
                "runtime {last} replayed after every other runtime ({}): its capture lost the \
                 device to a sticky error, which its replay on a GPU reproduces, {rule}",
                list(&self.first)
            ));
        }
        for &id in &self.not_run {
            let loss = losses(id).map_or_else(String::new, |(submission, error)| {
                let error = error.split("; ").next().unwrap_or(&error).to_owned();
                format!(" (submission {}: {error})", submission.0)
            });
            notes.push(format!(
                "runtime {id}: not replayed, its submissions not compared: its capture lost the \
                 device to a sticky error too{loss}, and runtime {last}'s replay reproduces its \
                 own loss first, {rule} (`--backend sim` replays every runtime)"
            ));
        }
        notes
    }
}

/// How often a runtime is replayed in one process: warm-ups, then timed repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Runs {
    pub warmup: usize,
    pub repeat: usize,
}

impl RuntimePlan<'_> {
    /// The runs `options` ask for, except where the capture lost its device to a sticky
    /// error and the replay may run on a GPU: one run, no warm-up. Its first run reproduces
    /// the loss, after which the vendor's device cannot be used again in the process (CUDA:
    /// "the process must be terminated and relaunched"; `hrx::DeviceCall::STICKY`), so a
    /// warm-up would leave the measured run nothing to open, and repeats side by side would
    /// fail by the first one's loss. [`RuntimePlan::single_run_note`] says so.
    pub fn runs(&self, options: &crate::options::ReplayOptions) -> Runs {
        if self.sticky_loss.is_some() && !self.replays_on_sim(options) {
            Runs {
                warmup: 0,
                repeat: 1,
            }
        } else {
            Runs {
                warmup: options.warmup,
                repeat: options.repeat.max(1),
            }
        }
    }

    /// What the report says where [`RuntimePlan::runs`] runs this runtime fewer times than
    /// `options` ask.
    pub fn single_run_note(&self, options: &crate::options::ReplayOptions) -> Option<String> {
        let (submission, error) = self.sticky_loss.as_ref()?;
        let runs = self.runs(options);
        let asked = Runs {
            warmup: options.warmup,
            repeat: options.repeat.max(1),
        };
        let isolated = options.per_op && options.isolated && !self.times_ops_isolated(options);
        if runs == asked && !isolated {
            return None;
        }
        let error = error.split("; ").next().unwrap_or(error);
        Some(format!(
            "runtime {}: replayed once, without a warm-up{}{}: the capture lost the device to a \
             sticky error (submission {}: {error}), which a replay on a GPU reproduces, and after \
             it the device cannot be used again in the replay's process (the vendor's rule); \
             its timings are one cold run (`--backend sim` replays it as asked)",
            self.id.0,
            if asked.repeat > 1 || asked.warmup > 0 {
                format!(
                    " (not the {} warm-up{} and {} repeat{} asked)",
                    asked.warmup,
                    if asked.warmup == 1 { "" } else { "s" },
                    asked.repeat,
                    if asked.repeat == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            },
            if isolated {
                ", its operations not timed in isolation"
            } else {
                ""
            },
            submission.0
        ))
    }

    /// Whether its operations are launched one by one after the repeats (`--isolated`): each
    /// in a fresh runtime, which a sticky loss leaves nothing to open ([`RuntimePlan::runs`]).
    pub fn times_ops_isolated(&self, options: &crate::options::ReplayOptions) -> bool {
        options.per_op
            && options.isolated
            && (self.sticky_loss.is_none() || self.replays_on_sim(options))
    }

    /// Whether this runtime is replayed on the software device: `--backend sim`, or `auto`
    /// where it injects a fault (which the software device alone does) or opens no GPU on
    /// this host. A capture that lost its GPU to a sticky error is replayed as asked there:
    /// `auto` fell back to the software device and still ran it once, saying a GPU would
    /// reproduce the loss (a break-it pass).
    pub(crate) fn replays_on_sim(&self, options: &crate::options::ReplayOptions) -> bool {
        replays_on_sim(
            options,
            self.fault.is_some(),
            self.range_fault.as_ref().map(|(_, f)| f),
        )
    }

    /// Whether its replay may run on a GPU and reproduce its capture's sticky loss of the
    /// device, after which no runtime of the replay's process can use the device
    /// ([`Order`]).
    pub(crate) fn loses_the_gpu(&self, options: &crate::options::ReplayOptions) -> bool {
        self.sticky_loss.is_some() && !self.replays_on_sim(options)
    }

    /// Whether its replays keep their outputs' contents: a float tolerance compares them, and
    /// the capture kept some to compare against.
    pub fn keeps_contents(&self, options: &crate::options::ReplayOptions) -> bool {
        options.tolerance.is_some()
            && (self.submissions.iter())
                .flat_map(|s| &s.outputs)
                .any(|o| o.contents.is_some())
    }

    /// A short label for region `region` of graph `graph`: queue, kind and the names of its
    /// operations, a copy batch's counted (`GPU Upload, copy batch: 2 uploads`); with
    /// `range`, only the operations writing it.
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
            if r.kind == RegionKind::CopyBatch {
                // Each copy counted, under its lane's name.
                names.push(match op.op {
                    OpKind::Copy => hrx_analysis::copy_name(r.queue).to_owned(),
                    _ => name,
                });
            } else if !names.contains(&name) {
                names.push(name);
            }
        }
        if names.is_empty() {
            return format!("{queue}, {kind}");
        }
        if r.kind == RegionKind::CopyBatch {
            // Its copies by count and by the lane's name for them (`upload`, `download`), as
            // `stats`, `view` and `--per-op` name them: "copy batch: copy" said the kind twice.
            let mut counted: Vec<(String, u64)> = Vec::new();
            for name in names {
                match counted.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => *count += 1,
                    None => counted.push((name, 1)),
                }
            }
            let counted: Vec<String> = (counted.iter())
                .map(|(name, n)| match (name.as_str(), n) {
                    (_, 1) => format!("1 {name}"),
                    ("copy", n) => format!("{n} copies"),
                    (name, n) => format!("{n} {name}s"),
                })
                .collect();
            return format!("{queue}, {kind}: {}", counted.join(", "));
        }
        format!("{queue}, {kind}: {}", names.join(", "))
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

    /// What prepared graph `graph` is and computes: its signature as `diff` takes it
    /// ([`hrx_analysis::diff::signature`]: its regions, operations, kernels and byte
    /// ranges). Graphs of one signature pool their timing rows
    /// ([`hrx_analysis::matching::Pools`]).
    pub fn signature(&self, graph: &GraphPlan) -> hrx_analysis::diff::Signature {
        use hrx_analysis::diff::{OpShape, RegionShape};
        // Region labels as `diff` labels them (`hrx_analysis::label_region`).
        let labels: Vec<String> = (graph.regions.iter())
            .map(|r| {
                let names: Vec<(bool, String)> = (r.nodes.iter())
                    .filter_map(|n| graph.ops.get(n.0 as usize))
                    .map(|op| {
                        let kernel = matches!(op.op, OpKind::Kernel { .. } | OpKind::Npu { .. });
                        (kernel, self.diff_op_name(op))
                    })
                    .collect();
                hrx_analysis::label_region(r.kind, r.queue, &names)
            })
            .collect();
        let regions = graph
            .regions
            .iter()
            .zip(&labels)
            .map(|(r, label)| RegionShape {
                label,
                queue: r.queue,
                engine: r.engine,
                kind: r.kind,
                nodes: &r.nodes,
            });
        let ops: Vec<OpShape<'_>> = (graph.ops.iter().enumerate())
            .map(|(node, op)| OpShape {
                node: node as u32,
                op: &op.op,
                lane: op.lane,
                uses: &op.uses,
            })
            .collect();
        let kernel = |k| self.kernel_index.get(&k).map(|&i| self.kernels[i].params);
        let placement = |b| (self.buffer_index.get(&b)).map(|&i| self.buffers[i].placement);
        hrx_analysis::diff::signature(regions, &ops, kernel, placement)
    }

    /// An operation's name as `diff` names it ([`hrx_analysis::Index::op_name`]).
    pub fn diff_op_name(&self, op: &OpPlan) -> String {
        match op.op {
            OpKind::Scoped => "scoped".into(),
            OpKind::Host => "host".into(),
            _ => self.op_name(op),
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
    /// Which recording it is: its host, pid and wall-clock start (`SessionStart`).
    pub recorded: Option<String>,
    pub complete: bool,
    /// Records the capture lost while recording.
    pub lost: hrx_capture::Lost,
    /// The capture's highest host load per CPU, where it recorded one.
    pub host_load_per_cpu: Option<f64>,
}

#[cfg(test)]
mod tests;
