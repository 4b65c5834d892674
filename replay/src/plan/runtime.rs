//! One runtime's gathered records validated into its [`RuntimePlan`]: buffers, kernels,
//! graphs, the timeline of host writes, submits and buffer releases, and what each
//! submission is expected to produce (see the plan's module docs for the order rules).

use super::check::attribute;
use super::check::check_op;
use super::gather::{Gather, bad, contents, to_usize};
use super::{
    BufferPlan, Event, GraphPlan, HostWritePlan, KernelPlan, MAX_BUFFER_BYTES, MAX_GRAPH_SLOTS,
    OpPlan, Output, RuntimePlan, SubmissionPlan,
};
use crate::error::ReplayError;
use crate::joins::Joined;
use hrx_capture::schema::{self as s, BlobHash, BufferId, Engine, RuntimeId, SubmissionIndex};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The note of a runtime whose capture digested only host-observable outputs.
pub(crate) fn host_observable_note(id: RuntimeId) -> String {
    format!(
        "runtime {id}: the capture digested only host-observable outputs: a divergence shows where it becomes visible, not necessarily where it started (record with HRX_TRACE_DIGESTS=all to name the first diverging region)"
    )
}

/// The note of the records of `orphans`, submissions of runtime `id` past the last `Submit`
/// of a file cut short, left out ([`super::plan_of`]); `None` when there are none.
pub(crate) fn orphans_note(
    id: RuntimeId,
    orphans: &std::collections::BTreeSet<SubmissionIndex>,
) -> Option<String> {
    let (first, last) = (orphans.first()?, orphans.last()?);
    Some(format!(
        "runtime {id}: records of {} left out ({first}..={last}): the trace lacks their Submit (the recording was cut short before the submitting thread's records were written)",
        hrx_analysis::units::plural(orphans.len() as u64, "submission")
    ))
}

