//! `hrx-trace record`: run a program with `HRX_TRACE=FILE`, or a built-in workload in this
//! process ([`crate::workload`]), then print the summary of the written trace.
//!
//! # Recording a program
//!
//! The program runs with `HRX_TRACE` set to the absolute path of FILE, whose patterns (`%p`,
//! `%h`, `%n`, `%%`) each process's runtime expands, and `HRX_TRACE_SESSION` set to what FILE
//! was before (unless a `%p` or `%n` pattern gives each process its own file). Standard
//! streams are inherited. hrx-trace waits for it and exits with its exit code, or 128+N when
//! it was killed by signal N. hrx-trace never creates or removes FILE itself: a program that
//! does not exist leaves nothing behind, and no file new or changed since the start means the
//! program wrote no trace, which is reported as such: it does not link hrx, or it exited
//! before it created a runtime. With several processes that use hrx (say `make`, or
//! `sh -c 'prog & prog'`), the first writes FILE and every other one `NAME.PID.EXT` beside
//! it, whether they run at once or one after another ([`crate::traces`]); every file written
//! is summarised, and a trace that failed makes the exit code 2 when the program exited 0.
//!
//! SIGINT, SIGTERM and SIGHUP sent to hrx-trace (by `kill`, a CI runner's timeout, ...), and
//! SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM and SIGPROF (which would end hrx-trace by their
//! default action, the program then getting SIGTERM: [`signals::SIGNALS`]) are
//! forwarded to the program and to every process it started (as nsys does: `sh -c 'prog'`
//! must not leave `prog` running with its trace open), so that each can close its trace, or
//! at least write what it holds (the runtime's fatal-signal flush); hrx-trace then exits
//! 128+N for signal N, after the summary of whatever trace was written. A Ctrl-C typed at the
//! terminal already reaches them all (the terminal signals the whole process group) and is
//! not sent twice.
//!
//! A program may catch or ignore those signals and run on. As `docker compose` and `cargo`
//! users expect, a second interrupt says so, and a third kills the program and every
//! process it started (SIGKILL; each trace then ends with what it wrote and its
//! "killed by SIGKILL" note).
//!
//! hrx-trace waits for the program and then for every process the program left running
//! (it is their subreaper, on Linux: orphans are reparented to it), so that their traces
//! are complete before the summary. If hrx-trace itself dies (SIGKILL), the program gets
//! SIGTERM (its parent-death signal, Linux), so that it does not run on as an orphan with
//! its trace growing; the processes it started do not ([`parent_death::set`]). A process
//! that died of a signal with its trace unclosed gets a
//! [`FatalSignal`](hrx_capture::schema::FatalSignal) appended to that trace (unless its own
//! handler wrote one), so that `info` says "killed by SIGKILL during submission 3, region 1
//! running" instead of only "never closed".
//!
//! A program that exits 0 leaves a closed trace: the runtime closes it at exit. A trace
//! that is not closed cleanly after exit code 0 means writing it failed (a full disk, a file
//! size limit): hrx-trace prints the summary of what was recovered, then an error, and
//! exits 2.

use crate::args::RecordArgs;
use crate::failure::{EXIT_FAILURE, Failure};
use crate::summary;
use hrx_analysis::info::TraceInfo;
use hrx_capture::ShowPath;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, ExitCode, ExitStatus};

/// Runs `record`.
///
/// # Errors
///
/// [`Failure`] for a bad output path, a program that cannot be started, bad workload
/// options or a failed workload; I/O errors.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let host = hrx_replay::HostLoad::before();
    match args.workload.as_deref() {
        Some(name) => crate::workload::run(name, &args, host),
        None => record_program(&args, host),
    }
}

/// After the summary of a recording that wrote a trace: [`load_note`] of `host` (the load
/// before the recording) with the load now.
pub fn note_load(host: hrx_replay::HostLoad) {
    if let Some(note) = load_note(&host.ended()) {
        // What a trace lacks (a quiet host) is kept by `-q`, as a warning there.
        if crate::output::quiet() {
            crate::output::warn(note);
        } else {
            crate::output::note(note);
        }
    }
}

/// The note after a recording on a loaded host (a load average of at least its CPUs before
/// or after, as `replay` judges its own host): its times include waits for a CPU, so a gate
/// that compares a replay against them judges against a noisy reference (a fresh-user pass
/// recorded at load 7 on 2 cores, and a 2x slowdown replayed later passed against it).
fn load_note(host: &hrx_replay::HostLoad) -> Option<String> {
    host.loaded().then(|| {
        format!(
            "the host was loaded while recording, its 1-minute load {}: the recorded times \
             include waits for a CPU; as a reference for `replay --max-slowdown`, record on a \
             quiet host, or save a baseline there with `replay --save-baseline`",
            host.describe()
        )
    })
}

/// The warning after a recording whose trace `recovery` says is not whole, `writer` the
/// process that wrote it as it ended (`prog ended (exit code 1)`): what it holds up to that
/// end, or for a trace closed cleanly whose recorder lost records (lossy mode), the loss,
/// not in the words of a crash (it read "... lost records; it holds what was written before
/// prog ended (exit code 0)": a fresh user's pass).
fn incomplete_warning(path: &Path, recovery: &hrx_capture::Recovery, writer: &str) -> String {
    if recovery.end() == "closed cleanly, but the recorder lost records" {
        format!(
            "{}: closed cleanly, but the recorder lost records while recording: {}; the trace \
             holds every other record",
            path.shown(),
            recovery.lost
        )
    } else {
        format!(
            "{}: {}; it holds what was written before {writer}",
            path.shown(),
            recovery.end(),
        )
    }
}

/// The capture range `--capture-range`, `--delay` and `--duration` ask for.
///
/// # Errors
///
/// A [`Failure`] naming the option and what it must be.
pub fn capture_range(args: &RecordArgs) -> Result<Option<hrx_capture::CaptureRange>, Failure> {
    use hrx_capture::range::parse_duration_ns;
    if let Some(spec) = &args.capture_range {
        return spec
            .parse()
            .map(Some)
            .map_err(|e| Failure::new(format!("--capture-range: {e}")));
    }
    if args.delay.is_none() && args.duration.is_none() {
        return Ok(None);
    }
    let seconds = |flag: &str, value: &Option<String>| match value {
        Some(v) => parse_duration_ns(v)
            .map(Some)
            .map_err(|e| Failure::new(format!("--{flag}: {e}"))),
        None => Ok(None),
    };
    let start_ns = seconds("delay", &args.delay)?.unwrap_or(0);
    let end_ns = match seconds("duration", &args.duration)? {
        Some(0) => return Err(Failure::new("--duration: must be more than 0")),
        Some(d) => Some(start_ns.saturating_add(d)),
        None => None,
    };
    Ok(Some(hrx_capture::CaptureRange::Time { start_ns, end_ns }))
}

/// A warning when a capture range kept no submission of a trace that recorded some runtime.
pub fn warn_empty_range(range: Option<&hrx_capture::CaptureRange>, path: &Path, stats: &TraceInfo) {
    if let Some(range) = range
        && stats.submissions == 0
    {
        // A warning, kept by `-q`: a trace without a submission lacks what was asked of it.
        crate::output::warn(format_args!(
            "{}: the capture range {range} kept no submission (the program submitted \
             fewer, or ended before it)",
            path.shown()
        ));
    }
}

/// A warning for each fault a runtime of the program was given (`HRX_FAULT`, or its own
/// options) that the trace never saw fire: the run went as it would have without it, and
/// was taken for a faulted one (it was silent, exit 0: a break-it pass). A warning, kept by
/// `-q`; the exit code stays the program's.
fn warn_faults_not_fired(path: &Path, stats: &TraceInfo) {
    let whole = stats.recovery.is_complete() && stats.recovery.lost.is_none();
    for (runtime, fault) in stats.faults_not_fired() {
        crate::output::warn(format_args!(
            "{}: runtime {runtime}: the injected fault {fault} never fired{}",
            path.shown(),
            if whole {
                ""
            } else {
                " (or the trace lost its record: it is incomplete)"
            }
        ));
    }
}

