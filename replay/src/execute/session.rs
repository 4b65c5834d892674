//! A replay runtime and its objects kept across the chunks of a streamed trace, what one
//! chunk's replay leaves to read back, and [`run`], one whole replay.

use super::objects::{Maker, Objects};
use super::open::open_runtime;
use super::read_back::read_back;
use super::walk::{Carried, ChunkPlace, walk};
use super::{Observed, Ticker, lock};
use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::RuntimePlan;
use hrx::Runtime;
use hrx_capture::schema::{BufferId, Record, SubmissionIndex};
use hrx_capture::{Recorder, Sink, TraceReader};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A sink whose bytes are taken away chunk by chunk (the replay's own trace is read back
/// as it is written, so it never exists whole in memory).
#[derive(Clone, Default)]
pub(super) struct DrainSink(Arc<Mutex<Vec<u8>>>);

impl Sink for DrainSink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(())
    }
}

/// What one chunk's replay left to read back: the flight's statuses, refusals and host
/// write errors, the replay's submission numbers (replay index to captured index) and the
/// records the replay wrote about them.
pub(crate) struct ChunkRun {
    observed: Observed,
    replay_index: HashMap<u64, SubmissionIndex>,
    /// The replay's objects (runtime, buffers, kernels, graph operations, prepared graphs)
    /// written so far: what its timings and completions are joined over.
    structure: Arc<Vec<Record>>,
    records: Packed,
    buffer_of: Arc<HashMap<u64, BufferId>>,
}

/// Records kept encoded (postcard, one after another) until they are read back.
///
/// A streamed replay holds the records of every repeat for two chunks at once (a chunk's
/// late digests come with the next one). Decoded, a record takes a few hundred bytes: a
/// three-region submission's 14 records about 4.4 KB, so `--repeat 100` of a 2,048-submission
/// chunk held about 2 GB (a break-it pass, session 50). Encoded, with what
/// [`ChunkRun::take_late`] sorts them by, they take a fraction of that.
#[derive(Default)]
struct Packed {
    bytes: Vec<u8>,
    /// Per record, in order: where its bytes end, and what sorts it.
    index: Vec<Packing>,
}

#[derive(Clone, Copy)]
struct Packing {
    end: usize,
    /// The submission it is about (replay numbering), or [`NOT_ABOUT_ONE`], or [`BLOB`].
    about: u64,
}

/// [`Packing::about`] of a record about no submission.
const NOT_ABOUT_ONE: u64 = u64::MAX;
/// [`Packing::about`] of a blob (about no submission either).
const BLOB: u64 = u64::MAX - 1;

impl Packed {
    #[cfg(test)]
    fn of(records: impl IntoIterator<Item = Record>) -> Packed {
        let mut packed = Packed::default();
        packed.extend(records);
        packed
    }

    fn extend(&mut self, records: impl IntoIterator<Item = Record>) {
        for record in records {
            self.bytes = postcard::to_extend(&record, std::mem::take(&mut self.bytes))
                .expect("a record encodes into a growing buffer");
            let about = match &record {
                Record::Blob(_) => BLOB,
                r => crate::chunk::submission_of(r).map_or(NOT_ABOUT_ONE, |s| s.0),
            };
            self.index.push(Packing {
                end: self.bytes.len(),
                about,
            });
        }
    }

    /// Gives back what growing left spare: a streamed replay holds many of these.
    fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.index.shrink_to_fit();
    }

    /// Each record's packing and encoded bytes, in the order they were added.
    fn entries(&self) -> impl Iterator<Item = (Packing, &[u8])> {
        let starts = std::iter::once(0).chain(self.index.iter().map(|p| p.end));
        (self.index.iter())
            .zip(starts)
            .map(|(p, start)| (*p, &self.bytes[start..p.end]))
    }

    fn push(&mut self, packing: Packing, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.index.push(Packing {
            end: self.bytes.len(),
            ..packing
        });
    }

    /// The records, decoded in the order they were added.
    fn unpack(&self) -> Vec<Record> {
        (self.entries())
            .map(|(_, bytes)| {
                postcard::from_bytes::<Record>(bytes)
                    .expect("a record this process encoded decodes")
            })
            .collect()
    }
}

impl ChunkRun {
    /// Moves the records of `later` that are about this chunk's submissions (digests hashed
    /// after the chunk was drained) here.
    pub fn take_late(&mut self, later: &mut ChunkRun) {
        let mut theirs = Packed::default();
        for (packing, bytes) in later.records.entries() {
            let mine = self.replay_index.contains_key(&packing.about);
            // Blobs stay with both: either side's digests may name them.
            if mine || packing.about == BLOB {
                self.records.push(packing, bytes);
            }
            if !mine {
                theirs.push(packing, bytes);
            }
        }
        theirs.shrink();
        later.records = theirs;
    }

