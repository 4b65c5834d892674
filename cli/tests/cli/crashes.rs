//! Crash safety of `record -- PROGRAM`: a program that aborts in a host callback, one that
//! segfaults right after a submit, and one that hangs until a signal. The submit, the graph,
//! the kernel and the region that was running are in the trace every time (each case runs
//! a few times), with the signal, and `info` names them. The program is
//! `cli/examples/crashing.rs`, which `cargo test` builds.
//!
//! Structural: nothing waits for a flush period; the records reach the file through the
//! fatal-signal flush, which also writes the [`FatalSignal`] the tests look for.

use crate::util::*;
use hrx_capture::Record;
use hrx_capture::schema::{FatalSignal, Queue, SignalWitness};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Runs of each case.
const RUNS: usize = 3;

/// The `crashing` example.
fn crashing() -> PathBuf {
    crate::util::example("crashing")
}

/// `record -o FILE -- crashing CASE`, run in `dir`.
fn record_crashing(dir: &Path, file: &str, case: &str) -> Command {
    let mut record = hrx_trace(dir);
    record
        .args(["record", "-o", file, "--"])
        .arg(crashing())
        .arg(case);
    record
}

/// The lines of a child's standard output.
type StdoutLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// `command` spawned, its standard output a pipe and its standard error `stderr`, once it
/// said its first line, which starts with `prefix`: the child, the rest of its standard
/// output, and that line after `prefix`.
fn spawned_until(
    command: &mut Command,
    stderr: Stdio,
    prefix: &str,
) -> (Child, StdoutLines, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let said = line
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (child, lines, said)
}

/// What the trace at `path` must hold after the program died of `signal`: one submit, the
/// graph's three operations, its kernel, and the host callback's region started and never
/// finished; the signal as the program's own handler saw it. Returns what `info` says: the
/// start of the `capture` line, "during submission S, region R running".
fn check_trace(path: &Path, signal: i32) -> String {
    let trace = hrx_capture::read_all(path).unwrap();
    let r = &trace.recovery;
    assert!(!r.closed, "{path:?}: {r:?}");
    assert_eq!(
        (r.skipped_blocks, r.skipped_records, r.bytes_discarded),
        (0, 0, 0),
        "{path:?}: every block written is whole: {r:?}"
    );
    let count = |kind: &str| {
        trace
            .records
            .iter()
            .filter(|r| r.kind_name() == kind)
            .count()
    };
    assert_eq!(count("Submit"), 1, "{path:?}");
    assert_eq!(count("GraphOp"), 3, "{path:?}: fill, kernel, callback");
    assert_eq!(count("KernelLoaded"), 1, "{path:?}");
    let prepared = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Prepared(p) => Some(p),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{path:?}: no Prepared"));
    // Started and never finished: the region that was running.
    let running: Vec<u32> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionStarted(s) => Some(s.region.0),
            _ => None,
        })
        .filter(|region| {
            !trace
                .records
                .iter()
                .any(|r| matches!(r, Record::RegionTiming(t) if t.region.0 == *region))
        })
        .collect();
    assert_eq!(running.len(), 1, "{path:?}: {running:?}");
    let region = &prepared.regions[running[0] as usize];
    assert_eq!(
        region.queue,
        Queue::Host,
        "{path:?}: the callback was running"
    );
    let fatal: Vec<&FatalSignal> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::FatalSignal(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(fatal.len(), 1, "{path:?}: {fatal:?}");
    assert_eq!(
        (fatal[0].signal, fatal[0].witness),
        (signal, SignalWitness::Handler),
        "{path:?}"
    );
    let submission = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Submit(s) => Some(s.submission),
            _ => None,
        })
        .unwrap();
    format!(
        "during submission {submission}, region {} running",
        running[0]
    )
}

