//! An output being written when hrx-trace is interrupted is removed: a half-written export
//! or trim is no export or trace (a Chrome JSON that does not parse, a truncated Perfetto
//! trace, a `.partial` trim left beside its output). A verb that writes nothing (`replay`,
//! `diff`) says that it was interrupted and what that left ([`Interruptible::say`]): it
//! exited 130 on Ctrl-C without a word.
//!
//! [`Interruptible::install`] sets handlers for SIGINT, SIGTERM, SIGHUP, and the user
//! signals and the timers' that would end the process by their default action
//! (`record::signals::SIGNALS`, with `record::signals::set_handlers`, as `record` does);
//! [`Interruptible::create_beside`] then creates the output's temporary file with the signals
//! blocked, and names it to the handlers before they may run. A handler unlinks the file
//! named, says so on standard error (one `error: interrupted by ...` line) and exits 128+N
//! for signal N, as `record` does (all three async-signal-safe: `unlink`, `write`, `_exit`).
//! The file's name and the message are prepared before, in memory that is never freed, so a
//! handler running on any thread while the output is finished or forgotten reads a valid
//! one. [`Interruptible::finished`] (or dropping it) forgets the file and gives the signals
//! their default action again.
//!
//! A commit ([`Interruptible::commit_saying`]: the renames that
//! put a complete output in place) runs with the signals blocked on its thread, and a
//! handler on another thread waits for it to end (a handler already running ends the
//! process before a commit starts): the output is then whole where it was or whole where it
//! goes, and the line said is the one named for after the commit (`baseline saved to B`,
//! never `no baseline saved`).
//!
//! A report printed on standard output ([`Interruptible::print_report`]: `replay`'s and
//! `diff`'s) is written so that an interruption says what was printed: nothing yet, part of
//! it, or the whole report. Each `write` of it (a page at most) runs with the signals let
//! in, so that an interruption is never held off by a reader that stopped reading; once its
//! bytes are out, what a handler says next is named with the signals blocked and a handler
//! elsewhere waiting, as a commit is. The last write names the report whole. (A signal
//! after its last byte said the report was incomplete, and one before its first said it
//! stopped "while" it was printed: break-it E2. Writes made with the signals blocked, after
//! a `poll`, held an interruption off for as long as a terminal or a shared pipe kept a
//! write waiting: a second break-it pass.) From the first write's start to its return an
//! interruption cannot know whether a byte got out (a terminal takes part of a write and
//! waits), and says `none or part of it`; a signal between the last write's return and its
//! naming says `incomplete` of a report that is whole.
//!
//! SIGKILL (an OOM kill) runs no handler: the next writer of the same output removes what a
//! killed one left ([`hrx_capture::replace::remove_abandoned`]). Each writer holds a lock on its temporary output
//! while it lives, so one whose lock can be taken is abandoned, whatever became of its
//! process id (reused by another process or not); the folder is locked meanwhile, so that
//! a temporary output just created, not yet locked, is not taken for an abandoned one.

use hrx_capture::ShowPath;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::record::signals::{SIGNALS, restore_defaults, set_handlers};

/// What a handler removes and says, for each of [`SIGNALS`].
struct Removal {
    /// The files removed (one output, or a directory's tables).
    paths: Vec<CString>,
    /// Directories removed after them, in order (a directory of tables being written, then
    /// the one the export created for them): `rmdir`, so each only when it is left empty.
    dirs: Vec<CString>,
    /// (signal, message) for each of [`SIGNALS`].
    messages: [(libc::c_int, Vec<u8>); SIGNALS.len()],
    /// Whether the message is said with nothing removed (nothing was to be: a verb that
    /// writes no output), else only once a file was.
    always: bool,
}

/// The output a handler removes, else null. Never freed once set.
static OUTPUT: AtomicPtr<Removal> = AtomicPtr::new(std::ptr::null_mut());

/// Neither a handler nor a commit runs ([`STATE`]).
const IDLE: u8 = 0;
/// A handler runs: it ends the process.
const HANDLING: u8 = 1;
/// A commit runs, its thread's signals blocked.
const COMMITTING: u8 = 2;

/// Whether a handler or a commit runs: each waits for the other (see the module docs).
static STATE: AtomicU8 = AtomicU8::new(IDLE);

