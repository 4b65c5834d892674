//! `hrx-trace replay`: verdicts and exit codes through the real binary.

use crate::util::{
    assert_error, code, hrx_trace, record_crashed, record_hazards, record_hazards_trimmed, run,
    run_into_closed_stdout, stderr, stdout,
};

#[test]
fn a_recorded_workload_replays_with_exit_0_and_a_json_report() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = run(dir.path(), &["replay", "h.hrxt", "--repeat", "2"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
    assert!(
        stdout(&replay).contains("verdict: SAME"),
        "{}",
        stdout(&replay)
    );
    let json = run(dir.path(), &["replay", "h.hrxt", "--report", "json"]);
    assert_eq!(code(&json), 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["verdict"], "same", "{report}");
}

/// `--max-slowdown` over one replay is said to lack the replay's own run-to-run change; two
/// or more, and the default with `--max-slowdown` (10 repeats), say nothing, and the report
/// names the repeats it ran.
#[test]
fn max_slowdown_over_one_replay_gets_a_note_and_defaults_to_ten() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    // The note is under test, not the timing: a ratio no loaded machine reaches (CI once saw
    // one replay of a 1.6 µs copy take 3.94 ms, 2519x, under `--max-slowdown 1000`).
    for (repeat, note) in [
        (
            Some("1"),
            Some("one replay's times here, without the replay's own run-to-run change"),
        ),
        (Some("2"), None),
        (None, None),
    ] {
        let mut args = vec!["replay", "h.hrxt", "--max-slowdown", "1e9"];
        args.extend(repeat.map(|r| ["--repeat", r]).into_iter().flatten());
        let replay = run(dir.path(), &args);
        if repeat.is_none() {
            assert!(
                stdout(&replay).contains("10 repeats"),
                "{}",
                stdout(&replay)
            );
        }
        let repeat = repeat.unwrap_or("default");
        assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
        let err = stderr(&replay);
        match note {
            // After the warning that a gate of 1e9 catches almost nothing.
            Some(note) => assert!(
                err.lines()
                    .any(|l| l.starts_with("note: --max-slowdown judged") && l.contains(note)),
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
    let out = run(dir.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let replay = run(dir.path(), &["replay", "f.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stdout(&replay));
    assert!(
        stdout(&replay).contains("failed    failed"),
        "{}",
        stdout(&replay)
    );
    // A failed run is no duration, on either side (as `stats` leaves it out): the failed
    // compute region's row holds the runs that succeeded; the upload before it, every run.
    let json = run(dir.path(), &["replay", "f.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let subs = report["submissions"].as_array().unwrap();
    let failed = subs.iter().filter(|s| s["captured"] == "failed").count();
    assert_eq!(failed, 1, "{subs:?}");
    let samples = |region: u64, side: &str| {
        report["timing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["region"] == region)
            .map(|t| t[side]["samples"].as_u64().unwrap())
    };
    for side in ["captured", "replayed"] {
        assert_eq!(samples(0, side), Some(subs.len() as u64), "{side}");
        assert_eq!(samples(1, side), Some(subs.len() as u64 - 1), "{side}");
    }
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

/// Records at `path`, in this process, a runtime that prepares a graph and never submits it.
fn record_idle(path: &std::path::Path) {
    let recorder =
        hrx_capture::Recorder::create(path, hrx_capture::RecorderOptions::default()).unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let buffer = rt.buffer(256, hrx::Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let prepared = graph.prepare().unwrap();
    drop((prepared, buffer, rt));
    recorder.close().unwrap();
}

/// A trace whose runtime prepared a graph but never submitted it has nothing to compare:
/// exit 2 with one line saying so, not a match of nothing (it said "MATCH (exit 0)").
#[test]
fn a_trace_without_submissions_is_not_a_match() {
    let dir = tempfile::tempdir().unwrap();
    record_idle(&dir.path().join("idle.hrxt"));
    let replay = run(dir.path(), &["replay", "idle.hrxt"]);
    assert_error(
        &replay,
        "idle.hrxt: cannot replay: it holds no submission to compare (1 runtime)",
    );
    assert_eq!(stdout(&replay), "");
}

/// The same trace cut short (its end lost, as a killed recording's) says that the recording
/// may have stopped before its submissions: it read exactly as one that never submitted (a
/// fresh-user pass).
#[test]
fn a_cut_trace_without_submissions_says_it_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("idle.hrxt");
    record_idle(&whole);
    let bytes = std::fs::read(&whole).unwrap();
    // The footer and the trailer go, and the session's end with them: the records remain.
    let read = hrx_capture::read_all(&whole).unwrap();
    assert!(read.recovery.clean_close);
    let cut = &bytes[..bytes.len() - 64];
    std::fs::write(dir.path().join("cut.hrxt"), cut).unwrap();
    let replay = run(dir.path(), &["replay", "cut.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stderr(&replay));
    assert!(
        stderr(&replay)
            .contains("it holds no submission to compare (1 runtime); it was not closed cleanly"),
        "{}",
        stderr(&replay)
    );
}

/// Records into `path` a graph of one fill submitted `submissions` times, flushing the
/// trace before the first submission where `flush_before_submits` (the runtime's start and
/// its graph then in a block of their own).
fn record_fills(path: &std::path::Path, submissions: usize, flush_before_submits: bool) {
    let recorder =
        hrx_capture::Recorder::create(path, hrx_capture::RecorderOptions::default()).unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let buffer = rt.buffer(256, hrx::Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let prepared = graph.prepare().unwrap();
    if flush_before_submits {
        recorder.flush().unwrap();
    }
    for _ in 0..submissions {
        prepared.submit().unwrap().wait().unwrap();
    }
    drop((prepared, buffer, rt));
    recorder.close().unwrap();
}

/// A trace closed cleanly whose block of submissions a flipped bit cost says what `info`
/// says of it, closed but damaged: it said "it was not closed cleanly, so the recording may
/// have stopped before them" (session 55's break-it pass).
#[test]
fn a_closed_trace_that_lost_its_submissions_to_damage_says_it_was_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    record_fills(&path, 3, false);
    // A bit flipped in the middle of each block holding a `Submit`.
    let mut bytes = std::fs::read(&path).unwrap();
    let trace = hrx_capture::MappedTrace::open(&path).unwrap();
    let mut flipped = 0;
    for (i, block) in trace.blocks().iter().enumerate() {
        let records = trace.read_block(i).unwrap().records;
        if records
            .iter()
            .any(|r| matches!(r, hrx_capture::Record::Submit(_)))
        {
            let at = block.offset as usize
                + hrx_capture::format::BLOCK_HEADER_LEN
                + block.header.stored_len as usize / 2;
            bytes[at] ^= 0x10;
            flipped += 1;
        }
    }
    assert!(flipped > 0);
    drop(trace);
    std::fs::write(dir.path().join("flipped.hrxt"), &bytes).unwrap();
    let info = run(dir.path(), &["info", "flipped.hrxt"]);
    assert!(
        stderr(&info).contains("flipped.hrxt: closed, but damaged parts were skipped"),
        "{}",
        stderr(&info)
    );
    let replay = run(dir.path(), &["replay", "flipped.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stderr(&replay));
    let err = stderr(&replay);
    assert!(
        err.contains(
            "); it was closed, but damaged parts were skipped, so they may have been in what \
             it lacks"
        ),
        "{err}"
    );
    assert!(err.contains("it holds no submission to compare ("), "{err}");
    assert!(!err.contains("not closed cleanly"), "{err}");
}

/// A trace whose block holding its runtime's start was damaged cannot be replayed, trimmed
/// or not: the hint says so. It suggested a trim, which kept the damage, and its replay gave
/// the same error and hint (a fresh-user pass followed it in a loop).
#[test]
fn a_trace_that_lost_its_runtime_start_is_not_sent_to_trim() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    // The runtime's start and its graph in the first block, the submissions after.
    record_fills(&path, 4, true);
    let mut bytes = std::fs::read(&path).unwrap();
    let trace = hrx_capture::MappedTrace::from_vec(bytes.clone()).unwrap();
    let start = (0..trace.blocks().len())
        .find(|&i| {
            let records = trace.read_block(i).unwrap().records;
            records.iter().any(|r| r.kind_name() == "RuntimeStart")
        })
        .expect("a block holds the runtime's start");
    let at = trace.blocks()[start].offset as usize + 40;
    for b in &mut bytes[at..at + 16] {
        *b ^= 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    let replay = run(dir.path(), &["replay", "t.hrxt"]);
    assert_error(&replay, "no RuntimeStart");
    let hint = stderr(&replay);
    assert!(
        hint.contains("no trim of it replays") && !hint.contains("--submissions"),
        "{hint}"
    );
}

/// A trace whose submissions wrote nothing hrx digests (a fill of a GPU-local buffer) replays
/// its statuses, and says, in the text, on standard error and in the JSON, that no output
/// was compared: "MATCH" of nothing said nothing before.
#[test]
fn a_replay_that_compares_no_output_says_so_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("local.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let buffer = rt.buffer(256, hrx::Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.whole(), 1).unwrap();
    let prepared = graph.prepare().unwrap();
    for _ in 0..2 {
        prepared.submit().unwrap().wait().unwrap();
    }
    drop((prepared, buffer, rt));
    recorder.close().unwrap();

    let replay = run(dir.path(), &["replay", "local.hrxt"]);
    assert_eq!(code(&replay), 0, "{}", stderr(&replay));
    let said = "no output was compared: the trace holds no output digest";
    assert!(
        stdout(&replay).contains(&format!("warning: {said}")),
        "{}",
        stdout(&replay)
    );
    assert!(
        stderr(&replay).contains(&format!("warning: local.hrxt: {said}"))
            && stderr(&replay).contains("only 2 submission statuses were compared"),
        "{}",
        stderr(&replay)
    );
    let json = run(dir.path(), &["replay", "local.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert!(
        report["nothing_compared"]
            .as_str()
            .is_some_and(|w| w.starts_with(said)),
        "{report}"
    );
    assert_eq!(report["schema_version"], hrx_analysis::JSON_SCHEMA_VERSION);

    // A recorded workload compares its outputs: no such warning, and `null` in the JSON.
    record_hazards(dir.path(), "h.hrxt");
    let json = run(dir.path(), &["replay", "h.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert!(report["nothing_compared"].is_null(), "{report}");
    assert!(!stderr(&json).contains("no output was compared"));
    // `--until` before its first output: the replayed submissions wrote none; the trace does
    // hold digests (it had said it held none).
    let until = run(dir.path(), &["replay", "h.hrxt", "--until", "1"]);
    let said = "no output was compared: the submissions replayed (to 1, `--until`) wrote no output";
    assert!(stderr(&until).contains(said), "{}", stderr(&until));
    assert!(!stderr(&until).contains("the trace holds no output digest"));
}

/// `--until N` past the trace's last submission cut nothing: one warning line (kept by
/// `-q`), the whole replay and its verdict (it was silent); at the last submission or
/// before it, no such line; a value that is no count stays a one-line error.
#[test]
fn until_past_the_last_submission_is_said_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let past = run(dir.path(), &["-q", "replay", "h.hrxt", "--until", "5"]);
    assert_eq!(code(&past), 0, "{}{}", stdout(&past), stderr(&past));
    assert!(stdout(&past).contains("verdict: SAME"), "{}", stdout(&past));
    let said: Vec<_> = (stderr(&past).lines())
        .filter(|l| l.contains("--until"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        said,
        [
            "warning: --until 5 is past the trace's last submission (submission 4): all were \
          replayed"
        ],
        "{}",
        stderr(&past)
    );
    for within in ["4", "2"] {
        let out = run(dir.path(), &["replay", "h.hrxt", "--until", within]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            !stderr(&out).contains("past the trace's last"),
            "{}",
            stderr(&out)
        );
    }
    for (value, said) in [
        ("many", "invalid value 'many' for '--until <N>'"),
        ("0", "submissions count from 1"),
    ] {
        let out = run(dir.path(), &["replay", "h.hrxt", "--until", value]);
        assert_error(&out, said);
    }
}

/// `--until N` numbers submissions as in the whole recording, as a trim keeps them (the
/// trim holds 2 and 3): `--until 2` replays submission 2 alone, `--until 3` both without a
/// warning, `--until 4` warns naming submission 3, and `--until 1`, before the first, is an
/// error saying so. It counted the submissions held: `--until 2` replayed both, and 3 was
/// "past the trace's last submission (it holds 2)" (a break-it pass).
#[test]
fn until_numbers_submissions_as_in_the_whole_recording() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards_trimmed(dir.path());
    let replayed = |until: &str| {
        let out = run(
            dir.path(),
            &["replay", "t.hrxt", "--until", until, "--report", "json"],
        );
        assert_eq!(code(&out), 0, "{until}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let runtime = &report["trace"]["runtimes"][0];
        let warned: Vec<String> = (stderr(&out).lines())
            .filter(|l| l.starts_with("warning: --until"))
            .map(str::to_owned)
            .collect();
        (
            runtime["replayed_submissions"].as_u64().unwrap(),
            runtime["last_submission"].as_u64().unwrap(),
            warned,
        )
    };
    assert_eq!(replayed("2"), (1, 3, vec![]));
    assert_eq!(replayed("3"), (2, 3, vec![]));
    assert_eq!(
        replayed("4"),
        (
            2,
            3,
            vec![
                "warning: --until 4 is past the trace's last submission (submission 3): all \
                 were replayed"
                    .to_owned()
            ]
        )
    );
    let before = run(dir.path(), &["replay", "t.hrxt", "--until", "1"]);
    assert_error(
        &before,
        "t.hrxt: cannot replay: --until 1 keeps none of the submissions the trace holds: its \
         first is submission 2 (numbered as in the whole recording)",
    );
}

/// A copy batch's timing row names it once, by its lane and its copies under the lane's
/// name for them (`upload`, `download`), as `stats` and `--per-op` name them: it read
/// `GPU Upload, copy batch: copy`.
#[test]
fn a_copy_batch_is_named_by_its_lane_and_copies() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = run(dir.path(), &["replay", "h.hrxt", "--per-op"]);
    assert_eq!(code(&replay), 0, "{}", stderr(&replay));
    let text = stdout(&replay);
    assert!(!text.contains("copy batch: copy"), "{text}");
    for lane in [
        "GPU Upload, copy batch: 1 upload",
        "GPU Download, copy batch: 1 download",
    ] {
        assert!(
            text.lines().any(|l| l.ends_with(lane)),
            "{lane:?} not in: {text}"
        );
    }
    // Per operation, the same copies by the same names.
    assert!(
        text.lines().any(|l| l.ends_with("upload (region 0)")),
        "{text}"
    );
    // A copy inside a compute graph keeps its name among the graph's operations.
    assert!(
        text.contains("native graph: hrx_iota, copy, fill"),
        "{text}"
    );
}

/// `--tolerance` compares captured bytes: on a trace recorded without them it is an error
/// before anything is replayed, not a silent exact comparison (it was a note at the end).
#[test]
fn a_tolerance_on_a_trace_without_contents_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = run(dir.path(), &["replay", "h.hrxt", "--tolerance", "0.01"]);
    assert_error(
        &replay,
        "h.hrxt: cannot replay: --tolerance compares output contents, and this trace holds none",
    );
    assert!(
        stderr(&replay).contains("hint: leave out --tolerance"),
        "{}",
        stderr(&replay)
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
        "hint: `--backend sim` replays on the software device (the default, auto, falls back \
         to it when no GPU is found)"
    );
}

/// The committed H200 recording of `faults` (recorded on CUDA).
const CUDA_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tui/tests/data/faults-cuda-h200.hrxt"
);

/// `replay` with neither `--backend` nor `HRX_BACKEND`, in `dir`.
fn replay_auto(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    crate::util::hrx_trace(dir)
        .env_remove("HRX_BACKEND")
        .arg("replay")
        .args(args)
        .output()
        .unwrap()
}

/// Replay defaults to `auto`, as `record` does (it was `sim`), and its report's first lines
/// say the backend it replayed on and that it picked it. A sim recording replays on sim
/// here: times comparable, nothing more said.
#[test]
fn replay_defaults_to_auto_and_says_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let out = replay_auto(dir.path(), &["h.hrxt"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let head: Vec<&str> = text.lines().take(4).collect();
    let replayed = head.iter().find(|l| l.starts_with("replayed: ")).unwrap();
    assert!(replayed.contains(", picked by backend auto, "), "{text}");
    if replayed.starts_with("replayed: sim ") {
        assert!(!text.contains("not comparable"), "{text}");
    }
    let json = replay_auto(dir.path(), &["h.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["replay"]["requested"], "auto", "{report}");
    // HRX_BACKEND is honoured as `record` honours it; --backend wins over it.
    let env = |value: &str, args: &[&str]| {
        hrx_trace(dir.path())
            .env("HRX_BACKEND", value)
            .args(["replay", "h.hrxt", "--report", "json"])
            .args(args)
            .output()
            .unwrap()
    };
    let requested = |out: &std::process::Output| {
        let report: serde_json::Value = serde_json::from_str(&stdout(out)).unwrap();
        report["replay"]["requested"].as_str().unwrap().to_owned()
    };
    assert_eq!(requested(&env("sim", &[])), "sim");
    assert_eq!(requested(&env("quantum", &["--backend", "auto"])), "auto");
    assert_error(
        &env("quantum", &[]),
        "HRX_BACKEND: expected auto, sim, cuda or hip, got \"quantum\"",
    );
}

/// A CUDA recording replayed where auto picks the software device: the report's first
/// lines say `recorded on cuda, replaying on sim: timings are not comparable`, its timing
/// rows have no ratio and none is judged slow, and `--max-slowdown` is refused (exit 2)
/// rather than judged against the H200's times (it was judged, and the default `sim`
/// said nothing of the mismatch). Where auto picks CUDA there is no mismatch to check.
#[test]
fn a_replay_on_another_backend_says_its_timings_are_not_comparable() {
    let dir = tempfile::tempdir().unwrap();
    let out = replay_auto(dir.path(), &[CUDA_TRACE]);
    let text = stdout(&out);
    if text.lines().any(|l| l.starts_with("replayed: cuda ")) {
        eprintln!("auto picked CUDA here: no mismatch to check");
        return;
    }
    // The trace's device-loss failure is an ordinary kernel error on sim (README).
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    let head: Vec<&str> = text.lines().take(5).collect();
    assert!(
        head.iter().any(|l| l.starts_with("replayed: sim ")),
        "{text}"
    );
    assert!(
        head.contains(
            &"recorded on cuda, replaying on sim: timings are not comparable (no ratio is \
              given and none is judged slow)"
        ),
        "{text}"
    );
    let json = replay_auto(dir.path(), &[CUDA_TRACE, "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let runtime = &report["trace"]["runtimes"][0];
    assert_eq!(
        (&runtime["backend"], &runtime["replay_backend"]),
        (&"cuda".into(), &"sim".into())
    );
    assert_eq!(runtime["timings_comparable"], false);
    let timing = report["timing"].as_array().unwrap();
    assert!(!timing.is_empty());
    for row in timing {
        assert!(
            row["ratio"].is_null() && row["regression"] == false,
            "{row}"
        );
    }

    let judged = replay_auto(dir.path(), &[CUDA_TRACE, "--max-slowdown", "2"]);
    assert_error(
        &judged,
        "runtime 1 was recorded on cuda and replays on sim: timings are not comparable",
    );
    assert!(
        stderr(&judged).contains("hint: replay where cuda is (--backend cuda)"),
        "{}",
        stderr(&judged)
    );
    assert_eq!(stdout(&judged), "");
}

/// A reader that goes away before the report (`replay ... | head -c 1`) is not an error:
/// both report formats keep the verdict's exit code (found in first use: the JSON report
/// was printed with `println!`, which panicked into "internal error", exit 101), and one
/// `warning:` line says that the report was cut, naming standard output: it was cut in
/// silence (break-it E5). `diff` and `record` say it alike; a full standard output is the
/// verb's error, naming it.
#[test]
fn a_closed_standard_output_is_said_and_keeps_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let cut = |what: &str, code: &str| {
        format!(
            "warning: standard output was closed before {what} was printed whole (its reader \
             went away, as `| head` does): it is cut short; the exit code is {code}, unless \
             an error follows\n"
        )
    };
    // Said once, as one line (a loaded host's warning may come beside it).
    let said = |err: &str, line: &str| {
        err.contains(line) && err.matches("standard output was closed").count() == 1
    };
    for report in ["json", "text"] {
        // Closed before the replay (milliseconds) can have written anything.
        let out = run_into_closed_stdout(dir.path(), &["replay", "h.hrxt", "--report", report]);
        assert_eq!(code(&out), 0, "--report {report}: {}", stderr(&out));
        assert!(
            said(
                &stderr(&out),
                &cut("the report of the replay of h.hrxt", "the verdict's")
            ),
            "--report {report}",
        );
    }
    for json in [&["--json"][..], &[]] {
        let args = [&["-q", "diff"][..], json, &["h.hrxt", "h.hrxt"]].concat();
        let out = run_into_closed_stdout(dir.path(), &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(
            said(
                &stderr(&out),
                &cut(
                    "the report of the comparison of h.hrxt and h.hrxt",
                    "the verdict's"
                )
            ),
            "{args:?}",
        );
    }
    // A baseline that cannot be written after the report was cut: exit 2, its error after
    // the warning, which does not promise the verdict's code (it did: break-it D5).
    let out = run_into_closed_stdout(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--report",
            "json",
            "--save-baseline",
            "/proc/nope.json",
        ],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        said(
            &err,
            &cut("the report of the replay of h.hrxt", "the verdict's")
        ),
        "{err}"
    );
    assert!(
        err.find("standard output was closed") < err.find("error: baseline /proc/nope.json"),
        "{err}"
    );
    // `record`'s summary, as `record::pipe_closed_is_ok` takes it: the same line.
    for json in [&["--json"][..], &[]] {
        let args = [
            &["-q", "record"][..],
            json,
            &["--workload", "hazards", "-o", "r.hrxt"],
        ]
        .concat();
        let out = run_into_closed_stdout(dir.path(), &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        if json.is_empty() {
            // `-q`: no summary printed, nothing cut.
            assert!(
                !err.contains("standard output was closed"),
                "{args:?}: {err}"
            );
        } else {
            assert!(
                said(&err, &cut("record's summary", "the run's")),
                "{args:?}: {err}"
            );
        }
    }
    // A full one is an error, naming standard output.
    if let Some(full) = crate::util::dev_full() {
        let out = hrx_trace(dir.path())
            .args(["-q", "replay", "h.hrxt"])
            .stdout(full)
            .output()
            .unwrap();
        assert_error(
            &out,
            "cannot write the report of the replay of h.hrxt to standard output: No space left",
        );
    }
    // A regression keeps its exit code: the CUDA recording of `faults` fails elsewhere on
    // the software device (`hrx-trace replay F | head` in CI must still fail).
    let cuda = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tui/tests/data/faults-cuda-h200.hrxt"
    );
    // (`--backend sim`: the default, auto, would pick CUDA where it is.)
    let sim = ["--backend", "sim"];
    let out = run(dir.path(), &["replay", cuda, sim[0], sim[1]]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    for report in ["json", "text"] {
        let args = ["replay", cuda, sim[0], sim[1], "--report", report];
        let out = run_into_closed_stdout(dir.path(), &args);
        assert_eq!(code(&out), 1, "--report {report}: {}", stderr(&out));
        let cut = cut(
            &format!("the report of the replay of {}", cuda),
            "the verdict's",
        );
        assert!(
            said(&stderr(&out), &cut),
            "--report {report}: {}",
            stderr(&out)
        );
    }
}

/// `--add-to-baseline` adds each replay as one more run of a baseline (a new file its first
/// run), says how many runs it holds and how far their medians lie apart, and `--baseline`
/// judges against it naming its runs; another recording's replay is refused before it
/// replays, and the flag does not go with `--save-baseline`, `--inject-slowdown`, or the
/// file judged.
#[test]
fn replays_added_to_a_baseline_are_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let add = |file: &str| {
        run(
            dir.path(),
            &[
                "replay",
                file,
                "--add-to-baseline",
                "b.json",
                "--repeat",
                "7",
            ],
        )
    };
    let first = add("h.hrxt");
    assert_eq!(code(&first), 0, "{}{}", stdout(&first), stderr(&first));
    assert!(
        stderr(&first).contains("baseline saved to b.json ("),
        "{}",
        stderr(&first)
    );
    for runs in 2..=3 {
        let more = add("h.hrxt");
        assert_eq!(code(&more), 0, "{}{}", stdout(&more), stderr(&more));
        let said = stderr(&more);
        assert!(
            said.contains(&format!("baseline b.json now holds {runs} runs (")),
            "{said}"
        );
        assert!(said.contains("its runs' medians lie at most "), "{said}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("b.json")).unwrap()).unwrap();
    assert_eq!(json["runs"], 3);
    let rows = json["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(row["runs"].as_array().map(Vec::len), Some(3), "{row}");
    }
    let judged = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--baseline",
            "b.json",
            "--max-slowdown",
            "1e9",
            "--repeat",
            "7",
        ],
    );
    assert_eq!(code(&judged), 0, "{}{}", stdout(&judged), stderr(&judged));
    // Each row's floor is its own: the header names the widest and the typical one.
    let header = stdout(&judged)
        .lines()
        .find(|l| l.starts_with("against the baseline of 3 runs, each row's floor how far its runs' medians lay apart: "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{}", stdout(&judged)));
    assert!(header.contains(" at the median row, at most "), "{header}");
    assert!(
        !header.contains("  "),
        "one sentence, single-spaced: {header}"
    );
    assert!(
        !stdout(&judged).contains("another pace"),
        "{}",
        stdout(&judged)
    );
    // The baseline keeps its pace: a replay at another is judged with a note, and is no
    // run of it: refused before it replays (one line, exit 2, no report; the baseline
    // untouched), where it was refused after the whole replay.
    let before = std::fs::read_to_string(dir.path().join("b.json")).unwrap();
    assert!(before.contains("\"pace_captured\": false"), "{before}");
    let paced = |more: &[&str]| {
        let mut args = vec!["replay", "h.hrxt", "--pace", "captured", "--repeat", "7"];
        args.extend_from_slice(more);
        run(dir.path(), &args)
    };
    let judged = paced(&["--baseline", "b.json", "--max-slowdown", "1e9"]);
    assert_eq!(code(&judged), 0, "{}{}", stdout(&judged), stderr(&judged));
    let out = stdout(&judged);
    let line = out
        .lines()
        .find(|l| l.contains("was replayed at --pace none, this replay at --pace captured"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!line.trim_start().contains("  "), "single-spaced: {line}");
    assert!(line.contains("submissions ran at another pace"), "{line}");
    let added = paced(&["--add-to-baseline", "b.json"]);
    assert_error(
        &added,
        "error: --add-to-baseline b.json: saved from replays at --pace none, this replay at \
         --pace captured: a baseline's runs are of one pace",
    );
    // Its hint single-spaced (it held 26 spaces where a line's `\` was lost).
    assert!(
        stderr(&added).contains(
            "\nhint: add it at the baseline's pace (--pace), or save a baseline of this pace to \
             another file (--save-baseline)\n"
        ),
        "{}",
        stderr(&added)
    );
    assert_eq!(stdout(&added), "", "replayed before it was refused");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.json")).unwrap(),
        before
    );
    // Another recording: refused before replaying, the baseline untouched.
    record_hazards(dir.path(), "h2.hrxt");
    let before = std::fs::read_to_string(dir.path().join("b.json")).unwrap();
    let other = add("h2.hrxt");
    assert_error(
        &other,
        "--add-to-baseline b.json: saved from another recording",
    );
    assert_eq!(stdout(&other), "");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.json")).unwrap(),
        before
    );
    for extra in [
        &["--save-baseline", "c.json"][..],
        &["--inject-slowdown", "fill=10"][..],
    ] {
        let mut args = vec!["replay", "h.hrxt", "--add-to-baseline", "b.json"];
        args.extend_from_slice(extra);
        let both = run(dir.path(), &args);
        assert_eq!(code(&both), 2, "{}", stderr(&both));
        assert!(
            stderr(&both).contains("cannot be used with"),
            "{}",
            stderr(&both)
        );
    }
    let judged_too = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--baseline",
            "b.json",
            "--add-to-baseline",
            "./b.json",
        ],
    );
    assert_error(
        &judged_too,
        "--add-to-baseline ./b.json: the baseline this replay is judged against",
    );
}

/// Replays added to one baseline at once, each its own process, all count (each read the
/// baseline as its replay began and wrote it as it ended: the later write dropped the other's
/// run, both saying it was added); a baseline named by a symbolic link is added to through
/// it, the link kept.
#[test]
fn replays_added_to_a_baseline_at_once_all_count() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let args = [
        "replay",
        "h.hrxt",
        "--add-to-baseline",
        "b.json",
        "--repeat",
        "7",
    ];
    let first = run(dir.path(), &args);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let adds: Vec<_> = (0..2)
        .map(|_| {
            hrx_trace(dir.path())
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for add in adds {
        let out = add.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let runs = |name: &str| {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
        json["runs"].clone()
    };
    assert_eq!(runs("b.json"), 3);
    std::os::unix::fs::symlink("b.json", dir.path().join("link.json")).unwrap();
    let mut through = args;
    through[3] = "link.json";
    let out = run(dir.path(), &through);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.json"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(runs("b.json"), 4);
}

/// `--save-baseline` and `--add-to-baseline` through a symbolic link to a file not yet made
/// write that file and keep the link, as `export -o` through such a link does (one function
/// resolves it for both, `hrx_capture::replace::written_through`); the baseline replaced the
/// link with a file of its own, its target never made (break-it E4).
#[test]
fn a_baseline_through_a_dangling_link_is_written_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for sub in ["real", "real2"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let is_link = |name: &str| {
        std::fs::symlink_metadata(dir.path().join(name))
            .unwrap()
            .is_symlink()
    };
    let runs = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["runs"].clone()
    };
    for (flag, link, target) in [
        ("--save-baseline", "real/save.json", "real2/save.json"),
        ("--add-to-baseline", "real/add.json", "real2/add.json"),
    ] {
        let name = std::path::Path::new(target)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        std::os::unix::fs::symlink(format!("../real2/{name}"), dir.path().join(link)).unwrap();
        let out = run(
            dir.path(),
            &[
                "replay", "h.hrxt", flag, link, "--repeat", "1", "--warmup", "0",
            ],
        );
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
        assert!(is_link(link), "{flag}: the link was replaced");
        assert_eq!(runs(target), 1, "{flag}");
        assert_eq!(runs(link), 1, "{flag}");
    }
    // As the export writes through such a link.
    std::os::unix::fs::symlink("../real2/x.json", dir.path().join("real/x.json")).unwrap();
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "real/x.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(is_link("real/x.json"));
    assert!(dir.path().join("real2/x.json").is_file());
    // Nothing left beside the links or their targets.
    for sub in ["real", "real2"] {
        let left: Vec<_> = std::fs::read_dir(dir.path().join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains("partial"))
            .collect();
        assert!(left.is_empty(), "{sub}: {left:?}");
    }
}

/// Through a chain of links ending in a file not yet made (`c2 -> c1 -> real/OUT`), a
/// baseline saved or added to, an export and a trim write `real/OUT` and keep both links
/// (`hrx_capture::replace::written_through` follows the chain, as the kernel does for
/// `record -o`): one `read_link` replaced the middle link `c1` with a file, `real/OUT` never
/// made (break-it D2). A loop of links is one `error:` line, exit 2, the links kept.
#[test]
fn every_writer_follows_a_chain_of_links_to_a_file_not_yet_made() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    std::fs::create_dir(dir.path().join("real")).unwrap();
    let is_link = |name: &str| {
        std::fs::symlink_metadata(dir.path().join(name))
            .unwrap()
            .is_symlink()
    };
    let replay = |flag: &'static str| -> Vec<&'static str> {
        vec![
            "replay", "h.hrxt", flag, "c2", "--repeat", "1", "--warmup", "0",
        ]
    };
    for (target, args) in [
        ("b.json", replay("--save-baseline")),
        ("a.json", replay("--add-to-baseline")),
        (
            "e.json",
            vec!["export", "h.hrxt", "--format", "chrome", "-o", "c2"],
        ),
        (
            "t.hrxt",
            vec!["trim", "h.hrxt", "-o", "c2", "--submissions", "1.."],
        ),
    ] {
        for link in ["c1", "c2"] {
            let _ = std::fs::remove_file(dir.path().join(link));
        }
        std::os::unix::fs::symlink(format!("real/{target}"), dir.path().join("c1")).unwrap();
        std::os::unix::fs::symlink("c1", dir.path().join("c2")).unwrap();
        let out = run(dir.path(), &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(is_link("c1"), "{args:?}: the middle link was replaced");
        assert!(is_link("c2"), "{args:?}: the first link was replaced");
        assert!(
            dir.path().join("real").join(target).is_file(),
            "{args:?}: real/{target} was never made"
        );
    }
    // A loop: c2 -> c1 -> c2.
    for link in ["c1", "c2"] {
        std::fs::remove_file(dir.path().join(link)).unwrap();
    }
    std::os::unix::fs::symlink("c2", dir.path().join("c1")).unwrap();
    std::os::unix::fs::symlink("c1", dir.path().join("c2")).unwrap();
    for args in [
        replay("--save-baseline"),
        vec!["export", "h.hrxt", "--format", "chrome", "-o", "c2"],
        vec!["trim", "h.hrxt", "-o", "c2", "--submissions", "1.."],
    ] {
        let out = run(dir.path(), &args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(err.contains("symbolic links"), "{args:?}: {err}");
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: {err}");
        assert!(
            is_link("c1") && is_link("c2"),
            "{args:?}: a link was replaced"
        );
    }
}

/// `--save-baseline` writes the replay's timings; `--baseline` judges a later replay against
/// them (and against the capture), saying so in the verdict line and in a table of its own;
/// a baseline that is missing or none is one line, exit 2, before anything is replayed;
/// `--warmup` is said on the `replayed:` line.
#[test]
fn a_saved_baseline_judges_a_later_replay() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let saved = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--save-baseline",
            "b.json",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(code(&saved), 0, "{}{}", stdout(&saved), stderr(&saved));
    // Saved for a gate: the gate's 10 repeats unless asked otherwise.
    assert!(
        stdout(&saved).contains(", 10 repeats\n"),
        "{}",
        stdout(&saved)
    );
    let text = std::fs::read_to_string(dir.path().join("b.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["hrx_replay_baseline"], 2);
    assert!(
        json["rows"].as_array().is_some_and(|r| !r.is_empty()),
        "{json}"
    );
    // A threshold no loaded machine reaches: the wiring is under test, not the timing.
    let against_baseline = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "h.hrxt",
            "--baseline",
            "b.json",
            "--max-slowdown",
            "1e9",
            "--repeat",
            "7",
        ];
        args.extend_from_slice(extra);
        run(dir.path(), &args)
    };
    let judged = against_baseline(&[]);
    // (7 repeats: a row needs 7 samples a side to be judged; one judging nothing fails.)
    assert_eq!(code(&judged), 0, "{}{}", stdout(&judged), stderr(&judged));
    let out = stdout(&judged);
    assert!(out.contains("7 repeats after 1 warm-up"), "{out}");
    assert!(out.contains(", 0 slow against the baseline"), "{out}");
    assert!(out.contains("against the baseline (0 of "), "{out}");
    assert!(out.contains("host: "), "{out}");
    // Operation rows against a baseline saved without them: not judged, and said why.
    let per_op = against_baseline(&["--per-op"]);
    let out = stdout(&per_op);
    assert_eq!(code(&per_op), 0, "{out}{}", stderr(&per_op));
    assert!(
        out.contains("in the baseline (saved from a replay of h.hrxt): not judged against it; the baseline holds no operation rows: save it with --per-op"),
        "{out}"
    );
    // Another recording's baseline judges nothing: the gate fails (exit 2), never passes.
    record_hazards(dir.path(), "h2.hrxt");
    let other = run(dir.path(), &["replay", "h2.hrxt", "--baseline", "b.json"]);
    assert_error(&other, "baseline b.json: saved from another recording");
    // Refused before anything is replayed, from the trace's session start: a recording with
    // nothing to replay is told the baseline is not its own (a replay first said it holds
    // no submission).
    record_idle(&dir.path().join("idle.hrxt"));
    let idle = run(dir.path(), &["replay", "idle.hrxt", "--baseline", "b.json"]);
    assert_error(&idle, "baseline b.json: saved from another recording");
    assert_eq!(stdout(&idle), "");
    // Without a maximum slowdown nothing is judged, and the verdict says so.
    let plain = stdout(&run(dir.path(), &["replay", "h.hrxt"]));
    assert!(
        plain.contains("timing not judged (no --max-slowdown)") && !plain.contains("0 slow"),
        "{plain}"
    );
    let missing = run(dir.path(), &["replay", "h.hrxt", "--baseline", "gone.json"]);
    assert_error(&missing, "baseline gone.json: cannot read it: No such file");
    let trace = run(dir.path(), &["replay", "h.hrxt", "--baseline", "h.hrxt"]);
    assert_error(
        &trace,
        "baseline h.hrxt: not a replay baseline: not JSON text (a trace?",
    );
    std::fs::write(dir.path().join("x.json"), "[1, 2]").unwrap();
    let none = run(dir.path(), &["replay", "h.hrxt", "--baseline", "x.json"]);
    assert_error(&none, "baseline x.json: not a replay baseline");
    // A ratio as the reports write it.
    let x = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--max-slowdown",
            "1e9x",
            "--repeat",
            "2",
        ],
    );
    assert_eq!(code(&x), 0, "{}", stderr(&x));
    let same = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--baseline",
            "b.json",
            "--save-baseline",
            "./b.json",
        ],
    );
    assert_error(&same, "the baseline this replay is judged against");
    let json = run(dir.path(), &["replay", "h.hrxt", "--json"]);
    assert_error(&json, "--json");
    assert!(stderr(&json).contains("hint: replay writes its report as JSON with --report json"));
    // The other way round: a reading verb's JSON is `--json` (clap's tip told to pass
    // `--report` as a value after `--`).
    for verb in ["stats", "info", "diff"] {
        let report = run(dir.path(), &[verb, "h.hrxt", "--report", "json"]);
        assert_error(&report, "--report");
        assert!(
            stderr(&report).contains(&format!(
                "hint: {verb} writes JSON with --json (--report json is replay's)"
            )),
            "{}",
            stderr(&report)
        );
    }
    let bad = run(dir.path(), &["replay", "h.hrxt", "--max-slowdown", "fast"]);
    assert_error(&bad, "expected a ratio such as 1.2 or 1.2x");
    let warmups = run(dir.path(), &["replay", "h.hrxt", "--warmup", "11"]);
    assert_error(&warmups, "give 0 to 10");
    // Never over a trace (the one replayed included), refused before replaying.
    let before = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    let over = run(
        dir.path(),
        &["replay", "h.hrxt", "--save-baseline", "h.hrxt"],
    );
    assert_error(
        &over,
        "refusing to overwrite it: it is not a replay baseline",
    );
    assert_eq!(std::fs::read(dir.path().join("h.hrxt")).unwrap(), before);
    let nowhere = run(
        dir.path(),
        &["replay", "h.hrxt", "--save-baseline", "no/b.json"],
    );
    assert_error(&nowhere, "cannot write it: no directory no");
}

/// Records the pipeline workload (its built-in photograph, 64 pixels wide) over `frames`
/// frames, three in flight, into `dir/name`; panics unless it exits 0.
fn record_small_pipeline(dir: &std::path::Path, name: &str, frames: &str) {
    let args = [
        "record",
        "--workload",
        "pipeline",
        "--frames",
        frames,
        "--in-flight",
        "3",
        "--max-width",
        "64",
        "--backend",
        "sim",
        "-o",
        name,
    ];
    let out = run(dir, &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// A 12-frame recording with three frames in flight: its three identical prepared graphs
/// are one row of each region (`"graphs": [1, 2, 3]`, `1-3` in the text) with 12 captured
/// samples, judged, not too few; a baseline saved and judged keys the same pooled rows.
#[test]
fn a_twelve_frame_pipeline_pools_its_frame_contexts_into_judged_rows() {
    let dir = tempfile::tempdir().unwrap();
    record_small_pipeline(dir.path(), "p.hrxt", "12");
    // A ratio no machine reaches: which rows are judged is under test, not their times.
    let args = [
        "replay",
        "p.hrxt",
        "--max-slowdown",
        "1e9",
        "--repeat",
        "2",
        "--report",
        "json",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = report["timing"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{report:#}");
    for row in rows {
        assert_eq!(row["graphs"], serde_json::json!([1, 2, 3]), "{row:#}");
        assert_eq!(row["graph"], 1);
        assert_eq!(row["captured"]["samples"], 12, "{row:#}");
        assert_eq!(row["too_few"], false, "{row:#}");
        assert!(row["interval"].is_array(), "{row:#}");
    }
    assert_eq!(report["summary"]["too_few"], 0);
    let text = stdout(&run(dir.path(), &args[..6]));
    // No row too few to judge (whether a live timing row is too spread is the run's).
    assert!(!text.contains("with too few samples"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("1-3 ") && l.contains("(n=12)")),
        "{text}"
    );

    // Saved and judged against: the pooled rows, every one found and judged.
    let saved = run(
        dir.path(),
        &[
            "replay",
            "p.hrxt",
            "--save-baseline",
            "b.json",
            "--repeat",
            "2",
        ],
    );
    assert_eq!(code(&saved), 0, "{}{}", stdout(&saved), stderr(&saved));
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("b.json")).unwrap()).unwrap();
    let saved_rows = baseline["rows"].as_array().unwrap();
    assert_eq!(saved_rows.len(), 4);
    assert!(
        saved_rows
            .iter()
            .all(|r| r["graphs"] == serde_json::json!([1, 2, 3]))
    );
    let judged = run(
        dir.path(),
        &[
            "replay",
            "p.hrxt",
            "--baseline",
            "b.json",
            "--max-slowdown",
            "1e9",
            "--repeat",
            "2",
        ],
    );
    assert_eq!(code(&judged), 0, "{}{}", stdout(&judged), stderr(&judged));
    let out = stdout(&judged);
    assert!(out.contains("against the baseline (0 of 4 slow"), "{out}");
    assert!(!out.contains("too few to judge against it"), "{out}");

    // A baseline of version 1 (rows per graph) is one line saying to save it again.
    let mut old = baseline.clone();
    old["hrx_replay_baseline"] = 1.into();
    std::fs::write(dir.path().join("old.json"), old.to_string()).unwrap();
    let refused = run(dir.path(), &["replay", "p.hrxt", "--baseline", "old.json"]);
    assert_error(&refused, "save it again with --save-baseline");
}

/// `--inject-slowdown ENTRY=PERCENT` (a test of a timing gate) slows a kernel the trace
/// loads, keeps its outputs (the replay still matches) and is said on the `replayed:` line and
/// in the JSON; a kernel no graph of the trace runs is refused naming those it does; a malformed
/// value, a zero percent and `--save-baseline` beside it are one line each, exit 2.
#[test]
fn an_injected_slowdown_is_said_and_a_kernel_it_cannot_find_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let unknown = run(
        dir.path(),
        &["replay", "h.hrxt", "--inject-slowdown", "hrx_nope=15"],
    );
    assert_error(
        &unknown,
        "names kernel hrx_nope, which no graph of the trace runs",
    );
    let err = stderr(&unknown);
    let known = err
        .split("(its GPU kernels: ")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .unwrap_or_else(|| panic!("no kernel listed: {err}"))
        .to_owned();
    let slowed = format!("{known}=40");
    let text = run(
        dir.path(),
        &["replay", "h.hrxt", "--inject-slowdown", &slowed],
    );
    assert_eq!(code(&text), 0, "{}{}", stdout(&text), stderr(&text));
    let out = stdout(&text);
    assert!(
        out.contains(&format!(
            "slowed on purpose (--inject-slowdown): {known} +40%"
        )),
        "{out}"
    );
    let json = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--inject-slowdown",
            &format!("{known}=5"),
            "--inject-slowdown",
            &slowed,
            "--report",
            "json",
        ],
    );
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        report["replay"]["slowdowns"],
        serde_json::json!([{"entry": known, "percent": 40}]),
        "the last one given for an entry wins"
    );
    assert_eq!(report["verdict"], "same");
    // Not judged (no gate option): nothing to say of what was not caught.
    assert!(
        !stderr(&json).contains("was not caught"),
        "{}",
        stderr(&json)
    );
    // Judged and missed (a 5% slowdown under a 50x gate): said, as the gate's own test failed.
    let missed = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--inject-slowdown",
            &format!("{known}=5"),
            "--max-slowdown",
            "50",
        ],
    );
    assert_eq!(code(&missed), 0, "{}", stderr(&missed));
    let said = stderr(&missed);
    let line = said
        .lines()
        .find(|l| {
            l.contains(&format!(
                "the slowdown injected on purpose ({known} +5%) was not caught"
            ))
        })
        .unwrap_or_else(|| panic!("{said}"));
    assert!(!line.contains("  "), "one sentence, single-spaced: {line}");
    // Without `--per-op` the region rows naming it say why (they said nothing of any row: a
    // break-it pass).
    assert!(
        line.contains(&format!("{known}'s region (graph "))
            && line.contains("against the capture: "),
        "{line}"
    );
    let plain = run(dir.path(), &["replay", "h.hrxt", "--report", "json"]);
    let plain: serde_json::Value = serde_json::from_str(&stdout(&plain)).unwrap();
    assert!(plain["replay"].get("slowdowns").is_none());
    for (value, says) in [
        (known.as_str(), "expected ENTRY=PERCENT"),
        ("=15", "no kernel entry"),
        (&format!("{known}=0"), "a whole percent from 1 to 1000"),
        (&format!("{known}=x"), "a whole percent from 1 to 1000"),
        (&format!("{known}=5%%"), "a whole percent from 1 to 1000"),
    ] {
        let bad = run(
            dir.path(),
            &["replay", "h.hrxt", "--inject-slowdown", value],
        );
        assert_error(&bad, says);
    }
    let saved = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--inject-slowdown",
            &slowed,
            "--save-baseline",
            "b.json",
        ],
    );
    assert_error(&saved, "--save-baseline");
    assert!(!dir.path().join("b.json").exists());
}

/// `--report json` spools its rows in the temporary directory: a `TMPDIR` that does not exist
/// is named, with what to do (it said "No such file or directory" and no path).
#[test]
fn a_missing_temporary_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let missing = dir.path().join("missing");
    let out = hrx_trace(dir.path())
        .args(["replay", "--report", "json", "h.hrxt"])
        .env("TMPDIR", &missing)
        .output()
        .unwrap();
    assert_error(
        &out,
        &format!(
            "cannot create a temporary file for the JSON report in {}",
            missing.display()
        ),
    );
    assert!(
        stderr(&out).contains("hint: set TMPDIR"),
        "{}",
        stderr(&out)
    );
    assert!(!missing.exists());
}

/// A damaged block that held a host write's contents (its blob): `replay` names the blob,
/// the write and the first submission that needs it, and its hint a trim before that
/// submission, which replays. The hint pointed to `info`, which reports the damaged block
/// but neither the blob nor the submissions that need it.
#[test]
fn a_lost_blob_names_the_submission_that_needs_it_and_a_trim_that_replays() {
    use hrx_capture::schema::Record;
    let Some(photo) = crate::util::photo() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let recorded = run(
        dir.path(),
        &[
            "record",
            "-o",
            "p.hrxt",
            "--workload",
            "pipeline",
            "--input",
            photo.parent().unwrap().to_str().unwrap(),
            "--frames",
            "4",
            "--max-width",
            "320",
        ],
    );
    assert_eq!(code(&recorded), 0, "{}", stderr(&recorded));
    // The last block of a blob alone: the last frame's photograph (four photographs of the
    // folder, each stored once; over 64 KiB, so a block of its own), which only the last
    // frame's submission reads. One byte of its payload flipped: the block is skipped. (A
    // block that also held other records, a `Submit` among them as the writer's timing
    // decides, lost a submission too: the replay then said that instead, now and then.)
    let path = dir.path().join("p.hrxt");
    let trace = hrx_capture::MappedTrace::open(&path).unwrap();
    let block = (0..trace.blocks().len())
        .rev()
        .find(|&i| {
            let records = trace.read_block(i).unwrap().records;
            !records.is_empty() && records.iter().all(|r| matches!(r, Record::Blob(_)))
        })
        .expect("a block of a blob alone");
    let info = trace.blocks()[block];
    drop(trace);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = info.offset as usize
        + hrx_capture::format::BLOCK_HEADER_LEN
        + info.header.stored_len as usize / 2;
    bytes[at] ^= 0xff;
    std::fs::write(dir.path().join("flip.hrxt"), &bytes).unwrap();

    let replay = run(dir.path(), &["replay", "flip.hrxt"]);
    assert_eq!(code(&replay), 2, "{}", stderr(&replay));
    let err = stderr(&replay);
    let error = err.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(error.contains("host write into buffer"), "{err}");
    let needs = error
        .split(" is not in the trace, and submission ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" of runtime 1 needs it"))
        .unwrap_or_else(|| panic!("no blob and submission named: {err}"));
    let n: u64 = needs.parse().unwrap();
    assert!(n > 1, "{err}");
    let hint = err.lines().find(|l| l.starts_with("hint: ")).unwrap();
    assert!(
        hint.contains(&format!("--submissions ..{n}`")) && !hint.contains("info"),
        "{err}"
    );
    // The hint holds as written (it said `A..{n}`, which `trim` refuses): the submissions
    // before it trim into a trace that replays.
    let range = format!("..{n}");
    let trim = run(
        dir.path(),
        &["trim", "flip.hrxt", "-o", "t.hrxt", "--submissions", &range],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    let replay = run(dir.path(), &["replay", "t.hrxt"]);
    assert_eq!(code(&replay), 0, "{}{}", stdout(&replay), stderr(&replay));
}

/// `replay` of a trim says it replays a range of a recording, which (as `info` words it):
/// the submissions outside it are not compared. Only the submission numbers in its table
/// showed it.
#[test]
fn replay_of_a_trim_says_it_is_a_range() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards_trimmed(dir.path());
    let note = "the trace is a range: trimmed from whole.hrxt, submissions 2..4 \
                (submissions:2..4): only its submissions are replayed and compared";
    let out = run(dir.path(), &["replay", "--backend", "sim", "t.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains(note), "{}", stdout(&out));
    let out = run(
        dir.path(),
        &["replay", "--backend", "sim", "--report", "json", "t.hrxt"],
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        json["notes"].as_array().unwrap().iter().any(|n| n == note),
        "{}",
        json["notes"]
    );
    let out = run(dir.path(), &["replay", "--backend", "sim", "whole.hrxt"]);
    assert!(
        !stdout(&out).contains("the trace is a range"),
        "{}",
        stdout(&out)
    );
}

/// A streamed replay runs its repeats side by side, each holding its own buffers:
/// `--repeat 3` of a trace with a 48 MiB buffer needs 144 MiB of device memory. Where the
/// memory for another repeat runs out (here the software device's, `HRX_SIM_MEMORY=64M`),
/// the replay goes on with those it could open and says so, as a note in the text and the
/// JSON, whose `repeat` is the count that ran; it failed with "out of device memory"
/// before, a replay that can run refused.
#[test]
fn a_replay_out_of_memory_for_its_repeats_side_by_side_runs_fewer_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("big.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let big = rt.buffer(48 << 20, hrx::Placement::GpuLocal).unwrap();
    let out = rt.buffer(256, hrx::Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    let head = big.view(0..256).unwrap();
    // The copy reads what the fill wrote: ordered by the hazard on those bytes.
    graph.fill(head.clone(), 7).unwrap();
    graph.copy(out.whole(), head).unwrap();
    let prepared = graph.prepare().unwrap();
    for _ in 0..3 {
        prepared.submit().unwrap().wait().unwrap();
    }
    drop((prepared, big, out, rt));
    recorder.close().unwrap();

    let replay = |extra: &[&str]| {
        hrx_trace(dir.path())
            .env("HRX_SIM_MEMORY", "64M")
            .args(["replay", "big.hrxt", "--repeat", "3"])
            .args(extra)
            .output()
            .unwrap()
    };
    let text = replay(&[]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    // (The runtime's number is this test process's: runtimes count per process.)
    let said = "replayed 1 time, not 3: a streamed replay holds its repeats side by side, \
                each with its own buffers, and replay 2 ran out of memory";
    assert!(stdout(&text).contains(said), "{}", stdout(&text));
    let json = replay(&["--report", "json"]);
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["replay"]["repeat"], 1, "{report}");
    let notes = report["notes"].as_array().expect("notes");
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains(said))),
        "{notes:?}"
    );
}

/// Two runtimes in one trace, each with a 24 MiB buffer the program still held when its
/// trace closed (so the replay holds them to the end), replayed with `--repeat 2` under
/// `HRX_SIM_MEMORY=64M`: the first runtime's two repeats took 48 MiB, and the second's first
/// session ran out: "cannot replay", where `--repeat 1` ran. Now the first gives a repeat
/// back, the second opens, and the notes say which ran fewer and why. (A buffer the trace
/// says the program let go of, the replay lets go of too: `replay_released`.)
#[test]
fn a_later_runtime_out_of_memory_beside_earlier_repeats_takes_one_back() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("two.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .unwrap();
    let mut held = Vec::new();
    for fill in [1, 2] {
        let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        let big = rt.buffer(24 << 20, hrx::Placement::GpuLocal).unwrap();
        let out = rt.buffer(256, hrx::Placement::HostVisible).unwrap();
        let mut graph = rt.graph();
        let head = big.view(0..256).unwrap();
        graph.fill(head.clone(), fill).unwrap();
        graph.copy(out.whole(), head).unwrap();
        graph.prepare().unwrap().submit().unwrap().wait().unwrap();
        held.push((rt, big, out));
    }
    recorder.close().unwrap();
    drop(held);
    let replay = |repeat: &str| {
        hrx_trace(dir.path())
            .env("HRX_SIM_MEMORY", "64M")
            .args(["replay", "two.hrxt", "--repeat", repeat])
            .output()
            .unwrap()
    };
    let one = replay("1");
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    let two = replay("2");
    assert_eq!(code(&two), 0, "{}{}", stdout(&two), stderr(&two));
    let said = "replayed 1 time, not 2: a streamed replay holds every runtime's repeats side by \
                side, each with its own buffers, and runtime";
    assert!(stdout(&two).contains(said), "{}", stdout(&two));
    assert!(stdout(&two).contains("verdict: SAME"), "{}", stdout(&two));
}

/// `HRX_SIM_MEMORY` that is not a size above 0 (0 would fail every allocation) is one line
/// naming it, before anything runs.
#[test]
fn a_bad_software_device_memory_size_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["lots", "0"] {
        let record = hrx_trace(dir.path())
            .env("HRX_SIM_MEMORY", bad)
            .args(["record", "--workload", "hazards", "-o", "h.hrxt"])
            .output()
            .unwrap();
        assert_eq!(code(&record), 2, "{}", stderr(&record));
        let said = format!(
            "HRX_SIM_MEMORY: expected a size in bytes above 0 such as 1048576, 64M or 2G, got \
             {bad:?}"
        );
        assert!(stderr(&record).contains(&said), "{}", stderr(&record));
        assert_eq!(stderr(&record).lines().count(), 1, "{}", stderr(&record));
    }
}

/// A workload that fails before it can report (the pipeline's buffers out of device memory)
/// says that its trace was written and closed without the error, before the error line;
/// `record` printed the error alone, and the trace (closed cleanly, no failure in it) said
/// nothing of it.
#[test]
fn a_workload_that_fails_while_it_builds_says_its_trace_lacks_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let record = hrx_trace(dir.path())
        .env("HRX_SIM_MEMORY", "8M")
        .args([
            "record",
            "--workload",
            "pipeline",
            "--backend",
            "sim",
            "-o",
            "p.hrxt",
        ])
        .args(["--input", crate::util::PHOTO])
        .output()
        .unwrap();
    assert_eq!(code(&record), 2, "{}", stderr(&record));
    let err = stderr(&record);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[lines.len() - 2],
        "note: p.hrxt was written and closed: it holds what ran before the error below, not \
         the error itself",
        "{err}"
    );
    assert!(
        lines[lines.len() - 1]
            .starts_with("error: cannot build the pipeline: out of device memory"),
        "{err}"
    );
}

/// A recording of two submitting threads killed (or cut with `head -c`) mid-run can lack
/// one thread's last `Submit`s, still in its buffer or in the torn last block, while the
/// other thread's later submissions are in the file. Built here from a real two-thread
/// recording (`host_visible`), deterministically: the `Submit`s of every other submission
/// from 41 on left out (one thread's unwritten tail; the waiting threads' completions and
/// digests of them kept), the file cut before its index and a few bytes of a torn block
/// after it. The trace ends before submission 41: `replay` replays 1..=40 and leaves the rest
/// out with a note (it exited 2, "1 submission between those it holds has no Submit (lost
/// while recording, or with a damaged block)"), `info` says where it ends rather than
/// "missing", and `diff` against the whole trace says "same as far as both traces go"
/// (it said "different", the held submissions counted as "in one trace only"): D4 of the
/// scale pass.
#[test]
fn a_killed_two_thread_trace_ends_before_the_first_submit_it_lacks() {
    use hrx_capture::Record;
    let dir = tempfile::tempdir().unwrap();
    let recorded = hrx_trace(dir.path())
        .args(["record", "-q", "-o", "rec.hrxt", "--"])
        .arg(crate::util::example("host_visible"))
        .args(["60", "2"])
        .output()
        .unwrap();
    assert_eq!(code(&recorded), 0, "{}", stderr(&recorded));
    let records = hrx_capture::read_all(dir.path().join("rec.hrxt"))
        .unwrap()
        .records;
    // Both written by the same recorder, so that the cut one is the whole one's prefix but
    // for what its thread did not write.
    crate::util::write_records(&dir.path().join("whole.hrxt"), records.iter().cloned());
    let unwritten = |r: &Record| matches!(r, Record::Submit(s) if s.submission.0 >= 41 && s.submission.0 % 2 == 1);
    let cut_path = dir.path().join("cut.hrxt");
    let held = records.iter().filter(|r| !unwritten(r)).cloned();
    crate::util::write_records_ending(&cut_path, held, true);
    let closed = std::fs::read(&cut_path).unwrap();
    let footer = hrx_capture::format::decode_trailer(&closed[closed.len() - 16..]).unwrap();
    // Killed: no session end either (the last block alone; a file cut after it was closed
    // by its recorder).
    let mut cut = closed[..crate::util::last_records_block(&closed)].to_vec();
    // A torn block: the start of the footer's.
    cut.extend_from_slice(&closed[footer as usize..footer as usize + 20]);
    std::fs::write(&cut_path, &cut).unwrap();

    let replay = run(dir.path(), &["replay", "cut.hrxt"]);
    let (out, err) = (stdout(&replay), stderr(&replay));
    assert_eq!(code(&replay), 0, "{out}{err}");
    assert!(
        out.contains("verdict: SAME AS FAR AS THE TRACE GOES"),
        "{out}"
    );
    assert!(
        out.contains(
            "runtime 1: the trace ends before submission 41, the first whose Submit it lacks"
        ) && out.contains(
            "10 submissions it holds (written by other threads) and 10 submissions without a Submit"
        ),
        "{out}"
    );
    let json = run(dir.path(), &["replay", "cut.hrxt", "--report", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        report["verdict"], "same_as_far_as_the_trace_goes",
        "{report:#}"
    );
    assert_eq!(
        report["submissions"].as_array().unwrap().len(),
        40,
        "{report:#}"
    );

    let info = run(dir.path(), &["info", "cut.hrxt"]);
    let out = stdout(&info);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert!(
        !out.contains("of its submissions 1..=60 are missing"),
        "{out}"
    );
    assert!(
        out.contains("runtime 1: the trace ends before submission 41 (never closed: the Submit of 10 of its submissions 41..=60 was never written, and 10 later ones it holds are past where it ends)"),
        "{out}"
    );
    let json = run(dir.path(), &["info", "--json", "cut.hrxt"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["closed"]["missing_submissions"], 0, "{report:#}");
    assert_eq!(report["closed"]["unwritten_submissions"], 10, "{report:#}");

    let diff = run(dir.path(), &["diff", "whole.hrxt", "cut.hrxt"]);
    let out = stdout(&diff);
    assert_eq!(code(&diff), 0, "{out}{}", stderr(&diff));
    assert!(
        crate::util::field(&out, "verdict").starts_with("same as far as both traces go (exit 0)"),
        "{out}"
    );
}

/// A replay whose run cannot be added to its baseline once it is done (the baseline was
/// replayed on another device, which only the replay tells) prints its report, then the
/// one-line error, exit 2, the baseline unchanged (the report was lost: only the error was
/// printed).
#[test]
fn a_baseline_add_that_fails_after_the_replay_prints_the_report_first() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let saved = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--save-baseline",
            "b.json",
            "--repeat",
            "7",
        ],
    );
    assert_eq!(code(&saved), 0, "{}", stderr(&saved));
    let path = dir.path().join("b.json");
    let mut baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    baseline["device"] = "another device".into();
    let elsewhere = serde_json::to_string_pretty(&baseline).unwrap();
    std::fs::write(&path, &elsewhere).unwrap();
    let added = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--add-to-baseline",
            "b.json",
            "--repeat",
            "7",
        ],
    );
    assert_eq!(code(&added), 2, "{}{}", stdout(&added), stderr(&added));
    assert!(
        stdout(&added).contains("verdict: SAME"),
        "{}",
        stdout(&added)
    );
    let err = stderr(&added);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: "), "{err}");
    assert!(last.contains("another device"), "{err}");
    assert_eq!(err.matches("error: ").count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), elsewhere);
}

/// `replay --report json` lists what standard error warned under `warnings`, each line as
/// printed without its `warning: `, as `info`, `stats` and `diff` do (it had no `warnings`:
/// a script saw a cut trace's replay only as its verdict); a whole trace replayed plainly
/// has none. Three sources here: the reading (the trace of a program that crashed),
/// `--until` past the last submission, a `--max-slowdown` too wide to catch anything.
#[test]
fn replay_json_lists_what_standard_error_warned() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    record_crashed(dir.path(), "cut.hrxt");
    let args = [
        "replay",
        "cut.hrxt",
        "--report",
        "json",
        "--until",
        "1000000",
        "--max-slowdown",
        "1000",
        "--repeat",
        "2",
    ];
    let out = run(dir.path(), &args);
    assert!(code(&out) < 2, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let warned: Vec<String> = stderr(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .map(str::to_owned)
        .collect();
    let listed: Vec<String> = report["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings: {report:#}"))
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, warned);
    for said in [
        "not closed cleanly",
        "--until 1000000 is past the trace's last submission",
        "--max-slowdown 1000: a region must replay over",
    ] {
        assert!(
            listed.iter().any(|w| w.contains(said)),
            "{said}: {listed:?}"
        );
    }
    let whole = run(dir.path(), &["replay", "h.hrxt", "--report", "json"]);
    assert_eq!(code(&whole), 0, "{}", stderr(&whole));
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    assert_eq!(whole["warnings"], serde_json::json!([]), "{whole:#}");
    let help = stdout(&run(dir.path(), &["replay", "--help"]));
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("JSON: `warnings` what standard error warned, each line"),
        "{help}"
    );
}

