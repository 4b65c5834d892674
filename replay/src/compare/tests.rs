//! One pair of items, one verdict: a captured trace against a second trace of the same run,
//! read as its replay (the records a replay runtime writes, under the capture's ids), judged
//! by replay's comparison (plan, read-back, [`report`]) and by `diff`'s passes over the same
//! two traces (`hrx_analysis::diff`: profiles, the streamed match, and the engine's rules
//! and verdict). Region times are set, not measured: no wall-clock bound.

use super::{RuntimeRuns, report};
use crate::execute::ChunkRun;
use crate::options::ReplayOptions;
use crate::report::Verdict;
use hrx::{Runtime, RuntimeOptions, TraceDigests};
use hrx_analysis::diff;
use hrx_capture::schema::{Record, RegionIndex, Status, SubmissionIndex};
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

/// Six small frames through the pipeline, one in flight (one prepared graph submitted six
/// times), every output digested.
fn captured() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        let sink = MemorySink::new();
        let recorder =
            Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
        {
            let options = RuntimeOptions::sim()
                .trace_digests(TraceDigests::All)
                .recorder(recorder.clone());
            let runtime = Runtime::new(options).expect("runtime");
            let pipeline_options = PipelineOptions {
                frames_in_flight: 1,
                ..PipelineOptions::default()
            };
            let mut pipeline = Pipeline::new(&runtime, 24, 16, pipeline_options).expect("pipeline");
            // 12 a region: enough for the timing rule's intervals (7 a side at least).
            let frames = (0..12).map(|seed| frame(24, 16, seed));
            pipeline.run(frames, |_, _| {}).expect("run");
        }
        recorder.close().expect("close");
        Trace::from_bytes(&sink.contents()).expect("read back")
    })
}

/// A small frame of one grey level per seed.
fn frame(width: usize, height: usize, seed: u32) -> Frame {
    Frame {
        width,
        height,
        rgb: vec![(seed * 40) as u8; width * height * 3],
    }
}

/// The prepared graph (id) of each submission.
fn prepared_of(trace: &Trace) -> HashMap<SubmissionIndex, u64> {
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some((s.submission, s.prepared.0)),
            _ => None,
        })
        .collect()
}

/// The region timed most often (whose label no other region has): (prepared id, region).
fn timed_region(trace: &Trace) -> (u64, u32) {
    let prepared = prepared_of(trace);
    let mut counts: HashMap<(u64, u32), usize> = HashMap::new();
    for r in &trace.records {
        if let Record::RegionTiming(t) = r {
            *counts
                .entry((prepared[&t.submission], t.region.0))
                .or_default() += 1;
        }
    }
    let profile = diff::profile_records(&trace.records);
    let label_count = |label: &str| profile.regions.values().filter(|(l, _)| l == label).count();
    let mut regions: Vec<_> = counts.into_iter().collect();
    regions.sort_by_key(|&(key, n)| (std::cmp::Reverse(n), key));
    regions
        .into_iter()
        .filter(|&(_, n)| n >= 3)
        .map(|(key, _)| key)
        .find(|&(prepared, region)| {
            let label = region_label(trace, prepared, region);
            label_count(&label) == 1 && profile.kernels.contains_key(&label)
        })
        .expect("a region of its own label")
}

/// `diff`'s label of a region (its kernel's name).
fn region_label(trace: &Trace, prepared: u64, region: u32) -> String {
    let profile = diff::profile_records(&trace.records);
    let ranks = hrx_analysis::matching::ranks(trace.records.iter().filter_map(|r| match r {
        Record::Prepared(p) => Some((p.runtime.0, p.prepared.0)),
        _ => None,
    }));
    let runtime = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Prepared(p) if p.prepared.0 == prepared => Some(p.runtime.0),
            _ => None,
        })
        .expect("prepared");
    let (r, p) = ranks[&(runtime, prepared)];
    let key = hrx_analysis::matching::RegionKey {
        runtime: r,
        prepared: p,
        region,
    };
    profile.regions[&key].0.clone()
}

