//! An image pipeline over RGB8 frames with several frames in flight.
//!
//! # What one frame does
//!
//! ```text
//!  host RGB ──Upload──> GPU RGB ──Compute (one native graph)──────────────────────┐
//!                        rgb_to_gray -> blur_h -> blur_v -> sobel -> histogram256 │
//!                                                  fill(hist, 0) ──┘              │
//!          ┌──────────────────────────────────────────────────────────────────────┘
//!          └─Download─> NPU-shared sobel ──NPU threshold──> NPU-shared edges (host reads)
//!                       host-visible histogram                                 (host reads)
//! ```
//!
//! Each frame context owns its buffers: a host-visible RGB input, GPU-local RGB, gray, blur
//! temporary, blurred and Sobel images, a GPU-local `u32[256]` histogram, a host-visible
//! copy of the histogram, and two NPU-shared buffers: the Sobel image in the NPU kernel's
//! input group (`group(0)`) and the edge mask in its output group (`group(1)`). Its graph
//! is built and prepared once, and lowers into four regions, each on its own queue:
//!
//! | region | queue        | kind         | operations                                     |
//! |--------|--------------|--------------|------------------------------------------------|
//! | 0      | GPU Upload   | copy batch   | host RGB -> GPU RGB                            |
//! | 1      | GPU Compute  | native graph | gray, blur h, blur v, Sobel, fill, histogram   |
//! | 2      | GPU Download | copy batch   | Sobel -> NPU-shared, histogram -> host-visible |
//! | 3      | NPU          | NPU run      | threshold (edges = Sobel >= level ? 255 : 0)   |
//!
//! Region `i + 1` depends on region `i` (read-after-write). Inside the native graph, the
//! histogram waits for both the Sobel kernel (read-after-write on the Sobel image) and the
//! fill (the histogram accumulates into the zeroed bins).
//!
//! # Frames in flight
//!
//! [`Pipeline::run`] uses context `k % N` for frame `k`. Contexts share no buffer, so the
//! scheduler finds no conflict between frames and overlaps them across queues: while frame
//! `k` uploads, frame `k - 1` may compute and frame `k - 2` threshold on the NPU. Before a
//! context is reused, the host waits for its previous frame, reads the edges and the
//! histogram, and hands them to the caller, always in frame order. Then it writes the new
//! frame's RGB bytes into the context's host-visible input with [`hrx::Buffer::write`]
//! (which the trace records, so a replay can reproduce the inputs) and submits.

/// The counter the pipeline samples as frames enter and leave flight.
const FRAMES_IN_FLIGHT: &str = "frames in flight";

use hrx::{
    Buffer, Completion, Error, ExecutableGraph, NpuKernel, Placement, RegionInfo, Result, Runtime,
    kernels,
};
use std::time::{Duration, Instant};

/// One decoded RGB8 frame: `width * height` pixels, interleaved `R, G, B`, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

/// How a [`Pipeline`] is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Frame contexts in the ring: how many frames may be in flight at once (at least 1,
    /// at most the runtime's submission capacity). Default 3.
    pub frames_in_flight: usize,
    /// Edge level: a Sobel magnitude `>= threshold` is an edge (255), anything else 0.
    /// Default 64.
    pub threshold: u8,
    /// The frame (index in a run, from 0) whose Compute graph also dispatches `hrx_fail`
    /// ([`kernels::fail_kernel`]) over the Sobel output, right after the Sobel kernel: a
    /// real failing kernel for backends without fault injection. On CUDA it writes to an
    /// unmapped address (`CUDA_ERROR_ILLEGAL_ADDRESS`, a device loss: quarantine and
    /// poison); the software device reports a kernel error. Default `None`.
    pub faulting_frame: Option<usize>,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        Self {
            frames_in_flight: 3,
            threshold: 64,
            faulting_frame: None,
        }
    }
}

