//! Replaying a trace file in bounded memory: chunk by chunk (module `chunk`), on replay
//! runtimes kept across chunks, each chunk compared as a whole trace is (module `compare`)
//! and folded into one report.
//!
//! What replay holds at a time: the structure (buffers, kernels, graphs), one entry per chunk
//! (where its records end in the file), the records read ahead of the chunk being filled,
//! two chunks of the
//! capture and what their replays recorded (a chunk is compared once the next one has run,
//! so that digests the replay hashed late are with it), the completions of submissions that
//! a later chunk names as explicit producer (until that chunk: as many as the capture's
//! program held across a chunk boundary; module `execute`), the failures of the chunks
//! compared so far that later divergences are classified against (proportional to the
//! failures; module `concurrent`), the region-time sketches
//! (`hrx_analysis::sketch`, per graph and region, merged per pool of identical graphs once
//! the trace ends, as a whole replay pools them), the text table's grouped lines and at
//! most [`MAX_LISTED`] divergences and outputs that did not match. Submission rows and
//! output checks are handed to the caller chunk by chunk and not kept.
//!
//! Against a whole replay ([`crate::replay`]): the replay runtime drains every submission
//! at the end of each chunk (a pause in the submit stream every chunk); region-time
//! medians and percentiles come from the sketches (exact up to 1,024 samples, within 0.4%
//! beyond; nearest rank, so an even count's median is the lower middle value, not the mean
//! of the two); per-operation timing (`per_op`) compares the capture's operation times of
//! the first chunk only; a divergence that only a *later* chunk's concurrent failure makes
//! timing-dependent stays a regression (module `concurrent`).

use crate::chunk::{ChunkIndex, Chunker};
use crate::compare::{self, RuntimeRuns};
use crate::error::ReplayError;
use crate::execute::{ChunkPlace, ChunkRun, Session, Ticker};
use crate::options::ReplayOptions;
use crate::plan::{self, Plan, Sample};
use crate::report::{
    Clock, Divergence, DivergenceKind, Durations, OutputCheck, OutputResult, RegionTimingRow,
    Report, RuntimeInfo, SubmissionRow, SubstitutionRow, Verdict,
};
use hrx_analysis::matching::{self, Paired, Pools};
use hrx_analysis::sketch::Sketch;
use hrx_capture::TraceReader;
use hrx_capture::schema::RuntimeId;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

/// Most divergences, timing-dependent divergences and non-matching outputs a streamed
/// report lists (every one is counted in the summary and handed to the row callback).
pub const MAX_LISTED: usize = 1000;

/// One side's durations of one region, on both clocks.
#[derive(Default)]
struct Sketches {
    /// Samples without device timestamps.
    host_only: u64,
    /// The samples by half of the repeats (first, second) and clock (host, device): the
    /// replay's own spread (`hrx_analysis::compare::spread`); both halves together, the
    /// region's distribution.
    halves: [[Sketch; 2]; 2],
}

impl Sketches {
    /// Adds `s`, taken in a repeat of the `half` (0 or 1) it names.
    fn add(&mut self, s: &Sample, half: usize) {
        if s.device_ns.is_none() {
            self.host_only += 1;
        }
        self.halves[half][0].add(s.host_ns);
        self.halves[half][1].add(s.device_ns.unwrap_or(s.host_ns));
    }

    /// Samples added.
    fn count(&self) -> u64 {
        self.halves[0][0].count() + self.halves[1][0].count()
    }

    fn stats(&self, clock: Clock) -> Option<Durations> {
        let c = usize::from(clock == Clock::Device);
        let mut all = self.halves[0][c].clone();
        all.merge(&self.halves[1][c]);
        Durations::of_sketch(&mut all)
    }

    /// Adds `other`'s samples, half by half: a pooled row's ([`hrx_analysis::matching::Pools`]).
    fn merge(&mut self, other: Sketches) {
        self.host_only += other.host_only;
        for (mine, theirs) in self.halves.iter_mut().zip(&other.halves) {
            for (mine, theirs) in mine.iter_mut().zip(theirs) {
                mine.merge(theirs);
            }
        }
    }

    fn spread(&mut self, clock: Clock) -> f64 {
        let c = usize::from(clock == Clock::Device);
        let [first, second] = &mut self.halves;
        hrx_analysis::compare::spread(&mut first[c], &mut second[c])
    }
}

/// (runtime id, prepared id, region index): where a region's times are folded.
type RegionId = (u32, u64, u32);

