//! `stats` of a trace that is still being written (`hrx-trace stats --follow`), one new
//! block at a time.
//!
//! [`StatsTail`] reads the file once, then on each [`StatsTail::read_new`] only what was
//! appended since: it reopens the file at the start of the last block it read (complete,
//! so it no longer changes) behind a copy of the file header, skips the records of that
//! block it already took, and pushes the rest into the same [`Joiner`] and
//! [`StatsVisitor`]. A refresh costs the decoding of the new blocks and a copy of the
//! bounded statistics state, never a decoding of the whole trace (the timeline's
//! `view --follow` reads the same way).
//!
//! A block the writer has not finished yet reads as a torn tail: it is read again at the
//! next refresh, and only the latest read's torn tail is reported. So is everything a read
//! found from the block the next read resumes at (that block, and the summaries, damaged
//! blocks and torn tail after it): the next read's count of it replaces this one's, so the
//! blocks, damage and warnings add up to a one-shot read's ([`account_read`]). The footer and trailer
//! describe the whole file, so when a later read reaches them, how the trace ends (closed
//! cleanly, blocks missing, a damaged footer) is checked on the file itself through its
//! footer's block index ([`hrx_capture::MappedTrace`]), not from the part read. The trace is over when
//! its session end is read ([`TailState::Closed`]) or a fatal signal was recorded
//! ([`TailState::Crashed`]: the recorder's handler, or `hrx-trace record` seeing its
//! program die, appends one), or when it has neither and nobody writes it any more
//! ([`TailState::Unclosed`]: a recorder killed with no note of it, a file cut short; no
//! recorder holds its lock and it stopped growing, [`hrx_capture::WriterWatch`]).
//!
//! A new recording to the same path is written as a new file renamed over it
//! ([`hrx_capture::FileSink::create`]), once the earlier recording's recorder let go of it.
//! The tail holds the file it opened and reads on in it: the report is of the recording it
//! followed, whole, and [`StatsTail::recorded_again`] says that the path names another one
//! now (`stats --follow` says so under its report; it reopened the path at each read, so it
//! went on in the new file at the old offset, or ended with the earlier report and no word
//! of the new one when the rename came during its last read).
//!
//! Where the folder is not writable, a new recording truncates the file and writes it
//! again: appended blocks would then be read at the old offset, among another recording's
//! bytes (a break-it pass: 20,312 submissions and a "damaged block" reported for a file of
//! 20,000, clean). [`rewritten`] tells (the file shorter than what was read, or another
//! first block), and the tail then starts again from the new recording's beginning
//! ([`StatsTail::restarts`]); the timeline's `view --follow` asks the same, of the path.

use crate::scan::{Joiner, ScanSummary};
use crate::stats::{Stats, StatsVisitor};
use hrx_capture::ShowPath;
use hrx_capture::reader::WarningKind;
use hrx_capture::schema::FatalSignal;
use hrx_capture::{ReadError, Record, Recovery, TraceReader, Warning, WriterWatch};
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Environment variable: `N` bounds each refresh of `stats --follow` and `view --follow`
/// to about `N` bytes of the file besides its time bound ([`ReadBudget::refresh`]), so that
/// a test can be behind a recording without racing one.
pub const READ_BYTES_ENV: &str = "HRX_FOLLOW_READ_BYTES";

/// How much one read of a followed trace may take before it returns with what it read
/// (see the module docs): it stops at the first block that starts `bytes` or more past
/// where it started, or once `deadline` has passed (asked at each block). A read always
/// takes at least one record when there is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadBudget {
    /// Bytes of the file past the read's start.
    pub bytes: Option<u64>,
    /// When to stop.
    pub deadline: Option<Instant>,
}

impl ReadBudget {
    /// No bound: a read goes to the file's end as it is then.
    pub const UNBOUNDED: ReadBudget = ReadBudget {
        bytes: None,
        deadline: None,
    };

    /// A read that stops at the first block starting `bytes` or more past its start.
    pub fn bytes(bytes: u64) -> ReadBudget {
        ReadBudget {
            bytes: Some(bytes),
            deadline: None,
        }
    }

    /// A read that stops at the first block once `deadline` has passed.
    pub fn until(deadline: Instant) -> ReadBudget {
        ReadBudget {
            bytes: None,
            deadline: Some(deadline),
        }
    }

    /// A refresh's budget in `stats --follow` and `view --follow`: until `deadline`, and
    /// no more than [`READ_BYTES_ENV`] bytes where that is set to a number (anything else
    /// there is ignored).
    pub fn refresh(deadline: Instant) -> ReadBudget {
        ReadBudget {
            bytes: std::env::var(READ_BYTES_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok()),
            deadline: Some(deadline),
        }
    }

