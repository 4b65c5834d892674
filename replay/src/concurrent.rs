//! Divergences that depend on when a concurrent failure happened, told from regressions.
//!
//! Three rules, each read on the side (capture or replay) where the submission failed or
//! was refused, with that side's clock:
//!
//! - **Poison races.** Poison is per buffer (the seed's rule, see `hrx`'s scheduler docs): a
//!   region that uses any byte of a buffer poisoned by a failure fails, even when the
//!   failed region wrote other bytes. When nothing orders the poisoning submission before
//!   the reader (no explicit producer, no hazard between the two regions, no recorded cross
//!   wait), whether the reader ran before the poison or after it is a matter of timing, in
//!   the capture and again in the replay: an unchanged program can fail in one and succeed
//!   in the other. The failure must be the poison's: its error names a poisoned buffer
//!   (`buffer N is poisoned by submission S region R`), so a region that failed on its own
//!   beside a concurrent poison stays a regression.
//! - **Device-loss races.** A device loss is not confined to the failed region's buffers:
//!   CUDA and HIP make a kernel fault sticky for the whole context (every operation in
//!   flight then fails with the same error), and a failed copy batch leaves its lane's copy
//!   stream unhealthy (later copies on the lane answer `DeviceLost`, the seed's rule). A
//!   submission that fails with a device loss of its own (its error reads `device lost:
//!   ...`, `hrx`'s display of every failure of uncertain extent) at or after another
//!   submission's device loss, while nothing orders that submission before it, fails or
//!   succeeds depending on whether its work finished before the loss; so does one beside a
//!   later submission it does not wait for, whose loss both sides reproduce, whichever was
//!   recorded first (a sticky error surfaces at the first synchronization, on any stream). Found on the H200:
//!   frame 2's sticky `CUDA_ERROR_ILLEGAL_ADDRESS` caught frame 1's Download still running
//!   in a replay, where the capture had seen it finish.
//! - **Consequences.** A divergence that follows from a timing-dependent failure of the
//!   same repeat is timing-dependent too: a submit refused because that failure
//!   quarantined its graph or poisoned a buffer it uses, a failure on that poison, a
//!   cancellation because that submission was its producer (frame 4 of the H200 replay,
//!   refused because frame 1's graph was quarantined).
//!
//! A divergence is timing-dependent when the rule holds on the side where the submission
//! failed; it is reported apart, with the reason, and is not a regression. The poisoning
//! events are the trace's `Poison` records (format 1.3: they name the poisoning submission
//! and region). A failure that the program's order makes certain (the reader depends on the
//! failure) stays a regression when it diverges. Ordering through a chain of hazards is
//! seen only where the capture recorded the cross waits of the chain.
//!
//! A streamed replay classifies one chunk at a time; what the rules read of earlier chunks
//! (their poisons, losses, quarantines, timing-dependent divergences, and what orders their
//! failures before later submissions) is carried from chunk to chunk (module `earlier`,
//! which states the memory it takes), so a chunk's divergence is told as in a whole replay.

use crate::plan::{RuntimePlan, SubmissionPlan};
use crate::report::Outcome;
use hrx_capture::schema::{self as s, BufferId, PreparedId, SubmissionIndex};
use std::collections::{HashSet, VecDeque};

mod earlier;

pub(crate) use earlier::{ChunkSide, Earlier, Later};

