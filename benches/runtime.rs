//! Runtime overheads on the software device.
//!
//! ```text
//! cargo bench -p hrx --bench runtime
//! ```
//!
//! - `submit`: host CPU time of `ExecutableGraph::submit` for a prepared one-region graph
//!   (a single 4 KiB fill). Only the `submit` call is timed; the wait for the submission and
//!   the drop of its completion happen outside the timed part, so every submit finds an
//!   idle runtime and a free slot.
//! - `submit_to_complete`: `submit` plus `Completion::wait` of the same graph: the round trip
//!   through the scheduler and the software device (the waiting thread runs the fill itself
//!   when the Compute worker has not claimed it first).
//! - `pipeline_frame/640x480`: one 640x480 RGB frame through the image pipeline
//!   (`hrx_workloads::Pipeline`, one frame in flight): host write, upload, five kernels and
//!   a fill in one native graph, two downloads, the NPU threshold, and the host reading the
//!   edges and the histogram.
//! - `pipeline_8_frames/in_flight_{1,3}`: eight 640x480 frames, one or three in flight.
//! - `pipeline_traced/{untraced,traced}`: eight 1280x720 frames, three in flight, without and
//!   with a trace recorder writing a trace file; then paired rounds (`HRX_BENCH_ROUNDS`,
//!   default 60) of untraced, a second untraced runtime (the control) and traced in turn, on
//!   fresh runtimes every `HRX_BENCH_ROUNDS / HRX_BENCH_EPOCHS` rounds (default 3 epochs).
//!
//! - `host_visible_graph/{untraced,traced}`: `submit` + `wait` of a three-region graph
//!   (upload 256 B from a host-visible buffer, a fill on Compute, download 256 B into a
//!   host-visible buffer, whose digest the trace takes), without and with a trace (issue 17:
//!   the Download used to wait for the previous submission's digest inside its own time);
//!   then paired rounds (`HRX_BENCH_ROUNDS`, default 60) of 1000 submissions untraced and
//!   traced in turn, and the share of each runtime's regions its waiting thread ran itself
//!   (`regions_run_by_waiters`: tracing should not move them onto the workers).
//!
//! Measurement is kept short (1 s warm-up, 3 s measurement, 50 samples) so the whole run
//! takes well under two minutes on two cores.

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
mod common;

use common::frame;
use hrx::{ExecutableGraph, Placement, Runtime, RuntimeOptions};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn runtime() -> Runtime {
    Runtime::new(RuntimeOptions::sim().graph_slots(8)).expect("software runtime")
}

/// A prepared graph of one region: a 4 KiB fill of a GPU-local buffer.
fn one_fill(runtime: &Runtime) -> ExecutableGraph {
    let buffer = runtime.buffer(4096, Placement::GpuLocal).expect("buffer");
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x5A).expect("fill");
    let graph = graph.prepare().expect("prepare");
    assert_eq!(graph.regions(), 1);
    graph
}

fn submit(c: &mut Criterion) {
    let runtime = runtime();
    let graph = one_fill(&runtime);
    c.bench_function("submit", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                let completion = graph.submit();
                timed += started.elapsed();
                let completion = completion.expect("submit");
                completion.wait().expect("wait");
                drop(completion);
            }
            timed
        })
    });
}

fn submit_to_complete(c: &mut Criterion) {
    let runtime = runtime();
    let graph = one_fill(&runtime);
    c.bench_function("submit_to_complete", |b| {
        b.iter(|| graph.submit().expect("submit").wait().expect("wait"))
    });
}

