//! `hrx-trace replay`: re-execute a trace with `hrx-replay` and print its verdict.
//!
//! The backend defaults to `auto` as `record`'s does (`HRX_BACKEND` if set, else CUDA, then
//! HIP, then the software device; a runtime with a captured fault replays on the software
//! device, which alone injects faults). A runtime replayed on another backend than it was
//! recorded on is said in the report's first lines (`recorded on cuda, replaying on sim:
//! timings are not comparable`): its timing rows have no ratio and none is judged slow,
//! and `--max-slowdown` is refused (exit 2) rather than judged against another backend's
//! times.
//!
//! A trace is read once before anything is replayed, and what that read found goes to
//! standard error as every reading verb says it (`warning:` lines: a damaged or truncated
//! file, records lost while recording). A trace whose recorder lost records (lossy mode)
//! cannot be replayed exactly. Where the losses leave the trace whole (region timings lost,
//! say), it is replayed and its report's first line says `cannot be exact: N records lost
//! ...`. Where they break it (a `Submit`, a host write or an object's definition lost), replay
//! refuses (exit 2) before replaying anything, with the losses as the first words of its one
//! error line: apitrace and
//! GFXReconstruct users expect a replayer to go as far as it can, but their replay's output
//! is frames a person looks at, where this one's is a verdict a CI job acts on: a replay
//! without the lost submissions would shift every later output, so its divergences would be
//! false regressions, and a match over what was left would pass work never compared.
//!
//! `--report json` is the report's serde form (`hrx_replay::Report::json_value`: `verdict`,
//! `trace`, `replay`, `summary`, the rows, `notes`, ...) with the keys every reading verb's
//! JSON has: `complete` (read whole, and nothing lost while recording: `trace.complete`),
//! `lost` (`{"total", "lossy", "by_kind"}`: `trace.records_lost` and its kinds, and whether
//! the trace was recorded in lossy mode) and `warnings` (each `warning:` line standard error
//! has, without its `warning: `, in order: what reading the trace found, the options, the
//! gate and the baseline), as `info --json`, `stats --json` and, per side, `diff --json`.
//!
//! Interrupted while it replays (SIGINT, SIGTERM, SIGHUP, and the signals `record` forwards:
//! `crate::record::signals::SIGNALS`), it says so in one line, `error: interrupted by signal
//! 2 (SIGINT): the replay of t.hrxt stopped before its verdict: nothing judged` (and that no
//! baseline was saved or added to, where one was to be), and exits 128+N ([`crate::partial`]).
//! Interrupted after its verdict, the line says what of its report was printed (`stopped
//! before its report was printed: nothing of it on standard output`, `stopped as its report
//! began to be printed: none or part of it on standard output` (its first write under way),
//! `stopped while its report was printed: the report on standard output is incomplete`, a
//! slow reader of a long
//! JSON report, or `was done: its report on standard output is whole`:
//! [`crate::partial::Interruptible::print_report`]) and what became of the baseline.
//! Interrupted while it writes the baseline, its temporary file is removed and the earlier
//! baseline stays (`no baseline saved to b.json`); its rename runs with the signals blocked,
//! after which the line says `baseline saved to b.json` (`Guarded`,
//! [`hrx_replay::Replacer`]).

use crate::args::ReplayArgs;
use crate::failure::{Failure, TraceError};
use hrx_capture::ShowPath;
use hrx_replay::ReplayOptions;
use std::io::Write;
use std::process::ExitCode;

/// `--repeat` with `--max-slowdown` and no `--repeat`: the halves of 10 repeats give a region
/// run at least twice in the trace 7 samples each (the least the replay's own spread is
/// measured on), and a region run once 10 samples (the median's interval takes 7).
const GATE_REPEAT: usize = 10;

/// `--max-slowdown` with `--baseline` and no `--max-slowdown` (`diff`'s default).
const BASELINE_MAX_SLOWDOWN: f64 = 1.5;

/// Most repeats `--repeat` takes: a streamed replay keeps every repeat's runtime open from
/// the first chunk to the last (each replays the next chunk on its own buffers), so memory
/// grows with repeats (README: about 37 MB and six threads a repeat for the README's trace);
/// a hundred repeats give a row run once a hundred samples, its median to a few ranks.
const MAX_REPEAT: usize = 100;

/// Past this `--max-slowdown` the timing gate is all but off, and said to be.
const WIDE_SLOWDOWN: f64 = 100.0;

/// `--max-slowdown`'s value, for `replay` and `diff`: a finite time ratio of at least 1.
/// A number too large for an `f64` (`1e309`) parses as infinity and is said so, not echoed
/// as `inf`, which the user never typed. One past [`WIDE_SLOWDOWN`] is warned of, not
/// refused: a gate this wide fires only on a broken build or machine, and a loaded CI
/// machine may need it (one replay there read 2,519x); but `1e308` read as a gate that
/// passed (RELIABILITY.md, session 34; `diff` said nothing of it until a break-it pass).
/// `slower` says what must be that much slower (`a region must replay {} times slower than
/// captured`, `{}` the factor), `judged` what is judged all the same. Returns the warning
/// printed, if any, for a JSON report's `warnings`.
///
/// # Errors
/// A [`Failure`] naming the value.
/// A ratio as a reader takes it in: `{}` of 1e308 or 2e-308 is over 300 digits.
fn shown_ratio(ratio: f64) -> String {
    if ratio == 0.0 || (1e-6..1e6).contains(&ratio.abs()) {
        ratio.to_string()
    } else {
        format!("{ratio:e}")
    }
}

