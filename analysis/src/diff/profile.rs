//! The first pass of `diff` over one trace: per kernel statistics, per region duration
//! sketches, and what the second pass needs to key outputs and outcomes (prepared graphs by
//! rank, each graph's writing uses, how often each was submitted).

use super::align::{Fingerprint, OpShape, RegionShape, Signature, kernel_params, signature};
use super::range::{Held, common, held, holds};
use super::{DiffError, Side};
use crate::hash::IdMap;
use crate::index::RegionRef;
use crate::matching::{RegionKey, ranks, runtime_ranks};
use crate::scan::{
    JoinedSpan, JoinedSubmission, Outcome, Visitor, scan_reader_threaded, scan_records,
};
use crate::sketch::Sketch;
use crate::stats::{AnnotationStats, KernelStats, OperationTimes, StatsVisitor, Timings};
use crate::{Index, ScanSummary};
use hrx_capture::schema::{
    Access, BufferId, GraphId, GraphOp, KernelId, OutputDigest, Placement, PreparedId, Record,
    RuntimeId, SessionStart, SubmissionIndex, Submit, TraceRange,
};
use hrx_capture::{ReadError, Recovery, TraceReader, Warning};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// (runtime id, graph id) → (node, use, buffer, start, end) of every writing use.
type Writes = IdMap<(RuntimeId, GraphId), Vec<(u32, u32, u64, u64, u64)>>;

/// Where an operation is, independent of ids: its graph (runtime rank, prepared graph rank,
/// as [`RegionKey`]), its name (a kernel's entry, or `fill`, `copy`, ...) and which of the
/// graph's operations of that name it is (`nth`, from 0, in node order): the k-th `hrx_blur`
/// of a graph stays the k-th when another kernel is added before it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpKey {
    /// The runtime's rank.
    pub runtime: u32,
    /// The prepared graph's rank.
    pub prepared: u64,
    /// The operation's name.
    pub name: String,
    /// Its place among the graph's operations of that name, from 0.
    pub nth: u32,
}

/// An operation of a prepared graph: where it is and the durations of its timed runs.
#[derive(Clone, Debug, Default)]
pub struct OpProfile {
    /// Its region's index in the prepared graph.
    pub region: u32,
    /// Its node (index in its graph).
    pub node: u32,
    /// Its timings (none where the trace has no operation timings).
    pub timings: Timings,
}

/// What one trace holds for `diff`, gathered in one bounded pass ([`profile`]).
#[derive(Debug)]
pub struct Profile {
    /// Per kernel (label), by name.
    pub kernels: BTreeMap<String, KernelStats>,
    /// Per operation name (kernel entry, `fill`, `copy`), from operation timings (empty
    /// without them), by name.
    pub op_kernels: BTreeMap<String, KernelStats>,
    /// The region labels of `kernels` whose regions' operations were timed: `op_kernels`
    /// has their operations.
    pub op_timed_labels: BTreeSet<String>,
    /// Every operation of every prepared graph, timed or not.
    pub operations: BTreeMap<OpKey, OpProfile>,
    /// What the trace holds of operation timings.
    pub op_times: OperationTimes,
    /// The application's annotation ranges (format 1.14), by name.
    pub annotations: BTreeMap<String, AnnotationStats>,
    /// Every region of every prepared graph: its label and the durations of its timed runs.
    pub regions: BTreeMap<RegionKey, (String, Sketch)>,
    /// `Submit` records.
    pub submissions: u64,
    /// The session record (the recorded command line), the last one read.
    pub session: Option<SessionStart>,
    /// How the file ended.
    pub recovery: Option<Recovery>,
    /// Damage, skipped parts and gaps in submission numbers.
    pub warnings: Vec<Warning>,
    /// Spans and ranges that end before they start (crafted or damaged times), each taken
    /// as 0 ns long ([`ScanSummary::ends_before_start`]).
    pub ends_before_start: u64,
    /// Records naming submissions whose `Submit` the trace lacks ([`ScanSummary::unjoined`]).
    pub unjoined: [u64; 3],
    /// Whether a recorder still held the file as it was read (set by the caller, which
    /// asks; `false` from [`profile`]): its end is then not yet written, which the verdict
    /// says as such, not as a recording that was cut short.
    pub being_recorded: bool,
    /// The highest of the runtimes' `hrx: host load per CPU` samples (1 or more: recorded on
    /// a loaded host, its host-side times include waits for a CPU); `None` without any.
    pub host_load_max: Option<f64>,
    /// How often each prepared graph (runtime rank, graph rank) was submitted.
    pub shape: BTreeMap<(u32, u64), u64>,
    /// The submissions a range recording or a trim holds, per runtime rank (of runtimes
    /// that submitted) with a [`TraceRange`] record (see [`crate::diff::common_range`]);
    /// empty for a whole recording.
    pub ranges: BTreeMap<u32, Held>,
    /// Each prepared graph's (runtime rank, graph rank) [`Signature`]: its shape and what
    /// it computes.
    pub(super) graphs: BTreeMap<(u32, u64), Signature>,
    /// Each prepared graph's (runtime rank, graph rank) [`Fingerprint`]: what it read and
    /// wrote, which tells graphs of one signature apart ([`super::align`]).
    pub(super) fingerprints: BTreeMap<(u32, u64), Fingerprint>,
    pub(super) places: Places,
}

