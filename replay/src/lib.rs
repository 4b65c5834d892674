//! Re-execution of captured hrx pipelines and comparison with the capture (DESIGN.md
//! section 5).
//!
//! ```no_run
//! use hrx_replay::{ReplayOptions, replay_file};
//! let report = replay_file("frames.hrxt", &ReplayOptions::default().repeat(5).max_slowdown(1.5))?;
//! print!("{}", report.to_text());
//! std::process::exit(report.exit_code());
//! # Ok::<(), hrx_replay::ReplayError>(())
//! ```
//!
//! # Stages
//!
//! 1. **Plan** (module `plan`): the trace is untrusted; it is parsed into buffers, kernels,
//!    prepared graphs (operations in build order plus the captured regions), a timeline of
//!    host writes, submits and buffer releases, and per submission the expected status,
//!    quarantine and output digests. Every inconsistency is a [`ReplayError`] (exit code
//!    2), never a panic.
//! 2. **Execute** (module `execute`): each captured runtime is replayed in its own fresh
//!    [`hrx::Runtime`] (same graph slots and capacity; the captured fault injection on the
//!    software device), `repeat` times, holding the buffers the program held: each made
//!    where the timeline first needs it, let go where the program let go of it. The replay runtime records into its own in-memory
//!    trace, so its region timings and output digests come back in the capture's schema.
//!    The host's load is read before and after the replay, and the GPU's clocks (on CUDA)
//!    right before the first timed repeat and right after the last (module `clocks`), for
//!    the report to say what the times ran under ([`ReplayInfo`]).
//! 3. **Compare** (module `compare`): statuses, output digests keyed as `hrx-trace diff`
//!    keys them (`hrx_analysis::diff::OutputKey`), and region times; the result is a [`Report`] with a [`Verdict`] and
//!    [`Report::exit_code`]: 0 all match, 1 a regression. A status that differs because a
//!    concurrent failure's poison or device loss came before a submission on one side and
//!    after it on the other, or that follows from such a divergence (a quarantine refusal,
//!    a cancelled consumer), is reported apart as timing-dependent
//!    ([`Report::timing_dependent`], module `concurrent`), with its reason, and is not a
//!    regression.
//!
//! A trace file ([`replay_file`], [`replay_file_streaming`]) is streamed (module `stream`):
//! read in chunks of [`ReplayOptions::chunk_submissions`] (module `chunk`), each planned,
//! replayed on replay runtimes kept across chunks, and compared as above, the results folded
//! into one report; memory grows with the program's objects, not its submissions, and its
//! device memory with the buffers the program held at once.
//! [`replay`] of a trace in memory runs the stages once over the whole trace.
//!
//! # How captured ids map to new objects
//!
//! Ids in a trace are the capturing process's (process-wide counters), so nothing is
//! looked up by id in the replay runtime. Buffers, kernels and prepared graphs are
//! kept in vectors parallel to the plan's (a buffer or graph made when the timeline needs
//! it, let go when the program let go of it); each captured id maps to its index there. Going back, the replay's own trace is read with tables from
//! the new objects' ids (`Buffer::id`, `ExecutableGraph::id`, `Completion::submission`) to
//! the captured ids, so every comparison is in captured ids: the report names captured
//! submissions, graphs and buffers.
//!
//! # What cannot be replayed
//!
//! - **Scoped native callbacks and host operations** run application code that is not in
//!   the trace. Replay keeps them in the graph (so it lowers into the same regions) as a
//!   callback that writes the captured contents of the written bindings (taken from the
//!   region's output digests, recorded with trace contents), or fails as the captured
//!   callback failed. Without contents, or for a scoped callback writing GPU-local memory
//!   (a callback has no device write at hand), the operation is a no-op and its written
//!   ranges, and every later output reading them, are excluded from comparison, visibly
//!   (`OutputResult::Excluded`, [`SubstitutionRow`]). Operations writing nothing replay as
//!   no-ops.
//! - **Refused submits** (Busy, quarantined) are not replayed; replay waits instead of
//!   being refused, so only accepted submissions are compared.
//! - **Host reads and waits** are not in the trace; the runtime's own conflict checks order
//!   replayed host writes after the work they conflict with (a `Busy` answer makes replay
//!   wait for the oldest submission in flight and retry).
//! - **Kernel code**: built-in kernels are rebuilt from their entry name on any backend; a
//!   kernel that is not built in needs its captured code (PTX on CUDA), else the replay
//!   stops with [`ReplayError::KernelMissing`].
//! - **Fault injection** exists on the software device only: a captured fault is not
//!   replayed on CUDA or HIP (the report says so, and the captured failures then diverge).
//! - Several runtimes in one trace are replayed one after the other, each in its own
//!   replay runtime; `until` numbers submissions per runtime, as the whole recording does.
//!   A runtime whose capture lost its GPU to a sticky error, replayed on a GPU, runs after
//!   every other (a streamed replay reads the file again for it), and of several such only
//!   the first runs: after its loss the device cannot be used again in the process
//!   (`plan::Order`).
#![warn(missing_docs)]