/// What the pipeline produces for one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameOutput {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Edge mask, one byte per pixel (0 or 255), row-major.
    pub edges: Vec<u8>,
    /// 256-bin histogram of the Sobel magnitudes.
    pub histogram: [u32; 256],
}

/// What one [`Pipeline::run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineStats {
    /// Frames submitted and delivered.
    pub frames: usize,
    /// Wall-clock time of the whole run, from the first frame to the last output.
    pub wall: Duration,
    /// The largest [`Runtime::in_flight`] seen right after a submit. It counts every
    /// submission of the runtime (other users' too) and depends on timing: on a fast
    /// device an earlier frame may retire before the next submit.
    pub max_in_flight: usize,
    /// The largest number of this run's frames submitted and not yet collected by the host
    /// at once (at most `frames_in_flight`). Timing-independent: it shows how many frames
    /// the host let overlap.
    pub max_outstanding: usize,
}

impl PipelineStats {
    /// Frames per second over the wall time (0 when nothing ran).
    pub fn fps(&self) -> f64 {
        let seconds = self.wall.as_secs_f64();
        if seconds > 0.0 {
            self.frames as f64 / seconds
        } else {
            0.0
        }
    }
}

/// The loaded kernels every context shares.
struct Kernels {
    gray: hrx::GpuKernel,
    blur_h: hrx::GpuKernel,
    blur_v: hrx::GpuKernel,
    sobel: hrx::GpuKernel,
    histogram: hrx::GpuKernel,
    threshold: NpuKernel,
    /// `hrx_fail`, loaded only for a [`PipelineOptions::faulting_frame`].
    fail: Option<hrx::GpuKernel>,
}

/// One ring slot: the host-side buffers, the prepared graph and the frame in flight.
struct Context {
    rgb_host: Buffer,
    edges: Buffer,
    hist_host: Buffer,
    graph: ExecutableGraph,
    /// The same graph with `hrx_fail` after the Sobel kernel (see
    /// [`PipelineOptions::faulting_frame`]).
    faulting: Option<ExecutableGraph>,
    /// The frame index and completion of the submission not yet collected.
    pending: Option<(usize, Completion)>,
}

const HISTOGRAM_BYTES: usize = 256 * 4;

impl Context {
    fn new(runtime: &Runtime, kernels: &Kernels, pixels: usize) -> Result<Self> {
        let group = |index: usize| {
            kernels.threshold.group(index).ok_or_else(|| {
                Error::Message(format!(
                    "NPU kernel {} has no argument {index}",
                    kernels.threshold.name()
                ))
            })
        };
        let rgb_host = runtime.buffer(pixels * 3, Placement::HostVisible)?;
        let rgb = runtime.buffer(pixels * 3, Placement::GpuLocal)?;
        let gray = runtime.buffer(pixels, Placement::GpuLocal)?;
        let blur_tmp = runtime.buffer(pixels, Placement::GpuLocal)?;
        let blurred = runtime.buffer(pixels, Placement::GpuLocal)?;
        let sobel = runtime.buffer(pixels, Placement::GpuLocal)?;
        let sobel_npu = runtime.buffer(pixels, Placement::NpuShared { group: group(0)? })?;
        let edges = runtime.buffer(pixels, Placement::NpuShared { group: group(1)? })?;
        let hist = runtime.buffer(HISTOGRAM_BYTES, Placement::GpuLocal)?;
        let hist_host = runtime.buffer(HISTOGRAM_BYTES, Placement::HostVisible)?;

        let build = |fail: Option<&hrx::GpuKernel>| -> Result<ExecutableGraph> {
            let mut graph = runtime.graph();
            // Upload lane: host-visible -> GPU-local.
            graph.copy(rgb.whole(), rgb_host.whole())?;
            // Compute lane: one native graph.
            graph.gpu(&kernels.gray, &[rgb.whole(), gray.whole()])?;
            graph.gpu(&kernels.blur_h, &[gray.whole(), blur_tmp.whole()])?;
            graph.gpu(&kernels.blur_v, &[blur_tmp.whole(), blurred.whole()])?;
            graph.gpu(&kernels.sobel, &[blurred.whole(), sobel.whole()])?;
            if let Some(fail) = fail {
                graph.gpu(fail, &[sobel.whole()])?;
            }
            graph.fill(hist.whole(), 0)?;
            graph.gpu(&kernels.histogram, &[sobel.whole(), hist.whole()])?;
            // Download lane: GPU-local -> host-mapped (the NPU-shared buffer has a host
            // pointer).
            graph.copy(sobel_npu.whole(), sobel.whole())?;
            graph.copy(hist_host.whole(), hist.whole())?;
            // NPU queue.
            graph.npu(&kernels.threshold, &[sobel_npu.whole(), edges.whole()])?;
            graph.prepare()
        };
        let graph = build(None)?;
        let faulting = kernels
            .fail
            .as_ref()
            .map(|fail| build(Some(fail)))
            .transpose()?;
        Ok(Self {
            rgb_host,
            edges,
            hist_host,
            graph,
            faulting,
            pending: None,
        })
    }

