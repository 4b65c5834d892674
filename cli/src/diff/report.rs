//! `diff`'s report: the comparison's typed rows, borrowed, with what the verb adds (paths,
//! warnings, losses, host load), serialized straight to the writer for `--json` and read by
//! the text report ([`super::text`]). No JSON tree is built: a tree of every region's and
//! operation's row took about 10 KB a region (2.2 GB for a graph of 100,000 regions, a
//! break-it pass), the rows themselves a few dozen bytes.
//!
//! The JSON's layout is the module docs' ([`super`]). Its objects' keys are in byte order,
//! as serde_json's map writes them (the report was such a map): every struct below declares
//! its fields so ordered (`json_keys_are_in_the_order_a_map_writes_them` checks it).

use hrx_analysis::compare::too_spread;
use hrx_analysis::diff::{
    AnnotationRow, ChangedOutcome, Comparison, DifferingOutput, GraphChange, KernelRow, Matched,
    NOISE_FLOOR_NS, OpTimes, Place, RegionTimes, Relabelled, Side, UNKNOWN_GRAPH,
};
use hrx_analysis::{AnnotationStats, KernelStats};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;

/// What `diff` reports: hrx-analysis's comparison `c` and second pass `m`, and what the verb
/// read beside them.
pub(super) struct Report<'a> {
    /// The base trace's path.
    pub base: &'a Path,
    /// The new trace's path.
    pub new: &'a Path,
    /// `--max-slowdown`.
    pub max_slowdown: f64,
    /// The comparison.
    pub c: &'a Comparison,
    /// The second pass.
    pub m: &'a Matched,
    /// Graphs of new given base's rank by their structure.
    pub graphs_matched_by_structure: u64,
    /// Regions of new given another index (base's) by their label.
    pub regions_matched_by_label: u64,
    /// Each side's highest host load sample per CPU.
    pub host_load: [Option<f64>; 2],
    /// What standard error warned of either trace.
    pub warnings: Vec<String>,
    /// Each side's losses while recording.
    pub lost: [hrx_capture::Lost; 2],
    /// The verdict's name (the comparison's, or `nothing_compared`).
    pub verdict: &'static str,
    /// The exit code.
    pub exit_code: u8,
    /// What decided the verdict.
    pub reasons: Vec<String>,
}

impl<'a> Report<'a> {
    /// Outputs compared (identical or differing).
    pub fn outputs_compared(&self) -> u64 {
        self.m.identical + self.m.differing.len() as u64
    }

