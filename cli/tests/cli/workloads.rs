//! `record --workload NAME`, then `info` and `dump` of what it wrote.

use crate::util::*;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Stdio;

#[test]
fn pipeline_on_a_photo_records_operations_and_submissions() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = record_pipeline(dir.path(), "run.hrxt", &photo);
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(
        field(&out, "workload").starts_with("pipeline: 3 frames of 320x"),
        "{out}"
    );
    assert!(
        field(&out, "outcome").starts_with("ok: 3 of 3 frames delivered"),
        "{out}"
    );
    assert!(field(&out, "file").ends_with("(clean close)"), "{out}");
    assert!(number(&out, "records") > 2, "{out}");
    assert!(number(&out, "operations") > 0, "{out}");
    assert!(number(&out, "submissions") >= 3, "{out}");
    assert_eq!(number(&out, "failures"), 0, "{out}");
    assert_eq!(number(&out, "quarantines"), 0, "{out}");
    assert!(field(&out, "bytes").contains("copied"), "{out}");
    assert!(dir.path().join("run.hrxt").is_file());
}

/// The pipeline's `frames in flight` counter is sampled as frames enter flight and as they
/// leave it: it rises to the frames in flight and comes back to 0 after the last frame (it
/// was sampled at submit only, so it never went down: a fresh user's pass).
#[test]
fn the_frames_in_flight_counter_returns_to_zero() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = record_pipeline(dir.path(), "run.hrxt", &photo);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let dump = stdout(&run(dir.path(), &["dump", "--json", "run.hrxt"]));
    let records: Vec<serde_json::Value> = dump
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record a line"))
        .collect();
    let name = records
        .iter()
        .find(|r| r["AnnotationName"]["text"] == "frames in flight")
        .map(|r| r["AnnotationName"]["name"].clone())
        .unwrap_or_else(|| panic!("no frames-in-flight counter:\n{dump}"));
    let values: Vec<f64> = records
        .iter()
        .filter(|r| r["CounterSample"]["name"] == name)
        .map(|r| r["CounterSample"]["value"].as_f64().unwrap())
        .collect();
    // Three frames, three in flight by default: up one a submit, down one a collect.
    assert_eq!(values, [1.0, 2.0, 3.0, 2.0, 1.0, 0.0], "{dump}");
}

#[test]
fn info_describes_a_recorded_pipeline() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let recorded = stdout(&record_pipeline(dir.path(), "run.hrxt", &photo));
    let output = run(dir.path(), &["info", "run.hrxt"]);
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(
        field(&out, "format").starts_with("1.17 (postcard records"),
        "{out}"
    );
    assert!(field(&out, "session").contains("UTC on "), "{out}");
    assert!(field(&out, "args").contains("--workload pipeline"), "{out}");
    assert!(field(&out, "closed").starts_with("cleanly"), "{out}");
    assert_eq!(
        number(&out, "records"),
        number(&recorded, "records"),
        "{out}"
    );
    for kind in [
        "SessionStart",
        "GraphOp",
        "Prepared",
        "Submit",
        "SessionEnd",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(kind)),
            "no {kind} count in:\n{out}"
        );
    }
    assert!(
        field(&out, "runtime").contains("slots per graph, 64 submission slots"),
        "{out}"
    );
}

#[test]
fn dump_prints_one_line_per_record_as_text_and_json() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let recorded = stdout(&record_pipeline(dir.path(), "run.hrxt", &photo));
    let records = number(&recorded, "records") as usize;

    let text = run(dir.path(), &["dump", "run.hrxt"]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    assert!(stderr(&text).is_empty(), "{}", stderr(&text));
    let lines: Vec<_> = stdout(&text).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), records);
    assert!(lines[0].contains("session"), "{}", lines[0]);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" submit ") && l.contains("sub="))
    );
    assert!(lines.last().unwrap().contains("session-end"));

    let json = run(dir.path(), &["dump", "--json", "run.hrxt"]);
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let mut kinds = Vec::new();
    for line in stdout(&json).lines() {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let object = value.as_object().expect("an object per record");
        assert_eq!(object.len(), 1, "externally tagged: {line}");
        kinds.push(object.keys().next().unwrap().clone());
    }
    assert_eq!(kinds.len(), records);
    assert_eq!(kinds.first().map(String::as_str), Some("SessionStart"));
    assert!(kinds.iter().any(|k| k == "GraphOp"));
    assert!(kinds.iter().any(|k| k == "Submit"));
}

#[test]
fn dump_into_a_closed_pipe_ends_quietly() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "run.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The JSON form holds the frame bytes, far more than a pipe buffer: the writes after
    // the reader is gone fail with EPIPE.
    let mut child = hrx_trace(dir.path())
        .args(["dump", "--json", "run.hrxt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"SessionStart\""), "{first}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn pipeline_with_the_default_photos() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "record",
            "--workload",
            "pipeline",
            "--frames",
            "2",
            "--max-width",
            "64",
        ],
    );
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(
        field(&out, "workload").starts_with("pipeline: 2 frames of 64x"),
        "{out}"
    );
    assert!(dir.path().join("hrx.hrxt").is_file(), "default output file");
    assert!(number(&out, "submissions") >= 2, "{out}");
}

#[test]
fn hazards_records_four_submissions() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &["record", "-o", "h.hrxt", "--workload", "hazards"],
    );
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(
        field(&out, "outcome").contains("match the sequential reference"),
        "{out}"
    );
    assert_eq!(number(&out, "submissions"), 4, "{out}");
    assert!(number(&out, "operations") >= 13, "{out}");
    assert_eq!(number(&out, "failures"), 0, "{out}");
    assert!(field(&out, "file").ends_with("(clean close)"), "{out}");
}

