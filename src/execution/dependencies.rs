//! Hazard inference over byte ranges.
//!
//! # Design
//!
//! Operations arrive in program order, each with its uses (a buffer byte range and an
//! [`Access`]). The [`Frontier`] keeps, per buffer, disjoint *segments* ordered by start;
//! each segment remembers the last operation that wrote it and every operation that read
//! it since that write:
//!
//! ```text
//!   buffer 7:  [0 ......... 4096)[4096 ........ 8192)
//!               writer: op 2      writer: op 0
//!               readers: [3, 4]   readers: []
//! ```
//!
//! A new operation `n` that reads a segment depends on its writer (read-after-write); one
//! that writes depends on its writer (write-after-write, unless it also reads, which is
//! read-after-write) and on each reader since (write-after-read). Hazards are computed for
//! all of `n`'s uses first and applied after, so an operation never depends on itself.
//! Afterwards a write makes `n` the segment's writer and clears its readers; a read adds
//! `n` to the readers. Segments are split at use boundaries and merged again where
//! neighbours end up in the same state, so the list stays as short as the access pattern.
//!
//! Each [`Hazard`] keeps its kind and the exact byte range that caused it: the trace and
//! the timeline show "op 4 waited on op 2, read-after-write, buffer 7 bytes 0..4096".
//!
//! [`summarize`] merges an operation group's uses into the fewest disjoint ranges per
//! buffer, each with the union of the accesses that cover it.

use crate::{Access, BufferView};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// Why one operation must wait for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HazardKind {
    /// The consumer reads bytes the producer wrote.
    ReadAfterWrite,
    /// The consumer overwrites bytes the producer read.
    WriteAfterRead,
    /// The consumer overwrites bytes the producer wrote.
    WriteAfterWrite,
}

impl HazardKind {
    /// The short form used in tables: `RAW`, `WAR`, `WAW`.
    pub fn short(self) -> &'static str {
        match self {
            HazardKind::ReadAfterWrite => "RAW",
            HazardKind::WriteAfterRead => "WAR",
            HazardKind::WriteAfterWrite => "WAW",
        }
    }

    /// The kind of hazard between an earlier `producer` access and a later `consumer`
    /// access of the same bytes, or `None` when both only read.
    pub fn between(producer: Access, consumer: Access) -> Option<HazardKind> {
        if producer.writes() {
            Some(if consumer.reads() {
                HazardKind::ReadAfterWrite
            } else {
                HazardKind::WriteAfterWrite
            })
        } else if consumer.writes() {
            Some(HazardKind::WriteAfterRead)
        } else {
            None
        }
    }
}

/// An ordering edge: the consumer waits for `producer` because of `kind` on `range` of
/// buffer `buffer`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hazard {
    /// Index of the producing operation (or region).
    pub producer: usize,
    /// Why.
    pub kind: HazardKind,
    /// Buffer id.
    pub buffer: u64,
    /// Byte range within the buffer.
    pub range: Range<usize>,
}

/// A declared use of a byte range.
#[derive(Clone, Debug)]
pub(crate) struct Use {
    pub view: BufferView,
    pub access: Access,
}

impl Use {
    pub fn buffer_id(&self) -> u64 {
        self.view.buffer().id()
    }
    /// Whether the two uses must be ordered.
    pub fn conflicts(&self, other: &Use) -> bool {
        self.access.conflicts_with(other.access) && self.view.conflicts(&other.view)
    }
}

/// A segment of a buffer (keyed by its start in [`Segments`]): its last writer and the
/// readers since.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Segment {
    end: usize,
    writer: Option<usize>,
    readers: Vec<usize>,
}

impl Segment {
    /// Whether `next`, starting where this one ends, holds the same state.
    fn continues_as(&self, start: usize, next: &Segment) -> bool {
        self.end == start && self.writer == next.writer && self.readers == next.readers
    }
}

/// One buffer's disjoint segments by start: a split or a merge in the middle of many is a
/// tree update, not a shift of every segment after it (a graph of 100,000 regions over as
/// many pieces of a buffer spent 72% of `prepare` moving a sorted list's tail).
type Segments = BTreeMap<usize, Segment>;

/// The per-buffer frontier of last writers and readers since.
#[derive(Default, Debug)]
pub(crate) struct Frontier {
    buffers: HashMap<u64, Segments>,
}

/// Splits the segment containing `position` strictly inside it.
fn split_at(segments: &mut Segments, position: usize) {
    if let Some((_, segment)) = segments.range_mut(..position).next_back()
        && position < segment.end
    {
        let right = segment.clone();
        segment.end = position;
        segments.insert(position, right);
    }
}

/// Ensures segments tile `range` exactly (splitting at its ends, filling gaps).
fn cover(segments: &mut Segments, range: &Range<usize>) {
    split_at(segments, range.start);
    split_at(segments, range.end);
    let mut position = range.start;
    let mut gaps = Vec::new();
    for (&start, segment) in segments.range(range.clone()) {
        if position < start {
            gaps.push(position..start);
        }
        position = segment.end;
    }
    if position < range.end {
        gaps.push(position..range.end);
    }
    for gap in gaps {
        segments.insert(
            gap.start,
            Segment {
                end: gap.end,
                writer: None,
                readers: Vec::new(),
            },
        );
    }
}