pub(super) fn runtime_plan<'t>(
    id: RuntimeId,
    g: Gather<'t>,
    joined: Joined<'t>,
    blobs: &HashMap<BlobHash, &'t [u8]>,
    until: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<RuntimePlan<'t>, ReplayError> {
    let start = g.start.ok_or_else(|| {
        bad(format!(
            "runtime {id} {} (damaged trace?)",
            crate::error::NO_RUNTIME_START
        ))
    })?;
    if start.graph_slots == 0 || start.capacity == 0 || start.graph_slots > MAX_GRAPH_SLOTS {
        return Err(bad(format!(
            "runtime {id} has {} graph slots and capacity {}: both must be at least 1, and slots at most {MAX_GRAPH_SLOTS}",
            start.graph_slots, start.capacity
        )));
    }
    let mut plan = RuntimePlan {
        id,
        backend: start.backend.clone(),
        device: start.device.clone(),
        graph_slots: start.graph_slots,
        capacity: start.capacity,
        fault: start.fault.clone(),
        op_time_source: g.op_time_source,
        range_start: g.range_start,
        range_fault: g.range_fault,
        range_unknown_bytes: 0,
        range_unknown: Vec::new(),
        buffers: Vec::new(),
        buffer_index: HashMap::new(),
        kernels: Vec::new(),
        kernel_index: HashMap::new(),
        graphs: Vec::new(),
        graph_index: HashMap::new(),
        host_writes: Vec::new(),
        submissions: Vec::new(),
        submission_index: HashMap::new(),
        timeline: Vec::new(),
        substitutions: Vec::new(),
        region_times: HashMap::new(),
        op_times: HashMap::new(),
        poisons: g
            .poisons
            .iter()
            .filter_map(|p| crate::concurrent::PoisonEvent::of(p))
            .collect(),
        cross_waits: HashMap::new(),
        refusals: g.refusals,
        cut: 0,
        first_captured: None,
        last_captured: None,
        digests_all: false,
        sticky_loss: None,
    };

    // Buffers.
    for b in &g.buffers {
        if plan.buffer_index.contains_key(&b.buffer) {
            return Err(bad(format!(
                "runtime {id}: buffer {} is created twice",
                b.buffer
            )));
        }
        if b.len_bytes > MAX_BUFFER_BYTES {
            return Err(bad(format!(
                "runtime {id}: buffer {} is {} bytes, more than replay allocates ({MAX_BUFFER_BYTES})",
                b.buffer, b.len_bytes
            )));
        }
        let len = to_usize(b.len_bytes, || format!("buffer {}", b.buffer))?;
        plan.buffer_index.insert(b.buffer, plan.buffers.len());
        plan.buffers.push(BufferPlan {
            id: b.buffer,
            len,
            placement: b.placement,
            graphs: Vec::new(),
        });
    }
    let buffer_len = |plan: &RuntimePlan<'_>, buffer: BufferId| -> Result<u64, ReplayError> {
        plan.buffer_index
            .get(&buffer)
            .map(|&i| plan.buffers[i].len as u64)
            .ok_or_else(|| {
                bad(format!(
                    "runtime {id}: buffer {buffer} is used but never created"
                ))
            })
    };
    let check_range = |plan: &RuntimePlan<'_>,
                       buffer: BufferId,
                       start: u64,
                       end: u64,
                       what: &dyn Fn() -> String| {
        let len = buffer_len(plan, buffer)?;
        if start > end || end > len {
            return Err(bad(format!(
                "{}: bytes {start}..{end} are outside buffer {buffer} of {len} bytes",
                what()
            )));
        }
        Ok(())
    };

    // Kernels.
    for k in &g.kernels {
        if plan.kernel_index.contains_key(&k.kernel) {
            return Err(bad(format!(
                "runtime {id}: kernel {} is loaded twice",
                k.kernel
            )));
        }
        for (index, c) in k.contract.iter().enumerate() {
            if c.alignment > 1 && !c.alignment.is_power_of_two() {
                return Err(bad(format!(
                    "runtime {id}: kernel {} ({}) binding {index} has alignment {}, not a power of two",
                    k.kernel, k.entry, c.alignment
                )));
            }
            to_usize(c.extent_bytes, || {
                format!("kernel {} binding {index} extent", k.kernel)
            })?;
            to_usize(c.alignment, || {
                format!("kernel {} binding {index} alignment", k.kernel)
            })?;
        }
        if k.engine == Engine::Npu && k.npu_groups.len() != k.contract.len() {
            return Err(bad(format!(
                "runtime {id}: NPU kernel {} ({}) has {} argument groups for {} bindings",
                k.kernel,
                k.entry,
                k.npu_groups.len(),
                k.contract.len()
            )));
        }
        let code = k.code.and_then(|hash| blobs.get(&hash).copied());
        plan.kernel_index.insert(k.kernel, plan.kernels.len());
        plan.kernels.push(KernelPlan {
            id: k.kernel,
            entry: k.entry.clone(),
            engine: k.engine,
            contract: k.contract.clone(),
            constants: k.constants.clone(),
            grid: k.grid,
            block: k.block,
            npu_groups: k.npu_groups.clone(),
            code,
            params: hrx_analysis::diff::kernel_params(k),
        });
    }

    // Graph operations, by graph, checked against buffers and kernels.
    let mut ops_by_graph: HashMap<s::GraphId, BTreeMap<u32, &s::GraphOp>> = HashMap::new();
    for op in &g.ops {
        if ops_by_graph
            .entry(op.graph)
            .or_default()
            .insert(op.node.0, op)
            .is_some()
        {
            return Err(bad(format!(
                "runtime {id}: graph {} has operation {} twice",
                op.graph, op.node
            )));
        }
    }
    for prepared in &g.prepared {
        if plan.graph_index.contains_key(&prepared.prepared) {
            return Err(bad(format!(
                "runtime {id}: graph {} is prepared twice",
                prepared.prepared
            )));
        }
        let ops = ops_by_graph.get(&prepared.graph).ok_or_else(|| {
            bad(format!(
                "runtime {id}: prepared graph {} has no recorded operations (graph {})",
                prepared.prepared, prepared.graph
            ))
        })?;
        let mut checked = Vec::with_capacity(ops.len());
        for (position, (&node, op)) in ops.iter().enumerate() {
            if node as usize != position {
                return Err(bad(format!(
                    "runtime {id}: graph {} lacks operation {position} (damaged trace?)",
                    prepared.graph
                )));
            }
            let what = || format!("runtime {id} graph {} operation {node}", prepared.graph);
            for u in &op.uses {
                check_range(&plan, u.buffer, u.start, u.end, &what)?;
            }
            check_op(&plan, op, &what)?;
            checked.push(OpPlan {
                op: op.op.clone(),
                lane: op.lane,
                uses: op.uses.clone(),
            });
        }
        for (index, region) in prepared.regions.iter().enumerate() {
            let what = || format!("runtime {id} graph {} region {index}", prepared.prepared);
            if region.nodes.is_empty() {
                return Err(bad(format!("{}: has no operations", what())));
            }
            if let Some(node) = region.nodes.iter().find(|n| n.0 as usize >= checked.len()) {
                return Err(bad(format!(
                    "{}: names operation {node}, the graph has {}",
                    what(),
                    checked.len()
                )));
            }
            for u in &region.uses {
                check_range(&plan, u.buffer, u.start, u.end, &what)?;
            }
        }
        let graph = plan.graphs.len();
        let mut buffers: Vec<usize> = (checked.iter().flat_map(|op| &op.uses))
            .map(|u| plan.buffer_index[&u.buffer])
            .collect();
        buffers.sort_unstable();
        buffers.dedup();
        for &b in &buffers {
            plan.buffers[b].graphs.push(graph);
        }
        plan.graph_index.insert(prepared.prepared, graph);
        plan.graphs.push(GraphPlan::new(
            prepared.prepared,
            checked,
            prepared.regions.clone(),
            buffers,
        ));
    }

    // Submissions, in index order.
    let mut submits: Vec<&s::Submit> = g.submits.clone();
    submits.sort_by_key(|s| s.submission);
    let mut all_submissions = HashMap::new();
    // Explicit producers that lie before the trace's range, as the one join says (module
    // `joins`): a trim's, or in a streamed replay's chunk those of earlier chunks too.
    let before: HashSet<(SubmissionIndex, SubmissionIndex)> =
        joined.producers_before.iter().copied().collect();
    for (position, submit) in submits.iter().enumerate() {
        if all_submissions
            .insert(submit.submission, position)
            .is_some()
        {
            return Err(bad(format!(
                "runtime {id}: submission {} is submitted twice",
                submit.submission
            )));
        }
        let graph = *plan.graph_index.get(&submit.prepared).ok_or_else(|| {
            bad(format!(
                "runtime {id}: submission {} names graph {}, which was never prepared",
                submit.submission, submit.prepared
            ))
        })?;
        for producer in &submit.producers {
            // A producer before the trace's range completed before the range started.
            if before.contains(&(submit.submission, *producer)) {
                continue;
            }
            if *producer >= submit.submission || !all_submissions.contains_key(producer) {
                return Err(bad(format!(
                    "runtime {id}: submission {} waits on submission {producer}, which is not an earlier submission",
                    submit.submission
                )));
            }
        }
        // By its number in the whole recording, which a range or trim keeps.
        if until.is_some_and(|n| submit.submission.0 > n) {
            plan.cut += 1;
            continue;
        }
        plan.submission_index
            .insert(submit.submission, plan.submissions.len());
        plan.submissions.push(SubmissionPlan {
            index: submit.submission,
            graph,
            producers: submit.producers.clone(),
            time_ns: submit.time_ns,
            status: None,
            region_status: BTreeMap::new(),
            failure: None,
            quarantined: false,
            faults: Vec::new(),
            outputs: Vec::new(),
            excluded: Vec::new(),
        });
    }
    // `Some(position)` for a kept submission, `None` for one cut by `until`; unknown ones
    // are an error, but in a file cut short (`plan_of`) those past the last `Submit` it
    // holds are left out and counted: the tail a killed recording's submitting thread did
    // not write. One missing between two held submissions (a damaged block) stays an error:
    // what it wrote, later submissions read, and a replay without it would diverge.
    let last_submitted = all_submissions.keys().max().copied();
    plan.first_captured = all_submissions.keys().min().copied();
    plan.last_captured = last_submitted;
    let orphans = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let locate = |plan: &RuntimePlan<'_>, submission: SubmissionIndex, what: &str| {
        if let Some(&position) = plan.submission_index.get(&submission) {
            Ok(Some(position))
        } else if all_submissions.contains_key(&submission)
            || g.range_start.is_some_and(|start| submission < start)
        {
            Ok(None)
        } else if g.cut_short && last_submitted.is_none_or(|last| submission > last) {
            // Past what `until` kept, it would not have been replayed anyway: no note.
            if plan.cut == 0 {
                orphans.borrow_mut().insert(submission);
            }
            Ok(None)
        } else {
            Err(bad(format!(
                "runtime {id}: {what} names submission {submission}, which was never submitted"
            )))
        }
    };
    let check_region = |plan: &RuntimePlan<'_>, position: usize, region: u32, what: &str| {
        let graph = &plan.graphs[plan.submissions[position].graph];
        if region as usize >= graph.regions.len() {
            return Err(bad(format!(
                "runtime {id}: {what} names region {region} of submission {}, whose graph has {} regions",
                plan.submissions[position].index,
                graph.regions.len()
            )));
        }
        Ok(())
    };
    // A completion, timing or event naming a submission never submitted, or a region its
    // graph lacks: the trace lacks what replay needs (a damaged or lossy trace).
    for &(what, submission, region) in &g.named {
        if let Some(position) = locate(&plan, submission, what)?
            && let Some(region) = region
        {
            check_region(&plan, position, region, what)?;
        }
    }
    // Completions, timings and events come joined to their submission and region
    // (module `joins`): each is looked up in the plan.
    for (submission, status) in joined.done {
        if let Some(position) = locate(&plan, submission, "SubmissionDone")? {
            plan.submissions[position].status = Some(crate::report::outcome_of(status));
        }
    }
    for (submission, region, status, time_ns) in joined.region_done {
        if let Some(position) = locate(&plan, submission, "RegionDone")? {
            let submission = &mut plan.submissions[position];
            if matches!(status, s::Status::Failed { .. })
                && submission.failure.is_none_or(|f| f.region > region)
            {
                submission.failure = Some(crate::concurrent::Failure { region, time_ns });
            }
            submission.region_status.insert(region, status);
        }
    }
    // A submission's status, or a region's where the trace ends before the submission's.
    plan.sticky_loss = plan.submissions.iter().find_map(|s| {
        let region_errors = s.region_status.values().filter_map(|status| match status {
            s::Status::Failed { error } => Some(error),
            _ => None,
        });
        (s.status.iter().map(|(_, text)| text))
            .chain(region_errors)
            .find(|error| hrx::DeviceCall::is_sticky_loss(error))
            .map(|error| (s.index, error.clone()))
    });
    for (submission, on_submission) in joined.cross_waits {
        plan.cross_waits
            .entry(submission)
            .or_default()
            .push(on_submission);
    }
    for submission in joined.quarantines {
        if let Some(position) = locate(&plan, submission, "Quarantine")? {
            plan.submissions[position].quarantined = true;
        }
    }
    for (submission, description) in joined.faults {
        if let Some(position) = locate(&plan, submission, "FaultInjected")? {
            plan.submissions[position]
                .faults
                .push(description.to_owned());
        }
    }
    for (submission, region, sample) in joined.region_times {
        if let Some(position) = locate(&plan, submission, "RegionTiming")? {
            // A failed run is no duration (it stopped short, or waited on a lost device), as
            // `stats` leaves it out; its status is compared instead.
            let submission = &plan.submissions[position];
            if matches!(
                submission.region_status.get(&region),
                Some(s::Status::Failed { .. })
            ) {
                continue;
            }
            let graph = submission.graph;
            plan.region_times
                .entry((graph, region))
                .or_default()
                .push(sample);
        }
    }
    for (submission, node, sample) in joined.op_times {
        if let Some(position) = locate(&plan, submission, "OpTiming")? {
            let graph = plan.submissions[position].graph;
            if node as usize >= plan.graphs[graph].ops.len() {
                return Err(bad(format!(
                    "runtime {id}: OpTiming names operation {node} of graph {}, which has {}",
                    plan.graphs[graph].prepared,
                    plan.graphs[graph].ops.len()
                )));
            }
            // A failed region's operations are no durations (the failing one stopped short).
            let region = plan.graphs[graph].region_of_node(node);
            let failed = region.is_some_and(|r| {
                matches!(
                    plan.submissions[position].region_status.get(&r),
                    Some(s::Status::Failed { .. })
                )
            });
            if !failed {
                plan.op_times.entry((graph, node)).or_default().push(sample);
            }
        }
    }

    // Output digests, joined to their submission (module `joins`), attributed to regions
    // per submission.
    let mut contents_lost = 0u64;
    for &(submission, o) in &joined.outputs {
        let Some(position) = locate(&plan, submission, "OutputDigest")? else {
            continue;
        };
        let what = || format!("runtime {id} output digest of submission {submission}");
        check_range(&plan, o.buffer, o.start, o.end, &what)?;
        let needed_by = || (id.0, Some(submission.0));
        // An output's stored contents lost with a damaged block leave its digest, which is
        // what replay compares: the output is compared by it (a break-it pass: the whole
        // replay was refused). Contents serve a `--tolerance` and a callback's substitute,
        // which do without them as for a trace recorded without contents.
        let contents = match contents(&o.contents, o.end - o.start, blobs, &what, &needed_by) {
            Err(ReplayError::BlobMissing { .. }) => {
                contents_lost += 1;
                None
            }
            other => other?,
        };
        plan.submissions[position].outputs.push(Output {
            region: None,
            buffer: o.buffer,
            start: o.start,
            end: o.end,
            xxh3: o.xxh3,
            contents,
        });
    }
    if contents_lost > 0 {
        notes.push(format!(
            "runtime {id}: the stored contents of {} are not in the trace (lost with a damaged \
             block): compared by their digests, without contents for --tolerance or a \
             callback's substitute",
            hrx_analysis::units::plural(contents_lost, "output")
        ));
    }
    notes.extend(orphans_note(id, &orphans.into_inner()));
    // Of every digest, kept or not (a left-out one's buffer was never checked: looked up).
    plan.digests_all = joined.outputs.iter().any(|(_, o)| {
        (plan.buffer_index.get(&o.buffer))
            .is_some_and(|&b| plan.buffers[b].placement == s::Placement::GpuLocal)
    });
    if !plan.digests_all && !joined.outputs.is_empty() {
        notes.push(host_observable_note(id));
    }
    for submission in &mut plan.submissions {
        let graph = &plan.graphs[submission.graph];
        let keys: Vec<_> = submission
            .outputs
            .iter()
            .map(|o| (o.buffer, o.start, o.end))
            .collect();
        for (output, region) in submission.outputs.iter_mut().zip(attribute(graph, &keys)) {
            output.region = region;
        }
    }

    // Host writes and the timeline.
    let last_submit_ns = plan.submissions.last().map(|s| s.time_ns);
    let mut writes: Vec<(usize, &s::HostWrite)> =
        g.host_writes.iter().copied().enumerate().collect();
    writes.sort_by_key(|(file_order, w)| (w.time_ns, *file_order));
    for (_, w) in writes {
        if plan.cut > 0 && last_submit_ns.is_none_or(|last| w.time_ns > last) {
            continue;
        }
        let what = || {
            format!(
                "runtime {id} host write into buffer {} at byte {}",
                w.buffer, w.offset
            )
        };
        let end = w
            .offset
            .checked_add(w.len_bytes)
            .ok_or_else(|| bad(format!("{}: the range overflows", what())))?;
        check_range(&plan, w.buffer, w.offset, end, &what)?;
        let needed_by = || (id.0, first_submitted_at(&plan, w.time_ns));
        let bytes =
            contents(&w.contents, w.len_bytes, blobs, &what, &needed_by)?.ok_or_else(|| {
                bad(format!(
                    "{}: its {} bytes were not captured, so the input cannot be reproduced",
                    what(),
                    w.len_bytes
                ))
            })?;
        plan.host_writes.push(HostWritePlan {
            buffer: w.buffer,
            offset: to_usize(w.offset, what)?,
            bytes,
            time_ns: w.time_ns,
            digest_ok: xxhash_rust::xxh3::xxh3_64(bytes) == w.xxh3,
        });
    }
    // The state a range starts from, applied at its host time: after the host writes
    // recorded before it (a write made after `stop()`, before the range closed at the next
    // submit, is one), before its submission, and before a host write of the same time.
    // The first range's snapshots come before everything it recorded, as they did when
    // every snapshot was applied first (a trim's are at the time its range starts, before
    // every host write it keeps); a later range's (`stop()` then `start()`) come where it
    // reopened: applied first, the stale host write of the pause overwrote them and the
    // resumed submission read other bytes (the break-it pass of 2026-12-02, F22).
    let mut unknown = 0u64;
    let mut snapshots = Vec::new();
    for snap in &g.snapshots {
        let what = || {
            format!(
                "runtime {id} snapshot of buffer {} at byte {}",
                snap.buffer, snap.offset
            )
        };
        let end = snap
            .offset
            .checked_add(snap.len_bytes)
            .ok_or_else(|| bad(format!("{}: the range overflows", what())))?;
        check_range(&plan, snap.buffer, snap.offset, end, &what)?;
        let needed_by = || (id.0, first_submitted_at(&plan, snap.time_ns));
        match contents(&snap.contents, snap.len_bytes, blobs, &what, &needed_by)? {
            Some(bytes) => snapshots.push(HostWritePlan {
                buffer: snap.buffer,
                offset: to_usize(snap.offset, what)?,
                bytes,
                time_ns: snap.time_ns,
                digest_ok: xxhash_rust::xxh3::xxh3_64(bytes) == snap.xxh3,
            }),
            None => {
                unknown += snap.len_bytes;
                plan.range_unknown
                    .push((snap.time_ns, snap.buffer, snap.offset, end));
            }
        }
    }
    plan.range_unknown_bytes = unknown;
    plan.range_unknown.sort_by_key(|u| u.0); // stable: file order at equal times
    if unknown > 0 {
        notes.push(format!(
            "runtime {id}: cannot be exact: the range reads {unknown} bytes whose contents at its start the trace lacks (a trim of a recording without HRX_TRACE_CONTENTS=1 HRX_TRACE_DIGESTS=all): the outputs that depend on them are excluded"
        ));
    }
    if !snapshots.is_empty() {
        snapshots.sort_by_key(|w| w.time_ns); // stable: file order at equal times
        plan.host_writes = merge_by_time(snapshots, std::mem::take(&mut plan.host_writes));
    }
    let edited = plan.host_writes.iter().filter(|w| !w.digest_ok).count();
    if edited > 0 {
        notes.push(format!(
            "runtime {id}: {edited} host writes carry contents that do not match their recorded digest (edited or damaged trace); replayed as captured"
        ));
    }
    let releases = releases(&plan, &g.drops, last_submit_ns)?;
    plan.timeline = timeline(&plan, &releases);

    crate::substitute::plan_substitutions(&mut plan)?;
    crate::substitute::exclusions(&mut plan, Vec::new());
    if plan.refusals > 0 {
        notes.push(format!(
            "runtime {id}: the capture saw {} refused submits (Busy or quarantined); replay submits only accepted submissions and waits instead of being refused",
            plan.refusals
        ));
    }
    Ok(plan)
}

