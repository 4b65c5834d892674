//! Capture work that keeps out of the copies' way.
//!
//! A copy between host memory and a device (a copy batch on the Upload or Download lane)
//! shares the host's memory with everything else the process does. A capture job that
//! hashes and stores megabytes of a host mapping (a host write's contents, an output's
//! digest) while such a copy runs takes memory bandwidth the copy would have had: on the
//! H200 host, a 3 MB upload of the pipeline recorded with one frame in flight read 85.9 µs
//! of device time traced and 77 µs replayed (the replay stores nothing), the job of the
//! frame's host write starting as the frame's upload did. That is capture work inside a
//! measured time, which the trace must never hold.
//!
//! So a traced copy batch counts itself as running ([`CopyRunning`], process-wide: memory
//! bandwidth is the process's, whichever runtime copies), and a capture job over at least
//! [`QUIET_MIN_BYTES`] first waits for no copy to be running ([`wait_for_quiet_copies`]),
//! for at most [`QUIET_WAIT`]. The bound keeps the writer, which runs the job, draining
//! every thread's records: a program that copies without a pause (the wait timed out) gets
//! no wait for the next [`QUIET_BACKOFF`], so its jobs run at the writer's own pace, as
//! before. The job's bytes stay behind their capture fence meanwhile, so a later writer of
//! them waits for it as it would for any capture (a `CaptureFence` span of its own).
//!
//! An untraced runtime counts nothing: [`CopyRunning`] is taken only where a region's trace
//! hook is.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Copy batches running now on traced runtimes of this process.
static COPIES_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Until when ([`crate::clock::now_ns`]) jobs do not wait: set when a wait timed out.
static NO_WAIT_UNTIL_NS: AtomicU64 = AtomicU64::new(0);

/// Jobs over fewer bytes do not wait: hashing a few KiB takes less memory time than a
/// copy's start-up.
pub(crate) const QUIET_MIN_BYTES: usize = 64 << 10;

/// The longest a capture job waits for the copies to stop (uploads of a few MB take about
/// 100 µs on a PCIe 5 link, so a pipeline's copies leave gaps well within it).
pub(crate) const QUIET_WAIT: Duration = Duration::from_millis(2);

/// How long jobs run without waiting after a wait timed out (copies without a pause).
const QUIET_BACKOFF: Duration = Duration::from_millis(50);

/// A copy batch running, from its launch to its completion: dropped, it is not running.
#[must_use = "the copy counts as running while this lives"]
pub(crate) struct CopyRunning(());

impl CopyRunning {
    pub(crate) fn begin() -> CopyRunning {
        COPIES_RUNNING.fetch_add(1, Ordering::AcqRel);
        CopyRunning(())
    }
}

impl Drop for CopyRunning {
    fn drop(&mut self) {
        COPIES_RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a wait for quiet copies did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// No copy was running (or the job is small, or jobs are not waiting now).
    Already,
    /// The copies stopped while the job waited.
    Waited,
    /// The bound passed with copies still running: the job runs anyway.
    TimedOut,
}

/// Before a capture job reads `bytes` of host memory: waits, at most `bound`, for no traced
/// copy batch of this process to be running (see the module docs).
pub(crate) fn wait_for_quiet_copies(bytes: usize, bound: Duration) -> Quiet {
    if bytes < QUIET_MIN_BYTES || COPIES_RUNNING.load(Ordering::Acquire) == 0 {
        return Quiet::Already;
    }
    let now_ns = crate::clock::now_ns();
    if now_ns < NO_WAIT_UNTIL_NS.load(Ordering::Relaxed) {
        return Quiet::Already;
    }
    let start = Instant::now();
    let mut spins = 0u32;
    while COPIES_RUNNING.load(Ordering::Acquire) != 0 {
        spins = spins.wrapping_add(1);
        if !spins.is_multiple_of(64) {
            std::hint::spin_loop();
            continue;
        }
        if start.elapsed() >= bound {
            let until = crate::clock::now_ns() + QUIET_BACKOFF.as_nanos() as u64;
            NO_WAIT_UNTIL_NS.store(until, Ordering::Relaxed);
            return Quiet::TimedOut;
        }
        std::thread::yield_now();
    }
    Quiet::Waited
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    /// The counter is process-wide: these tests take turns.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    #[test]
    fn a_large_job_waits_until_the_running_copy_is_done() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        NO_WAIT_UNTIL_NS.store(0, Ordering::Relaxed);
        let copy = CopyRunning::begin();
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let quiet = wait_for_quiet_copies(QUIET_MIN_BYTES, Duration::from_secs(600));
                // The copy's end was marked before it was dropped: seen here, or the job
                // ran beside the copy.
                (quiet, done.load(Ordering::SeqCst))
            });
            std::thread::sleep(Duration::from_millis(20));
            done.store(true, Ordering::SeqCst);
            drop(copy);
            assert_eq!(waiter.join().unwrap(), (Quiet::Waited, true));
        });
    }

    #[test]
    fn small_jobs_do_not_wait() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        NO_WAIT_UNTIL_NS.store(0, Ordering::Relaxed);
        let _copy = CopyRunning::begin();
        assert_eq!(
            wait_for_quiet_copies(QUIET_MIN_BYTES - 1, Duration::from_secs(600)),
            Quiet::Already
        );
    }

    #[test]
    fn copies_without_a_pause_make_jobs_stop_waiting_for_a_while() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        NO_WAIT_UNTIL_NS.store(0, Ordering::Relaxed);
        let _copy = CopyRunning::begin();
        let before_ns = crate::clock::now_ns();
        assert_eq!(
            wait_for_quiet_copies(QUIET_MIN_BYTES, Duration::ZERO),
            Quiet::TimedOut
        );
        let until_ns = NO_WAIT_UNTIL_NS.load(Ordering::Relaxed);
        assert!(until_ns >= before_ns + QUIET_BACKOFF.as_nanos() as u64);
        // While the back-off lasts (held here past any delay of this thread), jobs run on.
        NO_WAIT_UNTIL_NS.store(u64::MAX, Ordering::Relaxed);
        assert_eq!(
            wait_for_quiet_copies(QUIET_MIN_BYTES, Duration::from_secs(600)),
            Quiet::Already
        );
        NO_WAIT_UNTIL_NS.store(0, Ordering::Relaxed);
    }
}
