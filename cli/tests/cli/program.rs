//! `record -- PROGRAM`: exit codes, programs without hrx, programs that cannot start.

use crate::util::*;

#[test]
fn exit_code_is_forwarded_and_a_missing_trace_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code(&output), 3, "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("no trace"), "{err}");
    assert!(err.contains("does not use hrx"), "{err}");
    assert!(!dir.path().join("hrx.hrxt").exists());
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

#[test]
fn a_program_killed_by_a_signal_exits_128_plus_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(code(&output), 128 + 9);
    assert!(stderr(&output).contains("killed by signal 9 (SIGKILL)"));
}

#[test]
fn the_program_sees_hrx_trace_with_an_absolute_literal_path() {
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
    // (canonical) form of it; `%` is doubled so that the runtime's `%p` expansion keeps it.
    let expected = dir.path().canonicalize().unwrap().join("a%%p.hrxt");
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
    drop(file);
}
