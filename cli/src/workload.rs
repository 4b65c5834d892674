//! `hrx-trace record --workload NAME`: a built-in workload ([`hrx_workloads`]) run in this
//! process on a runtime made with `RuntimeOptions::default().backend(B).trace(FILE)`
//! (plus `.fault(SPEC)`), then the trace is closed and its summary printed.
//!
//! - `pipeline`: edge detection over photographs ([`crate::photos`]), several frames in
//!   flight. A failure is an error (exit 2), printed after the summary.
//! - `hazards`: [`hrx_workloads::run_hazards`], whose final buffers are checked against a
//!   sequential CPU computation.
//! - `faults`: the pipeline with a fault injected mid-run ([`DEFAULT_FAULT`] unless
//!   `--fault` is given; at least 4 frames). Its purpose is to fail: it succeeds (exit 0)
//!   when the run failed and the injected fault is what fired, so that the trace holds the
//!   failure, the quarantine and the poisoned buffers. A run the fault never hit is an error.
//!
//! Fault injection is a software-device feature: with a fault, `auto` picks the software
//! device and `--backend cuda` is refused by the runtime. So on `--backend cuda` (or `hip`)
//! without `--fault`, `faults` runs a real failing kernel instead: the second frame's graph
//! dispatches `hrx_fail` after the Sobel kernel ([`PipelineOptions::faulting_frame`]), an
//! out-of-bounds write that the device reports as an illegal address (a device loss).

use crate::args::RecordArgs;
use crate::failure::Failure;
use crate::photos::Photos;
use crate::record::{check_output, print_summary};
use anyhow::Context;
use hrx::{BackendChoice, FaultSpec, FaultTarget, Runtime, RuntimeOptions};
use hrx_analysis::units::plural;
use hrx_capture::ShowPath;
use hrx_workloads::{Pipeline, PipelineOptions};
use std::process::ExitCode;

/// The fault `faults` injects unless `--fault` is given: the second Sobel dispatch loses
/// the device, so the first frame completes and the second fails.
pub const DEFAULT_FAULT: &str = "kernel=hrx_sobel#2:device-lost";

/// The workload names, as `--workload` takes them.
pub const NAMES: [&str; 3] = ["pipeline", "hazards", "faults"];

/// `--max-width`'s default, in pixels.
const DEFAULT_MAX_WIDTH: u32 = 1280;

/// Fewest frames `faults` runs, so that the fault lands mid-run.
const FAULTS_MIN_FRAMES: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Pipeline,
    Hazards,
    Faults,
}

/// What a workload run did, printed above the summary as `workload`, `device` and
/// `outcome` lines.
struct Outcome {
    /// What ran.
    workload: String,
    /// Backend and device.
    device: String,
    /// How it ended.
    outcome: String,
    /// Why the run failed unexpectedly (reported after the summary).
    error: Option<anyhow::Error>,
    /// Whether a signal stopped the run before its last frame.
    stopped: bool,
}

