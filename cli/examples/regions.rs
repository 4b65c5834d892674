//! A program of one graph of many regions, for `diff`'s and the readers' measurements at
//! scale (BENCHMARKS.md, "Session 57: diff's memory").
//!
//! `regions N SUBMISSIONS`: creates a runtime on the software device (so `HRX_TRACE` and
//! the other variables apply), prepares one graph of N regions, alternating a fill (Compute
//! lane) and an upload (Upload lane) of the same 64 bytes, and submits it SUBMISSIONS times,
//! waiting for each; exits 0. With `REGIONS_EXTRA_AT=K` a fill of another buffer is put
//! before region K, on the Download lane's side of a copy (one region more, its label
//! unlike its neighbours'), so that two recordings differ by one inserted region. Errors
//! print one line and exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("regions: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: regions N SUBMISSIONS";
    let regions: usize = args.first().ok_or(usage)?.parse()?;
    let submissions: u64 = args.get(1).ok_or(usage)?.parse()?;
    let extra_at: Option<usize> = match std::env::var("REGIONS_EXTRA_AT") {
        Ok(k) => Some(k.parse()?),
        Err(_) => None,
    };
    const SLICE: usize = 64;
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let pairs = regions.div_ceil(2).max(1);
    let device = runtime.buffer(pairs * SLICE, Placement::GpuLocal)?;
    let host = runtime.buffer(pairs * SLICE, Placement::HostVisible)?;
    let other = runtime.buffer(SLICE, Placement::GpuLocal)?;
    let readback = runtime.buffer(SLICE, Placement::HostVisible)?;
    let mut graph = runtime.graph();
    for region in 0..regions {
        if extra_at == Some(region) {
            graph.copy(readback.whole(), other.whole())?;
        }
        let slice = device.view(region / 2 * SLICE..(region / 2 + 1) * SLICE)?;
        if region % 2 == 0 {
            graph.fill(slice, region as u8)?;
        } else {
            let source = host.view(region / 2 * SLICE..(region / 2 + 1) * SLICE)?;
            graph.copy(slice, source)?;
        }
    }
    let graph = graph.prepare()?;
    for _ in 0..submissions {
        graph.submit()?.wait()?;
    }
    Ok(())
}