/// A trim of a trace whose name holds a newline or an escape sequence names its source as
/// every message names a path, quoted and escaped, in `info`'s `range` line, `stats`' and
/// `replay`'s note: `info` and `replay` printed the stored name raw (a break-it pass), a
/// note split in two and the escape sequence reaching the terminal, where `stats` escaped
/// it.
#[test]
fn the_source_of_a_trim_is_named_escaped_by_info_stats_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let name = "wh\nole\u{1b}[7m.hrxt";
    record_hazards(dir.path(), name);
    let trim = run(
        dir.path(),
        &["trim", name, "-o", "t.hrxt", "--submissions", "2..4"],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    let range = r#"trimmed from "wh\nole\u{1b}[7m.hrxt", submissions 2..4 (submissions:2..4)"#;
    for args in [
        &["info", "t.hrxt"][..],
        &["stats", "t.hrxt"],
        &["replay", "--backend", "sim", "t.hrxt"],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(range), "{args:?}: {text}");
        assert!(!text.contains('\u{1b}'), "{args:?}: {text:?}");
    }
}

/// `hv.hrxt` in `dir`: `host_visible` recorded quietly, `submissions` of them.
fn record_host_visible(dir: &std::path::Path, submissions: u32) {
    let out = hrx_trace(dir)
        .args(["-q", "record", "-o", "hv.hrxt", "--"])
        .arg(crate::util::example("host_visible"))
        .arg(submissions.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `replay` and `diff` interrupted (Ctrl-C, a CI runner's timeout) say so in one line, what
/// they stopped and that nothing was judged (nor a baseline saved), and exit 128+N, as an
/// interrupted `export` or `trim` says what it removed: both exited 130 without a word. The
/// signal meets each once its handler is in place, the process stopped meanwhile
/// ([`crate::util::signal_once_handled`]); the trace is large enough (20,000 submissions,
/// replayed 3 times) that neither is done by then.
#[test]
fn an_interrupted_replay_or_diff_says_so_in_one_line() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    record_host_visible(dir.path(), 20_000);
    let cases: [(&[&str], libc::c_int, &str); 3] = [
        (
            &[
                "replay",
                "--backend",
                "sim",
                "--repeat",
                "2",
                "hv.hrxt",
                "--save-baseline",
                "b.json",
            ],
            libc::SIGINT,
            "the replay of hv.hrxt stopped before its verdict: nothing judged, no baseline \
             saved to b.json",
        ),
        (
            &["diff", "hv.hrxt", "hv.hrxt"],
            libc::SIGINT,
            "the comparison of hv.hrxt and hv.hrxt stopped before its verdict: nothing judged",
        ),
        // A timer's signal, which would end it by its default action, is one too.
        (
            &["diff", "hv.hrxt", "hv.hrxt"],
            libc::SIGALRM,
            "the comparison of hv.hrxt and hv.hrxt stopped before its verdict: nothing judged",
        ),
    ];
    for (args, signal, said) in cases {
        let mut child = hrx_trace(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let caught = crate::util::signal_once_handled(&mut child, signal);
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(caught, "{args:?} never handled signal {signal}: {err}");
        assert_eq!(out.status.code(), Some(128 + signal), "{args:?}: {err}");
        let name = hrx_capture::schema::signal_name(signal).unwrap();
        assert_eq!(
            err,
            format!("error: interrupted by signal {signal} ({name}): {said}\n"),
            "{args:?}"
        );
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        assert!(!dir.path().join("b.json").exists());
    }
}

/// Runs `hrx-trace ARGS` in `dir` with its standard output a pipe this test reads only
/// once the report began (its first byte), then sends `signal`: a report larger than the
/// pipe holds cannot be printed whole by then, so the signal meets it while it prints,
/// however the machine schedules either process. Returns the output (standard output whole,
/// its first byte included).
fn interrupted_while_printing(
    dir: &std::path::Path,
    args: &[&str],
    signal: libc::c_int,
) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = hrx_trace(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut report = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    report.read_exact(&mut first).unwrap();
    // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let mut rest = Vec::new();
    report.read_to_end(&mut rest).unwrap();
    let mut out = child.wait_with_output().unwrap();
    out.stdout = [&first[..], &rest].concat();
    out
}

/// `replay --report json` and `diff --json` interrupted while they print a report larger
/// than a pipe holds (their reader slow) say so in one line, that the report on standard
/// output is incomplete, and exit 128+N. They were killed by the signal, silently, with 64
/// KiB of JSON printed, cut off mid-object (a break-it pass, session 51): their handler was
/// gone once the verdict was made.
#[test]
fn a_replay_or_diff_interrupted_while_it_prints_its_report_says_so() {
    use hrx_capture::{Record, Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    record_host_visible(dir.path(), 2_000);
    // The same recording with every output digest changed: 2,000 differing outputs, each
    // one in `diff --json`.
    let trace = hrx_capture::read_all(dir.path().join("hv.hrxt")).unwrap();
    let other =
        Recorder::create(dir.path().join("other.hrxt"), RecorderOptions::default()).unwrap();
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) => {}
            Record::OutputDigest(digest) => {
                let mut digest = digest.clone();
                digest.xxh3 ^= 1;
                other.record(&Record::OutputDigest(digest));
            }
            record => other.record(record),
        }
    }
    other.close().unwrap();
    let cases: [(&[&str], libc::c_int, &str); 3] = [
        (
            &["replay", "--backend", "sim", "hv.hrxt", "--report", "json"],
            libc::SIGINT,
            "the replay of hv.hrxt stopped while its report was printed: the report on \
             standard output is incomplete",
        ),
        // Its baseline in place by then: said so, never `no baseline saved`.
        (
            &[
                "replay",
                "--backend",
                "sim",
                "--repeat",
                "2",
                "hv.hrxt",
                "--report",
                "json",
                "--save-baseline",
                "b.json",
            ],
            libc::SIGHUP,
            "the replay of hv.hrxt stopped while its report was printed: the report on \
             standard output is incomplete; baseline saved to b.json",
        ),
        (
            &["diff", "--json", "hv.hrxt", "other.hrxt"],
            libc::SIGTERM,
            "the comparison of hv.hrxt and other.hrxt stopped while its report was printed: \
             the report on standard output is incomplete",
        ),
    ];
    for (args, signal, said) in cases {
        // Larger than a pipe holds (64 KiB), else it could be printed whole before the signal.
        let whole = run(dir.path(), args);
        assert!(
            whole.stdout.len() > 1 << 17,
            "{args:?}: {}",
            whole.stdout.len()
        );
        let _ = std::fs::remove_file(dir.path().join("b.json"));
        let out = interrupted_while_printing(dir.path(), args, signal);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(128 + signal), "{args:?}: {err}");
        let name = hrx_capture::schema::signal_name(signal).unwrap();
        // The one error line last, after the notes printed before the report (`note:
        // baseline saved to b.json`).
        let line = format!("error: interrupted by signal {signal} ({name}): {said}\n");
        // Or, signalled before the writer named what its first write's bytes make of it (a
        // writer descheduled right after that write, on a loaded machine), what it says from
        // that write's start: true too, a byte out.
        let began = line.replace(
            "stopped while its report was printed: the report on standard output is incomplete",
            "stopped as its report began to be printed: none or part of it on standard output",
        );
        assert!(
            err.ends_with(&line) || err.ends_with(&began),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: {err}");
        assert!(
            serde_json::from_slice::<serde_json::Value>(&out.stdout).is_err(),
            "{args:?}: the report was printed whole"
        );
        if args.contains(&"--save-baseline") {
            let saved = std::fs::read_to_string(dir.path().join("b.json")).unwrap();
            assert!(saved.contains("\"hrx_replay_baseline\""), "{saved}");
        }
        assert_eq!(crate::util::partial_files(dir.path()), Vec::<String>::new());
    }
}

/// Whether process `pid` waits for a `flock` lock (a `->` line of `/proc/locks`).
fn waits_for_a_lock(pid: u32) -> bool {
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(1) == Some(&"->")
            && fields.get(2) == Some(&"FLOCK")
            && fields.get(5) == Some(&pid.to_string().as_str())
    })
}