extern "C" fn handler(signal: libc::c_int) {
    // No other of the signals runs a handler on this thread from now on (one that came
    // before this line ends the process itself); a commit on another thread is waited for.
    // SAFETY: sigset_t is plain data initialised by sigemptyset; pthread_sigmask, sigemptyset
    // and sigaddset are async-signal-safe.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    while STATE
        .compare_exchange(IDLE, HANDLING, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // A commit ends, or another thread's handler ends the process.
        std::hint::spin_loop();
    }
    let removal = OUTPUT.load(Ordering::SeqCst);
    if !removal.is_null() {
        // SAFETY: a non-null pointer is a leaked `Removal`, never freed; unlink and write
        // are async-signal-safe.
        unsafe {
            let removal = &*removal;
            let mut removed = false;
            for path in &removal.paths {
                removed |= libc::unlink(path.as_ptr()) == 0;
            }
            for dir in &removal.dirs {
                libc::rmdir(dir.as_ptr());
            }
            if (removed || removal.always)
                && let Some((_, message)) = removal.messages.iter().find(|(s, _)| *s == signal)
            {
                libc::write(2, message.as_ptr().cast(), message.len());
            }
        }
    }
    // SAFETY: _exit is async-signal-safe and ends the process without running anything more.
    unsafe { libc::_exit(128 + signal) };
}

/// How long a writer waits for its output folder's lock before it goes on without it: the
/// folder may be locked around this very command (`flock DIR hrx-trace export ... -o
/// DIR/x`, a shell's mutual exclusion), which waiting for ever would deadlock.
const FOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The lock on an output folder (see [`hrx_capture::replace::lock`]), waited for at most [`FOLDER_WAIT`]: `None`
/// where another holds it that long, or where there is none to take. Without it a writer
/// removes no abandoned output (one just created, not yet locked, could be taken for one).
pub fn lock_folder(path: &Path) -> Option<File> {
    folder_lock(path, None)
}

/// The lock on an output folder, waited for as long as it takes (Parquet's tables are moved
/// in under it, never interleaved with another export's): past [`FOLDER_WAIT`] standard
/// error says what it waits for, naming the folder as `shown`; an interrupt ends the wait.
/// `None` where there is no lock to take.
pub fn lock_folder_waiting(path: &Path, shown: &Path) -> Option<File> {
    folder_lock(path, Some(shown))
}

/// The folder an output is written in (`.` for a bare name).
fn folder_of(output: &Path) -> &Path {
    match output.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(folder) => folder,
        None => Path::new("."),
    }
}

fn folder_lock(path: &Path, then_wait: Option<&Path>) -> Option<File> {
    let file = File::open(path).ok()?;
    let deadline = std::time::Instant::now() + FOLDER_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let shown = then_wait?;
                crate::output::note(format_args!(
                    "waiting for the lock on {}: another export moving its tables in, or a \
                     process holding it (`flock`), has it; Ctrl-C stops",
                    shown.shown()
                ));
                return file.lock().is_ok().then_some(file);
            }
            Err(_) => return None,
        }
    }
}

/// The handlers, until [`Interruptible::finished`] or drop (see the module docs), and the
/// lock on the temporary output while it is written.
pub struct Interruptible {
    held: OnceLock<File>,
}

impl Interruptible {
    /// Sets the handlers: from now on each of [`SIGNALS`] exits 128+N (removing the output
    /// once [`Interruptible::create_beside`] made it, saying what [`Interruptible::say`]
    /// said).
    pub fn install() -> Interruptible {
        // SAFETY: `handler` is a plain handler doing only async-signal-safe work.
        unsafe { set_handlers(handler as *const () as usize, 0) };
        Interruptible {
            held: OnceLock::new(),
        }
    }

    /// [`Interruptible::install`] for a verb that writes no output, saying `what` from the
    /// start ([`Interruptible::say`]): named before the handlers are set, so that a signal
    /// met as they are set says it too (installed, then told what to say, a signal between
    /// the two ended `diff` with exit 130 and no word: a loaded machine's test run).
    pub fn install_saying(what: &str) -> Interruptible {
        // No handler is set yet: none may read it half named.
        name(&[], &[], what, true);
        Interruptible::install()
    }

    /// Creates the temporary file that becomes `output` once complete, beside it
    /// ([`hrx_capture::replace::create_beside`]: `OUT.PID.partial`, named for this process so
    /// that two writers of one output never share it, shortened where a long name would pass
    /// a file name's limit, with the permission bits of the file it replaces), with the
    /// signals blocked, and names it to the handlers before they may run: an interruption at
    /// any point after leaves no file. `removed` says what the handler removed (`the
    /// incomplete export`), of `shown` (the output as the user named it). The file is
    /// locked until [`Interruptible::finished`] (or drop), and temporary files of `output`
    /// that killed writers left are removed first (see the module docs). Returns the
    /// temporary file's path, and the file.
    ///
    /// # Errors
    ///
    /// When the file cannot be created.
    pub fn create_beside(
        &self,
        output: &Path,
        removed: &str,
        shown: &Path,
    ) -> io::Result<(std::path::PathBuf, File)> {
        self.create(output, &removed_text(removed, shown), false)
    }

