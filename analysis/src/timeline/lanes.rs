//! Spans and the per-lane index the timeline queries.
//!
//! A *lane* is one queue of one runtime (GPU Upload, GPU Compute, GPU Download, NPU, Host).
//! Its spans live in one column sorted by start time (40 bytes a span; in memory while the
//! model is built, mapped from the view cache once reopened), plus one [`Block`] summary
//! per [`BLOCK_SPANS`] spans, the lane's level of detail:
//!
//! ```text
//! spans   [s0 s1 ... s63][s64 ... s127][s128 ...]  sorted by start_ns
//! blocks  [first_start, prefix_end, new, worst]    prefix_end: max end of all spans up to
//!         [...]                                    the block's end (monotone)
//! ```
//!
//! Searches start in the blocks (the first start of each), so a query over a mapped lane
//! touches a page or two of spans at each edge it looks for, and a zoomed-out frame reads
//! the blocks and the spans at its cells' edges only.
//!
//! - **Visible window** `[t0, t1)`: the first span that can reach `t0` is found by a binary
//!   search over the monotone `prefix_end` of the blocks and a scan of at most one block;
//!   the last by a binary search on `start_ns`. The candidates between them are filtered by
//!   their end. (One very long span early in a lane makes every later span a candidate; the
//!   raster then switches to per-cell summaries, which never walk the candidates.)
//! - **Worst status** ([`Lane::worst_in`]) of a range of spans: whole blocks in O(1), at
//!   most two partial blocks scanned.
//! - **Nearest** ([`Lane::nearest`]) and **pick** ([`Lane::pick`]): the span under a time or
//!   overlapping a window the most, for selection.
//!
//! The view (`hrx-tui`'s `state::lanes`) turns these queries into what a screen draws: per
//! cell summaries, bars and the share of each cell the spans cover, the last from the
//! blocks' precomputed contributions ([`Block::new_ns`]).
//!
//! An instant span (`start_ns == end_ns`, e.g. a region cancelled before it ran) occupies
//! `[start_ns, start_ns + 1)` for these queries.

use super::column::{Column, Plain};
use super::model::{RegionRef, SubId};
use hrx_capture::schema::{DeviceSpan, Queue, RuntimeId};
use std::ops::Range;

/// Spans summarised by one block of the lane index (see the module docs).
pub const BLOCK_SPANS: usize = 64;

/// How a span's region ended; ordered by severity (the "busiest" status of a cell is the
/// greatest).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[repr(u8)]
pub enum SpanStatus {
    /// Completed.
    #[default]
    Ok = 0,
    /// No completion was recorded (the trace ends while it runs, or a record was lost).
    Unknown = 1,
    /// Never ran: something it depended on failed or was cancelled.
    Cancelled = 2,
    /// Ran and failed.
    Failed = 3,
    /// Started and never finished: still running when the trace ends (the region a hang or
    /// a crash was in); its bar reaches the trace's end.
    Running = 4,
    /// Started, then its timing or completion was dropped by a lossy recording
    /// ([`crate::ScanSummary::timing_lost`]): no hang; placed at its start, untimed.
    TimingLost = 5,
}

impl SpanStatus {
    /// The status stored as `byte` (an unknown byte reads as [`SpanStatus::Unknown`]).
    pub fn from_byte(byte: u8) -> SpanStatus {
        match byte {
            0 => SpanStatus::Ok,
            2 => SpanStatus::Cancelled,
            3 => SpanStatus::Failed,
            4 => SpanStatus::Running,
            5 => SpanStatus::TimingLost,
            _ => SpanStatus::Unknown,
        }
    }

    /// A short lowercase name: `ok`, `unknown`, `cancelled`, `failed`, `running`, `timing
    /// lost`.
    pub fn name(self) -> &'static str {
        match self {
            SpanStatus::Ok => "ok",
            SpanStatus::Unknown => "unknown",
            SpanStatus::Cancelled => "cancelled",
            SpanStatus::Failed => "failed",
            SpanStatus::Running => "running at the trace's end",
            SpanStatus::TimingLost => "timing lost (records dropped)",
        }
    }
}

/// `device_len_ns` of a span without device timestamps.
const NO_DEVICE: u32 = u32::MAX;

