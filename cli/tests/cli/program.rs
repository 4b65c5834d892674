//! `record -- PROGRAM`: exit codes, programs without hrx, programs that cannot start.

use crate::util::*;
use std::path::Path;

#[test]
fn exit_code_is_forwarded_and_a_missing_trace_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code(&output), 3, "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("no trace"), "{err}");
    assert!(err.contains("does not use hrx"), "{err}");
    // The code is said, as a killed program's signal is.
    assert!(err.contains("sh exited with code 3"), "{err}");
    assert!(!dir.path().join("hrx.hrxt").exists());
    // Said as a warning (-q keeps it) and, with --json, as a line with no trace.
    let json = run(
        dir.path(),
        &["-q", "record", "--json", "--", "sh", "-c", "exit 3"],
    );
    assert_eq!(code(&json), 3);
    assert!(
        stderr(&json).starts_with("warning: no trace: "),
        "{}",
        stderr(&json)
    );
    let line: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert!(line["trace"].is_null(), "{line}");
    assert_eq!(line["exit_code"], 3);
    assert_eq!(line["schema_version"], hrx_analysis::JSON_SCHEMA_VERSION);
}

#[test]
fn a_stale_trace_is_not_mistaken_for_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.hrxt"), b"HRXTRACE from an earlier run").unwrap();
    let output = run(dir.path(), &["record", "-o", "old.hrxt", "--", "true"]);
    assert_eq!(code(&output), 0);
    assert!(stderr(&output).contains("no trace"), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(dir.path().join("old.hrxt")).unwrap(),
        b"HRXTRACE from an earlier run"
    );
}

#[test]
fn a_program_that_does_not_exist_is_one_line_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "./no-such-program", "--flag"]);
    assert_error(&output, "no-such-program");
    assert_eq!(stderr(&output).lines().count(), 1);
    assert!(stdout(&output).is_empty());
    assert!(!dir.path().join("hrx.hrxt").exists());
}

/// A directory named as the program is said to be one (it read "permission denied (is it
/// executable?)").
#[test]
fn a_directory_as_the_program_is_named_as_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let output = run(dir.path(), &["record", "--", "./sub"]);
    assert_error(&output, "cannot run ./sub: it is a directory");
}

/// A bare name is looked up in PATH only: a file of that name in the current directory is
/// said to be there, with how to run it (it read "not a file, and not found in PATH": a
/// fresh user's pass).
#[test]
fn a_bare_name_of_a_file_here_says_how_to_run_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a program\n").unwrap();
    let output = run(dir.path(), &["record", "--", "notes.txt"]);
    assert_error(
        &output,
        "cannot run notes.txt: not found in PATH (a file of that name is in the current directory: run it as ./notes.txt if it is a program)",
    );
    assert!(!dir.path().join("hrx.hrxt").exists());
}

#[test]
fn a_program_killed_by_a_signal_exits_128_plus_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(code(&output), 128 + 9);
    assert!(stderr(&output).contains("killed by signal 9 (SIGKILL)"));
}

#[test]
fn the_program_sees_hrx_trace_as_an_absolute_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "record",
            "-o",
            "a%p.hrxt",
            "--",
            "sh",
            "-c",
            "printf %s \"$HRX_TRACE\"",
        ],
    );
    assert_eq!(code(&output), 0);
    // hrx-trace's working directory is `dir`, so the absolute path is under getcwd's
    // (canonical) form of it; `%p` is left for each process's runtime to expand.
    let expected = dir.path().canonicalize().unwrap().join("a%p.hrxt");
    assert_eq!(stdout(&output), expected.to_str().unwrap());
}

#[test]
fn a_program_that_writes_the_trace_gets_a_summary() {
    // hrx-trace itself links hrx: the inner run writes the file, the outer one summarises it.
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "record",
            "-o",
            "t.hrxt",
            "--",
            env!("CARGO_BIN_EXE_hrx-trace"),
            "record",
            "-o",
            "t.hrxt",
            "--workload",
            "hazards",
        ],
    );
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    let summaries: Vec<_> = out.lines().filter(|l| l.starts_with("file ")).collect();
    assert_eq!(summaries.len(), 2, "{out}");
    assert!(summaries[1].contains("t.hrxt (clean close)"), "{out}");
    // The outer summary names the program and the device its runtime ran on (the workload
    // prints its own `device` line first): a program that fell back to the software device
    // says so where `record` reports.
    let devices: Vec<_> = out.lines().filter(|l| l.starts_with("device ")).collect();
    assert_eq!(devices.len(), 2, "{out}");
    assert!(devices[1].contains("sim: hrx software device"), "{out}");
    let program = out
        .lines()
        .find(|l| l.starts_with("program "))
        .expect("a program line");
    assert!(
        program.contains("hrx-trace") && program.ends_with("(exit code 0)"),
        "{out}"
    );
}

