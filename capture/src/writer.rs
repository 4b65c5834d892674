//! The recorder: encodes records on the recording threads and writes trace blocks from a
//! background thread.
//!
//! # Design
//!
//! ```text
//!  thread A ──encode into thread-local scratch──▶ ring A ─┐
//!  thread B ──encode into thread-local scratch──▶ ring B ─┼─▶ writer thread: drain rings,
//!  large record / blob ──(core lock, synchronous)─────────┘    transcode, compress, write
//!                                                                  │ ▲ where CPUs are spare:
//!                                              compression threads ◀─┘ │ compress there,
//!                                              (zstd, checksum) ───────┘ written in order
//! ```
//!
//! - **Hot path.** [`Recorder::record`] encodes the record into a thread-local scratch
//!   buffer and copies it into this thread's single-producer ring (see `ring.rs`): no lock,
//!   no read-modify-write atomic, no allocation once the thread has recorded its first
//!   record. The ring is per thread *and* per recorder. Timings are not even varint-encoded
//!   there: they are stored as raw fields and transcoded to postcard by the writer thread
//!   (see `staging.rs`); other records are postcard-encoded on the recording thread.
//! - **Nothing waits in a thread's buffer.** Unlike a plain thread-local `Vec`, a ring can be
//!   drained by the writer thread at any time, so records of a thread that went idle are
//!   written at the next flush. The writer drains every ring at least every
//!   [`RecorderOptions::flush_interval`] (100 ms) and writes what it found as one block with
//!   `write_all`, so a process killed with SIGKILL loses at most the last interval. There is
//!   no fsync except at close.
//! - **Back-pressure: lossless by default.** A producer wakes the writer when its ring passes
//!   a quarter full (`ring::WAKE_DIVISOR`), never per record: the writer otherwise runs on
//!   its own period. If the ring is full ([`TraceMode::Lossless`], the default), the recording
//!   thread hands its records over itself: it takes the core lock, drains every ring (so
//!   no thread's records fall far behind in the file) into the block being assembled
//!   (writing full blocks as it goes) and records on; nothing is
//!   dropped, and the time this took is recorded as a [`RecorderWait`] (thread, span, and the
//!   region whose record was being recorded). A thread storing a host write's contents
//!   ([`Recorder::payload`]) that finds the trace file held (the writer writing a block to
//!   a slow disk) waits for it, and that wait is a [`RecorderWait`] too. Waiting for the writer thread instead would
//!   make the recording thread's progress depend on a thread the scheduler may not run (on
//!   a loaded machine it does not); a chained overflow buffer would make memory grow without
//!   bound while the writer is starved. Memory is bounded: one ring per recording thread
//!   ([`RecorderOptions::thread_buffer_bytes`]) plus the writer's one block being assembled
//!   ([`RecorderOptions::block_bytes`]) and its compressed copy, and with n compression
//!   threads up to n + 1 more of each, in flight (see below).
//!   In [`TraceMode::Lossy`] (only when asked: `HRX_TRACE_MODE=lossy`) the thread instead
//!   waits up to [`RecorderOptions::full_buffer_wait`] for the writer, then drops the record
//!   and counts it by kind; after a timeout it drops without waiting for one flush interval.
//!   Losses are never hidden: the first flush after a loss, and the close, write a
//!   [`RecordsLost`] with the counts by kind, and [`SessionEnd::dropped_records`] sums them.
//! - **Order.** Records of one thread keep their order. Records of different threads are
//!   ordered only by their timestamps. A record too large for the ring (over a quarter of it)
//!   is written synchronously under the core lock after draining the thread's own ring
//!   first, which keeps the thread's order. [`Recorder::intern_blob`] writes the blob before
//!   it returns, so it precedes every record recorded after it, on any thread.
//! - **Compression threads.** Where the machine has CPUs to spare (4 or more: one thread, 8
//!   or more: two; [`RecorderOptions::compression_threads`], [`COMPRESSION_THREADS_ENV`]),
//!   full records blocks are compressed and checksummed beside the writer, and written in
//!   their order by whoever holds the core next: the writer's work per record is draining
//!   and transcoding. The file is the same; see `compress.rs`.
//! - **Fatal signals.** A recorder writing to a file ([`Sink::signal_fd`]) also writes every
//!   thread's pending records from the handler of a fatal signal (see `fatal.rs`): the call
//!   that crashed, and the region that was running, are in the trace.
//! - **Close.** [`Recorder::close`] (or dropping the last handle) stops the rings, drains
//!   them, writes [`SessionEnd`], the footer index and the trailer, and fsyncs. A record
//!   racing with `close` on another thread may be missed.

use crate::ShowPath;
use crate::activation;
use crate::format::{
    BlockEncoder, BlockKind, FileHeader, Footer, FormatVersion, FrameEncoder, IndexEntry,
    MAX_RECORD_BYTES, encode_trailer,
};
use crate::ring::KINDS;
use crate::ring::{self, Consumer, Producer, Push};
use crate::schema::{
    AnnotationId, AnnotationName, AnnotationRange, Blob, BlobHash, HostClock, HostSpan, LostKind,
    Payload, Record, RecorderWait, RecordsLost, RegionIndex, RuntimeId, SessionEnd, SessionStart,
    SubmissionIndex, ThreadName,
};
use crate::staging::{self, MAX_RAW_ENTRY, RawRecord};
use crate::summary::SummaryBuilder;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64;

mod compress;
mod fatal;
#[cfg(test)]
mod held_tests;

pub use compress::{
    COMPRESSION_THREADS_ENV, MAX_COMPRESSION_THREADS, automatic_compression_threads,
    compression_threads_from_env,
};

/// Room reserved in the block being assembled beyond its target size: a drained ring's
/// frames are added before the block is written.
const MAX_RECORD_FRAME_SLACK: usize = 64 << 10;

/// Size of each thread's encode scratch buffer; larger records take the slow path.
const SCRATCH_BYTES: usize = 2048;
/// Blobs larger than this are stored uncompressed (see `BlockEncoder::encode_with`).
const RAW_BLOB_BYTES: usize = 64 << 10;

/// Where trace bytes go.
pub trait Sink: Send + 'static {
    /// Appends `bytes`.
    ///
    /// # Errors
    ///
    /// Any I/O error; the recorder stops writing and counts later records as dropped.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Hands buffered bytes to the OS (not necessarily to stable storage). Called after
    /// every periodic flush.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Makes everything written durable; called once, at close.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// A file descriptor that [`Sink::write_all`] writes to with plain `write(2)` calls and no
    /// user-space buffer, for the fatal-signal flush, which writes the pending records with
    /// `write(2)` from a signal handler (where `write_all` may not run: it could allocate or
    /// take a lock). `None` (the default): this sink gets no fatal-signal flush.
    fn signal_fd(&self) -> Option<i32> {
        None
    }
}

/// A trace file. Writes go straight to the OS (no user-space buffering), so they survive
/// the process being killed.
///
/// The traced program owns the process's file descriptors: a daemon closes every one from 3
/// up, or `dup2`s `/dev/null` over them, and the next file it opens takes the trace's number.
/// So before each write (and in the fatal-signal flush, [`Sink::signal_fd`]) the sink checks
/// with `fstat` that its descriptor still refers to the trace file it created (its device
/// and inode). When it does not, the descriptor is the program's now: the sink never writes
/// to it nor closes it, reopens the trace by its absolute path (locked again, at the offset
/// where it stopped), says so once on standard error and records on; if that fails, the
/// write fails with an error naming the descriptor, as any failed write does (the recorder
/// stops writing and the trace reads as not closed cleanly). A program that closes the
/// descriptor and opens another file in the instant between the check and the write is not
/// caught.
#[derive(Debug)]
pub struct FileSink {
    /// `None` after the program took the descriptor and the trace could not be reopened.
    file: Option<File>,
    /// The trace file's absolute path, to reopen it.
    path: PathBuf,
    /// The trace file's device and inode.
    identity: (u64, u64),
    /// Bytes written so far: where a reopened file goes on.
    written: u64,
    /// Times the trace was reopened (said on the first, counted at close).
    reopened: u64,
    /// An earlier trace this one replaces once its first write succeeds ([`Replacing`]).
    replacing: Option<Replacing>,
    /// The earlier trace this one replaced, kept under a hidden name until it is closed
    /// ([`Kept`]).
    kept: Option<Kept>,
    /// `file`'s descriptor, let go of by a child forked without `exec` so that the writer's
    /// lock dies with this process ([`crate::fork::Held`]).
    _held: Option<crate::fork::Held>,
}

/// A new recording at the path of an earlier trace, written first as a hidden sibling
/// (`.NAME.PID.new`) and renamed over the earlier trace once its first write succeeded
/// ([`FileSink::create`]): a reader still reading the earlier trace keeps reading it whole
/// (the file was truncated in place, so a reader mid-file went on inside the new recording
/// and read two recordings as one, its seam as "damage", and a mapped reader could fault
/// with SIGBUS: a break-it pass at scale), and a recording whose first write fails (a full
/// disk) leaves the earlier trace as it was. An editor's save and GFXReconstruct's capture
/// files do the same.
#[derive(Debug)]
struct Replacing {
    /// The new recording's name until its first write.
    temp: PathBuf,
    /// The earlier trace's path (through a symlink, its target's): where `temp` goes.
    target: PathBuf,
    /// The earlier trace, locked until it is replaced: another recorder that opened it
    /// cannot take it meanwhile (and finds, once it can, that the name is another file's).
    _earlier: File,
    /// `_earlier`'s descriptor, let go of by a forked child ([`crate::fork::Held`]).
    _earlier_held: Option<crate::fork::Held>,
}

/// The earlier trace a recording replaced at its first write, kept as a hidden hard link
/// (`.NAME.PID.earlier`, no bytes copied) until the recording is closed, when it is removed.
/// A later write that fails (a full disk, a file size limit) gives it a visible name beside
/// the recording (`STEM.earlier.EXT`) and says so: the first write fitting and the next not,
/// the earlier trace was gone, replaced by a fragment that held no submission (a break-it
/// pass, session 58). Its lock is held while the recording lives, so a later recorder of the
/// name removes only one a killed recording left ([`remove_abandoned_beside`]).
#[derive(Debug)]
struct Kept {
    hidden: PathBuf,
    /// The trace's path (the earlier trace's, through a symlink its target's).
    target: PathBuf,
    /// The process that made it: a child forked without `exec` neither keeps nor removes it.
    pid: u32,
    _earlier: File,
    _earlier_held: Option<crate::fork::Held>,
}

impl Kept {
    /// Links the earlier trace at `replacing.target` as a hidden file beside it, before the
    /// rename that replaces it; `None` where the link cannot be made (a file system without
    /// hard links): the recording then replaces it as before.
    fn link(replacing: &Replacing) -> Option<PathBuf> {
        let hidden = crate::replace::temporary_beside(&replacing.target, ".", "earlier");
        std::fs::hard_link(&replacing.target, &hidden).ok()?;
        Some(hidden)
    }

    /// Gives the kept trace a visible name beside the recording and says so.
    fn keep(self, why: &io::Error) {
        let name = self
            .target
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
            _ => (name.clone().into_owned(), String::new()),
        };
        // `STEM.earlier.EXT`, then with the pid and a count where that is taken (a process id
        // repeats in containers), then `NAME.PID.earlier`, shortened to a file name's limit
        // with a hash: a name that stayed hidden was swept as abandoned by the next recorder
        // of NAME (break-it, session 58).
        let candidates = std::iter::once(format!("{stem}.earlier{ext}"))
            .chain((0..100).map(|n| match n {
                0 => format!("{stem}.earlier.{}{ext}", self.pid),
                n => format!("{stem}.earlier.{}.{n}{ext}", self.pid),
            }))
            .filter(|name| name.len() <= crate::replace::NAME_MAX)
            .map(|name| self.target.with_file_name(name))
            .chain((0..100).map(|n| {
                crate::replace::temporary_beside(&self.target, "", &format!("earlier{n}"))
            }));
        // A link, then the hidden name removed: a rename would replace a file of that name.
        let visible = candidates.into_iter().find_map(|visible| {
            std::fs::hard_link(&self.hidden, &visible).ok()?;
            let _ = std::fs::remove_file(&self.hidden);
            Some(visible)
        });
        crate::to_stderr(format_args!(
            "hrx: writing the trace {} failed ({why}): the earlier trace it replaced is kept as {}",
            self.target.shown(),
            visible.as_ref().unwrap_or(&self.hidden).shown()
        ));
    }
}

impl FileSink {
    /// Creates the file at `path`, holding an exclusive advisory lock on it while the sink
    /// lives, so two recorders never interleave their blocks in one file. An earlier trace
    /// at `path` is replaced by a new file once the first write succeeds ([`Replacing`]),
    /// not truncated: readers of it keep reading it whole. Where the new file cannot be
    /// made beside it (a folder this process may not write), the earlier trace is emptied
    /// in place, as before.
    ///
    /// # Errors
    ///
    /// When the file cannot be created, when `path` is a FIFO, a socket or a device
    /// ([`io::ErrorKind::InvalidInput`]), or another recorder holds it or replaced it
    /// meanwhile ([`io::ErrorKind::WouldBlock`]); where the earlier trace is replaced, the
    /// first [`Sink::write_all`] fails when the rename fails (the earlier trace then stays).
    pub fn create(path: impl AsRef<Path>) -> io::Result<FileSink> {
        let path = path.as_ref();
        // A FIFO opened for writing waits for a reader (a traced program would hang in
        // `Runtime::new`), and a socket or a device is no trace: refuse them before opening.
        if let Some(kind) = std::fs::metadata(path)
            .ok()
            .as_ref()
            .and_then(crate::reader::special_file)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {kind}, not a file"),
            ));
        }
        // Open without truncating: the lock must be ours before anything is destroyed.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        lock_as_writer(&file, path)?;
        // Only a trace (or an empty file) is overwritten: `HRX_TRACE` naming a photograph or
        // notes by mistake must not destroy them (`hrx-trace record -o` refuses the same).
        if !holds_a_trace_or_nothing(&file)? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not an hrx trace", path.shown()),
            ));
        }
        if file.metadata()?.len() > 0
            && let Some((replacing, fresh)) = Replacing::beside(&file, path)?
        {
            let mut sink = FileSink::new(fresh, path)?;
            sink.replacing = Some(replacing);
            return Ok(sink);
        }
        file.set_len(0)?;
        FileSink::new(file, path)
    }

    /// Creates a trace file at `path` where nothing exists yet, atomically (`O_EXCL`), and
    /// locks it as [`FileSink::create`] does: a sequence-numbered name (`%n`) is then taken by
    /// one process only, where a check for the name followed by a create let a second process
    /// truncate a first one's trace finished in between.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::AlreadyExists`] when anything exists at `path`; as
    /// [`FileSink::create`] otherwise.
    pub(crate) fn create_new(path: &Path) -> io::Result<FileSink> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        lock_as_writer(&file, path)?;
        FileSink::new(file, path)
    }

    fn new(file: File, path: &Path) -> io::Result<FileSink> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let file = above_stdio(file)?;
        let meta = file.metadata()?;
        let identity = (meta.dev(), meta.ino());
        Ok(FileSink {
            _held: crate::fork::Held::new(file.as_raw_fd(), identity),
            file: Some(file),
            path: std::path::absolute(path)?,
            identity,
            written: 0,
            reopened: 0,
            replacing: None,
            kept: None,
        })
    }

    /// Whether `file`'s descriptor still refers to the trace file: one `fstat`
    /// (async-signal-safe, no allocation).
    fn is_ours(identity: (u64, u64), file: &File) -> bool {
        use std::os::fd::AsRawFd;
        crate::fork::names_file(file.as_raw_fd(), identity)
    }

    /// The trace's file, reopened if the program closed or replaced its descriptor (see
    /// [`FileSink`]).
    fn file(&mut self) -> io::Result<&mut File> {
        use std::os::fd::AsRawFd;
        let identity = self.identity;
        let Some(file) = self.file.take() else {
            return Err(io::Error::other(
                "the trace's file descriptor was closed or replaced by the program",
            ));
        };
        if FileSink::is_ours(identity, &file) {
            return Ok(self.file.insert(file));
        }
        let fd = file.as_raw_fd();
        // The number is the program's now (closed, or another of its files): never close it.
        std::mem::forget(file);
        match self.reopen() {
            Ok(file) => {
                self.reopened += 1;
                self._held = crate::fork::Held::new(file.as_raw_fd(), identity);
                // Once: a program that closes its descriptors in a loop would print it at
                // every write (the count comes at close).
                if self.reopened == 1 {
                    crate::to_stderr(format_args!(
                        "hrx: the program closed or replaced the trace's file descriptor {fd}: \
                         reopened {} and recording goes on",
                        self.path.shown()
                    ));
                }
                Ok(self.file.insert(file))
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!(
                    "the program closed or replaced the trace's file descriptor {fd}, and {} \
                     could not be reopened: {e}",
                    self.path.shown()
                ),
            )),
        }
    }

    /// The name descriptor `fd` has now (Linux's `/proc/self/fd`), if it has one.
    fn name_of(fd: std::os::fd::RawFd) -> Option<PathBuf> {
        let name = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        name.is_absolute().then_some(name)
    }

    /// Opens the trace file again, locked, positioned where the last write ended.
    fn reopen(&self) -> io::Result<File> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::MetadataExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)?;
        let mut file = above_stdio(file)?;
        let meta = file.metadata()?;
        if (meta.dev(), meta.ino()) != self.identity {
            return Err(io::Error::other("the path names another file now"));
        }
        lock_as_writer(&file, &self.path)?;
        if meta.len() != self.written {
            return Err(io::Error::other(format!(
                "it holds {} bytes, not the {} written",
                meta.len(),
                self.written
            )));
        }
        file.seek(SeekFrom::Start(self.written))?;
        Ok(file)
    }
}

/// `file` on a descriptor above 2. A program that closed its standard streams (a daemon
/// closing every descriptor from 0) gives the next file it opens number 0, 1 or 2: the trace
/// there would take in whatever the program (or this recorder, on stderr) prints.
fn above_stdio(file: File) -> io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    if file.as_raw_fd() > 2 {
        return Ok(file);
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor this function owns; on success the new
    // one is owned by the `File` made from it, and `file` (the low one) is closed when
    // dropped. The lock, held on the open file description, stays.
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl Drop for FileSink {
    fn drop(&mut self) {
        // A recording that never wrote: its hidden file goes, the earlier trace stays.
        if let Some(replacing) = self.replacing.take() {
            let _ = std::fs::remove_file(&replacing.temp);
        }
        // Written whole: the earlier trace it replaced goes.
        if let Some(kept) = self.kept.take()
            && kept.pid == std::process::id()
        {
            let _ = std::fs::remove_file(&kept.hidden);
        }
        if self.reopened > 1 {
            crate::to_stderr(format_args!(
                "hrx: the program closed or replaced the trace's file descriptor {} times: \
                 {} was reopened each time, nothing lost",
                self.reopened,
                self.path.shown()
            ));
        }
        // A descriptor the program closed (or reused) is not closed again.
        if let Some(file) = self.file.take() {
            if FileSink::is_ours(self.identity, &file) {
                drop(file);
            } else {
                std::mem::forget(file);
            }
        }
        // Registered until the descriptor is closed (a fork in between would keep the lock).
        self._held = None;
    }
}

/// Takes the writer's lock on `file` ([`lock_exclusive`]) at `path`.
///
/// # Errors
///
/// [`io::ErrorKind::WouldBlock`] when another recorder holds it.
fn lock_as_writer(file: &File, path: &Path) -> io::Result<()> {
    if lock_exclusive(file).unwrap_or(false) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("{} is being written by another recorder", path.shown()),
    ))
}

impl Replacing {
    /// The hidden new file beside `earlier` (the trace at `path`, locked by this process),
    /// created empty, locked, with the earlier trace's permissions, and what replaces the
    /// earlier trace with it. `None` where it cannot be
    /// made there (the folder is not writable, a read-only file system): the caller empties
    /// the earlier trace in place instead.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::WouldBlock`] when `path` no longer names `earlier` (another recorder
    /// replaced it in the meantime and records there now); other errors of the new file.
    fn beside(earlier: &File, path: &Path) -> io::Result<Option<(Replacing, File)>> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let target = std::fs::canonicalize(path)?;
        let held = earlier.metadata()?;
        let named = std::fs::metadata(&target)?;
        if (named.dev(), named.ino()) != (held.dev(), held.ino()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is being written by another recorder", path.shown()),
            ));
        }
        let Some(dir) = target.parent().filter(|_| target.file_name().is_some()) else {
            return Ok(None);
        };
        remove_abandoned_beside(dir, &target);
        // `.NAME.PID.new`, shortened where that would pass a file name's limit.
        let temp = crate::replace::temporary_beside(&target, ".", "new");
        let mode = held.permissions().mode() & 0o7777;
        let fresh = match crate::replace::create_temporary(&temp, Some(mode)) {
            Ok(file) => file,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        // Locked before anyone can reach it by the trace's name (it gets that name later).
        let locked = lock_as_writer(&fresh, path).and_then(|()| earlier.try_clone());
        match locked {
            Ok(earlier) => Ok(Some((
                Replacing {
                    temp,
                    target,
                    _earlier_held: {
                        use std::os::fd::AsRawFd;
                        crate::fork::Held::new(earlier.as_raw_fd(), (held.dev(), held.ino()))
                    },
                    _earlier: earlier,
                },
                fresh,
            ))),
            Err(error) => {
                let _ = std::fs::remove_file(&temp);
                Err(error)
            }
        }
    }
}

/// Removes the new files (`.NAME.PID.new`) beside `target`, in its folder `dir`, that
/// recorders of it killed before their rename left: a signal in a traced program's first
/// milliseconds, before its runtime's handlers are set (or a SIGKILL), left an empty hidden
/// file that nothing removed, one more at each such start (a break-it pass: 8 of 40 runs
/// of `record` signalled in their first 7 ms). No live recorder holds its lock, so it is
/// abandoned ([`crate::replace::remove_abandoned`]), whatever became of the process id in
/// its name; and none is being made and not yet locked, for that takes `target`'s lock,
/// which the caller holds ([`Replacing::beside`]). A symbolic link of such a name is not
/// followed.
fn remove_abandoned_beside(dir: &Path, target: &Path) {
    crate::replace::remove_abandoned(
        dir,
        |entry| {
            let name = entry.file_name();
            entry.file_type().is_ok_and(|t| t.is_file())
                && (crate::replace::is_temporary_of(target, &name, ".", "new")
                    || crate::replace::is_temporary_of(target, &name, ".", "earlier"))
        },
        |path| {
            let _ = std::fs::remove_file(path);
        },
    );
}

