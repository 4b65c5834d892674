//! What `hrx-trace diff` reads of two traces, in memory proportional to graphs, buffers,
//! kernels and labels, never to submissions or regions (issue 21, point 2).
//!
//! Two streaming passes over each trace:
//!
//! 1. [`profile`]: the one pass of [`crate::scan`](mod@crate::scan) with a
//!    [`crate::StatsVisitor`] (per kernel statistics, the numbers `stats` prints) and per
//!    region duration [`Sketch`]es, keyed by [`RegionKey`] ([`crate::matching`], the rule
//!    `replay` uses too); with what the second
//!    pass needs to place outputs: prepared graphs by rank, each graph's writing uses, and how
//!    often each prepared graph was submitted (the *shape*).
//! 2. [`match_files`]: both traces read at once, each on a thread of its own, walked in step
//!    by how many `Submit` records each has read: submission outcomes and output digests are
//!    keyed as they arrive and matched against the other side's pending keys. Keys wait in a
//!    window of at most [`MATCH_WINDOW`] per side; traces with the same submission sequence
//!    keep it nearly empty. Where the sequences differ (another run length, graphs submitted
//!    in another order) a key can leave the window unmatched: it is counted one-sided, and
//!    [`Matched::unmatched_past_window`] says how many were, never silently.
//!
//! Between the passes, [`align`] gives the new trace's prepared graphs the base's ranks where
//! a runtime of each prepared the same graph structures in another order (graphs built
//! concurrently by several threads).
//!
//! Outputs are keyed as `diff` documents: by (runtime rank, prepared graph rank, the
//! submission's index among its graph's submissions, the first operation and use writing
//! the range, byte range) when both traces submitted the same prepared graphs (however
//! often each: a graph's extra submissions are one-sided, never paired with another
//! graph's), else by submission number. Outcomes are keyed alike, without the place.
//! A graph's n-th submission is counted in file order: a thread's records are written in
//! order, so a graph submitted from one thread is counted in submission order, and one
//! submitted from several threads has no order common to two runs anyway. A submission is
//! kept joinable for [`LIVE_WINDOW`] submits after its own; a digest or completion arriving
//! later than that (a hashing thread that many submissions behind) is counted in
//! [`Matched::late_records`] and compared as if its submit were missing.

use crate::compare::{Digest, DigestMatch, OutcomeMatch, digests, outcomes};
use crate::hash::IdMap;
use crate::index::RegionRef;
use crate::matching::{RegionKey, ranks, runtime_ranks};
use crate::scan::{JoinedSpan, Outcome, Visitor, scan_reader_threaded, scan_records};
use crate::sketch::Sketch;
use crate::stats::{KernelStats, StatsVisitor};
use crate::{Index, ScanSummary};
use hrx_capture::schema::{
    Access, GraphId, OutputDigest, PreparedId, Record, RuntimeId, SessionStart, SubmissionIndex,
};
use hrx_capture::{ReadError, Recovery, TraceReader, Warning};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::Hash;
use std::path::Path;

/// Submissions kept joinable after their `Submit` (see the module docs).
pub const LIVE_WINDOW: usize = 1 << 16;

/// Digests and completions kept waiting for their `Submit`.
pub const PARK_LIMIT: usize = 1 << 16;

/// Keys of one kind (outputs, outcomes) kept waiting for the other side, per side: far more
/// than the sides' lag in step (a few batches of 1,024), so only keys of sequences that
/// differ leave it.
pub const MATCH_WINDOW: usize = 1 << 18;

/// Where an output lives, independent of buffer ids: the first operation of the submitted
/// graph (node, then use index) that writes exactly that buffer range. Buffer ids depend on
/// how a run allocated. A digest whose graph is not known keeps its buffer id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    /// Node and use index in the graph.
    Use(u32, u32),
    /// Raw buffer id, when the operation writing the range is unknown.
    Buffer(u64),
}

/// The graph rank of an output whose submit the trace lacks, or of every output keyed by
/// submission number.
pub const UNKNOWN_GRAPH: u64 = u64::MAX;

/// An output's key: (runtime rank, prepared graph rank or [`UNKNOWN_GRAPH`], the
/// submission's index among its graph's submissions or its number, place, start, end).
pub type OutputKey = (u32, u64, u64, Place, u64, u64);

/// An output as recorded: (xxh3, buffer id, submission number).
pub type OutputValue = (u64, u64, u64);

/// A submission's key, keyed as outputs are: (runtime rank, prepared graph rank or
/// [`UNKNOWN_GRAPH`], the submission's index among its graph's submissions or its number).
pub type SubmissionKey = (u32, u64, u64);

/// (runtime id, graph id) → (node, use, buffer, start, end) of every writing use.
type Writes = IdMap<(RuntimeId, GraphId), Vec<(u32, u32, u64, u64, u64)>>;

/// What one trace holds for `diff`, gathered in one bounded pass ([`profile`]).
#[derive(Debug)]
pub struct Profile {
    /// Per kernel (label), by name.
    pub kernels: BTreeMap<String, KernelStats>,
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
    /// How often each prepared graph (runtime rank, graph rank) was submitted.
    pub shape: BTreeMap<(u32, u64), u64>,
    /// Each prepared graph's structure (runtime rank, graph rank) → [`signature`].
    graphs: BTreeMap<(u32, u64), u64>,
    places: Places,
}

