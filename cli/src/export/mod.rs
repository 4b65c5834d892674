//! `hrx-trace export FILE --format chrome|perfetto -o OUT`: a trace as Chrome trace-event
//! JSON ([`chrome`]) or as a Perfetto protobuf `Trace` ([`perfetto`]), both of which
//! Perfetto's UI opens.
//!
//! # What is exported
//!
//! - **Tracks.** Each runtime is a process (`pid` = runtime id); each of its queues on which
//!   a region ran is a track (`GPU Upload`, `GPU Compute`, `GPU Download`, `NPU`, `Host`), and
//!   an `Events` track holds the instant events when there are any.
//! - **Slices.** One per [`RegionTiming`] (host clock, ns in the trace, µs in the JSON),
//!   named by the region's label as in the timeline (`hrx_rgb_to_gray +5`, `upload`), with
//!   arguments: submission, region, kind, the region's buffer ranges (`buf 3 [0..64000)
//!   read-write`) and its hazards (`RAW buf 2 [0..192000) on region 0`). An [`OpTiming`]
//!   becomes a slice nested in its region's.
//! - **Flows** (arrows producer → consumer), one per distinct pair of timed regions: a
//!   region dependency of the prepared graph (`Region::dependencies`, within one
//!   submission) or a [`CrossWait`] (a region waiting on a region of an earlier
//!   submission). Dependencies between operations inside one native graph have no
//!   timings of their own and are listed in the slice's arguments only.
//! - **Instant events** on the `Events` track: failed and cancelled regions, quarantine,
//!   poison, unhealthy copy streams, injected faults and refused submits (`busy`, `device
//!   lost`, `refused`), with the recorded cause.
//!
//! # Streaming
//!
//! Records are in file order, not time order (each thread flushes its own buffer), so the
//! trace is read twice: pass 1 keeps an [`Index`] of the small records that name things
//! (kernels, graph operations, prepared graphs, one entry per submission with a bitset of
//! its timed regions, cross-submission waits); pass 2 streams every timing and event
//! straight to the output. Memory grows with the number of submissions and graphs, never
//! with timings, buffer contents or blobs. Both formats leave ordering to the viewer, which
//! sorts by time.

mod chrome;
mod perfetto;

use crate::args::ExportArgs;
use crate::failure::{Failure, TraceError};
use hrx_capture::TraceReader;
use hrx_capture::schema::{
    Access, CrossWait, Edge, GraphId, KernelId, NodeIndex, OpKind, OpTiming, PreparedId, Queue,
    Record, RefusalKind, RegionIndex, RegionKind, RegionTiming, RuntimeId, Status, SubmissionIndex,
    Use,
};
use hrx_tui::state::{QUEUES, queue_name, queue_slot};
use indicatif::{ProgressBar, ProgressStyle};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Track slot of the `Events` track, after the five queues.
const EVENTS_SLOT: usize = QUEUES.len();

