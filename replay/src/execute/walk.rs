//! Step 3 of a replay: the timeline walked (host writes, submits in submission order,
//! waiting for the oldest outstanding submission whenever the runtime answers `Busy`, and
//! releases: module `objects`).
//!
//! A submission's completion is kept while a later submission names it as explicit
//! producer (`submit_after`), until that submission is submitted, as the capture's program
//! held it. In a streamed replay that may be a later chunk's: the walk of one chunk takes
//! the completions earlier chunks kept for it and hands on those a later chunk names
//! ([`Carried`]).

use super::objects::{Maker, Objects};
use super::{Entry, EntryQueue, Observed, Ticker, lock, outcome};
use crate::error::ReplayError;
use crate::plan::{Event, RuntimePlan};
use crate::report::Outcome;
use crate::substitute::Substitute;
use hrx::{Completion, Error};
use hrx_capture::schema::SubmissionIndex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Submissions waited on in submission order, and completions kept for later producers.
pub(super) struct Flight {
    outstanding: VecDeque<(SubmissionIndex, Completion)>,
    /// Completions later submissions name as producers, until their last consumer.
    held: HashMap<SubmissionIndex, Completion>,
    statuses: HashMap<SubmissionIndex, (Outcome, String)>,
}

impl Flight {
    /// Waits for the oldest outstanding submission; false when none is outstanding.
    fn retire_oldest(&mut self, ticker: &mut Ticker<'_>) -> bool {
        let Some((index, completion)) = self.outstanding.pop_front() else {
            return false;
        };
        self.retire(index, completion, ticker);
        true
    }

    /// Waits for the outstanding submissions whose graph uses buffer `buffer` (an index
    /// into `plan`'s buffers).
    fn retire_using(&mut self, plan: &RuntimePlan<'_>, buffer: usize, ticker: &mut Ticker<'_>) {
        let uses = |index: &SubmissionIndex| {
            let graph = plan.submissions[plan.submission_index[index]].graph;
            plan.graphs[graph].buffers.binary_search(&buffer).is_ok()
        };
        let mut position = 0;
        while position < self.outstanding.len() {
            if uses(&self.outstanding[position].0) {
                let (index, completion) = self.outstanding.remove(position).expect("in range");
                self.retire(index, completion, ticker);
            } else {
                position += 1;
            }
        }
    }

    /// Waits for `completion` of submission `index` and keeps its status.
    fn retire(&mut self, index: SubmissionIndex, completion: Completion, ticker: &mut Ticker<'_>) {
        let _ = completion.wait();
        let status = completion
            .status()
            .map(|s| outcome(&s))
            .unwrap_or((Outcome::Failed, "no status after wait".into()));
        self.statuses.insert(index, status);
        ticker.tick();
    }
}

/// Completions kept across the chunks of a streamed replay for a later chunk's submissions
/// that name them as explicit producer: each with the last chunk naming it; and the pace.
#[derive(Default)]
pub(crate) struct Carried {
    held: HashMap<SubmissionIndex, (Completion, u64)>,
    /// With [`crate::ReplayOptions::pace_captured`]: the first submission's captured time
    /// and when the replay submitted it (`None` until then).
    pace: Option<Pace>,
}

impl Carried {
    /// Nothing carried yet; paced as captured when `pace`.
    pub(crate) fn paced(pace: bool) -> Carried {
        Carried {
            held: HashMap::new(),
            pace: pace.then(Pace::default),
        }
    }
}

/// Submits at the captured pace ([`crate::ReplayOptions::pace_captured`]): each submission
/// no earlier after the first than it was captured after the first.
#[derive(Default)]
pub(crate) struct Pace {
    origin: Option<(u64, std::time::Instant)>,
}

