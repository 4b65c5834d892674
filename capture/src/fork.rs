//! Forks of this process, counted by a `pthread_atfork` child handler: a recorder or a
//! runtime that keeps the count it was created under tells with one relaxed load that it is
//! now in a child forked since (where `getpid()` would be a system call each time). A child
//! forked without `exec` holds copies of its parent's recorders and runtimes, but none of
//! their threads.
//!
//! The same handler lets go of the trace files the parent's recorders write ([`Held`]): a
//! writer's lock (`flock`) belongs to the open file description, which a forked child shares
//! until it closes its descriptor, so a child that outlived its killed parent kept the lock,
//! and readers called the dead recording "being recorded now" until the child exited (Linux
//! has no close-on-fork flag). The child's descriptor is pointed at `/dev/null` instead
//! (`dup2`, so the number stays taken and the child's `File` closes nothing of another's);
//! the child records nothing anyway. It also lets go of the host clock's calibration lock
//! and of a segment being published (`clock::after_fork`), which a parent's writer thread
//! may hold at the fork and no thread of the child would release.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Forks this process went through, counted in each child as it starts.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Starts counting forks (once a process) and returns the count now: what an object that
/// must know it was forked keeps at its creation.
pub fn watch_forks() -> u64 {
    #[cfg(unix)]
    {
        extern "C" fn child() {
            FORKS.fetch_add(1, Ordering::Relaxed);
            release_held();
            crate::clock::after_fork();
        }
        static WATCH: std::sync::Once = std::sync::Once::new();
        // SAFETY: the handler adds to an atomic and makes only async-signal-safe calls
        // (`release_held`, `clock::after_fork`: atomics and what a forked child of a
        // multithreaded process may do); it is
        // registered once.
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

/// One trace file a forked child lets go of: its descriptor (-1 when the slot is free) and
/// the file's device and inode, checked in the child so that a number the program reused
/// for a file of its own is never touched.
struct Slot {
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
}

/// Trace files open for writing at once in one process: one per live recorder (more
/// recorders than this keep their locks in a forked child, as before).
const SLOTS: usize = 32;

#[allow(clippy::declare_interior_mutable_const)] // a fresh slot per array element
const FREE: Slot = Slot {
    fd: AtomicI32::new(-1),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
};
static HELD: [Slot; SLOTS] = [FREE; SLOTS];

/// A trace file's descriptor that a child forked without `exec` lets go of (see the module
/// docs) for as long as this lives.
#[derive(Debug)]
pub(crate) struct Held {
    slot: usize,
    fd: i32,
}

impl Held {
    /// Registers descriptor `fd` of the file `identity` (device, inode); `None` when every
    /// slot is taken.
    pub(crate) fn new(fd: i32, identity: (u64, u64)) -> Option<Held> {
        watch_forks();
        (0..SLOTS).find_map(|i| {
            let slot = &HELD[i];
            // Taken by a placeholder first, so that no other thread takes the slot while
            // its identity is written; the descriptor goes in last.
            slot.fd
                .compare_exchange(-1, -2, Ordering::Acquire, Ordering::Relaxed)
                .ok()?;
            slot.dev.store(identity.0, Ordering::Relaxed);
            slot.ino.store(identity.1, Ordering::Relaxed);
            slot.fd.store(fd, Ordering::Release);
            Some(Held { slot: i, fd })
        })
    }
}

impl Drop for Held {
    /// Frees the slot if it still holds this descriptor: a forked child frees the slots of
    /// the descriptors it let go of ([`release_held`]) for its own trace files to take.
    fn drop(&mut self) {
        let _ =
            HELD[self.slot]
                .fd
                .compare_exchange(self.fd, -1, Ordering::Release, Ordering::Relaxed);
    }
}

/// Whether descriptor `fd` is open on the file `identity` (device, inode): one `fstat`
/// (async-signal-safe, no allocation).
#[cfg(unix)]
pub(crate) fn names_file(fd: i32, identity: (u64, u64)) -> bool {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `stat` into the buffer given; it is read only on success.
    unsafe {
        libc::fstat(fd, stat.as_mut_ptr()) == 0 && {
            let stat = stat.assume_init();
            #[allow(clippy::unnecessary_cast)] // `dev_t`, `ino_t` narrower off Linux
            let found = (stat.st_dev as u64, stat.st_ino as u64);
            found == identity
        }
    }
}

/// In a child just forked: each registered descriptor that still names its trace file is
/// pointed at `/dev/null`. Only async-signal-safe calls (`fstat`, `open`, `dup2`, `fcntl`, `close`),
/// as a child of a multithreaded process may make; no allocation.
#[cfg(unix)]
fn release_held() {
    let mut null = -1;
    for slot in &HELD {
        let fd = slot.fd.load(Ordering::Acquire);
        if fd < 0 {
            continue;
        }
        let identity = (
            slot.dev.load(Ordering::Relaxed),
            slot.ino.load(Ordering::Relaxed),
        );
        if !names_file(fd, identity) {
            continue;
        }
        if null < 0 {
            // SAFETY: a NUL-terminated path; the descriptor is closed below.
            null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        }
        // SAFETY: replaces this process's copy of `fd` (checked above to be the trace file)
        // with `/dev/null`, close-on-exec as the trace's was (`dup2` clears the flag; the
        // child has no other thread to exec meanwhile); the parent's descriptor, and so its
        // lock, is untouched. Without `/dev/null` (a full descriptor table) the copy is
        // closed: the child's `File` of it then names no trace, which the sink checks before
        // it closes or writes a descriptor (`FileSink::is_ours`).
        unsafe {
            if null < 0 {
                libc::close(fd);
            } else if libc::dup2(null, fd) == fd {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        // The slot is free for the child's own trace files (its inherited recorders are
        // never closed in it).
        slot.fd.store(-1, Ordering::Release);
    }
    if null >= 0 {
        // SAFETY: opened above, ours.
        unsafe { libc::close(null) };
    }
}

/// A lock that a child forked without `exec` takes even when a thread of its parent held
/// it at the fork (the process-wide recorder slot and what goes with it,
/// `crate::activation`): a `std::sync::Mutex` held then stays held in the child for ever, no
/// thread there ever releasing it, and a forked child of a program whose runtime thread was
/// opening or closing its trace hung in `Runtime::new` or `close_trace` (the break-it pass
/// of session 52, D4).
///
/// The lock holds the pid of the process whose thread holds it (0 when free): a waiter that
/// finds another process's pid there is in a child forked while a thread of its parent held
/// it, and takes it over (a generation that needs no `pthread_atfork` handler, so a fork
/// before any handler was registered is covered too; `getpid` is a system call a lock, and
/// these locks are off the hot path). What the child then sees of the value:
///
/// - the value as it was at the fork, whole, when the parent's thread held the lock but was
///   not changing it (opening a file, say, between changes: the usual case);
/// - a fresh value (`fresh`), the one it had leaked unread, when the parent's thread was in
///   the middle of [`ForkGuard::change`] (a few instructions): it may be torn.
///
/// Waiters poll (yield, then sleep up to 1 ms): held for as long as a trace file takes to
/// open, and rarely contended.
pub(crate) struct ForkLock<T> {
    holder: AtomicU32,
    /// Set by the holder for the length of [`ForkGuard::change`].
    changing: AtomicBool,
    value: UnsafeCell<T>,
    fresh: fn() -> T,
}

// SAFETY: `value` is reached only through a `ForkGuard`, which `holder` serializes within
// a process (a holder of another process is in another address space).
unsafe impl<T: Send> Sync for ForkLock<T> {}

impl<T> ForkLock<T> {
    /// A free lock holding `value`; `fresh` makes the value a child takes over a lock with
    /// when a thread of its parent was changing it at the fork.
    pub(crate) const fn new(value: T, fresh: fn() -> T) -> ForkLock<T> {
        ForkLock {
            holder: AtomicU32::new(0),
            changing: AtomicBool::new(false),
            value: UnsafeCell::new(value),
            fresh,
        }
    }

    /// The lock, waiting for a thread of this process that holds it.
    pub(crate) fn lock(&self) -> ForkGuard<'_, T> {
        let me = std::process::id();
        let mut waits = 0u32;
        loop {
            match self
                .holder
                .compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return ForkGuard { lock: self, me },
                Err(held) if held != 0 && held != me => {
                    // A thread of another process (this one's parent, or an ancestor's) held
                    // it when this process was forked: no thread here will let it go.
                    if self
                        .holder
                        .compare_exchange(held, me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        if self.changing.load(Ordering::Acquire) {
                            // Torn, perhaps: left unread (and undropped) for a fresh value.
                            // SAFETY: this thread holds the lock; the old value is forgotten.
                            unsafe { std::ptr::write(self.value.get(), (self.fresh)()) };
                            self.changing.store(false, Ordering::Release);
                        }
                        return ForkGuard { lock: self, me };
                    }
                }
                Err(_) => {
                    waits += 1;
                    if waits < 64 {
                        std::thread::yield_now();
                    } else {
                        let us = 10u64 << (waits - 64).min(7);
                        std::thread::sleep(std::time::Duration::from_micros(us.min(1000)));
                    }
                }
            }
        }
    }
}

/// A [`ForkLock`] held: reads through `Deref`, changes through [`ForkGuard::change`].
pub(crate) struct ForkGuard<'a, T> {
    lock: &'a ForkLock<T>,
    /// The pid that took it: a guard taken before a fork and dropped in the child lets go of
    /// nothing the child took since.
    me: u32,
}

impl<T> ForkGuard<'_, T> {
    /// Changes the value: a child forked meanwhile takes a fresh one ([`ForkLock`]).
    pub(crate) fn change<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        self.lock.changing.store(true, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        // SAFETY: this guard holds the lock.
        let result = f(unsafe { &mut *self.lock.value.get() });
        self.lock.changing.store(false, Ordering::Release);
        result
    }
}

