//! Streaming a trace file in chunks of submissions, so that replay holds a bounded part of
//! it at a time.
//!
//! Every chunk is a small [`Trace`] of its own: the *structure* records read so far (session
//! and runtime starts, buffers, kernels, graph operations, prepared graphs, clock
//! calibrations: bounded by the program's objects, not its submissions) followed by the
//! chunk's own records (submits, host writes, completions, digests, blobs, ...). The plan
//! (module `plan`) reads a chunk as it reads a whole trace.
//!
//! # Where a record goes
//!
//! Chunk `j` holds the submissions `j * size .. (j + 1) * size` of every runtime (chunks
//! with none are skipped; the first of a trace trimmed to a range may hold fewer); a record
//! naming a submission goes to that submission's chunk.
//!
//! Records of one submission are not contiguous in the file, and no bound on how far apart
//! they are holds: the writer empties each thread's buffer once per flush, so a worker
//! thread's completions and digests (and another thread's submits) come thousands of
//! submits after the records around them. So a first, cheap pass over the file ([`index`])
//! notes per chunk the position of the last record naming one of its submissions (one entry
//! per `size` submissions and runtime), and the replay pass hands a chunk out only once it
//! has read past that position, keeping the records of later chunks read meanwhile (what
//! is genuinely in flight in the file). No record of a handed-out chunk can then come,
//! unless the file grew between the passes: such a record is *late*, counted
//! ([`Chunker::late`]) and reported, never silently dropped from the count. A trace cut short
//! needs nothing special: the first pass saw what the second reads, and records that never
//! came are missing from their chunk as from a whole-trace replay.
//!
//! Records naming no submission: a host write, a snapshot or a buffer's release
//! (`BufferDropped`) goes to the first chunk not handed out whose last submit (by host time)
//! is not before it, so that the plan orders it among the submits as a whole-trace replay
//! does (a range resumed after `stop()` snapshots mid-trace; the replay lets go of a buffer
//! where the program did, module `execute`); others (refusals) go to the first chunk not
//! handed out. The last chunk is handed out only at the end of the file, so it gets
//! whatever follows the last submission's records.
//!
//! Chunks after the first carry a `TraceRange` record per runtime that opens at their lowest
//! submission: the plan then treats producers of earlier chunks as what happened before a
//! range (completed, not compared again). The replay itself ran them: the first pass notes
//! which submissions a later chunk names as explicit producer ([`ChunkIndex::producer_until`])
//! so that the replay keeps their completions until that chunk (a failed producer cancels
//! its consumer, as in a whole replay; module `execute`), and which a later chunk names in
//! a cross wait ([`ChunkIndex::named_until`]), so that the comparison carries what orders
//! them after an earlier failure (module `concurrent`).
//!
//! `until` is applied here (per runtime, in the order submits are read) so that it counts
//! across chunks; submissions past it are counted ([`Chunker::cut`]) and their records
//! skipped.

use hrx_capture::TraceReader;
use hrx_capture::schema::{self as s, Record, RuntimeId, SubmissionIndex};
use hrx_capture::{ReadError, Recovery, Trace};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

/// The submission a record is about, if any.
pub(crate) fn submission_of(record: &Record) -> Option<SubmissionIndex> {
    match record {
        Record::Submit(r) => Some(r.submission),
        Record::CrossWait(r) => Some(r.submission),
        Record::RegionTiming(r) => Some(r.submission),
        Record::OpTiming(r) => Some(r.timing.submission),
        Record::RegionDone(r) => Some(r.submission),
        Record::SubmissionDone(r) => Some(r.submission),
        Record::Quarantine(r) => r.submission,
        Record::Poison(r) => r.submission,
        Record::FaultInjected(r) => r.submission,
        Record::OutputDigest(r) => Some(r.submission),
        Record::CaptureFence(r) => Some(r.submission),
        Record::RegionStarted(r) => Some(r.submission),
        _ => None,
    }
}

/// Whether every chunk needs the record (it describes the program's objects).
fn structural(record: &Record) -> bool {
    matches!(
        record,
        Record::SessionStart(_)
            | Record::RuntimeStart(_)
            | Record::BufferCreated(_)
            | Record::KernelLoaded(_)
            | Record::GraphOp(_)
            | Record::Prepared(_)
            | Record::ClockCalibration(_)
            | Record::TraceRange(_)
    )
}

/// The blob a record's bytes are in, if they are out of line.
fn blob_of(record: &Record) -> Option<s::BlobHash> {
    let payload = match record {
        Record::KernelLoaded(k) => return k.code,
        Record::HostWrite(w) => &w.contents,
        Record::OutputDigest(d) => &d.contents,
        Record::BufferSnapshot(b) => &b.contents,
        _ => return None,
    };
    match payload {
        s::Payload::Blob { hash, .. } => Some(*hash),
        _ => None,
    }
}

/// Above this many bytes of blobs held at once, the report says how much replay held
/// (contents are stored once per hash in a trace, so a frame uploaded again in a later chunk
/// refers to the blob of an earlier one, which is kept until its last reference is handed
/// out: [`ChunkIndex`]'s reference counts).
pub(crate) const BLOB_NOTE_BYTES: usize = 256 << 20;

/// What the first pass over a file learns: where each chunk's records end, and which
/// submissions a later chunk names (as explicit producer, or in a cross wait).
///
/// Memory: one entry per chunk (and per chunk and runtime), whatever the file's order, and
/// one or two per submission that a later chunk names: per chunk boundary at most the
/// submissions in flight across it and the completions the capture's program held across
/// it to name later.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChunkIndex {
    size: u64,
    /// Per chunk: the position (0-based, in records read) of the last record naming one of
    /// its submissions.
    last_record: BTreeMap<u64, u64>,
    /// Per runtime and chunk: the host time of its latest submit, in ns.
    last_submit_ns: BTreeMap<(RuntimeId, u64), u64>,
    /// Per submission that a later chunk's submission names as explicit producer
    /// (`submit_after`): the last chunk naming it.
    producer_until: HashMap<(RuntimeId, SubmissionIndex), u64>,
    /// Per submission that a later chunk's submission names, as explicit producer or in a
    /// cross wait: the last chunk naming it.
    named_until: HashMap<(RuntimeId, SubmissionIndex), u64>,
    /// What the first pass read: the reader's warnings and how the file ends.
    reading: crate::Reading,
    /// Output digests that carry their bytes (recorded with contents): what a float
    /// tolerance compares.
    outputs_with_contents: u64,
    /// Entries of the kernels loaded on a GPU, by runtime and kernel id.
    gpu_kernels: HashMap<(RuntimeId, s::KernelId), String>,
    /// Entries of the GPU kernels some graph dispatches (what `--inject-slowdown` may name).
    gpu_entries: std::collections::BTreeSet<String>,
    /// The GPU-local buffers of each runtime, and the buffers its output digests name (one
    /// entry per buffer): what [`ChunkIndex::digests_all`] reads.
    gpu_local: HashSet<(RuntimeId, s::BufferId)>,
    digested: HashSet<(RuntimeId, s::BufferId)>,
    /// Per blob: how many records that are handed to one chunk (not the structure) refer to
    /// it, or [`PINNED`] where a structural record does (every chunk needs it). The
    /// [`Chunker`] drops a blob once the chunks handed out took every reference: a blob is
    /// never dropped before a chunk that needs it (a cache emptied by size dropped the
    /// blobs of the chunk being filled, and a good trace of 64 distinct frames, 307 MB,
    /// read "blob ... is not in the trace (damaged trace?)").
    blob_refs: HashMap<s::BlobHash, u64>,
    /// The trace is a trim of an incomplete recording (its `TraceRange` says so): each
    /// chunk's plan says it, and the whole replay is then not complete.
    trimmed_incomplete: bool,
    /// Per chunk: the bytes of the blobs read while its submissions were the next to come
    /// (a frame's contents are written before the submission that uploads them), and its
    /// submits: what a chunk makes replay hold, for [`ChunkIndex::size_within`].
    blob_bytes: BTreeMap<u64, (u64, u64)>,
    /// Per chunk: its region and operation timings, for [`ChunkIndex::size_within`].
    timings: BTreeMap<u64, u64>,
    /// Each of the recording's `TraceRange` records as the file last states it, by runtime
    /// and start (its end is what a chunk takes from it): a capture range's end is recorded when the run ends, so a chunk read
    /// before then is handed the range closed, as a whole-trace replay reads it (an early
    /// chunk said it open, a later one closed: two notes, a break-it pass).
    ranges: HashMap<(RuntimeId, SubmissionIndex), s::TraceRange>,
    /// The capture's host load per CPU: the counter's name and its highest sample (a
    /// chunk's plan sees only the samples in its chunk).
    host_load: (Option<s::AnnotationId>, Option<f64>),
    /// Per runtime, the lowest-numbered submission that failed by a sticky
    /// device loss, and its error: how often a replay may run it is decided before its
    /// first chunk (`plan::RuntimePlan::runs`).
    sticky_losses: HashMap<RuntimeId, (SubmissionIndex, String)>,
    /// Every runtime the file starts, with whether its `RuntimeStart` names an injected
    /// fault: with [`ChunkIndex::ranges`], whether its replay may run on a GPU, for the order
    /// runtimes are replayed in ([`ChunkIndex::order`]).
    runtimes: BTreeMap<RuntimeId, bool>,
}