/// What keys outputs and outcomes in the second pass.
#[derive(Debug, Default)]
pub(super) struct Places {
    pub(super) graph_of: IdMap<(RuntimeId, PreparedId), GraphId>,
    pub(super) writes: Writes,
    /// (runtime id, graph id, node) → xxh3 of its operation's name and which of the
    /// graph's operations of that name it is ([`super::Place::Op`]); by key, not by a vector
    /// indexed by node (a crafted node number would size it).
    pub(super) op_ids: IdMap<(RuntimeId, GraphId, u32), (u64, u32)>,
    /// (runtime id, graph id, name id) → the graph's operations of that name so far.
    pub(super) op_names: IdMap<(RuntimeId, GraphId, u64), u32>,
    pub(super) prepared_rank: HashMap<(RuntimeId, PreparedId), u64>,
    /// Runtime ranks of outputs: over runtimes that submitted or digested.
    pub(super) output_runtime: HashMap<RuntimeId, u32>,
    /// Runtime ranks of outcomes: over runtimes that submitted.
    pub(super) outcome_runtime: HashMap<RuntimeId, u32>,
    /// Runtime ranks of prepared graphs: over runtimes that prepared one.
    pub(super) graph_runtime: HashMap<RuntimeId, u32>,
    /// `Submit` records per prepared graph.
    pub(super) submits: IdMap<(RuntimeId, PreparedId), u64>,
    /// Submissions per prepared graph with a recorded outcome (`SubmissionDone`).
    pub(super) done: IdMap<(RuntimeId, PreparedId), u64>,
    /// The prepared graph of each submission in flight (submitted, no outcome yet): as many
    /// as the runtime has in flight, not one per submission.
    pub(super) in_flight: IdMap<(RuntimeId, u64), PreparedId>,
    /// The submissions held, per runtime with a [`TraceRange`] record.
    pub(super) held: HashMap<RuntimeId, Held>,
}

impl Places {
    /// The rank of a prepared graph; one without its `Prepared` record (a damaged trace)
    /// ranks after every known one, by id.
    pub(super) fn rank(&self, runtime: RuntimeId, prepared: PreparedId) -> u64 {
        self.prepared_rank
            .get(&(runtime, prepared))
            .copied()
            .unwrap_or((u64::MAX >> 1).saturating_add(prepared.0))
    }

    /// How often each prepared graph (runtime rank, graph rank) was submitted.
    pub(super) fn shape(&self) -> BTreeMap<(u32, u64), u64> {
        self.per_graph(&self.submits)
    }

    /// Submissions with a recorded outcome per prepared graph (runtime rank, graph rank).
    pub(super) fn done(&self) -> BTreeMap<(u32, u64), u64> {
        self.per_graph(&self.done)
    }

