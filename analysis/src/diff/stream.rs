//! The second pass of both traces: each side's records keyed on a thread of its own, sent in
//! batches, and merged in step by how many `Submit` records each side has read.

use super::range::{Held, common as common_range};
use super::side::{Event, Side};
use super::window::{End, Merge, Window};
use super::{DiffError, MATCH_WINDOW, Matched, Profile, Records};
use crate::hash::IdMap;
use crate::scan::Joiner;
use hrx_capture::schema::RuntimeId;
use hrx_capture::{ReadError, TraceReader};
use std::path::Path;

struct Batch {
    events: Vec<Event>,
    /// `Submit` records read.
    submits: u64,
    /// Events sent, this batch's included.
    sent: u64,
}

/// Events per batch, and submits between batches at most.
pub(super) const BATCH: usize = 1024;

/// Batches a side runs ahead of the merge.
pub(super) const BATCHES_AHEAD: usize = 4;
/// The second pass over two traces whose first passes gave `base` and `new` (see the
/// module docs): each side's records read on a thread of its own.
///
/// # Errors
///
/// [`DiffError`]: a part of either trace that must be read is unusable.
pub fn match_streams(
    base: (&Profile, Records<'_>),
    new: (&Profile, Records<'_>),
) -> Result<Matched, DiffError> {
    match_within(base, new, MATCH_WINDOW)
}

/// Where a trace never closed before a submitting thread's last records were written ends
/// for each runtime: the first submission it lacks
/// ([`hrx_capture::reader::WarningKind::SubmissionsUnwritten`]). Its records of submissions
/// from there on (other threads' later ones, completions and digests of the unwritten ones)
/// are not compared, as `replay` leaves them out: the trace ends there ([`End`] counts what
/// the other trace holds from there on as past it).
fn ends(profile: &Profile) -> IdMap<RuntimeId, u64> {
    (profile.warnings.iter())
        .filter_map(|w| w.kind.ends_before())
        .map(|(runtime, first)| (RuntimeId(runtime), first))
        .collect()
}

/// Whether `record` names a submission at or past where its trace ends ([`ends`]).
fn past_the_end(ends: &IdMap<RuntimeId, u64>, record: &hrx_capture::Record) -> bool {
    use hrx_capture::Record as R;
    if ends.is_empty() {
        return false;
    }
    // The records that name a submission (as `hrx-replay`'s chunks place them).
    let submission = match record {
        R::Submit(r) => Some(r.submission),
        R::CrossWait(r) => Some(r.submission),
        R::RegionTiming(r) => Some(r.submission),
        R::OpTiming(r) => Some(r.timing.submission),
        R::RegionDone(r) => Some(r.submission),
        R::SubmissionDone(r) => Some(r.submission),
        R::Quarantine(r) => r.submission,
        R::Poison(r) => r.submission,
        R::FaultInjected(r) => r.submission,
        R::OutputDigest(r) => Some(r.submission),
        R::CaptureFence(r) => Some(r.submission),
        R::RegionStarted(r) => Some(r.submission),
        _ => None,
    };
    match (record.runtime(), submission) {
        (Some(runtime), Some(submission)) => ends.get(&runtime).is_some_and(|&e| submission.0 >= e),
        _ => false,
    }
}

/// [`match_streams`] with a match window of `window` keys per side and kind.
pub(super) fn match_within(
    (base, base_records): (&Profile, Records<'_>),
    (new, new_records): (&Profile, Records<'_>),
    window: usize,
) -> Result<Matched, DiffError> {
    use std::sync::mpsc::sync_channel;
    // The same prepared graphs, however often each was submitted (another run length):
    // graphs pair by rank and a graph's extra submissions are one-sided. Other graphs
    // (outputs rotated over another number of buffer sets) pair by submission number.
    // Where either side holds a range (a range recording, a trim), only the submissions both
    // hold are compared, and a graph's n-th submission is counted among those (`Side`
    // counts only what it compares): a trim against the run it was cut from pairs each
    // submission with itself, and two runs whose threads interleaved their submits in
    // another order pair as two whole traces do (by number, a graph's submission met
    // another graph's in the other run).
    let compared = common_range(&base.ranges, &new.ranges);
    // A trace missing submissions between those it holds (their records lost with a
    // damaged block) counts a graph's later submissions one short, whichever graph lost
    // one: its submissions pair by number, which the trace keeps (paired by count, a
    // damaged copy of a trace differed from it in every later output).
    // So does one that ends before some of a runtime's submissions while holding later ones
    // (never closed: a submitting thread's last records unwritten, another's later ones in
    // the file; [`hrx_capture::reader::WarningKind::SubmissionsUnwritten`]).
    let gaps = |p: &Profile| {
        p.recovery
            .is_some_and(|r| r.missing_submissions > 0 || r.unwritten_submissions > 0)
    };
    // A range's trace submits only some of its graphs (a trim of a multi-threaded run can
    // hold one thread's submissions alone): where either side holds one, the graphs both
    // prepared decide, not the graphs each submitted. By number, a trim against another
    // recording met other threads' submissions there, every output differing (a break-it
    // pass, session 58).
    let same_submitted = base.shape.keys().eq(new.shape.keys());
    let same_graphs =
        same_submitted || (compared.is_some() && base.graphs.keys().eq(new.graphs.keys()));
    let by_graph = same_graphs && !gaps(base) && !gaps(new);
    // By number for a trace's gaps alone: outputs of two different graphs at one number (a
    // multi-threaded program's runs number their submits as the threads ran) are not
    // compared. They were, each a differing output: a lossy run of `host_visible 3000000 8`
    // against a whole one read 294,933 of them, a false regression (a fresh user's pass).
    let graph_checked = !by_graph && same_graphs;
    let on_side = |profile: &Profile| -> IdMap<RuntimeId, Held> {
        compared
            .as_ref()
            .map_or_else(IdMap::default, |c| profile.by_runtime_id(c))
    };
    std::thread::scope(|scope| {
        let mut receivers = Vec::new();
        let mut threads = Vec::new();
        for (profile, records) in [(base, base_records), (new, new_records)] {
            let (send, receive) = sync_channel::<Batch>(BATCHES_AHEAD);
            let held = on_side(profile);
            receivers.push(receive);
            threads.push(scope.spawn(move || -> Result<u64, ReadError> {
                let mut side = Side::new(&profile.places, (by_graph, graph_checked), held);
                let mut joiner = Joiner::new();
                let mut sent = 0u64;
                // Sends what `side` keyed so far; false when the merge stopped listening.
                let mut flush = |side: &mut Side<'_>, submits: u64| {
                    let events = std::mem::take(&mut side.events);
                    sent += events.len() as u64;
                    let batch = Batch {
                        events,
                        submits,
                        sent,
                    };
                    send.send(batch).is_ok()
                };
                let mut sent_at = 0;
                let ends = ends(profile);
                for record in records {
                    let record = record?;
                    if past_the_end(&ends, &record) {
                        continue;
                    }
                    joiner.push(&record, &mut side);
                    if side.events.len() >= BATCH || side.submits >= sent_at + BATCH as u64 {
                        sent_at = side.submits;
                        if !flush(&mut side, sent_at) {
                            return Ok(side.late);
                        }
                    }
                }
                // Digests still waiting for their submit are handed over (joined where a
                // submit waited for its graph, else without it), then every submission
                // still joinable is final: in batches too, so the merge takes them in step
                // with the other side's.
                side.end();
                joiner.finish(&mut side, None, Vec::new());
                let submits = side.submits;
                while !side.live.is_empty() {
                    side.retire_oldest();
                    if side.events.len() >= BATCH && !flush(&mut side, submits) {
                        return Ok(side.late);
                    }
                }
                // Past every submit of the other side: the rest is drained.
                flush(&mut side, u64::MAX);
                Ok(side.late)
            }));
        }
        let mut merge = Merge {
            outputs: [Window::new(window), Window::new(window)],
            outcomes: [Window::new(window), Window::new(window)],
            matched: Matched {
                by_graph,
                compared: compared.clone(),
                ..Matched::default()
            },
            ends: [base, new].map(End::of),
        };
        // In step: always read from the side that has read fewer submits (then sent fewer
        // events).
        let mut progress = [(0u64, 0u64); 2];
        let mut done = [false; 2];
        while !(done[0] && done[1]) {
            let side = match done {
                [true, _] => 1,
                [_, true] => 0,
                _ => usize::from(progress[1] < progress[0]),
            };
            match receivers[side].recv() {
                Ok(batch) => {
                    progress[side] = (batch.submits, batch.sent);
                    for event in batch.events {
                        merge.take(side, event);
                    }
                }
                Err(_) => done[side] = true,
            }
        }
        let mut late = [0; 2];
        for (side, thread) in threads.into_iter().enumerate() {
            let ended = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            late[side] = match (side, ended) {
                (_, Ok(late)) => late,
                (0, Err(e)) => return Err(DiffError::Base(e)),
                (_, Err(e)) => return Err(DiffError::New(e)),
            };
        }
        Ok(merge.finish(late))
    })
}

/// [`match_streams`] of the traces at `base_path` and `new_path`.
///
/// # Errors
///
/// [`DiffError`]: either trace cannot be opened, or a part that must be read is unusable.
pub fn match_files(
    (base, base_path): (&Profile, &Path),
    (new, new_path): (&Profile, &Path),
) -> Result<Matched, DiffError> {
    let records = |path: &Path| -> Result<Records<'static>, ReadError> {
        let reader = TraceReader::open(path)?;
        Ok(Box::new(reader.map(|item| item.map(|(_, record)| record))))
    };
    let base_records = records(base_path).map_err(DiffError::Base)?;
    let new_records = records(new_path).map_err(DiffError::New)?;
    match_streams((base, base_records), (new, new_records))
}
