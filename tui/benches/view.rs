//! The terminal timeline at scale: a trace of 1,000,000 operations.
//!
//! ```text
//! cargo bench -p hrx-tui --bench view
//! ```
//!
//! Before timing anything, the synthetic pipeline generator
//! ([`hrx_tui::state::synthetic`], 250,000 submissions of four regions, every 97th compute
//! five times longer) is written through the real recorder into a temporary trace file.
//!
//! - `open/1M_ops`: [`hrx_tui::load`] of that file, as `hrx-trace view` opens it: read,
//!   decompress and decode every block, build the model (lanes, index, hazards, events,
//!   statistics).
//! - `frame/200x60/{fit,10x,1000x}`: one frame drawn by [`hrx_tui::render`] through
//!   ratatui's `Terminal::draw` into a 200×60 `TestBackend`, as the event loop draws after
//!   each key: the whole trace, a tenth of it and a thousandth of it, centred.
//! - Memory: printed, not timed: [`hrx_tui::Model::heap_bytes`] (the per-span structures)
//!   per operation, and the trace file's size.
//!
//! Targets (DESIGN.md section 6, "opens large traces fast"): open ≤ 2 s, frame ≤ 16 ms,
//! ≤ 100 bytes per operation. Measurement is short (open: 10 samples over about 15 s;
//! frames: 1 s warm-up, 3 s measurement), so the whole run takes well under two minutes on
//! two cores.

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use hrx_capture::{Recorder, RecorderOptions};
use hrx_tui::state::synthetic::{PipelineSpec, pipeline};
use hrx_tui::state::{Action, TimeWindow};
use hrx_tui::{Model, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

/// Operations (spans) in the trace.
const OPS: u64 = 1_000_000;

/// Writes the generated trace to `path`.
fn write_trace(path: &Path) {
    let started = Instant::now();
    let options = RecorderOptions {
        // The generator outruns the writer thread: wait for room rather than drop.
        full_buffer_wait: Duration::from_secs(5),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).expect("create the trace");
    let mut records = 0u64;
    for record in pipeline(PipelineSpec::ops(OPS)) {
        recorder.record(&record);
        records += 1;
    }
    recorder.close().expect("close the trace");
    assert_eq!(recorder.dropped_records(), 0, "records were dropped");
    let bytes = std::fs::metadata(path).expect("trace written").len();
    println!(
        "trace: {OPS} operations, {records} records, {:.1} MiB on disk ({:.1} bytes/op), written in {:.1?} (not timed)",
        bytes as f64 / f64::from(1 << 20),
        bytes as f64 / OPS as f64,
        started.elapsed()
    );
}

/// The view of `model` on a 200×60 terminal, zoomed `zoom` times into the middle of the
/// trace (1: the whole trace, as opened).
fn zoomed(model: &Model, zoom: u64) -> ViewState {
    let mut state = ViewState::new(model, 200, 60);
    state.update(model, Action::Fit);
    let fit = state.window;
    let width = fit.width_ns() / zoom;
    let start = fit.start_ns + (fit.width_ns() - width) / 2;
    state.window = TimeWindow::new(start, start + width);
    state.cursor_ns = start + width / 2;
    state
}

fn view(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("million.hrxt");
    write_trace(&path);

    let mut open = c.benchmark_group("open");
    open.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(15));
    open.bench_function("1M_ops", |b| {
        b.iter(|| black_box(hrx_tui::load(&path).expect("load")))
    });
    open.finish();

    let model = hrx_tui::load(&path).expect("load");
    assert_eq!(model.span_count() as u64, OPS);
    println!(
        "memory: {} heap bytes in the per-span structures = {:.1} bytes/op",
        model.heap_bytes(),
        model.heap_bytes() as f64 / OPS as f64
    );

    let mut frame = c.benchmark_group("frame/200x60");
    frame
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, zoom) in [("fit", 1), ("10x", 10), ("1000x", 1_000)] {
        let state = zoomed(&model, zoom);
        let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("test backend");
        frame.bench_function(name, |b| {
            b.iter(|| {
                terminal
                    .draw(|f| hrx_tui::render(&model, &state, f))
                    .expect("draw");
            })
        });
    }
    frame.finish();
}

criterion_group!(benches, view);
criterion_main!(benches);
