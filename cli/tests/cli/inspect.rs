//! `info` and `dump` on files that are not (whole) traces.

use crate::util::*;
use std::path::Path;

fn both(dir: &Path, file: &str, contains: &str) {
    for verb in ["info", "dump"] {
        let output = run(dir, &[verb, file]);
        assert_error(&output, contains);
        assert!(stdout(&output).is_empty(), "{verb}: {}", stdout(&output));
    }
}

#[test]
fn a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    // No "byte 0": nothing was read.
    both(
        dir.path(),
        "missing.hrxt",
        "error: missing.hrxt: cannot open it: No such file",
    );
    let output = run(dir.path(), &["info", "missing.hrxt"]);
    assert!(
        stderr(&output).contains("hint: record one"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    both(dir.path(), "sub", "directory");
}

#[test]
fn an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.hrxt"), b"").unwrap();
    both(dir.path(), "empty.hrxt", "byte 0: the file is empty");
}

#[test]
fn garbage() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.hrxt"),
        b"#!/bin/sh\necho this is not a trace\n",
    )
    .unwrap();
    both(dir.path(), "g.hrxt", "not an hrx trace");
}

#[test]
fn a_header_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("short.hrxt"), b"HRXTRACE\x01\x00").unwrap();
    both(dir.path(), "short.hrxt", "byte 10: ");
}

/// A real trace recorded by the hazards workload (no photograph needed).
fn hazards_trace(dir: &Path) -> Vec<u8> {
    let output = run(
        dir,
        &["record", "-o", "whole.hrxt", "--workload", "hazards"],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    std::fs::read(dir.join("whole.hrxt")).unwrap()
}

#[test]
fn a_newer_major_version_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = hazards_trace(dir.path());
    bytes[8..10].copy_from_slice(&2u16.to_le_bytes());
    std::fs::write(dir.path().join("v2.hrxt"), &bytes).unwrap();
    both(
        dir.path(),
        "v2.hrxt",
        "byte 8: trace format 2.17 is newer than this reader's format 1.17",
    );
}

#[test]
fn a_truncated_trace_is_still_described_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = hazards_trace(dir.path());
    let whole = stdout(&run(dir.path(), &["info", "whole.hrxt"]));
    // Cut inside the last data block (before the footer): the blocks before it survive.
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() * 2 / 3]).unwrap();

    let info = run(dir.path(), &["info", "cut.hrxt"]);
    let out = stdout(&info);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert!(
        field(&out, "recovered").starts_with("not closed cleanly"),
        "{out}"
    );
    assert!(field(&out, "warning").contains("discarded"), "{out}");
    assert!(number(&out, "records") >= 1, "{out}");
    assert!(number(&out, "records") < number(&whole, "records"), "{out}");

    let dump = run(dir.path(), &["dump", "cut.hrxt"]);
    assert_eq!(code(&dump), 0, "{}", stderr(&dump));
    assert_eq!(
        stdout(&dump).lines().count() as u64,
        number(&out, "records")
    );
    assert!(stderr(&dump).contains("warning: "), "{}", stderr(&dump));
    assert!(
        stderr(&dump).contains("not closed cleanly"),
        "{}",
        stderr(&dump)
    );
    // `info` warns of it as `dump` and every other verb does, the reader's warning (`byte
    // N: the file ends inside a block: M bytes discarded`) included: it printed only the
    // not-closed-cleanly line (a fresh user's pass).
    let warnings = |output: &std::process::Output| {
        let err = stderr(output);
        let lines: Vec<String> = (err.lines())
            .filter(|l| l.starts_with("warning: "))
            // What each verb says it means for its output differs.
            .map(|l| l.split("; ").next().unwrap().to_string())
            .collect();
        lines
    };
    let said = warnings(&info);
    assert!(
        said.iter()
            .any(|l| l.contains("the file ends inside a block")),
        "{said:?}"
    );
    // (`dump` says first that the file does not end with its index.)
    let dumped = warnings(&dump);
    assert!(
        said.iter().all(|l| dumped.contains(l)),
        "{said:?} {dumped:?}"
    );

    // `replay` of what is left says so on standard error as `dump` does, whatever its
    // verdict, rather than a MATCH with only a note.
    let replay = run(dir.path(), &["replay", "cut.hrxt"]);
    let err = stderr(&replay);
    if code(&replay) != 2 {
        assert!(
            err.contains(
                "warning: cut.hrxt: not closed cleanly; the replay compares only what was recovered"
            ),
            "{err}"
        );
    }
}