fn record_program(args: &RecordArgs, host: hrx_replay::HostLoad) -> anyhow::Result<ExitCode> {
    let Some((program, program_args)) = args.program.split_first() else {
        return Err(Failure::new("nothing to record")
            .hint("use `hrx-trace record -- PROGRAM [ARGS]...` or `--workload NAME`")
            .into());
    };
    // Checked as this process expands it; each process of the program expands its own.
    warn_unknown_patterns(&args.output);
    let expanded = hrx_capture::expand_path(&args.output);
    // Said once the program wrote the file: one that writes no trace leaves it as it was.
    let earlier = check_output(&args.output, &expanded)?;
    // What the earlier trace was, to tell one left as it was from one a recorder emptied
    // and could not write (a full disk at its first write).
    let earlier_identity = std::path::absolute(&expanded)
        .map(|path| hrx_capture::file_identity(&path))
        .ok();
    // Which file it was: one replaced is another file afterwards, one emptied in place is not.
    let earlier_inode = earlier.then(|| file_inode(&expanded)).flatten();
    let absolute = std::path::absolute(&args.output)?;
    let snapshot = crate::traces::Snapshot::take(&absolute);
    // Where each process of the program says which file it records into; without it (no
    // temporary directory), the files are found by their names as before.
    crate::traces::sweep_reports(&std::env::temp_dir());
    let reports = tempfile::Builder::new()
        .prefix(&crate::traces::reports_prefix())
        .tempdir()
        .ok();
    // One recording at a time into one file: a second `record` started in the same instant
    // is refused as one started later is ([`crate::traces::claim`]).
    let claimed = if crate::traces::per_process(&args.output) {
        None
    } else {
        crate::traces::claim(reports.as_ref().map(|r| r.path()), &expanded)?
    };
    // Handlers first: a signal that arrives while the program starts is held, then sent.
    let forwarding = signals::install();
    let range = capture_range(args)?;
    let mut command = Command::new(program);
    command
        .args(program_args)
        .env(hrx_capture::TRACE_ENV, &absolute);
    match &reports {
        Some(reports) => command.env(hrx_capture::TRACE_PATHS_ENV, reports.path()),
        None => command.env_remove(hrx_capture::TRACE_PATHS_ENV),
    };
    if let Some(range) = &range {
        command.env(hrx_capture::TRACE_RANGE_ENV, range.to_string());
    }
    if args.kernel_times {
        command.env("HRX_TRACE_KERNELS", "1");
    } else if args.no_kernel_times {
        command.env("HRX_TRACE_KERNELS", "0");
    }
    if crate::traces::per_process(&args.output) {
        command.env_remove(hrx_capture::TRACE_SESSION_ENV);
    } else {
        let before = hrx_capture::file_identity(&std::path::absolute(&expanded)?);
        command.env(hrx_capture::TRACE_SESSION_ENV, before);
    }
    parent_death::set(&mut command);
    let spawned = command.spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(e) => {
            forwarding.stop();
            return Err(spawn_failure(program, &e).into());
        }
    };
    forwarding.forward_to(child.id());
    let child_pid = child.id();
    let (status, reaped) = wait_for_all(program, child, &forwarding)?;
    // Withdrawn: a `record` still summarising refuses no later one.
    drop(claimed);
    forwarding.note_forwarded(program);
    let forwarded = forwarding.stop();
    let mut code = exit_code(program, status);
    // How the program ended, for the summary: its exit code, or the signal that killed it
    // (a SIGKILL read "exit code 137" as if the program had exited so: a break-it pass).
    let ended = ended(status, code);
    if let Some(signal) = forwarded {
        code = (128 + signal).clamp(0, 255) as u8;
    }

    let crate::traces::Written {
        paths: written,
        unclaimed,
        gone,
        reporters,
    } = crate::traces::reported(reports.as_ref().map(|r| r.path()), &snapshot);
    let relative = |path: &Path| -> std::path::PathBuf {
        let relative = path.strip_prefix(std::env::current_dir().unwrap_or_default());
        relative.map_or_else(|_| path.to_owned(), Path::to_owned)
    };
    // A trace deleted (or moved) while it was recorded is lost: said, never taken for a
    // program that recorded nothing (a break-it pass: "wrote nothing ... it does not use
    // hrx" of a trace whose directory was removed meanwhile).
    for path in &gone {
        crate::failure::report(&anyhow::Error::new(Failure::new(format!(
            "the trace {} is lost: a process of {} recorded into it, but it no longer exists \
             (deleted or moved while it was recorded)",
            relative(path).shown(),
            name(program)
        ))));
    }
    if written.is_empty() && !gone.is_empty() {
        return Ok(ExitCode::from(if code == 0 { EXIT_FAILURE } else { code }));
    }
    if written.is_empty() {
        // A recording that recorded nothing is said even with -q, and in the JSON.
        let said = format!(
            "no trace: {} wrote nothing to {} (it does not use hrx, or it exited before \
             creating an hrx runtime, or creating one failed: see its own output){}",
            name(program),
            args.output.shown(),
            match earlier {
                false => "",
                true if std::path::absolute(&expanded)
                    .map(|path| hrx_capture::file_identity(&path))
                    .ok()
                    == earlier_identity =>
                {
                    "; the earlier trace there is left as it was"
                }
                true => {
                    "; the earlier trace there is lost: the program's recorder emptied the file \
                     and could not write it (see its own output)"
                }
            }
        );
        crate::output::warn(&said);
        if args.json {
            let line = serde_json::json!({
                "program": program.to_string_lossy(),
                "exit_code": code,
                "trace": null,
                "warning": said,
            });
            // The report of a recording that recorded nothing: its loss is said, the exit
            // code the program's (as a summary's, below).
            if let Err(error) = write_stdout(&format!("{}\n", crate::output::versioned(line))) {
                crate::output::warn(format_args!(
                    "cannot write the report to standard output: {error}"
                ));
            }
        }
        return Ok(ExitCode::from(code));
    }
    if written.len() > 1 && !args.json && !crate::output::quiet() {
        // A failure here fails each summary's write below, which says it.
        let _ = write_stdout(&format!(
            "{} traces written (one per process that used hrx):\n",
            written.len()
        ));
    }
    if let Ok(absolute) = std::path::absolute(&expanded) {
        let wrote_there = written.contains(&absolute);
        if earlier && wrote_there {
            note_replaced(&relative(&absolute), earlier_inode);
        }
        // Its processes recorded elsewhere (a nested `hrx-trace record -o OTHER`, or their
        // own `RuntimeOptions::trace`): said, as `-o`'s file was not written (a fresh-user
        // pass found only the other name in the summary).
        let pattern = {
            use std::os::unix::ffi::OsStrExt;
            args.output.as_os_str().as_bytes().contains(&b'%')
        };
        if !wrote_there && !pattern {
            crate::output::note(format_args!(
                "{} recorded into {}, not {} (its processes chose their own files)",
                name(program),
                written
                    .iter()
                    .map(|p| relative(p).shown().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                relative(&absolute).shown()
            ));
        }
    }
    let mut failed = !gone.is_empty();
    // Said once: every later summary meets the same standard output.
    let mut stdout_failed = false;
    for path in &written {
        let unclaimed = unclaimed.contains(path);
        let absolute = path;
        let path = relative(path);
        if unclaimed {
            crate::output::note(format_args!(
                "{} was written while {} ran by a process that did not tell this recording \
                 which file it records into (built with an older hrx, HRX_TRACE_PATHS did not \
                 reach it, or another recording to the same name that has ended): taken as \
                 this recording's",
                path.shown(),
                name(program)
            ));
        }
        // Replaced since by another recording's trace (`-o` replaces a closed one): lost to
        // this recording, never summarised as its own (a break-it pass: the summary gave the
        // other recording's submissions, or called its half-written trace one this
        // program's process left unclosed with _exit, exit 2). Asked of the first records
        // first (a foreign trace is not read whole), then of the read summary itself (the
        // file may be replaced between the two).
        let reporters = reporters.get(absolute);
        let holder = crate::traces::session_pid(&path);
        if let Some(other) = crate::traces::replaced_by(holder, reporters) {
            report_replaced(&path, program, reporters, other);
            failed = true;
            continue;
        }
        // Processes of this recording that reported this file, whose trace it does not
        // hold: started at once, one replaced the other's (a break-it pass: `sh -c 'a & b &
        // wait'` kept one trace in 4 of 4 runs and said nothing). Said, the file still
        // summarised as the one it holds.
        if let (Some(holder), Some(reporters)) = (holder, reporters) {
            let mut lost: Vec<u32> = (reporters.iter().copied())
                .filter(|&pid| pid != holder)
                .collect();
            lost.sort_unstable();
            lost.dedup();
            if !lost.is_empty() {
                report_sibling_lost(&path, program, &lost, holder);
                failed = true;
            }
        }
        note_death(&path, &reaped);
        match crate::info::read(&path) {
            Ok(stats)
                if let Some(other) = crate::traces::replaced_by(
                    stats.session.as_ref().map(|s| s.pid),
                    reporters,
                ) =>
            {
                report_replaced(&path, program, reporters, other);
                failed = true;
            }
            Ok(stats) => {
                let json = args.json.then(|| {
                    serde_json::json!({
                        "program": program.to_string_lossy(),
                        "exit_code": code,
                    })
                });
                let header = (!args.json && !crate::output::quiet()).then(|| {
                    format!(
                        "{:<12} {} ({ended})\n{}{:<12} {}\n",
                        "program",
                        name(program),
                        writer_line(stats.session.as_ref(), child_pid),
                        "device",
                        crate::summary::devices(&stats)
                    )
                });
                let printed = if stdout_failed {
                    Ok(())
                } else {
                    header
                        .map_or(Ok(()), |header| write_stdout(&header))
                        .and_then(|()| print_summary(&path, &stats, json))
                };
                warn_empty_range(range.as_ref(), &path, &stats);
                warn_faults_not_fired(&path, &stats);
                let replaced_by = (code == 0 && !stats.recovery.clean_close)
                    .then(|| exec_successor(absolute, &stats, &written))
                    .flatten();
                if let (Some(later), Some(session)) = (replaced_by, &stats.session) {
                    // Not a full disk: exec runs no exit handler, so the trace of the
                    // program image it replaced is never closed (a break-it pass: the
                    // hint sent the user to free disk space).
                    let error = anyhow::Error::new(
                        Failure::new(format!(
                            "the trace {} is incomplete ({}): its process (pid {}) replaced \
                             itself with exec, which runs no exit handler, so the trace was \
                             never closed and what it recorded since its last flush (at most \
                             100 ms) is lost; {} is the trace of the program it ran",
                            path.shown(),
                            stats.recovery.end(),
                            session.pid,
                            relative(&later).shown()
                        ))
                        .hint(
                            "call hrx::close_trace() before exec: the program it runs then \
                             records into a trace of its own",
                        ),
                    );
                    crate::failure::report(&error);
                    failed = true;
                } else if code == 0 && !stats.recovery.clean_close {
                    let error = anyhow::Error::new(
                        Failure::new(format!(
                            "the trace {} is incomplete ({}): {} exited 0, but the process \
                             writing the trace did not close it (it ended with _exit, which runs \
                             no exit handler, losing what it recorded since its last flush, at \
                             most 100 ms; or it was killed or crashed, or its writes failed: a \
                             full disk or a file size limit?)",
                            path.shown(),
                            stats.recovery.end(),
                            name(program)
                        ))
                        .hint(
                            "a program that ends with _exit: call hrx::close_trace() before it; \
                             otherwise, if no process was killed, free some space or record to \
                             another file system with -o",
                        ),
                    );
                    crate::failure::report(&error);
                    failed = true;
                } else if !stats.recovery.is_complete() {
                    // The exit code says the program failed; what its trace lacks is said
                    // too, `-q` or not (a warning is never silenced). How the process that
                    // wrote it ended, where that is not the program's own (a child it
                    // forked, killed by SIGKILL, read "before traced ended (exit code 1)":
                    // the parent's; a break-it pass).
                    let writer = match stats.session.as_ref().map(|s| s.pid) {
                        Some(pid) if pid != child_pid => match reaped.get(&pid) {
                            Some(r) => format!("its process (pid {pid}) {}", r.how()),
                            None => format!("its process (pid {pid}) ended"),
                        },
                        _ => format!("{} ended ({ended})", name(program)),
                    };
                    crate::output::warn(incomplete_warning(&path, &stats.recovery, &writer));
                }
                if let Err(error) = printed {
                    // Standard output failing (a full disk, a closed terminal) loses the
                    // summary, not the trace: a warning on standard error after what the trace
                    // lacks, and the exit code stays the program's, 0 included (the run's
                    // answer to whether the program succeeded; a summary lost made it 2).
                    crate::output::warn(format_args!(
                        "cannot write the summary of {} to standard output: {error}{}",
                        path.shown(),
                        summary_elsewhere(&path, &stats)
                    ));
                    stdout_failed = true;
                }
            }
            Err(error) => {
                let error = anyhow::Error::new(error);
                crate::failure::report(&error);
                failed = true;
            }
        }
    }
    // An error that ends the run stays its last line.
    if !failed {
        note_load(host);
    }
    if failed && code == 0 {
        code = EXIT_FAILURE;
    }
    Ok(ExitCode::from(code))
}

