//! Opens a trace as a timeline would at scale: one pass building the per-lane span store
//! (`hrx_analysis::spans`), then one zoomed-out frame of coverage (every lane, 200 columns
//! over the whole trace) and one zoomed-in window of spans, printed as a summary. With
//! `--scan-only` it runs the same pass with no store, the baseline for BENCHMARKS.md.
//!
//! ```text
//! cargo run --release -p hrx-analysis --example span-store -- big.hrxt
//! /usr/bin/time -v target/release/examples/span-store --scan-only big.hrxt
//! ```

use hrx_analysis::{LaneRef, SpanStore, Visitor};
use std::path::Path;
use std::process::ExitCode;

struct Nothing;
impl Visitor for Nothing {}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (scan_only, path) = match args.as_slice() {
        [flag, path] if flag == "--scan-only" => (true, path),
        [path] => (false, path),
        _ => {
            eprintln!("usage: span-store [--scan-only] TRACE");
            return ExitCode::from(2);
        }
    };
    let path = Path::new(path);
    if scan_only {
        return match hrx_analysis::scan(path, &mut Nothing) {
            Ok(summary) => {
                println!("{} records", summary.records);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let (store, summary) = match SpanStore::build(path) {
        Ok(built) => built,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let end = (0..store.lanes() as u32)
        .filter_map(|l| {
            let lane = LaneRef(l);
            store
                .len(lane)
                .checked_sub(1)
                .and_then(|i| store.get(lane, i))
        })
        .map(|s| s.end_ns)
        .max()
        .unwrap_or(0);
    let mut spans = 0usize;
    let mut busy = 0f64;
    for l in 0..store.lanes() as u32 {
        let lane = LaneRef(l);
        spans += store.len(lane);
        busy += store
            .coverage(lane, store.origin_ns(), end + 1, 200)
            .iter()
            .sum::<f64>();
    }
    let mid = store.origin_ns() + (end - store.origin_ns()) / 2;
    let window: usize = (0..store.lanes() as u32)
        .map(|l| store.overlapping(LaneRef(l), mid, mid + 1_000_000).count())
        .sum();
    println!(
        "{} records, {spans} spans on {} lanes, {:.3} s busy, {window} spans in a 1 ms window",
        summary.records,
        store.lanes(),
        busy / 1e9
    );
    ExitCode::SUCCESS
}