impl<T> std::ops::Deref for ForkGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> Drop for ForkGuard<'_, T> {
    fn drop(&mut self) {
        // Only where this guard still holds it (not a guard taken before a fork, the lock
        // taken over since in the child). A change a panic left unfinished leaves the value
        // whole (the closure's own `&mut`): the flag is for a forked child only.
        if self.lock.holder.load(Ordering::Relaxed) == self.me {
            self.lock.changing.store(false, Ordering::Relaxed);
            let _ =
                self.lock
                    .holder
                    .compare_exchange(self.me, 0, Ordering::Release, Ordering::Relaxed);
        }
    }
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

    /// A child forked while another thread of its parent held a [`super::ForkLock`] takes it
    /// over and finds the value as it was; one forked while the value was being changed
    /// finds a fresh value; the parent's holders are untouched (a `std::sync::Mutex` held
    /// at the fork was never released in the child, which waited for ever).
    #[test]
    fn a_child_takes_over_a_fork_lock_its_parent_held() {
        static LOCK: super::ForkLock<Vec<u32>> = super::ForkLock::new(Vec::new(), Vec::new);
        LOCK.lock().change(|v| v.push(1));
        let (taken, take) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let held = LOCK.lock();
            let _ = taken.send(());
            let _ = released.recv();
            drop(held);
        });
        take.recv().unwrap();
        let pid = super::child::spawn(|| {
            let mut held = LOCK.lock();
            let whole = *held == [1];
            held.change(|v| v.push(2));
            drop(held);
            whole && *LOCK.lock() == [1, 2]
        });
        let _ = release.send(());
        holder.join().unwrap();
        assert!(super::child::held(pid), "the child took over the lock");
        let mut pid = 0;
        LOCK.lock().change(|v| {
            v.push(3);
            pid = super::child::spawn(|| LOCK.lock().is_empty());
        });
        assert!(super::child::held(pid), "the child made a fresh value");
        assert_eq!(*LOCK.lock(), [1, 3]);
    }
}
