use super::*;
use crate::synthetic::{PipelineSpec, pipeline};
use hrx_capture::schema::{FatalSignal, HazardKind, SessionStart, SignalWitness};
use prost::Message;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The Perfetto messages the export writes, declared with prost's derive from the official
/// definitions' field numbers: the hand-written encoder is checked against prost's.
mod pb {
    use prost::Message;

    #[derive(Clone, PartialEq, Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<TracePacket>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct TracePacket {
        #[prost(message, optional, tag = "6")]
        pub clock_snapshot: Option<ClockSnapshot>,
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        #[prost(message, optional, tag = "11")]
        pub track_event: Option<TrackEvent>,
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<InternedData>,
        #[prost(uint32, optional, tag = "13")]
        pub sequence_flags: Option<u32>,
        #[prost(message, optional, tag = "59")]
        pub trace_packet_defaults: Option<TracePacketDefaults>,
        #[prost(message, optional, tag = "60")]
        pub track_descriptor: Option<TrackDescriptor>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ClockSnapshot {
        #[prost(message, repeated, tag = "1")]
        pub clocks: Vec<Clock>,
        /// `BuiltinClock`.
        #[prost(int32, optional, tag = "2")]
        pub primary_trace_clock: Option<i32>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Clock {
        #[prost(uint32, optional, tag = "1")]
        pub clock_id: Option<u32>,
        #[prost(uint64, optional, tag = "2")]
        pub timestamp: Option<u64>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct TracePacketDefaults {
        #[prost(uint32, optional, tag = "58")]
        pub timestamp_clock_id: Option<u32>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct InternedData {
        #[prost(message, repeated, tag = "1")]
        pub event_categories: Vec<Entry>,
        #[prost(message, repeated, tag = "2")]
        pub event_names: Vec<Entry>,
        #[prost(message, repeated, tag = "3")]
        pub debug_annotation_names: Vec<Entry>,
        #[prost(message, repeated, tag = "29")]
        pub debug_annotation_string_values: Vec<InternedString>,
    }

    /// `EventCategory`, `EventName`, `DebugAnnotationName`: the same two fields.
    #[derive(Clone, PartialEq, Message)]
    pub struct Entry {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct InternedString {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(bytes = "vec", optional, tag = "2")]
        pub str: Option<Vec<u8>>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct TrackDescriptor {
        #[prost(uint64, optional, tag = "1")]
        pub uuid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub process: Option<ProcessDescriptor>,
        #[prost(message, optional, tag = "4")]
        pub thread: Option<ThreadDescriptor>,
        #[prost(uint64, optional, tag = "5")]
        pub parent_uuid: Option<u64>,
        #[prost(message, optional, tag = "8")]
        pub counter: Option<CounterDescriptor>,
        #[prost(int32, optional, tag = "11")]
        pub child_ordering: Option<i32>,
        #[prost(int32, optional, tag = "12")]
        pub sibling_order_rank: Option<i32>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ThreadDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(int32, optional, tag = "2")]
        pub tid: Option<i32>,
        #[prost(string, optional, tag = "5")]
        pub thread_name: Option<String>,
    }

    /// `CounterDescriptor`: a plain counter writes none of its fields.
    #[derive(Clone, PartialEq, Message)]
    pub struct CounterDescriptor {}

    #[derive(Clone, PartialEq, Message)]
    pub struct ProcessDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, repeated, tag = "2")]
        pub cmdline: Vec<String>,
        #[prost(string, optional, tag = "6")]
        pub process_name: Option<String>,
        #[prost(string, repeated, tag = "8")]
        pub process_labels: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct TrackEvent {
        #[prost(uint64, repeated, packed = "false", tag = "3")]
        pub category_iids: Vec<u64>,
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        #[prost(int32, optional, tag = "9")]
        pub r#type: Option<i32>,
        #[prost(uint64, optional, tag = "10")]
        pub name_iid: Option<u64>,
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
        #[prost(double, optional, tag = "44")]
        pub double_counter_value: Option<f64>,
        #[prost(fixed64, repeated, packed = "false", tag = "47")]
        pub flow_ids: Vec<u64>,
        #[prost(fixed64, repeated, packed = "false", tag = "48")]
        pub terminating_flow_ids: Vec<u64>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct DebugAnnotation {
        #[prost(uint64, optional, tag = "1")]
        pub name_iid: Option<u64>,
        #[prost(uint64, optional, tag = "3")]
        pub uint_value: Option<u64>,
        #[prost(string, optional, tag = "6")]
        pub string_value: Option<String>,
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
        #[prost(message, repeated, tag = "12")]
        pub array_values: Vec<DebugAnnotation>,
        #[prost(uint64, optional, tag = "17")]
        pub string_value_iid: Option<u64>,
    }
}

/// The interning state of the one sequence, as a reader keeps it.
#[derive(Default)]
struct Interned {
    /// Categories, event names, annotation names, annotation string values.
    tables: [HashMap<u64, String>; 4],
}

impl Interned {
    fn add(&mut self, data: &pb::InternedData) {
        let string_values = data.debug_annotation_string_values.iter().map(|e| {
            let text = String::from_utf8(e.str.clone().unwrap()).unwrap();
            (e.iid, Some(text))
        });
        let entries = |table: &[pb::Entry]| {
            table
                .iter()
                .map(|e| (e.iid, e.name.clone()))
                .collect::<Vec<_>>()
        };
        let tables = [
            entries(&data.event_categories),
            entries(&data.event_names),
            entries(&data.debug_annotation_names),
            string_values.collect(),
        ];
        for (table, entries) in self.tables.iter_mut().zip(tables) {
            for (iid, name) in entries {
                let (iid, name) = (iid.expect("an iid"), name.expect("a name"));
                assert_ne!(iid, 0, "iid 0 is unset");
                // An iid never changes its meaning.
                let old = table.insert(iid, name.clone());
                assert!(old.is_none_or(|old| old == name), "iid {iid} redefined");
            }
        }
    }

    fn get(&self, table: usize, iid: u64) -> String {
        match self.tables[table].get(&iid) {
            Some(name) => name.clone(),
            None => panic!("unresolved iid {iid} in table {table}"),
        }
    }

    fn annotation(&self, a: &mut pb::DebugAnnotation) {
        if let Some(iid) = a.name_iid.take() {
            a.name = Some(self.get(2, iid));
        }
        if let Some(iid) = a.string_value_iid.take() {
            a.string_value = Some(self.get(3, iid));
        }
        for item in &mut a.array_values {
            self.annotation(item);
        }
    }
}

/// The packets with every iid replaced by what it names, as Perfetto's reader resolves
/// them: the first packet clears the sequence's state, every later one needs it, and an
/// iid that no earlier (or the same) packet defined fails the test.
fn resolved(trace: &pb::Trace) -> Vec<pb::TracePacket> {
    let mut state: Option<Interned> = None;
    let mut packets = Vec::new();
    for (i, p) in trace.packet.iter().enumerate() {
        assert_eq!(p.trusted_packet_sequence_id, Some(1));
        let flags = p.sequence_flags.unwrap_or(0);
        assert_eq!(flags, if i == 0 { 1 } else { 2 }, "packet {i}");
        if flags & 1 != 0 {
            state = Some(Interned::default());
        }
        let state = state.as_mut().expect("a cleared state before it is needed");
        if let Some(data) = &p.interned_data {
            state.add(data);
        }
        let mut p = p.clone();
        p.interned_data = None;
        if let Some(e) = &mut p.track_event {
            if let Some(iid) = e.name_iid.take() {
                e.name = Some(state.get(1, iid));
            }
            for iid in std::mem::take(&mut e.category_iids) {
                e.categories.push(state.get(0, iid));
            }
            for a in &mut e.debug_annotations {
                state.annotation(a);
            }
        }
        packets.push(p);
    }
    packets
}

fn export(records: &[Record], format: Format) -> (Vec<u8>, ExportCounts) {
    export_on(records, format, 2)
}

fn export_on(records: &[Record], format: Format, workers: usize) -> (Vec<u8>, ExportCounts) {
    let mut out = Vec::new();
    let clock = ExportClock::absolute(ClockDomain::Monotonic);
    let mut exported = write_from(format, clock, &mut out, vec![records], workers).unwrap();
    (out, exported.remove(0).counts)
}

/// The uuid of the (first) Perfetto track named `name`.
fn track_named(out: &[u8], name: &str) -> u64 {
    packets(out)
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .find(|d| d.name.as_deref() == Some(name))
        .and_then(|d| d.uuid)
        .unwrap_or_else(|| panic!("no track {name}"))
}

/// The packets of a Perfetto export, names resolved.
fn packets(out: &[u8]) -> Vec<pb::TracePacket> {
    resolved(&pb::Trace::decode(out).expect("a Trace"))
}

/// Flows the records call for, counted independently: (runtime, producer submission,
/// producer region, consumer submission, consumer region) with both ends timed.
fn expected_flows(records: &[Record]) -> usize {
    let timed: HashSet<(u64, u32)> = records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some((t.submission.0, t.region.0)),
            _ => None,
        })
        .collect();
    let deps: Vec<Vec<u32>> = records
        .iter()
        .find_map(|r| match r {
            Record::Prepared(p) => Some(
                p.regions
                    .iter()
                    .map(|r| r.dependencies.iter().map(|e| e.producer).collect())
                    .collect(),
            ),
            _ => None,
        })
        .unwrap();
    let mut flows = BTreeSet::new();
    for &(sub, region) in &timed {
        for &p in &deps[region as usize] {
            if timed.contains(&(sub, p)) {
                flows.insert((sub, p, sub, region));
            }
        }
    }
    for r in records {
        if let Record::CrossWait(w) = r
            && timed.contains(&(w.submission.0, w.region.0))
            && timed.contains(&(w.on_submission.0, w.on_region.0))
        {
            flows.insert((w.on_submission.0, w.on_region.0, w.submission.0, w.region.0));
        }
    }
    flows.len()
}

