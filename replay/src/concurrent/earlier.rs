//! What the classification of one chunk of a streamed replay (module `stream`) needs of the
//! chunks before it.
//!
//! A whole replay classifies every divergence against every failure of the trace. A
//! streamed one compares a chunk at a time, and the rules of module `concurrent` read
//! failures of earlier chunks: a poison or a device loss that came before (and whether it
//! is ordered before the submission), a quarantine by a submission whose failure was
//! timing-dependent, a producer whose failure was. Seen from its own chunk only, a failure
//! caught by an earlier chunk's loss read as a regression (the loss-race trace in chunks of
//! one: three regressions where the whole replay has three timing-dependent rows).
//!
//! So each chunk's comparison hands on, per runtime ([`Earlier`]):
//!
//! - per side (the capture, each repeat of the replay): its poisons, its device losses and
//!   the submissions that quarantined their graph, with the graph ([`SideEarlier`]);
//! - per repeat: the submissions whose divergence was timing-dependent;
//! - the prepared graph of each submission that poisoned a buffer or lost the device (a
//!   later chunk's plan holds every graph, so the failed region's uses are found there);
//! - for each submission that a later chunk names (as explicit producer or in a cross
//!   wait: the first pass over the file notes which, module `chunk`) and that an explicit
//!   producer or cross wait orders after one of those failures, directly or through a chain:
//!   the failures it is ordered after, until the last chunk naming it. A chain from a later
//!   chunk back to a failure enters the earlier chunks through such a submission, so nothing
//!   else of the earlier chunks' order is needed.
//!
//! ```text
//! chunk 1: F loses the device ──> M waits on F (a cross wait)
//! chunk 2: R waits on M ──> R is ordered after F: M is named by chunk 2, carried as "after F"
//! ```
//!
//! Memory: proportional to the failures, not to the submissions: the poisons, losses,
//! quarantines and timing-dependent submissions of each side (the replay's once per
//! repeat), one graph per failed submission named, and one entry per submission that a
//! later chunk names *and* that is ordered after such a failure, listing those failures
//! (dropped after the last chunk naming it).
//!
//! What a streamed replay still does not see: the rules also read failures of *later*
//! submissions (a later submission's poison or device loss recorded first, a loss recorded
//! after the failure it caused), and a chunk is compared before the chunks after it, so
//! those are found in the chunk's own submissions only. A divergence told timing-dependent
//! by a later chunk's failure alone stays a regression when streamed: it takes two
//! concurrent failures on either side of a chunk boundary.

use super::{Loss, PoisonEvent};
use crate::plan::RuntimePlan;
use hrx_capture::schema::{PreparedId, RuntimeId, SubmissionIndex};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What one side (the capture, or one repeat of the replay) recorded of earlier chunks'
/// failures.
#[derive(Debug, Default)]
pub(crate) struct SideEarlier {
    /// Its poison events, chunk after chunk.
    pub poisons: Vec<PoisonEvent>,
    /// Its device losses, chunk after chunk.
    pub losses: Vec<Loss>,
    /// The submissions that quarantined their graph, with the graph, in submission order.
    pub quarantines: Vec<(SubmissionIndex, PreparedId)>,
}

/// One repeat's side and its timing-dependent divergences.
#[derive(Debug, Default)]
struct RepeatEarlier {
    replayed: SideEarlier,
    /// The submissions whose divergence was timing-dependent.
    timing: HashSet<SubmissionIndex>,
}

/// What a chunk's comparison hands on to later chunks, per runtime (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    captured: SideEarlier,
    repeats: Vec<RepeatEarlier>,
    /// The prepared graph of each submission that poisoned a buffer or lost the device.
    graphs: HashMap<SubmissionIndex, PreparedId>,
    /// Per submission that a later chunk names and that is ordered after one of `graphs`'
    /// submissions: those submissions, and the last chunk naming it.
    after: HashMap<SubmissionIndex, (Vec<SubmissionIndex>, u64)>,
}

/// Where a chunk lies among a streamed replay's chunks: its number, and for a submission of
/// a runtime the last later chunk naming it (explicit producer or cross wait; module
/// `chunk`).
pub(crate) struct Later<'a> {
    pub chunk: u64,
    pub named_until: &'a dyn Fn(RuntimeId, SubmissionIndex) -> Option<u64>,
}

/// What one side of a chunk's comparison found: its poisons, losses and quarantines.
pub(crate) struct ChunkSide<'a> {
    pub poisons: &'a [PoisonEvent],
    pub losses: &'a [Loss],
    /// The submissions that quarantined their graph, in any order.
    pub quarantined: Vec<SubmissionIndex>,
}

impl Earlier {
    /// The capture's failures of earlier chunks.
    pub fn captured(&self) -> &SideEarlier {
        &self.captured
    }

