//! Graph building, lowering into regions (`prepare`) and submission.
//!
//! Three stages, as in the field's APIs: **build** ([`Graph`]: each operation declares the
//! byte ranges it reads and writes; contracts, alignment and runtime identity are checked
//! here) -> **prepare** ([`Graph::prepare`]: operations are lowered into *regions*, each one
//! unit of native work on one queue) -> **submit** ([`ExecutableGraph::submit`] into one of
//! the graph's bounded, reusable slots; the scheduler retires it).
//!
//! Lowering rules:
//! - a scoped native callback ([`Graph::gpu_scoped`]) or an NPU run ([`Graph::npu`]) is a
//!   region of its own;
//! - otherwise maximal runs of consecutive operations on the same [`GpuLane`] form a region;
//! - a region of copies only is a *copy batch* on the runtime's cached per-lane copy stream;
//! - any other region becomes one native GPU graph whose internal edges come from the hazard
//!   frontier over its operations;
//! - region dependencies come from the frontier over each region's summarized uses.
//!
//! Failure rules, as the seed (`shared/seed/graph.rs`) has them, with its reasons:
//! - before a region runs, every use is made visible to its engine, written-only uses too:
//!   a region that writes part of a buffer must take in another engine's newer bytes first,
//!   or the bytes it does not write stay stale once its engine is the last writer;
//! - any error of a copy batch marks its lane's cached copy stream unhealthy, and later
//!   copy regions on that lane answer `DeviceLost`: after a failed batch nobody knows what
//!   is still queued on, or half done by, the shared stream;
//! - any error a scoped native callback returns is an uncertain failure (answered as
//!   `DeviceLost`): the runtime cannot see into the callback's private streams, so its
//!   graph is quarantined and what its bindings write is poisoned;
//! - poison is per buffer (see [`crate::execution::scheduler`]).

use super::completion::Signal;
use super::dependencies::{Frontier, Hazard, Use, summarize};
use crate::runtime::{Core, RuntimeOwner};
use crate::sync::lock;
use crate::{Access, BufferView, Completion, Engine, Error, KernelContract, Result, Runtime};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Independent GPU scheduling lanes. Memory hazards apply across every lane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GpuLane {
    /// Host-to-device transfers.
    Upload,
    /// Kernels, fills and device-to-device copies.
    #[default]
    Compute,
    /// Device-to-host transfers.
    Download,
}

/// The five queues served by the runtime's workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    /// GPU host-to-device copies.
    GpuUpload = 0,
    /// GPU kernels, fills, device copies, scoped callbacks.
    GpuCompute = 1,
    /// GPU device-to-host copies.
    GpuDownload = 2,
    /// NPU runs.
    Npu = 3,
    /// Host work.
    Host = 4,
}

impl Queue {
    /// All queues in index order.
    pub const ALL: [Queue; 5] = [
        Queue::GpuUpload,
        Queue::GpuCompute,
        Queue::GpuDownload,
        Queue::Npu,
        Queue::Host,
    ];
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Queue::GpuUpload => "GPU Upload",
            Queue::GpuCompute => "GPU Compute",
            Queue::GpuDownload => "GPU Download",
            Queue::Npu => "NPU",
            Queue::Host => "Host",
        }
    }
}

/// What a region lowers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    /// One native GPU graph.
    NativeGraph,
    /// Copies on the cached per-lane copy stream.
    CopyBatch,
    /// A scoped native callback.
    Scoped,
    /// One prepared NPU run.
    NpuRun,
    /// A host callback on the Host queue.
    HostCallback,
}

/// A binding of a scoped native callback: a view and how the callback uses it.
#[derive(Clone, Debug)]
pub struct GpuAccess {
    /// The bytes.
    pub view: BufferView,
    /// How the callback uses them.
    pub access: Access,
}

impl GpuAccess {
    /// A binding of `view` with `access`.
    pub fn new(view: BufferView, access: Access) -> Self {
        Self { view, access }
    }
}

/// Kernel ids, shared by GPU and NPU kernels.
pub(crate) static KERNEL_IDS: AtomicU64 = AtomicU64::new(1);
static GRAPH_IDS: AtomicU64 = AtomicU64::new(1);

/// A loaded GPU kernel with fixed launch dimensions and argument contract.
#[derive(Clone)]
pub struct GpuKernel {
    pub(crate) id: u64,
    pub(crate) entry: Arc<str>,
    pub(crate) raw: crate::gpu::Kernel,
    pub(crate) contract: KernelContract,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) runtime: Arc<RuntimeOwner>,
}

impl std::fmt::Debug for GpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuKernel")
            .field("entry", &self.entry)
            .field("grid", &self.grid)
            .field("block", &self.block)
            .finish()
    }
}