/// `info`'s capture line for the trace `file` in `dir`.
fn capture_line(dir: &Path, file: &str) -> String {
    let info = run(dir, &["info", file]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    field(&stdout(&info), "capture").to_owned()
}

#[test]
fn a_program_that_aborts_in_a_host_callback_keeps_the_running_region() {
    let dir = tempfile::tempdir().unwrap();
    for run_index in 0..RUNS {
        let file = format!("abort{run_index}.hrxt");
        let out = record_crashing(dir.path(), &file, "abort")
            .output()
            .unwrap();
        assert_eq!(code(&out), 128 + libc::SIGABRT, "{}", stderr(&out));
        let during = check_trace(&dir.path().join(&file), libc::SIGABRT);
        let says = format!("crashed: SIGABRT {during}");
        let capture = capture_line(dir.path(), &file);
        assert!(capture.starts_with(&says), "{capture}");
        assert!(
            stdout(&out).contains(&says),
            "the summary says it too: {}",
            stdout(&out)
        );
    }
}

#[test]
fn a_program_that_segfaults_right_after_a_submit_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    for run_index in 0..RUNS {
        let file = format!("segv{run_index}.hrxt");
        let out = record_crashing(dir.path(), &file, "segv").output().unwrap();
        assert_eq!(code(&out), 128 + libc::SIGSEGV, "{}", stderr(&out));
        let during = check_trace(&dir.path().join(&file), libc::SIGSEGV);
        let capture = capture_line(dir.path(), &file);
        assert!(
            capture.starts_with(&format!("crashed: SIGSEGV {during}")),
            "{capture}"
        );
        // Where the trace ends names the signal too, not three guesses (it said "crashed or
        // was killed, or the trace could not be written whole"; session 53's fresh user).
        let info = run(dir.path(), &["info", &file]);
        let recovered = field(&stdout(&info), "recovered").to_owned();
        assert!(
            recovered.ends_with("(the recording process died of SIGSEGV)"),
            "{recovered}"
        );
    }
}

/// A hang, killed the way a CI timeout kills it: SIGTERM to `record`, whose program is a
/// shell running the hanging program (so the signal must reach a grandchild).
#[test]
fn a_hang_stopped_by_sigterm_through_a_shell_keeps_the_running_region() {
    let dir = tempfile::tempdir().unwrap();
    for run_index in 0..RUNS {
        let file = format!("hang{run_index}.hrxt");
        // `; true`: the shell stays the parent (no exec of the last command).
        let (child, lines, _) = spawned_until(
            hrx_trace(dir.path())
                .args(["record", "-o", &file, "--", "sh", "-c", "\"$C\" hang; true"])
                .env("C", crashing()),
            Stdio::piped(),
            "running ",
        );
        // While the program hangs, its recorder writes the trace: `stats` calls the region
        // the hang is in running now (once the writer's next flush has written its start).
        // Asserted once the program is stopped: a failure must not leave it hanging.
        let live = (run_index == 0).then(|| running_line(dir.path(), &file, true));
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        let out = child.wait_with_output().unwrap();
        if let Some(running) = live {
            let running = running.expect("a running line while recorded, within a minute");
            assert!(
                running.ends_with(&format!(", running now ({})", hrx_capture::BEING_RECORDED)),
                "{running}"
            );
        }
        let err = stderr(&out);
        assert_eq!(code(&out), 128 + libc::SIGTERM, "{err}");
        assert!(rest.iter().any(|l| l.starts_with("file ")), "{rest:?}");
        let during = check_trace(&dir.path().join(&file), libc::SIGTERM);
        let capture = capture_line(dir.path(), &file);
        assert!(
            capture.starts_with(&format!("killed by SIGTERM {during}")),
            "{capture}"
        );
        // Killed, nobody writes it: the region was still running when the trace ends, as
        // `view` and the exports say (`stats` said "running now" of it).
        let running = running_line(dir.path(), &file, false).expect("a running line");
        assert!(
            running.ends_with(&format!(", {}", hrx_analysis::RUNNING_AT_END)),
            "{running}"
        );
        assert!(!running.contains("now"), "{running}");
    }
}

/// SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM and SIGPROF sent to `record` are forwarded to the
/// program as SIGTERM is, and named: `record` exits 128+N after its summary, whose `ended`
/// line (as `info`'s `capture` line) names the signal and the region the program hung in.
/// They ended `record` by their default action: the program got SIGTERM (its parent-death
/// signal) and its trace named that, not the signal sent.
#[test]
fn the_user_and_timer_signals_are_forwarded_and_named() {
    let dir = tempfile::tempdir().unwrap();
    for signal in [
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
    ] {
        let name = hrx_capture::schema::signal_name(signal).unwrap();
        let file = format!("{name}.hrxt");
        // The program hangs in its callback once it said so; `record` handles signals from
        // before it started the program.
        let (child, lines, _) = spawned_until(
            &mut record_crashing(dir.path(), &file, "hang"),
            Stdio::piped(),
            "running ",
        );
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(128 + signal), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "note: hrx-trace received signal {signal} ({name}) and forwarded it to "
            )),
            "{err}"
        );
        let ended = rest
            .iter()
            .find_map(|l| l.strip_prefix("ended"))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no ended line: {rest:?}"));
        assert!(
            ended.starts_with(&format!("killed by {name} during submission 1, region ")),
            "{ended}"
        );
        let capture = capture_line(dir.path(), &file);
        assert_eq!(capture, format!("{ended} (cut short: never closed)"));
    }
}

/// The `running` line of `stats` of the trace `file` in `dir`, if it has one; `wait`: the
/// trace is being written, so asked again until its writer has flushed the region's start
/// (a liveness limit of a minute, not a measurement).
fn running_line(dir: &Path, file: &str, wait: bool) -> Option<String> {
    for _ in 0..600 {
        let text = stdout(&run(dir, &["stats", file]));
        let line = text.lines().find(|l| l.starts_with("running "));
        if line.is_some() || !wait {
            return line.map(str::to_owned);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    None
}

/// A program that dies with its trace unclosed: `record -q` says what the trace lacks on
/// standard error, beside the program's exit code (it said nothing: the exit code alone).
#[test]
fn record_quiet_says_the_trace_of_a_crashed_program_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["-q", "record", "-o", "q.hrxt", "--"])
        .arg(crashing())
        .arg("abort")
        .output()
        .unwrap();
    assert_eq!(code(&out), 128 + libc::SIGABRT, "{}", stderr(&out));
    // The program's own line only: no summary.
    assert!(stdout(&out).starts_with("running "), "{}", stdout(&out));
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("warning: q.hrxt: not closed cleanly; ")
                && l.ends_with(&format!(
                    "(killed by signal {} (SIGABRT), exit code {})",
                    libc::SIGABRT,
                    128 + libc::SIGABRT
                ))),
        "{err}"
    );
    // `stats`' text names the signal too, as `info` and `view` do (only its JSON did), and
    // where the trace ends, in `info`'s words (it said `crashed: SIGABRT` alone).
    let stats = stdout(&run(dir.path(), &["stats", "q.hrxt"]));
    let ended = field(&stats, "ended");
    assert!(
        ended.starts_with("crashed: SIGABRT during submission 1, region "),
        "{stats}"
    );
    let capture = capture_line(dir.path(), "q.hrxt");
    assert_eq!(capture, format!("{ended} (cut short: never closed)"));
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", "q.hrxt"]))).unwrap();
    assert_eq!(json["ended"], ended, "{json}");
    assert_eq!(json["signal"], "crashed: SIGABRT", "{json}");
}

/// SIGKILL runs no handler: `record` notes the death in the trace the program left.
#[test]
fn a_program_killed_by_sigkill_is_noted_by_record() {
    let dir = tempfile::tempdir().unwrap();
    let file = "kill.hrxt";
    record_killed(
        record_crashing(dir.path(), file, "hang"),
        "running ",
        |_, _| (),
    );
    noted_sigkill(&dir.path().join(file));
    let capture = capture_line(dir.path(), file);
    assert!(capture.starts_with("killed by SIGKILL"), "{capture}");
    assert!(capture.ends_with("(cut short: never closed)"), "{capture}");
}