/// Runs `export`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]), an output that cannot be created ([`Failure`]), or
/// a write error.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let file_len = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    let progress = ProgressBar::new(file_len.saturating_mul(2)).with_style(
        ProgressStyle::with_template("{spinner} export {msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    crate::failure::require_rereadable(&args.file, "export")?;
    if args.output.as_os_str() != "-" {
        check_output(&args.output, &args.format)?;
    }
    progress.set_message("indexing");
    let read = Arc::new(AtomicU64::new(0));
    let index = Index::build(open(&args.file, &read, &progress)?, &args.file)?;

    // Pass 2's reader first: an input that cannot be read again (a pipe) must not leave an
    // empty output behind.
    let reader = open(&args.file, &read, &progress)?;
    let to_stdout = args.output.as_os_str() == "-";
    let out: Box<dyn Write> = if to_stdout {
        Box::new(io::stdout().lock())
    } else {
        let file = File::create(&args.output)
            .map_err(|e| Failure::new(format!("{}: {e}", args.output.display())))?;
        Box::new(file)
    };
    let out = BufWriter::with_capacity(256 << 10, out);
    progress.set_message("writing");
    let written = if args.format == "perfetto" {
        write(&index, reader, &args.file, perfetto::Writer::new(out))
    } else {
        write(&index, reader, &args.file, chrome::Writer::new(out))
    };
    let counts = match written {
        Ok(counts) => counts,
        Err(error) if !to_stdout => {
            // A half-written export is not an export: leave nothing rather than a file that
            // does not parse.
            progress.finish_and_clear();
            // The regular file written, through any symlink: never the link itself, nor a
            // device such as `-o /dev/full`.
            let written = std::fs::canonicalize(&args.output)
                .ok()
                .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()));
            let removed = written.is_some_and(|p| std::fs::remove_file(p).is_ok());
            return Err(error.context(format!(
                "cannot write {}{}",
                args.output.display(),
                if removed {
                    " (removed the incomplete file)"
                } else {
                    ""
                }
            )));
        }
        Err(error) => return Err(error),
    };
    progress.finish_and_clear();
    crate::failure::warn_partial(
        &args.file,
        &index.warnings,
        Some(&index.recovery),
        "the export covers only what was recovered",
    );
    if !to_stdout {
        // Written, not printed: a closed standard output is an error `main` treats as
        // success, where `println!` would panic.
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "{}: {} tracks, {} slices, {} flows, {} instant events ({})",
            args.output.display(),
            counts.tracks,
            counts.slices,
            counts.flows,
            counts.instants,
            args.format
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the trace with a reader that advances `progress` by the bytes it reads.
fn open(
    path: &Path,
    read: &Arc<AtomicU64>,
    progress: &ProgressBar,
) -> anyhow::Result<TraceReader<Counting>> {
    let fail = |error| TraceError {
        path: path.to_owned(),
        error,
    };
    let file = hrx_capture::open_file(path).map_err(fail)?;
    let reader = TraceReader::new(Counting {
        inner: file,
        read: read.clone(),
        progress: progress.clone(),
    })
    .map_err(fail)?;
    Ok(reader)
}

/// A file that reports the bytes read to a progress bar.
struct Counting {
    inner: File,
    read: Arc<AtomicU64>,
    progress: ProgressBar,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        self.progress.set_position(total);
        Ok(n)
    }
}

/// A region of one submission.
type RegionRef = (RuntimeId, SubmissionIndex, RegionIndex);

/// One region of a prepared graph, as the export needs it.
#[derive(Debug)]
struct RegionMeta {
    queue: Queue,
    kind: RegionKind,
    nodes: Vec<NodeIndex>,
    uses: Vec<Use>,
    internal_edges: usize,
    copy_bytes: u64,
    /// Edges from earlier regions of the graph.
    dependencies: Vec<Edge>,
    /// Distinct producer regions of `dependencies`.
    producers: Vec<u32>,
    /// Distinct consumer regions (regions whose dependencies name this one).
    consumers: Vec<u32>,
    label: String,
}

#[derive(Debug)]
struct PreparedMeta {
    graph: GraphId,
    regions: Vec<RegionMeta>,
}

/// One submission: its prepared graph and which of its regions were timed.
#[derive(Debug, Default)]
struct SubMeta {
    prepared: Option<PreparedId>,
    slot: u32,
    /// Bits of the timed regions, by region index, for the first [`DENSE_REGIONS`]
    /// regions; a set for the rest (a damaged index costs one entry, not memory up to it).
    timed: Vec<u64>,
    timed_beyond: std::collections::BTreeSet<u32>,
}

/// Regions per submission kept in the bitset.
const DENSE_REGIONS: usize = 4096;

