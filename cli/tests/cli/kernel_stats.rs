//! `stats` (text and JSON, checked against the trace's records), `completions` and `man`.

use crate::util::*;
use serde_json::Value;
use std::collections::BTreeMap;

#[test]
fn stats_json_counts_match_the_records() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    record_faults(dir.path(), "f.hrxt", &photo);
    let dump = stdout(&run(dir.path(), &["dump", "--json", "f.hrxt"]));
    let mut kinds: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in dump.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let (k, body) = v.as_object().unwrap().iter().next().unwrap();
        kinds.entry(k.clone()).or_default().push(body.clone());
    }
    let count = |k: &str| kinds.get(k).map_or(0, Vec::len) as u64;
    let done = |status: &str| {
        kinds["RegionDone"]
            .iter()
            .filter(|d| d["status"].get(status).is_some())
            .count() as u64
    };

    let out = run(dir.path(), &["stats", "--json", "f.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s: Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    let u = |v: &Value| v.as_u64().unwrap();
    assert_eq!(u(&s["submissions"]["accepted"]), count("Submit"));
    let busy = kinds
        .get("SubmitRefused")
        .map_or(0, |r| r.iter().filter(|r| r["kind"] == "Busy").count()) as u64;
    assert_eq!(u(&s["submissions"]["busy_refusals"]), busy);
    assert_eq!(u(&s["failures"]["quarantines"]), count("Quarantine"));
    assert_eq!(u(&s["failures"]["poisoned_buffers"]), count("Poison"));
    assert_eq!(u(&s["failures"]["faults_injected"]), count("FaultInjected"));
    // How the operations were timed, as the trace's OpTimes says (format 1.16).
    assert_eq!(count("OpTimes"), 1);
    assert_eq!(kinds["OpTimes"][0]["source"], "Host");
    assert_eq!(s["operation_times"]["sources"], serde_json::json!(["Host"]));
    // The faults workload's failed runs: their operations are not counted as untimed.
    assert_eq!(u(&s["operation_times"]["untimed_native_ops"]), 0);
    assert_eq!(u(&s["failures"]["regions_failed"]), done("Failed"));
    assert_eq!(u(&s["failures"]["regions_cancelled"]), done("Cancelled"));
    assert!(u(&s["failures"]["regions_failed"]) >= 1);

    // Every timing that ran is in exactly one region row or copy lane, with consistent order
    // statistics.
    let kernels = s["regions"].as_array().unwrap();
    let copies: u64 = s["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(&c["batches"]))
        .sum();
    assert!(copies > 0, "{s:#}");
    // Host callbacks are their own rows, as kernels are (none is a kernel).
    let hosts = s["host_callbacks"].as_array().expect("host_callbacks");
    let host_spans: u64 = hosts.iter().map(|k| u(&k["count"])).sum();
    let ran: u64 = kernels.iter().map(|k| u(&k["count"])).sum::<u64>() + copies + host_spans;
    let failed_timed = kinds["RegionTiming"].len() as u64;
    assert!(
        ran <= failed_timed && ran + done("Failed") >= failed_timed,
        "{ran} of {failed_timed}"
    );
    for k in kernels {
        let (min, p50, p99, max) = (
            u(&k["min_ns"]),
            u(&k["p50_ns"]),
            u(&k["p99_ns"]),
            u(&k["max_ns"]),
        );
        assert!(min <= p50 && p50 <= p99 && p99 <= max, "{k}");
        assert_eq!(u(&k["mean_ns"]), u(&k["total_ns"]) / u(&k["count"]), "{k}");
    }
    // Only kernels: upload and download copy batches are in the copy table (they were
    // listed as kernels too).
    for copy in ["upload", "download", "copy", "host"] {
        assert!(kernels.iter().all(|k| k["name"] != copy), "{copy}: {s:#}");
    }
    assert!(
        kernels
            .iter()
            .any(|k| k["name"].as_str().unwrap().starts_with("hrx_")),
        "{s:#}"
    );
    // Copy bytes per lane: the copy batches' bytes over their time.
    for c in s["copies"].as_array().unwrap() {
        let bw = c["bytes_per_s"].as_f64().unwrap();
        let expect = u(&c["bytes"]) as f64 * 1e9 / u(&c["busy_ns"]) as f64;
        assert!((bw - expect).abs() <= expect * 1e-9, "{c}");
    }
    for q in s["queues"].as_array().unwrap() {
        let util = q["utilisation"].as_f64().unwrap();
        assert!(util > 0.0 && util <= 1.0, "{q}");
    }

    let text = stdout(&run(dir.path(), &["stats", "f.hrxt"]));
    assert!(
        text.contains("GPU Upload") && text.contains("utilisation"),
        "{text}"
    );
    // Regions by label: copies are in the copy table.
    let kernel_rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("region "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(!kernel_rows.is_empty(), "{text}");
    for row in kernel_rows {
        let name = row.split_whitespace().next().unwrap_or_default();
        assert!(!["upload", "download", "copy"].contains(&name), "{text}");
    }
    // Counts with their nouns, singular for one ("1 quarantine", "1 fault injected").
    let counted = |n: u64, noun: &str| match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    };
    let failures = field(&text, "failures");
    for expected in [
        counted(count("Quarantine"), "quarantine"),
        counted(count("Poison"), "poisoned buffer"),
        format!("{} injected", counted(count("FaultInjected"), "fault")),
    ] {
        assert!(failures.contains(&expected), "{expected:?} in {text}");
    }
}

/// Kernels are listed by name from the operations' own timings (device spans), apart from
/// the regions by label, a failed run's left out and counted (an operation's as run in a
/// failed region, a region's as failed); a trace without operation
/// timings says it has none, in text and JSON, and lists regions only.
#[test]
fn stats_lists_kernels_by_name_from_operation_timings_or_says_there_are_none() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline, with_op_timings};
    let dir = tempfile::tempdir().unwrap();
    let spec = PipelineSpec {
        fail_at: Some(7),
        ..PipelineSpec::ops(80)
    };
    write_records(
        &dir.path().join("ops.hrxt"),
        with_op_timings(pipeline(spec.clone())),
    );
    write_records(&dir.path().join("plain.hrxt"), pipeline(spec));
    let json = |name: &str| -> Value {
        let out = run(dir.path(), &["stats", "--json", name]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let s = json("ops.hrxt");
    let names: Vec<(&str, &str, u64, u64, u64)> = s["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let u = |k: &str| o[k].as_u64().unwrap();
            (
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap(),
                u("count"),
                u("failed"),
                u("device"),
            )
        })
        .collect();
    let mut names = names;
    names.sort();
    // Submissions 0..7 ran, the 8th failed in its compute region.
    assert_eq!(
        names,
        [("kernel", "blur", 7, 1, 7), ("kernel", "sobel", 7, 1, 7)]
    );
    let times = &s["operation_times"];
    assert_eq!(
        (times["recorded"].as_u64(), times["failed"].as_u64()),
        (Some(16), Some(2))
    );
    assert!(times["note"].is_null());
    // `kernels`: the deprecated copy of the region rows, kept for older scripts.
    assert_eq!(s["regions"], s["kernels"]);
    assert_eq!(s["regions"][0]["name"], "blur +1");
    let text = stdout(&run(dir.path(), &["stats", "ops.hrxt"]));
    assert_eq!(
        field(&text, "operations"),
        "14 timed; 2 in failed or cancelled runs left out"
    );
    let rows = |header: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with(header))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    let mut kernels = rows("kernel ");
    kernels.sort();
    assert_eq!(kernels, ["blur", "sobel"], "{text}");
    assert_eq!(rows("region "), ["blur"], "{text}");
    // The region failed; each operation ran in it, whichever of them failed: its row says
    // it ran in a failed region, not that it failed (both read "+1 failed").
    let row = |name: &str| -> &str {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert!(row("blur").ends_with("  +1 in failed runs"), "{text}");
    assert!(row("sobel").ends_with("  +1 in failed runs"), "{text}");
    assert!(text.contains("\n(+N in failed runs: runs of the operation in regions that failed"));
    let region = text
        .lines()
        .find(|l| l.starts_with("blur +1"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(region.ends_with("  +1 failed"), "{text}");

    let plain = json("plain.hrxt");
    assert_eq!(plain["operations"].as_array().map(Vec::len), Some(0));
    let note = plain["operation_times"]["note"].as_str().unwrap();
    assert!(
        note.starts_with("per-operation times: none recorded"),
        "{note}"
    );
    let text = stdout(&run(dir.path(), &["stats", "plain.hrxt"]));
    assert_eq!(field(&text, "operations"), note);
    assert!(!text.lines().any(|l| l.starts_with("kernel ")), "{text}");
}

#[test]
fn stats_of_a_missing_trace_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_error(
        &run(dir.path(), &["stats", "--json", "missing.hrxt"]),
        "missing.hrxt",
    );
}

#[test]
fn completions_and_man_pages_name_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(dir.path(), &["completions", shell]);
        assert_eq!(code(&out), 0, "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for verb in ["record", "export", "stats", "diff"] {
            assert!(script.contains(verb), "{shell} lacks {verb}");
        }
    }
    let out = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));

    // Bash completes a verb's options too (bash runs the script as a shell would).
    let script = dir.path().join("hrx-trace.bash");
    std::fs::write(&script, stdout(&run(dir.path(), &["completions", "bash"]))).unwrap();
    let complete = |words: &str, cword: usize| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             _hrx__trace hrx-trace \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; \
             echo \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(complete("hrx-trace re", 1).contains("replay"));
    assert!(complete("hrx-trace export --fo", 2).contains("--format"));
    assert!(complete("hrx-trace export --format ''", 3).contains("perfetto"));

    let out = run(dir.path(), &["man"]);
    assert_eq!(code(&out), 0);
    let page = stdout(&out);
    assert!(
        page.starts_with(".ie") || page.contains(".TH hrx-trace"),
        "{page}"
    );
    assert!(page.contains("export") && page.contains("diff"), "{page}");

    let out = run(dir.path(), &["man", "--dir", "man1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for page in [
        "hrx-trace.1",
        "hrx-trace-export.1",
        "hrx-trace-stats.1",
        "hrx-trace-diff.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join("man1").join(page)).expect(page);
        assert!(text.contains(".TH"), "{page}");
    }
    let diff = std::fs::read_to_string(dir.path().join("man1/hrx-trace-diff.1")).unwrap();
    assert!(diff.contains("max\\-slowdown"), "{diff}");
    // A file named as the directory is said to be no directory (it read "File exists").
    let file = run(dir.path(), &["man", "--dir", "man1/hrx-trace.1"]);
    crate::util::assert_error(&file, "man1/hrx-trace.1: not a directory");
}

