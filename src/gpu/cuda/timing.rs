//! Built-in kernels that time themselves (issue 20 point 4): the operation times of a traced
//! native graph without CUPTI.
//!
//! hrx compiles its own kernel library, so each built-in kernel has a timed entry
//! ([`crate::kernels::TIMED_SUFFIX`]) that reads the GPU's `%globaltimer` in each block and
//! folds the first start and the last end into its node's lines in device memory. A timed graph
//! (a traced runtime, kernel times through CUPTI off) launches those entries; after its end
//! event-record node a collector kernel per [`Chunk`] folds the lines into a ring in mapped host
//! memory, so the launch's region time (start to end event) never includes that work (the
//! runtime synchronizes after each region's launch; of several launches before one synchronize,
//! the later ones' spans would include the earlier collectors). After the stream's synchronize
//! the host reads the launch's ring slot: a slot is reused after [`TIME_RING`] launches of the
//! graph, far more than can be in flight unread.
//!
//! Placement: `%globaltimer` is its own clock (ns, not the host's). The collector reads it
//! right after the end event, so each launch carries a reading taken where its region ends;
//! the spans are placed so that reading falls on the region's recorded end, and shifted later
//! if that would start the first one before the region's recorded start (by at most the
//! collector's launch delay, about a µs). Durations are the device's own; only the placement
//! is relative to the region's span, as the region spans themselves are (their end is the
//! synchronize's return). The stream then counts each node from the end of what it waits on
//! and, where every leaf is timed, re-anchors the spans on the leaves' end
//! ([`crate::gpu::op_times`]), which is closer than the collector's reading.

use super::api;
use super::context::Context;
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::{DeviceSpan, OpSpan};
use crate::kernels::{TIME_NODE_WORDS, TIME_RING};
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Timed nodes per chunk: one collector launch folds a chunk, a warp a node.
const CHUNK_NODES: usize = 32;

/// The node index under which a graph's start marker ([`crate::kernels::MARK_ENTRY`]) keeps
/// its lines: its reading is the region's start, not an operation's time.
pub(super) const MARK_NODE: usize = usize::MAX;

/// Words of one ring slot of a chunk of `nodes` timed nodes.
const fn slot_words(nodes: usize) -> usize {
    2 + 2 * nodes
}

/// Up to [`CHUNK_NODES`] timed nodes' lines (device memory, zeroed, then the launch counter)
/// and their ring (mapped pinned host memory), freed on drop.
struct Chunk {
    context: Arc<Context>,
    /// Each timed node's [`crate::gpu::GraphNode`] index, in line order.
    nodes: Vec<usize>,
    device: sys::CUdeviceptr,
    host: *mut u64,
    host_device: sys::CUdeviceptr,
    collect: sys::CUfunction,
}

/// A native graph's timed nodes: built with the graph, owned by the executable graph, shared
/// with the streams that launched it until they read their launches' times.
pub(super) struct KernelClock {
    context: Arc<Context>,
    chunks: Vec<Chunk>,
    /// Launches so far: the next launch's number (launches of one executable graph run in
    /// launch order, `cuGraphLaunch`).
    launches: AtomicU64,
}

// SAFETY: the handles and pointers are thread-agnostic; the host ring is only read, after a
// synchronize, and written by the device.
unsafe impl Send for KernelClock {}
// SAFETY: as above.
unsafe impl Sync for KernelClock {}

impl KernelClock {
    /// No timed node yet.
    pub(super) fn new(context: Arc<Context>) -> Self {
        Self {
            context,
            chunks: Vec::new(),
            launches: AtomicU64::new(0),
        }
    }

    /// Whether any node is timed.
    pub(super) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The lines of the next timed node (the timed entry's last parameter), allocating a chunk
    /// when the last is full; [`KernelClock::add_node`] then names its node. The context is
    /// current.
    ///
    /// # Errors
    /// A mapped driver error (out of memory).
    pub(super) fn next_lines(&mut self, collect: sys::CUfunction) -> Result<sys::CUdeviceptr> {
        if self
            .chunks
            .last()
            .is_none_or(|c| c.nodes.len() == CHUNK_NODES)
        {
            self.chunks.push(self.chunk(collect)?);
        }
        let chunk = self.chunks.last().expect("a chunk");
        Ok(chunk.device + (chunk.nodes.len() * TIME_NODE_WORDS * 8) as u64)
    }

    /// Names the node whose lines [`KernelClock::next_lines`] gave last.
    pub(super) fn add_node(&mut self, node: usize) {
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.nodes.push(node);
        }
    }

