//! The workers: one thread per queue claims ready regions from the scheduler, runs them
//! without its lock and records their outcomes; a thread in [`crate::Completion::wait`]
//! runs its own submission's ready native regions the same way ([`help`]).

use super::scheduler::{Doorbell, Task};
use super::shared::Core;
use super::types::Queue;
use crate::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A queue's worker: claims ready regions, runs them without the lock, records outcomes.
///
/// When idle it first spins for [`crate::sync::SPIN`] watching its queue's [`Doorbell`]
/// (a submission arriving then is picked up with no syscall on either side), leaving new work
/// for [`CLAIM_GRACE`] to a thread that waits for it, then re-checks the state; after a whole
/// spin without new work it parks.
pub(crate) fn worker(core: Arc<Core>, queue: Queue) {
    let doorbell = core.doorbell(queue);
    let mut state = core.scheduler();
    let mut spun = false;
    loop {
        if let Some(task) = state.find_ready(queue) {
            drop(state);
            run(&core, task);
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
            spun = !idle_spin(&core, doorbell, epoch);
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
/// (see [`help`]) before taking the scheduler lock itself. A waiter that calls `wait` right
/// after `submit` claims within a few hundred nanoseconds; the worker's lock would only pull
/// the scheduler's cache lines away from it. Work nobody waits for starts this much later.
const CLAIM_GRACE: Duration = Duration::from_micros(1);

/// A worker's spin while its queue has nothing to claim, without the scheduler lock: returns
/// true once its queue may hold unclaimed work (or at shutdown), false after a whole
/// [`crate::sync::SPIN`] without activity (the worker then parks).
fn idle_spin(core: &Core, doorbell: &Doorbell, mut epoch: u64) -> bool {
    let unclaimed = || doorbell.claimable();
    loop {
        let active = crate::sync::spin_until(|| doorbell.epoch() != epoch || core.stopping());
        if !active || core.stopping() {
            return active;
        }
        let grace_end = Instant::now() + CLAIM_GRACE;
        while unclaimed() && Instant::now() < grace_end {
            std::hint::spin_loop();
        }
        // One word: the flag read is that of the epoch read, and a later change moves the
        // epoch again.
        let claimable;
        (epoch, claimable) = doorbell.load();
        if claimable {
            return true;
        }
    }
}

/// Runs, on the thread waiting for `submission`, its native regions that are ready while their
/// queue is idle, one after another, and completes the one `submit` launched (see
/// [`Scheduler::claim_own`]); returns when none is (the workers run the rest).
pub(crate) fn help(core: &Core, submission: u64, done: impl Fn() -> bool) {
    while !done() {
        let task = core.scheduler().claim_own(submission);
        let Some(task) = task else { return };
        run(core, task);
    }
}

/// Runs one claimed region and records its outcome.
fn run(core: &Core, task: Task) {
    let region = &task.prepared().regions[task.region];
    let queue = region.queue();
    // Host times are read only for the trace: an untraced region pays no clock reads.
    let context = core.context();
    let traced = context.tracer.traces(task.submission);
    if traced {
        // A capture still reading an earlier output this region overwrites: wait here, as a
        // span of its own, so the wait is never part of the region's time.
        super::record::capture_fences(&context.tracer, task.submission, task.region, &region.uses);
        // Before the start time is read: a hang or a crash inside the region leaves this in
        // the trace, and recording it is not part of the region's time.
        super::record::region_started(&context.tracer, task.submission, task.region);
    }
    let start_ns = if traced { crate::clock::now_ns() } else { 0 };
    // A launched region's inputs were checked by `submit` before its launch.
    let checked = if task.launched {
        Ok(())
    } else {
        region.check_inputs()
    };
    let (result, native) = match checked {
        Err(error) => (Err(error), false),
        Ok(()) => {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::fault::numbered(task.first_operation, || {
                    if task.launched {
                        region.complete_launch(context)
                    } else {
                        region.run(context)
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
    if traced {
        let end_ns = crate::clock::now_ns();
        let fault = result
            .is_err()
            .then(|| context.faults.take_report())
            .flatten();
        super::record::region_ran(
            &context.tracer,
            (task.submission, task.region, &region.uses),
            (start_ns, end_ns),
            &result,
            fault,
        );
    }
    let result = result.map(|_| ());
    // The task's last use: `finish` may retire the submission and let its prepared graph go.
    let (submission, region) = (task.submission, task.region);
    let wake = core
        .scheduler()
        .finish((submission, region, queue), result, native);
    core.wake(wake);
}

/// Launches, on the thread in `submit`, the region it claimed with
/// [`super::scheduler::Scheduler::claim_launch`] (see `execution::submit`): on success the
/// region waits, launched, for the thread that claims it next to complete it; a refused
/// input or a failed launch is its outcome at once, as in [`run`].
pub(crate) fn launch(core: &Core, task: Task) {
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
    let wake = match result {
        Ok(()) => core.scheduler().launched(task),
        Err(error) => {
            let key = (task.submission, task.region, region.queue());
            core.scheduler().finish(key, Err(error), native)
        }
    };
    core.wake(wake);
}