/// `replay --save-baseline B` or `--add-to-baseline B` interrupted while it writes the
/// baseline removes its temporary file, keeps the earlier B, says in one line that no
/// baseline was saved (nothing added), and exits 128+N. It was killed by the signal
/// silently, `B.PID.partial` left beside B (a break-it pass, session 51): the handler was
/// gone once the replay was done. The test holds B's folder locked, as another replay adding
/// to B holds it, so that the replay waits with its temporary file made: `/proc/locks` shows
/// it waiting, and the signal meets it there, however the machine schedules either process.
#[test]
fn a_replay_interrupted_while_it_saves_its_baseline_leaves_the_earlier_one() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    record_host_visible(dir.path(), 20);
    let replay = ["replay", "--backend", "sim", "--repeat", "2", "hv.hrxt"];
    let saved = run(
        dir.path(),
        &[&replay[..], &["--save-baseline", "b.json"]].concat(),
    );
    assert_eq!(code(&saved), 0, "{}", stderr(&saved));
    let earlier = std::fs::read(dir.path().join("b.json")).unwrap();
    let cases = [
        (
            "--save-baseline",
            libc::SIGTERM,
            "no baseline saved to b.json",
        ),
        (
            "--add-to-baseline",
            libc::SIGUSR1,
            "nothing added to b.json",
        ),
    ];
    for (flag, signal, unsaved) in cases {
        let folder = std::fs::File::open(dir.path()).unwrap();
        folder.lock().unwrap();
        let mut child = hrx_trace(dir.path())
            .args(replay)
            .args([flag, "b.json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        crate::util::wait_until_it_waits(
            &mut child,
            waits_for_a_lock,
            "in /proc/locks as waiting for a lock",
            &format!("{flag}: it ended without waiting for the lock"),
        );
        let partial = format!("b.json.{pid}.partial");
        assert_eq!(
            crate::util::partial_files(dir.path()),
            [partial],
            "{flag}: its temporary file is made before it waits"
        );
        // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        drop(folder);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(128 + signal), "{flag}: {err}");
        let name = hrx_capture::schema::signal_name(signal).unwrap();
        // What it waited for, said before the wait (it waited in silence: a break-it pass).
        let folder_shown = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            err,
            format!(
                "note: waiting for another process's lock on {} to write the baseline\n\
                 error: interrupted by signal {signal} ({name}): the replay of hv.hrxt \
                 stopped before its verdict: nothing judged, {unsaved}\n",
                folder_shown.display()
            ),
            "{flag}"
        );
        assert!(stdout(&out).is_empty(), "{flag}: {}", stdout(&out));
        assert_eq!(
            crate::util::partial_files(dir.path()),
            Vec::<String>::new(),
            "{flag}"
        );
        assert_eq!(std::fs::read(dir.path().join("b.json")).unwrap(), earlier);
    }
}

