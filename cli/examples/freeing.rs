//! Allocates, lets go and allocates again, as a program staying within a device's memory
//! does: for the tests of `hrx-trace replay` under the software device's memory limit
//! (`HRX_SIM_MEMORY`; built by `cargo test` with the other examples, which the tests find
//! beside their own executable).
//!
//! `freeing ROUNDS MIB`: one runtime on the software device (so `HRX_TRACE` and the other
//! variables apply); each round allocates a GPU-local buffer of MIB MiB, writes 256 bytes of
//! the round's number (counting 1 to 255, then again) into its head, copies the head into a
//! 256-byte host-visible buffer (whose digest a trace takes), waits, and lets go of both
//! buffers and the graph before the next round. So it holds one round's device memory at a time: under
//! `HRX_SIM_MEMORY=64M`, rounds of 40 MiB run one after the other where two at once would
//! not fit. Prints `ROUNDS rounds of MIB MiB, one at a time` and exits 0; errors print one
//! line and exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("freeing: {error}");
        std::process::exit(1);
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: freeing ROUNDS MIB";
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{usage}");
        return Ok(());
    }
    let number = |a: &String| {
        a.parse::<usize>()
            .map_err(|_| format!("{a:?} is not a whole number; {usage}"))
    };
    let [rounds, mib] = args.as_slice() else {
        return Err(usage.into());
    };
    let (rounds, mib) = (number(rounds)?, number(mib)?);
    if mib == 0 {
        return Err(format!("MIB must be at least 1; {usage}").into());
    }
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    for round in 0..rounds {
        let big = runtime.buffer(mib << 20, Placement::GpuLocal)?;
        let out = runtime.buffer(256, Placement::HostVisible)?;
        big.write(0, &[(round % 255 + 1) as u8; 256])?;
        let mut graph = runtime.graph();
        graph.copy(out.whole(), big.view(0..256)?)?;
        graph.prepare()?.submit()?.wait()?;
        // The graph, `big` and `out` are let go here, before the next round allocates.
    }
    println!("{rounds} rounds of {mib} MiB, one at a time");
    Ok(())
}