pub(crate) fn check_max_slowdown(
    ratio: f64,
    slower: fn(f64) -> String,
    judged: &str,
) -> Result<Option<String>, Failure> {
    if ratio.is_finite() && ratio >= 1.0 {
        if ratio <= WIDE_SLOWDOWN {
            return Ok(None);
        }
        let shown = shown_ratio(ratio);
        let warning = format!(
            "--max-slowdown {shown}: {} to be flagged, so the timing gate catches almost \
             nothing ({judged} are judged as ever)",
            slower(WIDE_SLOWDOWN)
        );
        crate::output::warn(&warning);
        return Ok(Some(warning));
    }
    let shown = if ratio == f64::INFINITY {
        "too large (it reads as infinity)".to_owned()
    } else {
        shown_ratio(ratio)
    };
    Err(Failure::new(format!(
        "--max-slowdown {shown}: must be a finite number of at least 1 (a time ratio)"
    )))
}

/// A baseline at `path` that can judge nothing here, and `why`: the gate fails (exit 2).
fn nothing_judged(path: &std::path::Path, why: &str) -> Failure {
    Failure::new(format!("baseline {}: {why}: nothing judged", path.shown())).hint(
        "save a baseline from this recording on this device (`--save-baseline`) and judge \
         its later replays",
    )
}