    /// `counts` by (runtime rank, graph rank).
    fn per_graph(&self, counts: &IdMap<(RuntimeId, PreparedId), u64>) -> BTreeMap<(u32, u64), u64> {
        let mut shape = BTreeMap::new();
        for (&(runtime, prepared), &count) in counts {
            let runtime_rank = self.output_runtime.get(&runtime).copied();
            let key = (
                runtime_rank.unwrap_or(u32::MAX),
                self.rank(runtime, prepared),
            );
            *shape.entry(key).or_default() += count;
        }
        shape
    }
}

#[derive(Default)]
struct ProfileVisitor {
    stats: StatsVisitor,
    session: Option<SessionStart>,
    places: Places,
    digest_runtimes: BTreeSet<RuntimeId>,
    /// Runtimes whose `RuntimeStart` the trace holds: ranked whether or not they did
    /// anything yet (see `finish`).
    started_runtimes: BTreeSet<RuntimeId>,
    /// Every operation of every graph, for what each graph computes ([`signature`]).
    ops: IdMap<(RuntimeId, GraphId), Vec<GraphOp>>,
    /// Each loaded kernel's [`kernel_params`].
    kernels: IdMap<(RuntimeId, KernelId), u64>,
    /// Each buffer's placement, for what each graph computes ([`signature`]).
    placements: IdMap<(RuntimeId, BufferId), Placement>,
    ranges: Vec<TraceRange>,
    /// The submissions whose timings and outcomes are kept, per runtime named (others:
    /// all): the submissions both traces hold ([`limit_timings`]).
    timed: IdMap<RuntimeId, Held>,
    /// Per live buffer, the host's writes to it so far (`HostWrite`, and a range's
    /// `BufferSnapshot`), folded in order: xxh3 of the fold before and the write's range and
    /// digest ([`Fingerprint::inputs`]).
    host_written: IdMap<(RuntimeId, BufferId), u64>,
    /// Per prepared graph submitted, its first submission's number and its [`Fingerprint`]
    /// so far: memory per graph, not per submission.
    computed: IdMap<(RuntimeId, PreparedId), (u64, Fingerprint)>,
}

impl ProfileVisitor {
    /// Whether the submission's timings and outcomes are kept.
    fn times(&self, runtime: RuntimeId, submission: SubmissionIndex) -> bool {
        self.timed
            .get(&runtime)
            .is_none_or(|held| holds(held, submission.0))
    }

    /// Folds a host write (or a snapshot) of `buffer[offset..offset + len_bytes]` whose
    /// bytes hash to `xxh3` into what the host wrote to the buffer.
    fn host_write(&mut self, runtime: RuntimeId, buffer: BufferId, range: (u64, u64), xxh3: u64) {
        let fold = self.host_written.entry((runtime, buffer)).or_default();
        let mut h = Xxh3::new();
        (*fold, range, xxh3).hash(&mut h);
        *fold = h.finish();
    }

    /// [`Fingerprint::inputs`] of `prepared` as it is submitted first: what the host wrote
    /// so far to the buffers its operations read, by use; `None` where it reads none the
    /// host wrote (or its graph is unknown).
    fn inputs(&self, runtime: RuntimeId, prepared: PreparedId) -> Option<u64> {
        let graph = self.places.graph_of.get(&(runtime, prepared))?;
        let mut h = Xxh3::new();
        let mut any = false;
        for op in self.ops.get(&(runtime, *graph)).into_iter().flatten() {
            for (i, u) in op.uses.iter().enumerate() {
                if u.access == Access::Write {
                    continue;
                }
                if let Some(written) = self.host_written.get(&(runtime, u.buffer)) {
                    (op.node.0, i as u32, u.start, u.end, *written).hash(&mut h);
                    any = true;
                }
            }
        }
        any.then(|| h.finish())
    }
}