#[test]
fn a_damaged_end_after_a_clean_close_is_named_not_called_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = hazards_trace(dir.path());
    let whole = stdout(&run(dir.path(), &["info", "whole.hrxt"]));
    bytes.extend_from_slice(b"appended by a careless tool");
    std::fs::write(dir.path().join("tail.hrxt"), &bytes).unwrap();

    let info = run(dir.path(), &["info", "tail.hrxt"]);
    let out = stdout(&info);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert!(
        field(&out, "recovered").starts_with("closed, but its end is damaged"),
        "{out}"
    );
    assert!(
        field(&out, "warning").contains("27 bytes after the end"),
        "{out}"
    );
    assert_eq!(number(&out, "records"), number(&whole, "records"), "{out}");

    let dump = run(dir.path(), &["dump", "tail.hrxt"]);
    assert_eq!(code(&dump), 0, "{}", stderr(&dump));
    let err = stderr(&dump);
    assert!(err.contains("closed, but its end is damaged"), "{err}");
    assert!(!err.contains("not closed cleanly"), "{err}");

    // `replay` warns as `dump` does: every record is there, so it still matches, but its
    // standard error says the file is damaged, in the same words.
    let replay = run(dir.path(), &["replay", "tail.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stderr(&replay));
    let replay_err = stderr(&replay);
    let warnings = |text: &str| {
        text.lines()
            .map(|l| l.split("; ").next().unwrap_or(l).to_owned())
            .collect::<Vec<_>>()
    };
    // `dump` alone also says it before its first record (a reader of `dump | head` stops
    // before the rest): the same damage, said early.
    let (early, dump_warnings): (Vec<_>, Vec<_>) = warnings(&err)
        .into_iter()
        .partition(|l| l.contains("does not end with its index"));
    assert_eq!(early.len(), 1, "{err}");
    assert_eq!(warnings(&replay_err), dump_warnings, "{replay_err}");
    assert!(
        replay_err
            .lines()
            .all(|l| l.starts_with("warning: tail.hrxt: ")),
        "{replay_err}"
    );

    // `diff` against the whole trace: nothing differs in what both hold, but one of them is
    // damaged, which is not "same" (exit 0: nothing regressed).
    let diff = run(dir.path(), &["diff", "--json", "whole.hrxt", "tail.hrxt"]);
    assert_eq!(code(&diff), 0, "{}", stderr(&diff));
    let report: serde_json::Value = serde_json::from_str(&stdout(&diff)).unwrap();
    assert_eq!(report["verdict"], "same_as_far_as_both_go", "{report:#}");
    assert_eq!(report["complete"]["new"], false, "{report:#}");
    assert!(
        report["reasons"].as_array().unwrap().iter().any(|r| r
            .as_str()
            .unwrap()
            .contains("new is incomplete (closed, but its end is damaged)")),
        "{report:#}"
    );
    let diff = run(dir.path(), &["diff", "whole.hrxt", "tail.hrxt"]);
    assert_eq!(code(&diff), 0, "{}", stderr(&diff));
    let text = stdout(&diff);
    assert!(
        field(&text, "verdict").starts_with("same as far as both traces go (exit 0)"),
        "{text}"
    );
    // The whole trace against itself is plainly the same.
    let diff = run(dir.path(), &["diff", "--json", "whole.hrxt", "whole.hrxt"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&diff)).unwrap();
    assert_eq!(report["verdict"], "same", "{report:#}");
}

/// A damaged first block of a closed trace: `info` says parts were skipped, not that every
/// block before a damaged end was read (found by the break-it review: byte 36 flipped).
#[test]
fn a_damaged_block_before_the_end_is_named_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = hazards_trace(dir.path());
    bytes[36] ^= 0xff;
    std::fs::write(dir.path().join("flipped.hrxt"), &bytes).unwrap();
    let info = run(dir.path(), &["info", "flipped.hrxt"]);
    let out = stdout(&info);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert!(
        field(&out, "recovered").starts_with("closed, but damaged parts were skipped"),
        "{out}"
    );
    assert!(!out.contains("every block before it is read"), "{out}");
    // The verbs that compute figures warn alike (they said "closed cleanly; these figures
    // cover only what was recovered").
    for verb in ["stats", "diff"] {
        let args: &[&str] = if verb == "diff" {
            &["diff", "flipped.hrxt", "flipped.hrxt"]
        } else {
            &["stats", "flipped.hrxt"]
        };
        let err = stderr(&run(dir.path(), args));
        assert!(
            err.contains("flipped.hrxt: closed, but damaged parts were skipped; these figures"),
            "{verb}: {err}"
        );
    }
    // `hazards_trace` left the undamaged recording as whole.hrxt.
    let diff = run(
        dir.path(),
        &["diff", "--json", "whole.hrxt", "flipped.hrxt"],
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&diff)).unwrap();
    assert_eq!(
        report["complete"],
        serde_json::json!({"base": true, "new": false})
    );
}