/// Says that the trace `path`, which processes of `program` (`reporters`) reported writing,
/// is lost: another process (`other`, whose `SessionStart` it holds) replaced it since, as
/// another recording to the same `-o` does once the trace is closed. An error, as for a
/// trace deleted while it was recorded: `record` then exits 2 where the program exited 0.
fn report_replaced(path: &Path, program: &OsStr, reporters: Option<&Vec<u32>>, other: u32) {
    let pids: Vec<String> = reporters
        .into_iter()
        .flatten()
        .map(u32::to_string)
        .collect();
    crate::failure::report(&anyhow::Error::new(
        Failure::new(format!(
            "the trace {} is lost: a process of {} (pid {}) recorded into it, but another \
             process (pid {other}) has since replaced it with a trace of its own (another \
             recording into the same file: `-o` replaces a closed trace), so what the file \
             holds is not this recording's",
            path.shown(),
            name(program),
            pids.join(", ")
        ))
        .hint("give each recording a file of its own (`-o run-%p.hrxt` or `-o run-%n.hrxt`)"),
    ));
}

/// Says that the traces of processes `lost` of `program`, which reported recording into
/// `path`, are lost: another of its processes (`holder`, whose `SessionStart` the file
/// holds) replaced them, the two having found the name free at once. An error: `record`
/// then exits 2 where the program exited 0.
fn report_sibling_lost(path: &Path, program: &OsStr, lost: &[u32], holder: u32) {
    let pids: Vec<String> = lost.iter().map(u32::to_string).collect();
    crate::failure::report(&anyhow::Error::new(
        Failure::new(format!(
            "the trace of {} {} of {} is lost: it recorded into {}, which another of its \
             processes (pid {holder}), started at the same moment, replaced with its own \
             trace; {} holds pid {holder}'s",
            if lost.len() == 1 {
                "process"
            } else {
                "processes"
            },
            pids.join(", "),
            name(program),
            path.shown(),
            path.shown(),
        ))
        .hint("give each process a file of its own (`-o run-%p.hrxt`)"),
    ));
}

/// A process that hrx-trace reaped: how it ended, and when.
#[derive(Clone, Copy, Debug)]
struct Reaped {
    status: ExitStatus,
    /// `CLOCK_MONOTONIC` when it was reaped: the time of its note ([`note_death`]).
    reaped_ns: u64,
}

impl Reaped {
    /// The signal it died of, if one killed it.
    fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal()
    }

    /// How it ended: `was killed by SIGKILL`, `ended (exit code 3)`.
    fn how(&self) -> String {
        match (self.signal(), self.status.code()) {
            (Some(signal), _) => format!("was killed by {}", signal_text(signal)),
            (None, Some(code)) => format!("ended (exit code {code})"),
            (None, None) => "ended".to_owned(),
        }
    }
}

/// Waits for `child`, then for every process it left running (forwarding a signal
/// hrx-trace received to them too); returns the child's status and, by pid, how each
/// process that hrx-trace reaped ended, and when.
///
/// # Errors
///
/// `waitpid` errors other than `EINTR`.
fn wait_for_all(
    program: &OsStr,
    child: std::process::Child,
    forwarding: &signals::Forwarding,
) -> io::Result<(ExitStatus, std::collections::BTreeMap<u32, Reaped>)> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        let pid = child.id() as i32;
        let mut reaped_all = std::collections::BTreeMap::new();
        let mut status = None;
        let mut waiting_noted = false;
        loop {
            let mut raw = 0;
            // SAFETY: waitpid writes only `raw`. -1: the child, or an orphan reparented here.
            let reaped = unsafe { libc::waitpid(-1, &mut raw, 0) };
            if reaped < 0 {
                let error = io::Error::last_os_error();
                match error.raw_os_error() {
                    // A signal arrived: the handler sent it to the child; now the others.
                    Some(libc::EINTR) => {
                        forwarding.forward_to_descendants();
                        forwarding.escalate(program, status.is_none());
                    }
                    Some(libc::ECHILD) if status.is_some() => break,
                    _ => return Err(error),
                }
                continue;
            }
            let exit = ExitStatus::from_raw(raw);
            let reaped_ns = monotonic_ns();
            reaped_all.insert(
                reaped as u32,
                Reaped {
                    status: exit,
                    reaped_ns,
                },
            );
            if reaped == pid {
                status = Some(exit);
                forwarding.forward_to_descendants();
                let left = signals::descendants();
                // After the third interrupt's SIGKILL, what is left is dying, not running.
                if !left.is_empty() && !waiting_noted && !forwarding.killed_all() {
                    waiting_noted = true;
                    let pids: Vec<String> = left.iter().map(u32::to_string).collect();
                    crate::output::note(format_args!(
                        "waiting for {} that {} left running (pid {})",
                        hrx_analysis::units::plural(left.len() as u64, "process"),
                        name(program),
                        pids.join(", ")
                    ));
                }
            }
        }
        drop(child);
        Ok((status.expect("set before the loop ends"), reaped_all))
    }
    #[cfg(not(unix))]
    {
        let mut child = child;
        let _ = (program, forwarding);
        Ok((child.wait()?, std::collections::BTreeMap::new()))
    }
}