/// Merges the segments inside `changed` and its two neighbours where touching ones ended in
/// one state: the rest were merged before, so only these can merge now.
fn merge_adjacent(segments: &mut Segments, changed: &Range<usize>) {
    let first =
        (segments.range(..changed.start).next_back()).map_or(changed.start, |(&start, _)| start);
    let last = (segments.range(changed.end..).next()).map_or(changed.end, |(&start, _)| start);
    let starts: Vec<usize> = segments.range(first..=last).map(|(&s, _)| s).collect();
    let mut kept = starts[0];
    for &next in &starts[1..] {
        let merge = segments[&kept].continues_as(next, &segments[&next]);
        if merge {
            let end = segments.remove(&next).expect("listed").end;
            segments.get_mut(&kept).expect("kept").end = end;
        } else {
            kept = next;
        }
    }
}

/// The uses that touch a byte, each with its buffer id and byte range (an empty view
/// conflicts with nothing).
fn touching<'a>(
    uses: impl IntoIterator<Item = &'a Use>,
) -> impl Iterator<Item = (&'a Use, u64, Range<usize>)> {
    (uses.into_iter())
        .filter(|u| !u.view.is_empty())
        .map(|u| (u, u.buffer_id(), u.view.range()))
}

/// `hazards` sorted by producer, kind, buffer and start, with touching ranges of one
/// producer, kind and buffer merged: sorted first, not merged one by one (a write over bytes
/// read by many regions gives a hazard per reader).
fn merged(mut hazards: Vec<Hazard>) -> Vec<Hazard> {
    hazards.sort_unstable_by_key(|h| (h.producer, h.kind, h.buffer, h.range.start));
    hazards.dedup_by(|next, kept| {
        let touching = kept.producer == next.producer
            && kept.kind == next.kind
            && kept.buffer == next.buffer
            && next.range.start <= kept.range.end;
        if touching {
            kept.range.end = kept.range.end.max(next.range.end);
        }
        touching
    });
    hazards
}

/// The hazards of a use with `access` of `bytes` of `buffer` on a segment last written by
/// `writer` and read by `readers` since: read-after-write (write-after-write where it only
/// writes) on the writer, write-after-read on each reader where it writes.
fn segment_hazards(
    hazards: &mut Vec<Hazard>,
    (buffer, bytes, access): (u64, Range<usize>, Access),
    writer: Option<usize>,
    readers: impl Iterator<Item = usize>,
) {
    if let Some(writer) = writer {
        hazards.push(Hazard {
            producer: writer,
            kind: if access.reads() {
                HazardKind::ReadAfterWrite
            } else {
                HazardKind::WriteAfterWrite
            },
            buffer,
            range: bytes.clone(),
        });
    }
    if access.writes() {
        hazards.extend(readers.map(|reader| Hazard {
            producer: reader,
            kind: HazardKind::WriteAfterRead,
            buffer,
            range: bytes.clone(),
        }));
    }
}

impl Frontier {
    /// The hazards of operation `index` with `uses`, then records its uses.
    pub fn hazards(&mut self, index: usize, uses: &[Use]) -> Vec<Hazard> {
        let mut hazards = Vec::new();
        for (use_, buffer, range) in touching(uses) {
            let segments = self.buffers.entry(buffer).or_default();
            cover(segments, &range);
            for (&start, segment) in segments.range(range.clone()) {
                segment_hazards(
                    &mut hazards,
                    (buffer, start..segment.end, use_.access),
                    segment.writer.filter(|&w| w != index),
                    segment.readers.iter().copied().filter(|&r| r != index),
                );
            }
        }
        for (use_, buffer, range) in touching(uses) {
            let segments = self.buffers.get_mut(&buffer).expect("covered above");
            cover(segments, &range);
            for (_, segment) in segments.range_mut(range.clone()) {
                if use_.access.writes() {
                    segment.writer = Some(index);
                    segment.readers.clear();
                } else if !segment.readers.contains(&index) {
                    segment.readers.push(index);
                }
            }
            merge_adjacent(segments, &range);
        }
        merged(hazards)
    }

    /// The distinct producers operation `index` depends on, ascending.
    #[cfg(test)]
    pub fn dependencies(&mut self, index: usize, uses: &[Use]) -> Vec<usize> {
        let mut producers: Vec<usize> = self
            .hazards(index, uses)
            .iter()
            .map(|h| h.producer)
            .collect();
        producers.dedup();
        producers
    }

    #[cfg(test)]
    fn segments(&self, buffer: u64) -> Vec<(usize, usize, Option<usize>, Vec<usize>)> {
        self.buffers.get(&buffer).map_or_else(Vec::new, |segments| {
            segments
                .iter()
                .map(|(&start, s)| (start, s.end, s.writer, s.readers.clone()))
                .collect()
        })
    }
}

