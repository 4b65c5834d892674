//! Perfetto protobuf: a `perfetto.protos.Trace`, written one `TracePacket` at a time (a
//! concatenation of `Trace` messages is a `Trace` with all their packets).
//!
//! The messages below are the subset of Perfetto's schema the export uses, declared by hand
//! with prost's derive and the field numbers of the official definitions
//! (`protos/perfetto/trace/trace_packet.proto`, `track_event/track_event.proto`,
//! `track_event/track_descriptor.proto`, `track_event/debug_annotation.proto`,
//! `track_event/process_descriptor.proto`), so no protoc is needed at build time. A test
//! decodes the output with the official definitions (`cli/tests/perfetto/check.py`).
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

use super::{Arg, Instant, Sink, Slice, Track, process_uuid};
use prost::Message;
use std::io::{self, Write};

/// `perfetto.protos.Trace`. The writer emits its field 1 directly, one packet at a time;
/// the message itself decodes the output in tests.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    /// `repeated TracePacket packet = 1`.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    /// `optional uint64 timestamp = 8`.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `uint32 trusted_packet_sequence_id = 10` (in the `optional_trusted_packet_sequence_id` oneof).
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `TrackEvent track_event = 11` (in the `data` oneof).
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// `optional uint32 sequence_flags = 13`.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `TrackDescriptor track_descriptor = 60` (in the `data` oneof).
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    /// `optional uint64 uuid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `optional string name = 2` (in the `static_or_dynamic_name` oneof).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `optional ProcessDescriptor process = 3`.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `optional uint64 parent_uuid = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `optional ChildTracksOrdering child_ordering = 11` (3 = EXPLICIT).
    #[prost(int32, optional, tag = "11")]
    pub child_ordering: Option<i32>,
    /// `optional int32 sibling_order_rank = 12`.
    #[prost(int32, optional, tag = "12")]
    pub sibling_order_rank: Option<i32>,
}

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct ProcessDescriptor {
    /// `optional int32 pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `optional string process_name = 6`.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `perfetto.protos.TrackEvent` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    /// `repeated DebugAnnotation debug_annotations = 4`.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `optional Type type = 9`.
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `optional uint64 track_uuid = 11`.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// `repeated string categories = 22`.
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// `string name = 23` (in the `name_field` oneof).
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// `repeated fixed64 flow_ids = 47` (not packed).
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// `repeated fixed64 terminating_flow_ids = 48` (not packed).
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: i32 = 1;
const TYPE_SLICE_END: i32 = 2;
const TYPE_INSTANT: i32 = 3;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT`.
const EXPLICIT: i32 = 3;
/// The one packet sequence of the export.
const SEQUENCE: u32 = 1;

/// `perfetto.protos.DebugAnnotation` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    /// `uint64 uint_value = 3` (in the `value` oneof).
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// `string string_value = 6` (in the `value` oneof).
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    /// `string name = 10` (in the `name_field` oneof).
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// `repeated DebugAnnotation array_values = 12`.
    #[prost(message, repeated, tag = "12")]
    pub array_values: Vec<DebugAnnotation>,
}

fn annotation(name: Option<&str>, arg: &Arg) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name: name.map(str::to_owned),
        ..DebugAnnotation::default()
    };
    match arg {
        Arg::Uint(v) => a.uint_value = Some(*v),
        Arg::Str(s) => a.string_value = Some(s.clone()),
        Arg::List(items) => {
            a.array_values = items
                .iter()
                .map(|s| annotation(None, &Arg::Str(s.clone())))
                .collect();
        }
    }
    a
}

fn annotations(args: &[(&'static str, Arg)]) -> Vec<DebugAnnotation> {
    args.iter().map(|(k, v)| annotation(Some(k), v)).collect()
}

/// Writes packets as they come.
pub struct Writer<W: Write> {
    out: W,
    first: bool,
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// A writer into `out`.
    pub fn new(out: W) -> Writer<W> {
        Writer {
            out,
            first: true,
            buf: Vec::with_capacity(512),
        }
    }

    fn packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        packet.trusted_packet_sequence_id = Some(SEQUENCE);
        if self.first {
            packet.sequence_flags = Some(SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        }
        self.buf.clear();
        // Field 1 of `Trace`, length-delimited: one `Trace { packet: [packet] }`.
        prost::encoding::message::encode(1, &packet, &mut self.buf);
        self.out.write_all(&self.buf)
    }

    fn event(&mut self, time_ns: u64, event: TrackEvent) -> io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(time_ns),
            track_event: Some(event),
            ..TracePacket::default()
        })
    }
}

impl<W: Write> Sink for Writer<W> {
    fn tracks(&mut self, tracks: &[Track]) -> io::Result<()> {
        let mut declared = Vec::new();
        for track in tracks {
            if !declared.contains(&track.runtime) {
                declared.push(track.runtime);
                self.packet(TracePacket {
                    track_descriptor: Some(TrackDescriptor {
                        uuid: Some(process_uuid(track.runtime)),
                        process: Some(ProcessDescriptor {
                            pid: Some(track.runtime.0 as i32),
                            process_name: Some(track.process.clone()),
                        }),
                        child_ordering: Some(EXPLICIT),
                        ..TrackDescriptor::default()
                    }),
                    ..TracePacket::default()
                })?;
            }
            self.packet(TracePacket {
                track_descriptor: Some(TrackDescriptor {
                    uuid: Some(track.uuid()),
                    name: Some(track.name.clone()),
                    parent_uuid: Some(process_uuid(track.runtime)),
                    sibling_order_rank: Some(track.slot as i32),
                    ..TrackDescriptor::default()
                }),
                ..TracePacket::default()
            })?;
        }
        Ok(())
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let track = process_uuid(slice.runtime) | (slice.slot as u64 + 1);
        self.event(
            slice.start_ns,
            TrackEvent {
                r#type: Some(TYPE_SLICE_BEGIN),
                track_uuid: Some(track),
                name: Some(slice.name.to_string()),
                categories: vec![slice.category.to_owned()],
                debug_annotations: annotations(&slice.args),
                flow_ids: slice.flows_out.clone(),
                terminating_flow_ids: slice.flows_in.clone(),
            },
        )?;
        self.event(
            slice.end_ns,
            TrackEvent {
                r#type: Some(TYPE_SLICE_END),
                track_uuid: Some(track),
                ..TrackEvent::default()
            },
        )
    }

    fn instant(&mut self, instant: &Instant) -> io::Result<()> {
        let track = process_uuid(instant.runtime) | (super::EVENTS_SLOT as u64 + 1);
        self.event(
            instant.time_ns,
            TrackEvent {
                r#type: Some(TYPE_INSTANT),
                track_uuid: Some(track),
                name: Some(instant.name.to_owned()),
                categories: vec!["event".to_owned()],
                debug_annotations: annotations(&instant.args),
                ..TrackEvent::default()
            },
        )
    }

    fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_concatenate_into_one_trace() {
        let mut out = Vec::new();
        let mut writer = Writer::new(&mut out);
        for t in [5, 9] {
            writer
                .event(
                    t,
                    TrackEvent {
                        r#type: Some(TYPE_INSTANT),
                        flow_ids: vec![7, 8],
                        ..TrackEvent::default()
                    },
                )
                .unwrap();
        }
        let trace = Trace::decode(&out[..]).unwrap();
        assert_eq!(trace.packet.len(), 2);
        assert_eq!(trace.packet[1].timestamp, Some(9));
        assert_eq!(trace.packet[0].sequence_flags, Some(1));
        assert_eq!(trace.packet[1].sequence_flags, None);
        let event = trace.packet[0].track_event.as_ref().unwrap();
        assert_eq!(event.flow_ids, [7, 8]);
        // Unpacked fixed64: tag (47 << 3 | 1) = 0x179, as two varint bytes, per id.
        assert_eq!(out.windows(2).filter(|w| w == &[0xF9, 0x02]).count(), 4);
    }
}
