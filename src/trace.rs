//! Instrumentation hooks: the runtime's side of the trace (`hrx-capture`).
//!
//! A runtime opens the process's trace when `RuntimeOptions::trace` (or `HRX_TRACE`) names
//! a file, or joins the trace another runtime of the process opened; every record carries
//! the runtime id. The recorder lives in the runtime's `Tracer`: with tracing off a hook
//! is one branch on `None` (`Tracer::hook`) and allocates nothing. The trace is closed
//! (footer written) by [`close_trace`], which an `atexit` handler also runs when the process
//! exits normally; a process killed outright keeps everything flushed up to 100 ms before
//! its death.
//!
//! The layers above hand this module ready-made records (`hrx_capture::schema` values)
//! or plain numbers: the runtime, its buffers and the execution stages build what they
//! record (`execution/record.rs` for the stages), so this module imports nothing of them
//! and sits below the buffers, beside the clock. What it owns is the machinery: opening
//! and closing the trace, the session clock, deferred captures of buffer bytes behind
//! `Captures` fences, and output digests hashed off the recording thread.
//!
//! # Ranges
//!
//! A capture range (`HRX_TRACE_RANGE`, `RuntimeOptions::trace_range`, [`start`]/[`stop`];
//! see [`hrx_capture::range`]) limits what a runtime records to the submissions inside it:
//! definitions (buffers, kernels, graph operations, prepares, quarantines, poison) are always
//! recorded, since they are small and a later submission may use any of them; submits,
//! their timings, outcomes, digests and host writes only while the range is open. The
//! decision is made at each submit, under the scheduler lock, by submission number and
//! session time (`Tracer::submit_hook`); a submission recorded is recorded whole, even
//! when the range closes while it runs.
//!
//! When a range opens mid-run (the runtime submitted or wrote buffers before it), replay
//! needs the state the range starts from, GFXReconstruct's state snapshot: the contents of
//! the bytes the range reads before it writes them. Before the range's first submission the
//! submit path waits for the runtime's submissions in flight to finish (as GFXReconstruct
//! waits for the device to idle), and from then on the snapshot is taken lazily
//! (`snapshot`): before each submission of the range, the bytes its graph reads that the
//! range has neither written nor snapshotted yet are read (GPU-local ones read back) and
//! recorded as [`s::BufferSnapshot`]s. Until session 13 every live buffer was snapshotted
//! whole at the opening (2.20 MiB for a third of the pipeline, which reads none of it
//! before writing it); `hrx-trace trim`, which knows the range's future, derives the same
//! bytes from a finished trace.

use hrx_capture::schema as s;
use hrx_capture::{Recorder, RecorderOptions, ShowPath, TraceMode};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};

mod snapshot;
use snapshot::{Held, Settle};
pub(crate) use snapshot::{Pending, RangeSet, Settled};

/// Flushes and closes the process's trace, writing its footer. Runtimes that record
/// afterwards record nothing until a new trace is opened. Runs automatically at normal
/// process exit.
///
/// # Errors
/// [`crate::Error::Message`] when the trace file could not be written.
pub fn close_trace() -> crate::Result<()> {
    hrx_capture::shutdown()
        .map(|_| ())
        .map_err(|e| crate::Error::Message(format!("closing the trace: {e}")))
}

/// Starts (or resumes) recording submissions, at each runtime's next submit: one atomic
/// store. A runtime that was not recording first records the state replay needs to start
/// there (see the module docs): its next submit waits for its work in flight. With no trace
/// open it does nothing. `HRX_TRACE_RANGE=api` (`hrx-trace record --capture-range api`)
/// records nothing until the first `start`.
pub fn start() {
    hrx_capture::range::start();
}

/// Stops recording submissions at each runtime's next submit; buffers, kernels and graphs
/// are still recorded, so a later [`start`] can resume. One atomic store.
pub fn stop() {
    hrx_capture::range::stop();
}

extern "C" fn close_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Err(error) = close_trace() {
            crate::error::to_stderr(format_args!("hrx: {error}"));
        }
    });
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Where a new runtime records.
pub(crate) struct TraceTarget<'a> {
    /// Record into this recorder (takes precedence over `path`).
    pub recorder: Option<&'a Recorder>,
    /// Open (or join) the process's trace at this path.
    pub path: Option<&'a Path>,
    /// Lossless or lossy, for a trace opened here.
    pub mode: TraceMode,
    /// The backend's name and the device's description, for a trace opened here.
    pub backend: String,
    /// The device's name.
    pub device: String,
    /// Whether `path` came from `HRX_TRACE` rather than the program: then a trace that
    /// cannot be opened leaves the runtime untraced, with one line on standard error,
    /// instead of failing it (tracing never makes the traced program fail; issue 18).
    pub from_environment: bool,
}

/// The recorder for a new runtime: `target`'s, or the one already open in this process, or
/// none.
///
/// # Errors
/// [`crate::Error::Message`] when the trace file the program named cannot be opened (one
/// from `HRX_TRACE` that cannot be opened is said on standard error and not traced).
pub(crate) fn open(target: TraceTarget<'_>) -> crate::Result<Option<Recorder>> {
    if let Some(recorder) = target.recorder {
        return Ok(Some(recorder.clone()));
    }
    let recorder = match target.path {
        Some(path) => {
            let options = RecorderOptions {
                backend: target.backend,
                device: target.device,
                mode: target.mode,
                ..RecorderOptions::default()
            };
            // An earlier trace `HRX_TRACE` names is replaced, but not silently (`hrx-trace
            // record -o` says so too, and is the one to say it when it set the variable).
            let earlier = (target.from_environment
                && hrx_capture::current().is_none()
                && std::env::var_os(hrx_capture::TRACE_PATHS_ENV).is_none()
                && !hrx_capture::has_sequence(path))
            .then(|| hrx_capture::expand_path(path))
            .filter(|file| std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.len() > 0));
            // Which file it was, and how long: a replacement leaves it whole until the first
            // write; a recorder that may not create files in its folder empties it in place.
            let held = |file: &Path| {
                use std::os::unix::fs::MetadataExt;
                std::fs::metadata(file).map(|m| (m.dev(), m.ino(), m.len()))
            };
            let earlier_file = earlier.as_deref().and_then(|file| held(file).ok());
            match hrx_capture::install_or_current(path, options) {
                Ok(recorder) => {
                    if let Some(file) = earlier
                        && hrx_capture::installed_path().as_deref() == Some(file.as_path())
                    {
                        let emptied = match (earlier_file, held(&file)) {
                            (Some((dev, ino, len)), Ok((now_dev, now_ino, now_len))) => {
                                (dev, ino) == (now_dev, now_ino) && now_len < len
                            }
                            _ => false,
                        };
                        let what = if emptied {
                            "it was emptied in place, as its folder is not writable; a reader \
                             still reading it reads two recordings as one"
                        } else {
                            "it is replaced"
                        };
                        crate::error::to_stderr(format_args!(
                            "hrx: HRX_TRACE={}: it held an earlier trace: {what}",
                            path.shown()
                        ));
                    }
                    Some(recorder)
                }
                Err(e) if target.from_environment => {
                    use std::os::unix::ffi::OsStrExt;
                    // The system says "Is a directory" of a name that is none yet: say why.
                    let why = if path.as_os_str().as_bytes().ends_with(b"/") && !path.is_dir() {
                        "a directory's name (it ends with /), not a file's".to_owned()
                    } else {
                        e.to_string()
                    };
                    // The recorder replaces an earlier trace at its first write, so one whose
                    // first write failed leaves it; where it had to empty it in place (a
                    // folder it may not write), the earlier trace is gone.
                    let lost = earlier
                        .as_deref()
                        .filter(|file| !file.exists())
                        .map_or(String::new(), |file| {
                            format!(" (the earlier trace {} is lost)", file.shown())
                        });
                    crate::error::to_stderr(format_args!(
                        "hrx: HRX_TRACE={}: cannot record there ({why}): this process runs \
                         untraced{lost}",
                        path.shown()
                    ));
                    None
                }
                Err(e) => {
                    return Err(crate::Error::Message(format!(
                        "cannot open trace {}: {e}",
                        path.shown()
                    )));
                }
            }
        }
        None => hrx_capture::current(),
    };
    if recorder.is_some() {
        static AT_EXIT: Once = Once::new();
        // SAFETY: `close_at_exit` is a plain function that catches every panic.
        AT_EXIT.call_once(|| unsafe {
            atexit(close_at_exit);
        });
    }
    Ok(recorder)
}