/// Runs the workload `name` as `args` describe and prints its report and trace summary.
///
/// # Errors
///
/// [`Failure`] for an unknown workload or bad options; the runtime's or the workload's
/// error when the run failed (after the summary of what was recorded).
pub fn run(name: &str, args: &RecordArgs, host: hrx_replay::HostLoad) -> anyhow::Result<ExitCode> {
    let workload = match name {
        "pipeline" => Workload::Pipeline,
        "hazards" => Workload::Hazards,
        "faults" => Workload::Faults,
        other => {
            return Err(Failure::new(format!(
                "unknown workload {other:?} (expected one of: {})",
                NAMES.join(", ")
            ))
            .into());
        }
    };
    let backend = match &args.backend {
        Some(text) => require_backend_name(text)?
            .parse::<BackendChoice>()
            .map_err(|e| Failure::new(format!("--backend: {e}")))?,
        None => BackendChoice::Auto,
    };
    // `--fault`, else `HRX_FAULT` as the runtime reads it: named here so that the report
    // (and `faults`, which otherwise injects its own) knows the fault it runs with.
    let given = match &args.fault {
        Some(text) => Some(("--fault", text.clone())),
        None => std::env::var("HRX_FAULT")
            .ok()
            .filter(|text| !text.is_empty())
            .map(|text| ("HRX_FAULT", text)),
    };
    let fault = match (given, workload) {
        (Some((source, text)), _) => {
            // The flag's error as its parser words it, the variable's in every variable's
            // shape (`HRX_FAULT: expected ..., got "x": why`).
            let spec = if source == "HRX_FAULT" {
                FaultSpec::from_variable(source, &text).map_err(|e| Failure::new(e.to_string()))?
            } else {
                text.parse::<FaultSpec>()
                    .map_err(|e| Failure::new(format!("{source}: {e}")))?
            };
            // Each workload's kernels are known before it runs: another name could never
            // fire, and would be found so only after the whole run (a built-in kernel the
            // workload never dispatches, `hrx_saxpy`, was taken, then "never fired").
            let runs = match workload {
                Workload::Hazards => hrx_workloads::hazards::kernel_entries(),
                Workload::Pipeline | Workload::Faults => hrx_workloads::pipeline::kernel_entries(),
            };
            if let FaultTarget::Kernel { name, .. } = &spec.target
                && !runs.contains(name)
            {
                let workload = self::name(workload);
                // The name quoted: `hrx_sobel ` read as a kernel its hint lists (a break-it
                // pass).
                return Err(Failure::new(format!(
                    "{source}: kernel {name:?} names no kernel the {workload} workload runs"
                ))
                .hint(format!("the {workload} workload runs {}", runs.join(", ")))
                .into());
            }
            Some(spec)
        }
        // Hardware backends fail for real (see the module docs).
        (None, Workload::Faults) if hardware(backend) => None,
        (None, Workload::Faults) => Some(DEFAULT_FAULT.parse::<FaultSpec>()?),
        (None, _) => None,
    };
    let slots = RuntimeOptions::default().capacity;
    if let Some(n) = args.in_flight.filter(|n| !(1..=slots).contains(n)) {
        return Err(Failure::new(format!(
            "--in-flight must be between 1 and {slots} (the runtime's submission slots), not {n}"
        ))
        .into());
    }
    if args.frames == Some(0) {
        return Err(Failure::new("--frames must be at least 1").into());
    }
    // `hazards` has no photos, frames or frames in flight: an option it would ignore is
    // refused, as a mistake (it ignored `--in-flight` and `--max-width` silently, and `diff`
    // then told two identical runs apart by their arguments: a break-it pass).
    if workload == Workload::Hazards {
        let given = [
            ("--input", args.input.is_some()),
            ("--frames", args.frames.is_some()),
            ("--max-width", args.max_width.is_some()),
            ("--in-flight", args.in_flight.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(Failure::new(format!(
                "{flag} applies to the pipeline and faults workloads, not hazards"
            ))
            .into());
        }
    }
    // Refused with the other options, before the photographs are read: a failure to read
    // them prints `--json`'s line.
    if args.max_width == Some(0) {
        return Err(Failure::new("--max-width must be at least 1").into());
    }
    let photos = match workload {
        Workload::Hazards => None,
        _ => match Photos::open(
            args.input.as_deref(),
            args.max_width.unwrap_or(DEFAULT_MAX_WIDTH),
        ) {
            Ok(photos) => Some(photos),
            Err(error) => return Err(not_started(workload, args, error)?),
        },
    };
    // Expanded here (`%p` is this process), then passed literally (`%` doubled).
    crate::record::warn_unknown_patterns(&args.output);
    let output = hrx_capture::expand_path(&args.output);
    // Said once the runtime created the trace there: a runtime that cannot start (a bad
    // `HRX_SIM_MEMORY`, no device) leaves the earlier trace as it was (it said "it is
    // replaced", then "was written and closed", of a file never touched).
    let earlier = check_output(&args.output, &output)?;
    let earlier_inode = earlier
        .then(|| crate::record::file_inode(&output))
        .flatten();
    // One recording at a time into one file, as `record -- PROGRAM` claims its own
    // (`crate::traces::claim`): a `record` started in the same instant to the same name is
    // refused the same way, whichever of the two it is. Withdrawn once the trace is closed
    // (a later recording then replaces it, as `-o` does, and the check after the read says
    // so); a name with `%p` or `%n` is each process's own.
    let claimed = if crate::traces::per_process(&args.output) {
        None
    } else {
        crate::traces::claim(None, &output)?
    };
    // The runtime expands the patterns itself (this process's `%p`; `%n` the first number
    // free when it creates the file, so that two workloads started together take two):
    // `installed_path` says which file it wrote.
    let trace_path = args.output.clone();
    let range = crate::record::capture_range(args)?;
    // Refused before anything runs: a built-in workload never calls `hrx::trace::start()`,
    // so an `api` range would keep no submission (it ran every frame, then warned).
    // `HRX_TRACE_RANGE=api` from the environment alike (the runtime reads it when no
    // option gives a range; a break-it pass: it kept nothing, and said nothing).
    let from_env = range.is_none()
        && matches!(
            hrx_capture::CaptureRange::from_env(),
            Ok(Some(hrx_capture::CaptureRange::Api))
        );
    if range == Some(hrx_capture::CaptureRange::Api) || from_env {
        return Err(Failure::new(format!(
            "{}: the built-in workloads never call hrx::trace::start(), so it would keep \
             nothing; use submissions:A..B or time:S..E",
            if from_env {
                "HRX_TRACE_RANGE=api"
            } else {
                "--capture-range api"
            }
        ))
        .into());
    }
    let mut options = RuntimeOptions::default()
        .backend(backend)
        .trace(trace_path)
        .kernel_times(args.kernel_times);
    if args.no_kernel_times {
        options = options.builtin_kernel_times(false);
    }
    if let Some(range) = range {
        options = options.trace_range(range);
    }
    if let Some(fault) = fault.clone() {
        options = options.fault(fault);
    }
    // Held through the trace's close, then let go: a signal while the summary is printed
    // ends hrx-trace by its default action, the trace closed by then. Held longer, every
    // signal was folded into a stop that had nothing left to stop, and a summary stuck in
    // a write nobody read could not be interrupted (a break-it pass).
    let stop = stop::install();
    let outcome = execute(workload, options, photos, args);
    // Closes the trace even when the run failed: the trace of a failure is the point.
    let closed = hrx::close_trace();
    drop(stop);
    // The claim held until the trace is closed: the lock a claim stands by (session 56)
    // was let go at once, and the claim with it.
    drop(claimed);
    // The file this run's runtime created, if it created one.
    let installed = hrx_capture::installed_path();
    if earlier && installed.as_deref() == Some(output.as_path()) {
        crate::record::note_replaced(&output, earlier_inode);
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            // A failure before the run could report (building the pipeline, opening the
            // device): the trace was written and closed, but no record holds this error.
            // None when the runtime never created it: an earlier trace there is untouched.
            if let Some(output) = installed.filter(|_| closed.is_ok())
                && output.is_file()
            {
                crate::output::note(format_args!(
                    "{} was written and closed: it holds what ran before the error below, not \
                     the error itself",
                    output.shown()
                ));
            }
            return Err(error);
        }
    };

    // Standard output failing (a full disk) is said after the summary's checks, beside the
    // run's own failure, not instead of it (a fresh user's pass: a bare `No space left on
    // device` hid the workload's error).
    let mut stdout_failed: Option<std::io::Error> = None;
    if !args.json && !crate::output::quiet() {
        use std::io::Write;
        // A closed pipe is said and the run goes on to its summary, its notes and its exit
        // code, as the summary's own lines do: returning here turned a failed run read by
        // `| true` into exit 0 with nothing said (a fresh user's pass). A full disk is the
        // error it is.
        let mut out = std::io::stdout().lock();
        let written = [
            ("workload", &outcome.workload),
            ("device", &outcome.device),
            ("outcome", &outcome.outcome),
        ]
        .iter()
        .try_for_each(|(key, value)| {
            writeln!(out, "{key:<12} {}", crate::failure::one_line(value))
        });
        if let Err(error) = crate::record::pipe_closed_is_ok(written.and_then(|()| out.flush())) {
            stdout_failed.get_or_insert(error);
        }
    }
    // The file the runtime wrote: `-o`'s, or `NAME.PID.EXT` beside it when another process
    // (a concurrent recording to the same name) held that one.
    let output = hrx_capture::installed_path().unwrap_or(output);
    // Renamed while it was recorded: whole under its new name, which its writer found (it
    // said "cannot open it ... record one", exit 2, of a trace closed cleanly: a break-it
    // pass). Deleted: lost, said without a hint to record one; whatever the path names now
    // (a file moved over it) is not this run's trace.
    let gone = hrx_capture::deleted(&output);
    let output = match hrx_capture::moved_to(&output) {
        Some(now) => {
            crate::output::note(format_args!(
                "the summary below is of {}, the trace's name now",
                now.shown()
            ));
            now
        }
        None => output,
    };
    if (gone || !output.exists()) && closed.is_ok() {
        return Err(Failure::new(format!(
            "the trace {} is lost: it was deleted (or unlinked from that name) while it was \
             recorded",
            output.shown()
        ))
        .into());
    }
    // A trace that could not be written whole (a full disk) is summarised as far as it was
    // written, after the report, and its error comes last: the summary (and `--json`'s line)
    // was missing, though the trace holds what ran.
    let closed = closed.context("the trace is incomplete");
    // Replaced since its close by another recording's trace (`-o` replaces a closed one):
    // lost to this run, never summarised as its own, as `record -- PROGRAM` checks its
    // traces (asked of the first records first, a foreign trace not read whole, then of the
    // read summary: the file may be replaced between the two).
    let this_process = vec![std::process::id()];
    let replaced = |pid: Option<u32>| crate::traces::replaced_by(pid, Some(&this_process));
    if let Some(other) = replaced(crate::traces::session_pid(&output)) {
        return Err(replaced_error(&output, other).into());
    }
    let stats = match crate::info::read(&output) {
        Ok(stats) => stats,
        Err(error) => return Err(closed.err().unwrap_or_else(|| error.into())),
    };
    if let Some(other) = replaced(stats.session.as_ref().map(|s| s.pid)) {
        return Err(replaced_error(&output, other).into());
    }
    let failed = match (&outcome.error, &closed) {
        (Some(error), _) | (None, Err(error)) => {
            Some(crate::failure::one_line(&format!("{error:#}")))
        }
        (None, Ok(())) => None,
    };
    let json = args.json.then(|| {
        serde_json::json!({
            "workload": outcome.workload,
            "device": outcome.device,
            "outcome": outcome.outcome,
            "failed": failed,
        })
    });
    if let Err(error) = print_summary(&output, &stats, json) {
        stdout_failed.get_or_insert(error);
    }
    closed?;
    // The summary is this run's output, lost: an error (exit 2), as any verb's that cannot
    // write its output, but the trace it summarises closed and is not lost with it; the line
    // says so, and where the summary is to be had (it read as if the recording had failed).
    let stdout_failed = stdout_failed.map(|error| {
        crate::failure::report(&anyhow::Error::new(Failure::new(format!(
            "cannot write the summary of {} to standard output: {error}{}",
            output.shown(),
            crate::record::summary_elsewhere(&output, &stats)
        ))))
    });
    crate::record::warn_empty_range(range.as_ref(), &output, &stats);
    match after_signal(stop::requested(), stop::folded(), outcome.stopped) {
        AfterSignal::Stopped { note, code } => {
            crate::output::note(format_args!("{note}"));
            // What was recorded before the stop is a reference like a whole run's.
            crate::record::note_load(host);
            return Ok(ExitCode::from(code));
        }
        AfterSignal::Whole(note) => crate::output::note(format_args!("{note}")),
        AfterSignal::None => {}
    }
    match outcome.error {
        Some(error) => Err(error),
        None => {
            // Only after a recording that succeeded: a failed one ends with its error alone.
            crate::record::note_load(host);
            Ok(stdout_failed.map_or(ExitCode::SUCCESS, |_| {
                ExitCode::from(crate::failure::EXIT_FAILURE)
            }))
        }
    }
}

