//! Divergences that depend on when a concurrent failure happened, told from regressions.
//!
//! Poison is per buffer (the seed's rule, see `hrx`'s scheduler docs): a region that uses
//! any byte of a buffer poisoned by a failure fails, even when the failed region wrote other
//! bytes. When nothing orders the poisoning submission before the reader (no explicit
//! producer, no hazard between the two regions, no recorded cross wait), whether the reader
//! ran before the poison or after it is a matter of timing, in the capture and again in the
//! replay: an unchanged program can fail in one and succeed in the other.
//!
//! Such a divergence is *timing-dependent* when, on the captured or the replayed side, the
//! submission's failed region uses a buffer that another submission's failure poisoned
//! before that region failed (the trace's `Poison` records name the poisoning submission
//! and region, format 1.3), and that submission is not ordered before it. It is reported
//! apart, with the reason, and is not a regression. A poison failure that the program's
//! order makes certain (the reader depends on the failure) stays a regression when it
//! diverges. Ordering through a chain of hazards is seen only where the capture recorded
//! the cross waits of the chain.

use crate::plan::{RuntimePlan, SubmissionPlan};
use hrx_capture::schema::{self as s, BufferId, SubmissionIndex};
use std::collections::{HashSet, VecDeque};

/// A buffer poisoned by a failure, as a `Poison` record names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoisonEvent {
    pub buffer: BufferId,
    pub submission: SubmissionIndex,
    pub region: u32,
    /// Host time on the clock of the side (capture or replay) that recorded it.
    pub time_ns: u64,
}

impl PoisonEvent {
    /// The event of a `Poison` record; `None` for a format 1.2 record (no cause fields).
    pub fn of(p: &s::Poison) -> Option<PoisonEvent> {
        Some(PoisonEvent {
            buffer: p.buffer,
            submission: p.submission?,
            region: p.region?.0,
            time_ns: p.time_ns,
        })
    }
}

/// A failure of one side: its region and when it was recorded (that side's clock).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    pub region: u32,
    pub time_ns: u64,
}

/// Why `submission`'s failure on one side depends on when a concurrent failure happened:
/// its failed region uses a buffer poisoned earlier on that side by a submission that is
/// not ordered before it. `None` when the failure is not such a poison failure.
pub(crate) fn poisoned_by_concurrent_failure(
    rp: &RuntimePlan<'_>,
    submission: &SubmissionPlan<'_>,
    failure: Failure,
    poisons: &[PoisonEvent],
) -> Option<String> {
    let uses = &rp.graphs[submission.graph]
        .regions
        .get(failure.region as usize)?
        .uses;
    let poison = poisons.iter().find(|p| {
        p.submission != submission.index
            && p.time_ns <= failure.time_ns
            && uses.iter().any(|u| u.buffer == p.buffer)
    })?;
    if ordered_before(rp, poison, submission) {
        return None;
    }
    Some(format!(
        "region {} uses buffer {}, poisoned by submission {} region {}, which is not ordered \
         before it (no producer, hazard or cross wait): whether it ran before the poison \
         depends on timing",
        failure.region, poison.buffer, poison.submission, poison.region
    ))
}

/// Why a refusal of `submission` on one side (a submit that found a buffer it uses
/// poisoned) depends on when a concurrent failure happened: an earlier-submitted failure
/// that is not ordered before it poisoned a buffer its graph uses. `None` otherwise.
pub(crate) fn refused_for_concurrent_poison(
    rp: &RuntimePlan<'_>,
    submission: &SubmissionPlan<'_>,
    poisons: &[PoisonEvent],
) -> Option<String> {
    let regions = &rp.graphs[submission.graph].regions;
    let poison = poisons.iter().find(|p| {
        p.submission < submission.index
            && regions
                .iter()
                .any(|r| r.uses.iter().any(|u| u.buffer == p.buffer))
            && !ordered_before(rp, p, submission)
    })?;
    Some(format!(
        "submit found buffer {} poisoned by submission {} region {}, which is not ordered \
         before it (no producer, hazard or cross wait): whether it failed first depends on \
         timing",
        poison.buffer, poison.submission, poison.region
    ))
}

/// Whether the failure of `poison`'s region is ordered before `reader`: an explicit
/// producer or a recorded cross wait leads from the reader to it (transitively), or a
/// region of the reader conflicts with the failed region (overlapping bytes, one writes),
/// which the runtime orders in submission order.
fn ordered_before(rp: &RuntimePlan<'_>, poison: &PoisonEvent, reader: &SubmissionPlan<'_>) -> bool {
    let Some(&failed) = rp.submission_index.get(&poison.submission) else {
        return false;
    };
    let failed = &rp.submissions[failed];
    if failed.index >= reader.index {
        return false;
    }
    if let Some(region) = rp.graphs[failed.graph].regions.get(poison.region as usize) {
        let conflicts = rp.graphs[reader.graph].regions.iter().any(|r| {
            r.uses.iter().any(|a| {
                region.uses.iter().any(|b| {
                    a.buffer == b.buffer
                        && a.start < b.end
                        && b.start < a.end
                        && (writes(a.access) || writes(b.access))
                })
            })
        });
        if conflicts {
            return true;
        }
    }
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([reader.index]);
    while let Some(index) = queue.pop_front() {
        let producers = rp
            .submission_index
            .get(&index)
            .map(|&p| rp.submissions[p].producers.as_slice())
            .unwrap_or_default();
        let waits = rp.cross_waits.get(&index).map_or(&[][..], Vec::as_slice);
        for &earlier in producers.iter().chain(waits) {
            if earlier == failed.index {
                return true;
            }
            if earlier > failed.index && seen.insert(earlier) {
                queue.push_back(earlier);
            }
        }
    }
    false
}

fn writes(access: s::Access) -> bool {
    access != s::Access::Read
}
