//! Tests of [`ViewState::update`](super::ViewState::update).

use super::super::synthetic::{PipelineSpec, pipeline};
use super::*;
use crate::state::{EventKind, GUTTER, SpanStatus};
use hrx_analysis::timeline::fixtures::*;
use hrx_capture::schema::{HazardKind, Queue};

fn pipeline_model(spec: PipelineSpec) -> Model {
    Model::from_records(&pipeline(spec).collect::<Vec<_>>())
}

fn failing() -> Model {
    pipeline_model(PipelineSpec {
        submissions: 6,
        period_ns: 60_000,
        busy_every: Some(3),
        fail_at: Some(4),
    })
}

fn queue_of(model: &Model, state: &ViewState) -> Queue {
    model.lane(state.selection.unwrap().lane).queue
}

#[test]
fn starts_fitted_with_the_first_busy_lane() {
    let model = failing();
    let state = ViewState::new(&model, 120, 40);
    let range = model.time_range().unwrap();
    assert!(state.window.start_ns <= range.start_ns && state.window.end_ns >= range.end_ns);
    assert_eq!(model.lane(state.lane.unwrap()).queue, Queue::GpuUpload);
    assert_eq!(state.list, Some(ListKind::Events));
    assert_eq!(
        state.visible_lanes(&model).len(),
        4,
        "the NPU lane is empty"
    );
}

#[test]
fn zoom_keeps_the_cursor_in_place() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.cursor_ns = state.window.start_ns + state.window.width_ns() / 4;
    let cols = 100;
    let before = state.window.col(state.cursor_ns, cols);
    let width = state.window.width_ns();
    state.update(&model, Action::ZoomIn);
    assert_eq!(state.window.width_ns(), width / 2);
    assert!(state.window.col(state.cursor_ns, cols).abs_diff(before) <= 1);
    state.update(&model, Action::ZoomOut);
    assert_eq!(state.window.width_ns(), width / 2 * 2);
    for _ in 0..80 {
        state.update(&model, Action::ZoomIn);
    }
    assert_eq!(state.window.width_ns(), MIN_WINDOW_NS);
    assert_eq!(state.message.as_deref(), Some("fully zoomed in"));
    state.update(&model, Action::Fit);
    assert_eq!(state.window.width_ns(), width);
}

#[test]
fn pan_moves_a_quarter_window() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let w = state.window;
    state.update(&model, Action::PanRight);
    assert_eq!(state.window.start_ns, w.start_ns + w.width_ns() / 4);
    state.update(&model, Action::PanLeft);
    assert_eq!(state.window, w);
}

#[test]
fn arrows_walk_spans_and_queues() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::SelectNext);
    let first = state.selection.unwrap();
    assert_eq!(first.index, 0);
    assert_eq!(queue_of(&model, &state), Queue::GpuUpload);
    state.update(&model, Action::SelectNext);
    assert_eq!(state.selection.unwrap().index, 1);
    state.update(&model, Action::SelectPrev);
    assert_eq!(state.selection, Some(first));
    state.update(&model, Action::SelectPrev);
    assert_eq!(state.message.as_deref(), Some("first span of the queue"));
    state.update(&model, Action::NextQueue);
    assert_eq!(queue_of(&model, &state), Queue::GpuCompute);
    let compute = model.span(state.selection.unwrap());
    assert_eq!(
        model.submission(compute.submission).index.0,
        0,
        "nearest in time"
    );
    state.update(&model, Action::End);
    assert_eq!(
        model.span(state.selection.unwrap()).status(),
        SpanStatus::Failed
    );
    state.update(&model, Action::PrevQueue);
    state.update(&model, Action::PrevQueue);
    assert_eq!(queue_of(&model, &state), Queue::GpuUpload);
}

#[test]
fn tab_follows_time_across_queues() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let mut starts = Vec::new();
    for _ in 0..8 {
        state.update(&model, Action::Tab);
        starts.push(model.span(state.selection.unwrap()).start_ns);
    }
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    let queues: std::collections::HashSet<_> = (0..8)
        .map(|_| {
            state.update(&model, Action::BackTab);
            queue_of(&model, &state)
        })
        .collect();
    assert!(queues.len() >= 3);
}

