//! The lazy state snapshot of a capture range opened mid-run (see the parent module's
//! "Ranges").
//!
//! What replay needs at a range's start is the contents of the bytes that the range reads
//! before it writes them (GFXReconstruct's trimmed capture tracks the same thing per
//! resource). At run time the range's future is unknown, so the bytes are taken when they
//! are about to be needed: before a submission inside the range is submitted, the bytes its
//! graph reads before writing them (worked out once, at `prepare`, from the operations in
//! build order, which the hazard ordering respects) are compared with what the range
//! already *holds*: bytes written by a submission of the range, by a host write recorded in
//! it, or snapshotted before. Only the rest is read and recorded, as
//! [`s::BufferSnapshot`]s, and then held.
//!
//! Why the bytes read are those at the range's start: the runtime drained its submissions
//! in flight when the range opened, and every submission of the range that writes a byte
//! marks it held when it is submitted, before any later submission can read it. The
//! [`Pending`] guard keeps the state locked from the snapshot until the submission has its
//! number (a submission on another thread cannot be numbered in between and write the
//! bytes first), and marks the submission's writes held only once the submit was accepted
//! (a refused submit writes nothing). A read the buffer refuses (a host mapping for
//! writing, a poisoned buffer: the submit is then refused too) records nothing.
//!
//! Replay applies each snapshot at its host time, before its submission and after the host
//! writes recorded before it, which is exact: a byte snapshotted late was not written by
//! the range before. A host write made after `stop()` is still recorded until the next
//! submit closes the range, and one made after `start()` is not until the next submit
//! opens it: the reopened range's snapshots, taken after both, hold the bytes its
//! submissions read (replay applied them before everything, under the pause's stale write,
//! until session 14).
//!
//! Out of measured times: the bytes are read on the submitting thread before its
//! submission exists, not under the scheduler's lock and not inside any region.

use super::Hook;
use hrx_capture::schema as s;
use std::collections::HashMap;
use std::ops::Range;

/// Disjoint, sorted, non-adjacent byte ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeSet(Vec<Range<u64>>);

impl RangeSet {
    /// Adds `range`, merging what it touches.
    pub fn insert(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        // The first range that ends at or after the new start, and the first that starts
        // after the new end: everything between merges.
        let from = self.0.partition_point(|r| r.end < range.start);
        let to = self.0.partition_point(|r| r.start <= range.end);
        let merged = if from < to {
            self.0[from].start.min(range.start)..self.0[to - 1].end.max(range.end)
        } else {
            range
        };
        self.0.splice(from..to, [merged]);
    }

    /// The parts of `range` not in the set, in order.
    pub fn missing(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut at = range.start;
        let from = self.0.partition_point(|r| r.end <= range.start);
        for held in &self.0[from..] {
            if held.start >= range.end {
                break;
            }
            if held.start > at {
                out.push(at..held.start);
            }
            at = at.max(held.end);
        }
        if at < range.end {
            out.push(at..range.end);
        }
        out
    }

    /// The ranges, in order.
    #[cfg(test)]
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.0
    }

    /// The ranges, in order.
    pub fn into_ranges(self) -> Vec<Range<u64>> {
        self.0
    }
}

/// The bytes each buffer holds in the open range (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Held {
    buffers: HashMap<u64, RangeSet>,
}

impl Held {
    /// Bytes `range` of buffer `buffer` are held.
    pub fn insert(&mut self, buffer: u64, range: Range<u64>) {
        self.buffers.entry(buffer).or_default().insert(range);
    }

    /// Buffer `buffer` was released.
    pub fn forget(&mut self, buffer: u64) {
        self.buffers.remove(&buffer);
    }

    /// A new range opens: nothing is held.
    pub fn clear(&mut self) {
        self.buffers.clear();
    }

    /// Snapshots the parts of `reads` not held: `read(i, range)` reads `range` of the
    /// buffer of `reads[i]` (`None`: refused, nothing recorded); each part read is recorded
    /// with `hook` and held.
    pub fn snapshot(
        &mut self,
        hook: &Hook<'_>,
        reads: &[(u64, Range<u64>)],
        mut read: impl FnMut(usize, Range<u64>) -> Option<Vec<u8>>,
    ) {
        for (i, (buffer, range)) in reads.iter().enumerate() {
            let missing = match self.buffers.get(buffer) {
                Some(held) => held.missing(range.clone()),
                None => vec![range.clone()],
            };
            for part in missing {
                let Some(bytes) = read(i, part.clone()) else {
                    continue;
                };
                let time_ns = hook.now_ns();
                hook.record(s::Record::BufferSnapshot(s::BufferSnapshot {
                    runtime: hook.runtime,
                    buffer: s::BufferId(*buffer),
                    offset: part.start,
                    len_bytes: bytes.len() as u64,
                    xxh3: xxhash_rust::xxh3::xxh3_64(&bytes),
                    contents: hook.recorder.payload(&bytes),
                    time_ns,
                }));
                self.insert(*buffer, part);
            }
        }
    }
}

/// The held bytes, locked from a submission's snapshot until its submit is decided (see
/// the module docs).
pub(crate) struct Pending<'a> {
    pub(super) held: std::sync::MutexGuard<'a, Held>,
}

impl Pending<'_> {
    /// The submission was accepted: the bytes it writes, `writes`, are held.
    pub fn submitted(mut self, writes: &[(u64, Range<u64>)]) {
        for (buffer, range) in writes {
            self.held.insert(*buffer, range.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_set_merges_and_answers_what_is_missing() {
        let mut set = RangeSet::default();
        set.insert(10..20);
        set.insert(30..40);
        assert_eq!(set.missing(0..50), vec![0..10, 20..30, 40..50]);
        assert_eq!(set.missing(12..18), Vec::<Range<u64>>::new());
        assert_eq!(set.missing(15..35), vec![20..30]);
        set.insert(20..30); // adjacent on both sides: one range
        let bounds = |set: &RangeSet| -> Vec<(u64, u64)> {
            set.ranges().iter().map(|r| (r.start, r.end)).collect()
        };
        assert_eq!(bounds(&set), [(10, 40)]);
        set.insert(5..8);
        set.insert(45..50);
        set.insert(7..46);
        assert_eq!(bounds(&set), [(5, 50)]);
        set.insert(0..0);
        assert_eq!(bounds(&set), [(5, 50)]);
        assert_eq!(set.missing(0..60), vec![0..5, 50..60]);
    }
}
