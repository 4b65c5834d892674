//! The report as readable text: header, per-submission table (equal rows grouped),
//! first divergence, timing table, substitutions and notes.

use super::{Clock, Durations, NotSlow, OutputCheck, OutputResult, Report, format_ns};
use hrx_capture::ShowPath;
// A ratio with its interval (`1.50x [1.25x..1.75x]`: the one formatter of `replay` and
// `diff`), and the graphs a pooled row pools as runs (`1-3`).
use hrx_analysis::units::{id_runs, ratio_with_interval};
use std::fmt::Write as _;

impl super::GpuClocksAround {
    /// The report's `GPU clocks:` line (`before ...; after ...`, `... before and after` when
    /// the two readings are the same, `not read: WHY` when neither was read for one reason),
    /// and, with a [caveat](super::GpuClocksAround::caveat), a second line saying the
    /// timings may reflect it. Each line ends with a newline.
    pub fn to_text(&self) -> String {
        use super::ClockReading::{Read, Unreadable};
        let mut out = match (&self.before, &self.after) {
            (Unreadable(b), Unreadable(a)) if a == b => format!("GPU clocks: not read: {b}\n"),
            (Read(b), Read(a)) if a == b => format!("GPU clocks: {b} before and after\n"),
            (b, a) => format!("GPU clocks: before {b}; after {a}\n"),
        };
        if let Some(caveat) = &self.caveat {
            let _ = writeln!(out, "GPU clocks {caveat}: the timings may reflect it");
        }
        out
    }
}

