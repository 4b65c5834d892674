//! Records blocks decoded ahead on threads of their own ([`TraceReader::decode_ahead`]).
//!
//! A records block is an independent compressed frame (its own checksum, compression and
//! frame decoder state), so blocks can be decompressed and decoded in any order. The
//! reader still reads the file in order on its own thread: it reads a clean records
//! block's header and payload, hands the payload to a decoding thread and goes on to the
//! next, up to a few blocks ahead; each block's records come back in order through a
//! channel of its own, in chunks of [`CHUNK`] records, the blocks' channels queued in file
//! order. Anything that is not a clean records block (a damaged header, a footer, a
//! summary, the end of the input, a read error) stops the reading ahead and is held until
//! every block before it was handed out, then handled by the same code as without decoding
//! threads: the records, warnings and recovery are the same, in the same order.
//!
//! What is held stays small: a block of 1 MiB of frames holds about 110,000 records of
//! 160 bytes each once decoded (18 MB), so a thread stops after [`CHUNKS_PER_BLOCK`]
//! chunks until the reader takes them. The thread decoding the block being read is never
//! stopped for long; the others have their blocks verified, decompressed and the first
//! chunks decoded by then.

use super::{BlockDecoder, Current, ReadError, Remains, Skip, TraceReader, WarningKind};
use crate::format::{BLOCK_HEADER_LEN, BlockHeader, BlockKind, FormatError, decode_payload};
use crate::schema::Record;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Records per chunk handed from a decoding thread to the reader.
const CHUNK: usize = 4096;

/// Chunks of one block decoded ahead of the reader at most.
const CHUNKS_PER_BLOCK: usize = 4;

/// One record's decoding: the record, or its warning (see `BlockDecoder::next_record`).
pub(super) type Item = Result<Record, Skip>;

/// What a decoding thread sends about its block, in order: `Skipped` alone, or chunks of
/// records and then `End`.
enum Piece {
    /// The payload does not verify or decompress: the block is skipped whole (unless what
    /// it leaves holds another trace's start).
    Skipped(FormatError, Option<Remains>),
    Items(VecDeque<Item>),
    /// The block's closing warnings (`BlockDecoder::finish`).
    End(Vec<WarningKind>),
}

/// A block being decoded on a decoding thread, read chunk by chunk.
pub(super) struct Decoded {
    chunk: VecDeque<Item>,
    rest: Receiver<Piece>,
    /// Its closing warnings, once its last chunk was taken.
    finish: Option<Vec<WarningKind>>,
    /// Emptied chunks go back to the decoding threads.
    spare: crossbeam_channel::Sender<VecDeque<Item>>,
}

impl Decoded {
    pub(super) fn next_record(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.chunk.pop_front() {
                return Some(item);
            }
            if self.finish.is_some() {
                return None;
            }
            match self.rest.recv() {
                Ok(Piece::Items(chunk)) => {
                    let empty = std::mem::replace(&mut self.chunk, chunk);
                    let _ = self.spare.try_send(empty);
                }
                Ok(Piece::End(warnings)) => self.finish = Some(warnings),
                // Sent only first, and then handled by `step_ahead`.
                Ok(Piece::Skipped(..)) => self.finish = Some(Vec::new()),
                Err(_) => panic!("the thread decoding a records block panicked"),
            }
        }
    }

    /// Its closing warnings (after `next_record` returned `None`).
    pub(super) fn finish(self) -> Vec<WarningKind> {
        self.finish.unwrap_or_default()
    }
}

/// Verifies, decompresses and decodes one records block into `reply` (what
/// `records_block` and `next_in_block` do one record at a time). Stops when the reader is
/// gone.
fn decode(
    header: &BlockHeader,
    newer: bool,
    stored: Vec<u8>,
    reply: &SyncSender<Piece>,
    spare: &crossbeam_channel::Receiver<VecDeque<Item>>,
) {
    let decompressed = match decode_payload(header, &stored) {
        Ok(Cow::Owned(payload)) => Some(payload),
        Ok(Cow::Borrowed(_)) => None,
        Err(error) => {
            let remains = Remains::of(header, &stored, &error);
            let _ = reply.send(Piece::Skipped(error, remains));
            return;
        }
    };
    let payload = decompressed.unwrap_or(stored);
    let fresh = || {
        let mut chunk = spare
            .try_recv()
            .unwrap_or_else(|_| VecDeque::with_capacity(CHUNK));
        chunk.clear();
        chunk
    };
    let mut block = BlockDecoder::new(Cow::Owned(payload), header.record_count, newer);
    let mut chunk = fresh();
    while let Some(item) = block.next_record() {
        chunk.push_back(item);
        if chunk.len() == CHUNK {
            let full = std::mem::replace(&mut chunk, fresh());
            if reply.send(Piece::Items(full)).is_err() {
                return;
            }
        }
    }
    if !chunk.is_empty() && reply.send(Piece::Items(chunk)).is_err() {
        return;
    }
    let _ = reply.send(Piece::End(block.finish()));
}

