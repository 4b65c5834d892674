//! `export`: Chrome trace-event JSON and Perfetto protobuf, with track, slice, flow and
//! instant counts computed independently from the trace's records (`dump --json`), and the
//! protobuf decoded with Perfetto's official definitions (`cli/tests/perfetto/check.py`).

use crate::util::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

/// What an export must contain, from the records alone.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    /// Tracks but counters': queues, events, recorder, host threads.
    tracks: usize,
    /// Region, operation and host thread slices.
    slices: usize,
    flows: usize,
    /// Instant events: events, recorder marks, markers.
    instants: usize,
    /// Counter tracks (format 1.14).
    counters: usize,
}

/// The failures, refusals and cancellations among the records: the events `view` lists
/// (`hrx_tui`'s ingest), which the export's `Events` tracks hold and its summary counts.
fn view_event(kind: &str, body: &Value) -> bool {
    match kind {
        "RegionDone" => body["status"] != "Ok",
        "Quarantine" | "Poison" | "CopyStreamUnhealthy" | "FaultInjected" | "SubmitRefused" => true,
        _ => false,
    }
}

fn records(dir: &Path, trace: &str) -> Vec<Value> {
    let out = run(dir, &["dump", "--json", trace]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn expected(records: &[Value]) -> Expected {
    fn of<'a>(records: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> {
        records.iter().filter_map(move |r| r.get(kind))
    }
    let key = |v: &Value, fields: &[&str]| -> Vec<u64> {
        fields.iter().map(|f| v[*f].as_u64().expect(f)).collect()
    };
    // (runtime, prepared) -> regions; (runtime, submission) -> prepared.
    let prepared: HashMap<Vec<u64>, &Vec<Value>> = of(records, "Prepared")
        .map(|p| {
            (
                key(p, &["runtime", "prepared"]),
                p["regions"].as_array().unwrap(),
            )
        })
        .collect();
    let submits: HashMap<Vec<u64>, u64> = of(records, "Submit")
        .map(|s| {
            (
                key(s, &["runtime", "submission"]),
                s["prepared"].as_u64().unwrap(),
            )
        })
        .collect();
    let timed: BTreeSet<Vec<u64>> = of(records, "RegionTiming")
        .map(|t| key(t, &["runtime", "submission", "region"]))
        .collect();
    let mut tracks = BTreeSet::new();
    let mut flows = BTreeSet::new();
    for t in &timed {
        let regions = prepared[&vec![t[0], submits[&vec![t[0], t[1]]]]];
        let region = &regions[t[2] as usize];
        tracks.insert((t[0], region["queue"].as_str().unwrap().to_owned()));
        for edge in region["dependencies"].as_array().unwrap() {
            let producer = edge["producer"].as_u64().unwrap();
            if timed.contains(&vec![t[0], t[1], producer]) {
                flows.insert((t[0], t[1], producer, t[1], t[2]));
            }
        }
    }
    for w in of(records, "CrossWait") {
        let (rt, sub, region) = (
            w["runtime"].as_u64().unwrap(),
            w["submission"].as_u64().unwrap(),
            w["region"].as_u64().unwrap(),
        );
        let (on_sub, on_region) = (
            w["on_submission"].as_u64().unwrap(),
            w["on_region"].as_u64().unwrap(),
        );
        if timed.contains(&vec![rt, sub, region]) && timed.contains(&vec![rt, on_sub, on_region]) {
            flows.insert((rt, on_sub, on_region, sub, region));
        }
    }
    let mut instants = 0;
    let mut host_load = None;
    for r in records {
        let (kind, body) = r.as_object().unwrap().iter().next().unwrap();
        if kind == "AnnotationName" && body["text"] == hrx_capture::schema::HOST_LOAD_COUNTER {
            host_load = body["name"].as_u64();
        }
        let loaded = kind == "CounterSample"
            && body["name"].as_u64() == host_load
            && body["value"].as_f64().unwrap() >= 1.0;
        // The recorder's marks (a loaded machine makes capture fences and waits, and
        // `host loaded` marks) have a track of their own.
        let track = if view_event(kind, body) {
            "events"
        } else if ["CaptureFence", "DigestSpan", "RecorderWait", "TraceRange"]
            .contains(&kind.as_str())
            || loaded
        {
            "recorder"
        } else {
            continue;
        };
        instants += 1;
        let runtime = body["runtime"].as_u64().unwrap_or(0);
        tracks.insert((runtime, track.to_owned()));
    }
    // Host threads (format 1.14): a track per thread with spans, ranges or markers; a
    // counter track per counter.
    let threads: BTreeSet<u64> = ["HostSpan", "AnnotationRange", "AnnotationMarker"]
        .iter()
        .flat_map(|kind| of(records, kind).map(|r| r["thread"].as_u64().unwrap()))
        .collect();
    let counters: BTreeSet<u64> = of(records, "CounterSample")
        .map(|c| c["name"].as_u64().unwrap())
        .collect();
    Expected {
        tracks: tracks.len() + threads.len(),
        slices: timed.len()
            + of(records, "OpTiming").count()
            + of(records, "HostSpan").count()
            + of(records, "AnnotationRange").count(),
        flows: flows.len(),
        instants: instants + of(records, "AnnotationMarker").count(),
        counters: counters.len(),
    }
}

/// Checks the Chrome JSON against the Trace Event Format's fields; returns its counts.
fn chrome_counts(path: &Path) -> Expected {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut counts = Expected::default();
    let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut flow_ends: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut counters = BTreeSet::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(
            e["pid"].is_u64() && e["tid"].is_u64() && e["name"].is_string(),
            "{e}"
        );
        let place = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match ph {
            "M" => {
                if e["name"] == "thread_name" {
                    counts.tracks += 1;
                    assert!(e["args"]["name"].is_string(), "{e}");
                }
            }
            "X" => {
                counts.slices += 1;
                let (ts, dur) = (
                    e["ts"].as_f64().expect("ts"),
                    e["dur"].as_f64().expect("dur"),
                );
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                assert!(e["cat"].is_string() && e["args"].is_object(), "{e}");
                if e["cat"] == "region" {
                    let uses = e["args"]["uses"].as_array().expect("uses");
                    assert!(
                        uses.iter().all(|u| u.as_str().unwrap().starts_with("buf ")),
                        "{e}"
                    );
                    assert!(!uses.is_empty(), "{e}");
                }
                slices.entry(place).or_default().push((ts, ts + dur));
            }
            "s" | "f" => {
                assert_eq!(e["cat"], "hazard");
                if ph == "f" {
                    assert_eq!(e["bp"], "e", "{e}");
                }
                let id = e["id"].as_u64().expect("numeric flow id");
                let ends = flow_ends.entry(id).or_default();
                if ph == "s" { ends.0 += 1 } else { ends.1 += 1 }
            }
            "C" => {
                let name = e["name"].as_str().unwrap();
                assert!(e["args"][name].is_number(), "{e}");
                counters.insert((place.0, name.to_owned()));
            }
            "i" => {
                counts.instants += 1;
                assert_eq!(e["s"], "t");
                assert!(e["ts"].is_f64() || e["ts"].is_u64(), "{e}");
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    // Each flow event lies inside a slice of its thread, so it binds to it.
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let place = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = e["ts"].as_f64().unwrap();
        let inside = slices
            .get(&place)
            .is_some_and(|s| s.iter().any(|&(a, b)| a <= ts && ts <= b));
        assert!(inside, "flow event outside any slice: {e}");
    }
    assert!(
        flow_ends.values().all(|&ends| ends == (1, 1)),
        "{flow_ends:?}"
    );
    counts.flows = flow_ends.len();
    counts.counters = counters.len();
    counts
}

/// Runs the official-schema check; `None` (after saying so loudly) without the packages,
/// unless `HRX_REQUIRE_PERFETTO` is set (CI), where their absence fails.
fn perfetto_counts(path: &Path) -> Option<Expected> {
    let v = perfetto_check(path)?;
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    // Counter tracks are tracks there too.
    let counters = v["counter_tracks"].as_array().unwrap().len();
    assert_eq!(n("counters_without_value"), 0, "{v}");
    Some(Expected {
        tracks: n("tracks") - counters,
        slices: n("slices"),
        flows: n("flows"),
        instants: n("instants"),
        counters,
    })
}

/// What `check.py` says of the export at `path`, checked for what every export must be
/// (no unknown field, every event on a declared track, every flow and iid resolved, every
/// slice ended, the trace's real process and clock); `None` as [`perfetto_counts`].
fn perfetto_check(path: &Path) -> Option<Value> {
    let v = python_check(
        "tests/perfetto/check.py",
        path.as_os_str(),
        Path::new("."),
        "HRX_REQUIRE_PERFETTO",
        "perfetto==0.59.1 protobuf==6.31.1",
    )?;
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    assert_eq!(n("unknown_fields"), 0, "{v}");
    assert_eq!(n("events_on_undeclared_tracks"), 0, "{v}");
    assert_eq!(n("unmatched_flow_ids"), 0, "{v}");
    // Every interned name resolves, every packet has its sequence's state.
    assert_eq!(n("unresolved_iids"), 0, "{v}");
    assert_eq!(n("packets_without_state"), 0, "{v}");
    let named: u64 = v["slice_names"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, n)| {
            assert!(!name.is_empty() && name != "null", "{v}");
            n.as_u64().unwrap()
        })
        .sum();
    assert_eq!(named as usize, n("slices"), "{v}");
    assert_eq!(
        (n("slice_ends"), n("unbalanced_ends")),
        (n("slices"), 0),
        "{v}"
    );
    // Slices of a track nest: none starts inside another and ends after it.
    assert_eq!(n("crossing_slices"), 0, "{v}");
    assert!(n("process_tracks") >= 1, "{v}");
    // The recording process: its pid, command line and host; the sequence on
    // CLOCK_MONOTONIC (3), each process's session base in a snapshot naming it.
    for p in v["processes"].as_array().unwrap() {
        assert!(p["pid"].as_u64().unwrap() > 0, "{v}");
        assert!(!p["cmdline"].as_array().unwrap().is_empty(), "{v}");
        assert!(p["labels"][0].as_str().unwrap().starts_with("host="), "{v}");
    }
    assert_eq!(v["timestamp_clock_ids"], serde_json::json!([3]), "{v}");
    let snapshots = v["clock_snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), n("process_tracks"), "{v}");
    assert!(
        snapshots
            .iter()
            .all(|s| s["primary"] == 3 && s["clocks"]["3"].as_u64().unwrap() > 0),
        "{v}"
    );
    Some(v)
}

/// Exports `trace` in both formats and checks each against the records.
fn check_both(dir: &Path, trace: &str) -> Expected {
    let records = records(dir, trace);
    let want = expected(&records);
    let count = |kinds: &[&str]| {
        records
            .iter()
            .filter(|r| kinds.iter().any(|k| r.get(*k).is_some()))
            .count()
    };
    let (thread_slices, markers, samples) = (
        count(&["HostSpan", "AnnotationRange"]),
        count(&["AnnotationMarker"]),
        count(&["CounterSample"]),
    );
    let events = records
        .iter()
        .filter(|r| {
            let (kind, body) = r.as_object().unwrap().iter().next().unwrap();
            view_event(kind, body)
        })
        .count();
    let out = run(
        dir,
        &["export", trace, "--format", "chrome", "-o", "out.json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(chrome_counts(&dir.join("out.json")), want, "chrome");
    let summary = stdout(&out);
    let noun = |n: usize, noun: &str| match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    };
    let host = if thread_slices + markers + samples > 0 {
        format!(
            ", {}, {}, {}",
            noun(thread_slices, "host thread slice"),
            noun(markers, "marker"),
            noun(samples, "counter sample")
        )
    } else {
        String::new()
    };
    assert!(
        summary.contains(&format!(
            "{}, {} (as view lists them), {}{host} (chrome)",
            noun(want.flows, "flow"),
            noun(events, "event"),
            noun(want.instants - events - markers, "recorder mark")
        )),
        "{summary}"
    );
    let operations = match count(&["OpTiming"]) {
        0 => String::new(),
        n => format!(" ({n} of them operations)"),
    };
    assert!(
        summary.contains(&format!(
            "{}{operations}, ",
            noun(want.slices - thread_slices, "slice")
        )),
        "{summary}"
    );
    // The Events track holds what `view` lists, nothing of the recorder's.
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("out.json")).unwrap()).unwrap();
    let on_events = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "event")
        .count();
    assert_eq!(on_events, events);
    // The Parquet summary counts its `events` rows in the same words as the others' (it said
    // "27 event rows" where Perfetto's said "0 events (as view lists them), 27 recorder
    // marks" of one trace: a fresh user's pass).
    let out = run(
        dir,
        &["export", trace, "--format", "parquet", "-o", "tables"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let recorder_marks = want.instants - events - markers;
    let parquet = stdout(&out);
    assert!(
        parquet.contains(&format!(
            "{}: {} (as view lists them), {}",
            noun(events + recorder_marks, "event row"),
            noun(events, "event"),
            noun(recorder_marks, "recorder mark")
        )),
        "{parquet}"
    );
    let out = run(
        dir,
        &["export", trace, "--format", "perfetto", "-o", "out.pftrace"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    if let Some(got) = perfetto_counts(&dir.join("out.pftrace")) {
        assert_eq!(got, want, "perfetto");
    }
    want
}

#[test]
fn pipeline_exports_match_the_records_and_perfettos_schema() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want = check_both(dir.path(), "p.hrxt");
    // 3 frames: upload, compute, download and NPU regions, linked by in-graph hazards.
    assert!(
        want.slices >= 12 && want.flows >= 9 && want.tracks >= 4,
        "{want:?}"
    );
    // The pipeline annotates its host work (format 1.14): the main thread's and the
    // `decoder` thread's tracks, its ranges as slices there, the frames in flight a counter;
    // the runtime's host load per CPU is the other counter (where `/proc/loadavg` says it).
    let host_load = usize::from(std::path::Path::new("/proc/loadavg").exists());
    assert_eq!(want.counters, 1 + host_load, "{want:?}");
    let Some(v) = perfetto_check(&dir.path().join("out.pftrace")) else {
        return;
    };
    let threads = v["thread_tracks"].as_array().unwrap();
    let pid = v["processes"][0]["pid"].as_u64().unwrap();
    let names: BTreeSet<&str> = threads
        .iter()
        .map(|t| {
            assert_eq!(t["pid"].as_u64(), Some(pid), "{v}");
            assert!(t["tid"].as_u64().unwrap() > 0, "{v}");
            t["name"].as_str().unwrap()
        })
        .collect();
    assert!(names.contains("decoder") && names.contains("main"), "{v}");
    let mut tracks = vec!["frames in flight"];
    if host_load == 1 {
        // At the runtime's start and end.
        tracks.insert(0, hrx_capture::schema::HOST_LOAD_COUNTER);
    }
    assert_eq!(v["counter_tracks"], serde_json::json!(tracks), "{v}");
    // Three frames in flight and out again.
    assert_eq!(v["counter_values"], 6 + 2 * host_load, "{v}");
    for (name, n) in [("decode photo", 1), ("write frame", 3), ("submit", 3)] {
        assert_eq!(v["slice_names"][name], n, "{name}: {v}");
    }
}

/// A cross-submission wait is recorded where a region had to wait for an earlier
/// submission's region still unfinished when it was submitted; the export draws it as a
/// flow. The producer here is held running (a host callback waiting for the consumer's
/// submit), so the wait is there every time: the `hazards` workload's waits depend on
/// timing (a debug build recorded none in 2 of 20 runs, and this test failed).
#[test]
fn hazards_export_has_cross_submission_flows() {
    use hrx::{Runtime, RuntimeOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.hrxt");
    {
        let recorder =
            hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
        let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        hrx_workloads::run_held_wait(&rt).unwrap();
        drop(rt);
        recorder.close().unwrap();
    }
    let records = records(dir.path(), "h.hrxt");
    assert!(records.iter().any(|r| r.get("CrossWait").is_some()));
    let want = check_both(dir.path(), "h.hrxt");
    assert!(want.flows > 0, "{want:?}");
}

#[test]
fn faults_export_has_instant_events() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    record_faults(dir.path(), "f.hrxt", &photo);
    let want = check_both(dir.path(), "f.hrxt");
    assert!(want.instants >= 3, "{want:?}");
}

#[test]
fn export_of_a_missing_trace_or_bad_format_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["export", "nope.hrxt", "--format", "chrome", "-o", "x.json"],
    );
    assert_error(&out, "nope.hrxt");
    assert!(!dir.path().join("x.json").exists());
    let out = run(
        dir.path(),
        &["export", "nope.hrxt", "--format", "svg", "-o", "x.json"],
    );
    assert_eq!(code(&out), 2);
}

/// `-o` naming an existing file that is not an earlier export (here the trace itself and a
/// text file) is refused and the file is left as it was; an earlier export is overwritten.
#[test]
fn export_never_overwrites_a_file_that_is_not_an_export() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "# my notes\n").unwrap();
    // Files of other programs that began as an export's first bytes do (a break-it pass):
    // a text starting with a blank line, a protobuf whose first field is a message (a
    // TensorFlow `model.pb`), another profiler's Chrome trace, a lone `{`.
    let others: [(&str, &[u8]); 4] = [
        ("blank.txt", b"\n# my notes\nimportant text\n"),
        ("model.pb", b"\n\x07\n\x05input"),
        (
            "torch.json",
            br#"{"traceEvents":[{"ph":"X","name":"op","pid":1,"tid":1,"ts":0,"dur":5}]}"#,
        ),
        ("brace.json", b"{"),
    ];
    for (name, bytes) in others {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let trace = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    for (target, format, is) in [
        ("notes.md", "chrome", "it exists and is not a chrome export"),
        (
            "blank.txt",
            "perfetto",
            "it exists and is not a perfetto export",
        ),
        (
            "model.pb",
            "perfetto",
            "it exists and is not a perfetto export",
        ),
        (
            "torch.json",
            "chrome",
            "it exists and is not a chrome export",
        ),
        (
            "brace.json",
            "chrome",
            "it exists and is not a chrome export",
        ),
        (
            "h.hrxt",
            "perfetto",
            "it is an hrx trace, not a perfetto export",
        ),
        (
            "h.hrxt",
            "chrome",
            "it is an hrx trace, not a chrome export",
        ),
    ] {
        let out = run(
            dir.path(),
            &["export", "h.hrxt", "--format", format, "-o", target],
        );
        assert_error(&out, &format!("refusing to overwrite {target}: {is}"));
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "# my notes\n");
    for (name, bytes) in others {
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            bytes,
            "{name}"
        );
    }
    assert_eq!(std::fs::read(dir.path().join("h.hrxt")).unwrap(), trace);
    for format in ["chrome", "perfetto"] {
        let target = format!("h.{format}");
        for _ in 0..2 {
            let out = run(
                dir.path(),
                &["export", "h.hrxt", "--format", format, "-o", &target],
            );
            assert_eq!(code(&out), 0, "{}", stderr(&out));
        }
    }
    // An export in the other format is not overwritten either: `-o` names what it writes.
    let out = run(
        dir.path(),
        &["export", "h.hrxt", "--format", "perfetto", "-o", "h.chrome"],
    );
    assert_error(&out, "it exists and is not a perfetto export");
}

