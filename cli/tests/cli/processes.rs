//! `record -- PROGRAM` where several processes use hrx: `-o` patterns (`%p`, `%h`, `%n`,
//! `%%`), and without one, each further process in its own `NAME.PID.EXT`, concurrent or one
//! after another. No process fails for tracing, no trace is overwritten, and `record` lists
//! every file written. The processes are `cli/examples/traced.rs`, which `cargo test` builds.

use crate::util::*;
use std::path::{Path, PathBuf};

/// The `traced` example.
fn traced() -> PathBuf {
    crate::util::example("traced")
}

/// Runs `record -o OUTPUT -- sh -c SCRIPT`, where `$T` in the script is the example.
fn record_script(dir: &Path, output: &str, script: &str) -> std::process::Output {
    hrx_trace(dir)
        .args(["record", "-o", output, "--", "sh", "-c", script])
        .env("T", traced())
        .output()
        .unwrap()
}

/// The files of `dir` whose names start with `prefix`, sorted.
fn files(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// Each trace is closed cleanly and holds `submissions` submissions of one process.
fn check_traces(dir: &Path, names: &[String], submissions: &[u64]) {
    let mut found: Vec<u64> = names
        .iter()
        .map(|name| {
            let trace = hrx_capture::read_all(dir.join(name)).unwrap();
            assert!(trace.recovery.is_complete(), "{name}: {:?}", trace.recovery);
            trace
                .records
                .iter()
                .filter(|r| matches!(r, hrx_capture::Record::Submit(_)))
                .count() as u64
        })
        .collect();
    found.sort_unstable();
    let mut expected = submissions.to_vec();
    expected.sort_unstable();
    assert_eq!(found, expected, "{names:?}");
}

/// The summary lines of `record`: one `file` line per trace.
fn summarised(out: &std::process::Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter(|l| l.starts_with("file "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn two_concurrent_processes_with_pid_patterns_write_two_traces() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_script(dir.path(), "t%p.hrxt", "$T 5 300 & $T 7 300; wait");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let names = files(dir.path(), "t");
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n[1..n.len() - 5].parse::<u32>().is_ok()),
        "{names:?}"
    );
    check_traces(dir.path(), &names, &[5, 7]);
    assert_eq!(summarised(&out).len(), 2, "{}", stdout(&out));
    // Each block names the process that wrote its trace, not only the program (`sh`).
    let text = stdout(&out);
    let processes: Vec<&str> = text.lines().filter(|l| l.starts_with("process ")).collect();
    assert_eq!(processes.len(), 2, "{text}");
    for name in &names {
        let pid = &name[1..name.len() - 5];
        assert!(
            processes.iter().any(|l| l.contains("traced")
                && l.contains(&format!("(pid {pid}), started by the program"))),
            "{text}"
        );
    }
}

/// The three hold their traces open until all three have opened theirs (`TRACED_TOGETHER`):
/// with a 400 ms pause each instead, a loaded machine could start one after another ended,
/// which then replaces nothing and says so differently.
#[test]
fn three_concurrent_processes_without_a_pattern_each_get_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c"])
        .arg("$T 3 & $T 4 & $T 5; wait")
        .env("T", traced())
        .env("TRACED_TOGETHER", "3")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{}{err}", stdout(&out));
    let names = files(dir.path(), "t.");
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.contains(&"t.hrxt".to_owned()), "{names:?}");
    check_traces(dir.path(), &names, &[3, 4, 5]);
    // The two that found t.hrxt taken said where they record.
    assert_eq!(err.matches("records into").count(), 2, "{err}");
    let lines = summarised(&out);
    assert_eq!(lines.len(), 3, "{}", stdout(&out));
    for name in &names {
        assert!(
            lines.iter().any(|l| l.contains(name.as_str())),
            "{name}: {lines:?}"
        );
    }
}