/// A runtime's trace: its recorder (or none) and its id.
pub(crate) struct Tracer {
    recorder: Option<Recorder>,
    runtime: s::RuntimeId,
    /// Whether output contents, not only digests, are traced.
    contents: bool,
    /// Whether every written range is digested, GPU-local ones too.
    all_outputs: bool,
    /// Which submissions go into the trace (with a recorder only).
    window: Option<Window>,
    /// Whether operations are timed on the device too (with a recorder only).
    kernel_times: bool,
    /// Whether built-in kernels time themselves (with a recorder only).
    builtin_kernel_times: bool,
    /// Whether host writes are recorded ([`crate::RuntimeOptions::trace_host_writes`]).
    host_writes: bool,
}

/// Which submissions a traced runtime records (see the module docs), and the bytes the open
/// range holds for its lazy snapshot.
struct Window {
    range: Option<hrx_capture::CaptureRange>,
    /// Every submission so far was recorded: the fast path of [`Window::traced`].
    all: AtomicBool,
    /// The range is open: host writes and submits are recorded.
    open: AtomicBool,
    state: Mutex<WindowState>,
    /// Locked after `state` is released, never while it is held (`Pending` holds it
    /// across a submit, which may close the range).
    held: Mutex<Held>,
}

#[derive(Default)]
struct WindowState {
    /// The first submission of the open range.
    open_from: Option<u64>,
    /// Closed ranges, `start..end`.
    closed: Vec<(u64, u64)>,
}

impl Window {
    fn new(range: Option<hrx_capture::CaptureRange>) -> Window {
        let open = range.is_none() && hrx_capture::range::manually_on(None);
        Window {
            range,
            all: AtomicBool::new(open),
            open: AtomicBool::new(open),
            state: Mutex::new(WindowState {
                open_from: open.then_some(1),
                closed: Vec::new(),
            }),
            held: Mutex::new(Held::default()),
        }
    }

    /// Whether the records of `submission` are in the trace.
    fn traced(&self, submission: u64) -> bool {
        if self.all.load(Ordering::Relaxed) {
            return true;
        }
        let state = crate::sync::lock(&self.state);
        state.open_from.is_some_and(|f| submission >= f)
            || state
                .closed
                .iter()
                .any(|&(a, b)| (a..b).contains(&submission))
    }

    fn wanted(&self, submission: u64, time_ns: u64) -> bool {
        hrx_capture::range::manually_on(self.range.as_ref())
            && self.range.is_none_or(|r| r.holds(submission, time_ns))
    }

    fn trigger(&self) -> String {
        self.range
            .map_or_else(|| "api".to_owned(), |r| r.to_string())
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }
}

impl Tracer {
    /// A tracer of runtime `runtime` recording into `recorder`; `contents`: output contents
    /// are captured, not only digests; `all_outputs`: GPU-local outputs are digested too.
    pub fn new(
        recorder: Option<Recorder>,
        runtime: u32,
        contents: bool,
        all_outputs: bool,
        range: Option<hrx_capture::CaptureRange>,
    ) -> Self {
        Self {
            window: recorder.as_ref().map(|_| Window::new(range)),
            recorder,
            runtime: s::RuntimeId(runtime),
            contents,
            all_outputs,
            kernel_times: false,
            builtin_kernel_times: false,
            host_writes: true,
        }
    }

    /// Records host writes with their bytes, or not
    /// ([`crate::RuntimeOptions::trace_host_writes`]).
    pub fn host_writes(mut self, on: bool) -> Self {
        self.host_writes = on;
        self
    }

    /// Whether host writes are recorded ([`Tracer::host_writes`]).
    #[inline]
    pub fn records_host_writes(&self) -> bool {
        self.host_writes
    }

    /// Whether a host write of `len` bytes, recorded now, is hashed as it is copied in
    /// ([`hash_beside`]): a large write while host writes are recorded.
    #[inline]
    pub fn hashes_beside(&self, len: usize) -> bool {
        len > POOLED_HOST_WRITE_BYTES && self.host_writes && self.open_hook().is_some()
    }

    /// Times operations on the device too when traced ([`crate::RuntimeOptions::kernel_times`]).
    pub fn kernel_times(mut self, on: bool) -> Self {
        self.kernel_times = on && self.recorder.is_some();
        self
    }

    /// Built-in kernels time themselves when traced
    /// ([`crate::RuntimeOptions::builtin_kernel_times`]).
    pub fn builtin_kernel_times(mut self, on: bool) -> Self {
        self.builtin_kernel_times = on && self.recorder.is_some();
        self
    }

    /// Whether streams launch built-in kernels' self-timing builds
    /// ([`Tracer::builtin_kernel_times`]).
    #[inline]
    pub fn times_builtin_kernels(&self) -> bool {
        self.builtin_kernel_times
    }

    /// Whether streams time each operation on the device ([`Tracer::kernel_times`]).
    #[inline]
    pub fn times_kernels(&self) -> bool {
        self.kernel_times
    }

