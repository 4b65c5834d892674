//! Reading a trace that is still being written, one new block at a time (`view --follow`).
//!
//! [`TraceTail`] reads the file once, then on each [`TraceTail::read_new`] only what was
//! appended since: it reopens the file at the start of the last block it read (that block
//! is complete and no longer changes), behind a copy of the file header, skips the records
//! of that block it already has, and pushes the rest into the same [`ModelBuilder`]
//! ([`TraceTail::read_appended`]). The model shown is a finished copy of the builder
//! ([`TraceTail::model`]): a refresh never decodes the whole trace again, but its publish
//! is still linear in the whole trace (see "Cost of a refresh" below).
//!
//! A block the writer has not finished yet reads as a torn tail: it is left for the next
//! refresh, and only the latest read's torn tail is reported. Submission numbers are not
//! checked (a live trace's newest submissions may still sit in the writer's buffers).
//!
//! A new recording to the same path truncates the file and writes it again: appended
//! blocks read from the old offset would be the middle of another recording.
//! [`TraceTail::replaced`] tells: the file is shorter than what was read, or its first
//! block (the session start, whose checksum covers the recording's pid and clock base)
//! is not the one read; the viewer then opens it afresh. A [`FatalSignal`] read
//! ([`TraceTail::fatal`]) means the recorded process died: nothing more will come.
//!
//! # Cost of a refresh
//!
//! Reading the appended blocks is proportional to what is new (about 4 ms of CPU for 4,200
//! records, at any trace size). Publishing is not: `self.builder.clone().finish()` copies
//! every table of the model under construction, the joiner's state and the statistics,
//! then runs every stage of [`ModelBuilder::finish`] over the whole copy (sort and renumber
//! submissions, untimed and running spans, sort every lane and rebuild its block index,
//! resolve and sort every wait edge, label every region and count every span, events,
//! statistics, the first failure). Measured (BENCHMARKS.md, "Timeline at scale", session
//! 15, `tui/examples/follow-refresh.rs`): 13 ms of CPU per refresh at 100k regions, 115 ms
//! at 1M, 1.8 s at 10M, about half of it the copy; while a refresh runs the process holds
//! the builder and a whole copy, twice the model (2.4 GiB at 10M). Issue #21's "new
//! blocks appear within 200 ms" leaves a refresh (read, publish and frame) about 50 ms
//! after the writer's 100 ms flush and the viewer's 50 ms poll
//! ([`FOLLOW_POLL`](crate::app::FOLLOW_POLL)): met at 100k regions, not at 1M or 10M.
//!
//! What would make it proportional to what is new (not done):
//!
//! - **A settled prefix.** A live trace's records only change its newest submissions. The
//!   joiner knows which are settled: retired (every region completed and timed), with no
//!   timing, completion, wait or event parked for them and no region started and not done.
//!   Submissions up to a watermark below the oldest unsettled one are final except for
//!   what a later record can still do to them: (a) a `Submit` that sorts before them by
//!   (runtime, index) renumbers their [`SubId`](crate::state::SubId)s; (b) a span on the
//!   same lane that starts earlier shifts their spans' indices (and every
//!   [`SpanRef`](crate::state::SpanRef) to them: the span table, events, edges) and the
//!   lane's block index; (c) a new wait or explicit producer whose producer is settled
//!   (the usual case: a new submission waits on an older one) belongs inside the
//!   producer-ordered indexes (`cross_by_producer`, `explicit_edges`), so those need a
//!   second index for the tail's edges, searched beside the prefix's, instead of one
//!   sorted whole; (d) a failure earlier in time replaces the first failure. (a), (b) and
//!   (d) are one comparison per new item against the prefix's last key; when one happens
//!   (out-of-order records across threads) the refresh falls back to today's whole finish
//!   and the watermark is recomputed. Otherwise a refresh finishes only the tail after the
//!   watermark: its submissions, spans (running spans, whose end is the trace's end and
//!   moves every refresh, are always in the tail), edges, label and search-key counts
//!   added, the range and first failure combined from the prefix's and the tail's. What
//!   is per prepared graph (regions, labels) or rare (events, busy times) can still be
//!   redone whole. The joiner's end-of-trace summary (running and timing-lost regions) is
//!   taken today by consuming the joiner; a non-consuming summary of its in-flight state
//!   is needed. The statistics need no prefix: their visitor is bounded (per region of a
//!   prepared graph and per lane), so finishing a copy of it costs the same at any size.
//! - **No copy of the prefix.** [`Model`] is an owned value whose columns deref to one
//!   slice each, so a publish that returns a new `Model` copies the prefix however little
//!   changed (at 10M regions the builder's copy alone took 0.8-1.0 s of CPU here). Either
//!   the tail keeps the one finished model and updates it in place, the view borrowing it
//!   between refreshes (the app's follower hands out `&Model` instead of a new value), or
//!   a column becomes two parts (a shared, frozen prefix and an owned tail) and every
//!   reader of a lane, the span table and the submissions learns to search two slices.
//!   The first is the smaller change; it also halves the peak memory.
//! - **Checks.** The published model already equals a whole read of the same bytes after
//!   every refresh, in file order and in the worst order threads write records, up to a
//!   crash with a region running (the tests below): an incremental publish must keep those
//!   green, and add a structural test that a refresh finishes only the tail (a counter of
//!   submissions and spans finished per refresh, or the prefix's columns at the same
//!   address before and after).

