//! The one comparison engine of `hrx-trace diff` (two recordings) and `hrx-trace replay` (a
//! recording and its re-execution): which item of one side pairs with which of the other,
//! how a pair is judged, and the verdict the judgements give. Each verb reads its two sides
//! its own way (diff streams two files; replay streams a trace and what its replay runtimes
//! recorded, chunk by chunk), then hands every pair to the rules here.
//!
//! # The one rule of each kind
//!
//! - **Kernels** pair by label ([`crate::matching`]): labels, not kernel ids, survive a
//!   rebuild. Their durations are judged by the timing rule.
//! - **Regions** pair by [`crate::matching::RegionKey`] (runtime rank, prepared graph rank,
//!   region index): ranks, not ids, which differ between runs that shared a process. A
//!   replay re-executes the captured plan, so its ranks are the capture's. Their durations
//!   are judged by the timing rule.
//! - **Outputs** pair by [`crate::diff::OutputKey`], for both verbs: runtime and graph rank,
//!   the submission's index among its graph's submissions, the operation and use writing
//!   the range ([`crate::diff::Place::of`]), and the range: never by buffer id. The digests
//!   of one key are judged by [`digests`]: equal in order, or as a multiset (digests of
//!   regions finishing at once may reach the file in either order), is a match. Otherwise
//!   the first differing pair decides: with a tolerance and both contents, as little-endian
//!   `f32`s ([`within`]: absolute below magnitude 1, relative above). A key on one side only
//!   is missing or extra, unless the caller knows the submission did not run as recorded
//!   (its status diverged, or its outcome is unknown): then it is [`DigestMatch::NotRun`],
//!   since the status says so.
//! - **Outcomes** pair by submission, keyed as outputs are, and are judged by [`outcomes`]:
//!   a submission's outcome (ok, failed, cancelled: [`crate::Outcome`]) on both sides; one
//!   without a recorded outcome on either side (a trace cut short) is
//!   [`OutcomeMatch::Unknown`]: not compared, and not a change.
//! - **Timings** of a paired kernel, region or operation are judged by [`timing`] on their
//!   [`Durations`] (one summary of samples for both verbs, from a [`Sketch`]: nearest-rank
//!   percentiles): the ratio is the new median over the base median (none when the base
//!   median is 0 or the two sides' times are not comparable, [`timings_comparable`]), with a
//!   confidence interval: each side's median has a distribution-free 97.5% interval from
//!   its order statistics ([`Sketch::median_interval`], binomial ranks), and the ratio's
//!   interval runs from the new low end over the base high end to the reverse (at least 95%
//!   together). The pair is **slow** when a maximum slowdown is set ([`Slowdown`]), the
//!   whole interval lies past it and past the new side's own run-to-run spread ([`spread`]:
//!   a replay measures it between the halves of its repeats; 1 for `diff`, which has one run
//!   a side), and the medians differ by more than the floor (timer and scheduling noise of
//!   short items). A side with fewer than 7 samples has no interval: the pair is reported
//!   as **too few to judge**, never slow.
//! - **Verdict** ([`Verdict::of`]): a regression when anything regressed (a changed
//!   outcome, a differing digest, a slow kernel or region, a side that did none of the
//!   work); *different* when only one-sided items remain (kernels, regions, outputs or
//!   submissions present on one side: another program or run length, not a slower one);
//!   *same* otherwise. Comparing nothing is no match: callers refuse it before a verdict. A
//!   replay re-executes the captured submissions, so an output one side lacks in a
//!   submission both ran is the same work writing something else: a regression, not a
//!   one-sided item.
//!
//! The timing rule reads two [`Centre`]s (median, its interval, p99) and the spread, from
//! sketches on both verbs' sides, so it holds in bounded memory on traces of any length.

use crate::sketch::Sketch;
use crate::stats::KernelStats;
use serde::{Deserialize, Serialize};