/// The report so far.
struct Fold<'o> {
    options: &'o ReplayOptions,
    source: Option<String>,
    report: Option<Report>,
    runtimes: BTreeMap<u32, RuntimeInfo>,
    /// Refused submits the capture saw, per runtime.
    refusals: BTreeMap<u32, usize>,
    /// Every prepared graph of the plans so far: the ranks regions are matched by.
    graphs: BTreeSet<(u32, u64)>,
    /// Each prepared graph's signature: graphs of one signature pool their rows
    /// ([`compare::pools`]).
    signatures: BTreeMap<(u32, u64), hrx_analysis::diff::Signature>,
    /// Each side's region times, folded over chunks, and the regions' labels.
    captured: BTreeMap<RegionId, Sketches>,
    replayed: BTreeMap<RegionId, Sketches>,
    labels: BTreeMap<RegionId, String>,
    substitutions: BTreeMap<(u32, u64, u32), SubstitutionRow>,
    /// What the chunks' comparisons share: the count of each graph's submissions compared
    /// (outputs are keyed by it) and the failures later divergences are classified against
    /// (module `compare`).
    across: compare::AcrossChunks,
    divergences_listed: usize,
    /// Chunks folded in this pass over the file (module docs: a runtime that loses the GPU
    /// for good is replayed in a pass of its own): its first chunk's operation times count.
    pass_chunks: u64,
    /// Outputs written at replay without a captured digest (first repeat), and the
    /// divergences they made: not compared when the trace turns out incomplete, which is
    /// known only at its end.
    extra_outputs: usize,
    extra_divergences: usize,
    /// The first divergence that is not such an output.
    first_not_extra: Option<Divergence>,
    /// The last chunk's rows, grouped once the next chunk (or the end) shows whether their
    /// outputs without a captured digest count; with each row's count of those and whether
    /// it diverged otherwise.
    held: Vec<(SubmissionRow, usize, bool)>,
    /// Per runtime, the ranges whose replayed bytes replay cannot vouch for at the end of
    /// the chunks compared so far (`substitute::exclusions`): taint outlives its chunk.
    taint: BTreeMap<RuntimeId, crate::substitute::Taint>,
}

fn is_extra(d: &Divergence) -> bool {
    matches!(d.kind, DivergenceKind::ExtraOutput { .. })
}

/// Notes a chunk's report carries that the fold writes again with whole-trace counts.
fn per_chunk_note(note: &str) -> bool {
    note.contains("refused submits (Busy or quarantined)")
        || note.contains("without a recorded outcome")
        || note.contains("no captured digest")
}

