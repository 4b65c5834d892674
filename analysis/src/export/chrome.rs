//! Chrome trace-event JSON (the "Trace Event Format" document; Perfetto's UI and
//! chrome://tracing open it): `{"traceEvents": [...], "displayTimeUnit": "ns"}`.
//!
//! - Each runtime is a process (`pid` = runtime id, `process_name` metadata event); each
//!   track a thread (`tid` 1..5 the queues in timeline order, 6 the events;
//!   `thread_name` and `thread_sort_index` metadata events).
//! - A slice is a complete event (`ph: "X"`, `ts` and `dur` in µs written exactly to the
//!   ns, `cat`, `name`, `args`).
//! - A flow is a pair of flow events with the same `id` (`cat: "hazard"`, `name: "hazard"`):
//!   `ph: "s"` at the middle of the producer's slice and `ph: "f"` with `bp: "e"` at the
//!   middle of the consumer's, so each binds to its enclosing slice.
//! - An instant event is `ph: "i"` with `s: "t"` (thread scope) on the events track.
//!
//! Events are written as they come (the format requires neither time order nor metadata
//! first: a track's metadata events come just before its first event), each one straight
//! into the output: no JSON value is built per event.

use super::{Arg, EVENTS_SLOT, Instant, Sink, Slice, Track};
use std::io::{self, Write};

/// Writes events into one JSON document.
pub struct Writer<W: Write> {
    out: W,
    first: bool,
    /// Per region (model-wide), its slices' constant arguments written once as JSON
    /// members: one text per run of consecutive constant arguments (see `Slice::constant`).
    constant: Vec<Vec<Vec<u8>>>,
}

impl<W: Write> Writer<W> {
    /// A writer into `out`; nothing is written until the tracks are declared.
    pub fn new(out: W) -> Writer<W> {
        Writer {
            out,
            first: true,
            constant: Vec::new(),
        }
    }

    /// Takes `region`'s constant arguments as JSON out of the cache (the caller puts them
    /// back), writing them on its first slice.
    fn constant_runs(
        &mut self,
        region: usize,
        mask: u16,
        args: &[(&'static str, Arg<'_>)],
    ) -> io::Result<Vec<Vec<u8>>> {
        super::constant_runs(
            &mut self.constant,
            region,
            mask,
            args,
            |run, starts, key, arg| {
                if !starts {
                    run.push(b',');
                }
                member(run, key, arg)
            },
        )
    }

    /// Starts an event: the separator, then `{`.
    fn open(&mut self) -> io::Result<()> {
        if self.first {
            self.out.write_all(b"{\"traceEvents\":[\n{")?;
            self.first = false;
            Ok(())
        } else {
            self.out.write_all(b",\n{")
        }
    }

    fn place(&mut self, pid: u32, tid: u32) -> io::Result<()> {
        self.out.write_all(b"\"pid\":")?;
        uint(&mut self.out, pid.into())?;
        self.out.write_all(b",\"tid\":")?;
        uint(&mut self.out, tid.into())
    }
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

/// The `args` object; `mask` (bit `i` for `args[i]`) marks the constant arguments, written
/// from `runs` (see [`Writer::constant_runs`]) instead.
fn args(
    out: &mut impl Write,
    args: &[(&'static str, Arg<'_>)],
    mask: u16,
    runs: &[Vec<u8>],
) -> io::Result<()> {
    out.write_all(b"{")?;
    let mut runs = runs.iter();
    let mut in_run = false;
    let mut first = true;
    for (i, (key, arg)) in args.iter().enumerate() {
        if mask & (1 << i) != 0 {
            if !in_run && let Some(run) = runs.next() {
                if !first {
                    out.write_all(b",")?;
                }
                out.write_all(run)?;
                first = false;
            }
            in_run = true;
            continue;
        }
        in_run = false;
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        member(out, key, arg)?;
    }
    out.write_all(b"}")
}

impl<W: Write> Sink for Writer<W> {
    fn track(&mut self, track: &Track, new_process: bool) -> io::Result<()> {
        let pid = track.runtime.0;
        if new_process {
            self.open()?;
            self.out
                .write_all(b"\"ph\":\"M\",\"name\":\"process_name\",")?;
            self.place(pid, 0)?;
            self.out.write_all(b",\"args\":{\"name\":")?;
            string(&mut self.out, &track.process)?;
            self.out.write_all(b"}}")?;
        }
        self.open()?;
        self.out
            .write_all(b"\"ph\":\"M\",\"name\":\"thread_name\",")?;
        self.place(pid, track.tid())?;
        self.out.write_all(b",\"args\":{\"name\":")?;
        string(&mut self.out, track.name)?;
        self.out.write_all(b"}}")?;
        self.open()?;
        self.out
            .write_all(b"\"ph\":\"M\",\"name\":\"thread_sort_index\",")?;
        self.place(pid, track.tid())?;
        write!(self.out, ",\"args\":{{\"sort_index\":{}}}}}", track.slot)
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let pid = slice.runtime.0;
        let tid = slice.slot as u32 + 1;
        self.open()?;
        self.out.write_all(b"\"ph\":\"X\",\"name\":")?;
        string(&mut self.out, slice.name)?;
        self.out.write_all(b",\"cat\":")?;
        string(&mut self.out, slice.category)?;
        self.out.write_all(b",")?;
        self.place(pid, tid)?;
        self.out.write_all(b",\"ts\":")?;
        us(&mut self.out, slice.start_ns)?;
        self.out.write_all(b",\"dur\":")?;
        us(&mut self.out, slice.end_ns - slice.start_ns)?;
        self.out.write_all(b",\"args\":")?;
        let (region, mask) = slice.constant.map_or((None, 0), |(r, m)| (Some(r), m));
        let runs = match region {
            Some(region) => self.constant_runs(region.0 as usize, mask, &slice.args)?,
            None => Vec::new(),
        };
        let written = args(&mut self.out, &slice.args, mask, &runs);
        if let Some(region) = region {
            self.constant[region.0 as usize] = runs;
        }
        written?;
        self.out.write_all(b"}")?;
        let middle = slice.start_ns + (slice.end_ns - slice.start_ns) / 2;
        for (phase, ids) in [("s", slice.flows_out), ("f", slice.flows_in)] {
            for id in ids {
                self.open()?;
                self.out.write_all(match phase {
                    "s" => b"\"ph\":\"s\",\"id\":",
                    _ => b"\"ph\":\"f\",\"bp\":\"e\",\"id\":",
                })?;
                uint(&mut self.out, *id)?;
                self.out
                    .write_all(b",\"name\":\"hazard\",\"cat\":\"hazard\",")?;
                self.place(pid, tid)?;
                self.out.write_all(b",\"ts\":")?;
                us(&mut self.out, middle)?;
                self.out.write_all(b"}")?;
            }
        }
        Ok(())
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        self.open()?;
        self.out.write_all(b"\"ph\":\"i\",\"s\":\"t\",\"name\":")?;
        string(&mut self.out, instant.name)?;
        self.out.write_all(if instant.slot == EVENTS_SLOT {
            b",\"cat\":\"event\","
        } else {
            b",\"cat\":\"recorder\","
        })?;
        self.place(instant.runtime.0, instant.slot as u32 + 1)?;
        self.out.write_all(b",\"ts\":")?;
        us(&mut self.out, instant.time_ns)?;
        self.out.write_all(b",\"args\":")?;
        args(&mut self.out, &instant.args, 0, &[])?;
        self.out.write_all(b"}")
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.first {
            self.out.write_all(b"{\"traceEvents\":[\n")?;
            self.first = false;
        }
        self.out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
        self.out.flush()
    }
}
