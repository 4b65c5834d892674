//! The process-wide recorder slot and the instrumentation gate.
//!
//! Instrumentation in the runtime looks like this (tracing's callsite interest,
//! tracy-client's `enable`): when tracing is off, a hook costs one relaxed atomic load and a
//! branch, and builds nothing.
//!
//! ```
//! # use hrx_capture::{schema::*, *};
//! if hrx_capture::enabled() {
//!     hrx_capture::record(&Record::RuntimeEnd(RuntimeEnd {
//!         runtime: RuntimeId(0),
//!         time_ns: hrx_capture::now_ns(),
//!     }));
//! }
//! ```
//!
//! One recorder is installed per process at a time, and every runtime in the process records
//! into it, so several runtimes share one trace ([`install_or_current`], [`install_from_env`]).
//! A runtime may also keep a [`Recorder`] handle from [`current`] and call it directly, which
//! skips the slot lookup. The slot is never read on the hot path: the gate is an atomic id,
//! and each thread caches its ring for that id.

use crate::ShowPath;
use crate::fork::{ForkGuard, ForkLock};
use crate::writer::{CloseSummary, Recorder, RecorderOptions, Shared, WriteError};
use crate::{Record, writer};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the trace file (`hrx-trace record` sets it); its
/// patterns are expanded as [`expand_path`] says.
pub const TRACE_ENV: &str = "HRX_TRACE";

/// Set by `hrx-trace record` beside [`TRACE_ENV`]: what the trace path was before the
/// recorded program started ([`file_identity`]). A process of that program that finds the
/// path changed knows another process of the same recording wrote it, and records into its
/// own file instead of overwriting that trace (see [`install_or_current`]).
pub const TRACE_SESSION_ENV: &str = "HRX_TRACE_SESSION";

/// Set by `hrx-trace record` beside [`TRACE_ENV`]: a directory where each process that
/// creates a trace from [`TRACE_ENV`] leaves a file named by its pid holding the trace's
/// path, so that `record` reports exactly the traces its own program wrote (not a file
/// another, concurrent recording wrote to the same name, nor a `NAME.PID.EXT` of theirs).
/// Writing it never fails the traced program.
pub const TRACE_PATHS_ENV: &str = "HRX_TRACE_PATHS";

/// Id of the installed recorder, 0 when none: the gate.
static CURRENT: AtomicU64 = AtomicU64::new(0);
/// The installed recorder. This lock, and every other lock of this module, is a
/// [`ForkLock`]: a child forked without `exec` while a thread of its parent held it (a
/// runtime thread opening or closing the process's trace while another thread forks) takes
/// it over, and sees what it held as the fork found it, or, where that thread was in the
/// middle of changing it, an empty value ([`ForkLock`]; a recorder there is its parent's
/// anyway, and forgotten). With a `std::sync::Mutex` such a child waited for ever in
/// `Runtime::new` or `close_trace`, or ran untraced (the break-it pass of session 52, D4).
static SLOT: ForkLock<Option<Recorder>> = ForkLock::new(None, || None);
/// The forks the installed recorder's process had gone through when it was opened
/// ([`crate::fork`]): a count that differs now says this is a child forked since, without
/// `exec`, where that recorder is its parent's and writes nothing (one relaxed load an
/// annotation).
static INSTALLED_FORKS: AtomicU64 = AtomicU64::new(0);
/// The path (before [`expand_path`]) and options the installed recorder was opened with by
/// [`install_or_current`]: a child forked without `exec` that annotates opens a trace of its
/// own from them, as a runtime it creates does.
static TEMPLATE: ForkLock<Option<(PathBuf, RecorderOptions)>> = ForkLock::new(None, || None);
/// A file a recorder installed by [`install_or_current`] wrote.
struct Written {
    /// As [`installed_path`] gives it (after a fallback to `NAME.PID.EXT`, that name).
    path: PathBuf,
    /// `path` made absolute when it was written, to compare with later paths.
    absolute: Option<PathBuf>,
    /// The process's fork count then ([`crate::fork`]).
    forks: u64,
    /// Whether this process wrote it; `false`: the path asked for, which another process had
    /// (a process forked from this one before it opened its trace, or a sibling), and this
    /// one recorded beside it (`NAME.PID.EXT`). A child forked since keeps off it as off its
    /// ancestors' own: after that other process closed it, children forked later replaced
    /// its trace one after another (session 52's burst of forks, 15 of 60 traces lost).
    own: bool,
}

/// Every file a recorder installed by [`install_or_current`] wrote in this process or in a
/// process it was forked from, oldest first (the last is [`installed_path`]'s): a child
/// forked without `exec` never records into one of its ancestors' ([`create_unshared`]). It
/// was kept from them by the writer's lock it inherited, until the child let go of that
/// ([`crate::fork`]): a child that outlived its parent then replaced the parent's trace.
/// (A child forked while a thread of its parent was adding to it starts an empty list: that
/// thread was opening a trace, which the child's finds locked, and falls back beside.)
static WRITTEN: ForkLock<Vec<Written>> = ForkLock::new(Vec::new(), Vec::new);

/// Whether a process this one was forked from wrote `path` (`Some(true)`), or found it
/// being written by another process and recorded beside it (`Some(false)`) ([`WRITTEN`]).
fn an_ancestor_wrote(path: &Path) -> Option<bool> {
    let forks = crate::fork::forks();
    let here = std::path::absolute(path).ok();
    WRITTEN
        .lock()
        .iter()
        .filter(|w| w.forks != forks && w.absolute.is_some() && w.absolute == here)
        .map(|w| w.own)
        .max()
}

/// The file the recorder installed by [`install_or_current`] (or [`install_from_env`])
/// writes, or wrote if it was closed since: the name it fell back to when another process
/// held the one asked for. `None` when no recorder was installed from a path.
pub fn installed_path() -> Option<PathBuf> {
    WRITTEN
        .lock()
        .iter()
        .rev()
        .find(|w| w.own)
        .map(|w| w.path.clone())
}