/// `export -o FILE` into a closed standard output: the export is written and the summary
/// line's broken pipe is success (it panicked into "internal error", exit 101).
#[test]
fn a_closed_standard_output_after_an_export_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let out = run_into_closed_stdout(
        dir.path(),
        &[
            "export",
            "h.hrxt",
            "--format",
            "perfetto",
            "-o",
            "h.pftrace",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Nothing but the note of a loaded host, where this one is loaded.
    assert!(
        (stderr(&out).lines()).all(|l| l.starts_with("note: h.hrxt: host load ")),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::metadata(dir.path().join("h.pftrace"))
            .unwrap()
            .len()
            > 0
    );
}

/// `export -o -` into a standard output closed before it is read (`| head -1` on a trace
/// larger than a pipe holds): the reader went away, which is success, as for every verb. It
/// was an error (exit 2, "Broken pipe"): the export's write error hid its cause.
#[test]
fn an_export_to_standard_output_closed_by_its_reader_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("s.hrxt"), 2_000);
    for format in ["chrome", "perfetto"] {
        let out = run_into_closed_stdout(
            dir.path(),
            &["export", "s.hrxt", "--format", format, "-o", "-"],
        );
        assert_eq!(code(&out), 0, "{format}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{format}");
    }
}

/// A synthetic trace of `regions` pipeline regions (as `hrx-analysis`'s gen-trace writes
/// it), at `path`.
fn synthetic_trace(path: &Path, regions: u64) {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    write_records(path, pipeline(PipelineSpec::ops(regions)));
}