/// A device span as a span column stores it: its start and its duration saturated below
/// [`NO_DEVICE`], which marks none (regions' and operations' spans alike).
pub(super) fn pack_device(device: Option<DeviceSpan>) -> (u64, u32) {
    match device {
        Some(d) => (
            d.start_ns,
            u32::try_from(d.end_ns.saturating_sub(d.start_ns))
                .unwrap_or(NO_DEVICE - 1)
                .min(NO_DEVICE - 1),
        ),
        None => (0, NO_DEVICE),
    }
}

/// The device span [`pack_device`] stored, where there is one: start and end.
pub(super) fn unpack_device(start_ns: u64, len_ns: u32) -> Option<(u64, u64)> {
    (len_ns != NO_DEVICE).then(|| (start_ns, start_ns.saturating_add(u64::from(len_ns))))
}
/// The span has no timing record: it is placed at its completion time.
const FLAG_UNTIMED: u8 = 1;
/// The span started and never finished: it reaches the trace's end.
const FLAG_UNFINISHED: u8 = 2;
/// Its timing ends before it starts (host or device times: crafted or damaged), drawn as
/// 0 ns ([`crate::scan::ends_before_start`]).
const FLAG_BACKWARDS: u8 = 4;

/// One execution of a region of a submission on a lane (40 bytes, stored as they are in
/// the view cache's lane files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Span {
    /// Host time when it started.
    pub start_ns: u64,
    /// Host time when it ended.
    pub end_ns: u64,
    /// Device clock at the start (valid when `device_len_ns != NO_DEVICE`).
    device_start_ns: u64,
    /// Device duration, saturated below `NO_DEVICE`.
    device_len_ns: u32,
    /// The submission it belongs to.
    pub submission: SubId,
    /// The region of the submission's prepared graph.
    pub region: RegionRef,
    /// How it ended ([`SpanStatus`] as a byte: any byte read back from a file is valid).
    status: u8,
    flags: u8,
    _pad: [u8; 2],
}

const _: () = assert!(size_of::<Span>() == 8 + 8 + 8 + 4 + 4 + 4 + 1 + 1 + 2);
// SAFETY: integer fields and integer newtypes, no padding (asserted above).
unsafe impl Plain for Span {}

impl Span {
    /// A span measured by a region timing record.
    pub fn timed(
        start_ns: u64,
        end_ns: u64,
        device: Option<DeviceSpan>,
        submission: SubId,
        region: RegionRef,
    ) -> Span {
        let backwards = end_ns < start_ns || device.is_some_and(|d| d.end_ns < d.start_ns);
        let (device_start_ns, device_len_ns) = pack_device(device);
        Span {
            start_ns,
            end_ns: end_ns.max(start_ns),
            device_start_ns,
            device_len_ns,
            submission,
            region,
            status: SpanStatus::Unknown as u8,
            flags: if backwards { FLAG_BACKWARDS } else { 0 },
            _pad: [0; 2],
        }
    }

    /// A region that never ran (or whose timing was lost), placed at `time_ns`.
    pub(crate) fn untimed(
        time_ns: u64,
        submission: SubId,
        region: RegionRef,
        status: SpanStatus,
    ) -> Span {
        Span {
            flags: FLAG_UNTIMED,
            status: status as u8,
            ..Span::timed(time_ns, time_ns, None, submission, region)
        }
    }

    /// A region that started at `start_ns` and was still running at `end_ns`, the trace's
    /// end ([`SpanStatus::Running`]).
    pub(crate) fn unfinished(
        start_ns: u64,
        end_ns: u64,
        submission: SubId,
        region: RegionRef,
    ) -> Span {
        Span {
            flags: FLAG_UNFINISHED,
            status: SpanStatus::Running as u8,
            ..Span::timed(start_ns, end_ns, None, submission, region)
        }
    }

    /// How it ended.
    pub fn status(&self) -> SpanStatus {
        SpanStatus::from_byte(self.status)
    }

    /// Sets how it ended.
    pub fn set_status(&mut self, status: SpanStatus) {
        self.status = status as u8;
    }

    /// Host duration in ns.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// Device clock start and end, where the backend recorded them.
    pub fn device_ns(&self) -> Option<(u64, u64)> {
        unpack_device(self.device_start_ns, self.device_len_ns)
    }