/// What orders a chunk's submissions: its plan, and what earlier chunks of a streamed
/// replay left (nothing for a whole replay).
pub(crate) struct Order<'a, 't> {
    pub rp: &'a RuntimePlan<'t>,
    pub earlier: &'a Earlier,
}

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
    order: &Order<'_, '_>,
    submission: &SubmissionPlan<'_>,
    failure: Failure,
    error: &str,
    poisons: &[PoisonEvent],
) -> Option<String> {
    if !is_poison_failure(error) {
        return None;
    }
    let uses = &order.rp.graphs[submission.graph]
        .regions
        .get(failure.region as usize)?
        .uses;
    let poison = poisons.iter().find(|p| {
        p.submission != submission.index
            && p.time_ns <= failure.time_ns
            && uses.iter().any(|u| u.buffer == p.buffer)
    })?;
    if ordered_before(order, poison.submission, poison.region, submission) {
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
    order: &Order<'_, '_>,
    submission: &SubmissionPlan<'_>,
    error: &str,
    poisons: &[PoisonEvent],
) -> Option<String> {
    if !is_poison_failure(error) {
        return None;
    }
    let regions = &order.rp.graphs[submission.graph].regions;
    let poison = poisons.iter().find(|p| {
        p.submission < submission.index
            && regions
                .iter()
                .any(|r| r.uses.iter().any(|u| u.buffer == p.buffer))
            && !ordered_before(order, p.submission, p.region, submission)
    })?;
    Some(format!(
        "submit found buffer {} poisoned by submission {} region {}, which is not ordered \
         before it (no producer, hazard or cross wait): whether it failed first depends on \
         timing",
        poison.buffer, poison.submission, poison.region
    ))
}

/// Whether the failure of `region` of submission `failed` is ordered before `reader`: an
/// explicit producer or a recorded cross wait leads from the reader to it (transitively,
/// through earlier chunks too: [`Earlier::after`]), or a region of the reader conflicts
/// with the failed region (overlapping bytes, one writes), which the runtime orders in
/// submission order.
fn ordered_before(
    order: &Order<'_, '_>,
    failed: SubmissionIndex,
    region: u32,
    reader: &SubmissionPlan<'_>,
) -> bool {
    let rp = order.rp;
    if failed >= reader.index {
        return false;
    }
    // The failed submission's graph: the chunk's, or an earlier chunk's (the plan holds
    // every graph prepared so far).
    let graph = match rp.submission_index.get(&failed) {
        Some(&position) => Some(rp.submissions[position].graph),
        None => order
            .earlier
            .graph_of(failed)
            .and_then(|prepared| rp.graph_index.get(&prepared).copied()),
    };
    if let Some(region) = graph.and_then(|g| rp.graphs[g].regions.get(region as usize)) {
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
        let Some(&position) = rp.submission_index.get(&index) else {
            // A submission of an earlier chunk: what its chain reaches was carried.
            if order.earlier.after(index, failed) {
                return true;
            }
            continue;
        };
        let producers = rp.submissions[position].producers.as_slice();
        let waits = rp.cross_waits.get(&index).map_or(&[][..], Vec::as_slice);
        for &earlier in producers.iter().chain(waits) {
            if earlier == failed {
                return true;
            }
            if earlier > failed && seen.insert(earlier) {
                queue.push_back(earlier);
            }
        }
    }
    false
}

fn writes(access: s::Access) -> bool {
    access != s::Access::Read
}

/// Whether a failure's error text is a device loss: `hrx` displays every failure of
/// uncertain extent (`Error::DeviceLost`, `DeviceError::Lost`, `DeviceError::KernelFault`)
/// as `device lost: ...`.
fn is_device_loss(error: &str) -> bool {
    error.starts_with("device lost:")
}

/// Whether an error is a region's (or a submit's) meeting with a poisoned buffer
/// (`buffer N is poisoned by submission S region R`, `hrx`'s buffer storage).
fn is_poison_failure(error: &str) -> bool {
    error.contains(" is poisoned by submission ")
}

/// Whether a submit was refused because its graph is quarantined: `hrx` says so in the
/// seed's words (`graph quarantined after native failure (graph N)`); traces recorded before
/// it did read `graph N is quarantined after a native failure`.
fn is_quarantine_refusal(error: &str) -> bool {
    error.contains("graph quarantined after native failure")
        || error.contains(" is quarantined after a native failure")
}

/// A device loss of one side that did not come from a poisoned input: its submission,
/// failed region and when (that side's clock).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loss {
    pub submission: SubmissionIndex,
    pub region: u32,
    pub time_ns: u64,
}

impl Loss {
    /// The loss of a failed submission, if its error is a device loss of its own (a poison
    /// failure is told by the poison rule).
    pub fn of(submission: SubmissionIndex, error: &str, failure: Option<Failure>) -> Option<Loss> {
        let failure = failure?;
        (is_device_loss(error) && !is_poison_failure(error)).then_some(Loss {
            submission,
            region: failure.region,
            time_ns: failure.time_ns,
        })
    }
}

