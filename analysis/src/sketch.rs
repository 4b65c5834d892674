//! Duration distributions in bounded memory: exact while small, a log-bucketed histogram
//! past [`EXACT_LIMIT`] values.
//!
//! Percentiles use the nearest-rank method (p50 of `[1, 2, 3, 4]` is 2). Exact mode keeps
//! every value, so its percentiles are exact. Histogram mode splits every power of two into
//! [`SUB_BUCKETS`] equal buckets (values below `2 * SUB_BUCKETS` ns get a bucket each, so
//! they stay exact) and answers a bucket's midpoint, clamped to the observed min and max: a
//! percentile is then within [`RELATIVE_ERROR`] (1/256, 0.4%) of the exact nearest-rank
//! value. Count, total, mean, min and max are always exact. Memory: at most
//! `EXACT_LIMIT` values, then one entry per occupied bucket (at most 7,424).

use std::collections::BTreeMap;

/// Values kept exactly before switching to the histogram.
pub const EXACT_LIMIT: usize = 1024;

/// Buckets per power of two in histogram mode.
pub const SUB_BUCKETS: u64 = 128;

/// Bound on a histogram percentile's error relative to the exact value.
pub const RELATIVE_ERROR: f64 = 1.0 / (2.0 * SUB_BUCKETS as f64);

const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();

/// A distribution of durations (ns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sketch {
    count: u64,
    total: u64,
    min: u64,
    max: u64,
    exact: Vec<u64>,
    buckets: Option<BTreeMap<u32, u64>>,
}

/// The bucket of `v`: exact below `2 * SUB_BUCKETS`, else `SUB_BUCKETS` per octave.
fn bucket(v: u64) -> u32 {
    if v < 2 * SUB_BUCKETS {
        return v as u32;
    }
    let octave = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = octave - SUB_BITS;
    let sub = (v >> shift) as u32 - SUB_BUCKETS as u32; // 0..SUB_BUCKETS
    (shift + 1) * SUB_BUCKETS as u32 + sub
}

/// The smallest value and the width of bucket `b`.
fn bucket_range(b: u32) -> (u64, u64) {
    if u64::from(b) < 2 * SUB_BUCKETS {
        return (u64::from(b), 1);
    }
    let shift = b / SUB_BUCKETS as u32 - 1;
    let sub = u64::from(b % SUB_BUCKETS as u32);
    ((SUB_BUCKETS + sub) << shift, 1u64 << shift)
}

impl Sketch {
    /// An empty distribution.
    pub fn new() -> Sketch {
        Sketch::default()
    }

    /// Adds one value.
    pub fn add(&mut self, v: u64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        }
        self.count += 1;
        self.total = self.total.saturating_add(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match &mut self.buckets {
            Some(buckets) => *buckets.entry(bucket(v)).or_default() += 1,
            None => {
                self.exact.push(v);
                if self.exact.len() > EXACT_LIMIT {
                    self.switch_to_histogram();
                }
            }
        }
    }

    fn switch_to_histogram(&mut self) {
        let mut buckets = self.buckets.take().unwrap_or_default();
        for v in std::mem::take(&mut self.exact) {
            *buckets.entry(bucket(v)).or_default() += 1;
        }
        self.exact = Vec::new();
        self.buckets = Some(buckets);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Sketch) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        self.count += other.count;
        self.total = self.total.saturating_add(other.total);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        if self.buckets.is_none() && other.buckets.is_none() {
            self.exact.extend_from_slice(&other.exact);
            if self.exact.len() > EXACT_LIMIT {
                self.switch_to_histogram();
            }
            return;
        }
        self.switch_to_histogram();
        let buckets = self.buckets.get_or_insert_default();
        for &v in &other.exact {
            *buckets.entry(bucket(v)).or_default() += 1;
        }
        for (&b, &n) in other.buckets.iter().flatten() {
            *buckets.entry(b).or_default() += n;
        }
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum (saturating).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The smallest (0 when empty).
    pub fn min(&self) -> u64 {
        self.min
    }

    /// The largest (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Whether percentiles are exact (no more than [`EXACT_LIMIT`] values).
    pub fn is_exact(&self) -> bool {
        self.buckets.is_none()
    }

    /// The nearest-rank percentile `p` (0..=100); 0 when empty. Exact, or within
    /// [`RELATIVE_ERROR`] past [`EXACT_LIMIT`] values (see the module docs).
    pub fn percentile(&mut self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil() as u64;
        self.at_rank(rank)
    }

    /// A confidence interval of the population median: the order statistics of ranks
    /// [`median_ranks`] gives, so the median lies below the low end with probability at most
    /// 1.25%, above the high end likewise (97.5% in all; distribution-free). `None` with
    /// fewer than 7 values, too few for that confidence.
    pub fn median_interval(&mut self) -> Option<(u64, u64)> {
        let (low, high) = median_ranks(self.count)?;
        Some((self.at_rank(low), self.at_rank(high)))
    }

    /// The value of nearest rank `rank` (clamped to 1..=count); 0 when empty.
    fn at_rank(&mut self, rank: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = rank.clamp(1, self.count);
        match &self.buckets {
            None => {
                self.exact.sort_unstable();
                self.exact[rank as usize - 1]
            }
            Some(buckets) => {
                let mut seen = 0;
                for (&b, &n) in buckets {
                    seen += n;
                    if seen >= rank {
                        let (low, width) = bucket_range(b);
                        return (low + width / 2).clamp(self.min, self.max);
                    }
                }
                self.max
            }
        }
    }
}