/// `trace` with the region's timings taking `durations` (µs, cycled; host clock only) and
/// `edit` applied to every record.
fn with_times(
    trace: &Trace,
    (prepared, region): (u64, u32),
    durations: &[u64],
    edit: impl Fn(&mut Record),
) -> Trace {
    let of = prepared_of(trace);
    let mut out = trace.clone();
    let mut n = 0;
    for r in &mut out.records {
        if let Record::RegionTiming(t) = r
            && of[&t.submission] == prepared
            && t.region == RegionIndex(region)
        {
            t.end_ns = t.start_ns + durations[n % durations.len()] * 1_000;
            t.device = None;
            n += 1;
        }
        edit(r);
    }
    // Region times are what replay judges: without operation timings `diff`'s kernels are
    // region labels too, so both judge the same pair of items (with them, `diff` pairs
    // kernels by their operations' own times, which these edits do not set).
    out.records.retain(|r| !matches!(r, Record::OpTiming(_)));
    out
}

/// Replay's report of `replayed` read as `captured`'s replay.
fn replay_report(captured: &Trace, replayed: &Trace, options: &ReplayOptions) -> crate::Report {
    let plan = crate::plan::plan(captured, None).expect("plan");
    let statuses: HashMap<SubmissionIndex, _> = replayed
        .records
        .iter()
        .filter_map(|r| match r {
            Record::SubmissionDone(d) => Some((d.submission, crate::report::outcome_of(&d.status))),
            _ => None,
        })
        .collect();
    let runs: Vec<RuntimeRuns> = plan
        .runtimes
        .iter()
        .map(|rp| RuntimeRuns {
            repeats: vec![
                ChunkRun::of_records(replayed.records.clone(), statuses.clone(), &rp.backend)
                    .observe(rp),
            ],
            op_times: HashMap::new(),
            replay_fault: None,
        })
        .collect();
    report(
        &plan,
        &runs,
        options,
        None,
        Vec::new(),
        &mut Default::default(),
        None,
    )
}

/// `diff`'s judgement of the pair (`hrx_analysis::diff::compare`, what `hrx-trace diff`
/// reports): whether the kernel `label` is slow, and the verdict.
fn diff_judgement(base: &Trace, new: &Trace, label: &str, max_slowdown: f64) -> (bool, Verdict) {
    let b = diff::profile_records(&base.records);
    let mut n = diff::profile_records(&new.records);
    diff::align(&b, &mut n);
    let records =
        |t: &Trace| -> diff::Records<'_> { Box::new(t.records.clone().into_iter().map(Ok)) };
    let m = diff::match_streams((&b, records(base)), (&n, records(new))).expect("match");
    let c = diff::compare(&b, &n, &m, max_slowdown);
    let kernel = c
        .kernels
        .iter()
        .find(|k| k.name == label)
        .expect("the kernel");
    (kernel.slow, c.verdict)
}

