//! `hrx-trace diff BASE NEW [--json] [--max-slowdown R]`: what changed between two traces of
//! the same program.
//!
//! - **Kernels** (region labels, as `stats` names them) are matched by name; each has its
//!   count, median (p50), p99, min and max on both sides. A kernel only in NEW is *new*,
//!   one only in BASE *missing*.
//! - **Regions** are matched by (runtime, prepared graph, region index), runtimes and
//!   graphs by rank (the n-th runtime of the trace, its m-th prepared graph, in id order,
//!   since ids differ between runs that shared a process); a matched region
//!   whose label changed is *relabelled* (the graph was built differently). Each matched
//!   region has its median on both sides.
//! - **Outputs** (the `OutputDigest` records) are matched by (runtime by rank, submitted prepared
//!   graph by rank, the submission's index among that graph's submissions, the first
//!   operation and use of the graph that writes the range, byte range) when both traces
//!   submitted the same prepared graphs the same number of times each: not by submission
//!   number, which the threads of a program take in whatever order they are scheduled (two
//!   runs of a two-thread program number the same graph's submissions differently). Else
//!   (another run length, or graphs rotated over another number of buffer sets, as
//!   `--in-flight 3` against `--in-flight 1`) by (runtime, submission number, operation and
//!   use, byte range). Never by buffer id, which depends on how a run allocated. Graphs
//!   prepared concurrently by several threads may swap ranks between runs: their outputs
//!   then differ. Their xxh3 digests are compared by the rule `replay` uses too
//!   (`hrx_analysis::compare::digests`).
//! - **Submissions** are matched by (runtime by rank, submission index) and their outcomes (ok,
//!   failed, cancelled) compared (`hrx_analysis::compare::outcomes`, as `replay`); one
//!   without a recorded outcome on either side (a trace cut short) is counted as unknown,
//!   not compared.
//!
//! The verdict is `hrx_analysis::compare::Verdict::of` its counts (below).
//!
//! # Verdict
//!
//! A kernel is **slow** when all three hold: its median grew by more than `R`
//! (`new.p50 > R × base.p50`); the growth is beyond the base's spread (`new.p50 >
//! base.p99`: most new runs are slower than almost every base run, so one-off outliers
//! on a busy machine do not count); and it is more than [`NOISE_FLOOR_NS`] (timer and
//! scheduling noise of microsecond kernels). A **regression** is a slow kernel, an output
//! whose digest differs or a submission whose outcome changed: exit 1. New, missing and
//! relabelled kernels and regions, and outputs present on one side only, are not
//! regressions (they mean a different program or run length, not a slower one) but they
//! are differences: the verdict is then **different**, exit 0; **same** only when every
//! count of one-sided or relabelled items is zero. A trace that holds no submission beside
//! one that holds some is a **regression** (the program did none of its work: "different"
//! with exit 0 let a run that stopped before its first submit pass a CI gate). The text's
//! `because` line and the JSON's `reasons` say what decided the verdict, from the same
//! counts, and name a difference of the recordings' arguments. Exit 2 when either trace cannot be read
//! or `R` is not a finite number ≥ 1.
//!
//! # Arguments
//!
//! Each session record holds the recorded process's command line. They are compared
//! without the trace's own name (the value of `-o`/`--output`, which always differs
//! between two recordings) and with the program reduced to its file name (a debug and a
//! release build of one program are one program); when they differ, both are printed, so
//! a "different" verdict from a run with `--frames 8` against one with `--frames 4` says
//! why.
//!
//! JSON (`--json`), times in ns:
//!
//! ```text
//! {"base", "new", "max_slowdown", "noise_floor_ns",
//!  "verdict": "same"|"different"|"regression", "reasons": [text], "complete": {"base", "new"},
//!  "records_lost": {"base", "new"}, "exit_code",
//!  "arguments": {"base": [..]|null, "new": [..]|null, "differ"},
//!  "kernels": [{"name", "status": "matched"|"new"|"missing", "base": {stats}|null,
//!               "new": {stats}|null, "ratio": p50 ratio|null, "delta_ns"|null, "slow"}],
//!  "regions": {"matched", "only_base", "only_new", "relabelled": [{"runtime",
//!              "prepared", "region", "base", "new"}],
//!              "times": [{"runtime", "prepared", "region", "label", "base_p50_ns",
//!                         "new_p50_ns", "ratio"}]},
//!  "outputs": {"compared", "identical", "only_base", "only_new", "differing":
//!              [{"runtime", "prepared" (rank)|null, "nth", "submission",
//!                "new_submission", "node"|null, "use"|null, "buffer", "new_buffer",
//!                "start", "end", "base_xxh3", "new_xxh3"}]},
//!  "submissions": {"compared", "unknown", "only_base", "only_new", "changed":
//!                  [{"runtime", "submission", "base", "new"}]},
//!  "summary": {"slow_kernels", "new_kernels", "missing_kernels", "differing_outputs",
//!              "changed_submissions", "one_sided": regions, outputs and submissions in
//!              one trace only, relabelled regions, new and missing kernels,
//!              "empty_side": "base"|"new"|null (the trace without a submission)}}
//! ```