mod baseline;
mod chunk;
mod clocks;
mod compare;
mod concurrent;
mod error;
mod execute;
mod group;
mod joins;
mod options;
mod plan;
mod report;
mod stream;
mod substitute;

pub use baseline::{BASELINE_VERSION, Baseline, BaselineMatch, BaselineRow, Direct, Replacer};
pub use error::ReplayError;
pub use group::{Grouper, MAX_GROUPS, SubmissionGroup};
pub use options::{DEFAULT_CHUNK_SUBMISSIONS, Progress, ReplayOptions};
pub use report::{
    CLOCKS_DIFFER, Clock, ClockReading, Divergence, DivergenceKind, Durations, GpuClocksAround,
    HostLoad, InjectedSlowdown, NotSlow, OpTimingRow, Outcome, OutputCheck, OutputResult,
    RegionTimingRow, ReplayInfo, Report, RuntimeInfo, SubmissionRow, SubstitutionRow, Summary,
    TraceInfo, Verdict, format_ns,
};
pub use stream::MAX_LISTED;

use hrx::BackendChoice;
use hrx_capture::Trace;
use hrx_capture::schema::OpKind;
use plan::Runs;
use std::path::Path;

/// Replays `trace` and compares the replay with it.
///
/// # Errors
/// [`ReplayError::Unreplayable`] for an inconsistent trace or missing data;
/// [`ReplayError::NoSubmissions`] when the trace holds no submission to compare;
/// [`ReplayError::KernelMissing`] when a kernel has no code for the backend;
/// [`ReplayError::Runtime`] when the backend cannot be opened or an object cannot be
/// created (out of memory, ...); [`ReplayError::Measurement`] when the replay's own trace
/// fails.
pub fn replay(trace: &Trace, options: &ReplayOptions) -> Result<Report, ReplayError> {
    let host = HostLoad::before();
    let mut report = run(trace, options, None)?;
    report.replay.host = host.ended();
    Ok(report)
}

/// Reads the trace at `path`, replays it and compares, streamed as
/// [`replay_file_streaming`] does, with every submission row and output check collected
/// into the report (memory then grows with the submissions: a tool replaying large traces
/// uses [`replay_file_streaming`]). Divergences are listed up to [`MAX_LISTED`] and counted
/// in full.
///
/// # Errors
/// [`ReplayError::Read`] when the file cannot be read (a newer format major version
/// included); otherwise as [`replay`].
pub fn replay_file(path: impl AsRef<Path>, options: &ReplayOptions) -> Result<Report, ReplayError> {
    let mut submissions = Vec::new();
    let mut outputs = Vec::new();
    let mut report = replay_file_streaming(path, options, &mut |rows, checks| {
        submissions.extend_from_slice(rows);
        outputs.extend_from_slice(checks);
    })?;
    // Chunks hold every runtime's submissions of one span of numbers: in the order of a
    // whole replay, runtime by runtime.
    submissions.sort_by_key(|r| (r.runtime, r.submission));
    outputs.sort_by_key(|o| (o.runtime, o.submission));
    if report.summary.outputs_not_captured > 0 {
        // Rows went out before the end showed the trace incomplete (module `stream`); those
        // a chunk already planned as incomplete (a trim of an incomplete recording) went out
        // as not captured, and their rows never counted them.
        let mut converted: std::collections::HashMap<(u32, u64), usize> = Default::default();
        for o in &mut outputs {
            if o.result == OutputResult::Extra {
                o.result = OutputResult::NotCaptured;
                *converted.entry((o.runtime, o.submission)).or_default() += 1;
            }
        }
        for row in &mut submissions {
            let not_captured = converted
                .get(&(row.runtime, row.submission))
                .copied()
                .unwrap_or(0);
            if not_captured > 0 {
                row.outputs -= not_captured;
                row.diverged = report.divergences.iter().any(|d| {
                    d.runtime == row.runtime
                        && d.submission == row.submission
                        && d.timing_dependent.is_none()
                });
            }
        }
    }
    report.submissions = submissions;
    report.outputs = outputs;
    Ok(report)
}