use crate::TuiError;
use crate::state::{Model, ModelBuilder};
use hrx_capture::reader::WarningKind;
use hrx_capture::schema::{FatalSignal, Record};
use hrx_capture::{Recovery, TraceReader};
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes of a block header (the first block's identifies the recording).
const BLOCK_HEADER_LEN: u64 = hrx_capture::format::BLOCK_HEADER_LEN as u64;

/// A followed trace (see the module docs).
#[derive(Debug)]
pub struct TraceTail {
    path: PathBuf,
    /// The file header, put before the appended bytes of each later read.
    header: Vec<u8>,
    builder: ModelBuilder,
    /// File offset of the last block read, and how many of its records were taken.
    resume_at: u64,
    taken: u64,
    /// Totals over every read so far.
    recovery: Recovery,
    /// Warnings of earlier reads that stay true (not a torn tail: that is read again).
    warnings: Vec<String>,
    /// The latest read's torn tail, if it ended inside a block.
    latest_warnings: Vec<String>,
    /// The first block's header as read at open (it holds the session start's checksum).
    first_block: Vec<u8>,
    /// The signal that ended the recorded process, once read.
    fatal: Option<FatalSignal>,
}

impl TraceTail {
    /// Reads the whole trace at `path` as it is now.
    ///
    /// # Errors
    ///
    /// [`TuiError::Read`] when it cannot be opened, its header is unreadable, or a read
    /// fails.
    pub fn open(path: &Path) -> Result<(TraceTail, Model), TuiError> {
        let read_error = |source| TuiError::Read {
            path: path.to_owned(),
            source,
        };
        let reader = TraceReader::open(path).map_err(read_error)?;
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
            builder: ModelBuilder::new(),
            resume_at: header_len,
            taken: 0,
            recovery: Recovery::default(),
            warnings: Vec::new(),
            latest_warnings: Vec::new(),
            first_block,
            fatal: None,
        };
        tail.take(reader, header_len).map_err(read_error)?;
        let model = tail.model();
        Ok((tail, model))
    }

    /// The model with what was appended since the last read, or `None` when no new record
    /// was read.
    ///
    /// # Errors
    ///
    /// [`TuiError::Follow`] when the file cannot be reopened; [`TuiError::Read`] when a read
    /// fails.
    pub fn read_new(&mut self) -> Result<Option<Model>, TuiError> {
        Ok(self.read_appended()?.then(|| self.model()))
    }

    /// Reads what was appended since the last read into the builder, without publishing a
    /// model; whether a new record was read. [`TraceTail::read_new`] is this, then
    /// [`TraceTail::model`].
    ///
    /// # Errors
    ///
    /// As [`TraceTail::read_new`].
    pub fn read_appended(&mut self) -> Result<bool, TuiError> {
        let io_error = |source| TuiError::Follow {
            path: self.path.clone(),
            source,
        };
        let mut file = File::open(&self.path).map_err(io_error)?;
        file.seek(SeekFrom::Start(self.resume_at))
            .map_err(io_error)?;
        let src = Cursor::new(self.header.clone()).chain(file);
        let reader = TraceReader::new(src).map_err(|source| TuiError::Read {
            path: self.path.clone(),
            source,
        })?;
        // Offsets in `src` are the header, then the file from `resume_at`.
        let origin = self.resume_at;
        let before = self.recovery.records;
        self.take(reader, origin).map_err(|source| TuiError::Read {
            path: self.path.clone(),
            source,
        })?;
        Ok(self.recovery.records > before)
    }

    /// Whether the file is no longer the recording read so far: shorter than what was read,
    /// or another first block (a new recording truncated it and wrote it again). `false`
    /// when it cannot be read now (a later poll tries again).
    pub fn replaced(&self) -> bool {
        let Ok(mut file) = File::open(&self.path) else {
            return false;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return false;
        };
        if len < self.resume_at {
            return true;
        }
        let mut first = Vec::new();
        let read = file
            .seek(SeekFrom::Start(self.header.len() as u64))
            .and_then(|_| file.take(BLOCK_HEADER_LEN).read_to_end(&mut first));
        let n = first.len().min(self.first_block.len());
        read.is_ok() && first[..n] != self.first_block[..n]
    }

    /// The signal that ended the recorded process, when a [`FatalSignal`] was read: the
    /// trace will not grow any more.
    pub fn fatal(&self) -> Option<FatalSignal> {
        self.fatal
    }

    /// Takes every record of `reader` (whose first block is at file offset `origin`) not
    /// taken before.
    fn take<R: Read>(
        &mut self,
        mut reader: TraceReader<R>,
        origin: u64,
    ) -> Result<(), hrx_capture::ReadError> {
        let header_len = self.header.len() as u64;
        let (mut block, mut in_block) = (self.resume_at, 0u64);
        // A block already taken from is read again first: the reader counts it again.
        let reread = u64::from(self.taken > 0);
        let total = &mut self.recovery;
        for item in reader.by_ref() {
            let (offset, record) = item?;
            let at = (offset + origin).saturating_sub(header_len);
            if at != block {
                (block, in_block) = (at, 0);
            }
            in_block += 1;
            if at == self.resume_at && in_block <= self.taken {
                continue;
            }
            // Counted here, not from the reader's totals, which count the block read again.
            total.records += 1;
            total.lost.observe(&record);
            total.waits.observe(&record);
            if let Record::FatalSignal(f) = &record {
                self.fatal = Some(*f);
            }
            self.builder.push(&record);
        }
        if block != self.resume_at || in_block > self.taken {
            (self.resume_at, self.taken) = (block, in_block);
        }
        let read = reader.recovery();
        total.complete_blocks += read.complete_blocks.saturating_sub(reread);
        total.skipped_blocks += read.skipped_blocks;
        total.skipped_records += read.skipped_records;
        total.bytes_discarded = read.bytes_discarded;
        total.clean_close = read.clean_close;
        total.closed = read.closed;
        let mut latest = Vec::new();
        for warning in reader.warnings() {
            if matches!(warning.kind, WarningKind::TruncatedTail { .. }) {
                latest.push(warning.to_string());
            } else {
                self.warnings.push(warning.to_string());
            }
        }
        self.latest_warnings = latest;
        Ok(())
    }

    /// The model of every record read so far, with the reads' recovery totals and warnings.
    pub fn model(&self) -> Model {
        let mut model = self.builder.clone().finish();
        model.info_mut().recovery = Some(self.recovery);
        model.info_mut().warnings = self
            .warnings
            .iter()
            .chain(&self.latest_warnings)
            .cloned()
            .collect();
        model
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
        let sink = MemorySink::new();
        let options = hrx_analysis::timeline::fixtures::small_blocks();
        let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
        for record in pipeline(PipelineSpec {
            fail_at: Some(300),
            ..PipelineSpec::ops(2_000)
        }) {
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
        let (mut tail, first) = TraceTail::open(&path).unwrap();
        assert!(first.span_count() > 0);
        let mut shown = first.span_count();
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
            let model = tail.read_new().unwrap().expect("new records");
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
        let last = tail.read_new().unwrap();
        assert!(last.is_none(), "nothing appended, nothing new");
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        assert!(whole.info().end.is_some());
        assert_eq!(shown, whole.span_count());
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
            let whole = |to: usize| {
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(bytes.len(), to);
                Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap()
            };
            let first = bytes.len() / 10;
            std::fs::write(&path, &bytes[..first]).unwrap();
            let (mut tail, mut shown) = TraceTail::open(&path).unwrap();
            assert_same(&shown, &whole(first));
            let blocks = hrx_capture::MappedTrace::from_vec(bytes.clone())
                .unwrap()
                .blocks()
                .len();
            assert!(blocks >= 50, "{blocks} blocks");
            let mut refreshes = 0;
            let mut from = first;
            while from < bytes.len() {
                // About 60 steps: most end inside a block, some add no whole block.
                let to = (from + bytes.len() / 60).min(bytes.len());
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                file.write_all(&bytes[from..to]).unwrap();
                drop(file);
                if let Some(model) = tail.read_new().unwrap() {
                    shown = model;
                    refreshes += 1;
                }
                assert_same(&shown, &whole(to));
                from = to;
            }
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
            let crashed = tail.read_new().unwrap().expect("the signal");
            let len = std::fs::metadata(&path).unwrap().len() as usize;
            assert_same(&crashed, &whole(len));
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
}
