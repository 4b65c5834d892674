//! A trace as Chrome trace-event JSON ([`Format::Chrome`]) or as a Perfetto protobuf
//! `Trace` ([`Format::Perfetto`]), both of which Perfetto's UI opens (`hrx-trace export`).
//!
//! # What is exported
//!
//! - **Tracks.** Each trace is its recording process (its real `pid`, command line and host,
//!   module `origin`), each runtime a track of it, and each of a runtime's queues on which a
//!   region ran a track under it (`GPU Upload`, `GPU Compute`, `GPU Download`, `NPU`,
//!   `Host`; in Chrome a made-up `tid` above real thread ids, named `runtime R: QUEUE`); an
//!   `Events` track and a `Recorder` track hold the instant events when there are any; the
//!   process's own marks (`host loaded`, `records lost`) are on a `Recorder (process)` track
//!   of the process, under no runtime.
//! - **Slices.** One per region timing (host clock, ns in the trace, µs in the JSON), named
//!   by the region's label as the timeline names it ([`crate::label_region`]), with
//!   arguments: submission, region, slot, kind, the region's buffer ranges (`buf 3 [0..64000)
//!   read-write`), its hazards (`RAW buf 2 [0..192000) on region 0`) and, for a run that
//!   failed, `status: failed` (the cause is the `failed` event's, below; a run whose
//!   submission was written before its outcome arrived, past the settling window, is not
//!   marked).
//! - **Operation slices.** An operation timing (`OpTiming`: a backend that times a native
//!   graph's operations) is a slice nested in its region's: on the same track, written just
//!   after it, on the same host clock and clamped into its span (a viewer nests slices of a
//!   track by time), named by the operation (its kernel's entry, `fill`, or a copy by lane as `stats` names it),
//!   category `operation`, with arguments: submission, region, node (the operation's index
//!   in its graph), clock (`device` where the backend measured the operation on the device
//!   clock, else `host`), duration_ns (on that clock, what `stats` counts), device_ns where
//!   recorded, host_ns, and in a failed run `status`: `failed here` on the operation the
//!   error names (`failed here?` where several of the region's have its name, as `view`
//!   marks them), `region failed` on the others. An operation whose
//!   region has no timing (a damaged trace), or read
//!   after its submission was written, is a slice of its own at its host times
//!   ([`ExportCounts::operation_slices`] counts them all). A trace without operation
//!   timings has undivided region slices; the caller says so
//!   ([`ExportCounts::native_graph_slices`]).
//! - **Flows** (arrows producer → consumer), one per distinct pair of timed regions: a
//!   region dependency of the prepared graph (within one submission) or a cross-submission
//!   wait (a region waiting on a region of an earlier submission). Dependencies between
//!   operations inside one native graph have no timings of their own and are listed in the
//!   slice's arguments only.
//! - **Instant events** on the `Events` track: failed and cancelled regions, quarantine,
//!   poison, unhealthy copy streams, injected faults and refused submits, with the
//!   recorded cause: the events `view` lists, and [`ExportCounts::instants`] counts them
//!   alike. The recorder's own marks are on a `Recorder` track (those of no runtime on the
//!   process's `Recorder (process)` track)
//!   ([`ExportCounts::recorder_instants`]): output digests, capture fences, its waits, lost
//!   records, a trim or capture range (`trace range`), each of the runtimes' host-load
//!   samples at or past the host's CPUs (`host loaded`: host-side times include waits for a
//!   CPU, said in words beside the counter that draws it), and the signal that ended the
//!   process (`fatal signal: SIGSEGV`, from a [`FatalSignal`] record, on the first
//!   runtime's). Perfetto users read an `Events` track
//!   as what went wrong; a digest per output there buried the one failure among hundreds
//!   of marks (and `export` counted hundreds of events where `view` showed none).
//! - **Host threads** (format 1.14). Each recording thread with a `HostSpan`, an
//!   annotation range or a marker is a thread of the trace's process: its real OS thread id
//!   (from its `ThreadName`) and name (`thread N` without one). Its `submit` calls, blocking
//!   waits, host callbacks and capture-fence waits (format 1.15) are slices (`submit`,
//!   `wait`, `host callback`, `capture fence`, category `host`, with the runtime, submission
//!   and, for a callback or a fence, region), the application's ranges
//!   slices named as the application named them (category `annotation`) and its markers
//!   instant events there ([`ExportCounts::thread_slices`], [`ExportCounts::markers`]).
//!   A slice that crosses an earlier one of its thread (ranges closed out of order: a
//!   viewer nests a track's slices by time) goes on a track of its own beside the thread's,
//!   `NAME (crossing ranges)` ([`ExportCounts::crossing_slices`]). Two threads with one OS
//!   thread id (the system gave it again) keep two tracks: the later one a made-up tid.
//!   Each counter is a counter track of the process named as the counter
//!   ([`ExportCounts::counter_samples`]). All on the same absolute clock as the regions.
//! - **Running regions.** A region that started and has no timing when the trace ends (the
//!   region a crash or a hang was in) is a slice from its start to the trace's end (its last
//!   host time), named `LABEL (running at end)` with the argument `state`: `still running
//!   when the trace ends`, as the timeline draws it: its length is not a duration. Of a
//!   trace a recorder still writes, it is `LABEL (running now)`, `state` `running now
//!   (being recorded now: its end is not written yet)`, as `stats` says it
//!   ([`crate::running_state`]). One whose submission's `Submit` the trace lacks (a cut
//!   trace whose end lies before it: its graph, queue and label unknown) is such a slice on
//!   its runtime's `Queue unknown` track, named as `stats` names it (`submission 7, region 0
//!   (running at end)`), its `queue` argument saying why. A region
//!   whose timing or completion a lossy recording dropped ([`ScanSummary::timing_lost`]) is
//!   no hang and gets no slice: a `timing lost (records dropped)` mark at its start on the
//!   `Recorder` track, with its submission, region, label and queue
//!   ([`ExportCounts::timing_lost`] counts them).
//!
//! # One streaming pass, in bounded memory
//!
//! The trace is read once through [`crate::scan_reader_threaded`] (the file read on a
//! second thread, its blocks decoded in parallel on [`crate::decode_threads`] more), so
//! every timing is joined to its submission, prepared graph and region by the one
//! [`crate::Joiner`]. The pass decides what is written and in which order; a region's
//! slice (nearly every event) is handed on as a few numbers in a batch, and
//! [`encode_threads`] workers turn batches into bytes which a writing thread writes in
//! order (`batch`): the joining thread, the bound on idle cores, neither encodes nor
//! waits for the kernel's copy into the page cache, and the output is the same bytes
//! whatever the number of threads. A region's constant arguments (and its label) are
//! encoded once per region and shared by its slices' batches. What is kept grows with
//! graphs and labels: each region's argument texts (made when its graph is prepared),
//! those texts encoded, the Perfetto names interned, its label (made when its first slice is written, again after a later
//! `GraphOp` or `KernelLoaded` could change it), the runtimes' names and which tracks were
//! declared. A track is declared (its process first) just before the first slice or
//! instant event on it, so the output needs no first pass to find the tracks in use;
//! Perfetto orders a process's tracks by their `sibling_order_rank` and Chrome by
//! `thread_sort_index`, not by where they are declared.
//!
//! A flow needs both of its ends timed, and the producer's slice must carry it, so the
//! pass holds each submission's region timings back until the submission is settled: a
//! submission of runtime `r` is written once a `Submit` two [`WINDOW`]s later is read,
//! and its cross-submission flows are decided then, from the waits of the submissions
//! up to [`WINDOW`] after it (all read by then, as records of one submission lie within a
//! window of each other in the file; a writer thread flushes every 100 ms). What is held
//! is at most two windows of submissions, and no more than [`HELD_SPANS`] region and
//! operation timings of a runtime beyond its newest [`KEEP_NEWEST`] submissions: past that
//! the oldest are written ahead of their window (a graph of 20,000 regions held for two
//! windows would have taken on the order of 150 GB), so that memory grows with graphs, not
//! with submissions. A wait on a submission more than a window earlier (or on one written
//! ahead of its window), or a timing read after its submission was written, is still
//! exported (the wait in the slice's hazards, the timing as a slice) without its flow, and
//! counted in [`ExportCounts::flows_not_drawn`]: the caller says so.
//!
//! Until session 11 the export read the trace twice (a first pass to name things and find
//! the tracks in use): one decode pass of a 10M-region trace is about 5.8 s of CPU here.

mod batch;
mod chrome;
mod origin;
#[cfg(feature = "parquet")]
mod parquet;
mod perfetto;

pub use batch::encode_threads;
pub use origin::{ClockDomain, ExportClock, TraceSession, read_session};
use origin::{Origin, chrome_tid, crossing_tid, thread_tid};
#[cfg(feature = "parquet")]
pub use parquet::{Column, ColumnKind, ROW_GROUP, TABLES, table_files, table_paths, write_parquet};

use crate::hash::IdMap;
use crate::index::{Index, QUEUES, RegionRef, label_region, queue_name, queue_slot};
use crate::nesting::{CrossingTracks, track_name};
use crate::scan::{JoinedSpan, RunningRegion, ScanSummary, Visitor, scan_reader_threaded};
use hrx_capture::format::FormatVersion;
use hrx_capture::schema::{
    Access, AnnotationId, CounterSample, CrossWait, FatalSignal, HostClock, NodeIndex, Prepared,
    Record, RefusalKind, RegionIndex, RegionKind, RuntimeId, SignalWitness, Status,
    SubmissionIndex, Use,
};
use hrx_capture::{ReadError, Recovery, TraceReader, Warning};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};

/// Submissions per settling window (see the module docs).
pub const WINDOW: u64 = 1 << 14;

/// Region and operation timings a runtime's held submissions may hold before the oldest are
/// settled ahead of their window (see the module docs): about 230 bytes each, so a graph of
/// 20,000 regions held for two windows of submissions would have taken on the order of
/// 150 GB (a Perfetto user's pass: 39 MB at 80 submissions of a 1,000-region graph, 208 MB at
/// 800).
pub const HELD_SPANS: usize = 1 << 18;

/// The newest submissions of a runtime never settled ahead of their window: those in flight
/// and the waits on them, recorded as the later ones are submitted.
pub const KEEP_NEWEST: u64 = 4;

/// Whether `held`'s flows out can all be decided now: it is done, and every submission
/// waiting on it (held in `all`) has its waiting region timed. Not "done" alone: a
/// submission's outcome and its regions' timings are recorded by different threads, each
/// thread's records reaching the file in its own blocks (a consumer's timing read after its
/// outcome lost its flow). A consumer region that never runs (cancelled) keeps its producer
/// until the window settles it.
fn decided(held: &Held, all: &IdMap<u64, Held>) -> bool {
    held.done
        && (held.waited_by.iter())
            .all(|&(consumer, region, _)| all.get(&consumer.0).is_none_or(|c| c.timed(region)))
}

#[cfg(test)]
thread_local! {
    /// A smaller [`HELD_SPANS`] for the exports this thread starts (tests).
    pub(crate) static HELD_SPANS_FOR_TEST: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
    /// The most timings a runtime held in this thread's exports (tests).
    pub(crate) static MOST_HELD_FOR_TEST: std::cell::Cell<usize> =
        const { std::cell::Cell::new(0) };
}

