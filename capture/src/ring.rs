//! A single-producer single-consumer byte ring: one per recording thread and recorder.
//!
//! The recording thread (the producer) appends whole record frames; the writer (the
//! consumer) copies out everything committed so far. This is what keeps the hot path free of
//! locks, read-modify-write atomics and allocation:
//!
//! ```text
//!   recording thread                          writer (under the recorder's core lock)
//!   ----------------                          ---------------------------------------
//!   copy frame into buf[head..]               h = head.load(Acquire)
//!   head.store(head + len, Release)  ───────▶ copy buf[tail..h] out
//!   (tail re-read with Acquire only when  ◀── tail.store(h, Release)
//!    the cached copy says the ring is full)
//! ```
//!
//! Positions are free-running `usize` counters (wrapping), reduced modulo the power-of-two
//! capacity when indexing, so `head - tail` is always the number of committed, unread bytes.
//! Exactly one [`Producer`] and one [`Consumer`] exist per ring, and both need `&mut self`,
//! so the single-producer single-consumer contract is enforced by ownership: the producer
//! lives in its thread's thread-local state, the consumer in the recorder's core, which is
//! behind a mutex.

use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Slots of a per-kind loss count: every record kind, then one for unknown kinds.
pub(crate) const KINDS: usize = crate::Record::KIND_NAMES.len() + 1;

/// The high-water mark: a push that leaves more than `capacity / WAKE_DIVISOR` bytes
/// unread wakes the writer (once per drain). A quarter, not a half: the writer then has
/// three quarters of the ring's time to wake up, and to finish a block it may be
/// compressing, before the recording thread finds the ring full and must hand its records
/// over itself (a `RecorderWait`, the one place a recording thread blocks).
pub(crate) const WAKE_DIVISOR: usize = 4;

/// Keeps producer-written and consumer-written fields on separate cache lines.
#[repr(align(128))]
struct Padded<T>(T);

struct Ring {
    /// Written by the producer; `closed` by the consumer side once, at close.
    producer: Padded<ProducerSide>,
    /// Written by the consumer.
    tail: Padded<AtomicUsize>,
    /// Records the producer dropped because the ring stayed full (lossy mode), by kind
    /// (index into `Record::KIND_NAMES`).
    dropped: [AtomicU64; KINDS],
    /// The producer's open annotation ranges, for the flushes at a fatal signal and at
    /// close ([`Producer::open_range`]).
    open: Padded<OpenRanges>,
    buf: Bytes,
}

/// A ring's bytes. A large ring has anonymous pages of its own (`mmap`), untouched until its
/// thread writes them and given back to the system when the ring is dropped: from the heap,
/// `calloc` zeroed (touched) every byte of a 1 MiB ring reused from an earlier one (glibc
/// raises its mmap threshold to the size of the first mapped block freed) and each thread's
/// malloc arena kept them, so a program starting thousands of short-lived threads that record
/// grew to hundreds of MiB (a break-it pass: 10,000 threads, 5.6 MiB untraced, 590 MiB
/// traced).
struct Bytes {
    /// The mapping, when the ring has one (kept to be unmapped when dropped).
    _map: Option<memmap2::MmapMut>,
    /// The heap bytes otherwise (a small ring, or one whose mapping failed).
    _heap: Option<Box<[UnsafeCell<u8>]>>,
    base: *mut u8,
    len: usize,
}

/// Rings at least this large get pages of their own ([`Bytes`]).
const MAPPED_RING_BYTES: usize = 64 << 10;

impl Bytes {
    /// `len` zeroed bytes, or `None` when the system has no memory for them (a limit on the
    /// address space, `ulimit -v`): the caller records without a ring rather than abort.
    fn zeroed(len: usize) -> Option<Bytes> {
        if len >= MAPPED_RING_BYTES
            && let Ok(mut map) = memmap2::MmapMut::map_anon(len)
        {
            let base = map.as_mut_ptr();
            return Some(Bytes {
                _map: Some(map),
                _heap: None,
                base,
                len,
            });
        }
        let layout = std::alloc::Layout::array::<u8>(len).ok()?;
        // SAFETY: `len` is at least 64 (non-zero size); a null result is handled.
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        if base.is_null() {
            return None;
        }
        // SAFETY: `base` was allocated above with the layout of `[u8; len]`, which is that of
        // `[UnsafeCell<u8>; len]` (`repr(transparent)`), and is owned by the box from here.
        let heap = unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                base.cast::<UnsafeCell<u8>>(),
                len,
            ))
        };
        Some(Bytes {
            _map: None,
            _heap: Some(heap),
            base,
            len,
        })
    }
}

