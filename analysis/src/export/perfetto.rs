//! Perfetto protobuf: a `perfetto.protos.Trace`, written one `TracePacket` at a time (a
//! concatenation of `Trace` messages is a `Trace` with all their packets).
//!
//! The packets are encoded by hand with the field numbers of the official definitions
//! (`protos/perfetto/trace/trace_packet.proto`, `track_event/track_event.proto`,
//! `track_event/track_descriptor.proto`, `track_event/debug_annotation.proto`,
//! `track_event/process_descriptor.proto`), fields in field-number order as a generated
//! encoder writes them: building a message per event and encoding it cost most of a large
//! export. The tests decode the output with prost messages declared from the same
//! definitions, and `cli/tests/perfetto/check.py` with the official ones.
//!
//! - Each runtime is a process track (`TrackDescriptor.process`, pid = runtime id) and each
//!   queue (and the events) a child track, ordered explicitly in timeline order.
//! - A slice is a `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` pair on its track, arguments as
//!   debug annotations; flows are `flow_ids` on the producer's begin and
//!   `terminating_flow_ids` on the consumer's.
//! - An instant event is `TYPE_INSTANT` on the events track.
//!
//! Timestamps are the trace's host ns (default clock); every packet is on trusted sequence
//! 1, the first one clearing the incremental state (nothing is interned).

use super::spool::Spool;
use super::{Arg, EVENTS_SLOT, Instant, Sink, Slice, Track, process_uuid, track_uuid};
use std::io::{self, Write};