use crate::args::DiffArgs;
use crate::failure::{Failure, TraceError};
use crate::kernel_stats::print_report;
use hrx_analysis::compare::{
    Digest, DigestMatch, OutcomeMatch, Verdict, digests, outcomes as compare_outcomes,
};
use hrx_analysis::units::{duration, plural};
use hrx_capture::TraceReader;
use hrx_capture::schema::{Access, Record};
use hrx_tui::Model;
use hrx_tui::state::{KernelStats, RegionId, SpanStatus, percentile};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// Loads a trace into the timeline's model.
///
/// # Errors
///
/// [`TraceError`] when the trace cannot be read. Reader warnings and how a damaged trace
/// ends go to standard error, one `warning:` line each.
fn load(path: &Path) -> anyhow::Result<Model> {
    let model = hrx_tui::load(path).map_err(|e| match e {
        hrx_tui::TuiError::Read { path, source } => anyhow::Error::from(TraceError {
            path,
            error: source,
        }),
        other => Failure::new(other.to_string()).into(),
    })?;
    let info = model.info();
    crate::failure::warn_partial(
        path,
        &info.warnings,
        info.recovery.as_ref(),
        "these figures cover only what was recovered",
    );
    Ok(model)
}

/// One kernel's durations as JSON.
fn kernel_json(k: &KernelStats) -> Value {
    json!({
        "name": k.name, "count": k.count, "total_ns": k.total_ns, "mean_ns": k.mean_ns,
        "p50_ns": k.p50_ns, "p99_ns": k.p99_ns, "min_ns": k.min_ns, "max_ns": k.max_ns,
    })
}

/// Growth below this many ns is never a slowdown (timer and scheduling noise).
pub const NOISE_FLOOR_NS: u64 = 50_000;

/// Runs `diff`; exit 0 no regression, 1 a regression.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]), a bad `--max-slowdown` ([`Failure`]) or a write
/// error.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    if !(args.max_slowdown.is_finite() && args.max_slowdown >= 1.0) {
        return Err(Failure::new(format!(
            "--max-slowdown {}: must be a number of at least 1 (a time ratio)",
            args.max_slowdown
        ))
        .into());
    }
    crate::failure::require_rereadable(&args.base, "diff")?;
    crate::failure::require_rereadable(&args.new, "diff")?;
    let base = load(&args.base)?;
    let new = load(&args.new)?;
    let (base_outputs, base_shape) = outputs(&args.base)?;
    let (new_outputs, new_shape) = outputs(&args.new)?;
    // By graph and index when both ran the same graphs as often, else by submission number.
    let (base_outputs, new_outputs) = if base_shape == new_shape {
        (base_outputs, new_outputs)
    } else {
        (by_submission(base_outputs), by_submission(new_outputs))
    };
    let report = compare(
        &args,
        (&base, &base_outputs),
        (&new, &new_outputs),
        args.max_slowdown,
    );
    // As replay: nothing compared is not a match (two recordings cut short before their
    // first submit would otherwise read "same" and pass a CI gate).
    let submissions = &report["submissions"];
    let held: u64 = ["compared", "unknown", "only_base", "only_new"]
        .iter()
        .map(|k| submissions[k].as_u64().unwrap_or(0))
        .sum();
    if held == 0 {
        return Err(Failure::new(format!(
            "neither {} nor {} holds a submission: nothing to compare, which is not a match",
            args.base.display(),
            args.new.display()
        ))
        .hint("`hrx-trace info` says what each trace holds (a recording cut short before its first submit holds none)")
        .into());
    }
    let code = report["exit_code"].as_u64().unwrap_or(2) as u8;
    crate::failure::verdict(code, print_report(&report, args.json, write_text))
}

