//! Tests of the report: its numbers and its text.

use super::text::{timing_cells, tolerance_text};
use super::*;

#[test]
fn tolerances_print_as_people_write_them() {
    let printed: Vec<String> = [0.0, 1e-6, 0.01, 0.5, 2.0, 2.5e-7]
        .into_iter()
        .map(tolerance_text)
        .collect();
    assert_eq!(printed, ["0", "1e-6", "0.01", "0.5", "2", "2.5e-7"]);
}

#[test]
fn one_sample_has_no_spread() {
    let stats = |samples| Durations {
        samples,
        median_ns: 7,
        min_ns: 7,
        p10_ns: 7,
        p90_ns: 9,
        p99_ns: 9,
        max_ns: 9,
        median_interval_ns: None,
    };
    let spread = |samples| {
        let cells = timing_cells(
            &[1],
            "0".into(),
            None,
            Some(stats(samples)),
            (None, None, false, false),
            Clock::Host,
            None,
        );
        cells[4].clone()
    };
    assert_eq!(spread(1), "1 sample");
    assert_eq!(spread(2), "7 ns..9 ns");
}

#[test]
fn a_ratio_reads_with_its_interval_and_an_unjudged_row_says_why() {
    let cells = |interval, too_few, regression| {
        timing_cells(
            &[1, 2, 3],
            "0".into(),
            None,
            None,
            (Some(1.5), interval, too_few, regression),
            Clock::Device,
            None,
        )
    };
    let judged = cells(Some((1.25, 1.75)), false, true);
    assert_eq!(
        (judged[5].as_str(), judged[6].as_str()),
        ("1.50x [1.25x..1.75x]", "SLOW")
    );
    // A row pooling three identical graphs names them as a run.
    assert_eq!(judged[0], "1-3");
    let few = cells(None, true, false);
    assert_eq!(
        (few[5].as_str(), few[6].as_str()),
        ("1.50x", "device, too few to judge")
    );
    // Past the ratio but not slow: the floor it grew under is the reason, said.
    let under = timing_cells(
        &[1],
        "0".into(),
        None,
        None,
        (Some(1.16), Some((1.15, 1.18)), false, false),
        Clock::Host,
        Some(NotSlow::TimingFloor { floor_ns: 100_000 }),
    );
    assert_eq!(under[6], "not slow: grew under the 100 µs floor");
    // Past the ratio but inside the replay's own run-to-run change: that change is said, so
    // that a 2.78x row the verdict leaves out does not read as an oversight.
    let within = timing_cells(
        &[1],
        "0".into(),
        None,
        None,
        (Some(2.78), Some((1.97, 3.32)), false, false),
        Clock::Device,
        Some(NotSlow::RunToRun { ratio: 2.1 }),
    );
    assert_eq!(
        within[6],
        "device, not slow: within the replay's own 2.10x run-to-run change"
    );
}

#[test]
fn a_divergence_reads_as_one_line() {
    let d = Divergence {
        runtime: 1,
        submission: 3,
        region: Some(1),
        region_label: Some("GPU Compute, native graph: hrx_sobel".into()),
        node: Some(2),
        use_index: Some(1),
        buffer: Some(12),
        range: Some((0, 307_200)),
        repeat: 0,
        repeats: 1,
        kind: DivergenceKind::Output {
            expected: 0xabc,
            replayed: 0xdef,
            max_abs_diff: None,
        },
        timing_dependent: None,
        show_runtime: false,
        of_repeats: 1,
    };
    assert_eq!(
        d.to_string(),
        "submission 3 region 1 (GPU Compute, native graph: hrx_sobel) node 2 use 1 (buffer 12) \
         bytes 0..307200: \
         digest 0x0000000000000def expected 0x0000000000000abc"
    );
}

/// A replay report of a one-fill trace on the software device (no GPU clocks there); one
/// recording for every call, so that a baseline of one judges another.
fn fill_report() -> Report {
    use hrx::{Placement, Runtime, RuntimeOptions, TraceDigests};
    use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
    static TRACE: std::sync::OnceLock<Trace> = std::sync::OnceLock::new();
    let trace = TRACE.get_or_init(|| {
        let sink = MemorySink::new();
        let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
        {
            let options = RuntimeOptions::sim()
                .environment(false)
                .trace_digests(TraceDigests::All)
                .recorder(recorder.clone());
            let runtime = Runtime::new(options).unwrap();
            let buffer = runtime.buffer(64, Placement::HostVisible).unwrap();
            let mut graph = runtime.graph();
            graph.fill(buffer.whole(), 7).unwrap();
            graph.prepare().unwrap().submit().unwrap().wait().unwrap();
        }
        recorder.close().unwrap();
        Trace::from_bytes(&sink.contents()).unwrap()
    });
    crate::replay(trace, &crate::ReplayOptions::default()).unwrap()
}

/// H200-like clocks: `sm_mhz` now, memory at its maximum, `limits` NVML's bits.
pub(crate) fn clocks(sm_mhz: u32, limits: u64, temperature_c: u32) -> ClockReading {
    ClockReading::Read(hrx::gpu::GpuClocks {
        sm_mhz,
        mem_mhz: 2619,
        max_sm_mhz: 1980,
        max_mem_mhz: 2619,
        limits: hrx::gpu::ClockLimits(limits),
        temperature_c: Some(temperature_c),
    })
}

const NO_NVML: &str = "NVML library libnvidia-ml.so.1 not found (libnvidia-ml.so.1: cannot open \
                       shared object file: No such file or directory); it comes with the NVIDIA driver";

#[test]
fn the_software_device_says_nothing_of_gpu_clocks() {
    let report = fill_report();
    assert_eq!(report.replay.backend, "sim");
    assert_eq!(report.replay.gpu_clocks, None);
    assert!(
        !report.to_text().contains("GPU clocks"),
        "{}",
        report.to_text()
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["replay"]["gpu_clocks"], serde_json::Value::Null);
}

