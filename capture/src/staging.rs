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
//! | 7         | a [`RegionDone`] that succeeded: as 6 ([`STARTED_LEN`] bytes)          |
//! | 8         | a [`SubmissionDone`] that succeeded: runtime `u32`, submission `u64`,  |
//! |           | time `u64` ([`SUBMISSION_DONE_LEN`] bytes)                             |
//! | 9         | a [`Submit`] with at most [`RAW_PRODUCERS`] producers: runtime `u32`,  |
//! |           | prepared `u64`, submission `u64`, slot `u32`, time `u64`, the count of |
//! |           | producers (`u8`), each a `u64`                                         |
//! | 10        | an [`OutputDigest`] without contents: runtime `u32`, submission,       |
//! |           | buffer, start, end, xxh3, omitted length (`u64` each)                  |
//! | 11        | a `HostSpan`: thread `u32`, kind `u8`, runtime `u32`, submission     |
//! |           | `u64`, region `u64` (`u64::MAX`: none), start `u64`, end `u64`         |
//! | 12        | an `AnnotationRange`: thread `u32`, name `u32`, start `u64`, end     |
//! |           | `u64` ([`ANNOTATION_LEN`] bytes)                                       |
//!
//! A deferred job is work the recording thread hands to the writer thread (hashing a
//! buffer's contents, say) whose records must still appear at the job's place in that
//! thread's order: transcoding stops at it so the writer can run it in place.
//!
//! A region start is recorded before every region runs, as often as a timing: postcard on
//! the recording thread cost about 90 ns a region on the 2-core build machine
//! (`timed_zone_started` against `timed_zone`), so it is stored raw too. So are the other
//! records every submission makes (its submit, each region's success, the digest of a
//! host-visible output, its success, the submitting and waiting threads' spans): postcard-encoding them was about 75% of a traced
//! submission's recording instructions (callgrind, `host_visible`; BENCHMARKS.md), and
//! the runtime records a region's and a submission's outcome under its scheduler lock,
//! where every instruction delays the other workers. Whatever does not fit a raw entry
//! (a failure's message, contents, more producers) is encoded as a frame, as before.

