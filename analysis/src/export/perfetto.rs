//! Perfetto protobuf: a `perfetto.protos.Trace`, written one `TracePacket` at a time (a
//! concatenation of `Trace` messages is a `Trace` with all their packets).
//!
//! The packets are encoded by hand with the field numbers of the official definitions
//! (`protos/perfetto/trace/trace_packet.proto`, `interned_data/interned_data.proto`,
//! `track_event/track_event.proto`, `track_event/track_descriptor.proto`,
//! `track_event/debug_annotation.proto`, `track_event/process_descriptor.proto`,
//! `track_event/thread_descriptor.proto`, `track_event/counter_descriptor.proto`), fields in
//! field-number order as a generated encoder writes them: building a message per event and
//! encoding it cost most of a large export. The tests decode the output with prost messages
//! declared from the same definitions, and `cli/tests/perfetto/check.py` with the official
//! ones.
//!
//! - Each trace is a process track (`TrackDescriptor.process`: the traced process's `pid`,
//!   `cmdline`, `process_name` (its program's file name) and `process_labels` (`host=NAME`)),
//!   preceded by a `ClockSnapshot` of the session's base (`CLOCK_MONOTONIC` and
//!   `CLOCK_REALTIME` read together at the session's start; no wall clock where the session
//!   record was lost, and `CLOCK_MONOTONIC` at the base a calibration recovered, if any). Each runtime is a child track
//!   of its process (`hrx runtime 0 (sim: ...)`), and each of its queues (and its events) a
//!   child of the runtime's, ordered explicitly in timeline order. Track uuids are unique
//!   per host, process, session and runtime (`origin`'s module docs).
//! - A slice is a `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` pair on its track, arguments as
//!   debug annotations; flows are `flow_ids` on the producer's begin and
//!   `terminating_flow_ids` on the consumer's.
//! - An instant event is `TYPE_INSTANT` on the events track (a marker: on its thread's).
//! - A host thread (format 1.14) is a track with a `ThreadDescriptor` (the process's `pid`,
//!   the thread's OS `tid` and `thread_name`) under its process's; a counter a track with a
//!   `CounterDescriptor` under it, a sample a `TYPE_COUNTER` event with its
//!   `double_counter_value`.
//!
//! **Interning**, as Perfetto's own SDK writes track events: event names, categories,
//! annotation names and a region's constant argument texts (its kind, buffer uses and
//! in-graph hazards) are sent once in `InternedData` (`event_names`, `event_categories`,
//! `debug_annotation_names`, `debug_annotation_string_values`) and referred to by iid
//! (`name_iid`, `category_iids`, `DebugAnnotation.name_iid`, `string_value_iid`). Every
//! packet is on trusted sequence 1: the first one has `SEQ_INCREMENTAL_STATE_CLEARED`, the
//! rest `SEQ_NEEDS_INCREMENTAL_STATE`, and the state is never cleared again, so an iid
//! means the same thing everywhere in the file. New entries travel in the packet that first
//! uses them, or (for a region's slice, encoded on a worker) in a packet of their own just
//! before it. What is interned is bounded by labels and graphs; per-slice texts (a
//! cross-submission wait) stay inline. This took a 10M-region export from 315 to 164
//! bytes per region (BENCHMARKS.md, session 13); most of the rest is those wait texts and
//! the flow ids (`fixed64` in the protocol).
//!
//! Timestamps are absolute ns on the export's clock ([`super::ClockDomain`]): the first
//! packet sets the sequence's `TracePacketDefaults.timestamp_clock_id` (`MONOTONIC`, or
//! `REALTIME` for traces of several hosts) and every clock snapshot names it as the
//! `primary_trace_clock`, so the trace processor keeps the times as written; `BOOTTIME`,
//! Perfetto's usual default, is not recorded by hrx and not claimed. A trace that lost its
//! session record and every calibration has session ns only: it names no clock (no
//! defaults, no snapshot), its process labels saying what its times are. `TrackEventDefaults.track_uuid` is
//! not used: a submission's slices go to four or five tracks in turn, so a default would
//! drop the uuid (three bytes) from one track's events only, and per-track sequences would
//! split the interning state.

