//! The `pipeline` workload: 6 frames, 3 in flight, each frame a submission of four
//! regions (GPU Upload, GPU Compute, GPU Download, NPU).

use crate::record::{act, open_hazards, screen, select, traces, view};
use hrx_tui::Action;

/// The ruler line (the one starting with ` time`).
fn ruler(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with(" time"))
        .expect("a ruler line")
}

#[test]
fn timeline_fit() {
    let model = &traces().pipeline;
    assert_eq!(model.span_count(), 24);
    let state = view(model);
    let text = screen(model, &state);
    for lane in ["GPU Upload", "GPU Compute", "GPU Download", "NPU"] {
        assert!(text.contains(lane), "{lane} lane missing:\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn timeline_zoomed_in() {
    let model = &traces().pipeline;
    let mut state = view(model);
    let fit = screen(model, &state);
    select(model, &mut state, 2, 1);
    act(
        model,
        &mut state,
        &[Action::ZoomIn, Action::ZoomIn, Action::ZoomIn],
    );
    let text = screen(model, &state);
    assert_ne!(ruler(&fit), ruler(&text), "zooming changes the ruler");
    insta::assert_snapshot!(text);
}

#[test]
fn timeline_zoomed_to_one_span() {
    let model = &traces().pipeline;
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    state.update(model, Action::ZoomToSelection);
    let span = model.span(state.selection.unwrap());
    assert!(state.window.start_ns < span.start_ns && span.end_ns < state.window.end_ns);
    insta::assert_snapshot!(screen(model, &state));
}

#[test]
fn details_of_a_compute_span() {
    let model = &traces().pipeline;
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    let text = screen(model, &state);
    for kernel in ["hrx_rgb_to_gray", "hrx_sobel", "hrx_histogram256"] {
        assert!(text.contains(kernel), "{kernel} missing:\n{text}");
    }
    insta::assert_snapshot!(text);
}

/// The software device times every operation (format 1.0's `OpTiming`): `o` draws the
/// compute graph's six operations under its bar, in the order they ran, and the details
/// list each one's time.
#[test]
fn operations_of_the_compute_graph() {
    let model = &traces().pipeline;
    assert!(model.has_op_timings());
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    act(
        model,
        &mut state,
        &[Action::ZoomToSelection, Action::ToggleOps],
    );
    let span = *model.span(state.selection.unwrap());
    assert_eq!(model.span_ops(&span).len(), 6);
    let text = screen(model, &state);
    let compute = state
        .layout(model)
        .lanes
        .iter()
        .find(|l| model.lane(l.lane).queue == hrx_capture::schema::Queue::GpuCompute)
        .and_then(|l| l.ops)
        .expect("an operations row under GPU Compute");
    let ops = text.lines().nth(usize::from(compute.y)).unwrap();
    let at = |name: &str| ops.find(name).unwrap_or_else(|| panic!("{name}: {ops}"));
    assert!(at("[hrx_rgb_to") < at("[hrx_blur_h") && at("[hrx_blur_h") < at("[hrx_sobel"));
    assert!(
        text.contains("op times    6 of 6 timed on the host"),
        "{text}"
    );
    assert!(text.contains("#4 hrx_sobel  "), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn hazards_within_the_graph() {
    let model = &traces().pipeline;
    let mut state = view(model);
    select(model, &mut state, 2, 1);
    open_hazards(model, &mut state);
    let text = screen(model, &state);
    assert!(text.contains("RAW") && text.contains("in graph"), "{text}");
    assert!(
        !text.contains("cross-sub"),
        "frame contexts share no buffer:\n{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn statistics() {
    let model = &traces().pipeline;
    let mut state = view(model);
    state.update(model, Action::ToggleStats);
    insta::assert_snapshot!(screen(model, &state));
}