impl SubMeta {
    fn is_timed(&self, region: RegionIndex) -> bool {
        let i = region.0 as usize;
        if i >= DENSE_REGIONS {
            return self.timed_beyond.contains(&region.0);
        }
        self.timed
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set_timed(&mut self, region: RegionIndex) {
        let i = region.0 as usize;
        if i >= DENSE_REGIONS {
            self.timed_beyond.insert(region.0);
            return;
        }
        if self.timed.len() <= i / 64 {
            self.timed.resize(i / 64 + 1, 0);
        }
        self.timed[i / 64] |= 1 << (i % 64);
    }
}

/// Pass 1: everything that names things, small next to the timings.
#[derive(Debug, Default)]
struct Index {
    runtimes: BTreeMap<RuntimeId, String>,
    kernels: HashMap<(RuntimeId, KernelId), String>,
    /// Operation names by (runtime, graph, node): a map, so a damaged node index costs one
    /// entry, not memory up to the index.
    ops: HashMap<(RuntimeId, GraphId, NodeIndex), String>,
    prepared: HashMap<(RuntimeId, PreparedId), PreparedMeta>,
    subs: HashMap<(RuntimeId, SubmissionIndex), SubMeta>,
    /// Cross-submission waits by consumer, and the distinct consumers of each producer.
    waits_on: HashMap<RegionRef, Vec<CrossWait>>,
    waited_by: HashMap<RegionRef, Vec<RegionRef>>,
    /// (consumer, producer) pairs seen, so a repeated wait is found in constant time.
    wait_pairs: std::collections::HashSet<(RegionRef, RegionRef)>,
    /// Per runtime: which tracks (five queues, then events) have something on them.
    used: BTreeMap<RuntimeId, [bool; QUEUES.len() + 1]>,
    warnings: Vec<String>,
    recovery: hrx_capture::Recovery,
}

impl Index {
    fn build(mut reader: TraceReader<Counting>, path: &Path) -> Result<Index, TraceError> {
        let mut index = Index::default();
        for item in reader.by_ref() {
            let (_, record) = item.map_err(|error| TraceError {
                path: path.to_owned(),
                error,
            })?;
            index.ingest(record);
        }
        index.finish();
        index.warnings = reader.warnings().iter().map(|w| w.to_string()).collect();
        index.recovery = *reader.recovery();
        Ok(index)
    }

    fn ingest(&mut self, record: Record) {
        match record {
            Record::RuntimeStart(r) => {
                self.runtimes.insert(
                    r.runtime,
                    format!("hrx runtime {} ({}: {})", r.runtime, r.backend, r.device),
                );
            }
            Record::KernelLoaded(k) => {
                self.kernels.insert((k.runtime, k.kernel), k.entry);
            }
            Record::GraphOp(op) => {
                let name = match op.op {
                    OpKind::Kernel { kernel } | OpKind::Npu { kernel } => {
                        format!("\0{}", kernel.0)
                    }
                    OpKind::Fill { .. } => "fill".into(),
                    OpKind::Copy => "copy".into(),
                    OpKind::Scoped => "scoped".into(),
                    OpKind::Host => "host".into(),
                };
                self.ops.insert((op.runtime, op.graph, op.node), name);
            }
            Record::Prepared(p) => {
                let mut regions: Vec<RegionMeta> = p
                    .regions
                    .into_iter()
                    .map(|r| {
                        let mut producers: Vec<u32> =
                            r.dependencies.iter().map(|e| e.producer).collect();
                        producers.sort_unstable();
                        producers.dedup();
                        RegionMeta {
                            queue: r.queue,
                            kind: r.kind,
                            nodes: r.nodes,
                            uses: r.uses,
                            internal_edges: r.internal_edges.len(),
                            copy_bytes: r.copy_bytes,
                            dependencies: r.dependencies,
                            producers,
                            consumers: Vec::new(),
                            label: String::new(),
                        }
                    })
                    .collect();
                for consumer in 0..regions.len() {
                    for p in regions[consumer].producers.clone() {
                        if let Some(producer) = regions.get_mut(p as usize) {
                            producer.consumers.push(consumer as u32);
                        }
                    }
                }
                self.prepared.insert(
                    (p.runtime, p.prepared),
                    PreparedMeta {
                        graph: p.graph,
                        regions,
                    },
                );
            }
            Record::Submit(s) => {
                let sub = self.subs.entry((s.runtime, s.submission)).or_default();
                sub.prepared = Some(s.prepared);
                sub.slot = s.slot;
            }
            Record::RegionTiming(t) => {
                self.subs
                    .entry((t.runtime, t.submission))
                    .or_default()
                    .set_timed(t.region);
            }
            Record::CrossWait(w) => {
                let consumer = (w.runtime, w.submission, w.region);
                let producer = (w.runtime, w.on_submission, w.on_region);
                self.waits_on.entry(consumer).or_default().push(w);
                if self.wait_pairs.insert((consumer, producer)) {
                    self.waited_by.entry(producer).or_default().push(consumer);
                }
            }
            other => {
                if let Some(event) = Instant::of(&other) {
                    self.used.entry(event.runtime).or_default()[EVENTS_SLOT] = true;
                }
            }
        }
    }