impl Pace {
    /// Waits until the submission captured at `time_ns` is due.
    fn wait_for(&mut self, time_ns: u64) {
        let (first_ns, start) = *self
            .origin
            .get_or_insert_with(|| (time_ns, std::time::Instant::now()));
        let due = start + std::time::Duration::from_nanos(time_ns.saturating_sub(first_ns));
        let now = std::time::Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

/// Where a chunk lies among a streamed replay's chunks: its number, and for a submission the
/// last later chunk naming it as explicit producer (module `chunk`).
pub(crate) struct ChunkPlace<'a> {
    pub chunk: u64,
    pub producer_until: &'a dyn Fn(SubmissionIndex) -> Option<u64>,
}

/// Walks `plan`'s timeline on `objects` (making what it needs with `maker`, letting go what
/// it releases) and retires every submission; returns the replay's submission numbers
/// mapped to captured ones. `carried` holds, before, the completions earlier chunks kept
/// for this one and later ones, and after, those `place` says a later chunk names (a whole
/// replay: no place, nothing carried).
///
/// # Errors
/// A buffer used after the trace released it ([`ReplayError::Unreplayable`]), an object
/// that cannot be made, a submit or host write that stays busy with nothing in flight.
pub(super) fn walk(
    plan: &RuntimePlan<'_>,
    maker: Maker<'_>,
    objects: &mut Objects,
    observed: &mut Observed,
    ticker: &mut Ticker<'_>,
    carried: &mut Carried,
    place: Option<&ChunkPlace<'_>>,
) -> Result<HashMap<u64, SubmissionIndex>, ReplayError> {
    // Last submission (position) naming each submission as a producer; `usize::MAX` for one
    // a later chunk names.
    let mut last_consumer: HashMap<SubmissionIndex, usize> = HashMap::new();
    for (position, submission) in plan.submissions.iter().enumerate() {
        for producer in &submission.producers {
            last_consumer.insert(*producer, position);
        }
    }
    let mut until: HashMap<SubmissionIndex, u64> = HashMap::new();
    let mut held = HashMap::new();
    for (index, (completion, last)) in carried.held.drain() {
        if place.is_some_and(|p| last > p.chunk) {
            last_consumer.insert(index, usize::MAX);
            until.insert(index, last);
        }
        held.insert(index, completion);
    }
    if let Some(place) = place {
        for submission in &plan.submissions {
            if let Some(last) = (place.producer_until)(submission.index)
                && last > place.chunk
            {
                last_consumer.insert(submission.index, usize::MAX);
                until.insert(submission.index, last);
            }
        }
    }
    // Substitution entries per submission.
    let mut entries: HashMap<SubmissionIndex, Vec<(EntryQueue, &Substitute<'_>)>> = HashMap::new();
    for sub in &plan.substitutions {
        if !sub.writes {
            continue;
        }
        let queue = &objects.queues[&(sub.graph, sub.node)];
        for (index, entry) in &sub.per_submission {
            entries
                .entry(*index)
                .or_default()
                .push((queue.clone(), entry));
        }
    }

    let mut flight = Flight {
        outstanding: VecDeque::new(),
        held,
        statuses: HashMap::new(),
    };
    let mut replay_index: HashMap<u64, SubmissionIndex> = HashMap::new();
    for event in &plan.timeline {
        match *event {
            Event::HostWrite(i) => {
                let (buffer, w) = objects.host_write_target(maker, plan, i)?;
                loop {
                    match buffer.write(w.offset, w.bytes) {
                        Ok(()) => break,
                        Err(Error::Busy(why)) => {
                            if !flight.retire_oldest(ticker) {
                                return Err(ReplayError::unreplayable(format!(
                                    "runtime {}: the host write into buffer {} stays busy with nothing in flight: {why}",
                                    plan.id, w.buffer
                                )));
                            }
                        }
                        Err(error) => {
                            observed.host_write_errors.push((i, error.to_string()));
                            break;
                        }
                    }
                }
            }
            Event::Submit(position) => {
                let submission = &plan.submissions[position];
                if let Some(pace) = &mut carried.pace {
                    pace.wait_for(submission.time_ns);
                }
                let pushed = entries
                    .get(&submission.index)
                    .map_or(&[][..], Vec::as_slice);
                for (queue, entry) in pushed {
                    lock(queue).push_back(match entry {
                        Substitute::Write(writes) => Entry::Write(
                            writes
                                .iter()
                                .map(|(binding, bytes)| (*binding, Arc::from(*bytes)))
                                .collect(),
                        ),
                        Substitute::Fail {
                            device_lost,
                            message,
                        } => Entry::Fail {
                            device_lost: *device_lost,
                            message: message.clone(),
                        },
                        Substitute::Unavailable => Entry::Noop,
                    });
                }
                let producers: Vec<Completion> = submission
                    .producers
                    .iter()
                    .filter_map(|p| flight.held.get(p).cloned())
                    .collect();
                let user = || format!("by submission {}", submission.index);
                let graph =
                    objects.graph(maker, plan, submission.graph, &mut observed.notes, &user)?;
                let completion = loop {
                    match graph.submit_after(&producers) {
                        Ok(completion) => break Some(completion),
                        Err(Error::Busy(why)) => {
                            if !flight.retire_oldest(ticker) {
                                return Err(ReplayError::unreplayable(format!(
                                    "runtime {}: submission {} stays busy with nothing in flight: {why}",
                                    plan.id, submission.index
                                )));
                            }
                        }
                        Err(error) => {
                            observed.refused.insert(submission.index, error.to_string());
                            for (queue, _) in pushed {
                                lock(queue).pop_back();
                            }
                            ticker.tick();
                            break None;
                        }
                    }
                };
                drop(producers);
                if let Some(completion) = completion {
                    replay_index.insert(completion.submission(), submission.index);
                    if last_consumer.contains_key(&submission.index) {
                        flight.held.insert(submission.index, completion.clone());
                    }
                    flight.outstanding.push_back((submission.index, completion));
                }
                flight.held.retain(|index, _| {
                    last_consumer
                        .get(index)
                        .is_some_and(|&last| last > position)
                });
            }
            Event::Release(buffer) => {
                // The program's runtime let the memory go once its users retired.
                flight.retire_using(plan, buffer, ticker);
                objects.release(plan, buffer);
            }
        }
    }
    while flight.retire_oldest(ticker) {}
    observed.statuses = std::mem::take(&mut flight.statuses);
    // What a later chunk names, handed on; the rest dropped (its slot freed).
    for (index, completion) in flight.held.drain() {
        if let Some(&last) = until.get(&index) {
            carried.held.insert(index, (completion, last));
        }
    }
    Ok(replay_index)
}