fn pipeline(c: &mut Criterion) {
    let (width, height) = (640, 480);
    let runtime = runtime();

    let mut group = c.benchmark_group("pipeline_frame");
    group
        .throughput(Throughput::Elements(1))
        .sampling_mode(SamplingMode::Flat);
    let options = PipelineOptions {
        frames_in_flight: 1,
        ..PipelineOptions::default()
    };
    let mut single = Pipeline::new(&runtime, width, height, options).expect("pipeline");
    let input = frame(width, height, 0);
    group.bench_function("640x480", |b| {
        b.iter_batched(
            || input.clone(),
            |frame| {
                single
                    .run([frame], |_, output| {
                        black_box(output);
                    })
                    .expect("run")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("pipeline_8_frames");
    group
        .throughput(Throughput::Elements(8))
        .sampling_mode(SamplingMode::Flat);
    let frames: Vec<Frame> = (0..8).map(|seed| frame(width, height, seed)).collect();
    for frames_in_flight in [1, 3] {
        let options = PipelineOptions {
            frames_in_flight,
            ..PipelineOptions::default()
        };
        let mut pipeline = Pipeline::new(&runtime, width, height, options).expect("pipeline");
        group.bench_function(format!("in_flight_{frames_in_flight}"), |b| {
            b.iter_batched(
                || frames.clone(),
                |frames| {
                    pipeline
                        .run(frames, |_, output| {
                            black_box(output);
                        })
                        .expect("run")
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// The pipeline traced (into a trace file, with output digests) against untraced, in the
/// same run: 8 frames of 1280x720, 3 in flight.
fn pipeline_traced(c: &mut Criterion) {
    let (width, height) = (1280, 720);
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("bench.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .expect("recorder");
    let untraced = runtime();
    let traced = Runtime::new(
        RuntimeOptions::sim()
            .graph_slots(8)
            .recorder(recorder.clone()),
    )
    .expect("traced runtime");
    let frames: Vec<Frame> = (0..8).map(|seed| frame(width, height, seed)).collect();
    let mut group = c.benchmark_group("pipeline_traced");
    group
        .throughput(Throughput::Elements(8))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20);
    common::pipeline_functions(
        &mut group,
        &[("untraced", &untraced), ("traced", &traced)],
        &frames,
    );
    group.finish();
    drop(traced);
    drop(untraced);
    let summary = recorder.close().expect("close");
    eprintln!("pipeline_traced: {summary:?}");
    // The ratio again, untraced, control and traced in turn round by round, on fresh
    // runtimes every epoch.
    let paired = common::traced_rounds(
        || RuntimeOptions::sim().graph_slots(8),
        dir.path(),
        &frames,
        common::rounds(60),
        common::epochs(3),
    );
    println!("pipeline_traced: {paired}");
}

/// The three-region host-visible graph of `host_visible_graph`.
fn three_regions(runtime: &Runtime) -> ExecutableGraph {
    let input = runtime.buffer(256, Placement::HostVisible).expect("buffer");
    let device = runtime.buffer(512, Placement::GpuLocal).expect("buffer");
    let output = runtime.buffer(256, Placement::HostVisible).expect("buffer");
    let mut graph = runtime.graph();
    let (low, high) = (
        device.view(0..256).expect("view"),
        device.view(256..512).expect("view"),
    );
    graph.copy(low.clone(), input.whole()).expect("upload");
    graph.fill(high.clone(), 7).expect("fill");
    graph.copy(output.whole(), low).expect("download");
    let graph = graph.prepare().expect("prepare");
    assert_eq!(graph.regions(), 3);
    graph
}

fn host_visible_graph(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("graph.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .expect("recorder");
    let untraced = runtime();
    let traced = Runtime::new(
        RuntimeOptions::sim()
            .graph_slots(8)
            .recorder(recorder.clone()),
    )
    .expect("traced runtime");
    let graphs = [
        ("untraced", three_regions(&untraced)),
        ("traced", three_regions(&traced)),
    ];
    let mut group = c.benchmark_group("host_visible_graph");
    for (name, graph) in &graphs {
        group.bench_function(*name, |b| {
            b.iter(|| graph.submit().expect("submit").wait().expect("wait"))
        });
    }
    group.finish();
    // The ratio again, untraced and traced in turn round by round (1000 submissions each):
    // consecutive criterion groups drift apart by more than the target on a shared machine.
    let [untraced_ms, traced_ms] = common::rotated(
        common::rounds(60),
        || (),
        [&mut |()| submit_many(&graphs[0].1), &mut |()| {
            submit_many(&graphs[1].1)
        }],
    );
    let paired = common::Interleaved::new(untraced_ms, traced_ms);
    println!("host_visible_graph: untraced (a) vs traced (b), 1000 submissions a round, {paired}");
    for (name, runtime) in [("untraced", &untraced), ("traced", &traced)] {
        let counters = runtime.counters();
        let regions = 3 * counters.submissions;
        println!(
            "host_visible_graph: {name}: {} of {regions} regions run by the waiting thread ({:.2}%)",
            counters.regions_run_by_waiters,
            100.0 * counters.regions_run_by_waiters as f64 / regions.max(1) as f64
        );
    }
    drop(graphs);
    drop((traced, untraced));
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0);
}

/// 1000 `submit` + `wait` of `graph`.
fn submit_many(graph: &ExecutableGraph) {
    for _ in 0..1000 {
        graph.submit().expect("submit").wait().expect("wait");
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = submit, submit_to_complete, host_visible_graph, pipeline, pipeline_traced
}
criterion_main!(benches);