/// The error of a workload's trace that another process (`other`, whose `SessionStart` it
/// holds) replaced after this run closed it and before its summary was read: what the file
/// holds is not this run's (`record -- PROGRAM` says the same of its program's traces).
fn replaced_error(path: &std::path::Path, other: u32) -> Failure {
    Failure::new(format!(
        "the trace {} is lost: this recording (pid {}) wrote and closed it, but another \
         process (pid {other}) has since replaced it with a trace of its own (another \
         recording into the same file: `-o` replaces a closed trace), so what the file holds \
         is not this recording's",
        path.shown(),
        std::process::id()
    ))
    .hint("give each recording a file of its own (`-o run-%p.hrxt` or `-o run-%n.hrxt`)")
}

/// What a signal received during `record --workload` makes of its end.
#[derive(Debug, PartialEq, Eq)]
enum AfterSignal {
    /// It stopped the run before its last frame: the note, and the exit code, 128+N.
    Stopped { note: String, code: u8 },
    /// It came when there was nothing left to stop (after the last frame, or during
    /// `hazards`, which runs to its end): the run is whole and ends as one, with this note.
    Whole(String),
    /// No signal.
    None,
}

/// [`AfterSignal`] of `signal` (received, if any) for a run the signal `stopped` or not,
/// naming every signal in `folded` (bit `signal`: received after it, the same stop). It said
/// "stopped the workload" and exited 128+N beside `outcome ok: 200 of 200 frames delivered`
/// when the signal came after the last frame (a fresh user's pass); it named only the first
/// other signal of several (break-it D6).
fn after_signal(signal: Option<i32>, folded: u32, stopped: bool) -> AfterSignal {
    // The others in order, then the first's own repeat, if any.
    let folded_text = |first: i32| {
        let again = folded & (1 << first) != 0;
        let mut named: Vec<String> = (1..32)
            .filter(|&s| s != first && folded & (1 << s) != 0)
            .map(crate::record::signal_text)
            .collect();
        if again {
            named.push(format!("{} again", crate::record::signal_text(first)));
        }
        crate::record::and_list(named)
    };
    let then = match signal {
        Some(first) if folded != 0 && stopped => {
            format!(
                " ({} came as it stopped: the same stop)",
                folded_text(first)
            )
        }
        Some(first) if folded != 0 => {
            format!(" (then {}, which changed nothing)", folded_text(first))
        }
        _ => String::new(),
    };
    match signal {
        Some(signal) if stopped => AfterSignal::Stopped {
            note: format!(
                "hrx-trace received {} and stopped the workload{then}; the trace is closed",
                crate::record::signal_text(signal)
            ),
            code: (128 + signal).clamp(0, 255) as u8,
        },
        Some(signal) => AfterSignal::Whole(format!(
            "hrx-trace received {} when the workload had nothing left to stop{then}: the run \
             and its trace are whole",
            crate::record::signal_text(signal)
        )),
        None => AfterSignal::None,
    }
}