/// The interruption's `error:` line starts a line, even when the signal comes while a
/// warning is being written: a warning went out in pieces (`warning:`, ` `, its text, the
/// newline, one `write` each), and a signal between two of them glued the interruption on
/// (`warning:error: interrupted ...`, break-it E3), which `grep '^error:'` misses. Standard
/// error is a pipe of one page left 8 bytes free, as much as `warning:`: the warning's
/// write waits there, full, until the signal is sent, then the pipe is read.
#[test]
fn an_interruption_while_a_warning_is_written_starts_its_own_line() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let mut held = vec![b'x'; 4095 - "warning:".len()];
    held.push(b'\n');
    let (mut read, write) = crate::util::small_pipe(&held);
    // `-q`: the warning (`--until` past the last submission) is the first line it writes.
    let mut child = hrx_trace(dir.path())
        .args(["-q", "replay", "h.hrxt", "--until", "1000000"])
        .stdout(std::process::Stdio::null())
        .stderr(write)
        .spawn()
        .unwrap();
    crate::util::terminate_once_it_waits(
        &mut child,
        |pid| crate::util::blocked_writing(pid, 2),
        "a write to standard error waiting",
        "it ended before it waited to write a warning",
    );
    let mut err = Vec::new();
    read.read_to_end(&mut err).unwrap();
    let status = child.wait().unwrap();
    let err = String::from_utf8_lossy(&err[held.len()..]).into_owned();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::into_raw(status) >> 8,
        128 + libc::SIGTERM,
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: interrupted by signal 15 (SIGTERM): ")),
        "{err}"
    );
    assert!(
        err.lines()
            .all(|l| !l.contains("error: interrupted") || l.starts_with("error: ")),
        "{err}"
    );
}

