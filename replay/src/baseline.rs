//! Baselines (issue 22 point 4): a replay's timings saved on a known-good build
//! (`hrx-trace replay TRACE --save-baseline B.json`) and judged against later
//! (`--baseline B.json`), as well as against the capture, so that CI can replay a committed
//! trace after each build of hrx or of its kernels and tell a slowdown from the capture's
//! own machine and day.
//!
//! A baseline holds each timing row's replayed distribution ([`Durations`]: the median, its
//! confidence interval and the percentiles), keyed as the report keys rows: runtime,
//! prepared graph and region, or node for an operation, with the row's label and clock. The
//! timing rule reads only those summaries ([`hrx_analysis::compare::timing`]), so a streamed
//! replay of a trace of any length saves and compares in bounded memory. A row is judged
//! against the baseline only where the label and the clock agree; the baseline's backend and
//! device must be the replay's (times of another device are no baseline: refused with a
//! note, nothing judged). Rows the baseline lacks (another trace, or `--per-op` on one side
//! only) are counted in a note.

use crate::report::{Clock, Durations, Report};
use crate::{ReplayError, ReplayOptions};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The baseline file's version: a reader refuses another.
pub const BASELINE_VERSION: u32 = 1;

/// Replay timings saved as a baseline (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_VERSION`].
    pub hrx_replay_baseline: u32,
    /// The trace replayed, as the report names it.
    pub source: Option<String>,
    /// The backend and device it was replayed on.
    pub backend: String,
    /// See `backend`.
    pub device: String,
    /// Each timing row's replayed distribution.
    pub rows: Vec<BaselineRow>,
}

/// One row of a baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// `region` or `op`.
    pub kind: String,
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id.
    pub graph: u64,
    /// The region's index, or the operation's node.
    pub index: u32,
    /// The row's label (a region's queue, kind and operations; an operation's name).
    pub label: String,
    /// The clock its times are on.
    pub clock: Clock,
    /// The replayed times.
    pub replayed: Durations,
}

/// A row judged against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BaselineMatch {
    /// The baseline's times.
    pub baseline: Durations,
    /// Replay median / baseline median.
    pub ratio: Option<f64>,
    /// Its confidence interval ([`hrx_analysis::compare::TimingMatch::interval`]).
    pub interval: Option<(f64, f64)>,
    /// Whether it is a regression against the baseline.
    pub regression: bool,
}

impl Baseline {
    /// The baseline of `report`'s replayed timings.
    pub fn of(report: &Report) -> Baseline {
        let region_rows = report.timing.iter().filter_map(|t| {
            Some(BaselineRow {
                kind: "region".into(),
                runtime: t.runtime,
                graph: t.graph,
                index: t.region,
                label: t.label.clone(),
                clock: t.clock,
                replayed: t.replayed?,
            })
        });
        let op_rows = report.op_timing.iter().filter_map(|t| {
            Some(BaselineRow {
                kind: "op".into(),
                runtime: t.runtime,
                graph: t.graph,
                index: t.node,
                label: t.label.clone(),
                clock: t.clock,
                replayed: t.replayed?,
            })
        });
        Baseline {
            hrx_replay_baseline: BASELINE_VERSION,
            source: report.trace.source.clone(),
            backend: report.replay.backend.clone(),
            device: report.replay.device.clone(),
            rows: region_rows.chain(op_rows).collect(),
        }
    }

    /// Writes it as JSON to `path`.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), ReplayError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| baseline_error(path, e))?;
        std::fs::write(path, text + "\n").map_err(|e| baseline_error(path, e))
    }

    /// Reads a baseline [`Baseline::save`] wrote.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`] when the file cannot be read, is no baseline, or has another
    /// version.
    pub fn load(path: &Path) -> Result<Baseline, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|e| baseline_error(path, e))?;
        let version: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| baseline_error(path, e))?;
        match version.get("hrx_replay_baseline").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(BASELINE_VERSION) => {}
            Some(v) => {
                return Err(baseline_error(
                    path,
                    format!("baseline version {v}; this hrx-trace reads {BASELINE_VERSION}"),
                ));
            }
            None => {
                return Err(baseline_error(
                    path,
                    "not a replay baseline (no hrx_replay_baseline field): write one with --save-baseline",
                ));
            }
        }
        serde_json::from_value(version).map_err(|e| baseline_error(path, e))
    }

    /// Judges `report`'s rows against this baseline by the timing rule, past the replay's own
    /// spread: each matched row gets its [`BaselineMatch`]; regressions count as slow and
    /// decide the verdict; notes say what could not be compared.
    pub fn judge(&self, report: &mut Report, options: &ReplayOptions) {
        let source = self.source.as_deref().unwrap_or("a baseline");
        if (self.backend.as_str(), self.device.as_str())
            != (
                report.replay.backend.as_str(),
                report.replay.device.as_str(),
            )
        {
            report.notes.push(format!(
                "the baseline ({source}) was replayed on {} ({}), this replay on {} ({}): \
                 times of another device are no baseline, none is judged against it",
                self.backend, self.device, report.replay.backend, report.replay.device
            ));
            return;
        }
        let find = |kind: &str, runtime: u32, graph: u64, index: u32, label: &str, clock| {
            self.rows.iter().find(|r| {
                (
                    r.kind.as_str(),
                    r.runtime,
                    r.graph,
                    r.index,
                    r.label.as_str(),
                    r.clock,
                ) == (kind, runtime, graph, index, label, clock)
            })
        };
        let mut missing = 0;
        let mut judge = |kind, t: (u32, u64, u32, &str, Clock, Option<Durations>, f64)| {
            let (runtime, graph, index, label, clock, replayed, spread) = t;
            let replayed = replayed?;
            let Some(row) = find(kind, runtime, graph, index, label, clock) else {
                missing += 1;
                return None;
            };
            let judged =
                crate::compare::judge(Some(row.replayed), Some(replayed), spread, options, true);
            Some(BaselineMatch {
                baseline: row.replayed,
                ratio: judged.ratio,
                interval: judged.interval,
                regression: judged.slow,
            })
        };
        for t in &mut report.timing {
            t.baseline = judge(
                "region",
                (
                    t.runtime, t.graph, t.region, &t.label, t.clock, t.replayed, t.spread,
                ),
            );
        }
        for t in &mut report.op_timing {
            t.baseline = judge(
                "op",
                (
                    t.runtime, t.graph, t.node, &t.label, t.clock, t.replayed, t.spread,
                ),
            );
        }
        if missing > 0 {
            report.notes.push(format!(
                "{missing} timing row{} without a row of the same label and clock in the baseline \
                 ({source}): not judged against it",
                if missing == 1 { "" } else { "s" }
            ));
        }
        let slow = report
            .timing
            .iter()
            .filter_map(|t| t.baseline)
            .chain(report.op_timing.iter().filter_map(|t| t.baseline));
        report.summary.baseline_slow = slow.filter(|b| b.regression).count();
        report.verdict = crate::report::Verdict::of(
            report.summary.divergences + report.summary.slow + report.summary.baseline_slow,
            0,
        );
    }
}

fn baseline_error(path: &Path, why: impl std::fmt::Display) -> ReplayError {
    ReplayError::Baseline {
        path: path.to_owned(),
        why: why.to_string(),
    }
}