/// A submission's outcomes compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeMatch {
    /// One side has no recorded outcome: not compared.
    Unknown,
    /// Both sides agree.
    Same,
    /// The outcome changed: a regression.
    Changed,
}

/// Compares one submission's outcomes (`None`: not recorded).
pub fn outcomes<T: PartialEq>(base: Option<T>, new: Option<T>) -> OutcomeMatch {
    match (base, new) {
        (Some(b), Some(n)) if b == n => OutcomeMatch::Same,
        (Some(_), Some(_)) => OutcomeMatch::Changed,
        _ => OutcomeMatch::Unknown,
    }
}

/// One output digest, with the bytes it digests where the trace holds them.
#[derive(Clone, Copy, Debug)]
pub struct Digest<'a> {
    /// xxh3-64 of the bytes.
    pub xxh3: u64,
    /// The bytes, when captured.
    pub contents: Option<&'a [u8]>,
}

/// The digests of one key compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DigestMatch {
    /// Equal, in order or as a multiset.
    Match,
    /// Different bytes, every `f32` within the tolerance; the largest absolute difference.
    WithinTolerance {
        /// Largest absolute difference of any element.
        max_abs_diff: f64,
    },
    /// The first differing pair: a regression.
    Differs {
        /// The base side's digest.
        base: u64,
        /// The new side's digest.
        new: u64,
        /// Largest absolute difference, when compared as `f32`s.
        max_abs_diff: Option<f64>,
    },
    /// The base side has (more) digests the new side lacks.
    Missing {
        /// The first digest the new side lacks.
        base: u64,
    },
    /// The new side has (more) digests the base side lacks.
    Extra {
        /// The first digest the base side lacks.
        new: u64,
    },
    /// One-sided, but the submission did not run as recorded: not compared.
    NotRun,
}

impl DigestMatch {
    /// Whether the key counts as compared (everything but [`DigestMatch::NotRun`]).
    pub fn compared(self) -> bool {
        self != DigestMatch::NotRun
    }

    /// Whether the key matched (exactly or within the tolerance).
    pub fn matched(self) -> bool {
        matches!(
            self,
            DigestMatch::Match | DigestMatch::WithinTolerance { .. }
        )
    }
}

/// Compares `a` and `b` as little-endian `f32` arrays: the largest absolute difference and
/// whether every element is within `tolerance` (absolute below magnitude 1, relative
/// above). `None` when they are not arrays of the same length.
pub fn within(a: &[u8], b: &[u8], tolerance: f64) -> Option<(f64, bool)> {
    if a.len() != b.len() || !a.len().is_multiple_of(4) {
        return None;
    }
    let mut max = 0.0f64;
    let mut ok = true;
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let x = f32::from_le_bytes([x[0], x[1], x[2], x[3]]) as f64;
        let y = f32::from_le_bytes([y[0], y[1], y[2], y[3]]) as f64;
        if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) {
            continue;
        }
        let diff = (x - y).abs();
        let diff = if diff.is_nan() { f64::INFINITY } else { diff };
        max = max.max(diff);
        if diff > tolerance * x.abs().max(y.abs()).max(1.0) {
            ok = false;
        }
    }
    Some((max, ok))
}

