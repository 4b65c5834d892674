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
//! | 5         | a deferred job: a `Box<DeferredWork>` as a little-endian `u64` address |
//! | 13 / 14   | the same, of a job that records a `HostWrite` / an `OutputDigest`     |
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
//!
//! The raw entries of those records are written where the record is made ([`encode_raw`],
//! inlined into `Recorder::record`, or [`RawRecord::encode`] for `Recorder::record_raw` and
//! `RawBatch`, which build no [`Record`]) and copied into the thread's ring as they are; the
//! recorder's slow paths (a full ring, say) turn an entry back into its record
//! ([`decode_raw`]) and record that (session 16: about 140 instructions a record before, 90
//! after).

use crate::format::{
    FrameEncoder, MAX_TIMING_FRAME, encode_untimed_frame_in, put_varint, read_varint_u32,
};
use crate::schema::{
    AnnotationRange, BufferId, DeviceSpan, HostSpan, HostSpanKind, NodeIndex, OpTiming,
    OutputDigest, Payload, PreparedId, Record, RegionDone, RegionIndex, RegionStarted,
    RegionTiming, RuntimeId, Status, SubmissionDone, SubmissionIndex, Submit,
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
const DEFERRED_HOST_WRITE: u8 = 13;
const DEFERRED_DIGEST: u8 = 14;
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
    let Some(out) = scratch.first_chunk_mut::<MAX_RAW_ENTRY>() else {
        return Err(postcard::Error::SerializeBufferFull);
    };
    if let Some(len) = encode_raw(record, out) {
        return Ok(0..len);
    }
    let rest = &mut scratch[1..];
    let base = rest.as_ptr() as usize;
    let frame = encode_untimed_frame_in(record, rest)?;
    // The frame sits somewhere in `rest`; put the kind byte just before it.
    let offset = frame.as_ptr() as usize - base;
    let end = 1 + offset + frame.len();
    scratch[offset] = FRAME;
    Ok(offset..end)
}

/// Encodes `record` as a raw entry at the start of `out` when it is of a kind staged raw;
/// returns the entry's length. Inlined where the record is built, the match on its kind
/// folds away.
#[inline(always)]
pub(crate) fn encode_raw(record: &Record, out: &mut [u8; MAX_RAW_ENTRY]) -> Option<usize> {
    match record {
        Record::RegionTiming(t) => Some(raw_timing(t, None, out)),
        Record::OpTiming(t) => Some(raw_timing(&t.timing, Some(t.node.0), out)),
        Record::RegionStarted(r) => RawRecord::RegionStarted(r).encode(out),
        Record::RegionDone(r) => RawRecord::RegionDone(r).encode(out),
        Record::SubmissionDone(r) => RawRecord::SubmissionDone(r).encode(out),
        Record::Submit(r) => RawRecord::Submit(r).encode(out),
        Record::OutputDigest(r) => RawRecord::OutputDigest(r).encode(out),
        Record::HostSpan(r) => RawRecord::HostSpan(r).encode(out),
        Record::AnnotationRange(r) => RawRecord::AnnotationRange(r).encode(out),
        _ => None,
    }
}

