//! Errors as the user sees them: one `error: ...` line, at most one `hint: ...` line, and an
//! exit code; never a panic message or a backtrace.
//!
//! Exit codes (README.md and RELIABILITY.md have the table): 0 success; 1 a regression
//! (replay); 2 everything that stopped hrx-trace from doing what was asked (unreadable input,
//! usage errors, an unwritable output, a program that cannot start, a failed workload, a
//! trace whose writing failed); `record -- PROGRAM`: the program's exit code, 128+N when it
//! was killed by signal N or when hrx-trace received signal N and forwarded it; 101 an
//! internal error (a bug). A closed standard output (`hrx-trace dump FILE | head`) is not
//! an error: exit 0, or the verdict's code for `replay` and `diff`.

use hrx_capture::ReadError;
use hrx_capture::ShowPath;
use hrx_capture::Warning;
use hrx_capture::format::{FormatError, VersionError};
use hrx_capture::reader::{ReadErrorKind, WarningKind};
use std::fmt;
use std::io;
use std::process::ExitCode;

/// Exit code for unusable input, usage errors and failures.
pub const EXIT_FAILURE: u8 = 2;

/// An error that carries its own hint and exit code.
#[derive(Debug)]
pub struct Failure {
    message: String,
    hint: Option<String>,
    code: u8,
}

impl Failure {
    /// A failure with exit code [`EXIT_FAILURE`].
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            hint: None,
            code: EXIT_FAILURE,
        }
    }

    /// Adds the `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// A trace that could not be read, named by its path.
#[derive(Debug)]
pub struct TraceError {
    /// The trace file, as the user named it.
    pub path: std::path::PathBuf,
    /// What the reader said.
    pub error: ReadError,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.shown(), self.error)
    }
}

impl std::error::Error for TraceError {}

/// Prints `error` as one line (plus a hint) on standard error and returns its exit code.
pub fn report(error: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(error) {
        return ExitCode::SUCCESS;
    }
    let (code, hint) = classify(error);
    crate::output::eline(format_args!(
        "{} {}",
        crate::output::paint_err("error:", crate::output::Tone::Bad),
        one_line(&format!("{error:#}"))
    ));
    if let Some(hint) = hint {
        crate::output::eline(format_args!("hint: {hint}"));
    }
    ExitCode::from(code)
}

/// The exit code of a verdict (`replay`, `diff`) once its report (`report`: `the report of
/// the replay of t.hrxt`) is `written`. A closed standard output ends the report, not the
/// verdict: `hrx-trace diff A B | head` in CI still fails on a regression; one `warning:`
/// line says that the report was cut ([`crate::output::closed_stdout_said`]).
///
/// # Errors
///
/// Any other write error, naming standard output (`> /dev/full`: `cannot write the report
/// of ... to standard output: No space left on device`).
pub fn verdict(code: u8, written: io::Result<()>, report: &str) -> anyhow::Result<ExitCode> {
    match crate::output::closed_stdout_said(written, report, "the verdict's") {
        Ok(()) => Ok(ExitCode::from(code)),
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("cannot write {report} to standard output")))
        }
    }
}

/// Whether the error is a write to a closed pipe (the reader went away). An export's write
/// error is transparent (its `io::Error` is not in the chain of causes), so it is looked into.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let io = cause.downcast_ref::<io::Error>().or_else(|| {
            match cause.downcast_ref::<hrx_analysis::export::ExportError>() {
                Some(hrx_analysis::export::ExportError::Write(e)) => Some(e),
                _ => None,
            }
        });
        io.is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn classify(error: &anyhow::Error) -> (u8, Option<String>) {
    for cause in error.chain() {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return (failure.code, failure.hint.clone());
        }
        if let Some(trace) = cause.downcast_ref::<TraceError>() {
            // `-` is a file name here, not standard input, which the verbs do not read (a
            // trace is read twice, and indexed from its end).
            if trace.path.as_os_str() == "-"
                && matches!(&trace.error.kind, ReadErrorKind::Open(e) if e.kind() == io::ErrorKind::NotFound)
            {
                let hint =
                    "hrx-trace reads trace files, not standard input: save the trace to a file";
                return (EXIT_FAILURE, Some(hint.to_owned()));
            }
            // A file a recorder has created and holds, its first block not written yet (a
            // reader between the two: a break-it pass's reads every 0.2 s from the start of
            // `record`), is being recorded, not a recording that died before writing.
            if matches!(
                trace.error.kind,
                ReadErrorKind::Empty | ReadErrorKind::TruncatedHeader { .. }
            ) && crate::record::being_recorded(&trace.path)
            {
                return (EXIT_FAILURE, Some(NOTHING_WRITTEN_YET.to_owned()));
            }
            return (EXIT_FAILURE, read_hint(&trace.error));
        }
    }
    (EXIT_FAILURE, None)
}

