//! Streams: asynchronous copies, graph launches, the timing of each synchronized batch and,
//! with kernel times, of each operation in it.

use super::api;
use super::context::Context;
use super::graph::{HipGraphBuilder, HipGraphExec, OpEvents};
use super::memory::{allocation, device_pointer};
use super::timing::{TimedOp, read_op_spans};
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{owned_graph, span_ending_at};
use crate::gpu::{DeviceSpan, NativeGraphBuilder, NativeGraphExec, NativeStream, OpSpan, View};
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
    /// Whether new graphs and later copies are timed operation by operation
    /// ([`NativeStream::set_kernel_times`]).
    kernel_times: bool,
    /// Since the last synchronize, with kernel times: what to read after it.
    timed: TimedBatch,
    /// The stream's events that bracket copies (kernel times), reused batch after batch.
    copy_events: Vec<sys::hipEvent_t>,
    /// Operation times not taken yet ([`NativeStream::op_spans`]).
    ops: Vec<OpSpan>,
}

/// With kernel times, the operations enqueued since the last synchronize.
#[derive(Default)]
struct TimedBatch {
    /// The graphs launched, each with its operations' events.
    graphs: Vec<Arc<OpEvents>>,
    /// The copies, each between two of the stream's events.
    copies: Vec<TimedOp<sys::hipEvent_t>>,
    /// Copies enqueued (zero-byte ones too: the index is the copy's place in its batch).
    copied: usize,
    /// Events of `copy_events` in use.
    events_used: usize,
    /// The event recorded last on the stream when nothing was enqueued after it: the next
    /// copy starts at it (events between copies, not around each).
    tail: Option<sys::hipEvent_t>,
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
            kernel_times: false,
            timed: TimedBatch::default(),
            copy_events: Vec::new(),
            ops: Vec::new(),
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
            self.timed.tail = Some(self.start);
        }
        Ok(())
    }

    /// Records the next of the stream's copy events (created on first use) on the stream.
    fn record_copy_event(&mut self) -> Result<sys::hipEvent_t> {
        if self.timed.events_used == self.copy_events.len() {
            let event = api::event_create().map_err(|e| self.context.error(e))?;
            self.copy_events.push(event);
        }
        let event = self.copy_events[self.timed.events_used];
        api::event_record(event, self.raw).map_err(|e| self.context.error(e))?;
        self.timed.events_used += 1;
        self.timed.tail = Some(event);
        Ok(event)
    }

    /// Enqueues a copy of `len` bytes from `src` to `dst`.
    fn enqueue_copy(&self, dst: &View<'_>, src: &View<'_>, len: usize) -> Result<()> {
        // SAFETY: both views are in bounds of live allocations kept alive until this stream
        // is synchronized; hazards order access.
        unsafe { api::memcpy_async(device_pointer(dst), device_pointer(src), len, self.raw) }
            .map_err(|e| self.context.error(e))
    }

    /// With kernel times: the spans of the synchronized batch's operations, each read against
    /// the batch's start event and placed inside the batch's `span` (on the host clock), into
    /// `self.ops`.
    fn read_ops(&mut self, timed: TimedBatch, span: DeviceSpan) -> Result<()> {
        let graphs = timed.graphs.iter().flat_map(|g| g.ops.iter().copied());
        let ops = timed.copies.into_iter().chain(graphs);
        read_op_spans(self.start, span, ops, api::event_elapsed_ms, &mut self.ops)
            .map_err(|e| self.context.error(e))
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        for &event in [self.start, self.end].iter().chain(&self.copy_events) {
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
        let index = self.timed.copied;
        self.timed.copied += 1;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        if !self.kernel_times {
            return self.enqueue_copy(dst, src, len);
        }
        // Between two events: the one recorded last when nothing came after it (the batch's
        // start, the previous copy's end), then a new one.
        let before = match self.timed.tail {
            Some(event) => event,
            None => self.record_copy_event()?,
        };
        self.timed.tail = None;
        self.enqueue_copy(dst, src, len)?;
        let after = self.record_copy_event()?;
        self.timed.copies.push(TimedOp {
            index,
            before,
            after,
        });
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        // Taken whatever happens: a failed synchronize times no operation (the events after a
        // fault are never recorded).
        let timed = std::mem::take(&mut self.timed);
        self.context.enter()?;
        if !std::mem::take(&mut self.open) {
            return api::stream_synchronize(self.raw).map_err(|e| self.context.error(e));
        }
        self.last = None;
        api::event_record(self.end, self.raw).map_err(|e| self.context.error(e))?;
        api::stream_synchronize(self.raw).map_err(|e| self.context.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(self.start, self.end).map_err(|e| self.context.error(e))?;
        let span = span_ending_at(end_ns, ms);
        self.last = Some(span);
        self.read_ops(timed, span)
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.context.enter()?;
        let raw = api::graph_create().map_err(|e| self.context.error(e))?;
        Ok(Box::new(HipGraphBuilder::new(
            self.context.clone(),
            raw,
            self.kernel_times,
        )))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = owned_graph(graph, |g: &HipGraphExec| {
            Arc::ptr_eq(&g.context, &self.context)
        })?;
        self.begin()?;
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.context.error(e))?;
        self.timed.tail = None;
        if let Some(events) = &graph.events {
            // A relaunch before the synchronize records the same events again: only its last
            // launch is measurable (the runtime never relaunches unsynchronized).
            self.timed.graphs.retain(|g| !Arc::ptr_eq(g, events));
            self.timed.graphs.push(events.clone());
        }
        Ok(())
    }

    fn launches_asynchronously(&self) -> bool {
        true // `hipGraphLaunch` only enqueues
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }

    fn set_kernel_times(&mut self, on: bool) {
        self.kernel_times = on;
    }

    fn op_spans(&mut self, out: &mut Vec<OpSpan>) {
        out.append(&mut self.ops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::HipDevice;
    use crate::gpu::{NativeDevice, View};
    use crate::{BackendChoice, Error, Runtime, RuntimeOptions};

    fn device_present() -> bool {
        super::api::device_count().is_ok_and(|n| n > 0)
    }

    /// Kernel times asked of a runtime whose HIP device cannot be opened (so no stream can be
    /// made to time) are the device's error, never a panic, and nothing is traced.
    #[test]
    fn kernel_times_without_a_device_are_the_opening_error() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        let trace =
            std::env::temp_dir().join(format!("hrx-hip-kernel-times-{}.hrxt", std::process::id()));
        let options = RuntimeOptions::default()
            .environment(false)
            .backend(BackendChoice::Hip)
            .trace(&trace)
            .kernel_times(true);
        let error = Runtime::new(options)
            .err()
            .expect("no device, yet a runtime");
        assert!(
            matches!(&error, Error::Unsupported(m) if m.contains("HIP: no device 0")),
            "{error}"
        );
        assert!(!trace.exists(), "no trace without a runtime");
    }

    /// Without a device, the calls that kernel times add fail as HIP errors naming the call,
    /// mapped like every other (never a crash, never a success).
    #[test]
    fn kernel_times_calls_without_a_device_are_errors() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        use std::ptr::null_mut as null;
        let error = super::api::graph_add_event_record(null(), &[], null()).unwrap_err();
        eprintln!("{error:?}: {}", super::super::error::map_error(error));
        assert_eq!(error.call, "hipGraphAddEventRecordNode");
        assert_ne!(error.code, 0);
        let error = super::api::event_elapsed_ms(null(), null()).unwrap_err();
        eprintln!("{error:?}: {}", super::super::error::map_error(error));
        assert_eq!(error.call, "hipEventElapsedTime");
    }

    /// On an AMD GPU (skipped without one): a graph of two fills and a copy, with an empty
    /// node, gives each launch one device span per operation node, none for the empty node,
    /// inside the launch's span, the copy after the fill it waits for; a copy batch's copies
    /// are numbered by their place in it, a zero-byte copy counted but not timed. Prints the
    /// spans for the log.
    #[test]
    fn kernel_times_on_hardware() {
        if !device_present() {
            eprintln!("skipped: no AMD GPU");
            return;
        }
        let device = HipDevice::open(0).expect("HIP device 0");
        let n = 1 << 22;
        let local = device.allocate(n, false).unwrap();
        let other = device.allocate(n, false).unwrap();
        let host = device.allocate(n, true).unwrap();
        let mut stream = device.stream().unwrap();
        stream.set_kernel_times(true);
        let mut graph = stream.graph().unwrap();
        let fill = graph.fill(&[], &View::new(&local, 0, n), 7).unwrap();
        graph
            .copy(&[fill], &View::new(&host, 0, n), &View::new(&local, 0, n))
            .unwrap();
        graph.fill(&[], &View::new(&other, 0, n), 1).unwrap();
        graph
            .copy(&[fill], &View::new(&other, 0, 0), &View::new(&local, 0, 0))
            .unwrap();
        let mut exec = graph.finish().unwrap();
        for launch in 0..3 {
            stream.launch(exec.as_mut()).unwrap();
            stream.synchronize().unwrap();
            let mut spans = Vec::new();
            stream.op_spans(&mut spans);
            let region = stream.last_span().expect("a timed launch");
            eprintln!("launch {launch}: region {region:?} ops {spans:?}");
            let mut indexes: Vec<_> = spans.iter().map(|s| s.index).collect();
            indexes.sort_unstable();
            assert_eq!(
                indexes,
                [0, 1, 2],
                "one span per operation node, none for empty"
            );
            assert!(spans.iter().all(|s| s.device));
            assert!(
                spans
                    .iter()
                    .all(|s| region.start_ns <= s.span.start_ns && s.span.end_ns <= region.end_ns)
            );
            let at = |i| spans.iter().find(|s| s.index == i).unwrap().span;
            assert!(
                at(0).end_ns <= at(1).start_ns,
                "the copy waits for its fill"
            );
        }
        let mut read = vec![0u8; 16];
        device.read(&View::new(&host, 0, 16), &mut read).unwrap();
        assert_eq!(read, [7; 16]);
        stream
            .copy(&View::new(&other, 0, 0), &View::new(&local, 0, 0))
            .unwrap();
        stream
            .copy(&View::new(&other, 0, n), &View::new(&local, 0, n))
            .unwrap();
        stream
            .copy(&View::new(&host, 0, n), &View::new(&other, 0, n))
            .unwrap();
        stream.synchronize().unwrap();
        let mut spans = Vec::new();
        stream.op_spans(&mut spans);
        eprintln!("copy batch: {spans:?}");
        assert_eq!(spans.iter().map(|s| s.index).collect::<Vec<_>>(), [1, 2]);
        assert!(spans[0].span.end_ns <= spans[1].span.start_ns);
        // Off again: a new graph has no record nodes and times nothing.
        stream.set_kernel_times(false);
        let mut graph = stream.graph().unwrap();
        graph.fill(&[], &View::new(&local, 0, n), 3).unwrap();
        let mut exec = graph.finish().unwrap();
        stream.launch_and_synchronize(exec.as_mut()).unwrap();
        let mut spans = Vec::new();
        stream.op_spans(&mut spans);
        assert!(spans.is_empty(), "{spans:?}");
        assert!(stream.last_span().is_some(), "the region is still timed");
    }
}