/// SIGINT, SIGTERM, SIGHUP, and the user signals and the timers' that would end hrx-trace
/// by their default action (`crate::record::signals::SIGNALS`: SIGUSR1 left a trace cut
/// short with no signal named), during `record --workload`: the first stops a pipeline
/// workload after its frames in flight (`hazards` runs to its end, milliseconds), so the
/// trace is closed and the report printed, as Nsight Systems does on Ctrl-C; exit 128+N.
/// Every later one, of any of the signals, is folded into the same stop, as `perf record`
/// folds them: named in the stop's note, it stops nothing more. A second killed at once
/// (its default action), with no word and the trace cut short, never closed; and two
/// different signals sent together (a supervisor's SIGTERM and a closed terminal's SIGHUP)
/// are handled one after the other, the kernel's choice of the first, so one of them always
/// killed (break-it D8). What ends a stop that does not end (a device that hangs) is
/// SIGQUIT (`Ctrl-\`), not handled here: the recorder's fatal-signal flush names it in the
/// trace, `killed by SIGQUIT`, and SIGKILL.
#[cfg(unix)]
mod stop {
    use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

    use crate::record::signals::{forget_repeats, repeated, restore_defaults, set_handlers};

    /// The signal received, else 0.
    static RECEIVED: AtomicI32 = AtomicI32::new(0);
    /// Every signal received after it (bit `signal`), the same one again included unless it
    /// repeats it at once (`repeated`: `timeout`'s second SIGTERM), else 0: each named in the
    /// note. It kept only the first other one (break-it D6).
    static FOLDED: AtomicU32 = AtomicU32::new(0);