/// Where an output lives, independent of buffer ids: the first operation of the submitted
/// graph (node, then use index) that writes exactly that buffer range. Buffer ids depend on
/// how a run allocated (`--in-flight 3` rotates three sets of buffers, `--in-flight 1` one),
/// so matching on them left most outputs of two runs of the same program uncompared. A
/// digest whose graph is not in the trace (a damaged trace) keeps its buffer id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// Node and use index in the graph.
    Use(u32, u32),
    /// Raw buffer id, when the operation writing the range is unknown.
    Buffer(u64),
}

/// (runtime rank, rank of the submitted prepared graph in the runtime, the submission's index
/// among that graph's submissions, place, start, end) → (xxh3, buffer id, submission).
/// A digest whose submit is not in the trace: (runtime, [`UNKNOWN_GRAPH`], submission, ...).
type Outputs = BTreeMap<(u32, u64, u64, Place, u64, u64), (u64, u64, u64)>;

/// The graph rank of a digest whose submit the trace lacks, or of every digest keyed by
/// submission number.
const UNKNOWN_GRAPH: u64 = u64::MAX;

/// How often each prepared graph (runtime, rank) was submitted.
type Shape = BTreeMap<(u32, u64), u64>;

/// `outputs` keyed by (runtime, [`UNKNOWN_GRAPH`], submission number, ...).
fn by_submission(outputs: Outputs) -> Outputs {
    outputs
        .into_iter()
        .map(|(k, v)| ((k.0, UNKNOWN_GRAPH, v.2, k.3, k.4, k.5), v))
        .collect()
}