#[test]
fn zoom_to_selection_and_home() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ZoomToSelection);
    assert_eq!(state.message.as_deref(), Some("nothing selected"));
    state.update(&model, Action::Home);
    let span = *model.span(state.selection.unwrap());
    state.update(&model, Action::ZoomToSelection);
    assert!(state.window.start_ns < span.start_ns && state.window.end_ns > span.end_ns);
    assert_eq!(
        state.window.width_ns(),
        span.duration_ns() + 2 * (span.duration_ns() / 4)
    );
}

#[test]
fn click_selects_what_is_under_the_pointer() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let layout = state.layout(&model);
    let compute = layout
        .lanes
        .iter()
        .find(|l| model.lane(l.lane).queue == Queue::GpuCompute)
        .unwrap();
    let span = model.lane(compute.lane).spans()[1];
    let cols = layout.timeline_cols;
    let col = state
        .window
        .col(span.start_ns + span.duration_ns() / 2, cols);
    state.update(
        &model,
        Action::Click {
            column: GUTTER + col,
            row: compute.area.y,
        },
    );
    assert_eq!(state.selection.map(|s| s.index), Some(1));
    assert_eq!(state.lane, Some(compute.lane));
    // A click in the events list jumps to that event.
    let list = layout.list.unwrap();
    state.update(
        &model,
        Action::Click {
            column: list.x + 3,
            row: list.y + 1 + 3,
        },
    );
    assert_eq!(state.event_cursor, Some(3));
    assert_eq!(state.focus, Focus::List);
    assert_eq!(model.events()[3].span, state.selection);
}

#[test]
fn wheel_zooms_around_the_pointer() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let layout = state.layout(&model);
    let row = layout.lanes[0].area.y;
    let (t, _) = state.window.cell(30, layout.timeline_cols);
    state.update(
        &model,
        Action::Wheel {
            column: GUTTER + 30,
            row,
            zoom_in: true,
        },
    );
    assert_eq!(state.cursor_ns, t);
    assert!(state.window.col(t, layout.timeline_cols).abs_diff(30) <= 1);
}

#[test]
fn events_are_walked_in_time_order() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    let mut seen = Vec::new();
    for _ in 0..model.events().len() {
        state.update(&model, Action::NextEvent);
        seen.push(model.events()[state.event_cursor.unwrap()].kind);
    }
    assert_eq!(seen[0], EventKind::Busy);
    assert!(seen.contains(&EventKind::RegionFailed));
    state.update(&model, Action::NextEvent);
    assert_eq!(state.message.as_deref(), Some("last event"));
    // Jumping to the failure selects the failed span.
    let failed = model
        .events()
        .iter()
        .position(|e| e.kind == EventKind::RegionFailed)
        .unwrap();
    while state.event_cursor != Some(failed) {
        state.update(&model, Action::PrevEvent);
    }
    assert_eq!(
        model.span(state.selection.unwrap()).status(),
        SpanStatus::Failed
    );
}

#[test]
fn producer_jump_and_hazard_list() {
    let mut f = three_stage();
    f.submit(1, 0, &[], 0)
        .submit(1, 1, &[], 0)
        .ran(0, 0, 10, 20)
        .ran(0, 1, 30, 40)
        .ran(1, 0, 45, 50)
        .cross(1, 0, (0, 1), HazardKind::WriteAfterRead, 1, (0, 1024));
    let model = f.model();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::End);
    let upload_1 = state.selection.unwrap();
    state.update(&model, Action::JumpToProducer);
    assert_eq!(queue_of(&model, &state), Queue::GpuCompute);
    state.update(&model, Action::JumpToProducer);
    assert_eq!(state.selection.unwrap().index, 0, "the first upload");
    state.update(&model, Action::JumpToProducer);
    assert_eq!(
        state.message.as_deref(),
        Some("no producer on the timeline")
    );
    // Hazards list: Enter on the consumer goes forward again.
    state.update(&model, Action::NextQueue);
    assert_eq!(
        state.list,
        Some(ListKind::Hazards),
        "no events: hazards by default"
    );
    // Producer: upload (in graph); consumers: download (in graph, never ran) and the
    // next submission's upload (cross-submission).
    assert_eq!(state.list_len(&model), 3);
    state.focus = Focus::List;
    state.update(&model, Action::NextQueue);
    state.update(&model, Action::Activate);
    assert_eq!(
        state.message.as_deref(),
        Some("that region is not on the timeline")
    );
    state.update(&model, Action::NextQueue);
    assert_eq!(state.hazard_cursor, 2);
    state.update(&model, Action::Activate);
    assert_eq!(state.selection, Some(upload_1));
    state.update(&model, Action::ToggleHazards);
    assert_eq!(state.list, None);
}

