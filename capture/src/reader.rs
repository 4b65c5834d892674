//! Reading traces: a streaming reader over any [`Read`], a memory-mapped reader with random
//! access to blocks, and [`read_all`].
//!
//! # The file is untrusted
//!
//! Nothing in a trace can make a reader panic or allocate much more than the file's size:
//! block lengths are capped at [`MAX_BLOCK_BYTES`], a payload is read in bounded chunks so a
//! lying length on a short file allocates only what is there, a zstd payload decompresses
//! to at most 2 MiB and 64 times its block's size (`format::MAX_ZSTD_RATIO`), and postcard
//! only allocates for bytes the record actually contains. The streaming reader decodes a
//! block's records one at a time, so it holds one block's payload and one record, never a
//! block's worth of decoded records (a `Record` is 160 bytes in memory, from as few as 4 on
//! disk). The fuzz targets in `fuzz/` check these bounds with a counting allocator.
//! Every error and warning names the byte offset it is about and displays as one line.
//!
//! The end of a trace is reported as one of three states ([`Recovery::end`]): closed
//! cleanly; closed, but its end damaged (a damaged footer or trailer, or bytes appended
//! after it: every block is still read, and a warning names the damage); or not closed
//! (the recording process crashed or was killed).
//!
//! # Damage and recovery
//!
//! Fatal ([`ReadError`]): an empty file, a bad file header, a version this reader cannot
//! read, an I/O error. Everything else is a [`Warning`] and reading goes on:
//!
//! - **Torn tail** (the writer was killed mid-block): every complete block before it is
//!   read; [`Recovery`] says how many bytes were discarded and that the close was unclean.
//! - **Bad payload checksum** or undecodable payload: the block is skipped and reading
//!   continues with the next block, as Perfetto skips a bad packet (GFXReconstruct stops
//!   instead). Records name objects by id, never by position, so the rest of the trace stays
//!   meaningful; [`Recovery::skipped_blocks`] tells replay that something is missing.
//! - **Damaged block header**: the reader searches forward for the next block marker with a
//!   valid header checksum and resumes there.
//! - **Blocks cut out whole** (nothing left to skip): counted from the footer's index or
//!   the session end's record count when the trace was closed; in a trace never closed,
//!   only a block summary left without the records block it follows tells
//!   ([`WarningKind::SummaryWithoutBlock`]; the rest reads as the trace's end, see
//!   [`TraceReader::check_submission_numbers`]).
//! - **Unknown block kind or record variant** (a newer minor): skipped with a warning.
//! - **Another trace joined on** (`cat cut.hrxt other.hrxt`): where a file header that
//!   decodes stands where a block should, or lies in bytes taken for damage (a block whose
//!   payload checksum fails, its header included: cut in its last byte, the header is made
//!   whole again by the other trace's first where both are `H`; bytes skipped to
//!   resynchronize, a payload cut short, across a damaged block's end, or a trailer that
//!   is not the trace's), the trace ends at its cut there, said as the cut alone is
//!   ([`WarningKind::TruncatedTail`]), and [`WarningKind::AnotherTrace`] says that the rest
//!   is another trace's: the torn last block's length reached into the second trace, whose
//!   records were read as the first's. A header begun in the last bytes of a block that
//!   verifies (the bytes the cut took were the other trace's first, a payload ending in
//!   `H`) leaves that block whole: it is read, and the other trace said from its header.
//!   Both readers stop at the same place. A file header inside a block whose payload
//!   fails its checksum is a buffer's contents instead (a program wrote a trace file into
//!   a buffer, its blob recorded) when that trace's blocks end inside the payload and a
//!   block header follows the block: the block is skipped as damaged and reading goes on.
//!   Bytes skipped to resynchronize after a damaged block header skip such a trace's
//!   blocks with them, where its header lies past the damaged header's own bytes and its
//!   blocks end before the file does.

use crate::ShowPath;
use crate::format::{
    BLOCK_HEADER_LEN, BlockHeader, BlockKind, Compatibility, FILE_HEADER_LEN, FileHeader, Footer,
    FormatError, FormatVersion, FrameDecoder, MAGIC, MAX_BLOCK_BYTES, TRAILER_LEN, decode_payload,
    decode_trailer, read_varint_u32,
};
use crate::schema::{BlobHash, HostClockSource, Record};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use thiserror::Error;

mod ahead;

/// A trace that cannot be read (further), and where: `byte N: what`, or only what for a
/// file that cannot be opened.
#[derive(Debug, Error)]
#[error("{}{kind}", place(*.offset, .kind))]
pub struct ReadError {
    /// File offset of the problem.
    pub offset: u64,
    /// What is wrong.
    pub kind: ReadErrorKind,
}

/// What is wrong with an unreadable trace.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The file is empty.
    #[error("the file is empty, not an hrx trace")]
    Empty,
    /// The file ends inside the file header.
    #[error("the file ends after {len} bytes, inside the {FILE_HEADER_LEN}-byte header")]
    TruncatedHeader {
        /// File length.
        len: u64,
    },
    /// The file header is invalid or names an unreadable version.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The file cannot be opened (missing, not permitted, a directory).
    #[error("cannot open it: {0}")]
    Open(io::Error),
    /// Reading failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

/// Opens a trace being started for following: calls `open` until it succeeds, waiting up to
/// `wait` while the file at `path` is missing or shorter than a file header (the recorder
/// creates the file, then writes), and says so once on standard error. Any other error, or
/// the last one after `wait`, is returned at once. `view --follow` and `stats --follow` use
/// it, as Tracy waits for a client to connect.
///
/// # Errors
///
/// `open`'s error when the file is there but unusable, or when `wait` has passed; then
/// [`WaitError::gave_up_after`] says how long it waited, for the caller's one error line
/// (a line of its own here, then the error, read as two failures).
pub fn wait_for_trace<T, E>(
    path: &Path,
    wait: std::time::Duration,
    mut open: impl FnMut(&Path) -> Result<T, E>,
) -> Result<T, WaitError<E>> {
    let deadline = std::time::Instant::now() + wait;
    let mut said = false;
    // A short file that nobody writes (a cut copy, a recorder killed in its first write)
    // fails once that is clear, about a second, not after the whole wait (a break-it pass).
    let mut watch = crate::watch::WriterWatch::default();
    loop {
        let error = match open(path) {
            Ok(opened) => return Ok(opened),
            Err(error) => error,
        };
        // Shorter than a file header and a block header: the recorder's first write may be
        // under way.
        let starting = std::fs::metadata(path).map_or(true, |m| {
            m.is_file() && m.len() < (FILE_HEADER_LEN + BLOCK_HEADER_LEN) as u64
        });
        let abandoned = starting && watch.abandoned(path);
        if !starting || abandoned || std::time::Instant::now() >= deadline {
            return Err(WaitError {
                error,
                gave_up_after: (said && starting && !abandoned).then_some(wait),
            });
        }
        if !said {
            crate::to_stderr(format_args!(
                "waiting for {} to be written (up to {} s; Ctrl-C stops)",
                path.shown(),
                wait.as_secs()
            ));
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Why [`wait_for_trace`] opened no trace.
#[derive(Debug)]
pub struct WaitError<E> {
    /// The last error of `open`.
    pub error: E,
    /// How long it waited for the file to be written, where it waited and gave up (the
    /// file still missing or shorter than a header); `None` where it failed at once.
    pub gave_up_after: Option<std::time::Duration>,
}

impl<E> WaitError<E> {
    /// The line that says it gave up, where it did: `gave up waiting 30 s for PATH to be
    /// written`, to put before the error.
    pub fn gave_up(&self, path: &Path) -> Option<String> {
        self.gave_up_after.map(|wait| {
            format!(
                "gave up waiting {} s for {} to be written",
                wait.as_secs(),
                path.shown()
            )
        })
    }
}

/// Opens a trace file for reading, for a [`TraceReader`] over a wrapped file. A directory
/// is refused here, where it is named, rather than at its first read ("byte 0: I/O error:
/// Is a directory").
///
/// # Errors
///
/// [`ReadErrorKind::Open`] when the file cannot be opened, is a directory, or is not a
/// regular file: a FIFO, a socket or a device is refused before it is opened, since opening
/// a FIFO without a writer, or reading a terminal, would wait forever.
pub fn open_file(path: &Path) -> Result<File, ReadError> {
    let open = |e| ReadError::new(0, ReadErrorKind::Open(e));
    if let Ok(metadata) = std::fs::metadata(path)
        && let Some(what) = special_file(&metadata)
    {
        let e = io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}, not a trace file"),
        );
        return Err(open(e));
    }
    let file = File::open(path).map_err(open)?;
    if file.metadata().map_err(open)?.is_dir() {
        let e = io::Error::new(io::ErrorKind::IsADirectory, "it is a directory");
        return Err(open(e));
    }
    Ok(file)
}

/// What a file that is neither a regular file nor a directory is, in words (`a FIFO (named
/// pipe)`), or `None`. Paths of these must never be opened as traces: opening a FIFO blocks
/// until its other end opens.
pub fn special_file(metadata: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        None
    }
}

/// `byte N: `, or nothing where no byte was read.
fn place(offset: u64, kind: &ReadErrorKind) -> String {
    match kind {
        ReadErrorKind::Open(_) => String::new(),
        _ => format!("byte {offset}: "),
    }
}

impl ReadError {
    pub(crate) fn new(offset: u64, kind: impl Into<ReadErrorKind>) -> ReadError {
        ReadError {
            offset,
            kind: kind.into(),
        }
    }
}

/// Something was skipped or is suspicious; reading went on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// File offset the warning is about (usually a block header).
    pub offset: u64,
    /// What happened.
    pub kind: WarningKind,
}

impl fmt::Display for Warning {
    /// `byte N: ` then what happened; without the byte for submissions missing, which are
    /// counted over the whole trace once it is read (its offset is where the read stopped,
    /// no place of theirs: a lossy recording's read `byte 23000313: runtime 1: 25220 of its
    /// submissions ... are missing` with nothing at that byte damaged, a fresh user's pass;
    /// damage that lost them is warned of at its own byte).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            WarningKind::SubmissionsMissing { .. } => write!(f, "{}", self.kind),
            _ => write!(f, "byte {}: {}", self.offset, self.kind),
        }
    }
}

/// What a [`Warning`] is about.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WarningKind {
    /// The file was written by a newer minor version; unknown parts are skipped.
    #[error("trace format {file} is newer than this reader's {reader}; unknown parts are skipped")]
    NewerMinor {
        /// File version.
        file: FormatVersion,
        /// Reader version.
        reader: FormatVersion,
    },
    /// A block of a kind this reader does not know was skipped.
    #[error("skipped a block of unknown {kind} ({len} bytes)")]
    UnknownBlockKind {
        /// The kind.
        kind: BlockKind,
        /// Its length on disk in bytes.
        len: u64,
    },
    /// A damaged block was skipped.
    #[error("skipped a damaged block declaring {records} records: {error}")]
    BlockSkipped {
        /// Records the block header declared.
        records: u32,
        /// The damage.
        error: FormatError,
    },
    /// Records of a newer minor version that this reader cannot decode, in blocks that
    /// verified: skipped, and not damage.
    #[error(
        "{records} records this reader cannot decode (written by a newer minor version \
         {version}; update hrx-trace)"
    )]
    NewerRecords {
        /// Records skipped (in the file, or in the block for [`MappedTrace::read_block`]).
        records: u64,
        /// The file's version.
        version: FormatVersion,
    },
    /// The file holds more than one session (session starts): a recording writes one, so it
    /// was made by hand or by joining traces. Readers read them all as one: every figure
    /// covers every session together. Said at the second session's block.
    #[error(
        "{sessions} sessions in one file (the second starts here; a recording writes one): \
         the figures cover them all together"
    )]
    Sessions {
        /// Session starts read.
        sessions: u64,
    },
    /// A record that does not decode was skipped (e.g. damage the block's checksum missed).
    #[error("skipped record {index} of the block: {error}")]
    RecordSkipped {
        /// Index of the record within its block.
        index: u32,
        /// Why.
        error: FormatError,
    },
    /// More undecodable records of one block than are listed one by one.
    #[error("{count} more records of the block skipped")]
    MoreRecordsSkipped {
        /// Records skipped beyond those listed.
        count: u32,
    },
    /// A block holds a different number of records than its header declares.
    #[error("block declares {declared} records but holds {found}")]
    RecordCount {
        /// Declared.
        declared: u32,
        /// Found.
        found: u32,
    },
    /// A damaged block header; reading resumed at the next valid block.
    #[error("damaged block header ({error}); skipped {skipped_bytes} bytes to the next block")]
    Resynchronized {
        /// Bytes skipped.
        skipped_bytes: u64,
        /// The damage.
        error: FormatError,
    },
    /// The file ends inside a block (a torn write) or with unreadable bytes.
    #[error("the file ends inside a block: {bytes} bytes discarded")]
    TruncatedTail {
        /// Bytes discarded.
        bytes: u64,
    },
    /// The footer is damaged or disagrees with the file.
    #[error("footer ignored: {reason}")]
    BadFooter {
        /// Why.
        reason: String,
    },
    /// Bytes follow the trailer.
    #[error("{bytes} bytes after the end of the trace ignored")]
    TrailingData {
        /// Bytes ignored.
        bytes: u64,
    },
    /// Another trace's file header stands where a block should: two files joined (`cat`),
    /// the first not closed. Reading stops there, rather than taking the second trace's
    /// records for the first's.
    #[error("another trace starts here (two files joined?): its {bytes} bytes are not read")]
    AnotherTrace {
        /// Bytes from that header to the end of the file.
        bytes: u64,
    },
    /// Whole blocks are missing between the first and the footer: the footer lists more
    /// blocks than the file holds (cut out, not damaged: nothing was left to skip).
    #[error("{blocks} blocks ({records} records) listed by the footer are missing from the file")]
    MissingBlocks {
        /// Blocks missing.
        blocks: u64,
        /// Records the footer counts in them.
        records: u64,
    },
    /// A block summary with no records block right before it: the recorder writes each one
    /// right after the records block whose timings it counts, so that block was cut out
    /// (not damaged: nothing was left to skip). The only sign of a block cut out of a trace
    /// that was never closed: a records block cut out with its summary, or one that had none
    /// (no timings), leaves none ([`TraceReader::check_submission_numbers`]).
    #[error(
        "a records block is missing before this block summary (cut out: a summary follows \
         the records block it counts)"
    )]
    SummaryWithoutBlock,
    /// The session end counts more records written before it than were read or skipped:
    /// whole blocks are gone (cut out of a trace whose footer is gone too, so no footer
    /// lists them).
    #[error(
        "the session end counts {declared} records before it; {found} were read: {missing} are missing"
    )]
    RecordsMissing {
        /// Records the session end says were written before it.
        declared: u64,
        /// Records read before it.
        found: u64,
        /// Records missing (neither read nor counted as skipped).
        missing: u64,
    },
    /// A runtime's submission numbers (1, 2, 3, ... per runtime) have gaps: the submits of
    /// that many submissions are missing (a block lost, or records dropped).
    #[error("runtime {runtime}: {missing} of its submissions 1..={last} are missing")]
    SubmissionsMissing {
        /// The runtime.
        runtime: u32,
        /// Submission numbers absent.
        missing: u64,
        /// The highest submission number found.
        last: u64,
    },
    /// A trace that was not closed (killed, crashed, cut short) lacks some of a runtime's
    /// submission numbers, and nothing in it was damaged, skipped or lost: each submitting
    /// thread's last records were still in its buffer, or in the torn last block, when the
    /// trace ended, so the trace ends for the runtime before `first`, the lowest number it
    /// lacks (another thread's later submissions, written earlier, may follow). Those
    /// submissions are not missing from the middle of the trace: they are past its end
    /// ([`Recovery::unwritten_submissions`]). See [`TraceReader::check_submission_numbers`].
    #[error(
        "runtime {runtime}: the trace ends before submission {first} (never closed: the \
         Submit of {missing} of its submissions {first}..={last} was never written, and \
         {past} later ones it holds are past where it ends)"
    )]
    SubmissionsUnwritten {
        /// The runtime.
        runtime: u32,
        /// The lowest submission number the trace lacks: it ends before it.
        first: u64,
        /// Submission numbers absent (all at or after `first`).
        missing: u64,
        /// Submissions the trace holds after `first` (submitted by other threads).
        past: u64,
        /// The highest submission number found.
        last: u64,
    },
}

impl WarningKind {
    /// The runtime and the submission a trace that was never closed ends before, for that
    /// runtime ([`WarningKind::SubmissionsUnwritten`]); `None` for any other warning.
    pub fn ends_before(&self) -> Option<(u32, u64)> {
        match *self {
            WarningKind::SubmissionsUnwritten { runtime, first, .. } => Some((runtime, first)),
            _ => None,
        }
    }
}

/// How much of a trace was read back (serde: the timeline's cache keeps it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Recovery {
    /// Blocks read and verified (records, summaries and footer).
    pub complete_blocks: u64,
    /// Records read.
    pub records: u64,
    /// Damaged blocks skipped (payload checksum, decompression) or lost to a damaged
    /// header.
    pub skipped_blocks: u64,
    /// Records skipped: undecodable ones, plus those declared by skipped blocks.
    pub skipped_records: u64,
    /// Bytes discarded: a torn tail, or damaged bytes between blocks.
    pub bytes_discarded: u64,
    /// Whether the trace ends with an intact footer and trailer (the recorder closed it and
    /// nothing damaged its end since).
    pub clean_close: bool,
    /// Whether the recorder closed the trace: a footer block or a trailer pointing at one
    /// was found, even if the footer, the trailer or what follows them is damaged. `closed`
    /// without `clean_close` means a damaged end, not a crash; [`Recovery::end`] says which.
    pub closed: bool,
    /// Records the recorder itself lost while recording (lossy mode, write errors), as the
    /// trace says: distinct from damage found while reading. Every reader reports it.
    pub lost: Lost,
    /// Time recording threads waited on the recorder ([`RecorderWait`] records).
    ///
    /// [`RecorderWait`]: crate::schema::RecorderWait
    pub waits: RecorderWaits,
    /// The session's host clock, from its [`HostClock`] records (format 1.6).
    ///
    /// [`HostClock`]: crate::schema::HostClock
    pub clock: HostClocks,
    /// Submission numbers absent from their runtime's sequence (see
    /// [`WarningKind::SubmissionsMissing`]), counted once the whole file was read.
    pub missing_submissions: u64,
    /// Submission numbers absent at the end of a trace that was not closed, where nothing was
    /// damaged, skipped or lost (see [`WarningKind::SubmissionsUnwritten`]): the trace ends
    /// before them, they are not missing from its middle (not in `missing_submissions`).
    #[serde(default)]
    pub unwritten_submissions: u64,
    /// Whether the trace is a trim of a recording that was not whole (killed, crashed,
    /// damaged, or itself such a trim): its `TraceRange` says so after the source's name
    /// (`cut.hrxt (incomplete: cut short, never closed)`). The trim is closed cleanly, but
    /// it lacks what its source lacked, so it is not complete.
    #[serde(default)]
    pub source_incomplete: bool,
    /// Records of a newer minor version this reader cannot decode
    /// ([`WarningKind::NewerRecords`]): in blocks that verified, so not damage, and not in
    /// `skipped_records`; but not read, so the trace is not complete.
    #[serde(default)]
    pub newer_records: u64,
}

/// What separates a source's name from why it was incomplete in a
/// [`TraceRange::trimmed_from`](crate::schema::TraceRange::trimmed_from).
pub const TRIMMED_FROM_INCOMPLETE: &str = " (incomplete: ";

/// What the trace's [`RecorderWait`] records add up to: how long recording threads were held
/// up by the recorder (lossless mode, a full buffer handed over on the thread).
///
/// [`RecorderWait`]: crate::schema::RecorderWait
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecorderWaits {
    /// Waits recorded.
    pub count: u64,
    /// Their total duration, in ns.
    pub total_ns: u64,
    /// The longest one, in ns.
    pub max_ns: u64,
    /// Waits that happened while a region's record was being recorded.
    pub in_regions: u64,
    /// Recording threads that waited at least once (distinct thread indices, up to 64
    /// counted exactly, more as a lower bound).
    pub threads: u32,
    seen: u64,
}

impl RecorderWaits {
    /// Takes a [`RecorderWait`] record into the totals (other records leave them).
    ///
    /// [`RecorderWait`]: crate::schema::RecorderWait
    pub fn observe(&mut self, record: &Record) {
        if let Record::RecorderWait(wait) = record {
            let ns = wait.end_ns.saturating_sub(wait.start_ns);
            self.count += 1;
            self.total_ns = self.total_ns.saturating_add(ns);
            self.max_ns = self.max_ns.max(ns);
            self.in_regions += u64::from(wait.region.is_some());
            let bit = 1u64 << wait.thread.min(63);
            if self.seen & bit == 0 {
                self.seen |= bit;
                self.threads += 1;
            }
        }
    }
}

/// What a trace's [`HostClock`] records say about its host clock: the source, its rate, and
/// how far it stayed from `CLOCK_MONOTONIC`. A trace of format 1.5 or older has none
/// (`source` is `None`): its host times were `CLOCK_MONOTONIC` readings. A later one without
/// any lost them ([`Uncalibrated`]); [`HostClocks::describe`] says which, by the format.
///
/// [`HostClock`]: crate::schema::HostClock
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostClocks {
    /// The clock's source; `None` when the trace has no calibration.
    pub source: Option<HostClockSource>,
    /// Calibrations read.
    pub calibrations: u64,
    /// The latest calibration's slope: ns per tick, 32.32 fixed point.
    pub ns_per_tick_q32: u64,
    /// The largest offset between the session clock and `CLOCK_MONOTONIC` at a calibration,
    /// in ns (absolute).
    pub max_offset_ns: u64,
    /// The largest error of a calibration's own measurement, in ns.
    pub max_error_ns: u64,
    /// Calibrations that stepped the clock forward (a gap: a suspended machine).
    pub steps: u64,
    monotonic_base_ns: Option<u64>,
}