    /// The JSON's top-level object, borrowing this report.
    fn json(&'a self) -> Json<'a> {
        let (c, m) = (self.c, self.m);
        let [base_args, new_args] = &c.arguments;
        let lost = |l: &hrx_capture::Lost| crate::info::lost_json(l);
        Json {
            annotations: Seq(&c.annotations, annotation_row),
            arguments: Arguments {
                base: base_args,
                differ: c.arguments_differ(),
                new: new_args,
            },
            base: self.base.display().to_string(),
            // Where either trace holds a range (a range recording, a trim): the submissions
            // compared, those both hold (an open end is null), and which trace holds a range.
            compared_range: c.compared.as_ref().map(|compared| json!({
                "held_by": c.ranged_side(),
                "runtimes": compared.iter().map(|(rank, held)| json!({
                    "runtime": from_one((*rank).into()),
                    "submissions": hrx_analysis::diff::describe_range(held),
                    "ranges": held.iter().map(|&(s, e)| json!([s, (e != u64::MAX).then_some(e)]))
                        .collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })),
            // Whether each trace was read whole; a damaged or cut-short one is compared on
            // what was recovered (standard error warns), which can leave most of it
            // unmatched.
            complete: Pair {
                base: c.complete[0],
                new: c.complete[1],
            },
            exit_code: self.exit_code,
            graphs_matched_by_structure: self.graphs_matched_by_structure,
            host_load: Pair {
                base: self.host_load[0],
                new: self.host_load[1],
            },
            kernels: Seq(&c.kernels, kernel_row),
            lost: Pair {
                base: lost(&self.lost[0]),
                new: lost(&self.lost[1]),
            },
            max_slowdown: self.max_slowdown,
            new: self.new.display().to_string(),
            noise_floor_ns: NOISE_FLOOR_NS,
            operations: Operations {
                graph_changes: Seq(&c.graph_changes, graph_change_row),
                kernels_by: if c.by_operation {
                    "operation"
                } else {
                    "region label"
                },
                note: c.op_note.as_deref(),
                times: Seq(&c.op_times, op_row),
            },
            outputs: Outputs {
                compared: self.outputs_compared(),
                differing: Seq(&m.differing, differing_row),
                identical: m.identical,
                only_base: m.outputs_one_sided[0],
                only_new: m.outputs_one_sided[1],
                other_graphs: m.outputs_of_other_graphs,
            },
            reasons: &self.reasons,
            records_lost: Pair {
                base: c.records_lost[0],
                new: c.records_lost[1],
            },
            regions: Regions {
                matched: c.regions.matched,
                only_base: c.regions.only_base,
                only_new: c.regions.only_new,
                relabelled: Seq(&c.regions.relabelled, relabelled_row),
                times: Seq(&c.regions.times, region_row),
            },
            regions_matched_by_label: self.regions_matched_by_label,
            schema_version: hrx_analysis::JSON_SCHEMA_VERSION,
            // What the streamed match could not pair (see `hrx_analysis::diff`); zero when
            // both traces have the same submission sequence.
            streaming: Streaming {
                late_records: Pair {
                    base: m.late_records[0],
                    new: m.late_records[1],
                },
                unmatched_past_window: Pair {
                    base: m.unmatched_past_window[0],
                    new: m.unmatched_past_window[1],
                },
            },
            submissions: Submissions {
                changed: Seq(&m.changed, changed_row),
                compared: m.outcomes_compared,
                only_base: m.submissions_one_sided[0],
                only_new: m.submissions_one_sided[1],
                unknown: m.outcomes_unknown,
            },
            summary: Summary {
                changed_submissions: m.changed.len(),
                differing_outputs: m.differing.len(),
                empty_side: c.empty_side.map(Side::name),
                graph_changes: c.graph_changes.len(),
                missing_kernels: c.missing_kernels,
                new_kernels: c.new_kernels,
                one_sided: c.one_sided,
                past_an_end: c.past_an_end,
                slow_kernels: c.slow_kernels,
            },
            verdict: self.verdict,
            warnings: &self.warnings,
        }
    }
}

impl Serialize for Report<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

/// A rank (0-based) as the JSON numbers it: from 1, as every other verb numbers runtimes
/// and prepared graphs (`rt=1 prepared=1` in `dump`).
pub(super) fn from_one(rank: u64) -> u64 {
    rank.saturating_add(1)
}

/// The ratio of an annotation row's medians, where both sides have one and base's is not 0.
pub(super) fn annotation_ratio(a: &AnnotationRow) -> Option<f64> {
    (a.base.as_ref())
        .zip(a.new.as_ref())
        .filter(|(b, _)| b.p50_ns > 0)
        .map(|(b, n)| n.p50_ns as f64 / b.p50_ns as f64)
}

/// The ratio of an operation row's medians, where base's is not 0.
pub(super) fn op_ratio(o: &OpTimes) -> Option<f64> {
    (o.base.p50_ns > 0).then(|| o.new.p50_ns as f64 / o.base.p50_ns as f64)
}

/// A sequence serialized as it is read, each item through `row`: no copy of the rows.
struct Seq<'a, T, R>(&'a [T], fn(&'a T) -> R);

impl<'a, T, R: Serialize> Serialize for Seq<'a, T, R> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(self.1))
    }
}

/// `{"base", "new"}`.
#[derive(Serialize)]
struct Pair<T> {
    base: T,
    new: T,
}

/// The top-level object (see the module docs of [`super`]).
#[derive(Serialize)]
struct Json<'a> {
    annotations: Seq<'a, AnnotationRow, AnnotationJson<'a>>,
    arguments: Arguments<'a>,
    base: String,
    compared_range: Option<Value>,
    complete: Pair<bool>,
    exit_code: u8,
    graphs_matched_by_structure: u64,
    host_load: Pair<Option<f64>>,
    kernels: Seq<'a, KernelRow, KernelJson<'a>>,
    lost: Pair<Value>,
    max_slowdown: f64,
    new: String,
    noise_floor_ns: u64,
    operations: Operations<'a>,
    outputs: Outputs<'a>,
    reasons: &'a [String],
    records_lost: Pair<u64>,
    regions: Regions<'a>,
    regions_matched_by_label: u64,
    schema_version: u32,
    streaming: Streaming,
    submissions: Submissions<'a>,
    summary: Summary,
    verdict: &'static str,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct Arguments<'a> {
    base: &'a Option<Vec<String>>,
    differ: bool,
    new: &'a Option<Vec<String>>,
}

#[derive(Serialize)]
struct Operations<'a> {
    graph_changes: Seq<'a, GraphChange, GraphChangeJson<'a>>,
    kernels_by: &'static str,
    note: Option<&'a str>,
    times: Seq<'a, OpTimes, OpJson<'a>>,
}

#[derive(Serialize)]
struct Outputs<'a> {
    compared: u64,
    differing: Seq<'a, DifferingOutput, DifferingJson>,
    identical: u64,
    only_base: u64,
    only_new: u64,
    other_graphs: u64,
}

