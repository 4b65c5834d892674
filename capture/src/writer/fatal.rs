//! The fatal-signal flush: when the traced process receives a signal that ends it, every live
//! recorder writes what every thread still holds to its file before the process dies.
//!
//! Records reach the file at the writer's 100 ms flush; a crash used to lose everything since
//! the last one, which is exactly the call that crashed. So, for SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE and SIGABRT (and SIGTERM, SIGINT, SIGHUP and SIGQUIT when the program left their
//! action the default one, so that a hang killed by `timeout` or Ctrl-C keeps its last
//! records too), a recorder installs a handler (`SA_SIGINFO | SA_ONSTACK`) that:
//!
//! 1. takes the recorder's core lock with `try_lock`, waiting at most [`LOCK_WAIT_NS`] for
//!    the writer thread to finish a block (it never waits on a lock its own thread holds);
//! 2. drains every thread's ring into the block being assembled, appends a
//!    [`FatalSignal`] record, and writes the block uncompressed with `write(2)` on the file
//!    descriptor the sink opened at start ([`super::Sink::signal_fd`]), as one or more
//!    complete blocks;
//! 3. restores the action the signal had before (the program's own handler, Rust's stack
//!    overflow handler, or the default) and passes the signal on: a fault the kernel raised
//!    (SIGSEGV, SIGBUS, SIGILL, SIGFPE with a positive `si_code`) repeats when the handler
//!    returns and reaches that action with its own `siginfo`; a signal a process sent (`kill`,
//!    `abort`) is raised again and delivered to it when the handler returns.
//!
//! Nothing on this path allocates or takes a lock another thread may hold forever: the
//! buffers (a ring's worth of staging, a block's worth of frames, spare index entries) are
//! reserved when the recorder starts, the frames are encoded in place, the signal record on
//! the stack.
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
//!   periodic flush wrote (`hrx-trace record` then notes the death itself).
//! - A crash on a thread that holds the recorder's lock (inside the recorder's own writing),
//!   or while the writer thread holds it for longer than [`LOCK_WAIT_NS`], writes nothing
//!   more. A crash during the fatal-signal flush itself (memory so damaged that the rings
//!   are) stops that flush.
//! - Work deferred to the writer thread (hashing and storing outputs) that had not run is
//!   not run: those digests are missing, which is what replay already tolerates.
//! - Records a thread pushes while the flush runs may land after the [`FatalSignal`].
//! - A program that installs its own handler for these signals after the runtime started
//!   replaces this one (nothing is flushed unless it passes the signal on to the previous
//!   handler); one installed before is chained to.
//! - At most [`SLOTS`] recorders of one process are flushed (a process has one in practice).
//! - A child forked without `exec` writes nothing into its parent's trace (it shares the
//!   file descriptor; its own records are lost with it).

