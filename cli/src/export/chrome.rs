//! Chrome trace-event JSON (the "Trace Event Format" document; Perfetto's UI and
//! chrome://tracing open it): `{"traceEvents": [...], "displayTimeUnit": "ns"}`.
//!
//! - Each runtime is a process (`pid` = runtime id, `process_name` metadata event); each
//!   track a thread (`tid` 1..5 the queues in timeline order, 6 the events;
//!   `thread_name` and `thread_sort_index` metadata events).
//! - A slice is a complete event (`ph: "X"`, `ts` and `dur` in µs with ns precision,
//!   `cat`, `name`, `args`).
//! - A flow is a pair of flow events with the same `id` (`cat: "hazard"`, `name: "hazard"`):
//!   `ph: "s"` at the middle of the producer's slice and `ph: "f"` with `bp: "e"` at the
//!   middle of the consumer's, so each binds to its enclosing slice.
//! - An instant event is `ph: "i"` with `s: "t"` (thread scope) on the events track.
//!
//! Events are written as they come (the format does not require time order).

use super::{Arg, Instant, Sink, Slice, Track};
use serde_json::{Map, Value, json};
use std::io::{self, Write};

/// Writes events into one JSON document.
pub struct Writer<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Writer<W> {
    /// A writer into `out`; nothing is written until the tracks are declared.
    pub fn new(out: W) -> Writer<W> {
        Writer { out, first: true }
    }

    fn event(&mut self, event: &Value) -> io::Result<()> {
        if self.first {
            self.out.write_all(b"{\"traceEvents\":[\n")?;
            self.first = false;
        } else {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, event).map_err(io::Error::from)
    }
}

/// Microseconds with ns precision, as a JSON number.
fn us(ns: u64) -> Value {
    // Exact for ns up to 2^53 (104 days).
    json!(ns as f64 / 1000.0)
}

fn args(args: &[(&'static str, Arg)]) -> Value {
    let mut map = Map::new();
    for (key, arg) in args {
        let value = match arg {
            Arg::Uint(v) => json!(v),
            Arg::Str(s) => json!(s),
            Arg::List(items) => json!(items),
        };
        map.insert((*key).to_owned(), value);
    }
    Value::Object(map)
}

impl<W: Write> Sink for Writer<W> {
    fn tracks(&mut self, tracks: &[Track]) -> io::Result<()> {
        let mut named = Vec::new();
        for track in tracks {
            let pid = track.runtime.0;
            if !named.contains(&pid) {
                named.push(pid);
                self.event(&json!({
                    "ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": track.process},
                }))?;
            }
            self.event(&json!({
                "ph": "M", "name": "thread_name", "pid": pid, "tid": track.tid(),
                "args": {"name": track.name},
            }))?;
            self.event(&json!({
                "ph": "M", "name": "thread_sort_index", "pid": pid, "tid": track.tid(),
                "args": {"sort_index": track.slot},
            }))?;
        }
        Ok(())
    }

    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()> {
        let pid = slice.runtime.0;
        let tid = slice.slot as u32 + 1;
        self.event(&json!({
            "ph": "X", "name": slice.name, "cat": slice.category, "pid": pid, "tid": tid,
            "ts": us(slice.start_ns), "dur": us(slice.end_ns - slice.start_ns),
            "args": args(&slice.args),
        }))?;
        let middle = us(slice.start_ns + (slice.end_ns - slice.start_ns) / 2);
        for id in &slice.flows_out {
            self.event(&json!({
                "ph": "s", "id": id, "name": "hazard", "cat": "hazard", "pid": pid, "tid": tid,
                "ts": middle,
            }))?;
        }
        for id in &slice.flows_in {
            self.event(&json!({
                "ph": "f", "bp": "e", "id": id, "name": "hazard", "cat": "hazard", "pid": pid,
                "tid": tid, "ts": middle,
            }))?;
        }
        Ok(())
    }

    fn instant(&mut self, instant: &Instant) -> io::Result<()> {
        self.event(&json!({
            "ph": "i", "s": "t", "name": instant.name, "cat": "event",
            "pid": instant.runtime.0, "tid": super::EVENTS_SLOT as u32 + 1,
            "ts": us(instant.time_ns), "args": args(&instant.args),
        }))
    }

    fn finish(mut self) -> io::Result<()> {
        if self.first {
            self.out.write_all(b"{\"traceEvents\":[\n")?;
        }
        self.out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
        self.out.flush()
    }
}
