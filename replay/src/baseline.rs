//! Baselines (issue 22 point 4): a replay's timings saved on a known-good build
//! (`hrx-trace replay TRACE --save-baseline B.json`) and judged against later
//! (`--baseline B.json`), as well as against the capture, so that CI can replay a committed
//! trace after each build of hrx or of its kernels and tell a slowdown from the capture's
//! own machine and day.
//!
//! A baseline holds each timing row's replayed distribution ([`Durations`]: the median, its
//! confidence interval and the percentiles), with the prepared graphs the row pools
//! (every graph that computes the same thing, [`hrx_analysis::matching::Pools`]), found by
//! runtime, the pool's first graph and region, or node for an operation, with the row's label
//! and clock (a replay cut short by `--until` pools fewer of the same graphs: still its row).
//! The timing rule reads only those summaries ([`hrx_analysis::compare::timing`]), so a streamed
//! replay of a trace of any length saves and compares in bounded memory. A row is judged
//! against the baseline only where the label and the clock agree; the baseline's backend and
//! device must be the replay's (times of another device are no baseline: refused with a
//! note, nothing judged). Rows the baseline lacks (another trace, or `--per-op` on one side
//! only) are counted in a note.
//!
//! # Runs
//!
//! A replay's copies and host work move more from one replay process to the next than among
//! one process's repeats (on an H100, a replay's uploads read 0.92-1.16x of the capture from
//! process to process while each one's repeats agreed within 1%: BENCHMARKS.md, "Replay as a
//! gate", session 44), so a gate that knows only one process's spread raises false alarms on
//! copies. `--add-to-baseline` adds each replay of a known-good build as one more run: a row
//! keeps every run's distribution ([`BaselineRow::runs`]), judges by the middle run's, and
//! the largest over the smallest of its runs' medians ([`BaselineRow::between_runs`]) is a
//! floor a slowdown must pass, as the replay's own spread is, against the baseline and
//! against the capture (one process's draw of the same movement); a row the floor clears
//! against the capture is said in a note, as is a floor past `--max-slowdown` (the gate is
//! then weaker there than asked). A baseline of one run judges as before.
//!
//! # Versions
//!
//! Version 2 keys rows by their pooled graphs (`graphs`); version 1 (before identical graphs
//! were pooled) keyed them by one prepared graph each, rows a replay no longer has. A
//! version 1 baseline is refused with a line saying to save it again (`--save-baseline`
//! over it is allowed, as over any baseline); a newer one is refused naming both versions.
//!
//! A baseline also keeps the GPU's clocks its replay ran with ([`crate::GpuClocksAround`], on
//! CUDA); a replay judged against it whose clocks differ from them by more than
//! [`crate::CLOCKS_DIFFER`] says so in a note: its times may reflect the clocks, not only the
//! code. A baseline saved before the clocks were kept has none (and loads as before).

use crate::report::{Clock, Durations, GpuClocksAround, HostLoad, Report, clocks_moved};
use crate::{ReplayError, ReplayOptions};
use hrx_capture::{ShowPath, Shown};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The baseline file's version: a reader refuses another (see the module docs, Versions).
pub const BASELINE_VERSION: u32 = 2;

/// Replay timings saved as a baseline (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_VERSION`].
    pub hrx_replay_baseline: u32,
    /// The trace replayed, as the report names it.
    pub source: Option<String>,
    /// Which recording it is ([`crate::TraceInfo::recorded`]): a baseline judges only
    /// replays of the recording it was saved from.
    #[serde(default)]
    pub recorded: Option<String>,
    /// The backend and device it was replayed on.
    pub backend: String,
    /// See `backend`.
    pub device: String,
    /// The GPU's clocks around the replay it was saved from (`None` on the software device,
    /// and in a baseline saved before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_clocks: Option<GpuClocksAround>,
    /// The host the replay it was saved from ran on, its CPUs and load (`None` in a baseline
    /// saved before it was kept): a baseline of a loaded host's times is said so each time it
    /// judges, not only when it is saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLoad>,
    /// Whether the replays it holds were paced as captured (`--pace captured`); `None` in a
    /// baseline saved before it was kept, which runs added later do not stamp (its earlier
    /// runs' pace stays unknown). A baseline judging a replay at another pace says
    /// so, and its runs are of one pace (a fresh user's `--pace none` baseline judged a
    /// `--pace captured` replay without a word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_captured: Option<bool>,
    /// How many replays it holds (`--add-to-baseline` adds one each; 1 for a baseline
    /// `--save-baseline` wrote, and for one saved before runs were counted).
    #[serde(default = "one_run")]
    pub runs: usize,
    /// Each timing row's replayed distribution.
    pub rows: Vec<BaselineRow>,
}

fn one_run() -> usize {
    1
}

/// `--pace captured` or `--pace none`.
fn pace(captured: bool) -> &'static str {
    if captured {
        "--pace captured"
    } else {
        "--pace none"
    }
}

/// The fewest samples a side judged by the timing rule has (fewer: `too few to judge`,
/// `hrx_analysis::sketch::median_ranks`).
const JUDGED_SAMPLES: usize = 7;

/// Which recording `start` begins, as [`crate::TraceInfo::recorded`] names it: its host,
/// pid and wall-clock start.
pub(crate) fn recording(start: &hrx_capture::schema::SessionStart) -> String {
    format!(
        "{} pid {} at {}",
        start.host,
        start.pid,
        start.wall_clock_utc.to_rfc3339()
    )
}

/// The recording the trace at `path` holds, from the session start among its first records
/// (where a recorder writes it); `None` where it does not read or holds none there.
fn recording_at(path: &Path) -> Option<String> {
    /// How far to look: the session start is a trace's first record; a few damaged ones
    /// before it are passed over.
    const FIRST_RECORDS: usize = 64;
    let reader = hrx_capture::TraceReader::open(path).ok()?;
    reader.take(FIRST_RECORDS).find_map(|item| match item {
        Ok((_, hrx_capture::schema::Record::SessionStart(start))) => Some(recording(&start)),
        _ => None,
    })
}

