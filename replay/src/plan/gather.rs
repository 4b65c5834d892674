//! Gathering a trace's records per runtime in file order, and the whole trace's [`Plan`]:
//! the recovery's notes, then one [`RuntimePlan`] per runtime (`runtime`).

use super::Plan;
use super::runtime::runtime_plan;
use crate::error::ReplayError;
use hrx_capture::Trace;
use hrx_capture::schema::{self as s, BlobHash, Payload, Record, RuntimeId, SubmissionIndex};
use std::collections::{BTreeMap, HashMap};

pub(super) fn bad(why: impl Into<String>) -> ReplayError {
    ReplayError::unreplayable(why)
}

pub(super) fn to_usize(value: u64, what: impl FnOnce() -> String) -> Result<usize, ReplayError> {
    usize::try_from(value).map_err(|_| bad(format!("{}: {value} does not fit in memory", what())))
}

/// Resolves captured contents to their bytes: `Ok(None)` when they were not captured.
/// `needed_by` names the runtime and the first submission that needs them, asked only when
/// their blob is missing ([`ReplayError::BlobMissing`]).
pub(super) fn contents<'t>(
    p: &'t Payload,
    expected_len: u64,
    blobs: &HashMap<BlobHash, &'t [u8]>,
    what: &dyn Fn() -> String,
    needed_by: &dyn Fn() -> (u32, Option<u64>),
) -> Result<Option<&'t [u8]>, ReplayError> {
    let bytes: &'t [u8] = match p {
        Payload::Omitted { .. } => return Ok(None),
        Payload::Inline(bytes) => bytes,
        Payload::Blob { hash, len_bytes } => {
            if *len_bytes != expected_len {
                return Err(bad(format!(
                    "{}: the blob reference says {len_bytes} bytes, the record {expected_len}",
                    what()
                )));
            }
            blobs.get(hash).copied().ok_or_else(|| {
                let (runtime, submission) = needed_by();
                ReplayError::BlobMissing {
                    runtime,
                    what: what(),
                    hash: hash.0,
                    submission,
                    context: None,
                }
            })?
        }
    };
    if bytes.len() as u64 != expected_len {
        return Err(bad(format!(
            "{}: captured contents are {} bytes, the record says {expected_len}",
            what(),
            bytes.len()
        )));
    }
    Ok(Some(bytes))
}

/// Per-runtime records gathered in file order before validation: the objects, submits,
/// host writes replay re-executes and compares. Completions, timings, events, digests and
/// cross waits are not gathered: they come joined to their submissions (module `joins`).
#[derive(Default)]
pub(super) struct Gather<'t> {
    pub(super) start: Option<&'t s::RuntimeStart>,
    /// How the capture timed operations (format 1.16).
    pub(super) op_time_source: Option<s::OpTimeSource>,
    pub(super) buffers: Vec<&'t s::BufferCreated>,
    pub(super) kernels: Vec<&'t s::KernelLoaded>,
    pub(super) ops: Vec<&'t s::GraphOp>,
    pub(super) prepared: Vec<&'t s::Prepared>,
    pub(super) submits: Vec<&'t s::Submit>,
    pub(super) refusals: usize,
    pub(super) host_writes: Vec<&'t s::HostWrite>,
    /// The buffers the program let go of (the runtime released their memory).
    pub(super) drops: Vec<&'t s::BufferDropped>,
    pub(super) poisons: Vec<&'t s::Poison>,
    pub(super) snapshots: Vec<&'t s::BufferSnapshot>,
    /// The submission (and region) each completion, timing and event names, with the
    /// record's kind: checked against the submits and their graphs (a trace that lacks
    /// what one names is refused), not joined (module `joins` joins them).
    pub(super) named: Vec<(&'static str, SubmissionIndex, Option<u32>)>,
    /// The first submission of the earliest range, when the trace holds ranges.
    pub(super) range_start: Option<SubmissionIndex>,
    pub(super) range_fault: Option<(SubmissionIndex, s::RangeFault)>,
    /// The file is incomplete: records naming a submission it lacks are left out
    /// ([`plan_of`]).
    pub(super) cut_short: bool,
}

