//! Snapshot tests of the screen (ratatui `TestBackend`, 120×40 unless noted) on generated
//! traces, and checks of the styles that the text snapshots cannot show.

use super::*;
use crate::state::synthetic::{PipelineSpec, pipeline};
use crate::state::{Action, EventKind, GUTTER, ListKind, Model, SpanStatus, ViewState};
use hrx_capture::schema::Queue;
use ratatui::style::Color;
use ratatui::text::Line;

/// A six-submission pipeline: Busy before submissions 3, submission 4's compute fails.
fn failing() -> Model {
    Model::from_records(
        &pipeline(PipelineSpec {
            submissions: 6,
            period_ns: 60_000,
            busy_every: Some(3),
            fail_at: Some(4),
        })
        .collect::<Vec<_>>(),
    )
}

fn terminal(model: &Model, state: &ViewState) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(state.width, state.height)).unwrap();
    terminal.draw(|frame| render(model, state, frame)).unwrap();
    terminal
}

fn act(model: &Model, state: &mut ViewState, actions: &[Action]) {
    for &a in actions {
        state.update(model, a);
    }
}

/// Selects the `n`-th span of `queue`.
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

#[test]
fn timeline_fit() {
    let model = failing();
    let state = ViewState::new(&model, 120, 40);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// Host threads (format 1.14): below the queues, the main thread's submits and waits and
/// its markers, the decoder thread's `decode` ranges: the GPU idles while it decodes.
#[test]
fn timeline_with_host_threads() {
    let model = Model::from_records(&host_threads_records());
    assert_eq!(model.threads().len(), 2);
    let state = ViewState::new(&model, 120, 40);
    insta::assert_snapshot!(terminal(&model, &state).backend());
    let mut ascii = ViewState::new(&model, 120, 40);
    ascii.ascii = true;
    let screen = format!("{:?}", terminal(&model, &ascii).backend());
    assert!(
        screen.contains(" main") && screen.contains(" decoder"),
        "{screen}"
    );
}

/// Four submissions of the pipeline, 0.6 ms apart, with the main thread's spans and the
/// decoder thread's `decode` ranges.
fn host_threads_records() -> Vec<hrx_capture::schema::Record> {
    let mut records: Vec<_> = pipeline(PipelineSpec {
        submissions: 4,
        period_ns: 600_000,
        busy_every: None,
        fail_at: None,
    })
    .collect();
    records.extend(crate::state::synthetic::annotations(4, 10_000, 600_000));
    records
}

/// A range closed out of order (it crosses the `decode` it began in) is drawn on a row of
/// its own under its thread's, not over the end of the range it crosses.
#[test]
fn a_crossing_range_has_a_row_of_its_own() {
    use hrx_capture::schema::{AnnotationId, AnnotationName, AnnotationRange, Record};
    let mut records = host_threads_records();
    records.push(Record::AnnotationName(AnnotationName {
        name: AnnotationId(9),
        text: "upload".into(),
    }));
    // Opened during the first `decode` (10_000 - 600_000 .. 10_000 on the decoder
    // thread), closed after it.
    records.push(Record::AnnotationRange(AnnotationRange {
        thread: 1,
        name: AnnotationId(9),
        start_ns: 5_000,
        end_ns: 300_000,
    }));
    let model = Model::from_records(&records);
    let names: Vec<&str> = model.threads().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["main", "decoder", "decoder (crossing ranges)"]);
    let mut state = ViewState::new(&model, 120, 40);
    state.ascii = true;
    let screen = format!("{:?}", terminal(&model, &state).backend());
    let line = screen
        .lines()
        .find(|l| l.contains(" decoder (cr"))
        .unwrap_or_else(|| panic!("no row of crossing ranges: {screen}"));
    assert!(line.contains("upl"), "{line}");
}

#[test]
fn timeline_zoomed_in() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 1);
    act(&model, &mut state, &[Action::ZoomIn, Action::ZoomIn]);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn timeline_deep_zoom_on_one_span() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuUpload, 2);
    act(
        &model,
        &mut state,
        &[Action::ZoomToSelection, Action::ToggleHazards],
    );
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn timeline_dense_is_summarised() {
    let model = Model::from_records(&pipeline(PipelineSpec::ops(40_000)).collect::<Vec<_>>());
    let state = ViewState::new(&model, 120, 40);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn details_pane() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 2);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn hazards_of_the_selection() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 2);
    state.update(&model, Action::ToggleHazards);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// A region running at the end whose `Submit` the trace lacks (a cut trace) is on no lane:
/// the Trace pane names it in `stats`' words and says why it is not drawn (it said nothing,
/// `stats` alone named it).
#[test]
fn a_running_region_no_lane_can_draw_is_named() {
    use hrx_analysis::timeline::fixtures::running_past_the_cut;
    let model = running_past_the_cut().model();
    let state = ViewState::new(&model, 120, 40);
    let trace = terminal(&model, &state).backend().to_string();
    assert!(
        trace.contains("running     submission 3, region 1: started at"),
        "{trace}"
    );
    assert!(trace.contains("not drawn"), "{trace}");
}

