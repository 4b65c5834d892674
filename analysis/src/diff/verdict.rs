//! What `diff` makes of its two passes ([`compare`]): kernels paired by name and judged by
//! the one timing rule of `diff` and `replay` ([`is_slow`], [`crate::compare::timing`]),
//! regions paired by [`RegionKey`] (matched, one-sided, relabelled, their medians), the
//! counts its [`Verdict::of`] reads, and the reasons it gives in words. Outputs and
//! outcomes are the second pass's ([`Matched`]).
//!
//! # The kernel rule
//!
//! A kernel is **slow** by the timing rule `replay` judges regions by
//! ([`crate::compare::timing`], here with the floor [`NOISE_FLOOR_NS`]) when both hold: the
//! confidence interval of the ratio of its medians (each median's 97.5% interval from its
//! order statistics) lies wholly past the allowed ratio, so a few outliers on a busy machine
//! do not decide it; and the median grew by more than [`NOISE_FLOOR_NS`] (timer and
//! scheduling noise of microsecond kernels). A kernel with fewer than 7 spans on a side has
//! no interval and is never slow (two recordings have no run-to-run spread of their own to
//! measure: `diff` judges with a spread of 1).
//!
//! # Operations
//!
//! Where both traces hold operation timings (`OpTiming`), kernels are the operations' own
//! names (a kernel's entry, `fill`, `copy`: [`Profile::op_kernels`]), and region labels are
//! kernels only for regions whose operations were not timed (an NPU run). Where either
//! lacks them, kernels are region labels on both sides, and [`Comparison::op_note`] says
//! which trace lacks them. Either way, every operation of every graph both traces prepared
//! is paired by [`OpKey`]: the k-th operation named N of the graph. One of one trace only
//! is a kernel added to or removed from its graph ([`GraphChange`], one-sided; a kernel
//! that so runs in one trace only is also counted among [`Comparison::new_kernels`] or
//! [`Comparison::missing_kernels`], not among the one-sided items twice), and the region
//! label that changed with it ("blur +1" to "blur +2") is no new or missing kernel
//! ([`KernelRow::graph_change`]), unless it names the operation added or removed (an NPU
//! region's, whose operations are not timed: [`KernelRow::operation_change`]). Operations timed on both sides have their medians compared
//! by the kernel rule ([`OpTimes`]), reported per place in the graph; the verdict is the
//! kernels' (by name), so that one slowdown is not counted twice.
//!
//! # Pooling
//!
//! Region times ([`RegionTimes`]) and operation times ([`OpTimes`]) are pooled over the
//! prepared graphs that compute the same thing in both traces (one
//! [`super::signature`] in base and one in new: [`Pools`], the rule `replay` pools its rows
//! by): a pipeline's three identical frame contexts are one row of every frame's runs, not
//! three rows of a third of them each, too few to judge. A graph changed in one trace leaves
//! its pool. Kernels are by name, across graphs, already.
//!
//! # The verdict's inputs
//!
//! Regressions: slow kernels, differing outputs, changed outcomes, and a side that holds
//! no submission beside one that holds some (the program did none of its work). One-sided:
//! regions, outputs and submissions in one trace only, relabelled regions, new and missing
//! kernels. The reasons say what decided the verdict from the same counts, that the
//! recordings' arguments differ where they do ([`arguments`]), and which trace was not
//! read whole: *same* of such a trace is [`SAME_AS_FAR_AS_BOTH_GO`].

use super::range::{Held, describe};
use super::{Matched, OpKey, OpProfile, Profile};
use crate::compare::{Slowdown, TimingMatch, Verdict, timing};
use crate::matching::{Paired, Pools, RegionKey, pair};
use crate::sketch::Sketch;
use crate::stats::{AnnotationStats, KernelStats, NO_LABEL};
use crate::units::plural;
use std::collections::BTreeMap;
use std::path::Path;

/// Growth below this many ns is never a slowdown (timer and scheduling noise).
pub const NOISE_FLOOR_NS: u64 = 50_000;

/// `new` against `base` by the kernel rule (see the module docs: [`crate::compare::timing`]
/// with [`NOISE_FLOOR_NS`] and a spread of 1): the ratio of their medians, its interval, and
/// whether it is slow or too few to judge.
pub fn judge(base: &KernelStats, new: &KernelStats, max_slowdown: f64) -> TimingMatch {
    let rule = Slowdown {
        max_ratio: Some(max_slowdown),
        floor_ns: NOISE_FLOOR_NS,
    };
    timing(Some(base.into()), Some(new.into()), &rule, true, 1.0)
}

/// Whether `new` is slower than `base`: the interval of the ratio of their medians wholly past
/// `max_slowdown` (the kernel rule, [`judge`]).
pub fn is_slow(base: &KernelStats, new: &KernelStats, max_slowdown: f64) -> bool {
    judge(base, new, max_slowdown).slow
}

/// One of the two traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The base trace.
    Base,
    /// The new trace.
    New,
}

impl Side {
    /// `base` or `new`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::New => "new",
        }
    }

    /// The other trace.
    pub fn other(self) -> Side {
        match self {
            Side::Base => Side::New,
            Side::New => Side::Base,
        }
    }
}

/// A kernel (region label) of either trace, paired by name.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelRow {
    /// Its name.
    pub name: String,
    /// Its statistics in the base trace, if it ran there.
    pub base: Option<KernelStats>,
    /// In the new trace.
    pub new: Option<KernelStats>,
    /// Whether it is slow by the kernel rule (only a kernel of both traces can be).
    pub slow: bool,
    /// The confidence interval of its ratio of medians ([`TimingMatch::interval`]); `None`
    /// for a kernel of one trace, or with too few runs on a side.
    pub interval: Option<(f64, f64)>,
    /// Not judged: a kernel of both traces with fewer than 7 runs on a side.
    pub too_few: bool,
    /// A row of one trace only that a graph's gained or lost operation explains
    /// ([`Comparison::graph_changes`]): the region label of a region matched in the other
    /// trace under another label (`relabelled`, counted there and not as a new or missing
    /// kernel), or the name of the operation added to or removed from the graph (`added`,
    /// `removed`: a kernel that runs in one trace only, counted as new or missing too).
    pub graph_change: bool,
    /// A row of one trace only named as an operation added to or removed from a graph on
    /// its side ([`Comparison::graph_changes`]): a kernel that runs in one trace only,
    /// `added` or `removed` (counted as new or missing) even where its row is a region
    /// label that a relabelled region carries too (an NPU region, whose operations are not
    /// timed, that changed with the graph).
    pub operation_change: bool,
}

impl KernelRow {
    /// `matched`, `missing` (base only), `new` (new only), or, where a graph change explains
    /// it ([`KernelRow::graph_change`]), `relabelled`, `added` or `removed`: `added` or
    /// `removed` wherever an operation of its name was ([`KernelRow::operation_change`]).
    pub fn status(&self) -> &'static str {
        let label = |k: &Option<KernelStats>| k.as_ref().is_some_and(|k| k.label != NO_LABEL);
        match (&self.base, &self.new) {
            (None, Some(_)) if self.operation_change => "added",
            (Some(_), None) if self.operation_change => "removed",
            _ if self.graph_change && (label(&self.base) || label(&self.new)) => "relabelled",
            (None, Some(_)) if self.graph_change => "added",
            (Some(_), None) if self.graph_change => "removed",
            (Some(_), None) => "missing",
            (None, Some(_)) => "new",
            _ => "matched",
        }
    }

    /// The new median over the base's, for a kernel of both traces with a base median.
    pub fn ratio(&self) -> Option<f64> {
        let (b, n) = (self.base.as_ref()?, self.new.as_ref()?);
        (b.p50_ns > 0).then(|| n.p50_ns as f64 / b.p50_ns as f64)
    }

    /// The new median minus the base's, for a kernel of both traces.
    pub fn delta_ns(&self) -> Option<i64> {
        let (b, n) = (self.base.as_ref()?, self.new.as_ref()?);
        Some(n.p50_ns as i64 - b.p50_ns as i64)
    }
}

/// One annotation range name of either trace (format 1.14): its statistics on each side.
/// Compared by the kernel rule ([`is_slow`] of the medians and p99s), but reported only: an
/// application's ranges time its own work, which decides no verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationRow {
    /// Its name.
    pub name: String,
    /// Its statistics in the base trace, if it was recorded there.
    pub base: Option<AnnotationStats>,
    /// In the new trace.
    pub new: Option<AnnotationStats>,
    /// Whether it is slow by the kernel rule (only a name of both traces can be).
    pub slow: bool,
    /// The confidence interval of its ratio of medians ([`KernelRow::interval`]).
    pub interval: Option<(f64, f64)>,
    /// Not judged for too few ranges on a side ([`KernelRow::too_few`]).
    pub too_few: bool,
}

/// A matched region whose label changed (the graph was built differently).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relabelled {
    /// The region.
    pub key: RegionKey,
    /// Its label in the base trace.
    pub base: String,
    /// In the new trace.
    pub new: String,
}

/// The medians of a matched region timed on both sides, pooled over the graphs that compute
/// the same thing on both sides ([`Pools`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionTimes {
    /// The region, of its pool's first graph.
    pub key: RegionKey,
    /// The ranks of the prepared graphs pooled (ascending; the first is `key`'s).
    pub graphs: Vec<u64>,
    /// Its label.
    pub label: String,
    /// Its median duration in the base trace.
    pub base_p50_ns: u64,
    /// In the new trace.
    pub new_p50_ns: u64,
}

impl RegionTimes {
    /// The new median over the base's, where the base's is not 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.base_p50_ns > 0).then(|| self.new_p50_ns as f64 / self.base_p50_ns as f64)
    }
}