/// What the reader's recovery means for the replay: notes (records lost while recording, a
/// damaged or cut-short file) and whether the trace is complete.
pub(crate) fn recovery_notes(recovery: &hrx_capture::Recovery) -> (Vec<String>, bool) {
    let mut notes = Vec::new();
    // First of all: a trace that lost records cannot be replayed exactly.
    let lost = recovery.lost;
    if !lost.is_none() {
        notes.push(format!(
            "cannot be exact: {lost} while recording: what they said is not compared (a lost \
             digest leaves its output uncompared, a lost timing is a sample fewer; a lost \
             `Submit`, host write or definition is refused before replaying)"
        ));
    } else if let Some(mode) = lost.lossy_without_loss() {
        notes.push(format!("lost {mode}"));
    }
    let complete = recovery.is_complete() && lost.is_none();
    // A trace read whole that only lost records is said by the note above: the figures below
    // would all read "complete"; so is a trim of an incomplete recording, by its own note
    // (`trimmed_from_incomplete`).
    let r = recovery;
    if r.newer_records > 0
        && (hrx_capture::Recovery {
            newer_records: 0,
            ..*r
        })
        .file_is_whole()
    {
        // Nothing damaged or missing: records this reader cannot decode, said as such.
        notes.push(format!(
            "the trace holds {} records of a newer minor version this reader cannot decode \
             (update hrx-trace): what they say cannot be compared",
            r.newer_records
        ));
    } else if !recovery.file_is_whole() {
        // In the words every verb says it in (`info`'s `recovered` line): it read
        // "clean close: false, 0 damaged or missing blocks ..." (a fresh user's pass).
        let missing = match r.missing_submissions {
            0 => String::new(),
            n => format!("; {} missing", hrx_analysis::units::plural(n, "submission")),
        };
        let newer = match r.newer_records {
            0 => String::new(),
            n => format!("; {n} records of a newer minor version not decoded"),
        };
        notes.push(format!(
            "the trace is incomplete ({}: {}{missing}{newer}): what it lacks cannot be \
             compared",
            r.end(),
            hrx_analysis::info::recovered(r),
        ));
    }
    (notes, complete)
}

/// How a trace that was not read whole ended, in `info`'s words ([`Recovery::end`]), for
/// [`ReplayError::NoSubmissions`]: `recovery` is the file's, `trimmed_incomplete` whether it
/// is a trim of an incomplete recording. `None` for a trace read whole.
///
/// [`Recovery::end`]: hrx_capture::Recovery::end
pub(crate) fn incompleteness(
    recovery: &hrx_capture::Recovery,
    trimmed_incomplete: bool,
) -> Option<&'static str> {
    if !recovery.is_complete() {
        Some(recovery.end())
    } else if !recovery.lost.is_none() {
        Some("closed cleanly, but the recorder lost records")
    } else if trimmed_incomplete {
        Some("closed cleanly, but trimmed from an incomplete recording")
    } else {
        None
    }
}

/// Why the recording a `TraceRange` record's trim was cut from was incomplete (`trim`'s
/// note in `trimmed_from`, [`hrx_analysis::trim::source_note`]); `None` for any other record
/// and for a trim of a whole recording.
pub(crate) fn trimmed_from_incomplete(record: &Record) -> Option<String> {
    let Record::TraceRange(range) = record else {
        return None;
    };
    let from = range.trimmed_from.as_deref()?;
    hrx_analysis::trim::source_note(from).1.map(str::to_owned)
}