use crate::format::{
    FrameEncoder, MAX_TIMING_FRAME, encode_untimed_frame_in, put_varint, read_varint_u32,
};
use crate::schema::{
    DeviceSpan, HostSpanKind, OutputDigest, Payload, PreparedId, Record, RegionIndex,
    RegionStarted, RegionTiming, RuntimeId, Status, SubmissionIndex,
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
const REGION_DONE: u8 = 7;
const SUBMISSION_DONE: u8 = 8;
const SUBMIT: u8 = 9;
const DIGEST: u8 = 10;
const HOST_SPAN: u8 = 11;
const ANNOTATION: u8 = 12;

/// Variant indices of [`Record`] (postcard's enum tags), for the frames of raw entries.
const TAG_SUBMIT: u64 = 9;
const TAG_REGION_DONE: u64 = 15;
const TAG_SUBMISSION_DONE: u64 = 16;
const TAG_DIGEST: u64 = 22;
const TAG_STARTED: u64 = 29;
const TAG_HOST_SPAN: u64 = 36;
const TAG_ANNOTATION_RANGE: u64 = 38;

/// thread u32, kind u8, runtime u32, submission u64, region u64, start u64, end u64.
const HOST_SPAN_LEN: usize = 41;
/// Longest frame of a `HostSpan`: prefix, tag, thread, kind, runtime, submission, the
/// region's option tag and value, start, end.
const MAX_HOST_SPAN_FRAME: usize = 1 + 1 + 5 + 1 + 5 + 10 + 1 + 5 + 2 * 10;
/// thread u32, name u32, start u64, end u64.
const ANNOTATION_LEN: usize = 24;
/// Longest frame of an `AnnotationRange`: prefix, tag, two u32 and two u64 varints.
const MAX_ANNOTATION_FRAME: usize = 1 + 1 + 2 * 5 + 2 * 10;

/// runtime u32, submission u64, time u64.
const SUBMISSION_DONE_LEN: usize = 20;
/// Producers a raw [`Submit`] entry holds; a submit with more is encoded as a frame.
const RAW_PRODUCERS: usize = 2;
/// runtime u32, prepared u64, submission u64, slot u32, time u64, producer count u8.
const SUBMIT_BASE_LEN: usize = 33;
/// runtime u32, six u64.
const DIGEST_LEN: usize = 52;
/// Longest frame of a [`RegionDone`] with [`Status::Ok`]: prefix, tag, two u32 and two u64
/// varints, the status tag.
const MAX_REGION_DONE_FRAME: usize = MAX_STARTED_FRAME + 1;
/// Longest frame of a [`SubmissionDone`] with [`Status::Ok`].
const MAX_SUBMISSION_DONE_FRAME: usize = 1 + 1 + 5 + 2 * 10 + 1;
/// Longest frame of a [`Submit`] with `n` producers: prefix, tag, runtime, prepared,
/// submission, slot, the count, each producer, time.
const fn max_submit_frame(n: usize) -> usize {
    1 + 1 + 5 + 10 + 10 + 5 + 1 + n * 10 + 10
}
/// Longest frame of an [`OutputDigest`] without contents: prefix, tag, runtime, five u64,
/// the payload's tag and length.
const MAX_DIGEST_FRAME: usize = 1 + 1 + 5 + 5 * 10 + 1 + 10;

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
        Record::RegionDone(r) if r.status == Status::Ok => raw(scratch, REGION_DONE, |w| {
            w.u32(r.runtime.0)
                .u64(r.submission.0)
                .u32(r.region.0)
                .u64(r.time_ns)
        }),
        Record::SubmissionDone(r) if r.status == Status::Ok => raw(scratch, SUBMISSION_DONE, |w| {
            w.u32(r.runtime.0).u64(r.submission.0).u64(r.time_ns)
        }),
        Record::Submit(r) if r.producers.len() <= RAW_PRODUCERS => raw(scratch, SUBMIT, |w| {
            let w = w.u32(r.runtime.0).u64(r.prepared.0).u64(r.submission.0);
            let w = w.u32(r.slot).u64(r.time_ns).u8(r.producers.len() as u8);
            r.producers.iter().fold(w, |w, p| w.u64(p.0))
        }),
        Record::OutputDigest(
            r @ OutputDigest {
                contents: Payload::Omitted { len_bytes },
                ..
            },
        ) => raw(scratch, DIGEST, |w| {
            let w = w.u32(r.runtime.0).u64(r.submission.0).u64(r.buffer.0);
            w.u64(r.start).u64(r.end).u64(r.xxh3).u64(*len_bytes)
        }),
        Record::HostSpan(r) => raw(scratch, HOST_SPAN, |w| {
            let w = w.u32(r.thread).u8(r.kind as u8).u32(r.runtime.0);
            let region = r.region.map_or(u64::MAX, |region| u64::from(region.0));
            w.u64(r.submission.0)
                .u64(region)
                .u64(r.start_ns)
                .u64(r.end_ns)
        }),
        Record::AnnotationRange(r) => raw(scratch, ANNOTATION, |w| {
            w.u32(r.thread).u32(r.name.0).u64(r.start_ns).u64(r.end_ns)
        }),
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

/// Little-endian fields written one after another into a raw entry.
struct Fields<'a> {
    out: &'a mut [u8; MAX_RAW_ENTRY],
    at: usize,
}

impl Fields<'_> {
    #[inline(always)]
    fn put<const N: usize>(self, bytes: [u8; N]) -> Self {
        let at = self.at;
        self.out[at..at + N].copy_from_slice(&bytes);
        Self { at: at + N, ..self }
    }

    #[inline(always)]
    fn u8(self, v: u8) -> Self {
        self.put([v])
    }

    #[inline(always)]
    fn u32(self, v: u32) -> Self {
        self.put(v.to_le_bytes())
    }

    #[inline(always)]
    fn u64(self, v: u64) -> Self {
        self.put(v.to_le_bytes())
    }
}

