//! Tests of the report: its numbers and its text.

use super::text::{timing_cells, tolerance_text};
use super::*;

#[test]
fn tolerances_print_as_people_write_them() {
    let printed: Vec<String> = [0.0, 1e-6, 0.01, 0.5, 2.0, 2.5e-7]
        .into_iter()
        .map(tolerance_text)
        .collect();
    assert_eq!(printed, ["0", "1e-6", "0.01", "0.5", "2", "2.5e-7"]);
}

#[test]
fn one_sample_has_no_spread() {
    let stats = |samples| Durations {
        samples,
        median_ns: 7,
        min_ns: 7,
        p10_ns: 7,
        p90_ns: 9,
        p99_ns: 9,
        max_ns: 9,
        median_interval_ns: None,
    };
    let spread = |samples| {
        let cells = timing_cells(
            &[1],
            "0".into(),
            None,
            Some(stats(samples)),
            (None, None, false, false),
            Clock::Host,
        );
        cells[4].clone()
    };
    assert_eq!(spread(1), "1 sample");
    assert_eq!(spread(2), "7 ns..9 ns");
}

#[test]
fn a_ratio_reads_with_its_interval_and_an_unjudged_row_says_why() {
    let cells = |interval, too_few, regression| {
        timing_cells(
            &[1, 2, 3],
            "0".into(),
            None,
            None,
            (Some(1.5), interval, too_few, regression),
            Clock::Device,
        )
    };
    let judged = cells(Some((1.25, 1.75)), false, true);
    assert_eq!(
        (judged[5].as_str(), judged[6].as_str()),
        ("1.50x [1.25x..1.75x]", "SLOW")
    );
    // A row pooling three identical graphs names them as a run.
    assert_eq!(judged[0], "1-3");
    let few = cells(None, true, false);
    assert_eq!(
        (few[5].as_str(), few[6].as_str()),
        ("1.50x", "device, too few to judge")
    );
}

#[test]
fn a_divergence_reads_as_one_line() {
    let d = Divergence {
        runtime: 1,
        submission: 3,
        region: Some(1),
        region_label: Some("GPU Compute, native graph: hrx_sobel".into()),
        node: Some(2),
        use_index: Some(1),
        buffer: Some(12),
        range: Some((0, 307_200)),
        repeat: 0,
        repeats: 1,
        kind: DivergenceKind::Output {
            expected: 0xabc,
            replayed: 0xdef,
            max_abs_diff: None,
        },
        timing_dependent: None,
        show_runtime: false,
        of_repeats: 1,
    };
    assert_eq!(
        d.to_string(),
        "submission 3 region 1 (GPU Compute, native graph: hrx_sobel) node 2 use 1 (buffer 12) \
         bytes 0..307200: \
         digest 0x0000000000000def expected 0x0000000000000abc"
    );
}
