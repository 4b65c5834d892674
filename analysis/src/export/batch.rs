//! Encoding on worker threads, written in order.
//!
//! The joining thread (the pass) decides everything about the output that depends on what
//! came before: which tracks to declare, the flows, which interned names are new. It hands
//! each region slice to a [`Batch`] as a few numbers ([`SliceRec`]) and writes anything
//! rarer (a track, an instant, an operation's slice) as encoded bytes into the batch
//! ([`Item::Raw`]). Full batches go round-robin to [`encode_threads`] workers, which turn
//! them into the format's bytes; the writing thread takes the workers' outputs in the same
//! round-robin order, so the output is the concatenation of the batches in the order the
//! pass made them: the same bytes whatever the number of workers (0: the joining thread
//! encodes them itself).
//!
//! What is held is bounded: each worker has at most one batch waiting, one being encoded
//! and one encoded output waiting for the writer, and a batch holds at most [`SLICES`]
//! slices and about [`RAW`] bytes of other events.

use hrx_capture::schema::CrossWait;
use std::io::{self, Write};
use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

/// Region slices per batch: about 0.1-0.6 MB of output (Perfetto, Chrome).
pub(super) const SLICES: usize = 1024;

/// Bytes of other events after which a batch is handed on.
const RAW: usize = 256 << 10;

/// Workers encoding batches beside the pass: the cores left beside the reading, decoding,
/// joining and writing threads, at least one (so the joining thread never encodes) and at
/// most four (Chrome JSON, the costlier format, is encoded at about 4x the rate the join
/// makes slices on one core).
pub fn encode_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores
        .saturating_sub(3 + crate::decode_threads())
        .clamp(1, 4)
}

/// One region slice: what its bytes are made of beside its region's constant part.
#[derive(Clone, Copy, Debug)]
pub(super) struct SliceRec {
    pub start_ns: u64,
    pub end_ns: u64,
    pub submission: u64,
    /// Device-clock duration, where recorded.
    pub device_ns: Option<u64>,
    /// The region's run failed.
    pub failed: bool,
    /// Chrome's `pid` and `tid`, Perfetto's track uuid.
    pub pid: u32,
    pub tid: u32,
    pub uuid: u64,
    /// The region's index in its prepared graph.
    pub region: u32,
    /// The submission's slot.
    pub slot: u32,
    /// Whether the graph's own hazards are listed (a slice written after its submission
    /// lists none, and no waits).
    pub graph_hazards: bool,
    /// Index in [`Batch::constants`].
    pub constant: u32,
    /// Ranges in [`Batch::waits`] and [`Batch::flows`].
    pub waits: (u32, u32),
    pub flows_out: (u32, u32),
    pub flows_in: (u32, u32),
    /// Where its flows bind (Chrome's JSON; [`super::RegionSlice`]'s `bind_ns`).
    pub bind_ns: u64,
}

/// A piece of the output, in order.
#[derive(Clone, Debug)]
pub(super) enum Item {
    /// Bytes already encoded, in [`Batch::raw`].
    Raw(Range<usize>),
    /// A region slice for the worker to encode.
    Slice(SliceRec),
}

/// Events in output order, for a worker to encode. `C`: a region's constant part, as the
/// format encodes it (made once per region, shared by the batches that use it).
#[derive(Debug)]
pub(super) struct Batch<C> {
    pub raw: Vec<u8>,
    pub items: Vec<Item>,
    pub waits: Vec<CrossWait>,
    pub flows: Vec<u64>,
    pub constants: Vec<Arc<C>>,
    slices: usize,
}

impl<C> Default for Batch<C> {
    fn default() -> Batch<C> {
        Batch {
            raw: Vec::new(),
            items: Vec::new(),
            waits: Vec::new(),
            flows: Vec::new(),
            constants: Vec::new(),
            slices: 0,
        }
    }
}

impl<C> Batch<C> {
    fn clear(&mut self) {
        self.raw.clear();
        self.items.clear();
        self.waits.clear();
        self.flows.clear();
        self.constants.clear();
        self.slices = 0;
    }

    /// Ends a raw piece that started at `start` in [`Batch::raw`] (joined to the raw piece
    /// before it, if any).
    pub fn end_raw(&mut self, start: usize) {
        let end = self.raw.len();
        if start == end {
            return;
        }
        if let Some(Item::Raw(last)) = self.items.last_mut()
            && last.end == start
        {
            last.end = end;
            return;
        }
        self.items.push(Item::Raw(start..end));
    }

    /// Appends `items` to [`Batch::flows`]; returns their range.
    pub fn flows(&mut self, items: &[u64]) -> (u32, u32) {
        let start = self.flows.len() as u32;
        self.flows.extend_from_slice(items);
        (start, self.flows.len() as u32)
    }