impl HostClocks {
    /// Takes what a record says about the clock.
    pub fn observe(&mut self, record: &Record) {
        match record {
            Record::SessionStart(start) => self.monotonic_base_ns = Some(start.monotonic_base_ns),
            Record::HostClock(clock) => {
                self.source = Some(clock.source);
                self.calibrations += 1;
                self.ns_per_tick_q32 = clock.ns_per_tick_q32;
                if let Some(base) = self.monotonic_base_ns {
                    self.max_offset_ns =
                        self.max_offset_ns.max(clock.offset_ns(base).unsigned_abs());
                }
                self.max_error_ns = self.max_error_ns.max(clock.error_ns);
                self.steps += u64::from(clock.next_session_ns != clock.session_ns);
            }
            _ => {}
        }
    }

    /// Ticks per second of the latest calibration (1e9 for `CLOCK_MONOTONIC`); 0 when none.
    pub fn ticks_per_second(&self) -> f64 {
        if self.ns_per_tick_q32 == 0 {
            return 0.0;
        }
        1e9 * (1u64 << 32) as f64 / self.ns_per_tick_q32 as f64
    }
}

impl HostClocks {
    /// The clock in words, for a trace of format `version` (its header's): `TSC at 2.900
    /// GHz, 12 calibrations, within 1.2 µs of CLOCK_MONOTONIC (each measured to ±40 ns)`,
    /// `TSC at 2.900 GHz, 1 calibration (at the start: no drift measured; ...)`,
    /// `CLOCK_MONOTONIC (3 calibrations; ...)`; without a calibration, what
    /// [`Uncalibrated::of`] decides: `CLOCK_MONOTONIC (no calibration record: format 1.5 or
    /// older)`, or a source not known where the format records them and none was read.
    pub fn describe(&self, version: FormatVersion) -> DescribedClock<'_> {
        DescribedClock {
            clocks: self,
            version,
        }
    }
}

/// [`HostClocks::describe`]'s words.
#[derive(Clone, Copy, Debug)]
pub struct DescribedClock<'a> {
    clocks: &'a HostClocks,
    version: FormatVersion,
}

impl fmt::Display for DescribedClock<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clocks = self.clocks;
        match clocks.source {
            None => match Uncalibrated::of(self.version) {
                older @ Uncalibrated::Older => write!(f, "CLOCK_MONOTONIC ({older})"),
                lost @ Uncalibrated::Lost(_) => write!(
                    f,
                    "not known ({lost}): times are the session clock's, their drift from \
                     CLOCK_MONOTONIC not measured"
                ),
            },
            Some(HostClockSource::Monotonic) => write!(
                f,
                "CLOCK_MONOTONIC ({} calibrations; forced, or no invariant TSC)",
                clocks.calibrations
            ),
            // One calibration (a trace cut short before its first flush) measures no drift.
            Some(source) if clocks.calibrations < 2 => write!(
                f,
                "{} at {:.3} GHz, 1 calibration (at the start: no drift measured; measured to \
                 ±{} ns)",
                source.name(),
                clocks.ticks_per_second() / 1e9,
                clocks.max_error_ns
            ),
            Some(source) => {
                write!(
                    f,
                    "{} at {:.3} GHz, {} calibrations, within {} ns of CLOCK_MONOTONIC (each \
                     measured to ±{} ns)",
                    source.name(),
                    clocks.ticks_per_second() / 1e9,
                    clocks.calibrations,
                    clocks.max_offset_ns,
                    clocks.max_error_ns
                )?;
                if clocks.steps > 0 {
                    write!(f, ", stepped forward {} times", clocks.steps)?;
                }
                Ok(())
            }
        }
    }
}

/// Why a trace holds no calibration of its session clock ([`HostClock`]) to read, decided by
/// its header's format version: one decision for `info`'s `clock` line
/// ([`HostClocks::describe`]) and what the exports say of a lost session's times. A trace of
/// format 1.17 whose every calibration was damaged read `no calibration record: format 1.5
/// or older` (a break-it pass).
///
/// [`HostClock`]: crate::schema::HostClock
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uncalibrated {
    /// Its format is older than calibrations ([`FormatVersion::CALIBRATED`]): its host times
    /// are `CLOCK_MONOTONIC` readings.
    Older,
    /// Its format (this one) records calibrations, and none was read: each was in a damaged
    /// block, or the trace lost them with its end.
    Lost(FormatVersion),
}

impl Uncalibrated {
    /// Why a trace of format `version` without a calibration read has none.
    pub fn of(version: FormatVersion) -> Uncalibrated {
        if version >= FormatVersion::CALIBRATED {
            Uncalibrated::Lost(version)
        } else {
            Uncalibrated::Older
        }
    }
}

impl fmt::Display for Uncalibrated {
    /// `no calibration record: format 1.5 or older`, `no calibration read: format 1.17
    /// records them, and each was damaged or lost`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uncalibrated::Older => f.write_str("no calibration record: format 1.5 or older"),
            Uncalibrated::Lost(version) => write!(
                f,
                "no calibration read: format {version} records them, and each was damaged or lost"
            ),
        }
    }
}

/// Records the recorder lost while recording, from the trace's [`RecordsLost`] and
/// [`SessionEnd`] records (the latest count wins: they are cumulative).
///
/// [`RecordsLost`]: crate::schema::RecordsLost
/// [`SessionEnd`]: crate::schema::SessionEnd
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lost {
    /// Records lost, all kinds.
    pub total: u64,
    /// Whether the trace was recorded in lossy mode.
    pub lossy: bool,
    /// Per [`Record::KIND_NAMES`] entry; the last slot counts kinds this reader does not
    /// know (named by a newer writer).
    #[serde(with = "kind_counts")]
    by_kind: [u64; Record::KIND_NAMES.len() + 1],
}

/// serde for [`Lost::by_kind`] as a sequence: serde derives arrays up to 32 entries only.
mod kind_counts {
    use super::Record;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    const LEN: usize = Record::KIND_NAMES.len() + 1;

    pub fn serialize<S: Serializer>(counts: &[u64; LEN], s: S) -> Result<S::Ok, S::Error> {
        counts.as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; LEN], D::Error> {
        let counts = Vec::<u64>::deserialize(d)?;
        let mut out = [0u64; LEN];
        // A count from another version's kinds lands in the slots both know; the rest in
        // the last, as unknown kinds.
        for (i, n) in counts.into_iter().enumerate() {
            let slot = i.min(LEN - 1);
            out[slot] = out[slot].saturating_add(n);
        }
        Ok(out)
    }
}

// By hand: arrays longer than 32 have no `Default`.
impl Default for Lost {
    fn default() -> Self {
        Lost {
            total: 0,
            lossy: false,
            by_kind: [0; Record::KIND_NAMES.len() + 1],
        }
    }
}

impl Lost {
    /// Whether nothing was lost.
    pub fn is_none(&self) -> bool {
        self.total == 0
    }

    /// A lossy recording that lost nothing, in the words every reader says it after `lost`
    /// (`info`'s line, `view`'s Trace pane, `replay`'s report, `diff` and `record`): `None`
    /// for a lossless recording, and for one that lost records (its count says the mode).
    pub fn lossy_without_loss(&self) -> Option<&'static str> {
        (self.lossy && self.is_none()).then_some(
            "none, recorded in lossy mode (HRX_TRACE_MODE=lossy: a full thread buffer would \
             have dropped records)",
        )
    }

    /// What a reader's `lost` line says: the records lost (the [`std::fmt::Display`] form),
    /// or [`Lost::lossy_without_loss`]; `None` for a lossless recording that lost nothing.
    pub fn said(&self) -> Option<String> {
        if self.is_none() {
            self.lossy_without_loss().map(str::to_owned)
        } else {
            Some(self.to_string())
        }
    }

    /// Records lost by kind, largest first; records whose kind the trace does not name are
    /// reported as `"unknown"`.
    pub fn by_kind(&self) -> Vec<(&'static str, u64)> {
        let names = Record::KIND_NAMES.iter().copied().chain(["unknown"]);
        let mut kinds: Vec<_> = names.zip(self.by_kind).filter(|&(_, n)| n > 0).collect();
        let named: u64 = self.by_kind.iter().sum();
        if let Some(rest) = self.total.checked_sub(named).filter(|&n| n > 0) {
            match kinds.iter_mut().find(|(k, _)| *k == "unknown") {
                Some((_, n)) => *n += rest,
                None => kinds.push(("unknown", rest)),
            }
        }
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        kinds
    }

    /// Takes the counts a record states, if it states any.
    pub fn observe(&mut self, record: &Record) {
        match record {
            Record::RecordsLost(lost) if lost.total >= self.total => {
                self.total = lost.total;
                self.lossy |= lost.lossy;
                self.by_kind = [0; Record::KIND_NAMES.len() + 1];
                for kind in &lost.by_kind {
                    let slot = Record::KIND_NAMES
                        .iter()
                        .position(|n| *n == kind.kind)
                        .unwrap_or(Record::KIND_NAMES.len());
                    self.by_kind[slot] = self.by_kind[slot].saturating_add(kind.records);
                }
            }
            Record::SessionEnd(end) => self.total = self.total.max(end.dropped_records),
            _ => {}
        }
    }
}

impl fmt::Display for Lost {
    /// `N records lost (RegionTiming 12, RegionDone 3)`, or `no records lost`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("no records lost");
        }
        write!(f, "{} records lost (", self.total)?;
        for (i, (kind, n)) in self.by_kind().into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{kind} {n}")?;
        }
        f.write_str(")")?;
        if self.lossy {
            f.write_str(" in lossy mode")?;
        }
        Ok(())
    }
}

impl Recovery {
    /// [`Recovery::end`] of a trace its recorder never closed (no footer, no trailer).
    pub const NOT_CLOSED: &'static str = "not closed cleanly";

    /// Whether the whole trace was read: closed cleanly and nothing skipped or discarded.
    pub fn is_complete(&self) -> bool {
        self.file_is_whole() && !self.source_incomplete
    }

    /// Whether the trace holds records of a newer minor version this reader cannot decode,
    /// and nothing else lacks: closed cleanly, nothing damaged, skipped or missing.
    fn only_newer_records(&self) -> bool {
        self.newer_records > 0
            && Recovery {
                newer_records: 0,
                ..*self
            }
            .file_is_whole()
    }

    /// Whether the file itself was read whole: closed cleanly, nothing skipped or missing
    /// (what its source lacked, for a trim of an incomplete recording, aside: submissions
    /// missing between those it holds are then its source's).
    pub fn file_is_whole(&self) -> bool {
        self.clean_close
            && self.skipped_blocks == 0
            && self.skipped_records == 0
            && self.newer_records == 0
            && self.bytes_discarded == 0
            && (self.missing_submissions == 0 || self.source_incomplete)
    }

    /// Takes one record read into what the trace says of itself: the records its recorder
    /// lost, the time threads waited on the recorder, its host clock, and whether it is a
    /// trim of an incomplete recording.
    pub fn observe(&mut self, record: &Record) {
        self.lost.observe(record);
        self.waits.observe(record);
        self.clock.observe(record);
        if let Record::TraceRange(range) = record
            && range
                .trimmed_from
                .as_deref()
                .is_some_and(|from| from.contains(TRIMMED_FROM_INCOMPLETE))
        {
            self.source_incomplete = true;
        }
    }

    /// How the trace ends, in a few words: `closed cleanly`, `closed cleanly, but holds
    /// records of a newer minor version this reader cannot decode` (nothing damaged),
    /// `closed cleanly, but the
    /// recorder lost records` (submissions missing because the recorder dropped their
    /// records, lossy mode), `closed, but damaged parts were skipped` (blocks or records
    /// before the end), `closed, but its end is damaged` (a
    /// damaged footer or trailer, or bytes after it: the warnings say which), or `not closed
    /// cleanly` (the recording process crashed or was killed).
    pub fn end(&self) -> &'static str {
        let skipped =
            self.skipped_blocks > 0 || self.skipped_records > 0 || self.missing_submissions > 0;
        let damaged = self.skipped_blocks > 0 || self.skipped_records > 0;
        match (self.clean_close, self.closed) {
            (true, _) if self.is_complete() => "closed cleanly",
            (true, _) if self.only_newer_records() => {
                "closed cleanly, but holds records of a newer minor version this reader cannot \
                 decode"
            }
            (true, _) if self.file_is_whole() => {
                "closed cleanly, but trimmed from an incomplete recording"
            }
            // Submissions missing because the recorder dropped their records (lossy mode),
            // not because anything was damaged.
            (true, _) if !damaged && self.bytes_discarded == 0 && !self.lost.is_none() => {
                "closed cleanly, but the recorder lost records"
            }
            (true, _) => "closed, but damaged parts were skipped",
            (false, true) if skipped => "closed, but damaged parts were skipped",
            (false, true) => "closed, but its end is damaged",
            (false, false) => Recovery::NOT_CLOSED,
        }
    }

    /// [`Recovery::end`] of a trace that `live` says a recorder held as it was read: one not
    /// closed yet is [`BEING_RECORDED`](crate::BEING_RECORDED), not `not closed cleanly`,
    /// which reads as a recording that ended badly (`stats --json`'s and `info --json`'s
    /// `end`, `diff`'s verdict and the view's Trace pane say it so).
    pub fn end_as(&self, live: bool) -> &'static str {
        if live && !self.closed {
            crate::BEING_RECORDED
        } else {
            self.end()
        }
    }
}

/// Why a trace cut after its session's end has no footer ([`WarningKind::BadFooter`]).
const FOOTER_MISSING: &str =
    "missing: the file ends after the session's end record, cut short after its recorder closed it";

/// Parses the file header from the first bytes of a file (`bytes` may be shorter than the
/// header, for a truncated file).
pub(crate) fn parse_header(
    bytes: &[u8],
    warnings: &mut Vec<Warning>,
) -> Result<FileHeader, ReadError> {
    if bytes.is_empty() {
        return Err(ReadError::new(0, ReadErrorKind::Empty));
    }
    let Ok(fixed) = <&[u8; FILE_HEADER_LEN]>::try_from(&bytes[..bytes.len().min(FILE_HEADER_LEN)])
    else {
        let magic_len = bytes.len().min(8);
        if bytes[..magic_len] != crate::format::MAGIC[..magic_len] {
            let mut found = [0u8; 8];
            found[..magic_len].copy_from_slice(&bytes[..magic_len]);
            return Err(ReadError::new(
                0,
                FormatError::BadMagic {
                    found,
                    len: magic_len as u8,
                },
            ));
        }
        let len = bytes.len() as u64;
        return Err(ReadError::new(len, ReadErrorKind::TruncatedHeader { len }));
    };
    let (header, compatibility) = FileHeader::decode(fixed).map_err(|e| {
        let offset = match e {
            FormatError::Version(_) => 8,
            FormatError::HeaderChecksum => 28,
            FormatError::HeaderLength { .. } => 20,
            FormatError::UnknownCodec(_) => 12,
            FormatError::UnknownCompression(_) => 13,
            _ => 0,
        };
        ReadError::new(offset, e)
    })?;
    if compatibility == Compatibility::NewerMinor {
        warnings.push(Warning {
            offset: 10,
            kind: WarningKind::NewerMinor {
                file: header.version,
                reader: FormatVersion::CURRENT,
            },
        });
    }
    Ok(header)
}