/// Every output digest of a trace, placed by the operation that writes its range, keyed by
/// graph and index (the records are streamed; the digests, a few per submission, are kept
/// until the end); and how often each graph was submitted.
fn outputs(path: &Path) -> Result<(Outputs, Shape), TraceError> {
    let fail = |error| TraceError {
        path: path.to_owned(),
        error,
    };
    // (runtime, graph) → (node, use, buffer, start, end) of every writing use.
    type Writes = Vec<(u32, u32, u64, u64, u64)>;
    let mut writes: HashMap<(u32, u64), Writes> = HashMap::new();
    let mut graph_of: HashMap<(u32, u64), u64> = HashMap::new();
    let mut prepared_of: HashMap<(u32, u64), u64> = HashMap::new();
    let mut map = Outputs::new();
    let mut digests = Vec::new();
    for item in TraceReader::open(path).map_err(fail)? {
        match item.map_err(fail)?.1 {
            Record::GraphOp(op) => {
                let graph = writes.entry((op.runtime.0, op.graph.0)).or_default();
                for (i, u) in op.uses.iter().enumerate() {
                    if u.access != Access::Read {
                        graph.push((op.node.0, i as u32, u.buffer.0, u.start, u.end));
                    }
                }
            }
            Record::Prepared(p) => {
                graph_of.insert((p.runtime.0, p.prepared.0), p.graph.0);
            }
            Record::Submit(s) => {
                prepared_of.insert((s.runtime.0, s.submission.0), s.prepared.0);
            }
            Record::OutputDigest(d) => digests.push(d),
            _ => {}
        }
    }
    // Prepared graphs by rank in their runtime (id order, as regions are matched).
    let mut prepared: Vec<(u32, u64)> = graph_of.keys().copied().collect();
    prepared.sort_unstable();
    let mut rank_of: HashMap<(u32, u64), u64> = HashMap::new();
    for (i, key) in prepared.iter().enumerate() {
        let first = prepared.partition_point(|p| p.0 < key.0);
        rank_of.insert(*key, (i - first) as u64);
    }
    // Each submission's index among its graph's submissions, in submission order.
    let mut submits: Vec<((u32, u64), u64)> = prepared_of.iter().map(|(&k, &p)| (k, p)).collect();
    submits.sort_unstable();
    let mut counts: HashMap<(u32, u64), u64> = HashMap::new();
    let mut shape = Shape::new();
    let mut nth_of: HashMap<(u32, u64), (u64, u64)> = HashMap::new();
    for ((runtime, submission), p) in submits {
        let count = counts.entry((runtime, p)).or_default();
        // A prepared graph without its `Prepared` record (a damaged trace): ranked after
        // every known one, by id.
        let rank = rank_of
            .get(&(runtime, p))
            .copied()
            .unwrap_or((u64::MAX >> 1).saturating_add(p));
        nth_of.insert((runtime, submission), (rank, *count));
        *count += 1;
        *shape.entry((runtime, rank)).or_default() += 1;
    }
    // Placed once every record is read: a digest, recorded on a hashing thread, can reach
    // the file before the submit that it names (each thread's records are written in
    // order, not the threads' among each other).
    // Runtimes by rank too (ids differ between runs that shared a process).
    let runtimes: BTreeSet<u32> = prepared_of
        .keys()
        .map(|k| k.0)
        .chain(digests.iter().map(|d| d.runtime.0))
        .collect();
    let runtime_rank: HashMap<u32, u32> = runtimes
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as u32))
        .collect();
    let shape: Shape = shape
        .into_iter()
        .map(|((runtime, rank), count)| ((runtime_rank[&runtime], rank), count))
        .collect();
    for d in digests {
        let runtime = d.runtime.0;
        let place = prepared_of
            .get(&(runtime, d.submission.0))
            .and_then(|p| graph_of.get(&(runtime, *p)))
            .and_then(|g| writes.get(&(runtime, *g)))
            .and_then(|w| {
                w.iter()
                    .filter(|w| (w.2, w.3, w.4) == (d.buffer.0, d.start, d.end))
                    .min_by_key(|w| (w.0, w.1))
            })
            .map_or(Place::Buffer(d.buffer.0), |w| Place::Use(w.0, w.1));
        let (graph, nth) = nth_of
            .get(&(runtime, d.submission.0))
            .copied()
            .unwrap_or((UNKNOWN_GRAPH, d.submission.0));
        let key = (runtime_rank[&runtime], graph, nth, place, d.start, d.end);
        map.insert(key, (d.xxh3, d.buffer.0, d.submission.0));
    }
    Ok((map, shape))
}

/// A ratio for text output: two decimals, or scientific notation for huge ones.
fn ratio_text(ratio: f64) -> String {
    if ratio < 1e6 {
        format!("{ratio:.2}")
    } else {
        format!("{ratio:.2e}")
    }
}

/// Whether the trace behind `model` was read whole (closed cleanly, nothing skipped) and
/// lost no records while recording.
fn complete(model: &Model) -> bool {
    model
        .info()
        .recovery
        .as_ref()
        .is_none_or(|r| r.is_complete() && r.lost.is_none())
}

/// Records the trace behind `model` lost while recording.
fn lost(model: &Model) -> u64 {
    model.info().recovery.as_ref().map_or(0, |r| r.lost.total)
}

/// Whether `new` is slower than `base` past `ratio` and beyond the spread.
pub fn is_slow(base: &KernelStats, new: &KernelStats, ratio: f64) -> bool {
    new.p50_ns as f64 > ratio * base.p50_ns as f64
        && new.p50_ns > base.p99_ns
        && new.p50_ns.saturating_sub(base.p50_ns) > NOISE_FLOOR_NS
}

/// (runtime rank, prepared graph rank, region index) → (label, durations of the runs).
type RegionTimes = BTreeMap<(u32, u64, u32), (String, Vec<u64>)>;

