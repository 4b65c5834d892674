//! A per-lane span store with level-of-detail summaries: what a timeline reads instead of
//! holding every region execution in memory.
//!
//! [`SpanStoreBuilder`] is a [`Visitor`]: during the one [`scan`](crate::scan()) pass it
//! appends every joined region execution to its lane's unlinked temporary file as a
//! fixed-size [`ENTRY_BYTES`]-byte entry (no strings, no per-span allocation). [`finish`]
//! sorts each lane by start time where the file order was not already sorted, maps the
//! file read-only and builds the lane's coverage summaries. Memory is then the summaries
//! ([`LOD_BUCKETS`] `u64`s per lane and level, about 1 MiB per lane) plus whatever pages of
//! the maps a reader touches: the kernel pages them in and out, so a 100-million-region
//! trace opens with resident memory independent of its length. (The summaries are built by
//! reading the files, not the maps, so building them leaves nothing resident; a lane whose
//! spans arrived out of start order is sorted in its map, which touches every page of it
//! once.)
//!
//! Summaries: level 0 splits the whole trace's time range into at most [`LOD_BUCKETS`]
//! buckets of `2^k` ns; level `j` buckets are `2^j` level-0 buckets wide. Each bucket
//! holds the nanoseconds its lane's spans cover inside it (overlapping spans add up, so a
//! lane running two regions at once can exceed the bucket's width). A zoomed-out frame reads
//! [`SpanStore::coverage`] (summaries only); a zoomed-in frame reads
//! [`SpanStore::overlapping`] (a binary search, then only the visible window's entries).
//!
//! [`finish`]: SpanStoreBuilder::finish

