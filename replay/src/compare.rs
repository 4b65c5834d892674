//! Stage 3: compare what the replay observed with what the capture recorded.
//!
//! - **Statuses**: each submission's outcome (ok, failed, cancelled) in every repeat, and
//!   whether its graph was quarantined. Error texts are shown, not compared (they carry
//!   process-specific ids).
//! - **Outputs**: keyed as `diff` keys them (`hrx_analysis::diff::OutputKey`: runtime rank,
//!   prepared graph rank, the submission's index among its graph's submissions, the first
//!   operation and use of the graph writing exactly the range (`Place::of`), and the
//!   range), so a replay report and a `diff` of the capture and the replay's trace name an
//!   output alike (a streamed replay counts a graph's submissions across chunks). The
//!   digests of a key are compared by the one rule `diff` uses too
//!   (`hrx_analysis::compare`): several digests of one key (a range written by several
//!   regions) match when they agree in order or as a multiset (digests of concurrently
//!   finishing regions may interleave in the file). An output's region, shown beside it,
//!   is the region holding its operation. Where a submission's
//!   status diverged, outputs present on one side only are `NotRun`, not extra divergences.
//!   With a tolerance and captured contents, a differing range is compared as
//!   little-endian `f32`s.
//! - **Timing**: per region of the prepared graphs that compute the same thing (one graph,
//!   or the identical frame contexts of a pipeline pooled: `hrx_analysis::matching::Pools`
//!   by the graphs' signatures, as `diff` pairs graphs), the captured durations of every
//!   pooled graph against the replay's over all repeats; operations (`per_op`) by pool and
//!   node alike. Device clock where every sample on both sides has device timestamps,
//!   host clock otherwise. Regions are paired by the one matching rule of `diff` and
//!   `replay` (`hrx_analysis::matching`: runtime and prepared graph by rank, a pool by its
//!   first graph's, then region) and judged by its one timing rule
//!   (`hrx_analysis::compare::timing`).
//! - **Verdict**: `hrx_analysis::compare::Verdict::of` the divergences and slow regions
//!   (a replay has no one-sided items: it re-executes the captured submissions).

pub(crate) use crate::concurrent::Later;
use crate::concurrent::{ChunkSide, Earlier, Loss, Order, PoisonEvent};
use crate::execute::{Observed, ReplayOutput};
use crate::options::ReplayOptions;
use crate::plan::{Event, GraphPlan, Output, Plan, RuntimePlan, Sample};
use crate::report::Outcome;
use crate::report::{
    Clock, Divergence, DivergenceKind, Durations, OpTimingRow, OutputCheck, OutputResult,
    RegionTimingRow, ReplayInfo, Report, RuntimeInfo, SubmissionRow, SubstitutionRow, Summary,
    TraceInfo, Verdict,
};
use crate::substitute::Substitute;
use hrx_analysis::diff::{OutputKey, Place};
use hrx_analysis::matching::{self, Paired, Pools};
use hrx_capture::schema::{Access, BufferId, OpKind, RuntimeId};
use std::collections::{BTreeMap, HashMap};

/// Everything replay observed of one captured runtime (none: not replayed, `plan::Order`).
#[derive(Default)]
pub(crate) struct RuntimeRuns {
    pub repeats: Vec<Observed>,
    pub op_times: HashMap<(usize, u32), Vec<Sample>>,
    pub replay_fault: Option<String>,
}

struct Compared {
    result: OutputResult,
    divergence: Option<DivergenceKind>,
}

/// One side's samples of one pooled row (graphs that compute the same thing,
/// [`matching::Pools`]): a graph's index in the plan (the first of the pool with samples),
/// and each pooled graph's samples, over repeats in repeat order.
type PooledSamples<'a> = (usize, Vec<Vec<&'a Sample>>);

