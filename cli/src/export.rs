//! `hrx-trace export FILE... [--format chrome|perfetto|parquet] -o OUT`: traces as Chrome
//! trace-event JSON or a Perfetto protobuf (one timeline of every trace, on the real clock),
//! both of which Perfetto's UI opens, or as Parquet tables. What is exported and how it
//! streams in bounded memory: `hrx_analysis::export`. This verb picks the format (from
//! `--format` or OUT's extension, [`infer_format`]), picks the clock that lines several
//! traces up, adds the progress bar, refuses outputs that are not earlier exports, and
//! removes a half-written output: on a write error, and when interrupted by SIGINT, SIGTERM
//! or SIGHUP (exit 128+N, [`crate::partial`]).

use crate::args::ExportArgs;
use crate::failure::{Failure, TraceError};
use crate::partial::Interruptible;
use hrx_analysis::export::{self, ClockDomain, ExportClock, ExportError, Format, TraceSession};
use hrx_analysis::units::plural;
use hrx_capture::ShowPath;
use hrx_capture::TraceReader;
use hrx_capture::schema::SessionStart;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Chrome trace-event JSON.
    Chrome,
    /// A Perfetto protobuf trace.
    Perfetto,
    /// A directory of Parquet tables.
    Parquet,
}

impl OutputFormat {
    fn name(self) -> &'static str {
        match self {
            OutputFormat::Chrome => "chrome",
            OutputFormat::Perfetto => "perfetto",
            OutputFormat::Parquet => "parquet",
        }
    }
}

/// The format `--format` names, or else the one `output`'s name implies: `.json` Chrome;
/// `.pftrace`, `.perfetto-trace`, `.perfetto`, `.pb` Perfetto; an existing directory, a
/// path ending in `/`, or `.parquet` Parquet (case-insensitive).
///
/// # Errors
///
/// A [`Failure`] (one line and a hint) for `-` or a name whose extension names no format,
/// without `--format`.
pub fn infer_format(format: Option<&str>, output: &Path) -> Result<OutputFormat, Failure> {
    match format {
        Some("chrome") => return Ok(OutputFormat::Chrome),
        Some("perfetto") => return Ok(OutputFormat::Perfetto),
        Some("parquet") => return Ok(OutputFormat::Parquet),
        _ => {}
    }
    let hint = "give --format chrome, perfetto or parquet";
    if crate::output::is_standard_output(output) {
        return Err(Failure::new(
            "export to standard output (-o -) needs --format chrome or perfetto",
        )
        .hint("give --format chrome or perfetto (Parquet tables are a directory)"));
    }
    let text = output.to_string_lossy();
    if text.ends_with('/') || output.is_dir() {
        return Ok(OutputFormat::Parquet);
    }
    let extension = output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("json") => Ok(OutputFormat::Chrome),
        Some("pftrace" | "perfetto-trace" | "perfetto" | "pb") => Ok(OutputFormat::Perfetto),
        Some("parquet") => Ok(OutputFormat::Parquet),
        Some(other) => Err(Failure::new(format!(
            "cannot tell the export format from {}: .{other} is none of .json (chrome), .pftrace, .perfetto-trace, .perfetto or .pb (perfetto), .parquet or a directory (parquet)",
            output.shown()
        ))
        .hint(hint)),
        None => Err(Failure::new(format!(
            "cannot tell the export format from {}: it has no extension",
            output.shown()
        ))
        .hint(hint)),
    }
}

