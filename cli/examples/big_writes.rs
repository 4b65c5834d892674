//! Break-it program: `big_writes ITERATIONS MODE [BYTES] [SLEEP_US]` writes a host-visible
//! buffer of BYTES (default 1 MiB) ITERATIONS times with new contents, on the software device.
//! MODE: `read` (a graph uploads it and downloads a digest each time), `noread` (nothing
//! reads it), `mixed` (two buffers, one never read, written first each iteration, then one
//! read), `idle` (written once, never read, then the program records submissions of a fill
//! for ITERATIONS times without writing again; `idle_term`: the same, raising SIGTERM once the
//! trace writer has stored the write). Prints the elapsed time.

use hrx::{Placement, Runtime, RuntimeOptions};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() {
    if let Err(error) = run() {
        eprintln!("big_writes: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let iterations: u64 = args.first().ok_or("usage")?.parse()?;
    let mode = args.get(1).ok_or("usage")?.clone();
    let bytes: usize = args.get(2).map_or(Ok(1 << 20), |a| a.parse())?;
    let sleep_us: u64 = args.get(3).map_or(Ok(0), |a| a.parse())?;
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let staging = runtime.buffer(bytes, Placement::HostVisible)?;
    let never = runtime.buffer(bytes, Placement::HostVisible)?;
    let device = runtime.buffer(bytes, Placement::GpuLocal)?;
    let out = runtime.buffer(4096, Placement::HostVisible)?;
    let mut graph = runtime.graph();
    graph.copy(device.whole(), staging.whole())?;
    graph.copy(out.whole(), device.view(0..4096)?)?;
    let graph = graph.prepare()?;
    let mut fill = runtime.graph();
    fill.fill(out.whole(), 3)?;
    let fill = fill.prepare()?;
    let mut frame = vec![0u8; bytes];
    let start = Instant::now();
    if mode == "idle" || mode == "idle_term" {
        never.write(0, &frame)?;
    }
    let (recorded, first_write) = (hrx_capture::current(), xxhash_rust::xxh3::xxh3_64(&frame));
    for i in 0..iterations {
        for (j, chunk) in frame.chunks_mut(8).enumerate() {
            chunk[0] = (i as u8).wrapping_add(j as u8);
            if chunk.len() > 1 {
                chunk[1] = (i >> 8) as u8;
            }
        }
        match mode.as_str() {
            "read" => {
                staging.write(0, &frame)?;
                graph.submit()?.wait()?;
            }
            "noread" => staging.write(0, &frame)?,
            "mixed" => {
                never.write(0, &frame)?;
                frame[0] ^= 0x55;
                staging.write(0, &frame)?;
                graph.submit()?.wait()?;
            }
            "idle" => fill.submit()?.wait()?,
            "idle_term" => {
                fill.submit()?.wait()?;
                // Once the trace writer stored the write (no region read the buffer, nothing
                // flushed): a wait for an event, not a time, so a loaded machine cannot make
                // the signal come first.
                if recorded.as_ref().is_none_or(|r| r.blob_stored(first_write)) {
                    // SAFETY: raising a signal.
                    unsafe { libc::raise(libc::SIGTERM) };
                }
            }
            _ => return Err("MODE: read, noread, mixed or idle".into()),
        }
        if sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(sleep_us));
        }
    }
    println!("{iterations} iterations {mode} in {:?}", start.elapsed());
    Ok(())
}