/// Whether `file` is empty or starts like a trace (the [`MAGIC`](crate::format::MAGIC), or
/// a prefix of it: a recording killed within its first write).
/// Reads at an offset (`pread`): the file's position, where the trace is written next,
/// stays at 0.
fn holds_a_trace_or_nothing(file: &std::fs::File) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let magic = &crate::format::MAGIC;
    let mut head = [0u8; 8];
    let mut read = 0;
    while read < head.len() {
        match file.read_at(&mut head[read..], read as u64)? {
            0 => break,
            n => read += n,
        }
    }
    Ok(magic.starts_with(&head[..read]))
}

/// Takes the exclusive lock a writer of a trace holds ([`FileSink::create`],
/// [`crate::append_to_unclosed`]); `false` when another holds it. A follower's probe
/// ([`recorder_holds`]) holds a shared lock for a moment: it is waited out (a few
/// milliseconds at most), a writer's lock is not.
///
/// # Errors
///
/// When the lock cannot be asked for.
pub(crate) fn lock_exclusive(file: &File) -> io::Result<bool> {
    for attempt in 0.. {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if attempt < 10 => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(error)) => return Err(error),
        }
    }
    unreachable!("the loop returns")
}

/// Whether a recorder is writing the trace at `path`: holds the exclusive lock
/// [`FileSink::create`] takes (as does [`crate::append_to_unclosed`] while it appends). A
/// follower asks, so that it can tell a recording that ended without a close (its writer
/// killed, or the file cut short) from one that is only quiet. The probe takes a shared lock
/// and releases it at once: a writer that tries to lock the file in that instant is
/// made to wait a moment ([`lock_exclusive`]), and followers probe at most about once a
/// second ([`crate::WriterWatch`]).
///
/// # Errors
///
/// When the file cannot be opened or the lock cannot be asked for.
pub fn recorder_holds(path: &Path) -> io::Result<bool> {
    recorder_holds_file(&File::open(path)?)
}

/// Whether a recorder holds the regular file `path` now (a trace being recorded): `false`
/// for anything else and when it cannot be asked. Only a regular file is asked: opening a
/// FIFO to look would wait for its writer.
pub fn being_recorded(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file()) && recorder_holds(path).unwrap_or(false)
}

/// [`recorder_holds`] of a trace file already open: a follower that holds the file it
/// reads asks of that file, whatever its path names now.
///
/// # Errors
///
/// When the lock cannot be asked for.
pub fn recorder_holds_file(file: &File) -> io::Result<bool> {
    match file.try_lock_shared() {
        Ok(()) => {
            file.unlock()?;
            Ok(false)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

impl FileSink {
    /// A write that failed: the earlier trace this recording replaced is kept ([`Kept`]).
    fn failed(&mut self, error: io::Error) -> io::Error {
        if let Some(kept) = self.kept.take()
            && kept.pid == std::process::id()
        {
            kept.keep(&error);
        }
        error
    }
}

impl Sink for FileSink {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Err(error) = self.file().and_then(|file| file.write_all(bytes)) {
            return Err(self.failed(error));
        }
        self.written += bytes.len() as u64;
        if let Some(replacing) = self.replacing.take() {
            // The first write is the file header and the session's start: from now on the
            // name is this recording's; the earlier trace is kept, hidden, until it is
            // closed ([`Kept`]).
            let hidden = Kept::link(&replacing);
            if let Err(error) = std::fs::rename(&replacing.temp, &replacing.target) {
                let _ = std::fs::remove_file(&replacing.temp);
                if let Some(hidden) = hidden {
                    let _ = std::fs::remove_file(hidden);
                }
                return Err(io::Error::new(
                    error.kind(),
                    format!(
                        "cannot replace the earlier trace {}: {error}",
                        replacing.target.shown()
                    ),
                ));
            }
            self.kept = hidden.map(|hidden| Kept {
                hidden,
                target: replacing.target,
                pid: std::process::id(),
                _earlier: replacing._earlier,
                _earlier_held: replacing._earlier_held,
            });
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let file = match self.file() {
            Ok(file) => file,
            Err(error) => return Err(self.failed(error)),
        };
        if let Err(error) = file.sync_data() {
            return Err(self.failed(error));
        }
        let file = self.file()?;
        // Deleted (or its directory removed) while it was recorded: the trace is gone with
        // the last descriptor, which is this one. Said here unless `hrx-trace record`, which
        // says it itself, runs the program.
        let linked = file.metadata().is_ok_and(|m| m.nlink() > 0);
        let fd = std::os::fd::AsRawFd::as_raw_fd(file);
        if !linked {
            activation::report_deleted(&self.path);
        }
        if !linked && std::env::var_os(activation::TRACE_PATHS_ENV).is_none() {
            crate::to_stderr(format_args!(
                "hrx: the trace {} was deleted while it was recorded: nothing of it remains",
                self.path.shown()
            ));
        }
        // Moved (renamed) while it was recorded: whole under its new name, which the
        // descriptor knows. Said, and `hrx-trace record` told where it is (it said "the
        // trace is lost" of a file whole under another name).
        let here = std::fs::metadata(&self.path).map(|m| (m.dev(), m.ino()));
        // Only a name that is this file: the kernel names a descriptor whose own name was
        // unlinked "PATH (deleted)", whatever other links the file keeps (a break-it pass
        // read that as a move to "PATH (deleted)", and summarised a file of that name).
        if linked
            && here.ok() != Some(self.identity)
            && let Some(now) = FileSink::name_of(fd).filter(|now| {
                std::fs::metadata(now).is_ok_and(|m| (m.dev(), m.ino()) == self.identity)
            })
        {
            activation::report_moved(&self.path, &now);
            crate::to_stderr(format_args!(
                "hrx: the trace {} was moved while it was recorded: it is {} now",
                self.path.shown(),
                now.shown()
            ));
        }
        Ok(())
    }

    /// The descriptor, while it still refers to the trace file (checked with `fstat` at each
    /// call: the fatal-signal flush asks it at the signal); `None` once the program closed or
    /// replaced it.
    #[cfg(unix)]
    fn signal_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.file
            .as_ref()
            .filter(|file| FileSink::is_ours(self.identity, file))
            .map(|file| file.as_raw_fd())
    }
}

/// An in-memory trace, for tests and tools. Clones share the same bytes.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of everything written so far.
    pub fn contents(&self) -> Vec<u8> {
        lock(&self.bytes).clone()
    }
}

impl Sink for MemorySink {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        lock(&self.bytes).extend_from_slice(bytes);
        Ok(())
    }
}

/// The environment variable choosing the [`TraceMode`]: `lossless` (the default) or
/// `lossy`.
pub const TRACE_MODE_ENV: &str = "HRX_TRACE_MODE";

/// What a recording thread does when its buffer is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceMode {
    /// Never drop a record: hand the buffer to the writer on the recording thread, and record
    /// the time that took ([`RecorderWait`]).
    #[default]
    Lossless,
    /// Wait a bounded time ([`RecorderOptions::full_buffer_wait`]) for the writer, then drop
    /// the record; the losses are recorded by kind ([`RecordsLost`]) and every reader
    /// reports them.
    Lossy,
}

impl TraceMode {
    /// The mode [`TRACE_MODE_ENV`] asks for; `None` when it is unset or empty.
    ///
    /// # Errors
    ///
    /// [`WriteError::BadMode`] for any other value than `lossless` or `lossy`.
    pub fn from_env() -> Result<Option<TraceMode>, WriteError> {
        match std::env::var(TRACE_MODE_ENV) {
            Ok(text) if text.is_empty() => Ok(None),
            Ok(text) => text.parse().map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(text)) => {
                Err(WriteError::BadMode(text.to_string_lossy().into_owned()))
            }
        }
    }
}

impl std::str::FromStr for TraceMode {
    type Err = WriteError;

    fn from_str(text: &str) -> Result<TraceMode, WriteError> {
        match text {
            "lossless" => Ok(TraceMode::Lossless),
            "lossy" => Ok(TraceMode::Lossy),
            other => Err(WriteError::BadMode(other.to_owned())),
        }
    }
}

/// Recorder settings.
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// Backend of the runtime opening the trace, for [`SessionStart::backend`].
    pub backend: String,
    /// Device of the runtime opening the trace, for [`SessionStart::device`].
    pub device: String,
    /// Longest time a record waits before it is written to the sink. Default 100 ms.
    pub flush_interval: Duration,
    /// Size of each recording thread's ring in bytes (a power of two, rounded up).
    /// Default 1 MiB: past a quarter of it the writer is woken, and the rest is the slack
    /// the writer has (at most 2,800 submissions of a three-region graph) before the thread
    /// must hand its records over itself; the 256 KiB of before left too little for the
    /// writer to finish compressing a block. Resident only as far as the thread has written
    /// into it.
    pub thread_buffer_bytes: usize,
    /// Target uncompressed block size in bytes. Default 1 MiB.
    pub block_bytes: usize,
    /// zstd level (1-3), or `None` to store blocks uncompressed. Default `Some(1)`: the
    /// writer thread (and the compression threads) compete with the application for CPU,
    /// and on timing streams level 3 saves little.
    pub compression_level: Option<i32>,
    /// Largest payload [`Recorder::payload`] stores inline; larger ones become blobs.
    /// Default 4 KiB.
    pub inline_payload_bytes: usize,
    /// In [`TraceMode::Lossy`], how long a recording thread waits for room in a full ring
    /// before dropping the record. Default 10 ms.
    pub full_buffer_wait: Duration,
    /// How long the writer holds a deferred job that is not ready, and its thread's later
    /// records, before it runs it anyway ([`Recorder::record_deferred_when`]). Default
    /// [`HOLD_LIMIT`].
    pub hold_limit: Duration,
    /// Whether a full thread buffer may drop records. Default [`TraceMode::Lossless`].
    pub mode: TraceMode,
    /// A file the writer appends one line to after every block it wrote (for tests and
    /// reliability benchmarks; see [`FLUSH_REPORT_ENV`]). Default `None`.
    pub flush_report: Option<PathBuf>,
    /// Threads compressing records blocks beside the writer thread (at most
    /// [`MAX_COMPRESSION_THREADS`]): `Some(0)` compresses on the thread writing, as before;
    /// `None` (the default) takes [`COMPRESSION_THREADS_ENV`] when it is set, else
    /// [`automatic_compression_threads`] (none on fewer than 4 CPUs). The file is the same
    /// either way. With n threads up to n + 1 blocks are in flight, each a block's payload
    /// ([`RecorderOptions::block_bytes`]) and its compressed copy.
    pub compression_threads: Option<usize>,
}

/// The environment variable naming a flush report file for recorders opened by
/// [`install_or_current`](crate::install_or_current) (and so by `HRX_TRACE`).
///
/// After each block reaches the sink, the writer appends one line, in one `write`:
/// `blocks B end E records R`: B blocks written so far, the file offset E just past the
/// last one, R records in them (session start included). A process killed at any instant
/// leaves a trace whose complete blocks are the B of the last complete line, or one more
/// (killed between the block's write and the line's). The kill test checks exactly that,
/// instead of a wall-clock loss bound that a loaded machine breaks.
pub const FLUSH_REPORT_ENV: &str = "HRX_TRACE_FLUSH_REPORT";

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            backend: String::new(),
            device: String::new(),
            flush_interval: Duration::from_millis(100),
            thread_buffer_bytes: 1 << 20,
            block_bytes: 1 << 20,
            compression_level: Some(1),
            inline_payload_bytes: 4 << 10,
            full_buffer_wait: Duration::from_millis(10),
            hold_limit: HOLD_LIMIT,
            mode: TraceMode::Lossless,
            flush_report: None,
            compression_threads: None,
        }
    }
}

/// The open flush report (see [`FLUSH_REPORT_ENV`]).
struct FlushReport {
    file: File,
    blocks: u64,
    records: u64,
}

impl FlushReport {
    /// Counts a block that reached the sink and reports it; a failing report is dropped,
    /// never the trace.
    fn block_written(report: &mut Option<FlushReport>, end: u64, records: u32) {
        let Some(r) = report else { return };
        r.blocks += 1;
        r.records += u64::from(records);
        let line = format!("blocks {} end {end} records {}\n", r.blocks, r.records);
        if r.file.write_all(line.as_bytes()).is_err() {
            *report = None;
        }
    }
}

/// The recorder could not write the trace.
#[derive(Clone, Debug, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The trace file could not be created.
    #[error("cannot create trace file {}: {source}", path.shown())]
    Create {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: Arc<io::Error>,
    },
    /// Writing to the sink failed; records after the failure were dropped.
    #[error("writing the trace failed: {0}")]
    Io(Arc<io::Error>),
    /// The recorder was already closed.
    #[error("the trace recorder is closed")]
    Closed,
    /// The writer thread could not be started.
    #[error("cannot start the trace writer thread: {0}")]
    Spawn(Arc<io::Error>),
    /// The writer thread panicked (a bug); the trace is incomplete.
    #[error("the trace writer thread panicked")]
    WriterPanicked,
    /// [`TRACE_MODE_ENV`] names no mode.
    #[error("{TRACE_MODE_ENV}: expected lossless or lossy, got {0:?}")]
    BadMode(String),
    /// [`CLOCK_ENV`](crate::clock::CLOCK_ENV) names no clock.
    #[error("{env}: expected auto or monotonic, got {0:?}", env = crate::clock::CLOCK_ENV)]
    BadClock(String),
    /// [`COMPRESSION_THREADS_ENV`] is none of `auto`, `0`, `1` and `2`.
    #[error("{COMPRESSION_THREADS_ENV}: expected auto, 0, 1 or 2, got {0:?}")]
    BadCompressionThreads(String),
}

/// What a closed recorder wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloseSummary {
    /// Records written, including session start and end.
    pub records: u64,
    /// Blocks written, including the footer.
    pub blocks: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Records dropped.
    pub dropped_records: u64,
}

enum Control {
    /// A ring passed its wake mark: drain the rings.
    Wake,
    /// A compression thread finished a block: write the finished blocks, nothing else. Not
    /// a drain of the rings: a block's boundary then never depends on when a compression
    /// finished (the file is the one the writer writes alone; a drain mid-batch cut one
    /// batch into two blocks under load).
    Compressed,
    Flush(Sender<Result<(), WriteError>>),
    Close,
}

/// State shared by all handles, the writer thread and the thread-local entries.
pub(crate) struct Shared {
    id: u64,
    /// The host clock ([`crate::clock::now_ns`]) at the session's start: session time 0.
    base_ns: u64,
    core: Mutex<Core>,
    /// [`Core`]'s blob hashes, read without the core ([`Recorder::blob_stored`]).
    stored_blobs: Arc<RwLock<HashSet<u64>>>,
    /// Whether a write to the sink failed ([`Recorder::write_failed`]).
    write_failed: Arc<AtomicBool>,
    control: Sender<Control>,
    /// Drops detected outside a ring (no thread-local state, oversized records), by kind.
    dropped: [AtomicU64; KINDS],
    next_runtime: AtomicU32,
    /// Index of the next thread to record (see [`RecorderWait::thread`]).
    next_thread: AtomicU32,
    /// The session's annotation names, each written once as an [`AnnotationName`].
    annotation_names: Mutex<HashMap<Box<str>, AnnotationId>>,
    mode: TraceMode,
    flush_interval: Duration,
    full_buffer_wait: Duration,
    hold_limit: Duration,
    thread_buffer_bytes: usize,
    inline_payload_bytes: usize,
    writer: Mutex<Option<JoinHandle<Result<CloseSummary, WriteError>>>>,
    summary: Mutex<Option<Result<CloseSummary, WriteError>>>,
    /// The kernel thread id of the thread holding `core`, else 0: a fatal signal on that
    /// thread must not wait for the lock (see `fatal.rs`).
    core_holder: AtomicI32,
    /// The sink's [`Sink::signal_fd`].
    signal_fd: Option<i32>,
    /// The process that opened the recorder: a child forked without exec shares the file
    /// descriptor, and its fatal signal must not write into this trace.
    pid: u32,
    /// The process's fork count when the recorder was opened ([`crate::fork`]).
    forks: u64,
    /// Tests: the most messages the writer handled in a row while its periodic flush was
    /// due (its deadline passed when each was received): at most 1 when the tick runs after
    /// any message that finds it due, however many wakes are queued ([`run_writer`]).
    #[cfg(test)]
    most_handled_past_tick: AtomicU64,
}

/// The core, locked; records its holder in [`Shared::core_holder`] while it lives.
struct CoreGuard<'a> {
    guard: MutexGuard<'a, Core>,
    holder: &'a AtomicI32,
}

impl std::ops::Deref for CoreGuard<'_> {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.guard
    }
}

impl std::ops::DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Core {
        &mut self.guard
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        // Before the mutex itself is released (fields drop after this).
        self.holder.store(0, Ordering::Relaxed);
    }
}

/// Everything the writer touches, behind one lock (never taken on the hot path).
struct Core {
    sink: Option<Box<dyn Sink>>,
    encoder: BlockEncoder,
    /// The compression threads and the blocks handed to them (`compress.rs`); `None`:
    /// blocks are compressed where they are written.
    compressors: Option<compress::Compressors>,
    /// Framed records of the block being assembled.
    pending: Vec<u8>,
    /// Ring entries drained, before transcoding into `pending`.
    staging: Vec<u8>,
    /// Encoder state of the block being assembled.
    frames: FrameEncoder,
    /// What the timings of the block being assembled covered, per lane.
    summary: SummaryBuilder,
    pending_records: u32,
    block_bytes: usize,
    consumers: Vec<Consumer>,
    /// Since when a ring's entries have been held back behind a job not ready (the oldest
    /// such hold still on; `None`: none held), for [`RecorderOptions::hold_limit`].
    held_since: Option<Instant>,
    /// File offset of the next block.
    offset: u64,
    index: Vec<IndexEntry>,
    records: u64,
    /// Records dropped by the core (write errors, oversized records), by kind.
    dropped: [u64; KINDS],
    /// The loss total of the last [`RecordsLost`] written.
    lost_written: u64,
    /// Whether a lossy session's mode is in the trace: a [`RecordsLost`] of none is written
    /// at its first flush, so that readers tell a lossy recording that lost nothing from a
    /// lossless one (`stats --json` read `lossy_mode: false` for it: a fresh-user pass).
    mode_written: bool,
    /// Records written or pending at the last calibration (see `Shared::sweep`).
    calibrated_at: u64,
    /// The content hashes of the blobs written. Shared with [`Shared::stored_blobs`], so that
    /// [`Recorder::blob_stored`] never waits for the core, which the writer holds for as long
    /// as a block takes to write.
    blobs: Arc<RwLock<HashSet<u64>>>,
    error: Option<Arc<io::Error>>,
    /// Whether `error` was ever set: shared with [`Shared::write_failed`], so that
    /// [`Recorder::write_failed`] never waits for the core.
    failed: Arc<AtomicBool>,
    closed: bool,
    /// Set once the final records are written (deferred jobs drained at close may still
    /// store blobs before): later blobs are dropped.
    closed_for_blobs: bool,
    inline_payload_bytes: usize,
    /// The file header until the first block goes out with it: one write, so a recorder
    /// killed at any instant leaves an empty file or a header followed by its session start.
    unwritten_header: Vec<u8>,
    out: Vec<u8>,
    report: Option<FlushReport>,
    /// The fatal-signal flush's counts of the deferred jobs it could not run, by the kind
    /// they record, reserved here because a signal handler cannot allocate (`fatal`).
    lost_on_signal: Vec<LostKind>,
}

impl Core {
    /// In a child forked without `exec` ([`Shared::forked`]): closed, writing nothing. The
    /// sink is forgotten, not dropped, so that nothing of its (the parent's file and lock)
    /// is touched.
    fn abandon(&mut self) {
        self.closed = true;
        self.closed_for_blobs = true;
        std::mem::forget(self.sink.take());
        // Their threads are the parent's: their lock is never taken here.
        std::mem::forget(self.compressors.take());
    }

    /// Drains every ring into `pending`, writing full blocks as it goes. `patient`: a
    /// deferred job not ready yet ([`Recorder::record_deferred_when`]) holds its thread's
    /// records back until a later drain, instead of running now (the writer's wake and a
    /// thread's lossless hand-over of its full ring; a flush, the tick, close and the hold
    /// limit run every job).
    fn drain_rings(&mut self, patient: bool) {
        let mut i = 0;
        while i < self.consumers.len() {
            // At close, a ring whose thread is gone stays for the ranges it left open (the
            // main thread's state is destroyed when it calls `exit`, before the close).
            let orphaned = self.consumers[i].is_orphaned() && !self.closed;
            if self.drain_consumer(i, patient && !orphaned)
                && self.pending.len() >= self.block_bytes
            {
                self.write_pending();
            }
            if orphaned {
                let mut dropped = self.dropped;
                self.consumers[i].add_dropped(&mut dropped);
                self.dropped = dropped;
                self.consumers.swap_remove(i);
            } else {
                i += 1;
            }
        }
        if self.consumers.iter().any(|c| !c.held.is_empty()) {
            self.held_since.get_or_insert_with(Instant::now);
        } else {
            self.held_since = None;
        }
    }

    /// Drains the ring paired with `producer`, keeping that thread's order: every job runs.
    fn drain_ring_of(&mut self, producer: &Producer) {
        if let Some(i) = self
            .consumers
            .iter()
            .position(|c| producer.is_paired_with(c))
        {
            self.drain_consumer(i, false);
        }
    }

    /// Transcodes consumer `i`'s held entries, then its ring's, into `pending`; whether there
    /// were any. `patient`: see [`Core::drain_rings`]. Held entries are bounded by the ring's
    /// capacity: past it, the job runs now.
    fn drain_consumer(&mut self, i: usize, patient: bool) -> bool {
        let consumer = &mut self.consumers[i];
        let patient = patient && consumer.held.len() < consumer.capacity();
        if patient && staging::deferred_address(&consumer.held).is_some_and(|a| !ready(a)) {
            // Still not ready: the ring's entries join those held, untranscoded.
            let mut held = std::mem::take(&mut consumer.held);
            consumer.drain_into(&mut held);
            consumer.held = held;
            return false;
        }
        let mut staging = std::mem::take(&mut self.staging);
        staging.clear();
        staging.append(&mut consumer.held);
        consumer.drain_into(&mut staging);
        let any = !staging.is_empty();
        self.staging = staging;
        if any && let Some(rest) = self.transcode_staging(patient) {
            let consumer = &mut self.consumers[i];
            consumer.held.extend_from_slice(&self.staging[rest..]);
        }
        self.staging.clear();
        any
    }