/// The note of a SIGKILL is dated when `record` reaped the program, not when it wrote the
/// note: that came after every process the program left had ended (and the trace was read),
/// so a killed program's trace ran on to the end of its leftovers (seconds, a break-it pass).
/// Here the program leaves a `cat` of a FIFO behind, released only once `record` said it
/// waits for it: it says so after it reaped the program and read the clock, so the release
/// comes after the reaping by causality, with no margin (the test read `/proc` to see the
/// reaping and released 300 ms later; CI's loaded run once saw the pid gone 0.9 µs before
/// `record` read its clock).
#[cfg(target_os = "linux")]
#[test]
fn a_sigkill_is_noted_at_its_reaping_not_after_what_the_program_left() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("release");
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches no other memory.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
    let file = "left.hrxt";
    let mut record = hrx_trace(dir.path());
    record
        .args(["record", "-o", file, "--", "sh", "-c"])
        .arg(r#"cat "$0" > /dev/null 2>&1 & exec "$1" hang"#)
        .arg(&fifo)
        .arg(crashing());
    let mut released_ns = 0;
    record_killed(record, "running ", |_, stderr| {
        // A liveness limit, not a measurement: the note comes at the reaping, or never.
        let waiting = stderr.wait_for(|l| l.contains("waiting for 1 process that sh left"));
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) },
            0
        );
        released_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        drop(std::fs::OpenOptions::new().write(true).open(&fifo).unwrap());
        assert!(
            waiting,
            "record never said it waits for the leftover: {:?}",
            stderr.seen
        );
    });
    let path = dir.path().join(file);
    let trace = hrx_capture::read_all(&path).unwrap();
    let base = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::SessionStart(s) => Some(s.monotonic_base_ns),
            _ => None,
        })
        .unwrap();
    let fatal = noted_sigkill(&path);
    assert!(
        fatal.time_ns < released_ns - base,
        "noted at {} ns, after the program's leftovers were released at {} ns",
        fatal.time_ns,
        released_ns - base
    );
}

/// `record`'s standard error, line by line as it comes.
struct Lines {
    lines: std::sync::mpsc::Receiver<String>,
    /// The lines read so far.
    seen: Vec<String>,
}

impl Lines {
    fn of(stream: impl std::io::Read + Send + 'static) -> Lines {
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until one satisfies `done` (true), the stream ends, or two minutes pass
    /// without one (false: a liveness limit, not a time bound).
    fn wait_for(&mut self, done: impl Fn(&str) -> bool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                return false;
            };
            let found = done(&line);
            self.seen.push(line);
            if found {
                return true;
            }
        }
    }

    /// Every line, once the stream has ended.
    fn all(mut self) -> String {
        self.seen.extend(self.lines.iter());
        self.seen.join("\n")
    }
}

/// Runs `record` (the command) until the recorded program prints its first line, `PREFIX
/// PID`, kills that program with SIGKILL, calls `then` with its pid and `record`'s standard
/// error, and waits for `record`, which must exit as the program did.
fn record_killed(mut record: Command, prefix: &str, then: impl FnOnce(i32, &mut Lines)) {
    let (mut child, lines, pid) = spawned_until(&mut record, Stdio::piped(), prefix);
    let mut stderr = Lines::of(child.stderr.take().unwrap());
    let pid: i32 = pid.parse().unwrap();
    // SAFETY: kill has no memory preconditions; the pid is the recorded program's.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    then(pid, &mut stderr);
    let _: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    let stderr = stderr.all();
    assert_eq!(status.code(), Some(128 + libc::SIGKILL), "{stderr}");
}

/// The one [`FatalSignal`] of the trace at `path`: a SIGKILL that `record` noted.
fn noted_sigkill(path: &Path) -> FatalSignal {
    let fatal = fatal_signals(path);
    assert_eq!(fatal.len(), 1, "{fatal:?}");
    assert_eq!(
        (fatal[0].signal, fatal[0].witness),
        (libc::SIGKILL, SignalWitness::Parent)
    );
    fatal[0]
}

/// The [`FatalSignal`]s of the trace at `path`.
fn fatal_signals(path: &Path) -> Vec<FatalSignal> {
    let trace = hrx_capture::read_all(path).unwrap();
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::FatalSignal(f) => Some(*f),
            _ => None,
        })
        .collect()
}

