//! Native graphs: the builder of memset, memcpy, kernel and event-record nodes, and the
//! executable graph.
//!
//! A timed graph's region is bracketed on the device. Where it launches a built-in kernel (whose
//! module holds hrx's timing kernels, [`super::timing`]) and kernel times do not come from
//! CUPTI, by two of those kernels: a one-thread start marker before every root and the
//! collector after every leaf, each reading `%globaltimer` (the region ends with its leaves
//! where they timed themselves); otherwise (CUPTI, no built-in kernel, the PTX of an older
//! build) by a start and an end event-record node. The markers are what make the graph's first kernels measurable like the others (a
//! root is counted from the start marker as a dependent is from what it waits on,
//! [`crate::gpu::op_times`]), and they cost the graph less: on the H200 a chain of two
//! rgb_to_gray-sized kernels took 20.4-20.6 µs from launch to synchronize untimed, 23.0-24.5
//! µs between event-record nodes and 21.8-22.4 µs between the markers; the event pair's span
//! exceeded the kernels' own by 3.3-3.7 µs, the markers' by 1.4 µs (BENCHMARKS.md, session 29,
//! `scripts/device/s29-events.cu`).

use super::activity::Cupti;
use super::api;
use super::context::Context;
use super::error::CuResult;
use super::kernel::CudaKernel;
use super::memory::allocation;
use super::timing::KernelClock;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{KernelArguments, Nodes, kernel_params, owned_kernel};
use crate::gpu::op_times::GraphShape;
use crate::gpu::{GraphExec, GraphNode, Kernel, NativeGraphBuilder, NativeGraphExec, View};
use crate::{Error, Result};
use cudarc::driver::sys;
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

/// The event pair that a native graph's event-record nodes record: created with the
/// builder, owned by the executable graph, destroyed after it.
pub(super) struct GraphEvents {
    context: Arc<Context>,
    pub(super) start: sys::CUevent,
    pub(super) end: sys::CUevent,
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

/// A graph under construction (`cuGraphCreate`), destroyed on drop; when timed, with a start
/// event-record node or (self-timed built-in kernels) a start marker before every root.
pub(super) struct CudaGraphBuilder {
    context: Arc<Context>,
    raw: sys::CUgraph,
    /// The operation nodes.
    nodes: Nodes<sys::CUgraphNode>,
    /// The timing events of the start and end event-record nodes.
    events: GraphEvents,
    /// The start event-record node: every root depends on it. A self-timing graph adds its
    /// start (marker or event) once built, before its roots ([`CudaGraphBuilder::finish`]).
    start_node: sys::CUgraphNode,
    /// A self-timing graph's start marker and the collector of its module, from the first
    /// built-in kernel whose PTX has one (`None`: the graph keeps its start event).
    mark: Option<(sys::CUfunction, sys::CUfunction)>,
    /// With kernel times: the session, and each operation node's CUPTI id (`None`: an
    /// empty node, which does no work).
    cupti: Option<&'static Cupti>,
    node_ids: Vec<Option<u64>>,
    /// A timed graph without CUPTI: its start marker's and its built-in kernels' timed
    /// entries' lines ([`super::timing`]).
    clock: Option<KernelClock>,
    /// Whether built-in kernels launch their timed entries (else their plain ones).
    timed_entries: bool,
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
    /// A builder of the empty graph `raw`, owned from here (dropping the builder destroys the
    /// graph and the events); `timed` brackets it (module docs; without `cupti` the graph's
    /// start comes once it is built) and, without `cupti`, launches built-in kernels' timed
    /// entries when `builtin_times`. The context is current.
    ///
    /// # Errors
    /// A mapped driver error.
    pub(super) fn new(
        context: Arc<Context>,
        raw: sys::CUgraph,
        timed: bool,
        cupti: Option<&'static Cupti>,
        builtin_times: bool,
    ) -> Result<Self> {
        let marked = timed && cupti.is_none();
        let mut builder = Self {
            events: GraphEvents::none(context.clone()),
            context: context.clone(),
            raw,
            nodes: Nodes::default(),
            start_node: std::ptr::null_mut(),
            mark: None,
            clock: marked.then(|| KernelClock::new(context.clone())),
            timed_entries: builtin_times,
            cupti,
            node_ids: Vec::new(),
        };
        if timed && !marked {
            builder.events = GraphEvents::new(builder.context.clone())?;
            builder.start_node = api::graph_add_event_record(raw, &[], builder.events.start)
                .map_err(|e| builder.context.error(e))?;
        }
        Ok(builder)
    }

