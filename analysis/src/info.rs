//! What `hrx-trace info` and `record`'s summary say of a trace, from the one pass of
//! [`crate::scan`](mod@crate::scan): its joins (which submissions are in flight and which
//! regions still run when the trace ends) come from the joiner's [`ScanSummary`]; what is
//! no join (records per kind, the header, the session and runtime starts, ranges, state
//! snapshots, the fatal signal, counters, failures counted per record) from a thin
//! [`Visitor`] beside it.
//!
//! Everything here comes from reading the written file back, never from the recorder's own
//! counts, so a summary is only as good as the trace it describes.

use crate::scan::{RunningRegion, ScanSummary, Visitor, scan_reader_threaded, scan_records};
use crate::units::{bytes, plural};
use crate::{Index, dump::host_time_ns};
use hrx_capture::format::{Compression, FileHeader};
use hrx_capture::schema::{
    Counters, FatalSignal, Payload, RefusalKind, RuntimeId, RuntimeStart, SessionEnd, SessionStart,
    SessionStopped, SignalWitness, Status, SubmissionIndex, TraceRange,
};
use hrx_capture::{ReadError, Record, Recovery, TraceReader, Warning};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Ranges kept per trace: a trace opening a range per submission keeps the first ones.
const RANGES_KEPT: usize = 1024;

/// What was recovered of a trace not read whole, in the one sentence every verb explains
/// it with (`info`'s `recovered` line, the `warning:` line of each reading verb, `record`'s
/// `file` line, an export's `trace incomplete` mark): `22 records read from 6 complete
/// blocks; 1 block and 100 records skipped, 1.06 KiB discarded` (the parts that are 0 left
/// out).
pub fn recovered(r: &Recovery) -> String {
    let read = format!(
        "{} read from {}",
        plural(r.records, "record"),
        plural(r.complete_blocks, "complete block")
    );
    let skipped: Vec<String> = [(r.skipped_blocks, "block"), (r.skipped_records, "record")]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, what)| plural(n, what))
        .collect();
    let lost: Vec<String> = (!skipped.is_empty())
        .then(|| format!("{} skipped", skipped.join(" and ")))
        .into_iter()
        .chain((r.bytes_discarded > 0).then(|| format!("{} discarded", bytes(r.bytes_discarded))))
        .collect();
    if lost.is_empty() {
        read
    } else {
        format!("{read}; {}", lost.join(", "))
    }
}

/// A range a trace holds, in words (`info`'s and `stats`' `range` lines, `replay`'s note):
/// `trimmed from whole.hrxt, submissions 4..7 (submissions:4..7)` (the source's name as
/// [`hrx_capture::ShowPath::shown`] shows it), `submissions 4..7 of a recording
/// (submissions:4..7)`, or a range that never opened; `runtime` names its runtime first (a
/// trace of several).
pub fn range_text(r: &TraceRange, runtime: bool) -> String {
    let end = r
        .end
        .map_or_else(|| "(to the end)".to_owned(), |e| e.to_string());
    let runtime = if runtime {
        format!("runtime {}, ", r.runtime)
    } else {
        String::new()
    };
    match &r.trimmed_from {
        // The source's name as messages show a path (quoted and escaped where it holds a
        // newline or an escape sequence): `info`'s line and `replay`'s note printed it raw
        // (a break-it pass), where `stats` escaped it.
        Some(from) => {
            let (name, why) = crate::trim::source_note(from);
            let why = why.map_or(String::new(), |why| {
                format!("{}{why})", hrx_capture::TRIMMED_FROM_INCOMPLETE)
            });
            format!(
                "trimmed from {}{why}, {runtime}submissions {}..{end} ({})",
                hrx_capture::ShowPath::shown(std::path::Path::new(name)),
                r.start,
                r.trigger
            )
        }
        // Recorded at the run's end for a range that never opened.
        None if r.end == Some(r.start) => format!(
            "{runtime}no submission of a recording ({} never opened: the run ended at \
             submission {})",
            r.trigger,
            r.start.0.saturating_sub(1)
        ),
        None => format!(
            "{runtime}submissions {}..{end} of a recording ({})",
            r.start, r.trigger
        ),
    }
}

/// The samples of the runtimes' host-load counter ([`TraceInfo::host_load`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostLoadSamples {
    /// The first sample's load per CPU.
    pub first: f64,
    /// The last sample's (the first's when there is one).
    pub last: f64,
    /// The highest.
    pub highest: f64,
    /// How many samples.
    pub samples: u64,
}

impl HostLoadSamples {
    /// Whether the host was loaded at any sample: a load of at least its CPUs.
    pub fn loaded(&self) -> bool {
        self.highest >= 1.0
    }

    /// `samples` with one more sample, `value` (the first where there is none): the one
    /// fold of `info` and `export`.
    pub fn with(samples: Option<HostLoadSamples>, value: f64) -> HostLoadSamples {
        match samples {
            Some(h) => HostLoadSamples {
                last: value,
                highest: h.highest.max(value),
                samples: h.samples + 1,
                ..h
            },
            None => HostLoadSamples {
                first: value,
                last: value,
                highest: value,
                samples: 1,
            },
        }
    }
}

