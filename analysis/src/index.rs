//! The structural index of a trace: runtimes and their lanes, buffers, kernels, graph
//! operations, prepared graphs and their regions, each region's label interned once.
//!
//! Everything here grows with what a program *builds* (graphs, buffers, kernels, distinct
//! labels), never with what it *submits*: per-submission records (submits, timings,
//! completions) are joined to these tables by [`crate::scan`] and handed to a
//! [`crate::Visitor`] without being stored.
//!
//! It is the one structure of every reader: `stats`, `export`, `diff`, `info` and replay read
//! it from the joiner, and the timeline's model keeps the joiner's index as its own
//! ([`crate::timeline::Model::index`]).
//!
//! Regions are numbered model-wide ([`RegionRef`]): prepared graph `p`'s region `i` is
//! `prepared[p].regions.start + i`. Lanes are numbered as the timeline numbers them: the
//! `n`-th runtime seen (by `RuntimeStart`, `Prepared` or a placed timing) owns lanes
//! `5n .. 5n + 5`, one per queue in [`QUEUES`] order.

use hrx_capture::schema::{
    AnnotationId, BufferCreated, BufferId, Edge, Engine, GraphId, GraphOp, KernelId, KernelLoaded,
    NodeIndex, OpKind, PreparedId, Queue, Record, RegionIndex, RegionKind, RuntimeId, ThreadName,
    Use,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// The five queues in lane order.
pub const QUEUES: [Queue; 5] = [
    Queue::GpuUpload,
    Queue::GpuCompute,
    Queue::GpuDownload,
    Queue::Npu,
    Queue::Host,
];

/// The position of `queue` in [`QUEUES`].
pub fn queue_slot(queue: Queue) -> usize {
    match queue {
        Queue::GpuUpload => 0,
        Queue::GpuCompute => 1,
        Queue::GpuDownload => 2,
        Queue::Npu => 3,
        Queue::Host => 4,
    }
}

/// A queue's name as the timeline and every report write it (`GPU Upload`, `NPU`).
pub fn queue_name(queue: Queue) -> &'static str {
    match queue {
        Queue::GpuUpload => "GPU Upload",
        Queue::GpuCompute => "GPU Compute",
        Queue::GpuDownload => "GPU Download",
        Queue::Npu => "NPU",
        Queue::Host => "Host",
    }
}

/// Whether `queue` is one of the GPU's three lanes.
pub fn is_gpu_queue(queue: Queue) -> bool {
    matches!(
        queue,
        Queue::GpuUpload | Queue::GpuCompute | Queue::GpuDownload
    )
}