/// A trace whose reader found submissions missing between those it holds (their `Submit`
/// lost with a damaged block, [`hrx_capture::Recovery::missing_submissions`]) is refused: what
/// they wrote, later submissions may read, and a replay without them would diverge there
/// (or, where nothing names them, pass over the gap). Records lost in lossy mode are refused
/// before this, by what was lost.
///
/// # Errors
/// [`ReplayError::Incomplete`] when submissions are missing.
pub(crate) fn refuse_gaps(recovery: &hrx_capture::Recovery) -> Result<(), ReplayError> {
    match recovery.missing_submissions {
        0 => Ok(()),
        n => Err(ReplayError::incomplete(
            recovery,
            format!(
                "{} between those it holds {} no Submit (lost while recording, or with a damaged block): later \
                 submissions may read what {} wrote, which replay cannot re-execute",
                hrx_analysis::units::plural(n, "submission"),
                if n == 1 { "has" } else { "have" },
                if n == 1 { "it" } else { "they" },
            ),
        )),
    }
}

/// Where a trace that was never closed ends for each runtime: the submission it ends before
/// ([`hrx_capture::reader::WarningKind::SubmissionsUnwritten`], found by a reader that checked
/// submission numbers). The numbers a runtime lacks there are its submitting threads'
/// unwritten last records, not a gap in the middle of the trace (the reader tells the two
/// apart: only a trace not closed, with nothing damaged, skipped or lost, ends so): replay
/// keeps the submissions before it, and leaves out those from it on, which other threads'
/// records in the file may hold (they may read what the unwritten ones wrote).
pub(crate) fn ends(warnings: &[hrx_capture::Warning]) -> BTreeMap<RuntimeId, SubmissionIndex> {
    (warnings.iter())
        .filter_map(|w| w.kind.ends_before())
        .map(|(runtime, first)| (RuntimeId(runtime), SubmissionIndex(first)))
        .collect()
}

/// Whether `record` names a submission at or past where the trace ends for its runtime
/// ([`ends`]).
pub(crate) fn past_the_end(ends: &BTreeMap<RuntimeId, SubmissionIndex>, record: &Record) -> bool {
    match (record.runtime(), crate::chunk::submission_of(record)) {
        (Some(runtime), Some(submission)) => ends.get(&runtime).is_some_and(|&e| submission >= e),
        _ => false,
    }
}

/// The replay's notes on the submissions left out past where the trace ends ([`ends`]).
pub(crate) fn ends_notes(warnings: &[hrx_capture::Warning]) -> Vec<String> {
    use hrx_analysis::units::plural;
    (warnings.iter())
        .filter_map(|w| match w.kind {
            hrx_capture::reader::WarningKind::SubmissionsUnwritten {
                runtime,
                first,
                missing,
                past,
                ..
            } => Some(format!(
                "runtime {runtime}: the trace ends before submission {first}, the first whose \
                 Submit it lacks (never closed: its submitting thread's last records were not \
                 written): submissions from {first} on are left out, {} it holds (written by \
                 other threads) and {} without a Submit",
                plural(past, "submission"),
                plural(missing, "submission"),
            )),
            _ => None,
        })
        .collect()
}

/// Builds the plan of `trace`, keeping submissions 1 to `until` of each runtime (numbered
/// as in the whole recording).
///
/// # Errors
/// [`ReplayError::Unreplayable`] for any inconsistency or missing data.
pub(crate) fn plan(trace: &Trace, until: Option<u64>) -> Result<Plan<'_>, ReplayError> {
    let cut_short = !trace.recovery.is_complete() || !trace.recovery.lost.is_none();
    let mut host_load = (None, None);
    for record in &trace.records {
        host_load_sample(&mut host_load, record);
    }
    plan_of(trace, until, cut_short, host_load.1)
}