    /// The hook to record with, `None` when tracing is off (one branch).
    #[inline]
    pub fn hook(&self) -> Option<Hook<'_>> {
        self.recorder.as_ref().map(|recorder| Hook {
            recorder,
            runtime: self.runtime,
            contents: self.contents,
            all_outputs: self.all_outputs,
        })
    }

    /// Whether this runtime records.
    #[inline]
    pub fn on(&self) -> bool {
        self.recorder.is_some()
    }

    /// The hook for a record that belongs inside the range (a host write, a refused
    /// submit): `None` when tracing is off or the range is closed.
    #[inline]
    pub fn open_hook(&self) -> Option<Hook<'_>> {
        match &self.window {
            Some(window) if !window.is_open() => None,
            _ => self.hook(),
        }
    }

    /// The hook for a record of `submission` (its timings, outcome, digests): `None` when
    /// tracing is off or the submission is outside the range.
    #[inline]
    pub fn submission_hook(&self, submission: u64) -> Option<Hook<'_>> {
        match &self.window {
            Some(window) if !window.traced(submission) => None,
            _ => self.hook(),
        }
    }

    /// Whether `submission`'s records go into the trace.
    #[inline]
    pub fn traces(&self, submission: u64) -> bool {
        self.submission_hook(submission).is_some()
    }

    /// Buffer `id` was released.
    pub fn buffer_gone(&self, id: u64) {
        if let Some(window) = &self.window {
            crate::sync::lock(&window.held).forget(id);
        }
    }

    /// A host write recorded in the open range set bytes `range` of buffer `buffer`: the
    /// range holds them (see `snapshot`).
    pub fn host_wrote(&self, buffer: u64, range: Range<u64>) {
        if let Some(window) = &self.window
            && window.is_open()
        {
            crate::sync::lock(&window.held).insert(buffer, range);
        }
    }

    /// Before a submit while the range is open: snapshots the bytes of `reads` (buffer,
    /// range: what the graph reads before writing it) that the range does not hold yet,
    /// reading them with `read(i, range)` (`reads[i]`'s buffer), and returns the lock to
    /// hold until the submit is decided ([`Pending::submitted`] with the graph's writes
    /// when accepted). `None`, reading nothing, when the range is closed or tracing is off:
    /// one branch and one relaxed load. A graph whose bytes are all held already
    /// (`settled`, see `snapshot`) looks nothing up.
    pub fn snapshot_reads<'a>(
        &'a self,
        reads: &[(u64, Range<u64>)],
        settled: &'a Settled,
        read: impl FnMut(usize, Range<u64>) -> Option<Vec<u8>>,
    ) -> Option<Pending<'a>> {
        let (Some(hook), Some(window)) = (self.hook(), &self.window) else {
            return None;
        };
        if !window.is_open() {
            return None;
        }
        let mut held = crate::sync::lock(&window.held);
        if held.settled(settled) {
            return Some(Pending {
                held,
                settle: Settle::Already,
            });
        }
        let settle = match held.snapshot(&hook, reads, read) {
            true => Settle::Note(settled),
            false => Settle::Not,
        };
        Some(Pending { held, settle })
    }

    /// Whether this runtime records into a trace whose capture range is closed now.
    #[inline]
    pub fn range_closed(&self) -> bool {
        self.window.as_ref().is_some_and(|w| !w.is_open())
    }

    /// Whether the next submit, `next`, opens the range (it is closed and `next` is inside
    /// it): the caller then drains the runtime and calls [`Tracer::open_range`].
    pub fn opens_range(&self, next: u64) -> bool {
        match (&self.recorder, &self.window) {
            (Some(recorder), Some(window)) => {
                !window.is_open() && window.wanted(next, recorder.now_ns())
            }
            _ => false,
        }
    }

    /// Opens the range at submission `next`, recording its [`s::TraceRange`] (with the
    /// injected fault counted from `next`, `fault`); its submissions then snapshot what they
    /// read ([`Tracer::snapshot_reads`]). The runtime must have nothing in flight (see the
    /// module docs).
    pub fn open_range(&self, next: u64, fault: Option<s::RangeFault>) {
        let (Some(hook), Some(window)) = (self.hook(), &self.window) else {
            return;
        };
        let mut state = crate::sync::lock(&window.state);
        if window.is_open() {
            return; // another thread opened it meanwhile
        }
        let time_ns = hook.now_ns();
        hook.record(s::Record::TraceRange(s::TraceRange {
            runtime: self.runtime,
            start: s::SubmissionIndex(next),
            end: None,
            trigger: window.trigger(),
            trimmed_from: None,
            time_ns,
            fault,
        }));
        state.open_from = Some(next);
        window.open.store(true, Ordering::Relaxed);
        drop(state);
        // Nothing held yet: the range's submissions snapshot what they read (`snapshot`).
        crate::sync::lock(&window.held).clear();
    }

    /// The hook to record `submission`'s submit with, at the submit under the scheduler
    /// lock: `None` when it is outside the range, closing the range when it has left it.
    pub fn submit_hook(&self, submission: u64) -> Option<Hook<'_>> {
        let hook = self.hook()?;
        let Some(window) = &self.window else {
            return Some(hook);
        };
        if !window.is_open() {
            return None;
        }
        if window.all.load(Ordering::Relaxed)
            && window.range.is_none()
            && hrx_capture::range::manually_on(None)
        {
            return Some(hook);
        }
        if window.wanted(submission, hook.now_ns()) {
            return Some(hook);
        }
        self.close_range(submission);
        None
    }

    /// Closes the open range before submission `end`: at a submit that left it, or at the
    /// runtime's end (`end` then one past its last submission). Nothing when it is not open
    /// or recorded everything.
    pub fn close_range(&self, end: u64) {
        let (Some(hook), Some(window)) = (self.hook(), &self.window) else {
            return;
        };
        let mut state = crate::sync::lock(&window.state);
        let Some(start) = state.open_from.take() else {
            return;
        };
        window.all.store(false, Ordering::Relaxed);
        window.open.store(false, Ordering::Relaxed);
        state.closed.push((start, end));
        hook.record(s::Record::TraceRange(s::TraceRange {
            runtime: self.runtime,
            start: s::SubmissionIndex(start),
            end: Some(s::SubmissionIndex(end)),
            trigger: window.trigger(),
            trimmed_from: None,
            time_ns: hook.now_ns(),
            fault: None,
        }));
    }

    /// At the runtime's end, after `submissions` submissions: closes a range still open
    /// that did not record the whole run, and records a range that never opened (a
    /// `submissions:` range past the run's end, a time range after it, `api` without a
    /// `start()`) as an empty one after the last submission, so that readers say the
    /// trace holds none of the run's submissions instead of reading it as whole.
    pub fn runtime_ended(&self, submissions: u64) {
        let (Some(hook), Some(window)) = (self.hook(), &self.window) else {
            return;
        };
        if window.all.load(Ordering::Relaxed) {
            return;
        }
        if window.is_open() {
            return self.close_range(submissions + 1);
        }
        let state = crate::sync::lock(&window.state);
        if state.open_from.is_none() && state.closed.is_empty() {
            let end = s::SubmissionIndex(submissions + 1);
            hook.record(s::Record::TraceRange(s::TraceRange {
                runtime: self.runtime,
                start: end,
                end: Some(end),
                trigger: window.trigger(),
                trimmed_from: None,
                time_ns: hook.now_ns(),
                fault: None,
            }));
        }
    }
}

/// Recording for one runtime while its trace is on.
#[derive(Clone, Copy)]
pub(crate) struct Hook<'a> {
    recorder: &'a Recorder,
    /// The runtime every record names.
    pub runtime: s::RuntimeId,
    /// Whether output contents, not only digests, are traced.
    pub contents: bool,
    /// Whether every written range is digested, GPU-local ones too.
    pub all_outputs: bool,
}

