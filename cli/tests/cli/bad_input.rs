//! Bad input across every verb that reads a trace: one `error:` line (and at most a
//! `hint:`), exit code 2, nothing on standard output, and no file left behind.

use crate::util::*;
use std::path::Path;

/// The files no verb can read, with what the error must say.
fn unusable(dir: &Path) -> Vec<(&'static str, &'static str)> {
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("empty.hrxt"), b"").unwrap();
    std::fs::write(
        dir.join("magic.hrxt"),
        b"GIF89a\x01\x00 not a trace at all, longer than a header",
    )
    .unwrap();
    let output = run(dir, &["record", "-o", "ok.hrxt", "--workload", "hazards"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let mut newer = std::fs::read(dir.join("ok.hrxt")).unwrap();
    newer[8..10].copy_from_slice(&2u16.to_le_bytes());
    std::fs::write(dir.join("v2.hrxt"), &newer).unwrap();
    std::fs::write(dir.join("cut.hrxt"), &newer[..20]).unwrap();
    vec![
        (
            "missing.hrxt",
            "missing.hrxt: cannot open it: No such file or directory",
        ),
        ("sub", "sub: cannot open it: it is a directory"),
        ("empty.hrxt", "byte 0: the file is empty"),
        ("magic.hrxt", "not an hrx trace"),
        (
            "v2.hrxt",
            "trace format 2.17 is newer than this reader's format 1.17",
        ),
        (
            "cut.hrxt",
            "byte 20: the file ends after 20 bytes, inside the 32-byte header",
        ),
    ]
}

#[test]
fn every_reading_verb_refuses_unusable_files_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = unusable(dir.path());
    let before = listing(dir.path());
    for verb in ["info", "dump", "replay", "view"] {
        for (file, says) in &cases {
            let output = run(dir.path(), &[verb, file]);
            assert_error(&output, says);
            assert!(
                stdout(&output).is_empty(),
                "{verb} {file}: {}",
                stdout(&output)
            );
        }
    }
    assert_eq!(listing(dir.path()), before, "a verb left a file behind");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bad_flags_are_one_line_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["info", "--bogus", "x"][..],
            "unexpected argument '--bogus'",
        ),
        (&["dump", "a", "b"], "unexpected argument 'b'"),
        (
            &["record", "--frames", "many", "--workload", "pipeline"],
            "invalid value 'many'",
        ),
        (
            &["replay", "--report", "xml", "t.hrxt"],
            "invalid value 'xml'",
        ),
        // The values there are, on the one error line.
        (
            &["export", "t.hrxt", "--format", "svg", "-o", "t.svg"],
            "invalid value 'svg' for '--format <FORMAT>': it must be one of chrome, perfetto",
        ),
        // Submission numbers, not a range of integers.
        (
            &["replay", "t.hrxt", "--until", "0"],
            "submissions count from 1",
        ),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (
            &["record", "--input", "x", "--", "true"],
            "cannot be used with",
        ),
    ] {
        let output = run(dir.path(), args);
        assert_error(&output, says);
        assert!(
            stderr(&output).contains("\nhint: "),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A misspelt `record` option is clap's one error line and its tip, exit 2, whether or not
/// a `-- PROGRAM` follows (the trailing program arguments do not swallow it), and nothing
/// is recorded; after `--` the same word is the program's. A word where an option belongs
/// is told that the program goes after `--` (the hint was only the usage line).
#[test]
fn record_with_an_unknown_option_names_the_similar_one() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["record", "--workload", "pipeline", "--frame", "3"][..],
        &["record", "--workload", "pipeline", "--frame=3"],
        &["record", "--frame", "3", "--", "true"],
    ] {
        let out = run(dir.path(), args);
        assert_error(&out, "unexpected argument '--frame' found");
        assert_eq!(
            stderr(&out).lines().nth(1),
            Some("hint: a similar argument exists: '--frames'"),
            "{args:?}"
        );
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    // After `--`, `--frame 3` is the program's own (`true` ignores it and uses no hrx).
    let out = run(dir.path(), &["record", "--", "true", "--frame", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("error"), "{}", stderr(&out));

    let out = run(dir.path(), &["record", "./app", "--frames", "2"]);
    assert_error(&out, "unexpected argument './app' found");
    assert!(
        stderr(&out).contains("hint: a program to record goes after `--`"),
        "{}",
        stderr(&out)
    );
}

/// A missing required argument is named on the error line itself.
#[test]
fn a_missing_argument_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // (`export`'s --format is inferred from -o's name; its -o is required.)
    let out = run(dir.path(), &["export", "x.hrxt"]);
    assert_error(&out, "--output");
    let out = run(dir.path(), &["completions"]);
    assert_error(&out, "<SHELL>");
}

/// Crafted indices must not size memory: a graph operation numbered u32::MAX and timings of
/// region u32::MAX in many submissions (a few KiB of trace) are read by `stats`, `export`
/// and `diff` in bounded memory (each under a 4 GiB address-space limit: before, each verb
/// allocated up to 32 GiB per crafted record), without a panic.
#[test]
fn huge_indices_in_a_crafted_trace_cost_no_memory() {
    use hrx_capture::schema::*;
    use hrx_capture::{Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crafted.hrxt");
    let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
    let runtime = RuntimeId(0);
    recorder.record(&Record::GraphOp(GraphOp {
        runtime,
        graph: GraphId(1),
        node: NodeIndex(u32::MAX),
        op: OpKind::Copy,
        lane: Lane::Upload,
        uses: Vec::new(),
    }));
    for submission in 1..200 {
        recorder.record(&Record::RegionTiming(RegionTiming {
            runtime,
            submission: SubmissionIndex(submission),
            region: RegionIndex(u32::MAX),
            start_ns: submission * 10,
            end_ns: submission * 10 + 5,
            device: None,
        }));
    }
    recorder.close().unwrap();
    for args in [
        &["stats", "crafted.hrxt"][..],
        &["stats", "--json", "crafted.hrxt"],
        &[
            "export",
            "crafted.hrxt",
            "--format",
            "chrome",
            "-o",
            "c.json",
        ],
        &[
            "export",
            "crafted.hrxt",
            "--format",
            "perfetto",
            "-o",
            "c.pftrace",
        ],
    ] {
        let out = run_memory_limited(dir.path(), 4 << 20, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    }
    // diff compares the whole trace within the limit, then refuses: it holds timings but no
    // submission, so nothing was compared.
    let args = ["diff", "crafted.hrxt", "crafted.hrxt"];
    let out = run_memory_limited(dir.path(), 4 << 20, &args);
    assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    assert!(
        stderr(&out).contains("holds a submission: nothing to compare"),
        "{}",
        stderr(&out)
    );
}

/// `replay` refuses numbers that would disable its checks or exhaust memory.
/// A span whose end precedes its start (a region's timing, a host span: crafted times) is
/// counted as 0 ns long and said by `stats` (text and JSON), `export` and `diff`, as other
/// malformed data is; it counted as 0 ns in silence.
#[test]
fn spans_that_end_before_they_start_are_counted_and_said() {
    use hrx_capture::Record;
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "base.hrxt");
    let trace = hrx_capture::read_all(dir.path().join("base.hrxt")).unwrap();
    let (mut timing, mut host) = (false, false);
    let records = trace.records.into_iter().map(|mut record| {
        match &mut record {
            Record::RegionTiming(t) if !timing => {
                (t.start_ns, t.end_ns) = (t.end_ns + 1_000, t.start_ns);
                timing = true;
            }
            Record::HostSpan(h) if !host => {
                (h.start_ns, h.end_ns) = (h.end_ns + 1_000, h.start_ns);
                host = true;
            }
            _ => {}
        }
        record
    });
    write_records(&dir.path().join("backwards.hrxt"), records);
    let said = "2 spans or ranges end before they start (crafted or damaged times)";

    let stats = run(dir.path(), &["stats", "backwards.hrxt"]);
    assert_eq!(code(&stats), 0, "{}", stderr(&stats));
    assert!(
        stdout(&stats).contains(&format!("backwards    {said}: each counted as 0 ns long")),
        "{}",
        stdout(&stats)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["stats", "--json", "backwards.hrxt"],
    )))
    .unwrap();
    assert_eq!(json["ends_before_start"], 2);
    let export = run(dir.path(), &["export", "backwards.hrxt", "-o", "b.json"]);
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    assert!(
        stderr(&export).contains(&format!("warning: backwards.hrxt: {said}: each exported")),
        "{}",
        stderr(&export)
    );
    let diff = run(dir.path(), &["diff", "base.hrxt", "backwards.hrxt"]);
    assert!(
        stderr(&diff).contains(&format!("warning: backwards.hrxt: {said}: each compared")),
        "{}",
        stderr(&diff)
    );
    // A recorded trace has none, and none is said.
    let whole = run(dir.path(), &["stats", "--json", "base.hrxt"]);
    assert!(stdout(&whole).contains("\"ends_before_start\": 0"));
    let export = run(dir.path(), &["export", "base.hrxt", "-o", "base.json"]);
    assert!(!stderr(&export).contains("before they start"));
}

