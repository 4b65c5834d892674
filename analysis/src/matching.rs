//! The one matching rule for kernels and regions of `hrx-trace diff` (two recordings) and
//! `hrx-trace replay` (a recording and its re-execution); outputs and outcomes are matched,
//! and every pair judged, by [`crate::compare`] (whose module docs give every kind's rule).
//!
//! - **Kernels** are matched by label (the region label `stats` names them by,
//!   [`crate::label_region`]): labels, not kernel ids, survive a rebuild.
//! - **Regions** are matched by [`RegionKey`]: (runtime rank, prepared graph rank, region
//!   index). Ranks, not ids ([`ranks`]): runtime and prepared graph ids differ between runs
//!   that shared a process, while the n-th runtime (by id) and its m-th prepared graph (by
//!   id, the order the program prepared them in) name the same thing in both. A replay
//!   re-executes the captured plan, so its ranks are the capture's.
//! - [`pair`] walks the union of both sides' keys in key order: a key on both sides is
//!   matched, one on one side only is only in base (missing) or only in new (new).
//! - **Identical graphs pool** ([`Pools`]): the prepared graphs of a runtime that compute
//!   the same thing (one [`crate::diff::signature`]: the same regions, operations, kernels
//!   and byte ranges) are one timing row, its samples the union of theirs, as a profiler
//!   gives statistics per kernel across identical launches. A pipeline with three frames in
//!   flight prepares three identical graphs and rotates them: twelve frames are twelve
//!   samples of each region, not four of each of three. A pooled row is keyed by its first
//!   graph (the lowest id), so it ranks where that graph ranks; graphs that differ stay
//!   apart.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// The prepared graphs of each runtime grouped by what they compute (see the module docs):
/// each graph's pool, the graphs of one signature in id order.
#[derive(Clone, Debug)]
pub struct Pools<R, P> {
    /// Each graph's pool's first graph.
    first: HashMap<(R, P), P>,
    /// Each pool (by runtime and first graph): its graphs, in id order.
    members: BTreeMap<(R, P), Vec<P>>,
}

impl<R, P> Default for Pools<R, P> {
    fn default() -> Self {
        Pools {
            first: HashMap::new(),
            members: BTreeMap::new(),
        }
    }
}

