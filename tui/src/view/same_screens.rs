//! Models built by different paths draw the same screens: `hrx-analysis`'s timeline tests
//! show that their tables are the same; these walk the view over them, the details pane
//! (prepared graphs, regions, operations) included.

use crate::state::cache::{CacheOptions, open};
use crate::state::synthetic::PipelineSpec;
use crate::state::{Action, Model, ViewState};
use hrx_analysis::timeline::fixtures::{adverse, in_order, trace_file};
use hrx_capture::schema::Record;

/// Screens of a walk through the model: the whole trace, zoomed in with a span selected,
/// its hazards and producer, failure events, the statistics.
fn walk(model: &Model) -> Vec<String> {
    let mut state = ViewState::new(model, 120, 40);
    let mut out = vec![crate::render_to_string(model, &state, 120, 40)];
    for action in [
        Action::ZoomIn,
        Action::ZoomIn,
        Action::SelectNext,
        Action::SelectNext,
        Action::ToggleHazards,
        Action::JumpToProducer,
        Action::NextEvent,
        Action::NextEvent,
        Action::ToggleEvents,
        Action::ToggleStats,
    ] {
        state.update(model, action);
        out.push(crate::render_to_string(model, &state, 120, 40));
    }
    out
}

/// Every screen a user reaches by `n` from the first event to the last, and by Tab
/// through the spans, with the details pane scrolled to its end.
fn details(model: &Model) -> Vec<String> {
    let mut state = ViewState::new(model, 120, 40);
    let mut out = vec![crate::render_to_string(model, &state, 120, 40)];
    for action in
        std::iter::repeat_n(Action::NextEvent, 12).chain(std::iter::repeat_n(Action::Tab, 30))
    {
        state.update(model, action);
        out.push(crate::render_to_string(model, &state, 120, 40));
        let mut scrolled = state.clone();
        let (_, limit) = crate::details_scroll_limit(model, &scrolled);
        scrolled.update(model, Action::ScrollDetails { lines: 100, limit });
        out.push(crate::render_to_string(model, &scrolled, 120, 40));
    }
    out
}

/// A model the view cache streamed from the trace (the streaming builder) and reopened by
/// mapping its columns draws as the one read from the trace whole, the first time and
/// when reopened.
#[test]
fn a_cached_model_draws_as_the_one_read_from_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_file(
        dir.path(),
        PipelineSpec {
            busy_every: Some(7),
            fail_at: Some(150),
            ..PipelineSpec::ops(800)
        },
    );
    let read = crate::load(&trace).unwrap();
    assert!(read.first_failure().is_some());
    let options = CacheOptions {
        dir: Some(dir.path().join("cache")),
        min_bytes: 0,
    };
    let unread = || -> Result<Model, ()> { panic!("the trace was read into memory whole") };
    let streamed = open(&trace, &options, None, unread).unwrap();
    assert_eq!(streamed.submissions().len(), read.submissions().len());
    assert_eq!(walk(&streamed), walk(&read));
    let reopened = open(&trace, &options, None, unread).unwrap();
    assert_eq!(walk(&reopened), walk(&read));
}

/// Records in the worst order the recorder's per-thread buffers reach the file in build
/// a model whose every screen and details pane is that of the file order.
#[test]
fn records_in_the_adverse_order_draw_the_same_screens_and_details() {
    let records: Vec<Record> = in_order();
    let expected = Model::from_records(&records);
    let model = Model::from_records(&adverse(&records));
    let (got, want) = (details(&model), details(&expected));
    assert_eq!(got.len(), want.len());
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "screen {i} differs");
    }
    assert!(
        want.iter()
            .any(|s| s.contains("prepared") && s.contains("hazards")),
        "the details' end was reached"
    );
}