/// Replays `args.file`; the exit code is the report's (0 match, 1 regression) or 2.
///
/// # Errors
///
/// A [`Failure`] or [`TraceError`] before the replay, or one the replay met, in one line
/// with nothing else printed; a baseline that cannot be saved or added to once the replay
/// is done, after its report.
pub fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    // The JSON lists every `warning:` line standard error has (`warnings`).
    if args.report == "json" {
        crate::output::keep_warnings();
    }
    // `--backend`, else `HRX_BACKEND` as `record` reads it, else auto (the replay runtime
    // itself does not read the environment).
    let (source, text) = match &args.backend {
        Some(text) => ("--backend", text.clone()),
        None => match std::env::var("HRX_BACKEND") {
            Ok(text) if !text.is_empty() => ("HRX_BACKEND", text),
            _ => ("--backend", "auto".to_owned()),
        },
    };
    crate::workload::require_backend_name(&text)?;
    // The replay runtime reads no `HRX_FAULT`: it injects the fault the trace recorded, if
    // any. Said, not silently dropped (a fresh user's pass, session 59, wondered why it
    // did nothing).
    if let Ok(fault) = std::env::var("HRX_FAULT")
        && !fault.is_empty()
    {
        crate::output::note(format_args!(
            "HRX_FAULT={fault} is not applied by replay: it injects the fault the trace \
             recorded, if any (`hrx-trace info` names it); to test a fault, record with it"
        ));
    }
    // A trace still being written is read twice (where each chunk ends, then the chunks)
    // and grows in between: the replay would compare records of two different lengths.
    crate::record::refuse_being_recorded(&args.file, "replay", "replay needs a closed trace")?;
    let backend = if source == "HRX_BACKEND" {
        hrx::BackendChoice::from_variable(source, &text)
    } else {
        text.parse()
            .map_err(|e: hrx::Error| hrx::Error::Message(format!("{source}: {e}")))
    }
    .map_err(|e| Failure::new(e.to_string()))?;
    // A baseline that does not read is said before anything is replayed.
    // So is one saved from another recording: its header says which.
    let baseline = match &args.baseline {
        Some(path) => {
            let baseline =
                hrx_replay::Baseline::load(path).map_err(|e| Failure::new(e.to_string()))?;
            baseline
                .check_trace(&args.file)
                .map_err(|why| nothing_judged(path, &why))?;
            Some(baseline)
        }
        None => None,
    };
    // A gate: judged against a baseline by the default ratio where none is given.
    let max_slowdown = args
        .max_slowdown
        .or(baseline.is_some().then_some(BASELINE_MAX_SLOWDOWN));
    // A path `--save-baseline` or `--add-to-baseline` cannot write is said before the
    // replay, not after it; so is a baseline this replay cannot be added to.
    let saved_to = (args.save_baseline.as_ref().map(|p| ("--save-baseline", p))).or(args
        .add_to_baseline
        .as_ref()
        .map(|p| ("--add-to-baseline", p)));
    if let Some((flag, path)) = saved_to {
        hrx_replay::Baseline::check_save(path).map_err(|e| Failure::new(e.to_string()))?;
        // Judged against and then written over, a baseline would follow every build and
        // catch no slow drift.
        if let Some(judged) = &args.baseline
            && std::fs::canonicalize(judged).ok() == std::fs::canonicalize(path).ok()
        {
            return Err(Failure::new(format!(
                "{flag} {}: the baseline this replay is judged against; a baseline \
                 overwritten by each replay it judges would follow every build",
                path.shown()
            ))
            .hint("save to another file, and replace the judged one deliberately")
            .into());
        }
        if args.add_to_baseline.is_some()
            && std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0)
        {
            // Read again, locked, when the run is added (`Baseline::add_to`).
            let earlier =
                hrx_replay::Baseline::load(path).map_err(|e| Failure::new(e.to_string()))?;
            earlier.check_trace(&args.file).map_err(|why| {
                Failure::new(format!("--add-to-baseline {}: {why}", path.shown()))
            })?;
            // A run at another pace than its runs' is no run of it: said before a replay that
            // could not be added (it was refused after the whole replay).
            earlier.check_pace(args.pace == "captured").map_err(|why| {
                Failure::new(format!("--add-to-baseline {}: {why}", path.shown())).hint(
                    "add it at the baseline's pace (--pace), or save a baseline of this \
                     pace to another file (--save-baseline)",
                )
            })?;
        }
    }
    // A gate, or a baseline saved for one, needs the gate's samples (GATE_REPEAT).
    let repeat = args
        .repeat
        .unwrap_or(if max_slowdown.is_some() || saved_to.is_some() {
            GATE_REPEAT
        } else {
            1
        });
    if !(1..=MAX_REPEAT).contains(&repeat) {
        return Err(Failure::new(format!(
            "--repeat {repeat}: must be between 1 and {MAX_REPEAT}"
        ))
        .into());
    }
    if let Some(ratio) = args.max_slowdown {
        check_max_slowdown(
            ratio,
            |wide| format!("a region must replay over {wide} times slower than captured"),
            "outputs and statuses",
        )?;
    }
    if let Some(tolerance) = args.tolerance
        && !(tolerance.is_finite() && tolerance >= 0.0)
    {
        return Err(Failure::new(format!(
            "--tolerance {tolerance}: must be a finite number of at least 0 (a relative error)"
        ))
        .into());
    }
    // Interrupted (Ctrl-C, a CI runner's timeout), the replay says so in one line and exits
    // 128+N, as `export` and `trim` do (it exited 130 without a word): until its report is
    // printed whole, saying at each phase what it left (a report cut off on a slow pipe,
    // killed silently, was half a JSON document with nothing on standard error).
    // Said until the baseline is in place (its temporary file removed), or its save failed.
    let before_verdict = format!(
        "the replay of {} stopped before its verdict: nothing judged{}",
        args.file.shown(),
        match saved_to {
            Some(("--add-to-baseline", path)) => format!(", nothing added to {}", path.shown()),
            Some((_, path)) => format!(", no baseline saved to {}", path.shown()),
            None => String::new(),
        }
    );
    let interruptible = crate::partial::Interruptible::install_saying(&before_verdict);
    // Said once the verdict is made and the baseline saved or not (`; baseline saved to
    // b.json`), until the report's first byte is printed.
    let replay_of = format!("the replay of {}", args.file.shown());
    let before_report = |baseline: &str| crate::partial::before_report(&replay_of, baseline);
    let progress = crate::output::progress(0).with_style(crate::output::bar_style(
        "{spinner} replay {pos}/{len} submissions [{bar:30}] {rate}",
    ));
    let bar = progress.clone();
    let mut options = ReplayOptions::default()
        .backend(backend)
        .repeat(repeat)
        .warmup(args.warmup)
        .pace_captured(args.pace == "captured")
        .per_op(args.per_op)
        .isolated(args.isolated)
        .progress(move |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
    if let Some(tolerance) = args.tolerance {
        options = options.tolerance(tolerance);
    }
    if let Some(ratio) = max_slowdown {
        options = options.max_slowdown(ratio);
    }
    if let Some(until) = args.until {
        options = options.until(until);
    }
    for (entry, percent) in &args.inject_slowdown {
        options = options.slowdown(entry.clone(), *percent);
    }
    // Rows are handed out chunk by chunk: the text groups them (the report keeps the lines),
    // the JSON spools them to unnamed temporary files and prints them once the replay is
    // done, so that an error still prints nothing but its one line.
    let json = args.report == "json";
    let mut spool = if json { Some(Spool::new()?) } else { None };
    let report = hrx_replay::replay_file_reading(&args.file, &options, &mut |rows, checks| {
        if let Some(spool) = &mut spool {
            spool.add(rows, checks);
        }
    });
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
        let recorded_on = match &error {
            hrx_replay::ReplayError::TimingsNotComparable { recorded, .. } => {
                Some(recorded.clone())
            }
            _ => None,
        };
        let (lost, lossy) = match &error {
            hrx_replay::ReplayError::RecordsLost { lossy, .. } => (true, *lossy),
            _ => (false, false),
        };
        let incomplete = matches!(&error, hrx_replay::ReplayError::Incomplete { .. });
        let no_start = error.lacks_runtime_start();
        // A lost blob names the first submission that needs it: a trim before it replays.
        let blob_needed_by = match &error {
            hrx_replay::ReplayError::BlobMissing { submission, .. } => Some(*submission),
            _ => None,
        };
        let no_contents = matches!(&error, hrx_replay::ReplayError::ToleranceWithoutContents);
        let error = error.to_string();
        // The replay errors about the trace itself open with what this line already says;
        // lost records are said first of all (`cannot be exact: N records lost ...`).
        let why = error
            .strip_prefix("the trace cannot be replayed: ")
            .unwrap_or(&error);
        let failure = if lost {
            Failure::new(format!("{}: {why}", args.file.shown()))
        } else {
            Failure::new(format!("{}: cannot replay: {why}", args.file.shown()))
        };
        if unavailable {
            failure.hint(
                "`--backend sim` replays on the software device (the default, auto, falls back \
                 to it when no GPU is found)",
            )
        } else if let Some(recorded) = recorded_on {
            failure.hint(format!(
                "replay where {recorded} is (--backend {recorded}), or leave out {} to \
                 compare statuses and outputs only",
                if args.baseline.is_some() {
                    "--baseline (it judges timings)"
                } else {
                    "--max-slowdown"
                }
            ))
        } else if let Some(needed_by) = blob_needed_by {
            failure.hint(match needed_by {
                Some(n) if n <= 1 => format!(
                    "the first submission needs it: `hrx-trace trim {0} -o OUT --submissions \
                     N..` keeps the submissions from N on (N past 1), which replays where \
                     their own host writes replace these bytes",
                    args.file.for_shell()
                ),
                Some(n) => format!(
                    "the submissions before {n} do not need it: `hrx-trace trim {0} -o OUT \
                     --submissions ..{n}` keeps them, which replays (so does a \
                     stretch after {n} whose own host writes replace these bytes)",
                    args.file.for_shell()
                ),
                None => format!(
                    "`hrx-trace trim {} -o OUT --submissions A..B` keeps a stretch of \
                     submissions without it, which replays",
                    args.file.for_shell()
                ),
            })
        } else if no_start {
            // A trim keeps what the trace holds: it cannot bring the start back (a fresh-user
            // pass followed a trim hint here in a loop).
            failure.hint(format!(
                "`hrx-trace info {0}` says what is missing; no trim of it replays, as the \
                 runtime's start is lost with its block: record again",
                args.file.for_shell()
            ))
        } else if incomplete {
            failure.hint(format!(
                "`hrx-trace info {0}` says what is missing; `hrx-trace trim {0} -o OUT \
                 --submissions A..B` keeps a stretch of submissions without it, which replays",
                args.file.for_shell()
            ))
        } else if no_contents {
            failure.hint(
                "leave out --tolerance to compare digests exactly, or record again with \
                 HRX_TRACE_CONTENTS=1 in its environment",
            )
        } else if lossy {
            failure.hint(
                "record in the default lossless mode (HRX_TRACE_MODE unset or lossless) for a \
                 trace that replays whole",
            )
        } else if lost {
            failure.hint(
                "where a signal ended the program (`hrx-trace info` says how the capture \
                 ended), its last host writes were still being captured: end it another way \
                 (its own exit), or bound the capture before the signal (`record --duration D` \
                 or `--capture-range`)",
            )
        } else {
            failure
        }
    })?;
    let (mut report, reading) = report;
    // A baseline that can judge nothing here fails the gate (exit 2), never passes it.
    if let (Some(baseline), Some(path)) = (&baseline, &args.baseline) {
        baseline
            .judge(&mut report, &options)
            .map_err(|why| nothing_judged(path, &why))?;
    }
    // A baseline is a known-good build's: not saved from a replay whose outputs or
    // statuses diverged. One that cannot be saved or added to now (another device, a write
    // that fails) is the run's one error line, after its report: the replay's verdict is
    // not lost with it.
    let mut unsaved = None;
    // What became of the baseline, for the interruption's line while the report is printed.
    let mut baseline_said = match saved_to {
        Some(("--add-to-baseline", path)) => format!("; nothing added to {}", path.shown()),
        Some((_, path)) => format!("; no baseline saved to {}", path.shown()),
        None => String::new(),
    };
    if let Some((_, path)) = saved_to {
        if report.compared_nothing() {
            crate::output::warn(format_args!(
                "{}: baseline not saved: the replay compared nothing (no outcome and no output \
                 of the capture to check it against)",
                path.shown()
            ));
        } else if report.summary.divergences > 0 {
            crate::output::warn(format_args!(
                "{}: baseline not saved: the replay diverged from the capture ({})",
                path.shown(),
                hrx_analysis::units::plural(report.summary.divergences as u64, "divergence")
            ));
        } else {
            let run = hrx_replay::Baseline::of(&report);
            let saved_said = if args.add_to_baseline.is_some() {
                format!("; its run added to {}", path.shown())
            } else {
                format!("; baseline saved to {}", path.shown())
            };
            // Interrupted while it is written, its temporary file is removed and the earlier
            // baseline stays (a `.partial` was left, the process killed silently); its rename
            // runs with the signals blocked, after which the line says it was saved.
            let guarded = Guarded {
                interruptible: &interruptible,
                unsaved: &before_verdict,
                saved: before_report(&saved_said),
            };
            // Added to the file as it is now, not as it was read before the replay: another
            // replay may have added its run since (`Baseline::add_to` locks it).
            let baseline = if args.add_to_baseline.is_some() {
                hrx_replay::Baseline::add_to_with(path, run, &guarded)
            } else {
                run.save_with(path, &guarded).map(|()| run)
            };
            match baseline {
                Ok(baseline) => {
                    baseline_said = saved_said;
                    say_saved(path, &baseline, &report, max_slowdown);
                }
                Err(e) => unsaved = Some(Failure::new(e.to_string())),
            }
        }
    }
    // From here on what is cut short is the report (and its exit code, the verdict's).
    interruptible.say(&before_report(&baseline_said));
    // What reading the file found, as every reading verb warns of it (after the replay, so
    // that an error stays one line; before the report, which a closed standard output may
    // cut short).
    crate::failure::warn_partial(
        &args.file,
        &reading.warnings,
        Some(&reading.recovery),
        "the replay compares only what was recovered",
    );
    // After the replay, so that an error stays one line.
    if max_slowdown.is_some() && repeat < 2 {
        crate::output::note(format_args!(
            "{} judged one replay's times here, without the replay's own run-to-run change \
             (which takes --repeat 2 or more; the default with --max-slowdown or --baseline is \
             {GATE_REPEAT})",
            if args.max_slowdown.is_some() {
                "--max-slowdown"
            } else {
                "--baseline"
            }
        ));
    }
    // A count past every runtime's last submission cut nothing: the replay is whole and
    // its verdict stands, but the number was likely meant for another trace (a warning,
    // kept by `-q`, not an error: a script passing one `--until` to traces of several
    // lengths still gets its verdicts). A trace without submissions is said below.
    // Numbered as in the whole recording, as `--until` numbers them (it said "it holds 4"
    // of a range holding 4..=7, the count, not the number).
    if let Some(until) = args.until
        && let Some(last) = (report.trace.runtimes.iter())
            .map(|r| r.last_submission)
            .max()
        && last > 0
        && until > last
    {
        crate::output::warn(format_args!(
            "--until {until} is past the trace's last submission ({}): all were replayed",
            if report.trace.runtimes.len() == 1 {
                format!("submission {last}")
            } else {
                format!("its runtimes' last is submission {last}")
            }
        ));
    }
    // A gate's own test that it missed: a slowdown injected on purpose and nothing judged
    // slow means this gate would pass such a build here (a fresh user's doubled kernel read
    // 1.46x under a loaded host's baseline floor, SAME, with no word).
    let missed = missed_injections(&args.inject_slowdown, &report);
    let all_missed = report.summary.slow == 0 && report.summary.baseline_slow == 0;
    if max_slowdown.is_some() && !all_missed && !missed.is_empty() {
        // Some caught, some not: the gate fails this run, but would pass a build slowed by
        // one of these alone (a break-it pass: nothing was said of the one missed).
        let missed: Vec<String> = (missed.iter())
            .map(|(entry, percent)| format!("{entry} +{percent}%"))
            .collect();
        crate::output::warn(format_args!(
            "the slowdown injected on purpose on {} was not caught: no row of it was judged \
             slow (neither its operation row nor a region row naming it alone), so this gate \
             would pass a build slowed there alone; the rows judged slow are others'",
            missed.join(", ")
        ));
    }
    if max_slowdown.is_some()
        && !args.inject_slowdown.is_empty()
        && all_missed
        && report.exit_code() == 0
    {
        let injected: Vec<String> = (args.inject_slowdown.iter())
            .map(|(entry, percent)| format!("{entry} +{percent}%"))
            .collect();
        // Point at what says why (a fresh user's doubled kernel read 3.45x [2.06x..4.94x]
        // at 1.5, cleared by the replay's own 2.38x run-to-run change, and the `not judged:`
        // line this pointed at did not count it).
        crate::output::warn(format_args!(
            "the slowdown injected on purpose ({}) was not caught: nothing was judged slow \
             and the verdict passes, so this gate would pass such a build here ({})",
            injected.join(", "),
            why_not_caught(&args.inject_slowdown, &report)
        ));
    }
    // A match of nothing is no match: said on standard error as well as in the report.
    if let Some(what) = &report.nothing_compared {
        crate::output::warn(format_args!("{}: {what}", args.file.shown()));
    }
    // Written, not printed: `print!` would panic on a closed standard output (`| head`).
    let written = interruptible.print_report(&replay_of, &baseline_said, |mut out| match spool {
        Some(spool) => spool.write(&mut out, &report),
        None => write!(out, "{}", paint_verdict(&report.to_text())),
    });
    interruptible.finished();
    let code = report.exit_code().clamp(0, 255) as u8;
    let verdict = crate::failure::verdict(code, written, &format!("the report of {replay_of}"));
    // After the report, the run's last line and its exit code (2).
    match unsaved {
        Some(failure) => verdict.and(Err(failure.into())),
        None => verdict,
    }
}