use crate::index::{Index, LaneRef, RegionRef};
use crate::scan::{JoinedSpan, ScanSummary, Visitor};
use hrx_capture::ReadError;
use hrx_capture::schema::SubmissionIndex;
use memmap2::{Mmap, MmapMut};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes of one stored span: start, end, submission (`u64` each), region, flags (`u32`
/// each), little-endian.
pub const ENTRY_BYTES: usize = 32;

/// The most level-0 summary buckets over the trace's time range.
pub const LOD_BUCKETS: usize = 1 << 16;

const FLAG_DEVICE: u32 = 1;

/// Why a span store could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SpanStoreError {
    /// The temporary lane files could not be written or mapped.
    #[error("span store: {0}")]
    Io(#[from] std::io::Error),
    /// The trace could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// One stored region execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredSpan {
    /// Host start, ns since the session start.
    pub start_ns: u64,
    /// Host end, ns since the session start.
    pub end_ns: u64,
    /// Its submission.
    pub submission: SubmissionIndex,
    /// Its region, model-wide.
    pub region: RegionRef,
    /// Whether the backend recorded a device clock span too.
    pub has_device: bool,
}

impl StoredSpan {
    fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut e = [0u8; ENTRY_BYTES];
        e[0..8].copy_from_slice(&self.start_ns.to_le_bytes());
        e[8..16].copy_from_slice(&self.end_ns.to_le_bytes());
        e[16..24].copy_from_slice(&self.submission.0.to_le_bytes());
        e[24..28].copy_from_slice(&self.region.0.to_le_bytes());
        let flags = if self.has_device { FLAG_DEVICE } else { 0 };
        e[28..32].copy_from_slice(&flags.to_le_bytes());
        e
    }

    fn decode(e: &[u8]) -> StoredSpan {
        let u64_at = |at: usize| u64::from_le_bytes(e[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(e[at..at + 4].try_into().expect("4 bytes"));
        StoredSpan {
            start_ns: u64_at(0),
            end_ns: u64_at(8),
            submission: SubmissionIndex(u64_at(16)),
            region: RegionRef(u32_at(24)),
            has_device: u32_at(28) & FLAG_DEVICE != 0,
        }
    }

    fn start_of(e: &[u8]) -> u64 {
        u64::from_le_bytes(e[0..8].try_into().expect("8 bytes"))
    }

    fn end_of(e: &[u8]) -> u64 {
        u64::from_le_bytes(e[8..16].try_into().expect("8 bytes"))
    }
}

#[derive(Debug)]
struct LaneWriter {
    file: BufWriter<File>,
    count: u64,
    sorted: bool,
    last_start: u64,
    max_duration: u64,
}

/// Collects spans during a pass (see the module docs).
#[derive(Debug, Default)]
pub struct SpanStoreBuilder {
    lanes: Vec<Option<LaneWriter>>,
    first_start: Option<u64>,
    last_end: u64,
    error: Option<std::io::Error>,
}

impl SpanStoreBuilder {
    /// An empty builder.
    pub fn new() -> SpanStoreBuilder {
        SpanStoreBuilder::default()
    }

    /// Appends one span to `lane`.
    ///
    /// The first I/O error is kept and returned by [`finish`](Self::finish); later pushes
    /// are ignored.
    pub fn push(&mut self, lane: LaneRef, span: StoredSpan) {
        if self.error.is_some() {
            return;
        }
        if let Err(error) = self.try_push(lane, span) {
            self.error = Some(error);
        }
    }

    fn try_push(&mut self, lane: LaneRef, span: StoredSpan) -> std::io::Result<()> {
        let slot = lane.0 as usize;
        if self.lanes.len() <= slot {
            self.lanes.resize_with(slot + 1, || None);
        }
        if self.lanes[slot].is_none() {
            self.lanes[slot] = Some(LaneWriter {
                file: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
                count: 0,
                sorted: true,
                last_start: 0,
                max_duration: 0,
            });
        }
        let writer = self.lanes[slot].as_mut().expect("created above");
        writer.file.write_all(&span.encode())?;
        writer.sorted &= span.start_ns >= writer.last_start;
        writer.last_start = span.start_ns;
        writer.count += 1;
        writer.max_duration = writer
            .max_duration
            .max(span.end_ns.saturating_sub(span.start_ns));
        self.first_start = Some(
            self.first_start
                .map_or(span.start_ns, |f| f.min(span.start_ns)),
        );
        self.last_end = self.last_end.max(span.end_ns.max(span.start_ns));
        Ok(())
    }

    /// Sorts, maps and summarises every lane.
    ///
    /// # Errors
    ///
    /// [`SpanStoreError::Io`] when a temporary file could not be written, read back or
    /// mapped.
    pub fn finish(self) -> Result<SpanStore, SpanStoreError> {
        if let Some(error) = self.error {
            return Err(error.into());
        }
        let origin = self.first_start.unwrap_or(0);
        let range = self.last_end.saturating_sub(origin).max(1);
        // The narrowest power-of-two bucket that fits the range in LOD_BUCKETS buckets.
        let mut base_shift = 0u32;
        while (range >> base_shift) >= LOD_BUCKETS as u64 {
            base_shift += 1;
        }
        let origin = origin >> base_shift << base_shift;
        // Rounding the origin down can add one bucket at the end.
        let buckets = ((self.last_end.saturating_sub(origin) >> base_shift) + 1) as usize;
        let mut lanes = Vec::with_capacity(self.lanes.len());
        for writer in self.lanes {
            let Some(writer) = writer else {
                lanes.push(StoredLane::default());
                continue;
            };
            let file = writer.file.into_inner().map_err(|e| e.into_error())?;
            if !writer.sorted {
                // SAFETY: the file is an unlinked temporary file that only this process
                // holds; nothing else can truncate or write it while it is mapped.
                let mut map = unsafe { MmapMut::map_mut(&file)? };
                let (entries, rest) = map.as_chunks_mut::<ENTRY_BYTES>();
                debug_assert!(rest.is_empty());
                entries.sort_unstable_by_key(|e| (StoredSpan::start_of(e), StoredSpan::end_of(e)));
                map.flush()?;
            }
            // Summaries read the file through the page cache, not the map, so a pass over
            // every span leaves none of them resident in this process.
            let (levels, extent) = summarise(&file, origin, base_shift, buckets)?;
            // SAFETY: as above.
            let map = unsafe { Mmap::map(&file)? };
            lanes.push(StoredLane {
                map: Some(map),
                extent,
                count: writer.count as usize,
                max_duration: writer.max_duration,
                levels,
            });
        }
        Ok(SpanStore {
            lanes,
            origin,
            base_shift,
        })
    }
}

/// Coverage summaries: level 0 first, each level half as many buckets as the one below.
type Levels = Vec<Vec<u64>>;

/// Level 0 from the spans, then each level from the one below; and the lane's extent
/// (earliest start, latest end).
fn summarise(
    file: &File,
    origin: u64,
    shift: u32,
    buckets: usize,
) -> std::io::Result<(Levels, (u64, u64))> {
    let mut level0 = vec![0u64; buckets];
    let mut extent = (u64::MAX, 0u64);
    let width = 1u64 << shift;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    reader.seek(SeekFrom::Start(0))?;
    let mut e = [0u8; ENTRY_BYTES];
    loop {
        match reader.read_exact(&mut e) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(error) => return Err(error),
        }
        let span = StoredSpan::decode(&e);
        extent = (extent.0.min(span.start_ns), extent.1.max(span.end_ns));
        let (start, end) = (span.start_ns.max(origin), span.end_ns);
        if end <= start {
            continue;
        }
        let first = ((start - origin) >> shift) as usize;
        let last = (((end - 1 - origin) >> shift) as usize).min(buckets - 1);
        for (b, slot) in level0.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = origin + ((b as u64) << shift);
            let overlap = end.min(lo + width) - start.max(lo);
            *slot = slot.saturating_add(overlap);
        }
    }
    let mut levels = vec![level0];
    while levels.last().expect("level 0").len() > 1 {
        let below = levels.last().expect("level 0");
        let next = below
            .chunks(2)
            .map(|pair| pair.iter().fold(0u64, |a, &b| a.saturating_add(b)))
            .collect();
        levels.push(next);
    }
    Ok((levels, extent))
}

