//! Which submissions of each runtime a trace holds, as its `TraceRange` records say: what
//! the joiner asks of a producer whose `Submit` it has not read ([`Ranges::before`]).
//!
//! A trace without `TraceRange` records holds every submission: a producer not read yet may
//! still come. One with ranges holds their union, with one exception: a range that a later
//! range opens inside is replaced by it. A recording's ranges never overlap (a range opens
//! only after the one before it closed), so an overlap means the later range narrows the
//! trace: a replay chunk (`hrx-replay`) copies the recording's `TraceRange` records with the
//! rest of its structure and opens its own at its lowest submission; a recording's range
//! whose closing record was not read yet looks open too, so a `stop()`/`start()` recording
//! whose records of the first range's end come late in the file reads, until they come, as
//! holding only the second range.
//!
//! ```text
//! trim 3..9:              [3 ........ 9)             before: 0, 1, 2
//! stop()/start():         [0 .. 4)   [7 .......)     before: 4, 5, 6
//! replay chunk from 6:    [0 ...... (replaced) [6 ...)   before: 0 ..= 5
//! ```

use hrx_capture::schema::{RuntimeId, SubmissionIndex, TraceRange};
use std::collections::BTreeMap;

/// The ranges read so far (see the module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct Ranges {
    /// Per runtime: each range's first submission and one past its last (`None` while
    /// open), by first submission; a range's opening and closing records are one entry.
    by_runtime: BTreeMap<RuntimeId, Vec<(SubmissionIndex, Option<SubmissionIndex>)>>,
}

impl Ranges {
    /// Takes a `TraceRange` record.
    pub(super) fn push(&mut self, range: &TraceRange) {
        let ranges = self.by_runtime.entry(range.runtime).or_default();
        match ranges.binary_search_by_key(&range.start, |r| r.0) {
            Ok(i) => {
                if range.end.is_some() {
                    ranges[i].1 = range.end;
                }
            }
            Err(i) => ranges.insert(i, (range.start, range.end)),
        }
    }

    /// Whether submission `submission` of `runtime` lies before the trace's latest range and
    /// outside every range the trace holds (see the module docs): the trace holds none of
    /// its records, and never will. `false` for a runtime without ranges.
    pub(super) fn before(&self, runtime: RuntimeId, submission: SubmissionIndex) -> bool {
        let Some(ranges) = self.by_runtime.get(&runtime) else {
            return false;
        };
        let Some(&(latest, _)) = ranges.last() else {
            return false;
        };
        if submission >= latest {
            return false;
        }
        let held = ranges.iter().zip(ranges.iter().skip(1)).any(|(r, next)| {
            let replaced = r.1.is_none_or(|end| next.0 < end);
            !replaced && r.0 <= submission && r.1.is_none_or(|end| submission < end)
        });
        !held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: Option<u64>) -> TraceRange {
        TraceRange {
            runtime: RuntimeId(1),
            start: SubmissionIndex(start),
            end: end.map(SubmissionIndex),
            trigger: String::new(),
            trimmed_from: None,
            time_ns: 0,
            fault: None,
        }
    }

    /// The submissions below 12 that `ranges` leave before the range.
    fn before(ranges: &[TraceRange]) -> Vec<u64> {
        let mut r = Ranges::default();
        for range in ranges {
            r.push(range);
        }
        (0..12)
            .filter(|&s| r.before(RuntimeId(1), SubmissionIndex(s)))
            .collect()
    }

    #[test]
    fn ranges_leave_out_what_they_do_not_hold() {
        // No range: every submission may still come; another runtime's ranges say nothing.
        assert_eq!(before(&[]), Vec::<u64>::new());
        let mut other = Ranges::default();
        other.push(&range(5, None));
        assert!(!other.before(RuntimeId(2), SubmissionIndex(0)));
        // A trim, and an open range.
        assert_eq!(before(&[range(3, Some(9))]), [0, 1, 2]);
        assert_eq!(before(&[range(3, None)]), [0, 1, 2]);
        // A stop()/start() recording: the gap between its ranges, once the first closed.
        let first = [range(0, None), range(0, Some(4))];
        assert_eq!(before(&[&first[..], &[range(7, None)]].concat()), [4, 5, 6]);
        // Its first range's close not read yet: the second replaces it, for now.
        assert_eq!(
            before(&[range(0, None), range(7, None)]),
            (0..7).collect::<Vec<_>>()
        );
        // A replay chunk of a trim, and of an open range: the chunk's range replaces them.
        assert_eq!(
            before(&[range(3, Some(9)), range(6, None)]),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            before(&[range(2, None), range(6, None)]),
            [0, 1, 2, 3, 4, 5]
        );
        // In any record order.
        assert_eq!(
            before(&[range(6, None), range(3, Some(9))]),
            [0, 1, 2, 3, 4, 5]
        );
    }
}
