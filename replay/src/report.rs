//! The replay report: verdict, per-submission results, divergences, timing; as text and
//! (through serde) as JSON.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// How a submission ended, without its message (what replay compares).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Succeeded.
    Ok,
    /// Failed.
    Failed,
    /// Cancelled (a producer failed or was cancelled).
    Cancelled,
}

impl Outcome {
    pub(crate) fn of(status: &hrx_capture::schema::Status) -> (Outcome, String) {
        use hrx_capture::schema::Status;
        match status {
            Status::Ok => (Outcome::Ok, String::new()),
            Status::Failed { error } => (Outcome::Failed, error.clone()),
            Status::Cancelled { reason } => (Outcome::Cancelled, reason.clone()),
        }
    }

    /// Lower-case name: `ok`, `failed`, `cancelled`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The overall result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every compared output and status matches and no region is slower than allowed.
    Match,
    /// An output or status differs, or a region is slower than `max_slowdown` allows.
    Regression,
}

/// The trace that was replayed.
#[derive(Clone, Debug, Serialize)]
pub struct TraceInfo {
    /// The file, when replayed from one.
    pub source: Option<String>,
    /// The trace format version, `major.minor`.
    pub format_version: String,
    /// Whether the whole trace was read (closed cleanly, nothing skipped, no records lost
    /// while recording).
    pub complete: bool,
    /// Records lost while recording ([`hrx_capture::Lost`]); a replay cannot be exact then.
    pub records_lost: u64,
    /// Records lost by kind.
    pub records_lost_by_kind: BTreeMap<String, u64>,
    /// Each captured runtime.
    pub runtimes: Vec<RuntimeInfo>,
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
    /// Whether operations were also timed one by one.
    pub per_op: bool,
    /// Float tolerance, if any.
    pub tolerance: Option<f64>,
    /// Slowdown ratio threshold, if any.
    pub max_slowdown: Option<f64>,
    /// Timing noise floor in ns.
    pub timing_floor_ns: u64,
    /// Submissions replayed per runtime, if limited.
    pub until: Option<u64>,
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
    /// Output ranges excluded from comparison (they depend on work replay cannot redo).
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
    /// Region that wrote it, where known.
    pub region: Option<u32>,
    /// Captured buffer id.
    pub buffer: u64,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Captured xxh3 digest.
    pub expected: Option<u64>,
    /// Replay xxh3 digest.
    pub replayed: Option<u64>,
    /// The comparison.
    #[serde(flatten)]
    pub result: OutputResult,
}

/// What differs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DivergenceKind {
    /// An output range has a different digest.
    Output {
        /// Captured digest.
        expected: u64,
        /// Replay digest.
        replayed: u64,
        /// Largest `f32` difference, when compared with a tolerance.
        max_abs_diff: Option<f64>,
    },
    /// The capture recorded an output the replay did not produce.
    MissingOutput {
        /// Captured digest.
        expected: u64,
    },
    /// The replay produced an output the capture did not record.
    ExtraOutput {
        /// Replay digest.
        replayed: u64,
    },
    /// The submission ended differently.
    Status {
        /// Captured outcome.
        expected: Outcome,
        /// Captured error text.
        expected_error: String,
        /// Replay outcome.
        replayed: Outcome,
        /// Replay error text.
        replayed_error: String,
    },
    /// The replay refused a submit the capture accepted.
    Refused {
        /// The refusal.
        error: String,
    },
    /// One side quarantined the graph, the other did not.
    Quarantine {
        /// Captured.
        expected: bool,
        /// Replayed.
        replayed: bool,
    },
    /// A host write failed at replay (it succeeded in the capture).
    HostWrite {
        /// The error.
        error: String,
    },
}

/// A difference between capture and replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured submission index (for a host write: the submission it preceded).
    pub submission: u64,
    /// Region, where known.
    pub region: Option<u32>,
    /// The region, described: queue, kind and the operations involved.
    pub region_label: Option<String>,
    /// Buffer, for output and host-write divergences.
    pub buffer: Option<u64>,
    /// Byte range in the buffer.
    pub range: Option<(u64, u64)>,
    /// Which repeat (from 0) showed it first.
    pub repeat: usize,
    /// In how many repeats it showed.
    pub repeats: usize,
    /// What differs.
    #[serde(flatten)]
    pub kind: DivergenceKind,
    /// Why it depends on when a concurrent failure happened, when it does (then it is listed
    /// in [`Report::timing_dependent`], not a regression).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing_dependent: Option<String>,
    #[serde(skip)]
    pub(crate) show_runtime: bool,
    #[serde(skip)]
    pub(crate) of_repeats: usize,
}

