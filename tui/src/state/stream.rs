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
//! CrossWait       -                                      the raw wait (56 B)
//! other records   the structure, events, facts (as ModelBuilder::push_shared)
//! ```
//!
//! [`StreamBuilder::finish`] then writes each column of the entry from the spills with the
//! external merge sort of [`super::spill`] (a lane is almost always in start order already:
//! read twice, not sorted): the lane's spans with their final submission ids and statuses,
//! its level-of-detail blocks and the span counts per label as they pass, the
//! (submission, region) → span table from (slot, span) pairs sorted by slot, the waits
//! sorted by consumer and by producer, the explicit edges and the submit times. Last, the
//! columns are mapped to link events to their spans and find the first failure, and the
//! rest of the model is written.
//!
//! What stays in memory is about 25 bytes per submission and one byte per region (60 MiB
//! for 10M regions of 2.5M submissions), plus one sort chunk ([`super::spill::CHUNK_BYTES`])
//! and the buffers of the files; none of the files is mapped while it is written, so their
//! pages are the page cache's, not the process's.
//!
//! Records out of file order are handled as [`super::ModelBuilder`] handles them: a timing
//! or completion before its `Submit` waits in memory until the end, a `Submit` before its
//! `Prepared` until that is read; submissions out of
//! (runtime, index) order are renumbered from a sort of their keys (24 bytes each, only
//! then).

use super::cache::{Manifest, map_columns};
use super::column::{Plain, drop_cached_pages};
use super::hazards;
use super::ingest::{
    ModelBuilder, count_label, link_events, name_regions, take_parked, time_range,
};
use super::lanes::{Block, BlockBuilder, Span, SpanStatus};
use super::model::{CrossEdge, LaneId, Model, RegionId, RegionKey, SpanRef, SubId, Submission};
use super::spill::{Spill, SpillFile, Values, sorted};
use hrx_capture::Recovery;
use hrx_capture::schema::{
    CrossWait, HazardKind, Record, RegionIndex, RegionTiming, RuntimeId, Status, SubmissionIndex,
    Submit,
};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Set in a region slot's status byte once a span of the region is placed.
const HAS_SPAN: u8 = 0x80;

/// A cross-submission wait as read (56 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct RawCross {
    runtime: u32,
    region: u32,
    on_region: u32,
    /// [`HazardKind`]: 0 read after write, 1 write after read, 2 write after write.
    kind: u32,
    submission: u64,
    on_submission: u64,
    buffer: u64,
    start: u64,
    end: u64,
}
const _: () = assert!(size_of::<RawCross>() == 4 * 4 + 8 * 5);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for RawCross {}

/// An explicit producer of a submission as read (16 bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct RawProducer {
    runtime: u32,
    /// The consumer, by order of arrival.
    consumer: u32,
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

/// (runtime, captured index) → submission by order of arrival. Keys that arrive in
/// increasing order per runtime (the usual case) are two sorted vectors searched by
/// bisection; the others a map, consulted first (a repeated key: the later wins, as a map
/// insert would).
#[derive(Default)]
struct SubLookup {
    runtimes: Vec<(RuntimeId, Vec<u64>, Vec<u32>)>,
    others: HashMap<(RuntimeId, SubmissionIndex), u32>,
}

impl SubLookup {
    fn insert(&mut self, runtime: RuntimeId, index: SubmissionIndex, id: u32) {
        let slot = match self.runtimes.iter().position(|r| r.0 == runtime) {
            Some(i) => i,
            None => {
                self.runtimes.push((runtime, Vec::new(), Vec::new()));
                self.runtimes.len() - 1
            }
        };
        let (_, indices, ids) = &mut self.runtimes[slot];
        if indices.last().is_none_or(|&last| last < index.0) {
            indices.push(index.0);
            ids.push(id);
        } else {
            self.others.insert((runtime, index), id);
        }
    }

    fn get(&self, runtime: RuntimeId, index: SubmissionIndex) -> Option<u32> {
        if let Some(&id) = self.others.get(&(runtime, index)) {
            return Some(id);
        }
        let (_, indices, ids) = self.runtimes.iter().find(|r| r.0 == runtime)?;
        indices.binary_search(&index.0).ok().map(|i| ids[i])
    }
}

