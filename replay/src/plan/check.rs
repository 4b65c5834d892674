//! Checks of single records: an operation against its kind and kernel contract, and the
//! attribution of a submission's output digests to the regions writing their ranges.

use super::gather::bad;
use super::{GraphPlan, RuntimePlan};
use crate::error::ReplayError;
use hrx_capture::schema::{self as s, Access, BufferId, Engine, OpKind};
use std::collections::HashMap;

/// Checks an operation's shape against its kind and kernel contract.
pub(super) fn check_op(
    plan: &RuntimePlan<'_>,
    op: &s::GraphOp,
    what: &dyn Fn() -> String,
) -> Result<(), ReplayError> {
    let accesses: Vec<Access> = op.uses.iter().map(|u| u.access).collect();
    match &op.op {
        OpKind::Fill { .. } => {
            if accesses != [Access::Write] {
                return Err(bad(format!(
                    "{}: a fill must have one written use, has {accesses:?}",
                    what()
                )));
            }
        }
        OpKind::Copy => {
            if accesses != [Access::Write, Access::Read] {
                return Err(bad(format!(
                    "{}: a copy must have uses [Write destination, Read source], has {accesses:?}",
                    what()
                )));
            }
            let (dst, src) = (&op.uses[0], &op.uses[1]);
            if dst.end - dst.start != src.end - src.start {
                return Err(bad(format!(
                    "{}: copy of {} bytes into {} bytes",
                    what(),
                    src.end - src.start,
                    dst.end - dst.start
                )));
            }
        }
        OpKind::Kernel { kernel } | OpKind::Npu { kernel } => {
            let npu = matches!(op.op, OpKind::Npu { .. });
            let k = plan
                .kernel_index
                .get(kernel)
                .map(|&i| &plan.kernels[i])
                .ok_or_else(|| bad(format!("{}: kernel {kernel} was never loaded", what())))?;
            if (k.engine == Engine::Npu) != npu || k.engine == Engine::Host {
                return Err(bad(format!(
                    "{}: kernel {kernel} ({}) runs on {:?}, the operation is {}",
                    what(),
                    k.entry,
                    k.engine,
                    if npu { "an NPU run" } else { "a GPU dispatch" }
                )));
            }
            let contract: Vec<Access> = k.contract.iter().map(|c| c.access).collect();
            if contract != accesses {
                return Err(bad(format!(
                    "{}: uses {accesses:?} do not match kernel {} ({}) bindings {contract:?}",
                    what(),
                    kernel,
                    k.entry
                )));
            }
        }
        OpKind::Scoped | OpKind::Host => {}
    }
    Ok(())
}

/// Attributes output ranges of one submission of `graph` to regions (see the module docs).
pub(crate) fn attribute(graph: &GraphPlan, keys: &[(BufferId, u64, u64)]) -> Vec<Option<u32>> {
    let mut seen: HashMap<(BufferId, u64, u64), usize> = HashMap::new();
    keys.iter()
        .map(|&(buffer, start, end)| {
            let candidates = graph.writers(buffer, start, end);
            let k = seen.entry((buffer, start, end)).or_default();
            let region = candidates
                .get((*k).min(candidates.len().saturating_sub(1)))
                .copied();
            *k += 1;
            region
        })
        .collect()
}