#[test]
fn processes_one_after_another_never_overwrite_each_other() {
    let dir = tempfile::tempdir().unwrap();
    // An earlier recording's trace is replaced by the first process, as before.
    std::fs::write(dir.path().join("t.hrxt"), b"").unwrap();
    let out = record_script(dir.path(), "t.hrxt", "$T 2; $T 6; $T 4");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{}{err}", stdout(&out));
    let names = files(dir.path(), "t.");
    assert_eq!(names.len(), 3, "{names:?}");
    check_traces(dir.path(), &names, &[2, 6, 4]);
    let first = hrx_capture::read_all(dir.path().join("t.hrxt")).unwrap();
    let submits = first
        .records
        .iter()
        .filter(|r| matches!(r, hrx_capture::Record::Submit(_)));
    assert_eq!(submits.count(), 2, "t.hrxt is the first process's");
    assert_eq!(
        err.matches("written by another process of this recording")
            .count(),
        2,
        "{err}"
    );
    assert_eq!(summarised(&out).len(), 3, "{}", stdout(&out));
}

#[test]
fn host_sequence_and_percent_patterns_expand() {
    let dir = tempfile::tempdir().unwrap();
    let host = hrx_capture::expand_path("%h")
        .to_string_lossy()
        .into_owned();
    std::fs::write(dir.path().join(format!("r-{host}-1%.hrxt")), b"").unwrap();
    let out = record_script(dir.path(), "r-%h-%n%%.hrxt", "$T 1; $T 2");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let names = files(dir.path(), "r-");
    assert_eq!(
        names,
        [1, 2, 3].map(|n| format!("r-{host}-{n}%.hrxt")).to_vec(),
        "the existing file 1 is skipped"
    );
    check_traces(dir.path(), &names[1..], &[1, 2]);
    assert_eq!(summarised(&out).len(), 2, "{}", stdout(&out));
}

#[test]
fn a_failed_trace_makes_record_fail() {
    let dir = tempfile::tempdir().unwrap();
    // The second process's trace is cut by a file size limit while it exits 0.
    let script = "$T 1; (ulimit -f 4; trap '' XFSZ; $T 20000); exit 0";
    let out = record_script(dir.path(), "t.hrxt", script);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("is incomplete"), "{}", stderr(&out));
    assert_eq!(summarised(&out).len(), 2, "{}", stdout(&out));
}

#[test]
fn hrx_trace_set_by_hand_never_destroys_a_file_nor_fails_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let run = |trace: &Path| {
        std::process::Command::new(traced())
            .arg("2")
            .env("HRX_TRACE", trace)
            .env_remove("HRX_TRACE_SESSION")
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // A file that is not a trace is left as it is; the process records beside it.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, b"hi\n").unwrap();
    let out = run(&notes);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(&notes).unwrap(), b"hi\n");
    assert!(
        stderr(&out).contains("exists and is not an hrx trace"),
        "{}",
        stderr(&out)
    );
    let own = files(dir.path(), "notes.");
    let own: Vec<String> = own.into_iter().filter(|n| n != "notes.txt").collect();
    assert_eq!(own.len(), 1, "{own:?}");
    check_traces(dir.path(), &own, &[2]);
    // Where no trace can be written, the program runs untraced and says so once.
    for place in [
        dir.path().to_path_buf(),
        dir.path().join("missing").join("t.hrxt"),
    ] {
        let out = run(&place);
        assert_eq!(code(&out), 0, "{place:?}: {}", stderr(&out));
        let said = stderr(&out);
        let untraced = said
            .lines()
            .filter(|l| l.contains("this process runs untraced"))
            .count();
        assert_eq!(untraced, 1, "{place:?}: {said}");
    }
}