/// [`HELD_SPANS`], or a test's bound.
fn held_spans_bound() -> usize {
    #[cfg(test)]
    if let Some(bound) = HELD_SPANS_FOR_TEST.with(std::cell::Cell::get) {
        return bound;
    }
    HELD_SPANS
}

/// Track slot of the `Events` track, after the five queues.
const EVENTS_SLOT: usize = QUEUES.len();

/// Track slot of the `Recorder` track, after the `Events` track.
const RECORDER_SLOT: usize = EVENTS_SLOT + 1;

/// Track slot of the `Queue unknown` track, after the `Recorder` track: a region still
/// running at the trace's end whose submission's `Submit` the trace lacks (a cut trace), so
/// that its queue is unknown ([`UNKNOWN_QUEUE`]).
const UNKNOWN_QUEUE_SLOT: usize = RECORDER_SLOT + 1;

/// Track slots: the queues', `Events`, `Recorder`, `Queue unknown`.
const SLOTS: usize = UNKNOWN_QUEUE_SLOT + 1;

/// The `queue` argument of a region whose submission's `Submit` the trace lacks.
const UNKNOWN_QUEUE: &str = "unknown: its submission's Submit is not in the trace";

/// The "runtime" of the process's own marks (`host loaded`, `records lost`, a recorder wait
/// of no runtime): no runtime has id 0, so these go on a track of the process,
/// [`PROCESS_RECORDER`], not under a runtime 0 that the trace does not hold.
const PROCESS: RuntimeId = RuntimeId(0);

/// The name of the process's own track of recorder marks ([`PROCESS`]), apart from each
/// runtime's `Recorder` track.
const PROCESS_RECORDER: &str = "Recorder (process)";

/// The `slot` of a host thread's slice or marker (format 1.14): no runtime's track, its
/// place is the thread's ([`Out::declare_thread`]).
const THREAD_SLOT: usize = usize::MAX;

/// The category of an instant event on track `slot`.
fn instant_category(slot: usize) -> &'static str {
    match slot {
        EVENTS_SLOT => "event",
        RECORDER_SLOT => "recorder",
        _ => "annotation",
    }
}

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Chrome trace-event JSON (`{"traceEvents": [...]}`).
    Chrome,
    /// A Perfetto protobuf `Trace`.
    Perfetto,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The trace could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The output could not be written. Transparent: its cause is said once (with its own
    /// message and as its source it read "No space left on device (os error 28): No space
    /// left on device (os error 28)").
    #[error(transparent)]
    Write(#[from] io::Error),
}

/// What was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Tracks declared (queues and events tracks, not processes).
    pub tracks: usize,
    /// Slices (region and operation timings).
    pub slices: u64,
    /// Of `slices`, operation timings' (nested in their region's).
    pub operation_slices: u64,
    /// Of `slices`, native-graph regions' (whose operations a backend could time).
    pub native_graph_slices: u64,
    /// Flows drawn.
    pub flows: u64,
    /// Instant events on the `Events` tracks: the failures, refusals and cancellations, as
    /// `view` lists and counts them.
    pub instants: u64,
    /// Instant events on the `Recorder` tracks: what the recorder did and saw (output
    /// digests, capture fences, its waits, lost records, the signal that ended the process).
    pub recorder_instants: u64,
    /// Of `recorder_instants`, the marks of traces not read whole, one per such trace:
    /// `trace incomplete`, or `trace being recorded` for one a recorder still wrote.
    pub incomplete_marks: u64,
    /// Of `recorder_instants`, the [`LOST_MARK`]s (records lost while recording) and the
    /// [`LOSSY_MARK`]s (a lossy recording that had lost none yet), so that the summary
    /// names them as it names the incomplete ones (it said "9 recorder marks" of a trace that
    /// lost 177,026 records: a fresh user's pass).
    pub lost_marks: u64,
    /// See [`ExportCounts::lost_marks`].
    pub lossy_marks: u64,
    /// Cross-submission waits and timings exported without their flow: the wait named a
    /// submission more than [`WINDOW`] earlier, or the timing was read after its
    /// submission had been written.
    pub flows_not_drawn: u64,
    /// Regions whose timing was lost ([`ScanSummary::timing_lost`]), marked on the
    /// `Recorder` tracks (among `recorder_instants`), not drawn as slices.
    pub timing_lost: u64,
    /// Host threads' tracks (format 1.14; among `tracks`).
    pub thread_tracks: usize,
    /// Slices on host threads' tracks: `submit` calls, blocking waits, host callbacks and
    /// annotation ranges (not among `slices`).
    pub thread_slices: u64,
    /// Slices of a host thread that cross an earlier one of its track (ranges closed out
    /// of order: neither inside it nor after it), put on the thread's `(crossing ranges)`
    /// track instead (among `thread_slices`; the track among `thread_tracks`): a viewer
    /// nests a track's slices by time and would draw them wrongly (Perfetto's importer
    /// drops such JSON slices).
    pub crossing_slices: u64,
    /// Annotation markers on host threads' tracks (not among the instants).
    pub markers: u64,
    /// Counter tracks (among `tracks`).
    pub counter_tracks: usize,
    /// Counter samples on them.
    pub counter_samples: u64,
    /// Parquet only: `events` rows of regions still running at the trace's end (`running at
    /// end`, `running now`), which the other formats draw as slices (among `slices` there)
    /// and `view` as spans: not among `instants`.
    pub running_rows: u64,
}

/// One region's argument texts, computed once per prepared graph.
#[derive(Debug)]
struct RegionArgs {
    kind: RegionKind,
    operations: u64,
    uses: Vec<String>,
    /// Dependencies on earlier regions of the graph, as text.
    hazards: Vec<String>,
    internal_edges: u64,
    copy_bytes: u64,
    /// Distinct producer regions of its dependencies.
    producers: Vec<u32>,
    /// Distinct regions whose dependencies name it.
    consumers: Vec<u32>,
}

/// Where an event goes: Chrome's `pid` and `tid`, Perfetto's track uuid (filled in by
/// [`Out`] from the trace's [`Origin`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Place {
    pid: u32,
    tid: u32,
    uuid: u64,
}

/// The traced process, declared once per trace before its first track.
#[derive(Debug)]
pub(crate) struct Process<'a> {
    origin: &'a Origin,
    /// The process's name (its program's file name).
    name: String,
    domain: ClockDomain,
}

/// A timeline row: one queue of one runtime, or its events.
#[derive(Clone, Debug)]
pub(crate) struct Track {
    runtime: RuntimeId,
    /// 0..5: the queue's position in [`QUEUES`]; 5: events.
    slot: usize,
    name: &'static str,
    /// The runtime's display name.
    runtime_name: String,
    /// A track of the process ([`PROCESS`]'s marks), under no runtime.
    process_level: bool,
    place: Place,
    /// Perfetto uuids of the runtime's track and of its process's.
    runtime_uuid: u64,
    process_uuid: u64,
}

/// A host thread's track (format 1.14): a thread of the trace's process.
#[derive(Debug)]
pub(crate) struct ThreadTrack<'a> {
    /// Its index in the session.
    thread: u32,
    /// Its name as the index gives it (`thread N` without one).
    name: &'a str,
    /// `pid`: the process's; `tid`: the OS thread id (a made-up one without it).
    place: Place,
    /// Perfetto uuid of its process's track.
    process_uuid: u64,
}

/// A counter's track (format 1.14), of the trace's process.
#[derive(Debug)]
pub(crate) struct CounterTrack<'a> {
    name: &'a str,
    /// `pid`: the process's; `uuid`: the counter track's.
    place: Place,
    process_uuid: u64,
}

/// One counter sample.
#[derive(Debug)]
pub(crate) struct CounterPoint<'a> {
    name: &'a str,
    place: Place,
    time_ns: u64,
    value: f64,
}

/// Each region's argument texts and label, by [`RegionRef`] (see the module docs).
#[derive(Debug)]
struct Names {
    regions: Vec<RegionArgs>,
    /// Each region's label, with the generation it was made in (0: not made yet).
    labels: Vec<(u64, String)>,
    /// Bumped by every record that can change a label (an operation, a kernel's name).
    generation: u64,
}

impl Names {
    fn new() -> Names {
        Names {
            regions: Vec::new(),
            labels: Vec::new(),
            generation: 1,
        }
    }

    fn prepared(&mut self, p: &Prepared) {
        let first = self.regions.len();
        for r in &p.regions {
            let mut producers: Vec<u32> = r.dependencies.iter().map(|e| e.producer).collect();
            producers.sort_unstable();
            producers.dedup();
            let hazards = r
                .dependencies
                .iter()
                .map(|e| {
                    format!(
                        "{} buf {} [{}..{}) on region {}",
                        e.kind.abbreviation(),
                        e.buffer,
                        e.start,
                        e.end,
                        e.producer
                    )
                })
                .collect();
            self.regions.push(RegionArgs {
                kind: r.kind,
                operations: r.nodes.len() as u64,
                uses: r.uses.iter().map(use_text).collect(),
                hazards,
                internal_edges: r.internal_edges.len() as u64,
                copy_bytes: r.copy_bytes,
                producers,
                consumers: Vec::new(),
            });
            self.labels.push((0, String::new()));
        }
        let graph = &mut self.regions[first..];
        for consumer in 0..graph.len() {
            for p in graph[consumer].producers.clone() {
                if let Some(producer) = graph.get_mut(p as usize) {
                    producer.consumers.push(consumer as u32);
                }
            }
        }
    }

    /// Makes `region`'s label current: the timeline's name for it ([`crate::label_region`]).
    fn refresh(&mut self, index: &Index, region: RegionRef) {
        let generation = self.generation;
        if let Some(entry) = self.labels.get_mut(region.0 as usize)
            && entry.0 != generation
        {
            let info = index.region(region);
            entry.1 = label_region(info.kind, info.queue, &index.region_ops(region));
            entry.0 = generation;
        }
    }

    /// `region`'s label, as of its last [`Names::refresh`].
    fn label(&self, region: RegionRef) -> &str {
        self.labels
            .get(region.0 as usize)
            .map_or("region", |(_, label)| label.as_str())
    }
}

/// What an export wrote, and what it read.
#[derive(Debug)]
pub struct Exported {
    /// What was written.
    pub counts: ExportCounts,
    /// Damage and skipped parts of the file.
    pub warnings: Vec<Warning>,
    /// How the file ended (`None` for records read from memory).
    pub recovery: Option<Recovery>,
    /// Region timings that never joined a recorded submission and region: they are not
    /// exported (counted as `info` and `stats` count them).
    pub unplaced_timings: u64,
    /// Operation timings that never joined a recorded region: not exported either.
    pub unplaced_op_timings: u64,
    /// Spans and ranges that end before they start (crafted or damaged times): exported as
    /// 0 ns long.
    pub ends_before_start: u64,
    /// Whether a recorder was writing the trace when it was opened, as its reader was told
    /// (the file's mark says so; the warnings must say the same, not what holds at the end).
    pub being_recorded: bool,
    /// The runtimes' samples of the host's load per CPU
    /// ([`hrx_capture::schema::HOST_LOAD_COUNTER`]), as `info` reads them; `None` without one.
    pub host_load: Option<crate::info::HostLoadSamples>,
}