/// A trace whose recorder is still writing it (it holds the file's lock) is being recorded,
/// not crashed: `info` says so, and once the recorder closes it, that it is whole.
#[test]
fn a_trace_being_recorded_is_not_called_crashed() {
    use hrx_capture::{Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.hrxt");
    let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
    let info = stdout(&run(dir.path(), &["info", "live.hrxt"]));
    let capture = field(&info, "capture");
    assert!(capture.starts_with("being recorded now: read "), "{info}");
    assert!(!info.contains("crashed"), "{info}");
    assert!(
        field(&info, "recovered").ends_with("(not yet: a recorder is writing it)"),
        "{info}"
    );
    // Replay reads a trace twice and would compare two lengths of a growing one (a false
    // REGRESSION): refused while a recorder holds it.
    let replay = run(dir.path(), &["replay", "live.hrxt"]);
    crate::util::assert_error(
        &replay,
        "live.hrxt: cannot replay: it is being recorded now",
    );
    // A trim would end where the recording had got to and call its source cut short for
    // good: refused too, and nothing is written.
    let trim = run(
        dir.path(),
        &["trim", "live.hrxt", "-o", "t.hrxt", "--submissions", "1.."],
    );
    crate::util::assert_error(&trim, "live.hrxt: cannot trim: it is being recorded now");
    assert!(!dir.path().join("t.hrxt").exists());
    // The verbs that read what was written so far say it is being recorded, not that it
    // was not closed cleanly (a break-it pass).
    for args in [
        &["stats", "live.hrxt"][..],
        &["diff", "live.hrxt", "live.hrxt"][..],
        &["export", "live.hrxt", "-o", "live.json"][..],
    ] {
        let err = stderr(&run(dir.path(), args));
        assert!(
            err.contains("live.hrxt: being recorded now (a recorder holds it)"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("not closed cleanly"), "{args:?}: {err}");
    }
    // And `diff`'s verdict, which said "new is incomplete (not closed cleanly)", as of a
    // crash (a fresh-user pass).
    crate::util::record_hazards(dir.path(), "base.hrxt");
    let growing =
        Recorder::create(dir.path().join("growing.hrxt"), RecorderOptions::default()).unwrap();
    for record in hrx_capture::read_all(dir.path().join("base.hrxt"))
        .unwrap()
        .records
    {
        if !matches!(
            record,
            hrx_capture::Record::SessionStart(_) | hrx_capture::Record::SessionEnd(_)
        ) {
            growing.record(&record);
        }
    }
    growing.flush().unwrap();
    let diff = stdout(&run(dir.path(), &["diff", "base.hrxt", "growing.hrxt"]));
    drop(growing);
    assert!(
        diff.contains("new is incomplete (being recorded now: its end is not written yet)"),
        "{diff}"
    );
    assert!(!diff.contains("not closed cleanly"), "{diff}");
    // So do the JSON reports' `warnings`, which list what standard error warned (they said
    // "not closed cleanly" beside that warning: a break-it pass).
    for verb in ["info", "stats"] {
        let out = run(dir.path(), &[verb, "--json", "live.hrxt"]);
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let warnings = report["warnings"].as_array().unwrap();
        assert!(
            warnings.iter().any(|w| w
                .as_str()
                .is_some_and(|w| w.starts_with("being recorded now (a recorder holds it)"))),
            "{verb}: {warnings:?}"
        );
        assert!(
            !warnings.iter().any(|w| w == "not closed cleanly"),
            "{verb}: {warnings:?}"
        );
    }
    // So does the export's own mark, in the file: `trace being recorded`, read as far as it
    // was written (it wrote `trace incomplete`, "not closed cleanly", as for a crash).
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("live.json")).unwrap()).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(!names.contains(&"trace incomplete"), "{names:?}");
    let marks: Vec<&serde_json::Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "trace being recorded")
        .collect();
    assert_eq!(marks.len(), 1, "{names:?}");
    assert!(
        marks[0]["args"]["end"]
            .as_str()
            .is_some_and(|end| end.contains("read as far as it was written")),
        "{marks:?}"
    );
    recorder.close().unwrap();
    let info = stdout(&run(dir.path(), &["info", "live.hrxt"]));
    assert!(field(&info, "capture").starts_with("whole"), "{info}");
}