#[derive(Serialize)]
struct Regions<'a> {
    matched: usize,
    only_base: usize,
    only_new: usize,
    relabelled: Seq<'a, Relabelled, RelabelledJson<'a>>,
    times: Seq<'a, RegionTimes, RegionJson<'a>>,
}

#[derive(Serialize)]
struct Streaming {
    late_records: Pair<u64>,
    unmatched_past_window: Pair<u64>,
}

#[derive(Serialize)]
struct Submissions<'a> {
    changed: Seq<'a, ChangedOutcome, ChangedJson>,
    compared: u64,
    only_base: u64,
    only_new: u64,
    unknown: u64,
}

#[derive(Serialize)]
struct Summary {
    changed_submissions: usize,
    differing_outputs: usize,
    empty_side: Option<&'static str>,
    graph_changes: usize,
    missing_kernels: usize,
    new_kernels: usize,
    one_sided: usize,
    past_an_end: usize,
    slow_kernels: usize,
}

/// One side of a kernel's (or an operation's) row: its durations.
#[derive(Serialize)]
struct KernelSide<'a> {
    count: u64,
    max_ns: u64,
    mean_ns: u64,
    min_ns: u64,
    name: &'a str,
    p50_ns: u64,
    p99_ns: u64,
    total_ns: u64,
}

fn kernel_side(k: &KernelStats) -> KernelSide<'_> {
    KernelSide {
        count: k.count,
        max_ns: k.max_ns,
        mean_ns: k.mean_ns,
        min_ns: k.min_ns,
        name: &k.name,
        p50_ns: k.p50_ns,
        p99_ns: k.p99_ns,
        total_ns: k.total_ns,
    }
}

/// One side of an annotation row (`stats`' fields for a range name).
#[derive(Serialize)]
struct AnnotationSide<'a> {
    capture_wait_ns: u64,
    capture_wait_untold_ranges: u64,
    count: u64,
    max_ns: u64,
    mean_ns: u64,
    min_ns: u64,
    name: &'a str,
    p50_ns: u64,
    p99_ns: u64,
    total_ns: u64,
}

fn annotation_side(s: &AnnotationStats) -> AnnotationSide<'_> {
    AnnotationSide {
        capture_wait_ns: s.capture_wait_ns,
        capture_wait_untold_ranges: s.capture_wait_untold_ranges,
        count: s.count,
        max_ns: s.max_ns,
        mean_ns: s.mean_ns,
        min_ns: s.min_ns,
        name: &s.name,
        p50_ns: s.p50_ns,
        p99_ns: s.p99_ns,
        total_ns: s.total_ns,
    }
}

/// A judged row of kernels or annotations (`S` its sides' figures), its keys in the order a
/// map writes them.
#[derive(Serialize)]
struct JudgedJson<'a, S> {
    base: Option<S>,
    delta_ns: Option<i64>,
    interval: Option<[f64; 2]>,
    name: &'a str,
    new: Option<S>,
    ratio: Option<f64>,
    slow: bool,
    status: &'static str,
    too_few: bool,
    too_spread: bool,
}

