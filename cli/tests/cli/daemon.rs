//! Programs that do what daemons and thread-heavy servers do while recording: close or
//! `dup2` over every file descriptor, change directory, start thousands of threads. The
//! program is `cli/examples/daemonish.rs`, which `cargo test` builds. Structural: the
//! program flushes its trace itself where the order matters.

use crate::util::*;
use std::path::{Path, PathBuf};

/// The `daemonish` example.
fn daemonish() -> PathBuf {
    crate::util::example("daemonish")
}

/// `hrx-trace record -o t.hrxt -- daemonish ARGS` in `dir`.
fn record(dir: &Path, args: &[&str]) -> std::process::Output {
    hrx_trace(dir)
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(daemonish())
        .args(args)
        .output()
        .unwrap()
}

use crate::util::info_count as count;

/// `info` of the test's trace `t.hrxt`, which closed cleanly.
fn info_closed_cleanly(dir: &Path) -> String {
    let info = crate::util::stdout(&run(dir, &["info", "t.hrxt"]));
    assert!(info.contains("closed       cleanly"), "{info}");
    info
}

/// A daemon closes every descriptor from 3 up and opens its log, which takes the trace's
/// number: the recorder must neither write its blocks into the log nor close it (a debug
/// build aborted: "IO Safety violation"), and reopens the trace, losing nothing.
#[test]
fn a_program_that_closes_every_descriptor_keeps_its_files_and_its_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), &["close-fds"]);
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{stdout}{stderr}");
    let log = std::fs::read(dir.path().join("daemonish-log.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&log),
        "log line\nlog line 2\n",
        "the program's own file holds only its own lines"
    );
    assert!(
        stderr.contains("closed or replaced the trace's file descriptor"),
        "{stderr}"
    );
    let info = info_closed_cleanly(dir.path());
    assert_eq!(count(&info, "Submit"), 12, "{info}");
    assert_eq!(
        count(&info, "AnnotationMarker"),
        2,
        "before and after: {info}"
    );
}

/// A program that closes its descriptors again and again: the trace is reopened each time
/// and whole, and standard error says so once, then the count at close (it printed the
/// reopen line at every reopen: 16 lines for 16 rounds).
#[test]
fn a_program_that_closes_its_descriptors_again_and_again_is_told_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), &["close-fds-loop", "5"]);
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{stdout}{stderr}");
    assert_eq!(
        stderr
            .matches("closed or replaced the trace's file descriptor 3: reopened")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("closed or replaced the trace's file descriptor 5 times"),
        "{stderr}"
    );
    let info = info_closed_cleanly(dir.path());
    assert_eq!(count(&info, "Submit"), 7, "{info}");
}

/// A program that `dup2`s `/dev/null` (read-only) over every descriptor: its trace used to
/// end at the `dup2` (every later write failed with EBADF).
#[test]
fn a_program_that_dup2s_over_every_descriptor_keeps_its_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), &["dup2-fds"]);
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{stdout}{stderr}");
    assert!(!stderr.contains("writing the trace failed"), "{stderr}");
    let info = info_closed_cleanly(dir.path());
    assert_eq!(count(&info, "Submit"), 3, "{info}");
    assert_eq!(
        count(&info, "AnnotationMarker"),
        2,
        "before and after: {info}"
    );
}

/// Thousands of short-lived threads, each recording a range and a marker: every record is
/// kept, and the memory of each thread's 1 MiB buffer goes back to the system when it ends
/// (from the heap, glibc zeroed and kept them: 4,000 threads peaked over 300 MiB, against
/// 6 MiB untraced; now about 15 MiB).
#[test]
fn thousands_of_short_lived_threads_keep_every_record_and_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let threads = 4000;
    let out = record(dir.path(), &["threads", &threads.to_string()]);
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{stdout}{stderr}");
    let peak_kib: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("peak resident "))
        .and_then(|l| l.trim_end_matches(" kB").parse().ok())
        .unwrap_or_else(|| panic!("no peak: {stdout}"));
    assert!(
        peak_kib < 96 << 10,
        "peak resident memory {peak_kib} KiB for {threads} threads"
    );
    let info = info_closed_cleanly(dir.path());
    assert!(!info.contains("lost"), "{info}");
    assert_eq!(count(&info, "AnnotationRange"), threads, "{info}");
    assert_eq!(count(&info, "AnnotationMarker"), threads + 2, "{info}");
}

