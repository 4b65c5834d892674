//! The keys of one kind waiting for the other side's ([`Window`], at most
//! [`MATCH_WINDOW`](super::MATCH_WINDOW) per side), and the merge of both sides' events
//! through the one comparison rule of `diff` and `replay`.

use super::side::Event;
use super::{
    ChangedOutcome, DifferingOutput, Matched, OutputKey, OutputValue, SubmissionKey, UNKNOWN_GRAPH,
};
use crate::compare::{Digest, DigestMatch, OutcomeMatch, digests, outcomes};
use crate::scan::Outcome;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Keys of one kind waiting for the other side, oldest first (see the module docs).
///
/// A key may wait with several values (a submission writing one range twice, an upload then
/// a kernel filling it, digests both): the n-th value of a key on one side meets the n-th
/// on the other, as `replay` pairs them, so none is overwritten and lost.
pub(super) struct Window<K, V> {
    /// Per key, its waiting values with their arrival numbers, oldest first.
    map: HashMap<K, VecDeque<(u64, V)>>,
    /// Arrival order: (key, arrival number); entries of values already taken stay until
    /// dropped (their number is below their key's oldest waiting one).
    order: VecDeque<(K, u64)>,
    /// Values waiting.
    pub(super) len: usize,
    arrivals: u64,
    pub(super) evicted: u64,
    /// Of `evicted`, those whose key lies past the other trace's end ([`End::past`]).
    evicted_past: u64,
    /// Values kept at most ([`MATCH_WINDOW`]).
    limit: usize,
}

impl<K: Hash + Eq + Copy, V> Window<K, V> {
    pub(super) fn new(limit: usize) -> Self {
        Window {
            map: HashMap::new(),
            order: VecDeque::new(),
            len: 0,
            arrivals: 0,
            evicted: 0,
            evicted_past: 0,
            limit,
        }
    }

    /// Whether the value of `key` that arrived `n`-th still waits: values of a key are
    /// taken oldest first.
    fn waits(map: &HashMap<K, VecDeque<(u64, V)>>, key: &K, n: u64) -> bool {
        map.get(key)
            .and_then(VecDeque::front)
            .is_some_and(|&(oldest, _)| oldest <= n)
    }

    /// Adds a value of `key`; `past` says whether an evicted key lies past the other
    /// trace's end.
    pub(super) fn insert(&mut self, key: K, value: V, past: impl Fn(&K) -> bool) {
        let n = self.arrivals;
        self.arrivals += 1;
        self.map.entry(key).or_default().push_back((n, value));
        self.order.push_back((key, n));
        self.len += 1;
        while self.len > self.limit {
            let Some((oldest, n)) = self.order.pop_front() else {
                break;
            };
            if Self::waits(&self.map, &oldest, n) {
                self.take(&oldest);
                self.evicted += 1;
                self.evicted_past += u64::from(past(&oldest));
            }
        }
        // Values taken by the other side stay in the order list; drop them now and then.
        if self.order.len() > 2 * self.len + 1024 {
            let map = &self.map;
            self.order.retain(|(k, n)| Self::waits(map, k, *n));
        }
    }

    /// The oldest value waiting under `key`.
    pub(super) fn take(&mut self, key: &K) -> Option<V> {
        let values = self.map.get_mut(key)?;
        let (_, value) = values.pop_front()?;
        if values.is_empty() {
            self.map.remove(key);
        }
        self.len -= 1;
        Some(value)
    }

    /// Values that never met the other side's: still waiting, or evicted.
    pub(super) fn one_sided(&self) -> u64 {
        self.len as u64 + self.evicted
    }

    /// Of [`Window::one_sided`], those whose key `past` says lies past the other trace's end.
    fn one_sided_past(&self, past: impl Fn(&K) -> bool) -> u64 {
        let waiting: usize = (self.map.iter())
            .filter(|(key, _)| past(key))
            .map(|(_, values)| values.len())
            .sum();
        waiting as u64 + self.evicted_past
    }
}

/// How far a trace goes, for its one-sided keys' other side: a key only one trace holds
/// lies past the other's end when that one is incomplete (cut short, damaged, lossy) and
/// the key's submission is not among those the cut one holds whole. Only those are "past
/// an end"; a key within what both hold whole is a difference (a trace recording every
/// digest against one recording outputs only read "same as far as both go" against a cut
/// copy: a break-it pass).
///
/// Held whole: a graph's submissions with a recorded outcome, but the last of them (its
/// output digests may be written after its outcome, past the cut); by submission number,
/// as many as have an outcome, but one per graph.
#[derive(Debug, Default, Clone)]
pub(super) struct End {
    /// The trace is incomplete.
    pub(super) incomplete: bool,
    /// Its submissions held whole per (runtime rank, graph rank).
    pub(super) whole: std::collections::BTreeMap<(u32, u64), u64>,
    /// Its submission numbers held whole (from 1).
    pub(super) whole_numbers: u64,
}