    /// A zeroed chunk. The context is current.
    fn chunk(&self, collect: sys::CUfunction) -> Result<Chunk> {
        let error = |e| self.context.error(e);
        let device_len = (CHUNK_NODES * TIME_NODE_WORDS + 16) * 8;
        let host_len = TIME_RING * slot_words(CHUNK_NODES) * 8;
        let device = api::mem_alloc(device_len).map_err(error)?;
        let host = match api::mem_host_alloc(host_len) {
            Ok(host) => host.cast::<u64>(),
            Err(e) => {
                // SAFETY: allocated above, used by nothing yet.
                let _ = unsafe { api::mem_free(device) };
                return Err(error(e));
            }
        };
        // From here a failure drops (frees) the chunk.
        let mut chunk = Chunk {
            context: self.context.clone(),
            nodes: Vec::new(),
            device,
            host,
            host_device: 0,
            collect,
        };
        // SAFETY: `host` is live pinned memory of `host_len` bytes, `device` of `device_len`;
        // the legacy stream is synchronized before the first launch can use them.
        unsafe {
            std::ptr::write_bytes(chunk.host.cast::<u8>(), 0, host_len);
            chunk.host_device = api::mem_host_device_pointer(chunk.host.cast()).map_err(error)?;
            api::memset_d8(chunk.device, 0, device_len).map_err(error)?;
        }
        api::stream_synchronize(std::ptr::null_mut()).map_err(error)?;
        Ok(chunk)
    }

    /// Adds one collector kernel node per chunk after `after` (the end event-record node, or
    /// the leaves of a graph with a start marker). The context is current.
    ///
    /// # Errors
    /// A mapped driver error.
    pub(super) fn add_collectors(
        &self,
        graph: sys::CUgraph,
        after: &[sys::CUgraphNode],
    ) -> Result<()> {
        for chunk in &self.chunks {
            let (mut times, mut ring, mut nodes) =
                (chunk.device, chunk.host_device, chunk.nodes.len() as u32);
            let mut pointers: [*mut c_void; 3] = [
                (&raw mut times).cast(),
                (&raw mut ring).cast(),
                (&raw mut nodes).cast(),
            ];
            let threads = 32 * chunk.nodes.len() as u32;
            let params = one_block(chunk.collect, threads, &mut pointers);
            // SAFETY: the three parameters of `hrx_collect_times`, each pointing at a live
            // value of its type for the call (the driver copies them); the chunk's memory
            // lives as long as the executable graph (this clock is owned by it).
            unsafe { api::graph_add_kernel(graph, after, &params) }
                .map_err(|e| self.context.error(e))?;
        }
        Ok(())
    }

    /// The number of the launch about to be made, counted.
    pub(super) fn launched(&self) -> u64 {
        self.launches.fetch_add(1, Ordering::Relaxed)
    }

    /// Launch `launch`'s node times on `%globaltimer` as `(node, start, end)`, and the
    /// collector's reading and the start marker's (if the graph has one); `None` when its ring
    /// slot holds another launch (a launch that did not finish, or one overwritten: more than
    /// [`TIME_RING`] launches unread).
    fn read(&self, launch: u64, out: &mut Vec<(usize, u64, u64)>) -> Option<(u64, Option<u64>)> {
        let (mut anchor, mut mark) = (None, None);
        for chunk in &self.chunks {
            let n = chunk.nodes.len();
            let slot = (launch % TIME_RING as u64) as usize * slot_words(n);
            // SAFETY: the slot is inside the ring; the device finished writing it before the
            // synchronize that precedes this read (volatile: the device writes it).
            let word = |i: usize| unsafe { chunk.host.add(slot + i).read_volatile() };
            if word(0) != launch + 1 {
                return None;
            }
            anchor = anchor.max(Some(word(1)));
            for (i, node) in chunk.nodes.iter().enumerate() {
                let (start, end) = (word(2 + 2 * i), word(3 + 2 * i));
                if *node == MARK_NODE {
                    mark = (start != 0).then_some(start);
                } else if start != 0 && end >= start {
                    out.push((*node, start, end));
                }
            }
        }
        anchor.map(|anchor| (anchor, mark))
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        // SAFETY: both were allocated for this chunk and nothing uses them any more: the
        // executable graph that launched them is gone, and a stream synchronizes its unread
        // launches before it lets go of their clock.
        unsafe {
            if let Err(error) = api::mem_free(self.device) {
                self.context.record(error);
            }
            if let Err(error) = api::mem_free_host(self.host.cast()) {
                self.context.record(error);
            }
        }
    }
}