/// The hint for a trace a recorder holds that has nothing to read yet.
pub(crate) const NOTHING_WRITTEN_YET: &str = "a recorder holds it and has not written its first block yet: read it again \
     in a moment, or follow it with `hrx-trace stats --follow` or `hrx-trace view --follow`";

/// A hint for a trace that cannot be read, where one helps.
fn read_hint(error: &ReadError) -> Option<String> {
    let hint = match &error.kind {
        ReadErrorKind::Empty | ReadErrorKind::TruncatedHeader { .. } => {
            "the recording process probably died before its first write; record again"
        }
        ReadErrorKind::Format(FormatError::BadMagic { .. }) => {
            "hrx-trace reads trace files written by `hrx-trace record` or by a program run with HRX_TRACE=FILE"
        }
        ReadErrorKind::Format(FormatError::Version(VersionError::OlderMajor { .. })) => {
            "read it with the hrx-trace release that recorded it"
        }
        ReadErrorKind::Open(e) if e.kind() == io::ErrorKind::NotFound => {
            "record one with `hrx-trace record -o FILE --workload pipeline` or `hrx-trace record -o FILE -- PROGRAM`"
        }
        _ => return None,
    };
    Some(hint.to_string())
}

/// Parses the command line. Help and version are printed as clap prints them (exit 0); a bare
/// `hrx-trace` or a verb without its arguments prints an `error:` line saying what is missing,
/// then clap's help (exit 2); any
/// other usage error becomes one `error:` line and one `hint:` line (clap's tip, else the
/// usage line, else `see --help`), exit 2. An unknown option keeps clap's tip (`record
/// --frame 3`: `hint: a similar argument exists: '--frames'`), the trailing `-- PROGRAM`
/// notwithstanding; a stray word given to `record` (`record ./app`) is told that a program
/// goes after `--` (clap's usage line alone did not say so).
pub fn parse_args<P: clap::Parser>() -> P {
    use clap::error::ErrorKind;
    let error = match P::try_parse() {
        Ok(parsed) => return parsed,
        Err(error) => error,
    };
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => error.exit(),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            match std::env::args_os().nth(1) {
                None => crate::output::eline(format_args!(
                    "error: no verb given: say what to do, e.g. `record` or `info`"
                )),
                Some(verb) => crate::output::eline(format_args!(
                    "error: `{}` needs arguments",
                    verb.to_string_lossy()
                )),
            }
            error.exit()
        }
        _ => {}
    }
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("error: bad arguments");
    let rest: Vec<&str> = lines.collect();
    // A message ending in ':' continues on the next lines (clap lists missing arguments
    // there), up to the usage or tip.
    let message = if first.ends_with(':') {
        let listed: Vec<&str> = rest
            .iter()
            .copied()
            .take_while(|l| !l.starts_with("Usage: ") && !l.starts_with("tip: "))
            .collect();
        format!("{first} {}", listed.join(", "))
    } else {
        first.to_owned()
    };
    // A bad value is told with the values there are (`--format svg`), on its one line.
    let message = match rest
        .iter()
        .find_map(|l| l.strip_prefix("[possible values: "))
        .and_then(|l| l.strip_suffix(']'))
    {
        Some(values) => format!("{message}: it must be one of {values}"),
        None => message,
    };
    let message = message.as_str();
    let stray_word = error.kind() == ErrorKind::UnknownArgument
        && std::env::args_os()
            .nth(1)
            .is_some_and(|verb| verb == "record")
        && match error.get(clap::error::ContextKind::InvalidArg) {
            Some(clap::error::ContextValue::String(arg)) => !arg.starts_with('-'),
            _ => false,
        };
    // Every other reading verb takes `--json`; replay's JSON is a report format.
    let replay_json = error.kind() == ErrorKind::UnknownArgument
        && std::env::args_os()
            .nth(1)
            .is_some_and(|verb| verb == "replay")
        && matches!(
            error.get(clap::error::ContextKind::InvalidArg),
            Some(clap::error::ContextValue::String(arg)) if arg.starts_with("--json")
        );
    // And the other way: `--report json` given to a verb whose JSON is `--json` (clap's tip
    // read "to pass '--report' as a value, use '-- --report'").
    let report_elsewhere = error.kind() == ErrorKind::UnknownArgument
        && matches!(
            error.get(clap::error::ContextKind::InvalidArg),
            Some(clap::error::ContextValue::String(arg)) if arg.starts_with("--report")
        );
    let verb = std::env::args_os()
        .nth(1)
        .map(|verb| verb.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hint = replay_json
        .then(|| "replay writes its report as JSON with --report json".to_owned())
        .or_else(|| {
            report_elsewhere
                .then(|| format!("{verb} writes JSON with --json (--report json is replay's)"))
        })
        .or_else(|| {
            rest.iter()
                .find_map(|l| l.strip_prefix("tip: "))
                .map(str::to_owned)
        })
        .or_else(|| {
            stray_word.then(|| {
                "a program to record goes after `--`: hrx-trace record [OPTIONS] -- PROGRAM \
                 [ARGS]... (or --workload NAME)"
                    .to_owned()
            })
        })
        .or_else(|| {
            // The verb's own usage, with `[OPTIONS]`: clap's usage in an error lists the
            // options given as if they were required (`record --output <FILE> <...>`).
            let usage = verb_usage::<P>(&verb).or_else(|| {
                rest.iter()
                    .find_map(|l| l.strip_prefix("Usage: "))
                    .map(str::to_owned)
            });
            usage.map(|usage| format!("usage: {usage}; more with --help"))
        })
        .or_else(|| Some("see --help".to_owned()));
    crate::output::eline(format_args!("{}", one_line(message)));
    if let Some(hint) = hint {
        crate::output::eline(format_args!("hint: {hint}"));
    }
    std::process::exit(i32::from(EXIT_FAILURE));
}

