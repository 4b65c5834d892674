//! Traces as Parquet tables for SQL at scale (`hrx-trace export --format parquet -o DIR`):
//! DuckDB, Spark or Trino query a directory of such exports from many processes and hosts
//! as one set of tables.
//!
//! # Tables
//!
//! One file per table, `DIR/NAME.parquet`, one row per record, every trace given to one
//! export in the same files. Every table starts with `session_id` (INT64: the trace's
//! [`Origin::key`], an xxh3 of host, pid and session start: unique across a fleet), and the
//! ids join as the trace's records do: `runtime` with `buffer`, `kernel`, `graph` (+ `node`),
//! `prepared` (+ `region`) or `submission` (+ `region`). Times are absolute
//! `CLOCK_MONOTONIC` ns of the recording host (`*_ns`, INT64), as the Perfetto export
//! writes them; `sessions` has the wall clock at the session's monotonic base, to put them
//! on UTC. Every `session_id` of the other tables has its `sessions` row, so that a join
//! on it drops no trace's rows: a trace whose `SessionStart` was lost has one with what it
//! lost null (its `session_id` then an xxh3 of its first calibration read and of its first
//! records read, their contents and offsets, so that two such traces keep apart and the same
//! one exported again keeps its id: [`Origin::lost`]; its times put on `CLOCK_MONOTONIC`
//! from the calibration) and a `session record lost` row in `events`. Unsigned 64-bit
//! values (ids, byte counts, addresses) are stored as INT64 (two's
//! complement past 2^63, which none reaches in practice).
//!
//! | table | one row per | columns beside `session_id` |
//! | --- | --- | --- |
//! | `sessions` | `SessionStart`, or a trace whose `SessionStart` was lost (its first block damaged) | host, pid, args (space-joined), wall_clock_utc_ns, monotonic_base_ns, producer, backend, device (each null where the session record was lost; monotonic_base_ns there as a calibration recovered it, null without one), session_record (`recorded` or `lost`), clock (`CLOCK_MONOTONIC`, or `session`: ns from the session's start, where a lost session's times could not be recovered) |
//! | `buffers` | `BufferCreated` | runtime, buffer, len_bytes, placement, device_address, time_ns |
//! | `kernels` | `KernelLoaded` | runtime, kernel, entry, engine, grid_x/y/z, block_x/y/z, bindings, constants_bytes |
//! | `graphs` | `Prepared` | runtime, graph, prepared, slots, regions, time_ns |
//! | `operations` | `GraphOp` | runtime, graph, node, name (as `view` names it), lane, uses |
//! | `regions` | region timing | runtime, submission, prepared, region, label, kind, queue, category (`kernel`, `copy`, `host`: `stats`' grouping), start_ns, end_ns, duration_ns, device_ns (null where not recorded) |
//! | `submissions` | `Submit` | runtime, submission, prepared, slot, producers, time_ns |
//! | `waits` | `CrossWait` | runtime, submission, region, on_submission, on_region, hazard, buffer, start, end |
//! | `events` | event (as the timeline's `Events` and `Recorder` tracks), and what the trace's end shows: a region still running there (`running at end`, or `running now` in a trace a recorder still writes, at its start, `trace_end_ns` in its detail: the region a crash or a hang was in, which has no `regions` row), a region whose timing a lossy recording lost (`timing lost (records dropped)`), the signal that ended the process (`fatal signal`, runtime 0), a runtime's host-load sample at or past the host's CPUs (`host loaded`, runtime 0: host-side times include waits for a CPU) | runtime, time_ns, name, track (`events` or `recorder`), submission, region (null where none; a poison's are the failed region's), detail |
//! | `threads` | `ThreadName` (format 1.14) | thread (its index in the session), os_tid (0 where unknown), name |
//! | `host_spans` | `HostSpan` | thread, kind (`submit`, `wait`, `host callback`, `capture fence`), runtime, submission, region (a callback's or a fenced region's; null otherwise), start_ns, end_ns, duration_ns |
//! | `annotations` | `AnnotationRange`, `AnnotationMarker` | thread, name, kind (`range` or `marker`), start_ns, end_ns (a marker's: its time), duration_ns, capture_wait_ns (the thread's waits on the recorder and at capture fences inside the range, which `stats` leaves out of its time; a range that began past 4,096 earlier waits of its thread keeps those it cannot tell, as in `stats`; a marker's 0) |
//! | `counters` | `CounterSample` | thread, name, time_ns, value (DOUBLE) |
//! | `op_timings` | `OpTiming` | runtime, submission, prepared, region, graph, node, name (as `operations` names it), kind (`kernel`, `fill`, `copy`, `scoped`, `host`; `unknown` for an operation never recorded), start_ns, end_ns (host clock), duration_ns (device span where recorded, else host: what `stats` counts), device_ns (null where not recorded) |
//!
//! An operation timing joins its region's run in `regions` on (`session_id`, `runtime`,
//! `submission`, `region`) and its operation in `operations` on (`session_id`, `runtime`,
//! `graph`, `node`). A trace that times whole regions only has no `op_timings` rows.
//! `stats`' per-kernel figures from operation times: `SELECT name, count(*),
//! sum(duration_ns) FROM op_timings o WHERE kind = 'kernel' GROUP BY name`, less the runs
//! `events` lists as `failed` or `cancelled`, as for regions.
//!
//! The host threads' tables join `threads` on (`session_id`, `thread`); `host_spans` joins
//! `submissions` on (`session_id`, `runtime`, `submission`). A range's time per name, as
//! `stats` gives it (the recorder's waits left out): `SELECT name, count(*),
//! sum(duration_ns - capture_wait_ns) FROM annotations WHERE kind = 'range' GROUP BY name`.
//!
//! `stats`' per-kernel figures are `SELECT label, count(*), sum(duration_ns), avg(duration_ns)
//! FROM regions WHERE category = 'kernel' GROUP BY label`, less the runs `events` lists as
//! `failed` or `cancelled` (the same `runtime`, `submission`, `region`).
//!
//! # Streaming
//!
//! The export is one pass of [`crate::scan`] as the timeline's: rows are appended to
//! per-column buffers and written as a row group every [`ROW_GROUP`] rows of a table, so
//! what is held is at most that many rows per table (snappy-compressed pages, statistics
//! per column chunk), whatever the trace's length.