/// Whether a recorder is installed: one relaxed atomic load.
#[inline]
pub fn enabled() -> bool {
    CURRENT.load(Ordering::Relaxed) != 0
}

/// Records into the installed recorder, if any (see [`Recorder::record`]).
#[inline]
pub fn record(record: &Record) {
    let id = CURRENT.load(Ordering::Relaxed);
    if id != 0 {
        writer::record_with(id, &|| installed(id), record);
    }
}

/// Records into the installed recorder, if any, the record `make` builds for the calling
/// thread's index in the session (see [`Recorder::record_on_thread`]).
#[inline]
pub fn record_on_thread(make: impl FnOnce(u32) -> Record) {
    let id = CURRENT.load(Ordering::Relaxed);
    if id != 0 {
        writer::record_on_thread_with(id, &|| installed(id), make);
    }
}

/// The installed recorder's id of annotation name `text` (see
/// [`Recorder::annotation_name`]); `None` when none is installed.
#[inline]
pub fn annotation_name(text: &str) -> Option<crate::schema::AnnotationId> {
    let id = own_recorder(CURRENT.load(Ordering::Relaxed));
    if id == 0 {
        return None;
    }
    writer::annotation_name_with(id, &|| installed(id), text)
}

/// Opens an annotation range named `text` on the calling thread in the installed recorder,
/// if any: its name's id, then its start on the session clock. A range still open at a
/// fatal signal or when the recorder closes is recorded to that moment as `TEXT (open at
/// end)`; close it with [`close_range`].
#[inline]
pub fn open_range(text: &str) -> Option<writer::OpenRange> {
    let id = own_recorder(CURRENT.load(Ordering::Relaxed));
    if id == 0 {
        return None;
    }
    writer::open_range_with(id, &|| installed(id), text)
}

/// Closes `range` now, recording its `AnnotationRange` (nothing when its recorder closed
/// meanwhile: it was recorded as open at the end).
#[inline]
pub fn close_range(range: &writer::OpenRange) {
    let id = range.recorder();
    writer::close_range_with(range, &|| installed(id));
}

/// The installed recorder's session clock in ns (see [`Recorder::now_ns`]); 0 when none is
/// installed.
pub fn now_ns() -> u64 {
    let id = CURRENT.load(Ordering::Relaxed);
    if id == 0 {
        return 0;
    }
    writer::now_ns_with(id, &|| installed(id))
}

/// `id`, the installed recorder's, or in a child forked without `exec` since it was opened
/// (where it is the parent's and writes nothing) the id of a trace of the child's own,
/// opened now from the path the parent's was (`NAME.PID.EXT` beside it, as a runtime the
/// child creates opens), or 0 where none can be opened (said on standard error, once).
/// A forked child's annotations were dropped without a word (a break-it pass: 300,000
/// counter samples).
#[inline]
fn own_recorder(id: u64) -> u64 {
    if id != 0 && crate::fork::forks() != INSTALLED_FORKS.load(Ordering::Relaxed) {
        return open_in_forked_child(id);
    }
    id
}

#[cold]
#[inline(never)]
fn open_in_forked_child(id: u64) -> u64 {
    // A thread of the parent may have held the slot's lock at the fork: the child takes it
    // over ([`SLOT`]).
    let slot = lock_slot();
    let forked = slot
        .as_ref()
        .filter(|r| r.id() == id)
        .is_some_and(|r| r.shared().forked());
    drop(slot);
    if !forked {
        return CURRENT.load(Ordering::Relaxed);
    }
    let template = TEMPLATE.lock().clone();
    let opened = match template {
        Some((path, options)) => install_or_current(&path, options).map_err(|e| e.to_string()),
        None => Err("its parent's trace was not opened from a path".to_owned()),
    };
    match opened {
        Ok(recorder) => recorder.id(),
        Err(why) => {
            let mut slot = lock_slot();
            if slot.as_ref().is_some_and(|r| r.shared().forked()) {
                CURRENT.store(0, Ordering::Release);
                std::mem::forget(slot.change(Option::take));
            }
            drop(slot);
            crate::to_stderr(format_args!(
                "hrx: process {} (forked from a traced process without exec) cannot open a \
                 trace of its own ({why}): its annotations are not recorded",
                std::process::id()
            ));
            0
        }
    }
}

/// [`SLOT`]'s lock, waiting for a thread of this process that holds it (one of a parent
/// that held it at the fork is not waited for: [`ForkLock`]).
fn lock_slot() -> ForkGuard<'static, Option<Recorder>> {
    SLOT.lock()
}

fn installed(id: u64) -> Option<Arc<Shared>> {
    lock_slot()
        .as_ref()
        .filter(|r| r.id() == id)
        .map(|r| r.shared().clone())
}

/// Installs `recorder` as the process's recorder and returns the one it replaces.
pub fn install(recorder: Recorder) -> Option<Recorder> {
    let mut slot = lock_slot();
    INSTALLED_FORKS.store(recorder.shared().forks_at_creation(), Ordering::Relaxed);
    TEMPLATE.lock().change(|t| *t = None);
    let id = recorder.id();
    let old = slot.change(|s| s.replace(recorder));
    CURRENT.store(id, Ordering::Release);
    old
}

/// Removes the installed recorder and returns it (it keeps recording for its handles).
pub fn uninstall() -> Option<Recorder> {
    let mut slot = lock_slot();
    CURRENT.store(0, Ordering::Release);
    slot.change(Option::take)
}

/// Removes the installed recorder if its id is `id`.
pub(crate) fn uninstall_if(id: u64) -> Option<Recorder> {
    let mut slot = lock_slot();
    if slot.as_ref().is_some_and(|r| r.id() == id) {
        CURRENT.store(0, Ordering::Release);
        slot.change(Option::take)
    } else {
        None
    }
}