    /// Moves the staged ring entries into `pending` as frames, running deferred jobs in
    /// place. `patient`: stops at a job not ready yet and returns the offset of its entry,
    /// from which the entries are to be held; the caller clears the staging.
    fn transcode_staging(&mut self, patient: bool) -> Option<usize> {
        let staging = std::mem::take(&mut self.staging);
        let mut at = 0;
        let mut rest = None;
        while at < staging.len() {
            let done = staging::transcode(
                &staging[at..],
                &mut self.frames,
                &mut self.pending,
                Some(&mut self.summary),
            );
            self.pending_records += done.records;
            at += done.consumed;
            if let Some(address) = done.deferred {
                if patient && !ready(address) {
                    rest = Some(at - staging::DEFERRED_ENTRY);
                    break;
                }
                // SAFETY: as above; its entry is transcoded for the last time here.
                let work = unsafe { take_job(address) };
                self.run_job(work.job);
            }
        }
        self.staging = staging;
        rest
    }

    /// Runs a deferred job: its blobs and records go where the job stood.
    fn run_job(&mut self, job: DeferredJob) {
        job(&mut Deferred { core: self });
        if self.pending.len() >= self.block_bytes {
            self.write_pending();
        }
    }

    /// Stores `bytes` as a [`Blob`] unless the trace already has it (see
    /// [`Recorder::intern_blob`]).
    fn intern_blob(&mut self, bytes: &[u8]) -> Option<BlobHash> {
        self.intern_blob_hashed(bytes, xxh3_64(bytes))
    }

    /// [`Core::intern_blob`] of `bytes` whose xxh3 is `hash`, already computed elsewhere: a
    /// blob already stored is not read again.
    fn intern_blob_hashed(&mut self, bytes: &[u8], hash: u64) -> Option<BlobHash> {
        if read_lock(&self.blobs).contains(&hash) {
            return Some(BlobHash(hash));
        }
        if self.closed_for_blobs || bytes.len() > MAX_RECORD_BYTES - 16 {
            self.dropped[kind_slot("Blob")] += 1;
            return None;
        }
        // Large blobs (captured buffer contents) go in a block of their own, uncompressed,
        // written from `bytes` where they lie: one pass to hash them, one for the block's
        // checksum, one into the file (a copy of the record, the frame and the block would
        // each be one more through memory that the device's copies share).
        if bytes.len() > RAW_BLOB_BYTES {
            self.write_pending();
            self.write_bulk_blob(BlobHash(hash), bytes);
        } else {
            let blob = Record::Blob(Blob {
                hash: BlobHash(hash),
                bytes: bytes.to_vec(),
            });
            self.append_record(&blob).expect("blob encodes");
            self.write_pending_with(true);
        }
        write_lock(&self.blobs).insert(hash);
        Some(BlobHash(hash))
    }

    /// Writes a [`Blob`] record of `bytes` as a block of its own, stored as is, without
    /// copying `bytes` (see [`BlockEncoder::encode_stored_head`]).
    fn write_bulk_blob(&mut self, hash: BlobHash, bytes: &[u8]) {
        let written = match crate::format::blob_frame_head(hash, bytes.len()) {
            Ok(head) => self.write_block_parts(BlockKind::RECORDS, &head, bytes, 1),
            Err(e) => Err(io::Error::other(e)),
        };
        match written {
            // No summary after it: the block holds no timing, and the summary of what was
            // counted before it was written with the pending block just before; one here
            // only aged the timings waiting for their submit, giving up on those the blob's
            // job held back (the pipeline's uploads: a fresh user's pass).
            Ok(()) => self.records += 1,
            Err(e) => {
                let at = self.offset;
                self.fail(e, 1, || {
                    format!("a blob of {} bytes at byte {at}", bytes.len())
                })
            }
        }
    }

    /// Captures `bytes` for a record: inline when small, else as a blob, else omitted.
    fn payload(&mut self, bytes: &[u8]) -> Payload {
        self.payload_with(bytes, None)
    }

    /// [`Core::payload`], with the xxh3 of `bytes` when it is known.
    fn payload_with(&mut self, bytes: &[u8], hash: Option<u64>) -> Payload {
        let len_bytes = bytes.len() as u64;
        if bytes.len() <= self.inline_payload_bytes {
            return Payload::Inline(bytes.to_vec());
        }
        let hash = hash.unwrap_or_else(|| xxh3_64(bytes));
        match self.intern_blob_hashed(bytes, hash) {
            Some(hash) => Payload::Blob { hash, len_bytes },
            None => Payload::Omitted { len_bytes },
        }
    }

    /// Appends one record, writing the pending block first if the record would overflow it.
    ///
    /// # Errors
    ///
    /// When the record does not encode or is larger than [`MAX_RECORD_BYTES`].
    fn append_record(&mut self, record: &Record) -> Result<(), postcard::Error> {
        let mut frame = Vec::new();
        // Only timings depend on the block state, and they are far below any block size.
        FrameEncoder::new().encode(record, &mut frame)?;
        if frame.len() > MAX_RECORD_BYTES {
            return Err(postcard::Error::SerializeBufferFull);
        }
        if !self.pending.is_empty() && self.pending.len() + frame.len() > self.block_bytes {
            self.write_pending();
        }
        match record {
            Record::RegionTiming(t) => {
                self.summary.observe_timing(t);
                self.frames.encode(record, &mut self.pending)?
            }
            Record::OpTiming(_) => self.frames.encode(record, &mut self.pending)?,
            _ => {
                self.summary.observe_frame(&frame);
                self.pending.extend_from_slice(&frame)
            }
        }
        self.pending_records += 1;
        Ok(())
    }

    /// Writes the pending records as one block (or counts them as dropped after an error).
    fn write_pending(&mut self) {
        self.write_pending_with(true);
    }

    /// As `write_pending`, storing the block uncompressed when `compress` is false. A block
    /// to compress goes to the compression threads where there are some (`compress.rs`).
    fn write_pending_with(&mut self, compress: bool) {
        if self.pending.is_empty() || (compress && self.hand_over_pending()) {
            return;
        }
        let records = self.pending_records;
        let payload = std::mem::take(&mut self.pending);
        if let Err(e) = self.write_block(BlockKind::RECORDS, &payload, records, compress) {
            let at = self.offset;
            self.fail(e, records, || {
                format!("a block of {records} records at byte {at}")
            });
        } else {
            self.records += u64::from(records);
            self.write_summary();
        }
        self.pending = payload;
        self.pending.clear();
        self.pending_records = 0;
        self.frames.reset();
    }

    /// Writes the summary of the timings counted since the last one, if any (format 1.9,
    /// [`crate::summary`]).
    fn write_summary(&mut self) {
        let Some(summary) = self.summary.take() else {
            return;
        };
        let Ok(bytes) = postcard::to_stdvec(&summary) else {
            return;
        };
        if let Err(e) = self.write_block(BlockKind::SUMMARY, &bytes, 0, false) {
            let at = self.offset;
            self.fail(e, 0, || format!("a summary block at byte {at}"));
        }
    }

    fn write_block(
        &mut self,
        kind: BlockKind,
        payload: &[u8],
        records: u32,
        compress: bool,
    ) -> io::Result<()> {
        self.write_block_with(kind, records, &[], |encoder, out| {
            encoder.encode_with(kind, payload, records, compress, out)
        })
    }

    /// As `write_block` for a block stored as is whose payload is `head` then `tail`,
    /// `tail` written from where it lies.
    fn write_block_parts(
        &mut self,
        kind: BlockKind,
        head: &[u8],
        tail: &[u8],
        records: u32,
    ) -> io::Result<()> {
        self.write_block_with(kind, records, tail, |_, out| {
            BlockEncoder::encode_stored_head(kind, head, tail, records, out)
        })
    }