/// An operation of a graph both traces prepared, in one trace only: a kernel added to the
/// graph (new only) or removed from it (base only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphChange {
    /// The operation's key.
    pub key: OpKey,
    /// Its region's index in the prepared graph, in the trace that has it.
    pub region: u32,
    /// Its node, in the trace that has it.
    pub node: u32,
    /// Whether it was added (in new only), else removed (in base only).
    pub added: bool,
}

/// An operation timed in both traces: its durations on each side (as a kernel's, by its
/// name), pooled over the graphs that compute the same thing on both sides ([`Pools`]),
/// judged by the kernel rule.
#[derive(Clone, Debug, PartialEq)]
pub struct OpTimes {
    /// The operation's key, in its pool's first graph.
    pub key: OpKey,
    /// The ranks of the prepared graphs pooled (ascending; the first is `key`'s).
    pub graphs: Vec<u64>,
    /// Its region in base, in new (each side's own index; see [`OpTimes::place`]).
    pub region: [u32; 2],
    /// Its node (index in its graph) in base, in new: where it runs in its region.
    pub node: [u32; 2],
    /// Its durations in base.
    pub base: KernelStats,
    /// In new.
    pub new: KernelStats,
    /// Whether it is slow by the kernel rule (reported; the kernels decide the verdict).
    pub slow: bool,
    /// The confidence interval of its ratio of medians ([`KernelRow::interval`]).
    pub interval: Option<(f64, f64)>,
    /// Not judged for too few runs on a side ([`KernelRow::too_few`]).
    pub too_few: bool,
}

impl OpTimes {
    /// Where the operation runs as the report names it: its region and node in base, the
    /// index its region's row names ([`RegionTimes::key`]: base's, once a graph that gained
    /// or lost a region is paired by label, [`super::align_regions`]). An operation of a
    /// graph one trace alone prepared (pooled with graphs of both) has its side's.
    pub fn place(&self) -> (u32, u32) {
        (self.region[0], self.node[0])
    }
}

/// Regions paired by [`RegionKey`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Regions {
    /// Regions of both traces (relabelled ones included): regions of prepared graphs, by
    /// graph and index, each over its runs, not the runs themselves.
    pub matched: usize,
    /// Regions only in base.
    pub only_base: usize,
    /// Regions only in new.
    pub only_new: usize,
    /// Matched regions whose label changed.
    pub relabelled: Vec<Relabelled>,
    /// Matched regions with their label, timed on both sides.
    pub times: Vec<RegionTimes>,
}

/// What `diff` concludes from its two passes (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Every kernel of either trace, by name (see the module docs: operations' names where
    /// both traces timed operations, else region labels).
    pub kernels: Vec<KernelRow>,
    /// Whether kernels are the operations' names (both traces timed operations).
    pub by_operation: bool,
    /// Where either trace has no operation timings, which, in words (kernels are then
    /// compared by region label).
    pub op_note: Option<String>,
    /// Operations added to or removed from a graph both traces prepared, in key order.
    pub graph_changes: Vec<GraphChange>,
    /// Operations timed in both traces, in key order.
    pub op_times: Vec<OpTimes>,
    /// Every annotation range name of either trace, by name (reported, not judged).
    pub annotations: Vec<AnnotationRow>,
    /// Regions paired by key.
    pub regions: Regions,
    /// Slow kernels.
    pub slow_kernels: usize,
    /// Kernels only in new: by name, whether or not an operation added to a graph explains
    /// it (status `new` or `added`; a `relabelled` region label is none).
    pub new_kernels: usize,
    /// Kernels only in base, which new never runs: status `missing` or `removed` (an
    /// operation removed from a graph); a `relabelled` region label is none.
    pub missing_kernels: usize,
    /// Items in one trace only or relabelled (see the module docs), those of
    /// [`Comparison::past_an_end`] included.
    pub one_sided: usize,
    /// Of `one_sided`, the items an incomplete trace (cut short, damaged, lossy) lacks:
    /// past its end, lost to its damage or by its recorder (the reasons say which), not a
    /// difference (the verdict leaves them out). The name is the field's JSON key.
    pub past_an_end: usize,
    /// The trace that holds no submission while the other holds some.
    pub empty_side: Option<Side>,
    /// The verdict of the counts.
    pub verdict: Verdict,
    /// What decided the verdict, in words.
    pub reasons: Vec<String>,
    /// Each trace's recorded command line as compared ([`arguments`]).
    pub arguments: [Option<Vec<String>>; 2],
    /// Whether each trace was read whole and lost no records while recording.
    pub complete: [bool; 2],
    /// Records each trace lost while recording.
    pub records_lost: [u64; 2],
    /// Whether base, new holds a range (a range recording or a trim).
    pub ranged: [bool; 2],
    /// Where either holds one: the submissions compared, those both hold, per runtime rank
    /// ([`Matched::compared`]).
    pub compared: Option<BTreeMap<u32, Held>>,
    /// Where the ranges the two traces hold have no submission in common, that in one line
    /// (the first reason): "the traces hold no submission in common (base 0..9, new
    /// 20..29): nothing compared". The verdict is then [`NOTHING_COMPARED`], exit 2.
    pub nothing_compared: Option<String>,
}

impl Comparison {
    /// `new`, `base` or `both`: which trace holds a range, where either does.
    pub fn ranged_side(&self) -> Option<&'static str> {
        match self.ranged {
            [true, true] => Some("both"),
            [true, false] => Some(Side::Base.name()),
            [false, true] => Some(Side::New.name()),
            [false, false] => None,
        }
    }
}

/// The verdict's name when nothing differs in what both traces hold but one of them is
/// incomplete (damaged, cut short, or it lost records): not `same`.
pub const SAME_AS_FAR_AS_BOTH_GO: &str = "same_as_far_as_both_go";

/// The verdict's name when the ranges the two traces hold have no submission in common:
/// nothing was compared, which is no match ([`Comparison::nothing_compared`]).
pub const NOTHING_COMPARED: &str = "nothing_compared";

impl Comparison {
    /// The verdict's name: [`NOTHING_COMPARED`] where the traces hold no submission in
    /// common, else [`Verdict::name`], or [`SAME_AS_FAR_AS_BOTH_GO`] for a *same* verdict of
    /// traces not both read whole.
    pub fn verdict_name(&self) -> &'static str {
        if self.nothing_compared.is_some() {
            NOTHING_COMPARED
        } else if self.verdict == Verdict::Same && self.complete != [true; 2] {
            SAME_AS_FAR_AS_BOTH_GO
        } else {
            self.verdict.name()
        }
    }

    /// The process exit code: 2 where nothing was compared (input that cannot be used for
    /// a comparison), else [`Verdict::exit_code`].
    pub fn exit_code(&self) -> u8 {
        if self.nothing_compared.is_some() {
            2
        } else {
            self.verdict.exit_code()
        }
    }

    /// Whether the recordings' arguments differ.
    pub fn arguments_differ(&self) -> bool {
        self.arguments[0] != self.arguments[1]
    }
}

