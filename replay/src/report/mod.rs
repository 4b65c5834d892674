//! The replay report: verdict, per-submission results, divergences, timing; as text and
//! (through serde) as JSON.
//!
//! The files: this one holds the report's rows and [`Report`] itself; `divergence` what
//! differs between capture and replay ([`Divergence`], one line each); `text` the report
//! as readable text ([`Report::to_text`]).

mod divergence;
mod text;

pub use divergence::{Divergence, DivergenceKind};

use serde::Serialize;
use std::collections::BTreeMap;

/// How a submission ended, without its message: the one outcome type of `diff` and
/// `replay` (compared by [`hrx_analysis::compare::outcomes`]).
pub use hrx_analysis::Outcome;

/// The verdict: the one verdict type of `diff` and `replay`
/// ([`hrx_analysis::compare::Verdict::of`] the counts of regressions and one-sided items; a
/// replay has no one-sided items, so it is `same` or `regression`).
pub use hrx_analysis::compare::Verdict;

/// A distribution of durations in ns: the one summary of `diff` and `replay`, which the
/// timing rule ([`hrx_analysis::compare::timing`]) reads.
pub use hrx_analysis::compare::Durations;

/// A recorded status as an outcome and its message (error or cancellation reason).
pub(crate) fn outcome_of(status: &hrx_capture::schema::Status) -> (Outcome, String) {
    use hrx_capture::schema::Status;
    let message = match status {
        Status::Ok => String::new(),
        Status::Failed { error } => error.clone(),
        Status::Cancelled { reason } => reason.clone(),
    };
    (Outcome::of(status), message)
}

/// The trace that was replayed.
#[derive(Clone, Debug, Serialize)]
pub struct TraceInfo {
    /// The file, when replayed from one.
    pub source: Option<String>,
    /// The trace format version, `major.minor`.
    pub format_version: String,
    /// Which recording it is: its host, pid and wall-clock start (`SessionStart`); a baseline
    /// is judged only against replays of the recording it was saved from.
    pub recorded: Option<String>,
    /// Whether the whole trace was read (closed cleanly, nothing skipped, no records lost
    /// while recording).
    pub complete: bool,
    /// Records lost while recording ([`hrx_capture::Lost`]); a replay cannot be exact then.
    pub records_lost: u64,
    /// Records lost by kind.
    pub records_lost_by_kind: BTreeMap<String, u64>,
    /// Whether the trace was recorded in lossy mode, whether or not it lost any
    /// ([`hrx_capture::Lost::lossy`]): the JSON's `lost.lossy` ([`Report::json_value`]).
    #[serde(skip)]
    pub lossy: bool,
    /// Bytes the trace's range (a trim, a range recording) reads whose contents at its start
    /// it lacks: a replay cannot be exact then, and the outputs that depend on them are
    /// excluded from the comparison (said first, as lost records are).
    pub range_unknown_bytes: u64,
    /// Each captured runtime.
    pub runtimes: Vec<RuntimeInfo>,
    /// The capture's highest host load per CPU (`HOST_LOAD_COUNTER`), where it recorded
    /// one: what a baseline's load is weighed against ([`crate::Baseline::judge`]).
    #[serde(skip)]
    pub host_load_per_cpu: Option<f64>,
}

/// One captured runtime.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeInfo {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured backend.
    pub backend: String,
    /// Captured device.
    pub device: String,
    /// The backend it was replayed on (empty when nothing ran).
    pub replay_backend: String,
    /// Whether its captured and replayed times are comparable: both on the same backend.
    /// When they are not, timing rows carry no ratio and none is judged slow.
    pub timings_comparable: bool,
    /// Buffers created.
    pub buffers: usize,
    /// Kernels loaded.
    pub kernels: usize,
    /// Prepared graphs.
    pub graphs: usize,
    /// Submissions captured.
    pub submissions: usize,
    /// Submissions replayed (fewer with `until`).
    pub replayed_submissions: usize,
    /// The highest submission number captured (0 for none), numbered as in the whole
    /// recording, as `until` numbers them: a range or trim may start past 1.
    pub last_submission: u64,
    /// The captured fault injection.
    pub captured_fault: Option<String>,
    /// The fault injected at replay.
    pub replay_fault: Option<String>,
}