/// A reader that adds what it reads to a counter (the summary frame's progress).
pub(crate) struct Counting<'a, R> {
    pub(crate) inner: R,
    pub(crate) read_bytes: &'a AtomicU64,
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
/// [`crate::load`] checks them.
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
    let counting = Counting {
        inner: file,
        read_bytes: read_bytes.unwrap_or(&unread),
    };
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
    lookup: SubLookup,
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
    pending_timings: Vec<RegionTiming>,
    pending_done: Vec<(RuntimeId, SubmissionIndex, RegionIndex, SpanStatus)>,
    pending_submission_done: Vec<(RuntimeId, SubmissionIndex, SpanStatus)>,
    /// Submits read before their `Prepared`.
    parked_submits: Vec<Submit>,
    /// Regions started and not finished yet, with their start.
    started: HashMap<(RuntimeId, SubmissionIndex, RegionIndex), u64>,
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
            dir: dir.to_owned(),
            scratch,
            lanes: Vec::new(),
            sub_prepared: Vec::new(),
            sub_base: Vec::new(),
            sub_status: Vec::new(),
            lookup: SubLookup::default(),
            in_order: true,
            last_key: None,
            region_status: Vec::new(),
            pending_timings: Vec::new(),
            pending_done: Vec::new(),
            pending_submission_done: Vec::new(),
            parked_submits: Vec::new(),
            started: HashMap::new(),
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
        match record {
            Record::RegionStarted(r) => {
                self.started
                    .insert((r.runtime, r.submission, r.region), r.time_ns);
            }
            // As ModelBuilder::push: a submit read before its `Prepared` waits for it.
            Record::Submit(s)
                if !self
                    .inner
                    .model
                    .prepared_ids
                    .contains_key(&(s.runtime, s.prepared)) =>
            {
                self.parked_submits.push(s.clone());
            }
            Record::Submit(s) => self.submit(s)?,
            Record::Prepared(p) => {
                for s in take_parked(&mut self.parked_submits, p.runtime, p.prepared) {
                    self.submit(&s)?;
                }
            }
            Record::CrossWait(w) => self.cross.push(&raw_cross(w))?,
            Record::RegionTiming(t) => {
                self.started.remove(&(t.runtime, t.submission, t.region));
                if !self.place(t)? {
                    self.pending_timings.push(*t);
                }
            }
            Record::RegionDone(d) => {
                self.started.remove(&(d.runtime, d.submission, d.region));
                let status = span_status(&d.status);
                if !self.set_status(d.runtime, d.submission, d.region, status) {
                    self.pending_done
                        .push((d.runtime, d.submission, d.region, status));
                }
            }
            Record::SubmissionDone(d) => match self.lookup.get(d.runtime, d.submission) {
                Some(id) => self.sub_status[id as usize] = span_status(&d.status) as u8,
                None => self.pending_submission_done.push((
                    d.runtime,
                    d.submission,
                    span_status(&d.status),
                )),
            },
            _ => {}
        }
        Ok(())
    }

    /// Adds submission `s` (its `Prepared`, when in the trace, already read).
    fn submit(&mut self, s: &Submit) -> io::Result<()> {
        let model = &self.inner.model;
        let prepared = model.prepared_ids.get(&(s.runtime, s.prepared)).copied();
        let regions = prepared.map_or(0, |p| model.prepared[p.get()].regions.len());
        let mut sub = Submission::new(s.runtime, s.submission, s.slot, s.time_ns, prepared);
        let base = self.region_status.len();
        sub.region_base = u32::try_from(base)
            .ok()
            .filter(|b| b.checked_add(regions as u32).is_some())
            .ok_or_else(|| io::Error::other("more than 2^32 regions"))?;
        self.region_status
            .resize(base + regions, SpanStatus::Unknown as u8);
        let id = self.sub_base.len() as u32;
        sub.producers_start = self.producers.len() as u32;
        sub.producers_len = s.producers.len() as u32;
        for p in &s.producers {
            self.producers.push(p)?;
            self.raw_producers.push(&RawProducer {
                runtime: s.runtime.0,
                consumer: id,
                producer: p.0,
            })?;
        }
        self.subs.push(&sub)?;
        self.sub_prepared.push(prepared.map_or(u32::MAX, |p| p.0));
        self.sub_base.push(sub.region_base);
        self.sub_status.push(SpanStatus::Unknown as u8);
        let key = (s.runtime, s.submission);
        self.in_order &= self.last_key.is_none_or(|last| last < key);
        self.last_key = Some(key);
        self.lookup.insert(s.runtime, s.submission, id);
        self.submit_times.push(&s.time_ns)?;
        Ok(())
    }

    /// The submission (by arrival), model-wide region and region slot of a timing or
    /// completion.
    fn resolve(
        &self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
        region: RegionIndex,
    ) -> Option<(u32, RegionId, usize)> {
        let sub = self.lookup.get(runtime, submission)?;
        let prepared = self.sub_prepared[sub as usize];
        let regions = &self.inner.model.prepared.get(prepared as usize)?.regions;
        let id = regions.start.checked_add(region.0)?;
        let slot = self.sub_base[sub as usize] as usize + region.0 as usize;
        (id < regions.end).then_some((sub, RegionId(id), slot))
    }

    /// Appends a span to the lane of `region` and marks its slot.
    fn add_span(
        &mut self,
        runtime: RuntimeId,
        region: RegionId,
        slot: usize,
        span: Span,
    ) -> io::Result<()> {
        let queue = self.inner.model.regions[region.get()].queue;
        let lane = self.inner.lane_of(runtime, queue);
        self.ensure_lanes()?;
        self.region_status[slot] |= HAS_SPAN;
        self.lanes[lane.get()].push(&span)
    }

    /// Places a timing on its lane; false when its submission is not known yet.
    fn place(&mut self, t: &RegionTiming) -> io::Result<bool> {
        let Some((sub, region, slot)) = self.resolve(t.runtime, t.submission, t.region) else {
            return Ok(false);
        };
        let span = Span::timed(t.start_ns, t.end_ns, t.device, SubId(sub), region);
        self.add_span(t.runtime, region, slot, span)?;
        Ok(true)
    }

    /// Records a completion status; false when its submission is not known yet.
    fn set_status(
        &mut self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
        region: RegionIndex,
        status: SpanStatus,
    ) -> bool {
        let Some((_, _, slot)) = self.resolve(runtime, submission, region) else {
            return false;
        };
        let byte = &mut self.region_status[slot];
        *byte = (*byte & HAS_SPAN) | status as u8;
        true
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
        // Parked submits, timings and completions, as ModelBuilder::finish places them.
        for s in std::mem::take(&mut self.parked_submits) {
            self.submit(&s)?;
        }
        for t in std::mem::take(&mut self.pending_timings) {
            if !self.place(&t)? {
                self.inner.model.info.unplaced_timings += 1;
            }
        }
        for (runtime, submission, region, status) in std::mem::take(&mut self.pending_done) {
            self.set_status(runtime, submission, region, status);
        }
        for (runtime, submission, status) in std::mem::take(&mut self.pending_submission_done) {
            if let Some(id) = self.lookup.get(runtime, submission) {
                self.sub_status[id as usize] = status as u8;
            }
        }
        self.add_untimed_spans()?;
        let new_ids = self.write_submissions()?;
        let final_id = |sub: u32| new_ids.as_ref().map_or(sub, |ids| ids[sub as usize]);
        name_regions(&mut self.inner.model);
        let (lanes, pairs) = self.write_lanes(&final_id)?;
        let region_spans = self.write_region_spans(&pairs)?;
        let (cross, cross_by_producer, unresolved) = self.write_cross(&final_id)?;
        let explicit_edges = self.write_explicit_edges(&final_id)?;
        let submit_times = self.submit_times.finish()?;
        let submit_times = {
            let mut out = Spill::create(self.dir.join("submit_times"))?;
            for t in sorted(&[&submit_times], |t| *t, &self.scratch)? {
                out.push(&t?)?;
            }
            finish_column(out)?
        };
        let explicit_producers = finish_column(self.producers)?;
        fs::remove_dir_all(&self.scratch)?;

        let stats = self.inner.take_stats();
        let mut model = self.inner.model;
        model.stats = stats;
        let manifest = Manifest::new(
            lanes,
            new_ids.map_or(self.sub_base.len(), |ids| ids.len()) as u64,
            region_spans,
            explicit_producers,
            explicit_edges,
            cross,
            cross_by_producer,
            submit_times,
        );
        map_columns(&self.dir, &manifest, &mut model)?;
        model.info.unresolved_waits += unresolved;
        model.info.recovery = recovery;
        model.info.warnings = warnings;
        link_events(&mut model);
        model.range = time_range(&model);
        model.first_failure = hazards::first_failure(&model);
        Ok((manifest, model))
    }

    /// An untimed span for every failed or cancelled region without one, and a span to the
    /// trace's end for every region that started and never finished (as
    /// ModelBuilder::finish adds them, in the same order).
    fn add_untimed_spans(&mut self) -> io::Result<()> {
        let mut untimed = 0;
        for i in 0..self.inner.model.events.len() {
            let e = &self.inner.model.events[i];
            let (Some(submission), Some(region)) = (e.submission, e.region) else {
                continue;
            };
            let status = match e.kind {
                super::EventKind::RegionFailed => SpanStatus::Failed,
                super::EventKind::RegionCancelled => SpanStatus::Cancelled,
                _ => continue,
            };
            let (runtime, time_ns) = (e.runtime, e.time_ns);
            if let Some((sub, region_id, slot)) = self.resolve(runtime, submission, region)
                && self.region_status[slot] & HAS_SPAN == 0
            {
                let span = Span::untimed(time_ns, SubId(sub), region_id, status);
                self.add_span(runtime, region_id, slot, span)?;
                untimed += 1;
            }
        }
        let mut started: Vec<_> = std::mem::take(&mut self.started).into_iter().collect();
        started.sort_unstable();
        for ((runtime, submission, region), start_ns) in started {
            if let Some((sub, region_id, slot)) = self.resolve(runtime, submission, region)
                && self.region_status[slot] & HAS_SPAN == 0
            {
                let end_ns = self.inner.last_ns.max(start_ns);
                let span = Span::unfinished(start_ns, end_ns, SubId(sub), region_id);
                self.add_span(runtime, region_id, slot, span)?;
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
                let region = &model.regions[span.region.get()];
                let slot = u64::from(self.sub_base[sub]) + u64::from(region.index.0);
                span.submission = SubId(final_id(span.submission.0));
                if span.ran() {
                    span.set_status(SpanStatus::from_byte(
                        self.region_status[slot as usize] & !HAS_SPAN,
                    ));
                }
                let at = SpanRef {
                    lane: LaneId(i as u32),
                    index: index as u32,
                };
                pairs.push(&SlotSpan {
                    slot,
                    span: at.pack(),
                })?;
                count_label(
                    &model.regions,
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

    /// Writes the waits resolved to submissions, sorted by consumer, and their indices
    /// sorted by producer; returns both lengths and the count of unresolved waits.
    fn write_cross(&mut self, final_id: &dyn Fn(u32) -> u32) -> io::Result<(u64, u64, u64)> {
        let raw = std::mem::replace(
            &mut self.cross,
            Spill::create(self.scratch.join("cross-unused"))?,
        )
        .finish()?;
        let key = |runtime: u32, submission: u64, region: u32| {
            self.lookup
                .get(RuntimeId(runtime), SubmissionIndex(submission))
                .map(|sub| RegionKey {
                    submission: SubId(final_id(sub)),
                    region,
                })
        };
        let mut resolved = Spill::<CrossEdge>::create(self.scratch.join("cross-resolved"))?;
        let mut unresolved = 0;
        for w in Values::all(&raw)? {
            let w = w?;
            match (
                key(w.runtime, w.submission, w.region),
                key(w.runtime, w.on_submission, w.on_region),
            ) {
                (Some(consumer), Some(producer)) => resolved.push(&CrossEdge::new(
                    consumer,
                    producer,
                    hazard_kind(w.kind),
                    hrx_capture::schema::BufferId(w.buffer),
                    w.start,
                    w.end,
                ))?,
                _ => unresolved += 1,
            }
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
        Ok((
            finish_column(cross)?,
            finish_column(by_producer)?,
            unresolved,
        ))
    }

    /// Writes the (producer, consumer) pairs of `submit_after`, sorted.
    fn write_explicit_edges(&mut self, final_id: &dyn Fn(u32) -> u32) -> io::Result<u64> {
        let raw = std::mem::replace(
            &mut self.raw_producers,
            Spill::create(self.scratch.join("producers-unused"))?,
        )
        .finish()?;
        let mut pairs = Spill::<(SubId, SubId)>::create(self.scratch.join("edges"))?;
        for p in Values::all(&raw)? {
            let p = p?;
            if let Some(producer) = self
                .lookup
                .get(RuntimeId(p.runtime), SubmissionIndex(p.producer))
            {
                pairs.push(&(SubId(final_id(producer)), SubId(final_id(p.consumer))))?;
            }
        }
        let pairs = pairs.finish()?;
        let mut out = Spill::<(SubId, SubId)>::create(self.dir.join("explicit_edges"))?;
        for pair in sorted(&[&pairs], |p| *p, &self.scratch)? {
            out.push(&pair?)?;
        }
        finish_column(out)
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

fn raw_cross(w: &CrossWait) -> RawCross {
    RawCross {
        runtime: w.runtime.0,
        region: w.region.0,
        on_region: w.on_region.0,
        kind: match w.kind {
            HazardKind::ReadAfterWrite => 0,
            HazardKind::WriteAfterRead => 1,
            HazardKind::WriteAfterWrite => 2,
        },
        submission: w.submission.0,
        on_submission: w.on_submission.0,
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

fn span_status(status: &Status) -> SpanStatus {
    match status {
        Status::Ok => SpanStatus::Ok,
        Status::Failed { .. } => SpanStatus::Failed,
        Status::Cancelled { .. } => SpanStatus::Cancelled,
    }
}

#[cfg(test)]
mod tests;
