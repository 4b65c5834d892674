//! Committed traces and their expected verdicts (data-driven).
//!
//! `data/` holds small traces written by earlier versions of the trace format, named after
//! the format version that wrote them (`hazards-v1.0.hrxt` is format 1.0). When the format
//! changes, the old files stay as previous-version fixtures and new ones are generated next
//! to them with `cargo test -p hrx-replay --test replay -- --ignored generate_fixtures`
//! (then add them to [`FIXTURES`]). A fixture that stops replaying with its expected exit
//! code means the reader or replay broke compatibility.

use crate::common::*;
use hrx::{RuntimeOptions, TraceDigests};
use hrx_capture::format::FormatVersion;
use hrx_capture::{FileSink, Recorder, RecorderOptions};
use hrx_replay::{ReplayOptions, replay_file};
use std::path::PathBuf;

/// A committed trace, the options to replay it with, and the expected exit code.
type Fixture = (&'static str, fn() -> ReplayOptions, i32);

const FIXTURES: &[Fixture] = &[
    ("hazards-v1.0.hrxt", ReplayOptions::default, 0),
    ("pipeline-faults-v1.0.hrxt", ReplayOptions::default, 0),
    (
        "pipeline-faults-v1.0.hrxt",
        || ReplayOptions::default().captured_fault(false),
        1,
    ),
];

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn committed_traces_replay_with_their_expected_verdicts() {
    for (name, options, expected) in FIXTURES {
        let report = replay_file(data(name), &options()).unwrap_or_else(|e| panic!("{name}: {e}"));
        println!("{}", report.to_text());
        assert_eq!(report.exit_code(), *expected, "{name}");
        assert!(report.trace.complete, "{name}");
        assert!(report.summary.outputs_compared > 0, "{name}");
    }
}

/// Writes the fixtures of the current format version into `tests/data/`.
#[test]
#[ignore = "writes the committed fixtures; run once per format version"]
fn generate_fixtures() {
    let version = FormatVersion::CURRENT;
    let suffix = format!("v{}.{}", version.major.0, version.minor.0);
    let write = |name: &str, options: RuntimeOptions, body: &dyn Fn(&hrx::Runtime)| {
        let path = data(&format!("{name}-{suffix}.hrxt"));
        let recorder = Recorder::with_sink(
            FileSink::create(&path).expect("create"),
            RecorderOptions::default(),
        )
        .expect("recorder");
        {
            let runtime = hrx::Runtime::new(options.recorder(recorder.clone())).expect("runtime");
            body(&runtime);
        }
        recorder.close().expect("close");
        println!("wrote {}", path.display());
    };
    let options = || {
        RuntimeOptions::sim()
            .trace_contents(true)
            .trace_digests(TraceDigests::All)
    };
    write("hazards", options(), &|rt| {
        hrx_workloads::run_hazards(rt).expect("hazards");
    });
    let frames: Vec<_> = (0..4).map(|seed| synthetic(32, 20, seed)).collect();
    let fault = "kernel=hrx_sobel#2:device-lost".parse().expect("fault");
    write("pipeline-faults", options().fault(fault), &|rt| {
        assert!(run_pipeline(rt, &frames).is_err());
    });
}
