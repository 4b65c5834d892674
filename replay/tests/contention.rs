//! Lossless recording under contention: two threads submit a small host-visible graph while
//! two busy-loop processes compete for the cores; no record is lost and the trace replays
//! with exit 0.
//!
//! `HRX_STRESS_SUBMISSIONS` sets the number of submissions (both threads together). The
//! default, 100 000, takes about 15 s on CI's two loaded cores; RELIABILITY.md says
//! what a larger count needs. The threads record into 16 KiB buffers (not 256 KiB), so the writer falls
//! behind and buffers are handed over on the recording threads many times even at the CI
//! count.

use crate::common::replay_with;
use hrx::{Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::Record;
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use hrx_replay::ReplayOptions;
use std::process::{Child, Command};

/// A process spinning on one core until dropped.
struct BusyLoop(Child);

impl BusyLoop {
    fn start() -> BusyLoop {
        BusyLoop(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh"),
        )
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_threads_under_contention_lose_nothing_and_replay() {
    let submissions: u64 = std::env::var("HRX_STRESS_SUBMISSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let sink = MemorySink::new();
    let options = RecorderOptions {
        thread_buffer_bytes: 16 << 10,
        ..RecorderOptions::default()
    };
    let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
    {
        let _busy = [BusyLoop::start(), BusyLoop::start()];
        let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let rt = &rt;
                s.spawn(move || {
                    let buffer = rt.buffer(256, Placement::HostVisible).unwrap();
                    let mut graph = rt.graph();
                    graph.fill(buffer.whole(), t + 1).unwrap();
                    let graph = graph.prepare().unwrap();
                    for _ in 0..submissions / 2 {
                        graph.submit().unwrap().wait().unwrap();
                    }
                });
            }
        });
    }
    let summary = recorder.close().unwrap();
    assert_eq!(summary.dropped_records, 0);
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
    assert!(trace.recovery.lost.is_none(), "{}", trace.recovery.lost);
    println!("recorder waits: {:?}", trace.recovery.waits);
    let count = |f: fn(&Record) -> bool| trace.records.iter().filter(|r| f(r)).count() as u64;
    let expected = submissions / 2 * 2;
    assert_eq!(count(|r| matches!(r, Record::Submit(_))), expected);
    assert_eq!(count(|r| matches!(r, Record::SubmissionDone(_))), expected);
    assert_eq!(count(|r| matches!(r, Record::RegionTiming(_))), expected);
    assert_eq!(count(|r| matches!(r, Record::OutputDigest(_))), expected);
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
}