/// A handle to the installed recorder, if any (not one a child forked without `exec`
/// inherited from its parent: that one writes nothing here).
pub fn current() -> Option<Recorder> {
    lock_slot().clone().filter(|r| !r.shared().forked())
}

/// The installed recorder, or a new one recording to `path` (after [`expand_path`]), which
/// is installed. Atomic: concurrent callers share one trace.
///
/// # Errors
///
/// See [`Recorder::create`].
pub fn install_or_current(
    path: impl AsRef<Path>,
    options: RecorderOptions,
) -> Result<Recorder, WriteError> {
    let mut slot = lock_slot();
    // A recorder inherited by a child forked without `exec` is its parent's, writing nothing
    // here: the child records into a trace of its own, as a process it `exec`s would (beside
    // the parent's, `NAME.PID.EXT`: the parent holds that file). It recorded nothing, and
    // said nothing (a break-it pass).
    if slot.as_ref().is_some_and(|r| r.shared().forked()) {
        CURRENT.store(0, Ordering::Release);
        std::mem::forget(slot.change(Option::take));
    }
    if let Some(recorder) = slot.as_ref() {
        return Ok(recorder.clone());
    }
    let mut options = options;
    if options.flush_report.is_none() {
        options.flush_report = std::env::var_os(writer::FLUSH_REPORT_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
    }
    let (recorder, written) = create_unshared(path.as_ref(), options.clone())?;
    report_path(&written);
    let forks = recorder.shared().forks_at_creation();
    // The name asked for, where another process had it (a `%n` template never reuses one).
    let beside = (!has_sequence(path.as_ref()))
        .then(|| expand_path(path.as_ref()))
        .filter(|asked| *asked != written)
        .map(|asked| Written {
            absolute: std::path::absolute(&asked).ok(),
            path: asked,
            forks,
            own: false,
        });
    let written = Written {
        absolute: std::path::absolute(&written).ok(),
        path: written,
        forks,
        own: true,
    };
    WRITTEN.lock().change(|w| {
        w.extend(beside);
        w.push(written);
    });
    let template = Some((path.as_ref().to_owned(), options));
    TEMPLATE.lock().change(|t| *t = template);
    INSTALLED_FORKS.store(recorder.shared().forks_at_creation(), Ordering::Relaxed);
    let installed = recorder.clone();
    slot.change(|s| *s = Some(installed));
    CURRENT.store(recorder.id(), Ordering::Release);
    Ok(recorder)
}

/// The installed recorder; else, when [`TRACE_ENV`] is set and not empty, a new installed
/// recorder writing there, in the mode [`TRACE_MODE_ENV`](crate::TRACE_MODE_ENV) names if it
/// is set; else `None`.
///
/// # Errors
///
/// See [`Recorder::create`]; [`WriteError::BadMode`], [`WriteError::BadClock`] (a
/// [`CLOCK_ENV`](crate::clock::CLOCK_ENV) naming no clock).
pub fn install_from_env(mut options: RecorderOptions) -> Result<Option<Recorder>, WriteError> {
    if let Some(recorder) = current() {
        return Ok(Some(recorder));
    }
    match std::env::var_os(TRACE_ENV) {
        Some(path) if !path.is_empty() => {
            crate::clock::ClockChoice::from_env().map_err(WriteError::BadClock)?;
            if let Some(mode) = crate::TraceMode::from_env()? {
                options.mode = mode;
            }
            install_or_current(PathBuf::from(path), options).map(Some)
        }
        _ => Ok(None),
    }
}

/// Uninstalls and closes the installed recorder. Call before the process exits: a recorder
/// that is never closed loses nothing older than one flush interval, but its trace has no
/// footer and reads back as not cleanly closed.
///
/// # Errors
///
/// See [`Recorder::close`].
pub fn shutdown() -> Result<Option<CloseSummary>, WriteError> {
    uninstall().map(|r| r.close()).transpose()
}

/// Creates the recorder for the trace `template` names, never taking another process's
/// trace (the rules of `hrx-trace record` with several processes, as Nsight Systems'):
///
/// - `%n` in the template: the first number from 1 whose file does not exist yet, or that
///   another process has not locked first;
/// - otherwise, when the file is locked by another recorder, or [`TRACE_SESSION_ENV`] says
///   another process of this recording already wrote it, this process records into
///   `NAME.PID.EXT` beside it and says so on standard error: tracing never makes the traced
///   program fail for want of a file, and never silently overwrites a sibling's trace;
/// - likewise when the file exists and is not a trace (notes, a photograph: `HRX_TRACE`
///   set by hand to the wrong name), which is left as it is;
/// - likewise in a child forked without `exec` when a process it was forked from wrote the
///   file ([`WRITTEN`]), finished or not.
fn create_unshared(
    template: &Path,
    options: RecorderOptions,
) -> Result<(Recorder, PathBuf), WriteError> {
    let kind = |e: &WriteError| match e {
        WriteError::Create { source, .. } => Some(source.kind()),
        _ => None,
    };
    let taken = |e: &WriteError| kind(e) == Some(std::io::ErrorKind::WouldBlock);
    if has_sequence(template) {
        for n in 1..=100_000u64 {
            let path = expand_path_with(template, n);
            // Created only where nothing exists, atomically: another process's trace,
            // finished or not, is never truncated.
            match Recorder::create_new(&path, options.clone()) {
                Err(e) if taken(&e) || kind(&e) == Some(std::io::ErrorKind::AlreadyExists) => {
                    continue;
                }
                other => return other.map(|r| (r, path)),
            }
        }
    }
    let path = expand_path(template);
    // The session's identity is that of the file `HRX_TRACE` names: a process recording
    // elsewhere (its own `-o`, a nested `hrx-trace record`) compares nothing with it (it took
    // a finished earlier trace for a sibling's and recorded into `NAME.PID.EXT`).
    let session_file = std::env::var_os(TRACE_ENV).is_some_and(|named| {
        let absolute = |p: &Path| std::path::absolute(p).ok();
        absolute(&expand_path(Path::new(&named))) == absolute(&path)
    });
    let sibling_wrote = session_file
        && std::env::var(TRACE_SESSION_ENV).is_ok_and(|before| before != file_identity(&path));
    // The process itself, before an exec (the image that ran this program recorded into
    // it: same pid, an earlier session), is no other process.
    let ancestor_wrote = an_ancestor_wrote(&path);
    let mut why: std::borrow::Cow<'static, str> = if ancestor_wrote == Some(true) {
        "was written by the process this one was forked from".into()
    } else if ancestor_wrote == Some(false) {
        "was not the trace of the process this one was forked from, which recorded beside it".into()
    } else if sibling_wrote && reported_before(&path) {
        "was written by this same process in an earlier session (before an exec)".into()
    } else {
        written_since_start(&path)
    };
    // A name free when the recording started is taken only where it is still free, at once
    // (`O_EXCL`): two processes of the recording that found it free together each took it,
    // the later replacing the earlier's closed trace as an earlier recording's (a break-it
    // pass: one trace of `sh -c 'a & b & wait'` lost in 4 of 4 runs).
    let free_at_start =
        session_file && std::env::var(TRACE_SESSION_ENV).is_ok_and(|before| before == "absent");
    if !sibling_wrote && ancestor_wrote.is_none() {
        let created = if free_at_start {
            Recorder::create_new(&path, options.clone())
        } else {
            Recorder::create(&path, options.clone())
        };
        match created {
            Err(e) if taken(&e) => why = "is being written by another process".into(),
            Err(e) if kind(&e) == Some(std::io::ErrorKind::AlreadyExists) && free_at_start => {
                why = written_since_start(&path);
            }
            Err(e) if kind(&e) == Some(std::io::ErrorKind::AlreadyExists) => {
                why = "exists and is not an hrx trace (left as it is)".into();
            }
            other => return other.map(|r| (r, path)),
        }
    }
    let own = own_path(&path, std::process::id());
    crate::to_stderr(format_args!(
        "hrx: {} {why}: this process ({}) records into {}",
        path.shown(),
        std::process::id(),
        own.shown()
    ));
    Recorder::create(&own, options).map(|r| (r, own))
}

