//! Reading a trace that is still being written, one new block at a time (`view --follow`).
//!
//! [`TraceTail`] reads the file once, then on each [`TraceTail::read_new`] only what was
//! appended since: it reopens the file at the start of the last block it read (that block
//! is complete and no longer changes), behind a copy of the file header, skips the records
//! of that block it already has, and pushes the rest into the same [`LiveBuilder`]
//! ([`TraceTail::read_appended`]), which then publishes its one model, updated in place
//! ([`TraceTail::publish`]); the view borrows it ([`TraceTail::model`]) until the next
//! refresh. Neither step costs the whole trace (see "Cost of a refresh" below).
//!
//! A block the writer has not finished yet reads as a torn tail: it is left for the next
//! refresh, and only the latest read's torn tail is reported; the counts of blocks and
//! damage add up to a one-shot read's, as `stats --follow`'s
//! ([`account_read`](hrx_analysis::stats_follow::account_read)). Submission numbers are not
//! checked (a live trace's newest submissions may still sit in the writer's buffers).
//!
//! A new recording to the same path truncates the file and writes it again: appended
//! blocks read from the old offset would be the middle of another recording.
//! [`TraceTail::replaced`] tells: the file is shorter than what was read, or its first
//! block (the session start, whose checksum covers the recording's pid and clock base)
//! is not the one read; the viewer then opens it afresh. A [`FatalSignal`] read
//! ([`TraceTail::fatal`]) means the recorded process died: nothing more will come.
//!
//! A read may be bounded ([`ReadBudget`], as `stats --follow`'s: bytes of the file, or a
//! deadline; the viewer gives each refresh [`FOLLOW_READ`](crate::app::FOLLOW_READ)): a
//! recorder can write faster than one thread reads, and a read to the file's end, which
//! keeps moving, then never returned (the view stayed at its first refresh for two minutes
//! while the file grew to 952 MiB). It stops at the first block starting past its budget,
//! after taking one record of it, publishes what it read, and says how much of the file it
//! left ([`TraceTail::unread_bytes`]); the next read continues exactly there.
//!
//! The model is held in memory, whole: about 110-220 bytes a region (1.96 GB for a closed
//! trace of 3M regions), unlike `view`'s mapped view cache. The viewer opens a large trace
//! that is already closed through that cache instead ([`crate::app::run_coloured`]).
//!
//! # Cost of a refresh
//!
//! Reading the appended blocks is proportional to what is new (about 4 ms of CPU for 4,200
//! records, at any trace size). The publish used to be a finished copy of the whole
//! builder (`builder.clone().finish()`): 13 ms of CPU per refresh at 100k regions, 115 ms
//! at 1M, 1.8 s at 10M, holding the builder and the copy (BENCHMARKS.md, "Timeline at
//! scale", session 15). Issue #21's "new blocks appear within 200 ms" leaves a refresh
//! (read, publish and frame) about 50 ms after the writer's 100 ms flush and the viewer's
//! 50 ms poll ([`FOLLOW_POLL`](crate::app::FOLLOW_POLL)).
//!
//! It is now `hrx-analysis`'s [`LiveBuilder`] (its module docs have the design): one
//! finished model, updated in place, whose per-submission tables are split at a watermark
//! of *settled* submissions (outcome, every region's completion and span read; first by key
//! as well as by arrival; every lane's spans strictly before those after them). A publish
//! finishes only the tail after it: the tail's submissions, spans (placed after each lane's
//! settled spans, the block index rebuilt from the last settled block), waits and explicit
//! producers (merged into the producer-sorted indexes, which is where a wait on a settled
//! submission, the usual case, belongs: the settled entries it sorts before are pulled back,
//! as far as it reaches), and the counts per label from per-region counts; the events, the
//! range, the statistics (from copies of the joiner and its visitor, bounded by what is in
//! flight) and the first failure are done whole, as they are per graph or rare. A record
//! that would change the settled part (a `Submit` sorting before a settled one, a span
//! starting no later than a lane's last settled span, a timing, completion, outcome or wait
//! of a settled submission) makes that publish finish the whole model, the settled tables
//! turned back into what arrived; every publish equals a whole read of the same records
//! (the tests below, and `hrx-analysis`'s after every record).
//!
//! Why in place rather than two-part columns (a shared frozen prefix and an owned tail,
//! every reader searching both): the model's readers (lanes, span table, hazards, the view
//! cache) stay as they are, and the process holds one model, not the builder and a copy.
//! The price: a publish is `&mut`, so the view borrows the model from the follower and
//! carries its selection over by keys taken before the refresh
//! ([`ViewState::carried`](crate::state::ViewState::carried)).
//!
//! Measured (BENCHMARKS.md, "Timeline at scale", session 16, `tui/examples/follow-refresh.rs`
//! against the previous binary in one run, five refreshes of about 4,200 records; two runs):
//! the publish takes 0.6-0.8, 1.9-2.0 and 1.9-3.9 ms of CPU at 100k, 1M and 10M regions (it
//! took 23 ms, 186 ms and 1.7 s), so a refresh with its read is 3-8 ms; the peak while
//! refreshing is the one model (1.1 GiB at 10M, was 2.4 GiB). A publish that falls back to
//! the whole model costs what every refresh used to (1.6-2.3 s of CPU at 10M). The open publishes every
//! `SETTLE_RECORDS` (2^18) records on the way, so it holds one model too. What stays in the tail:
//! a submission that never settles (a region that never completes, a completion lost in a
//! lossy recording) keeps what comes after it there, and a trace of several runtimes
//! submitting at once keeps one runtime's submissions there (they interleave by key): their
//! refreshes grow with what came after.