impl Divergence {
    /// Whether `other` is the same divergence (seen in another repeat).
    pub(crate) fn same_as(&self, other: &Divergence) -> bool {
        (
            self.runtime,
            self.submission,
            self.region,
            self.buffer,
            self.range,
        ) == (
            other.runtime,
            other.submission,
            other.region,
            other.buffer,
            other.range,
        ) && std::mem::discriminant(&self.kind) == std::mem::discriminant(&other.kind)
    }

    /// Sort key: runtime, submission, region, then buffer.
    pub(crate) fn key(&self) -> (u32, u64, u32, u8, u64, u64, usize) {
        let rank = match self.kind {
            DivergenceKind::HostWrite { .. } => 0,
            DivergenceKind::Refused { .. } => 1,
            DivergenceKind::Status { .. } => 2,
            DivergenceKind::Quarantine { .. } => 3,
            _ => 4,
        };
        (
            self.runtime,
            self.submission,
            self.region.unwrap_or(u32::MAX),
            rank,
            self.buffer.unwrap_or(0),
            self.range.map_or(0, |r| r.0),
            self.repeat,
        )
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.show_runtime {
            write!(f, "runtime {} ", self.runtime)?;
        }
        if matches!(self.kind, DivergenceKind::HostWrite { .. }) {
            write!(f, "before submission {}", self.submission)?;
        } else {
            write!(f, "submission {}", self.submission)?;
        }
        if let Some(region) = self.region {
            write!(f, " region {region}")?;
            if let Some(label) = &self.region_label {
                write!(f, " ({label})")?;
            }
        }
        if let Some(buffer) = self.buffer {
            write!(f, " buffer {buffer}")?;
        }
        if let Some((start, end)) = self.range {
            write!(f, " bytes {start}..{end}")?;
        }
        if self.repeats < self.of_repeats {
            write!(f, " (in {} of {} repeats", self.repeats, self.of_repeats)?;
            if self.repeat > 0 {
                write!(f, ", first in repeat {}", self.repeat + 1)?;
            }
            f.write_str(")")?;
        }
        match &self.kind {
            DivergenceKind::Output {
                expected,
                replayed,
                max_abs_diff,
            } => {
                write!(f, ": digest {replayed:#018x} expected {expected:#018x}")?;
                if let Some(diff) = max_abs_diff {
                    write!(f, " (max |diff| {diff:e} as f32, past the tolerance)")?;
                }
                Ok(())
            }
            DivergenceKind::MissingOutput { expected } => {
                write!(
                    f,
                    ": not written at replay, expected digest {expected:#018x}"
                )
            }
            DivergenceKind::ExtraOutput { replayed } => {
                write!(
                    f,
                    ": written at replay (digest {replayed:#018x}), not in the capture"
                )
            }
            DivergenceKind::Status {
                expected,
                expected_error,
                replayed,
                replayed_error,
            } => {
                write!(f, ": replay {}", replayed.name())?;
                if !replayed_error.is_empty() {
                    write!(f, " ({replayed_error})")?;
                }
                write!(f, ", capture {}", expected.name())?;
                if !expected_error.is_empty() {
                    write!(f, " ({expected_error})")?;
                }
                Ok(())
            }
            DivergenceKind::Refused { error } => {
                write!(
                    f,
                    ": the replay refused the submit ({error}); the capture accepted it"
                )
            }
            DivergenceKind::Quarantine { expected, replayed } => write!(
                f,
                ": graph quarantined at replay: {replayed}, in the capture: {expected}"
            ),
            DivergenceKind::HostWrite { error } => {
                write!(f, ": host write failed at replay: {error}")
            }
        }
    }
}

/// Which clock a timing row compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// Host time around the region.
    Host,
    /// Device timestamps (every sample on both sides had them).
    Device,
}

/// Distribution of durations in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Number of samples.
    pub samples: usize,
    /// Median.
    pub median_ns: u64,
    /// Minimum.
    pub min_ns: u64,
    /// 10th percentile (nearest rank).
    pub p10_ns: u64,
    /// 90th percentile (nearest rank).
    pub p90_ns: u64,
    /// Maximum.
    pub max_ns: u64,
}