/// A baseline's temporary file named to the interrupt handler, which removes it and says
/// `unsaved`, and its rename run with the signals blocked, after which an interruption says
/// `saved` ([`crate::partial::Interruptible::commit_saying`]).
struct Guarded<'a> {
    interruptible: &'a crate::partial::Interruptible,
    unsaved: &'a str,
    saved: String,
}

impl hrx_replay::Replacer for Guarded<'_> {
    fn create_beside(
        &self,
        target: &std::path::Path,
    ) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
        self.interruptible
            .create_beside_saying(target, self.unsaved)
    }

    fn waiting(&self, dir: &std::path::Path) {
        crate::output::note(format_args!(
            "waiting for another process's lock on {} to write the baseline",
            dir.shown()
        ));
    }

    fn commit(&self, rename: &mut dyn FnMut() -> std::io::Result<()>) -> std::io::Result<()> {
        self.interruptible.commit_saying(rename, |renamed| {
            Some(if renamed.is_ok() {
                self.saved.clone()
            } else {
                self.unsaved.to_owned()
            })
        })
    }
}

/// The slowdowns injected on purpose (`--inject-slowdown ENTRY=PERCENT`) that no row judged
/// slow (against the capture or a baseline) names: the operation rows of kernel ENTRY where
/// the replay timed operations (`--per-op`), else the region rows whose label lists ENTRY
/// among its kernels (`native graph: hrx_gray, hrx_blur_h, ...`).
fn missed_injections<'a>(
    injected: &'a [(String, u32)],
    report: &hrx_replay::Report,
) -> Vec<&'a (String, u32)> {
    let slow = |regression: bool, baseline: Option<&hrx_replay::BaselineMatch>| {
        regression || baseline.is_some_and(|b| b.regression)
    };
    let ops: Vec<(&str, bool)> = (report.op_timing.iter())
        .map(|row| {
            (
                row.label.as_str(),
                slow(row.regression, row.baseline.as_ref()),
            )
        })
        .collect();
    let regions: Vec<(&str, bool)> = (report.timing.iter())
        .map(|row| {
            (
                row.label.as_str(),
                slow(row.regression, row.baseline.as_ref()),
            )
        })
        .collect();
    missed_among(injected, &ops, &regions)
}

