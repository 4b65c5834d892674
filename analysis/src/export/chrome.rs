//! Chrome trace-event JSON (the "Trace Event Format" document; Perfetto's UI and
//! chrome://tracing open it): `{"traceEvents": [...], "displayTimeUnit": "ns"}`.
//!
//! - Each trace is its process: `pid` is the traced process's id, with `process_name` (its
//!   program's file name) and `process_labels` (`host=NAME`, then the command line)
//!   metadata events. Each track of each runtime is a thread: `tid` is `0x40000000 |
//!   runtime << 4 | slot + 1` (outside real thread ids), named `runtime R: GPU Compute`
//!   (`thread_name`), ordered by runtime then queue (`thread_sort_index`).
//! - A slice is a complete event (`ph: "X"`, `ts` and `dur` in µs written exactly to the
//!   ns, `cat`, `name`, `args`); `ts` counts from `otherData.ts_base_ns` (ns, a string:
//!   a JSON number past 2^53 loses digits) on the export's clock ([`super::ExportClock`]:
//!   `CLOCK_MONOTONIC`, or the wall clock for traces of several hosts), which
//!   `otherData.clock` names at the end of the document (where a trace's session record was
//!   lost, `otherData.session_record` says what is unknown, and `clock` says where its
//!   times are ns from the session's start, no calibration having recovered them). Absolute µs with ns decimals
//!   would pass what a double holds exactly (viewers parse `ts` as one): on the wall clock
//!   always, on `CLOCK_MONOTONIC` after 104 days of uptime, and slices would cross.
//! - A flow is a pair of flow events with the same `id` (`cat: "hazard"`, `name: "hazard"`):
//!   `ph: "s"` in the producer's slice and `ph: "f"` with `bp: "e"` in the consumer's, so
//!   each binds to its enclosing slice: outside the region's nested operations where they
//!   leave a gap (a viewer binds to the deepest enclosing slice), else at its middle.
//! - An instant event is `ph: "i"` with `s: "t"` (thread scope) on the events track.
//! - A host thread (format 1.14) is itself: its OS thread id as `tid` (named by
//!   `thread_name`, after the runtimes' tracks by `thread_sort_index`), its spans and ranges
//!   complete events, its markers instant events there. A counter sample is a counter event
//!   (`ph: "C"`, `args: {NAME: value}`) of the process.
//!
//! Events are written as they come (the format requires neither time order nor metadata
//! first: a track's metadata events come just before its first event), each one straight
//! into the output: no JSON value is built per event.

use super::batch::{Batch, Batches, Item, Parts, SliceRec};
use super::{
    Arg, CounterPoint, CounterTrack, Instant, Process, RegionSlice, Sink, Slice, ThreadTrack,
    Track, instant_category,
};
use std::io::{self, Write};

/// A region's constant part as JSON, made once (per label) and shared by its slices'
/// batches.
#[derive(Debug, Default)]
pub(super) struct RegionConst {
    /// The label as a JSON string.
    name: Vec<u8>,
    /// `"kind":..,"operations":..,"uses":[..]`.
    run_a: Vec<u8>,
    /// The graph's hazards: JSON strings joined by commas.
    hazards: Vec<u8>,
    /// `"internal_edges":..,"copy_bytes":..` where not zero (empty if both are).
    run_b: Vec<u8>,
}

/// Writes events into one JSON document: rare ones as text into the batch, region slices
/// as numbers for the workers ([`encode_batch`]).
pub(super) struct Writer {
    batches: Batches<RegionConst>,
    first: bool,
    clock: super::ExportClock,
    /// Each region's constant part.
    parts: Parts<RegionConst>,
    /// A trace's session was lost: what its labels say, and whether its times were put on
    /// `CLOCK_MONOTONIC` (`otherData` says it too).
    lost: Option<(String, bool)>,
}

impl Writer {
    /// A writer into `batches`; nothing is written until the tracks are declared.
    pub(super) fn new(batches: Batches<RegionConst>, clock: super::ExportClock) -> Writer {
        Writer {
            batches,
            first: true,
            clock,
            parts: Parts::default(),
            lost: None,
        }
    }

    /// `ns` on the export's clock as `ts` counts it: from the clock's base, wrapping (a
    /// time before the base is negative as an `i64`, and differences stay exact).
    fn rel(&self, ns: u64) -> u64 {
        ns.wrapping_sub(self.clock.base_ns)
    }

    /// The index in the batch of `region`'s constant part, made again when its label
    /// changed.
    fn constant(&mut self, s: &RegionSlice<'_>) -> io::Result<u32> {
        let at = s.region.0 as usize;
        if self.parts.stale(at, s.label) {
            self.parts.set(at, s.label, encode_constant(s)?);
        }
        self.parts.index(at, &mut self.batches)
    }