#[test]
fn steady_clocks_read_as_one_line_beside_the_host_load() {
    let same = GpuClocksAround::new(clocks(1980, 0, 41), clocks(1980, 0, 41));
    assert_eq!(same.caveat, None);
    assert_eq!(
        same.to_text(),
        "GPU clocks: SM 1980/1980 MHz, memory 2619/2619 MHz, 41 °C before and after\n"
    );
    // Idle is no limit on work, and a 15 MHz boost step is no move.
    let steady = GpuClocksAround::new(clocks(1980, 0x1, 38), clocks(1965, 0, 52));
    assert_eq!(steady.caveat, None);
    assert_eq!(
        steady.to_text(),
        "GPU clocks: before SM 1980/1980 MHz, memory 2619/2619 MHz, 38 °C, limited by: idle; \
         after SM 1965/1980 MHz, memory 2619/2619 MHz, 52 °C\n"
    );
    let mut report = fill_report();
    report.replay.gpu_clocks = Some(steady);
    let text = report.to_text();
    let lines: Vec<&str> = text.lines().collect();
    let host = lines.iter().position(|l| l.starts_with("host: ")).unwrap();
    assert!(
        lines[host + 1].starts_with("GPU clocks: before SM 1980/1980 MHz"),
        "{text}"
    );
    assert!(!lines[host + 2].starts_with("GPU clocks"), "{text}");
}

#[test]
fn clocks_that_moved_or_were_limited_say_the_timings_may_reflect_it() {
    let moved = GpuClocksAround::new(clocks(1980, 0, 38), clocks(1755, 0x4, 61));
    assert_eq!(
        moved.caveat.as_deref(),
        Some("moved during the replay (SM 1980 -> 1755 MHz) and were limited by SW power cap")
    );
    assert_eq!(
        moved.to_text(),
        "GPU clocks: before SM 1980/1980 MHz, memory 2619/2619 MHz, 38 °C; \
         after SM 1755/1980 MHz, memory 2619/2619 MHz, 61 °C, limited by: SW power cap\n\
         GPU clocks moved during the replay (SM 1980 -> 1755 MHz) and were limited by SW power \
         cap: the timings may reflect it\n"
    );
    // Limited throughout, at steady clocks (a thermal slowdown beside idle).
    let limited = GpuClocksAround::new(clocks(1410, 0x41, 84), clocks(1410, 0x40, 85));
    assert_eq!(
        limited.caveat.as_deref(),
        Some("were limited by HW thermal slowdown")
    );
    // JSON: each reading tagged, the limits by name, the caveat.
    let mut report = fill_report();
    report.replay.gpu_clocks = Some(moved.clone());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let c = &json["replay"]["gpu_clocks"];
    assert_eq!(c["before"]["read"]["sm_mhz"], 1980);
    assert_eq!(c["after"]["read"]["sm_mhz"], 1755);
    assert_eq!(c["after"]["read"]["max_sm_mhz"], 1980);
    assert_eq!(c["after"]["read"]["mem_mhz"], 2619);
    assert_eq!(c["after"]["read"]["temperature_c"], 61);
    assert_eq!(
        c["after"]["read"]["limits"],
        serde_json::json!(["SW power cap"])
    );
    assert_eq!(c["caveat"], moved.caveat.clone().unwrap());
    let back: GpuClocksAround = serde_json::from_value(c.clone()).unwrap();
    assert_eq!(back, moved);
}

#[test]
fn clocks_not_read_say_why_in_one_line() {
    let none = GpuClocksAround::new(
        ClockReading::Unreadable(NO_NVML.into()),
        ClockReading::Unreadable(NO_NVML.into()),
    );
    assert_eq!(none.caveat, None);
    assert_eq!(none.to_text(), format!("GPU clocks: not read: {NO_NVML}\n"));
    let json = serde_json::to_value(&none).unwrap();
    assert_eq!(json["before"]["unreadable"], NO_NVML);
    // One reading failed: each side says its own.
    let half = GpuClocksAround::new(
        clocks(1980, 0, 40),
        ClockReading::Unreadable("nvmlDeviceGetClockInfo returned GPU_IS_LOST (15)".into()),
    );
    assert_eq!(half.caveat, None);
    assert_eq!(
        half.to_text(),
        "GPU clocks: before SM 1980/1980 MHz, memory 2619/2619 MHz, 40 °C; after not read \
         (nvmlDeviceGetClockInfo returned GPU_IS_LOST (15))\n"
    );
    let mut report = fill_report();
    report.replay.gpu_clocks = Some(none);
    assert!(
        report
            .to_text()
            .contains(&format!("\nGPU clocks: not read: {NO_NVML}\n")),
        "{}",
        report.to_text()
    );
}

#[test]
fn a_baseline_keeps_its_clocks_and_notes_when_a_replays_differ_by_more_than_5_percent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    let mut good = fill_report();
    good.replay.gpu_clocks = Some(GpuClocksAround::new(
        clocks(1980, 0, 40),
        clocks(1980, 0, 55),
    ));
    let saved = crate::Baseline::of(&good);
    saved.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"gpu_clocks\""), "{text}");
    let baseline = crate::Baseline::load(&path).unwrap();
    assert_eq!(baseline, saved);
    assert_eq!(baseline.gpu_clocks, good.replay.gpu_clocks);

    let options = crate::ReplayOptions::default();
    let clock_notes = |report: &Report| -> Vec<String> {
        (report.notes.iter())
            .filter(|n| n.contains("GPU's clocks"))
            .cloned()
            .collect()
    };
    // Within 5%: nothing said.
    let mut near = fill_report();
    near.replay.gpu_clocks = Some(GpuClocksAround::new(
        clocks(1965, 0, 41),
        clocks(1950, 0, 56),
    ));
    baseline.judge(&mut near, &options).unwrap();
    assert_eq!(clock_notes(&near), Vec::<String>::new());
    // The SM clock 11% lower after the repeats: said, with the figures.
    let mut slower = fill_report();
    slower.replay.gpu_clocks = Some(GpuClocksAround::new(
        clocks(1980, 0, 41),
        clocks(1755, 0x4, 70),
    ));
    baseline.judge(&mut slower, &options).unwrap();
    let notes = clock_notes(&slower);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("the GPU's clocks differ by more than 5% from those the baseline"),
        "{}",
        notes[0]
    );
    assert!(
        notes[0].contains("(baseline -> now: SM 1980 -> 1755 MHz after the repeats)"),
        "{}",
        notes[0]
    );
    // Clocks not read now: nothing to compare, nothing said.
    let mut unread = fill_report();
    unread.replay.gpu_clocks = Some(GpuClocksAround::new(
        ClockReading::Unreadable(NO_NVML.into()),
        ClockReading::Unreadable(NO_NVML.into()),
    ));
    baseline.judge(&mut unread, &options).unwrap();
    assert_eq!(clock_notes(&unread), Vec::<String>::new());
}