type KernelJson<'a> = JudgedJson<'a, KernelSide<'a>>;
type AnnotationJson<'a> = JudgedJson<'a, AnnotationSide<'a>>;

fn kernel_row(k: &KernelRow) -> KernelJson<'_> {
    JudgedJson {
        base: k.base.as_ref().map(kernel_side),
        delta_ns: k.delta_ns(),
        interval: k.interval.map(|(l, h)| [l, h]),
        name: &k.name,
        new: k.new.as_ref().map(kernel_side),
        ratio: k.ratio(),
        slow: k.slow,
        status: k.status(),
        too_few: k.too_few,
        too_spread: too_spread(k.interval),
    }
}

/// An annotation row's status: `matched`, `new` (new only) or `missing` (base only).
pub(super) fn annotation_status(a: &AnnotationRow) -> &'static str {
    match (&a.base, &a.new) {
        (Some(_), Some(_)) => "matched",
        (None, _) => "new",
        (_, None) => "missing",
    }
}

fn annotation_row(a: &AnnotationRow) -> AnnotationJson<'_> {
    let (base, new) = (a.base.as_ref(), a.new.as_ref());
    JudgedJson {
        base: base.map(annotation_side),
        delta_ns: base
            .zip(new)
            .map(|(b, n)| n.p50_ns as i64 - b.p50_ns as i64),
        interval: a.interval.map(|(l, h)| [l, h]),
        name: &a.name,
        new: new.map(annotation_side),
        ratio: annotation_ratio(a),
        slow: a.slow,
        status: annotation_status(a),
        too_few: a.too_few,
        too_spread: too_spread(a.interval),
    }
}

#[derive(Serialize)]
struct RelabelledJson<'a> {
    base: &'a str,
    new: &'a str,
    prepared: u64,
    region: u32,
    runtime: u64,
}

fn relabelled_row(r: &Relabelled) -> RelabelledJson<'_> {
    RelabelledJson {
        base: &r.base,
        new: &r.new,
        prepared: from_one(r.key.prepared),
        region: r.key.region,
        runtime: from_one(r.key.runtime.into()),
    }
}

/// The prepared graphs a row pools, numbered from 1.
struct Graphs<'a>(&'a [u64]);

impl Serialize for Graphs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|&g| from_one(g)))
    }
}

#[derive(Serialize)]
struct RegionJson<'a> {
    base_p50_ns: u64,
    graphs: Graphs<'a>,
    label: &'a str,
    new_p50_ns: u64,
    prepared: u64,
    ratio: Option<f64>,
    region: u32,
    runtime: u64,
}

fn region_row(t: &RegionTimes) -> RegionJson<'_> {
    RegionJson {
        base_p50_ns: t.base_p50_ns,
        graphs: Graphs(&t.graphs),
        label: &t.label,
        new_p50_ns: t.new_p50_ns,
        prepared: from_one(t.key.prepared),
        ratio: t.ratio(),
        region: t.key.region,
        runtime: from_one(t.key.runtime.into()),
    }
}

#[derive(Serialize)]
struct DifferingJson {
    base_xxh3: String,
    buffer: u64,
    end: u64,
    new_buffer: u64,
    new_submission: u64,
    new_xxh3: String,
    node: Option<u32>,
    nth: u64,
    prepared: Option<u64>,
    runtime: u64,
    start: u64,
    submission: u64,
    #[serde(rename = "use")]
    use_: Option<u32>,
}

fn differing_row(d: &DifferingOutput) -> DifferingJson {
    let key = d.key;
    let (node, use_) = match key.3 {
        Place::Use(node, use_) | Place::Op { node, use_, .. } => (Some(node), Some(use_)),
        Place::Buffer(_) => (None, None),
    };
    let by_graph = key.1 != UNKNOWN_GRAPH;
    DifferingJson {
        base_xxh3: format!("{:#018x}", d.base.0),
        buffer: d.base.1,
        end: key.5,
        new_buffer: d.new.1,
        new_submission: d.new.2,
        new_xxh3: format!("{:#018x}", d.new.0),
        node,
        nth: if by_graph { from_one(key.2) } else { key.2 },
        prepared: by_graph.then(|| from_one(key.1)),
        runtime: from_one(key.0.into()),
        start: key.4,
        submission: d.base.2,
        use_,
    }
}