/// What a trace holds, in numbers (see the module docs).
#[derive(Debug)]
pub struct TraceInfo {
    /// The file header.
    pub header: FileHeader,
    /// File size in bytes (0 for records read from memory).
    pub file_len_bytes: u64,
    /// The session's first record, if it was read.
    pub session: Option<SessionStart>,
    /// Every runtime that started, in order.
    pub runtimes: Vec<RuntimeStart>,
    /// How each runtime timed its operations, where the trace says (format 1.16).
    pub op_times: Vec<hrx_capture::schema::OpTimes>,
    /// The session's last record (only in a cleanly closed trace).
    pub end: Option<SessionEnd>,
    /// Why the recording stopped early, when a signal stopped it.
    pub stopped: Option<SessionStopped>,
    /// The signal that ended the process, as its recorder's handler or `record` saw it (the
    /// handler's when both did).
    pub fatal: Option<FatalSignal>,
    /// The host's load per CPU ([`hrx_capture::schema::HOST_LOAD_COUNTER`]) as the runtimes
    /// set it at their start and end, in trace order: the first and last samples, the
    /// highest, and how many there are (one: a trace that ends before a runtime's end).
    pub host_load: Option<HostLoadSamples>,
    /// The id of [`hrx_capture::schema::HOST_LOAD_COUNTER`]'s name, once defined.
    host_load_name: Option<hrx_capture::schema::AnnotationId>,
    /// Regions started and not finished when the trace ends, joined by the pass
    /// ([`ScanSummary::running`]): what was running at a hang or a crash.
    pub running: Vec<RunningRegion>,
    /// Submissions submitted and not done when the trace ends ([`ScanSummary::in_flight`]).
    pub in_flight: Vec<(RuntimeId, SubmissionIndex)>,
    /// Records naming a submission whose `Submit` the trace lacks, from the joiner: region
    /// timings, completions (`SubmissionDone`) and output digests. A trace cut short by a
    /// kill can keep one thread's records of submissions whose submitting thread's records
    /// were lost.
    pub unjoined: [u64; 3],
    /// The ranges the trace holds, by (runtime, first submission): the latest record of
    /// each (the one that closed it, when one did).
    pub ranges: BTreeMap<(RuntimeId, u64), TraceRange>,
    /// State snapshot ranges: (count, bytes with contents, bytes without).
    pub snapshots: (u64, u64, u64),
    /// Records per kind name.
    pub kinds: BTreeMap<&'static str, u64>,
    /// Records read.
    pub records: u64,
    /// Graph operations built ([`Record::GraphOp`]).
    pub operations: u64,
    /// Graphs prepared.
    pub prepared: u64,
    /// Submissions accepted (`Submit` records).
    pub submissions: u64,
    /// Submits refused.
    pub refused: u64,
    /// Refusals because the slots or the capacity were taken (`Busy`).
    pub refused_busy: u64,
    /// Submissions that ended failed.
    pub failed: u64,
    /// Submissions that ended cancelled.
    pub cancelled: u64,
    /// Regions that ran and failed.
    pub regions_failed: u64,
    /// Regions cancelled without running (after a failure, or a failed producer).
    pub regions_cancelled: u64,
    /// The first failure's error text.
    pub first_failure: Option<String>,
    /// Prepared graphs quarantined.
    pub quarantines: u64,
    /// Buffers poisoned.
    pub poisoned: u64,
    /// Injected faults that fired.
    pub faults: u64,
    /// The runtimes an injected fault fired in (a `FaultInjected` of theirs).
    pub faulted_runtimes: std::collections::BTreeSet<RuntimeId>,
    /// The last counters snapshot of each runtime.
    pub counters: BTreeMap<RuntimeId, Counters>,
    /// Earliest and latest host time seen, in ns since the session start.
    pub span_ns: Option<(u64, u64)>,
    /// Earliest host time of a submit or host write, in ns since the session start: where a
    /// range's own records start (a range or trim also holds the definitions recorded before
    /// it, at their times).
    pub first_submit_ns: Option<u64>,
    /// Latest host time of the recorded work (submits, timings, outcomes, host writes and
    /// spans, annotations, failures), in ns since the session start: where a range's own
    /// records end (the buffers and runtimes it holds are let go at the session's end, which
    /// a trim or a range keeps).
    pub last_activity_ns: Option<u64>,
    /// Waits on the recorder per recording thread: name, waits, total ns.
    pub thread_waits: BTreeMap<u32, (String, u64, u64)>,
    /// What was read back.
    pub recovery: Recovery,
    /// Damage and skipped parts.
    pub warnings: Vec<Warning>,
}