impl Hook<'_> {
    /// Records `record` (inlined where it is built: see [`Recorder::record`]).
    #[inline(always)]
    pub fn record(&self, record: s::Record) {
        self.recorder.record(&record);
    }

    /// Records `record` without building a [`s::Record`] (see [`Recorder::record_raw`]).
    #[inline(always)]
    pub fn record_raw(&self, record: hrx_capture::RawRecord<'_>) {
        self.recorder.record_raw(record);
    }

    /// Records gathered and handed to the thread's trace buffer at once (see
    /// [`hrx_capture::RawBatch`]).
    #[inline]
    pub fn raw_batch(&self) -> hrx_capture::RawBatch<'_> {
        self.recorder.raw_batch()
    }

    /// Now, on the session's clock.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.recorder.now_ns()
    }

    /// Records that the calling thread waited at a buffer's capture fence from `start_ns`
    /// (session clock) until now, for a host access to the buffer (a write, a write mapping, its
    /// release), or for the hash of its own write ([`hash_beside`]), when the wait reached
    /// [`HOST_FENCE_WAIT_RECORDED_NS`]: a
    /// [`s::RecorderWait`] of this runtime, as a wait for the trace file is, so that `info`,
    /// `stats` and the timeline show what the trace cost the program (issue 17 point 1).
    pub fn host_fence_waited(&self, start_ns: u64) {
        let end_ns = self.now_ns();
        if end_ns.saturating_sub(start_ns) < HOST_FENCE_WAIT_RECORDED_NS {
            return;
        }
        let runtime = self.runtime;
        self.recorder.record_on_thread(|thread| {
            s::Record::RecorderWait(s::RecorderWait {
                thread,
                thread_name: std::thread::current().name().unwrap_or("").to_owned(),
                start_ns,
                end_ns,
                runtime: Some(runtime),
                submission: None,
                region: None,
            })
        });
    }

    /// Sets counter `name` to `value` now, on the calling thread (a [`s::CounterSample`]).
    pub fn counter(&self, name: &str, value: f64) {
        let Some(name) = self.recorder.annotation_name(name) else {
            return;
        };
        let time_ns = self.recorder.now_ns();
        self.recorder.record_on_thread(|thread| {
            s::Record::CounterSample(s::CounterSample {
                thread,
                name,
                time_ns,
                value: s::CounterValue(value),
            })
        });
    }

    /// The host's load per CPU now ([`s::HOST_LOAD_COUNTER`]), at a runtime's start and end:
    /// what a reader of the trace needs to tell whether its times include waits for a CPU.
    pub fn host_load(&self) {
        if let Some(load) = s::host_load_per_cpu_now() {
            self.counter(s::HOST_LOAD_COUNTER, load);
        }
    }

    /// `process_ns` (from [`crate::clock::now_ns`]: region start and end times, the host times
    /// backends map device timestamps onto) on the session's clock (each recorder has its own
    /// base), so that every record of a trace is on one clock.
    #[inline]
    pub fn session_ns(&self, process_ns: u64) -> u64 {
        crate::clock::to_session_ns(process_ns, self.recorder.base_ns())
    }

    /// Stores `code` once per content hash; its hash, or `None` when it could not be stored.
    pub fn intern_blob(&self, code: &[u8]) -> Option<s::BlobHash> {
        self.recorder.intern_blob(code)
    }

    /// Writes what was recorded so far.
    pub fn flush(&self) {
        let _ = self.recorder.flush();
    }

    /// A host write of `data` at `offset` of buffer `buffer`, at `time_ns` (session clock).
    /// With `mapped` (the buffer's host mapping holds `data`, and these are its fences), hashing
    /// and storing the bytes is deferred to the trace writer's thread behind a capture fence
    /// (writers of the buffer wait for it); otherwise `data` is the caller's and is captured
    /// now.
    ///
    /// # Safety
    /// - with `mapped`, `data` lies in the buffer's host mapping, which stays allocated while a
    ///   fence of `mapped` lives, and nothing writes those bytes while one lives.
    ///
    /// `known`: the xxh3 of `data`, when [`hash_beside`] took it while the bytes were copied
    /// in; contents the trace already holds are then recorded at once, holding no fence.
    pub unsafe fn host_write(
        &self,
        buffer: u64,
        offset: usize,
        data: &[u8],
        mapped: Option<&Captures>,
        known: Option<u64>,
    ) {
        let (runtime, buffer, time_ns) = (self.runtime, s::BufferId(buffer), self.now_ns());
        let len_bytes = data.len() as u64;
        let record = move |xxh3: u64, contents: s::Payload| {
            s::Record::HostWrite(s::HostWrite {
                runtime,
                buffer,
                offset: offset as u64,
                len_bytes,
                xxh3,
                contents,
                time_ns,
            })
        };
        let host_write = move |out: &mut dyn FnMut(&[u8]) -> s::Payload, bytes: &[u8]| {
            let contents = out(bytes);
            let xxh3 = match contents {
                // A blob is named by the xxh3 of its bytes: no second pass over them.
                s::Payload::Blob { hash, .. } => hash.0,
                _ => xxhash_rust::xxh3::xxh3_64(bytes),
            };
            record(xxh3, contents)
        };
        if let Some(xxh3) = known
            && self.recorder.blob_stored(xxh3)
        {
            // A frame written again: its name is all the trace needs, and nothing reads the
            // buffer after this write, so no fence holds its next writer.
            let contents = s::Payload::Blob {
                hash: s::BlobHash(xxh3),
                len_bytes,
            };
            self.recorder.record(&record(xxh3, contents));
            return;
        }
        let Some(captures) = mapped else {
            let record = host_write(&mut |bytes| self.recorder.payload(bytes), data);
            self.recorder.record(&record);
            return;
        };
        // SAFETY: the caller's obligations.
        let captured = unsafe { Captured::new(captures, data) };
        let kind = hrx_capture::DeferredKind::HostWrite;
        if data.len() <= POOLED_HOST_WRITE_BYTES || hashing_threads().is_none() {
            self.recorder.record_deferred_of(kind, move |out| {
                let record = host_write(&mut |bytes| out.payload(bytes), captured.bytes());
                out.record(&record);
            });
            return;
        }
        // A large write is hashed on a hashing thread, as outputs are, rather than
        // on the writer's thread in its turn: the writer runs its jobs one after another, in
        // each recording thread's order, so a frame's hash waited there behind the jobs
        // queued before it (output digests among them), and the program's next write into
        // the buffer waited at its fence for all of them (BENCHMARKS.md, session 30). When
        // the trace already holds these contents (a frame written again), the hashing thread
        // lets go of the buffer at once; else it copies the bytes aside and lets go, and the
        // writer stores the copy ([`aside`]): the program's next write into the buffer
        // waits for a hash and a copy, not for the writer's turn and the store (the `linked`
        // example: 0.3-3 ms a write on a loaded host).
        //
        // The hash starts once a region that reads the buffer has run ([`Captures::park`]),
        // so that it does not read the bytes while an upload's copy engine does.
        let (hashed, hash) = crossbeam_channel::bounded(1);
        let recorder = self.recorder.clone();
        let job: HashJob = Box::new(move || {
            let xxh3 = known.unwrap_or_else(|| xxhash_rust::xxh3::xxh3_64(captured.bytes()));
            let held = (!recorder.blob_stored(xxh3)).then(|| aside(captured));
            let _ = hashed.send((xxh3, held));
            // Its record is held back until now (below).
            recorder.wake_writer();
        });
        captures.park(job);
        let parked = captures.0.clone();
        // The writer holds this thread's later records back until the hash is done, rather
        // than start it while the upload reads the bytes; after 2 ms of that
        // (`hrx_capture::HOLD_LIMIT`: a buffer nothing reads, or reads late), or at a flush,
        // the tick or close, it runs the job anyway, which then starts the hash itself.
        // It never waits for a region to start it: it would wait with its lock held, which
        // the region's thread may need (its first record registers its ring: a hang in a
        // test, session 43).
        let done = hash.clone();
        self.recorder.record_deferred_when(
            kind,
            move || !done.is_empty(),
            move |out| {
                if hash.is_empty() {
                    parked.release();
                }
                let hashed = hash.recv();
                let Ok((xxh3, held)) = hashed else {
                    return;
                };
                let contents = match &held {
                    Some((bytes, _)) => out.payload_hashed(bytes.bytes(), xxh3),
                    None => out.stored_blob(xxh3, len_bytes),
                };
                drop(held); // a fence still held, or the copy's reservation
                out.record(&record(xxh3, contents));
            },
        );
    }

    /// Waits for the captures still reading a buffer that region `region` of `submission`
    /// writes, recording the wait as a [`s::CaptureFence`] span (so that it is never part of
    /// the region's own time); nothing when no capture reads it. Returns whether it waited.
    #[inline]
    pub fn capture_fence(
        &self,
        submission: u64,
        region: usize,
        buffer: u64,
        captures: &Captures,
    ) -> bool {
        if !captures.busy() {
            return false;
        }
        self.capture_fence_wait(submission, region, buffer, captures);
        true
    }

    #[cold]
    fn capture_fence_wait(&self, submission: u64, region: usize, buffer: u64, captures: &Captures) {
        let start_ns = crate::clock::now_ns();
        captures.wait();
        let end_ns = crate::clock::now_ns();
        // On the waiting thread's row too: the `CaptureFence` record names the buffer, the
        // host span the thread.
        let kind = s::HostSpanKind::CaptureFence;
        self.host_span(kind, submission, Some(region), (start_ns, end_ns));
        self.record(s::Record::CaptureFence(s::CaptureFence {
            runtime: self.runtime,
            submission: s::SubmissionIndex(submission),
            region: s::RegionIndex(region as u32),
            buffer: s::BufferId(buffer),
            start_ns: self.session_ns(start_ns),
            end_ns: self.session_ns(end_ns),
        }));
    }

    /// A span of the calling thread's time in the runtime for `submission` (a `submit`, a
    /// blocking wait, a host callback): `(start, end)` from [`crate::clock::now_ns`]. The
    /// recorder supplies the thread's index (its [`s::ThreadName`] is recorded once).
    pub fn host_span(
        &self,
        kind: s::HostSpanKind,
        submission: u64,
        region: Option<usize>,
        (start_ns, end_ns): (u64, u64),
    ) {
        // The thread index is the recorder's to fill in.
        self.recorder
            .record_raw_on_thread(hrx_capture::RawRecord::HostSpan(&s::HostSpan {
                thread: u32::MAX,
                kind,
                runtime: self.runtime,
                submission: s::SubmissionIndex(submission),
                region: region.map(|r| s::RegionIndex(r as u32)),
                start_ns: self.session_ns(start_ns),
                end_ns: self.session_ns(end_ns),
            }));
    }

    /// A region's host time `(start, end)` and device time (both from
    /// [`crate::clock::now_ns`], the backend having mapped the device span onto it), into
    /// `batch`.
    #[inline]
    pub fn region_timing(
        &self,
        batch: &mut hrx_capture::RawBatch<'_>,
        (submission, region): (u64, usize),
        (start_ns, end_ns): (u64, u64),
        device: Option<(u64, u64)>,
    ) {
        let device = device.map(|(start, end)| (self.session_ns(start), self.session_ns(end)));
        if let Some((_, end)) = device {
            static CALIBRATED: Once = Once::new();
            // Backends map device spans onto the host clock themselves; state the identity.
            CALIBRATED.call_once(|| {
                batch.record(&s::Record::ClockCalibration(s::ClockCalibration {
                    runtime: self.runtime,
                    host_ns: end,
                    device_ns: end,
                    device_offset_ns: 0,
                    uncertainty_ns: 0,
                }));
            });
        }
        batch.record_raw(hrx_capture::RawRecord::RegionTiming(&s::RegionTiming {
            runtime: self.runtime,
            submission: s::SubmissionIndex(submission),
            region: s::RegionIndex(region as u32),
            start_ns: self.session_ns(start_ns),
            end_ns: self.session_ns(end_ns),
            device: device.map(|(start_ns, end_ns)| s::DeviceSpan { start_ns, end_ns }),
        }));
    }

    /// The digest (and, when traced, the contents) of `range` of buffer `buffer` that
    /// `submission` wrote, from `source`.
    pub fn output_digest(&self, submission: u64, buffer: u64, range: Range<usize>, source: Output) {
        let (runtime, contents) = (self.runtime, self.contents);
        let (submission, buffer) = (s::SubmissionIndex(submission), s::BufferId(buffer));
        let (start, end) = (range.start as u64, range.end as u64);
        let digest = move |xxh3: u64, contents: s::Payload| {
            s::Record::OutputDigest(s::OutputDigest {
                runtime,
                submission,
                buffer,
                start,
                end,
                xxh3,
                contents,
            })
        };
        if let Output::Captured(captured) = &source
            && captured.len <= INLINE_DIGEST_BYTES
        {
            // Small: hashed (and copied) now, after the region's end time, with no fence
            // kept.
            let bytes = captured.bytes();
            let payload = if contents {
                self.recorder.payload(bytes)
            } else {
                s::Payload::Omitted {
                    len_bytes: bytes.len() as u64,
                }
            };
            self.record(digest(xxhash_rust::xxh3::xxh3_64(bytes), payload));
            return;
        }
        // Hashing runs off this thread: on the hashing threads when only the digest is
        // traced (the fence drops once it is taken), else with the contents on the writer's.
        // Either way the work is timed where it runs and recorded as a `DigestSpan`.
        let session = self.session_clock();
        let span = move |(start_ns, end_ns): (u64, u64)| {
            s::Record::DigestSpan(s::DigestSpan {
                runtime,
                submission,
                buffer,
                start,
                end,
                start_ns: session(start_ns),
                end_ns: session(end_ns),
            })
        };
        match hashing_threads().filter(|_| !contents) {
            Some(threads) => {
                let (hashed, hash) = crossbeam_channel::bounded(1);
                let len_bytes = source.bytes().len() as u64;
                let job = Box::new(move || {
                    let start_ns = crate::clock::now_ns();
                    let xxh3 = xxhash_rust::xxh3::xxh3_64(source.bytes());
                    drop(source); // the fence: a writer of the buffer may go on
                    let _ = hashed.send((xxh3, (start_ns, crate::clock::now_ns())));
                });
                if threads.send(job).is_err() {
                    return;
                }
                let kind = hrx_capture::DeferredKind::OutputDigest;
                self.recorder.record_deferred_of(kind, move |out| {
                    if let Ok((xxh3, times)) = hash.recv() {
                        out.record(&digest(xxh3, s::Payload::Omitted { len_bytes }));
                        out.record(&span(times));
                    }
                });
            }
            None => self.recorder.record_deferred_of(
                hrx_capture::DeferredKind::OutputDigest,
                move |out| {
                    let start_ns = crate::clock::now_ns();
                    let bytes = source.bytes();
                    let payload = if contents {
                        out.payload(bytes)
                    } else {
                        s::Payload::Omitted {
                            len_bytes: bytes.len() as u64,
                        }
                    };
                    let xxh3 = xxhash_rust::xxh3::xxh3_64(bytes);
                    drop(source);
                    let times = (start_ns, crate::clock::now_ns());
                    out.record(&digest(xxh3, payload));
                    out.record(&span(times));
                },
            ),
        }
    }

    /// Maps readings of [`crate::clock::now_ns`] onto this trace's session clock, on any
    /// thread (see [`Hook::session_ns`]).
    fn session_clock(&self) -> impl Fn(u64) -> u64 + Send + 'static {
        let base = self.recorder.base_ns();
        move |process_ns| crate::clock::to_session_ns(process_ns, base)
    }
}

