//! A timed zone on the recording thread: hrx's recorder against Tracy's client, in one
//! process (issue 17, point 4: hrx at most 0.8x a Tracy zone's CPU cost).
//!
//! ```text
//! cd bench-tracy && cargo bench --bench zone                             # the TSC clock
//! cd bench-tracy && HRX_TRACE_CLOCK=monotonic cargo bench --bench zone   # the old clock
//! ```
//!
//! - `zone/hrx`: two reads of the session clock and one `RegionTiming` recorded into a
//!   file-backed recorder (its writer thread compresses and writes meanwhile).
//! - `zone/tracy`: `tracy_client::span!` and its drop: two timestamps and two queue items
//!   (zone begin, zone end) in Tracy's per-thread queue.
//! - `clock/*`: one read of hrx's host clock, of `Instant::now` (the clock before the TSC
//!   one) and of `CLOCK_MONOTONIC`.
//!
//! Tracy's data must be drained, as a connected profiler drains it: without a server its
//! client (built without `ondemand`) keeps every event queued in memory until one connects,
//! and with `ondemand` it records nothing at all. No Tracy server can be built here, so this
//! bench runs a minimal one in a thread: it connects to the client's port (8086) on
//! loopback, completes Tracy's handshake (`TracyPrf`, protocol version 82 of the client
//! bundled with tracy-client 0.19.0 / tracy-client-sys 0.30.1), then reads and discards
//! everything the client sends. So the client's worker thread dequeues, LZ4-compresses and
//! sends every event, as with a real server; what is not measured is a server's own CPU
//! (which the real one spends in another process). `HRX_BENCH_TRACY_SERVER=none` skips the
//! server: Tracy's events then pile up in memory.
//!
//! Both zones run in bursts of 1024 with 200 µs pauses (the writer thread and Tracy's worker
//! drain in between, as `capture`'s `timed_zone`); only the bursts are timed.

use criterion::{Criterion, criterion_group, criterion_main};
use hrx_capture::schema::{Record, RegionIndex, RegionTiming, RuntimeId, SubmissionIndex};
use hrx_capture::{Recorder, RecorderOptions};
use std::hint::black_box;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Tracy's default data port.
const TRACY_PORT: u16 = 8086;
/// `ProtocolVersion` in the bundled `TracyProtocol.hpp`.
const TRACY_PROTOCOL: u32 = 82;

/// Connects to the Tracy client as its server would and discards what it sends.
fn start_drain_server() {
    std::thread::Builder::new()
        .name("tracy-drain".into())
        .spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut socket = loop {
                match std::net::TcpStream::connect(("127.0.0.1", TRACY_PORT)) {
                    Ok(socket) => break socket,
                    Err(e) if Instant::now() < deadline => {
                        let _ = e;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(e) => panic!("cannot connect to the Tracy client: {e}"),
                }
            };
            socket.write_all(b"TracyPrf").expect("handshake");
            socket
                .write_all(&TRACY_PROTOCOL.to_le_bytes())
                .expect("handshake");
            let mut status = [0u8; 1];
            socket.read_exact(&mut status).expect("handshake status");
            assert_eq!(status[0], 1, "Tracy refused the handshake (status {})", status[0]);
            let mut sink = vec![0u8; 1 << 20];
            let mut drained = 0u64;
            loop {
                match socket.read(&mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n as u64,
                }
            }
            eprintln!("tracy-drain: {drained} bytes drained");
        })
        .expect("server thread");
}

/// Runs `zone` in bursts of 1024 with 200 µs pauses; times only the bursts.
fn bursts(iterations: u64, mut zone: impl FnMut(u64)) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iterations;
    let mut i = 0u64;
    while left > 0 {
        let batch = left.min(1024);
        let started = Instant::now();
        for _ in 0..batch {
            zone(i);
            i += 1;
        }
        timed += started.elapsed();
        left -= batch;
        std::thread::sleep(Duration::from_micros(200));
    }
    timed
}

fn zones(c: &mut Criterion) {
    let client = tracy_client::Client::start();
    let serve = std::env::var("HRX_BENCH_TRACY_SERVER").map_or(true, |v| v != "none");
    if serve {
        start_drain_server();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !tracy_client::Client::is_connected() {
            assert!(Instant::now() < deadline, "the Tracy client never connected");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    eprintln!(
        "hrx clock: {:?}; Tracy server: {}",
        hrx_capture::clock::source(),
        if serve { "draining" } else { "none" }
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::create(dir.path().join("zone.hrxt"), RecorderOptions::default())
        .expect("recorder");

    let mut group = c.benchmark_group("zone");
    group.bench_function("hrx", |b| {
        b.iter_custom(|iterations| {
            bursts(iterations, |i| {
                let start_ns = recorder.now_ns();
                black_box(i);
                recorder.record(&Record::RegionTiming(RegionTiming {
                    runtime: RuntimeId(1),
                    submission: SubmissionIndex(i),
                    region: RegionIndex(0),
                    start_ns,
                    end_ns: recorder.now_ns(),
                    device: None,
                }));
            })
        })
    });
    group.bench_function("tracy", |b| {
        b.iter_custom(|iterations| {
            bursts(iterations, |i| {
                let span = tracy_client::span!("zone");
                black_box(i);
                drop(span);
            })
        })
    });
    group.finish();

    let mut group = c.benchmark_group("clock");
    group.bench_function("hrx", |b| b.iter(hrx_capture::clock::now_ns));
    group.bench_function("instant", |b| b.iter(Instant::now));
    group.bench_function("clock_monotonic", |b| {
        b.iter(hrx_capture::clock::monotonic_ns)
    });
    group.finish();

    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0);
    drop(client);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = zones
}
criterion_main!(benches);