use super::batch::{Batch, Batches, Item, Parts, SliceRec};
use super::{
    Arg, ClockDomain, CounterPoint, CounterTrack, Instant, Process, RegionSlice, Sink, Slice,
    ThreadTrack, Track, instant_category,
};
use std::collections::HashMap;
use std::io;

/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
/// `TracePacket.SequenceFlags`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT`.
const EXPLICIT: u64 = 3;
/// The one packet sequence of the export.
const SEQUENCE: u64 = 1;

/// Field numbers.
pub(super) mod field {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;
    /// `TracePacket`.
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACE_PACKET_DEFAULTS: u32 = 59;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `TracePacketDefaults`.
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `ClockSnapshot`: `clocks`, `primary_trace_clock`; `ClockSnapshot.Clock`: `clock_id`,
    /// `timestamp`.
    pub const CLOCKS: u32 = 1;
    pub const PRIMARY_TRACE_CLOCK: u32 = 2;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    /// `TrackDescriptor`.
    pub const UUID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const PARENT_UUID: u32 = 5;
    pub const COUNTER: u32 = 8;
    pub const CHILD_ORDERING: u32 = 11;
    pub const SIBLING_ORDER_RANK: u32 = 12;
    /// `ProcessDescriptor`.
    pub const PID: u32 = 1;
    pub const CMDLINE: u32 = 2;
    pub const PROCESS_NAME: u32 = 6;
    pub const PROCESS_LABELS: u32 = 8;
    /// `ThreadDescriptor` (`pid` 1 as the process's).
    pub const TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
    /// `TrackEvent`.
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const TYPE: u32 = 9;
    pub const NAME_IID: u32 = 10;
    pub const TRACK_UUID: u32 = 11;
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `DebugAnnotation`.
    pub const ANNOTATION_NAME_IID: u32 = 1;
    pub const UINT_VALUE: u32 = 3;
    pub const STRING_VALUE: u32 = 6;
    pub const ARRAY_VALUES: u32 = 12;
    pub const STRING_VALUE_IID: u32 = 17;
    /// `InternedData`: `event_categories`, `event_names`, `debug_annotation_names`,
    /// `debug_annotation_string_values`; each entry's `iid` and `name` (or `str`).
    pub const INTERNED: [u32; 4] = [1, 2, 3, 29];
    pub const IID: u32 = 1;
    pub const ENTRY_NAME: u32 = 2;
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

    /// A `DebugAnnotation` in `field`: named by iid `name` (none for an array's item),
    /// string values inline, or interned through `strings` when given.
    pub(super) fn annotation(
        &mut self,
        field: u32,
        name: Option<u64>,
        arg: &Arg<'_>,
        mut strings: Option<&mut Interner>,
    ) {
        let at = self.open(field);
        if let Some(name) = name {
            self.uint(field::ANNOTATION_NAME_IID, name);
        }
        match (arg, strings.as_deref_mut()) {
            (Arg::Uint(v), _) => self.uint(field::UINT_VALUE, *v),
            (Arg::Str(s), None) => self.string(field::STRING_VALUE, s),
            (Arg::Str(s), Some(strings)) => {
                let iid = strings.iid(Table::Strings, s);
                self.uint(field::STRING_VALUE_IID, iid);
            }
            (Arg::List(_) | Arg::Texts(..), _) => {}
        }
        if let Some(items) = arg.items() {
            for item in items {
                let item = Arg::Str(item.into());
                self.annotation(field::ARRAY_VALUES, None, &item, strings.as_deref_mut());
            }
        }
        self.close(at);
    }

