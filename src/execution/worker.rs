//! The workers: one thread per queue claims ready regions from the scheduler, runs them
//! without its lock and records their outcomes; a thread in [`crate::Completion::wait`]
//! runs its own submission's ready native regions the same way ([`help`]).
//!
//! A worker that sees new work leaves it to a waiting thread for a claim grace
//! ([`CLAIM_GRACE`], [`Grace`]) of the waiter's own time: time a waiter spends in trace hooks
//! while it runs its regions ([`WaiterHooks`]) does not count, so that tracing does not move
//! a submission's regions from its waiting thread onto the workers.
//!
//! An idle worker looks at its queue's doorbell every [`POLL`], and not at all during a
//! grace: the doorbell's line is stored to by the thread that submits and claims, and each
//! look by the worker in between costs that thread a transfer of the line. After a grace the
//! doorbell's count of waiters' claims says whether claimable work is what the grace was
//! for (no waiter claimed: the worker takes it) or came since while waiters were claiming
//! theirs (a grace of its own).

use super::scheduler::{Doorbell, Rung, Task};
use super::shared::Core;
use super::types::Queue;
use crate::{Completion, Error};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A queue's worker: claims ready regions, runs them without the lock, records outcomes.
///
/// When idle it first spins for [`crate::sync::SPIN`] looking at its queue's [`Doorbell`]
/// every [`POLL`] (a submission arriving then is picked up with no syscall on either side),
/// leaving new work for [`CLAIM_GRACE`] to a thread that waits for it, then re-checks the
/// state; after a whole spin without new work it parks.
pub(crate) fn worker(core: Arc<Core>, queue: Queue) {
    // Counted for `sync::relax` on the software device only (see there why not on a GPU).
    let software = core.context().device.info().backend == "sim";
    let _spinner = software.then(crate::sync::Spinner::new);
    let gpu_queue = matches!(
        queue,
        Queue::GpuUpload | Queue::GpuCompute | Queue::GpuDownload
    );
    let spin = if gpu_queue && !software && spare_cpus() {
        GPU_IDLE_SPIN
    } else {
        crate::sync::SPIN
    };
    let doorbell = core.doorbell(queue);
    let mut state = core.scheduler();
    let mut spun = false;
    loop {
        if let Some(task) = state.find_ready(queue) {
            drop(state);
            run(&core, task, None);
            spun = false;
            state = core.scheduler();
            continue;
        }
        if core.stopping() && state.occupied() == 0 {
            return;
        }
        if !spun {
            let epoch = doorbell.epoch();
            drop(state);
            spun = !idle_spin(&core, doorbell, epoch, spin);
            state = core.scheduler();
            continue;
        }
        // A waker that changed the state after the check above sees the parked flag and
        // notifies; one that changed it before was seen by `find_ready`.
        state = core.park(queue, state);
        spun = false;
    }
}

/// How long a worker that sees new work in its queue leaves it to a thread waiting for it
/// (see [`help`]) before taking the scheduler lock itself, in the waiter's own time (see
/// [`Grace`]). A waiter that calls `wait` right after `submit` claims within a few hundred
/// nanoseconds; the worker's lock would only pull the scheduler's cache lines away from it.
/// Work nobody waits for starts this much later.
///
/// A submit rings every queue its submission has regions on, and the waiter runs them one
/// after another: the grace a queue's worker gives starts at that ring, so it covers the
/// waiter's regions before the one on its queue.
const CLAIM_GRACE: Duration = Duration::from_micros(1);

/// Spin-loop hints between two clock reads in a worker's claim grace.
const GRACE_SPINS: u32 = 4;