/// Slices, flows (ids at both ends), flow ids at one end only, and the packets.
fn perfetto_counts(out: &[u8]) -> (usize, usize, usize, Vec<pb::TracePacket>) {
    let packets = packets(out);
    let (mut starts, mut ends) = (HashMap::new(), HashMap::new());
    let mut slices = 0;
    for p in &packets {
        if let Some(e) = &p.track_event {
            slices += usize::from(e.r#type == Some(1));
            for &id in &e.flow_ids {
                *starts.entry(id).or_insert(0) += 1;
            }
            for &id in &e.terminating_flow_ids {
                *ends.entry(id).or_insert(0) += 1;
            }
        }
    }
    let both = starts.keys().filter(|id| ends.contains_key(id)).count();
    let unmatched = starts.len() + ends.len() - 2 * both;
    assert!(starts.values().chain(ends.values()).all(|&n| n == 1));
    (slices, both, unmatched, packets)
}

#[test]
fn flows_match_an_independent_count_across_several_windows() {
    let spec = PipelineSpec {
        submissions: 2 * WINDOW + 300,
        ..PipelineSpec::ops(0)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let (out, counts) = export(&records, Format::Perfetto);
    let (slices, flows, unmatched, _) = perfetto_counts(&out);
    let timings = records
        .iter()
        .filter(|r| matches!(r, Record::RegionTiming(_)))
        .count();
    assert_eq!(slices, timings);
    assert_eq!(flows, expected_flows(&records));
    assert_eq!(unmatched, 0);
    assert_eq!(counts.flows as usize, flows);
    assert_eq!(counts.flows_not_drawn, 0);
}

/// The timings held for flows are bounded in timings, not only in submissions: past the
/// bound the oldest submissions (never the newest `KEEP_NEWEST`) are written ahead of their
/// window, with every slice and, the waits on them read by then, every flow (a graph of
/// 1,000 regions took 39 MB at 80 submissions and 208 MB at 800: a Perfetto user's pass).
#[test]
fn held_timings_are_bounded_and_every_slice_and_flow_still_written() {
    let spec = PipelineSpec {
        submissions: 300,
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let timings = (records.iter())
        .filter(|r| matches!(r, Record::RegionTiming(_) | Record::OpTiming(_)))
        .count();
    let bounded = |bound: Option<usize>| {
        super::HELD_SPANS_FOR_TEST.with(|b| b.set(bound));
        super::MOST_HELD_FOR_TEST.with(|m| m.set(0));
        let (out, counts) = export(&records, Format::Perfetto);
        super::HELD_SPANS_FOR_TEST.with(|b| b.set(None));
        (
            out,
            counts,
            super::MOST_HELD_FOR_TEST.with(std::cell::Cell::get),
        )
    };
    let (_, whole_counts, most_whole) = bounded(None);
    // Without a bound every submission of this trace is held to the end.
    assert_eq!(most_whole, timings);
    let (out, counts, most) = bounded(Some(64));
    // A submission's timings (up to 8 here) and the newest ones beyond the bound.
    assert!(most <= 64 + 8 * (super::KEEP_NEWEST as usize + 1), "{most}");
    let (slices, flows, unmatched, _) = perfetto_counts(&out);
    assert_eq!(slices, timings);
    assert_eq!(flows, expected_flows(&records));
    assert_eq!(unmatched, 0);
    assert_eq!(counts.flows_not_drawn, 0);
    assert_eq!(
        (counts.slices, counts.flows, counts.instants),
        (
            whole_counts.slices,
            whole_counts.flows,
            whole_counts.instants
        )
    );
}

#[test]
fn a_failed_submission_draws_flows_only_between_timed_regions() {
    let spec = PipelineSpec {
        fail_at: Some(5),
        busy_every: Some(3),
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let (out, counts) = export(&records, Format::Perfetto);
    let (_, flows, unmatched, packets) = perfetto_counts(&out);
    assert_eq!(flows, expected_flows(&records));
    assert_eq!(unmatched, 0);
    assert!(counts.instants > 0);
    let names: Vec<_> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref()?.name.clone())
        .collect();
    assert!(names.iter().any(|n| n == "quarantine"), "{names:?}");
    assert!(names.iter().any(|n| n == "busy"), "{names:?}");
}

#[test]
fn a_wait_on_a_submission_beyond_the_window_is_counted_not_drawn() {
    let spec = PipelineSpec {
        submissions: 2 * WINDOW + 10,
        ..PipelineSpec::ops(0)
    };
    let mut records: Vec<Record> = pipeline(spec).collect();
    let last = 2 * WINDOW + 9;
    let at = records
        .iter()
        .position(|r| matches!(r, Record::Submit(s) if s.submission.0 == last))
        .unwrap();
    records.insert(
        at + 1,
        Record::CrossWait(CrossWait {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(last),
            region: RegionIndex(0),
            on_submission: SubmissionIndex(0),
            on_region: RegionIndex(3),
            kind: HazardKind::WriteAfterRead,
            buffer: hrx_capture::schema::BufferId(4),
            start: 0,
            end: 8,
        }),
    );
    let (out, counts) = export(&records, Format::Perfetto);
    let (_, flows, unmatched, packets) = perfetto_counts(&out);
    assert_eq!(counts.flows_not_drawn, 1);
    assert_eq!(flows + 1, expected_flows(&records));
    assert_eq!(unmatched, 0);
    // The wait is still in the consumer's hazards.
    let hazard = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .any(|e| {
            e.debug_annotations.iter().any(|a| {
                a.array_values.iter().any(|v| {
                    v.string_value.as_deref() == Some("WAR buf 4 [0..8) on submission 0 region 3")
                })
            })
        });
    assert!(hazard);
}

#[test]
fn the_encoder_writes_what_prost_writes() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(12)).collect();
    let (out, _) = export(&records, Format::Perfetto);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    // Re-encoding the decoded packets gives the same bytes: field order, lengths and
    // varints are as a generated encoder writes them, and no field is unknown to the
    // declarations above.
    assert_eq!(trace.encode_to_vec(), out);
    // Region slices name everything by iid: their label, category and argument names, and
    // their constant texts.
    let raw_begin = trace
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .find(|e| e.r#type == Some(1))
        .unwrap();
    assert!(raw_begin.name.is_none() && raw_begin.name_iid.is_some());
    assert!(raw_begin.categories.is_empty() && raw_begin.category_iids.len() == 1);
    assert!(raw_begin.debug_annotations.iter().all(|a| a.name.is_none()));
    let uses = raw_begin
        .debug_annotations
        .iter()
        .find(|a| !a.array_values.is_empty());
    assert!(uses.unwrap().array_values[0].string_value_iid.is_some());
    // Each name and constant text is in the file once, however many slices use it.
    let times = |needle: &[u8]| out.windows(needle.len()).filter(|w| *w == needle).count();
    assert_eq!(times(b"blur +1"), 1);
    assert_eq!(times(b"read-write"), 1);
    assert_eq!(times(b"\x0asubmission"), 1);
    // The first packet clears the state and brings the names the workers' slices use.
    assert!(trace.packet[0].interned_data.is_some());
    let packets = resolved(&trace);
    let process = packets
        .iter()
        .find_map(|p| p.track_descriptor.as_ref()?.process.as_ref());
    assert_eq!(process.unwrap().pid, Some(1));
    let begin = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .find(|e| e.r#type == Some(1) && e.name.as_deref() == Some("blur +1"))
        .expect("the compute region's slice");
    assert_eq!(begin.categories, ["region"]);
    let uses = begin
        .debug_annotations
        .iter()
        .find(|a| a.name.as_deref() == Some("uses"))
        .unwrap();
    assert!(uses.array_values.len() >= 2);
    assert!(
        uses.array_values
            .iter()
            .all(|v| v.string_value.as_ref().unwrap().starts_with("buf "))
    );
    // A region's constant arguments are encoded once and reused: every slice of it carries
    // the same ones, around its own submission and slot.
    let computes: Vec<&pb::TrackEvent> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.r#type == Some(1) && e.name.as_deref() == Some("blur +1"))
        .collect();
    assert_eq!(computes.len(), 3);
    let named = |e: &pb::TrackEvent, key: &str| {
        e.debug_annotations
            .iter()
            .find(|a| a.name.as_deref() == Some(key))
            .cloned()
    };
    for (i, e) in computes.iter().enumerate() {
        let keys: Vec<_> = e.debug_annotations.iter().map(|a| a.name.clone()).collect();
        let first: Vec<_> = computes[0]
            .debug_annotations
            .iter()
            .map(|a| a.name.clone())
            .collect();
        assert_eq!(keys, first);
        for key in ["kind", "operations", "uses"] {
            assert_eq!(named(e, key), named(computes[0], key), "{key}");
        }
        assert_eq!(named(e, "submission").unwrap().uint_value, Some(i as u64));
    }
}

/// The output is the same bytes whatever the number of encoding threads (0: the pass
/// encodes), over several batches, with failures, refusals and late names.
#[test]
fn the_output_is_the_same_on_any_number_of_threads() {
    let spec = PipelineSpec {
        fail_at: Some(900),
        busy_every: Some(7),
        ..PipelineSpec::ops(4 * batch::SLICES as u64)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    for format in [Format::Perfetto, Format::Chrome] {
        let (one, counts) = export_on(&records, format, 0);
        assert!(counts.slices > 3 * batch::SLICES as u64, "{counts:?}");
        assert!(counts.instants > 0, "{counts:?}");
        for workers in [1, 3] {
            let (out, _) = export_on(&records, format, workers);
            assert!(out == one, "{format:?} on {workers} threads");
        }
    }
    // And every interned name of it resolves.
    let (out, counts) = export_on(&records, Format::Perfetto, 3);
    let (slices, _, unmatched, packets) = perfetto_counts(&out);
    assert_eq!((slices as u64, unmatched), (counts.slices, 0));
    let names: BTreeSet<String> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref()?.name.clone())
        .collect();
    for name in ["upload", "blur +1", "download", "quarantine", "busy"] {
        assert!(names.contains(name), "{name}: {names:?}");
    }
}

/// A resolver that meets an iid no packet defined fails: what the tests above rely on.
#[test]
#[should_panic(expected = "unresolved iid")]
fn an_undefined_iid_is_caught() {
    let records: Vec<Record> = pipeline(PipelineSpec::ops(12)).collect();
    let (out, _) = export(&records, Format::Perfetto);
    let mut trace = pb::Trace::decode(&out[..]).unwrap();
    // Drop the entries of the packet that defines the event names.
    for p in &mut trace.packet {
        if let Some(data) = &mut p.interned_data
            && !data.event_names.is_empty()
        {
            data.event_names.clear();
            break;
        }
    }
    resolved(&trace);
}

#[test]
fn a_long_label_widens_its_length_prefixes() {
    let mut enc = perfetto::Encoder::default();
    let long = "x".repeat(300);
    enc.annotation(1, Some(7), &Arg::Str(Cow::Borrowed(&long)), None);
    // Field 1, then the widened length (2 bytes for 300+ bytes), then the annotation.
    assert_eq!(enc.buf[0], 1 << 3 | 2);
    assert!(enc.buf[1] & 0x80 != 0 && enc.buf[2] & 0x80 == 0);
    let decoded = pb::DebugAnnotation::decode(&enc.buf[3..]).unwrap();
    assert_eq!(decoded.name_iid, Some(7));
    assert_eq!(decoded.string_value.as_deref(), Some(long.as_str()));
}

#[test]
fn chrome_json_parses_and_pairs_every_flow() {
    let spec = PipelineSpec {
        fail_at: Some(7),
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let (out, counts) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let mut ends: HashMap<u64, (u32, u32)> = HashMap::new();
    for e in events {
        match e["ph"].as_str().unwrap() {
            "s" => ends.entry(e["id"].as_u64().unwrap()).or_default().0 += 1,
            "f" => ends.entry(e["id"].as_u64().unwrap()).or_default().1 += 1,
            _ => {}
        }
    }
    assert!(ends.values().all(|&e| e == (1, 1)), "{ends:?}");
    assert_eq!(ends.len(), expected_flows(&records));
    assert_eq!(counts.flows as usize, ends.len());
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(slices as u64, counts.slices);
}

#[test]
fn chrome_strings_and_times_are_exact() {
    let mut out = Vec::new();
    chrome::string(&mut out, "a \"b\"\n\\ \u{1}é").unwrap();
    let back: String = serde_json::from_slice(&out).unwrap();
    assert_eq!(back, "a \"b\"\n\\ \u{1}é");
    for (ns, text) in [
        (0, "0"),
        (1_500, "1.5"),
        (1_050, "1.05"),
        (1_001, "1.001"),
        (123_456_789_012_345, "123456789012.345"),
    ] {
        let mut out = Vec::new();
        chrome::us(&mut out, ns).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }
}

#[test]
fn chrome_numbers_are_written_as_decimal_does() {
    let mut values = vec![0, 9, 10, 11, 99, 100, 101, 999, 1000, 1 << 53, u64::MAX];
    values.extend((0..20).map(|i| 10u64.pow(i) - 1));
    values.extend((0..20).map(|i| 10u64.pow(i)));
    values.extend((1..=1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 64)));
    for v in values {
        let mut out = Vec::new();
        chrome::uint(&mut out, v).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
    }
}

#[test]
fn flow_ids_fit_json_numbers_and_tell_edges_apart() {
    let a = (RuntimeId(1), SubmissionIndex(2), RegionIndex(0));
    let b = (RuntimeId(1), SubmissionIndex(2), RegionIndex(1));
    assert!(flow_id(0, 0, a, b) < 1 << 53);
    assert_ne!(flow_id(0, 0, a, b), flow_id(0, 0, b, a));
    assert_ne!(flow_id(0, 0, a, b), flow_id(0, 1, a, b));
    assert_eq!(flow_id(0, 1, a, b), flow_id(0, 1, a, b));
}

/// A trace file of `spec`, written through the recorder as `hrx-trace record` writes one.
fn trace_file(spec: PipelineSpec) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    let recorder =
        hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
    for record in pipeline(spec) {
        if !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&record);
        }
    }
    let summary = recorder.close().unwrap();
    assert_eq!(summary.dropped_records, 0);
    std::fs::read(path).unwrap()
}

/// Counts the bytes read through it.
struct Counting<'a> {
    inner: &'a [u8],
    read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

#[test]
fn the_export_reads_the_trace_once() {
    let file = trace_file(PipelineSpec::ops(400));
    for format in [Format::Perfetto, Format::Chrome] {
        let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let reader = TraceReader::new(Counting {
            inner: &file,
            read: read.clone(),
        })
        .unwrap();
        let session = read_session(TraceReader::new(&file[..]).unwrap());
        let exported = write(reader, session, format, io::sink()).unwrap();
        assert_eq!(exported.counts.slices, 400);
        assert_eq!(exported.unplaced_timings, 0);
        // The two-pass export read it twice.
        let read = read.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(read, file.len(), "{format:?}");
    }
}