/// Compares the digests one key holds on each side (see the module docs); `not_run`: the
/// submission did not run as recorded, so one-sided digests are not evidence.
pub fn digests(
    base: &[Digest<'_>],
    new: &[Digest<'_>],
    tolerance: Option<f64>,
    not_run: bool,
) -> DigestMatch {
    let one_sided = match (base.first(), new.first()) {
        (Some(b), None) => Some(DigestMatch::Missing { base: b.xxh3 }),
        (None, Some(n)) => Some(DigestMatch::Extra { new: n.xxh3 }),
        (None, None) => return DigestMatch::Match,
        _ => None,
    };
    if let Some(one_sided) = one_sided {
        return if not_run {
            DigestMatch::NotRun
        } else {
            one_sided
        };
    }
    let sorted = |d: &[Digest<'_>]| {
        let mut v: Vec<u64> = d.iter().map(|d| d.xxh3).collect();
        v.sort_unstable();
        v
    };
    if base.len() == new.len() && sorted(base) == sorted(new) {
        return DigestMatch::Match;
    }
    let mut max_diff: Option<f64> = None;
    for (b, n) in base.iter().zip(new) {
        if b.xxh3 == n.xxh3 {
            continue;
        }
        match tolerance.and_then(|t| within(b.contents?, n.contents?, t)) {
            Some((diff, true)) => max_diff = Some(max_diff.unwrap_or(0.0).max(diff)),
            float => {
                return DigestMatch::Differs {
                    base: b.xxh3,
                    new: n.xxh3,
                    max_abs_diff: float.map(|(diff, _)| diff),
                };
            }
        }
    }
    if base.len() != new.len() && !not_run {
        let n = base.len().min(new.len());
        return if base.len() > n {
            DigestMatch::Missing { base: base[n].xxh3 }
        } else {
            DigestMatch::Extra { new: new[n].xxh3 }
        };
    }
    match max_diff {
        Some(max_abs_diff) => DigestMatch::WithinTolerance { max_abs_diff },
        None => DigestMatch::Match,
    }
}

/// The verdict of a comparison (`same`, `different` or `regression` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing regressed and nothing is one-sided.
    Same,
    /// Nothing regressed; some items are on one side only.
    Different,
    /// Something regressed.
    Regression,
}

impl Verdict {
    /// The verdict of `regressions` regressed items and `one_sided` items on one side only.
    pub fn of(regressions: usize, one_sided: usize) -> Verdict {
        if regressions > 0 {
            Verdict::Regression
        } else if one_sided > 0 {
            Verdict::Different
        } else {
            Verdict::Same
        }
    }

    /// `same`, `different` or `regression`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Different => "different",
            Verdict::Regression => "regression",
        }
    }

    /// The process exit code: 1 for a regression, else 0.
    pub fn exit_code(self) -> u8 {
        u8::from(self == Verdict::Regression)
    }
}

/// A distribution of one item's durations in ns, as both verbs summarise it and the timing
/// rule reads it (nearest-rank percentiles of a [`Sketch`]: exact up to
/// [`crate::sketch::EXACT_LIMIT`] samples, within [`crate::sketch::RELATIVE_ERROR`] past).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Durations {
    /// Number of samples.
    pub samples: usize,
    /// Median (nearest rank: the lower middle value of an even count).
    pub median_ns: u64,
    /// Minimum.
    pub min_ns: u64,
    /// 10th percentile.
    pub p10_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// A 97.5% confidence interval of the median ([`Sketch::median_interval`]); `None` with
    /// fewer than 7 samples.
    #[serde(default)]
    pub median_interval_ns: Option<(u64, u64)>,
}

impl Durations {
    /// The distribution of `sketch`; `None` when it is empty.
    pub fn of_sketch(sketch: &mut Sketch) -> Option<Durations> {
        (sketch.count() > 0).then(|| Durations {
            samples: sketch.count() as usize,
            median_ns: sketch.percentile(50.0),
            min_ns: sketch.min(),
            p10_ns: sketch.percentile(10.0),
            p90_ns: sketch.percentile(90.0),
            p99_ns: sketch.percentile(99.0),
            max_ns: sketch.max(),
            median_interval_ns: sketch.median_interval(),
        })
    }

    /// The distribution of `samples` (ns); `None` when empty.
    pub fn of(samples: impl IntoIterator<Item = u64>) -> Option<Durations> {
        let mut sketch = Sketch::new();
        samples.into_iter().for_each(|v| sketch.add(v));
        Durations::of_sketch(&mut sketch)
    }
}

