//! The scheduler: in-flight submissions, readiness, retirement.
//!
//! # States
//!
//! ```text
//!   submit ──> in flight ──(every region finished)──> retired ──(completions dropped)──> slot free
//!                │  region: Pending ─> Running ─> Done | Failed
//!                │             │          └─> Launched ─> Running (launched by submit,
//!                │             │                                   completed by its claimer)
//!                │             └──────────> Cancelled (a failure or a failed producer)
//! ```
//!
//! A region is ready when (1) its in-graph dependencies are `Done`, (2) every explicit
//! producer of its submission succeeded, and (3) every region of an earlier in-flight
//! submission that it waits on (recorded at submit as a *cross wait*, with the hazard kind
//! and byte range) is done, or that submission has left. It waits on each unfinished region
//! of a small earlier graph that conflicts with it; on a large one (9 regions or more), on
//! the conflicting regions at the graph's frontier's end, the last writer of the bytes and
//! the readers since ([`super::dependencies::Tail`]), which come after every earlier region
//! of the graph that touched them: one wait where every pair was compared. A wait on a
//! region that failed or was cancelled lasts until its submission leaves (a cancelled region
//! stands for none before it). A region waits across only for the bytes no earlier region
//! of its own graph wrote ([`super::dependencies::CrossUses`]): the graph's first writer of
//! the others waits for them, and the region runs after that writer. Conflicting earlier
//! work is therefore ordered, while non-conflicting work overlaps across queues.
//!
//! It waits on every earlier submission in flight that conflicts, not only the latest: a
//! later submission's wait would stand for an earlier one's only while its own region runs,
//! and a failure elsewhere cancels it and lets its submission leave while the earlier region
//! still runs. A large submission counts its regions' waits as they end (`GraphReady`), so
//! finding the next region passes over none that still waits.
//!
//! Failure: a failed region cancels every region of its submission that has not started,
//! and the submission fails with that first error. A failed or cancelled submission cancels
//! every submission that named it as a producer, transitively. A native failure of uncertain
//! extent (`Region::uncertain`: any error of a scoped callback, otherwise one for which
//! [`crate::Error::is_device_loss`] holds) quarantines the prepared graph and poisons every
//! buffer its region writes, the whole buffer, not only the bytes written: as in the seed,
//! poison is per buffer, because an uncertain failure says nothing reliable about which
//! bytes the native work reached. A region that uses any byte of a poisoned buffer fails
//! with `DeviceLost` without running and without quarantining anything further; its error
//! and the trace's `Poison` record name the cause ("poisoned by submission S region R").
//! Whether a submission in flight beside the failure meets the poison therefore depends on
//! timing: a region that started before the poison ran, one that starts after it fails.
//!
//! At most one region per queue runs at a time, oldest ready first. One worker thread per
//! queue runs them, and a thread in [`crate::Completion::wait`] runs its own submission's
//! ready native regions (native graph, copy batch, NPU run; never user callbacks) when that
//! queue is idle, so that a submit-then-wait round trip needs no thread hand-off, like a
//! launch followed by a stream synchronize. `submit` itself launches a runnable native graph
//! whose launch is asynchronous ([`Scheduler::claim_launch`], see [`super::submit`]); the
//! region is then `Launched`, its queue busy, until the waiter or the queue's worker claims
//! it to synchronize. Signals and condition variables are notified after the scheduler lock
//! is dropped. A waiter that completed such a launch of its own lone submission publishes it
//! and leaves its retirement to the next lock holder, which resolves it before anything else
//! ([`Scheduler::resolve`], [`super::defer`]): no lock holder sees it still running.

use super::completion::{Signal, publish_all, retire_own_slot, retire_slot};
use super::dependencies::{any_conflict, hazards_between};
use super::region::Region;
use super::shared::{HasParked, Parked};
use super::submit::Prepared;
use super::types::{Queue, RegionKind, Status};
use crate::{Completion, Error};
use crossbeam_utils::CachePadded;
use smallvec::SmallVec;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    /// Launched by `submit` (its graph queued on the device), not yet synchronized: the
    /// queue counts as running; the waiter or the queue's worker claims it to finish it.
    Launched,
    Done,
    Failed,
    Cancelled,
}

impl State {
    fn finished(self) -> bool {
        matches!(self, State::Done | State::Failed | State::Cancelled)
    }
}

/// A graph of at least this many regions keeps a [`GraphReady`] for each submission; a smaller
/// one is looked through whole (a few regions: cheaper than the sets' upkeep, and a submit of
/// up to 8 regions allocates nothing).
pub(crate) const TRACKED_REGIONS: usize = 9;

/// A large submission's pending regions whose in-graph dependencies are all done and whose
/// cross waits are over, per queue, in region order: a queue's next region is the first of
/// them, found without looking through the whole graph. Without it, finding the next region
/// of a queue looked at every pending region before it, and a waiter's claim did that for
/// each of its submission's regions: `perf record` of the untraced `regions 30000 1` (session
/// 57) put 74% of the run in those scans. Cross waits are counted here too (`blocked`, ended
/// through [`Scheduler::waiters`]): when the sets held regions whose in-graph dependencies
/// were done but whose cross waits were not, each lookup passed over all of them, and eight
/// large graphs in flight (`REGIONS_IN_FLIGHT=8 regions 20000 16 20000`, session 60) took
/// 48.8 s, 88% of it there. Producers are still checked at lookup: one check a submission.
struct GraphReady {
    /// Per region: entries of its `Region::dependencies` not yet `Done`.
    unmet: Vec<u32>,
    /// Per region: its cross waits not yet over (the earlier region done, or its submission
    /// left).
    blocked: Vec<u32>,
    /// Per queue: the `Pending` regions whose `unmet` and `blocked` are zero.
    ready: [BTreeSet<usize>; 5],
}

impl GraphReady {
    /// `region` of `flight` (which keeps a [`GraphReady`]) is done: its dependents whose
    /// dependencies are all done now join their queue's set. Out of line: a round trip of a
    /// small graph keeps none, and `finish` stays as small as it was.
    #[inline(never)]
    fn done(flight: &mut InFlight, region: usize) {
        let Some(graph) = &mut flight.graph_ready else {
            return;
        };
        for &dependent in flight.prepared.dependents.of(region) {
            let dependent = dependent as usize;
            graph.unmet[dependent] -= 1;
            graph.join_when_ready(&flight.prepared, &flight.states, dependent);
        }
    }