impl Report {
    /// The report as readable text: header, per-submission table (equal rows of
    /// consecutive submissions grouped as `first..last`), first divergence, timing table,
    /// substitutions and notes.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if self.trace.records_lost > 0 {
            // Largest first, as every other verb lists them (the map is by name).
            let mut by_count: Vec<(&String, &u64)> =
                self.trace.records_lost_by_kind.iter().collect();
            by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let kinds: Vec<String> = (by_count.into_iter())
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "cannot be exact: {} records lost while recording ({})",
                self.trace.records_lost,
                kinds.join(", ")
            );
        }
        if self.trace.range_unknown_bytes > 0 {
            let _ = writeln!(
                out,
                "cannot be exact: the range reads {} bytes whose contents at its start the \
                 trace lacks (a trim of a recording without HRX_TRACE_CONTENTS=1 \
                 HRX_TRACE_DIGESTS=all): outputs that depend on them are excluded from the comparison",
                self.trace.range_unknown_bytes
            );
        }
        let several = self.trace.runtimes.len() > 1;
        let _ = writeln!(
            out,
            "hrx-trace replay{} (trace format {}{})",
            self.trace
                .source
                .as_ref()
                .map(|s| format!(": {}", std::path::Path::new(s).shown()))
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
        if r.warmup > 0 {
            let _ = write!(
                out,
                " after {} warm-up{}",
                r.warmup,
                if r.warmup == 1 { "" } else { "s" }
            );
        }
        if r.pace_captured {
            out.push_str(", paced as captured");
        }
        if !r.slowdowns.is_empty() {
            let slowed: Vec<String> = r
                .slowdowns
                .iter()
                .map(|s| format!("{} +{}%", s.entry, s.percent))
                .collect();
            let _ = write!(
                out,
                ", slowed on purpose (--inject-slowdown): {}",
                slowed.join(", ")
            );
        }
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
            let _ = write!(out, ", max slowdown {}", hrx_analysis::units::ratio(m));
        }
        out.push('\n');
        if r.host.cpus > 0 {
            let loaded = r.host.loaded();
            let _ = writeln!(
                out,
                "host: load {} (1-minute average){}",
                r.host.describe(),
                if loaded {
                    ": loaded, host-side times may read slower than on a quiet machine"
                } else {
                    ""
                }
            );
        }
        if let Some(clocks) = &r.gpu_clocks {
            out.push_str(&clocks.to_text());
        }
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
            "verdict: {} (exit {}): {}/{} statuses match{}, {}/{} outputs match{}{}, {} divergence{}{}, {}{}",
            self.verdict_name(),
            self.exit_code(),
            s.statuses_matched,
            s.submissions,
            // A trace cut short or crashed holds no outcome for its last submissions: not a
            // mismatch ("0/1 statuses match" of a crashed run read as one).
            if s.outcomes_unknown > 0 {
                format!(
                    " ({} without a recorded outcome, not compared)",
                    s.outcomes_unknown
                )
            } else {
                String::new()
            },
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
            // Without a maximum slowdown nothing is judged: "0 slow" would read as a pass.
            match self.replay.max_slowdown {
                Some(_) => format!("{} slow", s.slow),
                None => "timing not judged (no --max-slowdown)".to_owned(),
            },
            if self.timing.iter().any(|t| t.baseline.is_some())
                || self.op_timing.iter().any(|t| t.baseline.is_some())
            {
                format!(
                    ", {} slow against the baseline{}",
                    s.baseline_slow,
                    if s.baseline_too_few > 0 {
                        format!(" ({} rows too few to judge against it)", s.baseline_too_few)
                    } else {
                        String::new()
                    }
                )
            } else {
                String::new()
            }
        );
        if s.too_few > 0 {
            // Which side is short decides the remedy: the capture's needs a longer recording.
            let rows = self
                .timing
                .iter()
                .map(|t| (t.too_few, t.captured))
                .chain(self.op_timing.iter().map(|t| (t.too_few, t.captured)));
            let captured_short = rows
                .filter(|(few, c)| *few && c.is_some_and(|c| c.samples < 7))
                .count();
            let _ = writeln!(
                out,
                "not judged: {} timing row{} with too few samples (under 7 on a side){}",
                s.too_few,
                if s.too_few == 1 { "" } else { "s" },
                match captured_short {
                    0 => "; raise --repeat".to_string(),
                    n if n == s.too_few => {
                        "; the capture's side is short: record more frames (--repeat adds \
                         replayed samples only)"
                            .to_string()
                    }
                    n => format!(
                        "; {n} short on the capture's side (record more frames), the rest on \
                         the replay's (raise --repeat)"
                    ),
                }
            );
        }
        if s.too_spread > 0 {
            let _ = writeln!(
                out,
                "not judged: {} timing row{} too spread to judge (the interval holds 1 and \
                 spans more than 10x: a side's samples differ by an order of magnitude, as on a \
                 loaded host or for unlike work under one name); raise --repeat, or replay on \
                 a quiet host",
                s.too_spread,
                if s.too_spread == 1 { "" } else { "s" },
            );
        }
        if let Some(what) = &self.nothing_compared {
            let _ = writeln!(out, "warning: {what}");
        }

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
        // Which outputs were not compared and why: the counts alone left a user to find the
        // reasons in the JSON (a break-it pass).
        let excluded: Vec<(&OutputCheck, &str)> = (self.outputs.iter())
            .filter_map(|o| match &o.result {
                OutputResult::Excluded { why } => Some((o, why.as_str())),
                _ => None,
            })
            .collect();
        if !excluded.is_empty() {
            let _ = writeln!(
                out,
                "excluded from the comparison ({}):",
                self.summary.outputs_excluded.max(excluded.len())
            );
            for (o, why) in excluded.iter().take(5) {
                let region = o.region.map(|r| format!(" region {r}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  submission {}{region} buffer {} bytes {}..{}: {why}",
                    o.submission, o.buffer, o.start, o.end
                );
            }
            if excluded.len() > 5 {
                let _ = writeln!(
                    out,
                    "  ... {} more (`--report json` lists every one with its reason)",
                    excluded.len() - 5
                );
            }
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
                "\nregion timing (median; p10..p90 of the replay; ratio [its 95% interval]{}):",
                if r.max_slowdown.is_some() {
                    "; SLOW = the whole interval past the max slowdown and past the replay's \
                     own run-to-run change (its first half of repeats' median against its \
                     second's, JSON `run_to_run`; `not slow:` says where it or another rule \
                     decided); too few to judge = under 7 samples on a side; too spread to \
                     judge = the interval holds 1 and spans more than 10x"
                } else {
                    ""
                }
            );
            let listed = Listed::of(
                &self.timing,
                |t| t.regression,
                |t| longest(t.captured, t.replayed),
            );
            let rows: Vec<Vec<String>> = (listed.rows.iter())
                .map(|&i| &self.timing[i])
                .map(|t| {
                    let mut cells = Vec::new();
                    if several {
                        cells.push(t.runtime.to_string());
                    }
                    cells.extend(timing_cells(
                        &t.graphs,
                        t.region.to_string(),
                        t.captured,
                        t.replayed,
                        (t.ratio, t.interval, t.too_few || t.too_spread, t.regression),
                        t.clock,
                        t.not_slow,
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
                "graphs", "region", "captured", "replayed", "p10..p90", "ratio", "", "what",
            ]);
            let right: Vec<bool> = (0..header.len())
                .map(|i| {
                    let i = if several { i } else { i + 1 };
                    (0..=6).contains(&i) && i != 5
                })
                .collect();
            table(&mut out, &header, &rows, &right);
            listed.say_more(&mut out, "region");
        }

        if !self.op_timing.is_empty() {
            // Say how the replay timed operations, and why the captured column is empty
            // where it is (a capture whose backend timed regions only) rather than leave a
            // column of dashes.
            let how = if self.replay.isolated {
                "each operation launched on its own"
            } else {
                "each operation inside its native graph or copy batch"
            };
            if self.op_timing.iter().any(|t| t.captured.is_some()) {
                out.push_str(&format!("\nper-operation timing ({how}):\n"));
            } else {
                // The recorder may have lost the times the capture took (it read "timed whole
                // regions only" of such a trace: a break-it pass).
                let why = if self.trace.records_lost_by_kind.contains_key("OpTiming") {
                    "the recorder lost the capture's operation times"
                } else {
                    "the capture timed whole regions only"
                };
                out.push_str(&format!(
                    "\nper-operation timing ({how}; {why}, so there is no captured time to \
                     compare):\n"
                ));
            }
            let listed = Listed::of(
                &self.op_timing,
                |t| t.regression,
                |t| longest(t.captured, t.replayed),
            );
            let rows: Vec<Vec<String>> = (listed.rows.iter())
                .map(|&i| &self.op_timing[i])
                .map(|t| {
                    let mut cells = Vec::new();
                    if several {
                        cells.push(t.runtime.to_string());
                    }
                    cells.extend(timing_cells(
                        &t.graphs,
                        t.node.to_string(),
                        t.captured,
                        t.replayed,
                        (t.ratio, t.interval, t.too_few || t.too_spread, t.regression),
                        t.clock,
                        t.not_slow,
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
                "graphs",
                "op",
                "captured",
                "replayed",
                "p10..p90",
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
            listed.say_more(&mut out, "operation");
        }

        // Against a baseline (`--baseline`): the rows it has, judged by the same rule.
        let median = |d: Option<Durations>| d.map_or("-".into(), |d| format_ns(d.median_ns));
        let row = |graphs: &[u64],
                   what: String,
                   label: &str,
                   b: &crate::baseline::BaselineMatch,
                   replayed: Option<Durations>| {
            let ratio = b.ratio.map_or("-".to_string(), |r| match b.interval {
                Some(_) => ratio_with_interval(r, b.interval),
                None => format!("{} (too few to judge)", hrx_analysis::units::ratio(r)),
            });
            vec![
                id_runs(graphs),
                what,
                format!("{} -> {}", median(Some(b.baseline)), median(replayed)),
                ratio,
                // Why a row past the maximum slowdown is not slow, said at the row as the
                // capture's rows say it (a fresh user's 3.45x [2.06x..4.94x] at 1.5 passed
                // with no word: the replay's own 2.38x run-to-run change had cleared it).
                match (b.regression, b.not_slow) {
                    (true, _) => "SLOW".to_string(),
                    (false, Some(why)) => format!("not slow: {}", why.describe()),
                    (false, None) => String::new(),
                },
                label.to_string(),
            ]
        };
        // (row, graphs, label, its baseline, the replayed durations) of every judged row,
        // regions first.
        type Judged<'r> = (
            String,
            &'r [u64],
            &'r str,
            &'r crate::baseline::BaselineMatch,
            Option<Durations>,
        );
        let judged: Vec<Judged<'_>> = (self.timing.iter())
            .filter_map(|t| {
                let b = t.baseline.as_ref()?;
                Some((
                    format!("region {}", t.region),
                    &t.graphs[..],
                    &t.label[..],
                    b,
                    t.replayed,
                ))
            })
            .chain(self.op_timing.iter().filter_map(|t| {
                let b = t.baseline.as_ref()?;
                Some((
                    format!("op {}", t.node),
                    &t.graphs[..],
                    &t.label[..],
                    b,
                    t.replayed,
                ))
            }))
            .collect();
        let listed = Listed::of(
            &judged,
            |(.., b, _)| b.regression,
            |&(.., b, replayed)| longest(Some(b.baseline), replayed),
        );
        let rows: Vec<Vec<String>> = (listed.rows.iter())
            .map(|&i| {
                let (what, graphs, label, b, replayed) = &judged[i];
                row(graphs, what.clone(), label, b, *replayed)
            })
            .collect();
        if !rows.is_empty() {
            // A baseline of several runs: how many, and the floors their spread sets, each
            // row's its own: the widest named, and the typical one, so that one noisy row's
            // spread does not read as every row's floor (a break-it pass: 1.38x from a 0.5 µs
            // copy above rows whose runs lay within 2%).
            let spreads: Vec<(usize, f64, &str)> = (self.timing.iter())
                .filter_map(|t| t.baseline.map(|b| (b, t.label.as_str())))
                .chain(
                    (self.op_timing.iter())
                        .filter_map(|t| t.baseline.map(|b| (b, t.label.as_str()))),
                )
                .map(|(b, label)| (b.runs, b.between_runs, label))
                .collect();
            let runs = spreads.iter().map(|&(n, ..)| n).max().unwrap_or(1);
            let of_runs = match spreads.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
                Some(&(_, widest, label)) if runs > 1 => {
                    let mut each: Vec<f64> = spreads.iter().map(|&(_, w, _)| w).collect();
                    each.sort_by(f64::total_cmp);
                    let typical = each[each.len() / 2];
                    format!(
                        " of {runs} runs, each row's floor how far its runs' medians lay apart: \
                         {} at the median row, at most {} ({})",
                        hrx_analysis::units::ratio(typical),
                        hrx_analysis::units::ratio(widest),
                        label
                    )
                }
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "\nagainst the baseline{of_runs} ({} of {} slow; median baseline -> replayed, ratio [its 95% interval]):",
                self.summary.baseline_slow,
                judged.len()
            );
            table(
                &mut out,
                &["graphs", "row", "median", "ratio", "", "what"],
                &rows,
                &[true, false, true, true, false, false],
            );
            listed.say_more(&mut out, "row");
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

/// Rows a timing table lists at most: a graph of 100,000 regions printed 100,000 rows, the
/// verdict and notes lost among them (a fresh user's pass). `diff` and `stats` bound theirs
/// alike; `--report json` keeps every row.
pub(crate) const LISTED_ROWS: usize = 40;

/// Which rows of a timing table are listed: all of them up to [`LISTED_ROWS`]; past that
/// every SLOW row first (the gate's culprits), then the longest, in the table's order.
struct Listed {
    /// Indices of the listed rows, ascending.
    rows: Vec<usize>,
    /// Rows left out, and how many of them are SLOW.
    more: usize,
    more_slow: usize,
}

impl Listed {
    /// The rows of a table of `items`, `slow` saying whether one is SLOW and `weight` how
    /// long it took (ns).
    fn of<T>(items: &[T], slow: impl Fn(&T) -> bool, weight: impl Fn(&T) -> u64) -> Self {
        let len = items.len();
        let (slow, weight) = (|i: usize| slow(&items[i]), |i: usize| weight(&items[i]));
        if len <= LISTED_ROWS {
            return Self {
                rows: (0..len).collect(),
                more: 0,
                more_slow: 0,
            };
        }
        let mut order: Vec<usize> = (0..len).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(slow(i)), std::cmp::Reverse(weight(i)), i));
        let mut rows = order[..LISTED_ROWS].to_vec();
        let more_slow = order[LISTED_ROWS..].iter().filter(|&&i| slow(i)).count();
        rows.sort_unstable();
        Self {
            rows,
            more: len - LISTED_ROWS,
            more_slow,
        }
    }

    /// The line after the table saying what was left out (nothing when nothing was).
    fn say_more(&self, out: &mut String, what: &str) {
        if self.more == 0 {
            return;
        }
        let slow = match self.more_slow {
            0 => String::new(),
            n => format!(", {n} of them SLOW"),
        };
        let _ = writeln!(
            out,
            "  ... {}{slow} (listed: {}, the SLOW ones first, then the longest; \
             `--report json` lists every one)",
            hrx_analysis::units::plural(self.more as u64, &format!("more {what}")),
            self.rows.len()
        );
    }
}

/// A row's weight in [`Listed`]: its longer median (ns).
fn longest(captured: Option<Durations>, replayed: Option<Durations>) -> u64 {
    [captured, replayed]
        .iter()
        .flatten()
        .map(|d| d.median_ns)
        .max()
        .unwrap_or(0)
}

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

/// A relative tolerance as people write one: `0`, `0.01`, `1e-6`.
pub(super) fn tolerance_text(t: f64) -> String {
    if t == 0.0 || (1e-3..1e4).contains(&t) {
        format!("{t}")
    } else {
        format!("{t:e}")
    }
}

/// The cells of a timing row up to its label: its graphs (`1-3` for pooled graphs), index,
/// captured and replayed medians, the replay's p10..p90, the ratio and the mark (`not_slow`: why
/// a row past the maximum slowdown was not slow).
pub(super) fn timing_cells(
    graphs: &[u64],
    index: String,
    captured: Option<Durations>,
    replayed: Option<Durations>,
    (ratio, interval, too_few, regression): (Option<f64>, Option<(f64, f64)>, bool, bool),
    clock: Clock,
    not_slow: Option<NotSlow>,
) -> Vec<String> {
    let ratio_text = |r: f64| ratio_with_interval(r, interval);
    let why_not_slow = not_slow.map(|reason| reason.describe());
    let median = |s: Option<Durations>| {
        s.map_or("-".to_string(), |s| {
            format!("{} (n={})", format_ns(s.median_ns), s.samples)
        })
    };
    vec![
        id_runs(graphs),
        index,
        median(captured),
        median(replayed),
        // One sample has no spread.
        replayed.map_or("-".to_string(), |s| match s.samples {
            1 => "1 sample".to_string(),
            _ => format!("{}..{}", format_ns(s.p10_ns), format_ns(s.p90_ns)),
        }),
        ratio.map_or("-".to_string(), ratio_text),
        match (regression, too_few, clock) {
            (true, _, _) => "SLOW".to_string(),
            (false, false, clock) if let Some(why) = &why_not_slow => format!(
                "{}not slow: {why}",
                if clock == Clock::Device {
                    "device, "
                } else {
                    ""
                }
            ),
            // Not judged: too few samples (no interval), or an interval too spread.
            (false, true, clock) => format!(
                "{}{}",
                if clock == Clock::Device {
                    "device, "
                } else {
                    ""
                },
                if interval.is_some() {
                    "too spread to judge"
                } else {
                    "too few to judge"
                }
            ),
            (false, false, Clock::Device) => "device".to_string(),
            (false, false, Clock::Host) => String::new(),
        },
    ]
}
