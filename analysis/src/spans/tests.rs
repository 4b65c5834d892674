use super::*;
use crate::scan::scan_records;
use crate::synthetic::{PipelineSpec, pipeline};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Spans on three lanes, pushed out of start order, some zero-length, some overlapping.
fn random_spans(seed: u64, n: usize) -> Vec<(LaneRef, StoredSpan)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let start = 1_000 + rng.below(5_000_000);
            let duration = match rng.below(10) {
                0 => 0,
                1 => rng.below(400_000),
                _ => rng.below(5_000),
            };
            let lane = LaneRef(rng.below(3) as u32 * 2); // lanes 0, 2, 4: 1 and 3 stay empty
            let span = StoredSpan {
                start_ns: start,
                end_ns: start + duration,
                submission: SubmissionIndex(i as u64),
                region: RegionRef(rng.below(7) as u32),
                has_device: rng.below(2) == 0,
            };
            (lane, span)
        })
        .collect()
}

fn store_of(spans: &[(LaneRef, StoredSpan)]) -> SpanStore {
    let mut builder = SpanStoreBuilder::new();
    for &(lane, span) in spans {
        builder.push(lane, span);
    }
    builder.finish().expect("temporary files")
}

fn covered(spans: &[(LaneRef, StoredSpan)], lane: LaneRef, lo: u64, hi: u64) -> u64 {
    spans
        .iter()
        .filter(|(l, _)| *l == lane)
        .map(|(_, s)| s.end_ns.min(hi).saturating_sub(s.start_ns.max(lo)))
        .sum()
}

#[test]
fn every_lane_is_stored_whole_and_in_start_order() {
    let spans = random_spans(7, 20_000);
    let store = store_of(&spans);
    assert_eq!(store.lanes(), 5);
    for lane in (0..5).map(LaneRef) {
        let mut expected: Vec<StoredSpan> = spans
            .iter()
            .filter(|(l, _)| *l == lane)
            .map(|(_, s)| *s)
            .collect();
        let stored: Vec<StoredSpan> = (0..store.len(lane))
            .map(|i| store.get(lane, i).expect("in range"))
            .collect();
        assert!(stored.windows(2).all(|w| w[0].start_ns <= w[1].start_ns));
        expected.sort_by_key(|s| (s.start_ns, s.end_ns, s.submission.0));
        let mut sorted = stored.clone();
        sorted.sort_by_key(|s| (s.start_ns, s.end_ns, s.submission.0));
        assert_eq!(sorted, expected, "lane {lane:?}");
        assert_eq!(store.get(lane, store.len(lane)), None);
    }
    assert!(store.is_empty(LaneRef(1)) && store.is_empty(LaneRef(9)));
}

#[test]
fn the_visible_window_holds_exactly_the_overlapping_spans() {
    let spans = random_spans(11, 20_000);
    let store = store_of(&spans);
    let mut rng = Rng(3);
    for _ in 0..200 {
        let lane = LaneRef(rng.below(3) as u32 * 2);
        let from = rng.below(5_200_000);
        let to = from + 1 + rng.below(300_000);
        let mut got: Vec<StoredSpan> = store.overlapping(lane, from, to).map(|(_, s)| s).collect();
        let mut want: Vec<StoredSpan> = spans
            .iter()
            .filter(|(l, s)| {
                *l == lane && s.start_ns < to && (s.end_ns > from || s.start_ns >= from)
            })
            .map(|(_, s)| *s)
            .collect();
        got.sort_by_key(|s| s.submission.0);
        want.sort_by_key(|s| s.submission.0);
        assert_eq!(got, want, "lane {lane:?} [{from}, {to})");
    }
    // The reported index is the span's place in start order.
    let (i, span) = store
        .overlapping(LaneRef(0), 2_000_000, 2_100_000)
        .next()
        .unwrap();
    assert_eq!(store.get(LaneRef(0), i), Some(span));
}