/// What keys outputs and outcomes in the second pass.
#[derive(Debug, Default)]
struct Places {
    graph_of: IdMap<(RuntimeId, PreparedId), GraphId>,
    writes: Writes,
    prepared_rank: HashMap<(RuntimeId, PreparedId), u64>,
    /// Runtime ranks of outputs: over runtimes that submitted or digested.
    output_runtime: HashMap<RuntimeId, u32>,
    /// Runtime ranks of outcomes: over runtimes that submitted.
    outcome_runtime: HashMap<RuntimeId, u32>,
    /// Runtime ranks of prepared graphs: over runtimes that prepared one.
    graph_runtime: HashMap<RuntimeId, u32>,
    /// `Submit` records per prepared graph.
    submits: IdMap<(RuntimeId, PreparedId), u64>,
}

impl Places {
    /// The rank of a prepared graph; one without its `Prepared` record (a damaged trace)
    /// ranks after every known one, by id.
    fn rank(&self, runtime: RuntimeId, prepared: PreparedId) -> u64 {
        self.prepared_rank
            .get(&(runtime, prepared))
            .copied()
            .unwrap_or((u64::MAX >> 1).saturating_add(prepared.0))
    }

    /// How often each prepared graph (runtime rank, graph rank) was submitted.
    fn shape(&self) -> BTreeMap<(u32, u64), u64> {
        let mut shape = BTreeMap::new();
        for (&(runtime, prepared), &count) in &self.submits {
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
            }
            Record::OutputDigest(d) => {
                self.digest_runtimes.insert(d.runtime);
            }
            _ => {}
        }
    }

    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        self.stats.span(index, span);
    }

    fn outcome(
        &mut self,
        index: &Index,
        runtime: RuntimeId,
        submission: SubmissionIndex,
        previous: Option<Outcome>,
        outcome: Outcome,
    ) {
        self.stats
            .outcome(index, runtime, submission, previous, outcome);
    }
}

impl ProfileVisitor {
    fn finish(mut self, summary: ScanSummary) -> Profile {
        let index = &summary.index;
        let region_ranks = ranks(index.prepared().iter().map(|p| (p.runtime, p.id)));
        let mut regions = BTreeMap::new();
        let durations = self.stats.region_durations();
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
        let places = &mut self.places;
        places.prepared_rank = ranks(places.graph_of.keys().copied())
            .into_iter()
            .map(|(k, (_, rank))| (k, rank))
            .collect();
        places.graph_runtime = runtime_ranks(places.graph_of.keys().map(|k| k.0));
        let submitting = || places.submits.keys().map(|k| k.0);
        places.outcome_runtime = runtime_ranks(submitting());
        places.output_runtime =
            runtime_ranks(submitting().chain(self.digest_runtimes.iter().copied()));
        let shape = places.shape();
        let mut graphs = BTreeMap::new();
        for p in index.prepared() {
            let labels = p.regions.clone().map(|r| {
                let label = index.label(RegionRef(r));
                label.map_or("", |l| index.labels()[l.0 as usize].as_str())
            });
            let writes = places.writes.get(&(p.runtime, p.graph));
            graphs.insert(
                region_ranks[&(p.runtime, p.id)],
                signature(labels, writes.map_or(&[][..], Vec::as_slice)),
            );
        }
        let stats = std::mem::take(&mut self.stats).finish(&summary);
        Profile {
            // Copies are compared as kernels are (`stats` lists them apart).
            kernels: stats
                .kernels
                .into_iter()
                .chain(stats.copy_labels)
                .map(|k| (k.name.clone(), k))
                .collect(),
            regions,
            submissions: summary.submissions,
            session: self.session,
            recovery: summary.recovery,
            warnings: summary.warnings,
            shape,
            graphs,
            places: self.places,
        }
    }
}