    /// Writes one event as text into the batch: `write` gets the separator and `{` done.
    fn raw(&mut self, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        let out = &mut self.batches.batch.raw;
        let start = out.len();
        if std::mem::take(&mut self.first) {
            out.extend_from_slice(b"{\"traceEvents\":[\n{");
        } else {
            out.extend_from_slice(b",\n{");
        }
        write(out)?;
        self.batches.batch.end_raw(start);
        self.batches.maybe_hand_off()
    }

    /// A thread's `thread_name` and `thread_sort_index` metadata events (a runtime's queue
    /// track or a host thread).
    fn thread_metadata(&mut self, at: super::Place, name: &str, rank: u64) -> io::Result<()> {
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"M\",\"name\":\"thread_name\",");
            place(out, at.pid, at.tid)?;
            out.extend_from_slice(b",\"args\":{\"name\":");
            string(out, name)?;
            out.extend_from_slice(b"}}");
            Ok(())
        })?;
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"M\",\"name\":\"thread_sort_index\",");
            place(out, at.pid, at.tid)?;
            write!(out, ",\"args\":{{\"sort_index\":{rank}}}}}")
        })
    }
}

fn encode_constant(s: &RegionSlice<'_>) -> io::Result<RegionConst> {
    let a = s.args;
    let mut part = RegionConst::default();
    string(&mut part.name, s.label)?;
    let kind = Arg::Str(super::kind_name(a.kind).into());
    // The runtime too: submission numbers restart per runtime.
    member(&mut part.run_a, "runtime", &Arg::Uint(s.runtime.0.into()))?;
    part.run_a.push(b',');
    member(&mut part.run_a, "kind", &kind)?;
    part.run_a.push(b',');
    member(&mut part.run_a, "operations", &Arg::Uint(a.operations))?;
    part.run_a.push(b',');
    member(&mut part.run_a, "uses", &Arg::Texts(&a.uses, &[]))?;
    for (i, h) in a.hazards.iter().enumerate() {
        if i > 0 {
            part.hazards.push(b',');
        }
        string(&mut part.hazards, h)?;
    }
    for (key, v) in [
        ("internal_edges", a.internal_edges),
        ("copy_bytes", a.copy_bytes),
    ] {
        if v > 0 {
            if !part.run_b.is_empty() {
                part.run_b.push(b',');
            }
            member(&mut part.run_b, key, &Arg::Uint(v))?;
        }
    }
    Ok(part)
}

fn place(out: &mut Vec<u8>, pid: u32, tid: u32) -> io::Result<()> {
    out.extend_from_slice(b"\"pid\":");
    uint(out, pid.into())?;
    out.extend_from_slice(b",\"tid\":");
    uint(out, tid.into())
}

/// Encodes a batch (on a worker): its raw events as they are, each region slice as its
/// complete event and flow events.
pub(super) fn encode_batch(batch: &Batch<RegionConst>, out: &mut Vec<u8>) {
    for item in &batch.items {
        match item {
            Item::Raw(range) => out.extend_from_slice(&batch.raw[range.clone()]),
            // Writing into a `Vec` does not fail.
            Item::Slice(s) => region_slice(out, batch, s).unwrap_or_default(),
        }
    }
}

/// A region slice, as [`Writer::slice`] writes it.
fn region_slice(out: &mut Vec<u8>, batch: &Batch<RegionConst>, s: &SliceRec) -> io::Result<()> {
    let c = &batch.constants[s.constant as usize];
    let (pid, tid) = (s.pid, s.tid);
    out.extend_from_slice(b",\n{\"ph\":\"X\",\"name\":");
    out.extend_from_slice(&c.name);
    out.extend_from_slice(b",\"cat\":\"region\",");
    place(out, pid, tid)?;
    out.extend_from_slice(b",\"ts\":");
    ts(out, s.start_ns)?;
    out.extend_from_slice(b",\"dur\":");
    us(out, s.end_ns.wrapping_sub(s.start_ns))?;
    out.extend_from_slice(b",\"args\":{\"submission\":");
    uint(out, s.submission)?;
    out.extend_from_slice(b",\"region\":");
    uint(out, s.region.into())?;
    out.extend_from_slice(b",\"slot\":");
    uint(out, s.slot.into())?;
    out.push(b',');
    out.extend_from_slice(&c.run_a);
    out.extend_from_slice(b",\"hazards\":[");
    let mut first = true;
    if s.graph_hazards && !c.hazards.is_empty() {
        out.extend_from_slice(&c.hazards);
        first = false;
    }
    for w in &batch.waits[s.waits.0 as usize..s.waits.1 as usize] {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        // Plain ASCII: nothing to escape.
        out.push(b'"');
        super::wait_text(out, w);
        out.push(b'"');
    }
    out.push(b']');
    if !c.run_b.is_empty() {
        out.push(b',');
        out.extend_from_slice(&c.run_b);
    }
    if let Some(d) = s.device_ns {
        out.extend_from_slice(b",\"device_ns\":");
        uint(out, d)?;
    }
    if s.failed {
        out.extend_from_slice(b",\"status\":\"failed\"");
    }
    out.extend_from_slice(b"}}");
    let flows_out = &batch.flows[s.flows_out.0 as usize..s.flows_out.1 as usize];
    let flows_in = &batch.flows[s.flows_in.0 as usize..s.flows_in.1 as usize];
    flow_events(out, pid, tid, s.bind_ns, flows_out, flows_in)
}

