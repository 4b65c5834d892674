use super::*;
use crate::synthetic::{PipelineSpec, pipeline};

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