#[test]
fn faults_shows_the_failure_and_the_quarantine() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "record",
            "-o",
            "f.hrxt",
            "--workload",
            "faults",
            "--input",
            photo.to_str().unwrap(),
            "--max-width",
            "320",
        ],
    );
    let out = stdout(&output);
    assert_eq!(code(&output), 0, "{out}{}", stderr(&output));
    assert!(
        field(&out, "outcome").starts_with("kernel=hrx_sobel#2:device-lost fired as injected"),
        "{out}"
    );
    assert!(number(&out, "failures") >= 1, "{out}");
    assert!(field(&out, "failures").contains("device lost"), "{out}");
    assert!(number(&out, "quarantines") >= 1, "{out}");
    assert!(field(&out, "quarantines").contains("poisoned"), "{out}");
    assert!(field(&out, "file").ends_with("(clean close)"), "{out}");
    // `info` says the same of the submissions, the failures and the quarantines as the
    // summary, read from the same trace (it said none of it in text, only in --json).
    let info = stdout(&run(dir.path(), &["info", "f.hrxt"]));
    for key in ["submissions", "failures", "quarantines"] {
        assert_eq!(field(&info, key), field(&out, key), "{key}: {info}");
    }

    let dump = stdout(&run(dir.path(), &["dump", "f.hrxt"]));
    assert!(dump.lines().any(|l| l.contains(" fault ")), "{dump}");
    assert!(dump.lines().any(|l| l.contains(" quarantine ")), "{dump}");
}

#[test]
fn faults_that_never_fire_are_an_error() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    // One 64-pixel-wide frame of `workload`, then `extra` arguments.
    let one_frame = |workload: &str, extra: &[&str]| {
        let mut args = vec!["record", "--workload", workload, "--input"];
        args.extend([
            photo.to_str().unwrap(),
            "--max-width",
            "64",
            "--frames",
            "1",
        ]);
        args.extend(extra);
        run(dir.path(), &args)
    };
    let output = one_frame("faults", &[]);
    assert_error(&output, "never fired");
    // The default fault names a kernel dispatch: the hint says to check it.
    assert!(
        stderr(&output).contains("check the kernel name"),
        "{}",
        stderr(&output)
    );
    // What was recorded is still summarised.
    assert!(field(&stdout(&output), "file").contains("hrx.hrxt"));
    // An operation number past the run's last: the hint says to run more frames.
    let output = one_frame(
        "faults",
        &["--fault", "op=999999:device-lost", "-o", "op.hrxt"],
    );
    assert_error(&output, "never fired");
    assert!(stderr(&output).contains("hint: run more --frames"));
    // A name the workload never runs is refused before anything runs (it ran the whole
    // workload first), naming the kernels it does run: a built-in kernel the pipeline never
    // dispatches too (the hint listed every built-in one, `hrx_saxpy` was then taken and
    // "never fired"; fresh-user passes).
    // The name quoted: `hrx_sobel ` read as a kernel the hint lists (a break-it pass).
    for (workload, kernel) in [
        ("pipeline", "nope"),
        ("faults", "hrx_saxpy"),
        ("pipeline", "hrx_fail"),
        ("faults", "hrx_sobel "),
    ] {
        let spec = format!("kernel={kernel}:kernel-error");
        let output = one_frame(workload, &["--fault", &spec, "-o", "n.hrxt"]);
        assert_error(
            &output,
            &format!("kernel \"{kernel}\" names no kernel the {workload} workload runs"),
        );
        assert!(
            stderr(&output).contains(&format!(
                "hint: the {workload} workload runs hrx_rgb_to_gray, hrx_blur_h, hrx_blur_v, \
                 hrx_sobel, hrx_histogram256, hrx_npu_threshold\n"
            )),
            "{}",
            stderr(&output)
        );
        assert!(!dir.path().join("n.hrxt").exists());
    }
    let output = record_hazards_faulted(dir.path(), "kernel=hrx_sobel:device-lost", "n.hrxt");
    assert_error(
        &output,
        "kernel \"hrx_sobel\" names no kernel the hazards workload runs",
    );
    assert!(
        stderr(&output).contains("hint: the hazards workload runs hrx_iota, hrx_fill_u32\n"),
        "{}",
        stderr(&output)
    );
}

/// `record --workload hazards --fault SPEC -o FILE` in `dir`.
fn record_hazards_faulted(dir: &std::path::Path, spec: &str, file: &str) -> std::process::Output {
    run(
        dir,
        &[
            "record",
            "--workload",
            "hazards",
            "--fault",
            spec,
            "-o",
            file,
        ],
    )
}

