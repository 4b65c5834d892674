//! What a replay does: backend, repeats, comparisons and test hooks.

use hrx::kernels::HostKernelFn;
use hrx::{BackendChoice, FaultSpec};
use std::fmt;
use std::time::Duration;

/// A progress callback: `(done, total)` units of work (submissions replayed and per-op
/// launches), called from the replaying thread.
pub type Progress = Box<dyn Fn(u64, u64) + Send + Sync>;

/// How to replay a trace. `ReplayOptions::default()` replays once on the software device
/// and compares outputs exactly, with no timing threshold.
pub struct ReplayOptions {
    /// The backend to replay on. Default [`BackendChoice::Sim`].
    pub backend: BackendChoice,
    /// How many times the whole trace is replayed, each time in a fresh runtime (at least
    /// 1). Outputs are compared for every repeat; times are pooled over all repeats.
    pub repeat: usize,
    /// Replays of each runtime run, and thrown away, before the measured repeats: first
    /// launches, kernel compilation, clocks and caches warmed up as the capture's were after
    /// its first frames. A whole replay warms up on the whole trace, a streamed one on its
    /// first chunk. Default 0 (`hrx-trace replay`: 1).
    pub warmup: usize,
    /// Submit at the captured pace: each submission no earlier after the replay's first
    /// than it was captured after the capture's first (a program that paced its frames, a
    /// camera's 30 per second, replays as it ran; without, as fast as the runtime takes
    /// them, its slots and ordering kept). Default `false`.
    pub pace_captured: bool,
    /// Additionally report per-operation medians: each operation's time inside its native
    /// graph as the replay's backend timed it (the software device always; CUDA with
    /// kernel times), in the repeats themselves. With [`ReplayOptions::isolated`], each
    /// operation launched and timed on its own instead (one graph per operation).
    pub per_op: bool,
    /// With [`ReplayOptions::per_op`]: each operation launched on its own in a fresh
    /// runtime, one graph per operation, its region time taken as its time. It measures the
    /// operation with a whole launch's overhead around it (on the H200, 1.5-3.4x what
    /// Nsight Compute reports for the same kernels), not what it costs inside its graph.
    pub isolated: bool,
    /// Compare differing outputs as little-endian `f32` arrays within this tolerance
    /// (absolute below magnitude 1, relative above). Needs output contents in the trace
    /// (`trace_contents`); without them digests are compared exactly and a note says so.
    pub tolerance: Option<f64>,
    /// A region whose replay median time exceeds the captured median by more than this
    /// ratio (by the timing rule, and by more than its clock's floor: [`ReplayOptions::floor`])
    /// is a timing regression.
    pub max_slowdown: Option<f64>,
    /// Differences of median host times below this are never a timing regression: tiny
    /// regions timed on the host are dominated by scheduling noise. Default 100 µs.
    pub timing_floor: Duration,
    /// Differences of median device times (GPU timestamps: a region's events, an
    /// operation's own clock) below this are never a timing regression. Default 500 ns, the
    /// resolution CUDA documents for `cuEventElapsedTime` ("around 0.5 microseconds"); the
    /// scheduling noise the host floor stands for is not in device times, so a kernel of a
    /// few µs can be judged.
    pub device_timing_floor: Duration,
    /// Replay only submissions 1 to N of each runtime, numbered as in the whole recording
    /// (a range or trim that starts later keeps its numbers).
    pub until: Option<u64>,
    /// Replay the fault injection the trace recorded (`RuntimeStart::fault`) on the
    /// software device. Default `true`. Ignored where [`ReplayOptions::fault`] is set.
    pub captured_fault: bool,
    /// Inject this fault at replay instead of the captured one (software device only).
    pub fault: Option<FaultSpec>,
    /// Whether [`BackendChoice::Auto`] opens a GPU on this host, where it injects no fault.
    /// `None` (the default): asked of the device once per process, only for a capture that
    /// lost its GPU to a sticky error (`plan::RuntimePlan::runs`). A test without a GPU sets
    /// it to state what a GPU host decides.
    #[doc(hidden)]
    pub auto_opens_gpu: Option<bool>,
    /// Replace the host implementation of kernels by entry name (software device and NPU
    /// simulator): a test hook to prove that changed behaviour is detected.
    pub kernel_overrides: Vec<(String, HostKernelFn)>,
    /// Slow GPU kernels by entry name, in percent (`hrx-trace replay --inject-slowdown`): a
    /// test that a timing gate catches a slower kernel and names it, without rebuilding it
    /// ([`hrx::kernels::KernelCode::slowdown_percent`]: the software device and hrx's built-in
    /// kernels on CUDA). The report says it; `hrx-trace replay` saves no baseline from such a
    /// replay (`--save-baseline` is refused beside it).
    pub slowdowns: Vec<(String, u32)>,
    /// Called as work completes, for progress bars.
    pub progress: Option<Progress>,
    /// Submissions per chunk when a trace file is streamed ([`crate::replay_file`]): what
    /// replay holds at a time (the chunk, the one before it, and their replays). Default
    /// [`DEFAULT_CHUNK_SUBMISSIONS`].
    pub chunk_submissions: u64,
    /// Bytes of captured contents (blobs) a chunk may bring in: where a chunk of
    /// [`ReplayOptions::chunk_submissions`] brings more (distinct large frames), chunks are
    /// made smaller in proportion, and the report says so. Default
    /// [`DEFAULT_CHUNK_BLOB_BYTES`].
    pub chunk_blob_bytes: u64,
    /// Region and operation timings a chunk may hold, its repeats' together: where a chunk
    /// of [`ReplayOptions::chunk_submissions`] holds more (a graph of many regions), chunks
    /// are made smaller in proportion, and the report says so. Default
    /// [`DEFAULT_CHUNK_TIMINGS`].
    pub chunk_timings: u64,
}