    /// Whether it ran and was timed (false for a region cancelled before it ran, and for one
    /// still running at the trace's end: its bar's length is not its duration).
    pub fn ran(&self) -> bool {
        self.flags & (FLAG_UNTIMED | FLAG_UNFINISHED) == 0
    }

    /// Whether its timing ended before it started (host or device times: crafted or
    /// damaged); it is drawn as 0 ns long.
    pub fn ends_before_start(&self) -> bool {
        self.flags & FLAG_BACKWARDS != 0
    }

    /// The end used by window queries: at least one ns after the start.
    pub fn query_end_ns(&self) -> u64 {
        self.end_ns.max(self.start_ns.saturating_add(1))
    }
}

/// A visible time window `[start_ns, end_ns)` and its mapping onto terminal columns.
///
/// Column `c` of `cols` covers `[start + ceil(c·w/cols), start + ceil((c+1)·w/cols))`
/// where `w` is the width, so every ns maps to exactly one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimeWindow {
    /// First ns shown.
    pub start_ns: u64,
    /// One past the last ns shown (always > `start_ns`).
    pub end_ns: u64,
}

impl TimeWindow {
    /// A window; an empty one is widened to 1 ns.
    pub fn new(start_ns: u64, end_ns: u64) -> TimeWindow {
        TimeWindow {
            start_ns,
            end_ns: end_ns.max(start_ns.saturating_add(1)),
        }
    }

    /// Width in ns.
    pub fn width_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// The column of `t_ns`, which may lie outside `0..cols`.
    pub fn col_unclamped(&self, t_ns: u64, cols: u16) -> i64 {
        let d = i128::from(t_ns) - i128::from(self.start_ns);
        let c = (d * i128::from(cols)).div_euclid(i128::from(self.width_ns()));
        c.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The column of `t_ns`, clamped into `0..cols`.
    pub fn col(&self, t_ns: u64, cols: u16) -> u16 {
        self.col_unclamped(t_ns, cols)
            .clamp(0, i64::from(cols.max(1)) - 1) as u16
    }

    /// The first ns of column `col` (`end_ns` for `col == cols`).
    pub fn col_start_ns(&self, col: u16, cols: u16) -> u64 {
        let w = u128::from(self.width_ns());
        let cols = u128::from(cols.max(1));
        self.start_ns + (u128::from(col) * w).div_ceil(cols) as u64
    }

    /// The ns range `[start, end)` covered by column `col` (possibly empty when the window
    /// is narrower in ns than in columns).
    pub fn cell(&self, col: u16, cols: u16) -> (u64, u64) {
        (
            self.col_start_ns(col, cols),
            self.col_start_ns(col.saturating_add(1).min(cols), cols),
        )
    }
}

/// Summary of [`BLOCK_SPANS`] consecutive spans: the lane's level of detail. A zoomed-out
/// frame reads these and only the few spans at cell edges, so a lane mapped from the cache
/// is not paged in whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Block {
    /// Start of the block's first span.
    first_start_ns: u64,
    /// Largest query end of every span up to the end of this block (monotone).
    prefix_end_ns: u64,
    /// Time the block's spans add to the union of all spans before them (the coverage
    /// sweep's contribution of the whole block), in ns.
    new_ns: u64,
    /// Worst status within the block ([`SpanStatus`] as a byte).
    worst: u8,
    _pad: [u8; 7],
}

const _: () = assert!(size_of::<Block>() == 8 + 8 + 8 + 1 + 7);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for Block {}

impl Block {
    /// Start of the block's first span.
    pub fn first_start_ns(&self) -> u64 {
        self.first_start_ns
    }

    /// Largest query end of every span up to the end of this block (monotone over a
    /// lane's blocks).
    pub fn prefix_end_ns(&self) -> u64 {
        self.prefix_end_ns
    }

    /// Time the block's spans add to the union of all spans before them, in ns: a
    /// coverage sweep's contribution of the whole block.
    pub fn new_ns(&self) -> u64 {
        self.new_ns
    }

    /// Worst status within the block.
    pub fn worst(&self) -> SpanStatus {
        SpanStatus::from_byte(self.worst)
    }
}

/// Builds a lane's blocks from its spans handed in start order, statuses final: what
/// [`Lane::build_index`] does over a lane in memory, and the streaming builder
/// ([`super::stream`]) as it writes a lane's file.
#[derive(Default)]
pub(crate) struct BlockBuilder {
    prefix_end_ns: u64,
    first_start_ns: u64,
    new_ns: u64,
    worst: SpanStatus,
    spans: usize,
}

