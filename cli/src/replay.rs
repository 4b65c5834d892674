//! `hrx-trace replay`: re-execute a trace with `hrx-replay` and print its verdict.

use crate::args::ReplayArgs;
use crate::failure::{Failure, TraceError};
use hrx_replay::ReplayOptions;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::process::ExitCode;

/// Most repeats `--repeat` takes: timings of every repeat are kept for the medians.
const MAX_REPEAT: usize = 100_000;

/// Replays `args.file`; the exit code is the report's (0 match, 1 regression) or 2.
pub fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    crate::workload::require_backend_name(&args.backend)?;
    let backend: hrx::BackendChoice = args
        .backend
        .parse()
        .map_err(|e: hrx::Error| Failure::new(format!("--backend: {e}")))?;
    if !(1..=MAX_REPEAT).contains(&args.repeat) {
        return Err(Failure::new(format!(
            "--repeat {}: must be between 1 and {MAX_REPEAT}",
            args.repeat
        ))
        .into());
    }
    if let Some(ratio) = args.max_slowdown
        && !(ratio.is_finite() && ratio >= 1.0)
    {
        return Err(Failure::new(format!(
            "--max-slowdown {ratio}: must be a number of at least 1 (a time ratio)"
        ))
        .into());
    }
    if let Some(tolerance) = args.tolerance
        && !(tolerance.is_finite() && tolerance >= 0.0)
    {
        return Err(Failure::new(format!(
            "--tolerance {tolerance}: must be a finite number of at least 0 (a relative error)"
        ))
        .into());
    }
    let progress = ProgressBar::new(0).with_style(
        ProgressStyle::with_template(
            "{spinner} replay {pos}/{len} submissions [{bar:30}] {per_sec}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let bar = progress.clone();
    let mut options = ReplayOptions::default()
        .backend(backend)
        .repeat(args.repeat)
        .per_op(args.per_op)
        .progress(move |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
    if let Some(tolerance) = args.tolerance {
        options = options.tolerance(tolerance);
    }
    if let Some(ratio) = args.max_slowdown {
        options = options.max_slowdown(ratio);
    }
    if let Some(until) = args.until {
        options = options.until(until);
    }
    let report = hrx_replay::replay_file(&args.file, &options);
    progress.finish_and_clear();
    // A trace that does not read is told, and hinted at, as every other verb tells it.
    let report = match report {
        Err(hrx_replay::ReplayError::Read { source, .. }) => {
            return Err(TraceError {
                path: args.file.clone(),
                error: source,
            }
            .into());
        }
        report => report,
    };
    let report = report.map_err(|error| {
        let unavailable =
            matches!(
                &error,
                hrx_replay::ReplayError::Runtime {
                    source: hrx::Error::Unsupported(_),
                    ..
                }
            ) && matches!(backend, hrx::BackendChoice::Cuda | hrx::BackendChoice::Hip);
        let error = error.to_string();
        // The replay errors about the trace itself open with what this line already says.
        let why = error
            .strip_prefix("the trace cannot be replayed: ")
            .unwrap_or(&error);
        let failure = Failure::new(format!("{}: cannot replay: {why}", args.file.display()));
        if unavailable {
            failure.hint("`--backend sim` (the default) replays on the software device")
        } else {
            failure
        }
    })?;
    // After the replay, so that an error stays one line.
    if args.max_slowdown.is_some() && args.repeat < 3 {
        eprintln!(
            "note: --max-slowdown judged {} here; --repeat 3 or more takes a median that one \
             slow replay cannot decide",
            if args.repeat == 1 {
                "a single replay's time"
            } else {
                "the mean of two replays"
            }
        );
    }
    // Written, not printed: `print!` would panic on a closed standard output (`| head`).
    let mut out = std::io::stdout().lock();
    let written = if args.report == "json" {
        writeln!(out, "{}", report.to_json())
    } else {
        write!(out, "{}", report.to_text())
    };
    let code = report.exit_code().clamp(0, 255) as u8;
    crate::failure::verdict(code, written.and_then(|()| out.flush()))
}