/// A prepared graph's structure as one number: xxh3 of its regions' labels in order and
/// its writing uses (node, use, byte range; not buffer ids, which depend on allocation).
fn signature<'a>(
    labels: impl Iterator<Item = &'a str>,
    writes: &[(u32, u32, u64, u64, u64)],
) -> u64 {
    let mut bytes = Vec::new();
    for label in labels {
        bytes.extend_from_slice(label.as_bytes());
        bytes.push(0);
    }
    let mut writes: Vec<(u32, u32, u64, u64)> =
        writes.iter().map(|w| (w.0, w.1, w.3, w.4)).collect();
    writes.sort_unstable();
    for (node, use_, start, end) in writes {
        bytes.extend_from_slice(&node.to_le_bytes());
        bytes.extend_from_slice(&use_.to_le_bytes());
        bytes.extend_from_slice(&start.to_le_bytes());
        bytes.extend_from_slice(&end.to_le_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Gives `new`'s prepared graphs `base`'s ranks where the two runtimes prepared the same
/// graphs in another order; returns how many of `new`'s graphs changed rank.
///
/// Graphs are ranked by id, the order a program prepared them in; graphs prepared
/// concurrently by several threads take ids in whatever order the threads ran, so the same
/// program recorded twice can rank them differently and the ranks pair the wrong graphs.
/// Where a runtime of each trace holds the same graph structures (`signature`: labels
/// and writing uses) in another order, a graph is matched by its structure instead: the
/// k-th graph of a structure in `new` takes the rank of the k-th of that structure in
/// `base` (graphs of one structure keep their id order: nothing tells them apart). Where
/// the structures differ (another program), ranks stay by id, so a graph built differently
/// reads as relabelled regions.
pub fn align(base: &Profile, new: &mut Profile) -> u64 {
    let by_runtime = |p: &Profile| {
        let mut out: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for (&(runtime, rank), &sig) in &p.graphs {
            out.entry(runtime).or_default().push((rank, sig));
        }
        out
    };
    let (b, n) = (by_runtime(base), by_runtime(new));
    // (runtime rank, new's rank) → base's rank, for the graphs that move.
    let mut moved: HashMap<(u32, u64), u64> = HashMap::new();
    for (runtime, new_graphs) in &n {
        let Some(base_graphs) = b.get(runtime) else {
            continue;
        };
        let sigs = |g: &[(u64, u64)]| g.iter().map(|x| x.1).collect::<Vec<_>>();
        let (bs, ns) = (sigs(base_graphs), sigs(new_graphs));
        let sorted = |mut v: Vec<u64>| {
            v.sort_unstable();
            v
        };
        if bs == ns || sorted(bs) != sorted(ns) {
            continue;
        }
        let mut base_of: HashMap<u64, VecDeque<u64>> = HashMap::new();
        for &(rank, sig) in base_graphs {
            base_of.entry(sig).or_default().push_back(rank);
        }
        for &(rank, sig) in new_graphs {
            if let Some(to) = base_of.get_mut(&sig).and_then(VecDeque::pop_front)
                && to != rank
            {
                moved.insert((*runtime, rank), to);
            }
        }
    }
    if moved.is_empty() {
        return 0;
    }
    let rerank = |runtime: u32, rank: u64| moved.get(&(runtime, rank)).copied().unwrap_or(rank);
    new.regions = std::mem::take(&mut new.regions)
        .into_iter()
        .map(|(k, v)| {
            let prepared = rerank(k.runtime, k.prepared);
            (RegionKey { prepared, ..k }, v)
        })
        .collect();
    new.graphs = std::mem::take(&mut new.graphs)
        .into_iter()
        .map(|((runtime, rank), sig)| ((runtime, rerank(runtime, rank)), sig))
        .collect();
    let places = &mut new.places;
    for ((runtime, _), rank) in places.prepared_rank.iter_mut() {
        if let Some(&r) = places.graph_runtime.get(runtime) {
            *rank = rerank(r, *rank);
        }
    }
    new.shape = places.shape();
    moved.len() as u64
}

/// The first pass over the trace at `path` (see the module docs). Gaps in submission
/// numbers are warnings, as the timeline reports them.
///
/// # Errors
///
/// The reader's [`ReadError`]: the file cannot be opened, has no valid header, or a part
/// that must be read is unusable.
pub fn profile(path: &Path) -> Result<Profile, ReadError> {
    let reader = TraceReader::open(path)?.check_submission_numbers();
    let mut visitor = ProfileVisitor::default();
    let summary = scan_reader_threaded(reader, &mut visitor)?;
    Ok(visitor.finish(summary))
}

/// [`profile`] of records held in memory (tests).
pub fn profile_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Profile {
    let mut visitor = ProfileVisitor::default();
    let summary = scan_records(records, &mut visitor);
    visitor.finish(summary)
}

/// An output digest that differs between the two traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DifferingOutput {
    /// Its key.
    pub key: OutputKey,
    /// The base trace's digest, buffer and submission.
    pub base: OutputValue,
    /// The new trace's.
    pub new: OutputValue,
}

/// A submission whose outcome changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangedOutcome {
    /// Its key.
    pub key: SubmissionKey,
    /// Its submission number in the base trace, in the new.
    pub submission: [u64; 2],
    /// The base trace's outcome.
    pub base: Outcome,
    /// The new trace's.
    pub new: Outcome,
}

/// The second pass's counts and rows (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matched {
    /// Whether outputs and outcomes were keyed by graph and index (both traces submitted
    /// the same prepared graphs, however often each), else by submission number.
    pub by_graph: bool,
    /// Outputs compared and equal.
    pub identical: u64,
    /// Outputs compared and different, in key order.
    pub differing: Vec<DifferingOutput>,
    /// Outputs only in base, only in new.
    pub outputs_one_sided: [u64; 2],
    /// Submissions whose outcomes were compared.
    pub outcomes_compared: u64,
    /// Submissions on both sides with no recorded outcome on one of them: not compared.
    pub outcomes_unknown: u64,
    /// Submissions whose outcome changed, in key order.
    pub changed: Vec<ChangedOutcome>,
    /// Submissions only in base, only in new.
    pub submissions_one_sided: [u64; 2],
    /// Keys (outputs and submissions) of base, of new, that left the match window
    /// unmatched, included in the one-sided counts: where the submission sequences differ,
    /// some may have been matched by a pass holding every key (see the module docs).
    pub unmatched_past_window: [u64; 2],
    /// Digests and completions of base, of new, that arrived more than [`LIVE_WINDOW`]
    /// submits after their own submission, or waited for it past [`PARK_LIMIT`].
    pub late_records: [u64; 2],
    /// The most keys waiting in the match windows at once (both sides, both kinds).
    pub peak_pending: usize,
}

/// What the side threads hand over: keyed items and the `Submit` records read so far.
enum Event {
    Output(OutputKey, OutputValue),
    /// The outcome, if recorded, and the submission number.
    Outcome(SubmissionKey, (Option<Outcome>, u64)),
}