    /// One cross wait of `region` of `flight` (which keeps a [`GraphReady`]) is over.
    #[inline(never)]
    fn wait_over(flight: &mut InFlight, region: usize) {
        let Some(graph) = &mut flight.graph_ready else {
            return;
        };
        graph.blocked[region] -= 1;
        graph.join_when_ready(&flight.prepared, &flight.states, region);
    }

    /// `region` joins its queue's set when it is pending with nothing left to wait for.
    fn join_when_ready(&mut self, prepared: &Prepared, states: &[State], region: usize) {
        if self.unmet[region] == 0 && self.blocked[region] == 0 && states[region] == State::Pending
        {
            let queue = prepared.regions[region].queue();
            self.ready[queue as usize].insert(region);
        }
    }

    /// `region`, of `queue`, was claimed: no longer pending.
    #[inline(never)]
    fn claimed(&mut self, queue: Queue, region: usize) {
        self.ready[queue as usize].remove(&region);
    }

    /// The sets of a submission of `prepared` whose cross waits are `waits` (by region).
    #[inline(never)]
    fn new(prepared: &Prepared, waits: &[(usize, u64, usize)]) -> Box<Self> {
        let mut blocked = vec![0; prepared.regions.len()];
        for &(region, ..) in waits {
            blocked[region] += 1;
        }
        let mut ready: [BTreeSet<usize>; 5] = Default::default();
        let unmet = prepared
            .regions
            .iter()
            .enumerate()
            .map(|(index, region)| {
                if region.dependencies.is_empty() && blocked[index] == 0 {
                    ready[region.queue() as usize].insert(index);
                }
                region.dependencies.len() as u32
            })
            .collect();
        Box::new(Self {
            unmet,
            blocked,
            ready,
        })
    }
}

struct InFlight {
    submission: u64,
    prepared: Arc<Prepared>,
    slot: usize,
    producers: Vec<Completion>,
    /// Per region (inline up to 8 regions: a submit allocates nothing for most graphs).
    states: SmallVec<[State; 8]>,
    /// Cross waits: (region, earlier submission, its region that must finish first), by
    /// region. Flat, so a submission that conflicts with nothing in flight allocates nothing.
    waits: Vec<(usize, u64, usize)>,
    /// For a submission of at least [`TRACKED_REGIONS`] regions.
    graph_ready: Option<Box<GraphReady>>,
    /// Submission-order number of its first device operation (see [`crate::fault`]).
    first_operation: u64,
    unfinished: usize,
    status: Option<Status>,
}

/// A claimed region, for the thread that runs it (a queue's worker or a waiter).
///
/// It borrows its submission's prepared graph from the in-flight entry instead of holding
/// a clone of the `Arc` (two atomic read-modify-writes of a shared count per region fewer):
/// that entry stays in the scheduler, with its `Arc`, until every region of the submission
/// finished, and this region finishes only when its runner calls [`Scheduler::finish`],
/// after its last use of the task. Neither a failure elsewhere (it cancels pending regions,
/// not running ones) nor a producer's cancellation retires a submission with a running
/// region.
pub(crate) struct Task {
    prepared: std::ptr::NonNull<Prepared>,
    pub submission: u64,
    pub region: usize,
    /// Submission-order number of the region's first device operation.
    pub first_operation: u64,
    /// The region's graph was launched by `submit` ([`Scheduler::claim_launch`]): whoever
    /// runs this task only completes the launch ([`Region::complete_launch`]).
    pub launched: bool,
}

impl Task {
    /// The submission's prepared graph (valid until the region's [`Scheduler::finish`]).
    pub fn prepared(&self) -> &Prepared {
        // SAFETY: the in-flight entry that `claim` borrowed this from holds its `Arc` until
        // the submission retires, which needs this region finished (see the type's docs); the
        // runner calls `finish` only after its last use of the task, and a `Task` never
        // leaves the thread that claimed it (`NonNull` keeps it `!Send`).
        unsafe { self.prepared.as_ref() }
    }
}

/// Device operations a region executes: one per copy, fill, dispatch or NPU run.
pub(super) fn device_operations(region: &Region) -> u64 {
    match region.kind {
        RegionKind::Scoped | RegionKind::HostCallback => 0,
        RegionKind::NativeGraph | RegionKind::CopyBatch | RegionKind::NpuRun => {
            region.nodes.len() as u64
        }
    }
}

/// A retired submission's prepared graph, number and outcome, held until the scheduler lock
/// is dropped: the graph may hold the last reference to the runtime, so it is dropped after
/// the lock (the rest of a retired submission is dropped under it: it holds no runtime). Its
/// `SubmissionDone` record is written there too, before the signal is published: recording
/// under the lock made every other worker and submitter wait for it.
struct Retired {
    prepared: Arc<Prepared>,
    submission: u64,
    status: Status,
}

/// What to notify once the scheduler lock is dropped.
///
/// The one retirement a region's end usually brings is held inline, outside any container
/// (a round trip makes three of these and drops them; an inline `SmallVec` of each kind cost
/// about 60 instructions a round trip to make and drop); more go to `more`, which allocates
/// only then.
#[derive(Default)]
pub(crate) struct Wake {
    /// Bit `q` set: queue `q` may have ready work and its worker is parked: notify it (its
    /// [`Parked`] bit was taken under the lock).
    pub queues: u8,
    /// The first retired submission, with its signal to publish (`None`: the finishing
    /// thread's own, which it publishes itself, see [`retire_own_slot`]).
    first: Option<(Retired, Option<Arc<Signal>>)>,
    /// Further retired submissions and their signals, in retirement order.
    more: Vec<(Retired, Option<Arc<Signal>>)>,
    /// The finishing thread's own submission retired: it publishes it after [`Wake::release`].
    pub own_retired: bool,
}

impl Wake {
    /// Whether there is nothing to notify, drop or publish.
    pub fn is_empty(&self) -> bool {
        self.queues == 0 && self.first.is_none()
    }

    /// Takes a retired submission and its signal.
    fn push(&mut self, retired: Retired, signal: Option<Arc<Signal>>) {
        if self.first.is_none() {
            self.first = Some((retired, signal));
        } else {
            self.more.push((retired, signal));
        }
    }