/// The flow events of a slice (`middle`: its middle, where they bind, as [`Writer::rel`]
/// gives it).
fn flow_events(
    out: &mut Vec<u8>,
    pid: u32,
    tid: u32,
    middle: u64,
    flows_out: &[u64],
    flows_in: &[u64],
) -> io::Result<()> {
    for (phase, ids) in [("s", flows_out), ("f", flows_in)] {
        for id in ids {
            out.extend_from_slice(match phase {
                "s" => b",\n{\"ph\":\"s\",\"id\":",
                _ => b",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":",
            });
            uint(out, *id)?;
            out.extend_from_slice(b",\"name\":\"hazard\",\"cat\":\"hazard\",");
            place(out, pid, tid)?;
            out.extend_from_slice(b",\"ts\":");
            ts(out, middle)?;
            out.push(b'}');
        }
    }
    Ok(())
}

/// Writes `s` as a JSON string.
pub(super) fn string(out: &mut impl Write, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut plain = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..0x20 => b"",
            _ => continue,
        };
        out.write_all(&bytes[plain..i])?;
        if escape.is_empty() {
            write!(out, "\\u{b:04x}")?;
        } else {
            out.write_all(escape)?;
        }
        plain = i + 1;
    }
    out.write_all(&bytes[plain..])?;
    out.write_all(b"\"")
}

/// "00" to "99": two digits per division.
const PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// A number in decimal, without `fmt` (several per event: `write!` was a large part of a
/// big export's time), two digits at a time (a flow id has 16: `uint` was 12% of a Chrome
/// export's instructions one digit at a time).
pub(super) fn uint(out: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while v >= 100 {
        let pair = 2 * (v % 100) as usize;
        v /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = 2 * v as usize;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + v as u8;
    }
    out.write_all(&digits[at..])
}

/// Microseconds written exactly from ns (`1234.5` for 1,234,500 ns), a JSON number.
pub(super) fn us(out: &mut impl Write, ns: u64) -> io::Result<()> {
    let (whole, frac) = (ns / 1000, ns % 1000);
    uint(out, whole)?;
    if frac == 0 {
        return Ok(());
    }
    // Three decimals, trailing zeros dropped.
    let decimals = [
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ];
    let len = match frac {
        f if f % 100 == 0 => 2,
        f if f % 10 == 0 => 3,
        _ => 4,
    };
    out.write_all(&decimals[..len])
}

/// A `ts` from [`Writer::rel`]'s wrapped difference: µs as [`us`] writes them, negative
/// where the time is before the base.
fn ts(out: &mut impl Write, rel: u64) -> io::Result<()> {
    match rel as i64 {
        v if v < 0 => {
            out.write_all(b"-")?;
            us(out, v.unsigned_abs())
        }
        _ => us(out, rel),
    }
}

/// `"key":value`; `key` is one of this module's argument names (plain ASCII, nothing to
/// escape).
fn member(out: &mut impl Write, key: &str, arg: &Arg<'_>) -> io::Result<()> {
    debug_assert!(
        key.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    );
    out.write_all(b"\"")?;
    out.write_all(key.as_bytes())?;
    out.write_all(b"\":")?;
    match arg {
        Arg::Uint(v) => uint(out, *v),
        Arg::Str(s) => string(out, s),
        list => {
            out.write_all(b"[")?;
            for (j, item) in list.items().into_iter().flatten().enumerate() {
                if j > 0 {
                    out.write_all(b",")?;
                }
                string(out, item)?;
            }
            out.write_all(b"]")
        }
    }
}

/// The `args` object.
fn args(out: &mut impl Write, args: &[(&'static str, Arg<'_>)]) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, (key, arg)) in args.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        member(out, key, arg)?;
    }
    out.write_all(b"}")
}