struct Batch {
    events: Vec<Event>,
    /// `Submit` records read.
    submits: u64,
    /// Events sent, this batch's included.
    sent: u64,
}

/// Events per batch, and submits between batches at most.
const BATCH: usize = 1024;

/// Batches a side runs ahead of the merge.
const BATCHES_AHEAD: usize = 4;

#[derive(Clone, Copy)]
struct Live {
    prepared: PreparedId,
    nth: u64,
    outcome: Option<Outcome>,
}

/// One trace's second pass: keys outputs and outcomes as records arrive.
struct Side<'a> {
    places: &'a Places,
    by_graph: bool,
    live: IdMap<(RuntimeId, SubmissionIndex), Live>,
    order: VecDeque<(RuntimeId, SubmissionIndex)>,
    /// The highest submission number retired from `live`, per runtime.
    retired: IdMap<RuntimeId, u64>,
    nth: IdMap<(RuntimeId, PreparedId), u64>,
    parked_outcomes: IdMap<(RuntimeId, SubmissionIndex), Outcome>,
    parked_digests: IdMap<(RuntimeId, SubmissionIndex), Vec<OutputDigest>>,
    parked_order: VecDeque<(RuntimeId, SubmissionIndex)>,
    parked_count: usize,
    late: u64,
    submits: u64,
    events: Vec<Event>,
}

impl<'a> Side<'a> {
    fn new(places: &'a Places, by_graph: bool) -> Side<'a> {
        Side {
            places,
            by_graph,
            live: IdMap::default(),
            order: VecDeque::new(),
            retired: IdMap::default(),
            nth: IdMap::default(),
            parked_outcomes: IdMap::default(),
            parked_digests: IdMap::default(),
            parked_order: VecDeque::new(),
            parked_count: 0,
            late: 0,
            submits: 0,
            events: Vec::new(),
        }
    }

    /// Whether `key`'s submission was already retired: a record naming it now is late.
    fn is_retired(&self, key: (RuntimeId, SubmissionIndex)) -> bool {
        self.retired.get(&key.0).is_some_and(|&r| key.1.0 <= r)
    }

    fn push(&mut self, record: &Record) {
        match record {
            Record::Submit(s) => {
                self.submits += 1;
                let key = (s.runtime, s.submission);
                let nth = self.nth.entry((s.runtime, s.prepared)).or_default();
                let live = Live {
                    prepared: s.prepared,
                    nth: *nth,
                    outcome: self.parked_outcomes.remove(&key),
                };
                *nth += 1;
                self.live.insert(key, live);
                self.order.push_back(key);
                if let Some(parked) = self.parked_digests.remove(&key) {
                    self.parked_count -= parked.len();
                    for d in parked {
                        self.output(&d, Some(live));
                    }
                }
                while self.live.len() > LIVE_WINDOW {
                    self.retire_oldest();
                }
            }
            Record::SubmissionDone(d) => {
                let key = (d.runtime, d.submission);
                if let Some(live) = self.live.get_mut(&key) {
                    live.outcome = Some(Outcome::of(&d.status));
                } else if self.is_retired(key) || self.parked_outcomes.len() >= PARK_LIMIT {
                    self.late += 1;
                } else {
                    self.parked_outcomes.insert(key, Outcome::of(&d.status));
                }
            }
            Record::OutputDigest(d) => {
                let key = (d.runtime, d.submission);
                if let Some(&live) = self.live.get(&key) {
                    self.output(d, Some(live));
                } else if self.is_retired(key) {
                    self.late += 1;
                    self.output(d, None);
                } else {
                    self.park(d);
                }
            }
            _ => {}
        }
    }

    fn retire_oldest(&mut self) {
        while let Some(key) = self.order.pop_front() {
            if let Some(live) = self.live.remove(&key) {
                let retired = self.retired.entry(key.0).or_default();
                *retired = (*retired).max(key.1.0);
                self.outcome(key, live);
                return;
            }
        }
    }

    fn park(&mut self, d: &OutputDigest) {
        while self.parked_count >= PARK_LIMIT {
            let Some(oldest) = self.parked_order.pop_front() else {
                break;
            };
            for d in self.parked_digests.remove(&oldest).into_iter().flatten() {
                self.parked_count -= 1;
                self.late += 1;
                self.output(&d, None);
            }
        }
        let key = (d.runtime, d.submission);
        let waiting = self.parked_digests.entry(key).or_default();
        if waiting.is_empty() {
            self.parked_order.push_back(key);
        }
        waiting.push(d.clone());
        self.parked_count += 1;
    }

    /// Keys a retired submission's outcome as its outputs are keyed.
    fn outcome(&mut self, key: (RuntimeId, SubmissionIndex), live: Live) {
        let p = self.places;
        let runtime = p.outcome_runtime.get(&key.0).copied().unwrap_or(u32::MAX);
        let (graph, nth) = if self.by_graph {
            (p.rank(key.0, live.prepared), live.nth)
        } else {
            (UNKNOWN_GRAPH, key.1.0)
        };
        self.events.push(Event::Outcome(
            (runtime, graph, nth),
            (live.outcome, key.1.0),
        ));
    }

    /// Keys a digest: `live` is its submission, when known.
    fn output(&mut self, d: &OutputDigest, live: Option<Live>) {
        let p = self.places;
        let runtime = d.runtime;
        let place = live
            .and_then(|l| p.graph_of.get(&(runtime, l.prepared)))
            .and_then(|g| p.writes.get(&(runtime, *g)))
            .and_then(|w| {
                w.iter()
                    .filter(|w| (w.2, w.3, w.4) == (d.buffer.0, d.start, d.end))
                    .min_by_key(|w| (w.0, w.1))
            })
            .map_or(Place::Buffer(d.buffer.0), |w| Place::Use(w.0, w.1));
        let (graph, nth) = match live {
            Some(l) if self.by_graph => (p.rank(runtime, l.prepared), l.nth),
            _ => (UNKNOWN_GRAPH, d.submission.0),
        };
        let rank = p.output_runtime.get(&runtime).copied().unwrap_or(u32::MAX);
        self.events.push(Event::Output(
            (rank, graph, nth, place, d.start, d.end),
            (d.xxh3, d.buffer.0, d.submission.0),
        ));
    }

    /// The trace ended and every submission is retired: every parked digest's submit is
    /// missing.
    fn finish(&mut self) {
        let parked = std::mem::take(&mut self.parked_digests);
        let mut parked: Vec<OutputDigest> = parked.into_values().flatten().collect();
        parked.sort_by_key(|d| (d.runtime, d.submission));
        for d in parked {
            self.output(&d, None);
        }
    }
}

/// Keys of one kind waiting for the other side, oldest first (see the module docs).
///
/// A key may wait with several values (a submission writing one range twice, an upload then
/// a kernel filling it, digests both): the n-th value of a key on one side meets the n-th
/// on the other, as `replay` pairs them, so none is overwritten and lost.
struct Window<K, V> {
    /// Per key, its waiting values with their arrival numbers, oldest first.
    map: HashMap<K, VecDeque<(u64, V)>>,
    /// Arrival order: (key, arrival number); entries of values already taken stay until
    /// dropped (their number is below their key's oldest waiting one).
    order: VecDeque<(K, u64)>,
    /// Values waiting.
    len: usize,
    arrivals: u64,
    evicted: u64,
    /// Values kept at most ([`MATCH_WINDOW`]).
    limit: usize,
}

impl<K: Hash + Eq + Copy, V> Window<K, V> {
    fn new(limit: usize) -> Self {
        Window {
            map: HashMap::new(),
            order: VecDeque::new(),
            len: 0,
            arrivals: 0,
            evicted: 0,
            limit,
        }
    }