/// Region times of one side pooled over identical graphs and keyed by the regions' matching
/// rule (`hrx_analysis::matching`), each with its pool's first graph's ids; samples of one
/// graph's region over repeats together.
fn region_times<'a>(
    rp: &RuntimePlan<'_>,
    pools: &Pools<u32, u64>,
    graph_ranks: &HashMap<(u32, u64), (u32, u64)>,
    times: impl Iterator<Item = (&'a (usize, u32), &'a Vec<Sample>)>,
) -> BTreeMap<matching::RegionKey, ((u32, u64), PooledSamples<'a>)> {
    let mut by_id: BTreeMap<(u32, u64, u32), (usize, Vec<&'a Sample>)> = BTreeMap::new();
    for (&(graph, region), samples) in times {
        let key = (rp.id.0, rp.graphs[graph].prepared.0, region);
        by_id
            .entry(key)
            .or_insert((graph, Vec::new()))
            .1
            .extend(samples);
    }
    let pooled = pools.pool(
        by_id.into_iter().map(|(k, (g, s))| (k, (g, vec![s]))),
        |a, b| a.1.extend(b.1),
    );
    matching::region_keys(graph_ranks, pooled)
}

/// The pools of `rp`'s prepared graphs: graphs of one signature ([`RuntimePlan::signature`])
/// are one timing row.
pub(crate) fn pools(rp: &RuntimePlan<'_>) -> Pools<u32, u64> {
    Pools::new((rp.graphs.iter()).map(|g| ((rp.id.0, g.prepared.0), rp.signature(g))))
}

/// Compares the digest sequences of one key with the one rule of `diff` and `replay`
/// (`hrx_analysis::compare::digests`); `status_diverged`: the submission did not run as
/// captured, so one-sided digests are not divergences.
fn compare_key(
    expected: &[&Output<'_>],
    replayed: &[&ReplayOutput],
    tolerance: Option<f64>,
    status_diverged: bool,
) -> Compared {
    use hrx_analysis::compare::{Digest, DigestMatch, digests};
    let base: Vec<Digest<'_>> = expected
        .iter()
        .map(|o| Digest {
            xxh3: o.xxh3,
            contents: o.contents,
        })
        .collect();
    let new: Vec<Digest<'_>> = replayed
        .iter()
        .map(|o| Digest {
            xxh3: o.xxh3,
            contents: o.contents.as_deref(),
        })
        .collect();
    let (result, divergence) = match digests(&base, &new, tolerance, status_diverged) {
        DigestMatch::Match => (OutputResult::Match, None),
        DigestMatch::WithinTolerance { max_abs_diff } => {
            (OutputResult::WithinTolerance { max_abs_diff }, None)
        }
        DigestMatch::Differs {
            base,
            new,
            max_abs_diff,
        } => (
            OutputResult::Differs,
            Some(DivergenceKind::Output {
                expected: base,
                replayed: new,
                max_abs_diff,
            }),
        ),
        DigestMatch::Missing { base } => (
            OutputResult::Missing,
            Some(DivergenceKind::MissingOutput { expected: base }),
        ),
        DigestMatch::Extra { new } => (
            OutputResult::Extra,
            Some(DivergenceKind::ExtraOutput { replayed: new }),
        ),
        DigestMatch::NotRun => (OutputResult::NotRun, None),
    };
    Compared { result, divergence }
}

/// A writing use of a graph: (node, use index, buffer, start, end).
type Write = (u32, u32, u64, u64, u64);

/// The writing uses of `graph`: what [`Place::of`] places an output by.
fn writes(graph: &GraphPlan) -> Vec<Write> {
    let mut out = Vec::new();
    for (node, op) in graph.ops.iter().enumerate() {
        for (i, u) in op.uses.iter().enumerate() {
            if u.access != Access::Read {
                out.push((node as u32, i as u32, u.buffer.0, u.start, u.end));
            }
        }
    }
    out
}

/// Pools samples into a distribution on the chosen clock.
fn stats(samples: &[&Sample], clock: Clock) -> Option<Durations> {
    Durations::of(values(samples, clock))
}

fn clock_of(captured: &[&Sample], replayed: &[&Sample]) -> Clock {
    let device = |s: &[&Sample]| !s.is_empty() && s.iter().all(|s| s.device_ns.is_some());
    if device(captured) && device(replayed) {
        Clock::Device
    } else {
        Clock::Host
    }
}

/// The replayed median over the captured one, its confidence interval, and whether it is
/// slow: the one timing rule of `diff` and `replay` (`hrx_analysis::compare::timing`), past
/// `spread`, the replay's own (`hrx_analysis::compare::spread`), and past the floor of the
/// row's `clock` ([`ReplayOptions::floor`]); nothing when the times are not `comparable`
/// (captured on another backend).
pub(crate) fn judge(
    captured: Option<Durations>,
    replayed: Option<Durations>,
    spread: f64,
    options: &ReplayOptions,
    comparable: bool,
    clock: Clock,
) -> hrx_analysis::compare::TimingMatch {
    let rule = hrx_analysis::compare::Slowdown {
        max_ratio: options.max_slowdown,
        floor_ns: options.floor(clock).as_nanos() as u64,
    };
    hrx_analysis::compare::timing(
        captured.as_ref().map(Into::into),
        replayed.as_ref().map(Into::into),
        &rule,
        comparable,
        spread,
    )
}

/// Why a row [`judge`]d not slow is not, though its interval lies wholly past
/// `--max-slowdown` ([`NotSlow::of`]): `run_to_run` the replay's own change, `between_runs`
/// a baseline row's floor (1 against the capture).
pub(crate) fn not_slow(
    judged: &hrx_analysis::compare::TimingMatch,
    (base, new): (Option<Durations>, Option<Durations>),
    run_to_run: f64,
    between_runs: f64,
    options: &ReplayOptions,
    clock: Clock,
) -> Option<crate::report::NotSlow> {
    if judged.slow || judged.too_few || judged.too_spread {
        return None;
    }
    let grew = new?.median_ns.saturating_sub(base?.median_ns);
    crate::report::NotSlow::of(
        options.max_slowdown,
        judged.interval,
        // As the judgement took it: 1 where not measured.
        if run_to_run.is_finite() {
            run_to_run.max(1.0)
        } else {
            1.0
        },
        between_runs,
        grew,
        options.floor(clock).as_nanos() as u64,
    )
}

/// Samples on `clock`.
fn values<'a>(samples: &'a [&Sample], clock: Clock) -> impl Iterator<Item = u64> + 'a {
    samples.iter().map(move |s| match clock {
        Clock::Device => s.device_ns.unwrap_or(s.host_ns),
        Clock::Host => s.host_ns,
    })
}

