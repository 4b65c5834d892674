//! Every verb says how many records of which kinds a trace lost while recording.
//!
//! A lossy-mode recording loses records only when its writer falls behind, which depends on
//! the machine's load; so the trace here is a real recording rewritten the way a lossy
//! recorder leaves it: two `RegionTiming` records missing and a `RecordsLost` saying so. The
//! recorder's own counting in lossy mode is tested in `hrx-capture` (a stuck writer).

use crate::util::{code, field, hrx_trace, record_hazards, run, stderr, stdout};
use hrx_capture::schema::{LostKind, RecordsLost};
use hrx_capture::{Record, Recorder, RecorderOptions, TraceMode, read_all};
use std::path::Path;

/// Writes `dir/lossy.hrxt`: `dir/base.hrxt` without its last two region timings.
fn lossy_copy(dir: &Path) {
    let trace = read_all(dir.join("base.hrxt")).unwrap();
    let timings = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::RegionTiming(_)))
        .count();
    assert!(timings > 2);
    let options = RecorderOptions {
        mode: TraceMode::Lossy,
        // The copy itself must lose nothing: on a loaded machine a burst of records can
        // fill the ring before the writer drains it, and the default 10 ms wait drops.
        full_buffer_wait: std::time::Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(dir.join("lossy.hrxt"), options).unwrap();
    let mut seen = 0;
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) => continue,
            Record::RegionTiming(_) => {
                seen += 1;
                if seen > timings - 2 {
                    continue;
                }
            }
            _ => {}
        }
        recorder.record(record);
    }
    recorder.record(&Record::RecordsLost(RecordsLost {
        time_ns: recorder.now_ns(),
        lossy: true,
        total: 2,
        by_kind: vec![LostKind {
            kind: "RegionTiming".into(),
            records: 2,
        }],
    }));
    recorder.close().unwrap();
}

#[test]
fn every_verb_reports_lost_records() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    lossy_copy(dir.path());
    let said = "2 records lost (RegionTiming 2)";

    let info = run(dir.path(), &["info", "lossy.hrxt"]);
    assert!(stdout(&info).contains(said), "{}", stdout(&info));
    // On standard error too, as every verb says it, and in the JSON's warnings.
    assert!(stderr(&info).contains(said), "{}", stderr(&info));
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["info", "--json", "lossy.hrxt"]))).unwrap();
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().contains(said)),
        "{warnings:?}"
    );

    let stats = run(dir.path(), &["stats", "lossy.hrxt"]);
    assert!(
        stdout(&stats).contains("2 records lost while recording (RegionTiming 2)"),
        "{}",
        stdout(&stats)
    );
    assert!(stderr(&stats).contains(said), "{}", stderr(&stats));
    let json: serde_json::Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["stats", "--json", "lossy.hrxt"],
    )))
    .unwrap();
    assert_eq!(json["complete"], false);
    assert_eq!(json["lost"]["records"], 2);
    assert_eq!(json["lost"]["by_kind"]["RegionTiming"], 2);

    let export = run(
        dir.path(),
        &[
            "export",
            "lossy.hrxt",
            "--format",
            "chrome",
            "-o",
            "out.json",
        ],
    );
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    assert!(stderr(&export).contains(said), "{}", stderr(&export));
    // The summary names the mark among the recorder's (it said "9 recorder marks" alone).
    assert!(
        stdout(&export).contains("recorder marks (1 of them records lost"),
        "{}",
        stdout(&export)
    );
    let exported = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert!(exported.contains("\"records lost\""), "no metadata event");

    let diff = run(dir.path(), &["diff", "base.hrxt", "lossy.hrxt"]);
    // What the lossy side lacks is not a difference, as the verdict says (the line read
    // "what it lacks reads as changed" above a `same as far as both traces go`).
    assert!(
        stdout(&diff).contains(
            "new trace lost 2 records while recording: what it lacks of the other's is said \
             as `lost by new's recorder`, not a difference"
        ),
        "{}",
        stdout(&diff)
    );
    assert!(
        field(&stdout(&diff), "verdict").starts_with("same as far as both traces go"),
        "{}",
        stdout(&diff)
    );
    let diff_json: serde_json::Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["diff", "--json", "base.hrxt", "lossy.hrxt"],
    )))
    .unwrap();
    assert_eq!(diff_json["records_lost"]["new"], 2);
    assert_eq!(diff_json["records_lost"]["base"], 0);

    // Replay says it first of all.
    let replay = run(dir.path(), &["replay", "lossy.hrxt"]);
    let first = stdout(&replay)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        first,
        "cannot be exact: 2 records lost while recording (RegionTiming 2)",
        "{}{}",
        stdout(&replay),
        stderr(&replay)
    );
    // And on standard error, as every verb warns of it.
    assert!(stderr(&replay).contains(said), "{}", stderr(&replay));
    // Its note says what a loss of each kind does, as the README's "Incomplete traces" does
    // (it said lost submissions "show up as divergences", where a lost `Submit` is refused).
    assert!(
        stdout(&replay).contains(
            "what they said is not compared (a lost digest leaves its output uncompared, a \
             lost timing is a sample fewer; a lost `Submit`, host write or definition is \
             refused before replaying)"
        ),
        "{}",
        stdout(&replay)
    );
    // Not as an "incomplete" trace whose every figure reads complete (the file was read whole).
    assert!(
        !stdout(&replay).contains("the trace is incomplete"),
        "{}",
        stdout(&replay)
    );

    let dump = run(dir.path(), &["dump", "lossy.hrxt"]);
    assert!(stderr(&dump).contains(said), "{}", stderr(&dump));

    // The untouched recording says nothing of losses.
    let info = stdout(&run(dir.path(), &["info", "base.hrxt"]));
    assert!(!info.contains("lost"), "{info}");
}

