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
//!
//! A graph submitted again and again looks its bytes up only until they are all held:
//! bytes stop being held only when a buffer is released or a new range opens, and each of
//! those starts a new *generation* of the held set. A graph's accepted submit, which left
//! every byte it reads and writes held, notes the generation in its [`Settled`]; while the
//! generation is the same, its next submits have nothing to snapshot and nothing new to
//! hold, and skip both (session 16: about 950 instructions a traced submission of the
//! three-region graph, of it SipHash lookups and range-set splices).

use super::Hook;
use hrx_capture::schema as s;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

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
#[derive(Debug)]
pub(crate) struct Held {
    buffers: HashMap<u64, RangeSet>,
    /// Moves on whenever bytes stop being held (a buffer forgotten, the set cleared); never
    /// 0, the generation of a graph that never settled.
    generation: u64,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            buffers: HashMap::new(),
            generation: 1,
        }
    }
}

/// The generation of [`Held`] at which every byte a prepared graph reads and writes was
/// held, after one of its submits was accepted (0: not yet). See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Settled(AtomicU64);

impl Held {
    /// Bytes `range` of buffer `buffer` are held.
    pub fn insert(&mut self, buffer: u64, range: Range<u64>) {
        self.buffers.entry(buffer).or_default().insert(range);
    }

    /// Buffer `buffer` was released.
    pub fn forget(&mut self, buffer: u64) {
        if self.buffers.remove(&buffer).is_some() {
            self.generation += 1;
        }
    }

    /// A new range opens: nothing is held.
    pub fn clear(&mut self) {
        self.buffers.clear();
        self.generation += 1;
    }

    /// Whether the graph of `settled` holds all its bytes at this generation: its submit
    /// has nothing to snapshot and nothing new to hold.
    pub fn settled(&self, settled: &Settled) -> bool {
        settled.0.load(Ordering::Relaxed) == self.generation
    }

    /// Snapshots the parts of `reads` not held: `read(i, range)` reads `range` of the
    /// buffer of `reads[i]` (`None`: refused, nothing recorded); each part read is recorded
    /// with `hook` and held. Returns whether every part of `reads` is held now (false when a
    /// read was refused).
    pub fn snapshot(
        &mut self,
        hook: &Hook<'_>,
        reads: &[(u64, Range<u64>)],
        mut read: impl FnMut(usize, Range<u64>) -> Option<Vec<u8>>,
    ) -> bool {
        let mut all = true;
        for (i, (buffer, range)) in reads.iter().enumerate() {
            let missing = match self.buffers.get(buffer) {
                Some(held) => held.missing(range.clone()),
                None => vec![range.clone()],
            };
            for part in missing {
                let Some(bytes) = read(i, part.clone()) else {
                    all = false;
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
        all
    }
}

/// The held bytes, locked from a submission's snapshot until its submit is decided (see
/// the module docs).
pub(crate) struct Pending<'a> {
    pub(super) held: std::sync::MutexGuard<'a, Held>,
    pub(super) settle: Settle<'a>,
}

/// What an accepted submit does with the graph's [`Settled`].
pub(crate) enum Settle<'a> {
    /// Its bytes are all held already: nothing to hold.
    Already,
    /// Hold its writes, then note the generation: every byte it reads is held now.
    Note(&'a Settled),
    /// Hold its writes only: a read was refused, so those bytes are looked up again.
    Not,
}

impl Pending<'_> {
    /// The submission was accepted: the bytes it writes, `writes`, are held.
    pub fn submitted(mut self, writes: &[(u64, Range<u64>)]) {
        if let Settle::Already = self.settle {
            return;
        }
        for (buffer, range) in writes {
            self.held.insert(*buffer, range.clone());
        }
        if let Settle::Note(settled) = self.settle {
            settled.0.store(self.held.generation, Ordering::Relaxed);
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

    /// A graph's accepted submit settles it (all its bytes held); it stays settled while
    /// bytes are only added, and not once bytes stop being held (a held buffer released, a
    /// new range).
    #[test]
    fn a_graph_settles_until_bytes_stop_being_held() {
        let held = std::sync::Mutex::new(Held::default());
        let lock = || crate::sync::lock(&held);
        let settled = Settled::default();
        let settle = || {
            let pending = Pending {
                held: lock(),
                settle: Settle::Note(&settled),
            };
            pending.submitted(&[(1, 0..64)]);
        };
        assert!(!lock().settled(&settled));
        settle();
        assert!(lock().settled(&settled));
        assert_eq!(lock().buffers[&1].ranges(), std::slice::from_ref(&(0..64)));
        lock().insert(3, 0..8);
        lock().forget(2); // never held: nothing stops being held
        assert!(lock().settled(&settled));
        lock().forget(1);
        assert!(!lock().settled(&settled));
        settle();
        assert!(lock().settled(&settled));
        lock().clear();
        assert!(!lock().settled(&settled));
        // After a refused read the writes are held, but the graph is not settled.
        Pending {
            held: lock(),
            settle: Settle::Not,
        }
        .submitted(&[(1, 0..64)]);
        assert!(!lock().settled(&settled));
        assert_eq!(lock().buffers[&1].ranges(), std::slice::from_ref(&(0..64)));
        // Settled, a submit holds nothing more (its bytes are held).
        settle();
        lock().buffers.clear();
        Pending {
            held: lock(),
            settle: Settle::Already,
        }
        .submitted(&[(1, 0..64)]);
        assert!(lock().buffers.is_empty());
    }
}