#[derive(Debug, Default)]
struct StoredLane {
    map: Option<Mmap>,
    /// The earliest start and latest end of its spans.
    extent: (u64, u64),
    count: usize,
    max_duration: u64,
    levels: Levels,
}

impl StoredLane {
    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// Every lane's spans, sorted by start, with coverage summaries (see the module docs).
#[derive(Debug)]
pub struct SpanStore {
    lanes: Vec<StoredLane>,
    origin: u64,
    base_shift: u32,
}

impl SpanStore {
    /// Scans the trace at `path` once, building its index and its span store.
    ///
    /// # Errors
    ///
    /// [`SpanStoreError::Read`] when the trace cannot be opened or is damaged beyond
    /// recovery; [`SpanStoreError::Io`] as in [`SpanStoreBuilder::finish`].
    pub fn build(path: &Path) -> Result<(SpanStore, ScanSummary), SpanStoreError> {
        let mut builder = SpanStoreBuilder::new();
        let summary = crate::scan(path, &mut builder)?;
        Ok((builder.finish()?, summary))
    }

    /// Lanes known to the store (indexed by [`LaneRef`]; a lane with no spans is empty).
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Spans stored for `lane`.
    pub fn len(&self, lane: LaneRef) -> usize {
        self.lanes.get(lane.0 as usize).map_or(0, |l| l.count)
    }

    /// Whether `lane` has no spans.
    pub fn is_empty(&self, lane: LaneRef) -> bool {
        self.len(lane) == 0
    }

    /// The `i`th span of `lane` in start order.
    pub fn get(&self, lane: LaneRef, i: usize) -> Option<StoredSpan> {
        let bytes = self.lanes.get(lane.0 as usize)?.bytes();
        bytes
            .get(i * ENTRY_BYTES..(i + 1) * ENTRY_BYTES)
            .map(StoredSpan::decode)
    }

    /// Where level-0 bucket 0 starts, ns since the session start.
    pub fn origin_ns(&self) -> u64 {
        self.origin
    }

    /// The width of a level-0 summary bucket, ns.
    pub fn bucket_ns(&self) -> u64 {
        1 << self.base_shift
    }