#[test]
fn each_track_is_declared_before_anything_on_it() {
    let spec = PipelineSpec {
        fail_at: Some(9),
        busy_every: Some(4),
        ..PipelineSpec::ops(60)
    };
    let records: Vec<Record> = pipeline(spec).collect();
    let (out, counts) = export(&records, Format::Perfetto);
    let (_, _, _, packets) = perfetto_counts(&out);
    let mut declared = HashSet::new();
    let mut tracks = 0;
    for p in &packets {
        if let Some(d) = &p.track_descriptor {
            if let Some(parent) = d.parent_uuid {
                assert!(declared.contains(&parent), "track before its process");
                tracks += 1;
            }
            declared.insert(d.uuid.unwrap());
        }
        if let Some(e) = &p.track_event {
            assert!(declared.contains(&e.track_uuid.unwrap()), "{e:?}");
        }
    }
    // The runtime's track, then its four queues and the events track.
    assert_eq!(tracks, 6);
    assert_eq!(counts.tracks, 5);

    let (out, counts) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut named = HashSet::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let place = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()) {
            ("M", "process_name") => {
                named.insert(place);
            }
            ("M", _) => assert!(named.contains(&(place.0, 0)), "thread before its process"),
            _ => assert!(named.contains(&(place.0, 0)), "{e}"),
        }
        if e["ph"] == "M" && e["name"] == "thread_name" {
            named.insert(place);
        } else if e["ph"] != "M" {
            assert!(
                named.contains(&place),
                "an event before its thread's name: {e}"
            );
        }
    }
    assert_eq!(named.len(), 1 + counts.tracks);
}

#[test]
fn a_label_is_made_again_when_a_later_kernel_names_it() {
    let spec = PipelineSpec {
        submissions: 2 * WINDOW + 60,
        ..PipelineSpec::ops(0)
    };
    let mut records: Vec<Record> = pipeline(spec).collect();
    // The kernels' names arrive late (another thread's ring), after the first submissions
    // were written.
    let kernels: Vec<Record> = records
        .iter()
        .filter(|r| matches!(r, Record::KernelLoaded(_)))
        .cloned()
        .collect();
    records.retain(|r| !matches!(r, Record::KernelLoaded(_)));
    let late = 2 * WINDOW + 30;
    let at = records
        .iter()
        .position(|r| matches!(r, Record::Submit(s) if s.submission.0 == late))
        .unwrap();
    records.splice(at..at, kernels);
    let (out, _) = export(&records, Format::Perfetto);
    let compute_track = track_named(&out, "GPU Compute");
    let compute: Vec<String> = packets(&out)
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.r#type == Some(1) && e.track_uuid == Some(compute_track))
        .filter_map(|e| e.name.clone())
        .collect();
    assert_eq!(compute.len() as u64, 2 * WINDOW + 60);
    // Written before the names were read: named as the index knew them then.
    assert_eq!(compute[0], "kernel 10 +1");
    assert_eq!(compute.last().unwrap(), "blur +1");
}

/// A pipeline whose last submission crashed in its first region: the submit and the
/// region's start are recorded, nothing after, then the signal.
fn crashed_pipeline() -> (Vec<Record>, u64, u64) {
    let all: Vec<Record> = pipeline(PipelineSpec::ops(40)).collect();
    let last = all
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Submit(s) => Some((s.runtime, s.submission, s.time_ns)),
            _ => None,
        })
        .unwrap();
    let (runtime, submission, submitted_ns) = last;
    let mut records: Vec<Record> = all
        .into_iter()
        .filter(|r| match r {
            Record::Submit(_) => true,
            Record::SessionEnd(_) => false,
            Record::CrossWait(r) => r.submission != submission,
            Record::RegionTiming(r) => r.submission != submission,
            Record::OpTiming(r) => r.timing.submission != submission,
            Record::RegionDone(r) => r.submission != submission,
            Record::SubmissionDone(r) => r.submission != submission,
            Record::OutputDigest(r) => r.submission != submission,
            _ => true,
        })
        .collect();
    let start_ns = submitted_ns + 10;
    // The signal is the trace's last host time.
    let end_ns = records
        .iter()
        .filter_map(crate::dump::host_time_ns)
        .max()
        .unwrap()
        .max(start_ns)
        + 5_000;
    records.push(Record::RegionStarted(hrx_capture::schema::RegionStarted {
        runtime,
        submission,
        region: RegionIndex(0),
        time_ns: start_ns,
    }));
    records.push(Record::FatalSignal(FatalSignal {
        time_ns: end_ns,
        signal: 11,
        witness: SignalWitness::Handler,
        fault_address: Some(16),
    }));
    (records, start_ns, end_ns)
}

/// A region running at the end whose `Submit` lies past the cut (the trace ends before the
/// submitting thread's records): a slice to the trace's end on its runtime's `Queue
/// unknown` track, named as `stats` names it, its `queue` saying why, in both formats. It
/// was dropped: its queue and label come from its submission's graph, which the trace does
/// not name (`stats` alone listed it).
#[test]
fn a_region_running_past_a_cut_is_a_slice_on_a_queue_unknown_track() {
    let (mut records, start_ns, _) = crashed_pipeline();
    let last = records
        .iter()
        .rposition(|r| matches!(r, Record::Submit(_)))
        .unwrap();
    let Record::Submit(submit) = records.remove(last) else {
        unreachable!()
    };
    records.retain(|r| !matches!(r, Record::FatalSignal(_)));
    let end_ns = records
        .iter()
        .filter_map(crate::dump::host_time_ns)
        .max()
        .unwrap();
    let name = format!(
        "submission {}, region 0 (running at end)",
        submit.submission
    );
    let (out, counts) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let running: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().ends_with(" (running at end)"))
        .collect();
    assert_eq!(running.len(), 1, "{running:?}");
    let slice = running[0];
    assert_eq!(slice["name"], name.as_str());
    assert_eq!(slice["ts"].as_f64().unwrap(), start_ns as f64 / 1000.0);
    assert_eq!(
        slice["dur"].as_f64().unwrap(),
        (end_ns - start_ns) as f64 / 1000.0
    );
    assert_eq!(slice["args"]["state"], "still running when the trace ends");
    assert_eq!(slice["args"]["submission"], submit.submission.0);
    assert_eq!(
        slice["args"]["queue"],
        "unknown: its submission's Submit is not in the trace"
    );
    let track = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == slice["tid"])
        .unwrap_or_else(|| panic!("no track named for {slice}"));
    assert!(
        track["args"]["name"]
            .as_str()
            .unwrap()
            .ends_with("Queue unknown"),
        "{track}"
    );
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(slices as u64, counts.slices);

    let (out, _) = export(&records, Format::Perfetto);
    let packets = packets(&out);
    let begins: Vec<u64> = packets
        .iter()
        .filter_map(|p| {
            let e = p.track_event.as_ref()?;
            (e.r#type == Some(1) && e.name.as_deref() == Some(name.as_str()))
                .then_some(p.timestamp?)
        })
        .collect();
    assert_eq!(begins, [start_ns]);
}