    /// Whether the value of `key` that arrived `n`-th still waits: values of a key are
    /// taken oldest first.
    fn waits(map: &HashMap<K, VecDeque<(u64, V)>>, key: &K, n: u64) -> bool {
        map.get(key)
            .and_then(VecDeque::front)
            .is_some_and(|&(oldest, _)| oldest <= n)
    }

    fn insert(&mut self, key: K, value: V) {
        let n = self.arrivals;
        self.arrivals += 1;
        self.map.entry(key).or_default().push_back((n, value));
        self.order.push_back((key, n));
        self.len += 1;
        while self.len > self.limit {
            let Some((oldest, n)) = self.order.pop_front() else {
                break;
            };
            if Self::waits(&self.map, &oldest, n) {
                self.take(&oldest);
                self.evicted += 1;
            }
        }
        // Values taken by the other side stay in the order list; drop them now and then.
        if self.order.len() > 2 * self.len + 1024 {
            let map = &self.map;
            self.order.retain(|(k, n)| Self::waits(map, k, *n));
        }
    }

    /// The oldest value waiting under `key`.
    fn take(&mut self, key: &K) -> Option<V> {
        let values = self.map.get_mut(key)?;
        let (_, value) = values.pop_front()?;
        if values.is_empty() {
            self.map.remove(key);
        }
        self.len -= 1;
        Some(value)
    }

    /// Values that never met the other side's: still waiting, or evicted.
    fn one_sided(&self) -> u64 {
        self.len as u64 + self.evicted
    }
}

/// The merge of the two sides' events.
struct Merge {
    outputs: [Window<OutputKey, OutputValue>; 2],
    outcomes: [Window<SubmissionKey, (Option<Outcome>, u64)>; 2],
    matched: Matched,
}

impl Merge {
    fn take(&mut self, side: usize, event: Event) {
        let other = 1 - side;
        match event {
            Event::Output(key, value) => match self.outputs[other].take(&key) {
                None => self.outputs[side].insert(key, value),
                Some(theirs) => {
                    let (base, new) = if side == 0 {
                        (value, theirs)
                    } else {
                        (theirs, value)
                    };
                    let one = |xxh3| {
                        [Digest {
                            xxh3,
                            contents: None,
                        }]
                    };
                    // The one rule of `diff` and `replay` for the digests of one key.
                    match digests(&one(base.0), &one(new.0), None, false) {
                        DigestMatch::Match => self.matched.identical += 1,
                        _ => self
                            .matched
                            .differing
                            .push(DifferingOutput { key, base, new }),
                    }
                }
            },
            Event::Outcome(key, value) => match self.outcomes[other].take(&key) {
                None => self.outcomes[side].insert(key, value),
                Some(theirs) => {
                    let (base, new) = if side == 0 {
                        (value, theirs)
                    } else {
                        (theirs, value)
                    };
                    let submission = [base.1, new.1];
                    let (base, new) = (base.0, new.0);
                    match outcomes(base, new) {
                        OutcomeMatch::Unknown => self.matched.outcomes_unknown += 1,
                        OutcomeMatch::Same => self.matched.outcomes_compared += 1,
                        OutcomeMatch::Changed => {
                            self.matched.outcomes_compared += 1;
                            if let (Some(base), Some(new)) = (base, new) {
                                self.matched.changed.push(ChangedOutcome {
                                    key,
                                    submission,
                                    base,
                                    new,
                                });
                            }
                        }
                    }
                }
            },
        }
        let pending: usize = (0..2)
            .map(|s| self.outputs[s].len + self.outcomes[s].len)
            .sum();
        self.matched.peak_pending = self.matched.peak_pending.max(pending);
    }

