//! Pairing the prepared graphs of two traces by shape and by what they compute, between
//! `diff`'s two passes: a graph's [`signature`], its [`structure`] (its regions' labels,
//! queues, engines, kinds and operations, and its writing uses) and [`params`] (every
//! operation's recorded parameters), and [`align`], which gives the new trace's graphs the
//! base's ranks where the same graphs were prepared in another order.
//!
//! The signature is the one notion of "the same graph" of `diff` and `replay`: graphs of
//! one signature compute the same thing, so their timing rows are pooled
//! ([`crate::matching::Pools`]), as a pipeline's identical frame contexts are.

use super::Profile;
use super::profile::OpKey;
use crate::matching::RegionKey;
use hrx_capture::schema::{
    Access, BufferId, Engine, KernelId, KernelLoaded, Lane, NodeIndex, OpKind, Placement, Queue,
    RegionKind, Use,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use xxhash_rust::xxh3::Xxh3;

/// What the trace records of a kernel's parameters, as one number: xxh3 of its entry,
/// code, contract, constant argument bytes, launch dimensions, engine and NPU groups (not
/// its id, which depends on load order).
pub fn kernel_params(k: &KernelLoaded) -> u64 {
    let mut h = Xxh3::new();
    k.entry.hash(&mut h);
    k.code.map(|c| c.0).hash(&mut h);
    for c in &k.contract {
        (c.access, c.extent_bytes, c.alignment).hash(&mut h);
    }
    k.constants.hash(&mut h);
    (k.grid, k.block, k.engine).hash(&mut h);
    k.npu_groups.hash(&mut h);
    h.finish()
}

/// Stands for a kernel whose `KernelLoaded` record the trace lacks (a damaged trace).
const UNKNOWN_KERNEL: u64 = u64::MAX;

/// One region of a prepared graph, as [`structure`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct RegionShape<'a> {
    /// Its label ([`crate::label_region`]).
    pub label: &'a str,
    /// The queue it runs on.
    pub queue: Queue,
    /// The engine it runs on.
    pub engine: Engine,
    /// How it is executed.
    pub kind: RegionKind,
    /// Its operations, in order.
    pub nodes: &'a [NodeIndex],
}

/// One operation of a prepared graph, as [`structure`] and [`params`] read it.
#[derive(Clone, Copy, Debug)]
pub struct OpShape<'a> {
    /// Its node (index in its graph).
    pub node: u32,
    /// What it does.
    pub op: &'a OpKind,
    /// Its GPU lane.
    pub lane: Lane,
    /// Its uses, bindings in order.
    pub uses: &'a [Use],
}

/// A prepared graph's shape as one number: xxh3 of its regions in order (label, queue,
/// engine, kind and operations) and its operations' writing uses (node, use, byte range;
/// not buffer ids, which depend on allocation).
pub fn structure<'a>(
    regions: impl IntoIterator<Item = RegionShape<'a>>,
    ops: &[OpShape<'_>],
) -> u64 {
    let mut h = Xxh3::new();
    for r in regions {
        r.label.hash(&mut h);
        (r.queue, r.engine, r.kind).hash(&mut h);
        r.nodes.len().hash(&mut h);
        for n in r.nodes {
            n.0.hash(&mut h);
        }
    }
    let mut writes: Vec<(u32, u32, u64, u64)> = ops
        .iter()
        .flat_map(|op| {
            (op.uses.iter().enumerate())
                .filter(|(_, u)| u.access != Access::Read)
                .map(move |(i, u)| (op.node, i as u32, u.start, u.end))
        })
        .collect();
    writes.sort_unstable();
    writes.hash(&mut h);
    h.finish()
}