    /// Appends a slice.
    pub fn slice(&mut self, rec: SliceRec) {
        self.items.push(Item::Slice(rec));
        self.slices += 1;
    }

    fn full(&self) -> bool {
        self.slices >= SLICES || self.raw.len() >= RAW
    }
}

/// A format's batch encoder: appends a batch's bytes to the output buffer.
pub(super) type Encode<C> = fn(&Batch<C>, &mut Vec<u8>);

/// The joining thread's end of the pipeline: the batch being filled.
pub(super) struct Batches<C> {
    pub batch: Batch<C>,
    /// Where each batch goes: the workers round-robin, or (none) encoded here.
    workers: Vec<SyncSender<Batch<C>>>,
    next: usize,
    /// Batches handed on so far.
    handed: u64,
    /// Batches the workers are done with, for reuse.
    back: Receiver<Batch<C>>,
    /// Without workers: the encoder and the writer's channels.
    inline: Option<Inline<C>>,
}

/// Encoding on the producing thread: the encoder, the writer's channel and the buffers it
/// gives back.
struct Inline<C> {
    encode: Encode<C>,
    send: SyncSender<Vec<u8>>,
    back: Receiver<Vec<u8>>,
}

/// A region's constant part as last made: for its label, and where it was last added
/// (by the count of batches handed on before, the number of the batch being filled).
struct Part<C> {
    label: String,
    part: Arc<C>,
    /// The batch (its number) and the index in its constants.
    batch: u64,
    index: u32,
}

/// Each region's constant part (model-wide, by region), added to a batch once per batch.
pub(super) struct Parts<C> {
    regions: Vec<Option<Part<C>>>,
}

impl<C> Default for Parts<C> {
    fn default() -> Parts<C> {
        Parts {
            regions: Vec::new(),
        }
    }
}

impl<C> Parts<C> {
    /// Whether `region`'s part must be made: none yet, or made for another label.
    pub fn stale(&self, region: usize, label: &str) -> bool {
        !matches!(self.regions.get(region), Some(Some(p)) if p.label == label)
    }

    /// Sets `region`'s part, made for `label`.
    pub fn set(&mut self, region: usize, label: &str, part: C) {
        if self.regions.len() <= region {
            self.regions.resize_with(region + 1, || None);
        }
        self.regions[region] = Some(Part {
            label: label.to_owned(),
            part: Arc::new(part),
            batch: u64::MAX,
            index: 0,
        });
    }

    /// The index of `region`'s part (set before) in the batch being filled.
    pub fn index(&mut self, region: usize, batches: &mut Batches<C>) -> io::Result<u32> {
        let handed = batches.handed;
        let Some(Some(p)) = self.regions.get_mut(region) else {
            return Err(io::Error::other("a region's constant part is missing"));
        };
        if p.batch != handed {
            p.batch = handed;
            p.index = batches.batch.constants.len() as u32;
            batches.batch.constants.push(Arc::clone(&p.part));
        }
        Ok(p.index)
    }
}

impl<C> Batches<C> {
    /// Hands the batch on when it is full; call after each event.
    #[inline]
    pub fn maybe_hand_off(&mut self) -> io::Result<()> {
        if self.batch.full() {
            self.hand_off()
        } else {
            Ok(())
        }
    }

    /// Hands the batch on (when it holds anything) and starts another.
    pub fn hand_off(&mut self) -> io::Result<()> {
        if self.batch.items.is_empty() {
            return Ok(());
        }
        self.handed += 1;
        if let Some(inline) = &self.inline {
            let mut out = inline.back.try_recv().unwrap_or_default();
            (inline.encode)(&self.batch, &mut out);
            self.batch.clear();
            return inline.send.send(out).map_err(|_| stopped());
        }
        let mut fresh = self.back.try_recv().unwrap_or_default();
        fresh.clear();
        let full = std::mem::replace(&mut self.batch, fresh);
        let at = self.next;
        self.next = (at + 1) % self.workers.len();
        self.workers[at].send(full).map_err(|_| stopped())
    }

    /// Hands on the last batch and ends the stream.
    pub fn finish(&mut self) -> io::Result<()> {
        self.hand_off()?;
        self.workers.clear();
        self.inline = None;
        Ok(())
    }
}

/// A worker's encoded outputs, and the writer's emptied buffers going back to it.
type Output = (Receiver<Vec<u8>>, Sender<Vec<u8>>);

/// The writing thread stopped; its own error is the one reported.
fn stopped() -> io::Error {
    io::Error::other("the output's writing thread stopped")
}