/// What the timing rule reads of one side: its median, the median's confidence interval
/// and its p99.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Centre {
    /// Median in ns.
    pub median_ns: u64,
    /// A 97.5% confidence interval of the median in ns ([`Sketch::median_interval`]);
    /// `None`: too few samples to judge (fewer than 7).
    pub interval_ns: Option<(u64, u64)>,
    /// 99th percentile in ns: the top of its spread (shown, not judged).
    pub p99_ns: u64,
}

impl From<&Durations> for Centre {
    fn from(d: &Durations) -> Centre {
        Centre {
            median_ns: d.median_ns,
            interval_ns: d.median_interval_ns,
            p99_ns: d.p99_ns,
        }
    }
}

impl From<&crate::stats::AnnotationStats> for Centre {
    fn from(a: &crate::stats::AnnotationStats) -> Centre {
        Centre {
            median_ns: a.p50_ns,
            interval_ns: a.p50_interval_ns,
            p99_ns: a.p99_ns,
        }
    }
}

impl From<&KernelStats> for Centre {
    fn from(k: &KernelStats) -> Centre {
        Centre {
            median_ns: k.p50_ns,
            interval_ns: k.p50_interval_ns,
            p99_ns: k.p99_ns,
        }
    }
}

/// When a pair's timing is slow (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slowdown {
    /// The ratio of medians past which a pair may be slow; `None`: timings are reported,
    /// never judged.
    pub max_ratio: Option<f64>,
    /// Differences of medians up to this many ns are never slow.
    pub floor_ns: u64,
}

/// One pair's timing judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimingMatch {
    /// The new median over the base median.
    pub ratio: Option<f64>,
    /// A confidence interval of that ratio (at least 95%: the new median's low end over the
    /// base's high end, and the reverse); `None` with too few samples on either side.
    pub interval: Option<(f64, f64)>,
    /// The spread the new side's own samples show ([`spread`]); 1 when not measured.
    pub spread: f64,
    /// Whether the pair is slow: a regression.
    pub slow: bool,
    /// Whether the pair could not be judged for too few samples (fewer than 7 on a side)
    /// while a maximum slowdown was set.
    pub too_few: bool,
    /// Whether the pair could not be judged, while a maximum slowdown was set, for an
    /// interval that holds 1 and spans more than [`TOO_WIDE`] ([`too_spread`]).
    pub too_spread: bool,
}

/// An interval whose ends differ by more than this factor says nothing about the ratio: the
/// samples of a side differ by an order of magnitude (unlike work under one name, such as
/// two sizes of download in a frame, a cold first run among warm ones, or runs on a loaded
/// host, some waiting for a CPU).
pub const TOO_WIDE: f64 = 10.0;

/// Whether a ratio's confidence `interval` holds 1 and its ends differ by more than
/// [`TOO_WIDE`]: the pair is not judged, and `diff` and `replay` say so (`too spread to
/// judge`) rather than count it as not slow. A wide interval wholly on one side of 1 still
/// says faster or slower.
pub fn too_spread(interval: Option<(f64, f64)>) -> bool {
    interval.is_some_and(|(lo, hi)| lo < 1.0 && 1.0 < hi && hi > lo * TOO_WIDE)
}

impl Default for TimingMatch {
    /// Not judged: no ratio, a spread of 1.
    fn default() -> TimingMatch {
        TimingMatch {
            ratio: None,
            interval: None,
            spread: 1.0,
            slow: false,
            too_few: false,
            too_spread: false,
        }
    }
}