/// A raw entry of kind `kind` whose fields `write` writes (at most [`MAX_RAW_ENTRY`] bytes
/// with the kind byte).
#[inline(always)]
fn raw(
    scratch: &mut [u8],
    kind: u8,
    write: impl for<'a> FnOnce(Fields<'a>) -> Fields<'a>,
) -> Result<Range<usize>, postcard::Error> {
    let Some(out) = scratch.first_chunk_mut::<MAX_RAW_ENTRY>() else {
        return Err(postcard::Error::SerializeBufferFull);
    };
    out[0] = kind;
    let len = write(Fields { out, at: 1 }).at;
    Ok(0..len)
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
        REGION_DONE => (STARTED_LEN, MAX_REGION_DONE_FRAME),
        SUBMISSION_DONE => (SUBMISSION_DONE_LEN, MAX_SUBMISSION_DONE_FRAME),
        SUBMIT => {
            let producers = usize::from(*rest.get(SUBMIT_BASE_LEN - 1)?);
            if producers > RAW_PRODUCERS {
                return None;
            }
            (SUBMIT_BASE_LEN + 8 * producers, max_submit_frame(producers))
        }
        DIGEST => (DIGEST_LEN, MAX_DIGEST_FRAME),
        HOST_SPAN => {
            // The kind byte must name a kind (the transcoder writes it as is).
            if *rest.get(4)? > HostSpanKind::HostCallback as u8 {
                return None;
            }
            (HOST_SPAN_LEN, MAX_HOST_SPAN_FRAME)
        }
        ANNOTATION => (ANNOTATION_LEN, MAX_ANNOTATION_FRAME),
        _ => return None,
    };
    (len <= rest.len()).then_some((1 + len, frame))
}