/// A slice argument.
#[derive(Clone, Debug)]
pub(crate) enum Arg<'a> {
    Uint(u64),
    Str(Cow<'a, str>),
    List(Vec<Cow<'a, str>>),
    /// A list of texts kept elsewhere (a region's, made once per graph): `.0`, then `.1`.
    Texts(&'a [String], &'a [String]),
}

impl Arg<'_> {
    /// A list's items, in order; `None` for a number or a string.
    fn items(&self) -> Option<impl Iterator<Item = &str>> {
        let (list, first, second): (&[Cow<'_, str>], &[String], &[String]) = match self {
            Arg::List(list) => (list, &[], &[]),
            Arg::Texts(first, second) => (&[], first, second),
            Arg::Uint(_) | Arg::Str(_) => return None,
        };
        Some(
            list.iter()
                .map(AsRef::as_ref)
                .chain(first.iter().chain(second).map(String::as_str)),
        )
    }
}

/// A slice (a timed region or operation).
#[derive(Debug)]
pub(crate) struct Slice<'a> {
    runtime: RuntimeId,
    slot: usize,
    place: Place,
    name: &'a str,
    category: &'static str,
    start_ns: u64,
    end_ns: u64,
    args: Vec<(&'static str, Arg<'a>)>,
    /// Flows starting here.
    flows_out: &'a [u64],
    /// Flows ending here.
    flows_in: &'a [u64],
}

/// The recorder mark of records lost while recording (a `RecordsLost` record that counts some).
pub const LOST_MARK: &str = "records lost";
/// The recorder mark of a lossy recording that had lost nothing when it was written.
pub const LOSSY_MARK: &str = "lossy mode (none lost yet)";

impl ExportCounts {
    /// Counts an instant named `name`: on an `Events` track (`events`) or a `Recorder` one.
    pub(crate) fn count_instant(&mut self, events: bool, name: &str) {
        if events {
            self.instants += 1;
            return;
        }
        self.recorder_instants += 1;
        match name {
            LOST_MARK => self.lost_marks += 1,
            LOSSY_MARK => self.lossy_marks += 1,
            _ => {}
        }
    }
}

/// An instant event.
#[derive(Debug)]
pub(crate) struct Instant<'a> {
    runtime: RuntimeId,
    place: Place,
    /// [`EVENTS_SLOT`], [`RECORDER_SLOT`] or [`THREAD_SLOT`] (a marker).
    slot: usize,
    name: &'a str,
    time_ns: u64,
    args: Vec<(&'static str, Arg<'a>)>,
}

/// A region's slice as most are: its constant arguments (kind, operations, uses, the
/// graph's hazards, internal edges, copy bytes) from its prepared graph, which a writer
/// encodes once per region, and the few that vary. Its arguments, in order: submission,
/// region, slot, kind, operations, uses, hazards (the graph's, then the waits), internal
/// edges and copy bytes (where not zero), device ns (where recorded).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RegionSlice<'a> {
    runtime: RuntimeId,
    place: Place,
    /// Track slot (the queue's).
    track: usize,
    region: RegionRef,
    label: &'a str,
    args: &'a RegionArgs,
    start_ns: u64,
    end_ns: u64,
    submission: u64,
    /// Its index in the prepared graph.
    index: u32,
    /// The submission's slot.
    slot: u32,
    /// Whether its hazards list the graph's (not for a slice written after its submission).
    graph_hazards: bool,
    /// Cross-submission waits, listed after the graph's hazards.
    waits: &'a [CrossWait],
    device_ns: Option<u64>,
    /// Its run failed (`status: failed`; the cause is the `failed` event's).
    failed: bool,
    flows_out: &'a [u64],
    flows_in: &'a [u64],
    /// Where its flows bind in Chrome's JSON, which binds a flow event to the deepest slice
    /// enclosing it: a time inside the region and outside its operations where there is one
    /// ([`bind_time`]), else its middle.
    bind_ns: u64,
}

/// Where a region's flow events go in Chrome's JSON: inside its span (`start_ns`..`end_ns`)
/// and outside every operation span of `ops` (nested in it), the middle of the first gap
/// (before the first operation, between two, or after the last); its middle where the
/// operations leave none. At the middle, the flow bound to an operation (a Perfetto user's
/// pass: the upload-to-compute arrow ended on `hrx_histogram256`, the compute region's last
/// kernel, where the Perfetto file links region to region).
fn bind_time(start_ns: u64, end_ns: u64, ops: impl Iterator<Item = (u64, u64)>) -> u64 {
    let mut spans: Vec<(u64, u64)> = ops
        .map(|(s, e)| (s.clamp(start_ns, end_ns), e.clamp(start_ns, end_ns)))
        .collect();
    spans.sort_unstable();
    let mut at = start_ns;
    for (s, e) in spans {
        // A gap of 2 ns at least, so that its middle is strictly inside it.
        if s >= at + 2 {
            return at + (s - at) / 2;
        }
        at = at.max(e);
    }
    if end_ns >= at + 2 {
        return at + (end_ns - at) / 2;
    }
    start_ns + (end_ns - start_ns) / 2
}

