//! The fatal-signal flush: when the traced process receives a signal that ends it, every live
//! recorder writes what every thread still holds to its file before the process dies.
//!
//! Records reach the file at the writer's 100 ms flush; a crash used to lose everything since
//! the last one, which is exactly the call that crashed. So, for SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE and SIGABRT (and every other signal below 32 whose default action ends the
//! process: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
//! SIGPIPE, SIGXCPU, SIGSYS, SIGTRAP, SIGIO, SIGPWR and SIGSTKFLT, when the program left
//! their action the default one, so that a hang killed by `timeout` or Ctrl-C, or a signal
//! the program never expected, keeps its last records too), a recorder installs a handler
//! (`SA_SIGINFO`, every one of these signals blocked while it runs).
//!
//! The termination signals stay the application's: a library must not take from it a signal
//! it may use (SIGUSR1 for a reload, SIGALRM for a timer, SIGPROF for a profiler). So the
//! recorder takes one only while its action is the default one, which would end the process
//! anyway, never one the program handles or ignores when the recorder starts (its own
//! handler then runs alone, as untraced); a handler the program installs later replaces the
//! recorder's (see "What is not" below). What a program may see is `sigaction` reporting the
//! recorder's handler where it left the default. The real-time signals are not taken at
//! all. (`hrx-trace record` handles SIGINT, SIGTERM, SIGHUP, the user signals and the
//! timers' in its own process and forwards them to the program, whose recorder then names
//! the signal as here.)
//!
//! The handler's stack: SIGSEGV and SIGBUS may mean the thread's stack is exhausted, so they
//! run on the thread's alternate signal stack (`SA_ONSTACK`); every other signal runs on the
//! stack of the thread it interrupted, which has room. Rust gives each thread an alternate
//! stack of about 8 KiB (`SIGSTKSZ`), which the kernel's frame for AVX-512 state takes 3 KiB of
//! and an unoptimized build of the flush overflowed (the trace kept nothing of the crash;
//! a SIGTERM died of SIGSEGV on a fresh user's AMD EPYC host), so each thread that records,
//! and the one that installs the handlers, gets an alternate stack of [`SIGNAL_STACK_BYTES`]
//! where its own is smaller, as Breakpad and Crashpad give theirs; it is given back when the
//! thread ends.
//!
//! When the signal ends the process (the action it had before is the default one, a fault
//! the program ignores, or `abort`), the handler:
//!
//! 1. takes the recorder's core lock with `try_lock`, waiting at most [`LOCK_WAIT_NS`] for
//!    the writer thread to finish a block (it never waits on a lock its own thread holds);
//! 2. writes the blocks handed to the compression threads and not yet written, from their
//!    payloads, stored uncompressed (`compress.rs`); drains every thread's ring into the
//!    block being assembled, each thread's annotation ranges still open after its records
//!    (as `NAME (open at end)`, to the signal's time: the range the program crashed in is
//!    not lost), appends a [`FatalSignal`] record, and writes the block uncompressed with
//!    `write(2)` on the file descriptor the sink opened at start
//!    ([`super::Sink::signal_fd`]), as one or more complete blocks;
//! 3. puts the action the signal had before back and passes the signal on: a fault the
//!    kernel raised (SIGSEGV, SIGBUS, SIGILL, SIGFPE with a positive `si_code`) repeats when
//!    the handler returns; a signal a process sent (`kill`, `abort`) is raised again and
//!    delivered when the handler returns.
//!
//! When the signal had a handler before (the program's own, as JVMs and wasm runtimes
//! install for the faults they expect, or Rust's stack-overflow handler), whether the
//! process dies is that handler's decision, so this one calls it first (with its mask,
//! flags and `siginfo`, as the kernel would) and claims nothing: if it returns, the program
//! survived, or it set the action it wants a repeated fault to meet (Rust's handler puts the
//! default one back and returns). Either way this handler stays installed, chaining to
//! whatever action the chained handler left, so the repeated fault, or a later real crash,
//! comes here first and is flushed as above. Breakpad instead gives such a handler a "first
//! chance" and, if it declines, restores every previous action and re-raises; Tracy's crash
//! handler ends the process itself. Chaining first is what lets a program that survives
//! faults keep its recorder. A signal the program survived leaves nothing in the trace: a
//! JVM handles thousands of faults (safepoint polls, null checks), and noting one would
//! mean writing from the handler, where the writer's deferred work (output digests) cannot
//! run. `abort` is the exception: it never returns, so its SIGABRT is flushed and noted
//! before the program's handler runs.
//!
//! Nothing on this path allocates or takes a lock another thread may hold forever: the
//! buffers (a ring's worth of staging, a block's worth of frames, spare index entries) are
//! reserved when the recorder starts, the frames are encoded in place, the signal record on
//! the stack; the blocks in flight to the compression threads are written without waiting
//! for them (and never freed).
//!
//! # What is guaranteed
//!
//! Everything recorded before the signal, by any thread, is in the file when the handler
//! passes the signal on, as complete, checksummed blocks that every reader reads back (the
//! trace is not closed: no footer), followed by a [`FatalSignal`] record naming the signal
//! (and the faulting address of a fault). The region that was running has its
//! [`crate::schema::RegionStarted`] there. The bytes are in the kernel's page cache: they
//! survive the process, not a power loss.
//!
//! # What is not
//!
//! - SIGKILL (and a kill by the OOM killer) runs no handler: the file keeps what the last
//!   periodic flush wrote (`hrx-trace record` then notes the death itself). Nor do the
//!   real-time signals (SIGRTMIN and up), which are left as the program sets them.
//! - A crash on a thread that holds the recorder's lock (inside the recorder's own writing),
//!   or while the writer thread holds it for longer than [`LOCK_WAIT_NS`], writes nothing
//!   more; so does a fault on a compression thread (inside zstd) while the writer holds the
//!   lock waiting for that thread's block. A crash during the fatal-signal flush itself
//!   (memory so damaged that the rings are) stops that flush.
//! - Work deferred to the writer thread (hashing and storing outputs and host writes) that had
//!   not run is not run. Each such job leaves, at its place in its thread's order, a
//!   [`RecordsLost`] naming the kind of record it would have made (`HostWrite`,
//!   `OutputDigest`; cumulative, as every loss count): so every reader says what the trace
//!   lacks, and `replay` refuses a trace that lacks a host write's contents rather than
//!   re-executing a later submission over stale inputs and calling the difference a
//!   regression (a break-it pass: Ctrl-C on `record -- PROGRAM`, 4 runs of 24). A lost
//!   output digest only leaves that output unchecked, which replay tolerates.
//! - Records a thread pushes while the flush runs may land after the [`FatalSignal`].
//! - A program that installs its own handler for these signals after the runtime started
//!   replaces this one (nothing is flushed unless it passes the signal on to the previous
//!   handler); one installed before is chained to, and one that ends the process without a
//!   signal (`_exit` from the handler) leaves the records since the last periodic flush
//!   unwritten (`hrx-trace record` notes the exit).
//! - A program's handler that survives SIGABRT by `siglongjmp` out of `abort` leaves a
//!   [`FatalSignal`] for a signal it survived.
//! - At most [`SLOTS`] recorders of one process are flushed (a process has one in practice).
//! - A child forked without `exec` writes nothing into its parent's trace (it shares the
//!   file descriptor; its own records are lost with it).