/// A baseline saved on a loaded host is said so each time it judges (its times are slower
/// than a quiet machine's: a slowdown judged against it can go unflagged), not only when it
/// was saved; one from a quiet host, or saved before the host was kept, says nothing.
#[test]
fn a_baseline_saved_on_a_loaded_host_says_so_when_it_judges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    let host_notes = |report: &Report| -> Vec<String> {
        (report.notes.iter())
            // The baseline's note only: the capture's own note on a loaded host depends on
            // this machine's load as the test runs.
            .filter(|n| n.starts_with("the baseline (") && n.contains("loaded host"))
            .cloned()
            .collect()
    };
    let options = crate::ReplayOptions::default();
    for (load, said) in [(3.0, true), (0.5, false)] {
        let mut saved_from = fill_report();
        saved_from.replay.host = crate::HostLoad {
            cpus: 2,
            load_before: Some(load),
            load_after: Some(1.25),
        };
        crate::Baseline::of(&saved_from).save(&path).unwrap();
        let baseline = crate::Baseline::load(&path).unwrap();
        assert_eq!(baseline.host, Some(saved_from.replay.host));
        let mut now = fill_report();
        baseline.judge(&mut now, &options).unwrap();
        let notes = host_notes(&now);
        if said {
            assert_eq!(notes.len(), 1, "{:?}", now.notes);
            assert!(
                notes[0].starts_with("the baseline (of a replay of ")
                    && notes[0].contains(
                        ") was saved on a loaded host, its load 3.00 (1.50 per CPU on 2 CPUs) \
                         before and 1.25 (0.62 per CPU on 2 CPUs) after:"
                    ),
                "{}",
                notes[0]
            );
        } else {
            assert_eq!(notes, Vec::<String>::new());
        }
    }
    // A baseline file from before the host was kept: loads, says nothing of it.
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("host");
    std::fs::write(&path, old.to_string()).unwrap();
    let old = crate::Baseline::load(&path).unwrap();
    assert_eq!(old.host, None);
    let mut now = fill_report();
    old.judge(&mut now, &options).unwrap();
    assert_eq!(host_notes(&now), Vec::<String>::new());
}

#[test]
fn a_baseline_without_clocks_round_trips_and_one_saved_before_them_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    let report = fill_report();
    let saved = crate::Baseline::of(&report);
    assert_eq!(saved.gpu_clocks, None);
    saved.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("gpu_clocks"), "{text}");
    assert_eq!(crate::Baseline::load(&path).unwrap(), saved);
    // A version 2 baseline file as written before the clocks were kept (no such field),
    // with the saved one's rows.
    let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
    old["backend"] = "cuda".into();
    old["device"] = "NVIDIA H200".into();
    std::fs::write(&path, old.to_string()).unwrap();
    let old = crate::Baseline::load(&path).unwrap();
    assert_eq!(
        (old.device.as_str(), &old.gpu_clocks),
        ("NVIDIA H200", &None)
    );
    // Judged against a replay with clocks: nothing to compare them with, nothing said.
    let mut now = fill_report();
    now.replay.backend = "cuda".into();
    now.replay.device = "NVIDIA H200".into();
    now.replay.gpu_clocks = Some(GpuClocksAround::new(
        clocks(1755, 0, 41),
        clocks(1755, 0, 41),
    ));
    old.judge(&mut now, &crate::ReplayOptions::default())
        .unwrap();
    assert!(
        !now.notes.iter().any(|n| n.contains("GPU's clocks")),
        "{:?}",
        now.notes
    );
}

/// A baseline that judges nothing (no rows, or none of this replay's) fails the gate, as
/// one of another recording does; a row of an unknown kind or a second row of one place
/// is refused when it is read (an empty baseline passed the gate, exit 0, with a note).
#[test]
fn a_baseline_that_judges_nothing_or_holds_odd_rows_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    let report = fill_report();
    crate::Baseline::of(&report).save(&path).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(!saved["rows"].as_array().unwrap().is_empty());
    let with_rows = |rows: serde_json::Value| {
        let mut v = saved.clone();
        v["rows"] = rows;
        std::fs::write(&path, v.to_string()).unwrap();
        crate::Baseline::load(&path)
    };
    let empty = with_rows(serde_json::json!([])).unwrap();
    let mut now = fill_report();
    let why = empty
        .judge(&mut now, &crate::ReplayOptions::default())
        .unwrap_err();
    assert!(why.contains("it judges nothing"), "{why}");
    let mut banana = saved["rows"].clone();
    banana[0]["kind"] = "banana".into();
    let Err(error) = with_rows(banana) else {
        panic!("a row of kind banana is refused")
    };
    assert!(error.to_string().contains("neither"), "{error}");
    let mut twice = saved["rows"].clone();
    let first = twice[0].clone();
    twice.as_array_mut().unwrap().push(first);
    let Err(error) = with_rows(twice) else {
        panic!("a second row of one place is refused")
    };
    assert!(
        error.to_string().contains("a second row of one place"),
        "{error}"
    );
    // Rows with too few samples to judge any (3, no interval) judge nothing either: the
    // gate passed with "4 rows too few to judge" (second break-it pass).
    let mut few = saved["rows"].clone();
    for row in few.as_array_mut().unwrap() {
        row["replayed"]["samples"] = 3.into();
        row["replayed"]["median_interval_ns"] = serde_json::Value::Null;
    }
    let few = with_rows(few).unwrap();
    let mut now = fill_report();
    // As `--baseline` judges: with a ratio (1.5 unless given).
    let gate = crate::ReplayOptions {
        max_slowdown: Some(1.5),
        ..Default::default()
    };
    let why = few.judge(&mut now, &gate).unwrap_err();
    assert!(why.contains("too few samples to judge"), "{why}");
    // The rows as saved judge.
    let whole = with_rows(saved["rows"].clone()).unwrap();
    let mut now = fill_report();
    whole
        .judge(&mut now, &crate::ReplayOptions::default())
        .unwrap();
}