/// One judgement of a timing row, for [`why_not_caught_of`]: its ratio, interval, whether it
/// had too few samples, and why it was not slow past the maximum ([`hrx_replay::NotSlow`]).
type Judged = (
    Option<f64>,
    Option<(f64, f64)>,
    bool,
    Option<hrx_replay::NotSlow>,
);

/// A row's judgements for [`why_not_caught`]: against the capture (where the row has captured
/// times) and against the baseline (where it has one).
fn push_judged(
    rows: &mut Vec<(String, &str, Judged)>,
    what: String,
    captured: Option<Judged>,
    baseline: Option<&hrx_replay::BaselineMatch>,
) {
    if let Some(judged) = captured {
        rows.push((what.clone(), "capture", judged));
    }
    if let Some(b) = baseline {
        rows.push((
            what,
            "baseline",
            (b.ratio, b.interval, b.too_few, b.not_slow),
        ));
    }
}

/// Why the rows of a missed injection were not slow, for its warning: each injected
/// operation's own rows, their ratios and why they were not slow (`hrx_sobel (op 4) against
/// the baseline: 3.45x [2.06x..4.94x], not slow: within the replay's own 2.38x run-to-run
/// change`), how many rows past `--max-slowdown` a rule cleared (each saying why at the
/// row), and where rows not judged at all are counted.
fn why_not_caught(injected: &[(String, u32)], report: &hrx_replay::Report) -> String {
    let mut rows: Vec<(String, &str, Judged)> = Vec::new();
    for (entry, _) in injected {
        let before = rows.len();
        for row in report.op_timing.iter().filter(|row| row.label == *entry) {
            let judged = (row.ratio, row.interval, row.too_few, row.not_slow);
            push_judged(
                &mut rows,
                format!("{} (op {})", row.label, row.node),
                row.captured.is_some().then_some(judged),
                row.baseline.as_ref(),
            );
        }
        if rows.len() > before {
            continue;
        }
        // No operation row (no `--per-op`): the region rows naming it, which the gate judged
        // (a replay of the main job said why of no row at all).
        let names = |label: &str| {
            label
                .split_once(": ")
                .is_some_and(|(_, kernels)| kernels.split(", ").any(|k| k == entry))
        };
        for row in report.timing.iter().filter(|row| names(&row.label)) {
            let judged = (row.ratio, row.interval, row.too_few, row.not_slow);
            push_judged(
                &mut rows,
                format!(
                    "{entry}'s region (graph {}, region {})",
                    row.graph, row.region
                ),
                row.captured.is_some().then_some(judged),
                row.baseline.as_ref(),
            );
        }
    }
    let cleared = (report.timing.iter())
        .map(|t| (t.not_slow, t.baseline))
        .chain(report.op_timing.iter().map(|t| (t.not_slow, t.baseline)))
        .map(|(own, baseline)| {
            usize::from(own.is_some()) + usize::from(baseline.is_some_and(|b| b.not_slow.is_some()))
        })
        .sum::<usize>();
    why_not_caught_of(report.replay.max_slowdown.unwrap_or(1.0), &rows, cleared)
}