/// Compares two traces from their first passes and their second pass (see the module docs);
/// `max_slowdown` is the kernel rule's ratio.
pub fn compare(base: &Profile, new: &Profile, m: &Matched, max_slowdown: f64) -> Comparison {
    // Kernels by label and regions by rank: the one rule of `diff` and `replay`
    // (`crate::matching`).
    // Operations of the graphs both prepared, paired by graph, name and place.
    let graphs_of_both = |key: &OpKey| {
        let graph = (key.runtime, key.prepared);
        base.graphs.contains_key(&graph) && new.graphs.contains_key(&graph)
    };
    // Graphs that compute the same thing in both traces pool their timing rows (the rule of
    // `crate::matching`): a graph's signature on both sides, so that a graph changed in one
    // trace leaves its pool. A graph one trace alone prepared joins the pool of the graphs
    // identical in both to it (its signature on both sides): the frame contexts of a pipeline
    // recorded at another `--in-flight` (three identical graphs against one) are samples of
    // the same regions, where they were left one-sided and the rows too few to judge (a
    // fresh user's pass).
    let pools = Pools::new(base.graphs.keys().chain(new.graphs.keys()).map(|graph| {
        let (b, n) = (base.graphs.get(graph), new.graphs.get(graph));
        let signature = b.or(n).expect("a graph of one side");
        (*graph, (*b.unwrap_or(signature), *n.unwrap_or(signature)))
    }));
    let in_both =
        |graph: &(u32, u64)| base.graphs.contains_key(graph) && new.graphs.contains_key(graph);
    // A graph of one side that pools with graphs of both: its rows join theirs.
    let pooled_with_both = |runtime: u32, prepared: u64| {
        let first = pools.first(runtime, prepared);
        first != prepared && in_both(&(runtime, first)) && !in_both(&(runtime, prepared))
    };
    let mut graph_changes = Vec::new();
    let untimed_at = |op: &OpProfile| OpProfile {
        region: op.region,
        node: op.node,
        timings: Default::default(),
    };
    // Operations of both sides, by graph and place ((name, nth)), with their regions.
    let mut timed_ops = Vec::new();
    for (key, paired) in pair(base.operations.clone(), new.operations.clone()) {
        match paired {
            Paired::Both(b, n) => {
                let place = (key.runtime, key.prepared, (key.name, key.nth));
                timed_ops.push((place, (b, n)));
            }
            // The side it lacks untimed, at its place (the row names base's region).
            Paired::Base(op) if pooled_with_both(key.runtime, key.prepared) => {
                let place = (key.runtime, key.prepared, (key.name, key.nth));
                let untimed = untimed_at(&op);
                timed_ops.push((place, (op, untimed)));
            }
            Paired::New(op) if pooled_with_both(key.runtime, key.prepared) => {
                let place = (key.runtime, key.prepared, (key.name, key.nth));
                timed_ops.push((place, (untimed_at(&op), op)));
            }
            Paired::Base(op) | Paired::New(op) if graphs_of_both(&key) => {
                let added = !base.operations.contains_key(&key);
                graph_changes.push(GraphChange {
                    key,
                    region: op.region,
                    node: op.node,
                    added,
                });
            }
            _ => {}
        }
    }
    let merge = |into: &mut crate::stats::Timings, t: crate::stats::Timings| {
        into.sketch.merge(&t.sketch);
        into.device += t.device;
        into.failed += t.failed;
    };
    let pooled_ops = pools.pool(timed_ops, |(b, n), (more_b, more_n)| {
        merge(&mut b.timings, more_b.timings);
        merge(&mut n.timings, more_n.timings);
    });
    let mut op_times = Vec::new();
    for ((runtime, prepared, (name, nth)), (b, n)) in pooled_ops {
        let (mut bt, mut nt) = (b.timings, n.timings);
        // Timed on both sides once pooled: a graph of the pool whose runs all failed on one
        // side (their times are left out) still brings the other side's samples.
        if bt.sketch.count() == 0 || nt.sketch.count() == 0 {
            continue;
        }
        let stats = |t: &mut crate::stats::Timings| KernelStats {
            label: NO_LABEL,
            name: name.clone(),
            count: t.sketch.count(),
            total_ns: t.sketch.total(),
            mean_ns: t.sketch.total() / t.sketch.count(),
            p50_ns: t.sketch.percentile(50.0),
            p99_ns: t.sketch.percentile(99.0),
            min_ns: t.sketch.min(),
            max_ns: t.sketch.max(),
            exact: t.sketch.is_exact(),
            failed: t.failed,
            device: t.device,
            p50_interval_ns: t.sketch.median_interval(),
        };
        let (bs, ns) = (stats(&mut bt), stats(&mut nt));
        let judged = judge(&bs, &ns, max_slowdown);
        op_times.push(OpTimes {
            graphs: pools.members(runtime, prepared),
            key: OpKey {
                runtime,
                prepared,
                name,
                nth,
            },
            region: [b.region, n.region],
            node: [b.node, n.node],
            base: bs,
            new: ns,
            slow: judged.slow,
            interval: judged.interval,
            too_few: judged.too_few,
        });
    }

    // Kernels: the operations' names where both timed them (see the module docs).
    let timed = [base.op_times.recorded > 0, new.op_times.recorded > 0];
    let by_operation = timed == [true, true];
    let op_note = match timed {
        [true, true] => None,
        [false, false] => Some(
            "per-operation times: none recorded in either trace; kernels are compared by \
             region label"
                .to_owned(),
        ),
        [b, _] => Some(format!(
            "per-operation times: none recorded in {}; kernels are compared by region label",
            if b { "new" } else { "base" }
        )),
    };
    let kernel_rows = |p: &Profile| -> BTreeMap<String, KernelStats> {
        if !by_operation {
            return p.kernels.clone();
        }
        let mut rows = p.op_kernels.clone();
        for (label, k) in &p.kernels {
            if !p.op_timed_labels.contains(label) {
                rows.entry(label.clone()).or_insert_with(|| k.clone());
            }
        }
        rows
    };
    let mut kernels = Vec::new();
    let (mut slow, mut added, mut missing) = (0, 0, 0);
    let (mut added_kernels, mut removed_kernels) = (0, 0);
    for (name, paired) in pair(kernel_rows(base), kernel_rows(new)) {
        let row = match paired {
            Paired::Both(b, n) => {
                let judged = judge(&b, &n, max_slowdown);
                slow += usize::from(judged.slow);
                KernelRow {
                    name,
                    base: Some(b),
                    new: Some(n),
                    slow: judged.slow,
                    interval: judged.interval,
                    too_few: judged.too_few,
                    graph_change: false,
                    operation_change: false,
                }
            }
            Paired::Base(b) => KernelRow {
                name,
                base: Some(b),
                new: None,
                slow: false,
                interval: None,
                too_few: false,
                graph_change: false,
                operation_change: false,
            },
            Paired::New(n) => KernelRow {
                name,
                base: None,
                new: Some(n),
                slow: false,
                interval: None,
                too_few: false,
                graph_change: false,
                operation_change: false,
            },
        };
        kernels.push(row);
    }

    let rule = Slowdown {
        max_ratio: Some(max_slowdown),
        floor_ns: NOISE_FLOOR_NS,
    };
    let annotations = pair(base.annotations.clone(), new.annotations.clone())
        .into_iter()
        .map(|(name, paired)| {
            let (base, new) = match paired {
                Paired::Both(b, n) => (Some(b), Some(n)),
                Paired::Base(b) => (Some(b), None),
                Paired::New(n) => (None, Some(n)),
            };
            let judged = match (&base, &new) {
                (Some(b), Some(n)) => timing(Some(b.into()), Some(n.into()), &rule, true, 1.0),
                _ => TimingMatch::default(),
            };
            AnnotationRow {
                name,
                base,
                new,
                slow: judged.slow,
                interval: judged.interval,
                too_few: judged.too_few,
            }
        })
        .collect();

    let mut regions = Regions::default();
    // Regions timed on both sides, by graph and index, pooled below.
    let mut timed_regions = Vec::new();
    for (key, paired) in pair(base.regions.clone(), new.regions.clone()) {
        let ((label, d), (new_label, nd)) = match paired {
            Paired::Both(b, n) => (b, n),
            // Compared in its pool's rows (see `pools`).
            Paired::Base((label, d)) if pooled_with_both(key.runtime, key.prepared) => {
                regions.matched += 1;
                let region = (key.runtime, key.prepared, key.region);
                timed_regions.push((region, (label, d, Sketch::default())));
                continue;
            }
            Paired::New((label, nd)) if pooled_with_both(key.runtime, key.prepared) => {
                regions.matched += 1;
                let region = (key.runtime, key.prepared, key.region);
                timed_regions.push((region, (label, Sketch::default(), nd)));
                continue;
            }
            Paired::Base(_) => {
                regions.only_base += 1;
                continue;
            }
            Paired::New(_) => {
                regions.only_new += 1;
                continue;
            }
        };
        regions.matched += 1;
        if label != new_label {
            regions.relabelled.push(Relabelled {
                key,
                base: label,
                new: new_label,
            });
            continue;
        }
        // Runs on one side only still join the pool (a graph of both that one trace never
        // ran, its frames run by an identical graph): the pooled row needs both, below.
        timed_regions.push(((key.runtime, key.prepared, key.region), (label, d, nd)));
    }
    let pooled = pools.pool(timed_regions, |(_, d, nd), (_, more_d, more_nd)| {
        d.merge(&more_d);
        nd.merge(&more_nd);
    });
    for ((runtime, prepared, region), (label, mut d, mut nd)) in pooled {
        // Timed on both sides once pooled (a one-sided graph's runs alone compare nothing).
        if d.count() == 0 || nd.count() == 0 {
            continue;
        }
        regions.times.push(RegionTimes {
            key: RegionKey {
                runtime,
                prepared,
                region,
            },
            graphs: pools.members(runtime, prepared),
            label,
            base_p50_ns: d.percentile(50.0),
            new_p50_ns: nd.percentile(50.0),
        });
    }

    // A label of one side only that a relabelled region carries, in a graph that gained or
    // lost an operation, names no kernel added or removed: the graph change says what was.
    let changed_graphs: std::collections::BTreeSet<(u32, u64)> = graph_changes
        .iter()
        .map(|c| (c.key.runtime, c.key.prepared))
        .collect();
    for row in &mut kernels {
        let side = match (&row.base, &row.new) {
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            _ => None,
        };
        let relabelled = regions.relabelled.iter().any(|r| {
            changed_graphs.contains(&(r.key.runtime, r.key.prepared))
                && match side {
                    Some(false) => r.base == row.name,
                    Some(true) => r.new == row.name,
                    None => false,
                }
        });
        let changed = graph_changes
            .iter()
            .any(|c| Some(c.added) == side && c.key.name == row.name);
        row.graph_change = relabelled || changed;
        // A kernel of one side named by an operation added or removed there runs in one
        // trace only, whatever else changed with it: an NPU region's label row (its
        // operations untimed) that a relabelled region carries was `relabelled`, counted
        // as neither new nor missing (a break-it pass: `diff` of the hazards workload
        // against the pipeline, `hrx_npu_threshold 0/3`).
        row.operation_change = changed;
        // `added` and `removed` rows are counted again here, in the summary's counts: a
        // kernel that no longer runs is missing whatever explains it (a script gating on
        // `missing_kernels` missed six kernels gone from a graph: a break-it pass); the
        // one-sided count below takes them from the graph changes only.
        match row.status() {
            "missing" => missing += 1,
            "new" => added += 1,
            "removed" => removed_kernels += 1,
            "added" => added_kernels += 1,
            _ => {}
        }
    }
    let (differing, changed) = (m.differing.len(), m.changed.len());
    // A trace that holds no submission beside one that holds some: the program did none
    // of its work (it stopped before its first submit), whatever else matches.
    let empty = match (base.submissions > 0, new.submissions > 0) {
        (true, false) => Some(Side::New),
        (false, true) => Some(Side::Base),
        _ => None,
    };
    // Unless that trace is incomplete (cut before its first submit, damaged): its work lies
    // past its end, and nothing was compared (exit 2), where it read "did none of the work"
    // (exit 1) beside its work counted as past its end (a break-it pass).
    let complete_sides = [complete(base), complete(new)];
    let empty_side = empty.filter(|side| complete_sides[*side as usize]);
    let empty_incomplete = empty.filter(|side| !complete_sides[*side as usize]);
    let regression = slow > 0 || differing > 0 || changed > 0 || empty_side.is_some();
    // Items only one trace holds: what base lacks, what new lacks.
    let removed = graph_changes.iter().filter(|c| !c.added).count();
    let lacking = [
        regions.only_new
            + m.submissions_one_sided[1] as usize
            + m.outputs_one_sided[1] as usize
            + added
            + (graph_changes.len() - removed),
        regions.only_base
            + m.submissions_one_sided[0] as usize
            + m.outputs_one_sided[0] as usize
            + missing
            + removed,
    ];
    let one_sided = lacking[0] + lacking[1] + regions.relabelled.len();
    // What an incomplete trace (cut short, damaged, lossy) lacks past what it holds is not a
    // difference: "as far as both go" (a cut copy of a trace read `different`, its
    // submissions past the cut counted as one trace's only; fresh-user pass). Outputs and
    // submissions are counted so only past its last submission of their graph (an output
    // the other trace holds of a submission the cut one holds too is a difference: a
    // break-it pass); regions, kernels and graph changes, which have no submission, as a
    // whole.
    // And what a lossy side's recorder lost anywhere (not only past its end): as many of
    // the other's outputs as it lost digests, as many of its submissions as it lost
    // `Submit`s (one lost digest read `different`, its output "only in base", under a line
    // saying what the lossy side lacks is not a difference: a break-it pass).
    let profiles = [base, new];
    let past_ends: [usize; 2] = std::array::from_fn(|side| {
        let other = 1 - side;
        if complete_sides[side] {
            return 0;
        }
        let lost_kind = |kind: &str| lost_of(profiles[side], kind);
        let outputs_lost =
            (m.outputs_one_sided[other] - m.outputs_past_end[other]).min(lost_kind("OutputDigest"));
        let submissions_lost = (m.submissions_one_sided[other] - m.submissions_past_end[other])
            .min(lost_kind("Submit"));
        lacking[side] - (m.submissions_one_sided[other] + m.outputs_one_sided[other]) as usize
            + (m.submissions_past_end[other] + m.outputs_past_end[other]) as usize
            + (outputs_lost + submissions_lost) as usize
    });
    let past_an_end: usize = past_ends.iter().sum();
    let verdict = Verdict::of(
        slow + differing + changed + usize::from(empty_side.is_some()),
        one_sided - past_an_end,
    );
    debug_assert_eq!(regression, verdict == Verdict::Regression);
    let arguments = [arguments(base), arguments(new)];
    // What decided the verdict, in words, from the counts above.
    let mut reasons = Vec::new();
    if let Some(side) = empty_side {
        let other = if side == Side::New { base } else { new };
        reasons.push(format!(
            "{} holds no submission ({} in the other trace): it did none of the work",
            side.name(),
            other.submissions
        ));
    }
    let arguments_differ = arguments[0] != arguments[1];
    for (n, what) in [
        (slow, "slow kernel"),
        (differing, "differing output"),
        (changed, "changed outcome"),
    ] {
        if n > 0 {
            let mut reason = plural(n as u64, what);
            // Still a regression (a CI gate compares one command's runs), but a reader
            // diffing two runs on other inputs is told where differing outputs may come from.
            if what == "differing output" && arguments_differ {
                reason.push_str(
                    " (the recordings' arguments differ: a run on other inputs gives other \
                     outputs)",
                );
            }
            reasons.push(reason);
        }
    }
    if !regression && one_sided > past_an_end {
        reasons.push(format!(
            "{} in one trace only or relabelled",
            plural((one_sided - past_an_end) as u64, "item")
        ));
    }
    for (side, lacks) in [Side::Base, Side::New].into_iter().zip(past_ends) {
        if lacks > 0 {
            let profile = if side == Side::Base { base } else { new };
            reasons.push(format!(
                "{} only in {}: {}, not compared",
                plural(lacks as u64, "item"),
                side.other().name(),
                lacking_where(profile, side)
            ));
        }
    }
    // A range recording or a trim holds only some submissions: say which were compared,
    // or that none was.
    let ranged = [!base.ranges.is_empty(), !new.ranges.is_empty()];
    let nothing_compared = m
        .compared
        .as_ref()
        .filter(|compared| compared.values().all(Vec::is_empty))
        .map(|_| {
            format!(
                "the traces hold no submission in common (base {}, new {}): nothing compared",
                holding(base),
                holding(new)
            )
        })
        .or_else(|| {
            empty_incomplete.map(|side| {
                let profile = if side == Side::Base { base } else { new };
                format!(
                    "{} holds no submission and is incomplete: its work is {}, nothing compared",
                    side.name(),
                    lacking_where(profile, side)
                )
            })
        });
    if let Some(line) = &nothing_compared {
        reasons.insert(0, line.clone());
    } else if let Some(compared) = &m.compared {
        let several = compared.len() > 1;
        let submissions: Vec<String> = compared
            .iter()
            .map(|(rank, held)| {
                let runtime = if several {
                    format!("runtime {} ", u64::from(*rank) + 1)
                } else {
                    String::new()
                };
                format!("{runtime}submissions {}", describe(held))
            })
            .collect();
        let which = match ranged {
            [true, true] => "the range both hold; the others are not compared".to_owned(),
            [false, true] => "the range new holds; base's others are not compared".to_owned(),
            _ => "the range base holds; new's others are not compared".to_owned(),
        };
        // In another recording the numbers may name other graphs' submissions (threads that
        // submit at once number them as they run): their one-sided outputs say it, not a
        // change.
        let one_sided = m
            .outputs_one_sided
            .iter()
            .chain(&m.submissions_one_sided)
            .sum::<u64>();
        let hint = if one_sided > 0 && !super::align::one_recording(base, new) {
            " (by submission number: in another recording, threads submitting at once may \
             have given those numbers to other graphs' submissions, which then read as in one \
             trace only; compare whole recordings for like counts)"
        } else {
            ""
        };
        reasons.push(format!(
            "compared {}, {which}{hint}",
            submissions.join(", ")
        ));
    }
    if m.outputs_of_other_graphs > 0 {
        reasons.push(format!(
            "{} of outputs not compared: at one submission number the traces ran different \
             graphs (a trace lost submissions, so outputs pair by number, which a \
             multi-threaded program gives its submits as its threads ran)",
            plural(m.outputs_of_other_graphs, "pair")
        ));
    }
    let past_window = m.unmatched_past_window.iter().sum::<u64>();
    if past_window > 0 {
        reasons.push(format!(
            "{} left the streaming match window unmatched (the submission sequences differ)",
            plural(past_window, "item")
        ));
    }
    // Said once: with the differing outputs above, else on its own; beside a *same*
    // verdict it is no cause, and reads as none.
    if arguments_differ && differing == 0 {
        reasons.push(if verdict == Verdict::Same {
            "nothing compared differs, though the recordings' arguments differ".to_owned()
        } else {
            "the recordings' arguments differ".to_owned()
        });
    }
    // A damaged or cut-short side is compared on what was recovered: nothing in what both
    // hold differs, but that is not "same" (exit 0 still: nothing regressed, as for
    // "different").
    let incomplete: Vec<String> = [(Side::Base, base), (Side::New, new)]
        .into_iter()
        .filter(|(_, p)| !complete(p))
        .map(|(side, p)| {
            let how = p.recovery.as_ref().map_or("", |r| {
                if r.is_complete() {
                    "the recorder lost records"
                } else {
                    r.end_as(p.being_recorded)
                }
            });
            format!("{} is incomplete ({how})", side.name())
        })
        .collect();
    if !incomplete.is_empty() {
        reasons.push(format!(
            "{}: only what was recovered is compared",
            incomplete.join(", ")
        ));
    }
    Comparison {
        kernels,
        by_operation,
        op_note,
        graph_changes,
        op_times,
        annotations,
        regions,
        slow_kernels: slow,
        new_kernels: added + added_kernels,
        missing_kernels: missing + removed_kernels,
        one_sided,
        past_an_end,
        empty_side,
        verdict,
        reasons,
        arguments,
        complete: complete_sides,
        records_lost: [lost(base), lost(new)],
        ranged,
        compared: m.compared.clone(),
        nothing_compared,
    }
}