#[test]
fn summaries_give_the_exact_coverage_of_bucket_aligned_columns() {
    let spans = random_spans(5, 30_000);
    let store = store_of(&spans);
    let bucket = store.bucket_ns();
    let first = spans.iter().map(|(_, s)| s.start_ns).min().unwrap();
    assert!(store.origin_ns() <= first && first - store.origin_ns() < bucket);
    assert!(bucket.is_power_of_two());
    for lane in [LaneRef(0), LaneRef(2), LaneRef(4)] {
        // Columns of 1, 4 and 64 buckets: levels 0, 2 and 6.
        for per_column in [1u64, 4, 64] {
            let columns = 37;
            let from = store.origin_ns() + 3 * per_column * bucket;
            let to = from + columns as u64 * per_column * bucket;
            let got = store.coverage(lane, from, to, columns);
            for (c, &ns) in got.iter().enumerate() {
                let lo = from + c as u64 * per_column * bucket;
                let want = covered(&spans, lane, lo, lo + per_column * bucket);
                assert_eq!(ns.round() as u64, want, "lane {lane:?} column {c}");
            }
        }
    }
}

#[test]
fn unaligned_and_narrow_columns_stay_within_a_bucket_of_the_truth() {
    let spans = random_spans(9, 30_000);
    let store = store_of(&spans);
    let bucket = store.bucket_ns() as f64;
    let mut rng = Rng(17);
    for _ in 0..50 {
        let lane = LaneRef(rng.below(3) as u32 * 2);
        let from = rng.below(4_000_000);
        let to = from + 1_000 + rng.below(1_000_000);
        let columns = 1 + rng.below(120) as usize;
        let got = store.coverage(lane, from, to, columns);
        let column = (to - from) as f64 / columns as f64;
        let total: f64 = got.iter().sum();
        let want = covered(&spans, lane, from, to) as f64;
        // Narrow columns read the spans: exact. Wider ones read buckets of the widest
        // power-of-two no wider than a column, and only the two buckets at the window's
        // ends are split by assumption, so the error is at most what those two cover.
        let slack = if column < bucket {
            1.0
        } else {
            let mut width = store.bucket_ns();
            while (width * 2) as f64 <= column {
                width *= 2;
            }
            let bucket_of = |t: u64| {
                let lo = store.origin_ns() + (t - store.origin_ns()) / width * width;
                covered(&spans, lane, lo, lo + width)
            };
            (bucket_of(from) + bucket_of(to - 1)) as f64 + 1.0
        };
        assert!(
            (total - want).abs() <= slack,
            "{total} vs {want} (slack {slack})"
        );
    }
}

#[test]
fn a_pass_over_a_trace_stores_every_joined_span() {
    let records: Vec<_> = pipeline(PipelineSpec::ops(400)).collect();
    let mut builder = SpanStoreBuilder::new();
    let summary = scan_records(&records, &mut builder);
    let store = builder.finish().expect("temporary files");
    let timings = records
        .iter()
        .filter(|r| matches!(r, hrx_capture::Record::RegionTiming(_)))
        .count();
    let stored: usize = (0..store.lanes() as u32)
        .map(|l| store.len(LaneRef(l)))
        .sum();
    assert_eq!(summary.unplaced_timings, 0);
    assert_eq!(stored, timings);
    for l in 0..store.lanes() as u32 {
        let lane = LaneRef(l);
        let busy: u64 = (0..store.len(lane))
            .map(|i| store.get(lane, i).unwrap())
            .map(|s| s.end_ns - s.start_ns)
            .sum();
        let end = (0..store.len(lane))
            .map(|i| store.get(lane, i).unwrap().end_ns)
            .max()
            .unwrap_or(0);
        let whole = store.coverage(lane, 0, end + 1, 1)[0];
        assert!(
            (whole - busy as f64).abs() <= 1.0,
            "lane {l}: {whole} vs {busy}"
        );
        for i in 0..store.len(lane) {
            let s = store.get(lane, i).unwrap();
            assert_eq!(summary.index.region(s.region).lane, lane);
        }
    }
}

#[test]
fn a_file_that_is_not_a_trace_is_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.hrxt");
    std::fs::write(&path, b"not a trace at all, just text").unwrap();
    let error = SpanStore::build(&path).unwrap_err();
    assert!(matches!(error, SpanStoreError::Read(_)), "{error:?}");
    assert!(!error.to_string().is_empty());
}
