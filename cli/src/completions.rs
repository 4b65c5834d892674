//! `hrx-trace completions SHELL` and `hrx-trace man [--dir DIR]`: generated from the clap
//! definitions in [`crate::args`] (clap_complete, clap_mangen), so they never drift from
//! the parser.
//!
//! `man` prints the top-level page (`hrx-trace.1`, roff) on standard output; with `--dir`
//! it writes that page and one `hrx-trace-VERB.1` per verb into the directory instead.

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::failure::Failure;
use clap::CommandFactory;
use hrx_capture::ShowPath;
use std::io::{self, Write};
use std::process::ExitCode;

/// Prints the completion script of `args.shell` on standard output.
///
/// # Errors
///
/// A write error (a closed pipe ends quietly, see [`crate::failure`]).
pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command();
    let mut out = io::stdout().lock();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "hrx-trace", &mut script);
    if args.shell == clap_complete::Shell::Bash {
        script = fix_bash_names(&script);
    }
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// clap_complete 4.6's bash script names a hyphenated binary's states two ways: `cmd` is
/// set to `hrx__trace__subcmd__VERB` but matched against `hrx__subcmd__trace__subcmd__VERB`,
/// so nothing after the verb completed. One spelling makes them meet.
fn fix_bash_names(script: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(script)
        .replace("hrx__subcmd__trace", "hrx__trace")
        .into_bytes()
}

/// Prints the man page, or writes every page into `args.dir`.
///
/// # Errors
///
/// [`Failure`] when the directory cannot be created or written; a write error otherwise.
pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let command = Cli::command();
    match args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            let mut out = io::stdout().lock();
            out.write_all(&page)?;
            out.flush()?;
        }
        Some(dir) => {
            let fail = |e: io::Error| Failure::new(format!("{}: {e}", dir.shown()));
            if dir.exists() && !dir.is_dir() {
                return Err(Failure::new(format!(
                    "{}: not a directory (--dir names the directory to write the pages into)",
                    dir.shown()
                ))
                .into());
            }
            std::fs::create_dir_all(&dir).map_err(fail)?;
            clap_mangen::generate_to(command, &dir).map_err(fail)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