    /// Labels the regions and marks the queues that have slices.
    fn finish(&mut self) {
        let keys: Vec<_> = self.prepared.keys().copied().collect();
        for key in keys {
            let graph = self.prepared[&key].graph;
            let labels: Vec<String> = self.prepared[&key]
                .regions
                .iter()
                .map(|r| self.region_label(key.0, graph, r))
                .collect();
            let prepared = self.prepared.get_mut(&key).expect("key from the map");
            for (region, label) in prepared.regions.iter_mut().zip(labels) {
                region.label = label;
            }
        }
        for (&(runtime, _), sub) in &self.subs {
            let Some(prepared) = sub.prepared.and_then(|p| self.prepared.get(&(runtime, p))) else {
                continue;
            };
            for (i, region) in prepared.regions.iter().enumerate() {
                if sub.is_timed(RegionIndex(i as u32)) {
                    self.used.entry(runtime).or_default()[queue_slot(region.queue)] = true;
                }
            }
        }
    }

    /// The name of operation `node` of `graph`.
    fn op_name(&self, runtime: RuntimeId, graph: GraphId, node: NodeIndex) -> Option<String> {
        let name = self.ops.get(&(runtime, graph, node))?;
        Some(match name.strip_prefix('\0') {
            Some(kernel) => {
                let id = KernelId(kernel.parse().unwrap_or(u64::MAX));
                self.kernels
                    .get(&(runtime, id))
                    .cloned()
                    .unwrap_or_else(|| format!("kernel {kernel}"))
            }
            None => name.clone(),
        })
    }

    /// The region's label, as the timeline names it (see `hrx_tui`'s model): the main
    /// kernel's name (`+N` other operations), or `upload`/`download`/`copy` for copies.
    fn region_label(&self, runtime: RuntimeId, graph: GraphId, region: &RegionMeta) -> String {
        let names: Vec<(bool, String)> = region
            .nodes
            .iter()
            .filter_map(|&n| {
                let raw = self.ops.get(&(runtime, graph, n))?;
                Some((raw.starts_with('\0'), self.op_name(runtime, graph, n)?))
            })
            .collect();
        hrx_tui::state::label_region(region.kind, region.queue, &names)
    }

    /// The submission, prepared graph and region meta of a timed region.
    fn region(&self, key: RegionRef) -> Option<(&SubMeta, &PreparedMeta, &RegionMeta)> {
        let sub = self.subs.get(&(key.0, key.1))?;
        let prepared = self.prepared.get(&(key.0, sub.prepared?))?;
        let region = prepared.regions.get(key.2.0 as usize)?;
        Some((sub, prepared, region))
    }

    fn timed(&self, key: RegionRef) -> bool {
        self.subs
            .get(&(key.0, key.1))
            .is_some_and(|s| s.is_timed(key.2))
    }

    /// Every track with something on it, in (runtime, slot) order.
    fn tracks(&self) -> Vec<Track> {
        let mut tracks = Vec::new();
        for (&runtime, used) in &self.used {
            let process = self
                .runtimes
                .get(&runtime)
                .cloned()
                .unwrap_or_else(|| format!("hrx runtime {runtime}"));
            for (slot, _) in used.iter().enumerate().filter(|(_, used)| **used) {
                let name = QUEUES.get(slot).map_or("Events", |&q| queue_name(q));
                tracks.push(Track {
                    runtime,
                    slot,
                    name: name.to_owned(),
                    process: process.clone(),
                });
            }
        }
        tracks
    }
}

/// A timeline row: one queue of one runtime, or its events.
#[derive(Clone, Debug)]
pub(crate) struct Track {
    pub runtime: RuntimeId,
    /// 0..5: the queue's position in [`QUEUES`]; 5: events.
    pub slot: usize,
    pub name: String,
    /// The runtime's display name.
    pub process: String,
}

impl Track {
    /// A stable number for the track: Chrome's `tid`, the base of Perfetto's uuid.
    pub fn tid(&self) -> u32 {
        self.slot as u32 + 1
    }

    /// Perfetto track uuid.
    pub fn uuid(&self) -> u64 {
        process_uuid(self.runtime) | (self.slot as u64 + 1)
    }
}

/// Perfetto uuid of the process track of `runtime`.
pub(crate) fn process_uuid(runtime: RuntimeId) -> u64 {
    (u64::from(runtime.0) + 1) << 8
}

/// A slice argument.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Uint(u64),
    Str(String),
    List(Vec<String>),
}

