//! Streams: asynchronous copies, graph launches, and the timing of each synchronized batch.

use super::api;
use super::context::Context;
use super::graph::{HipGraphBuilder, HipGraphExec};
use super::memory::{allocation, device_pointer};
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{owned_graph, span_ending_at};
use crate::gpu::{DeviceSpan, NativeGraphBuilder, NativeGraphExec, NativeStream, View};
use hip_runtime_sys as sys;
use std::sync::Arc;

/// A non-blocking stream with the event pair that times each batch between synchronizes.
pub(super) struct HipStream {
    context: Arc<Context>,
    raw: sys::hipStream_t,
    start: sys::hipEvent_t,
    end: sys::hipEvent_t,
    /// Whether work was enqueued (and `start` recorded) since the last synchronize.
    open: bool,
    last: Option<DeviceSpan>,
}

// SAFETY: stream and event handles may be used from any thread with the device current.
unsafe impl Send for HipStream {}

impl HipStream {
    /// A stream with its timing events. The device is current.
    pub(super) fn new(context: Arc<Context>) -> Result<Self> {
        let raw = api::stream_create().map_err(|e| context.error(e))?;
        let mut stream = Self {
            context,
            raw,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            open: false,
            last: None,
        };
        stream.start = api::event_create().map_err(|e| stream.context.error(e))?;
        stream.end = api::event_create().map_err(|e| stream.context.error(e))?;
        Ok(stream)
    }

    /// Makes the device current and opens a timed batch if none is open.
    fn begin(&mut self) -> Result<()> {
        self.context.enter()?;
        if !self.open {
            api::event_record(self.start, self.raw).map_err(|e| self.context.error(e))?;
            self.open = true;
        }
        Ok(())
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        for event in [self.start, self.end] {
            if !event.is_null()
                && let Err(error) = api::event_destroy(event)
            {
                self.context.record(error);
            }
        }
        if let Err(error) = api::stream_destroy(self.raw) {
            self.context.record(error);
        }
    }
}

impl NativeStream for HipStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        allocation(&self.context, dst)?;
        allocation(&self.context, src)?;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        // SAFETY: both views are in bounds of live allocations kept alive until this stream
        // is synchronized; hazards order access.
        unsafe { api::memcpy_async(device_pointer(dst), device_pointer(src), len, self.raw) }
            .map_err(|e| self.context.error(e))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.context.enter()?;
        if !std::mem::take(&mut self.open) {
            return api::stream_synchronize(self.raw).map_err(|e| self.context.error(e));
        }
        self.last = None;
        api::event_record(self.end, self.raw).map_err(|e| self.context.error(e))?;
        api::stream_synchronize(self.raw).map_err(|e| self.context.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(self.start, self.end).map_err(|e| self.context.error(e))?;
        self.last = Some(span_ending_at(end_ns, ms));
        Ok(())
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.context.enter()?;
        let raw = api::graph_create().map_err(|e| self.context.error(e))?;
        Ok(Box::new(HipGraphBuilder::new(self.context.clone(), raw)))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = owned_graph(graph, |g: &HipGraphExec| {
            Arc::ptr_eq(&g.context, &self.context)
        })?;
        self.begin()?;
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.context.error(e))
    }

    fn launches_asynchronously(&self) -> bool {
        true // `hipGraphLaunch` only enqueues
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }
}