/// Why `submission`'s device-loss failure on one side depends on when a concurrent device
/// loss happened: another submission, not ordered before it, lost the device on that side
/// at or before its failure; or a later submission that it is not ordered before (the two
/// ran side by side) lost the device on both sides (`other_losses`: the other side's), so
/// that loss is the program's own, whichever failure was recorded first: a sticky CUDA
/// error surfaces at whichever synchronization comes first (found on the H200: frame 1's
/// Download recorded the loss before frame 2, whose kernel caused it). `None` when the
/// failure is no device loss, is a poison failure, or no such loss is found.
pub(crate) fn lost_beside_concurrent_loss(
    order: &Order<'_, '_>,
    submission: &SubmissionPlan<'_>,
    failure: Failure,
    error: &str,
    losses: &[Loss],
    other_losses: &[Loss],
) -> Option<String> {
    if !is_device_loss(error) || is_poison_failure(error) {
        return None;
    }
    if let Some(loss) = losses.iter().find(|l| {
        l.submission != submission.index
            && l.time_ns <= failure.time_ns
            && !ordered_before(order, l.submission, l.region, submission)
    }) {
        return Some(format!(
            "region {} failed with a device loss after submission {} region {} lost the \
             device, which is not ordered before it (no producer, hazard or cross wait): \
             whether its work finished before the loss depends on timing",
            failure.region, loss.submission, loss.region
        ));
    }
    let rp = order.rp;
    let loss = losses.iter().find(|l| {
        l.submission > submission.index
            && other_losses.iter().any(|o| o.submission == l.submission)
            && rp.submission_index.get(&l.submission).is_some_and(|&i| {
                !ordered_before(order, submission.index, failure.region, &rp.submissions[i])
            })
    })?;
    Some(format!(
        "region {} failed with a device loss beside submission {} region {}, which lost the \
         device on both sides and does not wait for it (no producer, hazard or cross wait): \
         a device loss reaches whatever runs beside it, whichever failure is recorded first",
        failure.region, loss.submission, loss.region
    ))
}

/// The kind of failure a timing-dependent divergence's reason (one of this module's) names:
/// `device-loss` or `poison`; `None` for a consequence of another timing-dependent failure
/// (a quarantine refusal, a cancellation, a met poison), which names that failure instead.
pub(crate) fn timing_dependent_kind(why: &str) -> Option<&'static str> {
    if why.contains("timing-dependent") {
        None
    } else if why.contains("failed with a device loss") {
        Some("device-loss")
    } else if why.contains("poisoned by submission") {
        Some("poison")
    } else {
        None
    }
}

/// What one side knows of a submission that failed, was cancelled or was refused there.
pub(crate) struct SideFailure<'a> {
    /// The error of the failure or refusal, or the cancellation's reason.
    pub error: &'a str,
    /// Whether the submission was cancelled (a producer failed).
    pub cancelled: bool,
    /// The failed region and when, for a failure.
    pub failure: Option<Failure>,
    /// The side's poison events (earlier chunks' too).
    pub poisons: &'a [PoisonEvent],
    /// The submissions of earlier chunks that quarantined their graph on this side, with the
    /// graph, in submission order.
    pub quarantines_before: &'a [(SubmissionIndex, PreparedId)],
}

/// Why a divergence of `submission` on one side follows from a timing-dependent failure of
/// the same repeat (`timing(s)`: submission `s`'s status diverged and was told
/// timing-dependent): a refusal because that failure quarantined its graph
/// (`quarantined_by(s)`: `s` quarantined its graph on this side) or poisoned a buffer it
/// uses, a failure on that poison, or a cancellation because that submission was its
/// producer.
pub(crate) fn consequence_of_timing_dependent_failure(
    rp: &RuntimePlan<'_>,
    submission: &SubmissionPlan<'_>,
    side: &SideFailure<'_>,
    quarantined_by: impl Fn(SubmissionIndex) -> bool,
    timing: impl Fn(SubmissionIndex) -> bool,
) -> Option<String> {
    let prepared = rp.graphs[submission.graph].prepared;
    if is_quarantine_refusal(side.error)
        && let Some(q) = rp
            .submissions
            .iter()
            .rev()
            .find(|q| {
                q.index < submission.index
                    && q.graph == submission.graph
                    && quarantined_by(q.index)
                    && timing(q.index)
            })
            .map(|q| q.index)
            .or_else(|| {
                let before = side.quarantines_before.iter().rev();
                before
                    .filter(|(q, graph)| *graph == prepared && timing(*q))
                    .map(|(q, _)| *q)
                    .next()
            })
    {
        return Some(format!(
            "its graph was quarantined by submission {q}, whose failure is timing-dependent"
        ));
    }
    if is_poison_failure(side.error) {
        let regions = &rp.graphs[submission.graph].regions;
        let uses = |buffer: BufferId| match side.failure {
            Some(f) => regions
                .get(f.region as usize)
                .is_some_and(|r| r.uses.iter().any(|u| u.buffer == buffer)),
            None => regions
                .iter()
                .any(|r| r.uses.iter().any(|u| u.buffer == buffer)),
        };
        if let Some(p) = side.poisons.iter().find(|p| {
            p.submission != submission.index
                && side.failure.is_none_or(|f| p.time_ns <= f.time_ns)
                && timing(p.submission)
                && uses(p.buffer)
        }) {
            return Some(format!(
                "it met buffer {} poisoned by submission {} region {}, whose failure is \
                 timing-dependent",
                p.buffer, p.submission, p.region
            ));
        }
    }
    if side.cancelled
        && let Some(producer) = submission.producers.iter().find(|&&p| timing(p))
    {
        return Some(format!(
            "its producer, submission {producer}, failed in a timing-dependent way"
        ));
    }
    None
}