/// How the replay ran.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayInfo {
    /// Replay backend (the first runtime's; each runtime's is in [`RuntimeInfo`]).
    pub backend: String,
    /// The backend asked for: `auto` (CUDA, then HIP, then the software device), `sim`,
    /// `cuda` or `hip`.
    pub requested: String,
    /// Replay device.
    pub device: String,
    /// Repeats.
    pub repeat: usize,
    /// Whether operations were also timed (`op_timing`).
    pub per_op: bool,
    /// Whether each operation was launched and timed on its own (`--isolated`), not timed
    /// inside its native graph by the backend during the replays.
    pub isolated: bool,
    /// Float tolerance, if any.
    pub tolerance: Option<f64>,
    /// Slowdown ratio threshold, if any.
    pub max_slowdown: Option<f64>,
    /// Timing noise floor in ns.
    pub timing_floor_ns: u64,
    /// The floor of rows on device time ([`crate::ReplayOptions::device_timing_floor`]), ns.
    pub device_timing_floor_ns: u64,
    /// Submissions replayed per runtime, if limited.
    pub until: Option<u64>,
    /// Replays run and thrown away before the measured ones
    /// ([`crate::ReplayOptions::warmup`]).
    pub warmup: usize,
    /// Whether submissions were paced as captured ([`crate::ReplayOptions::pace_captured`]).
    pub pace_captured: bool,
    /// The host it ran on: what shapes host times and the launches of device work.
    pub host: HostLoad,
    /// Kernels slowed on purpose ([`crate::ReplayOptions::slowdowns`]): a test of the gate,
    /// not a measurement of the build.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slowdowns: Vec<InjectedSlowdown>,
    /// The GPU's clocks right before the first timed repeat and right after the last, on
    /// CUDA (NVML); `None` on a backend without clocks to read (the software device).
    pub gpu_clocks: Option<GpuClocksAround>,
}

/// A kernel slowed on purpose at replay ([`crate::ReplayOptions::slowdowns`]).
#[derive(Clone, Debug, Serialize)]
pub struct InjectedSlowdown {
    /// Kernel entry.
    pub entry: String,
    /// How much longer it ran, in percent of its own work.
    pub percent: u32,
}

/// The GPU's clocks right before a replay's first timed repeat and right after its last (not
/// inside any measured time), each read or the one-line reason it was not
/// ([`hrx::Runtime::gpu_clock_reader`]: NVML on CUDA).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuClocksAround {
    /// Before the first timed repeat (after the warm-ups).
    pub before: ClockReading,
    /// After the last timed repeat.
    pub after: ClockReading,
    /// Why the timings may reflect the clocks rather than the code, set by
    /// [`GpuClocksAround::new`] and said of the clocks (`moved during the replay (SM 1980 ->
    /// 1755 MHz) and were limited by SW power cap`): the SM or memory clock moved by more
    /// than [`CLOCKS_DIFFER`] between before and after, or a limit other than idle was
    /// active in either reading (a power cap, a temperature, a clock setting:
    /// [`hrx::gpu::ClockLimits::limits_work`]).
    #[serde(default)]
    pub caveat: Option<String>,
}

/// How far apart two clock readings must be, as a fraction of the larger, to count as
/// moved: between a replay's before and after ([`GpuClocksAround::caveat`]), and between a
/// baseline's clocks and a replay's ([`crate::Baseline::judge`]). Boost clocks step by 15 MHz
/// or so from moment to moment; a step is not a change of conditions.
pub const CLOCKS_DIFFER: f64 = 0.05;

/// One reading of the GPU's clocks.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockReading {
    /// The clocks (JSON: `{"read": {"sm_mhz": ..., "limits": [...], ...}}`).
    Read(hrx::gpu::GpuClocks),
    /// Why they could not be read, in one line (JSON: `{"unreadable": "..."}`).
    Unreadable(String),
}

impl ClockReading {
    /// The clocks, where read.
    pub fn clocks(&self) -> Option<&hrx::gpu::GpuClocks> {
        match self {
            ClockReading::Read(clocks) => Some(clocks),
            ClockReading::Unreadable(_) => None,
        }
    }
}