/// Where the first file header that decodes starts in `bytes`, wholly inside them: another
/// trace's start, in bytes a reader took for damage (two files joined by `cat`, the first
/// cut short: its torn last block's length reaches into the second).
pub(crate) fn file_header_in(bytes: &[u8]) -> Option<usize> {
    let last = bytes.len().checked_sub(FILE_HEADER_LEN)?;
    let mut from = 0;
    while from <= last {
        let at = from + bytes[from..=last].iter().position(|&b| b == MAGIC[0])?;
        let fixed: &[u8; FILE_HEADER_LEN] = bytes[at..at + FILE_HEADER_LEN]
            .try_into()
            .expect("FILE_HEADER_LEN bytes");
        if fixed.starts_with(&MAGIC) && FileHeader::decode(fixed).is_ok() {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Where a file header that decodes starts inside the header of a block whose payload,
/// `stored`, does not verify, and runs on into that payload; from the block's start. A cut
/// one byte short of a block header ending in the magic's first byte (`H`, one header in
/// 256), the other trace joined there: its first byte made the header whole again, so the
/// header verifies and the header to find starts before the payload.
fn file_header_in_block_header(header: &BlockHeader, stored: &[u8]) -> Option<usize> {
    let raw = header.encode();
    let bytes = [&raw[1..], &stored[..stored.len().min(FILE_HEADER_LEN - 1)]].concat();
    let p = file_header_in(&bytes).filter(|&p| p < BLOCK_HEADER_LEN - 1)?;
    Some(1 + p)
}

/// The last bytes of the block of `header` whose payload is `stored` (fewer than a file
/// header, and never its first byte, the block marker's), where a file header that the
/// bytes after the block end may start: the payload's, and its header's where the payload
/// is shorter.
fn block_tail(header: &BlockHeader, stored: &[u8]) -> Vec<u8> {
    let keep = (stored.len() + BLOCK_HEADER_LEN - 1).min(FILE_HEADER_LEN - 1);
    let of_header = keep.saturating_sub(stored.len());
    let raw = header.encode();
    let of_payload = &stored[stored.len() - (keep - of_header)..];
    [&raw[BLOCK_HEADER_LEN - of_header..], of_payload].concat()
}

/// Whether the trace whose file header starts at `p` in `payload` lies wholly inside it:
/// its blocks, followed from its header, end before the payload does, at bytes that are
/// no block header (its trailer, or whatever the payload holds after it). Such a trace is
/// the contents of a buffer the program held (a trace file written into a host-visible
/// buffer, its blob recorded), not another trace joined on after a cut, whose blocks run
/// past the torn block's end to the end of the file.
fn trace_inside(payload: &[u8], p: usize) -> bool {
    let mut q = p + FILE_HEADER_LEN;
    loop {
        let Some(rest) = payload.get(q..).filter(|rest| !rest.is_empty()) else {
            // Past the payload's end, or ending just at it: not inside.
            return false;
        };
        let Some(raw) = rest.first_chunk::<BLOCK_HEADER_LEN>() else {
            // A block header the payload's end may cut, or bytes that begin none.
            let m = rest.len().min(crate::format::BLOCK_MARKER.len());
            return rest[..m] != crate::format::BLOCK_MARKER[..m];
        };
        match BlockHeader::decode(raw) {
            Ok(header) => q = q.saturating_add(header.block_len() as usize),
            Err(_) => return true,
        }
    }
}

/// What a block skipped for its payload checksum leaves to look at for another trace's
/// start: a file header inside its header or payload, or the block's last bytes, where a
/// header that the bytes after the block end may start.
pub(crate) struct Remains {
    /// Where a file header that decodes starts, from the block's start: inside its header
    /// ([`file_header_in_block_header`]), or in the payload, of a trace that does not lie
    /// wholly inside it ([`trace_inside`]): another trace joined on.
    header: Option<usize>,
    /// Where the first file header that decodes starts in the payload when every such
    /// trace lies wholly inside it: a buffer's contents if a block header follows the
    /// block, else another trace joined on (cut short: a small whole trace and then
    /// another).
    inside: Option<usize>,
    /// The block's last bytes ([`block_tail`]).
    tail: Vec<u8>,
    /// The payload's length.
    len: usize,
}

impl Remains {
    /// What `stored`, the payload of the block of `header` that failed with `error`,
    /// leaves: nothing unless its checksum failed (a payload as written holds what the
    /// writer put there).
    pub(crate) fn of(header: &BlockHeader, stored: &[u8], error: &FormatError) -> Option<Remains> {
        if !matches!(error, FormatError::PayloadChecksum { .. }) {
            return None;
        }
        let tail = block_tail(header, stored);
        let (header, inside) = match file_header_in_block_header(header, stored) {
            Some(p) => (Some(p), None),
            None => {
                let (header, inside) = headers_in_payload(stored);
                (header.map(|p| BLOCK_HEADER_LEN + p), inside)
            }
        };
        Some(Remains {
            header,
            inside,
            tail,
            len: stored.len(),
        })
    }
}

/// The file headers in a damaged block's `payload`: where the first one of a trace that
/// does not lie wholly inside the payload starts (another trace joined on), else where the
/// first one starts (every such trace inside: what follows the block decides).
fn headers_in_payload(payload: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut first = None;
    let mut from = 0;
    while let Some(p) = payload.get(from..).and_then(file_header_in) {
        let at = from + p;
        if !trace_inside(payload, at) {
            return (Some(at), None);
        }
        first.get_or_insert(at);
        from = at + 1;
    }
    (None, first)
}

/// A block just skipped for its payload checksum: if the bytes after it end a file header
/// that its last bytes begin, it was the torn end of a trace joined to another.
struct Damaged {
    /// The block's offset.
    at: u64,
    /// Offset of a file header in its payload whose trace lies inside it
    /// ([`Remains::inside`]): a buffer's contents when a block header follows the block,
    /// else another trace's start.
    inside: Option<u64>,
    /// Records its header declared (counted as skipped).
    records: u32,
    /// Offset of `tail`.
    tail_at: u64,
    /// The block's last bytes ([`block_tail`]).
    tail: Vec<u8>,
}

/// A streaming trace reader: an iterator of `(block offset, record)` in file order.
///
/// Iteration yields `Err` only for I/O errors (and then ends); damage is reported through
/// [`TraceReader::warnings`] and [`TraceReader::recovery`], complete once iteration ends.
pub struct TraceReader<R> {
    src: BufReader<R>,
    offset: u64,
    header: FileHeader,
    warnings: Vec<Warning>,
    recovery: Recovery,
    /// The records block being read, decoded one record per `next` (or decoded ahead).
    block: Option<(u64, Current)>,
    /// The decoding threads, when decoding ahead ([`TraceReader::decode_ahead`]).
    ahead: Option<ahead::Ahead>,
    blocks_seen: u64,
    done: bool,
    /// Per runtime: the submission numbers seen, checked for gaps at the end when
    /// `check_submissions` is on. Bounded by runtimes and gaps, not submissions.
    submissions: std::collections::BTreeMap<u32, Numbers>,
    /// Per runtime: the submission ranges its [`TraceRange`](crate::schema::TraceRange)
    /// records declare, start -> end (`None`: open), so that a range's trace is not read as
    /// missing the submissions before and after it.
    ranges: std::collections::BTreeMap<u32, std::collections::BTreeMap<u64, Option<u64>>>,
    /// Whether to check submission numbers (see [`TraceReader::check_submission_numbers`]).
    check_submissions: bool,
    submissions_checked: bool,
    /// The input's end: no byte at or past this offset is read (`u64::MAX`: to the end).
    end: u64,
    /// Whether a recorder was writing the trace when it was opened, as the caller found
    /// ([`TraceReader::being_recorded`]).
    being_recorded: bool,
    /// The block skipped last, until the next block header is read.
    damaged: Option<Damaged>,
    /// The block of the first record of a newer minor this reader could not decode.
    first_newer: Option<u64>,
    /// Session starts read, and the block of the second.
    sessions: u64,
    second_session: u64,
    /// Whether the last record read is a session's end ([`Record::SessionEnd`]): a file cut
    /// after it, its footer gone, was closed by its recorder
    /// ([`TraceReader::ended_without_footer`]).
    session_ended: bool,
    /// The input may still grow ([`TraceReader::growing`]): its end is not the file's.
    growing: bool,
    /// [`TraceReader::before_block`]: the counts and the number of warnings before the
    /// records block or footer read last.
    before_block: (Recovery, usize),
    /// The kind of the block read last (`None` before the first; a records block where
    /// damaged bytes were skipped to reach the next header, which cannot be told): whether a
    /// summary follows its records block ([`WarningKind::SummaryWithoutBlock`]).
    previous: Option<BlockKind>,
    /// Where the block whose payload was read whole last ends, and its last bytes
    /// ([`block_tail`]), where another trace's header may start
    /// ([`TraceReader::joined_across_block_end`]).
    last_block: (u64, Vec<u8>),
}

impl TraceReader<File> {
    /// Opens the trace at `path`, to read it as long as it is now.
    ///
    /// A trace still being recorded is read up to its length at the open, its last block
    /// perhaps torn there: a reader that followed a writer faster than itself never reached
    /// an end (a break-it pass: `info` of a live 41 MB trace still reading at 926 MB when
    /// killed after 30 s). Following a growing trace is `stats --follow`'s and `view
    /// --follow`'s, which read what was appended at each refresh.
    ///
    /// # Errors
    ///
    /// [`ReadErrorKind::Open`] when it cannot be opened; see [`TraceReader::new`].
    pub fn open(path: impl AsRef<Path>) -> Result<TraceReader<File>, ReadError> {
        let file = open_file(path.as_ref())?;
        let len = file.metadata().map_err(|e| ReadError::new(0, e))?.len();
        let mut reader = TraceReader::new(file)?;
        reader.end = len.max(reader.offset);
        Ok(reader)
    }

    /// Whether the trace this reader reads, as long as it was when opened, ends with an
    /// intact footer and trailer (read from the same open file's end alone, with `pread`:
    /// a file replaced at the path since is not the one answered for). The footer's index
    /// is not checked against every block header here: mapping the file to check it made
    /// `dump`'s peak memory grow with the trace (its pages counted as the process's, 164 MiB
    /// at 1.2 GB; a break-it pass at scale); the read that follows finds any disagreement.
    ///
    /// # Errors
    ///
    /// [`ReadErrorKind::Io`] when the file's end cannot be read.
    pub fn ends_cleanly(&self) -> Result<bool, ReadError> {
        use std::os::unix::fs::FileExt;
        let file = self.src.get_ref();
        let io = |e| ReadError::new(0, e);
        let len = match self.end {
            // Made with `new`, not `open`: as long as it is now.
            u64::MAX => file.metadata().map_err(io)?.len(),
            end => end,
        };
        let (trailer_len, header_len) = (TRAILER_LEN as u64, BLOCK_HEADER_LEN as u64);
        let first = u64::from(self.header.header_len);
        if len < first + header_len + trailer_len {
            return Ok(false);
        }
        let trailer_at = len - trailer_len;
        let mut trailer = [0u8; TRAILER_LEN];
        file.read_exact_at(&mut trailer, trailer_at).map_err(io)?;
        let Some(footer_at) = decode_trailer(&trailer) else {
            return Ok(false);
        };
        if footer_at < first || footer_at > trailer_at - header_len {
            return Ok(false);
        }
        let mut raw = [0u8; BLOCK_HEADER_LEN];
        file.read_exact_at(&mut raw, footer_at).map_err(io)?;
        let Ok(header) = BlockHeader::decode(&raw) else {
            return Ok(false);
        };
        if header.kind != BlockKind::FOOTER || footer_at + header.block_len() != trailer_at {
            return Ok(false);
        }
        let Ok(payload_len) = usize::try_from(trailer_at - footer_at - header_len) else {
            return Ok(false);
        };
        let mut payload = vec![0; payload_len];
        file.read_exact_at(&mut payload, footer_at + header_len)
            .map_err(io)?;
        Ok(decode_payload(&header, &payload)
            .ok()
            .and_then(|p| postcard::from_bytes::<Footer>(&p).ok())
            .is_some())
    }
}

impl<R: Read> TraceReader<R> {
    /// Marks the input as one that may still grow (a follower's read of what a recorder
    /// appended): its end after a session's end is a footer not written yet, not a cut.
    pub fn growing(mut self) -> Self {
        self.growing = true;
        self
    }

    /// Reads and checks the file header.
    ///
    /// # Errors
    ///
    /// [`ReadErrorKind::Empty`], [`ReadErrorKind::TruncatedHeader`],
    /// [`ReadErrorKind::Format`] (bad magic, checksum, unreadable version),
    /// [`ReadErrorKind::Io`].
    pub fn new(src: R) -> Result<TraceReader<R>, ReadError> {
        let mut reader = TraceReader {
            src: BufReader::with_capacity(64 << 10, src),
            offset: 0,
            header: FileHeader::current(crate::format::Compression::None),
            warnings: Vec::new(),
            recovery: Recovery::default(),
            block: None,
            ahead: None,
            blocks_seen: 0,
            done: false,
            submissions: std::collections::BTreeMap::new(),
            ranges: std::collections::BTreeMap::new(),
            check_submissions: false,
            submissions_checked: false,
            being_recorded: false,
            end: u64::MAX,
            damaged: None,
            first_newer: None,
            sessions: 0,
            second_session: 0,
            session_ended: false,
            growing: false,
            before_block: (Recovery::default(), 0),
            previous: None,
            last_block: (0, Vec::new()),
        };
        let mut fixed = [0u8; FILE_HEADER_LEN];
        let n = reader.read_up_to(&mut fixed)?;
        reader.header = parse_header(&fixed[..n], &mut reader.warnings)?;
        let extra = u64::from(reader.header.header_len) - FILE_HEADER_LEN as u64;
        let skipped = reader.skip_bytes(extra)?;
        if skipped < extra {
            reader.tail(skipped);
        }
        Ok(reader)
    }

    /// Also checks, once the whole file is read, that each runtime's submission numbers run
    /// 1, 2, 3, ... without a gap, as the hrx runtime numbers them: a gap becomes a
    /// [`WarningKind::SubmissionsMissing`] and counts in [`Recovery::missing_submissions`]
    /// (a block lost whole, or records dropped). Likewise the session end's count of the
    /// records written before it: records neither read nor skipped become a
    /// [`WarningKind::RecordsMissing`] (blocks cut out where no footer lists them). In a
    /// trace never closed where nothing was damaged, a gap is the trace's end for the
    /// runtime ([`WarningKind::SubmissionsUnwritten`]): nothing in the format orders blocks,
    /// so blocks cut out of its middle read so too, unless a block summary is left without
    /// its records block ([`WarningKind::SummaryWithoutBlock`]). Off by
    /// default: the format itself allows any numbers and records anywhere (synthetic traces,
    /// tests); readers of runtime traces (`info`, `diff`, `replay`) turn it on.
    pub fn check_submission_numbers(mut self) -> Self {
        self.check_submissions = true;
        self
    }

    /// Says that a recorder was writing the trace when it was opened (the caller asked
    /// [`recorder_holds`](crate::recorder_holds)): a trace that does not end with its index is
    /// then one read as far as it was written, not one cut short, and readers that describe
    /// how it ends (an export's mark) say so. Off by default.
    pub fn being_recorded(mut self, live: bool) -> Self {
        self.being_recorded = live;
        self
    }

    /// Whether [`TraceReader::being_recorded`] said a recorder was writing the trace.
    pub fn is_being_recorded(&self) -> bool {
        self.being_recorded
    }

    /// Decodes records blocks on `threads` threads of their own, up to `threads + 2`
    /// blocks ahead of the records handed out (the reader's own thread only reads the file
    /// and hands blocks out): the same records, warnings and recovery, in the same order,
    /// as without. `0`, or threads that cannot be started: each block is decoded when it is
    /// reached (the default). What is held grows by up to `threads + 2` decoded blocks
    /// (a block is at most 1 MiB of frames as the recorder writes them).
    pub fn decode_ahead(mut self, threads: usize) -> Self {
        if threads > 0 && self.ahead.is_none() {
            self.ahead = ahead::Ahead::start(threads);
        }
        self
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Warnings so far.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// What was recovered so far (final once iteration has ended).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// What [`TraceReader::recovery`] was, and how many [`TraceReader::warnings`] there
    /// were, just before the records block or footer read last (the block of the latest
    /// record, while its records are handed out): what was counted and said before it. A
    /// follower that reads the file again from that block counts it and what follows it
    /// again, and only that (`stats --follow`, `view --follow`).
    pub fn before_block(&self) -> (Recovery, usize) {
        self.before_block
    }

    /// Marks the block about to be counted (see [`TraceReader::before_block`]).
    fn mark_block(&mut self) {
        self.before_block = (self.recovery, self.warnings.len());
    }

    /// Reads until `buf` is full or the input ends; returns the bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        let room = usize::try_from(self.end.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let len = room.min(buf.len());
        let buf = &mut buf[..len];
        let mut filled = 0;
        while filled < buf.len() {
            match self.src.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::new(self.offset + filled as u64, e)),
            }
        }
        self.offset += filled as u64;
        Ok(filled)
    }

    /// Reads up to `len` bytes, growing the buffer only as data arrives.
    fn read_payload(&mut self, len: u32) -> Result<Vec<u8>, ReadError> {
        const CHUNK: usize = 256 << 10;
        let len = len as usize;
        let mut out = Vec::with_capacity(len.min(CHUNK));
        while out.len() < len {
            let start = out.len();
            let step = (len - start).min(CHUNK);
            out.resize(start + step, 0);
            let n = self.read_up_to(&mut out[start..])?;
            out.truncate(start + n);
            if n < step {
                break;
            }
        }
        Ok(out)
    }

    fn skip_bytes(&mut self, len: u64) -> Result<u64, ReadError> {
        let len = len.min(self.end.saturating_sub(self.offset));
        let n = io::copy(&mut (&mut self.src).take(len), &mut io::sink())
            .map_err(|e| ReadError::new(self.offset, e))?;
        self.offset += n;
        Ok(n)
    }

    fn warn(&mut self, offset: u64, kind: WarningKind) {
        self.warnings.push(Warning { offset, kind });
    }

    /// The input ended inside a block: `bytes` before the current offset are discarded.
    fn tail(&mut self, bytes: u64) {
        self.recovery.bytes_discarded += bytes;
        self.warn(self.offset - bytes, WarningKind::TruncatedTail { bytes });
        self.done = true;
    }

    /// At the input's end without a footer: where the last session's end was read, its
    /// recorder closed the trace and only the file's end is missing (a copy cut short, a
    /// disk that filled as the footer was written): `closed`, its end damaged, said in a
    /// [`WarningKind::BadFooter`]. It read "never closed (killed or crashed)" where the
    /// trailer alone cut read "closed, but its end is damaged" (a break-it pass, session 58).
    /// Not where another trace was found joined on (its end is the cut's).
    fn ended_without_footer(&mut self) {
        let joined =
            (self.warnings.iter()).any(|w| matches!(w.kind, WarningKind::AnotherTrace { .. }));
        if self.session_ended && !self.recovery.closed && !self.growing && !joined {
            self.session_ended = false;
            self.recovery.closed = true;
            let reason = FOOTER_MISSING.to_owned();
            self.warn(self.offset, WarningKind::BadFooter { reason });
        }
    }

    /// Reads the next block (a records block becomes `block`); sets `done` at the end of
    /// the input.
    fn next_block(&mut self) -> Result<(), ReadError> {
        let at = self.offset;
        let mut raw = [0u8; BLOCK_HEADER_LEN];
        let n = self.read_up_to(&mut raw)?;
        if n == 0 {
            self.done = true;
            return Ok(());
        }
        if n < BLOCK_HEADER_LEN {
            return self.short_header(&raw[..n]);
        }
        self.block_from_header(at, raw)
    }

    /// The input ends with `raw`, shorter than a block header, read just before the offset.
    fn short_header(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        let at = self.offset - raw.len() as u64;
        if self.joined_after_damage(at, raw)? || self.joined_across_block_end(at, raw)? {
            return Ok(());
        }
        self.tail(raw.len() as u64);
        Ok(())
    }

    /// Whether another trace's file header starts in the last bytes of the block read last
    /// and runs on into `raw`, read at `at` just after it, where no block header decodes:
    /// the bytes a cut took off this trace were the other's first (a payload ending in `H`,
    /// the magic's first byte, one in 256), so the block reads whole. This trace ends with
    /// it, and the rest is said as the other's, from its header on.
    fn joined_across_block_end(&mut self, at: u64, raw: &[u8]) -> Result<bool, ReadError> {
        let (end, tail) = &self.last_block;
        if *end != at {
            return Ok(false);
        }
        let bytes = [&tail[..], raw].concat();
        let Some(p) = file_header_in(&bytes).filter(|&p| p < tail.len()) else {
            return Ok(false);
        };
        let header_at = at - (tail.len() - p) as u64;
        self.another_trace(at, header_at)?;
        Ok(true)
    }

    /// Whether the block skipped last was the torn end of a trace joined to another: its
    /// payload's last bytes and `raw`, read at `at` just after it, hold a file header that
    /// starts before `at`. Then the skip is taken back and the trace ends there.
    fn joined_after_damage(&mut self, at: u64, raw: &[u8]) -> Result<bool, ReadError> {
        let Some(damaged) = self.damaged.take() else {
            return Ok(false);
        };
        if damaged.tail_at + damaged.tail.len() as u64 != at {
            return Ok(false);
        }
        let bytes = [&damaged.tail[..], raw].concat();
        let found = match damaged.inside {
            // A block follows: the trace inside was the payload's contents, and the block
            // is damaged.
            Some(_)
                if raw
                    .first_chunk()
                    .is_some_and(|h| BlockHeader::decode(h).is_ok()) =>
            {
                None
            }
            Some(inside) => Some(inside),
            None => file_header_in(&bytes)
                .filter(|&p| p < damaged.tail.len())
                .map(|p| damaged.tail_at + p as u64),
        };
        match found {
            Some(header_at) => {
                // The block was a torn tail, not damage: its skip is taken back.
                self.recovery.skipped_blocks -= 1;
                self.recovery.skipped_records -= u64::from(damaged.records);
                if let Some(i) = self.warnings.iter().rposition(|w| {
                    w.offset == damaged.at && matches!(w.kind, WarningKind::BlockSkipped { .. })
                }) {
                    self.warnings.remove(i);
                }
                self.another_trace(damaged.at, header_at)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Another trace's file header starts at `header_at`, found in bytes taken for damage
    /// from `at` on (two files joined, the first cut short): the trace ends at its cut, `at`,
    /// as a trace cut there would (a torn tail), and the rest of the input, from that
    /// header, is the other trace's: not read, said. A header before `at` began in the last
    /// bytes of a block read whole, which are not counted as discarded.
    fn another_trace(&mut self, at: u64, header_at: u64) -> Result<(), ReadError> {
        if header_at > at {
            let bytes = header_at - at;
            self.recovery.bytes_discarded += bytes;
            self.warn(at, WarningKind::TruncatedTail { bytes });
        }
        self.skip_bytes(u64::MAX)?;
        let bytes = self.offset - header_at;
        self.recovery.bytes_discarded += self.offset - header_at.max(at);
        self.warn(header_at, WarningKind::AnotherTrace { bytes });
        self.block = None;
        self.done = true;
        Ok(())
    }

    /// The input ends inside the payload of the block at `at` of `header`, `stored` read of
    /// it: a torn tail, or where another trace was joined on, if its header starts in the
    /// block's.
    fn torn_payload(
        &mut self,
        at: u64,
        header: &BlockHeader,
        stored: &[u8],
    ) -> Result<(), ReadError> {
        let found = file_header_in_block_header(header, stored)
            .or_else(|| file_header_in(stored).map(|p| BLOCK_HEADER_LEN + p));
        if let Some(p) = found {
            return self.another_trace(at, at + p as u64);
        }
        self.tail(BLOCK_HEADER_LEN as u64 + stored.len() as u64);
        Ok(())
    }

    /// A block whose payload, read at `at`, does not verify: skipped, unless the payload
    /// holds another trace's file header (`remains`: the trace was cut there, and the other
    /// joined after it).
    fn damaged_block(
        &mut self,
        at: u64,
        records: u32,
        error: FormatError,
        remains: Option<Remains>,
    ) -> Result<(), ReadError> {
        let payload_at = at + BLOCK_HEADER_LEN as u64;
        if let Some(p) = remains.as_ref().and_then(|r| r.header) {
            return self.another_trace(at, at + p as u64);
        }
        self.skip_block(at, records, error);
        if let Some(r) = remains {
            self.damaged = Some(Damaged {
                at,
                inside: r.inside.map(|p| payload_at + p as u64),
                records,
                tail_at: payload_at + r.len as u64 - r.tail.len() as u64,
                tail: r.tail,
            });
        }
        Ok(())
    }

    /// [`TraceReader::next_block`] once the header `raw`, read at `at`, is read.
    fn block_from_header(&mut self, at: u64, raw: [u8; BLOCK_HEADER_LEN]) -> Result<(), ReadError> {
        if self.joined_after_damage(at, &raw)? {
            return Ok(());
        }
        let header = match BlockHeader::decode(&raw) {
            Ok(header) => header,
            Err(_) if raw.starts_with(&crate::format::MAGIC) => {
                let bytes = raw.len() as u64 + self.skip_bytes(u64::MAX)?;
                self.recovery.bytes_discarded += bytes;
                self.warn(at, WarningKind::AnotherTrace { bytes });
                self.done = true;
                return Ok(());
            }
            Err(error) => {
                if self.joined_across_block_end(at, &raw)? {
                    return Ok(());
                }
                match self.resynchronize(at, raw, error)? {
                    // What the skipped bytes held is unknown: taken for a records block.
                    Some(header) => {
                        self.previous = Some(BlockKind::RECORDS);
                        header
                    }
                    None => return Ok(()),
                }
            }
        };
        let previous = self.previous.replace(header.kind);
        let at = self.offset - BLOCK_HEADER_LEN as u64;
        let stored = self.read_payload(header.stored_len)?;
        if stored.len() < header.stored_len as usize {
            return self.torn_payload(at, &header, &stored);
        }
        self.last_block = (self.offset, block_tail(&header, &stored));
        self.blocks_seen += 1;
        match header.kind {
            BlockKind::RECORDS => self.records_block(at, &header, stored)?,
            BlockKind::FOOTER => {
                // A footer cut short and another trace joined on: its header or payload
                // holds the other's header.
                if header.checksum != xxhash_rust::xxh3::xxh3_64(&stored)
                    && let Some(p) = file_header_in_block_header(&header, &stored)
                        .or_else(|| file_header_in(&stored).map(|p| BLOCK_HEADER_LEN + p))
                {
                    return self.another_trace(at, at + p as u64);
                }
                self.footer_block(at, &header, &stored)?
            }
            // Read by `crate::summary::read_summaries`; nothing for a record stream, but
            // a block the writer wrote and reported, so counted when intact, and said when
            // damaged (it was left out without a word: the trace read as closed cleanly).
            BlockKind::SUMMARY => match decode_payload(&header, &stored) {
                Ok(_) => {
                    self.recovery.complete_blocks += 1;
                    // First, or after another summary: the records block it counts is gone.
                    if matches!(previous, None | Some(BlockKind::SUMMARY)) {
                        self.recovery.skipped_blocks += 1;
                        self.warn(at, WarningKind::SummaryWithoutBlock);
                    }
                }
                Err(error) => {
                    let remains = Remains::of(&header, &stored, &error);
                    self.damaged_block(at, 0, error, remains)?;
                }
            },
            kind => self.warn(
                at,
                WarningKind::UnknownBlockKind {
                    kind,
                    len: header.block_len(),
                },
            ),
        }
        Ok(())
    }

    /// Slides a 32-byte window forward from a damaged header at `at` until it holds a valid
    /// block header; `None` (and `done`) when the input ends first.
    fn resynchronize(
        &mut self,
        at: u64,
        mut window: [u8; BLOCK_HEADER_LEN],
        error: FormatError,
    ) -> Result<Option<BlockHeader>, ReadError> {
        let mut byte = [0u8; 1];
        let first = crate::format::BLOCK_MARKER[0];
        // Bytes since a marker's first byte last entered the window's end: past
        // `BLOCK_HEADER_LEN - 2`, none is in the window but (checked) at its start.
        let mut since = match window[1..].iter().rposition(|&b| b == first) {
            Some(i) => BLOCK_HEADER_LEN - 2 - i,
            None => BLOCK_HEADER_LEN,
        };
        loop {
            // No marker can start in the window but at its first byte (already checked):
            // the bytes up to the next possible marker start are skipped at once (a
            // zero-filled tail was scanned a byte a read, at 40 MB/s).
            if since > BLOCK_HEADER_LEN - 2 {
                since = since.saturating_add(self.skip_to(first, &mut window)?);
            }
            if self.read_up_to(&mut byte)? == 0 {
                if decode_trailer(&window[BLOCK_HEADER_LEN - TRAILER_LEN..]) == Some(at) {
                    // The file ends with a trailer pointing here: the footer's header is
                    // damaged, and the trace was closed.
                    self.recovery.closed = true;
                    self.recovery.bytes_discarded += self.offset - at;
                    let reason = format!("its block header is damaged ({error})");
                    self.warn(at, WarningKind::BadFooter { reason });
                    self.done = true;
                } else {
                    self.tail(self.offset - at);
                }
                return Ok(None);
            }
            window.copy_within(1.., 0);
            window[BLOCK_HEADER_LEN - 1] = byte[0];
            since = if byte[0] == first { 0 } else { since + 1 };
            // Another trace's header among the damaged bytes (two files joined, the first
            // cut short): the trace ends at its cut. The magic starts with the marker's
            // first byte, so the window holds each place one may start, whole.
            if window.starts_with(&MAGIC) && file_header_in(&window) == Some(0) {
                let header_at = self.offset - BLOCK_HEADER_LEN as u64;
                // Past the damaged header's own bytes: a trace file held in the damaged
                // block's payload (a buffer's contents), whose blocks are skipped with it,
                // unless they run to the end of the input (another trace joined on).
                if header_at - at >= BLOCK_HEADER_LEN as u64
                    && let Some(end) = self.skip_trace_blocks()?
                {
                    window = end;
                    since = match window[1..].iter().rposition(|&b| b == first) {
                        Some(i) => BLOCK_HEADER_LEN - 2 - i,
                        None => BLOCK_HEADER_LEN,
                    };
                    continue;
                }
                self.another_trace(at, header_at)?;
                return Ok(None);
            }
            if window[..4] != crate::format::BLOCK_MARKER {
                continue;
            }
            if let Ok(header) = BlockHeader::decode(&window) {
                let skipped_bytes = self.offset - BLOCK_HEADER_LEN as u64 - at;
                self.recovery.bytes_discarded += skipped_bytes;
                self.recovery.skipped_blocks += 1;
                self.warn(
                    at,
                    WarningKind::Resynchronized {
                        skipped_bytes,
                        error,
                    },
                );
                return Ok(Some(header));
            }
        }
    }

    /// Skips the blocks of the trace whose file header was just read: each block header that
    /// decodes and its payload. Returns the 32 bytes read after them, which are no block
    /// header; `None` when the input ends first (that trace ran to the end: another one
    /// joined on).
    fn skip_trace_blocks(&mut self) -> Result<Option<[u8; BLOCK_HEADER_LEN]>, ReadError> {
        loop {
            let mut raw = [0u8; BLOCK_HEADER_LEN];
            if self.read_up_to(&mut raw)? < BLOCK_HEADER_LEN {
                return Ok(None);
            }
            match BlockHeader::decode(&raw) {
                Ok(header) => {
                    let len = u64::from(header.stored_len);
                    if self.skip_bytes(len)? < len {
                        return Ok(None);
                    }
                }
                Err(_) => return Ok(Some(raw)),
            }
        }
    }

    /// Consumes the buffered bytes before the next `byte` (all of them when none is
    /// buffered), keeping in `window` the last bytes consumed, as reading them one at a
    /// time would; returns how many it consumed.
    fn skip_to(
        &mut self,
        byte: u8,
        window: &mut [u8; BLOCK_HEADER_LEN],
    ) -> Result<usize, ReadError> {
        let room = usize::try_from(self.end.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let buf = loop {
            match self.src.fill_buf() {
                Ok(buf) => break &buf[..room.min(buf.len())],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::new(self.offset, e)),
            }
        };
        let n = buf.iter().position(|&b| b == byte).unwrap_or(buf.len());
        if n >= BLOCK_HEADER_LEN {
            window.copy_from_slice(&buf[n - BLOCK_HEADER_LEN..n]);
        } else if n > 0 {
            window.copy_within(n.., 0);
            window[BLOCK_HEADER_LEN - n..].copy_from_slice(&buf[..n]);
        }
        self.src.consume(n);
        self.offset += n as u64;
        Ok(n)
    }

    /// Verifies a records block and makes it the current block. Its records are decoded one
    /// at a time by `next`, so a reader holds one block's payload and one record, never a
    /// block's worth of decoded records (up to 40 times the payload's size).
    fn records_block(
        &mut self,
        at: u64,
        header: &BlockHeader,
        stored: Vec<u8>,
    ) -> Result<(), ReadError> {
        let decompressed = match decode_payload(header, &stored) {
            Ok(Cow::Owned(payload)) => Some(payload),
            Ok(Cow::Borrowed(_)) => None,
            Err(error) => {
                let remains = Remains::of(header, &stored, &error);
                return self.damaged_block(at, header.record_count, error, remains);
            }
        };
        self.mark_block();
        self.recovery.complete_blocks += 1;
        let payload = decompressed.unwrap_or(stored);
        self.block = Some((
            at,
            Current::Decoder(BlockDecoder::new(
                Cow::Owned(payload),
                header.record_count,
                is_newer_minor(self.header.version),
            )),
        ));
        Ok(())
    }

    /// A records block whose payload does not verify or decompress: skipped whole.
    fn skip_block(&mut self, at: u64, records: u32, error: FormatError) {
        self.recovery.skipped_blocks += 1;
        self.recovery.skipped_records += u64::from(records);
        self.warn(at, WarningKind::BlockSkipped { records, error });
    }

    /// The next record of the current block, or `None` once it is finished (its warnings
    /// then reported).
    fn next_in_block(&mut self) -> Option<(u64, Record)> {
        let (at, block) = self.block.as_mut()?;
        let at = *at;
        loop {
            match block.next_record() {
                Some(Ok(record)) => {
                    self.recovery.records += 1;
                    self.recovery.observe(&record);
                    // The recorder writes nothing after a session's end but the footer.
                    self.session_ended = matches!(record, Record::SessionEnd(_));
                    if let Record::SessionStart(_) = record {
                        self.sessions += 1;
                        if self.sessions == 2 {
                            self.second_session = at;
                        }
                    }
                    if let Record::SessionEnd(end) = &record
                        && self.check_submissions
                    {
                        // Every record the recorder wrote before the end was read or
                        // counted as skipped; what is neither went with a block cut out.
                        let found = self.recovery.records - 1;
                        // Saturating: a crafted end record may claim any count.
                        let accounted = found.saturating_add(self.recovery.skipped_records);
                        if end.records > accounted {
                            let missing = end.records - accounted;
                            self.recovery.skipped_records =
                                self.recovery.skipped_records.saturating_add(missing);
                            self.warnings.push(Warning {
                                offset: at,
                                kind: WarningKind::RecordsMissing {
                                    declared: end.records,
                                    found,
                                    missing,
                                },
                            });
                        }
                    }
                    return Some((at, record));
                }
                Some(Err(Skip::Damaged(kind))) => {
                    self.recovery.skipped_records += 1;
                    if let Some(kind) = kind {
                        self.warnings.push(Warning { offset: at, kind });
                    }
                }
                Some(Err(Skip::Newer)) => {
                    self.recovery.newer_records += 1;
                    self.first_newer.get_or_insert(at);
                }
                None => break,
            }
        }
        let (_, block) = self.block.take()?;
        for kind in block.finish() {
            self.warn(at, kind);
        }
        None
    }

    fn footer_block(
        &mut self,
        at: u64,
        header: &BlockHeader,
        stored: &[u8],
    ) -> Result<(), ReadError> {
        self.mark_block();
        self.recovery.closed = true;
        let footer = decode_payload(header, stored).and_then(|payload| {
            postcard::from_bytes::<Footer>(&payload).map_err(FormatError::Record)
        });
        let mut intact = true;
        match footer {
            Ok(footer) => {
                self.recovery.complete_blocks += 1;
                let listed = footer.blocks.len() as u64;
                let found = self.blocks_seen - 1;
                if listed > found && self.recovery.skipped_blocks == 0 {
                    // Nothing damaged was skipped, yet blocks are gone: cut out whole.
                    let blocks = listed - found;
                    let records = footer.records.saturating_sub(self.recovery.records);
                    self.recovery.skipped_blocks += blocks;
                    // Less what the session end already counted as missing.
                    self.recovery.skipped_records += footer.records.saturating_sub(
                        self.recovery
                            .records
                            .saturating_add(self.recovery.skipped_records),
                    );
                    self.warn(at, WarningKind::MissingBlocks { blocks, records });
                    intact = false;
                } else if footer.blocks.len() as u64 + 1 != self.blocks_seen {
                    let reason = format!(
                        "it lists {} blocks, {} were found before it",
                        footer.blocks.len(),
                        self.blocks_seen - 1
                    );
                    self.warn(at, WarningKind::BadFooter { reason });
                    intact = false;
                }
            }
            Err(error) => {
                let reason = format!("the footer is damaged ({error})");
                self.warn(at, WarningKind::BadFooter { reason });
                intact = false;
            }
        }
        // The trailer, then the end of the file.
        let mut trailer = [0u8; TRAILER_LEN];
        let n = self.read_up_to(&mut trailer)?;
        self.done = true;
        let ours = n == TRAILER_LEN && decode_trailer(&trailer) == Some(at);
        // Not this trace's trailer: perhaps another trace joined on where this one was cut,
        // in its footer or its trailer. The bytes a header begun there would end:
        let mut more = [0u8; FILE_HEADER_LEN - 1];
        let m = match ours || n < TRAILER_LEN {
            true => 0,
            false => self.read_up_to(&mut more)?,
        };
        if !ours {
            let damaged = header.checksum != xxhash_rust::xxh3::xxh3_64(stored);
            let tail = block_tail(header, stored);
            let window = [&tail[..], &trailer[..n], &more[..m]].concat();
            let starts = tail.len() + n;
            if let Some(p) = file_header_in(&window).filter(|&p| p < starts) {
                let tail_at = at + header.block_len() - tail.len() as u64;
                return self.ended_before_another(at, header, damaged, tail_at + p as u64);
            }
        }
        if n == 0 {
            let reason = "the trailer is missing".to_owned();
            self.warn(self.offset, WarningKind::BadFooter { reason });
            return Ok(());
        }
        if !ours {
            let rest = self.skip_bytes(u64::MAX)?;
            let bytes = (n + m) as u64 + rest;
            self.recovery.bytes_discarded += bytes;
            let reason = format!("the trailer is damaged ({bytes} bytes after the footer)");
            self.warn(self.offset - bytes, WarningKind::BadFooter { reason });
            return Ok(());
        }
        // Another trace appended to this whole one (`cat whole.hrxt other.hrxt`)?
        let rest_at = self.offset;
        let mut next = [0u8; FILE_HEADER_LEN];
        let k = self.read_up_to(&mut next)?;
        if file_header_in(&next[..k]) == Some(0) {
            return self.another_trace(rest_at, rest_at);
        }
        let rest = k as u64 + self.skip_bytes(u64::MAX)?;
        if rest > 0 {
            self.recovery.bytes_discarded += rest;
            self.warn(rest_at, WarningKind::TrailingData { bytes: rest });
        } else {
            self.recovery.clean_close = intact;
        }
        Ok(())
    }
}

impl<R: Read> TraceReader<R> {
    /// Another trace's file header starts at `header_at`, in the last bytes of the footer at
    /// `at` or in its trailer: this trace was cut there and the other joined on. It ends as
    /// the cut alone reads, then the rest is said as the other trace's: cut in the footer
    /// (`damaged`: its payload did not verify), a torn tail (not closed); cut in the
    /// trailer, a damaged (or missing) trailer. A footer that verified though the header
    /// starts in its last bytes is whole: the bytes the cut took were the other's first.
    fn ended_before_another(
        &mut self,
        at: u64,
        header: &BlockHeader,
        damaged: bool,
        header_at: u64,
    ) -> Result<(), ReadError> {
        let footer_end = at + header.block_len();
        if header_at < footer_end && damaged {
            // Not a damaged footer: a torn one, so the trace was not closed.
            self.recovery.closed = false;
            if let Some(i) = self
                .warnings
                .iter()
                .rposition(|w| w.offset == at && matches!(w.kind, WarningKind::BadFooter { .. }))
            {
                self.warnings.remove(i);
            }
            return self.another_trace(at, header_at);
        }
        let bytes = header_at.saturating_sub(footer_end);
        let reason = match bytes {
            0 => "the trailer is missing".to_owned(),
            _ => format!("the trailer is damaged ({bytes} bytes after the footer)"),
        };
        self.recovery.bytes_discarded += bytes;
        self.warn(footer_end, WarningKind::BadFooter { reason });
        self.another_trace(header_at.max(footer_end), header_at)
    }
}

/// Undecodable records of one block listed one by one; the rest are counted (a crafted
/// block of zero bytes would otherwise become millions of warnings).
const LISTED_SKIPS: u32 = 8;

/// The records block being read: decoded one record at a time, or decoded whole ahead.
enum Current {
    Decoder(BlockDecoder<'static>),
    Decoded(ahead::Decoded),
}

impl Current {
    fn next_record(&mut self) -> Option<ahead::Item> {
        match self {
            Current::Decoder(block) => block.next_record(),
            Current::Decoded(block) => block.next_record(),
        }
    }

    fn finish(self) -> Vec<WarningKind> {
        match self {
            Current::Decoder(block) => block.finish(),
            Current::Decoded(block) => block.finish(),
        }
    }
}

/// Why a record of a verified block was not handed out.
#[derive(Debug)]
pub(crate) enum Skip {
    /// It does not decode: damage, with its warning for the first [`LISTED_SKIPS`] of the
    /// block.
    Damaged(Option<WarningKind>),
    /// Its body does not decode, in a file of a newer minor version: a record this reader
    /// cannot decode (a variant or a timing form added since), not damage.
    Newer,
}

/// Decodes the records of one verified payload, one at a time.
struct BlockDecoder<'a> {
    payload: Cow<'a, [u8]>,
    /// Offset of the next frame in `payload`.
    pos: usize,
    decoder: FrameDecoder,
    declared: u32,
    found: u32,
    skipped: u32,
    /// Whether the file is of a newer minor version than this reader's.
    newer: bool,
    /// Records skipped as [`Skip::Newer`].
    newer_skipped: u32,
}

impl<'a> BlockDecoder<'a> {
    /// A decoder of `payload`, a block declaring `declared` records in a file of a newer minor
    /// version than this reader's if `newer`.
    fn new(payload: Cow<'a, [u8]>, declared: u32, newer: bool) -> BlockDecoder<'a> {
        BlockDecoder {
            payload,
            pos: 0,
            decoder: FrameDecoder::new(),
            declared,
            found: 0,
            skipped: 0,
            newer,
            newer_skipped: 0,
        }
    }

    /// The next record; `Err` for one that does not decode: [`Skip::Newer`] for a body that
    /// does not decode in a file of a newer minor (its frame is whole: the block verified),
    /// else [`Skip::Damaged`] with its warning for the first [`LISTED_SKIPS`] of the block
    /// (the rest are counted by `finish`); `None` at the end.
    fn next_record(&mut self) -> Option<Result<Record, Skip>> {
        let at = self.pos;
        let rest = self.payload.get(at..).filter(|rest| !rest.is_empty())?;
        // As `Frames`: a varint length, then the body; a malformed frame ends the block.
        let frame = read_varint_u32(rest).and_then(|(len, n)| {
            let end = n.checked_add(len as usize)?;
            (end <= rest.len()).then_some((n, end))
        });
        let index = self.found;
        self.found = self.found.saturating_add(1);
        let decoded = match frame {
            Some((n, end)) => {
                self.pos = at + end;
                self.decoder.decode(&self.payload[at + n..at + end])
            }
            None => {
                self.pos = self.payload.len();
                Err(FormatError::Frame { at })
            }
        };
        Some(decoded.map_err(|error| {
            // A blob whose bytes are not its hash, or a broken frame, is damage in any
            // version; a body that does not decode may be a newer minor's.
            if self.newer && matches!(error, FormatError::Record(_) | FormatError::Timing) {
                self.newer_skipped = self.newer_skipped.saturating_add(1);
                return Skip::Newer;
            }
            self.skipped = self.skipped.saturating_add(1);
            Skip::Damaged(
                (self.skipped <= LISTED_SKIPS)
                    .then_some(WarningKind::RecordSkipped { index, error }),
            )
        }))
    }

    /// The block's closing warnings: skipped records beyond those listed, a count that
    /// differs from the declared one.
    fn finish(self) -> Vec<WarningKind> {
        let mut warnings = Vec::new();
        if self.skipped > LISTED_SKIPS {
            warnings.push(WarningKind::MoreRecordsSkipped {
                count: self.skipped - LISTED_SKIPS,
            });
        }
        if self.found != self.declared {
            warnings.push(WarningKind::RecordCount {
                declared: self.declared,
                found: self.found,
            });
        }
        warnings
    }
}

/// Decodes a records payload of a file of version `version`; undecodable records and count
/// mismatches become warnings (records of a newer minor this reader cannot decode, one for
/// the block).
fn decode_records(
    payload: Cow<'_, [u8]>,
    declared: u32,
    version: FormatVersion,
) -> (Vec<Record>, Vec<WarningKind>) {
    // The declared count is untrusted: reserve no more than a small, fixed amount up front.
    let mut records = Vec::with_capacity((declared as usize).min(payload.len() / 4).min(4096));
    let mut warnings = Vec::new();
    let mut block = BlockDecoder::new(payload, declared, is_newer_minor(version));
    while let Some(next) = block.next_record() {
        match next {
            Ok(record) => records.push(record),
            Err(Skip::Damaged(warning)) => warnings.extend(warning),
            Err(Skip::Newer) => {}
        }
    }
    if block.newer_skipped > 0 {
        warnings.push(WarningKind::NewerRecords {
            records: block.newer_skipped.into(),
            version,
        });
    }
    warnings.extend(block.finish());
    (records, warnings)
}

/// Whether a file of `version` is of a newer minor than this reader's (a readable one).
fn is_newer_minor(version: FormatVersion) -> bool {
    version.check_readable_by(FormatVersion::CURRENT) == Ok(Compatibility::NewerMinor)
}

impl<R: Read> TraceReader<R> {
    /// At the end, once: what is said of the whole file rather than of a block (records of a
    /// newer minor this reader cannot decode, sessions after the first).
    fn say_the_whole_file(&mut self) {
        if let Some(at) = self.first_newer.take() {
            let kind = WarningKind::NewerRecords {
                records: self.recovery.newer_records,
                version: self.header.version,
            };
            self.warn(at, kind);
        }
        if self.sessions > 1 {
            let sessions = std::mem::take(&mut self.sessions);
            self.warn(self.second_session, WarningKind::Sessions { sessions });
        }
    }

    /// At the end: a runtime numbers its submissions 1, 2, 3, ..., so fewer submits than its
    /// highest number means some are missing (a duplicated submit would hide one; none is
    /// ever written twice).
    ///
    /// Missing from the middle, or past where the trace ends? A recording writes each
    /// thread's records in order, a buffer at a time, and closing it writes every buffer:
    /// a closed trace lacks a `Submit` only where records were lost (lossy mode, a write
    /// error: its `RecordsLost` says so) or damaged since (skipped blocks or records, blocks
    /// its footer or session end counts that are gone). A trace never closed (killed,
    /// crashed, cut with `head -c`, still being written) lacks besides each submitting
    /// thread's last records, those still in its buffer or in the torn last block when it
    /// ended, while another thread's later submissions, written before, are in the file.
    /// So in a trace that was not closed and where nothing was damaged, skipped or lost,
    /// the numbers a runtime lacks are its threads' unwritten tails: the trace ends for it
    /// before the lowest one ([`WarningKind::SubmissionsUnwritten`]). Anywhere else they
    /// are missing ([`WarningKind::SubmissionsMissing`]): replay refuses such a gap (later
    /// submissions read what the missing ones wrote), and readers say it as damage.
    ///
    /// Whole blocks cut out of the middle of a trace never closed are told from unwritten
    /// tails only where a block summary is left without its records block
    /// ([`WarningKind::SummaryWithoutBlock`], a skipped block: the gap is then missing).
    /// Nothing else in the format orders blocks: block headers carry no sequence number,
    /// records no thread or per-thread counter, summaries no offsets or counts of the
    /// blocks before them, and what counts blocks and records (the footer, the session
    /// end) is written at the close. A records block cut out with its summary, or one with
    /// no summary after it (no timing placed while it was written), leaves the gap read as
    /// the trace's end for that runtime; telling them apart would take a format change (a
    /// block sequence number in the header, say).
    fn check_submissions(&mut self) {
        if std::mem::replace(&mut self.submissions_checked, true) {
            return;
        }
        let r = &self.recovery;
        let ends_early = !r.closed
            && r.skipped_blocks == 0
            && r.skipped_records == 0
            && r.lost.is_none()
            && !r.source_incomplete;
        let submissions = std::mem::take(&mut self.submissions);
        let ranges = std::mem::take(&mut self.ranges);
        for (runtime, seen) in submissions {
            let last = seen.last;
            // A range's trace holds only the numbers its ranges cover (up to the last seen).
            let expected: Vec<(u64, u64)> = match ranges.get(&runtime) {
                Some(ranges) => ranges
                    .iter()
                    .map(|(&start, &end)| {
                        (start, end.unwrap_or(u64::MAX).min(last.saturating_add(1)))
                    })
                    .collect(),
                None => vec![(1, last.saturating_add(1))],
            };
            let expected_count = (expected.iter())
                .map(|&(start, end)| end.saturating_sub(start))
                .fold(0u64, u64::saturating_add);
            if seen.count >= expected_count {
                continue;
            }
            let missing = expected_count - seen.count;
            let first = if ends_early {
                (expected.iter())
                    .filter_map(|&(start, end)| seen.first_lacking(start, end))
                    .min()
            } else {
                None
            };
            let kind = match first {
                Some(first) => {
                    self.recovery.unwritten_submissions =
                        self.recovery.unwritten_submissions.saturating_add(missing);
                    WarningKind::SubmissionsUnwritten {
                        runtime,
                        first,
                        missing,
                        past: seen.held_from(first),
                        last,
                    }
                }
                None => {
                    self.recovery.missing_submissions =
                        self.recovery.missing_submissions.saturating_add(missing);
                    WarningKind::SubmissionsMissing {
                        runtime,
                        missing,
                        last,
                    }
                }
            };
            self.warn(self.offset, kind);
        }
    }
}

/// A runtime's submission numbers read, as maximal runs `start -> end` (inclusive): a run
/// a gap, so few where numbers come in order (threads' submits interleave only by the
/// blocks they were flushed in). Past [`Numbers::MAX_RUNS`] gaps the runs are dropped and
/// only the count and the highest number kept: the lowest number lacking is then unknown.
#[derive(Debug, Default)]
struct Numbers {
    /// The highest number read.
    last: u64,
    /// Submits read.
    count: u64,
    runs: std::collections::BTreeMap<u64, u64>,
    /// Too many gaps to keep the runs.
    overflow: bool,
}

impl Numbers {
    const MAX_RUNS: usize = 1 << 16;

    fn insert(&mut self, n: u64) {
        self.last = self.last.max(n);
        self.count = self.count.saturating_add(1);
        if self.overflow {
            return;
        }
        let below = self.runs.range(..=n).next_back().map(|(&s, &e)| (s, e));
        let above = (n < u64::MAX)
            .then(|| self.runs.get(&(n + 1)).copied())
            .flatten();
        match (below, above) {
            (Some((_, end)), _) if n <= end => {}
            (Some((start, end)), Some(above_end)) if end + 1 == n => {
                self.runs.remove(&(n + 1));
                self.runs.insert(start, above_end);
            }
            (Some((start, end)), None) if end + 1 == n => {
                self.runs.insert(start, n);
            }
            (_, Some(above_end)) => {
                self.runs.remove(&(n + 1));
                self.runs.insert(n, above_end);
            }
            _ if self.runs.len() >= Self::MAX_RUNS => {
                self.overflow = true;
                self.runs = std::collections::BTreeMap::new();
            }
            _ => {
                self.runs.insert(n, n);
            }
        }
    }

    /// The lowest number in `start..end` not read; `None` when every one was (or, past
    /// too many gaps, when that is not known).
    fn first_lacking(&self, start: u64, end: u64) -> Option<u64> {
        if self.overflow || start >= end {
            return None;
        }
        let first = match self.runs.range(..=start).next_back() {
            Some((_, &run_end)) if run_end >= start => run_end.checked_add(1)?,
            _ => start,
        };
        (first < end).then_some(first)
    }

    /// Numbers read from `first` on.
    fn held_from(&self, first: u64) -> u64 {
        (self.runs.range(first..))
            .map(|(&start, &end)| end - start + 1)
            .fold(0u64, u64::saturating_add)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<(u64, Record), ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.next_in_block() {
                match (self.check_submissions, &item) {
                    (true, (_, Record::Submit(submit))) => {
                        let seen = self.submissions.entry(submit.runtime.0).or_default();
                        seen.insert(submit.submission.0);
                    }
                    (true, (_, Record::TraceRange(range))) => {
                        let ranges = self.ranges.entry(range.runtime.0).or_default();
                        // The record that closes a range restates its start.
                        if ranges.len() < 4096 || ranges.contains_key(&range.start.0) {
                            ranges.insert(range.start.0, range.end.map(|e| e.0));
                        }
                    }
                    _ => {}
                }
                return Some(Ok(item));
            }
            if self.done {
                self.ended_without_footer();
                self.check_submissions();
                self.say_the_whole_file();
                return None;
            }
            let step = if self.ahead.is_some() {
                self.step_ahead()
            } else {
                self.next_block()
            };
            if let Err(e) = step {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

/// A whole trace in memory.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file header.
    pub header: FileHeader,
    /// Every record read, in file order.
    pub records: Vec<Record>,
    /// What was skipped or suspicious.
    pub warnings: Vec<Warning>,
    /// How much was read back.
    pub recovery: Recovery,
}

impl Trace {
    /// Reads a whole trace from `src`.
    ///
    /// # Errors
    ///
    /// See [`TraceReader::new`]; [`ReadErrorKind::Io`] for a read error mid-file.
    pub fn from_reader(src: impl Read) -> Result<Trace, ReadError> {
        Trace::read_whole(TraceReader::new(src)?)
    }

    /// Reads the rest of `reader` (set up as wanted, e.g.
    /// [`TraceReader::check_submission_numbers`]) into memory.
    ///
    /// # Errors
    ///
    /// [`ReadErrorKind::Io`] for a read error mid-file.
    pub fn read_whole<R: Read>(mut reader: TraceReader<R>) -> Result<Trace, ReadError> {
        let records = reader
            .by_ref()
            .map(|item| item.map(|(_, record)| record))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Trace {
            header: reader.header,
            records,
            warnings: reader.warnings,
            recovery: reader.recovery,
        })
    }

    /// Reads a whole trace from bytes in memory.
    ///
    /// # Errors
    ///
    /// See [`TraceReader::new`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, ReadError> {
        Trace::from_reader(bytes)
    }

    /// Every blob, by hash.
    pub fn blobs(&self) -> HashMap<BlobHash, &[u8]> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Blob(blob) => Some((blob.hash, &blob.bytes[..])),
                _ => None,
            })
            .collect()
    }
}

/// Reads the whole trace at `path`.
///
/// # Errors
///
/// See [`TraceReader::open`] and [`Trace::from_reader`].
pub fn read_all(path: impl AsRef<Path>) -> Result<Trace, ReadError> {
    let file = open_file(path.as_ref())?;
    Trace::from_reader(file)
}

/// Where a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// File offset of its header.
    pub offset: u64,
    /// Its header.
    pub header: BlockHeader,
}

/// The records of one block, read by [`MappedTrace::read_block`].
#[derive(Clone, Debug, Default)]
pub struct BlockRecords {
    /// The records that decoded, in order.
    pub records: Vec<Record>,
    /// Records skipped, count mismatches.
    pub warnings: Vec<Warning>,
}

enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// A trace with random access to its blocks: the footer's index when the trace was closed
/// cleanly (verified against the file), otherwise a scan of the block headers.
pub struct MappedTrace {
    bytes: Bytes,
    header: FileHeader,
    blocks: Vec<BlockInfo>,
    warnings: Vec<Warning>,
    indexed: bool,
    clean_close: bool,
    closed: bool,
}

impl fmt::Debug for MappedTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedTrace")
            .field("len_bytes", &self.bytes().len())
            .field("header", &self.header)
            .field("blocks", &self.blocks.len())
            .field("indexed", &self.indexed)
            .field("clean_close", &self.clean_close)
            .finish_non_exhaustive()
    }
}