    /// Records retired submissions' outcomes in the trace, drops what they held, then
    /// publishes their outcomes.
    #[inline]
    pub fn release(&mut self) {
        let Some((first, signal)) = self.first.take() else {
            return;
        };
        super::record::submission_done(first.prepared.tracer(), first.submission, &first.status);
        if self.more.is_empty() {
            drop(first);
            if let Some(signal) = signal {
                signal.publish();
            }
            return;
        }
        for (retired, _) in &self.more {
            super::record::submission_done(
                retired.prepared.tracer(),
                retired.submission,
                &retired.status,
            );
        }
        drop(first);
        let signals: Vec<Arc<Signal>> = std::iter::once(signal)
            .chain(self.more.drain(..).map(|(_, signal)| signal))
            .flatten()
            .collect();
        publish_all(signals);
    }
}

pub(crate) struct Scheduler {
    pub capacity: usize,
    next: u64,
    /// Device operations numbered so far, in submission order.
    operations: u64,
    in_flight: VecDeque<InFlight>,
    /// Bit `q` set: a region of queue `q` is running (on its worker or a waiter), or launched.
    running: u8,
    /// Bit `q` set: queue `q`'s running region is [`State::Launched`], at `launched_at[q]`
    /// (submission, region), for the first claimer to complete.
    launched: u8,
    launched_at: [(u64, usize); 5],
    /// What was last stored on each queue's doorbell (only the lock holder stores there).
    rung: [u64; 5],
    /// Bit `q`: the claimable flag last stored on queue `q`'s doorbell.
    claimable: u8,
    /// Per queue: regions in the `Pending` state, in every in-flight submission.
    pending: [u32; 5],
    /// In-flight submissions that name producers (none: no producer outcome to check).
    with_producers: usize,
    /// Regions claimed by threads in `Completion::wait` ([`Scheduler::claim_own`]).
    pub regions_run_by_waiters: u64,
    /// Per in-flight submission, the cross waits on its regions of later submissions that
    /// keep a [`GraphReady`]: (its region, the later submission, that one's region), by its
    /// region. Each ends once: when the region is done or, when it never is, when the
    /// submission leaves; a later submission that leaves first takes its own out. Ordered
    /// sets, not sorted lists: a list re-sorted at every submit, and keeping the waits of
    /// later submissions that had failed and left, made many large submissions behind one
    /// earlier submission quadratic (a break-it pass: 8,000 cancelled ones took 25 s).
    /// Beside the in-flight list, not in it: a round trip of a small graph has none and
    /// moves no more bytes.
    waiters: BTreeMap<u64, BTreeSet<(usize, u64, usize)>>,
    /// Parked workers notified ([`Scheduler::take_parked`]): each a syscall after the lock.
    pub worker_wakes: u64,
    doorbells: Doorbells,
    /// The queues whose worker is parked (see [`Parked`]).
    parked: Parked,
    /// The submission whose waiter may defer its retirement ([`super::defer`]): armed by
    /// [`Scheduler::claim_own`], resolved by the next lock holder ([`Scheduler::resolve`]).
    deferred: Option<u64>,
}

impl HasParked for Scheduler {
    fn parked(&mut self) -> &mut Parked {
        &mut self.parked
    }
}

/// One queue's doorbell: one word on a cache line of its own, stored only under the
/// scheduler lock and watched by the queue's spinning worker without it. A submit rings it
/// with one store (one cache-line transfer), and a waiter's claim clears its flag with one
/// more: the fewest a hand-over can take.
///
/// The word also counts the claims made by threads in `Completion::wait`: a worker that
/// finds them moving while it leaves new work to a waiter gives the next work a grace too
/// (`worker::leave_to_waiter`), without watching the line meanwhile.
#[derive(Default)]
pub(crate) struct Doorbell {
    /// `epoch << EPOCH_SHIFT | waiter claims << 1 | claimable`: the epoch moves with every
    /// wake that may make the queue's work ready; the claims count (wrapping) moves with each
    /// claim by a waiter; `claimable` says the queue is idle and holds pending regions, ready
    /// or not.
    word: AtomicU64,
}

/// One reading of a [`Doorbell`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rung {
    pub epoch: u64,
    /// Claims by waiters, wrapping.
    pub claims: u64,
    pub claimable: bool,
}

impl Doorbell {
    const CLAIMS_MASK: u64 = 0xffff;
    const EPOCH_SHIFT: u32 = 17;

    /// The word after `word`, with the epoch moved (`ring`), a waiter's claim counted
    /// (`claimed`) and the claimable flag.
    fn rung(word: u64, ring: bool, claimed: bool, claimable: bool) -> u64 {
        let epoch = (word >> Self::EPOCH_SHIFT) + u64::from(ring);
        let claims = ((word >> 1) + u64::from(claimed)) & Self::CLAIMS_MASK;
        epoch << Self::EPOCH_SHIFT | claims << 1 | u64::from(claimable)
    }

    /// Moved by every ring.
    pub(super) fn epoch(&self) -> u64 {
        self.load().epoch
    }

    /// The epoch, the waiters' claims and the claimable flag, from one read of the word.
    pub(super) fn load(&self) -> Rung {
        let word = self.word.load(Ordering::Acquire);
        Rung {
            epoch: word >> Self::EPOCH_SHIFT,
            claims: word >> 1 & Self::CLAIMS_MASK,
            claimable: word & 1 != 0,
        }
    }
}

/// The doorbells of the five queues, by [`Queue`] index.
pub(crate) type Doorbells = Arc<[CachePadded<Doorbell>; 5]>;

impl Scheduler {
    pub fn new(capacity: usize, doorbells: Doorbells) -> Self {
        Self {
            capacity,
            next: 0,
            operations: 0,
            in_flight: VecDeque::new(),
            running: 0,
            launched: 0,
            launched_at: [(0, 0); 5],
            rung: [0; 5],
            claimable: 0,
            pending: [0; 5],
            with_producers: 0,
            regions_run_by_waiters: 0,
            waiters: BTreeMap::new(),
            worker_wakes: 0,
            doorbells,
            parked: Parked::default(),
            deferred: None,
        }
    }

    /// Ends a deferral armed for a waiter ([`super::defer`]): called first thing under the
    /// lock ([`super::shared::Core::scheduler`]), so that no lock holder sees a submission
    /// whose waiter published it as still running. An armed one is disarmed (its waiter then
    /// retires it through [`Scheduler::finish`]); a taken one is retired here: its waiter
    /// published its success; it leaves the in-flight list (its buffers' device uses with
    /// it), its queue is idle again, its slot free. Its graph is dropped here, under the lock:
    /// a handle of the graph is alive while its deferral is taken (see `defer`), so this is
    /// never the last reference.
    #[inline]
    pub fn resolve(&mut self) {
        if let Some(submission) = self.deferred.take() {
            self.resolve_deferred(submission);
        }
    }

