//! `hrx-trace replay`: verdicts and exit codes through the real binary.

use crate::util::{
    assert_error, code, record_hazards, run, run_into_closed_stdout, stderr, stdout,
};

#[test]
fn a_recorded_workload_replays_with_exit_0_and_a_json_report() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = run(dir.path(), &["replay", "h.hrxt", "--repeat", "2"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
    assert!(
        stdout(&replay).contains("verdict: MATCH"),
        "{}",
        stdout(&replay)
    );
    let json = run(dir.path(), &["replay", "h.hrxt", "--report", "json"]);
    assert_eq!(code(&json), 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["verdict"], "match", "{report}");
}

#[test]
fn max_slowdown_over_fewer_than_three_replays_gets_a_note() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    // The note is under test, not the timing: a ratio no loaded machine reaches (CI once saw
    // one replay of a 1.6 µs copy take 3.94 ms, 2519x, under `--max-slowdown 1000`).
    for (repeat, note) in [
        ("1", Some("a single replay's time")),
        ("2", Some("the mean of two replays")),
        ("3", None),
    ] {
        let args = [
            "replay",
            "h.hrxt",
            "--max-slowdown",
            "1e9",
            "--repeat",
            repeat,
        ];
        let replay = run(dir.path(), &args);
        assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
        let err = stderr(&replay);
        match note {
            Some(note) => assert!(
                err.starts_with("note: --max-slowdown judged") && err.contains(note),
                "--repeat {repeat}: {err}"
            ),
            None => assert!(!err.contains("note:"), "--repeat {repeat}: {err}"),
        }
    }
    // An error stays one line (and its hint), without the note.
    let missing = run(dir.path(), &["replay", "gone.hrxt", "--max-slowdown", "2"]);
    assert_error(&missing, "gone.hrxt: cannot open it");
}

#[test]
fn the_faults_workload_replays_its_failure_as_expected() {
    let Some(photo) = crate::util::photo() else {
        eprintln!("skipped: mate-backgrounds is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let photo = photo.to_str().unwrap();
    let args = [
        "record",
        "--workload",
        "faults",
        "--input",
        photo,
        "--max-width",
        "160",
        "-o",
        "f.hrxt",
    ];
    assert_eq!(code(&run(dir.path(), &args)), 0);
    let replay = run(dir.path(), &["replay", "f.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stdout(&replay));
    assert!(
        stdout(&replay).contains("failed    failed"),
        "{}",
        stdout(&replay)
    );
}

#[test]
fn unreadable_input_is_the_readers_error_and_hint_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("junk.hrxt"), b"definitely not a trace").unwrap();
    // A file that does not read is told as every verb tells it, with the same hint.
    for (file, says) in [
        ("junk.hrxt", "error: junk.hrxt: byte 0: not an hrx trace"),
        ("missing.hrxt", "error: missing.hrxt: cannot open it"),
    ] {
        let replay = run(dir.path(), &["replay", file]);
        assert_error(&replay, says);
        assert!(stderr(&replay).contains("\nhint: "), "{}", stderr(&replay));
    }
    let bad = run(dir.path(), &["replay", "junk.hrxt", "--backend", "quantum"]);
    assert_eq!(code(&bad), 2);
}

/// A trace whose runtime prepared a graph but never submitted it has nothing to compare:
/// exit 2 with one line saying so, not a match of nothing (it said "MATCH (exit 0)").
#[test]
fn a_trace_without_submissions_is_not_a_match() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("idle.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let buffer = rt.buffer(256, hrx::Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let prepared = graph.prepare().unwrap();
    drop((prepared, buffer, rt));
    recorder.close().unwrap();
    let replay = run(dir.path(), &["replay", "idle.hrxt"]);
    assert_error(
        &replay,
        "idle.hrxt: cannot replay: it holds no submission to compare (1 runtime)",
    );
    assert_eq!(stdout(&replay), "");
}

/// Without a CUDA driver, `replay --backend cuda` is one error line and a hint naming the
/// software device (on a machine with CUDA the replay simply runs).
#[test]
fn replay_on_an_unavailable_backend_hints_at_the_software_device() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = run(dir.path(), &["replay", "h.hrxt", "--backend", "cuda"]);
    if code(&replay) == 0 {
        eprintln!("CUDA is available here: nothing to check");
        return;
    }
    assert_eq!(code(&replay), 2);
    let err = stderr(&replay);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("cannot replay"),
        "{err}"
    );
    assert_eq!(
        lines[1],
        "hint: `--backend sim` (the default) replays on the software device"
    );
}

/// A reader that goes away before the report (`replay ... | head -c 1`) is not an error:
/// both report formats exit 0 with nothing on standard error (found in first use: the JSON
/// report was printed with `println!`, which panicked into "internal error", exit 101).
#[test]
fn a_closed_standard_output_is_not_an_error_and_keeps_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for report in ["json", "text"] {
        // Closed before the replay (milliseconds) can have written anything.
        let out = run_into_closed_stdout(dir.path(), &["replay", "h.hrxt", "--report", report]);
        assert_eq!(code(&out), 0, "--report {report}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "--report {report}");
    }
    // A regression keeps its exit code: the CUDA recording of `faults` fails elsewhere on
    // the software device (`hrx-trace replay F | head` in CI must still fail).
    let cuda = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tui/tests/data/faults-cuda-h200.hrxt"
    );
    assert_eq!(code(&run(dir.path(), &["replay", cuda])), 1);
    for report in ["json", "text"] {
        let out = run_into_closed_stdout(dir.path(), &["replay", cuda, "--report", report]);
        assert_eq!(code(&out), 1, "--report {report}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "--report {report}");
    }
}