/// Notes in the trace at `path`, when its recorder left it unclosed and the process that
/// wrote it died of a signal that it did not note itself (SIGKILL runs no handler), that
/// death: a [`FatalSignal`](hrx_capture::schema::FatalSignal) seen by the parent, at the
/// time hrx-trace reaped the process, so that `info` says "killed by SIGKILL ..." instead of
/// only "never closed" and the trace's span ends there (it ended when the note was written:
/// after the processes the program left had ended and the trace was read, seconds later). A
/// trace that cannot take the note keeps what it has (a warning says why).
fn note_death(path: &Path, reaped: &std::collections::BTreeMap<u32, Reaped>) {
    use hrx_capture::schema::{FatalSignal, SignalWitness};
    if !reaped.values().any(|r| r.signal().is_some()) {
        return;
    }
    let Ok(stats) = crate::info::read(path) else {
        return;
    };
    let Some(session) = &stats.session else {
        return;
    };
    let Some((signal, reaped_ns)) = reaped
        .get(&session.pid)
        .and_then(|r| Some((r.signal()?, r.reaped_ns)))
    else {
        return;
    };
    let noted = stats
        .fatal
        .is_some_and(|f| f.witness == SignalWitness::Handler);
    if stats.recovery.closed || noted {
        return;
    }
    let note = hrx_capture::Record::FatalSignal(FatalSignal {
        time_ns: reaped_ns.saturating_sub(session.monotonic_base_ns),
        signal,
        witness: SignalWitness::Parent,
        fault_address: None,
    });
    if let Err(error) = hrx_capture::append_to_unclosed(path, &[note]) {
        crate::output::warn(format_args!(
            "{}: could not note the program's death in the trace: {error}",
            path.shown()
        ));
    }
}

/// CLOCK_MONOTONIC in ns: the clock of [`SessionStart::monotonic_base_ns`].
///
/// [`SessionStart::monotonic_base_ns`]: hrx_capture::schema::SessionStart::monotonic_base_ns
fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } == 0 {
            return ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        }
    }
    0
}

/// Writes `text` on standard output; a closed pipe is not an error.
fn write_stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    pipe_closed_is_ok(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// A write to standard output whose reader went away (`| head`) is no error, and is said,
/// as `replay`'s and `diff`'s cut report is ([`crate::output::closed_stdout_said`]: one
/// `warning:` line, the exit code the run's).
pub(crate) fn pipe_closed_is_ok(written: io::Result<()>) -> io::Result<()> {
    crate::output::closed_stdout_said(written, "record's summary", "the run's")
}

/// What follows a summary that could not be written to standard output, for `record`'s
/// line of it: `; the trace is complete: `hrx-trace info PATH` prints its summary` (the
/// trace's own lacks were said beside it where it is not complete).
pub(crate) fn summary_elsewhere(path: &Path, stats: &TraceInfo) -> String {
    let info = format!("`hrx-trace info {}` prints its summary", path.for_shell());
    match stats.recovery.is_complete() {
        true => format!("; the trace is complete: {info}"),
        false => format!("; {info}"),
    }
}

/// Prints the summary on standard output; a closed pipe is not an error. `json`: print it
/// as one JSON line instead, `json`'s fields with `info --json`'s object as `trace` (with
/// `-q`, text is not printed; JSON, asked for, is).
pub fn print_summary(
    path: &Path,
    stats: &TraceInfo,
    json: Option<serde_json::Value>,
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let written = match json {
        Some(mut line) => {
            line["trace"] = crate::info::json(path, stats, false);
            serde_json::to_writer(&mut out, &crate::output::versioned(line))
                .map_err(io::Error::from)
                .and_then(|()| writeln!(out))
        }
        None if crate::output::quiet() => {
            // `-q` keeps what the trace lacks (README, "What a trace may lack"): the summary's
            // `lost` line, as a warning.
            let lost = &stats.recovery.lost;
            if !lost.is_none() {
                crate::output::warn(format_args!("{}: {lost}", path.shown()));
            } else if let Some(mode) = lost.lossy_without_loss() {
                crate::output::warn(format_args!("{}: lost {mode}", path.shown()));
            }
            Ok(())
        }
        None => summary::write(&mut out, path, stats),
    }
    .and_then(|()| out.flush());
    pipe_closed_is_ok(written)
}

/// Refuses an output path that cannot be a trace file: `path` is `template` (`-o`) as this
/// process expands it. A `%n` template is not refused for a trace or a live recording at
/// the expanded name: the runtime takes the first number it can create when it creates the
/// file, so another recording started together that takes that number first is no
/// conflict (two `record --workload -o w-%n.hrxt` started together: one was refused,
/// "another recorder is writing it", about 1 run in 5).
///
/// Returns whether `path` holds an earlier trace, which the recording will replace: the
/// caller says so ([`note_replaced`]) once it is known that it did.
///
/// # Errors
///
/// [`Failure`] when it is a directory or its directory does not exist.
pub fn check_output(template: &Path, path: &Path) -> Result<bool, Failure> {
    refuse_stdout(path)?;
    refuse_special(path, "trace")?;
    // `sub/` names a directory even when there is none (the runtime could not create it as
    // a file, and the program would run untraced).
    use std::os::unix::ffi::OsStrExt;
    if path.is_dir() || path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(Failure::new(format!(
            "cannot write the trace to {}: it is a directory{}",
            path.shown(),
            if path.is_dir() {
                ""
            } else {
                " name (it ends with /)"
            }
        ))
        .hint("give -o a file name, e.g. -o run.hrxt"));
    }
    require_directory(path, "the trace")?;
    check_writable(path)?;
    if hrx_capture::has_sequence(template) {
        return Ok(false);
    }
    // Overwrite traces (and empty files) only: `-o` naming a photograph or any other file
    // by mistake must not destroy it.
    const MAGIC: &[u8] = b"HRXTRACE";
    refuse_overwrite(path, "an hrx trace", |head| {
        head.starts_with(MAGIC) || MAGIC.starts_with(head)
    })?;
    // Probed now, so that a second recording into the same file is refused before its
    // program runs.
    refuse_live(path, "the trace")?;
    Ok(std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0))
}

/// An earlier trace at `path` is replaced, as `-o` asks, but not silently (Nsight Systems
/// refuses without `--force-overwrite`; a note costs a scripted re-recording nothing).
///
/// `earlier` is the earlier trace's file ([`file_inode`], taken before the recording).
/// Where `path` is still that file, the recorder could not create its new file beside it
/// and emptied the earlier trace in place ([`hrx_capture::FileSink::create`]): a reader
/// still reading it then read the start of one recording and the rest of the other. That
/// is said instead (it read "it is replaced", as a replacement that readers never see).
///
/// The recorder keeps the earlier trace as a hidden link beside the new one until it closes
/// (`.NAME.PID.earlier`): a program killed or crashed leaves it, which is removed here, as
/// `-o` asked (it was left without a word, taking the earlier trace's space); one kept under
/// a visible name because a later write failed (`STEM.earlier.EXT`) is named (the note said
/// "it is replaced" two lines under the runtime's "kept as"): a break-it pass, session 58.
pub fn note_replaced(path: &Path, earlier: Option<(u64, u64)>) {
    if earlier.is_none() || file_inode(path) != earlier {
        match earlier.and_then(|inode| keep_or_remove_earlier(path, inode)) {
            Some(kept) => crate::output::note(format_args!(
                "{} held an earlier trace: it is kept as {}, as writing the new recording \
                 failed",
                path.shown(),
                kept.shown()
            )),
            None => crate::output::note(format_args!(
                "{} held an earlier trace: it is replaced",
                path.shown()
            )),
        }
        return;
    }
    let folder = folder_of(path);
    let why = match creates_files_in(&folder) {
        Err(_) => "as its folder is not writable",
        Ok(()) => "by a recorder that did not write a new file beside it (an older hrx?)",
    };
    crate::output::note(format_args!(
        "{} held an earlier trace: it was emptied in place, {why}; a reader still reading it \
         reads two recordings as one",
        path.shown()
    ));
}