    /// Adds records the replay wrote after this chunk (its last ones, at the runtime's end).
    pub fn extend(&mut self, records: Vec<Record>) {
        self.records.extend(records);
    }

    /// What a replay runtime that wrote `records` under the capture's own ids observed, its
    /// waits having returned `statuses` (tests: a second trace of the run read as its
    /// replay).
    #[cfg(test)]
    pub fn of_records(
        records: Vec<Record>,
        statuses: HashMap<SubmissionIndex, (crate::report::Outcome, String)>,
        backend: &str,
    ) -> ChunkRun {
        let buffer_of = records
            .iter()
            .filter_map(|r| match r {
                Record::BufferCreated(b) => Some((b.buffer.0, b.buffer)),
                _ => None,
            })
            .collect();
        let replay_index = records
            .iter()
            .filter_map(|r| match r {
                Record::Submit(s) => Some((s.submission.0, s.submission)),
                _ => None,
            })
            .collect();
        ChunkRun {
            observed: Observed {
                backend: backend.to_owned(),
                statuses,
                ..Observed::default()
            },
            replay_index,
            structure: Arc::default(),
            records: Packed::of(records),
            buffer_of: Arc::new(buffer_of),
        }
    }

    /// Maps the replay's records onto captured ids: what the replay observed.
    pub fn observe(mut self, plan: &RuntimePlan<'_>) -> Observed {
        read_back(
            plan,
            &self.structure,
            &self.records.unpack(),
            &self.replay_index,
            &self.buffer_of,
            &mut self.observed,
        );
        self.observed
    }
}

/// Whether the join needs `record` before every chunk's records: it describes the replay's
/// objects (kept once, not per chunk).
fn structural(record: &Record) -> bool {
    matches!(
        record,
        Record::RuntimeStart(_)
            | Record::BufferCreated(_)
            | Record::KernelLoaded(_)
            | Record::GraphOp(_)
            | Record::Prepared(_)
    )
}

/// A replay runtime and its objects, kept across the chunks of a streamed trace.
pub(crate) struct Session {
    // Dropped in this order: the completions kept for later chunks, the objects, then the
    // runtime (its workers joined).
    carried: Carried,
    objects: Option<Objects>,
    runtime: Option<Runtime>,
    recorder: Recorder,
    sink: DrainSink,
    /// The replay trace's file header, put before every drained piece to decode it.
    header: Vec<u8>,
    /// The structural records drained so far ([`structural`]): bounded by the objects.
    structure: Arc<Vec<Record>>,
    buffer_of: Arc<HashMap<u64, BufferId>>,
    backend: String,
    device: String,
    notes: Vec<String>,
}

impl Session {
    /// A fresh runtime with `plan`'s buffers, kernels and graphs.
    pub fn open(
        plan: &RuntimePlan<'_>,
        options: &ReplayOptions,
        fault: Option<hrx::FaultSpec>,
        contents: bool,
    ) -> Result<Session, ReplayError> {
        let sink = DrainSink::default();
        let (runtime, recorder) = open_runtime(plan, options, fault, contents, sink.clone())?;
        let info = runtime.device_info();
        let mut notes = Vec::new();
        let maker = Maker {
            runtime: &runtime,
            options,
        };
        let objects = Objects::open(maker, plan, &mut notes)?;
        let buffer_of = objects.buffer_of.clone();
        Ok(Session {
            carried: Carried::paced(options.pace_captured),
            objects: Some(objects),
            runtime: Some(runtime),
            recorder,
            sink,
            header: Vec::new(),
            structure: Arc::default(),
            buffer_of: Arc::new(buffer_of),
            backend: info.backend.to_string(),
            device: info.name.clone(),
            notes,
        })
    }

    /// Decodes what the recorder wrote since the last call.
    fn drain(&mut self) -> Result<Vec<Record>, ReplayError> {
        let mut records = Vec::new();
        self.drain_each(|record| records.push(record))?;
        Ok(records)
    }

    /// Decodes what the recorder wrote since the last call, handing each record to `f`.
    fn drain_each(&mut self, mut f: impl FnMut(Record)) -> Result<(), ReplayError> {
        let measurement = |why: String| ReplayError::Measurement { why };
        let bytes = std::mem::take(&mut *lock(&self.sink.0));
        let mut input = Vec::with_capacity(self.header.len() + bytes.len());
        if self.header.is_empty() {
            self.header = bytes
                .get(..hrx_capture::format::FILE_HEADER_LEN)
                .ok_or_else(|| measurement("the replay's trace has no header".into()))?
                .to_vec();
            input.extend_from_slice(&bytes);
        } else {
            input.extend_from_slice(&self.header);
            input.extend_from_slice(&bytes);
        }
        let reader = TraceReader::new(input.as_slice()).map_err(|e| measurement(e.to_string()))?;
        for item in reader {
            let (_, record) = item.map_err(|e| measurement(e.to_string()))?;
            f(record);
        }
        Ok(())
    }