/// Runs `hrx-trace ARGS` in `dir` and sends it `signal` while it writes
/// ([`stopped_while_writing`]), then continues it. `None` when it finished before it could
/// be stopped (the trace is too small to catch it writing).
fn interrupted(
    dir: &Path,
    args: &[&str],
    partial: &str,
    signal: libc::c_int,
) -> Option<std::process::Output> {
    let child = stopped_while_writing(dir, args, partial)?;
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill has no memory preconditions; `pid` is our child, not yet reaped; the
    // signal waits for SIGCONT.
    unsafe {
        libc::kill(pid, signal);
        libc::kill(pid, libc::SIGCONT);
    }
    Some(child.wait_with_output().unwrap())
}

/// Runs `hrx-trace ARGS` in `dir` and stops it (SIGSTOP) while it writes: once `partial`
/// (the file it writes; `{pid}` in it is the process's id) exists, and still exists once
/// it stopped. `None` when it finished before it could be stopped (the trace is too small
/// to catch it writing).
fn stopped_while_writing(dir: &Path, args: &[&str], partial: &str) -> Option<std::process::Child> {
    stopped_once(dir, args, partial, |p| p.exists())
}

/// [`stopped_while_writing`], once `ready` says so of `partial`.
fn stopped_once(
    dir: &Path,
    args: &[&str],
    partial: &str,
    ready: fn(&Path) -> bool,
) -> Option<std::process::Child> {
    use std::process::Stdio;
    let mut child = hrx_trace(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // `{pid}`: the name of a file the process names for itself.
    let partial = dir.join(partial.replace("{pid}", &pid.to_string()));
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(status.success(), "{args:?}: {}", stderr(&out));
            return None;
        }
        if ready(&partial) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Waited for until it has stopped or exited (either state reaped below), else a child
    // still finishing when the signal was sent exits 0 (a break-it pass on a loaded host: the
    // trim case, `left: 0`).
    let stopped = crate::util::stop(pid);
    // Exited, or stopped once its output was complete (the partial file renamed away): it
    // finished before it was caught writing.
    if !stopped || !partial.exists() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        return None;
    }
    Some(child)
}

/// SIGINT, SIGTERM or SIGHUP while `export` or `trim` writes leaves no output behind (a
/// truncated JSON or Perfetto trace, a `.partial` trim were left), says what it removed,
/// and exits 128+N.
#[test]
fn an_interrupted_export_or_trim_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "big.hrxt";
    let mut regions = 200_000;
    let cases: [(&[&str], &str, &str, libc::c_int); 4] = [
        (
            &["export", trace, "--format", "chrome", "-o", "big.json"],
            "big.json.{pid}.partial",
            "big.json",
            libc::SIGTERM,
        ),
        (
            &["export", trace, "--format", "perfetto", "-o", "big.pftrace"],
            "big.pftrace.{pid}.partial",
            "big.pftrace",
            libc::SIGINT,
        ),
        (
            &["trim", trace, "-o", "t.hrxt", "--submissions", "2..40000"],
            "t.hrxt.{pid}.partial",
            "t.hrxt",
            libc::SIGHUP,
        ),
        // A directory of tables: every table and the directory it created are removed.
        (
            &["export", trace, "--format", "parquet", "-o", "tables"],
            "tables/.hrx-export.{pid}.partial/regions.parquet",
            "tables",
            libc::SIGTERM,
        ),
    ];
    for (args, partial, output, signal) in cases {
        let out = loop {
            if !dir.path().join(trace).exists() {
                synthetic_trace(&dir.path().join(trace), regions);
            }
            if let Some(out) = interrupted(dir.path(), args, partial, signal) {
                break out;
            }
            // Finished before it was caught writing: a larger trace, and again.
            assert!(regions < 200_000 << 4, "{args:?} never caught writing");
            regions *= 2;
            std::fs::remove_file(dir.path().join(trace)).unwrap();
            let _ = std::fs::remove_file(dir.path().join(output));
            let _ = std::fs::remove_dir_all(dir.path().join(output));
        };
        assert_eq!(code(&out), 128 + signal, "{args:?}: {}", stderr(&out));
        let name = hrx_capture::schema::signal_name(signal).unwrap();
        assert!(
            stderr(&out).contains(&format!("interrupted by signal {signal} ({name}): removed")),
            "{}",
            stderr(&out)
        );
        // What was removed was meant for the output, not the output itself (an earlier one
        // stays; a fresh user read "removed the incomplete export h2.json" as it gone).
        assert!(
            stderr(&out).contains(&format!("meant for {output}")),
            "{}",
            stderr(&out)
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != trace)
            .collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

/// A Parquet export into a directory of earlier tables that is interrupted leaves the earlier
/// tables as they were (it removed them all), and one that completes replaces them whole,
/// leaving no staging directory behind.
#[test]
fn an_interrupted_parquet_export_keeps_the_earlier_tables() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    synthetic_trace(&dir.path().join("small.hrxt"), 50);
    let out = run(dir.path(), &["export", "small.hrxt", "-o", "tables/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let files = dir_files;
    let earlier = files(&tables);
    assert!(
        earlier.contains_key("regions.parquet"),
        "{:?}",
        earlier.keys()
    );

    let trace = "big.hrxt";
    let args = ["export", trace, "--format", "parquet", "-o", "tables"];
    let partial = "tables/.hrx-export.{pid}.partial/regions.parquet";
    let mut regions = 200_000;
    let out = loop {
        synthetic_trace(&dir.path().join(trace), regions);
        if let Some(out) = interrupted(dir.path(), &args, partial, libc::SIGINT) {
            break out;
        }
        // Finished before it was caught writing: the earlier tables back, a larger trace.
        assert!(regions < 200_000 << 4, "never caught writing");
        regions *= 2;
        std::fs::remove_dir_all(&tables).unwrap();
        let out = run(dir.path(), &["export", "small.hrxt", "-o", "tables/"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    assert_eq!(code(&out), 128 + libc::SIGINT, "{}", stderr(&out));
    // Of the tables meant for it: the earlier ones stay (it read "removed ... in tables").
    assert!(stderr(&out).contains("removed the incomplete Parquet tables meant for tables"));
    let after = files(&tables);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        earlier.keys().collect::<Vec<_>>(),
        "the earlier tables, nothing else"
    );
    assert!(
        after == earlier,
        "the earlier tables' bytes are as they were"
    );

    // Completed, the export replaces every table and leaves nothing else.
    let out = run(dir.path(), &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let replaced = files(&tables);
    assert_eq!(
        replaced.keys().collect::<Vec<_>>(),
        earlier.keys().collect::<Vec<_>>()
    );
    assert_ne!(replaced["regions.parquet"], earlier["regions.parquet"]);
}

/// Each file in `dir` and its bytes (a directory's as none).
fn dir_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().into_string().unwrap();
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (name, bytes)
        })
        .collect()
}

/// The staging directories (`.hrx-export.PID.partial`) in `dir`.
fn staging_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".hrx-export.") && n.ends_with(".partial"))
        .collect()
}

/// A directory of the tables of `small.hrxt` (50 regions), `dir/tables`, and the trace
/// `big.hrxt` (`regions` regions) beside it.
fn earlier_tables(dir: &Path, regions: u64) -> BTreeMap<String, Vec<u8>> {
    synthetic_trace(&dir.join("small.hrxt"), 50);
    synthetic_trace(&dir.join("big.hrxt"), regions);
    let _ = std::fs::remove_dir_all(dir.join("tables"));
    let out = run(dir, &["export", "small.hrxt", "-o", "tables/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    dir_files(&dir.join("tables"))
}

/// Whether process `pid` waits in `flock` (its main thread, as `/proc/PID/syscall` says).
fn waits_in_flock(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<libc::c_long>().ok())
        == Some(libc::SYS_flock)
}

/// Two Parquet exports into one directory move their tables in one after the other, never
/// interleaved: each holds the directory's `flock` while it moves them in. Two exports of
/// two traces started together left a mix of both exports' tables (12 runs in 1000 on two
/// loaded CPUs). Shown with the lock held here: an export whose tables are complete waits
/// for it, the directory's tables untouched, then moves them all in.
#[test]
fn parquet_exports_move_their_tables_in_one_after_the_other() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    let args = ["export", "big.hrxt", "--format", "parquet", "-o", "tables"];
    let partial = "tables/.hrx-export.{pid}.partial/regions.parquet";
    let mut regions = 200_000;
    let (earlier, child, lock) = loop {
        assert!(regions < 200_000 << 4, "never caught writing");
        let earlier = earlier_tables(dir.path(), regions);
        regions *= 2;
        let Some(child) = stopped_while_writing(dir.path(), &args, partial) else {
            continue;
        };
        let lock = std::fs::File::open(&tables).unwrap();
        // SAFETY: flock on an open descriptor.
        let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        // SAFETY: `child` is our child, not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGCONT) };
        if locked == 0 {
            break (earlier, child, lock);
        }
        // Stopped while it moved its tables in (it holds the lock): again.
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    let mut child = child;
    crate::util::wait_until_it_waits(
        &mut child,
        waits_in_flock,
        "in /proc/PID/syscall as waiting in flock",
        "it moved its tables in while another held the directory's lock",
    );
    let mut now = dir_files(&tables);
    now.retain(|name, _| !name.ends_with(".partial"));
    assert!(now == earlier, "the tables changed under the lock");
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(staging_left(&tables), Vec::<String>::new());
    let after = dir_files(&tables);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        earlier.keys().collect::<Vec<_>>()
    );
    assert_ne!(after["regions.parquet"], earlier["regions.parquet"]);
}

