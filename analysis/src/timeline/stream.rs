//! The streaming index builder: a trace read once into a view cache entry, with memory
//! that does not hold its spans, submissions or waits.
//!
//! [`super::ModelBuilder`] keeps every span, submission and cross-submission wait in
//! memory until it is finished (1.1 GiB for 10M regions), then the cache writes them out.
//! This builder takes the same records and produces the same entry (the tests compare the
//! two), but everything that grows with regions or submissions goes to files as it is read:
//!
//! ```text
//! record          kept in memory (per item)              appended to a spill file
//! Submit          prepared, region base, status,         the Submission (48 B), its submit
//!                 its key for lookups (25 B)             time, its explicit producers
//! RegionTiming    a status byte per region slot          its lane's Span (40 B)
//! OpTiming        -                                      its OpSpan (40 B)
//! CrossWait       -                                      the raw wait (56 B)
//! other records   the structure, events, facts (as ModelBuilder::push_shared)
//! ```
//!
//! `StreamBuilder::finish` then writes each column of the entry from the spills with the
//! external merge sort of `spill` (a lane is almost always in start order already:
//! read twice, not sorted): the lane's spans with their final submission ids and statuses,
//! its level-of-detail blocks and the span counts per label as they pass, the
//! (submission, region) → span table from (slot, span) pairs sorted by slot, the waits
//! sorted by consumer and by producer, the explicit edges, the submit times and the
//! operation timings by region slot (in that order already unless worker threads
//! interleaved them). Last, the
//! columns are mapped to link events to their spans and find the first failure, and the
//! rest of the model is written.
//!
//! What stays in memory is about 25 bytes per submission and one byte per region (60 MiB
//! for 10M regions of 2.5M submissions), plus one sort chunk (`spill::CHUNK_BYTES`)
//! and the buffers of the files; none of the files is mapped while it is written, so their
//! pages are the page cache's, not the process's.
//!
//! The joins are `hrx-analysis`'s, as [`super::ModelBuilder`] takes them: its joiner holds a
//! timing, completion or wait read before its `Submit` until that arrives, and numbers
//! submissions by arrival (their ordinals), which index the per-submission vectors here;
//! submissions out of (runtime, index) order are renumbered from a sort of their keys (24
//! bytes each, only then).

use super::cache::{Manifest, map_columns};
use super::column::{Plain, drop_cached_pages};
use super::hazards;
use super::ingest::{
    Joined, ModelBuilder, arrival, count_label, link_events, name_regions, time_range,
};
use super::lanes::{Block, BlockBuilder, Span, SpanStatus};
use super::model::{CrossEdge, LaneRef, Model, RegionKey, RegionRef, SpanRef, SubId, Submission};
use super::ops::OpSpan;
use super::spill::{Spill, SpillFile, Values, sorted};
use hrx_capture::Recovery;
use hrx_capture::schema::{CrossWait, HazardKind, Record, RuntimeId, SubmissionIndex};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Set in a region slot's status byte once a span of the region is placed.
const HAS_SPAN: u8 = 0x80;

/// A cross-submission wait joined at both ends (56 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct RawCross {
    _pad: u32,
    region: u32,
    on_region: u32,
    /// [`HazardKind`]: 0 read after write, 1 write after read, 2 write after write.
    kind: u32,
    /// The consumer's and the producer's ordinals.
    submission: u64,
    on_submission: u64,
    buffer: u64,
    start: u64,
    end: u64,
}
const _: () = assert!(size_of::<RawCross>() == 4 * 4 + 8 * 5);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for RawCross {}

/// An explicit producer of a submission joined at both ends, by ordinal (16 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct RawProducer {
    consumer: u64,
    producer: u64,
}
const _: () = assert!(size_of::<RawProducer>() == 16);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for RawProducer {}

/// A span's place in the (submission, region) → span table (16 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct SlotSpan {
    slot: u64,
    /// [`SpanRef::pack`].
    span: u64,
}
const _: () = assert!(size_of::<SlotSpan>() == 16);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for SlotSpan {}