/// What an output format does with the stream of tracks, slices and instants.
trait Sink {
    /// Declares a trace's process, before its first track.
    fn process(&mut self, process: &Process<'_>) -> io::Result<()>;
    /// Declares a track, before anything on it; `new_runtime`: the first of its runtime's
    /// tracks, so its runtime is declared first.
    fn track(&mut self, track: &Track, new_runtime: bool) -> io::Result<()>;
    /// Writes one slice.
    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()>;
    /// Writes one region slice.
    fn region_slice(&mut self, slice: &RegionSlice<'_>) -> io::Result<()>;
    /// Writes one instant event.
    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()>;
    /// Declares a host thread's track, before anything on it (its process first).
    fn thread(&mut self, thread: &ThreadTrack<'_>) -> io::Result<()>;
    /// Declares a counter's track, before its first sample (its process first).
    fn counter_track(&mut self, counter: &CounterTrack<'_>) -> io::Result<()>;
    /// Writes one counter sample.
    fn counter(&mut self, sample: &CounterPoint<'_>) -> io::Result<()>;
    /// Ends the output and flushes it.
    fn finish(&mut self) -> io::Result<()>;
}

/// Streams every timing and event of `reader` into `out` in `format`, in one pass, on
/// the trace's host `CLOCK_MONOTONIC` (absolute ns; µs in Chrome JSON). `session` is what
/// [`read_session`] read of the same trace: where its `SessionStart` was lost, its first
/// calibration puts its times on that clock. `out` is written in chunks of 1 MiB on a
/// thread of its own (no buffer is needed).
///
/// # Errors
///
/// [`ExportError::Read`] when the trace cannot be read, [`ExportError::Write`] when the
/// output cannot be written (the output's own error, such as "No space left on device").
pub fn write<R: Read + Send, W: Write + Send>(
    reader: TraceReader<R>,
    session: TraceSession,
    format: Format,
    out: W,
) -> Result<Exported, ExportError> {
    let clock = ExportClock::for_sessions([&session]);
    let mut all = write_merged(vec![(reader, session)], format, clock, out)?;
    Ok(all.remove(0))
}

/// Streams several traces into one timeline in `out`, one after the other, each trace's
/// process and tracks with ids of their own, every timestamp on `clock` (absolute ns in
/// Perfetto's protobuf, µs from its base in Chrome JSON: [`ExportClock::for_sessions`]
/// picks the clock that lines the traces up). Each reader comes with what [`read_session`]
/// read of it. One [`Exported`] per reader, in order; [`ExportCounts`] count what each
/// trace added.
///
/// A trace whose `SessionStart` was lost is exported as one process of unknown host, pid
/// and command line (`hrx process (session record lost)`, its labels saying so), with a
/// `session record lost` mark, and no wall clock in its Perfetto clock snapshot; its
/// times are on `CLOCK_MONOTONIC` where a calibration recovered them ([`TraceSession`]).
/// Such a trace cannot be lined up with others or told apart from their recordings: the
/// caller should not merge it.
///
/// # Errors
///
/// As [`write`]: the first trace that cannot be read, or the output's error. Nothing is
/// read after the first error.
pub fn write_merged<R: Read + Send, W: Write + Send>(
    traces: Vec<(TraceReader<R>, TraceSession)>,
    format: Format,
    clock: ExportClock,
    out: W,
) -> Result<Vec<Exported>, ExportError> {
    write_from(format, clock, out, traces, encode_threads())
}

/// Where the pass reads records: a trace file, or records in memory (tests).
trait Source {
    /// Whether a recorder was writing the trace when it was opened
    /// ([`TraceReader::being_recorded`]).
    fn being_recorded(&self) -> bool;
    /// Where the trace's `SessionStart` was lost: its first calibration, what survived of its
    /// start ([`origin::Survived`]), and its format version.
    fn lost_session(&self) -> (Option<HostClock>, u64, FormatVersion);
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError>;
}

impl<R: Read + Send> Source for (TraceReader<R>, TraceSession) {
    fn being_recorded(&self) -> bool {
        self.0.is_being_recorded()
    }
    fn lost_session(&self) -> (Option<HostClock>, u64, FormatVersion) {
        match &self.1 {
            TraceSession::Lost {
                clock,
                survived,
                format,
            } => (*clock, *survived, *format),
            TraceSession::Recorded(_) => (None, 0, self.0.header().version),
        }
    }
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
        scan_reader_threaded(self.0, visitor)
    }
}

impl Source for &[Record] {
    fn being_recorded(&self) -> bool {
        false
    }
    fn lost_session(&self) -> (Option<HostClock>, u64, FormatVersion) {
        if matches!(self.first(), Some(Record::SessionStart(_))) {
            return (None, 0, FormatVersion::CURRENT);
        }
        let clock = self.iter().find_map(|r| match r {
            Record::HostClock(c) => Some(*c),
            _ => None,
        });
        // In memory: the records of one block at offset 0.
        let mut survived = origin::Survived::default();
        for r in self.iter() {
            survived.add(0, r);
        }
        (clock, survived.digest(), FormatVersion::CURRENT)
    }
    fn scan(self, visitor: &mut impl Visitor) -> Result<ScanSummary, ReadError> {
        Ok(crate::scan::scan_records(self, visitor))
    }
}

/// The export with `workers` encoding threads (0: the pass encodes; the bytes are the
/// same whatever the number).
fn write_from<W: Write + Send, T: Source>(
    format: Format,
    clock: ExportClock,
    out: W,
    sources: Vec<T>,
    workers: usize,
) -> Result<Vec<Exported>, ExportError> {
    let domain = clock.domain;
    match format {
        Format::Chrome => batch::encode_on_threads(out, workers, chrome::encode_batch, |b| {
            write_to(chrome::Writer::new(b, clock), domain, sources)
        }),
        Format::Perfetto => batch::encode_on_threads(out, workers, perfetto::encode_batch, |b| {
            write_to(perfetto::Writer::new(b, domain), domain, sources)
        }),
    }
}

fn write_to<S: Sink, T: Source>(
    sink: S,
    domain: ClockDomain,
    sources: Vec<T>,
) -> Result<Vec<Exported>, ExportError> {
    let mut out = Out {
        sink,
        counts: ExportCounts::default(),
        error: None,
        domain,
        origin: Origin::lost(domain, None, 0, FormatVersion::CURRENT),
        process_declared: false,
        processes: BTreeMap::new(),
        declared: Vec::new(),
        threads: Vec::new(),
        counters: Vec::new(),
        pids: Vec::new(),
        nesting: CrossingTracks::default(),
        host_load: None,
    };
    let mut all = Vec::with_capacity(sources.len());
    for source in sources {
        let (clock, survived, format) = source.lost_session();
        out.next_trace(clock.as_ref(), survived, format);
        out.counts = ExportCounts::default();
        let mut pass = Pass {
            out,
            names: Names::new(),
            scratch: Scratch::default(),
            fatal: Vec::new(),
            end_ns: 0,
            start_ns: None,
            runtimes: Vec::new(),
            held_spans: held_spans_bound(),
        };
        let live = source.being_recorded();
        let summary = source.scan(&mut pass)?;
        let runtimes: Vec<RuntimeId> = pass.runtimes.iter().map(|(r, _)| *r).collect();
        for runtime in runtimes {
            pass.settle(&summary.index, runtime, u64::MAX);
        }
        pass.at_the_end(&summary.index, &summary.running, live);
        pass.session_lost();
        if let Some(recovery) = &summary.recovery {
            pass.incomplete(recovery, live);
        }
        pass.timing_lost(&summary.index, &summary.timing_lost);
        out = pass.out;
        if let Some(error) = out.error.take() {
            return Err(error.into());
        }
        all.push(Exported {
            counts: std::mem::take(&mut out.counts),
            warnings: summary.warnings,
            recovery: summary.recovery,
            unplaced_timings: summary.unplaced_timings,
            unplaced_op_timings: summary.unplaced_op_timings,
            ends_before_start: summary.ends_before_start,
            being_recorded: live,
            host_load: out.host_load.take(),
        });
    }
    out.sink.finish()?;
    Ok(all)
}

/// A submission held back until it settles.
#[derive(Debug, Default)]
struct Held {
    slot: u32,
    /// Its `SubmissionDone` was read: it may be written ahead of its window
    /// ([`HELD_SPANS`]).
    done: bool,
    /// Its region timings, with each one's region index in the prepared graph.
    spans: Vec<(RegionIndex, JoinedSpan)>,
    /// The region indices of `spans`, for [`Held::timed`] (a search of `spans` per look-up
    /// made the export of a large graph quadratic).
    timed: std::collections::HashSet<RegionIndex, crate::hash::IdBuildHasher>,
    /// Its waits on earlier submissions.
    waits: Vec<CrossWait>,
    /// Waits of later submissions on it: (consumer submission, consumer region, its
    /// region), a pair once for each of its hazards (drawn once).
    waited_by: Vec<(SubmissionIndex, RegionIndex, RegionIndex)>,
    /// Cross-submission flows ending at its regions, decided when their producer settled.
    flows_in: Vec<(RegionIndex, u64)>,
    /// Its operation timings, written after their region's slice.
    ops: Vec<(NodeIndex, JoinedSpan)>,
    /// Its regions whose run failed (their slices say so), with the operation the error
    /// names, if it names one.
    failed: Vec<(RegionIndex, Option<String>)>,
}

impl Held {
    fn timed(&self, region: RegionIndex) -> bool {
        self.timed.contains(&region)
    }
}

impl Held {
    /// Empties it, keeping its vectors' room for the next submission.
    fn reset(&mut self) {
        self.slot = 0;
        self.done = false;
        self.spans.clear();
        self.timed.clear();
        self.waits.clear();
        self.waited_by.clear();
        self.flows_in.clear();
        self.ops.clear();
        self.failed.clear();
    }
}

/// The held submissions of one runtime.
#[derive(Debug, Default)]
struct RuntimeHeld {
    held: IdMap<u64, Held>,
    /// Every submission below this one was written.
    written_below: u64,
    /// Region and operation timings in `held` ([`HELD_SPANS`]).
    spans: usize,
}

/// The output side of the pass: the sink, what was declared and counted. It outlives one
/// trace's pass: a merged export runs one pass per trace into the same `Out`.
struct Out<S> {
    sink: S,
    counts: ExportCounts,
    /// The first write error; the pass stops writing after it.
    error: Option<io::Error>,
    /// The clock of every timestamp written.
    domain: ClockDomain,
    /// The trace being read: its process, clock and ids.
    origin: Origin,
    /// Whether the trace's process was declared.
    process_declared: bool,
    /// Each runtime's display name, from its `RuntimeStart` (this trace's).
    processes: BTreeMap<RuntimeId, String>,
    /// The tracks declared, by runtime (few) and slot (this trace's).
    declared: Vec<(RuntimeId, [bool; SLOTS])>,
    /// The host threads' tracks declared, by thread and level (0: the thread's own, from
    /// 1 its `(crossing ranges)` tracks), with where their events go (few).
    threads: Vec<((u32, u8), Place)>,
    /// The counters whose tracks were declared, with where their samples go (few).
    counters: Vec<(AnnotationId, Place)>,
    /// Every trace's process so far: host, recorded pid, exported pid ([`Out::place_process`]).
    pids: Vec<(String, u32, u32)>,
    /// The slices of each host thread's track (thread, level) that a later one may still
    /// cross ([`Nesting`]; this trace's, few threads).
    nesting: CrossingTracks,
    /// This trace's host-load samples ([`Exported::host_load`]).
    host_load: Option<crate::info::HostLoadSamples>,
}

impl<S: Sink> Out<S> {
    /// Starts the next trace's pass; `clock`: its first calibration, `survived`, what
    /// survived of its start, and `format`, its version, should its `SessionStart` be lost
    /// (the origin until one is read).
    fn next_trace(&mut self, clock: Option<&HostClock>, survived: u64, format: FormatVersion) {
        self.origin = Origin::lost(self.domain, clock, survived, format);
        self.process_declared = false;
        self.processes.clear();
        self.declared.clear();
        self.threads.clear();
        self.counters.clear();
        self.nesting.clear();
    }

    /// Takes `origin` as the trace's, with the pid the export writes for it: the recorded
    /// one, unless a trace of another host already has that pid, then one of its own above
    /// real pids (Linux's are below 2^22) and the recorded one among its labels. Two traces
    /// of one host and pid stay one process (one process's sessions, or a pid reused later:
    /// their times do not overlap).
    fn place_process(&mut self, mut origin: Origin) {
        let recorded = origin.pid;
        let same = self
            .pids
            .iter()
            .find(|(h, p, _)| *p == recorded && *h == origin.host);
        let taken = self.pids.iter().any(|(_, _, e)| *e == recorded);
        origin.pid = match same {
            Some(&(_, _, exported)) => exported,
            None if taken => 0x4000_0000 | (self.pids.len() as u32 + 1),
            None => recorded,
        };
        if origin.pid != recorded {
            origin.recorded_pid = Some(recorded);
        }
        if same.is_none() {
            self.pids.push((origin.host.clone(), recorded, origin.pid));
        }
        self.origin = origin;
    }

    /// Declares the trace's process unless it was; `false` after a write error.
    fn declare_process(&mut self) -> bool {
        if self.error.is_some() {
            return false;
        }
        if !std::mem::replace(&mut self.process_declared, true) {
            let process = Process {
                origin: &self.origin,
                name: self.origin.name(),
                domain: self.domain,
            };
            if let Err(e) = self.sink.process(&process) {
                self.error = Some(e);
                return false;
            }
        }
        true
    }

    /// Declares host thread `thread`'s track unless it was (its process first), and answers
    /// where its events go: the process's pid, the thread's OS id (see [`thread_tid`]).
    /// `level` 0 is the thread's own track, from 1 its `(crossing ranges)` tracks (a
    /// made-up tid each).
    fn declare_thread(&mut self, index: &Index, thread: u32, level: u8) -> Place {
        let key = (thread, level);
        if let Some(&(_, place)) = self.threads.iter().find(|(t, _)| *t == key) {
            return place;
        }
        let crossing = level > 0;
        // An OS thread id the system gave again to a later thread: the later thread gets a
        // made-up one, or a viewer (keying threads by tid) would draw both as one.
        let mut tid = thread_tid(index.thread_os_tid(thread), thread);
        if crossing {
            tid = crossing_tid(thread, level);
        } else if self.threads.iter().any(|(_, p)| p.tid == tid) {
            tid = thread_tid(None, thread);
        }
        let place = Place {
            pid: self.origin.pid,
            tid,
            uuid: match crossing {
                true => self.origin.crossing_uuid(thread, level),
                false => self.origin.thread_uuid(thread),
            },
        };
        self.threads.push((key, place));
        self.counts.tracks += 1;
        self.counts.thread_tracks += 1;
        if !self.declare_process() {
            return place;
        }
        let name = track_name(&index.thread_name(thread), level);
        let track = ThreadTrack {
            thread,
            name: &name,
            place,
            process_uuid: self.origin.process_uuid(),
        };
        if let Err(e) = self.sink.thread(&track) {
            self.error = Some(e);
        }
        place
    }

    /// A slice on host thread `thread`'s track.
    fn thread_slice(&mut self, index: &Index, thread: u32, mut slice: Slice<'_>) {
        let level = self.nesting.place(thread, slice.start_ns, slice.end_ns);
        if level > 0 {
            self.counts.crossing_slices += 1;
        }
        slice.place = self.declare_thread(index, thread, level);
        if self.error.is_some() {
            return;
        }
        slice.start_ns = self.origin.time(slice.start_ns);
        slice.end_ns = self.origin.time(slice.end_ns);
        self.counts.thread_slices += 1;
        if let Err(e) = self.sink.slice(&slice) {
            self.error = Some(e);
        }
    }

    /// A marker on host thread `thread`'s track.
    fn marker(&mut self, index: &Index, thread: u32, mut instant: Instant<'_>) {
        instant.place = self.declare_thread(index, thread, 0);
        if self.error.is_some() {
            return;
        }
        instant.time_ns = self.origin.time(instant.time_ns);
        self.counts.markers += 1;
        if let Err(e) = self.sink.instant(&instant) {
            self.error = Some(e);
        }
    }

    /// A sample of counter `name` (its track declared first).
    fn counter(&mut self, index: &Index, name: AnnotationId, time_ns: u64, value: f64) {
        let text = index.annotation_name(name);
        let place = match self.counters.iter().find(|(n, _)| *n == name) {
            Some(&(_, place)) => place,
            None => {
                let place = Place {
                    pid: self.origin.pid,
                    tid: 0,
                    uuid: self.origin.counter_uuid(name),
                };
                self.counters.push((name, place));
                self.counts.tracks += 1;
                self.counts.counter_tracks += 1;
                if self.declare_process() {
                    let track = CounterTrack {
                        name: &text,
                        place,
                        process_uuid: self.origin.process_uuid(),
                    };
                    if let Err(e) = self.sink.counter_track(&track) {
                        self.error = Some(e);
                    }
                }
                place
            }
        };
        if self.error.is_some() {
            return;
        }
        let sample = CounterPoint {
            name: &text,
            place,
            time_ns: self.origin.time(time_ns),
            value,
        };
        self.counts.counter_samples += 1;
        if let Err(e) = self.sink.counter(&sample) {
            self.error = Some(e);
        }
    }

    /// Where track `slot` of `runtime` goes.
    fn place(&self, runtime: RuntimeId, slot: usize) -> Place {
        Place {
            pid: self.origin.pid,
            tid: chrome_tid(runtime, slot),
            uuid: self.origin.runtime_uuid(runtime) | (slot as u64 + 1),
        }
    }

    /// Declares track `slot` of `runtime` unless it was (its process and runtime first),
    /// and answers where its events go.
    fn declare(&mut self, runtime: RuntimeId, slot: usize) -> Place {
        let place = self.place(runtime, slot);
        let at = self.declared.iter().position(|(r, _)| *r == runtime);
        let new_runtime = at.is_none();
        let at = at.unwrap_or_else(|| {
            self.declared.push((runtime, [false; SLOTS]));
            self.declared.len() - 1
        });
        if std::mem::replace(&mut self.declared[at].1[slot], true) {
            return place;
        }
        self.counts.tracks += 1;
        if !self.declare_process() {
            return place;
        }
        let process_level = runtime == PROCESS;
        let track = Track {
            runtime,
            slot,
            name: match QUEUES.get(slot) {
                Some(&q) => queue_name(q),
                None if slot == EVENTS_SLOT => "Events",
                None if slot == UNKNOWN_QUEUE_SLOT => "Queue unknown",
                None if process_level => PROCESS_RECORDER,
                None => "Recorder",
            },
            process_level,
            runtime_name: self
                .processes
                .get(&runtime)
                .cloned()
                .unwrap_or_else(|| format!("hrx runtime {runtime}")),
            place,
            runtime_uuid: self.origin.runtime_uuid(runtime),
            process_uuid: self.origin.process_uuid(),
        };
        if let Err(e) = self.sink.track(&track, new_runtime) {
            self.error = Some(e);
        }
        place
    }

    fn slice(&mut self, mut slice: Slice<'_>) {
        slice.place = self.declare(slice.runtime, slice.slot);
        if self.error.is_some() {
            return;
        }
        slice.start_ns = self.origin.time(slice.start_ns);
        slice.end_ns = self.origin.time(slice.end_ns);
        self.counts.slices += 1;
        self.counts.flows += slice.flows_out.len() as u64;
        if let Err(e) = self.sink.slice(&slice) {
            self.error = Some(e);
        }
    }

    fn region_slice(&mut self, slice: &RegionSlice<'_>) {
        let mut slice = *slice;
        slice.place = self.declare(slice.runtime, slice.track);
        if self.error.is_some() {
            return;
        }
        slice.start_ns = self.origin.time(slice.start_ns);
        slice.end_ns = self.origin.time(slice.end_ns);
        slice.bind_ns = self.origin.time(slice.bind_ns);
        self.counts.slices += 1;
        if slice.args.kind == RegionKind::NativeGraph {
            self.counts.native_graph_slices += 1;
        }
        self.counts.flows += slice.flows_out.len() as u64;
        if let Err(e) = self.sink.region_slice(&slice) {
            self.error = Some(e);
        }
    }

    fn instant(&mut self, mut instant: Instant<'_>) {
        instant.place = self.declare(instant.runtime, instant.slot);
        if self.error.is_some() {
            return;
        }
        instant.time_ns = self.origin.time(instant.time_ns);
        self.counts
            .count_instant(instant.slot == EVENTS_SLOT, instant.name);
        if let Err(e) = self.sink.instant(&instant) {
            self.error = Some(e);
        }
    }
}

/// What the pass reuses instead of allocating per slice or submission.
#[derive(Default)]
struct Scratch {
    /// What a settled submission's slices are made of, reused.
    slice: SliceScratch,
    /// Emptied submissions.
    free: Vec<Held>,
}

/// A settled submission's flows and a slice's waits, reused.
#[derive(Default)]
struct SliceScratch {
    waits: Vec<CrossWait>,
    out_cross: Vec<(RegionIndex, u64)>,
    flows_in: Vec<u64>,
    flows_out: Vec<u64>,
    /// A submission's lists by region, sorted stably (each region's entries in the order
    /// held), so that each region finds its own by a binary search: a filter of every list
    /// per region made the export of one graph of N regions O(N^2) (80,000 regions took
    /// 19.6 s; a fresh user's pass, session 59).
    by_region: ByRegion,
}

/// See [`SliceScratch::by_region`]: positions in a [`Held`]'s lists, sorted by region.
#[derive(Default)]
struct ByRegion {
    waits: Vec<CrossWait>,
    flows_in: Vec<(RegionIndex, u64)>,
    /// `Held::ops` positions, by the operation's region (its model ref), then position.
    ops: Vec<(RegionRef, u32)>,
    /// `Held::spans`: each region's (model ref) first timing's position.
    first_span: Vec<(RegionRef, u32)>,
    /// `Held::failed` positions, by region index.
    failed: Vec<(RegionIndex, u32)>,
    /// The `Held::waited_by` pairs drawn so far.
    drawn: std::collections::HashSet<
        (SubmissionIndex, RegionIndex, RegionIndex),
        crate::hash::IdBuildHasher,
    >,
}

/// `into`: each of `keys` with its position, sorted by key, then position.
fn positions<K: Ord>(into: &mut Vec<(K, u32)>, keys: impl Iterator<Item = K>) {
    into.clear();
    into.extend(keys.zip(0u32..));
    into.sort_unstable();
}

/// The entries of `sorted` (by `key`) whose key is `k`.
fn run_of<T, K: Ord>(sorted: &[T], k: K, key: impl Fn(&T) -> K) -> &[T] {
    let start = sorted.partition_point(|t| key(t) < k);
    let len = sorted[start..].partition_point(|t| key(t) == k);
    &sorted[start..start + len]
}

impl ByRegion {
    /// Sorts `held`'s lists.
    fn of(&mut self, held: &Held) {
        self.waits.clear();
        self.waits.extend(held.waits.iter().copied());
        self.waits.sort_by_key(|w| w.region);
        self.flows_in.clear();
        self.flows_in.extend(held.flows_in.iter().copied());
        self.flows_in.sort_by_key(|f| f.0);
        positions(&mut self.ops, held.ops.iter().map(|(_, op)| op.region));
        positions(
            &mut self.first_span,
            held.spans.iter().map(|(_, s)| s.region),
        );
        self.first_span.dedup_by_key(|f| f.0);
        positions(&mut self.failed, held.failed.iter().map(|f| f.0));
    }

    /// The position in `Held::failed` of `region`'s first failure.
    fn failed(&self, region: RegionIndex) -> Option<usize> {
        run_of(&self.failed, region, |f| f.0)
            .first()
            .map(|f| f.1 as usize)
    }

    /// The position in `Held::spans` of the first timing of the region `region`.
    fn first_span(&self, region: RegionRef) -> Option<usize> {
        run_of(&self.first_span, region, |f| f.0)
            .first()
            .map(|f| f.1 as usize)
    }
}

/// The one pass (see the module docs).
struct Pass<S> {
    out: Out<S>,
    names: Names,
    scratch: Scratch,
    /// The signals that ended the process, written at the end.
    fatal: Vec<FatalSignal>,
    /// The trace's last host time, ns: where a running region's slice ends.
    end_ns: u64,
    /// Its first host time, ns: where a lost session's mark goes.
    start_ns: Option<u64>,
    /// Held submissions by runtime (few).
    runtimes: Vec<(RuntimeId, RuntimeHeld)>,
    /// [`HELD_SPANS`] (a test's smaller bound).
    held_spans: usize,
}

impl<S: Sink> Pass<S> {
    /// The held submission, or `None` when it was already written.
    fn held(&mut self, runtime: RuntimeId, submission: SubmissionIndex) -> Option<&mut Held> {
        self.held_counting(runtime, submission, 0)
    }

    /// [`Pass::held`], for a timing to be held: counted in its runtime's held timings
    /// ([`HELD_SPANS`]).
    fn held_for_timing(
        &mut self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
    ) -> Option<&mut Held> {
        self.held_counting(runtime, submission, 1)
    }

    /// [`Pass::held`], adding `timings` to the runtime's held ones where it is held.
    fn held_counting(
        &mut self,
        runtime: RuntimeId,
        submission: SubmissionIndex,
        timings: usize,
    ) -> Option<&mut Held> {
        let at = match self.runtimes.iter().position(|(r, _)| *r == runtime) {
            Some(at) => at,
            None => {
                self.runtimes.push((runtime, RuntimeHeld::default()));
                self.runtimes.len() - 1
            }
        };
        let rt = &mut self.runtimes[at].1;
        let free = &mut self.scratch.free;
        if submission.0 >= rt.written_below {
            rt.spans += timings;
            #[cfg(test)]
            MOST_HELD_FOR_TEST.with(|most| most.set(most.get().max(rt.spans)));
        }
        (submission.0 >= rt.written_below).then(|| {
            rt.held
                .entry(submission.0)
                .or_insert_with(|| free.pop().unwrap_or_default())
        })
    }

    /// Writes every submission of `runtime` below `newest - 2 * WINDOW`, oldest first
    /// (all of them for `u64::MAX`), and, while its held timings are past [`HELD_SPANS`],
    /// older ones below `newest - KEEP_NEWEST` until half that is left.
    fn settle(&mut self, index: &Index, runtime: RuntimeId, newest: u64) {
        let bound = self.held_spans;
        let Some((_, rt)) = self.runtimes.iter_mut().find(|(r, _)| *r == runtime) else {
            return;
        };
        let (horizon, limit) = match newest {
            u64::MAX => (u64::MAX, u64::MAX),
            n if rt.spans > bound => {
                let horizon = n.saturating_sub(2 * WINDOW);
                (horizon, n.saturating_sub(KEEP_NEWEST).max(horizon))
            }
            n => (n.saturating_sub(2 * WINDOW), n.saturating_sub(2 * WINDOW)),
        };
        if limit <= rt.written_below {
            return;
        }
        // Submission numbers are dense, so stepping through the range costs about one look-up
        // per submission; a sparse range (a damaged trace, the end) sorts what is held.
        let sparse = (limit - rt.written_below > 2 * rt.held.len() as u64 + 64).then(|| {
            let mut keys: Vec<u64> = rt.held.keys().copied().filter(|&k| k < limit).collect();
            keys.sort_unstable();
            keys.into_iter()
        });
        let mut dense = rt.written_below..limit;
        let mut sparse = sparse;
        loop {
            let next = match &mut sparse {
                Some(keys) => keys.next(),
                None => dense.next(),
            };
            let Some(submission) = next else {
                break;
            };
            // Past the window's horizon only while the held timings are past half the bound,
            // and only a submission whose flows out can all be decided now ([`decided`]: one
            // written while a consumer's timing was still to come lost that flow silently, a
            // second break-it pass: 7% of the flows of 64 submissions in flight).
            if submission >= horizon
                && (rt.spans <= bound / 2
                    || !rt
                        .held
                        .get(&submission)
                        .is_none_or(|h| decided(h, &rt.held)))
            {
                break;
            }
            let Some(held) = rt.held.remove(&submission) else {
                continue;
            };
            rt.spans = rt.spans.saturating_sub(held.spans.len() + held.ops.len());
            rt.written_below = submission + 1;
            let here = Settled {
                index,
                runtime,
                submission: SubmissionIndex(submission),
            };
            here.emit(
                &mut self.names,
                &mut self.out,
                rt,
                &held,
                &mut self.scratch.slice,
            );
            let mut held = held;
            held.reset();
            self.scratch.free.push(held);
        }
        rt.written_below = rt.written_below.max(horizon);
    }
}

impl<S: Sink> Pass<S> {
    /// Marks each region whose timing was lost at its start, on its runtime's `Recorder`
    /// track: no slice, as it did not run on to the trace's end.
    fn timing_lost(&mut self, index: &Index, regions: &[RunningRegion]) {
        for r in regions {
            self.out.instant(timing_lost_instant(index, r));
            self.out.counts.timing_lost += 1;
        }
    }

    /// Writes what the trace's end shows: each region still running (a slice to the end)
    /// and the signal that ended the process.
    /// Marks a trace whose `SessionStart` was lost, at its first time
    /// ([`session_lost_instant`]).
    fn session_lost(&mut self) {
        let first = self.session_runtime();
        if let Some(instant) = session_lost_instant(&self.out.origin, self.start_ns, first) {
            self.out.instant(instant);
        }
    }

    /// Marks a trace not read whole in the export itself ([`incomplete_instant`]).
    fn incomplete(&mut self, recovery: &Recovery, live: bool) {
        let first = self.session_runtime();
        if let Some(instant) = incomplete_instant(recovery, live, self.end_ns, first) {
            self.out.counts.incomplete_marks += 1;
            self.out.instant(instant);
        }
    }

    /// The runtime whose tracks hold session-level marks: the first declared.
    fn session_runtime(&self) -> RuntimeId {
        self.out
            .processes
            .keys()
            .next()
            .copied()
            .or_else(|| self.out.declared.iter().map(|(r, _)| *r).min())
            .unwrap_or_default()
    }

    fn at_the_end(&mut self, index: &Index, running: &[RunningRegion], live: bool) {
        for r in running {
            let Some(region) = r.region_ref else {
                self.running_unknown(index, r, live);
                continue;
            };
            let info = index.region(region);
            let span = JoinedSpan {
                runtime: r.runtime,
                submission: r.submission,
                ordinal: r.ordinal.unwrap_or(0),
                prepared: info.prepared,
                region,
                lane: crate::index::LaneRef(0),
                start_ns: r.start_ns,
                end_ns: self.end_ns.max(r.start_ns),
                device: None,
            };
            self.names.refresh(index, region);
            let names = &self.names;
            let mut slice = running_slice(index, names, &span, r.region);
            // Its arguments are not those of its finished slices.
            slice.args.retain(|(name, _)| *name != "slot");
            slice
                .args
                .push(("state", Arg::Str(Cow::Owned(crate::running_state(live)))));
            let name = format!("{} ({})", slice.name, crate::running_mark(live));
            slice.name = &name;
            self.out.slice(slice);
        }
        // Session-level: on the first runtime's events track.
        let first = self.session_runtime();
        for f in std::mem::take(&mut self.fatal) {
            self.out.instant(fatal_instant(&f, first));
        }
    }

    /// The slice of a region still running at the trace's end whose submission's `Submit`
    /// the trace lacks (a cut trace): its graph, queue and label are unknown, so it goes on
    /// its runtime's `Queue unknown` track, named as `stats` names it (`submission 7, region
    /// 0 (running at end)`). It was dropped, `stats` alone naming it.
    fn running_unknown(&mut self, index: &Index, r: &RunningRegion, live: bool) {
        let mut args = started_region_args(index, r);
        args.push(("state", Arg::Str(Cow::Owned(crate::running_state(live)))));
        let name = format!(
            "submission {}, region {} ({})",
            r.submission,
            r.region.0,
            crate::running_mark(live)
        );
        self.out.slice(Slice {
            runtime: r.runtime,
            place: Place::default(),
            slot: UNKNOWN_QUEUE_SLOT,
            name: &name,
            category: "region",
            start_ns: r.start_ns,
            end_ns: self.end_ns.max(r.start_ns),
            args,
            flows_out: &[],
            flows_in: &[],
        });
    }
}

/// A submission being written.
struct Settled<'i> {
    index: &'i Index,
    runtime: RuntimeId,
    submission: SubmissionIndex,
}

impl Settled<'_> {
    /// Writes a settled submission's region slices with their flows.
    fn emit<S: Sink>(
        &self,
        names: &mut Names,
        out: &mut Out<S>,
        rt: &mut RuntimeHeld,
        held: &Held,
        scratch: &mut SliceScratch,
    ) {
        let Settled {
            index,
            runtime,
            submission,
        } = *self;
        let salt = out.origin.key;
        let SliceScratch {
            waits,
            out_cross,
            flows_in,
            flows_out,
            by_region,
        } = scratch;
        by_region.of(held);
        // Cross-submission flows out: the consumers are still held (they are later).
        out_cross.clear();
        by_region.drawn.clear();
        for &(consumer_sub, consumer_region, region) in &held.waited_by {
            if !held.timed(region)
                || !by_region
                    .drawn
                    .insert((consumer_sub, consumer_region, region))
            {
                continue;
            }
            let Some(consumer) = rt.held.get_mut(&consumer_sub.0) else {
                continue;
            };
            if consumer.timed(consumer_region) {
                let id = flow_id(
                    salt,
                    1,
                    (runtime, submission, region),
                    (runtime, consumer_sub, consumer_region),
                );
                out_cross.push((region, id));
                consumer.flows_in.push((consumer_region, id));
            }
        }
        out_cross.sort_by_key(|c| c.0);
        for (i, &(region, ref span)) in held.spans.iter().enumerate() {
            names.refresh(index, span.region);
            let names = &*names;
            let args = &names.regions[span.region.0 as usize];
            let here = |r: u32| (runtime, submission, RegionIndex(r));
            flows_in.clear();
            flows_out.clear();
            let timed = |r: u32| held.timed(RegionIndex(r));
            flows_in.extend(
                args.producers
                    .iter()
                    .filter(|&&p| timed(p))
                    .map(|&p| flow_id(salt, 0, here(p), here(region.0))),
            );
            flows_out.extend(
                args.consumers
                    .iter()
                    .filter(|&&c| timed(c))
                    .map(|&c| flow_id(salt, 0, here(region.0), here(c))),
            );
            waits.clear();
            waits.extend_from_slice(run_of(&by_region.waits, region, |w| w.region));
            flows_in.extend(
                run_of(&by_region.flows_in, region, |f| f.0)
                    .iter()
                    .map(|f| f.1),
            );
            flows_out.extend(run_of(out_cross, region, |c| c.0).iter().map(|c| c.1));
            let failure = by_region.failed(region).map(|f| &held.failed[f]);
            let failed = failure.is_some();
            let mut slice = region_slice(
                index,
                names,
                span,
                SliceArgs {
                    index: region,
                    slot: held.slot,
                    graph_hazards: true,
                    waits,
                    flows_in,
                    flows_out,
                    failed,
                },
            );
            // Where its operations are nested under it (its first timing), its flows bind
            // outside them.
            if (!flows_in.is_empty() || !flows_out.is_empty())
                && by_region.first_span(span.region) == Some(i)
            {
                let ops = (run_of(&by_region.ops, span.region, |o| o.0).iter())
                    .map(|&(_, i)| &held.ops[i as usize].1)
                    .map(|op| (op.start_ns, op.end_ns));
                slice.bind_ns = bind_time(slice.start_ns, slice.end_ns, ops);
            }
            out.region_slice(&slice);
            // Its operations, nested: after it, within its span (under its first timing
            // only, where a run was timed twice).
            if by_region.first_span(span.region) != Some(i) {
                continue;
            }
            let ops = || {
                (run_of(&by_region.ops, span.region, |o| o.0).iter())
                    .map(|&(_, i)| &held.ops[i as usize])
            };
            let failed_op = failure.and_then(|(_, op)| op.as_deref());
            let failed_ops = failed_op.map_or(0, |name| {
                ops()
                    .filter(|(node, op)| op_name(index, op, *node) == name)
                    .count()
            });
            for (node, op) in ops() {
                let within = (span.start_ns, span.end_ns.max(span.start_ns));
                let status = failure.map(|_| op_status(index, op, *node, failed_op, failed_ops));
                write_op_slice(index, out, op, *node, Some(within), status);
            }
        }
        // Operations of regions without a timing: at their own times.
        for (node, op) in &held.ops {
            if by_region.first_span(op.region).is_none() {
                let region = index.region(op.region).index;
                let failed = by_region.failed(region).is_some();
                let status = failed.then_some("region failed");
                write_op_slice(index, out, op, *node, None, status);
            }
        }
    }
}

/// An operation's name as an error names it: its kernel's entry, `fill` or `copy`.
fn op_name(index: &Index, span: &JoinedSpan, node: NodeIndex) -> String {
    let info = index.region(span.region);
    let p = &index.prepared()[info.prepared.0 as usize];
    match index.op(p.runtime, p.graph, node) {
        Some(op) => index.op_name(p.runtime, op),
        None => format!("op {node}"),
    }
}

/// The `status` of an operation's slice in a failed run: `failed here` for the one the
/// error names (`failed here?` when several of the region's have that name, as `view`
/// marks them), `region failed` for the others.
fn op_status(
    index: &Index,
    span: &JoinedSpan,
    node: NodeIndex,
    failed_op: Option<&str>,
    failed_ops: usize,
) -> &'static str {
    match failed_op {
        Some(name) if op_name(index, span, node) == name => {
            if failed_ops > 1 {
                "failed here?"
            } else {
                "failed here"
            }
        }
        _ => "region failed",
    }
}

/// Writes an operation timing's slice (see the module docs), clamped into `within` (its
/// region slice's host span) where given; `status` in a failed run ([`op_status`]).
fn write_op_slice<S: Sink>(
    index: &Index,
    out: &mut Out<S>,
    span: &JoinedSpan,
    node: NodeIndex,
    within: Option<(u64, u64)>,
    status: Option<&'static str>,
) {
    let info = index.region(span.region);
    // Named as `stats` and the Parquet tables name it (copies by lane: `upload`,
    // `download`, `copy` inside a compute graph), so that a query by name finds the same.
    let (_, name) = crate::stats::operation_row(index, span.region, node);
    let (mut start_ns, mut end_ns) = (span.start_ns, span.end_ns.max(span.start_ns));
    if let Some((lo, hi)) = within {
        start_ns = start_ns.clamp(lo, hi);
        end_ns = end_ns.clamp(start_ns, hi);
    }
    let host_ns = span.duration_ns();
    let device_ns = span.device.map(|d| d.end_ns.saturating_sub(d.start_ns));
    let mut args = vec![
        ("runtime", Arg::Uint(span.runtime.0.into())),
        ("submission", Arg::Uint(span.submission.0)),
        ("region", Arg::Uint(info.index.0.into())),
        ("node", Arg::Uint(node.0.into())),
        (
            "clock",
            Arg::Str(Cow::Borrowed(if device_ns.is_some() {
                "device"
            } else {
                "host"
            })),
        ),
        ("duration_ns", Arg::Uint(device_ns.unwrap_or(host_ns))),
    ];
    if let Some(d) = device_ns {
        args.push(("device_ns", Arg::Uint(d)));
    }
    args.push(("host_ns", Arg::Uint(host_ns)));
    if let Some(status) = status {
        args.push(("status", Arg::Str(Cow::Borrowed(status))));
    }
    let slice = Slice {
        runtime: span.runtime,
        place: Place::default(),
        slot: queue_slot(info.queue),
        name: &name,
        category: "operation",
        start_ns,
        end_ns,
        args,
        flows_out: &[],
        flows_in: &[],
    };
    out.counts.operation_slices += 1;
    out.slice(slice);
}

impl<S: Sink> Visitor for Pass<S> {
    fn record(&mut self, index: &Index, record: &Record) {
        if let Some(time_ns) = crate::dump::host_time_ns(record) {
            self.end_ns = self.end_ns.max(time_ns);
            self.start_ns = Some(self.start_ns.map_or(time_ns, |s| s.min(time_ns)));
        }
        // A failed run's slice says so (its `failed` event follows, below).
        if let Record::RegionDone(d) = record
            && let Status::Failed { error } = &d.status
            && let Some(held) = self.held(d.runtime, d.submission)
        {
            let op = crate::failed_operation(error).map(str::to_owned);
            held.failed.push((d.region, op));
        }
        match record {
            Record::FatalSignal(f) => self.fatal.push(*f),
            Record::SessionStart(start) => {
                if !self.out.process_declared {
                    let origin = Origin::new(start, self.out.domain);
                    self.out.place_process(origin);
                }
            }
            Record::HostClock(clock) => self.out.origin.calibrate(clock),
            Record::RuntimeStart(r) => {
                self.out.processes.insert(
                    r.runtime,
                    format!("hrx runtime {} ({}: {})", r.runtime, r.backend, r.device),
                );
            }
            Record::HostSpan(h) => {
                let slice = Slice {
                    runtime: h.runtime,
                    slot: THREAD_SLOT,
                    place: Place::default(),
                    name: h.kind.label(),
                    category: "host",
                    start_ns: h.start_ns,
                    end_ns: h.end_ns.max(h.start_ns),
                    args: [
                        ("runtime", Arg::Uint(h.runtime.0.into())),
                        ("submission", Arg::Uint(h.submission.0)),
                    ]
                    .into_iter()
                    .chain(h.region.map(|r| ("region", Arg::Uint(r.0.into()))))
                    .collect(),
                    flows_out: &[],
                    flows_in: &[],
                };
                self.out.thread_slice(index, h.thread, slice);
            }
            Record::AnnotationRange(a) => {
                let name = index.annotation_name(a.name);
                let slice = Slice {
                    runtime: RuntimeId::default(),
                    slot: THREAD_SLOT,
                    place: Place::default(),
                    name: &name,
                    category: "annotation",
                    start_ns: a.start_ns,
                    end_ns: a.end_ns.max(a.start_ns),
                    args: Vec::new(),
                    flows_out: &[],
                    flows_in: &[],
                };
                self.out.thread_slice(index, a.thread, slice);
            }
            Record::AnnotationMarker(m) => {
                let name = index.annotation_name(m.name);
                let instant = Instant {
                    runtime: RuntimeId::default(),
                    place: Place::default(),
                    slot: THREAD_SLOT,
                    name: &name,
                    time_ns: m.time_ns,
                    args: Vec::new(),
                };
                self.out.marker(index, m.thread, instant);
            }
            Record::CounterSample(c) => {
                if index.annotation_name(c.name) == hrx_capture::schema::HOST_LOAD_COUNTER {
                    self.out.host_load = Some(crate::info::HostLoadSamples::with(
                        self.out.host_load,
                        c.value.0,
                    ));
                }
                self.out.counter(index, c.name, c.time_ns, c.value.0);
                if self.out.error.is_none()
                    && let Some(mark) = host_loaded_instant(index, c)
                {
                    self.out.instant(mark);
                }
            }
            Record::Prepared(p) => self.names.prepared(p),
            Record::GraphOp(_) | Record::KernelLoaded(_) => self.names.generation += 1,
            Record::Submit(s) => {
                if let Some(held) = self.held(s.runtime, s.submission) {
                    held.slot = s.slot;
                }
                self.settle(index, s.runtime, s.submission.0);
            }
            Record::SubmissionDone(d) => {
                if let Some(held) = self.held(d.runtime, d.submission) {
                    held.done = true;
                }
            }
            Record::CrossWait(w) => {
                let (consumer, producer) = (w.submission, w.on_submission);
                match self.held(w.runtime, consumer) {
                    Some(held) => held.waits.push(*w),
                    // Its timing was written already: the slice's hazards miss it too.
                    None => self.out.counts.flows_not_drawn += 1,
                }
                let pair = (consumer, w.region, w.on_region);
                match self.held(w.runtime, producer) {
                    // Kept distinct where its flows are drawn ([`Settled::emit`]): a search
                    // here per wait was quadratic in a large graph's waits.
                    Some(held) => held.waited_by.push(pair),
                    None => self.out.counts.flows_not_drawn += 1,
                }
            }
            other => {
                if self.out.error.is_none()
                    && let Some(instant) = instant(other)
                {
                    self.out.instant(instant);
                }
            }
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let region = index.region(span.region).index;
        match self.held_for_timing(span.runtime, span.submission) {
            Some(held) => {
                held.spans.push((region, *span));
                held.timed.insert(region);
            }
            None => {
                // Its submission was written already: a slice without flows.
                self.out.counts.flows_not_drawn += 1;
                self.names.refresh(index, span.region);
                let args = SliceArgs {
                    index: region,
                    slot: 0,
                    graph_hazards: false,
                    waits: &[],
                    flows_in: &[],
                    flows_out: &[],
                    // Its outcome comes after its timing: not known once its submission
                    // was written.
                    failed: false,
                };
                let slice = region_slice(index, &self.names, span, args);
                self.out.region_slice(&slice);
            }
        }
    }

    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: NodeIndex) {
        match self.held_for_timing(span.runtime, span.submission) {
            Some(held) => held.ops.push((node, *span)),
            // Its submission was written already: at its own times.
            None => write_op_slice(index, &mut self.out, span, node, None, None),
        }
    }
}

/// A region of one submission.
type Key = (RuntimeId, SubmissionIndex, RegionIndex);

/// A flow id, the same for both ends: a mix of the trace (`salt`: its [`Origin::key`], so
/// that traces merged into one file keep their flows apart) and the edge, 53 bits (exact
/// in JSON numbers).
/// A fixed mix (splitmix64's finalizer over the fields), not a keyed hasher: the ids are
/// the same in every run, and cheap at a million flows a second.
fn flow_id(salt: u64, tag: u8, producer: Key, consumer: Key) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let fields = [
        salt,
        u64::from(tag),
        u64::from(producer.0.0),
        producer.1.0,
        u64::from(producer.2.0),
        u64::from(consumer.0.0),
        consumer.1.0,
        u64::from(consumer.2.0),
    ];
    let h = fields
        .iter()
        .fold(0x9e37_79b9_7f4a_7c15, |h, &f| mix(h ^ f).wrapping_add(f));
    (h & ((1 << 53) - 1)).max(1)
}

