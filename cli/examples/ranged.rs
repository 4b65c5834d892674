//! A program that uses hrx and chooses what its trace records, for the tests of capture
//! ranges (built by `cargo test` with the other examples).
//!
//! `ranged SUBMISSIONS [START STOP]`: creates a runtime on the software device, writes a
//! pattern into a GPU-local buffer A once, then SUBMISSIONS times writes 16 bytes of A (the
//! iteration's number) and submits a graph copying A into a host-visible B, waiting for each.
//! With START and STOP (iterations, from 1) it calls `hrx::trace::start()` before iteration
//! START and `hrx::trace::stop()` before iteration STOP: so a range opening mid-run must
//! carry A's earlier contents for its replay to match. With `RANGED_PAUSE_MS=N` in the
//! environment it sleeps N ms before each iteration, so that iteration I submits at least
//! I*N ms after the runtime started (the time-range tests rely on that bound, a lower one
//! only). Errors print one line and exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("ranged: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (submissions, start, stop) = match args[..] {
        [n] => (n, None, None),
        [n, start, stop] => (n, Some(start), Some(stop)),
        _ => return Err("usage: ranged SUBMISSIONS [START STOP]".into()),
    };
    let pause = match std::env::var("RANGED_PAUSE_MS") {
        Ok(ms) => std::time::Duration::from_millis(ms.parse()?),
        Err(_) => std::time::Duration::ZERO,
    };
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let a = runtime.buffer(4096, Placement::GpuLocal)?;
    let b = runtime.buffer(4096, Placement::HostVisible)?;
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    a.write(0, &pattern)?;
    let mut graph = runtime.graph();
    graph.copy(b.whole(), a.whole())?;
    let graph = graph.prepare()?;
    for i in 1..=submissions {
        std::thread::sleep(pause);
        if start == Some(i) {
            hrx::trace::start();
        }
        if stop == Some(i) {
            hrx::trace::stop();
        }
        a.write(0, &[i as u8; 16])?;
        graph.submit()?.wait()?;
    }
    Ok(())
}