impl BlockBuilder {
    /// The next span; returns the block it completes.
    pub(crate) fn push(&mut self, s: &Span) -> Option<Block> {
        if self.spans == 0 {
            self.first_start_ns = s.start_ns;
            self.worst = SpanStatus::Ok;
            self.new_ns = 0;
        }
        let end = s.query_end_ns();
        if end > self.prefix_end_ns {
            self.new_ns += end - s.start_ns.max(self.prefix_end_ns);
            self.prefix_end_ns = end;
        }
        self.worst = self.worst.max(s.status());
        self.spans += 1;
        (self.spans == BLOCK_SPANS).then(|| self.take())
    }

    /// A builder of the blocks after `block` (the lane's spans up to its end are final).
    pub(crate) fn after(block: Option<&Block>) -> BlockBuilder {
        BlockBuilder {
            prefix_end_ns: block.map_or(0, |b| b.prefix_end_ns),
            ..BlockBuilder::default()
        }
    }

    /// The last, partial block, if any.
    pub(crate) fn finish(mut self) -> Option<Block> {
        (self.spans > 0).then(|| self.take())
    }

    fn take(&mut self) -> Block {
        self.spans = 0;
        Block {
            first_start_ns: self.first_start_ns,
            prefix_end_ns: self.prefix_end_ns,
            new_ns: self.new_ns,
            worst: self.worst as u8,
            _pad: [0; 7],
        }
    }
}

/// One queue of one runtime, with its spans sorted by start time.
#[derive(Clone, Debug)]
pub struct Lane {
    /// The runtime.
    pub runtime: RuntimeId,
    /// The queue.
    pub queue: Queue,
    spans: Column<Span>,
    blocks: Column<Block>,
}

impl Lane {
    /// An empty lane of `queue` of `runtime`, its spans held in memory.
    pub fn new(runtime: RuntimeId, queue: Queue) -> Lane {
        Lane {
            runtime,
            queue,
            spans: Column::default(),
            blocks: Column::default(),
        }
    }

    /// A lane over spans and blocks mapped from the view cache.
    pub(crate) fn mapped(
        runtime: RuntimeId,
        queue: Queue,
        spans: Column<Span>,
        blocks: Column<Block>,
    ) -> Lane {
        Lane {
            runtime,
            queue,
            spans,
            blocks,
        }
    }

    /// The spans and block index, for the view cache.
    pub(crate) fn columns(&self) -> (&Column<Span>, &Column<Block>) {
        (&self.spans, &self.blocks)
    }

    /// Appends a span (a mapped lane is copied into memory first); [`Lane::sort`] and
    /// [`Lane::build_index`] after the last.
    pub fn push(&mut self, span: Span) {
        self.spans.vec_mut().push(span);
    }

    pub(crate) fn spans_mut(&mut self) -> &mut [Span] {
        self.spans.vec_mut()
    }

    /// Sorts the spans by start time and builds the block index.
    ///
    /// The sort is stable and adaptive: spans recorded in time order (the usual case) are
    /// checked in linear time.
    pub fn sort(&mut self) {
        self.spans.vec_mut().sort_by_key(|s| s.start_ns);
    }

    /// Builds the block index (after statuses are final).
    pub fn build_index(&mut self) {
        self.spans.vec_mut().shrink_to_fit();
        let mut builder = BlockBuilder::default();
        let mut blocks: Vec<Block> = self.spans.iter().filter_map(|s| builder.push(s)).collect();
        blocks.extend(builder.finish());
        self.blocks = blocks.into();
    }

    /// Replaces the spans from `from` on with `spans` (sorted by start, statuses final, none
    /// starting before span `from - 1`) and builds the block index again from the block
    /// holding `from`: what changes of a lane whose first `from` spans are final (a followed
    /// trace, [`super::live`]) costs what comes after them.
    pub(crate) fn replace_from(&mut self, from: usize, spans: &[Span]) {
        let all = self.spans.vec_mut();
        debug_assert!(from <= all.len());
        all.truncate(from);
        all.extend_from_slice(spans);
        let first = from / BLOCK_SPANS;
        let blocks = self.blocks.vec_mut();
        blocks.truncate(first);
        let mut builder = BlockBuilder::after(blocks.last());
        for s in &all[first * BLOCK_SPANS..] {
            blocks.extend(builder.push(s));
        }
        blocks.extend(builder.finish());
    }