/// What a region slice has beside its span and region.
struct SliceArgs<'a> {
    /// The region's index in its prepared graph.
    index: RegionIndex,
    slot: u32,
    graph_hazards: bool,
    waits: &'a [CrossWait],
    flows_in: &'a [u64],
    flows_out: &'a [u64],
    failed: bool,
}

fn region_slice<'a>(
    index: &Index,
    names: &'a Names,
    span: &JoinedSpan,
    a: SliceArgs<'a>,
) -> RegionSlice<'a> {
    let region: RegionRef = span.region;
    let info = index.region(region);
    RegionSlice {
        runtime: span.runtime,
        place: Place::default(),
        track: queue_slot(info.queue),
        region,
        label: names.label(region),
        args: &names.regions[region.0 as usize],
        start_ns: span.start_ns,
        end_ns: span.end_ns.max(span.start_ns),
        submission: span.submission.0,
        index: a.index.0,
        slot: a.slot,
        graph_hazards: a.graph_hazards,
        waits: a.waits,
        device_ns: span
            .device
            .map(|device| device.end_ns.saturating_sub(device.start_ns)),
        failed: a.failed,
        flows_out: a.flows_out,
        flows_in: a.flows_in,
        bind_ns: span.start_ns + (span.end_ns.max(span.start_ns) - span.start_ns) / 2,
    }
}