use super::{Core, Shared};
use crate::format::{BlockHeader, BlockKind, IndexEntry};
use crate::schema::{
    AnnotationId, AnnotationRange, FatalSignal, Record, RecordsLost, SignalWitness,
};
use crate::staging;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// Recorders a fatal signal flushes, at most.
pub(crate) const SLOTS: usize = 8;
/// Index entries kept free for the blocks the flush writes (so that a program that survives
/// the signal still closes with a footer listing them).
pub(super) const SPARE_INDEX_ENTRIES: usize = 64;
/// Longest wait for the writer thread to let go of the recorder: 2 s.
pub(crate) const LOCK_WAIT_NS: u64 = 2_000_000_000;
/// Bytes of the alternate signal stack each recording thread gets where its own is smaller
/// (module docs), below a guard page.
pub(crate) const SIGNAL_STACK_BYTES: usize = 64 << 10;

/// The recorders to flush: `Arc::into_raw` of a registered [`Shared`], or null.
static RECORDERS: [AtomicPtr<Shared>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
/// Handlers running now; a recorder is freed only when none is (see [`unregister`]).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// The thread id of the handler flushing now, else 0.
static FLUSHING: AtomicI32 = AtomicI32::new(0);

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::cell::{Cell, UnsafeCell};
    use std::mem::MaybeUninit;
    use std::sync::Once;
    use std::sync::atomic::AtomicBool;

    /// Crashes: always handled.
    const CRASHES: [libc::c_int; 5] = [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ];
    /// Termination signals: handled only where the program left the default action (which
    /// ends the process): those a person or a supervisor sends (`kill`, Ctrl-C, a closed
    /// terminal, `timeout`), and those whose default action ends a program that did not
    /// expect them (a timer's or a user signal nobody handles, a write to a closed pipe in
    /// a program that did not ignore SIGPIPE, a CPU-time limit).
    /// (Every signal below 32 whose default action ends the process; the real-time signals
    /// are not handled: glibc and programs use them as they choose.)
    const TERMINATIONS: [libc::c_int; 16] = [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGPIPE,
        libc::SIGXCPU,
        libc::SIGSYS,
        libc::SIGTRAP,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSTKFLT,
    ];
    const MAX_SIGNAL: usize = 32;

    /// The action to chain to for each signal: the one it had before, or the one a chained
    /// handler set.
    struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; MAX_SIGNAL]>);
    // SAFETY: an entry is read only after its `SAVED` flag is loaded with Acquire, and
    // written and read only under its `PREVIOUS_LOCK`.
    unsafe impl Sync for Previous {}
    static PREVIOUS: Previous = Previous(UnsafeCell::new(
        [const { MaybeUninit::uninit() }; MAX_SIGNAL],
    ));
    static SAVED: [AtomicBool; MAX_SIGNAL] = [const { AtomicBool::new(false) }; MAX_SIGNAL];
    /// Held while an entry of `PREVIOUS` is copied or rewritten (the handler rewrites it when
    /// a chained handler changed the action).
    static PREVIOUS_LOCK: [AtomicBool; MAX_SIGNAL] = [const { AtomicBool::new(false) }; MAX_SIGNAL];

    thread_local! {
        static THREAD_ID: Cell<i32> = const { Cell::new(0) };
    }

    /// The calling thread's kernel id (`gettid`), cached per thread.
    pub(crate) fn current_thread_id() -> i32 {
        THREAD_ID
            .try_with(|id| {
                if id.get() == 0 {
                    id.set(gettid());
                }
                id.get()
            })
            .unwrap_or_else(|_| gettid())
    }

    fn gettid() -> i32 {
        // SAFETY: gettid has no preconditions and is async-signal-safe.
        unsafe { libc::syscall(libc::SYS_gettid) as i32 }
    }

    /// The calling thread's alternate signal stack of [`SIGNAL_STACK_BYTES`] (a guard page
    /// below it), given back when the thread ends.
    struct SignalStack {
        mapping: *mut libc::c_void,
        len: usize,
    }

    impl Drop for SignalStack {
        fn drop(&mut self) {
            let top = self.mapping as usize + self.len;
            // SAFETY: querying and disabling the calling thread's alternate stack; the mapping
            // is this one's own, no longer the thread's signal stack once disabled (or
            // replaced: Rust's thread exit disables whichever one is current).
            unsafe {
                let mut current: libc::stack_t = std::mem::zeroed();
                if libc::sigaltstack(std::ptr::null(), &mut current) == 0
                    && current.ss_flags & libc::SS_DISABLE == 0
                    && current.ss_sp as usize + current.ss_size == top
                {
                    if current.ss_flags & libc::SS_ONSTACK != 0 {
                        return; // running on it (a handler ending the thread): keep it
                    }
                    let disable = libc::stack_t {
                        ss_sp: std::ptr::null_mut(),
                        ss_flags: libc::SS_DISABLE,
                        ss_size: 0,
                    };
                    libc::sigaltstack(&disable, std::ptr::null_mut());
                }
                libc::munmap(self.mapping, self.len);
            }
        }
    }

    thread_local! {
        static SIGNAL_STACK: std::cell::RefCell<Option<SignalStack>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Gives the calling thread an alternate signal stack of [`SIGNAL_STACK_BYTES`] unless it
    /// has one at least that large (module docs). Once per thread; nothing where the thread is
    /// ending or the system refuses.
    pub(crate) fn signal_stack() {
        let _ = SIGNAL_STACK.try_with(|held| {
            let Ok(mut held) = held.try_borrow_mut() else {
                return;
            };
            if held.is_some() {
                return;
            }
            // SAFETY: querying the thread's alternate stack; mapping fresh memory and making
            // it the thread's alternate stack, a guard page below it, unmapped on failure.
            unsafe {
                let mut current: libc::stack_t = std::mem::zeroed();
                if libc::sigaltstack(std::ptr::null(), &mut current) != 0
                    || current.ss_flags & libc::SS_ONSTACK != 0
                    || (current.ss_flags & libc::SS_DISABLE == 0
                        && current.ss_size >= SIGNAL_STACK_BYTES)
                {
                    return;
                }
                let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096);
                let len = SIGNAL_STACK_BYTES + page;
                let mapping = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                    -1,
                    0,
                );
                if mapping == libc::MAP_FAILED {
                    return;
                }
                let stack = SignalStack { mapping, len };
                let installed = libc::mprotect(mapping, page, libc::PROT_NONE) == 0 && {
                    let new = libc::stack_t {
                        ss_sp: mapping.cast::<u8>().add(page).cast(),
                        ss_flags: 0,
                        ss_size: SIGNAL_STACK_BYTES,
                    };
                    libc::sigaltstack(&new, std::ptr::null_mut()) == 0
                };
                if installed {
                    *held = Some(stack);
                }
                // Else dropped: not the thread's stack, so only unmapped.
            }
        });
    }

    /// Blocks the termination signals on the calling thread, a compression thread: a signal
    /// sent to the process is then handled on another thread (`compress.rs`).
    pub(crate) fn block_termination_signals() {
        // SAFETY: sigset operations on a local set; pthread_sigmask changes only the calling
        // thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in TERMINATIONS {
                libc::sigaddset(&mut set, signal);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
    }

    /// Installs the handlers, once per process.
    pub(super) fn install() {
        signal_stack();
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            for signal in CRASHES {
                set(signal, false);
            }
            for signal in TERMINATIONS {
                set(signal, true);
            }
        });
    }

    fn set(signal: libc::c_int, only_if_default: bool) {
        // SAFETY: a zeroed sigaction is valid to be written by sigaction.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying an action only writes `current`.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
            return;
        }
        if only_if_default && current.sa_sigaction != libc::SIG_DFL {
            return;
        }
        if let Some(previous) = take(signal) {
            set_previous(signal, previous);
        }
    }

    /// Installs [`on_signal`] for `signal`; returns the action it replaced.
    fn take(signal: libc::c_int) -> Option<libc::sigaction> {
        // SAFETY: zeroed sigaction structs are valid; `on_signal` has the SA_SIGINFO shape
        // and does only async-signal-safe work (see the module docs); sigaction is
        // async-signal-safe (the handler calls this too).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            // Only a fault may come from an exhausted stack (module docs).
            if matches!(signal, libc::SIGSEGV | libc::SIGBUS) {
                action.sa_flags |= libc::SA_ONSTACK;
            }
            // Every signal handled here waits while the handler runs: a second one (a
            // `kill -USR1` then `-ALRM`, or `timeout`'s TERM after a Ctrl-C) run inside the
            // first would find the flush under way on its own thread, skip it and end the
            // process mid-flush, or overflow the small signal stack (a break-it pass: 4 runs
            // of 32). Blocked, it is delivered once the first handler passed its signal on.
            // A fault raised by the handler itself is not held back by this: the kernel
            // forces a blocked fault's default action.
            libc::sigemptyset(&mut action.sa_mask);
            for handled in CRASHES.into_iter().chain(TERMINATIONS) {
                libc::sigaddset(&mut action.sa_mask, handled);
            }
            let mut previous: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(signal, &action, &mut previous) == 0).then_some(previous)
        }
    }

    /// The action to chain to for `signal` (a copy, under its lock), or the default one.
    fn previous_action(signal: libc::c_int) -> libc::sigaction {
        let slot = signal as usize;
        // SAFETY: a zeroed sigaction is the default action.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        if slot < MAX_SIGNAL && SAVED[slot].load(Ordering::Acquire) {
            lock_previous(slot);
            // SAFETY: the entry was written before SAVED was set; the lock orders rewrites.
            action = unsafe { (*PREVIOUS.0.get())[slot].assume_init() };
            PREVIOUS_LOCK[slot].store(false, Ordering::Release);
        }
        action
    }

    /// Makes `action` the one to chain to for `signal`.
    fn set_previous(signal: libc::c_int, action: libc::sigaction) {
        let slot = signal as usize;
        if slot >= MAX_SIGNAL {
            return;
        }
        // The signal is blocked while the lock is held, so that its handler never spins on
        // a lock its own thread holds (at install; the handler itself runs with it blocked).
        // SAFETY: (all calls) sigset operations and pthread_sigmask only touch the sets
        // passed and are async-signal-safe; the entry is written under its lock and readers
        // copy it under the same lock.
        unsafe {
            let mut block: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut block);
            libc::sigaddset(&mut block, signal);
            libc::pthread_sigmask(libc::SIG_BLOCK, &block, &mut old);
            lock_previous(slot);
            (*PREVIOUS.0.get())[slot].write(action);
            SAVED[slot].store(true, Ordering::Release);
            PREVIOUS_LOCK[slot].store(false, Ordering::Release);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }

    /// Spins for an entry's lock: held only to copy one struct, never across a call that can
    /// fault or wait, and with its signal blocked (a handler never waits on its own thread).
    fn lock_previous(slot: usize) {
        while PREVIOUS_LOCK[slot]
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    /// What the action the signal had before does with it.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Next {
        /// The default action: for every signal handled here, the end of the process.
        Default,
        /// Ignored: a fault still ends the process (the kernel forces the default action).
        Ignore,
        /// The program's (or Rust's) own handler, which may survive the signal.
        Handler,
    }

    fn next(action: &libc::sigaction) -> Next {
        match action.sa_sigaction {
            libc::SIG_DFL => Next::Default,
            libc::SIG_IGN => Next::Ignore,
            _ => Next::Handler,
        }
    }

    /// Whether `on_signal` is the action installed for `signal` now.
    fn installed(signal: libc::c_int) -> bool {
        // SAFETY: a zeroed sigaction is valid to be written by sigaction.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying an action is async-signal-safe and only writes `current`.
        let queried = unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } == 0;
        queried && current.sa_sigaction == on_signal as *const () as usize
    }

    extern "C" fn on_signal(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: errno is thread-local; saved and restored around the handler's calls.
        let errno = unsafe { *libc::__errno_location() };
        // SAFETY: the kernel passes a valid siginfo_t (or null) to an SA_SIGINFO handler.
        let (code, address, sender) = match unsafe { info.as_ref() } {
            // SAFETY: si_addr is valid to read for every fault signal, si_pid for a sent one
            // (each only used for its kind of signal).
            Some(info) => (info.si_code, unsafe { info.si_addr() } as u64, unsafe {
                info.si_pid()
            }),
            None => (0, 0, 0),
        };
        let fault = matches!(
            signal,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE
        ) && code > 0;
        // abort() raises SIGABRT at its own process and never returns (after a handler that
        // returns, it puts the default action back and raises again).
        // SAFETY: getpid has no preconditions.
        let aborting = signal == libc::SIGABRT && code <= 0 && sender == unsafe { libc::getpid() };
        let previous = previous_action(signal);
        let next = next(&previous);
        // The process dies of this signal: flush everything and note it. A handler of the
        // program's decides instead (below): nothing is claimed before it returns.
        let dies = match next {
            Next::Default => true,
            Next::Ignore => fault || aborting,
            Next::Handler => aborting,
        };
        // Whether this call came from the kernel to the installed handler (not from a
        // program's handler installed later that chains to this one as its previous).
        let ours = next == Next::Handler && installed(signal);
        if dies {
            flush_and_note(signal, fault.then_some(address));
        }
        if next == Next::Handler {
            // SAFETY: `previous` is the action the signal had before this handler, called as
            // the kernel would have called it.
            unsafe { chain(signal, info, context, &previous) };
            // It returned: the program handled the signal (a fault it fixed, or a signal it
            // survives), or it expects the fault to repeat under the action it set. Either
            // way stay first: a chained handler that changed the action (Rust's puts the
            // default back before returning) is replaced by this one again, chaining to
            // what it set, so a repeated fault or a later crash still comes here first.
            if ours && !installed(signal) {
                // SAFETY: a zeroed sigaction is valid to be written by sigaction.
                let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
                // SAFETY: querying an action only writes `current`.
                if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } == 0 {
                    set_previous(signal, current);
                    take(signal);
                }
            }
        } else if dies {
            // SAFETY: restoring the saved action and raising are async-signal-safe.
            unsafe {
                libc::sigaction(signal, &previous, std::ptr::null_mut());
                if !fault {
                    // Blocked while this handler runs: delivered to `previous` on return.
                    libc::raise(signal);
                }
            }
        }
        // (Otherwise ignored, and not a fault: nothing happens to the process.)
        // SAFETY: restoring this thread's errno.
        unsafe { *libc::__errno_location() = errno };
    }

    /// Flushes every recorder and notes the signal, from the handler.
    fn flush_and_note(signal: libc::c_int, fault_address: Option<u64>) {
        let me = gettid();
        IN_HANDLER.fetch_add(1, Ordering::SeqCst);
        match FLUSHING.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => {
                flush_all(signal, fault_address, me);
                FLUSHING.store(0, Ordering::SeqCst);
            }
            // A fault inside this thread's own flush: pass it on.
            Err(holder) if holder == me => {}
            // Another thread is flushing: let it finish before this signal ends the process.
            Err(_) => {
                let deadline = monotonic_ns().saturating_add(LOCK_WAIT_NS);
                while FLUSHING.load(Ordering::SeqCst) != 0 && monotonic_ns() < deadline {
                    pause();
                }
            }
        }
        IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
    }

    /// Calls `previous`, a handler, as the kernel would: its mask added (and the signal's,
    /// unless `SA_NODEFER`), with `siginfo` and context for an `SA_SIGINFO` one, and the
    /// action reset to the default first for an `SA_RESETHAND` one.
    ///
    /// # Safety
    ///
    /// - `previous.sa_sigaction` is a signal handler of the shape its flags say.
    /// - `info` and `context` are the ones the kernel passed for `signal`.
    unsafe fn chain(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
        previous: &libc::sigaction,
    ) {
        let mut mask = previous.sa_mask;
        // SAFETY: (all calls) sigaddset and pthread_sigmask only touch the sets passed, and
        // are async-signal-safe; the handler's shape is the caller's obligation.
        unsafe {
            if previous.sa_flags & libc::SA_NODEFER == 0 {
                libc::sigaddset(&mut mask, signal);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut old);
            if previous.sa_flags & libc::SA_RESETHAND != 0 {
                set_previous(signal, std::mem::zeroed());
            }
            if previous.sa_flags & libc::SA_SIGINFO != 0 {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(previous.sa_sigaction);
                handler(signal, info, context);
            } else {
                let handler: extern "C" fn(libc::c_int) =
                    std::mem::transmute(previous.sa_sigaction);
                handler(signal);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }

    /// The process id (`getpid`, async-signal-safe; `std::process::id` is the same call).
    pub(super) fn process_id() -> u32 {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() as u32 }
    }

    /// CLOCK_MONOTONIC in ns (async-signal-safe).
    pub(super) fn monotonic_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// Sleeps 100 µs (async-signal-safe).
    pub(super) fn pause() {
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 100_000,
        };
        // SAFETY: nanosleep only reads `ts`.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }

    /// Writes all of `bytes` to `fd` with `write(2)`; false on an error.
    pub(super) fn write_fd(fd: i32, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            // SAFETY: `bytes` is a valid slice; write reads at most its length.
            let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
            if n < 0 {
                // SAFETY: reading this thread's errno.
                if unsafe { *libc::__errno_location() } == libc::EINTR {
                    continue;
                }
                return false;
            }
            if n == 0 {
                return false;
            }
            bytes = &bytes[n as usize..];
        }
        true
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(crate) fn current_thread_id() -> i32 {
        0
    }
    pub(super) fn install() {}
    pub(crate) fn block_termination_signals() {}
    pub(crate) fn signal_stack() {}
    pub(super) fn process_id() -> u32 {
        std::process::id()
    }
    pub(super) fn monotonic_ns() -> u64 {
        0
    }
    pub(super) fn pause() {}
    pub(super) fn write_fd(_fd: i32, _bytes: &[u8]) -> bool {
        false
    }
}