impl Visitor for ProfileVisitor {
    fn record(&mut self, index: &Index, record: &Record) {
        self.stats.record(index, record);
        match record {
            Record::SessionStart(s) => self.session = Some(s.clone()),
            Record::GraphOp(op) => {
                let graph = self
                    .places
                    .writes
                    .entry((op.runtime, op.graph))
                    .or_default();
                for (i, u) in op.uses.iter().enumerate() {
                    if u.access != Access::Read {
                        graph.push((op.node.0, i as u32, u.buffer.0, u.start, u.end));
                    }
                }
                // `Place::op_ids`'s rule, one operation at a time (they come in node order).
                let (name, _) = super::Place::op_ids([index.op_name(op.runtime, &op.op)])[0];
                let places = &mut self.places;
                let count = places
                    .op_names
                    .entry((op.runtime, op.graph, name))
                    .or_default();
                places
                    .op_ids
                    .insert((op.runtime, op.graph, op.node.0), (name, *count));
                *count += 1;
                self.ops
                    .entry((op.runtime, op.graph))
                    .or_default()
                    .push(op.clone());
            }
            Record::KernelLoaded(k) => {
                self.kernels.insert((k.runtime, k.kernel), kernel_params(k));
            }
            Record::BufferCreated(b) => {
                self.placements.insert((b.runtime, b.buffer), b.placement);
            }
            Record::BufferDropped(b) => {
                self.host_written.remove(&(b.runtime, b.buffer));
            }
            Record::HostWrite(w) => {
                let range = (w.offset, w.len_bytes);
                self.host_write(w.runtime, w.buffer, range, w.xxh3);
            }
            Record::BufferSnapshot(w) => {
                let range = (w.offset, w.len_bytes);
                self.host_write(w.runtime, w.buffer, range, w.xxh3);
            }
            Record::Prepared(p) => {
                self.places
                    .graph_of
                    .insert((p.runtime, p.prepared), p.graph);
            }
            Record::Submit(s) => {
                *self
                    .places
                    .submits
                    .entry((s.runtime, s.prepared))
                    .or_default() += 1;
                self.places
                    .in_flight
                    .insert((s.runtime, s.submission.0), s.prepared);
            }
            Record::OutputDigest(d) => {
                self.digest_runtimes.insert(d.runtime);
            }
            Record::RuntimeStart(r) => {
                self.started_runtimes.insert(r.runtime);
            }
            Record::SubmissionDone(d) => {
                let key = (d.runtime, d.submission.0);
                if let Some(prepared) = self.places.in_flight.remove(&key) {
                    *self.places.done.entry((d.runtime, prepared)).or_default() += 1;
                }
            }
            Record::TraceRange(r) => self.ranges.push(r.clone()),
            _ => {}
        }
    }

    /// A graph's first submission, once joined to its `Prepared` (so its operations are
    /// known): what its reads hold now ([`Fingerprint::inputs`]).
    fn submitted(&mut self, _: &Index, _: &JoinedSubmission, s: &Submit) {
        let key = (s.runtime, s.prepared);
        if !self.computed.contains_key(&key) {
            let inputs = self.inputs(s.runtime, s.prepared);
            let print = Fingerprint {
                inputs,
                ..Fingerprint::default()
            };
            self.computed.insert(key, (s.submission.0, print));
        }
    }

    /// A digest joined to its submission, into its graph's [`Fingerprint`].
    fn output(
        &mut self,
        index: &Index,
        _: u64,
        d: &OutputDigest,
        submission: Option<&JoinedSubmission>,
    ) {
        let Some(prepared) = submission.and_then(|s| s.prepared) else {
            return;
        };
        let id = index.prepared()[prepared.0 as usize].id;
        if let Some((first, print)) = self.computed.get_mut(&(d.runtime, id)) {
            print.add_output(d.start, d.end, d.xxh3, d.submission.0 == *first);
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        if self.times(span.runtime, span.submission) {
            self.stats.span(index, span);
        }
    }

    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: hrx_capture::schema::NodeIndex) {
        if self.times(span.runtime, span.submission) {
            self.stats.op_span(index, span, node);
        }
    }