// SAFETY: `Bytes` owns its memory (the mapping or the box, which move with it without moving
// the bytes); access to them is governed as `Ring`'s Sync impl says.
unsafe impl Send for Bytes {}

/// Open annotation ranges a ring's thread tracks: its innermost this many (an outer one
/// past them is not tracked: a range open at the end that far out is not in the trace).
pub(crate) const OPEN_RANGES: usize = 32;

/// A slot's name when the slot is free (its range closed).
const FREE: u32 = u32::MAX;

/// A slot's `closing_at` while its range is not closing.
const NOT_CLOSING: usize = usize::MAX;

/// One tracked range: its nesting level (which of the levels sharing the slot it is), name
/// (the id to record it by), start (session ns) and, once its close began, the ring
/// position its closing record is written at.
struct OpenSlot {
    level: AtomicU32,
    name: AtomicU32,
    start_ns: AtomicU64,
    closing_at: AtomicUsize,
}

/// The ranges a thread has open, by nesting level, level `L` in slot `L % OPEN_RANGES`;
/// written by the producer (or, once its thread's state is gone, under the recorder's lock),
/// read by the writer at close or by the fatal-signal flush while the thread may still run.
struct OpenRanges {
    /// The thread's index in the session, set when the thread registers.
    thread: AtomicU32,
    /// Levels open: ranges still open at every level below, but for those closed out of
    /// order (their slots free) and those too far out to be tracked.
    depth: AtomicU32,
    slots: [OpenSlot; OPEN_RANGES],
}

impl OpenRanges {
    fn slot(&self, level: u32) -> &OpenSlot {
        &self.slots[level as usize % OPEN_RANGES]
    }

    /// Frees `level`'s slot, and when it was the innermost level, every freed level inside
    /// the ranges still open.
    fn close(&self, level: u32) {
        let slot = self.slot(level);
        if slot.level.load(Ordering::Relaxed) == level {
            slot.name.store(FREE, Ordering::Relaxed);
        }
        let mut depth = self.depth.load(Ordering::Relaxed);
        if level.wrapping_add(1) != depth {
            // Closed out of order: the levels inside it still hold it open.
            return;
        }
        depth -= 1;
        while depth > 0 {
            let below = self.slot(depth - 1);
            let freed = below.level.load(Ordering::Relaxed) == depth - 1
                && below.name.load(Ordering::Relaxed) == FREE;
            if !freed {
                break;
            }
            depth -= 1;
        }
        self.depth.store(depth, Ordering::Release);
    }
}

struct ProducerSide {
    head: AtomicUsize,
    /// Set when the recorder closes: the producer stops pushing.
    closed: AtomicBool,
    /// Set when the producer is dropped (its thread exited).
    orphaned: AtomicBool,
}

// SAFETY: the bytes in `buf` are only accessed through the unique `Producer` (writes to
// `[head, tail + capacity)`, which the consumer never reads) and the unique `Consumer`
// (reads of `[tail, head)`, which the producer never writes until `tail` moves past them).
// The Release store of `head` after writing and its Acquire load before reading (and the same
// pair on `tail`) order the byte accesses; all other fields are atomics.
unsafe impl Sync for Ring {}

impl Ring {
    fn capacity(&self) -> usize {
        self.buf.len
    }

    fn base(&self) -> *mut u8 {
        self.buf.base
    }
}