/// The usage line of `verb` as its `--help` prints it (`hrx-trace record [OPTIONS] ...`),
/// without the `Usage: ` before it; `None` when `verb` is not one.
fn verb_usage<P: clap::CommandFactory>(verb: &str) -> Option<String> {
    let mut command = P::command();
    command.build();
    let usage = command
        .find_subcommand_mut(verb)?
        .render_usage()
        .to_string();
    let usage = usage.trim();
    Some(usage.strip_prefix("Usage: ").unwrap_or(usage).to_owned())
}

/// Prints what a reading verb must say about a trace it could not read whole, on standard
/// error, each on one `warning:` line naming the file: the reader's warnings, then, unless
/// the trace was read whole, how it ends and `covers` (what that means for the output).
pub fn warn_partial<'a>(
    path: &std::path::Path,
    warnings: impl IntoIterator<Item = &'a Warning>,
    recovery: Option<&hrx_capture::Recovery>,
    covers: &str,
) {
    // A trace a recorder holds now is not cut short: it is being written (`stats`, `export`
    // and `diff` said "not closed cleanly" of a live recording: a break-it pass).
    let live = || crate::record::being_recorded(path);
    warn_partial_as(path, warnings, recovery, covers, live);
}

/// [`warn_partial`], `live` saying whether a recorder was writing the trace (an export asks
/// when it opens the trace, and its file says the same). Returns the lines warned, without
/// their `warning: ` (a JSON report's `warnings`).
pub fn warn_partial_as<'a>(
    path: &std::path::Path,
    warnings: impl IntoIterator<Item = &'a Warning>,
    recovery: Option<&hrx_capture::Recovery>,
    covers: &str,
    live: impl FnOnce() -> bool,
) -> Vec<String> {
    if let Some(r) = recovery {
        crate::output::detail(format_args!(
            "{}: read {} records from {} complete blocks ({} blocks and {} records skipped), \
             {:.3} s after start",
            path.shown(),
            r.records,
            r.complete_blocks,
            r.skipped_blocks,
            r.skipped_records,
            crate::output::since_start().as_secs_f64()
        ));
    }
    // Asked only of a trace not read whole, as `lacks_as` asks.
    let live = recovery.is_some_and(|r| !r.is_complete()) && live();
    // How it ends with what was recovered, in the sentence every verb explains it with
    // (`info`, `stats` and `export` explained one damaged block three ways); not of a file
    // read whole (a trim of an incomplete recording) or being written.
    let ends = recovery.and_then(|r| {
        let explained = if !r.file_is_whole() && !live {
            format!(": {}", hrx_analysis::info::recovered(r))
        } else {
            String::new()
        };
        ends_as(r, || live).map(|end| format!("{end}; {covers}{explained}"))
    });
    let lost = recovery
        .and_then(lost_as)
        .map(|lost| format!("{lost}; {covers}"));
    let warned: Vec<String> = (warnings.into_iter().filter(|w| said(w, live)))
        .map(|warning| one_line(&warning.to_string()))
        .chain(ends)
        .chain(lost)
        .map(|line| format!("{}: {line}", path.shown()))
        .collect();
    for line in &warned {
        crate::output::warn(line);
    }
    warned
}