impl GpuKernel {
    pub(crate) fn load(runtime: &Runtime, spec: &crate::kernels::KernelSpec) -> Result<Self> {
        let raw = runtime.inner.device.load_kernel(spec)?;
        let kernel = Self {
            id: KERNEL_IDS.fetch_add(1, Ordering::Relaxed),
            entry: spec.entry.as_str().into(),
            raw,
            contract: spec.contract.clone(),
            grid: spec.grid,
            block: spec.block,
            runtime: runtime.inner.clone(),
        };
        crate::trace::kernel_loaded(
            &runtime.inner.core,
            crate::trace::KernelRecord {
                id: kernel.id,
                entry: &spec.entry,
                code: kernel.raw.code(),
                contract: &spec.contract,
                grid: spec.grid,
                block: spec.block,
                engine: Engine::Gpu,
                npu_groups: &[],
            },
        );
        Ok(kernel)
    }
    /// Fixed invocation contract.
    pub fn contract(&self) -> &KernelContract {
        &self.contract
    }
    /// Entry point name.
    pub fn entry(&self) -> &str {
        &self.entry
    }
    /// Grid dimensions in blocks.
    pub fn grid(&self) -> [u32; 3] {
        self.grid
    }
    /// Block dimensions in threads.
    pub fn block(&self) -> [u32; 3] {
        self.block
    }
}

/// An operation's index in its graph, for diagnostics. Ordering is inferred from access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub(crate) usize);

impl Node {
    /// The index.
    pub fn index(self) -> usize {
        self.0
    }
}

