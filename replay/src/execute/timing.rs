//! Per-operation timing: each operation timed inside its native graph during the replays
//! (the default), or launched on its own in a fresh runtime (`--isolated`).

use super::Ticker;
use super::build::{add_op, build};
use super::open::open_runtime;
use super::read_back::close;
use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{RuntimePlan, Sample};
use hrx_capture::MemorySink;
use hrx_capture::schema::{OpKind, Record};
use std::collections::HashMap;

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

/// Per-operation timing: each operation of each prepared graph launched on its own (one
/// graph per operation) in a fresh runtime without fault injection, `runs` times, after the
/// captured host writes. Scoped and host operations are not timed.
pub(crate) fn time_ops(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    runs: usize,
    ticker: &mut Ticker<'_>,
    notes: &mut Vec<String>,
) -> Result<HashMap<(usize, u32), Vec<Sample>>, ReplayError> {
    let sink = MemorySink::new();
    let (runtime, recorder) = open_runtime(plan, options, None, false, sink.clone())?;
    let mut build_notes = Vec::new();
    let objects = build(&runtime, plan, options, &mut build_notes)?;
    for w in &plan.host_writes {
        let _ = objects.buffers[plan.buffer_index[&w.buffer]].write(w.offset, w.bytes);
    }
    let mut op_of: HashMap<u64, (usize, u32)> = HashMap::new();
    for (graph_index, g) in plan.graphs.iter().enumerate() {
        for (node, op) in g.ops.iter().enumerate() {
            if matches!(op.op, OpKind::Scoped | OpKind::Host) {
                continue;
            }
            let mut graph = runtime.graph();
            let prepared =
                add_op(&mut graph, plan, &objects, op, None).and_then(|()| graph.prepare());
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
                    op_of.insert(completion.submission(), (graph_index, node as u32));
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
    }
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