/// Outputs up to this size in host-mapped buffers are hashed on the worker right after the
/// region's end time was read, with no capture fence: xxh3 hashes 4 KiB in about 0.2 µs,
/// less than handing it to another thread costs, and nothing later waits on it. Before, a
/// 256 B download waited for the previous submission's digest (taken on a hashing thread)
/// at a fence, 13-78 µs, inside its own recorded time.
pub(crate) const INLINE_DIGEST_BYTES: usize = 4 << 10;

/// A host access's wait at a buffer's capture fence shorter than this is not recorded
/// ([`Hook::host_fence_waited`]): as for a host write's wait for the trace file, a record
/// would cost more than such a wait.
const HOST_FENCE_WAIT_RECORDED_NS: u64 = 10_000;

/// Host writes larger than this into host-mapped buffers are hashed on the hashing threads
/// ([`Hook::host_write`]); smaller ones on the writer's thread, where handing them over
/// would cost more than their hash. Above the recorder's inline payloads (4 KiB), so that
/// such contents are always blobs.
const POOLED_HOST_WRITE_BYTES: usize = 64 << 10;

/// Deferred trace captures (hashing, storing contents) still reading a buffer's bytes on the
/// trace writer's thread. Whoever would change or free those bytes waits for them first, so
/// the trace holds exactly what was written; untraced runtimes never take a fence, and the
/// check is then one atomic load.
///
/// A large host write's hash waits here ([`Captures::park`]), unless [`hash_beside`] took it
/// during the write's copy, until a region that reads the buffer has run: hashed at once, it
/// read the frame from host memory while the upload's copy engine read it too, and the
/// captured upload took 5-20% longer than untraced or
/// replayed (BENCHMARKS.md, sessions 26 and 40: capture work inside a measured time, and the
/// replay gate's copy regions off by as much). It runs after that region's end time was read
/// ([`Captures::release`]), or when anyone waits at the fence (a host access, a region that
/// writes the buffer, its release), or when the trace writer must record the write first
/// (2 ms after the write, [`hrx_capture::HOLD_LIMIT`]; a flush, its tick, close). Until the
/// hash is done the writer holds the writing thread's later records back
/// ([`hrx_capture::Recorder::record_deferred_when`]); it never waits for a region to start
/// the hash, as it would wait holding its lock, which the region's thread may need.
#[derive(Default)]
pub(crate) struct Captures(Arc<CaptureState>);

