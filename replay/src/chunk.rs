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
//! A record naming a submission goes to the chunk of that submission. Records of one
//! submission are not contiguous in the file: its completion and digests come after later
//! submits (the runtime keeps up to its capacity in flight, and digests are hashed on other
//! threads). So a chunk closes only once the file has moved [`LAG_SUBMISSIONS`] submits
//! past its last one; records of later submissions read meanwhile wait for the next chunk.
//! A record of a submission whose chunk was already handed out is *late*: it is counted
//! ([`Chunker::late`]) and the report says so, never silently dropped from the count.
//! Records naming no submission (host writes, refusals, blobs, snapshots) go to the chunk
//! being read.
//!
//! Chunks after the first carry a `TraceRange` record per runtime that opens at their first
//! submission: the plan then treats producers and late records of earlier chunks as what
//! happened before a range (completed, not compared again).
//!
//! `until` is applied here (per runtime, in submission order) so that it counts across
//! chunks; submissions past it are counted ([`Chunker::cut`]) and their records skipped.

use hrx_capture::TraceReader;
use hrx_capture::schema::{self as s, Record, RuntimeId, SubmissionIndex};
use hrx_capture::{ReadError, Recovery, Trace};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;

/// Submits the file moves past a chunk's last one before the chunk closes: more than any
/// runtime's capacity (at most 64 submissions in flight) plus the lag of digests hashed on
/// other threads.
pub(crate) const LAG_SUBMISSIONS: u64 = 1024;

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

/// Bytes of blobs kept for later chunks (contents are stored once per hash in a trace, so a
/// frame uploaded again in a later chunk refers to the blob of an earlier one).
pub(crate) const BLOB_CACHE_BYTES: usize = 256 << 20;

/// Per runtime: where the chunks stand.
#[derive(Default)]
struct Runtime {
    /// Submits read (kept or cut by `until`).
    seen: u64,
    /// The first submission of the chunk being read.
    first: Option<SubmissionIndex>,
    /// The last submission of the chunk being read.
    last: Option<SubmissionIndex>,
    /// Every submission up to this one was handed out in an earlier chunk.
    handed_out: Option<SubmissionIndex>,
    /// Submissions cut by `until`: the first of them (records from it on are skipped).
    cut_from: Option<SubmissionIndex>,
}

/// Splits a trace into chunks of about `size` submissions.
pub(crate) struct Chunker<R> {
    reader: TraceReader<R>,
    size: u64,
    until: Option<u64>,
    structure: Vec<Record>,
    /// Blobs read so far, by hash, up to [`BLOB_CACHE_BYTES`].
    blobs: HashMap<s::BlobHash, s::Blob>,
    blob_bytes: usize,
    /// Whether the cache was emptied once (a later chunk may then miss a blob).
    pub blobs_evicted: bool,
    runtimes: BTreeMap<RuntimeId, Runtime>,
    /// Records of the chunk being read, and of submissions after it.
    current: Vec<Record>,
    next: Vec<Record>,
    /// Submits of the chunk being read.
    submits: u64,
    /// Submits read after the chunk filled up.
    past: u64,
    chunks: u64,
    done: bool,
    /// Records that came after their submission's chunk was handed out.
    pub late: u64,
    /// Submissions left out by `until`, per runtime.
    pub cut: BTreeMap<RuntimeId, u64>,
}