#[derive(Serialize)]
struct ChangedJson {
    base: &'static str,
    new: &'static str,
    new_submission: u64,
    runtime: u64,
    submission: u64,
}

fn changed_row(c: &ChangedOutcome) -> ChangedJson {
    ChangedJson {
        base: c.base.name(),
        new: c.new.name(),
        new_submission: c.submission[1],
        runtime: from_one(c.key.0.into()),
        submission: c.submission[0],
    }
}

#[derive(Serialize)]
struct GraphChangeJson<'a> {
    change: &'static str,
    name: &'a str,
    node: u32,
    nth: u64,
    prepared: u64,
    region: u32,
    runtime: u64,
}

fn graph_change_row(g: &GraphChange) -> GraphChangeJson<'_> {
    GraphChangeJson {
        change: if g.added { "added" } else { "removed" },
        name: &g.key.name,
        node: g.node,
        nth: from_one(g.key.nth.into()),
        prepared: from_one(g.key.prepared),
        region: g.region,
        runtime: from_one(g.key.runtime.into()),
    }
}

#[derive(Serialize)]
struct OpJson<'a> {
    base: KernelSide<'a>,
    base_node: u32,
    base_region: u32,
    graphs: Graphs<'a>,
    interval: Option<[f64; 2]>,
    name: &'a str,
    new: KernelSide<'a>,
    new_node: u32,
    new_region: u32,
    nth: u64,
    prepared: u64,
    ratio: Option<f64>,
    runtime: u64,
    slow: bool,
    too_few: bool,
    too_spread: bool,
}