/// A program with its own SIGSEGV handler (installed before the runtime, as a JVM's) that
/// survives a fault on its guard page, submits 7 more times, then really crashes: the trace
/// holds all 12 submissions and one crash, the real one (the recorder's handler used to
/// note the survived fault as the crash, put the program's handler back for good, and flush
/// nothing at the real crash: the trace held 5 submissions).
#[test]
fn a_program_that_survives_a_fault_with_its_own_handler_keeps_its_recorder() {
    let dir = tempfile::tempdir().unwrap();
    let file = "survive.hrxt";
    let out = record_crashing(dir.path(), file, "survive")
        .output()
        .unwrap();
    assert_eq!(code(&out), 128 + libc::SIGSEGV, "{}", stderr(&out));
    assert!(stdout(&out).contains("survived "), "{}", stdout(&out));
    let path = dir.path().join(file);
    let trace = hrx_capture::read_all(&path).unwrap();
    let count = |kind: &str| {
        trace
            .records
            .iter()
            .filter(|r| r.kind_name() == kind)
            .count()
    };
    assert_eq!(
        (count("Submit"), count("SubmissionDone")),
        (12, 12),
        "every submission, those after the survived fault too"
    );
    let fatal = fatal_signals(&path);
    assert_eq!(fatal.len(), 1, "{fatal:?}");
    assert_eq!(
        (fatal[0].signal, fatal[0].witness, fatal[0].fault_address),
        (libc::SIGSEGV, SignalWitness::Handler, Some(16)),
        "the real crash, not the survived fault"
    );
    let capture = capture_line(dir.path(), file);
    assert!(
        capture.starts_with("crashed: SIGSEGV after 12 submissions"),
        "{capture}"
    );
}

/// `kill -SEGV` and `kill -BUS` sent to a traced Rust program: Rust's own handler returns
/// from a signal that is not a stack overflow, so the program runs on, as it does untraced.
/// The trace must not say it crashed, and a later SIGKILL is noted by `record` (the trace
/// used to say "crashed: SIGSEGV", and the SIGKILL went unnoted).
#[test]
fn a_segv_or_bus_sent_to_a_program_that_survives_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    // Untraced, the program survives both signals.
    let (mut alone, _lines, _) = spawned_until(
        Command::new(crashing())
            .arg("sent")
            .env_remove(hrx_capture::TRACE_ENV),
        Stdio::inherit(),
        "survived ",
    );
    alone.kill().unwrap();
    alone.wait().unwrap();

    let file = "sent.hrxt";
    record_killed(
        record_crashing(dir.path(), file, "sent"),
        "survived ",
        |_, _| (),
    );
    noted_sigkill(&dir.path().join(file));
    let capture = capture_line(dir.path(), file);
    assert!(capture.starts_with("killed by SIGKILL"), "{capture}");
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// `record` itself killed with SIGKILL: the program gets SIGTERM (its parent-death signal)
/// and ends, its runtime noting the signal, instead of running on as an orphan with its
/// trace growing.
#[test]
fn a_program_whose_recorder_is_sigkilled_ends_with_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let file = "orphan.hrxt";
    let (mut child, _lines, pid) = spawned_until(
        &mut record_crashing(dir.path(), file, "hang"),
        Stdio::null(),
        "running ",
    );
    let pid: i32 = pid.parse().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // A liveness limit, not a measurement: the program ends at once, or never (it hangs).
    let mut waited = 0;
    while !ended(pid) {
        if waited == 600 {
            // SAFETY: kill has no memory preconditions; the pid is the orphaned program's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the program {pid} ran on for a minute after its recorder was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    let fatal = fatal_signals(&dir.path().join(file));
    assert_eq!(fatal.len(), 1, "{fatal:?}");
    assert_eq!(
        (fatal[0].signal, fatal[0].witness),
        (libc::SIGTERM, SignalWitness::Handler),
        "the runtime noted the parent-death signal"
    );
}

/// A crashed trace read by the followers and exporters: `stats --follow` ends at its
/// `FatalSignal` and says how (it refreshed forever, waiting for a close that never comes),
/// and `export` shows the region the crash was in, to the trace's end, and the signal.
#[test]
fn followers_and_exports_end_a_crashed_trace_at_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let file = "segv.hrxt";
    let out = record_crashing(dir.path(), file, "segv").output().unwrap();
    assert_eq!(code(&out), 128 + libc::SIGSEGV, "{}", stderr(&out));

    let out = follow_to_its_end(dir.path(), &[file]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("live: ended: crashed: SIGSEGV"),
        "{}",
        stdout(&out)
    );
    let json = run(dir.path(), &["stats", "--json", file]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["signal"], "crashed: SIGSEGV");

    let export = run(
        dir.path(),
        &["export", file, "--format", "chrome", "-o", "segv.json"],
    );
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    // The summary names the mark the file holds for its cut-short end: "0 events" alone read
    // as if the export lacked the `trace incomplete` it wrote (fresh-user pass).
    assert!(
        stdout(&export).contains("recorder marks (1 of them trace incomplete)"),
        "{}",
        stdout(&export)
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("segv.json")).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(
        (events.iter())
            .filter(|e| e["ph"] == "i" && e["name"] == "trace incomplete")
            .count(),
        1
    );
    let running = events
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(" (running at end)"))
        })
        .count();
    assert_eq!(running, 1, "the callback the crash was in");
    let fatal: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "fatal signal")
        .collect();
    assert_eq!(fatal.len(), 1);
    assert_eq!(fatal[0]["args"]["signal"], "SIGSEGV");
    assert_eq!(fatal[0]["args"]["fault_address"], "0x10");
    // Parquet's summary counts the running region's `events` row apart, in the other
    // formats' words: 0 events as `view` lists them, as the Chrome export's says (it said
    // "1 event": a break-it pass).
    assert!(
        stdout(&export).contains(", 0 events (as view lists them), "),
        "{}",
        stdout(&export)
    );
    #[cfg(feature = "parquet")]
    {
        let parquet = run(
            dir.path(),
            &["export", file, "--format", "parquet", "-o", "tables"],
        );
        assert_eq!(code(&parquet), 0, "{}", stderr(&parquet));
        assert!(
            stdout(&parquet).contains(": 0 events (as view lists them), 1 region running at end, "),
            "{}",
            stdout(&parquet)
        );
    }
}