#[test]
#[ignore = "builds and runs the hrx pipeline example in release mode (minutes)"]
fn the_pipeline_example_records_through_hrx_trace() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("example.hrxt");
    let output = hrx_trace(&root)
        .args(["record", "-o", trace.to_str().unwrap(), "--"])
        .args([
            "cargo",
            "run",
            "--release",
            "-p",
            "hrx",
            "--example",
            "pipeline",
            "--",
        ])
        .args(["--frames", "2", "--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(number(&out, "submissions") >= 2, "{out}");
    assert!(field(&out, "file").ends_with("(clean close)"), "{out}");
}

#[test]
fn an_existing_file_that_is_not_a_trace_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"precious").unwrap();
    for args in [
        &["record", "-o", "notes.txt", "--", "true"][..],
        &["record", "-o", "notes.txt", "--workload", "hazards"][..],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(code(&output), 2, "{args:?}");
        assert!(
            stderr(&output).contains("refusing to overwrite"),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(
        std::fs::read(dir.path().join("notes.txt")).unwrap(),
        b"precious"
    );
}

/// A workload whose runtime cannot start (here a bad `HRX_SIM_MEMORY`) leaves an earlier
/// trace at `-o` as it was, and says nothing of replacing or writing it. It said "t.hrxt
/// held an earlier trace: it is replaced" and "t.hrxt was written and closed: it holds what
/// ran before the error below" of a file it never touched.
#[test]
fn a_workload_whose_runtime_cannot_start_leaves_an_earlier_trace_unsaid() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["record", "-o", "t.hrxt", "--workload", "hazards"];
    let first = run(dir.path(), &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let before = std::fs::read(dir.path().join("t.hrxt")).unwrap();
    let failed = hrx_trace(dir.path())
        .args(args)
        .env("HRX_SIM_MEMORY", "64MB")
        .output()
        .unwrap();
    let err = stderr(&failed);
    assert_eq!(code(&failed), 2, "{err}");
    assert!(err.contains("HRX_SIM_MEMORY"), "{err}");
    assert!(!err.contains("replaced"), "{err}");
    assert!(!err.contains("was written and closed"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("t.hrxt")).unwrap(), before);
}

/// A trace recorded over an earlier one replaces it, as `-o` asks, and says so (a note: not
/// silently, not refused).
#[test]
fn an_earlier_trace_is_replaced_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["record", "-o", "t.hrxt", "--workload", "hazards"];
    let first = run(dir.path(), &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(
        !stderr(&first).contains("earlier trace"),
        "{}",
        stderr(&first)
    );
    let second = run(dir.path(), &args);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(
        stderr(&second).contains("note: t.hrxt held an earlier trace: it is replaced"),
        "{}",
        stderr(&second)
    );
    // A program that writes no trace leaves the earlier one as it was, and says so (it said
    // "it is replaced" before running it, then "no trace").
    let before = std::fs::read(dir.path().join("t.hrxt")).unwrap();
    let nothing = run(dir.path(), &["record", "-o", "t.hrxt", "--", "true"]);
    let err = stderr(&nothing);
    assert_eq!(code(&nothing), 0, "{err}");
    assert!(!err.contains("replaced"), "{err}");
    assert!(
        err.contains("no trace: true wrote nothing to t.hrxt")
            && err.contains("the earlier trace there is left as it was"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.path().join("t.hrxt")).unwrap(), before);
    // A program that records replaces it, said once it did.
    let inner = format!(
        "{} -q record -o t.hrxt --workload hazards",
        env!("CARGO_BIN_EXE_hrx-trace")
    );
    let program = run(
        dir.path(),
        &["record", "-o", "t.hrxt", "--", "sh", "-c", &inner],
    );
    let err = stderr(&program);
    assert_eq!(code(&program), 0, "{err}");
    assert_eq!(
        err.matches("held an earlier trace: it is replaced").count(),
        1,
        "{err}"
    );
    let quiet = run(
        dir.path(),
        &["record", "-q", "-o", "t.hrxt", "--workload", "hazards"],
    );
    assert!(
        !stderr(&quiet).contains("earlier trace"),
        "{}",
        stderr(&quiet)
    );
}

/// An earlier trace in a folder the recording may not write (only the trace file is
/// writable): the recorder cannot write its new file beside it and empties the earlier
/// trace in place, so a reader still reading it reads two recordings as one. `record` of a
/// program and of a workload says so; it said "it is replaced", as of a replacement that
/// its readers never notice. The recordings run as `nobody` where the test runs as root,
/// whom a folder's permissions do not stop.
#[test]
fn an_earlier_trace_emptied_in_place_is_said() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.hrxt");
    let first = run(
        dir.path(),
        &["record", "-o", "t.hrxt", "--workload", "hazards"],
    );
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mode = |mode| std::fs::Permissions::from_mode(mode);
    if root {
        // nobody may write the trace and enter the folder, not create files in it.
        std::os::unix::fs::chown(&trace, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(dir.path(), mode(0o755)).unwrap();
    } else {
        std::fs::set_permissions(dir.path(), mode(0o555)).unwrap();
    }
    let inode = || std::fs::metadata(&trace).unwrap().ino();
    let before = inode();
    let traced = example("traced");
    let program = [
        "record",
        "-o",
        "t.hrxt",
        "--",
        traced.to_str().unwrap(),
        "2",
    ];
    let workload = ["record", "-o", "t.hrxt", "--workload", "hazards"];
    // Run as nobody where the test runs as root (root's writes ignore the folder's mode).
    let run_as_nobody = |command: &mut std::process::Command| {
        if root {
            command.uid(65534).gid(65534);
        }
        let out = command.output().unwrap();
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{err}");
        err
    };
    for args in [&program[..], &workload[..]] {
        let err = run_as_nobody(hrx_trace(dir.path()).args(args));
        assert_eq!(inode(), before, "{args:?}: emptied in place, not replaced");
        assert!(
            err.contains(
                "note: t.hrxt held an earlier trace: it was emptied in place, as its folder is \
                 not writable; a reader still reading it reads two recordings as one"
            ),
            "{args:?}: {err}"
        );
        assert!(!err.contains("it is replaced"), "{args:?}: {err}");
    }
    // The runtime's own word under `HRX_TRACE`, without `record`.
    let err = run_as_nobody(
        std::process::Command::new(&traced)
            .arg("2")
            .current_dir(dir.path())
            .env("HRX_TRACE", "t.hrxt"),
    );
    assert_eq!(inode(), before, "emptied in place, not replaced");
    assert!(
        err.contains(
            "hrx: HRX_TRACE=t.hrxt: it held an earlier trace: it was emptied in place, as its \
             folder is not writable; a reader still reading it reads two recordings as one"
        ),
        "{err}"
    );
    std::fs::set_permissions(dir.path(), mode(0o700)).unwrap();
}

#[test]
fn a_second_recorder_on_the_same_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Hold the lock as a live recorder would.
    let file = std::fs::File::create(dir.path().join("busy.hrxt")).unwrap();
    file.try_lock().unwrap();
    let output = run(
        dir.path(),
        &["record", "-o", "busy.hrxt", "--workload", "hazards"],
    );
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("another recorder"),
        "{}",
        stderr(&output)
    );
    // `record -- PROGRAM` is refused before the program runs: it would create `ran`.
    let output = run(
        dir.path(),
        &["record", "-o", "busy.hrxt", "--", "sh", "-c", "touch ran"],
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("another recorder"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("ran").exists(), "the program ran");
    drop(file);
}