/// A blob reference count that never falls to 0: a structural record refers to it.
const PINNED: u64 = u64::MAX;

impl ChunkIndex {
    /// The chunk of a submission.
    fn chunk_of(&self, submission: SubmissionIndex) -> u64 {
        submission.0 / self.size
    }

    /// Submissions per chunk.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// A smaller chunk size where a chunk of this one holds more than `budget` bytes of
    /// blobs (distinct frames, each stored once: a chunk of 2,048 distinct 3840x2160 frames
    /// would hold 50 GB), in proportion to the heaviest chunk; `None` where every chunk fits
    /// or chunks are single submissions already. Contents referred to again by a later chunk
    /// are kept until then whatever the size (a program cycling through 30 photographs
    /// holds the 30).
    ///
    /// Likewise where a chunk holds more than `timings` region and operation timings (a
    /// graph of many regions), in proportion to the chunk holding most.
    pub(crate) fn size_within(&self, budget: u64, timings: u64) -> Option<u64> {
        let by_timings = (self.timings.values().max().copied())
            .filter(|&most| most > timings && self.size > 1)
            .map(|most| {
                let size = u128::from(self.size) * u128::from(timings) / u128::from(most);
                (size as u64).clamp(1, self.size - 1)
            });
        let by_blobs = || {
            let &(bytes, submits) = self.blob_bytes.values().max_by_key(|(bytes, _)| *bytes)?;
            // Replay holds a chunk and the one before it: where the whole trace's contents
            // fit twice the budget, smaller chunks hold no less (contents referred to again
            // are kept), and cost a pass and a drained replay per chunk more (a
            // 30-photograph trace of 317 MiB peaked 20% higher in chunks of 32; second
            // break-it pass).
            let total: u64 = self.blob_bytes.values().map(|(bytes, _)| bytes).sum();
            if bytes <= budget || self.size == 1 || total <= budget.saturating_mul(2) {
                return None;
            }
            // The heaviest chunk's bytes per submission, to `budget`.
            let size = u128::from(submits.max(1)) * u128::from(budget) / u128::from(bytes);
            Some((size as u64).clamp(1, self.size - 1))
        };
        match (by_blobs(), by_timings) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a chunk of this size holds more than `timings` region and operation
    /// timings (the reason a replay's chunks were made smaller, where they were).
    pub(crate) fn timings_past(&self, timings: u64) -> bool {
        self.timings.values().any(|&n| n > timings)
    }

    /// Notes that chunk `chunk` names `submission` of `runtime`, of an earlier chunk.
    fn named_later(&mut self, runtime: RuntimeId, submission: SubmissionIndex, chunk: u64) {
        let until = self.named_until.entry((runtime, submission)).or_default();
        *until = (*until).max(chunk);
    }
}

/// The first pass: reads `reader` to its end (or its first read error: the replay pass
/// reports it) and notes where each chunk of `size` submissions ends.
pub(crate) fn index<R: Read>(mut reader: TraceReader<R>, size: u64) -> ChunkIndex {
    let mut index = ChunkIndex {
        size: size.max(1),
        ..ChunkIndex::default()
    };
    // The chunk whose submissions come next: where the blobs read now are first needed.
    let mut next_chunk = index.chunk_of(SubmissionIndex(1));
    for (position, item) in (0u64..).zip(reader.by_ref()) {
        let Ok((_, record)) = item else { break };
        if let Record::Blob(b) = &record {
            index.blob_bytes.entry(next_chunk).or_default().0 += b.bytes.len() as u64;
        }
        if let Record::Submit(submit) = &record {
            let chunk = index.chunk_of(submit.submission);
            index.blob_bytes.entry(chunk).or_default().1 += 1;
            next_chunk = index.chunk_of(SubmissionIndex(submit.submission.0 + 1));
        }
        if let Record::OutputDigest(d) = &record
            && !matches!(d.contents, s::Payload::Omitted { .. })
        {
            index.outputs_with_contents += 1;
        }
        if let Record::RegionTiming(s::RegionTiming { submission, .. })
        | Record::OpTiming(s::OpTiming {
            timing: s::RegionTiming { submission, .. },
            ..
        }) = &record
        {
            *index
                .timings
                .entry(index.chunk_of(*submission))
                .or_default() += 1;
        }
        if let Record::BufferCreated(b) = &record
            && b.placement == s::Placement::GpuLocal
        {
            index.gpu_local.insert((b.runtime, b.buffer));
        }
        if let Record::OutputDigest(d) = &record {
            index.digested.insert((d.runtime, d.buffer));
        }
        if crate::plan::trimmed_from_incomplete(&record).is_some() {
            index.trimmed_incomplete = true;
        }
        crate::plan::host_load_sample(&mut index.host_load, &record);
        if let Record::RuntimeStart(start) = &record {
            index.runtimes.insert(start.runtime, start.fault.is_some());
        }
        if let Record::TraceRange(r) = &record {
            index.ranges.insert((r.runtime, r.start), r.clone());
        }
        if let Record::SubmissionDone(s::SubmissionDone {
            runtime,
            submission,
            status: s::Status::Failed { error },
            ..
        })
        | Record::RegionDone(s::RegionDone {
            runtime,
            submission,
            status: s::Status::Failed { error },
            ..
        }) = &record
            && hrx::DeviceCall::is_sticky_loss(error)
        {
            // The lowest-numbered: `--until` keeps submissions 1 to N.
            let loss = (index.sticky_losses)
                .entry(*runtime)
                .or_insert_with(|| (*submission, error.clone()));
            if *submission < loss.0 {
                *loss = (*submission, error.clone());
            }
        }
        if let Some(hash) = blob_of(&record) {
            let refs = index.blob_refs.entry(hash).or_default();
            *refs = if structural(&record) {
                PINNED
            } else {
                refs.saturating_add(1)
            };
        }
        if let Record::KernelLoaded(k) = &record
            && k.engine == s::Engine::Gpu
        {
            index
                .gpu_kernels
                .insert((k.runtime, k.kernel), k.entry.clone());
        }
        if let Record::GraphOp(op) = &record
            && let s::OpKind::Kernel { kernel } = op.op
            && let Some(entry) = index.gpu_kernels.get(&(op.runtime, kernel))
            && !index.gpu_entries.contains(entry)
        {
            index.gpu_entries.insert(entry.clone());
        }
        let (Some(runtime), Some(submission)) = (record.runtime(), submission_of(&record)) else {
            continue;
        };
        let chunk = index.chunk_of(submission);
        index.last_record.insert(chunk, position);
        if let Record::Submit(submit) = &record {
            let t = index
                .last_submit_ns
                .entry((runtime, chunk))
                .or_insert(submit.time_ns);
            *t = (*t).max(submit.time_ns);
            for &producer in &submit.producers {
                if index.chunk_of(producer) < chunk {
                    let until = index.producer_until.entry((runtime, producer)).or_default();
                    *until = (*until).max(chunk);
                    index.named_later(runtime, producer, chunk);
                }
            }
        }
        if let Record::CrossWait(wait) = &record
            && index.chunk_of(wait.on_submission) < chunk
        {
            index.named_later(runtime, wait.on_submission, chunk);
        }
    }
    index.reading = crate::Reading {
        warnings: reader.warnings().to_vec(),
        recovery: *reader.recovery(),
    };
    index
}

impl ChunkIndex {
    /// The lowest-numbered submission of `runtime` that failed by a sticky device loss, and
    /// its error, among those `until` keeps (as a whole-trace replay's plan holds them: a
    /// loss past `--until` is not replayed, and left the streamed replay running once; a
    /// break-it pass).
    pub(crate) fn sticky_loss(
        &self,
        runtime: RuntimeId,
        until: Option<u64>,
    ) -> Option<&(SubmissionIndex, String)> {
        (self.sticky_losses.get(&runtime)).filter(|(s, _)| until.is_none_or(|n| s.0 <= n))
    }