    /// [`Interruptible::create_beside`] for an output that is a verb's side effect (a
    /// replay's baseline): an interruption removes the file and says `said` (`the replay of
    /// t.hrxt stopped before its verdict: nothing judged, no baseline saved to b.json`)
    /// whether or not the file was still there to remove.
    ///
    /// # Errors
    ///
    /// When the file cannot be created.
    pub fn create_beside_saying(
        &self,
        output: &Path,
        said: &str,
    ) -> io::Result<(std::path::PathBuf, File)> {
        self.create(output, said, true)
    }

    /// Creates the temporary file of `output`, named to the handlers with what they say
    /// (`always`, or once they removed it).
    fn create(
        &self,
        output: &Path,
        said: &str,
        always: bool,
    ) -> io::Result<(std::path::PathBuf, File)> {
        let folder = folder_of(output);
        // Held until ours is locked: no other writer takes it for a killed one's meanwhile.
        // Waited for before the signals are blocked: an interrupt ends the wait.
        let locked = lock_folder(folder);
        let blocked = Blocked::signals();
        if locked.is_some() {
            hrx_capture::replace::remove_abandoned(
                folder,
                |entry| {
                    // A symbolic link of that name is not followed to remove where it points.
                    entry.file_type().is_ok_and(|t| t.is_file())
                        && hrx_capture::replace::is_temporary_of(
                            output,
                            &entry.file_name(),
                            "",
                            "partial",
                        )
                },
                |path| {
                    let _ = std::fs::remove_file(path);
                },
            );
        }
        let (temp, file) = hrx_capture::replace::create_beside(output, "partial")?;
        // On a descriptor of its own that shares the file's lock: the caller may close the
        // file before it renames it.
        if let Ok(held) = file.try_clone()
            && held.try_lock().is_ok()
        {
            let _ = self.held.set(held);
        }
        drop(locked);
        // By its whole path (created new, it is no symbolic link).
        let whole = std::fs::canonicalize(&temp).unwrap_or_else(|_| temp.clone());
        name(&[whole], &[], said, always);
        drop(blocked);
        Ok((temp, file))
    }

    /// Names a set of files (not yet created, or some of them) to the handlers, and the
    /// directories `dirs` to remove after them, in order, each when it is then empty: a
    /// directory of Parquet tables being written, and the one made for it. `removed` and
    /// `shown` make the message (`removed {removed} {shown}`).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // Parquet's only
    pub fn name_all(
        &self,
        paths: &[std::path::PathBuf],
        dirs: &[&Path],
        removed: &str,
        shown: &Path,
    ) {
        let blocked = Blocked::signals();
        name(paths, dirs, &removed_text(removed, shown), false);
        drop(blocked);
    }

    /// For a verb that writes no output: an interruption from now on says `error:
    /// interrupted by SIGNAL: {what}` (what it stopped and left: `the replay of t.hrxt
    /// stopped before its verdict: nothing judged`), then exits 128+N.
    pub fn say(&self, what: &str) {
        let blocked = Blocked::signals();
        name(&[], &[], what, true);
        drop(blocked);
    }

    /// Runs `commit` (the renames that put a complete output in place) with [`SIGNALS`]
    /// blocked on this thread, a handler on another thread waiting for it. Once it is done,
    /// what an interruption says is `said` of its result (`... baseline saved to b.json`,
    /// `the export t.json was complete: it is in place`), removing nothing; where `said` is
    /// `None` (a rename that failed, whose caller removes what is left), the output is
    /// forgotten and an interruption says nothing. The output is never left without the
    /// files already renamed into it, and a signal after a complete output is in place says
    /// so (it exited 128+N without a word: a break-it pass).
    pub fn commit_saying<R>(
        &self,
        commit: impl FnOnce() -> R,
        said: impl FnOnce(&R) -> Option<String>,
    ) -> R {
        committed(commit, said)
    }

