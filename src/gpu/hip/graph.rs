//! Native graphs: the builder of memset, memcpy and kernel nodes, and the executable graph.

use super::api::{self, HipResult};
use super::context::Shared;
use super::kernel::HipKernel;
use super::memory::{allocation, device_pointer};
use crate::gpu::{
    GraphExec, GraphNode, Kernel, NativeGraphBuilder, NativeGraphExec, View, foreign_object,
};
use crate::{Error, Result};
use hip_runtime_sys as sys;
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

pub(super) struct HipGraphBuilder {
    pub(super) shared: Arc<Shared>,
    pub(super) raw: sys::hipGraph_t,
    pub(super) nodes: Vec<sys::hipGraphNode_t>,
}

// SAFETY: mutated only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphBuilder {}

impl Drop for HipGraphBuilder {
    fn drop(&mut self) {
        if !self.raw.is_null()
            && self.shared.enter_for_drop()
            && let Err(error) = api::graph_destroy(self.raw)
        {
            self.shared.record(error);
        }
    }
}

impl HipGraphBuilder {
    /// Adds the node made by `add` after `dependencies` (an empty node when `empty`).
    pub(super) fn add(
        &mut self,
        dependencies: &[GraphNode],
        empty: bool,
        add: impl FnOnce(sys::hipGraph_t, &[sys::hipGraphNode_t]) -> HipResult<sys::hipGraphNode_t>,
    ) -> Result<GraphNode> {
        let index = self.nodes.len();
        let deps = dependencies
            .iter()
            .map(|d| {
                self.nodes.get(d.0).copied().ok_or_else(|| {
                    Error::Message(format!(
                        "graph node {index} depends on node {} that does not precede it",
                        d.0
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.shared.enter()?;
        let node = if empty {
            api::graph_add_empty(self.raw, &deps)
        } else {
            add(self.raw, &deps)
        }
        .map_err(|e| self.shared.error(e))?;
        self.nodes.push(node);
        Ok(GraphNode(index))
    }
}

impl NativeGraphBuilder for HipGraphBuilder {
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode> {
        allocation(&self.shared, dst)?;
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
        allocation(&self.shared, dst)?;
        allocation(&self.shared, src)?;
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
        let kernel = kernel
            .as_any()
            .downcast_ref::<HipKernel>()
            .filter(|k| Arc::ptr_eq(&k.shared, &self.shared))
            .ok_or_else(|| foreign_object("kernel"))?;
        for view in views {
            allocation(&self.shared, view)?;
        }
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "kernel {}: {} constant bytes are not whole 4-byte words (the parameter ABI)",
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
            kernelParams: if parameters.is_empty() {
                std::ptr::null_mut()
            } else {
                parameters.as_mut_ptr()
            },
            sharedMemBytes: 0,
        };
        // SAFETY: one pointer per parameter of the ABI, each to a live u64 or u32 that
        // outlives the call; the caller guarantees the views' memory outlives every launch.
        self.add(dependencies, false, |graph, deps| unsafe {
            api::graph_add_kernel(graph, deps, &params)
        })
    }

    fn finish(mut self: Box<Self>) -> Result<GraphExec> {
        self.shared.enter()?;
        let instantiated = api::graph_instantiate(self.raw);
        let graph = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        if let Err(error) = api::graph_destroy(graph) {
            self.shared.record(error);
        }
        let raw = instantiated.map_err(|e| self.shared.error(e))?;
        Ok(Box::new(HipGraphExec {
            shared: self.shared.clone(),
            raw,
        }))
    }
}

pub(super) struct HipGraphExec {
    pub(super) shared: Arc<Shared>,
    pub(super) raw: sys::hipGraphExec_t,
}

// SAFETY: launched only through `&mut self`; handles are thread-agnostic.
unsafe impl Send for HipGraphExec {}

impl Drop for HipGraphExec {
    fn drop(&mut self) {
        if self.shared.enter_for_drop()
            && let Err(error) = api::graph_exec_destroy(self.raw)
        {
            self.shared.record(error);
        }
    }
}

impl NativeGraphExec for HipGraphExec {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