impl MappedTrace {
    /// Maps the trace at `path`.
    ///
    /// # Errors
    ///
    /// [`ReadErrorKind::Open`] when it cannot be opened, [`ReadErrorKind::Io`] when it cannot
    /// be mapped; the file header errors of
    /// [`TraceReader::new`].
    pub fn open(path: impl AsRef<Path>) -> Result<MappedTrace, ReadError> {
        MappedTrace::map_file(&open_file(path.as_ref())?)
    }

    /// Maps the trace in `file`, open already: the file a follower holds, which its path
    /// may no longer name (deleted, renamed away, or recorded again).
    ///
    /// # Errors
    ///
    /// As [`MappedTrace::open`], but for opening.
    pub fn map_file(file: &File) -> Result<MappedTrace, ReadError> {
        if file.metadata().map_err(|e| ReadError::new(0, e))?.len() == 0 {
            return Err(ReadError::new(0, ReadErrorKind::Empty));
        }
        // SAFETY: the map is read-only and only read as bytes. If another process truncates
        // the file while it is mapped, reads past the new end fault (SIGBUS); traces are
        // append-only, so this only happens when the file is replaced under the reader.
        let map = unsafe { memmap2::Mmap::map(file) }.map_err(|e| ReadError::new(0, e))?;
        MappedTrace::build(Bytes::Map(map))
    }