/// The buffers the program let go of (`BufferDropped`), as (host time, buffer index) in host
/// time order (file order at equal times); with `until`'s cut, those after the last kept
/// submission are left out, as its host writes are. A release naming a buffer the trace does
/// not create is left out too: ids are never reused, so nothing else can name it (and a
/// streamed replay's chunk may get the release of a buffer created and let go between two
/// flushes before the file's `BufferCreated`, another thread's, is read).
///
/// # Errors
/// [`ReplayError::Unreplayable`] for a buffer released twice.
fn releases(
    plan: &RuntimePlan<'_>,
    drops: &[&s::BufferDropped],
    last_submit_ns: Option<u64>,
) -> Result<Vec<(u64, usize)>, ReplayError> {
    let mut releases = Vec::with_capacity(drops.len());
    let mut released = HashSet::new();
    for d in drops {
        let Some(&buffer) = plan.buffer_index.get(&d.buffer) else {
            continue;
        };
        if !released.insert(buffer) {
            return Err(bad(format!(
                "runtime {}: buffer {} is released twice",
                plan.id, d.buffer
            )));
        }
        if plan.cut > 0 && last_submit_ns.is_none_or(|last| d.time_ns > last) {
            continue;
        }
        releases.push((d.time_ns, buffer));
    }
    releases.sort_by_key(|r| r.0); // stable: file order at equal times
    Ok(releases)
}