    fn finish(mut self, late: [u64; 2]) -> Matched {
        let m = &mut self.matched;
        for s in 0..2 {
            m.outputs_one_sided[s] = self.outputs[s].one_sided();
            m.submissions_one_sided[s] = self.outcomes[s].one_sided();
            m.unmatched_past_window[s] = self.outputs[s].evicted + self.outcomes[s].evicted;
        }
        m.late_records = late;
        m.differing.sort_by_key(|d| d.key);
        m.changed.sort_by_key(|c| c.key);
        self.matched
    }
}

/// Which trace a [`DiffError`] is about.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The base trace could not be read.
    #[error("{0}")]
    Base(ReadError),
    /// The new trace could not be read.
    #[error("{0}")]
    New(ReadError),
}

/// Records of one side for [`match_streams`].
pub type Records<'a> = Box<dyn Iterator<Item = Result<Record, ReadError>> + Send + 'a>;

/// The second pass over two traces whose first passes gave `base` and `new` (see the
/// module docs): each side's records read on a thread of its own.
///
/// # Errors
///
/// [`DiffError`]: a part of either trace that must be read is unusable.
pub fn match_streams(
    base: (&Profile, Records<'_>),
    new: (&Profile, Records<'_>),
) -> Result<Matched, DiffError> {
    match_within(base, new, MATCH_WINDOW)
}

/// [`match_streams`] with a match window of `window` keys per side and kind.
fn match_within(
    (base, base_records): (&Profile, Records<'_>),
    (new, new_records): (&Profile, Records<'_>),
    window: usize,
) -> Result<Matched, DiffError> {
    use std::sync::mpsc::sync_channel;
    // The same prepared graphs, however often each was submitted (another run length):
    // graphs pair by rank and a graph's extra submissions are one-sided. Other graphs
    // (outputs rotated over another number of buffer sets) pair by submission number.
    let by_graph = base.shape.keys().eq(new.shape.keys());
    std::thread::scope(|scope| {
        let mut receivers = Vec::new();
        let mut threads = Vec::new();
        for (profile, records) in [(base, base_records), (new, new_records)] {
            let (send, receive) = sync_channel::<Batch>(BATCHES_AHEAD);
            receivers.push(receive);
            threads.push(scope.spawn(move || -> Result<u64, ReadError> {
                let mut side = Side::new(&profile.places, by_graph);
                let mut sent = 0u64;
                // Sends what `side` keyed so far; false when the merge stopped listening.
                let mut flush = |side: &mut Side<'_>, submits: u64| {
                    let events = std::mem::take(&mut side.events);
                    sent += events.len() as u64;
                    let batch = Batch {
                        events,
                        submits,
                        sent,
                    };
                    send.send(batch).is_ok()
                };
                let mut sent_at = 0;
                for record in records {
                    side.push(&record?);
                    if side.events.len() >= BATCH || side.submits >= sent_at + BATCH as u64 {
                        sent_at = side.submits;
                        if !flush(&mut side, sent_at) {
                            return Ok(side.late);
                        }
                    }
                }
                // Every submission still joinable is final: in batches too, so the merge
                // takes them in step with the other side's.
                let submits = side.submits;
                while !side.live.is_empty() {
                    side.retire_oldest();
                    if side.events.len() >= BATCH && !flush(&mut side, submits) {
                        return Ok(side.late);
                    }
                }
                side.finish();
                // Past every submit of the other side: the rest is drained.
                flush(&mut side, u64::MAX);
                Ok(side.late)
            }));
        }
        let mut merge = Merge {
            outputs: [Window::new(window), Window::new(window)],
            outcomes: [Window::new(window), Window::new(window)],
            matched: Matched {
                by_graph,
                ..Matched::default()
            },
        };
        // In step: always read from the side that has read fewer submits (then sent fewer
        // events).
        let mut progress = [(0u64, 0u64); 2];
        let mut done = [false; 2];
        while !(done[0] && done[1]) {
            let side = match done {
                [true, _] => 1,
                [_, true] => 0,
                _ => usize::from(progress[1] < progress[0]),
            };
            match receivers[side].recv() {
                Ok(batch) => {
                    progress[side] = (batch.submits, batch.sent);
                    for event in batch.events {
                        merge.take(side, event);
                    }
                }
                Err(_) => done[side] = true,
            }
        }
        let mut late = [0; 2];
        for (side, thread) in threads.into_iter().enumerate() {
            let ended = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            late[side] = match (side, ended) {
                (_, Ok(late)) => late,
                (0, Err(e)) => return Err(DiffError::Base(e)),
                (_, Err(e)) => return Err(DiffError::New(e)),
            };
        }
        Ok(merge.finish(late))
    })
}

/// [`match_streams`] of the traces at `base_path` and `new_path`.
///
/// # Errors
///
/// [`DiffError`]: either trace cannot be opened, or a part that must be read is unusable.
pub fn match_files(
    (base, base_path): (&Profile, &Path),
    (new, new_path): (&Profile, &Path),
) -> Result<Matched, DiffError> {
    let records = |path: &Path| -> Result<Records<'static>, ReadError> {
        let reader = TraceReader::open(path)?;
        Ok(Box::new(reader.map(|item| item.map(|(_, record)| record))))
    };
    let base_records = records(base_path).map_err(DiffError::Base)?;
    let new_records = records(new_path).map_err(DiffError::New)?;
    match_streams((base, base_records), (new, new_records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::schema::{BufferId, Payload, Status};

    /// A pipeline trace of `submissions` with one digest of buffer 4 after each completion
    /// (`flip`: submissions whose digest differs; `failed`: one whose outcome is failed).
    fn trace(submissions: u64, flip: &[u64], failed: Option<u64>) -> Vec<Record> {
        let spec = PipelineSpec {
            submissions,
            ..PipelineSpec::ops(0)
        };
        let mut out = Vec::new();
        for r in pipeline(spec) {
            if let Record::SubmissionDone(d) = &r {
                let n = d.submission.0;
                out.push(Record::OutputDigest(OutputDigest {
                    runtime: d.runtime,
                    submission: d.submission,
                    buffer: BufferId(4),
                    start: 0,
                    end: 1 << 20,
                    xxh3: 7 + u64::from(flip.contains(&n)),
                    contents: Payload::Omitted { len_bytes: 1 << 20 },
                }));
                if failed == Some(n) {
                    let mut d = d.clone();
                    d.status = Status::Failed {
                        error: "injected".into(),
                    };
                    out.push(Record::SubmissionDone(d));
                    continue;
                }
            }
            out.push(r);
        }
        out
    }

    fn matched(base: &[Record], new: &[Record]) -> Matched {
        matched_within(base, new, MATCH_WINDOW)
    }

    fn matched_within(base: &[Record], new: &[Record], window: usize) -> Matched {
        let (bp, np) = (profile_records(base), profile_records(new));
        fn stream(records: &[Record]) -> Records<'_> {
            Box::new(records.iter().map(|r| Ok(r.clone())))
        }
        match_within((&bp, stream(base)), (&np, stream(new)), window).unwrap()
    }

    #[test]
    fn identical_traces_match_everything_with_a_nearly_empty_window() {
        let submissions = 3 * LIVE_WINDOW as u64;
        let records = trace(submissions, &[], None);
        let m = matched(&records, &records);
        assert!(m.by_graph);
        assert_eq!(m.identical, submissions);
        assert!(m.differing.is_empty());
        assert_eq!(m.outcomes_compared, submissions);
        assert_eq!(
            (m.outputs_one_sided, m.submissions_one_sided),
            ([0; 2], [0; 2])
        );
        assert_eq!((m.unmatched_past_window, m.late_records), ([0; 2], [0; 2]));
        // Bounded by the batches in flight, not by the trace.
        assert!(
            m.peak_pending < 8 * (BATCH * (BATCHES_AHEAD + 2)),
            "{}",
            m.peak_pending
        );
    }

    #[test]
    fn differing_outputs_and_outcomes_are_found_in_key_order() {
        let base = trace(50, &[], None);
        let new = trace(50, &[30, 4], Some(12));
        let m = matched(&base, &new);
        let keys: Vec<u64> = m.differing.iter().map(|d| d.base.2).collect();
        assert_eq!(keys, [4, 30]);
        assert_eq!(m.differing[0].key.2, 4, "the graph's 5th submission");
        // Placed by the operation writing it (the download, node 3's second use).
        assert_eq!(m.differing[0].key.3, Place::Use(3, 1));
        assert_eq!(m.changed.len(), 1);
        assert_eq!(
            (m.changed[0].key, m.changed[0].base, m.changed[0].new),
            ((0, 0, 12), Outcome::Ok, Outcome::Failed)
        );
    }

    #[test]
    fn another_run_length_is_one_sided_and_keyed_by_graph() {
        let base = trace(40, &[], None);
        let new = trace(30, &[], None);
        let m = matched(&base, &new);
        assert!(m.by_graph);
        assert_eq!(m.identical, 30);
        assert_eq!(m.outputs_one_sided, [10, 0]);
        assert_eq!(m.submissions_one_sided, [10, 0]);
        assert_eq!(m.unmatched_past_window, [0; 2]);
    }

    #[test]
    fn keys_past_the_window_are_counted_one_sided_and_said() {
        // New has 12,000 submissions more at its end: as many outputs and outcomes wait for
        // a partner that never comes; a window of 8,192 keys (more than the two sides' lag
        // in step, a few batches) keeps 8,192 of each kind and lets the rest go, counted.
        let window = 8192;
        let base = trace(3000, &[], None);
        let new = trace(15_000, &[], None);
        let m = matched_within(&base, &new, window);
        assert_eq!(m.identical, 3000);
        assert_eq!(m.outcomes_compared, 3000);
        assert_eq!(m.outputs_one_sided, [0, 12_000]);
        assert_eq!(m.submissions_one_sided, [0, 12_000]);
        assert_eq!(m.unmatched_past_window, [0, 2 * (12_000 - window as u64)]);
        // The whole window: nothing leaves it, the counts are the same.
        let m = matched(&base, &new);
        assert_eq!(m.unmatched_past_window, [0, 0]);
        assert_eq!(m.outputs_one_sided, [0, 12_000]);
    }

    #[test]
    fn digests_before_their_submit_are_keyed_by_graph() {
        let base = trace(20, &[], None);
        // Every digest ahead of every record of its submission.
        let (digests, rest): (Vec<Record>, Vec<Record>) = base
            .iter()
            .cloned()
            .partition(|r| matches!(r, Record::OutputDigest(_)));
        let first = rest
            .iter()
            .position(|r| matches!(r, Record::Submit(_)))
            .unwrap();
        let mut new = rest[..first].to_vec();
        new.extend(digests);
        new.extend_from_slice(&rest[first..]);
        let m = matched(&base, &new);
        assert_eq!(m.identical, 20);
        assert_eq!(m.outputs_one_sided, [0; 2]);
    }

    #[test]
    fn several_digests_of_one_key_in_a_submission_are_paired_in_order() {
        // An upload into a range, then a kernel filling it: two digests of one key per
        // submission, told apart only by their order.
        let mut records = Vec::new();
        for r in trace(50, &[], None) {
            if let Record::OutputDigest(d) = &r {
                let mut filled = d.clone();
                filled.xxh3 = 1000 + d.submission.0;
                records.push(r.clone());
                records.push(Record::OutputDigest(filled));
            } else {
                records.push(r);
            }
        }
        let m = matched(&records, &records);
        assert_eq!(m.identical, 100);
        assert!(m.differing.is_empty(), "{:?}", m.differing.first());
        assert_eq!(m.outputs_one_sided, [0; 2]);
        // One side lacks the second digest of submission 7: counted one-sided, the rest
        // still meet their partners.
        let mut fewer = records.clone();
        let at = fewer
            .iter()
            .position(|r| matches!(r, Record::OutputDigest(d) if d.xxh3 == 1007))
            .unwrap();
        fewer.remove(at);
        let m = matched(&records, &fewer);
        assert_eq!((m.identical, m.differing.len()), (99, 0));
        assert_eq!(m.outputs_one_sided, [1, 0]);
    }

    /// [`trace`] with a second prepared graph of the same structure: submissions alternate
    /// between the two, x first (`yx`: y first), and each digest tells its graph and its
    /// index among that graph's submissions apart.
    fn two_graphs(submissions: u64, yx: bool, failed: Option<u64>) -> Vec<Record> {
        let mut out = Vec::new();
        let mut of = HashMap::new();
        let mut nth = [0u64; 2];
        for r in trace(submissions, &[], failed) {
            match r {
                Record::Prepared(p) => {
                    let mut y = p.clone();
                    y.prepared = PreparedId(p.prepared.0 + 1);
                    out.push(Record::Prepared(p));
                    out.push(Record::Prepared(y));
                }
                Record::Submit(mut s) => {
                    let graph = (s.submission.0 % 2) ^ u64::from(yx);
                    s.prepared = PreparedId(s.prepared.0 + graph);
                    of.insert(s.submission, (graph, nth[graph as usize]));
                    nth[graph as usize] += 1;
                    out.push(Record::Submit(s));
                }
                Record::OutputDigest(mut d) => {
                    let (graph, nth) = of[&d.submission];
                    d.xxh3 = (graph << 32) | nth;
                    out.push(Record::OutputDigest(d));
                }
                r => out.push(r),
            }
        }
        out
    }

    #[test]
    fn outcomes_are_paired_by_graph_as_outputs_are() {
        // Graph x's 5th submission fails in both: submission 8 of xy..., 9 of yx...
        let base = two_graphs(50, false, Some(8));
        let new = two_graphs(50, true, Some(9));
        let m = matched(&base, &new);
        assert!(m.by_graph);
        assert_eq!((m.identical, m.differing.len()), (50, 0));
        assert!(m.changed.is_empty(), "{:?}", m.changed);
        assert_eq!(m.outcomes_compared, 50);
        // Graph x's 5th failing in one only: one changed outcome, keyed by graph and index,
        // with both submission numbers.
        let m = matched(&base, &two_graphs(50, true, None));
        assert_eq!(m.changed.len(), 1);
        assert_eq!(
            (m.changed[0].key, m.changed[0].submission),
            ((0, 0, 4), [8, 9])
        );
    }

    #[test]
    fn another_run_length_of_the_same_graphs_pairs_by_graph() {
        // Two more submissions, one of each graph, in another order: every output of base
        // meets its graph's, the new ones are one-sided, none is compared with another
        // graph's.
        let base = two_graphs(50, false, None);
        let new = two_graphs(52, true, None);
        let m = matched(&base, &new);
        assert!(m.by_graph);
        assert_eq!((m.identical, m.differing.len()), (50, 0));
        assert_eq!(m.outputs_one_sided, [0, 2]);
        assert_eq!((m.outcomes_compared, m.submissions_one_sided), (50, [0, 2]));
    }

    #[test]
    fn region_durations_are_kept_per_region_key() {
        let records = trace(10, &[], None);
        let p = profile_records(&records);
        assert_eq!(p.regions.len(), 4);
        let (label, sketch) = &p.regions[&RegionKey {
            runtime: 0,
            prepared: 0,
            region: 1,
        }];
        assert_eq!(label, "blur +1");
        assert_eq!(sketch.count(), 10);
        assert_eq!(p.submissions, 10);
        assert_eq!(p.shape, BTreeMap::from([((0, 0), 10)]));
    }
}