/// A trace of the current format whose every calibration (`HostClock`) was lost is not
/// called older than calibrations: `info`'s `clock` line (text and `--json`) says none was
/// read though format 1.17 records them, and an export of such a trace that lost its
/// session too gives the same reason in its warning and its file, from the one decision
/// (`hrx_capture::reader::Uncalibrated`, by the header's version). `info` said
/// `CLOCK_MONOTONIC (no calibration record: format 1.5 or older)` of a format 1.17 trace,
/// and the export `no clock calibration read` (break-it D6). `stats` says nothing of the
/// clock's calibrations.
#[test]
fn a_trace_that_lost_every_calibration_is_not_called_older() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::Record;
    use hrx_capture::format::FormatVersion;
    let dir = tempfile::tempdir().unwrap();
    // Written as they are (a recorder writes a session start and calibrations of its own):
    // with the session start, then without it too.
    for (name, session) in [("c.hrxt", true), ("n.hrxt", false)] {
        let file = std::fs::File::create(dir.path().join(name)).unwrap();
        let mut writer = hrx_capture::TraceWriter::new(file).unwrap();
        for r in pipeline(PipelineSpec::ops(40)) {
            let kept = match r {
                Record::HostClock(_) => false,
                Record::SessionStart(_) => session,
                _ => true,
            };
            if kept {
                writer.write(&r).unwrap();
            }
        }
        writer.finish().unwrap();
    }
    let why = format!(
        "no calibration read: format {} records them, and each was damaged or lost",
        FormatVersion::CURRENT
    );
    for name in ["c.hrxt", "n.hrxt"] {
        let info = stdout(&run(dir.path(), &["info", name]));
        let clock = field(&info, "clock");
        assert!(clock.contains(&format!("({why})")), "{info}");
        assert!(!clock.contains("1.5 or older"), "{info}");
        assert!(!clock.starts_with("CLOCK_MONOTONIC"), "{info}");
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&run(dir.path(), &["info", "--json", name]))).unwrap();
        assert_eq!(json["clock"], clock, "{json}");
        let stats = run(dir.path(), &["stats", name]);
        assert!(
            !format!("{}{}", stdout(&stats), stderr(&stats)).contains("1.5 or older"),
            "{}",
            stdout(&stats)
        );
    }
    let out = run(dir.path(), &["export", "n.hrxt", "-o", "n.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = format!("times are ns from the session's start, not CLOCK_MONOTONIC ({why})");
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("n.json")).unwrap()).unwrap();
    let record = doc["otherData"]["session_record"].as_str().unwrap();
    assert!(record.ends_with(&said), "{record}");
}