/// One row of a baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// `region` or `op`.
    pub kind: String,
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured prepared-graph id: the first of `graphs`.
    pub graph: u64,
    /// The captured prepared graphs the row pools, ascending
    /// ([`crate::RegionTimingRow::graphs`]); the first, with `kind`, `runtime` and `index`,
    /// finds the row.
    pub graphs: Vec<u64>,
    /// The region's index, or the operation's node.
    pub index: u32,
    /// The row's label (a region's queue, kind and operations; an operation's name).
    pub label: String,
    /// The clock its times are on.
    pub clock: Clock,
    /// The replayed times: the middle run's by median where the baseline holds several
    /// ([`BaselineRow::runs`]).
    pub replayed: Durations,
    /// Every run's replayed times, in the order they were added (`--add-to-baseline`); empty
    /// in a baseline of one run, whose times are `replayed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Durations>,
}

impl BaselineRow {
    /// What finds the row: its kind, runtime, first graph, index, label and clock.
    fn place(&self) -> (&str, u32, u64, u32, &str, Clock) {
        (
            self.kind.as_str(),
            self.runtime,
            self.graph,
            self.index,
            self.label.as_str(),
            self.clock,
        )
    }

    /// How far its runs' medians lie apart: the largest over the smallest; 1 with one run.
    /// A replay process's copies and host work move by more between processes than within
    /// one (BENCHMARKS.md, "Replay as a gate": a replay's uploads 0.92-1.16x of the capture
    /// from one process to the next, its own repeats within 1%), which the replay's own
    /// spread, taken within its process, cannot show.
    pub fn between_runs(&self) -> f64 {
        let medians = self.runs.iter().map(|d| d.median_ns);
        match (medians.clone().min(), medians.max()) {
            (Some(low), Some(high)) if low > 0 => high as f64 / low as f64,
            _ => 1.0,
        }
    }

    /// Adds one run's times: `replayed` becomes the middle run's by median (the lower
    /// middle of an even count, as medians are taken here), among the runs with samples
    /// enough to judge by ([`JUDGED_SAMPLES`]) where any has: a run of fewer (a replay cut
    /// short by `--until`, or of one repeat) made the middle left every later replay's row
    /// `too few to judge` against a baseline of 24 samples a run (a break-it pass).
    fn add_run(&mut self, run: Durations) {
        if self.runs.is_empty() {
            self.runs.push(self.replayed);
        }
        self.runs.push(run);
        let judged = |d: &&Durations| d.samples >= JUDGED_SAMPLES;
        let mut by_median: Vec<&Durations> = self.runs.iter().filter(judged).collect();
        if by_median.is_empty() {
            by_median = self.runs.iter().collect();
        }
        by_median.sort_by_key(|d| d.median_ns);
        self.replayed = *by_median[(by_median.len() - 1) / 2];
    }
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
    /// Not judged, for too few samples on a side (under 7).
    pub too_few: bool,
    /// The runs the baseline row holds (`--add-to-baseline`; 1 for one saved run).
    pub runs: usize,
    /// How far its runs' medians lie apart ([`BaselineRow::between_runs`]): a floor a
    /// slowdown must pass, as the replay's own spread is.
    pub between_runs: f64,
    /// Why it is not slow against the baseline though its interval lies wholly past
    /// `--max-slowdown`: the replay's own run-to-run change, [`BaselineMatch::between_runs`]
    /// or the timing floor, with the figure that decided ([`crate::NotSlow`]).
    pub not_slow: Option<crate::NotSlow>,
}

/// The largest baseline read: a baseline holds a few hundred bytes a row.
const MAX_BASELINE_BYTES: u64 = 64 << 20;

impl Baseline {
    /// The baseline of `report`'s replayed timings.
    pub fn of(report: &Report) -> Baseline {
        let region_rows = report.timing.iter().filter_map(|t| {
            Some(BaselineRow {
                kind: "region".into(),
                runtime: t.runtime,
                graph: t.graph,
                graphs: t.graphs.clone(),
                index: t.region,
                label: t.label.clone(),
                clock: t.clock,
                replayed: t.replayed?,
                runs: Vec::new(),
            })
        });
        let op_rows = report.op_timing.iter().filter_map(|t| {
            Some(BaselineRow {
                kind: "op".into(),
                runtime: t.runtime,
                graph: t.graph,
                graphs: t.graphs.clone(),
                index: t.node,
                label: t.label.clone(),
                clock: t.clock,
                replayed: t.replayed?,
                runs: Vec::new(),
            })
        });
        Baseline {
            hrx_replay_baseline: BASELINE_VERSION,
            source: report.trace.source.clone(),
            recorded: report.trace.recorded.clone(),
            backend: report.replay.backend.clone(),
            device: report.replay.device.clone(),
            gpu_clocks: report.replay.gpu_clocks.clone(),
            host: Some(report.replay.host),
            pace_captured: Some(report.replay.pace_captured),
            runs: 1,
            rows: region_rows.chain(op_rows).collect(),
        }
    }

    /// Whether a replay paced as captured or not (`pace_captured`) may be one of its runs: a
    /// baseline's runs are of one pace (one saved before its pace was kept takes either). A
    /// tool asks before it replays ([`Baseline::add`] asks again), so that a replay is not
    /// run for nothing (it was refused only after the replay).
    ///
    /// # Errors
    /// Why not, in one line naming both paces.
    pub fn check_pace(&self, pace_captured: bool) -> Result<(), String> {
        match self.pace_captured {
            Some(kept) if kept != pace_captured => Err(format!(
                "saved from replays at {}, this replay at {}: a baseline's runs are of one pace",
                pace(kept),
                pace(pace_captured)
            )),
            _ => Ok(()),
        }
    }