    /// The order the file's runtimes are replayed in ([`crate::plan::Order`]), as a whole
    /// replay's plan decides it: whether each lost its GPU to a sticky error within `until`
    /// and may replay on a GPU (`plan::RuntimePlan::loses_the_gpu`).
    pub(crate) fn order(&self, options: &crate::ReplayOptions) -> crate::plan::Order {
        crate::plan::Order::of(self.runtimes.iter().map(|(&runtime, &fault)| {
            // The earliest range naming the run's fault, as the plan takes it.
            let range_fault = (self.ranges.iter())
                .filter(|((r, _), range)| *r == runtime && range.fault.is_some())
                .min_by_key(|((_, start), _)| *start)
                .and_then(|(_, range)| range.fault.as_ref());
            let loses = self.sticky_loss(runtime, options.until).is_some()
                && !crate::plan::replays_on_sim(options, fault, range_fault);
            (runtime, loses)
        }))
    }

    /// What the first pass read (the file's warnings and recovery, losses included), known
    /// before anything is replayed.
    pub(crate) fn reading(&self) -> &crate::Reading {
        &self.reading
    }

    /// Entries of the GPU kernels the trace's graphs dispatch.
    pub(crate) fn gpu_entries(&self) -> impl Iterator<Item = &str> {
        self.gpu_entries.iter().map(String::as_str)
    }

    /// Whether the capture digested a GPU-local range of `runtime` anywhere in the file
    /// (`HRX_TRACE_DIGESTS=all`): what each chunk's replay digests and compares
    /// ([`crate::plan::RuntimePlan::digests_all`]), whatever that chunk's own submissions
    /// wrote. A chunk alone would say "host-observable outputs only" where its submissions
    /// happen to write host-visible memory only, and the replay runtime, opened on the first
    /// chunk, would then digest no GPU-local range of a later chunk: every one captured
    /// would read "not written at replay".
    pub(crate) fn digests_all(&self, runtime: RuntimeId) -> bool {
        (self.digested.iter())
            .any(|&(r, buffer)| r == runtime && self.gpu_local.contains(&(r, buffer)))
    }

    /// The capture's highest host load per CPU, where it recorded one.
    pub(crate) fn host_load_per_cpu(&self) -> Option<f64> {
        self.host_load.1
    }

    /// Whether the trace is a trim of an incomplete recording.
    pub(crate) fn trimmed_incomplete(&self) -> bool {
        self.trimmed_incomplete
    }

    /// Whether any output digest carries its bytes (a tolerance has something to compare).
    pub(crate) fn has_output_contents(&self) -> bool {
        self.outputs_with_contents > 0
    }

    /// The last chunk whose submissions name `submission` of `runtime` as explicit producer,
    /// where that is a chunk after its own.
    pub(crate) fn producer_until(
        &self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
    ) -> Option<u64> {
        self.producer_until.get(&(runtime, submission)).copied()
    }

    /// The last chunk whose submissions name `submission` of `runtime` as explicit producer
    /// or in a cross wait, where that is a chunk after its own.
    pub(crate) fn named_until(
        &self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
    ) -> Option<u64> {
        self.named_until.get(&(runtime, submission)).copied()
    }
}

/// What `until` left out of one runtime.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cut {
    /// Submissions left out.
    pub count: u64,
    /// The lowest and highest submission numbers left out.
    pub first: u64,
    pub last: u64,
}

/// Per runtime: what `until` has cut.
#[derive(Default)]
struct Runtime {
    /// Submissions cut by `until`: the first of them (records from it on are skipped).
    cut_from: Option<SubmissionIndex>,
}

/// Splits a trace into chunks of submissions, as its [`ChunkIndex`] says where they end.
pub(crate) struct Chunker<R> {
    reader: TraceReader<R>,
    index: ChunkIndex,
    until: Option<u64>,
    structure: Vec<Record>,
    /// Blobs read and still referred to by a record not handed out yet.
    blobs: HashMap<s::BlobHash, s::Blob>,
    blob_bytes: usize,
    /// The most bytes of blobs held at once.
    pub blob_bytes_peak: usize,
    runtimes: BTreeMap<RuntimeId, Runtime>,
    /// Records read, per chunk not handed out yet.
    waiting: BTreeMap<u64, Vec<Record>>,
    /// Records read so far.
    position: u64,
    /// The last chunk handed out.
    handed_out: Option<u64>,
    chunks: u64,
    done: bool,
    /// Records that came after their submission's chunk was handed out (the file grew
    /// after the first pass).
    pub late: u64,
    /// Submissions left out by `until`, per runtime.
    pub cut: BTreeMap<RuntimeId, Cut>,
    /// Where the file ends for each runtime, if it was never closed before some of its
    /// submitting threads' last records were written ([`crate::plan::ends`]): records of
    /// submissions from there on are left out, as a whole-trace replay leaves them out.
    ends: BTreeMap<RuntimeId, SubmissionIndex>,
}

impl<R: Read> Chunker<R> {
    /// A chunker over `reader`, whose chunks `index` (the first pass over the same file)
    /// located.
    pub fn new(reader: TraceReader<R>, index: ChunkIndex, until: Option<u64>) -> Chunker<R> {
        let ends = crate::plan::ends(&index.reading().warnings);
        Chunker {
            ends,
            reader,
            index,
            until,
            structure: Vec::new(),
            blobs: HashMap::new(),
            blob_bytes: 0,
            blob_bytes_peak: 0,
            runtimes: BTreeMap::new(),
            waiting: BTreeMap::new(),
            position: 0,
            handed_out: None,
            chunks: 0,
            done: false,
            late: 0,
            cut: BTreeMap::new(),
        }
    }

    /// How the file read so far was recovered (complete once every chunk was read).
    pub fn recovery(&self) -> &Recovery {
        self.reader.recovery()
    }

    /// Chunks handed out so far.
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// The chunk handed out last (its number: its submissions are `number * size ..`).
    pub fn handed_out(&self) -> Option<u64> {
        self.handed_out
    }

    /// The first pass's index.
    pub fn index(&self) -> &ChunkIndex {
        &self.index
    }

    /// The first chunk not handed out.
    fn current(&self) -> u64 {
        match (self.index.last_record.keys().next(), self.handed_out) {
            (Some(&chunk), _) => chunk,
            (None, Some(h)) => h + 1,
            (None, None) => 0,
        }
    }

