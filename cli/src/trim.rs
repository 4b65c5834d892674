//! `hrx-trace trim`: a range of a trace that still replays ([`hrx_analysis::trim`] does the
//! work; this parses, guards the output and reports). The output is written to
//! `OUT.hrxt.partial`, renamed to OUT once complete; the partial file is removed on an
//! error, and when interrupted by SIGINT, SIGTERM or SIGHUP (exit 128+N,
//! [`crate::partial`]).

use crate::args::TrimArgs;
use crate::failure::{Failure, TraceError};
use crate::partial::Interruptible;
use hrx_analysis::trim::{Selection, TrimError, TrimSummary, open_checked, trim};
use hrx_analysis::units::{bytes, plural};
use hrx_capture::ShowPath;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

/// Runs `trim`.
///
/// # Errors
///
/// A bad range, an unreadable input, an output that may not be written or a write error.
pub fn run(args: TrimArgs) -> anyhow::Result<ExitCode> {
    let selection = match (&args.submissions, &args.time) {
        (Some(range), _) => {
            let (start, end) = hrx_capture::range::parse_submissions(range)
                .map_err(|e| Failure::new(format!("--submissions: {e}")))?;
            Selection::Submissions { start, end }
        }
        (None, Some(range)) => {
            let (start_ns, end_ns) = hrx_capture::range::parse_time(range)
                .map_err(|e| Failure::new(format!("--time: {e}")))?;
            Selection::Time { start_ns, end_ns }
        }
        (None, None) => unreachable!("clap requires one of them"),
    };
    crate::failure::require_rereadable(&args.file, "trim")?;
    // A trim of a trace still being recorded would end where the recording had got to and
    // say for good that its source was cut short.
    crate::record::refuse_being_recorded(&args.file, "trim", "a trim needs a closed trace")?;
    crate::record::refuse_stdout(&args.output)?;
    crate::record::refuse_special(&args.output, "trim")?;
    let same = |a: &std::path::Path, b: &std::path::Path| matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b);
    if same(&args.file, &args.output) {
        return Err(Failure::new(format!(
            "refusing to trim {} into itself",
            args.file.shown()
        ))
        .hint("give -o another file")
        .into());
    }
    if args.output.is_dir() {
        return Err(Failure::new(format!(
            "cannot write the trimmed trace to {}: it is a directory",
            args.output.shown()
        ))
        .hint("give -o a file name, e.g. -o trimmed.hrxt")
        .into());
    }
    crate::record::require_directory(&args.output, "the trimmed trace")?;
    crate::record::refuse_overwrite(&args.output, "an hrx trace", |head| {
        head.starts_with(&hrx_capture::format::MAGIC)
            || hrx_capture::format::MAGIC.starts_with(head)
    })?;
    crate::record::refuse_unwritable(&args.output, "the trimmed trace")?;
    // A trace being recorded is one too: renaming the trim over it would unlink the file
    // the recorder writes, and its recording would be lost.
    crate::record::refuse_live(&args.output, "the trimmed trace")?;
    // Replaced as `-o` asks, but said, as `record` says it (once the trim is written).
    let earlier = std::fs::metadata(&args.output).is_ok_and(|m| m.is_file() && m.len() > 0);
    let read_error = |error| TraceError {
        path: args.file.clone(),
        error,
    };
    // The input must read before the output is created: a bad input leaves nothing.
    drop(open_checked(&args.file).map_err(read_error)?);
    // Written through a symlink, not over it: the partial file is the target's sibling,
    // renamed onto the target (renamed onto the link, it replaced the link).
    let output = hrx_capture::replace::written_through(&args.output).map_err(|e| {
        Failure::new(format!(
            "cannot write the trimmed trace to {}: {e}",
            args.output.shown()
        ))
    })?;
    // Named for this process: two trims into one output each write their own file, and the
    // last rename wins whole (one fixed name had them write into each other's file, the
    // winner exiting 0 over a damaged trace: a break-it pass).
    let interruptible = Interruptible::install();
    let (partial, file) = interruptible
        .create_beside(
            &output,
            "the incomplete trimmed trace meant for",
            &args.output,
        )
        .map_err(|e| {
            // The partial file is ours, not a name the user gave: name the output.
            Failure::new(format!(
                "cannot write the trimmed trace to {}: {e}",
                args.output.shown()
            ))
        })?;
    let source = args.file.display().to_string();
    let result = trim(
        || open_checked(&args.file),
        selection,
        &source,
        BufWriter::with_capacity(1 << 20, file),
    );
    let (summary, out) = match result {
        Ok(done) => done,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(match error {
                TrimError::Read(error) => read_error(error).into(),
                TrimError::Empty {
                    ref warnings,
                    ref recovery,
                    ..
                } => {
                    // What the read found first: a trace cut short, or another joined on
                    // after a cut (its submissions are not this trace's), says why it holds
                    // none (only "holds no submission" was said).
                    crate::failure::warn_partial(
                        &args.file,
                        warnings,
                        Some(recovery),
                        "it holds only what was recovered",
                    );
                    Failure::new(error.to_string())
                        .hint("`hrx-trace info` shows the submissions a trace holds")
                        .into()
                }
                // Its message holds its cause: as one line, not also as the error's source
                // (it read "No space left on device (os error 28): No space left ...").
                other => {
                    Failure::new(format!("cannot write {}: {other}", args.output.shown())).into()
                }
            });
        }
    };
    let finish = out
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all());
    if let Err(error) = finish {
        let _ = std::fs::remove_file(&partial);
        return Err(Failure::new(format!("cannot write {}: {error}", args.output.shown())).into());
    }
    // Again, as late as can be: a recording may have started there while trimming.
    if let Err(live) = crate::record::refuse_live(&args.output, "the trimmed trace") {
        let _ = std::fs::remove_file(&partial);
        return Err(live.into());
    }
    let renamed =
        interruptible.rename_into_place(&partial, &output, "the trimmed trace", &args.output);
    if let Err(error) = renamed {
        let _ = std::fs::remove_file(&partial);
        return Err(Failure::new(format!("cannot write {}: {error}", args.output.shown())).into());
    }
    interruptible.finished();
    if earlier {
        // Renamed over it: always another file.
        crate::record::note_replaced(&args.output, None);
    }
    // What reading the input found, as every verb reading a trace warns of it; the output
    // says it too (`info`: "trimmed from an incomplete recording").
    crate::failure::warn_partial(
        &args.file,
        &summary.source_warnings,
        Some(&summary.source_recovery),
        "the trim holds only what was recovered, and says so",
    );
    // A lossy recording that lost nothing, as every verb says it (trim said nothing, though
    // its output keeps the mode: a fresh user's pass, session 59).
    if let Some(mode) = summary.source_recovery.lost.lossy_without_loss() {
        crate::output::lacks(format_args!("{}: lost {mode}", args.file.shown()));
    }
    // Never silent about what the output lacks: a replay of it would stop at the first.
    if summary.missing_blobs > 0 {
        crate::output::warn(format_args!(
            "{}: {} the range refers to (kernel code, host writes, outputs) {} not in {} (a \
             damaged part was skipped): the trimmed trace lacks {} and will not replay whole",
            args.output.shown(),
            hrx_analysis::units::plural(summary.missing_blobs, "stored content"),
            if summary.missing_blobs == 1 {
                "is"
            } else {
                "are"
            },
            args.file.shown(),
            if summary.missing_blobs == 1 {
                "it"
            } else {
                "them"
            },
        ));
    }
    // A range past what the trace holds kept less than asked: said (`--submissions 1..3` of
    // a trace holding 1..2 read `submissions 1..2 (submissions:1..3)` and nothing more: a
    // fresh-user pass).
    // Its start too: `--submissions 61100..61500` of a trace holding 61405 past a gap read
    // "kept up to 61405", as if 61100..=61405 were kept, and `1..15` of a trim holding 10..20
    // shrank to 10..15 silently (a break-it pass).
    if let Selection::Submissions { start, end } = selection
        && let Some(first) = summary.runtimes.iter().map(|r| r.start).min()
        && let Some(kept) = summary.runtimes.iter().map(|r| r.end).max()
    {
        let later = start > 0 && first > start;
        let what = if later {
            format!("kept {first}..={}", kept.saturating_sub(1))
        } else {
            format!("kept up to {}", kept.saturating_sub(1))
        };
        if later || end.is_some_and(|asked| kept < asked) {
            crate::output::warn(format_args!(
                "{}: --submissions {} reaches past the submissions it holds: {what} \
                 (`hrx-trace info` shows what a trace holds)",
                args.file.shown(),
                args.submissions.as_deref().unwrap_or_default(),
            ));
        }
    }
    // `-q`: the trim's summary is not a result (the trace written is), as `record`'s is not.
    if !crate::output::quiet() {
        print_summary(&args, &summary)?;
    }
    for r in summary.runtimes.iter().filter(|r| r.unknown_bytes > 0) {
        let buffers: Vec<String> = r.unknown_buffers.iter().map(|b| b.to_string()).collect();
        crate::output::warn(format_args!(
            "{}: not replayable exactly: runtime {} reads {} before submission {} that {} does not hold ({} {}; its replay excludes the outputs that depend on them; record with HRX_TRACE_CONTENTS=1 HRX_TRACE_DIGESTS=all to keep the contents of every output, GPU-local ones too)",
            args.output.shown(),
            r.runtime,
            bytes(r.unknown_bytes),
            r.start,
            args.file.shown(),
            if buffers.len() == 1 {
                "buffer"
            } else {
                "buffers"
            },
            buffers.join(", ")
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The trim's two summary lines on standard output: each runtime's range and snapshot, then
/// what `OUT` holds.
fn print_summary(args: &TrimArgs, summary: &TrimSummary) -> std::io::Result<()> {
    let mut stdout = crate::output::stdout();
    for r in &summary.runtimes {
        // What the source did not hold is said beside what it did: "(0 B)" alone read as
        // "nothing needed" (a break-it pass).
        let unknown = if r.unknown_bytes > 0 {
            format!(" held, {} not held by the source", bytes(r.unknown_bytes))
        } else {
            String::new()
        };
        writeln!(
            stdout,
            "runtime {}: submissions {}..{}, snapshot of {} ({}{unknown})",
            r.runtime,
            r.start,
            r.end,
            plural(r.snapshots, "range"),
            bytes(r.snapshot_bytes)
        )?;
    }
    // The trim's own records: a range per runtime, the derived snapshots (with their
    // blobs), and the end.
    let own = summary.records_out - summary.records_kept;
    let ranges = summary.runtimes.len() as u64;
    let snapshots = own.saturating_sub(ranges + 1);
    let mut parts = vec![plural(ranges, "range")];
    if snapshots > 0 {
        parts.push(plural(snapshots, "snapshot record"));
    }
    parts.push("1 end".to_owned());
    writeln!(
        stdout,
        "{}: {} records, {} ({} of the {} read, {} of the trim's own: {})",
        args.output.shown(),
        summary.records_out,
        bytes(summary.bytes_out),
        summary.records_kept,
        summary.records_in,
        own,
        parts.join(", ")
    )?;
    Ok(())
}
