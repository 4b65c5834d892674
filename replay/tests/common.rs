//! Recording traces in-process, test inputs, and trace rewriting.

use hrx::{Runtime, RuntimeOptions, TraceDigests};
use hrx_capture::schema::{self as s, Record};
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use hrx_replay::{ReplayOptions, Report, replay};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The photograph the pipeline tests use (Debian package `mate-backgrounds`).
pub const PHOTO: &str = "/usr/share/backgrounds/mate/nature/FreshFlower.jpg";
/// Frame size of the photographic pipeline: small, so debug builds stay fast.
pub const WIDTH: usize = 160;
/// See [`WIDTH`].
pub const HEIGHT: usize = 100;

/// Records what `body` does with a software runtime built from `options` into an
/// in-memory trace; the runtime is dropped (its workers joined) before the trace closes.
pub fn record<T>(options: RuntimeOptions, body: impl FnOnce(&Runtime) -> T) -> (Trace, T) {
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    let result = {
        let runtime = Runtime::new(options.recorder(recorder.clone())).expect("runtime");
        body(&runtime)
    };
    recorder.close().expect("close");
    let trace = Trace::from_bytes(&sink.contents()).expect("read back");
    assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
    (trace, result)
}

/// The hazards workload, with output contents.
pub fn hazards_trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        record(
            RuntimeOptions::sim()
                .trace_contents(true)
                .trace_digests(TraceDigests::All),
            |rt| hrx_workloads::run_hazards(rt).expect("hazards"),
        )
        .0
    })
}

/// Four 160x100 frames from the photograph: as is, mirrored, upside down, both.
pub fn photo_frames() -> &'static [Frame] {
    static FRAMES: OnceLock<Vec<Frame>> = OnceLock::new();
    FRAMES.get_or_init(|| {
        let photo = image::open(PHOTO)
            .unwrap_or_else(|e| panic!("{PHOTO}: {e} (install mate-backgrounds)"))
            .to_rgb8();
        let small = image::imageops::resize(
            &photo,
            WIDTH as u32,
            HEIGHT as u32,
            image::imageops::FilterType::Triangle,
        );
        let variants = [
            small.clone(),
            image::imageops::flip_horizontal(&small),
            image::imageops::flip_vertical(&small),
            image::imageops::rotate180(&small),
        ];
        variants
            .into_iter()
            .map(|img| Frame {
                width: WIDTH,
                height: HEIGHT,
                rgb: img.into_raw(),
            })
            .collect()
    })
}

/// A small synthetic frame: 8x8 checkerboard plus noise.
pub fn synthetic(width: usize, height: usize, seed: u32) -> Frame {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut rgb = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let bright = (x / 8 + y / 8 + seed as usize).is_multiple_of(2);
            for _ in 0..3 {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let base = if bright { 200 } else { 30 };
                rgb.push((base + (state >> 26)) as u8);
            }
        }
    }
    Frame { width, height, rgb }
}

/// Runs the pipeline over `frames` (3 in flight); returns the run's result.
pub fn run_pipeline(runtime: &Runtime, frames: &[Frame]) -> hrx::Result<usize> {
    let (width, height) = (frames[0].width, frames[0].height);
    let mut pipeline = Pipeline::new(runtime, width, height, PipelineOptions::default())?;
    let mut delivered = 0;
    pipeline.run(frames.iter().cloned(), |_, _| delivered += 1)?;
    Ok(delivered)
}

/// The photographic pipeline, digests (no contents) of every written range.
pub fn pipeline_trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        let options = RuntimeOptions::sim().trace_digests(TraceDigests::All);
        let (trace, result) = record(options, |rt| run_pipeline(rt, photo_frames()));
        assert_eq!(result.expect("pipeline"), 4);
        trace
    })
}