/// The submissions a trace holds, in words: its ranges (`0..9`; `runtime 1 0..9 and
/// runtime 2 4..7` of several runtimes), or `whole`.
fn holding(profile: &Profile) -> String {
    let several = profile.ranges.len() > 1;
    let ranges: Vec<String> = profile
        .ranges
        .iter()
        .map(|(rank, held)| {
            if several {
                format!("runtime {} {}", u64::from(*rank) + 1, describe(held))
            } else {
                describe(held)
            }
        })
        .collect();
    if ranges.is_empty() {
        "whole".to_owned()
    } else {
        ranges.join(" and ")
    }
}

/// Whether the trace was read whole (closed cleanly, nothing skipped) and lost no records
/// while recording.
pub(super) fn complete(profile: &Profile) -> bool {
    profile
        .recovery
        .as_ref()
        .is_none_or(|r| r.is_complete() && r.lost.is_none())
}

/// Where what an incomplete trace lacks of the other's is, in words that follow "its work
/// is": `lost to new's damage (from byte 1252)`, `past new's end (cut short)`, `lost by
/// new's recorder`, ... (each that applies, joined by "or"). Matching by order cannot tell
/// where a lost submission stood: damage at a file's start reads as items past its end,
/// which "past what new holds" said of every incomplete trace.
fn lacking_where(profile: &Profile, side: Side) -> String {
    use hrx_capture::reader::WarningKind as W;
    let name = side.name();
    let Some(r) = &profile.recovery else {
        return format!("past what {name} holds (it is incomplete)");
    };
    let mut places = Vec::new();
    if r.skipped_blocks > 0 || r.skipped_records > 0 {
        // The first damaged place the reader named, as its warnings say it (`byte N: ...`).
        let first = (profile.warnings.iter())
            .filter(|w| {
                matches!(
                    w.kind,
                    W::BlockSkipped { .. }
                        | W::Resynchronized { .. }
                        | W::RecordSkipped { .. }
                        | W::MoreRecordsSkipped { .. }
                )
            })
            .map(|w| w.offset)
            .min();
        places.push(match first {
            Some(byte) => format!("lost to {name}'s damage (from byte {byte})"),
            None => format!("lost to {name}'s damage"),
        });
    }
    if !r.closed {
        places.push(format!("past {name}'s end (cut short)"));
    } else if !r.clean_close && places.is_empty() {
        places.push(format!("past {name}'s damaged end"));
    }
    if !r.lost.is_none() {
        places.push(format!("lost by {name}'s recorder"));
    }
    if r.source_incomplete {
        places.push(format!(
            "missing from {name}'s source recording (a trim of an incomplete one)"
        ));
    }
    if r.newer_records > 0 {
        places.push(format!(
            "in {name}'s records of a newer format this reader skips"
        ));
    }
    if places.is_empty() {
        return format!("past what {name} holds (it is incomplete)");
    }
    places.join(" or ")
}