    /// Takes one record read from the file.
    fn read(&mut self, record: Record) {
        if let Record::Blob(b) = record {
            // Kept aside, handed to every chunk that refers to it, until the last one has
            // it (one the first pass saw no reference to is never needed).
            if self.index.blob_refs.get(&b.hash).is_none_or(|&n| n > 0) {
                let len = b.bytes.len();
                if let Some(old) = self.blobs.insert(b.hash, b) {
                    self.blob_bytes -= old.bytes.len();
                }
                self.blob_bytes += len;
                self.blob_bytes_peak = self.blob_bytes_peak.max(self.blob_bytes);
            }
            return;
        }
        if structural(&record) {
            // The range's end as the file last states it; the rest as this record has it
            // (the record at a range's start carries its fault count, the closing one not).
            let record = match record {
                Record::TraceRange(mut r) => {
                    if let Some(last) = self.index.ranges.get(&(r.runtime, r.start)) {
                        r.end = last.end;
                    }
                    Record::TraceRange(r)
                }
                other => other,
            };
            self.structure.push(record);
            return;
        }
        if crate::plan::past_the_end(&self.ends, &record) {
            return;
        }
        let chunk = match (record.runtime(), submission_of(&record)) {
            (Some(runtime), Some(submission)) => {
                let rt = self.runtimes.entry(runtime).or_default();
                // By its number in the whole recording, which a range or trim keeps (it
                // counted the Submits held: `--until 2` of a trim holding 4..=7 kept 4 and 5).
                if let Record::Submit(_) = record
                    && self.until.is_some_and(|n| submission.0 > n)
                {
                    rt.cut_from = Some(rt.cut_from.map_or(submission, |c| c.min(submission)));
                    let cut = self.cut.entry(runtime).or_default();
                    cut.first = match cut.count {
                        0 => submission.0,
                        _ => cut.first.min(submission.0),
                    };
                    cut.count += 1;
                    cut.last = cut.last.max(submission.0);
                    return;
                }
                if rt.cut_from.is_some_and(|c| submission >= c) {
                    return;
                }
                let chunk = self.index.chunk_of(submission);
                if self.handed_out.is_some_and(|h| chunk <= h) {
                    self.late += 1;
                    return;
                }
                // A chunk the first pass did not see (the file grew): it ends with the file.
                self.index.last_record.entry(chunk).or_insert(u64::MAX);
                chunk
            }
            _ => self.chunk_of_unnamed(&record),
        };
        self.waiting.entry(chunk).or_default().push(record);
    }

    /// The chunk of a record that names no submission.
    fn chunk_of_unnamed(&self, record: &Record) -> u64 {
        let current = self.current();
        let (runtime, time_ns) = match record {
            Record::HostWrite(w) => (w.runtime, w.time_ns),
            Record::BufferSnapshot(s) => (s.runtime, s.time_ns),
            Record::BufferDropped(d) => (d.runtime, d.time_ns),
            _ => return current,
        };
        // Before the first submit of this runtime at or after it, else after its last.
        let mut latest = None;
        for (&(_, chunk), &ns) in self
            .index
            .last_submit_ns
            .range((runtime, current)..=(runtime, u64::MAX))
        {
            if ns >= time_ns {
                return chunk;
            }
            latest = Some(chunk);
        }
        latest.unwrap_or(current)
    }

    /// The next chunk: `None` once the file is read.
    ///
    /// # Errors
    /// A read error mid-file.
    pub fn next_chunk(&mut self) -> Result<Option<Trace>, ReadError> {
        loop {
            let first = self.index.last_record.first_key_value();
            match first {
                // The last chunk waits for the end of the file (what follows its records).
                Some((&chunk, &last))
                    if self.done || (self.position > last && self.index.last_record.len() > 1) =>
                {
                    return Ok(Some(self.hand_out(chunk)));
                }
                None if self.done => {
                    // Records naming no submission after every chunk was handed out.
                    let chunk = self.waiting.keys().next().copied();
                    return Ok(chunk.map(|chunk| self.hand_out(chunk)));
                }
                _ => {}
            }
            match self.reader.next() {
                Some(item) => {
                    let (_, record) = item?;
                    self.position += 1;
                    self.read(record);
                }
                None => self.done = true,
            }
        }
    }

    /// Hands chunk `chunk` out.
    fn hand_out(&mut self, chunk: u64) -> Trace {
        self.index.last_record.remove(&chunk);
        let first = self.chunks == 0;
        self.handed_out = Some(chunk);
        self.chunks += 1;
        let mut mine = self.waiting.remove(&chunk).unwrap_or_default();
        // Records of submissions `until` cut after they were read.
        mine.retain(|r| match (r.runtime(), submission_of(r)) {
            (Some(runtime), Some(submission)) => self
                .runtimes
                .get(&runtime)
                .and_then(|rt| rt.cut_from)
                .is_none_or(|c| submission < c),
            _ => true,
        });
        let mut records = self.structure.clone();
        // The blobs the chunk refers to.
        let mut referenced: Vec<s::BlobHash> =
            records.iter().chain(&mine).filter_map(blob_of).collect();
        referenced.sort_unstable_by_key(|h| h.0);
        referenced.dedup();
        // The chunk's own references are taken: a blob no later record refers to leaves the
        // cache, moved into the chunk (not copied: a chunk of distinct frames would hold
        // each twice).
        let mut last_use = HashSet::new();
        for hash in mine.iter().filter_map(blob_of) {
            let Some(refs) = self.index.blob_refs.get_mut(&hash) else {
                continue;
            };
            if *refs == PINNED {
                continue;
            }
            *refs = refs.saturating_sub(1);
            if *refs == 0 {
                last_use.insert(hash);
            }
        }
        for hash in referenced {
            let blob = if last_use.contains(&hash) {
                self.blobs.remove(&hash).inspect(|blob| {
                    self.blob_bytes -= blob.bytes.len();
                })
            } else {
                self.blobs.get(&hash).cloned()
            };
            records.extend(blob.map(Record::Blob));
        }
        // Chunks after the first open a range at their lowest submission.
        if !first {
            let mut lowest: BTreeMap<RuntimeId, SubmissionIndex> = BTreeMap::new();
            for record in &mine {
                if let Record::Submit(submit) = record {
                    let low = lowest.entry(submit.runtime).or_insert(submit.submission);
                    *low = (*low).min(submit.submission);
                }
            }
            for (runtime, start) in lowest {
                records.push(Record::TraceRange(s::TraceRange {
                    runtime,
                    start,
                    end: None,
                    trigger: CHUNK_TRIGGER.into(),
                    trimmed_from: None,
                    time_ns: 0,
                    fault: None,
                }));
            }
        }
        records.append(&mut mine);
        Trace {
            header: *self.reader.header(),
            records,
            warnings: Vec::new(),
            // Read whole as far as the chunk goes; the file's own recovery is reported once,
            // at the end.
            recovery: Recovery {
                clean_close: true,
                closed: true,
                ..Recovery::default()
            },
        }
    }
}