use crate::TuiError;
use crate::state::Model;
use hrx_analysis::stats_follow::{ReadBudget, Walk};
use hrx_analysis::timeline::{LiveBuilder, Publish};
use hrx_capture::schema::{FatalSignal, Record};
use hrx_capture::{Recovery, TraceReader};
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes of a block header (the first block's identifies the recording).
const BLOCK_HEADER_LEN: u64 = hrx_capture::format::BLOCK_HEADER_LEN as u64;

/// Records read between two publishes while a read takes many (the open's): the builder's
/// tail stays about this many records, not the trace.
const SETTLE_RECORDS: u64 = 1 << 18;

/// A followed trace (see the module docs).
#[derive(Debug)]
pub struct TraceTail {
    path: PathBuf,
    /// The file header, put before the appended bytes of each later read.
    header: Vec<u8>,
    builder: LiveBuilder,
    /// File offset of the last block read, and how many of its records were taken.
    resume_at: u64,
    taken: u64,
    /// Totals over every read so far.
    recovery: Recovery,
    /// What the latest read counted from the block the next resumes at, which the next
    /// counts again ([`account_read`](hrx_analysis::stats_follow::account_read)).
    provisional: Recovery,
    /// Warnings of earlier reads that stay true (not a torn tail: that is read again).
    warnings: Vec<String>,
    /// The latest read's torn tail, if it ended inside a block.
    latest_warnings: Vec<String>,
    /// The first block's header as read at open (it holds the session start's checksum).
    first_block: Vec<u8>,
    /// The signal that ended the recorded process, once read.
    fatal: Option<FatalSignal>,
    /// Bytes of the file the latest read left for the next one (its budget was spent).
    unread: u64,
}

impl TraceTail {
    /// Reads the whole trace at `path` as it is now, and publishes its model.
    ///
    /// # Errors
    ///
    /// [`TuiError::Read`] when it cannot be opened, its header is unreadable, or a read
    /// fails.
    pub fn open(path: &Path) -> Result<TraceTail, TuiError> {
        TraceTail::open_within(path, ReadBudget::UNBOUNDED)
    }

    /// Reads the trace at `path` as it is now, as far as `budget` goes, and publishes its
    /// model: the rest is left for [`TraceTail::read_new_within`]
    /// ([`TraceTail::unread_bytes`] says how much).
    ///
    /// # Errors
    ///
    /// As [`TraceTail::open`].
    pub fn open_within(path: &Path, budget: ReadBudget) -> Result<TraceTail, TuiError> {
        let read_error = |source| TuiError::Read {
            path: path.to_owned(),
            source,
        };
        let reader = TraceReader::open(path).map_err(read_error)?.growing();
        let header_len = u64::from(reader.header().header_len);
        let mut header = Vec::new();
        let mut first_block = Vec::new();
        File::open(path)
            .and_then(|mut f| {
                (&mut f).take(header_len).read_to_end(&mut header)?;
                f.take(BLOCK_HEADER_LEN).read_to_end(&mut first_block)
            })
            .map_err(|source| TuiError::Follow {
                path: path.to_owned(),
                source,
            })?;
        let mut tail = TraceTail {
            path: path.to_owned(),
            header,
            builder: LiveBuilder::new(),
            resume_at: header_len,
            taken: 0,
            recovery: Recovery::default(),
            provisional: Recovery::default(),
            warnings: Vec::new(),
            latest_warnings: Vec::new(),
            first_block,
            fatal: None,
            unread: 0,
        };
        tail.take(reader, header_len, budget).map_err(read_error)?;
        tail.publish();
        Ok(tail)
    }

    /// Reads what was appended since the last read and publishes the model with it (with
    /// what was read before an error too); whether a new record was read (the model is
    /// unchanged when none was).
    ///
    /// # Errors
    ///
    /// [`TuiError::Follow`] when the file cannot be reopened; [`TuiError::Read`] when a read
    /// fails.
    pub fn read_new(&mut self) -> Result<bool, TuiError> {
        self.read_new_within(ReadBudget::UNBOUNDED)
    }

    /// [`TraceTail::read_new`], as far as `budget` goes (see the module docs): the rest is
    /// left for the next read, which continues where this one stopped.
    ///
    /// # Errors
    ///
    /// As [`TraceTail::read_new`].
    pub fn read_new_within(&mut self, budget: ReadBudget) -> Result<bool, TuiError> {
        let read = self.read_appended_within(budget);
        // What a failed read took before it failed is published too: the model is always
        // there to show.
        self.publish();
        read
    }

    /// Reads what was appended since the last read into the builder, without publishing;
    /// whether a new record was read. [`TraceTail::read_new`] is this, then
    /// [`TraceTail::publish`].
    ///
    /// # Errors
    ///
    /// As [`TraceTail::read_new`].
    pub fn read_appended(&mut self) -> Result<bool, TuiError> {
        self.read_appended_within(ReadBudget::UNBOUNDED)
    }

    /// [`TraceTail::read_appended`], as far as `budget` goes.
    ///
    /// # Errors
    ///
    /// As [`TraceTail::read_new`].
    pub fn read_appended_within(&mut self, budget: ReadBudget) -> Result<bool, TuiError> {
        let io_error = |source| TuiError::Follow {
            path: self.path.clone(),
            source,
        };
        let mut file = File::open(&self.path).map_err(io_error)?;
        file.seek(SeekFrom::Start(self.resume_at))
            .map_err(io_error)?;
        let src = Cursor::new(self.header.clone()).chain(file);
        let reader = TraceReader::new(src)
            .map_err(|source| TuiError::Read {
                path: self.path.clone(),
                source,
            })?
            .growing();
        // Offsets in `src` are the header, then the file from `resume_at`.
        let origin = self.resume_at;
        let before = self.recovery.records;
        self.take(reader, origin, budget)
            .map_err(|source| TuiError::Read {
                path: self.path.clone(),
                source,
            })?;
        Ok(self.recovery.records > before)
    }

    /// Publishes the model of every record read so far, with the reads' recovery totals and
    /// warnings: only what came after its settled submissions is finished again (see the
    /// module docs); the model.
    pub fn publish(&mut self) -> &Model {
        let model = self.builder.publish();
        model.info_mut().recovery = Some(self.recovery);
        model.info_mut().warnings = self
            .warnings
            .iter()
            .chain(&self.latest_warnings)
            .cloned()
            .collect();
        model
    }

    /// What the latest publish finished.
    pub fn last_publish(&self) -> Publish {
        self.builder.last_publish()
    }

    /// Makes the next publish finish the whole model, as a record that changes the settled
    /// part does: what such a refresh costs is what this measures.
    pub fn unsettle(&mut self) {
        self.builder.unsettle();
    }

    /// The model as of the latest publish ([`TraceTail::open`] and [`TraceTail::read_new`]
    /// publish it).
    ///
    /// # Panics
    ///
    /// After [`TraceTail::read_appended`] read records and before [`TraceTail::publish`].
    pub fn model(&self) -> &Model {
        self.builder
            .model()
            .expect("the followed trace's model is published after each read")
    }

    /// Whether the file is no longer the recording read so far: shorter than what was read,
    /// or another first block (a new recording truncated it and wrote it again). `false`
    /// when it cannot be read now (a later poll tries again).
    pub fn replaced(&self) -> bool {
        hrx_analysis::stats_follow::rewritten(
            &self.path,
            self.header.len() as u64,
            self.resume_at,
            &self.first_block,
        )
    }

    /// Bytes of the file the latest read left unread because its budget was spent (as
    /// long as the file was then); 0 when it read to the end.
    pub fn unread_bytes(&self) -> u64 {
        self.unread
    }

    /// The signal that ended the recorded process, when a [`FatalSignal`] was read: the
    /// trace will not grow any more.
    pub fn fatal(&self) -> Option<FatalSignal> {
        self.fatal
    }

    /// Takes every record of `reader` (whose first block is at file offset `origin`) not
    /// taken before, as far as `budget` goes.
    fn take<R: Read>(
        &mut self,
        mut reader: TraceReader<R>,
        origin: u64,
        budget: ReadBudget,
    ) -> Result<(), hrx_capture::ReadError> {
        let header_len = self.header.len() as u64;
        let mut walk = Walk::new(&reader, self.resume_at, self.taken, budget);
        let total = &mut self.recovery;
        let mut failed = None;
        self.unread = 0;
        while let Some(item) = reader.next() {
            let (offset, record) = match item {
                Ok(item) => item,
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            };
            let at = (offset + origin).saturating_sub(header_len);
            let Some(stopped) = walk.record(&reader, at) else {
                continue;
            };
            // Counted here, not from the reader's totals, which count the block read again.
            total.records += 1;
            total.observe(&record);
            if let Record::FatalSignal(f) = &record {
                self.fatal = Some(*f);
            }
            self.builder.push(&record);
            // Published now and then, so that what waits to be finished stays bounded: a
            // trace opened whole does not hold its regions twice.
            if total.records.is_multiple_of(SETTLE_RECORDS) {
                self.builder.publish();
            }
            if stopped {
                break;
            }
        }
        // What was taken is not taken again, even when the read failed after it.
        // The view's follower reads the file its path names at each read.
        (self.resume_at, self.taken, self.unread) =
            walk.end(|| std::fs::metadata(&self.path).map_or(0, |m| m.len()));
        if let Some(error) = failed {
            return Err(error);
        }
        let path = &self.path;
        let (kept, latest) = hrx_analysis::stats_follow::account_read(
            || hrx_capture::MappedTrace::open(path),
            (header_len, origin),
            (&walk, &reader),
            (&mut self.recovery, &mut self.provisional),
        )?;
        self.warnings.extend(kept.iter().map(ToString::to_string));
        self.latest_warnings = latest.iter().map(ToString::to_string).collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::{MemorySink, Recorder};
    use std::io::Write;

    /// A trace of many small blocks (about 1 KiB of records each), as its bytes.
    fn trace_bytes() -> Vec<u8> {
        recorded(pipeline(PipelineSpec {
            fail_at: Some(300),
            ..PipelineSpec::ops(2_000)
        }))
    }

    /// The recording of `records` in many small blocks (about 1 KiB of records each), as
    /// its bytes.
    fn recorded(records: impl IntoIterator<Item = Record>) -> Vec<u8> {
        let sink = MemorySink::new();
        let options = hrx_analysis::timeline::fixtures::small_blocks();
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        for record in records {
            recorder.record(&record);
        }
        recorder.close().unwrap();
        sink.contents()
    }

    #[test]
    fn appended_blocks_are_read_alone_and_the_model_matches_a_whole_read() {
        let bytes = trace_bytes();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        // The file grows in steps that end anywhere, inside a block too.
        let cuts = [
            bytes.len() / 5,
            bytes.len() / 3 + 17,
            bytes.len() * 2 / 3 + 5,
            bytes.len(),
        ];
        std::fs::write(&path, &bytes[..cuts[0]]).unwrap();
        let blocks = hrx_capture::MappedTrace::from_vec(bytes.clone())
            .unwrap()
            .blocks()
            .len();
        assert!(blocks >= 8, "{blocks} blocks");
        let mut tail = TraceTail::open(&path).unwrap();
        assert!(tail.model().span_count() > 0);
        let mut shown = tail.model().span_count();
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
            assert!(tail.read_new().unwrap(), "new records");
            let model = tail.model();
            // The same as reading this prefix of the undamaged trace whole.
            let whole = Model::from_reader(TraceReader::new(&bytes[..to]).unwrap()).unwrap();
            assert_eq!(model.span_count(), whole.span_count());
            assert_eq!(model.info().records, whole.info().records);
            assert_eq!(model.info().recovery.unwrap().records, whole.info().records);
            assert_eq!(model.submissions().len(), whole.submissions().len());
            assert_eq!(model.events(), whole.events());
            assert!(model.info().warnings.iter().all(|w| !w.contains("skipped")));
            assert!(model.span_count() > shown);
            shown = model.span_count();
        }
        assert!(!tail.read_new().unwrap(), "nothing appended, nothing new");
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        assert!(whole.info().end.is_some());
        assert_eq!(shown, whole.span_count());
    }

    /// A trace written faster than the viewer reads it: each refresh is given less than
    /// what is there (a budget of bytes), publishes what it read and says how much it left,
    /// and the next continues exactly where it stopped; the model at the end is a whole
    /// read's, table by table. (A refresh read to the file's end, which kept moving: the
    /// view stayed at its first refresh for two minutes.)
    #[test]
    fn a_bounded_refresh_publishes_what_it_read_and_the_next_continues_there() {
        use hrx_analysis::timeline::fixtures::assert_same;
        let bytes = trace_bytes();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let budget = ReadBudget::bytes(bytes.len() as u64 / 20);
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let mut tail = TraceTail::open_within(&path, budget).unwrap();
        assert!(tail.unread_bytes() > 0, "the open left part of the file");
        assert!(tail.model().span_count() > 0, "and published what it read");
        std::fs::write(&path, &bytes).unwrap();
        let mut refreshes = 0;
        let mut shown = tail.model().info().records;
        while tail.model().info().end.is_none() || tail.unread_bytes() > 0 {
            let at = tail.resume_at;
            // A read makes progress: new records, or none left at all. A budget spent where
            // the last records block begins takes that block's first record and counts the
            // rest of the file unread; when that record is the block's only one (the writer's
            // last block may hold the session's end alone: its blocks are cut by time too),
            // the next read finds no new record and nothing more to read (CI saw it once).
            let read = tail.read_new_within(budget).unwrap();
            let finished = tail.unread_bytes() == 0 && tail.model().info().end.is_some();
            assert!(read || finished, "every read makes progress");
            let records = tail.model().info().records;
            assert!(records > shown || !read);
            assert!(tail.resume_at >= at);
            assert_eq!(tail.model().info().recovery.unwrap().records, records);
            if tail.unread_bytes() > 0 {
                assert_eq!(tail.unread_bytes(), bytes.len() as u64 - tail.resume_at);
            }
            shown = records;
            refreshes += 1;
            assert!(refreshes < 100, "it never caught up");
        }
        assert!(
            refreshes > 5,
            "the budget bounded each refresh: {refreshes}"
        );
        assert!(!tail.read_new_within(budget).unwrap(), "nothing new");
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        assert_same(tail.model(), &whole);
        // Records, blocks and the close as a whole read's, and no word of damage: the end
        // of a trace followed from its middle is checked on the file, as `stats --follow`
        // checks it (this follower warned of missing blocks and a damaged trailer, and
        // called the trace not closed cleanly; it counted 24 blocks for 22).
        let (got, want) = (
            tail.model().info().recovery.unwrap(),
            whole.info().recovery.unwrap(),
        );
        assert_eq!(got, want);
        assert!(want.clean_close);
        assert!(tail.warnings.is_empty(), "{:?}", tail.warnings);
        assert!(
            tail.latest_warnings.is_empty(),
            "{:?}",
            tail.latest_warnings
        );
    }

    /// A damaged block just after the last records block read is read again by the reads
    /// after it (they resume at that records block): the follower counts it, its records
    /// and the blocks as a one-shot read does, and says it once (each read counted it and
    /// its records again; `stats --follow` shares the rule).
    #[test]
    fn a_damaged_block_read_again_is_counted_once() {
        // One session: the recorder writes its own start.
        let mut bytes = recorded(
            pipeline(PipelineSpec::ops(2_000)).filter(|r| !matches!(r, Record::SessionStart(_))),
        );
        let mapped = hrx_capture::MappedTrace::from_vec(bytes.clone()).unwrap();
        let blocks: Vec<_> = (mapped.blocks().iter())
            .filter(|b| b.header.kind == hrx_capture::format::BlockKind::RECORDS)
            .collect();
        let (damaged, next) = (blocks[blocks.len() / 2], blocks[blocks.len() / 2 + 1]);
        bytes[damaged.offset as usize + BLOCK_HEADER_LEN as usize + 1] ^= 0xFF;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        // Up to the middle of the block after the damaged one (being written).
        let torn = (next.offset + next.header.block_len() / 2) as usize;
        std::fs::write(&path, &bytes[..torn]).unwrap();
        let mut tail = TraceTail::open(&path).unwrap();
        assert!(
            tail.resume_at < damaged.offset,
            "the damaged block is read again"
        );
        assert!(!tail.read_new().unwrap(), "nothing new");
        std::fs::write(&path, &bytes).unwrap();
        while tail.read_new_within(ReadBudget::bytes(4096)).unwrap() {}
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        let got = tail.model().info().recovery.unwrap();
        assert_eq!((got.skipped_blocks, got.closed), (1, true));
        assert_eq!(got, whole.info().recovery.unwrap());
        assert_eq!(tail.model().info().warnings, whole.info().warnings);
    }

    /// The failing pipeline's records in `order` run by run, one of its late regions left running (its
    /// timing replaced by its start, its completion and its submission's dropped), without
    /// the session's start and end (the recorder writes its own).
    fn crashing_records(order: fn(&[Record]) -> Vec<Record>) -> Vec<Record> {
        use hrx_capture::schema::RegionStarted;
        let records: Vec<Record> = pipeline(PipelineSpec {
            fail_at: Some(900),
            ..PipelineSpec::ops(4_000)
        })
        .collect();
        // Not the very last timing: the last records are where the pipeline fails.
        let timings: Vec<_> = records
            .iter()
            .filter_map(|r| match r {
                Record::RegionTiming(t) => Some(*t),
                _ => None,
            })
            .collect();
        let last = timings[timings.len() * 9 / 10];
        let records: Vec<Record> = records
            .into_iter()
            .filter_map(|r| match r {
                Record::SessionStart(_) | Record::SessionEnd(_) => None,
                Record::RegionTiming(t) if t == last => {
                    Some(Record::RegionStarted(RegionStarted {
                        runtime: t.runtime,
                        submission: t.submission,
                        region: t.region,
                        time_ns: t.start_ns,
                    }))
                }
                Record::RegionDone(d)
                    if (d.submission, d.region) == (last.submission, last.region) =>
                {
                    None
                }
                Record::SubmissionDone(d) if d.submission == last.submission => None,
                r => Some(r),
            })
            .collect();
        // `order` applies to each run of 120 records (what the threads' buffers hold at one
        // flush); it keeps a session start first, which is put before each run and removed.
        let start = pipeline(PipelineSpec::ops(4)).next().unwrap();
        let mut ordered = Vec::new();
        for run in records.chunks(120) {
            let with_start: Vec<Record> =
                std::iter::once(start.clone()).chain(run.to_vec()).collect();
            ordered.extend(order(&with_start).into_iter().skip(1));
        }
        // The pipeline ends at its failure: blocks of records that change nothing (a buffer
        // created again) keep the failure out of the block the cut drops.
        let buffer = ordered
            .iter()
            .find(|r| matches!(r, Record::BufferCreated(_)))
            .cloned()
            .unwrap();
        ordered.extend(std::iter::repeat_n(buffer, FILLER));
        ordered
    }

    /// Records appended after the ones a test looks at, more than the recorder's last
    /// hand-over and closing block hold.
    const FILLER: usize = 2_000;

    /// The recording of `records` in blocks of about 1 KiB, cut before the block holding
    /// its session end: the trace of a process that has not closed it (yet). The cut loses
    /// the records of that block: `records` end in [`FILLER`].
    fn unclosed_recording(records: &[Record]) -> Vec<u8> {
        let sink = MemorySink::new();
        let options = hrx_analysis::timeline::fixtures::small_blocks();
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        for record in records {
            recorder.record(record);
        }
        recorder.close().unwrap();
        let bytes = sink.contents();
        let mapped = hrx_capture::MappedTrace::from_vec(bytes.clone()).unwrap();
        let cut = mapped
            .blocks()
            .iter()
            .rev()
            .map(|b| b.offset as usize)
            .find(|&cut| {
                let model = Model::from_reader(TraceReader::new(&bytes[..cut]).unwrap()).unwrap();
                model.info().end.is_none()
            })
            .unwrap();
        let kept = Model::from_reader(TraceReader::new(&bytes[..cut]).unwrap()).unwrap();
        // The session start and every record but some of the filler.
        assert!(kept.info().records as usize > records.len() - FILLER / 2);
        bytes[..cut].to_vec()
    }

    /// Follows the live trace `bytes`: opens its first tenth at `path`, then appends the
    /// rest in about 60 steps that end anywhere (most inside a block, some adding no whole
    /// block), refreshing after each; after every refresh the model shown is the model of a
    /// whole read of the same bytes, table by table. Returns each refresh's figures (not
    /// those of steps that read no new record) with the spans it added.
    fn follow_in_steps(path: &Path, bytes: &[u8]) -> (TraceTail, Vec<(Publish, usize)>) {
        use hrx_analysis::timeline::fixtures::assert_same;
        let whole = |to: usize| {
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(bytes.len(), to);
            Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap()
        };
        let first = bytes.len() / 10;
        std::fs::write(path, &bytes[..first]).unwrap();
        let mut tail = TraceTail::open(path).unwrap();
        assert_same(tail.model(), &whole(first));
        let mut refreshes = Vec::new();
        let mut from = first;
        while from < bytes.len() {
            let to = (from + bytes.len() / 60).min(bytes.len());
            let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            file.write_all(&bytes[from..to]).unwrap();
            drop(file);
            let spans = tail.model().span_count();
            if tail.read_new().unwrap() {
                let added = tail.model().span_count().saturating_sub(spans);
                refreshes.push((tail.builder.last_publish(), added));
            }
            assert_same(tail.model(), &whole(to));
            from = to;
        }
        (tail, refreshes)
    }

    /// Over many refreshes, each ending anywhere (inside a block too), of traces whose
    /// records arrive in file order and in the worst order threads can write them (each
    /// flush's records: waits and timings before their submits, graphs last), and
    /// which end in a crash with a region still running: after every refresh the model
    /// shown is the model of a whole read of the same bytes, table by table.
    #[test]
    fn every_refresh_equals_a_whole_read_in_any_record_order_up_to_a_crash() {
        use hrx_analysis::timeline::SpanStatus;
        use hrx_analysis::timeline::fixtures::{adverse, assert_same};
        use hrx_capture::schema::{FatalSignal, SignalWitness};
        let in_file_order: fn(&[Record]) -> Vec<Record> = <[Record]>::to_vec;
        for order in [in_file_order, adverse] {
            let bytes = unclosed_recording(&crashing_records(order));
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("live.hrxt");
            let blocks = hrx_capture::MappedTrace::from_vec(bytes.clone())
                .unwrap()
                .blocks()
                .len();
            assert!(blocks >= 50, "{blocks} blocks");
            let (mut tail, refreshes) = follow_in_steps(&path, &bytes);
            let refreshes = refreshes.len();
            assert!(refreshes >= 20, "{refreshes} refreshes");
            assert!(tail.fatal().is_none());
            let fatal = Record::FatalSignal(FatalSignal {
                // After every record of the pipeline.
                time_ns: 1 << 50,
                signal: 11,
                witness: SignalWitness::Handler,
                fault_address: None,
            });
            hrx_capture::append_to_unclosed(&path, std::slice::from_ref(&fatal)).unwrap();
            assert!(tail.read_new().unwrap(), "the signal");
            let crashed = tail.model();
            let bytes = std::fs::read(&path).unwrap();
            let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
            assert_same(crashed, &whole);
            assert!(tail.fatal().is_some());
            let running = crashed
                .lanes()
                .iter()
                .flat_map(|l| l.spans())
                .filter(|s| s.status() == SpanStatus::Running)
                .count();
            assert_eq!(running, 1, "the region left running reaches the crash");
            assert!(crashed.first_failure().is_some(), "the pipeline's failure");
        }
    }

    /// In file order, a refresh after the first finishes what was appended and what is in
    /// flight (the submissions and spans the builder finished), not the trace: it never
    /// finishes the whole model, and what it places stays about what it added while the
    /// trace grows ten times.
    #[test]
    fn a_refresh_finishes_only_the_tail() {
        let bytes = recorded(pipeline(PipelineSpec::ops(8_000)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let (tail, refreshes) = follow_in_steps(&path, &bytes);
        assert!(refreshes.len() >= 50, "{} refreshes", refreshes.len());
        for &(publish, added) in &refreshes {
            assert!(!publish.whole, "{publish:?}");
            // A step appends about 130 spans; a few submissions (4 spans each) are in flight.
            assert!(
                publish.spans <= added + 64,
                "{publish:?}, {added} spans added"
            );
            assert!(
                publish.submissions <= added / 4 + 16,
                "{publish:?}, {added} spans added"
            );
        }
        let settled: Vec<usize> = refreshes.iter().map(|(p, _)| p.settled).collect();
        assert!(settled.windows(2).all(|w| w[0] <= w[1]), "{settled:?}");
        assert_eq!(tail.model().span_count(), 8_000);
        assert_eq!(*settled.last().unwrap(), 2_000);
    }

    /// A followed trace with operation timings (one failed run among them): every
    /// refresh's statistics are those of a whole read ([`follow_in_steps`] compares them),
    /// and the overlay lists the kernels by operation name, the failed run's apart.
    #[test]
    fn a_followed_traces_statistics_list_its_kernels_by_operation_name() {
        use crate::state::synthetic::with_op_timings;
        let bytes = recorded(with_op_timings(pipeline(PipelineSpec {
            fail_at: Some(300),
            ..PipelineSpec::ops(4_000)
        })));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let (tail, refreshes) = follow_in_steps(&path, &bytes);
        assert!(refreshes.len() >= 5, "{} refreshes", refreshes.len());
        let model = tail.model();
        assert_eq!(
            model.stats().op_times.failed,
            2,
            "blur and sobel of the failed run"
        );
        let rows = crate::state::stats_overlay(model, 118);
        let kernels = rows
            .iter()
            .position(|r| r.text.starts_with("kernel "))
            .expect("a kernel table");
        for name in ["blur ", "sobel "] {
            let row = rows[kernels + 1..kernels + 3]
                .iter()
                .find(|r| r.text.starts_with(name))
                .unwrap_or_else(|| panic!("no {name}row: {rows:#?}"));
            assert!(row.text.ends_with(" 1"), "one failed run: {row:?}");
        }
    }

    /// A record that changes what was settled (a wait of an early submission, written late
    /// by another thread) makes the refresh that reads it finish the whole model, which is
    /// the model of a whole read; the refreshes after it finish only the tail again.
    #[test]
    fn a_refresh_that_changes_the_settled_part_finishes_the_whole_model() {
        use hrx_capture::schema::{BufferId, CrossWait, HazardKind, RegionIndex, SubmissionIndex};
        let mut records: Vec<Record> = pipeline(PipelineSpec::ops(4_000)).collect();
        let runtime = records
            .iter()
            .find_map(|r| match r {
                Record::Submit(s) => Some(s.runtime),
                _ => None,
            })
            .unwrap();
        let late = Record::CrossWait(CrossWait {
            runtime,
            submission: SubmissionIndex(3),
            region: RegionIndex(0),
            on_submission: SubmissionIndex(2),
            on_region: RegionIndex(1),
            kind: HazardKind::ReadAfterWrite,
            buffer: BufferId(1),
            start: 0,
            end: 64,
        });
        let at = records.len() * 6 / 10;
        records.insert(at, late);
        let bytes = recorded(records);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let (tail, refreshes) = follow_in_steps(&path, &bytes);
        let whole: Vec<usize> = (0..refreshes.len())
            .filter(|&i| refreshes[i].0.whole)
            .collect();
        assert_eq!(whole.len(), 1, "{refreshes:?}");
        let (fallback, _) = refreshes[whole[0]];
        assert!(
            fallback.spans > 2_000,
            "{fallback:?}: everything read so far"
        );
        assert!(
            whole[0] + 10 < refreshes.len(),
            "refreshes after it: {refreshes:?}"
        );
        assert!(refreshes[whole[0] + 1].0.spans < 400, "{refreshes:?}");
        assert_eq!(
            tail.model()
                .hazards_of(hrx_analysis::timeline::RegionKey {
                    submission: hrx_analysis::timeline::SubId(3),
                    region: 0,
                })
                .producers
                .len(),
            2,
            "the pipeline's wait and the late one"
        );
    }

    /// A trace opened whole is published every [`SETTLE_RECORDS`] records on the way: the
    /// open's last publish finishes what came after the last of those, not the trace.
    #[test]
    fn an_open_publishes_on_the_way() {
        use hrx_analysis::timeline::fixtures::assert_same;
        let bytes = recorded(pipeline(PipelineSpec::ops(100_000)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        std::fs::write(&path, &bytes).unwrap();
        let tail = TraceTail::open(&path).unwrap();
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        assert!(whole.info().records > SETTLE_RECORDS);
        assert_same(tail.model(), &whole);
        let last = tail.last_publish();
        assert!(!last.whole && last.spans < 40_000, "{last:?}");
    }
}
