//! Ranges and trimming: a trace of part of a run (recorded with a capture range, or trimmed
//! from a whole trace) replays on its own and reproduces the whole run's outputs for those
//! submissions.

use crate::util::{assert_error, code, field, photo, record_regions, run, stderr, stdout};
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
            // A digest is a hex string in JSON (`hex64`).
            let digest = o["replayed"].as_str().unwrap();
            (
                (n("submission"), n("buffer"), n("start"), n("end")),
                u64::from_str_radix(digest.trim_start_matches("0x"), 16).unwrap(),
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
        assert!(field(&info, "capture").starts_with("trimmed"), "{info}");
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

/// A range past the trace's end names what the trace holds as `--submissions` would select
/// it: the hazards workload's 4 submissions are `1..=4` (it said `1..5`, which reads as 5
/// submissions).
#[test]
fn a_range_past_the_end_names_the_submissions_held_inclusively() {
    let dir = tempfile::tempdir().unwrap();
    crate::util::record_hazards(dir.path(), "h.hrxt");
    let out = run(
        dir.path(),
        &[
            "trim",
            "h.hrxt",
            "-o",
            "out.hrxt",
            "--submissions",
            "20..30",
        ],
    );
    assert_error(
        &out,
        "selects no submission: the trace holds submissions 1..=4 (",
    );
    assert!(!dir.path().join("out.hrxt").exists());
    // And that range trims the whole trace.
    let out = run(
        dir.path(),
        &["trim", "h.hrxt", "-o", "all.hrxt", "--submissions", "1..=4"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `trim -q` prints nothing on success (it printed its two summary lines), and still its
/// errors.
#[test]
fn a_quiet_trim_prints_nothing_but_errors() {
    let dir = tempfile::tempdir().unwrap();
    crate::util::record_hazards(dir.path(), "h.hrxt");
    let out = run(
        dir.path(),
        &[
            "trim",
            "-q",
            "h.hrxt",
            "-o",
            "t.hrxt",
            "--submissions",
            "1..3",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "");
    assert!(dir.path().join("t.hrxt").exists());
    let loud = run(
        dir.path(),
        &["trim", "h.hrxt", "-o", "t2.hrxt", "--submissions", "1..3"],
    );
    assert_eq!(stdout(&loud).lines().count(), 2, "{}", stdout(&loud));
    let bad = run(
        dir.path(),
        &[
            "trim",
            "-q",
            "h.hrxt",
            "-o",
            "u.hrxt",
            "--submissions",
            "20..30",
        ],
    );
    assert_error(&bad, "selects no submission");
}

#[test]
fn trim_refuses_bad_ranges_with_one_line() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "w.hrxt", &photo, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
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

/// The `ranged` example.
fn ranged() -> std::path::PathBuf {
    crate::util::example("ranged")
}

/// `record [OPTIONS] -o NAME -- ranged ARGS`.
fn record_ranged(dir: &Path, name: &str, options: &[&str], args: &[&str]) {
    let program = ranged();
    let mut all = vec!["record", "-o", name];
    all.extend_from_slice(options);
    all.push("--");
    all.push(program.to_str().unwrap());
    all.extend_from_slice(args);
    let out = run(dir, &all);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// A range opened mid-run, by the program's `hrx::trace::start()`/`stop()` or by
/// `--capture-range submissions:A..B`, replays on its own and gives the whole run's outputs
/// for its submissions: it carries the buffer written before it (a snapshot), without which
/// the copies it replays would read zeros.
#[test]
fn a_range_recorded_mid_run_replays_and_matches_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    record_ranged(dir.path(), "whole.hrxt", &[], &["8"]);
    let whole = replayed_outputs(dir.path(), "whole.hrxt");
    assert_eq!(whole.len(), 8);
    // (trace, record options, program arguments, submissions kept, info's range line)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [u64], &'a str);
    let cases: [Case; 4] = [
        (
            "api.hrxt",
            &["--capture-range", "api"],
            &["8", "3", "6"],
            &[3, 4, 5],
            "submissions 3..6 of a recording (api)",
        ),
        (
            "subs.hrxt",
            &["--capture-range", "submissions:3..6"],
            &["8"],
            &[3, 4, 5],
            "submissions 3..6 of a recording (submissions:3..6)",
        ),
        // Without a range everything is recorded until the program's stop() (before 6).
        (
            "stop.hrxt",
            &[],
            &["8", "3", "6"],
            &[1, 2, 3, 4, 5],
            "submissions 1..6 of a recording (api)",
        ),
        // Paused by stop() before 3 and resumed by start() before 6: the write made after
        // stop() is recorded (the range closes at the next submit), the one made after
        // start() is not, and the resumed range's snapshot holds it. Replay applied that
        // snapshot before everything and the pause's stale write over it: submission 6
        // replayed other bytes (break-it F22).
        (
            "pause.hrxt",
            &[],
            &["8", "6", "3"],
            &[1, 2, 6, 7, 8],
            "submissions 1..3 of a recording (api)",
        ),
    ];
    for (name, options, args, kept, range) in cases {
        record_ranged(dir.path(), name, options, args);
        let info = stdout(&run(dir.path(), &["info", name]));
        assert!(!info.contains("warning"), "{name}: {info}");
        assert_eq!(field(&info, "range"), range, "{name}");
        // A range is not the whole run, even when the program ran to its end.
        assert!(
            field(&info, "capture").starts_with("a range"),
            "{name}: {info}"
        );
        let ranged = replayed_outputs(dir.path(), name);
        let expected: BTreeMap<_, _> = whole
            .iter()
            .filter(|((sub, ..), _)| kept.contains(sub))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(ranged, expected, "{name}");
    }
}

#[test]
fn a_pipeline_range_recording_replays_and_matches_the_whole_replay() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "whole.hrxt", &photo, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let whole = replayed_outputs(dir.path(), "whole.hrxt");
    let out = record(
        dir.path(),
        "r.hrxt",
        &photo,
        &["--capture-range", "submissions:4..7"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        field(&stdout(&out), "range"),
        "submissions 4..7 of a recording (submissions:4..7)"
    );
    let ranged = replayed_outputs(dir.path(), "r.hrxt");
    let expected: BTreeMap<_, _> = whole
        .iter()
        .filter(|((sub, ..), _)| (4..7).contains(sub))
        .map(|(k, v)| (*k, *v))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(ranged, expected);
    // A range that never opens: a trace of the definitions, and a warning that `-q` keeps
    // (it was a note, silent with `-q`: a trace without a submission lacks what was asked).
    let out = record(
        dir.path(),
        "none.hrxt",
        &photo,
        &["-q", "--capture-range", "submissions:100.."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("warning: none.hrxt: the capture range submissions:100.. kept no submission"),
        "{}",
        stderr(&out)
    );
    // It holds none of the run's submissions, which every reader says: `info` read it as the
    // whole run and `diff` called it a regression against the whole run ("it did none of the
    // work"), as a trace with no range record.
    let info = stdout(&run(dir.path(), &["info", "none.hrxt"]));
    assert!(
        field(&info, "range")
            .starts_with("no submission of a recording (submissions:100.. never opened"),
        "{info}"
    );
    let diff = run(dir.path(), &["diff", "whole.hrxt", "none.hrxt"]);
    assert_eq!(code(&diff), 2, "{}{}", stdout(&diff), stderr(&diff));
    assert!(
        stderr(&diff).contains("the traces hold no submission in common (base whole, new none)"),
        "{}",
        stderr(&diff)
    );
}

#[test]
fn record_refuses_bad_ranges_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["--capture-range", "submissions:9..3"],
            "start must be below the end",
        ),
        (
            vec!["--capture-range", "frames:1..2"],
            "not a capture range",
        ),
        (
            vec!["--delay", "soon"],
            "--delay: \"soon\" is not a duration",
        ),
        (vec!["--duration", "0"], "--duration: must be more than 0"),
        // A built-in workload never opens an `api` range: it would keep nothing.
        (
            vec!["--capture-range", "api"],
            "--capture-range api: the built-in workloads never call hrx::trace::start()",
        ),
    ] {
        let mut all = vec!["record", "--workload", "hazards", "-o", "h.hrxt"];
        all.extend(args);
        assert_error(&run(dir.path(), &all), says);
        assert!(!dir.path().join("h.hrxt").exists());
    }
    // The same range from the environment (the runtime reads it when no option gives one).
    let mut command = crate::util::hrx_trace(dir.path());
    command
        .args(["record", "--workload", "hazards", "-o", "h.hrxt"])
        .env("HRX_TRACE_RANGE", "api");
    assert_error(
        &command.output().unwrap(),
        "HRX_TRACE_RANGE=api: the built-in workloads never call hrx::trace::start()",
    );
    assert!(!dir.path().join("h.hrxt").exists());
}

/// The hazards workload reads, in its later submissions, what earlier ones wrote: a trim
/// of them needs a snapshot. Recorded with contents (`HRX_TRACE_CONTENTS=1` and every
/// written range digested), the trim replays exactly; without, it says in one line that
/// it cannot, and its replay says so too and excludes the output that depends on them.
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
    // `info` shows the snapshot, as the README says: its buffer ranges and bytes.
    let info = stdout(&run(dir.path(), &["info", "w.hrxt"]));
    assert!(
        info.lines().any(|l| l.starts_with("range ")
            && l.contains("state snapshot: ")
            && (l.contains(" buffer ranges, ") || l.contains(" 1 buffer range, "))
            && !l.contains("not held")),
        "{info}"
    );
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
    // What the source lacks is said beside what the snapshot holds ("(0 B)" alone read as
    // nothing needed).
    assert!(
        field(&stdout(&trim), "runtime").contains(" not held by the source)"),
        "{}",
        stdout(&trim)
    );
    let err = stderr(&trim);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "warning: wo.hrxt: not replayable exactly: runtime 1 reads 2 KiB before submission 3"
        ) && err.contains("(buffer 1; its replay excludes the outputs that depend on them")
            && err.contains("record with HRX_TRACE_CONTENTS=1 HRX_TRACE_DIGESTS=all"),
        "{err}"
    );
    let info = stdout(&run(dir.path(), &["info", "wo.hrxt"]));
    assert!(
        info.contains("not held by the source: not replayable exactly"),
        "{info}"
    );
    let replay = run(dir.path(), &["replay", "wo.hrxt"]);
    // Said first, before the verdict (it was the last note), and in the JSON.
    assert!(
        stdout(&replay).starts_with("cannot be exact: the range reads 2048 bytes"),
        "{}",
        stdout(&replay)
    );
    // The output that reads those bytes is excluded with the reason, not a REGRESSION.
    assert_eq!(code(&replay), 0, "{}", stdout(&replay));
    assert!(
        stdout(&replay).contains("0 divergences") && stdout(&replay).contains("1 excluded"),
        "{}",
        stdout(&replay)
    );
    // Which one, and why, in the text report too.
    assert!(
        stdout(&replay)
            .lines()
            .any(|l| l == "excluded from the comparison (1):")
            && stdout(&replay)
                .lines()
                .any(|l| l.starts_with("  submission 4 region ")
                    && l.contains("whose contents at the range's start the trace lacks")),
        "{}",
        stdout(&replay)
    );
    let json = run(dir.path(), &["replay", "wo.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["trace"]["range_unknown_bytes"], 2048, "{report}");
}

/// `--capture-range time:200ms..400ms`, the same range as `--delay 200ms --duration 200ms`,
/// and `--delay 200ms` alone, around `ranged` pausing 20 ms before each of its 30
/// submissions. Structural, whatever the machine's speed: the trace's [`TraceRange`]s say
/// which submissions it holds, and it holds exactly those, none submitted before the range's
/// start; the range opened at or after 200 ms and closed at or after 400 ms of the session;
/// submission 20 and later (submitted 400 ms or more after the runtime started, by the
/// pauses alone) are outside a range that ends at 400 ms; the range replays with the whole
/// run's outputs for its submissions.
#[test]
fn a_time_range_holds_exactly_the_submissions_its_trace_range_names() {
    use hrx_capture::Record;
    const MS: u64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    record_ranged(dir.path(), "whole.hrxt", &[], &["30"]);
    let whole = replayed_outputs(dir.path(), "whole.hrxt");
    assert_eq!(whole.len(), 30);
    type Case<'a> = (&'a str, &'a [&'a str], Option<u64>);
    let cases: [Case; 3] = [
        (
            "time.hrxt",
            &["--capture-range", "time:200ms..400ms"],
            Some(400),
        ),
        (
            "delay.hrxt",
            &["--delay", "200ms", "--duration", "200ms"],
            Some(400),
        ),
        ("open.hrxt", &["--delay", "200ms"], None),
    ];
    for (name, options, end_ms) in cases {
        let program = ranged();
        let mut args = vec!["record", "-o", name];
        args.extend_from_slice(options);
        args.extend(["--", program.to_str().unwrap(), "30"]);
        let out = crate::util::hrx_trace(dir.path())
            .args(&args)
            .env("RANGED_PAUSE_MS", "20")
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{name}: {}{}", stdout(&out), stderr(&out));
        let trace = hrx_capture::read_all(dir.path().join(name)).unwrap();
        let ranges: Vec<&hrx_capture::schema::TraceRange> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::TraceRange(t) => Some(t),
                _ => None,
            })
            .collect();
        let submits: Vec<(u64, u64)> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Submit(s) => Some((s.submission.0, s.time_ns)),
                _ => None,
            })
            .collect();
        if let [never] = ranges[..]
            && never.end == Some(never.start)
        {
            // No submit fell inside (a stall longer than the range): none recorded, said, and
            // an empty range recorded at the run's end.
            assert!(submits.is_empty(), "{name}: {submits:?}");
            assert!(stderr(&out).contains("kept no submission"), "{name}");
            continue;
        }
        let trigger = match end_ms {
            Some(_) => "time:0.2s..0.4s",
            None => "time:0.2s..",
        };
        let open = ranges[0];
        assert_eq!((open.end, open.trigger.as_str()), (None, trigger), "{name}");
        assert!(
            open.time_ns >= 200 * MS,
            "{name}: opened at {}",
            open.time_ns
        );
        // Closed at a submit past its end, or at the runtime's end (after 30).
        assert_eq!(ranges.len(), 2, "{name}: {ranges:?}");
        let close = ranges[1];
        assert_eq!(close.start, open.start, "{name}");
        let (a, b) = (open.start.0, close.end.expect("closed").0);
        match end_ms {
            Some(end_ms) => {
                assert!(
                    close.time_ns >= end_ms * MS,
                    "{name}: closed at {}",
                    close.time_ns
                );
                assert!(
                    b <= 20,
                    "{name}: {a}..{b} holds a submission made after 400 ms"
                );
            }
            None => assert_eq!(b, 31, "{name}"),
        }
        let kept: Vec<u64> = submits.iter().map(|s| s.0).collect();
        assert_eq!(
            kept,
            (a..b).collect::<Vec<_>>(),
            "{name}: exactly the range"
        );
        assert!(
            submits.iter().all(|&(_, t)| t >= open.time_ns),
            "{name}: nothing submitted before the range opened: {submits:?}"
        );
        let info = stdout(&run(dir.path(), &["info", name]));
        assert_eq!(
            field(&info, "range"),
            format!("submissions {a}..{b} of a recording ({trigger})"),
            "{name}"
        );
        let expected: BTreeMap<_, _> = whole
            .iter()
            .filter(|((sub, ..), _)| (a..b).contains(sub))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(replayed_outputs(dir.path(), name), expected, "{name}");
    }
}