/// Two `record` runs started together to the same `-o` (two CI jobs sharing a name): the one
/// that comes second is refused before its program runs, as one started later is (`cannot
/// write the trace to t.hrxt: another recorder is writing it`, exit 2), whether or not the
/// first's program has opened the trace yet; the other records its trace whole. Both got
/// past the check of the trace's lock before either program had opened it, and the second
/// program's process, finding the file changed since its `record` started, took the
/// first's trace for a sibling's ("written by another process of this recording") and
/// recorded into `t.PID.hrxt`, both exiting 0 (session 55's break-it pass: 2 tries in 10).
/// Here neither program opens its trace before both `record`s have started theirs (`go`),
/// so the old code got that far every time.
#[test]
fn two_recordings_started_together_to_one_name_the_second_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = |name: &str| {
        let script = format!("touch ran-{name}; while [ ! -e go ]; do sleep 0.01; done; \"$T\" 3");
        hrx_trace(dir.path())
            .args(["record", "-o", "t.hrxt", "--", "sh", "-c", &script])
            .env("T", traced())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = spawn("a");
    let mut b = spawn("b");
    // Until one is refused, or (the old code) both programs run.
    loop {
        if a.try_wait().unwrap().is_some() || b.try_wait().unwrap().is_some() {
            break;
        }
        if dir.path().join("ran-a").exists() && dir.path().join("ran-b").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let said = format!(
        "a: {}{}\nb: {}{}",
        stdout(&a),
        stderr(&a),
        stdout(&b),
        stderr(&b)
    );
    let (refused, recorded, ran) = match (code(&a), code(&b)) {
        (2, 0) => (a, b, "ran-a"),
        (0, 2) => (b, a, "ran-b"),
        _ => panic!("one refused, one recorded: {said}"),
    };
    assert!(
        stderr(&refused)
            .contains("error: cannot write the trace to t.hrxt: another recorder is writing it"),
        "{said}"
    );
    assert!(!dir.path().join(ran).exists(), "the refused program ran");
    assert_eq!(files(dir.path(), "t."), ["t.hrxt"]);
    check_traces(dir.path(), &["t.hrxt".to_owned()], &[3]);
    assert_eq!(summarised(&recorded).len(), 1, "{said}");
    assert!(!stderr(&recorded).contains("another process"), "{said}");
}

/// `record --workload` claims its `-o` as `record -- PROGRAM` does: to a name another
/// `record` claimed and whose program has not opened it yet, it is refused with the same
/// refusal, and runs no workload (it made no claim: it recorded into the name, and the other
/// recording took the workload's trace for its own); the other recording goes on. Session 55
/// left it.
#[test]
fn a_workload_is_refused_a_name_another_recording_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let script = "touch ran; while [ ! -e go ]; do sleep 0.01; done";
    let first = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ran"));
    let workload = hrx_trace(dir.path())
        .args([
            "record",
            "--workload",
            "hazards",
            "--backend",
            "sim",
            "-o",
            "t.hrxt",
        ])
        .output()
        .unwrap();
    let (first, said) = refused_while_claimed(dir.path(), &workload, first, "workload");
    assert!(!stdout(&workload).contains("workload "), "{said}");
    assert!(!dir.path().join("t.hrxt").exists(), "{said}");
    assert_eq!(code(&first), 0, "{said}");
}

/// Two `record`s to one `-o`, each with a `TMPDIR` of its own (its reports directory
/// there): the second is refused while the first's program has not opened the trace, as
/// with one `TMPDIR`. Both ran (the second into `t.PID.hrxt`, "written by another process of
/// this recording"): the claim was looked for among the reports directories of the second's
/// own temporary directory (a break-it pass). The claim sits beside the trace, and goes
/// with its `record`.
#[test]
fn a_record_with_another_tmpdir_is_refused_a_name_another_recording_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let (tmp_a, tmp_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = "touch ran; while [ ! -e go ]; do sleep 0.01; done";
    let first = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", script])
        .env("TMPDIR", tmp_a.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ran"));
    let second = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", "touch second"])
        .env("TMPDIR", tmp_b.path())
        .output()
        .unwrap();
    let (first, said) = refused_while_claimed(dir.path(), &second, first, "second");
    assert!(!dir.path().join("second").exists(), "{said}");
    assert_eq!(code(&first), 0, "{said}");
    // The claim went with its `record`: nothing is left beside the trace, and a later
    // `record` with the other `TMPDIR` runs.
    assert!(!dir.path().join(".t.hrxt.claim").exists(), "{said}");
    let later = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", "touch later"])
        .env("TMPDIR", tmp_b.path())
        .output()
        .unwrap();
    assert_eq!(code(&later), 0, "{}", stderr(&later));
    assert!(dir.path().join("later").exists());
}

/// `record -o t.hrxt -- sh -c ...` in `dir` whose program closes a trace of 2 submissions,
/// touches `closed` and waits for a file `go`, then runs `then` (shell, after a `;`),
/// Lets the first `record` (held at `go`, pid `first.id()` taken before) go on, and checks
/// that `refused`, run meanwhile to its `-o`, was refused naming it; the first's output and
/// what both said.
fn refused_while_claimed(
    dir: &Path,
    refused: &std::process::Output,
    first: std::process::Child,
    name: &str,
) -> (std::process::Output, String) {
    let first_pid = first.id();
    std::fs::write(dir.join("go"), b"").unwrap();
    let first = first.wait_with_output().unwrap();
    let said = format!(
        "{name}: {}{}\nfirst: {}{}",
        stdout(refused),
        stderr(refused),
        stdout(&first),
        stderr(&first)
    );
    assert_eq!(code(refused), 2, "{said}");
    assert!(
        stderr(refused)
            .contains("error: cannot write the trace to t.hrxt: another recorder is writing it"),
        "{said}"
    );
    assert!(
        stderr(refused).contains(&format!(
            "`hrx-trace record` (pid {first_pid}) records into it"
        )),
        "{said}"
    );
    (first, said)
}

/// returned once `closed` exists.
fn recording_held_at_go(dir: &Path, then: &str) -> std::process::Child {
    let child = hrx_trace(dir)
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c"])
        .arg(format!(
            "\"$T\" 2; touch closed; while [ ! -e go ]; do sleep 0.01; done{then}"
        ))
        .env("T", traced())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.join("closed"));
    child
}