/// The spread of pooled samples, each graph's taken over the replay's `repeats` in order,
/// each repeat giving as many: those of its first `repeats / 2` repeats against the rest,
/// the halves of every pooled graph together (`hrx_analysis::compare::spread`; a streamed
/// replay splits its repeats alike).
fn spread_of(members: &[Vec<&Sample>], clock: Clock, repeats: usize) -> f64 {
    let repeats = repeats.max(1);
    let mut halves = [
        hrx_analysis::sketch::Sketch::new(),
        hrx_analysis::sketch::Sketch::new(),
    ];
    for samples in members {
        let (first, second) = samples.split_at(samples.len() * (repeats / 2) / repeats);
        values(first, clock).for_each(|v| halves[0].add(v));
        values(second, clock).for_each(|v| halves[1].add(v));
    }
    let [first, second] = &mut halves;
    hrx_analysis::compare::spread(first, second)
}

/// The name of a backend choice, as `--backend` takes it.
pub(crate) fn backend_name(choice: hrx::BackendChoice) -> &'static str {
    match choice {
        hrx::BackendChoice::Auto => "auto",
        hrx::BackendChoice::Sim => "sim",
        hrx::BackendChoice::Cuda => "cuda",
        hrx::BackendChoice::Hip => "hip",
    }
}

/// What the comparisons of a streamed replay's chunks share (a whole replay is one chunk).
#[derive(Default)]
pub(crate) struct AcrossChunks {
    /// Submissions compared so far per (runtime id, prepared id): the next one's index among
    /// its graph's submissions, which outputs are keyed by.
    pub nth: HashMap<(u32, u64), u64>,
    /// Per runtime, the failures of the chunks compared so far that a later chunk's
    /// divergences are classified against (module `concurrent`).
    pub earlier: BTreeMap<RuntimeId, Earlier>,
}

