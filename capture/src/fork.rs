//! Forks of this process, counted by a `pthread_atfork` child handler: a recorder or a
//! runtime that keeps the count it was created under tells with one relaxed load that it is
//! now in a child forked since (where `getpid()` would be a system call each time). A child
//! forked without `exec` holds copies of its parent's recorders and runtimes, but none of
//! their threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Forks this process went through, counted in each child as it starts.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Starts counting forks (once a process) and returns the count now: what an object that
/// must know it was forked keeps at its creation.
pub fn watch_forks() -> u64 {
    #[cfg(unix)]
    {
        extern "C" fn child() {
            FORKS.fetch_add(1, Ordering::Relaxed);
        }
        static WATCH: std::sync::Once = std::sync::Once::new();
        // SAFETY: the handler only adds to an atomic, which is async-signal-safe (what a
        // forked child of a multithreaded process may do); it is registered once.
        WATCH.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(child));
        });
    }
    forks()
}

/// Forks counted since [`watch_forks`] was first called.
#[inline]
pub fn forks() -> u64 {
    FORKS.load(Ordering::Relaxed)
}

/// Test support: a child process running `checks`, for the tests of what a forked child
/// may and may not do.
#[cfg(all(test, unix))]
pub(crate) mod child {
    /// Forks a child that runs `checks` and `_exit`s with 0 when they held, 1 when not;
    /// returns its pid in the parent.
    pub(crate) fn spawn(checks: impl FnOnce() -> bool) -> libc::pid_t {
        // SAFETY: the child runs `checks` and `_exit`s: no test harness, no exit handlers.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = i32::from(!checks());
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        pid
    }

    /// Whether child `pid`'s checks held. A child still running after a minute (a hang) is
    /// killed and did not hold: the test fails rather than hangs.
    pub(crate) fn held(pid: libc::pid_t) -> bool {
        let mut status = 0;
        for _ in 0..600 {
            // SAFETY: `pid` is our child; `status` a valid out-pointer.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // SAFETY: as above; the child is killed and reaped.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        false
    }
}

#[cfg(all(test, unix))]
mod tests {
    /// A child forked after the count was taken sees it move; the parent does not.
    #[test]
    fn a_forked_child_counts_its_fork() {
        let before = super::watch_forks();
        let pid = super::child::spawn(|| super::forks() == before + 1);
        assert!(super::child::held(pid));
        assert_eq!(super::forks(), before);
    }
}
