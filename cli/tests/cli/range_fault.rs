//! A captured injected fault in a trace of part of a run: `op=N` and `kernel=NAME#N` count
//! from the run's start, so a trim or a capture range from a later submission says the
//! fault counted from its own start, and replay fails the operation the capture failed;
//! one that fired before the range is not injected, and `info` and `replay` say so.

use crate::util::{code, photo, run, stderr, stdout};
use std::path::Path;

/// Records the `faults` workload (4 frames of 10 device operations each: frame 1 is
/// operations 1-10), with `extra` arguments (`--fault`, `--capture-range`).
fn record(dir: &Path, name: &str, photo: &Path, extra: &[&str]) {
    let mut args = vec![
        "record",
        "--workload",
        "faults",
        "--input",
        photo.to_str().unwrap(),
        "--max-width",
        "160",
        "-o",
        name,
    ];
    args.extend_from_slice(extra);
    let out = run(dir, &args);
    assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
}

fn trim(dir: &Path, source: &str, range: &str) -> String {
    let name = format!("trim-{}.hrxt", range.replace('.', "_"));
    let out = run(dir, &["trim", source, "-o", &name, "--submissions", range]);
    assert_eq!(code(&out), 0, "{range}: {}", stderr(&out));
    name
}

/// A replay's exit code, its failed submissions with the operation that failed on each
/// side (the error's last parenthesis, e.g. `hrx_sobel`), and its notes.
struct Replayed {
    code: i32,
    failed: Vec<(u64, String, String)>,
    mismatched_statuses: usize,
    notes: Vec<String>,
}

fn replay(dir: &Path, name: &str) -> Replayed {
    let out = run(dir, &["replay", name, "--report", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}{}", stdout(&out), stderr(&out)));
    let operation = |error: &serde_json::Value| {
        let text = error.as_str().unwrap_or_default();
        text.rsplit_once('(')
            .map(|(_, what)| what.trim_end_matches(')').to_owned())
            .unwrap_or_default()
    };
    let rows = report["submissions"].as_array().unwrap();
    Replayed {
        code: code(&out),
        failed: rows
            .iter()
            .filter(|r| r["captured"] == "failed" || r["replayed"] == "failed")
            .map(|r| {
                (
                    r["submission"].as_u64().unwrap(),
                    operation(&r["captured_error"]),
                    operation(&r["replayed_error"]),
                )
            })
            .collect(),
        mismatched_statuses: rows
            .iter()
            .filter(|r| r["captured"] != r["replayed"])
            .count(),
        notes: report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_owned())
            .collect(),
    }
}

fn info(dir: &Path, name: &str) -> String {
    let out = run(dir, &["info", name]);
    assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
    stdout(&out)
}

/// Trims around the fault (the default `kernel=hrx_sobel#2`, in submission 2, and `op=25`,
/// in submission 3's Sobel): the replay fails the same submission at the same operation as
/// the capture and exits as the whole trace's replay does (it failed submission 3, or
/// none, counting from the trim's start).
#[test]
fn a_trim_around_the_fault_fails_the_operation_the_capture_failed() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    record(dir.path(), "kernel.hrxt", &photo, &[]);
    record(
        dir.path(),
        "op.hrxt",
        &photo,
        &["--fault", "op=25:device-lost"],
    );
    for (source, at, ranges) in [
        ("kernel.hrxt", 2, &["2..", "2..3"][..]),
        ("op.hrxt", 3, &["2..", "3..4", "3.."][..]),
    ] {
        let whole = replay(dir.path(), source);
        assert_eq!(whole.mismatched_statuses, 0, "{source}");
        let expected: Vec<_> = whole.failed.iter().filter(|f| f.0 == at).cloned().collect();
        assert_eq!(expected.len(), 1, "{source}: {:?}", whole.failed);
        assert_eq!(expected[0].1, "hrx_sobel", "{source}");
        for range in ranges {
            let name = trim(dir.path(), source, range);
            let trimmed = replay(dir.path(), &name);
            assert_eq!(
                trimmed.code, whole.code,
                "{source} {range}: {:?}",
                trimmed.notes
            );
            assert_eq!(trimmed.mismatched_statuses, 0, "{source} {range}");
            assert_eq!(trimmed.failed, expected, "{source} {range}");
            assert!(
                trimmed.failed.iter().all(|(_, c, r)| c == r),
                "{source} {range}: {:?}",
                trimmed.failed
            );
        }
    }
    let op = info(dir.path(), &trim(dir.path(), "op.hrxt", "3.."));
    assert!(
        op.contains("fault op=25:device-lost counted from submission 3: op=5:device-lost"),
        "{op}"
    );
}