/// Who wrote the trace at `path` since this recording started ([`TRACE_SESSION_ENV`] says
/// the file changed), in the words of the note that sends this process to `NAME.PID.EXT`.
/// The variable alone cannot tell a sibling's trace from one another recording put there
/// since (`-o` replaces a closed trace: `sh -c 'prog; prog'` whose first trace another
/// recording replaced between the two read "written by another process of this
/// recording"). So the pid of the file's `SessionStart` (its first records) is asked of
/// this recording's reports ([`TRACE_PATHS_ENV`], every process that created a trace here
/// names it there): one of them, a sibling's; none of them, another recording's. Where
/// either cannot be read (no reports directory, a file whose start is not readable yet),
/// the words hold in both cases.
fn written_since_start(path: &Path) -> std::borrow::Cow<'static, str> {
    let pid = crate::TraceReader::open(path).ok().and_then(|reader| {
        reader
            .filter_map(Result::ok)
            .take(16)
            .find_map(|(_, record)| match record {
                Record::SessionStart(start) => Some(start.pid),
                _ => None,
            })
    });
    // A sibling reports its file just after it creates it (with its `SessionStart`): one
    // started beside this process may not have yet (`sh -c 'a & b & wait'` read "written
    // by another recording" of its sibling in 3 of 3 runs: a break-it pass). Where the
    // writer's environment cannot tell, the reports are asked again for a while.
    let mut reporters = reporters_in_env(path);
    // A process of the same recording has this recording's reports directory in its
    // environment: asked of it first, so that another recording's file costs no wait.
    let same = pid.and_then(same_recording);
    if let (Some(pid), Some(known), Some(true)) = (pid, &mut reporters, same)
        && !known.contains(&pid)
    {
        known.push(pid);
    }
    if let (Some(pid), Some(_), None) = (pid, &reporters, same) {
        for _ in 0..100 {
            if reporters.as_ref().is_none_or(|r| r.contains(&pid)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            reporters = reporters_in_env(path);
        }
    }
    match (pid, reporters) {
        (Some(pid), Some(reporters)) if reporters.contains(&pid) => {
            format!("was written by another process of this recording (pid {pid})").into()
        }
        (Some(pid), Some(_)) => format!(
            "was written by another recording since this one started (its process, pid \
             {pid}, is none of this recording's)"
        )
        .into(),
        _ => "was written since this recording started (by another of its processes, or \
              another recording)"
            .into(),
    }
}

/// Whether process `pid` records for the same recording as this one: its environment names
/// the same reports directory ([`TRACE_PATHS_ENV`]). `None` where its environment cannot be
/// read (it has ended, or belongs to another user).
fn same_recording(pid: u32) -> Option<bool> {
    use std::os::unix::ffi::OsStrExt;
    let ours = std::env::var_os(TRACE_PATHS_ENV).filter(|d| !d.is_empty())?;
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{TRACE_PATHS_ENV}=");
    let theirs = (environ.split(|&b| b == 0)).find_map(|entry| entry.strip_prefix(key.as_bytes()));
    Some(theirs == Some(ours.as_bytes()))
}

/// [`reporters_in`] the directory [`TRACE_PATHS_ENV`] names.
fn reporters_in_env(path: &Path) -> Option<Vec<u32>> {
    std::env::var_os(TRACE_PATHS_ENV)
        .filter(|d| !d.is_empty())
        .and_then(|dir| reporters_in(Path::new(&dir), path))
}

