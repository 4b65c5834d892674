//! Native graphs: the builder of memset, memcpy, kernel and (with kernel times) event-record
//! nodes, and the executable graph.

use super::api::{self, HipResult};
use super::context::Context;
use super::kernel::HipKernel;
use super::memory::{allocation, device_pointer};
use super::timing::{TimedOp, wire_timed};
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{KernelArguments, Nodes, kernel_params, owned_kernel};
use crate::gpu::{GraphExec, GraphNode, Kernel, NativeGraphBuilder, NativeGraphExec, View};
use hip_runtime_sys as sys;
use std::any::Any;
use std::sync::Arc;

/// With kernel times: the event pair of each timed operation node of a graph, created with
/// the builder, owned by the executable graph and by the stream that launched it until that
/// stream synchronized, destroyed by the last of them.
pub(super) struct OpEvents {
    context: Arc<Context>,
    /// By [`GraphNode`] index, in the order added (empty nodes, which do no work, have none).
    pub(super) ops: Vec<TimedOp<sys::hipEvent_t>>,
    /// Events of operations that failed to be added: never read, destroyed with the rest.
    unread: Vec<sys::hipEvent_t>,
}

// SAFETY: event handles may be used from any thread with the device current; read-only once
// shared.
unsafe impl Send for OpEvents {}
// SAFETY: as above.
unsafe impl Sync for OpEvents {}

impl Drop for OpEvents {
    fn drop(&mut self) {
        if (self.ops.is_empty() && self.unread.is_empty()) || !self.context.enter_for_drop() {
            return;
        }
        let read = self.ops.iter().flat_map(|op| [op.before, op.after]);
        for event in read.chain(self.unread.iter().copied()) {
            if let Err(error) = api::event_destroy(event) {
                self.context.record(error);
            }
        }
    }
}

/// A graph under construction (`hipGraphCreate`), destroyed on drop; with kernel times, each
/// operation node between two event-record nodes.
pub(super) struct HipGraphBuilder {
    context: Arc<Context>,
    raw: sys::hipGraph_t,
    /// The operation nodes, or with kernel times the event-record node after each timed one
    /// (what its dependents wait for).
    nodes: Nodes<sys::hipGraphNode_t>,
    /// With kernel times, the timed operations' events.
    events: Option<OpEvents>,
}

// SAFETY: mutated only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphBuilder {}

impl Drop for HipGraphBuilder {
    fn drop(&mut self) {
        if !self.raw.is_null()
            && self.context.enter_for_drop()
            && let Err(error) = api::graph_destroy(self.raw)
        {
            self.context.record(error);
        }
    }
}

impl HipGraphBuilder {
    /// A builder of the empty graph `raw`, owned from here; `kernel_times` times each
    /// operation node with event-record nodes (none are added without).
    pub(super) fn new(context: Arc<Context>, raw: sys::hipGraph_t, kernel_times: bool) -> Self {
        Self {
            events: kernel_times.then(|| OpEvents {
                context: context.clone(),
                ops: Vec::new(),
                unread: Vec::new(),
            }),
            context,
            raw,
            nodes: Nodes::default(),
        }
    }

    /// Adds the node made by `add` after `dependencies` (an empty node when `empty`); with
    /// kernel times, a non-empty one between two event-record nodes
    /// ([`wire_timed`]), with its events.
    fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::hipGraph_t, &[sys::hipGraphNode_t]) -> HipResult<sys::hipGraphNode_t>,
    ) -> Result<GraphNode> {
        let deps = self.nodes.dependencies(dependencies)?;
        self.context.enter()?;
        let raw = self.raw;
        let mut timed = None;
        let node = match &mut self.events {
            _ if empty => api::graph_add_empty(raw, &deps),
            None => add(raw, &deps),
            Some(events) => {
                let before = api::event_create().map_err(|e| self.context.error(e))?;
                let after = api::event_create().map_err(|e| {
                    if let Err(error) = api::event_destroy(before) {
                        self.context.record(error);
                    }
                    self.context.error(e)
                })?;
                let record = |deps: &[_], event| api::graph_add_event_record(raw, deps, event);
                let wired = wire_timed(&deps, (before, after), record, |deps| add(raw, deps));
                match wired {
                    Ok(_) => timed = Some((before, after)),
                    // A record node added before the failure may still use them.
                    Err(_) => events.unread.extend([before, after]),
                }
                wired
            }
        }
        .map_err(|e| self.context.error(e))?;
        let added = self.nodes.push(node, dependencies);
        if let (Some(events), Some((before, after))) = (&mut self.events, timed) {
            events.ops.push(TimedOp {
                index: added.0,
                before,
                after,
            });
        }
        Ok(added)
    }
}

impl NativeGraphBuilder for HipGraphBuilder {
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode> {
        allocation(&self.context, dst)?;
        let params = sys::hipMemsetParams {
            dst: device_pointer(dst),
            elementSize: 1,
            height: 1,
            pitch: dst.len(),
            value: u32::from(value),
            width: dst.len(),
        };
        // SAFETY: the view is in bounds; the prepared graph keeps its buffer alive.
        self.add(dependencies, dst.is_empty(), |graph, deps| unsafe {
            api::graph_add_memset(graph, deps, &params)
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
        let (dst, src) = (device_pointer(dst), device_pointer(src));
        // SAFETY: both views are in bounds; the prepared graph keeps their buffers alive.
        self.add(dependencies, len == 0, |graph, deps| unsafe {
            api::graph_add_memcpy(graph, deps, dst, src, len)
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
        let kernel = owned_kernel(kernel, |k: &HipKernel| {
            Arc::ptr_eq(&k.context, &self.context)
        })?;
        for view in views {
            allocation(&self.context, view)?;
        }
        let arguments = KernelArguments::new(&kernel.entry, kernel.parameters, constants, views)?;
        let mut parameters = arguments.pointers();
        let dim = |d: [u32; 3]| sys::dim3 {
            x: d[0],
            y: d[1],
            z: d[2],
        };
        let params = sys::hipKernelNodeParams {
            blockDim: dim(block),
            extra: std::ptr::null_mut(),
            func: kernel.function.cast(),
            gridDim: dim(grid),
            kernelParams: kernel_params(&mut parameters),
            sharedMemBytes: 0,
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.context.enter()?;
        let instantiated = api::graph_instantiate(self.raw);
        let graph = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        if let Err(error) = api::graph_destroy(graph) {
            self.context.record(error);
        }
        let raw = instantiated.map_err(|e| self.context.error(e))?;
        Ok(Box::new(HipGraphExec {
            context: self.context.clone(),
            raw,
            events: self.events.take().map(Arc::new),
        }))
    }
}

/// An instantiated graph (`hipGraphInstantiateWithFlags`), destroyed on drop.
pub(super) struct HipGraphExec {
    pub(super) context: Arc<Context>,
    pub(super) raw: sys::hipGraphExec_t,
    /// With kernel times, the events its record nodes record (destroyed after `raw`, or after
    /// the stream that launched it synchronized).
    pub(super) events: Option<Arc<OpEvents>>,
}

// SAFETY: launched only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphExec {}

impl Drop for HipGraphExec {
    fn drop(&mut self) {
        if self.context.enter_for_drop()
            && let Err(error) = api::graph_exec_destroy(self.raw)
        {
            self.context.record(error);
        }
    }
}

impl NativeGraphExec for HipGraphExec {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