    fn read_output(&self, width: usize, height: usize) -> Result<FrameOutput> {
        let edges = self.edges.to_vec()?;
        let bytes = self.hist_host.map_read(0..HISTOGRAM_BYTES)?;
        let mut histogram = [0u32; 256];
        for (bin, word) in histogram.iter_mut().zip(bytes.chunks_exact(4)) {
            *bin = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        }
        Ok(FrameOutput {
            width,
            height,
            edges,
            histogram,
        })
    }
}

/// The image pipeline for one frame size, with a ring of frame contexts (see the module
/// documentation for the graph and the queues).
pub struct Pipeline {
    runtime: Runtime,
    width: usize,
    height: usize,
    options: PipelineOptions,
    contexts: Vec<Context>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The GPU kernels, then the NPU kernel, a pipeline of `width x height` frames loads (the
/// failing kernel of [`PipelineOptions::faulting_frame`] apart): one list for
/// [`Pipeline::new`] and [`kernel_entries`].
fn specs(
    width: usize,
    height: usize,
    level: u8,
) -> ([kernels::KernelSpec; 5], kernels::NpuKernelSpec) {
    let pixels = width * height;
    (
        [
            kernels::rgb_to_gray(width, height),
            kernels::blur_horizontal(width, height),
            kernels::blur_vertical(width, height),
            kernels::sobel(width, height),
            kernels::histogram256(pixels),
        ],
        kernels::npu_threshold(pixels, level),
    )
}

/// The entry names of the kernels every pipeline dispatches, in order (`hrx_fail` apart,
/// which only a [`PipelineOptions::faulting_frame`] adds): known before a run, so that a
/// fault naming another kernel, which could never fire, is refused up front.
pub fn kernel_entries() -> Vec<String> {
    let (gpu, npu) = specs(1, 1, 0);
    gpu.into_iter().map(|k| k.entry).chain([npu.name]).collect()
}

impl Pipeline {
    /// Builds the pipeline for `width x height` frames: loads the kernels once, allocates
    /// `options.frames_in_flight` contexts and prepares each context's graph.
    ///
    /// # Errors
    /// [`Error::Message`] for a zero or too large frame size (the kernels take 32-bit
    /// sizes) or a `frames_in_flight` of 0 or above the runtime's submission capacity;
    /// otherwise the runtime's allocation, kernel loading and `prepare` errors.
    pub fn new(
        runtime: &Runtime,
        width: usize,
        height: usize,
        options: PipelineOptions,
    ) -> Result<Self> {
        let pixels = width
            .checked_mul(height)
            .filter(|&pixels| pixels > 0)
            .filter(|pixels| pixels.checked_mul(3).is_some_and(|rgb| u32::try_from(rgb).is_ok()))
            .ok_or_else(|| {
                Error::Message(format!(
                    "cannot build a pipeline for {width}x{height} frames: the size must be non-zero and \
                     width * height * 3 must fit in 32 bits"
                ))
            })?;
        let capacity = runtime.options().capacity;
        if options.frames_in_flight == 0 || options.frames_in_flight > capacity {
            return Err(Error::Message(format!(
                "frames_in_flight must be between 1 and the runtime's capacity of {capacity}, got {}",
                options.frames_in_flight
            )));
        }
        let ([gray, blur_h, blur_v, sobel, histogram], threshold) =
            specs(width, height, options.threshold);
        let kernels = Kernels {
            gray: runtime.kernel(&gray)?,
            blur_h: runtime.kernel(&blur_h)?,
            blur_v: runtime.kernel(&blur_v)?,
            sobel: runtime.kernel(&sobel)?,
            histogram: runtime.kernel(&histogram)?,
            threshold: runtime.npu_kernel(&threshold)?,
            fail: match options.faulting_frame {
                Some(_) => Some(runtime.kernel(&kernels::fail_kernel(pixels))?),
                None => None,
            },
        };
        let contexts = (0..options.frames_in_flight)
            .map(|_| Context::new(runtime, &kernels, pixels))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            runtime: runtime.clone(),
            width,
            height,
            options,
            contexts,
        })
    }