    /// Renames `partial` onto `output` with [`Interruptible::commit_saying`], after which an
    /// interruption says `{what} {shown} was complete: it is in place` (`the export t.json`,
    /// `the trimmed trace t.hrxt`); a failed rename forgets the output, which the caller
    /// removes.
    ///
    /// # Errors
    ///
    /// The rename's.
    pub fn rename_into_place(
        &self,
        partial: &Path,
        output: &Path,
        what: &str,
        shown: &Path,
    ) -> io::Result<()> {
        // The lock on the temporary output, which marks it as being written, is let go of
        // before it becomes the output: held on after the rename, it made a complete trim
        // read as "being recorded now" (another trim into that name refused, a replay
        // refused) until the process exited (a fresh user's pass, session 59: a test failed
        // on a loaded machine). Under the folder's lock, so that no other writer takes it
        // for an abandoned one meanwhile; without that lock, just after the rename.
        let folder = lock_folder(folder_of(output));
        let unlock = || {
            if let Some(held) = self.held.get() {
                let _ = held.unlock();
            }
        };
        if folder.is_some() {
            unlock();
        }
        let renamed = self.commit_saying(
            || std::fs::rename(partial, output),
            |renamed| {
                renamed
                    .is_ok()
                    .then(|| format!("{what} {} was complete: it is in place", shown.shown()))
            },
        );
        unlock();
        drop(folder);
        renamed
    }

    /// Prints a verb's report on standard output with `print` (see the module docs), an
    /// interruption saying what was printed: `{what} stopped before its report was printed:
    /// nothing of it on standard output{left}` until its first write starts, `{what} stopped
    /// as its report began to be printed: none or part of it on standard output{left}` until
    /// that write's bytes are out, `{what} stopped while its report was printed: the report
    /// on standard output is incomplete{left}` until its last, then `{what} was done: its report on standard output
    /// is whole{left}` (`what`: `the replay of t.hrxt`; `left`: what else is left, `;
    /// baseline saved to b.json`, or nothing).
    ///
    /// # Errors
    ///
    /// `print`'s, and standard output's (a closed pipe: `BrokenPipe`).
    pub fn print_report(
        &self,
        what: &str,
        left: &str,
        print: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        self.say(&before_report(what, left));
        // What was printed to standard output before goes first, and nothing else
        // meanwhile.
        let mut stdout = io::stdout().lock();
        let _ = stdout.flush();
        let mut out = ReportOut {
            fd: libc::STDOUT_FILENO,
            pending: Vec::new(),
            sent: 0,
            began: Some(format!(
                "{what} stopped as its report began to be printed: none or part of it on \
                 standard output{left}"
            )),
            during: Some(format!(
                "{what} stopped while its report was printed: the report on standard output \
                 is incomplete{left}"
            )),
            whole: format!("{what} was done: its report on standard output is whole{left}"),
        };
        print(&mut out)?;
        out.finish()
    }

    /// The output is complete (or removed by its own error path): forgets it and gives the
    /// signals their default action again.
    pub fn finished(self) {}
}

/// What an interruption says before a report's first byte is printed
/// ([`Interruptible::print_report`]): `{what} stopped before its report was printed:
/// nothing of it on standard output{left}`.
pub fn before_report(what: &str, left: &str) -> String {
    format!("{what} stopped before its report was printed: nothing of it on standard output{left}")
}

/// The most a report's `write` takes at once ([`ReportOut`]): a page (POSIX's `PIPE_BUF` on
/// Linux), so that the bytes an interruption may leave unsaid as written are few.
const REPORT_WRITE_BYTES: usize = 4096;

/// A report on standard output, written as [`Interruptible::print_report`] says (module
/// docs). It holds back the last bytes it was given, so that the write that ends the report
/// is the one that names it whole ([`ReportOut::finish`]).
struct ReportOut {
    /// Standard output's descriptor.
    fd: libc::c_int,
    /// Given, not yet written.
    pending: Vec<u8>,
    /// How much of `pending` was written (dropped at the next [`Write::write`]: a large
    /// `write_all` is sent a slice at a time, not moved down a slice at a time).
    sent: usize,
    /// What an interruption says from the start of the first write (which may wait, and
    /// then may have written part of its bytes or none); `None` once named.
    began: Option<String>,
    /// What it says once the first write's bytes are out; `None` once named.
    during: Option<String>,
    /// What it says once the last is.
    whole: String,
}