/// The hazards workload fails on a fault that never fired, as the pipeline workloads do (it
/// ran, exit 0, and said nothing: a break-it pass), from `--fault` or `HRX_FAULT`, and the
/// summary of what it recorded is still printed; a fault that fires fails it as injected.
#[test]
fn hazards_fails_on_a_fault_that_never_fires() {
    let dir = tempfile::tempdir().unwrap();
    for (file, spec, hint) in [
        (
            "f.hrxt",
            "kernel=hrx_fill_u32#2:kernel-error",
            "check the kernel name",
        ),
        (
            "i.hrxt",
            "kernel=hrx_iota#50:kernel-error",
            "check the kernel name",
        ),
        ("o.hrxt", "op=9999:device-lost", "name an earlier operation"),
    ] {
        let output = record_hazards_faulted(dir.path(), spec, file);
        assert_error(
            &output,
            &format!(
                "the injected fault {spec} never fired in the hazards workload's 4 submissions"
            ),
        );
        assert!(stderr(&output).contains(hint), "{}", stderr(&output));
        // No frames to add: the hint does not offer them.
        assert!(!stderr(&output).contains("--frames"), "{}", stderr(&output));
        let out = stdout(&output);
        assert!(field(&out, "outcome").ends_with("never fired"), "{out}");
        assert!(field(&out, "file").contains(file), "{out}");
    }
    let output = crate::util::hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "e.hrxt"])
        .env("HRX_FAULT", "op=9999:device-lost")
        .output()
        .unwrap();
    assert_error(
        &output,
        "the injected fault op=9999:device-lost never fired",
    );
    let output = record_hazards_faulted(dir.path(), "kernel=hrx_fill_u32:kernel-error", "k.hrxt");
    assert_error(&output, "the hazards workload failed");
}

/// A failed workload whose standard output was closed before its first line (`| true`)
/// still fails: its error, exit 2, and one line saying the summary was cut. The first three
/// summary lines returned at the closed pipe, skipping the run's checks: exit 0 and nothing
/// said but the replaced-trace note (a fresh user's pass).
#[test]
fn a_failed_workload_into_a_closed_pipe_still_fails_and_says_so() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "record",
        "--workload",
        "faults",
        "--input",
        photo.to_str().unwrap(),
        "--max-width",
        "64",
        "--frames",
        "1",
        "--fault",
        "op=999999:device-lost",
        "-o",
        "c.hrxt",
    ];
    let out = run_into_closed_stdout(dir.path(), &args);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: ") && l.contains("never fired")),
        "{err}"
    );
    assert_eq!(
        err.matches("standard output was closed before record's summary")
            .count(),
        1,
        "{err}"
    );
    // The trace is whole all the same.
    assert!(dir.path().join("c.hrxt").is_file());
}

#[test]
fn unknown_workload_lists_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["record", "--workload", "nope"]);
    assert_error(&output, "pipeline, hazards, faults");
    assert!(!dir.path().join("hrx.hrxt").exists());
}

#[test]
fn bad_backend_and_fault_specs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let backend = run(
        dir.path(),
        &["record", "--workload", "hazards", "--backend", "tpu"],
    );
    assert_error(&backend, "unknown backend");
    let fault = run(
        dir.path(),
        &["record", "--workload", "faults", "--fault", "op=x"],
    );
    assert_error(&fault, "bad fault spec");
    let env_fault = hrx_trace(dir.path())
        .args(["record", "--workload", "faults"])
        .env("HRX_FAULT", "op=x")
        .output()
        .unwrap();
    assert_error(
        &env_fault,
        "error: HRX_FAULT: expected op=N:KIND or kernel=NAME[#N]:KIND (KIND device-lost or \
         kernel-error), got \"op=x\": missing ':KIND'",
    );
    // Two kinds, or a list of kernels, are said as such (the quoted name was all there was:
    // `kernel "hrx_blur_h,hrx_sobel" names no kernel the pipeline workload runs`).
    for (spec, says) in [
        (
            "kernel=hrx_blur_h:kernel-error:device-lost",
            "two kinds (kernel-error and device-lost): a fault has one kind",
        ),
        (
            "kernel=hrx_blur_h,hrx_sobel:kernel-error",
            "a list of kernels (\"hrx_blur_h,hrx_sobel\"): a fault names one, and a run \
             injects one fault",
        ),
    ] {
        let out = run(
            dir.path(),
            &["record", "--workload", "pipeline", "--fault", spec],
        );
        assert_error(
            &out,
            &format!("error: --fault: bad fault spec {spec:?}: {says} ("),
        );
    }
    for n in ["0", "65"] {
        let in_flight = run(
            dir.path(),
            &["record", "--workload", "pipeline", "--in-flight", n],
        );
        assert_error(
            &in_flight,
            &format!("between 1 and 64 (the runtime's submission slots), not {n}"),
        );
    }
    assert!(!dir.path().join("hrx.hrxt").exists());
}

/// `hazards` has no photos, frames or frames in flight: each option for them is refused in
/// one line, as `--frames` was, before anything is recorded (`--in-flight` and
/// `--max-width` were ignored silently, and `diff` then told identical runs apart by their
/// arguments: a break-it pass).
#[test]
fn hazards_refuses_every_pipeline_option() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--in-flight", "8"),
        ("--max-width", "10"),
        ("--frames", "5"),
        ("--input", "x.jpg"),
    ] {
        let output = run(
            dir.path(),
            &[
                "record",
                "--workload",
                "hazards",
                flag,
                value,
                "-o",
                "h.hrxt",
            ],
        );
        assert_error(
            &output,
            &format!("{flag} applies to the pipeline and faults workloads, not hazards"),
        );
        assert!(!dir.path().join("h.hrxt").exists(), "{flag}");
    }
}

/// `faults` injects the fault `HRX_FAULT` names instead of its own, and says so.
#[test]
fn faults_runs_the_fault_hrx_fault_names() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = hrx_trace(dir.path())
        .args(["record", "--workload", "faults", "--max-width", "64"])
        .args(["--input", photo.to_str().unwrap()])
        .env("HRX_FAULT", "op=2:kernel-error")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stdout(&output);
    let outcome = field(&text, "outcome");
    assert!(
        outcome.starts_with("op=2:kernel-error fired as injected"),
        "{outcome}"
    );
    assert!(outcome.contains("at device operation 2"), "{outcome}");
}