/// A submission that named more explicit producers than the model keeps: the Trace pane
/// counts them, its details and hazards list say how many are not kept, and a producer's
/// that its consumers may be more than listed.
#[test]
fn producers_not_kept_are_said() {
    use crate::state::EXPLICIT_PRODUCERS_KEPT;
    use hrx_analysis::timeline::fixtures::fan_in;
    let n = EXPLICIT_PRODUCERS_KEPT + 40;
    let model = fan_in(n as u64).model();
    let mut state = ViewState::new(&model, 120, 40);
    let kept = EXPLICIT_PRODUCERS_KEPT;
    // The Trace pane counts them, for the whole trace.
    let trace = terminal(&model, &state).backend().to_string();
    assert!(
        trace.contains("not kept    40 submit_after producers named past a"),
        "{trace}"
    );
    assert!(
        trace.contains(&format!("submission's {kept} latest: not linked")),
        "{trace}"
    );
    // The last compute span: the submission after all the others.
    select(&model, &mut state, Queue::GpuCompute, n);
    let screen = terminal(&model, &state).backend().to_string();
    // Its in-graph producer and those kept; it released the download after it.
    let hazards = format!("waited on {} (+40 not kept), released 1", kept + 1);
    assert!(screen.contains(&hazards), "{screen}");
    assert!(
        screen.contains(&format!("submissions {}, {}", n - 1, n - 2)),
        "{screen}"
    );
    let note = format!("+40 more not kept (the view keeps {kept})");
    assert!(screen.contains(&note), "{screen}");
    // Beside them, the hazards list (open: the trace has no events).
    assert_eq!(state.list, Some(ListKind::Hazards));
    let title = format!(
        "Hazards: waited on {} (+40 not kept) · released 1",
        kept + 1
    );
    assert!(screen.contains(&title), "{screen}");
    let note = format!("+40 submit_after producers not kept (view keeps {kept})");
    assert!(screen.contains(&note), "{screen}");
    assert_eq!(state.list_len(&model), kept + 2);

    // The download of the last producer released the consumer, and maybe more.
    select(&model, &mut state, Queue::GpuDownload, n - 1);
    let screen = terminal(&model, &state).backend().to_string();
    assert!(
        screen.contains("released 1 (maybe more, not kept)"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "maybe more: a submit naming over {kept} links its latest"
        )),
        "{screen}"
    );
}

#[test]
fn events_list_at_the_failure() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleEvents);
    while model.events()[state.event_cursor.unwrap()].kind != EventKind::RegionFailed {
        state.update(&model, Action::NextEvent);
    }
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn statistics() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleStats);
    // The host callback is its own table, not a kernel (it was listed among them).
    let stats = model.stats();
    assert!(stats.kernels.iter().all(|k| k.name != "host"));
    let hosts: Vec<(&str, u64)> = stats
        .host_callbacks
        .iter()
        .map(|k| (k.name.as_str(), k.count))
        .collect();
    assert_eq!(hosts, [("host", 4)]);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// In an 80×24 terminal the duration tables keep every column of `stats` (count, total,
/// mean, p50, p99, max, failed) and the overlay scrolls.
#[test]
fn statistics_in_a_small_terminal_scroll() {
    let model = failing();
    let mut state = ViewState::new(&model, 80, 24);
    state.update(&model, Action::ToggleStats);
    let lane = state.lane;
    let top = terminal(&model, &state).backend().to_string();
    assert!(top.contains("↑/↓ scroll"), "{top}");
    assert!(
        top.contains("p50      p99      max     failed") && !top.contains(" min"),
        "{top}"
    );
    // ↓ scrolls the overlay until its last row is at the bottom, and leaves the queue
    // alone; ↑ then scrolls back at once.
    let pane = state.layout(&model).stats.unwrap();
    let visible = usize::from(pane.height - 2);
    let end = crate::state::stats_rows(&model, usize::from(pane.width - 2)) - visible;
    assert!(end > 0, "the overlay is taller than the pane");
    for _ in 0..100 {
        state.update(&model, Action::NextQueue);
    }
    assert_eq!(state.lane, lane);
    assert_eq!(usize::from(state.stats_scroll), end);
    insta::assert_snapshot!(terminal(&model, &state).backend());
    state.update(&model, Action::PrevQueue);
    assert_eq!(usize::from(state.stats_scroll), end - 1);
    state.update(&model, Action::ToggleStats);
    assert_eq!(state.stats_scroll, 0);
}