/// The links to the earlier trace `inode` beside the trace at `path` once its recording
/// ended: hidden ones (`.NAME.PID.earlier`) that nobody holds are removed, and a visible one
/// (a write failed) is returned.
fn keep_or_remove_earlier(path: &Path, inode: (u64, u64)) -> Option<std::path::PathBuf> {
    let mut kept = None;
    for entry in std::fs::read_dir(folder_of(path)).ok()?.flatten() {
        let link = entry.path();
        if link == path || file_inode(&link) != Some(inode) {
            continue;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".earlier") {
            if matches!(hrx_capture::recorder_holds(&link), Ok(false)) {
                let _ = std::fs::remove_file(&link);
            }
        } else {
            kept = Some(path.with_file_name(entry.file_name()));
        }
    }
    kept
}

/// The device and inode of the file at `path`: whether a recording replaced it or emptied
/// it in place ([`note_replaced`]).
pub fn file_inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The folder of the file at `path` (`.` for a bare name).
fn folder_of(path: &Path) -> std::path::PathBuf {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_path_buf(),
        None => std::path::PathBuf::from("."),
    }
}

/// Whether this process can create a file in `dir`: creates one and removes it.
fn creates_files_in(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(".hrx-trace-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Refuses an output `path` whose directory does not exist, naming it (the OS error would
/// name the file, or a temporary file beside it); through a symbolic link, the directory of
/// the file it points to (a dangling link's was not named: a break-it pass).
///
/// # Errors
///
/// A one-line [`Failure`]: "cannot write WHAT to PATH: directory DIR does not exist".
pub fn require_directory(path: &Path, what: &str) -> Result<(), Failure> {
    let missing = |file: &Path| -> Option<(std::path::PathBuf, String)> {
        let parent = file.parent().filter(|p| !p.as_os_str().is_empty())?;
        // The system's own reason: a name too long, a symbolic-link loop or a file in the
        // way are not a missing directory (a break-it pass read "does not exist" for each).
        let why = match std::fs::metadata(parent) {
            Ok(meta) if meta.is_dir() => return None,
            Ok(_) => "is not a directory".to_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
            Err(e) => format!("cannot be used: {e}"),
        };
        Some((parent.to_owned(), why))
    };
    if let Some((parent, why)) = missing(path) {
        return Err(Failure::new(format!(
            "cannot write {what} to {}: directory {} {why}",
            path.shown(),
            parent.shown()
        )));
    }
    let target = hrx_capture::replace::written_through(path)
        .map_err(|e| Failure::new(format!("cannot write {what} to {}: {e}", path.shown())))?;
    if target != path
        && let Some((parent, why)) = missing(&target)
    {
        return Err(Failure::new(format!(
            "cannot write {what} to {}: directory {} {why} ({} links to {})",
            path.shown(),
            parent.shown(),
            path.shown(),
            target.shown()
        )));
    }
    Ok(())
}

/// Whether a recorder holds the regular file `path` now ([`hrx_capture::being_recorded`]).
pub(crate) use hrx_capture::being_recorded;

/// Reads the trace `path` with `read`, and whether a recorder held it as the read began
/// ([`being_recorded`], asked first): a reading verb says a trace it read while it was
/// being recorded is being recorded, read as far as it was written. Asked after the read,
/// a recording that closed (or was killed) during a long read made `info`, `stats`,
/// `dump` and `diff` call what they read "not closed cleanly" and `info` "cut short:
/// never closed (the process was killed or crashed ...)" (a break-it pass: `info` of a
/// 250 MB trace read while `host_visible 3000000` recorded it, with or without compression
/// threads), as `export`, which asked at open, did not.
pub(crate) fn read_while_held<T>(path: &Path, read: impl FnOnce() -> T) -> (T, bool) {
    let held = being_recorded(path);
    (read(), held)
}

/// Refuses to `verb` the trace `path` while a recorder holds it ([`being_recorded`]);
/// `needs` says why the verb needs a closed trace.
///
/// # Errors
///
/// A one-line [`Failure`] with a hint to wait, or to follow the live trace.
pub fn refuse_being_recorded(path: &Path, verb: &str, needs: &str) -> Result<(), Failure> {
    if !being_recorded(path) {
        return Ok(());
    }
    Err(Failure::new(format!(
        "{}: cannot {verb}: it is being recorded now (a recorder holds it), and {needs}",
        path.shown()
    ))
    .hint("wait for the recording to end (`hrx-trace stats --follow` and `view --follow` follow a live trace)"))
}

/// Refuses an output that a recorder is writing now: the recorder holds an exclusive lock
/// on its file ([`hrx_capture::Recorder`] takes it before writing anything), so a file
/// whose lock is taken is a live recording, which writing `path` (or renaming a file over
/// it) would destroy. `what` names what was to be written there (`the trace`, `the trimmed
/// trace`). Every verb writing a trace file checks this. The check asks for a shared lock:
/// only an exclusive holder (a writer) refuses it, never a follower (`view --follow`,
/// `stats --follow`) that holds a shared lock for a moment to probe the same thing.
///
/// # Errors
///
/// A one-line [`Failure`] with a hint when another process holds the lock.
pub fn refuse_live(path: &Path, what: &str) -> Result<(), Failure> {
    if let Ok(file) = std::fs::File::open(path)
        && path.is_file()
        && let Err(std::fs::TryLockError::WouldBlock) = file.try_lock_shared()
    {
        return Err(Failure::new(format!(
            "cannot write {what} to {}: another recorder is writing it",
            path.shown()
        ))
        .hint("choose another -o file, or wait for that recording to end"));
    }
    Ok(())
}

/// Refuses `-` as a trace's output: a trace is written in blocks by a background thread and
/// its header is rewritten at close, so it needs a seekable file (nsys and Tracy refuse
/// standard output likewise).
///
/// # Errors
///
/// A one-line [`Failure`] with a hint when `path` is `-` or standard output's or standard
/// error's own file (`/dev/stdout`, `/proc/self/fd/1`, `/dev/stderr`).
pub fn refuse_stdout(path: &Path) -> Result<(), Failure> {
    let stream = match crate::output::standard_stream(path) {
        _ if path.as_os_str() == "-" => "standard output",
        Some(crate::output::StandardStream::Output) => "standard output",
        // What hrx-trace prints there would be written into the trace.
        Some(crate::output::StandardStream::Error) => "standard error",
        None => return Ok(()),
    };
    Err(Failure::new(format!(
        "cannot write the trace to {stream}: a trace is a seekable file"
    ))
    .hint("give -o a file name, e.g. -o run.hrxt"))
}

/// Warns about a `%` followed by anything but `p`, `h`, `n` or `%`: it is kept as written
/// (as Nsight Systems keeps what it does not expand), which is rarely what was meant.
pub(crate) fn warn_unknown_patterns(path: &Path) {
    let Some(text) = path.to_str() else { return };
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            Some('p' | 'h' | 'n' | '%') => {}
            Some(other) => crate::output::warn(format_args!(
                "`%{other}` in the trace path is not a pattern (%p process id, %h host \
                 name, %n sequence number, %% a percent sign): kept as written"
            )),
            None => crate::output::warn(format_args!(
                "a `%` ends the trace path: kept as written (%% writes a percent sign)"
            )),
        }
    }
}

/// Refuses an output that is a FIFO, a socket or a device, before anything opens it (opening
/// a FIFO for writing waits for a reader; a trace or an export must be a file).
///
/// # Errors
///
/// A [`Failure`] naming the path and what it is.
pub fn refuse_special(path: &Path, what: &str) -> Result<(), Failure> {
    match std::fs::metadata(path)
        .ok()
        .as_ref()
        .and_then(hrx_capture::special_file)
    {
        Some(kind) => Err(Failure::new(format!(
            "cannot write the {what} to {}: it is {kind}, not a file",
            path.shown()
        ))
        .hint("give -o a regular file")),
        None => Ok(()),
    }
}

/// Refuses to overwrite `path` when it is an existing, non-empty file whose first bytes
/// (up to 15) `ours` does not recognise as `what` (e.g. "an hrx trace").
///
/// # Errors
///
/// A [`Failure`] naming the file, with a hint.
pub fn refuse_overwrite(
    path: &Path,
    what: &str,
    ours: impl Fn(&[u8]) -> bool,
) -> Result<(), Failure> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(());
    };
    if !path.is_file() {
        return Ok(());
    }
    let mut head = [0u8; 32];
    let read = file.read(&mut head).unwrap_or(0);
    if read > 0 && !ours(&head[..read]) {
        let is = if head[..read].starts_with(&hrx_capture::format::MAGIC) {
            format!("it is an hrx trace, not {what}")
        } else {
            format!("it exists and is not {what}")
        };
        return Err(
            Failure::new(format!("refusing to overwrite {}: {is}", path.shown()))
                .hint("choose another -o file, or remove it first"),
        );
    }
    Ok(())
}