/// `stats` of a trace a recorder still writes says how it ends as `info` does, from the one
/// decision (`hrx_analysis::info::Ending`): its `ended` line (text and `--json`) is `info`'s
/// `capture` line, `being recorded now: read after 0 submissions`, and `stats --json`'s `end`
/// is `info --json`'s, `being recorded now: its end is not written yet`. It had no `ended`
/// (`null`) and `end` `not closed cleanly`, which reads as a recording that ended badly
/// (break-it E6). Closed, neither has an `ended`.
#[test]
fn stats_of_a_trace_being_recorded_says_what_info_says() {
    use hrx_capture::{Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path().join("live.hrxt"), RecorderOptions::default()).unwrap();
    recorder.flush().unwrap();
    let json = |verb: &str| -> serde_json::Value {
        serde_json::from_str(&stdout(&run(dir.path(), &[verb, "--json", "live.hrxt"]))).unwrap()
    };
    let info = stdout(&run(dir.path(), &["info", "live.hrxt"]));
    let stats = stdout(&run(dir.path(), &["stats", "live.hrxt"]));
    let ended = field(&stats, "ended");
    assert_eq!(
        ended, "being recorded now: read after 0 submissions",
        "{stats}"
    );
    let capture = field(&info, "capture");
    assert!(
        capture.starts_with(&format!("{ended} (")),
        "{info}\n{stats}"
    );
    let (info_json, stats_json) = (json("info"), json("stats"));
    assert_eq!(stats_json["ended"], ended, "{stats_json}");
    assert_eq!(info_json["live"], true, "{info_json}");
    assert_eq!(
        stats_json["end"], info_json["closed"]["end"],
        "{stats_json}\n{info_json}"
    );
    assert_eq!(
        stats_json["end"],
        hrx_capture::BEING_RECORDED,
        "{stats_json}"
    );
    recorder.close().unwrap();
    let stats = stdout(&run(dir.path(), &["stats", "live.hrxt"]));
    assert!(!stats.lines().any(|l| l.starts_with("ended ")), "{stats}");
    let stats_json = json("stats");
    assert_eq!(stats_json["ended"], serde_json::Value::Null, "{stats_json}");
    assert_eq!(stats_json["end"], "closed cleanly", "{stats_json}");
}

