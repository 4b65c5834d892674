//! Submits the three-region host-visible graph of issue 17 many times, from one or more
//! threads: for the whole-process benchmarks of `scripts/bench-lossless.sh` and the
//! contention tests of `hrx-trace record -- PROGRAM` (built by `cargo test` with the other
//! examples; the tests find it beside their own executable).
//!
//! `host_visible SUBMISSIONS [THREADS]` (THREADS default 1): creates one runtime on the
//! software device (so `HRX_TRACE` and the other variables apply); each thread prepares its
//! own graph (upload 256 B from a host-visible buffer it wrote once, a fill on Compute,
//! download 256 B into a host-visible buffer, whose digest a trace takes) and submits it
//! `SUBMISSIONS / THREADS` times (the first thread takes the remainder), waiting for each.
//! Prints one line, `SUBMISSIONS submissions (REGIONS regions) from THREADS threads, R run by
//! the waiting threads, W parked workers woken` (R: the runtime's `regions_run_by_waiters`,
//! the regions a thread in `wait` ran itself rather than a queue's worker; W: its
//! `worker_wakes`, the notifications of parked queue workers), and exits 0; the runtime
//! closes its trace at exit. Errors print one line and exit 1.

use hrx::{ExecutableGraph, Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("host_visible: {error}");
        std::process::exit(1);
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: host_visible SUBMISSIONS [THREADS]";
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{usage}");
        return Ok(());
    }
    let number = |a: &String| {
        a.parse::<u64>()
            .map_err(|_| format!("{a:?} is not a whole number; {usage}"))
    };
    let submissions = number(args.first().ok_or(usage)?)?;
    let threads = args.get(1).map_or(Ok(1), number)?;
    if threads == 0 || args.len() > 2 {
        return Err(usage.into());
    }
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let runtime = &runtime;
                let count = submissions / threads + if i == 0 { submissions % threads } else { 0 };
                s.spawn(move || -> Result<(), Error> {
                    let graph = three_regions(runtime, i as u8)?;
                    for _ in 0..count {
                        graph.submit()?.wait()?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| Error::from("a thread panicked"))?)
    })?;
    let counters = runtime.counters();
    println!(
        "{submissions} submissions ({} regions) from {threads} threads, {} run by the waiting \
         threads, {} parked workers woken",
        submissions * 3,
        counters.regions_run_by_waiters,
        counters.worker_wakes
    );
    Ok(())
}

/// Upload 256 B from a host-visible buffer, fill 256 B on Compute, download 256 B into a
/// host-visible buffer.
fn three_regions(runtime: &Runtime, seed: u8) -> Result<ExecutableGraph, Error> {
    let input = runtime.buffer(256, Placement::HostVisible)?;
    let pattern: Vec<u8> = (0..=255u8).map(|b| b.wrapping_mul(31) ^ seed).collect();
    input.write(0, &pattern)?;
    let device = runtime.buffer(512, Placement::GpuLocal)?;
    let output = runtime.buffer(256, Placement::HostVisible)?;
    let (low, high) = (device.view(0..256)?, device.view(256..512)?);
    let mut graph = runtime.graph();
    graph.copy(low.clone(), input.whole())?;
    graph.fill(high, 7)?;
    graph.copy(output.whole(), low)?;
    Ok(graph.prepare()?)
}