/// A baseline's host load is a load average, 0 to the most tasks Linux counts: a
/// hand-edited one is refused as it is read, naming the file and the field, in one line
/// (1e308 was taken, and every note naming the baseline's load printed its 309 digits; a
/// negative load was taken too).
#[test]
fn a_baseline_whose_host_load_is_no_load_average_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    crate::Baseline::of(&fill_report()).save(&path).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let with_load = |field: &str, load: serde_json::Value| {
        let mut v = saved.clone();
        v["host"] = serde_json::json!({"cpus": 2, "load_before": 0.5, "load_after": 0.5});
        v["host"][field] = load;
        std::fs::write(&path, v.to_string()).unwrap();
        crate::Baseline::load(&path)
    };
    for (field, load, shown) in [
        ("load_before", serde_json::json!(1e308), "1e308"),
        ("load_after", serde_json::json!(-1.0), "-1.0"),
        ("load_after", serde_json::json!(4194305.0), "4194305.0"),
    ] {
        let Err(error) = with_load(field, load) else {
            panic!("host.{field} {shown} is refused")
        };
        let error = error.to_string();
        assert_eq!(
            error,
            format!(
                "baseline {}: host.{field} is {shown}, not a load average (one from 0 to \
                 4194304)",
                path.display()
            )
        );
    }
    // The edges, and a host whose loads are unknown, load.
    for (field, load) in [
        ("load_before", serde_json::json!(0.0)),
        ("load_after", serde_json::json!(4194304.0)),
        ("load_after", serde_json::Value::Null),
    ] {
        let loaded = with_load(field, load.clone());
        assert!(loaded.is_ok(), "{field} {load}: {:?}", loaded.err());
    }
}

/// A baseline row this replay has no row for judges nothing and is said: a baseline saved
/// with `--per-op`, judging a replay without it, lost its operation rows silently (a
/// break-it pass).
#[test]
fn baseline_rows_this_replay_lacks_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    crate::Baseline::of(&fill_report()).save(&path).unwrap();
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut op = saved["rows"][0].clone();
    op["kind"] = "op".into();
    saved["rows"].as_array_mut().unwrap().push(op);
    std::fs::write(&path, saved.to_string()).unwrap();
    let baseline = crate::Baseline::load(&path).unwrap();
    let mut now = fill_report();
    assert!(now.op_timing.is_empty(), "replayed without --per-op");
    baseline
        .judge(&mut now, &crate::ReplayOptions::default())
        .unwrap();
    let note = now
        .notes
        .iter()
        .find(|n| n.contains("of the baseline without a timing row"))
        .unwrap_or_else(|| panic!("no note: {:?}", now.notes));
    assert!(note.starts_with("1 row of the baseline"), "{note}");
    assert!(note.contains("replay with --per-op"), "{note}");
    assert!(!note.contains("  "), "one space between words: {note}");
}

#[test]
fn a_host_is_loaded_when_its_load_average_reaches_its_cpus() {
    let host = |cpus, before, after| crate::HostLoad {
        cpus,
        load_before: before,
        load_after: after,
    };
    assert!(!host(2, Some(0.5), Some(1.9)).loaded());
    assert!(host(2, Some(0.5), Some(2.0)).loaded());
    assert!(host(16, Some(17.0), None).loaded());
    assert!(
        !host(0, Some(9.0), Some(9.0)).loaded(),
        "CPUs unknown: not said"
    );
    assert!(!host(4, None, None).loaded());
}

/// A baseline judges a replay whose recording it cannot check (one side names none: a trace
/// whose session start is lost, a baseline saved from one) with a note, never silently (a
/// break-it pass: another recording's baseline passed a damaged trace with SAME).
#[test]
fn a_baseline_that_cannot_check_the_recording_says_so() {
    let options = crate::ReplayOptions::default();
    let saved_from = fill_report();
    assert!(
        saved_from.trace.recorded.is_some(),
        "the fixture names its recording"
    );
    let unchecked = |report: &Report| {
        (report.notes.iter())
            .filter(|n| n.starts_with("the baseline's recording could not be checked"))
            .count()
    };
    // Both sides name the recording: no note.
    let mut now = fill_report();
    crate::Baseline::of(&saved_from)
        .judge(&mut now, &options)
        .unwrap();
    assert_eq!(unchecked(&now), 0, "{:?}", now.notes);
    // The trace's session start lost.
    let mut now = fill_report();
    now.trace.recorded = None;
    crate::Baseline::of(&saved_from)
        .judge(&mut now, &options)
        .unwrap();
    assert_eq!(unchecked(&now), 1, "{:?}", now.notes);
    // A baseline saved from such a trace.
    let mut lost = fill_report();
    lost.trace.recorded = None;
    let mut now = fill_report();
    crate::Baseline::of(&lost)
        .judge(&mut now, &options)
        .unwrap();
    assert_eq!(unchecked(&now), 1, "{:?}", now.notes);
}

/// The replay's `host:` line writes each load as every verb does
/// (`hrx_analysis::units::host_load`: the load average and its value per CPU), not a raw
/// load beside a CPU count (a user read `load 5.10` here, `2.55 per CPU` in `stats`); an
/// unknown one reads `unknown`.
#[test]
fn the_host_line_gives_each_load_and_its_value_per_cpu() {
    let mut report = fill_report();
    report.replay.host = crate::HostLoad {
        cpus: 2,
        load_before: Some(4.96),
        load_after: None,
    };
    let text = report.to_text();
    let host = text.lines().find(|l| l.starts_with("host: ")).unwrap();
    assert_eq!(
        host,
        "host: load 4.96 (2.48 per CPU on 2 CPUs) before and unknown after (1-minute average): \
         loaded, host-side times may read slower than on a quiet machine"
    );
}

/// `median` ns over 20 samples, its median's interval 2% either side.
fn durations(median: u64) -> Durations {
    Durations {
        samples: 20,
        median_ns: median,
        min_ns: median * 9 / 10,
        p10_ns: median * 95 / 100,
        p90_ns: median * 105 / 100,
        p99_ns: median * 11 / 10,
        max_ns: median * 11 / 10,
        median_interval_ns: Some((median * 98 / 100, median * 102 / 100)),
    }
}

/// A replay report whose first region replayed in `median` ns (20 samples).
fn replayed_in(median: u64) -> Report {
    let mut report = fill_report();
    assert!(
        !report.timing.is_empty(),
        "the fill replay has a timing row"
    );
    report.timing[0].replayed = Some(durations(median));
    report
}

