//! Block compression beside the writer: where the machine has CPUs to spare, the zstd call and
//! the stored bytes' checksum of each records block ([`BlockEncoder::encode_with`], about two
//! thirds of the writer's instructions on a timing stream: BENCHMARKS.md, "Session 37") run
//! on one or two compression threads, and the thread holding the core (the writer, or a
//! recording thread handing its ring over) drains, transcodes and writes.
//!
//! - **Same file.** Blocks are handed over in file order and written in that order by
//!   whoever holds the core, each followed by its summary block, as `Core::write_pending`
//!   writes them inline; zstd compresses each block alone, at the recorder's level, so the
//!   bytes are those the writer would have written itself. Blocks stored as they are (small
//!   summaries, bulk blobs, the fatal-signal flush's) stay on the thread holding the core.
//! - **Bounded memory.** At most [`Compressors::limit`] blocks (threads + 1) are in flight:
//!   handed over, not yet written. Handing over one more first writes the oldest, waiting
//!   for its compression, under the core lock: a recording thread that finds its ring full
//!   meanwhile waits for the core, and that wait is its [`crate::schema::RecorderWait`], as
//!   a wait for an inline compression was. The buffers of written blocks are reused.
//! - **Written when they must be.** A periodic flush, [`crate::Recorder::flush`], close, and
//!   every block written inline (which must come after them in the file) first write the
//!   blocks in flight, waiting for them: the flush interval bounds what a killed process
//!   loses as before, and a block in a flush report is in the file. A compression thread
//!   wakes the writer when it finishes a block, so finished blocks do not wait for the tick;
//!   that wake writes finished blocks only and drains no ring, so where a block ends never
//!   depends on when a compression finished.
//! - **Fatal signals.** The handler, holding the core, writes the blocks in flight first,
//!   from their payloads, stored uncompressed (it neither waits for a compression thread nor
//!   allocates), then its own. The compression threads block the termination signals, so
//!   that a signal sent to the process is never handled on a thread the writer may be
//!   waiting for while it holds the core (the handler would wait for the core in vain).
//! - **Forks.** A child forked without `exec` has none of its parent's threads: its copy of
//!   the parent's recorder is abandoned (`Core::abandon`) with the compressors forgotten,
//!   never locked nor joined. A recorder the child opens starts threads of its own.
//! - **Started late.** The threads start with the first block handed over, not when the
//!   recorder opens: the runtime's workers and the program's own threads start after the
//!   recorder, and these optional threads must not take the room they need under a limit on
//!   threads (`RLIMIT_NPROC`, a container's `pids.max`), where opening them first made a
//!   program that runs with threads=0 fail to start its runtime (break-it pass). A recorder
//!   closed before its first block starts none.
//! - **Errors.** A block whose compression or write fails fails as an inline one does (its
//!   records counted lost, the first error kept); a thread that cannot be started leaves one
//!   fewer (none: inline, as before).

use super::{Control, Core, MAX_RECORD_FRAME_SLACK, WriteError, lock};
use crate::format::{BlockEncoder, BlockKind};
use crossbeam_channel::Sender;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// The environment variable setting the compression threads of recorders whose
/// [`RecorderOptions::compression_threads`](super::RecorderOptions::compression_threads)
/// is `None`: `0` (compress on the writer thread), `1`, `2`, or `auto` (the default rule,
/// [`automatic_compression_threads`]).
pub const COMPRESSION_THREADS_ENV: &str = "HRX_TRACE_COMPRESSION_THREADS";

/// Most compression threads: two keep up with the writer's transcoding of a timing stream
/// (about 8,000 instructions of zstd a submission against 4,700 of the rest).
pub const MAX_COMPRESSION_THREADS: usize = 2;

/// Compression threads by the default rule: 2 where the process may run on 8 CPUs or more, 1
/// on 4 to 7, none below (the writer compresses inline, as it always did). A traced loop
/// keeps busy its submitting thread, the writer and the runtime's workers: a compression
/// thread is worth it only where CPUs are left over, and on one of 4 to 7 CPUs a single one
/// already halves the writer's work.
pub fn automatic_compression_threads() -> usize {
    match std::thread::available_parallelism().map_or(1, usize::from) {
        8.. => 2,
        4.. => 1,
        _ => 0,
    }
}