    #[inline(never)]
    fn resolve_deferred(&mut self, submission: u64) {
        let Some(position) = self.position(submission) else {
            return;
        };
        let flight = &self.in_flight[position];
        if flight.prepared.defer.resolve() != super::defer::Resolved::Taken {
            return;
        }
        // Alone in flight since it was armed (every lock holder resolves first).
        debug_assert_eq!((position, flight.states.len()), (0, 1));
        debug_assert_eq!(flight.states[0], State::Running);
        let queue = flight.prepared.regions[0].queue();
        self.running &= !(1 << queue as u8);
        let flight = self.take_flight(position);
        debug_assert!(self.waiters.is_empty(), "nothing later was in flight");
        flight.prepared.occupied[flight.slot].store(false, Ordering::Relaxed);
    }

    /// Takes the in-flight submission at `position` out of the list (the oldest without a
    /// shift).
    fn take_flight(&mut self, position: usize) -> InFlight {
        let flight = if position == 0 {
            self.in_flight.pop_front()
        } else {
            self.in_flight.remove(position)
        };
        flight.expect("position is valid")
    }

    /// `Busy` when a submission in flight uses bytes of `range` of buffer `buffer` in a way
    /// that conflicts with a host `access` (the buffer's device uses: `buffer::DeviceUses`).
    pub fn host_conflict(
        &self,
        buffer: u64,
        range: &std::ops::Range<usize>,
        access: crate::Access,
    ) -> Result<(), Error> {
        for flight in &self.in_flight {
            for use_ in &flight.prepared.uses {
                let used = use_.view.range();
                if use_.buffer_id() == buffer
                    && crate::buffer::intersects(&used, range)
                    && use_.access.conflicts_with(access)
                {
                    return Err(Error::Busy(format!(
                        "buffer {buffer} bytes {}..{} is in use by submission {} ({:?})",
                        used.start, used.end, flight.submission, use_.access
                    )));
                }
            }
        }
        Ok(())
    }

    /// Submissions in flight.
    pub fn occupied(&self) -> usize {
        self.in_flight.len()
    }

    /// Submissions accepted so far.
    pub fn submissions(&self) -> u64 {
        self.next
    }

    /// Device operations numbered so far (those of every submission made), in submission
    /// order: the injected fault's `op=N` counts them.
    pub fn operations_numbered(&self) -> u64 {
        self.operations
    }

    /// The number [`Scheduler::next_submission`] will hand out next (the first is 1).
    pub fn peek_submission(&self) -> u64 {
        self.next + 1
    }