    /// Frame width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Frame height in pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The options the pipeline was built with.
    pub fn options(&self) -> PipelineOptions {
        self.options
    }

    /// The regions of one context's prepared graph (every context's graph has the same
    /// shape): queue, kind, operations and hazards.
    pub fn describe(&self) -> Vec<RegionInfo> {
        self.contexts
            .first()
            .map(|c| c.graph.describe())
            .unwrap_or_default()
    }

    /// Runs every frame of `frames` through the pipeline, keeping up to
    /// `frames_in_flight` of them in flight, and calls `on_output(frame index, output)` for
    /// each frame in frame order (indices count from 0 in this run).
    ///
    /// Frames are pulled from the iterator only when a context is free, so decoding the
    /// next frame overlaps the device work of the earlier ones.
    ///
    /// # Errors
    /// - [`Error::Message`] for a frame whose size differs from the pipeline's (or whose
    ///   `rgb` has the wrong length): the frames before it are still finished and delivered,
    ///   then the run stops with this error;
    /// - a failed or cancelled submission ([`Error::DeviceLost`], [`Error::Kernel`],
    ///   [`Error::Cancelled`]), [`Error::Busy`] when the runtime's capacity is taken by other
    ///   work, or a host-access error: the run stops, waits for its frames still in flight
    ///   and delivers nothing more.
    pub fn run(
        &mut self,
        frames: impl IntoIterator<Item = Frame>,
        mut on_output: impl FnMut(usize, FrameOutput),
    ) -> Result<PipelineStats> {
        let start = Instant::now();
        let mut stats = PipelineStats::default();
        let result = self.run_frames(frames, &mut on_output, &mut stats);
        if result.is_err() {
            self.abandon();
        }
        stats.wall = start.elapsed();
        result.map(|()| stats)
    }

    fn run_frames(
        &mut self,
        frames: impl IntoIterator<Item = Frame>,
        on_output: &mut impl FnMut(usize, FrameOutput),
        stats: &mut PipelineStats,
    ) -> Result<()> {
        // A previous run that failed (or whose callback panicked) may have left frames in
        // flight; their outputs belong to nobody now.
        self.abandon();
        let ring = self.contexts.len();
        for (index, frame) in frames.into_iter().enumerate() {
            if let Err(error) = self.check(index, &frame) {
                self.drain(on_output)?;
                return Err(error);
            }
            let slot = index % ring;
            self.collect(slot, on_output)?;
            let context = &mut self.contexts[slot];
            {
                let _write = hrx::annotate::range("write frame");
                context.rgb_host.write(0, &frame.rgb)?;
            }
            drop(frame);
            let graph = match &context.faulting {
                Some(faulting) if self.options.faulting_frame == Some(index) => faulting,
                _ => &context.graph,
            };
            let completion = graph.submit()?;
            context.pending = Some((index, completion));
            stats.frames += 1;
            stats.max_in_flight = stats.max_in_flight.max(self.runtime.in_flight());
            let outstanding = self.outstanding();
            stats.max_outstanding = stats.max_outstanding.max(outstanding);
            hrx::annotate::counter(FRAMES_IN_FLIGHT, outstanding as f64);
        }
        self.drain(on_output)
    }