/// Runs `export`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]), an output that cannot be created ([`Failure`]), a
/// format that cannot be inferred, or a write error.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let format = infer_format(args.format.as_deref(), &args.output)?;
    for file in &args.files {
        crate::failure::require_rereadable(file, "export")?;
    }
    // Every trace's session read once, first: one that cannot be read leaves no output.
    let sessions = args
        .files
        .iter()
        .map(|file| session(file))
        .collect::<anyhow::Result<Vec<_>>>()?;
    refuse_lost_session(&args.files, &sessions)?;
    refuse_same_session(&args.files, &sessions)?;
    if format == OutputFormat::Parquet {
        return parquet(&args, sessions);
    }
    let file_len = args
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let progress = crate::output::progress(file_len).with_style(
        ProgressStyle::with_template("{spinner} export {msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    // `-`, or standard output's own file (`/dev/stdout`): written through it, the summary
    // on standard error (opened again, the file would be written over by the summary).
    let to_stdout = crate::output::is_standard_output(&args.output);
    if crate::output::standard_stream(&args.output) == Some(crate::output::StandardStream::Error) {
        return Err(Failure::new(format!(
            "cannot write the export to {}: it is standard error, where hrx-trace writes its warnings",
            args.output.shown()
        ))
        .hint("give -o a file name, or - for standard output")
        .into());
    }
    if !to_stdout {
        check_output(&args.output, format)?;
    }
    let timeline = if format == OutputFormat::Perfetto {
        Format::Perfetto
    } else {
        Format::Chrome
    };
    // Every trace opened first: one that cannot be read must not leave an empty output.
    let read = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for file in &args.files {
        readers.push(open(file, &read, &progress)?);
    }
    let clock = ExportClock::for_sessions(&sessions);
    let domain = clock.domain;
    let interruptible = (!to_stdout).then(Interruptible::install);
    // Written as OUT.PID.partial beside OUT (through a symlink, beside its target) and
    // renamed onto it once complete: an export that fails leaves an earlier one whole, and
    // two into one OUT each write their own file (one wrote into the other's, both exiting
    // 0 over JSON that did not parse: a break-it pass).
    let output = hrx_capture::replace::written_through(&args.output).map_err(|e| {
        Failure::new(format!(
            "cannot write the export to {}: {e}",
            args.output.shown()
        ))
    })?;
    // Encoded in batches on worker threads and written on a thread of its own (no buffer
    // needed).
    let (out, partial): (Box<dyn Write + Send>, _) = match &interruptible {
        None => (
            Box::new(crate::output::stdout_unlocked()),
            std::path::PathBuf::new(),
        ),
        Some(interruptible) => {
            let (partial, file) = interruptible
                .create_beside(&output, "the incomplete export meant for", &args.output)
                .map_err(|e| {
                    Failure::new(format!(
                        "cannot write the export to {}: {e}",
                        args.output.shown()
                    ))
                })?;
            (Box::new(file), partial)
        }
    };
    // Its size, for the warning on JSON too large to open.
    let written_bytes = Arc::new(AtomicU64::new(0));
    let out = Written {
        inner: out,
        bytes: Arc::clone(&written_bytes),
    };
    progress.set_message("writing");
    let traces = readers.into_iter().zip(sessions.iter().cloned()).collect();
    let written = export::write_merged(traces, timeline, clock, out).map_err(|error| match error {
        ExportError::Read(error) => {
            // The trace that failed: the first one not yet read through.
            let at = read.load(Ordering::Relaxed);
            anyhow::Error::from(TraceError {
                path: failed_file(&args.files, at),
                error,
            })
        }
        other => anyhow::Error::from(other),
    });
    let exported = match written {
        Ok(exported) => exported,
        Err(error) if !to_stdout => {
            progress.finish_and_clear();
            return Err(remove_incomplete(&partial, &args.output, error));
        }
        Err(error) => return Err(error),
    };
    let renamed = match &interruptible {
        Some(interruptible) => {
            interruptible.rename_into_place(&partial, &output, "the export", &args.output)
        }
        None => Ok(()),
    };
    if let Err(error) = renamed {
        progress.finish_and_clear();
        return Err(remove_incomplete(&partial, &args.output, error.into()));
    }
    if let Some(interruptible) = interruptible {
        interruptible.finished();
    }
    progress.finish_and_clear();
    let mut total = export::ExportCounts::default();
    for ((file, exported), session) in args.files.iter().zip(&exported).zip(&sessions) {
        warn(file, exported, session);
        let c = &exported.counts;
        total.tracks += c.tracks;
        total.slices += c.slices;
        total.operation_slices += c.operation_slices;
        total.native_graph_slices += c.native_graph_slices;
        total.flows += c.flows;
        total.instants += c.instants;
        total.recorder_instants += c.recorder_instants;
        total.thread_slices += c.thread_slices;
        total.markers += c.markers;
        total.counter_samples += c.counter_samples;
    }
    if args.files.len() > 1 {
        let hosts: std::collections::BTreeSet<&str> = sessions
            .iter()
            .filter_map(|s| s.start())
            .map(|s| s.host.as_str())
            .collect();
        let how = match domain {
            ClockDomain::Monotonic => "lined up by CLOCK_MONOTONIC",
            ClockDomain::Realtime => {
                "lined up by the wall clock (CLOCK_REALTIME): hosts share no monotonic clock, so they align as well as their clocks agree"
            }
        };
        crate::output::note(format_args!(
            "{} from {} {how}",
            plural(args.files.len() as u64, "trace"),
            plural(hosts.len() as u64, "host"),
        ));
    }
    no_operation_times(&total);
    if format == OutputFormat::Chrome
        && let Some(warning) = large_json(&args.output, written_bytes.load(Ordering::Relaxed))
    {
        crate::output::warn(warning);
    }
    // `-q`: the summary is not a result (the file is), as `record`'s and `trim`'s are not;
    // what the trace lacks was warned of above.
    if !to_stdout && !crate::output::quiet() {
        // Written, not printed: a closed standard output is an error `main` treats as
        // success, where `println!` would panic.
        // The host threads' part (format 1.14), where the trace has any.
        let host = if total.thread_slices + total.markers + total.counter_samples > 0 {
            format!(
                ", {}, {}, {}",
                plural(total.thread_slices, "host thread slice"),
                plural(total.markers, "marker"),
                plural(total.counter_samples, "counter sample")
            )
        } else {
            String::new()
        };
        let operations = match total.operation_slices {
            0 => String::new(),
            n => format!(" ({n} of them operations)"),
        };
        let ends = marks(&exported);
        let mut out = crate::output::stdout();
        writeln!(
            out,
            "{}: {}, {}{operations}, {}, {} (as view lists them), {}{ends}{host} ({})",
            args.output.shown(),
            plural(total.tracks as u64, "track"),
            plural(total.slices, "slice"),
            plural(total.flows, "flow"),
            plural(total.instants, "event"),
            plural(total.recorder_instants, "recorder mark"),
            format.name()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// JSON a viewer may not open: chrome://tracing stops at about 256 MiB (catapult's
/// trace-viewer issue 627) and Perfetto's UI, which reads JSON in the browser, ran out of
/// memory on 900 MB (perfetto issue 99), where it streams a protobuf trace of many GB.
const LARGE_JSON_BYTES: u64 = 256 << 20;

/// The warning for a Chrome JSON export of `bytes` written to `output`, when it is large
/// enough that viewers may not open it.
fn large_json(output: &Path, bytes: u64) -> Option<String> {
    (bytes > LARGE_JSON_BYTES).then(|| {
        format!(
            "{}: {} of Chrome JSON: chrome://tracing opens at most about 256 MiB and Perfetto's \
             UI may run out of memory on JSON this large; export to .pftrace (Perfetto's \
             protobuf, streamed by its UI and trace processor) or `hrx-trace trim` a range first",
            output.shown(),
            hrx_analysis::units::bytes(bytes)
        )
    })
}

/// Says, where native graphs ran and no operation was timed, that their slices are not
/// divided by operation: the trace lacks the times, the export did not drop them.
fn no_operation_times(total: &export::ExportCounts) {
    if total.operation_slices == 0 && total.native_graph_slices > 0 {
        crate::output::note(format_args!(
            "per-operation times: none recorded; each of the {} is one slice, not divided by \
             operation",
            plural(total.native_graph_slices, "native-graph region"),
        ));
    }
}

/// The file a read error at `at` bytes read in all belongs to (the traces are read one after
/// the other).
fn failed_file(files: &[PathBuf], at: u64) -> PathBuf {
    let mut end = 0;
    for file in files {
        end += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        if at < end {
            return file.clone();
        }
    }
    files.last().cloned().unwrap_or_default()
}

/// The summary's words for the marks of the `exported` traces not read whole (trace
/// incomplete, or being recorded) and of records lost (or a lossy mode), after the count of
/// the events that hold them, as " (1 of them trace incomplete, 1 records lost)"; empty where
/// there are none. Named: the file holds the mark, and "0 events" alone read as if it lacked
/// it.
fn marks(exported: &[export::Exported]) -> String {
    let count = |live: bool| -> u64 {
        (exported.iter())
            .filter(|e| e.being_recorded == live)
            .map(|e| e.counts.incomplete_marks)
            .sum()
    };
    let (incomplete, live) = (count(false), count(true));
    let lost: u64 = exported.iter().map(|e| e.counts.lost_marks).sum();
    let lossy: u64 = exported.iter().map(|e| e.counts.lossy_marks).sum();
    let mut ends = String::new();
    for (n, name) in [
        (incomplete, "trace incomplete"),
        (live, "trace being recorded"),
        (lost, export::LOST_MARK),
        (lossy, export::LOSSY_MARK),
    ] {
        match (n, ends.is_empty()) {
            (0, _) => {}
            (n, true) => ends = format!(" ({n} of them {name}"),
            (n, false) => ends += &format!(", {n} {name}"),
        }
    }
    if !ends.is_empty() {
        ends.push(')');
    }
    ends
}

/// Removes a half-written export `partial` of `output` (a half-written export is not an
/// export: leave nothing rather than a file that does not parse; an earlier export at
/// `output` stays) and says so in the error.
fn remove_incomplete(partial: &Path, output: &Path, error: anyhow::Error) -> anyhow::Error {
    let removed = std::fs::metadata(partial).is_ok_and(|m| m.is_file())
        && std::fs::remove_file(partial).is_ok();
    error.context(format!(
        "cannot write {}{}",
        output.shown(),
        if removed {
            " (removed the incomplete file)"
        } else {
            ""
        }
    ))
}

/// The warnings of one trace's export.
fn warn(file: &Path, exported: &export::Exported, session: &TraceSession) {
    // Its times were moved (or left relative) and its process is of unknown identity: said
    // here as in the output (the damaged block's warning alone did not say it).
    if let Some(note) = session.lost_note() {
        crate::output::warn(format_args!("{}: {note}", file.shown()));
    }
    // As the file's mark says: whether a recorder held the trace when it was opened (one
    // that closed during a long export read "not closed cleanly" here, "being recorded" in
    // the file: a break-it pass).
    crate::failure::warn_partial_as(
        file,
        &exported.warnings,
        exported.recovery.as_ref(),
        "the export covers only what was recovered",
        || exported.being_recorded,
    );
    // Region and operation timings counted apart, the region timings as `info` and `stats`
    // count them (one sum read 2 where they read 1: a fresh user's pass).
    let parts: Vec<String> = [
        (exported.unplaced_timings, "region timing"),
        (exported.unplaced_op_timings, "operation timing"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, what)| plural(n, what))
    .collect();
    if !parts.is_empty() {
        let one = exported.unplaced_timings + exported.unplaced_op_timings == 1;
        crate::output::warn(format_args!(
            "{}: {} {} a submission or region the trace does not record; {} not exported",
            file.shown(),
            parts.join(" and "),
            if one { "names" } else { "name" },
            if one { "it is" } else { "they are" }
        ));
    }
    crate::output::warn_ends_before_start(file, exported.ends_before_start, "exported");
    // A loaded host, in `info`'s words, as every verb says it (the export printed nothing of
    // it on screen, its file holding the marks: a fresh user's pass); under `-q` a warning,
    // as `record -q` says it (a note was silenced: another pass).
    if let Some(h) = exported.host_load.filter(|h| h.loaded()) {
        crate::output::lacks(format_args!(
            "{}: host load {}",
            file.shown(),
            crate::info::host_load_line(h)
        ));
    }
    // A lossy recording that lost nothing (one that lost records is warned of above), as
    // `info`'s `lost` line says it; its file holds the `lossy mode (none lost yet)` mark.
    if let Some(mode) = (exported.recovery.as_ref()).and_then(|r| r.lost.lossy_without_loss()) {
        crate::output::lacks(format_args!("{}: lost {mode}", file.shown()));
    }
    if exported.counts.flows_not_drawn > 0 {
        crate::output::warn(format_args!(
            "{}: {} cross-submission waits or timings were read more than {} submissions away from their submission; they are exported without their flow arrows",
            file.shown(),
            exported.counts.flows_not_drawn,
            2 * export::WINDOW
        ));
    }
    let crossing = match exported.counts.crossing_slices {
        0 => None,
        1 => Some("1 annotation range or host span crosses".to_owned()),
        n => Some(format!("{n} annotation ranges or host spans cross")),
    };
    if let Some(crossing) = crossing {
        crate::output::warn(format_args!(
            "{}: {crossing} an earlier one of its thread (closed out of order: neither inside it nor after it); a viewer would draw them wrongly, so they are on the thread's \"(crossing ranges)\" track",
            file.shown(),
        ));
    }
    if exported.counts.timing_lost > 0 {
        crate::output::warn(format_args!(
            "{}: {} timing lost (records dropped): started, then their timing or completion was dropped by the lossy recording; marked on the Recorder track, not drawn running",
            file.shown(),
            plural(exported.counts.timing_lost, "region"),
        ));
    }
}

/// The trace's `SessionStart` (its first record), or where its first records hold none (a
/// damaged start), its first clock calibration ([`export::read_session`]).
fn session(path: &Path) -> anyhow::Result<TraceSession> {
    let fail = |error| TraceError {
        path: path.to_owned(),
        error,
    };
    let file = hrx_capture::open_file(path).map_err(fail)?;
    let reader = TraceReader::new(file).map_err(fail)?;
    Ok(export::read_session(reader))
}

/// Opens the trace with a reader that advances `progress` by the bytes it reads.
fn open(
    path: &Path,
    read: &Arc<AtomicU64>,
    progress: &ProgressBar,
) -> anyhow::Result<TraceReader<Counting>> {
    let fail = |error| TraceError {
        path: path.to_owned(),
        error,
    };
    let file = hrx_capture::open_file(path).map_err(fail)?;
    // Read as long as the trace is now, as `TraceReader::open` reads it: a trace being
    // recorded faster than it is exported would otherwise never end.
    let left = file
        .metadata()
        .map_err(|e| Failure::new(format!("{}: {e}", path.shown())))?
        .len();
    let reader = TraceReader::new(Counting {
        inner: file.take(left),
        read: read.clone(),
        progress: progress.clone(),
    })
    .map_err(fail)?
    // Submission numbers and the session end's count checked, as `info` reads it: the
    // records a damaged block took are counted alike (the mark said 0 skipped of 100).
    .check_submission_numbers()
    // A trace being recorded is marked so in the export, not as cut short.
    .being_recorded(crate::record::being_recorded(path));
    Ok(reader)
}

/// A file that reports the bytes read to a progress bar.
struct Counting {
    /// The file as long as it was when opened.
    inner: io::Take<File>,
    read: Arc<AtomicU64>,
    progress: ProgressBar,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        self.progress.set_position(total);
        Ok(n)
    }
}

/// The export's output, counting the bytes written.
struct Written<W> {
    inner: W,
    bytes: Arc<AtomicU64>,
}

impl<W: Write> Write for Written<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Refuses an output that is a directory, or an existing non-empty file that is not an
/// earlier export in `format` ([`begins_as_export`]): `-o` naming a trace, a photograph or a
/// README by mistake must not destroy it.
fn check_output(path: &std::path::Path, format: OutputFormat) -> Result<(), Failure> {
    crate::record::refuse_special(path, "export")?;
    if path.is_dir() {
        return Err(Failure::new(format!(
            "cannot write the export to {}: it is a directory",
            path.shown()
        ))
        .hint("give -o a file name, e.g. -o trace.json"));
    }
    crate::record::require_directory(path, "the export")?;
    let what = format!("a {} export", format.name());
    crate::record::refuse_overwrite(path, &what, |head| begins_as_export(head, format))?;
    crate::record::refuse_unwritable(path, "the export")
}

/// Whether a file beginning with `head` (its first bytes, up to 32) begins as this exporter
/// writes `format`: Chrome JSON with `{"traceEvents":[` and a newline; Perfetto with a
/// `TracePacket` (field 1, tag 0x0a) whose first field is its timestamp (8, tag 0x40) or its
/// trusted sequence id (10, tag 0x50). Looser tests overwrote files of other programs: any
/// file whose first byte is a newline (0x0a) as a Perfetto export (a notes file, a
/// TensorFlow `model.pb`, whose first message starts 0x0a too), and any Chrome trace of
/// another profiler, or a file holding `{`, as a Chrome one (a break-it pass, session 58).
fn begins_as_export(head: &[u8], format: OutputFormat) -> bool {
    match format {
        OutputFormat::Perfetto => {
            let Some(rest) = head.strip_prefix(&[0x0a]) else {
                return false;
            };
            // The packet's length, a varint of up to five bytes, then its first field's tag.
            let length = rest.iter().take(5).take_while(|&&b| b & 0x80 != 0).count() + 1;
            matches!(rest.get(length), Some(0x40 | 0x50)) && length <= 5
        }
        _ => head.starts_with(b"{\"traceEvents\":[\n"),
    }
}

/// `export --format parquet -o DIR`: the tables of every trace into `DIR` (created when
/// missing; an existing one must hold nothing but earlier tables, which are replaced).
///
/// The tables are written into a staging directory inside `DIR`
/// ([`staging_directory`]) and renamed into place only once every one is complete, so that
/// an export that fails or is interrupted leaves an earlier export's tables as they were (it
/// removed them: `export a.hrxt -o t/` then an interrupted `export b.hrxt -o t/` left no
/// table) and never mixes two exports' tables. Inside `DIR`, not beside it, so that the
/// renames stay on one file system (a `DIR` that is a mount point) and a folder beside it
/// need not be writable. On a failure the staging directory is removed, and `DIR` too when
/// this export created it.
///
/// The export holds `DIR`'s `flock` ([`hrx_capture::replace::lock`]) while it makes its staging directory and
/// while it moves its tables in, so that two exports' moves never interleave, and holds its
/// staging directory's while it lives, so that one a killed export left (no handler runs on
/// SIGKILL) is told from one being written, and removed.
#[cfg(feature = "parquet")]
fn parquet(args: &ExportArgs, sessions: Vec<TraceSession>) -> anyhow::Result<ExitCode> {
    let dir = &args.output;
    if crate::output::is_standard_output(dir) {
        return Err(Failure::new(
            "Parquet tables are a directory: they cannot go to standard output (-o -)",
        )
        .hint("give -o a directory (created if missing), e.g. -o tables/")
        .into());
    }
    crate::record::refuse_special(dir, "export")?;
    // The marker first: moved in first, any table in `DIR` has it beside it (an export that
    // fails or is killed while moving its tables in leaves tables the next one replaces).
    let ours: Vec<String> = std::iter::once(PARQUET_MARKER.to_owned())
        .chain(export::table_files())
        .collect();
    // A symbolic link to nothing: `create_dir_all` would answer "File exists".
    if !dir.exists()
        && let Ok(target) = std::fs::read_link(dir.components().collect::<PathBuf>())
    {
        return Err(Failure::new(format!(
            "cannot write Parquet tables to {}: it is a symbolic link to {}, which does not exist",
            dir.shown(),
            target.shown()
        ))
        .hint("create the directory it points to, or give -o another directory")
        .into());
    }
    let created = !dir.exists();
    // An earlier export's tables, replaced below (said, as `record` and `trim` say theirs).
    let mut earlier_tables = 0;
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Failure::new(format!(
                "cannot write Parquet tables to {}: it is a file, not a directory",
                dir.shown()
            ))
            .hint("give -o a directory (created if missing), e.g. -o tables/")
            .into());
        }
        // A staging directory another export left (killed) or is writing is no reason to
        // refuse: it is not among the tables a query over `DIR/*.parquet` reads.
        let other = std::fs::read_dir(dir)
            .map_err(|e| Failure::new(format!("{}: {e}", dir.shown())))?
            .filter_map(Result::ok)
            .find(|e| {
                // A directory of a table's name is no table: the rename onto it would fail
                // halfway through moving the tables in.
                let table = ours.iter().any(|o| e.file_name() == o.as_str())
                    && !e.file_type().is_ok_and(|t| t.is_dir());
                !table && !is_staging_directory(&e.file_name())
            });
        if let Some(other) = other {
            return Err(Failure::new(format!(
                "refusing to write Parquet tables into {}: it holds {}, which is no earlier table",
                dir.shown(),
                Path::new(&other.file_name()).shown()
            ))
            .hint("give -o an empty or new directory")
            .into());
        }
        // Tables of those names are replaced only when an earlier export wrote them (its
        // marker is there): another program's `regions.parquet` is not ours to destroy.
        let tables = export::table_paths(dir)
            .iter()
            .filter(|p| p.exists())
            .count();
        earlier_tables = tables;
        if tables > 0 && !dir.join(PARQUET_MARKER).is_file() {
            return Err(Failure::new(format!(
                "refusing to write Parquet tables into {}: its tables were not written by hrx-trace export (no {PARQUET_MARKER})",
                dir.shown()
            ))
            .hint("give -o an empty or new directory")
            .into());
        }
        // A table the user may not write is not replaced, as no other output is: the rename
        // that replaces it asks only the directory's permission. Tables named before the
        // marker, which is hidden.
        for name in ours.iter().skip(1).chain(&ours[..1]) {
            crate::record::refuse_unwritable(&dir.join(name), "the Parquet tables")?;
        }
    }
    let mut readers = Vec::new();
    let read = Arc::new(AtomicU64::new(0));
    let progress = ProgressBar::hidden();
    for file in &args.files {
        readers.push(open(file, &read, &progress)?);
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.shown())))?;
    let staging = staging_directory(dir);
    // Interrupted (SIGINT, SIGTERM, SIGHUP), the staging directory's tables are removed as
    // any export is, then it, then the directory when this export created it: no table
    // without its footer is left for a query over `exports/*/` to stumble on, and an earlier
    // export's tables stay.
    let interruptible = Interruptible::install();
    let paths: Vec<PathBuf> = ours.iter().map(|name| staging.join(name)).collect();
    let mut dirs = vec![staging.as_path()];
    if created {
        dirs.push(dir.as_path());
    }
    interruptible.name_all(
        &paths,
        &dirs,
        "the incomplete Parquet tables meant for",
        dir,
    );
    let remove_staging = || {
        remove_tables(&staging, &ours);
        if created {
            let _ = std::fs::remove_dir(dir);
        }
    };
    let locked = crate::partial::lock_folder(dir);
    if locked.is_some() {
        remove_abandoned(dir, &ours);
    } else {
        // No locks here: only one of this process id (killed) is known to be abandoned.
        remove_tables(&staging, &ours);
    }
    // Locked before `DIR` is unlocked, so that no other export takes it for a killed one's;
    // held until the export ends.
    let written = std::fs::create_dir(&staging).and_then(|()| {
        let held = hrx_capture::replace::lock(&staging);
        std::fs::write(
            staging.join(PARQUET_MARKER),
            b"hrx-trace export --format parquet\n",
        )?;
        Ok(held)
    });
    drop(locked);
    let _held = match written {
        Ok(held) => held,
        Err(e) => {
            remove_staging();
            return Err(Failure::new(format!(
                "cannot write Parquet tables to {}: {e}",
                dir.shown()
            ))
            .hint("choose a writable -o directory")
            .into());
        }
    };
    let traces = readers.into_iter().zip(sessions.iter().cloned()).collect();
    let written = export::write_parquet(traces, &staging);
    let exported = match written {
        Ok(exported) => exported,
        Err(error) => {
            remove_staging();
            let error = match error {
                ExportError::Read(error) => anyhow::Error::from(TraceError {
                    path: failed_file(&args.files, read.load(Ordering::Relaxed)),
                    error,
                }),
                other => anyhow::Error::from(other),
            };
            let kept = if created {
                "removed the tables written"
            } else {
                "removed the tables written; its earlier tables are as they were"
            };
            return Err(error.context(format!(
                "cannot write Parquet tables to {} ({kept})",
                dir.shown()
            )));
        }
    };
    let locked = crate::partial::lock_folder_waiting(dir, dir);
    let mut moved = 0;
    let committed = interruptible.commit_saying(
        || {
            for name in &ours {
                std::fs::rename(staging.join(name), dir.join(name))?;
                moved += 1;
            }
            std::fs::remove_dir(&staging)
        },
        |committed| {
            committed.is_ok().then(|| {
                format!(
                    "the Parquet tables were complete: they are in {}",
                    dir.shown()
                )
            })
        },
    );
    drop(locked);
    if let Err(e) = committed {
        remove_staging();
        let kept = match moved {
            0 if created => "removed the tables written".to_owned(),
            0 => "removed the tables written; its earlier tables are as they were".to_owned(),
            // The marker is no table.
            moved => format!(
                "moved {} of {} tables in, removed the rest",
                moved - 1,
                ours.len() - 1
            ),
        };
        return Err(Failure::new(format!(
            "cannot move the Parquet tables into {} ({kept}): {e}",
            dir.shown()
        ))
        .into());
    }
    if earlier_tables > 0 {
        crate::output::note(format_args!(
            "{} held an earlier export's tables: they are replaced",
            dir.shown()
        ));
    }
    let mut total = export::ExportCounts::default();
    for ((file, exported), session) in args.files.iter().zip(&exported).zip(&sessions) {
        warn(file, exported, session);
        total.slices += exported.counts.slices;
        total.operation_slices += exported.counts.operation_slices;
        total.native_graph_slices += exported.counts.native_graph_slices;
        total.instants += exported.counts.instants;
        total.recorder_instants += exported.counts.recorder_instants;
        total.running_rows += exported.counts.running_rows;
    }
    no_operation_times(&total);
    // `-q`: as the other formats (it printed the summary all the same: a break-it pass).
    if !crate::output::quiet() {
        let mut out = crate::output::stdout();
        // The `events` table's rows in the words of the other formats' summaries: what
        // `view` lists as events and the recorder's marks (it said "27 event rows" where
        // Perfetto's said "0 events (as view lists them), 27 recorder marks": a fresh user's
        // pass).
        // A region still running at the end is a slice there, an `events` row here.
        let running = match total.running_rows {
            0 => String::new(),
            1 => "1 region running at end, ".to_owned(),
            n => format!("{n} regions running at end, "),
        };
        writeln!(
            out,
            "{}: {} tables, {}, {} of {}, {}: {} (as view lists them), {running}{}{} (parquet)",
            dir.shown(),
            ours.len() - 1, // the marker is no table
            plural(total.slices, "region row"),
            plural(total.operation_slices, "operation timing row"),
            plural(args.files.len() as u64, "trace"),
            plural(
                total.instants + total.recorder_instants + total.running_rows,
                "event row"
            ),
            plural(total.instants, "event"),
            plural(total.recorder_instants, "recorder mark"),
            marks(&exported),
        )?;
    }
    interruptible.finished();
    Ok(ExitCode::SUCCESS)
}