impl Stats {
    /// Statistics of `samples` (ns); `None` when empty.
    pub fn of(mut samples: Vec<u64>) -> Option<Stats> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |p: f64| samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        let median_ns = if !n.is_multiple_of(2) {
            samples[n / 2]
        } else {
            (samples[n / 2 - 1] + samples[n / 2]) / 2
        };
        Some(Stats {
            samples: n,
            median_ns,
            min_ns: samples[0],
            p10_ns: rank(0.1),
            p90_ns: rank(0.9),
            max_ns: samples[n - 1],
        })
    }
}

/// Captured vs replayed time of one region of one prepared graph.
#[derive(Clone, Debug, Serialize)]
pub struct RegionTimingRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id.
    pub graph: u64,
    /// Region index.
    pub region: u32,
    /// Queue, kind and operations.
    pub label: String,
    /// The clock compared.
    pub clock: Clock,
    /// Captured durations.
    pub captured: Option<Stats>,
    /// Replay durations over all repeats.
    pub replayed: Option<Stats>,
    /// Replay median / captured median.
    pub ratio: Option<f64>,
    /// Whether this is a timing regression (ratio past `max_slowdown`, difference past
    /// the noise floor).
    pub regression: bool,
}

/// Time of one operation launched on its own (`per_op`).
#[derive(Clone, Debug, Serialize)]
pub struct OpTimingRow {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id.
    pub graph: u64,
    /// Operation index in the graph.
    pub node: u32,
    /// Region containing it.
    pub region: u32,
    /// Operation name.
    pub label: String,
    /// Captured per-operation durations, where the capture backend had them.
    pub captured: Option<Stats>,
    /// Replay durations of the operation alone.
    pub replayed: Option<Stats>,
    /// Replay median / captured median.
    pub ratio: Option<f64>,
    /// Whether this is a timing regression.
    pub regression: bool,
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
    /// Match or regression.
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
}

/// Formats nanoseconds with a unit: `hrx_analysis::units::duration`, the one formatter of
/// every verb and the timeline (three significant digits: `850 ns`, `12.3 µs`, `4.56 ms`).
pub use hrx_analysis::units::duration as format_ns;

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>], right: &[bool]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |out: &mut String, cells: &[String]| {
        let mut text = String::from(" ");
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            text.push(' ');
            if right.get(i).copied().unwrap_or(false) {
                text.push_str(&pad);
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&pad);
            }
            text.push(' ');
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(
        out,
        &header.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
    );
    for row in rows {
        line(out, row);
    }
}