/// `stats --json` lists what standard error warned of a trace (as `info --json` does): the
/// reader's warnings and how the trace ends. A trace of a newer minor format (parts this
/// reader skips) and a cut one said it on standard error alone, and `complete` in the JSON.
#[test]
fn stats_json_lists_the_warnings() {
    use hrx_capture::format::{FILE_HEADER_LEN, FileHeader, FormatMinor};
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let mut bytes = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    let (mut header, _) = FileHeader::decode(bytes[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
    header.version.minor = FormatMinor(header.version.minor.0 + 1);
    bytes[..FILE_HEADER_LEN].copy_from_slice(&header.encode());
    std::fs::write(dir.path().join("newer.hrxt"), &bytes).unwrap();
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let warnings = |name: &str| -> Vec<String> {
        let out = run(dir.path(), &["stats", "--json", name]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let warnings: Vec<String> = json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_owned())
            .collect();
        // Each is on standard error too.
        for w in &warnings {
            assert!(stderr(&out).contains(w.as_str()), "{w} in {}", stderr(&out));
        }
        warnings
    };
    let newer = warnings("newer.hrxt");
    assert!(
        newer
            .iter()
            .any(|w| w.contains("is newer than this reader's")),
        "{newer:?}"
    );
    let cut = warnings("cut.hrxt");
    assert!(cut.iter().any(|w| w == "not closed cleanly"), "{cut:?}");
    assert!(warnings("h.hrxt").is_empty());
}

#[test]
fn replay_refuses_meaningless_numbers() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for (flag, value) in [
        ("--repeat", "100000000"),
        ("--repeat", "101"),
        ("--repeat", "0"),
        ("--max-slowdown", "NaN"),
        ("--max-slowdown", "0.5"),
        ("--max-slowdown", "inf"),
        ("--tolerance", "NaN"),
        ("--tolerance=-1", ""),
        ("--until", "0"),
    ] {
        let args = if value.is_empty() {
            vec!["replay", "h.hrxt", flag]
        } else {
            vec!["replay", "h.hrxt", flag, value]
        };
        let out = run(dir.path(), &args);
        assert_error(&out, flag.split('=').next().unwrap());
    }
    // A number past an f64's range reads as infinity: said so, not echoed as `inf`, which
    // was never typed (a break-it pass), by `replay` and `diff` alike.
    for args in [
        &["replay", "h.hrxt", "--max-slowdown", "1e309"][..],
        &["diff", "h.hrxt", "h.hrxt", "--max-slowdown", "1e309"],
    ] {
        let out = run(dir.path(), args);
        assert_error(
            &out,
            "--max-slowdown too large (it reads as infinity): must be",
        );
    }
    // A tiny one is refused in a line a reader takes in (it printed 2e-308 in 300 digits:
    // a second break-it pass).
    let out = run(
        dir.path(),
        &["replay", "h.hrxt", "--max-slowdown", "2e-308"],
    );
    assert_error(
        &out,
        "--max-slowdown 2e-308: must be a finite number of at least 1",
    );
    // A gate too wide to fire is said, not refused (a loaded machine may need a wide one),
    // by `diff` as by `replay` (it said nothing: a break-it pass), and listed in its JSON.
    let wide = |out: &std::process::Output| {
        stderr(out)
            .lines()
            .filter_map(|l| l.strip_prefix("warning: "))
            .find(|l| {
                l.starts_with("--max-slowdown 1e308: ") && l.contains("catches almost nothing")
            })
            .map(str::to_owned)
    };
    let out = run(dir.path(), &["replay", "h.hrxt", "--max-slowdown", "1e308"]);
    assert!(wide(&out).is_some(), "{}", stderr(&out));
    let out = run(
        dir.path(),
        &[
            "diff",
            "--json",
            "h.hrxt",
            "h.hrxt",
            "--max-slowdown",
            "1e308",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warning = wide(&out).unwrap_or_else(|| panic!("{}", stderr(&out)));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        report["warnings"],
        serde_json::json!([warning]),
        "{report:#}"
    );
}

/// `stats`, `diff`, `export` and `dump` of a cut-short trace say so, each warning naming
/// the file: numbers from part of a trace are never presented as the whole (`export` named
/// neither the file nor the cut).
#[test]
fn stats_diff_export_and_dump_of_a_truncated_trace_warn() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("p.hrxt")).unwrap();
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() / 2]).unwrap();
    let out = run(dir.path(), &["stats", "cut.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("only what was recovered"),
        "{}",
        stderr(&out)
    );
    let out = run(dir.path(), &["stats", "--json", "cut.hrxt"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["complete"], false);
    let out = run(dir.path(), &["stats", "--json", "p.hrxt"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["complete"], true);
    let out = run(dir.path(), &["diff", "p.hrxt", "cut.hrxt"]);
    assert!(
        stderr(&out).contains("cut.hrxt: not closed cleanly"),
        "{}",
        stderr(&out)
    );
    for (args, covers) in [
        (
            &["export", "cut.hrxt", "--format", "chrome", "-o", "cut.json"][..],
            "the export covers only what was recovered",
        ),
        (
            &["dump", "cut.hrxt"][..],
            "the records above are what was recovered: ",
        ),
    ] {
        let out = run(dir.path(), args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        // Warnings, and the export's note of a loaded host where the recording's host was.
        assert!(
            err.lines().all(|l| l.starts_with("warning: cut.hrxt: ")
                || l.starts_with("note: cut.hrxt: host load ")),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("cut.hrxt: not closed cleanly; ") && err.contains(covers),
            "{args:?}: {err}"
        );
    }
    // A whole trace draws no warning.
    let out = run(
        dir.path(),
        &["export", "p.hrxt", "--format", "chrome", "-o", "p.json"],
    );
    assert!(
        (stderr(&out).lines()).all(|l| l.starts_with("note: p.hrxt: host load ")),
        "{}",
        stderr(&out)
    );
    // The export of the cut trace says it in the file too (one `trace incomplete` event,
    // with how it ends), for whoever opens it later; the whole trace's does not.
    let events = |file: &str| -> Vec<serde_json::Value> {
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(file)).unwrap()).unwrap();
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "trace incomplete")
            .cloned()
            .collect()
    };
    let marked = events("cut.json");
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(marked[0]["args"]["end"], "not closed cleanly", "{marked:?}");
    assert!(events("p.json").is_empty());
    let out = run(dir.path(), &["export", "cut.hrxt", "-o", "cut.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("cut.pftrace")).unwrap();
    assert!(
        bytes.windows(16).any(|w| w == b"trace incomplete"),
        "no mark in the Perfetto export"
    );
}

/// An export that cannot be written whole (here past a file-size limit) is one error line
/// naming the output, exit 2, and leaves no half-written file.
#[test]
fn a_failed_export_leaves_no_partial_file() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for format in ["chrome", "perfetto"] {
        let script = format!(
            "ulimit -f 4; exec {} export p.hrxt --format {format} -o big.out",
            env!("CARGO_BIN_EXE_hrx-trace")
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_error(&out, "big.out");
        assert!(
            !dir.path().join("big.out").exists(),
            "{format}: partial file left"
        );
    }
    // Through a symlink, the file written is removed and the link is left alone (the link
    // itself was removed, as a device node such as `-o /dev/full` would have been).
    std::os::unix::fs::symlink("real.json", dir.path().join("link.json")).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(size_limited("export p.hrxt --format chrome -o link.json"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_error(&out, "cannot write link.json (removed the incomplete file)");
    let link = std::fs::symlink_metadata(dir.path().join("link.json")).unwrap();
    assert!(link.file_type().is_symlink());
    assert!(!dir.path().join("real.json").exists(), "partial file left");
    // An earlier export at the output stays whole when its replacement fails (it was
    // removed with the incomplete file: a break-it pass).
    record_hazards(dir.path(), "h.hrxt");
    let out = run(
        dir.path(),
        &["export", "h.hrxt", "--format", "chrome", "-o", "e.json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let earlier = std::fs::read(dir.path().join("e.json")).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(size_limited("export p.hrxt --format chrome -o e.json"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_error(&out, "cannot write e.json (removed the incomplete file)");
    assert_eq!(std::fs::read(dir.path().join("e.json")).unwrap(), earlier);
    let partials = partial_files(dir.path());
    assert!(partials.is_empty(), "{partials:?}");
}

/// `export` and `diff` read their input twice: a pipe is refused in one line (the second
/// open of a FIFO blocked forever).
#[test]
fn export_and_diff_refuse_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let fifo = dir.path().join("pipe");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    for args in [
        &["export", "pipe", "--format", "chrome", "-o", "-"][..],
        &["diff", "h.hrxt", "pipe"][..],
        &["diff", "pipe", "h.hrxt"][..],
    ] {
        let out = run(dir.path(), args);
        assert_error(&out, "pipe: not a regular file (a pipe or a device)");
    }
}

/// A `-o` that is not UTF-8 (Linux allows any byte in a name) is written under exactly that
/// name (it was refused: the runtime expanded trace paths as text). A recorded program's:
/// `processes::a_name_that_is_not_utf8_keeps_its_bytes_and_its_pattern_expands`.
#[test]
fn record_writes_an_output_path_that_is_not_utf8_under_its_own_name() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"bad_\xffx.hrxt");
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o"])
        .arg(name)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        hrx_capture::read_all(dir.path().join(name))
            .unwrap()
            .recovery
            .is_complete()
    );
}

/// Runs `hrx-trace ARGS` in `dir`, killing it if it has not finished after a minute: a verb
/// that blocks on a FIFO fails the test instead of hanging it (a liveness guard, not a
/// time bound: each of these answers at once).
fn run_unless_stuck(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut child = hrx_trace(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..6000 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    panic!("{args:?} blocked (still running after a minute)");
}

/// A FIFO, a socket or a device named as a trace is refused at once, in one line, by
/// `record -o`, `export -o` and every reader (before, opening the FIFO waited forever for
/// its other end).
#[test]
fn fifos_sockets_and_devices_are_refused_as_traces() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    for (path, is) in [
        ("fifo", "a FIFO (named pipe)"),
        ("sock", "a socket"),
        ("/dev/null", "a device"),
    ] {
        let says = format!("{path}: it is {is}, not a file");
        for args in [
            &["record", "--workload", "hazards", "-o", path][..],
            &["record", "-o", path, "--", "true"],
            &["export", "h.hrxt", "--format", "chrome", "-o", path],
        ] {
            let out = run_unless_stuck(dir.path(), args);
            assert_error(&out, &says);
            assert!(stderr(&out).contains(is), "{args:?}: {}", stderr(&out));
        }
        if path != "/dev/null" {
            for verb in ["info", "dump", "stats", "replay", "view"] {
                let out = run_unless_stuck(dir.path(), &[verb, path]);
                assert_error(&out, &format!("it is {is}, not a trace file"));
            }
        }
    }
    // /dev/null as an input: a device, refused before it is read as an empty file.
    let out = run_unless_stuck(dir.path(), &["info", "/dev/null"]);
    assert_error(&out, "it is a device, not a trace file");
}

/// `-o -` is refused in one line (it wrote a file named `-`), and a `%` that is not a pattern
/// is kept as written with a warning (it was kept silently).
#[test]
fn standard_output_and_unknown_patterns_in_the_trace_path() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["record", "--workload", "hazards", "-o", "-"][..],
        &["record", "-o", "-", "--", "true"],
    ] {
        let out = run_unless_stuck(dir.path(), args);
        assert_error(&out, "cannot write the trace to standard output");
        assert!(
            !dir.path().join("-").exists(),
            "{args:?} wrote a file named -"
        );
    }
    record_hazards(dir.path(), "h.hrxt");
    let out = run_unless_stuck(
        dir.path(),
        &["trim", "h.hrxt", "--submissions", "1..2", "-o", "-"],
    );
    assert_error(&out, "cannot write the trace to standard output");
    assert!(!dir.path().join("-").exists(), "trim wrote a file named -");
    let out = run_unless_stuck(
        dir.path(),
        &["record", "--workload", "hazards", "-o", "a%x%%.hrxt"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: `%x` in the trace path is not a pattern"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("`%%`"), "{}", stderr(&out));
    assert!(dir.path().join("a%x%.hrxt").is_file());
}

/// The faults workload cut to one frame never reaches its fault's second dispatch: the hint
/// says to run more frames (it said only to check the kernel name).
#[test]
fn a_fault_past_the_last_frame_hints_at_more_frames() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_unless_stuck(
        dir.path(),
        &[
            "record",
            "--workload",
            "faults",
            "--frames",
            "1",
            "-o",
            "f.hrxt",
        ],
    );
    assert_error(&out, "never fired in 1 frame");
    assert!(
        stderr(&out).contains("run more --frames"),
        "{}",
        stderr(&out)
    );
}

/// Re-records `from` into `to` without the records `keep` refuses, writing a block after
/// every submit (so that a test can cut one out); returns each block's (offset, length).
fn rewrite(
    dir: &Path,
    from: &str,
    to: &str,
    keep: impl Fn(&hrx_capture::Record) -> bool,
) -> Vec<(usize, usize)> {
    use hrx_capture::{Record, Recorder, RecorderOptions};
    let trace = hrx_capture::read_all(dir.join(from)).unwrap();
    let recorder = Recorder::create(dir.join(to), RecorderOptions::default()).unwrap();
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) => {}
            Record::Blob(blob) => {
                recorder.intern_blob(&blob.bytes).unwrap();
            }
            other if keep(other) => {
                recorder.record(other);
                if matches!(other, Record::Submit(_)) {
                    recorder.flush().unwrap();
                }
            }
            _ => {}
        }
    }
    recorder.close().unwrap();
    let bytes = std::fs::read(dir.join(to)).unwrap();
    let mut blocks = Vec::new();
    let mut at = hrx_capture::format::FILE_HEADER_LEN;
    while bytes.get(at..at + 4) == Some(b"HRXB") {
        let stored = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        blocks.push((at, 32 + stored));
        at += 32 + stored;
    }
    blocks
}