/// What a prepared graph computes as one number: xxh3 of what the trace records of each
/// operation, in node order: its kind with its parameters (a fill's byte value; a kernel's
/// [`kernel_params`], looked up by `kernel`), its lane, and all its uses (binding, access,
/// byte range and the placement of its buffer, looked up by `placement`: a copy's size and
/// input, a kernel's arguments; a copy between host-visible buffers and one between
/// GPU-local buffers run at other speeds). Not buffer or kernel ids, which depend on
/// allocation and load order.
pub fn params(
    ops: &[OpShape<'_>],
    kernel: impl Fn(KernelId) -> Option<u64>,
    placement: impl Fn(BufferId) -> Option<Placement>,
) -> u64 {
    let mut h = Xxh3::new();
    let mut ops: Vec<&OpShape<'_>> = ops.iter().collect();
    ops.sort_by_key(|op| op.node);
    for op in ops {
        op.node.hash(&mut h);
        let kernel = |k: KernelId| kernel(k).unwrap_or(UNKNOWN_KERNEL);
        let (kind, param) = match *op.op {
            OpKind::Fill { value } => (0u8, u64::from(value)),
            OpKind::Copy => (1, 0),
            OpKind::Kernel { kernel: k } => (2, kernel(k)),
            OpKind::Scoped => (3, 0),
            OpKind::Npu { kernel: k } => (4, kernel(k)),
            OpKind::Host => (5, 0),
        };
        (kind, param, op.lane).hash(&mut h);
        op.uses.len().hash(&mut h);
        for u in op.uses {
            (u.access, u.start, u.end).hash(&mut h);
            placement_code(placement(u.buffer)).hash(&mut h);
        }
    }
    h.finish()
}

/// A buffer's placement as [`params`] hashes it (`None`: a buffer whose `BufferCreated` the
/// trace lacks).
fn placement_code(placement: Option<Placement>) -> (u8, u32) {
    match placement {
        None => (0, 0),
        Some(Placement::GpuLocal) => (1, 0),
        Some(Placement::HostVisible) => (2, 0),
        Some(Placement::NpuShared { group }) => (3, group),
    }
}

/// A prepared graph's [`Signature`]: its [`structure`] and its [`params`], from its regions
/// in order, its operations, each kernel's [`kernel_params`] (by id) and each buffer's
/// placement (by id). The one notion of
/// "the same graph" of `diff` (graphs paired by [`align`]) and `replay` (rows of the same
/// graphs pooled, [`crate::matching::Pools`]).
pub fn signature<'a>(
    regions: impl IntoIterator<Item = RegionShape<'a>>,
    ops: &[OpShape<'_>],
    kernel: impl Fn(KernelId) -> Option<u64>,
    placement: impl Fn(BufferId) -> Option<Placement>,
) -> Signature {
    (structure(regions, ops), params(ops, kernel, placement))
}

/// A prepared graph's keys for [`align`] and for pooling timing rows: its [`structure`] and
/// what it computes ([`params`]).
pub type Signature = (u64, u64);

/// What a prepared graph read and wrote in one trace, as [`align`] tells apart the graphs
/// of one [`Signature`] (those a program's threads each prepare for themselves): each part
/// `None` where the trace recorded nothing of it. Gathered in `diff`'s first pass, in
/// memory per graph (not per submission).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// Its outputs over all its submissions as a multiset, whatever order they were read
    /// in: the wrapping sum of xxh3 of each digest's byte range and digest.
    pub outputs: Option<u64>,
    /// Its first submission's outputs, alike (a graph whose later outputs changed).
    pub first: Option<u64>,
    /// What the host had written (`HostWrite`, a range's `BufferSnapshot`), by its first
    /// submission, to the buffers its operations read: xxh3 of each read use and the
    /// writes to its buffer, folded in order.
    pub inputs: Option<u64>,
}

impl Fingerprint {
    /// Adds an output digest of bytes `start..end` (`first`: of the graph's first
    /// submission).
    pub fn add_output(&mut self, start: u64, end: u64, xxh3: u64, first: bool) {
        let mut h = Xxh3::new();
        (start, end, xxh3).hash(&mut h);
        let one = h.finish();
        let add = |sum: &mut Option<u64>| *sum = Some(sum.unwrap_or(0).wrapping_add(one));
        add(&mut self.outputs);
        if first {
            add(&mut self.first);
        }
    }

    /// The parts `parts` names (outputs, first, inputs), the others `None`; `None` where
    /// none of those was recorded (nothing to pair by).
    fn parts(&self, parts: [bool; 3]) -> Option<[Option<u64>; 3]> {
        let all = [self.outputs, self.first, self.inputs];
        let kept: [Option<u64>; 3] = std::array::from_fn(|k| all[k].filter(|_| parts[k]));
        kept.iter().any(Option::is_some).then_some(kept)
    }
}