    /// Adds `run` (the baseline of one more replay of the same recording on the same device,
    /// [`Baseline::of`]) as one more run: each row it shares gains the run's times, a row
    /// only it has is added (with its one run). The clocks kept are the first run's; the host
    /// the first run's, or the busiest loaded run's where a later run's host was loaded (its
    /// highest load per CPU, before or after, the highest of all runs).
    ///
    /// # Errors
    /// Why the run cannot join, in one line: another recording, backend or device.
    pub fn add(&mut self, run: Baseline) -> Result<(), String> {
        run.check_recording(self.recorded.as_deref())?;
        if (self.backend.as_str(), self.device.as_str())
            != (run.backend.as_str(), run.device.as_str())
        {
            return Err(format!(
                "saved from replays on {} ({}), this replay on {} ({}): a baseline's runs are \
                 of one device",
                self.backend, self.device, run.backend, run.device
            ));
        }
        if let Some(this) = run.pace_captured {
            self.check_pace(this)?;
        }
        let runs = (self.runs.checked_add(run.runs)).ok_or_else(|| {
            format!(
                "it holds {} runs already: no more can be counted",
                self.runs
            )
        })?;
        if self.recorded.is_none() {
            self.recorded = run.recorded;
        }
        // A run on a loaded host widens how far the runs lie apart, the floor every later
        // replay's slowdown must pass: its host is kept, so that each judgement says the
        // baseline's times are a loaded host's (the first run's alone hid it), and the busiest
        // run's (a third run saved at 5.17 was quoted at the first's 4.84: a fresh user's
        // pass).
        if let Some(host) = run.host.filter(HostLoad::loaded)
            && match self.host.filter(HostLoad::loaded) {
                None => true,
                Some(kept) => peak_per_cpu(&host) > peak_per_cpu(&kept),
            }
        {
            self.host = Some(host);
        }
        for row in run.rows {
            let same = self.rows.iter_mut().find(|r| r.place() == row.place());
            match same {
                Some(same) => same.add_run(row.replayed),
                None => self.rows.push(row),
            }
        }
        self.runs = runs;
        Ok(())
    }

    /// Adds `run` to the baseline at `path` ([`Baseline::add`]) and saves it; a new or empty
    /// file becomes `run` itself. The file is read again here, not before the replay, with
    /// its directory locked (`flock`) from the read to the rename, so that replays adding to
    /// one baseline at once each add their run (read before the replay, one of two
    /// concurrent adds was lost). Returns what was saved.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`]: the file cannot be read or written, is no baseline, or the
    /// run cannot join it (another recording, backend or device); the file is then unchanged.
    pub fn add_to(path: &Path, run: Baseline) -> Result<Baseline, ReplayError> {
        Baseline::add_to_with(path, run, &Direct)
    }

    /// [`Baseline::add_to`], its temporary file made and put in place by `replacer`.
    ///
    /// # Errors
    /// As [`Baseline::add_to`].
    pub fn add_to_with(
        path: &Path,
        run: Baseline,
        replacer: &dyn Replacer,
    ) -> Result<Baseline, ReplayError> {
        let mut saved = None;
        replace(path, replacer, || {
            let baseline = match std::fs::metadata(path) {
                Ok(meta) if meta.len() > 0 => {
                    let mut baseline = Baseline::load(path)?;
                    baseline
                        .add(run)
                        .map_err(|why| baseline_error(path, format!("{why}: not added")))?;
                    baseline
                }
                _ => run,
            };
            let text = baseline.text(path);
            saved = Some(baseline);
            text
        })?;
        Ok(saved.expect("saved once replaced"))
    }

    /// Writes it as JSON to `path`, which must be a new file or a baseline
    /// ([`Baseline::check_save`]): into `PATH.PID.partial` beside it, then renamed over it, so
    /// that a failed write (a full disk) leaves the previous baseline whole, as `trim` and
    /// `export` leave their outputs (written in place, a cut-off JSON replaced a good baseline
    /// and refused every later save: a break-it pass). The rename waits for the directory's
    /// lock, as [`Baseline::add_to`] holds it: a run added meanwhile is added to the baseline
    /// this saves or replaced by it, never written over it from the file before it.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`] when the file cannot be written or is not a baseline.
    pub fn save(&self, path: &Path) -> Result<(), ReplayError> {
        self.save_with(path, &Direct)
    }

    /// [`Baseline::save`], its temporary file made and put in place by `replacer`.
    ///
    /// # Errors
    /// As [`Baseline::save`].
    pub fn save_with(&self, path: &Path, replacer: &dyn Replacer) -> Result<(), ReplayError> {
        replace(path, replacer, || self.text(path))
    }

    /// The file's contents: pretty JSON.
    fn text(&self, path: &Path) -> Result<String, ReplayError> {
        serde_json::to_string_pretty(self).map_err(|e| baseline_error(path, e))
    }