impl std::fmt::Display for ClockReading {
    /// The clocks ([`hrx::gpu::GpuClocks`]'s form), or `not read (WHY)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockReading::Read(clocks) => write!(f, "{clocks}"),
            ClockReading::Unreadable(why) => write!(f, "not read ({why})"),
        }
    }
}

/// The clocks of `a` and `b` (SM and memory, MHz) that differ by more than [`CLOCKS_DIFFER`],
/// each as `SM 1980 -> 1755 MHz`.
pub(crate) fn clocks_moved(a: &hrx::gpu::GpuClocks, b: &hrx::gpu::GpuClocks) -> Vec<String> {
    let apart = |x: u32, y: u32| {
        let larger = f64::from(x.max(y));
        larger > 0.0 && f64::from(x.abs_diff(y)) > CLOCKS_DIFFER * larger
    };
    [("SM", a.sm_mhz, b.sm_mhz), ("memory", a.mem_mhz, b.mem_mhz)]
        .into_iter()
        .filter(|&(_, x, y)| apart(x, y))
        .map(|(name, x, y)| format!("{name} {x} -> {y} MHz"))
        .collect()
}

impl GpuClocksAround {
    /// The two readings, with their [`GpuClocksAround::caveat`].
    pub fn new(before: ClockReading, after: ClockReading) -> GpuClocksAround {
        let mut why = Vec::new();
        if let (Some(b), Some(a)) = (before.clocks(), after.clocks()) {
            let moved = clocks_moved(b, a);
            if !moved.is_empty() {
                why.push(format!("moved during the replay ({})", moved.join(", ")));
            }
        }
        let mut limits = hrx::gpu::ClockLimits::default();
        for clocks in [before.clocks(), after.clocks()].into_iter().flatten() {
            limits.0 |= clocks.limits.0;
        }
        limits.0 &= !hrx::gpu::ClockLimits::IDLE.0;
        if !limits.is_empty() {
            why.push(format!("were limited by {limits}"));
        }
        let caveat = (!why.is_empty()).then(|| why.join(" and "));
        GpuClocksAround {
            before,
            after,
            caveat,
        }
    }
}

impl HostLoad {
    /// Whether the host was loaded: a load average before or after of at least its CPUs.
    pub fn loaded(&self) -> bool {
        self.cpus > 0
            && [self.load_before, self.load_after]
                .into_iter()
                .flatten()
                .any(|l| l >= self.cpus as f64)
    }

    /// `B before and A after`, each load as every verb writes it
    /// ([`hrx_analysis::units::host_load`]: `4.96 (2.48 per CPU on 2 CPUs)`, or `unknown`),
    /// for `replay`'s `host:` line, `record`'s note and the notes that name a loaded host.
    pub fn describe(&self) -> String {
        let load = |l: Option<f64>| {
            l.map_or("unknown".to_owned(), |load| {
                hrx_analysis::units::host_load(hrx_analysis::units::Load::Average {
                    load,
                    cpus: self.cpus,
                })
            })
        };
        format!(
            "{} before and {} after",
            load(self.load_before),
            load(self.load_after)
        )
    }
}

/// The host a replay ran on: its CPUs and the 1-minute load average (`/proc/loadavg`)
/// before and after the replay (`None` where the system does not say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct HostLoad {
    /// CPUs available to the process.
    pub cpus: usize,
    /// Load average before the replay.
    pub load_before: Option<f64>,
    /// Load average after it.
    pub load_after: Option<f64>,
}

impl HostLoad {
    /// The 1-minute load average now.
    pub(crate) fn load_now() -> Option<f64> {
        hrx_capture::schema::load_average_now()
    }

    /// These CPUs and load before, with the load now, as the replay (or a recording) ends.
    pub fn ended(self) -> HostLoad {
        HostLoad {
            load_after: HostLoad::load_now(),
            ..self
        }
    }

    /// The CPUs and the load before a replay or a recording (`load_after` is read when it
    /// ends, [`HostLoad::ended`]).
    pub fn before() -> HostLoad {
        HostLoad {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_before: HostLoad::load_now(),
            load_after: None,
        }
    }
}