#[test]
fn help_overlay() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleHelp);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn search_in_the_status_line() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::StartSearch);
    for c in "blur".chars() {
        state.update(&model, Action::Search(c));
    }
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn small_terminal_with_ascii_symbols() {
    let model = failing();
    let mut state = ViewState::new(&model, 100, 24);
    state.ascii = true;
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// With `ascii`, every screen is ASCII only: the main screen with a failed span's details,
/// the hazards and events lists, help, statistics (their bars) and a zoomed-out dense lane
/// (only the timeline's symbols were: borders, `…`, `µ`, `×`, `·` and the bars stayed;
/// fresh-user pass). Each drawn in Unicode is not, so each screen has glyphs to replace.
#[test]
fn ascii_draws_ascii_only_on_every_screen() {
    let screens = |model: &Model, state: &mut ViewState| {
        let mut screens = Vec::new();
        let mut shot = |state: &ViewState, what: &str| {
            let screen = render_to_string(model, state, state.width, state.height);
            screens.push((what.to_owned(), screen));
        };
        shot(state, "main");
        select(model, state, Queue::GpuCompute, 2);
        act(model, state, &[Action::ToggleOps]);
        shot(state, "details");
        act(model, state, &[Action::ToggleHazards]);
        shot(state, "hazards");
        act(model, state, &[Action::ToggleEvents]);
        shot(state, "events");
        act(model, state, &[Action::ToggleHelp]);
        shot(state, "help");
        act(model, state, &[Action::ToggleHelp, Action::ToggleStats]);
        shot(state, "statistics");
        act(
            model,
            state,
            &[Action::ToggleStats, Action::Fit, Action::ZoomOut],
        );
        shot(state, "zoomed out");
        screens
    };
    let dense = Model::from_records(&pipeline(PipelineSpec::ops(40_000)).collect::<Vec<_>>());
    for model in [failing(), dense] {
        let mut state = ViewState::new(&model, 120, 40);
        let unicode = screens(&model, &mut state);
        let mut state = ViewState::new(&model, 120, 40);
        state.ascii = true;
        for ((what, unicode), (_, ascii)) in unicode.iter().zip(screens(&model, &mut state)) {
            assert!(!unicode.is_ascii(), "{what}: nothing to replace: {unicode}");
            assert!(ascii.is_ascii(), "{what}: {ascii}");
        }
    }
}

/// ASCII writes a time range's arrow as `->` (asciify's `>` read as "greater than"), a
/// degree sign as `o`, and a letter with combining marks as its letter (both were `?`): a
/// break-it pass.
#[test]
fn ascii_keeps_ranges_degrees_and_accented_letters_readable() {
    let model = failing();
    let mut state = ViewState::new(&model, 140, 40);
    state.ascii = true;
    // The trace pane's range, then a selected span's host and device times.
    let trace = render_to_string(&model, &state, 140, 40);
    select(&model, &mut state, Queue::GpuCompute, 2);
    let span = render_to_string(&model, &state, 140, 40);
    for (screen, name) in [(&trace, "|time "), (&span, "|host "), (&span, "|device ")] {
        let line = (screen.lines())
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no {name:?} line: {screen}"));
        assert!(line.contains(" ms -> "), "{line}");
        assert!(!line.contains(" ms > "), "{line}");
    }
    let mut buf = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, 12, 1));
    buf.set_string(
        0,
        0,
        "61 °C e\u{301}te\u{301}",
        ratatui::style::Style::default(),
    );
    theme::asciify(&mut buf);
    let text: String = buf.content.iter().map(|c| c.symbol()).collect();
    assert_eq!(text, "61 oC ete   ");
}

#[test]
fn empty_trace() {
    let model = Model::default();
    let state = ViewState::new(&model, 80, 20);
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

/// The background colour of the first timeline cell of the span `n` of `queue`.
fn span_bg(model: &Model, state: &ViewState, queue: Queue, n: usize) -> Color {
    let t = terminal(model, state);
    let layout = state.layout(model);
    let row = layout
        .lanes
        .iter()
        .find(|l| model.lane(l.lane).queue == queue)
        .unwrap();
    let span = model.lane(row.lane).spans()[n];
    let col = state.window.col(span.start_ns, layout.timeline_cols);
    t.backend().buffer()[(GUTTER + col, row.area.y)].bg
}

#[test]
fn failed_red_cancelled_grey_producers_yellow() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let compute = model
        .lanes()
        .iter()
        .find(|l| l.queue == Queue::GpuCompute)
        .unwrap();
    let failed = compute
        .spans()
        .iter()
        .position(|s| s.status() == SpanStatus::Failed)
        .unwrap();
    assert_eq!(
        span_bg(&model, &state, Queue::GpuCompute, failed),
        Color::Red
    );
    let download = model
        .lanes()
        .iter()
        .find(|l| l.queue == Queue::GpuDownload)
        .unwrap();
    let cancelled = download.len() - 1;
    assert_eq!(download.spans()[cancelled].status(), SpanStatus::Cancelled);
    assert_eq!(
        span_bg(&model, &state, Queue::GpuDownload, cancelled),
        Color::DarkGray
    );
    // Submissions cycle through the palette.
    assert_ne!(
        span_bg(&model, &state, Queue::GpuUpload, 0),
        span_bg(&model, &state, Queue::GpuUpload, 1)
    );
    // With the hazards list open, the producer of the selection is yellow, its
    // consumers cyan and the selection white.
    select(&model, &mut state, Queue::GpuCompute, 2);
    state.list = Some(ListKind::Hazards);
    assert_eq!(span_bg(&model, &state, Queue::GpuCompute, 2), Color::White);
    assert_eq!(span_bg(&model, &state, Queue::GpuUpload, 2), Color::Yellow);
    assert_eq!(span_bg(&model, &state, Queue::GpuDownload, 2), Color::Cyan);
}

#[test]
fn render_to_string_matches_the_backend() {
    let model = failing();
    let state = ViewState::new(&model, 120, 40);
    let text = render_to_string(&model, &state, 120, 40);
    assert_eq!(text.lines().count(), 40);
    assert!(text.lines().nth(4).unwrap().contains("GPU Upload"));
}

#[test]
fn tiny_terminals_do_not_panic() {
    let model = failing();
    for (w, h) in [(1, 1), (5, 3), (14, 6), (20, 8), (40, 12), (300, 100)] {
        let mut state = ViewState::new(&model, w, h);
        for action in [
            Action::Tab,
            Action::ToggleHazards,
            Action::ToggleHelp,
            Action::ToggleStats,
            Action::Click {
                column: w / 2,
                row: h / 2,
            },
            Action::ZoomIn,
        ] {
            state.update(&model, action);
            render_to_string(&model, &state, w, h);
        }
    }
}

