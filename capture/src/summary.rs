//! Block summaries (format 1.9): what each records block timed, per lane, so a viewer can
//! draw the whole trace zoomed out without decoding a single record.
//!
//! After every records block it writes, the recorder's writer thread writes a small
//! uncompressed block of kind [`BlockKind::SUMMARY`]: one [`LaneSummary`] per lane (one
//! queue of one runtime) that region timings were resolved to while the block was
//! assembled: how many, the first start, the last end, and the time they cover (their
//! union, the spans taken in arrival order). Readers of an older minor skip the kind with a
//! warning; this version's record readers skip it silently; [`read_summaries`] reads only
//! these blocks, hopping from block header to block header (two small reads per block, no
//! mapping, no decompression), so its cost grows with the number of blocks, not records.
//!
//! This is the level of detail Tracy and Perfetto compute when a trace is loaded (Tracy's
//! zoomed-out zone ranges, Perfetto's per-track summary tables), moved to the writer: it
//! already holds every timing as fixed-size fields before encoding it, so the summary costs
//! it a hash lookup per timing, and the reader's first frame costs nothing per region.
//!
//! **Placing a timing on its lane.** A [`RegionTiming`] names its submission and region,
//! not its queue. The writer peeks at the [`Prepared`](crate::schema::Prepared) records
//! that go through it (each region's queue) and at the head of every
//! [`Submit`](crate::schema::Submit) (runtime, prepared graph, submission): a map from
//! submission to prepared graph, pruned to the newest [`SUBMISSION_WINDOW`] submissions
//! of each runtime. A timing drained before its submit (another thread's ring drained
//! first) waits, up to [`PARKED_MAX`] of them, through one summary; one still unplaced at
//! the next is counted in [`BlockSummary::unplaced`]. So every timing is counted
//! once, in the summary of the block it is in or of a later one, or as unplaced: the
//! summaries' time ranges, not their file positions, say where it ran.
//!
//! What they do not show: per-operation timings, regions without a timing (cancelled
//! before running, still running at a crash), failures. A viewer says that its first
//! frame is a summary until the full index is read.

use crate::format::{BLOCK_HEADER_LEN, BlockHeader, BlockKind, FILE_HEADER_LEN, decode_payload};
use crate::reader::{ReadError, parse_header};
use crate::schema::{PreparedId, Queue, Record, RegionTiming, RuntimeId, SubmissionIndex};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Submissions per runtime whose prepared graph the writer remembers (older ones are
/// forgotten; a timing that late is unplaced).
pub const SUBMISSION_WINDOW: u64 = 1 << 16;

/// Timings the writer holds while their submit has not been seen yet.
pub const PARKED_MAX: usize = 4096;

/// Above this many bytes the writer stores a blob in a records block of its own, as is
/// (`RAW_BLOB_BYTES` in the writer).
const BLOB_ALONE_BYTES: u32 = 64 << 10;

/// Largest summary payload a reader accepts, in bytes (a summary holds a few dozen bytes
/// per lane).
pub const MAX_SUMMARY_BYTES: u32 = 1 << 20;

/// Record tags (postcard variant indices, [`Record::KIND_NAMES`] order) the writer peeks at.
const TAG_BLOB: u32 = 5;
const TAG_PREPARED: u32 = 8;
const TAG_SUBMIT: u32 = 9;

/// What one lane's region timings covered, for one summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneSummary {
    /// The runtime.
    pub runtime: RuntimeId,
    /// The queue.
    pub queue: Queue,
    /// Region timings.
    pub regions: u32,
    /// Earliest start, host ns.
    pub first_start_ns: u64,
    /// Latest end, host ns.
    pub last_end_ns: u64,
    /// Time covered by the timings' union (exact when they arrive in start order, as one
    /// queue's do; an overlap arriving out of order may be counted twice), ns.
    pub busy_ns: u64,
}

/// The payload of a [`BlockKind::SUMMARY`] block (postcard).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSummary {
    /// One entry per lane with timings.
    pub lanes: Vec<LaneSummary>,
    /// Timings whose lane could not be told (their submit or prepared graph never seen).
    pub unplaced: u32,
}