pub(crate) use imp::{block_termination_signals, current_thread_id, signal_stack};

/// Flushes `shared` on a fatal signal (installing the handlers on first use). A recorder
/// that finds no free slot is not flushed.
pub(super) fn register(shared: &Arc<Shared>) {
    imp::install();
    let raw = Arc::into_raw(shared.clone()).cast_mut();
    for slot in &RECORDERS {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return;
        }
    }
    // SAFETY: `raw` came from `Arc::into_raw` above and was stored nowhere.
    drop(unsafe { Arc::from_raw(raw) });
}

/// Stops flushing `shared` (it is closing); waits for a running handler to let go of it.
pub(super) fn unregister(shared: &Shared) {
    let target = std::ptr::from_ref(shared).cast_mut();
    for slot in &RECORDERS {
        if slot
            .compare_exchange(
                target,
                std::ptr::null_mut(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            while IN_HANDLER.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
            // SAFETY: the slot held the pointer `register` made with `Arc::into_raw`, and no
            // handler can load it any more.
            drop(unsafe { Arc::from_raw(target) });
        }
    }
}

/// Flushes every registered recorder (from the handler of `signal`).
fn flush_all(signal: i32, fault_address: Option<u64>, me: i32) {
    for slot in &RECORDERS {
        let shared = slot.load(Ordering::SeqCst);
        // SAFETY: a registered pointer stays valid while `IN_HANDLER` is non-zero (see
        // `unregister`), and the caller counted itself in.
        if let Some(shared) = unsafe { shared.as_ref() } {
            shared.flush_on_signal(signal, fault_address, me);
        }
    }
}

impl Shared {
    /// Writes every thread's pending records and a [`FatalSignal`] to the file, from a signal
    /// handler on thread `me`.
    fn flush_on_signal(&self, signal: i32, fault_address: Option<u64>, me: i32) {
        if self.signal_fd.is_none() || imp::process_id() != self.pid {
            return;
        }
        let deadline = imp::monotonic_ns().saturating_add(LOCK_WAIT_NS);
        let mut core = loop {
            match self.core.try_lock() {
                Ok(core) => break core,
                Err(std::sync::TryLockError::Poisoned(core)) => break core.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    // This thread crashed inside the recorder: its state is half-changed.
                    if self.core_holder.load(Ordering::Relaxed) == me
                        || imp::monotonic_ns() >= deadline
                    {
                        return;
                    }
                    imp::pause();
                }
            }
        };
        self.core_holder.store(me, Ordering::Relaxed);
        // Asked now, not at start: the program may have closed the descriptor, or given its
        // number to a file of its own, since (the sink then says none).
        let Some(fd) = core.sink.as_ref().and_then(|sink| sink.signal_fd()) else {
            self.core_holder.store(0, Ordering::Relaxed);
            return;
        };
        let time_ns = self.now_ns();
        let note = Record::FatalSignal(FatalSignal {
            time_ns,
            signal,
            witness: SignalWitness::Handler,
            fault_address,
        });
        let losses = Losses {
            time_ns,
            before: core.dropped_total(self),
            lossy: self.mode == crate::TraceMode::Lossy,
        };
        core.write_on_signal(fd, &note, losses);
        self.core_holder.store(0, Ordering::Relaxed);
    }
}

