//! Cutting a trace down to a range of submissions (`hrx-trace trim`), so that it still
//! replays: GFXReconstruct's trimming, done on a finished trace.
//!
//! # What the trimmed trace holds
//!
//! - Every definition, whenever it was recorded: the session, runtimes, buffers, kernels
//!   (with their code), graph operations, prepares, calibrations, quarantines and poisons
//!   (but those a submission after the range caused), losses. They are small, and a
//!   submission in the range may use any of them.
//! - Of the submissions, only those in the range (per runtime, by submission number), with
//!   everything that names them (timings, outcomes, cross waits, output digests, faults,
//!   capture fences, recorder waits). Producers and cross waits naming a submission before
//!   the range are dropped: it completed before the range started.
//! - The host writes replay places inside the range: after the last submit before the
//!   range, up to the range's last submit (replay puts a host write before the first submit
//!   recorded after it).
//! - The state snapshot: for each buffer byte range that the range *reads before it writes*,
//!   a [`BufferSnapshot`] with its contents when the range starts, and a [`TraceRange`]
//!   naming the range and the source file, and, for a runtime that injects a fault, the
//!   fault counted from the range's start (module `fault`).
//! - The source's own snapshots (a range recording, an earlier trim) inside the range, kept
//!   as they are, like its host writes there: a range starting at the source's first
//!   submission has no submission before it to derive its state at, so the source's
//!   snapshot is that state (dropping it left the range reading zeros, and failing replay).
//!   Their bytes count as written where they are, as a host write's.
//! - When the source was not read whole (cut short, its process crashed, damaged blocks
//!   skipped), the [`TraceRange`]'s `trimmed_from` says why after the source's name,
//!   `cut.hrxt (incomplete: cut short, never closed)` ([`source_note`] parts them; a trim of
//!   such a trim says it too): the trimmed trace is closed by `trim`, and would otherwise read
//!   as a whole recording. Without a field of its own, so that the format stays 1.13.
//!
//! # Read before written
//!
//! Known exactly from the trace: the range's host writes and submissions are walked in
//! replay order (host writes by time before the submit that follows them, submissions by
//! number, each graph's operations in build order, which the runtime's hazard ordering
//! respects); a byte read by an operation and not written earlier in the range is needed.
//! Bytes never written before the range need nothing (replay's fresh buffer is the
//! capture's fresh buffer).
//!
//! # Where the contents come from
//!
//! The last writer before the range of every needed byte: a host write (its contents are
//! always in the trace), an earlier snapshot, or a submission, whose written bytes are known
//! only from an output digest with contents (`HRX_TRACE_CONTENTS=1`). Writers are ordered by
//! host time (a host write cannot overlap a submission in flight that writes the same bytes:
//! the runtime answers `Busy`), submissions by their submit time, and the regions of one
//! submission that write the same bytes by region (the runtime runs them in region order;
//! their digests reach the file in any order, one ring per recording thread: a digest's
//! region is the one whose written use is its range, from the `Prepared` record). Needed
//! bytes whose last writer's contents are not in the trace (or whose last writer among a
//! submission's regions cannot be told) get a snapshot with [`Payload::Omitted`]: the
//! trimmed trace is still written, [`TrimSummary::unknown_bytes`] says how much is missing,
//! and replay says it cannot be exact.
//!
//! # Memory
//!
//! Four streaming passes over the file (plan, contents before the range, blobs to keep,
//! write). Held: the graphs' operations, per buffer the needed ranges and their last
//! writers' bytes, the distinct contents ever written to a needed buffer (a blob is stored
//! once and may be named again later), per runtime the range's own submits and host writes
//! (position and time only), and the hashes of the blobs kept; not the trace's submissions,
//! timings or other contents.

use hrx_capture::schema::{
    Access, Blob, BlobHash, BufferId, BufferSnapshot, FatalSignal, GraphId, Payload, PreparedId,
    Record, RuntimeId, SessionEnd, SubmissionIndex, TraceRange, Use,
};
use hrx_capture::{ReadError, Recovery, TraceReader, TraceWriter, Warning};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use thiserror::Error;

/// Which part of the trace to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Submissions `start..end` of each runtime (by their numbers in the trace); `end`
    /// `None`: to the last.
    Submissions {
        /// The first submission kept.
        start: u64,
        /// One past the last submission kept.
        end: Option<u64>,
    },
    /// The submissions submitted in `start_ns..end_ns` (host time since the session start).
    Time {
        /// Start of the window, ns.
        start_ns: u64,
        /// End of the window, ns; `None`: to the end.
        end_ns: Option<u64>,
    },
}