/// The pids of the processes whose reports in `dir` ([`TRACE_PATHS_ENV`]) name `path`;
/// `None` where `dir` cannot be read.
fn reporters_in(dir: &Path, path: &Path) -> Option<Vec<u32>> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let reports = reports_by_pid(dir)?;
    Some(
        (reports.into_iter())
            .filter_map(|(pid, named)| (named == path).then_some(pid))
            .collect(),
    )
}

/// The reports of directory `dir` ([`TRACE_PATHS_ENV`]): each reporting process's pid (its
/// report's name, `PID`, or `PID.N` after an `exec`) and the file it named; `None` where
/// `dir` cannot be read. Other files there (`hrx-trace record`'s claim) are no reports. The
/// one reading of the reports, for the runtime and `hrx-trace record`.
pub fn reports_by_pid(dir: &Path) -> Option<Vec<(u32, PathBuf)>> {
    use std::os::unix::ffi::OsStrExt;
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let name = entry.file_name();
                let name = name.to_str()?;
                let pid = name.split_once('.').map_or(name, |(pid, _)| pid);
                let pid = pid.parse::<u32>().ok()?;
                let bytes = std::fs::read(entry.path()).ok()?;
                Some((pid, PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))))
            })
            .collect(),
    )
}

/// Tells `hrx-trace record` which file this process records into ([`TRACE_PATHS_ENV`]):
/// a new file `DIR/PID` (`DIR/PID.N` when that exists: a process that recorded, then
/// `exec`ed another program that records) holds the path's bytes. Best effort: a report that
/// cannot be written leaves `record` to find the file by its name, as it does for programs
/// built with an older hrx.
fn report_path(path: &Path) {
    if let Some(dir) = std::env::var_os(TRACE_PATHS_ENV).filter(|d| !d.is_empty()) {
        report_path_in(Path::new(&dir), path);
    }
}

/// Whether this process (its pid) reported `path` to `hrx-trace record` before
/// ([`report_path`]): an image that `exec`ed this program recorded into it.
fn reported_before(path: &Path) -> bool {
    std::env::var_os(TRACE_PATHS_ENV)
        .filter(|d| !d.is_empty())
        .is_some_and(|dir| reported_in(Path::new(&dir), path, std::process::id()))
}

/// Whether `dir` holds a report of process `pid` naming `path` (`DIR/PID`, `DIR/PID.N`).
fn reported_in(dir: &Path, path: &Path, pid: u32) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    (0..100u32)
        .map(|n| match n {
            0 => pid.to_string(),
            n => format!("{pid}.{n}"),
        })
        .map_while(|name| std::fs::read(dir.join(name)).ok())
        .any(|bytes| bytes == path.as_os_str().as_bytes())
}

/// Traces this process wrote that were moved (renamed) while they were recorded: (the
/// path written, made absolute; the path now), for [`moved_to`].
static MOVED: ForkLock<Vec<(PathBuf, PathBuf)>> = ForkLock::new(Vec::new(), Vec::new);

/// Where the trace this process wrote at `path` is now, when it was moved (renamed) while
/// it was recorded (as its writer last found it); `None` where it was not.
pub fn moved_to(path: &Path) -> Option<PathBuf> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    MOVED
        .lock()
        .iter()
        .find(|(from, _)| *from == path)
        .map(|(_, to)| to.clone())
}

/// Traces this process wrote whose file was deleted while they were recorded (the path
/// written, made absolute), for [`deleted`].
static DELETED: ForkLock<Vec<PathBuf>> = ForkLock::new(Vec::new(), Vec::new);

/// Whether the trace this process wrote at `path` was deleted while it was recorded (its
/// writer found its file unlinked): whatever `path` names now is another file.
pub fn deleted(path: &Path) -> bool {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    DELETED.lock().contains(&path)
}

/// The trace `path` that this process wrote was deleted while it was recorded: kept for
/// [`deleted`].
pub(crate) fn report_deleted(path: &Path) {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    DELETED.lock().change(|deleted| {
        if !deleted.contains(&absolute) {
            deleted.push(absolute);
        }
    });
}

/// The trace `from` that this process wrote was moved to `to` while it was recorded: kept
/// for [`moved_to`] (`record --workload` summarises it there), and the report to
/// `hrx-trace record` ([`report_path`]) names `to` now, so that `record` reads the trace
/// there (it said "the trace is lost" of a file whole under its new name).
pub(crate) fn report_moved(from: &Path, to: &Path) {
    {
        let absolute = std::path::absolute(from).unwrap_or_else(|_| from.to_owned());
        let to = to.to_owned();
        MOVED.lock().change(
            |moved| match moved.iter_mut().find(|(f, _)| *f == absolute) {
                Some(entry) => entry.1 = to,
                None => moved.push((absolute, to)),
            },
        );
    }
    if let Some(dir) = std::env::var_os(TRACE_PATHS_ENV).filter(|d| !d.is_empty()) {
        report_moved_in(Path::new(&dir), from, to, std::process::id());
    }
}

fn report_moved_in(dir: &Path, from: &Path, to: &Path, pid: u32) {
    use std::os::unix::ffi::OsStrExt;
    let from = std::path::absolute(from).unwrap_or_else(|_| from.to_owned());
    for n in 0..100u32 {
        let name = dir.join(match n {
            0 => pid.to_string(),
            n => format!("{pid}.{n}"),
        });
        let Ok(bytes) = std::fs::read(&name) else {
            return;
        };
        if bytes == from.as_os_str().as_bytes() {
            let _ = std::fs::write(&name, to.as_os_str().as_bytes());
        }
    }
}

fn report_path_in(dir: &Path, path: &Path) {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let pid = std::process::id();
    for n in 0..100u32 {
        let name = match n {
            0 => pid.to_string(),
            n => format!("{pid}.{n}"),
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(name));
        match file {
            Ok(mut file) => {
                let _ = file.write_all(path.as_os_str().as_bytes());
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return,
        }
    }
}

/// `NAME.PID.EXT` beside `path` (`NAME.PID` without an extension): where a process records
/// when another process of the same recording has the trace file.
pub fn own_path(path: &Path, pid: u32) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{pid}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{pid}"),
    };
    path.with_file_name(name)
}