/// Appends the frame whose postcard body is `fields`, each a varint (at most 12 of them: the
/// body stays under 128 bytes, so its length prefix is one byte).
#[inline]
fn append_varints(fields: &[u64], out: &mut Vec<u8>) {
    debug_assert!(fields.len() <= 12);
    let mut frame = [0u8; 1 + 12 * 10];
    let mut len = 1;
    for &field in fields {
        put_varint(&mut frame, &mut len, field);
    }
    frame[0] = (len - 1) as u8;
    out.extend_from_slice(&frame[..len]);
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
            // The frames of the records staged raw are their fields as postcard writes them:
            // the record's variant index, then every field a varint in declaration order
            // (`Status::Ok` is variant 0, `Payload::Omitted` variant 2, a `Vec` its length
            // first). Written directly: postcard through serde cost the writer 320
            // instructions a record (`raw_frames_are_postcards_frames` checks the bytes).
            STARTED | REGION_DONE => {
                let (runtime, submission, region, time_ns) = (
                    u32_at(rest, 0),
                    u64_at(rest, 4),
                    u32_at(rest, 12),
                    u64_at(rest, 16),
                );
                let (runtime, region) = (u64::from(runtime), u64::from(region));
                if kind == STARTED {
                    append_varints(&[TAG_STARTED, runtime, submission, region, time_ns], out);
                } else {
                    let fields = [TAG_REGION_DONE, runtime, submission, region, 0, time_ns];
                    append_varints(&fields, out);
                }
                STARTED_LEN
            }
            SUBMISSION_DONE => {
                let (runtime, submission) = (u64::from(u32_at(rest, 0)), u64_at(rest, 4));
                let fields = [
                    TAG_SUBMISSION_DONE,
                    runtime,
                    submission,
                    0,
                    u64_at(rest, 12),
                ];
                append_varints(&fields, out);
                SUBMISSION_DONE_LEN
            }
            SUBMIT => {
                let producers = usize::from(rest[SUBMIT_BASE_LEN - 1]);
                let (runtime, prepared, submission) =
                    (u32_at(rest, 0), u64_at(rest, 4), u64_at(rest, 12));
                if let Some(summary) = summary.as_deref_mut() {
                    summary.submitted(
                        RuntimeId(runtime),
                        PreparedId(prepared),
                        SubmissionIndex(submission),
                    );
                }
                let mut fields = [0u64; 7 + RAW_PRODUCERS];
                fields[..6].copy_from_slice(&[
                    TAG_SUBMIT,
                    u64::from(runtime),
                    prepared,
                    submission,
                    u64::from(u32_at(rest, 20)),
                    producers as u64,
                ]);
                for (i, field) in fields[6..6 + producers].iter_mut().enumerate() {
                    *field = u64_at(rest, SUBMIT_BASE_LEN + 8 * i);
                }
                fields[6 + producers] = u64_at(rest, 24);
                append_varints(&fields[..7 + producers], out);
                SUBMIT_BASE_LEN + 8 * producers
            }
            DIGEST => {
                let mut fields = [TAG_DIGEST, u64::from(u32_at(rest, 0)), 0, 0, 0, 0, 0, 2, 0];
                for (i, at) in [(2, 4), (3, 12), (4, 20), (5, 28), (6, 36), (8, 44)] {
                    fields[i] = u64_at(rest, at);
                }
                append_varints(&fields, out);
                DIGEST_LEN
            }
            HOST_SPAN => {
                let (thread, kind, runtime) = (u32_at(rest, 0), rest[4], u32_at(rest, 5));
                let (submission, region) = (u64_at(rest, 9), u64_at(rest, 17));
                let (start_ns, end_ns) = (u64_at(rest, 25), u64_at(rest, 33));
                let mut fields = [
                    TAG_HOST_SPAN,
                    u64::from(thread),
                    u64::from(kind),
                    u64::from(runtime),
                    submission,
                    0,
                    region,
                    start_ns,
                    end_ns,
                ];
                if region == u64::MAX {
                    fields.copy_within(7.., 6);
                    append_varints(&fields[..8], out);
                } else {
                    fields[5] = 1;
                    append_varints(&fields, out);
                }
                HOST_SPAN_LEN
            }
            ANNOTATION => {
                let fields = [
                    TAG_ANNOTATION_RANGE,
                    u64::from(u32_at(rest, 0)),
                    u64::from(u32_at(rest, 4)),
                    u64_at(rest, 8),
                    u64_at(rest, 16),
                ];
                append_varints(&fields, out);
                ANNOTATION_LEN
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
    use crate::schema::{AnnotationRange, BufferId, HostSpan, RegionDone, SubmissionDone, Submit};

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

    /// The records every submission makes, with extreme and ordinary values, in the forms
    /// that are staged raw and those that are not (a failure, contents, many producers).
    fn submission_records() -> Vec<Record> {
        let mut out = Vec::new();
        for v in [0u64, 1, 300, u64::from(u32::MAX), u64::MAX] {
            let w = v as u32;
            let statuses = [
                Status::Ok,
                Status::Failed {
                    error: "boom".into(),
                },
            ];
            for status in statuses {
                out.push(Record::RegionDone(RegionDone {
                    runtime: RuntimeId(w),
                    submission: SubmissionIndex(v),
                    region: RegionIndex(w),
                    status: status.clone(),
                    time_ns: v,
                }));
                out.push(Record::SubmissionDone(SubmissionDone {
                    runtime: RuntimeId(w),
                    submission: SubmissionIndex(v),
                    status,
                    time_ns: v,
                }));
            }
            for producers in 0..=RAW_PRODUCERS + 1 {
                out.push(Record::Submit(Submit {
                    runtime: RuntimeId(w),
                    prepared: PreparedId(v),
                    submission: SubmissionIndex(v),
                    slot: w,
                    producers: (0..producers as u64)
                        .map(|p| SubmissionIndex(v ^ p))
                        .collect(),
                    time_ns: v,
                }));
            }
            for contents in [
                Payload::Omitted { len_bytes: v },
                Payload::Inline(vec![w as u8; 3]),
            ] {
                out.push(Record::OutputDigest(OutputDigest {
                    runtime: RuntimeId(w),
                    submission: SubmissionIndex(v),
                    buffer: BufferId(v),
                    start: v,
                    end: v,
                    xxh3: v,
                    contents,
                }));
            }
            for (kind, region) in [
                (HostSpanKind::Submit, None),
                (HostSpanKind::Wait, None),
                (HostSpanKind::HostCallback, Some(RegionIndex(w))),
            ] {
                out.push(Record::HostSpan(HostSpan {
                    thread: w,
                    kind,
                    runtime: RuntimeId(w),
                    submission: SubmissionIndex(v),
                    region,
                    start_ns: v,
                    end_ns: v,
                }));
            }
            out.push(Record::AnnotationRange(AnnotationRange {
                thread: w,
                name: crate::schema::AnnotationId(w),
                start_ns: v,
                end_ns: v,
            }));
        }
        out
    }

    #[test]
    fn submission_records_are_staged_raw_and_transcode_to_themselves() {
        let records = submission_records();
        let mut scratch = vec![0u8; 4096];
        let (mut entries, mut raw) = (Vec::new(), 0);
        for r in &records {
            let range = encode_entry(r, &mut scratch).unwrap();
            let framed = scratch[range.start] == FRAME;
            let expect_raw = match r {
                Record::RegionDone(d) => d.status == Status::Ok,
                Record::SubmissionDone(d) => d.status == Status::Ok,
                Record::Submit(s) => s.producers.len() <= RAW_PRODUCERS,
                Record::OutputDigest(d) => matches!(d.contents, Payload::Omitted { .. }),
                Record::HostSpan(_) | Record::AnnotationRange(_) => true,
                _ => false,
            };
            assert_eq!(!framed, expect_raw, "{r:?}");
            assert!(framed || range.len() <= MAX_RAW_ENTRY);
            raw += usize::from(!framed);
            entries.extend_from_slice(&scratch[range]);
        }
        assert_eq!(raw, 5 * (2 + 3 + 1 + 3 + 1));
        // Entry by entry, as the fatal-signal flush does: each frame within its bound.
        let (mut at, mut frames, mut encoder) = (0, Vec::new(), FrameEncoder::new());
        while let Some((len, bound)) = entry_bounds(&entries[at..]) {
            let before = frames.len();
            transcode(&entries[at..at + len], &mut encoder, &mut frames, None);
            assert!(
                frames.len() - before <= bound,
                "{} > {bound}",
                frames.len() - before
            );
            at += len;
        }
        assert_eq!(at, entries.len());
        let mut decoder = FrameDecoder::new();
        let decoded: Vec<_> = Frames::new(&frames)
            .map(|f| decoder.decode(f.unwrap().1).unwrap())
            .collect();
        assert_eq!(decoded, records);
    }

    #[test]
    fn raw_frames_are_postcards_frames() {
        let mut rng = Rng(7);
        let mut records = submission_records();
        records.extend((0..20).map(|_| {
            let t = rng.timing();
            Record::RegionStarted(RegionStarted {
                runtime: t.runtime,
                submission: t.submission,
                region: t.region,
                time_ns: t.start_ns,
            })
        }));
        let mut scratch = vec![0u8; 4096];
        for r in &records {
            let range = encode_entry(r, &mut scratch).unwrap();
            let (mut encoder, mut frame) = (FrameEncoder::new(), Vec::new());
            transcode(&scratch[range], &mut encoder, &mut frame, None);
            let mut expected = [0u8; 512];
            assert_eq!(
                frame,
                encode_untimed_frame_in(r, &mut expected).unwrap(),
                "{r:?}"
            );
        }
    }

    #[test]
    fn a_raw_submit_places_its_timings_in_the_summary() {
        let mut summary = SummaryBuilder::default();
        let mut scratch = vec![0u8; 4096];
        let mut entries = Vec::new();
        let prepared = Record::Prepared(crate::schema::Prepared {
            runtime: RuntimeId(1),
            graph: crate::schema::GraphId(4),
            prepared: PreparedId(4),
            slots: 1,
            parallel: false,
            regions: vec![crate::schema::Region {
                queue: crate::schema::Queue::GpuCompute,
                engine: crate::schema::Engine::Gpu,
                kind: crate::schema::RegionKind::NativeGraph,
                nodes: Vec::new(),
                internal_edges: Vec::new(),
                dependencies: Vec::new(),
                uses: Vec::new(),
                copy_bytes: 0,
            }],
            time_ns: 1,
        });
        let submit = Record::Submit(Submit {
            runtime: RuntimeId(1),
            prepared: PreparedId(4),
            submission: SubmissionIndex(9),
            slot: 0,
            producers: Vec::new(),
            time_ns: 2,
        });
        let timing = Record::RegionTiming(RegionTiming {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(9),
            region: RegionIndex(0),
            start_ns: 10,
            end_ns: 30,
            device: None,
        });
        for r in [&prepared, &submit, &timing] {
            let range = encode_entry(r, &mut scratch).unwrap();
            entries.extend_from_slice(&scratch[range]);
        }
        let (mut encoder, mut frames) = (FrameEncoder::new(), Vec::new());
        transcode(&entries, &mut encoder, &mut frames, Some(&mut summary));
        let block = summary.take().expect("a summary");
        assert_eq!((block.lanes.len(), block.unplaced), (1, 0));
        assert_eq!((block.lanes[0].regions, block.lanes[0].busy_ns), (1, 20));
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
