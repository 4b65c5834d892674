//! Streams: asynchronous copies, graph launches, and the timing of each synchronized batch.

use super::api;
use super::context::Shared;
use super::graph::{HipGraphBuilder, HipGraphExec};
use super::memory::{allocation, device_pointer};
use crate::Result;
use crate::gpu::{
    DeviceSpan, NativeGraphBuilder, NativeGraphExec, NativeStream, View, foreign_object,
};
use hip_runtime_sys as sys;
use std::sync::Arc;

pub(super) struct HipStream {
    pub(super) shared: Arc<Shared>,
    pub(super) raw: sys::hipStream_t,
    pub(super) start: sys::hipEvent_t,
    pub(super) end: sys::hipEvent_t,
    /// Whether work was enqueued (and `start` recorded) since the last synchronize.
    pub(super) open: bool,
    pub(super) last: Option<DeviceSpan>,
}

// SAFETY: stream and event handles may be used from any thread with the device current.
unsafe impl Send for HipStream {}

impl HipStream {
    pub(super) fn new(shared: Arc<Shared>) -> Result<Self> {
        let raw = api::stream_create().map_err(|e| shared.error(e))?;
        let mut stream = Self {
            shared,
            raw,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            open: false,
            last: None,
        };
        stream.start = api::event_create().map_err(|e| stream.shared.error(e))?;
        stream.end = api::event_create().map_err(|e| stream.shared.error(e))?;
        Ok(stream)
    }

    /// Makes the device current and opens a timed batch if none is open.
    pub(super) fn begin(&mut self) -> Result<()> {
        self.shared.enter()?;
        if !self.open {
            api::event_record(self.start, self.raw).map_err(|e| self.shared.error(e))?;
            self.open = true;
        }
        Ok(())
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if !self.shared.enter_for_drop() {
            return;
        }
        for event in [self.start, self.end] {
            if !event.is_null()
                && let Err(error) = api::event_destroy(event)
            {
                self.shared.record(error);
            }
        }
        if let Err(error) = api::stream_destroy(self.raw) {
            self.shared.record(error);
        }
    }
}

impl NativeStream for HipStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        allocation(&self.shared, dst)?;
        allocation(&self.shared, src)?;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        // SAFETY: both views are in bounds of live allocations kept alive until this stream
        // is synchronized; hazards order access.
        unsafe { api::memcpy_async(device_pointer(dst), device_pointer(src), len, self.raw) }
            .map_err(|e| self.shared.error(e))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.shared.enter()?;
        if !std::mem::take(&mut self.open) {
            return api::stream_synchronize(self.raw).map_err(|e| self.shared.error(e));
        }
        self.last = None;
        api::event_record(self.end, self.raw).map_err(|e| self.shared.error(e))?;
        api::stream_synchronize(self.raw).map_err(|e| self.shared.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(self.start, self.end).map_err(|e| self.shared.error(e))?;
        let elapsed_ns = (f64::from(ms.max(0.0)) * 1e6) as u64;
        self.last = Some(DeviceSpan {
            start_ns: end_ns.saturating_sub(elapsed_ns),
            end_ns,
        });
        Ok(())
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.shared.enter()?;
        let raw = api::graph_create().map_err(|e| self.shared.error(e))?;
        Ok(Box::new(HipGraphBuilder {
            shared: self.shared.clone(),
            raw,
            nodes: Vec::new(),
        }))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = graph
            .as_any_mut()
            .downcast_mut::<HipGraphExec>()
            .filter(|g| Arc::ptr_eq(&g.shared, &self.shared))
            .ok_or_else(|| foreign_object("graph"))?;
        self.begin()?;
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.shared.error(e))
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }
}
