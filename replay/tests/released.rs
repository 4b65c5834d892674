//! Replays of a program that let go of its buffers to stay within the software device's
//! memory, under that memory. `HRX_SIM_MEMORY` is read once by a process, so this is a
//! binary of its own whose one test sets it before any runtime starts (the other replay
//! tests, in `tests/replay.rs`, run without a limit).

use hrx::{Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::Record;
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use hrx_replay::{ReplayError, ReplayOptions, Report, replay, replay_file};
use std::path::Path;

/// Each round's GPU-local buffer: one fits the limit, two do not.
const ROUND_BYTES: usize = 40 << 20;
const LIMIT: &str = "64M";
const ROUNDS: usize = 3;

/// Records into `path` a program that, each round, allocates a buffer of [`ROUND_BYTES`],
/// writes its head, copies the head into a host-visible buffer (whose digest the trace
/// takes), waits, and lets go of the graph and both buffers before the next round.
fn record_rounds(path: &Path) {
    let recorder = Recorder::create(path, RecorderOptions::default()).expect("recorder");
    {
        let runtime =
            Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).expect("runtime");
        for round in 0..ROUNDS {
            let big = (runtime.buffer(ROUND_BYTES, Placement::GpuLocal))
                .expect("one round fits the limit");
            let out = runtime.buffer(256, Placement::HostVisible).expect("out");
            big.write(0, &[round as u8 + 1; 256]).expect("write");
            let mut graph = runtime.graph();
            graph
                .copy(out.whole(), big.view(0..256).expect("view"))
                .expect("copy");
            let prepared = graph.prepare().expect("prepare");
            prepared.submit().expect("submit").wait().expect("copied");
        }
    }
    recorder.close().expect("close");
}

fn replayed(what: &str, report: Result<Report, ReplayError>) {
    let report = report.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(report.exit_code(), 0, "{what}: {}", report.to_text());
    // Each round's host write reached its copy, in a buffer allocated after the previous
    // round's was let go.
    assert_eq!(
        report.summary.outputs_matched,
        ROUNDS,
        "{what}: {}",
        report.to_text()
    );
}

/// A program allocating 40 MiB, letting it go, and allocating again runs under
/// `HRX_SIM_MEMORY=64M`, and replays under it: whole (its warm-up and two repeats one after
/// the other, each operation timed on its own), and streamed in chunks of 1, 2 and the
/// default number of submissions. Without the trace's releases (`BufferDropped`) the replay
/// holds every buffer the trace created until its end: out of device memory, as every
/// replay was before it let go of its buffers.
#[test]
fn a_program_that_frees_buffers_to_fit_replays_within_the_same_memory() {
    // SAFETY: set before this binary's one test starts a runtime; nothing else in the
    // process reads or writes the environment meanwhile.
    unsafe { std::env::set_var("HRX_SIM_MEMORY", LIMIT) };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rounds.hrxt");
    record_rounds(&path);
    let trace = hrx_capture::read_all(&path).expect("read");
    let releases = (trace.records.iter())
        .filter(|r| matches!(r, Record::BufferDropped(_)))
        .count();
    assert_eq!(releases, 2 * ROUNDS, "each round's two buffers are let go");

    replayed("whole", replay(&trace, &ReplayOptions::default().repeat(2)));
    let isolated = ReplayOptions::default().per_op(true).isolated(true);
    replayed("whole, --per-op --isolated", replay(&trace, &isolated));
    for chunk in [1, 2, hrx_replay::DEFAULT_CHUNK_SUBMISSIONS] {
        let options = ReplayOptions::default().chunk_submissions(chunk);
        replayed(&format!("chunks of {chunk}"), replay_file(&path, &options));
    }

    let held = without_releases(&trace);
    match replay(&held, &ReplayOptions::default()) {
        Err(ReplayError::Runtime {
            source: hrx::Error::Device(hrx::DeviceError::OutOfMemory(_)),
            ..
        }) => {}
        other => panic!("without releases: {:?}", other.map(|r| r.to_text())),
    }
}

/// `trace` without its `BufferDropped` records.
fn without_releases(trace: &Trace) -> Trace {
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    for record in &trace.records {
        match record {
            Record::SessionStart(_) | Record::SessionEnd(_) | Record::BufferDropped(_) => {}
            Record::Blob(blob) => {
                recorder.intern_blob(&blob.bytes).expect("blob");
            }
            other => recorder.record(other),
        }
    }
    recorder.close().expect("close");
    Trace::from_bytes(&sink.contents()).expect("read back")
}