/// A trace whose recorder is writing its last block as a verb reads it (the file ends
/// inside that block, the recorder's lock held) is read as far as it was written: the block
/// being written is the live end, not damage. `stats`, `export` and `dump` warned "the file
/// ends inside a block: N bytes discarded" beside "being recorded now", and `info --json`
/// and `stats --json` listed it (a break-it pass). Once nobody holds it, the same bytes are
/// a torn tail.
#[test]
fn a_block_being_written_is_the_live_end_not_damage() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let bytes = hazards_trace(dir.path());
    // Cut inside a block (said as a torn tail below, once nobody holds the file).
    let mut live = std::fs::File::create(dir.path().join("live.hrxt")).unwrap();
    live.lock().unwrap();
    live.write_all(&bytes[..bytes.len() / 2]).unwrap();
    let torn = "the file ends inside a block";
    for args in [
        &["stats", "live.hrxt"][..],
        &["export", "live.hrxt", "-o", "live.json"][..],
        &["dump", "live.hrxt"][..],
        &["info", "live.hrxt"][..],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("being recorded now"), "{args:?}: {err}");
        assert!(!err.contains(torn), "{args:?}: {err}");
    }
    for verb in ["info", "stats"] {
        let out = run(dir.path(), &[verb, "--json", "live.hrxt"]);
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert!(
            !report["warnings"].to_string().contains(torn),
            "{verb}: {}",
            report["warnings"]
        );
    }
    // Its recorder gone (killed), the block it was writing is a torn tail.
    drop(live);
    for args in [
        &["stats", "live.hrxt"][..],
        &["info", "--json", "live.hrxt"][..],
    ] {
        let out = run(dir.path(), args);
        assert!(
            stderr(&out).contains(torn) || stdout(&out).contains(torn),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// A trace file a recorder has created and holds but not written yet (its first block
/// follows the file's creation) is being recorded: the reading verbs say so in their hint,
/// not that "the recording process probably died before its first write" (a break-it
/// pass's reads every 0.2 s from the start of `record` met it).
#[test]
fn an_empty_trace_a_recorder_holds_is_being_recorded_not_dead() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.hrxt");
    let sink = hrx_capture::FileSink::create(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    for verb in ["info", "stats", "dump"] {
        let out = run(dir.path(), &[verb, "live.hrxt"]);
        assert_error(
            &out,
            "hint: a recorder holds it and has not written its first block yet",
        );
        assert!(!stderr(&out).contains("died"), "{verb}: {}", stderr(&out));
    }
    // Once nobody holds it, an empty file is what a recording that died left.
    drop(sink);
    let err = stderr(&run(dir.path(), &["info", "live.hrxt"]));
    assert!(
        err.contains("probably died before its first write"),
        "{err}"
    );
}

/// `info` says the host's load per CPU as the runtimes set it at their start and end (the
/// `hrx: host load per CPU` counter), in text and JSON: a capture on a loaded host is a poor
/// timing reference, and only `record` said so before.
#[test]
fn info_says_the_hosts_load_when_the_runtimes_ran() {
    if !Path::new("/proc/loadavg").exists() {
        println!("skipped: no /proc/loadavg");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    hazards_trace(dir.path());
    let out = stdout(&run(dir.path(), &["info", "whole.hrxt"]));
    let line = field(&out, "host load");
    assert!(
        line.contains(" per CPU at the first of 2 samples, ") && line.contains(" at the last"),
        "{out}"
    );
    let json = stdout(&run(dir.path(), &["info", "--json", "whole.hrxt"]));
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let load = &report["host_load"];
    assert!(load["per_cpu_first"].as_f64().unwrap() >= 0.0, "{load}");
    assert!(load["per_cpu_last"].as_f64().unwrap() >= 0.0, "{load}");
    assert_eq!(load["samples"], 2, "{load}");
    assert_eq!(
        load["loaded"].as_bool().unwrap(),
        line.contains(": loaded"),
        "{load} {line}"
    );
    // A trim keeps both samples whatever its range (a range past the start kept none).
    let trim = run(
        dir.path(),
        &["trim", "whole.hrxt", "-o", "t.hrxt", "--submissions", "3.."],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    let json = stdout(&run(dir.path(), &["info", "--json", "t.hrxt"]));
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["host_load"]["samples"], 2, "{report:#}");
}

/// `-` is not standard input for the verbs that read traces, nor standard output for a
/// replay's baseline: each says so in one line, and no file named `-` is written (a
/// break-it pass: `info -` read "No such file", `--save-baseline -` wrote a file `-`).
#[test]
fn a_dash_is_neither_standard_input_nor_a_baseline_file() {
    let dir = tempfile::tempdir().unwrap();
    hazards_trace(dir.path());
    let info = run(dir.path(), &["info", "-"]);
    assert_error(&info, "-: cannot open it");
    assert!(stderr(&info).contains("hint: hrx-trace reads trace files, not standard input"));
    let replay = run(
        dir.path(),
        &["replay", "-q", "whole.hrxt", "--save-baseline", "-"],
    );
    assert_error(&replay, "baseline -: cannot write it to standard output");
    assert!(!dir.path().join("-").exists());
}

/// `dump`'s session end names what it counts, the records before it: `info`'s count of
/// records read less the session end itself (it read `records=N`, one fewer than `info`'s
/// `records N`, with nothing to say they counted different things).
#[test]
fn dumps_session_end_counts_the_records_before_it_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let info = run(dir.path(), &["info", "--json", "h.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    let info: serde_json::Value = serde_json::from_str(&stdout(&info)).unwrap();
    let records = info["records"]["total"].as_u64().expect("info's records");
    let dump = run(dir.path(), &["dump", "h.hrxt"]);
    assert_eq!(code(&dump), 0, "{}", stderr(&dump));
    let text = stdout(&dump);
    let end = text.lines().last().unwrap();
    assert!(end.contains("session-end"), "{end}");
    assert!(
        end.ends_with(&format!("records_before={} dropped=0", records - 1)),
        "{end} (info: {records} records)"
    );
    // Every line but the session end's is a record before it.
    assert_eq!(text.lines().count() as u64, records, "{text}");
}