    extern "C" fn handler(signal: libc::c_int) {
        let repeat = repeated(signal);
        if RECEIVED
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
            && !repeat
        {
            FOLDED.fetch_or(1 << signal, Ordering::SeqCst);
        }
    }

    /// The handlers, until dropped.
    pub struct Stop;

    pub fn install() -> Stop {
        forget_repeats();
        // SAFETY: `handler` only touches atomics and reads the clock (`repeated`), which is
        // async-signal-safe.
        unsafe {
            set_handlers(handler as *const () as usize, libc::SA_RESTART);
        }
        Stop
    }

    /// The signal received since [`install`], which asks the workload to stop, if any.
    pub fn requested() -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }

    /// The signals received after the first, folded into its stop (bit `signal`).
    pub fn folded() -> u32 {
        FOLDED.load(Ordering::SeqCst)
    }

    impl Drop for Stop {
        fn drop(&mut self) {
            restore_defaults();
        }
    }
}

#[cfg(not(unix))]
mod stop {
    pub struct Stop;
    pub fn install() -> Stop {
        Stop
    }
    pub fn requested() -> Option<i32> {
        None
    }
    pub fn folded() -> u32 {
        0
    }
}

/// Creates the runtime, runs the workload and drops the runtime (so that its last records,
/// such as counters, are in the trace before it is closed).
fn execute(
    workload: Workload,
    options: RuntimeOptions,
    photos: Option<Photos>,
    args: &RecordArgs,
) -> anyhow::Result<Outcome> {
    let fault = options.fault.clone();
    let backend = options.backend;
    let runtime = Runtime::new(options).map_err(|e| {
        // A bad variable's line is the whole error, as `replay` and a bad flag say theirs.
        if let hrx::Error::Variable(line) = e {
            return Failure::new(line);
        }
        let failure = Failure::new(format!("cannot start the hrx runtime: {e}"));
        match (e, backend) {
            (hrx::Error::Unsupported(_), BackendChoice::Cuda | BackendChoice::Hip) => {
                failure.hint("`--backend sim` runs the workload on the software device")
            }
            _ => failure,
        }
    })?;
    let info = runtime.device_info();
    let asked = args.kernel_times
        || (!args.no_kernel_times
            && std::env::var_os("HRX_TRACE_KERNELS").is_some_and(|v| v == "1"));
    if asked && info.backend == "sim" {
        // Nothing to turn on: said, so that the host-clock times are not taken for device ones.
        crate::output::note(format_args!(
            "kernel times: the software device times every operation of a traced run on the \
             host clock anyway (device kernel times are CUDA's, through CUPTI)"
        ));
    }
    let device = format!("{}: {}", info.backend, info.name);
    let outcome = match (workload, photos) {
        (Workload::Hazards, _) => hazards(&runtime, device, fault.as_ref()),
        (_, Some(mut photos)) => {
            let frames = args.frames.unwrap_or(match workload {
                Workload::Faults => photos.len().max(FAULTS_MIN_FRAMES),
                _ => photos.len(),
            });
            let faulting_frame =
                (workload == Workload::Faults && fault.is_none()).then_some(FAULTING_FRAME);
            let run = pipeline(
                &runtime,
                &mut photos,
                frames,
                args.in_flight,
                faulting_frame,
            )?;
            let what = format!(
                "{}: {} of {}x{} from {} ({}), {} in flight",
                name(workload),
                plural(frames as u64, "frame"),
                photos.width,
                photos.height,
                photos.origin,
                plural(photos.len() as u64, "photo"),
                run.in_flight
            );
            // The pipeline stops at its first failed frame: frames after it (some may have
            // run, see the trace) are not delivered.
            let done = format!("{} of {frames} frames delivered", run.delivered);
            let (outcome, error) = match (workload, run.error, fault) {
                // Reported as the run's failure, after the summary of what it recorded (it
                // was an error alone, with no summary nor `--json` line: a break-it pass).
                _ if run.input_error.is_some() => (
                    format!("stopped by an input error: {done}"),
                    run.input_error.map(anyhow::Error::new),
                ),
                (_, None, _) if run.stopped.is_some() => {
                    let signal = run.stopped.unwrap_or_default();
                    // In the trace too: it closes cleanly, but is not the whole run.
                    hrx_capture::record(&hrx_capture::Record::SessionStopped(
                        hrx_capture::schema::SessionStopped {
                            time_ns: hrx_capture::now_ns(),
                            signal,
                            done: Some(run.delivered as u64),
                            asked: Some(frames as u64),
                        },
                    ));
                    let name = crate::record::signal_name(signal)
                        .map_or_else(|| format!("signal {signal}"), str::to_owned);
                    (format!("stopped by {name}: {done}"), None)
                }
                // Closing the trace then says why, as one error line after the report.
                (_, None, _) if run.trace_failed => (
                    format!("stopped when the trace could not be written: {done}"),
                    None,
                ),
                (Workload::Faults, Some(error), None) => (
                    format!(
                        "hrx_fail (an out-of-bounds write) in frame {} failed as intended; \
                         {done}; the run stopped with: {error}",
                        FAULTING_FRAME + 1
                    ),
                    None,
                ),
                (Workload::Faults, None, None) => (
                    format!("{done}; hrx_fail never failed"),
                    Some(
                        Failure::new(format!(
                            "hrx_fail ran in frame {} and did not fail",
                            FAULTING_FRAME + 1
                        ))
                        .into(),
                    ),
                ),
                (Workload::Faults, Some(error), Some(fault)) if runtime.fault_fired() => (
                    format!("{fault} fired as injected; {done}; the run stopped with: {error}"),
                    None,
                ),
                (_, None, Some(fault)) if !runtime.fault_fired() => (
                    format!("{done}; the injected fault {fault} never fired"),
                    Some(
                        never_fired(
                            &fault,
                            &plural(frames as u64, "frame"),
                            "run more --frames, or ",
                        )
                        .into(),
                    ),
                ),
                (_, Some(error), _) => (
                    format!("failed: {done}; then: {error}"),
                    Some(anyhow::Error::new(error).context("the workload failed")),
                ),
                (_, None, _) => (
                    format!(
                        "ok: {done} at {}",
                        hrx_analysis::units::rate(run.frames_per_second, "frames")
                    ),
                    None,
                ),
            };
            Outcome {
                workload: what,
                device,
                outcome,
                error,
                stopped: run.stopped.is_some(),
            }
        }
        (_, None) => unreachable!("photos are opened for every pipeline workload"),
    };
    drop(runtime);
    Ok(outcome)
}