impl Selection {
    /// As the user wrote it, for [`TraceRange::trigger`].
    pub fn describe(&self) -> String {
        let end = |e: Option<u64>| e.map(|e| e.to_string()).unwrap_or_default();
        match *self {
            Selection::Submissions { start: 0, end: e } => format!("submissions:..{}", end(e)),
            Selection::Submissions { start, end: e } => format!("submissions:{start}..{}", end(e)),
            Selection::Time { start_ns, end_ns } => format!(
                "time:{}s..{}",
                start_ns as f64 / 1e9,
                end_ns
                    .map(|e| format!("{}s", e as f64 / 1e9))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Why a trim failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TrimError {
    /// The input could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The output could not be written.
    #[error("writing the trimmed trace: {0}")]
    Write(#[from] std::io::Error),
    /// The selection holds no submission of the trace.
    #[error("{selection} selects no submission: the trace holds {holds}")]
    Empty {
        /// The selection, as [`Selection::describe`] writes it.
        selection: String,
        /// What the trace holds, e.g. `submissions 1..=12 (submitted 12.3 ms to 1.71 s)`, in
        /// `--submissions`' syntax (`A..=B` includes B).
        holds: String,
        /// What reading the trace found (a cut, another trace joined on, damage): why it
        /// may hold fewer submissions than were recorded.
        warnings: Vec<Warning>,
        /// How the read went (boxed: the error stays small).
        recovery: Box<Recovery>,
    },
}

/// What a trim kept, per runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeTrim {
    /// The runtime.
    pub runtime: RuntimeId,
    /// First submission kept.
    pub start: u64,
    /// One past the last submission kept.
    pub end: u64,
    /// Snapshot ranges written.
    pub snapshots: u64,
    /// Bytes of snapshot contents.
    pub snapshot_bytes: u64,
    /// Needed bytes whose contents the trace lacks.
    pub unknown_bytes: u64,
    /// Buffers with unknown needed bytes (at most 8 listed).
    pub unknown_buffers: Vec<BufferId>,
}

/// What a trim wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrimSummary {
    /// The runtimes with submissions in the range.
    pub runtimes: Vec<RuntimeTrim>,
    /// Records read from the source (one pass).
    pub records_in: u64,
    /// Records written: those kept from the source, and the trim's own (its
    /// [`TraceRange`]s, derived snapshots and their blobs, the [`SessionEnd`]).
    pub records_out: u64,
    /// Records of the source written (at most `records_in`).
    pub records_kept: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// What reading the source found (damage skipped, unknown block kinds), as every
    /// reader of it would warn.
    pub source_warnings: Vec<Warning>,
    /// How much of the source was read.
    pub source_recovery: Recovery,
    /// Why the source was not a whole recording, as the trimmed trace says it after its
    /// source's name ([`source_note`]); `None` for a whole source.
    pub source_incomplete: Option<String>,
    /// Contents the kept records refer to (kernel code, the range's host writes, digests,
    /// snapshots) that the source does not hold (a damaged block skipped): the trimmed trace
    /// lacks them too, and does not replay whole.
    pub missing_blobs: u64,
}

/// What separates a source's name from why it was incomplete in [`TraceRange::trimmed_from`]:
/// `cut.hrxt (incomplete: cut short, never closed)`. The trimmed trace itself is closed
/// cleanly: this is where it says that what it was cut from was not whole.
const INCOMPLETE: &str = hrx_capture::TRIMMED_FROM_INCOMPLETE;

/// Splits a [`TraceRange::trimmed_from`] into the source's name and, when the source was not
/// read whole (cut short, crashed, damaged), why: `("cut.hrxt", Some("cut short, never
/// closed"))`.
pub fn source_note(trimmed_from: &str) -> (&str, Option<&str>) {
    match trimmed_from
        .rsplit_once(INCOMPLETE)
        .and_then(|(name, rest)| Some((name, rest.strip_suffix(')')?)))
    {
        Some((name, why)) => (name, Some(why)),
        None => (trimmed_from, None),
    }
}

/// Why a source read with `recovery` was not a whole recording, in `info`'s words: the
/// process's death when it died of `fatal` before closing its trace, else how the trace
/// ends; `inherited`: what a trimmed source says of its own source. `None` when whole.
fn incomplete(
    recovery: &Recovery,
    fatal: Option<FatalSignal>,
    inherited: Option<String>,
) -> Option<String> {
    if !recovery.closed {
        return Some(match fatal {
            Some(fatal) if fatal.describe().starts_with("crashed") => {
                format!("the process {}", fatal.describe())
            }
            Some(fatal) => format!("the process was {}", fatal.describe()),
            None => "cut short, never closed".to_owned(),
        });
    }
    // A trim of an incomplete recording is whole as a file: what it says of its source is
    // the reason.
    if !recovery.file_is_whole() {
        return Some(recovery.end().to_owned());
    }
    inherited
}

impl TrimSummary {
    /// Needed bytes whose contents the source lacked, all runtimes.
    pub fn unknown_bytes(&self) -> u64 {
        self.runtimes.iter().map(|r| r.unknown_bytes).sum()
    }
}

type Key = (RuntimeId, BufferId);

/// The source's snapshot records a runtime's range keeps.
#[derive(Default)]
struct Carried {
    snapshots: u64,
    snapshot_bytes: u64,
    unknown_bytes: u64,
    unknown_buffers: Vec<BufferId>,
}

/// Sorted, disjoint half-open byte ranges.
#[derive(Clone, Debug, Default)]
struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    fn add(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut placed = false;
        for &(a, b) in &self.0 {
            if b < s {
                out.push((a, b));
            } else if e < a {
                if !placed {
                    out.push((s, e));
                    placed = true;
                }
                out.push((a, b));
            } else {
                s = s.min(a);
                e = e.max(b);
            }
        }
        if !placed {
            out.push((s, e));
        }
        out.sort_unstable();
        self.0 = out;
    }

    /// The parts of `start..end` not in the set.
    fn missing(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        for &(a, b) in &self.0 {
            if b <= at {
                continue;
            }
            if a >= end {
                break;
            }
            if a > at {
                out.push((at, a));
            }
            at = at.max(b);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }
}

/// Per runtime, what pass 1 learns.
#[derive(Default)]
struct RuntimePass {
    /// Submit times: the latest before the range, the range's last.
    before_ns: Option<(u64, u64)>,
    /// The earliest submit time after the range.
    next_ns: Option<u64>,
    first: Option<u64>,
    last: Option<(u64, u64)>,
    /// The range's submits: (number, prepared, time).
    submits: Vec<(u64, PreparedId, u64)>,
    /// Host writes that may be in the range: (time, buffer, start, end).
    writes: Vec<(u64, BufferId, u64, u64)>,
    /// Every submission number seen, as (lowest, highest), and their times.
    seen: Option<(u64, u64)>,
    seen_ns: Option<(u64, u64)>,
    /// Submits read (fewer than the numbers seen span where some were lost or damaged).
    submits_read: u64,
}

impl RuntimePass {
    /// Bytes set at `time_ns` (a host write, a snapshot of the source), kept when they may
    /// be in the range: not before the latest submit before it.
    fn note_write(&mut self, time_ns: u64, buffer: BufferId, offset: u64, len: u64) {
        if self.before_ns.is_none_or(|(_, t)| time_ns > t) {
            self.writes
                .push((time_ns, buffer, offset, offset.saturating_add(len)));
        }
    }
}

/// The range of one runtime, fixed after pass 1.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: u64,
    end: u64,
    /// Host writes after this time (and up to `last_ns`) are in the range.
    after_ns: Option<u64>,
    /// The range's last submit time; `None` when the range runs to the trace's end.
    last_ns: Option<u64>,
    /// The first submit time after the range; `None` when the range runs to the end.
    next_ns: Option<u64>,
}

/// The host time a trim keeps of records that belong to no submission (the application's
/// annotation ranges, markers and counter samples, recorder waits outside a submission): from
/// the latest submit before the range to the first submit after it, over every runtime
/// (`None`: unbounded on that side). The host work around the kept submissions, not the
/// whole trace's (a trim of 4 of 12 frames kept all 12 frames' annotations). Annotations
/// carry no submission, so this is by time and approximate for a pipelined program: work of
/// neighbouring frames in flight that falls in the window is kept, and a kept frame's output
/// read frames later (after the next submit) is not. A rule by completion times was tried:
/// a pipeline reads an output when it needs the frame's slot, not when it completes, so it
/// kept no more of the right ranges.
#[derive(Clone, Copy, Debug)]
struct HostWindow {
    after_ns: Option<u64>,
    before_ns: Option<u64>,
}

impl HostWindow {
    fn new<'a>(windows: impl Iterator<Item = &'a Window> + Clone) -> HostWindow {
        let after = windows
            .clone()
            .map(|w| w.after_ns)
            .collect::<Option<Vec<_>>>();
        let before = windows.map(|w| w.next_ns).collect::<Option<Vec<_>>>();
        HostWindow {
            after_ns: after.and_then(|a| a.into_iter().min()),
            before_ns: before.and_then(|b| b.into_iter().max()),
        }
    }

    /// Whether the span `start..=end` overlaps the window.
    fn overlaps(&self, start_ns: u64, end_ns: u64) -> bool {
        self.after_ns.is_none_or(|a| end_ns > a) && self.before_ns.is_none_or(|b| start_ns < b)
    }
}

impl Window {
    fn holds(&self, submission: SubmissionIndex) -> bool {
        (self.start..self.end).contains(&submission.0)
    }

