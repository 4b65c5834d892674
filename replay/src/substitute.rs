//! Scoped callbacks and host operations: what replay runs instead of application code it
//! does not have, and which outputs it therefore cannot vouch for.
//!
//! A scoped native callback or a host operation is always a region of its own, so the
//! captured output digests of that region in a submission are exactly what the operation
//! wrote there. When the trace has their contents (`trace_contents`), replay keeps the
//! operation in the graph (the graph lowers into the same regions) as a callback that
//! writes those bytes into its written bindings, one submission after the other; where the
//! captured region failed, the callback fails the same way (a device loss where the capture
//! quarantined the graph); where it was cancelled, it has no entry (it will not run).
//! Entries are consumed in run order, which is submission order (the runs write the same
//! ranges, so the runtime orders them). Should the replay cancel a run the capture made,
//! the later entries of that operation shift by one; that submission's status divergence is
//! reported regardless.
//!
//! Without contents, or for a scoped callback writing a GPU-local buffer (a callback gets
//! views, not a device to write through), the callback does nothing. Its written ranges are
//! then *tainted*, as are the bytes a trimmed range reads whose contents at its start the
//! trace lacks; taint flows in timeline order to every operation that reads a tainted
//! range (all of that operation's writes become tainted), is cleared by clean writes and by
//! host writes, and every captured output over a range still tainted when its region ends
//! is excluded from comparison with the reason; it carries from one chunk of a streamed
//! replay to the next.

use crate::error::ReplayError;
use crate::plan::{Event, OpPlan, RuntimePlan, SubmissionPlan};
use hrx_capture::schema::{self as s, Access, BufferId, OpKind, SubmissionIndex};
use std::collections::HashMap;
use std::sync::Arc;

fn bad(why: impl Into<String>) -> ReplayError {
    ReplayError::unreplayable(why)
}

/// What a substituted scoped/host operation does in one submission.
#[derive(Clone, Debug)]
pub(crate) enum Substitute<'t> {
    /// Write the captured bytes of each written binding: (binding index, bytes).
    Write(Vec<(usize, &'t [u8])>),
    /// Fail as the captured callback failed.
    Fail { device_lost: bool, message: String },
    /// Do nothing: the contents are not available (the outputs are excluded).
    Unavailable,
}

/// A scoped or host operation and what replay does for it in each submission.
#[derive(Clone, Debug)]
pub(crate) struct SubstitutionPlan<'t> {
    pub graph: usize,
    pub node: usize,
    pub region: u32,
    /// Whether the operation writes anything (if not, it is replayed as a no-op).
    pub writes: bool,
    /// Per submission (captured index) that runs it; submissions whose region was cancelled
    /// in the capture have no entry.
    pub per_submission: Vec<(SubmissionIndex, Substitute<'t>)>,
    /// Why some submissions could not be substituted, when any could not.
    pub unavailable_why: Option<String>,
}

/// Plans what replay does for scoped callbacks and host operations, which it cannot
/// re-execute: write their captured outputs, fail as they failed, or nothing.
pub(crate) fn plan_substitutions(plan: &mut RuntimePlan<'_>) -> Result<(), ReplayError> {
    let mut out = Vec::new();
    for (graph_index, graph) in plan.graphs.iter().enumerate() {
        for (node, op) in graph.ops.iter().enumerate() {
            if !matches!(op.op, OpKind::Scoped | OpKind::Host) {
                continue;
            }
            let region = graph.region_of_node(node as u32).ok_or_else(|| {
                bad(format!(
                    "runtime {}: graph {} operation {node} is in no region",
                    plan.id, graph.prepared
                ))
            })?;
            let writes = op.uses.iter().any(|u| u.access != Access::Read);
            let mut sub = SubstitutionPlan {
                graph: graph_index,
                node,
                region,
                writes,
                per_submission: Vec::new(),
                unavailable_why: None,
            };
            if !writes {
                out.push(sub);
                continue;
            }
            let gpu_local = op.uses.iter().find(|u| {
                u.access != Access::Read
                    && matches!(op.op, OpKind::Scoped)
                    && plan.buffers[plan.buffer_index[&u.buffer]].placement
                        == s::Placement::GpuLocal
            });
            for submission in plan.submissions.iter().filter(|s| s.graph == graph_index) {
                let status = submission.region_status.get(&region);
                let entry = match status {
                    Some(s::Status::Cancelled { .. }) => continue,
                    Some(s::Status::Failed { error }) => Substitute::Fail {
                        device_lost: submission.quarantined,
                        message: error.clone(),
                    },
                    Some(s::Status::Ok) | None => {
                        if let Some(u) = gpu_local {
                            sub.unavailable_why = Some(format!(
                                "it writes GPU-local buffer {}, which a replayed scoped callback cannot fill",
                                u.buffer
                            ));
                            Substitute::Unavailable
                        } else {
                            match captured_bindings(op, region, submission) {
                                Ok(writes) => Substitute::Write(writes),
                                Err(why) => {
                                    sub.unavailable_why = Some(why);
                                    Substitute::Unavailable
                                }
                            }
                        }
                    }
                };
                sub.per_submission.push((submission.index, entry));
            }
            out.push(sub);
        }
    }
    plan.substitutions = out;
    Ok(())
}

/// The captured bytes of each written binding of `op` in `submission`.
fn captured_bindings<'t>(
    op: &OpPlan,
    region: u32,
    submission: &SubmissionPlan<'t>,
) -> Result<Vec<(usize, &'t [u8])>, String> {
    let mut writes = Vec::new();
    for (binding, u) in op.uses.iter().enumerate() {
        if u.access == Access::Read {
            continue;
        }
        let output = submission
            .outputs
            .iter()
            .find(|o| {
                o.region.is_none_or(|r| r == region)
                    && o.buffer == u.buffer
                    && o.start <= u.start
                    && u.end <= o.end
            })
            .ok_or_else(|| {
                format!(
                    "submission {} has no captured output for buffer {} bytes {}..{}",
                    submission.index, u.buffer, u.start, u.end
                )
            })?;
        let bytes = output.contents.ok_or_else(|| {
            "the trace has only the digest of its output (record with trace contents to replay it)"
                .to_string()
        })?;
        let from = (u.start - output.start) as usize;
        let to = (u.end - output.start) as usize;
        writes.push((binding, &bytes[from..to]));
    }
    Ok(writes)
}