/// Backends without fault injection, where `faults` runs `hrx_fail`.
fn hardware(backend: BackendChoice) -> bool {
    matches!(backend, BackendChoice::Cuda | BackendChoice::Hip)
}

/// The frame (from 0) whose graph runs `hrx_fail` on hardware: the second, as with
/// [`DEFAULT_FAULT`].
const FAULTING_FRAME: usize = 1;

/// A run stopped by its input before it started (no photograph, or the first does not
/// decode): nothing ran and no trace was written, but `--json` prints its line, as for a
/// later photograph that does not decode, its `trace` null (it printed nothing: a break-it
/// pass). Returns `error` to end with, or the error of a standard output that cannot be
/// written.
fn not_started(
    workload: Workload,
    args: &RecordArgs,
    error: Failure,
) -> anyhow::Result<anyhow::Error> {
    let error = anyhow::Error::new(error);
    if args.json {
        use std::io::Write;
        let line = serde_json::json!({
            "workload": name(workload),
            "device": null,
            "outcome": "stopped by an input error before the first frame: nothing recorded",
            "failed": crate::failure::one_line(&format!("{error:#}")),
            "trace": null,
        });
        let mut out = std::io::stdout().lock();
        let written = serde_json::to_writer(&mut out, &crate::output::versioned(line))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
            .and_then(|()| out.flush());
        crate::record::pipe_closed_is_ok(written)?;
    }
    Ok(error)
}