/// The fingerprint parts [`align`] pairs graphs of one key by, in order: all of them, then
/// the outputs, the first submission's outputs, the inputs, each alone.
const BY_FINGERPRINT: [[bool; 3]; 4] = [
    [true, true, true],
    [true, false, false],
    [false, true, false],
    [false, false, true],
];

/// What [`align_graphs`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aligned {
    /// How many of `new`'s graphs took another rank.
    pub moved: u64,
    /// Graphs of one structure that nothing recorded told apart, though what they computed
    /// differs (their [`Fingerprint`]s; two graphs of either trace at least): they were
    /// paired in the order they were prepared, which a program whose threads prepare them
    /// concurrently does not keep. Per runtime rank, base's ranks of those graphs (after
    /// alignment, what the report names).
    pub in_order: Vec<(u32, Vec<u64>)>,
}

/// [`align_graphs`], returning how many of `new`'s graphs changed rank.
pub fn align(base: &Profile, new: &mut Profile) -> u64 {
    align_graphs(base, new).moved
}

/// Gives `new`'s prepared graphs `base`'s ranks where the two runtimes prepared the same
/// graphs in another order, or graphs of one signature whose order its threads raced for;
/// returns what moved and which graphs only their order paired ([`Aligned`]).
///
/// Graphs are ranked by id, the order a program prepared them in; graphs prepared
/// concurrently by several threads take ids in whatever order the threads ran, so the same
/// program recorded twice can rank them differently and the ranks pair the wrong graphs.
/// Where a runtime of each trace holds graphs of the same shapes ([`structure`]: regions and
/// writing uses), a graph is matched by, in order: its shape and what it computes
/// ([`params`]: fill values, kernel constants or launch dimensions, copy inputs) and what
/// it read and wrote ([`Fingerprint`]: all of it, then its outputs, its first submission's
/// outputs, its inputs, each alone); its shape alone and its fingerprint likewise (a graph
/// that changed its parameters between the runs); then, among the graphs left, by shape and
/// parameters, and by shape alone. Within a key, the k-th graph of `new` takes the rank of
/// the k-th of `base` (id order). So two threads each preparing a graph of one structure
/// over their own data pair by their data whichever prepared first, and a thread whose
/// output changed still pairs with its own graph where the other thread's did not change
/// (or where its inputs did not). Where graphs left to the last two keys differ in what
/// they computed, their pairing is by order, and [`Aligned::in_order`] names them.
/// Where the shapes differ (another program), ranks stay by id, so a graph built
/// differently reads as relabelled regions.
///
/// Two traces of one recording (a trim, a capture range or a cut-short copy against the
/// whole: the same host, process and session start) hold the same prepares under the same
/// ids, so id order pairs them exactly and nothing is moved or said: their fingerprints, of
/// different submissions, matched nothing, and a trim of the single-threaded pipeline was
/// warned of as "paired in the order they were prepared" (a break-it pass, session 58).
pub fn align_graphs(base: &Profile, new: &mut Profile) -> Aligned {
    type Graph = (u64, Signature, Fingerprint);
    if one_recording(base, new) {
        return Aligned::default();
    }
    let by_runtime = |p: &Profile| {
        let mut out: BTreeMap<u32, Vec<Graph>> = BTreeMap::new();
        for (&(runtime, rank), &sig) in &p.graphs {
            let print = p.fingerprints.get(&(runtime, rank)).copied();
            out.entry(runtime)
                .or_default()
                .push((rank, sig, print.unwrap_or_default()));
        }
        out
    };
    let (b, n) = (by_runtime(base), by_runtime(new));
    let mut aligned = Aligned::default();
    // (runtime rank, new's rank) → base's rank, for the graphs that move.
    let mut moved: HashMap<(u32, u64), u64> = HashMap::new();
    for (runtime, new_graphs) in &n {
        let Some(base_graphs) = b.get(runtime) else {
            continue;
        };
        let shapes = |g: &[Graph]| {
            let mut v: Vec<u64> = g.iter().map(|x| x.1.0).collect();
            v.sort_unstable();
            v
        };
        if shapes(base_graphs) != shapes(new_graphs) {
            continue;
        }
        // A graph's key at a step: its shape, its parameters (or 0), the fingerprint parts
        // (none: by order); `None` where it has none of those parts.
        type Key = (u64, u64, [Option<u64>; 3]);
        let key = |g: &Graph, params: bool, parts: Option<[bool; 3]>| -> Option<Key> {
            let kept = match parts {
                Some(parts) => g.2.parts(parts)?,
                None => [None; 3],
            };
            Some((g.1.0, if params { g.1.1 } else { 0 }, kept))
        };
        let steps = (BY_FINGERPRINT.iter().map(|&p| (true, Some(p))))
            .chain(BY_FINGERPRINT.iter().map(|&p| (false, Some(p))))
            .chain([(true, None), (false, None)]);
        let mut to: Vec<Option<usize>> = vec![None; new_graphs.len()];
        let mut taken = vec![false; base_graphs.len()];
        for (params, parts) in steps {
            // Base's graphs not yet taken, per key, in id order.
            let mut free: HashMap<Key, VecDeque<usize>> = HashMap::new();
            for (i, g) in base_graphs.iter().enumerate() {
                if let Some(k) = key(g, params, parts).filter(|_| !taken[i]) {
                    free.entry(k).or_default().push_back(i);
                }
            }
            let waiting: Vec<(usize, Key)> = (new_graphs.iter().enumerate())
                .filter(|&(j, _)| to[j].is_none())
                .filter_map(|(j, g)| Some((j, key(g, params, parts)?)))
                .collect();
            if parts.is_none() {
                in_order(&free, &waiting, base_graphs, new_graphs, |ranks| {
                    aligned.in_order.push((*runtime, ranks))
                });
            }
            for (j, k) in waiting {
                if let Some(i) = free.get_mut(&k).and_then(VecDeque::pop_front) {
                    (to[j], taken[i]) = (Some(i), true);
                }
            }
        }
        for (&(rank, ..), i) in new_graphs.iter().zip(to) {
            if let Some(i) = i
                && base_graphs[i].0 != rank
            {
                moved.insert((*runtime, rank), base_graphs[i].0);
            }
        }
    }
    aligned.moved = moved.len() as u64;
    if moved.is_empty() {
        return aligned;
    }
    let rerank = |runtime: u32, rank: u64| moved.get(&(runtime, rank)).copied().unwrap_or(rank);
    new.regions = std::mem::take(&mut new.regions)
        .into_iter()
        .map(|(k, v)| {
            let prepared = rerank(k.runtime, k.prepared);
            (RegionKey { prepared, ..k }, v)
        })
        .collect();
    new.operations = std::mem::take(&mut new.operations)
        .into_iter()
        .map(|(k, v)| {
            let prepared = rerank(k.runtime, k.prepared);
            (OpKey { prepared, ..k }, v)
        })
        .collect();
    new.graphs = std::mem::take(&mut new.graphs)
        .into_iter()
        .map(|((runtime, rank), sig)| ((runtime, rerank(runtime, rank)), sig))
        .collect();
    new.fingerprints = std::mem::take(&mut new.fingerprints)
        .into_iter()
        .map(|((runtime, rank), print)| ((runtime, rerank(runtime, rank)), print))
        .collect();
    let places = &mut new.places;
    for ((runtime, _), rank) in places.prepared_rank.iter_mut() {
        if let Some(&r) = places.graph_runtime.get(runtime) {
            *rank = rerank(r, *rank);
        }
    }
    new.shape = places.shape();
    aligned
}