fn region_times(model: &Model) -> RegionTimes {
    // Ids differ between runs that share a process, so graphs are matched by rank: the
    // n-th runtime (by id) of the trace, its m-th prepared graph (by id).
    let mut ids: Vec<(u32, u64)> = model
        .prepared()
        .iter()
        .map(|p| (p.runtime.0, p.id.0))
        .collect();
    ids.sort_unstable();
    let mut rank = BTreeMap::new();
    let (mut runtime_rank, mut prepared_rank) = (0u32, 0u64);
    for (i, &(runtime, id)) in ids.iter().enumerate() {
        if i > 0 && ids[i - 1].0 != runtime {
            runtime_rank += 1;
            prepared_rank = 0;
        }
        rank.insert((runtime, id), (runtime_rank, prepared_rank));
        prepared_rank += 1;
    }
    let key_of = |region: &hrx_tui::state::RegionInfo| {
        let p = &model.prepared()[region.prepared.get()];
        let (r, g) = rank[&(p.runtime.0, p.id.0)];
        (r, g, region.index.0)
    };
    let mut map = RegionTimes::new();
    // Every region of every prepared graph, timed or not.
    for info in model.prepared() {
        for r in info.regions.clone() {
            let region = model.region(RegionId(r));
            map.insert(
                key_of(region),
                (model.label(region.label).to_owned(), Vec::new()),
            );
        }
    }
    for lane in model.lanes() {
        for span in lane.spans().iter().filter(|s| s.ran()) {
            let key = key_of(model.region(span.region));
            if let Some((_, durations)) = map.get_mut(&key) {
                durations.push(span.duration_ns());
            }
        }
    }
    for (_, durations) in map.values_mut() {
        durations.sort_unstable();
    }
    map
}

/// The recorded command line as compared (see the module docs): the program's file name,
/// then its arguments without the trace's own name. `None` without a session record.
fn arguments(model: &Model) -> Option<Vec<String>> {
    let args = &model.info().session.as_ref()?.args;
    let mut out = Vec::with_capacity(args.len());
    let mut rest = args.iter();
    if let Some(program) = rest.next() {
        let name = Path::new(program)
            .file_name()
            .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
        out.push(name);
    }
    while let Some(a) = rest.next() {
        match a.as_str() {
            "-o" | "--output" => {
                rest.next();
                out.push(format!("{a} …"));
            }
            _ if a.starts_with("--output=") => out.push("--output=…".to_owned()),
            _ => out.push(a.clone()),
        }
    }
    Some(out)
}