/// Counts over the whole report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Submissions replayed.
    pub submissions: usize,
    /// Submissions whose status matched in every repeat (one without a captured outcome
    /// never counts: there was nothing to match).
    pub statuses_matched: usize,
    /// Submissions the trace holds no outcome for (it ends before they finished: cut short
    /// or crashed): their statuses were not compared.
    pub outcomes_unknown: usize,
    /// Output ranges compared (first repeat).
    pub outputs_compared: usize,
    /// Output ranges with identical digests.
    pub outputs_matched: usize,
    /// Output ranges that differ but lie within the float tolerance.
    pub outputs_within_tolerance: usize,
    /// Output ranges excluded from comparison (they depend on work replay cannot redo, or on
    /// bytes a trimmed trace lacks).
    pub outputs_excluded: usize,
    /// Output ranges the replay wrote whose captured digest an incomplete trace (cut short,
    /// killed, recovered) lacks: lost with the trace's end, so not compared (in a whole
    /// trace a missing captured digest stays a divergence).
    pub outputs_not_captured: usize,
    /// Divergences over all repeats (timing-dependent ones aside).
    pub divergences: usize,
    /// Timing-dependent divergences ([`Report::timing_dependent`]): not a regression.
    pub timing_dependent: usize,
    /// Regions (and operations) slower than `max_slowdown` allows.
    pub slow: usize,
    /// Regions and operations not judged for too few samples (under 7 on a side), with
    /// `max_slowdown` set.
    pub too_few: usize,
    /// Regions and operations not judged, with `max_slowdown` set, for an interval that
    /// holds 1 and spans more than 10x ([`hrx_analysis::compare::too_spread`]).
    pub too_spread: usize,
    /// Regions and operations slower than `max_slowdown` allows against a baseline
    /// ([`crate::Baseline::judge`]).
    pub baseline_slow: usize,
    /// Rows not judged against a baseline for too few samples on a side.
    pub baseline_too_few: usize,
}

/// One replayed submission.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubmissionRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured submission index.
    pub submission: u64,
    /// Captured prepared-graph id.
    pub graph: u64,
    /// Captured outcome (`None` when the trace ends before it retired).
    pub captured: Option<Outcome>,
    /// Captured error or cancellation reason.
    pub captured_error: String,
    /// Replay outcome in the first repeat (`None` when the replay refused the submit).
    pub replayed: Option<Outcome>,
    /// Replay error, cancellation reason or refusal.
    pub replayed_error: String,
    /// Output ranges compared.
    pub outputs: usize,
    /// Output ranges that matched (exactly or within tolerance).
    pub matched: usize,
    /// Output ranges excluded.
    pub excluded: usize,
    /// Whether any divergence names this submission (timing-dependent ones aside).
    pub diverged: bool,
    /// Whether its only divergences are timing-dependent ([`Report::timing_dependent`]).
    pub timing_dependent: bool,
}

/// The result of comparing one output range.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum OutputResult {
    /// Identical digests.
    Match,
    /// Different digests, every `f32` within the tolerance.
    WithinTolerance {
        /// Largest absolute difference.
        max_abs_diff: f64,
    },
    /// Different.
    Differs,
    /// The capture has it, the replay does not.
    Missing,
    /// The replay has it, the capture does not.
    Extra,
    /// Not produced on one side because the submission's status diverged.
    NotRun,
    /// The replay has it; the capture's digest is missing from an incomplete trace (lost
    /// with its end): not compared.
    NotCaptured,
    /// Not compared: it depends on work replay cannot reproduce.
    Excluded {
        /// Why.
        why: String,
    },
}