/// A region row whose every run failed shows dashes, not durations of 0 ns; a trace with no
/// native work (copies only) prints no empty region table (fresh-user pass).
#[test]
fn stats_prints_no_zero_durations_and_no_empty_tables() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::Record;
    let dir = tempfile::tempdir().unwrap();
    let failed = dir.path().join("failed.hrxt");
    let spec = PipelineSpec {
        fail_at: Some(0),
        ..PipelineSpec::ops(4)
    };
    write_records(&failed, pipeline(spec));
    let out = run(dir.path(), &["stats", "failed.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.starts_with("blur +1"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[2..8], ["0", "-", "-", "-", "-", "-"], "{row}");
    assert!(row.ends_with("+1 failed"), "{row}");

    let copies = dir.path().join("copies.hrxt");
    let only_copies = pipeline(PipelineSpec::ops(40))
        .filter(|r| !matches!(r, Record::RegionTiming(t) if t.region.0 == 1 || t.region.0 == 3));
    write_records(&copies, only_copies);
    let out = run(dir.path(), &["stats", "copies.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("\nregion "), "{text}");
    assert!(text.contains("\ncopies "), "{text}");
}

/// `stats` of a trim says it is a range of a recording, and which (text and JSON): its
/// figures cover those submissions only. It read as the whole run's (only `info` said it).
#[test]
fn stats_of_a_trim_says_its_figures_cover_the_range() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards_trimmed(dir.path());
    let range = "trimmed from whole.hrxt, submissions 2..4 (submissions:2..4)";
    let text = stdout(&run(dir.path(), &["stats", "t.hrxt"]));
    assert_eq!(
        field(&text, "range"),
        format!("{range}: these figures cover the range's submissions only"),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", "t.hrxt"]))).unwrap();
    assert_eq!(json["ranges"], serde_json::json!([range]));
    // A whole recording has none.
    let text = stdout(&run(dir.path(), &["stats", "whole.hrxt"]));
    assert!(!text.contains("\nrange "), "{text}");
    let json: Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["stats", "--json", "whole.hrxt"],
    )))
    .unwrap();
    assert_eq!(json["ranges"], serde_json::json!([]));
}