/// Refuses to replace the file `path` (`what`: "the export") that the user may not write
/// ([`hrx_capture::replace::check_writable`]): renamed over, a write-protected file was
/// replaced all the same. `record`'s `-o` is refused so too ([`check_writable`]).
///
/// # Errors
///
/// A one-line [`Failure`]: "cannot write WHAT to PATH: it cannot be opened for writing: WHY".
pub fn refuse_unwritable(path: &Path, what: &str) -> Result<(), Failure> {
    hrx_capture::replace::check_writable(path).map_err(|error| {
        Failure::new(format!(
            "cannot write {what} to {}: it cannot be opened for writing: {error}",
            path.shown()
        ))
        .hint("choose a writable -o path")
    })
}

/// Refuses an output the recorder could not write, before anything runs: an existing file
/// that cannot be opened for writing, or a directory in which no file can be created (read
/// only, a read-only file system, `/proc`). The directory is probed with a file of its own,
/// created and removed at once; FILE itself is never created or truncated here.
fn check_writable(path: &Path) -> Result<(), Failure> {
    if path.exists() {
        return refuse_unwritable(path, "the trace");
    }
    let dir = folder_of(path);
    creates_files_in(&dir).map_err(|error| {
        Failure::new(format!(
            "cannot write the trace to {}: no file can be created in {}: {error}",
            path.shown(),
            dir.shown()
        ))
        .hint("choose a writable -o path")
    })
}

/// The recorded program as messages name it: a path, shown as every path is
/// ([`ShowPath::shown`]).
/// The `process` line of a trace that a process the program started wrote (`sh -c 'linked
/// & linked'`: each trace's block read `program sh` alone, a fresh user's pass): its
/// program's name and pid. Empty where the program's own process wrote it, or the trace
/// names no process.
fn writer_line(session: Option<&hrx_capture::schema::SessionStart>, program_pid: u32) -> String {
    match session {
        Some(s) if s.pid != program_pid => {
            let program = s.args.first().map_or("?", String::as_str);
            format!(
                "{:<12} {} (pid {}), started by the program\n",
                "process",
                name(OsStr::new(program)),
                s.pid
            )
        }
        _ => String::new(),
    }
}

fn name(program: &OsStr) -> String {
    Path::new(program).shown().to_string()
}

fn spawn_failure(program: &OsStr, error: &io::Error) -> Failure {
    let is_dir = Path::new(program).is_dir();
    let program = name(program);
    match error.kind() {
        io::ErrorKind::PermissionDenied if is_dir => {
            Failure::new(format!("cannot run {program}: it is a directory"))
        }
        // A bare name is looked up in PATH only, as a shell does: a file of that name here
        // is not run (nor is it "not a file").
        io::ErrorKind::NotFound if !program.contains('/') && Path::new(&program).is_file() => {
            Failure::new(format!(
                "cannot run {program}: not found in PATH (a file of that name is in the current \
                 directory: run it as ./{program} if it is a program)"
            ))
        }
        io::ErrorKind::NotFound => Failure::new(format!(
            "cannot run {program}: no such program (not a file, and not found in PATH)"
        )),
        io::ErrorKind::PermissionDenied => Failure::new(format!(
            "cannot run {program}: permission denied (is it executable?)"
        )),
        _ => Failure::new(format!("cannot run {program}: {error}")),
    }
}

/// How the program ended: `exit code N`, or `killed by signal N (NAME), exit code 128+N`.
fn ended(status: ExitStatus, code: u8) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by {}, exit code {code}", signal_text(signal));
        }
    }
    let _ = status;
    format!("exit code {code}")
}

/// The program's exit code, or 128+N for a signal (reported on standard error).
fn exit_code(program: &OsStr, status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        // `record` exits with it; said too, as a killed program's signal is (the JSON has
        // `exit_code`).
        if code != 0 {
            crate::output::note(format_args!("{} exited with code {code}", name(program)));
        }
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
            crate::output::note(format_args!(
                "{} was killed by {}{core}",
                name(program),
                signal_text(signal)
            ));
            return (128 + signal).clamp(0, 255) as u8;
        }
    }
    EXIT_FAILURE
}

/// `a`, `a and b`, `a, b and c`: signals named in a note.
pub(crate) fn and_list(mut items: Vec<String>) -> String {
    match items.pop() {
        None => String::new(),
        Some(last) if items.is_empty() => last,
        Some(last) => format!("{} and {last}", items.join(", ")),
    }
}

/// Forwarding [`signals::SIGNALS`] (SIGINT, SIGTERM, SIGHUP, the user signals and the
/// timers') to the recorded program while it runs.
#[cfg(unix)]
pub(crate) mod signals {
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

    /// The program's pid while it runs, else 0.
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// A signal received before the program's pid was known, not yet sent, else 0.
    static PENDING: AtomicI32 = AtomicI32::new(0);
    /// A signal sent to the program, not yet to the processes it started, else 0.
    static DESCENDANTS_PENDING: AtomicI32 = AtomicI32::new(0);
    /// The last signal received, else 0.
    static FORWARDED: AtomicI32 = AtomicI32::new(0);
    /// Signals received while forwarding (terminal ones included).
    static RECEIVED: AtomicU32 = AtomicU32::new(0);
    /// How far [`Forwarding::escalate`] went: 0, 1 once the second interrupt was noted, 2
    /// once the third killed the program.
    static ESCALATED: AtomicU32 = AtomicU32::new(0);
    /// Whether a signal was counted and forwarded ([`forward`]) that the main thread has not
    /// yet acted on ([`Forwarding::escalate`]): a signal that comes meanwhile was pending
    /// with it (held while hrx-trace was stopped, or sent by two senders at once) and is the
    /// same interrupt.
    static UNSEEN: AtomicBool = AtomicBool::new(false);
    /// The signals folded into the interrupt counted last (bit `signal`), not forwarded;
    /// named in a note.
    static FOLDED: AtomicU32 = AtomicU32::new(0);
    /// Whether the note that a signal was forwarded was printed (at the first one, so that
    /// it comes before what the program and `record` say next).
    static NOTED: AtomicBool = AtomicBool::new(false);
    /// The signals hrx-trace handles while it records (forwarded to the program, or stopping
    /// a workload), writes an output (`crate::partial`: removed) or replays and compares
    /// (said to be interrupted): those a person or a supervisor sends to stop a process
    /// (Ctrl-C, `kill`, a closed terminal, `timeout`, a CI runner), and those whose default
    /// action ends a process that does not expect them, a user signal or a timer's (SIGUSR1,
    /// SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF: hrx-trace uses none of them itself; they ended
    /// a recording at once, its trace cut short with no signal named). SIGQUIT keeps its
    /// default action, a core dump asked for; SIGPIPE is ignored (Rust's default).
    pub(crate) const SIGNALS: [libc::c_int; 8] = [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
    ];

    /// A signal that comes within this many ns of the last one counted, the same or another,
    /// is the same delivery: coreutils `timeout` sends its signal to its child and then to
    /// the child's process group, so `record` run under it gets each SIGTERM twice,
    /// microseconds apart, and counted twice it killed a workload before its trace was
    /// closed, or said a program ignored the first (a break-it pass: 4 runs of 30 under
    /// `timeout 2`); and a supervisor's SIGTERM and a closing terminal's SIGHUP come together
    /// (counted as two and three interrupts, they said a program ignored the first, or killed
    /// it with its trace never closed: break-it D3). A person's second Ctrl-C comes later
    /// than this; the margin is for a loaded machine, where the handler may run long after
    /// the signal was sent.
    const SAME_DELIVERY_NS: u64 = 200_000_000;
    /// The last signal counted ([`repeated`], [`together`]), else 0, and when
    /// (`CLOCK_MONOTONIC` ns).
    static LAST: AtomicI32 = AtomicI32::new(0);
    static LAST_NS: AtomicU64 = AtomicU64::new(0);

    /// `CLOCK_MONOTONIC` in ns; async-signal-safe.
    fn now_ns() -> u64 {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given; async-signal-safe.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
    }

    /// Whether `signal` repeats the last signal counted, within [`SAME_DELIVERY_NS`] of it
    /// (then it is not counted; else it is, from now); async-signal-safe (`clock_gettime`
    /// and atomics).
    pub(crate) fn repeated(signal: libc::c_int) -> bool {
        let now_ns = now_ns();
        if LAST.load(Ordering::SeqCst) == signal
            && now_ns.saturating_sub(LAST_NS.load(Ordering::SeqCst)) < SAME_DELIVERY_NS
        {
            return true;
        }
        LAST.store(signal, Ordering::SeqCst);
        LAST_NS.store(now_ns, Ordering::SeqCst);
        false
    }