/// Whether a reading verb says the reader's `warning` of a trace that `live` says a
/// recorder held as it was read: not its torn tail, the block the recorder was writing when
/// the read reached it, which the live warning covers ("read as far as it was written").
/// A one-shot read that met a block being written called it damage ("the file ends inside
/// a block: N bytes discarded"), and `info --json` and `stats --json` listed it (a break-it
/// pass: a trace cut inside a block, its recorder's lock held, read as a live recording
/// is).
pub(crate) fn said(warning: &Warning, live: bool) -> bool {
    !(live && matches!(warning.kind, WarningKind::TruncatedTail { .. }))
}

/// What a trace lacks, as the warnings say it: how it ends when it was not read whole (an
/// incomplete trace that `live` says a recorder held as it was read said to be being
/// recorded rather than by how it ends; asked only of an incomplete one), and the records
/// its recorder lost. The JSON reports' `warnings` list it as standard error warned it.
pub(crate) fn lacks_as(
    recovery: &hrx_capture::Recovery,
    live: impl FnOnce() -> bool,
) -> Vec<String> {
    (ends_as(recovery, live).into_iter())
        .chain(lost_as(recovery))
        .collect()
}

/// How a trace not read whole ends, as [`lacks_as`] says it; `None` for one read whole.
fn ends_as(recovery: &hrx_capture::Recovery, live: impl FnOnce() -> bool) -> Option<String> {
    (!recovery.is_complete()).then(|| {
        if live() {
            "being recorded now (a recorder holds it): read as far as it was written".to_owned()
        } else {
            recovery.end().to_string()
        }
    })
}

/// The records a trace's recorder lost, as [`lacks_as`] says them; `None` for none.
fn lost_as(recovery: &hrx_capture::Recovery) -> Option<String> {
    (!recovery.lost.is_none()).then(|| format!("{} while recording", recovery.lost))
}

/// Refuses an input that is a pipe or a device: the trace reader never opens one (a FIFO
/// blocks until its other end opens, and `diff` and `trim` read their input twice).
/// Missing files and directories get the reader's own error.
///
/// # Errors
///
/// A [`Failure`] naming the file, with a hint.
pub fn require_rereadable(path: &std::path::Path, verb: &str) -> Result<(), Failure> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => Err(Failure::new(format!(
            "{}: not a regular file (a pipe or a device): `{verb}` reads trace files, not streams",
            path.shown()
        ))
        .hint("save the trace to a file first")),
        _ => Ok(()),
    }
}

/// Joins the lines of a message, so that an error is always one line.
pub fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Replaces the default panic message and backtrace with one `error:` line (exit code 101
/// stays: a panic is a bug).
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown panic");
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        crate::output::eline(format_args!(
            "error: internal error (a bug in hrx-trace): {}{place}",
            one_line(message)
        ));
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_become_one_line() {
        assert_eq!(one_line("a\n  b\n\nc"), "a b c");
    }

    #[test]
    fn failure_code_and_hint_survive_context() {
        let error = anyhow::Error::new(Failure::new("boom").hint("try again")).context("while x");
        assert_eq!(classify(&error), (2, Some("try again".into())));
    }

    #[test]
    fn broken_pipe_is_detected_through_context() {
        let error = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe)).context("dump");
        assert!(is_broken_pipe(&error));
    }
}