/// An excluded written range: (region, buffer, start, end, why).
type Excluded = (u32, BufferId, u64, u64, Arc<str>);

/// Why `buffer[start..end]` is tainted, if any byte of it is.
fn tainted(taint: &Taint, buffer: BufferId, start: u64, end: u64) -> Option<Arc<str>> {
    (taint.iter())
        .find(|(b, s, e, _)| *b == buffer && *s < end && start < *e)
        .map(|(.., why)| why.clone())
}

/// Written ranges whose replayed bytes replay cannot vouch for, each with the reason:
/// `(buffer, start, end, why)`.
pub(crate) type Taint = Vec<(BufferId, u64, u64, Arc<str>)>;

/// Marks outputs that depend on what replay could not reproduce: the written ranges of an
/// unavailable substitution, the bytes a range reads whose contents at its start the trace
/// lacks ([`RuntimePlan::range_unknown`]: a trim of a recording without contents), and
/// everything later that reads them. `carried` is the taint at the end of the previous
/// chunk of a streamed replay (empty for the first, or a whole trace); returns the taint at
/// the end of this one, for the next.
///
/// Before, a trim's replay compared such outputs and called the difference a REGRESSION,
/// and taint ended with its chunk: an output 2,048 submissions after an unavailable
/// callback was compared again.
pub(crate) fn exclusions(plan: &mut RuntimePlan<'_>, carried: Taint) -> Taint {
    let mut taint = carried;
    let unavailable: HashMap<(SubmissionIndex, u32), String> = plan
        .substitutions
        .iter()
        .flat_map(|sub| {
            let kind = match plan.graphs[sub.graph].ops[sub.node].op {
                OpKind::Host => "host callback",
                _ => "scoped callback",
            };
            let why = sub.unavailable_why.clone().unwrap_or_default();
            sub.per_submission
                .iter()
                .filter(|(_, e)| matches!(e, Substitute::Unavailable))
                .map(move |(index, _)| {
                    (
                        (*index, sub.region),
                        format!("depends on {kind} in submission {index} region {}, not replayable: {why}", sub.region),
                    )
                })
        })
        .collect();
    if unavailable.is_empty() && plan.range_unknown.is_empty() && taint.is_empty() {
        return taint;
    }
    let subtract = |taint: &mut Taint, buffer: BufferId, start: u64, end: u64| {
        let mut kept = Vec::with_capacity(taint.len());
        for (b, s, e, why) in taint.drain(..) {
            if b != buffer || e <= start || end <= s {
                kept.push((b, s, e, why));
                continue;
            }
            if s < start {
                kept.push((b, s, start, why.clone()));
            }
            if end < e {
                kept.push((b, end, e, why));
            }
        }
        *taint = kept;
    };
    // The unknown ranges enter at their snapshot's host time, as known snapshots are
    // applied: before a host write or a submission of the same time.
    let unknown = std::mem::take(&mut plan.range_unknown);
    let mut next_unknown = 0;
    let mut enter_until = |taint: &mut Taint, time_ns: u64| {
        while let Some(&(at, buffer, start, end)) = unknown.get(next_unknown)
            && at <= time_ns
        {
            next_unknown += 1;
            subtract(taint, buffer, start, end);
            taint.push((
                buffer,
                start,
                end,
                Arc::from(format!(
                    "depends on buffer {buffer} bytes {start}..{end}, whose contents at the \
                     range's start the trace lacks (a trim of a recording without \
                     HRX_TRACE_CONTENTS=1 HRX_TRACE_DIGESTS=all)"
                )),
            ));
        }
    };
    for event in plan.timeline.clone() {
        let time_ns = match event {
            Event::HostWrite(i) => plan.host_writes[i].time_ns,
            Event::Submit(position) => plan.submissions[position].time_ns,
            // A released buffer's bytes are read by nothing after.
            Event::Release(_) => continue,
        };
        enter_until(&mut taint, time_ns);
        match event {
            Event::HostWrite(i) => {
                let w = &plan.host_writes[i];
                subtract(
                    &mut taint,
                    w.buffer,
                    w.offset as u64,
                    (w.offset + w.bytes.len()) as u64,
                );
            }
            Event::Submit(position) => {
                let submission = &plan.submissions[position];
                let graph = &plan.graphs[submission.graph];
                let mut excluded = Vec::new();
                for (index, region) in graph.regions.iter().enumerate() {
                    let index = index as u32;
                    let unavailable = unavailable
                        .get(&(submission.index, index))
                        .map(|w| Arc::<str>::from(w.as_str()));
                    // Operation by operation, in the region's order (which its hazards
                    // respect): an output that reads no tainted byte is compared, even
                    // beside one in the same region that does (a break-it pass: a lone
                    // fill beside a kernel reading missing bytes was excluded with it).
                    // Without its operations (none recorded), the region's summarized uses.
                    let ops: Option<Vec<&[s::Use]>> = (!region.nodes.is_empty())
                        .then(|| {
                            (region.nodes.iter())
                                .map(|n| graph.ops.get(n.0 as usize).map(|op| &op.uses[..]))
                                .collect()
                        })
                        .flatten();
                    let steps = ops.unwrap_or_else(|| vec![&region.uses[..]]);
                    let mut written = Vec::new();
                    for uses in steps {
                        let why = unavailable.clone().or_else(|| {
                            (uses.iter())
                                .filter(|u| u.access != Access::Write)
                                .find_map(|u| tainted(&taint, u.buffer, u.start, u.end))
                        });
                        for u in uses.iter().filter(|u| u.access != Access::Read) {
                            subtract(&mut taint, u.buffer, u.start, u.end);
                            if let Some(why) = &why {
                                taint.push((u.buffer, u.start, u.end, why.clone()));
                            }
                            written.push((u.buffer, u.start, u.end));
                        }
                    }
                    // Its outputs are digested as it ends: what it wrote that is tainted then.
                    for (buffer, start, end) in written {
                        for (b, s, e, why) in &taint {
                            if *b == buffer && *s < end && start < *e {
                                let part = (index, buffer, (*s).max(start), (*e).min(end));
                                if !excluded
                                    .iter()
                                    .any(|x: &Excluded| (x.0, x.1, x.2, x.3) == part)
                                {
                                    excluded.push((part.0, part.1, part.2, part.3, why.clone()));
                                }
                            }
                        }
                    }
                }
                plan.submissions[position].excluded = excluded;
            }
            Event::Release(_) => {}
        }
    }
    enter_until(&mut taint, u64::MAX);
    plan.range_unknown = unknown;
    taint
}