    fn uint_annotation(&mut self, name: u64, v: u64) {
        let at = self.open(field::DEBUG_ANNOTATIONS);
        self.uint(field::ANNOTATION_NAME_IID, name);
        self.uint(field::UINT_VALUE, v);
        self.close(at);
    }
}

/// An interning index of `InternedData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Table {
    Categories = 0,
    EventNames = 1,
    AnnotationNames = 2,
    Strings = 3,
}

/// The interning state of the one sequence: every entry made so far, and those not yet
/// written. Entries are never dropped (the state is never cleared after the first
/// packet): what it holds grows with distinct labels and graphs, not with slices.
#[derive(Default)]
pub(super) struct Interner {
    tables: [HashMap<Box<str>, u64>; 4],
    pending: [Vec<(u64, Box<str>)>; 4],
}

/// Iids interned by [`Writer::new`] in this order, used by the workers' region slices.
const CATEGORY_REGION: u64 = 1;
const NAME_SUBMISSION: u64 = 1;
const NAME_REGION: u64 = 2;
const NAME_SLOT: u64 = 3;
const NAME_HAZARDS: u64 = 4;
const NAME_DEVICE_NS: u64 = 5;
const NAME_STATUS: u64 = 6;

impl Interner {
    /// The iid of `s` in `table`, made (and queued to be written) on first use. Iids count
    /// from 1 per table (0 means unset).
    pub(super) fn iid(&mut self, table: Table, s: &str) -> u64 {
        let map = &mut self.tables[table as usize];
        if let Some(&iid) = map.get(s) {
            return iid;
        }
        let iid = map.len() as u64 + 1;
        map.insert(s.into(), iid);
        self.pending[table as usize].push((iid, s.into()));
        iid
    }

    fn has_pending(&self) -> bool {
        self.pending.iter().any(|p| !p.is_empty())
    }

    /// Writes the queued entries as a packet's `interned_data`, if any.
    fn write_pending(&mut self, enc: &mut Encoder) {
        if !self.has_pending() {
            return;
        }
        let at = enc.open(field::INTERNED_DATA);
        for (table, entries) in self.pending.iter_mut().enumerate() {
            for (iid, name) in entries.drain(..) {
                let entry = enc.open(field::INTERNED[table]);
                enc.uint(field::IID, iid);
                enc.string(field::ENTRY_NAME, &name);
                enc.close(entry);
            }
        }
        enc.close(at);
    }
}

/// A region's constant part, encoded once (per label) and shared by its slices' batches.
#[derive(Debug, Default)]
pub(super) struct RegionConst {
    name_iid: u64,
    /// The `kind`, `operations` and `uses` annotations.
    run_a: Vec<u8>,
    /// The graph's hazards: `array_values` items.
    hazards: Vec<u8>,
    /// The `internal_edges` and `copy_bytes` annotations, where not zero.
    run_b: Vec<u8>,
}

/// Declares tracks and writes rare events as packets into the batch, hands region slices
/// to the workers ([`encode_batch`]) as numbers.
pub(super) struct Writer {
    batches: Batches<RegionConst>,
    first: bool,
    domain: ClockDomain,
    /// Whether the timestamps are on `domain`'s clock: not where the trace's session was
    /// lost with every calibration ([`Writer::process`]); its times are session ns then.
    on_domain: bool,
    interner: Interner,
    /// Each region's constant part.
    parts: Parts<RegionConst>,
}

impl Writer {
    /// A writer into `batches`.
    pub(super) fn new(batches: Batches<RegionConst>, domain: ClockDomain) -> Writer {
        let mut interner = Interner::default();
        let category = interner.iid(Table::Categories, "region");
        let names = [
            "submission",
            "region",
            "slot",
            "hazards",
            "device_ns",
            "status",
        ]
        .map(|name| interner.iid(Table::AnnotationNames, name));
        debug_assert_eq!(category, CATEGORY_REGION);
        debug_assert_eq!(
            names,
            [
                NAME_SUBMISSION,
                NAME_REGION,
                NAME_SLOT,
                NAME_HAZARDS,
                NAME_DEVICE_NS,
                NAME_STATUS
            ]
        );
        Writer {
            batches,
            first: true,
            domain,
            on_domain: true,
            interner,
            parts: Parts::default(),
        }
    }