/// A closed trace with a whole block cut out of its middle, and one whose submission
/// numbers have a gap: `info` says what is missing instead of "closed cleanly", `diff` says
/// the trace was not read whole, and `replay` does not call it a plain match.
#[test]
fn missing_blocks_and_submission_gaps_are_reported() {
    use hrx_capture::Record;
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let blocks = rewrite(dir.path(), "h.hrxt", "whole.hrxt", |_| true);
    assert!(blocks.len() >= 4, "{blocks:?}");
    let out = run(dir.path(), &["info", "whole.hrxt"]);
    assert!(
        field(&stdout(&out), "closed").starts_with("cleanly"),
        "{}",
        stdout(&out)
    );
    // Cut out the second block of several records (each ends with a submit; a blob has a
    // block of its own).
    let bytes = std::fs::read(dir.path().join("whole.hrxt")).unwrap();
    let records = |at: usize| u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap());
    let (at, len) = blocks[1..]
        .iter()
        .copied()
        .filter(|&(at, _)| records(at) >= 2)
        .nth(1)
        .unwrap();
    let cut = [&bytes[..at], &bytes[at + len..]].concat();
    std::fs::write(dir.path().join("cut.hrxt"), cut).unwrap();
    // And a gap: the second submit left out.
    let seen = std::cell::Cell::new(0);
    rewrite(dir.path(), "h.hrxt", "gap.hrxt", |r| {
        if matches!(r, Record::Submit(_)) {
            seen.set(seen.get() + 1);
            return seen.get() != 2;
        }
        true
    });
    let submits = seen.get();
    assert!(submits >= 3, "the hazards workload submits {submits} times");

    for (file, says) in [
        ("cut.hrxt", "listed by the footer are missing from the file"),
        ("gap.hrxt", "1 of its submissions 1..="),
    ] {
        let out = run(dir.path(), &["info", file]);
        let text = stdout(&out);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            !text.lines().any(|l| l.starts_with("closed ")),
            "{file}: {text}"
        );
        assert!(
            field(&text, "recovered").starts_with("closed, but damaged parts were skipped"),
            "{file}: {text}"
        );
        assert!(text.contains(says), "{file}: {text}");
        let out = run(dir.path(), &["diff", "h.hrxt", file]);
        assert!(stderr(&out).contains(says), "diff {file}: {}", stderr(&out));
        // Either not replayable (exit 2, saying why) or a verdict that says it is partial.
        let out = run(dir.path(), &["replay", file]);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            all.contains("incomplete") || (code(&out) == 2 && all.starts_with("error: ")),
            "replay {file} (exit {:?}): {all}",
            out.status.code()
        );
    }
}