/// Records that contradict each other or sit at the ends of the clock: the model and the
/// views must cope (a damaged or hostile trace must not crash the viewer).
#[test]
fn contradictory_records_do_not_panic() {
    use hrx_capture::schema::*;
    let rt = RuntimeId(0);
    let edge = |producer, consumer| Edge {
        producer,
        consumer,
        kind: HazardKind::WriteAfterWrite,
        buffer: BufferId(u64::MAX),
        start: u64::MAX - 1,
        end: 0,
    };
    let records = vec![
        Record::Prepared(Prepared {
            runtime: rt,
            graph: GraphId(0),
            prepared: PreparedId(0),
            slots: 0,
            parallel: true,
            regions: vec![Region {
                queue: Queue::Npu,
                engine: Engine::Npu,
                kind: RegionKind::NpuRun,
                nodes: vec![NodeIndex(u32::MAX)],
                internal_edges: vec![edge(0, 0)],
                dependencies: vec![edge(7, 0), edge(0, 0)],
                uses: Vec::new(),
                copy_bytes: u64::MAX,
            }],
            time_ns: 0,
        }),
        Record::Submit(Submit {
            runtime: rt,
            prepared: PreparedId(0),
            submission: SubmissionIndex(0),
            slot: 0,
            producers: vec![SubmissionIndex(0), SubmissionIndex(99)],
            time_ns: u64::MAX,
        }),
        Record::RegionTiming(RegionTiming {
            runtime: rt,
            submission: SubmissionIndex(0),
            region: RegionIndex(0),
            start_ns: u64::MAX - 5,
            end_ns: 3,
            device: Some(DeviceSpan {
                start_ns: u64::MAX,
                end_ns: 0,
            }),
        }),
        Record::RegionTiming(RegionTiming {
            runtime: rt,
            submission: SubmissionIndex(0),
            region: RegionIndex(u32::MAX),
            start_ns: 0,
            end_ns: 1,
            device: None,
        }),
        Record::CrossWait(CrossWait {
            runtime: rt,
            submission: SubmissionIndex(0),
            region: RegionIndex(0),
            on_submission: SubmissionIndex(0),
            on_region: RegionIndex(0),
            kind: HazardKind::ReadAfterWrite,
            buffer: BufferId(1),
            start: 5,
            end: 1,
        }),
        Record::RegionDone(RegionDone {
            runtime: rt,
            submission: SubmissionIndex(0),
            region: RegionIndex(0),
            status: Status::Failed {
                error: String::new(),
            },
            time_ns: u64::MAX,
        }),
        Record::Poison(Poison {
            runtime: rt,
            buffer: BufferId(3),
            cause: "\n\t".into(),
            time_ns: u64::MAX,
            submission: None,
            region: None,
        }),
        Record::ClockCalibration(ClockCalibration {
            runtime: rt,
            host_ns: 0,
            device_ns: u64::MAX,
            device_offset_ns: i64::MIN,
            uncertainty_ns: 0,
        }),
    ];
    let model = Model::from_records(&records);
    assert_eq!(model.span_count(), 1);
    let mut state = ViewState::new(&model, 120, 40);
    for action in [
        Action::Tab,
        Action::JumpToProducer,
        Action::ToggleHazards,
        Action::ZoomToSelection,
        Action::ZoomOut,
        Action::PanRight,
        Action::NextEvent,
        Action::ToggleEvents,
        Action::ToggleStats,
        Action::End,
        Action::Fit,
        Action::ZoomIn,
    ] {
        state.update(&model, action);
        render_to_string(&model, &state, 120, 40);
    }
}

#[test]
fn huge_copies_and_durations_saturate() {
    use hrx_analysis::timeline::fixtures::*;
    let mut f = three_stage();
    for i in 0..3 {
        f.submit(1, i, &[], 0).ran(i, 0, 0, u64::MAX / 2);
    }
    let model = f.model();
    let upload = &model.stats().copy_labels[0];
    assert_eq!(upload.total_ns, u64::MAX);
    render_to_string(&model, &ViewState::new(&model, 120, 40), 120, 40);
}