/// The timeline: submits in submission order; each host write before the first submit
/// recorded after it, ties going to the write (what the submit may read); each release
/// (`releases`, in host-time order) before the first submit recorded after it, ties going
/// to the submit (the program let go of a buffer only once every submission using it
/// retired, so a submit of the same instant came first); between two submits, host writes
/// and releases in host-time order, a write first at equal times.
fn timeline(plan: &RuntimePlan<'_>, releases: &[(u64, usize)]) -> Vec<Event> {
    let mut timeline =
        Vec::with_capacity(plan.submissions.len() + plan.host_writes.len() + releases.len());
    let (mut write, mut release) = (0, 0);
    let mut until = |timeline: &mut Vec<Event>, time_ns: Option<u64>| loop {
        let w = (plan.host_writes.get(write)).filter(|w| time_ns.is_none_or(|t| w.time_ns <= t));
        let r = (releases.get(release)).filter(|r| time_ns.is_none_or(|t| r.0 < t));
        match (w, r) {
            (Some(w), Some(r)) if r.0 < w.time_ns => {
                timeline.push(Event::Release(r.1));
                release += 1;
            }
            (Some(_), _) => {
                timeline.push(Event::HostWrite(write));
                write += 1;
            }
            (None, Some(r)) => {
                timeline.push(Event::Release(r.1));
                release += 1;
            }
            (None, None) => break,
        }
    };
    for (position, submission) in plan.submissions.iter().enumerate() {
        until(&mut timeline, Some(submission.time_ns));
        timeline.push(Event::Submit(position));
    }
    until(&mut timeline, None);
    timeline
}

/// `first` and `then`, each in host-time order, merged in host-time order; at equal times
/// `first`'s come first.
fn merge_by_time<'t>(
    first: Vec<HostWritePlan<'t>>,
    then: Vec<HostWritePlan<'t>>,
) -> Vec<HostWritePlan<'t>> {
    let mut merged = Vec::with_capacity(first.len() + then.len());
    let mut then = then.into_iter().peekable();
    for w in first {
        while then.peek().is_some_and(|t| t.time_ns < w.time_ns) {
            merged.extend(then.next());
        }
        merged.push(w);
    }
    merged.extend(then);
    merged
}

/// The first submission of `plan` submitted at or after `time_ns` (host time): the first
/// that can read a host write or snapshot made then.
fn first_submitted_at(plan: &RuntimePlan<'_>, time_ns: u64) -> Option<u64> {
    (plan.submissions.iter())
        .filter(|s| s.time_ns >= time_ns)
        .map(|s| s.index.0)
        .min()
}