fn name(workload: Workload) -> &'static str {
    match workload {
        Workload::Pipeline => "pipeline",
        Workload::Hazards => "hazards",
        Workload::Faults => "faults",
    }
}

/// The failure of a run in which the injected `fault` never fired (`within`: how much ran,
/// as "2 frames"; `more`: how to run longer, where the workload can, as "run more --frames,
/// or "): a run that went as it would without the fault is not the run asked for.
fn never_fired(fault: &FaultSpec, within: &str, more: &str) -> Failure {
    Failure::new(format!("the injected fault {fault} never fired in {within}")).hint(
        match fault.target {
            FaultTarget::Operation(_) => format!(
                "{more}name an earlier operation: op=N counts the device operations of all submissions from 1, in submission order (a graph's device operations are its `op` records in `dump` other than host callbacks; `node=` numbers a graph's operations from 0, where op=N counts across submissions from 1)"
            ),
            FaultTarget::Kernel { .. } => format!(
                "`#N` counts the kernel's dispatches across the run from 1: {more}check the kernel name and dispatch number against `dump`"
            ),
        },
    )
}

fn hazards(runtime: &Runtime, device: String, fault: Option<&FaultSpec>) -> Outcome {
    match hrx_workloads::run_hazards(runtime) {
        Ok(report) => {
            let kinds: Vec<_> = report.in_graph.iter().map(|k| k.short()).collect();
            let workload = format!(
                "hazards: graphs {} submitted back to back; {} inside graphs; {} conflicting \
                 pairs across submissions",
                report.submissions.join(", "),
                kinds.join(", "),
                report.across_submissions.len()
            );
            let ok = "ok: final buffers match the sequential reference";
            // As the pipeline workloads: a fault that never fired is the run's failure (it
            // passed silently, exit 0: a break-it pass).
            let (outcome, error) = match fault {
                Some(fault) if !runtime.fault_fired() => (
                    format!("{ok}; the injected fault {fault} never fired"),
                    Some(
                        never_fired(
                            fault,
                            &format!(
                                "the hazards workload's {} submissions",
                                report.submissions.len()
                            ),
                            "",
                        )
                        .into(),
                    ),
                ),
                _ => (ok.into(), None),
            };
            Outcome {
                workload,
                device,
                outcome,
                error,
                stopped: false,
            }
        }
        Err(error) => Outcome {
            workload: "hazards".into(),
            device,
            outcome: format!("failed: {error}"),
            error: Some(anyhow::Error::new(error).context("the hazards workload failed")),
            stopped: false,
        },
    }
}

/// What a pipeline run did.
struct PipelineRun {
    delivered: usize,
    in_flight: usize,
    frames_per_second: f64,
    /// The runtime's error that stopped the run, if any.
    error: Option<hrx::Error>,
    /// The signal that stopped the run before its last frame, if one did.
    stopped: Option<i32>,
    /// Whether the run stopped before its last frame because the trace could not be
    /// written.
    trace_failed: bool,
    /// The photograph that did not decode, which stopped the run there.
    input_error: Option<Failure>,
}