struct Job {
    header: BlockHeader,
    /// Whether the file is of a newer minor version than the reader's.
    newer: bool,
    stored: Vec<u8>,
    reply: SyncSender<Piece>,
}

/// A block handed to a decoding thread, in file order.
struct Pending {
    at: u64,
    records: u32,
    reply: Receiver<Piece>,
}

/// What stopped the reading ahead, handled once the blocks before it are handed out.
enum Held {
    /// The input ended between blocks.
    End,
    /// The input ended inside a block header: the bytes read of it.
    Short(Vec<u8>),
    /// The input ended inside the payload of the block at this offset, of this header: what
    /// was read of it.
    Torn(u64, BlockHeader, Vec<u8>),
    /// A block header that is damaged or not a records block's, read at this offset.
    Header(u64, [u8; BLOCK_HEADER_LEN]),
    /// A read failed.
    Failed(ReadError),
}

/// The decoding threads and the blocks in flight.
pub(super) struct Ahead {
    jobs: Option<crossbeam_channel::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    pending: VecDeque<Pending>,
    held: Option<Held>,
    /// Blocks read ahead at most.
    limit: usize,
    /// Emptied chunks, for the decoding threads to reuse.
    spare: (
        crossbeam_channel::Sender<VecDeque<Item>>,
        crossbeam_channel::Receiver<VecDeque<Item>>,
    ),
}

impl Ahead {
    /// `threads` decoding threads; `None` when none could be started.
    pub(super) fn start(threads: usize) -> Option<Ahead> {
        let limit = threads + 1;
        let (jobs, receive) = crossbeam_channel::bounded::<Job>(limit);
        let spare = crossbeam_channel::bounded(limit * (CHUNKS_PER_BLOCK + 1));
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let receive = receive.clone();
            let spare = spare.1.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("hrx-decode-{i}"))
                .spawn(move || {
                    for job in receive {
                        decode(&job.header, job.newer, job.stored, &job.reply, &spare);
                    }
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(_) => break,
            }
        }
        (!handles.is_empty()).then(|| Ahead {
            jobs: Some(jobs),
            threads: handles,
            pending: VecDeque::new(),
            held: None,
            limit,
            spare,
        })
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // Ends the threads: a thread stopped on a full block channel sees it closed.
        self.jobs = None;
        self.pending.clear();
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads clean records blocks ahead and hands them to the decoding threads, until
    /// `limit` are in flight or something else is met (then held).
    fn read_ahead(&mut self) {
        loop {
            let Some(ahead) = &self.ahead else { return };
            if ahead.held.is_some() || ahead.pending.len() >= ahead.limit || self.done {
                return;
            }
            let held = match self.read_one_ahead() {
                Ok(None) => continue,
                Ok(Some(held)) => held,
                Err(error) => Held::Failed(error),
            };
            if let Some(ahead) = &mut self.ahead {
                ahead.held = Some(held);
            }
        }
    }