/// The index of the middle `Submit` of `records` (of at least 3), whose loss leaves a gap
/// in the submission numbers.
fn middle_submit(records: &[Record]) -> usize {
    let submits: Vec<usize> = (0..records.len())
        .filter(|&i| matches!(records[i], Record::Submit(_)))
        .collect();
    assert!(submits.len() >= 3, "{}", submits.len());
    submits[submits.len() / 2]
}

/// A recording without a `Submit` (its submission's other records kept) and without a
/// record of losses, as a damaged block leaves it: `replay` refuses naming the trace as
/// incomplete first (it named only the inconsistency), as `info` warns of it.
#[test]
fn a_missing_submit_in_a_damaged_trace_is_named_as_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let gone = middle_submit(&trace.records);
    let recorder =
        Recorder::create(dir.path().join("gap.hrxt"), RecorderOptions::default()).unwrap();
    for (i, record) in trace.records.iter().enumerate() {
        if i == gone || matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            continue;
        }
        recorder.record(record);
    }
    recorder.close().unwrap();

    let replay = run(dir.path(), &["replay", "gap.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stdout(&replay));
    let err = stderr(&replay);
    assert!(
        err.starts_with(
            "error: gap.hrxt: cannot replay: the trace is incomplete (closed, but damaged parts \
             were skipped, 1 submission missing), and replay needs what it lacks: "
        ),
        "{err}"
    );
    assert!(
        err.contains("\nhint: `hrx-trace info gap.hrxt` says what is missing"),
        "{err}"
    );
    let info = stdout(&run(dir.path(), &["info", "gap.hrxt"]));
    assert!(info.contains("are missing"), "{info}");
}

/// Writes `records` but the one at `lost` to `path` through a lossy recorder, with the
/// `RecordsLost` record that says it lost that one.
fn lossy_copy_without(path: &Path, records: &[Record], lost: usize) {
    let options = RecorderOptions {
        mode: TraceMode::Lossy,
        // The copy itself must lose nothing: on a loaded machine a burst of records can
        // fill the ring before the writer drains it, and the default 10 ms wait drops.
        full_buffer_wait: std::time::Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).unwrap();
    for (i, record) in records.iter().enumerate() {
        if i == lost || matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            continue;
        }
        recorder.record(record);
    }
    recorder.record(&Record::RecordsLost(RecordsLost {
        time_ns: recorder.now_ns(),
        lossy: true,
        total: 1,
        by_kind: vec![LostKind {
            kind: records[lost].kind_name().into(),
            records: 1,
        }],
    }));
    recorder.close().unwrap();
}