    /// Frames submitted and not yet collected.
    fn outstanding(&self) -> usize {
        self.contexts.iter().filter(|c| c.pending.is_some()).count()
    }

    fn check(&self, index: usize, frame: &Frame) -> Result<()> {
        if (frame.width, frame.height) != (self.width, self.height) {
            return Err(Error::Message(format!(
                "frame {index} is {}x{}, but the pipeline was built for {}x{} frames",
                frame.width, frame.height, self.width, self.height
            )));
        }
        let expected = self.width * self.height * 3;
        if frame.rgb.len() != expected {
            return Err(Error::Message(format!(
                "frame {index} has {} RGB bytes, but {}x{} RGB8 needs {expected}",
                frame.rgb.len(),
                self.width,
                self.height
            )));
        }
        Ok(())
    }

    /// Waits for the frame in flight in `slot` (if any), reads its outputs and delivers
    /// them.
    fn collect(
        &mut self,
        slot: usize,
        on_output: &mut impl FnMut(usize, FrameOutput),
    ) -> Result<()> {
        let Some((index, completion)) = self.contexts[slot].pending.take() else {
            return Ok(());
        };
        let waited = completion.wait();
        // Sampled as a frame leaves flight too, not only as one enters it: the counter goes
        // back down, to 0 after the last frame (a timeline user reads it as a level).
        hrx::annotate::counter(FRAMES_IN_FLIGHT, self.outstanding() as f64);
        waited?;
        // Dropping the completion frees the graph's slot for the next frame.
        drop(completion);
        let context = &mut self.contexts[slot];
        let output = {
            let _read = hrx::annotate::range("read output");
            context.read_output(self.width, self.height)?
        };
        on_output(index, output);
        Ok(())
    }

    /// Collects every frame still in flight, oldest first.
    fn drain(&mut self, on_output: &mut impl FnMut(usize, FrameOutput)) -> Result<()> {
        let mut slots: Vec<(usize, usize)> = self
            .contexts
            .iter()
            .enumerate()
            .filter_map(|(slot, c)| c.pending.as_ref().map(|(index, _)| (*index, slot)))
            .collect();
        slots.sort_unstable();
        for (_, slot) in slots {
            self.collect(slot, on_output)?;
        }
        Ok(())
    }