/// An output no recorder can write: a missing directory, a read-only one (as root, which
/// writes anywhere else, `/proc`), a directory. Refused in one line before anything runs.
#[test]
fn an_unwritable_output_is_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let read_only = dir.path().join("ro");
    std::fs::create_dir(&read_only).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unwritable = if root {
        Path::new("/proc/hrx-test.hrxt").to_path_buf()
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
        read_only.join("x.hrxt")
    };
    let unwritable = unwritable.to_str().unwrap();
    for (output_path, says) in [
        (
            "/nonexistent/dir/x.hrxt",
            "directory /nonexistent/dir does not exist",
        ),
        (unwritable, "no file can be created in"),
        (".", "it is a directory"),
        // A missing directory named with its slash (the program ran untraced, exit 0).
        ("sub/", "it is a directory"),
    ] {
        for what in [
            &["--", "sh", "-c", "touch ran"][..],
            &["--workload", "hazards"][..],
        ] {
            let mut args = vec!["record", "-o", output_path];
            args.extend_from_slice(what);
            let output = run(dir.path(), &args);
            assert_error(&output, says);
            assert!(stdout(&output).is_empty(), "{args:?}");
            assert!(!Path::new(output_path).is_file(), "{args:?}");
            assert!(
                !dir.path().join("ran").exists(),
                "{args:?}: the program ran"
            );
        }
    }
    assert_eq!(std::fs::read_dir(&read_only).unwrap().count(), 0);
}