/// A Parquet export killed with SIGKILL (no handler runs) leaves its staging directory, as
/// large as the tables; the next export into the directory removes it (it stayed, unseen,
/// for ever), and leaves alone one that an export is writing now.
#[test]
fn a_killed_parquet_exports_staging_directory_is_removed_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    let args = ["export", "big.hrxt", "--format", "parquet", "-o", "tables"];
    let partial = "tables/.hrx-export.{pid}.partial/regions.parquet";
    let mut regions = 200_000;
    let earlier = loop {
        assert!(regions < 200_000 << 4, "never caught writing");
        let earlier = earlier_tables(dir.path(), regions);
        regions *= 2;
        if let Some(mut child) = stopped_while_writing(dir.path(), &args, partial) {
            child.kill().unwrap();
            child.wait().unwrap();
            break earlier;
        }
    };
    assert_eq!(staging_left(&tables).len(), 1, "the killed export's");
    // One being written now stays, and completes.
    let writing = loop {
        if let Some(child) = stopped_while_writing(dir.path(), &args, partial) {
            break child;
        }
        // It finished first: the earlier tables back.
        let out = run(dir.path(), &["export", "small.hrxt", "-o", "tables/"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    let own = format!(".hrx-export.{}.partial", writing.id());
    let out = run(dir.path(), &["export", "small.hrxt", "-o", "tables/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        staging_left(&tables),
        [own],
        "the killed export's is removed"
    );
    assert!(
        dir_files(&tables)
            .into_iter()
            .filter(|(n, _)| !n.ends_with(".partial"))
            .eq(earlier)
    );
    // SAFETY: `writing` is our child, not yet reaped.
    unsafe { libc::kill(writing.id() as libc::pid_t, libc::SIGCONT) };
    let out = writing.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(staging_left(&tables), Vec::<String>::new());
}

/// An export or trim whose output folder another process holds locked (a script's `flock
/// DIR hrx-trace ... -o DIR/x`) goes on without the lock and removes nothing there: it
/// waited for the lock for ever, with its interrupts blocked (a break-it pass, session 50).
/// Each run is bounded by `timeout`, so that a wait for ever fails here (137) instead of
/// hanging the tests. (A Parquet export waits, and says so: its tables must not be moved
/// in beside another export's, `parquet_exports_move_their_tables_in_one_after_the_other`.)
#[test]
fn an_export_or_trim_into_a_locked_folder_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("t.hrxt"), 50);
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let held = std::fs::File::open(dir.path().join("out")).unwrap();
    held.lock().unwrap();
    // Another writer's partial, which a writer without the folder's lock must leave alone.
    std::fs::write(dir.path().join("out/x.json.1.partial"), b"another's").unwrap();
    let cases: [&[&str]; 3] = [
        &["export", "t.hrxt", "-o", "out/x.json"],
        &[
            "trim",
            "t.hrxt",
            "-o",
            "out/t.hrxt",
            "--submissions",
            "1..3",
        ],
        &["export", "t.hrxt", "-o", "pq/"],
    ];
    for args in cases {
        let output = hrx_trace_bounded(dir.path(), 300)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{args:?}: {}", stderr(&output));
    }
    assert!(dir.path().join("out/x.json").is_file());
    assert!(dir.path().join("out/t.hrxt").is_file());
    assert!(dir.path().join("out/x.json.1.partial").is_file());
    drop(held);
}

/// A Chrome or Perfetto export, or a trim, killed with SIGKILL (an OOM kill: no handler
/// runs) leaves its `OUT.PID.partial`; the next export or trim to the same OUT removes it
/// (it stayed for ever: 480 MB after one second of export, a break-it pass), by its lock,
/// not its process id: one named for a live process that is no writer (an id reused) goes
/// too, while the one a live export or trim writes now stays and completes, and another
/// output's is left alone.
#[test]
fn a_killed_export_or_trims_partial_file_is_removed_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("small.hrxt"), 50);
    let cases: [(&[&str], &str, &[&str]); 2] = [
        (
            &["export", "big.hrxt", "--format", "chrome", "-o", "k.json"],
            "k.json",
            &["export", "small.hrxt", "-o", "k.json"],
        ),
        (
            &["trim", "big.hrxt", "-o", "kt.hrxt", "--submissions", "1.."],
            "kt.hrxt",
            &[
                "trim",
                "small.hrxt",
                "-o",
                "kt.hrxt",
                "--submissions",
                "1..3",
            ],
        ),
    ];
    // Caught once it has written (its partial file created and the folder let go of).
    let written = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() > 0);
    for (args, out, next) in cases {
        let partial = format!("{out}.{{pid}}.partial");
        let mut regions = 200_000;
        let killed = loop {
            assert!(regions < 200_000 << 4, "{out}: never caught writing");
            synthetic_trace(&dir.path().join("big.hrxt"), regions);
            regions *= 2;
            if let Some(mut child) = stopped_once(dir.path(), args, &partial, written) {
                child.kill().unwrap();
                child.wait().unwrap();
                break child.id();
            }
        };
        let left = dir.path().join(format!("{out}.{killed}.partial"));
        assert!(left.is_file(), "{out}: the killed one's");
        // Named for a live process (this test's) that writes no export: an id reused.
        let reused = dir
            .path()
            .join(format!("{out}.{}.partial", std::process::id()));
        std::fs::write(&reused, b"left").unwrap();
        let other = dir.path().join(format!("other.json.{killed}.partial"));
        std::fs::write(&other, b"another output's").unwrap();
        let writing = loop {
            if let Some(child) = stopped_once(dir.path(), args, &partial, written) {
                break child;
            }
        };
        let own = format!("{out}.{}.partial", writing.id());
        let done = run(dir.path(), next);
        let mut partials = partial_files(dir.path());
        // Continued before any assertion: a failed test leaves no stopped process.
        // SAFETY: `writing` is our child, not yet reaped.
        unsafe { libc::kill(writing.id() as libc::pid_t, libc::SIGCONT) };
        let finished = writing.wait_with_output().unwrap();
        assert_eq!(code(&done), 0, "{out}: {}", stderr(&done));
        partials.sort();
        let mut kept = vec![own, format!("other.json.{killed}.partial")];
        kept.sort();
        assert_eq!(partials, kept, "{out}");
        assert_eq!(code(&finished), 0, "{out}: {}", stderr(&finished));
        std::fs::remove_file(&other).unwrap();
        assert_eq!(partial_files(dir.path()), Vec::<String>::new(), "{out}");
    }
}