    /// Whether [`Baseline::save`] may write `path`: its directory exists, and nothing is
    /// there, an empty file (`mktemp`'s, as `record`, `trim` and `export` take) or a
    /// baseline is, of any version (a trace, or any other file, is never overwritten), and
    /// the user may write it (a write-protected baseline is not replaced). A tool checks
    /// before it replays, so that a replay's verdict is not lost for a bad path.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`] saying why not.
    pub fn check_save(path: &Path) -> Result<(), ReplayError> {
        // `-` would be a file of that name: standard output is never a baseline's place.
        if path.as_os_str() == "-" {
            return Err(baseline_error(
                path,
                "cannot write it to standard output: give a file name (the JSON report is \
                 --report json)",
            ));
        }
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => Err(baseline_error(
                path,
                "cannot write it: it is not a regular file",
            )),
            Ok(meta) => {
                if meta.len() > 0 {
                    match Baseline::read_value(path) {
                        Ok(value) if value.get("hrx_replay_baseline").is_some() => {}
                        // A file that cannot be read says why (an unreadable baseline is
                        // no "other file").
                        Err(Unread::Io(why)) => return Err(baseline_error(path, why)),
                        _ => {
                            return Err(baseline_error(
                                path,
                                "refusing to overwrite it: it is not a replay baseline (a \
                                 trace, or another file)",
                            ));
                        }
                    }
                }
                // Renamed over, a write-protected file would be replaced all the same (the
                // folder's permission is what a rename asks): refused, as `record` refuses.
                hrx_capture::replace::check_writable(path)
                    .map_err(|e| baseline_error(path, format!("cannot write it: {e}")))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Where the file will be: a dangling link's target's folder.
                let target = hrx_capture::replace::written_through(path)
                    .map_err(|e| baseline_error(path, format!("cannot write it: {e}")))?;
                let dir = match target.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir,
                    _ => Path::new("."),
                };
                if dir.is_dir() {
                    Ok(())
                } else {
                    Err(baseline_error(
                        path,
                        format!("cannot write it: no directory {}", dir.shown()),
                    ))
                }
            }
            Err(e) => Err(baseline_error(path, format!("cannot write it: {e}"))),
        }
    }

    /// Reads a baseline [`Baseline::save`] wrote, checking every row.
    ///
    /// # Errors
    /// [`ReplayError::Baseline`] when the file cannot be read, is not a regular file, is
    /// larger than a baseline can be (64 MiB), is no baseline, has another version, its
    /// host's load is no load average, or a row's figures do not hold together.
    pub fn load(path: &Path) -> Result<Baseline, ReplayError> {
        let baseline = Baseline::read(path)?;
        if baseline.runs == 0 {
            return Err(baseline_error(path, "it holds 0 runs"));
        }
        if let Some(why) = baseline.host.and_then(|host| check_host(&host).err()) {
            return Err(baseline_error(path, why));
        }
        if let Some(row) = baseline.rows.iter().find(|r| r.runs.len() > baseline.runs) {
            return Err(baseline_error(
                path,
                format!(
                    "a row ({} {} of graph {}) holds {} runs of the baseline's {}",
                    row.kind,
                    row.index,
                    row.graph,
                    row.runs.len(),
                    baseline.runs
                ),
            ));
        }
        let mut places = std::collections::HashSet::new();
        for (i, row) in baseline.rows.iter().enumerate() {
            let place = (
                &row.kind,
                row.runtime,
                row.graph,
                row.index,
                &row.label,
                row.clock as u8,
            );
            let twice = (!places.insert(place)).then(|| "a second row of one place".to_owned());
            if let Some(why) = twice.map_or_else(|| check_row(row).err(), Some) {
                return Err(baseline_error(
                    path,
                    format!(
                        "row {} ({} {} of graph {}): {why}",
                        i + 1,
                        row.kind,
                        row.index,
                        row.graph
                    ),
                ));
            }
        }
        Ok(baseline)
    }

    fn read(path: &Path) -> Result<Baseline, ReplayError> {
        let value = Baseline::read_json(path)?;
        match value.get("hrx_replay_baseline") {
            None => {
                return Err(baseline_error(
                    path,
                    "not a replay baseline (no hrx_replay_baseline field): write one with --save-baseline",
                ));
            }
            Some(v) if v.as_u64() == Some(u64::from(BASELINE_VERSION)) => {}
            Some(v) if v.as_u64() == Some(1) => {
                return Err(baseline_error(
                    path,
                    format!(
                        "baseline version 1, saved before identical graphs' rows were pooled; \
                         this hrx-trace reads version {BASELINE_VERSION}: save it again with \
                         --save-baseline"
                    ),
                ));
            }
            Some(v) => {
                return Err(baseline_error(
                    path,
                    format!("baseline version {v}; this hrx-trace reads {BASELINE_VERSION}"),
                ));
            }
        }
        serde_json::from_value(value)
            .map_err(|e| baseline_error(path, format!("not a replay baseline: {e}")))
    }

    /// The JSON of a file of a baseline's size.
    fn read_json(path: &Path) -> Result<serde_json::Value, ReplayError> {
        Baseline::read_value(path)
            .map_err(|(Unread::Io(why) | Unread::NotBaseline(why))| baseline_error(path, why))
    }

    /// [`Baseline::read_json`], telling a file that cannot be read from one that is no
    /// baseline.
    fn read_value(path: &Path) -> Result<serde_json::Value, Unread> {
        // A FIFO would block, a device never end: only a regular file, of a baseline's size.
        let meta =
            std::fs::metadata(path).map_err(|e| Unread::Io(format!("cannot read it: {e}")))?;
        if !meta.is_file() {
            return Err(Unread::NotBaseline(
                "cannot read it: it is not a regular file".into(),
            ));
        }
        if meta.len() > MAX_BASELINE_BYTES {
            return Err(Unread::NotBaseline(format!(
                "{} bytes: larger than a replay baseline can be",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            // A trace (or any binary file) given where the baseline goes.
            std::io::ErrorKind::InvalidData => Unread::NotBaseline(
                "not a replay baseline: not JSON text (a trace? a baseline is the JSON \
                 `--save-baseline` writes)"
                    .into(),
            ),
            _ => Unread::Io(format!("cannot read it: {e}")),
        })?;
        serde_json::from_str(&text)
            .map_err(|e| Unread::NotBaseline(format!("not a replay baseline: {e}")))
    }

    /// Whether this baseline was saved from a replay of the recording `this` names
    /// ([`crate::TraceInfo::recorded`]; `None`, and a baseline that does not say, pass).
    ///
    /// # Errors
    /// Why not, in one line, as [`Baseline::judge`] says it.
    pub fn check_recording(&self, this: Option<&str>) -> Result<(), String> {
        // As a path is shown: a stored name holding a newline or an escape sequence, quoted
        // and escaped (written raw, it broke the line or reached the terminal).
        let source = Path::new(self.source.as_deref().unwrap_or("an unnamed trace")).shown();
        match (&self.recorded, this) {
            (Some(saved), Some(this)) if saved != this => Err(format!(
                "saved from another recording (of {source}, {}; this trace: {}): a \
                 baseline judges replays of its own recording only",
                Path::new(saved).shown(),
                Path::new(this).shown()
            )),
            _ => Ok(()),
        }
    }

    /// [`Baseline::check_recording`] against the trace at `path`, from its session start,
    /// before anything is replayed (the replay's report says the same, after the replay). A
    /// trace that does not read, or whose first records hold no session start, passes: the
    /// replay says what it finds.
    ///
    /// # Errors
    /// As [`Baseline::check_recording`].
    pub fn check_trace(&self, path: &Path) -> Result<(), String> {
        self.check_recording(recording_at(path).as_deref())
    }

    /// Judges `report`'s rows against this baseline by the timing rule, past the replay's own
    /// spread: each matched row gets its [`BaselineMatch`]; regressions count as slow and
    /// decide the verdict; notes say what could not be compared.
    ///
    /// # Errors
    /// Why nothing can be judged, in one line: the baseline was saved from another recording,
    /// or replayed on another backend or device (whose times are no baseline). A gate asked to
    /// judge against a baseline that judges nothing must not pass as if it had.
    pub fn judge(&self, report: &mut Report, options: &ReplayOptions) -> Result<(), String> {
        // As a path is shown: a stored name holding a newline or an escape sequence, quoted
        // and escaped (written raw, it broke the line or reached the terminal).
        let source = Path::new(self.source.as_deref().unwrap_or("an unnamed trace")).shown();
        self.check_recording(report.trace.recorded.as_deref())?;
        // One side names no recording (a trace whose session start is lost, a baseline
        // saved from one): judged, but not silently (a break-it pass: another recording's
        // baseline passed a damaged trace with SAME and not a word).
        if self.recorded.is_none() || report.trace.recorded.is_none() {
            let which = if self.recorded.is_none() {
                "the baseline names no recording"
            } else {
                "the trace's session start is lost"
            };
            report.notes.push(format!(
                "the baseline's recording could not be checked ({which}): its rows judge this \
                 replay as if it were of the recording it was saved from"
            ));
        }
        if (self.backend.as_str(), self.device.as_str())
            != (
                report.replay.backend.as_str(),
                report.replay.device.as_str(),
            )
        {
            return Err(format!(
                "replayed on {} ({}), this replay on {} ({}): times of another device are no \
                 baseline",
                Path::new(&self.backend).shown(),
                Path::new(&self.device).shown(),
                report.replay.backend,
                report.replay.device
            ));
        }
        if let Some(note) = self.clocks_note(report, source) {
            report.notes.push(note);
        }
        if let Some(kept) = self.pace_captured
            && kept != report.replay.pace_captured
        {
            report.notes.push(format!(
                "the baseline (of a replay of {source}) was replayed at {}, this replay at {}: \
                 submissions ran at another pace, which moves copies and host times; gate at \
                 the baseline's pace",
                pace(kept),
                pace(report.replay.pace_captured)
            ));
        }
        if let Some(host) = self.host.filter(HostLoad::loaded) {
            // Of several runs, the busiest one's load (the one kept, [`Baseline::add`]).
            let whose = match self.runs {
                0 | 1 => "its load".to_owned(),
                runs => format!("the busiest of its {runs} runs at load"),
            };
            report.notes.push(format!(
                "the baseline (of a replay of {source}) was saved on a loaded host, {whose} \
                 {}: its times may be slower than a quiet machine's, so a slowdown judged against it \
                 can go unflagged; save it again on a quiet host",
                host.describe()
            ));
        }
        // The rows by place: a pooled row by its first graph (a pool's graphs are its first
        // graph's twins: a replay cut short by `--until` pools fewer of them, the same row), in
        // file order (the first of duplicates found, as a search would).
        let mut rows: HashMap<(&str, u32, u64, u32), Vec<&BaselineRow>> = HashMap::new();
        for r in &self.rows {
            let place = (r.kind.as_str(), r.runtime, r.graph, r.index);
            rows.entry(place).or_default().push(r);
        }
        let find = |kind: &str, runtime, graph, index, label: &str, clock| {
            rows.get(&(kind, runtime, graph, index))?
                .iter()
                .find(|r| r.label == label && r.clock == clock)
                .copied()
        };
        let mut missing = 0;
        let mut judge = |kind, t: (u32, u64, u32, &str, Clock, Option<Durations>, f64)| {
            let (runtime, graph, index, label, clock, replayed, spread) = t;
            let replayed = replayed?;
            let Some(row) = find(kind, runtime, graph, index, label, clock) else {
                missing += 1;
                return None;
            };
            let between_runs = row.between_runs();
            let judged = crate::compare::judge(
                Some(row.replayed),
                Some(replayed),
                spread.max(between_runs),
                options,
                true,
                clock,
            );
            Some(BaselineMatch {
                baseline: row.replayed,
                ratio: judged.ratio,
                interval: judged.interval,
                regression: judged.slow,
                too_few: judged.too_few,
                runs: row.runs.len().max(1),
                between_runs,
                not_slow: crate::compare::not_slow(
                    &judged,
                    (Some(row.replayed), Some(replayed)),
                    spread,
                    between_runs,
                    options,
                    clock,
                ),
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
        let matched: Vec<BaselineMatch> = (report.timing.iter().map(|t| t.baseline))
            .chain(report.op_timing.iter().map(|t| t.baseline))
            .flatten()
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "none of its {} row{} is a timing row of this replay (of {} here): it judges \
                 nothing",
                self.rows.len(),
                if self.rows.len() == 1 { "" } else { "s" },
                missing
            ));
        }
        // Rows found but each with too few samples on a side: nothing judged either.
        if matched.iter().all(|m| m.too_few) {
            return Err(format!(
                "each of the {} row{} it shares with this replay has too few samples to judge \
                 (under 7 on a side, `hrx_analysis::sketch::median_ranks`): it judges nothing; \
                 replay with more --repeat, or save the baseline from a longer trace",
                matched.len(),
                if matched.len() == 1 { "" } else { "s" },
            ));
        }
        if missing > 0 {
            // The usual cause: a baseline saved without `--per-op` holds no operation rows.
            let no_ops = !report.op_timing.is_empty() && self.rows.iter().all(|r| r.kind != "op");
            report.notes.push(format!(
                "{missing} timing row{} without a row of the same label and clock in the baseline \
                 (saved from a replay of {source}): not judged against it{}",
                if missing == 1 { "" } else { "s" },
                if no_ops {
                    "; the baseline holds no operation rows: save it with --per-op to judge each \
                     operation against it"
                } else {
                    ""
                }
            ));
        }
        // And the other way: baseline rows this replay has no row for, which judge nothing
        // (a baseline saved with `--per-op`, a replay without it: its operation rows).
        let unused = self.rows.len().saturating_sub(matched.len());
        if unused > 0 {
            let ops = self.rows.iter().filter(|r| r.kind == "op").count();
            let without_ops = report.op_timing.is_empty() && ops > 0;
            report.notes.push(format!(
                "{unused} row{} of the baseline without a timing row in this replay: not \
                 judged{}",
                if unused == 1 { "" } else { "s" },
                if without_ops {
                    format!(
                        "; {ops} of them are operation rows, and this replay timed no \
                         operation: replay with --per-op to judge each operation against it"
                    )
                } else {
                    String::new()
                }
            ));
        }
        self.floor_capture_judgements(report, options, source);
        slower_than_capture(report, options, source, self.host);
        let slow = report
            .timing
            .iter()
            .filter_map(|t| t.baseline)
            .chain(report.op_timing.iter().filter_map(|t| t.baseline));
        let (slow, too_few): (Vec<BaselineMatch>, Vec<BaselineMatch>) =
            slow.partition(|b| b.regression);
        report.summary.baseline_slow = slow.len();
        report.summary.baseline_too_few = too_few.iter().filter(|b| b.too_few).count();
        report.verdict = crate::report::Verdict::of(
            report.summary.divergences + report.summary.slow + report.summary.baseline_slow,
            0,
        );
        Ok(())
    }
}

impl Baseline {
    /// Judges again, against the capture, each row slow there whose baseline row's runs lie
    /// further apart ([`BaselineRow::between_runs`]) than the replay's own spread: a
    /// slowdown against the capture within how far known-good replays moved from one process
    /// to the next is no regression (the capture is one process's draw of the same
    /// movement). Said in a note, with the rows' count; `summary.slow` recounted.
    fn floor_capture_judgements(
        &self,
        report: &mut Report,
        options: &ReplayOptions,
        source: Shown<'_>,
    ) {
        let Some(max) = options.max_slowdown else {
            return;
        };
        // A floor past the ratio asked for weakens the gate there: never silently (one run
        // on a loaded host set a floor of 1.94x, and a region slowed 1.55x passed at 1.5: a
        // break-it pass).
        let wide: Vec<(f64, &str)> = (report.timing.iter().map(|t| (t.baseline, &t.label)))
            .chain(report.op_timing.iter().map(|t| (t.baseline, &t.label)))
            .filter_map(|(m, label)| Some((m?.between_runs, label.as_str())))
            .filter(|(between, _)| *between > max)
            .collect();
        if let Some((widest, label)) = wide.iter().max_by(|a, b| a.0.total_cmp(&b.0)) {
            report.notes.push(format!(
                "the baseline's runs lie further apart than --max-slowdown {} in {} (widest {}: \
                 {label}): a slowdown under that spread is not caught there; add its runs \
                 again on a quiet machine (a run on a loaded host widens it)",
                hrx_analysis::units::ratio(max),
                hrx_analysis::units::plural(wide.len() as u64, "row"),
                hrx_analysis::units::ratio(*widest),
            ));
        }
        let mut cleared = Vec::new();
        let mut floor = |regression: &mut bool,
                         not_slow: &mut Option<crate::NotSlow>,
                         interval: Option<(f64, f64)>,
                         m: Option<BaselineMatch>,
                         label: &str| {
            let Some(m) = m else { return };
            if *regression
                && let Some((low, _)) = interval
                && !hrx_analysis::compare::past_ratio(low, max, m.between_runs)
            {
                *regression = false;
                // Said at the row too, as the rules that judge are.
                *not_slow = Some(crate::NotSlow::BaselineRuns {
                    ratio: m.between_runs,
                });
                cleared.push(format!(
                    "{label} ({} within {})",
                    hrx_analysis::units::ratio(low),
                    hrx_analysis::units::ratio(m.between_runs)
                ));
            }
        };
        for t in &mut report.timing {
            floor(
                &mut t.regression,
                &mut t.not_slow,
                t.interval,
                t.baseline,
                &t.label,
            );
        }
        for t in &mut report.op_timing {
            floor(
                &mut t.regression,
                &mut t.not_slow,
                t.interval,
                t.baseline,
                &t.label,
            );
        }
        if cleared.is_empty() {
            return;
        }
        report.summary.slow = report.timing.iter().filter(|t| t.regression).count()
            + report.op_timing.iter().filter(|t| t.regression).count();
        report.notes.push(format!(
            "{} past --max-slowdown against the capture, not counted slow: each interval's low \
             end lies within how far the baseline's {} runs (replays of {source}) moved apart: {}",
            hrx_analysis::units::plural(cleared.len() as u64, "row"),
            self.runs,
            cleared.join(", ")
        ));
    }

    /// The note when `report`'s GPU clocks differ from this baseline's by more than
    /// [`crate::CLOCKS_DIFFER`], before or after the repeats (each compared where both read).
    fn clocks_note(&self, report: &Report, source: Shown<'_>) -> Option<String> {
        let (saved, now) = (
            self.gpu_clocks.as_ref()?,
            report.replay.gpu_clocks.as_ref()?,
        );
        let differ: Vec<String> = [
            ("before", &saved.before, &now.before),
            ("after", &saved.after, &now.after),
        ]
        .into_iter()
        .filter_map(|(when, saved, now)| Some((when, saved.clocks()?, now.clocks()?)))
        .flat_map(|(when, saved, now)| {
            clocks_moved(saved, now)
                .into_iter()
                .map(move |moved| format!("{moved} {when} the repeats"))
        })
        .collect();
        (!differ.is_empty()).then(|| {
            format!(
                "the GPU's clocks differ by more than {:.0}% from those the baseline (of a \
                 replay of {source}) was saved with (baseline -> now: {}): the times judged \
                 against it may reflect the clocks, not only the code",
                crate::CLOCKS_DIFFER * 100.0,
                differ.join(", ")
            )
        })
    }
}

/// The highest of `host`'s loads (before or after) per CPU; 0 where none is known.
fn peak_per_cpu(host: &HostLoad) -> f64 {
    let highest = [host.load_before, host.load_after]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
    highest / host.cpus.max(1) as f64
}

/// How much higher per CPU the baseline's recorded load must be than the capture's for
/// its slower rows to be put down to a busier machine: the step from a quiet host to a
/// loaded one (1 per CPU, README "Host load"), so that the two loads of one machine
/// minutes apart never differ by it.
pub(crate) const BUSIER_PER_CPU: f64 = 1.0;

/// The baseline's highest recorded load per CPU and the capture's, where the baseline's
/// is [`BUSIER_PER_CPU`] or more above it; `None` where it is not, or either is unknown
/// (a baseline saved before its host was kept, a trace without the load counter).
pub(crate) fn busier_than_capture(
    baseline: Option<HostLoad>,
    capture_per_cpu: Option<f64>,
) -> Option<(f64, f64)> {
    let host = baseline.filter(|h| h.cpus > 0)?;
    let highest = [host.load_before, host.load_after]
        .into_iter()
        .flatten()
        .max_by(f64::total_cmp)?;
    let (saved, capture) = (highest / host.cpus as f64, capture_per_cpu?);
    (saved - capture >= BUSIER_PER_CPU).then_some((saved, capture))
}

/// Notes rows whose baseline median is slower than the capture's past `--max-slowdown`: a
/// slowdown judged against such a baseline alone can go unflagged (a baseline saved while a
/// build ran read 9.59 ms for a region captured at 6.51 ms, and a doubled kernel passed
/// against it with SAME and no word: a fresh-user pass). The note puts it down to a busier
/// machine only where the recorded loads show one ([`busier_than_capture`]); at the
/// capture's load it says only what is so, since copies move from process to process on
/// one quiet machine, and advice to save again on a quiet machine on every run read as
/// wrong (another pass).
fn slower_than_capture(
    report: &mut Report,
    options: &ReplayOptions,
    source: Shown<'_>,
    host: Option<HostLoad>,
) {
    let Some(max) = options.max_slowdown else {
        return;
    };
    let slower: Vec<(f64, &str)> = (report.timing.iter())
        .filter_map(|t| {
            let (b, c) = (t.baseline?.baseline, t.captured?);
            // Within the floor, no slowdown is judged either way (a 0.7 µs region saved
            // at 1.4 µs on a loaded host was said: a break-it pass).
            let floor = options.floor(t.clock).as_nanos() as u64;
            (c.median_ns > 0 && b.median_ns.saturating_sub(c.median_ns) > floor)
                .then(|| (b.median_ns as f64 / c.median_ns as f64, t.label.as_str()))
        })
        .filter(|&(ratio, _)| ratio > max)
        .collect();
    let Some((widest, label)) = slower.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return;
    };
    let load = |l| hrx_analysis::units::host_load(hrx_analysis::units::Load::PerCpu(l));
    let why = match busier_than_capture(host, report.trace.host_load_per_cpu) {
        Some((saved, captured)) => format!(
            ", and was saved on a busier machine (load {} against the capture's {}): a \
             slowdown judged against it can go unflagged; save it again on a machine as quiet \
             as the capture's",
            load(saved),
            load(captured),
        ),
        None => ": a slowdown judged against the baseline alone can go unflagged there (the \
                  capture judges those rows too)"
            .into(),
    };
    report.notes.push(format!(
        "the baseline (of a replay of {source}) is slower than the capture past \
         --max-slowdown {} in {} (widest {}: {label}){why}",
        hrx_analysis::units::ratio(max),
        hrx_analysis::units::plural(slower.len() as u64, "region row"),
        hrx_analysis::units::ratio(*widest),
    ));
}