    /// A trace held in memory.
    ///
    /// # Errors
    ///
    /// The file header errors of [`TraceReader::new`].
    pub fn from_vec(bytes: Vec<u8>) -> Result<MappedTrace, ReadError> {
        MappedTrace::build(Bytes::Owned(bytes))
    }

    /// The trace with its header read, no block found yet.
    fn unindexed(bytes: Bytes) -> Result<MappedTrace, ReadError> {
        let mut warnings = Vec::new();
        let slice = match &bytes {
            Bytes::Map(map) => &map[..],
            Bytes::Owned(vec) => &vec[..],
        };
        let header = parse_header(slice, &mut warnings)?;
        Ok(MappedTrace {
            bytes,
            header,
            blocks: Vec::new(),
            warnings,
            indexed: false,
            clean_close: false,
            closed: false,
        })
    }

    fn build(bytes: Bytes) -> Result<MappedTrace, ReadError> {
        let mut trace = MappedTrace::unindexed(bytes)?;
        match trace.index_from_footer() {
            Ok(blocks) => {
                trace.blocks = blocks;
                trace.indexed = true;
                trace.clean_close = true;
                trace.closed = true;
            }
            Err(reason) => {
                let footer = reason.is_some().then_some(trace.warnings.len());
                if let Some((offset, reason)) = reason {
                    let kind = WarningKind::BadFooter { reason };
                    trace.warnings.push(Warning { offset, kind });
                }
                trace.scan();
                // The file's last bytes are the trailer of another trace joined after this
                // one (its offset counted from that trace's start): not this one's end.
                let joined = (trace.warnings.iter())
                    .any(|w| matches!(w.kind, WarningKind::AnotherTrace { .. }));
                if let Some(i) = footer.filter(|_| joined) {
                    trace.warnings.remove(i);
                }
                if !joined {
                    trace.ended_without_footer();
                }
            }
        }
        Ok(trace)
    }