/// What a [`RecordsLost`] written by the fatal-signal flush counts on top of its own losses.
#[derive(Clone, Copy)]
pub(super) struct Losses {
    /// The signal's time.
    pub(super) time_ns: u64,
    /// Records lost before the signal.
    pub(super) before: u64,
    /// Whether the session is lossy.
    pub(super) lossy: bool,
}

impl Core {
    /// Drains every ring into uncompressed blocks written to `fd`, ending with `note`; each
    /// deferred job met (not run) is replaced by a [`RecordsLost`] naming what it would have
    /// recorded. No allocation: entries that do not fit the reserved buffers are skipped.
    pub(super) fn write_on_signal(&mut self, fd: i32, note: &Record, losses: Losses) {
        if self.closed || self.error.is_some() || self.sink.is_none() {
            return;
        }
        // Blocks handed to the compression threads come first in the file.
        self.write_in_flight_on_signal(fd);
        let mut staging = std::mem::take(&mut self.staging);
        staging.clear();
        for i in 0..self.consumers.len() {
            if staging.capacity() < self.consumers[i].capacity() {
                continue;
            }
            // Entries held back behind a job not ready yet come first (moved, not copied).
            let mut held = std::mem::take(&mut self.consumers[i].held);
            self.transcode_on_signal(fd, &held, losses);
            held.clear();
            self.consumers[i].held = held;
            self.consumers[i].drain_into(&mut staging);
            self.transcode_on_signal(fd, &staging, losses);
            staging.clear();
            // The thread's ranges still open, to the signal, after what it recorded.
            let consumer = &self.consumers[i];
            let mut open = [(0u32, 0u32, 0u64); crate::ring::OPEN_RANGES];
            let mut count = 0;
            consumer.open_ranges(|thread, name, start_ns| {
                if let Some(slot) = open.get_mut(count) {
                    *slot = (thread, name, start_ns);
                    count += 1;
                }
            });
            for &(thread, name, start_ns) in &open[..count] {
                let range = Record::AnnotationRange(AnnotationRange {
                    thread,
                    name: AnnotationId(name),
                    start_ns,
                    end_ns: losses.time_ns.max(start_ns),
                });
                self.append_on_signal(fd, &range);
            }
        }
        self.staging = staging;
        self.append_on_signal(fd, note);
        self.write_block_on_signal(fd);
    }