    /// Adds the node made by `add` after `dependencies` (an empty node instead when `empty`:
    /// the driver refuses zero-byte memsets and copies).
    fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::CUgraph, &[sys::CUgraphNode]) -> CuResult<sys::CUgraphNode>,
    ) -> Result<GraphNode> {
        let mut deps = self.nodes.dependencies(dependencies)?;
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
        if let Some(cupti) = self.cupti {
            self.node_ids
                .push((!empty).then(|| cupti.register_node(node)).flatten());
        }
        Ok(self.nodes.push(node, dependencies))
    }

    /// The start of a timed graph without CUPTI, before every root: its start marker where it
    /// launches a built-in kernel whose PTX has the marker (then `true`), else a start
    /// event-record node and the end's event. Other graphs got theirs when the builder was
    /// made. The context is current.
    fn add_start(&mut self) -> Result<bool> {
        let Some(clock) = &mut self.clock else {
            return Ok(false);
        };
        let roots = self.nodes.roots();
        let error = |e| self.context.error(e);
        let start = match self.mark {
            Some((mark, collect)) => {
                let mut lines = clock.next_lines(collect)?;
                let mut pointers: [*mut c_void; 1] = [(&raw mut lines).cast()];
                let params = super::timing::one_block(mark, 1, &mut pointers);
                // SAFETY: `hrx_time_mark_v1`'s one parameter, pointing at a live u64 for the
                // call (the driver copies it); the lines live as long as the executable graph.
                let node =
                    unsafe { api::graph_add_kernel(self.raw, &[], &params) }.map_err(error)?;
                clock.add_node(super::timing::MARK_NODE);
                node
            }
            _ => {
                self.events = GraphEvents::new(self.context.clone())?;
                self.start_node =
                    api::graph_add_event_record(self.raw, &[], self.events.start).map_err(error)?;
                self.start_node
            }
        };
        api::graph_add_dependencies(self.raw, start, &roots).map_err(error)?;
        Ok(self.start_node.is_null())
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
        let kernel = owned_kernel(kernel, |k: &CudaKernel| {
            Arc::ptr_eq(&k.context, &self.context)
        })?;
        for view in views {
            allocation(&self.context, view)?;
        }
        // The parameter values; the driver copies them in cuGraphAddKernelNode.
        let arguments = KernelArguments::new(&kernel.entry, kernel.parameters, constants, views)?;
        let mut parameters = arguments.pointers();
        // A timed graph launches a built-in kernel's timed entry: one more parameter, its
        // node's lines.
        let mut lines: sys::CUdeviceptr = 0;
        let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
        // A slowed kernel (a test of a regression gate) launches its slowed entry, timed where
        // the timed entry would be (null lines: untimed), then its percent.
        let mut percent = kernel.slowed.map_or(0, |s| s.percent);
        let function = match (&mut self.clock, kernel.timed, kernel.slowed) {
            (_, _, Some(slowed)) if threads > u64::from(slowed.max_threads) => {
                return Err(Error::Unsupported(format!(
                    "kernel {}: a block of {threads} threads is larger than its slowed build \
                     allows ({})",
                    kernel.entry, slowed.max_threads
                )));
            }
            (clock, timed, Some(slowed)) => {
                if let (Some(clock), Some(timed), true) = (clock, timed, self.timed_entries) {
                    self.context.enter()?;
                    lines = clock.next_lines(timed.collect)?;
                }
                parameters.push((&raw mut lines).cast());
                parameters.push((&raw mut percent).cast());
                slowed.function
            }
            (Some(clock), Some(timed), None)
                if self.timed_entries && threads <= u64::from(timed.max_threads) =>
            {
                self.context.enter()?;
                lines = clock.next_lines(timed.collect)?;
                parameters.push((&raw mut lines).cast());
                timed.function
            }
            _ => kernel.function,
        };
        // Timed or plain, its module's start marker can bracket the graph.
        if let (Some(_), Some(timed)) = (&self.clock, kernel.timed) {
            self.mark = self.mark.or(timed.mark.map(|m| (m, timed.collect)));
        }
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: function,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: 0,
            kernelParams: kernel_params(&mut parameters),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        let node = self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })?;
        if lines != 0
            && let Some(clock) = &mut self.clock
        {
            clock.add_node(node.0);
        }
        Ok(node)
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.context.enter()?;
        let mut leaves = self.nodes.leaves();
        let marked = self.add_start()?;
        if marked {
            // The collectors read the clock after the leaves: the region's end.
            if let Some(clock) = &self.clock {
                clock.add_collectors(self.raw, &leaves)?;
            }
        } else if !self.events.end.is_null() {
            // The end event-record node waits for every leaf (the start node in an empty
            // graph).
            if leaves.is_empty() {
                leaves.push(self.start_node);
            }
            let end = api::graph_add_event_record(self.raw, &leaves, self.events.end)
                .map_err(|e| self.context.error(e))?;
            // The timed nodes' collectors run after the end event: outside the region's time.
            if let Some(clock) = &self.clock {
                clock.add_collectors(self.raw, &[end])?;
            }
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
        // A timed graph's operation times are counted from what each waits on (`op_times`).
        let shape = (marked || !events.start.is_null()).then(|| Arc::new(self.nodes.shape()));
        Ok(Box::new(CudaGraphExec {
            context: self.context.clone(),
            raw,
            marked,
            shape,
            events,
            node_ids: std::mem::take(&mut self.node_ids).into(),
            clock: self.clock.take().filter(|c| !c.is_empty()).map(Arc::new),
        }))
    }
}

/// An instantiated graph (`cuGraphInstantiateWithFlags`) and its timing events, destroyed on
/// drop.
pub(super) struct CudaGraphExec {
    pub(super) context: Arc<Context>,
    pub(super) raw: sys::CUgraphExec,
    /// Recorded by the graph's start and end nodes; dropped (destroyed) after `raw`.
    pub(super) events: GraphEvents,
    /// With kernel times: each operation node's CUPTI id, by [`GraphNode`] index (empty
    /// without).
    pub(super) node_ids: Arc<[Option<u64>]>,
    /// Its built-in kernels' times, where it launches timed entries ([`super::timing`]).
    pub(super) clock: Option<Arc<KernelClock>>,
    /// Its dependencies, when timed: operation times run from what each waits on.
    pub(super) shape: Option<Arc<GraphShape>>,
    /// Whether its region is bracketed by its start marker and its collectors' reading
    /// rather than by events (module docs): its clock's launch slots hold the region's span.
    pub(super) marked: bool,
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