/// What a path is now, for [`TRACE_SESSION_ENV`]: `absent`, or its length, modification
/// time and inode. Two calls agree unless the file was created, written or replaced between.
pub fn file_identity(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => format!("{}:{}.{}:{}", m.len(), m.mtime(), m.mtime_nsec(), m.ino()),
        Err(_) => "absent".to_owned(),
    }
}

/// Expands the patterns of a trace path, as Nsight Systems does: `%p` the process id, `%h`
/// the host name, `%n` the first sequence number from 1 whose file does not exist, `%%` a
/// `%`; any other `%` stays as it is.
pub fn expand_path(template: impl AsRef<Path>) -> PathBuf {
    let template = template.as_ref();
    let mut n = 1;
    loop {
        let path = expand_path_with(template, n);
        if n >= 100_000 || !has_sequence(template) || !path.exists() {
            return path;
        }
        n += 1;
    }
}

/// Whether `template` holds `%n` (a `%%n` is a literal `%n`): the recorder then takes the
/// first number whose file it can create, when it creates it, so what [`expand_path`] says
/// now is a guess another process may take first.
pub fn has_sequence(template: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = template.as_os_str().as_bytes().iter();
    while let Some(&b) = bytes.next() {
        if b == b'%' && bytes.next() == Some(&b'n') {
            return true;
        }
    }
    false
}

