//! `hrx-trace export FILE --format chrome|perfetto -o OUT`: the trace as Chrome trace-event
//! JSON or a Perfetto protobuf, both of which Perfetto's UI opens. What is exported and how
//! it streams in bounded memory: `hrx_analysis::export`. This verb adds the progress bar,
//! refuses outputs that are not earlier exports, and removes a half-written output: on a
//! write error, and when interrupted by SIGINT, SIGTERM or SIGHUP (exit 128+N,
//! [`crate::partial`]).

use crate::args::ExportArgs;
use crate::failure::{Failure, TraceError};
use crate::partial::Interruptible;
use hrx_analysis::export::{self, ExportError, Format};
use hrx_analysis::units::plural;
use hrx_capture::TraceReader;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs `export`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]), an output that cannot be created ([`Failure`]), or
/// a write error.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let file_len = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    let progress = ProgressBar::new(file_len).with_style(
        ProgressStyle::with_template("{spinner} export {msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    crate::failure::require_rereadable(&args.file, "export")?;
    if args.output.as_os_str() != "-" {
        check_output(&args.output, &args.format)?;
    }
    let format = if args.format == "perfetto" {
        Format::Perfetto
    } else {
        Format::Chrome
    };
    let read = Arc::new(AtomicU64::new(0));
    let fail = |error| TraceError {
        path: args.file.clone(),
        error,
    };
    // The reader first: a trace that cannot be opened must not leave an empty output.
    let reader = open(&args.file, &read, &progress)?;
    let to_stdout = args.output.as_os_str() == "-";
    let interruptible = (!to_stdout).then(Interruptible::install);
    // Encoded in batches on worker threads and written on a thread of its own (no buffer
    // needed).
    let out: Box<dyn Write + Send> = match &interruptible {
        None => Box::new(io::stdout()),
        Some(interruptible) => {
            let file = interruptible
                .create(&args.output, "the incomplete export")
                .map_err(|e| Failure::new(format!("{}: {e}", args.output.display())))?;
            Box::new(file)
        }
    };
    progress.set_message("writing");
    let written = export::write(reader, format, out).map_err(|error| match error {
        ExportError::Read(error) => anyhow::Error::from(fail(error)),
        other => anyhow::Error::from(other),
    });
    let exported = match written {
        Ok(exported) => exported,
        Err(error) if !to_stdout => {
            // A half-written export is not an export: leave nothing rather than a file that
            // does not parse.
            progress.finish_and_clear();
            // The regular file written, through any symlink: never the link itself, nor a
            // device such as `-o /dev/full`.
            let written = std::fs::canonicalize(&args.output)
                .ok()
                .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()));
            let removed = written.is_some_and(|p| std::fs::remove_file(p).is_ok());
            return Err(error.context(format!(
                "cannot write {}{}",
                args.output.display(),
                if removed {
                    " (removed the incomplete file)"
                } else {
                    ""
                }
            )));
        }
        Err(error) => return Err(error),
    };
    if let Some(interruptible) = interruptible {
        interruptible.finished();
    }
    progress.finish_and_clear();
    crate::failure::warn_partial(
        &args.file,
        &exported.warnings,
        exported.recovery.as_ref(),
        "the export covers only what was recovered",
    );
    if exported.unplaced_timings > 0 {
        eprintln!(
            "warning: {}: {} timings name a submission or region the trace does not record; they are not exported",
            args.file.display(),
            exported.unplaced_timings
        );
    }
    if exported.counts.flows_not_drawn > 0 {
        eprintln!(
            "warning: {}: {} cross-submission waits or timings were read more than {} submissions away from their submission; they are exported without their flow arrows",
            args.file.display(),
            exported.counts.flows_not_drawn,
            2 * export::WINDOW
        );
    }
    if exported.counts.timing_lost > 0 {
        eprintln!(
            "note: {}: {} timing lost (records dropped): started, then their timing or completion was dropped by the lossy recording; marked on the Recorder track, not drawn running",
            args.file.display(),
            plural(exported.counts.timing_lost, "region"),
        );
    }
    if !to_stdout {
        // Written, not printed: a closed standard output is an error `main` treats as
        // success, where `println!` would panic.
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "{}: {}, {}, {}, {} (as view lists them), {} ({})",
            args.output.display(),
            plural(exported.counts.tracks as u64, "track"),
            plural(exported.counts.slices, "slice"),
            plural(exported.counts.flows, "flow"),
            plural(exported.counts.instants, "event"),
            plural(exported.counts.recorder_instants, "recorder mark"),
            args.format
        )?;
    }
    Ok(ExitCode::SUCCESS)
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
    let reader = TraceReader::new(Counting {
        inner: file,
        read: read.clone(),
        progress: progress.clone(),
    })
    .map_err(fail)?;
    Ok(reader)
}

/// A file that reports the bytes read to a progress bar.
struct Counting {
    inner: File,
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

/// Refuses an output that is a directory, or an existing non-empty file that is not an
/// earlier export in `format` (Chrome JSON starts `{"traceEvents":`, a Perfetto trace with
/// its first packet's tag, 0x0a): `-o` naming a trace, a photograph or a README by mistake
/// must not destroy it.
fn check_output(path: &std::path::Path, format: &str) -> Result<(), Failure> {
    crate::record::refuse_special(path, "export")?;
    if path.is_dir() {
        return Err(Failure::new(format!(
            "cannot write the export to {}: it is a directory",
            path.display()
        ))
        .hint("give -o a file name, e.g. -o trace.json"));
    }
    const CHROME: &[u8] = b"{\"traceEvents\"";
    crate::record::refuse_overwrite(path, &format!("a {format} export"), |head| match format {
        "perfetto" => head.first() == Some(&0x0a),
        _ => head.starts_with(CHROME) || CHROME.starts_with(head),
    })
}
