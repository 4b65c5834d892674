//! Operations as sub-spans (`o`) and their times in the details pane, on the failing
//! pipeline with its compute regions' operation timings (`blur`, node 1, then `sobel`,
//! node 2; the failed region's too), and on the same pipeline without them.

use super::*;
use crate::state::synthetic::{PipelineSpec, pipeline, with_op_timings};
use crate::state::{Action, GUTTER, Hit, Model, SpanRef, SpanStatus, ViewState, units};
use hrx_capture::schema::Queue;
use ratatui::style::Color;

/// Six submissions, submission 4's compute fails; with or without operation timings.
pub(super) fn failing(ops: bool) -> Model {
    let spec = PipelineSpec {
        submissions: 6,
        period_ns: 60_000,
        busy_every: Some(3),
        fail_at: Some(4),
    };
    let records: Vec<_> = if ops {
        with_op_timings(pipeline(spec)).collect()
    } else {
        pipeline(spec).collect()
    };
    Model::from_records(&records)
}

fn terminal(model: &Model, state: &ViewState) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(state.width, state.height)).unwrap();
    terminal.draw(|frame| render(model, state, frame)).unwrap();
    terminal
}

/// Selects the `n`-th span of `queue`, the whole trace in view.
fn select(model: &Model, state: &mut ViewState, queue: Queue, n: usize) {
    state.update(model, Action::Fit);
    while state.lane.is_none_or(|l| model.lane(l).queue != queue) {
        state.update(model, Action::NextQueue);
    }
    state.update(model, Action::Home);
    for _ in 0..n {
        state.update(model, Action::SelectNext);
    }
}

/// The screen row of the operations under `queue`'s lane.
fn ops_row(model: &Model, state: &ViewState, queue: Queue) -> u16 {
    let layout = state.layout(model);
    let row = layout
        .lanes
        .iter()
        .find(|l| model.lane(l.lane).queue == queue)
        .unwrap();
    row.ops.expect("an operations row").y
}

/// The compute lane's span of the failed region.
fn failed_compute(model: &Model) -> (SpanRef, usize) {
    let lanes = model.lanes();
    let lane = lanes
        .iter()
        .position(|l| l.queue == Queue::GpuCompute)
        .unwrap();
    let index = lanes[lane]
        .spans()
        .iter()
        .position(|s| s.status() == SpanStatus::Failed)
        .unwrap();
    let r = SpanRef {
        lane: crate::state::LaneRef(lane as u32),
        index: index as u32,
    };
    (r, index)
}

/// `o` adds a row under each queue whose regions have operation timings (the compute
/// queue's here): `blur` and `sobel` under their bars, the failed region's marked.
#[test]
fn operations_under_the_queues_that_have_them() {
    let model = failing(true);
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 1);
    let before = state.layout(&model);
    assert!(before.lanes.iter().all(|l| l.ops.is_none()));
    state.update(&model, Action::ToggleOps);
    assert!(state.show_ops && state.message.is_none());
    let layout = state.layout(&model);
    // Only the compute regions have operation timings.
    for row in &layout.lanes {
        let queue = model.lane(row.lane).queue;
        assert_eq!(row.ops.is_some(), queue == Queue::GpuCompute, "{queue:?}");
    }
    let screen = render_to_string(&model, &state, 120, 40);
    let y = usize::from(ops_row(&model, &state, Queue::GpuCompute));
    let row = screen.lines().nth(y).unwrap();
    assert!(row.starts_with("   ops"), "{row}");
    assert!(row.contains("[blur") && row.contains("[sob"), "{row}");
    assert!(row.contains("✖"), "the failed region's operations: {row}");
    insta::assert_snapshot!(terminal(&model, &state).backend());
    // And `o` hides them again.
    state.update(&model, Action::ToggleOps);
    assert_eq!(state.layout(&model), before);
}