/// Runs `frames` frames through the pipeline.
///
/// # Errors
///
/// The pipeline's construction errors (a photograph that does not decode stops the run,
/// in [`PipelineRun::input_error`]).
fn pipeline(
    runtime: &Runtime,
    photos: &mut Photos,
    frames: usize,
    in_flight: Option<usize>,
    faulting_frame: Option<usize>,
) -> anyhow::Result<PipelineRun> {
    let options = PipelineOptions {
        frames_in_flight: in_flight.unwrap_or(PipelineOptions::default().frames_in_flight),
        faulting_frame,
        ..PipelineOptions::default()
    };
    let mut pipeline = Pipeline::new(runtime, photos.width, photos.height, options)
        .map_err(|e| Failure::new(format!("cannot build the pipeline: {e}")))?;
    let progress = crate::output::progress(frames as u64).with_style(crate::output::bar_style(
        "{spinner} frame {pos}/{len} [{bar:30}] {rate} {msg}",
    ));
    let mut delivered = 0;
    // Frames are decoded on a thread of their own, a few ahead of the pipeline, so that
    // decoding a photograph (tens to hundreds of ms) overlaps the frames in flight.
    let (result, decode_error) = std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(options.frames_in_flight);
        // Named: the timeline's row for this thread reads "decoder".
        let decoder = std::thread::Builder::new().name("decoder".into());
        let decoder = decoder.spawn_scoped(scope, move || {
            for index in 0..frames {
                // A signal, or a trace that can no longer be written (a full disk): the
                // frames after it would run for nothing.
                if stop::requested().is_some() || trace_failed() {
                    return None;
                }
                match photos.frame(index, frames) {
                    Ok(frame) => {
                        if sender.send(frame).is_err() {
                            return None;
                        }
                    }
                    Err(error) => return Some(error),
                }
            }
            None
        });
        let decoder = match decoder {
            Ok(decoder) => decoder,
            Err(e) => {
                let error = format!("cannot start the photograph decoder thread: {e}");
                return (Err(hrx::Error::Message(error)), None);
            }
        };
        let frames = std::iter::from_fn(|| {
            let _wait = hrx::annotate::range("wait for a decoded photo");
            receiver.recv().ok()
        });
        let result = pipeline.run(frames, |_index, _output| {
            delivered += 1;
            progress.inc(1);
        });
        // A stopped run drops the receiver, which ends the decoder.
        drop(receiver);
        let decode_error = decoder
            .join()
            .unwrap_or_else(|_| Some(Failure::new("the photograph decoder panicked")));
        (result, decode_error)
    });
    progress.finish_and_clear();
    if let Some(error) = &decode_error {
        // In the trace too: it closes cleanly, but is not the whole run (signal 0: the
        // program's own error, not a signal), and the timeline marks where and why.
        hrx::annotate::marker(&format!("stopped: {error}"));
        hrx_capture::record(&hrx_capture::Record::SessionStopped(
            hrx_capture::schema::SessionStopped {
                time_ns: hrx_capture::now_ns(),
                signal: 0,
                done: Some(delivered as u64),
                asked: Some(frames as u64),
            },
        ));
    }
    let (frames_per_second, error) = match result {
        Ok(stats) => (stats.fps(), None),
        Err(error) => (0.0, Some(error)),
    };
    Ok(PipelineRun {
        delivered,
        in_flight: options.frames_in_flight,
        frames_per_second,
        error,
        stopped: stop::requested().filter(|_| delivered < frames),
        trace_failed: delivered < frames && trace_failed(),
        input_error: decode_error,
    })
}

/// Whether a write to the installed trace failed (a full disk, a file size limit).
fn trace_failed() -> bool {
    hrx_capture::current().is_some_and(|recorder| recorder.write_failed())
}

/// Refuses an empty `--backend` (the runtime reads an empty `HRX_BACKEND` as `auto`, but an
/// empty flag value is a mistake, such as an unset shell variable) and returns `text`.
///
/// # Errors
///
/// A [`Failure`] saying what the flag takes.
pub fn require_backend_name(text: &str) -> Result<&str, Failure> {
    if text.trim().is_empty() {
        return Err(Failure::new(
            "--backend '': expected a backend name: auto, sim, cuda or hip",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{AfterSignal, after_signal};

    /// A signal that stopped the run exits 128+N with its note; one that came with nothing
    /// left to stop says so and leaves the exit to the run (it said "stopped the workload"
    /// and exited 130 beside 200 of 200 frames delivered).
    #[test]
    fn a_signal_after_the_last_frame_stops_nothing_and_says_so() {
        match after_signal(Some(2), 0, true) {
            AfterSignal::Stopped { note, code } => {
                assert_eq!(code, 130);
                assert!(note.contains("stopped the workload"), "{note}");
            }
            other => panic!("{other:?}"),
        }
        match after_signal(Some(15), 0, false) {
            AfterSignal::Whole(note) => {
                assert!(note.contains("nothing left to stop"), "{note}");
                assert!(!note.contains("stopped the workload"), "{note}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(after_signal(None, 0, false), AfterSignal::None);
        // Another signal as it stopped is the same stop, named.
        match after_signal(Some(1), 1 << 15, true) {
            AfterSignal::Stopped { note, code } => {
                assert_eq!(code, 129);
                assert!(
                    note.contains("signal 15 (SIGTERM) came as it stopped: the same stop"),
                    "{note}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Every one of several is named, the first's own repeat last (only the first other
        // one was named: break-it D6).
        let folded = (1 << 15) | (1 << 10) | (1 << 12) | (1 << 1);
        match after_signal(Some(1), folded, true) {
            AfterSignal::Stopped { note, .. } => assert!(
                note.contains(
                    "(signal 10 (SIGUSR1), signal 12 (SIGUSR2), signal 15 (SIGTERM) and \
                     signal 1 (SIGHUP) again came as it stopped: the same stop)"
                ),
                "{note}"
            ),
            other => panic!("{other:?}"),
        }
        // With nothing left to stop, a later signal changed nothing ("came as it stopped"
        // read oddly beside "nothing left to stop": break-it D6).
        match after_signal(Some(1), 1 << 15, false) {
            AfterSignal::Whole(note) => {
                assert!(
                    note.contains(
                        "when the workload had nothing left to stop (then signal 15 \
                         (SIGTERM), which changed nothing): the run and its trace are whole"
                    ),
                    "{note}"
                );
                assert!(!note.contains("as it stopped"), "{note}");
            }
            other => panic!("{other:?}"),
        }
    }
}