    /// Room for `more` spans without moving the column (a test's check that a publish does
    /// not copy it).
    #[cfg(test)]
    pub(crate) fn reserve(&mut self, more: usize) {
        self.spans.vec_mut().reserve(more);
    }

    /// The largest query end of its spans (0 when it has none): from the last block once
    /// the index is built.
    pub fn max_end_ns(&self) -> u64 {
        match self.blocks.last() {
            Some(block) if self.blocks.len() == self.spans.len().div_ceil(BLOCK_SPANS) => {
                block.prefix_end_ns
            }
            _ => self.spans.iter().map(Span::query_end_ns).max().unwrap_or(0),
        }
    }

    /// The spans, sorted by start time.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The block index: one [`Block`] per [`BLOCK_SPANS`] spans (the last partial), once
    /// [`Lane::build_index`] has run or the lane is mapped.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Number of spans.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the lane has no spans.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Bytes of heap this lane holds.
    pub fn heap_bytes(&self) -> usize {
        self.spans.heap_bytes() + self.blocks.heap_bytes()
    }

    /// Index of the first span with `start_ns >= t_ns`.
    ///
    /// The blocks' first starts narrow the search to one block, so a mapped lane reads a
    /// page or two of spans, not one per step of a binary search over all of them.
    pub fn first_starting_at(&self, t_ns: u64) -> usize {
        if self.blocks.is_empty() {
            return self.spans.partition_point(|s| s.start_ns < t_ns);
        }
        // Spans before block `block - 1` start before t_ns; from block `block` on, at or
        // after it.
        let block = self.blocks.partition_point(|b| b.first_start_ns < t_ns);
        let lo = block.saturating_sub(1) * BLOCK_SPANS;
        let hi = (block * BLOCK_SPANS).min(self.spans.len());
        lo + self.spans[lo..hi].partition_point(|s| s.start_ns < t_ns)
    }

    /// The start of span `i`, from its block where it is a block's first (no page of a
    /// mapped lane is touched for it).
    pub fn start_of(&self, i: usize) -> u64 {
        match self.blocks.get(i / BLOCK_SPANS) {
            Some(block) if i.is_multiple_of(BLOCK_SPANS) => block.first_start_ns,
            _ => self.spans[i].start_ns,
        }
    }

    /// Largest query end among spans `0..index`.
    pub fn prefix_end_before(&self, index: usize) -> u64 {
        let block = index / BLOCK_SPANS;
        let base = if block > 0 {
            self.blocks[block - 1].prefix_end_ns
        } else {
            0
        };
        self.spans[block * BLOCK_SPANS..index]
            .iter()
            .fold(base, |m, s| m.max(s.query_end_ns()))
    }

    /// Index of the first span that may reach `t_ns` (every earlier span ends at or before
    /// it).
    fn first_reaching(&self, t_ns: u64) -> usize {
        let block = self.blocks.partition_point(|b| b.prefix_end_ns <= t_ns);
        let start = (block * BLOCK_SPANS).min(self.spans.len());
        let mut running = if block > 0 {
            self.blocks[block - 1].prefix_end_ns
        } else {
            0
        };
        let end = (start + BLOCK_SPANS).min(self.spans.len());
        for (i, s) in self.spans[start..end].iter().enumerate() {
            running = running.max(s.query_end_ns());
            if running > t_ns {
                return start + i;
            }
        }
        end
    }

    /// Indices of the spans that may overlap `[t0, t1)`; filter with [`Lane::visible`].
    pub fn candidates(&self, t0: u64, t1: u64) -> Range<usize> {
        let lo = self.first_reaching(t0);
        let hi = self.first_starting_at(t1).max(lo);
        lo..hi
    }

    /// The spans overlapping `[t0, t1)`, with their indices, in start order.
    pub fn visible(&self, t0: u64, t1: u64) -> impl Iterator<Item = (usize, &Span)> {
        let range = self.candidates(t0, t1);
        self.spans[range.clone()]
            .iter()
            .zip(range)
            .filter(move |(s, _)| s.query_end_ns() > t0)
            .map(|(s, i)| (i, s))
    }