/// One output range of one submission (first repeat).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputCheck {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured submission index.
    pub submission: u64,
    /// Region that wrote it, where known: the region of [`OutputCheck::node`], else the
    /// first whose uses write exactly the range.
    pub region: Option<u32>,
    /// The operation writing it: the first (by node, then use) of the submission's graph
    /// writing exactly the range, as `diff` places an output (`hrx_analysis::diff::Place`);
    /// `None` when no operation does (then the buffer stands for it).
    pub node: Option<u32>,
    /// That operation's use (binding) writing it.
    #[serde(rename = "use")]
    pub use_index: Option<u32>,
    /// The submission's index among its graph's submissions, from 0.
    pub nth: u64,
    /// Captured buffer id.
    pub buffer: u64,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Captured xxh3 digest (JSON: a hex string, [`hrx_capture::schema::hex64`]).
    #[serde(with = "hrx_capture::schema::hex64::option")]
    pub expected: Option<u64>,
    /// Replay xxh3 digest (JSON: a hex string).
    #[serde(with = "hrx_capture::schema::hex64::option")]
    pub replayed: Option<u64>,
    /// The comparison.
    #[serde(flatten)]
    pub result: OutputResult,
    /// Its key, as `hrx-trace diff` of the capture and the replay's trace keys it
    /// (`hrx_analysis::diff::OutputKey`: runtime rank, prepared graph rank, [`nth`], place,
    /// start, end).
    ///
    /// [`nth`]: OutputCheck::nth
    #[serde(skip)]
    pub key: hrx_analysis::diff::OutputKey,
}

/// Which clock a timing row compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// Host time around the region.
    Host,
    /// Device timestamps (every sample on both sides had them).
    Device,
}

/// Captured vs replayed time of one region of the prepared graphs that compute the same
/// thing (one graph, or several pooled: [`hrx_analysis::matching::Pools`]; a pipeline's
/// identical frame contexts), the samples of every pooled graph together.
#[derive(Clone, Debug, Serialize)]
pub struct RegionTimingRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id: the first (lowest) of [`RegionTimingRow::graphs`].
    pub graph: u64,
    /// The captured prepared graphs pooled in this row, ascending: every graph of the
    /// runtime that computes what [`RegionTimingRow::graph`] computes
    /// ([`hrx_analysis::diff::signature`]).
    pub graphs: Vec<u64>,
    /// Region index.
    pub region: u32,
    /// Queue, kind and operations.
    pub label: String,
    /// The clock compared.
    pub clock: Clock,
    /// Captured durations.
    pub captured: Option<Durations>,
    /// Replay durations over all repeats.
    pub replayed: Option<Durations>,
    /// Replay median / captured median.
    pub ratio: Option<f64>,
    /// A confidence interval of that ratio (at least 95%); `None` with fewer than 7 samples
    /// on a side.
    pub interval: Option<(f64, f64)>,
    /// The replay's own run-to-run change ([`hrx_analysis::compare::spread`]: its first half
    /// of repeats' median against its second's), a floor of the ratio a regression must
    /// pass. In JSON `run_to_run`, and under its older name `spread` too (not the text
    /// report's p10..p90).
    #[serde(flatten, serialize_with = "run_to_run")]
    pub spread: f64,
    /// Not judged, for too few samples (with `max_slowdown` set).
    pub too_few: bool,
    /// Not judged, for an interval that holds 1 and spans more than 10x (with
    /// `max_slowdown` set; [`hrx_analysis::compare::too_spread`]).
    pub too_spread: bool,
    /// Whether this is a timing regression ([`hrx_analysis::compare::timing`]: the whole
    /// interval past `max_slowdown` and the spread, medians apart by more than the noise
    /// floor).
    pub regression: bool,
    /// Why it is not slow though its interval lies wholly past `max_slowdown`: the rule
    /// that cleared it, with its deciding figure ([`NotSlow`]); `None` otherwise.
    pub not_slow: Option<NotSlow>,
    /// Judged against a baseline ([`crate::Baseline::judge`]), where one was given and has
    /// this row.
    pub baseline: Option<crate::baseline::BaselineMatch>,
}

/// The replay's own run-to-run change, as JSON names it (`run_to_run`) and as it was named
/// before (`spread`, kept so that a script reading it still does; the text report's
/// `p10..p90` column is another figure).
fn run_to_run<S: serde::Serializer>(ratio: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(2))?;
    map.serialize_entry("run_to_run", ratio)?;
    map.serialize_entry("spread", ratio)?;
    map.end()
}

