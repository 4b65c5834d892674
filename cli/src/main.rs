//! `hrx-trace`: record and inspect traces of the hrx runtime (DESIGN.md section 7).
//!
//! Thin over the libraries: parse (clap derive, [`args`]), dispatch to one module per verb,
//! map the error to one `error:` line and an exit code ([`failure`]).

mod args;
mod completions;
mod diff;
mod dump;
mod export;
mod failure;
mod info;
mod kernel_stats;
mod output;
mod partial;
mod photos;
mod record;
mod replay;
mod summary;
mod traces;
mod trim;
mod workload;

use args::{Cli, Command};
use hrx_capture::ShowPath;
use std::process::ExitCode;

fn main() -> ExitCode {
    failure::install_panic_hook();
    // Past a file-size limit (`ulimit -f`), a write then fails with EFBIG and is reported as
    // one error line (and a partial export removed) instead of the process being killed by
    // SIGXFSZ with a partial file left behind. A program run by `record --` inherits this.
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = failure::parse_args::<Cli>();
    output::init(cli.quiet, cli.verbose, cli.color);
    let result = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Info(args) => info::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Replay(args) => replay::run(args),
        Command::View(args) => view(&args.file, args.follow, cli.color),
        Command::Export(args) => export::run(args),
        Command::Stats(args) => kernel_stats::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Trim(args) => trim::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    };
    result.unwrap_or_else(|error| failure::report(&error))
}

/// `hrx-trace view`: the terminal timeline (`hrx-tui`).
fn view(
    file: &std::path::Path,
    follow: bool,
    color: output::ColorChoice,
) -> anyhow::Result<ExitCode> {
    // A terminal program: `auto` is colour unless NO_COLOR says otherwise.
    let colour = match color {
        output::ColorChoice::Always => true,
        output::ColorChoice::Never => false,
        output::ColorChoice::Auto => !hrx_tui::app::no_color(std::env::var_os("NO_COLOR")),
    };
    // Asked before it opens: a trace a recorder still writes is shown as far as it was
    // written, its Trace pane saying it is being recorded now (the view asks too), and
    // `--follow` is pointed at once the terminal is given back (a fresh-user pass).
    let live = !follow && crate::record::being_recorded(file);
    let shown = hrx_tui::app::run_coloured(file, follow, colour);
    if live {
        output::warn(format_args!(
            "{0}: being recorded now (a recorder holds it): the view showed what was written \
             when it opened, its end not written yet (not a crash); `hrx-trace view --follow \
             {1}` follows it as it grows",
            file.shown(),
            file.for_shell()
        ));
    }
    // Said once the terminal is given back (the index is built while it shows the summary).
    if let Some(unwritten) = hrx_analysis::timeline::cache::take_unwritten(file) {
        output::warn(format_args!("{unwritten}"));
    }
    shown.map_err(|error| {
        // A trace that does not read is told, and hinted at, as every other verb tells it.
        match error {
            hrx_tui::TuiError::Read { path, source } => {
                return anyhow::Error::from(failure::TraceError {
                    path,
                    error: source,
                });
            }
            // As `stats --follow` says it: one line.
            hrx_tui::TuiError::NotWritten {
                path,
                waited,
                source,
            } => {
                let waited = hrx_capture::WaitError {
                    error: (),
                    gave_up_after: Some(waited),
                };
                let gave_up = waited.gave_up(&path).unwrap_or_default();
                return anyhow::Error::from(failure::TraceError {
                    path,
                    error: source,
                })
                .context(gave_up);
            }
            _ => {}
        }
        let failure = failure::Failure::new(error.to_string());
        anyhow::Error::from(match error {
            // The headless frame named, as the README suggests it for this very case (a
            // fresh user's pass).
            hrx_tui::TuiError::NotATerminal => failure.hint(format!(
                "run it in a terminal (or tmux); without one, `{}=120x40 hrx-trace view {}` \
                 prints its first frame, `stats` the timeline's statistics, and `export` \
                 writes the timeline for Perfetto",
                hrx_tui::app::HEADLESS_FRAME_ENV,
                file.for_shell()
            )),
            hrx_tui::TuiError::NoAnswer { .. } => failure.hint(
                "run it in an interactive terminal (or tmux); for use without one, `info` and \
                 `stats` print the trace's summary and statistics and `export` writes the \
                 timeline for Perfetto",
            ),
            _ => failure,
        })
    })?;
    Ok(ExitCode::SUCCESS)
}