/// Whether `record` is recorded work rather than a definition, a teardown or the
/// recorder's bookkeeping (see [`TraceInfo::last_activity_ns`]).
fn is_activity(record: &Record) -> bool {
    !matches!(
        record,
        Record::SessionStart(_)
            | Record::SessionEnd(_)
            | Record::RuntimeStart(_)
            | Record::RuntimeEnd(_)
            | Record::BufferCreated(_)
            | Record::BufferDropped(_)
            | Record::Blob(_)
            | Record::KernelLoaded(_)
            | Record::GraphOp(_)
            | Record::Prepared(_)
            | Record::ClockCalibration(_)
            | Record::HostClock(_)
            | Record::Counters(_)
            | Record::TraceRange(_)
            | Record::BufferSnapshot(_)
            | Record::RecordsLost(_)
    )
}

/// The part of [`TraceInfo`] that is no join: one record at a time.
struct InfoVisitor {
    info: TraceInfo,
}

impl Visitor for InfoVisitor {
    fn record(&mut self, _index: &Index, record: &Record) {
        self.info.add(record);
    }
}

impl TraceInfo {
    /// Reads the whole trace at `path` in one pass ([`crate::scan`](mod@crate::scan)), with
    /// gaps in its submission numbers checked
    /// ([`TraceReader::check_submission_numbers`]).
    ///
    /// # Errors
    ///
    /// The reader's [`ReadError`]: the file cannot be opened, has no valid header, or a
    /// part that must be read is unusable.
    pub fn read(path: &Path) -> Result<TraceInfo, ReadError> {
        let reader = TraceReader::open(path)?.check_submission_numbers();
        let file_len_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut visitor = InfoVisitor {
            info: TraceInfo::empty(*reader.header(), file_len_bytes),
        };
        let summary = scan_reader_threaded(reader, &mut visitor)?;
        Ok(visitor.info.joined(summary))
    }

    /// [`TraceInfo::read`] of records held in memory (tests): an uncompressed header, no
    /// file, nothing recovered.
    pub fn of_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> TraceInfo {
        let mut visitor = InfoVisitor {
            info: TraceInfo::empty(FileHeader::current(Compression::None), 0),
        };
        let summary = scan_records(records, &mut visitor);
        visitor.info.joined(summary)
    }

    fn empty(header: FileHeader, file_len_bytes: u64) -> TraceInfo {
        TraceInfo {
            header,
            file_len_bytes,
            session: None,
            runtimes: Vec::new(),
            op_times: Vec::new(),
            end: None,
            stopped: None,
            fatal: None,
            host_load: None,
            host_load_name: None,
            running: Vec::new(),
            in_flight: Vec::new(),
            unjoined: [0; 3],
            ranges: BTreeMap::new(),
            snapshots: (0, 0, 0),
            kinds: BTreeMap::new(),
            records: 0,
            operations: 0,
            prepared: 0,
            submissions: 0,
            refused: 0,
            refused_busy: 0,
            failed: 0,
            cancelled: 0,
            regions_failed: 0,
            regions_cancelled: 0,
            first_failure: None,
            quarantines: 0,
            poisoned: 0,
            faults: 0,
            faulted_runtimes: Default::default(),
            counters: BTreeMap::new(),
            span_ns: None,
            first_submit_ns: None,
            last_activity_ns: None,
            thread_waits: BTreeMap::new(),
            recovery: Recovery::default(),
            warnings: Vec::new(),
        }
    }

    /// Takes the pass's joins and what the reader recovered.
    fn joined(mut self, summary: ScanSummary) -> TraceInfo {
        self.unjoined = summary.unjoined();
        self.running = summary.running;
        self.in_flight = summary.in_flight;
        self.records = summary.records;
        self.submissions = summary.submissions;
        self.recovery = summary.recovery.unwrap_or_default();
        self.warnings = summary.warnings;
        self
    }