/// The slice of a region still running at the trace's end, with a region slice's
/// arguments (the caller changes them).
fn running_slice<'a>(
    index: &Index,
    names: &'a Names,
    span: &JoinedSpan,
    index_in_graph: RegionIndex,
) -> Slice<'a> {
    let region: RegionRef = span.region;
    let args = &names.regions[region.0 as usize];
    let info = index.region(region);
    let mut list = Vec::with_capacity(10);
    list.extend([
        ("submission", Arg::Uint(span.submission.0)),
        ("region", Arg::Uint(index_in_graph.0.into())),
        ("slot", Arg::Uint(0)),
        ("kind", Arg::Str(Cow::Borrowed(kind_name(args.kind)))),
        ("operations", Arg::Uint(args.operations)),
        ("uses", Arg::Texts(&args.uses, &[])),
        ("hazards", Arg::Texts(&args.hazards, &[])),
    ]);
    if args.internal_edges > 0 {
        list.push(("internal_edges", Arg::Uint(args.internal_edges)));
    }
    if args.copy_bytes > 0 {
        list.push(("copy_bytes", Arg::Uint(args.copy_bytes)));
    }
    Slice {
        runtime: span.runtime,
        place: Place::default(),
        slot: queue_slot(info.queue),
        name: names.label(region),
        category: "region",
        start_ns: span.start_ns,
        end_ns: span.end_ns.max(span.start_ns),
        args: list,
        flows_out: &[],
        flows_in: &[],
    }
}