/// Replays added to a baseline each add a run: its rows keep every run's times, judge by
/// the middle run's, and say how far their medians lie apart; the file round-trips, and one
/// whose runs do not hold together is refused. A replay of another device does not join.
#[test]
fn a_baseline_of_several_runs_keeps_the_middle_run_and_how_far_their_medians_lie_apart() {
    let mut baseline = crate::Baseline::of(&replayed_in(1_000_000));
    assert_eq!((baseline.runs, baseline.rows[0].between_runs()), (1, 1.0));
    for median in [1_100_000, 950_000, 1_200_000] {
        baseline
            .add(crate::Baseline::of(&replayed_in(median)))
            .unwrap();
    }
    let row = &baseline.rows[0];
    assert_eq!(baseline.runs, 4);
    let medians: Vec<u64> = row.runs.iter().map(|d| d.median_ns).collect();
    assert_eq!(medians, [1_000_000, 1_100_000, 950_000, 1_200_000]);
    // The lower middle of 0.95, 1.0, 1.1 and 1.2 ms.
    assert_eq!(row.replayed.median_ns, 1_000_000);
    assert!((row.between_runs() - 120.0 / 95.0).abs() < 1e-9);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    baseline.save(&path).unwrap();
    assert_eq!(crate::Baseline::load(&path).unwrap(), baseline);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = saved.clone();
        edit(&mut v);
        std::fs::write(&path, v.to_string()).unwrap();
        crate::Baseline::load(&path).unwrap_err().to_string()
    };
    let why = refused(&|v| v["rows"][0]["replayed"]["median_ns"] = 990_000.into());
    assert!(why.contains("none of its runs'"), "{why}");
    let why = refused(&|v| v["runs"] = 3.into());
    assert!(why.contains("holds 4 runs of the baseline's 3"), "{why}");
    let why = refused(&|v| v["rows"][0]["runs"][2]["samples"] = 0.into());
    assert!(why.contains("run 3: no samples"), "{why}");

    let mut elsewhere = crate::Baseline::of(&replayed_in(1_000_000));
    elsewhere.device = "another device".into();
    let why = baseline.add(elsewhere).unwrap_err();
    assert!(why.contains("a baseline's runs are of one device"), "{why}");
    assert_eq!(baseline.runs, 4, "a run refused adds nothing");
}

/// A region slower than --max-slowdown against the capture, but within how far a
/// baseline's runs moved apart, is no regression (said in a note); past that spread it
/// stays one, and a baseline of one run judges as before.
#[test]
fn a_slowdown_within_how_far_a_baselines_runs_moved_is_no_regression() {
    let options = crate::ReplayOptions {
        max_slowdown: Some(1.1),
        ..Default::default()
    };
    // Replayed 1.25x of the capture, its interval [1.2, 1.3]: slow against the capture.
    let slow_now = || {
        let mut report = replayed_in(1_250_000);
        let t = &mut report.timing[0];
        t.captured = Some(durations(1_000_000));
        (t.ratio, t.interval, t.spread, t.regression) = (Some(1.25), Some((1.2, 1.3)), 1.0, true);
        report.summary.slow = 1;
        report
    };
    let one_run = crate::Baseline::of(&replayed_in(1_000_000));
    let mut report = slow_now();
    one_run.judge(&mut report, &options).unwrap();
    assert!(report.timing[0].regression);
    assert!(report.timing[0].baseline.unwrap().regression);
    assert_eq!((report.summary.slow, report.summary.baseline_slow), (1, 1));
    assert_eq!(report.verdict, Verdict::Regression);

    // Two runs 1.3x apart: the same replay is within them, against both references.
    let mut two_runs = one_run.clone();
    two_runs
        .add(crate::Baseline::of(&replayed_in(1_300_000)))
        .unwrap();
    let mut report = slow_now();
    two_runs.judge(&mut report, &options).unwrap();
    let b = report.timing[0].baseline.unwrap();
    assert_eq!((b.runs, b.regression), (2, false));
    assert!(!report.timing[0].regression);
    assert_eq!((report.summary.slow, report.summary.baseline_slow), (0, 0));
    assert_eq!(report.verdict, Verdict::Same);
    let note = (report.notes.iter())
        .find(|n| n.contains("not counted slow"))
        .expect("the cleared row is said");
    assert!(
        note.starts_with("1 row past --max-slowdown against the capture"),
        "{note}"
    );
    assert!(note.contains("the baseline's 2 runs"), "{note}");
    // Runs 1.3x apart under a gate of 1.1x: the weaker gate is said.
    let wide = (report.notes.iter())
        .find(|n| n.contains("further apart than --max-slowdown"))
        .expect("a floor past the ratio is said");
    assert!(wide.contains("in 1 row (widest 1.30x: "), "{wide}");
    assert!(
        report.to_text().contains("against the baseline of 2 runs"),
        "{}",
        report.to_text()
    );

    // Runs 1.15x apart: 1.2x is past them, still a regression against the capture.
    let mut close_runs = one_run.clone();
    close_runs
        .add(crate::Baseline::of(&replayed_in(1_150_000)))
        .unwrap();
    let mut report = slow_now();
    close_runs.judge(&mut report, &options).unwrap();
    assert!(report.timing[0].regression);
    assert_eq!(report.verdict, Verdict::Regression);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("further apart than")),
        "1.15x apart, past 1.1x: said"
    );
    // One run: no floor, nothing said.
    let mut report = slow_now();
    one_run.judge(&mut report, &options).unwrap();
    assert!(
        !report
            .notes
            .iter()
            .any(|n| n.contains("further apart than"))
    );
}

/// Replays adding to one baseline at once each add their run: the file is read and
/// rewritten under a lock (read before the replay, concurrent adds lost runs).
#[test]
fn concurrent_adds_to_one_baseline_keep_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    let run = crate::Baseline::of(&replayed_in(1_000_000));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..10 {
                    crate::Baseline::add_to(&path, run.clone()).unwrap();
                }
            });
        }
    });
    let saved = crate::Baseline::load(&path).unwrap();
    assert_eq!(saved.runs, 40);
    assert_eq!(saved.rows[0].runs.len(), 40);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["b.json"], "no partial or lock file left");
}