/// Judges one pair's timing (see the module docs); `comparable`: whether the two sides'
/// times can be compared at all ([`timings_comparable`]); `spread`: the new side's own
/// run-to-run spread ([`spread`]), 1 where not measured.
pub fn timing(
    base: Option<Centre>,
    new: Option<Centre>,
    rule: &Slowdown,
    comparable: bool,
    spread: f64,
) -> TimingMatch {
    let (Some(b), Some(n), true) = (base, new, comparable) else {
        return TimingMatch::default();
    };
    if b.median_ns == 0 {
        return TimingMatch::default();
    }
    let ratio = n.median_ns as f64 / b.median_ns as f64;
    let interval = b
        .interval_ns
        .zip(n.interval_ns)
        .map(|((b_lo, b_hi), (n_lo, n_hi))| {
            let over = |a: u64, b: u64| {
                if b == 0 {
                    f64::INFINITY
                } else {
                    a as f64 / b as f64
                }
            };
            (over(n_lo, b_hi), over(n_hi, b_lo))
        });
    let spread = if spread.is_finite() {
        spread.max(1.0)
    } else {
        1.0
    };
    let slow = match (rule.max_ratio, interval) {
        (Some(max), Some((low, _))) => {
            past_ratio(low, max, spread) && n.median_ns.saturating_sub(b.median_ns) > rule.floor_ns
        }
        _ => false,
    };
    TimingMatch {
        ratio: Some(ratio),
        interval,
        spread,
        slow,
        too_few: rule.max_ratio.is_some() && interval.is_none(),
        too_spread: rule.max_ratio.is_some() && !slow && too_spread(interval),
    }
}

/// Whether a ratio's interval, whose low end is `low`, lies wholly past the maximum slowdown
/// `max` and the new side's run-to-run `spread`: the first half of [`timing`]'s slow rule
/// (the second: the medians grew by more than the floor).
pub fn past_ratio(low: f64, max: f64, spread: f64) -> bool {
    low > max.max(spread)
}

/// The run-to-run spread of one side: the larger over the smaller median of the samples of
/// its first and its second half of runs (a replay's repeats); 1 when a half has fewer than
/// 7 samples (one repeat). A replay measures it on its own samples: a change it shows
/// between two halves of one unchanged run is no regression.
pub fn spread(first: &mut Sketch, second: &mut Sketch) -> f64 {
    if first.count() < 7 || second.count() < 7 {
        return 1.0;
    }
    let (a, b) = (first.percentile(50.0), second.percentile(50.0));
    let (low, high) = (a.min(b), a.max(b));
    if low == 0 {
        1.0
    } else {
        high as f64 / low as f64
    }
}