/// A program under a limit on its address space (`ulimit -v`) that it fits untraced: the
/// rings of its recording threads cannot all be had. A thread without one records through
/// the recorder's lock, losing nothing; the program used to abort ("memory allocation of
/// 1048576 bytes failed").
#[test]
fn threads_without_memory_for_a_ring_record_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "ulimit -v 400000 && exec {} threads 50",
        daemonish().display()
    );
    // The limit is this host's (2 CPUs: the program needs 479 MB of address space
    // untraced, and fits in 400 MB as glibc's arenas give way); where the program does not
    // fit it untraced, there is nothing to test.
    let untraced = std::process::Command::new("sh")
        .current_dir(dir.path())
        .env_remove("HRX_TRACE")
        .args(["-c", &script])
        .output()
        .unwrap();
    if code(&untraced) != 0 {
        println!("skipped: the program does not run untraced under the limit here");
        return;
    }
    let out = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (stdout, stderr) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{stdout}{stderr}");
    let info = info_closed_cleanly(dir.path());
    assert!(!info.contains("lost"), "{info}");
    assert_eq!(count(&info, "AnnotationRange"), 50, "{info}");
    assert_eq!(count(&info, "AnnotationMarker"), 52, "{info}");
}

/// A program run with `HRX_TRACE` naming an earlier trace replaces it, as `record -o` does,
/// and says so as `record -o` does (it used to replace it silently); the first run, and a
/// run under `record` (which says it itself), say nothing.
#[test]
fn hrx_trace_naming_an_earlier_trace_says_it_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let run_with_env = || {
        std::process::Command::new(daemonish())
            .current_dir(dir.path())
            .env("HRX_TRACE", "t.hrxt")
            .env_remove("HRX_TRACE_PATHS")
            .args(["sleep", "0"])
            .output()
            .unwrap()
    };
    let first = run_with_env();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(!stderr(&first).contains("replaced"), "{}", stderr(&first));
    let second = run_with_env();
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(
        stderr(&second).contains("HRX_TRACE=t.hrxt: it held an earlier trace: it is replaced"),
        "{}",
        stderr(&second)
    );
    let recorded = record(dir.path(), &["sleep", "0"]);
    let notes = stderr(&recorded);
    assert_eq!(notes.matches("replaced").count(), 1, "{notes}");
}

/// `HRX_TRACE` ending with `/` names a directory that does not exist: the program runs
/// untraced and says why in one line (it said "Is a directory", of nothing).
#[test]
fn hrx_trace_ending_with_a_slash_says_it_names_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(daemonish())
        .current_dir(dir.path())
        .env("HRX_TRACE", "new.hrxt/")
        .env_remove("HRX_TRACE_PATHS")
        .args(["sleep", "0"])
        .output()
        .unwrap();
    let stderr = stderr(&out);
    assert_eq!(code(&out), 0, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "HRX_TRACE=new.hrxt/: cannot record there (a directory's name (it ends with /), not \
             a file's): this process runs untraced"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Is a directory"), "{stderr}");
    assert!(!dir.path().join("new.hrxt").exists());
}

/// A program that ends with `_exit` while threads record (as a daemon's child does) never
/// closes its trace: `record` says `_exit` may be why and how to close it first (it blamed a
/// kill, a crash or a full disk, and hinted at freeing space).
#[test]
fn a_trace_left_open_by_underscore_exit_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), &["underscore-exit"]);
    let stderr = stderr(&out);
    assert_eq!(code(&out), 2, "{}{stderr}", stdout(&out));
    assert!(
        stderr.contains("exited 0, but the process writing the trace did not close it")
            && stderr.contains("it ended with _exit, which runs no exit handler"),
        "{stderr}"
    );
    assert!(
        stderr.contains("call hrx::close_trace() before it"),
        "{stderr}"
    );
}