/// A run with too few samples to judge by (a replay cut short by `--until`, or of one
/// repeat) is kept among the runs but never becomes the one judged by: a baseline of runs
/// of 20 samples kept judging (the run of 6 made every later replay's row `too few to judge`
/// against it). Only where no run has enough is the middle taken among them all.
#[test]
fn a_run_too_short_to_judge_by_is_never_the_middle_run() {
    let short = |median: u64| {
        let mut report = replayed_in(median);
        report.timing[0].replayed = Some(Durations {
            samples: 6,
            median_interval_ns: None,
            ..durations(median)
        });
        crate::Baseline::of(&report)
    };
    let mut baseline = crate::Baseline::of(&replayed_in(1_000_000));
    baseline.add(short(900_000)).unwrap();
    let row = &baseline.rows[0];
    assert_eq!(row.runs.len(), 2);
    assert_eq!(
        (row.replayed.median_ns, row.replayed.samples),
        (1_000_000, 20)
    );
    baseline.add(short(800_000)).unwrap();
    assert_eq!(baseline.rows[0].replayed.median_ns, 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.json");
    baseline.save(&path).unwrap();
    assert_eq!(crate::Baseline::load(&path).unwrap(), baseline);

    let mut all_short = short(1_000_000);
    all_short.add(short(900_000)).unwrap();
    all_short.add(short(1_100_000)).unwrap();
    assert_eq!(all_short.rows[0].replayed.median_ns, 1_000_000);
}

/// A hand-edited baseline whose run count cannot grow refuses the run in a line, the
/// baseline unchanged (it panicked on the overflow, after the whole replay).
#[test]
fn a_baseline_of_runs_past_counting_takes_no_more() {
    let mut baseline = crate::Baseline::of(&replayed_in(1_000_000));
    baseline.runs = usize::MAX;
    let before = baseline.clone();
    let why = baseline
        .add(crate::Baseline::of(&replayed_in(1_000_000)))
        .unwrap_err();
    assert!(why.contains("no more can be counted"), "{why}");
    assert_eq!(baseline, before);
}

/// A run added on a loaded host (which widens how far the runs lie apart, the floor of every
/// later judgement) is said each time the baseline judges, as a loaded first run is; of
/// several loaded runs, the busiest one's load is quoted (the first loaded run's was, though
/// a later run was busier: a fresh user's pass).
#[test]
fn a_run_added_on_a_loaded_host_is_said_when_the_baseline_judges() {
    let host = |load: f64| {
        Some(crate::report::HostLoad {
            cpus: 2,
            load_before: Some(load),
            load_after: Some(load),
        })
    };
    let mut baseline = crate::Baseline::of(&replayed_in(1_000_000));
    baseline.host = host(0.1);
    let mut loaded = crate::Baseline::of(&replayed_in(2_000_000));
    loaded.host = host(3.5);
    baseline.add(loaded).unwrap();
    let mut quiet = crate::Baseline::of(&replayed_in(1_000_000));
    quiet.host = host(0.2);
    baseline.add(quiet).unwrap();
    assert_eq!(baseline.host, host(3.5));
    // A busier run replaces it; a loaded but less busy one does not.
    let mut busier = crate::Baseline::of(&replayed_in(1_000_000));
    busier.host = host(5.17);
    baseline.add(busier).unwrap();
    let mut less = crate::Baseline::of(&replayed_in(1_000_000));
    less.host = host(4.0);
    baseline.add(less).unwrap();
    assert_eq!(baseline.host, host(5.17));
    let mut report = replayed_in(1_000_000);
    let options = crate::ReplayOptions {
        max_slowdown: Some(1.5),
        ..Default::default()
    };
    baseline.judge(&mut report, &options).unwrap();
    assert!(
        report.notes.iter().any(|n| n.contains(
            "saved on a loaded host, the busiest of its 5 runs at load 5.17 (2.58 per CPU on \
             2 CPUs) before and 5.17 (2.58 per CPU on 2 CPUs) after:"
        )),
        "{:?}",
        report.notes
    );
}

/// A baseline named by a symbolic link is written through it: the link stays, and the
/// baseline it names holds the runs added (the link was replaced by a new file, the
/// baseline named left at its earlier runs).
#[cfg(unix)]
#[test]
fn a_baseline_behind_a_symbolic_link_is_added_to_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let (real, link) = (dir.path().join("real.json"), dir.path().join("link.json"));
    crate::Baseline::of(&replayed_in(1_000_000))
        .save(&real)
        .unwrap();
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let added =
        crate::Baseline::add_to(&link, crate::Baseline::of(&replayed_in(1_100_000))).unwrap();
    assert_eq!(added.runs, 2);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(crate::Baseline::load(&real).unwrap(), added);
    crate::Baseline::of(&replayed_in(1_000_000))
        .save(&link)
        .unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(crate::Baseline::load(&real).unwrap().runs, 1);
}