/// A slice (a timed region or operation).
#[derive(Debug)]
pub(crate) struct Slice<'a> {
    pub runtime: RuntimeId,
    pub slot: usize,
    pub name: Cow<'a, str>,
    pub category: &'static str,
    pub start_ns: u64,
    pub end_ns: u64,
    pub args: Vec<(&'static str, Arg)>,
    /// Flows starting here.
    pub flows_out: Vec<u64>,
    /// Flows ending here.
    pub flows_in: Vec<u64>,
}

/// An instant event.
#[derive(Debug)]
pub(crate) struct Instant {
    pub runtime: RuntimeId,
    pub name: &'static str,
    pub time_ns: u64,
    pub args: Vec<(&'static str, Arg)>,
}

impl Instant {
    /// The instant event of a record, if it is one.
    fn of(record: &Record) -> Option<Instant> {
        let sub = |s: Option<SubmissionIndex>| s.map(|s| ("submission", Arg::Uint(s.0)));
        let region = |r: Option<RegionIndex>| r.map(|r| ("region", Arg::Uint(r.0.into())));
        let (runtime, name, time_ns, args) = match record {
            Record::RegionDone(d) => {
                let (name, text) = match &d.status {
                    Status::Ok => return None,
                    Status::Failed { error } => ("failed", error),
                    Status::Cancelled { reason } => ("cancelled", reason),
                };
                let args = vec![
                    ("submission", Arg::Uint(d.submission.0)),
                    ("region", Arg::Uint(d.region.0.into())),
                    ("cause", Arg::Str(text.clone())),
                ];
                (d.runtime, name, d.time_ns, args)
            }
            Record::Quarantine(q) => {
                let mut args = vec![("prepared", Arg::Uint(q.prepared.0))];
                args.extend(sub(q.submission));
                args.extend(region(q.region));
                args.push(("cause", Arg::Str(q.cause.clone())));
                (q.runtime, "quarantine", q.time_ns, args)
            }
            // Session-level: shown on the first runtime's events track, at the count's time.
            Record::RecordsLost(lost) => {
                let kinds = lost
                    .by_kind
                    .iter()
                    .map(|k| format!("{} {}", k.kind, k.records))
                    .collect();
                let args = vec![
                    ("records", Arg::Uint(lost.total)),
                    ("by_kind", Arg::List(kinds)),
                    ("lossy_mode", Arg::Str(lost.lossy.to_string())),
                ];
                (RuntimeId(0), "records lost", lost.time_ns, args)
            }
            Record::RecorderWait(w) => {
                let mut args = vec![
                    ("thread", Arg::Uint(w.thread.into())),
                    ("thread_name", Arg::Str(w.thread_name.clone())),
                    ("wait_ns", Arg::Uint(w.end_ns.saturating_sub(w.start_ns))),
                ];
                args.extend(sub(w.submission));
                args.extend(region(w.region));
                (
                    w.runtime.unwrap_or_default(),
                    "recorder wait",
                    w.start_ns,
                    args,
                )
            }
            Record::CaptureFence(f) => {
                let args = vec![
                    ("submission", Arg::Uint(f.submission.0)),
                    ("region", Arg::Uint(f.region.0.into())),
                    ("buffer", Arg::Uint(f.buffer.0)),
                    ("wait_ns", Arg::Uint(f.end_ns.saturating_sub(f.start_ns))),
                ];
                (f.runtime, "capture fence", f.start_ns, args)
            }
            Record::Poison(p) => {
                let args = vec![
                    ("buffer", Arg::Uint(p.buffer.0)),
                    ("cause", Arg::Str(p.cause.clone())),
                ];
                (p.runtime, "poison", p.time_ns, args)
            }
            Record::CopyStreamUnhealthy(c) => {
                let args = vec![
                    ("lane", Arg::Str(format!("{:?}", c.lane))),
                    ("cause", Arg::Str(c.cause.clone())),
                ];
                (c.runtime, "stream unhealthy", c.time_ns, args)
            }
            Record::FaultInjected(f) => {
                let mut args: Vec<_> = sub(f.submission).into_iter().collect();
                args.extend(region(f.region));
                args.push(("description", Arg::Str(f.description.clone())));
                (f.runtime, "fault injected", f.time_ns, args)
            }
            Record::SubmitRefused(r) => {
                let name = match r.kind {
                    RefusalKind::Busy => "busy",
                    RefusalKind::DeviceLost => "device lost",
                    RefusalKind::Other => "refused",
                };
                let args = vec![
                    ("prepared", Arg::Uint(r.prepared.0)),
                    ("reason", Arg::Str(r.reason.clone())),
                ];
                (r.runtime, name, r.time_ns, args)
            }
            _ => return None,
        };
        Some(Instant {
            runtime,
            name,
            time_ns,
            args,
        })
    }
}

/// Refuses an output that is a directory, or an existing non-empty file that is not an
/// earlier export in `format` (Chrome JSON starts `{"traceEvents":`, a Perfetto trace with
/// its first packet's tag, 0x0a): `-o` naming a trace, a photograph or a README by mistake
/// must not destroy it.
fn check_output(path: &std::path::Path, format: &str) -> Result<(), Failure> {
    crate::record::refuse_special(path, "export")?;
    if path.is_dir() {
        return Err(Failure::new(format!(
            "cannot write the export to {}: it is a directory",
            path.display()
        ))
        .hint("give -o a file name, e.g. -o trace.json"));
    }
    const CHROME: &[u8] = b"{\"traceEvents\"";
    crate::record::refuse_overwrite(path, &format!("a {format} export"), |head| match format {
        "perfetto" => head.first() == Some(&0x0a),
        _ => head.starts_with(CHROME) || CHROME.starts_with(head),
    })
}

/// What an output format does with the stream of tracks, slices and instants.
pub(crate) trait Sink {
    /// Declares every track, before anything else.
    fn tracks(&mut self, tracks: &[Track]) -> io::Result<()>;
    /// Writes one slice.
    fn slice(&mut self, slice: &Slice<'_>) -> io::Result<()>;
    /// Writes one instant event.
    fn instant(&mut self, instant: &Instant) -> io::Result<()>;
    /// Ends the output and flushes it.
    fn finish(self) -> io::Result<()>;
}

/// What was written.
#[derive(Debug, Default)]
struct Counts {
    tracks: usize,
    slices: u64,
    flows: u64,
    instants: u64,
}

/// Pass 2: streams every timing and event of `reader` into `sink`.
fn write(
    index: &Index,
    mut reader: TraceReader<Counting>,
    path: &Path,
    mut sink: impl Sink,
) -> anyhow::Result<Counts> {
    let tracks = index.tracks();
    sink.tracks(&tracks)?;
    let mut counts = Counts {
        tracks: tracks.len(),
        ..Counts::default()
    };
    for item in reader.by_ref() {
        let (_, record) = item.map_err(|error| TraceError {
            path: path.to_owned(),
            error,
        })?;
        match &record {
            Record::RegionTiming(t) => {
                if let Some(slice) = region_slice(index, t) {
                    counts.slices += 1;
                    counts.flows += slice.flows_out.len() as u64;
                    sink.slice(&slice)?;
                }
            }
            Record::OpTiming(t) => {
                if let Some(slice) = op_slice(index, t) {
                    counts.slices += 1;
                    sink.slice(&slice)?;
                }
            }
            other => {
                if let Some(instant) = Instant::of(other) {
                    counts.instants += 1;
                    sink.instant(&instant)?;
                }
            }
        }
    }
    sink.finish()?;
    Ok(counts)
}

/// A flow id, the same for both ends: a hash of the edge, 53 bits (exact in JSON numbers).
fn flow_id(tag: u8, producer: RegionRef, consumer: RegionRef) -> u64 {
    let mut h = DefaultHasher::new();
    (tag, producer, consumer).hash(&mut h);
    (h.finish() & ((1 << 53) - 1)).max(1)
}

fn region_slice<'a>(index: &'a Index, t: &RegionTiming) -> Option<Slice<'a>> {
    let key = (t.runtime, t.submission, t.region);
    let (sub, _, region) = index.region(key)?;
    let here = |r: u32| (t.runtime, t.submission, RegionIndex(r));
    let mut flows_in: Vec<u64> = region
        .producers
        .iter()
        .filter(|&&p| sub.is_timed(RegionIndex(p)))
        .map(|&p| flow_id(0, here(p), key))
        .collect();
    let mut flows_out: Vec<u64> = region
        .consumers
        .iter()
        .filter(|&&c| sub.is_timed(RegionIndex(c)))
        .map(|&c| flow_id(0, key, here(c)))
        .collect();
    let mut hazards: Vec<String> = region
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
    if let Some(waits) = index.waits_on.get(&key) {
        let mut seen = Vec::new();
        for w in waits {
            hazards.push(format!(
                "{} buf {} [{}..{}) on submission {} region {}",
                w.kind.abbreviation(),
                w.buffer,
                w.start,
                w.end,
                w.on_submission,
                w.on_region
            ));
            let producer = (w.runtime, w.on_submission, w.on_region);
            if !seen.contains(&producer) && index.timed(producer) {
                seen.push(producer);
                flows_in.push(flow_id(1, producer, key));
            }
        }
    }
    if let Some(consumers) = index.waited_by.get(&key) {
        flows_out.extend(
            consumers
                .iter()
                .filter(|&&c| index.timed(c))
                .map(|&c| flow_id(1, key, c)),
        );
    }
    let uses = region.uses.iter().map(use_text).collect();
    let mut args = vec![
        ("submission", Arg::Uint(t.submission.0)),
        ("region", Arg::Uint(t.region.0.into())),
        ("slot", Arg::Uint(sub.slot.into())),
        ("kind", Arg::Str(kind_name(region.kind).to_owned())),
        ("operations", Arg::Uint(region.nodes.len() as u64)),
        ("uses", Arg::List(uses)),
        ("hazards", Arg::List(hazards)),
    ];
    if region.internal_edges > 0 {
        args.push(("internal_edges", Arg::Uint(region.internal_edges as u64)));
    }
    if region.copy_bytes > 0 {
        args.push(("copy_bytes", Arg::Uint(region.copy_bytes)));
    }
    if let Some(device) = t.device {
        args.push((
            "device_ns",
            Arg::Uint(device.end_ns.saturating_sub(device.start_ns)),
        ));
    }
    Some(Slice {
        runtime: t.runtime,
        slot: queue_slot(region.queue),
        name: Cow::Borrowed(&region.label),
        category: "region",
        start_ns: t.start_ns,
        end_ns: t.end_ns.max(t.start_ns),
        args,
        flows_out,
        flows_in,
    })
}