/// Types `text` into the search.
fn type_search(model: &Model, state: &mut ViewState, text: &str) {
    for c in text.chars() {
        state.update(model, Action::Search(c));
    }
}

#[test]
fn search_filters_navigation() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::StartSearch);
    type_search(&model, &mut state, "DOWN");
    assert!(state.searching);
    assert_eq!(state.filter_matches(&model), Some(5));
    assert_eq!(
        model.span_label(model.span(state.selection.unwrap())),
        "download"
    );
    state.update(&model, Action::EndSearch);
    state.update(&model, Action::Tab);
    assert_eq!(
        model.span_label(model.span(state.selection.unwrap())),
        "download"
    );
    state.update(&model, Action::StartSearch);
    state.update(&model, Action::Search('z'));
    assert_eq!(state.filter_matches(&model), Some(0));
    state.update(&model, Action::SearchBackspace);
    assert_eq!(state.filter_matches(&model), None);
    state.update(&model, Action::Search('x'));
    state.update(&model, Action::Escape);
    assert!(!state.searching && !state.filtering());
}

#[test]
fn a_search_typed_then_abandoned_returns_to_where_it_started() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::Tab);
    state.update(&model, Action::Tab);
    let (start, window) = (state.selection, state.window);
    assert_eq!(model.span_label(model.span(start.unwrap())), "blur +1");
    state.update(&model, Action::StartSearch);
    // "h" matches "host" and moves there; "hz" matches nothing: back to the start.
    type_search(&model, &mut state, "h");
    assert_eq!(
        model.span_label(model.span(state.selection.unwrap())),
        "host"
    );
    type_search(&model, &mut state, "z");
    assert_eq!(state.filter_matches(&model), Some(0));
    assert_eq!((state.selection, state.window), (start, window));
    // Each keystroke searches from the start: "down" finds the first download after it.
    state.update(&model, Action::SearchBackspace);
    state.update(&model, Action::SearchBackspace);
    type_search(&model, &mut state, "down");
    let download = state.selection.unwrap();
    assert_eq!(model.span_label(model.span(download)), "download");
    assert!(model.span(download).start_ns >= model.span(start.unwrap()).start_ns);
    // Esc abandons the search and the view returns; Enter would have kept the match.
    state.update(&model, Action::Escape);
    assert_eq!((state.selection, state.window), (start, window));
    state.update(&model, Action::StartSearch);
    type_search(&model, &mut state, "down");
    state.update(&model, Action::EndSearch);
    assert_eq!(state.selection, Some(download));
    state.update(&model, Action::Escape);
    assert_eq!(
        state.selection,
        Some(download),
        "a kept search clears in place"
    );
}

#[test]
fn a_search_with_matches_only_before_the_cursor_selects_the_nearest() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    // The last span in time.
    loop {
        let before = state.selection;
        state.update(&model, Action::Tab);
        if state.selection == before {
            break;
        }
    }
    let last = state.selection.unwrap();
    assert_ne!(model.span_label(model.span(last)), "upload");
    state.update(&model, Action::StartSearch);
    type_search(&model, &mut state, "upload");
    let found = state.selection.unwrap();
    assert_eq!(model.span_label(model.span(found)), "upload");
    assert!(model.span(found).start_ns <= model.span(last).start_ns);
    assert_eq!(state.message, None, "not \"no span matches\"");
}

#[test]
fn search_finds_a_kernel_inside_a_native_graph() {
    let model = failing();
    // The compute graph runs blur then sobel and is labelled by its first kernel.
    let label = model.labels().iter().position(|l| l == "blur +1").unwrap();
    let graphs = model.label_span_counts()[label];
    assert!(graphs > 0);
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::StartSearch);
    type_search(&model, &mut state, "SOBEL");
    assert_eq!(state.filter_matches(&model), Some(graphs));
    assert_eq!(
        model.span_label(model.span(state.selection.unwrap())),
        "blur +1"
    );
    // A name no operation has matches nothing.
    state.update(&model, Action::Search('x'));
    assert_eq!(state.filter_matches(&model), Some(0));
}