#[test]
fn diff_and_replay_give_one_pair_of_items_one_verdict() {
    let captured = captured();
    let region = timed_region(captured);
    let label = region_label(captured, region.0, region.1);
    // `diff`'s floor, so that both judge by the same rule with the same numbers.
    let options = ReplayOptions::default()
        .max_slowdown(2.0)
        .timing_floor(Duration::from_nanos(diff::NOISE_FLOOR_NS));
    let first_digest = captured
        .records
        .iter()
        .find_map(|r| match r {
            Record::OutputDigest(d) => Some((d.submission, d.buffer, d.start)),
            _ => None,
        })
        .expect("a digest");
    let last_done = captured
        .records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::SubmissionDone(d) => Some(d.submission),
            _ => None,
        })
        .expect("a submission");
    let none = |_: &mut Record| {};
    // (what, base µs, new µs, edit of the new trace, slow, verdict)
    type Edit = Box<dyn Fn(&mut Record)>;
    type Case<'a> = (&'a str, &'a [u64], &'a [u64], Edit, bool, Verdict);
    let cases: Vec<Case<'_>> = vec![
        (
            "unchanged",
            &[100],
            &[100],
            Box::new(none),
            false,
            Verdict::Same,
        ),
        (
            "4x slower",
            &[100],
            &[400],
            Box::new(none),
            true,
            Verdict::Regression,
        ),
        (
            "1.5x slower",
            &[100],
            &[150],
            Box::new(none),
            false,
            Verdict::Same,
        ),
        // Past the ratio at the medians, but the base's median is uncertain (a third of its
        // runs take 900 µs): the ratio's interval reaches below 2x.
        (
            "within the spread",
            &[100, 100, 900],
            &[300],
            Box::new(none),
            false,
            Verdict::Same,
        ),
        // An even count: the median is the lower middle value on both sides (a whole
        // replay took the mean of the two, 250 µs, and called it slow).
        (
            "even count",
            &[100, 100],
            &[100, 400],
            Box::new(none),
            false,
            Verdict::Same,
        ),
        (
            "a digest differs",
            &[100],
            &[100],
            Box::new(move |r: &mut Record| {
                if let Record::OutputDigest(d) = r
                    && (d.submission, d.buffer, d.start) == first_digest
                {
                    d.xxh3 ^= 1;
                }
            }),
            false,
            Verdict::Regression,
        ),
        (
            "an outcome changed",
            &[100],
            &[100],
            Box::new(move |r: &mut Record| {
                if let Record::SubmissionDone(d) = r
                    && d.submission == last_done
                {
                    d.status = Status::Failed {
                        error: "injected".into(),
                    };
                }
            }),
            false,
            Verdict::Regression,
        ),
    ];
    for (what, base_us, new_us, edit, slow, verdict) in cases {
        let base = with_times(captured, region, base_us, none);
        let new = with_times(captured, region, new_us, edit);
        let replayed = replay_report(&base, &new, &options);
        let row = replayed
            .timing
            .iter()
            .find(|t| t.graph == region.0 && t.region == region.1)
            .expect("the region's row");
        let (diff_slow, diff_verdict) = diff_judgement(&base, &new, &label, 2.0);
        assert_eq!(
            (row.regression, diff_slow),
            (slow, slow),
            "{what}: replay {row:?}"
        );
        assert_eq!(
            (replayed.verdict, diff_verdict),
            (verdict, verdict),
            "{what}: replay {:?} {:?}",
            replayed.divergences,
            replayed.timing_dependent
        );
    }
}

/// `diff`'s second pass over the two traces (the streamed match of outputs and outcomes).
fn diff_matched(base: &Trace, new: &Trace) -> diff::Matched {
    let b = diff::profile_records(&base.records);
    let mut n = diff::profile_records(&new.records);
    diff::align(&b, &mut n);
    let records =
        |t: &Trace| -> diff::Records<'_> { Box::new(t.records.clone().into_iter().map(Ok)) };
    diff::match_streams((&b, records(base)), (&n, records(new))).expect("match")
}

#[test]
fn replay_and_diff_name_an_output_by_one_key() {
    let captured = captured();
    // Every third digest differs in the replay.
    let mut n = 0;
    let mut replayed = captured.clone();
    for r in &mut replayed.records {
        if let Record::OutputDigest(d) = r {
            if n % 3 == 0 {
                d.xxh3 ^= 1;
            }
            n += 1;
        }
    }
    let report = replay_report(captured, &replayed, &ReplayOptions::default());
    let m = diff_matched(captured, &replayed);
    assert!(m.by_graph);
    // The same outputs compared, the same ones differing, under the same keys.
    let differing: Vec<diff::OutputKey> = report
        .outputs
        .iter()
        .filter(|o| o.result == crate::OutputResult::Differs)
        .map(|o| o.key)
        .collect();
    let diff_differing: Vec<diff::OutputKey> = m.differing.iter().map(|d| d.key).collect();
    assert!(!differing.is_empty());
    assert_eq!(differing, diff_differing);
    assert_eq!(
        report.summary.outputs_compared as u64,
        m.identical + m.differing.len() as u64
    );
    // Each named by its place as diff names it: the operation and use writing it.
    for o in &report.outputs {
        let (runtime, _, nth, place, start, end) = o.key;
        assert_eq!((runtime, nth, start, end), (0, o.nth, o.start, o.end));
        match place {
            diff::Place::Use(node, use_index)
            | diff::Place::Op {
                node,
                use_: use_index,
                ..
            } => {
                assert_eq!((o.node, o.use_index), (Some(node), Some(use_index)));
            }
            diff::Place::Buffer(buffer) => {
                assert_eq!((o.node, o.use_index, o.buffer), (None, None, buffer));
            }
        }
    }
    let first = report.first_divergence.as_ref().expect("a divergence");
    let text = first.to_string();
    assert!(
        text.contains(&format!(
            " node {} use {} (buffer {})",
            first.node.expect("a node"),
            first.use_index.expect("a use"),
            first.buffer.expect("a buffer")
        )),
        "{text}"
    );
}

