//! The replay's own trace read back: its recorder closed, and its records (region timings,
//! digests, failures) mapped onto captured ids, timings and completions through the one
//! join of every reader (module `joins`).

use super::{Observed, ReplayOutput};
use crate::error::ReplayError;
use crate::plan::RuntimePlan;
use hrx_capture::schema::{self as s, BufferId, Record, SubmissionIndex};
use hrx_capture::{MemorySink, Recorder, Trace};
use std::collections::HashMap;

/// Closes the replay's recorder and reads its trace.
pub(super) fn close(recorder: &Recorder, sink: &MemorySink) -> Result<Trace, ReplayError> {
    let summary = recorder
        .close()
        .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
    if summary.dropped_records > 0 {
        return Err(ReplayError::Measurement {
            why: format!(
                "the replay's recorder dropped {} records (the machine is overloaded?)",
                summary.dropped_records
            ),
        });
    }
    Trace::from_bytes(&sink.contents()).map_err(|e| ReplayError::Measurement { why: e.to_string() })
}

/// Maps the replay's own records back onto captured ids: its digests, timings, completions
/// and events as the one join of every reader (`hrx_analysis::scan`, module `joins`) joined
/// them to the replay's submissions, over `structure` (the replay's objects, written once)
/// then `records`.
pub(super) fn read_back(
    plan: &RuntimePlan<'_>,
    structure: &[Record],
    records: &[Record],
    replay_index: &HashMap<u64, SubmissionIndex>,
    buffer_of: &HashMap<u64, BufferId>,
    observed: &mut Observed,
) {
    let captured = |submission: s::SubmissionIndex| replay_index.get(&submission.0).copied();
    let blobs: HashMap<s::BlobHash, &[u8]> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => Some((b.hash, b.bytes.as_slice())),
            _ => None,
        })
        .collect();
    let all: Vec<&Record> = structure.iter().chain(records).collect();
    // One replay runtime wrote them.
    for joined in crate::joins::join(&all).runtimes.into_values() {
        for (submission, o) in joined.outputs {
            let (Some(index), Some(&buffer)) = (captured(submission), buffer_of.get(&o.buffer.0))
            else {
                continue;
            };
            // The replay digests every range: ignore those the capture did not digest.
            if !plan.digests_all
                && plan.buffers[plan.buffer_index[&buffer]].placement == s::Placement::GpuLocal
            {
                continue;
            }
            let contents = match &o.contents {
                s::Payload::Inline(bytes) => Some(bytes.clone()),
                s::Payload::Blob { hash, .. } => blobs.get(hash).map(|bytes| bytes.to_vec()),
                s::Payload::Omitted { .. } => None,
            };
            observed
                .outputs
                .entry(index)
                .or_default()
                .push(ReplayOutput {
                    buffer,
                    start: o.start,
                    end: o.end,
                    xxh3: o.xxh3,
                    contents,
                });
        }
        // A failed run is no duration (see `plan`): its region's timing is left out.
        let failed_runs: std::collections::HashSet<(s::SubmissionIndex, u32)> =
            (joined.region_done.iter())
                .filter(|(_, _, status, _)| matches!(status, s::Status::Failed { .. }))
                .filter_map(|&(submission, region, _, _)| Some((captured(submission)?, region)))
                .collect();
        for (submission, region, sample) in joined.region_times {
            if let Some(index) = captured(submission) {
                if failed_runs.contains(&(index, region)) {
                    continue;
                }
                let graph = plan.submissions[plan.submission_index[&index]].graph;
                observed
                    .region_times
                    .entry((graph, region))
                    .or_default()
                    .push(sample);
            }
        }
        for (submission, region, status, time_ns) in joined.region_done {
            if let (Some(index), s::Status::Failed { .. }) = (captured(submission), &status) {
                let failed = observed.failed_region.entry(index).or_insert(region);
                if *failed >= region {
                    *failed = region;
                    observed.failed_at.insert(index, time_ns);
                }
            }
        }
        // After the failures are known: a failed region's operations are no durations (the
        // failing one stopped short), as its region's time is none.
        for (submission, node, sample) in joined.op_times {
            if let Some(index) = captured(submission) {
                let graph = plan.submissions[plan.submission_index[&index]].graph;
                let region = plan.graphs[graph].region_of_node(node);
                let failed = observed.failed_region.get(&index).copied();
                if region.is_some() && region == failed {
                    continue;
                }
                observed
                    .op_times
                    .entry((graph, node))
                    .or_default()
                    .push(sample);
            }
        }
        for submission in joined.quarantines {
            if let Some(index) = captured(submission) {
                observed.quarantined.insert(index);
            }
        }
        for p in joined.poisons {
            if let Some(event) = crate::concurrent::PoisonEvent::of(p)
                && let (Some(submission), Some(&buffer)) =
                    (captured(event.submission), buffer_of.get(&event.buffer.0))
            {
                observed.poisons.push(crate::concurrent::PoisonEvent {
                    buffer,
                    submission,
                    ..event
                });
            }
        }
    }
}