/// A lossy recording that lost a `Submit` (its submission's other records kept): `info`
/// says the recorder lost records, not that damaged parts were skipped, and `replay`'s
/// one error line says first that it cannot be exact and what was lost (it named only the
/// inconsistency, and the loss only in its hint).
#[test]
fn a_lost_submit_is_named_as_a_loss_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    // A submission in the middle: its number is then a gap in the sequence.
    let last_submit = middle_submit(&trace.records);
    lossy_copy_without(&dir.path().join("lossy.hrxt"), &trace.records, last_submit);

    let info = stdout(&run(dir.path(), &["info", "lossy.hrxt"]));
    assert!(
        info.contains("closed cleanly, but the recorder lost records"),
        "{info}"
    );
    assert!(!info.contains("damaged"), "{info}");
    let replay = run(dir.path(), &["replay", "lossy.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stdout(&replay));
    let err = stderr(&replay);
    assert_eq!(stdout(&replay), "");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(
            "error: lossy.hrxt: cannot be exact: 1 records lost (Submit 1) in lossy mode while \
             recording, and replay needs what was lost: "
        ),
        "{err}"
    );
    assert!(
        lines[0].ends_with("and the trace lacks Submit 1 of them"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("hint: record in the default lossless mode"),
        "{err}"
    );
    // A trim of the submissions before the lost one holds all of its own: it replays, saying
    // it cannot be exact (the source's losses); one across the lost one has a gap: refused.
    let Record::Submit(submit) = &trace.records[last_submit] else {
        panic!("not a Submit")
    };
    let lost = submit.submission.0;
    assert!(lost > 1, "a submission before the lost one");
    let before = format!("1..{lost}");
    // Through the submission after it: the lost one is then a gap between held ones.
    let across = format!("1..{}", lost + 2);
    for (range, file) in [(&before, "before.hrxt"), (&across, "across.hrxt")] {
        let trim = run(
            dir.path(),
            &["trim", "lossy.hrxt", "-o", file, "--submissions", range],
        );
        assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    }
    let replay = run(dir.path(), &["replay", "before.hrxt"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
    assert!(
        stdout(&replay).contains("cannot be exact"),
        "{}",
        stdout(&replay)
    );
    let replay = run(dir.path(), &["replay", "across.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stdout(&replay));
    assert!(
        stderr(&replay).contains("have no Submit (lost while recording")
            || stderr(&replay).contains("has no Submit (lost while recording"),
        "{}",
        stderr(&replay)
    );
}

/// The last submission's `Submit` lost (its submitting thread's last records, with a
/// kill), its completion and timings kept (the waiting thread's, written out): no gap in
/// the numbers shows it, and `info` names what does; so do `stats` and `diff` (`dump` streams
/// in constant memory and leaves the count to `info`).
#[test]
fn records_of_a_submission_whose_submit_was_lost_at_the_end_are_named() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let last = (0..trace.records.len())
        .rev()
        .find(|&i| matches!(trace.records[i], Record::Submit(_)))
        .unwrap();
    let recorder =
        Recorder::create(dir.path().join("cut.hrxt"), RecorderOptions::default()).unwrap();
    for (i, record) in trace.records.iter().enumerate() {
        if i != last && !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(record);
        }
    }
    recorder.close().unwrap();
    let info = stdout(&run(dir.path(), &["info", "cut.hrxt"]));
    let warning = info
        .lines()
        .find(|l| l.contains("whose Submit the trace lacks"))
        .unwrap_or_else(|| panic!("{info}"));
    assert!(warning.starts_with("warning"), "{info}");
    assert!(warning.contains("1 completion"), "{info}");
    assert!(warning.contains("region timing"), "{info}");
    // `stats` says it too, on standard error and in its JSON's warnings (it was silent:
    // a fresh-user pass).
    let stats = run(dir.path(), &["stats", "cut.hrxt"]);
    assert!(
        stderr(&stats).contains("whose Submit the trace lacks"),
        "{}",
        stderr(&stats)
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", "cut.hrxt"]))).unwrap();
    assert!(
        json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("whose Submit the trace lacks")),
        "{}",
        json["warnings"]
    );
    let whole = run(dir.path(), &["stats", "base.hrxt"]);
    assert!(
        !stderr(&whole).contains("whose Submit"),
        "{}",
        stderr(&whole)
    );
    // And `diff`, of the side that lacks them.
    let diff = stderr(&run(dir.path(), &["diff", "base.hrxt", "cut.hrxt"]));
    assert!(
        diff.contains("cut.hrxt: ") && diff.contains("whose Submit the trace lacks"),
        "{diff}"
    );
    assert!(!diff.contains("base.hrxt: 1"), "{diff}");
    // The whole recording has no such line.
    let whole = stdout(&run(dir.path(), &["info", "base.hrxt"]));
    assert!(!whole.contains("whose Submit"), "{whole}");
}

/// A trace whose last submission has no recorded outcome (a recording cut short in it):
/// `info`'s text says how many submissions end without one, as its JSON
/// (`in_flight_at_end`) and `stats` do; it said only "N accepted" (fresh-user pass).
#[test]
fn info_says_which_submissions_have_no_outcome() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let last_done = trace
        .records
        .iter()
        .rposition(|r| matches!(r, Record::SubmissionDone(_)))
        .expect("a SubmissionDone");
    let recorder =
        Recorder::create(dir.path().join("open.hrxt"), RecorderOptions::default()).unwrap();
    for (i, record) in trace.records.iter().enumerate() {
        if i == last_done || matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            continue;
        }
        recorder.record(record);
    }
    recorder.close().unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["info", "--json", "open.hrxt"]))).unwrap();
    assert_eq!(json["submissions"]["in_flight_at_end"], 1, "{json:#}");
    let text = stdout(&run(dir.path(), &["info", "open.hrxt"]));
    assert!(
        crate::util::field(&text, "submissions")
            .ends_with(", 1 without an outcome (in flight where the trace ends)"),
        "{text}"
    );
    let whole = stdout(&run(dir.path(), &["info", "base.hrxt"]));
    assert!(!whole.contains("without an outcome"), "{whole}");
    // Closed by a recorder that dropped records: the completion is among what it lost, not
    // in flight (a lossy trace's thousands of dropped completions read "in flight").
    lossy_copy_without(&dir.path().join("lossy.hrxt"), &trace.records, last_done);
    let text = stdout(&run(dir.path(), &["info", "lossy.hrxt"]));
    assert!(
        crate::util::field(&text, "submissions").ends_with(
            ", 1 without an outcome (their completions among the records the recorder lost)"
        ),
        "{text}"
    );
}