/// [`plan`], where `cut_short` says whether the file `trace` was read from is incomplete or
/// lost records (a streamed replay's chunk is read whole from a file that may not be).
/// Then a record naming a submission past the last `Submit` the trace holds is left out,
/// with a note, where a whole trace refuses it: a recording killed mid-run leaves each
/// thread's last records unwritten, so a submission's completion and timings can be in the
/// file while the submitting thread's `Submit` is not (as `export` and `stats` leave them
/// out). A `Submit` missing before a held one is refused still: later submissions read what
/// it wrote.
///
/// # Errors
/// As [`plan`].
///
/// `host_load_per_cpu` is the capture's highest host load per CPU over the whole file, the
/// one figure its notes and report take: a chunk of a streamed replay holds only its own
/// samples ([`crate::chunk::ChunkIndex::host_load_per_cpu`]).
pub(crate) fn plan_of(
    trace: &Trace,
    until: Option<u64>,
    cut_short: bool,
    host_load_per_cpu: Option<f64>,
) -> Result<Plan<'_>, ReplayError> {
    let blobs = trace.blobs();
    let lost = trace.recovery.lost;
    let (mut notes, mut complete) = recovery_notes(&trace.recovery);
    // Records of submissions past where the trace ends for their runtime are left out, as if
    // the file ended there (a chunk of a streamed replay has them left out by its chunker).
    let ends = ends(&trace.warnings);
    notes.extend(ends_notes(&trace.warnings));
    let records: Vec<&Record> = (trace.records.iter())
        .filter(|r| !past_the_end(&ends, r))
        .collect();
    let mut trimmed_incomplete = None;
    let mut version = (trace.header.version.major.0, trace.header.version.minor.0);
    let mut recorded = None;
    let mut gathered: BTreeMap<RuntimeId, Gather<'_>> = BTreeMap::new();
    // The latest record of each range (a capture range's closing one restates its opening).
    let mut ranges: BTreeMap<(RuntimeId, u64), &s::TraceRange> = BTreeMap::new();
    for &record in &records {
        match record {
            Record::SessionStart(start) => {
                version = start.format_version;
                recorded = Some(crate::baseline::recording(start));
                continue;
            }
            Record::SessionEnd(_) => continue,
            _ => {}
        }
        let Some(runtime) = record.runtime() else {
            continue;
        };
        let g = gathered.entry(runtime).or_default();
        match record {
            Record::RuntimeStart(r) => {
                if g.start.is_some() {
                    return Err(bad(format!("runtime {runtime} starts twice")));
                }
                g.start = Some(r);
            }
            Record::OpTimes(r) => g.op_time_source = Some(r.source),
            Record::BufferCreated(r) => g.buffers.push(r),
            Record::KernelLoaded(r) => g.kernels.push(r),
            Record::GraphOp(r) => g.ops.push(r),
            Record::Prepared(r) => g.prepared.push(r),
            Record::Submit(r) => g.submits.push(r),
            Record::SubmitRefused(_) => g.refusals += 1,
            Record::HostWrite(r) => g.host_writes.push(r),
            Record::BufferDropped(r) => g.drops.push(r),
            Record::Poison(r) => g.poisons.push(r),
            Record::BufferSnapshot(r) => g.snapshots.push(r),
            Record::SubmissionDone(r) => g.named.push(("SubmissionDone", r.submission, None)),
            Record::RegionDone(r) => g.named.push(("RegionDone", r.submission, Some(r.region.0))),
            Record::RegionTiming(r) => {
                g.named
                    .push(("RegionTiming", r.submission, Some(r.region.0)));
            }
            Record::OpTiming(r) => g.named.push(("OpTiming", r.timing.submission, None)),
            Record::Quarantine(s::Quarantine {
                submission: Some(submission),
                ..
            }) => g.named.push(("Quarantine", *submission, None)),
            Record::FaultInjected(s::FaultInjected {
                submission: Some(submission),
                ..
            }) => g.named.push(("FaultInjected", *submission, None)),
            Record::TraceRange(r) => {
                ranges.insert((r.runtime, r.start.0), r);
                if trimmed_incomplete.is_none() {
                    trimmed_incomplete = trimmed_from_incomplete(record);
                }
                g.range_start = Some(g.range_start.map_or(r.start, |s| s.min(r.start)));
                if let Some(fault) = &r.fault
                    && g.range_fault.as_ref().is_none_or(|(s, _)| r.start < *s)
                {
                    g.range_fault = Some((r.start, fault.clone()));
                }
            }
            _ => {}
        }
    }
    // In the replay's notes, beside the replay's own load in its header: a capture's
    // times that include waits for a CPU are a poor reference (a fresh-user pass: a 2x
    // slowdown replayed against such a capture passed, and only `record` had said so).
    // Read over the whole file: a chunk of a streamed replay whose own samples were quiet
    // (the loaded one at the runtime's end in a later chunk) said nothing (a break-it pass).
    if host_load_per_cpu.is_some_and(|load| load >= 1.0) {
        notes.push(
            "the capture ran on a loaded host (a 1-minute load average of at least its CPUs \
             when a runtime started or ended): its host-side times include waits for a CPU, \
             a poor reference for --max-slowdown"
                .to_owned(),
        );
    }
    // A range of a recording (a trim, a capture range) lacks the submissions outside it: said
    // as `info` says it (only the submission numbers in the table showed it).
    let several = ranges
        .keys()
        .any(|&(r, _)| Some(r) != ranges.keys().next().map(|k| k.0));
    for range in (ranges.values()).filter(|r| r.trigger != crate::chunk::CHUNK_TRIGGER) {
        notes.push(format!(
            "the trace is a range: {}: only its submissions are replayed \
             and compared",
            hrx_analysis::info::range_text(range, several)
        ));
    }
    // A trim of an incomplete recording is closed cleanly, but holds what its source held:
    // what the recording lacked (a digest lost with its end) is not evidence of a change.
    if let Some(why) = &trimmed_incomplete {
        complete = false;
        notes.push(format!(
            "the trace was trimmed from an incomplete recording ({why}): what the recording lacked cannot be compared"
        ));
    }
    for g in gathered.values_mut() {
        g.cut_short = cut_short || trimmed_incomplete.is_some();
    }
    // Completions, timings, events, digests and cross waits joined to their submissions and
    // regions by the one join of every reader.
    let mut joins = crate::joins::join(&records);
    let mut runtimes = Vec::new();
    for (id, g) in gathered {
        let joined = joins.runtimes.remove(&id).unwrap_or_default();
        let plan = runtime_plan(id, g, joined, &blobs, until, &mut notes)?;
        if version < (1, 17)
            && matches!(
                plan.op_time_source,
                Some(s::OpTimeSource::BuiltinKernels | s::OpTimeSource::Cupti)
            )
        {
            notes.push(format!(
                "runtime {id}: its kernel times were recorded by format {}.{}, each from its first block; this replay counts a graph's operation from the end of what it waits on (its launch included, format 1.17), so dependent kernels compare longer than captured by their launch (about a microsecond on the H200)",
                version.0, version.1
            ));
        }
        runtimes.push(plan);
    }
    // Nothing to compare is not a match: a CI gate must not pass on a capture that was cut
    // short before its first submit, or that never used hrx.
    if runtimes.iter().all(|r| r.captured_submissions() == 0) {
        return Err(ReplayError::NoSubmissions {
            runtimes: runtimes.len(),
            incomplete: (!complete)
                .then(|| incompleteness(&trace.recovery, trimmed_incomplete.is_some()))
                .flatten(),
        });
    }
    if let Some(until) = until
        && runtimes.iter().all(|r| r.submissions.is_empty())
        && let Some(first) = runtimes.iter().filter_map(|r| r.first_captured).min()
    {
        return Err(ReplayError::UntilKeepsNothing {
            until,
            first: first.0,
        });
    }
    Ok(Plan {
        runtimes,
        notes,
        format_version: format!("{}.{}", version.0, version.1),
        recorded,
        complete,
        lost,
        host_load_per_cpu,
    })
}

/// Reads the host-load counter from `record` into `host_load` (the counter's name, the
/// highest sample per CPU so far).
pub(crate) fn host_load_sample(
    host_load: &mut (Option<s::AnnotationId>, Option<f64>),
    record: &Record,
) {
    match record {
        Record::AnnotationName(name) if name.text == s::HOST_LOAD_COUNTER => {
            host_load.0 = Some(name.name);
        }
        Record::CounterSample(sample) if Some(sample.name) == host_load.0 => {
            host_load.1 = Some(
                host_load
                    .1
                    .map_or(sample.value.0, |l| l.max(sample.value.0)),
            );
        }
        _ => {}
    }
}