    /// Whether `signal`, of any kind, comes within [`SAME_DELIVERY_NS`] of the last signal
    /// counted (then it is not counted; else it is, from now); async-signal-safe.
    fn together(signal: libc::c_int) -> bool {
        let now_ns = now_ns();
        if LAST.load(Ordering::SeqCst) != 0
            && now_ns.saturating_sub(LAST_NS.load(Ordering::SeqCst)) < SAME_DELIVERY_NS
        {
            return true;
        }
        LAST.store(signal, Ordering::SeqCst);
        LAST_NS.store(now_ns, Ordering::SeqCst);
        false
    }

    /// The signals of `mask` (bit `signal`), in order, as a note names them: `signal 1
    /// (SIGHUP)`, `signal 1 (SIGHUP) and signal 10 (SIGUSR1)`, `signal 1 (SIGHUP), signal
    /// 10 (SIGUSR1) and signal 12 (SIGUSR2)`.
    pub(crate) fn signals_text(mask: u32) -> String {
        super::and_list(
            (1..32)
                .filter(|s| mask & (1 << s) != 0)
                .map(super::signal_text)
                .collect(),
        )
    }

    /// Forgets the last signal counted (handlers installed anew).
    pub(crate) fn forget_repeats() {
        LAST.store(0, Ordering::SeqCst);
    }

    /// The signals of [`SIGNALS`] that this process was started with ignored (bit `signal`),
    /// read once, before any handler of ours: `nohup` ignores SIGHUP, a shell's `cmd &`
    /// without job control SIGINT. They stay ignored (and so the program inherits them
    /// ignored, as without `hrx-trace`): a recording under `nohup` outlives its terminal.
    fn inherited_ignored() -> u32 {
        static IGNORED: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        *IGNORED.get_or_init(|| {
            let mut ignored = 0;
            for signal in SIGNALS {
                // SAFETY: a query (null new action) into a zeroed sigaction.
                let current = unsafe {
                    let mut current: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(signal, std::ptr::null(), &mut current);
                    current
                };
                if current.sa_sigaction == libc::SIG_IGN {
                    ignored |= 1 << signal;
                }
            }
            ignored
        })
    }

    /// Sets `handler` (an `SA_SIGINFO` handler when `flags` has it) for each of [`SIGNALS`],
    /// except those this process was started with ignored ([`inherited_ignored`]).
    ///
    /// # Safety
    ///
    /// `handler` must be an `extern "C"` function of the shape `flags` declares that does
    /// only async-signal-safe work.
    pub(crate) unsafe fn set_handlers(handler: usize, flags: libc::c_int) {
        let ignored = inherited_ignored();
        for signal in SIGNALS {
            if ignored & (1 << signal) != 0 {
                continue;
            }
            // SAFETY: a zeroed sigaction is valid; the handler is the caller's promise.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler;
                action.sa_flags = flags;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }

    /// Gives [`SIGNALS`] their default action again (those started ignored stay ignored).
    pub(crate) fn restore_defaults() {
        let ignored = inherited_ignored();
        for signal in SIGNALS {
            if ignored & (1 << signal) != 0 {
                continue;
            }
            // SAFETY: restoring the default disposition.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }

    /// Forwards the signals to `pid` until [`Forwarding::stop`].
    pub struct Forwarding;

    extern "C" fn forward(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        _context: *mut libc::c_void,
    ) {
        // Pending with the signal counted last (the main thread has not acted on it yet,
        // or it came within `SAME_DELIVERY_NS`): the same interrupt, not forwarded again (the
        // program could not act on the first yet), named in a note where it is another.
        let counted = LAST.load(Ordering::SeqCst);
        if UNSEEN.load(Ordering::SeqCst) || together(signal) {
            if signal != counted {
                FOLDED.fetch_or(1 << signal, Ordering::SeqCst);
            }
            return;
        }
        UNSEEN.store(true, Ordering::SeqCst);
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let code = unsafe { (*info).si_code };
        // The terminal signals the whole foreground process group (si_code SI_KERNEL): the
        // program got this signal already.
        if code != libc::SI_KERNEL {
            PENDING.store(signal, Ordering::SeqCst);
            DESCENDANTS_PENDING.store(signal, Ordering::SeqCst);
            send_pending();
        }
        FORWARDED.store(signal, Ordering::Relaxed);
        RECEIVED.fetch_add(1, Ordering::SeqCst);
    }

    /// Sends the pending signal to the program once its pid is known. Both the handler and
    /// [`Forwarding::forward_to`] call it after their store, and the swap lets exactly one
    /// of them send.
    fn send_pending() {
        let pid = CHILD.load(Ordering::SeqCst);
        if pid > 0 {
            let signal = PENDING.swap(0, Ordering::SeqCst);
            if signal != 0 {
                // SAFETY: kill is async-signal-safe; `pid` is our child, not yet reaped.
                unsafe { libc::kill(pid, signal) };
            }
        }
    }

    /// Installs the handlers; signals are held until [`Forwarding::forward_to`]. Makes this
    /// process the subreaper of the program's processes (Linux), so that orphans are
    /// reparented here and can be waited for.
    pub fn install() -> Forwarding {
        forget_repeats();
        // SAFETY: `forward` is an SA_SIGINFO handler that only touches atomics and calls
        // kill, both async-signal-safe. No SA_RESTART: waitpid returns EINTR, and the main
        // thread then forwards the signal to the program's descendants.
        unsafe {
            set_handlers(forward as *const () as usize, libc::SA_SIGINFO);
        }
        #[cfg(target_os = "linux")]
        // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag and touches no memory.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        }
        Forwarding
    }

    /// The pids of every live descendant of this process (from `/proc`; empty elsewhere).
    pub fn descendants() -> Vec<u32> {
        let mut parents: Vec<(u32, u32)> = Vec::new();
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                    continue;
                };
                // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
                let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
                let mut fields = after.split_whitespace();
                let (state, ppid) = (fields.next(), fields.next().and_then(|p| p.parse().ok()));
                // A zombie has nothing left to signal.
                if let (Some(state), Some(ppid)) = (state, ppid)
                    && state != "Z"
                {
                    parents.push((pid, ppid));
                }
            }
        }
        let mut found = vec![std::process::id()];
        let mut at = 0;
        while at < found.len() {
            let parent = found[at];
            found.extend(
                parents
                    .iter()
                    .filter(|(_, p)| *p == parent)
                    .map(|(c, _)| *c),
            );
            at += 1;
        }
        found.remove(0);
        found
    }

    impl Forwarding {
        /// Forwards to `pid` from now on, and sends it a signal received before.
        pub fn forward_to(&self, pid: u32) {
            CHILD.store(pid as i32, Ordering::SeqCst);
            send_pending();
        }

        /// Sends a signal forwarded to the program since the last call to every other
        /// process it started (a shell's children do not get the shell's signal).
        pub fn forward_to_descendants(&self) {
            let signal = DESCENDANTS_PENDING.swap(0, Ordering::SeqCst);
            if signal == 0 {
                return;
            }
            let child = CHILD.load(Ordering::SeqCst);
            for pid in descendants() {
                if pid as i32 != child {
                    // SAFETY: kill has no memory preconditions; `pid` is a live descendant.
                    unsafe { libc::kill(pid as i32, signal) };
                }
            }
        }

        /// After a signal: a second one notes that the program runs on (it caught or ignored
        /// the first), a third kills it (while `child_alive`: not yet reaped) and every
        /// process it started with SIGKILL. Each note is printed once.
        pub fn escalate(&self, program: &std::ffi::OsStr, child_alive: bool) {
            let received = RECEIVED.load(Ordering::SeqCst);
            // Signals from now on are another interrupt (unless within `SAME_DELIVERY_NS`).
            UNSEEN.store(false, Ordering::SeqCst);
            self.note_forwarded(program);
            let signal = super::signal_text(FORWARDED.load(Ordering::Relaxed));
            let name = super::name(program);
            if received >= 2
                && ESCALATED
                    .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                crate::output::note(format_args!(
                    "{name} is still running after {signal}; interrupt once more to \
                     kill it and the processes it started (SIGKILL)"
                ));
            }
            if received >= 3 && ESCALATED.swap(2, Ordering::SeqCst) < 2 {
                let child = CHILD.load(Ordering::SeqCst);
                if child_alive && child > 0 {
                    // SAFETY: kill has no memory preconditions; `child` is not yet reaped.
                    unsafe { libc::kill(child, libc::SIGKILL) };
                }
                for pid in descendants() {
                    if pid as i32 != child {
                        // SAFETY: as above; `pid` is a live descendant.
                        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    }
                }
                crate::output::note(format_args!(
                    "third interrupt: killed {name} and the processes it started \
                     (SIGKILL); each trace ends with what it wrote"
                ));
            }
        }