    /// Appends a packet (`Trace.packet`) with its timestamp and sequence; `body` writes the
    /// track event (field 11) or, with `descriptor`, the track descriptor (60); the entries
    /// it interned follow in the same packet. `wide`: room for a two-byte length. The
    /// first packet also sets the sequence's defaults (its timestamps' clock), unless its
    /// times are on no clock the export knows ([`Writer::on_domain`]).
    fn packet(
        &mut self,
        timestamp: Option<u64>,
        body: impl FnOnce(&mut Encoder, &mut Interner),
        descriptor: bool,
        wide: bool,
    ) -> io::Result<()> {
        // Encoded in place at the end of the batch: no copy.
        let mut enc = Encoder {
            buf: std::mem::take(&mut self.batches.batch.raw),
        };
        let start = enc.buf.len();
        let at = if wide {
            enc.open_wide(field::TRACE_PACKET)
        } else {
            enc.open(field::TRACE_PACKET)
        };
        if let Some(t) = timestamp {
            enc.uint(field::TIMESTAMP, t);
        }
        enc.uint(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE);
        // Field order: the track event (11), its interned data (12), the flags (13), the
        // descriptor (60).
        let mut body = Some(body);
        if !descriptor && let Some(body) = body.take() {
            body(&mut enc, &mut self.interner);
        }
        self.interner.write_pending(&mut enc);
        let first = std::mem::take(&mut self.first);
        let flags = if first {
            SEQ_INCREMENTAL_STATE_CLEARED
        } else {
            SEQ_NEEDS_INCREMENTAL_STATE
        };
        enc.uint(field::SEQUENCE_FLAGS, flags);
        if first && self.on_domain {
            let defaults = enc.open(field::TRACE_PACKET_DEFAULTS);
            let clock = self.domain.perfetto_clock_id();
            enc.uint(field::TIMESTAMP_CLOCK_ID, clock.into());
            enc.close(defaults);
        }
        if let Some(body) = body {
            body(&mut enc, &mut self.interner);
        }
        if wide {
            enc.close_wide(at);
        } else {
            enc.close(at);
        }
        self.batches.batch.raw = enc.buf;
        self.batches.batch.end_raw(start);
        self.batches.maybe_hand_off()
    }

    /// The index in the batch of `region`'s constant part, made again (and its new interned
    /// entries written) when its label changed.
    fn constant(&mut self, s: &RegionSlice<'_>) -> io::Result<u32> {
        let at = s.region.0 as usize;
        if self.parts.stale(at, s.label) {
            let part = self.encode_constant(s);
            self.parts.set(at, s.label, part);
            // The entries it made go first, in a packet of their own (which may hand the
            // batch on: the part is added to the batch after it).
            self.interned_packet()?;
        }
        self.parts.index(at, &mut self.batches)
    }