/// Why a timing row whose ratio's interval lies wholly past `--max-slowdown` is not slow:
/// the rule that cleared it and the figure that decided, said at the row in the text
/// (`not slow: within the replay's own 2.38x run-to-run change`) and in JSON (`"not_slow":
/// {"rule": "run_to_run", "ratio": 2.38}`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum NotSlow {
    /// The interval's low end lies within the replay's own run-to-run change (`ratio`: its
    /// first half of repeats' median against its second's): two halves of the same replay
    /// differed by as much.
    RunToRun {
        /// The replay's run-to-run change.
        ratio: f64,
    },
    /// The interval's low end lies within how far a baseline's runs' medians lay apart
    /// (`ratio`, [`crate::BaselineRow::between_runs`]): known-good replays moved as much
    /// from one process to the next.
    BaselineRuns {
        /// The largest over the smallest of the baseline row's run medians.
        ratio: f64,
    },
    /// The medians grew by no more than the timing floor of the row's clock (`floor_ns`).
    TimingFloor {
        /// The floor of the row's clock ([`crate::ReplayOptions::floor`]: 100 µs on host
        /// time, 0.5 µs on device time by default).
        floor_ns: u64,
    },
}

impl NotSlow {
    /// Why a row is not slow, if its interval's low end (`interval`) lies past `max` but
    /// the rule cleared it: within the replay's own `run_to_run` change, within a
    /// baseline's `between_runs` floor (1 without one), or its median grew by `grew_ns`,
    /// no more than `floor_ns`. `None` where the interval does not lie past `max` (or
    /// nothing cleared it: the row is slow).
    pub fn of(
        max: Option<f64>,
        interval: Option<(f64, f64)>,
        run_to_run: f64,
        between_runs: f64,
        grew_ns: u64,
        floor_ns: u64,
    ) -> Option<NotSlow> {
        let (max, (low, _)) = (max?, interval?);
        if low <= max {
            return None;
        }
        if !hrx_analysis::compare::past_ratio(low, max, run_to_run) {
            return Some(NotSlow::RunToRun { ratio: run_to_run });
        }
        if !hrx_analysis::compare::past_ratio(low, max, between_runs) {
            return Some(NotSlow::BaselineRuns {
                ratio: between_runs,
            });
        }
        (grew_ns <= floor_ns).then_some(NotSlow::TimingFloor { floor_ns })
    }

    /// The reason as the text report says it after `not slow: `.
    pub fn describe(&self) -> String {
        use hrx_analysis::units::ratio;
        match *self {
            NotSlow::RunToRun { ratio: r } => {
                format!("within the replay's own {} run-to-run change", ratio(r))
            }
            NotSlow::BaselineRuns { ratio: r } => {
                format!("within the {} the baseline's runs lay apart", ratio(r))
            }
            NotSlow::TimingFloor { floor_ns } => {
                format!("grew under the {} floor", format_ns(floor_ns))
            }
        }
    }
}

/// Time of one operation (`per_op`), pooled over the prepared graphs that compute the same
/// thing as regions are ([`RegionTimingRow`]): by pool and node.
#[derive(Clone, Debug, Serialize)]
pub struct OpTimingRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id: the first of [`OpTimingRow::graphs`].
    pub graph: u64,
    /// The captured prepared graphs pooled in this row ([`RegionTimingRow::graphs`]).
    pub graphs: Vec<u64>,
    /// Operation index in the graph.
    pub node: u32,
    /// Region containing it.
    pub region: u32,
    /// Operation name.
    pub label: String,
    /// The clock compared: the device's where both sides timed the operation on it.
    pub clock: Clock,
    /// Captured per-operation durations, where the capture backend had them.
    pub captured: Option<Durations>,
    /// Replay durations of the operation alone.
    pub replayed: Option<Durations>,
    /// Replay median / captured median.
    pub ratio: Option<f64>,
    /// A confidence interval of that ratio ([`RegionTimingRow::interval`]).
    pub interval: Option<(f64, f64)>,
    /// The replay's own run-to-run change ([`RegionTimingRow::spread`]; JSON `run_to_run`
    /// and `spread`).
    #[serde(flatten, serialize_with = "run_to_run")]
    pub spread: f64,
    /// Not judged, for too few samples ([`RegionTimingRow::too_few`]).
    pub too_few: bool,
    /// Not judged, too spread ([`RegionTimingRow::too_spread`]).
    pub too_spread: bool,
    /// Whether this is a timing regression.
    pub regression: bool,
    /// Why it is not slow though past `max_slowdown` ([`RegionTimingRow::not_slow`]).
    pub not_slow: Option<NotSlow>,
    /// Judged against a baseline ([`RegionTimingRow::baseline`]).
    pub baseline: Option<crate::baseline::BaselineMatch>,
}