/// Records the trace lost while recording.
fn lost(profile: &Profile) -> u64 {
    profile.recovery.as_ref().map_or(0, |r| r.lost.total)
}

/// Records of `kind` (`OutputDigest`) the trace lost while recording.
fn lost_of(profile: &Profile, kind: &str) -> u64 {
    let Some(r) = &profile.recovery else {
        return 0;
    };
    (r.lost.by_kind().into_iter())
        .find(|(k, _)| *k == kind)
        .map_or(0, |(_, n)| n)
}

/// The recorded command line as compared: the program's file name (a debug and a release
/// build of one program are one program), then its arguments without the trace's own name
/// (the value of `-o`/`--output`, which always differs between two recordings), and, of
/// `hrx-trace record`'s own command line, without its range options (`--capture-range`,
/// `--delay`, `--duration`: what of the run is recorded). `None` without a session record.
pub fn arguments(profile: &Profile) -> Option<Vec<String>> {
    let args = &profile.session.as_ref()?.args;
    let mut out = Vec::with_capacity(args.len());
    let mut rest = args.iter();
    if let Some(program) = rest.next() {
        let name = Path::new(program)
            .file_name()
            .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
        out.push(name);
    }
    // `hrx-trace record`'s own range options choose what is recorded of the run, not the
    // run: a range recording and a whole one of the same run have the same arguments; nor
    // do what it prints (`-q`, `-v`, `--json`, `--color`) change the run.
    let recorder = out.first().is_some_and(|p| p == "hrx-trace");
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--capture-range" | "--delay" | "--duration" | "--color" if recorder => {
                rest.next();
            }
            "-q" | "--quiet" | "-v" | "--verbose" | "--json" if recorder => {}
            _ if recorder
                && ["--capture-range=", "--delay=", "--duration=", "--color="]
                    .iter()
                    .any(|o| a.starts_with(o)) => {}
            // The output's name, however it was given, is not the run.
            "-o" | "--output" => {
                rest.next();
                out.push("-o …".to_owned());
            }
            _ if a.starts_with("--output=") || (a.starts_with("-o") && !a.starts_with("--")) => {
                out.push("-o …".to_owned());
            }
            "--" if recorder => {
                out.push(a.clone());
                out.extend(rest.by_ref().cloned());
            }
            _ => out.push(a.clone()),
        }
    }
    if recorder {
        normalize_options(&mut out);
    }
    Some(out)
}