    fn add(&mut self, record: &Record) {
        *self.kinds.entry(record.kind_name()).or_default() += 1;
        if let Some(time_ns) = host_time_ns(record) {
            let (first, last) = self.span_ns.get_or_insert((time_ns, time_ns));
            *first = (*first).min(time_ns);
            *last = (*last).max(time_ns);
            if matches!(record, Record::Submit(_) | Record::HostWrite(_)) {
                let first = self.first_submit_ns.get_or_insert(time_ns);
                *first = (*first).min(time_ns);
            }
            // The runtimes' own host-load samples are no activity: a trim keeps the one at
            // its source's end, past the range.
            let host_load = matches!(record, Record::CounterSample(c)
                if Some(c.name) == self.host_load_name);
            if is_activity(record) && !host_load {
                let last = self.last_activity_ns.get_or_insert(time_ns);
                *last = (*last).max(time_ns);
            }
        }
        match record {
            Record::SessionStart(start) => {
                self.session.get_or_insert_with(|| start.clone());
            }
            Record::SessionStopped(stopped) => self.stopped = Some(*stopped),
            Record::AnnotationName(name) if name.text == hrx_capture::schema::HOST_LOAD_COUNTER => {
                self.host_load_name = Some(name.name);
            }
            Record::CounterSample(sample) if Some(sample.name) == self.host_load_name => {
                self.host_load = Some(HostLoadSamples::with(self.host_load, sample.value.0));
            }
            Record::FatalSignal(fatal) => {
                let better = self
                    .fatal
                    .is_none_or(|f| f.witness != SignalWitness::Handler);
                if better {
                    self.fatal = Some(*fatal);
                }
            }
            Record::TraceRange(range)
                if self.ranges.len() < RANGES_KEPT
                    || self.ranges.contains_key(&(range.runtime, range.start.0)) =>
            {
                // The closing record restates the range without its fault (the opening's).
                let key = (range.runtime, range.start.0);
                let fault = self.ranges.get(&key).and_then(|r| r.fault.clone());
                let mut range = range.clone();
                range.fault = range.fault.or(fault);
                self.ranges.insert(key, range);
            }
            Record::BufferSnapshot(snap) => {
                self.snapshots.0 += 1;
                match snap.contents {
                    Payload::Omitted { .. } => self.snapshots.2 += snap.len_bytes,
                    _ => self.snapshots.1 += snap.len_bytes,
                }
            }
            Record::RuntimeStart(start) => self.runtimes.push(start.clone()),
            Record::OpTimes(o) => self.op_times.push(*o),
            Record::SessionEnd(end) => self.end = Some(*end),
            Record::GraphOp(_) => self.operations += 1,
            Record::Prepared(_) => self.prepared += 1,
            Record::SubmitRefused(refused) => {
                self.refused += 1;
                if refused.kind == RefusalKind::Busy {
                    self.refused_busy += 1;
                }
            }
            Record::SubmissionDone(done) => match &done.status {
                Status::Ok => {}
                Status::Failed { error } => {
                    self.failed += 1;
                    self.first_failure.get_or_insert_with(|| error.clone());
                }
                Status::Cancelled { .. } => self.cancelled += 1,
            },
            Record::RegionDone(done) => match done.status {
                Status::Ok => {}
                Status::Failed { .. } => self.regions_failed += 1,
                Status::Cancelled { .. } => self.regions_cancelled += 1,
            },
            Record::Quarantine(_) => self.quarantines += 1,
            Record::Poison(_) => self.poisoned += 1,
            Record::FaultInjected(f) => {
                self.faults += 1;
                self.faulted_runtimes.insert(f.runtime);
            }
            Record::Counters(counters) => {
                self.counters.insert(counters.runtime, *counters);
            }
            Record::RecorderWait(wait) => {
                let (_, count, total_ns) = self
                    .thread_waits
                    .entry(wait.thread)
                    .or_insert_with(|| (wait.thread_name.clone(), 0, 0));
                *count += 1;
                *total_ns += wait.end_ns.saturating_sub(wait.start_ns);
            }
            _ => {}
        }
    }

    /// Record counts per kind, in schema order.
    pub fn kinds_in_order(&self) -> Vec<(&'static str, u64)> {
        let known = Record::KIND_NAMES
            .iter()
            .filter_map(|name| self.kinds.get(name).map(|&n| (*name, n)));
        let newer = self
            .kinds
            .iter()
            .filter(|(name, _)| !Record::KIND_NAMES.contains(name))
            .map(|(name, n)| (*name, *n));
        known.chain(newer).collect()
    }

    /// The runtimes given a fault to inject whose fault the trace never saw fire, with the
    /// fault: no `FaultInjected` of theirs, nor a range saying it fired before the range
    /// (its `TraceRange::fault` with no count left). Where the trace is incomplete, its
    /// record may have been lost with the trace's end.
    pub fn faults_not_fired(&self) -> Vec<(RuntimeId, &str)> {
        let fired_before_a_range = |runtime| {
            (self.ranges.values()).any(|r| {
                r.runtime == runtime && r.fault.as_ref().is_some_and(|f| f.from_start.is_none())
            })
        };
        (self.runtimes.iter())
            .filter_map(|rt| Some((rt.runtime, rt.fault.as_deref()?)))
            .filter(|&(runtime, _)| {
                !self.faulted_runtimes.contains(&runtime) && !fired_before_a_range(runtime)
            })
            .collect()
    }

    /// Bytes copied by all runtimes, from their last counters; `None` without counters.
    pub fn copied_bytes(&self) -> Option<u64> {
        (!self.counters.is_empty()).then(|| self.counters.values().map(|c| c.copied_bytes).sum())
    }

    /// The session's duration in ns: until its end record, else until the last timed record.
    pub fn duration_ns(&self) -> Option<u64> {
        match (self.end, self.span_ns) {
            (Some(end), Some((_, last))) => Some(end.time_ns.max(last)),
            (Some(end), None) => Some(end.time_ns),
            (None, span) => span.map(|(_, last)| last),
        }
    }

    /// Backend and device of the session, as the first runtime (or the session) states them.
    pub fn device(&self) -> Option<String> {
        let (backend, device) = match (self.runtimes.first(), &self.session) {
            (Some(runtime), _) => (&runtime.backend, &runtime.device),
            (None, Some(session)) => (&session.backend, &session.device),
            (None, None) => return None,
        };
        match (backend.is_empty(), device.is_empty()) {
            (true, true) => None,
            (false, true) => Some(backend.clone()),
            (true, false) => Some(device.clone()),
            (false, false) => Some(format!("{backend}: {device}")),
        }
    }