use super::origin::{ClockDomain, Origin, TraceSession};
use super::{Arg, ExportCounts, ExportError, Exported, instant};
use crate::index::{Index, is_copy_region, label_region, queue_name};
use crate::scan::{JoinedSpan, RunningRegion, Visitor, scan_reader_threaded};
use crate::stats::CaptureWaits;
use hrx_capture::TraceReader;
use hrx_capture::schema::{NodeIndex, Record, RegionKind};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows of a table held before they are written as a row group.
pub const ROW_GROUP: usize = 1 << 16;

/// The tables, in the order they are written; each one's columns after `session_id`.
pub const TABLES: [(&str, &[Column]); 14] = [
    (
        "sessions",
        &[
            os("host"),
            oi("pid"),
            os("args"),
            oi("wall_clock_utc_ns"),
            oi("monotonic_base_ns"),
            os("producer"),
            os("backend"),
            os("device"),
            s("session_record"),
            s("clock"),
        ],
    ),
    (
        "buffers",
        &[
            i("runtime"),
            i("buffer"),
            i("len_bytes"),
            s("placement"),
            i("device_address"),
            i("time_ns"),
        ],
    ),
    (
        "kernels",
        &[
            i("runtime"),
            i("kernel"),
            s("entry"),
            s("engine"),
            i("grid_x"),
            i("grid_y"),
            i("grid_z"),
            i("block_x"),
            i("block_y"),
            i("block_z"),
            i("bindings"),
            i("constants_bytes"),
        ],
    ),
    (
        "graphs",
        &[
            i("runtime"),
            i("graph"),
            i("prepared"),
            i("slots"),
            i("regions"),
            i("time_ns"),
        ],
    ),
    (
        "operations",
        &[
            i("runtime"),
            i("graph"),
            i("node"),
            s("name"),
            s("lane"),
            i("uses"),
        ],
    ),
    (
        "regions",
        &[
            i("runtime"),
            i("submission"),
            i("prepared"),
            i("region"),
            s("label"),
            s("kind"),
            s("queue"),
            s("category"),
            i("start_ns"),
            i("end_ns"),
            i("duration_ns"),
            oi("device_ns"),
        ],
    ),
    (
        "submissions",
        &[
            i("runtime"),
            i("submission"),
            i("prepared"),
            i("slot"),
            i("producers"),
            i("time_ns"),
        ],
    ),
    (
        "waits",
        &[
            i("runtime"),
            i("submission"),
            i("region"),
            i("on_submission"),
            i("on_region"),
            s("hazard"),
            i("buffer"),
            i("start"),
            i("end"),
        ],
    ),
    (
        "events",
        &[
            i("runtime"),
            i("time_ns"),
            s("name"),
            s("track"),
            oi("submission"),
            oi("region"),
            s("detail"),
        ],
    ),
    ("threads", &[i("thread"), i("os_tid"), s("name")]),
    (
        "host_spans",
        &[
            i("thread"),
            s("kind"),
            i("runtime"),
            i("submission"),
            oi("region"),
            i("start_ns"),
            i("end_ns"),
            i("duration_ns"),
        ],
    ),
    (
        "annotations",
        &[
            i("thread"),
            s("name"),
            s("kind"),
            i("start_ns"),
            i("end_ns"),
            i("duration_ns"),
            i("capture_wait_ns"),
        ],
    ),
    (
        "counters",
        &[i("thread"), s("name"), i("time_ns"), d("value")],
    ),
    (
        "op_timings",
        &[
            i("runtime"),
            i("submission"),
            i("prepared"),
            i("region"),
            i("graph"),
            i("node"),
            s("name"),
            s("kind"),
            i("start_ns"),
            i("end_ns"),
            i("duration_ns"),
            oi("device_ns"),
        ],
    ),
];