/// Builds the report; `across` holds what earlier chunks of a streamed replay found, and
/// takes this chunk's (`later`: where it lies; a whole replay passes a fresh `across` and
/// `None`).
pub(crate) fn report(
    plan: &Plan<'_>,
    runs: &[RuntimeRuns],
    options: &ReplayOptions,
    source: Option<String>,
    mut notes: Vec<String>,
    across: &mut AcrossChunks,
    later: Option<&Later<'_>>,
) -> Report {
    let several = plan.runtimes.len() > 1;
    // The repeats that ran: fewer than asked where a streamed replay ran out of memory
    // holding them side by side (`stream`).
    let repeats_run = runs
        .iter()
        .map(|r| r.repeats.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut summary = Summary::default();
    let mut submissions = Vec::new();
    let mut outputs = Vec::new();
    let mut divergences: Vec<Divergence> = Vec::new();
    // (The list is deduplicated over repeats at the end.)
    let mut timing = Vec::new();
    let mut op_timing = Vec::new();
    let mut substitutions = Vec::new();
    let mut runtimes = Vec::new();
    let (mut backend, mut device) = (String::new(), String::new());

    // Every prepared graph of the plan ranked: the regions' matching rule.
    let graph_ranks = matching::ranks(
        plan.runtimes
            .iter()
            .flat_map(|rp| rp.graphs.iter().map(move |g| (rp.id.0, g.prepared.0))),
    );
    let runtime_ranks = matching::runtime_ranks(plan.runtimes.iter().map(|rp| rp.id.0));
    for (rp, run) in plan.runtimes.iter().zip(runs) {
        let runtime = rp.id.0;
        let runtime_rank = runtime_ranks[&runtime];
        let writes: Vec<Vec<Write>> = rp.graphs.iter().map(writes).collect();
        // Outputs placed by their writer's name and rank, as `diff` places them.
        let op_ids: Vec<Vec<(u64, u32)>> = rp
            .graphs
            .iter()
            .map(|g| Place::op_ids(g.ops.iter().map(|op| rp.diff_op_name(op))))
            .collect();
        if let Some(first) = run.repeats.first() {
            backend.clone_from(&first.backend);
            device.clone_from(&first.device);
        }
        let replay_backend = run
            .repeats
            .first()
            .map_or_else(String::new, |r| r.backend.clone());
        let comparable = hrx_analysis::compare::timings_comparable(&rp.backend, &replay_backend);
        runtimes.push(RuntimeInfo {
            runtime,
            backend: rp.backend.clone(),
            device: rp.device.clone(),
            replay_backend,
            timings_comparable: comparable,
            buffers: rp.buffers.len(),
            kernels: rp.kernels.len(),
            graphs: rp.graphs.len(),
            submissions: rp.captured_submissions(),
            // None where it was not replayed in this process (`plan::Order`).
            replayed_submissions: if run.repeats.is_empty() {
                0
            } else {
                rp.submissions.len()
            },
            last_submission: rp.last_captured.map_or(0, |s| s.0),
            captured_fault: rp.fault.clone(),
            replay_fault: run.replay_fault.clone(),
        });
        for observed in &run.repeats {
            for note in &observed.notes {
                if !notes.contains(note) {
                    notes.push(note.clone());
                }
            }
        }
        let divergence = |submission: u64,
                          region: Option<u32>,
                          range: Option<(BufferId, u64, u64)>,
                          repeat: usize,
                          kind: DivergenceKind| {
            let graph = rp
                .submission_index
                .get(&hrx_capture::schema::SubmissionIndex(submission))
                .map(|&p| rp.submissions[p].graph);
            Divergence {
                runtime,
                submission,
                region,
                region_label: region
                    .zip(graph)
                    .map(|(region, graph)| rp.region_label(graph, region, range)),
                node: None,
                use_index: None,
                timing_dependent: None,
                buffer: range.map(|r| r.0.0),
                range: range.map(|r| (r.1, r.2)),
                repeat,
                repeats: 1,
                kind,
                show_runtime: several,
                of_repeats: repeats_run,
            }
        };

        // Host writes that failed at replay, attributed to the submission they preceded.
        for (repeat, observed) in run.repeats.iter().enumerate() {
            for (write, error) in &observed.host_write_errors {
                let next = rp
                    .timeline
                    .iter()
                    .skip_while(|e| **e != Event::HostWrite(*write))
                    .find_map(|e| match e {
                        Event::Submit(p) => Some(rp.submissions[*p].index.0),
                        Event::HostWrite(_) | Event::Release(_) => None,
                    })
                    .unwrap_or_else(|| rp.submissions.last().map_or(0, |s| s.index.0 + 1));
                let w = &rp.host_writes[*write];
                let mut d = divergence(
                    next,
                    None,
                    None,
                    repeat,
                    DivergenceKind::HostWrite {
                        error: error.clone(),
                    },
                );
                d.buffer = Some(w.buffer.0);
                d.range = Some((w.offset as u64, (w.offset + w.bytes.len()) as u64));
                divergences.push(d);
            }
        }

        // Device losses of each side, and the submissions whose divergence in a repeat is
        // timing-dependent (their consequences are too).
        let captured_losses: Vec<_> = rp
            .submissions
            .iter()
            .filter_map(|s| {
                let (outcome, error) = s.status.as_ref()?;
                (*outcome == Outcome::Failed)
                    .then(|| crate::concurrent::Loss::of(s.index, error, s.failure))
                    .flatten()
            })
            .collect();
        let replay_losses: Vec<Vec<_>> = run
            .repeats
            .iter()
            .map(|observed| {
                let mut losses: Vec<_> = observed
                    .statuses
                    .iter()
                    .filter(|(_, (outcome, _))| *outcome == Outcome::Failed)
                    .filter_map(|(&index, (_, error))| {
                        let failure = crate::concurrent::Failure {
                            region: *observed.failed_region.get(&index)?,
                            time_ns: *observed.failed_at.get(&index)?,
                        };
                        crate::concurrent::Loss::of(index, error, Some(failure))
                    })
                    .collect();
                losses.sort_by_key(|l| (l.time_ns, l.submission));
                losses
            })
            .collect();
        // With earlier chunks' poisons and losses (a streamed replay: module `concurrent`).
        let earlier = across.earlier.remove(&rp.id).unwrap_or_default();
        let order = Order {
            rp,
            earlier: &earlier,
        };
        let captured_poisons: Vec<PoisonEvent> = (earlier.captured().poisons.iter())
            .chain(&rp.poisons)
            .copied()
            .collect();
        let captured_losses_so_far: Vec<Loss> = (earlier.captured().losses.iter())
            .chain(&captured_losses)
            .copied()
            .collect();
        let replay_poisons_so_far: Vec<Vec<PoisonEvent>> = (run.repeats.iter().enumerate())
            .map(|(r, o)| {
                let before = &earlier.replayed(r).poisons;
                before.iter().chain(&o.poisons).copied().collect()
            })
            .collect();
        let replay_losses_so_far: Vec<Vec<Loss>> = (replay_losses.iter().enumerate())
            .map(|(r, losses)| {
                let before = &earlier.replayed(r).losses;
                before.iter().chain(losses).copied().collect()
            })
            .collect();
        let mut timing_dependent: std::collections::HashSet<(
            usize,
            hrx_capture::schema::SubmissionIndex,
        )> = Default::default();
        for submission in &rp.submissions {
            let index = submission.index;
            let graph = &rp.graphs[submission.graph];
            let mut row = SubmissionRow {
                runtime,
                submission: index.0,
                graph: graph.prepared.0,
                captured: submission.status.as_ref().map(|s| s.0),
                captured_error: submission
                    .status
                    .as_ref()
                    .map(|s| s.1.clone())
                    .unwrap_or_default(),
                replayed: None,
                replayed_error: String::new(),
                outputs: 0,
                matched: 0,
                excluded: 0,
                diverged: false,
                timing_dependent: false,
            };
            let before = divergences.len();
            let mut statuses_match = true;
            let captured_failed_region = submission
                .region_status
                .iter()
                .find(|(_, s)| matches!(s, hrx_capture::schema::Status::Failed { .. }))
                .map(|(r, _)| *r);
            // Outputs keyed as `diff` keys them (module docs).
            let nth = {
                let n = across.nth.entry((runtime, graph.prepared.0)).or_default();
                *n += 1;
                *n - 1
            };
            let key_of = |buffer: BufferId, start: u64, end: u64| -> OutputKey {
                let (_, graph_rank) = graph_ranks[&(runtime, graph.prepared.0)];
                let place = Place::of(&writes[submission.graph], buffer.0, start, end)
                    .by_op(|node| op_ids[submission.graph].get(node as usize).copied());
                (runtime_rank, graph_rank, nth, place, start, end)
            };
            let mut expected: BTreeMap<OutputKey, Vec<&Output<'_>>> = BTreeMap::new();
            for o in &submission.outputs {
                expected
                    .entry(key_of(o.buffer, o.start, o.end))
                    .or_default()
                    .push(o);
            }
            for (repeat, observed) in run.repeats.iter().enumerate() {
                let replayed_status = observed.statuses.get(&index);
                if repeat == 0 {
                    row.replayed = replayed_status.map(|s| s.0);
                    row.replayed_error = match (replayed_status, observed.refused.get(&index)) {
                        (Some(s), _) => s.1.clone(),
                        (None, Some(refusal)) => refusal.clone(),
                        (None, None) => String::new(),
                    };
                }
                let mut status_diverged = false;
                if let Some(refusal) = observed.refused.get(&index) {
                    status_diverged = true;
                    divergences.push(divergence(
                        index.0,
                        None,
                        None,
                        repeat,
                        DivergenceKind::Refused {
                            error: refusal.clone(),
                        },
                    ));
                } else if let (Some((expected_outcome, expected_error)), Some((got, got_error))) =
                    (&submission.status, replayed_status)
                {
                    if hrx_analysis::compare::outcomes(Some(expected_outcome), Some(got))
                        == hrx_analysis::compare::OutcomeMatch::Changed
                    {
                        status_diverged = true;
                        let region = observed
                            .failed_region
                            .get(&index)
                            .copied()
                            .or(captured_failed_region);
                        divergences.push(divergence(
                            index.0,
                            region,
                            None,
                            repeat,
                            DivergenceKind::Status {
                                expected: *expected_outcome,
                                expected_error: expected_error.clone(),
                                replayed: *got,
                                replayed_error: got_error.clone(),
                            },
                        ));
                    } else if submission.quarantined != observed.quarantined.contains(&index) {
                        divergences.push(divergence(
                            index.0,
                            observed
                                .failed_region
                                .get(&index)
                                .copied()
                                .or(captured_failed_region),
                            None,
                            repeat,
                            DivergenceKind::Quarantine {
                                expected: submission.quarantined,
                                replayed: observed.quarantined.contains(&index),
                            },
                        ));
                    }
                }
                statuses_match &= !status_diverged;

                let mut got: BTreeMap<OutputKey, Vec<&ReplayOutput>> = BTreeMap::new();
                for o in observed.outputs.get(&index).into_iter().flatten() {
                    got.entry(key_of(o.buffer, o.start, o.end))
                        .or_default()
                        .push(o);
                }
                let mut keys: Vec<OutputKey> = expected.keys().chain(got.keys()).copied().collect();
                keys.sort_unstable();
                keys.dedup();
                for key in keys {
                    let e = expected.get(&key).map_or(&[][..], Vec::as_slice);
                    let g = got.get(&key).map_or(&[][..], Vec::as_slice);
                    let (.., place, start, end) = key;
                    let buffer = e.first().map_or_else(|| g[0].buffer, |o| o.buffer);
                    let writers = graph.writers(buffer, start, end);
                    let region = match place {
                        Place::Use(node, _) | Place::Op { node, .. } => graph.region_of_node(node),
                        Place::Buffer(_) => None,
                    }
                    .or(writers.first().copied());
                    let at = match place {
                        Place::Use(node, use_index)
                        | Place::Op {
                            node,
                            use_: use_index,
                            ..
                        } => Some((node, use_index)),
                        Place::Buffer(_) => None,
                    };
                    let check = |result: OutputResult| OutputCheck {
                        runtime,
                        submission: index.0,
                        region,
                        node: at.map(|a| a.0),
                        use_index: at.map(|a| a.1),
                        nth,
                        buffer: buffer.0,
                        start,
                        end,
                        expected: e.first().map(|o| o.xxh3),
                        replayed: g.first().map(|o| o.xxh3),
                        result,
                        key,
                    };
                    // Excluded where a region writing the range has it excluded.
                    let excluded = if writers.is_empty() {
                        submission.exclusion(None, buffer, start, end)
                    } else {
                        writers
                            .iter()
                            .chain(&region)
                            .find_map(|&r| submission.exclusion(Some(r), buffer, start, end))
                    };
                    if let Some(why) = excluded {
                        if repeat == 0 {
                            summary.outputs_excluded += 1;
                            row.excluded += 1;
                            outputs.push(check(OutputResult::Excluded {
                                why: why.to_string(),
                            }));
                        }
                        continue;
                    }
                    // Without a captured status (a truncated trace) one-sided outputs are
                    // not evidence either.
                    let lenient = status_diverged || submission.status.is_none();
                    let mut compared = compare_key(e, g, options.tolerance, lenient);
                    // An incomplete trace may have lost the digest with its end: not evidence.
                    if !plan.complete && matches!(compared.result, OutputResult::Extra) {
                        compared = Compared {
                            result: OutputResult::NotCaptured,
                            divergence: None,
                        };
                    }
                    if let Some(kind) = compared.divergence {
                        let mut d =
                            divergence(index.0, region, Some((buffer, start, end)), repeat, kind);
                        d.node = at.map(|a| a.0);
                        d.use_index = at.map(|a| a.1);
                        divergences.push(d);
                    }
                    if repeat == 0 {
                        if !matches!(
                            compared.result,
                            OutputResult::NotRun | OutputResult::NotCaptured
                        ) {
                            summary.outputs_compared += 1;
                            row.outputs += 1;
                        }
                        match compared.result {
                            OutputResult::NotCaptured => summary.outputs_not_captured += 1,
                            OutputResult::Match => {
                                summary.outputs_matched += 1;
                                row.matched += 1;
                            }
                            OutputResult::WithinTolerance { .. } => {
                                summary.outputs_within_tolerance += 1;
                                row.matched += 1;
                            }
                            _ => {}
                        }
                        outputs.push(check(compared.result));
                    }
                }
            }
            // A status or refusal that differs because a concurrent failure came earlier or
            // later on one side is timing-dependent, not a regression (module `concurrent`).
            let quarantined_in_capture = |s: hrx_capture::schema::SubmissionIndex| {
                rp.submission_index
                    .get(&s)
                    .is_some_and(|&p| rp.submissions[p].quarantined)
            };
            let captured = crate::concurrent::Side {
                name: "captured",
                outcome: submission.status.as_ref().map(|s| s.0),
                error: submission.status.as_ref().map_or("", |s| s.1.as_str()),
                failure: submission.failure,
                poisons: &captured_poisons,
                losses: &captured_losses_so_far,
                quarantined_by: &quarantined_in_capture,
                quarantines_before: &earlier.captured().quarantines,
            };
            for d in &mut divergences[before..] {
                let refused = matches!(d.kind, DivergenceKind::Refused { .. });
                if !refused && !matches!(d.kind, DivergenceKind::Status { .. }) {
                    continue;
                }
                let repeat = d.repeat;
                let observed = &run.repeats[repeat];
                let status = observed.statuses.get(&index);
                let quarantined_in_replay = |s| observed.quarantined.contains(&s);
                let replayed = crate::concurrent::Side {
                    name: "replayed",
                    outcome: if refused { None } else { status.map(|s| s.0) },
                    error: match (refused, &d.kind) {
                        (true, DivergenceKind::Refused { error }) => error.as_str(),
                        _ => status.map_or("", |s| s.1.as_str()),
                    },
                    failure: observed
                        .failed_region
                        .get(&index)
                        .zip(observed.failed_at.get(&index))
                        .map(|(&region, &time_ns)| crate::concurrent::Failure { region, time_ns }),
                    poisons: &replay_poisons_so_far[repeat],
                    losses: &replay_losses_so_far[repeat],
                    quarantined_by: &quarantined_in_replay,
                    quarantines_before: &earlier.replayed(repeat).quarantines,
                };
                let timing_so_far =
                    |s| timing_dependent.contains(&(repeat, s)) || earlier.timing(repeat, s);
                d.timing_dependent = crate::concurrent::classify(
                    &order,
                    submission,
                    [&captured, &replayed],
                    &timing_so_far,
                );
                if d.timing_dependent.is_some() {
                    timing_dependent.insert((repeat, index));
                }
            }
            summary.submissions += 1;
            if submission.status.is_none() {
                summary.outcomes_unknown += 1;
            } else if statuses_match {
                summary.statuses_matched += 1;
            }
            let mine = |d: &&Divergence| d.runtime == runtime && d.submission == index.0;
            row.diverged = divergences[before..]
                .iter()
                .chain(divergences.iter().filter(mine))
                .any(|d| d.timing_dependent.is_none());
            row.timing_dependent = !row.diverged
                && divergences[before..]
                    .iter()
                    .any(|d| d.timing_dependent.is_some());
            submissions.push(row);
        }

        // This chunk's failures, handed on to the next chunks.
        let mut earlier = earlier;
        let captured_side = ChunkSide {
            poisons: &rp.poisons,
            losses: &captured_losses,
            quarantined: (rp.submissions.iter())
                .filter(|s| s.quarantined)
                .map(|s| s.index)
                .collect(),
        };
        let repeat_sides = run.repeats.iter().enumerate().map(|(r, observed)| {
            let side = ChunkSide {
                poisons: &observed.poisons,
                losses: &replay_losses[r],
                quarantined: observed.quarantined.iter().copied().collect(),
            };
            let timing = (timing_dependent.iter())
                .filter(|(repeat, _)| *repeat == r)
                .map(|(_, s)| *s)
                .collect();
            (side, timing)
        });
        earlier.take_chunk(rp, captured_side, repeat_sides, later);
        across.earlier.insert(rp.id, earlier);

        // Region timing: captured and replayed times of identical graphs pooled, and paired
        // by the one rule of `diff` and `replay` (`hrx_analysis::matching`); the replay ran
        // the captured plan's graphs, so both sides are ranked among the plan's prepared
        // graphs and pooled alike.
        let pools = pools(rp);
        let captured = region_times(rp, &pools, &graph_ranks, rp.region_times.iter());
        let replayed = region_times(
            rp,
            &pools,
            &graph_ranks,
            run.repeats.iter().flat_map(|o| o.region_times.iter()),
        );
        for (key, paired) in matching::pair(captured, replayed) {
            let ((_, first), (graph, captured), (_, replayed)) = match paired {
                Paired::Both((id, c), (_, r)) => (id, c, r),
                Paired::Base((id, c)) => (id, c, (0, Vec::new())),
                Paired::New((id, r)) => (id, (r.0, Vec::new()), r),
            };
            let region = key.region;
            let (all_captured, all_replayed) = (captured.concat(), replayed.concat());
            let clock = clock_of(&all_captured, &all_replayed);
            let (c, r) = (stats(&all_captured, clock), stats(&all_replayed, clock));
            let judged = judge(
                c,
                r,
                spread_of(&replayed, clock, run.repeats.len()),
                options,
                comparable,
                clock,
            );
            timing.push(RegionTimingRow {
                runtime,
                graph: first,
                graphs: pools.members(runtime, first),
                region,
                label: rp.region_label(graph, region, None),
                clock,
                captured: c,
                replayed: r,
                ratio: judged.ratio,
                interval: judged.interval,
                spread: judged.spread,
                too_few: judged.too_few,
                too_spread: judged.too_spread,
                regression: judged.slow,
                not_slow: not_slow(&judged, (c, r), judged.spread, 1.0, options, clock),
                baseline: None,
            });
        }

        // Per-operation timing, pooled over identical graphs as regions are: each graph's
        // captured and replayed samples of the operation at `node`.
        type OpSamples<'a> = (usize, Vec<Vec<&'a Sample>>, Vec<Vec<&'a Sample>>);
        let ops = run.op_times.iter().map(|(&(graph, node), replayed)| {
            let captured = rp.op_times.get(&(graph, node)).into_iter().flatten();
            let key = (runtime, rp.graphs[graph].prepared.0, node);
            let samples: OpSamples<'_> = (
                graph,
                vec![captured.collect()],
                vec![replayed.iter().collect()],
            );
            (key, samples)
        });
        let ops = pools.pool(ops, |a, b| {
            a.1.extend(b.1);
            a.2.extend(b.2);
        });
        for ((_, first, node), (graph, captured, replayed)) in ops {
            let g = &rp.graphs[graph];
            let region = g.region_of_node(node).unwrap_or_default() as usize;
            let (captured, all_replayed) = (captured.concat(), replayed.concat());
            // An operation launched on its own is timed by its region, host or device alike.
            let clock = clock_of(&captured, &all_replayed);
            let (c, r) = (stats(&captured, clock), stats(&all_replayed, clock));
            let judged = judge(
                c,
                r,
                spread_of(&replayed, clock, run.repeats.len()),
                options,
                comparable,
                clock,
            );
            op_timing.push(OpTimingRow {
                runtime,
                graph: first,
                graphs: pools.members(runtime, first),
                node,
                region: region as u32,
                label: op_label(rp, g, node, region),
                clock,
                captured: c,
                replayed: r,
                ratio: judged.ratio,
                interval: judged.interval,
                spread: judged.spread,
                too_few: judged.too_few,
                too_spread: judged.too_spread,
                regression: judged.slow,
                not_slow: not_slow(&judged, (c, r), judged.spread, 1.0, options, clock),
                baseline: None,
            });
        }

        substitutions.extend(substitution_rows(rp));
    }

    divergences.sort_by_key(Divergence::key);
    // One entry per divergence, counting the repeats that showed it.
    let mut unique: Vec<Divergence> = Vec::with_capacity(divergences.len());
    for d in divergences {
        match unique.iter_mut().rev().find(|u| u.same_as(&d)) {
            Some(seen) => seen.repeats += 1,
            None => unique.push(d),
        }
    }
    let (timing_dependent, divergences): (Vec<Divergence>, Vec<Divergence>) = unique
        .into_iter()
        .partition(|d| d.timing_dependent.is_some());
    summary.divergences = divergences.len();
    summary.timing_dependent = timing_dependent.len();
    summary.too_few = timing.iter().filter(|t| t.too_few).count()
        + op_timing.iter().filter(|t| t.too_few).count();
    summary.too_spread = timing.iter().filter(|t| t.too_spread).count()
        + op_timing.iter().filter(|t| t.too_spread).count();
    summary.slow = timing.iter().filter(|t| t.regression).count()
        + op_timing.iter().filter(|t| t.regression).count();
    if options.tolerance.is_some()
        && !plan
            .runtimes
            .iter()
            .flat_map(|rp| &rp.submissions)
            .flat_map(|s| &s.outputs)
            .any(|o| o.contents.is_some())
    {
        notes.push(
            "a tolerance was given but the trace has no output contents (record with trace contents, HRX_TRACE_CONTENTS=1): digests were compared exactly"
                .into(),
        );
    }
    if options.per_op
        && !options.isolated
        && backend == "cuda"
        && plan
            .runtimes
            .iter()
            .any(crate::execute::times_more_than_kernels)
    {
        notes.push(
            "--per-op on CUDA times operations with CUPTI's kernel activity during the \
             replays, since the capture timed every operation (with kernel times, or on the \
             software device), which slows launches: their region times carry that cost \
             (--isolated times operations without it)"
                .into(),
        );
    }
    if summary.outcomes_unknown > 0 {
        notes.push(format!(
            "{} without a recorded outcome (the trace ends before {} finished: cut short or \
             crashed): {} not compared",
            plural_submissions(summary.outcomes_unknown),
            if summary.outcomes_unknown == 1 {
                "it"
            } else {
                "they"
            },
            if summary.outcomes_unknown == 1 {
                "its status was"
            } else {
                "their statuses were"
            }
        ));
    }
    if summary.outputs_not_captured > 0 {
        let lost_digests = plan
            .lost
            .by_kind()
            .iter()
            .any(|(k, _)| *k == "OutputDigest");
        notes.push(not_captured_note(
            summary.outputs_not_captured,
            lost_digests,
        ));
    }
    let verdict = Verdict::of(divergences.len() + summary.slow, 0);
    let mut report = Report {
        schema_version: hrx_analysis::JSON_SCHEMA_VERSION,
        verdict,
        trace: TraceInfo {
            source,
            format_version: plan.format_version.clone(),
            recorded: plan.recorded.clone(),
            complete: plan.complete,
            records_lost: plan.lost.total,
            lossy: plan.lost.lossy,
            range_unknown_bytes: plan.runtimes.iter().map(|r| r.range_unknown_bytes).sum(),
            records_lost_by_kind: plan
                .lost
                .by_kind()
                .into_iter()
                .map(|(kind, n)| (kind.to_owned(), n))
                .collect(),
            runtimes,
            host_load_per_cpu: plan.host_load_per_cpu,
        },
        replay: ReplayInfo {
            backend,
            requested: backend_name(options.backend).to_owned(),
            device,
            repeat: repeats_run,
            per_op: options.per_op,
            isolated: options.per_op && options.isolated,
            tolerance: options.tolerance,
            max_slowdown: options.max_slowdown,
            timing_floor_ns: options.timing_floor.as_nanos() as u64,
            device_timing_floor_ns: options.device_timing_floor.as_nanos() as u64,
            until: options.until,
            // The warm-ups run: none for a runtime whose capture lost its GPU for good
            // (`RuntimePlan::runs`, said in the notes).
            warmup: (plan.runtimes.iter())
                .map(|rp| rp.runs(options).warmup)
                .min()
                .unwrap_or(options.warmup),
            pace_captured: options.pace_captured,
            host: Default::default(),
            slowdowns: options
                .slowdowns
                .iter()
                .map(|(entry, percent)| crate::report::InjectedSlowdown {
                    entry: entry.clone(),
                    percent: *percent,
                })
                .collect(),
            gpu_clocks: None,
        },
        summary,
        submissions,
        submission_groups: Default::default(),
        outputs,
        first_divergence: divergences.first().cloned(),
        divergences,
        timing_dependent,
        timing,
        op_timing,
        substitutions,
        notes,
        nothing_compared: None,
    };
    report.note_nothing_compared();
    report
}