/// Runs `produce` with a [`Batches`] whose batches `workers` threads encode with `encode`
/// (the producing thread itself when 0) and a writing thread writes into `out` in the
/// order they were made, then flushes `out`. A write error stops the writing thread and
/// is the error returned.
///
/// # Errors
///
/// What `produce` returns, or the output's first write or flush error.
pub(super) fn encode_on_threads<W, C, T, E>(
    out: W,
    workers: usize,
    encode: Encode<C>,
    produce: impl FnOnce(Batches<C>) -> Result<T, E>,
) -> Result<T, E>
where
    W: Write + Send,
    C: Send + Sync,
    E: From<io::Error>,
{
    std::thread::scope(|scope| {
        let (give_back, back) = channel::<Batch<C>>();
        // Per worker (or the one inline encoder): encoded outputs to the writer, and the
        // writer's emptied buffers back.
        let mut outputs: Vec<Output> = Vec::new();
        let mut senders = Vec::new();
        let mut inline = None;
        if workers == 0 {
            let (send, receive) = sync_channel::<Vec<u8>>(2);
            let (returned, take) = channel::<Vec<u8>>();
            outputs.push((receive, returned));
            inline = Some(Inline {
                encode,
                send,
                back: take,
            });
        }
        for _ in 0..workers {
            let (send, receive) = sync_channel::<Batch<C>>(1);
            let (encoded, encoded_rx) = sync_channel::<Vec<u8>>(1);
            let (returned, take) = channel::<Vec<u8>>();
            let give_back = give_back.clone();
            senders.push(send);
            outputs.push((encoded_rx, returned));
            scope.spawn(move || {
                for mut batch in receive {
                    let mut out = take.try_recv().unwrap_or_default();
                    encode(&batch, &mut out);
                    if encoded.send(out).is_err() {
                        return;
                    }
                    batch.clear();
                    // The producer may be gone already; the batch is then freed.
                    let _ = give_back.send(batch);
                }
            });
        }
        drop(give_back);
        let writing = scope.spawn(move || -> io::Result<()> {
            let mut out = out;
            'all: loop {
                for (receive, returned) in &outputs {
                    let Ok(mut chunk) = receive.recv() else {
                        break 'all;
                    };
                    out.write_all(&chunk)?;
                    chunk.clear();
                    let _ = returned.send(chunk);
                }
            }
            out.flush()
        });
        let batches = Batches {
            batch: Batch::default(),
            workers: senders,
            next: 0,
            handed: 0,
            back,
            inline,
        };
        // `produce` consumes the batches: when it returns, the senders are gone, the
        // workers end after their last batch and the writer after the last output.
        let produced = produce(batches);
        let written = writing
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (produced, written) {
            (_, Err(error)) => Err(error.into()),
            (produced, Ok(())) => produced,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `limit` bytes, then fails every write.
    struct Full {
        taken: Vec<u8>,
        limit: usize,
    }

    impl Write for Full {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let room = self.limit - self.taken.len();
            if room == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "device full"));
            }
            let n = bytes.len().min(room);
            self.taken.extend_from_slice(&bytes[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Each slice as its start, then the raw bytes: a stand-in format.
    fn encode(batch: &Batch<()>, out: &mut Vec<u8>) {
        for item in &batch.items {
            match item {
                Item::Raw(range) => out.extend_from_slice(&batch.raw[range.clone()]),
                Item::Slice(s) => out.extend_from_slice(&s.start_ns.to_le_bytes()),
            }
        }
    }

    fn rec(start_ns: u64) -> SliceRec {
        SliceRec {
            start_ns,
            end_ns: start_ns,
            submission: 0,
            device_ns: None,
            failed: false,
            pid: 0,
            tid: 0,
            uuid: 0,
            region: 0,
            slot: 0,
            graph_hazards: true,
            constant: 0,
            waits: (0, 0),
            flows_out: (0, 0),
            flows_in: (0, 0),
            bind_ns: start_ns,
        }
    }

    fn produce(mut b: Batches<()>) -> io::Result<()> {
        for i in 0..10 * SLICES as u64 + 7 {
            if i % 97 == 0 {
                let start = b.batch.raw.len();
                b.batch.raw.extend_from_slice(b"raw");
                b.batch.end_raw(start);
            }
            b.batch.slice(rec(i));
            b.maybe_hand_off()?;
        }
        b.finish()
    }

    #[test]
    fn batches_arrive_in_order_whatever_the_workers() {
        let mut expected = Vec::new();
        encode_on_threads(&mut expected, 0, encode, produce).unwrap();
        assert_eq!(
            expected.len(),
            (10 * SLICES + 7) * 8 + 3 * (10 * SLICES / 97 + 1)
        );
        for workers in [1, 2, 3, 4] {
            let mut out = Vec::new();
            encode_on_threads(&mut out, workers, encode, produce).unwrap();
            assert!(out == expected, "{workers} workers");
        }
    }

    #[test]
    fn the_outputs_error_is_the_one_returned() {
        for workers in [0, 2] {
            let full = Full {
                taken: Vec::new(),
                limit: 3 * SLICES * 8 + 10,
            };
            let error = encode_on_threads(full, workers, encode, produce).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::StorageFull, "{error}");
        }
    }
}