impl Fold<'_> {
    /// Compares one chunk (its replays' late records already with it, `later`: where it
    /// lies) and folds it in.
    fn chunk(
        &mut self,
        plan: &Plan<'_>,
        runs: BTreeMap<RuntimeId, (Vec<ChunkRun>, Option<String>)>,
        later: &compare::Later<'_>,
        rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
        ticker: &mut Ticker<'_>,
    ) -> Result<(), ReplayError> {
        let mut runtime_runs = Vec::new();
        let mut notes = plan.notes.clone();
        let mut runs = runs;
        for rp in &plan.runtimes {
            let (chunk_runs, replay_fault) = runs.remove(&rp.id).unwrap_or_default();
            let repeats: Vec<_> = chunk_runs.into_iter().map(|r| r.observe(rp)).collect();
            let op_times = if rp.times_ops_isolated(self.options) && self.pass_chunks == 0 {
                crate::execute::time_ops(
                    rp,
                    self.options,
                    self.options.repeat.max(3),
                    ticker,
                    &mut notes,
                )?
            } else if self.options.per_op && self.pass_chunks == 0 {
                crate::execute::op_times_in_graphs(rp, &repeats, &mut notes)
            } else {
                Default::default()
            };
            // Region times into the sketches.
            self.graphs
                .extend(rp.graphs.iter().map(|g| (rp.id.0, g.prepared.0)));
            for g in &rp.graphs {
                (self.signatures)
                    .entry((rp.id.0, g.prepared.0))
                    .or_insert_with(|| rp.signature(g));
            }
            for ((graph, region), samples) in &rp.region_times {
                let key = (rp.id.0, rp.graphs[*graph].prepared.0, *region);
                let entry = self.captured.entry(key).or_default();
                samples.iter().for_each(|s| entry.add(s, 0));
            }
            // The repeats that ran (fewer than asked where memory ran out: `replay_stream`).
            let k = repeats.len().max(1);
            for (repeat, observed) in repeats.iter().enumerate() {
                let half = usize::from(repeat >= k / 2);
                for ((graph, region), samples) in &observed.region_times {
                    let key = (rp.id.0, rp.graphs[*graph].prepared.0, *region);
                    let entry = self.replayed.entry(key).or_default();
                    samples.iter().for_each(|s| entry.add(s, half));
                }
            }
            for (&(graph, region), _) in rp
                .region_times
                .iter()
                .chain(repeats.iter().flat_map(|o| o.region_times.iter()))
            {
                let key = (rp.id.0, rp.graphs[graph].prepared.0, region);
                self.labels
                    .entry(key)
                    .or_insert_with(|| rp.region_label(graph, region, None));
            }
            *self.refusals.entry(rp.id.0).or_default() += rp.refusals;
            runtime_runs.push(RuntimeRuns {
                repeats,
                op_times,
                replay_fault,
            });
        }
        let mut chunk = compare::report(
            plan,
            &runtime_runs,
            self.options,
            self.source.clone(),
            notes,
            &mut self.across,
            Some(later),
        );
        rows(&chunk.submissions, &chunk.outputs);
        self.extra_outputs += chunk
            .outputs
            .iter()
            .filter(|o| matches!(o.result, OutputResult::Extra))
            .count();
        self.extra_divergences += chunk.divergences.iter().filter(|d| is_extra(d)).count();
        if self.first_not_extra.is_none() {
            self.first_not_extra = chunk.divergences.iter().find(|d| !is_extra(d)).cloned();
        }
        let existed = self.report.is_some();
        let report = match &mut self.report {
            Some(report) => report,
            None => {
                let mut first = chunk.clone();
                first.submissions.clear();
                first.outputs.clear();
                first.divergences.clear();
                first.timing_dependent.clear();
                first.substitutions.clear();
                first.summary = Default::default();
                first.notes.clear();
                self.report.insert(first)
            }
        };
        for (row, _, _) in self.held.drain(..) {
            report.submission_groups.push(&row);
        }
        for row in &chunk.submissions {
            let mine = |runtime: u32, submission: u64| {
                runtime == row.runtime && submission == row.submission
            };
            let extra = chunk
                .outputs
                .iter()
                .filter(|o| mine(o.runtime, o.submission) && o.result == OutputResult::Extra)
                .count();
            let other = chunk.divergences.iter().any(|d| {
                mine(d.runtime, d.submission) && !is_extra(d) && d.timing_dependent.is_none()
            });
            self.held.push((row.clone(), extra, other));
        }
        let listed = MAX_LISTED.saturating_sub(report.outputs.len());
        report.outputs.extend(
            chunk
                .outputs
                .drain(..)
                .filter(|o| {
                    !matches!(
                        o.result,
                        OutputResult::Match | OutputResult::WithinTolerance { .. }
                    )
                })
                .take(listed),
        );
        let s = &mut report.summary;
        let c = &chunk.summary;
        s.submissions += c.submissions;
        s.statuses_matched += c.statuses_matched;
        s.outcomes_unknown += c.outcomes_unknown;
        s.outputs_compared += c.outputs_compared;
        s.outputs_matched += c.outputs_matched;
        s.outputs_within_tolerance += c.outputs_within_tolerance;
        s.outputs_excluded += c.outputs_excluded;
        s.outputs_not_captured += c.outputs_not_captured;
        s.divergences += c.divergences;
        s.timing_dependent += c.timing_dependent;
        if report.first_divergence.is_none() {
            report.first_divergence = chunk.first_divergence.take();
        }
        let room = MAX_LISTED.saturating_sub(self.divergences_listed);
        self.divergences_listed += chunk.divergences.len().min(room);
        report
            .divergences
            .extend(chunk.divergences.drain(..).take(room));
        let room = MAX_LISTED.saturating_sub(report.timing_dependent.len());
        report
            .timing_dependent
            .extend(chunk.timing_dependent.drain(..).take(room));
        if report.op_timing.is_empty() {
            report.op_timing = std::mem::take(&mut chunk.op_timing);
        } else if existed && self.pass_chunks == 0 {
            // A later pass's first chunk: its runtimes' rows.
            report.op_timing.append(&mut chunk.op_timing);
        }
        for row in chunk.substitutions {
            let key = (row.runtime, row.graph, row.node);
            match self.substitutions.get_mut(&key) {
                Some(seen) => {
                    seen.substituted += row.substituted;
                    seen.failed += row.failed;
                    seen.unavailable += row.unavailable;
                }
                None => {
                    self.substitutions.insert(key, row);
                }
            }
        }
        for note in chunk.notes {
            if !per_chunk_note(&note) && !report.notes.contains(&note) {
                report.notes.push(note);
            }
        }
        for info in chunk.trace.runtimes {
            match self.runtimes.get_mut(&info.runtime) {
                Some(seen) => {
                    seen.submissions += info.submissions;
                    seen.replayed_submissions += info.replayed_submissions;
                    seen.last_submission = seen.last_submission.max(info.last_submission);
                    seen.buffers = seen.buffers.max(info.buffers);
                    seen.kernels = seen.kernels.max(info.kernels);
                    seen.graphs = seen.graphs.max(info.graphs);
                }
                None => {
                    self.runtimes.insert(info.runtime, info);
                }
            }
        }
        self.pass_chunks += 1;
        Ok(())
    }

    /// The report of the whole trace.
    fn finish(
        mut self,
        chunker_notes: Vec<String>,
        plan_notes: (Vec<String>, bool, hrx_capture::Lost),
        cut: &BTreeMap<RuntimeId, crate::chunk::Cut>,
    ) -> Report {
        let mut report = self.report.take().expect("a first chunk");
        let (notes, complete, lost) = plan_notes;
        report.trace.complete = complete;
        report.trace.records_lost = lost.total;
        report.trace.lossy = lost.lossy;
        report.trace.records_lost_by_kind = lost
            .by_kind()
            .into_iter()
            .map(|(kind, n)| (kind.to_owned(), n))
            .collect();
        for (id, cut) in cut {
            if let Some(info) = self.runtimes.get_mut(&id.0) {
                info.submissions += cut.count as usize;
                info.last_submission = info.last_submission.max(cut.last);
            }
        }
        report.trace.runtimes = std::mem::take(&mut self.runtimes).into_values().collect();
        let mut front = notes;
        front.append(&mut report.notes);
        report.notes = front;
        for (runtime, refusals) in &self.refusals {
            if *refusals > 0 {
                report.notes.push(format!(
                    "runtime {runtime}: the capture saw {refusals} refused submits (Busy or quarantined); replay submits only accepted submissions and waits instead of being refused"
                ));
            }
        }
        let not_captured = !complete && self.extra_divergences + self.extra_outputs > 0;
        for (mut row, extra, other) in self.held.drain(..) {
            if not_captured && extra > 0 {
                row.outputs -= extra;
                row.diverged = other;
            }
            report.submission_groups.push(&row);
        }
        if not_captured {
            self.not_captured(&mut report);
        }
        // Those and the ones chunks planned as incomplete (a trim of an incomplete
        // recording) already counted: one note of the whole trace's count.
        if report.summary.outputs_not_captured > 0 {
            let n = report.summary.outputs_not_captured;
            let lost_digests = report
                .trace
                .records_lost_by_kind
                .contains_key("OutputDigest");
            report
                .notes
                .push(compare::not_captured_note(n, lost_digests));
        }
        let unknown = report.summary.outcomes_unknown;
        if unknown > 0 {
            report.notes.push(format!(
                "{unknown} submission{} without a recorded outcome (the trace ends before {} finished: cut short or crashed): {} not compared",
                if unknown == 1 { "" } else { "s" },
                if unknown == 1 { "it" } else { "they" },
                if unknown == 1 { "its status was" } else { "their statuses were" }
            ));
        }
        report.notes.extend(chunker_notes);
        report.substitutions = self.substitutions.into_values().collect();
        // Captured and replayed times of identical graphs pooled, and paired by the one rule
        // of `diff` and `replay` (`hrx_analysis::matching`), as a whole replay pools them
        // (`compare::report`): each graph's sketches merged half by half.
        let ranks = matching::ranks(self.graphs.iter().copied());
        let pools = Pools::new(std::mem::take(&mut self.signatures));
        let captured = pools.pool(std::mem::take(&mut self.captured), Sketches::merge);
        let replayed = pools.pool(std::mem::take(&mut self.replayed), Sketches::merge);
        let captured = matching::region_keys(&ranks, captured);
        let replayed = matching::region_keys(&ranks, replayed);
        let mut labels = pools.pool(std::mem::take(&mut self.labels), |_, _| {});
        let comparable: BTreeMap<u32, bool> = report
            .trace
            .runtimes
            .iter()
            .map(|rt| (rt.runtime, rt.timings_comparable))
            .collect();
        report.timing = matching::pair(captured, replayed)
            .into_iter()
            .map(|(key, paired)| {
                let ((runtime, graph), c, mut r) = match paired {
                    Paired::Both((id, c), (_, r)) => (id, c, r),
                    Paired::Base((id, c)) => (id, c, Sketches::default()),
                    Paired::New((id, r)) => (id, Sketches::default(), r),
                };
                let region = key.region;
                let device = c.count() > 0 && r.count() > 0 && c.host_only == 0 && r.host_only == 0;
                let clock = if device { Clock::Device } else { Clock::Host };
                let (captured, replayed) = (c.stats(clock), r.stats(clock));
                let judged = compare::judge(
                    captured,
                    replayed,
                    r.spread(clock),
                    self.options,
                    comparable.get(&runtime).copied().unwrap_or(true),
                    clock,
                );
                RegionTimingRow {
                    runtime,
                    graph,
                    graphs: pools.members(runtime, graph),
                    region,
                    label: labels.remove(&(runtime, graph, region)).unwrap_or_default(),
                    clock,
                    captured,
                    replayed,
                    ratio: judged.ratio,
                    interval: judged.interval,
                    spread: judged.spread,
                    too_few: judged.too_few,
                    too_spread: judged.too_spread,
                    regression: judged.slow,
                    not_slow: compare::not_slow(
                        &judged,
                        (captured, replayed),
                        judged.spread,
                        1.0,
                        self.options,
                        clock,
                    ),
                    baseline: None,
                }
            })
            .collect();
        report.summary.too_few = report.timing.iter().filter(|t| t.too_few).count()
            + report.op_timing.iter().filter(|t| t.too_few).count();
        report.summary.too_spread = report.timing.iter().filter(|t| t.too_spread).count()
            + report.op_timing.iter().filter(|t| t.too_spread).count();
        report.summary.slow = report.timing.iter().filter(|t| t.regression).count()
            + report.op_timing.iter().filter(|t| t.regression).count();
        report.verdict = Verdict::of(report.summary.divergences + report.summary.slow, 0);
        report.note_nothing_compared();
        report
    }

    /// In an incomplete trace, an output written at replay without a captured digest is the
    /// trace's loss (its digest record lay past the cut), not the program's: it counts as
    /// not compared (`finish` says how many).
    fn not_captured(&mut self, report: &mut Report) {
        let s = &mut report.summary;
        s.divergences = s.divergences.saturating_sub(self.extra_divergences);
        s.outputs_compared = s.outputs_compared.saturating_sub(self.extra_outputs);
        s.outputs_not_captured += self.extra_outputs;
        report.divergences.retain(|d| !is_extra(d));
        if report.first_divergence.as_ref().is_some_and(is_extra) {
            report.first_divergence = self.first_not_extra.take();
        }
        for o in &mut report.outputs {
            if matches!(o.result, OutputResult::Extra) {
                o.result = OutputResult::NotCaptured;
            }
        }
    }
}