    /// Reads one block: a clean records block goes to a decoding thread (`None`); anything
    /// else is returned to be held.
    fn read_one_ahead(&mut self) -> Result<Option<Held>, ReadError> {
        let at = self.offset;
        let mut raw = [0u8; BLOCK_HEADER_LEN];
        let n = self.read_up_to(&mut raw)?;
        if n == 0 {
            return Ok(Some(Held::End));
        }
        if n < BLOCK_HEADER_LEN {
            return Ok(Some(Held::Short(raw[..n].to_vec())));
        }
        let header = match BlockHeader::decode(&raw) {
            Ok(header) if header.kind == BlockKind::RECORDS => header,
            _ => return Ok(Some(Held::Header(at, raw))),
        };
        let stored = self.read_payload(header.stored_len)?;
        if stored.len() < header.stored_len as usize {
            return Ok(Some(Held::Torn(at, header, stored)));
        }
        self.last_block = (self.offset, super::block_tail(&header, &stored));
        self.blocks_seen += 1;
        let Some(ahead) = &mut self.ahead else {
            return Ok(None);
        };
        let (reply, receive) = sync_channel(CHUNKS_PER_BLOCK);
        let job = Job {
            header,
            newer: super::is_newer_minor(self.header.version),
            stored,
            reply,
        };
        let sent = ahead.jobs.as_ref().map(|jobs| jobs.send(job));
        if let Some(Err(crossbeam_channel::SendError(job))) = sent {
            // Every decoding thread is gone (one panicked): this block is decoded here,
            // with room for all its chunks.
            let (reply, receive) = sync_channel(usize::MAX >> 8);
            decode(&job.header, job.newer, job.stored, &reply, &ahead.spare.1);
            ahead.pending.push_back(Pending {
                at,
                records: header.record_count,
                reply: receive,
            });
            return Ok(None);
        }
        ahead.pending.push_back(Pending {
            at,
            records: header.record_count,
            reply: receive,
        });
        Ok(None)
    }

    /// The step of `next` that makes the next block current when decoding ahead: the next
    /// decoded block, or, once none is in flight, what stopped the reading ahead.
    pub(super) fn step_ahead(&mut self) -> Result<(), ReadError> {
        self.read_ahead();
        let Some(ahead) = &mut self.ahead else {
            return self.next_block();
        };
        if let Some(pending) = ahead.pending.pop_front() {
            let first = pending
                .reply
                .recv()
                .unwrap_or_else(|_| panic!("the thread decoding a records block panicked"));
            // A block after the one skipped last: that one was not a torn end.
            self.damaged = None;
            let (chunk, finish) = match first {
                Piece::Skipped(error, remains) => {
                    if remains.as_ref().is_some_and(|r| r.header.is_some()) {
                        // Another trace starts inside it: what was read ahead is that
                        // trace's.
                        ahead.pending.clear();
                        ahead.held = None;
                    }
                    self.previous = Some(BlockKind::RECORDS);
                    return self.damaged_block(pending.at, pending.records, error, remains);
                }
                Piece::Items(chunk) => (chunk, None),
                Piece::End(warnings) => (VecDeque::new(), Some(warnings)),
            };
            let decoded = Decoded {
                chunk,
                rest: pending.reply,
                finish,
                spare: ahead.spare.0.clone(),
            };
            self.mark_block();
            self.previous = Some(BlockKind::RECORDS);
            self.recovery.complete_blocks += 1;
            self.block = Some((pending.at, Current::Decoded(decoded)));
            return Ok(());
        }
        match ahead.held.take() {
            None | Some(Held::End) => self.done = true,
            Some(Held::Short(raw)) => self.short_header(&raw)?,
            Some(Held::Torn(at, header, stored)) => self.torn_payload(at, &header, &stored)?,
            Some(Held::Header(at, raw)) => self.block_from_header(at, raw)?,
            Some(Held::Failed(error)) => return Err(error),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{Recovery, Warning};
    use crate::schema::testgen::{KINDS, Rng, record};
    use crate::writer::{MemorySink, Recorder, RecorderOptions};
    use std::io;

    /// A closed trace of `records` records in blocks of `block_bytes`.
    fn trace(block_bytes: usize, records: u64) -> Vec<u8> {
        let sink = MemorySink::new();
        let options = RecorderOptions {
            block_bytes,
            // Wait for room rather than drop: every record is written.
            full_buffer_wait: std::time::Duration::from_secs(60),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        let mut rng = Rng(11);
        for k in 0..records {
            recorder.record(&record(&mut rng, k % KINDS));
            if k % 97 == 0 {
                recorder.flush().unwrap();
            }
        }
        recorder.close().unwrap();
        sink.contents()
    }

    /// Fails every read once `limit` bytes were read.
    struct Failing<'a> {
        bytes: &'a [u8],
        limit: usize,
    }

    impl io::Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.limit == 0 {
                return Err(io::Error::other("the disk went away"));
            }
            let n = buf.len().min(self.limit).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            self.limit -= n;
            Ok(n)
        }
    }

    type Outcome = (Vec<Result<(u64, Record), String>>, Vec<Warning>, Recovery);