/// Reads the trace at `path` in chunks of [`ReplayOptions::chunk_submissions`], replays and
/// compares each (module `stream`): memory grows with the program's buffers, kernels and
/// graphs, not with its submissions. `rows` gets every submission row and output check as
/// its chunk is compared; the report returned lists none of them
/// ([`Report::submissions`] and [`Report::outputs`] are empty but for outputs that did not
/// match, at most [`stream::MAX_LISTED`]), but groups the rows for the text
/// ([`Report::submission_groups`]) and counts everything in [`Report::summary`].
///
/// # Errors
/// As [`replay_file`].
pub fn replay_file_streaming(
    path: impl AsRef<Path>,
    options: &ReplayOptions,
    rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
) -> Result<Report, ReplayError> {
    replay_file_reading(path, options, rows).map(|(report, _)| report)
}

/// Record kinds a replay cannot do without: the objects, the submissions and host writes it
/// re-executes (a lost one shifts every later output), and kinds the reader does not know.
const NEEDED_KINDS: [&str; 11] = [
    "RuntimeStart",
    "BufferCreated",
    "Blob",
    "KernelLoaded",
    "GraphOp",
    "Prepared",
    "Submit",
    "HostWrite",
    "BufferSnapshot",
    "TraceRange",
    "unknown",
];

/// What reading a trace file found, as every reading verb reports it: the reader's
/// warnings and how the file ends ([`hrx_capture::Recovery`], the records the recorder
/// lost included). Read by a first pass over the whole file, before anything is replayed.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// The reader's warnings (damaged or skipped blocks, missing submissions, ...).
    pub warnings: Vec<hrx_capture::Warning>,
    /// How much of the file was read, and the records lost while recording.
    pub recovery: hrx_capture::Recovery,
}

/// [`replay_file_streaming`], also returning what reading the file found ([`Reading`]), so
/// that a tool warns about a damaged or lossy trace as it does for every other reading.
///
/// # Errors
/// As [`replay_file`]; a trace whose recorder lost records (lossy mode) and that cannot be
/// replayed for it is [`ReplayError::RecordsLost`], which says the losses first.
pub fn replay_file_reading(
    path: impl AsRef<Path>,
    options: &ReplayOptions,
    rows: &mut dyn FnMut(&[SubmissionRow], &[OutputCheck]),
) -> Result<(Report, Reading), ReplayError> {
    let path = path.as_ref();
    let read = |source| ReplayError::Read {
        path: path.to_owned(),
        source,
    };
    // A first pass locates each chunk's last record (module `chunk`) and learns how the
    // file ends, losses included, before anything is replayed.
    let open = || {
        hrx_capture::TraceReader::open(path)
            .map(hrx_capture::TraceReader::check_submission_numbers)
            .map_err(read)
    };
    let mut index = chunk::index(open()?, options.chunk_submissions);
    // Chunks that would bring in more captured contents than allowed (distinct large
    // frames), or hold more timings (a graph of many regions), are made smaller, located
    // by another first pass, sized by the heaviest chunk: where they come unevenly,
    // checked again.
    for _ in 0..3 {
        let timings = options.chunk_timings_per_repeat();
        let Some(size) = index.size_within(options.chunk_blob_bytes, timings) else {
            break;
        };
        index = chunk::index(open()?, size);
    }
    let reading = index.reading().clone();
    let lost = reading.recovery.lost;
    // Records replay re-executes (or needs to) that the recorder lost: refused before
    // anything is replayed, rather than where the first gap shows, minutes in.
    // A trim's losses are its source's, counted over the whole recording: its own submissions
    // are checked by their numbers (`refuse_gaps` below: one lost inside its range is a gap),
    // so lost `Submit`s alone do not refuse it (a break-it pass: a 10-submission trim that
    // held all ten was refused for the source's 64,125 lost Submits).
    let trim = reading.recovery.source_incomplete;
    let needed: Vec<String> = lost
        .by_kind()
        .into_iter()
        .filter(|(kind, _)| NEEDED_KINDS.contains(kind) && !(trim && *kind == "Submit"))
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    if !needed.is_empty() {
        return Err(ReplayError::RecordsLost {
            lossy: lost.lossy,
            lost: lost.to_string(),
            why: format!(
                "it re-executes every submission and host write, with the objects they name, \
                 and the trace lacks {} of them",
                needed.join(", ")
            ),
        });
    }
    // Submissions missing between held ones: refused before anything is replayed.
    plan::refuse_gaps(&reading.recovery)?;
    // A tolerance compares captured bytes; without any, it would silently compare digests.
    if options.tolerance.is_some() && !index.has_output_contents() {
        return Err(ReplayError::ToleranceWithoutContents);
    }
    options.check_slowdowns(index.gpu_entries())?;
    let reader = hrx_capture::TraceReader::open(path).map_err(read)?;
    let host = HostLoad::before();
    // A runtime that loses the GPU for good is replayed in a second pass (`plan::Order`).
    let mut reopen = || open();
    let report = stream::replay_stream(
        reader.check_submission_numbers(),
        Some(&mut reopen),
        index,
        options,
        Some(path.display().to_string()),
        rows,
    );
    match report {
        Ok(mut report) => {
            report.replay.host = host.ended();
            Ok((report, reading))
        }
        // So is it why a blob is missing, or what a damaged or cut-short file lacks.
        Err(error @ ReplayError::BlobMissing { .. }) if !lost.is_none() => {
            Err(error.blob_context(format!("cannot be exact: {lost} while recording")))
        }
        Err(error @ ReplayError::BlobMissing { .. }) if !reading.recovery.is_complete() => {
            Err(error.blob_context(format!(
                "the trace is incomplete ({})",
                error::incomplete_how(&reading.recovery)
            )))
        }
        // What the recorder lost is why the trace does not hold together: say that first.
        Err(ReplayError::Unreplayable { why }) if !lost.is_none() => {
            Err(ReplayError::RecordsLost {
                lost: lost.to_string(),
                why,
                lossy: lost.lossy,
            })
        }
        // Likewise what a damaged or cut-short file lacks (a block with a `Submit` lost
        // while a later one names its submission).
        Err(ReplayError::Unreplayable { why }) if !reading.recovery.is_complete() => {
            Err(ReplayError::incomplete(&reading.recovery, why))
        }
        Err(error) => Err(error),
    }
}

