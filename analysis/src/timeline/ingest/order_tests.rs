//! The model does not depend on the order records reach the file in. The recorder stages
//! records raw per thread and writes each thread's buffer on its own: a worker's timing and
//! outcome can precede the `Submit`, and a `Submit` can precede the `Prepared` (and the
//! graph's operations, kernels and buffers) when another thread prepared the graph.

use crate::timeline::Model;
use crate::timeline::fixtures::{adverse, assert_same, in_order};
use hrx_capture::schema::Record;

#[test]
fn records_in_the_adverse_order_build_the_same_model() {
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
    assert_same(&model, &expected);
}