#[test]
fn a_program_that_crashes_exits_128_plus_the_signal_with_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "sh", "-c", "kill -SEGV $$"]);
    assert_eq!(code(&output), 128 + 11);
    let err = stderr(&output);
    assert!(err.contains("killed by signal 11 (SIGSEGV)"), "{err}");
    // The note about the signal, and the one saying no trace was written.
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(!dir.path().join("hrx.hrxt").exists());
}

/// SIGTERM sent to `hrx-trace record` reaches the program (which may close its trace), and
/// hrx-trace exits 128+15; a program that does not catch it dies of it.
#[test]
fn sigterm_and_sigint_are_forwarded_to_the_program() {
    let dir = tempfile::tempdir().unwrap();
    for (signal, name) in [(libc::SIGTERM, "TERM"), (libc::SIGINT, "INT")] {
        let marker = format!("caught-{name}");
        let script = format!(
            "trap 'touch {marker}; exit 0' {name}; touch ready; while :; do sleep 0.05; done"
        );
        let child = hrx_trace(dir.path())
            .args(["record", "--", "sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&dir.path().join("ready"));
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let output = child.wait_with_output().unwrap();
        assert_eq!(code(&output), 128 + signal, "{}", stderr(&output));
        assert!(
            dir.path().join(&marker).exists(),
            "the program never got SIG{name}"
        );
        let err = stderr(&output);
        assert!(
            err.contains(&format!(
                "received signal {signal} (SIG{name}) and forwarded it"
            )),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("ready")).unwrap();
    }
    // A program that does not catch SIGTERM dies of it.
    let child = hrx_trace(dir.path())
        .args(["record", "--", "sh", "-c", "touch ready; exec sleep 600"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ready"));
    // SAFETY: as above. (Had it not been forwarded, the program would exit 0 in 10 minutes.)
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let output = child.wait_with_output().unwrap();
    assert_eq!(code(&output), 128 + 15, "{}", stderr(&output));
    assert!(stderr(&output).contains("killed by signal 15 (SIGTERM)"));
}

/// A program that ignores SIGINT runs on: the second interrupt says so, the third kills it
/// and what it started (SIGKILL), and hrx-trace exits 128+2 as for any forwarded SIGINT.
#[test]
fn a_program_ignoring_interrupts_is_killed_by_the_third() {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let script = "trap '' INT; touch ready; while :; do sleep 0.05; done";
    let mut child = hrx_trace(dir.path())
        .args(["record", "--", "sh", "-c", script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let reader = {
        let (seen, mut pipe) = (seen.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    wait_for(&dir.path().join("ready"));
    let pid = child.id() as i32;
    // Interrupts one at a time, each once `record` waits for its program (asleep in
    // `waitpid`, which the signal interrupts: `record` notes a signal there, and one that
    // came before it got there only at the next), and once `record` said what the last one
    // did, 300 ms after that: `record` counts a signal within 200 ms of the one it handled
    // last as the same delivery (`SAME_DELIVERY_NS`), and a note comes after its signal was
    // handled, so the next is more than 200 ms later by causality. (The test sent another
    // whenever a note had not come after a second: on a loaded machine, one more than three,
    // which finds hrx-trace with its default action again.) None after the kill's note.
    for note in [
        "received signal 2 (SIGINT) and forwarded it to sh",
        "is still running after signal 2 (SIGINT); interrupt once more",
        "third interrupt: killed sh",
    ] {
        // Liveness limits, not time bounds: each comes, or never.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut give_up = |what: &str| {
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                panic!("{what} before {note:?}: {}", seen.lock().unwrap());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        while !waits_for_a_child(pid) {
            give_up("record never waited for its program");
        }
        // SAFETY: kill has no memory preconditions; the pid is our child's, not reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        while !seen.lock().unwrap().contains(note) {
            give_up("no note after an interrupt");
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let err = seen.lock().unwrap().clone();
    assert_eq!(status.code(), Some(128 + 2), "{err}");
    assert!(err.contains("killed by signal 9 (SIGKILL)"), "{err}");
    assert_eq!(err.matches("interrupt once more").count(), 1, "{err}");
    // The forwarding is noted once, first (it came last, after the kill's note); and nothing
    // is waited for after the kill (it noted "waiting for 1 process" left dying).
    let forwarded = "note: hrx-trace received signal 2 (SIGINT) and forwarded it to sh";
    assert_eq!(err.matches(forwarded).count(), 1, "{err}");
    assert!(
        err.find(forwarded) < err.find("interrupt once more"),
        "{err}"
    );
    assert!(!err.contains("waiting for"), "{err}");
}

/// `nohup hrx-trace record -- PROGRAM`: a signal hrx-trace was started with ignored stays
/// ignored, neither stopping it nor forwarded to the program, which inherits it ignored (it
/// was handled and forwarded: the program died of the SIGHUP `nohup` protects it from, a
/// break-it pass).
#[test]
fn a_signal_started_ignored_stays_ignored_and_is_not_forwarded() {
    let dir = tempfile::tempdir().unwrap();
    // The program notes the signals it inherited ignored (SIGHUP is bit 0 of the mask),
    // then waits for the test's signal to have been sent and exits 0.
    let script = "grep SigIgn /proc/$$/status > ignored; touch ready; \
                  while [ ! -e sent ]; do sleep 0.05; done";
    let mut command = hrx_trace(dir.path());
    command.args(["record", "--", "sh", "-c", script]);
    // SAFETY: pre_exec runs in the child before exec; signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = command
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ready"));
    // SAFETY: kill has no memory preconditions; the pid is our child's, not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::fs::write(dir.path().join("sent"), "").unwrap();
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    assert_eq!(code(&output), 0, "{err}");
    assert!(!err.contains("SIGHUP"), "{err}");
    let ignored = std::fs::read_to_string(dir.path().join("ignored")).unwrap();
    let mask = ignored
        .split_whitespace()
        .nth(1)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or_else(|| panic!("{ignored:?}"));
    assert_eq!(
        mask & 1,
        1,
        "the program inherits SIGHUP ignored: {ignored:?}"
    );
}

/// `record -q`: a forwarded signal is said by the exit code alone, no `note:` line (the note
/// was written past `-q`, found by a fresh-user pass).
#[test]
fn a_forwarded_signal_is_not_noted_under_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'exit 3' TERM; touch ready; while :; do sleep 0.05; done";
    let child = hrx_trace(dir.path())
        .args(["record", "-q", "--", "sh", "-c", script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ready"));
    // SAFETY: kill has no memory preconditions; the pid is our child's, not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    assert_eq!(code(&output), 128 + 15, "{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// The same signal twice at once, as coreutils `timeout` sends it (to its child, then to the
/// child's process group), is forwarded as one: a program that exits on the first is not said
/// to run on after it. A try whose two signals this test could not send within 100 ms of each
/// other (a loaded machine) is not judged: it runs again.
#[test]
fn a_signal_sent_twice_at_once_is_one_interrupt() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        // It takes a moment to exit, as a program closing its trace does.
        let script = "trap 'sleep 0.3; exit 3' TERM; touch ready; while :; do sleep 0.05; done";
        let child = hrx_trace(dir.path())
            .args(["record", "--", "sh", "-c", script])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&dir.path().join("ready"));
        let at_once = send_twice_at_once(child.id(), libc::SIGTERM);
        let output = child.wait_with_output().unwrap();
        if !at_once {
            continue;
        }
        let err = stderr(&output);
        assert_eq!(code(&output), 128 + 15, "{err}");
        assert!(!err.contains("still running"), "{err}");
        assert_eq!(
            err.matches("received signal 15 (SIGTERM) and forwarded it")
                .count(),
            1,
            "{err}"
        );
        return;
    }
    panic!("10 tries, none sent its two signals within 100 ms");
}

/// Different signals sent together (held while hrx-trace is stopped, as a supervisor's
/// SIGTERM and a closing terminal's SIGHUP may come) are one interrupt: the first is
/// forwarded, the others named in its note and not forwarded; the program, which exits on
/// the first after a moment (as one closing its trace does), is neither said to run on nor
/// killed. Counted one interrupt each, two said "is still running ... interrupt once more"
/// and three killed the program with SIGKILL, its trace never closed (break-it D3).
#[test]
fn different_signals_sent_together_are_one_interrupt() {
    let signals = [libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1];
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'sleep 0.3; exit 3' TERM HUP USR1; touch ready; \
                  while :; do sleep 0.05; done";
    let mut child = hrx_trace(dir.path())
        .args(["record", "--", "sh", "-c", script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ready"));
    assert!(
        crate::util::signals_together_once_handled(&mut child, &signals),
        "it ended before it handled them"
    );
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    // The kernel's choice of the first: its code, as for any forwarded signal.
    let first = code(&output) - 128;
    assert!(signals.contains(&first), "{err}");
    let name = |s: i32| hrx_capture::schema::signal_name(s).unwrap();
    assert!(
        err.contains(&format!(
            "received signal {first} ({}) and forwarded it to sh (",
            name(first)
        )),
        "{err}"
    );
    assert!(err.contains("sh exited with code 3"), "{err}");
    assert!(!err.contains("still running"), "{err}");
    assert!(!err.contains("interrupt once more"), "{err}");
    assert!(!err.contains("third interrupt"), "{err}");
    assert_eq!(err.matches("and forwarded it to sh").count(), 1, "{err}");
    assert!(
        err.contains("came with it: the same interrupt, not forwarded)"),
        "{err}"
    );
    for signal in signals {
        assert!(
            err.contains(&format!("signal {signal} ({})", name(signal))),
            "{} unnamed: {err}",
            name(signal)
        );
    }
}

/// Whether the main thread of process `pid` sleeps waiting for a child (`waitpid`): its
/// `wchan` is `do_wait`, or, where the kernel does not say (`0`), it sleeps.
fn waits_for_a_child(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let sleeps = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'));
    match std::fs::read_to_string(format!("/proc/{pid}/wchan")) {
        Ok(wchan) if wchan.trim() != "0" && !wchan.trim().is_empty() => {
            sleeps && wchan.trim() == "do_wait"
        }
        _ => sleeps,
    }
}

/// Waits for `path` to appear. No time limit: a loaded machine may take long to start a
/// program, and a program that never writes it fails its test by exiting first.
fn wait_for(path: &Path) {
    while !path.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Writing the trace fails (here a file size limit, as a full disk would) while the program
/// ignores it and exits 0: hrx-trace summarises what was recovered, reports the incomplete
/// trace in one line and exits 2. The truncated trace stays, and it reads.
#[test]
fn a_trace_write_failure_is_an_error_even_when_the_program_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    // 2 KiB: less than the hazards trace with its contents.
    let script = format!(
        "export HRX_TRACE_CONTENTS=1; {}; exit 0",
        size_limited("record -o t.hrxt --workload hazards >/dev/null 2>&1")
    );
    let output = run(
        dir.path(),
        &["record", "-o", "t.hrxt", "--", "sh", "-c", &script],
    );
    assert_error(
        &output,
        "the trace t.hrxt is incomplete (not closed cleanly)",
    );
    assert!(
        stderr(&output).contains("sh exited 0"),
        "{}",
        stderr(&output)
    );
    assert!(
        field(&stdout(&output), "file").contains("not closed cleanly"),
        "{}",
        stdout(&output)
    );
    let len = std::fs::metadata(dir.path().join("t.hrxt")).unwrap().len();
    assert!(len <= 2048, "{len}");
    let info = run(dir.path(), &["info", "t.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
}

/// A summary that cannot be written (`> /dev/full`) loses the summary, not the trace: a
/// warning says so and names the trace as complete, and the exit code is the program's, 0
/// included (a program that exited 0 made `record` exit 2, an `error:` line).
#[test]
fn a_summary_that_cannot_be_written_keeps_the_programs_exit_code() {
    let Some(_) = dev_full() else { return };
    // The program records quietly (nothing on its standard output) and exits 3, then 0; the
    // recording's own standard output is full.
    let dir = tempfile::tempdir().unwrap();
    for exit in [3, 0] {
        let script = format!(
            "{} -q record -o t.hrxt --workload hazards && exit {exit}",
            env!("CARGO_BIN_EXE_hrx-trace")
        );
        let output = hrx_trace(dir.path())
            .args(["record", "-o", "t.hrxt", "--", "sh", "-c", &script])
            .stdout(dev_full().unwrap())
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(code(&output), exit, "{err}");
        assert!(!err.contains("error:"), "{err}");
        // (A loaded host's warning may come beside it, from the program's own `record -q`.)
        let lost: Vec<_> = err
            .lines()
            .filter(|l| l.contains("cannot write the summary"))
            .collect();
        assert_eq!(lost.len(), 1, "{err}");
        assert_eq!(
            lost[0],
            "warning: cannot write the summary of t.hrxt to standard output: No space left on \
             device (os error 28); the trace is complete: `hrx-trace info t.hrxt` prints its \
             summary",
        );
    }
    // Two processes, two traces (one per process: `%p`): the full standard output is said
    // once.
    let two = format!(
        "{0} -q record -o 'u%p.hrxt' --workload hazards & {0} -q record -o 'u%p.hrxt' \
         --workload hazards; wait; exit 3",
        env!("CARGO_BIN_EXE_hrx-trace")
    );
    let full2 = dev_full().unwrap();
    let several = hrx_trace(dir.path())
        .args(["record", "-o", "u%p.hrxt", "--", "sh", "-c", &two])
        .stdout(full2)
        .output()
        .unwrap();
    let err2 = stderr(&several);
    assert_eq!(code(&several), 3, "{err2}");
    let traces = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.starts_with('u') && name.ends_with(".hrxt")
        })
        .count();
    assert_eq!(traces, 2, "{err2}");
    assert_eq!(
        err2.lines()
            .filter(|l| l.contains("cannot write the summary"))
            .count(),
        1,
        "{err2}"
    );
    // The trace itself is whole.
    let info = run(dir.path(), &["info", "t.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    let info = stdout(&info);
    assert!(field(&info, "closed").starts_with("cleanly"), "{info}");
}

/// A standard error that cannot be written loses its lines, not the run: `eprintln!`
/// panicked, the panic hook's own line panicked again, and every verb aborted (exit 134)
/// whatever the program's exit code or the verb's own was.
#[test]
fn a_standard_error_that_cannot_be_written_keeps_the_exit_codes() {
    if dev_full().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let full = || dev_full().unwrap();
    // The program writes no trace: `record` warns (on the full standard error) and exits
    // with the program's code.
    let output = hrx_trace(dir.path())
        .args(["record", "-o", "t.hrxt", "--", "sh", "-c", "exit 3"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(code(&output), 3);
    // A verb's own failure keeps its exit code (2), its `error:` line lost.
    let output = hrx_trace(dir.path())
        .args(["info", "missing.hrxt"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
}

/// A process of the recorded program that records to a file of its own (a nested
/// `hrx-trace record -o inner.hrxt`) records there, run after run: the check for a sibling
/// that already wrote the recording's file compares `HRX_TRACE`'s file only (a finished
/// earlier `inner.hrxt` was taken for a sibling's trace, and the second run wrote
/// `inner.PID.hrxt` beside it).
#[test]
fn a_nested_recording_to_its_own_file_records_there_again() {
    let dir = tempfile::tempdir().unwrap();
    let inner = format!(
        "{} -q record --workload hazards -o inner.hrxt",
        env!("CARGO_BIN_EXE_hrx-trace")
    );
    for round in 0..2 {
        let output = run(
            dir.path(),
            &["-q", "record", "-o", "app.hrxt", "--", "sh", "-c", &inner],
        );
        let err = stderr(&output);
        assert_eq!(code(&output), 0, "round {round}: {err}");
        assert!(!err.contains("records into"), "round {round}: {err}");
        // `-o app.hrxt` was not written, and a note says so (without -q).
        let loud = run(
            dir.path(),
            &["record", "-o", "app.hrxt", "--", "sh", "-c", &inner],
        );
        assert!(
            stderr(&loud).contains("note: sh recorded into inner.hrxt, not app.hrxt"),
            "round {round}: {}",
            stderr(&loud)
        );
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["inner.hrxt"], "round {round}");
    }
}

/// `trim -o` over an earlier trace replaces it with a note, as `record -o` does (it was
/// silent); a new file draws none.
#[test]
fn a_trim_over_an_earlier_trace_says_it_replaced_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["-q", "record", "-o", "h.hrxt", "--workload", "hazards"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let trim = ["trim", "h.hrxt", "-o", "t.hrxt", "--submissions", "1..2"];
    let first = run(dir.path(), &trim);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(!stderr(&first).contains("replaced"), "{}", stderr(&first));
    let again = run(dir.path(), &trim);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stderr(&again).contains("note: t.hrxt held an earlier trace: it is replaced"),
        "{}",
        stderr(&again)
    );
}

/// Records `traced 1` into `dir/t.hrxt`, an earlier trace for a recording to replace; its
/// bytes.
fn record_an_earlier_trace(dir: &Path) -> Vec<u8> {
    let traced = example("traced");
    let args = [
        "-q",
        "record",
        "-o",
        "t.hrxt",
        "--",
        traced.to_str().unwrap(),
        "1",
    ];
    let earlier = run(dir, &args);
    assert_eq!(code(&earlier), 0, "{}", stderr(&earlier));
    std::fs::read(dir.join("t.hrxt")).unwrap()
}

#[test]
fn a_trace_whose_first_write_fails_leaves_no_empty_file_and_no_word_of_a_death() {
    // A full disk at the trace's first write (a file size limit of 0 stands in for it): the
    // runtime says it runs untraced, and the program runs. The recorder left the empty file
    // it had created, and `record` then said "t.hrxt: byte 0: the file is empty ... the
    // recording process probably died before its first write" (exit 2); an earlier trace
    // there, emptied by the recorder, was then "left as it was".
    let dir = tempfile::tempdir().unwrap();
    let record = |quiet: &str| {
        let script = format!(
            "ulimit -f 0; trap '' XFSZ; exec {} {quiet} record -o t.hrxt -- {} 3",
            env!("CARGO_BIN_EXE_hrx-trace"),
            example("traced").display()
        );
        std::process::Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let out = record("");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(err.contains("cannot record there"), "{err}");
    assert!(err.contains("warning: no trace:"), "{err}");
    assert!(!err.contains("died"), "{err}");
    assert!(!dir.path().join("t.hrxt").exists(), "an empty file is left");

    // A whole earlier trace at t.hrxt: the failing recorder wrote its new recording beside
    // it, to replace it at its first write, so the earlier trace is left as it was (it
    // emptied it in place, and the earlier trace was lost).
    let earlier = record_an_earlier_trace(dir.path());
    let out = record("-q");
    let err = stderr(&out);
    assert!(err.contains("warning: no trace:"), "{err}");
    assert!(
        err.contains("the earlier trace there is left as it was"),
        "{err}"
    );
    assert!(!err.contains("is lost"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("t.hrxt")).unwrap(), earlier);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "a file is left"
    );

    // Without `record`, the runtime's own line says nothing is lost.
    let script = format!(
        "ulimit -f 0; trap '' XFSZ; HRX_TRACE=t.hrxt exec {} 3",
        example("traced").display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env_remove("HRX_TRACE_PATHS")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(err.contains("this process runs untraced"), "{err}");
    assert!(!err.contains("is lost"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("t.hrxt")).unwrap(), earlier);
}

/// A recording over an earlier trace whose first write fits and a later one does not (a file
/// size limit stands in for a full disk): the earlier trace is kept beside the cut-short
/// recording as `t.earlier.hrxt`, byte for byte, and the runtime says so. It was replaced
/// by a fragment that held no submission (a break-it pass, session 58).
#[test]
fn a_recording_that_fails_after_its_first_write_keeps_the_earlier_trace() {
    let dir = tempfile::tempdir().unwrap();
    let traced = example("traced");
    let earlier = record_an_earlier_trace(dir.path());
    let script = format!(
        "ulimit -f 8; trap '' XFSZ; exec {} record -o t.hrxt -- {} 2000",
        env!("CARGO_BIN_EXE_hrx-trace"),
        traced.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("failed (") && err.contains("the earlier trace it replaced is kept as "),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("t.earlier.hrxt")).unwrap(),
        earlier
    );
    let cut = std::fs::read(dir.path().join("t.hrxt")).unwrap();
    assert!(cut.starts_with(b"HRXTRACE") && cut != earlier);
    // `record`'s note names it (it said "it is replaced").
    assert!(
        err.contains(
            "note: t.hrxt held an earlier trace: it is kept as t.earlier.hrxt, as writing the \
             new recording failed"
        ),
        "{err}"
    );
    let hidden = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with('.'))
            .collect()
    };
    assert_eq!(hidden(), Vec::<String>::new());
    // A program that crashes over an earlier trace: its recording replaces it, as `-o`
    // asks, and `record` removes the hidden link the crash left (it was left, unsaid).
    let crashed = run(
        dir.path(),
        &[
            "record",
            "-o",
            "t.hrxt",
            "--",
            example("crashing").to_str().unwrap(),
            "segv",
        ],
    );
    assert_eq!(code(&crashed), 128 + libc::SIGSEGV, "{}", stderr(&crashed));
    assert!(
        stderr(&crashed).contains("note: t.hrxt held an earlier trace: it is replaced"),
        "{}",
        stderr(&crashed)
    );
    assert_eq!(hidden(), Vec::<String>::new());
}

/// A fault `HRX_FAULT` gave the program that never fired is a warning (`-q` keeps it), the
/// exit code the program's (it was silent, exit 0: a break-it pass); one that fired is not
/// said so.
#[test]
fn a_fault_that_never_fired_in_the_program_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let traced = example("traced");
    let record = |fault: &str, quiet: bool, file: &str| {
        let mut command = hrx_trace(dir.path());
        if quiet {
            command.arg("-q");
        }
        command
            .args(["record", "-o", file, "--"])
            .arg(&traced)
            .arg("2")
            .env("HRX_FAULT", fault)
            .output()
            .unwrap()
    };
    for (quiet, file) in [(false, "n.hrxt"), (true, "q.hrxt")] {
        let output = record("op=9999:device-lost", quiet, file);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let warned = format!(
            "warning: {file}: runtime 1: the injected fault op=9999:device-lost never fired\n"
        );
        assert!(stderr(&output).contains(&warned), "{}", stderr(&output));
    }
    // The first fill fails: the program's exit code (1), and nothing said of a fault.
    let output = record("op=1:kernel-error", false, "f.hrxt");
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("never fired"),
        "{}",
        stderr(&output)
    );
}
