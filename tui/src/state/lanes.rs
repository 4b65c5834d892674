//! Rasterisation of a lane for the screen: per-cell summaries, bars and coverage, from
//! the lane's span store and block index (`hrx-analysis`'s [`Lane`]).
//!
//! - **Per-cell summary** ([`LaneRaster::cell_summary`]): the spans *starting* in a cell
//!   come from two binary searches, their worst status from the blocks
//!   ([`Lane::worst_in`]: whole blocks in O(1), at most two partial blocks scanned), and
//!   whether an earlier span still covers the cell from the blocks' prefix ends
//!   ([`Lane::prefix_end_before`]). A frame over a million spans costs
//!   O(cells × (log n + 2 × 64) + n / 64).
//! - **Raster** ([`LaneRaster::raster`]): with at most [`SPANS_PER_COLUMN`] candidates per
//!   column each span becomes a [`Bar`] (labelled by the view where wide enough) and cells
//!   where several spans start become [`DenseCell`]s; with more, every cell is a summary.
//!   Each summary carries the fraction of the cell's time that spans cover (their union,
//!   in ‰), from one sweep over the spans starting in the window: sorted by start, a span
//!   adds only what lies past the furthest end so far, split over the cells it crosses.
//!   A whole block whose spans start and end inside one cell adds its precomputed
//!   contribution ([`Block::new_ns`](hrx_analysis::timeline::Block::new_ns)) at once, so a zoomed-out frame stays
//!   O(cells × 2 × 64 + n / 64). So a lane busy 9% of the time reads as 9%, not as solid
//!   blocks.
//!
//! An instant span (`start_ns == end_ns`, e.g. a region cancelled before it ran) occupies
//! `[start_ns, start_ns + 1)` for these queries.

use hrx_analysis::timeline::{BLOCK_SPANS, Lane, SpanStatus, TimeWindow};
use std::ops::Range;

/// Above this many candidate spans per column, [`LaneRaster::raster`] summarises every cell.
pub const SPANS_PER_COLUMN: usize = 4;

/// Summary of the spans in one column of a lane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellSummary {
    /// Spans that start in the cell.
    pub count: u32,
    /// Whether any span covers part of the cell (one starting there or earlier).
    pub active: bool,
    /// The worst status of the spans starting in the cell.
    pub worst: Option<SpanStatus>,
    /// The share of the cell's time covered by spans (any, not only those starting in
    /// it), in ‰ (0..=1000).
    pub covered_permille: u16,
}

/// A span drawn as a bar over columns `first_col..=last_col`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// Index of the span in its lane.
    pub index: u32,
    /// First column.
    pub first_col: u16,
    /// Last column (inclusive).
    pub last_col: u16,
    /// The span starts before the window.
    pub clipped_start: bool,
    /// The span ends after the window.
    pub clipped_end: bool,
}

/// A column where several spans start (or, in summary mode, any column with spans).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenseCell {
    /// The column.
    pub col: u16,
    /// What is in it.
    pub summary: CellSummary,
}

/// What to draw for one lane in a window: see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Raster {
    /// Spans drawn individually, in start order.
    pub bars: Vec<Bar>,
    /// Columns drawn as summaries, over the bars.
    pub dense: Vec<DenseCell>,
    /// Whether every column was summarised (too many spans to draw one by one).
    pub summarised: bool,
}

/// What a screen draws of a [`Lane`]: per-cell summaries, bars, coverage (see the module
/// docs). Every query reads the lane's block index and the spans at cell edges.
pub trait LaneRaster {
    /// Summary of the spans in `[t0, t1)`: how many start there, their worst status,
    /// whether any span is active there and how much of it they cover.
    fn cell_summary(&self, t0: u64, t1: u64) -> CellSummary;

    /// What to draw for this lane in `window` over `cols` columns.
    fn raster(&self, window: TimeWindow, cols: u16) -> Raster;

    /// Per column of `window`, the share of its time covered by the union of the spans,
    /// in ‰ (see the module docs). O(spans starting in the window + cols).
    fn coverage(&self, window: TimeWindow, cols: u16) -> Vec<u16>;
}

impl LaneRaster for Lane {
    fn cell_summary(&self, t0: u64, t1: u64) -> CellSummary {
        let lo = self.first_starting_at(t0);
        let hi = self.first_starting_at(t1).max(lo);
        let mut summary = summary_of(self, lo..hi, t0);
        if t1 > t0 {
            summary.covered_permille = self.coverage(TimeWindow::new(t0, t1), 1)[0];
        }
        summary
    }

