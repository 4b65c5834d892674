//! Regions: one unit of native work on one queue (a native GPU graph, a copy batch on the
//! lane's cached copy stream, a scoped native callback, an NPU run or a host callback), and
//! how a worker runs one.
//!
//! Failure rules, as the seed (`shared/seed/graph.rs`) has them, with its reasons:
//! - before a region runs, every use is made visible to its engine, written-only uses too:
//!   a region that writes part of a buffer must take in another engine's newer bytes first,
//!   or the bytes it does not write stay stale once its engine is the last writer;
//! - any error of a copy batch marks its lane's cached copy stream unhealthy, and later
//!   copy regions on that lane answer `DeviceLost` ("copy stream is quarantined", the seed's
//!   words): after a failed batch nobody knows what is still queued on, or half done by, the
//!   shared stream. That answer is a refusal before any copy, as a poisoned input's is
//!   ([`Region::check_inputs`]): it quarantines no graph and poisons nothing;
//! - any error a scoped native callback returns is an uncertain failure
//!   ([`Region::uncertain`]): the runtime cannot see into the callback's private streams, so
//!   its graph is quarantined and what its bindings write is poisoned. The error itself is
//!   passed up as the callback returned it, as the seed's `run` does (`callback(&views)?`):
//!   the submission fails with the callback's own error (it was wrapped in a `DeviceLost`
//!   before session 55, so a caller matching the callback's variant missed it);
//! - poison is per buffer (see [`crate::execution::scheduler`]).

use super::dependencies::{Hazard, Use};
use super::record::{edge, engine, queue, use_record};
use super::types::{GpuLane, Queue, RegionKind};
use crate::context::Context;
use crate::sync::{Exclusive, lock};
use crate::{Access, BufferView, Engine, Error, Result};
use hrx_capture::schema as s;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