    /// Appends `record` to the block being assembled (written first when full), encoded on
    /// the stack.
    fn append_on_signal(&mut self, fd: i32, record: &Record) {
        let mut scratch = [0u8; 160];
        if let Ok(frame) = crate::format::encode_untimed_frame_in(record, &mut scratch) {
            if frame.len() > self.pending.capacity() - self.pending.len() {
                self.write_block_on_signal(fd);
            }
            if frame.len() <= self.pending.capacity() - self.pending.len() {
                self.pending.extend_from_slice(frame);
                self.pending_records += 1;
            }
        }
    }

    /// Transcodes ring `entries` into uncompressed blocks written to `fd`; each deferred job
    /// met (not run) is replaced by a [`RecordsLost`]. No allocation: an entry that does not
    /// fit the reserved buffers is skipped.
    fn transcode_on_signal(&mut self, fd: i32, entries: &[u8], losses: Losses) {
        let mut at = 0;
        while let Some((len, frame_bytes)) = staging::entry_bounds(&entries[at..]) {
            if let Some(kind) = staging::deferred_kind(&entries[at..]) {
                // Its box is leaked: freeing could take the allocator's lock.
                self.note_lost_on_signal(fd, kind, losses);
                at += len;
                continue;
            }
            if frame_bytes > self.pending.capacity() - self.pending.len() {
                self.write_block_on_signal(fd);
            }
            if frame_bytes <= self.pending.capacity() - self.pending.len() {
                let done = staging::transcode(
                    &entries[at..at + len],
                    &mut self.frames,
                    &mut self.pending,
                    // No summary: it may allocate, and this runs in a signal handler.
                    None,
                );
                self.pending_records += done.records;
            }
            at += len;
        }
    }