/// `replay` and `diff` interrupted after their verdict (and after the baseline's rename),
/// while their report's first write waits, say that none or part of it is on standard
/// output (and what became of the baseline): from the first write's start an interruption
/// cannot know whether a byte got out (a terminal takes part of a write). They said `stopped
/// while its report was printed: the report on standard output is incomplete` (break-it
/// E2). Standard output is a pipe the test filled and does not read: the report's first
/// write waits there until the signal (a pipe's write of a page is whole or nothing: none
/// got out).
#[test]
fn a_replay_or_diff_interrupted_as_its_report_begins_says_none_or_part_was_printed() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let cases: [(&[&str], &str); 2] = [
        (
            &["replay", "h.hrxt", "--save-baseline", "b.json"],
            "the replay of h.hrxt stopped as its report began to be printed: none or part \
             of it on standard output; baseline saved to b.json",
        ),
        (
            &["diff", "--json", "h.hrxt", "h.hrxt"],
            "the comparison of h.hrxt and h.hrxt stopped as its report began to be \
             printed: none or part of it on standard output",
        ),
    ];
    for (args, said) in cases {
        let held = vec![b'x'; 4096];
        let (mut read, write) = crate::util::small_pipe(&held);
        let mut child = hrx_trace(dir.path())
            .args(args)
            .stdout(write)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Waiting to write the report (`poll` for room, or the write itself).
        crate::util::terminate_once_it_waits(
            &mut child,
            |pid| crate::util::blocked_writing(pid, 1) || crate::util::blocked_polling(pid),
            "a wait to write standard output",
            "it ended before it waited to print its report",
        );
        // Read once it has ended: read before, the pipe would let the report in.
        let out = child.wait_with_output().unwrap();
        let mut report = Vec::new();
        read.read_to_end(&mut report).unwrap();
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(128 + libc::SIGTERM),
            "{args:?}: {err}"
        );
        assert_eq!(
            report.len(),
            held.len(),
            "{args:?}: a byte of the report was printed"
        );
        assert!(
            err.ends_with(&format!(
                "error: interrupted by signal 15 (SIGTERM): {said}\n"
            )),
            "{args:?}: {err}"
        );
        if args.contains(&"--save-baseline") {
            let saved = std::fs::read_to_string(dir.path().join("b.json")).unwrap();
            assert!(saved.contains("\"hrx_replay_baseline\""), "{saved}");
        }
    }
}