    /// Writes a block that `encode` appends to the output buffer (after the file header,
    /// before the first block), followed by `tail`, and indexes it.
    fn write_block_with(
        &mut self,
        kind: BlockKind,
        records: u32,
        tail: &[u8],
        encode: impl FnOnce(&mut BlockEncoder, &mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<()> {
        // The blocks handed to the compression threads come first.
        self.write_compressed(0);
        self.write_block_now(kind, records, tail, encode)
    }

    /// [`Core::write_block_with`] without writing the blocks in flight first: for those
    /// blocks themselves (`compress.rs`, an encoded block as `tail`).
    ///
    /// # Errors
    ///
    /// The trace's first error, once it has one; the encoder's; the sink's.
    fn write_block_now(
        &mut self,
        kind: BlockKind,
        records: u32,
        tail: &[u8],
        encode: impl FnOnce(&mut BlockEncoder, &mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        let Some(sink) = self.sink.as_mut() else {
            return Err(io::Error::other("the trace is closed"));
        };
        self.out.clear();
        self.out.append(&mut self.unwritten_header);
        let block_start = self.out.len();
        encode(&mut self.encoder, &mut self.out)?;
        if !self.out.is_empty() {
            sink.write_all(&self.out)?;
        }
        if !tail.is_empty() {
            sink.write_all(tail)?;
        }
        self.block_written(kind, records, self.out.len() - block_start + tail.len());
        Ok(())
    }

    /// Indexes a block of `len` bytes just written at the current offset.
    fn block_written(&mut self, kind: BlockKind, records: u32, len: usize) {
        self.index.push(IndexEntry {
            offset: self.offset,
            kind,
            record_count: records,
        });
        if self.index.capacity() - self.index.len() < fatal::SPARE_INDEX_ENTRIES {
            self.index
                .reserve(self.index.len().max(fatal::SPARE_INDEX_ENTRIES));
        }
        self.offset += len as u64;
        FlushReport::block_written(&mut self.report, self.offset, records);
    }

    /// A write of `what` (the part of the trace, for the error: "the final index", "a block
    /// of 12 records at byte 4096") failed with `e`: its `records` are counted as dropped, and
    /// the first failure is kept, naming what it was writing, as every later write is refused.
    fn fail(&mut self, e: io::Error, records: u32, what: impl FnOnce() -> String) {
        self.dropped[KINDS - 1] += u64::from(records);
        if self.error.is_none() {
            self.error = Some(Arc::new(io::Error::new(
                e.kind(),
                format!("{}: {e}", what()),
            )));
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    fn flush_sink(&mut self) -> Result<(), WriteError> {
        if let Some(e) = &self.error {
            return Err(WriteError::Io(e.clone()));
        }
        match self.sink.as_mut().map(|s| s.flush()) {
            Some(Err(e)) => {
                let e = Arc::new(e);
                self.error = Some(e.clone());
                self.failed.store(true, Ordering::Relaxed);
                Err(WriteError::Io(e))
            }
            _ => Ok(()),
        }
    }

    /// Records lost so far, by kind slot.
    fn lost(&self, shared: &Shared) -> [u64; KINDS] {
        let mut lost = self.dropped;
        for (sum, count) in lost.iter_mut().zip(&shared.dropped) {
            *sum += count.load(Ordering::Relaxed);
        }
        for consumer in &self.consumers {
            consumer.add_dropped(&mut lost);
        }
        lost
    }

    fn dropped_total(&self, shared: &Shared) -> u64 {
        self.lost(shared).iter().sum()
    }

    /// Appends a [`RecordsLost`] when the losses grew since the last one, and once, losses
    /// or not, in a lossy session (its mode).
    fn note_losses(&mut self, shared: &Shared) {
        let lost = self.lost(shared);
        let total: u64 = lost.iter().sum();
        let lossy = shared.mode == TraceMode::Lossy;
        if total == self.lost_written && (self.mode_written || !lossy) {
            return;
        }
        let names = Record::KIND_NAMES.iter().copied().chain(["unknown"]);
        let record = Record::RecordsLost(RecordsLost {
            time_ns: shared.now_ns(),
            lossy,
            total,
            by_kind: names
                .zip(lost)
                .filter(|&(_, records)| records > 0)
                .map(|(kind, records)| LostKind {
                    kind: kind.to_owned(),
                    records,
                })
                .collect(),
        });
        if self.append_record(&record).is_ok() {
            self.lost_written = total;
            self.mode_written = true;
        }
    }
}

/// The loss-count slot of the record kind named `name`.
fn kind_slot(name: &str) -> usize {
    Record::KIND_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or(KINDS - 1)
}

impl Shared {
    #[inline]
    fn now_ns(&self) -> u64 {
        crate::clock::now_ns().saturating_sub(self.base_ns)
    }

    /// Calibrates the host clock and appends the calibration as a [`HostClock`] record.
    fn calibrate(&self, core: &mut Core) {
        let record = host_clock(self.base_ns, crate::clock::recalibrate());
        let _ = core.append_record(&record);
        core.calibrated_at = core.recorded();
    }

    /// The core for a recording thread, `None` in a child forked without `exec`
    /// ([`Shared::forked`]) before its lock is taken: the parent's writer may have held it
    /// at the fork, and in the child nothing would ever release it.
    fn core_unless_forked(&self) -> Option<CoreGuard<'_>> {
        (!self.forked()).then(|| self.core())
    }

    fn core(&self) -> CoreGuard<'_> {
        let mut guard = lock(&self.core);
        if !guard.closed && self.forked() {
            guard.abandon();
        }
        self.core_holder
            .store(fatal::current_thread_id(), Ordering::Relaxed);
        CoreGuard {
            guard,
            holder: &self.core_holder,
        }
    }

    /// The core, when no other thread holds it (a poisoned lock is taken, as by `core`).
    fn try_core(&self) -> Option<CoreGuard<'_>> {
        let guard = match self.core.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.core_holder
            .store(fatal::current_thread_id(), Ordering::Relaxed);
        Some(CoreGuard {
            guard,
            holder: &self.core_holder,
        })
    }

    fn wake(&self) {
        // A full channel means a wake is already queued.
        let _ = self.control.try_send(Control::Wake);
    }

    /// A new ring for the calling thread.
    fn register(&self) -> Result<Producer, Unregistered> {
        let mut core = self.core_unless_forked().ok_or(Unregistered::Closed)?;
        if core.closed {
            return Err(Unregistered::Closed);
        }
        let (producer, consumer) =
            ring::ring(self.thread_buffer_bytes).ok_or(Unregistered::NoMemory)?;
        core.consumers.push(consumer);
        Ok(producer)
    }

    /// The session's id of annotation name `text`, recording its [`AnnotationName`] (under
    /// the core lock, so before any record that uses the id) when it is new; `None` after
    /// close.
    #[cold]
    fn intern_annotation_name(&self, text: &str) -> Option<AnnotationId> {
        let mut names = lock(&self.annotation_names);
        if let Some(&id) = names.get(text) {
            return Some(id);
        }
        let id = AnnotationId(u32::try_from(names.len()).ok()?);
        let record = Record::AnnotationName(AnnotationName {
            name: id,
            text: text.to_owned(),
        });
        match self.record_locked(&record) {
            Outcome::Recorded => {}
            Outcome::Closed => return None,
            // A name that cannot be stored (longer than a record may be): counted lost, its
            // annotations name an id without a name, which readers show as its number.
            _ => self.count_dropped(record.kind_index()),
        }
        names.insert(text.into(), id);
        Some(id)
    }

    /// Writes a record too large for the ring, after the thread's own ring.
    fn record_large(&self, producer: &Producer, record: &Record) -> Outcome {
        let Some(mut core) = self.core_unless_forked() else {
            return Outcome::Closed;
        };
        if core.closed {
            return Outcome::Closed;
        }
        core.drain_ring_of(producer);
        match core.append_record(record) {
            Ok(()) => Outcome::Recorded,
            Err(_) => Outcome::Dropped(record.kind_index()),
        }
    }

    /// Records `record` under the core lock, for a thread that cannot use its ring (its
    /// thread-local state is gone or busy) in lossless mode.
    fn record_locked(&self, record: &Record) -> Outcome {
        let Some(mut core) = self.core_unless_forked() else {
            return Outcome::Closed;
        };
        if core.closed {
            return Outcome::Closed;
        }
        match core.append_record(record) {
            Ok(()) => Outcome::Recorded,
            Err(_) => Outcome::Dropped(record.kind_index()),
        }
    }

    /// Counts one lost record of kind `kind` (an index into [`Record::KIND_NAMES`]).
    fn count_dropped(&self, kind: usize) {
        self.dropped[kind.min(KINDS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    /// One pass of the writer: write the blocks compressed since the last, drain all rings;
    /// on `tick`, also write what is pending, and every block in flight.
    /// Drains the rings (`tick`: and runs every job held, calibrates, writes what is pending
    /// and flushes the sink); when a job held back not ready must run
    /// ([`RecorderOptions::hold_limit`]).
    fn sweep(&self, tick: bool) -> Option<Instant> {
        let mut core = self.core();
        core.write_compressed(usize::MAX);
        // A wake waits for a job not ready yet; the tick runs it (a bounded delay).
        core.drain_rings(!tick);
        if tick {
            // An idle session's flush writes nothing, not even a calibration: the clock's
            // piece stays in force until records need it.
            if core.recorded() > core.calibrated_at {
                self.calibrate(&mut core);
            }
            core.note_losses(self);
            core.write_pending();
            core.write_compressed(0);
            let _ = core.flush_sink();
        }
        core.held_since.map(|since| since + self.hold_limit)
    }

    /// Runs the jobs held back not ready (their hold limit passed) and drains the rings.
    fn run_held(&self) -> Option<Instant> {
        let mut core = self.core();
        core.drain_rings(false);
        core.held_since.map(|since| since + self.hold_limit)
    }

    /// Final pass: stop the rings, drain, write session end, footer and trailer, fsync.
    fn finish(&self) -> Result<CloseSummary, WriteError> {
        let mut core = self.core();
        core.closed = true;
        for consumer in &core.consumers {
            consumer.close();
        }
        core.drain_rings(false);
        // Every block in flight written (its losses counted before the session's end says
        // them); the last blocks and the footer are compressed here.
        core.stop_compressors();
        // The ranges still open, to now, under their `NAME (open at end)` names.
        let end_ns = self.now_ns();
        let mut open = Vec::new();
        for consumer in &core.consumers {
            consumer.open_ranges(|thread, name, start_ns| {
                open.push(Record::AnnotationRange(AnnotationRange {
                    thread,
                    name: AnnotationId(name),
                    start_ns,
                    end_ns: end_ns.max(start_ns),
                }));
            });
        }
        for record in &open {
            core.append_record(record)
                .expect("an annotation range encodes");
        }
        core.closed_for_blobs = true;
        self.calibrate(&mut core);
        core.note_losses(self);
        let dropped = core.dropped_total(self);
        let end = Record::SessionEnd(SessionEnd {
            time_ns: self.now_ns(),
            records: core.recorded(),
            dropped_records: dropped,
        });
        core.append_record(&end).expect("session end encodes");
        core.write_pending();
        let footer = Footer {
            blocks: core.index.clone(),
            records: core.records,
            dropped_records: dropped,
        };
        let footer_offset = core.offset;
        let payload = postcard::to_stdvec(&footer).expect("footer encodes");
        let index = core
            .write_block(BlockKind::FOOTER, &payload, 0, true)
            .and_then(|()| {
                let sink = core.sink.as_mut().expect("sink present until finish");
                sink.write_all(&encode_trailer(footer_offset))?;
                sink.flush()
            });
        match index {
            // Every record is in the file when only this fails: a reader recovers them
            // without the index, as after a crash, and is told to.
            Err(e) => core.fail(e, 0, || {
                format!(
                    "the final index at byte {footer_offset} (the records before it were \
                     written: readers recover them without it, as after a crash)"
                )
            }),
            Ok(()) => {
                let sink = core.sink.as_mut().expect("sink present until finish");
                if let Err(e) = sink.sync() {
                    core.fail(e, 0, || "syncing the trace to its disk".to_owned());
                }
            }
        }
        // Thread-local entries may keep `Shared` alive for a while: free what it holds.
        core.sink = None;
        core.consumers = Vec::new();
        core.pending = Vec::new();
        core.staging = Vec::new();
        core.out = Vec::new();
        *write_lock(&core.blobs) = HashSet::new();
        if let Some(e) = &core.error {
            return Err(WriteError::Io(e.clone()));
        }
        let blocks = core.index.len() as u64; // includes the footer
        core.index = Vec::new();
        Ok(CloseSummary {
            records: core.records,
            blocks,
            bytes: core.offset + crate::format::TRAILER_LEN as u64,
            dropped_records: dropped,
        })
    }

    /// Whether this process is a child forked without `exec` from the one that opened the
    /// recorder: it shares its parent's file descriptor, but the parent's writer thread is
    /// not in it. It never writes its parent's trace and never waits for that writer: its
    /// annotations open a trace of its own (`activation::own_recorder`), as a runtime it
    /// creates does.
    pub(crate) fn forked(&self) -> bool {
        crate::fork::forks() != self.forks
    }

    /// The forks this process had gone through when the recorder was opened (see
    /// [`Shared::forked`]).
    pub(crate) fn forks_at_creation(&self) -> u64 {
        self.forks
    }

    fn close(&self) -> Result<CloseSummary, WriteError> {
        if self.forked() {
            // The parent closes its trace; the child's exit (`atexit`) or dropped runtime
            // must neither write into it nor join a writer thread it does not have.
            fatal::unregister(self);
            drop(activation::uninstall_if(self.id));
            return Ok(CloseSummary::default());
        }
        // Before the final write: a fatal signal from now on leaves this trace to its close.
        fatal::unregister(self);
        let displaced = activation::uninstall_if(self.id);
        let result = {
            let mut summary = lock(&self.summary);
            if let Some(result) = summary.as_ref() {
                result.clone()
            } else {
                let _ = self.control.send(Control::Close);
                let writer = lock(&self.writer).take();
                let result = match writer.map(JoinHandle::join) {
                    Some(Ok(result)) => result,
                    Some(Err(_)) => Err(WriteError::WriterPanicked),
                    None => Err(WriteError::Closed),
                };
                *summary = Some(result.clone());
                result
            }
        };
        drop(displaced);
        result
    }
}

fn run_writer(shared: Arc<Shared>, control: Receiver<Control>) -> Result<CloseSummary, WriteError> {
    let mut deadline = Instant::now() + shared.flush_interval;
    // When the oldest job held back not ready ([`Recorder::record_deferred_when`]) must run.
    let mut held: Option<Instant> = None;
    // Tests: messages handled in a row while the tick was due ([`Shared::most_handled_past_tick`]).
    #[cfg(test)]
    let mut past_tick = 0u64;
    loop {
        let wake_at = held.map_or(deadline, |held| held.min(deadline));
        let message = control.recv_deadline(wake_at);
        #[cfg(test)]
        if message.is_ok() && Instant::now() >= deadline {
            past_tick += 1;
            shared
                .most_handled_past_tick
                .fetch_max(past_tick, Ordering::Relaxed);
        }
        match message {
            Ok(Control::Wake) => held = shared.sweep(false),
            Ok(Control::Compressed) => shared.core().write_compressed(usize::MAX),
            Ok(Control::Flush(ack)) => {
                held = shared.sweep(true);
                let _ = ack.send(shared.core().flush_sink());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Ok(Control::Close) | Err(RecvTimeoutError::Disconnected) => return shared.finish(),
        }
        // The tick is due whether or not a message came first: `recv_deadline` returns a
        // queued message before it looks at the deadline, so a writer always woken (a busy
        // program's rings, hashing and compression threads) never timed out, and held a
        // job not ready, and its thread's later records, for seconds.
        let now = Instant::now();
        if now >= deadline {
            held = shared.sweep(true);
            deadline = now + shared.flush_interval;
            #[cfg(test)]
            {
                past_tick = 0;
            }
        } else if held.is_some_and(|held| now >= held) {
            held = shared.run_held();
        }
    }
}

/// Closes the session when the last [`Recorder`] handle is dropped.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Errors stay in the summary; `Drop` must not panic.
        let _ = self.shared.close();
    }
}

/// A trace being recorded. Cheap to clone; all clones record into the same trace, from any
/// thread. The trace is closed by [`Recorder::close`] or when the last clone is dropped.
#[derive(Clone)]
pub struct Recorder {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("id", &self.handle.shared.id)
            .finish_non_exhaustive()
    }
}

static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(1);

impl Recorder {
    /// Starts recording into a new file at `path` (created or truncated).
    ///
    /// # Errors
    ///
    /// [`WriteError::Create`] when the file cannot be created; see [`Recorder::with_sink`].
    pub fn create(
        path: impl AsRef<Path>,
        options: RecorderOptions,
    ) -> Result<Recorder, WriteError> {
        let path = path.as_ref();
        let sink = FileSink::create(path).map_err(|e| WriteError::Create {
            path: path.to_owned(),
            source: Arc::new(e),
        })?;
        Recorder::with_file_sink(sink, path, options)
    }

    /// [`Recorder::with_sink`] of a file just created (or emptied) at `path`: where the
    /// recording cannot start (its first write fails: a full disk, a file size limit), the
    /// empty file is removed, as no trace, rather than left to read as "the file is empty:
    /// the recording process probably died before its first write" (a break-it pass).
    fn with_file_sink(
        sink: FileSink,
        path: &Path,
        options: RecorderOptions,
    ) -> Result<Recorder, WriteError> {
        use std::os::unix::fs::MetadataExt;
        let identity = sink.identity;
        Recorder::with_sink(sink, options).inspect_err(|_| {
            // Only the file this recorder made empty, still empty (its lock is given back
            // with the sink: another recorder may have taken and written it since).
            if std::fs::symlink_metadata(path)
                .is_ok_and(|m| (m.dev(), m.ino()) == identity && m.is_file() && m.len() == 0)
            {
                let _ = std::fs::remove_file(path);
            }
        })
    }

    /// [`Recorder::create`] at a `path` where nothing exists yet ([`FileSink::create_new`]).
    pub(crate) fn create_new(
        path: &Path,
        options: RecorderOptions,
    ) -> Result<Recorder, WriteError> {
        let sink = FileSink::create_new(path).map_err(|e| WriteError::Create {
            path: path.to_owned(),
            source: Arc::new(e),
        })?;
        Recorder::with_file_sink(sink, path, options)
    }

    /// Starts recording into `sink`: writes the file header and [`SessionStart`] at once, in
    /// one write, and starts the writer thread.
    ///
    /// # Errors
    ///
    /// [`WriteError::Io`] when the header cannot be written or zstd cannot start,
    /// [`WriteError::Spawn`] when the writer thread cannot be started,
    /// [`WriteError::BadCompressionThreads`] when [`COMPRESSION_THREADS_ENV`] is none of
    /// `auto`, `0`, `1` and `2`. A compression thread that cannot be started is no error: there
    /// is one fewer.
    pub fn with_sink(sink: impl Sink, options: RecorderOptions) -> Result<Recorder, WriteError> {
        let io_error = |e| WriteError::Io(Arc::new(e));
        let compression_threads =
            compress::threads_for(options.compression_threads, options.compression_level)?;
        let signal_fd = sink.signal_fd();
        let sink: Box<dyn Sink> = Box::new(sink);
        let encoder = BlockEncoder::new(options.compression_level).map_err(io_error)?;
        let header = FileHeader::current(encoder.compression()).encode();
        let report = match &options.flush_report {
            Some(path) => Some(FlushReport {
                file: std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(io_error)?,
                blocks: 0,
                records: 0,
            }),
            None => None,
        };
        let calibration = crate::clock::recalibrate();
        let base_ns = calibration.next.from_ns;
        let start = SessionStart {
            producer: concat!("hrx-capture ", env!("CARGO_PKG_VERSION")).to_owned(),
            format_version: (
                FormatVersion::CURRENT.major.0,
                FormatVersion::CURRENT.minor.0,
            ),
            wall_clock_utc: chrono::Utc::now(),
            // The session clock reads on the CLOCK_MONOTONIC time line, so its zero is there.
            monotonic_base_ns: base_ns,
            host: host_name(),
            pid: std::process::id(),
            args: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            backend: options.backend.clone(),
            device: options.device.clone(),
        };
        let block_bytes = options.block_bytes.clamp(4 << 10, 16 << 20);
        let thread_buffer_bytes = options.thread_buffer_bytes.clamp(4 << 10, 64 << 20);
        // Reserved now (address space; the pages are touched only when used) so that the
        // fatal-signal flush, which must not allocate, can drain a whole ring and assemble a
        // block; and spare index room for the blocks it writes.
        let mut core = Core {
            sink: Some(sink),
            encoder,
            compressors: None,
            pending: Vec::with_capacity(block_bytes + MAX_RECORD_FRAME_SLACK),
            staging: Vec::with_capacity(thread_buffer_bytes.max(64).next_power_of_two()),
            frames: FrameEncoder::new(),
            summary: SummaryBuilder::default(),
            pending_records: 0,
            block_bytes,
            consumers: Vec::new(),
            held_since: None,
            offset: header.len() as u64,
            index: Vec::with_capacity(fatal::SPARE_INDEX_ENTRIES),
            records: 0,
            dropped: [0; KINDS],
            lost_written: 0,
            mode_written: false,
            calibrated_at: 0,
            blobs: Arc::default(),
            error: None,
            failed: Arc::default(),
            closed: false,
            closed_for_blobs: false,
            inline_payload_bytes: options.inline_payload_bytes,
            unwritten_header: header.to_vec(),
            out: Vec::new(),
            report,
            lost_on_signal: [
                crate::DeferredKind::HostWrite,
                crate::DeferredKind::OutputDigest,
                crate::DeferredKind::Other,
            ]
            .into_iter()
            .map(|kind| LostKind {
                kind: kind.record_kind().to_owned(),
                records: 0,
            })
            .collect(),
        };
        core.append_record(&Record::SessionStart(start))
            .expect("session start encodes");
        core.append_record(&host_clock(base_ns, calibration))
            .expect("host clock encodes");
        core.calibrated_at = u64::from(core.pending_records);
        core.write_pending();
        if let Some(e) = core.error.take() {
            return Err(WriteError::Io(e));
        }
        let (control, receiver) = crossbeam_channel::bounded(64);
        core.compressors =
            compress::Compressors::start(compression_threads, options.compression_level, &control);
        let stored_blobs = core.blobs.clone();
        let write_failed = core.failed.clone();
        let shared = Arc::new(Shared {
            id: NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed),
            stored_blobs,
            write_failed,
            base_ns,
            core: Mutex::new(core),
            control,
            dropped: std::array::from_fn(|_| AtomicU64::new(0)),
            next_runtime: AtomicU32::new(0),
            next_thread: AtomicU32::new(0),
            annotation_names: Mutex::new(HashMap::new()),
            mode: options.mode,
            flush_interval: options.flush_interval.max(Duration::from_millis(1)),
            full_buffer_wait: options.full_buffer_wait,
            hold_limit: options.hold_limit,
            thread_buffer_bytes,
            inline_payload_bytes: options.inline_payload_bytes,
            writer: Mutex::new(None),
            summary: Mutex::new(None),
            core_holder: AtomicI32::new(0),
            signal_fd,
            pid: std::process::id(),
            forks: crate::fork::watch_forks(),
            #[cfg(test)]
            most_handled_past_tick: AtomicU64::new(0),
        });
        let thread_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("hrx-capture-writer".into())
            .spawn(move || run_writer(thread_shared, receiver))
            .map_err(|e| WriteError::Spawn(Arc::new(e)))?;
        *lock(&shared.writer) = Some(writer);
        if signal_fd.is_some() {
            fatal::register(&shared);
        }
        Ok(Recorder {
            handle: Arc::new(Handle { shared }),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.handle.shared.id
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// Records `record` from the calling thread.
    ///
    /// Never blocks on I/O and takes no lock in the common case: the record is encoded into
    /// this thread's buffer, which the writer thread drains. After close, records are ignored.
    ///
    /// Inlined where the record is built: a record of the kinds every traced submission makes
    /// (see `staging`) is written as its raw entry straight into the thread's ring
    /// (`push_raw`); the match on its kind folds away, and so does dropping it.
    #[inline(always)]
    pub fn record(&self, record: &Record) {
        let shared = &self.handle.shared;
        let mut entry = [0; MAX_RAW_ENTRY];
        if let Some(len) = staging::encode_raw(record, &mut entry)
            && push_raw(shared.id, &entry, len)
        {
            return;
        }
        record_with(shared.id, &|| Some(shared.clone()), record);
    }

    /// Records the record `make` builds for the calling thread's index in the session
    /// ([`ThreadName::thread`], kept while the thread's state is being torn down): how
    /// records with a `thread` field ([`crate::schema::HostSpan`],
    /// [`crate::schema::AnnotationRange`], ...) are recorded. Costs what
    /// [`Recorder::record`] costs.
    #[inline]
    pub fn record_on_thread(&self, make: impl FnOnce(u32) -> Record) {
        let shared = &self.handle.shared;
        record_on_thread_with(shared.id, &|| Some(shared.clone()), make);
    }

    /// The id of annotation name `text` in this session; the first use of a name in the
    /// session records its [`AnnotationName`]. A lookup in the calling thread's cache
    /// (a hash of `text`) after the first use on the thread; `None` after close.
    #[inline]
    pub fn annotation_name(&self, text: &str) -> Option<AnnotationId> {
        let shared = &self.handle.shared;
        annotation_name_with(shared.id, &|| Some(shared.clone()), text)
    }

    /// Records `record` from the calling thread, as [`Recorder::record`] does its
    /// [`Record`], without building one: its raw entry is written from its fields.
    #[inline(always)]
    pub fn record_raw(&self, record: RawRecord<'_>) {
        let shared = &self.handle.shared;
        let mut entry = [0; MAX_RAW_ENTRY];
        if let Some(len) = record.encode(&mut entry)
            && push_raw(shared.id, &entry, len)
        {
            return;
        }
        record_with(shared.id, &|| Some(shared.clone()), &record.to_record());
    }

    /// Records `record`, a `HostSpan` or an `AnnotationRange` whose thread index is the
    /// calling thread's (whatever it holds), as [`Recorder::record_on_thread`] does, without
    /// building a [`Record`]: its raw entry is written from its fields and the thread's index
    /// (session 43: a host span's hook about 30% fewer instructions). Any other record as
    /// [`Recorder::record_raw`].
    #[inline(always)]
    pub fn record_raw_on_thread(&self, record: RawRecord<'_>) {
        if !matches!(
            record,
            RawRecord::HostSpan(_) | RawRecord::AnnotationRange(_)
        ) {
            return self.record_raw(record);
        }
        let shared = &self.handle.shared;
        let mut entry = [0; MAX_RAW_ENTRY];
        if let Some(len) = record.encode(&mut entry)
            && push_raw_on_thread(shared.id, &mut entry, len)
        {
            return;
        }
        record_on_thread_with(shared.id, &|| Some(shared.clone()), |thread| {
            match record.to_record() {
                Record::HostSpan(span) => Record::HostSpan(HostSpan { thread, ..span }),
                Record::AnnotationRange(range) => {
                    Record::AnnotationRange(AnnotationRange { thread, ..range })
                }
                other => other,
            }
        });
    }

    /// A [`RawBatch`]: records of the calling thread gathered and handed to its buffer at
    /// once.
    #[inline]
    pub fn raw_batch(&self) -> RawBatch<'_> {
        RawBatch {
            recorder: self,
            len: 0,
            entries: [0; RAW_BATCH_BYTES + MAX_RAW_ENTRY],
        }
    }

    /// The session's host clock: nanoseconds since the session's monotonic base. Use it for
    /// every host `_ns` field.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.handle.shared.now_ns()
    }

    /// The session's zero on the host clock ([`crate::clock::now_ns`]), in ns: a host clock
    /// reading `t` is session time `t - base_ns()`.
    pub fn base_ns(&self) -> u64 {
        self.handle.shared.base_ns
    }

    /// A fresh runtime id, unique within this trace.
    pub fn next_runtime_id(&self) -> RuntimeId {
        RuntimeId(
            self.handle
                .shared
                .next_runtime
                .fetch_add(1, Ordering::Relaxed),
        )
    }

    /// Stores `bytes` as a [`Blob`] unless this trace already has it, and returns its hash.
    /// Blobs over 64 KiB are stored uncompressed in a block of their own.
    /// The blob is written before this returns, so it precedes, in file order, every record
    /// recorded afterwards that refers to it.
    ///
    /// Returns `None` (and counts a dropped record) when the blob is larger than
    /// [`MAX_RECORD_BYTES`] allows or the recorder is closed.
    pub fn intern_blob(&self, bytes: &[u8]) -> Option<BlobHash> {
        self.handle.shared.core_unless_forked()?.intern_blob(bytes)
    }

    /// Whether contents whose xxh3 is `hash` are already stored in this trace as a blob, so
    /// that a record may name them without their bytes ([`Deferred::stored_blob`]). Never
    /// waits for the writer.
    pub fn blob_stored(&self, hash: u64) -> bool {
        read_lock(&self.handle.shared.stored_blobs).contains(&hash)
    }

    /// Captures `bytes` for a record: inline when small, else as a blob, else
    /// [`Payload::Omitted`].
    pub fn payload(&self, bytes: &[u8]) -> Payload {
        let shared = &self.handle.shared;
        // Small payloads take no lock.
        if bytes.len() <= shared.inline_payload_bytes {
            return Payload::Inline(bytes.to_vec());
        }
        if let Some(mut core) = shared.try_core() {
            return core.payload(bytes);
        }
        // The writer (or another thread) holds the trace file: on a slow disk, for as long
        // as a block takes to write. This thread waits for it, and the wait is recorded as
        // one on the recorder, as a full ring's hand-over is: a program's host write that
        // took seconds is never left unexplained.
        let start_ns = shared.now_ns();
        let Some(mut core) = shared.core_unless_forked() else {
            return Payload::Omitted {
                len_bytes: bytes.len() as u64,
            };
        };
        let payload = core.payload(bytes);
        drop(core);
        let end_ns = shared.now_ns();
        if end_ns.saturating_sub(start_ns) >= PAYLOAD_WAIT_RECORDED_NS {
            self.record_on_thread(|thread| {
                Record::RecorderWait(RecorderWait {
                    thread,
                    thread_name: std::thread::current().name().unwrap_or("").to_owned(),
                    start_ns,
                    end_ns,
                    runtime: None,
                    submission: None,
                    region: None,
                })
            });
        }
        payload
    }

    /// Hands `job` to the writer thread, which runs it soon (it is woken now) and writes the
    /// blobs and records the job produces at this point of the calling thread's order, as
    /// if they had been recorded here. For work too slow for the recording thread, such as
    /// hashing and storing buffer contents: the caller must keep whatever the job reads
    /// unchanged until the job has run or been dropped (drop a guard inside the job).
    ///
    /// When the thread's buffer is full, the job runs on the calling thread instead; after
    /// close it is dropped without running.
    pub fn record_deferred(&self, job: impl FnOnce(&mut Deferred<'_>) + Send + 'static) {
        self.record_deferred_of(crate::DeferredKind::Other, job);
    }

    /// [`Recorder::record_deferred`] of a job that records `kind`: should a fatal signal end
    /// the process before the job ran, the trace says that it lacks a record of that kind, at
    /// the job's place ([`crate::schema::RecordsLost`], `writer::fatal`).
    pub fn record_deferred_of(
        &self,
        kind: crate::DeferredKind,
        job: impl FnOnce(&mut Deferred<'_>) + Send + 'static,
    ) {
        self.queue_deferred(kind, None, Box::new(job));
    }

    /// [`Recorder::record_deferred_of`] of a job that waits for other work (a hash on another
    /// thread): the writer runs it once `ready` returns true, holding this thread's later
    /// records back meanwhile (their order kept), rather than waiting inside the job with its
    /// lock held, which the thread doing that work may need. The writer runs it whether
    /// ready or not after [`RecorderOptions::hold_limit`], at a flush, the periodic flush and
    /// close, and on the rare paths that write this thread's records past its ring (a record
    /// too large for it, a job queued while it is full): the job must then get what it waits
    /// for itself (start the work it waits for, then wait). A thread's records held back are
    /// bounded by about twice its ring's capacity, past which the job runs too. Call
    /// [`Recorder::wake_writer`] when the job becomes ready, so that it is not left to the
    /// next wake. `ready` runs on the writer under its lock: it must be cheap and never block
    /// (one that panics counts as ready).
    pub fn record_deferred_when(
        &self,
        kind: crate::DeferredKind,
        ready: impl Fn() -> bool + Send + 'static,
        job: impl FnOnce(&mut Deferred<'_>) + Send + 'static,
    ) {
        self.queue_deferred(kind, Some(Box::new(ready)), Box::new(job));
    }

    /// Wakes the writer thread to drain the rings (a job of
    /// [`Recorder::record_deferred_when`] became ready). Costs one non-blocking channel send.
    pub fn wake_writer(&self) {
        self.handle.shared.wake();
    }

    fn queue_deferred(
        &self,
        kind: crate::DeferredKind,
        ready: Option<Box<dyn Fn() -> bool + Send>>,
        job: DeferredJob,
    ) {
        let shared = &self.handle.shared;
        if shared.forked() {
            // No writer thread in a forked child: a job queued in this thread's ring would
            // never run nor drop, and what it holds (a runtime's capture fence) would keep a
            // writer of the buffer waiting for ever. Dropped now, as after close, before the
            // lock, which the parent's writer may have held at the fork.
            drop((ready, job));
            return;
        }
        let address = Box::into_raw(Box::new(DeferredWork { ready, job })) as usize;
        let outcome = LOCAL
            .try_with(|local| match local.try_borrow_mut() {
                Ok(mut local) => {
                    local.record_deferred(shared.id, &|| Some(shared.clone()), address, kind)
                }
                Err(_) => Deferral::NotTaken,
            })
            .unwrap_or(Deferral::NotTaken);
        if let Deferral::NotTaken = outcome {
            // SAFETY: the job's entry was not committed to any ring: it is still ours.
            let job = unsafe { take_job(address) };
            let mut core = shared.core();
            if !core.closed {
                core.drain_rings(false);
                core.run_job(job.job);
            }
        }
    }

    /// Writes everything recorded so far (by any thread) to the sink and flushes it.
    ///
    /// # Errors
    ///
    /// [`WriteError::Closed`] after close; [`WriteError::Io`] after a write error.
    pub fn flush(&self) -> Result<(), WriteError> {
        if self.handle.shared.forked() {
            // No writer thread in a forked child: its answer would never come.
            return Err(WriteError::Closed);
        }
        let (ack, done) = crossbeam_channel::bounded(1);
        self.handle
            .shared
            .control
            .send(Control::Flush(ack))
            .map_err(|_| WriteError::Closed)?;
        done.recv().map_err(|_| WriteError::Closed)?
    }

    /// Whether a write to the trace failed (a full disk, a file size limit): every later
    /// block is dropped, and [`Recorder::close`] returns the error. One relaxed load: a
    /// program can poll it to stop work whose trace is lost.
    pub fn write_failed(&self) -> bool {
        self.handle.shared.write_failed.load(Ordering::Relaxed)
    }

    /// Records dropped so far (full buffers, oversized records, write errors).
    pub fn dropped_records(&self) -> u64 {
        let shared = &self.handle.shared;
        shared.core().dropped_total(shared)
    }

    /// Ends the session: drains every thread's buffer, writes [`SessionEnd`], the footer
    /// and trailer, fsyncs, and uninstalls the recorder if it is the global one. Later calls
    /// (from any clone) return the same result; later records are ignored.
    ///
    /// # Errors
    ///
    /// [`WriteError::Io`] when a write failed at any point of the session;
    /// [`WriteError::WriterPanicked`].
    pub fn close(&self) -> Result<CloseSummary, WriteError> {
        self.handle.shared.close()
    }
}

/// Work for the writer thread (see [`Recorder::record_deferred`]).
type DeferredJob = Box<dyn FnOnce(&mut Deferred<'_>) + Send>;

/// The default of [`RecorderOptions::hold_limit`]: how long the writer holds a job not
/// ready ([`Recorder::record_deferred_when`]), and its thread's later records, before it
/// runs it anyway. Its records are then in the next block as any others, within reach of a
/// fatal-signal flush and of the next flush: held until the 100 ms tick, a host write's
/// record was lost to a SIGTERM 20 ms later (a break-it pass).
/// Long enough for what a job waits for to finish in the usual case (a frame's upload and
/// hash, well under a millisecond).
pub const HOLD_LIMIT: Duration = Duration::from_millis(2);

/// A deferred job and, where it waits for other work, whether it is ready
/// ([`Recorder::record_deferred_when`]); a ring entry holds its address.
struct DeferredWork {
    ready: Option<Box<dyn Fn() -> bool + Send>>,
    job: DeferredJob,
}

/// Whether the work at `address`, in a ring entry not yet transcoded for the last time, is
/// ready to run ([`Recorder::record_deferred_when`]).
fn ready(address: usize) -> bool {
    // SAFETY: the address came from `Box::into_raw` of a `Box<DeferredWork>` in
    // `Recorder::queue_deferred`, taken back (`take_job`) only once its entry is run.
    let work = unsafe { &*(address as *const DeferredWork) };
    // A caller's `ready` that panics would unwind the writer thread (or a recording thread
    // handing its ring over) under the core lock, with the thread's held entries taken out
    // of its consumer: every record after it lost, the trace left without its end. Taken
    // for ready instead: the job runs (and gets what it waits for itself, as at a flush).
    work.ready.as_ref().is_none_or(|ready| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(ready)).unwrap_or(true)
    })
}

/// Takes back ownership of the work passed through a ring entry.
///
/// # Safety
///
/// `address` must come from `Box::into_raw` of a `Box<DeferredWork>` not taken back yet.
unsafe fn take_job(address: usize) -> DeferredWork {
    // SAFETY: as the caller promises.
    *unsafe { Box::from_raw(address as *mut DeferredWork) }
}

/// What a deferred job records through: blobs and records land where the job was queued.
pub struct Deferred<'a> {
    core: &'a mut Core,
}

impl Deferred<'_> {
    /// As [`Recorder::payload`]: inline when small, else a blob written now, before any
    /// record this job appends afterwards.
    pub fn payload(&mut self, bytes: &[u8]) -> Payload {
        self.core.payload(bytes)
    }

    /// [`Deferred::payload`] of `bytes` whose xxh3 (`xxh3_64`) another thread already took:
    /// contents already stored are not read again, new ones are read once, to be written.
    /// `xxh3` must be the hash of `bytes` (checked in debug builds): the blob is named by it.
    pub fn payload_hashed(&mut self, bytes: &[u8], xxh3: u64) -> Payload {
        debug_assert_eq!(
            xxh3,
            xxh3_64(bytes),
            "a blob is named by the xxh3 of its bytes"
        );
        self.core.payload_with(bytes, Some(xxh3))
    }

    /// The payload of `len_bytes` bytes of contents that [`Recorder::blob_stored`] found
    /// stored under `hash`: a blob, named without its bytes.
    pub fn stored_blob(&self, hash: u64, len_bytes: u64) -> Payload {
        debug_assert!(
            read_lock(&self.core.blobs).contains(&hash),
            "blob {hash:#x} is not stored"
        );
        Payload::Blob {
            hash: BlobHash(hash),
            len_bytes,
        }
    }

    /// Appends `record`; a record that does not encode is counted as dropped.
    pub fn record(&mut self, record: &Record) {
        if self.core.append_record(record).is_err() {
            self.core.dropped[record.kind_index()] += 1;
        }
    }
}

/// What happened to a deferred job on the recording thread.
enum Deferral {
    /// In a ring, or already run.
    Queued,
    /// Neither: the caller still owns it.
    NotTaken,
}

/// What happened to one record on the recording thread.
enum Outcome {
    Recorded,
    /// Dropped and already counted in the thread's ring.
    DroppedCounted,
    /// Dropped; not yet counted. The record's kind index.
    Dropped(usize),
    /// The thread's state is unusable (being destroyed, or borrowed by a reentrant call).
    NoLocal,
    Closed,
}

/// Per-thread recording state: one ring per recorder this thread has recorded into.
struct Local {
    entries: Vec<Entry>,
    scratch: Vec<u8>,
}

struct Entry {
    recorder: u64,
    shared: Arc<Shared>,
    producer: Producer,
    /// This thread's index in the session (see [`RecorderWait::thread`]).
    thread: u32,
    /// After a full-ring timeout, drop instead of waiting until this instant.
    no_wait_until: Option<Instant>,
    /// The annotation names this thread used, and their ids in the session, with the id of
    /// `NAME (open at end)` once the thread opened a range of the name ([`open_range_with`]).
    names: HashMap<Box<str>, (AnnotationId, Option<AnnotationId>), NameHasher>,
    /// Whether this thread's [`ThreadName`] was recorded (before its first record that
    /// carries a thread index).
    named: bool,
}

/// FNV-1a for the per-thread cache of annotation names: short keys, no hostile input (the
/// application's own names), so a hash of a few instructions a byte beats SipHash's setup.
#[derive(Clone, Copy, Default)]
struct NameHasher;

impl std::hash::BuildHasher for NameHasher {
    type Hasher = Fnv;
    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = const {
        RefCell::new(Local {
            entries: Vec::new(),
            scratch: Vec::new(),
        })
    };
    /// This thread's index in the last [`THREAD_INDICES`] recorders it registered with, and
    /// whether its [`ThreadName`] was recorded there: `(recorder, thread, named)`, recorder 0
    /// for none. Without a destructor, so that it outlives `LOCAL`: a record carrying the
    /// thread's index made once `LOCAL` is gone (a submit or wait in another thread-local's
    /// destructor) or borrowed (a reentrant call) names the thread by it, not by `u32::MAX`
    /// ([`record_on_thread_with`]).
    static INDICES: std::cell::Cell<[(u64, u32, bool); THREAD_INDICES]> = const {
        std::cell::Cell::new([(0, u32::MAX, false); THREAD_INDICES])
    };
}

/// The recorders whose thread index [`INDICES`] keeps.
const THREAD_INDICES: usize = 4;

/// This thread's index in recorder `id`, and whether it was named there, as [`INDICES`]
/// keeps it.
fn cached_index(id: u64) -> Option<(u32, bool)> {
    INDICES
        .try_with(|cell| {
            cell.get()
                .iter()
                .find(|&&(recorder, ..)| recorder == id)
                .map(|&(_, thread, named)| (thread, named))
        })
        .ok()
        .flatten()
}

/// Keeps this thread's index in recorder `id` in [`INDICES`] (replacing the oldest).
fn cache_index(id: u64, thread: u32, named: bool) {
    let _ = INDICES.try_with(|cell| {
        let mut indices = cell.get();
        let at = indices
            .iter()
            .position(|&(recorder, ..)| recorder == id)
            .unwrap_or_else(|| {
                indices.rotate_right(1);
                0
            });
        indices[at] = (id, thread, named);
        cell.set(indices);
    });
}

/// The calling thread's [`ThreadName`], as index `thread` in a session.
fn this_thread_name(thread: u32) -> Record {
    Record::ThreadName(ThreadName {
        thread,
        os_tid: u64::try_from(fatal::current_thread_id()).unwrap_or(0),
        name: std::thread::current().name().unwrap_or("").to_owned(),
    })
}

/// This thread's index in recorder `id` for a record made without its `LOCAL` state:
/// the one it registered with, else a new one, named first (a [`ThreadName`] recorded
/// through the recorder).
#[cold]
fn index_without_local(id: u64, lookup: &dyn Fn() -> Option<Arc<Shared>>) -> u32 {
    let (thread, named) = match cached_index(id) {
        Some(cached) => cached,
        None => match lookup() {
            Some(shared) => (shared.next_thread.fetch_add(1, Ordering::Relaxed), false),
            None => return u32::MAX,
        },
    };
    if !named {
        cache_index(id, thread, true);
        record_with(id, lookup, &this_thread_name(thread));
    }
    thread
}

/// Bytes of raw entries a [`RawBatch`] pushes at most at once: a region's timing (with a
/// device span), one digest and its outcome (127 bytes). At most 128, so that the copy into
/// the ring stays a few inlined moves (a larger fixed copy becomes a `memcpy` call).
const RAW_BATCH_BYTES: usize = 128;

/// Records made one after another on one thread (a region's timing, the digests of what it
/// wrote and its outcome), gathered as raw entries and pushed into the thread's buffer at
/// once when the batch drops (or fills): one hand-off instead of one per record, the same
/// records in the same order as if each had been recorded on its own. Records that are not
/// staged raw are recorded in order too, after what was gathered before them.
pub struct RawBatch<'r> {
    recorder: &'r Recorder,
    len: usize,
    /// Gathered entries, then room to encode one more before knowing whether it fits.
    entries: [u8; RAW_BATCH_BYTES + MAX_RAW_ENTRY],
}

impl RawBatch<'_> {
    /// Records `record` after the records before it.
    #[inline(always)]
    pub fn record_raw(&mut self, record: RawRecord<'_>) {
        let at = self.len;
        let out = self.entries[at..]
            .first_chunk_mut::<MAX_RAW_ENTRY>()
            .expect("room for a raw entry");
        match record.encode(out) {
            Some(len) if at + len <= RAW_BATCH_BYTES => self.len += len,
            Some(len) => {
                // Past what one push takes: push the others, then it leads the next.
                self.push();
                self.entries.copy_within(at..at + len, 0);
                self.len = len;
            }
            None => {
                self.push();
                self.recorder.record(&record.to_record());
            }
        }
    }

    /// Records `record` (of any kind) after the records before it.
    pub fn record(&mut self, record: &Record) {
        self.push();
        self.recorder.record(record);
    }

    /// Hands what was gathered to the thread's buffer now.
    #[inline]
    pub fn push(&mut self) {
        if self.len == 0 {
            return;
        }
        let shared = &self.recorder.handle.shared;
        let entries = self
            .entries
            .first_chunk::<RAW_BATCH_BYTES>()
            .expect("a batch");
        if !push_raw(shared.id, entries, self.len) {
            push_entries_slow(shared, &entries[..self.len]);
        }
        self.len = 0;
    }
}

impl Drop for RawBatch<'_> {
    #[inline]
    fn drop(&mut self) {
        self.push();
    }
}