/// What replay did for a scoped callback or host operation it cannot re-execute.
#[derive(Clone, Debug, Serialize)]
pub struct SubstitutionRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id.
    pub graph: u64,
    /// Operation index.
    pub node: u32,
    /// Its region.
    pub region: u32,
    /// `scoped callback` or `host callback`.
    pub kind: String,
    /// Whether it writes anything (if not, it is replayed as a no-op).
    pub writes: bool,
    /// Submissions in which the captured contents were written instead.
    pub substituted: usize,
    /// Submissions in which it fails as it failed in the capture.
    pub failed: usize,
    /// Submissions in which it could not be substituted (its outputs are excluded).
    pub unavailable: usize,
    /// Why it could not be substituted.
    pub why: Option<String>,
}

/// The result of a replay.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The JSON layout's version ([`hrx_analysis::JSON_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Same or regression.
    pub verdict: Verdict,
    /// The trace.
    pub trace: TraceInfo,
    /// How it was replayed.
    pub replay: ReplayInfo,
    /// Counts.
    pub summary: Summary,
    /// One row per replayed submission (empty for a streamed replay, which hands its rows
    /// out as it goes: [`crate::replay_file_streaming`]).
    pub submissions: Vec<SubmissionRow>,
    /// The text report's table: equal rows of consecutive submissions grouped (filled by a
    /// streamed replay; otherwise built from `submissions` when the text is written).
    #[serde(skip)]
    pub submission_groups: crate::group::Grouper,
    /// Every output range compared, first repeat.
    pub outputs: Vec<OutputCheck>,
    /// Every divergence, earliest first (timing-dependent ones aside).
    pub divergences: Vec<Divergence>,
    /// Divergences of a failure (a device loss, a poison) whose cause, a concurrent failure (not ordered
    /// before it), may happen before or after it from run to run: each says why. Not a
    /// regression.
    pub timing_dependent: Vec<Divergence>,
    /// The earliest divergence (submission, then region, then buffer).
    pub first_divergence: Option<Divergence>,
    /// Region times, captured vs replayed.
    pub timing: Vec<RegionTimingRow>,
    /// Per-operation times (`per_op`).
    pub op_timing: Vec<OpTimingRow>,
    /// Scoped callbacks and host operations and what replay did instead.
    pub substitutions: Vec<SubstitutionRow>,
    /// What the reader should know (substitutions, limits, damaged traces).
    pub notes: Vec<String>,
    /// Set when no output was compared (a match of nothing is no match): what was and why,
    /// said by the text report and `replay` as a warning ([`Report::note_nothing_compared`]).
    pub nothing_compared: Option<String>,
}

/// Formats nanoseconds with a unit: `hrx_analysis::units::duration`, the one formatter of
/// every verb and the timeline (three significant digits: `850 ns`, `12.3 µs`, `4.56 ms`).
pub use hrx_analysis::units::duration as format_ns;

impl Report {
    /// The process exit code: 0 when everything matches, 1 for a regression, 2 when
    /// nothing was compared ([`Report::compared_nothing`]): a match of nothing is no match.
    pub fn exit_code(&self) -> i32 {
        if self.compared_nothing() {
            return 2;
        }
        i32::from(self.verdict.exit_code())
    }

    /// Whether nothing diverged because nothing was compared: no output, and no submission
    /// with a captured outcome (a trace cut short while its submissions were all in flight).
    pub fn compared_nothing(&self) -> bool {
        let s = &self.summary;
        // Times judged against a baseline are a comparison too.
        let judged = (self.timing.iter().filter_map(|t| t.baseline))
            .chain(self.op_timing.iter().filter_map(|t| t.baseline))
            .any(|b| !b.too_few);
        self.verdict == Verdict::Same
            && s.outputs_compared == 0
            && s.submissions == s.outcomes_unknown
            && !judged
    }

