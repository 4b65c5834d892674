//! Streams: asynchronous copies, graph launches, and the timing of each synchronized batch.

use super::activity::Cupti;
use super::api;
use super::context::Context;
use super::graph::{CudaGraphBuilder, CudaGraphExec};
use super::memory::allocation;
use super::timing::{KernelClock, Readings};
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{owned_graph, span_ending_at};
use crate::gpu::op_times::{GraphShape, covering, launch_inclusive};
use crate::gpu::{DeviceSpan, NativeGraphBuilder, NativeGraphExec, NativeStream, OpSpan, View};
use cudarc::driver::sys;
use std::sync::Arc;

/// A non-blocking stream, its own event pair, and the batch enqueued since the last
/// synchronize.
pub(super) struct CudaStream {
    context: Arc<Context>,
    raw: sys::CUstream,
    /// The stream's own timing events (copy batches).
    start: sys::CUevent,
    end: sys::CUevent,
    /// The timed batch enqueued since the last synchronize.
    batch: Option<Batch>,
    last: Option<DeviceSpan>,
    /// Whether copies and new graphs are timed (only when the runtime is traced: events
    /// cost 3-4 µs per one-kernel launch-to-synchronize, BENCHMARKS.md).
    timed: bool,
    /// Kernel times ([`NativeStream::set_kernel_times`]): the CUPTI session and this
    /// stream's CUPTI id.
    cupti: Option<(&'static Cupti, Option<u32>)>,
    /// Since the last synchronize, with kernel times: the node ids of the graph launched
    /// last.
    launched: Option<Arc<[Option<u64>]>>,
    /// Since the last synchronize: the copies enqueued.
    copied: u32,
    /// With kernel times: when the first operation since the last synchronize was enqueued,
    /// and when the last synchronize returned (session clock, ns; 0: none), which bound the
    /// batch's CUPTI records ([`super::activity::batch_boundary`]).
    enqueued_ns: Option<u64>,
    synced_ns: u64,
    /// Whether graphs built on this stream launch built-in kernels' timed entries when timed
    /// and without CUPTI ([`NativeStream::set_builtin_kernel_times`]).
    builtin_times: bool,
    /// Since the last synchronize: the timed graphs launched, each with its launch number.
    clocked: Vec<(Arc<KernelClock>, u64)>,
    /// Of those, the graphs with a start marker launched while no event batch was open: the
    /// batch's span counts from their markers ([`super::graph`]'s module docs).
    marked: Vec<(Arc<KernelClock>, u64)>,
    /// Operation times not taken yet ([`NativeStream::op_spans`]).
    ops: Vec<OpSpan>,
    /// Since the last synchronize: timed graph launches and the shape of the last
    /// (operation times are counted from dependencies in a batch of one graph launch and no
    /// copy, `op_times`).
    graphs: u32,
    shape: Option<Arc<GraphShape>>,
}

/// Why kernel times are off, said once per process.
static KERNEL_TIMES_OFF: std::sync::Once = std::sync::Once::new();

/// The events that bracket a batch of enqueued work.
#[derive(Clone, Copy)]
struct Batch {
    /// Recorded before the batch's first operation: the stream's start event (a copy came
    /// first) or the start node's event of the first graph launched.
    start: sys::CUevent,
    /// The end node's event of the last graph launched, when nothing was enqueued after it;
    /// `None`: the stream's end event is recorded at synchronize.
    end: Option<sys::CUevent>,
}

// SAFETY: stream and event handles may be used from any thread with the context current.
unsafe impl Send for CudaStream {}

impl CudaStream {
    /// A stream with its timing events. The context is current.
    pub(super) fn new(context: Arc<Context>) -> Result<Self> {
        let raw = api::stream_create().map_err(|e| context.error(e))?;
        let mut stream = Self {
            context,
            raw,
            start: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            batch: None,
            last: None,
            timed: true,
            cupti: None,
            launched: None,
            copied: 0,
            enqueued_ns: None,
            synced_ns: 0,
            builtin_times: false,
            clocked: Vec::new(),
            marked: Vec::new(),
            ops: Vec::new(),
            graphs: 0,
            shape: None,
        };
        stream.start = api::event_create().map_err(|e| stream.context.error(e))?;
        stream.end = api::event_create().map_err(|e| stream.context.error(e))?;
        Ok(stream)
    }