/// A Parquet export that cannot move all its tables in (a directory made where a table
/// goes while it wrote) removes its staging directory and says how far it got in one
/// line; the marker moved in first, so that the next export replaces the tables moved in
/// (the staging directory stayed, and the next export refused: "its tables were not
/// written by hrx-trace export").
#[test]
fn a_parquet_export_that_cannot_move_its_tables_in_leaves_no_staging_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    synthetic_trace(&dir.path().join("small.hrxt"), 50);
    let args = ["export", "big.hrxt", "--format", "parquet", "-o", "tables"];
    let partial = "tables/.hrx-export.{pid}.partial/regions.parquet";
    let mut regions = 200_000;
    let child = loop {
        assert!(regions < 200_000 << 4, "never caught writing");
        synthetic_trace(&dir.path().join("big.hrxt"), regions);
        regions *= 2;
        let _ = std::fs::remove_dir_all(&tables);
        if let Some(child) = stopped_while_writing(dir.path(), &args, partial) {
            break child;
        }
    };
    std::fs::create_dir(tables.join("waits.parquet")).unwrap();
    // SAFETY: `child` is our child, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    assert_error(&out, "cannot move the Parquet tables into tables (moved ");
    assert!(stderr(&out).contains("Is a directory"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(".partial"), "{}", stderr(&out));
    assert_eq!(staging_left(&tables), Vec::<String>::new());
    std::fs::remove_dir(tables.join("waits.parquet")).unwrap();
    let out = run(dir.path(), &["export", "small.hrxt", "-o", "tables/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// Refused before anything is written, the directory as it was: a directory where a table
/// goes (the rename onto it failed halfway through moving the tables in, leaving two
/// exports' tables), a table the user may not write (the rename replaced it, asking only the
/// directory's permission; no other output is replaced so), and a directory the user may not
/// write (said of the staging directory, `DIR/.hrx-export.PID.partial`, not of DIR).
#[test]
fn parquet_refuses_a_directory_in_a_tables_place_and_tables_it_may_not_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    earlier_tables(dir.path(), 1000);
    std::fs::remove_file(tables.join("waits.parquet")).unwrap();
    std::fs::create_dir(tables.join("waits.parquet")).unwrap();
    let before = dir_files(&tables);
    let out = run(dir.path(), &["export", "big.hrxt", "-o", "tables/"]);
    assert_error(&out, "it holds waits.parquet, which is no earlier table");
    assert!(dir_files(&tables) == before);

    // Made by the user who exports (nobody, where the test runs as root), then protected.
    std::fs::remove_dir_all(&tables).unwrap();
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::copy(dir.path().join("small.hrxt"), mine.join("small.hrxt")).unwrap();
    std::fs::copy(dir.path().join("big.hrxt"), mine.join("big.hrxt")).unwrap();
    let root = crate::replaced::root();
    if root {
        std::os::unix::fs::chown(&mine, Some(65534), Some(65534)).unwrap();
    }
    let out = crate::replaced::run_unprivileged(&mine, &["export", "small.hrxt", "-o", "t/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let protected = mine.join("t/regions.parquet");
    std::fs::set_permissions(&protected, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = dir_files(&mine.join("t"));
    let out = crate::replaced::run_unprivileged(&mine, &["export", "big.hrxt", "-o", "t/"]);
    assert_error(
        &out,
        "t/regions.parquet: it cannot be opened for writing: Permission denied",
    );
    assert!(dir_files(&mine.join("t")) == before, "replaced");
    let mode = std::fs::metadata(&protected).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);

    // A directory the user may not write: said of it, no staging directory named.
    std::fs::remove_dir_all(mine.join("t")).unwrap();
    std::fs::create_dir(mine.join("t")).unwrap();
    std::fs::set_permissions(mine.join("t"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = crate::replaced::run_unprivileged(&mine, &["export", "small.hrxt", "-o", "t/"]);
    assert_error(&out, "cannot write Parquet tables to t/: Permission denied");
    assert!(!stderr(&out).contains(".hrx-export"), "{}", stderr(&out));
    std::fs::set_permissions(mine.join("t"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A Parquet export that fails writing (a file size limit: EFBIG, as a full disk's ENOSPC)
/// into a directory of earlier tables leaves them as they were, and no staging directory.
#[test]
fn a_failed_parquet_export_keeps_the_earlier_tables() {
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables");
    let earlier = earlier_tables(dir.path(), 20_000);
    let out = Command::new("sh")
        .current_dir(dir.path())
        .arg("-c")
        .arg(size_limited("export big.hrxt --format parquet -o tables"))
        .output()
        .unwrap();
    assert_error(
        &out,
        "cannot write Parquet tables to tables (removed the tables written; its earlier tables are as they were)",
    );
    assert!(stderr(&out).contains("File too large"), "{}", stderr(&out));
    assert!(dir_files(&tables) == earlier, "the earlier tables changed");
}

/// Two processes recorded one after the other on this host, exported together: one
/// timeline with two processes (their real pids), each slice at the same absolute
/// CLOCK_MONOTONIC time as in its own export, so the second process's work lies after the
/// first's.
#[test]
fn two_traces_merge_into_one_timeline_on_the_monotonic_clock() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "a.hrxt");
    record_hazards(dir.path(), "b.hrxt");
    let out = run(
        dir.path(),
        &["export", "a.hrxt", "b.hrxt", "-o", "ab.pftrace"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 traces from 1 host lined up by CLOCK_MONOTONIC"),
        "{}",
        stderr(&out)
    );
    for one in ["a", "b"] {
        let args = [
            "export",
            &format!("{one}.hrxt"),
            "-o",
            &format!("{one}.pftrace"),
        ];
        let out = run(dir.path(), &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let Some(merged) = perfetto_check(&dir.path().join("ab.pftrace")) else {
        return;
    };
    let a = perfetto_check(&dir.path().join("a.pftrace")).unwrap();
    let b = perfetto_check(&dir.path().join("b.pftrace")).unwrap();
    let pid = |v: &Value| v["processes"][0]["pid"].as_u64().unwrap();
    let pids: Vec<u64> = merged["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, [pid(&a), pid(&b)]);
    assert_ne!(pid(&a), pid(&b));
    let first = |v: &Value, p: u64| v["first_slice_by_pid"][p.to_string()].as_u64().unwrap();
    assert_eq!(first(&merged, pid(&a)), first(&a, pid(&a)));
    assert_eq!(first(&merged, pid(&b)), first(&b, pid(&b)));
    assert!(first(&merged, pid(&b)) > first(&merged, pid(&a)));
    for key in ["slices", "flows", "instants", "tracks"] {
        let n = |v: &Value| v[key].as_u64().unwrap();
        assert_eq!(n(&merged), n(&a) + n(&b), "{key}");
    }
}

/// `-o`'s extension picks the format; an unknown one is one error line, and nothing is
/// written.
#[test]
fn the_format_comes_from_the_output_name() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "h.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("(chrome)"), "{}", stdout(&out));
    let json = std::fs::read(dir.path().join("h.json")).unwrap();
    assert!(json.starts_with(b"{\"traceEvents\""));
    for name in ["h.pftrace", "h.perfetto-trace", "h.pb"] {
        let out = run(dir.path(), &["export", "h.hrxt", "-o", name]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            stdout(&out).contains("(perfetto)"),
            "{name}: {}",
            stdout(&out)
        );
    }
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "h.svg"]);
    assert_error(
        &out,
        "cannot tell the export format from h.svg: .svg is none of",
    );
    assert!(!dir.path().join("h.svg").exists());
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "h"]);
    assert_error(&out, "it has no extension");
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "-"]);
    assert_error(&out, "needs --format chrome or perfetto");
    // --format wins over the name.
    let out = run(
        dir.path(),
        &["export", "h.hrxt", "--format", "perfetto", "-o", "x.json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("x.json")).unwrap()[0], 0x0a);
}

/// Operation timings are slices nested in their region's (same track, within its span, named
/// by their kernel, the node and clock in their arguments) in Perfetto, checked with the
/// official schema, and in Chrome JSON; in Parquet an `op_timings` table whose rows join
/// their region's run and their operation, and give `stats`' per-operation figures. A failed
/// run's operations are exported (the export shows what ran) and left out of the figures.
#[test]
fn operation_timings_nest_in_their_region_slices_and_join_in_parquet() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline, with_op_timings};
    let dir = tempfile::tempdir().unwrap();
    let spec = PipelineSpec {
        fail_at: Some(9),
        ..PipelineSpec::ops(80)
    };
    write_records(
        &dir.path().join("ops.hrxt"),
        with_op_timings(pipeline(spec)),
    );
    let records = records(dir.path(), "ops.hrxt");
    let ops: Vec<&Value> = records.iter().filter_map(|r| r.get("OpTiming")).collect();
    // Ten compute regions, the last failed: two operations each.
    assert_eq!(ops.len(), 20);

    let out = run(dir.path(), &["export", "ops.hrxt", "-o", "ops.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(20 of them operations)"),
        "{}",
        stdout(&out)
    );
    if let Some(v) = perfetto_check(&dir.path().join("ops.pftrace")) {
        let parents = serde_json::json!({"blur": {"blur +1": 10}, "sobel": {"blur +1": 10}});
        assert_eq!(v["parents"], parents, "{v}");
        assert_eq!(v["max_depth"], 2, "{v}");
    }

    let out = run(
        dir.path(),
        &["export", "ops.hrxt", "--format", "chrome", "-o", "ops.json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.path().join("ops.json")).unwrap())
        .expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let x = |cat: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .collect()
    };
    let (regions, operations) = (x("region"), x("operation"));
    assert_eq!(operations.len(), 20);
    let f = |e: &Value, k: &str| e[k].as_f64().unwrap();
    for op in &operations {
        let args = &op["args"];
        let timing = ops
            .iter()
            .find(|o| o["timing"]["submission"] == args["submission"] && o["node"] == args["node"])
            .expect("its OpTiming");
        let device = &timing["timing"]["device"];
        let device_ns = device["end_ns"].as_u64().unwrap() - device["start_ns"].as_u64().unwrap();
        assert_eq!(args["clock"], "device", "{op}");
        assert_eq!(args["duration_ns"].as_u64(), Some(device_ns), "{op}");
        let name = if args["node"] == 1 { "blur" } else { "sobel" };
        assert_eq!(op["name"], name, "{op}");
        // Inside the slice of its region's run, on the same track.
        let parent = regions.iter().find(|r| {
            (r["pid"] == op["pid"] && r["tid"] == op["tid"])
                && r["args"]["submission"] == args["submission"]
                && r["args"]["region"] == args["region"]
        });
        let parent = parent.unwrap_or_else(|| panic!("no region slice around {op}"));
        assert!(f(parent, "ts") <= f(op, "ts"), "{op} in {parent}");
        assert!(
            f(op, "ts") + f(op, "dur") <= f(parent, "ts") + f(parent, "dur") + 1e-9,
            "{op} in {parent}"
        );
    }

    let out = run(
        dir.path(),
        &["export", "ops.hrxt", "--format", "parquet", "-o", "pq"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("20 operation timing rows"),
        "{}",
        stdout(&out)
    );
    let Some(got) = python_check(
        "tests/parquet/operations.py",
        std::ffi::OsStr::new("pq"),
        dir.path(),
        "HRX_REQUIRE_DUCKDB",
        "duckdb==2.0.1",
    ) else {
        return;
    };
    let stats: Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", "ops.hrxt"]))).unwrap();
    for o in stats["operations"].as_array().unwrap() {
        let key = format!(
            "{} {}",
            o["kind"].as_str().unwrap(),
            o["name"].as_str().unwrap()
        );
        let row = &got[&key];
        assert_eq!(row["count"], o["count"], "{key}: {got}");
        assert_eq!(row["total_ns"], o["total_ns"], "{key}: {got}");
        assert_eq!(row["unjoined"], 0, "{key}: {got}");
    }
    assert_eq!(got.as_object().unwrap().len(), 2, "{got}");
}

/// A trace without operation timings is exported with undivided region slices, and the
/// export says it has no per-operation times.
#[test]
fn an_export_without_operation_timings_says_so() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("plain.hrxt"), 40);
    let out = run(dir.path(), &["export", "plain.hrxt", "-o", "plain.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: per-operation times: none recorded; each of the 10 native-graph regions is \
             one slice"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("operations"), "{}", stdout(&out));
}

/// The Parquet checks the README names, run by hand without their argument or with
/// `--help`, print their usage line and exit 2 (an IndexError's traceback, or `--help`
/// taken for a directory; fresh-user pass). Checked before DuckDB is imported, so without it
/// too.
#[test]
fn the_parquet_checks_say_their_usage() {
    for script in ["operations", "kernels", "annotations", "sessions"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/parquet/{script}.py"));
        for args in [&[][..], &["--help"], &["a", "b"]] {
            let Ok(out) = Command::new("python3").arg(&path).args(args).output() else {
                eprintln!("\n!!! SKIPPED the_parquet_checks_say_their_usage: no python3\n");
                return;
            };
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{script} {args:?}: {err}");
            assert!(
                err.starts_with(&format!("usage: {script}.py ")) && err.lines().count() == 1,
                "{script} {args:?}: {err}"
            );
            assert_eq!(stdout(&out), "", "{script} {args:?}");
        }
    }
}

/// Runs `tests/parquet/kernels.py` (DuckDB) over the export directories `pattern` names;
/// `None` (after saying so loudly) without the `duckdb` package, unless `HRX_REQUIRE_DUCKDB`
/// is set (CI), where its absence fails.
fn duckdb_kernels(dir: &Path, pattern: &str) -> Option<Value> {
    python_check(
        "tests/parquet/kernels.py",
        std::ffi::OsStr::new(pattern),
        dir,
        "HRX_REQUIRE_DUCKDB",
        "duckdb==2.0.1",
    )
}

/// Runs the Python check `script` (relative to the crate) on `arg` in `dir` and returns the
/// JSON it prints. Exit 3 means a Python package is missing: `None`, said loudly, unless
/// the environment sets `require` (CI installs `packages`), where it fails the test.
fn python_check(
    script: &str,
    arg: &std::ffi::OsStr,
    dir: &Path,
    require: &str,
    packages: &str,
) -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let out = Command::new("python3")
        .arg(&path)
        .arg(arg)
        .current_dir(dir)
        .output();
    let missing = match &out {
        Err(e) => Some(format!("python3: {e}")),
        Ok(o) if o.status.code() == Some(3) => Some(stderr(o)),
        Ok(_) => None,
    };
    if let Some(why) = missing {
        assert!(
            std::env::var_os(require).is_none(),
            "{require} is set but {script} cannot run: {why}"
        );
        eprintln!(
            "\n!!! SKIPPED {script}: {why}\n!!! install with: python3 -m pip install {packages}\n"
        );
        return None;
    }
    let out = out.unwrap();
    assert_eq!(code(&out), 0, "{script}: {}", stderr(&out));
    Some(serde_json::from_str(&stdout(&out)).expect("the check prints JSON"))
}

/// Two processes' traces exported as Parquet tables, one directory each, queried together
/// with DuckDB: per kernel, the count and total duration are the sums of `stats --json`'s
/// over the two traces, and the mean is theirs.
#[test]
fn parquet_tables_give_stats_per_kernel_figures_in_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for name in ["a", "b"] {
        record_hazards(dir.path(), &format!("{name}.hrxt"));
        let args = [
            "export",
            &format!("{name}.hrxt"),
            "--format",
            "parquet",
            "-o",
            &format!("exports/{name}"),
        ];
        let out = run(dir.path(), &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains("14 tables"), "{}", stdout(&out));
        let out = run(dir.path(), &["stats", "--json", &format!("{name}.hrxt")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
        for k in stats["regions"].as_array().unwrap() {
            let entry = want
                .entry(k["name"].as_str().unwrap().to_owned())
                .or_default();
            entry.0 += k["count"].as_u64().unwrap();
            entry.1 += k["total_ns"].as_u64().unwrap();
        }
        // The operations table too, copies by lane (`upload`, `download`, `copy`) as
        // `stats` lists them: the tables named every copy `copy` (fresh-user pass).
        let dir_arg = format!("exports/{name}");
        let Some(ops) = python_check(
            "tests/parquet/operations.py",
            std::ffi::OsStr::new(&dir_arg),
            dir.path(),
            "HRX_REQUIRE_DUCKDB",
            "duckdb==2.0.1",
        ) else {
            continue;
        };
        let listed = stats["operations"].as_array().unwrap();
        assert!(listed.iter().any(|o| o["name"] == "upload"), "{stats:#}");
        for o in listed {
            let key = format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            );
            assert_eq!(ops[&key]["count"], o["count"], "{key}: {ops}");
            assert_eq!(ops[&key]["total_ns"], o["total_ns"], "{key}: {ops}");
        }
        assert_eq!(ops.as_object().unwrap().len(), listed.len(), "{ops}");
    }
    assert!(!want.is_empty());
    let Some(got) = duckdb_kernels(dir.path(), "exports/*") else {
        return;
    };
    let got: BTreeMap<String, (u64, u64)> = got
        .as_object()
        .unwrap()
        .iter()
        .map(|(label, v)| {
            let (count, total) = (
                v["count"].as_u64().unwrap(),
                v["total_ns"].as_u64().unwrap(),
            );
            let mean = v["mean_ns"].as_f64().unwrap();
            assert!(
                (mean - total as f64 / count as f64).abs() < 1e-6,
                "{label}: {v}"
            );
            (label.clone(), (count, total))
        })
        .collect();
    assert_eq!(got, want);
}

/// Parquet goes to a directory: created when missing, refused when it holds anything but
/// earlier tables, replaced when it holds them; a file is refused. Nothing is lost.
#[test]
fn parquet_export_writes_a_directory_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    // A trailing slash, or an existing directory, means parquet.
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "t/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(dir.path().join("t/regions.parquet").is_file());
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "t"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::write(dir.path().join("t/notes.txt"), "keep").unwrap();
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "t"]);
    assert_error(&out, "it holds notes.txt, which is no earlier table");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t/notes.txt")).unwrap(),
        "keep"
    );
    let out = run(
        dir.path(),
        &["export", "h.hrxt", "--format", "parquet", "-o", "h.hrxt"],
    );
    assert_error(&out, "it is a file, not a directory");
    // A symbolic link to nothing is said as such (it said "File exists"), and nothing made.
    std::os::unix::fs::symlink("nowhere", dir.path().join("dangling")).unwrap();
    for dangling in ["dangling", "dangling/"] {
        let out = run(
            dir.path(),
            &["export", "h.hrxt", "--format", "parquet", "-o", dangling],
        );
        assert_error(
            &out,
            "it is a symbolic link to nowhere, which does not exist",
        );
    }
    assert!(!dir.path().join("nowhere").exists());
    // A trace that cannot be read leaves no directory behind.
    std::fs::write(dir.path().join("bad.hrxt"), b"not a trace").unwrap();
    let out = run(dir.path(), &["export", "bad.hrxt", "-o", "new.parquet"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!dir.path().join("new.parquet").exists());
}

/// A merged export of one recording twice (the same file, or a trace with its own trim)
/// would draw every slice twice on one process: refused, naming both.
#[test]
fn a_merged_export_of_one_recording_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let trim = run(
        dir.path(),
        &["trim", "h.hrxt", "-o", "t.hrxt", "--submissions", "2.."],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
    for (second, output) in [("h.hrxt", "twice.json"), ("t.hrxt", "tables/")] {
        let out = run(dir.path(), &["export", "h.hrxt", second, "-o", output]);
        assert_error(
            &out,
            &format!("h.hrxt and {second} hold the same recording session"),
        );
        assert!(!dir.path().join(output).exists(), "nothing written");
    }
}

/// Parquet tables never go to `-o -` (a directory named `-` was made), and tables of our
/// names that an export did not write (no marker) are another program's: refused, kept.
#[test]
fn parquet_refuses_standard_output_and_tables_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let out = run(
        dir.path(),
        &["export", "h.hrxt", "--format", "parquet", "-o", "-"],
    );
    assert_error(&out, "cannot go to standard output (-o -)");
    assert!(!dir.path().join("-").exists());

    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("regions.parquet"), b"someone else's table").unwrap();
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "mine/"]);
    assert_error(&out, "its tables were not written by hrx-trace export");
    assert_eq!(
        std::fs::read(mine.join("regions.parquet")).unwrap(),
        b"someone else's table"
    );
    // An export's own tables are replaced by the next export, which says so (as `record`
    // and `trim` say of a file they replace); the first says nothing of it.
    let ours = run(dir.path(), &["export", "h.hrxt", "-o", "ours/"]);
    assert_eq!(code(&ours), 0, "{}", stderr(&ours));
    assert!(!stderr(&ours).contains("replaced"), "{}", stderr(&ours));
    let again = run(dir.path(), &["export", "h.hrxt", "-o", "ours/"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stderr(&again).contains("note: ours/ held an earlier export's tables: they are replaced"),
        "{}",
        stderr(&again)
    );
}