/// Waits until `path` exists (made by a process the test started).
fn wait_for(path: &Path) {
    while !path.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The pid `traced` printed (`started PID`) in `out`'s standard output.
fn started_pid(out: &std::process::Output) -> u32 {
    stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix("started "))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `started PID`: {}", stdout(out)))
}

/// A recording whose closed trace another recording replaced before the first `record`
/// read it (`-o` replaces a closed trace, as documented) says its trace is lost, naming the
/// other process, and exits 2 as its program exited 0 (as for a trace deleted while it was
/// recorded): it never summarises the other recording's trace as its own, nor touches it.
/// It printed the other's submissions as its own, exit 0; or, the other still writing, it
/// summarised that half-written trace and blamed its own program for leaving it unclosed
/// with `_exit`, exit 2 (session 55's break-it pass).
#[test]
fn a_trace_another_recording_replaced_is_said_lost_not_summarised_as_this_ones() {
    let dir = tempfile::tempdir().unwrap();
    // The first recording's program closes its trace of 2 submissions, then waits for `go`.
    let first = || {
        for name in ["closed", "go"] {
            let _ = std::fs::remove_file(dir.path().join(name));
        }
        recording_held_at_go(dir.path(), "")
    };
    let lost = |out: &std::process::Output, other: u32| {
        let err = stderr(out);
        assert_eq!(code(out), 2, "{}{err}", stdout(out));
        assert!(
            err.contains("error: the trace t.hrxt is lost: a process of sh (pid "),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "but another process (pid {other}) has since replaced it with a trace of its own"
            )),
            "{err}"
        );
        assert!(!err.contains("_exit"), "{err}");
        assert!(summarised(out).is_empty(), "{}", stdout(out));
        assert!(!stdout(out).contains("submissions"), "{}", stdout(out));
    };

    // The other recording has ended when the first reads the file.
    let running = first();
    let other = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(traced())
        .arg("5")
        .output()
        .unwrap();
    assert_eq!(code(&other), 0, "{}{}", stdout(&other), stderr(&other));
    std::fs::write(dir.path().join("go"), b"").unwrap();
    lost(&running.wait_with_output().unwrap(), started_pid(&other));
    check_traces(dir.path(), &["t.hrxt".to_owned()], &[5]);

    // The other recording still writes it: its program holds the trace open (created, its
    // session start written) until a second `opened.*` file is there.
    let running = first();
    let other = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(traced())
        .arg("4")
        .env("TRACED_TOGETHER", "2")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let opened = loop {
        let opened = files(dir.path(), "opened.");
        if let Some(name) = opened.first() {
            break name.clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let pid: u32 = opened["opened.".len()..].parse().unwrap();
    std::fs::write(dir.path().join("go"), b"").unwrap();
    lost(&running.wait_with_output().unwrap(), pid);
    std::fs::write(dir.path().join("opened.release"), b"").unwrap();
    let other = other.wait_with_output().unwrap();
    assert_eq!(code(&other), 0, "{}{}", stdout(&other), stderr(&other));
    check_traces(dir.path(), &["t.hrxt".to_owned()], &[4]);
}

/// A process of a recording that finds its trace replaced by another recording since the
/// recording started (`sh -c 'prog; prog'`, the first trace replaced between the two) records
/// beside it, as before, and says whose the file is: another recording's, its process's pid
/// none of this recording's. It said "written by another process of this recording"
/// (`HRX_TRACE_SESSION` alone: the file changed since the start), as of a sibling's trace
/// (session 55 left it); a sibling's still reads so, with its pid.
#[test]
fn a_trace_another_recording_replaced_is_not_called_a_siblings() {
    let dir = tempfile::tempdir().unwrap();
    let running = recording_held_at_go(dir.path(), "; \"$T\" 1");
    let other = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(traced())
        .arg("5")
        .output()
        .unwrap();
    assert_eq!(code(&other), 0, "{}{}", stdout(&other), stderr(&other));
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let out = running.wait_with_output().unwrap();
    let err = stderr(&out);
    let other_pid = started_pid(&other);
    assert!(
        err.contains(&format!(
            "t.hrxt was written by another recording since this one started (its process, pid \
             {other_pid}, is none of this recording's): this process ("
        )),
        "{}{err}",
        stdout(&out)
    );
    assert!(!err.contains("another process of this recording"), "{err}");
    // The file kept is right, as before: the other recording's trace is untouched.
    let names = files(dir.path(), "t.");
    assert_eq!(names.len(), 2, "{names:?}");
    check_traces(dir.path(), &names, &[5, 1]);
}

/// A `-o` that is not UTF-8 keeps its bytes, and its `%p` expands (the runtime expanded trace
/// paths as text, so `record` refused such names).
#[test]
fn a_name_that_is_not_utf8_keeps_its_bytes_and_its_pattern_expands() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "-o"])
        .arg(std::ffi::OsStr::from_bytes(b"t\xfe%p.hrxt"))
        .arg("--")
        .arg(traced())
        .arg("4")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let names: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let name = &names[0];
    assert!(
        name.starts_with(b"t\xfe") && name.ends_with(b".hrxt"),
        "{name:?}"
    );
    let pid = std::str::from_utf8(&name[2..name.len() - 5]).unwrap();
    assert!(pid.parse::<u32>().is_ok(), "{name:?}");
    let path = dir.path().join(std::ffi::OsStr::from_bytes(name));
    let trace = hrx_capture::read_all(&path).unwrap();
    assert!(trace.recovery.is_complete());
    assert_eq!(summarised(&out).len(), 1, "{}", stdout(&out));
}

