//! A program that builds one graph of many regions, for measuring the verbs at scale (the
//! figures in BENCHMARKS.md, "Replay at scale" and "Session 57: diff's memory"); no test
//! runs it.
//!
//! `regions N [SUBMISSIONS [PIECES]]`: creates a runtime on the software device, or on the
//! backend `HRX_BACKEND` names where it is set (`HRX_TRACE` and the other variables apply),
//! builds one graph of N regions, runs of one to four fills on the Compute lane alternating
//! with one upload on the Upload lane (so each run is a region of its own), prepares it once
//! and submits it SUBMISSIONS times (default 1), waiting for each, then exits 0. The operations write the PIECES (default 1) 64-byte pieces of a GPU-local
//! buffer in turn, an upload from the same piece of a host-visible one: with one piece each
//! region depends on the one before it (a chain); with more, a region depends on the last
//! one that wrote its piece, and regions on different lanes may run side by side (the
//! runtime's scheduler then looks at many ready regions at once). With `REGIONS_EXTRA_AT=K`
//! a download of another buffer is put before region K (one region more, its label unlike
//! its neighbours'), so that two recordings differ by one inserted region. With
//! `REGIONS_IN_FLIGHT=K` (default 1) it submits K times before it waits for the oldest, so
//! that K submissions of the graph are in flight at once (each later one waits across for
//! the earlier ones; the graph needs K slots, which it reserves). Errors print one line and
//! exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};

/// Bytes each operation writes.
const PIECE_BYTES: usize = 64;

fn main() {
    if let Err(error) = run() {
        eprintln!("regions: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--help` or any other word where a count goes: the usage, not a parse error.
    const USAGE: &str = "usage: regions N [SUBMISSIONS [PIECES]] (counts)";
    let count = |arg: &String| arg.parse::<u64>().map_err(|_| USAGE);
    let regions = count(args.first().ok_or(USAGE)?)? as usize;
    let submissions: u64 = args.get(1).map_or(Ok(1), count)?;
    let pieces = args.get(2).map_or(Ok(1), count)? as usize;
    if pieces == 0 {
        return Err("PIECES must be at least 1".into());
    }
    let extra_at: Option<usize> = match std::env::var("REGIONS_EXTRA_AT") {
        Ok(k) => Some(k.parse()?),
        Err(_) => None,
    };
    let flights: usize = match std::env::var("REGIONS_IN_FLIGHT") {
        Ok(k) => k.parse()?,
        Err(_) => 1,
    };
    if flights == 0 {
        return Err("REGIONS_IN_FLIGHT must be at least 1".into());
    }
    // The software device unless `HRX_BACKEND` names another (a GPU host's runs).
    let mut options = if std::env::var_os("HRX_BACKEND").is_some() {
        RuntimeOptions::default()
    } else {
        RuntimeOptions::sim()
    };
    if flights > 1 {
        options = options.graph_slots(flights).capacity(flights.max(8));
    }
    let runtime = Runtime::new(options)?;
    let device = runtime.buffer(PIECE_BYTES * pieces, Placement::GpuLocal)?;
    let staging = runtime.buffer(PIECE_BYTES * pieces, Placement::HostVisible)?;
    let other = runtime.buffer(PIECE_BYTES, Placement::GpuLocal)?;
    let readback = runtime.buffer(PIECE_BYTES, Placement::HostVisible)?;
    let mut graph = runtime.graph();
    let mut piece = 0;
    let mut next_piece = || {
        let range = piece * PIECE_BYTES..(piece + 1) * PIECE_BYTES;
        piece = (piece + 1) % pieces;
        range
    };
    for region in 0..regions {
        if extra_at == Some(region) {
            graph.copy(readback.whole(), other.whole())?;
        }
        if region % 2 == 0 {
            // Runs of 1, 2, 3, 4, 1, ... fills.
            for _ in 0..=(region / 2) % 4 {
                graph.fill(device.view(next_piece())?, region as u8)?;
            }
        } else {
            let range = next_piece();
            graph.copy(device.view(range.clone())?, staging.view(range)?)?;
        }
    }
    let graph = graph.prepare()?;
    let mut in_flight: std::collections::VecDeque<hrx::Completion> = Default::default();
    for _ in 0..submissions {
        if in_flight.len() == flights
            && let Some(oldest) = in_flight.pop_front()
        {
            oldest.wait()?;
        }
        in_flight.push_back(graph.submit()?);
    }
    for completion in in_flight {
        completion.wait()?;
    }
    Ok(())
}