/// Creates a ring of at least `capacity` bytes (rounded up to a power of two, at least 64).
///
/// The bytes come zeroed (fresh anonymous pages for a large ring, [`Bytes`]), so a ring
/// costs resident memory only as far as its thread has written into it: a thread that
/// records little keeps most of its ring untouched, and a dropped ring's pages go back to
/// the system. `None` when there is no memory for it.
pub(crate) fn ring(capacity: usize) -> Option<(Producer, Consumer)> {
    let capacity = capacity.max(64).next_power_of_two();
    let buf = Bytes::zeroed(capacity)?;
    let ring = Arc::new(Ring {
        producer: Padded(ProducerSide {
            head: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            orphaned: AtomicBool::new(false),
        }),
        tail: Padded(AtomicUsize::new(0)),
        dropped: std::array::from_fn(|_| AtomicU64::new(0)),
        open: Padded(OpenRanges {
            thread: AtomicU32::new(u32::MAX),
            depth: AtomicU32::new(0),
            slots: std::array::from_fn(|_| OpenSlot {
                level: AtomicU32::new(u32::MAX),
                name: AtomicU32::new(FREE),
                start_ns: AtomicU64::new(0),
                closing_at: AtomicUsize::new(NOT_CLOSING),
            }),
        }),
        buf,
    });
    let producer = Producer {
        ring: ring.clone(),
        head: 0,
        tail: 0,
        woken_at_tail: usize::MAX,
    };
    Some((
        producer,
        Consumer {
            ring,
            tail: 0,
            held: Vec::new(),
        },
    ))
}

/// What happened to a pushed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// Committed; the ring is below its high-water mark ([`WAKE_DIVISOR`]).
    Done,
    /// Committed; the ring is past its high-water mark and the writer has not drained it
    /// since the last time this was answered: wake the writer.
    DoneWake,
    /// Not committed: not enough free space.
    Full,
    /// Not committed: the recorder is closed.
    Closed,
}

/// The recording thread's end of a ring.
pub(crate) struct Producer {
    ring: Arc<Ring>,
    /// Producer-local copy of `ring.producer.head`.
    head: usize,
    /// Last `tail` observed; refreshed only when space looks short.
    tail: usize,
    /// The `tail` at the last `DoneWake`, so that one drain answers at most one wake.
    woken_at_tail: usize,
}