fn op_row(o: &OpTimes) -> OpJson<'_> {
    OpJson {
        base: kernel_side(&o.base),
        base_node: o.node[0],
        base_region: o.region[0],
        graphs: Graphs(&o.graphs),
        interval: o.interval.map(|(l, h)| [l, h]),
        name: &o.key.name,
        new: kernel_side(&o.new),
        new_node: o.node[1],
        new_region: o.region[1],
        nth: from_one(o.key.nth.into()),
        prepared: from_one(o.key.prepared),
        ratio: op_ratio(o),
        runtime: from_one(o.key.runtime.into()),
        slow: o.slow,
        too_few: o.too_few,
        too_spread: too_spread(o.interval),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx_analysis::diff::{match_streams, profile_records};
    use hrx_analysis::matching::RegionKey;
    use hrx_analysis::scan::Outcome;
    use hrx_analysis::synthetic::{
        PipelineSpec, annotations, pipeline, with_kernel_added, with_op_timings,
    };
    use hrx_capture::schema::Record;

    /// A comparison with a row of every kind: a kernel added to a graph (operations by
    /// place, a graph change), annotation ranges, a relabelled region, a differing output, a
    /// changed outcome and a range compared.
    fn every_row() -> (Comparison, Matched) {
        let with_ranges = |records: Vec<Record>| -> Vec<Record> {
            let end = records.len() - 1;
            let mut out = records;
            let ranges = annotations(20, 10_000, 60_000);
            out.splice(end..end, ranges);
            out
        };
        let base: Vec<Record> =
            with_ranges(with_op_timings(pipeline(PipelineSpec::ops(80))).collect());
        let new: Vec<Record> = with_kernel_added(base.iter().cloned(), "hrx_foo").collect();
        let (b, n) = (profile_records(&base), profile_records(&new));
        fn stream(r: &[Record]) -> hrx_analysis::diff::Records<'_> {
            Box::new(r.iter().cloned().map(Ok))
        }
        let mut m = match_streams((&b, stream(&base)), (&n, stream(&new))).unwrap();
        let mut c = hrx_analysis::diff::compare(&b, &n, &m, 1.5);
        let key = RegionKey {
            runtime: 0,
            prepared: 0,
            region: 2,
        };
        c.regions.relabelled.push(Relabelled {
            key,
            base: "download".into(),
            new: "readback".into(),
        });
        c.compared = Some([(0, vec![(4, 8), (9, u64::MAX)])].into());
        m.differing.push(DifferingOutput {
            key: (0, 0, 3, Place::Use(2, 0), 0, 4096),
            base: (7, 4, 3),
            new: (8, 5, 4),
        });
        m.differing.push(DifferingOutput {
            key: (0, UNKNOWN_GRAPH, 9, Place::Buffer(4), 0, 64),
            base: (7, 4, 9),
            new: (8, 4, 9),
        });
        m.changed.push(ChangedOutcome {
            key: (0, 0, 5),
            submission: [5, 6],
            base: Outcome::Ok,
            new: Outcome::Failed,
        });
        assert!(!c.op_times.is_empty() && !c.graph_changes.is_empty());
        assert!(!c.annotations.is_empty() && !c.regions.times.is_empty());
        (c, m)
    }

    fn report<'a>(c: &'a Comparison, m: &'a Matched) -> Report<'a> {
        Report {
            base: Path::new("base.hrxt"),
            new: Path::new("new.hrxt"),
            max_slowdown: 1.5,
            c,
            m,
            graphs_matched_by_structure: 1,
            regions_matched_by_label: 2,
            host_load: [Some(0.5), None],
            warnings: vec!["cut.hrxt: not closed cleanly".into()],
            lost: [hrx_capture::Lost::default(); 2],
            verdict: c.verdict_name(),
            exit_code: c.exit_code(),
            reasons: c.reasons.clone(),
        }
    }

    /// Regions paired by label are said on the one `regions` line (a fresh user's pass read
    /// a second `regions` line further down the report).
    #[test]
    fn regions_matched_by_label_are_said_on_the_regions_line() {
        let (c, m) = every_row();
        let mut text = Vec::new();
        super::super::text::write_text(&mut text, &report(&c, &m)).unwrap();
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("regions ")).collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert!(lines[0].contains("; 2 of new matched by label"), "{text}");
    }

    /// The report is written as serde_json wrote the map it was (keys in byte order, at
    /// every depth), so `--json` reads byte for byte as before: each row struct declares its
    /// fields in that order.
    #[test]
    fn json_keys_are_in_the_order_a_map_writes_them() {
        let (c, m) = every_row();
        let report = report(&c, &m);
        let streamed = serde_json::to_string_pretty(&report).unwrap();
        let tree: Value = serde_json::from_str(&streamed).unwrap();
        assert_eq!(streamed, serde_json::to_string_pretty(&tree).unwrap());
        // Every kind of row is there, and the counts beside them.
        assert_eq!(tree["schema_version"], hrx_analysis::JSON_SCHEMA_VERSION);
        let rows = |path: &[&str]| {
            let row = path.iter().fold(&tree, |v, k| &v[k]);
            row.as_array().map_or(0, Vec::len)
        };
        for path in [
            &["kernels"][..],
            &["annotations"],
            &["operations", "times"],
            &["operations", "graph_changes"],
            &["regions", "times"],
            &["regions", "relabelled"],
            &["outputs", "differing"],
            &["submissions", "changed"],
            &["compared_range", "runtimes"],
        ] {
            assert!(rows(path) > 0, "{path:?}: {streamed}");
        }
        assert_eq!(tree["outputs"]["compared"], m.identical + 2);
        assert_eq!(tree["outputs"]["differing"][1]["prepared"], Value::Null);
        assert_eq!(tree["outputs"]["differing"][0]["use"], 0);
        assert_eq!(tree["summary"]["changed_submissions"], 1);
        assert_eq!(tree["lost"]["base"]["total"], 0);
        assert_eq!(tree["host_load"], json!({"base": 0.5, "new": null}));
    }

    /// An annotation row's sides carry `stats`' fields for a range name, its capture waits
    /// included.
    #[test]
    fn an_annotation_rows_sides_count_their_capture_waits() {
        let side = AnnotationStats {
            name: "main".into(),
            count: 3,
            capture_wait_ns: 5,
            capture_wait_untold_ranges: 2,
            ..Default::default()
        };
        let v = serde_json::to_value(annotation_side(&side)).unwrap();
        assert_eq!(
            (&v["capture_wait_untold_ranges"], &v["capture_wait_ns"]),
            (&json!(2), &json!(5))
        );
    }
}