/// A record of the kinds every traced submission makes, by reference: recorded with
/// [`crate::Recorder::record_raw`] or in a [`crate::RawBatch`], its raw ring entry is
/// written from its fields with no [`Record`] built (or dropped). One that is not staged
/// raw after all (a failure's outcome, a digest with contents, a submit with more than two
/// producers) is recorded as a [`Record`].
#[derive(Clone, Copy, Debug)]
pub enum RawRecord<'a> {
    /// A [`Record::RegionStarted`].
    RegionStarted(&'a RegionStarted),
    /// A [`Record::RegionTiming`].
    RegionTiming(&'a RegionTiming),
    /// A [`Record::OpTiming`].
    OpTiming(&'a OpTiming),
    /// A [`Record::RegionDone`].
    RegionDone(&'a RegionDone),
    /// A [`Record::SubmissionDone`].
    SubmissionDone(&'a SubmissionDone),
    /// A [`Record::Submit`].
    Submit(&'a Submit),
    /// A [`Record::OutputDigest`].
    OutputDigest(&'a OutputDigest),
    /// A [`Record::HostSpan`] (format 1.14).
    HostSpan(&'a HostSpan),
    /// A [`Record::AnnotationRange`] (format 1.14).
    AnnotationRange(&'a AnnotationRange),
}

impl RawRecord<'_> {
    /// The raw entry at the start of `out`, and its length; `None` when this record is not
    /// staged raw.
    #[inline(always)]
    pub(crate) fn encode(self, out: &mut [u8; MAX_RAW_ENTRY]) -> Option<usize> {
        Some(match self {
            RawRecord::RegionStarted(r) => raw_started(r, out),
            RawRecord::RegionTiming(t) => raw_timing(t, None, out),
            RawRecord::OpTiming(t) => raw_timing(&t.timing, Some(t.node.0), out),
            RawRecord::RegionDone(r) if r.status == Status::Ok => raw(out, REGION_DONE, |w| {
                w.u32(r.runtime.0)
                    .u64(r.submission.0)
                    .u32(r.region.0)
                    .u64(r.time_ns)
            }),
            RawRecord::SubmissionDone(r) if r.status == Status::Ok => {
                raw(out, SUBMISSION_DONE, |w| {
                    w.u32(r.runtime.0).u64(r.submission.0).u64(r.time_ns)
                })
            }
            RawRecord::Submit(r) if r.producers.len() <= RAW_PRODUCERS => raw(out, SUBMIT, |w| {
                let w = w.u32(r.runtime.0).u64(r.prepared.0).u64(r.submission.0);
                let w = w.u32(r.slot).u64(r.time_ns).u8(r.producers.len() as u8);
                r.producers.iter().fold(w, |w, p| w.u64(p.0))
            }),
            RawRecord::OutputDigest(
                r @ OutputDigest {
                    contents: Payload::Omitted { len_bytes },
                    ..
                },
            ) => raw(out, DIGEST, |w| {
                let w = w.u32(r.runtime.0).u64(r.submission.0).u64(r.buffer.0);
                w.u64(r.start).u64(r.end).u64(r.xxh3).u64(*len_bytes)
            }),
            RawRecord::HostSpan(r) => raw(out, HOST_SPAN, |w| {
                let w = w.u32(r.thread).u8(r.kind as u8).u32(r.runtime.0);
                let region = r.region.map_or(u64::MAX, |region| u64::from(region.0));
                w.u64(r.submission.0)
                    .u64(region)
                    .u64(r.start_ns)
                    .u64(r.end_ns)
            }),
            RawRecord::AnnotationRange(r) => raw(out, ANNOTATION, |w| {
                w.u32(r.thread).u32(r.name.0).u64(r.start_ns).u64(r.end_ns)
            }),
            _ => return None,
        })
    }

    /// The record, for the paths that record a [`Record`].
    pub fn to_record(self) -> Record {
        match self {
            RawRecord::RegionStarted(r) => Record::RegionStarted(*r),
            RawRecord::RegionTiming(t) => Record::RegionTiming(*t),
            RawRecord::OpTiming(t) => Record::OpTiming(*t),
            RawRecord::RegionDone(r) => Record::RegionDone(r.clone()),
            RawRecord::SubmissionDone(r) => Record::SubmissionDone(r.clone()),
            RawRecord::Submit(r) => Record::Submit(r.clone()),
            RawRecord::OutputDigest(r) => Record::OutputDigest(r.clone()),
            RawRecord::HostSpan(r) => Record::HostSpan(*r),
            RawRecord::AnnotationRange(r) => Record::AnnotationRange(*r),
        }
    }
}

/// The record of the raw entry (kind byte and fields) `entry` wrote with [`encode_raw`], for
/// the paths that record a [`Record`]; `None` for any other entry.
pub(crate) fn decode_raw(entry: &[u8]) -> Option<Record> {
    let (&kind, b) = entry.split_first()?;
    let (len, _) = entry_bounds(entry)?;
    if len != entry.len() {
        return None;
    }
    Some(match kind {
        REGION | REGION_DEVICE => Record::RegionTiming(timing_from(b, kind == REGION_DEVICE)),
        OP | OP_DEVICE => {
            let device = kind == OP_DEVICE;
            let node_at = if device { TIMING_LEN } else { TIMING_BASE_LEN };
            Record::OpTiming(OpTiming {
                timing: timing_from(b, device),
                node: NodeIndex(u32_at(b, node_at)),
            })
        }
        STARTED | REGION_DONE => {
            let (runtime, submission, region, time_ns) = (
                RuntimeId(u32_at(b, 0)),
                SubmissionIndex(u64_at(b, 4)),
                RegionIndex(u32_at(b, 12)),
                u64_at(b, 16),
            );
            if kind == STARTED {
                Record::RegionStarted(RegionStarted {
                    runtime,
                    submission,
                    region,
                    time_ns,
                })
            } else {
                Record::RegionDone(RegionDone {
                    runtime,
                    submission,
                    region,
                    status: Status::Ok,
                    time_ns,
                })
            }
        }
        SUBMISSION_DONE => Record::SubmissionDone(SubmissionDone {
            runtime: RuntimeId(u32_at(b, 0)),
            submission: SubmissionIndex(u64_at(b, 4)),
            status: Status::Ok,
            time_ns: u64_at(b, 12),
        }),
        SUBMIT => Record::Submit(Submit {
            runtime: RuntimeId(u32_at(b, 0)),
            prepared: PreparedId(u64_at(b, 4)),
            submission: SubmissionIndex(u64_at(b, 12)),
            slot: u32_at(b, 20),
            time_ns: u64_at(b, 24),
            producers: (0..usize::from(b[SUBMIT_BASE_LEN - 1]))
                .map(|i| SubmissionIndex(u64_at(b, SUBMIT_BASE_LEN + 8 * i)))
                .collect(),
        }),
        DIGEST => Record::OutputDigest(OutputDigest {
            runtime: RuntimeId(u32_at(b, 0)),
            submission: SubmissionIndex(u64_at(b, 4)),
            buffer: BufferId(u64_at(b, 12)),
            start: u64_at(b, 20),
            end: u64_at(b, 28),
            xxh3: u64_at(b, 36),
            contents: Payload::Omitted {
                len_bytes: u64_at(b, 44),
            },
        }),
        HOST_SPAN => Record::HostSpan(HostSpan {
            thread: u32_at(b, 0),
            kind: match b[4] {
                0 => HostSpanKind::Submit,
                1 => HostSpanKind::Wait,
                2 => HostSpanKind::HostCallback,
                3 => HostSpanKind::CaptureFence,
                _ => return None,
            },
            runtime: RuntimeId(u32_at(b, 5)),
            submission: SubmissionIndex(u64_at(b, 9)),
            region: match u64_at(b, 17) {
                u64::MAX => None,
                region => Some(RegionIndex(region as u32)),
            },
            start_ns: u64_at(b, 25),
            end_ns: u64_at(b, 33),
        }),
        ANNOTATION => Record::AnnotationRange(AnnotationRange {
            thread: u32_at(b, 0),
            name: crate::schema::AnnotationId(u32_at(b, 4)),
            start_ns: u64_at(b, 8),
            end_ns: u64_at(b, 16),
        }),
        _ => return None,
    })
}

#[inline(always)]
fn raw_timing(t: &RegionTiming, node: Option<u32>, out: &mut [u8; MAX_RAW_ENTRY]) -> usize {
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
    len
}

#[inline(always)]
fn raw_started(r: &RegionStarted, out: &mut [u8; MAX_RAW_ENTRY]) -> usize {
    out[0] = STARTED;
    out[1..5].copy_from_slice(&r.runtime.0.to_le_bytes());
    out[5..13].copy_from_slice(&r.submission.0.to_le_bytes());
    out[13..17].copy_from_slice(&r.region.0.to_le_bytes());
    out[17..25].copy_from_slice(&r.time_ns.to_le_bytes());
    1 + STARTED_LEN
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
/// with the kind byte); its length.
#[inline(always)]
fn raw(
    out: &mut [u8; MAX_RAW_ENTRY],
    kind: u8,
    write: impl for<'a> FnOnce(Fields<'a>) -> Fields<'a>,
) -> usize {
    out[0] = kind;
    write(Fields { out, at: 1 }).at
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

/// What a deferred job records, as its ring entry says: the fatal-signal flush, which cannot
/// run a job, names what the trace lacks for it (`writer::fatal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeferredKind {
    /// A [`crate::schema::HostWrite`] (a host write's contents captured off the thread).
    HostWrite,
    /// An [`crate::schema::OutputDigest`] (an output hashed and stored off the thread).
    OutputDigest,
    /// Anything else.
    Other,
}

impl DeferredKind {
    /// The record kind name ([`crate::schema::Record::kind_name`]; `"unknown"` for
    /// [`DeferredKind::Other`]).
    pub(crate) const fn record_kind(self) -> &'static str {
        match self {
            DeferredKind::HostWrite => "HostWrite",
            DeferredKind::OutputDigest => "OutputDigest",
            DeferredKind::Other => "unknown",
        }
    }
}

/// The ring entry of a deferred job at `address` (a `Box<DeferredWork>` turned into a raw
/// pointer; whoever transcodes the entry owns the box again) that records `kind`.
pub(crate) fn deferred_entry(address: usize, kind: DeferredKind) -> [u8; DEFERRED_ENTRY] {
    let tag = match kind {
        DeferredKind::HostWrite => DEFERRED_HOST_WRITE,
        DeferredKind::OutputDigest => DEFERRED_DIGEST,
        DeferredKind::Other => DEFERRED,
    };
    let mut entry = [tag; DEFERRED_ENTRY];
    entry[1..].copy_from_slice(&(address as u64).to_le_bytes());
    entry
}

/// The kind of the deferred job whose entry starts `entries`, if one does.
pub(crate) fn deferred_kind(entries: &[u8]) -> Option<DeferredKind> {
    match *entries.first()? {
        DEFERRED => Some(DeferredKind::Other),
        DEFERRED_HOST_WRITE => Some(DeferredKind::HostWrite),
        DEFERRED_DIGEST => Some(DeferredKind::OutputDigest),
        _ => None,
    }
}

/// The address of the deferred job whose entry starts `entries`, if one does (the entry is
/// not consumed: its box stays the transcoder's).
pub(crate) fn deferred_address(entries: &[u8]) -> Option<usize> {
    deferred_kind(entries)?;
    Some(u64_at(entries.get(1..DEFERRED_ENTRY)?, 0) as usize)
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
        DEFERRED | DEFERRED_HOST_WRITE | DEFERRED_DIGEST => (DEFERRED_ENTRY - 1, 0),
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
            if *rest.get(4)? > HostSpanKind::CaptureFence as u8 {
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
            DEFERRED | DEFERRED_HOST_WRITE | DEFERRED_DIGEST => {
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
    use crate::schema::{AnnotationRange, HostSpan};

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
        entries.extend_from_slice(&deferred_entry(0xDEAD_BEEF, DeferredKind::Other));
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
        entries.extend_from_slice(&deferred_entry(0xDEAD_BEEF, DeferredKind::Other));
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
                (HostSpanKind::CaptureFence, Some(RegionIndex(w))),
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
        assert_eq!(raw, 5 * (2 + 3 + 1 + 4 + 1));
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

    /// What [`RawRecord`] stages is what [`encode_entry`] stages for its [`Record`], and
    /// [`decode_raw`] (the recorder's slow paths) gives the record back.
    #[test]
    fn raw_records_stage_their_records_entries_and_decode_back() {
        let mut rng = Rng(9);
        let mut records = submission_records();
        records.extend((0..20).map(|_| Record::RegionTiming(rng.timing())));
        records.extend((0..20).map(|i| {
            Record::OpTiming(OpTiming {
                timing: rng.timing(),
                node: NodeIndex(i * 1000),
            })
        }));
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
            let raw = match r {
                Record::RegionStarted(x) => Some(RawRecord::RegionStarted(x)),
                Record::RegionTiming(x) => Some(RawRecord::RegionTiming(x)),
                Record::OpTiming(x) => Some(RawRecord::OpTiming(x)),
                Record::RegionDone(x) => Some(RawRecord::RegionDone(x)),
                Record::SubmissionDone(x) => Some(RawRecord::SubmissionDone(x)),
                Record::Submit(x) => Some(RawRecord::Submit(x)),
                Record::OutputDigest(x) => Some(RawRecord::OutputDigest(x)),
                Record::HostSpan(x) => Some(RawRecord::HostSpan(x)),
                Record::AnnotationRange(x) => Some(RawRecord::AnnotationRange(x)),
                _ => None,
            };
            if let Some(raw) = raw {
                assert_eq!(&raw.to_record(), r);
            }
            let range = encode_entry(r, &mut scratch).unwrap();
            let entry = &scratch[range];
            let mut out = [0u8; MAX_RAW_ENTRY];
            match raw.and_then(|raw| raw.encode(&mut out)) {
                Some(len) => assert_eq!(&out[..len], entry, "{r:?}"),
                None => assert!(
                    entry[0] == FRAME || matches!(r, Record::OpTiming(_)),
                    "{r:?}"
                ),
            }
            match entry[0] {
                FRAME => assert_eq!(decode_raw(entry), None),
                _ => assert_eq!(decode_raw(entry).as_ref(), Some(r)),
            }
        }
        assert_eq!(
            decode_raw(&deferred_entry(1, DeferredKind::HostWrite)),
            None
        );
        assert_eq!(decode_raw(&[STARTED, 0, 0]), None);
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