/// Bare `hrx-trace` starts with an `error:` line, then its usage (exit 2).
#[test]
fn bare_hrx_trace_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &[]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.starts_with("error: no verb given"), "{err}");
    assert!(err.contains("Usage: hrx-trace"), "{err}");
}

/// Negative numbers (`--tolerance`, `--max-slowdown`, the counts, `--delay`, `--duration`)
/// get the value check's message (clap called `-1` an unexpected argument and suggested
/// `-- -1`); an empty `--backend` is an error, not `auto`.
#[test]
fn negative_numbers_and_an_empty_backend_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for (args, says) in [
        (
            &["replay", "h.hrxt", "--tolerance", "-1"][..],
            "--tolerance -1: must be",
        ),
        (
            &["replay", "h.hrxt", "--max-slowdown", "-2"],
            "--max-slowdown -2: must be",
        ),
        (
            &["diff", "h.hrxt", "h.hrxt", "--max-slowdown", "-2"],
            "--max-slowdown -2: must be",
        ),
        (
            &["replay", "h.hrxt", "--repeat", "-1"],
            "'--repeat <N>': it must be a whole number of at least 1",
        ),
        (
            &["replay", "h.hrxt", "--until", "-5"],
            "submissions count from 1",
        ),
        (
            &["record", "--workload", "hazards", "--frames", "-1"],
            "'--frames <N>': it must not be negative: give a whole number, 1 or more",
        ),
        (
            &["record", "--workload", "pipeline", "--frames", "0"],
            "'--frames <N>': a run has at least one frame: give 1 or more",
        ),
        (
            &["record", "--workload", "hazards", "--in-flight", "-3"],
            "'--in-flight <N>': it must not be negative",
        ),
        (
            &["record", "--workload", "hazards", "--max-width", "-2"],
            "'--max-width <PX>': it must not be negative",
        ),
        (&["record", "--delay", "-1", "--", "true"], "--delay: "),
        (
            &["record", "--duration", "-1", "--", "true"],
            "--duration: ",
        ),
        (
            &["replay", "h.hrxt", "--backend", ""],
            "--backend '': expected",
        ),
        (
            &[
                "record",
                "--workload",
                "hazards",
                "--backend",
                "",
                "-o",
                "b.hrxt",
            ],
            "--backend '': expected",
        ),
    ] {
        let out = run(dir.path(), args);
        assert_error(&out, says);
    }
}

