//! Runs the viewer on a trace, or writes a generated one to look at.
//!
//! ```text
//! cargo run -p hrx-tui --example view -- TRACE
//! cargo run -p hrx-tui --example view -- --write OUT [OPS] [--fail]
//! ```
use hrx_capture::{Recorder, RecorderOptions};
use hrx_tui::state::synthetic::{PipelineSpec, pipeline};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--write") if args.len() >= 2 => write(&args[1..]),
        Some(path) if !path.starts_with("--") => {
            hrx_tui::run(Path::new(path), false).map_err(|e| e.to_string())
        }
        _ => Err("usage: view TRACE | view --write OUT [OPS] [--fail]".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write(args: &[String]) -> Result<(), String> {
    let ops = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(24);
    let mut spec = PipelineSpec::ops(ops);
    if args.iter().any(|a| a == "--fail") {
        spec.busy_every = Some(3);
        spec.fail_at = Some(spec.submissions.saturating_sub(2));
    }
    let options = RecorderOptions {
        full_buffer_wait: std::time::Duration::from_secs(5),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(&args[0], options).map_err(|e| e.to_string())?;
    for record in pipeline(spec) {
        recorder.record(&record);
    }
    recorder.close().map_err(|e| e.to_string())?;
    Ok(())
}