/// Where `export --format parquet -o DIR` writes its tables before they are complete:
/// `DIR/.hrx-export.PID.partial`, named for this process so that two exports into one
/// directory never share it.
#[cfg(feature = "parquet")]
fn staging_directory(dir: &Path) -> PathBuf {
    dir.join(format!(
        "{STAGING_PREFIX}{}{STAGING_SUFFIX}",
        std::process::id()
    ))
}

#[cfg(feature = "parquet")]
const STAGING_PREFIX: &str = ".hrx-export.";
#[cfg(feature = "parquet")]
const STAGING_SUFFIX: &str = ".partial";

/// Removes the staging directories in `dir` (locked) that no export holds: a killed
/// export's ([`hrx_capture::replace::remove_abandoned`]).
#[cfg(feature = "parquet")]
fn remove_abandoned(dir: &Path, ours: &[String]) {
    hrx_capture::replace::remove_abandoned(
        dir,
        // A symbolic link of that name is not followed to remove tables where it points.
        |entry| {
            entry.file_type().is_ok_and(|t| t.is_dir()) && is_staging_directory(&entry.file_name())
        },
        |staging| remove_tables(staging, ours),
    );
}

/// Removes the files an export writes into `staging`, then it when that leaves it empty
/// (nothing else in it is an export's to remove).
#[cfg(feature = "parquet")]
fn remove_tables(staging: &Path, ours: &[String]) {
    for name in ours {
        let _ = std::fs::remove_file(staging.join(name));
    }
    let _ = std::fs::remove_dir(staging);
}

