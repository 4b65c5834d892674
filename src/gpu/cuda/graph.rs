//! Native graphs: the builder of memset, memcpy, kernel and event-record nodes, and the
//! executable graph.

use super::api;
use super::context::Context;
use super::error::CuResult;
use super::kernel::CudaKernel;
use super::memory::allocation;
use crate::gpu::{
    GraphExec, GraphNode, Kernel, NativeGraphBuilder, NativeGraphExec, View, foreign_object,
};
use crate::{Error, Result};
use cudarc::driver::sys;
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

/// The event pair that a native graph's event-record nodes record: created with the
/// builder, owned by the executable graph, destroyed after it.
pub(super) struct GraphEvents {
    pub(super) context: Arc<Context>,
    pub(super) start: sys::CUevent,
    pub(super) end: sys::CUevent,
}

// SAFETY: event handles may be used from any thread with the context current.
unsafe impl Send for GraphEvents {}

impl GraphEvents {
    /// No events: an untimed graph.
    pub(super) fn none(context: Arc<Context>) -> Self {
        Self {
            context,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
        }
    }

    /// Two timing events. The context is current.
    pub(super) fn new(context: Arc<Context>) -> Result<Self> {
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

pub(super) struct CudaGraphBuilder {
    pub(super) context: Arc<Context>,
    pub(super) raw: sys::CUgraph,
    /// The operation nodes, by [`GraphNode`] index.
    pub(super) nodes: Vec<sys::CUgraphNode>,
    /// Whether each operation node has a dependent (the leaves have none).
    pub(super) has_dependents: Vec<bool>,
    /// The timing events of the start and end event-record nodes.
    pub(super) events: GraphEvents,
    /// The start event-record node: every root depends on it.
    pub(super) start_node: sys::CUgraphNode,
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
    /// The driver nodes of `dependencies`, each of which must precede the new node.
    pub(super) fn dependencies(&self, dependencies: &[GraphNode]) -> Result<Vec<sys::CUgraphNode>> {
        let index = self.nodes.len();
        dependencies
            .iter()
            .map(|d| {
                self.nodes.get(d.0).copied().ok_or_else(|| {
                    Error::Message(format!(
                        "graph node {index} depends on node {} that does not precede it",
                        d.0
                    ))
                })
            })
            .collect()
    }

    /// Adds the node made by `add` after `dependencies` (an empty node instead when `empty`:
    /// the driver refuses zero-byte memsets and copies).
    pub(super) fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::CUgraph, &[sys::CUgraphNode]) -> CuResult<sys::CUgraphNode>,
    ) -> Result<GraphNode> {
        let mut deps = self.dependencies(dependencies)?;
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
        for dependency in dependencies {
            self.has_dependents[dependency.0] = true;
        }
        self.nodes.push(node);
        self.has_dependents.push(false);
        Ok(GraphNode(self.nodes.len() - 1))
    }
}

/// One side of a 1-D memcpy node: pinned host memory by host pointer, else device memory.
pub(super) fn memcpy_side(view: &View<'_>) -> (sys::CUmemorytype, *mut c_void, sys::CUdeviceptr) {
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
        let kernel = kernel
            .as_any()
            .downcast_ref::<CudaKernel>()
            .filter(|k| Arc::ptr_eq(&k.context, &self.context))
            .ok_or_else(|| foreign_object("kernel"))?;
        for view in views {
            allocation(&self.context, view)?;
        }
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "kernel {}: {} constant bytes are not whole 4-byte words (the CUDA parameter ABI)",
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
        // The parameter values; the driver copies them in cuGraphAddKernelNode.
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
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: kernel.function,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: 0,
            kernelParams: if parameters.is_empty() {
                std::ptr::null_mut()
            } else {
                parameters.as_mut_ptr()
            },
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.context.enter()?;
        // The end event-record node waits for every leaf (the start node in an empty graph).
        let mut leaves: Vec<sys::CUgraphNode> = self
            .nodes
            .iter()
            .zip(&self.has_dependents)
            .filter(|(_, has)| !**has)
            .map(|(node, _)| *node)
            .collect();
        if leaves.is_empty() {
            leaves.push(self.start_node);
        }
        if !self.events.end.is_null() {
            api::graph_add_event_record(self.raw, &leaves, self.events.end)
                .map_err(|e| self.context.error(e))?;
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
        Ok(Box::new(CudaGraphExec {
            context: self.context.clone(),
            raw,
            events,
        }))
    }
}

pub(super) struct CudaGraphExec {
    pub(super) context: Arc<Context>,
    pub(super) raw: sys::CUgraphExec,
    /// Recorded by the graph's start and end nodes; dropped (destroyed) after `raw`.
    pub(super) events: GraphEvents,
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
