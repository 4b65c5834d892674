//! Trace schema, writer and reader for the hrx runtime (DESIGN.md section 4).
//!
//! - [`schema`]: the [`Record`] enum, every event the runtime records.
//! - [`clock`]: the host clock sessions read (the TSC where invariant, calibrated against
//!   `CLOCK_MONOTONIC`).
//! - [`format`](mod@format): the file layout and the postcard/zstd codec (the only module that knows
//!   bytes).
//! - [`Recorder`] (module `writer`): records from any thread into per-thread rings that a
//!   background thread writes out at least every 100 ms.
//! - The process-wide gate ([`enabled`], [`record`], [`install_or_current`], ...): one
//!   relaxed atomic load when tracing is off.
//! - [`TraceWriter`]: writes records that already exist into a new trace (`trim`).
//! - [`reader`]: streaming and memory-mapped readers that treat the file as untrusted and
//!   recover every complete block of a crashed recording.
//!
//! ```
//! use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace, schema::*};
//!
//! let sink = MemorySink::new();
//! let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default())?;
//! let runtime = recorder.next_runtime_id();
//! let start_ns = recorder.now_ns();
//! recorder.record(&Record::RegionTiming(RegionTiming {
//!     runtime,
//!     submission: SubmissionIndex(0),
//!     region: RegionIndex(0),
//!     start_ns,
//!     end_ns: recorder.now_ns(),
//!     device: None,
//! }));
//! recorder.close()?;
//!
//! let trace = Trace::from_bytes(&sink.contents())?;
//! assert!(trace.recovery.is_complete());
//! // Session start, the clock's calibrations (at start, every flush, close), the timing,
//! // session end.
//! let timings = trace.records.iter().filter(|r| matches!(r, Record::RegionTiming(_)));
//! assert_eq!(timings.count(), 1);
//! assert!(matches!(trace.records[1], Record::HostClock(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod activation;
pub mod clock;
pub mod fork;
pub mod format;
mod note;
pub mod range;
pub mod reader;
#[cfg(unix)]
pub mod replace;
mod rewrite;
mod ring;
pub mod schema;
mod shown;
mod staging;
pub mod summary;
pub mod switch;
mod watch;
mod writer;

pub use activation::{
    TRACE_ENV, TRACE_PATHS_ENV, TRACE_SESSION_ENV, annotation_name, close_range, current, deleted,
    enabled, expand_path, file_identity, has_sequence, install, install_from_env,
    install_or_current, installed_path, moved_to, now_ns, open_range, own_path, record,
    record_on_thread, reports_by_pid, shutdown, uninstall,
};
pub use note::append_to_unclosed;
pub use range::{CaptureRange, TRACE_RANGE_ENV};
pub use reader::{
    HostClocks, Lost, MappedTrace, ReadError, RecorderWaits, Recovery, TRIMMED_FROM_INCOMPLETE,
    Trace, TraceReader, WaitError, Warning, open_file, read_all, special_file, wait_for_trace,
};
pub use rewrite::TraceWriter;
pub use schema::Record;
pub use shown::{ForShell, ShowPath, Shown, needs_escape};
pub use staging::{DeferredKind, RawRecord};
pub use watch::{BEING_RECORDED, UNCLOSED_ENDING, WriterWatch};
pub use writer::{
    COMPRESSION_THREADS_ENV, CloseSummary, Deferred, FLUSH_REPORT_ENV, FileSink, HOLD_LIMIT,
    MAX_COMPRESSION_THREADS, MemorySink, OpenRange, RawBatch, Recorder, RecorderOptions, Sink,
    TRACE_MODE_ENV, TraceMode, WriteError, automatic_compression_threads, being_recorded,
    compression_threads_from_env, recorder_holds, recorder_holds_file,
};

/// Writes one line on standard error; one that cannot be written (closed, a full disk) is
/// lost rather than panicking inside the program that records.
pub(crate) fn to_stderr(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    // Formatted first and written in one `write`: `writeln!` on unbuffered standard error
    // writes each piece apart, and another line (a signal handler's, `hrx-trace`'s
    // interruption) could land between them, on the same line.
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