/// The time threads in [`crate::Completion::wait`] spent in trace hooks while running their
/// own regions ([`run`] on a waiter), for the workers' [`Grace`]: one word per queue, the
/// total ns of finished hooks above [`WaiterHooks::OPEN_BITS`] and the number of hooks under
/// way below; a worker reads their sum.
///
/// Only traced waiters write it (four writes a region: entering and leaving the hooks before
/// and after its run); workers read it when their grace starts and once it has passed. An
/// untraced runtime never writes it, so the workers' reads stay in their caches.
///
/// A queue's word has one writer at a time: a waiter is in a region's hooks only while it
/// holds the region's queue (claimed, until `finish` releases it under the scheduler lock,
/// which orders one holder's writes before the next holder's), so it is written with a plain
/// load and store, not a locked read-modify-write: the waiter's twelve hook marks a
/// three-region submission no longer each drain its store buffer (session 16).
#[derive(Debug, Default)]
pub(crate) struct WaiterHooks {
    words: [AtomicU64; Queue::ALL.len()],
}

/// What [`WaiterHooks::load`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct HookTime {
    /// Total ns of the hooks that ended (wrapping at 2^48).
    ended_ns: u64,
    /// Hooks under way.
    open: u64,
}

impl WaiterHooks {
    /// Bits of a word that count the hooks under way (at most one: a queue's region at a
    /// time).
    const OPEN_BITS: u32 = 16;
    const NS_MASK: u64 = u64::MAX >> Self::OPEN_BITS;

    /// Adds `delta` to `queue`'s word, which only the calling thread writes now (see the type
    /// docs).
    fn add(&self, queue: Queue, delta: u64) {
        let word = &self.words[queue as usize];
        word.store(
            word.load(Ordering::Relaxed).wrapping_add(delta),
            Ordering::Relaxed,
        );
    }

    /// A waiter holding `queue` enters a trace hook.
    fn enter(&self, queue: Queue) {
        self.add(queue, 1);
    }

    /// A waiter holding `queue` leaves the trace hook it entered, after `ns` in it.
    fn leave(&self, queue: Queue, ns: u64) {
        self.add(queue, (ns << Self::OPEN_BITS).wrapping_sub(1));
    }

    /// The sum of the queues' words.
    fn load(&self) -> HookTime {
        let open_mask = (1 << Self::OPEN_BITS) - 1;
        self.words
            .iter()
            .map(|word| word.load(Ordering::Relaxed))
            .fold(HookTime::default(), |sum, word| HookTime {
                ended_ns: sum.ended_ns.wrapping_add(word >> Self::OPEN_BITS) & Self::NS_MASK,
                open: sum.open + (word & open_mask),
            })
    }
}

/// A worker's claim grace: [`CLAIM_GRACE`] of the waiters' own time, that is wall time less
/// the time waiters spent in trace hooks meanwhile ([`WaiterHooks`]), so that a traced waiter
/// claims its regions as an untraced one does. While a waiter is in a hook the grace does not
/// end; a hook that ends adds its length to the grace (all of it, also a part before the grace
/// started). The grace ends at the latest after [`crate::sync::SPIN`]: work nobody waits for
/// starts no later than that beside busy traced waiters.
#[derive(Debug)]
struct Grace {
    start_ns: u64,
    end_ns: u64,
    /// The waiters' hook time already added to `end_ns`.
    counted_ns: u64,
}

impl Grace {
    fn new(now_ns: u64, hooks: HookTime) -> Self {
        Self {
            start_ns: now_ns,
            end_ns: now_ns + CLAIM_GRACE.as_nanos() as u64,
            counted_ns: hooks.ended_ns,
        }
    }

    /// Whether the grace is over at `now_ns`; `hooks` is read only once its end has passed.
    fn over(&mut self, now_ns: u64, hooks: impl FnOnce() -> HookTime) -> bool {
        if now_ns.saturating_sub(self.start_ns) >= crate::sync::SPIN.as_nanos() as u64 {
            return true;
        }
        if now_ns < self.end_ns {
            return false;
        }
        let hooks = hooks();
        if hooks.open != 0 {
            return false;
        }
        let added = hooks.ended_ns.wrapping_sub(self.counted_ns) & WaiterHooks::NS_MASK;
        self.counted_ns = hooks.ended_ns;
        self.end_ns += added;
        now_ns >= self.end_ns
    }
}