    /// Replays `plan`'s timeline (one chunk, at `place` among a streamed replay's chunks:
    /// every submission of it retired before this returns, the completions a later chunk
    /// names kept) and takes what the replay recorded so far.
    pub fn run_chunk(
        &mut self,
        plan: &RuntimePlan<'_>,
        options: &ReplayOptions,
        place: Option<&ChunkPlace<'_>>,
        ticker: &mut Ticker<'_>,
    ) -> Result<ChunkRun, ReplayError> {
        let (Some(runtime), Some(objects)) = (&self.runtime, &mut self.objects) else {
            unreachable!("the runtime and objects live until finish");
        };
        let maker = Maker { runtime, options };
        objects.grow(maker, plan, &mut self.notes)?;
        let mut observed = Observed {
            backend: self.backend.clone(),
            device: self.device.clone(),
            notes: std::mem::take(&mut self.notes),
            ..Observed::default()
        };
        let replay_index = walk(
            plan,
            maker,
            objects,
            &mut observed,
            ticker,
            &mut self.carried,
            place,
        )?;
        // Buffers made in the walk (every buffer made is kept here, released or not).
        if objects.buffer_of.len() != self.buffer_of.len() {
            self.buffer_of = Arc::new(objects.buffer_of.clone());
        }
        self.recorder
            .flush()
            .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
        // Packed as they are decoded: a chunk's records are never all decoded at once.
        let (mut objects, mut records) = (Vec::new(), Packed::default());
        self.drain_each(|record| {
            if structural(&record) {
                objects.push(record);
            } else {
                records.extend([record]);
            }
        })?;
        records.shrink();
        if !objects.is_empty() {
            let mut structure = Vec::clone(&self.structure);
            structure.extend(objects);
            self.structure = Arc::new(structure);
        }
        Ok(ChunkRun {
            observed,
            replay_index,
            structure: self.structure.clone(),
            records,
            buffer_of: self.buffer_of.clone(),
        })
    }

    /// The replay runtime (until [`Session::finish`]).
    pub fn runtime(&self) -> Option<&Runtime> {
        self.runtime.as_ref()
    }

    /// Ends the replay runtime (its workers joined, its pending digests written) and takes
    /// the records written since the last chunk.
    pub fn finish(mut self) -> Result<Vec<Record>, ReplayError> {
        drop(std::mem::take(&mut self.carried));
        drop(self.objects.take());
        drop(self.runtime.take());
        let summary = self
            .recorder
            .close()
            .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
        if summary.dropped_records > 0 {
            return Err(ReplayError::Measurement {
                why: format!(
                    "the replay's recorder dropped {} records (the machine is overloaded?)",
                    summary.dropped_records
                ),
            });
        }
        self.drain()
    }
}

/// Replays `plan` once and reads back what the replay recorded; a timed repeat is given
/// `clocks`, which reads the GPU's clocks before its first one (after the runtime opened,
/// before anything runs).
pub(crate) fn run(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    fault: Option<hrx::FaultSpec>,
    contents: bool,
    ticker: &mut Ticker<'_>,
    clocks: Option<&mut crate::clocks::ClockWatch>,
) -> Result<Observed, ReplayError> {
    let mut session = Session::open(plan, options, fault, contents)?;
    if let (Some(clocks), Some(runtime)) = (clocks, session.runtime()) {
        clocks.before(runtime);
    }
    let mut run = session.run_chunk(plan, options, None, ticker)?;
    run.records.extend(session.finish()?);
    Ok(run.observe(plan))
}

#[cfg(test)]
mod tests {
    use super::Packed;
    use hrx_capture::schema::Record;

    /// A replayed run's records (blobs over the 4 KiB inlined among them) come back from
    /// their packed form as they went in, in order, in less room than decoded.
    #[test]
    fn packed_records_unpack_as_they_were_in_less_room() {
        let records = hrx_capture::Trace::from_bytes(&crate::chunk::tests::frames([0, 1, 2, 0]))
            .expect("read back")
            .records;
        assert!(records.iter().any(|r| matches!(r, Record::Blob(_))));
        assert!(records.iter().any(|r| matches!(r, Record::RegionTiming(_))));
        let packed = Packed::of(records.clone());
        assert_eq!(packed.unpack(), records);
        // What the decoded records take: each its size, a blob its bytes besides.
        let blob_bytes: usize = (records.iter())
            .map(|r| match r {
                Record::Blob(b) => b.bytes.len(),
                _ => 0,
            })
            .sum();
        let decoded = records.len() * std::mem::size_of::<Record>() + blob_bytes;
        assert!(
            packed.bytes.len() < decoded,
            "{} bytes packed, {decoded} decoded",
            packed.bytes.len()
        );
    }
}