/// [`why_not_caught`] over the injected operations' judged rows `(label, node, against what,
/// judgement)` and the count of rows a rule cleared past `max`.
fn why_not_caught_of(max: f64, rows: &[(String, &str, Judged)], cleared: usize) -> String {
    let mut why: Vec<String> = (rows.iter())
        .filter_map(|(what, against, (ratio, interval, too_few, not_slow))| {
            let (ratio, interval, too_few, not_slow) = (*ratio, *interval, *too_few, *not_slow);
            let reason = match (not_slow, interval) {
                (Some(why), _) => format!("not slow: {}", why.describe()),
                (None, _) if too_few => "too few to judge".to_owned(),
                (None, Some((low, _))) if low <= max => format!(
                    "its interval's low end not past --max-slowdown {}",
                    hrx_analysis::units::ratio(max)
                ),
                (None, _) => "not judged".to_owned(),
            };
            Some(format!(
                "{what} against the {against}: {}, {reason}",
                hrx_analysis::units::ratio_with_interval(ratio?, interval)
            ))
        })
        .collect();
    why.push(format!(
        "{} past --max-slowdown but cleared by the replay's own run-to-run change, a \
         baseline's floor or the timing floor, each saying which at the row (`not slow: ...`)",
        hrx_analysis::units::plural(cleared as u64, "row")
    ));
    why.push(
        "rows too few or too spread to judge are counted on the report's `not judged:` line".into(),
    );
    why.join("; ")
}