    fn holds_time(&self, time_ns: u64) -> bool {
        self.after_ns.is_none_or(|a| time_ns > a) && self.last_ns.is_none_or(|l| time_ns <= l)
    }
}

/// The last writer of a span of needed bytes before the range.
#[derive(Clone, Debug)]
struct Span {
    start: u64,
    end: u64,
    /// The last host write or earlier snapshot: (time, bytes if known).
    host: Option<(u64, Option<Vec<u8>>)>,
    /// The last submission writing it: (number, submit time, its prepared graph).
    submission: Option<(u64, u64, PreparedId)>,
    /// The output digests with contents of the highest submission covering it: (number,
    /// per digest its whole range in the buffer and its bytes of this span). One per region
    /// of that submission writing the span, in file order, which is not their run order.
    digest: Option<(u64, Vec<Written>)>,
}

/// A digest's whole range in its buffer, and its bytes of one span.
type Written = ((u64, u64), Vec<u8>);

/// Per prepared graph, per region (in order), the ranges it writes, as its `OutputDigest`s
/// name them (one digest per written use of the region).
type RegionWrites = HashMap<(RuntimeId, PreparedId), Vec<Vec<WriteRange>>>;

/// A range a region writes: `(buffer, start, end)`.
type WriteRange = (BufferId, u64, u64);

impl Span {
    /// Splits at `at` (inside the span), keeping `self` as the left part.
    fn split_off(&mut self, at: u64) -> Span {
        let cut = (at - self.start) as usize;
        let split = |bytes: &mut Vec<u8>| bytes.split_off(cut.min(bytes.len()));
        let right = Span {
            start: at,
            end: self.end,
            host: self.host.as_mut().map(|(t, b)| (*t, b.as_mut().map(split))),
            submission: self.submission,
            digest: self.digest.as_mut().map(|(k, written)| {
                let right = written.iter_mut().map(|(r, b)| (*r, split(b))).collect();
                (*k, right)
            }),
        };
        self.end = at;
        right
    }