    /// Makes the context current and, for a stream operation (a copy), opens a timed batch
    /// with the stream's start event or extends the open one.
    fn begin(&mut self) -> Result<()> {
        self.context.enter()?;
        if !self.timed {
            return Ok(());
        }
        match &mut self.batch {
            Some(batch) => batch.end = None,
            None => {
                api::event_record(self.start, self.raw).map_err(|e| self.context.error(e))?;
                self.batch = Some(Batch {
                    start: self.start,
                    end: None,
                });
            }
        }
        Ok(())
    }

    /// With kernel times, notes when the batch's first operation is enqueued.
    fn enqueuing(&mut self) {
        if self.cupti.is_some() && self.enqueued_ns.is_none() {
            self.enqueued_ns = Some(crate::clock::now_ns());
        }
    }

    /// [`NativeStream::launch`] with the context current.
    fn launch_entered(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        let graph = owned_graph(graph, |g: &CudaGraphExec| {
            Arc::ptr_eq(&g.context, &self.context)
        })?;
        self.enqueuing();
        api::graph_launch(graph.raw, self.raw).map_err(|e| self.context.error(e))?;
        let clocked = graph.clock.as_ref().map(|c| (c.clone(), c.launched()));
        self.clocked.extend(clocked.clone());
        if self.cupti.is_some() {
            self.launched = Some(graph.node_ids.clone());
        }
        if graph.marked {
            self.graphs += 1;
            self.shape.clone_from(&graph.shape);
            match &mut self.batch {
                // An open batch's events cover it: the stream's end event, at synchronize.
                Some(batch) => batch.end = None,
                None => self.marked.extend(clocked),
            }
            return Ok(());
        }
        // The graph's own event-record nodes bracket its execution (an untimed graph has none).
        let (start, end) = (graph.events.start, graph.events.end);
        if start.is_null() {
            self.batch = None;
            return Ok(());
        }
        self.graphs += 1;
        self.shape.clone_from(&graph.shape);
        match &mut self.batch {
            Some(batch) => batch.end = Some(end),
            None => {
                self.batch = Some(Batch {
                    start,
                    end: Some(end),
                });
            }
        }
        Ok(())
    }

    /// [`NativeStream::synchronize`] with the context current, then, with kernel times, the
    /// synchronized work's operation times taken from CUPTI.
    fn synchronize_entered(&mut self) -> Result<()> {
        let (launched, copied) = (self.launched.take(), std::mem::take(&mut self.copied));
        let clocked = std::mem::take(&mut self.clocked);
        let marked = std::mem::take(&mut self.marked);
        let (graphs, shape) = (std::mem::take(&mut self.graphs), self.shape.take());
        // One marked graph launched alone: its region ends with its leaves where each timed
        // itself.
        let alone = graphs == 1 && copied == 0 && marked.len() == 1;
        let leaves = shape.as_ref().filter(|_| alone).map(|s| &*s.leaves);
        // The CUPTI records of this batch start after `boundary` (`activity`'s module docs).
        let boundary = match self.enqueued_ns.take() {
            Some(enqueued) => super::activity::batch_boundary(self.synced_ns, enqueued),
            None => self.synced_ns,
        };
        let end = self.synchronize_batch(&marked, leaves)?;
        if self.cupti.is_some() {
            self.synced_ns = crate::clock::now_ns();
        }
        let before = self.ops.len();
        if let (false, Some(region)) = (clocked.is_empty(), self.last) {
            Readings::read(&clocked).place(region, end, &mut self.ops);
        }
        if let Some((cupti, _)) = self.cupti
            && let Some(nodes) = &launched
        {
            cupti.take_graph(nodes, boundary, &mut self.ops);
        }
        // One graph launch alone in its batch: its region's span is the graph's own (from its
        // start marker, where it has one).
        if let (1, Some(shape), 0, Some(region)) = (graphs, shape, copied, self.last) {
            launch_inclusive(&mut self.ops[before..], &shape, region, alone);
        }
        if let Some((cupti, Some(stream))) = self.cupti
            && copied > 0
        {
            cupti.take_stream(stream, boundary, copied as usize, &mut self.ops);
        }
        // Kernel times through CUPTI: CUPTI's work for each launch (its instrumentation, the
        // flushes of other threads' batches) lies between the batch's start event and its
        // first operation, 0.4-0.7 ms a graph launch on the H200 (session 36), so a batch
        // whose every operation CUPTI timed runs from its first operation's start to its last
        // one's end: capture work is never inside a measured time.
        let timed = match (&launched, copied) {
            (Some(nodes), 0) if graphs == 1 => nodes.iter().flatten().count(),
            (None, copies) if graphs == 0 => copies as usize,
            _ => 0,
        };
        let ops = &self.ops[before..];
        if self.cupti.is_some() && timed > 0 && ops.len() == timed && self.last.is_some() {
            self.last = covering(ops);
        }
        Ok(())
    }