impl Sink for Writer {
    fn process(&mut self, p: &Process<'_>) -> io::Result<()> {
        let pid = p.origin.pid;
        if let Some(note) = p.origin.lost_note() {
            self.lost = Some((note, p.origin.recovered));
        }
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"M\",\"name\":\"process_name\",");
            place(out, pid, 0)?;
            out.extend_from_slice(b",\"args\":{\"name\":");
            string(out, &p.name)?;
            out.extend_from_slice(b"}}");
            Ok(())
        })?;
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"M\",\"name\":\"process_labels\",");
            place(out, pid, 0)?;
            out.extend_from_slice(b",\"args\":{\"labels\":");
            let mut labels = p.origin.labels().join(", ");
            if !p.origin.args.is_empty() {
                labels.push_str(", ");
                labels.push_str(&p.origin.args.join(" "));
            }
            string(out, &labels)?;
            out.extend_from_slice(b"}}");
            Ok(())
        })
    }

    fn track(&mut self, track: &Track, _new_runtime: bool) -> io::Result<()> {
        let name = match track.process_level {
            true => track.name.to_owned(),
            false => format!("runtime {}: {}", track.runtime, track.name),
        };
        let rank = u64::from(track.runtime.0) * super::SLOTS as u64 + track.slot as u64;
        self.thread_metadata(track.place, &name, rank)
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let (pid, tid) = (slice.place.pid, slice.place.tid);
        let (start, middle) = (
            self.rel(slice.start_ns),
            self.rel(slice.start_ns + (slice.end_ns - slice.start_ns) / 2),
        );
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"X\",\"name\":");
            string(out, slice.name)?;
            out.extend_from_slice(b",\"cat\":");
            string(out, slice.category)?;
            out.push(b',');
            place(out, pid, tid)?;
            out.extend_from_slice(b",\"ts\":");
            ts(out, start)?;
            out.extend_from_slice(b",\"dur\":");
            us(out, slice.end_ns - slice.start_ns)?;
            out.extend_from_slice(b",\"args\":");
            args(out, &slice.args)?;
            out.push(b'}');
            flow_events(out, pid, tid, middle, slice.flows_out, slice.flows_in)
        })
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
        let (start_ns, end_ns) = (self.rel(s.start_ns), self.rel(s.end_ns));
        let bind_ns = self.rel(s.bind_ns);
        let batch = &mut self.batches.batch;
        batch.slice(SliceRec {
            start_ns,
            end_ns,
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
            bind_ns,
        });
        self.batches.maybe_hand_off()
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        let at = self.rel(instant.time_ns);
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"i\",\"s\":\"t\",\"name\":");
            string(out, instant.name)?;
            out.extend_from_slice(b",\"cat\":");
            string(out, instant_category(instant.slot))?;
            out.push(b',');
            place(out, instant.place.pid, instant.place.tid)?;
            out.extend_from_slice(b",\"ts\":");
            ts(out, at)?;
            out.extend_from_slice(b",\"args\":");
            args(out, &instant.args)?;
            out.push(b'}');
            Ok(())
        })
    }

    fn thread(&mut self, thread: &ThreadTrack<'_>) -> io::Result<()> {
        // After the runtimes' tracks, in the order of the threads' first records.
        let rank = (1u64 << 32) + u64::from(thread.thread);
        self.thread_metadata(thread.place, thread.name, rank)
    }

    fn counter_track(&mut self, _counter: &CounterTrack<'_>) -> io::Result<()> {
        // A counter event names its counter: nothing to declare.
        Ok(())
    }

    fn counter(&mut self, sample: &CounterPoint<'_>) -> io::Result<()> {
        let at = self.rel(sample.time_ns);
        self.raw(|out| {
            out.extend_from_slice(b"\"ph\":\"C\",\"name\":");
            string(out, sample.name)?;
            out.extend_from_slice(b",\"cat\":\"counter\",");
            place(out, sample.place.pid, 0)?;
            out.extend_from_slice(b",\"ts\":");
            ts(out, at)?;
            out.extend_from_slice(b",\"args\":{");
            string(out, sample.name)?;
            // JSON has no NaN or infinity: such a sample is null.
            match sample.value {
                v if v.is_finite() => write!(out, ":{v}}}}}"),
                _ => out.write_all(b":null}}"),
            }
        })
    }

    fn finish(&mut self) -> io::Result<()> {
        let out = &mut self.batches.batch.raw;
        let start = out.len();
        if std::mem::take(&mut self.first) {
            out.extend_from_slice(b"{\"traceEvents\":[\n");
        }
        out.extend_from_slice(b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":");
        let clock = match self.lost {
            Some((_, false)) => "ns from the session's start (its session record was lost)",
            _ => self.clock.domain.name(),
        };
        string(out, clock)?;
        out.extend_from_slice(b",\"ts_base_ns\":\"");
        uint(out, self.clock.base_ns)?;
        out.extend_from_slice(b"\"");
        if let Some((note, _)) = &self.lost {
            out.extend_from_slice(b",\"session_record\":");
            string(out, note)?;
        }
        out.extend_from_slice(b"}}\n");
        self.batches.batch.end_raw(start);
        self.batches.finish()
    }
}