        /// Notes the signal forwarded (once) with the signals that came with it, or, noted
        /// already, signals that came with it since. [`Forwarding::escalate`] calls it as
        /// the main thread's wait is interrupted, and the caller once the program has
        /// exited: a signal delivered to another thread interrupts no wait, and its note,
        /// printed only then, had lost what came with it (a loaded machine's test run).
        pub fn note_forwarded(&self, program: &std::ffi::OsStr) {
            let forwarded = FORWARDED.load(Ordering::Relaxed);
            let folded = FOLDED.swap(0, Ordering::SeqCst);
            if forwarded == 0 {
                return;
            }
            let signal = super::signal_text(forwarded);
            let name = super::name(program);
            if !NOTED.swap(true, Ordering::SeqCst) {
                if !crate::output::quiet() {
                    let with = if folded == 0 {
                        String::new()
                    } else {
                        format!(
                            " ({} came with it: the same interrupt, not forwarded)",
                            signals_text(folded)
                        )
                    };
                    // One write: the program's processes write to the same stderr meanwhile
                    // (a shell's "Terminated" for a child the signal killed).
                    let note = format!(
                        "note: hrx-trace received {signal} and forwarded it to {name}{with}\n"
                    );
                    let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
                }
            } else if folded != 0 {
                crate::output::note(format_args!(
                    "hrx-trace received {} with {signal}: the same interrupt, not forwarded",
                    signals_text(folded)
                ));
            }
        }

        /// Whether the third interrupt killed the program and everything it started.
        pub fn killed_all(&self) -> bool {
            ESCALATED.load(Ordering::SeqCst) == 2
        }

        /// Stops forwarding (the program has exited) and returns the signal received, if
        /// any. Later signals have their default action again.
        pub fn stop(self) -> Option<i32> {
            NOTED.store(false, Ordering::SeqCst);
            CHILD.store(0, Ordering::SeqCst);
            PENDING.store(0, Ordering::SeqCst);
            DESCENDANTS_PENDING.store(0, Ordering::SeqCst);
            RECEIVED.store(0, Ordering::SeqCst);
            ESCALATED.store(0, Ordering::SeqCst);
            UNSEEN.store(false, Ordering::SeqCst);
            FOLDED.store(0, Ordering::SeqCst);
            restore_defaults();
            match FORWARDED.swap(0, Ordering::Relaxed) {
                0 => None,
                signal => Some(signal),
            }
        }
    }
}

#[cfg(not(unix))]
mod signals {
    pub struct Forwarding;
    pub fn install() -> Forwarding {
        Forwarding
    }
    pub fn descendants() -> Vec<u32> {
        Vec::new()
    }
    impl Forwarding {
        pub fn forward_to(&self, _pid: u32) {}
        pub fn forward_to_descendants(&self) {}
        pub fn escalate(&self, _program: &std::ffi::OsStr, _child_alive: bool) {}
        pub fn note_forwarded(&self, _program: &std::ffi::OsStr) {}
        pub fn killed_all(&self) -> bool {
            false
        }
        pub fn stop(self) -> Option<i32> {
            None
        }
    }
}

/// The program's end when hrx-trace itself dies.
mod parent_death {
    /// Makes the program receive SIGTERM when hrx-trace dies (Linux's parent-death signal),
    /// so that `record` killed with SIGKILL (which it cannot forward) does not leave the
    /// program running on as an orphan with its trace growing. SIGTERM, not SIGKILL: the
    /// program's runtime writes what it holds and notes the signal (its fatal-signal flush),
    /// and a program that catches SIGTERM can close its trace. A program that ignores
    /// SIGTERM runs on.
    ///
    /// Only the program itself gets it: the signal is not inherited by the processes it
    /// starts, so under `record -- sh -c 'prog'` the shell gets SIGTERM and `prog` runs on
    /// unless the shell passes it on (with hrx-trace gone, no subreaper waits for it).
    /// Killing the process group (`kill -TERM -PGID`, hrx-trace's group) reaches them all.
    /// The kernel sends it when the thread that spawned the program exits: hrx-trace spawns
    /// from its main thread, which lives until the end.
    #[cfg(target_os = "linux")]
    pub fn set(command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and calls only prctl and
        // getppid, both async-signal-safe; it allocates nothing.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // hrx-trace died between the fork and the prctl: no signal will come.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn set(_command: &mut std::process::Command) {}
}

/// `signal N (NAME)`, or `signal N` for a signal without a name here.
pub(crate) fn signal_text(signal: i32) -> String {
    match signal_name(signal) {
        Some(name) => format!("signal {signal} ({name})"),
        None => format!("signal {signal}"),
    }
}

#[cfg(not(unix))]
pub(crate) fn signal_name(_signal: i32) -> Option<&'static str> {
    None
}

#[cfg(unix)]
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    hrx_capture::schema::signal_name(signal)
}

/// Another trace of this recording, `trace`'s process's own, begun after it: the program image
/// that wrote `trace` (`path`) ran exec (same pid, a later session), leaving it unclosed.
fn exec_successor(
    path: &Path,
    trace: &TraceInfo,
    written: &[std::path::PathBuf],
) -> Option<std::path::PathBuf> {
    let session = trace.session.as_ref()?;
    written
        .iter()
        .filter(|other| other.as_path() != path)
        .find(|other| {
            crate::info::read(other).is_ok_and(|info| {
                info.session.is_some_and(|later| {
                    later.pid == session.pid && later.wall_clock_utc >= session.wall_clock_utc
                })
            })
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::{incomplete_warning, load_note, read_while_held};
    use hrx_replay::HostLoad;
    use std::path::Path;

    /// A trace read while its recorder held it is said to be being recorded even when the
    /// recording ends before the read does: whether a recorder holds it is asked as the read
    /// begins, not after it (then the recorder had closed, and what was read, as far as it
    /// had been written, was called "not closed cleanly").
    #[test]
    fn a_trace_is_asked_whether_it_is_being_recorded_before_it_is_read() {
        use hrx_capture::{Recorder, RecorderOptions};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.hrxt");
        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        // The recording ends during the read.
        let (read, held) = read_while_held(&path, || {
            let len = std::fs::metadata(&path).unwrap().len();
            recorder.close().unwrap();
            len
        });
        assert!(held, "a recorder held the trace as its read began");
        assert!(read > 0);
        // Nobody holds it now, nor as a later read begins.
        assert!(!read_while_held(&path, || ()).1);
    }

    /// A trace closed cleanly whose recorder lost records is said as such, not in a crash's
    /// words ("it holds what was written before prog ended"); one not closed still is.
    #[test]
    fn a_clean_close_that_lost_records_is_not_said_as_a_crash() {
        let mut lossy = hrx_capture::Recovery {
            closed: true,
            clean_close: true,
            missing_submissions: 2,
            ..hrx_capture::Recovery::default()
        };
        lossy.lost.observe(&hrx_capture::Record::RecordsLost(
            hrx_capture::schema::RecordsLost {
                time_ns: 0,
                lossy: true,
                total: 3,
                by_kind: vec![
                    hrx_capture::schema::LostKind {
                        kind: "RegionTiming".into(),
                        records: 1,
                    },
                    hrx_capture::schema::LostKind {
                        kind: "Submit".into(),
                        records: 2,
                    },
                ],
            },
        ));
        let path = Path::new("t.hrxt");
        assert_eq!(
            incomplete_warning(path, &lossy, "prog ended (exit code 0)"),
            "t.hrxt: closed cleanly, but the recorder lost records while recording: 3 records \
             lost (Submit 2, RegionTiming 1) in lossy mode; the trace holds every other record"
        );
        let crashed = hrx_capture::Recovery::default();
        assert_eq!(
            incomplete_warning(path, &crashed, "prog ended (signal 9)"),
            "t.hrxt: not closed cleanly; it holds what was written before prog ended (signal 9)"
        );
    }

    /// A recording on a loaded host says so, with the loads and CPUs; a quiet one does not.
    #[test]
    fn a_recording_on_a_loaded_host_is_noted() {
        let host = |before, after| HostLoad {
            cpus: 2,
            load_before: before,
            load_after: after,
        };
        assert_eq!(load_note(&host(Some(0.5), Some(1.9))), None);
        let note = load_note(&host(Some(7.05), None)).expect("loaded");
        assert!(
            note.starts_with(
                "the host was loaded while recording, its 1-minute load 7.05 (3.52 per CPU on 2 \
                 CPUs) before and unknown after: "
            ),
            "{note}"
        );
        assert!(note.contains("--save-baseline"), "{note}");
    }
}