/// Region and operation timings a chunk of a streamed replay holds at most, where single
/// submissions do not hold more: 2^17. Replay holds about 2 KB a region with its operations
/// while a chunk is replayed and compared (two chunks at a time): chunks of 2,048
/// submissions of a 2,000-region graph took 4.0 GB, of a 100,000-region graph 3.56 GB (a
/// break-it pass).
pub const DEFAULT_CHUNK_TIMINGS: u64 = 1 << 17;

/// Bytes of captured contents a chunk of a streamed replay brings in at most, where single
/// submissions do not bring more: 256 MiB.
pub const DEFAULT_CHUNK_BLOB_BYTES: u64 = 256 << 20;

/// Submissions per chunk of a streamed replay: about 10 KB each are held while a chunk is
/// replayed and compared (two chunks, plus the records the file holds ahead of the chunk being
/// read: what the writer's threads had in flight).
pub const DEFAULT_CHUNK_SUBMISSIONS: u64 = 2048;

/// The entries the kernel tables (`stats`, `diff`, `replay --per-op`) list for copies and
/// fills beside the kernels: `--inject-slowdown` slows kernels only.
const COPY_ENTRIES: [&str; 4] = ["upload", "download", "copy", "fill"];

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            backend: BackendChoice::Sim,
            repeat: 1,
            warmup: 0,
            pace_captured: false,
            per_op: false,
            isolated: false,
            tolerance: None,
            max_slowdown: None,
            timing_floor: Duration::from_micros(100),
            device_timing_floor: Duration::from_nanos(500),
            until: None,
            captured_fault: true,
            fault: None,
            auto_opens_gpu: None,
            kernel_overrides: Vec::new(),
            slowdowns: Vec::new(),
            progress: None,
            chunk_submissions: DEFAULT_CHUNK_SUBMISSIONS,
            chunk_blob_bytes: DEFAULT_CHUNK_BLOB_BYTES,
            chunk_timings: DEFAULT_CHUNK_TIMINGS,
        }
    }
}