/// The highest load average a host can have: Linux counts its runnable and waiting tasks,
/// of which there are at most `PID_MAX_LIMIT` (2^22).
const MOST_LOAD: f64 = 4_194_304.0;

/// Whether a baseline's host figures hold together: each load average a number from 0 to
/// [`MOST_LOAD`]. A hand-edited 1e308 was taken, and every note naming the baseline's load
/// printed its 309 digits; a negative load was taken too.
fn check_host(host: &HostLoad) -> Result<(), String> {
    let loads = [
        ("load_before", host.load_before),
        ("load_after", host.load_after),
    ];
    for (field, load) in loads {
        if let Some(load) = load
            && !(0.0..=MOST_LOAD).contains(&load)
        {
            // `{:?}`: 1e308 as `1e308`, not its 309 digits.
            return Err(format!(
                "host.{field} is {load:?}, not a load average (one from 0 to {MOST_LOAD})"
            ));
        }
    }
    Ok(())
}

/// Whether a row's figures hold together: its pooled graphs ascending from its graph,
/// samples, a positive median within the extremes and percentiles, and the median's
/// interval around it.
fn check_row(row: &BaselineRow) -> Result<(), String> {
    if !matches!(row.kind.as_str(), "region" | "op") {
        return Err(format!(
            "its kind {:?} is neither \"region\" nor \"op\"",
            row.kind
        ));
    }
    if row.graphs.first() != Some(&row.graph) || row.graphs.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!(
            "its graphs {:?} are not ascending from its graph {}",
            row.graphs, row.graph
        ));
    }
    check_durations(&row.replayed)?;
    for (i, run) in row.runs.iter().enumerate() {
        check_durations(run).map_err(|why| format!("run {}: {why}", i + 1))?;
    }
    if !row.runs.is_empty() && !row.runs.contains(&row.replayed) {
        return Err("its times are none of its runs' (the middle run's are)".into());
    }
    Ok(())
}