    /// Waits for every frame still in flight and discards it, so the contexts' buffers
    /// are free again. Errors are dropped: the caller already reports one.
    fn abandon(&mut self) {
        let mut abandoned = false;
        for context in &mut self.contexts {
            if let Some((_, completion)) = context.pending.take() {
                let _ = completion.wait();
                abandoned = true;
            }
        }
        if abandoned {
            hrx::annotate::counter(FRAMES_IN_FLIGHT, 0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx::{Access, GpuAccess, Queue, RegionKind, RuntimeOptions};
    use std::sync::mpsc;

    /// A deterministic frame: a checkerboard of 8x8 tiles (dark/bright, shifted per frame)
    /// plus per-channel noise, so every stage has edges and texture to work on.
    fn synthetic(width: usize, height: usize, seed: u32) -> Frame {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
        let mut rgb = Vec::with_capacity(width * height * 3);
        for y in 0..height {
            for x in 0..width {
                let bright = (x / 8 + y / 8 + seed as usize).is_multiple_of(2);
                for channel in 0..3u32 {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let noise = (state >> 24) % 48;
                    let base = if bright {
                        180 + channel * 20
                    } else {
                        20 + channel * 10
                    };
                    rgb.push((base + noise).min(255) as u8);
                }
            }
        }
        Frame { width, height, rgb }
    }

    /// Clamp-to-edge sample of a `width x height` 8-bit image.
    fn at(image: &[u8], width: usize, height: usize, x: isize, y: isize) -> i64 {
        let x = x.clamp(0, width as isize - 1) as usize;
        let y = y.clamp(0, height as isize - 1) as usize;
        i64::from(image[y * width + x])
    }

    /// The whole pipeline on the CPU, written from the stage definitions.
    fn reference(frame: &Frame, level: u8) -> FrameOutput {
        let (w, h) = (frame.width, frame.height);
        let gray: Vec<u8> = frame
            .rgb
            .chunks_exact(3)
            .map(|p| {
                ((77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128) >> 8)
                    as u8
            })
            .collect();
        let taps = [1, 4, 6, 4, 1];
        let blur = |image: &[u8], horizontal: bool| -> Vec<u8> {
            let mut out = vec![0u8; w * h];
            for y in 0..h as isize {
                for x in 0..w as isize {
                    let sum: i64 = (-2..=2)
                        .zip(taps)
                        .map(|(d, tap)| {
                            let (sx, sy) = if horizontal { (x + d, y) } else { (x, y + d) };
                            tap * at(image, w, h, sx, sy)
                        })
                        .sum();
                    out[y as usize * w + x as usize] = ((sum + 8) >> 4) as u8;
                }
            }
            out
        };
        let blurred = blur(&blur(&gray, true), false);
        let mut sobel = vec![0u8; w * h];
        for y in 0..h as isize {
            for x in 0..w as isize {
                let p = |dx: isize, dy: isize| at(&blurred, w, h, x + dx, y + dy);
                let gx = (p(1, -1) + 2 * p(1, 0) + p(1, 1)) - (p(-1, -1) + 2 * p(-1, 0) + p(-1, 1));
                let gy = (p(-1, 1) + 2 * p(0, 1) + p(1, 1)) - (p(-1, -1) + 2 * p(0, -1) + p(1, -1));
                let magnitude = ((gx * gx + gy * gy) as f64).sqrt().floor() as i64;
                sobel[y as usize * w + x as usize] = magnitude.min(255) as u8;
            }
        }
        let mut histogram = [0u32; 256];
        for &value in &sobel {
            histogram[usize::from(value)] += 1;
        }
        let edges = sobel
            .iter()
            .map(|&v| if v >= level { 255 } else { 0 })
            .collect();
        FrameOutput {
            width: w,
            height: h,
            edges,
            histogram,
        }
    }

    fn runtime() -> Runtime {
        Runtime::new(RuntimeOptions::sim()).expect("software runtime")
    }

    #[test]
    fn matches_the_cpu_reference_in_frame_order() {
        let runtime = runtime();
        for (width, height) in [(37, 23), (64, 48)] {
            for frames_in_flight in [1, 3] {
                let options = PipelineOptions {
                    frames_in_flight,
                    threshold: 40,
                    ..PipelineOptions::default()
                };
                let mut pipeline =
                    Pipeline::new(&runtime, width, height, options).expect("pipeline");
                let frames: Vec<Frame> =
                    (0..7).map(|seed| synthetic(width, height, seed)).collect();
                let mut outputs = Vec::new();
                let stats = pipeline
                    .run(frames.clone(), |index, output| {
                        outputs.push((index, output))
                    })
                    .expect("run");
                assert_eq!(stats.frames, 7);
                assert!(stats.max_outstanding <= frames_in_flight);
                assert_eq!(
                    outputs.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
                    (0..7).collect::<Vec<_>>()
                );
                for ((index, output), frame) in outputs.iter().zip(&frames) {
                    let expected = reference(frame, options.threshold);
                    assert_eq!(
                        output.histogram, expected.histogram,
                        "{width}x{height} frame {index} histogram"
                    );
                    assert!(
                        output.edges == expected.edges,
                        "{width}x{height} frame {index} edges differ"
                    );
                    assert_eq!((output.width, output.height), (width, height));
                    assert_eq!(
                        output.histogram.iter().sum::<u32>() as usize,
                        width * height
                    );
                    // The synthetic frames have edges and flat areas.
                    assert!(output.edges.contains(&255) && output.edges.contains(&0));
                }
            }
        }
    }

    #[test]
    fn a_pipeline_runs_again_and_default_threshold_applies() {
        let runtime = runtime();
        let mut pipeline =
            Pipeline::new(&runtime, 20, 10, PipelineOptions::default()).expect("pipeline");
        for round in 0..2 {
            let frame = synthetic(20, 10, round);
            let mut got = None;
            let stats = pipeline
                .run([frame.clone()], |_, output| got = Some(output))
                .expect("run");
            assert_eq!(stats.frames, 1);
            assert_eq!(got.expect("one output"), reference(&frame, 64));
        }
    }

    #[test]
    fn the_graph_crosses_four_queues() {
        let runtime = runtime();
        let pipeline =
            Pipeline::new(&runtime, 16, 16, PipelineOptions::default()).expect("pipeline");
        let regions = pipeline.describe();
        let shape: Vec<_> = regions
            .iter()
            .map(|r| (r.queue, r.kind, r.nodes.clone()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (Queue::GpuUpload, RegionKind::CopyBatch, 0..1),
                (Queue::GpuCompute, RegionKind::NativeGraph, 1..7),
                (Queue::GpuDownload, RegionKind::CopyBatch, 7..9),
                (Queue::Npu, RegionKind::NpuRun, 9..10),
            ]
        );
        for (index, region) in regions.iter().enumerate().skip(1) {
            let raw = |h: &hrx::Hazard| {
                h.producer == index - 1 && h.kind == hrx::HazardKind::ReadAfterWrite
            };
            assert!(
                region.hazards.iter().any(raw),
                "region {index} reads what region {} wrote",
                index - 1
            );
        }
        assert_eq!(regions[0].copy_bytes, 16 * 16 * 3);
        assert_eq!(regions[2].copy_bytes, 16 * 16 + 1024);
        // One native graph per context.
        assert_eq!(runtime.counters().native_graphs_prepared, 3);
    }

    /// Several frames are in flight at once. Deterministic: a scoped callback holds the
    /// Compute worker until the runtime has four submissions in flight, so no frame can
    /// retire before the pipeline submitted three of them.
    #[test]
    fn several_frames_are_in_flight() {
        let runtime = runtime();
        let (width, height) = (37, 23);
        let options = PipelineOptions {
            frames_in_flight: 3,
            threshold: 64,
            faulting_frame: None,
        };
        let mut pipeline = Pipeline::new(&runtime, width, height, options).expect("pipeline");

        let dummy = runtime.buffer(64, Placement::GpuLocal).expect("buffer");
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let mut gate = runtime.graph();
        // SAFETY: the callback touches no memory and owns no native resource.
        unsafe {
            gate.gpu_scoped(&[GpuAccess::new(dummy.whole(), Access::Read)], move |_| {
                let _ = started_tx.send(());
                let _ = release_rx.recv_timeout(Duration::from_secs(30));
                Ok(())
            })
            .expect("scoped");
        }
        let gate = gate.prepare().expect("prepare gate");
        let gate_done = gate.submit().expect("submit gate");
        started_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the gate runs");
        let watcher = {
            let runtime = runtime.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(30);
                while runtime.in_flight() < 4 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let _ = release_tx.send(());
            })
        };

        let frames: Vec<Frame> = (0..6).map(|seed| synthetic(width, height, seed)).collect();
        let mut outputs = Vec::new();
        let stats = pipeline
            .run(frames.clone(), |index, output| {
                outputs.push((index, output))
            })
            .expect("run");
        watcher.join().expect("watcher");
        gate_done.wait().expect("gate");

        assert_eq!(stats.frames, 6);
        assert_eq!(stats.max_outstanding, 3);
        // The gate plus at least two frames: after the second frame's submit nothing could
        // have retired yet.
        assert!(stats.max_in_flight >= 3, "{stats:?}");
        assert_eq!(outputs.len(), 6);
        for ((index, output), frame) in outputs.iter().zip(&frames) {
            assert_eq!(*output, reference(frame, 64), "frame {index}");
        }
        assert!(outputs.iter().map(|(i, _)| *i).eq(0..6));
    }

    /// The faulting frame's graph runs `hrx_fail` after the Sobel kernel: the frames
    /// before it are delivered, and the run stops with that kernel's failure (a kernel
    /// error on the software device).
    #[test]
    fn the_faulting_frame_fails_with_hrx_fail_after_the_earlier_frames() {
        let runtime = runtime();
        let (width, height) = (32, 16);
        let options = PipelineOptions {
            frames_in_flight: 1,
            faulting_frame: Some(1),
            ..PipelineOptions::default()
        };
        let mut pipeline = Pipeline::new(&runtime, width, height, options).expect("pipeline");
        let frames: Vec<_> = (0..4).map(|seed| synthetic(width, height, seed)).collect();
        let mut delivered = Vec::new();
        let error = pipeline
            .run(frames.clone(), |index, _| delivered.push(index))
            .expect_err("frame 1 fails");
        assert_eq!(delivered, [0]);
        assert!(matches!(error, Error::Kernel(_)), "{error:?}");
        assert!(error.to_string().contains("hrx_fail"), "{error}");
        // Without the option the same frames all pass.
        let mut clean =
            Pipeline::new(&runtime, width, height, PipelineOptions::default()).expect("pipeline");
        let stats = clean.run(frames, |_, _| {}).expect("clean run");
        assert_eq!(stats.frames, 4);
    }

    #[test]
    fn a_wrong_frame_is_an_error_after_the_earlier_frames() {
        let runtime = runtime();
        let mut pipeline =
            Pipeline::new(&runtime, 37, 23, PipelineOptions::default()).expect("pipeline");
        let frames = vec![
            synthetic(37, 23, 0),
            synthetic(37, 23, 1),
            synthetic(23, 37, 2),
            synthetic(37, 23, 3),
        ];
        let mut delivered = Vec::new();
        let error = pipeline
            .run(frames.clone(), |index, _| delivered.push(index))
            .expect_err("wrong size");
        assert!(
            matches!(&error, Error::Message(m) if m.contains("frame 2 is 23x37") && m.contains("37x23")),
            "{error}"
        );
        assert_eq!(delivered, vec![0, 1]);

        let mut short = synthetic(37, 23, 4);
        short.rgb.pop();
        let error = pipeline
            .run([short], |_, _| panic!("nothing to deliver"))
            .expect_err("short frame");
        assert!(
            matches!(&error, Error::Message(m) if m.contains("RGB bytes")),
            "{error}"
        );

        // The pipeline stays usable.
        let mut count = 0;
        pipeline
            .run(frames.into_iter().take(2), |_, _| count += 1)
            .expect("run");
        assert_eq!(count, 2);
    }

    #[test]
    fn bad_options_are_errors() {
        let runtime = runtime();
        let zero = PipelineOptions {
            frames_in_flight: 0,
            ..PipelineOptions::default()
        };
        assert!(matches!(
            Pipeline::new(&runtime, 8, 8, zero),
            Err(Error::Message(_))
        ));
        let too_many = PipelineOptions {
            frames_in_flight: runtime.options().capacity + 1,
            ..PipelineOptions::default()
        };
        assert!(matches!(
            Pipeline::new(&runtime, 8, 8, too_many),
            Err(Error::Message(_))
        ));
        assert!(matches!(
            Pipeline::new(&runtime, 0, 8, PipelineOptions::default()),
            Err(Error::Message(_))
        ));
        assert!(matches!(
            Pipeline::new(&runtime, 1 << 20, 1 << 20, PipelineOptions::default()),
            Err(Error::Message(_))
        ));
    }
}