/// Records the raw entries `entries` one by one as [`Record`]s (the paths that need more
/// than a push: see [`push_raw`]).
#[cold]
#[inline(never)]
fn push_entries_slow(shared: &Arc<Shared>, entries: &[u8]) {
    let mut at = 0;
    while let Some((len, _)) = staging::entry_bounds(&entries[at..]) {
        let record = staging::decode_raw(&entries[at..at + len]).expect("a raw entry");
        record_with(shared.id, &|| Some(shared.clone()), &record);
        at += len;
    }
    debug_assert_eq!(at, entries.len());
}

/// The common case of [`Recorder::record`]: the raw entries `entry[..len]` pushed into
/// this thread's ring of recorder `id`. Returns false, having pushed nothing, whenever
/// anything else is needed (no ring yet, a full or closed ring, entries too large for a tiny
/// ring, a reentrant call): [`record_with`] then records them.
#[inline]
fn push_raw<const N: usize>(id: u64, entry: &[u8; N], len: usize) -> bool {
    push_raw_with(id, len, |_| Some(entry))
}

/// [`push_raw`] of one raw entry whose thread index (the `u32` after its kind byte: a
/// `HostSpan`'s, an `AnnotationRange`'s) is this thread's, written into `entry` here. Also
/// false on the thread's first such record, which [`record_on_thread_with`] names first.
#[inline]
fn push_raw_on_thread<const N: usize>(id: u64, entry: &mut [u8; N], len: usize) -> bool {
    push_raw_with(id, len, |ring| {
        if !ring.named {
            return None;
        }
        entry[1..5].copy_from_slice(&ring.thread.to_le_bytes());
        Some(&*entry)
    })
}

#[inline(always)]
fn push_raw_with<'e, const N: usize>(
    id: u64,
    len: usize,
    entry: impl FnOnce(&Entry) -> Option<&'e [u8; N]>,
) -> bool {
    LOCAL
        .try_with(|local| {
            let Ok(mut local) = local.try_borrow_mut() else {
                return false;
            };
            let Some(ring) = local.entries.iter_mut().find(|e| e.recorder == id) else {
                return false;
            };
            if len > ring.producer.capacity() / 4 {
                return false;
            }
            let Some(entry) = entry(ring) else {
                return false;
            };
            match ring.producer.push_fixed(entry, len) {
                Push::Done => true,
                Push::DoneWake => {
                    ring.shared.wake();
                    true
                }
                Push::Full | Push::Closed => false,
            }
        })
        .unwrap_or(false)
}

/// Records `record` into recorder `id`; `lookup` finds it on this thread's first record.
#[inline(never)]
pub(crate) fn record_with(id: u64, lookup: &dyn Fn() -> Option<Arc<Shared>>, record: &Record) {
    let outcome = LOCAL
        .try_with(|local| match local.try_borrow_mut() {
            Ok(mut local) => local.record(id, lookup, record),
            Err(_) => Outcome::NoLocal,
        })
        .unwrap_or(Outcome::NoLocal);
    match outcome {
        Outcome::Dropped(kind) => {
            if let Some(shared) = lookup() {
                shared.count_dropped(kind);
            }
        }
        Outcome::NoLocal => {
            if let Some(shared) = lookup() {
                let outcome = match shared.mode {
                    TraceMode::Lossless => shared.record_locked(record),
                    TraceMode::Lossy => Outcome::Dropped(record.kind_index()),
                };
                if let Outcome::Dropped(kind) = outcome {
                    shared.count_dropped(kind);
                }
            }
        }
        Outcome::Recorded | Outcome::DroppedCounted | Outcome::Closed => {}
    }
}

/// Records the record `make` builds for this thread's index into recorder `id` (see
/// [`Recorder::record_on_thread`]).
#[inline]
pub(crate) fn record_on_thread_with(
    id: u64,
    lookup: &dyn Fn() -> Option<Arc<Shared>>,
    make: impl FnOnce(u32) -> Record,
) {
    let mut make = Some(make);
    let outcome = LOCAL
        .try_with(|local| match local.try_borrow_mut() {
            Ok(mut local) => match local.entry_index(id, lookup) {
                Ok(index) => {
                    if !local.entries[index].named {
                        local.name_thread(index);
                    }
                    let thread = local.entries[index].thread;
                    let record = (make.take().expect("made once"))(thread);
                    local.push(index, &record)
                }
                Err(Unregistered::Closed) => Outcome::Closed,
                // Through the recorder, with `make` still untaken.
                Err(Unregistered::NoMemory) => Outcome::NoLocal,
            },
            Err(_) => Outcome::NoLocal,
        })
        .unwrap_or(Outcome::NoLocal);
    match outcome {
        Outcome::NoLocal => {
            if let Some(make) = make {
                record_with(id, lookup, &make(index_without_local(id, lookup)));
            }
        }
        Outcome::Dropped(kind) => {
            if let Some(shared) = lookup() {
                shared.count_dropped(kind);
            }
        }
        Outcome::Recorded | Outcome::DroppedCounted | Outcome::Closed => {}
    }
}

/// The id of annotation name `text` in recorder `id` (see [`Recorder::annotation_name`]).
#[inline]
pub(crate) fn annotation_name_with(
    id: u64,
    lookup: &dyn Fn() -> Option<Arc<Shared>>,
    text: &str,
) -> Option<AnnotationId> {
    let cached = LOCAL
        .try_with(|local| {
            let mut local = local.try_borrow_mut().ok()?;
            let index = local.entry_index(id, lookup).ok()?;
            let entry = &mut local.entries[index];
            if let Some(&(name, _)) = entry.names.get(text) {
                return Some(Some(name));
            }
            let name = entry.shared.intern_annotation_name(text);
            if let Some(name) = name {
                entry.names.insert(text.into(), (name, None));
            }
            Some(name)
        })
        .ok()
        .flatten();
    match cached {
        Some(name) => name,
        None => lookup()?.intern_annotation_name(text),
    }
}

/// An annotation range open on the calling thread ([`open_range_with`]): recorded when
/// closed ([`close_range_with`]), or, still open at a fatal signal or when its recorder
/// closes, recorded by the recorder to that moment as `NAME (open at end)` (what Nsight
/// Systems shows of an NVTX range open when its capture ends: the range was not lost).
#[derive(Clone, Copy, Debug)]
pub struct OpenRange {
    recorder: u64,
    name: AnnotationId,
    start_ns: u64,
    /// The thread's index and the range's nesting level in its ring's table of open
    /// ranges, `None` when opened without the thread's state (untracked).
    slot: Option<(u32, u32)>,
}

impl OpenRange {
    /// The id of the recorder the range was opened in.
    pub(crate) fn recorder(&self) -> u64 {
        self.recorder
    }
}

/// Opens a range named `text` on the calling thread in recorder `id`: the name's id (looked
/// up first: not part of the range), then the start on the session clock, tracked in the
/// thread's ring. Where the thread's state is gone (at thread exit) the range is opened
/// through the recorder, untracked (as [`record_on_thread_with`] records). `None` when the
/// recorder is closed.
pub(crate) fn open_range_with(
    id: u64,
    lookup: &dyn Fn() -> Option<Arc<Shared>>,
    text: &str,
) -> Option<OpenRange> {
    let here = LOCAL.try_with(|local| {
        let mut local = local.try_borrow_mut().ok()?;
        open_range_on(&mut local, id, lookup, text)
    });
    match here {
        Ok(Some(open)) => open,
        _ => {
            let shared = lookup()?;
            let name = shared.intern_annotation_name(text)?;
            Some(OpenRange {
                recorder: id,
                name,
                start_ns: shared.now_ns(),
                slot: None,
            })
        }
    }
}

/// [`open_range_with`] through this thread's state: `None` where the thread has no ring
/// (there was no memory for one), so that the range is opened through the recorder.
fn open_range_on(
    local: &mut Local,
    id: u64,
    lookup: &dyn Fn() -> Option<Arc<Shared>>,
    text: &str,
) -> Option<Option<OpenRange>> {
    let index = match local.entry_index(id, lookup) {
        Ok(index) => index,
        Err(Unregistered::Closed) => return Some(None),
        Err(Unregistered::NoMemory) => return None,
    };
    if !local.entries[index].named {
        local.name_thread(index);
    }
    let entry = &mut local.entries[index];
    let (name, at_end) = match entry.names.get(text) {
        Some(&(name, Some(at_end))) => (name, at_end),
        cached => {
            let name = match cached {
                Some(&(name, _)) => name,
                None => entry.shared.intern_annotation_name(text)?,
            };
            let at_end = entry
                .shared
                .intern_annotation_name(&format!("{text} (open at end)"))?;
            entry.names.insert(text.into(), (name, Some(at_end)));
            (name, at_end)
        }
    };
    let start_ns = entry.shared.now_ns();
    let slot = Some((entry.thread, entry.producer.open_range(at_end.0, start_ns)));
    Some(Some(OpenRange {
        recorder: id,
        name,
        start_ns,
        slot,
    }))
}

/// Closes `range` now: records its [`AnnotationRange`] on the calling thread and stops
/// tracking it. Nothing when its recorder closed (it recorded the range as open at its
/// end). Where the thread's state is gone (at thread exit), or holds no ring of the
/// recorder, the range is recorded through the recorder, with the thread's index, as
/// [`record_on_thread_with`] does.
pub(crate) fn close_range_with(range: &OpenRange, lookup: &dyn Fn() -> Option<Arc<Shared>>) {
    let record = |thread, end_ns| {
        Record::AnnotationRange(AnnotationRange {
            thread,
            name: range.name,
            start_ns: range.start_ns,
            end_ns,
        })
    };
    let done = LOCAL.try_with(|local| {
        let Ok(mut local) = local.try_borrow_mut() else {
            return false;
        };
        let Some(index) = local
            .entries
            .iter()
            .position(|e| e.recorder == range.recorder)
        else {
            return false;
        };
        let entry = &local.entries[index];
        let closed = record(entry.thread, entry.shared.now_ns());
        // Marked closing before its record is pushed: a fatal signal's flush that drains
        // the record does not also take the range for open.
        if let Some((_, level)) = range.slot {
            entry.producer.closing_range(level);
        }
        let outcome = local.push(index, &closed);
        let entry = &local.entries[index];
        if let Some((_, level)) = range.slot {
            entry.producer.close_range(level);
        }
        if let Outcome::Dropped(kind) = outcome {
            entry.shared.count_dropped(kind);
        }
        true
    });
    if done != Ok(true)
        && let Some(shared) = lookup()
    {
        // The thread's index all the same (its state gone, the range is no less its own).
        let thread = range.slot.map_or_else(
            || index_without_local(range.recorder, lookup),
            |(thread, _)| thread,
        );
        record_with(range.recorder, lookup, &record(thread, shared.now_ns()));
        if let Some((thread, level)) = range.slot {
            let core = shared.core();
            if let Some(consumer) = core.consumers.iter().find(|c| c.thread() == thread) {
                consumer.close_range(level);
            }
        }
    }
}

/// The session clock of recorder `id`, via this thread's entry; 0 if there is none.
pub(crate) fn now_ns_with(id: u64, lookup: &dyn Fn() -> Option<Arc<Shared>>) -> u64 {
    let cached = LOCAL
        .try_with(|local| {
            let local = local.try_borrow().ok()?;
            let entry = local.entries.iter().find(|e| e.recorder == id)?;
            Some(entry.shared.now_ns())
        })
        .ok()
        .flatten();
    cached.or_else(|| lookup().map(|s| s.now_ns())).unwrap_or(0)
}

/// Why a thread has no ring for a recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unregistered {
    /// The recorder is closed (or inherited by a forked child): nothing is recorded.
    Closed,
    /// There was no memory for the ring (`ulimit -v`): the thread records through the
    /// recorder's lock, as a thread whose state is gone does, rather than abort the program
    /// (a break-it pass: a traced program under `ulimit -v` died of "memory allocation of
    /// 1048576 bytes failed" where it ran untraced).
    NoMemory,
}

impl Local {
    #[inline]
    fn record(
        &mut self,
        id: u64,
        lookup: &dyn Fn() -> Option<Arc<Shared>>,
        record: &Record,
    ) -> Outcome {
        match self.entry_index(id, lookup) {
            Ok(index) => self.push(index, record),
            Err(Unregistered::Closed) => Outcome::Closed,
            Err(Unregistered::NoMemory) => Outcome::NoLocal,
        }
    }

    /// The index of this thread's entry for recorder `id`, registering the thread on its
    /// first record.
    #[inline]
    fn entry_index(
        &mut self,
        id: u64,
        lookup: &dyn Fn() -> Option<Arc<Shared>>,
    ) -> Result<usize, Unregistered> {
        match self.entries.iter().position(|e| e.recorder == id) {
            Some(index) => Ok(index),
            None => self.register(id, lookup),
        }
    }