    /// Without a footer: where the last record of the last records block is a session's end
    /// ([`Record::SessionEnd`]), the recorder closed the
    /// trace and only the file's end is missing, as [`TraceReader`] says it (its
    /// `ended_without_footer`): `closed`, with a [`WarningKind::BadFooter`].
    fn ended_without_footer(&mut self) {
        if self.closed {
            return;
        }
        let last = (self.blocks.iter()).rposition(|b| b.header.kind == BlockKind::RECORDS);
        let Some(records) = last.and_then(|i| self.read_block(i).ok()) else {
            return;
        };
        if matches!(records.records.last(), Some(Record::SessionEnd(_))) {
            self.closed = true;
            let reason = FOOTER_MISSING.to_owned();
            let offset = self.bytes().len() as u64;
            self.warnings.push(Warning {
                offset,
                kind: WarningKind::BadFooter { reason },
            });
        }
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Map(map) => map,
            Bytes::Owned(vec) => vec,
        }
    }

    fn header_at(&self, offset: u64) -> Result<BlockHeader, FormatError> {
        let start = usize::try_from(offset).map_err(|_| FormatError::BadBlockMarker)?;
        let raw = self
            .bytes()
            .get(start..)
            .and_then(|rest| rest.get(..BLOCK_HEADER_LEN))
            .ok_or(FormatError::BadBlockMarker)?;
        BlockHeader::decode(raw.try_into().expect("32 bytes"))
    }

    /// The block index from a verified footer; `Err(None)` when there is no trailer,
    /// `Err(Some((offset, reason)))` when the footer is unusable.
    #[allow(clippy::type_complexity)]
    fn index_from_footer(&self) -> Result<Vec<BlockInfo>, Option<(u64, String)>> {
        let bytes = self.bytes();
        let len = bytes.len() as u64;
        let first = u64::from(self.header.header_len);
        if len < first + (BLOCK_HEADER_LEN + TRAILER_LEN) as u64 {
            return Err(None);
        }
        let trailer_at = len - TRAILER_LEN as u64;
        let footer_at = decode_trailer(&bytes[trailer_at as usize..]).ok_or(None)?;
        let bad = |reason: String| Some((footer_at, reason));
        if footer_at < first || footer_at > trailer_at - BLOCK_HEADER_LEN as u64 {
            return Err(bad(format!(
                "trailer points outside the file ({footer_at})"
            )));
        }
        let header = self.header_at(footer_at).map_err(|e| bad(e.to_string()))?;
        if header.kind != BlockKind::FOOTER || footer_at + header.block_len() != trailer_at {
            return Err(bad("the trailer does not point at the footer".into()));
        }
        let payload_at = footer_at as usize + BLOCK_HEADER_LEN;
        let footer = decode_payload(&header, &bytes[payload_at..trailer_at as usize])
            .and_then(|p| postcard::from_bytes::<Footer>(&p).map_err(FormatError::Record))
            .map_err(|e| bad(e.to_string()))?;
        let mut blocks = Vec::with_capacity(footer.blocks.len().min(bytes.len() / 32) + 1);
        let mut next = first;
        for entry in &footer.blocks {
            let header = self
                .header_at(entry.offset)
                .map_err(|e| bad(format!("index entry at {}: {e}", entry.offset)))?;
            if entry.offset != next || header.kind != entry.kind {
                return Err(bad(format!(
                    "index entry at {} disagrees with the file",
                    entry.offset
                )));
            }
            next = entry.offset + header.block_len();
            blocks.push(BlockInfo {
                offset: entry.offset,
                header,
            });
        }
        if next != footer_at {
            return Err(bad("the index does not cover the file".into()));
        }
        blocks.push(BlockInfo {
            offset: footer_at,
            header,
        });
        Ok(blocks)
    }

    /// Walks the block headers from the start, resynchronizing after damage.
    fn scan(&mut self) {
        let len = self.bytes().len() as u64;
        let mut at = u64::from(self.header.header_len);
        while at < len {
            let next = self.header_at(at);
            if next.is_err()
                && let Some(found) = self.header_across_block_end(at)
            {
                self.joined(at, found);
                return;
            }
            match next {
                Ok(header) if at + header.block_len() <= len => {
                    if let Some(found) = self.another_trace_in_block(at, &header) {
                        self.joined(at, found);
                        return;
                    }
                    self.blocks.push(BlockInfo { offset: at, header });
                    at += header.block_len();
                    if header.kind == BlockKind::FOOTER {
                        self.closed = true;
                        let rest = &self.bytes()[at as usize..];
                        let footer_at = at - header.block_len();
                        if rest.len() >= TRAILER_LEN
                            && decode_trailer(&rest[..TRAILER_LEN]) == Some(footer_at)
                        {
                            let extra = (rest.len() - TRAILER_LEN) as u64;
                            if extra == 0 {
                                // The footer index was refused (a warning says why) but
                                // the end itself is intact only if the footer decodes.
                                self.clean_close = self
                                    .warnings
                                    .iter()
                                    .all(|w| !matches!(w.kind, WarningKind::BadFooter { .. }));
                            } else {
                                let offset = at + TRAILER_LEN as u64;
                                // Another trace appended to this whole one?
                                let next = &rest[TRAILER_LEN..rest.len().min(TRAILER_LEN + 32)];
                                let kind = match file_header_in(next) {
                                    Some(0) => WarningKind::AnotherTrace { bytes: extra },
                                    _ => WarningKind::TrailingData { bytes: extra },
                                };
                                self.warnings.push(Warning { offset, kind });
                            }
                            return;
                        }
                    }
                }
                Ok(header) => {
                    // The payload is cut short; perhaps where another trace was joined on.
                    let payload = &self.bytes()[at as usize + BLOCK_HEADER_LEN..];
                    let found = file_header_in_block_header(&header, payload)
                        .or_else(|| file_header_in(payload).map(|p| BLOCK_HEADER_LEN + p));
                    match found {
                        Some(p) => self.joined(at, at + p as u64),
                        None => self.truncated(at, len),
                    }
                    return;
                }
                Err(_) if len - at < BLOCK_HEADER_LEN as u64 => {
                    self.truncated(at, len);
                    return;
                }
                Err(_) if self.bytes()[at as usize..].starts_with(&crate::format::MAGIC) => {
                    let kind = WarningKind::AnotherTrace { bytes: len - at };
                    self.warnings.push(Warning { offset: at, kind });
                    return;
                }
                Err(error) => {
                    // Another trace's header among the damaged bytes: the trace ends there,
                    // unless it is past the damaged header's own bytes and its blocks end
                    // before the file does (a trace file held in the damaged block's
                    // payload: skipped with it), as the streaming reader decides.
                    let mut from = at;
                    let next = loop {
                        let next = self.find_block_after(from);
                        let Some(found) = self.file_header_after(from, next) else {
                            break next;
                        };
                        let inside = (found - at >= BLOCK_HEADER_LEN as u64)
                            .then(|| self.trace_blocks_end(found + FILE_HEADER_LEN as u64))
                            .flatten();
                        match inside {
                            Some(end) => from = end,
                            None => {
                                self.joined(at, found);
                                return;
                            }
                        }
                    };
                    match next {
                        Some(found) => {
                            let skipped_bytes = found - at;
                            let kind = WarningKind::Resynchronized {
                                skipped_bytes,
                                error,
                            };
                            self.warnings.push(Warning { offset: at, kind });
                            at = found;
                        }
                        None => {
                            self.truncated(at, len);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Where another trace's file header starts in the block at `at` whose payload does not
    /// verify, or across its end (two files joined, the first cut short inside this block),
    /// as the streaming reader finds it: inside its header or payload, or begun by its last
    /// bytes.
    fn another_trace_in_block(&self, at: u64, header: &BlockHeader) -> Option<u64> {
        if ![BlockKind::RECORDS, BlockKind::SUMMARY, BlockKind::FOOTER].contains(&header.kind) {
            return None;
        }
        let bytes = self.bytes();
        let start = at as usize + BLOCK_HEADER_LEN;
        let end = at as usize + header.block_len() as usize;
        if xxhash_rust::xxh3::xxh3_64(&bytes[start..end]) == header.checksum {
            return None;
        }
        if let Some(p) = file_header_in_block_header(header, &bytes[start..end]) {
            return Some(at + p as u64);
        }
        let (header, inside) = headers_in_payload(&bytes[start..end]);
        if let Some(p) = header {
            return Some((start + p) as u64);
        }
        if let Some(p) = inside {
            // Traces wholly inside the payload: its contents if a block follows (or
            // nothing does), as the streaming reader decides on the bytes after the block.
            let next = &bytes[end..];
            let block_follows = next.is_empty()
                || next
                    .first_chunk()
                    .is_some_and(|h| BlockHeader::decode(h).is_ok());
            return (!block_follows).then_some((start + p) as u64);
        }
        let reach = (end + FILE_HEADER_LEN - 1).min(bytes.len());
        // From the block header's second byte on where the payload is short (as
        // `block_tail`).
        let from = end.saturating_sub(FILE_HEADER_LEN - 1).max(at as usize + 1);
        let p = file_header_in(&bytes[from..reach]).filter(|&p| from + p < end)?;
        Some((from + p) as u64)
    }

    /// Where another trace's file header starts in the last bytes ([`block_tail`]) of the
    /// block that ends at `at`, where no block header decodes, and runs on past it: a block
    /// read whole whose last bytes were also the other trace's first, as the streaming
    /// reader finds it ([`TraceReader::joined_across_block_end`]).
    fn header_across_block_end(&self, at: u64) -> Option<u64> {
        let last = self.blocks.last()?;
        if last.offset + last.header.block_len() != at {
            return None;
        }
        let (bytes, at) = (self.bytes(), at as usize);
        let from = at
            .saturating_sub(FILE_HEADER_LEN - 1)
            .max(last.offset as usize + 1);
        let reach = (at + FILE_HEADER_LEN - 1).min(bytes.len());
        let p = file_header_in(&bytes[from..reach]).filter(|&p| from + p < at)?;
        Some((from + p) as u64)
    }

    /// Where the blocks that start at `at` (block headers that decode, one after another)
    /// end, at bytes that are no block header; `None` when they run to the end of the file.
    fn trace_blocks_end(&self, mut at: u64) -> Option<u64> {
        let len = self.bytes().len() as u64;
        loop {
            if len - at.min(len) < BLOCK_HEADER_LEN as u64 {
                return None;
            }
            match self.header_at(at) {
                Ok(header) if at + header.block_len() > len => return None,
                Ok(header) => at += header.block_len(),
                Err(_) => return Some(at),
            }
        }
    }

    /// Where another trace's file header starts after the damaged block header at `at` and
    /// before `next`, the next block found (or anywhere after, when none is).
    fn file_header_after(&self, at: u64, next: Option<u64>) -> Option<u64> {
        let bytes = self.bytes();
        let from = at as usize + 1;
        let reach = next.map_or(bytes.len(), |n| {
            (n as usize + FILE_HEADER_LEN - 1).min(bytes.len())
        });
        let p = file_header_in(bytes.get(from..reach)?)?;
        let found = (from + p) as u64;
        next.is_none_or(|n| found < n).then_some(found)
    }

    /// The trace ends at its cut, `at`, and another trace, joined on, starts at
    /// `header_at`: said as the streaming reader says it.
    fn joined(&mut self, at: u64, header_at: u64) {
        if header_at > at {
            let kind = WarningKind::TruncatedTail {
                bytes: header_at - at,
            };
            self.warnings.push(Warning { offset: at, kind });
        }
        let kind = WarningKind::AnotherTrace {
            bytes: self.bytes().len() as u64 - header_at,
        };
        self.warnings.push(Warning {
            offset: header_at,
            kind,
        });
    }

    fn truncated(&mut self, at: u64, len: u64) {
        let end = &self.bytes()[(len - (len - at).min(TRAILER_LEN as u64)) as usize..];
        if decode_trailer(end) == Some(at) {
            // The file ends with a trailer pointing here: the footer's header is damaged,
            // and the trace was closed.
            self.closed = true;
            let reason = "its block header is damaged".to_owned();
            let kind = WarningKind::BadFooter { reason };
            self.warnings.push(Warning { offset: at, kind });
            return;
        }
        let kind = WarningKind::TruncatedTail { bytes: len - at };
        self.warnings.push(Warning { offset: at, kind });
    }

    fn find_block_after(&self, at: u64) -> Option<u64> {
        let bytes = self.bytes();
        let from = at as usize + 1;
        bytes
            .get(from..)?
            .windows(4)
            .enumerate()
            .filter(|(_, w)| *w == crate::format::BLOCK_MARKER)
            .map(|(i, _)| (from + i) as u64)
            .find(|&offset| self.header_at(offset).is_ok())
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Every block found, in file order (records, footer and unknown kinds).
    pub fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// Whether the block list came from the footer's index.
    pub fn has_index(&self) -> bool {
        self.indexed
    }

    /// Whether the trace ends with an intact footer and trailer.
    pub fn clean_close(&self) -> bool {
        self.clean_close
    }

    /// Whether the recorder closed the trace (a footer block was found), even if its end
    /// is damaged; see [`Recovery::closed`].
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Warnings from opening (footer, damage found by the scan).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Decodes the records of block `index` (of [`MappedTrace::blocks`]). Footer and
    /// unknown blocks hold no records.
    ///
    /// # Errors
    ///
    /// A [`ReadErrorKind::Format`] naming the block's offset when its payload is damaged.
    ///
    /// # Panics
    ///
    /// When `index` is out of bounds.
    pub fn read_block(&self, index: usize) -> Result<BlockRecords, ReadError> {
        let info = self.blocks[index];
        if info.header.kind != BlockKind::RECORDS {
            return Ok(BlockRecords::default());
        }
        let start = info.offset as usize + BLOCK_HEADER_LEN;
        let stored = &self.bytes()[start..start + info.header.stored_len as usize];
        let payload =
            decode_payload(&info.header, stored).map_err(|e| ReadError::new(info.offset, e))?;
        let (records, warnings) =
            decode_records(payload, info.header.record_count, self.header.version);
        let warnings = warnings
            .into_iter()
            .map(|kind| Warning {
                offset: info.offset,
                kind,
            })
            .collect();
        Ok(BlockRecords { records, warnings })
    }

    /// A streaming reader over the mapped bytes, for reading every record in order.
    ///
    /// # Errors
    ///
    /// None in practice: the header was checked when the trace was opened.
    pub fn records(&self) -> Result<TraceReader<&[u8]>, ReadError> {
        TraceReader::new(self.bytes())
    }
}

const _: () = assert!(MAX_BLOCK_BYTES as u64 <= u32::MAX as u64);
// A block header's window holds a whole file header; the magic starts with the marker's byte.
const _: () = assert!(FILE_HEADER_LEN == BLOCK_HEADER_LEN);
const _: () = assert!(MAGIC[0] == crate::format::BLOCK_MARKER[0]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BlockEncoder, FormatMajor, FormatMinor, FrameEncoder};
    use crate::schema::testgen::{KINDS, Rng, record};
    use crate::writer::{MemorySink, Recorder, RecorderOptions};
    use proptest::prelude::*;

    /// A small closed trace (several blocks) and the records recorded into it.
    fn small_trace() -> (Vec<u8>, Vec<Record>) {
        small_trace_of(3)
    }

    /// [`small_trace`] of the records `seed` draws.
    fn small_trace_of(seed: u64) -> (Vec<u8>, Vec<Record>) {
        let sink = MemorySink::new();
        let options = RecorderOptions {
            block_bytes: 4096,
            ..RecorderOptions::default()
        };
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        let mut rng = Rng(seed);
        let mut recorded = Vec::new();
        for k in 0..KINDS * 2 {
            let rec = record(&mut rng, k);
            recorder.record(&rec);
            recorded.push(rec);
            if k % 10 == 0 {
                recorder.flush().unwrap(); // several blocks
            }
        }
        recorder.close().unwrap();
        let trace = Trace::from_bytes(&sink.contents()).unwrap();
        (sink.contents(), trace.records)
    }

    /// A closed trace of the records `seed` draws, laid out as a recorder lays out
    /// [`small_trace`] (records blocks of ten, compressed and stored as is, a summary after
    /// some, the footer's index, the trailer), and the same bytes at every run: a
    /// recorder's own records hold its clock, so the bytes where a test cuts one differ
    /// from run to run.
    fn closed_trace_of(seed: u64) -> Vec<u8> {
        let mut rng = Rng(seed);
        let records: Vec<_> = (0..KINDS * 2).map(|k| record(&mut rng, k)).collect();
        let mut out = FileHeader::current(crate::format::Compression::Zstd)
            .encode()
            .to_vec();
        let mut encoder = BlockEncoder::new(Some(1)).unwrap();
        let mut index = Vec::new();
        let mut block = |kind, payload: &[u8], records: usize, compress, out: &mut Vec<u8>| {
            let record_count = records as u32;
            let offset = out.len() as u64;
            index.push(crate::format::IndexEntry {
                offset,
                kind,
                record_count,
            });
            let encoded = encoder.encode_with(kind, payload, record_count, compress, out);
            encoded.unwrap();
        };
        // The first record alone, as the recorder flushes it, then ten a block.
        let (head, rest) = records.split_at(1);
        for (i, records) in std::iter::once(head).chain(rest.chunks(10)).enumerate() {
            let mut payload = Vec::new();
            let mut frames = FrameEncoder::new();
            for r in records {
                frames.encode(r, &mut payload).unwrap();
            }
            block(
                BlockKind::RECORDS,
                &payload,
                records.len(),
                i % 2 == 0,
                &mut out,
            );
            if i % 3 == 2 {
                let summary = crate::summary::BlockSummary {
                    lanes: Vec::new(),
                    unplaced: rng.u32(),
                };
                let payload = postcard::to_allocvec(&summary).unwrap();
                block(BlockKind::SUMMARY, &payload, 0, false, &mut out);
            }
        }
        let footer = Footer {
            blocks: index,
            records: records.len() as u64,
            dropped_records: 0,
        };
        let footer_at = out.len() as u64;
        let payload = postcard::to_allocvec(&footer).unwrap();
        let encoded = encoder.encode_with(BlockKind::FOOTER, &payload, 0, true, &mut out);
        encoded.unwrap();
        out.extend_from_slice(&crate::format::encode_trailer(footer_at));
        out
    }

    fn file(blocks: &[(BlockKind, Vec<Record>)], version: FormatVersion) -> Vec<u8> {
        let mut header = FileHeader::current(crate::format::Compression::Zstd);
        header.version = version;
        let mut out = header.encode().to_vec();
        let mut encoder = BlockEncoder::new(Some(1)).unwrap();
        for (kind, records) in blocks {
            let mut payload = Vec::new();
            let mut frames = FrameEncoder::new();
            for r in records {
                frames.encode(r, &mut payload).unwrap();
            }
            encoder
                .encode(*kind, &payload, records.len() as u32, &mut out)
                .unwrap();
        }
        out
    }

    /// A file read with `open` is read as long as it was at the open: what a writer appends
    /// meanwhile is left for the next reader (a torn last block is a torn tail, as at any
    /// end); `new` over the same bytes reads them all.
    #[test]
    fn an_opened_file_is_read_as_long_as_it_was_at_the_open() {
        use std::io::Write;
        let (bytes, records) = small_trace();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.hrxt");
        let cut = bytes.len() / 2 + 5;
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let reader = TraceReader::open(&path).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&bytes[cut..])
            .unwrap();
        let mut reader = reader;
        let read = reader
            .by_ref()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .len();
        assert!(
            0 < read && read < records.len(),
            "{read} of {}",
            records.len()
        );
        assert!(!reader.recovery().closed);
        assert!(reader.recovery().bytes_discarded > 0, "a torn last block");
        let whole = (TraceReader::open(&path).unwrap())
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .len();
        assert_eq!(whole, records.len());
    }

    /// Submission `n` of runtime 1 (prepared graph 1, slot 0, at `n` ns).
    fn submit(n: u64) -> Record {
        use crate::schema::{PreparedId, RuntimeId, SubmissionIndex, Submit};
        Record::Submit(Submit {
            runtime: RuntimeId(1),
            prepared: PreparedId(1),
            submission: SubmissionIndex(n),
            slot: 0,
            producers: Vec::new(),
            time_ns: n,
        })
    }

    /// A range's trace holds submissions `start..end` only: not a gap; one missing inside
    /// the range still is.
    #[test]
    fn a_range_is_not_read_as_missing_submissions_but_a_gap_inside_it_is() {
        use crate::schema::{RuntimeId, SubmissionIndex, TraceRange};
        let range = |end: Option<u64>| {
            Record::TraceRange(TraceRange {
                runtime: RuntimeId(1),
                start: SubmissionIndex(5),
                end: end.map(SubmissionIndex),
                trigger: "submissions:5..8".into(),
                trimmed_from: None,
                time_ns: 0,
                fault: None,
            })
        };
        // Absent either way: `file` writes no footer, so the numbers lacked count as past
        // where the never-closed trace ends (the next test tells the two apart).
        let missing = |records: Vec<Record>| {
            let bytes = file(&[(BlockKind::RECORDS, records)], FormatVersion::CURRENT);
            let reader = TraceReader::new(&bytes[..]).unwrap();
            let recovery = Trace::read_whole(reader.check_submission_numbers())
                .unwrap()
                .recovery;
            recovery.missing_submissions + recovery.unwritten_submissions
        };
        let whole = vec![range(None), submit(5), submit(6), submit(7), range(Some(8))];
        assert_eq!(missing(whole), 0);
        let open = vec![range(None), submit(5), submit(6)];
        assert_eq!(missing(open), 0);
        let gap = vec![range(None), submit(5), submit(7), range(Some(8))];
        assert_eq!(missing(gap), 1);
        let without_range = vec![submit(5), submit(6), submit(7)];
        assert_eq!(missing(without_range), 4);
    }

    /// Submissions missing are said without a byte (counted once the trace is read, they
    /// lie at none; the byte read as a place of damage in a lossy trace); a warning about a
    /// place keeps its byte.
    #[test]
    fn submissions_missing_are_said_without_a_byte() {
        let missing = Warning {
            offset: 23_000_313,
            kind: WarningKind::SubmissionsMissing {
                runtime: 1,
                missing: 2,
                last: 9,
            },
        };
        assert_eq!(
            missing.to_string(),
            "runtime 1: 2 of its submissions 1..=9 are missing"
        );
        let placed = Warning {
            offset: 7,
            kind: WarningKind::SummaryWithoutBlock,
        };
        assert!(placed.to_string().starts_with("byte 7: "), "{placed}");
    }

    /// A trace never closed, where nothing was damaged, skipped or lost, that lacks some of a
    /// runtime's submission numbers while holding later ones: a submitting thread's last
    /// records unwritten when it ended, another thread's later ones written. It ends before
    /// the first number lacked, and those are not missing (replay refused them as a gap in
    /// the middle of the trace, the D4 finding of the scale pass). The same numbers lacked in
    /// a closed trace, beside a damaged block, or with records lost, are missing.
    #[test]
    fn numbers_a_never_closed_trace_lacks_at_its_end_are_past_it_not_missing() {
        use crate::schema::{LostKind, RecordsLost};
        let submits = |numbers: &[u64]| numbers.iter().map(|&n| submit(n)).collect::<Vec<_>>();
        let read = |bytes: &[u8]| {
            let reader = TraceReader::new(bytes).unwrap();
            Trace::read_whole(reader.check_submission_numbers()).unwrap()
        };
        // One thread's 4 and 6 unwritten; the other's 5, 7..=10 in the file.
        let held = [1, 2, 3, 5, 7, 8, 9, 10];
        let blocks = [
            (BlockKind::RECORDS, submits(&held[..3])),
            (BlockKind::RECORDS, submits(&held[3..])),
        ];
        let cut = file(&blocks, FormatVersion::CURRENT);
        let trace = read(&cut);
        assert!(!trace.recovery.closed);
        assert_eq!(
            trace.recovery.missing_submissions, 0,
            "{:?}",
            trace.warnings
        );
        assert_eq!(trace.recovery.unwritten_submissions, 2);
        let unwritten = WarningKind::SubmissionsUnwritten {
            runtime: 1,
            first: 4,
            missing: 2,
            past: 5,
            last: 10,
        };
        let kinds: Vec<_> = trace.warnings.iter().map(|w| w.kind.clone()).collect();
        assert_eq!(kinds, std::slice::from_ref(&unwritten));
        assert_eq!(unwritten.ends_before(), Some((1, 4)));
        assert!(
            unwritten
                .to_string()
                .starts_with("runtime 1: the trace ends before submission 4"),
            "{unwritten}"
        );
        // Torn in its last block as well: the same.
        let mut torn = cut.clone();
        torn.extend(
            &file(
                &[(BlockKind::RECORDS, submits(&[11]))],
                FormatVersion::CURRENT,
            )[FILE_HEADER_LEN..FILE_HEADER_LEN + 20],
        );
        assert_eq!(read(&torn).recovery.unwritten_submissions, 2);
        assert!(read(&torn).recovery.bytes_discarded > 0);

        let missing = |trace: &Trace, n: u64| {
            assert_eq!(
                trace.recovery.unwritten_submissions, 0,
                "{:?}",
                trace.warnings
            );
            assert_eq!(
                trace.recovery.missing_submissions, n,
                "{:?}",
                trace.warnings
            );
            assert!(
                (trace.warnings.iter())
                    .any(|w| matches!(w.kind, WarningKind::SubmissionsMissing { .. })),
                "{:?}",
                trace.warnings
            );
        };
        // Closed: every thread's buffer was written.
        let sink = MemorySink::new();
        let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        for record in submits(&held) {
            recorder.record(&record);
        }
        recorder.close().unwrap();
        missing(&read(&sink.contents()), 2);
        // A damaged block before the end (its submission 3 lost with it).
        let with_three = [
            (BlockKind::RECORDS, submits(&[1, 2])),
            (BlockKind::RECORDS, submits(&[3])),
            (BlockKind::RECORDS, submits(&held[3..])),
        ];
        let mut damaged = file(&with_three, FormatVersion::CURRENT);
        let second = file(&with_three[..1], FormatVersion::CURRENT).len();
        damaged[second + BLOCK_HEADER_LEN + 2] ^= 0xff;
        let trace = read(&damaged);
        assert_eq!(trace.recovery.skipped_blocks, 1, "{:?}", trace.warnings);
        missing(&trace, 3);
        // Records the recorder lost (lossy mode): dropped, not unwritten.
        let lost = Record::RecordsLost(RecordsLost {
            time_ns: 11,
            lossy: true,
            total: 2,
            by_kind: vec![LostKind {
                kind: "Submit".into(),
                records: 2,
            }],
        });
        let mut lossy = submits(&held);
        lossy.push(lost);
        missing(
            &read(&file(
                &[(BlockKind::RECORDS, lossy)],
                FormatVersion::CURRENT,
            )),
            2,
        );
    }

    /// A trace never closed, recorded by two threads, with a records block cut out of its
    /// middle: the block summary the recorder wrote right after it stays, with no records
    /// block before it, so the gap it leaves in the submission numbers is missing (damage:
    /// replay refuses it), not the trace ending before it (which a submitting thread's
    /// unwritten last records make). The same block cut out with its summary leaves no sign
    /// in the format (no block sequence numbers, no per-thread counters, no offsets in
    /// later blocks): that gap still reads as the trace's end for the runtime.
    #[test]
    fn a_records_block_cut_from_a_never_closed_trace_leaves_its_summary_and_is_missing() {
        use crate::schema::{RegionIndex, RegionTiming, RuntimeId, SubmissionIndex};
        let timing = |n: u64| {
            Record::RegionTiming(RegionTiming {
                runtime: RuntimeId(1),
                submission: SubmissionIndex(n),
                region: RegionIndex(0),
                start_ns: n * 1000,
                end_ns: n * 1000 + 500,
                device: None,
            })
        };
        let sink = MemorySink::new();
        let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        // Two threads take turns: 1..=3, 4..=6, 7..=9, 10..=12, each turn flushed as a block
        // (then a summary of the timings placed: the first turn's wait for the second's);
        // the recorder is never closed.
        for (turn, numbers) in [1..=3, 4..=6, 7..=9, 10..=12].into_iter().enumerate() {
            let recorder = recorder.clone();
            std::thread::Builder::new()
                .name(format!("submitter {}", turn % 2))
                .spawn(move || {
                    for n in numbers {
                        recorder.record(&submit(n));
                        recorder.record(&timing(n));
                    }
                    recorder.flush().unwrap();
                })
                .unwrap()
                .join()
                .unwrap();
        }
        let bytes = sink.contents();
        std::mem::forget(recorder);
        let mapped = MappedTrace::from_vec(bytes.clone()).unwrap();
        let blocks = mapped.blocks();
        let holds_7 = (0..blocks.len())
            .find(|&i| {
                let block = mapped.read_block(i).unwrap();
                block.records.iter().any(|r| *r == submit(7))
            })
            .unwrap();
        let (cut, summary) = (&blocks[holds_7], &blocks[holds_7 + 1]);
        assert_eq!(blocks[holds_7 - 1].header.kind, BlockKind::SUMMARY);
        assert_eq!(summary.header.kind, BlockKind::SUMMARY);
        let end = |b: &BlockInfo| (b.offset + b.header.block_len()) as usize;
        let read = |bytes: &[u8]| {
            let reader = TraceReader::new(bytes).unwrap();
            Trace::read_whole(reader.check_submission_numbers()).unwrap()
        };
        assert_eq!(read(&bytes).recovery.unwritten_submissions, 0);
        assert!(
            read(&bytes).warnings.is_empty(),
            "{:?}",
            read(&bytes).warnings
        );

        // The records block alone: its summary says it is gone.
        let without = [&bytes[..cut.offset as usize], &bytes[end(cut)..]].concat();
        let trace = read(&without);
        assert!(!trace.recovery.closed);
        assert_eq!(trace.recovery.skipped_blocks, 1);
        assert_eq!(trace.recovery.unwritten_submissions, 0);
        assert_eq!(trace.recovery.missing_submissions, 3);
        let kinds: Vec<_> = trace.warnings.iter().map(|w| &w.kind).collect();
        assert_eq!(
            kinds,
            [
                &WarningKind::SummaryWithoutBlock,
                &WarningKind::SubmissionsMissing {
                    runtime: 1,
                    missing: 3,
                    last: 12
                }
            ]
        );
        assert_eq!(trace.warnings[0].offset, cut.offset);
        // Decoding ahead reads it the same.
        let ahead = Trace::read_whole(
            TraceReader::new(&without[..])
                .unwrap()
                .decode_ahead(2)
                .check_submission_numbers(),
        )
        .unwrap();
        assert_eq!(
            (ahead.warnings, ahead.recovery),
            (trace.warnings, trace.recovery)
        );

        // With its summary: nothing tells, and the runtime's numbers end before 7.
        let both = [&bytes[..cut.offset as usize], &bytes[end(summary)..]].concat();
        let trace = read(&both);
        assert_eq!(trace.recovery.skipped_blocks, 0);
        assert_eq!(trace.recovery.unwritten_submissions, 3);
        assert_eq!(
            trace
                .warnings
                .iter()
                .map(|w| w.kind.ends_before())
                .collect::<Vec<_>>(),
            [Some((1, 7))]
        );
    }

    fn is_prefix(prefix: &[Record], of: &[Record]) -> bool {
        prefix.len() <= of.len() && prefix == &of[..prefix.len()]
    }

    /// Damage to the end of a cleanly closed trace: every record is still read, and the
    /// trace is reported as closed with a damaged end, not as crashed.
    #[test]
    fn a_damaged_end_after_a_clean_close_is_named_and_loses_nothing() {
        let (bytes, records) = small_trace();
        let trailer_at = bytes.len() - TRAILER_LEN;
        let footer_at = decode_trailer(&bytes[trailer_at..]).unwrap() as usize;
        let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
        let mut garbage = bytes.clone();
        garbage.extend_from_slice(b"garbage appended by a careless tool");
        cases.push(("trailing garbage", garbage, "bytes after the end"));
        let mut trailer = bytes.clone();
        trailer[trailer_at + 9] ^= 0xff;
        cases.push(("damaged trailer", trailer, "the trailer is damaged"));
        let mut payload = bytes.clone();
        payload[footer_at + BLOCK_HEADER_LEN + 1] ^= 0xff;
        cases.push(("damaged footer payload", payload, "footer ignored"));
        let mut header = bytes.clone();
        header[footer_at + 5] ^= 0xff;
        cases.push(("damaged footer header", header, "block header is damaged"));
        // Cut after the session's end: the footer and trailer gone whole (a copy cut short),
        // or part of the footer left (break-it, session 58: "never closed ... killed or
        // crashed").
        cases.push((
            "footer and trailer cut",
            bytes[..footer_at].to_vec(),
            "the file ends after the session's end record",
        ));
        for (what, file, says) in cases {
            let trace = Trace::from_bytes(&file).unwrap();
            assert_eq!(trace.records, records, "{what}");
            let r = trace.recovery;
            assert!(r.closed && !r.clean_close, "{what}: {r:?}");
            assert_eq!(r.end(), "closed, but its end is damaged", "{what}");
            assert_eq!(r.skipped_blocks + r.skipped_records, 0, "{what}: {r:?}");
            let text: Vec<_> = trace.warnings.iter().map(|w| w.to_string()).collect();
            assert!(text.iter().any(|w| w.contains(says)), "{what}: {text:?}");
            assert!(
                !text.iter().any(|w| w.contains("inside a block")),
                "{what}: {text:?}"
            );

            let mapped = MappedTrace::from_vec(file.clone()).unwrap();
            assert!(mapped.closed() && !mapped.clean_close(), "{what}");
            let mut read = Vec::new();
            for i in 0..mapped.blocks().len() {
                read.extend(mapped.read_block(i).map(|b| b.records).unwrap_or_default());
            }
            assert_eq!(read, records, "{what}");
        }
        let r = Trace::from_bytes(&bytes).unwrap().recovery;
        assert!(r.closed && r.clean_close && r.is_complete());
        assert_eq!(r.end(), "closed cleanly");
        // Cut before its last records block: not closed.
        let last_records = (MappedTrace::from_vec(bytes.clone())
            .unwrap()
            .blocks()
            .iter())
        .rfind(|b| b.header.kind == BlockKind::RECORDS)
        .unwrap()
        .offset as usize;
        let cut = Trace::from_bytes(&bytes[..last_records]).unwrap().recovery;
        assert!(!cut.closed && !cut.clean_close);
        assert_eq!(cut.end(), "not closed cleanly");
    }

    #[test]
    fn streaming_and_mapped_readers_agree() {
        let (bytes, records) = small_trace();
        let mapped = MappedTrace::from_vec(bytes.clone()).unwrap();
        assert!(mapped.has_index() && mapped.clean_close());
        assert!(mapped.warnings().is_empty(), "{:?}", mapped.warnings());
        assert!(mapped.blocks().len() > 3);
        let mut from_blocks = Vec::new();
        for i in 0..mapped.blocks().len() {
            from_blocks.extend(mapped.read_block(i).unwrap().records);
        }
        assert_eq!(from_blocks, records);
        let streamed: Vec<_> = mapped.records().unwrap().map(|r| r.unwrap().1).collect();
        assert_eq!(streamed, records);
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert!(trace.recovery.is_complete());
        assert_eq!(trace.recovery.records, records.len() as u64);
    }

    #[test]
    fn mapped_reader_opens_files() {
        let (bytes, records) = small_trace();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let mapped = MappedTrace::open(&path).unwrap();
        let n: usize = (0..mapped.blocks().len())
            .map(|i| mapped.read_block(i).unwrap().records.len())
            .sum();
        assert_eq!(n, records.len());
        assert_eq!(read_all(&path).unwrap().records, records);
        std::fs::write(&path, b"").unwrap();
        let err = MappedTrace::open(&path).unwrap_err();
        assert!(matches!(err.kind, ReadErrorKind::Empty));
    }

    #[test]
    fn truncation_at_every_offset_yields_a_prefix() {
        let (bytes, records) = small_trace();
        for cut in 0..bytes.len() {
            let part = &bytes[..cut];
            match Trace::from_bytes(part) {
                Ok(trace) => {
                    assert!(cut >= FILE_HEADER_LEN, "cut {cut}");
                    assert!(is_prefix(&trace.records, &records), "cut {cut}");
                    assert!(!trace.recovery.clean_close, "cut {cut}");
                    assert_eq!(trace.recovery.skipped_blocks, 0, "cut {cut}");
                }
                Err(e) => {
                    assert!(cut < FILE_HEADER_LEN, "cut {cut}: {e}");
                    assert!(!e.to_string().contains('\n'));
                }
            }
            let mapped = MappedTrace::from_vec(part.to_vec());
            if let Ok(mapped) = mapped {
                assert!(!mapped.clean_close());
                let mut got = Vec::new();
                for i in 0..mapped.blocks().len() {
                    got.extend(mapped.read_block(i).unwrap().records);
                }
                assert!(is_prefix(&got, &records), "mapped cut {cut}");
            }
        }
    }

    /// `ends_cleanly` (dump's first word) from the file's end alone: a whole trace does, no
    /// cut of it does, and it answers for the file as long as it was when opened.
    #[test]
    fn ends_cleanly_reads_the_footer_and_trailer_of_the_file_as_opened() {
        let (bytes, _) = small_trace();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let whole = TraceReader::open(&path).unwrap();
        assert!(whole.ends_cleanly().unwrap());
        for cut in FILE_HEADER_LEN..bytes.len() {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let reader = TraceReader::open(&path).unwrap();
            assert!(!reader.ends_cleanly().unwrap(), "cut {cut}");
        }
        // Grown since it was opened (a recording going on): answered for as opened.
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let opened = TraceReader::open(&path).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        assert!(!opened.ends_cleanly().unwrap());
    }

    #[test]
    fn flipped_bytes_never_panic_and_errors_are_one_line() {
        let (bytes, records) = small_trace();
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            match Trace::from_bytes(&damaged) {
                Ok(trace) => {
                    for w in &trace.warnings {
                        assert!(!w.to_string().contains('\n'), "{w}");
                    }
                    // Whatever was read is a subsequence of what was written.
                    let mut it = records.iter();
                    for r in &trace.records {
                        assert!(it.any(|x| x == r), "byte {at}: invented record {r:?}");
                    }
                    if trace.records.len() < records.len() {
                        assert!(!trace.warnings.is_empty(), "byte {at}: silent loss");
                    }
                }
                Err(e) => {
                    assert!(at < FILE_HEADER_LEN, "byte {at}: {e}");
                    assert!(!e.to_string().contains('\n'));
                }
            }
            if let Ok(mapped) = MappedTrace::from_vec(damaged) {
                for i in 0..mapped.blocks().len() {
                    if let Err(e) = mapped.read_block(i) {
                        assert!(!e.to_string().contains('\n'));
                    }
                }
            }
        }
    }

    /// `cat killed.hrxt other.hrxt`: the second trace's records are not read as the first's
    /// (they were, after a "damaged block header"), by either reader.
    #[test]
    fn a_trace_joined_after_an_unclosed_one_is_not_read_as_its_records() {
        let mut rng = Rng(12);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let b: Vec<_> = (5..9).map(|k| record(&mut rng, k)).collect();
        let first = file(&[(BlockKind::RECORDS, a.clone())], FormatVersion::CURRENT);
        let second = file(&[(BlockKind::RECORDS, b)], FormatVersion::CURRENT);
        let joined = [&first[..], &second[..]].concat();
        let trace = Trace::from_bytes(&joined).unwrap();
        assert_eq!(trace.records, a);
        assert_eq!(trace.recovery.bytes_discarded, second.len() as u64);
        let another = WarningKind::AnotherTrace {
            bytes: second.len() as u64,
        };
        assert_eq!(trace.warnings.len(), 1, "{:?}", trace.warnings);
        assert_eq!(
            (trace.warnings[0].offset, &trace.warnings[0].kind),
            (first.len() as u64, &another)
        );
        let mapped = MappedTrace::from_vec(joined).unwrap();
        assert_eq!(mapped.blocks().len(), 1);
        let warnings: Vec<_> = mapped
            .warnings()
            .iter()
            .map(|w| (w.offset, &w.kind))
            .collect();
        assert_eq!(warnings, [(first.len() as u64, &another)]);
    }

    /// `head -c N a.hrxt > cut; cat cut b.hrxt`: wherever the first trace is cut (its footer
    /// and trailer included, or not at all), every reader reads of the joined file what it
    /// reads of the cut alone, says how the cut ends as it does, and says that another trace
    /// starts at the cut. The torn last block's declared length reached into the second
    /// trace: its records were read as the first's, after "skipped a damaged block" (19
    /// submissions where the first held 7).
    #[test]
    fn a_trace_joined_after_a_cut_one_is_read_to_the_cut_by_every_reader() {
        // Of fixed bytes: over a recording, what a cut meets at a given byte changed from
        // run to run, and a layout read wrongly failed one run in ten.
        let first = closed_trace_of(3);
        // Closed: its trailer, at the joined file's end, points into the first trace.
        let second = closed_trace_of(21);
        for cut in FILE_HEADER_LEN + 1..=first.len() {
            assert_joined_reads_as_the_cut(&first, cut, &second);
        }
    }

    /// `first` cut at `cut` and `second` joined after it is read, by every reader, as the
    /// cut alone is, and then said to be another trace from the cut on.
    fn assert_joined_reads_as_the_cut(first: &[u8], cut: usize, second: &[u8]) {
        assert_joined_reads_as(first, cut, cut, second);
    }

    /// `first` cut at `cut` and `second` joined after it is read, by every reader, as
    /// `first[..whole]` is (`whole` past `cut` where the bytes the cut took were `second`'s
    /// first), and then said to be another trace from the cut on.
    fn assert_joined_reads_as(first: &[u8], whole: usize, cut: usize, second: &[u8]) {
        let read = |bytes: &[u8], threads: usize| {
            let mut reader = TraceReader::new(bytes).unwrap().decode_ahead(threads);
            let records: Vec<_> = reader.by_ref().map(|r| r.unwrap().1).collect();
            (records, reader.warnings().to_vec(), *reader.recovery())
        };
        let mapped = |bytes: &[u8]| {
            let trace = MappedTrace::from_vec(bytes.to_vec()).unwrap();
            let blocks: Vec<_> = trace.blocks().iter().map(|b| b.offset).collect();
            (blocks, trace.warnings().to_vec())
        };
        let joined = [&first[..cut], second].concat();
        let another = Warning {
            offset: cut as u64,
            kind: WarningKind::AnotherTrace {
                bytes: second.len() as u64,
            },
        };
        let (records, mut warnings, mut recovery) = read(&first[..whole], 0);
        // Before what is said of the whole file at its end (its sessions).
        let end = warnings
            .iter()
            .position(|w| matches!(w.kind, WarningKind::Sessions { .. }))
            .unwrap_or(warnings.len());
        warnings.insert(end, another.clone());
        // Less its first bytes, read as the first trace's.
        recovery.bytes_discarded += (second.len() - (whole - cut)) as u64;
        // Whole, with another after it: its end is not clean.
        recovery.clean_close = false;
        for threads in [0, 2] {
            let (got, said, r) = read(&joined, threads);
            assert!(
                got == records,
                "cut {cut}, {threads} threads: {} records read, {} in the first {whole} bytes",
                got.len(),
                records.len()
            );
            assert_eq!(said, warnings, "cut {cut}, {threads} threads");
            assert_eq!(r, recovery, "cut {cut}, {threads} threads");
        }
        let (blocks, mut mapped_warnings) = mapped(&first[..whole]);
        mapped_warnings.push(another);
        assert_eq!(
            mapped(&joined),
            (blocks, mapped_warnings),
            "mapped, cut {cut}"
        );
    }

    /// A cut one byte short of the end of a block header whose last byte is the magic's
    /// first (`H`: a header's checksum ends so one time in 256), another trace joined there:
    /// that trace's first byte makes the header whole again, so it verifies, and the other
    /// trace's header starts inside it, before the payload found damaged. Every reader read
    /// the other trace's records as the first's, after a skipped block (or a damaged
    /// footer). For a records block, a summary and the footer, the other trace longer than
    /// the payload declared, or shorter (the payload torn).
    #[test]
    fn a_trace_joined_where_a_block_header_lacks_only_its_last_byte_is_found() {
        for kind in [BlockKind::RECORDS, BlockKind::SUMMARY, BlockKind::FOOTER] {
            // The first trace, of those seeds draw, with such a block, and where it starts.
            let (first, at) = (0..2048)
                .find_map(|seed| {
                    let trace = closed_trace_of(seed);
                    let blocks = MappedTrace::from_vec(trace.clone())
                        .unwrap()
                        .blocks()
                        .to_vec();
                    let at = blocks.iter().map(|b| b.offset as usize).find(|&at| {
                        BlockHeader::decode(trace[at..][..BLOCK_HEADER_LEN].try_into().unwrap())
                            .is_ok_and(|h| h.kind == kind)
                            && trace[at + BLOCK_HEADER_LEN - 1] == MAGIC[0]
                    })?;
                    Some((trace, at))
                })
                .expect("a block header ending in the magic's first byte");
            let cut = at + BLOCK_HEADER_LEN - 1;
            let bare = FileHeader::current(crate::format::Compression::Zstd).encode();
            for second in [closed_trace_of(9999), bare.to_vec()] {
                let joined = [&first[..cut], &second[..]].concat();
                assert_eq!(
                    joined[at..cut + 1],
                    first[at..cut + 1],
                    "{kind}: the joined file holds the header whole"
                );
                assert_joined_reads_as_the_cut(&first, cut, &second);
            }
        }
    }

    /// A cut in the last bytes of a block, where they are the same as the other trace's
    /// first (a payload ending in `H`, the magic's first byte, one in 256): joined, the
    /// block is whole again and verifies, and the other trace's header starts inside it.
    /// Every reader read the block, found no block header after it and resynchronized into
    /// the other trace, reading its records as the first's (or said the footer's trailer
    /// damaged). The block is read, being whole, and the other trace said from its header
    /// on; for a records block (a blob ending in the magic's first 1, 3 or 8 bytes), a
    /// summary and the footer.
    #[test]
    fn a_trace_joined_where_a_block_lacks_only_its_last_bytes_is_found() {
        let mut rng = Rng(15);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let frames = |records: &[Record]| {
            let (mut payload, mut frames) = (Vec::new(), FrameEncoder::new());
            for r in records {
                frames.encode(r, &mut payload).unwrap();
            }
            payload
        };
        // Payloads stored as is, ending in the bytes given; and where each block ends.
        let encode = |blocks: &[(BlockKind, Vec<u8>, u32)]| {
            let mut out = FileHeader::current(crate::format::Compression::None)
                .encode()
                .to_vec();
            let mut encoder = BlockEncoder::new(None).unwrap();
            let mut ends = Vec::new();
            for (kind, payload, records) in blocks {
                encoder.encode(*kind, payload, *records, &mut out).unwrap();
                ends.push(out.len());
            }
            (out, ends)
        };
        let second = closed_trace_of(9999);
        for k in [1, 3, 8] {
            let mut contents = vec![0xa5; 100];
            contents.extend_from_slice(&MAGIC[..k]);
            let blob = Record::Blob(crate::schema::Blob {
                hash: BlobHash(xxhash_rust::xxh3::xxh3_64(&contents)),
                bytes: contents,
            });
            let (first, ends) = encode(&[
                (BlockKind::RECORDS, frames(&a), 5),
                (BlockKind::RECORDS, frames(&[blob]), 1),
                (BlockKind::RECORDS, frames(&a), 5),
            ]);
            assert!(first[..ends[1]].ends_with(&MAGIC[..k]));
            assert_joined_reads_as(&first, ends[1], ends[1] - k, &second);
        }
        // Its count of timings not placed, 72, is the magic's first byte.
        let summary = crate::summary::BlockSummary {
            lanes: Vec::new(),
            unplaced: u32::from(MAGIC[0]),
        };
        let (first, ends) = encode(&[
            (BlockKind::RECORDS, frames(&a), 5),
            (
                BlockKind::SUMMARY,
                postcard::to_allocvec(&summary).unwrap(),
                0,
            ),
            (BlockKind::RECORDS, frames(&a), 5),
        ]);
        assert_eq!(first[ends[1] - 1], MAGIC[0]);
        assert_joined_reads_as(&first, ends[1], ends[1] - 1, &second);
        // Its count of dropped records (which no reader checks), likewise.
        let footer = Footer {
            blocks: vec![crate::format::IndexEntry {
                offset: FILE_HEADER_LEN as u64,
                kind: BlockKind::RECORDS,
                record_count: 5,
            }],
            records: 5,
            dropped_records: u64::from(MAGIC[0]),
        };
        let (mut first, ends) = encode(&[
            (BlockKind::RECORDS, frames(&a), 5),
            (
                BlockKind::FOOTER,
                postcard::to_allocvec(&footer).unwrap(),
                0,
            ),
        ]);
        first.extend_from_slice(&crate::format::encode_trailer(ends[0] as u64));
        assert_eq!(first[ends[1] - 1], MAGIC[0]);
        assert_joined_reads_as(&first, ends[1], ends[1] - 1, &second);
    }

    /// A file of records blocks of `blocks`, their payloads stored as is; and where each
    /// block starts.
    fn stored_as_is(blocks: &[&[Record]]) -> (Vec<u8>, Vec<u64>) {
        let mut out = FileHeader::current(crate::format::Compression::None)
            .encode()
            .to_vec();
        let mut encoder = BlockEncoder::new(None).unwrap();
        let mut starts = Vec::new();
        for records in blocks {
            starts.push(out.len() as u64);
            let mut payload = Vec::new();
            let mut frames = FrameEncoder::new();
            for r in *records {
                frames.encode(r, &mut payload).unwrap();
            }
            encoder
                .encode(BlockKind::RECORDS, &payload, records.len() as u32, &mut out)
                .unwrap();
        }
        (out, starts)
    }

    /// A trace whose records block holds a blob that is itself a whole trace file (a program
    /// wrote one into a host-visible buffer, its contents recorded; the payload stored as
    /// is), that block damaged (its payload, or its header): the block is skipped and the
    /// blocks after it are read, by both readers. They took the blob's file header for another trace joined on and
    /// dropped everything after it ("another trace starts here", "cut short" of a trace
    /// closed whole).
    #[test]
    fn a_damaged_block_holding_a_whole_trace_is_skipped_not_taken_for_a_join() {
        let (inner, _) = small_trace_of(5);
        let mut rng = Rng(13);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let c: Vec<_> = (5..9).map(|k| record(&mut rng, k)).collect();
        // The streaming reader's records, warnings and skipped blocks of `bytes`.
        let streamed = |bytes: &[u8], threads| {
            let mut reader = TraceReader::new(bytes).unwrap().decode_ahead(threads);
            let got: Vec<_> = reader.by_ref().map(|r| r.unwrap().1).collect();
            let said = format!("{:?}", reader.warnings());
            (got, said, reader.recovery().skipped_blocks)
        };
        // The buffer as large as the file, or larger.
        for pad in [0, 100] {
            let mut contents = inner.clone();
            contents.extend(std::iter::repeat_n(0xa5u8, pad));
            let blob = Record::Blob(crate::schema::Blob {
                hash: BlobHash(xxhash_rust::xxh3::xxh3_64(&contents)),
                bytes: contents,
            });
            let (whole, starts) = stored_as_is(&[&a[..], &[blob][..], &c[..]]);
            let inner_at = file_header_in(&whole[FILE_HEADER_LEN..]).unwrap() + FILE_HEADER_LEN;
            assert_eq!(&whole[inner_at..inner_at + inner.len()], &inner[..]);
            // In the padding, in the inner trace's first block's payload, in its trailer.
            let mut places = vec![inner_at + FILE_HEADER_LEN + BLOCK_HEADER_LEN + 3];
            places.push(inner_at + inner.len() - 2);
            if pad > 0 {
                places.push(inner_at + inner.len() + pad / 2);
            }
            for place in places {
                let mut damaged = whole.clone();
                damaged[place] ^= 0x5a;
                let expected: Vec<_> = a.iter().chain(&c).cloned().collect();
                for threads in [0, 2] {
                    let (got, said, skipped) = streamed(&damaged, threads);
                    assert_eq!(
                        got, expected,
                        "pad {pad}, byte {place}, {threads} threads: {said}"
                    );
                    assert_eq!(skipped, 1, "{said}");
                    assert!(!said.contains("AnotherTrace"), "{said}");
                }
                let mapped = MappedTrace::from_vec(damaged).unwrap();
                let blocks: Vec<_> = mapped.blocks().iter().map(|b| b.offset).collect();
                assert_eq!(blocks, starts, "mapped, pad {pad}, byte {place}");
                let said = format!("{:?}", mapped.warnings());
                assert!(!said.contains("AnotherTrace"), "mapped: {said}");
            }
            // The block's header damaged: resynchronized past the blob's trace, to the next
            // block, by both readers.
            let mut damaged = whole.clone();
            damaged[starts[1] as usize + 8] ^= 0x5a;
            let expected: Vec<_> = a.iter().chain(&c).cloned().collect();
            for threads in [0, 2] {
                let (got, said, _) = streamed(&damaged, threads);
                assert_eq!(
                    got, expected,
                    "pad {pad}, header, {threads} threads: {said}"
                );
                assert!(!said.contains("AnotherTrace"), "{said}");
            }
            let mapped = MappedTrace::from_vec(damaged).unwrap();
            let blocks: Vec<_> = mapped.blocks().iter().map(|b| b.offset).collect();
            assert_eq!(blocks, [starts[0], starts[2]], "mapped, pad {pad}, header");
            let said = format!("{:?}", mapped.warnings());
            assert!(!said.contains("AnotherTrace"), "mapped: {said}");
        }
    }

    /// A trace cut inside a long block, then a small whole trace and another joined after
    /// it (`cat cut small other`): the small trace lies inside the torn block's declared
    /// length, yet no block follows that length, so both readers still end at the cut.
    #[test]
    fn a_small_whole_trace_inside_a_torn_block_is_still_another_trace() {
        let mut rng = Rng(14);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let long = Record::Blob(crate::schema::Blob {
            hash: BlobHash(1),
            bytes: (0..20_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        });
        let (first, starts) = stored_as_is(&[&a[..], &[long][..]]);
        let (small, _) = small_trace_of(6);
        let (other, _) = small_trace_of(7);
        // Inside the long block, the small trace and the other's start within its length.
        let cut = starts[1] as usize + 100;
        assert!(cut + small.len() + FILE_HEADER_LEN < first.len());
        let joined = [&first[..cut], &small[..], &other[..]].concat();
        let another = WarningKind::AnotherTrace {
            bytes: (small.len() + other.len()) as u64,
        };
        for threads in [0, 2] {
            let mut reader = TraceReader::new(&joined[..]).unwrap().decode_ahead(threads);
            let got: Vec<_> = reader.by_ref().map(|r| r.unwrap().1).collect();
            assert_eq!(got, a, "{threads} threads");
            let said: Vec<_> = reader
                .warnings()
                .iter()
                .map(|w| (w.offset, &w.kind))
                .collect();
            assert!(said.contains(&(cut as u64, &another)), "{said:?}");
        }
        let mapped = MappedTrace::from_vec(joined).unwrap();
        let said: Vec<_> = mapped
            .warnings()
            .iter()
            .map(|w| (w.offset, &w.kind))
            .collect();
        assert!(said.contains(&(cut as u64, &another)), "mapped: {said:?}");
    }

    /// A block cut out of a trace whose footer went too (no footer lists it): the session
    /// end's count of the records written before it says how many are missing.
    #[test]
    fn a_cut_out_block_is_counted_by_the_session_end_without_a_footer() {
        let mut rng = Rng(9);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let b: Vec<_> = (5..9).map(|k| record(&mut rng, k)).collect();
        let mut c: Vec<_> = (9..11).map(|k| record(&mut rng, k)).collect();
        let written = (a.len() + b.len() + c.len()) as u64;
        c.push(Record::SessionEnd(crate::schema::SessionEnd {
            time_ns: 99,
            records: written,
            dropped_records: 0,
        }));
        let whole = file(
            &[
                (BlockKind::RECORDS, a.clone()),
                (BlockKind::RECORDS, b.clone()),
                (BlockKind::RECORDS, c.clone()),
            ],
            FormatVersion::CURRENT,
        );
        let checked = |bytes: &[u8]| {
            Trace::read_whole(TraceReader::new(bytes).unwrap().check_submission_numbers()).unwrap()
        };
        let missing_warnings = |trace: &Trace| -> Vec<WarningKind> {
            let kinds = trace.warnings.iter().map(|w| w.kind.clone());
            kinds
                .filter(|k| matches!(k, WarningKind::RecordsMissing { .. }))
                .collect()
        };
        assert_eq!(missing_warnings(&checked(&whole)), []);
        let cut = file(
            &[
                (BlockKind::RECORDS, a.clone()),
                (BlockKind::RECORDS, c.clone()),
            ],
            FormatVersion::CURRENT,
        );
        // Unchecked (the format allows anything), nothing is said.
        assert_eq!(missing_warnings(&Trace::from_bytes(&cut).unwrap()), []);
        let trace = checked(&cut);
        assert_eq!(trace.records, [a.clone(), c].concat());
        assert_eq!(trace.recovery.skipped_records, b.len() as u64);
        let missing = WarningKind::RecordsMissing {
            declared: written,
            found: written - b.len() as u64,
            missing: b.len() as u64,
        };
        assert_eq!(missing_warnings(&trace), [missing]);
    }

    #[test]
    fn damaged_payload_skips_one_block_and_continues() {
        let mut rng = Rng(8);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let b: Vec<_> = (5..9).map(|k| record(&mut rng, k)).collect();
        let c: Vec<_> = (9..12).map(|k| record(&mut rng, k)).collect();
        let blocks = [
            (BlockKind::RECORDS, a.clone()),
            (BlockKind::RECORDS, b.clone()),
            (BlockKind::RECORDS, c.clone()),
        ];
        let mut bytes = file(&blocks, FormatVersion::CURRENT);
        let second = MappedTrace::from_vec(bytes.clone()).unwrap().blocks()[1].offset as usize;
        bytes[second + BLOCK_HEADER_LEN + 2] ^= 1;
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, [a.clone(), c.clone()].concat());
        assert_eq!(trace.recovery.skipped_blocks, 1);
        assert_eq!(trace.recovery.skipped_records, b.len() as u64);
        let w = trace.warnings[0].to_string();
        assert!(w.starts_with(&format!("byte {second}: ")), "{w}");
        assert!(w.contains("checksum"), "{w}");
        // A damaged header: resynchronize at the third block.
        bytes[second + 9] ^= 1;
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, [a, c].concat());
        assert!(matches!(
            trace.warnings[0].kind,
            WarningKind::Resynchronized { .. }
        ));
    }

    /// A summary block (format 1.9) whose payload does not verify is a damaged block, said
    /// like any other: it was left out of the block count without a word, the trace read as
    /// closed cleanly, and `view`'s first frame of a large trace silently lacked its regions.
    #[test]
    fn a_damaged_summary_block_is_said_not_silently_dropped() {
        let (mut bytes, records) = small_trace();
        let block = *MappedTrace::from_vec(bytes.clone())
            .unwrap()
            .blocks()
            .iter()
            .filter(|b| b.header.kind == BlockKind::SUMMARY)
            .max_by_key(|b| b.header.stored_len)
            .expect("a summary block");
        assert!(block.header.stored_len > 0);
        let summary = block.offset as usize;
        bytes[summary + BLOCK_HEADER_LEN + block.header.stored_len as usize / 2] ^= 1;
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, records);
        assert_eq!(trace.recovery.skipped_blocks, 1);
        assert_eq!(trace.recovery.skipped_records, 0);
        assert!(!trace.recovery.is_complete());
        let w = trace.warnings[0].to_string();
        assert!(w.starts_with(&format!("byte {summary}: ")), "{w}");
        assert!(w.contains("checksum"), "{w}");
    }

    /// Damage between blocks that is long (past the read buffer), mostly zeros, and holds
    /// decoy markers (a marker without a valid header, a doubled first byte, markers cut at
    /// the end) is skipped to the next block whatever the reads return at a time: the skip
    /// over bytes that cannot start a marker keeps what a byte-at-a-time scan found.
    #[test]
    fn long_damage_with_decoy_markers_resynchronizes_at_the_next_block() {
        /// Returns at most `step` bytes a read.
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.1).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut rng = Rng(21);
        let a: Vec<_> = (0..5).map(|k| record(&mut rng, k)).collect();
        let b: Vec<_> = (5..9).map(|k| record(&mut rng, k)).collect();
        let blocks = [
            (BlockKind::RECORDS, a.clone()),
            (BlockKind::RECORDS, b.clone()),
        ];
        let clean = file(&blocks, FormatVersion::CURRENT);
        let second = MappedTrace::from_vec(clean.clone()).unwrap().blocks()[1].offset as usize;
        let mut garbage = vec![0u8; 200 << 10];
        for (at, decoy) in [
            (10, &b"HRXB"[..]),
            (70_000, b"HHRXBHRXB"),
            (131_071, b"HR"),
            (150_000, b"HRXBxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            (160_000, &[b'H'; 5_000][..]),
            (170_000, &b"HRXB".repeat(1_000)[..]),
        ] {
            garbage[at..at + decoy.len()].copy_from_slice(decoy);
        }
        *garbage.last_mut().unwrap() = b'H';
        let mut bytes = clean[..second].to_vec();
        bytes.extend_from_slice(&garbage);
        bytes.extend_from_slice(&clean[second..]);
        for step in [1, 7, 4096, usize::MAX] {
            let mut reader = TraceReader::new(Trickle(&bytes, step)).unwrap();
            let records: Vec<Record> = reader.by_ref().map(|r| r.unwrap().1).collect();
            assert_eq!(records, [a.clone(), b.clone()].concat(), "step {step}");
            // (The footer, which lists the blocks where they were, disagrees: not clean.)
            let recovery = reader.recovery();
            assert_eq!(
                recovery.bytes_discarded,
                garbage.len() as u64,
                "step {step}"
            );
            assert!(matches!(
                reader.warnings()[0].kind,
                WarningKind::Resynchronized { skipped_bytes, .. } if skipped_bytes == garbage.len() as u64
            ));
        }
    }

    #[test]
    fn garbage_empty_and_wrong_magic_are_refused() {
        let err = Trace::from_bytes(b"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "byte 0: the file is empty, not an hrx trace"
        );
        let err = Trace::from_bytes(b"GIF89a garbage garbage garbage garbage").unwrap_err();
        assert!(
            err.to_string().starts_with("byte 0: not an hrx trace"),
            "{err}"
        );
        // A file shorter than the magic shows only the bytes it has.
        let err = Trace::from_bytes(b"hi\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "byte 0: not an hrx trace: it starts \"hi\\n\", not \"HRXTRACE\""
        );
        let err = Trace::from_bytes(b"HRXTRA").unwrap_err();
        assert!(matches!(
            err.kind,
            ReadErrorKind::TruncatedHeader { len: 6 }
        ));
        let mut rng = Rng(99);
        let garbage: Vec<u8> = (0..10_000).map(|_| rng.next() as u8).collect();
        assert!(Trace::from_bytes(&garbage).is_err());
        assert!(MappedTrace::from_vec(garbage).is_err());
    }

    #[test]
    fn garbage_after_a_valid_header_is_discarded() {
        let mut bytes = FileHeader::current(crate::format::Compression::Zstd)
            .encode()
            .to_vec();
        let mut rng = Rng(4);
        bytes.extend((0..5000).map(|_| rng.next() as u8));
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert!(trace.records.is_empty());
        assert_eq!(trace.recovery.bytes_discarded, 5000);
        assert!(!MappedTrace::from_vec(bytes).unwrap().clean_close());
    }

    #[test]
    fn newer_major_is_refused_naming_both_versions() {
        let version = FormatVersion {
            major: FormatMajor(2),
            minor: FormatMinor(0),
        };
        let bytes = file(&[], version);
        let err = Trace::from_bytes(&bytes).unwrap_err().to_string();
        assert_eq!(
            err,
            "byte 8: trace format 2.0 is newer than this reader's format 1.17; \
             upgrade hrx-trace to read it"
        );
        assert!(MappedTrace::from_vec(bytes).is_err());
    }

    #[test]
    fn newer_minor_unknown_block_kind_is_skipped_with_a_warning() {
        let version = FormatVersion {
            major: FormatVersion::CURRENT.major,
            minor: FormatMinor(FormatVersion::CURRENT.minor.0 + 1),
        };
        let mut rng = Rng(5);
        let a = vec![record(&mut rng, 3)];
        let b = vec![record(&mut rng, 12)];
        let blocks = [
            (BlockKind::RECORDS, a.clone()),
            (BlockKind(77), vec![record(&mut rng, 1)]),
            (BlockKind::RECORDS, b.clone()),
        ];
        let bytes = file(&blocks, version);
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, [a, b].concat());
        let warnings: Vec<_> = trace.warnings.iter().map(|w| &w.kind).collect();
        assert!(matches!(warnings[0], WarningKind::NewerMinor { .. }));
        assert!(matches!(
            warnings[1],
            WarningKind::UnknownBlockKind {
                kind: BlockKind(77),
                ..
            }
        ));
        assert_eq!(warnings.len(), 2);
        assert_eq!(trace.recovery.skipped_blocks, 0);
        assert!(
            trace.warnings[0]
                .to_string()
                .contains(&FormatVersion::CURRENT.to_string())
        );
        let mapped = MappedTrace::from_vec(bytes).unwrap();
        assert_eq!(mapped.blocks().len(), 3);
        assert!(mapped.read_block(1).unwrap().records.is_empty());
    }

    /// One calibration (a trace cut short before its first flush) says no drift was
    /// measured (it read "within 0 ns of CLOCK_MONOTONIC", which a single measurement
    /// cannot tell).
    #[test]
    fn a_single_calibration_claims_no_drift_bound() {
        let one = HostClocks {
            source: Some(HostClockSource::Tsc),
            calibrations: 1,
            ns_per_tick_q32: 1 << 32,
            ..HostClocks::default()
        };
        let text = one.describe(FormatVersion::CURRENT).to_string();
        assert!(
            text.contains("1 calibration (at the start: no drift measured"),
            "{text}"
        );
        assert!(!text.contains("within"), "{text}");
        let two = HostClocks {
            calibrations: 2,
            ..one
        };
        let text = two.describe(FormatVersion::CURRENT).to_string();
        assert!(text.contains("2 calibrations, within 0 ns"), "{text}");
    }

    /// A trace of format 1.5 (before the session clock's calibrations) reads as before: its
    /// host times stand, and the reader says the clock was CLOCK_MONOTONIC.
    #[test]
    fn a_trace_without_host_clock_records_reads_as_monotonic() {
        let version = FormatVersion {
            major: FormatVersion::CURRENT.major,
            minor: FormatMinor(5),
        };
        let mut rng = Rng(11);
        // Every kind of format 1.5 (those before HostClock).
        let before = Record::KIND_NAMES
            .iter()
            .position(|k| *k == "HostClock")
            .unwrap() as u64;
        // One session start (kind 0): two would be warned of.
        let records: Vec<Record> = (0..40)
            .filter(|&k| k == 0 || k % before != 0)
            .map(|k| record(&mut rng, k % before))
            .filter(|r| !matches!(r, Record::HostClock(_)))
            .collect();
        let bytes = file(&[(BlockKind::RECORDS, records.clone())], version);
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, records);
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.recovery.clock.source, None);
        assert_eq!(trace.recovery.clock.calibrations, 0);
        let said = trace.recovery.clock.describe(version).to_string();
        assert_eq!(
            said,
            "CLOCK_MONOTONIC (no calibration record: format 1.5 or older)"
        );
        // The same records under a format that has calibrations lost them: not called older.
        let lost = FormatVersion::CALIBRATED;
        assert_eq!(Uncalibrated::of(version), Uncalibrated::Older);
        assert_eq!(Uncalibrated::of(lost), Uncalibrated::Lost(lost));
        let said = trace.recovery.clock.describe(lost).to_string();
        assert!(
            said.starts_with("not known (no calibration read: format 1.6 records them"),
            "{said}"
        );
    }

    #[test]
    fn unknown_record_variant_is_skipped() {
        // A record variant appended by a newer minor: tag 200, some body.
        let mut payload = Vec::new();
        let known = record(&mut Rng(1), 2);
        let mut frames = FrameEncoder::new();
        frames.encode(&known, &mut payload).unwrap();
        payload.extend_from_slice(&[3, 0xc8, 0x01, 0x05]);
        frames.encode(&known, &mut payload).unwrap();
        let mut bytes = FileHeader::current(crate::format::Compression::None)
            .encode()
            .to_vec();
        BlockEncoder::new(None)
            .unwrap()
            .encode(BlockKind::RECORDS, &payload, 3, &mut bytes)
            .unwrap();
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.records, vec![known.clone(), known]);
        assert!(matches!(
            trace.warnings[0].kind,
            WarningKind::RecordSkipped { index: 1, .. }
        ));
        assert_eq!(trace.recovery.skipped_records, 1);
    }

    /// A closed file of `version` holding one records block of `payload` (`records` frames).
    fn closed_file(payload: &[u8], records: u32, version: FormatVersion) -> Vec<u8> {
        let mut header = FileHeader::current(crate::format::Compression::None);
        header.version = version;
        let mut bytes = header.encode().to_vec();
        let mut encoder = BlockEncoder::new(None).unwrap();
        let at = bytes.len() as u64;
        encoder
            .encode(BlockKind::RECORDS, payload, records, &mut bytes)
            .unwrap();
        let footer = Footer {
            blocks: vec![crate::format::IndexEntry {
                offset: at,
                kind: BlockKind::RECORDS,
                record_count: records,
            }],
            records: u64::from(records),
            dropped_records: 0,
        };
        let footer_at = bytes.len() as u64;
        let payload = postcard::to_allocvec(&footer).unwrap();
        encoder
            .encode(BlockKind::FOOTER, &payload, 0, &mut bytes)
            .unwrap();
        bytes.extend_from_slice(&crate::format::encode_trailer(footer_at));
        bytes
    }

    /// A record of a newer minor this reader cannot decode, in a block that verified, is
    /// said as such, once for the file, and not as damage ("skipped record 1 of the block",
    /// "closed, but damaged parts were skipped"); by both readers. In a file of this reader's
    /// version the same bytes are damage.
    #[test]
    fn records_of_a_newer_minor_are_said_as_undecodable_not_as_damage() {
        let known = record(&mut Rng(1), 2);
        let mut payload = Vec::new();
        let mut frames = FrameEncoder::new();
        frames.encode(&known, &mut payload).unwrap();
        // Two records of a variant a newer minor appended: tag 200, some body.
        payload.extend_from_slice(&[3, 0xc8, 0x01, 0x05, 3, 0xc9, 0x01, 0x06]);
        frames.encode(&known, &mut payload).unwrap();
        let newer = FormatVersion {
            minor: FormatMinor(FormatVersion::CURRENT.minor.0 + 1),
            ..FormatVersion::CURRENT
        };
        let bytes = closed_file(&payload, 4, newer);
        let undecodable = |version| {
            format!(
                "byte 32: 2 records this reader cannot decode (written by a newer minor \
                 version {version}; update hrx-trace)"
            )
        };
        for threads in [0, 2] {
            let reader = TraceReader::new(&bytes[..]).unwrap().decode_ahead(threads);
            let trace = Trace::read_whole(reader.check_submission_numbers()).unwrap();
            assert_eq!(trace.records, vec![known.clone(), known.clone()]);
            let said: Vec<_> = trace.warnings.iter().map(|w| w.to_string()).collect();
            assert_eq!(said.len(), 2, "{said:?}");
            assert!(said[0].contains("is newer than this reader's"), "{said:?}");
            assert_eq!(said[1], undecodable(newer));
            let r = trace.recovery;
            assert_eq!(r.skipped_records, 0, "{r:?}");
            assert!(r.clean_close && !r.is_complete(), "{r:?}");
            assert_eq!(
                r.end(),
                "closed cleanly, but holds records of a newer minor version this reader \
                 cannot decode"
            );
        }
        let mapped = MappedTrace::from_vec(bytes).unwrap();
        let block = mapped.read_block(0).unwrap();
        assert_eq!(block.records, vec![known.clone(), known.clone()]);
        let said: Vec<_> = block.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(said, [undecodable(newer)]);
        // Of this reader's own version: damage.
        let same = closed_file(&payload, 4, FormatVersion::CURRENT);
        let trace = Trace::from_bytes(&same).unwrap();
        assert_eq!(trace.recovery.skipped_records, 2);
        assert_eq!(
            trace.recovery.end(),
            "closed, but damaged parts were skipped"
        );
    }

    /// A crafted file with two sessions (two session starts; a recording writes one) is
    /// said, once, at the second's block, with what the figures cover; it read as one
    /// session without a word.
    #[test]
    fn a_file_with_two_sessions_is_said() {
        let mut rng = Rng(5);
        // Kind 0 is a session start.
        let a: Vec<_> = (0..4).map(|k| record(&mut rng, k)).collect();
        let b: Vec<_> = (0..4).map(|k| record(&mut rng, k)).collect();
        assert!(matches!(b[0], Record::SessionStart(_)));
        let blocks = [
            (BlockKind::RECORDS, a.clone()),
            (BlockKind::RECORDS, b.clone()),
        ];
        let bytes = file(&blocks, FormatVersion::CURRENT);
        let second = MappedTrace::from_vec(bytes.clone()).unwrap().blocks()[1].offset;
        for threads in [0, 2] {
            let reader = TraceReader::new(&bytes[..]).unwrap().decode_ahead(threads);
            let trace = Trace::read_whole(reader).unwrap();
            assert_eq!(trace.records, [a.clone(), b.clone()].concat());
            let said: Vec<_> = trace.warnings.iter().map(|w| w.to_string()).collect();
            assert_eq!(
                said,
                [format!(
                    "byte {second}: 2 sessions in one file (the second starts here; a \
                     recording writes one): the figures cover them all together"
                )]
            );
        }
        let one = file(&[(BlockKind::RECORDS, a)], FormatVersion::CURRENT);
        assert!(Trace::from_bytes(&one).unwrap().warnings.is_empty());
    }

    /// A blob whose bytes are not those its hash names, in a block whose checksum was taken
    /// over them (as bytes changed while a bulk blob was written would be): the blob is
    /// skipped with a warning naming it, the trace is not whole, the record around it reads.
    /// Every reader said "closed cleanly", and replay called the changed frame a regression.
    #[test]
    fn a_blob_whose_bytes_are_not_its_hash_is_skipped_with_a_warning() {
        let bytes = vec![5u8; 10_000];
        let hash = crate::schema::BlobHash(xxhash_rust::xxh3::xxh3_64(&bytes));
        let mut changed = bytes.clone();
        changed[4321] ^= 1;
        let known = record(&mut Rng(1), 2);
        let mut payload = Vec::new();
        let mut frames = FrameEncoder::new();
        for r in [
            Record::Blob(crate::schema::Blob {
                hash,
                bytes: changed,
            }),
            known.clone(),
            Record::Blob(crate::schema::Blob { hash, bytes }),
        ] {
            frames.encode(&r, &mut payload).unwrap();
        }
        let mut file = FileHeader::current(crate::format::Compression::None)
            .encode()
            .to_vec();
        BlockEncoder::new(None)
            .unwrap()
            .encode(BlockKind::RECORDS, &payload, 3, &mut file)
            .unwrap();
        let trace = Trace::from_bytes(&file).unwrap();
        assert_eq!(trace.records.len(), 2, "{:?}", trace.warnings);
        assert_eq!(trace.records[0], known);
        assert!(matches!(&trace.records[1], Record::Blob(b) if b.hash == hash));
        let [warning] = &trace.warnings[..] else {
            panic!("{:?}", trace.warnings);
        };
        assert!(
            matches!(
                &warning.kind,
                WarningKind::RecordSkipped { index: 0, error: FormatError::BlobHash { hash: h, .. } }
                    if *h == hash
            ),
            "{warning}"
        );
        assert!(
            warning.to_string().contains("its contents are damaged"),
            "{warning}"
        );
        assert_eq!(trace.recovery.skipped_records, 1);
        assert!(!trace.recovery.is_complete());
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate() {
        // A block header declaring the maximum lengths, followed by only a few bytes.
        let mut bytes = FileHeader::current(crate::format::Compression::Zstd)
            .encode()
            .to_vec();
        let header = BlockHeader {
            kind: BlockKind::RECORDS,
            flags: crate::format::BLOCK_FLAG_ZSTD,
            stored_len: MAX_BLOCK_BYTES,
            uncompressed_len: MAX_BLOCK_BYTES,
            record_count: u32::MAX,
            checksum: 0,
        };
        bytes.extend_from_slice(&header.encode());
        bytes.extend_from_slice(&[0; 100]);
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert_eq!(trace.recovery.bytes_discarded, 132);
        let w = trace.warnings[0].to_string();
        assert_eq!(
            w,
            "byte 32: the file ends inside a block: 132 bytes discarded"
        );
    }

    #[test]
    fn blobs_are_found_by_hash() {
        let sink = MemorySink::new();
        let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        let hash = recorder.intern_blob(&[9; 10_000]).unwrap();
        recorder.close().unwrap();
        let trace = Trace::from_bytes(&sink.contents()).unwrap();
        assert_eq!(trace.blobs()[&hash], &[9; 10_000][..]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn arbitrary_bytes_after_a_header_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..2048)
        ) {
            let mut bytes = FileHeader::current(crate::format::Compression::Zstd)
                .encode()
                .to_vec();
            bytes.extend_from_slice(&tail);
            let trace = Trace::from_bytes(&bytes).unwrap();
            prop_assert!(trace.records.len() <= tail.len());
            let _ = MappedTrace::from_vec(bytes);
        }

        #[test]
        fn arbitrary_records_round_trip_through_a_file(
            seed in any::<u64>(), n in 0usize..60
        ) {
            let mut rng = Rng(seed);
            let records: Vec<_> = (0..n).map(|_| { let k = rng.next(); record(&mut rng, k) }).collect();
            let bytes = file(&[(BlockKind::RECORDS, records.clone())], FormatVersion::CURRENT);
            let trace = Trace::from_bytes(&bytes).unwrap();
            prop_assert_eq!(trace.records, records);
        }
    }
}