impl Producer {
    /// Capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Whether the recorder closed this ring.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.ring.producer.0.closed.load(Ordering::Relaxed)
    }

    /// Commits `frame` if it fits. No locks, no read-modify-write, no allocation.
    #[inline]
    pub(crate) fn push(&mut self, frame: &[u8]) -> Push {
        if self.is_closed() {
            return Push::Closed;
        }
        let capacity = self.capacity();
        let len = frame.len();
        if capacity - self.head.wrapping_sub(self.tail) < len {
            self.tail = self.ring.tail.0.load(Ordering::Acquire);
            if capacity - self.head.wrapping_sub(self.tail) < len {
                return Push::Full;
            }
        }
        let start = self.head & (capacity - 1);
        let first = len.min(capacity - start);
        // SAFETY: `[head, head + len)` is free space (checked above against a `tail` loaded
        // with Acquire, so the consumer finished reading it), only this unique producer
        // writes it, and the consumer does not read it before the Release store below.
        // `start + first <= capacity` and `len - first <= start` keep both copies in bounds.
        unsafe {
            let base = self.ring.base();
            std::ptr::copy_nonoverlapping(frame.as_ptr(), base.add(start), first);
            std::ptr::copy_nonoverlapping(frame.as_ptr().add(first), base, len - first);
        }
        self.commit(len)
    }

    /// Commits the first `len` bytes of `buf`. When there is contiguous room for all of
    /// `buf`, copies all of it (a fixed-size copy the compiler inlines; the bytes past `len`
    /// land in free space and are never read), else falls back to [`Producer::push`].
    #[inline]
    pub(crate) fn push_fixed<const N: usize>(&mut self, buf: &[u8; N], len: usize) -> Push {
        debug_assert!(len <= N);
        let capacity = self.capacity();
        let start = self.head & (capacity - 1);
        let room = capacity - self.head.wrapping_sub(self.tail);
        if self.is_closed() || capacity - start < N || room < N {
            return self.push(&buf[..len]);
        }
        // SAFETY: `[head, head + N)` is contiguous (checked against the end of the buffer)
        // and free (checked against a `tail` the consumer had already passed, as in `push`);
        // only this unique producer writes it, and the consumer reads only up to the `head`
        // published below, i.e. the first `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(buf.as_ptr(), self.ring.base().add(start), N);
        }
        self.commit(len)
    }

    /// Publishes `len` written bytes; says whether to wake the writer.
    #[inline]
    fn commit(&mut self, len: usize) -> Push {
        let capacity = self.capacity();
        self.head = self.head.wrapping_add(len);
        self.ring
            .producer
            .0
            .head
            .store(self.head, Ordering::Release);
        let mark = capacity / WAKE_DIVISOR;
        if self.head.wrapping_sub(self.tail) > mark {
            self.tail = self.ring.tail.0.load(Ordering::Acquire);
            if self.head.wrapping_sub(self.tail) > mark && self.tail != self.woken_at_tail {
                self.woken_at_tail = self.tail;
                return Push::DoneWake;
            }
        }
        Push::Done
    }

    /// Counts one record of kind `kind` (an index into `Record::KIND_NAMES`) dropped by
    /// this thread.
    pub(crate) fn count_dropped(&self, kind: usize) {
        self.ring.dropped[kind.min(KINDS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    /// Sets the thread's index in the session, for the ranges [`Consumer::open_ranges`]
    /// reports.
    pub(crate) fn set_thread(&self, thread: u32) {
        self.ring.open.0.thread.store(thread, Ordering::Relaxed);
    }

    /// Tracks an annotation range opened at `start_ns`, to be recorded as `name` if it is
    /// still open at a fatal signal or at close; answers its nesting level (its handle).
    #[inline]
    pub(crate) fn open_range(&self, name: u32, start_ns: u64) -> u32 {
        let open = &self.ring.open.0;
        let level = open.depth.load(Ordering::Relaxed);
        let slot = open.slot(level);
        slot.level.store(level, Ordering::Relaxed);
        slot.start_ns.store(start_ns, Ordering::Relaxed);
        slot.closing_at.store(NOT_CLOSING, Ordering::Relaxed);
        slot.name.store(name, Ordering::Release);
        open.depth.store(level.wrapping_add(1), Ordering::Release);
        level
    }

    /// Marks `level`'s range as closing, before its closing record is pushed: a reader that
    /// drained past this position has the record and does not take the range for open.
    #[inline]
    pub(crate) fn closing_range(&self, level: u32) {
        let slot = self.ring.open.0.slot(level);
        if slot.level.load(Ordering::Relaxed) == level {
            slot.closing_at.store(self.head, Ordering::Relaxed);
        }
    }

    /// Stops tracking `level`'s range (closed, in any order).
    #[inline]
    pub(crate) fn close_range(&self, level: u32) {
        self.ring.open.0.close(level);
    }

    /// Whether `consumer` is this ring's consumer.
    pub(crate) fn is_paired_with(&self, consumer: &Consumer) -> bool {
        Arc::ptr_eq(&self.ring, &consumer.ring)
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.ring.producer.0.orphaned.store(true, Ordering::Release);
    }
}

/// The writer's end of a ring.
pub(crate) struct Consumer {
    ring: Arc<Ring>,
    /// Consumer-local copy of `ring.tail`.
    tail: usize,
    /// Entries drained and held back behind a deferred job not ready yet (the writer's
    /// `Core::drain_consumer`), to be transcoded before the ring's next ones.
    pub(crate) held: Vec<u8>,
}

impl Consumer {
    /// Capacity in bytes: the most a drain appends.
    pub(crate) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Appends every committed byte to `out`; returns how many.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<u8>) -> usize {
        let head = self.ring.producer.0.head.load(Ordering::Acquire);
        let len = head.wrapping_sub(self.tail);
        if len == 0 {
            return 0;
        }
        let capacity = self.ring.capacity();
        debug_assert!(len <= capacity);
        let start = self.tail & (capacity - 1);
        let first = len.min(capacity - start);
        // SAFETY: `[tail, head)` was fully written before the producer's Release store of
        // `head`, which the Acquire load above observed; the producer does not write it again
        // until `tail` moves past it below. Both ranges are in bounds as in `Producer::push`.
        unsafe {
            let base = self.ring.base() as *const u8;
            out.extend_from_slice(std::slice::from_raw_parts(base.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(base, len - first));
        }
        self.tail = head;
        self.ring.tail.0.store(head, Ordering::Release);
        len
    }

    /// Whether the producer is gone; check before the final drain (Acquire pairs with the
    /// producer's drop, so everything it pushed is visible to the next drain).
    pub(crate) fn is_orphaned(&self) -> bool {
        self.ring.producer.0.orphaned.load(Ordering::Acquire)
    }

    /// Tells the producer to stop pushing.
    pub(crate) fn close(&self) {
        self.ring.producer.0.closed.store(true, Ordering::Release);
    }

    /// Calls `each(thread, name, start_ns)` for every range the producer has open, outermost
    /// first, but for those whose closing record this consumer already drained. No
    /// allocation (the fatal-signal flush calls it).
    pub(crate) fn open_ranges(&self, mut each: impl FnMut(u32, u32, u64)) {
        let open = &self.ring.open.0;
        let depth = open.depth.load(Ordering::Acquire);
        let thread = open.thread.load(Ordering::Relaxed);
        for level in depth.saturating_sub(OPEN_RANGES as u32)..depth {
            let slot = open.slot(level);
            let name = slot.name.load(Ordering::Acquire);
            let closing_at = slot.closing_at.load(Ordering::Relaxed);
            let drained = closing_at != NOT_CLOSING && closing_at < self.tail;
            if name != FREE && slot.level.load(Ordering::Relaxed) == level && !drained {
                each(thread, name, slot.start_ns.load(Ordering::Relaxed));
            }
        }
    }

    /// Stops tracking `level`'s range for a producer whose thread's state is gone (its
    /// range closed through the recorder); under the recorder's lock.
    pub(crate) fn close_range(&self, level: u32) {
        self.ring.open.0.close(level);
    }

    /// The thread index the producer registered with.
    pub(crate) fn thread(&self) -> u32 {
        self.ring.open.0.thread.load(Ordering::Relaxed)
    }

    /// Adds the records the producer dropped so far, by kind, to `out`.
    pub(crate) fn add_dropped(&self, out: &mut [u64; KINDS]) {
        for (sum, count) in out.iter_mut().zip(&self.ring.dropped) {
            *sum += count.load(Ordering::Relaxed);
        }
    }

    /// Whether committed bytes are waiting.
    #[cfg(test)]
    pub(crate) fn has_pending(&self) -> bool {
        self.ring.producer.0.head.load(Ordering::Acquire) != self.tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open ranges are reported outermost first; a range closed out of order frees its slot
    /// and, once the ranges inside it close, its level; past [`OPEN_RANGES`] the innermost
    /// are tracked; a range whose closing record was drained is not reported.
    #[test]
    fn open_ranges_are_tracked_in_any_closing_order() {
        let (mut producer, mut consumer) = ring(256).unwrap();
        producer.set_thread(7);
        let open = |c: &Consumer| {
            let mut v = Vec::new();
            c.open_ranges(|t, n, s| v.push((t, n, s)));
            v
        };
        let a = producer.open_range(1, 10);
        let b = producer.open_range(2, 20);
        let c = producer.open_range(3, 30);
        assert_eq!(open(&consumer), [(7, 1, 10), (7, 2, 20), (7, 3, 30)]);
        producer.close_range(b);
        assert_eq!(open(&consumer), [(7, 1, 10), (7, 3, 30)]);
        producer.close_range(c);
        assert_eq!(open(&consumer), [(7, 1, 10)]);
        // b's level was freed with c's: the next range takes it.
        assert_eq!(producer.open_range(4, 40), 1);
        producer.close_range(1);
        producer.close_range(a);
        assert_eq!(open(&consumer), []);
        // Deeper than the table: the innermost are tracked, where a crash happens.
        let levels: Vec<u32> = (0..OPEN_RANGES as u32 + 8)
            .map(|i| producer.open_range(100 + i, u64::from(i)))
            .collect();
        let seen = open(&consumer);
        assert_eq!(seen.len(), OPEN_RANGES);
        assert_eq!(seen[0].1, 108, "the outermost 8 are not tracked");
        assert_eq!(seen.last().unwrap().1, 100 + OPEN_RANGES as u32 + 7);
        for level in levels.into_iter().rev() {
            producer.close_range(level);
        }
        assert_eq!(open(&consumer), []);
        // A range whose closing record is drained is closed, even before its slot is freed;
        // one whose record is not drained yet is still open.
        let d = producer.open_range(5, 50);
        producer.closing_range(d);
        assert_eq!(open(&consumer), [(7, 5, 50)], "its record not pushed yet");
        assert_eq!(producer.push(&[0u8; 16]), Push::Done);
        assert_eq!(open(&consumer), [(7, 5, 50)], "pushed, not drained");
        let mut out = Vec::new();
        consumer.drain_into(&mut out);
        assert_eq!(open(&consumer), [], "its record drained");
        producer.close_range(d);
        assert_eq!(open(&consumer), []);
        // Closed through the consumer (the thread's state gone): as from the producer.
        let e = producer.open_range(6, 60);
        consumer.close_range(e);
        assert_eq!((open(&consumer), consumer.thread()), (vec![], 7));
    }

    #[test]
    fn push_and_drain_wraps_around() {
        let (mut p, mut c) = ring(64).unwrap();
        let mut out = Vec::new();
        let mut expected = Vec::new();
        for i in 0..200u8 {
            let frame = [i, i.wrapping_mul(3), 7, 9, 11];
            match p.push(&frame) {
                Push::Done | Push::DoneWake => expected.extend_from_slice(&frame),
                Push::Full => {
                    c.drain_into(&mut out);
                    assert_ne!(p.push(&frame), Push::Full);
                    expected.extend_from_slice(&frame);
                }
                Push::Closed => unreachable!(),
            }
        }
        c.drain_into(&mut out);
        assert_eq!(out, expected);
    }

    #[test]
    fn full_ring_refuses_and_wakes_once_per_drain() {
        let (mut p, mut c) = ring(64).unwrap();
        assert_eq!(p.capacity(), 64);
        // The high-water mark is a quarter of the ring: 16 of 64 bytes.
        let frame = [1u8; 12];
        assert_eq!(p.push(&frame), Push::Done);
        assert_eq!(p.push(&frame), Push::DoneWake);
        assert_eq!(p.push(&frame), Push::Done);
        assert_eq!(p.push(&frame), Push::Done);
        assert_eq!(p.push(&frame), Push::Done);
        assert_eq!(p.push(&frame), Push::Full);
        let mut out = Vec::new();
        assert_eq!(c.drain_into(&mut out), 60);
        assert!(!c.has_pending());
        assert_eq!(p.push(&frame), Push::Done);
        assert_eq!(p.push(&frame), Push::DoneWake);
    }

    #[test]
    fn push_fixed_commits_only_len_and_wraps() {
        let (mut p, mut c) = ring(64).unwrap();
        let mut out = Vec::new();
        let mut expected = Vec::new();
        for i in 0..100u8 {
            let buf = [i; 24];
            let len = 1 + usize::from(i % 20);
            if p.push_fixed(&buf, len) == Push::Full {
                c.drain_into(&mut out);
                assert_ne!(p.push_fixed(&buf, len), Push::Full);
            }
            expected.extend_from_slice(&buf[..len]);
        }
        c.drain_into(&mut out);
        assert_eq!(out, expected);
    }

    #[test]
    fn close_and_orphan_flags() {
        let (mut p, c) = ring(64).unwrap();
        p.count_dropped(3);
        let mut dropped = [0; KINDS];
        c.add_dropped(&mut dropped);
        assert_eq!((dropped[3], dropped.iter().sum::<u64>()), (1, 1));
        assert!(p.is_paired_with(&c));
        c.close();
        assert_eq!(p.push(&[1]), Push::Closed);
        assert!(!c.is_orphaned());
        drop(p);
        assert!(c.is_orphaned());
    }

    #[test]
    fn concurrent_producer_and_consumer_preserve_bytes() {
        let (mut p, mut c) = ring(256).unwrap();
        let n = 50_000u32;
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                let frame = i.to_le_bytes();
                while p.push(&frame) == Push::Full {
                    std::hint::spin_loop();
                }
            }
        });
        let mut out = Vec::new();
        while out.len() < n as usize * 4 {
            c.drain_into(&mut out);
        }
        producer.join().unwrap();
        for (i, chunk) in out.chunks(4).enumerate() {
            assert_eq!(u32::from_le_bytes(chunk.try_into().unwrap()), i as u32);
        }
    }
}
