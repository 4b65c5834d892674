//! The in-memory entry format of the per-thread rings (never written to disk).
//!
//! Encoding a timing as postcard varints costs more than everything else on the hot path
//! together, so the recording thread does not do it: it stores a timing as a fixed-size
//! little-endian copy of its fields (a handful of stores), and the writer thread transcodes
//! it into the postcard frame when it drains the ring, as Tracy's serializer thread does.
//! Every other record is encoded to its postcard frame on the recording thread.
//!
//! | Kind byte | Then                                                                  |
//! |----------:|-----------------------------------------------------------------------|
//! | 0         | one frame as written to disk (varint length, postcard record)         |
//! | 1 / 2     | a [`RegionTiming`] without / with device span, [`TIMING_LEN`] bytes   |
//! |           | (without the device fields: [`TIMING_BASE_LEN`] bytes)                |
//! | 3 / 4     | an `OpTiming`: the region timing as for 1 / 2, then the node (`u32`)  |
//! | 5         | a deferred job: a `Box<DeferredJob>` as a little-endian `u64` address  |
//! | 6         | a [`RegionStarted`]: runtime `u32`, submission `u64`, region `u32`,    |
//! |           | time `u64` ([`STARTED_LEN`] bytes)                                     |
//!
//! A deferred job is work the recording thread hands to the writer thread (hashing a
//! buffer's contents, say) whose records must still appear at the job's place in that
//! thread's order: transcoding stops at it so the writer can run it in place.
//!
//! A region start is recorded before every region runs, as often as a timing: postcard on
//! the recording thread cost about 90 ns a region on the 2-core build machine
//! (`timed_zone_started` against `timed_zone`), so it is stored raw too.

use crate::format::{
    FrameEncoder, MAX_FRAME_PREFIX, MAX_TIMING_FRAME, encode_untimed_frame_in, read_varint_u32,
};
use crate::schema::{
    DeviceSpan, Record, RegionIndex, RegionStarted, RegionTiming, RuntimeId, SubmissionIndex,
};
use crate::summary::SummaryBuilder;
use std::ops::Range;

const FRAME: u8 = 0;
const REGION: u8 = 1;
const REGION_DEVICE: u8 = 2;
const OP: u8 = 3;
const OP_DEVICE: u8 = 4;
const DEFERRED: u8 = 5;
const STARTED: u8 = 6;

/// runtime u32, submission u64, region u32, time u64.
const STARTED_LEN: usize = 24;
/// Longest frame of a [`RegionStarted`]: prefix, tag, two u32 and two u64 varints.
const MAX_STARTED_FRAME: usize = 1 + 1 + 2 * 5 + 2 * 10;

/// Length of a deferred-job entry: kind byte and address.
pub(crate) const DEFERRED_ENTRY: usize = 9;

/// runtime u32, submission u64, region u32, start u64, end u64.
const TIMING_BASE_LEN: usize = 32;
/// Plus device start u64, device end u64.
const TIMING_LEN: usize = TIMING_BASE_LEN + 16;
/// Longest raw entry: kind, timing with device span, node.
pub(crate) const MAX_RAW_ENTRY: usize = 1 + TIMING_LEN + 4;

/// Encodes `record` as one ring entry in `scratch`; returns the entry's range in `scratch`.
///
/// # Errors
///
/// When the record's frame does not fit in `scratch` (the caller takes the slow path).
#[inline]
pub(crate) fn encode_entry(
    record: &Record,
    scratch: &mut [u8],
) -> Result<Range<usize>, postcard::Error> {
    match record {
        Record::RegionTiming(t) => raw_timing(t, None, scratch),
        Record::OpTiming(t) => raw_timing(&t.timing, Some(t.node.0), scratch),
        Record::RegionStarted(r) => raw_started(r, scratch),
        _ => {
            let Some(rest) = scratch.get_mut(1..) else {
                return Err(postcard::Error::SerializeBufferFull);
            };
            let base = rest.as_ptr() as usize;
            let frame = encode_untimed_frame_in(record, rest)?;
            // The frame sits somewhere in `rest`; put the kind byte just before it.
            let offset = frame.as_ptr() as usize - base;
            let end = 1 + offset + frame.len();
            scratch[offset] = FRAME;
            Ok(offset..end)
        }
    }
}