/// How long the worker of a GPU queue (upload, compute, download) of a GPU runtime spins idle
/// before it parks, where other workers spin [`crate::sync::SPIN`]. A parked worker costs
/// the next `submit` that rings it a notification: a futex wake on the submitting thread
/// and, where the worker's CPU sleeps, an inter-processor interrupt (a hypervisor exit in a
/// VM). An early launch rings its queue's worker even though its waiter completes it: a
/// graph longer than the spin paid that on every round trip (`hundred_kernels`, 151 µs a
/// launch: +2.4 µs against raw CUDA on the H100 host, BENCHMARKS.md session 41), which
/// CUDA, whose `cuStreamSynchronize` spins for the whole wait under
/// `cudaDeviceScheduleAuto`, never pays. Spinning 1 ms bounds that cost to a fraction of a
/// percent of the round trip that follows, for a worker's spin of at most 1 ms of one CPU
/// after the queue's last work. Only where the process may use [`SPARE_CPUS`] CPUs or more
/// ([`spare_cpus`]): on fewer, three workers spinning a millisecond after each region would
/// take CPUs from the application's threads (GPU workers do not yield, see
/// [`crate::sync::relax`]), and they spin 50 µs as before.
const GPU_IDLE_SPIN: Duration = Duration::from_millis(1);

/// CPUs the process may use for [`GPU_IDLE_SPIN`]: the three GPU queues' workers, the
/// submitting thread and the trace's writer and hashing threads, with some left over.
const SPARE_CPUS: usize = 8;

/// Whether the process may use [`SPARE_CPUS`] CPUs or more (`available_parallelism`:
/// affinity and cgroup quota included).
fn spare_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= SPARE_CPUS)
}

/// A worker's spin while its queue has nothing to claim, without the scheduler lock: returns
/// true once its queue may hold unclaimed work that no waiter takes (or at shutdown), false
/// after a whole `spin` without a ring (the worker then parks).
fn idle_spin(core: &Core, doorbell: &Doorbell, mut epoch: u64, spin: Duration) -> bool {
    loop {
        let Some(rung) = poll(core, doorbell, epoch, spin) else {
            return false;
        };
        if core.stopping() {
            return true;
        }
        if !rung.claimable {
            epoch = rung.epoch;
            continue;
        }
        match leave_to_waiter(core, doorbell, rung) {
            Some(later) => epoch = later.epoch,
            None => return true,
        }
    }
}

/// How often an idle worker looks at its queue's doorbell. Between two looks it spins on
/// its own clock, off the doorbell's line: a look at the line after a store to it takes the
/// line from the thread that rings and claims, whose next store to it then waits for the
/// line to come back. Watched without pause, that was twice a round trip (session 33, on the
/// H200 host: `submit_to_complete` 446-503 ns watched, 281-309 ns looked at every 500 ns).
/// Work nobody waits for starts at most this much later, beside the [`CLAIM_GRACE`] it is
/// left to waiters anyway.
const POLL: Duration = Duration::from_nanos(500);

/// Looks at the doorbell every [`POLL`] until its epoch moves from `epoch` or the runtime
/// stops; `None` after `spin` without either.
fn poll(core: &Core, doorbell: &Doorbell, epoch: u64, spin: Duration) -> Option<Rung> {
    let poll_ns = POLL.as_nanos() as u64;
    let start = crate::clock::now_ns();
    let mut next = start;
    loop {
        let now = crate::clock::now_ns();
        if now >= next {
            let rung = doorbell.load();
            if rung.epoch != epoch || core.stopping() {
                return Some(rung);
            }
            if now.saturating_sub(start) >= spin.as_nanos() as u64 {
                return None;
            }
            next = now + poll_ns;
        }
        crate::sync::relax();
    }
}

/// Leaves the claimable work that `rung` shows to a waiting thread for a [`Grace`], without
/// looking at the doorbell meanwhile (a look would take its line from the waiter, whose
/// claim stores to it). Then: `Some` with the doorbell when nothing is claimable (a waiter
/// claimed the work), `None` when the worker is to claim it. Work that is claimable after a
/// grace in which waiters claimed on this queue (the doorbell's claims count moved) came
/// since, and gets a grace of its own; work still claimable after a grace without such a
/// claim is the worker's.
fn leave_to_waiter(core: &Core, doorbell: &Doorbell, mut rung: Rung) -> Option<Rung> {
    let hooks = core.waiter_hooks();
    loop {
        let mut grace = Grace::new(crate::clock::now_ns(), hooks.load());
        while !grace.over(crate::clock::now_ns(), || hooks.load()) {
            for _ in 0..GRACE_SPINS {
                crate::sync::relax();
            }
        }
        match after_grace(rung, doorbell.load()) {
            AfterGrace::Claimed(now) => return Some(now),
            AfterGrace::Again(now) if !core.stopping() => rung = now,
            AfterGrace::Again(_) | AfterGrace::Take => return None,
        }
    }
}