/// The trigger of the `TraceRange` a chunk after the first opens at its lowest submission:
/// the replay's own cut, never said as the trace's (a fresh-user pass: every replay of more
/// than 2,048 submissions noted "the trace is a range: submissions 2048..(to the end)").
pub(crate) const CHUNK_TRIGGER: &str = "replay chunk";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ReplayError;

    /// The cross waits of each submission of a trace's plan.
    type Waits = BTreeMap<u64, Vec<u64>>;

    fn waits(trace: &Trace) -> Waits {
        let plan = crate::plan::plan(trace, None).expect("plan");
        let [rp] = &plan.runtimes[..] else {
            panic!("one runtime");
        };
        rp.cross_waits
            .iter()
            .map(|(c, p)| {
                let mut p: Vec<u64> = p.iter().map(|p| p.0).collect();
                p.sort_unstable();
                (c.0, p)
            })
            .collect()
    }

    /// The hazards workload's fixture: submission 3 waits on 1, and 4 on 1 and 3. In chunks
    /// of 1 or 2 submissions, each wait's producer is in an earlier chunk, whose `Submit`
    /// the consumer's chunk lacks. Each chunk's plan keeps its submissions' waits, those on
    /// an earlier chunk too (the join hands them over as before the chunk's range), as the
    /// whole trace's plan does.
    #[test]
    fn a_chunk_keeps_its_waits_on_submissions_of_earlier_chunks() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hazards-v1.0.hrxt");
        let bytes = std::fs::read(path).expect("the hazards fixture");
        let whole = waits(&Trace::from_bytes(&bytes).unwrap());
        let expected: Waits = [(3, vec![1; 3]), (4, [vec![1; 5], vec![3; 3]].concat())].into();
        assert_eq!(whole, expected);
        for size in [1, 2] {
            let index = index(TraceReader::new(&bytes[..]).unwrap(), size);
            let mut chunker = Chunker::new(TraceReader::new(&bytes[..]).unwrap(), index, None);
            let mut chunked = Waits::new();
            let mut across = 0;
            while let Some(chunk) = chunker.next_chunk().unwrap() {
                let mine = waits(&chunk);
                for (consumer, producers) in &mine {
                    assert!(chunked.insert(*consumer, producers.clone()).is_none());
                    across += producers
                        .iter()
                        .filter(|p| *p / size < consumer / size)
                        .count();
                }
            }
            assert_eq!(chunked, whole, "chunks of {size}");
            assert_eq!(across, 11, "chunks of {size}");
        }
    }

    /// The explicit producers of each submission of a trace's plan.
    fn producers(trace: &Trace) -> Result<Waits, crate::error::ReplayError> {
        let plan = crate::plan::plan(trace, None)?;
        Ok(plan
            .runtimes
            .iter()
            .flat_map(|rp| &rp.submissions)
            .map(|s| (s.index.0, s.producers.iter().map(|p| p.0).collect()))
            .collect())
    }

    /// `records` encoded as a file is.
    fn encode<'r>(records: impl IntoIterator<Item = &'r Record>) -> Vec<u8> {
        encode_ending(records, false)
    }

    /// [`encode`]; `apart`: the records flushed before the close, so that the session's end
    /// is the last records block alone (cut off, the file stands for a killed recording).
    fn encode_ending<'r>(records: impl IntoIterator<Item = &'r Record>, apart: bool) -> Vec<u8> {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
        for record in records {
            match record {
                Record::SessionStart(_) | Record::SessionEnd(_) => {}
                Record::Blob(b) => {
                    recorder.intern_blob(&b.bytes).expect("blob");
                }
                other => recorder.record(other),
            }
        }
        if apart {
            recorder.flush().expect("flush");
        }
        recorder.close().expect("close");
        sink.contents()
    }

    /// Six frames of 8 KiB (over the 4 KiB inlined) written and copied, the last one the
    /// first frame again: its blob is stored once, before chunk 0, and referred to by chunks
    /// 0 and 5.
    fn frames_with_a_repeat() -> Vec<u8> {
        frames([0, 1, 2, 3, 4, 0])
    }

    /// A frame of 8 KiB per key (equal keys, equal frames) written to a host-visible buffer
    /// and copied to the GPU and back, one submission each.
    pub(crate) fn frames(keys: impl IntoIterator<Item = u8>) -> Vec<u8> {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
        {
            let options = hrx::RuntimeOptions::sim().recorder(recorder.clone());
            let rt = hrx::Runtime::new(options).expect("runtime");
            let host = rt
                .buffer(8192, hrx::Placement::HostVisible)
                .expect("buffer");
            let gpu = rt.buffer(8192, hrx::Placement::GpuLocal).expect("buffer");
            let mut graph = rt.graph();
            graph.copy(gpu.whole(), host.whole()).expect("copy");
            graph.copy(host.whole(), gpu.whole()).expect("copy");
            let graph = graph.prepare().expect("prepare");
            for frame in keys {
                let bytes: Vec<u8> = (0..8192u32)
                    .map(|i| (i as u8) ^ frame.wrapping_mul(37))
                    .collect();
                host.write(0, &bytes).expect("write");
                graph.submit().expect("submit").wait().expect("runs");
            }
        }
        recorder.close().expect("close");
        sink.contents()
    }

    /// A capture of 6 submissions quiet at its start and loaded at its end: its runtime's
    /// host-load samples set to 0.1 per CPU, the last (at the runtime's end, in the last
    /// chunk of any chunking, the counter named in the first) to 9.5.
    fn loaded_at_its_end() -> Vec<u8> {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
        {
            let options = hrx::RuntimeOptions::sim().recorder(recorder.clone());
            let rt = hrx::Runtime::new(options).expect("runtime");
            let buffer = rt.buffer(64, hrx::Placement::HostVisible).expect("buffer");
            let mut graph = rt.graph();
            graph.fill(buffer.whole(), 7).expect("fill");
            let graph = graph.prepare().expect("prepare");
            for _ in 0..6 {
                graph.submit().expect("submit").wait().expect("runs");
            }
        }
        recorder.close().expect("close");
        let mut records = Trace::from_bytes(&sink.contents()).unwrap().records;
        let mut load = (None, None);
        let mut samples = Vec::new();
        for (i, record) in records.iter().enumerate() {
            crate::plan::host_load_sample(&mut load, record);
            if let Record::CounterSample(c) = record
                && Some(c.name) == load.0
            {
                samples.push(i);
            }
        }
        let [.., last] = samples[..] else {
            panic!("no host load sample");
        };
        assert!(samples.len() >= 2, "a sample at the start and at the end");
        for i in samples {
            if let Record::CounterSample(c) = &mut records[i] {
                c.value.0 = if i == last { 9.5 } else { 0.1 };
            }
        }
        encode(&records)
    }

    /// `bytes` replayed whole and in chunks of two submissions.
    fn replayed_whole_and_in_chunks(bytes: &[u8]) -> (crate::Report, crate::Report) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("load.hrxt");
        std::fs::write(&path, bytes).unwrap();
        let whole = crate::replay(&Trace::from_bytes(bytes).unwrap(), &Default::default())
            .expect("replayed");
        let chunked =
            crate::replay_file(&path, &crate::ReplayOptions::default().chunk_submissions(2))
                .expect("replayed");
        (whole, chunked)
    }

    /// The capture's highest host load per CPU reaches a replay's report in chunks as in
    /// one piece: a chunk's plan sees its own samples only, and a sample in a later chunk
    /// than the counter's name (a runtime's end) was lost, so a busier baseline's note
    /// weighed its load against the first sample alone.
    #[test]
    fn the_captures_host_load_is_read_over_every_chunk() {
        let (whole, chunked) = replayed_whole_and_in_chunks(&loaded_at_its_end());
        assert_eq!(whole.trace.host_load_per_cpu, Some(9.5));
        assert_eq!(chunked.trace.host_load_per_cpu, Some(9.5));
    }

    /// A streamed replay notes a capture loaded only in a later chunk, as a whole one does
    /// (each chunk's plan worked the note out from its own samples: a capture quiet at its
    /// start and loaded at its end was a good reference for --max-slowdown, a break-it pass).
    #[test]
    fn a_capture_loaded_in_a_later_chunk_is_noted_as_loaded() {
        let (whole, chunked) = replayed_whole_and_in_chunks(&loaded_at_its_end());
        let loaded = |notes: &[String]| {
            (notes.iter())
                .filter(|n| n.starts_with("the capture ran on a loaded host"))
                .count()
        };
        assert_eq!(loaded(&whole.notes), 1, "{:?}", whole.notes);
        assert_eq!(loaded(&chunked.notes), 1, "{:?}", chunked.notes);
    }

    /// Every chunk is handed the blobs its records refer to, a blob referred to again by a
    /// later chunk is kept until then, and none is held once the last chunk is out. (A cache
    /// emptied when it passed 256 MiB dropped the blobs of the chunk being filled: a good
    /// 307 MB trace of 64 distinct frames was "not in the trace (damaged trace?)".)
    #[test]
    fn a_blob_is_kept_until_the_last_chunk_that_refers_to_it() {
        let bytes = frames_with_a_repeat();
        let trace = Trace::from_bytes(&bytes).expect("read back");
        let writes: Vec<s::BlobHash> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::HostWrite(_) => blob_of(r),
                _ => None,
            })
            .collect();
        assert_eq!(writes.len(), 6, "every frame's write out of line");
        assert_eq!(writes[0], writes[5]);
        let index = index(TraceReader::new(&bytes[..]).unwrap(), 1);
        let mut chunker = Chunker::new(TraceReader::new(&bytes[..]).unwrap(), index, None);
        let mut handed = 0;
        while let Some(chunk) = chunker.next_chunk().unwrap() {
            let held: HashSet<s::BlobHash> = chunk
                .records
                .iter()
                .filter_map(|r| match r {
                    Record::Blob(b) => Some(b.hash),
                    _ => None,
                })
                .collect();
            for hash in chunk.records.iter().filter_map(blob_of) {
                assert!(held.contains(&hash), "chunk {handed} lacks blob {hash}");
            }
            // The first frame's blob waits for chunk 5; the others go with their chunk.
            let first_held = chunker.blobs.contains_key(&writes[0]);
            assert_eq!(first_held, handed < 5, "after chunk {handed}");
            if handed > 0 && handed < 5 {
                assert!(
                    !chunker.blobs.contains_key(&writes[handed]),
                    "chunk {handed}"
                );
            }
            handed += 1;
        }
        assert_eq!(handed, 6);
        assert_eq!((chunker.blobs.len(), chunker.blob_bytes), (0, 0));
        assert!(chunker.blob_bytes_peak >= 2 * 8192);
    }

    /// A trace cut short while every submission it holds was in flight (no outcome, no
    /// output digest read) compares nothing: exit 2, `NOTHING COMPARED`, whole and in
    /// chunks (it was `SAME`, exit 0, with a warning: a CI gate passed on nothing). One
    /// outcome read is a comparison again.
    #[test]
    fn a_cut_trace_whose_submissions_all_lack_outcomes_compares_nothing() {
        let whole = Trace::from_bytes(&frames_with_a_repeat()).expect("read back");
        let in_flight = |kept_outcome: Option<u64>| {
            let bytes = encode(whole.records.iter().filter(|r| match r {
                Record::SubmissionDone(d) => Some(d.submission.0) == kept_outcome,
                Record::RegionDone(d) => Some(d.submission.0) == kept_outcome,
                Record::OutputDigest(d) => Some(d.submission.0) == kept_outcome,
                _ => true,
            }));
            // Never closed: its footer cut off.
            let footer =
                hrx_capture::format::decode_trailer(&bytes[bytes.len() - 16..]).expect("a trailer");
            bytes[..footer as usize].to_vec()
        };
        let none = in_flight(None);
        let trace = Trace::from_bytes(&none).expect("read back");
        let report = crate::replay(&trace, &Default::default()).expect("replayed");
        assert_eq!(report.summary.outcomes_unknown, 6, "{:?}", report.summary);
        assert_eq!(report.exit_code(), 2, "{:?}", report.summary);
        assert!(
            report
                .to_text()
                .contains("verdict: NOTHING COMPARED (exit 2)")
        );
        // And in JSON, where a script reads the verdict.
        assert_eq!(report.json_value()["verdict"], "nothing_compared");
        let options = crate::ReplayOptions::default().chunk_submissions(2);
        let streamed = crate::stream::replay_stream(
            TraceReader::new(&none[..]).unwrap(),
            None,
            index(TraceReader::new(&none[..]).unwrap(), 2),
            &options,
            None,
            &mut |_, _| {},
        )
        .expect("replayed in chunks");
        assert_eq!(streamed.exit_code(), 2, "{:?}", streamed.summary);
        let one = Trace::from_bytes(&in_flight(Some(2))).expect("read back");
        let report = crate::replay(&one, &Default::default()).expect("replayed");
        assert_eq!(report.exit_code(), 0, "{:?}", report.summary);
        assert!(
            (report.to_text()).contains("verdict: SAME AS FAR AS THE TRACE GOES (exit 0)"),
            "{}",
            report.to_text()
        );
        // The submissions without an outcome are said as such, not as mismatches.
        let unknown = report.summary.outcomes_unknown;
        assert!(unknown > 0, "{:?}", report.summary);
        assert!(
            (report.to_text()).contains(&format!(
                "statuses match ({unknown} without a recorded outcome, not compared)"
            )),
            "{}",
            report.to_text()
        );
        // The JSON names it as the text does (it read `same`).
        assert_eq!(
            report.json_value()["verdict"],
            "same_as_far_as_the_trace_goes"
        );
    }

    /// Distinct frames make a chunk's contents grow with its submissions: where a chunk
    /// would bring in more than the budget, chunks are made smaller in proportion, so that
    /// replay holds about the budget, and the replay in smaller chunks compares every
    /// submission as before (a chunk of 2,048 distinct 3840x2160 frames held 50 GB).
    #[test]
    fn chunks_of_distinct_contents_are_sized_to_the_budget() {
        let bytes = frames(0..12);
        let frame = 8192;
        // Submissions are numbered from 1: chunks of 16 hold the 12 in one.
        let whole = index(TraceReader::new(&bytes[..]).unwrap(), 16);
        assert_eq!(
            whole.size_within(64 * frame, u64::MAX),
            None,
            "12 frames fit"
        );
        // Over the budget, but within two chunks' worth: nothing to gain.
        assert_eq!(
            whole.size_within(7 * frame, u64::MAX),
            None,
            "12 frames fit in two of 7"
        );
        let size = whole
            .size_within(3 * frame, u64::MAX)
            .expect("smaller chunks");
        assert!((2..=3).contains(&size), "{size} submissions");
        let peak = |size: u64| {
            let index = index(TraceReader::new(&bytes[..]).unwrap(), size);
            let mut chunker = Chunker::new(TraceReader::new(&bytes[..]).unwrap(), index, None);
            let mut chunks = 0;
            while chunker.next_chunk().unwrap().is_some() {
                chunks += 1;
            }
            (chunker.blob_bytes_peak as u64, chunks)
        };
        let (big, chunks) = peak(16);
        assert_eq!(chunks, 1);
        assert!(big >= 12 * frame, "{big}");
        let (small, chunks) = peak(size);
        assert!(chunks >= 3, "{chunks}");
        // What a chunk brings in, and the next one's read ahead of it at most.
        assert!(
            small <= 2 * size * frame && small < big,
            "{small} bytes held"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("distinct.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let options = |budget| {
            crate::ReplayOptions::default()
                .chunk_submissions(16)
                .chunk_blob_bytes(budget)
        };
        let whole = crate::replay_file(&path, &options(64 * frame)).expect("replayed");
        let chunked = crate::replay_file(&path, &options(3 * frame)).expect("replayed");
        for report in [&whole, &chunked] {
            assert_eq!(report.exit_code(), 0, "{:?}", report.notes);
            assert_eq!(report.summary.submissions, 12, "{:?}", report.summary);
        }
        let said = |report: &crate::Report| {
            (report.notes.iter())
                .any(|n| n.contains(&format!("replayed in chunks of {size} submissions, not 16")))
        };
        assert!(said(&chunked), "{:?}", chunked.notes);
        assert!(!said(&whole), "{:?}", whole.notes);
    }

    /// A chunk holding more region and operation timings than the budget (a graph of many
    /// regions: chunks of 2,048 submissions of a 2,000-region graph took 4.0 GB, a break-it
    /// pass) is made smaller in proportion, down to one submission; the replay in smaller
    /// chunks compares every submission as before and says why it was chunked.
    #[test]
    fn chunks_of_many_timings_are_sized_to_the_budget() {
        let bytes = frames(0..12);
        let whole = index(TraceReader::new(&bytes[..]).unwrap(), 16);
        // Two copy regions a submission, each timed with its operation: 4 timings.
        let most = *whole.timings.values().max().expect("timings");
        assert_eq!(most, 12 * 4, "{:?}", whole.timings);
        assert_eq!(whole.size_within(u64::MAX, most), None, "the timings fit");
        let size = whole.size_within(u64::MAX, 4 * 4).expect("smaller chunks");
        assert!((4..=5).contains(&size), "{size} submissions");
        assert_eq!(
            whole.size_within(u64::MAX, 1),
            Some(1),
            "one submission at least"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("frames.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let options = |timings| {
            crate::ReplayOptions::default()
                .chunk_submissions(16)
                .chunk_timings(timings)
        };
        let whole = crate::replay_file(&path, &options(most)).expect("replayed");
        let chunked = crate::replay_file(&path, &options(4 * 4)).expect("replayed");
        let single = crate::replay_file(&path, &options(1)).expect("replayed");
        // A chunk holds every repeat's timings: the budget is shared by the repeats.
        let repeated = crate::replay_file(&path, &options(most).repeat(4)).expect("replayed");
        assert!(
            repeated.notes.iter().any(|n| n.contains(&format!(
                "region and operation timings ({most} over 4 repeats)"
            ))),
            "{:?}",
            repeated.notes
        );
        for report in [&whole, &chunked, &single, &repeated] {
            assert_eq!(report.exit_code(), 0, "{:?}", report.notes);
            assert_eq!(report.summary.submissions, 12, "{:?}", report.summary);
        }
        let said =
            |report: &crate::Report, what: &str| report.notes.iter().any(|n| n.contains(what));
        assert!(!said(&whole, "replayed in chunks"), "{:?}", whole.notes);
        assert!(
            said(
                &chunked,
                "submissions, not 16: a chunk of that many would have held more than 256 MiB of \
                 captured contents or 16 region and operation timings"
            ),
            "{:?}",
            chunked.notes
        );
        assert!(
            said(
                &single,
                "replayed in chunks of 1 submission, not 16: one submission holds more than 1 region and operation timings"
            ),
            "{:?}",
            single.notes
        );
    }

    /// A recording killed mid-run can hold a submission's completion and timings without
    /// its `Submit` (each thread's last records are written or not on their own). Such a
    /// file is replayed, whole and in chunks, leaving the records of submissions past its
    /// last `Submit` out with a note naming them (it was refused: "RegionTiming names
    /// submission 30, which was never submitted"). A `Submit` missing before a held one (a
    /// damaged block: later submissions read what it wrote), or from a cleanly closed file,
    /// is refused still.
    #[test]
    fn a_cut_short_file_leaves_out_the_records_of_a_submission_it_lacks() {
        let whole = Trace::from_bytes(&frames_with_a_repeat()).expect("read back");
        let without = |submission: u64| {
            encode(
                whole
                    .records
                    .iter()
                    .filter(|r| !matches!(r, Record::Submit(s) if s.submission.0 == submission)),
            )
        };
        // The same records without the footer: every block read, never closed.
        let cut = |closed: &[u8]| -> Vec<u8> {
            let footer = hrx_capture::format::decode_trailer(&closed[closed.len() - 16..])
                .expect("a trailer");
            closed[..footer as usize].to_vec()
        };
        let refused = |bytes: &[u8]| {
            let Err(error) = crate::plan::plan(&Trace::from_bytes(bytes).unwrap(), None) else {
                panic!("a trace lacking a Submit before a held one is refused");
            };
            assert!(
                error.to_string().contains("which was never submitted"),
                "{error}"
            );
        };
        refused(&without(6));
        refused(&without(3));
        refused(&cut(&without(3)));

        let cut = cut(&without(6));
        let note = "records of 1 submission left out (6..=6)";
        let trace = Trace::from_bytes(&cut).expect("read back");
        assert!(!trace.recovery.clean_close);
        let report = crate::replay(&trace, &Default::default()).expect("replayed");
        assert!(
            report.notes.iter().any(|n| n.contains(note)),
            "{:?}",
            report.notes
        );
        // How it ended, in the words every verb says it in (it read "clean close: false, 0
        // damaged or missing blocks and 0 records skipped, ...").
        let ending = format!(
            "the trace is incomplete ({}: {} records read from ",
            trace.recovery.end(),
            trace.recovery.records
        );
        assert!(
            report.notes.iter().any(|n| n.starts_with(&ending)),
            "{:?}",
            report.notes
        );
        assert_eq!(report.submissions.len(), 5, "{:?}", report.submissions);
        assert_eq!(report.exit_code(), 0, "{:?}", report.notes);
        let options = crate::ReplayOptions::default().chunk_submissions(2);
        let index = index(TraceReader::new(&cut[..]).unwrap(), 2);
        let streamed = crate::stream::replay_stream(
            TraceReader::new(&cut[..]).unwrap(),
            None,
            index,
            &options,
            None,
            &mut |_, _| {},
        )
        .expect("replayed in chunks");
        assert!(
            streamed.notes.iter().any(|n| n.contains(note)),
            "{:?}",
            streamed.notes
        );
        assert_eq!(streamed.exit_code(), 0, "{:?}", streamed.notes);
    }

    /// A whole trace replayed in chunks is not said to be a range: the range each chunk
    /// after the first opens is the replay's own cut (every replay of more than 2,048
    /// submissions noted "the trace is a range" once a chunk: a fresh-user pass).
    #[test]
    fn a_whole_trace_replayed_in_chunks_is_not_said_to_be_a_range() {
        let bytes = frames_with_a_repeat();
        let options = crate::ReplayOptions::default().chunk_submissions(2);
        let streamed = crate::stream::replay_stream(
            TraceReader::new(&bytes[..]).unwrap(),
            None,
            index(TraceReader::new(&bytes[..]).unwrap(), 2),
            &options,
            None,
            &mut |_, _| {},
        )
        .expect("replayed in chunks");
        assert_eq!(streamed.exit_code(), 0, "{:?}", streamed.notes);
        assert!(
            !streamed.notes.iter().any(|n| n.contains("is a range")),
            "{:?}",
            streamed.notes
        );
    }

    /// A recording of two submitting threads killed (or cut with `head -c`) can lack one
    /// thread's last `Submit`s while holding the other's later ones: the trace ends there,
    /// nothing was lost. Read as `replay_file` reads it (submission numbers checked), it is
    /// replayed, whole and in chunks, up to the first submission it lacks, the later ones
    /// left out with a note, and matches as far as it goes (it was refused, exit 2: "1
    /// submission between those it holds has no Submit (lost while recording, or with a
    /// damaged block)"; D4 of the scale pass). The same lack in a closed file is refused.
    #[test]
    fn a_never_closed_file_ends_before_the_first_submission_it_lacks() {
        let whole = Trace::from_bytes(&frames_with_a_repeat()).expect("read back");
        // Submission 3's Submit unwritten (its thread's last records), 4..=6 held (another
        // thread's); 3's completion and digests in the file, as a waiting thread writes them.
        // Never closed: cut before its session's end, the last block alone (a file cut after
        // it was closed by its recorder).
        let without_three = encode_ending(
            (whole.records.iter())
                .filter(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 3)),
            true,
        );
        let blocks = hrx_capture::MappedTrace::from_vec(without_three.clone()).expect("mapped");
        let last = (blocks.blocks().iter())
            .rfind(|b| b.header.kind == hrx_capture::format::BlockKind::RECORDS)
            .expect("a records block");
        let cut = &without_three[..last.offset as usize];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.hrxt");
        std::fs::write(&path, cut).unwrap();
        // (Its runtime's id depends on the runtimes other tests made before.)
        let note = "the trace ends before submission 3, the first whose Submit it lacks";
        let left_out = "submissions from 3 on are left out, 3 submissions it holds (written by other threads) and 1 submission without a Submit";
        let said = |report: &crate::Report| {
            assert!(
                (report.notes.iter()).any(|n| n.contains(note) && n.contains(left_out)),
                "{:?}",
                report.notes
            );
            assert_eq!(report.exit_code(), 0, "{:?}", report.notes);
            assert!(!report.trace.complete);
            let replayed: Vec<u64> = (report.submissions.iter()).map(|s| s.submission).collect();
            assert_eq!(replayed, [1, 2], "{:?}", report.notes);
        };
        for chunk in [16, 2, 1] {
            let options = crate::ReplayOptions::default().chunk_submissions(chunk);
            let report = crate::replay_file(&path, &options).expect("replayed");
            said(&report);
        }
        let reader = TraceReader::new(cut).unwrap().check_submission_numbers();
        let trace = Trace::read_whole(reader).unwrap();
        assert_eq!(trace.recovery.unwritten_submissions, 1);
        said(&crate::replay(&trace, &Default::default()).expect("replayed whole"));

        // Closed, the same lack is a gap: refused.
        let closed = dir.path().join("closed.hrxt");
        std::fs::write(&closed, &without_three).unwrap();
        let Err(error) = crate::replay_file(&closed, &Default::default()) else {
            panic!("a gap in a closed trace is refused");
        };
        assert!(
            error
                .to_string()
                .contains("1 submission between those it holds has no Submit"),
            "{error}"
        );
    }

    /// Every record of a submission between held ones lost (its blocks damaged: nothing
    /// names it, so no plan check sees it): the reader counts it missing, and replay refuses
    /// before anything runs (it replayed SAME, or REGRESSION where later submissions read
    /// what the lost one wrote).
    #[test]
    fn a_submission_missing_between_held_ones_is_refused() {
        let whole = Trace::from_bytes(&frames_with_a_repeat()).expect("read back");
        let bytes =
            encode((whole.records.iter()).filter(|r| submission_of(r).is_none_or(|s| s.0 != 3)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gap.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let Err(error) = crate::replay_file(&path, &Default::default()) else {
            panic!("a gap is refused");
        };
        let text = error.to_string();
        assert!(
            matches!(error, ReplayError::Incomplete { .. })
                && text.contains("1 submission missing"),
            "{text}"
        );
        assert!(
            text.contains("1 submission between those it holds has no Submit"),
            "{text}"
        );
    }

    /// A trim of a recording cut short is closed cleanly, but what its source lost (a digest
    /// past the cut) is no change: replayed, whole or in chunks, its outputs without a
    /// captured digest are not compared, with a note, as in the source (it was REGRESSION,
    /// "written at replay, not in the capture"; break-it pass).
    #[test]
    fn a_trim_of_an_incomplete_recording_does_not_count_its_losses_as_changes() {
        let whole = Trace::from_bytes(&frames_with_a_repeat()).expect("read back");
        let runtime = whole
            .records
            .iter()
            .find_map(|r| match r {
                Record::RuntimeStart(r) => Some(r.runtime),
                _ => None,
            })
            .expect("a runtime");
        let without_digest = |trimmed_from: &str| {
            let range = Record::TraceRange(s::TraceRange {
                runtime,
                start: SubmissionIndex(1),
                end: None,
                trigger: "trim".into(),
                trimmed_from: Some(trimmed_from.into()),
                time_ns: 0,
                fault: None,
            });
            let kept = whole
                .records
                .iter()
                .filter(|r| !matches!(r, Record::OutputDigest(d) if d.submission.0 == 6));
            encode(kept.chain(std::iter::once(&range)))
        };
        let whole_source = without_digest("src.hrxt");
        let report = crate::replay(
            &Trace::from_bytes(&whole_source).unwrap(),
            &Default::default(),
        )
        .expect("replayed");
        assert_eq!(
            report.exit_code(),
            1,
            "a whole source's missing digest is a change"
        );
        let cut_source = without_digest("src.hrxt (incomplete: cut short, never closed)");
        let note = "written at replay has no captured digest";
        let report = crate::replay(
            &Trace::from_bytes(&cut_source).unwrap(),
            &Default::default(),
        )
        .expect("replayed");
        assert_eq!(report.exit_code(), 0, "{:?}", report.notes);
        assert!(
            report.notes.iter().any(|n| n.contains(note)),
            "{:?}",
            report.notes
        );
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("trimmed from an incomplete recording (cut short")),
            "{:?}",
            report.notes
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trim.hrxt");
        std::fs::write(&path, &cut_source).unwrap();
        let streamed = crate::replay_file(&path, &Default::default()).expect("replayed");
        assert_eq!(streamed.exit_code(), 0, "{:?}", streamed.notes);
        assert!(
            streamed.notes.iter().any(|n| n.contains(note)),
            "{:?}",
            streamed.notes
        );
    }

    /// Ten submissions of one copy, each after the one before it (`submit_after`), recorded
    /// as a range from submission 3 on (three graph slots: the capture holds a submission,
    /// the next, and the one before, its producer, until the next retires).
    fn ranged_with_producers() -> Trace {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), Default::default()).expect("recorder");
        {
            let options = hrx::RuntimeOptions::sim()
                .recorder(recorder.clone())
                .graph_slots(3)
                .trace_range(hrx_capture::CaptureRange::Submissions {
                    start: 3,
                    end: None,
                });
            let rt = hrx::Runtime::new(options).expect("runtime");
            let host = rt.buffer(64, hrx::Placement::HostVisible).expect("buffer");
            let gpu = rt.buffer(64, hrx::Placement::GpuLocal).expect("buffer");
            let mut graph = rt.graph();
            graph.copy(gpu.whole(), host.whole()).expect("copy");
            let graph = graph.prepare().expect("prepare");
            let mut previous = graph.submit().expect("submit");
            for _ in 0..9 {
                let next = graph
                    .submit_after(std::slice::from_ref(&previous))
                    .expect("submit");
                previous.wait().expect("runs");
                previous = next;
            }
            previous.wait().expect("runs");
        }
        recorder.close().expect("close");
        Trace::from_bytes(&sink.contents()).expect("read back")
    }

    /// A ranged trace whose submissions name the one before them as explicit producer: the
    /// whole trace's plan keeps each (submission 3's lies before the range, as the join
    /// says). Each chunk keeps the recording's `TraceRange` beside its own, and its plan
    /// once took the lowest range start for where the trace begins: a producer of an earlier
    /// chunk was then neither before the range nor in the chunk, and the chunk was refused
    /// ("submission 4 waits on submission 3, which is not an earlier submission"). The join
    /// says it lies before the chunk: every chunk plans, with the whole trace's producers.
    #[test]
    fn a_chunk_of_a_ranged_trace_keeps_explicit_producers_of_earlier_chunks() {
        let trace = ranged_with_producers();
        let whole = producers(&trace).expect("plan");
        let expected: Waits = (3..11).map(|s| (s, vec![s - 1])).collect();
        assert_eq!(whole, expected);
        let bytes = encode(&trace.records);
        for size in [1, 2] {
            let index = index(TraceReader::new(&bytes[..]).unwrap(), size);
            let mut chunker = Chunker::new(TraceReader::new(&bytes[..]).unwrap(), index, None);
            let mut chunked = Waits::new();
            while let Some(chunk) = chunker.next_chunk().unwrap() {
                let mine = producers(&chunk).unwrap_or_else(|e| panic!("chunks of {size}: {e}"));
                chunked.extend(mine);
            }
            assert_eq!(chunked, whole, "chunks of {size}");
        }
        // Replayed in chunks of one, each submission after its producer, whose completion
        // the chunk before kept for it and no longer (else the graph's three slots would
        // fill, and a submit stay busy with nothing in flight).
        let whole = crate::replay(&trace, &Default::default()).expect("replay");
        let options = crate::ReplayOptions::default().chunk_submissions(1);
        let index = index(TraceReader::new(&bytes[..]).unwrap(), 1);
        let reader = TraceReader::new(&bytes[..]).unwrap();
        let mut rows = Vec::new();
        let streamed =
            crate::stream::replay_stream(reader, None, index, &options, None, &mut |r, _| {
                rows.extend_from_slice(r)
            })
            .expect("replay in chunks of 1");
        assert_eq!(whole.exit_code(), 0);
        assert_eq!(streamed.exit_code(), 0);
        assert_eq!(rows, whole.submissions);
        // A producer in the range whose `Submit` the trace lacks is refused, as before.
        let without = encode(
            trace
                .records
                .iter()
                .filter(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 4)),
        );
        let error = producers(&Trace::from_bytes(&without).unwrap()).expect_err("refused");
        assert!(
            error
                .to_string()
                .contains("submission 5 waits on submission 4, which is not an earlier submission"),
            "{error}"
        );
    }
}