/// A lossy recording that lost nothing says its mode: `info` in a line, `stats --json`'s
/// `lossy_mode`, `info --json`'s `lossy` (it read `lossy_mode: false`, as a lossless one: a
/// fresh-user pass), `replay`'s report, a `diff` note and `record`'s summary; a lossless
/// one says nothing of it.
#[test]
fn a_lossy_recording_that_lost_nothing_says_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, file) in [("lossy", "lossy.hrxt"), ("lossless", "lossless.hrxt")] {
        let out = hrx_trace(dir.path())
            .env("HRX_TRACE_MODE", mode)
            .args([
                "record",
                "-q",
                "--workload",
                "hazards",
                "--backend",
                "sim",
                "-o",
                file,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `-q` keeps what a trace lacks, the mode of a lossy recording too (the summary
        // that says it is not printed): it said nothing.
        assert_eq!(
            stderr(&out).contains("recorded in lossy mode"),
            mode == "lossy",
            "{mode}: {}",
            stderr(&out)
        );
    }
    let info = stdout(&run(dir.path(), &["info", "lossy.hrxt"]));
    assert!(
        info.contains("none, recorded in lossy mode (HRX_TRACE_MODE=lossy"),
        "{info}"
    );
    assert!(!stdout(&run(dir.path(), &["info", "lossless.hrxt"])).contains("lossy mode"));
    // The mode is a `RecordsLost` record counting none: its row in the kind table, its
    // `dump` line and its exported mark say so (the row read `RecordsLost 1` beside `lost
    // none`, as if one record were lost: a fresh user's pass).
    let row = info
        .lines()
        .find(|l| l.trim_start().starts_with("RecordsLost "))
        .unwrap_or_else(|| panic!("no RecordsLost row: {info}"));
    assert!(
        row.ends_with(" 1  (0 lost: the lossy mode's mark)"),
        "{row}"
    );
    let dump = stdout(&run(dir.path(), &["dump", "lossy.hrxt"]));
    assert!(
        dump.contains(
            "records-lost   total=0 lossy=true [] (the lossy mode's mark: none lost yet)"
        ),
        "{dump}"
    );
    let export = run(
        dir.path(),
        &[
            "export",
            "lossy.hrxt",
            "--format",
            "chrome",
            "-o",
            "lossy.json",
        ],
    );
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    let exported = std::fs::read_to_string(dir.path().join("lossy.json")).unwrap();
    assert!(
        exported.contains("\"lossy mode (none lost yet)\""),
        "{exported}"
    );
    assert!(!exported.contains("\"records lost\""), "{exported}");
    // On standard error too, as `info`'s line says it: a note, and under `-q` a warning, as
    // `record -q` says it (`export -q` said nothing of the mode: a fresh user's pass).
    let mode = "lossy.hrxt: lost none, recorded in lossy mode (HRX_TRACE_MODE=lossy";
    assert!(
        stderr(&export).contains(&format!("note: {mode}")),
        "{}",
        stderr(&export)
    );
    for (file, said) in [("lossy.hrxt", true), ("lossless.hrxt", false)] {
        let quiet = run(dir.path(), &["-q", "export", file, "-o", "quiet.json"]);
        assert_eq!(code(&quiet), 0, "{}", stderr(&quiet));
        assert_eq!(
            stderr(&quiet).contains(&format!("warning: {mode}")),
            said,
            "{file}: {}",
            stderr(&quiet)
        );
        assert!(!stderr(&quiet).contains("note:"), "{}", stderr(&quiet));
    }
    for (file, lossy) in [("lossy.hrxt", true), ("lossless.hrxt", false)] {
        let stats: serde_json::Value =
            serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", file]))).unwrap();
        assert_eq!(stats["lost"]["lossy_mode"], lossy, "{file}");
        assert_eq!(stats["lost"]["records"], 0, "{file}");
        let info: serde_json::Value =
            serde_json::from_str(&stdout(&run(dir.path(), &["info", "--json", file]))).unwrap();
        assert_eq!(info["lost"]["lossy"], lossy, "{file}: {}", info["lost"]);
        // Its text says the mode in `info`'s words (it said nothing: a fresh user's pass).
        let text = stdout(&run(dir.path(), &["stats", file]));
        assert_eq!(
            text.lines().any(|l| l.starts_with("lost ")
                && l.ends_with(
                    "none, recorded in lossy mode (HRX_TRACE_MODE=lossy: a full \
                                thread buffer would have dropped records)"
                )),
            lossy,
            "{file}: {text}"
        );
    }
    // `trim` says it too (it said nothing; a fresh user's pass, session 59); not of a
    // lossless recording.
    for (file, lossy) in [("lossy.hrxt", true), ("lossless.hrxt", false)] {
        let out = run(
            dir.path(),
            &["trim", file, "-o", "part.hrxt", "--submissions", "1..3"],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(
            stderr(&out).contains(&format!("note: {file}: lost none, recorded in lossy mode")),
            lossy,
            "{file}: {}",
            stderr(&out)
        );
    }
    // Nothing lost: it replays as a lossless recording does, its report saying the mode
    // in `info`'s words; so do `diff` and `record`'s summary (they read as lossless: a
    // break-it pass).
    let said = "lost none, recorded in lossy mode (HRX_TRACE_MODE=lossy";
    let replay = run(dir.path(), &["replay", "lossy.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stderr(&replay));
    assert!(stdout(&replay).contains(said), "{}", stdout(&replay));
    let replay = run(dir.path(), &["replay", "lossless.hrxt"]);
    assert!(!stdout(&replay).contains("lossy"), "{}", stdout(&replay));
    let diff = stderr(&run(dir.path(), &["diff", "lossless.hrxt", "lossy.hrxt"]));
    assert!(
        diff.contains(&format!("note: lossy.hrxt: {said}")),
        "{diff}"
    );
    assert!(!diff.contains("lossless.hrxt: lost"), "{diff}");
    let out = hrx_trace(dir.path())
        .env("HRX_TRACE_MODE", "lossy")
        .args([
            "record",
            "--workload",
            "hazards",
            "--backend",
            "sim",
            "-o",
            "again.hrxt",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        summary.contains("lost         none, recorded in lossy mode"),
        "{summary}"
    );
}

/// What a trace lacks is under one pair of keys in every verb's JSON, with the same values
/// (a whole trace, a lossy one, one cut short by its program's crash):
/// `complete` (read whole, nothing lost while recording), `lost.total`, `lost.lossy` and a
/// `warnings` list (`diff`'s of each side: `complete.new`, `lost.new`). Each verb had its
/// own: `stats` `complete` and `lost.records`/`lost.lossy_mode`, `info` `closed.complete`
/// (the file's alone) and `lost.total`/`lost.lossy`, `replay` `trace.complete` and
/// `trace.records_lost`; those stay, and agree.
#[test]
fn every_verbs_json_says_what_a_trace_lacks_under_the_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    lossy_copy(dir.path());
    crate::util::record_crashed(dir.path(), "cut.hrxt");
    let json = |args: &[&str]| -> serde_json::Value {
        let out = run(dir.path(), args);
        assert!(code(&out) < 2, "{args:?}: {}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    // (trace, complete, lost.total, lost.lossy)
    for (trace, complete, total, lossy) in [
        ("base.hrxt", true, 0, false),
        ("lossy.hrxt", false, 2, true),
        ("cut.hrxt", false, 0, false),
    ] {
        let info = json(&["info", "--json", trace]);
        let stats = json(&["stats", "--json", trace]);
        let replay = json(&["replay", "--report", "json", trace]);
        let diff = json(&["diff", "--json", "base.hrxt", trace]);
        let diff_side = serde_json::json!({
            "complete": diff["complete"]["new"],
            "lost": diff["lost"]["new"],
            "warnings": diff["warnings"],
        });
        for (verb, report) in [
            ("info", &info),
            ("stats", &stats),
            ("replay", &replay),
            ("diff", &diff_side),
        ] {
            let said = (
                report["complete"].as_bool(),
                report["lost"]["total"].as_u64(),
                report["lost"]["lossy"].as_bool(),
            );
            assert_eq!(
                said,
                (Some(complete), Some(total), Some(lossy)),
                "{verb} {trace}: {report:#}"
            );
            let warnings = report["warnings"].as_array();
            assert!(warnings.is_some(), "{verb} {trace}: {report:#}");
            // What it lacks is warned of; a whole trace warns of nothing.
            assert_eq!(
                warnings.unwrap().is_empty(),
                complete,
                "{verb} {trace}: {report:#}"
            );
        }
        assert_eq!(diff["lost"]["base"]["total"], 0);
        // The verbs' own names stay, and agree.
        assert_eq!(stats["lost"]["records"], total, "{trace}");
        assert_eq!(stats["lost"]["lossy_mode"], lossy, "{trace}");
        assert_eq!(replay["trace"]["complete"], complete, "{trace}");
        assert_eq!(replay["trace"]["records_lost"], total, "{trace}");
        assert_eq!(diff["records_lost"]["new"], total, "{trace}");
        assert_eq!(info["closed"]["complete"], trace != "cut.hrxt", "{trace}");
        for verb in [&info, &stats, &replay] {
            assert_eq!(verb["lost"]["by_kind"], info["lost"]["by_kind"], "{trace}");
        }
    }
}

/// A command a hint prints names the trace as one shell word, for the user to paste: a
/// trace named `bad blob.hrxt` was hinted `hrx-trace trim bad blob.hrxt -o OUT ...`,
/// which trims `bad`; `-badblob.hrxt` read as an option and one with a newline ran as two
/// commands (a break-it pass). Run by a shell as printed, the hint's `hrx-trace info`
/// reads the trace.
#[test]
fn a_hint_names_the_trace_as_one_shell_word() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let gone = middle_submit(&trace.records);
    for (name, word) in [
        ("bad blob.hrxt", "'bad blob.hrxt'"),
        ("-badblob.hrxt", "./-badblob.hrxt"),
        ("bad\nblob's.hrxt", r"$'bad\nblob\'s.hrxt'"),
    ] {
        let recorder = Recorder::create(dir.path().join(name), RecorderOptions::default()).unwrap();
        for (i, record) in trace.records.iter().enumerate() {
            if i == gone || matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
                continue;
            }
            recorder.record(record);
        }
        recorder.close().unwrap();
        let replay = run(dir.path(), &["replay", "--", name]);
        assert_eq!(code(&replay), 2, "{}", stdout(&replay));
        let err = stderr(&replay);
        let hint = err
            .lines()
            .find(|l| l.starts_with("hint: "))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(
            hint.contains(&format!("`hrx-trace info {word}` says what is missing"))
                && hint.contains(&format!(
                    "`hrx-trace trim {word} -o OUT --submissions A..B`"
                )),
            "{hint}"
        );
        // The command as printed, pasted into a shell.
        let command = hint.split('`').nth(1).unwrap();
        let pasted = std::process::Command::new("bash")
            .arg("-c")
            .arg(command.replacen("hrx-trace", "\"$HRX_TRACE_BIN\"", 1))
            .env("HRX_TRACE_BIN", env!("CARGO_BIN_EXE_hrx-trace"))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let direct = run(dir.path(), &["info", "--", name]);
        assert_eq!(
            code(&pasted),
            code(&direct),
            "{command}: {}",
            stderr(&pasted)
        );
        // The same report (its `file` line names the path as given: `./-badblob.hrxt`).
        let rest = |out: &std::process::Output| stdout(out).split_once('\n').unwrap().1.to_owned();
        assert_eq!(rest(&pasted), rest(&direct), "{command}");
        assert!(
            stdout(&pasted).contains("are missing"),
            "{command}: {}",
            stdout(&pasted)
        );
    }
}

/// Lost records are listed by count in `stats` as in `info` and the warnings (`stats`
/// listed them alphabetically), and the submissions a lossy recorder lost are warned of
/// without a byte (it named the byte where the read stopped, with nothing damaged there: a
/// fresh user's pass).
#[test]
fn lost_records_are_listed_by_count_and_their_gap_by_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let submits: Vec<usize> = (0..trace.records.len())
        .filter(|&i| matches!(trace.records[i], Record::Submit(_)))
        .collect();
    assert!(submits.len() >= 4, "{}", submits.len());
    // Two submits from the middle and one timing: alphabetically RegionTiming comes first,
    // by count Submit.
    let timing = (0..trace.records.len())
        .find(|&i| matches!(trace.records[i], Record::RegionTiming(_)))
        .unwrap();
    let gone = [submits[1], submits[2], timing];
    let options = RecorderOptions {
        mode: TraceMode::Lossy,
        full_buffer_wait: std::time::Duration::from_secs(3600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(dir.path().join("lossy.hrxt"), options).unwrap();
    for (i, record) in trace.records.iter().enumerate() {
        if gone.contains(&i) || matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            continue;
        }
        recorder.record(record);
    }
    recorder.record(&Record::RecordsLost(RecordsLost {
        time_ns: recorder.now_ns(),
        lossy: true,
        total: 3,
        by_kind: vec![
            LostKind {
                kind: "RegionTiming".into(),
                records: 1,
            },
            LostKind {
                kind: "Submit".into(),
                records: 2,
            },
        ],
    }));
    recorder.close().unwrap();
    let by_count = "3 records lost (Submit 2, RegionTiming 1)";
    let info = run(dir.path(), &["info", "lossy.hrxt"]);
    assert!(stdout(&info).contains(by_count), "{}", stdout(&info));
    let stats = run(dir.path(), &["stats", "lossy.hrxt"]);
    assert!(
        stdout(&stats).contains("3 records lost while recording (Submit 2, RegionTiming 1)"),
        "{}",
        stdout(&stats)
    );
    for out in [&info, &stats] {
        let err = stderr(out);
        let gap = err
            .lines()
            .find(|l| l.contains("of its submissions 1..="))
            .unwrap_or_else(|| panic!("no gap warned: {err}"));
        assert!(
            gap.starts_with("warning: lossy.hrxt: runtime "),
            "no byte before it: {err}"
        );
        assert!(!gap.contains("byte"), "{err}");
        assert!(err.contains(by_count), "{err}");
    }
}

/// A lossy recording that lost an output digest: `replay` says the recorder lost it (it
/// said "the incomplete trace lost it with its end" of a cleanly closed trace) and leaves
/// that output uncompared, exit 0.
#[test]
fn a_lost_digest_is_said_as_lost_by_the_recorder() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = read_all(dir.path().join("base.hrxt")).unwrap();
    let digests: Vec<usize> = (0..trace.records.len())
        .filter(|&i| matches!(trace.records[i], Record::OutputDigest(_)))
        .collect();
    assert!(
        !digests.is_empty(),
        "the hazards workload digests its outputs"
    );
    let lost = digests[digests.len() / 2];
    lossy_copy_without(&dir.path().join("lossy.hrxt"), &trace.records, lost);

    let replay = run(dir.path(), &["replay", "lossy.hrxt"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
    let text = stdout(&replay);
    assert!(
        text.contains(
            "1 output written at replay has no captured digest: the recorder lost it while \
             recording, so it was not compared"
        ),
        "{text}"
    );
    assert!(!text.contains("with its end"), "{text}");
    // `diff` says it as lost by the lossy side's recorder, not a difference (it read the
    // output "only in base" and the traces `different` under a line saying otherwise).
    let diff = stdout(&run(dir.path(), &["diff", "base.hrxt", "lossy.hrxt"]));
    assert!(
        field(&diff, "verdict").starts_with("same as far as both traces go"),
        "{diff}"
    );
    assert!(diff.contains("lost by new's recorder"), "{diff}");
}