    /// Records `record` into entry `index`'s ring.
    #[inline]
    fn push(&mut self, index: usize, record: &Record) -> Outcome {
        let entry = &mut self.entries[index];
        if self.scratch.is_empty() {
            self.scratch.resize(SCRATCH_BYTES, 0);
        }
        let range = match staging::encode_entry(record, &mut self.scratch) {
            Ok(range) if range.len() <= entry.producer.capacity() / 4 => range,
            _ => return entry.shared.record_large(&entry.producer, record),
        };
        let pushed = match self.scratch.first_chunk::<MAX_RAW_ENTRY>() {
            Some(fixed) if range.start == 0 && range.end <= MAX_RAW_ENTRY => {
                entry.producer.push_fixed(fixed, range.end)
            }
            _ => entry.producer.push(&self.scratch[range.clone()]),
        };
        match pushed {
            Push::Done => Outcome::Recorded,
            Push::DoneWake => {
                entry.shared.wake();
                Outcome::Recorded
            }
            Push::Closed => Outcome::Closed,
            Push::Full => match entry.shared.mode {
                TraceMode::Lossy => entry.push_when_full(&self.scratch[range], record),
                TraceMode::Lossless => {
                    let (outcome, wait) = entry.hand_over(&self.scratch[range], record);
                    if let Some(wait) = wait {
                        self.record_wait(index, &wait);
                    }
                    outcome
                }
            },
        }
    }

    /// Records a [`RecorderWait`] into entry `index`'s ring (just drained: it has room).
    #[cold]
    fn record_wait(&mut self, index: usize, wait: &Record) {
        let entry = &mut self.entries[index];
        let pushed = match staging::encode_entry(wait, &mut self.scratch) {
            Ok(range) => entry.producer.push(&self.scratch[range]),
            Err(_) => Push::Full,
        };
        if pushed == Push::Full
            && let Outcome::Dropped(kind) = entry.shared.record_large(&entry.producer, wait)
        {
            entry.shared.count_dropped(kind);
        }
    }

    /// Queues the deferred job at `address` in this thread's ring (see
    /// [`Recorder::record_deferred`]).
    fn record_deferred(
        &mut self,
        id: u64,
        lookup: &dyn Fn() -> Option<Arc<Shared>>,
        address: usize,
        kind: staging::DeferredKind,
    ) -> Deferral {
        let index = match self.entries.iter().position(|e| e.recorder == id) {
            Some(index) => index,
            None => match self.register(id, lookup) {
                Ok(index) => index,
                Err(_) => return Deferral::NotTaken,
            },
        };
        let entry = &mut self.entries[index];
        match entry.producer.push(&staging::deferred_entry(address, kind)) {
            Push::Done | Push::DoneWake => {
                entry.shared.wake();
                Deferral::Queued
            }
            Push::Closed => Deferral::NotTaken,
            Push::Full => {
                // Run it now, after what the ring already holds, keeping this thread's order.
                // SAFETY: the entry was not committed: the job is still ours.
                let job = unsafe { take_job(address) };
                let mut core = entry.shared.core();
                if !core.closed {
                    core.drain_ring_of(&entry.producer);
                    core.run_job(job.job);
                }
                Deferral::Queued
            }
        }
    }

    #[cold]
    fn register(
        &mut self,
        id: u64,
        lookup: &dyn Fn() -> Option<Arc<Shared>>,
    ) -> Result<usize, Unregistered> {
        self.entries.retain(|e| !e.producer.is_closed());
        let shared = lookup().ok_or(Unregistered::Closed)?;
        let producer = shared.register()?;
        // A thread that records gets a signal stack the fatal-signal flush fits on.
        fatal::signal_stack();
        let thread = shared.next_thread.fetch_add(1, Ordering::Relaxed);
        producer.set_thread(thread);
        cache_index(id, thread, false);
        self.entries.push(Entry {
            recorder: id,
            shared,
            producer,
            thread,
            no_wait_until: None,
            names: HashMap::default(),
            named: false,
        });
        Ok(self.entries.len() - 1)
    }

    /// Records the [`ThreadName`] of entry `index`'s thread, before its first record that
    /// carries a thread index.
    #[cold]
    fn name_thread(&mut self, index: usize) {
        let entry = &mut self.entries[index];
        entry.named = true;
        cache_index(entry.recorder, entry.thread, true);
        let name = this_thread_name(entry.thread);
        if let Outcome::Dropped(kind) = self.push(index, &name) {
            self.entries[index].shared.count_dropped(kind);
        }
    }
}

/// A host write's contents stored after waiting this long for the trace file (held by the
/// writer or another thread) are recorded as a [`RecorderWait`] of the writing thread:
/// 10 µs, far above an uncontended store's lock, far below a block's write.
const PAYLOAD_WAIT_RECORDED_NS: u64 = 10_000;

impl Entry {
    /// The ring is full, lossless mode: drain it into the writer's block on this thread (under
    /// the core lock), then push `frame`. Returns the outcome and the [`RecorderWait`] to
    /// record.
    #[cold]
    fn hand_over(&mut self, frame: &[u8], record: &Record) -> (Outcome, Option<Record>) {
        if self.shared.forked() {
            // Before the lock, which the parent's writer may have held at the fork.
            return (Outcome::Closed, None);
        }
        let start_ns = self.shared.now_ns();
        {
            let mut core = self.shared.core();
            if core.closed {
                return (Outcome::Closed, None);
            }
            // Every ring, not only this thread's: a starved writer thread otherwise leaves
            // the other threads' records (a worker's region outcomes) behind until its next
            // sweep, thousands of submissions later in the file than their submit, past
            // what a streaming reader waits for. Work the writer would do anyway. Patient:
            // this ring is emptied all the same, a job not ready held with what follows it.
            core.drain_rings(true);
            if core.pending.len() >= core.block_bytes {
                core.write_pending();
            }
        }
        let outcome = match self.producer.push(frame) {
            Push::Done | Push::DoneWake => Outcome::Recorded,
            Push::Closed => return (Outcome::Closed, None),
            // Cannot happen (the ring is empty and a frame is at most a quarter of it), but
            // never drop: write it directly.
            Push::Full => self.shared.record_large(&self.producer, record),
        };
        let (runtime, submission, region) = region_of(record);
        let wait = Record::RecorderWait(RecorderWait {
            thread: self.thread,
            thread_name: std::thread::current().name().unwrap_or("").to_owned(),
            start_ns,
            end_ns: self.shared.now_ns(),
            runtime,
            submission,
            region,
        });
        (outcome, Some(wait))
    }

    /// The ring is full, lossy mode: wake the writer and wait a bounded time for room.
    #[cold]
    fn push_when_full(&mut self, frame: &[u8], record: &Record) -> Outcome {
        self.shared.wake();
        let now = Instant::now();
        let may_wait = self.no_wait_until.is_none_or(|until| now >= until);
        let deadline = now + self.shared.full_buffer_wait;
        let mut spins = 0u32;
        loop {
            match self.producer.push(frame) {
                Push::Done | Push::DoneWake => {
                    self.no_wait_until = None;
                    return Outcome::Recorded;
                }
                Push::Closed => return Outcome::Closed,
                Push::Full => {}
            }
            if !may_wait || Instant::now() >= deadline {
                break;
            }
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        if may_wait {
            self.no_wait_until = Some(Instant::now() + self.shared.flush_interval);
        }
        self.producer.count_dropped(record.kind_index());
        Outcome::DroppedCounted
    }
}

/// The runtime, submission and region a record is about, where it names them.
fn region_of(
    record: &Record,
) -> (
    Option<RuntimeId>,
    Option<SubmissionIndex>,
    Option<RegionIndex>,
) {
    match record {
        Record::RegionTiming(t) => (Some(t.runtime), Some(t.submission), Some(t.region)),
        Record::OpTiming(t) => (
            Some(t.timing.runtime),
            Some(t.timing.submission),
            Some(t.timing.region),
        ),
        Record::RegionDone(r) => (Some(r.runtime), Some(r.submission), Some(r.region)),
        Record::CrossWait(r) => (Some(r.runtime), Some(r.submission), Some(r.region)),
        Record::SubmissionDone(r) => (Some(r.runtime), Some(r.submission), None),
        Record::OutputDigest(r) => (Some(r.runtime), Some(r.submission), None),
        Record::Submit(r) => (Some(r.runtime), Some(r.submission), None),
        other => (other.runtime(), None, None),
    }
}

/// A calibration as the session's record: ns relative to the session's zero, `base_ns`.
fn host_clock(base_ns: u64, c: crate::clock::Calibration) -> Record {
    Record::HostClock(HostClock {
        source: c.source,
        ticks: c.ticks,
        session_ns: c.clock_ns.saturating_sub(base_ns),
        monotonic_ns: c.monotonic_ns,
        error_ns: c.error_ns,
        next_session_ns: c.next.from_ns.saturating_sub(base_ns),
        ns_per_tick_q32: c.next.ns_per_tick_q32,
    })
}

/// The host name, or "" when unknown.
pub(crate) fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the pointer and length describe `buf`, which gethostname may write.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..len]).into_owned();
        }
    }
    std::env::var("HOSTNAME")
        .or_else(|_| std::env::var("COMPUTERNAME"))
        .unwrap_or_default()
}