/// A wait's producer and its index in the waits sorted by consumer (16 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct ProducerOf {
    producer: RegionKey,
    index: u32,
    _pad: u32,
}
const _: () = assert!(size_of::<ProducerOf>() == 16);
// SAFETY: integer fields and integer newtypes, no padding (asserted above).
unsafe impl Plain for ProducerOf {}

/// An explicit edge's consumer and its index in the edges sorted by producer (8 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct ConsumerOf {
    consumer: SubId,
    index: u32,
}
const _: () = assert!(size_of::<ConsumerOf>() == 8);
// SAFETY: an integer newtype and an integer, no padding (asserted above).
unsafe impl Plain for ConsumerOf {}

/// A reader that adds what it reads to a counter (the summary frame's progress).
pub struct Counting<'a, R> {
    /// The reader counted.
    pub inner: R,
    /// The bytes read so far.
    pub read_bytes: &'a AtomicU64,
}

impl<'a> Counting<'a, io::Take<std::fs::File>> {
    /// `file` as long as it is now, counted into `read_bytes`: a trace being recorded is
    /// read to its length at the open, as `TraceReader::open` reads it (one recorded faster
    /// than it is read never ended).
    ///
    /// # Errors
    ///
    /// The file's length cannot be read.
    pub fn as_long_as_now(file: std::fs::File, read_bytes: &'a AtomicU64) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Counting {
            inner: file.take(len),
            read_bytes,
        })
    }
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads the trace at `path` once into the files of a view cache entry in `dir` (an empty
/// directory), counting the bytes read into `read_bytes`; returns the manifest and the
/// model without its columns, for `model.bin`. Submission numbers are checked as
/// `hrx-tui`'s `load` checks them.
///
/// # Errors
///
/// The trace cannot be opened or read (as an I/O error), or a file of the entry cannot be
/// written.
pub(crate) fn build(
    dir: &Path,
    path: &Path,
    read_bytes: Option<&AtomicU64>,
) -> io::Result<(Manifest, Model)> {
    let unread = AtomicU64::new(0);
    let file = hrx_capture::open_file(path).map_err(io::Error::other)?;
    let counting = Counting::as_long_as_now(file, read_bytes.unwrap_or(&unread))?;
    let mut reader = hrx_capture::TraceReader::new(counting)
        .map_err(io::Error::other)?
        .check_submission_numbers();
    let mut builder = StreamBuilder::new(dir)?;
    for item in reader.by_ref() {
        let (_, record) = item.map_err(io::Error::other)?;
        builder.push(&record);
    }
    let recovery = *reader.recovery();
    let warnings = reader.warnings().iter().map(ToString::to_string).collect();
    builder.finish(Some(recovery), warnings)
}

/// Builds a view cache entry from records pushed one at a time (see the module docs).
pub(crate) struct StreamBuilder {
    inner: ModelBuilder,
    /// The entry's (temporary) directory.
    dir: PathBuf,
    /// Spill files, removed by `finish`.
    scratch: PathBuf,
    lanes: Vec<Spill<Span>>,
    subs: Spill<Submission>,
    /// Per submission by order of arrival.
    sub_prepared: Vec<u32>,
    sub_base: Vec<u32>,
    sub_status: Vec<u8>,
    /// Whether every `Submit` so far came in (runtime, index) order.
    in_order: bool,
    last_key: Option<(RuntimeId, SubmissionIndex)>,
    /// Per region slot: [`SpanStatus`] as a byte, and [`HAS_SPAN`].
    region_status: Vec<u8>,
    /// The explicit producers column, written as it is read.
    producers: Spill<SubmissionIndex>,
    raw_producers: Spill<RawProducer>,
    submit_times: Spill<u64>,
    cross: Spill<RawCross>,
    /// Operation timings joined to their region slots, as they arrive.
    ops: Spill<OpSpan>,
    error: Option<io::Error>,
}

impl StreamBuilder {
    /// A builder writing the entry's files into `dir` (an empty directory).
    pub(crate) fn new(dir: &Path) -> io::Result<StreamBuilder> {
        let scratch = dir.join("spill");
        fs::create_dir(&scratch)?;
        Ok(StreamBuilder {
            inner: ModelBuilder::new(),
            subs: Spill::create(scratch.join("submissions"))?,
            producers: Spill::create(dir.join("explicit_producers"))?,
            raw_producers: Spill::create(scratch.join("producers"))?,
            submit_times: Spill::create(scratch.join("submit_times"))?,
            cross: Spill::create(scratch.join("cross"))?,
            ops: Spill::create(scratch.join("ops"))?,
            dir: dir.to_owned(),
            scratch,
            lanes: Vec::new(),
            sub_prepared: Vec::new(),
            sub_base: Vec::new(),
            sub_status: Vec::new(),
            in_order: true,
            last_key: None,
            region_status: Vec::new(),
            error: None,
        })
    }

    /// Ingests one record. The first I/O error is kept and returned by
    /// [`StreamBuilder::finish`].
    pub(crate) fn push(&mut self, record: &Record) {
        if self.error.is_none()
            && let Err(error) = self.try_push(record)
        {
            self.error = Some(error);
        }
    }

    /// A spill file per lane, for lanes created since.
    fn ensure_lanes(&mut self) -> io::Result<()> {
        while self.lanes.len() < self.inner.model.lanes.len() {
            let path = self.scratch.join(format!("lane-{}", self.lanes.len()));
            self.lanes.push(Spill::create(path)?);
        }
        Ok(())
    }

    fn try_push(&mut self, record: &Record) -> io::Result<()> {
        self.inner.push_shared(record);
        self.ensure_lanes()?;
        self.take_joins()
    }

    /// Applies what the joiner handed over since the last call.
    fn take_joins(&mut self) -> io::Result<()> {
        let joined = std::mem::take(&mut self.inner.joins.out);
        let applied = joined.iter().try_for_each(|j| self.apply(j));
        self.inner.joins.out = joined;
        self.inner.joins.out.clear();
        applied
    }

    /// Writes or keeps one of the joins `hrx-analysis`'s joiner handed over.
    fn apply(&mut self, joined: &Joined) -> io::Result<()> {
        match joined {
            Joined::Submitted {
                joined,
                slot,
                time_ns,
                producers,
                left_out,
                regions,
            } => {
                let mut sub = self
                    .inner
                    .submission(joined, *slot, *time_ns, producers, *left_out);
                let prepared = sub.prepared();
                let regions = *regions as usize;
                let base = self.region_status.len();
                sub.region_base = u32::try_from(base)
                    .ok()
                    .filter(|b| b.checked_add(regions as u32).is_some())
                    .ok_or_else(|| io::Error::other("more than 2^32 regions"))?;
                self.region_status
                    .resize(base + regions, SpanStatus::Unknown as u8);
                debug_assert_eq!(self.sub_base.len() as u64, joined.ordinal);
                sub.producers_start = self.producers.len() as u32;
                for p in producers {
                    self.producers.push(p)?;
                }
                self.subs.push(&sub)?;
                self.sub_prepared.push(prepared.map_or(u32::MAX, |p| p.0));
                self.sub_base.push(sub.region_base);
                self.sub_status.push(SpanStatus::Unknown as u8);
                let key = (joined.runtime, joined.submission);
                self.in_order &= self.last_key.is_none_or(|last| last < key);
                self.last_key = Some(key);
                self.submit_times.push(time_ns)?;
            }
            Joined::Span(t) => {
                let region = t.region;
                let slot = self.slot(t.ordinal, region);
                let span = Span::timed(t.start_ns, t.end_ns, t.device, arrival(t.ordinal), region);
                self.add_span(region, slot, span)?;
            }
            Joined::OpSpan(t, node) => {
                // Slots are below 2^32 (checked when the submission's base was given).
                let slot = self.slot(t.ordinal, t.region) as u32;
                let op = OpSpan::new(slot, *node, t.start_ns, t.end_ns, t.device);
                self.ops.push(&op)?;
                self.inner.model.count_op_span(t.lane);
            }
            Joined::Outcome(ordinal, status) => {
                self.sub_status[*ordinal as usize] = *status as u8;
            }
            Joined::Region(r, status, time_ns) => {
                let region = r.region;
                let slot = self.slot(r.submission.ordinal, region);
                let byte = &mut self.region_status[slot];
                *byte = (*byte & HAS_SPAN) | *status as u8;
                if matches!(status, SpanStatus::Failed | SpanStatus::Cancelled) {
                    let sub = arrival(r.submission.ordinal);
                    self.inner
                        .region_ends
                        .push((sub, region, *status, *time_ns));
                }
            }
            Joined::Link(link) => match link.wait {
                Some(w) => self
                    .cross
                    .push(&raw_cross(&w, link.consumer, link.producer))?,
                None => self.raw_producers.push(&RawProducer {
                    consumer: link.consumer,
                    producer: link.producer,
                })?,
            },
            Joined::Event(e) => self.inner.join_event(e),
        }
        Ok(())
    }

    /// The region slot of a submission (by ordinal) and a region of its graph.
    fn slot(&self, ordinal: u64, region: RegionRef) -> usize {
        let index = self.inner.index().region(region).index.0;
        self.sub_base[ordinal as usize] as usize + index as usize
    }

    /// Appends a span to the lane of `region` and marks its slot.
    fn add_span(&mut self, region: RegionRef, slot: usize, span: Span) -> io::Result<()> {
        let lane = self.inner.index().region(region).lane;
        self.ensure_lanes()?;
        self.region_status[slot] |= HAS_SPAN;
        self.lanes[lane.get()].push(&span)
    }

    /// Writes every file of the entry and returns its manifest and the model without its
    /// columns (the caller writes `model.bin`): see the module docs.
    ///
    /// # Errors
    ///
    /// The first I/O error of the spills or the entry's files.
    pub(crate) fn finish(
        mut self,
        recovery: Option<Recovery>,
        warnings: Vec<String>,
    ) -> io::Result<(Manifest, Model)> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let summary = self.inner.finish_joiner();
        self.take_joins()?;
        self.add_untimed_spans(&summary)?;
        let new_ids = self.write_submissions()?;
        let final_id = |sub: u32| new_ids.as_ref().map_or(sub, |ids| ids[sub as usize]);
        name_regions(&mut self.inner.model);
        let (lanes, pairs) = self.write_lanes(&final_id)?;
        let region_spans = self.write_region_spans(&pairs)?;
        let (cross, cross_by_producer) = self.write_cross(&final_id)?;
        let (explicit_edges, explicit_by_consumer) = self.write_explicit_edges(&final_id)?;
        let submit_times = self.submit_times.finish()?;
        let submit_times = {
            let mut out = Spill::create(self.dir.join("submit_times"))?;
            for t in sorted(&[&submit_times], |t| *t, &self.scratch)? {
                out.push(&t?)?;
            }
            finish_column(out)?
        };
        let explicit_producers = finish_column(self.producers)?;
        let op_spans = {
            let ops = std::mem::replace(
                &mut self.ops,
                Spill::create(self.scratch.join("ops-unused"))?,
            )
            .finish()?;
            let mut out = Spill::create(self.dir.join("op_spans"))?;
            for op in sorted(&[&ops], OpSpan::key, &self.scratch)? {
                out.push(&op?)?;
            }
            finish_column(out)?
        };
        fs::remove_dir_all(&self.scratch)?;

        let stats = self.inner.take_stats(&summary);
        let threads = self.inner.thread_rows();
        let event_subs = self.inner.event_submissions(|o| SubId(final_id(o as u32)));
        let mut model = self.inner.model;
        model.stats = stats;
        model.threads = threads;
        let manifest = Manifest::new(
            lanes,
            new_ids.map_or(self.sub_base.len(), |ids| ids.len()) as u64,
            region_spans,
            explicit_producers,
            explicit_edges,
            explicit_by_consumer,
            cross,
            cross_by_producer,
            submit_times,
            op_spans,
        );
        map_columns(&self.dir, &manifest, &mut model)?;
        model.info.recovery = recovery;
        model.info.warnings = warnings;
        let keys = link_events(&mut model, event_subs);
        model.range = time_range(&model);
        model.first_failure = hazards::first_failure(&model, &keys);
        Ok((manifest, model))
    }

    /// An untimed span for every failed or cancelled region without one, and a span to the
    /// trace's end for every region that started and never finished (as
    /// ModelBuilder::finish adds them, in the same order).
    fn add_untimed_spans(&mut self, summary: &crate::ScanSummary) -> io::Result<()> {
        let mut untimed = 0;
        for (sub, region, status, time_ns) in std::mem::take(&mut self.inner.region_ends) {
            let slot = self.slot(u64::from(sub.0), region);
            if self.region_status[slot] & HAS_SPAN == 0 {
                let span = Span::untimed(time_ns, sub, region, status);
                self.add_span(region, slot, span)?;
                untimed += 1;
            }
        }
        for r in &summary.running {
            let (Some(ordinal), Some(region)) = (r.ordinal, r.region_ref) else {
                continue;
            };
            let slot = self.slot(ordinal, region);
            if self.region_status[slot] & HAS_SPAN == 0 {
                let end_ns = self.inner.last_ns.max(r.start_ns);
                let span = Span::unfinished(r.start_ns, end_ns, arrival(ordinal), region);
                self.add_span(region, slot, span)?;
                untimed += 1;
            }
        }
        // Timing lost (records dropped): no hang, an untimed span at its start.
        for r in &summary.timing_lost {
            let (Some(ordinal), Some(region)) = (r.ordinal, r.region_ref) else {
                continue;
            };
            let slot = self.slot(ordinal, region);
            if self.region_status[slot] & HAS_SPAN == 0 {
                let status = SpanStatus::TimingLost;
                let span = Span::untimed(r.start_ns, arrival(ordinal), region, status);
                self.add_span(region, slot, span)?;
                untimed += 1;
            }
        }
        self.inner.model.untimed_spans = untimed;
        Ok(())
    }

    /// Writes the submissions column sorted by (runtime, index) with their outcomes; the
    /// final id of each submission by arrival when they arrived in another order.
    fn write_submissions(&mut self) -> io::Result<Option<Vec<u32>>> {
        let subs = std::mem::replace(
            &mut self.subs,
            Spill::create(self.scratch.join("submissions-unused"))?,
        )
        .finish()?;
        let mut out = Spill::create(self.dir.join("submissions"))?;
        let status = |sub: &mut Submission, id: u32| {
            sub.set_status(SpanStatus::from_byte(self.sub_status[id as usize]));
        };
        let new_ids = if self.in_order {
            for (id, sub) in Values::all(&subs)?.enumerate() {
                let mut sub = sub?;
                status(&mut sub, id as u32);
                out.push(&sub)?;
            }
            None
        } else {
            let mut keys = Vec::with_capacity(subs.len as usize);
            for (id, sub) in Values::all(&subs)?.enumerate() {
                let sub = sub?;
                keys.push((sub.runtime, sub.index, id as u32));
            }
            keys.sort_by_key(|k| (k.0, k.1));
            let file = File::open(&subs.path)?;
            let mut new_ids = vec![0; keys.len()];
            let mut bytes = vec![0u8; size_of::<Submission>()];
            for (new, &(_, _, old)) in keys.iter().enumerate() {
                new_ids[old as usize] = new as u32;
                read_at(
                    &file,
                    &mut bytes,
                    u64::from(old) * size_of::<Submission>() as u64,
                )?;
                let mut sub: Submission = super::spill::value_of(&bytes);
                status(&mut sub, old);
                out.push(&sub)?;
            }
            Some(new_ids)
        };
        finish_column(out)?;
        Ok(new_ids)
    }

    /// Writes each lane's spans (sorted by start, final ids and statuses) and blocks;
    /// counts spans per label as they pass. Returns the lanes for the manifest and each
    /// lane's (slot, span) pairs.
    #[allow(clippy::type_complexity)]
    fn write_lanes(
        &mut self,
        final_id: &dyn Fn(u32) -> u32,
    ) -> io::Result<(
        Vec<(RuntimeId, hrx_capture::schema::Queue, u64, u64)>,
        Vec<SpillFile<SlotSpan>>,
    )> {
        let model = &mut self.inner.model;
        let mut manifest_lanes = Vec::with_capacity(model.lanes.len());
        let mut all_pairs = Vec::with_capacity(model.lanes.len());
        for (i, spill) in std::mem::take(&mut self.lanes).into_iter().enumerate() {
            let lane = &model.lanes[i];
            let (runtime, queue) = (lane.runtime, lane.queue);
            let spill = spill.finish()?;
            let mut spans = Spill::<Span>::create(self.dir.join(format!("lane-{i}.spans")))?;
            let mut blocks = Spill::<Block>::create(self.dir.join(format!("lane-{i}.blocks")))?;
            let mut pairs = Spill::<SlotSpan>::create(self.scratch.join(format!("pairs-{i}")))?;
            let mut block = BlockBuilder::default();
            for (index, span) in sorted(&[&spill], |s| s.start_ns, &self.scratch)?.enumerate() {
                let mut span = span?;
                let sub = span.submission.0 as usize;
                let region = model.region(span.region);
                let slot = u64::from(self.sub_base[sub]) + u64::from(region.index.0);
                span.submission = SubId(final_id(span.submission.0));
                if span.ran() {
                    span.set_status(SpanStatus::from_byte(
                        self.region_status[slot as usize] & !HAS_SPAN,
                    ));
                }
                let at = SpanRef {
                    lane: LaneRef(i as u32),
                    index: index as u32,
                };
                pairs.push(&SlotSpan {
                    slot,
                    span: at.pack(),
                })?;
                count_label(
                    &model.index,
                    &model.search_keys,
                    &mut model.label_spans,
                    &mut model.search_key_spans,
                    &span,
                );
                if let Some(b) = block.push(&span) {
                    blocks.push(&b)?;
                }
                spans.push(&span)?;
            }
            if let Some(b) = block.finish() {
                blocks.push(&b)?;
            }
            fs::remove_file(&spill.path)?;
            manifest_lanes.push((
                runtime,
                queue,
                finish_column(spans)?,
                finish_column(blocks)?,
            ));
            all_pairs.push(pairs.finish()?);
        }
        Ok((manifest_lanes, all_pairs))
    }

    /// Writes the (submission, region) → span table from the lanes' pairs sorted by slot
    /// (a slot with two spans takes the later lane's, as ModelBuilder's table does).
    fn write_region_spans(&self, pairs: &[SpillFile<SlotSpan>]) -> io::Result<u64> {
        let total = self.region_status.len() as u64;
        let mut out = Spill::<u64>::create(self.dir.join("region_spans"))?;
        let mut held: Option<SlotSpan> = None;
        let flush = |out: &mut Spill<u64>, pair: SlotSpan| -> io::Result<()> {
            while out.len() < pair.slot {
                out.push(&SpanRef::NONE)?;
            }
            out.push(&pair.span)
        };
        let refs: Vec<&SpillFile<SlotSpan>> = pairs.iter().collect();
        for pair in sorted(&refs, |p| p.slot, &self.scratch)? {
            let pair = pair?;
            if pair.slot >= total {
                continue;
            }
            match held {
                Some(h) if h.slot == pair.slot => {}
                Some(h) => flush(&mut out, h)?,
                None => {}
            }
            held = Some(pair);
        }
        if let Some(h) = held {
            flush(&mut out, h)?;
        }
        while out.len() < total {
            out.push(&SpanRef::NONE)?;
        }
        finish_column(out)
    }

    /// Writes the joined waits, sorted by consumer, and their indices sorted by producer;
    /// returns both lengths.
    fn write_cross(&mut self, final_id: &dyn Fn(u32) -> u32) -> io::Result<(u64, u64)> {
        let raw = std::mem::replace(
            &mut self.cross,
            Spill::create(self.scratch.join("cross-unused"))?,
        )
        .finish()?;
        let key = |ordinal: u64, region: u32| RegionKey {
            submission: SubId(final_id(ordinal as u32)),
            region,
        };
        let mut resolved = Spill::<CrossEdge>::create(self.scratch.join("cross-resolved"))?;
        for w in Values::all(&raw)? {
            let w = w?;
            resolved.push(&CrossEdge::new(
                key(w.submission, w.region),
                key(w.on_submission, w.on_region),
                hazard_kind(w.kind),
                hrx_capture::schema::BufferId(w.buffer),
                w.start,
                w.end,
            ))?;
        }
        let resolved = resolved.finish()?;
        let mut cross = Spill::<CrossEdge>::create(self.dir.join("cross"))?;
        let mut producers = Spill::<ProducerOf>::create(self.scratch.join("cross-producers"))?;
        for edge in sorted(&[&resolved], |e| e.consumer, &self.scratch)? {
            let edge = edge?;
            producers.push(&ProducerOf {
                producer: edge.producer,
                index: cross.len() as u32,
                _pad: 0,
            })?;
            cross.push(&edge)?;
        }
        let producers = producers.finish()?;
        let mut by_producer = Spill::<u32>::create(self.dir.join("cross_by_producer"))?;
        for p in sorted(&[&producers], |p| p.producer, &self.scratch)? {
            by_producer.push(&p?.index)?;
        }
        Ok((finish_column(cross)?, finish_column(by_producer)?))
    }

    /// Writes the (producer, consumer) pairs of `submit_after`, sorted, and their indices
    /// sorted by consumer; returns both lengths.
    fn write_explicit_edges(&mut self, final_id: &dyn Fn(u32) -> u32) -> io::Result<(u64, u64)> {
        let raw = std::mem::replace(
            &mut self.raw_producers,
            Spill::create(self.scratch.join("producers-unused"))?,
        )
        .finish()?;
        let mut pairs = Spill::<(SubId, SubId)>::create(self.scratch.join("edges"))?;
        for p in Values::all(&raw)? {
            let p = p?;
            let id = |ordinal: u64| SubId(final_id(ordinal as u32));
            pairs.push(&(id(p.producer), id(p.consumer)))?;
        }
        let pairs = pairs.finish()?;
        let mut out = Spill::<(SubId, SubId)>::create(self.dir.join("explicit_edges"))?;
        let mut consumers = Spill::<ConsumerOf>::create(self.scratch.join("edge-consumers"))?;
        for pair in sorted(&[&pairs], |p| *p, &self.scratch)? {
            let pair = pair?;
            consumers.push(&ConsumerOf {
                consumer: pair.1,
                index: out.len() as u32,
            })?;
            out.push(&pair)?;
        }
        let consumers = consumers.finish()?;
        let mut by_consumer = Spill::<u32>::create(self.dir.join("explicit_by_consumer"))?;
        for c in sorted(&[&consumers], |c| (c.consumer, c.index), &self.scratch)? {
            by_consumer.push(&c?.index)?;
        }
        Ok((finish_column(out)?, finish_column(by_consumer)?))
    }
}