/// `stats` of a recording made on a loaded host (a runtime's `hrx: host load per CPU` sample
/// of 1 or more) says its host-side times include waits for a CPU (text and JSON), as `info`
/// and `replay` do; it listed the counter alone.
#[test]
fn stats_of_a_recording_on_a_loaded_host_says_so() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "quiet.hrxt");
    loaded_copy(dir.path(), "quiet.hrxt", "loaded.hrxt", 2.5);
    let text = stdout(&run(dir.path(), &["stats", "loaded.hrxt"]));
    assert_eq!(
        field(&text, "host load"),
        "loaded: up to 2.50 per CPU (1-minute average, at the runtimes' starts and ends): \
         host-side times include waits for a CPU",
        "{text}"
    );
    let json: Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["stats", "--json", "loaded.hrxt"],
    )))
    .unwrap();
    assert_eq!(json["host_load"]["loaded"], true);
    assert_eq!(json["host_load"]["max_per_cpu"], 2.5);
    // `info --json` gives it in the same shape, its older keys beside (each verb had its
    // own: a fresh user's pass).
    let info: Value = serde_json::from_str(&stdout(&run(
        dir.path(),
        &["info", "--json", "loaded.hrxt"],
    )))
    .unwrap();
    for key in ["samples", "max_per_cpu", "last_per_cpu", "loaded"] {
        assert_eq!(
            info["host_load"][key], json["host_load"][key],
            "{key}: {} {}",
            info["host_load"], json["host_load"]
        );
    }
    assert_eq!(info["host_load"]["per_cpu_first"], 2.5);
    assert_eq!(info["host_load"]["per_cpu_last"], 2.5);
    // Of one sample, the older key says what the new one says: it was null beside
    // `last_per_cpu`'s 2.5 (a break-it pass).
    one_sample_copy(dir.path(), "loaded.hrxt", "one.hrxt");
    let info: Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["info", "--json", "one.hrxt"]))).unwrap();
    let load = &info["host_load"];
    assert_eq!(load["samples"], 1, "{load}");
    assert_eq!(load["last_per_cpu"], 2.5, "{load}");
    assert_eq!(load["per_cpu_last"], load["last_per_cpu"], "{load}");
    // On a quiet host it says nothing, and the JSON says not loaded.
    let quiet = run(dir.path(), &["stats", "--json", "quiet.hrxt"]);
    let json: Value = serde_json::from_str(&stdout(&quiet)).unwrap();
    if json["host_load"]["max_per_cpu"].as_f64().unwrap() < 1.0 {
        assert_eq!(json["host_load"]["loaded"], false);
        let text = stdout(&run(dir.path(), &["stats", "quiet.hrxt"]));
        assert!(!text.lines().any(|l| l.starts_with("host load ")), "{text}");
    }
}