#[test]
fn escape_unwinds_one_thing_at_a_time() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleEvents);
    state.update(&model, Action::Tab);
    state.update(&model, Action::ToggleHelp);
    state.update(&model, Action::Escape);
    assert!(!state.show_help);
    state.update(&model, Action::Escape);
    assert_eq!(state.focus, Focus::Timeline);
    state.update(&model, Action::Escape);
    assert!(state.list.is_none());
    assert!(
        state.selection.is_some(),
        "the list closes before the selection"
    );
    state.update(&model, Action::Escape);
    assert!(state.selection.is_none());
    state.update(&model, Action::Quit);
    assert!(state.quit);
}

/// Esc with the hazards list open and a selection closes the list first, as help and the
/// README say ("close help or a list, clear the search or selection"); it cleared the
/// selection and left the list open (fresh-user pass).
#[test]
fn escape_closes_the_hazards_list_before_the_selection() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::Tab);
    let selected = state.selection;
    assert!(selected.is_some());
    state.update(&model, Action::ToggleHazards);
    assert_eq!(state.list, Some(ListKind::Hazards));
    state.update(&model, Action::Escape);
    assert_eq!((state.list, state.selection), (None, selected));
    state.update(&model, Action::Escape);
    assert_eq!(state.selection, None);
}

#[test]
fn empty_lanes_toggle() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleEmptyLanes);
    assert_eq!(state.visible_lanes(&model).len(), 5);
    let empty = Model::default();
    let state = ViewState::new(&empty, 80, 24);
    assert!(state.visible_lanes(&empty).is_empty());
}

#[test]
fn n_steps_through_search_matches_and_wraps_like_vim() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::StartSearch);
    type_search(&model, &mut state, "download");
    state.update(&model, Action::EndSearch);
    let matches = state.filter_matches(&model).unwrap() as usize;
    assert!(matches >= 3);
    let first = state.selection.unwrap();
    let mut seen = vec![first];
    for _ in 1..matches {
        state.update(&model, Action::NextEvent);
        assert_eq!(state.message, None);
        let s = state.selection.unwrap();
        assert_eq!(model.span_label(model.span(s)), "download");
        seen.push(s);
    }
    let starts: Vec<u64> = seen.iter().map(|&s| model.span(s).start_ns).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    assert_eq!(
        seen.iter().collect::<std::collections::HashSet<_>>().len(),
        matches,
        "every match once"
    );
    // Past the last match: back to the first, and it says so.
    state.update(&model, Action::NextEvent);
    assert_eq!(state.selection, Some(first));
    assert_eq!(
        state.message.as_deref(),
        Some("search hit the end, continuing at the start")
    );
    state.update(&model, Action::PrevEvent);
    assert_eq!(state.selection, Some(*seen.last().unwrap()));
    assert!(
        state
            .message
            .as_deref()
            .unwrap()
            .starts_with("search hit the start")
    );
    // No event was stepped through; without the search, n walks events again.
    assert_eq!(state.event_cursor, None);
    state.update(&model, Action::ClearSearch);
    state.update(&model, Action::NextEvent);
    assert!(state.event_cursor.is_some());
}

#[test]
fn details_scroll_is_clamped_and_starts_over_on_a_new_selection() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::Tab);
    let scroll = |lines| Action::ScrollDetails { lines, limit: 7 };
    state.update(&model, scroll(5));
    assert_eq!(state.details_scroll, 5);
    state.update(&model, scroll(5));
    assert_eq!(state.details_scroll, 7, "no further than the limit");
    state.update(&model, scroll(-3));
    assert_eq!(state.details_scroll, 4);
    state.update(&model, Action::ZoomIn);
    assert_eq!(
        state.details_scroll, 4,
        "the same selection keeps its place"
    );
    state.update(&model, Action::Tab);
    assert_eq!(
        state.details_scroll, 0,
        "another selection starts at its top"
    );
    state.update(&model, scroll(-3));
    assert_eq!(state.details_scroll, 0);
}

/// A live trace's model before and after it grew (3, then 12 submissions), and a view
/// following it at a zoom of an eighth of the first model (`F` after zooming in).
fn following_zoomed_in() -> (Model, Model, ViewState) {
    let spec = |submissions| PipelineSpec {
        submissions,
        period_ns: 60_000,
        busy_every: None,
        fail_at: None,
    };
    let (old, new) = (pipeline_model(spec(3)), pipeline_model(spec(12)));
    let mut state = ViewState::new(&old, 120, 40);
    state.start_live();
    state.model_changed(&old, &old, 0.0);
    for _ in 0..3 {
        state.update(&old, Action::ZoomIn);
    }
    assert!(!state.live.as_ref().unwrap().following, "a zoom stops it");
    state.update(&old, Action::ResumeFollow);
    assert!(state.live.as_ref().unwrap().following);
    (old, new, state)
}