/// The region a crash was in is a slice to the trace's end, labelled, and the signal an
/// instant, in both formats (export dropped both).
#[test]
fn a_region_running_at_a_crash_and_the_signal_are_exported() {
    let (records, start_ns, end_ns) = crashed_pipeline();
    let (out, counts) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let running: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().ends_with(" (running at end)"))
        .collect();
    assert_eq!(running.len(), 1, "{running:?}");
    let slice = running[0];
    assert_eq!(slice["ts"].as_f64().unwrap(), start_ns as f64 / 1000.0);
    assert_eq!(
        slice["dur"].as_f64().unwrap(),
        (end_ns - start_ns) as f64 / 1000.0
    );
    assert_eq!(slice["args"]["state"], "still running when the trace ends");
    assert_eq!(slice["args"]["region"], 0);
    let fatal: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "fatal signal")
        .collect();
    assert_eq!(fatal.len(), 1, "{fatal:?}");
    assert_eq!(fatal[0]["args"]["signal"], "SIGSEGV");
    assert_eq!(fatal[0]["args"]["fault_address"], "0x10");
    assert_eq!(fatal[0]["ts"].as_f64().unwrap(), end_ns as f64 / 1000.0);
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(slices as u64, counts.slices);

    let (out, _) = export(&records, Format::Perfetto);
    let packets = packets(&out);
    let named = |name: &dyn Fn(&str) -> bool, kind: i32| -> Vec<(u64, Option<u64>)> {
        packets
            .iter()
            .filter_map(|p| {
                let e = p.track_event.as_ref()?;
                (e.r#type == Some(kind) && e.name.as_deref().is_some_and(name))
                    .then_some((p.timestamp?, e.track_uuid))
            })
            .collect()
    };
    let begins = named(&|n| n.ends_with(" (running at end)"), 1);
    assert_eq!(begins.iter().map(|b| b.0).collect::<Vec<_>>(), [start_ns]);
    // Its end: the slice end on the same track at the trace's end.
    let ends: Vec<u64> = packets
        .iter()
        .filter(|p| {
            p.track_event
                .as_ref()
                .is_some_and(|e| e.r#type == Some(2) && e.track_uuid == begins[0].1)
        })
        .filter_map(|p| p.timestamp)
        .collect();
    assert!(ends.contains(&end_ns), "{ends:?}");
    let instants = named(&|n| n == "fatal signal", 3);
    assert_eq!(instants.iter().map(|i| i.0).collect::<Vec<_>>(), [end_ns]);
}

/// A pipeline recorded by process `pid` on `host`, whose session base is `CLOCK_MONOTONIC`
/// `base_ns` and the wall clock `wall_s` seconds after the epoch, with a calibration whose
/// offset is 7 ns.
fn process_pipeline(host: &str, pid: u32, base_ns: u64, wall_s: i64) -> Vec<Record> {
    process_pipeline_of(PipelineSpec::ops(12), host, pid, base_ns, wall_s)
}

/// [`process_pipeline`] of `spec`.
fn process_pipeline_of(
    spec: PipelineSpec,
    host: &str,
    pid: u32,
    base_ns: u64,
    wall_s: i64,
) -> Vec<Record> {
    use hrx_capture::schema::{HostClock, HostClockSource};
    let mut records: Vec<Record> = pipeline(spec).collect();
    let Record::SessionStart(start) = &mut records[0] else {
        panic!("a session first");
    };
    start.host = host.into();
    start.pid = pid;
    start.args = vec!["/usr/bin/app".into(), "--frames".into(), "3".into()];
    start.monotonic_base_ns = base_ns;
    start.wall_clock_utc = chrono::DateTime::from_timestamp(wall_s, 0).unwrap();
    records.insert(
        1,
        Record::HostClock(HostClock {
            source: HostClockSource::Monotonic,
            ticks: base_ns,
            session_ns: 0,
            monotonic_ns: base_ns + 7,
            error_ns: 0,
            next_session_ns: 0,
            ns_per_tick_q32: 1 << 32,
        }),
    );
    records
}

/// The first region slice's start (Perfetto: its begin packet's timestamp).
/// The uuids of the Perfetto tracks named `name`, in order.
fn tracks_named(packets: &[pb::TracePacket], name: &str) -> Vec<u64> {
    packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .filter(|d| d.name.as_deref() == Some(name))
        .filter_map(|d| d.uuid)
        .collect()
}

fn first_begin(packets: &[pb::TracePacket], track: u64) -> u64 {
    packets
        .iter()
        .find(|p| {
            p.track_event
                .as_ref()
                .is_some_and(|e| e.r#type == Some(1) && e.track_uuid == Some(track))
        })
        .and_then(|p| p.timestamp)
        .unwrap()
}

#[test]
fn perfetto_times_are_absolute_with_the_process_and_its_clock_snapshot() {
    let base = 5_000_000_000_000;
    let records = process_pipeline("node-a", 4242, base, 1_700_000_000);
    let plain: Vec<Record> = pipeline(PipelineSpec::ops(12)).collect();
    let (out, _) = export(&records, Format::Perfetto);
    let (plain_out, _) = export(&plain, Format::Perfetto);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    assert_eq!(trace.encode_to_vec(), out, "fields as prost writes them");
    let packets = resolved(&trace);
    // The sequence's timestamps are on CLOCK_MONOTONIC, and the snapshot says so.
    let defaults = trace.packet[0].trace_packet_defaults.as_ref().unwrap();
    assert_eq!(defaults.timestamp_clock_id, Some(3));
    let snapshot = packets
        .iter()
        .find_map(|p| p.clock_snapshot.as_ref())
        .unwrap();
    assert_eq!(snapshot.primary_trace_clock, Some(3));
    let clocks: Vec<(u32, u64)> = snapshot
        .clocks
        .iter()
        .map(|c| (c.clock_id.unwrap(), c.timestamp.unwrap()))
        .collect();
    assert_eq!(clocks, [(3, base), (1, 1_700_000_000 * 1_000_000_000)]);
    // The real process: pid, command line, name, host.
    let process = packets
        .iter()
        .find_map(|p| p.track_descriptor.as_ref()?.process.as_ref())
        .unwrap();
    assert_eq!(process.pid, Some(4242));
    assert_eq!(process.cmdline, ["/usr/bin/app", "--frames", "3"]);
    assert_eq!(process.process_name.as_deref(), Some("app"));
    assert_eq!(process.process_labels, ["host=node-a"]);
    // Every time moved by the base and the calibration's offset, nothing else.
    let plain_packets = packets_of(&plain_out);
    let shifted = first_begin(&packets, track_named(&out, "GPU Compute"));
    let unshifted = first_begin(&plain_packets, track_named(&plain_out, "GPU Compute"));
    assert_eq!(shifted, unshifted + base + 7);
    // Chrome: the real pid, absolute µs, the process's name and labels.
    let (out, _) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert!(events.iter().all(|e| e["pid"] == 4242));
    let meta = |name: &str| events.iter().find(|e| e["name"] == name).unwrap()["args"].clone();
    assert_eq!(meta("process_name")["name"], "app");
    assert_eq!(
        meta("process_labels")["labels"],
        "host=node-a, /usr/bin/app --frames 3"
    );
    let slice = events.iter().find(|e| e["ph"] == "X").unwrap();
    assert!(slice["ts"].as_f64().unwrap() >= (base / 1000) as f64);
    assert!(slice["tid"].as_u64().unwrap() >= 0x4000_0000);
    assert_eq!(doc["otherData"]["clock"], "CLOCK_MONOTONIC");
}

fn packets_of(out: &[u8]) -> Vec<pb::TracePacket> {
    packets(out)
}

/// The clocks of each clock snapshot of `packets`: (clock id, timestamp) pairs.
fn clock_snapshots(packets: &[pb::TracePacket]) -> Vec<Vec<(u32, u64)>> {
    packets
        .iter()
        .filter_map(|p| p.clock_snapshot.as_ref())
        .map(|s| {
            s.clocks
                .iter()
                .map(|c| (c.clock_id.unwrap(), c.timestamp.unwrap()))
                .collect()
        })
        .collect()
}

fn merged(traces: &[&[Record]], format: Format, domain: ClockDomain) -> Vec<u8> {
    let mut out = Vec::new();
    write_from(
        format,
        ExportClock::absolute(domain),
        &mut out,
        traces.to_vec(),
        2,
    )
    .unwrap();
    out
}

#[test]
fn two_processes_merge_into_one_timeline_on_their_clock() {
    let a = process_pipeline("node-a", 100, 5_000_000_000_000, 1_700_000_000);
    // Started 2 s later on the same host.
    let b = process_pipeline("node-a", 200, 5_002_000_000_000, 1_700_000_002);
    let starts: Vec<SessionStart> = [&a, &b]
        .iter()
        .map(|r| match &r[0] {
            Record::SessionStart(s) => s.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(ClockDomain::for_sessions(&starts), ClockDomain::Monotonic);
    let out = merged(&[&a, &b], Format::Perfetto, ClockDomain::Monotonic);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    assert_eq!(trace.encode_to_vec(), out);
    let packets = resolved(&trace);
    let processes: Vec<(i32, u64)> = packets
        .iter()
        .filter_map(|p| {
            let d = p.track_descriptor.as_ref()?;
            Some((d.process.as_ref()?.pid?, d.uuid?))
        })
        .collect();
    assert_eq!(
        processes.iter().map(|p| p.0).collect::<Vec<_>>(),
        [100, 200]
    );
    assert_ne!(processes[0].1, processes[1].1);
    // Every track uuid is unique: each process has its own runtime and queues.
    let uuids: Vec<u64> = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.uuid)
        .collect();
    assert_eq!(uuids.iter().collect::<HashSet<_>>().len(), uuids.len());
    assert_eq!(
        uuids.len(),
        2 * 6,
        "a process, a runtime and four queues each"
    );
    // Same recorded session times: b's slices are exactly 2 s after a's.
    let computes = tracks_named(&packets, "GPU Compute");
    assert_eq!(computes.len(), 2);
    let (ta, tb) = (
        first_begin(&packets, computes[0]),
        first_begin(&packets, computes[1]),
    );
    assert_eq!(tb - ta, 2_000_000_000);
    // From two hosts: on the wall clock, which the snapshots and defaults name.
    let c = process_pipeline("node-b", 100, 9_000_000_000, 1_700_000_001);
    let starts = [
        starts[0].clone(),
        match &c[0] {
            Record::SessionStart(s) => s.clone(),
            _ => unreachable!(),
        },
    ];
    assert_eq!(ClockDomain::for_sessions(&starts), ClockDomain::Realtime);
    let out = merged(&[&a, &c], Format::Perfetto, ClockDomain::Realtime);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    let defaults = trace.packet[0].trace_packet_defaults.as_ref().unwrap();
    assert_eq!(defaults.timestamp_clock_id, Some(1));
    let packets = resolved(&trace);
    let snapshots: Vec<&pb::ClockSnapshot> = packets
        .iter()
        .filter_map(|p| p.clock_snapshot.as_ref())
        .collect();
    assert_eq!(snapshots.len(), 2);
    assert!(snapshots.iter().all(
        |s| s.primary_trace_clock == Some(1) && s.clocks.iter().all(|c| c.clock_id == Some(1))
    ));
    let computes = tracks_named(&packets, "GPU Compute");
    // Same pid on two hosts: two processes all the same, with their own tracks.
    assert_ne!(computes[0], computes[1]);
    let (ta, tc) = (
        first_begin(&packets, computes[0]),
        first_begin(&packets, computes[1]),
    );
    assert_eq!(tc - ta, 1_000_000_000);
    assert!(ta >= 1_700_000_000 * 1_000_000_000);
    // Chrome JSON merges the same way: two pids, one document.
    let out = merged(&[&a, &b], Format::Chrome, ClockDomain::Monotonic);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let pids: BTreeSet<u64> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, BTreeSet::from([100, 200]));
}

/// Chrome JSON's `ts` count from a base a whole second before the earliest session (named
/// in `otherData`), so that a viewer reading them as doubles keeps every ns: on the wall
/// clock (two hosts), absolute µs are about 1.7 × 10^15 with three decimals, past what a
/// double holds (the 7 ns calibration offset was lost and slices 1 ns apart crossed).
#[test]
fn chrome_timestamps_count_from_a_base_and_keep_every_ns_on_the_wall_clock() {
    let a = process_pipeline("node-a", 100, 5_000_000_000_000, 1_700_000_000);
    let c = process_pipeline("node-b", 300, 9_000_000_000, 1_700_000_001);
    let start = |r: &[Record]| match &r[0] {
        Record::SessionStart(s) => s.clone(),
        _ => unreachable!(),
    };
    let starts = [start(&a), start(&c)];
    let sessions: Vec<TraceSession> = starts.iter().cloned().map(TraceSession::Recorded).collect();
    let clock = ExportClock::for_sessions(&sessions);
    assert_eq!(clock.domain, ClockDomain::Realtime);
    assert_eq!(clock.base_ns, 1_699_999_999 * 1_000_000_000);
    // A trace whose session was lost, with no calibration to place it, keeps absolute
    // times.
    let lost = [
        sessions[0].clone(),
        TraceSession::Lost {
            clock: None,
            survived: 0,
            format: hrx_capture::format::FormatVersion::CURRENT,
        },
    ];
    assert_eq!(ExportClock::for_sessions(&lost).base_ns, 0);
    let traces: [&[Record]; 2] = [&a, &c];
    let mut json = Vec::new();
    write_from(Format::Chrome, clock, &mut json, traces.to_vec(), 2).unwrap();
    let mut proto = Vec::new();
    write_from(Format::Perfetto, clock, &mut proto, traces.to_vec(), 2).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["otherData"]["clock"], "CLOCK_REALTIME");
    let base: u64 = doc["otherData"]["ts_base_ns"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(base, clock.base_ns);
    // Each process's first compute slice, read as a double, is Perfetto's exact ns.
    let events = doc["traceEvents"].as_array().unwrap();
    let packets = packets(&proto);
    let computes = tracks_named(&packets, "GPU Compute");
    for (pid, track) in [100u64, 300].into_iter().zip(computes) {
        let tid = events
            .iter()
            .find(|e| {
                e["pid"] == pid
                    && e["name"] == "thread_name"
                    && e["args"]["name"].as_str().unwrap().ends_with("GPU Compute")
            })
            .unwrap()["tid"]
            .clone();
        let first = events
            .iter()
            .find(|e| e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
            .unwrap();
        let ts = first["ts"].as_f64().unwrap();
        let exact = first_begin(&packets, track);
        assert_ne!(exact % 250, 0, "ns that a double of absolute µs would lose");
        assert_eq!((ts * 1000.0).round() as u64 + base, exact, "{first}");
    }
    // Every slice of a track keeps its order: none starts before the previous one ends.
    let mut by_track: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "region")
    {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0, "{e}");
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        by_track.entry(key).or_default().push((ts, ts + dur));
    }
    for slices in by_track.values() {
        for w in slices.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-9, "{w:?}");
        }
    }
}

/// A time before the base is a negative `ts`, exact.
#[test]
fn a_chrome_timestamp_before_the_base_is_negative() {
    let records = process_pipeline("node-a", 100, 5_000_000_000_000, 1_700_000_000);
    let clock = ExportClock {
        domain: ClockDomain::Monotonic,
        base_ns: 5_000_000_000_000 + 1_000_000_000_000,
    };
    let mut json = Vec::new();
    write_from(Format::Chrome, clock, &mut json, vec![&records[..]], 0).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let first = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "X")
        .unwrap()
        .clone();
    let ts = first["ts"].as_f64().unwrap();
    assert!(ts < -999_000_000.0 && ts > -1_000_000_000.0, "{first}");
    assert!(first["dur"].as_f64().unwrap() >= 0.0, "{first}");
}

/// Two hosts' processes with one pid (containers: pid 1 each) stay two processes: a
/// viewer keys processes by pid, so the second gets a pid of its own above real ones and
/// its recorded pid among its labels, in both formats; one host's traces of one pid stay
/// one process.
#[test]
fn processes_of_two_hosts_with_one_pid_stay_apart() {
    let a = process_pipeline("node-a", 1, 5_000_000_000_000, 1_700_000_000);
    let b = process_pipeline("node-b", 1, 9_000_000_000, 1_700_000_001);
    let a2 = process_pipeline("node-a", 1, 5_003_000_000_000, 1_700_000_003);
    let out = merged(&[&a, &b, &a2], Format::Chrome, ClockDomain::Realtime);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let labels: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "process_labels")
        .map(|e| {
            let labels = e["args"]["labels"].as_str().unwrap().to_owned();
            (e["pid"].as_u64().unwrap(), labels)
        })
        .collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert_eq!(labels[0].0, 1);
    assert!(
        labels[0].1.starts_with("host=node-a, /usr/bin/app"),
        "{labels:?}"
    );
    assert!(labels[1].0 >= 1 << 22, "{labels:?}");
    assert!(
        labels[1].1.starts_with("host=node-b, recorded pid=1, "),
        "{labels:?}"
    );
    assert_eq!(
        labels[2].0, 1,
        "node-a's second trace of pid 1: the same process"
    );
    // Every event of the second trace is on its own pid.
    let pids: BTreeSet<u64> = events.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids, BTreeSet::from([1, labels[1].0]));

    let out = merged(&[&a, &b], Format::Perfetto, ClockDomain::Realtime);
    let processes: Vec<(i32, Vec<String>)> = packets(&out)
        .iter()
        .filter_map(|p| {
            let d = p.track_descriptor.as_ref()?.process.as_ref()?;
            Some((d.pid?, d.process_labels.clone()))
        })
        .collect();
    assert_eq!(processes.len(), 2);
    assert_eq!(processes[0], (1, vec!["host=node-a".to_owned()]));
    assert_eq!(labels[1].0, processes[1].0 as u64);
    assert_eq!(processes[1].1, ["host=node-b", "recorded pid=1"]);
}

/// A thread id the system gave again to a later thread of the process: each thread keeps
/// a track of its own (the later one a made-up tid), in both formats.
#[test]
fn a_reused_thread_id_keeps_two_threads_apart() {
    let mut records = annotated_process(4242, 5_000_000_000_000, 1_700_000_000);
    for r in &mut records {
        if let Record::ThreadName(t) = r {
            t.os_tid = 777;
        }
    }
    let (out, _) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let tid_of = |name: &str| thread_tid_named(events, name);
    // The first thread to appear keeps the OS id; the other is made up.
    let (main, decoder) = (tid_of("main"), tid_of("decoder"));
    assert_ne!(main, decoder);
    assert!(main == 777 || decoder == 777, "{main} {decoder}");
    let on = |name: &str| -> BTreeSet<u64> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == name)
            .map(|e| e["tid"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(on("decode"), BTreeSet::from([decoder]));
    assert_eq!(on("submit"), BTreeSet::from([main]));

    let (out, _) = export(&records, Format::Perfetto);
    let tids: BTreeSet<i32> = packets(&out)
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.thread.as_ref()?.tid)
        .collect();
    assert_eq!(tids, BTreeSet::from([main as i32, decoder as i32]));
}