#[test]
fn wrapping_keeps_numbers_with_units_breaks_after_hyphens_and_hangs_sub_rows() {
    let text =
        |lines: &[Line<'_>]| -> Vec<String> { lines.iter().map(|l| l.to_string()).collect() };
    // A number stays with its unit: the break goes before "(86.2 ms)", not inside it (a
    // shape such as 20×13×1 can end a line, below).
    let wrapped = panes::wrap(vec![Line::from("host        took about (86.2 ms)")], 30);
    assert_eq!(
        text(&wrapped),
        ["host        took about", "            (86.2 ms)"]
    );
    // After a hyphen, kept on the first line, rather than mid-word.
    let wrapped = panes::wrap(vec![Line::from("cause       kernel=x:device-lost")], 30);
    assert_eq!(
        text(&wrapped),
        ["cause       kernel=x:device-", "            lost"]
    );
    // A sub-row's continuation hangs under the sub-row, not under its parent; in a narrow
    // pane both shrink to 2.
    let sub_row = "              grid 20×13×1  block 16×16×1  const 8 B";
    let wrapped = panes::wrap(vec![Line::from(sub_row)], 44);
    assert_eq!(
        text(&wrapped),
        [
            "              grid 20×13×1  block 16×16×1",
            "              const 8 B"
        ]
    );
    let wrapped = panes::wrap(vec![Line::from(sub_row)], 29);
    assert_eq!(
        text(&wrapped),
        ["  grid 20×13×1  block 16×16×1", "  const 8 B"]
    );
    // A count in brackets stays with its word.
    let wrapped = panes::wrap(vec![Line::from("timeline    14 spans (+2 untimed)")], 28);
    assert_eq!(text(&wrapped), ["timeline    14 spans", "  (+2 untimed)"]);
    // Narrow panes still wrap (by 2) instead of clipping.
    let wrapped = panes::wrap(vec![Line::from("runtime     r1 sim")], 12);
    assert_eq!(text(&wrapped), ["runtime", "  r1 sim"]);
}

#[test]
fn a_narrow_status_line_keeps_help_and_quit_over_the_cursor_time() {
    let model = failing();
    for width in [16, 24, 36] {
        let state = ViewState::new(&model, width, 12);
        let screen = terminal(&model, &state).backend().to_string();
        let status = screen.lines().last().unwrap();
        assert!(status.contains("? help  q quit"), "{width}: {status}");
    }
    let state = ViewState::new(&model, 120, 12);
    let screen = terminal(&model, &state).backend().to_string();
    assert!(screen.lines().last().unwrap().contains("cursor"));
}

#[test]
fn an_event_without_a_span_is_shown_whole_not_the_span_selected_before() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::Tab);
    assert!(state.selection.is_some());
    let busy = model
        .events()
        .iter()
        .position(|e| e.kind == EventKind::Busy && e.span.is_none())
        .expect("a refused submit");
    state.update(&model, Action::ToggleEvents);
    // Step onto it (opening the list only places the cursor).
    if state.event_cursor == Some(busy) {
        state.update(&model, Action::NextEvent);
    }
    while let Some(at) = state.event_cursor.filter(|&at| at != busy) {
        let toward = if at < busy {
            Action::NextEvent
        } else {
            Action::PrevEvent
        };
        state.update(&model, toward);
    }
    assert_eq!(state.selection, None);
    let screen = terminal(&model, &state).backend().to_string();
    assert!(screen.contains("┌ Event "), "{screen}");
    let text = &model.events()[busy].text;
    assert!(screen.contains(&text[..text.len().min(30)]), "{screen}");
}

/// The rows of the screen, as text.
fn rows(model: &Model, state: &ViewState) -> Vec<String> {
    render_to_string(model, state, state.width, state.height)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_details_pane_scrolls_to_the_failure_and_marks_the_failed_operation() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleEvents);
    while model.events()[state.event_cursor.unwrap()].kind != EventKind::RegionFailed {
        state.update(&model, Action::NextEvent);
    }
    let top = render_to_string(&model, &state, 120, 40);
    // The reason comes first, and the operation the error names is marked.
    assert!(
        top.contains("status      failed: device lost: injected fault"),
        "{top}"
    );
    assert!(top.contains("failed op   ✖ sobel, marked below"), "{top}");
    assert!(top.contains("op ✖        #2 sobel  failed here"), "{top}");
    // At 80x24 the pane hides most of it; it scrolls to the end.
    state.update(
        &model,
        Action::Resize {
            width: 80,
            height: 24,
        },
    );
    let top = render_to_string(&model, &state, 80, 24);
    assert!(top.contains("failed op   ✖ sobel, marked below"), "{top}");
    assert!(top.contains("more lines (PgDn)"), "{top}");
    let (limit, page) = details_scroll_limit(&model, &state);
    assert!(limit > 0 && page > 0);
    for _ in 0..10 {
        state.update(
            &model,
            Action::ScrollDetails {
                lines: page as i16,
                limit,
            },
        );
    }
    assert_eq!(state.details_scroll, limit);
    let bottom = render_to_string(&model, &state, 80, 24);
    assert!(bottom.contains("lines above (PgUp)"), "{bottom}");
    assert!(
        !bottom.contains("more lines (PgDn)"),
        "the end is in sight: {bottom}"
    );
    assert!(bottom.contains("h lists them, p jumps to"), "{bottom}");
    insta::assert_snapshot!(terminal(&model, &state).backend());
}

#[test]
fn the_hazards_key_label_says_what_the_next_press_does() {
    let model = Model::from_records(&pipeline(PipelineSpec::ops(24)).collect::<Vec<_>>());
    let mut state = ViewState::new(&model, 120, 40);
    assert_eq!(state.list, Some(ListKind::Hazards), "open by default");
    let status = |state: &ViewState| rows(&model, state).last().unwrap().clone();
    assert!(
        status(&state).contains("h hide hazards"),
        "{}",
        status(&state)
    );
    state.update(&model, Action::ToggleHazards);
    assert_eq!(state.list, None, "the first press hides it, as labelled");
    assert!(status(&state).contains("h hazards"), "{}", status(&state));
    assert!(!status(&state).contains("hide"));
    state.update(&model, Action::ToggleHazards);
    assert_eq!(state.list, Some(ListKind::Hazards));
    // Over the statistics, the pane's keys: it hides the hazards list, and `h` shows it.
    state.update(&model, Action::ToggleStats);
    let over_stats = status(&state);
    assert!(
        over_stats.contains("↑/↓ scroll  s/Esc close") && over_stats.contains("h hazards"),
        "{over_stats}"
    );
    assert!(
        !over_stats.contains("hide") && !over_stats.contains("queue"),
        "{over_stats}"
    );
}

