//! `hrx-trace`: record and inspect traces of the hrx runtime (DESIGN.md section 7).
//!
//! Thin over the libraries: parse (clap derive, [`args`]), dispatch to one module per verb,
//! map the error to one `error:` line and an exit code ([`failure`]).

mod args;
mod dump;
mod failure;
mod info;
mod line;
mod photos;
mod record;
mod stats;
mod summary;
mod workload;

use args::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    failure::install_panic_hook();
    let result = match Cli::parse().command {
        Command::Record(args) => record::run(args),
        Command::Info(args) => info::run(args),
        Command::Dump(args) => dump::run(args),
    };
    result.unwrap_or_else(|error| failure::report(&error))
}