/// What a worker makes of its doorbell after a grace that began at `before` ([`leave_to_waiter`]).
#[derive(Debug, PartialEq, Eq)]
enum AfterGrace {
    /// Nothing claimable: a waiter claimed the work.
    Claimed(Rung),
    /// Claimable, and waiters claimed on the queue meanwhile: the work came since, and gets a
    /// grace of its own.
    Again(Rung),
    /// Claimable, and no waiter claimed meanwhile: the worker takes it.
    Take,
}

fn after_grace(before: Rung, now: Rung) -> AfterGrace {
    if !now.claimable {
        AfterGrace::Claimed(now)
    } else if now.claims != before.claims {
        AfterGrace::Again(now)
    } else {
        AfterGrace::Take
    }
}

/// Runs, on the thread waiting for `submission`, its native regions that are ready while their
/// queue is idle, one after another, and completes the one `submit` launched (see
/// [`Scheduler::claim_own`]); returns when none is (the workers run the rest).
///
/// `signal` is the waiter's completion's: when the waiter's region retires the submission,
/// the waiter publishes it through that signal (see [`super::completion::retire_own_slot`]).
pub(crate) fn help(
    core: &Core,
    signal: &super::completion::Signal,
    submission: u64,
    done: impl Fn() -> bool,
) {
    let (mut ran, mut fruitless) = (false, 0);
    loop {
        let mut claimed = false;
        while !done() {
            let task = core.scheduler().claim_own(submission);
            let Some(task) = task else { break };
            let waiter = Waiter {
                hooks: core.waiter_hooks(),
                signal,
                submission,
            };
            run(core, task, Some(waiter));
            claimed = true;
        }
        ran |= claimed;
        fruitless = if claimed { 0 } else { fruitless + 1 };
        // A waiter that was running its submission's regions and found the next one taken (a
        // worker claimed it while this thread was off its core) follows the doorbells for a
        // spin and claims again when one moves (a region finished): before, it parked until
        // the submission retired, and the workers handed each of a large graph's remaining
        // regions to one another, a thread switch each on a loaded machine (`regions 100000
        // 1 8` took 4-16 s in some runs, 0.3 s in the others; session 60). It parks after
        // [`FOLLOW_FRUITLESS`] moves that gave it nothing: other submissions' work moves the
        // doorbells too, and a long region of its own on a worker is no reason to spin.
        if !ran
            || fruitless > FOLLOW_FRUITLESS
            || done()
            || !doorbell_moved_within_spin(core, &done)
            || done()
        {
            return;
        }
    }
}

/// Doorbell moves in a row after which a following waiter found nothing to claim, before it
/// parks ([`help`]).
const FOLLOW_FRUITLESS: u32 = 2;

/// Spins at most [`crate::sync::SPIN`] until `done` or a queue's doorbell moves; whether one
/// moved.
fn doorbell_moved_within_spin(core: &Core, done: &impl Fn() -> bool) -> bool {
    let epochs = Queue::ALL.map(|queue| core.doorbell(queue).epoch());
    let moved = || {
        (Queue::ALL.iter().zip(&epochs))
            .any(|(&queue, &epoch)| core.doorbell(queue).epoch() != epoch)
    };
    crate::sync::spin_until(|| done() || moved()) && moved()
}

/// The thread in [`crate::Completion::wait`] that runs a region, as [`run`] needs it.
struct Waiter<'a> {
    /// Where its trace hooks' time is counted ([`WaiterHooks`]).
    hooks: &'a WaiterHooks,
    /// Its completion's signal, and the submission: published by it when its region
    /// retires the submission.
    signal: &'a super::completion::Signal,
    submission: u64,
}