/// [`missed_injections`] over `(label, judged slow)` of the operation and region rows.
fn missed_among<'a>(
    injected: &'a [(String, u32)],
    ops: &[(&str, bool)],
    regions: &[(&str, bool)],
) -> Vec<&'a (String, u32)> {
    let names = |label: &str, entry: &str| {
        label
            .split_once(": ")
            .is_some_and(|(_, kernels)| kernels.split(", ").any(|k| k == entry))
    };
    injected
        .iter()
        .filter(|(entry, _)| {
            let mut own = ops.iter().filter(|(label, _)| label == entry).peekable();
            let by_region = |alone: bool| {
                (regions.iter())
                    .filter(|(label, _)| names(label, entry))
                    // With operation rows, a region row catches an injection only where it
                    // names no other: else the other's slowdown may be what it caught.
                    .filter(|(label, _)| {
                        !alone
                            || !injected
                                .iter()
                                .any(|(other, _)| other != entry && names(label, other))
                    })
                    .any(|&(_, slow)| slow)
            };
            let caught = if own.peek().is_some() {
                // Its own operation row, else a slow region row of it alone: that row fails
                // the gate for this slowdown whatever the operation row's interval (a fresh
                // user's gate exited 1 on the region row of the one kernel injected, and was
                // told it "would pass" such a build).
                own.any(|&(_, slow)| slow) || by_region(true)
            } else {
                by_region(false)
            };
            !caught
        })
        .collect()
}

/// Says what a saved or added baseline now holds, and what makes it a poor one (a replay
/// without its recording's name, on a loaded host; runs further apart than the gate).
fn say_saved(
    path: &std::path::Path,
    baseline: &hrx_replay::Baseline,
    report: &hrx_replay::Report,
    max_slowdown: Option<f64>,
) {
    // Without the trace's session start the baseline names no recording, and the
    // check that it judges its own recording's replays cannot be made: said.
    if report.trace.recorded.is_none() {
        crate::output::warn(format_args!(
            "{}: saved without naming its recording (the trace's session start is \
             lost): it cannot tell a replay of another recording from its own",
            path.shown()
        ));
    }
    // A baseline of loaded times makes later gates less sensitive: saved, but said.
    if report.replay.host.loaded() {
        crate::output::warn(format_args!(
            "{}: saved from a replay on a loaded host, its load {}: later replays are judged \
             against slower times than a quiet machine's; save it again on a quiet one",
            path.shown(),
            report.replay.host.describe()
        ));
    }
    if baseline.runs == 1 {
        crate::output::note(format_args!(
            "baseline saved to {} ({} timing rows)",
            path.shown(),
            baseline.rows.len()
        ));
    } else {
        // The row whose runs lie furthest apart: the floor it now sets.
        let widest =
            (baseline.rows.iter()).max_by(|a, b| a.between_runs().total_cmp(&b.between_runs()));
        let said = format!(
            "baseline {} now holds {} runs ({} timing rows){}",
            path.shown(),
            baseline.runs,
            baseline.rows.len(),
            widest.map_or(String::new(), |row| format!(
                "; its runs' medians lie at most {} apart ({} {}: {})",
                hrx_analysis::units::ratio(row.between_runs()),
                row.kind,
                row.index,
                row.label
            ))
        );
        // A floor past the gate's ratio: that row's slowdowns under it go uncaught.
        let gate = max_slowdown.unwrap_or(BASELINE_MAX_SLOWDOWN);
        if widest.is_some_and(|row| row.between_runs() > gate) {
            crate::output::warn(format_args!(
                "{said}: past --max-slowdown {} there, so a slowdown under it is not \
                 caught; add the runs again on a quiet machine",
                hrx_analysis::units::ratio(gate)
            ));
        } else {
            crate::output::note(format_args!("{said}"));
        }
    }
}

/// `--report json`'s submission rows and output checks, spooled as JSON array elements.
struct Spool {
    submissions: std::io::BufWriter<std::fs::File>,
    outputs: std::io::BufWriter<std::fs::File>,
    counts: (u64, u64),
    error: Option<std::io::Error>,
}

impl Spool {
    fn new() -> anyhow::Result<Spool> {
        let file = || {
            tempfile::tempfile()
                .map(std::io::BufWriter::new)
                .map_err(|e| {
                    let dir = std::env::temp_dir();
                    Failure::new(format!(
                        "cannot create a temporary file for the JSON report in {}: {e}",
                        dir.shown()
                    ))
                    .hint("set TMPDIR to a directory that exists and can be written")
                })
        };
        Ok(Spool {
            submissions: file()?,
            outputs: file()?,
            counts: (0, 0),
            error: None,
        })
    }

    fn add(&mut self, rows: &[hrx_replay::SubmissionRow], checks: &[hrx_replay::OutputCheck]) {
        fn element(
            out: &mut impl Write,
            count: &mut u64,
            value: serde_json::Result<String>,
        ) -> std::io::Result<()> {
            out.write_all(if *count == 0 { b"\n    " } else { b",\n    " })?;
            out.write_all(value?.as_bytes())?;
            *count += 1;
            Ok(())
        }
        if self.error.is_some() {
            return;
        }
        let result = rows
            .iter()
            .try_for_each(|r| {
                element(
                    &mut self.submissions,
                    &mut self.counts.0,
                    serde_json::to_string(r),
                )
            })
            .and_then(|()| {
                checks.iter().try_for_each(|c| {
                    element(
                        &mut self.outputs,
                        &mut self.counts.1,
                        serde_json::to_string(c),
                    )
                })
            });
        self.error = result.err();
    }