impl End {
    /// How far `profile`'s trace goes.
    pub(super) fn of(profile: &super::Profile) -> End {
        let done = profile.places.done();
        let graphs = done.len() as u64;
        // A trace never closed before a submitting thread's last records were written ends
        // before the first submission it lacks ([`WarningKind::SubmissionsUnwritten`]), though
        // it holds other threads' later ones: by number (such a trace pairs by number),
        // nothing from there on is held whole (the others' outcomes counted above would put
        // the lacking ones' numbers among those held), and before it, as above, as many as
        // have an outcome, but one per graph.
        //
        // [`WarningKind::SubmissionsUnwritten`]: hrx_capture::reader::WarningKind::SubmissionsUnwritten
        let ends = (profile.warnings.iter())
            .filter_map(|w| w.kind.ends_before())
            .map(|(runtime, first)| {
                let without_outcome = (profile.places.in_flight.keys())
                    .filter(|&&(r, submission)| r.0 == runtime && submission < first)
                    .count() as u64;
                (first.saturating_sub(1))
                    .saturating_sub(without_outcome)
                    .saturating_sub(graphs)
            })
            .min()
            .unwrap_or(u64::MAX);
        End {
            incomplete: !super::verdict::complete(profile),
            whole: (done.iter())
                .map(|(key, &count)| (*key, count.saturating_sub(1)))
                .collect(),
            whole_numbers: (done.values().sum::<u64>())
                .saturating_sub(graphs)
                .min(ends),
        }
    }

    /// Whether the submission keyed (runtime rank, graph rank or
    /// [`super::UNKNOWN_GRAPH`], index among the graph's submissions from 0 or submission
    /// number from 1) lies past what this trace holds whole.
    pub(super) fn past(&self, (runtime, graph, nth): (u32, u64, u64)) -> bool {
        self.incomplete
            && if graph == super::UNKNOWN_GRAPH {
                nth > self.whole_numbers
            } else {
                nth >= self.whole.get(&(runtime, graph)).copied().unwrap_or(0)
            }
    }
}

/// The merge of the two sides' events.
pub(super) struct Merge {
    /// Outputs waiting, each with its graph's rank where checked ([`Event::Output`]).
    pub(super) outputs: [Window<OutputKey, (OutputValue, u64)>; 2],
    pub(super) outcomes: [Window<SubmissionKey, (Option<Outcome>, u64)>; 2],
    pub(super) matched: Matched,
    /// How far base and new go.
    pub(super) ends: [End; 2],
}

impl Merge {
    pub(super) fn take(&mut self, side: usize, event: Event) {
        let other = 1 - side;
        match event {
            Event::Output(key, value, graph) => match self.outputs[other].take(&key) {
                None => {
                    let end = &self.ends[other];
                    (self.outputs[side]).insert(key, (value, graph), |k| end.past((k.0, k.1, k.2)));
                }
                // Two graphs' outputs at one submission number: not comparable.
                Some((_, theirs))
                    if graph != UNKNOWN_GRAPH && theirs != UNKNOWN_GRAPH && theirs != graph =>
                {
                    self.matched.outputs_of_other_graphs += 1;
                }
                Some((theirs, _)) => {
                    let (base, new) = if side == 0 {
                        (value, theirs)
                    } else {
                        (theirs, value)
                    };
                    let one = |xxh3| {
                        [Digest {
                            xxh3,
                            contents: None,
                        }]
                    };
                    // The one rule of `diff` and `replay` for the digests of one key.
                    match digests(&one(base.0), &one(new.0), None, false) {
                        DigestMatch::Match => self.matched.identical += 1,
                        _ => self
                            .matched
                            .differing
                            .push(DifferingOutput { key, base, new }),
                    }
                }
            },
            Event::Outcome(key, value) => match self.outcomes[other].take(&key) {
                None => {
                    let end = &self.ends[other];
                    self.outcomes[side].insert(key, value, |k| end.past(*k));
                }
                Some(theirs) => {
                    let (base, new) = if side == 0 {
                        (value, theirs)
                    } else {
                        (theirs, value)
                    };
                    let submission = [base.1, new.1];
                    let (base, new) = (base.0, new.0);
                    match outcomes(base, new) {
                        OutcomeMatch::Unknown => self.matched.outcomes_unknown += 1,
                        OutcomeMatch::Same => self.matched.outcomes_compared += 1,
                        OutcomeMatch::Changed => {
                            self.matched.outcomes_compared += 1;
                            if let (Some(base), Some(new)) = (base, new) {
                                self.matched.changed.push(ChangedOutcome {
                                    key,
                                    submission,
                                    base,
                                    new,
                                });
                            }
                        }
                    }
                }
            },
        }
        let pending: usize = (0..2)
            .map(|s| self.outputs[s].len + self.outcomes[s].len)
            .sum();
        self.matched.peak_pending = self.matched.peak_pending.max(pending);
    }

    pub(super) fn finish(mut self, late: [u64; 2]) -> Matched {
        let m = &mut self.matched;
        for s in 0..2 {
            m.outputs_one_sided[s] = self.outputs[s].one_sided();
            m.submissions_one_sided[s] = self.outcomes[s].one_sided();
            let end = &self.ends[1 - s];
            m.outputs_past_end[s] = self.outputs[s].one_sided_past(|k| end.past((k.0, k.1, k.2)));
            m.submissions_past_end[s] = self.outcomes[s].one_sided_past(|k| end.past(*k));
            // Past the other trace's end is no sequence difference: left out (a cut copy of
            // a large trace read as "the submission sequences differ": a break-it pass).
            m.unmatched_past_window[s] = (self.outputs[s].evicted - self.outputs[s].evicted_past)
                + (self.outcomes[s].evicted - self.outcomes[s].evicted_past);
        }
        m.late_records = late;
        m.differing.sort_by_key(|d| d.key);
        m.changed.sort_by_key(|c| c.key);
        self.matched
    }
}
