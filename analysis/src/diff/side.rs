//! One trace's second pass: keys output digests and submission outcomes as records arrive,
//! joining each to its submission within [`LIVE_WINDOW`] submits, parking digests and
//! completions that arrive before their `Submit` (at most [`PARK_LIMIT`]).

use super::profile::Places;
use super::range::{Held, holds};
use super::{LIVE_WINDOW, OutputKey, OutputValue, PARK_LIMIT, Place, SubmissionKey, UNKNOWN_GRAPH};
use crate::hash::IdMap;
use crate::scan::Outcome;
use hrx_capture::schema::{OutputDigest, PreparedId, Record, RuntimeId, SubmissionIndex};
use std::collections::VecDeque;

/// What the side threads hand over: keyed items and the `Submit` records read so far.
pub(super) enum Event {
    Output(OutputKey, OutputValue),
    /// The outcome, if recorded, and the submission number.
    Outcome(SubmissionKey, (Option<Outcome>, u64)),
}
#[derive(Clone, Copy)]
pub(super) struct Live {
    prepared: PreparedId,
    nth: u64,
    outcome: Option<Outcome>,
}

/// One trace's second pass: keys outputs and outcomes as records arrive.
pub(super) struct Side<'a> {
    places: &'a Places,
    by_graph: bool,
    pub(super) live: IdMap<(RuntimeId, SubmissionIndex), Live>,
    order: VecDeque<(RuntimeId, SubmissionIndex)>,
    /// The highest submission number retired from `live`, per runtime.
    retired: IdMap<RuntimeId, u64>,
    nth: IdMap<(RuntimeId, PreparedId), u64>,
    parked_outcomes: IdMap<(RuntimeId, SubmissionIndex), Outcome>,
    parked_digests: IdMap<(RuntimeId, SubmissionIndex), Vec<OutputDigest>>,
    parked_order: VecDeque<(RuntimeId, SubmissionIndex)>,
    parked_count: usize,
    pub(super) late: u64,
    pub(super) submits: u64,
    pub(super) events: Vec<Event>,
    /// The submissions compared, per runtime, when either side holds a range (see
    /// [`super::range`]): records of others are skipped. Runtimes not named are whole.
    compared: IdMap<RuntimeId, Held>,
}