#[test]
fn missing_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(
        dir.path(),
        &[
            "record",
            "--workload",
            "pipeline",
            "--input",
            "no-such-photos",
        ],
    );
    assert_error(&output, "no-such-photos");
    assert!(!dir.path().join("hrx.hrxt").exists());
}

#[test]
fn a_cut_short_photograph_is_an_error_not_a_grey_frame() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/photo.jpg")).unwrap();
    let cut = dir.path().join("cut.jpg");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let output = run(
        dir.path(),
        &["record", "--workload", "pipeline", "--input", "cut.jpg"],
    );
    assert_error(
        &output,
        "cut.jpg: the JPEG data ends before its end-of-image marker",
    );
    assert!(!dir.path().join("hrx.hrxt").exists());
}

/// `dir/in` holding the test photograph whole as `a.jpg` and `bad` as `b.jpg`, and the
/// arguments recording the pipeline over it into `t.hrxt`.
fn photos_with_a_bad_one(
    dir: &std::path::Path,
    bad: impl FnOnce(&[u8]) -> Vec<u8>,
) -> [&'static str; 11] {
    let whole = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/photo.jpg")).unwrap();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.jpg"), &whole).unwrap();
    std::fs::write(dir.join("in/b.jpg"), bad(&whole)).unwrap();
    [
        "record",
        "--workload",
        "pipeline",
        "--input",
        "in",
        "--max-width",
        "64",
        "--frames",
        "4",
        "-o",
        "t.hrxt",
    ]
}

/// A photograph that does not decode after others did stops the run there: an error, and a
/// closed trace that says it is not the whole run (`stopped by an error after N of M
/// frames`) and marks why, where it read "whole: recorded to the program's end" (break-it
/// pass, 2026-12-03).
#[test]
fn a_photograph_that_fails_mid_run_leaves_a_trace_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let args = photos_with_a_bad_one(dir.path(), |_| b"not a photograph".to_vec());
    let output = run(dir.path(), &args);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stderr(&output).contains("b.jpg"), "{}", stderr(&output));
    let info = stdout(&run(dir.path(), &["info", "t.hrxt"]));
    let capture = field(&info, "capture");
    assert!(
        capture.starts_with("stopped by an error after ")
            && capture.ends_with(" of 4 frames, then closed"),
        "{info}"
    );
    let dump = stdout(&run(dir.path(), &["dump", "t.hrxt"]));
    assert!(dump.contains("signal=0"), "{dump}");
    assert!(
        dump.lines()
            .any(|l| l.contains("stopped: ") && l.contains("b.jpg")),
        "{dump}"
    );
}

#[test]
fn an_output_that_is_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let output = run(
        dir.path(),
        &["record", "-o", "sub", "--workload", "hazards"],
    );
    assert_error(&output, "is a directory");
    let output = run(
        dir.path(),
        &["record", "-o", "nowhere/t.hrxt", "--", "true"],
    );
    assert_error(&output, "does not exist");
    // Trim and export name the missing directory as record does (they had given the OS
    // error, trim's naming its temporary `.partial` file).
    run(
        dir.path(),
        &["record", "-q", "-o", "h.hrxt", "--workload", "hazards"],
    );
    for (args, says) in [
        (
            &[
                "trim",
                "h.hrxt",
                "-o",
                "nowhere/t.hrxt",
                "--submissions",
                "1..3",
            ][..],
            "cannot write the trimmed trace to nowhere/t.hrxt: directory nowhere does not exist",
        ),
        (
            &["export", "h.hrxt", "-o", "nowhere/t.json"][..],
            "cannot write the export to nowhere/t.json: directory nowhere does not exist",
        ),
    ] {
        assert_error(&run(dir.path(), args), says);
    }
    assert!(!dir.path().join("nowhere").exists());
    // A file where the directory should be, or a symbolic-link loop, is said as such, not
    // as a missing directory (a break-it pass).
    std::fs::write(dir.path().join("file"), b"").unwrap();
    std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
    for (output, says) in [
        ("file/t.hrxt", "directory file is not a directory"),
        ("loop/t.hrxt", "directory loop cannot be used: "),
    ] {
        let args = ["record", "-q", "-o", output, "--workload", "hazards"];
        assert_error(&run(dir.path(), &args), says);
    }
    // Through a dangling symbolic link, the missing directory is the link's target's, named
    // as a plain missing one is (it was "cannot start the hrx runtime: cannot open trace
    // ...: No such file or directory": a break-it pass).
    for (args, what, link) in [
        (
            &["record", "-q", "-o", "d.hrxt", "--workload", "hazards"][..],
            "the trace",
            "d.hrxt",
        ),
        (
            &["trim", "h.hrxt", "-o", "t.hrxt", "--submissions", "1..3"],
            "the trimmed trace",
            "t.hrxt",
        ),
        (
            &["export", "h.hrxt", "-o", "e.json"],
            "the export",
            "e.json",
        ),
    ] {
        std::os::unix::fs::symlink(format!("gone/{link}"), dir.path().join(link)).unwrap();
        assert_error(
            &run(dir.path(), args),
            &format!(
                "cannot write {what} to {link}: directory gone does not exist ({link} links \
                 to gone/{link})"
            ),
        );
    }
    assert!(!dir.path().join("gone").exists());
}