    /// Numbers a new submission: 1, 2, 3, ...
    pub fn next_submission(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    #[inline(always)]
    fn position(&self, submission: u64) -> Option<usize> {
        // The oldest first: on a runtime that is not backed up it is the only one in flight,
        // and a round trip looks it up four times.
        match self.in_flight.front() {
            Some(oldest) if oldest.submission == submission => Some(0),
            _ => self
                .in_flight
                .binary_search_by_key(&submission, |f| f.submission)
                .ok(),
        }
    }

    /// Takes a submission in flight; with `launch` (an untraced submission), first claims
    /// for `submit` the native graph it may launch at once ([`Scheduler::claim_launch`]).
    ///
    /// The doorbells ring after that claim, not before: a region `submit` claims leaves its
    /// queue's worker nothing to do, so the worker spinning on that doorbell's line is not
    /// sent two stores (its epoch, then the claim) on the path to the launch, each a transfer
    /// of the line between cores (issue 16: on the H200 host, TSC stamps around them read
    /// 0.27-0.34 µs for the enqueue and claim before, 0.18-0.21 µs after; BENCHMARKS.md).
    pub fn enqueue(
        &mut self,
        prepared: Arc<Prepared>,
        submission: u64,
        slot: usize,
        producers: Vec<Completion>,
        launch: bool,
    ) -> (Wake, Option<Task>) {
        let mut waits = Vec::new();
        for earlier in &self.in_flight {
            if !any_conflict(&earlier.prepared.uses, &prepared.uses) {
                continue;
            }
            if earlier.prepared.regions.len() >= TRACKED_REGIONS {
                // A large graph: its regions at the frontier's end, looked up per use
                // (`Tail`), not every pair of regions.
                for (r, region) in prepared.regions.iter().enumerate() {
                    let uses = prepared.cross_uses.of(r, &region.uses);
                    if uses.is_empty() {
                        continue;
                    }
                    let hazards = earlier.prepared.tail.hazards(uses);
                    for pair in hazards.chunk_by(|a, b| a.producer == b.producer) {
                        let er = pair[0].producer;
                        // Done: so is every region it depended on.
                        if earlier.states[er] == State::Done {
                            continue;
                        }
                        super::record::cross_wait(
                            prepared.tracer(),
                            submission,
                            r,
                            earlier.submission,
                            er,
                            pair,
                        );
                        waits.push((r, earlier.submission, er));
                    }
                }
                continue;
            }
            for (er, earlier_region) in earlier.prepared.regions.iter().enumerate() {
                if earlier.states[er].finished() {
                    continue;
                }
                for (r, region) in prepared.regions.iter().enumerate() {
                    let uses = prepared.cross_uses.of(r, &region.uses);
                    let hazards = hazards_between(&earlier_region.uses, uses);
                    if !hazards.is_empty() {
                        super::record::cross_wait(
                            prepared.tracer(),
                            submission,
                            r,
                            earlier.submission,
                            er,
                            &hazards,
                        );
                        waits.push((r, earlier.submission, er));
                    }
                }
            }
        }
        // By region, for `waits_over`'s binary search.
        if waits.len() > 1 {
            waits.sort_by_key(|&(region, ..)| region);
        }
        let regions = prepared.regions.len();
        let graph_ready = (regions >= TRACKED_REGIONS).then(|| GraphReady::new(&prepared, &waits));
        if graph_ready.is_some() && !waits.is_empty() {
            self.add_waiters(submission, &waits);
        }
        for region in &prepared.regions {
            self.pending[region.queue() as usize] += 1;
        }
        self.with_producers += usize::from(!producers.is_empty());
        let first_operation = self.operations + 1;
        self.operations += prepared.operations_before.last().copied().unwrap_or(0);
        self.in_flight.push_back(InFlight {
            submission,
            prepared,
            slot,
            producers,
            states: smallvec::smallvec![State::Pending; regions],
            waits,
            graph_ready,
            first_operation,
            unfinished: regions,
            status: None,
        });
        let mut wake = Wake::default();
        self.resolve_producers(&mut wake);
        let early = if launch {
            self.claim_launch(submission)
        } else {
            None
        };
        self.wake_queues(&mut wake);
        (wake, early)
    }

    /// Files `waits`, the cross waits of a new large submission `submission`, with the
    /// earlier submissions they name, to be ended there ([`Scheduler::waiters`]).
    #[inline(never)]
    fn add_waiters(&mut self, submission: u64, waits: &[(usize, u64, usize)]) {
        for &(region, earlier, earlier_region) in waits {
            let waiters = self.waiters.entry(earlier).or_default();
            waiters.insert((earlier_region, submission, region));
        }
    }

    /// Takes the cross waits of `flight`, a large submission leaving, out of the earlier
    /// submissions' [`Scheduler::waiters`] (those still in flight: it may leave first, failed
    /// or cancelled).
    #[inline(never)]
    fn remove_waiters(&mut self, flight: &InFlight) {
        for &(region, earlier, earlier_region) in &flight.waits {
            if let Some(waiters) = self.waiters.get_mut(&earlier) {
                waiters.remove(&(earlier_region, flight.submission, region));
                if waiters.is_empty() {
                    self.waiters.remove(&earlier);
                }
            }
        }
    }

    /// The cross waits on `region` of `submission` are over (it is done): the later large
    /// submissions' regions waiting on it count one wait fewer.
    #[inline(never)]
    fn end_waits_on(&mut self, submission: u64, region: usize) {
        let Some(waiters) = self.waiters.get(&submission) else {
            return;
        };
        let ended: Vec<(u64, usize)> = (waiters.range((region, 0, 0)..(region + 1, 0, 0)))
            .map(|&(_, later, later_region)| (later, later_region))
            .collect();
        for (later, later_region) in ended {
            self.end_wait(later, later_region);
        }
    }

    /// The cross waits on the regions of `flight`, which left, that were not done are over.
    #[inline(never)]
    fn end_waits_on_leaving(&mut self, flight: &InFlight) {
        let Some(waiters) = self.waiters.remove(&flight.submission) else {
            return;
        };
        for (region, later, later_region) in waiters {
            if flight.states[region] != State::Done {
                self.end_wait(later, later_region);
            }
        }
    }

    /// One cross wait of `region` of submission `later` is over.
    fn end_wait(&mut self, later: u64, region: usize) {
        if let Some(position) = self.position(later) {
            GraphReady::wait_over(&mut self.in_flight[position], region);
        }
    }

    #[inline(always)]
    fn ready(&self, position: usize, region: usize) -> bool {
        let flight = &self.in_flight[position];
        flight.prepared.regions[region]
            .dependencies
            .iter()
            .all(|&d| flight.states[d] == State::Done)
            && self.waits_over(&flight.waits, region)
    }

    /// Whether every region of an earlier submission that `region` waits for (`waits`: its
    /// submission's cross waits, by region) is done, or has left with its submission. A
    /// region that failed or was cancelled is waited for until its submission leaves: a
    /// large graph's waits name only the regions at its frontier's end
    /// ([`super::dependencies::Tail`]), which stand for the regions before them only once
    /// done (a region cancelled while one it depended on still runs ended first).
    #[inline(always)]
    fn waits_over(&self, waits: &[(usize, u64, usize)], region: usize) -> bool {
        if waits.is_empty() {
            return true;
        }
        let first = waits.partition_point(|&(waiting, ..)| waiting < region);
        waits[first..]
            .iter()
            .take_while(|&&(waiting, ..)| waiting == region)
            .all(|&(_, submission, r)| {
                self.position(submission)
                    .is_none_or(|p| self.in_flight[p].states[r] == State::Done)
            })
    }

    /// Claims the oldest ready region of `queue`, unless a region of `queue` is running.
    pub fn find_ready(&mut self, queue: Queue) -> Option<Task> {
        if self.launched & (1 << queue as u8) != 0 {
            return self.claim_launched(queue, false);
        }
        if self.running & (1 << queue as u8) != 0 || self.pending[queue as usize] == 0 {
            return None;
        }
        let (position, region) = self.next_ready(queue)?;
        Some(self.claim(position, region, false))
    }

    /// Claims, for a thread waiting on `submission`, a native region of it that an idle
    /// queue would run next anyway (the oldest ready region of that queue). Looks at the
    /// submission's own regions only, in order: most submissions a thread waits for are one
    /// region on an idle runtime, found at once.
    pub fn claim_own(&mut self, submission: u64) -> Option<Task> {
        if self.launched != 0
            && let Some(queue) = Queue::ALL.into_iter().find(|&q| {
                self.launched & (1 << q as u8) != 0 && self.launched_at[q as usize].0 == submission
            })
        {
            self.regions_run_by_waiters += 1;
            if let Some(position) = self.position(submission) {
                self.arm_deferral(position);
            }
            return self.claim_launched(queue, true);
        }
        let position = self.position(submission)?;
        let flight = &self.in_flight[position];
        if flight.status.is_some() {
            return None;
        }
        if position == 0 && flight.states.len() == 1 {
            // The oldest submission's only region is what its queue runs next when it is
            // ready (no earlier region can come first): no search.
            let region = &flight.prepared.regions[0];
            let queue = region.queue();
            let claimable = flight.states[0] == State::Pending
                && matches!(
                    region.kind,
                    RegionKind::NativeGraph | RegionKind::CopyBatch | RegionKind::NpuRun
                )
                && self.running & (1 << queue as u8) == 0
                && flight
                    .producers
                    .iter()
                    .all(|p| p.outcome().is_some_and(|s| s.succeeded()))
                && self.ready(0, 0);
            if !claimable {
                return None;
            }
            debug_assert_eq!(self.next_ready(queue), Some((0, 0)));
            self.regions_run_by_waiters += 1;
            self.arm_deferral(0);
            return Some(self.claim(0, 0, true));
        }
        let found = self.first_next_of(position, |region| {
            matches!(
                region.kind,
                RegionKind::NativeGraph | RegionKind::CopyBatch | RegionKind::NpuRun
            )
        })?;
        self.regions_run_by_waiters += 1;
        Some(self.claim(position, found, true))
    }

    /// Arms the deferred retirement ([`super::defer`]) of the submission at `position`, whose
    /// only region its waiter is claiming, when it is alone in flight with no producer and no
    /// outcome yet, and untraced (a traced retirement records its `SubmissionDone`): the
    /// waiter may then publish its success and leave its retirement to the next lock holder.
    /// Whether it runs the region itself or completes `submit`'s early launch, the retirement
    /// left is the same.
    fn arm_deferral(&mut self, position: usize) {
        if self.in_flight.len() == 1
            && let Some(flight) = self.in_flight.get(position)
            && flight.states.len() == 1
            && flight.producers.is_empty()
            && flight.status.is_none()
            && !flight.prepared.tracer().traces(flight.submission)
        {
            flight.prepared.defer.arm();
            self.deferred = Some(flight.submission);
        }
    }

    /// Claims, for `submit`, the region of `submission` that its queue would run next while
    /// that queue is idle, when it is a native graph whose launch is asynchronous (only for
    /// an untraced submission: a traced region's records are taken around the whole run on
    /// one thread): `submit` launches it ([`Region::launch`]) and reports with
    /// [`Scheduler::launched`] or, when the launch failed, [`Scheduler::finish`].
    fn claim_launch(&mut self, submission: u64) -> Option<Task> {
        let position = self.position(submission)?;
        let flight = &self.in_flight[position];
        if flight.status.is_some() || !flight.producers.is_empty() {
            return None;
        }
        if self.in_flight.len() == 1 && flight.states.len() == 1 {
            // Alone in flight with one region (no dependency, no cross wait, no producer):
            // it is what its queue runs next, when the queue is idle. No search.
            let region = &flight.prepared.regions[0];
            let idle = self.running & (1 << region.queue() as u8) == 0;
            if !(idle && region.launches_asynchronously()) {
                return None;
            }
            debug_assert_eq!(self.next_ready(region.queue()), Some((0, 0)));
            return Some(self.claim(0, 0, false));
        }
        let region = self.first_next_of(position, Region::launches_asynchronously)?;
        Some(self.claim(position, region, false))
    }

    /// The first region of the submission at `position` that an idle queue would run next
    /// ([`Scheduler::next_ready`]) and that `eligible` accepts. A small submission is looked
    /// through in region order, most often stopping at its first region (a round trip's); a
    /// large one ([`GraphReady`]) asks each idle queue for its next region once, not once a
    /// region: each queue has one next region. Asking every queue of a three-region graph
    /// made `host_visible`'s untraced round trip 1.27x slower (session 58).
    fn first_next_of(&self, position: usize, eligible: impl Fn(&Region) -> bool) -> Option<usize> {
        let flight = &self.in_flight[position];
        let regions = &flight.prepared.regions;
        let next_of = |region: usize| {
            let queue = regions[region].queue();
            flight.states[region] == State::Pending
                && eligible(&regions[region])
                && self.running & (1 << queue as u8) == 0
                && self.next_ready(queue) == Some((position, region))
        };
        if flight.graph_ready.is_none() {
            return (0..flight.states.len()).find(|&region| next_of(region));
        }
        let found = Queue::ALL
            .into_iter()
            .filter(|&queue| {
                self.running & (1 << queue as u8) == 0 && self.pending[queue as usize] != 0
            })
            .filter_map(|queue| match self.next_ready(queue) {
                Some((p, region)) if p == position && eligible(&regions[region]) => Some(region),
                _ => None,
            })
            .min();
        #[cfg(debug_assertions)]
        assert_eq!(
            found,
            (0..flight.states.len()).find(|&region| next_of(region)),
            "a submission's next region, by queue and by scan"
        );
        found
    }

    /// Records that `task`'s graph was launched (by `submit`): the region waits, its queue
    /// still running, for a thread to claim it and complete it. Its queue's doorbell shows it
    /// claimable, so that the worker completes it when no waiter claims it first.
    pub fn launched(&mut self, task: Task) -> Wake {
        let queue = task.prepared().regions[task.region].queue();
        let mut wake = Wake::default();
        let Some(position) = self.position(task.submission) else {
            return wake;
        };
        self.in_flight[position].states[task.region] = State::Launched;
        let bit = 1 << queue as u8;
        self.launched |= bit;
        self.launched_at[queue as usize] = (task.submission, task.region);
        self.ring(bit, self.shown(self.claimable()), 0);
        wake.queues = self.take_parked(bit);
        wake
    }

    /// Claims queue `queue`'s launched region, to complete it; `by_waiter` for a thread in
    /// `Completion::wait` (counted on the doorbell, see [`Doorbell`]).
    fn claim_launched(&mut self, queue: Queue, by_waiter: bool) -> Option<Task> {
        let bit = 1 << queue as u8;
        let (submission, region) = self.launched_at[queue as usize];
        self.launched &= !bit;
        self.ring(
            0,
            self.shown(self.claimable()),
            if by_waiter { bit } else { 0 },
        );
        let position = self.position(submission)?;
        let flight = &mut self.in_flight[position];
        debug_assert_eq!(flight.states[region], State::Launched);
        flight.states[region] = State::Running;
        let earlier = flight.prepared.operations_before[region];
        Some(Task {
            prepared: std::ptr::NonNull::from(&*flight.prepared),
            submission,
            region,
            first_operation: flight.first_operation + earlier,
            launched: true,
        })
    }

    /// The doorbells' claimable flags for queues with `mask`'s work: idle ones, and those
    /// whose running region is launched and awaits completion.
    fn shown(&self, mask: u8) -> u8 {
        mask & !self.running | self.launched
    }

    /// Claims a ready region; `by_waiter` for a thread in `Completion::wait` (counted on the
    /// doorbell, see [`Doorbell`]).
    fn claim(&mut self, position: usize, region: usize, by_waiter: bool) -> Task {
        let queue = self.in_flight[position].prepared.regions[region].queue();
        let bit = 1 << queue as u8;
        self.pending[queue as usize] -= 1;
        self.running |= bit;
        self.ring(
            0,
            self.shown(self.claimable()),
            if by_waiter { bit } else { 0 },
        );
        let flight = &mut self.in_flight[position];
        flight.states[region] = State::Running;
        if let Some(graph) = &mut flight.graph_ready {
            graph.claimed(queue, region);
        }
        let earlier = flight.prepared.operations_before[region];
        Task {
            prepared: std::ptr::NonNull::from(&*flight.prepared),
            submission: flight.submission,
            region,
            first_operation: flight.first_operation + earlier,
            launched: false,
        }
    }

    /// The oldest ready region of `queue`: (flight position, region).
    fn next_ready(&self, queue: Queue) -> Option<(usize, usize)> {
        let mut found = None;
        for (position, flight) in self.in_flight.iter().enumerate() {
            if !Self::runnable(flight) {
                continue;
            }
            let region = match &flight.graph_ready {
                // Its cross waits are over: it would not be in the set otherwise.
                Some(graph) => graph.ready[queue as usize].first().copied(),
                None => self.first_ready(position, queue),
            };
            if let Some(region) = region {
                found = Some((position, region));
                break;
            }
        }
        #[cfg(debug_assertions)]
        {
            let scanned = (self.in_flight.iter().enumerate())
                .filter(|(_, flight)| Self::runnable(flight))
                .find_map(|(position, _)| Some((position, self.first_ready(position, queue)?)));
            assert_eq!(
                found, scanned,
                "next region of {queue:?}, by the sets and by scan"
            );
            // The sets hold only regions with nothing left to wait for: a lookup never passes
            // over one (each did, before the cross waits were counted).
            for (position, flight) in self.in_flight.iter().enumerate() {
                let Some(graph) = &flight.graph_ready else {
                    continue;
                };
                for &region in graph.ready.iter().flatten() {
                    assert!(
                        flight.states[region] == State::Pending && self.ready(position, region),
                        "submission {} region {region} is in a ready set, not ready",
                        flight.submission
                    );
                }
            }
        }
        found
    }

    /// Whether `flight`'s regions may run: it has no outcome yet and every producer succeeded.
    #[inline(always)]
    fn runnable(flight: &InFlight) -> bool {
        flight.status.is_none()
            && flight
                .producers
                .iter()
                .all(|p| p.outcome().is_some_and(|s| s.succeeded()))
    }

    /// The first ready region of `queue` of the submission at `position`, looking at each of
    /// its regions (a small submission's way, and the debug check of the [`GraphReady`] sets).
    #[inline(always)]
    fn first_ready(&self, position: usize, queue: Queue) -> Option<usize> {
        let flight = &self.in_flight[position];
        for (region, state) in flight.states.iter().enumerate() {
            if *state == State::Pending
                && flight.prepared.regions[region].queue() == queue
                && self.ready(position, region)
            {
                return Some(region);
            }
        }
        None
    }

    /// Records the outcome of a region of `queue`. `native` says whether the error came
    /// from native execution (and may quarantine) rather than from a poisoned input.
    ///
    /// `own`: the submission whose [`Completion`] the calling thread holds and publishes
    /// itself should this retire it (a waiter running its own regions), see
    /// [`retire_own_slot`].
    pub fn finish(
        &mut self,
        (submission, region, queue): (u64, usize, Queue),
        result: Result<(), Error>,
        native: bool,
        own: Option<u64>,
    ) -> Wake {
        self.running &= !(1 << queue as u8);
        let mut wake = Wake::default();
        let Some(position) = self.position(submission) else {
            return wake;
        };
        let flight = &mut self.in_flight[position];
        flight.unfinished -= 1;
        match result {
            // Its `RegionDone` was recorded before the lock was taken (`record::region_ran`).
            Ok(()) => {
                flight.states[region] = State::Done;
                if flight.graph_ready.is_some() {
                    GraphReady::done(flight, region);
                }
                if !self.waiters.is_empty() {
                    self.end_waits_on(submission, region);
                }
            }
            Err(error) => {
                flight.states[region] = State::Failed;
                let prepared = &flight.prepared;
                if native && prepared.regions[region].uncertain(&error) {
                    let cause = format!(
                        "poisoned by submission {submission} region {region} (graph {}): {error}",
                        prepared.id
                    );
                    if let Some(resources) = prepared.regions[region].quarantined_resources() {
                        prepared.runtime.keep_quarantined(resources);
                    }
                    if !prepared.quarantined.swap(true, Ordering::AcqRel) {
                        super::record::quarantine(
                            prepared.tracer(),
                            prepared.id,
                            (submission, region),
                            &error,
                        );
                    }
                    for use_ in prepared.regions[region]
                        .uses
                        .iter()
                        .filter(|u| u.access.writes())
                    {
                        use_.view.buffer().storage.poison(&cause);
                        super::record::poison(
                            prepared.tracer(),
                            (submission, region),
                            use_,
                            &cause,
                        );
                    }
                }
                let error = Arc::new(error);
                super::record::region_done(
                    flight.prepared.tracer(),
                    submission,
                    region,
                    &Status::Failed(error.clone()),
                );
                if flight.status.is_none() {
                    flight.status = Some(Status::Failed(error.clone()));
                }
                let reason = format!("region {region} of submission {submission} failed: {error}");
                Self::cancel_pending(flight, &mut self.pending, &reason);
            }
        }
        if self.in_flight[position].unfinished == 0 {
            let own = own == Some(submission);
            self.retire(position, &mut wake, own);
        }
        self.resolve_producers(&mut wake);
        self.wake_queues(&mut wake);
        wake
    }

    /// Cancels `flight`'s pending regions, counting them off `pending`.
    fn cancel_pending(flight: &mut InFlight, pending: &mut [u32; 5], reason: &str) {
        let cancelled = Status::Cancelled(Arc::new(Error::Cancelled(reason.to_string())));
        if let Some(graph) = &mut flight.graph_ready {
            graph.ready.iter_mut().for_each(BTreeSet::clear);
        }
        for (region, state) in flight.states.iter_mut().enumerate() {
            if *state == State::Pending {
                *state = State::Cancelled;
                pending[flight.prepared.regions[region].queue() as usize] -= 1;
                flight.unfinished -= 1;
                super::record::region_done(
                    flight.prepared.tracer(),
                    flight.submission,
                    region,
                    &cancelled,
                );
            }
        }
    }

    /// Cancels, transitively, submissions whose producer failed or was cancelled (after
    /// every enqueue and finish: with no producers in flight, one inlined branch).
    #[inline]
    fn resolve_producers(&mut self, wake: &mut Wake) {
        if self.with_producers != 0 {
            self.cancel_after_failed_producers(wake);
        }
    }

    /// [`Scheduler::resolve_producers`] with producers in flight.
    #[inline(never)]
    fn cancel_after_failed_producers(&mut self, wake: &mut Wake) {
        loop {
            let failed = self.in_flight.iter().position(|flight| {
                flight.status.is_none()
                    && flight
                        .producers
                        .iter()
                        .any(|p| p.outcome().is_some_and(|s| !s.succeeded()))
            });
            let Some(position) = failed else { return };
            let flight = &mut self.in_flight[position];
            let (producer, status) = flight
                .producers
                .iter()
                .find_map(|p| {
                    p.outcome()
                        .filter(|s| !s.succeeded())
                        .map(|s| (p.submission(), s))
                })
                .expect("found above");
            let cause = match status {
                Status::Failed(error) => format!("producer submission {producer} failed: {error}"),
                // The producer's own cause, without its `cancelled:` prefix once more.
                Status::Cancelled(error) => match &*error {
                    Error::Cancelled(cause) => {
                        format!("producer submission {producer} was cancelled: {cause}")
                    }
                    other => format!("producer submission {producer} was cancelled: {other}"),
                },
                Status::Succeeded => unreachable!("filtered"),
            };
            Self::cancel_pending(flight, &mut self.pending, &cause);
            flight.status = Some(Status::Cancelled(Arc::new(Error::Cancelled(cause))));
            if flight.unfinished == 0 {
                self.retire(position, wake, false);
            }
        }
    }

    /// Retires the submission at `position`; `own`: the finishing thread holds its
    /// completion and publishes it itself ([`retire_own_slot`]).
    fn retire(&mut self, position: usize, wake: &mut Wake, own: bool) {
        let flight = self.take_flight(position);
        // The waits on its regions that were never done end as it leaves (`waits_over`);
        // its own waits on earlier ones leave with it.
        if !self.waiters.is_empty() {
            self.end_waits_on_leaving(&flight);
            if flight.graph_ready.is_some() {
                self.remove_waiters(&flight);
            }
        }
        #[cfg(debug_assertions)]
        for (earlier, waiters) in &self.waiters {
            assert!(
                self.position(*earlier).is_some(),
                "waits on {earlier}, gone"
            );
            for &(_, later, _) in waiters {
                assert!(
                    self.position(later).is_some(),
                    "a wait of submission {later}, gone, kept on {earlier}"
                );
            }
        }
        self.with_producers -= usize::from(!flight.producers.is_empty());
        let status = flight.status.clone().unwrap_or(Status::Succeeded);
        let (occupied, signals) = (&flight.prepared.occupied, &flight.prepared.signals);
        let signal = if own {
            retire_own_slot(occupied, flight.slot, signals, status.clone());
            wake.own_retired = true;
            None
        } else {
            Some(retire_slot(occupied, flight.slot, signals, status.clone()))
        };
        // Recorded and dropped after the lock: it may hold the last reference to the runtime.
        let retired = Retired {
            prepared: flight.prepared,
            submission: flight.submission,
            status,
        };
        wake.push(retired, signal);
    }

    /// Rings the doorbells of the queues with pending work, and marks in `wake` those whose
    /// worker is parked, for a notification once the lock is dropped.
    fn wake_queues(&mut self, wake: &mut Wake) {
        let pending = self.pending_queues();
        self.ring(pending, self.shown(pending), 0);
        wake.queues = self.take_parked(pending);
    }

    /// The doorbells' claimable flags, as last stored.
    fn claimable(&self) -> u8 {
        self.claimable
    }

    /// Moves the epoch of the queues in `ring`, counts a waiter's claim on the queues in
    /// `claimed` and shows bit `q` of `claimable` on queue `q`'s doorbell, storing only the
    /// words that change: the spinning workers keep their copies of the other lines.
    fn ring(&mut self, ring: u8, claimable: u8, claimed: u8) {
        let mut changed = ring | claimed | (claimable ^ self.claimable);
        self.claimable = claimable;
        while changed != 0 {
            let q = changed.trailing_zeros() as usize;
            changed &= changed - 1;
            let rung = &mut self.rung[q];
            let word = Doorbell::rung(
                *rung,
                ring >> q & 1 != 0,
                claimed >> q & 1 != 0,
                claimable >> q & 1 != 0,
            );
            // Release, not SeqCst (an xchg on x86, twice per round trip): no decision
            // rests on the doorbell's order against another location; a worker parks
            // only after re-checking the state under the scheduler lock.
            self.doorbells[q].word.store(word, Ordering::Release);
            *rung = word;
        }
    }

    /// Takes the parked bits of `queues` (see [`Parked::take`]), counting them in
    /// [`Scheduler::worker_wakes`].
    fn take_parked(&mut self, queues: u8) -> u8 {
        let woken = self.parked.take(queues);
        self.worker_wakes += u64::from(woken.count_ones());
        woken
    }

    fn pending_queues(&self) -> u8 {
        #[cfg(debug_assertions)]
        assert_eq!(self.pending, self.count_pending(), "pending counts drifted");
        let mut mask = 0u8;
        for (q, &count) in self.pending.iter().enumerate() {
            if count != 0 {
                mask |= 1 << q;
            }
        }
        mask
    }

    /// The `pending` counts recounted from the region states (a debug check).
    #[cfg(debug_assertions)]
    fn count_pending(&self) -> [u32; 5] {
        let mut pending = [0; 5];
        for flight in &self.in_flight {
            for (state, region) in flight.states.iter().zip(&flight.prepared.regions) {
                if *state == State::Pending {
                    pending[region.queue() as usize] += 1;
                }
            }
        }
        pending
    }
}

#[cfg(all(test, not(feature = "model-check")))]
mod tests {
    use super::{Doorbell, Rung};
    use std::sync::atomic::Ordering;

    #[test]
    fn a_doorbell_word_keeps_its_epoch_claims_and_flag_apart() {
        let doorbell = Doorbell::default();
        let read = |word| {
            doorbell.word.store(word, Ordering::Relaxed);
            doorbell.load()
        };
        let rung = |epoch, claims, claimable| Rung {
            epoch,
            claims,
            claimable,
        };
        let word = Doorbell::rung(0, true, false, true);
        assert_eq!(read(word), rung(1, 0, true));
        let word = Doorbell::rung(word, false, true, false);
        assert_eq!(read(word), rung(1, 1, false));
        // The claims count wraps without touching the epoch.
        let mut word = word;
        for _ in 0..Doorbell::CLAIMS_MASK {
            word = Doorbell::rung(word, false, true, false);
        }
        assert_eq!(read(word), rung(1, 0, false));
        assert_eq!(
            read(Doorbell::rung(word, true, true, true)),
            rung(2, 1, true)
        );
    }
}