#[inline(always)]
fn raw_timing(
    t: &RegionTiming,
    node: Option<u32>,
    scratch: &mut [u8],
) -> Result<Range<usize>, postcard::Error> {
    let Some(out) = scratch.get_mut(..MAX_RAW_ENTRY) else {
        return Err(postcard::Error::SerializeBufferFull);
    };
    out[1..5].copy_from_slice(&t.runtime.0.to_le_bytes());
    out[5..13].copy_from_slice(&t.submission.0.to_le_bytes());
    out[13..17].copy_from_slice(&t.region.0.to_le_bytes());
    out[17..25].copy_from_slice(&t.start_ns.to_le_bytes());
    out[25..33].copy_from_slice(&t.end_ns.to_le_bytes());
    let mut len = 1 + TIMING_BASE_LEN;
    let mut kind = if node.is_some() { OP } else { REGION };
    if let Some(d) = t.device {
        out[33..41].copy_from_slice(&d.start_ns.to_le_bytes());
        out[41..49].copy_from_slice(&d.end_ns.to_le_bytes());
        len = 1 + TIMING_LEN;
        kind += 1;
    }
    if let Some(node) = node {
        out[len..len + 4].copy_from_slice(&node.to_le_bytes());
        len += 4;
    }
    out[0] = kind;
    Ok(0..len)
}