impl<R, P> Pools<R, P>
where
    R: Ord + Copy + Hash,
    P: Ord + Copy + Hash,
{
    /// The pools of `graphs`: (runtime, prepared graph) with its signature; graphs of one
    /// runtime with equal signatures pool (a graph listed twice counts once, by its first
    /// signature).
    pub fn new<S: Eq + Hash>(graphs: impl IntoIterator<Item = ((R, P), S)>) -> Pools<R, P> {
        let mut graphs: Vec<((R, P), S)> = graphs.into_iter().collect();
        graphs.sort_by_key(|a| a.0);
        graphs.dedup_by(|a, b| a.0 == b.0);
        let mut by_signature: HashMap<(R, &S), P> = HashMap::new();
        let mut pools = Pools::default();
        for ((runtime, prepared), signature) in &graphs {
            let first = *by_signature
                .entry((*runtime, signature))
                .or_insert(*prepared);
            pools.first.insert((*runtime, *prepared), first);
            pools
                .members
                .entry((*runtime, first))
                .or_default()
                .push(*prepared);
        }
        pools
    }

    /// The first graph of the pool of `prepared` (of `runtime`): what its rows are keyed by.
    /// A graph the pools do not know is a pool of its own.
    pub fn first(&self, runtime: R, prepared: P) -> P {
        self.first
            .get(&(runtime, prepared))
            .copied()
            .unwrap_or(prepared)
    }

    /// The graphs of the pool whose first graph is `first`, in id order (`first` alone
    /// where the pools do not know it).
    pub fn members(&self, runtime: R, first: P) -> Vec<P> {
        self.members
            .get(&(runtime, first))
            .cloned()
            .unwrap_or_else(|| vec![first])
    }

    /// `items` keyed by (runtime, prepared graph, index) keyed instead by their pool's
    /// first graph, the items of one pool's graphs at one index folded by `merge` (in id
    /// order of their graphs).
    pub fn pool<I: Ord, V>(
        &self,
        items: impl IntoIterator<Item = ((R, P, I), V)>,
        mut merge: impl FnMut(&mut V, V),
    ) -> BTreeMap<(R, P, I), V> {
        let mut sorted: Vec<((R, P, I), V)> = items.into_iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: BTreeMap<(R, P, I), V> = BTreeMap::new();
        for ((runtime, prepared, index), v) in sorted {
            let key = (runtime, self.first(runtime, prepared), index);
            match out.entry(key) {
                std::collections::btree_map::Entry::Occupied(mut e) => merge(e.get_mut(), v),
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
        out
    }
}

/// Where a region is, independent of ids (see the module docs). Ordered by runtime, graph,
/// then region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionKey {
    /// The runtime's rank among the trace's runtimes, by id.
    pub runtime: u32,
    /// The prepared graph's rank among its runtime's prepared graphs, by id.
    pub prepared: u64,
    /// The region's index in its prepared graph.
    pub region: u32,
}

/// The (runtime rank, prepared graph rank) of each (runtime id, prepared id) pair of `ids`:
/// the n-th runtime by id, its m-th prepared graph by id (duplicates count once).
pub fn ranks<R, P>(ids: impl IntoIterator<Item = (R, P)>) -> HashMap<(R, P), (u32, u64)>
where
    R: Ord + Copy + Hash,
    P: Ord + Copy + Hash,
{
    let mut ids: Vec<(R, P)> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut rank = HashMap::with_capacity(ids.len());
    let (mut runtime, mut prepared) = (0u32, 0u64);
    for (i, &id) in ids.iter().enumerate() {
        if i > 0 && ids[i - 1].0 != id.0 {
            runtime += 1;
            prepared = 0;
        }
        rank.insert(id, (runtime, prepared));
        prepared += 1;
    }
    rank
}

/// The rank of each runtime id of `ids` (the n-th by id; duplicates count once).
pub fn runtime_ranks<R: Ord + Copy + Hash>(ids: impl IntoIterator<Item = R>) -> HashMap<R, u32> {
    let mut ids: Vec<R> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .enumerate()
        .map(|(i, id)| (id, i as u32))
        .collect()
}

/// `items` keyed by (runtime id, prepared id, region index), keyed instead by [`RegionKey`]
/// with `ranks` (of every prepared graph of the trace, from [`ranks`]: ranking only the
/// graphs that have items would shift ranks where a graph ran on one side only). An item
/// whose graph is not ranked ranks after every ranked one, by id. The ids stay with the item.
pub fn region_keys<V>(
    ranks: &HashMap<(u32, u64), (u32, u64)>,
    items: impl IntoIterator<Item = ((u32, u64, u32), V)>,
) -> BTreeMap<RegionKey, ((u32, u64), V)> {
    items
        .into_iter()
        .map(|((runtime, prepared, region), v)| {
            let (r, p) = ranks
                .get(&(runtime, prepared))
                .copied()
                .unwrap_or((u32::MAX, (u64::MAX >> 1).saturating_add(prepared)));
            let key = RegionKey {
                runtime: r,
                prepared: p,
                region,
            };
            (key, ((runtime, prepared), v))
        })
        .collect()
}

/// One key's items (see [`pair`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Paired<A, B> {
    /// On both sides: matched.
    Both(A, B),
    /// In base only (missing from new).
    Base(A),
    /// In new only.
    New(B),
}