    /// Spans of `lane` that overlap `[from_ns, to_ns)` (a zero-length span overlaps when
    /// its instant lies inside), in start order, with the index of the first one.
    /// Reads only the entries near the window: a binary search on start, back by the
    /// lane's longest span.
    pub fn overlapping(
        &self,
        lane: LaneRef,
        from_ns: u64,
        to_ns: u64,
    ) -> impl Iterator<Item = (usize, StoredSpan)> + '_ {
        let stored = self.lanes.get(lane.0 as usize);
        let bytes = stored.map_or(&[][..], StoredLane::bytes);
        let earliest = from_ns.saturating_sub(stored.map_or(0, |l| l.max_duration));
        let entries = bytes.len() / ENTRY_BYTES;
        // partition_point over entry indices, reading only the start field.
        let (mut lo, mut hi) = (0usize, entries);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if StoredSpan::start_of(&bytes[mid * ENTRY_BYTES..]) < earliest {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo..entries)
            .map(move |i| (i, StoredSpan::decode(&bytes[i * ENTRY_BYTES..])))
            .take_while(move |(_, s)| s.start_ns < to_ns)
            .filter(move |(_, s)| s.end_ns > from_ns || s.start_ns >= from_ns)
    }

    /// Nanoseconds of `lane` covered by spans in each of `columns` equal parts of
    /// `[from_ns, to_ns)`, read from the coarsest summary level whose buckets are no wider
    /// than a column (a bucket straddling a column edge is split in proportion). Where a
    /// column is narrower than a level-0 bucket, the spans themselves are read. Overlapping
    /// spans add up, so a value can exceed the column's width.
    pub fn coverage(&self, lane: LaneRef, from_ns: u64, to_ns: u64, columns: usize) -> Vec<f64> {
        let mut out = vec![0f64; columns];
        let Some(stored) = self.lanes.get(lane.0 as usize) else {
            return out;
        };
        if columns == 0 || to_ns <= from_ns || stored.count == 0 {
            return out;
        }
        let column_ns = (to_ns - from_ns) as f64 / columns as f64;
        let column_of = |t: f64| ((t - from_ns as f64) / column_ns).floor();
        // Adds `ns` spread evenly over [lo, hi) to the columns it overlaps.
        let mut spread = |lo: u64, hi: u64, ns: f64| {
            let (lo, hi) = (lo.max(from_ns) as f64, hi.min(to_ns) as f64);
            if hi <= lo {
                return;
            }
            let per_ns = ns / (hi - lo);
            let first = column_of(lo).max(0.0) as usize;
            let last = (column_of(hi).max(0.0) as usize).min(columns - 1);
            for (c, slot) in out.iter_mut().enumerate().take(last + 1).skip(first) {
                let c_lo = from_ns as f64 + c as f64 * column_ns;
                let overlap = hi.min(c_lo + column_ns) - lo.max(c_lo);
                if overlap > 0.0 {
                    *slot += overlap * per_ns;
                }
            }
        };
        let base = self.bucket_ns() as f64;
        if column_ns < base {
            for (_, s) in self.overlapping(lane, from_ns, to_ns) {
                let (lo, hi) = (s.start_ns.max(from_ns), s.end_ns.min(to_ns));
                if hi > lo {
                    spread(lo, hi, (hi - lo) as f64);
                }
            }
            return out;
        }
        let mut level = 0usize;
        while level + 1 < stored.levels.len() && base * (2u64 << level) as f64 <= column_ns {
            level += 1;
        }
        let shift = self.base_shift + level as u32;
        let buckets = &stored.levels[level];
        let first = (from_ns.saturating_sub(self.origin) >> shift) as usize;
        let last = ((to_ns - 1).saturating_sub(self.origin) >> shift) as usize;
        for (b, &ns) in buckets.iter().enumerate().take(last + 1).skip(first) {
            if ns == 0 {
                continue;
            }
            // The bucket's coverage is spread evenly over the part of the bucket the lane's
            // spans reach, then clipped to the window.
            let lo = self.origin + ((b as u64) << shift);
            let (lo, hi) = (
                lo.max(stored.extent.0),
                (lo + (1u64 << shift)).min(stored.extent.1),
            );
            let inside = to_ns.min(hi).saturating_sub(from_ns.max(lo));
            if hi > lo && inside > 0 {
                spread(lo, hi, ns as f64 * inside as f64 / (hi - lo) as f64);
            }
        }
        out
    }
}

impl Visitor for SpanStoreBuilder {
    fn span(&mut self, _index: &Index, span: &JoinedSpan) {
        self.push(
            span.lane,
            StoredSpan {
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                submission: span.submission,
                region: span.region,
                has_device: span.device.is_some(),
            },
        );
    }
}

#[cfg(test)]
mod tests;