fn in_window(state: &ViewState, t0: u64, t1: u64) -> bool {
    t0 >= state.window.start_ns && t1 <= state.window.end_ns
}

/// While following, the cursor moves with the window to the newest time (it stayed where
/// it was, off screen, when the window moved on).
#[test]
fn following_keeps_the_cursor_at_the_newest_time() {
    let (old, new, mut state) = following_zoomed_in();
    state.model_changed(&old, &new, 1.0);
    let newest = new.time_range().unwrap().end_ns;
    assert!(state.window.end_ns > newest && state.window.start_ns < newest);
    assert!(in_window(&state, state.cursor_ns, state.cursor_ns));
    assert_eq!(state.cursor_ns, newest);
}

/// Selecting a span stops following where the selection is: the trace grows, the window
/// stays, and the selected span stays on screen (the window followed the newest time and
/// left the selection behind, off screen). `F` follows again and clears the selection.
#[test]
fn selecting_a_span_stops_following_and_keeps_it_on_screen() {
    let (old, new, mut state) = following_zoomed_in();
    // The lane of the span that ends last: End selects it without moving the window.
    let newest = old.time_range().unwrap().end_ns;
    let lane = state
        .visible_lanes(&old)
        .into_iter()
        .find(|&l| {
            old.lane(l)
                .spans()
                .last()
                .is_some_and(|s| s.query_end_ns() == newest)
        })
        .unwrap();
    state.lane = Some(lane);
    let window = state.window;
    state.update(&old, Action::End);
    assert_eq!(state.window, window, "the span was on screen already");
    let selected = state.selection.unwrap();
    assert!(!state.live.as_ref().unwrap().following);
    assert!(
        state
            .message
            .as_deref()
            .unwrap()
            .contains("following stopped")
    );

    state.model_changed(&old, &new, 1.0);
    let span = new.span(state.selection.unwrap());
    assert_eq!(state.window, window);
    assert!(in_window(&state, span.start_ns, span.query_end_ns()));
    assert_eq!(
        old.key_of(old.span(selected)).region,
        new.key_of(span).region
    );

    state.update(&new, Action::ResumeFollow);
    assert!(state.live.as_ref().unwrap().following);
    assert_eq!(state.selection, None);
    assert!(in_window(&state, state.cursor_ns, state.cursor_ns));
    // An action that selects nothing leaves following on.
    state.update(&new, Action::Escape);
    assert!(state.live.as_ref().unwrap().following);
}

/// The README's list of keys names every key the help overlay (`?`) lists: a fresh user found
/// keys in `?` that the README lacked (`a`, `Home/End`, `F`, panning).
#[test]
fn the_readme_names_every_key_of_the_help() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("the README");
    let missing: Vec<&str> = KEYS
        .iter()
        .flat_map(|(keys, _)| keys.split("  "))
        .filter(|key| !readme.contains(&format!("`{key}`")))
        .collect();
    assert!(missing.is_empty(), "README lacks {missing:?}");
}

/// Over the statistics (which hide the lower panes), `h` and `e` show their list: `h` closed
/// a hazards list hidden under the statistics and left the statistics open, `e` closed a
/// focused events list unseen (fresh-user pass); Esc closes the statistics first.
#[test]
fn keys_over_the_statistics_show_what_they_name() {
    let model = failing();
    let mut state = ViewState::new(&model, 120, 40);
    state.update(&model, Action::ToggleHazards);
    assert_eq!(state.list, Some(ListKind::Hazards));
    state.update(&model, Action::ToggleStats);
    state.update(&model, Action::ToggleHazards);
    assert_eq!(
        (state.list, state.show_stats),
        (Some(ListKind::Hazards), false)
    );
    state.update(&model, Action::ToggleEvents);
    state.update(&model, Action::ToggleStats);
    state.update(&model, Action::ToggleEvents);
    assert_eq!(
        (state.list, state.focus, state.show_stats),
        (Some(ListKind::Events), Focus::List, false)
    );
    state.update(&model, Action::ToggleStats);
    state.update(&model, Action::Escape);
    assert!(!state.show_stats);
    assert_eq!(state.list, Some(ListKind::Events), "Esc closes one thing");
}