/// The mark of a trace whose `SessionStart` was lost, at `start_ns` (its first host time,
/// 0 without one) on the `Recorder` track: what is unknown and what its times are on
/// ([`Origin::lost_note`]); `None` where the session was read.
pub(crate) fn session_lost_instant(
    origin: &Origin,
    start_ns: Option<u64>,
    runtime: RuntimeId,
) -> Option<Instant<'static>> {
    let note = origin.lost_note()?;
    Some(Instant {
        runtime,
        place: Place::default(),
        slot: RECORDER_SLOT,
        name: "session record lost",
        time_ns: start_ns.unwrap_or(0),
        args: vec![("detail", Arg::Str(Cow::Owned(note)))],
    })
}

/// The mark an export leaves in its own file for a trace it could not read whole (`trace
/// incomplete` on the recorder's track, at the last host time read, with how the trace ends
/// and what was read), so that whoever opens the file later sees it, not only the warning
/// on standard error at export time; `None` for a trace read whole. Records lost while
/// recording are marked by their own `records lost` event. A trace a recorder was writing
/// (`live`) is not cut short: its mark is `trace being recorded`, read as far as it was
/// written, as `stats` and `diff` say it.
pub(crate) fn incomplete_instant(
    recovery: &Recovery,
    live: bool,
    last_ns: u64,
    runtime: RuntimeId,
) -> Option<Instant<'static>> {
    if recovery.is_complete() {
        return None;
    }
    let (name, end) = if live {
        (
            "trace being recorded",
            "being recorded when exported (a recorder held it): read as far as it was written",
        )
    } else {
        ("trace incomplete", recovery.end())
    };
    let args = vec![
        ("end", Arg::Str(Cow::Borrowed(end))),
        ("records_read", Arg::Uint(recovery.records)),
        ("complete_blocks", Arg::Uint(recovery.complete_blocks)),
        ("skipped_blocks", Arg::Uint(recovery.skipped_blocks)),
        ("skipped_records", Arg::Uint(recovery.skipped_records)),
        // In the sentence every verb explains it with.
        (
            "recovered",
            Arg::Str(Cow::Owned(crate::info::recovered(recovery))),
        ),
    ];
    Some(Instant {
        runtime,
        place: Place::default(),
        slot: RECORDER_SLOT,
        name,
        time_ns: last_ns,
        args,
    })
}

/// The mark of a region whose timing or completion a lossy recording dropped: at its start
/// on its runtime's `Recorder` track, with its submission, region, label and queue (no
/// slice: it did not run on to the trace's end).
pub(crate) fn timing_lost_instant(index: &Index, r: &RunningRegion) -> Instant<'static> {
    Instant {
        runtime: r.runtime,
        place: Place::default(),
        slot: RECORDER_SLOT,
        name: "timing lost (records dropped)",
        time_ns: r.start_ns,
        args: started_region_args(index, r),
    }
}