/// A dense `u32` index newtype: copyable, ordered, hashable, serialisable, `get()` as a
/// `usize`. The timeline stores these in its memory-mapped columns (`Plain`, one `u32`).
macro_rules! index_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(
            Clone,
            Copy,
            Debug,
            Default,
            PartialEq,
            Eq,
            PartialOrd,
            Ord,
            Hash,
            serde::Serialize,
            serde::Deserialize,
        )]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`.
            pub fn get(self) -> usize {
                self.0 as usize
            }
        }
    };
}
pub(crate) use index_newtype;

index_newtype!(
    /// A lane: one queue of one runtime (index into [`Index::lanes`], and into the timeline
    /// model's lanes, which are numbered alike).
    LaneRef
);
index_newtype!(
    /// A prepared graph (index into [`Index::prepared`]), in the order of the `Prepared`
    /// records.
    PreparedRef
);
index_newtype!(
    /// A region of a prepared graph, numbered model-wide (index into [`Index::regions`]).
    RegionRef
);
index_newtype!(
    /// An interned label (index into [`Index::labels`]).
    LabelRef
);

/// A lane's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LaneInfo {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// Its queue.
    pub queue: Queue,
}

/// A prepared graph.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PreparedInfo {
    /// Its runtime.
    pub runtime: RuntimeId,
    /// The runtime's id for it.
    pub id: PreparedId,
    /// The graph it was prepared from.
    pub graph: GraphId,
    /// Run slots reserved.
    pub slots: u32,
    /// Host time of the prepare, ns since the session start.
    pub time_ns: u64,
    /// Its regions, model-wide.
    pub regions: Range<u32>,
}

/// A region of a prepared graph: `schema::Region` as recorded, with its prepared graph,
/// its index there and its lane.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegionInfo {
    /// Its prepared graph.
    pub prepared: PreparedRef,
    /// Its index within the prepared graph.
    pub index: RegionIndex,
    /// The queue it runs on.
    pub queue: Queue,
    /// The engine it runs on.
    pub engine: Engine,
    /// What it lowers to.
    pub kind: RegionKind,
    /// Its operations, in node order.
    pub nodes: Vec<NodeIndex>,
    /// Edges between its own operations (node indices).
    pub internal_edges: Vec<Edge>,
    /// Edges from earlier regions of the same prepared graph (region indices).
    pub dependencies: Vec<Edge>,
    /// Its uses, summarised.
    pub uses: Vec<Use>,
    /// Bytes a copy batch moves (0 otherwise).
    pub copy_bytes: u64,
    /// The lane it runs on.
    pub lane: LaneRef,
}

/// The structural tables of a trace (see the module docs).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Index {
    runtimes: Vec<RuntimeId>,
    lanes: Vec<LaneInfo>,
    buffers: HashMap<(RuntimeId, BufferId), BufferCreated>,
    kernels: HashMap<(RuntimeId, KernelId), KernelLoaded>,
    /// Recorded operations by (runtime, graph, node): a map, not a vector indexed by node,
    /// so that a damaged node index costs one entry, not memory up to the index.
    ops: HashMap<(RuntimeId, GraphId, NodeIndex), GraphOp>,
    prepared: Vec<PreparedInfo>,
    prepared_ids: HashMap<(RuntimeId, PreparedId), PreparedRef>,
    regions: Vec<RegionInfo>,
    /// Each region's label, filled by [`Index::label_regions`].
    region_labels: Vec<LabelRef>,
    /// Whether each region is a copy ([`is_copy_region`]), filled with `region_labels`.
    region_copies: Vec<bool>,
    labels: Vec<String>,
    /// Recording threads by session index ([`ThreadName`], format 1.14): name and OS id.
    threads: BTreeMap<u32, (String, u64)>,
    /// Annotation names by id ([`hrx_capture::schema::AnnotationName`], format 1.14).
    annotation_names: HashMap<AnnotationId, String>,
}

impl Index {
    /// An empty index.
    pub fn new() -> Index {
        Index::default()
    }

    /// Absorbs the structural part of `record` (runtimes, buffers, kernels, operations,
    /// prepared graphs); other records leave it unchanged.
    pub fn push(&mut self, record: &Record) {
        match record {
            Record::RuntimeStart(r) => {
                self.lane_of(r.runtime, Queue::GpuUpload);
            }
            Record::ThreadName(ThreadName {
                thread,
                os_tid,
                name,
            }) => {
                self.threads.insert(*thread, (name.clone(), *os_tid));
            }
            Record::RecorderWait(w) => {
                // Threads that waited for the recorder name themselves there too (1.1).
                self.threads
                    .entry(w.thread)
                    .or_insert_with(|| (w.thread_name.clone(), 0));
            }
            Record::AnnotationName(n) => {
                self.annotation_names.insert(n.name, n.text.clone());
            }
            Record::BufferCreated(b) => {
                self.buffers.insert((b.runtime, b.buffer), b.clone());
            }
            Record::KernelLoaded(k) => {
                self.kernels.insert((k.runtime, k.kernel), k.clone());
            }
            Record::GraphOp(op) => {
                self.ops.insert((op.runtime, op.graph, op.node), op.clone());
            }
            Record::Prepared(p) => {
                let prepared = PreparedRef(self.prepared.len() as u32);
                let first = self.regions.len() as u32;
                for (i, r) in p.regions.iter().enumerate() {
                    let lane = self.lane_of(p.runtime, r.queue);
                    self.regions.push(RegionInfo {
                        prepared,
                        index: RegionIndex(i as u32),
                        queue: r.queue,
                        engine: r.engine,
                        kind: r.kind,
                        nodes: r.nodes.clone(),
                        internal_edges: r.internal_edges.clone(),
                        dependencies: r.dependencies.clone(),
                        uses: r.uses.clone(),
                        copy_bytes: r.copy_bytes,
                        lane,
                    });
                }
                self.prepared.push(PreparedInfo {
                    runtime: p.runtime,
                    id: p.prepared,
                    graph: p.graph,
                    slots: p.slots,
                    time_ns: p.time_ns,
                    regions: first..self.regions.len() as u32,
                });
                self.prepared_ids.insert((p.runtime, p.prepared), prepared);
            }
            _ => {}
        }
    }

    /// The lane of `queue` on `runtime`, creating the runtime's five lanes on first use.
    pub fn lane_of(&mut self, runtime: RuntimeId, queue: Queue) -> LaneRef {
        let ordinal = match self.runtimes.iter().position(|&r| r == runtime) {
            Some(i) => i,
            None => {
                self.runtimes.push(runtime);
                self.lanes
                    .extend(QUEUES.iter().map(|&queue| LaneInfo { runtime, queue }));
                self.runtimes.len() - 1
            }
        };
        LaneRef((ordinal * QUEUES.len() + queue_slot(queue)) as u32)
    }

    /// Recording thread `thread`'s name (format 1.14 [`ThreadName`], or a `RecorderWait`'s),
    /// `thread N` when it has none or none was read.
    pub fn thread_name(&self, thread: u32) -> Cow<'_, str> {
        match self.threads.get(&thread) {
            Some((name, _)) if !name.is_empty() => Cow::Borrowed(name),
            Some((_, tid)) if *tid != 0 => Cow::Owned(format!("thread {thread} (tid {tid})")),
            _ => Cow::Owned(format!("thread {thread}")),
        }
    }

    /// The OS thread id of recording thread `thread`, when its [`ThreadName`] was read.
    pub fn thread_os_tid(&self, thread: u32) -> Option<u64> {
        self.threads
            .get(&thread)
            .map(|(_, tid)| *tid)
            .filter(|&tid| tid != 0)
    }

    /// The recording threads named in the trace, by session index.
    pub fn threads(&self) -> impl Iterator<Item = u32> + '_ {
        self.threads.keys().copied()
    }

    /// The name of annotation `name`; `annotation N` when its name record is missing (a
    /// damaged block, a trim).
    pub fn annotation_name(&self, name: AnnotationId) -> Cow<'_, str> {
        match self.annotation_names.get(&name) {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(format!("annotation {name}")),
        }
    }

    /// Runtimes in the order they were first seen.
    pub fn runtimes(&self) -> &[RuntimeId] {
        &self.runtimes
    }

    /// Every lane (five per runtime).
    pub fn lanes(&self) -> &[LaneInfo] {
        &self.lanes
    }

    /// A lane.
    ///
    /// # Panics
    ///
    /// When `lane` is not of this index.
    pub fn lane(&self, lane: LaneRef) -> LaneInfo {
        self.lanes[lane.0 as usize]
    }

    /// Every prepared graph, in prepare order.
    pub fn prepared(&self) -> &[PreparedInfo] {
        &self.prepared
    }

    /// The prepared graph `id` of `runtime`, if it was recorded.
    pub fn find_prepared(&self, runtime: RuntimeId, id: PreparedId) -> Option<PreparedRef> {
        self.prepared_ids.get(&(runtime, id)).copied()
    }

    /// Region `index` of prepared graph `prepared`, if it has one.
    pub fn region_of(&self, prepared: PreparedRef, index: RegionIndex) -> Option<RegionRef> {
        let regions = &self.prepared.get(prepared.0 as usize)?.regions;
        let id = regions.start.checked_add(index.0)?;
        (id < regions.end).then_some(RegionRef(id))
    }

    /// Every region, model-wide.
    pub fn regions(&self) -> &[RegionInfo] {
        &self.regions
    }

    /// A region.
    ///
    /// # Panics
    ///
    /// When `region` is not of this index.
    pub fn region(&self, region: RegionRef) -> &RegionInfo {
        &self.regions[region.0 as usize]
    }

    /// A created buffer.
    pub fn buffer(&self, runtime: RuntimeId, id: BufferId) -> Option<&BufferCreated> {
        self.buffers.get(&(runtime, id))
    }

    /// The operation `node` of `graph`, if it was recorded.
    pub fn op(&self, runtime: RuntimeId, graph: GraphId, node: NodeIndex) -> Option<&OpKind> {
        self.graph_op(runtime, graph, node).map(|op| &op.op)
    }

    /// The recorded operation `node` of `graph` (its kind, lane and uses), if recorded.
    pub fn graph_op(
        &self,
        runtime: RuntimeId,
        graph: GraphId,
        node: NodeIndex,
    ) -> Option<&GraphOp> {
        self.ops.get(&(runtime, graph, node))
    }

    /// A loaded kernel, if recorded.
    pub fn kernel(&self, runtime: RuntimeId, id: KernelId) -> Option<&KernelLoaded> {
        self.kernels.get(&(runtime, id))
    }

    /// The name of an operation: `fill`, `copy`, `scoped`, `host`, or the kernel's entry
    /// (`kernel N` when the kernel was not recorded).
    pub fn op_name(&self, runtime: RuntimeId, op: &OpKind) -> String {
        match op {
            OpKind::Fill { .. } => "fill".to_owned(),
            OpKind::Copy => "copy".to_owned(),
            OpKind::Scoped => "scoped".to_owned(),
            OpKind::Host => "host".to_owned(),
            OpKind::Kernel { kernel } | OpKind::Npu { kernel } => self
                .kernel(runtime, *kernel)
                .map_or_else(|| format!("kernel {kernel}"), |k| k.entry.clone()),
        }
    }

    /// The name operation `op` of a region on `queue` is listed under ([`listed_op_name`]):
    /// a copy by its lane, `upload`, `download` or `copy`, any other as [`Index::op_name`].
    pub fn listed_op_name(&self, runtime: RuntimeId, op: &OpKind, queue: Queue) -> String {
        listed_op_name(op, queue, || self.op_name(runtime, op))
    }

    /// The operations of a region: each one's name and whether it is a kernel or NPU run.
    pub fn region_ops(&self, region: RegionRef) -> Vec<(bool, String)> {
        let info = self.region(region);
        let p = &self.prepared[info.prepared.0 as usize];
        info.nodes
            .iter()
            .filter_map(|&n| self.op(p.runtime, p.graph, n))
            .map(|op| {
                let kernel = matches!(op, OpKind::Kernel { .. } | OpKind::Npu { .. });
                (kernel, self.op_name(p.runtime, op))
            })
            .collect()
    }

    /// Labels every region (see [`label_region`]) and interns the labels. Run once all
    /// structural records are in (a reader calls it at the end of its pass, so an operation
    /// recorded after its graph's prepare still names it).
    pub fn label_regions(&mut self) {
        let mut interned: HashMap<String, LabelRef> = HashMap::new();
        let mut labels = Vec::new();
        let mut region_labels = Vec::with_capacity(self.regions.len());
        let mut region_copies = Vec::with_capacity(self.regions.len());
        for i in 0..self.regions.len() {
            let region = RegionRef(i as u32);
            let info = self.region(region);
            let ops = self.region_ops(region);
            region_copies.push(is_copy_region(info.kind, &ops));
            let name = label_region(info.kind, info.queue, &ops);
            let id = *interned.entry(name).or_insert_with_key(|name| {
                labels.push(name.clone());
                LabelRef(labels.len() as u32 - 1)
            });
            region_labels.push(id);
        }
        self.labels = labels;
        self.region_labels = region_labels;
        self.region_copies = region_copies;
    }

    /// Whether a region is a copy ([`is_copy_region`]), once [`Index::label_regions`] ran
    /// (false before).
    pub fn is_copy(&self, region: RegionRef) -> bool {
        self.region_copies
            .get(region.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The label of a region, once [`Index::label_regions`] ran.
    pub fn label(&self, region: RegionRef) -> Option<LabelRef> {
        self.region_labels.get(region.0 as usize).copied()
    }

    /// Every distinct label, once [`Index::label_regions`] ran.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
}

/// Whether a region of `kind` whose operations have `names` (as [`label_region`] takes
/// them) is a copy: a copy batch, or a region of copies only. `stats` and the timeline
/// count such regions as copies, never as kernels; [`label_region`] names them `upload`,
/// `download` or `copy`.
pub fn is_copy_region(kind: RegionKind, names: &[(bool, String)]) -> bool {
    let all_copies = !names.is_empty() && names.iter().all(|(_, n)| n == "copy");
    kind == RegionKind::CopyBatch || all_copies
}

/// What a copy on `queue` is called: `upload` on the upload lane, `download` on the
/// download lane, else `copy` (device to device inside a compute graph). `stats` and `diff`
/// list copy operations under these names, as Nsight Systems lists memcpys by direction, so
/// that a 3 MB upload and a 256 B download are never one row of times.
pub fn copy_name(queue: Queue) -> &'static str {
    match queue {
        Queue::GpuUpload => "upload",
        Queue::GpuDownload => "download",
        _ => "copy",
    }
}

/// The name an operation of a region on `queue` is listed under in `stats`, `diff`'s
/// kernel and operation tables, `export` and `replay --per-op`: a copy by its lane
/// ([`copy_name`]: `upload`, `download`, else `copy`), any other by `name` (its kernel's
/// entry, `fill`, ...). The one rule, so that a copy reads the same in every verb.
pub fn listed_op_name(op: &OpKind, queue: Queue, name: impl FnOnce() -> String) -> String {
    match op {
        OpKind::Copy => copy_name(queue).to_owned(),
        _ => name(),
    }
}

/// The label of a region of `kind` on `queue` whose operations, in node order, have
/// `names` (each with whether it is a kernel or NPU run): `upload`, `download` or `copy` for
/// copies, else the first kernel's name (a fill or copy's when there is no kernel) with `+N`
/// for the other operations, else the region kind. The timeline, `stats` and `export` all
/// name regions this way.
pub fn label_region(kind: RegionKind, queue: Queue, names: &[(bool, String)]) -> String {
    if is_copy_region(kind, names) {
        return copy_name(queue).to_owned();
    }
    // Prefer a kernel's name over fills and copies around it.
    let main = names.iter().position(|(kernel, _)| *kernel).unwrap_or(0);
    match names.get(main) {
        Some((_, name)) if names.len() > 1 => format!("{name} +{}", names.len() - 1),
        Some((_, name)) => name.clone(),
        None => match kind {
            RegionKind::NativeGraph => "graph",
            RegionKind::CopyBatch => "copy",
            RegionKind::Scoped => "scoped",
            RegionKind::NpuRun => "npu",
            RegionKind::Host => "host",
        }
        .to_owned(),
    }
}