/// The Chrome `tid` of the thread whose `thread_name` is `name`.
fn thread_tid_named(events: &[serde_json::Value], name: &str) -> u64 {
    events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name}"))["tid"]
        .as_u64()
        .unwrap()
}

/// Ranges closed out of order cross: each crossing one goes on its thread's `(crossing
/// ranges)` track, counted, in both formats; nested and later ranges stay on the thread's.
#[test]
fn crossing_ranges_go_on_a_track_of_their_own() {
    use hrx_capture::schema::{AnnotationName, AnnotationRange};
    let mut records = annotated_process(4242, 5_000_000_000_000, 1_700_000_000);
    let (base, ms) = (100_000_000, 1_000_000);
    for (id, text) in [
        (10, "outer"),
        (11, "inner"),
        (12, "crossing"),
        (13, "after"),
        (14, "O"),
        (15, "X"),
        (16, "Y"),
        (17, "Z"),
    ] {
        records.push(Record::AnnotationName(AnnotationName {
            name: AnnotationId(id),
            text: text.into(),
        }));
    }
    // In the order they close: inner, outer (around it), crossing (starts inside outer,
    // ends after it), after; then, on `main`, O, X, Y, Z opened and X, Y, Z, O dropped: Y
    // crosses X, and Z both X and Y (so it crossed Y on the crossing track too).
    let ranges = [
        (1, 11, 2, 3),
        (1, 10, 1, 4),
        (1, 12, 3, 6),
        (1, 13, 7, 8),
        (0, 15, 21, 24),
        (0, 16, 22, 25),
        (0, 17, 23, 26),
        (0, 14, 20, 30),
    ];
    for (thread, id, start, end) in ranges {
        records.push(Record::AnnotationRange(AnnotationRange {
            thread,
            name: AnnotationId(id),
            start_ns: base + start * ms,
            end_ns: base + end * ms,
        }));
    }
    let (out, counts) = export(&records, Format::Chrome);
    assert_eq!(counts.crossing_slices, 3);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let tid_of = |name: &str| thread_tid_named(events, name);
    let (decoder, crossing) = (tid_of("decoder"), tid_of("decoder (crossing ranges)"));
    assert_ne!(decoder, crossing);
    let tid = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == name)
            .unwrap()["tid"]
            .as_u64()
            .unwrap()
    };
    for name in ["outer", "inner", "after", "decode"] {
        assert_eq!(tid(name), decoder, "{name}");
    }
    assert_eq!(tid("crossing"), crossing);
    let main = tid_of("main");
    assert_eq!((tid("O"), tid("X")), (main, main));
    assert_eq!(tid("Y"), tid_of("main (crossing ranges)"));
    assert_eq!(tid("Z"), tid_of("main (crossing ranges 2)"));
    // Every thread track's slices nest now.
    let mut by_tid: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"].as_u64().unwrap() < 0x4000_0000)
    {
        let ts = (e["ts"].as_f64().unwrap() * 1e3).round() as u64;
        let dur = (e["dur"].as_f64().unwrap() * 1e3).round() as u64;
        by_tid
            .entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push((ts, ts + dur));
    }
    for slices in by_tid.values() {
        for (i, a) in slices.iter().enumerate() {
            for b in &slices[i + 1..] {
                let apart = a.1 <= b.0 || b.1 <= a.0;
                let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                assert!(apart || nested, "{a:?} crosses {b:?}");
            }
        }
    }
    let (out, counts) = export(&records, Format::Perfetto);
    assert_eq!(counts.crossing_slices, 3);
    let names: Vec<String> = packets(&out)
        .iter()
        .filter_map(|p| {
            p.track_descriptor
                .as_ref()?
                .thread
                .as_ref()?
                .thread_name
                .clone()
        })
        .collect();
    assert!(
        names.contains(&"decoder (crossing ranges)".to_owned()),
        "{names:?}"
    );
}

/// A process's pipeline with host threads, annotations and a counter (format 1.14): eight
/// frames of `crate::synthetic::annotations`, 1 ms apart from 10 ms.
fn annotated_process(pid: u32, base_ns: u64, wall_s: i64) -> Vec<Record> {
    let mut records = process_pipeline("node-a", pid, base_ns, wall_s);
    records.extend(crate::synthetic::annotations(8, 10_000_000, 1_000_000));
    records
}

/// What a Perfetto export's tracks are: by uuid, the name (a thread's `thread_name`, a
/// process's `process_name`), the parent, the thread's (pid, tid) and whether it is a
/// counter.
type Tracks = HashMap<u64, (String, Option<u64>, Option<(i32, i32)>, bool)>;

fn tracks_of(packets: &[pb::TracePacket]) -> Tracks {
    packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .map(|d| {
            let name = d
                .name
                .clone()
                .or_else(|| d.thread.as_ref()?.thread_name.clone())
                .or_else(|| d.process.as_ref()?.process_name.clone())
                .unwrap();
            let thread = d.thread.as_ref().map(|t| (t.pid.unwrap(), t.tid.unwrap()));
            (
                d.uuid.unwrap(),
                (name, d.parent_uuid, thread, d.counter.is_some()),
            )
        })
        .collect()
}

/// The uuid of the track of process `name` (a top-level track).
fn process_track(tracks: &Tracks, name: &str) -> u64 {
    tracks
        .iter()
        .find(|(_, t)| t.0 == name && t.1.is_none())
        .map(|(uuid, _)| *uuid)
        .expect("the process's track")
}

/// Host threads (format 1.14): a thread track per recording thread under the trace's
/// process (its real pid, the thread's OS tid and name), holding its `submit` and `wait`
/// slices, its annotation ranges and markers; a counter track per counter with its samples;
/// every time on the absolute clock as the regions'. Chrome alike: the real pid and tid.
#[test]
fn host_threads_are_thread_tracks_with_their_spans_annotations_and_counters() {
    let base = 5_000_000_000_000;
    let records = annotated_process(4242, base, 1_700_000_000);
    let (out, counts) = export(&records, Format::Perfetto);
    assert_eq!(
        (
            counts.thread_tracks,
            counts.thread_slices,
            counts.markers,
            counts.counter_tracks,
            counts.counter_samples
        ),
        (2, 24, 8, 1, 16)
    );
    let trace = pb::Trace::decode(&out[..]).unwrap();
    assert_eq!(trace.encode_to_vec(), out, "fields as prost writes them");
    let packets = resolved(&trace);
    let tracks = tracks_of(&packets);
    let process = process_track(&tracks, "app");
    let track = |name: &str| {
        let (uuid, t) = tracks.iter().find(|(_, t)| t.0 == name).unwrap();
        (*uuid, t.clone())
    };
    let (main, t) = track("main");
    assert_eq!((t.1, t.2, t.3), (Some(process), Some((4242, 1000)), false));
    let (decoder, t) = track("decoder");
    assert_eq!((t.1, t.2, t.3), (Some(process), Some((4242, 1001)), false));
    let (in_flight, t) = track("in flight");
    assert_eq!((t.1, t.2, t.3), (Some(process), None, true));
    // Events by track: (timestamp, type, name, category).
    type Event = (u64, i32, Option<String>, Option<String>);
    let mut on: HashMap<u64, Vec<Event>> = HashMap::new();
    let mut values = Vec::new();
    for p in &packets {
        let Some(e) = &p.track_event else { continue };
        let uuid = e.track_uuid.unwrap();
        if uuid == in_flight {
            assert_eq!(e.r#type, Some(4));
            values.push((p.timestamp.unwrap(), e.double_counter_value.unwrap()));
            continue;
        }
        on.entry(uuid).or_default().push((
            p.timestamp.unwrap(),
            e.r#type.unwrap(),
            e.name.clone(),
            e.categories.first().cloned(),
        ));
    }
    let named = |track: u64, kind: i32, name: &str| -> Vec<(u64, Option<String>)> {
        on[&track]
            .iter()
            .filter(|e| e.1 == kind && e.2.as_deref() == Some(name))
            .map(|e| (e.0, e.3.clone()))
            .collect()
    };
    // Session ns t is base + 7 (the calibration's offset) + t.
    let at = |t: u64| base + 7 + t;
    let frames = |first: u64| (0..8).map(move |i| at(first + i * 1_000_000));
    let host = |t| (t, Some("host".to_owned()));
    assert_eq!(
        named(main, 1, "submit"),
        frames(10_000_000).map(host).collect::<Vec<_>>()
    );
    assert_eq!(
        named(main, 1, "wait"),
        frames(10_010_000).map(host).collect::<Vec<_>>()
    );
    let annotation = |t| (t, Some("annotation".to_owned()));
    assert_eq!(
        named(main, 3, "frame ready"),
        frames(10_110_000).map(annotation).collect::<Vec<_>>()
    );
    let decodes = named(decoder, 1, "decode");
    assert_eq!(decodes.len(), 8);
    assert_eq!(decodes[0], annotation(at(9_000_000)));
    // Each begin has its end on the same track; nothing else is on the threads' tracks.
    for track in [main, decoder] {
        let begins = on[&track].iter().filter(|e| e.1 == 1).count();
        let ends = on[&track].iter().filter(|e| e.1 == 2).count();
        assert_eq!(begins, ends);
    }
    assert_eq!(on[&decoder].len(), 16);
    assert_eq!(on[&main].len(), 8 * 5);
    let expected: Vec<(u64, f64)> = (0..8)
        .flat_map(|i| {
            let t = 10_000_000 + i * 1_000_000;
            [(at(t + 10_000), 1.0), (at(t + 110_000), 0.0)]
        })
        .collect();
    assert_eq!(values, expected);

    let (out, chrome) = export(&records, Format::Chrome);
    assert_eq!(chrome, counts);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert!(events.iter().all(|e| e["pid"] == 4242));
    let thread_names: BTreeSet<(u64, String)> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter(|e| e["tid"].as_u64().unwrap() < 0x4000_0000)
        .map(|e| {
            let name = e["args"]["name"].as_str().unwrap().to_owned();
            (e["tid"].as_u64().unwrap(), name)
        })
        .collect();
    assert_eq!(
        thread_names,
        BTreeSet::from([(1000, "main".to_owned()), (1001, "decoder".to_owned())])
    );
    let count = |ph: &str, name: &str, tid: u64| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["name"] == name && e["tid"] == tid)
            .count()
    };
    assert_eq!(count("X", "decode", 1001), 8);
    assert_eq!(count("X", "submit", 1000), 8);
    assert_eq!(count("X", "wait", 1000), 8);
    assert_eq!(count("i", "frame ready", 1000), 8);
    let submit = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "submit")
        .unwrap();
    assert_eq!(submit["args"]["submission"], 0);
    assert_eq!(submit["ts"].as_f64().unwrap(), at(10_000_000) as f64 / 1e3);
    let samples: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            assert_eq!(e["name"], "in flight");
            let ts = e["ts"].as_f64().unwrap();
            (ts, e["args"]["in flight"].as_f64().unwrap())
        })
        .collect();
    let want: Vec<(f64, f64)> = expected.iter().map(|&(t, v)| (t as f64 / 1e3, v)).collect();
    assert_eq!(samples, want);
}

/// Two annotated processes merged: each one's threads and counters are tracks of its own
/// process (its pid; the same recorded thread ids apart), with uuids of their own.
#[test]
fn merged_processes_keep_their_threads_and_counters_apart() {
    let a = annotated_process(100, 5_000_000_000_000, 1_700_000_000);
    let b = annotated_process(200, 5_002_000_000_000, 1_700_000_002);
    let out = merged(&[&a, &b], Format::Perfetto, ClockDomain::Monotonic);
    let packets = packets_of(&out);
    let uuids: Vec<u64> = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.uuid)
        .collect();
    assert_eq!(uuids.iter().collect::<HashSet<_>>().len(), uuids.len());
    let tracks = tracks_of(&packets);
    let processes: HashMap<u64, String> = tracks
        .iter()
        .filter(|(_, t)| t.1.is_none())
        .map(|(uuid, t)| (*uuid, t.0.clone()))
        .collect();
    assert_eq!(processes.len(), 2);
    let mut threads: Vec<(i32, i32, String)> = tracks
        .values()
        .filter_map(|t| t.2.map(|(pid, tid)| (pid, tid, t.0.clone())))
        .collect();
    threads.sort();
    let want: Vec<(i32, i32, String)> = [100, 200]
        .into_iter()
        .flat_map(|pid| [(pid, 1000, "main".into()), (pid, 1001, "decoder".into())])
        .collect();
    assert_eq!(threads, want);
    // Each thread and counter hangs off its own process.
    let parents: HashSet<u64> = tracks
        .values()
        .filter(|t| t.2.is_some() || t.3)
        .map(|t| t.1.unwrap())
        .collect();
    assert_eq!(parents, processes.keys().copied().collect());
    assert_eq!(tracks.values().filter(|t| t.3).count(), 2);
    // b's first decode is 2 s after a's, on its own track.
    let decoders: Vec<u64> = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .filter(|d| d.thread.as_ref().is_some_and(|t| t.tid == Some(1001)))
        .filter_map(|d| d.uuid)
        .collect();
    assert_eq!(decoders.len(), 2);
    let (ta, tb) = (
        first_begin(&packets, decoders[0]),
        first_begin(&packets, decoders[1]),
    );
    assert_eq!(tb - ta, 2_000_000_000);
    // Chrome: each process's threads by (pid, tid).
    let out = merged(&[&a, &b], Format::Chrome, ClockDomain::Monotonic);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let decodes: BTreeMap<u64, usize> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "decode")
        .fold(BTreeMap::new(), |mut m, e| {
            assert_eq!(e["tid"], 1001);
            *m.entry(e["pid"].as_u64().unwrap()).or_default() += 1;
            m
        });
    assert_eq!(decodes, BTreeMap::from([(100, 8), (200, 8)]));
}