/// `HRX_TRACE_CONTENTS` takes 0 or 1, as `HRX_TRACE_DIGESTS` takes its names: anything else
/// is an error naming the variable (before, `yes` silently meant "off").
#[test]
fn hrx_trace_contents_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "c.hrxt"])
        .env("HRX_TRACE_CONTENTS", "yes")
        .output()
        .unwrap();
    assert_error(&out, "HRX_TRACE_CONTENTS: expected 0 or 1, got \"yes\"");
    for ok in ["0", "1"] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "c.hrxt"])
            .env("HRX_TRACE_CONTENTS", ok)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{ok}: {}", stderr(&out));
    }
}

/// `HRX_VERBOSE` takes 0 or 1 (empty: unset), as every `HRX_` switch: any non-empty value,
/// `0` included, turned it on (a break-it pass). Where `auto` skips CUDA (no driver here),
/// `1` says why and `0` says nothing.
#[test]
fn hrx_verbose_takes_0_or_1() {
    let dir = tempfile::tempdir().unwrap();
    let record = |verbose: &str| {
        hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "v.hrxt"])
            .env("HRX_VERBOSE", verbose)
            .output()
            .unwrap()
    };
    for bad in ["x", "-1", "yes"] {
        assert_error(
            &record(bad),
            &format!("HRX_VERBOSE: expected 0 or 1, got \"{bad}\""),
        );
    }
    for quiet in ["0", ""] {
        let out = record(quiet);
        assert_eq!(code(&out), 0, "{quiet:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("hrx: "),
            "{quiet:?}: {}",
            stderr(&out)
        );
    }
    let out = record("1");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `HRX_HUGE_PAGES` takes 0 or 1 (empty: unset) as well: `off` left large buffers on huge
/// pages without a word, where a user meant to turn them off (session 53's break-it pass).
#[test]
fn hrx_huge_pages_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["off", "false"] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "h.hrxt"])
            .env("HRX_HUGE_PAGES", bad)
            .output()
            .unwrap();
        assert_error(
            &out,
            &format!("HRX_HUGE_PAGES: expected 0 or 1, got \"{bad}\""),
        );
    }
    for ok in ["0", "1", ""] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "h.hrxt"])
            .env("HRX_HUGE_PAGES", ok)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{ok:?}: {}", stderr(&out));
    }
    // A replay's runtime reads no runtime variable, but its device's allocations read this
    // one (as `HRX_SIM_MEMORY`): `off` replayed on huge pages, exit 0.
    let out = hrx_trace(dir.path())
        .args(["replay", "h.hrxt"])
        .env("HRX_HUGE_PAGES", "off")
        .output()
        .unwrap();
    assert_error(&out, "HRX_HUGE_PAGES: expected 0 or 1, got \"off\"");
    for ok in ["0", "1"] {
        let out = hrx_trace(dir.path())
            .args(["replay", "h.hrxt"])
            .env("HRX_HUGE_PAGES", ok)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{ok:?}: {}", stderr(&out));
    }
}

/// `HRX_TRACE_KERNELS` takes 0 or 1 as well; `record --kernel-times` on the software device
/// records what a traced run records anyway (every operation timed) and says so.
#[test]
fn hrx_trace_kernels_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "k.hrxt"])
        .env("HRX_TRACE_KERNELS", "on")
        .output()
        .unwrap();
    assert_error(&out, "HRX_TRACE_KERNELS: expected 0 or 1, got \"on\"");
    let out = hrx_trace(dir.path())
        .args([
            "record",
            "--workload",
            "hazards",
            "--kernel-times",
            "-o",
            "k.hrxt",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("kernel times off"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("the software device times every operation"),
        "{}",
        stderr(&out)
    );
    let trace = hrx_capture::read_all(dir.path().join("k.hrxt")).unwrap();
    let ops = trace
        .records
        .iter()
        .filter(|r| matches!(r, hrx_capture::schema::Record::OpTiming(_)))
        .count();
    assert!(ops > 0, "the software device timed the operations");
}

/// `--kernel-times` and `--no-kernel-times` contradict each other: refused before anything
/// runs; `--no-kernel-times` hands a program `HRX_TRACE_KERNELS=0` (regions only).
#[test]
fn kernel_times_switches_conflict_and_reach_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args([
            "record",
            "--kernel-times",
            "--no-kernel-times",
            "--",
            "sh",
            "-c",
            "touch ran",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--no-kernel-times"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("ran").exists());
    for (flag, value) in [("--no-kernel-times", "0"), ("--kernel-times", "1")] {
        let out = hrx_trace(dir.path())
            .args([
                "record",
                flag,
                "--",
                "sh",
                "-c",
                "printf %s \"$HRX_TRACE_KERNELS\" > seen",
            ])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("seen")).unwrap(),
            value
        );
    }
    // A flag wins over the variable with a workload as with a program; the variable alone
    // gets the software device's note as the flag does.
    for flag in ["--kernel-times", "--no-kernel-times"] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", flag, "-o", "w.hrxt"])
            .env("HRX_TRACE_KERNELS", "yes")
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
    }
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "w.hrxt"])
        .env("HRX_TRACE_KERNELS", "1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the software device times every operation"),
        "{}",
        stderr(&out)
    );
}

