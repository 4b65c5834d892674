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

#[cfg(all(test, unix))]
mod tests {
    /// A child forked after the count was taken sees it move; the parent does not.
    #[test]
    fn a_forked_child_counts_its_fork() {
        let before = super::watch_forks();
        // SAFETY: the child only reads an atomic and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = if super::forks() == before + 1 { 0 } else { 1 };
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(super::forks(), before);
    }
}
