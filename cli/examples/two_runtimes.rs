//! Two runtimes in one process, the first of which loses its device: what `replay` must
//! order (session 57: a runtime whose capture lost the GPU to a sticky error is replayed
//! after every other runtime, for after a CUDA kernel fault the process cannot use CUDA
//! again).
//!
//! ```text
//! HRX_BACKEND=cuda hrx-trace record -o two.hrxt -- target/release/examples/two_runtimes [FRAMES]
//! hrx-trace replay two.hrxt --backend cuda
//! ```
//!
//! Runtime 1 and runtime 2 are opened (in that order, so they are numbered so), runtime 2
//! runs `FRAMES` (default 4) frames of the edge pipeline on a synthetic 256x256 frame to the
//! end, then runtime 1 runs as many with `hrx_fail` dispatched at its frame 1: on CUDA an
//! illegal address, which loses the context (both runtimes share the device's primary
//! context), on the software device a kernel error. The runtimes come from
//! `RuntimeOptions::default()`, so `HRX_BACKEND` and `HRX_TRACE` apply. Prints each
//! runtime's outcome; exits 0 when runtime 2's frames all ran and runtime 1's failed as
//! asked, else 1.

use hrx::{Runtime, RuntimeOptions};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::process::ExitCode;

const SIDE: usize = 256;

fn frames(count: usize) -> impl Iterator<Item = Frame> {
    (0..count).map(|index| Frame {
        width: SIDE,
        height: SIDE,
        // A gradient with an edge that moves each frame: every frame's outputs differ.
        rgb: (0..SIDE * SIDE * 3)
            .map(|i| {
                let x = (i / 3) % SIDE;
                if x < 64 + index * 16 { 30 } else { 220 }
            })
            .collect(),
    })
}

fn run(runtime: &Runtime, count: usize, faulting_frame: Option<usize>) -> Result<usize, String> {
    let options = PipelineOptions {
        faulting_frame,
        ..PipelineOptions::default()
    };
    let mut pipeline = Pipeline::new(runtime, SIDE, SIDE, options).map_err(|e| e.to_string())?;
    let mut delivered = 0;
    match pipeline.run(frames(count), |_, _| delivered += 1) {
        Ok(_) => Ok(delivered),
        Err(e) => Err(format!("{e} ({delivered} of {count} frames delivered)")),
    }
}

fn main() -> ExitCode {
    let count = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 4,
        Some(Ok(n)) if n >= 2 => n,
        Some(_) => {
            eprintln!("usage: two_runtimes [FRAMES, at least 2]");
            return ExitCode::from(2);
        }
    };
    let open = || Runtime::new(RuntimeOptions::default());
    let (first, second) = match (open(), open()) {
        (Ok(first), Ok(second)) => (first, second),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: cannot open a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let healthy = run(&second, count, None);
    println!("runtime 2: {healthy:?}");
    let lost = run(&first, count, Some(1));
    println!("runtime 1: {lost:?}");
    if healthy == Ok(count) && lost.is_err() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
