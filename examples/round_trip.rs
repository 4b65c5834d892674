//! The submit-to-complete round trip of a one-region graph, timed in a plain loop.
//!
//! ```text
//! cargo run --release -p hrx --example round_trip -- [ROUND_TRIPS]
//! ```
//!
//! Prepares a graph of one 4 KiB fill of a GPU-local buffer on the software device, runs
//! 10,000 `submit()` + `wait()` round trips to warm up, then `ROUND_TRIPS` more (default
//! 1,000,000), and prints one line: the mean time of a round trip in µs and how many of
//! their regions the waiting thread ran itself, in `Completion::wait`, rather than handing
//! them to the Compute queue's worker thread (see BENCHMARKS.md).
//! A whole-process figure, cheap to run many times and to compare two builds alternately on
//! one machine; `cargo bench -p hrx --bench runtime` (`submit_to_complete`) is the criterion
//! measurement of the same round trip. Errors print one line and exit with status 1.

use hrx::{Placement, Runtime, RuntimeOptions};
use std::time::Instant;

fn main() {
    if let Err(error) = run() {
        eprintln!("round_trip: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let round_trips: u64 = match args.as_slice() {
        [] => 1_000_000,
        [help] if help == "-h" || help == "--help" => {
            println!("usage: round_trip [ROUND_TRIPS]   (default 1000000)");
            return Ok(());
        }
        [arg] => match arg.parse() {
            Ok(0) | Err(_) => {
                return Err(format!("ROUND_TRIPS must be a positive integer, not {arg:?}").into());
            }
            Ok(n) => n,
        },
        _ => return Err("one argument at most: ROUND_TRIPS".into()),
    };
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let buffer = runtime.buffer(4096, Placement::GpuLocal)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x5A)?;
    let graph = graph.prepare()?;
    for _ in 0..10_000 {
        graph.submit()?.wait()?;
    }
    let before = runtime.counters();
    let start = Instant::now();
    for _ in 0..round_trips {
        graph.submit()?.wait()?;
    }
    let elapsed = start.elapsed();
    let after = runtime.counters();
    println!(
        "{:.3} µs per round trip; the waiting thread ran {} of {} regions",
        elapsed.as_secs_f64() * 1e6 / round_trips as f64,
        after.regions_run_by_waiters - before.regions_run_by_waiters,
        after.submissions - before.submissions
    );
    Ok(())
}