/// `info` of a trimmed trace gives the kept range's time span, from its first submit or
/// host write to its end, not the whole recording's (the trim keeps every definition at its
/// time, from the recording's start), and says what it was trimmed from.
#[test]
fn info_of_a_trim_gives_the_kept_range_time_span() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "whole.hrxt", &photo, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let trim = run(
        dir.path(),
        &["trim", "whole.hrxt", "-o", "t.hrxt", "--submissions", "6.."],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    let dump = run(dir.path(), &["dump", "--json", "t.hrxt"]);
    let first_ns = stdout(&dump)
        .lines()
        .filter_map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let body = record.get("Submit").or_else(|| record.get("HostWrite"))?;
            body["time_ns"].as_u64()
        })
        .min()
        .unwrap();
    let info = run(dir.path(), &["info", "t.hrxt"]);
    let text = stdout(&info);
    let span = field(&text, "time span");
    let start = hrx_analysis::units::duration(first_ns);
    assert!(
        span.starts_with(&format!("{start} .. ")) && span.contains("the range"),
        "{span} (first submit at {start})"
    );
    assert!(
        field(&text, "range").starts_with("trimmed from whole.hrxt, submissions 6..9"),
        "{text}"
    );
}

/// A trim of the middle of a recording ends its time span where its own work ends, not at
/// the session's end where the buffers and runtime it keeps were let go (it said 38.9 ms ..
/// 60.6 ms for 4 submissions of 40 that took 6 ms).
#[test]
fn info_of_a_trim_of_the_middle_ends_the_span_with_the_range() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record(dir.path(), "whole.hrxt", &photo, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let trim = run(
        dir.path(),
        &[
            "trim",
            "whole.hrxt",
            "-o",
            "t.hrxt",
            "--submissions",
            "3..5",
        ],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    // Host times by record kind and submission, from `dump --json`.
    let times = |name: &str, kind: &str| -> Vec<(u64, u64)> {
        stdout(&run(dir.path(), &["dump", "--json", name]))
            .lines()
            .filter_map(|line| {
                let record: serde_json::Value = serde_json::from_str(line).unwrap();
                let body = record.get(kind)?;
                Some((body["submission"].as_u64()?, body["time_ns"].as_u64()?))
            })
            .collect()
    };
    let last_done = times("t.hrxt", "SubmissionDone")
        .into_iter()
        .map(|(_, t)| t)
        .max()
        .unwrap();
    // The source's last outcome (of its eighth frame, which the trim does not hold).
    let source_last_done = times("whole.hrxt", "SubmissionDone")
        .into_iter()
        .map(|(_, t)| t)
        .max()
        .unwrap();
    let text = stdout(&run(dir.path(), &["info", "t.hrxt"]));
    let span = field(&text, "time span");
    let end = span
        .split(" .. ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .unwrap();
    let duration = hrx_analysis::units::duration;
    let json = stdout(&run(dir.path(), &["info", "--json", "t.hrxt"]));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let end_ns = json["time_span"]["last_activity_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(end, duration(end_ns), "{span}");
    assert!(
        last_done <= end_ns && end_ns < source_last_done,
        "{span}: the range's last outcome at {}, the source's at {}",
        duration(last_done),
        duration(source_last_done)
    );
}

/// A trim that starts at its source's first submission, of a range recording and of a trim
/// (by submissions and by time): no submission precedes the range there to derive its
/// state at, so the source's snapshot (A's pattern, written before the range opened) is
/// the state, and is kept. It was dropped ("snapshot of 0 ranges", no warning): the copies
/// replayed other bytes and the replay was a regression, 0 of 2 outputs matching.
#[test]
fn a_trim_from_the_first_submission_of_a_range_or_a_trim_keeps_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    record_ranged(dir.path(), "whole.hrxt", &[], &["12"]);
    let whole = replayed_outputs(dir.path(), "whole.hrxt");
    record_ranged(
        dir.path(),
        "r.hrxt",
        &["--capture-range", "submissions:5..10"],
        &["12"],
    );
    // (source, output, selection, submissions kept)
    let cases: [(&str, &str, [&str; 2], std::ops::Range<u64>); 5] = [
        ("r.hrxt", "q.hrxt", ["--submissions", "5..7"], 5..7),
        ("r.hrxt", "late.hrxt", ["--submissions", "6..8"], 6..8),
        ("q.hrxt", "qq.hrxt", ["--submissions", "5..6"], 5..6),
        ("q.hrxt", "qt.hrxt", ["--time", "0..1000s"], 5..7),
        ("qq.hrxt", "qqq.hrxt", ["--submissions", "5.."], 5..6),
    ];
    for (from, to, selection, kept) in cases {
        let trim = run(
            dir.path(),
            &["trim", from, "-o", to, selection[0], selection[1]],
        );
        assert_eq!(code(&trim), 0, "{to}: {}", stderr(&trim));
        assert_eq!(stderr(&trim), "", "{to}");
        let printed = stdout(&trim);
        let summary = field(&printed, "runtime");
        assert!(
            summary.starts_with(&format!("1: submissions {}..{}", kept.start, kept.end))
                && !summary.contains("snapshot of 0 ranges"),
            "{to}: {summary}"
        );
        let trimmed = replayed_outputs(dir.path(), to);
        let expected: BTreeMap<_, _> = whole
            .iter()
            .filter(|((sub, ..), _)| kept.contains(sub))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(expected.len(), kept.clone().count(), "{to}");
        assert_eq!(trimmed, expected, "{to}");
    }
}

/// `trim -o` naming a trace that a recorder is writing is refused, as `record -o` refuses
/// it (the same check of the recorder's file lock): it renamed the trim over the file, and
/// the recording went on into an unlinked file and was lost. A follower's shared lock is
/// not a recorder's.
#[test]
fn trim_refuses_an_output_a_recorder_is_writing() {
    use hrx_capture::{Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    crate::util::record_hazards(dir.path(), "p.hrxt");
    let live = dir.path().join("live.hrxt");
    let recorder = Recorder::create(&live, RecorderOptions::default()).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&live);
    let trim = run(
        dir.path(),
        &["trim", "p.hrxt", "-o", "live.hrxt", "--submissions", "1..2"],
    );
    assert_error(
        &trim,
        "cannot write the trimmed trace to live.hrxt: another recorder is writing it",
    );
    assert_eq!(inode(&live), before, "the recorder's file was replaced");
    let partials = crate::util::partial_files(dir.path());
    assert!(partials.is_empty(), "{partials:?}");
    recorder.close().unwrap();
    // The recording is whole, and once it is closed the file may be trimmed into.
    let info = stdout(&run(dir.path(), &["info", "live.hrxt"]));
    assert!(field(&info, "closed").starts_with("cleanly"), "{info}");
    // A follower (`view --follow`) probing the file holds a shared lock for a moment: it
    // is no writer, and the trim is not refused for it.
    let probe = std::fs::File::open(&live).unwrap();
    probe.lock_shared().unwrap();
    let trim = run(
        dir.path(),
        &["trim", "p.hrxt", "-o", "live.hrxt", "--submissions", "1..2"],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    drop(probe);
}

/// The trim's summary line: (records written, kept from the source, read, the trim's own).
fn records_line(summary: &str, name: &str) -> (u64, u64, u64, u64) {
    let line = field(summary, &format!("{name}:"));
    // "N records, SIZE (K of the M read, A of the trim's own: 1 range, 2 snapshot records,
    // 1 end)": what it names adds up to A (it said "2 ...: range, snapshot, end").
    let (head, named) = line.split_once(" of the trim's own: ").expect(line);
    let numbers: Vec<u64> = head
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .filter_map(|w| w.parse().ok())
        .collect();
    let named: u64 = named
        .trim_end_matches(')')
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse::<u64>().expect(line))
        .sum();
    match numbers[..] {
        [out, .., kept, read, own] if named == own => (out, kept, read, own),
        _ => panic!("{line}"),
    }
}

/// Submissions the trace in `bytes` holds, and how it was read.
fn read_bytes(bytes: &[u8]) -> Option<(usize, hrx_capture::Recovery)> {
    let trace = hrx_capture::Trace::from_bytes(bytes).ok()?;
    let submits = trace
        .records
        .iter()
        .filter(|r| matches!(r, hrx_capture::Record::Submit(_)))
        .count();
    Some((submits, trace.recovery))
}

/// `trim` of a cut-short or damaged trace warns as every verb reading one does, and the
/// trimmed trace (closed by `trim`) says what it was cut from, as does a trim of that trim.
/// It read as a whole recording, "closed cleanly", without a warning: a trim of a damaged
/// trace then failed its replay ("blob ... is not in the trace") with nothing to say why.
/// The summary tells the records it kept from those it adds (it printed "98 of 96 records").
#[test]
fn a_trim_of_a_cut_short_or_damaged_trace_warns_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    record_ranged(dir.path(), "w.hrxt", &[], &["12"]);
    let bytes = std::fs::read(dir.path().join("w.hrxt")).unwrap();
    // The longest prefix that was never closed and still holds a submission: cut short.
    let cut = (1..bytes.len())
        .rev()
        .find(|&len| read_bytes(&bytes[..len]).is_some_and(|(n, r)| n > 0 && !r.closed))
        .expect("a prefix with a submission");
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..cut]).unwrap();
    // One byte flipped inside a block of records: a damaged block skipped, submissions kept.
    let flipped = (bytes.len() / 4..bytes.len())
        .map(|at| {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xff;
            flipped
        })
        .find(|f| read_bytes(f).is_some_and(|(n, r)| n > 0 && r.closed && r.skipped_blocks > 0))
        .expect("a byte whose damage skips a block");
    std::fs::write(dir.path().join("flip.hrxt"), flipped).unwrap();
    for (from, to, why) in [
        ("cut.hrxt", "t.hrxt", "cut short, never closed"),
        ("t.hrxt", "tt.hrxt", "cut short, never closed"),
        (
            "flip.hrxt",
            "f.hrxt",
            "closed, but damaged parts were skipped",
        ),
    ] {
        let trim = run(
            dir.path(),
            &["trim", from, "-o", to, "--submissions", "1.."],
        );
        assert_eq!(code(&trim), 0, "{to}: {}", stderr(&trim));
        let err = stderr(&trim);
        if from == "t.hrxt" {
            // Closed cleanly, but a trim of what was not whole: said as such.
            assert_eq!(
                err,
                "warning: t.hrxt: closed cleanly, but trimmed from an incomplete recording; the \
                 trim holds only what was recovered, and says so\n",
                "{to}"
            );
        } else {
            assert!(
                !err.is_empty()
                    && err
                        .lines()
                        .all(|l| l.starts_with(&format!("warning: {from}: "))),
                "{to}: {err}"
            );
            assert!(
                err.contains("the trim holds only what was recovered"),
                "{to}: {err}"
            );
        }
        let (out, kept, read, own) = records_line(&stdout(&trim), to);
        assert!(kept <= read && kept + own == out, "{to}: {}", stdout(&trim));
        let info = stdout(&run(dir.path(), &["info", to]));
        assert_eq!(
            field(&info, "capture"),
            format!("trimmed from an incomplete recording ({why}; see range)"),
            "{info}"
        );
        assert!(
            field(&info, "range").starts_with(&format!(
                "trimmed from {from} (incomplete: {why}), submissions 1.."
            )),
            "{info}"
        );
    }
    // A whole source: nothing said.
    let trim = run(
        dir.path(),
        &["trim", "w.hrxt", "-o", "w1.hrxt", "--submissions", "1.."],
    );
    assert_eq!(stderr(&trim), "");
    let info = stdout(&run(dir.path(), &["info", "w1.hrxt"]));
    assert!(!info.contains("incomplete"), "{info}");
}