/// Whether times recorded on backend `base` and on backend `new` (names as the device
/// reports them) are comparable: the same backend, or one of them unknown (nothing ran, or
/// a trace that does not name its backend: no evidence either way).
pub fn timings_comparable(base: &str, new: &str) -> bool {
    base.is_empty() || new.is_empty() || base == new
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(xxh3: u64) -> Digest<'static> {
        Digest {
            xxh3,
            contents: None,
        }
    }

    #[test]
    fn digests_match_in_order_or_as_a_multiset() {
        assert_eq!(
            digests(&[d(1), d(2)], &[d(2), d(1)], None, false),
            DigestMatch::Match
        );
        assert_eq!(
            digests(&[d(1), d(2)], &[d(1), d(3)], None, false),
            DigestMatch::Differs {
                base: 2,
                new: 3,
                max_abs_diff: None
            }
        );
    }

    #[test]
    fn one_sided_digests_are_missing_or_extra_unless_the_submission_did_not_run() {
        assert_eq!(
            digests(&[d(1)], &[], None, false),
            DigestMatch::Missing { base: 1 }
        );
        assert_eq!(
            digests(&[], &[d(2)], None, false),
            DigestMatch::Extra { new: 2 }
        );
        assert_eq!(digests(&[d(1)], &[], None, true), DigestMatch::NotRun);
        assert_eq!(
            digests(&[d(1), d(2)], &[d(1)], None, false),
            DigestMatch::Missing { base: 2 }
        );
    }

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn floats_compare_absolutely_below_one_and_relatively_above() {
        let a = f32s(&[0.5, 1000.0, f32::NAN]);
        let b = f32s(&[0.5001, 1000.05, f32::NAN]);
        let (max, ok) = within(&a, &b, 1e-3).unwrap();
        assert!(ok && (max - 0.05).abs() < 1e-3, "{max}");
        let (_, ok) = within(&a, &b, 1e-5).unwrap();
        assert!(!ok);
        assert!(within(&a, &b[..8], 1e-3).is_none());
        let (max, ok) = within(&f32s(&[1.0]), &f32s(&[f32::NAN]), 1.0).unwrap();
        assert!(!ok && max.is_infinite());
    }

    #[test]
    fn floats_within_the_tolerance_match() {
        let a: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b: Vec<u8> = [1.0f32, 2.000_001]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let (x, y) = (
            [Digest {
                xxh3: 1,
                contents: Some(&a),
            }],
            [Digest {
                xxh3: 2,
                contents: Some(&b),
            }],
        );
        let m = digests(&x, &y, Some(1e-5), false);
        assert!(matches!(m, DigestMatch::WithinTolerance { .. }), "{m:?}");
        let m = digests(&x, &y, Some(1e-9), false);
        assert!(
            matches!(
                m,
                DigestMatch::Differs {
                    max_abs_diff: Some(_),
                    ..
                }
            ),
            "{m:?}"
        );
    }

    #[test]
    fn outcomes_unknown_on_either_side_are_not_compared() {
        assert_eq!(outcomes(Some(1), None), OutcomeMatch::Unknown);
        assert_eq!(outcomes(Some(1), Some(1)), OutcomeMatch::Same);
        assert_eq!(outcomes(Some(1), Some(2)), OutcomeMatch::Changed);
    }

    #[test]
    fn the_verdict_follows_the_counts() {
        assert_eq!(Verdict::of(0, 0), Verdict::Same);
        assert_eq!(Verdict::of(0, 3), Verdict::Different);
        assert_eq!(Verdict::of(1, 3).exit_code(), 1);
    }

    /// A side of 20 samples: its median and the median's interval.
    fn centre(median_ns: u64, low: u64, high: u64) -> Option<Centre> {
        Some(Centre {
            median_ns,
            interval_ns: Some((low, high)),
            p99_ns: high,
        })
    }

    #[test]
    fn a_slow_pair_has_its_whole_interval_past_the_ratio_the_spread_and_the_floor() {
        let rule = Slowdown {
            max_ratio: Some(1.5),
            floor_ns: 1_000,
        };
        // 2x, the interval 1.6x..2.5x: slow.
        let t = timing(
            centre(10_000, 9_000, 11_000),
            centre(20_000, 18_000, 22_000),
            &rule,
            true,
            1.0,
        );
        assert_eq!((t.ratio, t.slow, t.too_few), (Some(2.0), true, false));
        let (low, high) = t.interval.unwrap();
        assert!((low - 18.0 / 11.0).abs() < 1e-9 && (high - 22.0 / 9.0).abs() < 1e-9);
        // The same medians, the base's median uncertain up to 13 µs: the interval reaches
        // down to 1.38x, not wholly past 1.5x: not slow, the ratio stands.
        let t = timing(
            centre(10_000, 9_000, 13_000),
            centre(20_000, 18_000, 22_000),
            &rule,
            true,
            1.0,
        );
        assert_eq!((t.ratio, t.slow), (Some(2.0), false));
        // Past the ratio, not past the replay's own spread (1.7x between its halves).
        let t = timing(
            centre(10_000, 9_000, 11_000),
            centre(20_000, 18_000, 22_000),
            &rule,
            true,
            1.7,
        );
        assert!(!t.slow && t.spread == 1.7);
        // Below the floor.
        let t = timing(
            centre(100, 100, 100),
            centre(900, 900, 900),
            &rule,
            true,
            1.0,
        );
        assert!(!t.slow && t.ratio == Some(9.0));
        // Too few samples on a side: reported, not judged, and said.
        let few = Some(Centre {
            median_ns: 90_000,
            interval_ns: None,
            p99_ns: 90_000,
        });
        let t = timing(centre(10_000, 9_000, 11_000), few, &rule, true, 1.0);
        assert_eq!((t.ratio, t.slow, t.too_few), (Some(9.0), false, true));
        // A side's samples an order of magnitude apart (a slowed kernel replayed on a loaded
        // host: 0.73x [0.20x..7.82x]): not slow, and not judged either, said as too spread;
        // a wide interval wholly past 1 still judges.
        let t = timing(
            centre(10_000, 3_000, 30_000),
            centre(7_300, 6_000, 23_460),
            &rule,
            true,
            1.0,
        );
        let (low, high) = t.interval.unwrap();
        assert!(low < 1.0 && high > 10.0 * low, "{:?}", t.interval);
        assert_eq!((t.slow, t.too_few, t.too_spread), (false, false, true));
        let t = timing(
            centre(10_000, 9_000, 11_000),
            centre(200_000, 20_000, 400_000),
            &rule,
            true,
            1.0,
        );
        assert_eq!((t.slow, t.too_spread), (true, false));
        assert!(!too_spread(Some((0.9, 1.2))) && !too_spread(None));
        // No maximum: reported, not judged, nothing too few.
        let off = Slowdown {
            max_ratio: None,
            ..rule
        };
        let t = timing(centre(10_000, 9_000, 11_000), few, &off, true, 1.0);
        assert_eq!((t.ratio, t.slow, t.too_few), (Some(9.0), false, false));
        let t = timing(
            centre(10_000, 3_000, 30_000),
            centre(7_300, 6_000, 23_460),
            &off,
            true,
            1.0,
        );
        assert!(!t.too_spread, "nothing is judged without a maximum");
        // Not comparable, one side missing, or a base median of 0: nothing.
        for t in [
            timing(centre(10_000, 9_000, 11_000), few, &rule, false, 1.0),
            timing(None, few, &rule, true, 1.0),
            timing(centre(0, 0, 0), few, &rule, true, 1.0),
        ] {
            assert_eq!(t, TimingMatch::default());
        }
    }

    #[test]
    fn the_spread_is_the_ratio_of_the_halves_medians_and_needs_seven_a_half() {
        let sketch = |values: &[u64]| {
            let mut s = Sketch::new();
            values.iter().for_each(|&v| s.add(v));
            s
        };
        let (mut a, mut b) = (sketch(&[100; 7]), sketch(&[120; 7]));
        assert!((spread(&mut a, &mut b) - 1.2).abs() < 1e-9);
        assert!((spread(&mut b, &mut a) - 1.2).abs() < 1e-9);
        assert_eq!(spread(&mut sketch(&[100; 6]), &mut b), 1.0);
        assert_eq!(spread(&mut sketch(&[]), &mut sketch(&[])), 1.0);
    }

    #[test]
    fn durations_are_nearest_rank_percentiles_of_a_sketch() {
        let d = Durations::of((1..=10).map(|i| i * 100)).unwrap();
        assert_eq!(
            (
                d.samples,
                d.median_ns,
                d.min_ns,
                d.p10_ns,
                d.p90_ns,
                d.p99_ns
            ),
            (10, 500, 100, 100, 900, 1000)
        );
        assert!(Durations::of([]).is_none());
        assert_eq!(
            Centre::from(&d),
            Centre {
                median_ns: 500,
                interval_ns: Some((200, 900)),
                p99_ns: 1000
            }
        );
        assert_eq!(Durations::of([5; 6]).unwrap().median_interval_ns, None);
    }

    #[test]
    fn backends_are_comparable_when_equal_or_unknown() {
        assert!(timings_comparable("sim", "sim"));
        assert!(timings_comparable("", "cuda"));
        assert!(!timings_comparable("sim", "cuda"));
    }
}
