//! The `faults` workload: the pipeline with `kernel=hrx_sobel#2:device-lost`, one frame in
//! flight. Frame 0 (submission 1) completes; frame 1's compute region loses the device,
//! its download and NPU regions are cancelled, its graph quarantined and the buffers its
//! compute region writes poisoned.

use crate::record::{open_hazards, screen, select, traces, view};
use hrx_tui::Action;
use hrx_tui::state::{EventKind, SpanStatus};

#[test]
fn timeline_fit() {
    let model = &traces().faults;
    let state = view(model);
    let text = screen(model, &state);
    assert!(
        text.contains("first fail"),
        "the trace pane names it:\n{text}"
    );
    insta::assert_snapshot!(text);
}

/// `n` from the start until the first failure: the events list has it under the cursor
/// and the failed span is selected.
#[test]
fn events_list_at_the_first_failure() {
    let model = &traces().faults;
    let mut state = view(model);
    let mut steps = 0;
    while state
        .event_cursor
        .is_none_or(|i| !model.events()[i].kind.is_failure())
    {
        state.update(model, Action::NextEvent);
        steps += 1;
        assert!(steps <= model.events().len(), "no failure event");
    }
    let event = &model.events()[state.event_cursor.unwrap()];
    assert_eq!(event.kind, EventKind::FaultInjected);
    let failed = model.span(state.selection.expect("the failed span is selected"));
    assert_eq!(failed.status(), SpanStatus::Failed);
    let text = screen(model, &state);
    assert!(text.contains("hrx_sobel"), "{text}");
    insta::assert_snapshot!(text);
}

/// The hazards of the failed compute region: its consumer (the download) was cancelled.
#[test]
fn hazards_of_the_failed_region() {
    let model = &traces().faults;
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    open_hazards(model, &mut state);
    let text = screen(model, &state);
    assert!(text.contains("sub 2 r2 download"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn statistics() {
    let model = &traces().faults;
    let mut state = view(model);
    state.update(model, Action::ToggleStats);
    insta::assert_snapshot!(screen(model, &state));
}

/// The failed compute region's operations: those that ran up to the failure have their
/// times (the failing `hrx_sobel` included), in the failure's colour; those after it
/// never ran and say so.
#[test]
fn the_failed_regions_operations_after_the_failure_were_not_timed() {
    let model = &traces().faults;
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    let span = *model.span(state.selection.unwrap());
    assert_eq!(span.status(), SpanStatus::Failed);
    let timed = model.span_ops(&span).len();
    let region = model.region(span.region);
    assert!(timed > 0 && timed < region.nodes.len(), "{timed} timed");
    // The details pane the whole width, tall enough for every operation.
    state.list = None;
    let text = hrx_tui::render_to_string(model, &state, 120, 80);
    assert!(
        text.contains(&format!(
            "op times    {timed} of {} timed on the host",
            region.nodes.len()
        )),
        "{text}"
    );
    let sobel = text.lines().find(|l| l.contains("failed here")).unwrap();
    assert!(
        sobel.contains("hrx_sobel") && sobel.contains(" host at +"),
        "{sobel}"
    );
    let not_timed = text.lines().filter(|l| l.contains("  not timed")).count();
    assert_eq!(not_timed, region.nodes.len() - timed, "{text}");
}