    /// The report as one JSON object: the spooled arrays, then every other field, and
    /// `warnings`: the `warning:` lines printed so far ([`crate::output::kept_warnings`]).
    fn write(self, out: &mut impl Write, report: &hrx_replay::Report) -> std::io::Result<()> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let copy = |file: std::io::BufWriter<std::fs::File>, out: &mut dyn Write| {
            let mut file = file.into_inner().map_err(|e| e.into_error())?;
            use std::io::Seek;
            file.seek(std::io::SeekFrom::Start(0))?;
            std::io::copy(&mut file, out).map(drop)
        };
        let mut rest = report.json_value();
        if let Some(fields) = rest.as_object_mut() {
            fields.remove("submissions");
            fields.remove("outputs");
            // What standard error warned, each line, as the other verbs' JSON lists it.
            fields.insert("warnings".into(), crate::output::kept_warnings().into());
        }
        out.write_all(b"{\n  \"submissions\": [")?;
        copy(self.submissions, out)?;
        out.write_all(b"\n  ],\n  \"outputs\": [")?;
        copy(self.outputs, out)?;
        out.write_all(b"\n  ]")?;
        if let Some(fields) = rest.as_object() {
            for (key, value) in fields {
                write!(
                    out,
                    ",\n  {}: {}",
                    serde_json::to_string(key)?,
                    serde_json::to_string_pretty(value)?
                )?;
            }
        }
        out.write_all(b"\n}\n")
    }
}

/// The text report with its verdict word coloured (when standard output is coloured).
fn paint_verdict(text: &str) -> String {
    let Some(at) = text.find("verdict: ") else {
        return text.to_owned();
    };
    let start = at + "verdict: ".len();
    let end = text[start..].find(' ').map_or(text.len(), |n| start + n);
    let word = &text[start..end];
    format!(
        "{}{}{}",
        &text[..start],
        crate::output::paint_out(word, crate::output::verdict_tone(word)),
        &text[end..]
    )
}

#[cfg(test)]
mod tests {
    /// An injection is caught by its own operation row where the replay timed operations,
    /// or by a region row listing its kernel (with operation rows, one listing no other
    /// injection); a slow row of another kernel catches nothing of it.
    /// The warning of an injection not caught says why at its own rows, with the figure
    /// that decided, and points at the rows a rule cleared: a fresh user's doubled kernel
    /// read `3.45x [2.06x..4.94x]` at 1.5, cleared by the replay's own 2.38x run-to-run
    /// change, and the warning pointed at a `not judged:` line that did not count it.
    #[test]
    fn a_missed_injection_says_why_its_rows_were_not_slow() {
        let within = hrx_replay::NotSlow::RunToRun { ratio: 2.378 };
        let rows = [
            (
                "hrx_sobel (op 4)".to_owned(),
                "capture",
                (Some(0.7), Some((0.6, 0.8)), false, None),
            ),
            (
                "hrx_sobel (op 4)".to_owned(),
                "baseline",
                (Some(3.45), Some((2.06, 4.94)), false, Some(within)),
            ),
        ];
        let why = super::why_not_caught_of(1.5, &rows, 1);
        assert_eq!(
            why,
            "hrx_sobel (op 4) against the capture: 0.70x [0.60x..0.80x], its interval's low \
             end not past --max-slowdown 1.50x; hrx_sobel (op 4) against the baseline: 3.45x \
             [2.06x..4.94x], not slow: within the replay's own 2.38x run-to-run change; 1 row \
             past --max-slowdown but cleared by the replay's own run-to-run change, a \
             baseline's floor or the timing floor, each saying which at the row (`not slow: \
             ...`); rows too few or too spread to judge are counted on the report's `not \
             judged:` line"
        );
        let few = [(
            "hrx_sobel (op 4)".to_owned(),
            "baseline",
            (Some(2.0), None, true, None),
        )];
        assert!(
            super::why_not_caught_of(1.5, &few, 0).starts_with(
                "hrx_sobel (op 4) against the baseline: 2.00x, too few to judge; 0 rows"
            )
        );
    }

    #[test]
    fn an_injection_is_caught_only_by_a_slow_row_of_its_own_kernel() {
        let injected = [("hrx_blur_h".to_owned(), 40), ("hrx_sobel".to_owned(), 5)];
        let graph = "GPU Compute, native graph: hrx_gray, hrx_blur_h, hrx_sobel";
        let names = |missed: Vec<&(String, u32)>| -> Vec<String> {
            missed.into_iter().map(|(entry, _)| entry.clone()).collect()
        };
        // Operation rows decide: the blur's is slow, the Sobel's is not, though their
        // region is.
        let ops = [
            ("hrx_gray", false),
            ("hrx_blur_h", true),
            ("hrx_sobel", false),
        ];
        let regions = [(graph, true)];
        assert_eq!(
            names(super::missed_among(&injected, &ops, &regions)),
            ["hrx_sobel"]
        );
        // One injection alone: the slow region row that lists it catches it, though its
        // operation row was not judged slow (that region row fails the gate).
        assert!(super::missed_among(&injected[1..], &ops, &regions).is_empty());
        // Without operation rows, the slow region that lists both catches both.
        assert!(super::missed_among(&injected, &[], &regions).is_empty());
        // A slow region that lists neither catches neither; a kernel's name inside another
        // one's ("hrx_blur_h" in "hrx_blur_h2") is no match.
        let other = [
            ("GPU Compute, native graph: hrx_blur_h2", true),
            (graph, false),
        ];
        assert_eq!(
            names(super::missed_among(&injected, &[], &other)),
            ["hrx_blur_h", "hrx_sobel"]
        );
    }
}