#[test]
fn hazard_kinds_and_scopes_are_whole_at_120_columns() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuUpload, 2);
    state.update(&model, Action::ToggleHazards);
    let screen = render_to_string(&model, &state, 120, 40);
    let hazards: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains(" RAW ") || l.contains(" WAR ") || l.contains(" WAW "))
        .collect();
    assert!(!hazards.is_empty(), "{screen}");
    assert!(screen.contains("cross-sub"), "{screen}");
    assert!(!screen.contains("cross-s…"), "{screen}");
}

#[test]
fn zoomed_out_rows_show_how_much_of_each_cell_is_busy() {
    // Spans of a few µs every 2 ms: every lane is busy well under half the time.
    let model = Model::from_records(
        &pipeline(PipelineSpec {
            submissions: 3_000,
            period_ns: 2_000_000,
            busy_every: None,
            fail_at: None,
        })
        .collect::<Vec<_>>(),
    );
    let state = ViewState::new(&model, 120, 40);
    let layout = state.layout(&model);
    let screen = rows(&model, &state);
    for row in &layout.lanes {
        let stats = model
            .stats()
            .lanes
            .iter()
            .find(|l| {
                (l.runtime, l.queue) == (model.lane(row.lane).runtime, model.lane(row.lane).queue)
            })
            .unwrap();
        assert!(stats.utilisation < 0.5, "{}", stats.utilisation);
        let cells: String = (row.area.y..row.area.y + row.area.height)
            .flat_map(|y| screen[usize::from(y)].chars().skip(usize::from(GUTTER)))
            .collect();
        assert!(!cells.contains('█'), "{cells}");
        assert!(cells.contains('▁') || cells.contains('▂'), "{cells}");
    }
}

#[test]
fn a_span_lists_the_regions_its_submit_started_and_marks_the_submit() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    select(&model, &mut state, Queue::GpuCompute, 1);
    let screen = render_to_string(&model, &state, 120, 40);
    let started = screen
        .lines()
        .find(|l| l.contains("started"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        started.contains("r0 upload after ") && started.contains("r1 blur"),
        "{started}"
    );
    // The submit tick of the selection's submission is drawn in the selection's style.
    let t = model
        .submission(model.span(state.selection.unwrap()).submission)
        .submit_ns;
    let layout = state.layout(&model);
    let x = GUTTER + state.window.col(t, layout.timeline_cols);
    let terminal = terminal(&model, &state);
    let cell = &terminal.backend().buffer()[(x, layout.ticks.y)];
    assert_eq!(Some(cell.bg), theme::SELECTED.bg, "{cell:?}");
}

/// The trace pane says how a crashed recording ended (the signal) and how it ends (`not
/// closed cleanly`), as `info` does: it said `failures none` and nothing of the SIGABRT
/// (break-it pass).
#[test]
fn the_trace_pane_says_the_signal_that_ended_the_process() {
    use hrx_capture::schema::{FatalSignal, Record, SignalWitness};
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    let spec = crate::state::synthetic::PipelineSpec::ops(8);
    for r in crate::state::synthetic::pipeline(spec) {
        if !matches!(r, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&r);
        }
    }
    recorder.flush().unwrap();
    let crash = Record::FatalSignal(FatalSignal {
        time_ns: 1_000_000,
        signal: 6,
        witness: SignalWitness::Handler,
        fault_address: None,
    });
    recorder.record(&crash);
    recorder.flush().unwrap();
    // Never closed: the file as the fatal-signal flush left it.
    let bytes = sink.contents();
    std::mem::forget(recorder);
    let trace = hrx_capture::Trace::from_bytes(&bytes).unwrap();
    assert!(!trace.recovery.closed);
    let model = Model::from_trace(&trace);
    let state = ViewState::new(&model, 160, 40);
    let screen = render_to_string(&model, &state, 160, 40);
    assert!(screen.contains("crashed: SIGABRT"), "{screen}");
    assert!(screen.contains("not closed cleanly"), "{screen}");
}

/// The Trace pane of a trace a recorder is still writing says it is being recorded now,
/// as `diff` says it, not "not closed cleanly" as of a crash: followed (`view --follow`)
/// while it grows, or opened by a plain `view` while a recorder held it. One that ended
/// without a close (nobody writes it any more) still reads "not closed cleanly".
#[test]
fn the_trace_pane_of_a_trace_being_recorded_says_so() {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    for r in pipeline(PipelineSpec::ops(8)) {
        if !matches!(
            r,
            hrx_capture::schema::Record::SessionStart(_)
                | hrx_capture::schema::Record::SessionEnd(_)
        ) {
            recorder.record(&r);
        }
    }
    recorder.flush().unwrap();
    // Not closed: the file as a recorder still writing it leaves it.
    let bytes = sink.contents();
    std::mem::forget(recorder);
    let trace = hrx_capture::Trace::from_bytes(&bytes).unwrap();
    assert!(!trace.recovery.closed);
    let model = Model::from_trace(&trace);
    let pane = |state: &ViewState| render_to_string(&model, state, 160, 40);
    let recording = hrx_capture::BEING_RECORDED;
    // Followed as it grows.
    let mut followed = ViewState::new(&model, 160, 40);
    followed.start_live();
    let screen = pane(&followed);
    assert!(screen.contains(recording), "{screen}");
    assert!(!screen.contains("not closed cleanly"), "{screen}");
    // Followed to where nobody writes it any more: cut short.
    followed.live_unclosed(true);
    let screen = pane(&followed);
    assert!(screen.contains("not closed cleanly"), "{screen}");
    assert!(!screen.contains(recording), "{screen}");
    // A plain view of it, opened while a recorder held it.
    let mut opened = ViewState::new(&model, 160, 40);
    opened.being_recorded = true;
    let screen = pane(&opened);
    assert!(screen.contains(recording), "{screen}");
    assert!(!screen.contains("not closed cleanly"), "{screen}");
    // And without a recorder: a crash or a kill, as before.
    let screen = pane(&ViewState::new(&model, 160, 40));
    assert!(screen.contains("not closed cleanly"), "{screen}");
    assert!(!screen.contains(recording), "{screen}");
}