/// A bad `HRX_BACKEND` or `HRX_NPU_BACKEND` reads as every bad variable does (they read
/// `unknown backend "x" (expected ...)`); `--backend`'s own message is left as it is. The
/// variable's line is the error itself, as `replay` prints it (`record` printed it behind
/// `cannot start the hrx runtime:`).
#[test]
fn hrx_backend_and_hrx_npu_backend_are_refused_in_the_variable_shape() {
    let dir = tempfile::tempdir().unwrap();
    for (variable, expected) in [
        ("HRX_BACKEND", "auto, sim, cuda or hip"),
        ("HRX_NPU_BACKEND", "auto, sim or xrt"),
    ] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "b.hrxt"])
            .env(variable, "X")
            .output()
            .unwrap();
        assert_error(
            &out,
            &format!("error: {variable}: expected {expected}, got \"X\"\n"),
        );
        assert!(!dir.path().join("b.hrxt").exists(), "{variable}");
    }
}

/// A mistyped `HRX_TRACE_CLOCK` is refused by name (it fell back to the TSC silently).
#[test]
fn hrx_trace_clock_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "c.hrxt"])
        .env("HRX_TRACE_CLOCK", "Monotonic")
        .output()
        .unwrap();
    assert_error(
        &out,
        "HRX_TRACE_CLOCK: expected auto or monotonic, got \"Monotonic\"",
    );
    assert!(!dir.path().join("c.hrxt").exists());
    for ok in ["auto", "monotonic"] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "c.hrxt"])
            .env("HRX_TRACE_CLOCK", ok)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{ok}: {}", stderr(&out));
    }
}

/// Every variable's bad value reads alike, `VAR: expected A or B, got "value"` (the trace
/// mode and compression threads said `VAR="value": expected ...` while the rest said it in
/// this shape; fresh-user pass), the line the error itself (not behind `cannot start the hrx
/// runtime:`). `HRX_FAULT` and `HRX_TRACE_RANGE` too, their parser's reason after it where
/// it has one (they read as their flags' parsers word it: `HRX_FAULT: bad fault spec ...`).
#[test]
fn bad_variable_values_are_said_in_one_shape() {
    let dir = tempfile::tempdir().unwrap();
    let fault = "op=N:KIND or kernel=NAME[#N]:KIND (KIND device-lost or kernel-error)";
    for (var, values, why) in [
        ("HRX_TRACE_MODE", "lossless or lossy", ""),
        ("HRX_TRACE_CLOCK", "auto or monotonic", ""),
        ("HRX_TRACE_DIGESTS", "outputs or all", ""),
        ("HRX_HUGE_PAGES", "0 or 1", ""),
        ("HRX_FAULT", fault, ": missing ':KIND'"),
        ("HRX_TRACE_RANGE", "submissions:A..B, time:S..E or api", ""),
    ] {
        let out = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "m.hrxt"])
            .env(var, "bogus")
            .output()
            .unwrap();
        assert_error(
            &out,
            &format!("error: {var}: expected {values}, got \"bogus\"{why}\n"),
        );
        assert!(!dir.path().join("m.hrxt").exists(), "{var}");
    }
    // A specific reason follows the shape.
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "m.hrxt"])
        .env("HRX_TRACE_RANGE", "submissions:0..2")
        .output()
        .unwrap();
    assert_error(
        &out,
        "error: HRX_TRACE_RANGE: expected submissions:A..B, time:S..E or api, got \
         \"submissions:0..2\": \"0..2\" starts at submission 0",
    );
}

/// Running out of the software device's `HRX_SIM_MEMORY` names the variable once (it
/// ended "... in use (HRX_SIM_MEMORY)" after "over HRX_SIM_MEMORY"; fresh-user pass).
#[test]
fn running_out_of_sim_memory_names_the_variable_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "m.hrxt"])
        .env("HRX_SIM_MEMORY", "4K")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("out of device memory"), "{err}");
    assert_eq!(err.matches("HRX_SIM_MEMORY").count(), 1, "{err}");
}

/// A mistyped `HRX_TRACE_COMPRESSION_THREADS` is refused by name, by a workload and by a
/// program's runtime, as a mistyped `HRX_TRACE_MODE` is (break-it pass: a program ran
/// untraced, `record` saying "no trace" and exiting 0, and `3` meant two).
#[test]
fn hrx_trace_compression_threads_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    // A workload's recording, then a program's, with the variable at `value`.
    let record = |value: &str| {
        let workload = hrx_trace(dir.path())
            .args(["record", "--workload", "hazards", "-o", "w.hrxt"])
            .env("HRX_TRACE_COMPRESSION_THREADS", value)
            .output()
            .unwrap();
        let program = hrx_trace(dir.path())
            .args(["record", "-o", "p.hrxt", "--"])
            .arg(example("traced"))
            .arg("1")
            .env("HRX_TRACE_COMPRESSION_THREADS", value)
            .output()
            .unwrap();
        (workload, program)
    };
    for bad in ["many", "3", "-1"] {
        let says = format!("HRX_TRACE_COMPRESSION_THREADS: expected auto, 0, 1 or 2, got {bad:?}");
        let (workload, program) = record(bad);
        assert_error(&workload, &says);
        assert!(!dir.path().join("w.hrxt").exists());
        let err = stderr(&program);
        assert_eq!(code(&program), 1, "the program's own exit code: {err}");
        assert!(err.contains(&format!("traced: {says}")), "{err}");
        assert!(!err.contains("runs untraced"), "{err}");
    }
    for ok in ["auto", "", "0", "1", "2"] {
        let (workload, program) = record(ok);
        assert_eq!(code(&workload), 0, "{ok:?}: {}", stderr(&workload));
        assert_eq!(code(&program), 0, "{ok:?}: {}", stderr(&program));
    }
}