/// Whether `error` is the replay runtime running out of memory (a buffer it could not
/// allocate).
fn out_of_memory(error: &ReplayError) -> bool {
    matches!(
        error,
        ReplayError::Runtime {
            source: hrx::Error::Device(hrx::DeviceError::OutOfMemory(_)),
            ..
        }
    )
}

/// A streamed replay runs its repeats side by side, chunk by chunk (the trace is read once),
/// so each holds its own copy of the buffers its runtime holds (module `execute`'s
/// `objects`): `--repeat 10` of a trace whose live buffers take 2 GB needs 20 GB. Opens the
/// repeats' sessions of `plan`'s runtime; where the device runs out of memory for one after
/// the first, replays with those that opened and says so in
/// `notes` (a gate's statistics then say which rows have too few samples), rather than
/// failing a replay that can run.
///
/// # Errors
/// The first session's failure, and any other than out of memory.
fn open_repeats(
    plan: &crate::plan::RuntimePlan<'_>,
    options: &ReplayOptions,
    fault: Option<hrx::FaultSpec>,
    contents: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Session>, ReplayError> {
    let repeat = plan.runs(options).repeat;
    let mut repeats = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        match Session::open(plan, options, fault.clone(), contents) {
            Ok(session) => repeats.push(session),
            Err(error) if !repeats.is_empty() && out_of_memory(&error) => {
                let ran = repeats.len();
                notes.push(format!(
                    "runtime {} replayed {ran} time{}, not {repeat}: a streamed replay holds \
                     its repeats side by side, each with its own buffers, and replay {} ran out \
                     of memory ({error}); timings are pooled over {ran}",
                    plan.id.0,
                    if ran == 1 { "" } else { "s" },
                    ran + 1,
                ));
                break;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(repeats)
}

/// The warm-up replays of `plan`'s runtime over the first chunk it is in (`place`), run and
/// thrown away, then its repeats' sessions ([`open_repeats`]); `session` is the fault
/// they inject and whether they keep contents.
fn warm_up_and_open(
    plan: &crate::plan::RuntimePlan<'_>,
    options: &ReplayOptions,
    session: (Option<hrx::FaultSpec>, bool),
    place: &ChunkPlace<'_>,
    ticker: &mut Ticker<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<Session>, ReplayError> {
    let (fault, contents) = session;
    for _ in 0..plan.runs(options).warmup {
        let mut warmup = Session::open(plan, options, fault.clone(), contents)?;
        warmup.run_chunk(plan, options, Some(place), ticker)?;
        warmup.finish()?;
    }
    open_repeats(plan, options, fault, contents, notes)
}

/// The sessions of the runtimes opened so far and their runs of the chunks not yet
/// compared.
struct Held<'h> {
    sessions: &'h mut BTreeMap<RuntimeId, Sessions>,
    runs: &'h mut BTreeMap<RuntimeId, Vec<ChunkRun>>,
    pending: Option<&'h mut Pending>,
}

impl Held<'_> {
    /// Runtime `short` ran out of memory for its first session while the runtimes opened
    /// before it hold their repeats side by side: the last repeat of the one with the most
    /// (more than one) is given back, with its runs of the chunks not yet compared, and
    /// `notes` say so (replacing what [`open_repeats`] said of it). False when none has more
    /// than one.
    fn give_back_repeat(
        self,
        short: RuntimeId,
        repeat: usize,
        error: &ReplayError,
        notes: &mut Vec<String>,
    ) -> bool {
        let Some((&id, held)) = self
            .sessions
            .iter_mut()
            .filter(|(_, s)| s.repeats.len() > 1)
            .max_by_key(|(_, s)| s.repeats.len())
        else {
            return false;
        };
        // Dropped: its runtime and buffers go.
        drop(held.repeats.pop());
        if let Some(runs) = self.runs.get_mut(&id) {
            runs.truncate(held.repeats.len());
        }
        if let Some(runs) = self.pending.and_then(|p| p.runs.get_mut(&id)) {
            runs.truncate(held.repeats.len());
        }
        let ran = held.repeats.len();
        let prefix = format!("runtime {} replayed ", id.0);
        notes.retain(|n| !n.starts_with(&prefix));
        notes.push(format!(
            "{prefix}{ran} time{}, not {repeat}: a streamed replay holds every runtime's repeats \
             side by side, each with its own buffers, and runtime {} ran out of memory beside them \
             ({error}); timings are pooled over {ran}",
            if ran == 1 { "" } else { "s" },
            short.0,
        ));
        true
    }
}

/// `error` of a chunk's replay, with a hint where it ran out of memory with `side_by_side`
/// repeats open ([`open_repeats`]): buffers a later chunk creates are allocated once a repeat.
fn side_by_side_hint(mut error: ReplayError, side_by_side: usize) -> ReplayError {
    if side_by_side > 1
        && out_of_memory(&error)
        && let ReplayError::Runtime { context, .. } = &mut error
    {
        context.push_str(&format!(
            " (with {side_by_side} repeats side by side, each holding its own buffers: a lower \
             --repeat needs less)"
        ));
    }
    error
}

/// Per runtime: one replay session per repeat, and the fault they inject.
struct Sessions {
    repeats: Vec<Session>,
    fault: Option<String>,
}

/// The chunk waiting for the next one to run before it is compared.
struct Pending {
    /// Its number (module `chunk`).
    chunk: u64,
    trace: hrx_capture::Trace,
    runs: BTreeMap<RuntimeId, Vec<ChunkRun>>,
}

/// A pass over the file: the runtimes it replays and compares (`None`: every one).
type Pass = Option<BTreeSet<RuntimeId>>;

/// Whether `runtime` is in `pass`.
fn in_pass(pass: &Pass, runtime: RuntimeId) -> bool {
    pass.as_ref().is_none_or(|p| p.contains(&runtime))
}

/// Replays the trace `reader` reads, chunk by chunk; `rows` gets every submission row and
/// output check as its chunk is compared.
///
/// A runtime that loses the GPU for good (`plan::Order`) is replayed after every other: in
/// a second pass over the file, which `reopen` reads again, with the runtimes not replayed
/// in this process (compared with no runs). Without `reopen` (a trace in memory), one pass.
pub(crate) fn replay_stream<R: Read>(
    reader: TraceReader<R>,
    mut reopen: Option<&mut dyn FnMut() -> Result<TraceReader<R>, ReplayError>>,
    index: crate::chunk::ChunkIndex,
    options: &ReplayOptions,
    source: Option<String>,
    rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
) -> Result<Report, ReplayError> {
    let order = index.order(options);
    let passes: Vec<Pass> = match order.last {
        Some(last) if !order.first.is_empty() && reopen.is_some() => vec![
            Some(order.first.iter().copied().collect()),
            Some(
                std::iter::once(last)
                    .chain(order.not_run.iter().copied())
                    .collect(),
            ),
        ],
        _ => vec![None],
    };
    let mut open_notes = order.notes(|id| index.sticky_loss(id, options.until).cloned());
    let mut fold = Fold {
        options,
        source,
        report: None,
        runtimes: BTreeMap::new(),
        refusals: BTreeMap::new(),
        graphs: BTreeSet::new(),
        signatures: BTreeMap::new(),
        captured: BTreeMap::new(),
        replayed: BTreeMap::new(),
        labels: BTreeMap::new(),
        substitutions: BTreeMap::new(),
        across: Default::default(),
        divergences_listed: 0,
        pass_chunks: 0,
        extra_outputs: 0,
        extra_divergences: 0,
        first_not_extra: None,
        held: Vec::new(),
        taint: BTreeMap::new(),
    };
    let mut ticker = Ticker {
        done: 0,
        total: 0,
        callback: options.progress.as_deref(),
    };
    let mut clocks = crate::clocks::ClockWatch::default();
    let read_error = |e: hrx_capture::ReadError| ReplayError::Measurement {
        why: format!("reading the trace: {e}"),
    };
    let (mut reader, mut index) = (Some(reader), Some(index));
    let (mut late, mut blob_bytes_peak) = (0, 0);
    let mut chunker = None;
    // The most chunks a pass folded: how many the file was replayed in.
    let mut chunks = 0;
    for (n, pass) in passes.iter().enumerate() {
        let reader = match (reader.take(), reopen.as_mut()) {
            (Some(reader), _) => reader,
            (None, Some(reopen)) => reopen()?,
            (None, None) => unreachable!("a second pass only with a file to read again"),
        };
        let index = match n + 1 == passes.len() {
            true => index.take().expect("the last pass takes the index"),
            false => index.clone().expect("kept for the last pass"),
        };
        let chunker = chunker.insert(Chunker::new(reader, index, options.until));
        let mut sessions: BTreeMap<RuntimeId, Sessions> = BTreeMap::new();
        let mut pending: Option<Pending> = None;
        fold.pass_chunks = 0;
        while let Some(trace) = chunker.next_chunk().map_err(read_error)? {
            let first = chunker.chunks() == 1;
            let mut plan = match plan::plan_of(
                &trace,
                None,
                cut_short(chunker.index()),
                chunker.index().host_load_per_cpu(),
            ) {
                Ok(plan) => plan,
                // A chunk of late records only, or, in a file cut short, of records of
                // submissions whose `Submit` it lacks: said as a whole replay says them.
                Err(ReplayError::NoSubmissions { .. }) if !first => {
                    if cut_short(chunker.index()) {
                        let mut orphans: BTreeMap<RuntimeId, BTreeSet<_>> = BTreeMap::new();
                        for r in &trace.records {
                            if let (Some(runtime), Some(s)) =
                                (r.runtime(), crate::chunk::submission_of(r))
                            {
                                orphans.entry(runtime).or_default().insert(s);
                            }
                        }
                        for (runtime, orphans) in orphans {
                            open_notes.extend(plan::orphans_note(runtime, &orphans));
                        }
                    }
                    continue;
                }
                // A chunk is read whole even where the file is not: the file's state says
                // whether the recording may have stopped before its first submission (a
                // fresh-user pass: a cut trace read like one that never submitted).
                // Every submission of the first chunk cut: `until` keeps none.
                Err(ReplayError::NoSubmissions { .. })
                    if let Some(until) = options.until
                        && let Some(first) = (chunker.cut.values()).map(|c| c.first).min() =>
                {
                    return Err(ReplayError::UntilKeepsNothing { until, first });
                }
                Err(ReplayError::NoSubmissions { runtimes, .. }) if cut_short(chunker.index()) => {
                    let index = chunker.index();
                    return Err(ReplayError::NoSubmissions {
                        runtimes,
                        incomplete: crate::plan::incompleteness(
                            &index.reading().recovery,
                            index.trimmed_incomplete(),
                        ),
                    });
                }
                Err(error) => return Err(error),
            };
            if plan.runtimes.is_empty() {
                return Err(ReplayError::unreplayable(
                    "the trace records no runtime (no RuntimeStart): nothing to replay",
                ));
            }
            // This pass's runtimes only; a chunk of none of them is the other pass's.
            plan.runtimes.retain(|rp| in_pass(pass, rp.id));
            if plan.runtimes.is_empty() {
                continue;
            }
            digest_as_captured(&mut plan, chunker.index(), options.until);
            let mut runs = BTreeMap::new();
            for rp in &plan.runtimes {
                // Compared with no runs: said by the order's note.
                if !order.replays(rp.id) {
                    continue;
                }
                let crate::plan::Runs { warmup, repeat } = rp.runs(options);
                ticker.total += (rp.submissions.len() * repeat) as u64;
                if !sessions.contains_key(&rp.id) {
                    let fault = crate::replay_fault(options, rp, &mut open_notes)?;
                    open_notes.extend(rp.single_run_note(options));
                    let contents = rp.keeps_contents(options);
                    let producer_until = |s| chunker.index().producer_until(rp.id, s);
                    let place = ChunkPlace {
                        chunk: chunker.handed_out().unwrap_or_default(),
                        producer_until: &producer_until,
                    };
                    ticker.total += (rp.submissions.len() * warmup) as u64;
                    let repeats = loop {
                        let opened = warm_up_and_open(
                            rp,
                            options,
                            (fault.clone(), contents),
                            &place,
                            &mut ticker,
                            &mut open_notes,
                        );
                        match opened {
                            // The runtimes opened before hold the memory with their repeats
                            // side by side: one of theirs is given back, and this one tried
                            // again (it failed: "cannot replay" where --repeat 1 ran).
                            Err(error) if out_of_memory(&error) => {
                                let held = Held {
                                    sessions: &mut sessions,
                                    runs: &mut runs,
                                    pending: pending.as_mut(),
                                };
                                if !held.give_back_repeat(rp.id, repeat, &error, &mut open_notes) {
                                    return Err(error);
                                }
                            }
                            opened => break opened?,
                        }
                    };
                    sessions.insert(
                        rp.id,
                        Sessions {
                            repeats,
                            fault: fault.map(|f| f.to_string()),
                        },
                    );
                }
                let entry = sessions.get_mut(&rp.id).expect("opened above");
                let producer_until = |s| chunker.index().producer_until(rp.id, s);
                let place = ChunkPlace {
                    chunk: chunker.handed_out().unwrap_or_default(),
                    producer_until: &producer_until,
                };
                // Before the first timed repeat (the first chunk's warm-ups done): the GPU's clocks.
                if let Some(runtime) = entry.repeats.first().and_then(Session::runtime) {
                    clocks.before(runtime);
                }
                let mut chunk_runs = Vec::with_capacity(repeat);
                let side_by_side = entry.repeats.len();
                for session in &mut entry.repeats {
                    let run = session.run_chunk(rp, options, Some(&place), &mut ticker);
                    chunk_runs.push(run.map_err(|e| side_by_side_hint(e, side_by_side))?);
                }
                runs.insert(rp.id, chunk_runs);
            }
            drop(plan);
            if let Some(mut before) = pending.take() {
                for (id, later) in &mut runs {
                    if let Some(earlier) = before.runs.get_mut(id) {
                        for (e, l) in earlier.iter_mut().zip(later.iter_mut()) {
                            e.take_late(l);
                        }
                    }
                }
                compare_pending(
                    &mut fold,
                    before,
                    &sessions,
                    chunker.index(),
                    pass,
                    rows,
                    &mut ticker,
                )?;
            }
            let chunk = chunker.handed_out().unwrap_or_default();
            pending = Some(Pending { chunk, trace, runs });
        }
        // Right after the last timed repeat, before the runtimes end.
        clocks.after();
        // The replays end: what they wrote last goes with the last chunk.
        let mut last_records: BTreeMap<RuntimeId, Vec<Vec<hrx_capture::schema::Record>>> =
            BTreeMap::new();
        let faults: BTreeMap<RuntimeId, Option<String>> = sessions
            .iter()
            .map(|(id, s)| (*id, s.fault.clone()))
            .collect();
        for (id, s) in sessions {
            let mut ends = Vec::new();
            for session in s.repeats {
                ends.push(session.finish()?);
            }
            last_records.insert(id, ends);
        }
        let Some(mut last) = pending.take() else {
            // A pass whose runtimes submitted nothing, where another pass compared some.
            if passes.len() > 1 && (fold.report.is_some() || n == 0) {
                continue;
            }
            return Err(ReplayError::unreplayable(
                "the trace records no runtime (no RuntimeStart): nothing to replay",
            ));
        };
        for (id, ends) in last_records {
            if let Some(runs) = last.runs.get_mut(&id) {
                for (run, end) in runs.iter_mut().zip(ends) {
                    run.extend(end);
                }
            }
        }
        compare_last(
            &mut fold,
            last,
            &faults,
            chunker.index(),
            pass,
            rows,
            &mut ticker,
        )?;
        chunks = fold.pass_chunks.max(chunks);
        late += chunker.late;
        blob_bytes_peak = blob_bytes_peak.max(chunker.blob_bytes_peak);
    }
    let chunker = chunker.expect("one pass at least");
    if fold.report.is_none() {
        return Err(ReplayError::unreplayable(
            "the trace records no runtime (no RuntimeStart): nothing to replay",
        ));
    }
    ticker.finish();
    let recovery = *chunker.recovery();
    let (notes, mut complete) = plan::recovery_notes(&recovery);
    // A trim of an incomplete recording: each chunk's plan noted it.
    complete &= !chunker.index().trimmed_incomplete();
    let mut chunker_notes = open_notes;
    chunker_notes.extend(plan::ends_notes(&chunker.index().reading().warnings));
    if late > 0 {
        chunker_notes.push(format!(
            "{late} records came after their submission's chunk was replayed (the trace grew while it was replayed) and were not compared",
        ));
    }
    if blob_bytes_peak > crate::chunk::BLOB_NOTE_BYTES {
        chunker_notes.push(format!(
            "replay held up to {} of captured contents at once (each kept until the last chunk that refers to it)",
            hrx_analysis::units::bytes(blob_bytes_peak as u64)
        ));
    }
    let size = chunker.index().size();
    if size < options.chunk_submissions && chunks > 1 {
        // Why: the contents a chunk brings in, or the timings it holds.
        let timings = options.chunk_timings_per_repeat();
        let repeats = match options.repeat {
            0 | 1 => String::new(),
            n => format!(" ({} over {n} repeats)", options.chunk_timings),
        };
        let why = if size == 1 && chunker.index().timings_past(timings) {
            format!(
                "one submission holds more than {timings} region and operation timings{repeats}"
            )
        } else {
            format!(
                "a chunk of that many would have held more than {} of captured contents or \
                 {timings} region and operation timings{repeats}",
                hrx_analysis::units::bytes(options.chunk_blob_bytes),
            )
        };
        chunker_notes.push(format!(
            "replayed in chunks of {}, not {}: {why}",
            hrx_analysis::units::plural(size, "submission"),
            options.chunk_submissions,
        ));
    }
    if chunks > 1 && options.per_op {
        chunker_notes.push(format!(
            "per-operation timing compares the capture's operation times of the first chunk's \
             submissions only (chunks of up to {}: the trace was replayed in chunks)",
            hrx_analysis::units::plural(size, "submission")
        ));
    }
    let mut report = fold.finish(
        chunker_notes,
        (notes, complete, recovery.lost),
        &chunker.cut,
    );
    report.replay.gpu_clocks = clocks.finish();
    Ok(report)
}

fn compare_pending(
    fold: &mut Fold<'_>,
    pending: Pending,
    sessions: &BTreeMap<RuntimeId, Sessions>,
    index: &ChunkIndex,
    pass: &Pass,
    rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
    ticker: &mut Ticker<'_>,
) -> Result<(), ReplayError> {
    let faults = sessions
        .iter()
        .map(|(id, s)| (*id, s.fault.clone()))
        .collect();
    compare_last(fold, pending, &faults, index, pass, rows, ticker)
}

/// Each runtime of a chunk's `plan` digests what its capture digested in the whole file
/// ([`ChunkIndex::digests_all`]), not only in this chunk: the replay runtime is opened on the
/// first chunk, and a later chunk's GPU-local ranges are compared where the capture digested
/// any.
fn digest_as_captured(plan: &mut Plan<'_>, index: &ChunkIndex, until: Option<u64>) {
    for rp in &mut plan.runtimes {
        // Known from the whole file before its first chunk runs: how often it may be run.
        rp.sticky_loss = index.sticky_loss(rp.id, until).cloned();
        if !rp.digests_all && index.digests_all(rp.id) {
            rp.digests_all = true;
            let note = crate::plan::host_observable_note(rp.id);
            plan.notes.retain(|n| *n != note);
        }
    }
}

/// Whether the file the chunks come from is incomplete or lost records, as its first pass
/// read it (each chunk is read whole: `plan::plan_of`).
fn cut_short(index: &ChunkIndex) -> bool {
    let recovery = &index.reading().recovery;
    !recovery.is_complete() || !recovery.lost.is_none() || index.trimmed_incomplete()
}

fn compare_last(
    fold: &mut Fold<'_>,
    pending: Pending,
    faults: &BTreeMap<RuntimeId, Option<String>>,
    index: &ChunkIndex,
    pass: &Pass,
    rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
    ticker: &mut Ticker<'_>,
) -> Result<(), ReplayError> {
    let mut plan = plan::plan_of(
        &pending.trace,
        None,
        cut_short(index),
        index.host_load_per_cpu(),
    )?;
    plan.runtimes.retain(|rp| in_pass(pass, rp.id));
    digest_as_captured(&mut plan, index, fold.options.until);
    // The plan marked what its own chunk taints; again with what earlier chunks left.
    for rp in &mut plan.runtimes {
        let carried = fold.taint.remove(&rp.id).unwrap_or_default();
        let left = crate::substitute::exclusions(rp, carried);
        fold.taint.insert(rp.id, left);
    }
    let mut runs = BTreeMap::new();
    for (id, chunk_runs) in pending.runs {
        runs.insert(id, (chunk_runs, faults.get(&id).cloned().flatten()));
    }
    let named_until = |runtime, s| index.named_until(runtime, s);
    let later = compare::Later {
        chunk: pending.chunk,
        named_until: &named_until,
    };
    fold.chunk(&plan, runs, &later, rows, ticker)
}
