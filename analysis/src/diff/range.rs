//! The submissions a range recording or a trim holds ([`TraceRange`] records), and the
//! submissions `diff` compares when either side holds a range ([`common`]): only those both
//! sides hold, paired by submission number (a trim and a range recording keep the run's
//! numbers), so a whole run's first submission is never paired with a trim's first.

use hrx_capture::schema::{RuntimeId, TraceRange};
use std::collections::{BTreeMap, HashMap};

/// Half-open intervals of submission numbers, sorted and disjoint; `u64::MAX` as an end is
/// a range left open (every submission from its start on).
pub type Held = Vec<(u64, u64)>;

/// Every submission.
const WHOLE: (u64, u64) = (0, u64::MAX);

/// Whether `held` holds submission `n`.
pub(super) fn holds(held: &[(u64, u64)], n: u64) -> bool {
    held.iter().any(|&(s, e)| (s..e).contains(&n))
}

/// The intersection of two [`Held`] sets.
pub fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Held {
    let mut out = Vec::new();
    for &(s0, e0) in a {
        for &(s1, e1) in b {
            let (s, e) = (s0.max(s1), e0.min(e1));
            if s < e {
                out.push((s, e));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The union of intervals, sorted and merged.
fn union(mut v: Vec<(u64, u64)>) -> Held {
    v.sort_unstable();
    let mut out: Held = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// What a trace's [`TraceRange`] records say it holds, per runtime that has one: the union
/// of its recorded ranges (a range opened and closed twice by the program's start and stop
/// calls holds both; one left open holds every submission from its start on), cut to each
/// trim's range (a trim of a range recording holds only what both name).
pub fn held(ranges: &[TraceRange]) -> HashMap<RuntimeId, Held> {
    let mut recorded: BTreeMap<(RuntimeId, u64), u64> = BTreeMap::new();
    let mut trims: Vec<(RuntimeId, u64, u64)> = Vec::new();
    for r in ranges {
        let end = r.end.map_or(u64::MAX, |e| e.0);
        if r.trimmed_from.is_some() {
            trims.push((r.runtime, r.start.0, end));
        } else {
            // The closing record (`end` set) replaces the opening one.
            let e = recorded.entry((r.runtime, r.start.0)).or_insert(end);
            *e = (*e).min(end);
        }
    }
    let mut out: HashMap<RuntimeId, Held> = HashMap::new();
    for ((runtime, start), end) in recorded {
        // A range that never opened is recorded empty at the run's end: it holds none.
        let held = out.entry(runtime).or_default();
        if start < end {
            held.push((start, end));
        }
    }
    for held in out.values_mut() {
        *held = union(std::mem::take(held));
    }
    for (runtime, start, end) in trims {
        let held = out.entry(runtime).or_insert_with(|| vec![WHOLE]);
        *held = intersect(held, &[(start, end)]);
    }
    out
}

/// The submissions compared when either side holds a range, per runtime rank (see the
/// module docs); `None` when neither does. A runtime with a range on neither side is
/// compared whole.
pub fn common(
    base: &BTreeMap<u32, Held>,
    new: &BTreeMap<u32, Held>,
) -> Option<BTreeMap<u32, Held>> {
    if base.is_empty() && new.is_empty() {
        return None;
    }
    let whole = vec![WHOLE];
    let runtimes = base.keys().chain(new.keys());
    Some(
        runtimes
            .map(|&r| {
                let (b, n) = (
                    base.get(&r).unwrap_or(&whole),
                    new.get(&r).unwrap_or(&whole),
                );
                (r, intersect(b, n))
            })
            .collect(),
    )
}

/// `4..7`, `4..` for one left open, intervals joined by `, `; `none` for an empty set.
pub fn describe(held: &[(u64, u64)]) -> String {
    if held.is_empty() {
        return "none".to_owned();
    }
    let one = |&(s, e): &(u64, u64)| {
        if e == u64::MAX {
            format!("{s}..")
        } else {
            format!("{s}..{e}")
        }
    };
    held.iter().map(one).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_capture::schema::SubmissionIndex;

    fn range(start: u64, end: Option<u64>, trimmed: bool) -> TraceRange {
        TraceRange {
            runtime: RuntimeId(1),
            start: SubmissionIndex(start),
            end: end.map(SubmissionIndex),
            trigger: String::new(),
            trimmed_from: trimmed.then(|| "whole.hrxt".to_owned()),
            time_ns: 0,
            fault: None,
        }
    }

    #[test]
    fn a_recording_holds_its_closed_ranges_and_a_trim_only_what_it_names() {
        let rt = RuntimeId(1);
        // Opened and closed twice (start and stop calls), the second left open.
        let recorded = [
            range(2, None, false),
            range(2, Some(5), false),
            range(9, None, false),
        ];
        assert_eq!(held(&recorded)[&rt], [(2, 5), (9, u64::MAX)]);
        // A trim 4..11 of it.
        let trimmed: Vec<_> = recorded
            .iter()
            .cloned()
            .chain([range(4, Some(11), true)])
            .collect();
        assert_eq!(held(&trimmed)[&rt], [(4, 5), (9, 11)]);
        assert_eq!(held(&[range(4, Some(7), true)])[&rt], [(4, 7)]);
        assert!(held(&[]).is_empty());
    }

    #[test]
    fn the_common_range_is_what_both_sides_hold() {
        let whole = BTreeMap::new();
        assert_eq!(common(&whole, &whole), None);
        let trim = BTreeMap::from([(0, vec![(4, 7)])]);
        assert_eq!(common(&whole, &trim), Some(trim.clone()));
        let other = BTreeMap::from([(0, vec![(6, u64::MAX)])]);
        let both = common(&other, &trim).unwrap();
        assert_eq!(both[&0], [(6, 7)]);
        assert_eq!(describe(&both[&0]), "6..7");
        assert_eq!(describe(&other[&0]), "6..");
        assert_eq!(describe(&[]), "none");
    }
}