/// Operations take their region's colours: the failed region's are red, the selection's
/// white; a click on the row selects the region above.
#[test]
fn a_failed_regions_operations_are_red_and_a_click_selects_their_region() {
    let model = failing(true);
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleOps);
    let (failed, index) = failed_compute(&model);
    let span = model.lane(failed.lane).spans()[index];
    let ops = model.span_ops(&span);
    assert_eq!(ops.len(), 2);
    let layout = state.layout(&model);
    let clock = model.clock(model.lane(failed.lane).runtime);
    let window = state.window;
    let col = |op: &crate::state::OpSpan| {
        let (start, end) = op.placed_ns(clock);
        window.col(start / 2 + end / 2, layout.timeline_cols)
    };
    let y = ops_row(&model, &state, Queue::GpuCompute);
    let t = terminal(&model, &state);
    assert_eq!(
        t.backend().buffer()[(GUTTER + col(&ops[1]), y)].bg,
        Color::Red
    );
    let hit = layout.hit(GUTTER + col(&ops[1]), y, 0, 0);
    assert_eq!(
        hit,
        Hit::Lane {
            lane: failed.lane,
            col: col(&ops[1])
        }
    );
    state.update(
        &model,
        Action::Click {
            column: GUTTER + col(&ops[1]),
            row: y,
        },
    );
    assert_eq!(state.selection, Some(failed));
    let t = terminal(&model, &state);
    assert_eq!(
        t.backend().buffer()[(GUTTER + col(&ops[0]), y)].bg,
        Color::White
    );
}

/// The details of a compute region list each operation with its device time and its
/// start after the region's, under a line of what was timed.
#[test]
fn the_details_list_each_operations_time() {
    let model = failing(true);
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 2);
    let screen = render_to_string(&model, &state, 120, 40);
    assert!(
        screen.contains("op times    2 of 2 timed on the device · sum"),
        "{screen}"
    );
    let blur = screen.lines().find(|l| l.contains("#1 blur")).unwrap();
    assert!(blur.contains(" device at +"), "{blur}");
    assert!(!screen.contains("no per-operation times"), "{screen}");
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// The failed region's operation times are shown, their sum against the region's device
/// time, and said to be a failed region's, beside the failed operation's mark.
#[test]
fn a_failed_regions_operation_times_are_marked() {
    let model = failing(true);
    let mut state = ViewState::new(&model, 120, 60);
    let (failed, index) = failed_compute(&model);
    state.selection = Some(failed);
    // The details pane the whole width: no line wraps.
    state.list = None;
    let span = model.lane(failed.lane).spans()[index];
    let ops = model.span_ops(&span);
    let sum: u64 = ops.iter().map(|o| o.time().0).sum();
    let (d0, d1) = span.device_ns().unwrap();
    let screen = render_to_string(&model, &state, 120, 60);
    let line = format!(
        "op times    2 of 2 timed on the device · sum {} of the region's {} · failed region, \
         work not completed",
        units::duration(sum),
        units::duration(d1 - d0)
    );
    assert!(screen.contains(&line), "{screen}");
    let sobel = screen.lines().find(|l| l.contains("#2 sobel")).unwrap();
    let time = format!("{} device at +", units::duration(ops[1].time().0));
    assert!(
        sobel.contains("failed here") && sobel.contains(&time),
        "{sobel}"
    );
}

/// Without operation timings, `o` says so (the status line and a row under each GPU
/// queue), and a native graph's details say that no per-operation times were recorded.
#[test]
fn a_trace_without_operation_timings_says_so() {
    let model = failing(false);
    assert!(!model.has_op_timings());
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 2);
    state.update(&model, Action::ToggleOps);
    let screen = render_to_string(&model, &state, 120, 40);
    let status = screen.lines().last().unwrap();
    assert!(
        status.contains("no per-operation times recorded"),
        "{status}"
    );
    for queue in [Queue::GpuUpload, Queue::GpuCompute, Queue::GpuDownload] {
        let y = usize::from(ops_row(&model, &state, queue));
        let row = screen.lines().nth(y).unwrap();
        assert!(
            row.contains("no per-operation times recorded in this trace"),
            "{row}"
        );
    }
    assert!(
        screen.contains("op times    no per-operation times recorded in this trace"),
        "{screen}"
    );
}

/// Zoomed out over a dense trace the row reads no operation: it says to zoom in.
#[test]
fn a_summarised_lane_asks_to_zoom_in_for_operations() {
    let records: Vec<_> = with_op_timings(pipeline(PipelineSpec::ops(40_000))).collect();
    let model = Model::from_records(&records);
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleOps);
    let screen = render_to_string(&model, &state, 120, 40);
    let y = usize::from(ops_row(&model, &state, Queue::GpuCompute));
    let row = screen.lines().nth(y).unwrap();
    assert!(row.contains("zoom in to see operations"), "{row}");
}