/// The node parameters of one block of `threads` threads of `func` (a timing kernel: the
/// collector, the start marker) with the parameter pointers `pointers`.
pub(super) fn one_block(
    func: sys::CUfunction,
    threads: u32,
    pointers: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: pointers.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// What the timed launches of one synchronize left in their ring slots.
#[derive(Debug, Default)]
pub(super) struct Readings {
    /// `(node, start, end)` on `%globaltimer`.
    times: Vec<(usize, u64, u64)>,
    /// The latest collector reading.
    anchor: Option<u64>,
    /// The earliest start marker's reading.
    mark: Option<u64>,
}

impl Readings {
    /// The node times of `launches` (each clock with a launch number), read after the
    /// stream's synchronize. Launches whose slot holds another launch give nothing.
    pub(super) fn read(launches: &[(Arc<KernelClock>, u64)]) -> Self {
        let mut readings = Self::default();
        for (clock, launch) in launches {
            let before = readings.times.len();
            match clock.read(*launch, &mut readings.times) {
                Some((anchor, mark)) => {
                    readings.anchor = readings.anchor.max(Some(anchor));
                    readings.mark = match (readings.mark, mark) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                None => readings.times.truncate(before),
            }
        }
        readings
    }

    /// The span of launches of graphs with a start marker ([`super::graph`]'s module docs),
    /// on `%globaltimer`: from the earliest start marker's reading to the latest end of
    /// `leaves` (one launch's graph leaves) where each was timed, else to the latest collector
    /// reading (after an untimed leaf: a fill, a copy, a kernel of another's code).
    pub(super) fn marked_span(&self, leaves: Option<&[u32]>) -> Option<(u64, u64)> {
        let leaf_end = |leaf: &u32| {
            self.times
                .iter()
                .find(|t| t.0 == *leaf as usize)
                .map(|t| t.2)
        };
        let leaves_end = leaves
            .filter(|leaves| !leaves.is_empty())
            .and_then(|leaves| leaves.iter().map(leaf_end).collect::<Option<Vec<_>>>())
            .and_then(|ends| ends.into_iter().max());
        let end = leaves_end.or(self.anchor)?;
        Some((self.mark?.min(end), end))
    }

    /// Appends to `out` the node times, placed on the host clock inside `region`, the span of
    /// the batch that ran them: `end` (a reading on `%globaltimer`; by default the latest
    /// collector reading) falls on the region's end (module docs).
    pub(super) fn place(self, region: DeviceSpan, end: Option<u64>, out: &mut Vec<OpSpan>) {
        if let Some(anchor) = end.or(self.anchor) {
            out.extend(placed(self.times, anchor, region));
        }
    }
}

/// Node times `(node, start, end)` on `%globaltimer` placed on the host clock: `anchor` on
/// `region`'s end, shifted later (not past the region's end) where the first would start
/// before the region; in start order.
fn placed(mut times: Vec<(usize, u64, u64)>, anchor: u64, region: DeviceSpan) -> Vec<OpSpan> {
    let (Some(first), Some(last)) = (
        times.iter().map(|t| t.1).min(),
        times.iter().map(|t| t.2).max(),
    ) else {
        return Vec::new();
    };
    let offset = i128::from(region.end_ns) - i128::from(anchor);
    let early = i128::from(region.start_ns) - (i128::from(first) + offset);
    let room = i128::from(region.end_ns) - (i128::from(last) + offset);
    let offset = offset + early.clamp(0, room.max(0));
    let host = |t: u64| u64::try_from(i128::from(t) + offset).unwrap_or(0);
    times.sort_by_key(|&(node, start, _)| (start, node));
    times
        .into_iter()
        .map(|(index, start, end)| OpSpan {
            index,
            span: DeviceSpan {
                start_ns: host(start),
                end_ns: host(end),
            },
            device: true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sources_agree_with_the_host_on_the_layout() {
        for entry in crate::kernels::builtin_entries() {
            if crate::kernels::cuda_source(entry).is_none() {
                continue;
            }
            let source = crate::kernels::cuda_instrumented_source(entry, false)
                .unwrap_or_else(|| panic!("{entry}: its source rewrites"));
            assert!(source.contains(&format!("void {entry}__body(")), "{entry}");
            assert!(
                source.contains(&format!("void {entry}{}(", crate::kernels::TIMED_SUFFIX)),
                "{entry}"
            );
        }
        let source = crate::kernels::cuda_instrumented_source("hrx_blur_h", false).unwrap();
        assert!(source.contains(&format!(
            "#define HRX_TIME_LINES {}",
            crate::kernels::TIME_NODE_WORDS / 16
        )));
        assert!(source.contains("extern \"C\" __global__ void hrx_blur_h__hrx_timed_v1(const u8* input, u8* out, u32 width, u32 height, u64* hrx_times)"));
        assert!(source.contains("hrx_blur_h__body(input, out, width, height);"));
        assert!(source.contains(&format!(
            "#define HRX_TIME_RING {}",
            crate::kernels::TIME_RING
        )));
        // The slowed build (a gate's test) only where asked: stored PTX never holds it.
        assert!(!source.contains(crate::kernels::SLOWED_SUFFIX));
        let slowed = crate::kernels::cuda_instrumented_source("hrx_blur_h", true).unwrap();
        assert!(
            slowed.starts_with(&source),
            "the slowed build adds to the timed one"
        );
        assert!(slowed.contains("extern \"C\" __global__ void hrx_blur_h__hrx_slowed_v1(const u8* input, u8* out, u32 width, u32 height, u64* hrx_times, u32 hrx_percent)"));
        assert!(slowed.contains("hrx_slow_block(hrx_begin, hrx_percent);"));
        const { assert!(super::CHUNK_NODES * 32 <= 1024, "one collector block") };
        assert_eq!(crate::kernels::TIME_NODE_WORDS, 32 * 16, "a lane per line");
    }

    use super::placed;
    use crate::gpu::DeviceSpan;

    fn region(start_ns: u64, end_ns: u64) -> DeviceSpan {
        DeviceSpan { start_ns, end_ns }
    }

    #[test]
    fn node_times_keep_their_durations_and_end_where_the_collector_read_the_clock() {
        // Two kernels, 5 µs and 3 µs, the collector 1 µs after the second: region 10 µs.
        let times = vec![
            (3, 1_000_000_004_000, 1_000_000_007_000),
            (1, 1_000_000_000_000, 1_000_000_005_000),
        ];
        let spans = placed(times, 1_000_000_008_000, region(50_000, 60_000));
        let got: Vec<_> = spans
            .iter()
            .map(|s| (s.index, s.span.start_ns, s.span.end_ns))
            .collect();
        assert_eq!(got, [(1, 52_000, 57_000), (3, 56_000, 59_000)]);
        assert!(spans.iter().all(|s| s.device));
    }

    #[test]
    fn node_times_never_start_before_their_region() {
        // The collector ran 3 µs late: placed by it alone the first would start 2 µs early.
        let times = vec![(0, 100, 9_100)];
        let spans = placed(times, 12_100, region(1_000, 10_000));
        assert_eq!(
            (spans[0].span.start_ns, spans[0].span.end_ns),
            (1_000, 10_000)
        );
        // Longer than its region (clock steps): ends at the region's end, starts before it.
        let spans = placed(vec![(0, 0, 20_000)], 20_000, region(5_000, 10_000));
        assert_eq!((spans[0].span.start_ns, spans[0].span.end_ns), (0, 10_000));
        assert!(placed(Vec::new(), 1, region(0, 1)).is_empty());
    }
}