/// `record FLAGS -o t.hrxt --workload hazards` in `dir`, contents traced, under a file size
/// limit that the trace passes, as a full disk would stop it ([`size_limited`]).
fn hazards_on_a_full_disk(dir: &Path, flags: &str) -> std::process::Output {
    let args = format!("record {flags} -o t.hrxt --workload hazards");
    std::process::Command::new("sh")
        .args(["-c", &size_limited(&args)])
        .current_dir(dir)
        .env_remove("HRX_TRACE")
        .env("HRX_TRACE_CONTENTS", "1")
        .output()
        .unwrap()
}

/// A trace that cannot be written whole (a file size limit, as a full disk would) fails the
/// recording in one line, after the report of what the workload did.
#[test]
fn a_full_disk_fails_the_recording_after_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let output = hazards_on_a_full_disk(dir.path(), "");
    assert_error(&output, "the trace is incomplete");
    assert!(
        field(&stdout(&output), "outcome").starts_with("ok"),
        "{}",
        stdout(&output)
    );
    // And what was written, summarised (there was no `file` line).
    assert!(
        field(&stdout(&output), "file").contains("not closed cleanly"),
        "{}",
        stdout(&output)
    );
}

/// A pipeline whose trace cannot be written (a file size limit, as a full disk would) stops
/// at the first write that fails, after the frames in flight, not after its last frame: the
/// report says so, then one error line. It ran all its frames, and only then said the trace
/// could not be written.
#[test]
fn a_full_disk_stops_the_pipeline_at_the_first_failed_write() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = photo.parent().unwrap().to_str().unwrap().to_owned();
    let record = format!(
        "record -o t.hrxt --workload pipeline --input '{folder}' --frames 48 --max-width 160"
    );
    let output = std::process::Command::new("sh")
        .args(["-c", &size_limited(&record)])
        .current_dir(dir.path())
        .env_remove("HRX_TRACE")
        .output()
        .unwrap();
    assert_error(&output, "the trace is incomplete");
    assert!(
        stderr(&output).contains("File too large"),
        "{}",
        stderr(&output)
    );
    let out = stdout(&output);
    let outcome = field(&out, "outcome");
    let delivered: usize = outcome
        .strip_prefix("stopped when the trace could not be written: ")
        .and_then(|rest| rest.strip_suffix(" of 48 frames delivered"))
        .unwrap_or_else(|| panic!("{out}"))
        .parse()
        .unwrap();
    assert!(delivered < 48, "{out}");
}

/// Starts `record --workload pipeline` of a million frames into `dir/t.hrxt`, waits until
/// the trace exists, does `meanwhile`, then stops the run with SIGTERM; returns its output.
fn while_recording(dir: &Path, photo: &Path, meanwhile: impl FnOnce()) -> std::process::Output {
    let mut child = endless_pipeline(dir, photo, "t.hrxt");
    while !dir.join("t.hrxt").exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "it exited without a trace"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    meanwhile();
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    child.wait_with_output().unwrap()
}

/// A trace renamed while it was recorded is whole under its new name: `record --workload`
/// summarises it there, saying so, and ends as the run does (it said "cannot open it" with
/// a hint to record one, exit 2: a break-it pass). One deleted is lost: exit 2, said once,
/// with no such hint.
#[test]
fn a_workload_trace_moved_while_recorded_is_summarised_where_it_is() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let output = while_recording(dir.path(), &photo, || {
        std::fs::rename(dir.path().join("t.hrxt"), dir.path().join("moved.hrxt")).unwrap();
    });
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(code(&output), 128 + libc::SIGTERM, "{out}{err}");
    assert!(
        field(&out, "file").contains("moved.hrxt (clean close)"),
        "{out}"
    );
    assert!(
        err.contains("note: the summary below is of ")
            && err.contains("moved.hrxt, the trace's name now"),
        "{err}"
    );
    assert!(!err.contains("error:") && !err.contains("hint:"), "{err}");

    // Deleted; replaced by another trace moved over it (which was summarised as this run's,
    // exit 0: a second break-it pass); unlinked from its name beside a hard link (said to be
    // "moved to t.hrxt (deleted)").
    record_hazards(dir.path(), "other.hrxt");
    let lost = "error: the trace t.hrxt is lost: it was deleted (or unlinked from that name) \
                while it was recorded";
    let ways: [(&str, &dyn Fn()); 3] = [
        ("deleted", &|| {
            std::fs::remove_file(dir.path().join("t.hrxt")).unwrap()
        }),
        ("replaced", &|| {
            std::fs::rename(dir.path().join("other.hrxt"), dir.path().join("t.hrxt")).unwrap()
        }),
        ("unlinked beside a hard link", &|| {
            let _ = std::fs::remove_file(dir.path().join("linked.hrxt"));
            std::fs::hard_link(dir.path().join("t.hrxt"), dir.path().join("linked.hrxt")).unwrap();
            std::fs::remove_file(dir.path().join("t.hrxt")).unwrap();
        }),
    ];
    for (way, change) in ways {
        // Each recording's own t.hrxt is waited for before the change.
        let _ = std::fs::remove_file(dir.path().join("t.hrxt"));
        let output = while_recording(dir.path(), &photo, change);
        let (out, err) = (stdout(&output), stderr(&output));
        assert_eq!(code(&output), 2, "{way}: {out}{err}");
        assert!(err.lines().last() == Some(lost), "{way}: {err}");
        assert!(
            !err.contains("hint:") && !err.contains("moved"),
            "{way}: {err}"
        );
        assert!(!out.contains("file "), "{way}: {out}");
    }
}

