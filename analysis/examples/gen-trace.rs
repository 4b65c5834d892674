//! Writes a synthetic trace of about `--regions N` region executions (the four-region
//! pipeline of `hrx_analysis::synthetic`, submitted N/4 times) through hrx-capture's
//! recorder, for the reader benchmarks (`scripts/bench-readers.sh`) and for trying readers
//! by hand: `--op-timings` adds the compute regions' operation timings
//! (`synthetic::with_op_timings`), `--fail-at N` fails submission N's compute region,
//! `--kernel-added NAME` adds a kernel to the compute region (`synthetic::with_kernel_added`).
//!
//! ```text
//! cargo run --release -p hrx-analysis --example gen-trace -- --regions 10000000 -o big.hrxt
//! ```

use hrx_analysis::synthetic::{PipelineSpec, pipeline, with_kernel_added, with_op_timings};
use hrx_capture::{Record, Recorder, RecorderOptions};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let mut regions: u64 = 100_000;
    let mut out = None;
    let mut op_timings = false;
    let mut fail_at = None;
    let mut added: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--op-timings" {
            op_timings = true;
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--kernel-added", Some(name)) => added = Some(name),
            ("--fail-at", Some(n)) => match n.parse() {
                Ok(n) => fail_at = Some(n),
                Err(_) => return usage(&format!("--fail-at {n}: not a submission")),
            },
            ("--regions", Some(n)) => match n.replace('_', "").parse() {
                Ok(n) => regions = n,
                Err(_) => return usage(&format!("--regions {n}: not a count")),
            },
            ("-o", Some(path)) => out = Some(path),
            _ => return usage(&format!("unexpected argument {arg}")),
        }
    }
    let Some(out) = out else {
        return usage("-o FILE is required");
    };
    let options = RecorderOptions {
        backend: "sim".into(),
        device: "synthetic".into(),
        // The generator outruns the writer thread: wait for room instead of dropping.
        thread_buffer_bytes: 16 << 20,
        full_buffer_wait: Duration::from_secs(600),
        ..RecorderOptions::default()
    };
    let recorder = match Recorder::create(&out, options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let spec = PipelineSpec {
        fail_at,
        ..PipelineSpec::ops(regions)
    };
    let mut records: Box<dyn Iterator<Item = Record>> = if op_timings {
        Box::new(with_op_timings(pipeline(spec)))
    } else {
        Box::new(pipeline(spec))
    };
    if let Some(name) = &added {
        records = Box::new(with_kernel_added(records, name));
    }
    for record in records {
        // The recorder writes its own session start and end.
        if !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&record);
        }
    }
    match recorder.close() {
        Ok(summary) if summary.dropped_records == 0 => ExitCode::SUCCESS,
        Ok(summary) => {
            eprintln!("error: {} records dropped", summary.dropped_records);
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "error: {problem}\nusage: gen-trace [--regions N] [--op-timings] [--fail-at N] [--kernel-added NAME] -o FILE"
    );
    ExitCode::from(2)
}
