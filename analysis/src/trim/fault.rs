//! The recorded run's injected fault as a trimmed trace counts it.
//!
//! A fault (`RuntimeStart::fault`, `hrx::FaultSpec`'s text) counts device operations
//! (`op=N`) or one kernel's dispatches (`kernel=NAME#N`) from the run's start, in submission
//! order, as the runtime numbers them: every operation of a native region (native graph,
//! copy batch, NPU run) of every submission counts, a cancelled one too. A trim from a later
//! submission lacks that start, so its [`TraceRange::fault`](hrx_capture::schema::TraceRange)
//! says the fault counted from the trim's start: the operations (or the kernel's dispatches)
//! of the submissions before it come off the count. When the fault fired before the trim
//! (a `FaultInjected` names an earlier submission) or its count passed there, the trim
//! injects nothing and says where it fired. A source that is itself a range counts from its
//! own range fault and start.
//!
//! A kernel's dispatches are counted in the regions submitted, which is what the runtime
//! counted when none was cancelled before the fault fired (a cancelled region's dispatches
//! never run: the count may then be off by those).

use super::TrimError;
use hrx_capture::schema::{
    GraphId, KernelId, OpKind, PreparedId, RangeFault, Record, RegionKind, RuntimeId,
    SubmissionIndex,
};
use hrx_capture::{ReadError, TraceReader};
use std::collections::{BTreeMap, HashMap};

/// What one runtime's submissions before the trim ran, and where its fault fired.
#[derive(Default)]
struct Counts {
    /// `RuntimeStart::fault`.
    spec: Option<String>,
    /// The source's own range fault, with its start (a range recorded at run time, or an
    /// earlier trim).
    source: Option<(u64, RangeFault)>,
    /// Submits counted (before the trim, from the source's range start).
    submissions: u64,
    operations: u64,
    dispatches: HashMap<KernelId, u64>,
    /// The lowest submission a `FaultInjected` names.
    fired_in: Option<u64>,
}

/// Per runtime that injects a fault and whose trim starts at `starts[runtime]`: the fault
/// counted from there, for the trim's `TraceRange` (one more pass over the trace, only when
/// some runtime injects a fault).
pub(super) fn range_faults<R: std::io::Read>(
    open: &impl Fn() -> Result<TraceReader<R>, ReadError>,
    starts: &BTreeMap<RuntimeId, u64>,
    any_fault: bool,
) -> Result<BTreeMap<RuntimeId, RangeFault>, TrimError> {
    if !any_fault {
        return Ok(BTreeMap::new());
    }
    let mut counts: BTreeMap<RuntimeId, Counts> = BTreeMap::new();
    let mut kernels: HashMap<(RuntimeId, KernelId), String> = HashMap::new();
    let mut graph_kernels: HashMap<(RuntimeId, GraphId), HashMap<u32, KernelId>> = HashMap::new();
    // Per prepared graph: its device operations and the kernels they dispatch.
    let mut prepared: HashMap<(RuntimeId, PreparedId), (u64, Vec<KernelId>)> = HashMap::new();
    // Submits are counted once the source's range start is known, which a range recorded
    // at run time writes before its first submit: a submit before it is not in the file.
    for item in open()? {
        let (_, record) = item?;
        let Some(&start) = record.runtime().and_then(|r| starts.get(&r)) else {
            continue;
        };
        match record {
            Record::RuntimeStart(r) => counts.entry(r.runtime).or_default().spec = r.fault,
            Record::TraceRange(r) => {
                let c = counts.entry(r.runtime).or_default();
                if let Some(fault) = r.fault
                    && c.source.as_ref().is_none_or(|(s, _)| r.start.0 < *s)
                {
                    c.source = Some((r.start.0, fault));
                }
            }
            Record::KernelLoaded(k) => {
                kernels.insert((k.runtime, k.kernel), k.entry);
            }
            Record::GraphOp(op) => {
                if let OpKind::Kernel { kernel } | OpKind::Npu { kernel } = op.op {
                    graph_kernels
                        .entry((op.runtime, op.graph))
                        .or_default()
                        .insert(op.node.0, kernel);
                }
            }
            Record::Prepared(p) => {
                let ops = graph_kernels.get(&(p.runtime, p.graph));
                let native = p.regions.iter().filter(|r| {
                    matches!(
                        r.kind,
                        RegionKind::NativeGraph | RegionKind::CopyBatch | RegionKind::NpuRun
                    )
                });
                let mut operations = 0;
                let mut dispatched = Vec::new();
                for region in native {
                    operations += region.nodes.len() as u64;
                    dispatched.extend(
                        region
                            .nodes
                            .iter()
                            .filter_map(|n| ops.and_then(|o| o.get(&n.0)).copied()),
                    );
                }
                prepared.insert((p.runtime, p.prepared), (operations, dispatched));
            }
            Record::Submit(s) if s.submission.0 < start => {
                let c = counts.entry(s.runtime).or_default();
                if c.source
                    .as_ref()
                    .is_some_and(|(from, _)| s.submission.0 < *from)
                {
                    continue;
                }
                c.submissions += 1;
                if let Some((operations, dispatched)) = prepared.get(&(s.runtime, s.prepared)) {
                    c.operations += operations;
                    for kernel in dispatched {
                        *c.dispatches.entry(*kernel).or_default() += 1;
                    }
                }
            }
            Record::FaultInjected(f) => {
                if let Some(SubmissionIndex(n)) = f.submission {
                    let c = counts.entry(f.runtime).or_default();
                    c.fired_in = Some(c.fired_in.map_or(n, |l| l.min(n)));
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for (runtime, c) in counts {
        let start = starts[&runtime];
        let source = c.source.as_ref().map(|(_, f)| f);
        if c.submissions == 0 {
            // The trim starts where the source does: its own range fault, if any, holds.
            out.extend(source.cloned().map(|f| (runtime, f)));
            continue;
        }
        let base = match source {
            Some(RangeFault {
                from_start: Some(spec),
                ..
            }) => spec.clone(),
            Some(fired) => {
                out.insert(runtime, fired.clone());
                continue;
            }
            None => match c.spec {
                Some(spec) => spec,
                None => continue,
            },
        };
        let fault = match c.fired_in.filter(|&n| n < start) {
            Some(n) => RangeFault {
                from_start: None,
                fired_in: Some(SubmissionIndex(n)),
            },
            None => RangeFault {
                from_start: hrx_capture::range::fault_from_range(&base, c.operations, |name| {
                    c.dispatches
                        .iter()
                        .filter(|(k, _)| kernels.get(&(runtime, **k)).is_some_and(|e| e == name))
                        .map(|(_, n)| n)
                        .sum()
                }),
                fired_in: None,
            },
        };
        out.insert(runtime, fault);
    }
    Ok(out)
}
