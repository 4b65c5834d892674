//! A small program that uses hrx, for the tests of `hrx-trace record -- PROGRAM` (built by
//! `cargo test` with the other examples; the tests find it beside their own executable).
//!
//! `traced SUBMISSIONS [PAUSE_MS]`: creates a runtime on the software device (so `HRX_TRACE`
//! and the other variables apply), prints `started PID` and waits PAUSE_MS (so that several
//! processes overlap), then submits a one-fill graph SUBMISSIONS times, waiting for each, and
//! exits 0; the runtime closes its trace at exit. Errors print one line and exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("traced: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let submissions: u64 = args
        .first()
        .ok_or("usage: traced SUBMISSIONS [PAUSE_MS]")?
        .parse()?;
    let pause_ms: u64 = args.get(1).map_or(Ok(0), |a| a.parse())?;
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    println!("started {}", std::process::id());
    std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    let buffer = runtime.buffer(4096, Placement::GpuLocal)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x5A)?;
    let graph = graph.prepare()?;
    for _ in 0..submissions {
        graph.submit()?.wait()?;
    }
    Ok(())
}