/// The (submission, region) of each failed run in `records`.
fn failed_runs(records: &[Record]) -> BTreeSet<(u64, u64)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::RegionDone(d) if matches!(d.status, Status::Failed { .. }) => {
                Some((d.submission.0, u64::from(d.region.0)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_failed_runs_slices_say_it_failed_and_where_in_both_formats() {
    let spec = PipelineSpec {
        fail_at: Some(7),
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = crate::synthetic::with_op_timings(pipeline(spec)).collect();
    let failed = failed_runs(&records);
    assert!(!failed.is_empty());

    let (out, _) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let (mut regions, mut ops, mut failed_here) = (BTreeSet::new(), 0, Vec::new());
    for e in doc["traceEvents"].as_array().unwrap() {
        let (Some(submission), Some(region)) = (
            e["args"]["submission"].as_u64(),
            e["args"]["region"].as_u64(),
        ) else {
            continue;
        };
        if e["ph"] != "X" || e["cat"] == "host" {
            continue;
        }
        let run_failed = failed.contains(&(submission, region));
        let status = e["args"]["status"].as_str();
        if e["cat"] == "operation" {
            // The operation the error names (`... (sobel)`) failed; the others stopped
            // with their region.
            let expected = match (run_failed, e["name"].as_str()) {
                (false, _) => None,
                (true, Some("sobel")) => Some("failed here"),
                (true, _) => Some("region failed"),
            };
            assert_eq!(status, expected, "{e}");
            ops += usize::from(run_failed);
            if status == Some("failed here") {
                failed_here.push((submission, region));
            }
        } else {
            assert_eq!(status, run_failed.then_some("failed"), "{e}");
            if run_failed {
                regions.insert((submission, region));
            }
        }
    }
    assert_eq!(regions, failed, "every failed run's slice says so");
    assert!(ops > 1, "the failed run's operations say so");
    assert_eq!(
        failed_here.len(),
        failed.len(),
        "one failed operation a failed run"
    );

    let (out, _) = export(&records, Format::Perfetto);
    let mut marked = BTreeSet::new();
    for p in packets(&out) {
        let Some(e) = p.track_event else { continue };
        let arg = |name: &str| {
            e.debug_annotations
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
        };
        let (Some(submission), Some(region)) = (
            arg("submission").and_then(|a| a.uint_value),
            arg("region").and_then(|a| a.uint_value),
        ) else {
            continue;
        };
        if e.categories.iter().any(|c| c == "region") {
            let status = arg("status").and_then(|a| a.string_value.clone());
            let run_failed = failed.contains(&(submission, region));
            assert_eq!(status.as_deref(), run_failed.then_some("failed"));
            if run_failed {
                marked.insert((submission, region));
            }
        }
    }
    assert_eq!(marked, failed);
}

#[test]
fn the_failed_operation_is_the_one_the_error_names_in_parentheses() {
    let named = crate::failed_operation;
    assert_eq!(
        named("device lost: injected fault op=9 at device operation 9 (hrx_blur_h)"),
        Some("hrx_blur_h")
    );
    assert_eq!(named("kernel error: injected (fill)"), Some("fill"));
    // CUDA's sticky error explains itself in parentheses: that is not an operation.
    let cuda = "device lost: CUDA_ERROR_ILLEGAL_ADDRESS in cuStreamSynchronize (sticky: the \
                CUDA context is unusable until every runtime on the device is dropped)";
    assert_eq!(named(cuda), None);
    assert_eq!(named("device lost"), None);
    assert_eq!(named("()"), None);
}

/// The rows of one table of a Parquet export, each value as text (`None` for a null).
#[cfg(feature = "parquet")]
fn parquet_rows(dir: &std::path::Path, table: &str) -> Vec<Vec<Option<String>>> {
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use ::parquet::record::Field;
    let file = std::fs::File::open(dir.join(format!("{table}.parquet"))).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(_, field)| match field {
                    Field::Null => None,
                    Field::Str(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                })
                .collect()
        })
        .collect()
}

/// A range's time in the Parquet `annotations` table can be taken as `stats` takes it: each
/// range row has `capture_wait_ns`, the waits of its thread on the recorder and at capture
/// fences inside it, which `stats` and `diff` leave out of its time, so `sum(duration_ns -
/// capture_wait_ns)` per name is `stats`' total (the module's query summed `duration_ns`:
/// 489 ms of `write frame` where `stats` said 73.2 ms, the rest recorder waits; break-it
/// pass, session 53). Another thread's wait, and a wait before the range, count for none.
#[cfg(feature = "parquet")]
#[test]
fn parquet_annotations_hold_the_capture_waits_stats_leaves_out() {
    use hrx_capture::schema::{AnnotationId, AnnotationName, HostSpan, HostSpanKind};
    let base = 5_000_000_000_000;
    let mut records = annotated_process(4242, base, 1_700_000_000);
    let wait = crate::synthetic::recorder_wait;
    let range = |start_ns, end_ns| {
        crate::synthetic::range_on_first_thread(AnnotationId(50), start_ns, end_ns)
    };
    records.extend([
        Record::AnnotationName(AnnotationName {
            name: AnnotationId(50),
            text: "write frame".into(),
        }),
        wait(0, 30_000_000, 30_000_500),
        wait(0, 30_002_000, 30_002_400),
        Record::HostSpan(HostSpan {
            thread: 0,
            kind: HostSpanKind::CaptureFence,
            runtime: RuntimeId(1),
            submission: SubmissionIndex(1),
            region: None,
            start_ns: 30_002_500,
            end_ns: 30_002_600,
        }),
        wait(1, 30_002_000, 30_002_900),
        range(30_001_000, 30_003_000),
        range(30_004_000, 30_005_000),
    ]);
    let (stats, _) = crate::stats::stats_of(&records);
    let write = stats
        .annotations
        .iter()
        .find(|a| a.name == "write frame")
        .unwrap();
    assert_eq!((write.count, write.total_ns), (2, 1_500 + 1_000));

    let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
    for r in &records {
        writer.write(r).unwrap();
    }
    let bytes = writer.finish().unwrap().0;
    let dir = tempfile::tempdir().unwrap();
    let reader = TraceReader::new(&bytes[..]).unwrap();
    let session = read_session(TraceReader::new(&bytes[..]).unwrap());
    super::parquet::write_parquet(vec![(reader, session)], dir.path()).unwrap();
    // Columns: session_id, thread, name, kind, start_ns, end_ns, duration_ns,
    // capture_wait_ns.
    let rows = parquet_rows(dir.path(), "annotations");
    let number = |v: &Option<String>| v.as_deref().unwrap().parse::<u64>().unwrap();
    let writes: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| r[2].as_deref() == Some("write frame"))
        .map(|r| (number(&r[6]), number(&r[7])))
        .collect();
    assert_eq!(writes, [(2_000, 500), (1_000, 0)]);
    // Every range name's figure, as the module's query takes it, is `stats`'.
    let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r[3].as_deref() == Some("range")) {
        let entry = by_name.entry(r[2].clone().unwrap()).or_default();
        entry.0 += 1;
        entry.1 += number(&r[6]) - number(&r[7]);
    }
    let want: BTreeMap<String, (u64, u64)> = stats
        .annotations
        .iter()
        .map(|a| (a.name.clone(), (a.count, a.total_ns)))
        .collect();
    assert_eq!(by_name, want);
    // A marker waits for nothing.
    assert!(
        rows.iter()
            .filter(|r| r[3].as_deref() == Some("marker"))
            .all(|r| r[7].as_deref() == Some("0"))
    );
}

/// What the other formats show at a trace's end is in the Parquet `events` table too: the
/// region a crash was in (`running at end`, from its start, the trace's end beside it), the
/// signal, a region whose timing was lost, and a poison with the submission and region
/// that caused it (all were missing: a SQL user could not find the region that crashed).
#[cfg(feature = "parquet")]
#[test]
fn parquet_events_hold_what_the_traces_end_shows_and_poisons_hold_their_cause() {
    let (mut records, start_ns, end_ns) = crashed_pipeline();
    let (runtime, first) = records
        .iter()
        .find_map(|r| match r {
            Record::Submit(s) => Some((s.runtime, s.submission)),
            _ => None,
        })
        .unwrap();
    // The first submission's region 0 started and its timing never reached the file,
    // though the submission's outcome did: its timing was lost, it is not running.
    let mut lost_start = 0;
    records.retain(|r| match r {
        Record::RegionTiming(t) if t.submission == first && t.region == RegionIndex(0) => {
            lost_start = t.start_ns;
            false
        }
        _ => true,
    });
    records.push(Record::RegionStarted(hrx_capture::schema::RegionStarted {
        runtime,
        submission: first,
        region: RegionIndex(0),
        time_ns: lost_start,
    }));
    records.push(Record::Poison(hrx_capture::schema::Poison {
        runtime,
        buffer: hrx_capture::schema::BufferId(3),
        cause: "poisoned by submission 1 region 2".into(),
        time_ns: start_ns,
        submission: Some(SubmissionIndex(1)),
        region: Some(RegionIndex(2)),
    }));
    let running_submission = records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Submit(s) => Some(s.submission.0),
            _ => None,
        })
        .unwrap();
    let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
    for r in &records {
        writer.write(r).unwrap();
    }
    let bytes = writer.finish().unwrap().0;
    let dir = tempfile::tempdir().unwrap();
    let reader = hrx_capture::TraceReader::new(&bytes[..]).unwrap();
    let session = read_session(TraceReader::new(&bytes[..]).unwrap());
    super::parquet::write_parquet(vec![(reader, session)], dir.path()).unwrap();
    let base = records
        .iter()
        .find_map(|r| match r {
            Record::SessionStart(s) => Some(s.monotonic_base_ns),
            _ => None,
        })
        .unwrap();
    let abs = |t: u64| Some((base + t).to_string());
    // Columns: session_id, runtime, time_ns, name, track, submission, region, detail.
    let events = parquet_rows(dir.path(), "events");
    let named = |name: &str| -> Vec<&Vec<Option<String>>> {
        events
            .iter()
            .filter(|e| e[3].as_deref() == Some(name))
            .collect()
    };
    let running = named("running at end");
    assert_eq!(running.len(), 1, "{events:?}");
    let row = running[0];
    assert_eq!(row[2], abs(start_ns));
    assert_eq!(row[4].as_deref(), Some("events"));
    assert_eq!(row[5], Some(running_submission.to_string()));
    assert_eq!(row[6].as_deref(), Some("0"));
    let detail = row[7].as_deref().unwrap();
    assert!(
        detail.contains("state=still running when the trace ends")
            && detail.contains(&format!("trace_end_ns={}", base + end_ns))
            && detail.contains("label="),
        "{detail}"
    );
    let lost = named("timing lost (records dropped)");
    assert_eq!(lost.len(), 1, "{events:?}");
    assert_eq!(lost[0][2], abs(lost_start));
    assert_eq!(lost[0][4].as_deref(), Some("recorder"));
    assert_eq!(lost[0][5], Some(first.0.to_string()));
    let fatal = named("fatal signal");
    assert_eq!(fatal.len(), 1, "{events:?}");
    assert_eq!(fatal[0][2], abs(end_ns));
    assert!(fatal[0][7].as_deref().unwrap().contains("signal=SIGSEGV"));
    let poison = named("poison");
    assert_eq!(poison.len(), 1, "{events:?}");
    assert_eq!(
        (poison[0][5].as_deref(), poison[0][6].as_deref()),
        (Some("1"), Some("2"))
    );
}

/// A write error says its cause once: as the error's message, not again as its source (a
/// full disk read "No space left on device (os error 28): No space left on device (os
/// error 28)" through a chain that prints both).
#[test]
fn a_write_error_says_its_cause_once() {
    let error = ExportError::Write(std::io::Error::other("No space left on device"));
    assert_eq!(error.to_string(), "No space left on device");
    assert!(std::error::Error::source(&error).is_none());
}