#[inline(always)]
fn raw_started(r: &RegionStarted, scratch: &mut [u8]) -> Result<Range<usize>, postcard::Error> {
    let Some(out) = scratch.get_mut(..1 + STARTED_LEN) else {
        return Err(postcard::Error::SerializeBufferFull);
    };
    out[0] = STARTED;
    out[1..5].copy_from_slice(&r.runtime.0.to_le_bytes());
    out[5..13].copy_from_slice(&r.submission.0.to_le_bytes());
    out[13..17].copy_from_slice(&r.region.0.to_le_bytes());
    out[17..25].copy_from_slice(&r.time_ns.to_le_bytes());
    Ok(0..1 + STARTED_LEN)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Decodes the raw timing after a kind byte (`b` starts after it).
fn timing_from(b: &[u8], device: bool) -> RegionTiming {
    RegionTiming {
        runtime: RuntimeId(u32_at(b, 0)),
        submission: SubmissionIndex(u64_at(b, 4)),
        region: RegionIndex(u32_at(b, 12)),
        start_ns: u64_at(b, 16),
        end_ns: u64_at(b, 24),
        device: device.then(|| DeviceSpan {
            start_ns: u64_at(b, 32),
            end_ns: u64_at(b, 40),
        }),
    }
}

/// The ring entry of a deferred job at `address` (a `Box<DeferredJob>` turned into a raw
/// pointer; whoever transcodes the entry owns the box again).
pub(crate) fn deferred_entry(address: usize) -> [u8; DEFERRED_ENTRY] {
    let mut entry = [DEFERRED; DEFERRED_ENTRY];
    entry[1..].copy_from_slice(&(address as u64).to_le_bytes());
    entry
}

/// The first entry of `entries`: its length in bytes and the most bytes its frame takes once
/// transcoded; `None` when `entries` is empty or does not start with a whole, well-formed
/// entry (for the fatal-signal flush, which transcodes one entry at a time into a buffer it
/// cannot grow, and must not panic on a ring a crash damaged).
pub(crate) fn entry_bounds(entries: &[u8]) -> Option<(usize, usize)> {
    let (&kind, rest) = entries.split_first()?;
    let (len, frame) = match kind {
        FRAME => {
            let (body, prefix) = read_varint_u32(rest)?;
            let len = prefix.checked_add(body as usize)?;
            (len, len)
        }
        REGION => (TIMING_BASE_LEN, MAX_TIMING_FRAME),
        REGION_DEVICE => (TIMING_LEN, MAX_TIMING_FRAME),
        OP => (TIMING_BASE_LEN + 4, MAX_TIMING_FRAME),
        OP_DEVICE => (TIMING_LEN + 4, MAX_TIMING_FRAME),
        DEFERRED => (DEFERRED_ENTRY - 1, 0),
        STARTED => (STARTED_LEN, MAX_STARTED_FRAME),
        _ => return None,
    };
    (len <= rest.len()).then_some((1 + len, frame))
}

/// What [`transcode`] did with a run of entries.
pub(crate) struct Transcoded {
    /// Records appended to `out`.
    pub records: u32,
    /// Bytes of `entries` consumed, up to and including a deferred job's entry.
    pub consumed: usize,
    /// The address of the deferred job transcoding stopped after, if it did.
    pub deferred: Option<usize>,
}

/// Transcodes ring entries (whole entries, as drained) into frames appended to `out`, with
/// `encoder` holding the state of the block being assembled. Stops after a deferred job's
/// entry, so the caller can run the job before the entries that follow it.
///
/// # Panics
///
/// On a malformed entry, which would be a bug in this crate: entries come only from
/// [`encode_entry`] and [`deferred_entry`].
pub(crate) fn transcode(
    entries: &[u8],
    encoder: &mut FrameEncoder,
    out: &mut Vec<u8>,
    mut summary: Option<&mut SummaryBuilder>,
) -> Transcoded {
    let mut records = 0;
    let mut at = 0;
    while let Some((&kind, rest)) = entries[at..].split_first() {
        let len = match kind {
            DEFERRED => {
                let address = u64_at(rest, 0) as usize;
                return Transcoded {
                    records,
                    consumed: at + DEFERRED_ENTRY,
                    deferred: Some(address),
                };
            }
            FRAME => {
                let (body, prefix) = read_varint_u32(rest).expect("ring frame prefix");
                let len = prefix + body as usize;
                if let Some(summary) = summary.as_deref_mut() {
                    summary.observe_frame(&rest[..len]);
                }
                out.extend_from_slice(&rest[..len]);
                len
            }
            STARTED => {
                let record = Record::RegionStarted(RegionStarted {
                    runtime: RuntimeId(u32_at(rest, 0)),
                    submission: SubmissionIndex(u64_at(rest, 4)),
                    region: RegionIndex(u32_at(rest, 12)),
                    time_ns: u64_at(rest, 16),
                });
                let mut frame = [0u8; MAX_STARTED_FRAME + MAX_FRAME_PREFIX];
                let frame = encode_untimed_frame_in(&record, &mut frame)
                    .expect("a region start fits its frame");
                out.extend_from_slice(frame);
                STARTED_LEN
            }
            REGION | REGION_DEVICE | OP | OP_DEVICE => {
                let device = matches!(kind, REGION_DEVICE | OP_DEVICE);
                let timing = timing_from(rest, device);
                let mut len = if device { TIMING_LEN } else { TIMING_BASE_LEN };
                let node = matches!(kind, OP | OP_DEVICE).then(|| {
                    len += 4;
                    u32_at(rest, len - 4)
                });
                if let Some(summary) = summary.as_deref_mut()
                    && node.is_none()
                {
                    summary.observe_timing(&timing);
                }
                encoder.encode_timing(&timing, node, out);
                len
            }
            other => unreachable!("ring entry kind {other}"),
        };
        records += 1;
        at += 1 + len;
    }
    Transcoded {
        records,
        consumed: at,
        deferred: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FrameDecoder, Frames};
    use crate::schema::testgen::{KINDS, Rng, record};

    #[test]
    fn entries_transcode_to_the_records() {
        let mut rng = Rng(21);
        let mut records: Vec<_> = (0..KINDS * 8).map(|k| record(&mut rng, k)).collect();
        records.extend((0..50).map(|_| Record::RegionTiming(rng.timing())));
        records.extend((0..50).map(|i| {
            Record::OpTiming(crate::schema::OpTiming {
                timing: rng.timing(),
                node: crate::schema::NodeIndex(i),
            })
        }));
        let mut entries = Vec::new();
        let mut scratch = vec![0u8; 4096];
        for r in &records {
            let range = encode_entry(r, &mut scratch).unwrap();
            entries.extend_from_slice(&scratch[range]);
        }
        let mut frames = Vec::new();
        let mut encoder = FrameEncoder::new();
        let done = transcode(&entries, &mut encoder, &mut frames, None);
        assert_eq!(done.records as usize, records.len());
        assert_eq!(done.consumed, entries.len());
        assert!(done.deferred.is_none());
        let mut decoder = FrameDecoder::new();
        let decoded: Vec<_> = Frames::new(&frames)
            .map(|f| decoder.decode(f.unwrap().1).unwrap())
            .collect();
        assert_eq!(decoded, records);
    }

    #[test]
    fn entry_bounds_walk_every_entry_and_bound_its_frame() {
        let mut rng = Rng(33);
        let records: Vec<_> = (0..KINDS * 8).map(|k| record(&mut rng, k)).collect();
        let mut entries = Vec::new();
        let mut scratch = vec![0u8; 4096];
        for r in &records {
            let range = encode_entry(r, &mut scratch).unwrap();
            entries.extend_from_slice(&scratch[range]);
        }
        entries.extend_from_slice(&deferred_entry(0xDEAD_BEEF));
        let (mut at, mut count, mut encoder) = (0, 0, FrameEncoder::new());
        while let Some((len, bound)) = entry_bounds(&entries[at..]) {
            let mut frame = Vec::new();
            transcode(&entries[at..at + len], &mut encoder, &mut frame, None);
            assert!(frame.len() <= bound, "{} > {bound}", frame.len());
            at += len;
            count += 1;
        }
        assert_eq!((at, count), (entries.len(), records.len() + 1));
        // A cut entry, or an unknown kind, is not an entry.
        assert!(entry_bounds(&entries[..entries.len() - 1][at - DEFERRED_ENTRY..]).is_none());
        assert!(entry_bounds(&[77, 0, 0]).is_none());
    }

    #[test]
    fn transcoding_stops_after_a_deferred_entry() {
        let mut rng = Rng(5);
        let (a, b) = (rng.timing(), rng.timing());
        let mut scratch = vec![0u8; 256];
        let mut entries = Vec::new();
        let range = encode_entry(&Record::RegionTiming(a), &mut scratch).unwrap();
        entries.extend_from_slice(&scratch[range]);
        let first = entries.len();
        entries.extend_from_slice(&deferred_entry(0xDEAD_BEEF));
        let range = encode_entry(&Record::RegionTiming(b), &mut scratch).unwrap();
        entries.extend_from_slice(&scratch[range]);
        let (mut encoder, mut frames) = (FrameEncoder::new(), Vec::new());
        let done = transcode(&entries, &mut encoder, &mut frames, None);
        assert_eq!(done.records, 1);
        assert_eq!(done.consumed, first + DEFERRED_ENTRY);
        assert_eq!(done.deferred, Some(0xDEAD_BEEF));
        let rest = transcode(&entries[done.consumed..], &mut encoder, &mut frames, None);
        assert_eq!((rest.records, rest.deferred), (1, None));
        let mut decoder = FrameDecoder::new();
        let decoded: Vec<_> = Frames::new(&frames)
            .map(|f| decoder.decode(f.unwrap().1).unwrap())
            .collect();
        assert_eq!(decoded, [Record::RegionTiming(a), Record::RegionTiming(b)]);
    }

    #[test]
    fn small_scratch_is_refused() {
        let timing = Record::RegionTiming(Rng(1).timing());
        assert!(encode_entry(&timing, &mut [0u8; 10]).is_err());
        let big = record(&mut Rng(1), 0);
        assert!(encode_entry(&big, &mut [0u8; 4]).is_err());
        assert!(encode_entry(&big, &mut []).is_err());
    }
}