    fn encode_constant(&mut self, s: &RegionSlice<'_>) -> RegionConst {
        let a = s.args;
        let interner = &mut self.interner;
        let mut run_a = Encoder::default();
        let kind = Arg::Str(super::kind_name(a.kind).into());
        // The runtime too: submission numbers restart per runtime (a trace processor query
        // keyed on submission alone mixed two runtimes': a Perfetto user's pass).
        for (key, arg) in [
            ("runtime", Arg::Uint(s.runtime.0.into())),
            ("kind", kind),
            ("operations", Arg::Uint(a.operations)),
            ("uses", Arg::Texts(&a.uses, &[])),
        ] {
            let name = interner.iid(Table::AnnotationNames, key);
            run_a.annotation(
                field::DEBUG_ANNOTATIONS,
                Some(name),
                &arg,
                Some(&mut *interner),
            );
        }
        let mut hazards = Encoder::default();
        for h in &a.hazards {
            let item = Arg::Str(h.as_str().into());
            hazards.annotation(field::ARRAY_VALUES, None, &item, Some(&mut *interner));
        }
        let mut run_b = Encoder::default();
        for (key, v) in [
            ("internal_edges", a.internal_edges),
            ("copy_bytes", a.copy_bytes),
        ] {
            if v > 0 {
                let name = interner.iid(Table::AnnotationNames, key);
                run_b.uint_annotation(name, v);
            }
        }
        RegionConst {
            name_iid: interner.iid(Table::EventNames, s.label),
            run_a: run_a.buf,
            hazards: hazards.buf,
            run_b: run_b.buf,
        }
    }

    /// Writes the interned entries not yet written as a packet of their own.
    fn interned_packet(&mut self) -> io::Result<()> {
        if !self.interner.has_pending() {
            return Ok(());
        }
        self.packet(None, |_, _| {}, false, false)
    }
}

/// A `TrackEvent`'s fields beside its type and track.
#[derive(Default)]
struct Event<'e, 'a> {
    category: Option<&'e str>,
    name: Option<&'e str>,
    args: &'e [(&'static str, Arg<'a>)],
    flows_out: &'e [u64],
    flows_in: &'e [u64],
}

fn event(enc: &mut Encoder, interner: &mut Interner, kind: u64, track: u64, e: Event<'_, '_>) {
    let wide = !e.args.is_empty();
    let at = if wide {
        enc.open_wide(field::TRACK_EVENT)
    } else {
        enc.open(field::TRACK_EVENT)
    };
    if let Some(category) = e.category {
        let iid = interner.iid(Table::Categories, category);
        enc.uint(field::CATEGORY_IIDS, iid);
    }
    for (key, arg) in e.args {
        let name = interner.iid(Table::AnnotationNames, key);
        enc.annotation(field::DEBUG_ANNOTATIONS, Some(name), arg, None);
    }
    enc.uint(field::TYPE, kind);
    if let Some(name) = e.name {
        let iid = interner.iid(Table::EventNames, name);
        enc.uint(field::NAME_IID, iid);
    }
    enc.uint(field::TRACK_UUID, track);
    for &id in e.flows_out {
        enc.fixed64(field::FLOW_IDS, id);
    }
    for &id in e.flows_in {
        enc.fixed64(field::TERMINATING_FLOW_IDS, id);
    }
    if wide {
        enc.close_wide(at);
    } else {
        enc.close(at);
    }
}