fn compare(
    args: &DiffArgs,
    (base, base_outputs): (&Model, &Outputs),
    (new, new_outputs): (&Model, &Outputs),
    ratio: f64,
) -> Value {
    let by_name = |m: &Model| -> BTreeMap<String, KernelStats> {
        m.stats()
            .kernels
            .iter()
            .map(|k| (k.name.clone(), k.clone()))
            .collect()
    };
    let (b, n) = (by_name(base), by_name(new));
    let names: BTreeSet<&String> = b.keys().chain(n.keys()).collect();
    let mut kernels = Vec::new();
    let (mut slow, mut added, mut missing) = (0, 0, 0);
    for name in names {
        let entry = match (b.get(name), n.get(name)) {
            (Some(bk), Some(nk)) => {
                let is_slow = is_slow(bk, nk, ratio);
                slow += usize::from(is_slow);
                let r = (bk.p50_ns > 0).then(|| nk.p50_ns as f64 / bk.p50_ns as f64);
                json!({
                    "name": name, "status": "matched", "base": kernel_json(bk),
                    "new": kernel_json(nk), "ratio": r,
                    "delta_ns": nk.p50_ns as i64 - bk.p50_ns as i64, "slow": is_slow,
                })
            }
            (Some(bk), None) => {
                missing += 1;
                json!({"name": name, "status": "missing", "base": kernel_json(bk),
                       "new": null, "ratio": null, "delta_ns": null, "slow": false})
            }
            (None, Some(nk)) => {
                added += 1;
                json!({"name": name, "status": "new", "base": null, "new": kernel_json(nk),
                       "ratio": null, "delta_ns": null, "slow": false})
            }
            (None, None) => continue,
        };
        kernels.push(entry);
    }

    let (br, nr) = (region_times(base), region_times(new));
    let mut relabelled = Vec::new();
    let mut times = Vec::new();
    let mut matched = 0;
    for (key, (label, d)) in &br {
        let Some((new_label, nd)) = nr.get(key) else {
            continue;
        };
        matched += 1;
        if label != new_label {
            relabelled.push(json!({"runtime": key.0, "prepared": key.1, "region": key.2,
                                   "base": label, "new": new_label}));
            continue;
        }
        if d.is_empty() || nd.is_empty() {
            continue;
        }
        let (bp, np) = (percentile(d, 50.0), percentile(nd, 50.0));
        times.push(json!({"runtime": key.0, "prepared": key.1, "region": key.2,
            "label": label, "base_p50_ns": bp, "new_p50_ns": np,
            "ratio": (bp > 0).then(|| np as f64 / bp as f64)}));
    }
    let only_base = br.keys().filter(|k| !nr.contains_key(k)).count();
    let only_new = nr.keys().filter(|k| !br.contains_key(k)).count();

    let mut differing = Vec::new();
    let mut identical = 0;
    for (key, (digest, buffer, submission)) in base_outputs {
        let Some((d, new_buffer, new_submission)) = new_outputs.get(key) else {
            continue;
        };
        // The one rule of `diff` and `replay` for the digests of one key.
        let one = |xxh3: u64| {
            [Digest {
                xxh3,
                contents: None,
            }]
        };
        match digests(&one(*digest), &one(*d), None, false) {
            DigestMatch::Match => identical += 1,
            _ => {
                let (node, use_) = match key.3 {
                    Place::Use(node, use_) => (Some(node), Some(use_)),
                    Place::Buffer(_) => (None, None),
                };
                differing.push(json!({
                    "runtime": key.0, "prepared": (key.1 != UNKNOWN_GRAPH).then_some(key.1),
                    "nth": key.2, "submission": submission, "new_submission": new_submission,
                    "node": node, "use": use_,
                    "buffer": buffer, "new_buffer": new_buffer, "start": key.4, "end": key.5,
                    "base_xxh3": format!("{digest:#018x}"), "new_xxh3": format!("{d:#018x}"),
                }));
            }
        }
    }
    let compared = identical + differing.len();

    // Runtimes by rank, as regions and outputs (ids differ between runs that shared a
    // process).
    let outcomes = |m: &Model| -> BTreeMap<(u32, u64), SpanStatus> {
        let ids: BTreeSet<u32> = m.submissions().iter().map(|s| s.runtime.0).collect();
        let rank: HashMap<u32, u32> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        m.submissions()
            .iter()
            .map(|s| ((rank[&s.runtime.0], s.index.0), s.status()))
            .collect()
    };
    let (base_outcomes, new_outcomes) = (outcomes(base), outcomes(new));
    let mut changed = Vec::new();
    let (mut outcomes_compared, mut outcomes_unknown) = (0, 0);
    for (key, status) in &base_outcomes {
        let Some(new_status) = new_outcomes.get(key) else {
            continue;
        };
        // No completion recorded (a trace cut short or damaged): nothing to compare, and
        // not a changed outcome.
        let known = |s: &SpanStatus| (*s != SpanStatus::Unknown).then_some(*s);
        match compare_outcomes(known(status), known(new_status)) {
            OutcomeMatch::Unknown => outcomes_unknown += 1,
            OutcomeMatch::Same => outcomes_compared += 1,
            OutcomeMatch::Changed => {
                outcomes_compared += 1;
                changed.push(json!({"runtime": key.0, "submission": key.1,
                                    "base": status.name(), "new": new_status.name()}));
            }
        }
    }
    // A trace that holds no submission beside one that holds some: the program did none
    // of its work (it stopped before its first submit), whatever else matches.
    let held = |m: &Model| !m.submissions().is_empty();
    let empty_side = match (held(base), held(new)) {
        (true, false) => Some("new"),
        (false, true) => Some("base"),
        _ => None,
    };
    let regression =
        slow > 0 || !differing.is_empty() || !changed.is_empty() || empty_side.is_some();
    let outputs_only_base = base_outputs.len() - compared;
    let outputs_only_new = new_outputs
        .keys()
        .filter(|k| !base_outputs.contains_key(k))
        .count();
    let subs_only_base = base_outcomes
        .keys()
        .filter(|k| !new_outcomes.contains_key(k))
        .count();
    let subs_only_new = new_outcomes
        .keys()
        .filter(|k| !base_outcomes.contains_key(k))
        .count();
    let one_sided = only_base
        + only_new
        + subs_only_base
        + subs_only_new
        + relabelled.len()
        + added
        + missing
        + outputs_only_base
        + outputs_only_new;
    let verdict = Verdict::of(
        slow + differing.len() + changed.len() + usize::from(empty_side.is_some()),
        one_sided,
    );
    debug_assert_eq!(regression, verdict == Verdict::Regression);
    let (base_args, new_args) = (arguments(base), arguments(new));
    // What decided the verdict, in words, from the counts above.
    let mut reasons = Vec::new();
    if let Some(side) = empty_side {
        let other = if side == "new" { base } else { new };
        reasons.push(format!(
            "{side} holds no submission ({} in the other trace): it did none of the work",
            other.submissions().len()
        ));
    }
    for (n, what) in [
        (slow, "slow kernel"),
        (differing.len(), "differing output"),
        (changed.len(), "changed outcome"),
    ] {
        if n > 0 {
            reasons.push(plural(n as u64, what));
        }
    }
    if !regression && one_sided > 0 {
        reasons.push(format!(
            "{} in one trace only or relabelled",
            plural(one_sided as u64, "item")
        ));
    }
    if base_args != new_args {
        reasons.push("the recordings' arguments differ".to_owned());
    }
    json!({
        "base": args.base.display().to_string(),
        "new": args.new.display().to_string(),
        "max_slowdown": ratio,
        "noise_floor_ns": NOISE_FLOOR_NS,
        "verdict": verdict.name(),
        "reasons": reasons,
        "arguments": {"base": base_args, "new": new_args, "differ": base_args != new_args},
        // Whether each trace was read whole; a damaged or cut-short one is compared on what
        // was recovered (standard error warns), which can leave most of it unmatched.
        "complete": {"base": complete(base), "new": complete(new)},
        "records_lost": {"base": lost(base), "new": lost(new)},
        "exit_code": verdict.exit_code(),
        "summary": {
            "slow_kernels": slow, "new_kernels": added, "missing_kernels": missing,
            "differing_outputs": differing.len(), "changed_submissions": changed.len(),
            "one_sided": one_sided, "empty_side": empty_side,
        },
        "submissions": {"compared": outcomes_compared, "unknown": outcomes_unknown,
                        "only_base": subs_only_base, "only_new": subs_only_new,
                        "changed": changed},
        "kernels": kernels,
        "regions": {"matched": matched, "only_base": only_base, "only_new": only_new,
                    "relabelled": relabelled, "times": times},
        "outputs": {
            "compared": compared, "identical": identical,
            "only_base": outputs_only_base,
            "only_new": outputs_only_new,
            "differing": differing,
        },
    })
}