/// Twelve small frames through the pipeline with three in flight: three identical prepared
/// graphs submitted in turn, four times each; with `other`, twelve more through a second
/// pipeline of a larger frame size in the same runtime (three more graphs, identical among
/// themselves, not to the first three).
fn in_flight(other: bool) -> Trace {
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    {
        let options = RuntimeOptions::sim().recorder(recorder.clone());
        let runtime = Runtime::new(options).expect("runtime");
        let sizes: &[(usize, usize)] = if other {
            &[(24, 16), (32, 16)]
        } else {
            &[(24, 16)]
        };
        for &(width, height) in sizes {
            let pipeline_options = PipelineOptions {
                frames_in_flight: 3,
                ..PipelineOptions::default()
            };
            let mut pipeline =
                Pipeline::new(&runtime, width, height, pipeline_options).expect("pipeline");
            let frames = (0..12).map(|seed| frame(width, height, seed));
            pipeline.run(frames, |_, _| {}).expect("run");
        }
    }
    recorder.close().expect("close");
    Trace::from_bytes(&sink.contents()).expect("read back")
}

/// `trace` with region `region` of every prepared graph taking `durations` (µs, cycled;
/// host clock only), without operation timings (see [`with_times`]).
fn with_region_times(trace: &Trace, region: u32, durations: &[u64]) -> Trace {
    let mut out = trace.clone();
    let mut n = 0;
    for r in &mut out.records {
        if let Record::RegionTiming(t) = r
            && t.region == RegionIndex(region)
        {
            t.end_ns = t.start_ns + durations[n % durations.len()] * 1_000;
            t.device = None;
            n += 1;
        }
    }
    out.records.retain(|r| !matches!(r, Record::OpTiming(_)));
    out
}