/// Whether one distribution's figures hold together ([`check_row`]).
fn check_durations(d: &Durations) -> Result<(), String> {
    if d.samples == 0 {
        return Err("no samples".into());
    }
    if d.median_ns == 0 {
        return Err("a median of 0 ns".into());
    }
    let ordered = [
        d.min_ns,
        d.p10_ns,
        d.median_ns,
        d.p90_ns,
        d.p99_ns,
        d.max_ns,
    ];
    if ordered.windows(2).any(|w| w[0] > w[1]) {
        return Err("min, p10, median, p90, p99 and max are not in order".into());
    }
    if let Some((low, high)) = d.median_interval_ns
        && !(low <= d.median_ns && d.median_ns <= high)
    {
        return Err(format!(
            "the median's interval {low}..{high} does not hold the median"
        ));
    }
    if d.median_interval_ns.is_some() && d.samples < 7 {
        return Err(format!(
            "a median's interval from {} samples (7 at least)",
            d.samples
        ));
    }
    Ok(())
}

/// Why [`Baseline::read_value`] read no JSON, in words: the file could not be read, or it
/// holds no baseline (not a regular file, too large, not JSON).
enum Unread {
    Io(String),
    NotBaseline(String),
}

/// How a baseline's temporary file is made and put in place ([`Baseline::save_with`],
/// [`Baseline::add_to_with`]). [`Direct`] does both plainly; a command-line tool names the
/// file to its interrupt handler, which removes it, and renames with its signals blocked, so
/// that an interruption leaves the earlier baseline and no temporary file, or the new one.
pub trait Replacer {
    /// Creates the temporary file that becomes `target` once renamed, beside it
    /// (`TARGET.PID.partial`, [`hrx_capture::replace::create_beside`]): its path, and the
    /// file open for writing.
    ///
    /// # Errors
    /// When it cannot be created.
    fn create_beside(&self, target: &Path) -> std::io::Result<(PathBuf, File)>;