/// A photograph that does not decode mid-run stops it with an error after the report and
/// the summary of the trace written, and `--json` prints its line (text printed no summary,
/// and `--json` nothing: a break-it pass); so does a first photograph that does not decode,
/// though nothing was recorded (a second break-it pass).
#[test]
fn a_workload_stopped_by_a_bad_photograph_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let args = photos_with_a_bad_one(dir.path(), |whole| whole[..whole.len() / 2].to_vec());
    let text = run(dir.path(), &args);
    let (out, err) = (stdout(&text), stderr(&text));
    assert_eq!(code(&text), 2, "{out}{err}");
    assert!(
        field(&out, "outcome").starts_with("stopped by an input error: ")
            && field(&out, "outcome").ends_with(" of 4 frames delivered"),
        "{out}"
    );
    assert!(
        field(&out, "file").starts_with("t.hrxt (clean close)"),
        "{out}"
    );
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.starts_with("error: ") && l.contains("b.jpg")),
        "{err}"
    );
    let json = run(dir.path(), &[&args[..], &["--json"]].concat());
    assert_eq!(code(&json), 2, "{}", stderr(&json));
    let line: serde_json::Value = serde_json::from_str(stdout(&json).trim())
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&json), stderr(&json)));
    assert!(
        line["outcome"]
            .as_str()
            .unwrap()
            .starts_with("stopped by an input error"),
        "{line:#}"
    );
    assert!(
        line["failed"].as_str().unwrap().contains("b.jpg"),
        "{line:#}"
    );
    assert_eq!(line["trace"]["complete"], true, "{line:#}");
    // The first photograph: nothing ran and no trace was written, but `--json` prints its
    // line, `trace` null, then the error (it printed nothing).
    let first = run(
        dir.path(),
        &[
            "record",
            "--workload",
            "pipeline",
            "--input",
            "in/b.jpg",
            "-o",
            "first.hrxt",
            "--json",
        ],
    );
    assert_eq!(code(&first), 2, "{}", stderr(&first));
    let line: serde_json::Value = serde_json::from_str(stdout(&first).trim())
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&first), stderr(&first)));
    assert!(
        line["outcome"]
            .as_str()
            .unwrap()
            .starts_with("stopped by an input error before the first frame"),
        "{line:#}"
    );
    assert!(
        line["failed"].as_str().unwrap().contains("b.jpg"),
        "{line:#}"
    );
    assert_eq!(line["trace"], serde_json::Value::Null, "{line:#}");
    assert!(
        stderr(&first)
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("error: ") && l.contains("b.jpg")),
        "{}",
        stderr(&first)
    );
    assert!(!dir.path().join("first.hrxt").exists());
}

/// A trace that cannot be written whole (a file size limit, as a full disk would): `--json`
/// prints the line of what was written, `complete: false`, then the error (it printed
/// nothing).
#[test]
fn a_full_disk_still_prints_the_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = hazards_on_a_full_disk(dir.path(), "--json");
    assert_error(&output, "the trace is incomplete");
    let line: serde_json::Value = serde_json::from_str(stdout(&output).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", stdout(&output)));
    assert_eq!(line["trace"]["complete"], false, "{line:#}");
    assert!(
        line["outcome"].as_str().unwrap().starts_with("ok"),
        "{line:#}"
    );
    assert!(
        line["failed"]
            .as_str()
            .unwrap()
            .starts_with("the trace is incomplete"),
        "{line:#}"
    );
}