/// The prepared graphs of `trace`, by id.
fn prepared_ids(trace: &Trace) -> Vec<u64> {
    let mut ids: Vec<u64> = (trace.records.iter())
        .filter_map(|r| match r {
            Record::Prepared(p) => Some(p.prepared.0),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// Twelve frames over three identical graphs are one row of twelve samples a side, judged
/// (each graph's four alone are too few): slow at 4x, not at 1x; `diff` judges the same
/// pair of items alike and pools its region times by the same graphs. Times are set, not
/// measured.
#[test]
fn three_identical_graphs_pool_into_one_judged_row_of_every_frame() {
    let trace = in_flight(false);
    let graphs = prepared_ids(&trace);
    assert_eq!(graphs.len(), 3);
    // The compute region (1), labelled as `diff` labels it.
    let label = region_label(&trace, graphs[0], 1);
    let options = ReplayOptions::default()
        .max_slowdown(2.0)
        .timing_floor(Duration::from_nanos(diff::NOISE_FLOOR_NS));
    let base = with_region_times(&trace, 1, &[100]);
    for (new_us, slow, verdict) in [
        (100, false, Verdict::Same),
        (400, true, Verdict::Regression),
    ] {
        let new = with_region_times(&trace, 1, &[new_us]);
        let report = replay_report(&base, &new, &options);
        // Four regions, each one row over the three graphs.
        assert_eq!(report.timing.len(), 4, "{:?}", report.timing);
        assert!(report.timing.iter().all(|t| t.graphs == graphs));
        let row = (report.timing.iter())
            .find(|t| t.region == 1)
            .expect("the compute row");
        assert_eq!(row.graph, graphs[0]);
        let samples = |d: Option<crate::report::Durations>| d.map(|d| d.samples);
        assert_eq!(
            (samples(row.captured), samples(row.replayed)),
            (Some(12), Some(12))
        );
        assert!(!row.too_few && row.interval.is_some(), "{row:?}");
        assert_eq!((row.regression, report.verdict), (slow, verdict), "{row:?}");
        assert_eq!(report.summary.too_few, 0);
        // `diff` of the same two traces: the kernel judged alike, region times pooled by
        // the same graphs (ranks, from 0).
        assert_eq!(diff_judgement(&base, &new, &label, 2.0), (slow, verdict));
        let b = diff::profile_records(&base.records);
        let n = diff::profile_records(&new.records);
        let c = diff::compare(&b, &n, &diff_matched(&base, &new), 2.0);
        assert!(
            (c.regions.times.iter()).all(|t| t.graphs == [0, 1, 2]),
            "{:?}",
            c.regions.times
        );
        assert_eq!(c.regions.times.len(), 4);
    }
}

/// Graphs that compute something else (another frame size: other byte ranges) stay rows
/// of their own: two pipelines of three graphs each are two rows of every region.
#[test]
fn graphs_that_differ_stay_apart() {
    let trace = in_flight(true);
    let ids = prepared_ids(&trace);
    assert_eq!(ids.len(), 6);
    let report = replay_report(&trace, &trace, &ReplayOptions::default());
    let mut pools: Vec<Vec<u64>> = report.timing.iter().map(|t| t.graphs.clone()).collect();
    pools.sort();
    pools.dedup();
    assert_eq!(pools.len(), 2, "{pools:?}");
    assert!(pools.iter().all(|p| p.len() == 3));
    assert_eq!(pools.concat(), ids, "every graph in one pool");
    assert_eq!(report.timing.len(), 8);
    assert!(
        (report.timing.iter()).all(|t| t.captured.is_some_and(|c| c.samples == 12)),
        "{:?}",
        report.timing
    );
    // The text names each row's graphs as a run.
    let text = report.to_text();
    let runs: Vec<String> = pools
        .iter()
        .map(|p| hrx_analysis::units::id_runs(p))
        .collect();
    for run in &runs {
        assert!(text.contains(&format!("  {run}  ")), "{run}: {text}");
    }
}

/// A kernel 1 µs slower on the GPU's clock is slow past the device floor (0.5 µs); the same
/// samples on the host's clock are not (100 µs of scheduling noise). Times are set.
#[test]
fn device_times_are_judged_past_the_device_floor_and_host_times_past_the_host_floor() {
    use crate::report::Clock;
    let options = ReplayOptions::default().max_slowdown(1.1);
    let captured = crate::Durations::of((0..24).map(|i| 6_880 + i % 3)).unwrap();
    let replayed = crate::Durations::of((0..240).map(|i| 7_970 + i % 5)).unwrap();
    let device = super::judge(
        Some(captured),
        Some(replayed),
        1.0,
        &options,
        true,
        Clock::Device,
    );
    assert!(device.slow, "{device:?}");
    let host = super::judge(
        Some(captured),
        Some(replayed),
        1.0,
        &options,
        true,
        Clock::Host,
    );
    assert!(!host.slow && host.interval == device.interval, "{host:?}");
    // Under the device floor: 400 ns more is never slow, whatever the ratio.
    let small = crate::Durations::of((0..24).map(|_| 1_000)).unwrap();
    let bigger = crate::Durations::of((0..240).map(|_| 1_400)).unwrap();
    let under = super::judge(
        Some(small),
        Some(bigger),
        1.0,
        &options,
        true,
        Clock::Device,
    );
    assert!(!under.slow && under.ratio == Some(1.4), "{under:?}");
}

/// A replay digests what its capture digested: every written range when the capture did
/// (`HRX_TRACE_DIGESTS=all`: a GPU-local buffer among its digests), else host-observable
/// outputs only, so that it does not read back each GPU-local intermediate the capture never
/// read (on the H200 that made copy regions 1.2-2x slower than captured).
#[test]
fn a_replay_digests_what_its_capture_digested() {
    let all = crate::plan::plan(captured(), None).expect("plan");
    assert_eq!(
        crate::execute::open::digests(&all.runtimes[0]),
        TraceDigests::All
    );
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    {
        let runtime =
            Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).expect("runtime");
        let options = PipelineOptions {
            frames_in_flight: 1,
            ..PipelineOptions::default()
        };
        let mut pipeline = Pipeline::new(&runtime, 24, 16, options).expect("pipeline");
        pipeline
            .run((0..2).map(|seed| frame(24, 16, seed)), |_, _| {})
            .expect("run");
    }
    recorder.close().expect("close");
    let outputs = Trace::from_bytes(&sink.contents()).expect("read back");
    let plan = crate::plan::plan(&outputs, None).expect("plan");
    assert_eq!(
        crate::execute::open::digests(&plan.runtimes[0]),
        TraceDigests::Outputs
    );
}