impl Frontier {
    /// The bytes of `uses` (summarized) that no operation recorded so far wrote: where a
    /// later submission's region must wait across for an earlier submission ([`CrossUses`]).
    /// `None` when that is all of them.
    pub fn unwritten(&self, uses: &[Use]) -> Option<Vec<Use>> {
        let mut narrowed: Option<Vec<Use>> = None;
        for (index, use_) in uses.iter().enumerate() {
            let (buffer, range) = (use_.buffer_id(), use_.view.range());
            if range.is_empty() {
                // Conflicts with nothing (`summarize` drops these).
                continue;
            }
            let written = self.buffers.get(&buffer).map_or_else(Vec::new, |segments| {
                let before = segments.range(..=range.start).next_back();
                let after = segments.range(range.start + 1..range.end);
                (before.into_iter().chain(after))
                    .filter(|(_, s)| s.writer.is_some())
                    .map(|(&start, s)| start.max(range.start)..s.end.min(range.end))
                    .filter(|bytes| bytes.start < bytes.end)
                    .collect()
            });
            if written.is_empty() && narrowed.is_none() {
                continue;
            }
            let narrowed = narrowed.get_or_insert_with(|| uses[..index].to_vec());
            let mut position = range.start;
            for bytes in written
                .into_iter()
                .chain(std::iter::once(range.end..range.end))
            {
                if position < bytes.start {
                    let view = (use_.view.buffer().view(position..bytes.start))
                        .expect("inside the use's own view");
                    narrowed.push(Use {
                        view,
                        access: use_.access,
                    });
                }
                position = position.max(bytes.end);
            }
        }
        narrowed
    }
}

/// Per region of a prepared graph, the uses its cross waits on earlier submissions are
/// looked up for: the bytes no earlier region of the graph wrote. A region that touches
/// bytes an earlier region of its graph wrote depends on that writer, transitively on the
/// graph's first writer of them, which waits across for every earlier submission's
/// conflicting use of those bytes (a write conflicts with every access); the region runs only
/// after that writer is done (a failure cancels the rest of its submission), so its own wait
/// would be implied. Without this, a later graph whose regions rewrite bytes waited on every
/// earlier reader once per rewriting region: N readers before M writers made N x M waits
/// (and as many `CrossWait` records when traced).
#[derive(Default)]
pub(crate) struct CrossUses {
    /// The regions whose cross uses are fewer bytes than their uses, ascending.
    narrowed: Box<[u32]>,
    /// `narrowed[i]`'s cross uses are `uses[start[i]..start[i + 1]]`.
    start: Box<[u32]>,
    uses: Box<[Use]>,
}

impl CrossUses {
    /// Of `(region, its cross uses)` for the regions whose cross uses are narrower, by
    /// region.
    pub fn new(narrowed: Vec<(usize, Vec<Use>)>) -> CrossUses {
        let mut start = Vec::with_capacity(narrowed.len() + 1);
        let mut regions = Vec::with_capacity(narrowed.len());
        let mut uses = Vec::new();
        for (region, list) in narrowed {
            regions.push(region as u32);
            start.push(uses.len() as u32);
            uses.extend(list);
        }
        start.push(uses.len() as u32);
        CrossUses {
            narrowed: regions.into(),
            start: start.into(),
            uses: uses.into(),
        }
    }

    /// The cross uses of `region`, whose uses are `uses`.
    #[inline]
    pub fn of<'a>(&'a self, region: usize, uses: &'a [Use]) -> &'a [Use] {
        if self.narrowed.is_empty() {
            return uses;
        }
        match self.narrowed.binary_search(&(region as u32)) {
            Ok(i) => &self.uses[self.start[i] as usize..self.start[i + 1] as usize],
            Err(_) => uses,
        }
    }
}

/// A prepared graph's [`Frontier`] after its last region, frozen flat (two allocations, as
/// [`super::submit::Dependents`]): per buffer, the disjoint segments its regions touched,
/// each with the last region that wrote it and the regions that read it since.
///
/// A later submission's region that conflicts with any region of the graph conflicts with
/// one of these (a region that touched bytes before their last writer is a dependency of
/// that writer, transitively; one that read them since is listed), so waiting for them
/// orders it after every region it conflicts with: the cross-submission form of the
/// frontier the graph's own dependencies come from, found by a binary search per use. The
/// scheduler compared every pair of regions of the two submissions before, quadratic for
/// two large graphs in flight at once. The transitivity holds for regions that succeed (a
/// region runs only after its dependencies are done); a wait on a region that failed or was
/// cancelled lasts until its submission has left ([`super::scheduler`]).
#[derive(Default)]
pub(crate) struct Tail {
    /// By buffer id, then start.
    segments: Box<[TailSegment]>,
    /// The readers of every segment, one run each.
    readers: Box<[u32]>,
}

struct TailSegment {
    buffer: u64,
    start: usize,
    end: usize,
    /// The last writer, `u32::MAX` for none.
    writer: u32,
    /// `Tail::readers[readers.0..readers.1]`.
    readers: (u32, u32),
}