/// A baseline slower than the capture past --max-slowdown is said when it judges, where its
/// recorded load per CPU was 1 or more above the capture's (saved on a busier machine, it
/// lets a slowdown through unflagged); one as fast, or as slow at the capture's load (copies
/// moving between processes on one quiet machine: the note came on every run, telling the
/// user to save it again on a quiet machine; a fresh-user pass), says nothing.
#[test]
fn a_baseline_slower_than_the_capture_is_said() {
    let options = crate::ReplayOptions {
        max_slowdown: Some(1.5),
        ..Default::default()
    };
    let captured_in = |median: u64| {
        let mut report = replayed_in(median);
        report.timing[0].captured = Some(durations(1_000_000));
        report.trace.host_load_per_cpu = Some(0.2);
        report
    };
    // A baseline of `median` saved at a load average of `load` on 2 CPUs.
    let saved = |median: u64, load: f64| {
        let mut report = captured_in(median);
        report.replay.host = crate::HostLoad {
            cpus: 2,
            load_before: Some(load),
            load_after: Some(load),
        };
        crate::Baseline::of(&report)
    };
    let said = |baseline: &crate::Baseline| {
        let mut now = captured_in(1_000_000);
        baseline.judge(&mut now, &options).unwrap();
        now.notes
            .iter()
            .find(|n| n.contains("slower than the capture"))
            .cloned()
    };
    let note = said(&saved(1_600_000, 3.2)).expect("a busier baseline 1.6x the capture is said");
    assert!(
        note.contains(
            "past --max-slowdown 1.50x in 1 region row (widest 1.60x: GPU Compute, native \
             graph: fill), and was saved on a busier machine (load 1.60 per CPU against the \
             capture's 0.20 per CPU)"
        ),
        "{note}"
    );
    // At the capture's load, what is so and no cause (a note naming a busier machine on
    // every run of one quiet machine read as wrong: a fresh-user pass).
    let note = said(&saved(1_600_000, 0.6)).expect("a baseline 1.6x the capture is said");
    assert!(
        note.ends_with(
            "(widest 1.60x: GPU Compute, native graph: fill): a slowdown judged against the \
             baseline alone can go unflagged there (the capture judges those rows too)"
        ),
        "{note}"
    );
    assert_eq!(said(&saved(1_100_000, 3.2)), None, "as fast");
    // Slower by less than the timing floor (100 µs on host time): nothing is judged either
    // way, so nothing can go unflagged (a 0.7 µs region's 1.4 µs baseline was said).
    let short = |median: u64| {
        let mut report = replayed_in(median);
        report.timing[0].captured = Some(durations(1_000));
        report.trace.host_load_per_cpu = Some(0.2);
        report.replay.host.cpus = 2;
        report.replay.host.load_before = Some(3.2);
        report
    };
    let mut now = short(1_000);
    crate::Baseline::of(&short(2_000))
        .judge(&mut now, &options)
        .unwrap();
    assert!(
        !now.notes
            .iter()
            .any(|n| n.contains("slower than the capture")),
        "{:?}",
        now.notes
    );
}

/// A baseline is busier than the capture where its highest recorded load per CPU is 1 or
/// more above the capture's highest, the step from quiet to loaded; unknown either side,
/// it is not.
#[test]
fn a_baseline_is_busier_only_by_a_whole_load_per_cpu() {
    use crate::baseline::busier_than_capture;
    let host = |cpus, before, after| crate::HostLoad {
        cpus,
        load_before: before,
        load_after: after,
    };
    assert_eq!(
        busier_than_capture(Some(host(2, Some(0.4), Some(3.2))), Some(0.2)),
        Some((1.6, 0.2))
    );
    assert_eq!(
        busier_than_capture(Some(host(4, None, Some(10.0))), Some(1.2)),
        Some((2.5, 1.2))
    );
    // One machine minutes apart: 0.35-0.6 per CPU against 0.07 (the pass's loads).
    assert_eq!(
        busier_than_capture(Some(host(2, Some(0.7), Some(1.2))), Some(0.07)),
        None
    );
    assert_eq!(
        busier_than_capture(Some(host(2, Some(2.4), Some(2.4))), Some(0.9)),
        None
    );
    assert_eq!(
        busier_than_capture(Some(host(2, Some(4.0), None)), None),
        None
    );
    assert_eq!(busier_than_capture(None, Some(0.1)), None);
    assert_eq!(
        busier_than_capture(Some(host(0, Some(4.0), None)), Some(0.1)),
        None
    );
}