/// A region timing that ends before it starts (crafted or damaged times) is drawn as 0 ns
/// and said: in its details (`times`), and counted in the Trace pane (`backwards`), as
/// `stats` counts it; the view drew it as 0 ns without a word.
#[test]
fn a_span_that_ends_before_it_starts_is_said() {
    use hrx_capture::schema::Record;
    let mut records: Vec<Record> = pipeline(PipelineSpec::ops(8)).collect();
    let mut crafted = None;
    for (i, r) in records.iter_mut().enumerate() {
        if let Record::RegionTiming(t) = r
            && crafted.is_none()
        {
            (t.start_ns, t.end_ns) = (t.end_ns.max(t.start_ns + 1), t.start_ns);
            crafted = Some(i);
        }
    }
    assert!(crafted.is_some());
    let model = Model::from_records(&records);
    assert_eq!(model.info().ends_before_start, 1);
    let mut state = ViewState::new(&model, 160, 40);
    let trace = render_to_string(&model, &state, 160, 40);
    assert!(
        trace.contains(
            "backwards   1 span or range ends before it starts (crafted or damaged times):"
        ),
        "{trace}"
    );
    let (lane, index) = model
        .lanes()
        .iter()
        .enumerate()
        .find_map(|(l, lane)| {
            let i = lane.spans().iter().position(|s| s.ends_before_start())?;
            Some((l, i))
        })
        .expect("the crafted span");
    let span = crate::state::SpanRef {
        lane: crate::state::LaneRef(lane as u32),
        index: index as u32,
    };
    assert_eq!(model.span(span).duration_ns(), 0);
    state.selection = Some(span);
    state.list = None;
    let details = render_to_string(&model, &state, 160, 40);
    assert!(
        details
            .contains("times       end before they start (crafted or damaged): drawn as 0 ns long"),
        "{details}"
    );
    // Another span says nothing of it.
    let other = model.lanes()[lane].spans().len() > 1;
    if other {
        state.selection = Some(crate::state::SpanRef {
            lane: crate::state::LaneRef(lane as u32),
            index: u32::from(index == 0),
        });
        let details = render_to_string(&model, &state, 160, 40);
        assert!(!details.contains("end before they start"), "{details}");
    }
    // An honest trace has no `backwards` line.
    let honest = Model::from_records(&pipeline(PipelineSpec::ops(8)).collect::<Vec<_>>());
    let said = render_to_string(&honest, &ViewState::new(&honest, 160, 40), 160, 40);
    assert!(!said.contains("backwards "), "{said}");
}

/// The trace pane says what a trim or a capture range lacks (its range, as `info` words it)
/// and that a recording on a loaded host has host-side times that include waits for a
/// CPU: it said `complete` of both.
#[test]
fn the_trace_pane_says_a_range_and_a_loaded_host() {
    use hrx_capture::schema::{
        AnnotationId, AnnotationName, CounterSample, CounterValue, HOST_LOAD_COUNTER, Record,
        RuntimeId, SubmissionIndex, TraceRange,
    };
    let screen = |extra: &[Record]| {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
                .unwrap();
        let spec = crate::state::synthetic::PipelineSpec::ops(8);
        for r in crate::state::synthetic::pipeline(spec) {
            if !matches!(r, Record::SessionStart(_) | Record::SessionEnd(_)) {
                recorder.record(&r);
            }
        }
        for r in extra {
            recorder.record(r);
        }
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let model = Model::from_trace(&trace);
        let state = ViewState::new(&model, 160, 40);
        render_to_string(&model, &state, 160, 40)
    };
    let range = Record::TraceRange(TraceRange {
        runtime: RuntimeId(0),
        start: SubmissionIndex(3),
        end: Some(SubmissionIndex(6)),
        trigger: "submissions:3..6".into(),
        trimmed_from: Some("whole.hrxt".into()),
        time_ns: 10,
        fault: None,
    });
    let name = Record::AnnotationName(AnnotationName {
        name: AnnotationId(90),
        text: HOST_LOAD_COUNTER.into(),
    });
    let load = |value: f64| {
        Record::CounterSample(CounterSample {
            thread: 0,
            name: AnnotationId(90),
            time_ns: 20,
            value: CounterValue(value),
        })
    };
    let said = screen(&[range, name.clone(), load(0.5), load(2.25)]);
    assert!(
        said.contains("range       trimmed from whole.hrxt, submissions 3..6"),
        "{said}"
    );
    assert!(
        said.contains("host load   loaded: up to 2.25 per CPU: host-side times include"),
        "{said}"
    );
    let quiet = screen(&[name, load(0.5)]);
    assert!(!quiet.contains("range       "), "{quiet}");
    assert!(!quiet.contains("host load   "), "{quiet}");
}