    /// Appends the [`RecordsLost`] of a deferred job of `kind` that the flush cannot run: the
    /// losses before the signal and those of the flush so far, by kind (the entries reserved
    /// when the recorder started: no allocation).
    fn note_lost_on_signal(&mut self, fd: i32, kind: staging::DeferredKind, losses: Losses) {
        let mut by_kind = std::mem::take(&mut self.lost_on_signal);
        let mut here = 0;
        for lost in &mut by_kind {
            if lost.kind == kind.record_kind() {
                lost.records += 1;
            }
            here += lost.records;
        }
        let record = Record::RecordsLost(RecordsLost {
            time_ns: losses.time_ns,
            lossy: losses.lossy,
            total: losses.before + here,
            by_kind,
        });
        self.append_on_signal(fd, &record);
        if let Record::RecordsLost(record) = record {
            self.lost_on_signal = record.by_kind;
        }
    }

    /// Writes the pending frames as one uncompressed block with `write(2)`.
    fn write_block_on_signal(&mut self, fd: i32) {
        if self.pending.is_empty() {
            return;
        }
        // Taken and put back: nothing allocated.
        let pending = std::mem::take(&mut self.pending);
        self.write_stored_on_signal(fd, &pending, self.pending_records);
        self.pending = pending;
        self.pending.clear();
        self.pending_records = 0;
        self.frames.reset();
    }