fn write_text(out: &mut impl Write, r: &Value) -> io::Result<()> {
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    let ns = |v: &Value| v.as_u64().map_or_else(|| "-".to_owned(), duration);
    for side in ["base", "new"] {
        let lost = u(&r["records_lost"][side]);
        if lost > 0 {
            writeln!(
                out,
                "{side} trace lost {lost} records while recording: what it lacks reads as changed"
            )?;
        }
    }
    writeln!(
        out,
        "{:<28} {:>9} {:>11} {:>11} {:>11} {:>11} {:>8}",
        "kernel", "runs", "base p50", "new p50", "base p99", "new p99", "ratio"
    )?;
    for k in r["kernels"].as_array().into_iter().flatten() {
        let runs = format!("{}/{}", u(&k["base"]["count"]), u(&k["new"]["count"]));
        let mark = match (k["status"].as_str(), k["slow"].as_bool()) {
            (_, Some(true)) => "  SLOW",
            (Some("new"), _) => "  NEW",
            (Some("missing"), _) => "  MISSING",
            _ => "",
        };
        let ratio = k["ratio"]
            .as_f64()
            .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}x"));
        writeln!(
            out,
            "{:<28} {:>9} {:>11} {:>11} {:>11} {:>11} {:>8}{mark}",
            k["name"].as_str().unwrap_or(""),
            runs,
            ns(&k["base"]["p50_ns"]),
            ns(&k["new"]["p50_ns"]),
            ns(&k["base"]["p99_ns"]),
            ns(&k["new"]["p99_ns"]),
            ratio,
        )?;
    }
    let g = &r["regions"];
    writeln!(
        out,
        "\nregions      {} matched, {} only in base, {} only in new, {} relabelled",
        u(&g["matched"]),
        u(&g["only_base"]),
        u(&g["only_new"]),
        g["relabelled"].as_array().map_or(0, Vec::len)
    )?;
    let o = &r["outputs"];
    writeln!(
        out,
        "outputs      {} compared, {} identical, {} differ; {} only in base, {} only in new",
        u(&o["compared"]),
        u(&o["identical"]),
        o["differing"].as_array().map_or(0, Vec::len),
        u(&o["only_base"]),
        u(&o["only_new"])
    )?;
    for d in o["differing"].as_array().into_iter().flatten() {
        let place = match (d["node"].as_u64(), d["use"].as_u64()) {
            (Some(node), Some(use_)) => {
                format!("node {node} use {use_} (buffer {}", u(&d["buffer"]))
            }
            _ => format!("(buffer {}", u(&d["buffer"])),
        };
        let new_buffer = match u(&d["new_buffer"]) {
            b if b == u(&d["buffer"]) => String::new(),
            b => format!(", {b} in new"),
        };
        writeln!(
            out,
            "  differs    submission {} {place}{new_buffer}) bytes {}..{}: {} -> {}",
            u(&d["submission"]),
            u(&d["start"]),
            u(&d["end"]),
            d["base_xxh3"].as_str().unwrap_or(""),
            d["new_xxh3"].as_str().unwrap_or("")
        )?;
    }
    let c = &r["submissions"];
    writeln!(
        out,
        "submissions  {} compared, {} changed outcome{}{}",
        u(&c["compared"]),
        c["changed"].as_array().map_or(0, Vec::len),
        match u(&c["unknown"]) {
            0 => String::new(),
            n => format!("; {n} without a recorded outcome (not compared)"),
        },
        match (u(&c["only_base"]), u(&c["only_new"])) {
            (0, 0) => String::new(),
            (b, n) => format!("; {b} only in base, {n} only in new"),
        }
    )?;
    for d in c["changed"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "  changed    submission {}: {} -> {}",
            u(&d["submission"]),
            d["base"].as_str().unwrap_or(""),
            d["new"].as_str().unwrap_or("")
        )?;
    }
    let a = &r["arguments"];
    if a["differ"].as_bool() == Some(true) {
        let line = |v: &Value| match v.as_array() {
            Some(args) => args
                .iter()
                .map(|x| x.as_str().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" "),
            None => "(no session record)".to_owned(),
        };
        writeln!(
            out,
            "arguments    differ (the traces record different runs)"
        )?;
        writeln!(out, "  base       {}", line(&a["base"]))?;
        writeln!(out, "  new        {}", line(&a["new"]))?;
    }
    let s = &r["summary"];
    let one_sided = match u(&s["one_sided"]) {
        0 => String::new(),
        n => format!(
            "; {n} item{} in one trace only or relabelled (see above)",
            if n == 1 { "" } else { "s" }
        ),
    };
    let reasons: Vec<&str> = r["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !reasons.is_empty() {
        writeln!(out, "because      {}", reasons.join("; "))?;
    }
    writeln!(
        out,
        "verdict      {} (exit {}): {} slow kernels (past {}x and the base p99), {} differing outputs, {} changed outcomes, {} new and {} missing kernels{one_sided}",
        r["verdict"].as_str().unwrap_or(""),
        u(&r["exit_code"]),
        u(&s["slow_kernels"]),
        ratio_text(r["max_slowdown"].as_f64().unwrap_or(0.0)),
        u(&s["differing_outputs"]),
        u(&s["changed_submissions"]),
        u(&s["new_kernels"]),
        u(&s["missing_kernels"]),
    )
}