/// A column: its name and type.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub kind: ColumnKind,
}

/// A column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// `REQUIRED INT64`.
    Int,
    /// `OPTIONAL INT64`.
    OptionalInt,
    /// `REQUIRED BYTE_ARRAY (STRING)`.
    Text,
    /// `OPTIONAL BYTE_ARRAY (STRING)`.
    OptionalText,
    /// `REQUIRED DOUBLE`.
    Double,
}

const fn i(name: &'static str) -> Column {
    Column {
        name,
        kind: ColumnKind::Int,
    }
}

const fn oi(name: &'static str) -> Column {
    Column {
        name,
        kind: ColumnKind::OptionalInt,
    }
}

const fn d(name: &'static str) -> Column {
    Column {
        name,
        kind: ColumnKind::Double,
    }
}

const fn os(name: &'static str) -> Column {
    Column {
        name,
        kind: ColumnKind::OptionalText,
    }
}

const fn s(name: &'static str) -> Column {
    Column {
        name,
        kind: ColumnKind::Text,
    }
}

/// A value of a row, in column order (after `session_id`).
enum Value<'a> {
    Int(u64),
    OptionalInt(Option<u64>),
    Text(&'a str),
    OptionalText(Option<&'a str>),
    Double(f64),
}

/// One column's values not yet written.
enum Buffer {
    Int(Vec<i64>),
    OptionalInt(Vec<i64>, Vec<i16>),
    Text(Vec<ByteArray>),
    OptionalText(Vec<ByteArray>, Vec<i16>),
    Double(Vec<f64>),
}

/// One table's file and its rows not yet written.
struct Table {
    writer: SerializedFileWriter<BufWriter<File>>,
    columns: Vec<Buffer>,
    rows: usize,
}

impl Table {
    fn create(dir: &Path, name: &str, columns: &[Column]) -> Result<Table, ExportError> {
        let mut message = format!("message {name} {{ REQUIRED INT64 session_id;");
        for c in columns {
            message.push_str(match c.kind {
                ColumnKind::Int => " REQUIRED INT64 ",
                ColumnKind::OptionalInt => " OPTIONAL INT64 ",
                ColumnKind::Text => " REQUIRED BYTE_ARRAY ",
                ColumnKind::OptionalText => " OPTIONAL BYTE_ARRAY ",
                ColumnKind::Double => " REQUIRED DOUBLE ",
            });
            message.push_str(c.name);
            if matches!(c.kind, ColumnKind::Text | ColumnKind::OptionalText) {
                message.push_str(" (STRING)");
            }
            message.push(';');
        }
        message.push_str(" }");
        let schema = Arc::new(parse_message_type(&message).map_err(parquet_error)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("hrx-trace {}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        let file = File::create(dir.join(format!("{name}.parquet")))?;
        let writer = SerializedFileWriter::new(BufWriter::new(file), schema, props)
            .map_err(parquet_error)?;
        let mut buffers = vec![Buffer::Int(Vec::new())];
        buffers.extend(columns.iter().map(|c| match c.kind {
            ColumnKind::Int => Buffer::Int(Vec::new()),
            ColumnKind::OptionalInt => Buffer::OptionalInt(Vec::new(), Vec::new()),
            ColumnKind::Text => Buffer::Text(Vec::new()),
            ColumnKind::OptionalText => Buffer::OptionalText(Vec::new(), Vec::new()),
            ColumnKind::Double => Buffer::Double(Vec::new()),
        }));
        Ok(Table {
            writer,
            columns: buffers,
            rows: 0,
        })
    }

    fn row(&mut self, session: u64, values: &[Value<'_>]) -> Result<(), ExportError> {
        debug_assert_eq!(values.len() + 1, self.columns.len());
        if let Buffer::Int(v) = &mut self.columns[0] {
            v.push(session as i64);
        }
        for (buffer, value) in self.columns[1..].iter_mut().zip(values) {
            match (buffer, value) {
                (Buffer::Int(v), Value::Int(x)) => v.push(*x as i64),
                (Buffer::OptionalInt(v, levels), Value::OptionalInt(x)) => {
                    levels.push(i16::from(x.is_some()));
                    v.extend(x.map(|x| x as i64));
                }
                (Buffer::Text(v), Value::Text(t)) => v.push(ByteArray::from(t.as_bytes().to_vec())),
                (Buffer::OptionalText(v, levels), Value::OptionalText(t)) => {
                    levels.push(i16::from(t.is_some()));
                    v.extend(t.map(|t| ByteArray::from(t.as_bytes().to_vec())));
                }
                (Buffer::Double(v), Value::Double(x)) => v.push(*x),
                _ => debug_assert!(false, "a value of another type than its column"),
            }
        }
        self.rows += 1;
        if self.rows >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the rows held as one row group.
    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.writer.next_row_group().map_err(parquet_error)?;
        let mut buffers = self.columns.iter_mut();
        while let Some(mut column) = group.next_column().map_err(parquet_error)? {
            let Some(buffer) = buffers.next() else { break };
            match buffer {
                Buffer::Int(v) => {
                    column.typed::<Int64Type>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::OptionalInt(v, levels) => {
                    column
                        .typed::<Int64Type>()
                        .write_batch(v, Some(levels), None)?;
                    v.clear();
                    levels.clear();
                }
                Buffer::Text(v) => {
                    column.typed::<ByteArrayType>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::OptionalText(v, levels) => {
                    column
                        .typed::<ByteArrayType>()
                        .write_batch(v, Some(levels), None)?;
                    v.clear();
                    levels.clear();
                }
                Buffer::Double(v) => {
                    column.typed::<DoubleType>().write_batch(v, None, None)?;
                    v.clear();
                }
            }
            column.close().map_err(parquet_error)?;
        }
        group.close().map_err(parquet_error)?;
        self.rows = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<(), ExportError> {
        self.flush()?;
        let mut out = self.writer.into_inner().map_err(parquet_error)?;
        io::Write::flush(&mut out)?;
        Ok(())
    }
}

impl From<ParquetError> for ExportError {
    fn from(e: ParquetError) -> ExportError {
        parquet_error(e)
    }
}

fn parquet_error(e: ParquetError) -> ExportError {
    match e {
        ParquetError::External(e) => match e.downcast::<io::Error>() {
            Ok(io) => ExportError::Write(*io),
            Err(e) => ExportError::Write(io::Error::other(e)),
        },
        other => ExportError::Write(io::Error::other(other)),
    }
}

/// The file names [`write_parquet`] writes into its directory.
pub fn table_files() -> impl Iterator<Item = String> {
    TABLES.iter().map(|(name, _)| format!("{name}.parquet"))
}

/// Writes the tables of every trace of `readers` into `dir` (which must exist), one pass
/// per trace, rows in bounded memory (see the module docs). One [`Exported`] per reader;
/// its [`ExportCounts::slices`] counts the `regions` rows, `operation_slices` the
/// `op_timings` rows (not among `slices`) and `instants` and `recorder_instants` the
/// `events` rows.
///
/// # Errors
///
/// [`ExportError::Read`] when a trace cannot be read, [`ExportError::Write`] when a table
/// cannot be written (the file system's error, or the Parquet writer's as text). The
/// caller removes the files written ([`table_files`]).
pub fn write_parquet<R: Read + Send>(
    traces: Vec<(TraceReader<R>, TraceSession)>,
    dir: &Path,
) -> Result<Vec<Exported>, ExportError> {
    let mut tables = Vec::with_capacity(TABLES.len());
    for (name, columns) in TABLES {
        tables.push(Table::create(dir, name, columns)?);
    }
    let mut all = Vec::new();
    for (reader, session) in traces {
        let (clock, survived, format) = match &session {
            TraceSession::Lost {
                clock,
                survived,
                format,
            } => (clock.as_ref(), *survived, *format),
            TraceSession::Recorded(_) => (None, 0, reader.header().version),
        };
        let mut pass = Rows {
            tables: &mut tables,
            origin: Origin::lost(ClockDomain::Monotonic, clock, survived, format),
            last_ns: 0,
            first_ns: None,
            counts: ExportCounts::default(),
            error: None,
            capture_waits: CaptureWaits::default(),
            host_load: None,
        };
        let live = reader.is_being_recorded();
        let summary = scan_reader_threaded(reader, &mut pass)?;
        // A lost session has a row too, its unknowns null: every other table's
        // `session_id` joins `sessions` (the README's query dropped such a trace's rows).
        if pass.origin.lost {
            pass.lost_session();
        }
        // What the trace's end shows, as the other formats do: each region still running
        // (the one a crash or a hang was in) and each whose timing a lossy recording lost.
        pass.at_the_end(&summary.index, &summary.running, &summary.timing_lost, live);
        // A trace not read whole says so in its own tables, not only on stderr at export.
        if let Some(event) = summary.recovery.as_ref().and_then(|r| {
            super::incomplete_instant(
                r,
                live,
                pass.last_ns,
                hrx_capture::schema::RuntimeId::default(),
            )
        }) {
            pass.counts.incomplete_marks += 1;
            pass.event(&event);
        }
        if let Some(error) = pass.error.take() {
            return Err(error);
        }
        all.push(Exported {
            counts: pass.counts,
            warnings: summary.warnings,
            recovery: summary.recovery,
            unplaced_timings: summary.unplaced_timings,
            unplaced_op_timings: summary.unplaced_op_timings,
            ends_before_start: summary.ends_before_start,
            being_recorded: live,
            host_load: pass.host_load,
        });
    }
    for table in tables {
        table.finish()?;
    }
    Ok(all)
}

/// The paths of the tables in `dir`.
pub fn table_paths(dir: &Path) -> Vec<PathBuf> {
    table_files().map(|f| dir.join(f)).collect()
}

/// Table positions in [`TABLES`].
const SESSIONS: usize = 0;
const BUFFERS: usize = 1;
const KERNELS: usize = 2;
const GRAPHS: usize = 3;
const OPERATIONS: usize = 4;
const REGIONS: usize = 5;
const SUBMISSIONS: usize = 6;
const WAITS: usize = 7;
const EVENTS: usize = 8;
const THREADS: usize = 9;
const HOST_SPANS: usize = 10;
const ANNOTATIONS: usize = 11;
const COUNTERS: usize = 12;
const OP_TIMINGS: usize = 13;

/// One trace's pass.
struct Rows<'t> {
    tables: &'t mut [Table],
    origin: Origin,
    /// The latest host time seen (session ns): where a trace read short ends.
    last_ns: u64,
    /// The earliest (session ns): where a lost session's mark goes.
    first_ns: Option<u64>,
    counts: ExportCounts,
    /// The first write error; nothing is written after it.
    error: Option<ExportError>,
    /// The threads' capture waits, each range's taken out of it in `capture_wait_ns`.
    capture_waits: CaptureWaits,
    /// The host-load samples ([`super::Exported::host_load`]).
    host_load: Option<crate::info::HostLoadSamples>,
}

impl Rows<'_> {
    /// The `sessions` row of a trace whose `SessionStart` was lost (what it recorded null,
    /// the base where a calibration recovered it) and its `session record lost` event.
    fn lost_session(&mut self) {
        use Value::{OptionalInt, OptionalText, Text};
        let base = self
            .origin
            .recovered
            .then_some(self.origin.monotonic_base_ns);
        let row = [
            OptionalText(None),
            OptionalInt(None),
            OptionalText(None),
            OptionalInt(None),
            OptionalInt(base),
            OptionalText(None),
            OptionalText(None),
            OptionalText(None),
            Text("lost"),
            Text(if base.is_some() {
                "CLOCK_MONOTONIC"
            } else {
                "session"
            }),
        ];
        self.row(SESSIONS, &row);
        let runtime = hrx_capture::schema::RuntimeId(0);
        if let Some(event) = super::session_lost_instant(&self.origin, self.first_ns, runtime) {
            self.event(&event);
        }
    }

    /// A row of `events` (what the timeline's `Events` and `Recorder` tracks show).
    fn event(&mut self, event: &super::Instant<'_>) {
        self.event_row(event, false);
    }

    /// A row of `events`; `running`: a region still running at the trace's end, which the
    /// other formats draw as a slice and `view` as a span, counted apart
    /// ([`super::ExportCounts::running_rows`]): counted as an event, the Parquet summary said
    /// "1 event (as view lists them)" of a crash where `view` and the other formats said 0
    /// (a break-it pass, session 58).
    fn event_row(&mut self, event: &super::Instant<'_>, running: bool) {
        use Value::{Int, Text};
        let (mut submission, mut region, mut detail) = (None, None, Vec::new());
        for (key, arg) in &event.args {
            match (*key, arg) {
                ("submission", Arg::Uint(v)) => submission = Some(*v),
                ("region", Arg::Uint(v)) => region = Some(*v),
                // A column of its own already.
                ("runtime", Arg::Uint(_)) => {}
                (key, Arg::Uint(v)) => detail.push(format!("{key}={v}")),
                (key, Arg::Str(t)) => detail.push(format!("{key}={t}")),
                (key, list) => {
                    let items: Vec<&str> = list.items().into_iter().flatten().collect();
                    detail.push(format!("{key}=[{}]", items.join(", ")));
                }
            }
        }
        let recorder = event.slot != super::EVENTS_SLOT;
        if running {
            self.counts.running_rows += 1;
        } else {
            self.counts.count_instant(!recorder, event.name);
        }
        let detail = detail.join("; ");
        let row = [
            Int(event.runtime.0.into()),
            Int(self.origin.time(event.time_ns)),
            Text(event.name),
            Text(if recorder { "recorder" } else { "events" }),
            Value::OptionalInt(submission),
            Value::OptionalInt(region),
            Text(&detail),
        ];
        self.row(EVENTS, &row);
    }

    /// An `events` row for each region still running where the trace ends (`running at
    /// end`, at its start, with the trace's end as `trace_end_ns`: its length is not a
    /// duration, so it is no `regions` row) and for each whose timing was lost.
    fn at_the_end(
        &mut self,
        index: &Index,
        running: &[RunningRegion],
        lost: &[RunningRegion],
        live: bool,
    ) {
        let end_ns = self.last_ns;
        for r in running {
            let mut args = super::started_region_args(index, r);
            args.push(("state", Arg::Str(crate::running_state(live).into())));
            args.push((
                "trace_end_ns",
                Arg::Uint(self.origin.time(end_ns.max(r.start_ns))),
            ));
            let event = super::Instant {
                runtime: r.runtime,
                place: super::Place::default(),
                slot: super::EVENTS_SLOT,
                name: crate::running_mark(live),
                time_ns: r.start_ns,
                args,
            };
            self.event_row(&event, true);
        }
        for r in lost {
            self.event(&super::timing_lost_instant(index, r));
            self.counts.timing_lost += 1;
        }
    }

    fn row(&mut self, table: usize, values: &[Value<'_>]) {
        if self.error.is_none()
            && let Err(e) = self.tables[table].row(self.origin.key, values)
        {
            self.error = Some(e);
        }
    }
}

impl Visitor for Rows<'_> {
    fn record(&mut self, index: &Index, record: &Record) {
        if let Some(t) = crate::dump::host_time_ns(record) {
            self.last_ns = self.last_ns.max(t);
            self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
        }
        use Value::{Int, Text};
        let time = |origin: &mut Origin, t: u64| Int(origin.time(t));
        self.capture_waits.record(record);
        match record {
            Record::SessionStart(s) => {
                self.origin = Origin::new(s, ClockDomain::Monotonic);
                let args = s.args.join(" ");
                let row = [
                    Value::OptionalText(Some(&s.host)),
                    Value::OptionalInt(Some(s.pid.into())),
                    Value::OptionalText(Some(&args)),
                    Value::OptionalInt(Some(self.origin.wall_ns)),
                    Value::OptionalInt(Some(s.monotonic_base_ns)),
                    Value::OptionalText(Some(&s.producer)),
                    Value::OptionalText(Some(&s.backend)),
                    Value::OptionalText(Some(&s.device)),
                    Text("recorded"),
                    Text("CLOCK_MONOTONIC"),
                ];
                self.row(SESSIONS, &row);
            }
            Record::HostClock(c) => self.origin.calibrate(c),
            // The session's: on no runtime's (0), as `records lost`.
            Record::FatalSignal(f) => {
                self.event(&super::fatal_instant(f, hrx_capture::schema::RuntimeId(0)));
            }
            Record::BufferCreated(b) => {
                let placement = format!("{:?}", b.placement);
                let row = [
                    Int(b.runtime.0.into()),
                    Int(b.buffer.0),
                    Int(b.len_bytes),
                    Text(&placement),
                    Int(b.device_address),
                    time(&mut self.origin, b.time_ns),
                ];
                self.row(BUFFERS, &row);
            }
            Record::KernelLoaded(k) => {
                let engine = format!("{:?}", k.engine);
                let [gx, gy, gz] = k.grid.map(u64::from);
                let [bx, by, bz] = k.block.map(u64::from);
                let row = [
                    Int(k.runtime.0.into()),
                    Int(k.kernel.0),
                    Text(&k.entry),
                    Text(&engine),
                    Int(gx),
                    Int(gy),
                    Int(gz),
                    Int(bx),
                    Int(by),
                    Int(bz),
                    Int(k.contract.len() as u64),
                    Int(k.constants.len() as u64),
                ];
                self.row(KERNELS, &row);
            }
            Record::Prepared(p) => {
                let row = [
                    Int(p.runtime.0.into()),
                    Int(p.graph.0),
                    Int(p.prepared.0),
                    Int(p.slots.into()),
                    Int(p.regions.len() as u64),
                    time(&mut self.origin, p.time_ns),
                ];
                self.row(GRAPHS, &row);
            }
            Record::GraphOp(op) => {
                let name = index.op_name(op.runtime, &op.op);
                let lane = format!("{:?}", op.lane);
                let row = [
                    Int(op.runtime.0.into()),
                    Int(op.graph.0),
                    Int(op.node.0.into()),
                    Text(&name),
                    Text(&lane),
                    Int(op.uses.len() as u64),
                ];
                self.row(OPERATIONS, &row);
            }
            Record::Submit(s) => {
                let row = [
                    Int(s.runtime.0.into()),
                    Int(s.submission.0),
                    Int(s.prepared.0),
                    Int(s.slot.into()),
                    Int(s.producers.len() as u64),
                    time(&mut self.origin, s.time_ns),
                ];
                self.row(SUBMISSIONS, &row);
            }
            Record::CrossWait(w) => {
                let row = [
                    Int(w.runtime.0.into()),
                    Int(w.submission.0),
                    Int(w.region.0.into()),
                    Int(w.on_submission.0),
                    Int(w.on_region.0.into()),
                    Text(w.kind.abbreviation()),
                    Int(w.buffer.0),
                    Int(w.start),
                    Int(w.end),
                ];
                self.row(WAITS, &row);
            }
            Record::ThreadName(t) => {
                let row = [Int(t.thread.into()), Int(t.os_tid), Text(&t.name)];
                self.row(THREADS, &row);
            }
            Record::HostSpan(h) => {
                let (start, end) = (h.start_ns, h.end_ns.max(h.start_ns));
                let row = [
                    Int(h.thread.into()),
                    Text(h.kind.label()),
                    Int(h.runtime.0.into()),
                    Int(h.submission.0),
                    Value::OptionalInt(h.region.map(|r| r.0.into())),
                    time(&mut self.origin, start),
                    time(&mut self.origin, end),
                    Int(end - start),
                ];
                self.counts.thread_slices += 1;
                self.row(HOST_SPANS, &row);
            }
            Record::AnnotationRange(a) => {
                let (start, end) = (a.start_ns, a.end_ns.max(a.start_ns));
                let name = index.annotation_name(a.name);
                let (waited, _) = self.capture_waits.within(a.thread, (start, end));
                let row = [
                    Int(a.thread.into()),
                    Text(&name),
                    Text("range"),
                    time(&mut self.origin, start),
                    time(&mut self.origin, end),
                    Int(end - start),
                    Int(waited),
                ];
                self.counts.thread_slices += 1;
                self.row(ANNOTATIONS, &row);
            }
            Record::AnnotationMarker(m) => {
                let name = index.annotation_name(m.name);
                let at = self.origin.time(m.time_ns);
                let row = [
                    Int(m.thread.into()),
                    Text(&name),
                    Text("marker"),
                    Int(at),
                    Int(at),
                    Int(0),
                    Int(0),
                ];
                self.counts.markers += 1;
                self.row(ANNOTATIONS, &row);
            }
            Record::CounterSample(c) => {
                let name = index.annotation_name(c.name);
                if name == hrx_capture::schema::HOST_LOAD_COUNTER {
                    self.host_load = Some(crate::info::HostLoadSamples::with(
                        self.host_load,
                        c.value.0,
                    ));
                }
                let row = [
                    Int(c.thread.into()),
                    Text(&name),
                    time(&mut self.origin, c.time_ns),
                    Value::Double(c.value.0),
                ];
                self.counts.counter_samples += 1;
                self.row(COUNTERS, &row);
                if let Some(event) = super::host_loaded_instant(index, c) {
                    self.event(&event);
                }
            }
            other => {
                let Some(event) = instant(other) else { return };
                self.event(&event);
            }
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        use Value::{Int, Text};
        let info = index.region(span.region);
        let ops = index.region_ops(span.region);
        let label = label_region(info.kind, info.queue, &ops);
        let category = if is_copy_region(info.kind, &ops) {
            "copy"
        } else if info.kind == RegionKind::Host {
            "host"
        } else {
            "kernel"
        };
        let prepared = &index.prepared()[info.prepared.0 as usize];
        let start = self.origin.time(span.start_ns);
        let end = self.origin.time(span.end_ns.max(span.start_ns));
        let row = [
            Int(span.runtime.0.into()),
            Int(span.submission.0),
            Int(prepared.id.0),
            Int(info.index.0.into()),
            Text(&label),
            Text(super::kind_name(info.kind)),
            Text(queue_name(info.queue)),
            Text(category),
            Int(start),
            Int(end),
            Int(span.duration_ns()),
            Value::OptionalInt(span.device.map(|d| d.end_ns.saturating_sub(d.start_ns))),
        ];
        self.counts.slices += 1;
        if info.kind == RegionKind::NativeGraph {
            self.counts.native_graph_slices += 1;
        }
        self.row(REGIONS, &row);
    }

    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: NodeIndex) {
        use Value::{Int, Text};
        let info = index.region(span.region);
        let prepared = &index.prepared()[info.prepared.0 as usize];
        // As `stats` counts it (copies by lane), so that a query reproduces its table.
        let (kind, name) = crate::stats::operation_row(index, span.region, node);
        let device_ns = span.device.map(|d| d.end_ns.saturating_sub(d.start_ns));
        let row = [
            Int(span.runtime.0.into()),
            Int(span.submission.0),
            Int(prepared.id.0),
            Int(info.index.0.into()),
            Int(prepared.graph.0),
            Int(node.0.into()),
            Text(&name),
            Text(kind),
            Int(self.origin.time(span.start_ns)),
            Int(self.origin.time(span.end_ns.max(span.start_ns))),
            Int(device_ns.unwrap_or_else(|| span.duration_ns())),
            Value::OptionalInt(device_ns),
        ];
        self.counts.operation_slices += 1;
        self.row(OP_TIMINGS, &row);
    }
}