impl fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("backend", &self.backend)
            .field("repeat", &self.repeat)
            .field("warmup", &self.warmup)
            .field("pace_captured", &self.pace_captured)
            .field("per_op", &self.per_op)
            .field("isolated", &self.isolated)
            .field("tolerance", &self.tolerance)
            .field("max_slowdown", &self.max_slowdown)
            .field("timing_floor", &self.timing_floor)
            .field("device_timing_floor", &self.device_timing_floor)
            .field("until", &self.until)
            .field("captured_fault", &self.captured_fault)
            .field("fault", &self.fault)
            .field(
                "kernel_overrides",
                &self
                    .kernel_overrides
                    .iter()
                    .map(|(entry, _)| entry)
                    .collect::<Vec<_>>(),
            )
            .field("slowdowns", &self.slowdowns)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl ReplayOptions {
    /// Sets the backend.
    pub fn backend(mut self, backend: BackendChoice) -> Self {
        self.backend = backend;
        self
    }
    /// Sets the number of repeats (at least 1).
    pub fn repeat(mut self, repeat: usize) -> Self {
        self.repeat = repeat.max(1);
        self
    }
    /// Sets the replays thrown away before the measured ones ([`ReplayOptions::warmup`]).
    pub fn warmup(mut self, warmup: usize) -> Self {
        self.warmup = warmup;
        self
    }
    /// Submits at the captured pace or not ([`ReplayOptions::pace_captured`]).
    pub fn pace_captured(mut self, on: bool) -> Self {
        self.pace_captured = on;
        self
    }
    /// Turns per-operation timing on or off.
    pub fn per_op(mut self, on: bool) -> Self {
        self.per_op = on;
        self
    }
    /// Times each operation on its own ([`ReplayOptions::isolated`]); implies `per_op`.
    pub fn isolated(mut self, on: bool) -> Self {
        self.isolated = on;
        self.per_op |= on;
        self
    }
    /// Sets the float tolerance.
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = Some(tolerance);
        self
    }
    /// Sets the slowdown ratio above which a region is a timing regression.
    pub fn max_slowdown(mut self, ratio: f64) -> Self {
        self.max_slowdown = Some(ratio);
        self
    }
    /// Sets the timing noise floor.
    pub fn timing_floor(mut self, floor: Duration) -> Self {
        self.timing_floor = floor;
        self
    }
    /// Replays only submissions 1 to `submissions` of each runtime, numbered as in the whole
    /// recording.
    pub fn until(mut self, submissions: u64) -> Self {
        self.until = Some(submissions);
        self
    }
    /// Injects `fault` at replay instead of the captured fault.
    pub fn fault(mut self, fault: FaultSpec) -> Self {
        self.fault = Some(fault);
        self
    }
    /// States whether [`BackendChoice::Auto`] opens a GPU on this host
    /// ([`ReplayOptions::auto_opens_gpu`]).
    #[doc(hidden)]
    pub fn auto_opens_gpu(mut self, gpu: bool) -> Self {
        self.auto_opens_gpu = Some(gpu);
        self
    }
    /// Whether to replay the captured fault injection.
    pub fn captured_fault(mut self, on: bool) -> Self {
        self.captured_fault = on;
        self
    }
    /// Replaces the host code of kernel `entry` at replay.
    pub fn kernel_override(mut self, entry: impl Into<String>, host: HostKernelFn) -> Self {
        self.kernel_overrides.push((entry.into(), host));
        self
    }
    /// Slows kernel `entry` by `percent` at replay ([`ReplayOptions::slowdowns`]).
    /// A second slowdown of one entry replaces the first.
    pub fn slowdown(mut self, entry: impl Into<String>, percent: u32) -> Self {
        let entry = entry.into();
        self.slowdowns.retain(|(name, _)| *name != entry);
        self.slowdowns.push((entry, percent));
        self
    }
    /// Sets the submissions per chunk of a streamed replay (at least 1).
    pub fn chunk_submissions(mut self, submissions: u64) -> Self {
        self.chunk_submissions = submissions.max(1);
        self
    }
    /// Sets the bytes of captured contents a chunk of a streamed replay may bring in
    /// ([`ReplayOptions::chunk_blob_bytes`]).
    pub fn chunk_blob_bytes(mut self, bytes: u64) -> Self {
        self.chunk_blob_bytes = bytes;
        self
    }
    /// The timings a chunk's submissions may record once, where each is replayed
    /// `repeat` times: [`ReplayOptions::chunk_timings`] shared by the repeats (a chunk holds
    /// every repeat's: `--repeat 5` took 414 MB where one took 222 MB, a break-it pass).
    pub fn chunk_timings_per_repeat(&self) -> u64 {
        (self.chunk_timings / self.repeat.max(1) as u64).max(1)
    }
    /// Sets the region and operation timings a chunk of a streamed replay may hold
    /// ([`ReplayOptions::chunk_timings`]).
    pub fn chunk_timings(mut self, timings: u64) -> Self {
        self.chunk_timings = timings;
        self
    }
    /// Sets the progress callback.
    pub fn progress(mut self, progress: impl Fn(u64, u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// The floor of a row timed on `clock` ([`ReplayOptions::timing_floor`],
    /// [`ReplayOptions::device_timing_floor`]).
    pub fn floor(&self, clock: crate::Clock) -> Duration {
        match clock {
            crate::Clock::Host => self.timing_floor,
            crate::Clock::Device => self.device_timing_floor,
        }
    }

    /// The slowdown asked for kernel `entry`, in percent (0: none).
    pub(crate) fn slowdown_for(&self, entry: &str) -> u32 {
        self.slowdowns
            .iter()
            .rev()
            .find(|(name, _)| name == entry)
            .map_or(0, |(_, percent)| *percent)
    }

    /// Refuses slowdowns of kernels no graph of the trace dispatches on a GPU, naming those
    /// it does: a misspelt name, or a kernel loaded but never run (a trim keeps every load),
    /// must not pass as a gate that caught nothing.
    ///
    /// # Errors
    /// [`crate::ReplayError::Unreplayable`] naming the first such entry.
    pub(crate) fn check_slowdowns<'e>(
        &self,
        gpu_entries: impl IntoIterator<Item = &'e str>,
    ) -> Result<(), crate::ReplayError> {
        if self.slowdowns.is_empty() {
            return Ok(());
        }
        let known: std::collections::BTreeSet<&str> = gpu_entries.into_iter().collect();
        match self
            .slowdowns
            .iter()
            .find(|(entry, _)| !known.contains(entry.as_str()))
        {
            None => Ok(()),
            Some((entry, _)) => {
                let kernels = if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.into_iter().collect::<Vec<_>>().join(", ")
                };
                // The kernel tables list copies and fills as entries beside the kernels
                // (`upload`, `download`): named here, they are refused as what they are, not
                // as an unknown kernel (a fresh user's pass read "its GPU kernels: none").
                Err(crate::ReplayError::unreplayable(
                    if COPY_ENTRIES.contains(&entry.as_str()) {
                        format!(
                            "--inject-slowdown names {entry}, the stats tables' entry for a \
                             {}: only GPU kernels can be slowed, not copies or fills (the \
                             trace's GPU kernels: {kernels})",
                            if entry == "fill" { "fill" } else { "copy" }
                        )
                    } else {
                        format!(
                            "--inject-slowdown names kernel {entry}, which no graph of the \
                             trace runs on a GPU (its GPU kernels: {kernels})"
                        )
                    },
                ))
            }
        }
    }

    pub(crate) fn override_for(&self, entry: &str) -> Option<HostKernelFn> {
        self.kernel_overrides
            .iter()
            .rev()
            .find(|(name, _)| name == entry)
            .map(|(_, host)| *host)
    }
}