type ScopedGpu = Box<dyn FnMut(&[crate::gpu::View<'_>]) -> Result<()> + Send>;
type HostCallback = Box<dyn FnMut(&mut HostViews<'_>) -> Result<()> + Send>;

/// The bindings of a host callback ([`Graph::host`]) while it runs.
pub struct HostViews<'a> {
    bindings: &'a [(BufferView, Access)],
}

impl HostViews<'_> {
    /// Number of bindings.
    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    /// Whether there are no bindings.
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    fn pointer(&self, index: usize, write: bool) -> Result<(*mut u8, usize)> {
        let (view, access) = self
            .bindings
            .get(index)
            .ok_or_else(|| Error::Message(format!("host callback has no binding {index}")))?;
        if (write && !access.writes()) || (!write && !access.reads()) {
            return Err(Error::Message(format!(
                "host callback binding {index} was declared {access:?}"
            )));
        }
        let base = view.buffer().storage.pointer;
        // SAFETY: `Graph::host` accepted only host-visible buffers; the view is in bounds.
        Ok((unsafe { base.add(view.offset()) }, view.len()))
    }

    /// The bytes of binding `index`, declared `Read` or `ReadWrite`.
    ///
    /// # Errors
    /// [`Error::Message`] for a missing binding or one declared write-only.
    pub fn read(&self, index: usize) -> Result<&[u8]> {
        let (pointer, len) = self.pointer(index, false)?;
        // SAFETY: the scheduler orders every conflicting use around this callback, and
        // `Graph::host` rejected writable aliases between its bindings.
        Ok(unsafe { std::slice::from_raw_parts(pointer, len) })
    }

    /// The bytes of binding `index`, declared `Write` or `ReadWrite`.
    ///
    /// # Errors
    /// [`Error::Message`] for a missing binding or one declared read-only.
    pub fn write(&mut self, index: usize) -> Result<&mut [u8]> {
        let (pointer, len) = self.pointer(index, true)?;
        // SAFETY: as in `read`; `&mut self` prevents two live slices from this value.
        Ok(unsafe { std::slice::from_raw_parts_mut(pointer, len) })
    }
}

enum Description {
    Fill(BufferView, u8),
    Copy(BufferView, BufferView),
    Gpu(GpuKernel, Vec<BufferView>),
    Scoped(Arc<Mutex<ScopedGpu>>, Vec<BufferView>),
    Npu(crate::NpuKernel, Vec<BufferView>),
    Host(Arc<Mutex<HostCallback>>, Vec<(BufferView, Access)>),
}

struct Entry {
    operation: Description,
    uses: Vec<Use>,
    lane: GpuLane,
}

/// A pipeline builder. Each operation declares its placement (lane) and the byte ranges it
/// reads and writes; ordering is inferred from those declarations.
pub struct Graph {
    id: u64,
    runtime: Runtime,
    entries: Vec<Entry>,
}

impl Graph {
    pub(crate) fn new(runtime: Runtime) -> Self {
        Self {
            id: GRAPH_IDS.fetch_add(1, Ordering::Relaxed),
            runtime,
            entries: Vec::new(),
        }
    }

    /// Number of operations added so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no operation was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Process-unique graph id (the trace uses it).
    pub fn id(&self) -> u64 {
        self.id
    }

    fn push(&mut self, operation: Description, uses: Vec<Use>, lane: GpuLane) -> Result<Node> {
        for use_ in &uses {
            if !Arc::ptr_eq(&use_.view.buffer().storage.runtime, &self.runtime.inner) {
                return Err(Error::ForeignRuntime { what: "buffer" });
            }
        }
        let node = Node(self.entries.len());
        crate::trace::graph_op(
            &self.runtime.inner,
            self.id,
            node.0,
            &operation_kind(&operation),
            lane,
            &uses,
        );
        self.entries.push(Entry {
            operation,
            uses,
            lane,
        });
        Ok(node)
    }

    /// Fills `destination` with the byte `value` (on the Compute lane).
    ///
    /// # Errors
    /// [`Error::ForeignRuntime`] for another runtime's buffer.
    pub fn fill(&mut self, destination: BufferView, value: u8) -> Result<Node> {
        destination.gpu()?;
        self.push(
            Description::Fill(destination.clone(), value),
            vec![Use {
                view: destination,
                access: Access::Write,
            }],
            GpuLane::Compute,
        )
    }

    /// Copies `source` to `destination`. The lane follows the placements: host-visible to
    /// GPU-local is Upload, GPU-local to host-visible is Download, anything else Compute.
    ///
    /// # Errors
    /// [`Error::InvalidCopy`] for unequal or overlapping ranges; [`Error::ForeignRuntime`].
    pub fn copy(&mut self, destination: BufferView, source: BufferView) -> Result<Node> {
        let lane = match (
            source.buffer().storage.pointer.is_null(),
            destination.buffer().storage.pointer.is_null(),
        ) {
            (false, true) => GpuLane::Upload,
            (true, false) => GpuLane::Download,
            _ => GpuLane::Compute,
        };
        self.copy_on(destination, source, lane)
    }

    /// Copies on an explicit lane, keeping the same cross-lane hazard checks.
    ///
    /// # Errors
    /// As [`Graph::copy`].
    pub fn copy_on(
        &mut self,
        destination: BufferView,
        source: BufferView,
        lane: GpuLane,
    ) -> Result<Node> {
        destination.gpu()?;
        source.gpu()?;
        if destination.len() != source.len()
            || destination.overlaps(&source)
            || destination.conflicts(&source)
        {
            return Err(Error::InvalidCopy {
                dst_buffer: destination.buffer().id(),
                dst: destination.range(),
                src_buffer: source.buffer().id(),
                src: source.range(),
            });
        }
        self.push(
            Description::Copy(destination.clone(), source.clone()),
            vec![
                Use {
                    view: destination,
                    access: Access::Write,
                },
                Use {
                    view: source,
                    access: Access::Read,
                },
            ],
            lane,
        )
    }

    /// Invokes a GPU kernel; binding count, extents, alignment and writable aliasing are
    /// checked.
    ///
    /// # Errors
    /// [`Error::Binding`] for a rejected binding; [`Error::ForeignRuntime`].
    pub fn gpu(&mut self, kernel: &GpuKernel, bindings: &[BufferView]) -> Result<Node> {
        kernel.contract.check(bindings)?;
        // SAFETY: `check` above rejected every writable alias.
        unsafe { self.gpu_aliasing(kernel, bindings) }
    }

    /// Invokes a GPU kernel permitting writable argument aliases. Extents, alignment,
    /// runtime identity and cross-operation hazards remain checked.
    ///
    /// # Safety
    /// - the kernel must be valid for the overlapping argument ranges supplied: no data race
    ///   between its threads and no unsupported in-place access.
    ///
    /// # Errors
    /// As [`Graph::gpu`], without the aliasing check.
    pub unsafe fn gpu_aliasing(
        &mut self,
        kernel: &GpuKernel,
        bindings: &[BufferView],
    ) -> Result<Node> {
        if !Arc::ptr_eq(&kernel.runtime, &self.runtime.inner) {
            return Err(Error::ForeignRuntime { what: "kernel" });
        }
        kernel.contract.check_extents(bindings)?;
        for (index, binding) in bindings.iter().enumerate() {
            let address = binding.gpu()?.owner().allocation_address()? + binding.offset() as u64;
            kernel.contract.check_alignment(index, address)?;
        }
        let uses = bindings
            .iter()
            .zip(&kernel.contract.bindings)
            .map(|(view, c)| Use {
                view: view.clone(),
                access: c.access,
            })
            .collect();
        self.push(
            Description::Gpu(kernel.clone(), bindings.to_vec()),
            uses,
            GpuLane::Compute,
        )
    }

    /// Integrates owned native GPU work into this graph's hazards and producer
    /// dependencies. The callback runs on a worker, never in `poll`/`wait`, as a region of
    /// its own on the Compute queue.
    ///
    /// # Safety
    /// - the callback retains every private native resource it uses;
    /// - it accesses these views only as declared and synchronizes every stream touching
    ///   them before returning;
    /// - it lets no raw pointer or view escape its scope, and its private storage is not
    ///   reachable outside it;
    /// - it returns an error only for a failure it cannot bound: any error it returns is
    ///   an uncertain failure (the runtime cannot see into its streams), answered as
    ///   [`Error::DeviceLost`] with the callback's error in the message; the graph is then
    ///   quarantined and its written bindings poisoned.
    ///
    /// # Errors
    /// [`Error::ForeignRuntime`].
    pub unsafe fn gpu_scoped(
        &mut self,
        bindings: &[GpuAccess],
        callback: impl FnMut(&[crate::gpu::View<'_>]) -> Result<()> + Send + 'static,
    ) -> Result<Node> {
        for binding in bindings {
            binding.view.gpu()?;
        }
        self.push(
            Description::Scoped(
                Arc::new(Mutex::new(Box::new(callback))),
                bindings.iter().map(|b| b.view.clone()).collect(),
            ),
            bindings
                .iter()
                .map(|b| Use {
                    view: b.view.clone(),
                    access: b.access,
                })
                .collect(),
            GpuLane::Compute,
        )
    }

    /// Invokes an NPU kernel, checking its contract, the alignment of each binding's BO
    /// address, and that each binding lives on the program's device in the memory bank of
    /// the argument's group. Host-only and imported BOs may come from another program
    /// context on the same device and bank.
    ///
    /// # Errors
    /// [`Error::Binding`] (including [`crate::BindingError::Placement`]);
    /// [`Error::Unsupported`] for a binding without an NPU import;
    /// [`Error::ForeignRuntime`].
    pub fn npu(&mut self, kernel: &crate::NpuKernel, bindings: &[BufferView]) -> Result<Node> {
        if !Arc::ptr_eq(&kernel.inner.runtime, &self.runtime.inner) {
            return Err(Error::ForeignRuntime { what: "kernel" });
        }
        kernel.contract().check(bindings)?;
        for (index, (binding, group)) in bindings.iter().zip(&kernel.inner.groups).enumerate() {
            let storage = &binding.buffer().storage;
            let bo = storage.bo.as_ref().ok_or_else(|| {
                Error::Unsupported(format!(
                    "binding {index}: buffer {} has no NPU import (allocate it with Placement::NpuShared)",
                    storage.id
                ))
            })?;
            let address = bo.address().map_err(Error::Message)? + binding.offset() as u64;
            kernel.contract().check_alignment(index, address)?;
            if storage.npu_device != Some(kernel.inner.device)
                || storage.group.map(crate::npu::memory_bank)
                    != Some(crate::npu::memory_bank(*group))
            {
                return Err(crate::BindingError::Placement {
                    index,
                    reason: format!(
                        "buffer {} is on NPU device {:?} group {:?}, the kernel needs device {} group {}",
                        storage.id, storage.npu_device, storage.group, kernel.inner.device, group
                    ),
                }
                .into());
            }
        }
        let uses = bindings
            .iter()
            .zip(&kernel.contract().bindings)
            .map(|(view, c)| Use {
                view: view.clone(),
                access: c.access,
            })
            .collect();
        self.push(
            Description::Npu(kernel.clone(), bindings.to_vec()),
            uses,
            GpuLane::Compute,
        )
    }

    /// Runs `callback` on the Host queue, as a region of its own, ordered by the declared
    /// uses like any other operation (a CUDA host node). Bindings must be host-visible.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a GPU-local binding; [`Error::Binding`] when a written
    /// binding overlaps another; [`Error::ForeignRuntime`].
    pub fn host(
        &mut self,
        bindings: &[GpuAccess],
        callback: impl FnMut(&mut HostViews<'_>) -> Result<()> + Send + 'static,
    ) -> Result<Node> {
        for (index, binding) in bindings.iter().enumerate() {
            if binding.view.buffer().storage.pointer.is_null() {
                return Err(Error::Unsupported(format!(
                    "host callback binding {index}: buffer {} is GPU-local",
                    binding.view.buffer().id()
                )));
            }
        }
        let contract = KernelContract {
            bindings: bindings
                .iter()
                .map(|b| crate::BindingContract::new(b.access, 0, 1))
                .collect(),
            constants: Vec::new(),
        };
        let views: Vec<BufferView> = bindings.iter().map(|b| b.view.clone()).collect();
        contract.check(&views)?;
        self.push(
            Description::Host(
                Arc::new(Mutex::new(Box::new(callback))),
                bindings
                    .iter()
                    .map(|b| (b.view.clone(), b.access))
                    .collect(),
            ),
            bindings
                .iter()
                .map(|b| Use {
                    view: b.view.clone(),
                    access: b.access,
                })
                .collect(),
            GpuLane::Compute,
        )
    }

    /// Lowers the graph into regions, builds native graphs and NPU runs once, and reserves
    /// the runtime's `graph_slots` reusable submission slots.
    ///
    /// # Errors
    /// [`Error::EmptyGraph`]; backend errors from building native work.
    pub fn prepare(self) -> Result<ExecutableGraph> {
        if self.entries.is_empty() {
            return Err(Error::EmptyGraph);
        }
        let owner = &self.runtime.inner;
        let mut regions: Vec<Region> = Vec::new();
        let mut index = 0;
        while index < self.entries.len() {
            let entry = &self.entries[index];
            let single = match &entry.operation {
                Description::Scoped(callback, bindings) => Some((
                    RegionKind::Scoped,
                    Backend::Scoped(callback.clone(), bindings.clone()),
                )),
                Description::Npu(kernel, bindings) => {
                    let arguments = bindings
                        .iter()
                        .map(|view| {
                            let bo = view.buffer().storage.bo.as_ref().ok_or_else(|| {
                                Error::Unsupported("NPU binding lacks an import".into())
                            })?;
                            if view.offset() == 0 && view.len() == bo.len() {
                                Ok(bo.clone())
                            } else {
                                bo.sub(view.len(), view.offset()).map_err(Error::Message)
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let run = crate::npu::PreparedRun::new(
                        &kernel.inner.name,
                        kernel.inner.host,
                        &kernel.inner.contract.constants,
                        arguments,
                        owner.faults.clone(),
                    );
                    Some((RegionKind::NpuRun, Backend::Npu(Mutex::new(run))))
                }
                Description::Host(callback, bindings) => Some((
                    RegionKind::HostCallback,
                    Backend::Host(callback.clone(), bindings.clone()),
                )),
                _ => None,
            };
            if let Some((kind, backend)) = single {
                regions.push(Region {
                    lane: GpuLane::Compute,
                    kind,
                    copy_bytes: 0,
                    backend,
                    uses: entry.uses.clone(),
                    nodes: index..index + 1,
                    internal: Vec::new(),
                    hazards: Vec::new(),
                    dependencies: Vec::new(),
                });
                index += 1;
                continue;
            }
            let start = index;
            let lane = entry.lane;
            while index < self.entries.len()
                && self.entries[index].lane == lane
                && !matches!(
                    self.entries[index].operation,
                    Description::Scoped(..) | Description::Npu(..) | Description::Host(..)
                )
            {
                index += 1;
            }
            let run = &self.entries[start..index];
            let uses: Vec<Use> = run.iter().flat_map(|e| e.uses.iter().cloned()).collect();
            let copy_bytes = run
                .iter()
                .map(|e| match &e.operation {
                    Description::Copy(dst, _) => dst.len(),
                    _ => 0,
                })
                .sum();
            if run
                .iter()
                .all(|e| matches!(e.operation, Description::Copy(..)))
            {
                // Copy batches need hazard scheduling and retained owners, but no native
                // executable graph or per-submission stream.
                let stream = owner.copy_stream(lane)?;
                let copies = run
                    .iter()
                    .map(|e| match &e.operation {
                        Description::Copy(dst, src) => (dst.clone(), src.clone()),
                        _ => unreachable!("all copies"),
                    })
                    .collect();
                regions.push(Region {
                    lane,
                    kind: RegionKind::CopyBatch,
                    copy_bytes,
                    backend: Backend::Copies(stream, copies),
                    uses,
                    nodes: start..index,
                    internal: Vec::new(),
                    hazards: Vec::new(),
                    dependencies: Vec::new(),
                });
                continue;
            }
            let mut stream = owner.device.stream()?;
            stream.set_timed(owner.core.recorder.is_some());
            let mut graph = stream.graph()?;
            let mut nodes = Vec::with_capacity(run.len());
            let mut internal = Vec::new();
            let mut frontier = Frontier::default();
            for (i, entry) in run.iter().enumerate() {
                let hazards = frontier.hazards(i, &entry.uses);
                let mut dependencies: Vec<_> = hazards.iter().map(|h| nodes[h.producer]).collect();
                dependencies.dedup();
                internal.extend(hazards.into_iter().map(|mut h| {
                    h.producer += start;
                    (start + i, h)
                }));
                let node = match &entry.operation {
                    Description::Fill(dst, value) => {
                        graph.fill(&dependencies, &dst.gpu()?, *value)?
                    }
                    Description::Copy(dst, src) => {
                        graph.copy(&dependencies, &dst.gpu()?, &src.gpu()?)?
                    }
                    Description::Gpu(kernel, bindings) => {
                        let views = bindings
                            .iter()
                            .map(BufferView::gpu)
                            .collect::<Result<Vec<_>>>()?;
                        // SAFETY: `Graph::gpu`/`gpu_aliasing` checked the contract; the
                        // prepared graph keeps every bound buffer alive.
                        unsafe {
                            graph.dispatch(
                                &dependencies,
                                &kernel.raw,
                                kernel.grid,
                                kernel.block,
                                &kernel.contract.constants,
                                &views,
                            )?
                        }
                    }
                    Description::Scoped(..) | Description::Npu(..) | Description::Host(..) => {
                        unreachable!("regions of their own")
                    }
                };
                nodes.push(node);
            }
            let executable = graph.finish()?;
            owner
                .core
                .counters
                .native_graphs_prepared
                .fetch_add(1, Ordering::Relaxed);
            regions.push(Region {
                lane,
                kind: RegionKind::NativeGraph,
                copy_bytes,
                backend: Backend::Gpu(Box::new(Mutex::new((stream, executable)))),
                uses,
                nodes: start..index,
                internal,
                hazards: Vec::new(),
                dependencies: Vec::new(),
            });
        }
        let mut frontier = Frontier::default();
        for (index, region) in regions.iter_mut().enumerate() {
            region.uses = summarize(std::mem::take(&mut region.uses));
            region.hazards = frontier.hazards(index, &region.uses);
            region.dependencies = region.hazards.iter().map(|h| h.producer).collect();
            region.dependencies.dedup();
        }
        let uses = summarize(regions.iter().flat_map(|r| r.uses.iter().cloned()));
        let slots = self.runtime.options.graph_slots;
        let parallel = regions
            .iter()
            .enumerate()
            .skip(1)
            .any(|(i, r)| !r.dependencies.contains(&(i - 1)));
        let prepared = Arc::new(Prepared {
            id: self.id,
            quarantined: AtomicBool::new(false),
            signals: (0..slots).map(|_| Signal::new()).collect(),
            occupied: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            runtime: self.runtime.inner.clone(),
            parallel,
            regions,
            uses,
        });
        crate::trace::prepared(&prepared);
        Ok(ExecutableGraph { inner: prepared })
    }
}

fn operation_kind(operation: &Description) -> crate::trace::OpKind {
    use crate::trace::OpKind;
    match operation {
        Description::Fill(_, value) => OpKind::Fill(*value),
        Description::Copy(..) => OpKind::Copy,
        Description::Gpu(kernel, _) => OpKind::Kernel(kernel.id),
        Description::Scoped(..) => OpKind::Scoped,
        Description::Npu(kernel, _) => OpKind::Npu(kernel.inner.id),
        Description::Host(..) => OpKind::Host,
    }
}

pub(crate) struct CopyStream {
    pub stream: crate::gpu::Stream,
    pub healthy: bool,
}

pub(crate) enum Backend {
    Copies(Arc<Mutex<CopyStream>>, Vec<(BufferView, BufferView)>),
    Gpu(Box<Mutex<(crate::gpu::Stream, crate::gpu::GraphExec)>>),
    Scoped(Arc<Mutex<ScopedGpu>>, Vec<BufferView>),
    Npu(Mutex<crate::npu::PreparedRun>),
    Host(Arc<Mutex<HostCallback>>, Vec<(BufferView, Access)>),
}

/// One unit of native work on one queue.
pub(crate) struct Region {
    pub lane: GpuLane,
    pub kind: RegionKind,
    pub copy_bytes: usize,
    pub backend: Backend,
    /// Summarized uses.
    pub uses: Vec<Use>,
    /// The graph operations lowered into this region.
    pub nodes: Range<usize>,
    /// Edges inside a native graph: (consumer node, hazard on producer node).
    pub internal: Vec<(usize, Hazard)>,
    /// Region-level hazards (producer = region index).
    pub hazards: Vec<Hazard>,
    /// Distinct producer regions, ascending.
    pub dependencies: Vec<usize>,
}

impl Region {
    pub fn engine(&self) -> Engine {
        match &self.backend {
            Backend::Gpu(_) | Backend::Scoped(..) | Backend::Copies(..) => Engine::Gpu,
            Backend::Npu(_) => Engine::Npu,
            Backend::Host(..) => Engine::Host,
        }
    }

    pub fn queue(&self) -> Queue {
        match self.engine() {
            Engine::Gpu => Queue::ALL[self.lane as usize],
            Engine::Npu => Queue::Npu,
            Engine::Host => Queue::Host,
        }
    }

    /// Fails with `DeviceLost` when an input is poisoned; nothing ran.
    pub fn check_inputs(&self) -> Result<()> {
        for use_ in &self.uses {
            use_.view.buffer().storage.poisoned()?;
        }
        Ok(())
    }

    /// Runs the region's native work to completion on the calling worker.
    /// Returns the device span where the backend measured one.
    pub fn run(&self, core: &Core) -> Result<Option<crate::gpu::DeviceSpan>> {
        let engine = self.engine();
        let mut span = None;
        for use_ in self.uses.iter().filter(|u| u.access.writes()) {
            // A deferred trace capture may still be hashing what an earlier writer left.
            use_.view.buffer().storage.captures.wait();
        }
        // Every use, written-only ones too (the seed makes each use visible before a region
        // runs): a region that writes part of a buffer must first take in another engine's
        // newer bytes (an NPU write synced back from its buffer object), or the rest of the
        // buffer would keep stale bytes once this engine becomes its last writer.
        for use_ in &self.uses {
            use_.view.buffer().storage.make_visible(engine)?;
        }
        match &self.backend {
            Backend::Copies(stream, copies) => {
                let mut stream = lock(stream);
                if !stream.healthy {
                    return Err(Error::DeviceLost(format!(
                        "{:?} copy stream is unhealthy after an earlier failure",
                        self.lane
                    )));
                }
                let result = (|| {
                    for (dst, src) in copies {
                        stream.stream.copy(&dst.gpu()?, &src.gpu()?)?;
                    }
                    stream.stream.synchronize()
                })();
                // Any failed batch leaves the stream in a state the runtime cannot see into
                // (earlier copies of the batch may be queued or half done), so, as the seed
                // does, every error marks the lane's stream unhealthy, a kernel error too.
                if let Err(error) = &result {
                    stream.healthy = false;
                    crate::trace::copy_stream_unhealthy(core, self.lane, error);
                }
                result?;
                span = stream.stream.last_span();
            }
            Backend::Gpu(pair) => {
                let mut pair = lock(pair);
                let (stream, graph) = &mut *pair;
                stream.launch_and_synchronize(graph.as_mut())?;
                span = stream.last_span();
            }
            Backend::Scoped(callback, bindings) => {
                let views = bindings
                    .iter()
                    .map(BufferView::gpu)
                    .collect::<Result<Vec<_>>>()?;
                lock(callback)(&views).map_err(scoped_failure)?;
            }
            Backend::Npu(run) => lock(run).execute()?,
            Backend::Host(callback, bindings) => lock(callback)(&mut HostViews { bindings })?,
        }
        if self.copy_bytes != 0 {
            core.counters.lane_copy_bytes[self.lane as usize]
                .fetch_add(self.copy_bytes as u64, Ordering::Relaxed);
            core.counters
                .copied_bytes
                .fetch_add(self.copy_bytes as u64, Ordering::Relaxed);
        }
        for use_ in &self.uses {
            if use_.access.writes() {
                lock(&use_.view.buffer().storage.visibility).wrote(engine);
            }
        }
        Ok(span)
    }
}

/// The error of a scoped native callback, as an uncertain failure.
///
/// The runtime cannot see into a callback's private streams: whatever it returns, the
/// runtime cannot know how far its writes got. The seed's contract ("on an uncertain failure
/// return an error; captured resources and bindings are then quarantined together") makes
/// every callback error a device loss, so [`Error::is_device_loss`] quarantines the graph and
/// poisons what the callback writes; the callback's own error stays in the message.
fn scoped_failure(error: Error) -> Error {
    if error.is_device_loss() {
        error
    } else {
        Error::DeviceLost(format!(
            "a scoped native callback failed, its effects are unknown: {error}"
        ))
    }
}

/// A graph after `prepare`: regions, slots and signals.
pub(crate) struct Prepared {
    pub id: u64,
    pub quarantined: AtomicBool,
    pub runtime: Arc<RuntimeOwner>,
    pub parallel: bool,
    pub regions: Vec<Region>,
    pub uses: Vec<Use>,
    /// Whether each slot's submission is still in flight.
    /// Read and written only under the scheduler lock (atomics only to be shared).
    pub occupied: Box<[AtomicBool]>,
    pub signals: Vec<Arc<Signal>>,
}

/// What a region of a prepared graph is, for tools and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// The queue it runs on.
    pub queue: Queue,
    /// What it lowers to.
    pub kind: RegionKind,
    /// The graph operations in it.
    pub nodes: Range<usize>,
    /// Region-level hazards (producer = region index).
    pub hazards: Vec<Hazard>,
    /// Edges between its operations inside a native graph: (consumer node, hazard).
    pub internal: Vec<(usize, Hazard)>,
    /// Bytes copied per run.
    pub copy_bytes: usize,
}

/// A prepared graph with fixed bindings and bounded reusable submission slots.
#[derive(Clone)]
pub struct ExecutableGraph {
    pub(crate) inner: Arc<Prepared>,
}

impl ExecutableGraph {
    fn usable(&self) -> Result<()> {
        if self.inner.quarantined.load(Ordering::Acquire) {
            return Err(Error::DeviceLost(format!(
                "graph {} is quarantined after a native failure",
                self.inner.id
            )));
        }
        for use_ in &self.inner.uses {
            use_.view.buffer().storage.poisoned()?;
        }
        Ok(())
    }

    /// Enqueues without waiting for a device. Conflicting earlier work is ordered first.
    ///
    /// # Errors
    /// [`Error::Busy`] when the runtime's capacity or this graph's slots are exhausted or a
    /// live host mapping conflicts; [`Error::DeviceLost`] when the graph is quarantined or
    /// a buffer it uses is poisoned.
    pub fn submit(&self) -> Result<Completion> {
        self.submit_after(&[])
    }

    /// Submits to run after `producers` (completions of this runtime) succeed. A failed or
    /// cancelled producer cancels this submission, even when no byte range overlaps. A
    /// producer whose runtime is gone is accepted only if it already completed.
    ///
    /// # Errors
    /// As [`ExecutableGraph::submit`]; [`Error::ForeignRuntime`] for another runtime's
    /// completion; [`Error::Message`] for an orphaned incomplete producer.
    pub fn submit_after(&self, producers: &[Completion]) -> Result<Completion> {
        let result = self.try_submit(producers);
        if let Err(error) = &result {
            crate::trace::submit_refused(&self.inner, error);
        }
        result
    }

    fn try_submit(&self, producers: &[Completion]) -> Result<Completion> {
        self.usable()?;
        let core = &self.inner.runtime.core;
        for producer in producers {
            match producer.core.upgrade() {
                Some(owner) if !Arc::ptr_eq(core, &owner) => {
                    return Err(Error::ForeignRuntime { what: "completion" });
                }
                Some(_) => {}
                None if !producer.is_complete() => {
                    return Err(Error::Message(
                        "orphaned incomplete producer: its runtime was dropped".into(),
                    ));
                }
                None => {}
            }
        }
        let mut scheduler = lock(&core.state);
        if scheduler.occupied() >= scheduler.capacity {
            return Err(Error::Busy(format!(
                "runtime submission capacity of {} is exhausted; wait for or drop completions",
                scheduler.capacity
            )));
        }
        for use_ in &self.inner.uses {
            use_.view
                .buffer()
                .storage
                .host_conflict(&use_.view.range(), use_.access)?;
        }
        let occupied = &self.inner.occupied;
        let signals = &self.inner.signals;
        let mut slot = super::completion::claim_slot(occupied, signals);
        // A retired submission's slot is free once the worker that published its completion
        // drops its reference, a moment after a waiter may already have returned: when no
        // `Completion` holds such a slot, wait for that drop rather than answer a spurious
        // `Busy` to a submit right after `wait` (bounded, in case the worker is descheduled
        // for long). A slot a caller's `Completion` holds answers `Busy` at once.
        if slot.is_none() && signals.iter().any(|s| s.settling()) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while slot.is_none()
                && signals.iter().any(|s| s.settling())
                && std::time::Instant::now() < deadline
            {
                std::thread::yield_now();
                slot = super::completion::claim_slot(occupied, signals);
            }
        }
        let slot = slot.ok_or_else(|| {
                Error::Busy(format!(
                    "all {} slots of graph {} are occupied; drop completed completions or reserve more graph_slots",
                    occupied.len(),
                    self.inner.id
                ))
            })?;
        // Registered only now that the submit cannot fail otherwise (a registered use makes
        // conflicting host maps `Busy`), each checked again under its lock: a host mapping
        // made since the check above refuses the submit, which withdraws what it registered.
        let submission = scheduler.peek_submission();
        for (index, use_) in self.inner.uses.iter().enumerate() {
            let storage = &use_.view.buffer().storage;
            if let Err(error) = storage.begin_device_use(submission, use_.view.range(), use_.access)
            {
                for registered in &self.inner.uses[..index] {
                    registered.view.buffer().storage.end_device_use(submission);
                }
                occupied[slot].store(false, Ordering::Relaxed);
                return Err(error);
            }
        }
        let numbered = scheduler.next_submission();
        debug_assert_eq!(numbered, submission);
        self.inner.signals[slot].reset(submission);
        let completion = Completion::new(
            self.inner.signals[slot].clone(),
            Arc::downgrade(core),
            submission,
        );
        crate::trace::submitted(&self.inner, submission, slot, producers);
        let wake = scheduler.enqueue(self.inner.clone(), submission, slot, producers.to_vec());
        drop(scheduler);
        core.wake(wake);
        Ok(completion)
    }

    /// Number of prepared regions (a native-graph region may hold many kernels).
    pub fn regions(&self) -> usize {
        self.inner.regions.len()
    }

    /// Whether some region does not depend on its predecessor (regions can overlap).
    pub fn parallel(&self) -> bool {
        self.inner.parallel
    }

    /// Whether a native failure quarantined this graph.
    pub fn quarantined(&self) -> bool {
        self.inner.quarantined.load(Ordering::Acquire)
    }

    /// Process-unique id (the id of the graph it was prepared from).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Describes each region: queue, kind, operations and hazards.
    pub fn describe(&self) -> Vec<RegionInfo> {
        self.inner
            .regions
            .iter()
            .map(|r| RegionInfo {
                queue: r.queue(),
                kind: r.kind,
                nodes: r.nodes.clone(),
                hazards: r.hazards.clone(),
                internal: r.internal.clone(),
                copy_bytes: r.copy_bytes,
            })
            .collect()
    }
}