    /// Worst status among spans `range` (`None` when it is empty).
    pub fn worst_in(&self, range: Range<usize>) -> Option<SpanStatus> {
        if range.is_empty() {
            return None;
        }
        let mut worst = SpanStatus::Ok;
        let mut i = range.start;
        while i < range.end {
            if i.is_multiple_of(BLOCK_SPANS) && i + BLOCK_SPANS <= range.end {
                worst = worst.max(self.blocks[i / BLOCK_SPANS].worst());
                i += BLOCK_SPANS;
            } else {
                worst = worst.max(self.spans[i].status());
                i += 1;
            }
            if worst == SpanStatus::Failed {
                break;
            }
        }
        Some(worst)
    }

    /// The span covering `t_ns` (the latest-starting one), else the one starting or ending
    /// nearest to it.
    pub fn nearest(&self, t_ns: u64) -> Option<usize> {
        if self.spans.is_empty() {
            return None;
        }
        if let Some((i, _)) = self.visible(t_ns, t_ns.saturating_add(1)).last() {
            return Some(i);
        }
        let next = self.first_starting_at(t_ns);
        let after = self.spans.get(next).map(|s| s.start_ns - t_ns);
        let before = next
            .checked_sub(1)
            .map(|i| t_ns.saturating_sub(self.spans[i].end_ns));
        match (before, after) {
            (Some(b), Some(a)) if a < b => Some(next),
            (Some(_), _) => Some(next - 1),
            (None, _) => Some(next),
        }
    }

    /// The span overlapping `[t0, t1)` the most (ties: the earliest), looking at no more
    /// than `limit` spans.
    pub fn pick(&self, t0: u64, t1: u64, limit: usize) -> Option<usize> {
        self.visible(t0, t1)
            .take(limit)
            .map(|(i, s)| {
                let overlap = s.query_end_ns().min(t1) - s.start_ns.max(t0);
                (i, overlap)
            })
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::timeline::fixtures::lane;

    #[test]
    fn span_is_40_bytes() {
        assert_eq!(size_of::<Span>(), 40);
    }

    #[test]
    fn window_columns_partition_time() {
        let w = TimeWindow::new(1_000, 1_010);
        for t in 1_000..1_010 {
            let c = w.col(t, 3);
            let (a, b) = w.cell(c, 3);
            assert!(a <= t && t < b, "t={t} col={c} cell={a}..{b}");
        }
        assert_eq!(w.col_unclamped(990, 10), -10);
        assert_eq!(w.col(2_000, 10), 9);
    }

    #[test]
    fn visible_finds_spans_overlapping_the_window() {
        let l = lane(&[(0, 10), (5, 100), (20, 30), (40, 50), (60, 60)]);
        let ids: Vec<_> = l.visible(35, 61).map(|(i, _)| i).collect();
        // (5,100) still covers 35; (60,60) is an instant span inside.
        assert_eq!(ids, vec![1, 3, 4]);
        assert_eq!(l.visible(100, 200).count(), 0);
        assert_eq!(l.visible(0, 1).count(), 1);
    }

    #[test]
    fn visible_across_many_blocks_matches_a_scan() {
        let spans: Vec<_> = (0..1000u64)
            .map(|i| (i * 10, i * 10 + if i % 97 == 0 { 2_000 } else { 5 }))
            .collect();
        let l = lane(&spans);
        for (t0, t1) in [(0, 10), (995, 1_010), (4_000, 4_500), (9_990, 20_000)] {
            let fast: Vec<_> = l.visible(t0, t1).map(|(i, _)| i).collect();
            let slow: Vec<_> = spans
                .iter()
                .enumerate()
                .filter(|(_, (a, b))| *a < t1 && (*b).max(a + 1) > t0)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(fast, slow, "window {t0}..{t1}");
        }
    }

    #[test]
    fn nearest_and_pick() {
        let l = lane(&[(0, 10), (20, 30), (100, 110)]);
        assert_eq!(l.nearest(25), Some(1));
        assert_eq!(l.nearest(12), Some(0));
        assert_eq!(l.nearest(90), Some(2));
        assert_eq!(l.pick(5, 25, 10), Some(0));
        assert_eq!(l.pick(40, 50, 10), None);
    }
}