impl<'a> Side<'a> {
    pub(super) fn new(
        places: &'a Places,
        by_graph: bool,
        compared: IdMap<RuntimeId, Held>,
    ) -> Side<'a> {
        Side {
            compared,
            places,
            by_graph,
            live: IdMap::default(),
            order: VecDeque::new(),
            retired: IdMap::default(),
            nth: IdMap::default(),
            parked_outcomes: IdMap::default(),
            parked_digests: IdMap::default(),
            parked_order: VecDeque::new(),
            parked_count: 0,
            late: 0,
            submits: 0,
            events: Vec::new(),
        }
    }

    /// Whether `key`'s submission was already retired: a record naming it now is late.
    fn is_retired(&self, key: (RuntimeId, SubmissionIndex)) -> bool {
        self.retired.get(&key.0).is_some_and(|&r| key.1.0 <= r)
    }

    /// Whether the submission is compared: outside the range both sides hold, it is not.
    fn compares(&self, runtime: RuntimeId, submission: SubmissionIndex) -> bool {
        self.compared
            .get(&runtime)
            .is_none_or(|held| holds(held, submission.0))
    }

    pub(super) fn push(&mut self, record: &Record) {
        let compared = match record {
            Record::Submit(s) => self.compares(s.runtime, s.submission),
            Record::SubmissionDone(d) => self.compares(d.runtime, d.submission),
            Record::OutputDigest(d) => self.compares(d.runtime, d.submission),
            _ => true,
        };
        if !compared {
            return;
        }
        match record {
            Record::Submit(s) => {
                self.submits += 1;
                let key = (s.runtime, s.submission);
                let nth = self.nth.entry((s.runtime, s.prepared)).or_default();
                let live = Live {
                    prepared: s.prepared,
                    nth: *nth,
                    outcome: self.parked_outcomes.remove(&key),
                };
                *nth += 1;
                self.live.insert(key, live);
                self.order.push_back(key);
                if let Some(parked) = self.parked_digests.remove(&key) {
                    self.parked_count -= parked.len();
                    for d in parked {
                        self.output(&d, Some(live));
                    }
                }
                while self.live.len() > LIVE_WINDOW {
                    self.retire_oldest();
                }
            }
            Record::SubmissionDone(d) => {
                let key = (d.runtime, d.submission);
                if let Some(live) = self.live.get_mut(&key) {
                    live.outcome = Some(Outcome::of(&d.status));
                } else if self.is_retired(key) || self.parked_outcomes.len() >= PARK_LIMIT {
                    self.late += 1;
                } else {
                    self.parked_outcomes.insert(key, Outcome::of(&d.status));
                }
            }
            Record::OutputDigest(d) => {
                let key = (d.runtime, d.submission);
                if let Some(&live) = self.live.get(&key) {
                    self.output(d, Some(live));
                } else if self.is_retired(key) {
                    self.late += 1;
                    self.output(d, None);
                } else {
                    self.park(d);
                }
            }
            _ => {}
        }
    }

    pub(super) fn retire_oldest(&mut self) {
        while let Some(key) = self.order.pop_front() {
            if let Some(live) = self.live.remove(&key) {
                let retired = self.retired.entry(key.0).or_default();
                *retired = (*retired).max(key.1.0);
                self.outcome(key, live);
                return;
            }
        }
    }

    fn park(&mut self, d: &OutputDigest) {
        while self.parked_count >= PARK_LIMIT {
            let Some(oldest) = self.parked_order.pop_front() else {
                break;
            };
            for d in self.parked_digests.remove(&oldest).into_iter().flatten() {
                self.parked_count -= 1;
                self.late += 1;
                self.output(&d, None);
            }
        }
        let key = (d.runtime, d.submission);
        let waiting = self.parked_digests.entry(key).or_default();
        if waiting.is_empty() {
            self.parked_order.push_back(key);
        }
        waiting.push(d.clone());
        self.parked_count += 1;
    }

    /// Keys a retired submission's outcome as its outputs are keyed.
    fn outcome(&mut self, key: (RuntimeId, SubmissionIndex), live: Live) {
        let p = self.places;
        let runtime = p.outcome_runtime.get(&key.0).copied().unwrap_or(u32::MAX);
        let (graph, nth) = if self.by_graph {
            (p.rank(key.0, live.prepared), live.nth)
        } else {
            (UNKNOWN_GRAPH, key.1.0)
        };
        self.events.push(Event::Outcome(
            (runtime, graph, nth),
            (live.outcome, key.1.0),
        ));
    }

    /// Keys a digest: `live` is its submission, when known.
    fn output(&mut self, d: &OutputDigest, live: Option<Live>) {
        let p = self.places;
        let runtime = d.runtime;
        let place = live
            .and_then(|l| p.graph_of.get(&(runtime, l.prepared)))
            .and_then(|g| p.writes.get(&(runtime, *g)))
            .map_or(Place::Buffer(d.buffer.0), |w| {
                Place::of(w, d.buffer.0, d.start, d.end)
            });
        let (graph, nth) = match live {
            Some(l) if self.by_graph => (p.rank(runtime, l.prepared), l.nth),
            _ => (UNKNOWN_GRAPH, d.submission.0),
        };
        let rank = p.output_runtime.get(&runtime).copied().unwrap_or(u32::MAX);
        self.events.push(Event::Output(
            (rank, graph, nth, place, d.start, d.end),
            (d.xxh3, d.buffer.0, d.submission.0),
        ));
    }

    /// The trace ended and every submission is retired: every parked digest's submit is
    /// missing.
    pub(super) fn finish(&mut self) {
        let parked = std::mem::take(&mut self.parked_digests);
        let mut parked: Vec<OutputDigest> = parked.into_values().flatten().collect();
        parked.sort_by_key(|d| (d.runtime, d.submission));
        for d in parked {
            self.output(&d, None);
        }
    }
}