    fn raster(&self, window: TimeWindow, cols: u16) -> Raster {
        let mut raster = Raster::default();
        if cols == 0 || self.is_empty() {
            return raster;
        }
        let (t0, t1) = (window.start_ns, window.end_ns);
        let candidates = self.candidates(t0, t1);
        if candidates.len() > usize::from(cols) * SPANS_PER_COLUMN {
            raster.summarised = true;
            let covered = self.coverage(window, cols);
            let mut lo = self.first_starting_at(t0);
            for col in 0..cols {
                let (a, b) = window.cell(col, cols);
                let hi = self.first_starting_at(b).max(lo);
                let mut summary = summary_of(self, lo..hi, a);
                summary.covered_permille = covered[usize::from(col)];
                if summary.active {
                    raster.dense.push(DenseCell { col, summary });
                }
                lo = hi;
            }
            return raster;
        }
        let mut starts = vec![CellSummary::default(); usize::from(cols)];
        for (index, span) in self.visible(t0, t1) {
            let first_col = window.col(span.start_ns.max(t0), cols);
            let last_col = window.col(span.query_end_ns().min(t1) - 1, cols);
            raster.bars.push(Bar {
                index: index as u32,
                first_col,
                last_col,
                clipped_start: span.start_ns < t0,
                clipped_end: span.query_end_ns() > t1,
            });
            if span.start_ns >= t0 {
                let cell = &mut starts[usize::from(first_col)];
                cell.count += 1;
                cell.active = true;
                cell.worst = cell.worst.max(Some(span.status()));
            }
        }
        let covered = self.coverage(window, cols);
        raster.dense = starts
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.count >= 2)
            .map(|(col, mut summary)| {
                summary.covered_permille = covered[col];
                DenseCell {
                    col: col as u16,
                    summary,
                }
            })
            .collect();
        raster
    }

    fn coverage(&self, window: TimeWindow, cols: u16) -> Vec<u16> {
        let n = usize::from(cols);
        if cols == 0 || self.is_empty() {
            return vec![0; n];
        }
        let (t0, t1) = (window.start_ns, window.end_ns);
        // Column boundaries once (each a 128-bit division), then a cursor that only moves
        // forward: the sweep's times never decrease.
        let bounds: Vec<u64> = (0..=cols).map(|c| window.col_start_ns(c, cols)).collect();
        let mut covered = vec![0u64; n];
        let mut col = 0;
        // Adds [from, to) (from >= the previous call's from) to the cells it crosses.
        let add = |covered: &mut [u64], col: &mut usize, from: u64, to: u64| {
            while *col + 1 < n && bounds[*col + 1] <= from {
                *col += 1;
            }
            let mut c = *col;
            while c < n && bounds[c] < to {
                covered[c] += to.min(bounds[c + 1]).saturating_sub(from.max(bounds[c]));
                c += 1;
            }
        };
        let lo = self.first_starting_at(t0);
        // Spans that started earlier cover [t0, the furthest of their ends).
        let mut until = self.prefix_end_before(lo).max(t0);
        add(&mut covered, &mut col, t0, until.min(t1));
        let mut i = lo;
        while i < self.len() && self.start_of(i) < t1 {
            // A whole block inside one cell: its contribution at once. Its spans start at
            // or after t0, so `until` (the furthest end before it, or t0) clips them as
            // the block's own prefix end does.
            if i.is_multiple_of(BLOCK_SPANS) && i + BLOCK_SPANS <= self.len() {
                let block = &self.blocks()[i / BLOCK_SPANS];
                let start = block.first_start_ns();
                while col + 1 < n && bounds[col + 1] <= start {
                    col += 1;
                }
                if block.prefix_end_ns() <= bounds[col + 1] {
                    if block.prefix_end_ns() > until {
                        covered[col] += block.new_ns();
                        until = block.prefix_end_ns();
                    }
                    i += BLOCK_SPANS;
                    continue;
                }
            }
            let span = &self.spans()[i];
            let end = span.query_end_ns();
            if end > until {
                add(
                    &mut covered,
                    &mut col,
                    span.start_ns.max(until),
                    end.min(t1),
                );
                until = end;
            }
            i += 1;
        }
        (0..n)
            .map(|c| match bounds[c + 1] - bounds[c] {
                0 => 0,
                w => (u128::from(covered[c]) * 1000 / u128::from(w)).min(1000) as u16,
            })
            .collect()
    }
}