impl Report {
    /// The process exit code: 0 when everything matches, 1 for a regression.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Match => 0,
            Verdict::Regression => 1,
        }
    }

    /// The report as JSON (what `--report json` prints).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The report as readable text: header, per-submission table (equal rows of
    /// consecutive submissions grouped as `first..last`), first divergence, timing table,
    /// substitutions and notes.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if self.trace.records_lost > 0 {
            let kinds: Vec<String> = self
                .trace
                .records_lost_by_kind
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "cannot be exact: {} records lost while recording ({})",
                self.trace.records_lost,
                kinds.join(", ")
            );
        }
        let several = self.trace.runtimes.len() > 1;
        let _ = writeln!(
            out,
            "hrx-trace replay{} (trace format {}{})",
            self.trace
                .source
                .as_ref()
                .map(|s| format!(": {s}"))
                .unwrap_or_default(),
            self.trace.format_version,
            if self.trace.complete {
                ""
            } else {
                ", incomplete"
            }
        );
        for rt in &self.trace.runtimes {
            let s = |n: usize| if n == 1 { "" } else { "s" };
            let _ = write!(
                out,
                "captured: runtime {} on {} ({}): {} buffer{}, {} kernel{}, {} graph{}, {} submission{}",
                rt.runtime,
                rt.backend,
                rt.device,
                rt.buffers,
                s(rt.buffers),
                rt.kernels,
                s(rt.kernels),
                rt.graphs,
                s(rt.graphs),
                rt.submissions,
                s(rt.submissions)
            );
            if rt.replayed_submissions != rt.submissions {
                let _ = write!(out, " ({} replayed)", rt.replayed_submissions);
            }
            if let Some(fault) = &rt.captured_fault {
                let _ = write!(out, ", fault {fault}");
            }
            out.push('\n');
        }
        let r = &self.replay;
        let _ = write!(
            out,
            "replayed: {} ({}){}, {} repeat{}",
            r.backend,
            r.device,
            if r.requested == "auto" {
                ", picked by backend auto"
            } else {
                ""
            },
            r.repeat,
            if r.repeat == 1 { "" } else { "s" }
        );
        let faults: Vec<String> = self
            .trace
            .runtimes
            .iter()
            .filter_map(|rt| rt.replay_fault.clone())
            .collect();
        if !faults.is_empty() {
            let _ = write!(out, ", fault {}", faults.join(", "));
        }
        if let Some(t) = r.tolerance {
            let _ = write!(out, ", tolerance {}", tolerance_text(t));
        }
        if let Some(m) = r.max_slowdown {
            let _ = write!(out, ", max slowdown {m:.2}x");
        }
        out.push('\n');
        // Said before the verdict: times from another backend are no baseline.
        for rt in self
            .trace
            .runtimes
            .iter()
            .filter(|rt| !rt.timings_comparable)
        {
            let _ = writeln!(
                out,
                "{}recorded on {}, replaying on {}: timings are not comparable (no ratio is \
                 given and none is judged slow)",
                if several {
                    format!("runtime {}: ", rt.runtime)
                } else {
                    String::new()
                },
                rt.backend,
                rt.replay_backend
            );
        }
        let s = &self.summary;
        let _ = writeln!(
            out,
            "verdict: {} (exit {}): {}/{} statuses match, {}/{} outputs match{}{}, {} divergence{}{}, {} slow",
            match self.verdict {
                Verdict::Match => "MATCH",
                Verdict::Regression => "REGRESSION",
            },
            self.exit_code(),
            s.statuses_matched,
            s.submissions,
            s.outputs_matched + s.outputs_within_tolerance,
            s.outputs_compared,
            if s.outputs_within_tolerance > 0 {
                format!(" ({} within tolerance)", s.outputs_within_tolerance)
            } else {
                String::new()
            },
            if s.outputs_excluded > 0 {
                format!(", {} excluded", s.outputs_excluded)
            } else {
                String::new()
            },
            s.divergences,
            if s.divergences == 1 { "" } else { "s" },
            if s.timing_dependent > 0 {
                format!(", {} timing-dependent", s.timing_dependent)
            } else {
                String::new()
            },
            s.slow
        );

        out.push_str("\nsubmissions:\n");
        // Equal rows of consecutive submissions share a line (module `group`); a streamed
        // replay kept only the lines.
        let grouped;
        let table_rows = if self.submissions.is_empty() {
            &self.submission_groups
        } else {
            let mut grouper = crate::group::Grouper::default();
            for row in &self.submissions {
                grouper.push(row);
            }
            grouped = grouper;
            &grouped
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        for g in &table_rows.groups {
            let mut cells = Vec::new();
            if several {
                cells.push(g.runtime.to_string());
            }
            cells.push(g.submissions());
            cells.push(g.graphs_text());
            cells.extend(g.cells.iter().cloned());
            rows.push(cells);
        }
        let mut header = Vec::new();
        if several {
            header.push("runtime");
        }
        header.extend(["sub", "graph", "captured", "replayed", "outputs", ""]);
        let right: Vec<bool> = header
            .iter()
            .map(|h| matches!(*h, "runtime" | "sub" | "graph"))
            .collect();
        table(&mut out, &header, &rows, &right);
        if table_rows.omitted > 0 {
            let _ = writeln!(
                out,
                "  ... {} more submissions (past {} lines; `--report json` lists every one)",
                table_rows.omitted,
                crate::group::MAX_GROUPS
            );
        }

        out.push('\n');
        match &self.first_divergence {
            Some(d) => {
                let _ = writeln!(out, "first divergence: {d}");
                if self.divergences.len() > 1 {
                    let _ = writeln!(out, "divergences ({}):", self.divergences.len());
                    for d in self.divergences.iter().take(20) {
                        let _ = writeln!(out, "  {d}");
                    }
                    if self.divergences.len() > 20 {
                        let _ = writeln!(out, "  ... {} more", self.divergences.len() - 20);
                    }
                }
            }
            None => out.push_str("no divergence\n"),
        }
        if !self.timing_dependent.is_empty() {
            // Name the kinds of failure the rows have (a device-loss race once read "a poison
            // failure").
            let whys = self.timing_dependent.iter();
            let whys = whys.filter_map(|d| d.timing_dependent.as_deref());
            let mut kinds: Vec<&str> = whys
                .clone()
                .filter_map(crate::concurrent::timing_dependent_kind)
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            let follows = whys
                .clone()
                .any(|why| crate::concurrent::timing_dependent_kind(why).is_none());
            let (what, it) = match kinds[..] {
                [] => ("a failure".to_owned(), "it"),
                [kind] => (format!("a {kind} failure"), "it"),
                _ => (format!("{} failures", kinds.join(" and ")), "them"),
            };
            let _ = writeln!(
                out,
                "timing-dependent, not a regression ({}): {what} whose cause, a concurrent \
                 failure, may come before or after {it} from run to run{}:",
                self.timing_dependent.len(),
                if follows && !kinds.is_empty() {
                    format!(", and what follows from {it}")
                } else {
                    String::new()
                }
            );
            for d in self.timing_dependent.iter().take(20) {
                let _ = writeln!(out, "  {d}");
                if let Some(why) = &d.timing_dependent {
                    let _ = writeln!(out, "    {why}");
                }
            }
            if self.timing_dependent.len() > 20 {
                let _ = writeln!(out, "  ... {} more", self.timing_dependent.len() - 20);
            }
        }

        if !self.timing.is_empty() {
            let _ = writeln!(
                out,
                "\nregion timing (median; spread = replay p10..p90{}):",
                if r.max_slowdown.is_some() {
                    "; SLOW = past the max slowdown"
                } else {
                    ""
                }
            );
            let rows: Vec<Vec<String>> = self
                .timing
                .iter()
                .map(|t| {
                    let mut cells = Vec::new();
                    if several {
                        cells.push(t.runtime.to_string());
                    }
                    cells.extend(timing_cells(
                        t.graph,
                        t.region.to_string(),
                        t.captured,
                        t.replayed,
                        t.ratio,
                        t.regression,
                        t.clock,
                    ));
                    cells.push(t.label.clone());
                    cells
                })
                .collect();
            let mut header = Vec::new();
            if several {
                header.push("runtime");
            }
            header.extend([
                "graph", "region", "captured", "replayed", "spread", "ratio", "", "what",
            ]);
            let right: Vec<bool> = (0..header.len())
                .map(|i| {
                    let i = if several { i } else { i + 1 };
                    (0..=6).contains(&i) && i != 5
                })
                .collect();
            table(&mut out, &header, &rows, &right);
        }

        if !self.op_timing.is_empty() {
            // hrx captures time regions, not single operations (a native graph runs as one):
            // say why the captured column is empty rather than leave a column of dashes.
            if self.op_timing.iter().any(|t| t.captured.is_some()) {
                out.push_str("\nper-operation timing (each operation launched on its own):\n");
            } else {
                out.push_str(
                    "\nper-operation timing (each operation launched on its own; the capture \
                     timed whole regions only, so there is no captured time to compare):\n",
                );
            }
            let rows: Vec<Vec<String>> = self
                .op_timing
                .iter()
                .map(|t| {
                    let mut cells = Vec::new();
                    if several {
                        cells.push(t.runtime.to_string());
                    }
                    cells.extend(timing_cells(
                        t.graph,
                        t.node.to_string(),
                        t.captured,
                        t.replayed,
                        t.ratio,
                        t.regression,
                        Clock::Host,
                    ));
                    cells.push(format!("{} (region {})", t.label, t.region));
                    cells
                })
                .collect();
            let mut header = Vec::new();
            if several {
                header.push("runtime");
            }
            header.extend([
                "graph",
                "op",
                "captured",
                "replayed",
                "spread",
                "ratio",
                "",
                "operation",
            ]);
            let right: Vec<bool> = (0..header.len())
                .map(|i| {
                    let i = if several { i } else { i + 1 };
                    (0..=6).contains(&i) && i != 5
                })
                .collect();
            table(&mut out, &header, &rows, &right);
        }

        if !self.substitutions.is_empty() {
            out.push_str("\nnot re-executed (scoped callbacks and host operations):\n");
            for sub in &self.substitutions {
                let _ = write!(
                    out,
                    "  graph {} operation {} ({}, region {}): ",
                    sub.graph, sub.node, sub.kind, sub.region
                );
                if !sub.writes {
                    out.push_str("writes nothing; replayed as a no-op\n");
                    continue;
                }
                let _ = write!(
                    out,
                    "captured contents written in {} submission{}",
                    sub.substituted,
                    if sub.substituted == 1 { "" } else { "s" }
                );
                if sub.failed > 0 {
                    let _ = write!(out, ", captured failure repeated in {}", sub.failed);
                }
                if sub.unavailable > 0 {
                    let _ = write!(
                        out,
                        ", NOT REPLAYABLE in {} ({}); their outputs and everything reading them are excluded",
                        sub.unavailable,
                        sub.why.as_deref().unwrap_or("no contents")
                    );
                }
                out.push('\n');
            }
        }
        if !self.notes.is_empty() {
            out.push_str("\nnotes:\n");
            for note in &self.notes {
                let _ = writeln!(out, "  - {note}");
            }
        }
        out
    }
}