thread_local! {
    /// [`run`]'s buffer of a region's operation times, kept between regions.
    static OP_SPANS: std::cell::Cell<Vec<crate::gpu::OpSpan>> = const {
        std::cell::Cell::new(Vec::new())
    };
}

/// Runs one claimed region and records its outcome. On a waiting thread, `hooks` counts the
/// time its trace hooks take ([`WaiterHooks`]).
fn run(core: &Core, task: Task, waiter: Option<Waiter<'_>>) {
    let hooks = waiter.as_ref().map(|w| w.hooks);
    let region = &task.prepared().regions[task.region];
    let queue = region.queue();
    // Host times are read only for the trace: an untraced region pays no clock reads.
    let context = core.context();
    // One look at the trace's range a region: every hook below records with this one.
    let hook = context.tracer.submission_hook(task.submission);
    let traced = hook.is_some();
    let hooks = hooks.filter(|_| traced);
    // On CUDA, the region as an NVTX range on the thread that runs it (one load when off),
    // before the hooks: never inside the region's recorded time.
    let _nvtx = crate::nvtx::range(|| {
        let (queue, kind) = (queue.name(), region.kind);
        format!(
            "hrx {queue} {kind:?} submission {} region {}",
            task.submission, task.region
        )
    });
    let mut start_ns = 0;
    if let Some(hook) = &hook {
        let entered_ns = crate::clock::now_ns();
        if let Some(hooks) = hooks {
            hooks.enter(queue);
        }
        // A capture still reading an earlier output this region overwrites: waited for here,
        // as a span of its own, so the wait is never part of the region's time. Then its
        // start, before the start time is read: a hang or a crash inside the region leaves
        // it in the trace, and recording it is not part of the region's time.
        let uses = (task.submission, task.region, &region.uses[..]);
        super::record::region_starting(hook, uses, entered_ns);
        start_ns = crate::clock::now_ns();
        if let Some(hooks) = hooks {
            hooks.leave(queue, start_ns.saturating_sub(entered_ns));
        }
    }
    // A launched region's inputs were checked by `submit` before its launch.
    let checked = if task.launched {
        Ok(())
    } else {
        region.check_inputs()
    };
    // The region's operation times, where its backend times them (tracing on): a buffer
    // kept per thread, so that timing a region allocates nothing; an untraced region's
    // streams time nothing, so it takes an empty one (no allocation, no thread-local). A
    // thread whose thread-locals are being destroyed (a wait in another thread-local's
    // destructor) takes a new one: `with` would panic there, and a panic in a thread-local's
    // destructor aborts the process.
    let mut ops = if traced {
        OP_SPANS.try_with(std::cell::Cell::take).unwrap_or_default()
    } else {
        Vec::new()
    };
    ops.clear();
    let (result, native) = match checked {
        Err(error) => (Err(error), false),
        Ok(()) => {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::fault::numbered(task.first_operation, || {
                    if task.launched {
                        region.complete_launch(context, &mut ops)
                    } else {
                        region.run(context, &mut ops)
                    }
                })
            }));
            let result = run.unwrap_or_else(|_| {
                Err(Error::DeviceLost(
                    "a native callback panicked; its effects are unknown".into(),
                ))
            });
            (result, true)
        }
    };
    if let Some(hook) = &hook {
        let end_ns = crate::clock::now_ns();
        if let Some(hooks) = hooks {
            hooks.enter(queue);
        }
        let fault = result
            .is_err()
            .then(|| context.faults.take_report())
            .flatten();
        super::record::region_ran(
            hook,
            (task.submission, task.region, region),
            queue == Queue::Host,
            (start_ns, end_ns),
            (&result, &ops),
            fault,
        );
        if let Some(hooks) = hooks {
            hooks.leave(queue, crate::clock::now_ns().saturating_sub(end_ns));
        }
    }
    if traced {
        // Gone with the thread's other thread-locals: dropped here instead.
        let _ = OP_SPANS.try_with(|spans| spans.set(ops));
        // Its reads are done: host writes' hashes parked until then start now, after its
        // end time was read (`trace::Captures::park`), in or out of a recorded range.
        for use_ in region.uses.iter().filter(|u| u.access.reads()) {
            use_.view.buffer().storage.captures.release();
        }
    }
    let result = result.map(|_| ());
    if let (Ok(()), Some(waiter), false) = (&result, &waiter, traced)
        && settle_own(&task, waiter)
    {
        return;
    }
    // The task's last use: `finish` may retire the submission and let its prepared graph go.
    let (submission, region) = (task.submission, task.region);
    let own = waiter.as_ref().map(|w| w.submission);
    let wake = core
        .scheduler()
        .finish((submission, region, queue), result, native, own);
    let publish = wake.own_retired;
    core.wake(wake);
    if let (true, Some(waiter)) = (publish, waiter) {
        waiter.signal.publish();
    }
}