/// The reader's warnings of a file that is not one recording read whole are in the Trace
/// pane: another trace joined after a cut one (`cat`), two sessions in one file.
#[test]
fn the_trace_pane_says_a_joined_trace_and_two_sessions() {
    use hrx_capture::schema::Record;
    let recorded = |second_session: bool| {
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
                .unwrap();
        let spec = crate::state::synthetic::PipelineSpec::ops(8);
        for r in crate::state::synthetic::pipeline(spec) {
            let session = matches!(r, Record::SessionStart(_));
            if (session && second_session)
                || !matches!(r, Record::SessionStart(_) | Record::SessionEnd(_))
            {
                recorder.record(&r);
            }
        }
        recorder.close().unwrap();
        sink.contents()
    };
    let screen = |bytes: &[u8]| {
        let trace = hrx_capture::Trace::from_bytes(bytes).unwrap();
        let model = Model::from_trace(&trace);
        let state = ViewState::new(&model, 160, 40);
        render_to_string(&model, &state, 160, 40)
    };
    let one = recorded(false);
    let joined = [&one[..one.len() * 2 / 3], &one[..]].concat();
    let said = screen(&joined);
    assert!(
        said.contains("another trace starts here (two files joined?)"),
        "{said}"
    );
    let said = screen(&recorded(true));
    assert!(said.contains("2 sessions in one file"), "{said}");
    assert!(!screen(&one).contains("warning"));
}

#[test]
fn the_trace_pane_says_what_was_lost_and_how_long_threads_waited() {
    use hrx_capture::schema::{LostKind, Record, RecorderWait, RecordsLost};
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    recorder.record(&Record::RecordsLost(RecordsLost {
        time_ns: 5,
        lossy: true,
        total: 7,
        by_kind: vec![LostKind {
            kind: "RegionTiming".into(),
            records: 7,
        }],
    }));
    recorder.record(&Record::RecorderWait(RecorderWait {
        thread: 0,
        thread_name: "main".into(),
        start_ns: 10,
        end_ns: 2_010,
        runtime: None,
        submission: None,
        region: None,
    }));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let model = Model::from_trace(&trace);
    let state = ViewState::new(&model, 160, 40);
    let screen = render_to_string(&model, &state, 160, 40);
    assert!(
        screen.contains("7 records lost (RegionTiming 7) in lossy mode"),
        "{screen}"
    );
    assert!(
        screen.contains("threads waited 1 time on the recorder"),
        "{screen}"
    );
}

/// A lossy recording that lost nothing says its mode in the Trace pane, in `info`'s words
/// (a `RecordsLost` of none, written at a lossy session's first flush): it read as a
/// lossless one (a fresh-user pass).
#[test]
fn the_trace_pane_says_a_lossy_recording_that_lost_nothing() {
    use hrx_capture::schema::{Record, RecordsLost};
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    recorder.record(&Record::RecordsLost(RecordsLost {
        time_ns: 5,
        lossy: true,
        total: 0,
        by_kind: Vec::new(),
    }));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let model = Model::from_trace(&trace);
    let screen = render_to_string(&model, &ViewState::new(&model, 160, 40), 160, 40);
    assert!(
        screen.contains("lost        none, recorded in lossy mode"),
        "{screen}"
    );
    // A lossless recording says nothing of a mode.
    let model = Model::from_records(&pipeline(PipelineSpec::ops(8)).collect::<Vec<_>>());
    let screen = render_to_string(&model, &ViewState::new(&model, 160, 40), 160, 40);
    assert!(!screen.contains("lossy"), "{screen}");
}

/// The events list of a trace without events says so inside its box, and what events would
/// be, where it was an empty box titled `Events (0)`.
#[test]
fn an_events_list_without_events_says_so() {
    let model = Model::from_records(&host_threads_records());
    assert!(model.events().is_empty());
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleEvents);
    let screen = render_to_string(&model, &state, 120, 40);
    let inside: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("Events (0)"))
        .skip(1)
        .take(2)
        .collect();
    let words = inside
        .iter()
        .map(|l| l.rsplit('│').nth(1).unwrap_or("").trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.starts_with("no events: no failure, cancellation, quarantine, poison,"),
        "{screen}"
    );
    assert!(words.ends_with("refused submit in this trace"), "{screen}");
    // Narrow panes and tiny terminals wrap it, or cut it, without panicking.
    for (w, h) in [(1, 1), (20, 8), (40, 12)] {
        let mut state = ViewState::new(&model, w, h);
        state.update(&model, Action::ToggleEvents);
        render_to_string(&model, &state, w, h);
    }
}

/// A terminal too short for the top rows and the status line draws the status line alone on
/// its last row: the axis and tick rows were drawn under it, and their cells past its text
/// showed through ("q quitms'"; a break-it pass at 300x2).
#[test]
fn a_terminal_too_short_for_the_axis_draws_the_status_line_cleanly() {
    let model = failing();
    let tall = terminal(&model, &ViewState::new(&model, 300, 40));
    let tall = tall.backend().to_string();
    let status = tall.lines().last().unwrap();
    for height in [1, 2, 3, 4] {
        let state = ViewState::new(&model, 300, height);
        let screen = terminal(&model, &state).backend().to_string();
        assert_eq!(screen.lines().last().unwrap(), status, "{height}: {screen}");
    }
}