/// Expanded byte by byte: a path that is not UTF-8 (Linux allows any byte but `/` and NUL in
/// a name) keeps its bytes, and its patterns are expanded as in any other path.
fn expand_path_with(template: &Path, n: u64) -> PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let text = template.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(text.len() + 8);
    let mut bytes = text.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'p') => out.extend_from_slice(std::process::id().to_string().as_bytes()),
            Some(b'h') => out.extend_from_slice(writer::host_name().as_bytes()),
            Some(b'n') => out.extend_from_slice(n.to_string().as_bytes()),
            Some(b'%') => out.push(b'%'),
            Some(other) => out.extend_from_slice(&[b'%', other]),
            None => out.push(b'%'),
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_all;
    use crate::schema::{RuntimeEnd, RuntimeId};

    /// A process that reported a path before (an image that exec'ed this program) is told
    /// apart from another process of the recording: only its own pid's reports count.
    #[test]
    fn a_path_this_process_reported_before_is_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let (trace, other) = (dir.path().join("t.hrxt"), dir.path().join("u.hrxt"));
        let pid = std::process::id();
        assert!(!reported_in(dir.path(), &trace, pid));
        report_path_in(dir.path(), &other);
        report_path_in(dir.path(), &trace);
        assert!(reported_in(dir.path(), &trace, pid));
        assert!(reported_in(dir.path(), &other, pid));
        assert!(!reported_in(dir.path(), &trace, pid + 1));
        assert!(!reported_in(dir.path(), &dir.path().join("v.hrxt"), pid));
    }

    #[test]
    fn expands_pid() {
        let pid = std::process::id();
        assert_eq!(
            expand_path("/tmp/t-%p.hrxt"),
            PathBuf::from(format!("/tmp/t-{pid}.hrxt"))
        );
        assert_eq!(expand_path("a%%p%x%"), PathBuf::from("a%p%x%"));
        // Byte by byte: a name that is not UTF-8 keeps its bytes and expands its patterns.
        use std::os::unix::ffi::OsStrExt;
        let raw = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff-%p-%%n"));
        let want = [b"/tmp/\xff-".as_slice(), pid.to_string().as_bytes(), b"-%n"].concat();
        assert_eq!(expand_path(raw).as_os_str().as_bytes(), want.as_slice());
        // `%%n` is a literal `%n`, not a sequence number.
        assert!(!has_sequence(raw) && has_sequence(Path::new("t-%n")));
        let host = writer::host_name();
        assert_eq!(expand_path("t-%h-%n"), PathBuf::from(format!("t-{host}-1")));
        assert_eq!(
            own_path(Path::new("/d/t.hrxt"), 7),
            PathBuf::from("/d/t.7.hrxt")
        );
        assert_eq!(own_path(Path::new("t"), 7), PathBuf::from("t.7"));
    }

    /// Each trace a process creates is reported in a file of its own (a process that `exec`s
    /// another recording program keeps its pid); a directory that cannot be written is no
    /// error.
    #[test]
    fn each_trace_is_reported_in_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        report_path_in(dir.path(), Path::new("/t/a.hrxt"));
        report_path_in(dir.path(), Path::new("/t/b.hrxt"));
        let pid = std::process::id();
        let read = |name: String| std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(read(pid.to_string()), b"/t/a.hrxt");
        assert_eq!(read(format!("{pid}.1")), b"/t/b.hrxt");
        report_path_in(&dir.path().join("missing"), Path::new("/t/c.hrxt"));
    }

    #[test]
    fn a_sequence_number_skips_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s-1.hrxt"), b"").unwrap();
        let (recorder, written) =
            create_unshared(&dir.path().join("s-%n.hrxt"), RecorderOptions::default()).unwrap();
        recorder.close().unwrap();
        assert_eq!(written, dir.path().join("s-2.hrxt"));
        assert!(
            read_all(dir.path().join("s-2.hrxt"))
                .unwrap()
                .recovery
                .clean_close
        );
        assert_eq!(std::fs::read(dir.path().join("s-1.hrxt")).unwrap(), b"");
    }

    /// Recorders started together on one `%n` template, each closing at once, take distinct
    /// numbers and every trace survives whole: a number is taken atomically, so a recorder
    /// that checked a name before a sibling finished its trace there cannot truncate it (two
    /// `record --workload ... -o w-%n.hrxt` started together lost one trace that way).
    #[test]
    fn recorders_started_together_take_distinct_numbers_and_keep_every_trace() {
        let dir = tempfile::tempdir().unwrap();
        let template = dir.path().join("r-%n.hrxt");
        let written: Vec<PathBuf> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let (recorder, path) =
                            create_unshared(&template, RecorderOptions::default()).unwrap();
                        recorder.close().unwrap();
                        path
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut names = written.clone();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 8, "{written:?}");
        for path in &written {
            assert!(read_all(path).unwrap().recovery.clean_close, "{path:?}");
        }
    }

    #[test]
    fn a_locked_trace_sends_this_process_to_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let first = Recorder::create(&path, RecorderOptions::default()).unwrap();
        let (second, written) = create_unshared(&path, RecorderOptions::default()).unwrap();
        second.close().unwrap();
        first.close().unwrap();
        let own = own_path(&path, std::process::id());
        assert_eq!(written, own, "the file it fell back to is the one it names");
        assert!(read_all(&path).unwrap().recovery.clean_close);
        assert!(read_all(own).unwrap().recovery.clean_close);
    }

    #[test]
    fn a_file_that_is_not_a_trace_is_left_alone_and_this_process_records_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"hi\n").unwrap();
        let (recorder, _) = create_unshared(&path, RecorderOptions::default()).unwrap();
        recorder.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hi\n");
        let own = own_path(&path, std::process::id());
        assert!(read_all(own).unwrap().recovery.clean_close);
        // An old trace, and an empty file, are still overwritten in place.
        let trace = dir.path().join("t.hrxt");
        for _ in 0..2 {
            let (recorder, written) = create_unshared(&trace, RecorderOptions::default()).unwrap();
            assert_eq!(written, trace);
            recorder.close().unwrap();
        }
        assert!(!own_path(&trace, std::process::id()).exists());
        assert!(read_all(&trace).unwrap().recovery.clean_close);
    }

    /// In a child forked without `exec` from a process whose recorder is installed, that
    /// recorder is its parent's, writing nothing there: `current` has none, and
    /// `install_or_current` opens the child's own trace (here `%p`, the child's pid), which
    /// closes complete; the parent's is untouched. It joined the parent's recorder and
    /// recorded nothing, silently (a break-it pass).
    #[cfg(unix)]
    /// In a forked child with no recorder of its own: opens one at `template` (not the
    /// parent's, `parent_id`), records a `RuntimeEnd` of `runtime` and closes it; whether the
    /// trace read back is closed cleanly and holds that record.
    fn records_its_own_trace(template: &Path, parent_id: u64, runtime: u32) -> Option<()> {
        (current().is_none()).then_some(())?;
        let own = install_or_current(template, RecorderOptions::default()).ok()?;
        (own.id() != parent_id && enabled()).then_some(())?;
        record(&Record::RuntimeEnd(RuntimeEnd {
            runtime: RuntimeId(runtime),
            time_ns: now_ns(),
        }));
        shutdown().ok()??;
        let trace = read_all(installed_path()?).ok()?;
        (trace.recovery.clean_close
            && trace
                .records
                .iter()
                .any(|r| r.runtime() == Some(RuntimeId(runtime))))
        .then_some(())
    }

    fn forked_child_records_into_a_trace_of_its_own(template: &Path, parent: &Recorder) {
        let parent_id = parent.id();
        let pid =
            crate::fork::child::spawn(|| records_its_own_trace(template, parent_id, 7).is_some());
        assert!(
            crate::fork::child::held(pid),
            "the forked child's own trace"
        );
        let child = template.with_file_name(format!("shared-{pid}.hrxt"));
        assert!(read_all(&child).unwrap().recovery.clean_close);

        // A child that only annotates records into a trace of its own too: its annotations
        // were dropped without a word.
        let annotates = || -> Option<()> {
            let name = annotation_name("in the child")?;
            let own = current()?;
            (own.id() != parent.id()).then_some(())?;
            shutdown().ok()??;
            let trace = read_all(installed_path()?).ok()?;
            (trace.recovery.clean_close
                && trace.records.iter().any(|r| {
                    matches!(r, Record::AnnotationName(n) if n.name == name && n.text == "in the child")
                }))
            .then_some(())
        };
        let pid = crate::fork::child::spawn(|| annotates().is_some());
        assert!(
            crate::fork::child::held(pid),
            "the annotating child's own trace"
        );
        let child = template.with_file_name(format!("shared-{pid}.hrxt"));
        assert!(read_all(&child).unwrap().recovery.clean_close);

        // The slot's lock held at the fork (by this thread here; by another of the parent's
        // threads in a program, below), never released in the child: the child takes it
        // over, and its annotation opens a trace of its own. It recorded nothing (after
        // waiting 100 ms) before session 52.
        let held = lock_slot();
        let pid = crate::fork::child::spawn(|| {
            let annotates = || -> Option<()> {
                annotation_name("in the child")?;
                let range = open_range("range")?;
                close_range(&range);
                shutdown().ok()??;
                read_all(installed_path()?)
                    .ok()?
                    .recovery
                    .clean_close
                    .then_some(())
            };
            annotates().is_some()
        });
        drop(held);
        assert!(
            crate::fork::child::held(pid),
            "the child did not take over a lock held at the fork"
        );
        let _ = std::fs::remove_file(template.with_file_name(format!("shared-{pid}.hrxt")));
        // A runtime made in such a child (it asks for the current recorder, then opens one)
        // records into a trace of its own. It got an error ("held the recorder's lock") and
        // ran untraced.
        let held = lock_slot();
        let pid = crate::fork::child::spawn(|| {
            current().is_none()
                && install_or_current(template, RecorderOptions::default())
                    .is_ok_and(|own| own.id() != parent.id())
                && shutdown().is_ok_and(|s| s.is_some())
        });
        drop(held);
        assert!(
            crate::fork::child::held(pid),
            "the child did not take over a lock held at the fork"
        );
        let _ = std::fs::remove_file(template.with_file_name(format!("shared-{pid}.hrxt")));
        // A thread of the child itself holding the lock past 100 ms (opening the child's
        // own trace on a slow disk, as `install_or_current` does under it): another thread
        // of the child making a runtime meanwhile waits for it, as in any process, and
        // shares its trace (it is not taken over as a parent's is). It was told its parent
        // held the lock and recorded nothing (session 51).
        let pid = crate::fork::child::spawn(|| {
            let (taken, take) = std::sync::mpsc::channel();
            let holder = std::thread::spawn(move || {
                let slot = lock_slot();
                let _ = taken.send(true);
                std::thread::sleep(std::time::Duration::from_millis(300));
                drop(slot);
            });
            let opened = take.recv() == Ok(true)
                && install_or_current(template, RecorderOptions::default()).is_ok();
            holder.join().is_ok() && opened && shutdown().is_ok_and(|s| s.is_some())
        });
        assert!(
            crate::fork::child::held(pid),
            "a thread of the child holding the lock was taken for its parent's"
        );
        let _ = std::fs::remove_file(template.with_file_name(format!("shared-{pid}.hrxt")));

        // Another thread of the parent holding the slot's lock across the fork (opening the
        // process's first trace, or closing it, as a program's runtime thread does while its
        // main thread forks): the child closes, opens a trace of its own, records and closes
        // it, without waiting for a thread it does not have. It waited for ever in `shutdown`
        // (`close_trace`) and in `current` (`Runtime::new`), or ran untraced after 100 ms
        // ("a thread of its parent held the recorder's lock"; the break-it pass of session
        // 52, D4).
        let (taken, take) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let held = lock_slot();
            let _ = taken.send(());
            let _ = released.recv();
            drop(held);
        });
        take.recv().unwrap();
        let parent_id = parent.id();
        let pid = crate::fork::child::spawn(|| {
            let checks = || -> Option<()> {
                // The parent's recorder, inherited: closing it writes nothing and returns.
                shutdown().ok()?;
                records_its_own_trace(template, parent_id, 8)
            };
            checks().is_some()
        });
        let _ = release.send(());
        holder.join().unwrap();
        assert!(
            crate::fork::child::held(pid),
            "a child forked while another thread held the slot's lock records its own trace"
        );
        let child = template.with_file_name(format!("shared-{pid}.hrxt"));
        assert!(read_all(&child).unwrap().recovery.clean_close);

        // A process that found its trace's name taken by another process (one forked from
        // it before, or a sibling) and recorded beside it: a child it forks later keeps off
        // that name too, and never replaces the other process's trace once it is closed.
        // Children forked one after another replaced it, and each other's (session 52's
        // burst of forks: 15 of 60 traces lost).
        let asked = template.with_file_name("taken.hrxt");
        let pid = crate::fork::child::spawn(|| {
            let checks = || -> Option<()> {
                let other = Recorder::create(&asked, RecorderOptions::default()).ok()?;
                install_or_current(&asked, RecorderOptions::default()).ok()?;
                let beside = own_path(&asked, std::process::id());
                (installed_path()? == beside).then_some(())?;
                other.close().ok()?;
                let before = file_identity(&asked);
                let grandchild = crate::fork::child::spawn(|| {
                    shutdown().is_ok()
                        && install_or_current(&asked, RecorderOptions::default()).is_ok()
                        && installed_path() == Some(own_path(&asked, std::process::id()))
                        && shutdown().is_ok_and(|s| s.is_some())
                });
                crate::fork::child::held(grandchild).then_some(())?;
                let _ = std::fs::remove_file(own_path(&asked, grandchild as u32));
                (file_identity(&asked) == before).then_some(())?;
                shutdown().ok()??;
                read_all(&asked).ok()?.recovery.clean_close.then_some(())
            };
            checks().is_some()
        });
        assert!(
            crate::fork::child::held(pid),
            "a grandchild replaced the trace its parent found taken"
        );
    }

    /// The only test touching the process-wide slot (tests run in parallel).
    #[test]
    fn global_slot_gates_and_shares_one_trace() {
        assert!(!enabled());
        record(&Record::RuntimeEnd(RuntimeEnd {
            runtime: RuntimeId(9),
            time_ns: 0,
        })); // no recorder: ignored
        assert_eq!(now_ns(), 0);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared-%p.hrxt");
        let first = install_or_current(&path, RecorderOptions::default()).unwrap();
        let second =
            install_or_current(dir.path().join("unused"), RecorderOptions::default()).unwrap();
        assert!(enabled());
        #[cfg(unix)]
        forked_child_records_into_a_trace_of_its_own(&path, &first);
        let (a, b) = (first.next_runtime_id(), second.next_runtime_id());
        assert_ne!(a, b);
        let from_other_thread = std::thread::spawn(move || {
            record(&Record::RuntimeEnd(RuntimeEnd {
                runtime: b,
                time_ns: now_ns(),
            }));
        });
        record(&Record::RuntimeEnd(RuntimeEnd {
            runtime: a,
            time_ns: now_ns(),
        }));
        from_other_thread.join().unwrap();
        assert!(
            install_from_env(RecorderOptions::default())
                .unwrap()
                .is_some()
        );
        drop((first, second));
        let summary = shutdown().unwrap().unwrap();
        assert!(!enabled());
        assert!(shutdown().unwrap().is_none());
        assert!(!dir.path().join("unused").exists());

        let trace = read_all(expand_path(&path)).unwrap();
        assert!(trace.recovery.clean_close);
        assert_eq!(summary.records, trace.records.len() as u64);
        let mut runtimes: Vec<_> = trace.records.iter().filter_map(Record::runtime).collect();
        runtimes.sort();
        assert_eq!(runtimes, vec![a, b]);
    }
}