    /// Runs `rename`, which puts the temporary file in place.
    ///
    /// # Errors
    /// `rename`'s.
    fn commit(&self, rename: &mut dyn FnMut() -> std::io::Result<()>) -> std::io::Result<()>;

    /// Told, before the wait, that another process holds the lock on the baseline's folder
    /// `dir` (another replay adding to a baseline there): the wait has no bound, so a
    /// command-line tool says what it waits for (it waited in silence: a break-it pass).
    /// Nothing by default.
    fn waiting(&self, _dir: &Path) {}
}

/// The plain [`Replacer`]: [`hrx_capture::replace::create_beside`], then the rename.
#[derive(Clone, Copy, Debug, Default)]
pub struct Direct;

impl Replacer for Direct {
    fn create_beside(&self, target: &Path) -> std::io::Result<(PathBuf, File)> {
        hrx_capture::replace::create_beside(target, "partial")
    }

    fn commit(&self, rename: &mut dyn FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
        rename()
    }
}

/// One save or add at a time in a process: the temporary file is named for the process
/// (threads adding to one baseline at once each add their run).
static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Replaces the baseline at `path` by `contents`' text: a temporary file beside it, made by
/// `replacer`, then, with the directory locked (`flock`, advisory, and only where the
/// directory opens and locks: a read-only or odd file system still saves), `contents` made,
/// written, synced and renamed over it. The temporary file is made before the lock is waited
/// for, so that an interruption meanwhile removes it. A symbolic link is written through
/// ([`hrx_capture::replace::written_through`], as `export` and `trim` write), not replaced by
/// a file: `--add-to-baseline` read the baseline it names, and wrote the runs beside it into
/// a new file of the link's name, the baseline named left at its earlier runs, and a link to
/// a file not yet made was replaced (break-it passes). The temporary file gets the earlier baseline's permission bits: a
/// `chmod 600` baseline stays private. On any error it is removed and the file unchanged.
fn replace(
    path: &Path,
    replacer: &dyn Replacer,
    contents: impl FnOnce() -> Result<String, ReplayError>,
) -> Result<(), ReplayError> {
    use std::io::Write;
    Baseline::check_save(path)?;
    // Through a symbolic link, dangling or not, as `export` and `trim` write (a dangling
    // one was replaced by a file, its target never made: a break-it pass); a file there
    // by its whole path, which names its folder in the note of `Replacer::waiting`.
    let cannot = |e: std::io::Error| baseline_error(path, format!("cannot write it: {e}"));
    let through = hrx_capture::replace::written_through(path).map_err(cannot)?;
    let target = std::fs::canonicalize(&through).unwrap_or(through);
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let _one = SAVING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (partial, mut file) = replacer.create_beside(&target).map_err(cannot)?;
    let lock = File::open(dir).ok().filter(|d| match d.try_lock() {
        Ok(()) => true,
        Err(std::fs::TryLockError::WouldBlock) => {
            replacer.waiting(dir);
            d.lock().is_ok()
        }
        Err(std::fs::TryLockError::Error(_)) => false,
    });
    let replaced = contents().and_then(|text| {
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all());
        drop(file);
        written
            .and_then(|()| replacer.commit(&mut || std::fs::rename(&partial, &target)))
            .map_err(cannot)
    });
    if replaced.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    drop(lock);
    replaced
}

fn baseline_error(path: &Path, why: impl std::fmt::Display) -> ReplayError {
    ReplayError::Baseline {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{BASELINE_VERSION, Baseline};

    fn baseline(device: &str) -> Baseline {
        Baseline {
            hrx_replay_baseline: BASELINE_VERSION,
            source: None,
            recorded: None,
            backend: "sim".into(),
            device: device.into(),
            gpu_clocks: None,
            host: None,
            pace_captured: None,
            runs: 1,
            rows: Vec::new(),
        }
    }

    /// A save that cannot be written (here its temporary file: a directory is in the way;
    /// a full disk alike) leaves the previous baseline whole, and a later save replaces it.
    #[test]
    fn a_failed_save_keeps_the_previous_baseline() {
        let dir = std::env::temp_dir().join(format!("hrx-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("base.json");
        baseline("first").save(&path).unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        let partial = dir.join(format!("base.json.{}.partial", std::process::id()));
        std::fs::create_dir(&partial).unwrap();
        let error = baseline("second").save(&path).unwrap_err().to_string();
        assert!(error.contains("cannot write it"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
        std::fs::remove_dir(&partial).unwrap();
        baseline("second").save(&path).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"second\"")
        );
        assert!(!partial.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