pub(crate) type ScopedGpu = Box<dyn FnMut(&[crate::gpu::View<'_>]) -> Result<()> + Send>;
pub(crate) type HostCallback = Box<dyn FnMut(&mut HostViews<'_>) -> Result<()> + Send>;

/// The bindings of a host callback ([`crate::Graph::host`]) while it runs.
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

/// A lane's cached copy stream, shared by its copy regions, and whether a failed batch marked
/// it unhealthy: set under the stream's lock, read without it before a region runs
/// ([`Region::check_inputs`]: a lock there cost a round trip of the three-region
/// host-visible graph about 280 instructions, session 58).
pub(crate) struct CopyStream {
    pub stream: Mutex<crate::gpu::Stream>,
    pub healthy: std::sync::atomic::AtomicBool,
}

pub(crate) enum Backend {
    Copies(Arc<CopyStream>, Vec<(BufferView, BufferView)>),
    /// The region's own stream and executable graph: [`Exclusive`], not a mutex, since the
    /// scheduler runs a region on one thread at a time (the seed locks a mutex here).
    /// With whether its stream's launch is asynchronous
    /// ([`crate::gpu::NativeStream::launches_asynchronously`]): then `submit` may launch it
    /// ([`Region::launch`]) and the thread that claims it later synchronizes
    /// ([`Region::complete_launch`]).
    Gpu(
        Box<Exclusive<(crate::gpu::Stream, crate::gpu::GraphExec)>>,
        bool,
    ),
    Scoped(Arc<Mutex<ScopedGpu>>, Vec<BufferView>),
    /// The region's own prepared NPU run, [`Exclusive`] as `Gpu`'s stream.
    Npu(Exclusive<crate::npu::PreparedRun>),
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
            Backend::Gpu(..) | Backend::Scoped(..) | Backend::Copies(..) => Engine::Gpu,
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

    /// What the trace records of this region, the `index`th of its graph.
    pub fn record(&self, index: usize) -> s::Region {
        s::Region {
            queue: queue(self.queue()),
            engine: engine(self.engine()),
            kind: match self.kind {
                RegionKind::NativeGraph => s::RegionKind::NativeGraph,
                RegionKind::CopyBatch => s::RegionKind::CopyBatch,
                RegionKind::Scoped => s::RegionKind::Scoped,
                RegionKind::NpuRun => s::RegionKind::NpuRun,
                RegionKind::HostCallback => s::RegionKind::Host,
            },
            nodes: self.nodes.clone().map(|n| s::NodeIndex(n as u32)).collect(),
            internal_edges: self
                .internal
                .iter()
                .map(|(consumer, h)| edge(h.producer, *consumer, h))
                .collect(),
            dependencies: self
                .hazards
                .iter()
                .map(|h| edge(h.producer, index, h))
                .collect(),
            uses: self.uses.iter().map(use_record).collect(),
            copy_bytes: self.copy_bytes as u64,
        }
    }

    /// Whether `error`, from this region's native work, is a failure of uncertain extent:
    /// every error of a scoped native callback (the runtime cannot see into its private
    /// streams, and the seed's contract has it return an error only then: "captured resources
    /// and bindings are then quarantined together"), and otherwise what
    /// [`Error::is_device_loss`] says of the error. The one place the scheduler asks before it
    /// quarantines a graph and poisons what a region writes.
    pub fn uncertain(&self, error: &Error) -> bool {
        self.kind == RegionKind::Scoped || error.is_device_loss()
    }

    /// For a scoped native callback, what must outlive its uncertain failure: the callback
    /// (with the private resources it captured) and its bindings' buffers, boxed for
    /// [`super::shared::RuntimeOwner::keep_quarantined`]. The seed: "captured resources and
    /// bindings are then quarantined together, preserving native lifetimes"; the runtime
    /// cannot see whether work the callback queued on its private streams still runs, so
    /// freeing them when the program drops the graph and its buffers could free memory a
    /// device still writes. `None` for any other region.
    pub fn quarantined_resources(&self) -> Option<Box<dyn std::any::Any + Send>> {
        match &self.backend {
            Backend::Scoped(callback, bindings) => {
                Some(Box::new((callback.clone(), bindings.clone())))
            }
            _ => None,
        }
    }

    /// Fails with `DeviceLost` when an input is poisoned, or when the region is a copy batch
    /// and its lane's copy stream was marked unhealthy; nothing ran. Both are the seed's
    /// refusals before any native work (`Operation::run` answers them before it issues a
    /// copy), so the scheduler takes them as refusals, not native failures: they quarantine
    /// no graph and poison nothing. Taken as a native failure, the unhealthy stream's refusal
    /// poisoned the destinations of every later copy graph on the lane, bytes it never
    /// touched (the seed audit of session 58).
    pub fn check_inputs(&self) -> Result<()> {
        for use_ in &self.uses {
            use_.view.buffer().storage.poisoned()?;
        }
        if let Backend::Copies(stream, _) = &self.backend {
            Self::healthy(stream, self.lane)?;
        }
        Ok(())
    }

    /// `DeviceLost` ("copy stream is quarantined", the seed's words) for an unhealthy stream.
    fn healthy(stream: &CopyStream, lane: GpuLane) -> Result<()> {
        if stream.healthy.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(Error::DeviceLost(format!(
            "{lane:?} copy stream is quarantined: it was marked unhealthy after an earlier failure"
        )))
    }

    /// Runs the region's native work to completion on the calling worker.
    /// Returns the device span where the backend measured one; appends to `ops` the times
    /// of its operations where the backend timed them ([`crate::gpu::NativeStream::op_spans`],
    /// on failure too), each `index` made the operation's place in the region.
    pub fn run(
        &self,
        context: &Context,
        ops: &mut Vec<crate::gpu::OpSpan>,
    ) -> Result<Option<crate::gpu::DeviceSpan>> {
        let engine = self.engine();
        let mut span = None;
        self.prepare_uses(engine)?;
        match &self.backend {
            Backend::Copies(lane_stream, copies) => {
                let mut stream = lock(&lane_stream.stream);
                // Checked by `check_inputs` too; a queue runs one region at a time, so only a
                // caller that skipped that check finds it unhealthy here.
                Self::healthy(lane_stream, self.lane)?;
                let result = (|| {
                    for (dst, src) in copies {
                        stream.copy(&dst.gpu()?, &src.gpu()?)?;
                    }
                    stream.synchronize()
                })();
                stream.op_spans(ops);
                // Any failed batch leaves the stream in a state the runtime cannot see into
                // (earlier copies of the batch may be queued or half done), so, as the seed
                // does, every error marks the lane's stream unhealthy, a kernel error too.
                if let Err(error) = &result {
                    lane_stream.healthy.store(false, Ordering::Release);
                    super::record::copy_stream_unhealthy(&context.tracer, self.lane, error);
                }
                result?;
                span = stream.last_span();
            }
            Backend::Gpu(pair, _) => {
                let mut pair = pair.claim();
                let (stream, graph) = &mut *pair;
                let result = stream.launch_and_synchronize(graph.as_mut());
                stream.op_spans(ops);
                result?;
                span = stream.last_span();
            }
            Backend::Scoped(callback, bindings) => {
                let views = bindings
                    .iter()
                    .map(BufferView::gpu)
                    .collect::<Result<Vec<_>>>()?;
                // As it is: `uncertain` quarantines whatever it is (see the module docs).
                lock(callback)(&views)?;
            }
            Backend::Npu(run) => run.claim().execute()?,
            Backend::Host(callback, bindings) => lock(callback)(&mut HostViews { bindings })?,
        }
        self.ran(context, engine);
        Ok(span)
    }

    /// The operation (graph node index) of the `index`-th operation of this region, as
    /// [`crate::gpu::OpSpan::index`] numbers them (graph nodes and copies are added in the
    /// region's operation order).
    pub fn operation(&self, index: usize) -> Option<usize> {
        let operation = self.nodes.start + index;
        (operation < self.nodes.end).then_some(operation)
    }

    /// Whether the region is a native graph whose launch only enqueues it, which `submit`
    /// may launch early ([`Region::launch`]).
    pub fn launches_asynchronously(&self) -> bool {
        matches!(self.backend, Backend::Gpu(_, true))
    }

    /// The first half of [`Region::run`] for a region that
    /// [`Region::launches_asynchronously`]: its uses made visible to its engine, then its graph
    /// launched, in the seed's order (`make_visible` for every use, then `launch`); the
    /// thread that claims it next calls [`Region::complete_launch`].
    ///
    /// # Errors
    /// As [`Region::run`]; the graph is then not launched, or its launch failed.
    pub fn launch(&self) -> Result<()> {
        let Backend::Gpu(pair, true) = &self.backend else {
            return Err(Error::Message(
                "only an asynchronous native graph launches early".into(),
            ));
        };
        self.prepare_uses(Engine::Gpu)?;
        let mut pair = pair.claim();
        let (stream, graph) = &mut *pair;
        stream.launch(graph.as_mut())
    }

    /// The second half after [`Region::launch`]: the stream synchronized (as the seed's
    /// `synchronize` after its `launch`), then what [`Region::run`] records after the work.
    ///
    /// # Errors
    /// As [`Region::run`]: the first error of the launched work.
    pub fn complete_launch(
        &self,
        context: &Context,
        ops: &mut Vec<crate::gpu::OpSpan>,
    ) -> Result<Option<crate::gpu::DeviceSpan>> {
        let Backend::Gpu(pair, _) = &self.backend else {
            return Err(Error::Message(
                "only a native graph completes a launch".into(),
            ));
        };
        let span = {
            let mut pair = pair.claim();
            let (stream, _) = &mut *pair;
            let result = stream.synchronize();
            stream.op_spans(ops);
            result?;
            stream.last_span()
        };
        self.ran(context, Engine::Gpu);
        Ok(span)
    }

    /// Before the native work: a deferred trace capture's reads waited for, every use made
    /// visible to `engine`.
    fn prepare_uses(&self, engine: Engine) -> Result<()> {
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
        Ok(())
    }

    /// After the native work succeeded: copy counters, and the written buffers' last writer.
    fn ran(&self, context: &Context, engine: Engine) {
        if self.copy_bytes != 0 {
            context.counters.lane_copy_bytes[self.lane as usize]
                .fetch_add(self.copy_bytes as u64, Ordering::Relaxed);
            context
                .counters
                .copied_bytes
                .fetch_add(self.copy_bytes as u64, Ordering::Relaxed);
        }
        for use_ in &self.uses {
            if use_.access.writes() {
                use_.view.buffer().storage.wrote(engine);
            }
        }
    }
}
