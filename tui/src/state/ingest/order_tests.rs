//! The model does not depend on the order records reach the file in. The recorder stages
//! records raw per thread and writes each thread's buffer on its own: a worker's timing and
//! outcome can precede the `Submit`, and a `Submit` can precede the `Prepared` (and the
//! graph's operations, kernels and buffers) when another thread prepared the graph.

use crate::state::synthetic::{PipelineSpec, pipeline};
use crate::state::{Action, Model, ViewState};
use hrx_capture::schema::Record;

/// The failing pipeline's records in file order.
pub(crate) fn in_order() -> Vec<Record> {
    pipeline(PipelineSpec {
        fail_at: Some(3),
        ..PipelineSpec::ops(24)
    })
    .collect()
}

/// What a worker thread records while a region runs or ends.
fn worker(record: &Record) -> bool {
    matches!(
        record,
        Record::RegionStarted(_)
            | Record::RegionTiming(_)
            | Record::RegionDone(_)
            | Record::SubmissionDone(_)
            | Record::OutputDigest(_)
            | Record::CrossWait(_)
            | Record::FaultInjected(_)
            | Record::Quarantine(_)
            | Record::Poison(_)
    )
}

/// What the thread that built and prepared the graph records.
fn definition(record: &Record) -> bool {
    matches!(
        record,
        Record::BufferCreated(_)
            | Record::KernelLoaded(_)
            | Record::GraphOp(_)
            | Record::Prepared(_)
    )
}

/// The session's first records, then every worker record, then the submits (and what else
/// the submitting thread records), then the definitions: each thread's records in its own
/// order, the threads' buffers written out in the worst order.
pub(crate) fn adverse(records: &[Record]) -> Vec<Record> {
    let (head, rest) = records.split_at(2);
    assert!(matches!(head[0], Record::SessionStart(_)), "{:?}", head[0]);
    let mut out = head.to_vec();
    out.extend(rest.iter().filter(|r| worker(r)).cloned());
    out.extend(
        rest.iter()
            .filter(|r| !worker(r) && !definition(r))
            .cloned(),
    );
    out.extend(rest.iter().filter(|r| definition(r)).cloned());
    out
}

/// Every screen a user reaches by `n` from the first event to the last, and by Tab
/// through the spans, with the details pane scrolled to its end.
fn screens(model: &Model) -> Vec<String> {
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

#[test]
fn records_in_the_adverse_order_build_the_same_model_and_details() {
    let records = in_order();
    let reordered = adverse(&records);
    assert_eq!(records.len(), reordered.len());
    let submit = reordered
        .iter()
        .position(|r| matches!(r, Record::Submit(_)));
    let prepared = reordered
        .iter()
        .position(|r| matches!(r, Record::Prepared(_)));
    let timing = reordered
        .iter()
        .position(|r| matches!(r, Record::RegionTiming(_)));
    assert!(timing < submit && submit < prepared, "the crafted order");

    let expected = Model::from_records(&records);
    let model = Model::from_records(&reordered);
    assert_eq!(model.info().unplaced_timings, 0);
    assert_eq!(
        (model.span_count(), model.untimed_span_count()),
        (expected.span_count(), expected.untimed_span_count())
    );
    assert_eq!(model.first_failure(), expected.first_failure());
    let (got, want) = (screens(&model), screens(&expected));
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "screen {i} differs");
    }
    assert!(
        want.iter()
            .any(|s| s.contains("prepared") && s.contains("hazards")),
        "the details' end was reached"
    );
}