    /// How a signal ended the recorded process, when one did (a [`FatalSignal`] in the
    /// trace): "crashed: SIGSEGV during submission 12, region 2 running", "killed by SIGKILL
    /// after 3 submissions".
    pub fn death(&self) -> Option<String> {
        death(
            self.fatal,
            self.runtimes.len() > 1,
            &self.running,
            &self.in_flight,
            self.submissions,
        )
    }

    /// What the runtime was doing when the trace ends: "during submission 12, region 2
    /// running" (a region of a submission in flight started and not finished: the one a
    /// hang or a crash was in), "during submission 12, no region running" (submitted, not
    /// done), or "after 3 submissions" (none in flight).
    pub fn at_the_end(&self) -> String {
        at_the_end(
            self.runtimes.len() > 1,
            &self.running,
            &self.in_flight,
            self.submissions,
        )
    }

    /// How the trace ends where that is news (see [`Ending`]); `live`: a recorder holds the
    /// file, so that a trace not closed yet is being written, not cut short.
    pub fn ending(&self, live: bool) -> Option<Ending> {
        ending(
            self.recovery.closed,
            live,
            self.ranges.values(),
            self.death(),
            || self.at_the_end(),
        )
    }

    /// How the file ended, in a few words.
    pub fn close_state(&self) -> String {
        let r = &self.recovery;
        // Records lost in lossy mode leave the file whole where no submission went with them:
        // still said here, as the README has `record`'s line read (it read `clean close`
        // beside a `lost` line of 177,026 records: a fresh user's pass, session 60).
        let lost = r.end() == "closed cleanly, but the recorder lost records"
            || (r.is_complete() && !r.lost.is_none());
        if r.is_complete() && !lost {
            "clean close".to_string()
        } else if lost {
            format!(
                "clean close, but the recorder lost {} while recording",
                plural(r.lost.total, "record")
            )
        } else {
            // In the words of every other verb's explanation.
            format!("{}: {}", r.end(), recovered(r))
        }
    }
}

impl ScanSummary {
    /// What the runtime was doing where the records end ([`TraceInfo::at_the_end`]), from
    /// the streaming pass's joins.
    pub fn at_the_end(&self) -> String {
        at_the_end(
            self.index.runtimes().len() > 1,
            &self.running,
            &self.in_flight,
            self.submissions,
        )
    }

    /// How a signal ended the recorded process, in the words of `info`, `record`'s summary
    /// and `stats` ([`TraceInfo::death`]), from the streaming pass's joins.
    pub fn death(&self) -> Option<String> {
        death(
            self.fatal,
            self.index.runtimes().len() > 1,
            &self.running,
            &self.in_flight,
            self.submissions,
        )
    }

    /// How the trace ends where that is news ([`TraceInfo::ending`]), from the streaming
    /// pass's joins and `ranges`, the trace's ranges (`Stats::ranges`); `live`: a recorder
    /// holds the file. Records read from memory ([`ScanSummary::recovery`] `None`) have none.
    pub fn ending(&self, ranges: &[TraceRange], live: bool) -> Option<Ending> {
        let recovery = self.recovery.as_ref()?;
        ending(recovery.closed, live, ranges.iter(), self.death(), || {
            self.at_the_end()
        })
    }
}

/// How the trace a timeline was built from ends where that is news ([`TraceInfo::ending`],
/// in the same words), from the model's facts; `live`: a recorder holds the file. `None`
/// for records not read from a file. The timeline's trace pane said nothing of a trace cut
/// short, where `info` and `stats` did (a fresh user's pass).
pub fn timeline_ending(info: &crate::timeline::TraceInfo, live: bool) -> Option<Ending> {
    let recovery = info.recovery.as_ref()?;
    let death = (info.fatal).map(|f| format!("{} {}", f.describe(), info.at_the_end));
    ending(recovery.closed, live, info.ranges.iter(), death, || {
        info.at_the_end.clone()
    })
}

/// How a trace ends where that is news, as `info`'s `capture` line, `stats`' `ended` line
/// (`stats --json` `ended`) and `record`'s summary say it, from one decision
/// ([`TraceInfo::ending`], [`ScanSummary::ending`]): a trace never closed, or one closed by
/// `trim` from a recording that was not, or one a recorder still writes (`being recorded
/// now`: `stats` said `not closed cleanly` of it where `info` said this, a break-it pass). A
/// trace closed at its run's end, or stopped by a signal and then closed, has none: `info`
/// says those in words of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// Closed by `trim` from a recording that was not read whole, and why it was not
    /// (`the process crashed: SIGSEGV`, [`crate::trim::source_note`]): where that
    /// recording ended lies outside the trim, which says nothing of it.
    TrimmedFromIncomplete(String),
    /// Never closed, a signal having ended the process: [`TraceInfo::death`]
    /// (`crashed: SIGSEGV during submission 12, region 2 running`).
    Died(String),
    /// Never closed, and nothing in it says why (a `SIGKILL` nobody noted, a write that
    /// failed, a file cut short): where it ends ([`TraceInfo::at_the_end`], `after 5
    /// submissions`).
    NeverClosed(String),
    /// Not closed yet, a recorder holding the file: where the read of it got to
    /// ([`TraceInfo::at_the_end`], `during submission 1, region 1 running`).
    BeingRecorded(String),
}