/// The compression threads [`COMPRESSION_THREADS_ENV`] asks for: `None` when it is unset,
/// empty or `auto` (the default rule), else its `0`, `1` or `2`. The runtime reads it when it
/// starts, as it reads the other `HRX_TRACE_*` variables, so that a mistyped value stops the
/// program with its name rather than leaving it untraced.
///
/// # Errors
///
/// [`WriteError::BadCompressionThreads`] for any other value (`3` is refused, not cut to
/// two: the variable takes what its documentation lists).
pub fn compression_threads_from_env() -> Result<Option<usize>, WriteError> {
    threads_in_env(std::env::var(COMPRESSION_THREADS_ENV))
}

/// [`compression_threads_from_env`] with the variable's value `env`.
fn threads_in_env(env: Result<String, std::env::VarError>) -> Result<Option<usize>, WriteError> {
    match env {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(text) => match text.as_str() {
            "" | "auto" => Ok(None),
            "0" => Ok(Some(0)),
            "1" => Ok(Some(1)),
            "2" => Ok(Some(2)),
            _ => Err(WriteError::BadCompressionThreads(text)),
        },
        Err(std::env::VarError::NotUnicode(text)) => Err(WriteError::BadCompressionThreads(
            text.to_string_lossy().into_owned(),
        )),
    }
}

/// The compression threads for a recorder: `option` when given, else
/// [`COMPRESSION_THREADS_ENV`], else [`automatic_compression_threads`]; none when blocks are stored
/// uncompressed (`level` `None`); at most [`MAX_COMPRESSION_THREADS`].
///
/// # Errors
///
/// [`WriteError::BadCompressionThreads`] when the variable is set to anything else than
/// `auto`, `0`, `1` or `2`.
pub(super) fn threads_for(option: Option<usize>, level: Option<i32>) -> Result<usize, WriteError> {
    threads_with(option, level, std::env::var(COMPRESSION_THREADS_ENV))
}

/// [`threads_for`] with the variable's value `env`.
fn threads_with(
    option: Option<usize>,
    level: Option<i32>,
    env: Result<String, std::env::VarError>,
) -> Result<usize, WriteError> {
    let threads = match option {
        Some(threads) => threads,
        None => threads_in_env(env)?.unwrap_or_else(automatic_compression_threads),
    };
    Ok(if level.is_some() {
        threads.min(MAX_COMPRESSION_THREADS)
    } else {
        0
    })
}

/// One records block handed to the compression threads.
pub(super) struct Job {
    /// The framed records: read, never changed, while the job is in flight (the fatal-signal
    /// flush writes them as they are).
    payload: Vec<u8>,
    records: u32,
    /// The summary block to write after it, encoded; `None` when its timings summarised
    /// nothing.
    summary: Option<io::Result<Vec<u8>>>,
    /// Set (under [`Queue::state`]) once `compressed` holds the result.
    done: AtomicBool,
    compressed: Mutex<Compressed>,
}

/// A compression thread's result.
struct Compressed {
    /// The block, header and stored payload.
    block: Vec<u8>,
    result: io::Result<()>,
}

/// The queue of blocks to compress, shared with the threads.
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a block is queued or the threads must stop.
    work: Condvar,
    /// Signalled when a block is done.
    done: Condvar,
}

impl Queue {
    /// Tests: keeps the threads from taking jobs while `held`, so that blocks stay in flight.
    #[cfg(test)]
    fn hold(&self, held: bool) {
        lock(&self.state).held = held;
        self.work.notify_all();
    }

    /// Tests: the threads wake the writer `late` after each block, as a loaded machine may.
    #[cfg(test)]
    fn wake_late(&self, late: std::time::Duration) {
        lock(&self.state).wake_late = late;
    }
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Arc<Job>>,
    stop: bool,
    /// Tests: the threads take no job while set.
    #[cfg(test)]
    held: bool,
    /// Tests: how long the threads wait before waking the writer.
    #[cfg(test)]
    wake_late: std::time::Duration,
}

