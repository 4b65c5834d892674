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
    };
    let spread = |samples| {
        let cells = timing_cells(
            1,
            "0".into(),
            None,
            Some(stats(samples)),
            None,
            false,
            Clock::Host,
        );
        cells[4].clone()
    };
    assert_eq!(spread(1), "1 sample");
    assert_eq!(spread(2), "7 ns..9 ns");
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