/// A daemonish run with `wait-line`, waiting for a line on its standard input; its
/// standard output kept open (the program prints again before it ends).
struct Waiting {
    child: std::process::Child,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

/// `command` (running daemonish; `wait-line` is added) started, once it said it waits.
fn waiting(mut command: std::process::Command) -> Waiting {
    use std::io::BufRead;
    let mut child = command
        .arg("wait-line")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "waiting\n");
    Waiting {
        child,
        _stdout: stdout,
    }
}

/// Sends a [`waiting`] run its line and waits for it to end.
fn go_on(mut waiting: Waiting) -> std::process::Output {
    use std::io::Write;
    writeln!(waiting.child.stdin.take().unwrap()).unwrap();
    waiting.child.wait_with_output().unwrap()
}

/// The trace's directory is removed while the program records: `record` says the trace is
/// lost and exits 2 (it said the program "wrote nothing ... it does not use hrx", exit 0).
/// The program flushes its trace and waits to be told (a line on its standard input), so
/// the removal falls inside the recording.
#[test]
fn a_trace_deleted_while_recorded_is_said_lost() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let mut command = hrx_trace(dir.path());
    command
        .args(["record", "-o", "traces/t.hrxt", "--"])
        .arg(daemonish());
    let child = waiting(command);
    assert!(traces.join("t.hrxt").is_file());
    std::fs::remove_dir_all(&traces).unwrap();
    let out = go_on(child);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("t.hrxt is lost: a process of")
            && err.contains("no longer exists (deleted or moved while it was recorded)"),
        "{err}"
    );
    assert!(!err.contains("wrote nothing"), "{err}");
}

/// A trace moved (renamed) while it was recorded is whole under its new name: the program
/// says where it is, and `record` reads it there (exit 0). It said "the trace t.hrxt is
/// lost ... no longer exists" (exit 2) of a trace closed cleanly as moved.hrxt.
#[test]
fn a_trace_moved_while_recorded_is_read_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = hrx_trace(dir.path());
    command
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(daemonish());
    let child = waiting(command);
    std::fs::rename(dir.path().join("t.hrxt"), dir.path().join("moved.hrxt")).unwrap();
    let out = go_on(child);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(
        err.contains("t.hrxt was moved while it was recorded: it is")
            && err.contains("moved.hrxt now"),
        "{err}"
    );
    assert!(!err.contains("is lost"), "{err}");
    let info = run(dir.path(), &["info", "moved.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert!(
        stdout(&info).contains("closed       cleanly"),
        "{}",
        stdout(&info)
    );
}

/// The same, run with `HRX_TRACE` and no `record`: the program says so itself, in one line,
/// as it closes the trace (it said nothing).
#[test]
fn a_trace_deleted_while_recorded_says_so_without_record() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let mut command = std::process::Command::new(daemonish());
    command
        .current_dir(dir.path())
        .env("HRX_TRACE", "traces/t.hrxt")
        .env_remove("HRX_TRACE_PATHS");
    let child = waiting(command);
    std::fs::remove_dir_all(&traces).unwrap();
    let out = go_on(child);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("traces/t.hrxt was deleted while it was recorded: nothing of it remains"),
        "{err}"
    );
}

/// A daemon that closes its standard streams too: the trace, reopened, must not take number
/// 1 or 2, where the program's (and the recorder's) printing would land in it.
#[test]
fn a_program_that_closes_its_standard_streams_keeps_its_trace_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), &["close-all"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let log = std::fs::read(dir.path().join("daemonish-log.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&log), "log line\nlog line 2\n");
    let trace = std::fs::read(dir.path().join("t.hrxt")).unwrap();
    assert!(
        !trace.windows(7).any(|w| w == b"printed"),
        "the program's printing is in the trace"
    );
    let info = run(dir.path(), &["info", "t.hrxt"]);
    let (text, warnings) = (crate::util::stdout(&info), stderr(&info));
    assert!(text.contains("closed       cleanly"), "{text}{warnings}");
    assert!(warnings.is_empty(), "{warnings}");
    assert_eq!(count(&text, "Submit"), 3, "{text}");
    assert_eq!(
        count(&text, "AnnotationMarker"),
        2,
        "before and after: {text}"
    );
}