    /// Synchronizes, and times the batch when timed: from its events, and from the start
    /// markers of `marked` launches (before any event; `leaves`: the leaves of the one marked
    /// graph that is the whole batch), ending where the synchronize returned. Returns the
    /// `%globaltimer` reading at the span's end when it came from markers alone (the
    /// operation times are placed on it).
    fn synchronize_batch(
        &mut self,
        marked: &[(Arc<KernelClock>, u64)],
        leaves: Option<&[u32]>,
    ) -> Result<Option<u64>> {
        self.last = None;
        let Some(batch) = self.batch.take() else {
            api::stream_synchronize(self.raw).map_err(|e| self.context.error(e))?;
            // Untimed without markers: no span, so no operation times are placed in an
            // earlier one.
            if marked.is_empty() {
                return Ok(None);
            }
            let end_ns = crate::clock::now_ns();
            let span = Readings::read(marked).marked_span(leaves);
            self.last = span.map(|(start, end)| DeviceSpan {
                start_ns: end_ns.saturating_sub(end - start),
                end_ns,
            });
            return Ok(span.map(|(_, end)| end));
        };
        let end = match batch.end {
            Some(end) => end,
            None => {
                api::event_record(self.end, self.raw).map_err(|e| self.context.error(e))?;
                self.end
            }
        };
        api::stream_synchronize(self.raw).map_err(|e| self.context.error(e))?;
        let end_ns = crate::clock::now_ns();
        let ms = api::event_elapsed_ms(batch.start, end).map_err(|e| self.context.error(e))?;
        let mut span = span_ending_at(end_ns, ms);
        // Marked launches before the batch's first event ran before it, on the same stream.
        let before = Readings::read(marked)
            .marked_span(None)
            .map_or(0, |(start, end)| end - start);
        span.start_ns = span.start_ns.saturating_sub(before);
        self.last = Some(span);
        Ok(None)
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        // A collector still running writes memory its clock frees when dropped after this.
        if !self.clocked.is_empty()
            && let Err(error) = api::stream_synchronize(self.raw)
        {
            self.context.record(error);
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

impl NativeStream for CudaStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        allocation(&self.context, dst)?;
        allocation(&self.context, src)?;
        let len = dst.len().min(src.len());
        if len == 0 {
            return Ok(());
        }
        self.begin()?;
        self.enqueuing();
        self.copied += 1;
        // SAFETY: both views are in bounds of live allocations that the runtime keeps alive
        // until this stream is synchronized; hazards order access.
        unsafe { api::memcpy_async(dst.address(), src.address(), len, self.raw) }
            .map_err(|e| self.context.error(e))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.context.enter()?;
        self.synchronize_entered()
    }

    fn launch_and_synchronize(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        self.context.enter()?;
        self.launch_entered(graph)?;
        self.synchronize_entered()
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        self.context.enter()?;
        let raw = api::graph_create().map_err(|e| self.context.error(e))?;
        Ok(Box::new(CudaGraphBuilder::new(
            self.context.clone(),
            raw,
            self.timed,
            self.cupti.map(|(cupti, _)| cupti),
            self.builtin_times,
        )?))
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        self.context.enter()?;
        self.launch_entered(graph)
    }

    fn launches_asynchronously(&self) -> bool {
        true // `cuGraphLaunch` only enqueues
    }

    fn last_span(&mut self) -> Option<DeviceSpan> {
        self.last
    }

    fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }

    fn set_kernel_times(&mut self, on: bool) {
        if !on {
            self.cupti = None;
            return;
        }
        match super::activity::cupti() {
            Ok(cupti) => {
                let stream = cupti.register_stream(self.context.raw, self.raw);
                self.cupti = Some((cupti, stream));
            }
            Err(why) => KERNEL_TIMES_OFF.call_once(|| {
                crate::error::to_stderr(format_args!(
                    "hrx: kernel times off, regions keep their times: {why}"
                ));
            }),
        }
    }

    fn set_builtin_kernel_times(&mut self, on: bool) {
        self.builtin_times = on;
    }

    fn op_spans(&mut self, out: &mut Vec<OpSpan>) {
        out.append(&mut self.ops);
    }
}