impl Frontier {
    /// The frontier as it stands, frozen ([`Tail`]).
    pub fn into_tail(self) -> Tail {
        let mut buffers: Vec<(u64, Segments)> = self.buffers.into_iter().collect();
        buffers.sort_unstable_by_key(|(id, _)| *id);
        let mut segments = Vec::new();
        let mut readers = Vec::new();
        for (buffer, list) in buffers {
            for (start, s) in list {
                if s.writer.is_none() && s.readers.is_empty() {
                    continue;
                }
                let first = readers.len() as u32;
                readers.extend(s.readers.iter().map(|&r| r as u32));
                segments.push(TailSegment {
                    buffer,
                    start,
                    end: s.end,
                    writer: s.writer.map_or(u32::MAX, |w| w as u32),
                    readers: (first, readers.len() as u32),
                });
            }
        }
        Tail {
            segments: segments.into(),
            readers: readers.into(),
        }
    }
}

impl Tail {
    /// The hazards of a later operation with `uses` on the graph's regions as they stand at
    /// its end ([`Tail`]), as [`Frontier::hazards`] gives them: `producer` is the earlier
    /// graph's region, each range the bytes of one conflict (touching ones of a producer
    /// and kind merged), sorted by producer, kind, buffer and start.
    pub fn hazards(&self, uses: &[Use]) -> Vec<Hazard> {
        let mut hazards = Vec::new();
        for (use_, buffer, range) in touching(uses) {
            let first = self.segments.partition_point(|s| {
                s.buffer < buffer || (s.buffer == buffer && s.end <= range.start)
            });
            for s in self.segments[first..]
                .iter()
                .take_while(|s| s.buffer == buffer && s.start < range.end)
            {
                let bytes = s.start.max(range.start)..s.end.min(range.end);
                let (from, to) = s.readers;
                segment_hazards(
                    &mut hazards,
                    (buffer, bytes, use_.access),
                    (s.writer != u32::MAX).then_some(s.writer as usize),
                    self.readers[from as usize..to as usize]
                        .iter()
                        .map(|&r| r as usize),
                );
            }
        }
        merged(hazards)
    }
}

/// Whether any use of `a` conflicts with any of `b`, both [`summarize`]d (by buffer, then
/// offset, disjoint within a buffer): a binary search per use of the shorter, not every pair.
pub(crate) fn any_conflict(a: &[Use], b: &[Use]) -> bool {
    let (few, many) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if many.len() <= 8 {
        return few.iter().any(|u| many.iter().any(|m| u.conflicts(m)));
    }
    few.iter().any(|u| {
        let (buffer, start, end) = (
            u.buffer_id(),
            u.view.offset(),
            u.view.offset() + u.view.len(),
        );
        let first = many.partition_point(|m| {
            let id = m.buffer_id();
            id < buffer || (id == buffer && m.view.offset() + m.view.len() <= start)
        });
        many[first..]
            .iter()
            .take_while(|m| m.buffer_id() == buffer && m.view.offset() < end)
            .any(|m| u.conflicts(m))
    })
}

/// Hazards between an earlier group of uses and a later one (cross-submission waits):
/// one per conflicting pair, with the intersecting bytes. `producer` is left 0.
pub(crate) fn hazards_between(earlier: &[Use], later: &[Use]) -> Vec<Hazard> {
    let mut hazards = Vec::new();
    for e in earlier {
        for l in later {
            if let Some(kind) = HazardKind::between(e.access, l.access)
                && e.view.conflicts(&l.view)
            {
                let start = e.view.offset().max(l.view.offset());
                let end = (e.view.offset() + e.view.len()).min(l.view.offset() + l.view.len());
                hazards.push(Hazard {
                    producer: 0,
                    kind,
                    buffer: l.buffer_id(),
                    range: start..end,
                });
            }
        }
    }
    merged(hazards)
}