/// `trim` of a crashed trace: the trim is closed (by `trim`) and keeps the signal's record,
/// so `info` read it as a run that went on: "trimmed ... (it survived SIGABRT)". It says that
/// the recording it was cut from crashed, and `trim` warns that its input was never closed.
#[test]
fn a_trim_of_a_crashed_trace_says_the_recording_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_crashing(dir.path(), "c.hrxt", "abort")
        .output()
        .unwrap();
    assert_eq!(code(&out), 128 + libc::SIGABRT, "{}", stderr(&out));
    let trim = run(
        dir.path(),
        &["trim", "c.hrxt", "-o", "t.hrxt", "--submissions", "1.."],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    assert!(
        stderr(&trim).starts_with("warning: c.hrxt: not closed cleanly; "),
        "{}",
        stderr(&trim)
    );
    let capture = capture_line(dir.path(), "t.hrxt");
    assert_eq!(
        capture,
        "trimmed from an incomplete recording (the process crashed: SIGABRT; see range)"
    );
    let info = stdout(&run(dir.path(), &["info", "t.hrxt"]));
    assert!(
        field(&info, "range")
            .starts_with("trimmed from c.hrxt (incomplete: the process crashed: SIGABRT), "),
        "{info}"
    );
}

/// `stats`' `ended` line (text and `--json`) of the trace `file` in `dir`, checked equal:
/// `None` where it has none.
fn stats_ended(dir: &Path, file: &str) -> Option<String> {
    let text = run(dir, &["stats", file]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let ended = stdout(&text)
        .lines()
        .find_map(|l| l.strip_prefix("ended "))
        .map(|l| l.trim().to_owned());
    let json = run(dir, &["stats", "--json", file]);
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let json: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(json["ended"].as_str(), ended.as_deref(), "{file}: {json}");
    ended
}

/// A trim of a recording that crashed after the trimmed range: `stats` says what `info`
/// says, that it was trimmed from an incomplete recording. It said `crashed: SIGSEGV after
/// 3 submissions` (text and JSON `ended`), placing a crash that came after submission 12 inside
/// the range of 2..5 (a break-it pass, session 51).
#[test]
fn stats_of_a_trim_of_a_crashed_recording_says_what_info_says() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_crashing(dir.path(), "sv.hrxt", "survive")
        .output()
        .unwrap();
    assert_eq!(code(&out), 128 + libc::SIGSEGV, "{}", stderr(&out));
    for (trim, range) in [("a.hrxt", "2..5"), ("b.hrxt", "10..")] {
        let out = run(
            dir.path(),
            &["trim", "sv.hrxt", "-o", trim, "--submissions", range],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let capture = capture_line(dir.path(), trim);
        assert_eq!(
            capture,
            "trimmed from an incomplete recording (the process crashed: SIGSEGV; see range)"
        );
        assert_eq!(stats_ended(dir.path(), trim).as_deref(), Some(&*capture));
    }
}

/// A trace never closed and naming no signal (a program traced without `record`, killed by
/// SIGKILL; a file cut short; a recording whose writes failed, as on a full disk): `stats`
/// has an `ended` line (JSON `ended`) in the words of `info`'s `capture` line and of
/// `record`'s summary, `never closed after 0 submissions`. It had none (`ended: null`),
/// though the README promises one for every trace that lacks its end (a break-it pass,
/// session 51).
#[test]
fn stats_of_a_trace_never_closed_says_where_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    // A program traced without `record`, killed by SIGKILL while it hangs: nothing notes it.
    let (mut program, _lines, _) = spawned_until(
        Command::new(crashing())
            .arg("hang")
            .env("HRX_TRACE", dir.path().join("killed.hrxt")),
        Stdio::null(),
        "running ",
    );
    program.kill().unwrap();
    program.wait().unwrap();
    // A clean recording cut short, as `head -c` cuts it.
    record_hazards(dir.path(), "whole.hrxt");
    let whole = std::fs::read(dir.path().join("whole.hrxt")).unwrap();
    std::fs::write(dir.path().join("cut.hrxt"), &whole[..whole.len() * 2 / 3]).unwrap();
    // A recording whose writes fail (a file size limit, as a full disk): `record`'s summary
    // says where it ends.
    let full = std::process::Command::new("sh")
        .args([
            "-c",
            &size_limited("record -o full.hrxt --workload hazards"),
        ])
        .current_dir(dir.path())
        .env_remove("HRX_TRACE")
        .output()
        .unwrap();
    assert_error(&full, "the trace is incomplete");
    let recorded = field(&stdout(&full), "ended").to_owned();
    assert_eq!(
        recorded,
        "never closed after 0 submissions",
        "{}",
        stdout(&full)
    );
    for file in ["killed.hrxt", "cut.hrxt", "full.hrxt"] {
        let ended = stats_ended(dir.path(), file).unwrap_or_else(|| panic!("{file}: no ended"));
        assert!(ended.starts_with("never closed "), "{file}: {ended}");
        assert_eq!(
            capture_line(dir.path(), file),
            format!(
                "cut short: {ended} (the process was killed or crashed, or writing the trace \
                 failed)"
            ),
            "{file}"
        );
        if file == "full.hrxt" {
            assert_eq!(ended, recorded);
        }
        // The timeline's trace pane says it too (it had no `ended` line for a trace cut
        // short: a fresh user's pass).
        assert_eq!(
            view_ended(dir.path(), file).as_deref(),
            Some(&*ended),
            "{file}"
        );
    }
    // A clean close has none, as `record`'s summary has none.
    assert_eq!(stats_ended(dir.path(), "whole.hrxt"), None);
    assert_eq!(view_ended(dir.path(), "whole.hrxt"), None);
}