/// A copy of trace `from` in `dir` keeping only its first host load sample.
fn one_sample_copy(dir: &std::path::Path, from: &str, to: &str) {
    use hrx_capture::Record;
    use hrx_capture::schema::HOST_LOAD_COUNTER;
    let trace = hrx_capture::read_all(dir.join(from)).unwrap();
    let (mut name, mut samples) = (None, 0);
    let records: Vec<Record> = (trace.records.into_iter())
        .filter(|record| match record {
            Record::AnnotationName(n) if n.text == HOST_LOAD_COUNTER => {
                name = Some(n.name);
                true
            }
            Record::CounterSample(c) if Some(c.name) == name => {
                samples += 1;
                samples == 1
            }
            _ => true,
        })
        .collect();
    assert!(samples > 1, "{from} holds {samples} host load samples");
    write_records(&dir.join(to), records.into_iter());
}

/// `stats --help` says which JSON key holds which table: region rows under `regions`, and
/// `kernels` a deprecated copy of them (the help said nothing of either, and `kernels`
/// read as the kernel table, which is `operations`).
#[test]
fn stats_help_names_the_json_tables_and_deprecates_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let help = run(dir.path(), &["stats", "--help"]);
    assert_eq!(code(&help), 0, "{}", stderr(&help));
    let text = stdout(&help)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for said in [
        "`operations` the kernel table, `regions` the region table",
        "(`kernels` is a deprecated copy of `regions`, kept for older scripts)",
    ] {
        assert!(text.contains(said), "{said:?} not in: {text}");
    }
}