    /// The contents at the range's start: `None` when never written, `Some(None)` when
    /// unknown. `region_of(prepared, range)`: the one region of that graph that writes
    /// exactly `range` of this span's buffer, if only one does.
    ///
    /// Regions of one submission that write the same bytes run in region order (an edge
    /// goes from a lower region to a higher one), but their digests reach the file in any
    /// order (each recording thread has its own ring): the highest region's bytes are the
    /// submission's. When the digests' regions cannot be told apart and their bytes differ,
    /// the contents are unknown, never a guess.
    fn contents(
        &self,
        region_of: impl Fn(PreparedId, (u64, u64)) -> Option<usize>,
    ) -> Option<Option<&[u8]>> {
        match (&self.host, self.submission) {
            (None, None) => None,
            (Some((_, bytes)), None) => Some(bytes.as_deref()),
            (Some((t, bytes)), Some((_, ts, _))) if *t > ts => Some(bytes.as_deref()),
            (_, Some((k, _, prepared))) => {
                let Some((_, written)) = self.digest.as_ref().filter(|(d, _)| *d == k) else {
                    return Some(None);
                };
                let ranked: Option<Vec<usize>> = written
                    .iter()
                    .map(|(range, _)| region_of(prepared, *range))
                    .collect();
                let last: Vec<&[u8]> = match ranked {
                    Some(ranks) => {
                        let top = ranks.iter().max().copied();
                        written
                            .iter()
                            .zip(&ranks)
                            .filter(|(_, r)| Some(**r) == top)
                            .map(|((_, b), _)| b.as_slice())
                            .collect()
                    }
                    None => written.iter().map(|(_, b)| b.as_slice()).collect(),
                };
                let first = last.first().copied()?;
                Some(last.iter().all(|b| *b == first).then_some(first))
            }
        }
    }
}

/// The one region of `regions` writing exactly `buffer`'s `range`, if only one does.
fn region_writing(
    regions: Option<&Vec<Vec<WriteRange>>>,
    buffer: BufferId,
    (start, end): (u64, u64),
) -> Option<usize> {
    let mut found = regions?
        .iter()
        .enumerate()
        .filter(|(_, writes)| writes.contains(&(buffer, start, end)))
        .map(|(index, _)| index);
    let index = found.next()?;
    found.next().is_none().then_some(index)
}

/// The needed spans of one buffer, sorted and disjoint.
#[derive(Default)]
struct Shadow(Vec<Span>);

impl Shadow {
    /// Applies `f` to the spans inside `start..end`, splitting at its ends; `f` gets the
    /// span and the offset of its start into the update.
    fn update(&mut self, start: u64, end: u64, mut f: impl FnMut(&mut Span, usize)) {
        let mut i = 0;
        while i < self.0.len() {
            let (s, e) = (self.0[i].start, self.0[i].end);
            if e <= start || s >= end {
                i += 1;
                continue;
            }
            if s < start {
                let right = self.0[i].split_off(start);
                self.0.insert(i + 1, right);
                i += 1;
                continue;
            }
            if e > end {
                let right = self.0[i].split_off(end);
                self.0.insert(i + 1, right);
            }
            let span = &mut self.0[i];
            f(span, (span.start - start) as usize);
            i += 1;
        }
    }
}

fn slice(bytes: &[u8], at: usize, len: u64) -> Vec<u8> {
    bytes
        .get(at..at + len as usize)
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// Resolves a payload against the blobs held: `None` when not captured or not found.
fn payload_bytes<'a>(
    payload: &'a Payload,
    blobs: &'a HashMap<BlobHash, Vec<u8>>,
) -> Option<&'a [u8]> {
    match payload {
        Payload::Inline(bytes) => Some(bytes),
        Payload::Blob { hash, .. } => blobs.get(hash).map(Vec::as_slice),
        Payload::Omitted { .. } => None,
    }
}