    fn read(reader: Result<TraceReader<impl io::Read>, ReadError>, threads: usize) -> Outcome {
        let Ok(reader) = reader else {
            return (Vec::new(), Vec::new(), Recovery::default());
        };
        let mut reader = reader.check_submission_numbers().decode_ahead(threads);
        assert_eq!(reader.ahead.is_some(), threads > 0);
        let items = reader
            .by_ref()
            .map(|item| item.map_err(|e| e.to_string()))
            .collect();
        (items, reader.warnings().to_vec(), *reader.recovery())
    }

    #[test]
    fn decoding_ahead_reads_the_same_records_warnings_and_recovery() {
        // Many small blocks.
        let whole = trace(2048, KINDS * 40);
        let len = whole.len();
        let mut files: Vec<(String, Vec<u8>)> = vec![("whole".into(), whole.clone())];
        for cut in [len / 3, len / 2 + 17, len - 5, len - 40] {
            files.push((format!("cut at {cut}"), whole[..cut].to_vec()));
        }
        // A damaged payload (the block is skipped), a damaged block header (the reader
        // resynchronizes), garbage between blocks, a trace joined after this one.
        for at in [len / 4, len / 2, 3 * len / 4] {
            let mut damaged = whole.clone();
            damaged[at..at + 48].fill(0xA5);
            files.push((format!("damaged at {at}"), damaged));
        }
        let mut garbage = whole[..len / 2].to_vec();
        garbage.extend_from_slice(&[7u8; 300]);
        garbage.extend_from_slice(&whole[len / 2..]);
        files.push(("garbage in the middle".into(), garbage));
        let mut joined = whole[..len / 2].to_vec();
        joined.extend_from_slice(&whole);
        files.push(("another trace after a cut one".into(), joined));
        // Blocks of more records than a decoding thread sends before it waits.
        let big = trace(1 << 20, 3 * (CHUNK * CHUNKS_PER_BLOCK) as u64);
        let mut damaged = big.clone();
        let at = 2 * big.len() / 3;
        damaged[at..at + 48].fill(0xA5);
        files.push(("big blocks".into(), big.clone()));
        files.push(("big blocks, damaged".into(), damaged));
        files.push(("big blocks, cut".into(), big[..big.len() / 2].to_vec()));
        let mut blocks_seen = 0;
        let mut kinds = std::collections::BTreeSet::new();
        for (name, file) in &files {
            let one = read(TraceReader::new(&file[..]), 0);
            for threads in [1, 3] {
                let ahead = read(TraceReader::new(&file[..]), threads);
                assert!(
                    one.0 == ahead.0,
                    "{name}, {threads} threads: records differ"
                );
                assert_eq!(one.1, ahead.1, "{name}, {threads} threads: warnings");
                assert_eq!(one.2, ahead.2, "{name}, {threads} threads: recovery");
            }
            blocks_seen = blocks_seen.max(one.2.complete_blocks);
            for w in &one.1 {
                let kind = format!("{:?}", w.kind);
                kinds.insert(kind[..kind.find([' ', '{', '(']).unwrap_or(kind.len())].to_owned());
            }
            assert!(!one.0.is_empty(), "{name}");
        }
        // The damage the files were made with was met (and read the same way).
        for kind in [
            "BlockSkipped",
            "Resynchronized",
            "TruncatedTail",
            "BadFooter",
        ] {
            assert!(kinds.contains(kind), "no {kind} in {kinds:?}");
        }
        // Many blocks: more than are ever in flight.
        assert!(blocks_seen > 20, "{blocks_seen} blocks");
        // A read error mid-file: the records before it, then the error, in both.
        for limit in [len / 3, len / 2 + 1000] {
            let failing = || Failing {
                bytes: &whole,
                limit,
            };
            let one = read(TraceReader::new(failing()), 0);
            let ahead = read(TraceReader::new(failing()), 2);
            assert!(matches!(one.0.last(), Some(Err(e)) if e.contains("went away")));
            assert!(one.0 == ahead.0, "a read error at {limit}: records differ");
            assert_eq!(one.2, ahead.2);
        }
    }

    #[test]
    fn a_reader_dropped_mid_file_stops_its_threads() {
        let whole = trace(2048, KINDS * 40);
        let mut reader = TraceReader::new(&whole[..]).unwrap().decode_ahead(2);
        assert!(reader.next().is_some());
        // Joins the decoding threads (a hang here would be a leak).
        drop(reader);
    }
}