impl<R: Read> Chunker<R> {
    /// A chunker over `reader`.
    pub fn new(reader: TraceReader<R>, size: u64, until: Option<u64>) -> Chunker<R> {
        Chunker {
            reader,
            size: size.max(1),
            until,
            structure: Vec::new(),
            blobs: HashMap::new(),
            blob_bytes: 0,
            blobs_evicted: false,
            runtimes: BTreeMap::new(),
            current: Vec::new(),
            next: Vec::new(),
            submits: 0,
            past: 0,
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

    /// Takes one record read from the file; true when the chunk being read is complete.
    fn read(&mut self, record: Record) -> bool {
        if let Record::Blob(b) = record {
            // Kept aside, handed to every chunk that refers to it.
            if self.blob_bytes + b.bytes.len() > BLOB_CACHE_BYTES {
                self.blobs.clear();
                self.blob_bytes = 0;
                self.blobs_evicted = true;
            }
            self.blob_bytes += b.bytes.len();
            self.blobs.insert(b.hash, b);
            return false;
        }
        if structural(&record) {
            self.structure.push(record);
            return false;
        }
        if let (Some(runtime), Some(submission)) = (record.runtime(), submission_of(&record)) {
            let rt = self.runtimes.entry(runtime).or_default();
            if let Record::Submit(_) = record {
                rt.seen += 1;
                if self.until.is_some_and(|n| rt.seen > n) {
                    rt.cut_from = Some(rt.cut_from.map_or(submission, |c| c.min(submission)));
                    *self.cut.entry(runtime).or_default() += 1;
                    return false;
                }
            }
            if rt.cut_from.is_some_and(|c| submission >= c) {
                return false;
            }
            if rt.handed_out.is_some_and(|h| submission <= h) {
                self.late += 1;
                return false;
            }
        }
        self.route(record)
    }

    /// Puts a record into the chunk being read or the next one; true when the chunk being
    /// read is complete.
    fn route(&mut self, record: Record) -> bool {
        let full = self.submits >= self.size;
        let Some(submission) = submission_of(&record) else {
            // Host writes, refusals, snapshots: where the file is.
            if full {
                self.next.push(record);
            } else {
                self.current.push(record);
            }
            return false;
        };
        let runtime = record.runtime().unwrap_or(RuntimeId(0));
        let rt = self.runtimes.entry(runtime).or_default();
        if let Record::Submit(_) = record {
            // Submits of several threads reach the file in flush order, not in submission
            // order: one numbered below the chunk's last still belongs to it, full or not
            // (else its completion, routed by number, would name a submission the chunk
            // lacks).
            if full && rt.last.is_none_or(|last| submission > last) {
                // Later submits (and their records) wait for the next chunk.
                self.past += 1;
                self.next.push(record);
                return self.past >= LAG_SUBMISSIONS;
            }
            self.submits += 1;
            rt.first = Some(rt.first.map_or(submission, |f| f.min(submission)));
            rt.last = Some(rt.last.map_or(submission, |l| l.max(submission)));
            self.current.push(record);
            return false;
        }
        // A record before its submit (a digest hashed early) stays with the chunk being
        // read until the chunk closes, then follows its submission (see `next_chunk`).
        if full && rt.last.is_none_or(|last| submission > last) {
            self.next.push(record);
        } else {
            self.current.push(record);
        }
        false
    }

    /// The next chunk: `None` once the file is read.
    ///
    /// # Errors
    /// A read error mid-file.
    pub fn next_chunk(&mut self) -> Result<Option<Trace>, ReadError> {
        if self.done && self.current.is_empty() && self.next.is_empty() {
            return Ok(None);
        }
        let mut full = false;
        while !self.done && !full {
            match self.reader.next() {
                Some(item) => full = self.read(item?.1),
                None => self.done = true,
            }
        }
        // Records of submissions after the chunk's last (read before their submit) wait.
        let (mine, later): (Vec<Record>, Vec<Record>) = std::mem::take(&mut self.current)
            .into_iter()
            .partition(|r| match (r.runtime(), submission_of(r)) {
                (Some(runtime), Some(submission)) => self
                    .runtimes
                    .get(&runtime)
                    .and_then(|rt| rt.last)
                    .is_some_and(|last| submission <= last),
                _ => true,
            });
        self.current = mine;
        self.next.splice(0..0, later);
        let mut records = self.structure.clone();
        // The blobs the chunk refers to.
        let mut referenced: Vec<s::BlobHash> = records
            .iter()
            .chain(&self.current)
            .filter_map(blob_of)
            .collect();
        referenced.sort_unstable_by_key(|h| h.0);
        referenced.dedup();
        for hash in referenced {
            if let Some(blob) = self.blobs.get(&hash) {
                records.push(Record::Blob(blob.clone()));
            }
        }
        // Chunks after the first open a range at their first submission.
        if self.chunks > 0 {
            for (&runtime, rt) in &self.runtimes {
                if let Some(first) = rt.first {
                    records.push(Record::TraceRange(s::TraceRange {
                        runtime,
                        start: first,
                        end: None,
                        trigger: "replay chunk".into(),
                        trimmed_from: None,
                        time_ns: 0,
                    }));
                }
            }
        }
        records.append(&mut self.current);
        self.chunks += 1;
        // Hand the chunk out; what waited becomes the chunk being read.
        for rt in self.runtimes.values_mut() {
            if let Some(last) = rt.last {
                rt.handed_out = Some(rt.handed_out.map_or(last, |h| h.max(last)));
            }
            rt.first = None;
            rt.last = None;
        }
        self.submits = 0;
        self.past = 0;
        let waiting = std::mem::take(&mut self.next);
        for record in waiting {
            self.route(record);
        }
        Ok(Some(Trace {
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
        }))
    }
}