    /// Writes `payload`, `records` framed records, as one uncompressed records block with
    /// `write(2)`; false when a write failed.
    pub(super) fn write_stored_on_signal(&mut self, fd: i32, payload: &[u8], records: u32) -> bool {
        let header = BlockHeader {
            kind: BlockKind::RECORDS,
            flags: 0,
            stored_len: payload.len() as u32,
            uncompressed_len: payload.len() as u32,
            record_count: records,
            checksum: xxhash_rust::xxh3::xxh3_64(payload),
        }
        .encode();
        self.write_block_bytes_on_signal(fd, BlockKind::RECORDS, records, &header, payload)
    }

    /// Writes the block `head` then `body` (after the file header, before the first block)
    /// with `write(2)`, indexes it and reports it; false when a write failed.
    pub(super) fn write_block_bytes_on_signal(
        &mut self,
        fd: i32,
        kind: BlockKind,
        records: u32,
        head: &[u8],
        body: &[u8],
    ) -> bool {
        let written = imp::write_fd(fd, &self.unwritten_header)
            && imp::write_fd(fd, head)
            && imp::write_fd(fd, body);
        if written {
            let header_len = self.unwritten_header.len() as u64;
            self.unwritten_header.clear();
            if self.index.len() < self.index.capacity() {
                self.index.push(IndexEntry {
                    offset: self.offset + header_len,
                    kind,
                    record_count: records,
                });
            }
            self.offset += header_len + (head.len() + body.len()) as u64;
            self.records += u64::from(records);
            #[cfg(unix)]
            if let Some(report) = &mut self.report {
                report.blocks += 1;
                report.records += u64::from(records);
                let mut line = LineBuf::default();
                line.push(b"blocks ");
                line.number(report.blocks);
                line.push(b" end ");
                line.number(self.offset);
                line.push(b" records ");
                line.number(report.records);
                line.push(b"\n");
                use std::os::fd::AsRawFd;
                let _ = imp::write_fd(report.file.as_raw_fd(), line.bytes());
            }
        }
        written
    }
}

/// A flush-report line built on the stack.
struct LineBuf {
    bytes: [u8; 96],
    len: usize,
}

impl Default for LineBuf {
    fn default() -> LineBuf {
        LineBuf {
            bytes: [0; 96],
            len: 0,
        }
    }
}

impl LineBuf {
    fn push(&mut self, text: &[u8]) {
        let end = (self.len + text.len()).min(self.bytes.len());
        self.bytes[self.len..end].copy_from_slice(&text[..end - self.len]);
        self.len = end;
    }

    fn number(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A SIGTERM noted by the handler at `time_ns` 7 with nothing lost before it: what the tests
/// that drive [`Core::write_on_signal`] directly pass it.
#[cfg(test)]
pub(super) fn test_sigterm() -> (Record, Losses) {
    let note = Record::FatalSignal(crate::schema::FatalSignal {
        time_ns: 7,
        signal: libc::SIGTERM,
        witness: crate::schema::SignalWitness::Handler,
        fault_address: None,
    });
    let losses = Losses {
        time_ns: 7,
        before: 0,
        lossy: false,
    };
    (note, losses)
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