impl std::fmt::Display for Ending {
    /// The `ended` line of `stats` and `record`: `trimmed from an incomplete recording (the
    /// process crashed: SIGSEGV; see range)`, `crashed: SIGSEGV after 12 submissions`, `never
    /// closed after 5 submissions`, `being recorded now: read after 5 submissions`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::TrimmedFromIncomplete(why) => {
                write!(f, "trimmed from an incomplete recording ({why}; see range)")
            }
            Ending::Died(death) => f.write_str(death),
            Ending::NeverClosed(at) => write!(f, "never closed {at}"),
            Ending::BeingRecorded(at) => write!(f, "being recorded now: read {at}"),
        }
    }
}

/// [`Ending`] of a trace `closed` cleanly or not, `live` (a recorder holds it), holding
/// `ranges`, ended by a signal as `death` says, that ends as `at_the_end` says.
fn ending<'a>(
    closed: bool,
    live: bool,
    mut ranges: impl Iterator<Item = &'a TraceRange>,
    death: Option<String>,
    at_the_end: impl FnOnce() -> String,
) -> Option<Ending> {
    if closed {
        // A trim is closed by `trim` whatever its source was: a signal's record in it is the
        // source's, and where the source ended lies past the trim's last submission.
        return ranges
            .find_map(|r| crate::trim::source_note(r.trimmed_from.as_deref()?).1)
            .map(|why| Ending::TrimmedFromIncomplete(why.to_owned()));
    }
    match death {
        Some(death) => Some(Ending::Died(death)),
        None if live => Some(Ending::BeingRecorded(at_the_end())),
        None => Some(Ending::NeverClosed(at_the_end())),
    }
}

/// How a signal ended the recorded process, when one did (`fatal`): its description then
/// where the trace ends ([`at_the_end`]), "crashed: SIGSEGV during submission 12, region 2
/// running", "killed by SIGKILL after 3 submissions".
fn death(
    fatal: Option<FatalSignal>,
    several_runtimes: bool,
    running: &[RunningRegion],
    in_flight: &[(RuntimeId, SubmissionIndex)],
    submissions: u64,
) -> Option<String> {
    let fatal = fatal?;
    Some(format!(
        "{} {}",
        fatal.describe(),
        at_the_end(several_runtimes, running, in_flight, submissions)
    ))
}

/// What the runtime was doing when the trace ends: "during submission 12, region 2
/// running" (a region of a submission in flight started and not finished: the one a hang or
/// a crash was in), "during submission 12, no region running" (submitted, not done), or
/// "after 3 submissions" (none in flight); `several_runtimes` names the runtime too.
fn at_the_end(
    several_runtimes: bool,
    running: &[RunningRegion],
    in_flight: &[(RuntimeId, SubmissionIndex)],
    submissions: u64,
) -> String {
    let runtime = |r: RuntimeId| {
        if several_runtimes {
            format!("runtime {r} ")
        } else {
            String::new()
        }
    };
    // Regions started and unfinished whose submission the trace never found (its `Submit`
    // lost with the process's last block): running too, said as such (`stats` and the
    // timeline named one that `info` left out: a fresh user's pass).
    let unsubmitted: BTreeSet<_> = (running.iter())
        .filter(|r| r.ordinal.is_none() && !in_flight.contains(&(r.runtime, r.submission)))
        .map(|r| (r.runtime, r.submission, r.region))
        .collect();
    // `; submission 6's region 0 running, its Submit not in the trace`, or nothing.
    let unsubmitted_text = || -> String {
        let mut regions = (unsubmitted.iter())
            .map(|&(rt, s, region)| format!("{}submission {s}'s region {region}", runtime(rt)));
        match (regions.next(), unsubmitted.len()) {
            (None, _) => String::new(),
            (Some(one), 1) => format!("; {one} running, its Submit not in the trace"),
            (Some(first), n) => format!(
                "; {first} and {} more running, their Submits not in the trace",
                n - 1
            ),
        }
    };
    // The submissions in flight, where there are several, per runtime, each list bounded:
    // ` (6 in flight: runtime 1 1-4; runtime 2 11-12)`. Said beside a running region too
    // (it named the latest submission alone beside "6 without an outcome": a break-it pass).
    let in_flight: BTreeSet<_> = in_flight.iter().copied().collect();
    let in_flight_text = || -> String {
        if in_flight.len() < 2 {
            return String::new();
        }
        let mut per: BTreeMap<RuntimeId, Vec<u64>> = BTreeMap::new();
        for &(rt, s) in &in_flight {
            per.entry(rt).or_default().push(s.0);
        }
        let named = per.len() > 1 || several_runtimes;
        let lists: Vec<String> = (per.iter())
            .map(|(&rt, subs)| match named {
                true => format!("runtime {rt} {}", bounded_runs(subs)),
                false => bounded_runs(subs),
            })
            .collect();
        format!(" ({} in flight: {})", in_flight.len(), lists.join("; "))
    };
    // The latest submission with a running region, and its running regions; a region start
    // read after its submission's done (blocks out of time order) is not running.
    let running: BTreeSet<_> = running
        .iter()
        .map(|r| (r.runtime, r.submission, r.region))
        .filter(|(r, s, _)| in_flight.contains(&(*r, *s)))
        .collect();
    if let Some(&(rt, submission, _)) = running.iter().max_by_key(|(r, s, _)| (*s, *r)) {
        let regions: Vec<String> = running
            .iter()
            .filter(|(r, s, _)| (*r, *s) == (rt, submission))
            .map(|(_, _, region)| region.to_string())
            .collect();
        let others = running.len() - regions.len();
        let noun = if regions.len() == 1 {
            "region"
        } else {
            "regions"
        };
        let more = match others {
            0 => String::new(),
            n => format!(" (and {} of other submissions)", plural(n as u64, "region")),
        };
        // At most eight named (a hang in a wide graph listed 80).
        let listed = match regions.len() {
            n if n > 8 => format!("{} and {} more", regions[..8].join(", "), n - 8),
            _ => regions.join(", "),
        };
        return format!(
            "during {}submission {submission}{}, {noun} {listed} running{more}{}",
            runtime(rt),
            in_flight_text(),
            unsubmitted_text()
        );
    }
    if let Some(&(rt, submission)) = in_flight.iter().max_by_key(|(r, s)| (*s, *r)) {
        let which = in_flight_text();
        let state = if which.is_empty() {
            "no region running"
        } else {
            "none with a region running"
        };
        return format!(
            "during {}submission {submission}{which}, {state}{}",
            runtime(rt),
            unsubmitted_text()
        );
    }
    format!(
        "after {}{}",
        plural(submissions, "submission"),
        unsubmitted_text()
    )
}