/// Two rounds, each allocating a GPU-local buffer, writing its head, copying the head into
/// a host-visible buffer and letting go of the graph and both buffers (`BufferDropped`)
/// before the next round: what a program freeing memory to fit a device does.
pub fn rounds_trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        record(RuntimeOptions::sim(), |rt| {
            for round in 1..=2u8 {
                let big = rt.buffer(4096, hrx::Placement::GpuLocal).expect("big");
                let out = rt.buffer(256, hrx::Placement::HostVisible).expect("out");
                big.write(0, &[round; 256]).expect("write");
                let mut graph = rt.graph();
                let head = big.view(0..256).expect("view");
                graph.copy(out.whole(), head).expect("copy");
                let prepared = graph.prepare().expect("prepare");
                prepared.submit().expect("submit").wait().expect("copied");
            }
        })
        .0
    })
}

/// The photographic pipeline with the second Sobel dispatch losing the device.
pub fn faulty_pipeline_trace() -> &'static Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE.get_or_init(|| {
        let fault = "kernel=hrx_sobel#2:device-lost".parse().expect("fault");
        let options = RuntimeOptions::sim()
            .trace_digests(TraceDigests::All)
            .fault(fault);
        let (trace, result) = record(options, |rt| run_pipeline(rt, photo_frames()));
        let error = result.expect_err("the injected fault fails the run");
        assert!(error.is_device_loss(), "{error}");
        trace
    })
}

/// Replays with `options`, printing the text report (shown for failing tests).
pub fn replay_with(trace: &Trace, options: &ReplayOptions) -> Report {
    let report = replay(trace, options).unwrap_or_else(|e| panic!("replay failed: {e}"));
    println!("{}", report.to_text());
    report
}

/// Re-encodes `trace` with a fresh recorder, letting `edit` change records on the way
/// (it may intern new blobs through the recorder). Blobs are carried over; `edit` may drop
/// a record by returning `false`.
pub fn rewrite(trace: &Trace, mut edit: impl FnMut(&mut Record, &Recorder) -> bool) -> Trace {
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) => {}
            Record::Blob(blob) => {
                recorder.intern_blob(&blob.bytes).expect("blob");
            }
            other => {
                let mut record = other.clone();
                if edit(&mut record, &recorder) {
                    recorder.record(&record);
                }
            }
        }
    }
    recorder.close().expect("close");
    Trace::from_bytes(&sink.contents()).expect("read back")
}

/// The bytes of a captured payload.
pub fn payload_bytes(trace: &Trace, payload: &s::Payload) -> Vec<u8> {
    match payload {
        s::Payload::Inline(bytes) => bytes.clone(),
        s::Payload::Blob { hash, .. } => trace.blobs()[hash].to_vec(),
        s::Payload::Omitted { .. } => panic!("contents were not captured"),
    }
}

/// Every record of one kind.
#[macro_export]
macro_rules! records {
    ($trace:expr, $variant:ident) => {
        $trace.records.iter().filter_map(|r| match r {
            hrx_capture::schema::Record::$variant(x) => Some(x),
            _ => None,
        })
    };
}

/// The buffer written by the operation dispatching `entry` in `prepared`'s graph
/// (binding `binding`).
pub fn kernel_binding(
    trace: &Trace,
    prepared: s::PreparedId,
    entry: &str,
    binding: usize,
) -> s::BufferId {
    let kernel = records!(trace, KernelLoaded)
        .find(|k| k.entry == entry)
        .expect("kernel")
        .kernel;
    records!(trace, GraphOp)
        .find(|op| op.graph.0 == prepared.0 && op.op == s::OpKind::Kernel { kernel })
        .expect("operation")
        .uses[binding]
        .buffer
}

/// The node of the operation of graph `prepared` running kernel `entry`.
pub fn kernel_node(trace: &Trace, prepared: s::PreparedId, entry: &str) -> u32 {
    let kernel = records!(trace, KernelLoaded)
        .find(|k| k.entry == entry)
        .expect("kernel")
        .kernel;
    records!(trace, GraphOp)
        .find(|op| op.graph.0 == prepared.0 && op.op == s::OpKind::Kernel { kernel })
        .expect("operation")
        .node
        .0
}