impl ReportOut {
    /// Writes the unsent front of `pending`, at most [`REPORT_WRITE_BYTES`] (fewer where the
    /// write takes fewer), as module docs say; `last`: it holds the whole rest of the
    /// report, named whole once written.
    fn write_front(&mut self, last: bool) -> io::Result<()> {
        let unsent = &self.pending[self.sent..];
        let len = unsent.len().min(REPORT_WRITE_BYTES);
        let last = last && len == unsent.len();
        // Written with the signals let in, however long it waits: an interruption meanwhile
        // ends the run at once, saying what the writes before this one printed, which is
        // all that was. Written with them blocked (`poll` first, then a write `poll` said
        // would not wait), a write that waited all the same held every interruption off
        // until the reader read: a terminal whose reader stopped (a hung ssh session) takes
        // a write of any size once it has room for one byte, and another writer of a shared
        // pipe can take the room `poll` saw (a break-it pass: SIGTERM did nothing until the
        // terminal was read).
        // Named before the first write: from its start, an interruption cannot know whether
        // a byte got out, and says so.
        if let Some(began) = self.began.take() {
            held_off(|| name(&[], &[], &began, true));
        }
        // SAFETY: `len` bytes of `unsent` are initialised and live through the call.
        let n = unsafe { libc::write(self.fd, unsent.as_ptr().cast(), len) };
        // Read before anything else may set errno.
        let written = usize::try_from(n).map_err(|_| io::Error::last_os_error());
        // What an interruption says from now on, named once the bytes are out (with the
        // signals blocked: naming allocates). A signal between the write's return and this
        // (a thread descheduled there, on a loaded machine) says what was said before it,
        // which is still true ("none or part of it"), or "incomplete" of a report whole.
        if let Ok(n) = written
            && n > 0
            && (self.during.is_some() || (last && n == len))
        {
            held_off(|| {
                if let Some(during) = self.during.take() {
                    name(&[], &[], &during, true);
                }
                if last && n == len {
                    name(&[], &[], &self.whole, true);
                }
            });
        }
        match written {
            Ok(0) => Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                self.sent += n;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            // Left non-blocking by whoever shares it: waited for, as every verb's output is.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                crate::output::wait_for_stdout();
                Ok(())
            }
            // No standard output at all (`>&-`): nothing is printed, as Rust's `stdout()`
            // takes it (and every other verb with it).
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => {
                self.sent = self.pending.len();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Writes what is left, the last write naming the report whole (an empty one is whole
    /// at once).
    fn finish(mut self) -> io::Result<()> {
        if self.sent == self.pending.len() {
            held_off(|| name(&[], &[], &self.whole, true));
        }
        while self.sent < self.pending.len() {
            self.write_front(true)?;
        }
        Ok(())
    }
}

impl Write for ReportOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.drain(..self.sent);
        self.sent = 0;
        self.pending.extend_from_slice(buf);
        // Always one byte held back: the last write is `finish`'s.
        while self.pending.len() - self.sent > REPORT_WRITE_BYTES {
            self.write_front(false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `commit` with [`SIGNALS`] blocked on this thread and no handler running meanwhile
/// (see the module docs), then names what a handler says after it (`then`: `None`, nothing:
/// the output is forgotten).
fn committed<R>(commit: impl FnOnce() -> R, then: impl FnOnce(&R) -> Option<String>) -> R {
    held_off(|| {
        let done = commit();
        match then(&done) {
            Some(said) => name(&[], &[], &said, true),
            // Leaked, not freed: a handler that started before may still read it.
            None => OUTPUT.store(std::ptr::null_mut(), Ordering::SeqCst),
        }
        done
    })
}

/// Runs `work` with [`SIGNALS`] blocked on this thread and no handler running meanwhile (a
/// handler on another thread waits for it; one already running ends the process first):
/// what a handler says after names what `work` did, never what it was about to do.
fn held_off<R>(work: impl FnOnce() -> R) -> R {
    let blocked = Blocked::signals();
    // A handler running on another thread ends the process: this waits for that.
    while STATE
        .compare_exchange(IDLE, COMMITTING, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        std::thread::yield_now();
    }
    let done = work();
    STATE.store(IDLE, Ordering::SeqCst);
    drop(blocked);
    done
}

/// What a handler says it removed: `removed {removed} {shown}`.
fn removed_text(removed: &str, shown: &Path) -> String {
    format!("removed {removed} {}", shown.shown())
}

/// Stores what the handler removes and says, `error: interrupted by SIGNAL: {said}`, said
/// `always` or once it removed a file (signals blocked by the caller).
fn name(paths: &[std::path::PathBuf], dirs: &[&Path], said: &str, always: bool) {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).ok();
    let clear = if io::stderr().is_terminal() {
        "\r\x1b[K"
    } else {
        ""
    };
    let message = |signal: libc::c_int| {
        let name = crate::record::signal_text(signal);
        // Files named as `ShowPath::shown` shows them: one line whatever a name holds.
        let text = format!("{clear}error: interrupted by {name}: {said}\n");
        (signal, text.into_bytes())
    };
    let removal = Box::new(Removal {
        paths: paths.iter().filter_map(|p| c(p)).collect(),
        dirs: dirs.iter().filter_map(|d| c(d)).collect(),
        messages: SIGNALS.map(message),
        always,
    });
    OUTPUT.store(Box::into_raw(removal), Ordering::SeqCst);
}

impl Drop for Interruptible {
    fn drop(&mut self) {
        // Default actions first: no handler may run with the output forgotten in between.
        restore_defaults();
        // Leaked, not freed: a handler that started before may still read it.
        OUTPUT.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// [`SIGNALS`] blocked on this thread until dropped (then a pending one is delivered).
struct Blocked(libc::sigset_t);

impl Blocked {
    fn signals() -> Blocked {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset; pthread_sigmask with
        // valid sets.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in SIGNALS {
                libc::sigaddset(&mut set, signal);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked(old)
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `signals`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that name outputs to the handlers ([`OUTPUT`], one per process).
    static NAMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A temporary output is held as being written until it is renamed into place, and not
    /// after, while its writer lives on: a complete trim read as "being recorded now" until
    /// its process exited (another trim into its name refused, on a loaded machine: a fresh
    /// user's pass, session 59).
    #[test]
    fn an_output_renamed_into_place_is_no_longer_held() {
        let _naming = NAMING.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("t.hrxt");
        let interruptible = Interruptible {
            held: OnceLock::new(),
        };
        let (partial, file) =
            (interruptible.create_beside(&output, "the test's output", &output)).unwrap();
        drop(file);
        assert!(hrx_capture::being_recorded(&partial));
        (interruptible.rename_into_place(&partial, &output, "the test's output", &output)).unwrap();
        assert!(!partial.exists());
        assert!(!hrx_capture::being_recorded(&output));
        interruptible.finished();
    }

    /// What a handler would say now for SIGTERM (`None`: nothing named).
    fn said() -> Option<String> {
        let removal = OUTPUT.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer is a leaked `Removal`, never freed.
        let removal = unsafe { removal.as_ref() }?;
        let (_, message) = removal.messages.iter().find(|(s, _)| *s == libc::SIGTERM)?;
        Some(String::from_utf8_lossy(message).into_owned())
    }

    /// A report's writer names what an interruption says as it goes: before its first
    /// write, from its start (none or part of it out), while some is written, and once the
    /// last is (the last write names it whole: it said "incomplete" after the last byte,
    /// break-it E2). No handler is set: what it would say is read where it reads it.
    #[test]
    fn a_report_is_said_unprinted_then_incomplete_then_whole_as_it_is_written() {
        let _naming = NAMING.lock().unwrap_or_else(|e| e.into_inner());
        use std::io::Read;
        use std::os::fd::{AsRawFd, FromRawFd};
        let mut fds = [0; 2];
        // SAFETY: pipe writes two new descriptors, owned from here on.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both are open and owned by nothing else.
        let (mut read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        held_off(|| name(&[], &[], &before_report("the replay of t", ""), true));
        let mut out = ReportOut {
            fd: write.as_raw_fd(),
            pending: Vec::new(),
            sent: 0,
            began: Some("began".into()),
            during: Some("during".into()),
            whole: "whole".into(),
        };
        let before = said().unwrap();
        assert!(
            before.ends_with(
                "the replay of t stopped before its report was printed: nothing \
                              of it on standard output\n"
            ),
            "{before}"
        );
        // Held: the last bytes are the last write's.
        out.write_all(&[b'a'; REPORT_WRITE_BYTES]).unwrap();
        assert_eq!(said().unwrap(), before);
        out.write_all(&[b'b'; 3000]).unwrap();
        assert!(said().unwrap().ends_with(": during\n"), "{:?}", said());
        out.finish().unwrap();
        assert!(said().unwrap().ends_with(": whole\n"), "{:?}", said());
        drop(write);
        let mut report = Vec::new();
        read.read_to_end(&mut report).unwrap();
        assert_eq!(report.len(), REPORT_WRITE_BYTES + 3000);
        assert!(report.ends_with(&[b'b'; 3000]));
        OUTPUT.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}
