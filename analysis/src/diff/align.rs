//! Pairing the prepared graphs of two traces by structure, between `diff`'s two passes:
//! a graph's signature, and [`align`], which gives the new trace's graphs the base's ranks
//! where the same structures were prepared in another order.

use super::Profile;
use crate::matching::RegionKey;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A prepared graph's structure as one number: xxh3 of its regions' labels in order and
/// its writing uses (node, use, byte range; not buffer ids, which depend on allocation).
pub(super) fn signature<'a>(
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