/// The Submit record of `submission`.
pub fn submit(trace: &Trace, submission: u64) -> &s::Submit {
    records!(trace, Submit)
        .find(|s| s.submission.0 == submission)
        .expect("submit")
}

/// Writes `trace` to a file of its own (re-encoded, as a recording would be).
pub fn file(trace: &Trace, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let copy = rewrite(trace, |_, _| true);
    let sink = hrx_capture::FileSink::create(&path).expect("create");
    let recorder =
        hrx_capture::Recorder::with_sink(sink, hrx_capture::RecorderOptions::default()).unwrap();
    for record in &copy.records {
        match record {
            hrx_capture::schema::Record::SessionStart(_)
            | hrx_capture::schema::Record::SessionEnd(_) => {}
            hrx_capture::schema::Record::Blob(b) => {
                recorder.intern_blob(&b.bytes).expect("blob");
            }
            other => recorder.record(other),
        }
    }
    recorder.close().expect("close");
    (dir, path)
}

/// What must agree between a whole and a streamed replay.
pub fn assert_same(whole: &Report, streamed: &Report, what: &str) {
    assert_eq!(whole.verdict, streamed.verdict, "{what}");
    assert_eq!(whole.exit_code(), streamed.exit_code(), "{what}");
    // Whether a row's interval is too spread to judge comes from live timings, which two
    // replays never share (the tests' maximum slowdown makes none slow): not compared.
    let settled = |r: &Report| hrx_replay::Summary {
        too_spread: 0,
        ..r.summary
    };
    assert_eq!(settled(whole), settled(streamed), "{what}");
    // The replay's errors name its own graph ids, which another replay runtime numbers
    // otherwise (process-wide counters): those are not compared.
    let rows = |r: &Report| -> Vec<hrx_replay::SubmissionRow> {
        let mut rows = r.submissions.clone();
        for row in &mut rows {
            row.replayed_error = without_graph_ids(&row.replayed_error);
        }
        rows
    };
    assert_eq!(rows(whole), rows(streamed), "{what}");
    assert_eq!(whole.outputs, streamed.outputs, "{what}");
    // Each divergence, and why it is timing-dependent where it is.
    let kinds = |r: &Report| -> Vec<(u64, Option<u32>, String, Option<String>)> {
        r.divergences
            .iter()
            .chain(&r.timing_dependent)
            .map(|d| {
                let kind = without_graph_ids(&format!("{:?}", d.kind));
                (d.submission, d.region, kind, d.timing_dependent.clone())
            })
            .collect()
    };
    assert_eq!(kinds(whole), kinds(streamed), "{what}");
    assert_eq!(whole.trace.runtimes.len(), streamed.trace.runtimes.len());
    for (w, s) in whole.trace.runtimes.iter().zip(&streamed.trace.runtimes) {
        assert_eq!(
            (w.submissions, w.replayed_submissions, w.buffers, w.graphs),
            (s.submissions, s.replayed_submissions, s.buffers, s.graphs),
            "{what}"
        );
    }
    // Every region timed on both sides, its rows pooled over the same graphs, with every
    // sample; judged (an interval) or too few alike.
    type Row = (u64, Vec<u64>, u32, Option<usize>, Option<usize>, bool, bool);
    let samples = |r: &Report| -> Vec<Row> {
        r.timing
            .iter()
            .map(|t| {
                (
                    t.graph,
                    t.graphs.clone(),
                    t.region,
                    t.captured.map(|s| s.samples),
                    t.replayed.map(|s| s.samples),
                    t.interval.is_some(),
                    t.too_few,
                )
            })
            .collect()
    };
    assert_eq!(samples(whole), samples(streamed), "{what}");
}

/// `error` with each `graph N` written `graph _`.
fn without_graph_ids(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    let mut rest = error;
    while let Some(at) = rest.find("graph ") {
        out.push_str(&rest[..at + "graph ".len()]);
        rest = &rest[at + "graph ".len()..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('_');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}