    fn region_outcome(
        &mut self,
        index: &Index,
        region: &crate::scan::JoinedRegion,
        outcome: Outcome,
        time_ns: u64,
    ) {
        let s = &region.submission;
        if self.times(s.runtime, s.submission) {
            self.stats.region_outcome(index, region, outcome, time_ns);
        }
    }

    fn outcome(
        &mut self,
        index: &Index,
        submission: &crate::scan::JoinedSubmission,
        previous: Option<Outcome>,
        outcome: Outcome,
    ) {
        if self.times(submission.runtime, submission.submission) {
            self.stats.outcome(index, submission, previous, outcome);
        }
    }
}

impl ProfileVisitor {
    fn finish(mut self, summary: ScanSummary) -> Profile {
        let index = &summary.index;
        let region_ranks = ranks(index.prepared().iter().map(|p| (p.runtime, p.id)));
        let mut regions = BTreeMap::new();
        let durations = self.stats.region_durations(index);
        for p in index.prepared() {
            let (runtime, prepared) = region_ranks[&(p.runtime, p.id)];
            for r in p.regions.clone() {
                let region = RegionRef(r);
                let label = index
                    .label(region)
                    .map_or_else(String::new, |l| index.labels()[l.0 as usize].clone());
                let key = RegionKey {
                    runtime,
                    prepared,
                    region: index.region(region).index.0,
                };
                let sketch = durations.get(r as usize).cloned().unwrap_or_default();
                regions.insert(key, (label, sketch));
            }
        }
        // Every operation by graph, name and place among the graph's of that name.
        let op_durations = self.stats.op_durations(index);
        let mut operations = BTreeMap::new();
        let mut op_timed_labels = BTreeSet::new();
        for p in index.prepared() {
            let (runtime, prepared) = region_ranks[&(p.runtime, p.id)];
            let mut nodes: Vec<(u32, RegionRef)> = p
                .regions
                .clone()
                .flat_map(|r| {
                    let region = RegionRef(r);
                    index
                        .region(region)
                        .nodes
                        .iter()
                        .map(move |n| (n.0, region))
                })
                .collect();
            nodes.sort_unstable();
            let mut seen: HashMap<String, u32> = HashMap::new();
            for (node, region) in nodes {
                let node = hrx_capture::schema::NodeIndex(node);
                let Some(op) = index.op(p.runtime, p.graph, node) else {
                    continue;
                };
                // As `stats` lists it: a copy by its lane (`upload`, `download`, `copy`).
                let name = index.listed_op_name(p.runtime, op, index.region(region).queue);
                let nth = seen.entry(name.clone()).or_default();
                let key = OpKey {
                    runtime,
                    prepared,
                    name,
                    nth: *nth,
                };
                *nth += 1;
                let timings = op_durations.get(&(region, node)).cloned();
                if timings.is_some()
                    && let Some(label) = index.label(region)
                {
                    op_timed_labels.insert(index.labels()[label.0 as usize].clone());
                }
                let op = OpProfile {
                    region: index.region(region).index.0,
                    node: node.0,
                    timings: timings.unwrap_or_default(),
                };
                operations.insert(key, op);
            }
        }
        let places = &mut self.places;
        places.prepared_rank = ranks(places.graph_of.keys().copied())
            .into_iter()
            .map(|(k, (_, rank))| (k, rank))
            .collect();
        // Runtimes rank among those the trace started as well as those that did the work
        // ranked: a runtime created first and used last has done nothing where a recording
        // was cut, and ranking only the busy ones compared the cut's second runtime with
        // the whole run's first (a false regression: a break-it pass). Untraced runtimes a
        // program made first have no `RuntimeStart`: they shift no rank.
        let started = self.started_runtimes.iter().copied();
        places.graph_runtime =
            runtime_ranks(places.graph_of.keys().map(|k| k.0).chain(started.clone()));
        // A runtime whose range kept no submission (one that never opened) still holds a
        // range: ranked, so that `diff` compares nothing there rather than reading the
        // trace as whole.
        let ranged = self.ranges.iter().map(|r| r.runtime);
        let submitting = || {
            (places.submits.keys().map(|k| k.0))
                .chain(ranged.clone())
                .chain(started.clone())
        };
        places.outcome_runtime = runtime_ranks(submitting());
        places.output_runtime =
            runtime_ranks(submitting().chain(self.digest_runtimes.iter().copied()));
        let shape = places.shape();
        places.held = held(&self.ranges);
        let ranges = places
            .held
            .iter()
            .filter_map(|(runtime, held)| {
                let rank = places.outcome_runtime.get(runtime)?;
                Some((*rank, held.clone()))
            })
            .collect();
        let mut graphs = BTreeMap::new();
        for p in index.prepared() {
            let regions = p.regions.clone().map(|r| {
                let region = RegionRef(r);
                let info = index.region(region);
                let label = index.label(region);
                RegionShape {
                    label: label.map_or("", |l| index.labels()[l.0 as usize].as_str()),
                    queue: info.queue,
                    engine: info.engine,
                    kind: info.kind,
                    nodes: &info.nodes,
                }
            });
            let ops: Vec<OpShape<'_>> = (self.ops.get(&(p.runtime, p.graph)).into_iter())
                .flatten()
                .map(|op| OpShape {
                    node: op.node.0,
                    op: &op.op,
                    lane: op.lane,
                    uses: &op.uses,
                })
                .collect();
            let kernel = |k| self.kernels.get(&(p.runtime, k)).copied();
            let placement = |b| self.placements.get(&(p.runtime, b)).copied();
            graphs.insert(
                region_ranks[&(p.runtime, p.id)],
                signature(regions, &ops, kernel, placement),
            );
        }
        let fingerprints = (index.prepared().iter())
            .map(|p| {
                let print = self.computed.get(&(p.runtime, p.id));
                (
                    region_ranks[&(p.runtime, p.id)],
                    print.map(|c| c.1).unwrap_or_default(),
                )
            })
            .collect();
        let mut stats = std::mem::take(&mut self.stats).finish(&summary);
        let annotations = std::mem::take(&mut stats.annotations)
            .into_iter()
            .map(|a| (a.name.clone(), a))
            .collect();
        let op_kernels = std::mem::take(&mut stats.operations)
            .into_iter()
            .map(|o| (o.stats.name.clone(), o.stats))
            .collect();
        let host_load_max = stats
            .counters
            .iter()
            .find(|c| c.name == hrx_capture::schema::HOST_LOAD_COUNTER)
            .map(|c| c.max);
        let unjoined = summary.unjoined();
        Profile {
            host_load_max,
            op_kernels,
            op_timed_labels,
            operations,
            op_times: stats.op_times,
            annotations,
            // Copies and host callbacks are compared as kernels are (`stats` lists them
            // apart).
            kernels: stats
                .kernels
                .into_iter()
                .chain(stats.copy_labels)
                .chain(stats.host_callbacks)
                .map(|k| (k.name.clone(), k))
                .collect(),
            regions,
            submissions: summary.submissions,
            session: self.session,
            recovery: summary.recovery,
            warnings: summary.warnings,
            ends_before_start: summary.ends_before_start,
            being_recorded: false,
            unjoined,
            shape,
            ranges,
            graphs,
            fingerprints,
            places: self.places,
        }
    }
}
/// The first pass over the trace at `path` (see the module docs). Gaps in submission
/// numbers are warnings, as the timeline reports them.
///
/// # Errors
///
/// The reader's [`ReadError`]: the file cannot be opened, has no valid header, or a part
/// that must be read is unusable.
pub fn profile(path: &Path) -> Result<Profile, ReadError> {
    profile_timed(path, IdMap::default())
}

