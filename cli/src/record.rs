//! `hrx-trace record`: run a program with `HRX_TRACE=FILE`, or a built-in workload in this
//! process ([`crate::workload`]), then print the summary of the written trace.
//!
//! # Recording a program
//!
//! The program runs with `HRX_TRACE` set to the absolute path of FILE, with `%` escaped so
//! the path is taken literally (the runtime expands `%p` in `HRX_TRACE`). Standard streams
//! are inherited. hrx-trace waits for it and exits with its exit code, or 128+N when it was
//! killed by signal N. hrx-trace never creates or removes FILE itself: a program that does
//! not exist leaves nothing behind, and a FILE that the program did not rewrite (its
//! size and modification time are unchanged, or it is still missing) means the program
//! wrote no trace, which is reported as such: it does not link hrx, or it exited before it
//! created a runtime. With several processes that use hrx (say `make`), each one opens
//! FILE and the last one wins; record the one process you care about.

use crate::args::RecordArgs;
use crate::failure::{EXIT_FAILURE, Failure};
use crate::stats::TraceStats;
use crate::summary;
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, ExitCode, ExitStatus};
use std::time::SystemTime;

/// Runs `record`.
///
/// # Errors
///
/// [`Failure`] for a bad output path, a program that cannot be started, bad workload
/// options or a failed workload; I/O errors.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    match args.workload.as_deref() {
        Some(name) => crate::workload::run(name, &args),
        None => record_program(&args),
    }
}

fn record_program(args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let Some((program, program_args)) = args.program.split_first() else {
        return Err(Failure::new("nothing to record")
            .hint("use `hrx-trace record -- PROGRAM [ARGS]...` or `--workload NAME`")
            .into());
    };
    check_output(&args.output)?;
    let absolute = std::path::absolute(&args.output)?;
    let before = identity(&args.output);
    let mut child = Command::new(program)
        .args(program_args)
        .env(hrx_capture::TRACE_ENV, escape_percent(absolute.as_os_str()))
        .spawn()
        .map_err(|e| spawn_failure(program, &e))?;
    let status = child.wait()?;
    let mut code = exit_code(program, status);

    let after = identity(&args.output);
    if after.is_none() || after == before {
        eprintln!(
            "note: no trace: {} wrote nothing to {} (it does not use hrx, or it exited before \
             creating an hrx runtime)",
            name(program),
            args.output.display()
        );
        return Ok(ExitCode::from(code));
    }
    match TraceStats::read(&args.output) {
        Ok(stats) => print_summary(&args.output, &stats)?,
        Err(error) => {
            let error = anyhow::Error::new(error);
            crate::failure::report(&error);
            if code == 0 {
                code = EXIT_FAILURE;
            }
        }
    }
    Ok(ExitCode::from(code))
}

/// Prints the summary on standard output; a closed pipe is not an error.
pub fn print_summary(path: &Path, stats: &TraceStats) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let written = summary::write(&mut out, path, stats).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Refuses an output path that cannot be a trace file.
///
/// # Errors
///
/// [`Failure`] when it is a directory or its directory does not exist.
pub fn check_output(path: &Path) -> Result<(), Failure> {
    if path.is_dir() {
        return Err(Failure::new(format!(
            "cannot write the trace to {}: it is a directory",
            path.display()
        ))
        .hint("give -o a file name, e.g. -o run.hrxt"));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(Failure::new(format!(
            "cannot write the trace to {}: directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    // Overwrite traces (and empty files) only: `-o` naming a photograph or any other file
    // by mistake must not destroy it.
    if let Ok(mut file) = std::fs::File::open(path)
        && path.is_file()
    {
        use std::io::Read;
        let mut magic = [0u8; 8];
        let read = file.read(&mut magic).unwrap_or(0);
        if read > 0 && magic[..read] != b"HRXTRACE"[..read] {
            return Err(Failure::new(format!(
                "refusing to overwrite {}: it exists and is not an hrx trace",
                path.display()
            ))
            .hint("choose another -o file, or remove it first"));
        }
    }
    Ok(())
}

/// Size and modification time, to tell whether the program rewrote the file.
fn identity(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    std::fs::metadata(path)
        .ok()
        .map(|m: Metadata| (m.len(), m.modified().ok()))
}

/// `%` doubled, so that `HRX_TRACE` expansion gives the path back.
fn escape_percent(path: &OsStr) -> OsString {
    match path.to_str() {
        Some(text) => text.replace('%', "%%").into(),
        None => path.to_owned(),
    }
}

fn name(program: &OsStr) -> String {
    program.to_string_lossy().into_owned()
}

fn spawn_failure(program: &OsStr, error: &io::Error) -> Failure {
    let program = name(program);
    match error.kind() {
        io::ErrorKind::NotFound => Failure::new(format!(
            "cannot run {program}: no such program (not a file, and not found in PATH)"
        )),
        io::ErrorKind::PermissionDenied => Failure::new(format!(
            "cannot run {program}: permission denied (is it executable?)"
        )),
        _ => Failure::new(format!("cannot run {program}: {error}")),
    }
}

/// The program's exit code, or 128+N for a signal (reported on standard error).
fn exit_code(program: &OsStr, status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return code as u8;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            eprintln!(
                "note: {} was killed by signal {signal}{}{core}",
                name(program),
                signal_name(signal)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
            return (128 + signal).clamp(0, 255) as u8;
        }
    }
    EXIT_FAILURE
}

#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_is_escaped_for_the_runtime() {
        let escaped = escape_percent(OsStr::new("/tmp/a%p.hrxt"));
        assert_eq!(
            hrx_capture::expand_path(&escaped),
            Path::new("/tmp/a%p.hrxt")
        );
    }
}