/// Every key of `base` and `new` with its items, in key order (see the module docs).
pub fn pair<K: Ord, A, B>(base: BTreeMap<K, A>, new: BTreeMap<K, B>) -> Vec<(K, Paired<A, B>)> {
    let mut out = Vec::with_capacity(base.len().max(new.len()));
    let mut new = new.into_iter().peekable();
    for (key, a) in base {
        while new.peek().is_some_and(|(k, _)| *k < key) {
            if let Some((k, b)) = new.next() {
                out.push((k, Paired::New(b)));
            }
        }
        match new.next_if(|(k, _)| *k == key) {
            Some((_, b)) => out.push((key, Paired::Both(a, b))),
            None => out.push((key, Paired::Base(a))),
        }
    }
    out.extend(new.map(|(k, b)| (k, Paired::New(b))));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_and_graphs_are_ranked_by_id_not_by_their_values() {
        // Two runs of one program in one process: the second's ids are higher.
        let first = ranks([(1u32, 4u64), (1, 2), (3, 9)]);
        let second = ranks([(7u32, 12u64), (7, 10), (8, 40)]);
        assert_eq!(first[&(1, 2)], (0, 0));
        assert_eq!(first[&(1, 4)], (0, 1));
        assert_eq!(first[&(3, 9)], (1, 0));
        assert_eq!(second[&(7, 10)], first[&(1, 2)]);
        assert_eq!(second[&(7, 12)], first[&(1, 4)]);
        assert_eq!(second[&(8, 40)], first[&(3, 9)]);
        assert_eq!(runtime_ranks([5u32, 2, 5]), HashMap::from([(2, 0), (5, 1)]));
    }

    #[test]
    fn pairing_matches_equal_keys_and_keeps_one_sided_ones_in_key_order() {
        let key = |prepared, region| RegionKey {
            runtime: 0,
            prepared,
            region,
        };
        let base = BTreeMap::from([(key(0, 0), "a"), (key(0, 2), "c"), (key(1, 0), "d")]);
        let new = BTreeMap::from([(key(0, 1), 'b'), (key(0, 2), 'C'), (key(2, 0), 'e')]);
        let paired = pair(base, new);
        assert_eq!(
            paired,
            [
                (key(0, 0), Paired::Base("a")),
                (key(0, 1), Paired::New('b')),
                (key(0, 2), Paired::Both("c", 'C')),
                (key(1, 0), Paired::Base("d")),
                (key(2, 0), Paired::New('e')),
            ]
        );
        // Kernels: by label.
        let names = pair(
            BTreeMap::from([("fill", 1), ("saxpy", 2)]),
            BTreeMap::from([("saxpy", 3), ("sobel", 4)]),
        );
        let kinds: Vec<_> = names
            .iter()
            .map(|(k, p)| (*k, matches!(p, Paired::Both(..))))
            .collect();
        assert_eq!(kinds, [("fill", false), ("saxpy", true), ("sobel", false)]);
    }

    #[test]
    fn graphs_of_one_signature_pool_per_runtime_and_others_stay_apart() {
        // Runtime 1: graphs 2, 4, 6 alike ('a'), 5 not; runtime 3: graph 2 alike by
        // signature, but another runtime's.
        let pools = Pools::new([
            ((1u32, 4u64), 'a'),
            ((1, 2), 'a'),
            ((1, 5), 'b'),
            ((1, 6), 'a'),
            ((3, 2), 'a'),
        ]);
        assert_eq!(
            [4, 2, 5, 6].map(|g| pools.first(1, g)),
            [2, 2, 5, 2],
            "keyed by the first graph"
        );
        assert_eq!(pools.members(1, 2), [2, 4, 6]);
        assert_eq!(pools.members(1, 5), [5]);
        assert_eq!(pools.members(3, 2), [2]);
        // Unknown graphs are their own pool.
        assert_eq!((pools.first(1, 9), pools.members(1, 9)), (9, vec![9]));
        // Region items of one pool's graphs folded at each index, in graph order.
        let items = [
            ((1u32, 6u64, 0u32), vec![6]),
            ((1, 2, 0), vec![2]),
            ((1, 4, 0), vec![4]),
            ((1, 4, 1), vec![41]),
            ((1, 5, 0), vec![5]),
        ];
        let pooled = pools.pool(items, |a, b| a.extend(b));
        assert_eq!(
            pooled.into_iter().collect::<Vec<_>>(),
            [
                ((1, 2, 0), vec![2, 4, 6]),
                ((1, 2, 1), vec![41]),
                ((1, 5, 0), vec![5]),
            ]
        );
    }

    #[test]
    fn regions_are_ranked_among_every_graph_not_only_those_with_times() {
        // Graphs 5 and 8 of runtime 2; only graph 8 has times on the new side.
        let graphs = ranks([(2u32, 5u64), (2, 8)]);
        let base = region_keys(&graphs, [((2, 5, 0), 'a'), ((2, 8, 0), 'b')]);
        let new = region_keys(&graphs, [((2, 8, 0), 'B')]);
        let paired = pair(base, new);
        assert_eq!(paired.len(), 2);
        assert!(matches!(paired[0].1, Paired::Base(((2, 5), 'a'))));
        assert!(matches!(
            paired[1].1,
            Paired::Both(((2, 8), 'b'), ((2, 8), 'B'))
        ));
        assert_eq!(paired[1].0.prepared, 1);
    }
}