/// `trim --submissions A..B` reaching past the trace's last submission says it kept less
/// than asked (it shrank the range and said nothing: a fresh-user pass); a range within
/// the trace says nothing of it.
#[test]
fn a_trim_past_the_last_submission_says_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    crate::util::record_hazards(dir.path(), "h.hrxt");
    let past = run(
        dir.path(),
        &[
            "trim",
            "h.hrxt",
            "-o",
            "past.hrxt",
            "--submissions",
            "1..300",
        ],
    );
    assert_eq!(code(&past), 0, "{}", stderr(&past));
    let said = stderr(&past);
    assert!(
        said.contains(
            "h.hrxt: --submissions 1..300 reaches past the submissions it holds: kept up to 4"
        ),
        "{said}"
    );
    let within = run(
        dir.path(),
        &[
            "trim",
            "h.hrxt",
            "-o",
            "within.hrxt",
            "--submissions",
            "1..3",
        ],
    );
    assert!(!stderr(&within).contains("reaches past"));
    // Past its first submission too: a trim of 2..4 trimmed again from 1 kept from 2, which
    // was said of neither end ("kept up to 3" read as 1..=3, or nothing).
    let trim = |from: &str, to: &str, range: &str| {
        let out = run(
            dir.path(),
            &["trim", from, "-o", to, "--submissions", range],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stderr(&out)
    };
    trim("h.hrxt", "two.hrxt", "2..4");
    let said = trim("two.hrxt", "again.hrxt", "1..3");
    assert!(
        said.contains(
            "two.hrxt: --submissions 1..3 reaches past the submissions it holds: kept 2..=2"
        ),
        "{said}"
    );
    let said = trim("two.hrxt", "again.hrxt", "1..9");
    assert!(said.contains("holds: kept 2..=3 "), "{said}");
    assert!(!trim("two.hrxt", "again.hrxt", "..3").contains("reaches past"));
    assert!(!trim("two.hrxt", "again.hrxt", "2..4").contains("reaches past"));
}