/// The pipeline's annotations (format 1.14) as Parquet tables, queried with DuckDB
/// (`tests/parquet/annotations.py`): per range name, the count and total duration are
/// `stats --json`'s, each range on the thread `stats` gives it (`decode photo` on `decoder`,
/// through the join with `threads`), and the frames in flight counter has its samples.
#[test]
fn parquet_annotations_give_stats_range_figures_in_duckdb() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(dir.path(), &["export", "p.hrxt", "-o", "exports/p/"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(dir.path(), &["stats", "--json", "p.hrxt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let want: BTreeMap<String, (u64, u64)> = stats["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let n = |k: &str| a[k].as_u64().unwrap();
            (
                a["name"].as_str().unwrap().to_owned(),
                (n("count"), n("total_ns")),
            )
        })
        .collect();
    assert!(want.contains_key("decode photo"), "{stats}");
    let Some(got) = python_check(
        "tests/parquet/annotations.py",
        std::ffi::OsStr::new("exports/*"),
        dir.path(),
        "HRX_REQUIRE_DUCKDB",
        "duckdb==2.0.1",
    ) else {
        return;
    };
    let ranges: BTreeMap<String, (u64, u64)> = got["ranges"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, v)| {
            let n = |k: &str| v[k].as_u64().unwrap();
            (name.clone(), (n("count"), n("total_ns")))
        })
        .collect();
    assert_eq!(ranges, want);
    assert_eq!(
        got["ranges"]["decode photo"]["threads"],
        serde_json::json!(["decoder"])
    );
    let samples = stats["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "frames in flight")
        .unwrap()["samples"]
        .clone();
    assert_eq!(got["counters"]["frames in flight"], samples);
}

/// `-o /dev/stdout` with standard output redirected to a file is standard output: the
/// export is written through it (valid JSON, the summary on standard error), and `record`
/// and `trim` refuse it as they refuse `-` (the export's summary line overwrote the JSON's
/// first bytes, exit 0; `record` destroyed its own trace; break-it pass).
#[test]
fn dev_stdout_redirected_to_a_file_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    // Runs `args` with standard output (or standard error) redirected to the file `name`.
    let redirected = |name: &str, args: &[&str], stderr: bool| {
        let file = std::fs::File::create(dir.path().join(name)).unwrap();
        let mut command = hrx_trace(dir.path());
        command.args(args);
        if stderr {
            command.stderr(std::process::Stdio::from(file));
        } else {
            command.stdout(std::process::Stdio::from(file));
        }
        command.output().unwrap()
    };
    let into = |name: &str, args: &[&str]| redirected(name, args, false);
    let export = [
        "export",
        "h.hrxt",
        "-o",
        "/dev/stdout",
        "--format",
        "chrome",
    ];
    let out = into("x.json", &export);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read(dir.path().join("x.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&text).expect("valid JSON");
    assert!(!doc["traceEvents"].as_array().unwrap().is_empty());
    for args in [
        &["record", "--workload", "hazards", "-o", "/dev/stdout"][..],
        &[
            "trim",
            "h.hrxt",
            "-o",
            "/dev/stdout",
            "--submissions",
            "1..",
        ][..],
    ] {
        let out = into("r.out", args);
        assert_error(&out, "cannot write the trace to standard output");
    }
    // Through a pipe too (it was refused as a FIFO).
    let out = hrx_trace(dir.path()).args(export).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert!(!doc["traceEvents"].as_array().unwrap().is_empty());
    // Standard error's file is refused by every writer (what hrx-trace prints there would
    // be written into it: the trim replaced /dev/stderr itself with a regular file).
    let into_stderr = |name: &str, args: &[&str]| redirected(name, args, true);
    for (args, says) in [
        (
            &[
                "export",
                "h.hrxt",
                "-o",
                "/dev/stderr",
                "--format",
                "chrome",
            ][..],
            "cannot write the export to /dev/stderr: it is standard error",
        ),
        (
            &["record", "--workload", "hazards", "-o", "/dev/stderr"][..],
            "cannot write the trace to standard error",
        ),
        (
            &[
                "trim",
                "h.hrxt",
                "-o",
                "/dev/stderr",
                "--submissions",
                "1..",
            ][..],
            "cannot write the trace to standard error",
        ),
    ] {
        let out = into_stderr("e.out", args);
        assert_eq!(code(&out), 2, "{args:?}");
        let said = std::fs::read_to_string(dir.path().join("e.out")).unwrap();
        assert!(
            said.starts_with("error: ") && said.contains(says),
            "{args:?}: {said}"
        );
    }
}

/// `trim -o LINK` writes through a symlink to its target, as every writer does, and leaves
/// the link a link (it renamed its output over the link).
#[test]
fn trim_writes_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    std::os::unix::fs::symlink("target.hrxt", dir.path().join("link.hrxt")).unwrap();
    let out = run(
        dir.path(),
        &["trim", "h.hrxt", "-o", "link.hrxt", "--submissions", "1.."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let link = std::fs::symlink_metadata(dir.path().join("link.hrxt")).unwrap();
    assert!(link.file_type().is_symlink());
    let target = std::fs::read(dir.path().join("target.hrxt")).unwrap();
    assert!(target.starts_with(&hrx_capture::format::MAGIC));
}

/// An export's operation slices are named as `stats` names the operations (copies by lane:
/// `upload`, `download`), so a Perfetto query by name finds what `stats` lists (they were
/// all `copy`; fresh-user pass).
#[test]
fn operation_slices_are_named_as_stats_names_operations() {
    let Some(photo) = photo() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = record_pipeline(dir.path(), "p.hrxt", &photo);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(
        dir.path(),
        &["export", "p.hrxt", "--format", "chrome", "-o", "p.json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("p.json")).unwrap()).unwrap();
    let sliced: BTreeSet<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "operation")
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        sliced.contains("upload") && sliced.contains("download") && !sliced.contains("copy"),
        "{sliced:?}"
    );
    let stats: Value =
        serde_json::from_str(&stdout(&run(dir.path(), &["stats", "--json", "p.hrxt"]))).unwrap();
    let listed: BTreeSet<String> = stats["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sliced, listed);
}

/// Two trims into one `-o` at once: each writes its own temporary file, so the output is one
/// of the two trims, whole, and both succeed (one fixed temporary name had them write into
/// each other's file: the winner exited 0 over a trace with checksum mismatches and the
/// loser's range, a break-it pass).
#[test]
fn two_trims_into_one_output_at_once_leave_one_whole_trim() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("s.hrxt"), 40_000);
    let trim = |range: &str| {
        hrx_trace(dir.path())
            .args([
                "trim",
                "-q",
                "s.hrxt",
                "-o",
                "t.hrxt",
                "--submissions",
                range,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (trim("1..5000"), trim("6000..11000"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let info = run(dir.path(), &["info", "--json", "t.hrxt"]);
    assert_eq!(code(&info), 0, "{}", stderr(&info));
    assert_eq!(stderr(&info), "", "the trim reads back whole");
    let report: Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(report["closed"]["clean_close"], true, "{report}");
    let partials = partial_files(dir.path());
    assert!(partials.is_empty(), "{partials:?}");
}

/// Two exports into one `-o` at once: each writes its own temporary file, so the output is
/// one of the two exports, whole (they wrote into one file, both exiting 0 over JSON that
/// did not parse: a break-it pass).
#[test]
fn two_exports_into_one_output_at_once_leave_one_whole_export() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_trace(&dir.path().join("a.hrxt"), 20_000);
    synthetic_trace(&dir.path().join("b.hrxt"), 30_000);
    let export = |trace: &str| {
        hrx_trace(dir.path())
            .args(["export", "-q", trace, "--format", "chrome", "-o", "e.json"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (export("a.hrxt"), export("b.hrxt"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let json: Value = serde_json::from_slice(&std::fs::read(dir.path().join("e.json")).unwrap())
        .expect("the export parses");
    assert!(
        json["traceEvents"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
}

/// The Chrome JSON events named `name` of `trace`'s export (into `out.json` in `dir`).
fn chrome_events_named(dir: &std::path::Path, trace: &str, name: &str) -> Vec<Value> {
    let out = run(dir, &["export", trace, "-o", "out.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out.json")).unwrap()).unwrap();
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == name)
        .cloned()
        .collect()
}

/// An export of a recording made on a loaded host marks each of the runtimes' host-load
/// samples at 1 or more per CPU with a `host loaded` mark in words on the `Recorder` track
/// (Chrome JSON, Perfetto, a Parquet `events` row), as `stats` and `diff` say it: the
/// counter alone drew the load without saying what it means for the times. A quiet
/// recording has none.
#[test]
fn the_export_of_a_loaded_host_trace_says_so_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "whole.hrxt");
    loaded_copy(dir.path(), "whole.hrxt", "loaded.hrxt", 2.5);
    loaded_copy(dir.path(), "whole.hrxt", "quiet.hrxt", 0.25);
    let marks = |trace: &str| chrome_events_named(dir.path(), trace, "host loaded");
    let samples = records(dir.path(), "loaded.hrxt")
        .iter()
        .filter(|r| r.get("CounterSample").is_some())
        .count();
    let loaded = marks("loaded.hrxt");
    assert_eq!(loaded.len(), samples, "{loaded:?}");
    assert_eq!(loaded[0]["ph"], "i");
    assert_eq!(loaded[0]["args"]["load_per_cpu"], "2.50");
    assert_eq!(
        loaded[0]["args"]["meaning"],
        "the host was loaded while recording (1-minute load average per CPU at 1 or more): \
         host-side times include waits for a CPU"
    );
    assert!(marks("quiet.hrxt").is_empty());
    // Counted among the recorder's marks in both formats, as the records say.
    check_both(dir.path(), "loaded.hrxt");
    let out = run(dir.path(), &["export", "loaded.hrxt", "-o", "l.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("l.pftrace")).unwrap();
    assert!(bytes.windows(11).any(|w| w == b"host loaded"));
    // On screen too, in `info`'s words, one `note:` line (it printed nothing of the load:
    // a fresh user's pass).
    let info = stdout(&run(dir.path(), &["info", "loaded.hrxt"]));
    let note = format!(
        "note: loaded.hrxt: host load {}\n",
        field(&info, "host load")
    );
    assert!(note.contains(": loaded, its host-side times"), "{info}");
    assert_eq!(stderr(&out), note);
    // `-q` never silences what a trace lacks: a warning then, as `record -q` says it (it
    // said nothing, where `info`, `stats`, `replay` and `diff` said it: a fresh user's pass).
    let quiet = run(
        dir.path(),
        &["-q", "export", "loaded.hrxt", "-o", "q.pftrace"],
    );
    assert_eq!(code(&quiet), 0, "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), note.replacen("note:", "warning:", 1));
    let out = run(
        dir.path(),
        &["export", "loaded.hrxt", "--format", "parquet", "-o", "pq"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), note);
    let events = std::fs::read(dir.path().join("pq/events.parquet")).unwrap();
    assert!(events.windows(11).any(|w| w == b"host loaded"));
    for quiet_flag in [None, Some("-q")] {
        let args = (quiet_flag.into_iter()).chain(["export", "quiet.hrxt", "-o", "q.pftrace"]);
        let quiet = run(dir.path(), &args.collect::<Vec<_>>());
        assert_eq!(
            stderr(&quiet),
            "",
            "a quiet host's export says nothing of it"
        );
    }
}

/// The export of a trim (or a capture range) says in the file which range of a recording
/// it holds (a `trace range` mark on the recorder's track, as `info` words it), so that
/// whoever opens it sees that the submissions outside it are missing; a whole recording's
/// has none. The export read as the whole run's.
#[test]
fn the_export_of_a_trim_says_the_range_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards_trimmed(dir.path());
    let ranges = |trace: &str| chrome_events_named(dir.path(), trace, "trace range");
    let marks = ranges("t.hrxt");
    assert_eq!(marks.len(), 1, "{marks:?}");
    let args = &marks[0]["args"];
    assert_eq!(
        args["range"],
        "trimmed from whole.hrxt, submissions 2..4 (submissions:2..4)"
    );
    assert_eq!(
        (&args["first_submission"], &args["end_submission"]),
        (&2.into(), &4.into())
    );
    let out = run(dir.path(), &["export", "t.hrxt", "-o", "t.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(dir.path().join("t.pftrace")).unwrap();
    assert!(bytes.windows(11).any(|w| w == b"trace range"));
    assert!(ranges("whole.hrxt").is_empty());
}

/// A trace whose first block (its session record) is damaged: exported alone, its times are
/// on CLOCK_MONOTONIC as the intact trace's (recovered from its clock calibrations, not
/// session ns under a snapshot of CLOCK_MONOTONIC 0 and 1970), it says what it lost on
/// stderr and in each output, and its Parquet rows join a `sessions` row; merged with
/// another trace (here its own intact copy: the same run shown twice) it is refused, in
/// every format (a break-it pass).
#[test]
fn a_trace_whose_session_record_was_lost_is_exported_as_such_and_never_merged() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let mut bytes = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    // The first block's marker, just after the 32-byte file header.
    bytes[32] ^= 0xff;
    std::fs::write(dir.path().join("d.hrxt"), &bytes).unwrap();
    for output in ["m.json", "m.pftrace", "tables/"] {
        let out = run(dir.path(), &["export", "h.hrxt", "d.hrxt", "-o", output]);
        assert_error(
            &out,
            "cannot merge d.hrxt: its session record was lost (its first block is damaged)",
        );
        assert!(!dir.path().join(output).exists(), "nothing written");
    }
    let lost = "session record lost (its first block damaged or cut short): host, pid, command \
                line and wall clock unknown; times put on CLOCK_MONOTONIC";
    for (trace, output) in [("h.hrxt", "h.json"), ("d.hrxt", "d.json")] {
        let out = run(dir.path(), &["export", trace, "-o", output]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(
            stderr(&out).contains(&format!("warning: {trace}: {lost}")),
            trace == "d.hrxt",
            "{}",
            stderr(&out)
        );
    }
    let json = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(name)).unwrap()).unwrap()
    };
    // Each slice's absolute start, ns, by name, sorted.
    let starts = |doc: &Value| -> Vec<(String, i128)> {
        let base: i128 = doc["otherData"]["ts_base_ns"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let mut starts: Vec<(String, i128)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let ts = (e["ts"].as_f64().unwrap() * 1000.0).round() as i128;
                (e["name"].as_str().unwrap().to_owned(), base + ts)
            })
            .collect();
        starts.sort();
        starts
    };
    let (h, d) = (json("h.json"), json("d.json"));
    let (intact, recovered) = (starts(&h), starts(&d));
    assert_eq!(intact.len(), recovered.len());
    for ((name, a), (other, b)) in intact.iter().zip(&recovered) {
        // Calibrations a block apart differ by the session clock's drift (ns here); the
        // session ns exported before were the host's uptime away.
        assert!(
            name == other && (a - b).abs() < 1_000_000,
            "{name} {a} {other} {b}"
        );
    }
    assert_eq!(d["otherData"]["clock"], "CLOCK_MONOTONIC");
    assert!(
        d["otherData"]["session_record"]
            .as_str()
            .unwrap()
            .starts_with(lost),
        "{}",
        d["otherData"]
    );
    for format in ["pftrace", "parquet"] {
        let out = run(
            dir.path(),
            &["export", "d.hrxt", "-o", &format!("d.{format}")],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stderr(&out).contains(lost), "{}", stderr(&out));
    }
    let out = run(dir.path(), &["export", "h.hrxt", "-o", "h.parquet"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    if let Some(v) = python_check(
        "tests/perfetto/check.py",
        std::ffi::OsStr::new("d.pftrace"),
        dir.path(),
        "HRX_REQUIRE_PERFETTO",
        "perfetto==0.59.1 protobuf==6.31.1",
    ) {
        let n = |k: &str| v[k].as_u64().unwrap();
        assert_eq!(
            (
                n("unknown_fields"),
                n("unmatched_flow_ids"),
                n("unbalanced_ends")
            ),
            (0, 0, 0),
            "{v}"
        );
        // CLOCK_MONOTONIC at the recovered base, and no wall clock (it read 1970).
        let snapshots = v["clock_snapshots"].as_array().unwrap();
        assert_eq!(snapshots.len(), 1, "{v}");
        let clocks = snapshots[0]["clocks"].as_object().unwrap();
        assert_eq!(clocks.keys().collect::<Vec<_>>(), ["3"], "{v}");
        assert!(clocks["3"].as_u64().unwrap() > 0, "{v}");
        let labels = &v["processes"][0]["labels"];
        assert!(labels[0].as_str().unwrap().starts_with(lost), "{v}");
    }
    // Both exports queried as one data set: every row joins a `sessions` row.
    if let Some(v) = python_check(
        "tests/parquet/sessions.py",
        std::ffi::OsStr::new("*.parquet"),
        dir.path(),
        "HRX_REQUIRE_DUCKDB",
        "duckdb==2.0.1",
    ) {
        let sessions = v["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 2, "{v}");
        assert_eq!(
            (
                &sessions[0]["session_record"],
                &sessions[0]["host"],
                &sessions[0]["pid"]
            ),
            (&"lost".into(), &Value::Null, &Value::Null),
            "{v}"
        );
        assert_eq!(sessions[0]["clock"], "CLOCK_MONOTONIC", "{v}");
        assert!(
            sessions[0]["monotonic_base_ns"].as_u64().unwrap() > 0,
            "{v}"
        );
        assert_eq!(sessions[1]["session_record"], "recorded", "{v}");
        for (table, n) in v["unjoined"].as_object().unwrap() {
            assert_eq!(n, 0, "{table}: {v}");
        }
        assert_eq!(v["regions"]["lost"], v["regions"]["recorded"], "{v}");
        assert!(v["regions"]["lost"].as_u64().unwrap() > 0, "{v}");
    }
}

/// A trace that lost its session record and every calibration (an older trace, or one
/// whose calibrations were damaged too) holds session ns: its Perfetto export names no
/// clock for them, neither as the sequence's default nor in a snapshot (it said
/// `CLOCK_MONOTONIC`, 0 at session ns 0: a second break-it pass), and still decodes with the
/// official definitions, every slice balanced; its label and the warning say what its
/// times are.
#[test]
fn a_lost_session_without_a_calibration_is_exported_on_no_clock() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::Record;
    let dir = tempfile::tempdir().unwrap();
    // Written as they are (a recorder writes a session start and calibrations of its own).
    let file = std::fs::File::create(dir.path().join("n.hrxt")).unwrap();
    let mut writer = hrx_capture::TraceWriter::new(file).unwrap();
    for r in pipeline(PipelineSpec::ops(40)) {
        if !matches!(r, Record::SessionStart(_) | Record::HostClock(_)) {
            writer.write(&r).unwrap();
        }
    }
    writer.finish().unwrap();
    let out = run(dir.path(), &["export", "n.hrxt", "-o", "n.pftrace"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let times = "times are ns from the session's start, not CLOCK_MONOTONIC";
    assert!(stderr(&out).contains(times), "{}", stderr(&out));
    if let Some(v) = python_check(
        "tests/perfetto/check.py",
        std::ffi::OsStr::new("n.pftrace"),
        dir.path(),
        "HRX_REQUIRE_PERFETTO",
        "perfetto==0.59.1 protobuf==6.31.1",
    ) {
        assert_eq!(v["clock_snapshots"], serde_json::json!([]), "{v}");
        assert_eq!(v["timestamp_clock_ids"], serde_json::json!([]), "{v}");
        let n = |k: &str| v[k].as_u64().unwrap();
        assert_eq!(
            (
                n("unknown_fields"),
                n("unbalanced_ends"),
                n("packets_without_state")
            ),
            (0, 0, 0),
            "{v}"
        );
        assert!(n("slices") > 0, "{v}");
        let labels = &v["processes"][0]["labels"];
        assert!(labels[0].as_str().unwrap().contains(times), "{v}");
    }
}