/// Submission numbers as runs (`1-4,6`), at most five runs: the first three, `...`, the
/// last two (a killed lossy trace listed seventeen).
fn bounded_runs(ids: &[u64]) -> String {
    let runs = crate::units::id_runs(ids);
    let parts: Vec<&str> = runs.split(',').collect();
    if parts.len() <= 5 {
        return runs;
    }
    format!(
        "{},...,{}",
        parts[..3].join(","),
        parts[parts.len() - 2..].join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_capture::schema::{PreparedId, RegionIndex, RegionStarted, SubmissionDone, Submit};

    fn submit(n: u64) -> Record {
        Record::Submit(Submit {
            runtime: RuntimeId(1),
            prepared: PreparedId(1),
            submission: SubmissionIndex(n),
            slot: 0,
            producers: Vec::new(),
            time_ns: n * 10,
        })
    }

    fn done(n: u64) -> Record {
        Record::SubmissionDone(SubmissionDone {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(n),
            status: Status::Ok,
            time_ns: n * 10 + 5,
        })
    }

    fn started(n: u64, region: u32) -> Record {
        Record::RegionStarted(RegionStarted {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(n),
            region: RegionIndex(region),
            time_ns: n * 10 + 1,
        })
    }

    /// Each thread's records reach the file in its own blocks: the waiting thread's block
    /// (region start, done) may be read before the submitting thread's (the submits).
    #[test]
    fn a_done_read_before_its_submit_is_not_in_flight() {
        let at_the_end = |records: &[Record]| TraceInfo::of_records(records).at_the_end();
        let records = [
            started(1, 0),
            done(1),
            started(2, 0),
            done(2),
            submit(1),
            submit(2),
        ];
        assert_eq!(at_the_end(&records), "after 2 submissions");
        // In file order, the last one still running is named.
        let records = [submit(1), submit(2), started(1, 0), done(1), started(2, 1)];
        assert_eq!(
            at_the_end(&records),
            "during submission 2, region 1 running"
        );
        // A region start read after its submission's done is not running.
        let records = [submit(1), done(1), started(1, 0), submit(2)];
        assert_eq!(
            at_the_end(&records),
            "during submission 2, no region running"
        );
    }

    /// Several submissions in flight and none with a region running are named, and a region
    /// running whose `Submit` the trace lacks is said beside what was (`info` said "no region
    /// running" beside "4 without an outcome", and left out the region `stats` and the
    /// timeline named: a fresh user's pass).
    #[test]
    fn what_was_in_flight_and_a_region_without_its_submit_are_said_at_the_end() {
        let at_the_end = |records: &[Record]| TraceInfo::of_records(records).at_the_end();
        let records = [
            submit(1),
            done(1),
            submit(2),
            submit(3),
            submit(4),
            submit(6),
        ];
        assert_eq!(
            at_the_end(&records),
            "during submission 6 (4 in flight: 2-4,6), none with a region running"
        );
        let records = [submit(1), submit(2), started(2, 1), started(3, 0)];
        assert_eq!(
            at_the_end(&records),
            "during submission 2 (2 in flight: 1-2), region 1 running; submission 3's region 0 \
             running, its Submit not in the trace"
        );
        // Every runtime's in flight, each list bounded; a wide graph's running regions too.
        let on_second = |record: Record| match record {
            Record::Submit(mut s) => {
                s.runtime = RuntimeId(2);
                Record::Submit(s)
            }
            other => other,
        };
        let mut records: Vec<Record> = (1..=40).filter(|n| n % 3 != 0).map(submit).collect();
        records.extend([on_second(submit(11)), on_second(submit(12))]);
        records.extend((0..10).map(|region| started(40, region)));
        assert_eq!(
            at_the_end(&records),
            "during submission 40 (29 in flight: runtime 1 1-2,4-5,7-8,...,37-38,40; runtime 2 \
             11-12), regions 0, 1, 2, 3, 4, 5, 6, 7 and 2 more running"
        );
        let records = [submit(1), done(1), started(2, 0), started(3, 1)];
        assert_eq!(
            at_the_end(&records),
            "after 1 submission; submission 2's region 0 and 1 more running, their Submits not \
             in the trace"
        );
    }

    /// The counts are per record, the joins the pass's: a synthetic pipeline's whole run.
    #[test]
    fn a_whole_pipeline_is_counted_and_ends_after_its_submissions() {
        let spec = crate::synthetic::PipelineSpec {
            busy_every: Some(4),
            ..crate::synthetic::PipelineSpec::ops(40)
        };
        let records: Vec<Record> = crate::synthetic::pipeline(spec).collect();
        let info = TraceInfo::of_records(&records);
        assert_eq!(info.records, records.len() as u64);
        assert_eq!(info.kinds.values().sum::<u64>(), info.records);
        assert_eq!(info.submissions, 10);
        assert_eq!((info.refused, info.refused_busy), (2, 2));
        assert!(info.in_flight.is_empty() && info.running.is_empty());
        assert_eq!(info.at_the_end(), "after 10 submissions");
        assert!(info.death().is_none());
    }

    /// One decision for `info`, `stats` and `record`: a trace closed by a trim of an
    /// incomplete recording says so (not the signal its source died of, which came after the
    /// trim's submissions); one never closed says the signal where one ended it, else where it
    /// ends, unless a recorder still writes it; a clean close of a whole run says nothing.
    #[test]
    fn how_a_trace_ends_is_one_decision() {
        let range = |from: &str| TraceRange {
            runtime: RuntimeId(1),
            start: SubmissionIndex(2),
            end: Some(SubmissionIndex(6)),
            trigger: "submissions:2..6".into(),
            trimmed_from: Some(from.into()),
            time_ns: 0,
            fault: None,
        };
        let crashed = range("sv.hrxt (incomplete: the process crashed: SIGSEGV)");
        let whole = range("w.hrxt");
        let death = || Some("crashed: SIGSEGV after 3 submissions".to_owned());
        let at = || "after 3 submissions".to_owned();
        let said = |e: Option<Ending>| e.map(|e| e.to_string());
        assert_eq!(
            said(ending(true, false, [&crashed].into_iter(), death(), at)),
            Some(
                "trimmed from an incomplete recording (the process crashed: SIGSEGV; see range)"
                    .into()
            )
        );
        assert_eq!(ending(true, false, [&whole].into_iter(), death(), at), None);
        assert_eq!(ending(true, false, [].into_iter(), None, at), None);
        assert_eq!(
            said(ending(false, false, [].into_iter(), death(), at)),
            death()
        );
        // Being written: where the read got to, not an end; a signal's record is one.
        assert_eq!(
            said(ending(false, true, [].into_iter(), death(), at)),
            death()
        );
        assert_eq!(
            said(ending(false, true, [].into_iter(), None, at)),
            Some("being recorded now: read after 3 submissions".into())
        );
        assert_eq!(
            said(ending(false, false, [&whole].into_iter(), None, at)),
            Some("never closed after 3 submissions".into())
        );
    }
}

#[cfg(test)]
mod close_state_tests {
    use super::*;
    use hrx_capture::schema::{LostKind, RecordsLost};

    /// A clean close whose recorder lost records (lossy mode, no submission among them)
    /// reads so in `record`'s `file` line, as the README has it; it read `clean close`
    /// beside a `lost` line of 177,026 records (a fresh user's pass, session 60). Lossy mode
    /// that lost nothing stays a clean close.
    #[test]
    fn a_clean_close_that_lost_records_says_so() {
        let state = |total: u64| {
            let mut info = TraceInfo::of_records(&[]);
            info.recovery.clean_close = true;
            info.recovery.observe(&Record::RecordsLost(RecordsLost {
                time_ns: 0,
                lossy: true,
                total,
                by_kind: vec![LostKind {
                    kind: "RegionStarted".into(),
                    records: total,
                }],
            }));
            info.close_state()
        };
        assert_eq!(
            state(7),
            "clean close, but the recorder lost 7 records while recording"
        );
        assert_eq!(state(0), "clean close");
    }
}