/// A waiter's deferred retirement of its own submission, whose one region the waiter ran or
/// completed successfully ([`super::defer`]): the success recorded and
/// published, the retirement left to the next scheduler lock holder (a host access of its
/// buffers, which takes that lock, included). Whether the waiter took the deferral; if not,
/// it retires through `finish`.
fn settle_own(task: &Task, waiter: &Waiter<'_>) -> bool {
    let prepared = task.prepared();
    if !prepared.defer.armed() {
        return false;
    }
    // Once taken, a lock holder may retire the submission and let the task's graph go: the
    // task is not used after this.
    if !prepared.defer.take() {
        return false;
    }
    waiter.signal.publish_success();
    true
}

/// Launches, on the thread in `submit`, the region it claimed with
/// [`super::scheduler::Scheduler::claim_launch`] (see `execution::submit`): on success the
/// region waits, launched, for the thread that claims it next to complete it; a refused
/// input or a failed launch is its outcome at once, as in [`run`]. `completion` makes the
/// submission's [`Completion`]: called after the launch and before the region is shown to
/// any other thread (which could then retire the submission).
pub(crate) fn launch(
    core: &Core,
    task: Task,
    completion: impl FnOnce() -> Completion,
) -> Completion {
    let region = &task.prepared().regions[task.region];
    let (result, native) = match region.check_inputs() {
        Err(error) => (Err(error), false),
        Ok(()) => {
            let launched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::fault::numbered(task.first_operation, || region.launch())
            }));
            let result = launched.unwrap_or_else(|_| {
                Err(Error::DeviceLost(
                    "a native launch panicked; its effects are unknown".into(),
                ))
            });
            (result, true)
        }
    };
    let completion = completion();
    let wake = match result {
        Ok(()) => core.scheduler().launched(task),
        Err(error) => {
            let key = (task.submission, task.region, region.queue());
            core.scheduler().finish(key, Err(error), native, None)
        }
    };
    core.wake(wake);
    completion
}

#[cfg(test)]
mod tests {
    use super::{AfterGrace, CLAIM_GRACE, Grace, HookTime, Queue, Rung, WaiterHooks, after_grace};
    use crate::{Placement, Runtime, RuntimeOptions};
    use std::time::Duration;

    fn rung(epoch: u64, claims: u64, claimable: bool) -> Rung {
        Rung {
            epoch,
            claims,
            claimable,
        }
    }

    #[test]
    fn after_a_grace_the_worker_takes_only_work_no_waiter_was_claiming_beside() {
        let before = rung(7, 3, true);
        // A waiter claimed the work: nothing to take.
        assert_eq!(
            after_grace(before, rung(7, 4, false)),
            AfterGrace::Claimed(rung(7, 4, false))
        );
        // Still claimable, no waiter claim on the queue meanwhile (more rings or none): the
        // worker's, so that work nobody waits for is never left to waiters for ever.
        assert_eq!(after_grace(before, rung(7, 3, true)), AfterGrace::Take);
        assert_eq!(after_grace(before, rung(12, 3, true)), AfterGrace::Take);
        // Waiters claimed meanwhile and new work came: a grace of its own.
        assert_eq!(
            after_grace(before, rung(8, 4, true)),
            AfterGrace::Again(rung(8, 4, true))
        );
    }