/// Finishes a column file of the entry: flushed, synced and dropped from the page cache
/// (see `column::drop_cached_pages`); returns its length in values.
fn finish_column<T: Plain>(spill: Spill<T>) -> io::Result<u64> {
    let file = spill.finish()?;
    let handle = File::open(&file.path)?;
    handle.sync_data()?;
    drop_cached_pages(&handle);
    Ok(file.len)
}

fn read_at(file: &File, bytes: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, bytes, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::Seek;
        let mut file = file;
        file.seek(io::SeekFrom::Start(offset))?;
        file.read_exact(bytes)
    }
}

fn raw_cross(w: &CrossWait, consumer: u64, producer: u64) -> RawCross {
    RawCross {
        _pad: 0,
        region: w.region.0,
        on_region: w.on_region.0,
        kind: match w.kind {
            HazardKind::ReadAfterWrite => 0,
            HazardKind::WriteAfterRead => 1,
            HazardKind::WriteAfterWrite => 2,
        },
        submission: consumer,
        on_submission: producer,
        buffer: w.buffer.0,
        start: w.start,
        end: w.end,
    }
}

fn hazard_kind(kind: u32) -> HazardKind {
    match kind {
        0 => HazardKind::ReadAfterWrite,
        1 => HazardKind::WriteAfterRead,
        _ => HazardKind::WriteAfterWrite,
    }
}

#[cfg(test)]
mod tests;