/// An export says whether the trace was being recorded as its reader was told at the open,
/// so that the CLI's warning says what the file's mark says (a recording that closed
/// during a long export read "not closed cleanly" on standard error and "being recorded"
/// in the file: a break-it pass).
#[test]
fn an_export_keeps_whether_the_trace_was_being_recorded_when_opened() {
    let file = trace_file(PipelineSpec::ops(40));
    let cut = &file[..file.len() / 2];
    for live in [true, false] {
        let reader = TraceReader::new(cut).unwrap().being_recorded(live);
        let session = read_session(TraceReader::new(cut).unwrap());
        let exported = write(reader, session, Format::Chrome, io::sink()).unwrap();
        assert_eq!(exported.being_recorded, live);
    }
}

/// The process's own marks (here a `host loaded` sample and a recorder wait of no runtime)
/// go on one track of the process named `Recorder (process)`, under no runtime: no
/// `runtime 0` that the trace does not hold (a user saw two tracks named `Recorder`, one
/// of them `runtime 0: Recorder`), apart from the runtime's own `Recorder` track.
#[test]
fn the_process_marks_are_on_a_process_track_not_a_runtime_0() {
    use hrx_capture::schema::{AnnotationId, AnnotationName, CounterValue, RecorderWait};
    let base = 5_000_000_000_000;
    let mut records = process_pipeline("node-a", 4242, base, 1_700_000_000);
    records.push(Record::AnnotationName(AnnotationName {
        name: AnnotationId(90),
        text: hrx_capture::schema::HOST_LOAD_COUNTER.into(),
    }));
    records.push(Record::CounterSample(CounterSample {
        thread: 0,
        name: AnnotationId(90),
        time_ns: 1_000,
        value: CounterValue(2.5),
    }));
    let wait = |runtime| {
        Record::RecorderWait(RecorderWait {
            thread: 0,
            thread_name: "main".into(),
            start_ns: 2_000,
            end_ns: 3_000,
            runtime,
            submission: None,
            region: None,
        })
    };
    records.push(wait(None));
    records.push(wait(Some(RuntimeId(1))));

    let (out, counts) = export(&records, Format::Perfetto);
    assert_eq!(counts.recorder_instants, 3);
    let packets = packets(&out);
    let tracks = tracks_of(&packets);
    let process = process_track(&tracks, "app");
    let on = |name: &str| -> BTreeSet<u64> {
        packets
            .iter()
            .filter_map(|p| p.track_event.as_ref())
            .filter(|e| e.name.as_deref() == Some(name))
            .map(|e| e.track_uuid.unwrap())
            .collect()
    };
    let loaded = on("host loaded");
    assert_eq!(loaded.len(), 1);
    let track = &tracks[loaded.first().unwrap()];
    assert_eq!(
        (track.0.as_str(), track.1),
        ("Recorder (process)", Some(process))
    );
    // The wait of no runtime beside it; the runtime's on its runtime's `Recorder`.
    let waits = on("recorder wait");
    assert_eq!(waits.len(), 2, "{waits:?}");
    assert!(waits.contains(loaded.first().unwrap()));
    let names: Vec<&str> = tracks.values().map(|t| t.0.as_str()).collect();
    assert_eq!(
        names.iter().filter(|n| **n == "Recorder").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "Recorder (process)").count(),
        1
    );
    // One runtime under the process (a track with tracks under it), as the trace holds.
    let parents: BTreeSet<u64> = tracks.values().filter_map(|t| t.1).collect();
    let runtimes: Vec<&str> = tracks
        .iter()
        .filter(|(uuid, t)| t.1 == Some(process) && parents.contains(uuid))
        .map(|(_, t)| t.0.as_str())
        .collect();
    assert_eq!(runtimes.len(), 1, "{runtimes:?}");
    assert!(!names.iter().any(|n| n.contains("runtime 0")), "{names:?}");

    let (out, _) = export(&records, Format::Chrome);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let mark = events.iter().find(|e| e["name"] == "host loaded").unwrap();
    assert_eq!(
        mark["tid"].as_u64(),
        Some(thread_tid_named(events, "Recorder (process)"))
    );
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("runtime 0")),
        "{names:?}"
    );
}

/// A region still running in a trace a recorder still writes is running now, as `stats`
/// says it (`running now (being recorded now: ...)`): the exports labelled it `(running
/// at end)`, `still running when the trace ends`, of the same trace at the same moment (a
/// break-it pass). Of a trace nobody writes, it is still running when the trace ends.
#[test]
fn a_region_running_in_a_trace_being_recorded_is_exported_running_now() {
    let (mut records, _, _) = crashed_pipeline();
    records.retain(|r| !matches!(r, Record::FatalSignal(_)));
    let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
    for r in &records {
        writer.write(r).unwrap();
    }
    let bytes = writer.finish().unwrap().0;
    for (live, mark, state) in [
        (
            true,
            " (running now)",
            "running now (being recorded now: its end is not written yet)",
        ),
        (
            false,
            " (running at end)",
            "still running when the trace ends",
        ),
    ] {
        let reader = TraceReader::new(&bytes[..]).unwrap().being_recorded(live);
        let mut out = Vec::new();
        let session = read_session(TraceReader::new(&bytes[..]).unwrap());
        write(reader, session, Format::Chrome, &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        let running: Vec<&serde_json::Value> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().contains(" (running "))
            .collect();
        assert_eq!(running.len(), 1, "{live}: {running:?}");
        assert!(
            running[0]["name"].as_str().unwrap().ends_with(mark),
            "{running:?}"
        );
        assert_eq!(running[0]["args"]["state"], state);
        #[cfg(feature = "parquet")]
        {
            let dir = tempfile::tempdir().unwrap();
            let reader = TraceReader::new(&bytes[..]).unwrap().being_recorded(live);
            let session = read_session(TraceReader::new(&bytes[..]).unwrap());
            super::parquet::write_parquet(vec![(reader, session)], dir.path()).unwrap();
            let events = parquet_rows(dir.path(), "events");
            let name = mark.trim_start().trim_matches(['(', ')']);
            let rows: Vec<_> = events
                .iter()
                .filter(|e| e[3].as_deref() == Some(name))
                .collect();
            assert_eq!(rows.len(), 1, "{live}: {events:?}");
            assert!(
                rows[0][7]
                    .as_deref()
                    .unwrap()
                    .contains(&format!("state={state}")),
                "{rows:?}"
            );
        }
    }
}

/// `process_pipeline`'s records as a trace whose first block was lost: no `SessionStart`,
/// its calibration read only after the first timed records (as a later block has it); with
/// `clock` false, no calibration at all.
fn lost_session(records: &[Record], clock: bool) -> Vec<Record> {
    let calibration = records
        .iter()
        .find(|r| matches!(r, Record::HostClock(_)))
        .cloned()
        .unwrap();
    let mut lost: Vec<Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::SessionStart(_) | Record::HostClock(_)))
        .cloned()
        .collect();
    if clock {
        lost.push(calibration);
    }
    lost
}

/// Chrome's complete events as (name, ts, dur), sorted.
fn chrome_slices(doc: &serde_json::Value) -> Vec<(String, String, String)> {
    let mut slices: Vec<_> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].to_string(),
                e["ts"].to_string(),
                e["dur"].to_string(),
            )
        })
        .collect();
    slices.sort();
    slices
}

/// A trace whose `SessionStart` was lost is exported at the times its calibration recovers
/// (those of the intact trace), and says what it lost in the output: no made-up wall clock
/// in the Perfetto snapshot, a process named and labelled as lost, Chrome's `otherData`, a
/// `session record lost` mark. It was exported at session ns under a snapshot of
/// `CLOCK_MONOTONIC` 0 and 1970, as pid 0 of host "" (a break-it pass).
#[test]
fn a_lost_session_is_exported_on_its_recovered_clock_and_says_what_it_lost() {
    let base = 5_000_000_000_000;
    let intact = process_pipeline("node-a", 4242, base, 1_700_000_000);
    let lost = lost_session(&intact, true);
    let chrome = |records: &[Record]| -> serde_json::Value {
        serde_json::from_slice(&export(records, Format::Chrome).0).unwrap()
    };
    let (doc, intact_doc) = (chrome(&lost), chrome(&intact));
    assert_eq!(chrome_slices(&doc), chrome_slices(&intact_doc));
    assert_eq!(doc["otherData"]["clock"], "CLOCK_MONOTONIC");
    let note = doc["otherData"]["session_record"].as_str().unwrap();
    assert!(
        note.starts_with("session record lost") && note.contains("CLOCK_MONOTONIC"),
        "{note}"
    );
    assert!(intact_doc["otherData"].get("session_record").is_none());
    let events = doc["traceEvents"].as_array().unwrap();
    let meta = |name: &str| events.iter().find(|e| e["name"] == name).unwrap()["args"].clone();
    assert_eq!(
        meta("process_name")["name"],
        "hrx process (session record lost)"
    );
    assert_eq!(meta("process_labels")["labels"], note);
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "i" && e["name"] == "session record lost"),
        "no mark"
    );

    let (out, counts) = export(&lost, Format::Perfetto);
    let (intact_out, intact_counts) = export(&intact, Format::Perfetto);
    assert_eq!(
        counts.recorder_instants,
        intact_counts.recorder_instants + 1
    );
    let packets = packets_of(&out);
    let snapshots = clock_snapshots(&packets);
    // CLOCK_MONOTONIC at the recovered base (the session's plus the calibration's offset);
    // no wall clock.
    assert_eq!(snapshots, [vec![(3, base + 7)]]);
    let process = packets
        .iter()
        .find_map(|p| p.track_descriptor.as_ref()?.process.as_ref())
        .unwrap();
    assert_eq!(process.process_labels, [note]);
    let intact_packets = packets_of(&intact_out);
    assert_eq!(
        first_begin(&packets, track_named(&out, "GPU Compute")),
        first_begin(&intact_packets, track_named(&intact_out, "GPU Compute"))
    );

    // No calibration: session ns, and the output says they are not CLOCK_MONOTONIC.
    let doc = chrome(&lost_session(&intact, false));
    let clock = doc["otherData"]["clock"].as_str().unwrap();
    assert!(clock.starts_with("ns from the session's start"), "{clock}");
    let note = doc["otherData"]["session_record"].as_str().unwrap();
    assert!(note.contains("not CLOCK_MONOTONIC"), "{note}");
}

/// A trace that lost its `SessionStart` and every calibration holds session ns: its
/// Perfetto export names no clock for them, neither as the sequence's default clock nor in
/// a snapshot (it wrote `timestamp_clock_id` 3 and a snapshot of `CLOCK_MONOTONIC` 0, as
/// if session ns were the host's monotonic clock: a second break-it pass), and its process
/// labels say what they are, as Chrome's `otherData.clock` does. Its slices keep the
/// trace's own times.
#[test]
fn a_lost_session_without_a_calibration_claims_no_clock_in_perfetto() {
    let base = 5_000_000_000_000;
    let intact = process_pipeline("node-a", 4242, base, 1_700_000_000);
    let lost = lost_session(&intact, false);
    let (out, _) = export(&lost, Format::Perfetto);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    assert_eq!(trace.encode_to_vec(), out, "fields as prost writes them");
    let clocks: Vec<u32> = trace
        .packet
        .iter()
        .filter_map(|p| p.trace_packet_defaults.as_ref()?.timestamp_clock_id)
        .collect();
    assert!(clocks.is_empty(), "a default clock named: {clocks:?}");
    let packets = packets_of(&out);
    assert!(
        packets.iter().all(|p| p.clock_snapshot.is_none()),
        "no clock snapshot"
    );
    let process = packets
        .iter()
        .find_map(|p| p.track_descriptor.as_ref()?.process.as_ref())
        .unwrap();
    let label = &process.process_labels[0];
    assert!(
        label.contains("times are ns from the session's start, not CLOCK_MONOTONIC"),
        "{label}"
    );
    // Session ns, as the records hold them: the first GPU Compute slice where the intact
    // trace's lies less its base.
    let (intact_out, _) = export(&intact, Format::Perfetto);
    let intact_first = first_begin(
        &packets_of(&intact_out),
        track_named(&intact_out, "GPU Compute"),
    );
    assert_eq!(
        first_begin(&packets, track_named(&out, "GPU Compute")),
        intact_first - (base + 7)
    );
    // A calibration read keeps it on CLOCK_MONOTONIC, as the sequence's default too.
    let (recovered, _) = export(&lost_session(&intact, true), Format::Perfetto);
    let trace = pb::Trace::decode(&recovered[..]).unwrap();
    let defaults = trace.packet[0].trace_packet_defaults.as_ref().unwrap();
    assert_eq!(defaults.timestamp_clock_id, Some(3));
}