/// Merges uses into the fewest disjoint ranges per buffer, each carrying the union of the
/// accesses that cover it. Output is ordered by buffer id, then offset.
///
/// One sweep over the uses' ends, sorted, counting the accesses open at each point: a graph's
/// summary of 100,000 regions over as many pieces of a buffer compared every piece with every
/// use before (a search of the buffers per use, then every use per pair of points).
pub(crate) fn summarize(uses: impl IntoIterator<Item = Use>) -> Vec<Use> {
    let kind = |a: Access| match a {
        Access::Read => 0,
        Access::Write => 1,
        Access::ReadWrite => 2,
    };
    const KINDS: [Access; 3] = [Access::Read, Access::Write, Access::ReadWrite];
    // (buffer id, position, +1 or -1, access kind, the use whose buffer handle it is).
    let mut ends: Vec<(u64, usize, i8, u8)> = Vec::new();
    let mut handles: Vec<(u64, crate::Buffer)> = Vec::new();
    for use_ in uses {
        if use_.view.is_empty() {
            continue;
        }
        let id = use_.buffer_id();
        let range = use_.view.range();
        let k = kind(use_.access);
        ends.push((id, range.start, 1, k));
        ends.push((id, range.end, -1, k));
        if handles.last().is_none_or(|(last, _)| *last != id) {
            handles.push((id, use_.view.buffer().clone()));
        }
    }
    handles.sort_unstable_by_key(|(id, _)| *id);
    handles.dedup_by_key(|(id, _)| *id);
    ends.sort_unstable_by_key(|&(id, position, ..)| (id, position));
    let mut out = Vec::new();
    let mut i = 0;
    while i < ends.len() {
        let id = ends[i].0;
        let buffer = &handles[handles.partition_point(|(h, _)| *h < id)].1;
        let mut open = [0u32; 3];
        let mut current: Option<(usize, usize, Access)> = None;
        while i < ends.len() && ends[i].0 == id {
            let position = ends[i].1;
            while i < ends.len() && ends[i].0 == id && ends[i].1 == position {
                let (_, _, delta, k) = ends[i];
                let slot = &mut open[k as usize];
                *slot = if delta > 0 { *slot + 1 } else { *slot - 1 };
                i += 1;
            }
            let next = (i < ends.len() && ends[i].0 == id).then(|| ends[i].1);
            let access = (open.iter().zip(KINDS))
                .filter(|&(&n, _)| n > 0)
                .map(|(_, a)| a)
                .reduce(Access::union);
            match (current, access, next) {
                (Some((s, e, a)), Some(access), Some(end)) if e == position && a == access => {
                    current = Some((s, end, a))
                }
                (previous, access, next) => {
                    if let Some((s, e, a)) = previous {
                        out.push(Use {
                            view: buffer.view(s..e).expect("inside the buffer"),
                            access: a,
                        });
                    }
                    current = access.zip(next).map(|(a, end)| (position, end, a));
                }
            }
        }
        if let Some((s, e, a)) = current {
            out.push(Use {
                view: buffer.view(s..e).expect("inside the buffer"),
                access: a,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Placement, Runtime, RuntimeOptions};

    fn runtime() -> Runtime {
        Runtime::new(RuntimeOptions::sim()).unwrap()
    }

    fn use_(buffer: &crate::Buffer, range: Range<usize>, access: Access) -> Use {
        Use {
            view: buffer.view(range).unwrap(),
            access,
        }
    }

    #[test]
    fn read_after_write_keeps_kind_and_exact_range() {
        let rt = runtime();
        let b = rt.buffer(8192, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        assert!(f.hazards(0, &[use_(&b, 0..8192, Access::Write)]).is_empty());
        let h = f.hazards(1, &[use_(&b, 1000..2000, Access::Read)]);
        assert_eq!(
            h,
            vec![Hazard {
                producer: 0,
                kind: HazardKind::ReadAfterWrite,
                buffer: b.id(),
                range: 1000..2000
            }]
        );
    }

    #[test]
    fn write_after_read_depends_on_every_reader_since_the_writer() {
        let rt = runtime();
        let b = rt.buffer(100, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&b, 0..100, Access::Write)]);
        f.hazards(1, &[use_(&b, 0..50, Access::Read)]);
        f.hazards(2, &[use_(&b, 40..100, Access::Read)]);
        let h = f.hazards(3, &[use_(&b, 30..60, Access::Write)]);
        let id = b.id();
        assert_eq!(
            h,
            vec![
                Hazard {
                    producer: 0,
                    kind: HazardKind::WriteAfterWrite,
                    buffer: id,
                    range: 30..60
                },
                Hazard {
                    producer: 1,
                    kind: HazardKind::WriteAfterRead,
                    buffer: id,
                    range: 30..50
                },
                Hazard {
                    producer: 2,
                    kind: HazardKind::WriteAfterRead,
                    buffer: id,
                    range: 40..60
                },
            ]
        );
        // After the write, readers 1 and 2 remain only outside 30..60.
        assert_eq!(
            f.segments(id),
            vec![
                (0, 30, Some(0), vec![1]),
                (30, 60, Some(3), vec![]),
                (60, 100, Some(0), vec![2]),
            ]
        );
    }

    #[test]
    fn disjoint_ranges_and_reads_never_depend() {
        let rt = runtime();
        let b = rt.buffer(100, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&b, 0..50, Access::Write)]);
        assert!(f.hazards(1, &[use_(&b, 50..100, Access::Write)]).is_empty());
        f.hazards(2, &[use_(&b, 60..70, Access::Read)]);
        assert!(
            f.hazards(3, &[use_(&b, 60..70, Access::Read)])
                .iter()
                .all(|h| h.kind == HazardKind::ReadAfterWrite && h.producer == 1)
        );
    }

    #[test]
    fn read_write_after_write_is_read_after_write() {
        let rt = runtime();
        let b = rt.buffer(16, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&b, 0..16, Access::Write)]);
        let h = f.hazards(1, &[use_(&b, 0..16, Access::ReadWrite)]);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].kind, HazardKind::ReadAfterWrite);
    }

    #[test]
    fn an_operation_never_depends_on_itself() {
        let rt = runtime();
        let b = rt.buffer(64, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        // A copy inside one buffer: reads 0..32, writes 32..64; then an aliasing op.
        assert!(
            f.hazards(
                0,
                &[
                    use_(&b, 32..64, Access::Write),
                    use_(&b, 0..32, Access::Read)
                ]
            )
            .is_empty()
        );
        let h = f.hazards(
            1,
            &[
                use_(&b, 0..64, Access::Read),
                use_(&b, 0..64, Access::Write),
            ],
        );
        assert!(h.iter().all(|h| h.producer == 0), "{h:?}");
    }

    #[test]
    fn segments_merge_back_when_state_matches() {
        let rt = runtime();
        let b = rt.buffer(100, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&b, 0..50, Access::Write)]);
        f.hazards(0, &[use_(&b, 50..100, Access::Write)]);
        assert_eq!(f.segments(b.id()), vec![(0, 100, Some(0), vec![])]);
    }

    #[test]
    fn dependencies_are_distinct_and_sorted() {
        let rt = runtime();
        let a = rt.buffer(10, Placement::GpuLocal).unwrap();
        let b = rt.buffer(10, Placement::GpuLocal).unwrap();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&a, 0..10, Access::Write)]);
        f.hazards(1, &[use_(&b, 0..10, Access::Write)]);
        f.hazards(2, &[use_(&a, 0..5, Access::Read)]);
        assert_eq!(
            f.dependencies(
                3,
                &[
                    use_(&a, 0..10, Access::Write),
                    use_(&b, 0..10, Access::Read)
                ]
            ),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn summarize_merges_into_fewest_disjoint_ranges() {
        let rt = runtime();
        let a = rt.buffer(200, Placement::GpuLocal).unwrap();
        let b = rt.buffer(200, Placement::GpuLocal).unwrap();
        let summary = summarize(vec![
            use_(&a, 0..100, Access::Read),
            use_(&a, 50..150, Access::Write),
            use_(&a, 150..160, Access::Write),
            use_(&b, 0..10, Access::Read),
            use_(&b, 10..20, Access::Read),
            use_(&b, 30..40, Access::Read),
        ]);
        let got: Vec<_> = summary
            .iter()
            .map(|u| (u.buffer_id(), u.view.range(), u.access))
            .collect();
        assert_eq!(
            got,
            vec![
                (a.id(), 0..50, Access::Read),
                (a.id(), 50..100, Access::ReadWrite),
                (a.id(), 100..160, Access::Write),
                (b.id(), 0..20, Access::Read),
                (b.id(), 30..40, Access::Read),
            ]
        );
    }

    /// Hazards follow the bytes, not the handle: views of one buffer through its clones
    /// conflict where their ranges share a byte, and adjacent ranges (one ends where the
    /// other starts) never do, within a graph and between submissions.
    #[test]
    fn clones_of_a_buffer_share_its_hazards_and_adjacent_ranges_never_conflict() {
        let rt = runtime();
        let b = rt.buffer(64, Placement::GpuLocal).unwrap();
        let clone = b.clone();
        let mut f = Frontier::default();
        f.hazards(0, &[use_(&b, 0..32, Access::Write)]);
        assert!(
            f.hazards(1, &[use_(&clone, 32..64, Access::Write)])
                .is_empty()
        );
        assert_eq!(
            f.hazards(2, &[use_(&clone, 31..33, Access::Read)]),
            vec![
                Hazard {
                    producer: 0,
                    kind: HazardKind::ReadAfterWrite,
                    buffer: b.id(),
                    range: 31..32
                },
                Hazard {
                    producer: 1,
                    kind: HazardKind::ReadAfterWrite,
                    buffer: b.id(),
                    range: 32..33
                },
            ]
        );
        let earlier = [use_(&b, 0..32, Access::Write)];
        assert!(hazards_between(&earlier, &[use_(&clone, 32..64, Access::Write)]).is_empty());
        assert_eq!(
            hazards_between(&earlier, &[use_(&clone, 16..40, Access::Write)]),
            vec![Hazard {
                producer: 0,
                kind: HazardKind::WriteAfterWrite,
                buffer: b.id(),
                range: 16..32
            }]
        );
        // An empty view conflicts with nothing.
        assert!(f.hazards(3, &[use_(&b, 10..10, Access::Write)]).is_empty());
        assert!(hazards_between(&earlier, &[use_(&clone, 10..10, Access::Write)]).is_empty());
    }

    #[test]
    fn hazards_between_groups_report_each_conflict() {
        let rt = runtime();
        let a = rt.buffer(4096, Placement::GpuLocal).unwrap();
        let earlier = [use_(&a, 0..4096, Access::Read)];
        let later = [use_(&a, 1024..2048, Access::Write)];
        assert_eq!(
            hazards_between(&earlier, &later),
            vec![Hazard {
                producer: 0,
                kind: HazardKind::WriteAfterRead,
                buffer: a.id(),
                range: 1024..2048
            }]
        );
        assert!(hazards_between(&earlier, &[use_(&a, 0..10, Access::Read)]).is_empty());
    }

    /// A random use of `buffers` buffers of `bytes` bytes: (buffer, start, end, access), of
    /// a length in `lens`, cut at the buffer's end.
    fn random_use(
        buffers: usize,
        bytes: usize,
        lens: Range<usize>,
    ) -> impl proptest::strategy::Strategy<Value = (usize, usize, usize, Access)> + Clone {
        use proptest::prelude::*;
        let access = prop_oneof![
            Just(Access::Read),
            Just(Access::Write),
            Just(Access::ReadWrite)
        ];
        (0..buffers, 0..bytes, lens, access)
            .prop_map(move |(b, start, len, a)| (b, start, (start + len).min(bytes), a))
    }

    /// Pushes the row of the region whose hazards are `hazards` to `before` (each region's
    /// ancestors among `regions`): its producers and theirs.
    fn push_ancestors(before: &mut Vec<Vec<bool>>, hazards: &[Hazard], regions: usize) {
        let mut row = vec![false; regions];
        for h in hazards {
            row[h.producer] = true;
            for (j, &b) in before[h.producer].iter().enumerate() {
                row[j] |= b;
            }
        }
        before.push(row);
    }

    /// Random graphs of up to 24 regions over two buffers and a later region: every region
    /// the later one conflicts with (pair by pair, the scheduler's check for small graphs) is
    /// one the graph's frontier end names ([`Tail`]) or a dependency, transitively, of one
    /// it names; it names no region the later one does not conflict with, and its ranges lie
    /// inside the conflicts.
    #[test]
    fn a_tail_names_every_conflict_directly_or_through_a_dependency() {
        use proptest::prelude::*;
        let rt = runtime();
        let buffers = [0, 1].map(|_| rt.buffer(64, Placement::GpuLocal).unwrap());
        let region = proptest::collection::vec(random_use(2, 64, 1..24), 1..4);
        let graph = proptest::collection::vec(region.clone(), 1..24);
        proptest!(|(graph in graph, later in region)| {
            let to_uses = |list: &[(usize, usize, usize, Access)]| -> Vec<Use> {
                summarize(list.iter().map(|&(b, s, e, a)| use_(&buffers[b], s..e, a)))
            };
            let regions: Vec<Vec<Use>> = graph.iter().map(|r| to_uses(r)).collect();
            let later = to_uses(&later);
            let mut frontier = Frontier::default();
            // Each region's dependencies, then their transitive closure.
            let mut before: Vec<Vec<bool>> = Vec::new();
            for (i, uses) in regions.iter().enumerate() {
                push_ancestors(&mut before, &frontier.hazards(i, uses), regions.len());
            }
            // Merged as far as they go: no touching neighbours in one state.
            for buffer in &buffers {
                let segments = frontier.segments(buffer.id());
                prop_assert!(segments.windows(2).all(|w| w[0].1 < w[1].0
                    || (w[0].2, &w[0].3) != (w[1].2, &w[1].3)), "{segments:?}");
            }
            let tail = frontier.into_tail().hazards(&later);
            let named: Vec<usize> = tail.iter().map(|h| h.producer).collect();
            for h in &tail {
                let pairs = hazards_between(&regions[h.producer], &later);
                prop_assert!(
                    pairs.iter().any(|p| p.kind == h.kind
                        && p.buffer == h.buffer
                        && p.range.start <= h.range.start
                        && h.range.end <= p.range.end)
                        || pairs.iter().any(|p| p.buffer == h.buffer
                            && p.range.start <= h.range.start
                            && h.range.end <= p.range.end),
                    "{h:?} not inside {pairs:?}"
                );
            }
            for (r, uses) in regions.iter().enumerate() {
                if hazards_between(uses, &later).is_empty() {
                    continue;
                }
                prop_assert!(
                    named.contains(&r) || named.iter().any(|&n| before[n][r]),
                    "region {r} conflicts, named {named:?}"
                );
            }
        });
    }

    /// Random graphs of up to 24 regions over two buffers, and an earlier use: every region
    /// that conflicts with it does so through its cross uses ([`Frontier::unwritten`]), or an
    /// ancestor of it does; the cross uses are inside the region's uses, and leave out only
    /// bytes an earlier region wrote.
    #[test]
    fn a_region_waits_across_for_its_bytes_or_through_an_ancestor() {
        use proptest::prelude::*;
        let rt = runtime();
        let buffers = [0, 1].map(|_| rt.buffer(64, Placement::GpuLocal).unwrap());
        let region = proptest::collection::vec(random_use(2, 64, 1..24), 1..4);
        let graph = proptest::collection::vec(region.clone(), 1..24);
        proptest!(|(graph in graph, earlier in region)| {
            let to_uses = |list: &[(usize, usize, usize, Access)]| -> Vec<Use> {
                summarize(list.iter().map(|&(b, s, e, a)| use_(&buffers[b], s..e, a)))
            };
            let regions: Vec<Vec<Use>> = graph.iter().map(|r| to_uses(r)).collect();
            let earlier = to_uses(&earlier);
            let mut frontier = Frontier::default();
            let mut before: Vec<Vec<bool>> = Vec::new();
            let mut cross: Vec<Vec<Use>> = Vec::new();
            // Bytes written so far, per buffer.
            let mut written = [[false; 64]; 2];
            for (i, uses) in regions.iter().enumerate() {
                let narrowed = frontier.unwritten(uses);
                let mine = narrowed.clone().unwrap_or_else(|| uses.clone());
                for u in &mine {
                    prop_assert!(uses.iter().any(|w| w.buffer_id() == u.buffer_id()
                        && w.access == u.access
                        && w.view.offset() <= u.view.offset()
                        && u.view.range().end <= w.view.range().end), "{u:?} outside {uses:?}");
                }
                for u in uses {
                    let b = buffers.iter().position(|x| x.id() == u.buffer_id()).unwrap();
                    for byte in u.view.range() {
                        let kept = mine.iter().any(|m| m.buffer_id() == u.buffer_id()
                            && m.view.range().contains(&byte));
                        prop_assert_eq!(kept, !written[b][byte], "byte {} of {:?}", byte, u);
                    }
                }
                let untouched = uses.iter().all(|u| {
                    let b = buffers.iter().position(|x| x.id() == u.buffer_id()).unwrap();
                    u.view.range().all(|byte| !written[b][byte])
                });
                prop_assert_eq!(narrowed.is_none(), untouched, "None only when nothing was written");
                push_ancestors(&mut before, &frontier.hazards(i, uses), regions.len());
                for u in uses.iter().filter(|u| u.access.writes()) {
                    let b = buffers.iter().position(|x| x.id() == u.buffer_id()).unwrap();
                    u.view.range().for_each(|byte| written[b][byte] = true);
                }
                cross.push(mine);
            }
            for (r, uses) in regions.iter().enumerate() {
                if hazards_between(&earlier, uses).is_empty() {
                    continue;
                }
                let waits = |x: usize| !hazards_between(&earlier, &cross[x]).is_empty();
                prop_assert!(
                    waits(r) || (0..r).any(|a| before[r][a] && waits(a)),
                    "region {r} conflicts with {earlier:?}; no wait of it or an ancestor does"
                );
            }
        });
    }

    /// [`any_conflict`]'s search gives what comparing every pair gives, past the few uses it
    /// compares pair by pair.
    #[test]
    fn any_conflict_is_every_pairs_answer() {
        use proptest::prelude::*;
        let rt = runtime();
        let buffers: Vec<_> = (0..4)
            .map(|_| rt.buffer(256, Placement::GpuLocal).unwrap())
            .collect();
        let group = proptest::collection::vec(random_use(4, 256, 1..40), 1..40);
        proptest!(|(a in group.clone(), b in group)| {
            let to_uses = |list: &[(usize, usize, usize, Access)]| -> Vec<Use> {
                summarize(list.iter().map(|&(i, s, e, x)| use_(&buffers[i], s..e, x)))
            };
            let (a, b) = (to_uses(&a), to_uses(&b));
            let every_pair = a.iter().any(|x| b.iter().any(|y| x.conflicts(y)));
            prop_assert_eq!(any_conflict(&a, &b), every_pair);
            prop_assert_eq!(any_conflict(&b, &a), every_pair);
        });
    }

    /// [`summarize`] against each byte's union of the accesses covering it: the same
    /// accesses byte by byte, ranges sorted and disjoint, neighbours that touch with one
    /// access merged.
    #[test]
    fn a_summary_is_each_bytes_union_in_the_fewest_ranges() {
        use proptest::prelude::*;
        let rt = runtime();
        let buffers = [
            rt.buffer(64, Placement::GpuLocal).unwrap(),
            rt.buffer(64, Placement::GpuLocal).unwrap(),
        ];
        let one = random_use(2, 64, 0..24);
        proptest!(|(list in proptest::collection::vec(one, 0..30))| {
            let summary = summarize(
                list.iter().map(|&(b, s, e, a)| use_(&buffers[b], s..e, a)),
            );
            for (b, buffer) in buffers.iter().enumerate() {
                let mut expected: Vec<Option<Access>> = vec![None; 64];
                for &(_, s, e, a) in list.iter().filter(|u| u.0 == b) {
                    for byte in &mut expected[s..e] {
                        *byte = Some(byte.map_or(a, |x| x.union(a)));
                    }
                }
                let mut got: Vec<Option<Access>> = vec![None; 64];
                let mine: Vec<_> = summary.iter().filter(|u| u.buffer_id() == buffer.id()).collect();
                for u in &mine {
                    for byte in &mut got[u.view.range()] {
                        prop_assert!(byte.is_none(), "overlapping ranges: {:?}", mine.iter().map(|u| u.view.range()).collect::<Vec<_>>());
                        *byte = Some(u.access);
                    }
                }
                prop_assert_eq!(&got, &expected);
                for pair in mine.windows(2) {
                    prop_assert!(pair[0].view.range().end <= pair[1].view.range().start);
                    prop_assert!(
                        pair[0].view.range().end < pair[1].view.range().start
                            || pair[0].access != pair[1].access
                    );
                }
            }
            let ids: Vec<u64> = summary.iter().map(Use::buffer_id).collect();
            prop_assert!(ids.windows(2).all(|w| w[0] <= w[1]));
        });
    }
}