/// A relative tolerance as people write one: `0`, `0.01`, `1e-6`.
fn tolerance_text(t: f64) -> String {
    if t == 0.0 || (1e-3..1e4).contains(&t) {
        format!("{t}")
    } else {
        format!("{t:e}")
    }
}

fn timing_cells(
    graph: u64,
    index: String,
    captured: Option<Stats>,
    replayed: Option<Stats>,
    ratio: Option<f64>,
    regression: bool,
    clock: Clock,
) -> Vec<String> {
    let median = |s: Option<Stats>| {
        s.map_or("-".to_string(), |s| {
            format!("{} (n={})", format_ns(s.median_ns), s.samples)
        })
    };
    vec![
        graph.to_string(),
        index,
        median(captured),
        median(replayed),
        // One sample has no spread.
        replayed.map_or("-".to_string(), |s| match s.samples {
            1 => "1 sample".to_string(),
            _ => format!("{}..{}", format_ns(s.p10_ns), format_ns(s.p90_ns)),
        }),
        ratio.map_or("-".to_string(), |r| format!("{r:.2}x")),
        match (regression, clock) {
            (true, _) => "SLOW".to_string(),
            (false, Clock::Device) => "device".to_string(),
            (false, Clock::Host) => String::new(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_print_as_people_write_them() {
        let printed: Vec<String> = [0.0, 1e-6, 0.01, 0.5, 2.0, 2.5e-7]
            .into_iter()
            .map(tolerance_text)
            .collect();
        assert_eq!(printed, ["0", "1e-6", "0.01", "0.5", "2", "2.5e-7"]);
    }

    #[test]
    fn one_sample_has_no_spread() {
        let stats = |samples| Stats {
            samples,
            median_ns: 7,
            min_ns: 7,
            p10_ns: 7,
            p90_ns: 9,
            max_ns: 9,
        };
        let spread = |samples| {
            let cells = timing_cells(
                1,
                "0".into(),
                None,
                Some(stats(samples)),
                None,
                false,
                Clock::Host,
            );
            cells[4].clone()
        };
        assert_eq!(spread(1), "1 sample");
        assert_eq!(spread(2), "7 ns..9 ns");
    }

    #[test]
    fn stats_use_nearest_rank_percentiles_and_the_middle_median() {
        let s = Stats::of((1..=10).map(|i| i * 100).collect()).unwrap();
        assert_eq!(
            (
                s.samples,
                s.median_ns,
                s.min_ns,
                s.p10_ns,
                s.p90_ns,
                s.max_ns
            ),
            (10, 550, 100, 100, 900, 1000)
        );
        let s = Stats::of(vec![7]).unwrap();
        assert_eq!((s.median_ns, s.p10_ns, s.p90_ns), (7, 7, 7));
        assert!(Stats::of(Vec::new()).is_none());
    }

    #[test]
    fn a_divergence_reads_as_one_line() {
        let d = Divergence {
            runtime: 1,
            submission: 3,
            region: Some(1),
            region_label: Some("GPU Compute, native graph: hrx_sobel".into()),
            buffer: Some(12),
            range: Some((0, 307_200)),
            repeat: 0,
            repeats: 1,
            kind: DivergenceKind::Output {
                expected: 0xabc,
                replayed: 0xdef,
                max_abs_diff: None,
            },
            timing_dependent: None,
            show_runtime: false,
            of_repeats: 1,
        };
        assert_eq!(
            d.to_string(),
            "submission 3 region 1 (GPU Compute, native graph: hrx_sobel) buffer 12 bytes 0..307200: \
             digest 0x0000000000000def expected 0x0000000000000abc"
        );
    }
}