/// A trace that lost only its first block, whose surviving calibrations all lie far into
/// it, is put on `CLOCK_MONOTONIC` by the first one read, as one whose calibration is in
/// its first surviving block is. The recorder calibrates on its timer, not per block: a
/// busy recording writes hundreds of thousands of records between two calibrations, and
/// [`read_session`] gave up 65,552 records in, so that the export said "no clock
/// calibration read" (times from the session's start, no Perfetto clock snapshot, Parquet
/// `clock` `session`) while `info` counted the calibrations (break-it pass, session 51).
#[test]
fn a_lost_session_is_placed_by_a_calibration_far_into_the_trace() {
    let base = 5_000_000_000_000;
    let intact = process_pipeline_of(
        PipelineSpec::ops(24_000),
        "node-a",
        4242,
        base,
        1_700_000_000,
    );
    // Its calibration after every other record (`lost_session`).
    let lost = lost_session(&intact, true);
    assert!(lost.len() > (1 << 16) + 16, "{} records", lost.len());
    let file = |records: &[Record]| -> Vec<u8> {
        let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
        for r in records {
            writer.write(r).unwrap();
        }
        writer.finish().unwrap().0
    };
    let (lost, intact) = (file(&lost), file(&intact));
    let session = read_session(TraceReader::new(&lost[..]).unwrap());
    assert!(
        matches!(session, TraceSession::Lost { clock: Some(_), .. }),
        "{session:?}"
    );
    assert_eq!(session.monotonic_base_ns(), Some(base + 7));
    let export_file = |bytes: &[u8], format: Format| -> Vec<u8> {
        let session = read_session(TraceReader::new(bytes).unwrap());
        let mut out = Vec::new();
        write(TraceReader::new(bytes).unwrap(), session, format, &mut out).unwrap();
        out
    };
    // Chrome: on CLOCK_MONOTONIC, at the intact trace's times.
    let chrome = |bytes: &[u8]| -> serde_json::Value {
        serde_json::from_slice(&export_file(bytes, Format::Chrome)).unwrap()
    };
    let (doc, intact_doc) = (chrome(&lost), chrome(&intact));
    assert_eq!(doc["otherData"]["clock"], "CLOCK_MONOTONIC");
    let note = doc["otherData"]["session_record"].as_str().unwrap();
    assert!(
        note.contains("times put on CLOCK_MONOTONIC from the first clock calibration read"),
        "{note}"
    );
    assert_eq!(
        doc["otherData"]["ts_base_ns"],
        intact_doc["otherData"]["ts_base_ns"]
    );
    assert_eq!(chrome_slices(&doc), chrome_slices(&intact_doc));
    // Perfetto: a snapshot of CLOCK_MONOTONIC at the recovered base, the sequence's clock.
    let out = export_file(&lost, Format::Perfetto);
    let trace = pb::Trace::decode(&out[..]).unwrap();
    let defaults = trace.packet[0].trace_packet_defaults.as_ref().unwrap();
    assert_eq!(defaults.timestamp_clock_id, Some(3));
    let snapshots = clock_snapshots(&trace.packet);
    assert_eq!(snapshots, [vec![(3, base + 7)]]);
    // Parquet: `clock` CLOCK_MONOTONIC, the recovered base; the same id exported again.
    #[cfg(feature = "parquet")]
    {
        let sessions = || {
            let dir = tempfile::tempdir().unwrap();
            let session = read_session(TraceReader::new(&lost[..]).unwrap());
            let traces = vec![(TraceReader::new(&lost[..]).unwrap(), session)];
            super::parquet::write_parquet(traces, dir.path()).unwrap();
            parquet_rows(dir.path(), "sessions")
        };
        let rows = sessions();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0][5], Some((base + 7).to_string()));
        assert_eq!(
            (rows[0][9].as_deref(), rows[0][10].as_deref()),
            (Some("lost"), Some("CLOCK_MONOTONIC"))
        );
        assert_eq!(sessions()[0][0], rows[0][0], "one trace, two ids");
    }
}

/// Parquet `sessions` has a row for a trace whose `SessionStart` was lost, so that the
/// README's join on `session_id` keeps its rows (it had none, and the join dropped every
/// one): what it lost null, `session_record` `lost`, the base its calibration recovered and
/// its times as the intact trace's; two such traces keep apart (one constant id before).
#[cfg(feature = "parquet")]
#[test]
fn parquet_sessions_has_a_row_for_a_lost_session_that_its_rows_join() {
    let base = 5_000_000_000_000;
    let intact = process_pipeline("node-a", 4242, base, 1_700_000_000);
    let other = process_pipeline("node-a", 4243, base + 1_000_000_000, 1_700_000_001);
    let file = |records: &[Record]| -> Vec<u8> {
        let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
        for r in records {
            writer.write(r).unwrap();
        }
        writer.finish().unwrap().0
    };
    let tables = |files: &[&Vec<u8>]| {
        let dir = tempfile::tempdir().unwrap();
        let traces = files
            .iter()
            .map(|b| {
                let session = read_session(TraceReader::new(&b[..]).unwrap());
                (TraceReader::new(&b[..]).unwrap(), session)
            })
            .collect();
        super::parquet::write_parquet(traces, dir.path()).unwrap();
        dir
    };
    let (lost, lost_other) = (
        file(&lost_session(&intact, true)),
        file(&lost_session(&other, true)),
    );
    let dir = tables(&[&lost, &lost_other]);
    let intact_dir = tables(&[&file(&intact)]);
    // Columns: session_id, host, pid, args, wall_clock_utc_ns, monotonic_base_ns, producer,
    // backend, device, session_record, clock.
    let sessions = parquet_rows(dir.path(), "sessions");
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let row = &sessions[0];
    assert_eq!(row[1..5], [None, None, None, None], "{row:?}");
    assert_eq!(row[5], Some((base + 7).to_string()));
    assert_eq!(row[6..9], [None, None, None], "{row:?}");
    assert_eq!(
        (row[9].as_deref(), row[10].as_deref()),
        (Some("lost"), Some("CLOCK_MONOTONIC"))
    );
    assert_ne!(sessions[0][0], sessions[1][0], "two lost sessions, one id");
    let intact_sessions = parquet_rows(intact_dir.path(), "sessions");
    assert_eq!(
        (
            intact_sessions[0][1].as_deref(),
            intact_sessions[0][9].as_deref()
        ),
        (Some("node-a"), Some("recorded"))
    );
    // Every row of every other table joins a `sessions` row.
    let ids: BTreeSet<Option<String>> = sessions.iter().map(|r| r[0].clone()).collect();
    for (table, _) in TABLES.iter().skip(1) {
        for r in parquet_rows(dir.path(), table) {
            assert!(ids.contains(&r[0]), "{table}: {r:?} joins no session");
        }
    }
    // The first trace's region times are the intact trace's.
    let starts = |dir: &std::path::Path, id: &Option<String>| -> Vec<Option<String>> {
        parquet_rows(dir, "regions")
            .into_iter()
            .filter(|r| &r[0] == id)
            .map(|r| r[9].clone())
            .collect()
    };
    let regions = starts(dir.path(), &sessions[0][0]);
    assert!(!regions.is_empty());
    assert_eq!(regions, starts(intact_dir.path(), &intact_sessions[0][0]));
    let events = parquet_rows(dir.path(), "events");
    assert_eq!(
        events
            .iter()
            .filter(|e| e[3].as_deref() == Some("session record lost"))
            .count(),
        2,
        "{events:?}"
    );
}

/// Traces that lost their `SessionStart` and every calibration get a Parquet `session_id`
/// of their own, from what survived of their start (they all had one, so that two such
/// traces exported into one folder, or compared across exports, joined one `sessions`
/// row: a second break-it pass); the same trace exported again keeps its id.
#[cfg(feature = "parquet")]
#[test]
fn lost_sessions_without_a_calibration_get_ids_of_their_own() {
    let a = lost_session(
        &process_pipeline("node-a", 4242, 5_000_000_000_000, 1),
        false,
    );
    // Another recording: its own times.
    let b: Vec<Record> = a
        .iter()
        .cloned()
        .map(|mut r| {
            if let Record::Submit(s) = &mut r {
                s.time_ns += 1;
            }
            r
        })
        .collect();
    assert_ne!(a, b);
    let file = |records: &[Record]| -> Vec<u8> {
        let mut writer = hrx_capture::TraceWriter::new(Vec::new()).unwrap();
        for r in records {
            writer.write(r).unwrap();
        }
        writer.finish().unwrap().0
    };
    let (a, b) = (file(&a), file(&b));
    let ids = |files: &[&Vec<u8>]| -> Vec<Option<String>> {
        let dir = tempfile::tempdir().unwrap();
        let traces = files
            .iter()
            .map(|bytes| {
                let session = read_session(TraceReader::new(&bytes[..]).unwrap());
                assert!(
                    matches!(session, TraceSession::Lost { clock: None, .. }),
                    "{session:?}"
                );
                (TraceReader::new(&bytes[..]).unwrap(), session)
            })
            .collect();
        super::parquet::write_parquet(traces, dir.path()).unwrap();
        let sessions = parquet_rows(dir.path(), "sessions");
        assert!(sessions.iter().all(|r| r[10].as_deref() == Some("session")));
        sessions.into_iter().map(|r| r[0].clone()).collect()
    };
    let one = ids(&[&a, &b, &a]);
    assert_ne!(one[0], one[1], "two lost sessions, one id");
    assert_eq!(one[0], one[2], "one trace, two ids");
    // Another export of the same files: the same ids.
    assert_eq!(ids(&[&b]), [one[1].clone()]);
    assert_eq!(ids(&[&a]), [one[0].clone()]);
}

/// Timings naming a submission whose `Submit` the trace lacks (cut, or lost) are counted,
/// region and operation timings apart, as `info` and `stats` count them (export's one sum
/// read 2 where they read 1: a fresh user's pass).
#[test]
fn timings_of_an_unrecorded_submission_are_counted_by_kind() {
    let records: Vec<Record> = crate::synthetic::with_op_timings(pipeline(PipelineSpec::ops(30)))
        .filter(|r| !matches!(r, Record::Submit(s) if s.submission == SubmissionIndex(4)))
        .collect();
    let region_timings = (records.iter())
        .filter(|r| matches!(r, Record::RegionTiming(t) if t.submission == SubmissionIndex(4)))
        .count() as u64;
    let op_timings = (records.iter())
        .filter(|r| matches!(r, Record::OpTiming(t) if t.timing.submission == SubmissionIndex(4)))
        .count() as u64;
    assert!(region_timings > 0 && op_timings > 0);
    let mut out = Vec::new();
    let clock = ExportClock::absolute(ClockDomain::Monotonic);
    let exported = write_from(Format::Chrome, clock, &mut out, vec![&records[..]], 2)
        .unwrap()
        .remove(0);
    assert_eq!(exported.unplaced_timings, region_timings);
    assert_eq!(exported.unplaced_op_timings, op_timings);
}

/// In Chrome's JSON a flow event binds to the deepest slice enclosing it on its thread: each
/// is inside its region's slice and outside the operation slices nested in it, where they
/// leave room (at the region's middle, the arrows bound to operations: a Perfetto user's
/// pass found 36 of 36 starts on one).
#[test]
fn chrome_flows_bind_to_their_regions_not_to_nested_operations() {
    let spec = PipelineSpec {
        submissions: 12,
        ..PipelineSpec::ops(40)
    };
    let records: Vec<Record> = crate::synthetic::with_op_timings(pipeline(spec)).collect();
    let (out, counts) = export(&records, Format::Chrome);
    assert!(
        counts.operation_slices > 0 && counts.flows > 0,
        "{counts:?}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    // (pid, tid) -> the X slices there: (start, end, is an operation), in ns.
    type Spans = Vec<(i64, i64, bool)>;
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    let mut slices: HashMap<(u64, u64), Spans> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        // Regions and operations name their runtime beside their submission, whose
        // numbers restart per runtime.
        if e["cat"] != "host" && e["args"]["submission"].is_u64() {
            assert_eq!(e["args"]["runtime"], 1, "{e}");
        }
        let place = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let start = ns(&e["ts"]);
        let end = start + ns(&e["dur"]);
        slices
            .entry(place)
            .or_default()
            .push((start, end, e["cat"] == "operation"));
    }
    let mut bound = 0;
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let place = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let at = ns(&e["ts"]);
        let enclosing: Vec<&(i64, i64, bool)> = slices[&place]
            .iter()
            .filter(|(s, end, _)| *s <= at && at <= *end)
            .collect();
        assert!(
            enclosing.iter().any(|(_, _, op)| !op),
            "{e}: no region encloses it"
        );
        assert!(
            !enclosing.iter().any(|(_, _, op)| *op),
            "{e}: an operation encloses it: {enclosing:?}"
        );
        bound += 1;
    }
    assert_eq!(bound, 2 * counts.flows as usize);
}