/// The baseline table's header gives each row's floor as its own: the typical row's and the
/// widest, named, so that one noisy row's spread does not read as every row's.
#[test]
fn a_baselines_header_names_its_widest_floor_and_the_typical_one() {
    let mut report = replayed_in(1_000_000);
    let first = report.timing[0].clone();
    report.timing.clear();
    for (label, between_runs) in [
        ("GPU Compute, native graph: hrx_fill", 1.02),
        ("GPU Download, copy batch: 1 download", 1.38),
        ("NPU, NPU run: hrx_npu_threshold", 1.04),
    ] {
        let mut row = first.clone();
        row.label = label.into();
        row.baseline = Some(crate::BaselineMatch {
            baseline: durations(1_000_000),
            ratio: Some(1.0),
            interval: Some((0.98, 1.02)),
            regression: false,
            too_few: false,
            runs: 5,
            between_runs,
            not_slow: None,
        });
        report.timing.push(row);
    }
    let text = report.to_text();
    let header = text
        .lines()
        .find(|l| l.starts_with("against the baseline of 5 runs"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        header.contains(&format!(
            "each row's floor how far its runs' medians lay apart: {} at the median row, at most {} (GPU Download, copy batch: 1 download)",
            hrx_analysis::units::ratio(1.04),
            hrx_analysis::units::ratio(1.38)
        )),
        "{header}"
    );
}

/// A row against the baseline whose interval lies wholly past --max-slowdown but which a
/// rule cleared says which at the row, with the figure that decided, as the capture's rows
/// do; and JSON carries it (`not_slow`) and the replay's run-to-run change under a clear
/// name (`run_to_run`) beside its older one (`spread`). A fresh user's doubled kernel read
/// `3.45x [2.06x..4.94x]` at 1.5, not SLOW, exit 0, and nothing said why.
#[test]
fn a_row_past_the_max_slowdown_a_rule_cleared_against_the_baseline_says_why() {
    let options = crate::ReplayOptions {
        max_slowdown: Some(1.5),
        ..Default::default()
    };
    let mark = |report: &Report| {
        let text = report.to_text();
        let table = text
            .split("\nagainst the baseline")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"))
            .to_string();
        let row = table.lines().nth(2).unwrap_or_else(|| panic!("{text}"));
        row.to_string()
    };
    // Replayed 2x the baseline's median, its interval about [1.92x..2.08x], past 1.5; the
    // replay's own halves 2.38x apart.
    let one_run = crate::Baseline::of(&replayed_in(1_000_000));
    let mut report = replayed_in(2_000_000);
    report.timing[0].spread = 2.378;
    one_run.judge(&mut report, &options).unwrap();
    let b = report.timing[0].baseline.unwrap();
    assert!(!b.regression && b.interval.unwrap().0 > 1.5, "{b:?}");
    assert_eq!(b.not_slow, Some(NotSlow::RunToRun { ratio: 2.378 }));
    let row = mark(&report);
    assert!(
        row.contains("not slow: within the replay's own 2.38x run-to-run change"),
        "{row}"
    );
    let json = serde_json::to_value(&report).unwrap();
    let t = &json["timing"][0];
    assert_eq!(t["run_to_run"], 2.378, "{t}");
    assert_eq!(t["spread"], 2.378, "the older name stays: {t}");
    assert_eq!(
        t["baseline"]["not_slow"],
        serde_json::json!({"rule": "run_to_run", "ratio": 2.378}),
        "{t}"
    );

    // A baseline whose runs lay 2.2x apart: its floor cleared it.
    let mut two_runs = one_run.clone();
    two_runs
        .add(crate::Baseline::of(&replayed_in(2_200_000)))
        .unwrap();
    let mut report = replayed_in(2_000_000);
    two_runs.judge(&mut report, &options).unwrap();
    let b = report.timing[0].baseline.unwrap();
    assert_eq!(
        b.not_slow,
        Some(NotSlow::BaselineRuns { ratio: 2.2 }),
        "{b:?}"
    );
    let row = mark(&report);
    assert!(
        row.contains("not slow: within the 2.20x the baseline's runs lay apart"),
        "{row}"
    );

    // 100 ns to 200 ns: past 1.5, but grown under every clock's floor.
    let mut report = replayed_in(200);
    crate::Baseline::of(&replayed_in(100))
        .judge(&mut report, &options)
        .unwrap();
    let b = report.timing[0].baseline.unwrap();
    assert!(
        matches!(b.not_slow, Some(NotSlow::TimingFloor { .. })),
        "{b:?}"
    );
    assert!(
        mark(&report).contains("not slow: grew under the "),
        "{}",
        mark(&report)
    );

    // Slow, and not past the maximum: no reason.
    let mut report = replayed_in(2_000_000);
    one_run.judge(&mut report, &options).unwrap();
    let b = report.timing[0].baseline.unwrap();
    assert!(b.regression && b.not_slow.is_none(), "{b:?}");
    assert!(mark(&report).contains("SLOW"));
    let mut report = replayed_in(1_000_000);
    one_run.judge(&mut report, &options).unwrap();
    assert_eq!(report.timing[0].baseline.unwrap().not_slow, None);
}

/// A row slow against the capture that a baseline's runs' floor cleared says so at the
/// row as well as in the note.
#[test]
fn a_capture_row_a_baselines_floor_cleared_says_so_at_the_row() {
    let options = crate::ReplayOptions {
        max_slowdown: Some(1.1),
        ..Default::default()
    };
    let mut report = replayed_in(1_250_000);
    let t = &mut report.timing[0];
    t.captured = Some(durations(1_000_000));
    (t.ratio, t.interval, t.spread, t.regression) = (Some(1.25), Some((1.2, 1.3)), 1.0, true);
    report.summary.slow = 1;
    let mut two_runs = crate::Baseline::of(&replayed_in(1_000_000));
    two_runs
        .add(crate::Baseline::of(&replayed_in(1_300_000)))
        .unwrap();
    two_runs.judge(&mut report, &options).unwrap();
    assert_eq!(
        report.timing[0].not_slow,
        Some(NotSlow::BaselineRuns { ratio: 1.3 })
    );
    let text = report.to_text();
    assert!(
        text.contains("not slow: within the 1.30x the baseline's runs lay apart"),
        "{text}"
    );
}

/// The opening `cannot be exact` line lists the kinds lost largest first, as every other
/// verb does (it listed them by name: `RegionDone` before `RegionStarted` where the latter
/// lost more; a fresh user's pass, session 60).
#[test]
fn lost_kinds_open_the_report_largest_first() {
    let mut report = fill_report();
    report.trace.records_lost = 9;
    report.trace.records_lost_by_kind = [("RegionDone", 2), ("RegionStarted", 6), ("Submit", 1)]
        .into_iter()
        .map(|(kind, n)| (kind.to_owned(), n))
        .collect();
    let text = report.to_text();
    assert!(
        text.starts_with(
            "cannot be exact: 9 records lost while recording (RegionStarted 6, RegionDone 2, \
             Submit 1)"
        ),
        "{text}"
    );
}

/// A timing table of a large graph lists its SLOW rows and its longest, up to
/// `LISTED_ROWS`, and counts the rest; a small one lists every row.
#[test]
fn a_large_timing_table_lists_the_slow_rows_and_the_longest_and_counts_the_rest() {
    use super::text::LISTED_ROWS;
    let mut report = fill_report();
    let first = report.timing[0].clone();
    let region_rows = |text: &str| -> Vec<u32> {
        let table = text
            .split("\nregion timing")
            .nth(1)
            .expect("a timing table");
        (table.lines().skip(2))
            .take_while(|line| line.starts_with("  ") && !line.contains(" more region"))
            .map(|line| line.split_whitespace().nth(1).unwrap().parse().unwrap())
            .collect()
    };
    // Up to the bound: every row.
    report.timing = (0..LISTED_ROWS as u32)
        .map(|region| {
            let mut row = first.clone();
            row.region = region;
            row
        })
        .collect();
    let text = report.to_text();
    assert_eq!(region_rows(&text).len(), LISTED_ROWS, "{text}");
    assert!(!text.contains("more regions"), "{text}");
    // 1,000 rows: region r took r µs; two short ones are SLOW.
    report.timing = (0..1000u32)
        .map(|region| {
            let mut row = first.clone();
            row.region = region;
            row.captured = Some(durations(1_000 * u64::from(region + 1)));
            row.regression = region == 3 || region == 7;
            row
        })
        .collect();
    let text = report.to_text();
    let listed = region_rows(&text);
    let mut expected: Vec<u32> = vec![3, 7];
    expected.extend(1000 - LISTED_ROWS as u32 + 2..1000);
    assert_eq!(listed, expected, "{text}");
    assert!(
        text.contains(&format!(
            "  ... {} more regions (listed: {LISTED_ROWS}, the SLOW ones first, then the longest",
            1000 - LISTED_ROWS
        )),
        "{text}"
    );
    // One left out reads in the singular.
    report.timing.truncate(LISTED_ROWS + 1);
    let text = report.to_text();
    assert!(text.contains("  ... 1 more region (listed: "), "{text}");
    report.timing = (0..1000u32)
        .map(|region| {
            let mut row = first.clone();
            row.region = region;
            row
        })
        .collect();
    // SLOW rows past the bound are counted as such.
    for row in &mut report.timing {
        row.regression = true;
    }
    let text = report.to_text();
    assert!(
        text.contains(&format!(
            "{} more regions, {} of them SLOW",
            1000 - LISTED_ROWS,
            1000 - LISTED_ROWS
        )),
        "{text}"
    );
}