/// Whether `a` and `b` are traces of one recording: the same session start (host, process,
/// wall clock and monotonic base), as a trim or a capture range keeps it.
pub(super) fn one_recording(a: &Profile, b: &Profile) -> bool {
    match (&a.session, &b.session) {
        (Some(a), Some(b)) => {
            (&a.host, a.pid, a.wall_clock_utc, a.monotonic_base_ns)
                == (&b.host, b.pid, b.wall_clock_utc, b.monotonic_base_ns)
        }
        _ => false,
    }
}

/// Whether two of `graphs` at `of` differ in their [`Fingerprint`]s.
fn differ(graphs: &[(u64, Signature, Fingerprint)], of: impl IntoIterator<Item = usize>) -> bool {
    let mut prints = of.into_iter().map(|i| graphs[i].2);
    let first = prints.next();
    prints.any(|p| Some(p) != first)
}

/// Of the graphs about to be paired by order (`free`: base's, per key; `waiting`: new's),
/// hands `said` base's ranks of each key's where the order decides something: both traces
/// hold graphs of the key, and either holds two whose [`Fingerprint`]s differ.
fn in_order<K: Eq + std::hash::Hash>(
    free: &HashMap<K, VecDeque<usize>>,
    waiting: &[(usize, K)],
    base: &[(u64, Signature, Fingerprint)],
    new: &[(u64, Signature, Fingerprint)],
    mut said: impl FnMut(Vec<u64>),
) {
    // New's graphs per key, keys in the order new's graphs first name them.
    let mut by_key: HashMap<&K, Vec<usize>> = HashMap::new();
    let mut keys: Vec<&K> = Vec::new();
    for (j, k) in waiting {
        let graphs = by_key.entry(k).or_default();
        if graphs.is_empty() {
            keys.push(k);
        }
        graphs.push(*j);
    }
    for k in keys {
        let Some(b) = free.get(k).filter(|b| !b.is_empty()) else {
            continue;
        };
        let n = &by_key[k];
        if differ(base, b.iter().copied()) || differ(new, n.iter().copied()) {
            let mut ranks: Vec<u64> = b.iter().map(|&i| base[i].0).collect();
            ranks.sort_unstable();
            said(ranks);
        }
    }
}