/// A slice's end packet.
fn end_packet(enc: &mut Encoder, timestamp: u64, track: u64) {
    let at = enc.open(field::TRACE_PACKET);
    enc.uint(field::TIMESTAMP, timestamp);
    enc.uint(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE);
    let e = enc.open(field::TRACK_EVENT);
    enc.uint(field::TYPE, TYPE_SLICE_END);
    enc.uint(field::TRACK_UUID, track);
    enc.close(e);
    enc.uint(field::SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    enc.close(at);
}

/// Encodes a batch (on a worker): its raw packets as they are, each region slice as its
/// begin and end packets.
pub(super) fn encode_batch(batch: &Batch<RegionConst>, out: &mut Vec<u8>) {
    let mut enc = Encoder {
        buf: std::mem::take(out),
    };
    for item in &batch.items {
        match item {
            Item::Raw(range) => enc.buf.extend_from_slice(&batch.raw[range.clone()]),
            Item::Slice(s) => region_slice(&mut enc, batch, s),
        }
    }
    *out = enc.buf;
}

fn region_slice(enc: &mut Encoder, batch: &Batch<RegionConst>, s: &SliceRec) {
    let c = &batch.constants[s.constant as usize];
    let track = s.uuid;
    let at = enc.open_wide(field::TRACE_PACKET);
    enc.uint(field::TIMESTAMP, s.start_ns);
    enc.uint(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE);
    let event = enc.open_wide(field::TRACK_EVENT);
    enc.uint(field::CATEGORY_IIDS, CATEGORY_REGION);
    enc.uint_annotation(NAME_SUBMISSION, s.submission);
    enc.uint_annotation(NAME_REGION, s.region.into());
    enc.uint_annotation(NAME_SLOT, s.slot.into());
    enc.buf.extend_from_slice(&c.run_a);
    let hazards = enc.open(field::DEBUG_ANNOTATIONS);
    enc.uint(field::ANNOTATION_NAME_IID, NAME_HAZARDS);
    if s.graph_hazards {
        enc.buf.extend_from_slice(&c.hazards);
    }
    for w in &batch.waits[s.waits.0 as usize..s.waits.1 as usize] {
        let item = enc.open(field::ARRAY_VALUES);
        let text = enc.open(field::STRING_VALUE);
        super::wait_text(&mut enc.buf, w);
        enc.close(text);
        enc.close(item);
    }
    enc.close(hazards);
    enc.buf.extend_from_slice(&c.run_b);
    if let Some(d) = s.device_ns {
        enc.uint_annotation(NAME_DEVICE_NS, d);
    }
    if s.failed {
        let status = enc.open(field::DEBUG_ANNOTATIONS);
        enc.uint(field::ANNOTATION_NAME_IID, NAME_STATUS);
        enc.string(field::STRING_VALUE, "failed");
        enc.close(status);
    }
    enc.uint(field::TYPE, TYPE_SLICE_BEGIN);
    enc.uint(field::NAME_IID, c.name_iid);
    enc.uint(field::TRACK_UUID, track);
    for &id in &batch.flows[s.flows_out.0 as usize..s.flows_out.1 as usize] {
        enc.fixed64(field::FLOW_IDS, id);
    }
    for &id in &batch.flows[s.flows_in.0 as usize..s.flows_in.1 as usize] {
        enc.fixed64(field::TERMINATING_FLOW_IDS, id);
    }
    enc.close_wide(event);
    enc.uint(field::SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    enc.close_wide(at);
    end_packet(enc, s.end_ns, track);
}

impl Writer {
    /// A packet holding the clock snapshot of `p`'s session base: `CLOCK_MONOTONIC` and
    /// `CLOCK_REALTIME` read together (only the latter when the export is on the wall
    /// clock: the hosts' monotonic clocks are not one clock; only the former where the
    /// session record was lost, at its recovered base; none where it was lost with every
    /// calibration).
    fn clock_snapshot(&mut self, p: &Process<'_>) -> io::Result<()> {
        // A lost session's wall clock is unknown: none is claimed (it read 1970).
        let mut clocks = match p.origin.lost {
            true => vec![],
            false => vec![(ClockDomain::Realtime, p.origin.wall_ns)],
        };
        // Nor its monotonic clock, where no calibration recovered it: its times are session
        // ns (it claimed `CLOCK_MONOTONIC` 0 at session ns 0).
        if p.domain == ClockDomain::Monotonic && self.on_domain {
            clocks.insert(0, (ClockDomain::Monotonic, p.origin.monotonic_base_ns));
        }
        // Before the batch's bytes are taken: a return after would drop them.
        if clocks.is_empty() {
            return Ok(());
        }
        let raw = &mut self.batches.batch.raw;
        let start = raw.len();
        let mut enc = Encoder {
            buf: std::mem::take(raw),
        };
        let at = enc.open(field::TRACE_PACKET);
        let snapshot = enc.open(field::CLOCK_SNAPSHOT);
        for (clock, timestamp) in clocks {
            let c = enc.open(field::CLOCKS);
            enc.uint(field::CLOCK_ID, clock.perfetto_clock_id().into());
            enc.uint(field::CLOCK_TIMESTAMP, timestamp);
            enc.close(c);
        }
        enc.uint(
            field::PRIMARY_TRACE_CLOCK,
            p.domain.perfetto_clock_id().into(),
        );
        enc.close(snapshot);
        enc.uint(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE);
        // Written after the sequence's first packet, as every other one.
        enc.uint(field::SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        enc.close(at);
        self.batches.batch.raw = enc.buf;
        self.batches.batch.end_raw(start);
        self.batches.maybe_hand_off()
    }
}

impl Sink for Writer {
    fn process(&mut self, p: &Process<'_>) -> io::Result<()> {
        if self.first {
            // A trace that lost its session and every calibration holds session ns: no
            // clock is named for them, neither as the sequence's default nor in a snapshot
            // (a custom clock, id 64 and up, converts to none the viewer knows, which drops
            // its events), so the viewer takes them as its own trace time. Such a trace is
            // exported alone (`write_merged`), so the first process decides.
            self.on_domain = !p.origin.lost || p.origin.recovered;
            // The sequence's defaults first: the snapshot is no track event, but its
            // packet starts the sequence.
            self.packet(None, |_, _| {}, false, false)?;
        }
        self.clock_snapshot(p)?;
        let uuid = p.origin.process_uuid();
        self.packet(
            None,
            |enc, _| {
                let at = enc.open_wide(field::TRACK_DESCRIPTOR);
                enc.uint(field::UUID, uuid);
                let process = enc.open_wide(field::PROCESS);
                enc.int32(field::PID, p.origin.pid as i32);
                for arg in &p.origin.args {
                    enc.string(field::CMDLINE, arg);
                }
                enc.string(field::PROCESS_NAME, &p.name);
                for label in p.origin.labels() {
                    enc.string(field::PROCESS_LABELS, &label);
                }
                enc.close_wide(process);
                enc.int32(field::CHILD_ORDERING, EXPLICIT as i32);
                enc.close_wide(at);
            },
            true,
            true,
        )
    }

    fn track(&mut self, track: &Track, new_runtime: bool) -> io::Result<()> {
        // The process's own marks: a track of the process, before its runtimes (ranked by
        // their ids, from 1), with no runtime above it.
        let (parent, rank) = match track.process_level {
            true => (track.process_uuid, 0),
            false => (track.runtime_uuid, track.slot as i32),
        };
        if new_runtime && !track.process_level {
            self.packet(
                None,
                |enc, _| {
                    let at = enc.open(field::TRACK_DESCRIPTOR);
                    enc.uint(field::UUID, track.runtime_uuid);
                    enc.string(field::NAME, &track.runtime_name);
                    enc.uint(field::PARENT_UUID, track.process_uuid);
                    enc.int32(field::CHILD_ORDERING, EXPLICIT as i32);
                    enc.int32(field::SIBLING_ORDER_RANK, track.runtime.0 as i32);
                    enc.close(at);
                },
                true,
                false,
            )?;
        }
        self.packet(
            None,
            |enc, _| {
                let at = enc.open(field::TRACK_DESCRIPTOR);
                enc.uint(field::UUID, track.place.uuid);
                enc.string(field::NAME, track.name);
                enc.uint(field::PARENT_UUID, parent);
                enc.int32(field::SIBLING_ORDER_RANK, rank);
                enc.close(at);
            },
            true,
            false,
        )
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let track = slice.place.uuid;
        self.packet(
            Some(slice.start_ns),
            |enc, interner| {
                let e = Event {
                    category: Some(slice.category),
                    name: Some(slice.name),
                    args: &slice.args,
                    flows_out: slice.flows_out,
                    flows_in: slice.flows_in,
                };
                event(enc, interner, TYPE_SLICE_BEGIN, track, e)
            },
            false,
            true,
        )?;
        let start = self.batches.batch.raw.len();
        let mut enc = Encoder {
            buf: std::mem::take(&mut self.batches.batch.raw),
        };
        end_packet(&mut enc, slice.end_ns, track);
        self.batches.batch.raw = enc.buf;
        self.batches.batch.end_raw(start);
        self.batches.maybe_hand_off()
    }

    fn region_slice(&mut self, s: &RegionSlice<'_>) -> io::Result<()> {
        debug_assert!(!self.first, "a track is declared before its slices");
        let constant = self.constant(s)?;
        let batch = &mut self.batches.batch;
        let waits_start = batch.waits.len() as u32;
        batch.waits.extend_from_slice(s.waits);
        let waits = (waits_start, batch.waits.len() as u32);
        let flows_out = batch.flows(s.flows_out);
        let flows_in = batch.flows(s.flows_in);
        batch.slice(SliceRec {
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            submission: s.submission,
            device_ns: s.device_ns,
            failed: s.failed,
            pid: s.place.pid,
            tid: s.place.tid,
            uuid: s.place.uuid,
            region: s.index,
            slot: s.slot,
            graph_hazards: s.graph_hazards,
            constant,
            waits,
            flows_out,
            flows_in,
            bind_ns: s.bind_ns,
        });
        self.batches.maybe_hand_off()
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        let track = instant.place.uuid;
        self.packet(
            Some(instant.time_ns),
            |enc, interner| {
                let e = Event {
                    category: Some(instant_category(instant.slot)),
                    name: Some(instant.name),
                    args: &instant.args,
                    ..Event::default()
                };
                event(enc, interner, TYPE_INSTANT, track, e)
            },
            false,
            true,
        )
    }

    fn thread(&mut self, thread: &ThreadTrack<'_>) -> io::Result<()> {
        self.packet(
            None,
            |enc, _| {
                let at = enc.open_wide(field::TRACK_DESCRIPTOR);
                enc.uint(field::UUID, thread.place.uuid);
                let descriptor = enc.open_wide(field::THREAD);
                enc.int32(field::PID, thread.place.pid as i32);
                enc.int32(field::TID, thread.place.tid as i32);
                enc.string(field::THREAD_NAME, thread.name);
                enc.close_wide(descriptor);
                enc.uint(field::PARENT_UUID, thread.process_uuid);
                // After the runtimes (ranked by their ids), in the order of their first record.
                let rank = (1 << 24) + (thread.thread & 0xff_ffff);
                enc.int32(field::SIBLING_ORDER_RANK, rank as i32);
                enc.close_wide(at);
            },
            true,
            true,
        )
    }

    fn counter_track(&mut self, counter: &CounterTrack<'_>) -> io::Result<()> {
        self.packet(
            None,
            |enc, _| {
                let at = enc.open_wide(field::TRACK_DESCRIPTOR);
                enc.uint(field::UUID, counter.place.uuid);
                enc.string(field::NAME, counter.name);
                enc.uint(field::PARENT_UUID, counter.process_uuid);
                // A plain counter: no unit, not incremental.
                let descriptor = enc.open(field::COUNTER);
                enc.close(descriptor);
                enc.close_wide(at);
            },
            true,
            true,
        )
    }

    fn counter(&mut self, sample: &CounterPoint<'_>) -> io::Result<()> {
        let track = sample.place.uuid;
        self.packet(
            Some(sample.time_ns),
            |enc, _| {
                let at = enc.open(field::TRACK_EVENT);
                enc.uint(field::TYPE, TYPE_COUNTER);
                enc.uint(field::TRACK_UUID, track);
                enc.fixed64(field::DOUBLE_COUNTER_VALUE, sample.value.to_bits());
                enc.close(at);
            },
            false,
            false,
        )
    }

    fn finish(&mut self) -> io::Result<()> {
        self.batches.finish()
    }
}
