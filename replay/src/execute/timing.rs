//! Per-operation timing: each operation timed inside its native graph during the replays
//! (the default), or launched on its own in a fresh runtime (`--isolated`).

use super::Ticker;
use super::build::add_op;
use super::objects::{Maker, Objects};
use super::open::open_runtime;
use super::read_back::close;
use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{Event, RuntimePlan, Sample};
use hrx_capture::MemorySink;
use hrx_capture::schema::{OpKind, Record};
use std::collections::{BTreeSet, HashMap};

/// The operation times the replays' backend recorded inside their native graphs, pooled
/// over the repeats (failed regions' operations left out, as their regions' times are);
/// a note where it recorded none (a backend that does not time operations: CUDA without
/// kernel times, HIP, the NPU).
pub(crate) fn op_times_in_graphs(
    plan: &RuntimePlan<'_>,
    repeats: &[super::Observed],
    notes: &mut Vec<String>,
) -> HashMap<(usize, u32), Vec<Sample>> {
    let mut times: HashMap<(usize, u32), Vec<Sample>> = HashMap::new();
    for observed in repeats {
        for (key, samples) in &observed.op_times {
            times
                .entry(*key)
                .or_default()
                .extend(samples.iter().copied());
        }
    }
    let native = plan
        .graphs
        .iter()
        .flat_map(|g| &g.ops)
        .any(|op| !matches!(op.op, OpKind::Scoped | OpKind::Host | OpKind::Npu { .. }));
    if times.is_empty() && native {
        notes.push(format!(
            "runtime {}: the replay's backend timed no operation inside its graphs, so there \
             are no per-operation times (--isolated launches each operation on its own)",
            plan.id
        ));
    }
    times
}

/// Per-operation timing: each operation of each submitted graph launched on its own (one
/// graph per operation) in a fresh runtime without fault injection, `runs` times. The
/// timeline is walked as a replay walks it (module `objects`), without its submits: host
/// writes applied, and at each release, and at the end, every graph submitted since timed
/// (in capture order) before the buffer is let go. So a program that lets go of its
/// buffers only at its end has every graph timed after every host write, and one that
/// frees buffers to fit a device is timed within the memory it used. Scoped and host
/// operations are not timed.
pub(crate) fn time_ops(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    runs: usize,
    ticker: &mut Ticker<'_>,
    notes: &mut Vec<String>,
) -> Result<HashMap<(usize, u32), Vec<Sample>>, ReplayError> {
    let sink = MemorySink::new();
    let (runtime, recorder) = open_runtime(plan, options, None, false, sink.clone())?;
    let maker = Maker {
        runtime: &runtime,
        options,
    };
    let mut objects = Objects::open(maker, plan, &mut Vec::new())?;
    let mut op_of: HashMap<u64, (usize, u32)> = HashMap::new();
    // Graphs submitted so far, and those of them not timed yet.
    let mut submitted = vec![false; plan.graphs.len()];
    let mut due = BTreeSet::new();
    let mut time_due = |objects: &mut Objects, due: &mut BTreeSet<usize>| {
        for graph in std::mem::take(due) {
            time_graph(plan, maker, objects, graph, runs, &mut op_of, ticker, notes)?;
        }
        Ok::<(), ReplayError>(())
    };
    for event in &plan.timeline {
        match *event {
            Event::HostWrite(i) => {
                let (buffer, w) = objects.host_write_target(maker, plan, i)?;
                let _ = buffer.write(w.offset, w.bytes);
            }
            Event::Submit(position) => {
                let graph = plan.submissions[position].graph;
                if !std::mem::replace(&mut submitted[graph], true) {
                    due.insert(graph);
                }
            }
            Event::Release(buffer) => {
                time_due(&mut objects, &mut due)?;
                objects.release(plan, buffer);
            }
        }
    }
    time_due(&mut objects, &mut due)?;
    drop(objects);
    drop(runtime);
    let trace = close(&recorder, &sink)?;
    let mut times: HashMap<(usize, u32), Vec<Sample>> = HashMap::new();
    let records: Vec<&Record> = trace.records.iter().collect();
    for joined in crate::joins::join(&records).runtimes.into_values() {
        for (submission, _, sample) in joined.region_times {
            if let Some(key) = op_of.get(&submission.0) {
                times.entry(*key).or_default().push(sample);
            }
        }
    }
    Ok(times)
}

/// Times each operation of graph `graph` on its own, `runs` times (its buffers made);
/// `op_of` gets each run's submission, `notes` an operation that cannot run on its own.
#[allow(clippy::too_many_arguments)]
fn time_graph(
    plan: &RuntimePlan<'_>,
    maker: Maker<'_>,
    objects: &mut Objects,
    graph: usize,
    runs: usize,
    op_of: &mut HashMap<u64, (usize, u32)>,
    ticker: &mut Ticker<'_>,
    notes: &mut Vec<String>,
) -> Result<(), ReplayError> {
    let g = &plan.graphs[graph];
    let user = || format!("by graph {}", g.prepared);
    for &b in &g.buffers {
        objects.buffer(maker, plan, b, &user)?;
    }
    for (node, op) in g.ops.iter().enumerate() {
        if matches!(op.op, OpKind::Scoped | OpKind::Host) {
            continue;
        }
        let mut single = maker.runtime.graph();
        let prepared = add_op(&mut single, plan, objects, op, None).and_then(|()| single.prepare());
        let executable = match prepared {
            Ok(executable) => executable,
            Err(error) => {
                notes.push(format!(
                    "runtime {}: graph {} operation {node} ({}) cannot run on its own: {error}",
                    plan.id,
                    g.prepared,
                    plan.op_name(op)
                ));
                continue;
            }
        };
        for _ in 0..runs {
            let result = executable.submit().and_then(|completion| {
                op_of.insert(completion.submission(), (graph, node as u32));
                completion.wait()
            });
            ticker.tick();
            if let Err(error) = result {
                notes.push(format!(
                    "runtime {}: graph {} operation {node} ({}) failed on its own: {error}",
                    plan.id,
                    g.prepared,
                    plan.op_name(op)
                ));
                break;
            }
        }
    }
    Ok(())
}
