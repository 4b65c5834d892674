//! Trimming: a trace of part of a run, trimmed from a whole trace, replays on its own and
//! reproduces the whole run's outputs for those submissions.

use crate::util::{assert_error, code, field, photo, run, stderr, stdout};
use std::collections::BTreeMap;
use std::path::Path;

/// Records the pipeline over the photograph: 8 small frames, 3 in flight.
fn record(dir: &Path, name: &str, photo: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "record",
        "--workload",
        "pipeline",
        "--backend",
        "sim",
        "--input",
        photo.to_str().unwrap(),
        "--frames",
        "8",
        "--max-width",
        "160",
        "-o",
        name,
    ];
    args.extend_from_slice(extra);
    run(dir, &args)
}

/// Replays `name` (exit 0 asserted) and returns its replayed output digests by (submission,
/// buffer, start, end).
fn replayed_outputs(dir: &Path, name: &str) -> BTreeMap<(u64, u64, u64, u64), u64> {
    let out = run(dir, &["replay", name, "--report", "json"]);
    assert_eq!(code(&out), 0, "{name}: {}{}", stdout(&out), stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let n = |k: &str| o[k].as_u64().unwrap();
            (
                (n("submission"), n("buffer"), n("start"), n("end")),
                n("replayed"),
            )
        })
        .collect()
}

#[test]
fn a_trimmed_pipeline_replays_and_matches_the_whole_replay() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "whole.hrxt", &photo, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let whole = replayed_outputs(dir.path(), "whole.hrxt");
    for (range, start, end) in [("4..7", 4, 7), ("1..3", 1, 3), ("6..", 6, 9)] {
        let name = format!("trim-{start}.hrxt");
        let trim = run(
            dir.path(),
            &["trim", "whole.hrxt", "-o", &name, "--submissions", range],
        );
        assert_eq!(code(&trim), 0, "{range}: {}", stderr(&trim));
        assert!(!stderr(&trim).contains("warning"), "{}", stderr(&trim));
        let info = stdout(&run(dir.path(), &["info", &name]));
        assert_eq!(
            field(&info, "range"),
            format!("trimmed from whole.hrxt, submissions {start}..{end} (submissions:{range})")
        );
        assert!(!info.contains("warning"), "{info}");
        let trimmed = replayed_outputs(dir.path(), &name);
        let expected: BTreeMap<_, _> = whole
            .iter()
            .filter(|((sub, ..), _)| (start..end).contains(sub))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(trimmed, expected, "{range}");
    }
    // A time window: the submissions submitted in it.
    let trim = run(
        dir.path(),
        &["trim", "whole.hrxt", "-o", "t.hrxt", "--time", "0..1000s"],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    assert!(
        stdout(&trim).contains("submissions 1..9"),
        "{}",
        stdout(&trim)
    );
}

#[test]
fn trim_refuses_bad_ranges_with_one_line() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&record(dir.path(), "w.hrxt", &photo, &[])), 0);
    for (args, says) in [
        (vec!["--submissions", "9..3"], "start must be below the end"),
        (vec!["--submissions", "abc"], "is not a submission range"),
        (vec!["--submissions", "-2..4"], "is not a submission range"),
        (vec!["--submissions", "50..60"], "selects no submission"),
        (vec!["--time", "3s..1s"], "before the end"),
        (vec!["--time", "soon..later"], "is not a duration"),
    ] {
        let mut all = vec!["trim", "w.hrxt", "-o", "out.hrxt"];
        all.extend(args);
        let out = run(dir.path(), &all);
        assert_error(&out, says);
        assert!(!dir.path().join("out.hrxt").exists());
    }
    let into_itself = run(
        dir.path(),
        &["trim", "w.hrxt", "-o", "w.hrxt", "--submissions", "1..2"],
    );
    assert_error(&into_itself, "into itself");
    let missing = run(
        dir.path(),
        &["trim", "gone.hrxt", "-o", "x.hrxt", "--submissions", "1..2"],
    );
    assert_error(&missing, "gone.hrxt");
    assert!(!dir.path().join("x.hrxt").exists());
}

/// The hazards workload reads, in its later submissions, what earlier ones wrote: a trim
/// of them needs a snapshot. Recorded with contents (`HRX_TRACE_CONTENTS=1` and every
/// written range digested), the trim replays exactly; without, it says in one line that
/// it cannot, and its replay says so too.
#[test]
fn a_trim_that_needs_earlier_contents_has_them_or_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let record = |name: &str, contents: bool| {
        let mut command = crate::util::hrx_trace(dir.path());
        command.args(["record", "--workload", "hazards", "-o", name]);
        if contents {
            command
                .env("HRX_TRACE_CONTENTS", "1")
                .env("HRX_TRACE_DIGESTS", "all");
        }
        assert_eq!(code(&command.output().unwrap()), 0);
    };
    record("with.hrxt", true);
    record("without.hrxt", false);
    let trim = run(
        dir.path(),
        &["trim", "with.hrxt", "-o", "w.hrxt", "--submissions", "3.."],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    assert_eq!(stderr(&trim), "");
    let summary = stdout(&trim);
    let snapshot = field(&summary, "runtime");
    assert!(!snapshot.contains("snapshot of 0 ranges"), "{snapshot}");
    let replay = run(dir.path(), &["replay", "w.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stdout(&replay));

    let trim = run(
        dir.path(),
        &[
            "trim",
            "without.hrxt",
            "-o",
            "wo.hrxt",
            "--submissions",
            "3..",
        ],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    let err = stderr(&trim);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "warning: wo.hrxt: not replayable exactly: runtime 1 reads 2 KiB before submission 3"
        ),
        "{err}"
    );
    let info = stdout(&run(dir.path(), &["info", "wo.hrxt"]));
    assert!(
        info.contains("not held by the source: not replayable exactly"),
        "{info}"
    );
    let replay = run(dir.path(), &["replay", "wo.hrxt"]);
    assert!(
        stdout(&replay).contains("cannot be exact"),
        "{}",
        stdout(&replay)
    );
}