#[derive(Default)]
struct CaptureState {
    /// Fences alive ([`CaptureFence`]).
    fences: AtomicUsize,
    /// Whether `parked` holds a job: one load on a region's end, no lock.
    has_parked: AtomicBool,
    /// A host write's hash not started yet ([`Captures::park`]).
    parked: Mutex<Option<HashJob>>,
}

impl CaptureState {
    /// Starts the parked hash, if any, on the hashing threads.
    fn release(&self) {
        if !self.has_parked.load(Ordering::Acquire) {
            return;
        }
        let job = {
            let mut parked = crate::sync::lock(&self.parked);
            self.has_parked.store(false, Ordering::Release);
            parked.take()
        };
        if let Some(job) = job {
            hash_now(job);
        }
    }
}

/// Runs `job` on the hashing threads, or here when they are gone.
fn hash_now(job: HashJob) {
    match hashing_threads() {
        Some(threads) => {
            if let Err(crossbeam_channel::SendError(job)) = threads.send(job) {
                job();
            }
        }
        None => job(),
    }
}

impl Captures {
    /// A fence for one deferred capture; writers wait until it drops.
    fn fence(&self) -> CaptureFence {
        self.0.fences.fetch_add(1, Ordering::AcqRel);
        CaptureFence(self.0.clone())
    }

    /// Whether a deferred capture reads the buffer now.
    pub fn busy(&self) -> bool {
        self.0.fences.load(Ordering::Acquire) != 0
    }

    /// Holds `job` (a host write's hash, holding a fence) until [`Captures::release`] or a
    /// wait at the fence starts it; a job parked before is started now.
    fn park(&self, job: HashJob) {
        let earlier = {
            let mut parked = crate::sync::lock(&self.0.parked);
            self.0.has_parked.store(true, Ordering::Release);
            parked.replace(job)
        };
        if let Some(earlier) = earlier {
            hash_now(earlier);
        }
    }

    /// Whether a host write's hash is parked, not started ([`Captures::park`]).
    #[cfg(test)]
    pub(crate) fn parked(&self) -> bool {
        self.0.has_parked.load(Ordering::Acquire)
    }

    /// Starts the parked hash, if any: a region that reads the buffer has run.
    #[inline]
    pub fn release(&self) {
        self.0.release();
    }

    /// Waits until no deferred capture reads the buffer (a parked hash started first).
    pub fn wait(&self) {
        if self.busy() {
            self.0.release();
            self.wait_slow();
        }
    }

