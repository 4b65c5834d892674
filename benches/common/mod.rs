//! What the runtime and GPU benches share: the synthetic frames of the pipeline groups and an
//! interleaved A/B measurement for small ratios.

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup};
use hrx::Runtime;
use hrx::workloads::{Frame, Pipeline, PipelineOptions};
use std::hint::black_box;
use std::time::Instant;

/// A deterministic synthetic RGB8 frame (a gradient with per-row and per-seed variation).
pub fn frame(width: usize, height: usize, seed: usize) -> Frame {
    let rgb = (0..width * height * 3)
        .map(|i| ((i * 7 + seed * 13) ^ (i / (width * 3) * 5)) as u8)
        .collect();
    Frame { width, height, rgb }
}

/// The times of two workloads measured alternately.
pub struct Interleaved {
    /// Median time of `a`, ms.
    pub a_ms: f64,
    /// Median time of `b`, ms.
    pub b_ms: f64,
    /// Quartiles (p25, p50, p75) of the per-round ratio `b / a`.
    pub ratio: [f64; 3],
    /// Rounds measured.
    pub rounds: usize,
}

/// Runs `a` and `b` alternately for `rounds` rounds (after one warm-up round each), swapping
/// which goes first every round, so that drifts of the machine (clocks, other load) hit both
/// alike; only the calls of `a` and `b` are timed, each on a fresh input from `setup`. A
/// ratio of a few percent is below the run-to-run spread of consecutive criterion groups on
/// a shared machine; paired rounds resolve it.
pub fn interleaved<I>(
    rounds: usize,
    mut setup: impl FnMut() -> I,
    mut a: impl FnMut(I),
    mut b: impl FnMut(I),
) -> Interleaved {
    let mut time = |f: &mut dyn FnMut(I)| {
        let input = setup();
        let start = Instant::now();
        f(input);
        start.elapsed().as_secs_f64() * 1e3
    };
    time(&mut a);
    time(&mut b);
    let (mut a_ms, mut b_ms, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds.max(1) {
        let (ta, tb) = if round % 2 == 0 {
            let ta = time(&mut a);
            (ta, time(&mut b))
        } else {
            let tb = time(&mut b);
            (time(&mut a), tb)
        };
        a_ms.push(ta);
        b_ms.push(tb);
        ratios.push(tb / ta);
    }
    let quantile = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    Interleaved {
        a_ms: quantile(&mut a_ms, 0.5),
        b_ms: quantile(&mut b_ms, 0.5),
        ratio: [
            quantile(&mut ratios, 0.25),
            quantile(&mut ratios, 0.5),
            quantile(&mut ratios, 0.75),
        ],
        rounds: rounds.max(1),
    }
}

impl Interleaved {
    /// Standard error of the median ratio: that of the median of a normal sample, its sigma
    /// estimated from the interquartile range.
    pub fn standard_error(&self) -> f64 {
        1.2533 * (self.ratio[2] - self.ratio[0]) / 1.349 / (self.rounds as f64).sqrt()
    }
}

impl std::fmt::Display for Interleaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let se = self.standard_error();
        write!(
            f,
            "{} interleaved rounds: a {:.3} ms, b {:.3} ms (medians); b/a per round: median \
             {:.4} [p25 {:.4}, p75 {:.4}], standard error of the median {se:.4}",
            self.rounds, self.a_ms, self.b_ms, self.ratio[1], self.ratio[0], self.ratio[2]
        )
    }
}

/// Paired rounds to run: `HRX_BENCH_ROUNDS`, else `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("HRX_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// The image pipeline over `frames` on an untraced runtime (a) and a traced one (b), in
/// paired rounds (see [`interleaved`]).
pub fn paired_pipelines(
    untraced: &Runtime,
    traced: &Runtime,
    frames: &[Frame],
    rounds: usize,
) -> Interleaved {
    let (width, height) = (frames[0].width, frames[0].height);
    let mut pipelines = [untraced, traced].map(|runtime| {
        Pipeline::new(runtime, width, height, PipelineOptions::default()).expect("pipeline")
    });
    let [a, b] = &mut pipelines;
    let run = |pipeline: &mut Pipeline, frames: Vec<Frame>| {
        pipeline
            .run(frames, |_, output| drop(black_box(output)))
            .expect("run");
    };
    interleaved(
        rounds,
        || frames.to_vec(),
        |frames| run(a, frames),
        |frames| run(b, frames),
    )
}

/// One criterion function per `(name, runtime)`: the image pipeline over `frames` (copied
/// outside the timed part), 3 frames in flight.
pub fn pipeline_functions(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtimes: &[(&str, &Runtime)],
    frames: &[Frame],
) {
    let (width, height) = (frames[0].width, frames[0].height);
    for &(name, runtime) in runtimes {
        let mut pipeline =
            Pipeline::new(runtime, width, height, PipelineOptions::default()).expect("pipeline");
        group.bench_function(name, |b| {
            b.iter_batched(
                || frames.to_vec(),
                |frames| {
                    pipeline
                        .run(frames, |_, output| drop(black_box(output)))
                        .expect("run")
                },
                BatchSize::LargeInput,
            )
        });
    }
}