/// A started region's submission, region and, where its submission was read, label and
/// queue: the arguments of the marks of regions without a timing.
pub(crate) fn started_region_args(
    index: &Index,
    r: &RunningRegion,
) -> Vec<(&'static str, Arg<'static>)> {
    let mut args = vec![
        ("submission", Arg::Uint(r.submission.0)),
        ("region", Arg::Uint(u64::from(r.region.0))),
    ];
    if let Some(region) = r.region_ref {
        if let Some(label) = index.label(region) {
            let label = index.labels()[label.0 as usize].clone();
            args.push(("label", Arg::Str(Cow::Owned(label))));
        }
        let queue = queue_name(index.region(region).queue);
        args.push(("queue", Arg::Str(Cow::Borrowed(queue))));
    } else {
        args.push(("queue", Arg::Str(Cow::Borrowed(UNKNOWN_QUEUE))));
    }
    args
}

/// The signal that ended the recorded process, as a mark on `runtime`'s `Recorder` track
/// (the first runtime's: it is the session's).
pub(crate) fn fatal_instant(f: &FatalSignal, runtime: RuntimeId) -> Instant<'static> {
    let signal = hrx_capture::schema::signal_name(f.signal)
        .map_or_else(|| format!("signal {}", f.signal), str::to_owned);
    let mut args = vec![
        ("signal", Arg::Str(Cow::Owned(signal))),
        (
            "seen_by",
            Arg::Str(Cow::Borrowed(match f.witness {
                SignalWitness::Handler => "the recorder's signal handler, in the process",
                SignalWitness::Parent => "hrx-trace record (the process's parent)",
            })),
        ),
    ];
    if let Some(address) = f.fault_address {
        args.push((
            "fault_address",
            Arg::Str(Cow::Owned(format!("{address:#x}"))),
        ));
    }
    Instant {
        runtime,
        place: Place::default(),
        slot: RECORDER_SLOT,
        name: "fatal signal",
        time_ns: f.time_ns,
        args,
    }
}

/// The mark of a runtime's host-load sample ([`hrx_capture::schema::HOST_LOAD_COUNTER`])
/// at or past the host's CPUs, as `stats`, `diff` and `info` call a host loaded: the counter
/// draws the load, this says in words what it means for the times around it. Of the process,
/// on its own `Recorder (process)` track ([`PROCESS`]), as `records lost`; `None` for any
/// other sample.
pub(crate) fn host_loaded_instant(index: &Index, c: &CounterSample) -> Option<Instant<'static>> {
    let load = c.value.0;
    let loaded = load >= 1.0; // NaN is no load
    if !loaded || index.annotation_name(c.name) != hrx_capture::schema::HOST_LOAD_COUNTER {
        return None;
    }
    let args = vec![
        ("load_per_cpu", Arg::Str(Cow::Owned(format!("{load:.2}")))),
        (
            "meaning",
            Arg::Str(Cow::Borrowed(
                "the host was loaded while recording (1-minute load average per CPU at 1 or \
                 more): host-side times include waits for a CPU",
            )),
        ),
    ];
    Some(Instant {
        runtime: PROCESS,
        place: Place::default(),
        slot: RECORDER_SLOT,
        name: "host loaded",
        time_ns: c.time_ns,
        args,
    })
}

/// The runtime whose events track shows `record`, if it is an instant event.
fn instant_runtime(record: &Record) -> Option<RuntimeId> {
    Some(match record {
        Record::RegionDone(d) if !matches!(d.status, Status::Ok) => d.runtime,
        Record::Quarantine(q) => q.runtime,
        Record::RecordsLost(_) => PROCESS,
        Record::RecorderWait(w) => w.runtime.unwrap_or(PROCESS),
        Record::CaptureFence(f) => f.runtime,
        Record::DigestSpan(d) => d.runtime,
        Record::Poison(p) => p.runtime,
        Record::CopyStreamUnhealthy(c) => c.runtime,
        Record::FaultInjected(f) => f.runtime,
        Record::SubmitRefused(r) => r.runtime,
        Record::TraceRange(r) => r.runtime,
        _ => return None,
    })
}

/// The instant event of a record, if it is one.
fn instant(record: &Record) -> Option<Instant<'_>> {
    fn str(s: &str) -> Arg<'_> {
        Arg::Str(Cow::Borrowed(s))
    }
    let sub = |s: Option<SubmissionIndex>| s.map(|s| ("submission", Arg::Uint(s.0)));
    let region = |r: Option<RegionIndex>| r.map(|r| ("region", Arg::Uint(r.0.into())));
    let runtime = instant_runtime(record)?;
    let (name, time_ns, args) = match record {
        Record::RegionDone(d) => {
            let (name, text) = match &d.status {
                Status::Ok => return None,
                Status::Failed { error } => ("failed", error),
                Status::Cancelled { reason } => ("cancelled", reason),
            };
            let args = vec![
                ("submission", Arg::Uint(d.submission.0)),
                ("region", Arg::Uint(d.region.0.into())),
                ("cause", str(text)),
            ];
            (name, d.time_ns, args)
        }
        Record::Quarantine(q) => {
            let mut args = vec![("prepared", Arg::Uint(q.prepared.0))];
            args.extend(sub(q.submission));
            args.extend(region(q.region));
            args.push(("cause", str(&q.cause)));
            ("quarantine", q.time_ns, args)
        }
        // Session-level: shown on the first runtime's events track, at the count's time.
        Record::RecordsLost(lost) => {
            let kinds = lost
                .by_kind
                .iter()
                .map(|k| Cow::Owned(format!("{} {}", k.kind, k.records)))
                .collect();
            let args = vec![
                ("records", Arg::Uint(lost.total)),
                ("by_kind", Arg::List(kinds)),
                ("lossy_mode", Arg::Str(Cow::Owned(lost.lossy.to_string()))),
            ];
            // A lossy session's mode, written at its first flush before any loss.
            let name = if lost.total == 0 {
                LOSSY_MARK
            } else {
                LOST_MARK
            };
            (name, lost.time_ns, args)
        }
        Record::RecorderWait(w) => {
            let mut args = vec![
                ("thread", Arg::Uint(w.thread.into())),
                ("thread_name", str(&w.thread_name)),
                ("wait_ns", Arg::Uint(w.end_ns.saturating_sub(w.start_ns))),
            ];
            args.extend(sub(w.submission));
            args.extend(region(w.region));
            ("recorder wait", w.start_ns, args)
        }
        // A capture range or a trim: the trace lacks the submissions outside it, said in the
        // file as `info` says it (at the range's opening, and again at its close).
        Record::TraceRange(r) => {
            let mut args = vec![
                (
                    "range",
                    Arg::Str(Cow::Owned(crate::info::range_text(r, false))),
                ),
                ("first_submission", Arg::Uint(r.start.0)),
            ];
            args.extend(r.end.map(|e| ("end_submission", Arg::Uint(e.0))));
            ("trace range", r.time_ns, args)
        }
        Record::CaptureFence(f) => {
            let args = vec![
                ("submission", Arg::Uint(f.submission.0)),
                ("region", Arg::Uint(f.region.0.into())),
                ("buffer", Arg::Uint(f.buffer.0)),
                ("wait_ns", Arg::Uint(f.end_ns.saturating_sub(f.start_ns))),
            ];
            ("capture fence", f.start_ns, args)
        }
        Record::DigestSpan(d) => {
            let args = vec![
                ("submission", Arg::Uint(d.submission.0)),
                ("buffer", Arg::Uint(d.buffer.0)),
                ("start", Arg::Uint(d.start)),
                ("end", Arg::Uint(d.end)),
                ("took_ns", Arg::Uint(d.end_ns.saturating_sub(d.start_ns))),
            ];
            ("output digest", d.start_ns, args)
        }
        Record::Poison(p) => {
            // The failed region that poisoned it (format 1.3 on), as the quarantine's.
            let mut args: Vec<_> = sub(p.submission).into_iter().collect();
            args.extend(region(p.region));
            args.extend([("buffer", Arg::Uint(p.buffer.0)), ("cause", str(&p.cause))]);
            ("poison", p.time_ns, args)
        }
        Record::CopyStreamUnhealthy(c) => {
            let args = vec![
                ("lane", Arg::Str(Cow::Owned(format!("{:?}", c.lane)))),
                ("cause", str(&c.cause)),
            ];
            ("stream unhealthy", c.time_ns, args)
        }
        Record::FaultInjected(f) => {
            let mut args: Vec<_> = sub(f.submission).into_iter().collect();
            args.extend(region(f.region));
            args.push(("description", str(&f.description)));
            ("fault injected", f.time_ns, args)
        }
        Record::SubmitRefused(r) => {
            let name = match r.kind {
                RefusalKind::Busy => "busy",
                RefusalKind::DeviceLost => "device lost",
                RefusalKind::Other => "refused",
            };
            let args = vec![
                ("prepared", Arg::Uint(r.prepared.0)),
                ("reason", str(&r.reason)),
            ];
            (name, r.time_ns, args)
        }
        _ => return None,
    };
    // `view` lists failures, refusals and cancellations; the recorder's own marks go on
    // a track of their own, so that the `Events` track holds what `view` counts.
    let slot = match record {
        Record::RecordsLost(_)
        | Record::TraceRange(_)
        | Record::RecorderWait(_)
        | Record::CaptureFence(_)
        | Record::DigestSpan(_) => RECORDER_SLOT,
        _ => EVENTS_SLOT,
    };
    // An event naming a submission names its runtime too: submission numbers restart per
    // runtime (as region and operation slices do).
    let mut args = args;
    if args.iter().any(|(key, _)| *key == "submission") {
        args.insert(0, ("runtime", Arg::Uint(runtime.0.into())));
    }
    Some(Instant {
        runtime,
        place: Place::default(),
        slot,
        name,
        time_ns,
        args,
    })
}

/// `WAR buf 4 [0..8) on submission 0 region 3` appended to `text`, without `format!`
/// (one per cross-submission wait: about a tenth of an export's instructions went to
/// `fmt`). Plain ASCII: nothing in it needs escaping in JSON.
fn wait_text(text: &mut Vec<u8>, w: &CrossWait) {
    fn number(text: &mut Vec<u8>, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        text.extend_from_slice(&digits[at..]);
    }
    text.extend_from_slice(w.kind.abbreviation().as_bytes());
    text.extend_from_slice(b" buf ");
    number(text, w.buffer.0);
    text.extend_from_slice(b" [");
    number(text, w.start);
    text.extend_from_slice(b"..");
    number(text, w.end);
    text.extend_from_slice(b") on submission ");
    number(text, w.on_submission.0);
    text.extend_from_slice(b" region ");
    number(text, w.on_region.0.into());
}

/// `buf 3 [0..64000) read-write`.
fn use_text(u: &Use) -> String {
    let access = match u.access {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "read-write",
    };
    format!("buf {} [{}..{}) {access}", u.buffer, u.start, u.end)
}

fn kind_name(kind: RegionKind) -> &'static str {
    match kind {
        RegionKind::NativeGraph => "native graph",
        RegionKind::CopyBatch => "copy batch",
        RegionKind::Scoped => "scoped",
        RegionKind::NpuRun => "npu run",
        RegionKind::Host => "host",
    }
}

#[cfg(test)]
mod tests;