/// Builds the summaries on the writer thread (see the module docs).
/// The writer's maps, keyed by small integer ids it chose itself (no untrusted keys): a
/// multiply-rotate hash (rustc's `FxHasher`) instead of SipHash, which cost the writer about
/// 600 instructions a region timing (callgrind, `host_visible`; BENCHMARKS.md).
type Map<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// `FxHasher`'s mixing step over the integers of a key.
#[derive(Default)]
struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Debug, Default)]
pub(crate) struct SummaryBuilder {
    queues: Map<(RuntimeId, PreparedId), Vec<Queue>>,
    submissions: Map<(RuntimeId, SubmissionIndex), PreparedId>,
    newest: Map<RuntimeId, u64>,
    /// Timings waiting for their submit, with the summaries they have waited through.
    parked: Vec<(RegionTiming, u8)>,
    /// The summary being built, with each lane's end of coverage so far.
    lanes: Vec<(LaneSummary, u64)>,
    unplaced: u32,
}

impl SummaryBuilder {
    /// Looks at one frame (varint length prefix, then the postcard record) on its way into
    /// a block: a `Prepared` or a `Submit` is remembered, anything else ignored.
    pub(crate) fn observe_frame(&mut self, frame: &[u8]) {
        let Some((len, prefix)) = crate::format::read_varint_u32(frame) else {
            return;
        };
        let Some(body) = frame.get(prefix..prefix + len as usize) else {
            return;
        };
        let Some((tag, _)) = crate::format::read_varint_u32(body) else {
            return;
        };
        match tag {
            TAG_SUBMIT => {
                // The head of a `Submit`: the tag, then runtime, prepared, submission.
                if let Ok(((_, runtime, prepared, submission), _)) =
                    postcard::take_from_bytes::<(u32, RuntimeId, PreparedId, SubmissionIndex)>(body)
                {
                    self.submitted(runtime, prepared, submission);
                }
            }
            TAG_PREPARED => {
                if let Ok(Record::Prepared(p)) = postcard::from_bytes::<Record>(body) {
                    let queues = p.regions.iter().map(|r| r.queue).collect();
                    self.queues.insert((p.runtime, p.prepared), queues);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn submitted(
        &mut self,
        runtime: RuntimeId,
        prepared: PreparedId,
        index: SubmissionIndex,
    ) {
        self.submissions.insert((runtime, index), prepared);
        let newest = self.newest.entry(runtime).or_default();
        *newest = (*newest).max(index.0);
        if self.submissions.len() as u64 > 2 * SUBMISSION_WINDOW * self.newest.len() as u64 {
            let newest = &self.newest;
            self.submissions
                .retain(|(r, s), _| s.0 + SUBMISSION_WINDOW >= newest[r]);
        }
    }

    /// Counts one region timing.
    pub(crate) fn observe_timing(&mut self, timing: &RegionTiming) {
        if !self.place(timing) {
            if self.parked.len() < PARKED_MAX {
                self.parked.push((*timing, 0));
            } else {
                self.unplaced += 1;
            }
        }
    }

    /// Adds `timing` to its lane's summary; false when its lane is not known (yet).
    fn place(&mut self, t: &RegionTiming) -> bool {
        let Some(prepared) = self.submissions.get(&(t.runtime, t.submission)) else {
            return false;
        };
        let Some(&queue) = self
            .queues
            .get(&(t.runtime, *prepared))
            .and_then(|q| q.get(t.region.0 as usize))
        else {
            return false;
        };
        let (start, end) = (t.start_ns, t.end_ns.max(t.start_ns));
        let at = match self
            .lanes
            .iter()
            .position(|(l, _)| l.runtime == t.runtime && l.queue == queue)
        {
            Some(at) => at,
            None => {
                let lane = LaneSummary {
                    runtime: t.runtime,
                    queue,
                    regions: 0,
                    first_start_ns: start,
                    last_end_ns: end,
                    busy_ns: 0,
                };
                self.lanes.push((lane, start));
                self.lanes.len() - 1
            }
        };
        let (lane, covered_to) = &mut self.lanes[at];
        lane.regions += 1;
        lane.first_start_ns = lane.first_start_ns.min(start);
        lane.last_end_ns = lane.last_end_ns.max(end);
        lane.busy_ns += end.saturating_sub(start.max(*covered_to));
        *covered_to = (*covered_to).max(end);
        true
    }

    /// The summary of what was counted since the last one (`None` when nothing was):
    /// parked timings are tried again first, and those that already waited through one
    /// summary are counted as unplaced.
    pub(crate) fn take(&mut self) -> Option<BlockSummary> {
        let parked = std::mem::take(&mut self.parked);
        for (timing, waited) in parked {
            if !self.place(&timing) {
                if waited >= 1 {
                    self.unplaced += 1;
                } else {
                    self.parked.push((timing, waited + 1));
                }
            }
        }
        if self.lanes.is_empty() && self.unplaced == 0 {
            return None;
        }
        let lanes = self.lanes.drain(..).map(|(l, _)| l).collect();
        Some(BlockSummary {
            lanes,
            unplaced: std::mem::take(&mut self.unplaced),
        })
    }
}

/// The summaries of a trace, read by [`read_summaries`].
#[derive(Clone, Debug, Default)]
pub struct Summaries {
    /// Every summary that decoded, in file order.
    pub blocks: Vec<BlockSummary>,
    /// Records blocks seen.
    pub records_blocks: u64,
    /// Records in those blocks (from their headers).
    pub records: u64,
    /// The file's length when read.
    pub file_len: u64,
    /// Where and why the hop stopped before the end of the file (a damaged or cut block:
    /// the full reader resynchronizes and reads on; the summaries stop there).
    pub stopped: Option<(u64, String)>,
    /// Summary blocks that did not decode (skipped).
    pub bad_summaries: u64,
    /// Bytes of the records blocks that each hold one captured content alone (a [`Blob`]
    /// record over 64 KiB, stored as is: a host write's or an output's bytes), headers
    /// included: what the trace holds that no timeline draws (a viewer's index leaves them
    /// out). Smaller blobs, stored among other records, are not counted.
    ///
    /// [`Blob`]: crate::schema::Blob
    pub contents_bytes: u64,
    /// The records the recorder dropped while recording, from the footer of a trace closed
    /// cleanly; `None` without a footer (not closed cleanly, or being recorded).
    pub dropped_records: Option<u64>,
}

impl Summaries {
    /// The trace's bytes less [`Summaries::contents_bytes`]: what a timeline's index reads
    /// records from (the pipeline workload's 35 MiB trace holds 48 regions, the rest its
    /// photos' contents).
    pub fn timeline_bytes(&self) -> u64 {
        self.file_len.saturating_sub(self.contents_bytes)
    }

    /// Whether the trace has summaries at all (a 1.9 writer's trace with timings).
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Region timings summarised, on a lane or unplaced.
    pub fn regions(&self) -> u64 {
        self.blocks
            .iter()
            .flat_map(|b| b.lanes.iter().map(|l| u64::from(l.regions)))
            .sum()
    }
}

/// The longest footer read for its count of dropped records: a footer lists every block (a
/// few bytes each), so 64 MiB is millions of blocks; a longer one is taken for damage.
const MAX_FOOTER_BYTES: u32 = 64 << 20;

/// Reads the block summaries of the trace at `path`, hopping from block header to block
/// header (see the module docs), and the footer of a trace closed cleanly for its count of
/// dropped records: nothing else of the trace is read or decoded.
///
/// # Errors
///
/// As [`crate::TraceReader::open`]: the file cannot be opened or read, or its header is
/// not a readable trace header. Damage after the header is not an error: the summaries stop
/// there ([`Summaries::stopped`]).
pub fn read_summaries(path: &Path) -> Result<Summaries, ReadError> {
    let mut file = crate::reader::open_file(path)?;
    let file_len = file.metadata().map_err(|e| ReadError::new(0, e))?.len();
    let mut fixed = [0u8; FILE_HEADER_LEN];
    let n = read_up_to(&mut file, &mut fixed).map_err(|e| ReadError::new(0, e))?;
    let header = parse_header(&fixed[..n], &mut Vec::new())?;
    let mut out = Summaries {
        file_len,
        ..Summaries::default()
    };
    let mut at = u64::from(header.header_len);
    let mut payload = Vec::new();
    while at < file_len {
        let mut raw = [0u8; BLOCK_HEADER_LEN];
        let read = file
            .seek(SeekFrom::Start(at))
            .and_then(|_| read_up_to(&mut file, &mut raw));
        let block = match read {
            Ok(n) if n == BLOCK_HEADER_LEN => BlockHeader::decode(&raw).map_err(|e| e.to_string()),
            Ok(_) => Err("the file ends inside a block header".to_owned()),
            Err(e) => Err(format!("I/O error: {e}")),
        };
        let block = match block {
            Ok(b) if at + b.block_len() <= file_len => b,
            Ok(_) => {
                out.stopped = Some((at, "the file ends inside a block".to_owned()));
                break;
            }
            Err(e) => {
                out.stopped = Some((at, e));
                break;
            }
        };
        match block.kind {
            BlockKind::RECORDS => {
                out.records_blocks += 1;
                out.records += u64::from(block.record_count);
                if holds_a_blob_alone(&mut file, &block) {
                    out.contents_bytes += block.block_len();
                }
            }
            BlockKind::SUMMARY if block.stored_len <= MAX_SUMMARY_BYTES => {
                payload.resize(block.stored_len as usize, 0);
                let read = file.read_exact(&mut payload);
                let summary = read
                    .map_err(|e| e.to_string())
                    .and_then(|()| decode_payload(&block, &payload).map_err(|e| e.to_string()))
                    .and_then(|p| {
                        postcard::from_bytes::<BlockSummary>(&p).map_err(|e| e.to_string())
                    });
                match summary {
                    Ok(summary) => out.blocks.push(summary),
                    Err(_) => out.bad_summaries += 1,
                }
            }
            BlockKind::SUMMARY => out.bad_summaries += 1,
            // The trailer follows: the end of a cleanly closed trace. Its count of dropped
            // records is what every verb says a trace lacks (the block index before it is a
            // few bytes a block).
            BlockKind::FOOTER if block.stored_len <= MAX_FOOTER_BYTES => {
                payload.resize(block.stored_len as usize, 0);
                out.dropped_records = file
                    .read_exact(&mut payload)
                    .ok()
                    .and_then(|()| decode_payload(&block, &payload).ok())
                    .and_then(|p| postcard::from_bytes::<crate::format::Footer>(&p).ok())
                    .map(|footer| footer.dropped_records);
                break;
            }
            BlockKind::FOOTER => break,
            _ => {}
        }
        at += block.block_len();
    }
    Ok(out)
}

/// Whether the records `block`, whose payload `file` is positioned at, is one [`Blob`]
/// stored as is (the writer's block of its own for contents over 64 KiB): one record,
/// uncompressed, longer than 64 KiB, its frame's tag `Blob` (a few bytes read).
///
/// [`Blob`]: crate::schema::Blob
fn holds_a_blob_alone(file: &mut (impl Read + Seek), block: &BlockHeader) -> bool {
    if block.record_count != 1
        || block.flags & crate::format::BLOCK_FLAG_ZSTD != 0
        || block.stored_len <= BLOB_ALONE_BYTES
    {
        return false;
    }
    // The frame's length (a varint of up to 5 bytes), then its tag.
    let mut head = [0u8; 6];
    let Ok(n) = read_up_to(file, &mut head) else {
        return false;
    };
    let Some((_, prefix)) = crate::format::read_varint_u32(&head[..n]) else {
        return false;
    };
    (head.get(prefix..n))
        .and_then(crate::format::read_varint_u32)
        .is_some_and(|(tag, _)| tag == TAG_BLOB)
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_up_to(src: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