/// A trim after the fault fired injects nothing (a replay counting from the trim's start
/// would fail a later submission), and `replay` and `info` say so in one line each; a trim
/// that ends before the fault counts it from its own start and replays without a failure.
#[test]
fn a_trim_after_the_fault_injects_nothing_and_one_before_it_counts_from_its_start() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    record(dir.path(), "kernel.hrxt", &photo, &[]);
    record(
        dir.path(),
        "op.hrxt",
        &photo,
        &["--fault", "op=25:device-lost"],
    );
    for (source, spec, fired, range) in [
        ("kernel.hrxt", "kernel=hrx_sobel#2:device-lost", 2, "3.."),
        ("op.hrxt", "op=25:device-lost", 3, "4.."),
    ] {
        let name = trim(dir.path(), source, range);
        let trimmed = replay(dir.path(), &name);
        assert_eq!(trimmed.code, 0, "{source} {range}: {:?}", trimmed.failed);
        assert_eq!(trimmed.failed, [], "{source} {range}");
        let start = range.trim_end_matches('.');
        let said = format!(
            "the captured fault {spec} fired in submission {fired} before this trace's range \
             (from submission {start}): nothing injected"
        );
        let notes: Vec<_> = trimmed.notes.iter().filter(|n| n.contains(&said)).collect();
        assert_eq!(notes.len(), 1, "{source} {range}: {:?}", trimmed.notes);
        let text = info(dir.path(), &name);
        let line = format!(
            "fault {spec} fired in submission {fired}, before submission {start}: none injected"
        );
        assert_eq!(text.matches(&line).count(), 1, "{text}");
    }
    // Before the fault: op=25 is operation 15 counted from submission 2; submission 2 runs
    // operations 1-10 of the replay and nothing fails.
    let name = trim(dir.path(), "op.hrxt", "2..3");
    let trimmed = replay(dir.path(), &name);
    assert_eq!(
        (trimmed.code, trimmed.failed),
        (0, vec![]),
        "{:?}",
        trimmed.notes
    );
    let text = info(dir.path(), &name);
    assert!(
        text.contains("fault op=25:device-lost counted from submission 2: op=15:device-lost"),
        "{text}"
    );
    // From the run's start to before the fault: the quarantine and poisons the fault caused
    // later are not in the trim (they named a submission it lacks: replay refused it).
    let name = trim(dir.path(), "kernel.hrxt", "1..2");
    let trimmed = replay(dir.path(), &name);
    assert_eq!(
        (trimmed.code, trimmed.failed),
        (0, vec![]),
        "{:?}",
        trimmed.notes
    );
}

/// A capture range from a later submission records the fault counted from its start (the
/// runtime knows the operations and dispatches it ran before): its replay fails the
/// operation the capture failed; a range after the fault injects nothing and says so.
#[test]
fn a_capture_range_counts_the_fault_from_its_start() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (name, extra, failed) in [
        (
            "k2.hrxt",
            &["--capture-range", "submissions:2.."][..],
            Some(2),
        ),
        (
            "o3.hrxt",
            &[
                "--capture-range",
                "submissions:3..",
                "--fault",
                "op=25:device-lost",
            ][..],
            Some(3),
        ),
        (
            "o4.hrxt",
            &[
                "--capture-range",
                "submissions:4..",
                "--fault",
                "op=25:device-lost",
            ][..],
            None,
        ),
    ] {
        record(dir.path(), name, &photo, extra);
        let replayed = replay(dir.path(), name);
        assert_eq!(replayed.code, 0, "{name}: {:?}", replayed.notes);
        assert_eq!(replayed.mismatched_statuses, 0, "{name}");
        match failed {
            Some(at) => assert_eq!(
                replayed.failed,
                [(at, "hrx_sobel".to_owned(), "hrx_sobel".to_owned())],
                "{name}"
            ),
            None => {
                assert_eq!(replayed.failed, [], "{name}");
                let said = "fired before this trace's range (from submission 4): nothing injected";
                assert!(
                    replayed.notes.iter().any(|n| n.contains(said)),
                    "{name}: {:?}",
                    replayed.notes
                );
            }
        }
    }
}