    /// Whether a read that started at file offset `start` stops at a block starting at `at`.
    pub fn spent(&self, start: u64, at: u64) -> bool {
        self.bytes.is_some_and(|b| at.saturating_sub(start) >= b)
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// One read of a follower over the blocks from where the last read left off (the block at
/// `resume_at`, `taken` of its records already taken), within a [`ReadBudget`]: which
/// records are new, when to stop, and where the next read resumes. One walk for `stats
/// --follow` and `view --follow`, whose reads differ only in what they do with a record.
#[derive(Debug)]
pub struct Walk {
    resume_at: u64,
    taken: u64,
    budget: ReadBudget,
    block: u64,
    in_block: u64,
    stopped: bool,
    /// The reader's counts and warnings before `block` ([`TraceReader::before_block`]).
    before_block: (Recovery, usize),
    /// Warnings of the file header, said again by every read.
    header_warnings: usize,
}

impl Walk {
    /// A read by `reader`, just opened, resuming at the block at file offset `resume_at`,
    /// `taken` of whose records an earlier read took.
    pub fn new<R: Read>(
        reader: &TraceReader<R>,
        resume_at: u64,
        taken: u64,
        budget: ReadBudget,
    ) -> Walk {
        let header_warnings = reader.warnings().len();
        Walk {
            resume_at,
            taken,
            budget,
            block: resume_at,
            in_block: 0,
            stopped: false,
            // The read starts at that block: nothing before it but the header.
            before_block: (Recovery::default(), header_warnings),
            header_warnings,
        }
    }

    /// A record of the block at file offset `at`, just handed out by `reader`: `None` when
    /// an earlier read took it, else whether the read stops after taking it (a block past
    /// the budget has its first record taken, then the read stops: the next one resumes at
    /// that block, as after any block read last).
    pub fn record<R: Read>(&mut self, reader: &TraceReader<R>, at: u64) -> Option<bool> {
        if at != self.block {
            (self.block, self.in_block) = (at, 0);
            self.before_block = reader.before_block();
            self.stopped = self.budget.spent(self.resume_at, at);
        }
        self.in_block += 1;
        (at != self.resume_at || self.in_block > self.taken).then_some(self.stopped)
    }

    /// Where the next read resumes (`resume_at`, `taken`), and the bytes of the file read
    /// (`len` bytes long now) that this read left unread because its budget was spent (at
    /// least 1), else 0. What was taken is not taken again, even when the read failed after
    /// it. The length is the file's that was read, not the path's: a path recorded again
    /// names another file meanwhile.
    pub fn end(&self, len: impl FnOnce() -> u64) -> (u64, u64, u64) {
        let (resume_at, taken) = if self.block != self.resume_at || self.in_block > self.taken {
            (self.block, self.in_block)
        } else {
            (self.resume_at, self.taken)
        };
        let unread = if self.stopped {
            len().saturating_sub(self.block).max(1)
        } else {
            0
        };
        (resume_at, taken, unread)
    }
}

/// Why following a trace failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FollowError {
    /// The trace could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file could not be opened again for the appended part.
    #[error("{}: cannot read what was appended: {source}", path.shown())]
    Reopen {
        /// The trace.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// Where a followed trace stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailState {
    /// Still being written (or its writer was gone too recently to tell).
    Live,
    /// Its session end was read: the recorder closed it.
    Closed,
    /// A fatal signal was recorded: the program crashed or was killed by a signal.
    Crashed(FatalSignal),
    /// Neither closed nor crashed, and nobody writes it any more: its recorder was killed
    /// without a note of it, or the file was cut short ([`hrx_capture::UNCLOSED_ENDING`]).
    Unclosed,
}

/// Bytes of a block's header: what [`rewritten`] compares of the first block.
const BLOCK_HEADER_LEN: u64 = hrx_capture::format::BLOCK_HEADER_LEN as u64;

/// The first block's header of the trace at `path` whose file header is `header_len` bytes
/// (shorter, or empty, when the file is): what [`rewritten`] compares.
///
/// # Errors
///
/// An I/O error when the file cannot be opened or read.
pub fn first_block(path: &Path, header_len: u64) -> io::Result<Vec<u8>> {
    read_at(&File::open(path)?, header_len, BLOCK_HEADER_LEN)
}

/// Up to `len` bytes of `file` from offset `at` (fewer where it ends first), read without
/// moving its offset.
fn read_at(file: &File, at: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; usize::try_from(len).unwrap_or(usize::MAX)];
    let mut read = 0;
    while read < bytes.len() {
        match file.read_at(&mut bytes[read..], at + read as u64) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(read);
    Ok(bytes)
}

/// Whether the file at `path` is no longer the recording followed so far: shorter than
/// `read_to` (bytes read), or whose first block ([`first_block`]) is not `first` (a new
/// recording truncated it and wrote it again). `false` when it cannot be read now (a later
/// poll tries again).
pub fn rewritten(path: &Path, header_len: u64, read_to: u64, first: &[u8]) -> bool {
    File::open(path).is_ok_and(|file| rewritten_file(&file, header_len, read_to, first))
}

/// [`rewritten`] of a file open.
fn rewritten_file(file: &File, header_len: u64, read_to: u64, first: &[u8]) -> bool {
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    if len < read_to {
        return true;
    }
    let Ok(now) = read_at(file, header_len, BLOCK_HEADER_LEN) else {
        return false;
    };
    let n = now.len().min(first.len());
    now[..n] != first[..n]
}

/// A followed trace's statistics (see the module docs).
#[derive(Debug)]
pub struct StatsTail {
    path: PathBuf,
    /// The file followed, held open: every read reads it, whatever `path` names later.
    file: File,
    /// The file header, put before the appended bytes of each later read.
    header: Vec<u8>,
    /// The first block's header when it was read ([`rewritten`]).
    first_block: Vec<u8>,
    /// Times the file was found rewritten by a new recording and read again from its start.
    restarts: u64,
    joiner: Joiner,
    visitor: StatsVisitor,
    /// File offset of the last block read, and how many of its records were taken.
    resume_at: u64,
    taken: u64,
    /// Totals over every read so far.
    recovery: Recovery,
    /// What the latest read counted from the block the next resumes at, which the next
    /// counts again ([`account_read`]).
    provisional: Recovery,
    /// Warnings of earlier reads that stay true (not a torn tail: that is read again).
    warnings: Vec<Warning>,
    /// The latest read's torn tail, if it ended inside a block.
    latest_warnings: Vec<Warning>,
    fatal: Option<FatalSignal>,
    /// Asked after each read whether the recording ended without a close.
    watch: WriterWatch,
    unclosed: bool,
    /// Bytes of the file the latest read left for the next one (its budget was spent).
    unread: u64,
}

impl StatsTail {
    /// Reads the whole trace at `path` as it is now.
    ///
    /// # Errors
    ///
    /// [`FollowError::Read`] when it cannot be opened, its header is unreadable, or a read
    /// fails.
    pub fn open(path: &Path) -> Result<StatsTail, FollowError> {
        StatsTail::open_within(path, ReadBudget::UNBOUNDED)
    }

    /// Reads the trace at `path` as it is now, as far as `budget` goes: the rest is left
    /// for [`StatsTail::read_new_within`] ([`StatsTail::unread_bytes`] says how much).
    ///
    /// # Errors
    ///
    /// As [`StatsTail::open`].
    pub fn open_within(path: &Path, budget: ReadBudget) -> Result<StatsTail, FollowError> {
        let reopen = |source| FollowError::Reopen {
            path: path.to_owned(),
            source,
        };
        let file = hrx_capture::reader::open_file(path)?;
        // As long as it is now, as `TraceReader::open` reads: a writer faster than this read
        // would keep it from ending.
        let len = file.metadata().map_err(reopen)?.len();
        let reader = TraceReader::new(file.try_clone().map_err(reopen)?.take(len))?.growing();
        let header_len = u64::from(reader.header().header_len);
        let header = read_at(&file, 0, header_len).map_err(reopen)?;
        let first_block = read_at(&file, header_len, BLOCK_HEADER_LEN).map_err(reopen)?;
        let mut tail = StatsTail {
            path: path.to_owned(),
            file,
            header,
            first_block,
            restarts: 0,
            joiner: Joiner::new(),
            visitor: StatsVisitor::new(),
            resume_at: header_len,
            taken: 0,
            recovery: Recovery::default(),
            provisional: Recovery::default(),
            warnings: Vec::new(),
            latest_warnings: Vec::new(),
            fatal: None,
            watch: WriterWatch::default(),
            unclosed: false,
            unread: 0,
        };
        tail.take(reader, header_len, budget)?;
        Ok(tail)
    }

    /// Reads what was appended since the last read; returns how many records it took. A
    /// trace still live after it is probed for a writer (see [`TailState::Unclosed`]).
    ///
    /// # Errors
    ///
    /// [`FollowError::Reopen`] when the file cannot be reopened; [`FollowError::Read`] when
    /// a read fails.
    pub fn read_new(&mut self) -> Result<u64, FollowError> {
        self.read_new_within(ReadBudget::UNBOUNDED)
    }

    /// [`StatsTail::read_new`], as far as `budget` goes (see the module docs): the rest is
    /// left for the next read, which continues where this one stopped.
    ///
    /// # Errors
    ///
    /// As [`StatsTail::read_new`].
    pub fn read_new_within(&mut self, budget: ReadBudget) -> Result<u64, FollowError> {
        let header_len = self.header.len() as u64;
        if rewritten_file(&self.file, header_len, self.resume_at, &self.first_block) {
            let restarts = self.restarts + 1;
            *self = StatsTail::open_within(&self.path, budget)?;
            self.restarts = restarts;
            return Ok(self.recovery.records);
        }
        let reopen = |source| FollowError::Reopen {
            path: self.path.clone(),
            source,
        };
        let mut file = self.file.try_clone().map_err(reopen)?;
        file.seek(SeekFrom::Start(self.resume_at)).map_err(reopen)?;
        let reader = TraceReader::new(Cursor::new(self.header.clone()).chain(file))?.growing();
        let before = self.recovery.records;
        // Offsets in the stream are the header, then the file from `resume_at`.
        self.take(reader, self.resume_at, budget)?;
        // A read that left part of the file has not seen the end: nobody writing it any
        // more would end the following before the rest was read.
        if self.unread == 0 && self.state() == TailState::Live && self.watch.ended_file(&self.file)
        {
            self.unclosed = true;
        }
        Ok(self.recovery.records - before)
    }

    /// Times the file was found rewritten by a new recording (see the module docs) and read
    /// again from its start.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Whether the path followed names another recording now than the one read (see the
    /// module docs): another file (a new recording renamed over it), or this one written
    /// again since the last read. `false` when the path names nothing now.
    pub fn recorded_again(&self) -> bool {
        let identity = |m: std::fs::Metadata| (m.dev(), m.ino());
        let named = std::fs::metadata(&self.path).map(identity);
        let held = self.file.metadata().map(identity);
        match (named, held) {
            (Ok(named), Ok(held)) if named != held => true,
            (Ok(_), _) => rewritten_file(
                &self.file,
                self.header.len() as u64,
                self.resume_at,
                &self.first_block,
            ),
            (Err(_), _) => false,
        }
    }

    /// Whether a recorder holds the file followed now: the file read, not the path's, which
    /// may name a new recording by now (see the module docs).
    pub fn being_recorded(&self) -> bool {
        hrx_capture::recorder_holds_file(&self.file).unwrap_or(false)
    }

    /// Bytes of the file the latest read left unread because its budget was spent (as
    /// long as the file was then); 0 when it read to the end.
    pub fn unread_bytes(&self) -> u64 {
        self.unread
    }

    /// Records taken so far.
    pub fn records(&self) -> u64 {
        self.recovery.records
    }

    /// What was read so far: records, blocks, whether the footer and trailer were read.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Where the trace stands.
    pub fn state(&self) -> TailState {
        match self.fatal {
            Some(fatal) => TailState::Crashed(fatal),
            None if self.joiner.session_ended() => TailState::Closed,
            None if self.unclosed => TailState::Unclosed,
            None => TailState::Live,
        }
    }

    /// The statistics of what was read so far; the tail reads on. Timings still waiting
    /// for their `Submit` are not counted unplaced: it may come in a later block.
    pub fn snapshot(&self) -> (Stats, ScanSummary) {
        let summary = self
            .joiner
            .snapshot(Some(self.recovery), self.all_warnings());
        (self.visitor.clone().finish(&summary), summary)
    }

    /// The statistics of everything read, when the trace is over (or following stops).
    pub fn finish(mut self) -> (Stats, ScanSummary) {
        let warnings = self.all_warnings();
        let summary = self
            .joiner
            .finish(&mut self.visitor, Some(self.recovery), warnings);
        (self.visitor.finish(&summary), summary)
    }

    fn all_warnings(&self) -> Vec<Warning> {
        self.warnings
            .iter()
            .chain(&self.latest_warnings)
            .cloned()
            .collect()
    }

    /// Takes every record of `reader` (whose first block is at file offset `origin`) not
    /// taken before, as far as `budget` goes.
    fn take<R: Read>(
        &mut self,
        mut reader: TraceReader<R>,
        origin: u64,
        budget: ReadBudget,
    ) -> Result<(), ReadError> {
        let header_len = self.header.len() as u64;
        let mut walk = Walk::new(&reader, self.resume_at, self.taken, budget);
        self.unread = 0;
        while let Some(item) = reader.next() {
            let (offset, record) = item?;
            let at = (offset + origin).saturating_sub(header_len);
            let Some(stopped) = walk.record(&reader, at) else {
                continue;
            };
            // Counted here, not from the reader's totals, which count the block read again.
            let total = &mut self.recovery;
            total.records += 1;
            total.observe(&record);
            if let Record::FatalSignal(fatal) = &record {
                self.fatal.get_or_insert(*fatal);
            }
            self.joiner.push(&record, &mut self.visitor);
            if stopped {
                break;
            }
        }
        (self.resume_at, self.taken, self.unread) =
            walk.end(|| self.file.metadata().map_or(0, |m| m.len()));
        let file = &self.file;
        let (kept, latest) = account_read(
            || hrx_capture::MappedTrace::map_file(file),
            (header_len, origin),
            (&walk, &reader),
            (&mut self.recovery, &mut self.provisional),
        )?;
        self.warnings.extend(kept);
        self.latest_warnings = latest;
        Ok(())
    }
}

/// Adds what a follower's read by `reader`, over `walk`, found to `total`: its block and
/// damage counts and its warnings, placed in the whole file (the part read from file offset
/// `origin` was read with the file header, `header_len` bytes, before it). Returns the
/// warnings to keep and those the next read finds again, which replace the last read's.
///
/// The next read resumes at a block this one read (the block it stopped in, or the last
/// records block: blocks after it may be torn still), so it reads that block and
/// whatever followed it again. What this read counted from there on is `provisional`: the
/// next read's count of the same bytes replaces it, so that the totals are a one-shot
/// read's (they counted the block read again, and the summary blocks, footer and damaged
/// blocks after it, once per read: 24 blocks for 22).
///
/// A read from mid-file that reached the footer and trailer checked them against the part
/// it read (blocks missing, a trailer "damaged"): how the trace ends is then checked on the
/// file read itself (`mapped`, called then), from its footer's index. One rule for `stats
/// --follow` and `view --follow` (the view's follower lacked it and warned of missing
/// blocks and a damaged trailer at every close it followed; a helper's pass).
///
/// # Errors
///
/// When `mapped` cannot map the file read to check its end.
pub fn account_read<R: Read>(
    mapped: impl FnOnce() -> Result<hrx_capture::MappedTrace, ReadError>,
    (header_len, origin): (u64, u64),
    (walk, reader): (&Walk, &TraceReader<R>),
    (total, provisional): (&mut Recovery, &mut Recovery),
) -> Result<(Vec<Warning>, Vec<Warning>), ReadError> {
    let (read, warnings) = (reader.recovery(), reader.warnings());
    // A later read starts mid-file: the footer's block count and the trailer's offset
    // are checked against that part, so what the reader says of them is wrong there.
    // The end is checked on the file itself, from its footer's index.
    let partial_end = origin > header_len && read.closed;
    let about_the_end = |kind: &WarningKind| {
        matches!(
            kind,
            WarningKind::BadFooter { .. }
                | WarningKind::MissingBlocks { .. }
                | WarningKind::TrailingData { .. }
        )
    };
    let missing = warnings
        .iter()
        .filter_map(|w| match w.kind {
            WarningKind::MissingBlocks { blocks, records } if partial_end => {
                Some((blocks, records))
            }
            _ => None,
        })
        .fold((0, 0), |(b, r), (blocks, records)| {
            (b + blocks, r + records)
        });
    let mut counted = *read;
    if partial_end {
        counted.skipped_blocks = counted.skipped_blocks.saturating_sub(missing.0);
        counted.skipped_records = counted.skipped_records.saturating_sub(missing.1);
        // The trailer did not point at the footer's offset in the part read: the bytes
        // after the footer read as damage there.
        counted.bytes_discarded = reader.before_block().0.bytes_discarded;
    }
    let (before_resume, said_before_resume) = walk.before_block;
    for (total, earlier, now, before) in [
        (
            &mut total.complete_blocks,
            &mut provisional.complete_blocks,
            counted.complete_blocks,
            before_resume.complete_blocks,
        ),
        (
            &mut total.skipped_blocks,
            &mut provisional.skipped_blocks,
            counted.skipped_blocks,
            before_resume.skipped_blocks,
        ),
        (
            &mut total.skipped_records,
            &mut provisional.skipped_records,
            counted.skipped_records,
            before_resume.skipped_records,
        ),
        (
            &mut total.newer_records,
            &mut provisional.newer_records,
            counted.newer_records,
            before_resume.newer_records,
        ),
        (
            &mut total.bytes_discarded,
            &mut provisional.bytes_discarded,
            counted.bytes_discarded,
            before_resume.bytes_discarded,
        ),
    ] {
        *total = total.saturating_sub(*earlier).saturating_add(now);
        *earlier = now.saturating_sub(before);
    }
    total.clean_close = read.clean_close;
    total.closed = read.closed;
    // A later read says the file header's warnings again: the first read said them.
    let header = if origin > header_len {
        walk.header_warnings
    } else {
        0
    };
    let split = said_before_resume.max(header);
    let (mut kept, mut latest) = (Vec::new(), Vec::new());
    for (i, warning) in warnings.iter().enumerate().skip(header) {
        if partial_end && about_the_end(&warning.kind) {
            continue;
        }
        // At its place in the file, as the records' (the reader counts from the header
        // put before the part it reads).
        let warning = Warning {
            offset: (warning.offset + origin).saturating_sub(header_len),
            kind: warning.kind.clone(),
        };
        // From the block the next read resumes at: found again by it (a torn tail, another
        // trace joined on, a damaged block were said again by every read after them).
        if i < split {
            kept.push(warning);
        } else {
            latest.push(warning);
        }
    }
    if partial_end {
        // The file read, not the path's: the path may name another recording by now, or
        // none (`stats --follow` of a trace deleted while followed failed here).
        let mapped = mapped()?;
        total.bytes_discarded = 0;
        total.clean_close = mapped.clean_close();
        total.closed = mapped.closed();
        latest.extend(
            mapped
                .warnings()
                .iter()
                .filter(|w| about_the_end(&w.kind))
                .cloned(),
        );
    }
    Ok((kept, latest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan_reader;
    use crate::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::schema::SignalWitness;
    use hrx_capture::{MemorySink, Recorder};
    use std::io::Write;

    /// A trace of many small blocks (about 1 KiB of records each), as its bytes; `crash`
    /// ends it with a fatal signal and no session end, as a crashed program's does.
    fn trace_bytes(crash: bool) -> Vec<u8> {
        let sink = MemorySink::new();
        let options = crate::timeline::fixtures::small_blocks();
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        let records = pipeline(PipelineSpec {
            busy_every: Some(7),
            ..PipelineSpec::ops(2_000)
        });
        // The recorder writes its own session start: a second would be said.
        let records = records.filter(|r| !matches!(r, Record::SessionStart(_)));
        for record in records {
            if crash && matches!(record, Record::SessionEnd(_)) {
                recorder.record(&Record::FatalSignal(FatalSignal {
                    time_ns: 1,
                    signal: 11,
                    witness: SignalWitness::default(),
                    fault_address: Some(8),
                }));
                continue;
            }
            recorder.record(&record);
        }
        recorder.close().unwrap();
        sink.contents()
    }

    /// The statistics of the whole of `bytes`, read in one pass.
    fn whole(bytes: &[u8]) -> (Stats, ScanSummary) {
        let mut visitor = StatsVisitor::new();
        let summary = scan_reader(TraceReader::new(bytes).unwrap(), &mut visitor).unwrap();
        (visitor.finish(&summary), summary)
    }

    /// A follower of `live.hrxt` in `dir`, opened while the file held a third of `bytes`,
    /// and that file, still open for the rest.
    fn following_a_third(dir: &Path, bytes: &[u8]) -> (File, StatsTail) {
        let path = dir.join("live.hrxt");
        let mut earlier = File::create(&path).unwrap();
        earlier.write_all(&bytes[..bytes.len() / 3]).unwrap();
        let tail = StatsTail::open(&path).unwrap();
        assert_eq!(tail.state(), TailState::Live);
        (earlier, tail)
    }

    /// `tail`'s report is a one-pass read of the whole of `bytes`, with no warning.
    fn assert_read_whole(tail: StatsTail, bytes: &[u8]) {
        let (stats, summary) = tail.finish();
        let (want, want_summary) = whole(bytes);
        assert_eq!(stats, want);
        assert_eq!(summary.recovery, want_summary.recovery);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    }

    /// Spans timed: the kernels', the copies' and the host callbacks' (which are no
    /// kernels).
    fn spans(stats: &Stats) -> u64 {
        let copies: u64 = stats.copy_labels.iter().map(|k| k.count).sum();
        let hosts: u64 = stats.host_callbacks.iter().map(|k| k.count).sum();
        stats.kernels.iter().map(|k| k.count).sum::<u64>() + copies + hosts
    }

    /// A new recording that truncates the followed file and writes it again is followed from
    /// its start: the totals are the new trace's, with no damage reported (the old offset's
    /// read counted both recordings and called the new one damaged).
    #[test]
    fn a_trace_rewritten_by_a_new_recording_is_followed_from_its_start() {
        let old = trace_bytes(false);
        let new = {
            let sink = MemorySink::new();
            let options = crate::timeline::fixtures::small_blocks();
            let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
            let records = pipeline(PipelineSpec::ops(300));
            for record in records.filter(|r| !matches!(r, Record::SessionStart(_))) {
                recorder.record(&record);
            }
            recorder.close().unwrap();
            sink.contents()
        };
        assert!(new.len() < old.len() / 2);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        std::fs::write(&path, &old[..old.len() / 2]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        assert_eq!(tail.state(), TailState::Live);
        std::fs::write(&path, &new).unwrap();
        assert!(tail.recorded_again(), "the file it read was written again");
        tail.read_new().unwrap();
        assert_eq!(tail.restarts(), 1);
        assert!(!tail.recorded_again(), "it reads the new recording now");
        assert_eq!(tail.state(), TailState::Closed);
        let (stats, summary) = tail.finish();
        let (expected, expected_summary) = whole(&new);
        assert_eq!(stats.submissions.accepted, expected.submissions.accepted);
        assert_eq!(spans(&stats), spans(&expected));
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        let (got, want) = (
            summary.recovery.unwrap(),
            expected_summary.recovery.unwrap(),
        );
        assert_eq!(
            (got.records, got.complete_blocks, got.clean_close),
            (want.records, want.complete_blocks, want.clean_close)
        );
    }

    /// A new recording renamed over the followed path (as a recorder replaces an earlier
    /// trace, `FileSink::create`) while the tail is behind the earlier recording: the tail
    /// reads the earlier one on to its end, whole, in the file it holds, and says that the
    /// path names another recording now. It reopened the path at each read: it went on in
    /// the new file from the old offset (here a restart on the new recording's totals), or
    /// ended with the earlier report and no word of the new one.
    #[test]
    fn a_trace_recorded_again_while_followed_is_read_whole_and_said_so() {
        let old = trace_bytes(false);
        let new = {
            let sink = MemorySink::new();
            let options = crate::timeline::fixtures::small_blocks();
            let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
            for record in pipeline(PipelineSpec::ops(300)) {
                if !matches!(record, Record::SessionStart(_)) {
                    recorder.record(&record);
                }
            }
            recorder.close().unwrap();
            sink.contents()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let (mut earlier, mut tail) = following_a_third(dir.path(), &old);
        assert!(!tail.recorded_again());
        let beside = dir.path().join(".live.hrxt.1.new");
        std::fs::write(&beside, &new).unwrap();
        std::fs::rename(&beside, &path).unwrap();
        assert!(tail.recorded_again(), "the path names the new recording");
        // The earlier recording's last blocks reach its file, which has no name now.
        earlier.write_all(&old[old.len() / 3..]).unwrap();
        // A bounded read says what it left of that file, not of the one the path names.
        assert_ne!(old.len(), new.len());
        tail.read_new_within(ReadBudget::bytes(old.len() as u64 / 10))
            .unwrap();
        assert!(tail.unread_bytes() > 0);
        assert_eq!(tail.unread_bytes(), old.len() as u64 - tail.resume_at);
        tail.read_new().unwrap();
        assert_eq!((tail.state(), tail.restarts()), (TailState::Closed, 0));
        assert!(tail.recorded_again());
        assert_read_whole(tail, &old);
    }

    /// A trace deleted (or renamed away) while followed is read to its end in the file the
    /// follower holds, its close checked there: `stats --follow` failed with "cannot open
    /// it" at the read that reached the footer, and printed no report (a break-it pass).
    #[test]
    fn a_trace_deleted_while_followed_is_read_to_its_close() {
        let old = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let (mut earlier, mut tail) = following_a_third(dir.path(), &old);
        std::fs::remove_file(dir.path().join("live.hrxt")).unwrap();
        earlier.write_all(&old[old.len() / 3..]).unwrap();
        tail.read_new().unwrap();
        assert_eq!((tail.state(), tail.restarts()), (TailState::Closed, 0));
        assert_read_whole(tail, &old);
    }

    #[test]
    fn a_growing_trace_is_read_block_by_block_to_the_final_totals() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        // The file grows in steps that end anywhere, inside a block too.
        let cuts = [
            bytes.len() / 6,
            bytes.len() / 3 + 17,
            bytes.len() / 2 + 3,
            bytes.len() * 4 / 5 + 5,
            bytes.len(),
        ];
        std::fs::write(&path, &bytes[..cuts[0]]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        assert_eq!(tail.state(), TailState::Live);
        let (first, _) = tail.snapshot();
        let mut shown = (tail.records(), spans(&first), first.submissions.accepted);
        assert!(shown.1 > 0);
        for pair in cuts.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            // What was read before is damaged now: a reader of the whole file would see
            // it, one that reads only appended blocks does not.
            let resume_at = tail.resume_at as usize;
            let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.seek(SeekFrom::Start(resume_at as u64 / 2)).unwrap();
            file.write_all(&vec![0xA5; resume_at / 2 - resume_at / 4])
                .unwrap();
            file.seek(SeekFrom::Start(from as u64)).unwrap();
            file.write_all(&bytes[from..to]).unwrap();
            drop(file);
            assert!(tail.read_new().unwrap() > 0);
            let (stats, summary) = tail.snapshot();
            let now = (tail.records(), spans(&stats), stats.submissions.accepted);
            // Counts grow ...
            assert!(
                now.0 > shown.0 && now.1 > shown.1 && now.2 >= shown.2,
                "{now:?}"
            );
            shown = now;
            // ... as a whole read of the undamaged prefix counts them.
            let (prefix, prefix_summary) = whole(&bytes[..to]);
            assert_eq!(summary.records, prefix_summary.records);
            assert_eq!(tail.records(), prefix_summary.records);
            assert_eq!(spans(&stats), spans(&prefix));
            assert_eq!(stats.submissions, prefix.submissions);
            assert!(
                summary
                    .warnings
                    .iter()
                    .all(|w| !w.to_string().contains("skipped"))
            );
        }
        assert_eq!(tail.read_new().unwrap(), 0, "nothing appended, nothing new");
        assert_eq!(tail.state(), TailState::Closed);
        let (stats, summary) = tail.finish();
        let (all, all_summary) = whole(&bytes);
        assert_eq!(stats, all);
        assert_eq!(summary.records, all_summary.records);
        assert!(summary.session_ended);
        assert_eq!(spans(&stats), 2_000);
    }

    /// A recorder that writes faster than one thread decodes: each read is given less than
    /// what is there (a budget of bytes), returns with what it took and says how much it
    /// left, and the next continues exactly where it stopped. The totals at the end are a
    /// whole read's: nothing taken twice, nothing skipped. (A read went to the file's end,
    /// which kept moving: `stats --follow` printed nothing for four minutes.)
    #[test]
    fn a_bounded_read_stops_early_says_what_it_left_and_the_next_continues_there() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let budget = ReadBudget::bytes(bytes.len() as u64 / 20);
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let mut tail = StatsTail::open_within(&path, budget).unwrap();
        assert!(tail.unread_bytes() > 0, "the open left part of the file");
        assert_eq!(
            tail.unread_bytes(),
            (bytes.len() / 2) as u64 - tail.resume_at,
            "from the block it stopped in to the file's end"
        );
        // The rest is written at once: more than one read's budget.
        std::fs::write(&path, &bytes).unwrap();
        let mut reads = 1;
        let mut records = tail.records();
        while tail.state() == TailState::Live || tail.unread_bytes() > 0 {
            let (unread, at) = (tail.unread_bytes(), tail.resume_at);
            let took = tail.read_new_within(budget).unwrap();
            assert!(took > 0, "every read makes progress");
            assert_eq!(tail.records(), records + took);
            records = tail.records();
            assert!(tail.resume_at >= at);
            if tail.unread_bytes() > 0 {
                assert!(tail.unread_bytes() < unread.max(bytes.len() as u64 - at));
                assert_eq!(tail.unread_bytes(), bytes.len() as u64 - tail.resume_at);
                // The totals as they stand: no read of the end yet, so nothing said of it.
                let (_, summary) = tail.snapshot();
                assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
            }
            reads += 1;
            assert!(reads < 100, "it never caught up");
        }
        assert!(reads > 5, "the budget bounded each read: {reads} reads");
        assert_eq!(tail.state(), TailState::Closed);
        let (stats, summary) = tail.finish();
        let (all, all_summary) = whole(&bytes);
        assert_eq!(stats, all);
        assert_eq!(summary.records, all_summary.records);
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        let (got, want) = (summary.recovery.unwrap(), all_summary.recovery.unwrap());
        assert_eq!(
            (
                got.records,
                got.complete_blocks,
                got.clean_close,
                got.closed
            ),
            (
                want.records,
                want.complete_blocks,
                want.clean_close,
                want.closed
            )
        );
        assert!(got.is_complete(), "{got:?}");
    }

    /// `bytes` with the payload of its middle records block damaged (it fails its
    /// checksum); the block's offset and the middle of the block after it.
    fn damaged_in_the_middle(bytes: &[u8]) -> (Vec<u8>, usize, usize) {
        let mapped = hrx_capture::MappedTrace::from_vec(bytes.to_vec()).unwrap();
        let blocks: Vec<_> = (mapped.blocks().iter())
            .filter(|b| b.header.kind == hrx_capture::format::BlockKind::RECORDS)
            .collect();
        let (damaged, next) = (blocks[blocks.len() / 2], blocks[blocks.len() / 2 + 1]);
        let mut bytes = bytes.to_vec();
        bytes[damaged.offset as usize + BLOCK_HEADER_LEN as usize + 1] ^= 0xFF;
        let middle = next.offset + next.header.block_len() / 2;
        (bytes, damaged.offset as usize, middle as usize)
    }

    /// A damaged block after the last records block a read took is read again by every
    /// read after it (they resume at that records block): counted once, said once, and
    /// the totals at the end are a one-shot read's, blocks and damage included (the block
    /// and its 20-odd records were counted again by each read, and the block read again
    /// too).
    #[test]
    fn a_damaged_block_read_again_is_counted_once() {
        let (bytes, damaged, torn) = damaged_in_the_middle(&trace_bytes(false));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        // Up to the damaged block and half of the one after it (being written).
        std::fs::write(&path, &bytes[..torn]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        assert!(
            tail.resume_at < damaged as u64,
            "the damaged block is read again"
        );
        tail.read_new().unwrap();
        let (_, summary) = tail.snapshot();
        assert_eq!(summary.recovery.unwrap().skipped_blocks, 1);
        // A budget that stops inside the blocks after it, then the rest.
        std::fs::write(&path, &bytes).unwrap();
        tail.read_new_within(ReadBudget::bytes(1)).unwrap();
        assert!(tail.unread_bytes() > 0);
        while tail.state() == TailState::Live || tail.unread_bytes() > 0 {
            tail.read_new_within(ReadBudget::bytes(4096)).unwrap();
        }
        tail.read_new().unwrap();
        let (_, summary) = tail.finish();
        let (_, want) = whole(&bytes);
        let got = summary.recovery.unwrap();
        assert_eq!(got.skipped_blocks, 1);
        assert!(got.skipped_records > 0);
        assert_eq!(got, want.recovery.unwrap());
        assert_eq!(summary.warnings, want.warnings);
    }

    /// A recording that stopped (nobody writes it, never closed) while the reads are behind
    /// it: it is not called ended before the last of it was read, so the final totals cover
    /// the whole file.
    #[test]
    fn a_trace_nobody_writes_is_read_to_its_end_before_it_is_called_unclosed() {
        let bytes = trace_bytes(false);
        let cut = &bytes[..bytes.len() * 3 / 4 + 3];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.hrxt");
        std::fs::write(&path, cut).unwrap();
        let budget = ReadBudget::bytes(bytes.len() as u64 / 20);
        let mut tail = StatsTail::open_within(&path, budget).unwrap();
        tail.watch = WriterWatch::new(std::time::Duration::ZERO);
        let mut reads = 0;
        while tail.unread_bytes() > 0 {
            assert_eq!(tail.state(), TailState::Live);
            tail.read_new_within(budget).unwrap();
            reads += 1;
            assert!(reads < 100, "it never caught up");
        }
        assert!(reads > 5, "{reads} reads");
        // Read to the end: two probes at the same length with nobody holding it.
        tail.read_new_within(budget).unwrap();
        tail.read_new_within(budget).unwrap();
        assert_eq!(tail.state(), TailState::Unclosed);
        let records = tail.records();
        let (stats, summary) = tail.finish();
        let (all, all_summary) = whole(cut);
        assert_eq!(records, all_summary.records);
        assert_eq!(stats, all);
        assert_eq!(summary.recovery.unwrap().records, all_summary.records);
    }

    #[test]
    fn a_followed_traces_warnings_name_their_place_in_the_file() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.hrxt");
        // Read twice (the second read starts at a later block), then cut inside a block.
        std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        let cut = bytes.len() * 2 / 3 + 5;
        std::fs::write(&path, &bytes[..cut]).unwrap();
        tail.read_new().unwrap();
        assert!(tail.resume_at > 0, "the second read started mid-file");
        let (_, summary) = tail.snapshot();
        let whole = hrx_capture::Trace::from_bytes(&bytes[..cut]).unwrap();
        let tails = |warnings: &[Warning]| -> Vec<u64> {
            (warnings.iter())
                .filter(|w| matches!(w.kind, WarningKind::TruncatedTail { .. }))
                .map(|w| w.offset)
                .collect()
        };
        assert_eq!(tails(&summary.warnings), tails(&whole.warnings));
        assert_eq!(tails(&whole.warnings).len(), 1, "{:?}", whole.warnings);
    }

    /// A followed trace joined after a cut one (`cat cut other`), read again and again: that
    /// another trace starts at the cut is said once, as a whole read says it (it was said
    /// again by every read, three times in `stats --follow`).
    #[test]
    fn another_trace_after_a_followed_cut_is_said_once() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("joined.hrxt");
        let cut = bytes.len() * 2 / 3 + 5;
        let joined = [&bytes[..cut], &bytes[..]].concat();
        std::fs::write(&path, &joined[..cut]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        std::fs::write(&path, &joined).unwrap();
        tail.read_new().unwrap();
        tail.read_new().unwrap();
        let (_, summary) = tail.finish();
        let whole = hrx_capture::Trace::from_bytes(&joined).unwrap();
        let another = |warnings: &[Warning]| -> Vec<u64> {
            (warnings.iter())
                .filter(|w| matches!(w.kind, WarningKind::AnotherTrace { .. }))
                .map(|w| w.offset)
                .collect()
        };
        assert_eq!(another(&whole.warnings), [cut as u64]);
        assert_eq!(
            another(&summary.warnings),
            [cut as u64],
            "{:?}",
            summary.warnings
        );
    }

    #[test]
    fn the_end_of_a_followed_trace_is_judged_on_the_whole_file() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        assert!(tail.read_new().unwrap() > 0);
        assert_eq!(tail.state(), TailState::Closed);
        // The footer lists every block and the trailer points at it: read from the middle,
        // they looked like missing blocks and a damaged trailer.
        let (_, summary) = tail.finish();
        let recovery = summary.recovery.unwrap();
        assert!(
            recovery.is_complete(),
            "{recovery:?} {:?}",
            summary.warnings
        );
        assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
        assert_eq!(recovery.records, whole(&bytes).1.records);
    }

    #[test]
    fn a_fatal_signal_ends_the_following_as_crashed() {
        let bytes = trace_bytes(true);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crashed.hrxt");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        assert_eq!(tail.state(), TailState::Live);
        std::fs::write(&path, &bytes).unwrap();
        tail.read_new().unwrap();
        match tail.state() {
            TailState::Crashed(fatal) => assert_eq!(fatal.signal, 11),
            other => panic!("{other:?}"),
        }
        let (stats, _) = tail.finish();
        assert_eq!(spans(&stats), 2_000);
    }

    #[test]
    fn a_cut_trace_nobody_writes_ends_unclosed_while_a_held_one_stays_live() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.hrxt");
        // Cut inside a block, as `head -c` or a killed recorder leaves it.
        std::fs::write(&path, &bytes[..bytes.len() / 2 + 3]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        tail.watch = WriterWatch::new(std::time::Duration::ZERO);
        // A recorder holds the file (its exclusive lock): quiet, but live.
        let holder = File::open(&path).unwrap();
        holder.try_lock().unwrap();
        for _ in 0..3 {
            assert_eq!(tail.read_new().unwrap(), 0);
            assert_eq!(tail.state(), TailState::Live);
        }
        // The recorder is gone: the first probe that finds the lock free concludes nothing,
        // the next one at the same length does.
        drop(holder);
        tail.read_new().unwrap();
        assert_eq!(tail.state(), TailState::Live);
        tail.read_new().unwrap();
        assert_eq!(tail.state(), TailState::Unclosed);
        let records = tail.records();
        let (stats, summary) = tail.finish();
        assert_eq!(records, whole(&bytes[..bytes.len() / 2 + 3]).1.records);
        assert!(!summary.session_ended && spans(&stats) > 0);
    }

    #[test]
    fn a_trace_that_grows_between_free_probes_stays_live() {
        let bytes = trace_bytes(false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.hrxt");
        let cuts = [bytes.len() / 4, bytes.len() / 3, bytes.len() / 2];
        std::fs::write(&path, &bytes[..cuts[0]]).unwrap();
        let mut tail = StatsTail::open(&path).unwrap();
        tail.watch = WriterWatch::new(std::time::Duration::ZERO);
        for &cut in &cuts {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            tail.read_new().unwrap();
            assert_eq!(tail.state(), TailState::Live, "{cut}");
        }
        tail.read_new().unwrap();
        assert_eq!(tail.state(), TailState::Unclosed);
    }
}