/// The most region pairs [`align_regions`] weighs in one graph, past the labels both ends
/// of the graph share (its table is one `u32` a pair): past it, the regions between those
/// ends pair in order, and the graph is listed in [`Realigned::in_order`].
const MOST_REGION_PAIRS: usize = 1 << 22;

/// What [`align_regions`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Realigned {
    /// How many of `new`'s regions were paired by label with a region of `base` at another
    /// index (and took that index).
    pub matched: u64,
    /// The graphs (runtime rank, graph rank) whose regions between the labels both ends
    /// share were too many to pair by label ([`MOST_REGION_PAIRS`]), with their counts
    /// there (base, new): those paired in order.
    pub in_order: Vec<((u32, u64), (usize, usize))>,
}

/// Pairs the regions of each prepared graph both traces hold (by rank, after [`align`])
/// whose region labels differ, by label instead of by index; returns how many of `new`'s
/// regions were paired with a region at another index, and the graphs too large to pair so.
///
/// A region added to or removed from a graph (a kernel split into a region of its own, a
/// copy dropped) shifted every later region's index: by index, each later region was paired
/// with its neighbour, read as relabelled, and its time never compared. Here the longest
/// common subsequence of the two graphs' labels pairs the regions that kept theirs, as a
/// text diff pairs unchanged lines; between two such anchors, the regions left pair in
/// order (a region changed in place stays relabelled), and a side's surplus is one-sided:
/// `new`'s take indices past `base`'s last, so they pair with none. Matched regions take
/// `base`'s index (what the report names). Graphs whose labels agree are left as they are.
/// The labels both graphs begin and end with pair first, so a graph of any size that gained
/// or lost a few regions is paired in time linear in its regions; past those ends, a graph
/// whose regions between them exceed [`MOST_REGION_PAIRS`] pairs them in order (a graph of
/// 3000 regions that gained one was paired wholly by index, every region relabelled, and
/// nothing said: a break-it pass).
pub fn align_regions(base: &Profile, new: &mut Profile) -> Realigned {
    type Graphs = BTreeMap<(u32, u64), Vec<(u32, String)>>;
    let by_graph = |p: &Profile| {
        let mut out = Graphs::new();
        for (key, (label, _)) in &p.regions {
            let graph = out.entry((key.runtime, key.prepared)).or_default();
            graph.push((key.region, label.clone()));
        }
        out
    };
    let (b, n) = (by_graph(base), by_graph(new));
    let mut realigned = Realigned::default();
    // (runtime, graph, new's index) → its index once paired.
    let mut moved: HashMap<(u32, u64, u32), u32> = HashMap::new();
    for (graph, new_regions) in &n {
        let Some(base_regions) = b.get(graph) else {
            continue;
        };
        let labels = |r: &[(u32, String)]| r.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
        if labels(base_regions) == labels(new_regions) {
            continue;
        }
        let (pairs, in_order) = pair_by_label(base_regions, new_regions);
        if let Some(counts) = in_order {
            realigned.in_order.push((*graph, counts));
        }
        let past = base_regions.iter().map(|r| r.0).max().map_or(0, |i| i + 1);
        let mut one_sided = 0;
        for (j, &(index, _)) in new_regions.iter().enumerate() {
            let to = match pairs[j] {
                Some(i) => base_regions[i].0,
                None => {
                    one_sided += 1;
                    past + one_sided - 1
                }
            };
            if to != index {
                moved.insert((graph.0, graph.1, index), to);
                realigned.matched += u64::from(pairs[j].is_some());
            }
        }
    }
    if moved.is_empty() {
        return realigned;
    }
    new.regions = std::mem::take(&mut new.regions)
        .into_iter()
        .map(|(k, v)| {
            let region = moved
                .get(&(k.runtime, k.prepared, k.region))
                .copied()
                .unwrap_or(k.region);
            (RegionKey { region, ..k }, v)
        })
        .collect();
    realigned
}