/// The summary of the spans `starts` (those starting in a cell from `t0` on), its
/// coverage left to the caller.
fn summary_of(lane: &Lane, starts: Range<usize>, t0: u64) -> CellSummary {
    let count = starts.len() as u32;
    CellSummary {
        count,
        active: count > 0 || lane.prefix_end_before(starts.start) > t0,
        worst: lane.worst_in(starts),
        covered_permille: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_analysis::timeline::{LaneRef, Model, Overview, OverviewLane};
    use hrx_capture::schema::{Queue, RuntimeId};
    use hrx_capture::{Recorder, RecorderOptions};
    use std::path::Path;
    use std::time::Duration;

    use hrx_analysis::timeline::fixtures::{lane, span};

    #[test]
    fn cell_summary_counts_starts_and_worst_status() {
        let mut l = Lane::new(RuntimeId(0), Queue::Host);
        for i in 0..200u64 {
            let status = match i {
                150 => SpanStatus::Failed,
                10 => SpanStatus::Cancelled,
                _ => SpanStatus::Ok,
            };
            l.push(span(i * 10, i * 10 + 5, status));
        }
        l.sort();
        l.build_index();
        let all = l.cell_summary(0, 2_000);
        assert_eq!(all.count, 200);
        assert_eq!(all.worst, Some(SpanStatus::Failed));
        let early = l.cell_summary(0, 1_000);
        assert_eq!(
            (early.count, early.worst),
            (100, Some(SpanStatus::Cancelled))
        );
        let gap = l.cell_summary(6, 9);
        assert_eq!(gap, CellSummary::default());
        let inside = l.cell_summary(2, 4);
        assert_eq!((inside.count, inside.active), (0, true));
    }

    #[test]
    fn raster_switches_to_summaries_when_dense() {
        let spans: Vec<_> = (0..10_000u64).map(|i| (i * 10, i * 10 + 8)).collect();
        let l = lane(&spans);
        let sparse = l.raster(TimeWindow::new(0, 100), 10);
        assert!(!sparse.summarised);
        assert_eq!(sparse.bars.len(), 10);
        assert_eq!(sparse.bars[0].first_col, 0);
        let dense = l.raster(TimeWindow::new(0, 100_000), 10);
        assert!(dense.summarised);
        assert_eq!(dense.dense.len(), 10);
        assert_eq!(
            dense.dense.iter().map(|d| d.summary.count).sum::<u32>(),
            10_000
        );
    }

    #[test]
    fn raster_marks_cells_where_several_spans_start() {
        let l = lane(&[(0, 1), (2, 3), (50, 100)]);
        let r = l.raster(TimeWindow::new(0, 100), 10);
        assert_eq!(r.bars.len(), 3);
        assert_eq!(r.dense.len(), 1);
        assert_eq!((r.dense[0].col, r.dense[0].summary.count), (0, 2));
        assert_eq!((r.bars[2].first_col, r.bars[2].last_col), (5, 9));
    }

    #[test]
    fn coverage_is_the_share_of_each_cell_spans_cover() {
        // Busy 1 ns in 10 (10%), then one span over two whole cells, overlapping spans
        // counted once.
        let mut spans: Vec<_> = (0..10u64).map(|i| (i * 10, i * 10 + 1)).collect();
        spans.extend([(200, 400), (250, 300), (450, 475), (460, 500)]);
        let l = lane(&spans);
        let c = l.coverage(TimeWindow::new(0, 500), 5);
        assert_eq!(c, vec![100, 0, 1000, 1000, 500]);
        // The summarised raster carries it: a lane busy 10% does not read as full.
        let r = l.raster(TimeWindow::new(0, 100), 1);
        assert!(r.summarised);
        assert_eq!(r.dense[0].summary.covered_permille, 100);
        // A span that started before the window covers the window's start.
        assert_eq!(l.coverage(TimeWindow::new(300, 400), 2), vec![1000, 1000]);
    }

    #[test]
    fn coverage_by_whole_blocks_equals_the_span_by_span_union() {
        // Overlapping spans of mixed lengths; windows from one cell per block to many.
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut rand = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut t = 0;
        let spans: Vec<(u64, u64)> = (0..20_000)
            .map(|_| {
                t += rand(100);
                let long = rand(50) == 0;
                (t, t + 1 + rand(if long { 20_000 } else { 150 }))
            })
            .collect();
        let l = lane(&spans);
        let union = |a: u64, b: u64| {
            let (mut covered, mut until) = (0, a);
            for &(s, e) in &spans {
                let (s, e) = (s.max(until), e.min(b));
                if e > s {
                    covered += e - s;
                    until = e;
                }
            }
            covered
        };
        for (t0, t1, cols) in [
            (0, t, 7),
            (0, t + 5_000, 100),
            (12_345, 700_000, 33),
            (5, 90, 9),
        ] {
            let window = TimeWindow::new(t0, t1);
            let expected: Vec<u16> = (0..cols)
                .map(|c| {
                    let (a, b) = window.cell(c, cols);
                    if b == a {
                        0
                    } else {
                        (union(a, b) * 1000 / (b - a)).min(1000) as u16
                    }
                })
                .collect();
            assert_eq!(l.coverage(window, cols), expected, "{t0}..{t1} in {cols}");
        }
    }

    /// Writes the synthetic pipeline of about `ops` regions through the recorder, with blocks
    /// of `block_bytes`.
    fn write(path: &Path, ops: u64, block_bytes: usize) {
        let options = RecorderOptions {
            block_bytes,
            full_buffer_wait: Duration::from_secs(5),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::create(path, options).unwrap();
        for (i, record) in pipeline(PipelineSpec::ops(ops)).enumerate() {
            // A block at least every 500 records (the writer otherwise makes blocks of
            // whatever its rings hold when it drains them).
            if i % 500 == 499 {
                recorder.flush().unwrap();
            }
            recorder.record(&record);
        }
        recorder.close().unwrap();
        assert_eq!(recorder.dropped_records(), 0);
    }

    fn model_lane(model: &Model, lane: &OverviewLane) -> LaneRef {
        let i = model
            .lanes()
            .iter()
            .position(|l| l.runtime == lane.runtime && l.queue == lane.queue)
            .expect("the index has the summary's lane");
        LaneRef(i as u32)
    }

    /// Per column, the busy time of the entries that cross one of its edges (the only place
    /// where the summary may differ from the index; see the module docs).
    fn straddling(lane: &OverviewLane, window: TimeWindow, cols: u16) -> Vec<u64> {
        (0..cols)
            .map(|c| {
                let (a, b) = window.cell(c, cols);
                lane.entries()
                    .iter()
                    .filter(|&&(s, e, _)| s < b && e.max(s + 1) > a && (s < a || e > b))
                    .map(|&(_, _, busy)| busy)
                    .sum()
            })
            .collect()
    }

    #[test]
    fn the_summary_frame_agrees_with_the_lanes_coverage_per_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipeline.hrxt");
        write(&path, 40_000, 4 << 10);
        let overview = Overview::read(&path).unwrap();
        let model = crate::load(&path).unwrap();
        assert!(overview.blocks > 50, "{} summaries", overview.blocks);
        assert_eq!(overview.unplaced, 0);
        assert_eq!(overview.regions(), model.span_count() as u64);
        assert_eq!(overview.lanes().len(), 4, "upload, compute, download, host");
        let window = overview.time_range().unwrap();
        let mut exact_columns = 0;
        for cols in [7u16, 120, 1000] {
            for lane in overview.lanes() {
                let index = model.lane(model_lane(&model, lane));
                assert_eq!(lane.regions, index.len() as u64);
                let full = index.coverage(window, cols);
                let summary = lane.coverage(window, cols);
                let edge = straddling(lane, window, cols);
                for c in 0..usize::from(cols) {
                    let (a, b) = window.cell(c as u16, cols);
                    let width = (b - a).max(1);
                    let bound = (u128::from(edge[c]) * 1000 / u128::from(width)) as u16 + 1;
                    let diff = full[c].abs_diff(summary[c]);
                    assert!(
                        diff <= bound,
                        "{:?} column {c}/{cols}: index {}‰, summary {}‰, bound {bound}‰",
                        lane.queue,
                        full[c],
                        summary[c]
                    );
                    if edge[c] == 0 {
                        exact_columns += 1;
                    }
                }
            }
        }
        let _ = exact_columns;
        // A column that holds whole summaries only (here: one column from the start of one
        // summary to the end of another) shows what the index shows, to rounding.
        for lane in overview.lanes() {
            let index = model.lane(model_lane(&model, lane));
            let entries = lane.entries();
            for (i, j) in [(0, entries.len() - 1), (3, 9), (10, 10), (20, 41)] {
                let (start, end) = (entries[i].0, entries[j].1);
                if entries
                    .iter()
                    .any(|e| e.0 < end && e.1 > start && (e.0 < start || e.1 > end))
                {
                    continue; // another summary reaches into it: not whole
                }
                let w = TimeWindow::new(start, end);
                let (full, summary) = (index.coverage(w, 1)[0], lane.coverage(w, 1)[0]);
                assert!(
                    full.abs_diff(summary) <= 1,
                    "{:?} {i}..={j}: {full} {summary}",
                    lane.queue
                );
                exact_columns += 1;
            }
        }
        assert!(exact_columns >= 4 * 3, "{exact_columns}");
    }
}