/// The ranks `(j, n + 1 - j)` of the order statistics bounding a 97.5% confidence interval
/// of the median of `n` values: the largest `j` with `P(B < j) <= 1.25%` for `B` binomial
/// `(n, 1/2)` (the number of values below the median), exact up to 1,000 values and by the
/// normal approximation past; `None` below 7 values (`P(B = 0) = 2^-n` is over 1.25%).
pub fn median_ranks(n: u64) -> Option<(u64, u64)> {
    const TAIL: f64 = 0.0125;
    if n < 7 {
        return None;
    }
    let j = if n <= 1_000 {
        // P(B <= k) summed in log space from k = 0 (2^-n underflows past 1,074 values).
        let mut log_pmf = -(n as f64) * std::f64::consts::LN_2;
        let mut cdf = 0.0;
        let mut k = 0;
        loop {
            cdf += log_pmf.exp();
            if cdf > TAIL {
                break k; // P(B <= k-1) <= TAIL < P(B <= k): j = k
            }
            log_pmf += ((n - k) as f64 / (k + 1) as f64).ln();
            k += 1;
        }
    } else {
        // z at 98.75%.
        let half_width = 2.2414 * (n as f64).sqrt() / 2.0;
        (n as f64 / 2.0 - half_width).floor() as u64
    };
    let j = j.max(1);
    Some((j, n + 1 - j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ranks_hold_their_confidence_and_are_as_tight_as_it_allows() {
        assert_eq!(median_ranks(6), None);
        // 7 values: below the minimum with probability 1/128 (0.8%): the whole range.
        assert_eq!(median_ranks(7), Some((1, 7)));
        // P(B <= 1) for n = 10 is 11/1024 (1.07%); P(B <= 2) is 56/1024 (5.5%).
        assert_eq!(median_ranks(10), Some((2, 9)));
        for n in [7u64, 20, 100, 999, 1000] {
            let (j, k) = median_ranks(n).unwrap();
            assert_eq!(j + k, n + 1);
            // Exact tail below j and at j, by the same recurrence in plain space for small n.
            if n <= 60 {
                let pmf = |i: u64| {
                    (0..i).fold(1.0f64, |c, t| c * (n - t) as f64 / (t + 1) as f64)
                        / 2f64.powi(n as i32)
                };
                let below: f64 = (0..j).map(pmf).sum();
                assert!(below <= 0.0125, "n {n}: {below}");
                assert!(below + pmf(j) > 0.0125, "n {n}: j {j} is not the largest");
            }
        }
        // The normal approximation continues the exact ranks.
        let (exact, _) = median_ranks(1000).unwrap();
        let (approx, _) = median_ranks(1001).unwrap();
        assert!(exact.abs_diff(approx) <= 1, "{exact} {approx}");
        let mut s = Sketch::new();
        (1..=10).for_each(|v| s.add(v * 100));
        assert_eq!(s.median_interval(), Some((200, 900)));
    }

    fn exact_percentile(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    #[test]
    fn small_sets_are_exact() {
        let mut s = Sketch::new();
        assert_eq!(s.percentile(50.0), 0);
        for v in [4, 1, 3, 2] {
            s.add(v);
        }
        assert!(s.is_exact());
        assert_eq!((s.percentile(50.0), s.percentile(99.0)), (2, 4));
        assert_eq!((s.count(), s.total(), s.min(), s.max()), (4, 10, 1, 4));
    }

    #[test]
    fn buckets_cover_every_value_once() {
        for v in (0..5000u64).chain([u64::MAX, u64::MAX / 3, 1 << 40]) {
            let (low, width) = bucket_range(bucket(v));
            assert!(low <= v && v - low < width, "{v}: {low} + {width}");
            assert!(width as f64 <= low.max(1) as f64 * 2.0 * RELATIVE_ERROR + 1.0);
        }
    }

    #[test]
    fn large_sets_stay_within_the_stated_error() {
        let mut s = Sketch::new();
        let mut values = Vec::new();
        let mut x: u64 = 12345;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = 1_000 + (x >> 40) % 5_000_000;
            values.push(v);
            s.add(v);
        }
        assert!(!s.is_exact());
        values.sort_unstable();
        for p in [1.0, 50.0, 90.0, 99.0, 100.0] {
            let exact = exact_percentile(&values, p) as f64;
            let got = s.percentile(p) as f64;
            assert!(
                (got - exact).abs() <= exact * RELATIVE_ERROR,
                "p{p}: {got} vs {exact}"
            );
        }
        assert_eq!(s.total(), values.iter().sum::<u64>());
    }

    #[test]
    fn merging_matches_adding() {
        let (mut a, mut b, mut all) = (Sketch::new(), Sketch::new(), Sketch::new());
        for v in 0..3000u64 {
            let v = v * 37 % 10_007;
            if v % 3 == 0 { &mut a } else { &mut b }.add(v);
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.percentile(99.0), all.percentile(99.0));
        assert_eq!(a.percentile(50.0), all.percentile(50.0));
    }
}