    /// Work nobody waits for is run by the worker while another thread's round trips on the
    /// same queue keep a waiter claiming: a waiter claims only what its queue would run next,
    /// so the older unwaited region stops those claims and the worker's grace ends.
    #[test]
    fn unwaited_work_runs_beside_a_waiters_round_trips_on_its_queue() {
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let (a, b) = (
            rt.buffer(4096, Placement::GpuLocal).unwrap(),
            rt.buffer(4096, Placement::GpuLocal).unwrap(),
        );
        let mut g = rt.graph();
        g.fill(a.whole(), 1).unwrap();
        let round_trip = g.prepare().unwrap();
        let mut g = rt.graph();
        g.fill(b.whole(), 2).unwrap();
        let unwaited = g.prepare().unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // A hang guard, not a time bound: the other thread ends this loop.
                let deadline = std::time::Instant::now() + Duration::from_secs(120);
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "unwaited work starved"
                    );
                    round_trip.submit().unwrap().wait().unwrap();
                }
            });
            let _done = crate::execution::test_util::SetOnDrop(&done);
            for _ in 0..50 {
                let completion = crate::execution::test_util::submit_when_free(&unwaited);
                // Never `wait`: only a worker runs it.
                while !completion.is_complete() {
                    std::hint::spin_loop();
                }
                assert!(completion.status().unwrap().succeeded());
            }
        });
        assert_eq!(b.to_vec().unwrap(), vec![2; 4096]);
    }

    const GRACE_NS: u64 = CLAIM_GRACE.as_nanos() as u64;

    fn hooks(ended_ns: u64, open: u64) -> HookTime {
        HookTime { ended_ns, open }
    }

    /// The closure a grace must not call before its end (it reads the shared word).
    fn unread() -> HookTime {
        panic!("the waiters' hooks were read before the grace's end")
    }

    #[test]
    fn without_hooks_the_grace_is_the_claim_grace() {
        let mut grace = Grace::new(10_000, hooks(700, 0));
        assert!(!grace.over(10_000, unread));
        assert!(!grace.over(10_000 + GRACE_NS - 1, unread));
        // Hook time that ended before the grace started is not the grace's.
        assert!(grace.over(10_000 + GRACE_NS, || hooks(700, 0)));
    }

    #[test]
    fn hook_time_that_ended_during_the_grace_lengthens_it_by_as_much() {
        let mut grace = Grace::new(0, hooks(100, 0));
        assert!(!grace.over(GRACE_NS, || hooks(500, 0)), "400 ns of hooks");
        assert!(!grace.over(GRACE_NS + 399, unread));
        assert!(!grace.over(GRACE_NS + 400, || hooks(600, 0)), "100 more");
        assert!(grace.over(GRACE_NS + 500, || hooks(600, 0)));
    }

    #[test]
    fn the_grace_does_not_end_while_a_waiter_is_in_a_hook() {
        let mut grace = Grace::new(0, hooks(0, 1));
        assert!(!grace.over(GRACE_NS, || hooks(0, 1)));
        assert!(!grace.over(5 * GRACE_NS, || hooks(0, 2)));
        // The hooks ended after 6 grace lengths in all: the waiter's own time is the rest.
        assert!(!grace.over(7 * GRACE_NS - 1, || hooks(6 * GRACE_NS, 0)));
        assert!(grace.over(7 * GRACE_NS, || hooks(6 * GRACE_NS, 0)));
    }

    #[test]
    fn the_grace_ends_after_a_spin_whatever_the_hooks() {
        let spin_ns = crate::sync::SPIN.as_nanos() as u64;
        let mut grace = Grace::new(0, hooks(0, 0));
        assert!(!grace.over(spin_ns - 1, || hooks(0, 1)));
        assert!(grace.over(spin_ns, || hooks(0, 1)));
        let mut grace = Grace::new(0, hooks(0, 0));
        assert!(!grace.over(GRACE_NS, || hooks(10 * spin_ns, 0)));
        assert!(grace.over(spin_ns, unread));
    }

    #[test]
    fn the_hook_words_count_hooks_under_way_and_the_time_of_those_that_ended() {
        let word = WaiterHooks::default();
        word.enter(Queue::GpuUpload);
        word.enter(Queue::GpuDownload);
        assert_eq!(word.load(), hooks(0, 2));
        word.leave(Queue::GpuUpload, 5);
        assert_eq!(word.load(), hooks(5, 1));
        word.leave(Queue::GpuDownload, 7);
        assert_eq!(word.load(), hooks(12, 0));
        // Each word's total wraps at 2^48 ns, and so does their sum: the difference a grace
        // takes stays right across it.
        word.enter(Queue::Host);
        word.leave(Queue::Host, WaiterHooks::NS_MASK - 20);
        assert_eq!(word.load(), hooks(WaiterHooks::NS_MASK - 8, 0));
        word.enter(Queue::Host);
        word.leave(Queue::Host, 30);
        assert_eq!(word.load(), hooks(21, 0));
        let mut grace = Grace::new(0, hooks(WaiterHooks::NS_MASK - 9, 0));
        assert!(
            !grace.over(GRACE_NS, || hooks(10, 0)),
            "20 ns across the wrap"
        );
        assert!(grace.over(GRACE_NS + 20, || hooks(10, 0)));
    }

    /// Round trips of a three-region graph on a software runtime, each after the workers
    /// parked (so that the waiter claims before a woken worker can); the waiter's hook time
    /// and the regions it ran.
    fn round_trips(options: RuntimeOptions) -> (HookTime, u64) {
        let rt = Runtime::new(options).unwrap();
        let input = rt.buffer(256, Placement::HostVisible).unwrap();
        let device = rt.buffer(512, Placement::GpuLocal).unwrap();
        let output = rt.buffer(256, Placement::HostVisible).unwrap();
        let (low, high) = (device.view(0..256).unwrap(), device.view(256..512).unwrap());
        let mut graph = rt.graph();
        graph.copy(low.clone(), input.whole()).unwrap();
        graph.fill(high, 7).unwrap();
        graph.copy(output.whole(), low).unwrap();
        let graph = graph.prepare().unwrap();
        let mut core = None;
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(2));
            let completion = graph.submit().unwrap();
            completion.wait().unwrap();
            core = completion.core().upgrade();
        }
        let hooks = core.unwrap().waiter_hooks().load();
        (hooks, rt.counters().regions_run_by_waiters)
    }

    #[test]
    fn a_submission_that_finds_its_queues_worker_parked_counts_one_worker_wake() {
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let mut graph = rt.graph();
        // A host callback runs on the Host queue's worker, never on the waiting thread.
        graph.host(&[], |_| Ok(())).unwrap();
        let graph = graph.prepare().unwrap();
        graph.submit().unwrap().wait().unwrap();
        // Each round leaves the worker time to end its idle spin and park; on a loaded
        // machine it may still be spinning (no wake), so rounds repeat until one finds it
        // parked.
        let mut woken = 0;
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(5));
            let before = rt.counters().worker_wakes;
            graph.submit().unwrap().wait().unwrap();
            woken = rt.counters().worker_wakes - before;
            if woken > 0 {
                break;
            }
        }
        assert_eq!(
            woken, 1,
            "one parked worker (the Host queue's) woken by the submission"
        );
    }

    #[test]
    fn traced_waiters_count_the_time_in_their_hooks_and_leave_every_hook_they_enter() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = hrx_capture::Recorder::create(
            dir.path().join("hooks.hrxt"),
            hrx_capture::RecorderOptions::default(),
        )
        .unwrap();
        let (traced, helped) = round_trips(RuntimeOptions::sim().recorder(recorder.clone()));
        assert!(helped > 0, "no region ran on the waiting thread");
        assert_eq!(traced.open, 0, "a hook entered and never left");
        assert!(
            traced.ended_ns > 0,
            "{helped} traced regions on the waiter, no hook time"
        );
        let (untraced, helped) = round_trips(RuntimeOptions::sim());
        assert!(helped > 0, "no region ran on the waiting thread");
        assert_eq!(
            untraced,
            hooks(0, 0),
            "an untraced waiter wrote the hook word"
        );
        recorder.close().unwrap();
    }
}
