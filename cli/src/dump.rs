//! `hrx-trace dump FILE [--json]`: every record in file order, streamed (the trace is never
//! held in memory), as readable lines (`hrx_analysis::dump::Line`) or JSON lines (the record's serde
//! form, externally tagged: `{"Submit":{...}}`).
//!
//! Standard output carries records only; warnings about damaged or missing parts go to
//! standard error after the last record, so `--json` output always parses line by line. A
//! trace that does not end with its footer is also said before the first record, so that a
//! reader who stops early (`dump | head`) sees it. Records naming submissions whose `Submit`
//! the trace lacks are not counted here: the join that counts them keeps a few bytes a
//! submission (`hrx_analysis::scan::Joiner`), and `dump` streams any trace in constant memory
//! (10 MB for 1M submissions, where the join took it to 35 MB); `info` counts them.

use crate::args::DumpArgs;
use crate::failure::TraceError;
use hrx_analysis::dump::Line;
use hrx_capture::ShowPath;
use hrx_capture::TraceReader;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

/// Runs `dump`.
///
/// # Errors
///
/// An unreadable trace ([`TraceError`]) or a write error (a closed pipe is reported as
/// such and ends quietly with status 0, see [`crate::failure`]).
pub fn run(args: DumpArgs) -> anyhow::Result<ExitCode> {
    let fail = |error| TraceError {
        path: args.file.clone(),
        error,
    };
    // Checked as every reading verb reads it: what a damaged block took is counted alike.
    let (reader, held) = crate::record::read_while_held(&args.file, || {
        TraceReader::open(&args.file).map(TraceReader::check_submission_numbers)
    });
    let mut reader = reader.map_err(fail)?;
    // Said before the records too: a reader of `dump | head` stops before the warnings after
    // them (the other verbs read the whole trace before printing).
    if let Ok(false) = reader.ends_cleanly() {
        crate::output::warn(format_args!(
            "{}: does not end with its index (cut short, still being recorded, or damaged at \
             its end): its records follow as far as they read, and how it ends is said after \
             them",
            args.file.shown()
        ));
    }
    let mut out = BufWriter::with_capacity(64 << 10, crate::output::stdout());
    for item in reader.by_ref() {
        let (_, record) = item.map_err(fail)?;
        if args.json {
            serde_json::to_writer(&mut out, &record).map_err(io::Error::from)?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{}", Line(&record))?;
        }
    }
    out.flush()?;
    drop(out);

    let recovery = reader.recovery();
    crate::failure::warn_partial_as(
        &args.file,
        reader.warnings(),
        Some(recovery),
        "the records above are what was recovered",
        || held,
    );
    Ok(ExitCode::SUCCESS)
}