use super::{Core, Shared};
use crate::format::{BLOCK_HEADER_LEN, BlockHeader, BlockKind, IndexEntry};
use crate::schema::{FatalSignal, Record, SignalWitness};
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
    /// Termination signals: handled only where the program left the default action.
    const TERMINATIONS: [libc::c_int; 4] =
        [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];
    const MAX_SIGNAL: usize = 32;

    /// The action each signal had before, written once before `SAVED` is set.
    struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; MAX_SIGNAL]>);
    // SAFETY: each entry is written once, by `install`, before its `SAVED` flag is stored
    // with Release; it is read only after that flag is loaded with Acquire.
    unsafe impl Sync for Previous {}
    static PREVIOUS: Previous = Previous(UnsafeCell::new(
        [const { MaybeUninit::uninit() }; MAX_SIGNAL],
    ));
    static SAVED: [AtomicBool; MAX_SIGNAL] = [const { AtomicBool::new(false) }; MAX_SIGNAL];

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

    /// Installs the handlers, once per process.
    pub(super) fn install() {
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
        // SAFETY: zeroed sigaction structs are valid; `on_signal` has the SA_SIGINFO shape
        // and does only async-signal-safe work (see the module docs).
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                return;
            }
            if only_if_default && current.sa_sigaction != libc::SIG_DFL {
                return;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut previous) != 0 {
                return;
            }
            let slot = signal as usize;
            (*PREVIOUS.0.get())[slot].write(previous);
            SAVED[slot].store(true, Ordering::Release);
        }
    }

    extern "C" fn on_signal(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: errno is thread-local; saved and restored around the handler's calls.
        let errno = unsafe { *libc::__errno_location() };
        // SAFETY: the kernel passes a valid siginfo_t (or null) to an SA_SIGINFO handler.
        let (code, address) = match unsafe { info.as_ref() } {
            // SAFETY: si_addr is valid to read for every fault signal.
            Some(info) => (info.si_code, unsafe { info.si_addr() } as u64),
            None => (0, 0),
        };
        let fault = matches!(
            signal,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE
        ) && code > 0;
        let me = gettid();
        IN_HANDLER.fetch_add(1, Ordering::SeqCst);
        match FLUSHING.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => {
                flush_all(signal, fault.then_some(address), me);
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
        // SAFETY: restoring a saved (or the default) action and raising are
        // async-signal-safe.
        unsafe {
            let slot = signal as usize;
            let mut previous: libc::sigaction = std::mem::zeroed();
            if slot < MAX_SIGNAL && SAVED[slot].load(Ordering::Acquire) {
                previous = (*PREVIOUS.0.get())[slot].assume_init();
            } else {
                previous.sa_sigaction = libc::SIG_DFL;
            }
            libc::sigaction(signal, &previous, std::ptr::null_mut());
            if !fault {
                // Blocked while this handler runs: delivered to `previous` on return.
                libc::raise(signal);
            }
            *libc::__errno_location() = errno;
        }
        let _ = context;
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

pub(crate) use imp::current_thread_id;

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
        let Some(fd) = self.signal_fd else { return };
        if imp::process_id() != self.pid {
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
        let note = Record::FatalSignal(FatalSignal {
            time_ns: self.now_ns(),
            signal,
            witness: SignalWitness::Handler,
            fault_address,
        });
        core.write_on_signal(fd, &note);
        self.core_holder.store(0, Ordering::Relaxed);
    }
}

impl Core {
    /// Drains every ring into uncompressed blocks written to `fd`, ending with `note`. No
    /// allocation: entries that do not fit the reserved buffers are skipped.
    fn write_on_signal(&mut self, fd: i32, note: &Record) {
        if self.closed || self.error.is_some() || self.sink.is_none() {
            return;
        }
        let mut staging = std::mem::take(&mut self.staging);
        staging.clear();
        for i in 0..self.consumers.len() {
            if staging.capacity() < self.consumers[i].capacity() {
                continue;
            }
            self.consumers[i].drain_into(&mut staging);
            let mut at = 0;
            while let Some((len, frame_bytes)) = staging::entry_bounds(&staging[at..]) {
                if frame_bytes > self.pending.capacity() - self.pending.len() {
                    self.write_block_on_signal(fd);
                }
                if frame_bytes <= self.pending.capacity() - self.pending.len() {
                    // One whole entry: a deferred job's is left unrun (and its box leaked:
                    // freeing could take the allocator's lock).
                    let done = staging::transcode(
                        &staging[at..at + len],
                        &mut self.frames,
                        &mut self.pending,
                    );
                    self.pending_records += done.records;
                }
                at += len;
            }
            staging.clear();
        }
        self.staging = staging;
        let mut scratch = [0u8; 96];
        if let Ok(frame) = crate::format::encode_untimed_frame_in(note, &mut scratch) {
            if frame.len() > self.pending.capacity() - self.pending.len() {
                self.write_block_on_signal(fd);
            }
            if frame.len() <= self.pending.capacity() - self.pending.len() {
                self.pending.extend_from_slice(frame);
                self.pending_records += 1;
            }
        }
        self.write_block_on_signal(fd);
    }

    /// Writes the pending frames as one uncompressed block with `write(2)`.
    fn write_block_on_signal(&mut self, fd: i32) {
        if self.pending.is_empty() {
            return;
        }
        let header = BlockHeader {
            kind: BlockKind::RECORDS,
            flags: 0,
            stored_len: self.pending.len() as u32,
            uncompressed_len: self.pending.len() as u32,
            record_count: self.pending_records,
            checksum: xxhash_rust::xxh3::xxh3_64(&self.pending),
        }
        .encode();
        let written = imp::write_fd(fd, &self.unwritten_header)
            && imp::write_fd(fd, &header)
            && imp::write_fd(fd, &self.pending);
        if written {
            let header_len = self.unwritten_header.len() as u64;
            self.unwritten_header.clear();
            if self.index.len() < self.index.capacity() {
                self.index.push(IndexEntry {
                    offset: self.offset + header_len,
                    kind: BlockKind::RECORDS,
                    record_count: self.pending_records,
                });
            }
            self.offset += header_len + (BLOCK_HEADER_LEN + self.pending.len()) as u64;
            self.records += u64::from(self.pending_records);
            #[cfg(unix)]
            if let Some(report) = &mut self.report {
                report.blocks += 1;
                report.records += u64::from(self.pending_records);
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
        self.pending.clear();
        self.pending_records = 0;
        self.frames.reset();
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use crate::schema::{FatalSignal, Record, RegionIndex, RegionStarted, RuntimeId};
    use crate::schema::{SignalWitness, SubmissionIndex};
    use crate::{Recorder, RecorderOptions, read_all};
    use std::time::Duration;

    /// Set in the child process: `MODE PATH`.
    const CHILD_ENV: &str = "HRX_CAPTURE_FATAL_CHILD";
    const THREADS: u32 = 3;
    const PER_THREAD: u64 = 200;

    fn started(thread: u32, i: u64) -> Record {
        Record::RegionStarted(RegionStarted {
            runtime: RuntimeId(thread),
            submission: SubmissionIndex(i),
            region: RegionIndex(0),
            time_ns: i,
        })
    }

    /// The child: records from several threads that stay alive, with a flush period no test
    /// reaches, then dies of the signal MODE asks for. Only the fatal-signal flush can write
    /// the records.
    fn child(mode: &str, path: &str) -> ! {
        let options = RecorderOptions {
            flush_interval: Duration::from_secs(3600),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::create(path, options).unwrap();
        let (done, recorded) = std::sync::mpsc::channel();
        for thread in 0..THREADS {
            let (recorder, done) = (recorder.clone(), done.clone());
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    recorder.record(&started(thread, i));
                }
                done.send(()).unwrap();
                loop {
                    std::thread::park();
                }
            });
        }
        for _ in 0..THREADS {
            recorded.recv().unwrap();
        }
        match mode {
            // SAFETY: none: this write to an unmapped page is the crash under test.
            "segv" => unsafe { std::ptr::write_volatile(16 as *mut u64, 1) },
            "abort" => std::process::abort(),
            // SAFETY: raise has no memory preconditions.
            _ => unsafe {
                libc::raise(libc::SIGTERM);
            },
        }
        unreachable!("the signal ends the process");
    }

    #[test]
    fn a_fatal_signal_writes_every_threads_pending_records() {
        if let Ok(spec) = std::env::var(CHILD_ENV) {
            let (mode, path) = spec.split_once(' ').unwrap();
            child(mode, path);
        }
        let dir = tempfile::tempdir().unwrap();
        for (mode, signal) in [
            ("segv", libc::SIGSEGV),
            ("abort", libc::SIGABRT),
            ("term", libc::SIGTERM),
        ] {
            let path = dir.path().join(format!("{mode}.hrxt"));
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "writer::fatal::tests::a_fatal_signal_writes_every_threads_pending_records",
                    "--exact",
                    "--nocapture",
                ])
                .env(CHILD_ENV, format!("{mode} {}", path.display()))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(signal), "{mode}: {status:?}");
            let trace = read_all(&path).unwrap();
            let r = &trace.recovery;
            assert!(!r.closed, "{mode}: {r:?}");
            assert_eq!(
                (r.bytes_discarded, r.skipped_blocks),
                (0, 0),
                "{mode}: {r:?}"
            );
            // Every thread's records, in each thread's order, then the signal.
            for thread in 0..THREADS {
                let mine: Vec<&Record> = trace
                    .records
                    .iter()
                    .filter(|r| r.runtime() == Some(RuntimeId(thread)))
                    .collect();
                let expected: Vec<Record> = (0..PER_THREAD).map(|i| started(thread, i)).collect();
                assert_eq!(mine, expected.iter().collect::<Vec<_>>(), "{mode}");
            }
            match trace.records.last() {
                Some(Record::FatalSignal(FatalSignal {
                    signal: s,
                    witness: SignalWitness::Handler,
                    fault_address,
                    ..
                })) => {
                    assert_eq!(*s, signal, "{mode}");
                    assert_eq!(fault_address.is_some(), mode == "segv", "{mode}");
                }
                other => panic!("{mode}: last record {other:?}"),
            }
        }
    }
}