/// [`profile`] with the timings and outcomes of only the submissions `timed` names, per
/// runtime named.
fn profile_timed(path: &Path, timed: IdMap<RuntimeId, Held>) -> Result<Profile, ReadError> {
    let reader = TraceReader::open(path)?.check_submission_numbers();
    let mut visitor = ProfileVisitor {
        timed,
        ..ProfileVisitor::default()
    };
    let summary = scan_reader_threaded(reader, &mut visitor)?;
    Ok(visitor.finish(summary))
}

/// [`profile`] of records held in memory (tests).
pub fn profile_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Profile {
    profile_records_timed(records, IdMap::default())
}

fn profile_records_timed<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    timed: IdMap<RuntimeId, Held>,
) -> Profile {
    let mut visitor = ProfileVisitor {
        timed,
        ..ProfileVisitor::default()
    };
    let summary = scan_records(records, &mut visitor);
    visitor.finish(summary)
}

impl Profile {
    /// `compared` (per runtime rank, [`common`]) per runtime id of this trace: runtimes of
    /// neither trace's ranges are not named (compared whole).
    pub(super) fn by_runtime_id(&self, compared: &BTreeMap<u32, Held>) -> IdMap<RuntimeId, Held> {
        self.places
            .outcome_runtime
            .iter()
            .filter_map(|(id, rank)| Some((*id, compared.get(rank)?.clone())))
            .collect()
    }