/// SIGINT (a Ctrl-C), SIGTERM (a CI runner's timeout) or SIGUSR1 (a signal nobody handles)
/// during a long `record --workload` stops it after the frames in flight: the report and
/// the summary of a cleanly closed trace, then exit 128+N. Before, the signal killed
/// hrx-trace and left a trace that was never closed (SIGUSR1 until session 51). The same signal twice at once, as coreutils `timeout` sends it (to its child,
/// then to the child's process group), is one: it killed the workload before its trace was
/// closed when the second counted as a second interrupt. A try whose two signals this test
/// could not send within 100 ms of each other (a loaded machine) is not judged: it runs again.
#[test]
fn a_signal_stops_a_workload_with_a_closed_trace() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (signal, name, times) in [
        (libc::SIGINT, "SIGINT", 1),
        (libc::SIGTERM, "SIGTERM", 1),
        (libc::SIGTERM, "SIGTERM", 2),
        // A user signal ended the run by its default action, the trace cut short unnamed.
        (libc::SIGUSR1, "SIGUSR1", 1),
    ] {
        for attempt in 0.. {
            let file = format!("{name}-{times}-{attempt}.hrxt");
            let mut child = endless_pipeline(dir.path(), &photo, &file);
            // The trace exists once the runtime runs, after the handlers are installed.
            while !dir.path().join(&file).exists() {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "it exited without a trace"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let at_once = if times == 2 {
                send_twice_at_once(child.id(), signal)
            } else {
                // SAFETY: kill has no memory preconditions; the pid is our child's.
                assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
                true
            };
            let output = child.wait_with_output().unwrap();
            if !at_once {
                assert!(
                    attempt < 9,
                    "10 tries, none sent its two signals within 100 ms"
                );
                continue;
            }
            let (out, err) = (stdout(&output), stderr(&output));
            assert_eq!(code(&output), 128 + signal, "{out}{err}");
            assert!(
                field(&out, "outcome").starts_with(&format!("stopped by {name}: ")),
                "{out}"
            );
            assert!(field(&out, "file").contains("(clean close)"), "{out}");
            assert!(
                err.contains(&format!(
                    "received signal {signal} ({name}) and stopped the workload"
                )),
                "{err}"
            );
            let info = run(dir.path(), &["info", &file]);
            assert_eq!(code(&info), 0, "{}", stderr(&info));
            assert!(
                !stdout(&info).contains("not closed cleanly"),
                "{}",
                stdout(&info)
            );
            // Closed, but not the whole run: it said "closed cleanly" and nothing more.
            let capture = field_of(&stdout(&info), "capture");
            assert!(
                capture.starts_with(&format!("stopped by {name} after "))
                    && capture.contains(" of 1000000 frames"),
                "{}",
                stdout(&info)
            );
            break;
        }
    }
    // A run to its end is whole.
    let out = run(
        dir.path(),
        &["record", "--workload", "hazards", "-o", "whole.hrxt"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let info = stdout(&run(dir.path(), &["info", "whole.hrxt"]));
    assert!(field_of(&info, "capture").starts_with("whole"), "{info}");
}

/// Two different signals that arrive together (a supervisor's SIGTERM and a closed
/// terminal's SIGHUP, SIGUSR1 and SIGUSR2) make one stop: the first stops the workload
/// after its frames in flight, the other is folded into that stop and named in its note,
/// the trace closed and labelled with the first (they killed it at once, silently, the trace
/// cut short and never closed: break-it D8). The child is held stopped while both are sent.
#[test]
fn two_signals_together_stop_a_workload_once_with_a_closed_trace() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (a, b) in [
        (libc::SIGTERM, libc::SIGHUP),
        (libc::SIGUSR1, libc::SIGUSR2),
    ] {
        let file = format!("together-{a}-{b}.hrxt");
        let mut child = endless_pipeline(dir.path(), &photo, &file);
        assert!(
            crate::util::signals_together_once_handled(&mut child, &[a, b]),
            "it ended before it handled both"
        );
        let output = child.wait_with_output().unwrap();
        let (out, err) = (stdout(&output), stderr(&output));
        // The kernel delivers the lower-numbered first, to a thread each: either may be
        // handled first.
        let name = |s: i32| hrx_capture::schema::signal_name(s).unwrap();
        let (first, then) = if code(&output) == 128 + b {
            (b, a)
        } else {
            (a, b)
        };
        assert_eq!(code(&output), 128 + first, "{out}{err}");
        assert!(
            field(&out, "outcome").starts_with(&format!("stopped by {}: ", name(first))),
            "{out}"
        );
        assert!(field(&out, "file").contains("(clean close)"), "{out}");
        assert!(
            err.contains(&format!(
                "received signal {first} ({}) and stopped the workload (signal {then} ({}) \
                 came as it stopped: the same stop); the trace is closed",
                name(first),
                name(then)
            )),
            "{err}"
        );
        let info = stdout(&run(dir.path(), &["info", &file]));
        assert!(!info.contains("not closed cleanly"), "{info}");
        assert!(
            field_of(&info, "capture").starts_with(&format!("stopped by {} after ", name(first))),
            "{info}"
        );
    }
}

/// `record --workload` whose summary waits in a write nobody reads (standard output a full
/// pipe) ends on SIGTERM, by its default action, the trace closed before: its stop handler
/// was still set, and every signal was folded into a stop that had nothing left to stop,
/// so only SIGQUIT or SIGKILL ended it (a break-it pass).
#[test]
fn a_workload_whose_summary_nobody_reads_ends_on_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let held = vec![b'x'; 4096];
    let (read, write) = crate::util::small_pipe(&held);
    let mut child = hrx_trace(dir.path())
        .args(["record", "--workload", "hazards", "-o", "s.hrxt"])
        .stdout(write)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::terminate_once_it_waits(
        &mut child,
        |pid| crate::util::blocked_writing(pid, 1),
        "a write of its summary waiting",
        "it ended before its summary waited",
    );
    // A liveness limit, not a measurement: it ends at once, or never (then killed).
    let ended = crate::util::ended_within_a_minute(&mut child);
    drop(read);
    let status = ended.expect("SIGTERM did not end a workload whose summary nobody read");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    let info = stdout(&run(dir.path(), &["info", "s.hrxt"]));
    assert!(!info.contains("not closed cleanly"), "{info}");
}

/// Several different signals sent together to `record --workload` are one stop whose note
/// names every one after the first (only the first other one was named, the rest unsaid,
/// while README says every signal after the first is named: break-it D6).
#[test]
fn several_signals_together_are_each_named_in_the_stop_note() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let signals = [libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGTERM];
    let mut child = endless_pipeline(dir.path(), &photo, "many.hrxt");
    assert!(
        crate::util::signals_together_once_handled(&mut child, &signals),
        "it ended before it handled them all"
    );
    let output = child.wait_with_output().unwrap();
    let (out, err) = (stdout(&output), stderr(&output));
    let first = code(&output) - 128;
    assert!(signals.contains(&first), "{out}{err}");
    let name = |s: i32| hrx_capture::schema::signal_name(s).unwrap();
    let note = err
        .lines()
        .find(|l| l.contains("and stopped the workload"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        note.contains(&format!("received signal {first} ({})", name(first))),
        "{note}"
    );
    assert!(
        note.contains("came as it stopped: the same stop)"),
        "{note}"
    );
    for signal in signals {
        assert!(
            note.contains(&format!("signal {signal} ({})", name(signal))),
            "{} unnamed: {note}",
            name(signal)
        );
    }
    assert!(field(&out, "file").contains("(clean close)"), "{out}");
}