    /// The verdict as the text report names it: `SAME`, `DIFFERENT`, `REGRESSION`,
    /// `NOTHING COMPARED`, or `SAME AS FAR AS THE TRACE GOES` for a trace not read whole
    /// (as `diff` says `same as far as both traces go`).
    pub fn verdict_name(&self) -> String {
        if self.compared_nothing() {
            "NOTHING COMPARED".to_owned()
        } else if self.verdict == Verdict::Same && !self.trace.complete {
            "SAME AS FAR AS THE TRACE GOES".to_owned()
        } else {
            self.verdict.name().to_uppercase()
        }
    }

    /// Sets [`Report::nothing_compared`] from the summary, once it is final: no output
    /// compared, saying what was (statuses) and why nothing else (outputs excluded, not
    /// captured, or none recorded).
    pub fn note_nothing_compared(&mut self) {
        let s = &self.summary;
        self.nothing_compared = (s.outputs_compared == 0).then(|| {
            if s.submissions == 0 {
                return "nothing was compared: no submission was replayed".to_owned();
            }
            let mut why = Vec::new();
            if s.outputs_excluded > 0 {
                why.push(format!(
                    "{} excluded (they depend on work replay cannot redo, or on bytes the trace lacks)",
                    s.outputs_excluded
                ));
            }
            if s.outputs_not_captured > 0 {
                why.push(format!(
                    "{} not captured (lost with the trace's end)",
                    s.outputs_not_captured
                ));
            }
            let why = if !why.is_empty() {
                format!("of its outputs {}", why.join(", "))
            } else if let Some(until) = self.replay.until
                && (self.trace.runtimes.iter()).any(|r| r.replayed_submissions < r.submissions)
            {
                // The trace may hold digests of later submissions.
                format!(
                    "the submissions replayed (to {until}, `--until`) wrote no output hrx \
                     digests, or digests were off"
                )
            } else {
                "the trace holds no output digest (its submissions wrote no output hrx \
                 digests, or digests were off)"
                    .to_owned()
            };
            let compared = s.submissions - s.outcomes_unknown;
            format!(
                "no output was compared: {why}; only {compared} submission status{} {} compared",
                if compared == 1 { "" } else { "es" },
                if compared == 1 { "was" } else { "were" }
            )
        });
    }

    /// The report as JSON (what `--report json` prints).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.json_value())
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The report as a JSON value, its `verdict` `nothing_compared` where nothing was
    /// ([`Report::compared_nothing`]), as `diff --json` names it: a script reading the
    /// verdict must not read `same`; and `same_as_far_as_the_trace_goes` for a trace not read
    /// whole, as the text says (and `diff --json` its `same_as_far_as_both_go`). It has
    /// every reading verb's keys for what the trace lacks besides: `complete` (as
    /// `trace.complete`) and `lost` (`{"total", "lossy", "by_kind"}`).
    pub fn json_value(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        let verdict = if self.compared_nothing() {
            Some("nothing_compared")
        } else if self.verdict == Verdict::Same && !self.trace.complete {
            Some("same_as_far_as_the_trace_goes")
        } else {
            None
        };
        if let Some(fields) = value.as_object_mut() {
            if let Some(verdict) = verdict {
                fields.insert("verdict".into(), verdict.into());
            }
            // What every reading verb's JSON says of its trace under one pair of keys (`info`,
            // `stats`, and `diff` of each side): read whole with nothing lost, and the
            // records its recorder lost (`trace.complete` and `trace.records_lost` stay).
            fields.insert("complete".into(), self.trace.complete.into());
            fields.insert(
                "lost".into(),
                serde_json::json!({
                    "total": self.trace.records_lost,
                    "lossy": self.trace.lossy,
                    "by_kind": self.trace.records_lost_by_kind,
                }),
            );
        }
        value
    }
}

#[cfg(test)]
mod tests;