    /// Repeat `repeat`'s failures of earlier chunks (none before its first chunk).
    pub fn replayed(&self, repeat: usize) -> &SideEarlier {
        static NONE: SideEarlier = SideEarlier {
            poisons: Vec::new(),
            losses: Vec::new(),
            quarantines: Vec::new(),
        };
        self.repeats.get(repeat).map_or(&NONE, |r| &r.replayed)
    }

    /// Whether submission `submission` of an earlier chunk diverged in a timing-dependent
    /// way in repeat `repeat`.
    pub fn timing(&self, repeat: usize, submission: SubmissionIndex) -> bool {
        self.repeats
            .get(repeat)
            .is_some_and(|r| r.timing.contains(&submission))
    }

    /// The prepared graph of `submission`, of an earlier chunk, that poisoned a buffer or
    /// lost the device.
    pub fn graph_of(&self, submission: SubmissionIndex) -> Option<PreparedId> {
        self.graphs.get(&submission).copied()
    }

    /// Whether `submission`, of an earlier chunk, is ordered after `failed` through its
    /// explicit producers and cross waits (known for a submission a later chunk names).
    pub fn after(&self, submission: SubmissionIndex, failed: SubmissionIndex) -> bool {
        self.after
            .get(&submission)
            .is_some_and(|(failures, _)| failures.contains(&failed))
    }

    /// Takes what a chunk's comparison found: the capture's side, each repeat's side with
    /// its timing-dependent submissions, and, where later chunks follow (`later`), what
    /// orders the chunk's submissions that they name after a failure.
    pub fn take_chunk<'s>(
        &mut self,
        rp: &RuntimePlan<'_>,
        captured: ChunkSide<'_>,
        repeats: impl Iterator<Item = (ChunkSide<'s>, Vec<SubmissionIndex>)>,
        later: Option<&Later<'_>>,
    ) {
        let graph_of = |s: SubmissionIndex| {
            rp.submission_index
                .get(&s)
                .map(|&p| rp.graphs[rp.submissions[p].graph].prepared)
        };
        let mut take_side = |earlier: &mut SideEarlier, side: ChunkSide<'_>| {
            for p in side.poisons {
                if let Some(g) = graph_of(p.submission) {
                    self.graphs.insert(p.submission, g);
                }
            }
            for l in side.losses {
                if let Some(g) = graph_of(l.submission) {
                    self.graphs.insert(l.submission, g);
                }
            }
            earlier.poisons.extend_from_slice(side.poisons);
            earlier.losses.extend_from_slice(side.losses);
            let mut quarantined: Vec<(SubmissionIndex, PreparedId)> = (side.quarantined)
                .into_iter()
                .filter_map(|s| Some((s, graph_of(s)?)))
                .collect();
            quarantined.sort_unstable_by_key(|q| q.0);
            earlier.quarantines.extend(quarantined);
        };
        take_side(&mut self.captured, captured);
        for (repeat, (side, timing)) in repeats.enumerate() {
            if self.repeats.len() <= repeat {
                self.repeats.push(RepeatEarlier::default());
            }
            let r = &mut self.repeats[repeat];
            take_side(&mut r.replayed, side);
            r.timing.extend(timing);
        }
        let Some(later) = later else {
            return;
        };
        // Those no later chunk names any more are done.
        self.after.retain(|_, (_, until)| *until > later.chunk);
        if self.graphs.is_empty() {
            return; // no failure yet: nothing is ordered after one
        }
        // What each submission of the chunk is ordered after, in submission order (a
        // producer or wait is an earlier submission): only those with a failure kept.
        let mut after: HashMap<SubmissionIndex, BTreeSet<SubmissionIndex>> = HashMap::new();
        for submission in &rp.submissions {
            let index = submission.index;
            let waits = rp.cross_waits.get(&index).map_or(&[][..], Vec::as_slice);
            let mut failures = BTreeSet::new();
            for &earlier in submission.producers.iter().chain(waits) {
                if earlier >= index {
                    continue;
                }
                if self.graphs.contains_key(&earlier) {
                    failures.insert(earlier);
                }
                if let Some(theirs) = after.get(&earlier) {
                    failures.extend(theirs.iter().copied());
                } else if let Some((theirs, _)) = self.after.get(&earlier) {
                    failures.extend(theirs.iter().copied());
                }
            }
            if !failures.is_empty() {
                after.insert(index, failures);
            }
        }
        // Those a later chunk names are handed on.
        for (index, failures) in after {
            if let Some(until) = (later.named_until)(rp.id, index)
                && until > later.chunk
            {
                self.after
                    .insert(index, (failures.into_iter().collect(), until));
            }
        }
    }
}