    /// What the trace holds of the submissions of runtime `rank`: its range, or every
    /// submission.
    fn holds(&self, rank: u32) -> Held {
        self.ranges
            .get(&rank)
            .cloned()
            .unwrap_or_else(|| vec![(0, u64::MAX)])
    }
}

/// Where either trace holds a range (a range recording, a trim), limits both profiles'
/// timings (kernels and region durations; also the submission and region outcomes its
/// statistics count) to the submissions both hold ([`common`]), the rule outputs and
/// outcomes are compared by: a whole run diffed against its trim compares only the trim's
/// submissions' timings. A side that holds more than that is read again with only those
/// (one more pass over that side; none where neither holds a range, or where a side holds
/// only what both hold). Call it before [`super::align`], which renumbers new's graphs.
///
/// # Errors
///
/// [`DiffError`]: a part of a trace read again is unusable.
pub fn limit_timings(
    (base, base_path): (&mut Profile, &Path),
    (new, new_path): (&mut Profile, &Path),
) -> Result<(), DiffError> {
    limit(base, new, |side, timed| {
        let (path, error): (_, fn(ReadError) -> DiffError) = match side {
            Side::Base => (base_path, DiffError::Base),
            Side::New => (new_path, DiffError::New),
        };
        profile_timed(path, timed).map_err(error)
    })
}

/// [`limit_timings`] of records held in memory (tests).
pub fn limit_timings_records(
    (base, base_records): (&mut Profile, &[Record]),
    (new, new_records): (&mut Profile, &[Record]),
) {
    // Records in memory: reading them again cannot fail.
    let _ = limit(base, new, |side, timed| {
        let records = match side {
            Side::Base => base_records,
            Side::New => new_records,
        };
        Ok(profile_records_timed(records, timed))
    });
}

/// [`limit_timings`], each side read again by `again`.
fn limit(
    base: &mut Profile,
    new: &mut Profile,
    mut again: impl FnMut(Side, IdMap<RuntimeId, Held>) -> Result<Profile, DiffError>,
) -> Result<(), DiffError> {
    let Some(compared) = common(&base.ranges, &new.ranges) else {
        return Ok(());
    };
    for (side, profile) in [(Side::Base, base), (Side::New, new)] {
        // Of its own runtimes: a runtime only the other trace has times nothing here.
        let more = profile.places.outcome_runtime.values().any(|&rank| {
            compared
                .get(&rank)
                .is_some_and(|both| profile.holds(rank) != *both)
        });
        if more {
            let timed = again(side, profile.by_runtime_id(&compared))?;
            profile.kernels = timed.kernels;
            profile.regions = timed.regions;
            profile.op_kernels = timed.op_kernels;
            profile.op_timed_labels = timed.op_timed_labels;
            profile.operations = timed.operations;
            profile.op_times = timed.op_times;
        }
    }
    Ok(())
}