/// Trims the trace `open` reads (it is opened once per pass) into `out`; `source` names it
/// in the [`TraceRange`] records.
///
/// # Errors
///
/// [`TrimError::Read`] when the source cannot be read; [`TrimError::Empty`] when the
/// selection holds no submission; [`TrimError::Write`] on a write error.
pub fn trim<R: std::io::Read, W: Write>(
    open: impl Fn() -> Result<TraceReader<R>, ReadError>,
    selection: Selection,
    source: &str,
    out: W,
) -> Result<(TrimSummary, W), TrimError> {
    // Pass 1: definitions, the range's submits and host writes.
    let mut ops: HashMap<(RuntimeId, GraphId), BTreeMap<u32, Vec<Use>>> = HashMap::new();
    let mut prepared: HashMap<(RuntimeId, PreparedId), GraphId> = HashMap::new();
    let mut region_writes: RegionWrites = HashMap::new();
    let mut passes: BTreeMap<RuntimeId, RuntimePass> = BTreeMap::new();
    let mut records_in = 0u64;
    let in_selection = |sub: u64, time_ns: u64| match selection {
        Selection::Submissions { start, end } => sub >= start && end.is_none_or(|e| sub < e),
        Selection::Time { start_ns, end_ns } => {
            time_ns >= start_ns && end_ns.is_none_or(|e| time_ns < e)
        }
    };
    let mut any_fault = false;
    let mut fatal = None;
    let mut inherited = None;
    let mut reader = open()?;
    for item in reader.by_ref() {
        let (_, record) = item?;
        records_in += 1;
        match record {
            Record::RuntimeStart(r) => any_fault |= r.fault.is_some(),
            Record::TraceRange(r) => {
                any_fault |= r.fault.is_some();
                if let Some(why) = r.trimmed_from.as_deref().and_then(|f| source_note(f).1) {
                    inherited = Some(why.to_owned());
                }
            }
            Record::FatalSignal(f) => fatal = Some(f),
            Record::GraphOp(op) => {
                ops.entry((op.runtime, op.graph))
                    .or_default()
                    .insert(op.node.0, op.uses);
            }
            Record::Prepared(p) => {
                prepared.insert((p.runtime, p.prepared), p.graph);
                let writes = p
                    .regions
                    .iter()
                    .map(|region| {
                        let writes = region.uses.iter().filter(|u| u.access != Access::Read);
                        writes.map(|u| (u.buffer, u.start, u.end)).collect()
                    })
                    .collect();
                region_writes.insert((p.runtime, p.prepared), writes);
            }
            Record::Submit(s) => {
                let pass = passes.entry(s.runtime).or_default();
                let (n, t) = (s.submission.0, s.time_ns);
                pass.seen = Some(pass.seen.map_or((n, n), |(a, b)| (a.min(n), b.max(n))));
                pass.submits_read += 1;
                pass.seen_ns = Some(pass.seen_ns.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                if in_selection(n, t) {
                    pass.first = Some(pass.first.map_or(n, |f| f.min(n)));
                    if pass.last.is_none_or(|(l, _)| n > l) {
                        pass.last = Some((n, t));
                    }
                    pass.submits.push((n, s.prepared, t));
                } else if match selection {
                    Selection::Submissions { start, .. } => n < start,
                    Selection::Time { start_ns, .. } => t < start_ns,
                } {
                    if pass.before_ns.is_none_or(|(b, _)| n > b) {
                        pass.before_ns = Some((n, t));
                    }
                } else {
                    pass.next_ns = Some(pass.next_ns.map_or(t, |x| x.min(t)));
                }
            }
            Record::HostWrite(w) => passes.entry(w.runtime).or_default().note_write(
                w.time_ns,
                w.buffer,
                w.offset,
                w.len_bytes,
            ),
            // The source's own snapshot (a range recording, a trim): one inside the range
            // is kept, and sets its bytes as a host write would.
            Record::BufferSnapshot(snap) => passes.entry(snap.runtime).or_default().note_write(
                snap.time_ns,
                snap.buffer,
                snap.offset,
                snap.len_bytes,
            ),
            _ => {}
        }
    }
    let source_recovery = *reader.recovery();
    let source_warnings = reader.warnings().to_vec();
    drop(reader);
    let source_incomplete = incomplete(&source_recovery, fatal, inherited);
    let trimmed_from = match &source_incomplete {
        Some(why) => format!("{source}{INCOMPLETE}{why})"),
        None => source.to_owned(),
    };
    let mut windows: BTreeMap<RuntimeId, Window> = BTreeMap::new();
    for (&runtime, pass) in &passes {
        let (Some(first), Some((last, last_ns))) = (pass.first, pass.last) else {
            continue;
        };
        let open_end = match selection {
            Selection::Submissions { end, .. } => {
                end.is_none_or(|e| pass.seen.is_some_and(|(_, h)| e > h))
            }
            Selection::Time { end_ns, .. } => {
                end_ns.is_none_or(|e| pass.seen_ns.is_some_and(|(_, h)| e > h))
            }
        };
        windows.insert(
            runtime,
            Window {
                start: first,
                end: last + 1,
                after_ns: pass.before_ns.map(|(_, t)| t),
                last_ns: (!open_end).then_some(last_ns),
                next_ns: if open_end { None } else { pass.next_ns },
            },
        );
    }
    if windows.is_empty() {
        let holds = passes
            .values()
            .filter_map(|p| Some((p.seen?, p.seen_ns?, p.submits_read)))
            .map(|((a, b), (ta, tb), read)| {
                // Numbers between held ones whose Submit the file lacks (lost or damaged).
                let held = match b - a + 1 {
                    span if read < span => {
                        format!("{read} of them, the others' Submit records missing; ")
                    }
                    _ => String::new(),
                };
                format!(
                    "submissions {a}..={b} ({held}submitted {} to {})",
                    crate::units::duration(ta),
                    crate::units::duration(tb)
                )
            })
            .collect::<Vec<_>>();
        return Err(TrimError::Empty {
            selection: selection.describe(),
            holds: if holds.is_empty() {
                "no submission".into()
            } else {
                holds.join(", ")
            },
            warnings: source_warnings,
            recovery: Box::new(source_recovery),
        });
    }

    // Needed bytes: read before written, walking the range in replay order.
    let mut needed: HashMap<Key, Ranges> = HashMap::new();
    for (&runtime, pass) in &mut passes {
        let Some(window) = windows.get(&runtime) else {
            continue;
        };
        pass.writes.retain(|w| window.holds_time(w.0));
        pass.writes.sort_by_key(|w| w.0);
        pass.submits.sort_by_key(|s| s.0);
        let mut written: HashMap<BufferId, Ranges> = HashMap::new();
        let mut next_write = 0;
        for &(_, prepared_id, time_ns) in &pass.submits {
            while next_write < pass.writes.len() && pass.writes[next_write].0 <= time_ns {
                let (_, buffer, s, e) = pass.writes[next_write];
                written.entry(buffer).or_default().add(s, e);
                next_write += 1;
            }
            let Some(graph) = prepared.get(&(runtime, prepared_id)) else {
                continue;
            };
            let Some(graph_ops) = ops.get(&(runtime, *graph)) else {
                continue;
            };
            for uses in graph_ops.values() {
                for u in uses.iter().filter(|u| u.access != Access::Write) {
                    let done = written.entry(u.buffer).or_default();
                    for (s, e) in done.missing(u.start, u.end) {
                        needed.entry((runtime, u.buffer)).or_default().add(s, e);
                    }
                }
                for u in uses.iter().filter(|u| u.access != Access::Read) {
                    written.entry(u.buffer).or_default().add(u.start, u.end);
                }
            }
        }
    }

    // Pass 2: the last writer of every needed byte before the range.
    let mut shadows: HashMap<Key, Shadow> = needed
        .iter()
        .map(|(key, ranges)| {
            let spans = ranges
                .0
                .iter()
                .map(|&(start, end)| Span {
                    start,
                    end,
                    host: None,
                    submission: None,
                    digest: None,
                })
                .collect();
            (*key, Shadow(spans))
        })
        .collect();
    if !shadows.is_empty() {
        let needed_buffers: HashSet<Key> = shadows.keys().copied().collect();
        // Blobs precede their references in file order: each is kept until a reference
        // shows it belongs to a buffer that is not needed.
        let mut blobs: HashMap<BlobHash, Vec<u8>> = HashMap::new();
        for item in open()? {
            let (_, record) = item?;
            match record {
                Record::Blob(blob) => {
                    blobs.insert(blob.hash, blob.bytes);
                }
                Record::HostWrite(w) => {
                    let before = windows
                        .get(&w.runtime)
                        .is_some_and(|win| win.after_ns.is_some_and(|a| w.time_ns <= a));
                    if before && needed_buffers.contains(&(w.runtime, w.buffer)) {
                        let bytes = payload_bytes(&w.contents, &blobs);
                        let shadow = shadows.get_mut(&(w.runtime, w.buffer)).expect("needed");
                        let end = w.offset.saturating_add(w.len_bytes);
                        shadow.update(w.offset, end, |span, at| {
                            if span.host.as_ref().is_none_or(|(t, _)| w.time_ns >= *t) {
                                let len = span.end - span.start;
                                span.host = Some((w.time_ns, bytes.map(|b| slice(b, at, len))));
                            }
                        });
                    }
                    // A blob is stored once however often it is written: keep those a
                    // needed buffer refers to (a later write may name it again).
                    if let Payload::Blob { hash, .. } = w.contents
                        && !needed_buffers.contains(&(w.runtime, w.buffer))
                    {
                        blobs.remove(&hash);
                    }
                }
                Record::BufferSnapshot(snap) => {
                    let before = windows
                        .get(&snap.runtime)
                        .is_some_and(|win| win.after_ns.is_some_and(|a| snap.time_ns <= a));
                    if before && let Some(shadow) = shadows.get_mut(&(snap.runtime, snap.buffer)) {
                        let bytes = payload_bytes(&snap.contents, &blobs);
                        let end = snap.offset.saturating_add(snap.len_bytes);
                        shadow.update(snap.offset, end, |span, at| {
                            if span.host.as_ref().is_none_or(|(t, _)| snap.time_ns >= *t) {
                                let len = span.end - span.start;
                                span.host = Some((snap.time_ns, bytes.map(|b| slice(b, at, len))));
                            }
                        });
                    }
                    if let Payload::Blob { hash, .. } = snap.contents
                        && !needed_buffers.contains(&(snap.runtime, snap.buffer))
                    {
                        blobs.remove(&hash);
                    }
                }
                Record::Submit(s) => {
                    let Some(win) = windows.get(&s.runtime) else {
                        continue;
                    };
                    if s.submission.0 >= win.start {
                        continue;
                    }
                    let graph = prepared.get(&(s.runtime, s.prepared));
                    let Some(graph_ops) = graph.and_then(|g| ops.get(&(s.runtime, *g))) else {
                        continue;
                    };
                    for u in graph_ops.values().flatten() {
                        if u.access == Access::Read {
                            continue;
                        }
                        if let Some(shadow) = shadows.get_mut(&(s.runtime, u.buffer)) {
                            shadow.update(u.start, u.end, |span, _| {
                                if span.submission.is_none_or(|(k, ..)| s.submission.0 > k) {
                                    span.submission = Some((s.submission.0, s.time_ns, s.prepared));
                                }
                            });
                        }
                    }
                }
                Record::OutputDigest(d) => {
                    let before = windows
                        .get(&d.runtime)
                        .is_some_and(|w| d.submission.0 < w.start);
                    if before && let Some(shadow) = shadows.get_mut(&(d.runtime, d.buffer)) {
                        let bytes = payload_bytes(&d.contents, &blobs).map(<[u8]>::to_vec);
                        if let Some(bytes) = bytes {
                            shadow.update(d.start, d.end, |span, at| {
                                let len = span.end - span.start;
                                let written = ((d.start, d.end), slice(&bytes, at, len));
                                match &mut span.digest {
                                    Some((k, all)) if *k == d.submission.0 => all.push(written),
                                    Some((k, _)) if *k > d.submission.0 => {}
                                    _ => span.digest = Some((d.submission.0, vec![written])),
                                }
                            });
                        }
                    }
                    if let Payload::Blob { hash, .. } = d.contents
                        && !needed_buffers.contains(&(d.runtime, d.buffer))
                    {
                        blobs.remove(&hash);
                    }
                }
                Record::BufferDropped(b) => {
                    // Ids are never reused; nothing in the range can need a dropped buffer.
                    let _ = b;
                }
                _ => {}
            }
        }
    }

    // Blobs the kept records refer to (kernel code, the range's contents), from pass 1's
    // knowledge of the range: decided in pass 3 as records go by would be too late, since a
    // blob precedes its references.
    let keep_blobs = referenced_blobs(&open, &windows)?;
    let starts = windows.iter().map(|(r, w)| (*r, w.start)).collect();
    let faults = fault::range_faults(&open, &starts, any_fault)?;

    // Pass 3: write.
    let mut writer = TraceWriter::new(out)?;
    let mut opened: HashSet<RuntimeId> = HashSet::new();
    let mut trims: BTreeMap<RuntimeId, RuntimeTrim> = windows
        .iter()
        .map(|(&runtime, w)| {
            (
                runtime,
                RuntimeTrim {
                    runtime,
                    start: w.start,
                    end: w.end,
                    snapshots: 0,
                    snapshot_bytes: 0,
                    unknown_bytes: 0,
                    unknown_buffers: Vec::new(),
                },
            )
        })
        .collect();
    let mut written_blobs: HashSet<BlobHash> = HashSet::new();
    let trigger = selection.describe();
    let mut open_range = |writer: &mut TraceWriter<W>,
                          runtime: RuntimeId,
                          time_ns: u64,
                          written_blobs: &mut HashSet<BlobHash>|
     -> Result<(), TrimError> {
        let Some(window) = windows.get(&runtime) else {
            return Ok(());
        };
        if !opened.insert(runtime) {
            return Ok(());
        }
        writer.write(&Record::TraceRange(TraceRange {
            runtime,
            start: SubmissionIndex(window.start),
            end: Some(SubmissionIndex(window.end)),
            trigger: trigger.clone(),
            trimmed_from: Some(trimmed_from.clone()),
            time_ns,
            fault: faults.get(&runtime).cloned(),
        }))?;
        let trim = trims.get_mut(&runtime).expect("a trim per window");
        let mut keys: Vec<&Key> = shadows.keys().filter(|k| k.0 == runtime).collect();
        keys.sort();
        for key in keys {
            for span in &shadows[key].0 {
                let region_of = |prepared, range| {
                    region_writing(region_writes.get(&(runtime, prepared)), key.1, range)
                };
                let Some(known) = span.contents(region_of) else {
                    continue;
                };
                let len_bytes = span.end - span.start;
                let (xxh3, contents) = match known {
                    Some(bytes) if bytes.len() as u64 == len_bytes => {
                        let hash = xxhash_rust::xxh3::xxh3_64(bytes);
                        let contents = if bytes.len() <= 4096 {
                            Payload::Inline(bytes.to_vec())
                        } else {
                            if written_blobs.insert(BlobHash(hash)) {
                                writer.write(&Record::Blob(Blob {
                                    hash: BlobHash(hash),
                                    bytes: bytes.to_vec(),
                                }))?;
                            }
                            Payload::Blob {
                                hash: BlobHash(hash),
                                len_bytes,
                            }
                        };
                        trim.snapshot_bytes += len_bytes;
                        (hash, contents)
                    }
                    _ => {
                        trim.unknown_bytes += len_bytes;
                        if trim.unknown_buffers.len() < 8 && !trim.unknown_buffers.contains(&key.1)
                        {
                            trim.unknown_buffers.push(key.1);
                        }
                        (0, Payload::Omitted { len_bytes })
                    }
                };
                trim.snapshots += 1;
                writer.write(&Record::BufferSnapshot(BufferSnapshot {
                    runtime,
                    buffer: key.1,
                    offset: span.start,
                    len_bytes,
                    xxh3,
                    contents,
                    time_ns,
                }))?;
            }
        }
        Ok(())
    };
    let submission_of = |record: &Record| -> Option<SubmissionIndex> {
        Some(match record {
            Record::CrossWait(r) => r.submission,
            Record::RegionTiming(r) => r.submission,
            Record::OpTiming(r) => r.timing.submission,
            Record::RegionDone(r) => r.submission,
            Record::SubmissionDone(r) => r.submission,
            Record::OutputDigest(r) => r.submission,
            Record::CaptureFence(r) => r.submission,
            Record::DigestSpan(r) => r.submission,
            Record::RegionStarted(r) => r.submission,
            Record::FaultInjected(r) => r.submission?,
            Record::RecorderWait(r) => r.submission?,
            Record::HostSpan(r) => r.submission,
            _ => return None,
        })
    };
    let host = HostWindow::new(windows.values());
    let mut carried: BTreeMap<RuntimeId, Carried> = BTreeMap::new();
    let mut records_kept = 0u64;
    let mut last_time = 0u64;
    // The runtimes' host-load counter: its samples (a runtime's start and end) are kept
    // whatever the range, as definitions are, so that a trim says the load its capture ran
    // under (a range past the start kept none, one at the start only the start's).
    let mut host_load = None;
    for item in open()? {
        let (_, mut record) = item?;
        if let Some(t) = crate::dump::host_time_ns(&record) {
            last_time = last_time.max(t);
        }
        if let Record::AnnotationName(name) = &record
            && name.text == hrx_capture::schema::HOST_LOAD_COUNTER
        {
            host_load = Some(name.name);
        }
        let runtime = record.runtime();
        let window = runtime.and_then(|r| windows.get(&r));
        let keep = match &mut record {
            Record::SessionEnd(_) | Record::TraceRange(_) => false,
            // The source's snapshot inside the range is the range's state as much as the
            // one derived above (which covers only what precedes the range's window).
            Record::BufferSnapshot(snap) => {
                let keep = window.is_some_and(|w| w.holds_time(snap.time_ns));
                if keep {
                    let carried = carried.entry(snap.runtime).or_default();
                    carried.snapshots += 1;
                    match snap.contents {
                        Payload::Omitted { .. } => {
                            carried.unknown_bytes += snap.len_bytes;
                            if !carried.unknown_buffers.contains(&snap.buffer) {
                                carried.unknown_buffers.push(snap.buffer);
                            }
                        }
                        _ => carried.snapshot_bytes += snap.len_bytes,
                    }
                }
                keep
            }
            Record::Blob(blob) => {
                keep_blobs.contains(&blob.hash) && written_blobs.insert(blob.hash)
            }
            Record::Submit(s) => {
                let keep = window.is_some_and(|w| w.holds(s.submission));
                if keep {
                    let start = window.map_or(0, |w| w.start);
                    s.producers.retain(|p| p.0 >= start);
                }
                keep
            }
            Record::CrossWait(c) => {
                window.is_some_and(|w| w.holds(c.submission) && w.holds(c.on_submission))
            }
            Record::HostWrite(w) => window.is_some_and(|win| win.holds_time(w.time_ns)),
            Record::SubmitRefused(r) => window.is_some_and(|w| w.holds_time(r.time_ns)),
            Record::FaultInjected(f) if f.submission.is_none() => {
                window.is_some_and(|w| w.holds_time(f.time_ns))
            }
            Record::RecorderWait(r) if r.submission.is_none() => {
                host.overlaps(r.start_ns, r.end_ns)
            }
            Record::AnnotationRange(a) => host.overlaps(a.start_ns, a.end_ns),
            Record::AnnotationMarker(m) => host.overlaps(m.time_ns, m.time_ns),
            Record::CounterSample(c) => {
                Some(c.name) == host_load || host.overlaps(c.time_ns, c.time_ns)
            }
            // Kept as definitions when before the range (a quarantined graph or poisoned
            // buffer is the range's state); after it, they name a submission it lacks.
            Record::Quarantine(q) => q
                .submission
                .is_none_or(|sub| window.is_none_or(|w| sub.0 < w.end)),
            Record::Poison(p) => p
                .submission
                .is_none_or(|sub| window.is_none_or(|w| sub.0 < w.end)),
            other => match submission_of(other) {
                Some(sub) => window.is_some_and(|w| w.holds(sub)),
                None => true,
            },
        };
        if !keep {
            continue;
        }
        let opens = matches!(
            record,
            Record::Submit(_)
                | Record::HostWrite(_)
                | Record::SubmitRefused(_)
                | Record::BufferSnapshot(_)
        );
        if opens && let Some(runtime) = runtime {
            let time_ns = windows.get(&runtime).and_then(|w| w.after_ns).unwrap_or(0);
            open_range(&mut writer, runtime, time_ns, &mut written_blobs)?;
        }
        writer.write(&record)?;
        records_kept += 1;
    }
    let runtimes: Vec<RuntimeId> = windows.keys().copied().collect();
    for runtime in runtimes {
        let time_ns = windows.get(&runtime).and_then(|w| w.after_ns).unwrap_or(0);
        open_range(&mut writer, runtime, time_ns, &mut written_blobs)?;
    }
    for (runtime, carried) in carried {
        let trim = trims.get_mut(&runtime).expect("a trim per window");
        trim.snapshots += carried.snapshots;
        trim.snapshot_bytes += carried.snapshot_bytes;
        trim.unknown_bytes += carried.unknown_bytes;
        for buffer in carried.unknown_buffers {
            if trim.unknown_buffers.len() < 8 && !trim.unknown_buffers.contains(&buffer) {
                trim.unknown_buffers.push(buffer);
            }
        }
    }
    let missing_blobs = keep_blobs
        .iter()
        .filter(|hash| !written_blobs.contains(hash))
        .count() as u64;
    let records_out = writer.records() + 1;
    writer.write(&Record::SessionEnd(SessionEnd {
        time_ns: last_time,
        records: writer.records(),
        dropped_records: 0,
    }))?;
    let (out, bytes_out) = writer.finish()?;
    Ok((
        TrimSummary {
            runtimes: trims.into_values().collect(),
            records_in,
            records_out,
            records_kept,
            bytes_out,
            source_warnings,
            source_recovery,
            source_incomplete,
            missing_blobs,
        },
        out,
    ))
}

/// The blobs the trimmed trace refers to: kernel code, and the contents of the range's host
/// writes and output digests (one more pass; blobs precede their references in the file).
fn referenced_blobs<R: std::io::Read>(
    open: &impl Fn() -> Result<TraceReader<R>, ReadError>,
    windows: &BTreeMap<RuntimeId, Window>,
) -> Result<HashSet<BlobHash>, TrimError> {
    let mut keep = HashSet::new();
    for item in open()? {
        let (_, record) = item?;
        let window = record.runtime().and_then(|r| windows.get(&r));
        let hash = match &record {
            Record::KernelLoaded(k) => k.code,
            Record::HostWrite(w) if window.is_some_and(|win| win.holds_time(w.time_ns)) => {
                blob_of(&w.contents)
            }
            Record::OutputDigest(d) if window.is_some_and(|w| w.holds(d.submission)) => {
                blob_of(&d.contents)
            }
            Record::BufferSnapshot(snap) if window.is_some_and(|w| w.holds_time(snap.time_ns)) => {
                blob_of(&snap.contents)
            }
            _ => None,
        };
        keep.extend(hash);
    }
    Ok(keep)
}

fn blob_of(payload: &Payload) -> Option<BlobHash> {
    match payload {
        Payload::Blob { hash, .. } => Some(*hash),
        _ => None,
    }
}

/// Opens `path` for [`trim`], with the submission-number check on.
///
/// # Errors
///
/// As [`TraceReader::open`].
pub fn open_checked(path: &Path) -> Result<TraceReader<std::fs::File>, ReadError> {
    Ok(TraceReader::open(path)?.check_submission_numbers())
}

mod fault;

#[cfg(test)]
#[path = "trim_tests.rs"]
mod tests;