/// For each of `new`'s regions (by position), the position of `base`'s region it pairs
/// with ([`align_regions`]): the labels both begin and end with, then the longest common
/// subsequence of the labels between, then, between two of its pairs, the regions left in
/// order. With the counts (base, new) of the regions between the shared ends where those
/// are too many to weigh ([`MOST_REGION_PAIRS`]): they are then paired in order.
pub(super) fn pair_by_label(
    base: &[(u32, String)],
    new: &[(u32, String)],
) -> (Vec<Option<usize>>, Option<(usize, usize)>) {
    let (m, n) = (base.len(), new.len());
    let same = |(b, n): (&(u32, String), &(u32, String))| b.1 == n.1;
    let prefix = base.iter().zip(new).take_while(|&p| same(p)).count();
    let suffix = (base[prefix..].iter().rev())
        .zip(new[prefix..].iter().rev())
        .take_while(|&p| same(p))
        .count();
    // The regions between the shared ends, and their pairs.
    let (bm, nm) = (&base[prefix..m - suffix], &new[prefix..n - suffix]);
    let (mm, nn) = (bm.len(), nm.len());
    let mut anchors: Vec<(usize, usize)> = (0..prefix).map(|k| (k, k)).collect();
    let too_many = mm.saturating_mul(nn) > MOST_REGION_PAIRS;
    if !too_many {
        // longest[i][j]: the longest common subsequence of bm[i..] and nm[j..].
        let width = nn + 1;
        let mut longest = vec![0u32; (mm + 1) * width];
        for i in (0..mm).rev() {
            for j in (0..nn).rev() {
                longest[i * width + j] = if bm[i].1 == nm[j].1 {
                    longest[(i + 1) * width + j + 1] + 1
                } else {
                    longest[(i + 1) * width + j].max(longest[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < mm && j < nn {
            if bm[i].1 == nm[j].1 {
                anchors.push((prefix + i, prefix + j));
                (i, j) = (i + 1, j + 1);
            } else if longest[(i + 1) * width + j] >= longest[i * width + j + 1] {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    anchors.extend((0..suffix).map(|k| (m - suffix + k, n - suffix + k)));
    let mut pairs = vec![None; n];
    let (mut from_i, mut from_j) = (0, 0);
    for (ai, aj) in anchors.into_iter().chain(std::iter::once((m, n))) {
        // The gap before this anchor: its regions pair in order, the surplus one-sided.
        for (i, j) in (from_i..ai).zip(from_j..aj) {
            pairs[j] = Some(i);
        }
        if aj < n {
            pairs[aj] = Some(ai);
        }
        (from_i, from_j) = (ai + 1, aj + 1);
    }
    (pairs, too_many.then_some((mm, nn)))
}