/// Whether `name` is a staging directory's ([`staging_directory`]), of any process.
#[cfg(feature = "parquet")]
fn is_staging_directory(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|name| {
        name.strip_prefix(STAGING_PREFIX)
            .and_then(|rest| rest.strip_suffix(STAGING_SUFFIX))
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The file an export writes beside its Parquet tables, so that a later export knows the
/// tables are its own to replace.
#[cfg(feature = "parquet")]
const PARQUET_MARKER: &str = ".hrx-export";

/// Refuses a merged export of a trace whose session record was lost with any other: which
/// recording it is cannot be told (a damaged copy of another trace merged with it showed
/// one run twice, as two processes: a break-it pass), nor its host, so no clock lines it up
/// with the others (`CLOCK_MONOTONIC` is one host's, and its wall clock is lost). Refused
/// rather than warned of: the merged timeline would be wrong in a way a warning on standard
/// error does not mend, and exported alone it loses nothing.
fn refuse_lost_session(files: &[PathBuf], sessions: &[TraceSession]) -> Result<(), Failure> {
    if files.len() < 2 {
        return Ok(());
    }
    match files
        .iter()
        .zip(sessions)
        .find(|(_, s)| s.start().is_none())
    {
        Some((file, _)) => Err(Failure::new(format!(
            "cannot merge {}: its session record was lost (its first block is damaged), so \
             neither whether it is the same recording as another trace given nor its host and \
             wall clock to line it up by can be told",
            file.shown()
        ))
        .hint(format!(
            "export it alone: hrx-trace export {} -o OUT",
            file.shown()
        ))),
        None => Ok(()),
    }
}

/// Refuses a merged export of one recording session twice (a trace given twice, or a trace
/// with its own trim, which keeps its session): every slice would be drawn twice on the same
/// process and thread, and a Parquet join would count it twice.
fn refuse_same_session(files: &[PathBuf], sessions: &[TraceSession]) -> Result<(), Failure> {
    let mut seen: Vec<(&PathBuf, &SessionStart)> = Vec::new();
    for (file, session) in files.iter().zip(sessions) {
        let Some(session) = session.start() else {
            continue;
        };
        let same = |s: &SessionStart| {
            s.host == session.host
                && s.pid == session.pid
                && s.monotonic_base_ns == session.monotonic_base_ns
                && s.wall_clock_utc == session.wall_clock_utc
        };
        if let Some((first, _)) = seen.iter().find(|(_, s)| same(s)) {
            return Err(Failure::new(format!(
                "{} and {} hold the same recording session (host {}, pid {}): a merged export would show it twice",
                first.shown(),
                file.shown(),
                session.host,
                session.pid
            ))
            .hint("give each recording once (a trim keeps its recording's session: export it alone)"));
        }
        seen.push((file, session));
    }
    Ok(())
}

/// Without the `parquet` feature: the format is refused.
#[cfg(not(feature = "parquet"))]
fn parquet(_args: &ExportArgs, _sessions: Vec<TraceSession>) -> anyhow::Result<ExitCode> {
    Err(
        Failure::new("this hrx-trace was built without Parquet export")
            .hint("build it with the default features (`parquet`)")
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An export reads a trace as long as it was when opened: one a recorder appends to
    /// faster than the export reads never ended (as `info`'s once did).
    #[test]
    fn an_export_reads_a_growing_trace_as_long_as_it_was_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        std::fs::write(&path, [1u8; 1000]).unwrap();
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let mut counting = Counting {
            inner: file.take(len),
            read: Arc::default(),
            progress: ProgressBar::hidden(),
        };
        let mut first = [0u8; 600];
        counting.read_exact(&mut first).unwrap();
        // The recorder appends meanwhile.
        let mut more = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        more.write_all(&[2u8; 5000]).unwrap();
        let mut rest = Vec::new();
        counting.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, [1u8; 400]);
        assert_eq!(counting.read.load(Ordering::Relaxed), 1000);
    }

    #[test]
    fn json_too_large_to_open_is_warned_of() {
        let out = Path::new("big.json");
        assert_eq!(large_json(out, LARGE_JSON_BYTES), None);
        let warning = large_json(out, 3 << 30).expect("a warning past 256 MiB");
        assert!(
            warning.starts_with("big.json: 3 GiB of Chrome JSON"),
            "{warning}"
        );
        assert!(
            warning.contains(".pftrace") && warning.contains("trim"),
            "{warning}"
        );
    }

    #[test]
    fn the_written_bytes_are_counted() {
        let bytes = Arc::new(AtomicU64::new(0));
        let mut out = Written {
            inner: Vec::new(),
            bytes: Arc::clone(&bytes),
        };
        out.write_all(b"{\"traceEvents\":[]}").unwrap();
        out.write_all(&[b' '; 1000]).unwrap();
        assert_eq!(bytes.load(Ordering::Relaxed), 1018);
        assert_eq!(out.inner.len(), 1018);
    }
}