#[cfg(test)]
mod tests {
    use super::ReplayOptions;

    /// A copy's or a fill's entry of the kernel tables (`upload`, `download`, `copy`,
    /// `fill`) is refused as one that cannot be slowed, naming the kernels that can; a name
    /// no table lists stays an unknown kernel.
    #[test]
    fn a_slowdown_of_a_copy_is_refused_as_a_copy() {
        let slowing = |entry: &str| ReplayOptions {
            slowdowns: vec![(entry.to_owned(), 100)],
            ..ReplayOptions::default()
        };
        for (entry, what) in [
            ("upload", "copy"),
            ("download", "copy"),
            ("copy", "copy"),
            ("fill", "fill"),
        ] {
            let refused = slowing(entry).check_slowdowns([]).unwrap_err().to_string();
            assert!(
                refused.contains(&format!(
                    "--inject-slowdown names {entry}, the stats tables' entry for a {what}: only \
                     GPU kernels can be slowed, not copies or fills (the trace's GPU kernels: \
                     none)"
                )),
                "{refused}"
            );
        }
        let some = slowing("upload")
            .check_slowdowns(["hrx_sobel", "hrx_blur_h"])
            .unwrap_err()
            .to_string();
        assert!(
            some.ends_with("(the trace's GPU kernels: hrx_blur_h, hrx_sobel)"),
            "{some}"
        );
        let unknown = slowing("hrx_nope")
            .check_slowdowns([])
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("names kernel hrx_nope, which no graph of the trace runs on a GPU"),
            "{unknown}"
        );
        assert!(slowing("hrx_sobel").check_slowdowns(["hrx_sobel"]).is_ok());
    }
}