/// `replay --report json` whose standard output is a terminal that stopped being read (a
/// hung ssh session) ends at once on SIGTERM, saying its report is incomplete. Its report's
/// writes ran with the signals blocked (after a `poll`, which a terminal answers with room
/// for one byte), so the write waited and the signal waited with it until the terminal was
/// read (a second break-it pass). The test's terminal is a pseudo-terminal it never reads.
#[test]
fn a_replay_writing_to_a_stuck_terminal_ends_on_a_signal() {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let dir = tempfile::tempdir().unwrap();
    record_host_visible(dir.path(), 2_000);
    // SAFETY: posix_openpt returns a new descriptor or -1; grantpt, unlockpt and ptsname_r
    // take it and a buffer of the length given.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if master < 0 {
            // A machine without pseudo-terminals (no /dev/ptmx in a container).
            println!("skipped: posix_openpt: {}", std::io::Error::last_os_error());
            return;
        }
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_owned();
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            slave >= 0,
            "open {name:?}: {}",
            std::io::Error::last_os_error()
        );
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let args = ["replay", "--backend", "sim", "hv.hrxt", "--report", "json"];
    let mut child = hrx_trace(dir.path())
        .args(args)
        .stdout(slave)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its report fills the terminal's buffer, which nobody reads, and a write waits.
    crate::util::terminate_once_it_waits(
        &mut child,
        |pid| crate::util::blocked_writing(pid, 1),
        "a write to standard output waiting",
        "it ended before its report filled the terminal",
    );
    // A liveness limit, not a measurement: it ends at once, or never (then killed).
    let ended = crate::util::ended_within_a_minute(&mut child);
    drop(master);
    let status = ended.expect("a signal did not end a replay whose terminal was not read");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(
        err.ends_with(
            "error: interrupted by signal 15 (SIGTERM): the replay of hv.hrxt stopped while its \
             report was printed: the report on standard output is incomplete\n"
        ),
        "{err}"
    );
}

/// `HRX_FAULT` in replay's environment is not applied (the replay injects the fault the
/// trace recorded) and a note says so: it was dropped without a word (a fresh user's pass,
/// session 59).
#[test]
fn a_fault_in_replays_environment_is_said_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let out = hrx_trace(dir.path())
        .env("HRX_FAULT", "op=1:kernel-error")
        .args(["replay", "h.hrxt"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: HRX_FAULT=op=1:kernel-error is not applied by replay: it injects the fault \
             the trace recorded"
        ),
        "{}",
        stderr(&out)
    );
    let out = run(dir.path(), &["replay", "h.hrxt"]);
    assert!(!stderr(&out).contains("HRX_FAULT"), "{}", stderr(&out));
}