/// A trim of a recording whose end is cut off is closed cleanly, but it lacks what its
/// source lacked:
/// every verb says it is not complete, as `info`'s text and `replay` did (`info --json`,
/// `stats`, `export`, `diff` and `view` called it whole; break-it pass).
#[test]
fn a_trim_of_a_recording_cut_short_is_incomplete_in_every_verb() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("p.hrxt")).unwrap();
    // Its end cut off: the footer's block damaged, every submission kept.
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() - 24]).unwrap();
    let out = run(
        dir.path(),
        &["trim", "cut.hrxt", "-o", "t.hrxt", "--submissions", "2.."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let end = "closed cleanly, but trimmed from an incomplete recording";
    let json = |args: &[&str]| -> serde_json::Value {
        let out = run(dir.path(), args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let info = json(&["info", "--json", "t.hrxt"]);
    assert_eq!(info["closed"]["complete"], false, "{info}");
    assert_eq!(info["closed"]["end"], end, "{info}");
    let stats = json(&["stats", "--json", "t.hrxt"]);
    assert_eq!(stats["complete"], false, "{stats}");
    let out = run(
        dir.path(),
        &["export", "t.hrxt", "--format", "chrome", "-o", "t.json"],
    );
    assert!(stderr(&out).contains(end), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
    let marks = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "trace incomplete")
        .count();
    assert_eq!(marks, 1);
    let out = run(dir.path(), &["diff", "t.hrxt", "t.hrxt"]);
    assert!(
        stdout(&out).contains("same as far as both traces go"),
        "{}",
        stdout(&out)
    );
    // The trim of a whole recording stays whole.
    let out = run(
        dir.path(),
        &["trim", "p.hrxt", "-o", "w.hrxt", "--submissions", "2.."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let info = json(&["info", "--json", "w.hrxt"]);
    assert_eq!(info["closed"]["complete"], true, "{info}");
}

/// `dump` of a cut trace says so before its first record too: `dump | head` stops reading at
/// the closed pipe, before the warnings that follow the records. A whole trace draws none.
#[test]
fn dump_of_a_cut_trace_warns_before_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["-q", "record", "-o", "w.hrxt", "--workload", "hazards"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("w.hrxt")).unwrap();
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = run_into_closed_stdout(dir.path(), &["dump", "cut.hrxt"]);
    let err = stderr(&out);
    assert!(
        err.contains("warning: cut.hrxt: does not end with its index (cut short"),
        "{err}"
    );
    let out = run_into_closed_stdout(dir.path(), &["dump", "w.hrxt"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn an_output_that_cannot_be_created_is_named_not_its_partial_file() {
    // A directory that exists but takes no new file (`/proc`, as root too): `trim` said
    // "error: /proc/x.hrxt.PID.partial: No such file or directory", a file the user never
    // named, and `export` the bare OS error; neither said what could not be written.
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let trim = run(
        dir.path(),
        &[
            "trim",
            "h.hrxt",
            "--submissions",
            "1..3",
            "-o",
            "/proc/x.hrxt",
        ],
    );
    assert_error(&trim, "cannot write the trimmed trace to /proc/x.hrxt: ");
    assert!(!stderr(&trim).contains("partial"), "{}", stderr(&trim));
    for format in ["chrome", "perfetto"] {
        let export = run(
            dir.path(),
            &["export", "h.hrxt", "--format", format, "-o", "/proc/x.out"],
        );
        assert_error(&export, "cannot write the export to /proc/x.out: ");
    }
}

/// One damaged block is explained in one sentence by every verb that reads it (the
/// records read from how many complete blocks, what was skipped and discarded): `info`'s
/// `recovered` line, the `warning:` line of `stats`, `export` and `dump`, and the export's
/// `trace incomplete` mark. They said it three ways: `info` counted 101 records skipped
/// (the session end's count, read with the submission checks), `stats` said nothing of
/// them, the export's mark counted 0.
#[test]
fn one_damaged_block_is_explained_alike_by_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let mut bytes = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(dir.path().join("dmg.hrxt"), &bytes).unwrap();
    let info = stdout(&run(dir.path(), &["info", "dmg.hrxt"]));
    let mut lines = info.lines().skip_while(|l| !l.starts_with("recovered "));
    assert!(
        field(&info, "recovered").starts_with("closed, but damaged parts were skipped"),
        "{info}"
    );
    let said = lines.nth(1).unwrap_or_else(|| panic!("{info}")).trim();
    assert!(said.contains(" skipped"), "{info}");
    for args in [
        &["info", "dmg.hrxt"][..],
        &["stats", "dmg.hrxt"],
        &["export", "dmg.hrxt", "--format", "chrome", "-o", "dmg.json"],
        &["dump", "dmg.hrxt"],
    ] {
        let err = stderr(&run(dir.path(), args));
        assert!(
            err.lines().any(|l| l
                .starts_with("warning: dmg.hrxt: closed, but damaged parts were skipped; ")
                && l.ends_with(&format!(": {said}"))),
            "{args:?}: {said}\n{err}"
        );
    }
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("dmg.json")).unwrap())
            .unwrap();
    let mark = export["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "trace incomplete")
        .unwrap_or_else(|| panic!("{export:#}"));
    assert_eq!(mark["args"]["recovered"], said, "{mark}");
}

/// A trace's name holding a newline or an escape sequence is shown quoted and escaped in
/// every message naming it (`error:`, `warning:`, `note:` lines, the one-line headers of the
/// reports), as Rust's `{:?}` writes a string: printed raw, one warning read as two lines,
/// the second no message at all, and the escape sequence reached the terminal. A plain name
/// is shown as it is (every other test).
#[test]
fn a_trace_name_with_control_characters_is_escaped_in_messages() {
    let dir = tempfile::tempdir().unwrap();
    let name = "cut\n\u{1b}[2Jshort.hrxt";
    let shown = r#""cut\n\u{1b}[2Jshort.hrxt""#;
    // Each line of standard error one message; nothing of the name raw.
    let one_line_each = |what: &str, err: &str| {
        for line in err.lines() {
            assert!(
                ["error: ", "warning: ", "note: ", "hint: ", "running "]
                    .iter()
                    .any(|p| line.starts_with(p)),
                "{what}: a line that is no message: {line:?} in {err:?}"
            );
        }
        assert!(!err.contains('\u{1b}'), "{what}: {err:?}");
    };
    let missing = run(dir.path(), &["info", "no\nsuch.hrxt"]);
    assert_error(&missing, r#"error: "no\nsuch.hrxt": cannot open it"#);
    // The crashing example's trace: `record`, and every reader, warn that it is cut short.
    let record = hrx_trace(dir.path())
        .args(["record", "-o", name, "--"])
        .arg(example("crashing"))
        .arg("segv")
        .output()
        .unwrap();
    assert_eq!(code(&record), 128 + libc::SIGSEGV, "{}", stderr(&record));
    one_line_each("record", &stderr(&record));
    assert!(
        stderr(&record).contains(&format!("warning: {shown}: not closed cleanly")),
        "{}",
        stderr(&record)
    );
    assert!(
        stdout(&record).contains(&format!("file         {shown} (not closed cleanly")),
        "{}",
        stdout(&record)
    );
    for args in [
        &["info", name][..],
        &["stats", name],
        &["dump", name],
        &["replay", name],
        &["diff", name, name],
        &["export", name, "-o", "out.json"],
    ] {
        let out = run(dir.path(), args);
        assert!(code(&out) < 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        one_line_each(args[0], &err);
        assert!(
            err.contains(&format!("warning: {shown}: ")),
            "{args:?}: {err}"
        );
        assert!(
            !stdout(&out).contains('\u{1b}'),
            "{args:?}: {}",
            stdout(&out)
        );
    }
    let replay = stdout(&run(dir.path(), &["replay", name]));
    assert!(
        replay.contains(&format!("hrx-trace replay: {shown} (trace format ")),
        "{replay}"
    );
}

/// The runtime's own `hrx:` lines (`HRX_TRACE` naming where a traced program records, and
/// `record --workload`'s trace the runtime opens) name the path as every other message
/// does: quoted and escaped where it holds a control character. Printed raw (a break-it
/// pass), `hrx: HRX_TRACE=x` and `y^[[1m.hrxt: it held an earlier trace...` read as two
/// lines, the second no message, and the escape sequence reached the terminal.
#[test]
fn the_runtimes_own_messages_show_a_path_with_control_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let traced = |path: &str| {
        std::process::Command::new(example("traced"))
            .arg("1")
            .current_dir(dir.path())
            .env_remove("HRX_TRACE_PATHS")
            .env("HRX_TRACE", path)
            .output()
            .unwrap()
    };
    let one_line = |what: &str, err: &str| {
        for line in err.lines() {
            assert!(
                ["hrx: ", "error: ", "warning: ", "note: ", "hint: "]
                    .iter()
                    .any(|p| line.starts_with(p)),
                "{what}: a line that is no message: {line:?} in {err:?}"
            );
        }
        assert!(!err.contains('\u{1b}'), "{what}: {err:?}");
    };
    // Recorded twice: the second run replaces the first's trace, and says so.
    let name = "x\ny\u{1b}[1m.hrxt";
    assert!(traced(name).status.success());
    let err = stderr(&traced(name));
    one_line("replaced", &err);
    assert!(
        err.contains(r#"hrx: HRX_TRACE="x\ny\u{1b}[1m.hrxt": it held an earlier trace"#),
        "{err}"
    );
    // A folder that is not there: the program runs untraced, and says where it could not.
    let err = stderr(&traced("nodir\n/t.hrxt"));
    one_line("cannot record there", &err);
    assert!(
        err.contains(r#"hrx: HRX_TRACE="nodir\n/t.hrxt": cannot record there ("#),
        "{err}"
    );
    // A runtime given a trace it cannot open (`RuntimeOptions::trace`): `cannot open
    // trace`, escaped too (`runtime::tracing::a_trace_the_runtime_cannot_open_is_named_escaped`;
    // `record` checks its `-o` before its runtime opens it).
}

/// Names that are no UTF-8, or hold a character that is no control character but ends or
/// reorders a line (U+2028, a bidirectional override), are shown quoted and escaped too:
/// `a\xE9.hrxt` and `a\xE8.hrxt` were both shown `a\u{fffd}.hrxt`, and a line separator
/// split the message (a break-it pass).
#[test]
fn a_trace_name_that_is_no_utf8_or_holds_a_line_separator_is_escaped_in_messages() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    for (name, shown) in [
        (&b"a\xe9.hrxt"[..], r#"error: "a\xE9.hrxt": cannot open it"#),
        (b"a\xe8.hrxt", r#"error: "a\xE8.hrxt": cannot open it"#),
        (
            "a\u{2028}b.hrxt".as_bytes(),
            r#"error: "a\u{2028}b.hrxt": cannot open it"#,
        ),
        (
            "a\u{202e}txt.hrxt".as_bytes(),
            r#"error: "a\u{202e}txt.hrxt": cannot open it"#,
        ),
    ] {
        let out = hrx_trace(dir.path())
            .arg("info")
            .arg(std::ffi::OsStr::from_bytes(name))
            .output()
            .unwrap();
        assert_error(&out, shown);
        assert!(
            !stderr(&out).contains(['\u{2028}', '\u{202e}']),
            "{}",
            stderr(&out)
        );
    }
}

/// A verb whose standard output is full (`> /dev/full`) says, in its one `error:` line, that
/// standard output could not be written, not a bare `No space left on device (os error 28)`
/// that could be the trace's own file; a failed workload's error is said beside it, not
/// hidden by it (a fresh user's pass). Exit 2 each.
#[test]
fn a_full_standard_output_is_named_by_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let runs: [&[&str]; 7] = [
        &["info", "h.hrxt"],
        &["info", "--json", "h.hrxt"],
        &["stats", "h.hrxt"],
        &["stats", "--json", "h.hrxt"],
        &["dump", "h.hrxt"],
        &["export", "--format", "chrome", "h.hrxt", "-o", "-"],
        &["record", "--workload", "hazards", "-o", "r.hrxt"],
    ];
    for args in runs {
        let Some(full) = dev_full() else { return };
        let out = hrx_trace(dir.path())
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(
            err.lines().any(|l| l.starts_with("error: cannot write")
                && l.contains("to standard output: No space left on device")),
            "{args:?}: {err}"
        );
    }
    // `record --workload`'s summary is its output, lost (exit 2, as above), but its trace
    // closed and is not lost with it: the line says so (it read as a failed recording).
    let Some(full) = dev_full() else { return };
    let out = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "r.hrxt"])
        .stdout(full)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.lines().any(|l| l.starts_with(
            "error: cannot write the summary of r.hrxt to standard output: No space left"
        ) && l
            .ends_with("; the trace is complete: `hrx-trace info r.hrxt` prints its summary")),
        "{err}"
    );
    let info = run(dir.path(), &["info", "r.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    // A workload that fails says its own error too.
    let (Some(full), Some(_)) = (dev_full(), photo()) else {
        return;
    };
    let out = hrx_trace(dir.path())
        .args([
            "record",
            "--workload",
            "faults",
            "--max-width",
            "64",
            "--frames",
            "1",
            "--fault",
            "op=999999:device-lost",
            "-o",
            "f.hrxt",
        ])
        .stdout(full)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("to standard output: No space left"), "{err}");
    assert!(err.contains("error: the injected fault"), "{err}");
}

/// A standard output left non-blocking by whoever shares it (a parent reading a pipe
/// slowly, with `O_NONBLOCK` set) is waited for, not an error: `dump` printed part of its
/// records, then `error: Resource temporarily unavailable (os error 11)`, exit 2 (a break-it
/// pass). The pipe holds one page and is read only once `dump` waits to write more.
#[test]
fn a_non_blocking_standard_output_is_waited_for() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let whole = run(dir.path(), &["dump", "--json", "h.hrxt"]);
    assert!(whole.stdout.len() > 4 * 4096, "{}", whole.stdout.len());
    let (mut read, write) = small_pipe(&[]);
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(write.as_raw_fd(), libc::F_GETFL);
        assert_eq!(
            libc::fcntl(write.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK),
            0
        );
    }
    let mut child = hrx_trace(dir.path())
        .args(["dump", "--json", "h.hrxt"])
        .stdout(write)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_it_waits(
        &mut child,
        blocked_polling,
        "a wait for room in standard output",
        "it ended before it waited for room in standard output",
    );
    let mut printed = Vec::new();
    read.read_to_end(&mut printed).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(printed, whole.stdout);
}
