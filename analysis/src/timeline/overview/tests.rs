use super::*;
use crate::synthetic::{PipelineSpec, pipeline};
use crate::timeline::{LaneId, Model};
use hrx_capture::{Recorder, RecorderOptions};
use std::time::Duration;

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

fn model_lane(model: &Model, lane: &OverviewLane) -> LaneId {
    let i = model
        .lanes()
        .iter()
        .position(|l| l.runtime == lane.runtime && l.queue == lane.queue)
        .expect("the index has the summary's lane");
    LaneId(i as u32)
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
fn the_summary_frame_agrees_with_the_index_per_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipeline.hrxt");
    write(&path, 40_000, 4 << 10);
    let overview = Overview::read(&path).unwrap();
    let model = Model::from_reader(hrx_capture::TraceReader::open(&path).unwrap()).unwrap();
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

#[test]
fn the_overview_grows_with_blocks_not_regions() {
    use hrx_capture::summary::{BlockSummary, LaneSummary, Summaries};
    // The same 50 blocks of 4 lanes holding a thousand, then a million regions each.
    let summaries = |per_block: u32| Summaries {
        blocks: (0..50u64)
            .map(|b| BlockSummary {
                lanes: crate::QUEUES[..4]
                    .iter()
                    .map(|&queue| LaneSummary {
                        runtime: RuntimeId(1),
                        queue,
                        regions: per_block,
                        first_start_ns: b * 1_000_000,
                        last_end_ns: b * 1_000_000 + 900_000,
                        busy_ns: 450_000,
                    })
                    .collect(),
                unplaced: 0,
            })
            .collect(),
        ..Summaries::default()
    };
    let (small, large) = (
        Overview::from_summaries(&summaries(1_000)),
        Overview::from_summaries(&summaries(1_000_000)),
    );
    assert_eq!(large.regions(), 200_000_000);
    assert_eq!(small.entry_count(), 200);
    assert_eq!(large.entry_count(), small.entry_count());
    assert_eq!(large.lanes(), {
        let mut lanes = small.lanes().to_vec();
        lanes.iter_mut().for_each(|l| l.regions = 50_000_000);
        lanes
    });
    // Half busy in every column that holds whole summaries.
    let lane = &large.lanes()[1];
    let w = TimeWindow::new(0, 50_000_000);
    assert!(lane.coverage(w, 50).iter().all(|&c| c == 450));
}

#[test]
fn a_trace_without_summaries_has_an_empty_overview() {
    // Written without the recorder (as `trim` writes): records only, no summary blocks.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trimmed.hrxt");
    let mut writer = hrx_capture::TraceWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for record in pipeline(PipelineSpec::ops(400)) {
        writer.write(&record).unwrap();
    }
    writer.finish().unwrap();
    let overview = Overview::read(&path).unwrap();
    assert!(overview.is_empty() && overview.time_range().is_none());
    assert!(overview.records > 0 && overview.stopped.is_none());
}

#[test]
fn zoom_and_pan_on_the_summary_stay_inside_the_trace() {
    let range = TimeWindow::new(1_000, 101_000);
    let mut w = OverviewWindow {
        window: range,
        range,
    };
    w.apply(OverviewMove::ZoomOut);
    assert_eq!(w.window, range, "never wider than the trace");
    w.apply(OverviewMove::ZoomIn);
    assert_eq!(
        w.window,
        TimeWindow::new(26_000, 76_000),
        "half, around the centre"
    );
    w.apply(OverviewMove::PanRight);
    assert_eq!(w.window, TimeWindow::new(38_500, 88_500));
    for _ in 0..10 {
        w.apply(OverviewMove::PanRight);
    }
    assert_eq!(
        w.window,
        TimeWindow::new(51_000, 101_000),
        "stops at the end"
    );
    for _ in 0..40 {
        w.apply(OverviewMove::ZoomIn);
    }
    assert_eq!(w.window.width_ns(), crate::timeline::MIN_WINDOW_NS);
    assert!(w.window.start_ns >= range.start_ns && w.window.end_ns <= range.end_ns);
    w.apply(OverviewMove::Fit);
    assert_eq!(w.window, range);
    w.apply(OverviewMove::PanLeft);
    assert_eq!(w.window, range);
}