/// Locks `mutex`, ignoring poisoning (the protected state stays consistent: every critical
/// section either completes or only loses records, which are counted).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// [`lock`]'s rule for reading a [`RwLock`].
fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// [`lock`]'s rule for writing a [`RwLock`].
fn write_lock<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{Trace, read_all};
    use crate::schema::testgen::{KINDS, Rng, record};
    use crate::schema::{
        BufferId, DeviceSpan, HostClock, HostClockSource, OutputDigest, Payload, PreparedId,
        RegionDone, RegionIndex, RegionStarted, RegionTiming, RuntimeId, Status, SubmissionDone,
        SubmissionIndex, Submit,
    };

    pub(super) fn timing(runtime: u32, submission: u64) -> Record {
        Record::RegionTiming(RegionTiming {
            runtime: RuntimeId(runtime),
            submission: SubmissionIndex(submission),
            region: RegionIndex(0),
            start_ns: submission * 1000,
            end_ns: submission * 1000 + 500,
            device: None,
        })
    }

    pub(super) fn memory_recorder(options: RecorderOptions) -> (Recorder, MemorySink) {
        let sink = MemorySink::new();
        (Recorder::with_sink(sink.clone(), options).unwrap(), sink)
    }

    pub(super) fn read(sink: &MemorySink) -> Trace {
        Trace::from_bytes(&sink.contents()).unwrap()
    }

    /// A deferred job recorded in a child forked without `exec` is dropped at once, with what
    /// it holds: queued in the thread's ring it never ran (the writer thread is the
    /// parent's), and a runtime's capture fence it held kept the child's next write to the
    /// buffer waiting for ever (a break-it pass).
    #[cfg(unix)]
    #[test]
    fn a_deferred_job_in_a_forked_child_is_dropped_at_once() {
        let (recorder, _sink) = memory_recorder(RecorderOptions::default());
        // This thread's ring exists before the fork, as a traced program's does.
        recorder.record(&timing(0, 1));
        recorder.flush().unwrap();
        let pid = crate::fork::child::spawn(|| {
            let held = Arc::new(());
            let in_job = held.clone();
            recorder.record_deferred(move |_| drop(in_job));
            Arc::strong_count(&held) == 1
        });
        assert!(
            crate::fork::child::held(pid),
            "the child's job was not dropped"
        );
        recorder.close().unwrap();
    }

    /// The records but the session clock's calibrations (written at start, at every flush,
    /// timed ones included, and at close).
    fn without_clocks(records: &[Record]) -> Vec<Record> {
        records
            .iter()
            .filter(|r| !matches!(r, Record::HostClock(_)))
            .cloned()
            .collect()
    }

    #[test]
    fn records_every_kind_and_closes_cleanly() {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        let mut rng = Rng(42);
        let expected: Vec<_> = (0..KINDS * 4).map(|k| record(&mut rng, k)).collect();
        for r in &expected {
            rec.record(r);
        }
        let summary = rec.close().unwrap();
        assert_eq!(summary.dropped_records, 0);
        let trace = read(&sink);
        assert!(trace.recovery.clean_close, "{:?}", trace.warnings);
        // Every kind, session starts too, is recorded by hand: the reader says the sessions.
        let sessions = |w: &crate::reader::Warning| {
            matches!(w.kind, crate::reader::WarningKind::Sessions { sessions: 5 })
        };
        assert!(trace.warnings.iter().all(sessions), "{:?}", trace.warnings);
        assert!(matches!(trace.records[0], Record::SessionStart(_)));
        let Some(Record::SessionEnd(end)) = trace.records.last() else {
            panic!("no session end")
        };
        assert_eq!(end.dropped_records, 0);
        assert_eq!(end.records, trace.records.len() as u64 - 1);
        let recorded = without_clocks(&trace.records);
        assert_eq!(
            without_clocks(&recorded[1..recorded.len() - 1]),
            without_clocks(&expected)
        );
        assert_eq!(summary.records, trace.records.len() as u64);
        assert_eq!(summary.bytes, sink.contents().len() as u64);
        let mapped = crate::MappedTrace::from_vec(sink.contents()).unwrap();
        assert_eq!(summary.blocks, mapped.blocks().len() as u64);
    }

    /// A host write's contents stored while another thread holds the trace file (the writer
    /// writing a block to a slow disk) wait for it, and the wait is a `RecorderWait` of the
    /// writing thread, spanning the time the file was held (it was silent: a program's
    /// writes took seconds on a slow disk, and its trace showed no wait). One that finds the
    /// file free records none.
    #[test]
    fn contents_stored_while_the_file_is_held_record_the_wait() {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        let big = vec![7u8; 64 << 10];
        assert!(matches!(rec.payload(&big), Payload::Blob { .. }));
        let other = vec![9u8; 64 << 10];
        let tid = AtomicU64::new(0);
        let (held_from, held_until) = std::thread::scope(|scope| {
            let core = rec.handle.shared.core();
            let held_from = rec.now_ns();
            let writer = std::thread::Builder::new()
                .name("host-writer".into())
                .spawn_scoped(scope, || {
                    tid.store(fatal::current_thread_id() as u64, Ordering::Release);
                    assert!(matches!(rec.payload(&other), Payload::Blob { .. }));
                })
                .unwrap();
            // Held until the writing thread sleeps on the lock (its state in /proc).
            let asleep = || {
                let tid = tid.load(Ordering::Acquire);
                tid != 0
                    && std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                        .ok()
                        .and_then(|stat| {
                            Some(stat.rsplit(')').next()?.trim_start().starts_with('S'))
                        })
                        .unwrap_or(false)
            };
            while !asleep() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let held_until = rec.now_ns();
            drop(core);
            writer.join().unwrap();
            (held_from, held_until)
        });
        rec.close().unwrap();
        let waits: Vec<RecorderWait> = read(&sink)
            .records
            .into_iter()
            .filter_map(|r| match r {
                Record::RecorderWait(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(waits.len(), 1, "{waits:?}");
        let wait = &waits[0];
        assert_eq!(wait.thread_name, "host-writer");
        assert!(
            wait.start_ns <= held_until && wait.end_ns >= held_until && wait.start_ns >= held_from,
            "{wait:?} while the file was held {held_from}..{held_until}"
        );
    }

    /// The records every submission makes, in the forms pushed raw by `Recorder::record`'s
    /// inlined path and those that are not (a failure, many producers, contents), mixed with
    /// random records of every kind, from one thread into two recorders (its second ring is
    /// found by a search) with rings small enough to fill, through `record`, `record_raw`
    /// and `RawBatch`: each trace holds its records in the order they were recorded,
    /// whichever path each took.
    #[test]
    fn raw_and_framed_records_keep_their_order_across_recorders_and_full_rings() {
        let options = || RecorderOptions {
            thread_buffer_bytes: 4096,
            ..RecorderOptions::default()
        };
        let (a, sink_a) = memory_recorder(options());
        let (b, sink_b) = memory_recorder(options());
        let mut rng = Rng(77);
        let mut expected = Vec::new();
        for i in 0..3_000u64 {
            let (runtime, submission, region) = (
                RuntimeId(i as u32 % 3),
                SubmissionIndex(i),
                RegionIndex(i as u32 % 4),
            );
            let status = if i % 7 == 0 {
                Status::Failed {
                    error: format!("failure {i}"),
                }
            } else {
                Status::Ok
            };
            expected.push(Record::Submit(Submit {
                runtime,
                prepared: PreparedId(i / 5),
                submission,
                slot: (i % 3) as u32,
                producers: (0..i % 4).map(|p| SubmissionIndex(i - p)).collect(),
                time_ns: i * 10,
            }));
            expected.push(Record::RegionStarted(RegionStarted {
                runtime,
                submission,
                region,
                time_ns: i * 10 + 1,
            }));
            expected.push(Record::RegionTiming(RegionTiming {
                runtime,
                submission,
                region,
                start_ns: i * 10 + 2,
                end_ns: i * 10 + 5,
                device: (i % 2 == 0).then_some(DeviceSpan {
                    start_ns: i * 10 + 3,
                    end_ns: i * 10 + 4,
                }),
            }));
            expected.push(Record::OutputDigest(OutputDigest {
                runtime,
                submission,
                buffer: BufferId(i % 5),
                start: 0,
                end: 256,
                xxh3: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                contents: if i % 11 == 0 {
                    Payload::Inline(vec![i as u8; 8])
                } else {
                    Payload::Omitted { len_bytes: 256 }
                },
            }));
            expected.push(Record::RegionDone(RegionDone {
                runtime,
                submission,
                region,
                status: status.clone(),
                time_ns: i * 10 + 5,
            }));
            expected.push(Record::SubmissionDone(SubmissionDone {
                runtime,
                submission,
                status,
                time_ns: i * 10 + 6,
            }));
            let other = record(&mut rng, (i / 13) % KINDS);
            let session = [
                "SessionStart",
                "SessionEnd",
                "RecorderWait",
                "RecordsLost",
                "HostClock",
            ];
            if i % 13 == 0 && !session.contains(&other.kind_name()) {
                expected.push(other);
            }
        }
        fn raw(r: &Record) -> Option<RawRecord<'_>> {
            Some(match r {
                Record::RegionStarted(x) => RawRecord::RegionStarted(x),
                Record::RegionTiming(x) => RawRecord::RegionTiming(x),
                Record::OpTiming(x) => RawRecord::OpTiming(x),
                Record::RegionDone(x) => RawRecord::RegionDone(x),
                Record::SubmissionDone(x) => RawRecord::SubmissionDone(x),
                Record::Submit(x) => RawRecord::Submit(x),
                Record::OutputDigest(x) => RawRecord::OutputDigest(x),
                _ => return None,
            })
        }
        // Every third record into `b`, the rest into `a`; by runs of 40, each record
        // through `record`, through `record_raw` where it can, or in a batch (one per run
        // and recorder, spanning several pushes).
        for (run, records) in expected.chunks(40).enumerate() {
            let (mut batch_a, mut batch_b) = (a.raw_batch(), b.raw_batch());
            for (i, r) in records.iter().enumerate() {
                let (rec, batch) = match i % 3 {
                    2 => (&b, &mut batch_b),
                    _ => (&a, &mut batch_a),
                };
                match (run % 3, raw(r)) {
                    (1, Some(x)) => rec.record_raw(x),
                    (2, Some(x)) => batch.record_raw(x),
                    (2, None) => batch.record(r),
                    _ => rec.record(r),
                }
            }
        }
        for (rec, sink, keep) in [(a, sink_a, 0..2), (b, sink_b, 2..3)] {
            assert_eq!(rec.close().unwrap().dropped_records, 0);
            let trace = read(&sink);
            let recorded: Vec<_> = without_clocks(&trace.records)
                .into_iter()
                .filter(|r| {
                    !matches!(
                        r,
                        Record::SessionStart(_) | Record::SessionEnd(_) | Record::RecorderWait(_)
                    )
                })
                .collect();
            let wanted: Vec<_> = expected
                .chunks(40)
                .flat_map(|run| run.iter().enumerate())
                .filter(|(i, _)| keep.contains(&(i % 3)))
                .map(|(_, r)| r.clone())
                .collect();
            assert_eq!(recorded.len(), wanted.len());
            assert!(recorded == wanted, "order or contents differ");
        }
    }

    #[test]
    fn records_on_a_thread_carry_its_index_after_one_thread_name() {
        use crate::schema::{AnnotationRange, HostSpan, HostSpanKind};
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        let span = |thread| {
            Record::HostSpan(HostSpan {
                thread,
                kind: HostSpanKind::Submit,
                runtime: RuntimeId(0),
                submission: SubmissionIndex(1),
                region: None,
                start_ns: 10,
                end_ns: 20,
            })
        };
        std::thread::scope(|s| {
            for name in ["first", "second"] {
                let rec = &rec;
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn_scoped(s, move || {
                        rec.record(&timing(0, 1));
                        if name == "first" {
                            rec.record_on_thread(span);
                            rec.record_on_thread(span);
                        } else {
                            // The raw form: the thread index it holds is replaced by the
                            // thread's, the first one (naming the thread) and the next alike.
                            for _ in 0..2 {
                                let Record::HostSpan(raw) = span(7) else {
                                    unreachable!()
                                };
                                rec.record_raw_on_thread(RawRecord::HostSpan(&raw));
                            }
                        }
                    })
                    .unwrap()
                    .join()
                    .unwrap();
            }
        });
        let decode = rec.annotation_name("decode").unwrap();
        assert_eq!(rec.annotation_name("decode"), Some(decode));
        let other = std::thread::scope(|s| {
            s.spawn(|| {
                let name = rec.annotation_name("decode");
                rec.record_on_thread(|thread| {
                    Record::AnnotationRange(AnnotationRange {
                        thread,
                        name: name.unwrap(),
                        start_ns: 1,
                        end_ns: 2,
                    })
                });
                (name, rec.annotation_name("upload"))
            })
            .join()
            .unwrap()
        });
        assert_eq!(other, (Some(decode), Some(AnnotationId(decode.0 + 1))));
        rec.close().unwrap();
        let trace = read(&sink);
        let kept: Vec<_> = trace
            .records
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    Record::ThreadName(_)
                        | Record::HostSpan(_)
                        | Record::AnnotationName(_)
                        | Record::AnnotationRange(_)
                )
            })
            .cloned()
            .collect();
        let thread_name = |thread, name: &str| {
            Record::ThreadName(ThreadName {
                thread,
                os_tid: 0,
                name: name.into(),
            })
        };
        let without_tids: Vec<_> = kept
            .into_iter()
            .map(|r| match r {
                Record::ThreadName(t) => {
                    assert!(cfg!(not(target_os = "linux")) || t.os_tid > 0);
                    Record::ThreadName(ThreadName { os_tid: 0, ..t })
                }
                r => r,
            })
            .collect();
        // Rings drain in any order: per thread, its name first, then its records in order;
        // thread indices in order of first record; each annotation name once, before use.
        let of_thread = |thread: u32| -> Vec<Record> {
            without_tids
                .iter()
                .filter(|r| match r {
                    Record::ThreadName(t) => t.thread == thread,
                    Record::HostSpan(h) => h.thread == thread,
                    Record::AnnotationRange(a) => a.thread == thread,
                    _ => false,
                })
                .cloned()
                .collect()
        };
        assert_eq!(of_thread(0), [thread_name(0, "first"), span(0), span(0)]);
        assert_eq!(of_thread(1), [thread_name(1, "second"), span(1), span(1)]);
        let range = Record::AnnotationRange(AnnotationRange {
            thread: 3,
            name: decode,
            start_ns: 1,
            end_ns: 2,
        });
        assert_eq!(of_thread(3), [thread_name(3, ""), range.clone()]);
        let names: Vec<_> = without_tids
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Record::AnnotationName(n) => Some((i, n.name, n.text.as_str())),
                _ => None,
            })
            .collect();
        let used_at = without_tids.iter().position(|r| *r == range).unwrap();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].0 < used_at);
        assert_eq!(
            (names[0].1, names[0].2, names[1].1, names[1].2),
            (decode, "decode", AnnotationId(decode.0 + 1), "upload")
        );
    }

    /// A thread that records a span from a thread-local's destructor, once the recorder's
    /// thread-local state is gone (destroyed first, as it was used after that thread-local
    /// was), names itself by its index, not `u32::MAX` (a break-it pass: a submit and a wait
    /// in a destructor read `thread=4294967295` in `dump`). One that records there first
    /// gets an index, and its name, then.
    #[test]
    fn a_thread_keeps_its_index_in_its_thread_locals_destructors() {
        use crate::schema::{HostSpan, HostSpanKind};
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        fn span(thread: u32) -> HostSpan {
            HostSpan {
                thread,
                kind: HostSpanKind::Wait,
                runtime: RuntimeId(0),
                submission: SubmissionIndex(1),
                region: None,
                start_ns: 10,
                end_ns: 20,
            }
        }
        struct AtExit(Option<(Recorder, bool)>);
        impl Drop for AtExit {
            fn drop(&mut self) {
                if let Some((rec, raw)) = self.0.take() {
                    let span = span(u32::MAX);
                    if raw {
                        rec.record_raw_on_thread(RawRecord::HostSpan(&span));
                    } else {
                        rec.record_on_thread(|thread| {
                            Record::HostSpan(HostSpan { thread, ..span })
                        });
                    }
                }
            }
        }
        thread_local! {
            static AT_EXIT: RefCell<AtExit> = const { RefCell::new(AtExit(None)) };
        }
        for (name, first, raw) in [("early", true, true), ("late", false, false)] {
            let rec = rec.clone();
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    // This thread-local first, the recorder's after it.
                    AT_EXIT.with(|a| a.borrow_mut().0 = Some((rec.clone(), raw)));
                    if first {
                        rec.record_raw_on_thread(RawRecord::HostSpan(&span(u32::MAX)));
                    }
                })
                .unwrap()
                .join()
                .unwrap();
        }
        rec.close().unwrap();
        let trace = read(&sink);
        let names: HashMap<u32, String> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::ThreadName(t) => Some((t.thread, t.name.clone())),
                _ => None,
            })
            .collect();
        let spans: Vec<_> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::HostSpan(h) => Some(names.get(&h.thread).map(String::as_str)),
                _ => None,
            })
            .collect();
        assert_eq!(
            spans,
            [Some("early"), Some("early"), Some("late")],
            "{names:?}"
        );
    }

    #[test]
    fn session_start_describes_the_process() {
        let options = RecorderOptions {
            backend: "sim".into(),
            device: "software device".into(),
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        rec.close().unwrap();
        let Record::SessionStart(start) = &read(&sink).records[0] else {
            panic!("no session start")
        };
        assert_eq!(start.pid, std::process::id());
        assert_eq!(start.backend, "sim");
        assert_eq!(
            start.format_version,
            (
                FormatVersion::CURRENT.major.0,
                FormatVersion::CURRENT.minor.0
            )
        );
        assert!(!start.args.is_empty());
        #[cfg(unix)]
        assert!(start.monotonic_base_ns > 0);
    }

    #[test]
    fn concurrent_threads_keep_their_order() {
        // Wait for room rather than drop, however starved of CPU the writer is.
        let options = RecorderOptions {
            full_buffer_wait: Duration::from_secs(60),
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        let threads = 8;
        let per_thread = 20_000;
        std::thread::scope(|s| {
            for t in 0..threads {
                let rec = rec.clone();
                s.spawn(move || {
                    for i in 0..per_thread {
                        rec.record(&timing(t, i));
                    }
                });
            }
        });
        assert_eq!(rec.close().unwrap().dropped_records, 0);
        let trace = read(&sink);
        let mut next = vec![0u64; threads as usize];
        for r in &trace.records {
            if let Record::RegionTiming(t) = r {
                let thread = t.runtime.0 as usize;
                assert_eq!(t.submission.0, next[thread], "thread {thread} out of order");
                next[thread] += 1;
            }
        }
        assert_eq!(next, vec![per_thread; threads as usize]);
    }

    #[test]
    fn tiny_rings_drop_with_a_count_but_keep_order() {
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            full_buffer_wait: Duration::ZERO,
            mode: TraceMode::Lossy,
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        let threads = 4u32;
        let per_thread = 50_000u64;
        std::thread::scope(|s| {
            for t in 0..threads {
                let rec = rec.clone();
                s.spawn(move || (0..per_thread).for_each(|i| rec.record(&timing(t, i))));
            }
        });
        let summary = rec.close().unwrap();
        let trace = read(&sink);
        let mut last = vec![None::<u64>; threads as usize];
        let mut received = 0u64;
        for r in &trace.records {
            if let Record::RegionTiming(t) = r {
                let slot = &mut last[t.runtime.0 as usize];
                assert!(slot.is_none_or(|prev| prev < t.submission.0));
                *slot = Some(t.submission.0);
                received += 1;
            }
        }
        let Some(Record::SessionEnd(end)) = trace.records.last() else {
            panic!("no session end")
        };
        assert_eq!(end.dropped_records, summary.dropped_records);
        assert_eq!(
            received + end.dropped_records,
            u64::from(threads) * per_thread
        );
        // The losses are in the trace by kind, and the reader reports them.
        let lost = trace.recovery.lost;
        assert_eq!(lost.total, end.dropped_records);
        assert!(lost.lossy);
        if lost.total > 0 {
            assert_eq!(lost.by_kind(), vec![("RegionTiming", lost.total)]);
            // The last count written holds them all: at the close, or at an earlier flush
            // when nothing was lost after it (on a loaded machine the threads' losses can all
            // come before the writer's last tick; the test asked for a count at the close).
            let Some(counted) = trace.records.iter().rev().find_map(|r| match r {
                Record::RecordsLost(counted) => Some(counted),
                _ => None,
            }) else {
                panic!("no RecordsLost in the trace")
            };
            assert_eq!(counted.total, lost.total);
        }
    }

    #[test]
    fn lossless_tiny_rings_keep_every_record_in_order() {
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            full_buffer_wait: Duration::ZERO,
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        let threads = 4u32;
        let per_thread = 50_000u64;
        std::thread::scope(|s| {
            for t in 0..threads {
                let rec = rec.clone();
                s.spawn(move || (0..per_thread).for_each(|i| rec.record(&timing(t, i))));
            }
        });
        let summary = rec.close().unwrap();
        assert_eq!(summary.dropped_records, 0);
        let trace = read(&sink);
        let mut next = vec![0u64; threads as usize];
        for r in &trace.records {
            match r {
                Record::RegionTiming(t) => {
                    let slot = &mut next[t.runtime.0 as usize];
                    assert_eq!(*slot, t.submission.0, "thread {} out of order", t.runtime);
                    *slot += 1;
                }
                Record::RecorderWait(w) => {
                    assert!(w.thread < threads && w.start_ns <= w.end_ns, "{w:?}");
                    assert_eq!(w.region, Some(RegionIndex(0)));
                }
                Record::RecordsLost(_) => panic!("a lossless session lost records"),
                _ => {}
            }
        }
        assert_eq!(next, vec![per_thread; threads as usize]);
        assert!(trace.recovery.lost.is_none());
        assert_eq!(trace.recovery.lost.to_string(), "no records lost");
    }

    /// A sink whose second write blocks until released: the writer thread is stuck.
    struct StuckSink {
        writes: u32,
        blocked: crossbeam_channel::Sender<()>,
        release: crossbeam_channel::Receiver<()>,
        written: MemorySink,
    }

    impl Sink for StuckSink {
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.written.write_all(bytes)?;
            self.writes += 1;
            if self.writes == 2 {
                let _ = self.blocked.send(());
                let _ = self.release.recv();
            }
            Ok(())
        }
    }

    #[test]
    fn lossy_mode_drops_behind_a_stuck_writer_and_records_the_losses_by_kind() {
        let (blocked, on_blocked) = crossbeam_channel::bounded(1);
        let (release, on_release) = crossbeam_channel::bounded(1);
        let sink = StuckSink {
            writes: 0,
            blocked,
            release: on_release,
            written: MemorySink::new(),
        };
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            flush_interval: Duration::from_millis(1),
            full_buffer_wait: Duration::ZERO,
            mode: TraceMode::Lossy,
            ..RecorderOptions::default()
        };
        let written = sink.written.clone();
        let rec = Recorder::with_sink(sink, options).unwrap();
        rec.record(&timing(0, 0));
        on_blocked.recv().unwrap();
        for i in 1..1000 {
            rec.record(&timing(0, i));
        }
        release.send(()).unwrap();
        // The ring holds about a hundred timings: the rest were dropped, and counted.
        let dropped = rec.dropped_records();
        assert!(dropped > 500, "{dropped}");
        let summary = rec.close().unwrap();
        assert_eq!(summary.dropped_records, dropped);
        // Session start and end, the RecordsLost (one, or the lossy mode's before the
        // losses too) and the clock's calibrations.
        let records = read(&written).records;
        let count = |kind: fn(&Record) -> bool| records.iter().filter(|r| kind(r)).count() as u64;
        let clocks = count(|r| matches!(r, Record::HostClock(_)));
        let lost = count(|r| matches!(r, Record::RecordsLost(_)));
        assert!(clocks >= 2);
        assert!((1..=2).contains(&lost), "{lost}");
        assert_eq!(summary.records + dropped, 1000 + 2 + lost + clocks);
    }

    #[test]
    fn a_default_ring_holds_three_quarters_of_a_mebibyte_behind_a_busy_writer() {
        // The writer is busy (stuck in a write, as while it compresses a block): a thread
        // must record on without blocking for far longer than the writer's wake takes. Lossy
        // with no wait, so a full ring shows as a drop here instead of a hand-over that would
        // wait on the stuck writer (the 256 KiB ring of before dropped two thirds of these).
        let (blocked, on_blocked) = crossbeam_channel::bounded(1);
        let (release, on_release) = crossbeam_channel::bounded(1);
        let sink = StuckSink {
            writes: 0,
            blocked,
            release: on_release,
            written: MemorySink::new(),
        };
        let options = RecorderOptions {
            flush_interval: Duration::from_millis(1),
            full_buffer_wait: Duration::ZERO,
            mode: TraceMode::Lossy,
            ..RecorderOptions::default()
        };
        let rec = Recorder::with_sink(sink, options).unwrap();
        rec.record(&timing(0, 0));
        on_blocked.recv().unwrap();
        let mut scratch = vec![0; SCRATCH_BYTES];
        let entry = staging::encode_entry(&timing(0, 1), &mut scratch)
            .unwrap()
            .len();
        let count = (768 << 10) / entry as u64;
        for i in 1..=count {
            rec.record(&timing(0, i));
        }
        release.send(()).unwrap();
        // Read after the release: the count is taken under the lock the writer holds.
        assert_eq!(rec.dropped_records(), 0, "{count} records of {entry} bytes");
        let summary = rec.close().unwrap();
        assert_eq!(summary.dropped_records, 0);
        assert!(summary.records > count, "{summary:?}");
    }

    /// Whether thread `tid` of this process sleeps (its state in /proc: `S`, as on a lock).
    fn thread_sleeps(tid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
            .ok()
            .and_then(|stat| Some(stat.rsplit(')').next()?.trim_start().starts_with('S')))
            .unwrap_or(false)
    }

    #[test]
    fn a_full_buffer_waits_for_a_stuck_writer_and_records_the_wait() {
        let (blocked, on_blocked) = crossbeam_channel::bounded(1);
        let (release, on_release) = crossbeam_channel::bounded(1);
        let sink = StuckSink {
            writes: 0,
            blocked,
            release: on_release,
            written: MemorySink::new(),
        };
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            flush_interval: Duration::from_millis(1),
            ..RecorderOptions::default()
        };
        let rec = Recorder::with_sink(sink, options).unwrap();
        rec.record(&timing(0, 0));
        // The writer took the first record and is stuck writing it, holding the core.
        on_blocked.recv().unwrap();
        // Released once this thread sleeps on the core, its ring full (its state in /proc):
        // a release after a fixed 20 ms could come before the ring filled on a loaded
        // machine, and then nothing need wait.
        let tid = fatal::current_thread_id();
        let releaser = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !thread_sleeps(tid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            release.send(()).unwrap();
        });
        let per_thread = 1000u64; // about ten rings' worth
        for i in 1..per_thread {
            rec.record(&timing(0, i));
        }
        releaser.join().unwrap();
        assert_eq!(rec.dropped_records(), 0);
        let summary = rec.close().unwrap();
        assert_eq!(summary.dropped_records, 0);
        // The records themselves went to a sink that kept nothing: check the counts.
        let waits = summary.records - per_thread - 2; // session start and end
        assert!(waits >= 1, "{summary:?}");
    }

    #[test]
    fn records_of_idle_threads_are_flushed_periodically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let rec = Recorder::create(&path, RecorderOptions::default()).unwrap();
        let (parked_tx, parked_rx) = crossbeam_channel::bounded::<()>(0);
        let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
        let idle = {
            let rec = rec.clone();
            std::thread::spawn(move || {
                rec.record(&timing(1, 7));
                parked_tx.send(()).unwrap();
                // Stay alive (holding the record in this thread's ring) until released.
                release_rx.recv().unwrap();
            })
        };
        parked_rx.recv().unwrap();
        rec.record(&timing(0, 3));
        let started = Instant::now();
        let found = loop {
            let trace = read_all(&path).unwrap();
            let timings = trace
                .records
                .iter()
                .filter(|r| matches!(r, Record::RegionTiming(_)))
                .count();
            if timings == 2 {
                assert!(!trace.recovery.clean_close);
                break true;
            }
            // Only turns a hang into a failure: the periodic flush comes within 100 ms on an
            // idle machine (a benchmark's figure, not this test's).
            if started.elapsed() > Duration::from_secs(120) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        release_tx.send(()).unwrap();
        idle.join().unwrap();
        assert!(found, "records of an idle thread never reached the file");
        rec.close().unwrap();
        assert!(read_all(&path).unwrap().recovery.clean_close);
    }

    #[test]
    fn flush_writes_everything_now() {
        let options = RecorderOptions {
            flush_interval: Duration::from_secs(3600),
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        rec.record(&timing(0, 1));
        rec.flush().unwrap();
        // Session start, its calibration, the timing, the flush's calibration.
        assert_eq!(read(&sink).records.len(), 4);
        rec.close().unwrap();
        assert_eq!(
            rec.flush().unwrap_err().to_string(),
            "the trace recorder is closed"
        );
    }

    #[test]
    fn large_records_keep_thread_order_and_blobs_are_stored_once() {
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        // Past the bulk size: written in a block of its own from where it lies.
        let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 256) as u8).collect();
        rec.record(&timing(0, 1));
        let payload = rec.payload(&big);
        assert_eq!(rec.payload(&big), payload);
        assert!(matches!(
            payload,
            Payload::Blob {
                len_bytes: 100_000,
                ..
            }
        ));
        assert_eq!(rec.payload(b"tiny"), Payload::Inline(b"tiny".to_vec()));
        // Larger than the scratch buffer and the ring: takes the synchronous path.
        let large = Record::Blob(Blob {
            hash: BlobHash(xxh3_64(&[1; 3000])),
            bytes: vec![1; 3000],
        });
        rec.record(&large);
        rec.record(&timing(0, 2));
        rec.close().unwrap();
        let trace = read(&sink);
        let records = without_clocks(&trace.records);
        let kinds: Vec<_> = records.iter().map(Record::kind_name).collect();
        assert_eq!(
            kinds,
            [
                "SessionStart",
                "Blob",
                "RegionTiming",
                "Blob",
                "RegionTiming",
                "SessionEnd"
            ]
        );
        assert_eq!(records[3], large);
        assert_eq!(
            records[1],
            Record::Blob(Blob {
                hash: BlobHash(xxh3_64(&big)),
                bytes: big,
            })
        );
    }

    /// A guard that counts how many deferred jobs were dropped (run or not).
    struct Released(Arc<AtomicU32>);
    impl Drop for Released {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The job's blob and record take the job's place in the thread's order, the writer runs
    /// it without a flush or close, and every job is dropped exactly once: run, run on the
    /// recording thread when the ring is full, or dropped unrun after close.
    #[test]
    fn deferred_jobs_record_in_place_and_release_their_guards() {
        let options = RecorderOptions {
            thread_buffer_bytes: 4096,
            full_buffer_wait: Duration::from_secs(30),
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        let released = Arc::new(AtomicU32::new(0));
        let contents = vec![3u8; 200_000];
        rec.record(&timing(0, 1));
        let guard = Released(released.clone());
        let bytes = contents.clone();
        rec.record_deferred(move |out| {
            let _guard = guard;
            let contents = out.payload(&bytes);
            out.record(&Record::HostWrite(crate::schema::HostWrite {
                runtime: RuntimeId(0),
                buffer: crate::schema::BufferId(9),
                offset: 0,
                len_bytes: bytes.len() as u64,
                xxh3: xxh3_64(&bytes),
                contents,
                time_ns: 5,
            }));
        });
        rec.record(&timing(0, 2));
        // The writer is woken at once: the job runs without a flush. (The deadline only
        // turns a hang into a failure; the job runs in microseconds.)
        let deadline = Instant::now() + Duration::from_secs(120);
        while released.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the writer never ran the job");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Fill the ring with timings, then queue more jobs: some run on this thread.
        for i in 0..2_000 {
            rec.record(&timing(0, 10 + i));
            let guard = Released(released.clone());
            rec.record_deferred(move |out| {
                let _guard = guard;
                out.record(&timing(1, i));
            });
        }
        rec.close().unwrap();
        assert_eq!(released.load(Ordering::SeqCst), 2_001);
        let guard = Released(released.clone());
        rec.record_deferred(move |_| drop(guard));
        assert_eq!(
            released.load(Ordering::SeqCst),
            2_002,
            "dropped after close"
        );

        let trace = read(&sink);
        let records = without_clocks(&trace.records);
        let kinds: Vec<_> = records.iter().take(5).map(Record::kind_name).collect();
        assert_eq!(
            kinds,
            [
                "SessionStart",
                "RegionTiming",
                "Blob",
                "HostWrite",
                "RegionTiming"
            ]
        );
        let Record::Blob(blob) = &records[2] else {
            unreachable!()
        };
        assert_eq!(blob.bytes, contents);
        // Every deferred timing follows the thread timing recorded just before it.
        let Some(Record::SessionEnd(end)) = trace.records.last() else {
            unreachable!("closed cleanly")
        };
        assert_eq!(end.dropped_records, 0);
        let mut last_thread = None;
        let mut deferred = 0;
        for record in &trace.records {
            if let Record::RegionTiming(t) = record {
                match t.runtime.0 {
                    0 => last_thread = Some(t.submission.0),
                    _ => {
                        deferred += 1;
                        assert_eq!(last_thread, Some(10 + t.submission.0), "out of order");
                    }
                }
            }
        }
        assert_eq!(deferred, 2_000);
    }

    #[test]
    fn runtime_ids_are_unique_and_close_is_idempotent() {
        let (rec, _sink) = memory_recorder(RecorderOptions::default());
        assert_eq!(rec.next_runtime_id(), RuntimeId(0));
        assert_eq!(rec.clone().next_runtime_id(), RuntimeId(1));
        let first = rec.close().unwrap();
        assert_eq!(rec.close().unwrap(), first);
        rec.record(&timing(0, 1)); // ignored, no panic
        assert!(rec.now_ns() > 0);
    }

    #[test]
    fn dropping_the_last_handle_closes() {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        rec.record(&timing(0, 1));
        drop(rec);
        assert!(read(&sink).recovery.clean_close);
    }

    /// Takes `writes` writes (the first holds the header and session start), then fails.
    pub(super) struct FailingSink {
        pub(super) writes: usize,
    }

    impl Sink for FailingSink {
        fn write_all(&mut self, _: &[u8]) -> io::Result<()> {
            if self.writes == 0 {
                return Err(io::Error::other("disk full"));
            }
            self.writes -= 1;
            Ok(())
        }
    }

    /// Keeps each `write_all` call's bytes apart.
    #[derive(Clone, Default)]
    struct WriteLog(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Sink for WriteLog {
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.0.lock().unwrap().push(bytes.to_vec());
            Ok(())
        }
    }

    #[test]
    fn the_header_and_the_session_start_go_out_in_one_write() {
        let log = WriteLog::default();
        let rec = Recorder::with_sink(log.clone(), RecorderOptions::default()).unwrap();
        let first = log
            .0
            .lock()
            .unwrap()
            .first()
            .cloned()
            .expect("nothing written");
        // A recorder killed right after that write leaves a readable session start (and the
        // session clock's first calibration).
        let trace = Trace::from_bytes(&first).unwrap();
        assert!(matches!(
            trace.records[..],
            [Record::SessionStart(_), Record::HostClock(_)]
        ));
        assert_eq!(log.0.lock().unwrap().len(), 1);
        rec.close().unwrap();
        let whole: Vec<u8> = log.0.lock().unwrap().concat();
        let trace = Trace::from_bytes(&whole).unwrap();
        assert!(trace.recovery.clean_close, "{:?}", trace.warnings);
    }

    #[test]
    fn write_errors_are_reported_and_counted() {
        let rec =
            Recorder::with_sink(FailingSink { writes: 1 }, RecorderOptions::default()).unwrap();
        assert!(!rec.write_failed());
        for i in 0..100 {
            rec.record(&timing(0, i));
        }
        rec.flush().unwrap_err();
        assert!(rec.write_failed());
        assert!(rec.dropped_records() >= 100);
        let err = rec.close().unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
    }

    /// A child forked while the parent's writer held the core lock never takes it (nothing in
    /// the child would release it): a new annotation name, a large record and a blob answer
    /// at once, as closed, where they waited for ever.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_never_waits_for_a_lock_its_parent_held_at_the_fork() {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        rec.record(&timing(0, 1));
        let held = rec.handle.shared.core();
        let pid = crate::fork::child::spawn(|| {
            let named = rec.annotation_name("a name new in the child");
            let blob = rec.intern_blob(&[7; 4096]);
            named.is_none() && blob.is_none()
        });
        drop(held);
        assert!(crate::fork::child::held(pid), "the child hung or recorded");
        rec.close().unwrap();
        assert!(read(&sink).recovery.clean_close);
    }

    /// A child forked without `exec` does not keep its parent's trace locked: once the
    /// parent lets go of the file (closes it, or is killed), no recorder holds it though the
    /// child lives on, so readers say the recording ended rather than "being recorded now".
    /// The child shared the open file description, and with it the `flock`, until it exited.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_does_not_keep_its_parents_trace_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let sink = FileSink::create(&path).unwrap();
        assert!(recorder_holds(&path).unwrap());
        let (mut ready, mut done) = ([0; 2], [0; 2]);
        // SAFETY: two fresh pipes, closed below.
        unsafe {
            assert_eq!(libc::pipe(ready.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(done.as_mut_ptr()), 0);
        }
        let pid = crate::fork::child::spawn(move || {
            let mut byte = [0u8; 1];
            // SAFETY: the pipes' ends, open in the child; one byte each way. The ends the
            // child does not use are closed first: a parent that dies then ends its read.
            unsafe {
                libc::close(ready[0]);
                libc::close(done[1]);
                libc::write(ready[1], b"r".as_ptr().cast(), 1) == 1
                    && libc::read(done[0], byte.as_mut_ptr().cast(), 1) == 1
            }
        });
        let mut byte = [0u8; 1];
        // SAFETY: as above; the child has run its fork handler once it wrote.
        assert_eq!(
            unsafe { libc::read(ready[0], byte.as_mut_ptr().cast(), 1) },
            1
        );
        drop(sink);
        let held = recorder_holds(&path).unwrap();
        // SAFETY: as above, then every end closed.
        unsafe {
            libc::write(done[1], b"d".as_ptr().cast(), 1);
            for fd in ready.into_iter().chain(done) {
                libc::close(fd);
            }
        }
        assert!(crate::fork::child::held(pid), "the child failed");
        assert!(!held, "the forked child kept the writer's lock");
    }

    /// Keeps what it is given, and fails the write of the trailer (after the final index).
    #[derive(Clone, Default)]
    struct NoTrailer(Arc<Mutex<Vec<u8>>>);

    impl Sink for NoTrailer {
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            if crate::format::decode_trailer(bytes).is_some() {
                return Err(io::Error::other("disk full"));
            }
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_names_what_it_was_writing() {
        // The first block: its records, and where.
        let rec =
            Recorder::with_sink(FailingSink { writes: 1 }, RecorderOptions::default()).unwrap();
        rec.record(&timing(0, 1));
        let err = rec.close().unwrap_err().to_string();
        assert!(
            err.contains(" records at byte ") && err.ends_with("disk full"),
            "{err}"
        );
        // Only the final index: the records are all there, and a reader recovers them.
        let sink = NoTrailer::default();
        let rec = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        for i in 0..10 {
            rec.record(&timing(0, i));
        }
        let err = rec.close().unwrap_err().to_string();
        assert!(
            err.contains("the final index at byte ")
                && err.contains("readers recover them without it"),
            "{err}"
        );
        let trace = Trace::from_bytes(&sink.0.lock().unwrap()).unwrap();
        assert!(!trace.recovery.clean_close);
        let timings = trace
            .records
            .iter()
            .filter(|r| matches!(r, Record::RegionTiming(_)))
            .count();
        assert_eq!(timings, 10);
    }

    #[test]
    fn uncompressed_traces_read_back() {
        let options = RecorderOptions {
            compression_level: None,
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        rec.record(&timing(0, 1));
        rec.close().unwrap();
        let trace = read(&sink);
        assert_eq!(without_clocks(&trace.records).len(), 3);
        assert_eq!(trace.header.compression, crate::format::Compression::None);
    }

    /// Bytes on disk per timing (with device span) for 100 000 timings, all of them written.
    fn bytes_per_timing(mut next: impl FnMut(u64) -> RegionTiming) -> f64 {
        let options = RecorderOptions {
            full_buffer_wait: Duration::from_secs(60),
            ..RecorderOptions::default()
        };
        let (rec, sink) = memory_recorder(options);
        let n = 100_000;
        for i in 0..n {
            rec.record(&Record::RegionTiming(next(i)));
        }
        let empty = {
            let (empty, sink) = memory_recorder(RecorderOptions::default());
            empty.close().unwrap();
            sink.contents().len()
        };
        assert_eq!(rec.close().unwrap().dropped_records, 0);
        (sink.contents().len() - empty) as f64 / n as f64
    }

    #[test]
    fn timing_records_are_small_on_disk() {
        // A pipeline: 4 regions per submission with their own durations (±3 %), 1-3 µs
        // gaps, device spans on an absolute device clock (globaltimer-like) that drifts.
        let mut rng = Rng(9);
        let mut host = 1_000_000u64;
        let nominal = [12_000u64, 180_000, 45_000, 8_000];
        let pipeline = bytes_per_timing(|i| {
            let r = (i % 4) as usize;
            let duration = nominal[r] + nominal[r] * (rng.next() % 60) / 1000;
            let skew = 1_700_000_000_000_000_000 + i / 50 + rng.next() % 500;
            let start_ns = host;
            host += duration + 1_000 + rng.next() % 2_000;
            RegionTiming {
                runtime: RuntimeId(0),
                submission: SubmissionIndex(i / 4),
                region: RegionIndex(r as u32),
                start_ns,
                end_ns: start_ns + duration,
                device: Some(crate::schema::DeviceSpan {
                    start_ns: start_ns + skew,
                    end_ns: start_ns + skew + duration - 300 - rng.next() % 400,
                }),
            }
        });
        assert!(pipeline <= 16.0, "{pipeline:.2} bytes per timing");
        // Pessimistic: uniformly random 2-200 µs durations and 0-5 µs gaps.
        let mut host = 1_000_000u64;
        let random = bytes_per_timing(|i| {
            let duration = 2_000 + rng.next() % 198_000;
            let skew = 1_700_000_000_000_000_000 + rng.next() % 2_000;
            let start_ns = host;
            host += duration + rng.next() % 5_000;
            RegionTiming {
                runtime: RuntimeId(0),
                submission: SubmissionIndex(i / 4),
                region: RegionIndex((i % 4) as u32),
                start_ns,
                end_ns: start_ns + duration,
                device: Some(crate::schema::DeviceSpan {
                    start_ns: start_ns + skew,
                    end_ns: start_ns + skew + duration - rng.next() % 1_000,
                }),
            }
        });
        assert!(random <= 16.0, "{random:.2} bytes per timing");
    }

    /// The session clock's calibrations are in the trace: one after the session start, one
    /// per flush, one at the close; each maps its own ticks to where its piece starts; the
    /// session times recorded between two calibrations lie between theirs (the clock never
    /// runs back across a calibration); and the reader states the clock.
    #[test]
    fn host_clock_calibrations_round_trip() {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        for flush in 0..5u64 {
            let start_ns = rec.now_ns();
            let end_ns = rec.now_ns();
            rec.record(&Record::RegionTiming(RegionTiming {
                runtime: RuntimeId(1),
                submission: SubmissionIndex(flush),
                region: RegionIndex(0),
                start_ns,
                end_ns,
                device: None,
            }));
            rec.flush().unwrap();
        }
        rec.close().unwrap();
        let trace = read(&sink);
        let clocks: Vec<_> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::HostClock(c) => Some(*c),
                _ => None,
            })
            .collect();
        assert!(matches!(trace.records[1], Record::HostClock(_)));
        // Start, one per flush (timed flushes may add more), close.
        assert!(clocks.len() >= 7, "{} calibrations", clocks.len());
        assert!(matches!(
            trace.records[trace.records.len() - 2],
            Record::HostClock(_)
        ));
        assert_eq!(
            clocks[0].session_ns, 0,
            "the session starts at its calibration"
        );
        let source = crate::clock::source();
        for c in &clocks {
            assert_eq!(c.source, source);
            assert_eq!(c.to_session_ns(c.ticks), c.next_session_ns);
            assert!(c.next_session_ns >= c.session_ns, "never stepped back");
            assert!(c.ns_per_tick_q32 > 0);
            if source == HostClockSource::Monotonic {
                // The fallback reads the monotonic clock itself: exact, no offset.
                assert_eq!(c.error_ns, 0);
                assert_eq!(c.offset_ns(start_of(&trace).monotonic_base_ns), 0);
            }
        }
        for pair in clocks.windows(2) {
            assert!(pair[1].ticks >= pair[0].ticks);
            assert!(pair[1].session_ns >= pair[0].next_session_ns, "ran back");
        }
        // Each timing lies between the calibrations before and after it in the file.
        let mut before: Option<HostClock> = None;
        let mut open: Vec<(u64, u64)> = Vec::new();
        for r in &trace.records {
            match r {
                Record::HostClock(c) => {
                    for (start, end) in open.drain(..) {
                        assert!(c.session_ns >= end, "{c:?} before {end}");
                        assert!(start <= end);
                    }
                    before = Some(*c);
                }
                Record::RegionTiming(t) => {
                    let before = before.expect("a calibration first");
                    assert!(before.next_session_ns <= t.start_ns, "{before:?} {t:?}");
                    open.push((t.start_ns, t.end_ns));
                }
                _ => {}
            }
        }
        assert!(open.is_empty(), "a timing after the last calibration");
        let stated = trace.recovery.clock;
        assert_eq!(stated.source, Some(source));
        assert_eq!(stated.calibrations, clocks.len() as u64);
        let base = start_of(&trace).monotonic_base_ns;
        let max_offset = clocks
            .iter()
            .map(|c| c.offset_ns(base).unsigned_abs())
            .max()
            .unwrap();
        assert_eq!(stated.max_offset_ns, max_offset);
        let said = stated.describe(FormatVersion::CURRENT).to_string();
        assert!(said.starts_with(source.name()), "{said}");
    }

    /// Records timings read on the session clock between two `CLOCK_MONOTONIC` reads, with
    /// flushes between them, and checks that the trace's calibrations place every recorded
    /// time on `CLOCK_MONOTONIC` between those reads (within the calibrations' own errors and
    /// `CLOCK_MONOTONIC`'s own slew, at most 500 ppm); returns the calibrations.
    fn record_times_map_onto_monotonic() -> Vec<HostClock> {
        let (rec, sink) = memory_recorder(RecorderOptions::default());
        let mut brackets = Vec::new();
        for i in 0..3000u64 {
            let before = crate::clock::monotonic_ns();
            let start_ns = rec.now_ns();
            std::hint::black_box((0..i % 64).sum::<u64>());
            let end_ns = rec.now_ns();
            let after = crate::clock::monotonic_ns();
            rec.record(&Record::RegionTiming(RegionTiming {
                runtime: RuntimeId(1),
                submission: SubmissionIndex(i),
                region: RegionIndex(0),
                start_ns,
                end_ns,
                device: None,
            }));
            brackets.push((before, after));
            if i % 500 == 499 {
                rec.flush().unwrap();
            }
        }
        rec.close().unwrap();
        let trace = read(&sink);
        let base = start_of(&trace).monotonic_base_ns;
        let clocks: Vec<HostClock> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::HostClock(c) => Some(*c),
                _ => None,
            })
            .collect();
        // At the start, at each of the six flushes, at the close.
        assert!(clocks.len() >= 8, "{} calibrations", clocks.len());
        let timings = trace.records.iter().filter_map(|r| match r {
            Record::RegionTiming(t) => Some(t),
            _ => None,
        });
        let mut checked = 0;
        for t in timings {
            let (before, after) = brackets[t.submission.0 as usize];
            // The calibrations around this time: their errors and the interval between them.
            let next = clocks.partition_point(|c| c.session_ns <= t.end_ns);
            let around = &clocks[next.saturating_sub(1)..(next + 1).min(clocks.len())];
            let error: u64 = around.iter().map(|c| c.error_ns).sum();
            let (first, last) = (around[0], around[around.len() - 1]);
            let interval = last.session_ns.saturating_sub(first.next_session_ns);
            // 2 ns: the fixed-point map's rounding, once per end.
            let tolerance = error + interval / 2000 + 2;
            for time in [t.start_ns, t.end_ns] {
                let monotonic = HostClock::monotonic_ns_at(&clocks, base, time).unwrap();
                assert!(
                    monotonic + tolerance >= before && monotonic <= after + tolerance,
                    "{time} ns maps to {monotonic}, outside {before}..={after} \
                     (tolerance {tolerance}): {around:?}"
                );
            }
            assert!(t.start_ns <= t.end_ns);
            checked += 1;
        }
        assert_eq!(checked, 3000);
        clocks
    }

    #[test]
    fn record_times_map_onto_the_monotonic_clock_with_the_calibrations() {
        let clocks = record_times_map_onto_monotonic();
        assert!(clocks.iter().all(|c| c.source == crate::clock::source()));
    }

    /// `HRX_TRACE_CLOCK=monotonic` (read once per process, so in a child process running
    /// this test alone) takes the fallback even where the TSC is invariant: every
    /// calibration is `CLOCK_MONOTONIC` itself, exact, with no offset, and record times still
    /// map onto it.
    #[test]
    fn the_monotonic_fallback_is_taken_when_the_env_var_asks() {
        const CHILD: &str = "HRX_CAPTURE_TEST_CLOCK_CHILD";
        if std::env::var_os(CHILD).is_some() {
            assert_eq!(crate::clock::source(), HostClockSource::Monotonic);
            for c in record_times_map_onto_monotonic() {
                assert_eq!(c.source, HostClockSource::Monotonic);
                assert_eq!(c.error_ns, 0);
                assert_eq!(c.ns_per_tick_q32, 1 << 32);
                assert_eq!(
                    c.ticks, c.monotonic_ns,
                    "the ticks are CLOCK_MONOTONIC's ns"
                );
                assert_eq!(c.next_session_ns, c.session_ns, "never stepped");
            }
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "writer::tests::the_monotonic_fallback_is_taken_when_the_env_var_asks",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env(crate::clock::CLOCK_ENV, "monotonic")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "{text}");
    }

    fn start_of(trace: &Trace) -> &crate::schema::SessionStart {
        match &trace.records[0] {
            Record::SessionStart(start) => start,
            other => panic!("first record {other:?}"),
        }
    }

    /// A FIFO named as the trace (`HRX_TRACE=fifo`) is refused at once, where opening it for
    /// writing would wait for a reader forever; a device likewise.
    #[test]
    fn a_fifo_or_a_device_is_refused_as_a_trace_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c_path` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/null"), "a device"),
        ] {
            let Err(error) = FileSink::create(path) else {
                panic!("{} was accepted as a trace file", path.display())
            };
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
            assert_eq!(error.to_string(), format!("it is {kind}, not a file"));
        }
    }

    /// One recording of `records` timings of runtime `runtime` at `path`, closed.
    fn record_at(path: &Path, runtime: u32, records: u64) {
        let recorder = Recorder::create(path, RecorderOptions::default()).unwrap();
        for submission in 0..records {
            recorder.record(&timing(runtime, submission));
        }
        recorder.close().unwrap();
    }

    fn runtimes_in(bytes: &[u8]) -> HashSet<u32> {
        Trace::from_bytes(bytes)
            .unwrap()
            .records
            .iter()
            .filter_map(|r| match r {
                Record::RegionTiming(t) => Some(t.runtime.0),
                _ => None,
            })
            .collect()
    }

    /// A new recording at an earlier trace's path replaces the file, not its bytes: a reader
    /// holding the earlier trace open reads it whole after the new recording began and
    /// closed (it was truncated in place, so a reader mid-file went on inside the new
    /// recording: two recordings read as one, the seam as damage; a break-it pass at scale).
    /// The name then holds the new recording alone, with the earlier file's permissions,
    /// through a symlink the link's target, and no hidden file is left behind.
    #[test]
    fn a_new_recording_replaces_an_earlier_trace_that_a_reader_still_reads_whole() {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        record_at(&path, 1, 1000);
        let earlier = std::fs::read(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        // A reader that has read the header and stopped mid-file.
        let mut reader = File::open(&path).unwrap();
        let mut head = vec![0; 64];
        reader.read_exact(&mut head).unwrap();

        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        for submission in 0..10 {
            recorder.record(&timing(2, submission));
        }
        recorder.flush().unwrap();
        // The name is the new recording's from its first write on.
        assert_eq!(
            runtimes_in(&std::fs::read(&path).unwrap()),
            HashSet::from([2])
        );
        recorder.close().unwrap();

        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        head.extend(rest);
        assert_eq!(head, earlier, "the reader's file changed under it");
        assert_eq!(runtimes_in(&head), HashSet::from([1]));
        assert_eq!(
            runtimes_in(&std::fs::read(&path).unwrap()),
            HashSet::from([2])
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);

        // Through a symlink: the target is replaced, the link stays a link.
        let link = dir.path().join("link.hrxt");
        std::os::unix::fs::symlink("t.hrxt", &link).unwrap();
        record_at(&link, 3, 10);
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            runtimes_in(&std::fs::read(&path).unwrap()),
            HashSet::from([3])
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// A recording that replaced an earlier trace at its first write and then fails to write
    /// (a full disk) keeps the earlier trace, byte for byte, as `STEM.earlier.EXT` beside it
    /// (it was lost: break-it, session 58); one that closes removes it, and one killed
    /// leaves it hidden for the next recorder of the name to remove.
    #[test]
    fn a_recording_that_fails_after_its_first_write_keeps_the_earlier_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let names = || -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        record_at(&path, 1, 100);
        let earlier = std::fs::read(&path).unwrap();
        // Written and closed: nothing kept.
        let mut sink = FileSink::create(&path).unwrap();
        sink.write_all(b"HRXTRACE new").unwrap();
        assert_eq!(names().len(), 2, "the earlier trace, hidden: {:?}", names());
        drop(sink);
        assert_eq!(names(), ["t.hrxt"]);
        assert_eq!(std::fs::read(&path).unwrap(), b"HRXTRACE new");

        // A write after the first fails (its descriptor gone stands in for a full disk).
        let fail_again = |path: &Path| {
            std::fs::write(path, &earlier).unwrap();
            let mut sink = FileSink::create(path).unwrap();
            sink.write_all(b"HRXTRACE cut").unwrap();
            sink.file = None;
            sink.path = dir.path().join("gone").join("t.hrxt");
            assert!(sink.write_all(b" more").is_err());
        };
        fail_again(&path);
        assert_eq!(names(), ["t.earlier.hrxt", "t.hrxt"]);
        assert_eq!(
            std::fs::read(dir.path().join("t.earlier.hrxt")).unwrap(),
            earlier
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"HRXTRACE cut");
        // Again: a kept trace of that name is not replaced.
        fail_again(&path);
        let pid = std::process::id();
        assert_eq!(
            names(),
            [
                format!("t.earlier.{pid}.hrxt"),
                "t.earlier.hrxt".to_owned(),
                "t.hrxt".to_owned()
            ]
        );
        // Once more (a process id repeats in containers): a count; never left hidden, where
        // the next recorder of the name would sweep it.
        fail_again(&path);
        let kept = dir.path().join(format!("t.earlier.{pid}.1.hrxt"));
        assert_eq!(std::fs::read(&kept).unwrap(), earlier);
        // A name too long for `STEM.earlier.EXT`: `NAME.PID.earlier0`, shortened with a hash.
        let long = dir.path().join(format!("{}.hrxt", "l".repeat(245)));
        fail_again(&long);
        let visible: Vec<String> = names()
            .into_iter()
            .filter(|n| n.starts_with('l') && n.contains("earlier"))
            .collect();
        assert_eq!(visible.len(), 1, "{:?}", names());
        assert_eq!(
            std::fs::read(dir.path().join(&visible[0])).unwrap(),
            earlier
        );
        assert!(names().iter().all(|n| !n.starts_with('.')), "{:?}", names());

        // Killed while recording (forgotten: no drop runs): the hidden one is left, and the
        // next recorder of the name removes it.
        std::fs::write(&path, &earlier).unwrap();
        let mut sink = FileSink::create(&path).unwrap();
        sink.write_all(b"HRXTRACE killed").unwrap();
        let hidden = sink.kept.as_ref().unwrap().hidden.clone();
        // Its descriptors closed, as a killed process's are; nothing else of it runs.
        drop(sink.kept.take());
        drop(sink.file.take());
        std::mem::forget(sink);
        assert!(hidden.exists());
        drop(FileSink::create(&path).unwrap());
        assert!(!hidden.exists());
    }

    /// While a recorder writes a trace, a second recorder at its path is refused, whether it
    /// opened the name before or after the first replaced the earlier trace there; a
    /// recording whose first write fails leaves the earlier trace as it was and no hidden
    /// file (it emptied the earlier trace first).
    #[test]
    fn a_replacement_is_one_recorders_and_a_first_write_that_fails_keeps_the_earlier_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        record_at(&path, 1, 100);
        let earlier = std::fs::read(&path).unwrap();
        // The earlier trace opened (and locked) by a second recorder before the first
        // replaced it.
        let before = File::open(&path).unwrap();
        let first = Recorder::create(&path, RecorderOptions::default()).unwrap();
        let Err(error) = FileSink::create(&path) else {
            panic!("a second recorder took the trace being written")
        };
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock, "{error}");
        // The earlier file stays locked while the recording that replaced it lives (kept,
        // hidden, until it is closed: [`Kept`]) ...
        assert!(!lock_exclusive(&before).unwrap());
        first.close().unwrap();
        // ... then is free: a recorder that opened it before takes it, then finds that the
        // name is another file's.
        assert!(lock_exclusive(&before).unwrap());
        let Err(error) = Replacing::beside(&before, &path) else {
            panic!("the earlier file, no longer named, was replaced again")
        };
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock, "{error}");

        // A first write that fails: the sink is dropped unwritten.
        std::fs::write(&path, &earlier).unwrap();
        let sink = FileSink::create(&path).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "the hidden file"
        );
        drop(sink);
        assert_eq!(std::fs::read(&path).unwrap(), earlier);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