/// The fault a replay of `rp` injects: the option's, else the captured one on the software
/// device (when [`ReplayOptions::captured_fault`]); `notes` says what was replaced or left
/// out.
pub(crate) fn replay_fault(
    options: &ReplayOptions,
    rp: &plan::RuntimePlan<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<hrx::FaultSpec>, ReplayError> {
    Ok(match (&options.fault, &rp.fault) {
        (Some(fault), captured) => {
            if let Some(captured) = captured
                && *captured != fault.to_string()
            {
                notes.push(format!(
                    "runtime {}: the captured fault {captured} is replaced by {fault}",
                    rp.id
                ));
            }
            Some(fault.clone())
        }
        (None, Some(captured)) if options.captured_fault => {
            if matches!(options.backend, BackendChoice::Cuda | BackendChoice::Hip) {
                notes.push(format!(
                    "runtime {}: the captured fault {captured} is not injected: fault injection exists on the software device only",
                    rp.id
                ));
                None
            } else {
                // `op=N` and `kernel#N` count from the recorded run's start, which a range or
                // trim from a later submission lacks: its `TraceRange` says the count from
                // its own start (format 1.13), or that the fault fired before it.
                let captured = match &rp.range_fault {
                    Some((
                        _,
                        hrx_capture::schema::RangeFault {
                            from_start: Some(spec),
                            ..
                        },
                    )) => spec,
                    Some((start, fault)) => {
                        let fired = match fault.fired_in {
                            Some(s) => format!("fired in submission {s}"),
                            None => "fired".into(),
                        };
                        notes.push(format!(
                            "runtime {}: the captured fault {captured} {fired} before this \
                             trace's range (from submission {start}): nothing injected",
                            rp.id
                        ));
                        return Ok(None);
                    }
                    None => {
                        if let Some(start) = rp.range_start.filter(|s| s.0 > 1) {
                            // A range or trim written before format 1.13.
                            notes.push(format!(
                                "runtime {}: the captured fault {captured} counts operations \
                                 from the start of the recorded run, and this trace starts at \
                                 submission {start} (a range or a trim): injected counting from \
                                 there, it may fail another operation than the capture's",
                                rp.id
                            ));
                        }
                        captured
                    }
                };
                Some(captured.parse().map_err(|e| {
                    ReplayError::unreplayable(format!(
                        "runtime {}: the captured fault {captured:?} does not parse: {e}",
                        rp.id
                    ))
                })?)
            }
        }
        _ => None,
    })
}

fn run(
    trace: &Trace,
    options: &ReplayOptions,
    source: Option<String>,
) -> Result<Report, ReplayError> {
    let lost = trace.recovery.lost;
    if lost.is_none() {
        plan::refuse_gaps(&trace.recovery)?;
    }
    let plan = plan::plan(trace, options.until).map_err(|error| match error {
        // Say first why the trace is inconsistent, when it lost records.
        ReplayError::Unreplayable { why } if !lost.is_none() => {
            ReplayError::unreplayable(format!("cannot be exact: {lost} while recording; {why}"))
        }
        error @ ReplayError::BlobMissing { .. } if !lost.is_none() => {
            error.blob_context(format!("cannot be exact: {lost} while recording"))
        }
        error @ ReplayError::BlobMissing { .. } if !trace.recovery.is_complete() => error
            .blob_context(format!(
                "the trace is incomplete ({})",
                error::incomplete_how(&trace.recovery)
            )),
        other => other,
    })?;
    if plan.runtimes.is_empty() {
        return Err(ReplayError::unreplayable(
            "the trace records no runtime (no RuntimeStart): nothing to replay",
        ));
    }
    options.check_slowdowns(plan.runtimes.iter().flat_map(|rp| {
        rp.graphs
            .iter()
            .flat_map(|g| &g.ops)
            .filter_map(|op| match op.op {
                hrx_capture::schema::OpKind::Kernel { kernel } => rp.kernel_index.get(&kernel),
                _ => None,
            })
            .map(|&k| &rp.kernels[k])
            .filter(|k| k.engine == hrx_capture::schema::Engine::Gpu)
            .map(|k| k.entry.as_str())
    }))?;
    let op_runs = options.repeat.max(3);
    let mut notes = plan.notes.clone();
    // A runtime that loses the GPU for good runs after every other (`plan::Order`).
    let order =
        plan::Order::of((plan.runtimes.iter()).map(|rp| (rp.id, rp.loses_the_gpu(options))));
    let at = |id| plan.runtimes.iter().position(|rp| rp.id == id);
    notes.extend(order.notes(|id| at(id).and_then(|i| plan.runtimes[i].sticky_loss.clone())));
    let total = plan
        .runtimes
        .iter()
        .filter(|rp| order.replays(rp.id))
        .map(|rp| {
            let runs = rp.runs(options);
            let submissions = (rp.submissions.len() * runs.repeat) as u64;
            let ops: usize = if rp.times_ops_isolated(options) {
                rp.graphs
                    .iter()
                    .flat_map(|g| &g.ops)
                    .filter(|op| !matches!(op.op, OpKind::Scoped | OpKind::Host))
                    .count()
            } else {
                0
            };
            submissions + (rp.submissions.len() * runs.warmup) as u64 + (ops * op_runs) as u64
        })
        .sum();
    let mut ticker = execute::Ticker {
        done: 0,
        total,
        callback: options.progress.as_deref(),
    };
    // In the plan's order for the report; a runtime not replayed has no runs.
    let mut runs: Vec<compare::RuntimeRuns> =
        plan.runtimes.iter().map(|_| Default::default()).collect();
    let mut clocks = clocks::ClockWatch::default();
    for (i, rp) in order
        .runs()
        .filter_map(|id| Some((at(id)?, &plan.runtimes[at(id)?])))
    {
        let fault = replay_fault(options, rp, &mut notes)?;
        let contents = rp.keeps_contents(options);
        let Runs { warmup, repeat } = rp.runs(options);
        notes.extend(rp.single_run_note(options));
        // Warm-up replays: run, then thrown away.
        for _ in 0..warmup {
            execute::run(rp, options, fault.clone(), contents, &mut ticker, None)?;
        }
        let mut repeats = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            repeats.push(execute::run(
                rp,
                options,
                fault.clone(),
                contents,
                &mut ticker,
                Some(&mut clocks),
            )?);
        }
        // The last runtime's reading is the one kept: after the last timed repeat.
        clocks.after();
        let op_times = if rp.times_ops_isolated(options) {
            execute::time_ops(rp, options, op_runs, &mut ticker, &mut notes)?
        } else if options.per_op {
            execute::op_times_in_graphs(rp, &repeats, &mut notes)
        } else {
            Default::default()
        };
        runs[i] = compare::RuntimeRuns {
            repeats,
            op_times,
            replay_fault: fault.map(|f| f.to_string()),
        };
    }
    ticker.finish();
    let mut report = compare::report(
        &plan,
        &runs,
        options,
        source,
        notes,
        &mut Default::default(),
        None,
    );
    report.replay.gpu_clocks = clocks.finish();
    Ok(report)
}