/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT`.
const EXPLICIT: u64 = 3;
/// The one packet sequence of the export.
const SEQUENCE: u64 = 1;

/// Field numbers.
mod field {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;
    /// `TracePacket`.
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `TrackDescriptor`.
    pub const UUID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const PARENT_UUID: u32 = 5;
    pub const CHILD_ORDERING: u32 = 11;
    pub const SIBLING_ORDER_RANK: u32 = 12;
    /// `ProcessDescriptor`.
    pub const PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;
    /// `TrackEvent`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const TYPE: u32 = 9;
    pub const TRACK_UUID: u32 = 11;
    pub const CATEGORIES: u32 = 22;
    pub const EVENT_NAME: u32 = 23;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `DebugAnnotation`.
    pub const UINT_VALUE: u32 = 3;
    pub const STRING_VALUE: u32 = 6;
    pub const ANNOTATION_NAME: u32 = 10;
    pub const ARRAY_VALUES: u32 = 12;
}

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

/// A protobuf encoder into one reused buffer. Length-delimited fields are opened with
/// [`Encoder::open`] (one byte left for the length) or [`Encoder::open_wide`] (two), and
/// closed with [`Encoder::close`] or [`Encoder::close_wide`], which move the content only
/// when the length needs another number of bytes.
#[derive(Default)]
pub(super) struct Encoder {
    pub(super) buf: Vec<u8>,
}

impl Encoder {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.varint(v);
    }

    /// An `int32` field (negative values as ten-byte varints, as protobuf does).
    fn int32(&mut self, field: u32, v: i32) {
        self.uint(field, i64::from(v) as u64);
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, field: u32, s: &str) {
        self.key(field, LEN);
        self.varint(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Opens a length-delimited field with room for a one-byte length; returns where its
    /// content starts.
    fn open(&mut self, field: u32) -> usize {
        self.key(field, LEN);
        self.buf.push(0);
        self.buf.len()
    }

    /// Opens a length-delimited field with room for a two-byte length (content of 128 bytes
    /// to 16 KiB, as a slice's packet and event are): closing it then moves nothing.
    fn open_wide(&mut self, field: u32) -> usize {
        self.key(field, LEN);
        self.buf.extend_from_slice(&[0, 0]);
        self.buf.len()
    }

    fn close(&mut self, start: usize) {
        self.close_with(start, 1);
    }

    fn close_wide(&mut self, start: usize) {
        self.close_with(start, 2);
    }

    /// Writes the length of the field whose content starts at `start` into the `room` bytes
    /// before it, moving the content when the length's varint needs another size (a
    /// generated encoder writes the shortest varint, and so does this one).
    fn close_with(&mut self, start: usize, room: usize) {
        let len = self.buf.len() - start;
        let mut head = [0u8; 10];
        let mut n = 0;
        let mut v = len as u64;
        while v >= 0x80 {
            head[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        head[n] = v as u8;
        n += 1;
        let end = self.buf.len();
        if n > room {
            self.buf.resize(end + n - room, 0);
            self.buf.copy_within(start..end, start + n - room);
        } else if n < room {
            self.buf.copy_within(start..end, start - (room - n));
            self.buf.truncate(end - (room - n));
        }
        let at = start - room;
        self.buf[at..at + n].copy_from_slice(&head[..n]);
    }

    pub(super) fn annotation(&mut self, field: u32, name: Option<&str>, arg: &Arg<'_>) {
        let at = self.open(field);
        match arg {
            Arg::Uint(v) => self.uint(field::UINT_VALUE, *v),
            Arg::Str(s) => self.string(field::STRING_VALUE, s),
            Arg::List(_) | Arg::Texts(..) => {}
        }
        if let Some(name) = name {
            self.string(field::ANNOTATION_NAME, name);
        }
        if let Some(items) = arg.items() {
            for item in items {
                let item_at = self.open(field::ARRAY_VALUES);
                self.string(field::STRING_VALUE, item);
                self.close(item_at);
            }
        }
        self.close(at);
    }
}

/// Writes packets as they come, each encoded straight into the output's chunk.
pub struct Writer {
    out: Spool,
    first: bool,
    /// Per region (model-wide), its slices' constant annotations encoded once: one byte
    /// string per run of consecutive constant arguments (see `Slice::constant`).
    constant: Vec<Vec<Vec<u8>>>,
}

impl Writer {
    /// A writer into `out`.
    pub(super) fn new(out: Spool) -> Writer {
        Writer {
            out,
            first: true,
            constant: Vec::new(),
        }
    }

    /// Appends a packet (`Trace.packet`) with its timestamp and sequence; `body` writes the
    /// fields numbered 11 and up except the sequence flags. `wide`: room for a two-byte
    /// length (a slice's begin, 128 bytes or more).
    fn packet(
        &mut self,
        timestamp: Option<u64>,
        body: impl FnOnce(&mut Encoder),
        descriptor: bool,
        wide: bool,
    ) -> io::Result<()> {
        // Encoded in place at the end of the chunk: no copy.
        let mut enc = Encoder {
            buf: std::mem::take(&mut self.out.buf),
        };
        let at = if wide {
            enc.open_wide(field::TRACE_PACKET)
        } else {
            enc.open(field::TRACE_PACKET)
        };
        if let Some(t) = timestamp {
            enc.uint(field::TIMESTAMP, t);
        }
        enc.uint(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE);
        // Field order: the track event (11) before the flags (13), the descriptor (60)
        // after them.
        let mut body = Some(body);
        if !descriptor && let Some(body) = body.take() {
            body(&mut enc);
        }
        if self.first {
            enc.uint(field::SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        }
        if let Some(body) = body {
            body(&mut enc);
        }
        if wide {
            enc.close_wide(at);
        } else {
            enc.close(at);
        }
        self.out.buf = enc.buf;
        self.out.maybe_hand_off()
    }
}

/// A `TrackEvent`'s fields beside its type and track.
#[derive(Default)]
struct Event<'e, 'a> {
    category: Option<&'e str>,
    name: Option<&'e str>,
    args: &'e [(&'static str, Arg<'a>)],
    /// Which of `args` are constant (bit `i` for `args[i]`), and their runs encoded.
    constant: (u16, &'e [Vec<u8>]),
    flows_out: &'e [u64],
    flows_in: &'e [u64],
}

fn event(enc: &mut Encoder, kind: u64, track: u64, e: Event<'_, '_>) {
    let wide = !e.args.is_empty();
    let Event {
        category,
        name,
        args,
        constant: (mask, runs),
        flows_out,
        flows_in,
    } = e;
    let at = if wide {
        enc.open_wide(field::TRACK_EVENT)
    } else {
        enc.open(field::TRACK_EVENT)
    };
    let mut runs = runs.iter();
    let mut in_run = false;
    for (i, (key, arg)) in args.iter().enumerate() {
        if mask & (1 << i) != 0 {
            if !in_run && let Some(run) = runs.next() {
                enc.buf.extend_from_slice(run);
            }
            in_run = true;
            continue;
        }
        in_run = false;
        enc.annotation(field::DEBUG_ANNOTATIONS, Some(key), arg);
    }
    enc.uint(field::TYPE, kind);
    enc.uint(field::TRACK_UUID, track);
    if let Some(category) = category {
        enc.string(field::CATEGORIES, category);
    }
    if let Some(name) = name {
        enc.string(field::EVENT_NAME, name);
    }
    for &id in flows_out {
        enc.fixed64(field::FLOW_IDS, id);
    }
    for &id in flows_in {
        enc.fixed64(field::TERMINATING_FLOW_IDS, id);
    }
    if wide {
        enc.close_wide(at);
    } else {
        enc.close(at);
    }
}

impl Writer {
    /// Takes `region`'s encoded constant annotations out of the cache (the caller puts them
    /// back), encoding them on its first slice.
    fn constant_runs(
        &mut self,
        region: usize,
        mask: u16,
        args: &[(&'static str, Arg<'_>)],
    ) -> Vec<Vec<u8>> {
        let encoded = super::constant_runs(
            &mut self.constant,
            region,
            mask,
            args,
            |run, _, key, arg| {
                let mut enc = Encoder {
                    buf: std::mem::take(run),
                };
                enc.annotation(field::DEBUG_ANNOTATIONS, Some(key), arg);
                *run = enc.buf;
                Ok::<(), std::convert::Infallible>(())
            },
        );
        match encoded {
            Ok(runs) => runs,
            Err(never) => match never {},
        }
    }
}

impl Sink for Writer {
    fn track(&mut self, track: &Track, new_process: bool) -> io::Result<()> {
        if new_process {
            self.packet(
                None,
                |enc| {
                    let at = enc.open(field::TRACK_DESCRIPTOR);
                    enc.uint(field::UUID, process_uuid(track.runtime));
                    let process = enc.open(field::PROCESS);
                    enc.int32(field::PID, track.runtime.0 as i32);
                    enc.string(field::PROCESS_NAME, &track.process);
                    enc.close(process);
                    enc.int32(field::CHILD_ORDERING, EXPLICIT as i32);
                    enc.close(at);
                },
                true,
                false,
            )?;
        }
        self.packet(
            None,
            |enc| {
                let at = enc.open(field::TRACK_DESCRIPTOR);
                enc.uint(field::UUID, track_uuid(track.runtime, track.slot));
                enc.string(field::NAME, track.name);
                enc.uint(field::PARENT_UUID, process_uuid(track.runtime));
                enc.int32(field::SIBLING_ORDER_RANK, track.slot as i32);
                enc.close(at);
            },
            true,
            false,
        )
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let track = track_uuid(slice.runtime, slice.slot);
        let (region, mask) = slice.constant.map_or((None, 0), |(r, m)| (Some(r), m));
        let runs = match region {
            Some(region) => self.constant_runs(region.0 as usize, mask, &slice.args),
            None => Vec::new(),
        };
        let written = self.packet(
            Some(slice.start_ns),
            |enc| {
                let e = Event {
                    category: Some(slice.category),
                    name: Some(slice.name),
                    args: &slice.args,
                    constant: (mask, &runs),
                    flows_out: slice.flows_out,
                    flows_in: slice.flows_in,
                };
                event(enc, TYPE_SLICE_BEGIN, track, e)
            },
            false,
            true,
        );
        if let Some(region) = region {
            self.constant[region.0 as usize] = runs;
        }
        written?;
        self.packet(
            Some(slice.end_ns),
            |enc| event(enc, TYPE_SLICE_END, track, Event::default()),
            false,
            false,
        )
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        let track = track_uuid(instant.runtime, instant.slot);
        self.packet(
            Some(instant.time_ns),
            |enc| {
                let e = Event {
                    category: Some(if instant.slot == EVENTS_SLOT {
                        "event"
                    } else {
                        "recorder"
                    }),
                    name: Some(instant.name),
                    args: &instant.args,
                    ..Event::default()
                };
                event(enc, TYPE_INSTANT, track, e)
            },
            false,
            true,
        )
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