fn substitution_rows(rp: &RuntimePlan<'_>) -> Vec<SubstitutionRow> {
    rp.substitutions
        .iter()
        .map(|sub| {
            let count = |f: fn(&Substitute<'_>) -> bool| {
                sub.per_submission.iter().filter(|(_, e)| f(e)).count()
            };
            SubstitutionRow {
                runtime: rp.id.0,
                graph: rp.graphs[sub.graph].prepared.0,
                node: sub.node as u32,
                region: sub.region,
                kind: match rp.graphs[sub.graph].ops[sub.node].op {
                    OpKind::Host => "host callback".into(),
                    _ => "scoped callback".into(),
                },
                writes: sub.writes,
                substituted: count(|e| matches!(e, Substitute::Write(_))),
                failed: count(|e| matches!(e, Substitute::Fail { .. })),
                unavailable: count(|e| matches!(e, Substitute::Unavailable)),
                why: sub.unavailable_why.clone(),
            }
        })
        .collect()
}

fn plural_submissions(n: usize) -> String {
    if n == 1 {
        "1 submission".to_owned()
    } else {
        format!("{n} submissions")
    }
}

/// The note of outputs written at replay whose captured digest the trace lacks: lost by
/// the recorder where it lost `OutputDigest` records (`lost_digests`; a cleanly closed
/// trace read "the incomplete trace lost it with its end": a break-it pass), else with an
/// incomplete trace's end.
pub(crate) fn not_captured_note(n: usize, lost_digests: bool) -> String {
    let (it, they) = if n == 1 {
        ("it", "it was")
    } else {
        ("them", "they were")
    };
    let how = if lost_digests {
        format!("the recorder lost {it} while recording")
    } else {
        format!("the incomplete trace lost {it} with its end")
    };
    format!(
        "{n} output{} written at replay {} no captured digest: {how}, so {they} not compared",
        if n == 1 { "" } else { "s" },
        if n == 1 { "has" } else { "have" },
    )
}

/// The name `replay --per-op` lists operation `node` of graph `g` under, its region the
/// `region`-th: as `stats` and `diff` list it ([`hrx_analysis::listed_op_name`]: a copy by
/// its lane, `upload`, `download` or `copy`).
fn op_label(rp: &RuntimePlan<'_>, g: &GraphPlan, node: u32, region: usize) -> String {
    let op = &g.ops[node as usize];
    match g.regions.get(region) {
        Some(r) => hrx_analysis::listed_op_name(&op.op, r.queue, || rp.op_name(op)),
        None => rp.op_name(op),
    }
}

#[cfg(test)]
mod tests;
