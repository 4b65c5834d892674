//! The one comparison rule of `hrx-trace diff` (two recordings) and `hrx-trace replay` (a
//! recording and its re-execution): how outcomes and output digests are matched and judged,
//! and the verdict their counts give.
//!
//! - **Outcomes** ([`outcomes`]): a submission's outcome (ok, failed, cancelled) on both
//!   sides; one without a recorded outcome on either side (a trace cut short) is
//!   [`OutcomeMatch::Unknown`]: not compared, and not a change.
//! - **Output digests** ([`digests`]): the digests one key (a submission's written range,
//!   placed by each caller: replay by region and buffer, `diff` by the operation writing
//!   it) holds on each side. Equal in order, or as a multiset (digests of regions finishing
//!   at once may reach the file in either order), is a match. Otherwise the first differing
//!   pair decides: with a tolerance and both contents, as little-endian `f32`s (absolute
//!   below magnitude 1, relative above). A key on one side only is missing or extra, unless
//!   the caller knows the submission did not run as recorded (its status diverged, or its
//!   outcome is unknown): then it is [`DigestMatch::NotRun`], since the status says so.
//! - **Verdict** ([`Verdict::of`]): a regression when anything regressed (a changed outcome,
//!   a differing digest, a slow kernel or region, a side that did none of the work);
//!   *different* when only one-sided items remain (kernels, regions, outputs or
//!   submissions present on one side: another program or run length, not a slower one);
//!   *same* otherwise. Comparing nothing is no match: callers refuse it before a verdict.

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

/// The verdict of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}