/// `hrx-trace record`'s options in one order and form: each option with its value as one
/// item (`--frames=8` as `--frames 8`), sorted, up to a `--` (the recorded program's own
/// arguments after it keep their order): `--frames 8 --workload pipeline` and `--workload
/// pipeline --frames 8` are one run (a break-it pass read them as different runs).
fn normalize_options(args: &mut Vec<String>) {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    // The program and its subcommand (`record`) stay first.
    let start = if args.get(1).is_some_and(|a| !a.starts_with('-')) {
        2
    } else {
        1
    };
    let mut items: Vec<String> = Vec::new();
    let mut i = start;
    while i < end {
        let a = &args[i];
        let item = match a.split_once('=') {
            Some((option, value)) if a.starts_with("--") => format!("{option} {value}"),
            _ if a.starts_with('-') && i + 1 < end && !args[i + 1].starts_with('-') => {
                i += 1;
                format!("{a} {}", args[i])
            }
            _ => a.clone(),
        };
        items.push(item);
        i += 1;
    }
    items.sort();
    let rest = args.split_off(end.max(start.min(end)));
    args.truncate(start.min(args.len()));
    args.extend(items);
    args.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::super::profile_records;
    use super::super::tests::{matched, matched_profiled, trace, two_fills};
    use super::*;
    use hrx_capture::schema::Record;

    /// The profile and the comparison of `base` against `new`, within `max_slowdown`.
    fn compared(base: &[Record], new: &[Record], max_slowdown: f64) -> Comparison {
        let (b, n) = (profile_records(base), profile_records(new));
        compare(&b, &n, &matched(base, new), max_slowdown)
    }

    #[test]
    fn a_kernel_is_slow_only_with_its_whole_interval_past_the_ratio_and_the_noise_floor() {
        let profile = profile_records(&trace(4, &[], None));
        let mut base = profile.kernels.values().next().unwrap().clone();
        let set = |k: &mut KernelStats, p50_ns: u64, (low, high): (u64, u64)| {
            k.p50_ns = p50_ns;
            k.p50_interval_ns = Some((low, high));
        };
        set(&mut base, 100_000, (90_000, 110_000));
        let with = |p50_ns: u64, interval| {
            let mut new = base.clone();
            set(&mut new, p50_ns, interval);
            new
        };
        // 2.5x, the interval 2.09x..3.0x.
        assert!(is_slow(&base, &with(250_000, (230_000, 270_000)), 2.0));
        // Within the ratio.
        assert!(!is_slow(&base, &with(190_000, (180_000, 200_000)), 2.0));
        // Past the ratio, its interval not wholly (reaching down to 1.8x).
        assert!(!is_slow(&base, &with(250_000, (198_000, 300_000)), 2.0));
        // Too few spans on a side: no interval, never slow.
        let mut few = with(900_000, (890_000, 910_000));
        few.p50_interval_ns = None;
        assert!(!is_slow(&base, &few, 2.0));
        // Past the ratio, but grown by less than the noise floor.
        set(&mut base, 10_000, (10_000, 10_000));
        let grown = |by: u64| {
            let mut new = base.clone();
            set(&mut new, 10_000 + by, (10_000 + by, 10_000 + by));
            new
        };
        assert!(!is_slow(&base, &grown(NOISE_FLOOR_NS), 2.0));
        assert!(is_slow(&base, &grown(NOISE_FLOOR_NS + 1), 2.0));
    }

    /// Annotation ranges are paired by name and compared by the kernel rule, but a slow one
    /// decides nothing: the verdict stays what the kernels and outputs make it.
    #[test]
    fn annotation_ranges_are_paired_by_name_and_reported_without_deciding_the_verdict() {
        let records = trace(20, &[], None);
        let mut base = records.clone();
        base.extend(crate::synthetic::annotations(8, 10_000_000, 1_000_000));
        // The new trace decodes ten times slower and names one range differently.
        let mut new = records.clone();
        new.extend(
            crate::synthetic::annotations(8, 10_000_000, 1_000_000)
                .into_iter()
                .map(|r| match r {
                    Record::AnnotationRange(mut a) => {
                        a.end_ns = a.start_ns + (a.end_ns - a.start_ns) * 10;
                        Record::AnnotationRange(a)
                    }
                    Record::AnnotationName(mut n) if n.text == "frame ready" => {
                        n.text = "unused".into();
                        Record::AnnotationName(n)
                    }
                    r => r,
                }),
        );
        let c = compared(&base, &new, 2.0);
        assert_eq!(c.verdict, Verdict::Same, "{:?}", c.reasons);
        assert_eq!(c.annotations.len(), 1, "{:?}", c.annotations);
        let decode = &c.annotations[0];
        assert_eq!(decode.name, "decode");
        let (b, n) = (decode.base.as_ref().unwrap(), decode.new.as_ref().unwrap());
        assert_eq!((b.count, b.p50_ns), (8, 1_000_000));
        assert_eq!((n.count, n.p50_ns), (8, 10_000_000));
        assert!(decode.slow);
        let same = compared(&base, &base, 2.0);
        assert_eq!(same.annotations.len(), 1);
        assert!(!same.annotations[0].slow);
        // A trace without annotations against one with: its ranges are one-sided rows.
        let none = compared(&records, &base, 2.0);
        assert!(none.annotations[0].base.is_none() && !none.annotations[0].slow);
    }

    #[test]
    fn a_trace_against_itself_is_the_same() {
        let records = trace(20, &[], None);
        let c = compared(&records, &records, 1e9);
        assert_eq!(c.verdict, Verdict::Same);
        assert!(c.reasons.is_empty(), "{:?}", c.reasons);
        assert!(!c.kernels.is_empty());
        assert!(
            c.kernels
                .iter()
                .all(|k| k.status() == "matched" && !k.slow && k.ratio() == Some(1.0))
        );
        assert_eq!((c.regions.only_base, c.regions.only_new), (0, 0));
        assert!(!c.regions.times.is_empty());
        assert!(c.regions.times.iter().all(|t| t.ratio() == Some(1.0)));
        assert_eq!((c.one_sided, c.empty_side), (0, None));
        assert_eq!((c.complete, c.records_lost), ([true; 2], [0; 2]));
        assert!(!c.arguments_differ());
        assert_eq!(c.verdict_name(), "same");
    }

    /// A trace against a cut-short copy of itself (its first half, not read whole): what
    /// the copy lacks lies past its end, not a difference (it read `different`, its
    /// missing submissions and outputs counted as base's only). The same half read whole
    /// (a shorter run) still differs.
    #[test]
    fn what_a_cut_short_trace_lacks_is_past_its_end_not_a_difference() {
        let records = trace(20, &[], None);
        let cut = &records[..records.len() / 2];
        for (base, new, incomplete) in [(&records[..], cut, 1), (cut, &records[..], 0)] {
            let (mut b, mut n) = (profile_records(base), profile_records(new));
            [&mut b, &mut n][incomplete].recovery = Some(hrx_capture::Recovery::default());
            let c = compare(&b, &n, &matched_profiled((&b, base), (&n, new)), 1e9);
            assert_eq!(c.verdict, Verdict::Same, "{:?}", c.reasons);
            assert_eq!(c.verdict_name(), SAME_AS_FAR_AS_BOTH_GO);
            assert!(c.past_an_end > 0 && c.past_an_end == c.one_sided, "{c:?}");
            let side = ["base", "new"][incomplete];
            assert!(
                c.reasons
                    .iter()
                    .any(|r| r.contains(&format!("past {side}'s end (cut short), not compared"))),
                "{:?}",
                c.reasons
            );
        }
        let (b, n) = (profile_records(&records), profile_records(cut));
        let c = compare(&b, &n, &matched(&records, cut), 1e9);
        assert_eq!(c.verdict, Verdict::Different, "{:?}", c.reasons);
        assert_eq!(c.past_an_end, 0);
    }

    /// An output one trace holds of a submission the cut one holds too is a difference, not
    /// past the cut one's end: only outputs of submissions after its last are (a trace
    /// recording every digest against a cut copy of one recording outputs only read "same as
    /// far as both go": a break-it pass).
    #[test]
    fn outputs_a_cut_trace_lacks_within_what_it_holds_are_differences() {
        let records = trace(20, &[], None);
        // Every third output digest gone from the whole trace, which is then cut in half:
        // the full trace holds them, and the cut one lacks those of its own submissions.
        let mut outputs = 0;
        let thinned: Vec<Record> = records
            .iter()
            .filter(|r| {
                !matches!(r, Record::OutputDigest(_)) || {
                    outputs += 1;
                    outputs % 3 != 0
                }
            })
            .cloned()
            .collect();
        let cut = &thinned[..thinned.len() / 2];
        let (b, mut n) = (profile_records(&records), profile_records(cut));
        n.recovery = Some(hrx_capture::Recovery::default());
        let m = matched_profiled((&b, &records), (&n, cut));
        assert!(m.outputs_past_end[0] > 0, "{m:?}");
        assert!(
            m.outputs_past_end[0] < m.outputs_one_sided[0],
            "the outputs within what the cut trace holds are not past its end: {m:?}"
        );
        let c = compare(&b, &n, &m, 1e9);
        assert_eq!(c.verdict, Verdict::Different, "{:?}", c.reasons);
        assert!(c.past_an_end > 0 && c.past_an_end < c.one_sided, "{c:?}");
    }

    #[test]
    fn a_trace_cut_short_is_the_same_only_as_far_as_both_go() {
        let records = trace(20, &[], None);
        let (b, mut n) = (profile_records(&records), profile_records(&records));
        n.recovery = Some(hrx_capture::Recovery::default());
        let c = compare(&b, &n, &matched(&records, &records), 1e9);
        assert_eq!(c.verdict, Verdict::Same);
        assert_eq!(c.complete, [true, false]);
        assert_eq!(c.verdict_name(), SAME_AS_FAR_AS_BOTH_GO);
        assert_eq!(c.reasons.len(), 1);
        assert!(
            c.reasons[0].starts_with("new is incomplete (")
                && c.reasons[0].ends_with("): only what was recovered is compared"),
            "{:?}",
            c.reasons
        );
    }

    #[test]
    fn a_differing_output_and_a_changed_outcome_are_regressions_and_say_so() {
        let base = trace(20, &[], None);
        let new = trace(20, &[3], Some(7));
        let c = compared(&base, &new, 1e9);
        assert_eq!(c.verdict, Verdict::Regression);
        assert_eq!(c.reasons, ["1 differing output", "1 changed outcome"]);
        assert_eq!(c.one_sided, 0);
        // Runs on other arguments: still a regression, and the output line says where such
        // a difference may come from (once: no separate arguments reason).
        let (b, mut n) = (profile_records(&base), profile_records(&new));
        n.session.as_mut().unwrap().args =
            vec!["/bin/app".into(), "--threshold".into(), "9".into()];
        let c = compare(&b, &n, &matched(&base, &new), 1e9);
        assert_eq!(c.verdict, Verdict::Regression);
        assert_eq!(
            c.reasons,
            [
                "1 differing output (the recordings' arguments differ: a run on other inputs \
                 gives other outputs)",
                "1 changed outcome"
            ]
        );
    }

    #[test]
    fn another_run_length_is_different_not_a_regression() {
        let c = compared(&trace(20, &[], None), &trace(25, &[], None), 1e9);
        assert_eq!(c.verdict, Verdict::Different);
        // Five submissions and their five outputs.
        assert_eq!(c.one_sided, 10);
        assert_eq!(c.reasons, ["10 items in one trace only or relabelled"]);
    }

    #[test]
    fn a_side_without_submissions_is_a_regression() {
        let base = trace(20, &[], None);
        let new: Vec<Record> = base
            .iter()
            .filter(|r| !matches!(r, Record::Submit(_)))
            .cloned()
            .collect();
        let c = compared(&base, &new, 1e9);
        assert_eq!(c.empty_side, Some(Side::New));
        assert_eq!(c.verdict, Verdict::Regression);
        assert_eq!(
            c.reasons[0],
            "new holds no submission (20 in the other trace): it did none of the work"
        );
        // The same, incomplete (cut before its first submit): its work lies past its end,
        // nothing was compared (exit 2), not a regression.
        let (b, mut n) = (profile_records(&base), profile_records(&new));
        n.recovery = Some(hrx_capture::Recovery::default());
        let c = compare(&b, &n, &matched(&base, &new), 1e9);
        assert_eq!(c.empty_side, None);
        assert_eq!(c.verdict_name(), NOTHING_COMPARED);
        assert_eq!(c.exit_code(), 2);
        assert_eq!(
            c.reasons[0],
            "new holds no submission and is incomplete: its work is past new's end (cut short), \
             nothing compared"
        );
    }

    /// Damage at the start of a trace is said where it is: the submissions a damaged first
    /// block held are matched by order, so base's last ones are those new lacks, which read
    /// "past what new holds" as though new were cut short. Now the reason names the damage
    /// and its first byte (and a cut-short trace its end, a lossy one its recorder).
    #[test]
    fn what_a_trace_damaged_at_its_start_lacks_is_said_to_be_lost_to_the_damage() {
        use hrx_capture::reader::{Warning, WarningKind};
        let records = trace(20, &[], None);
        // New lost its first five submissions (and what they ran) to a damaged block.
        let first_submits: Vec<u64> = (records.iter())
            .filter_map(|r| match r {
                Record::Submit(s) => Some(s.submission.0),
                _ => None,
            })
            .take(5)
            .collect();
        let lost = |r: &Record| match r {
            Record::Submit(s) => first_submits.contains(&s.submission.0),
            Record::SubmissionDone(d) => first_submits.contains(&d.submission.0),
            Record::OutputDigest(d) => first_submits.contains(&d.submission.0),
            _ => false,
        };
        let damaged: Vec<Record> = records.iter().filter(|r| !lost(r)).cloned().collect();
        let (b, mut n) = (profile_records(&records), profile_records(&damaged));
        n.recovery = Some(hrx_capture::Recovery {
            clean_close: true,
            closed: true,
            skipped_blocks: 1,
            skipped_records: 15,
            ..hrx_capture::Recovery::default()
        });
        n.warnings.push(Warning {
            offset: 1252,
            kind: WarningKind::BlockSkipped {
                records: 15,
                error: hrx_capture::format::FormatError::PayloadChecksum {
                    stored: 1,
                    computed: 2,
                },
            },
        });
        let c = compare(
            &b,
            &n,
            &matched_profiled((&b, &records), (&n, &damaged)),
            1e9,
        );
        assert!(c.past_an_end > 0, "{c:?}");
        let said: Vec<_> = (c.reasons.iter())
            .filter(|r| r.contains("only in base"))
            .collect();
        assert_eq!(said.len(), 1, "{:?}", c.reasons);
        assert!(
            said[0].ends_with("only in base: lost to new's damage (from byte 1252), not compared"),
            "{said:?}"
        );
        assert!(
            !c.reasons.iter().any(|r| r.contains("past what")),
            "{:?}",
            c.reasons
        );
    }

    #[test]
    fn arguments_are_compared_without_the_trace_name_and_the_program_directory() {
        let records = trace(2, &[], None);
        let mut b = profile_records(&records);
        let mut n = profile_records(&records);
        let args = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        b.session.as_mut().unwrap().args = args(&["/debug/app", "-o", "a.hrxt", "--frames", "4"]);
        n.session.as_mut().unwrap().args =
            args(&["/release/app", "--output=b.hrxt", "--frames", "4"]);
        assert_eq!(arguments(&b).unwrap(), ["app", "-o …", "--frames", "4"]);
        assert_eq!(arguments(&n).unwrap(), arguments(&b).unwrap());
        // `hrx-trace record`'s range options are not the run's.
        let mut r = profile_records(&records);
        r.session.as_mut().unwrap().args = args(&[
            "/bin/hrx-trace",
            "record",
            "--capture-range",
            "submissions:4..7",
            "--delay=1s",
            "-q",
            "--color",
            "never",
            "--json",
            "--frames",
            "4",
            "-v",
        ]);
        assert_eq!(
            arguments(&r).unwrap(),
            ["hrx-trace", "record", "--frames 4"]
        );
        // Its options in any order and form, and the output's name attached (`-oa.hrxt`),
        // are one run; the recorded program's arguments after `--` keep their order.
        let recorded = |a: &[&str]| {
            let mut p = profile_records(&records);
            p.session.as_mut().unwrap().args = args(a);
            arguments(&p).unwrap()
        };
        let one = recorded(&[
            "hrx-trace",
            "record",
            "--workload",
            "pipeline",
            "--frames",
            "8",
            "-oa1.hrxt",
        ]);
        let other = recorded(&[
            "/bin/hrx-trace",
            "record",
            "-o",
            "b.hrxt",
            "--frames=8",
            "--workload",
            "pipeline",
        ]);
        assert_eq!(one, other);
        assert_eq!(
            one,
            [
                "hrx-trace",
                "record",
                "--frames 8",
                "--workload pipeline",
                "-o …"
            ]
        );
        let program = |a: &str, b: &str| {
            recorded(&["hrx-trace", "record", "--frames", "2", "--", "app", a, b])
        };
        assert_ne!(program("x", "y"), program("y", "x"));
        assert_eq!(
            program("x", "y"),
            ["hrx-trace", "record", "--frames 2", "--", "app", "x", "y"]
        );
        r.session.as_mut().unwrap().args[0] = "/bin/app".to_owned();
        assert_eq!(arguments(&r).unwrap().len(), 12);
        n.session.as_mut().unwrap().args = args(&["/release/app", "-o", "b.hrxt", "--frames", "8"]);
        let c = compare(&b, &n, &matched(&records, &records), 1e9);
        assert!(c.arguments_differ());
        assert_eq!(c.verdict, Verdict::Same);
        assert_eq!(
            c.reasons,
            ["nothing compared differs, though the recordings' arguments differ"]
        );
    }

    fn without_region(records: &[Record], gone: u32) -> Vec<Record> {
        crate::synthetic::with_region_removed(records.iter().cloned(), gone).collect()
    }

    /// A region removed from a graph (or added: the other way) leaves the others paired by
    /// label, their times compared; by index, each later region was paired with its
    /// neighbour, relabelled, and never timed.
    #[test]
    fn a_region_removed_from_a_graph_leaves_the_others_paired_by_label() {
        let base = trace(20, &[], None);
        let new = without_region(&base, 0);
        // Removed: new's three move down one; added: base's first is new's alone (past
        // base's last index, not counted as matched) and the other three move up one.
        for (base, new, moved, one_sided) in [(&base, &new, 3, (1, 0)), (&new, &base, 3, (0, 1))] {
            let (b, mut n) = (profile_records(base), profile_records(new));
            assert_eq!(super::super::align_regions(&b, &mut n).matched, moved);
            let c = compare(&b, &n, &matched(base, new), 1e9);
            assert!(
                c.regions.relabelled.is_empty(),
                "{:?}",
                c.regions.relabelled
            );
            assert_eq!((c.regions.only_base, c.regions.only_new), one_sided);
            assert_eq!(c.regions.times.len(), 3, "{:?}", c.regions.times);
            assert!(c.regions.times.iter().all(|t| t.ratio() == Some(1.0)));
            // The same graph on both sides: nothing moves.
            let mut again = profile_records(base);
            assert_eq!(
                super::super::align_regions(&b, &mut again),
                super::super::Realigned::default()
            );
        }
    }

    /// An operation's row names its region as the region rows do (base's index: a graph
    /// that lost its first region has its compute region at 1 in base, 0 in new, and its
    /// region row says 1), whichever side lost it; each side's own index stays in `region`.
    #[test]
    fn an_operations_place_is_its_region_rows_index() {
        let base = ops(trace(20, &[], None));
        let new = without_region(&base, 0);
        for (base, new, region) in [(&base, &new, [1, 0]), (&new, &base, [0, 1])] {
            let (b, mut n) = (profile_records(base), profile_records(new));
            super::super::align_regions(&b, &mut n);
            let c = compare(&b, &n, &matched(base, new), 1e9);
            let compute = (c.regions.times.iter())
                .find(|t| t.label.starts_with("blur"))
                .unwrap_or_else(|| panic!("{:?}", c.regions.times));
            assert!(!c.op_times.is_empty());
            for o in &c.op_times {
                assert_eq!(o.region, region, "{o:?}");
                assert_eq!(o.place().0, compute.key.region, "{o:?}");
            }
        }
    }

    #[test]
    fn regions_pair_by_their_longest_common_labels_then_in_order() {
        let regions = |labels: &[&str]| -> Vec<(u32, String)> {
            (0..).zip(labels.iter().map(|l| l.to_string())).collect()
        };
        let pairs =
            |b: &[&str], n: &[&str]| super::super::align::pair_by_label(&regions(b), &regions(n)).0;
        // Unchanged, or changed in place: by index.
        assert_eq!(pairs(&["a", "b"], &["a", "b"]), [Some(0), Some(1)]);
        assert_eq!(
            pairs(&["a", "b", "c"], &["a", "x", "c"]),
            [Some(0), Some(1), Some(2)]
        );
        // One added, one removed.
        assert_eq!(
            pairs(&["a", "c"], &["a", "b", "c"]),
            [Some(0), None, Some(1)]
        );
        assert_eq!(pairs(&["a", "b", "c"], &["a", "c"]), [Some(0), Some(2)]);
        // A gap of two against one: the first pairs, the second is new's alone.
        assert_eq!(
            pairs(&["a", "x", "d"], &["a", "y", "z", "d"]),
            [Some(0), Some(1), None, Some(2)]
        );
        assert_eq!(pairs(&[], &["a"]), [None]);
    }

    /// A graph of thousands of regions that gained one pairs the rest by label: the labels
    /// both ends share pair first, and the table weighs the regions between. It weighed the
    /// whole graph, and past 2^22 pairs (2048 regions a side) left it paired by index, every
    /// region after the one added relabelled and untimed, without a word (a break-it pass).
    /// A graph whose changed regions are too many still pairs them in order, and says so.
    #[test]
    fn a_graph_of_thousands_of_regions_that_gained_one_pairs_the_rest_by_label() {
        use crate::matching::RegionKey;
        let graph = |labels: Vec<String>| {
            (0..)
                .zip(labels)
                .map(|(region, label)| {
                    let key = RegionKey {
                        runtime: 0,
                        prepared: 0,
                        region,
                    };
                    (key, (label, crate::sketch::Sketch::default()))
                })
                .collect()
        };
        let labels: Vec<String> = (0..3000).map(|i| format!("k{}", i % 7)).collect();
        let mut added = labels.clone();
        added.insert(1500, "added".to_owned());
        let records = trace(2, &[], None);
        let (mut b, mut n) = (profile_records(&records), profile_records(&records));
        b.regions = graph(labels.clone());
        n.regions = graph(added);
        let realigned = super::super::align_regions(&b, &mut n);
        assert_eq!(realigned.matched, 1500);
        assert!(realigned.in_order.is_empty(), "{realigned:?}");
        let by_label: Vec<(u32, &str)> = (n.regions.iter())
            .map(|(k, (label, _))| (k.region, label.as_str()))
            .collect();
        assert_eq!(by_label.len(), 3001);
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(by_label[i], (i as u32, label.as_str()));
        }
        assert_eq!(by_label[3000], (3000, "added"));
        // Every label changed: in order, said.
        let regions = |prefix: &str| -> Vec<(u32, String)> {
            (0..3000).map(|i| (i, format!("{prefix}{i}"))).collect()
        };
        let (pairs, in_order) = super::super::align::pair_by_label(&regions("a"), &regions("b"));
        assert_eq!(in_order, Some((3000, 3000)));
        assert!(pairs.iter().enumerate().all(|(j, i)| *i == Some(j)));
    }

    fn with_foo(records: &[Record]) -> Vec<Record> {
        crate::synthetic::with_kernel_added(records.iter().cloned(), "hrx_foo").collect()
    }

    fn ops(records: Vec<Record>) -> Vec<Record> {
        crate::synthetic::with_op_timings(records.into_iter()).collect()
    }

    /// A kernel added to a graph is reported as such (graph, region, name, added), not as
    /// a new kernel named after its region, with operation timings or without; with them,
    /// kernels are paired by their own names and each operation by its place, and the one
    /// added (removed, the other way) is counted as a new (missing) kernel.
    #[test]
    fn a_kernel_added_to_a_graph_is_reported_as_added_not_as_a_new_region_kernel() {
        let plain = trace(20, &[], None);
        for timed in [true, false] {
            let base = if timed {
                ops(plain.clone())
            } else {
                plain.clone()
            };
            let new = with_foo(&base);
            let c = compared(&base, &new, 1e9);
            assert_eq!(c.verdict, Verdict::Different, "{:?}", c.reasons);
            assert_eq!(c.graph_changes.len(), 1, "{:?}", c.graph_changes);
            let change = &c.graph_changes[0];
            assert_eq!(
                (
                    change.key.name.as_str(),
                    change.key.nth,
                    change.region,
                    change.node
                ),
                ("hrx_foo", 0, 1, 5)
            );
            assert!(change.added);
            // No kernel named after the region is new or missing; by operation, hrx_foo
            // runs in new only, so it is a new kernel as well as an added operation.
            let foo = usize::from(timed);
            assert_eq!(
                (c.new_kernels, c.missing_kernels),
                (foo, 0),
                "{:?}",
                c.kernels
            );
            assert_eq!(c.regions.relabelled.len(), 1);
            if timed {
                assert!(c.by_operation && c.op_note.is_none());
                let names: Vec<(&str, &str)> = c
                    .kernels
                    .iter()
                    .map(|k| (k.name.as_str(), k.status()))
                    .collect();
                assert!(names.contains(&("blur", "matched")), "{names:?}");
                assert!(names.contains(&("sobel", "matched")), "{names:?}");
                // The added kernel ran only in new: its row says it was added.
                assert!(names.contains(&("hrx_foo", "added")), "{names:?}");
                assert!(!names.iter().any(|(n, _)| n.contains('+')), "{names:?}");
                let placed: Vec<&str> = c.op_times.iter().map(|o| o.key.name.as_str()).collect();
                assert_eq!(placed, ["blur", "sobel"]);
            } else {
                assert!(!c.by_operation && c.op_times.is_empty());
                let note = c.op_note.as_deref().unwrap();
                assert!(note.contains("none recorded in either trace"), "{note}");
                let relabelled: Vec<&str> = c
                    .kernels
                    .iter()
                    .filter(|k| k.status() == "relabelled")
                    .map(|k| k.name.as_str())
                    .collect();
                assert_eq!(relabelled, ["blur +1", "blur +2"]);
            }
            // Removed, the other way round: a kernel that no longer runs is missing, though
            // a graph change explains it (a script gating on `missing_kernels` missed six
            // such kernels: a break-it pass); counted once among the one-sided items.
            let back = compared(&new, &base, 1e9);
            assert_eq!(back.graph_changes.len(), 1);
            assert!(!back.graph_changes[0].added);
            assert_eq!(
                (back.new_kernels, back.missing_kernels),
                (0, foo),
                "{:?}",
                back.kernels
            );
            assert_eq!(back.one_sided, c.one_sided, "{back:?}");
        }
    }

    /// One side without operation timings: kernels by region label, the note names the side,
    /// and the graph's operations are still paired by structure.
    #[test]
    fn one_side_without_operation_timings_compares_region_labels_and_says_so() {
        let plain = trace(20, &[], None);
        let timed = ops(plain.clone());
        let c = compared(&plain, &timed, 1e9);
        assert_eq!(c.verdict, Verdict::Same, "{:?}", c.reasons);
        assert!(!c.by_operation);
        assert_eq!(
            c.op_note.as_deref(),
            Some(
                "per-operation times: none recorded in base; kernels are compared by region label"
            )
        );
        assert!(
            c.kernels
                .iter()
                .any(|k| k.name == "blur +1" && k.status() == "matched")
        );
        assert!(c.graph_changes.is_empty() && c.op_times.is_empty());
    }

    /// An operation slower in new is found at its place in the graph and makes its kernel
    /// slow by the kernel rule.
    #[test]
    fn a_slower_operation_is_slow_at_its_place_and_as_a_kernel() {
        use hrx_capture::schema::NodeIndex;
        let base = ops(trace(20, &[], None));
        let new: Vec<Record> = base
            .iter()
            .cloned()
            .map(|r| match r {
                Record::OpTiming(mut t) if t.node == NodeIndex(2) => {
                    let d = t.timing.device.as_mut().unwrap();
                    d.end_ns = d.start_ns + (d.end_ns - d.start_ns) * 10;
                    Record::OpTiming(t)
                }
                r => r,
            })
            .collect();
        let c = compared(&base, &new, 2.0);
        assert_eq!(c.verdict, Verdict::Regression, "{:?}", c.reasons);
        let slow: Vec<&str> = c
            .kernels
            .iter()
            .filter(|k| k.slow)
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(slow, ["sobel"]);
        let slow_places: Vec<(&str, u32)> = c
            .op_times
            .iter()
            .filter(|o| o.slow)
            .map(|o| (o.key.name.as_str(), o.region[1]))
            .collect();
        assert_eq!(slow_places, [("sobel", 1)]);
        assert_eq!(c.reasons, ["1 slow kernel"]);
    }

    /// Two prepared graphs that compute the same thing pool their region and operation
    /// times: one row of both graphs' runs, keyed by the first; two that differ (another
    /// fill value) stay apart.
    #[test]
    fn identical_graphs_pool_their_times_and_graphs_that_differ_stay_apart() {
        let same = ops(two_fills(20, [1, 1]));
        let c = compared(&same, &same, 2.0);
        assert_eq!(c.regions.times.len(), 4, "{:?}", c.regions.times);
        assert!(
            (c.regions.times.iter()).all(|t| t.graphs == [0, 1] && t.key.prepared == 0),
            "{:?}",
            c.regions.times
        );
        let places: Vec<(&str, &[u64], u64)> = (c.op_times.iter())
            .map(|o| (o.key.name.as_str(), &o.graphs[..], o.base.count))
            .collect();
        assert_eq!(
            places,
            [("blur", &[0, 1][..], 20), ("sobel", &[0, 1][..], 20)]
        );
        assert!(
            c.op_times
                .iter()
                .all(|o| o.interval.is_some() && !o.too_few)
        );

        let apart = ops(two_fills(20, [1, 2]));
        let c = compared(&apart, &apart, 2.0);
        assert_eq!(c.regions.times.len(), 8);
        assert!(c.regions.times.iter().all(|t| t.graphs.len() == 1));
        let counts: Vec<(u64, u64)> = (c.op_times.iter())
            .map(|o| (o.key.prepared, o.base.count))
            .collect();
        assert_eq!(counts, [(0, 10), (0, 10), (1, 10), (1, 10)]);
        // A graph changed in one trace only leaves its pool: the same graphs in base,
        // different ones in new.
        let c = compared(&same, &apart, 1e9);
        assert!(c.regions.times.iter().all(|t| t.graphs.len() == 1));
    }

    /// A graph one trace alone prepared pools with the graphs identical to it in both: two
    /// frame contexts against one (a pipeline at `--in-flight 2` against 1) are one row of
    /// every run on each side, nothing one-sided; they were left one-sided, the rows too few
    /// to judge (a fresh user's pass). Either way round.
    #[test]
    fn a_graph_of_one_side_pools_with_the_graphs_identical_to_it_in_both() {
        let two = ops(two_fills(20, [1, 1]));
        let one = ops(trace(20, &[], None)
            .into_iter()
            .map(|r| match r {
                Record::GraphOp(mut op) if op.node.0 == 0 => {
                    op.op = hrx_capture::schema::OpKind::Fill { value: 1 };
                    Record::GraphOp(op)
                }
                r => r,
            })
            .collect());
        for (base, new) in [(&two, &one), (&one, &two)] {
            let c = compared(base, new, 1e9);
            assert_eq!((c.regions.only_base, c.regions.only_new), (0, 0));
            assert_eq!(c.regions.times.len(), 4, "{:?}", c.regions.times);
            assert!(
                (c.regions.times.iter()).all(|t| t.graphs == [0, 1] && t.key.prepared == 0),
                "{:?}",
                c.regions.times
            );
            let counts: Vec<(u64, u64)> = (c.op_times.iter())
                .map(|o| (o.base.count, o.new.count))
                .collect();
            assert_eq!(counts, [(20, 20), (20, 20)]);
            assert!(c.op_times.iter().all(|o| !o.too_few));
        }
        // One graph changed on the side that has both: the one-sided graph pools with
        // nothing (its signature is no longer identical in both).
        let changed = ops(two_fills(20, [2, 1]));
        let c = compared(&changed, &one, 1e9);
        assert!(c.regions.times.iter().all(|t| t.graphs.len() == 1));
        assert_eq!(c.regions.only_base, 4);
    }

    /// A graph of both traces that one of them never ran (prepared, its frames run by an
    /// identical graph of its own) still gives its pool the other side's runs: they were
    /// left out before pooling, the pool then had runs on one side only, and the regions read
    /// matched with no row (a pipeline at `--in-flight 1` against a trim of one at 3 whose
    /// first graph ran before the trim: `12 matched` and an empty table; a break-it pass).
    #[test]
    fn a_graph_in_both_run_on_one_side_only_gives_its_pool_those_runs() {
        let records = trace(20, &[], None);
        let one = profile_records(&records);
        // The same program with a second identical graph that ran every frame, the first
        // prepared and never run (as the comparison of a trim leaves it).
        let mut second = profile_records(&records);
        let signature = second.graphs[&(0, 0)];
        second.graphs.insert((0, 1), signature);
        for (key, (label, sketch)) in one.regions.iter().filter(|(k, _)| k.prepared == 0) {
            let moved = RegionKey {
                prepared: 1,
                ..*key
            };
            second
                .regions
                .insert(moved, (label.clone(), sketch.clone()));
            second
                .regions
                .insert(*key, (label.clone(), Sketch::default()));
        }
        let m = matched(&records, &records);
        for (base, new) in [(&one, &second), (&second, &one)] {
            let c = compare(base, new, &m, 1e9);
            assert_eq!(c.regions.times.len(), 4, "{:?}", c.regions);
            assert!(
                (c.regions.times.iter()).all(|t| t.graphs == [0, 1]),
                "{:?}",
                c.regions.times
            );
        }
    }

    /// Each judged row carries its ratio's interval; a side with fewer than 7 runs has
    /// none, and the row says it is too few to judge.
    #[test]
    fn judged_rows_carry_their_interval_or_say_they_are_too_few() {
        let records = ops(trace(20, &[], None));
        let c = compared(&records, &records, 2.0);
        let judged = |c: &Comparison| {
            let kernels = c.kernels.iter().map(|k| (k.interval, k.too_few));
            kernels
                .chain(c.op_times.iter().map(|o| (o.interval, o.too_few)))
                .collect::<Vec<_>>()
        };
        let rows = judged(&c);
        assert!(!rows.is_empty());
        // A trace against itself: each interval holds the ratio, 1.
        assert!(
            (rows.iter()).all(|&(i, few)| i.is_some_and(|(l, h)| l <= 1.0 && 1.0 <= h) && !few),
            "{rows:?}"
        );
        let few = ops(trace(4, &[], None));
        let rows = judged(&compared(&few, &few, 2.0));
        assert!(rows.iter().all(|&(i, few)| i.is_none() && few), "{rows:?}");
    }
}