fn op_slice<'a>(index: &'a Index, t: &OpTiming) -> Option<Slice<'a>> {
    let r = &t.timing;
    let (_, prepared, region) = index.region((r.runtime, r.submission, r.region))?;
    let name = index
        .op_name(r.runtime, prepared.graph, t.node)
        .unwrap_or_else(|| format!("op {}", t.node));
    Some(Slice {
        runtime: r.runtime,
        slot: queue_slot(region.queue),
        name: Cow::Owned(name),
        category: "operation",
        start_ns: r.start_ns,
        end_ns: r.end_ns.max(r.start_ns),
        args: vec![
            ("submission", Arg::Uint(r.submission.0)),
            ("region", Arg::Uint(r.region.0.into())),
            ("node", Arg::Uint(t.node.0.into())),
        ],
        flows_out: Vec::new(),
        flows_in: Vec::new(),
    })
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
mod tests {
    use super::*;

    #[test]
    fn timed_bitset_grows_past_one_word() {
        let mut sub = SubMeta::default();
        sub.set_timed(RegionIndex(3));
        sub.set_timed(RegionIndex(70));
        assert!(sub.is_timed(RegionIndex(3)) && sub.is_timed(RegionIndex(70)));
        assert!(!sub.is_timed(RegionIndex(4)) && !sub.is_timed(RegionIndex(200)));
    }

    #[test]
    fn flow_ids_fit_json_numbers_and_tell_edges_apart() {
        let a = (RuntimeId(1), SubmissionIndex(2), RegionIndex(0));
        let b = (RuntimeId(1), SubmissionIndex(2), RegionIndex(1));
        assert!(flow_id(0, a, b) < 1 << 53);
        assert_ne!(flow_id(0, a, b), flow_id(0, b, a));
        assert_ne!(flow_id(0, a, b), flow_id(1, a, b));
        assert_eq!(flow_id(1, a, b), flow_id(1, a, b));
    }
}