    #[cold]
    fn wait_slow(&self) {
        let idle = || self.0.fences.load(Ordering::Acquire) == 0;
        // A capture takes the writer thread tens to hundreds of µs: spin briefly, then sleep.
        if crate::sync::spin_until(idle) {
            return;
        }
        while !idle() {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

/// Held by a deferred capture while it reads a buffer's bytes.
struct CaptureFence(Arc<CaptureState>);

impl Drop for CaptureFence {
    fn drop(&mut self) {
        self.0.fences.fetch_sub(1, Ordering::Release);
    }
}

/// Bytes of a host-mapped buffer that a deferred capture reads on another thread, with the
/// fence that keeps writers (and the buffer's release) waiting until it drops.
pub(crate) struct Captured {
    pointer: usize,
    len: usize,
    _fence: CaptureFence,
}

impl Captured {
    /// `bytes` of a buffer whose deferred captures are `captures`, fenced.
    ///
    /// # Safety
    /// - `bytes` lies in a buffer's host mapping that stays allocated while a fence of
    ///   `captures` lives (the buffer's release waits for them), and nothing writes those
    ///   bytes while one lives (`Region::run` and host write mappings wait for them).
    pub unsafe fn new(captures: &Captures, bytes: &[u8]) -> Self {
        Self {
            _fence: captures.fence(),
            pointer: bytes.as_ptr() as usize,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `new`'s obligations keep these bytes allocated and unwritten while the
        // fence lives.
        unsafe { std::slice::from_raw_parts(self.pointer as *const u8, self.len) }
    }
}

/// Most bytes of host writes copied aside ([`aside`]) and not yet stored by the trace
/// writer, for the process: past it a capture keeps its buffer fenced until stored, as
/// before, so a writer that falls behind holds the program back rather than taking memory
/// without bound.
const ASIDE_LIMIT_BYTES: usize = 128 << 20;

/// Bytes copied aside now ([`ASIDE_LIMIT_BYTES`]).
static ASIDE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// [`ASIDE_BYTES`] held by one copy until it drops.
struct AsideReservation(usize);

impl Drop for AsideReservation {
    fn drop(&mut self) {
        ASIDE_BYTES.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// A host write's bytes for the trace writer to store: `captured`'s bytes copied aside
/// ([`Output::Staged`]) and its fence dropped, so that the program may write the buffer again
/// at once, where [`ASIDE_LIMIT_BYTES`] allows (with the reservation); else `captured`
/// itself. Copying is the trace's work, on a hashing thread, and costs the program nothing it
/// measures: the buffer is fenced until the copy ends, about as long as the hash before it
/// took.
fn aside(captured: Captured) -> (Output, Option<AsideReservation>) {
    let len = captured.len;
    let reserved = ASIDE_BYTES
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held + len <= ASIDE_LIMIT_BYTES).then_some(held + len)
        })
        .is_ok();
    if !reserved {
        return (Output::Captured(captured), None);
    }
    let copy = captured.bytes().to_vec();
    drop(captured);
    (Output::Staged(copy), Some(AsideReservation(len)))
}

/// The bytes a deferred capture reads (an output digest, a host write's contents).
pub(crate) enum Output {
    /// In the buffer's host mapping, behind a capture fence.
    Captured(Captured),
    /// Its own copy: read back from GPU-local memory, or copied aside ([`aside`]).
    Staged(Vec<u8>),
}

impl Output {
    fn bytes(&self) -> &[u8] {
        match self {
            Output::Captured(captured) => captured.bytes(),
            Output::Staged(staged) => staged,
        }
    }
}

type HashJob = Box<dyn FnOnce() + Send>;

#[cfg(test)]
thread_local! {
    /// Whether [`hash_beside`] on this thread waits (up to 10 s) after its copy for a hashing
    /// thread to start the hash, so that a test's hash is never cancelled by timing.
    pub(crate) static BESIDE_WAITS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How long a hash taken beside this thread's copy ([`hash_beside`]) sleeps, once its
    /// writer has begun to wait for it, before it is done: a hashing thread preempted
    /// mid-hash, for a test of what its writer waited.
    pub(crate) static BESIDE_HASH_DELAY: std::cell::Cell<std::time::Duration> =
        const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

/// Copies `src` into `dst` (a buffer's host mapping, the same length) in pieces, while a
/// hashing thread takes the xxh3 of `dst` one piece behind, for a large host write: the hash
/// reads each piece while the copy has just brought it into the caches, instead of reading
/// the buffer again once an upload has read it ([`Captures::park`]), and contents the trace
/// holds already then take no capture fence at all ([`Hook::host_write`]'s `known`). The
/// hash is of `dst`, the bytes the buffer holds, not of `src`: a source another thread or
/// process changes meanwhile (shared memory) must not give the trace a blob named by other
/// bytes than its own. On the software device the traced image pipeline read a median 1.022
/// of untraced so, against 1.033 with the hash parked (a loaded 2-core VM), and 0.996-1.000
/// either way on an H100 host's 16 CPUs (BENCHMARKS.md, session 49).
/// Not for a write streamed past the caches into memory a GPU's copy engine reads
/// ([`crate::dma_memory`]): there the traced GPU pipeline read 1.33 of untraced against
/// 1.25-1.28 parked on that H100 host (most likely the program's frames were not in the
/// caches, and the hash read them from memory beside the copy the program waits for).
///
/// Returns `None`, having hashed nothing, when no hashing thread had started the hash by the
/// time the copy ended (all busy, or none): the write is then captured as before. Returns
/// only once no hashing thread reads `dst` any more. That wait, from the copy's end to the
/// hash's, is capture work inside the program's `write`: where it is long enough to matter it
/// is recorded on `hook` as a wait on the recorder ([`Hook::host_fence_waited`]), so that
/// `info` says it and `stats` and `diff` leave it out of the program's annotation ranges (a
/// hashing thread preempted on a loaded 2-CPU host held a 2.76 MB frame's write 1.7-4.4 ms,
/// and no verb said so: session 56's fresh user).
///
/// # Panics
/// When the lengths differ.
pub(crate) fn hash_beside(dst: &mut [u8], src: &[u8], hook: Option<&Hook<'_>>) -> Option<u64> {
    const QUEUED: u8 = 0;
    const STARTED: u8 = 1;
    const DONE: u8 = 2;
    const CANCELLED: u8 = 3;
    /// The copy's pieces: the hash trails the copy by at most one, so it reads what the copy
    /// has just written while it is still in the caches.
    const PIECE: usize = 64 << 10;
    struct Beside {
        state: std::sync::atomic::AtomicU8,
        /// Bytes of `dst` copied so far: written, and never written again while the hash
        /// may read them.
        copied: AtomicUsize,
        xxh3: std::sync::atomic::AtomicU64,
        /// Whether the writer has begun to wait for the hash ([`BESIDE_HASH_DELAY`]).
        #[cfg(test)]
        waiting: std::sync::atomic::AtomicBool,
    }
    /// `dst`, for the hashing thread: read only between `STARTED` and `DONE`, and only its
    /// bytes below `copied`.
    struct Bytes(*const u8, usize);
    // SAFETY: the bytes are only read, and `hash_beside` does not return (`finish`) while the
    // job may read them.
    unsafe impl Send for Bytes {}
    /// Waits for the hash or cancels it: `dst` outlives every read of it. A wait is recorded
    /// on `hook`.
    fn finish(beside: &Beside, hook: Option<&Hook<'_>>) -> Option<u64> {
        let state = &beside.state;
        if state
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return None;
        }
        let done = || state.load(Ordering::Acquire) == DONE;
        if !done() {
            let start_ns = hook.map(Hook::now_ns);
            #[cfg(test)]
            beside.waiting.store(true, Ordering::Release);
            if !crate::sync::spin_until(done) {
                while !done() {
                    std::thread::yield_now();
                }
            }
            if let (Some(hook), Some(start_ns)) = (hook, start_ns) {
                hook.host_fence_waited(start_ns);
            }
        }
        Some(beside.xxh3.load(Ordering::Acquire))
    }

    assert_eq!(dst.len(), src.len(), "hash_beside: lengths differ");
    let Some(threads) = hashing_threads() else {
        dst.copy_from_slice(src);
        return None;
    };
    let len = dst.len();
    let beside = Arc::new(Beside {
        state: std::sync::atomic::AtomicU8::new(QUEUED),
        copied: AtomicUsize::new(0),
        xxh3: std::sync::atomic::AtomicU64::new(0),
        #[cfg(test)]
        waiting: std::sync::atomic::AtomicBool::new(false),
    });
    // Every access to `dst` below goes through this pointer, so the hashing thread's reads and
    // this thread's writes are of disjoint bytes of one allocation.
    let base = dst.as_mut_ptr();
    let bytes = Bytes(base, len);
    let job_state = beside.clone();
    #[cfg(test)]
    let delay = BESIDE_HASH_DELAY.get();
    let job: HashJob = Box::new(move || {
        let bytes = bytes;
        let state = &job_state.state;
        if state
            .compare_exchange(QUEUED, STARTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return; // cancelled: the caller may have returned, `dst` may be gone
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut hashed = 0;
        while hashed < bytes.1 {
            let copied = || job_state.copied.load(Ordering::Acquire);
            if copied() == hashed && !crate::sync::spin_until(|| copied() > hashed) {
                while copied() == hashed {
                    std::thread::yield_now();
                }
            }
            let to = copied();
            // SAFETY: `STARTED` was set before the caller's `Join` looked, so it waits for
            // `DONE` before `dst` can go; the bytes below `copied` were written before it was
            // published (Release, read here with Acquire) and are not written again.
            let piece = unsafe { std::slice::from_raw_parts(bytes.0.add(hashed), to - hashed) };
            hasher.update(piece);
            hashed = to;
        }
        job_state.xxh3.store(hasher.digest(), Ordering::Release);
        // A slowed hash keeps its writer waiting `delay` from when it began to wait, whatever
        // the machine's load did to either thread before.
        #[cfg(test)]
        if !delay.is_zero() {
            while !job_state.waiting.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            std::thread::sleep(delay);
        }
        state.store(DONE, Ordering::Release);
    });
    if threads.send(job).is_err() {
        dst.copy_from_slice(src);
        return None;
    }
    // Nothing below panics before `finish`: the job never outlives `dst` unwaited.
    let mut at = 0;
    while at < len {
        let to = (at + PIECE).min(len);
        // SAFETY: `at..to` lies within both slices (the same length); `src` cannot overlap
        // `dst`, which is borrowed mutably; no thread reads `dst`'s bytes at or above `at`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(at), base.add(at), to - at) };
        beside.copied.store(to, Ordering::Release);
        at = to;
    }
    #[cfg(test)]
    if BESIDE_WAITS.get() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while beside.state.load(Ordering::Acquire) == QUEUED && std::time::Instant::now() < deadline
        {
            std::thread::yield_now();
        }
    }
    finish(&beside, hook)
}

/// The process's output-digest hashing threads (`hrx-trace-hash-N`, a quarter of the cores,
/// 1 to 4), started on first use; `None` if none could be started.
///
/// Why not the trace writer: on the H200 host the writer alone hashed a 1280x720 pipeline
/// frame's host write (2.7 MB) and two output digests (0.9 MB each) in about 0.7 ms of every
/// 0.78 ms frame, so digests queued behind host writes and the next writer of an output
/// buffer stalled at its capture fence (45-70 µs per frame, the traced pipeline 5% slower);
/// hashed here in parallel, a digest's fence drops as soon as its hash is taken. So a later
/// record about the same buffer from another thread (a host write, the buffer's release) may
/// precede its `OutputDigest` in the file; the schema lets records of different threads
/// interleave and names the digest's submission, buffer and range by id.
///
/// None in a child forked since they started (they are the parent's threads, not the
/// child's: a job sent to them never ran, and the capture fence it held kept the child's
/// next write to the buffer waiting for ever; a break-it pass): the writer's thread hashes
/// there, as where no hashing thread could start.
fn hashing_threads() -> Option<&'static crossbeam_channel::Sender<HashJob>> {
    static THREADS: OnceLock<(u64, Option<crossbeam_channel::Sender<HashJob>>)> = OnceLock::new();
    let (forks, threads) = THREADS.get_or_init(|| {
        let forks = crate::sync::watch_forks();
        let threads = {
            let (jobs, queue) = crossbeam_channel::unbounded::<HashJob>();
            let count = std::thread::available_parallelism()
                .map_or(1, |n| n.get() / 4)
                .clamp(1, 4);
            let started = (0..count)
                .filter(|i| {
                    let queue = queue.clone();
                    std::thread::Builder::new()
                        .name(format!("hrx-trace-hash-{i}"))
                        .spawn(move || run_hash_jobs(&queue))
                        .is_ok()
                })
                .count();
            (started > 0).then_some(jobs)
        };
        (forks, threads)
    });
    threads.as_ref().filter(|_| *forks == crate::sync::forks())
}

/// A hashing thread: like a runtime worker, it spins a while for the next job before it
/// blocks, so that a busy program hands it jobs without a syscall.
fn run_hash_jobs(queue: &crossbeam_channel::Receiver<HashJob>) {
    let _spinner = crate::sync::Spinner::new();
    loop {
        let next = std::cell::Cell::new(None);
        crate::sync::spin_until(|| match queue.try_recv() {
            Ok(job) => {
                next.set(Some(job));
                true
            }
            Err(_) => false,
        });
        let job = match next.into_inner() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::{BESIDE_WAITS, hash_beside, hash_now};
    use xxhash_rust::xxh3::xxh3_64;

    /// The hash taken beside a copy is the copied bytes' xxh3, and every byte is copied,
    /// whether the hash starts at once, late or never (cancelled).
    #[test]
    fn a_hash_beside_a_copy_is_the_bytes_xxh3() {
        // Not a whole number of the copy's 64 KiB pieces.
        let data: Vec<u8> = (0..(3u32 << 20) + 77)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let mut hashed = 0;
        for waits in [false, false, true] {
            let mut dst = vec![0u8; data.len()];
            BESIDE_WAITS.set(waits);
            let xxh3 = hash_beside(&mut dst, &data, None);
            BESIDE_WAITS.set(false);
            assert!(dst == data, "the copy");
            match xxh3 {
                Some(xxh3) => {
                    assert_eq!(xxh3, xxh3_64(&data));
                    hashed += 1;
                }
                // A hashing thread that had not started by the copy's end is not waited for.
                None => assert!(!waits, "waited for the hash to start, and it did not"),
            }
        }
        assert!(hashed > 0);
    }

    /// A hash no hashing thread started by the copy's end is cancelled: `hash_beside`
    /// answers `None` at once, and the job, run later, does not read the (then freed) bytes.
    #[test]
    fn a_hash_not_started_by_the_copys_end_is_cancelled() {
        // Every hashing thread (at most 4) busy until the copy has ended.
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        let (ran, runs) = crossbeam_channel::unbounded::<()>();
        for _ in 0..4 {
            let (released, ran) = (released.clone(), ran.clone());
            hash_now(Box::new(move || {
                let _ = released.recv();
                let _ = ran.send(());
            }));
        }
        let data = vec![5u8; 1 << 20];
        let mut dst = vec![0u8; 1 << 20];
        let xxh3 = hash_beside(&mut dst, &data, None);
        assert!(dst == data, "the copy");
        drop((data, dst));
        drop(release);
        assert_eq!(
            xxh3, None,
            "the hash started while every hashing thread was busy"
        );
        for _ in 0..4 {
            runs.recv().unwrap();
        }
    }
}
