//! Native graphs: the builder of memset, memcpy and kernel nodes, and the executable graph.

use super::api::{self, HipResult};
use super::context::Context;
use super::kernel::HipKernel;
use super::memory::{allocation, device_pointer};
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{KernelArguments, Nodes, kernel_params, owned_kernel};
use crate::gpu::{GraphExec, GraphNode, Kernel, NativeGraphBuilder, NativeGraphExec, View};
use hip_runtime_sys as sys;
use std::any::Any;
use std::sync::Arc;

/// A graph under construction (`hipGraphCreate`), destroyed on drop.
pub(super) struct HipGraphBuilder {
    context: Arc<Context>,
    raw: sys::hipGraph_t,
    nodes: Nodes<sys::hipGraphNode_t>,
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
    /// A builder of the empty graph `raw`, owned from here.
    pub(super) fn new(context: Arc<Context>, raw: sys::hipGraph_t) -> Self {
        Self {
            context,
            raw,
            nodes: Nodes::default(),
        }
    }

    /// Adds the node made by `add` after `dependencies` (an empty node when `empty`).
    fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::hipGraph_t, &[sys::hipGraphNode_t]) -> HipResult<sys::hipGraphNode_t>,
    ) -> Result<GraphNode> {
        let deps = self.nodes.dependencies(dependencies)?;
        self.context.enter()?;
        let node = if empty {
            api::graph_add_empty(self.raw, &deps)
        } else {
            add(self.raw, &deps)
        }
        .map_err(|e| self.context.error(e))?;
        Ok(self.nodes.push(node, dependencies))
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
        }))
    }
}

/// An instantiated graph (`hipGraphInstantiateWithFlags`), destroyed on drop.
pub(super) struct HipGraphExec {
    pub(super) context: Arc<Context>,
    pub(super) raw: sys::hipGraphExec_t,
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