/// A capture range of more than a replay chunk (2,048 submissions) is said once, closed: the
/// range's end is recorded at the run's end, so the first chunk read it open and the last
/// closed, and the replay said both ("submissions 2..(to the end)" and "submissions
/// 2..2100": a break-it pass).
#[test]
fn a_capture_range_replayed_in_chunks_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = crate::util::hrx_trace(dir.path())
        .args(["record", "-q", "-o", "r.hrxt"])
        .args(["--capture-range", "submissions:2..2100", "--"])
        .arg(crate::util::example("host_visible"))
        .args(["2200", "1"])
        .output()
        .unwrap();
    assert_eq!(code(&recorded), 0, "{}", stderr(&recorded));
    let replay = run(dir.path(), &["replay", "r.hrxt"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
    let text = stdout(&replay);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("the trace is a range"))
        .collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(
        said[0].contains("submissions 2..2100 of a recording (submissions:2..2100)"),
        "{text}"
    );
}

/// A whole recording whose first submissions read bytes nothing traced wrote keeps them (a
/// state snapshot), said on a `snapshot` line by `record` and `info`, not a `range` line,
/// which reads as a part of the run (a fresh user's pass, session 59).
#[test]
fn a_whole_recordings_snapshot_is_no_range() {
    let dir = tempfile::tempdir().unwrap();
    let out = record_regions(dir.path(), "r.hrxt", &["20", "2", "4"], false);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let info = stdout(&run(dir.path(), &["info", "r.hrxt"]));
    assert!(info.contains("\ncapture      whole"), "{info}");
    for text in [stdout(&out), info] {
        assert!(
            text.lines().any(|l| l.starts_with("snapshot ")
                && l.ends_with(": read before anything traced wrote them, kept for a replay")),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("range ")), "{text}");
    }
}