/// Without a temporary directory for the processes' reports (`TMPDIR` missing), `record`
/// still records and finds the trace by its name.
#[test]
fn without_a_temporary_directory_the_trace_is_found_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(traced())
        .arg("3")
        .env("TMPDIR", dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    check_traces(dir.path(), &["t.hrxt".to_owned()], &[3]);
    assert_eq!(summarised(&out).len(), 1, "{}", stdout(&out));
}

/// A process the paths variable does not reach (a launcher that filters the environment, a
/// program built with an older hrx) still has its trace listed, found by its name and said
/// to be so, beside the traces the other processes reported (it was left out).
#[test]
fn a_trace_no_process_reported_is_still_listed_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_script(
        dir.path(),
        "m-%p.hrxt",
        "$T 1 >/dev/null & env -u HRX_TRACE_PATHS $T 2 >/dev/null; wait",
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let names = files(dir.path(), "m-");
    assert_eq!(names.len(), 2, "{names:?}");
    check_traces(dir.path(), &names, &[1, 2]);
    assert_eq!(summarised(&out).len(), 2, "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("did not tell").count(), 1, "{err}");
}

/// Two `record --workload` runs started together with `%n` take two numbers (the runtime
/// expands the pattern when it creates the file; `record` had expanded it first, so both
/// asked for `w-1.hrxt` and one fell back to `w-1.PID.hrxt`), and each names its own file.
#[test]
fn workloads_started_together_with_a_sequence_number_take_two_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = || {
        hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "w-%n.hrxt"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    let outputs = children.map(|c| c.wait_with_output().unwrap());
    for out in &outputs {
        assert_eq!(code(out), 0, "{}{}", stdout(out), stderr(out));
    }
    assert_eq!(files(dir.path(), "w-"), ["w-1.hrxt", "w-2.hrxt"]);
    let mut named: Vec<String> = outputs
        .iter()
        .flat_map(summarised)
        .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
        .collect();
    named.sort();
    assert_eq!(named, ["w-1.hrxt", "w-2.hrxt"]);
}

#[test]
fn a_child_forked_without_exec_never_writes_into_its_parents_trace() {
    // The child shares the parent's trace file descriptor and a copy of its recorder, but not
    // its writer thread: it filled its buffer and wrote blocks into the parent's file (whose
    // end then read as damaged, with the child's copy of the session's records in it), and
    // its close at exit panicked joining the writer thread it does not have.
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--"])
        .arg(traced())
        .arg("2")
        .env("TRACED_FORK", "300000")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{}{err}", stdout(&out));
    assert!(!err.contains("panicked"), "{err}");
    let names = files(dir.path(), "t");
    assert_eq!(
        names.len(),
        2,
        "the parent's trace and the child's: {names:?}"
    );
    assert_eq!(names.last().map(String::as_str), Some("t.hrxt"));
    let count = |name: &str, kind: &str| {
        let trace = hrx_capture::read_all(dir.path().join(name)).unwrap();
        assert!(trace.recovery.is_complete(), "{name}: {:?}", trace.recovery);
        trace
            .records
            .iter()
            .filter(|r| r.kind_name() == kind)
            .count()
    };
    assert_eq!(count("t.hrxt", "SessionStart"), 1);
    assert_eq!(count("t.hrxt", "RuntimeStart"), 1);
    assert_eq!(count("t.hrxt", "Submit"), 3);
    // The child's samples are not the parent's: they went to a trace of the child's own,
    // as a runtime it creates would (they were dropped without a word), which `record`
    // summarises beside the parent's.
    assert_eq!(
        count("t.hrxt", "CounterSample"),
        2,
        "the host load's two samples only"
    );
    assert_eq!(count(&names[0], "CounterSample"), 300_000, "{names:?}");
    assert_eq!(count(&names[0], "Submit"), 0);
    assert_eq!(summarised(&out).len(), 2, "{}", stdout(&out));
}

/// The first file of `dir` whose name starts with `prefix`, once there is one (made by a
/// process the test started), and the pid its name ends with (`held.PID`, `opened.PID`).
fn wait_for_pid_file(dir: &Path, prefix: &str) -> u32 {
    loop {
        if let Some(name) = files(dir, prefix).first() {
            return name[prefix.len()..].parse().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The warning `record` printed about the trace `name`, one line.
fn warning_about(out: &std::process::Output, name: &str) -> String {
    let prefix = format!("warning: {name}: ");
    stderr(out)
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no warning about {name}: {}", stderr(out)))
        .to_owned()
}

/// A trace left unclosed by a process that is not the program's own is said to hold what
/// was written before that process ended, as far as `record` knows how: killed by SIGKILL
/// where `record` reaped it (a process the program left running: `record` is their
/// subreaper), its pid alone where the program reaped it (a child it forked). `record` gave
/// the program's own ending for it: "before traced ended (exit code 1)" of a forked child
/// killed by SIGKILL (session 55's break-it pass).
#[test]
fn an_unclosed_trace_of_another_process_is_not_given_the_programs_ending() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = |command: &mut std::process::Command| {
        command
            .env("T", traced())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let kill = |pid: u32| {
        // SAFETY: kill only sends a signal, to a process this test started.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    };

    // A child forked without exec, killed with its trace open; the program reaps it and
    // exits 1.
    let running = spawn(
        hrx_trace(dir.path())
            .args(["record", "-o", "f.hrxt", "--"])
            .arg(traced())
            .arg("2")
            .env("TRACED_FORK", "10")
            .env("TRACED_FORK_HOLD", "1"),
    );
    let pid = wait_for_pid_file(dir.path(), "held.");
    kill(pid);
    let out = running.wait_with_output().unwrap();
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let warning = warning_about(&out, &format!("f.{pid}.hrxt"));
    assert!(
        warning.ends_with(&format!(
            "; it holds what was written before its process (pid {pid}) ended"
        )),
        "{warning}"
    );

    // A process the program left running, killed: `record` reaps it. The program exits 3.
    let running = spawn(
        hrx_trace(dir.path())
            .args(["record", "-o", "o.hrxt", "--", "sh", "-c"])
            .arg("\"$T\" 1 & exit 3")
            .env("TRACED_TOGETHER", "2"),
    );
    let pid = wait_for_pid_file(dir.path(), "opened.");
    kill(pid);
    let out = running.wait_with_output().unwrap();
    assert_eq!(code(&out), 3, "{}{}", stdout(&out), stderr(&out));
    let warning = warning_about(&out, "o.hrxt");
    assert!(
        warning.ends_with(&format!(
            "; it holds what was written before its process (pid {pid}) was killed by \
             signal 9 (SIGKILL)"
        )),
        "{warning}"
    );
}

#[test]
fn a_trace_left_open_by_exec_is_said_so_not_blamed_on_a_full_disk() {
    // exec runs no exit handler: the image that ran it never closes its trace. `record` said
    // "killed, crashed, or its writes failed: a full disk ...?" and hinted at freeing space.
    let dir = tempfile::tempdir().unwrap();
    let exec = |how: &str| {
        hrx_trace(dir.path())
            .args(["record", "-o", &format!("{how}.hrxt"), "--"])
            .arg(traced())
            .arg("2")
            .env("TRACED_EXEC", how)
            .output()
            .unwrap()
    };
    let out = exec("open");
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{}{err}", stdout(&out));
    assert!(
        err.contains("open.hrxt is incomplete (not closed cleanly): its process (pid"),
        "{err}"
    );
    assert!(err.contains("replaced itself with exec"), "{err}");
    assert!(
        err.contains("hint: call hrx::close_trace() before exec"),
        "{err}"
    );
    assert!(!err.contains("free some space"), "{err}");
    // The program exec ran says whose the file was: its own process's, before the exec (it
    // said "written by another process").
    assert!(
        err.contains("open.hrxt was written by this same process in an earlier session (before an exec): this process ("),
        "{err}"
    );
    assert!(!err.contains("another process"), "{err}");
    // The program exec ran recorded into a file of its own (same pid, a later session).
    let names = files(dir.path(), "open.");
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        err.contains(&format!("{} is the trace of the program it ran", names[0])),
        "{err}"
    );
    check_traces(dir.path(), &names[..1], &[1]);
    // What the hint says works: both traces closed, exit 0.
    let out = exec("closed");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let names = files(dir.path(), "closed.");
    assert_eq!(names.len(), 2, "{names:?}");
    check_traces(dir.path(), &names, &[1, 2]);
}

/// A child forked without `exec` after its parent closed its trace (plain `HRX_TRACE`, no
/// `record` session to tell it) records into `NAME.PID.EXT`, saying why, and the parent's
/// trace stays the parent's. Once a forked child no longer kept its parent's writer lock
/// (so that a killed parent's trace reads as ended, not as being recorded), nothing kept such
/// a child out of the parent's file, and it replaced the parent's trace with its own (a
/// break-it pass).
#[test]
fn a_child_forked_after_its_parent_closed_its_trace_keeps_out_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(traced())
        .arg("2")
        .current_dir(dir.path())
        .env("HRX_TRACE", "t.hrxt")
        .env("TRACED_FORK_CLOSED", "1")
        .env_remove("HRX_TRACE_SESSION")
        .env_remove("HRX_TRACE_PATHS")
        .output()
        .unwrap();
    let (said, err) = (stdout(&out), stderr(&out));
    assert_eq!(code(&out), 0, "{said}{err}");
    let pid = |word: &str| -> u64 {
        said.lines()
            .find_map(|l| l.strip_prefix(word))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {word:?} line: {said}"))
    };
    let (parent, child) = (pid("started "), pid("child "));
    assert!(
        err.contains("was written by the process this one was forked from")
            && err.contains(&format!("t.{child}.hrxt")),
        "{err}"
    );
    let mut expected = ["t.hrxt".to_owned(), format!("t.{child}.hrxt")];
    expected.sort();
    assert_eq!(files(dir.path(), "t"), expected);
    check_traces(dir.path(), &files(dir.path(), "t"), &[1, 2]);
    let session_pid = |name: &str| {
        let trace = hrx_capture::read_all(dir.path().join(name)).unwrap();
        trace
            .records
            .iter()
            .find_map(|r| match r {
                hrx_capture::Record::SessionStart(s) => Some(u64::from(s.pid)),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        session_pid("t.hrxt"),
        parent,
        "the parent's trace was replaced"
    );
    assert_eq!(session_pid(&format!("t.{child}.hrxt")), child);
}