/// `info` names the host clock a trace's times were read on: the TSC where the CPU reports an
/// invariant one, else `CLOCK_MONOTONIC`; `HRX_TRACE_CLOCK=monotonic` forces the fallback.
#[test]
fn info_names_the_clock_and_the_fallback_can_be_forced() {
    let dir = tempfile::tempdir().unwrap();
    for forced in [false, true] {
        let mut record = hrx_trace(dir.path());
        record.args(["record", "--workload", "hazards", "-o", "clock.hrxt"]);
        if forced {
            record.env(hrx_capture::clock::CLOCK_ENV, "monotonic");
        }
        let out = record.output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let info = stdout(&run(dir.path(), &["info", "clock.hrxt"]));
        let clock = field_of(&info, "clock");
        if forced || !hrx_capture::clock::invariant_tsc() {
            assert!(clock.starts_with("CLOCK_MONOTONIC ("), "{info}");
        } else {
            assert!(
                clock.starts_with("TSC at ") && clock.contains("GHz"),
                "{info}"
            );
        }
        assert!(clock.contains(" calibrations"), "{info}");
    }
}

/// The value of `key`'s line (an owned copy of [`field`]'s).
fn field_of(text: &str, key: &str) -> String {
    field(text, key).to_owned()
}

/// The pipeline annotates its host work (issue 19): decoding and scaling on the named
/// `decoder` thread, the main thread's wait for a decoded photo, its frame writes and
/// output reads, and the frames in flight; `stats`, `export` and `diff` read them back with
/// the host threads' submits and waits.
#[test]
fn pipeline_annotations_and_host_threads_reach_stats_export_and_diff() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.hrxt", "b.hrxt"] {
        let output = record_pipeline(dir.path(), name, &photo);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
    }
    let output = run(dir.path(), &["stats", "a.hrxt", "--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let stats: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let count = |table: &str, name: &str, field: &str| {
        stats[table]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {table}: {stats}"))[field]
            .as_u64()
            .unwrap()
    };
    // One photograph for three frames: decoded and scaled once, then reused.
    for (range, n) in [
        ("decode photo", 1),
        ("scale photo", 1),
        ("write frame", 3),
        ("read output", 3),
    ] {
        assert_eq!(count("annotations", range, "count"), n, "{range}");
    }
    // One wait per frame pulled, and one that finds the decoder done.
    assert_eq!(count("annotations", "wait for a decoded photo", "count"), 4);
    // As each frame enters flight and as it leaves.
    assert_eq!(count("counters", "frames in flight", "samples"), 6);
    assert_eq!(count("threads", "decoder", "ranges"), 2);
    assert_eq!(count("threads", "decoder", "submits"), 0);
    assert_eq!(count("threads", "main", "submits"), 3);
    let text = stdout(&run(dir.path(), &["stats", "a.hrxt"]));
    assert!(
        text.lines().any(|l| l.starts_with("decode photo ")),
        "{text}"
    );

    let output = run(
        dir.path(),
        &["export", "a.hrxt", "--format", "chrome", "-o", "a.json"],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a.json")).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let decoder = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "decoder")
        .expect("the decoder thread's track");
    let on_decoder = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == decoder["tid"] && e["pid"] == decoder["pid"])
        .filter(|e| e["name"] == "decode photo")
        .count();
    assert_eq!(on_decoder, 1);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "submit")
            .count(),
        3
    );

    // A trim keeps the host spans of the submissions it keeps, and only those.
    let output = run(
        dir.path(),
        &["trim", "a.hrxt", "-o", "t.hrxt", "--submissions", "2..3"],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let dump = stdout(&run(dir.path(), &["dump", "--json", "t.hrxt"]));
    let records: Vec<serde_json::Value> = dump
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<u64> {
        records
            .iter()
            .filter_map(|r| r.get(kind))
            .map(|r| r["submission"].as_u64().unwrap())
            .collect()
    };
    let (submits, spans) = (of("Submit"), of("HostSpan"));
    assert!(!spans.is_empty() && spans.len() < 6, "{spans:?}");
    assert!(
        spans.iter().all(|s| submits.contains(s)),
        "{spans:?} {submits:?}"
    );
    // And the application's annotations around them only (it kept all three frames'): those
    // between the submit before the range and the one after it.
    let count_in = |file: &str, kind: &str| {
        stdout(&run(dir.path(), &["dump", "--json", file]))
            .lines()
            .filter(|l| l.starts_with(&format!("{{\"{kind}\"")))
            .count()
    };
    for kind in ["AnnotationRange", "CounterSample"] {
        let (whole, kept) = (count_in("a.hrxt", kind), count_in("t.hrxt", kind));
        assert!(kept > 0 && kept < whole, "{kind}: {kept} of {whole}");
    }

    let output = run(dir.path(), &["diff", "a.hrxt", "b.hrxt", "--json"]);
    let diff: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let decode = diff["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "decode photo")
        .expect("decode photo compared");
    assert_eq!(decode["status"], "matched");
    assert_eq!(
        (
            decode["base"]["count"].as_u64(),
            decode["new"]["count"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

/// `record --workload pipeline -o FILE` of 64-pixel-wide frames of `photo`, a million of
/// them (a run that a signal ends, not its frames), its standard output and error piped.
fn endless_pipeline(
    dir: &Path,
    photo: impl AsRef<std::ffi::OsStr>,
    file: &str,
) -> std::process::Child {
    hrx_trace(dir)
        .args(["record", "--workload", "pipeline", "-o", file, "--input"])
        .arg(photo)
        .args(["--frames", "1000000", "--max-width", "64"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}
