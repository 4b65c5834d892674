//! The `hazards` workload: graphs A, D, B, C (submissions 1 to 4) submitted back to back
//! over shared, partly overlapping byte ranges.

use crate::record::{open_hazards, screen, select, traces, view};
use hrx_tui::Action;

#[test]
fn timeline_fit() {
    let model = &traces().hazards;
    let state = view(model);
    insta::assert_snapshot!(screen(model, &state));
}

/// C's compute region (submission 4, region 0) waited on A and B: read-after-write,
/// write-after-read and write-after-write across submissions.
#[test]
fn hazards_across_submissions() {
    let model = &traces().hazards;
    let mut state = view(model);
    select(model, &mut state, 4, 0);
    open_hazards(model, &mut state);
    let text = screen(model, &state);
    for kind in ["RAW", "WAR", "WAW"] {
        assert!(text.contains(kind), "{kind} missing:\n{text}");
    }
    assert!(text.contains("cross-sub"), "{text}");
    insta::assert_snapshot!(text);
}

/// A's first region (submission 1, region 0): the regions that waited on it, in its own
/// graph and in the later submissions.
#[test]
fn hazards_released_by_a_producer() {
    let model = &traces().hazards;
    let mut state = view(model);
    select(model, &mut state, 1, 0);
    open_hazards(model, &mut state);
    let text = screen(model, &state);
    assert!(
        text.contains("in graph") && text.contains("cross-sub"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn statistics() {
    let model = &traces().hazards;
    let mut state = view(model);
    state.update(model, Action::ToggleStats);
    insta::assert_snapshot!(screen(model, &state));
}
