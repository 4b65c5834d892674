//! One trace's second pass: keys output digests and submission outcomes as records arrive,
//! each joined to its submission within [`LIVE_WINDOW`] submits. A [`Visitor`] of the one
//! join ([`crate::scan`](mod@crate::scan)): digests come joined to their submission from it
//! ([`Visitor::output`], which holds those read before their `Submit`); completions that
//! arrive before their `Submit` wait here (at most [`PARK_LIMIT`]).

use super::profile::Places;
use super::range::{Held, holds};
use super::{LIVE_WINDOW, OutputKey, OutputValue, PARK_LIMIT, Place, SubmissionKey, UNKNOWN_GRAPH};
use crate::hash::IdMap;
use crate::index::Index;
use crate::scan::{JoinedSubmission, Outcome, Visitor};
use hrx_capture::schema::{OutputDigest, PreparedId, Record, RuntimeId, SubmissionIndex};
use std::collections::VecDeque;

/// What the side threads hand over: keyed items and the `Submit` records read so far.
pub(super) enum Event {
    /// An output, and the graph rank of its submission where outputs pair by number and both
    /// traces prepared the same graphs (`Side::graph_checked`), else [`UNKNOWN_GRAPH`].
    Output(OutputKey, OutputValue, u64),
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
    /// Keyed by number though both traces prepared the same graphs (a trace that lost
    /// submissions): each output carries its graph's rank, so that two different graphs'
    /// outputs at one number (threads that submitted in another order) are not compared.
    graph_checked: bool,
    pub(super) live: IdMap<(RuntimeId, SubmissionIndex), Live>,
    order: VecDeque<(RuntimeId, SubmissionIndex)>,
    /// The highest submission number retired from `live`, per runtime.
    retired: IdMap<RuntimeId, u64>,
    nth: IdMap<(RuntimeId, PreparedId), u64>,
    parked_outcomes: IdMap<(RuntimeId, SubmissionIndex), Outcome>,
    /// Whether the records ended: the join now hands over digests whose `Submit` never
    /// came.
    ended: bool,
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
        (by_graph, graph_checked): (bool, bool),
        compared: IdMap<RuntimeId, Held>,
    ) -> Side<'a> {
        Side {
            compared,
            places,
            by_graph,
            graph_checked,
            live: IdMap::default(),
            order: VecDeque::new(),
            retired: IdMap::default(),
            nth: IdMap::default(),
            parked_outcomes: IdMap::default(),
            ended: false,
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

    /// Submits and completions, as read (digests come joined: [`Visitor::output`]).
    fn push(&mut self, record: &Record) {
        let compared = match record {
            Record::Submit(s) => self.compares(s.runtime, s.submission),
            Record::SubmissionDone(d) => self.compares(d.runtime, d.submission),
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
    fn key_output(&mut self, d: &OutputDigest, live: Option<Live>) {
        let p = self.places;
        let runtime = d.runtime;
        let graph = live.and_then(|l| p.graph_of.get(&(runtime, l.prepared)));
        let place = graph
            .and_then(|g| p.writes.get(&(runtime, *g)))
            .map_or(Place::Buffer(d.buffer.0), |w| {
                Place::of(w, d.buffer.0, d.start, d.end)
            });
        // By the writing operation's name and rank, not its node: a kernel added before it
        // shifts the node, not which output it is.
        let place = match graph {
            Some(&g) => place.by_op(|node| p.op_ids.get(&(runtime, g, node)).copied()),
            None => place,
        };
        let (graph, nth) = match live {
            Some(l) if self.by_graph => (p.rank(runtime, l.prepared), l.nth),
            _ => (UNKNOWN_GRAPH, d.submission.0),
        };
        let checked = match live {
            Some(l) if self.graph_checked => p.rank(runtime, l.prepared),
            _ => UNKNOWN_GRAPH,
        };
        let rank = p.output_runtime.get(&runtime).copied().unwrap_or(u32::MAX);
        self.events.push(Event::Output(
            (rank, graph, nth, place, d.start, d.end),
            (d.xxh3, d.buffer.0, d.submission.0),
            checked,
        ));
    }

    /// The records ended: what the join hands over from now on is what waited for a
    /// `Submit` that never came.
    pub(super) fn end(&mut self) {
        self.ended = true;
    }
}

impl Visitor for Side<'_> {
    fn record(&mut self, _: &Index, record: &Record) {
        self.push(record);
    }

    /// A digest joined to its submission, keyed by it while it is live here; one handed
    /// after its submission retired here, or given up by the join before the end (its
    /// `Submit` not read while [`crate::scan::PARK_LIMIT`] digests waited), is late and
    /// keyed as if its submit were missing; one given up at the end is keyed so too, and
    /// is late only where a submission numbered after it was already retired here.
    fn output(
        &mut self,
        _: &Index,
        _: u64,
        d: &OutputDigest,
        submission: Option<&JoinedSubmission>,
    ) {
        if !self.compares(d.runtime, d.submission) {
            return;
        }
        let key = (d.runtime, d.submission);
        let live = submission.and_then(|_| self.live.get(&key).copied());
        if live.is_none() && (submission.is_some() || !self.ended || self.is_retired(key)) {
            self.late += 1;
        }
        self.key_output(d, live);
    }
}