/// The compression threads of a recorder and the blocks in flight.
pub(super) struct Compressors {
    queue: Arc<Queue>,
    threads: Vec<JoinHandle<()>>,
    /// Blocks handed over and not yet written, oldest first: the file's order.
    in_flight: VecDeque<Arc<Job>>,
    /// Records in the blocks in flight.
    records: u64,
    /// Buffers of written blocks (payload, compressed block), for the next ones.
    spare: Vec<(Vec<u8>, Vec<u8>)>,
    /// Most blocks in flight.
    limit: usize,
    /// The threads to start, at zstd level `.1`, each waking the writer through `.2`: started
    /// with the first block handed over ([`Compressors::start_threads`]).
    to_start: Option<(usize, Option<i32>, Sender<Control>)>,
    /// The process's fork count when the threads started ([`crate::fork`]).
    forks: u64,
}

impl Compressors {
    /// `threads` compression threads at zstd `level`, each to wake the writer through `wake`
    /// when it finished a block; started with the first block handed over
    /// ([`Compressors::start_threads`]). `None` when `threads` is 0: the writer compresses
    /// inline.
    pub(super) fn start(
        threads: usize,
        level: Option<i32>,
        wake: &Sender<Control>,
    ) -> Option<Compressors> {
        if threads == 0 {
            return None;
        }
        let queue = Arc::new(Queue {
            state: Mutex::default(),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        Some(Compressors {
            limit: threads + 1,
            queue,
            threads: Vec::new(),
            in_flight: VecDeque::new(),
            records: 0,
            spare: Vec::new(),
            forks: crate::fork::watch_forks(),
            to_start: Some((threads, level, wake.clone())),
        })
    }

    /// Starts the threads, once; false when none is running (none could be started): the
    /// writer compresses inline. Threads that cannot be started are left out.
    fn start_threads(&mut self) -> bool {
        if let Some((threads, level, wake)) = self.to_start.take() {
            for i in 0..threads {
                let Ok(encoder) = BlockEncoder::new(level) else {
                    break;
                };
                let (queue, wake) = (self.queue.clone(), wake.clone());
                match std::thread::Builder::new()
                    .name(format!("hrx-capture-zstd{i}"))
                    .spawn(move || compress(&queue, encoder, &wake))
                {
                    Ok(handle) => self.threads.push(handle),
                    Err(_) => break,
                }
            }
            self.limit = self.threads.len() + 1;
        }
        !self.threads.is_empty()
    }

    /// Records in the blocks in flight.
    pub(super) fn records(&self) -> u64 {
        self.records
    }

    /// Waits until `job` is done.
    fn wait(&self, job: &Job) {
        let mut state = lock(&self.queue.state);
        while !job.done.load(Ordering::Acquire) {
            state = self
                .queue
                .done
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Tests: the queue, to hold the threads back ([`Queue::hold`]) without the core.
    #[cfg(test)]
    fn queue(&self) -> Arc<Queue> {
        self.queue.clone()
    }

    /// Stops the threads once the queue is empty.
    fn stop(&self) {
        lock(&self.queue.state).stop = true;
        self.queue.work.notify_all();
    }
}

impl Drop for Compressors {
    fn drop(&mut self) {
        // In a forked child the queue's lock may have been held by a thread that is not
        // there: never take it (`Core::abandon` forgets the compressors before this).
        if crate::fork::forks() != self.forks {
            std::mem::forget(std::mem::take(&mut self.threads));
            std::mem::forget(self.to_start.take());
            return;
        }
        // Not joined: the threads end once they see `stop` (`Core::stop_compressors` joins).
        self.stop();
    }
}

/// A compression thread: compresses the queued blocks until told to stop. Never inlined: a
/// profile names the thread by it (`scripts/bench-callgrind.sh`).
#[inline(never)]
fn compress(queue: &Queue, mut encoder: BlockEncoder, wake: &Sender<Control>) {
    super::fatal::block_termination_signals();
    loop {
        let job = {
            let mut state = lock(&queue.state);
            loop {
                #[cfg(test)]
                let held = state.held;
                #[cfg(not(test))]
                let held = false;
                if !held && let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if state.stop {
                    return;
                }
                state = queue
                    .work
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        {
            let mut compressed = lock(&job.compressed);
            let Compressed { block, result } = &mut *compressed;
            block.clear();
            // A panic (a bug) fails the block instead of leaving the writer waiting forever.
            *result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                encoder.encode_with(BlockKind::RECORDS, &job.payload, job.records, true, block)
            }))
            .unwrap_or_else(|_| Err(io::Error::other("compressing the block panicked")));
        }
        {
            let _state = lock(&queue.state);
            job.done.store(true, Ordering::Release);
            // Dropped under the lock: the writer, once it saw `done` under it too, holds the
            // job's last reference and takes its buffers back (`Core::write_job`).
            drop(job);
        }
        queue.done.notify_all();
        #[cfg(test)]
        {
            let late = lock(&queue.state).wake_late;
            std::thread::sleep(late);
        }
        // A full channel means a wake is already queued.
        let _ = wake.try_send(Control::Compressed);
    }
}

impl Core {
    /// Records written, in flight to the compression threads, or pending.
    pub(super) fn recorded(&self) -> u64 {
        self.records
            + self.compressors.as_ref().map_or(0, Compressors::records)
            + u64::from(self.pending_records)
    }

    /// Hands the pending block, and the summary of its timings, to the compression threads
    /// (started with the first block, unless the trace is closing), writing the oldest block
    /// in flight first when [`Compressors::limit`] are (waiting for it). False, with nothing
    /// done, when there are no compression threads or the trace has failed: the caller
    /// writes the block inline.
    pub(super) fn hand_over_pending(&mut self) -> bool {
        let closed = self.closed;
        let Some(compressors) = self.compressors.as_mut() else {
            return false;
        };
        if compressors.to_start.is_some() && closed {
            // Closing before the first block: no thread started for the last blocks.
            return false;
        }
        if !compressors.start_threads() {
            self.compressors = None;
            return false;
        }
        let limit = compressors.limit;
        self.write_compressed(limit - 1);
        if self.error.is_some() || self.sink.is_none() {
            return false;
        }
        let records = self.pending_records;
        let summary = self.summary.take().and_then(|summary| {
            let bytes = postcard::to_stdvec(&summary).ok()?;
            let mut block = Vec::new();
            Some(
                self.encoder
                    .encode_with(BlockKind::SUMMARY, &bytes, 0, false, &mut block)
                    .map(|()| block),
            )
        });
        let Some(compressors) = self.compressors.as_mut() else {
            return false;
        };
        let capacity = self.block_bytes + MAX_RECORD_FRAME_SLACK;
        let (next, block) = compressors
            .spare
            .pop()
            .unwrap_or_else(|| (Vec::with_capacity(capacity), Vec::new()));
        let job = Arc::new(Job {
            payload: std::mem::replace(&mut self.pending, next),
            records,
            summary,
            done: AtomicBool::new(false),
            compressed: Mutex::new(Compressed {
                block,
                result: Ok(()),
            }),
        });
        lock(&compressors.queue.state).jobs.push_back(job.clone());
        compressors.queue.work.notify_one();
        compressors.in_flight.push_back(job);
        compressors.records += u64::from(records);
        self.pending_records = 0;
        self.frames.reset();
        true
    }

    /// Writes the blocks in flight that are done, oldest first, and waits for more until at
    /// most `keep` remain in flight (0: all written; `usize::MAX`: none waited for).
    pub(super) fn write_compressed(&mut self, keep: usize) {
        loop {
            let Some(compressors) = self.compressors.as_mut() else {
                return;
            };
            let Some(oldest) = compressors.in_flight.front() else {
                return;
            };
            if !oldest.done.load(Ordering::Acquire) {
                if compressors.in_flight.len() <= keep {
                    return;
                }
                compressors.wait(oldest);
            }
            let Some(job) = compressors.in_flight.pop_front() else {
                return;
            };
            compressors.records -= u64::from(job.records);
            // The thread dropped its reference under the queue's lock, before `done` could
            // be seen there: past that lock this reference is the last.
            let job = Arc::try_unwrap(job).or_else(|job| {
                drop(lock(&compressors.queue.state));
                Arc::try_unwrap(job)
            });
            match job {
                Ok(job) => self.write_job(job),
                // Cannot happen (see above); its buffers are not reused.
                Err(job) => {
                    let Compressed { block, result } = &*lock(&job.compressed);
                    let result = match result {
                        Ok(()) => Ok(()),
                        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                    };
                    self.write_compressed_block(job.records, block, result, &job.summary);
                }
            }
        }
    }

    /// Writes a compressed block and its summary, and keeps its buffers for the next.
    fn write_job(&mut self, job: Job) {
        let Compressed { mut block, result } = job
            .compressed
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.write_compressed_block(job.records, &block, result, &job.summary);
        if let Some(compressors) = self.compressors.as_mut() {
            let mut payload = job.payload;
            payload.clear();
            block.clear();
            compressors.spare.push((payload, block));
        }
    }

    /// Writes a block of `records` records compressed into `block` (`result`: how its
    /// compression went), then its summary, as `write_pending` does inline.
    fn write_compressed_block(
        &mut self,
        records: u32,
        block: &[u8],
        result: io::Result<()>,
        summary: &Option<io::Result<Vec<u8>>>,
    ) {
        let at = self.offset;
        if let Err(e) = result.and_then(|()| self.write_encoded(BlockKind::RECORDS, records, block))
        {
            self.fail(e, records, || {
                format!("a block of {records} records at byte {at}")
            });
            return;
        }
        self.records += u64::from(records);
        let written = match summary {
            None => return,
            Some(Ok(summary)) => self.write_encoded(BlockKind::SUMMARY, 0, summary),
            Some(Err(e)) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        if let Err(e) = written {
            let at = self.offset;
            self.fail(e, 0, || format!("a summary block at byte {at}"));
        }
    }

    /// Writes an encoded block (after the file header, before the first block) and indexes
    /// it.
    ///
    /// # Errors
    ///
    /// The trace's first error, once it has one; the sink's.
    fn write_encoded(&mut self, kind: BlockKind, records: u32, block: &[u8]) -> io::Result<()> {
        self.write_block_now(kind, records, block, |_, _| Ok(()))
    }

    /// At close: writes every block in flight and ends the compression threads; later blocks
    /// are compressed inline.
    pub(super) fn stop_compressors(&mut self) {
        self.write_compressed(0);
        if let Some(mut compressors) = self.compressors.take() {
            compressors.stop();
            for thread in std::mem::take(&mut compressors.threads) {
                let _ = thread.join();
            }
        }
    }

    /// From the fatal-signal flush (`fatal.rs`), holding the core: writes the blocks in
    /// flight to `fd` with `write(2)`, from their payloads, stored uncompressed, each with
    /// its summary. Neither waits for a compression thread nor allocates or frees: the jobs
    /// are forgotten (a thread may still be compressing one; freeing could take the
    /// allocator's lock).
    pub(super) fn write_in_flight_on_signal(&mut self, fd: i32) {
        let Some(compressors) = self.compressors.as_mut() else {
            return;
        };
        let mut in_flight = std::mem::take(&mut compressors.in_flight);
        compressors.records = 0;
        while let Some(job) = in_flight.pop_front() {
            let written = self.write_stored_on_signal(fd, &job.payload, job.records);
            if written && let Some(Ok(summary)) = &job.summary {
                self.write_block_bytes_on_signal(fd, BlockKind::SUMMARY, 0, &[], summary);
            }
            std::mem::forget(job);
        }
        if let Some(compressors) = self.compressors.as_mut() {
            // The emptied queue back, with its room: nothing allocated, nothing freed.
            compressors.in_flight = in_flight;
        }
    }
}

#[cfg(test)]
mod tests;