/// The `ended` line of the timeline's trace pane for `file` (its first frame, drawn
/// headless, wide enough for the whole line).
fn view_ended(dir: &Path, file: &str) -> Option<String> {
    let out = hrx_trace(dir)
        .args(["view", file])
        .env("HRX_TUI_HEADLESS_FRAME", "240x60")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{file}: {}", stderr(&out));
    (stdout(&out).lines())
        .find_map(|l| Some(l.split_once("│ended ")?.1))
        .map(|l| l.split('│').next().unwrap_or_default().trim().to_owned())
}

/// Runs `stats --follow ARGS` in `dir` until it ends by itself (a liveness limit of a
/// minute, not a measurement: it ends, or it refreshes forever).
fn follow_to_its_end(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut follow = hrx_trace(dir)
        .args(["stats", "--follow"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while follow.try_wait().unwrap().is_none() {
        if waited == 600 {
            follow.kill().unwrap();
            let out = follow.wait_with_output().unwrap();
            panic!(
                "stats --follow {args:?} still refreshing after a minute: {}",
                stdout(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    follow.wait_with_output().unwrap()
}

/// A trace nobody will ever close: a program traced without `record` (so nothing notes its
/// death) killed by SIGKILL, a trace cut short by `head -c`, a file holding only a header.
/// `stats --follow` follows it while its recorder lives, and ends once nobody holds its lock
/// and it stopped growing, saying so, in text and JSON (it refreshed forever, `0 records/s`).
#[test]
fn followers_end_a_trace_nobody_writes_any_more() {
    const ENDED: &str = "ended: not closed and no recorder is writing it (killed, or cut short)";
    let dir = tempfile::tempdir().unwrap();
    let file = "killed.hrxt";
    let (mut program, _lines, _) = spawned_until(
        Command::new(crashing())
            .arg("hang")
            .env("HRX_TRACE", dir.path().join(file)),
        Stdio::null(),
        "running ",
    );
    let mut follow = hrx_trace(dir.path())
        .args(["stats", "--follow", file])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut followed = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    // Three refreshes: two reads with the recorder's lock held and the file quiet (the
    // program hangs) did not end it.
    let mut refreshes = 0;
    while refreshes < 3 {
        let line = followed
            .next()
            .expect("stats --follow ended early")
            .unwrap();
        assert!(!line.contains("live: ended"), "{line}");
        refreshes += u32::from(line.starts_with("live: "));
    }
    program.kill().unwrap();
    program.wait().unwrap();
    let rest: Vec<String> = followed.map(Result::unwrap).collect();
    assert!(follow.wait().unwrap().success());
    assert!(
        rest.iter()
            .any(|l| l.starts_with(&format!("live: {ENDED} ("))),
        "{rest:?}"
    );

    // Cut short, and only a header: never written by a recorder that lived.
    let whole = std::fs::read(dir.path().join(file)).unwrap();
    let header_len = hrx_capture::TraceReader::open(dir.path().join(file))
        .unwrap()
        .header()
        .header_len as usize;
    std::fs::write(dir.path().join("cut.hrxt"), &whole[..whole.len() * 2 / 3]).unwrap();
    std::fs::write(dir.path().join("header.hrxt"), &whole[..header_len]).unwrap();
    for cut in ["cut.hrxt", "header.hrxt"] {
        let out = follow_to_its_end(dir.path(), &[cut]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            stdout(&out).contains(&format!("live: {ENDED} (")),
            "{}",
            stdout(&out)
        );
        let out = follow_to_its_end(dir.path(), &["--json", cut]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        // One object a line, the final report last.
        let last = text.lines().last().unwrap_or_default();
        let report: serde_json::Value = serde_json::from_str(last).unwrap();
        assert_eq!(
            report["follow"]["ended"],
            ENDED.strip_prefix("ended: ").unwrap(),
            "{text}"
        );
    }
}

/// A SIGTERM after a 1 MiB write into a host-visible buffer that no region reads
/// (`big_writes N idle_term`: the program submits a fill until the trace writer has stored
/// the write, then raises SIGTERM): the write's hash, parked until a region reads the
/// buffer, is started by the trace writer itself, with no flush, and the fatal-signal flush
/// keeps the `HostWrite`. The program waits for the store, not for a time (a 20 ms wait
/// failed on a loaded machine); that the writer holds such a job at most
/// `hrx_capture::HOLD_LIMIT` is `writer::held_tests::a_never_ready_job_runs_after_the_hold_limit`.
#[test]
fn a_sigterm_soon_after_a_large_host_write_nothing_read_keeps_the_write() {
    let dir = tempfile::tempdir().unwrap();
    for run_index in 0..RUNS {
        let file = format!("term{run_index}.hrxt");
        let out = hrx_trace(dir.path())
            .args(["record", "-o", &file, "--"])
            .arg(crate::util::example("big_writes"))
            .args(["100000", "idle_term"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 128 + libc::SIGTERM, "{}", stderr(&out));
        let trace = hrx_capture::read_all(dir.path().join(&file)).unwrap();
        let count = |kind: &str| {
            trace
                .records
                .iter()
                .filter(|r| r.kind_name() == kind)
                .count()
        };
        assert!(count("Submit") > 0, "the fills ran before the signal");
        assert_eq!(
            (count("HostWrite"), count("RecordsLost")),
            (1, 0),
            "run {run_index}: the host write was lost at the signal"
        );
    }
}