/// The side of a comparison a divergent submission is read on.
pub(crate) struct Side<'a> {
    /// `captured` or `replayed`, the reason's first word.
    pub name: &'static str,
    /// Its outcome there: `None` for a refused submit; the error (or reason, or refusal).
    pub outcome: Option<Outcome>,
    pub error: &'a str,
    pub failure: Option<Failure>,
    pub poisons: &'a [PoisonEvent],
    pub losses: &'a [Loss],
    /// Whether submission `s` quarantined its graph on this side.
    pub quarantined_by: &'a dyn Fn(SubmissionIndex) -> bool,
    /// Earlier chunks' submissions that quarantined their graph on this side, with it.
    pub quarantines_before: &'a [(SubmissionIndex, PreparedId)],
}

/// Why a status or refusal divergence of `submission` is timing-dependent, read on each
/// side in turn (`captured` first), the reason prefixed with the side's name; `timing(s)`:
/// submission `s`'s own divergence in the same repeat is timing-dependent. `None`: a
/// regression.
pub(crate) fn classify(
    order: &Order<'_, '_>,
    submission: &SubmissionPlan<'_>,
    sides: [&Side<'_>; 2],
    timing: &dyn Fn(SubmissionIndex) -> bool,
) -> Option<String> {
    let [a, b] = sides;
    [(a, b), (b, a)].into_iter().find_map(|(side, other)| {
        let reason = match (side.outcome, side.failure) {
            (Some(Outcome::Failed), Some(failure)) => {
                poisoned_by_concurrent_failure(order, submission, failure, side.error, side.poisons)
                    .or_else(|| {
                        // A loss race is one side failing where the other succeeded.
                        (other.outcome == Some(Outcome::Ok))
                            .then(|| {
                                lost_beside_concurrent_loss(
                                    order,
                                    submission,
                                    failure,
                                    side.error,
                                    side.losses,
                                    other.losses,
                                )
                            })
                            .flatten()
                    })
            }
            (None, _) => refused_for_concurrent_poison(order, submission, side.error, side.poisons),
            _ => None,
        };
        reason
            .or_else(|| {
                let failed = SideFailure {
                    error: side.error,
                    cancelled: side.outcome == Some(Outcome::Cancelled),
                    failure: side.failure,
                    poisons: side.poisons,
                    quarantines_before: side.quarantines_before,
                };
                consequence_of_timing_dependent_failure(
                    order.rp,
                    submission,
                    &failed,
                    side.quarantined_by,
                    timing,
                )
            })
            .map(|reason| format!("{} {reason}", side.name))
    })
}

#[cfg(test)]
mod tests {
    /// The refusal as `hrx` words it now and as older traces hold it; a poisoned buffer's
    /// refusal is not one.
    #[test]
    fn a_quarantine_refusal_is_told_in_the_seeds_words_and_the_older_ones() {
        assert!(super::is_quarantine_refusal(
            "device lost: graph quarantined after native failure (graph 3)"
        ));
        assert!(super::is_quarantine_refusal(
            "device lost: graph 3 is quarantined after a native failure"
        ));
        assert!(!super::is_quarantine_refusal(
            "device lost: buffer 2 is poisoned by submission 1 region 0 (graph 3): lost"
        ));
    }
}
