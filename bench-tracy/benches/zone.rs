//! A timed zone on the recording thread: hrx's recorder against Tracy's client, in one
//! process, paired (issue 17, point 4: hrx at most 0.8x a Tracy zone's CPU cost).
//!
//! ```text
//! cd bench-tracy && cargo bench --bench zone                              # 3000 rounds
//! cd bench-tracy && HRX_BENCH_ROUNDS=500 cargo bench --bench zone
//! ```
//!
//! Cases, each a burst of 1024 zones on the bench's thread:
//!
//! - `hrx`: two reads of the session clock (`Recorder::now_ns`: the TSC where invariant) and
//!   one `RegionTiming` recorded into a file-backed recorder (its writer thread compresses and
//!   writes meanwhile).
//! - `tracy`: `tracy_client::span!` and its drop: two timestamps and two queue items (zone
//!   begin, zone end) in Tracy's per-thread queue.
//! - `hrx_monotonic`: `hrx`'s zone on two `CLOCK_MONOTONIC` reads (the clock before the TSC
//!   one, in the same process: the clock is chosen once per process).
//! - `clock_hrx`, `clock_rdtsc`, `clock_instant`: the two timestamps alone, from hrx's clock,
//!   a bare `rdtsc` (what Tracy reads) and `Instant::now`.
//!
//! Paired: every round runs one burst of every case, in an order rotated each round, each
//! burst followed by a 200 µs pause (the writer thread and Tracy's worker drain meanwhile;
//! neither is counted). A burst's cost is its thread CPU time (`CLOCK_THREAD_CPUTIME_ID`:
//! what the recording thread spent, not the time it sat preempted on a loaded machine) and
//! its wall time. The figures are the medians over rounds of ns per zone, and the median over
//! rounds of each round's ratio against `tracy` (both sides of a ratio ran within the same
//! round, under the same load).
//!
//! Tracy's data must be drained, as a connected profiler drains it: without a server its
//! client (built without `ondemand`) keeps every event queued in memory until one connects,
//! and with `ondemand` it records nothing at all. No Tracy server can be built here, so this
//! bench runs a minimal one in a thread: it connects to the client's port on loopback (a free
//! port: the bench runs itself again with `TRACY_PORT` set, which the client reads before
//! `main`), completes Tracy's handshake (`TracyPrf`,
//! protocol version 82 of the client bundled with tracy-client 0.19.0 / tracy-client-sys
//! 0.30.1), then reads and discards everything the client sends. So the client's worker thread
//! dequeues, LZ4-compresses and sends every event, as with a real server; what is not measured
//! is a server's own CPU (which the real one spends in another process). At the end the
//! server closes the connection, which lets the client's exit handler finish.

use hrx_capture::schema::{Record, RegionIndex, RegionTiming, RuntimeId, SubmissionIndex};
use hrx_capture::{Recorder, RecorderOptions};
use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// `ProtocolVersion` in the bundled `TracyProtocol.hpp`.
const TRACY_PROTOCOL: u32 = 82;
/// Zones per burst.
const BURST: u64 = 1024;

/// Connects to the Tracy client on `port` as its server would and discards what it sends.
/// Returns a handle to the connection, to close it at the end.
fn start_drain_server(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut socket = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(socket) => break socket,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot reach the Tracy client: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    socket.write_all(b"TracyPrf").expect("handshake");
    socket
        .write_all(&TRACY_PROTOCOL.to_le_bytes())
        .expect("handshake");
    let mut status = [0u8; 1];
    socket.read_exact(&mut status).expect("handshake status");
    assert_eq!(status[0], 1, "Tracy refused the handshake (status {})", status[0]);
    let handle = socket.try_clone().expect("socket clone");
    std::thread::Builder::new()
        .name("tracy-drain".into())
        .spawn(move || {
            let mut sink = vec![0u8; 1 << 20];
            while let Ok(n) = socket.read(&mut sink) {
                if n == 0 {
                    break;
                }
            }
        })
        .expect("server thread");
    handle
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// This thread's CPU time, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// ns per zone of one burst: (thread CPU, wall).
fn burst(zone: &mut dyn FnMut(u64), next: &mut u64) -> (f64, f64) {
    let cpu = thread_cpu_ns();
    let wall = Instant::now();
    for _ in 0..BURST {
        zone(*next);
        *next += 1;
    }
    let wall = wall.elapsed().as_nanos() as f64;
    let cpu = thread_cpu_ns().saturating_sub(cpu) as f64;
    std::thread::sleep(Duration::from_micros(200));
    (cpu / BURST as f64, wall / BURST as f64)
}

fn quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let rounds: usize = std::env::var("HRX_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    // Tracy's profiler object is built before `main` and reads `TRACY_PORT` then: run again
    // with a free port (a stale process of an earlier run may still hold the default one).
    let Some(port) = std::env::var("TRACY_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    else {
        let status = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(std::env::args_os().skip(1))
            .env("TRACY_PORT", free_port().to_string())
            .status()
            .expect("run again with TRACY_PORT");
        std::process::exit(status.code().unwrap_or(1));
    };
    let client = tracy_client::Client::start();
    let server = start_drain_server(port);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !tracy_client::Client::is_connected() {
        assert!(Instant::now() < deadline, "the Tracy client never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::create(dir.path().join("zone.hrxt"), RecorderOptions::default())
        .expect("recorder");

    let timing = |i: u64, start_ns: u64, end_ns: u64| {
        Record::RegionTiming(RegionTiming {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(i),
            region: RegionIndex(0),
            start_ns,
            end_ns,
            device: None,
        })
    };
    let mut hrx = |i: u64| {
        let start_ns = recorder.now_ns();
        black_box(i);
        recorder.record(&timing(i, start_ns, recorder.now_ns()));
    };
    let mut tracy = |i: u64| {
        let span = tracy_client::span!("zone");
        black_box(i);
        drop(span);
    };
    let mut hrx_monotonic = |i: u64| {
        let start_ns = hrx_capture::clock::monotonic_ns();
        black_box(i);
        recorder.record(&timing(i, start_ns, hrx_capture::clock::monotonic_ns()));
    };
    let mut clock_hrx = |i: u64| {
        black_box(hrx_capture::clock::now_ns());
        black_box(i);
        black_box(hrx_capture::clock::now_ns());
    };
    let mut clock_rdtsc = |i: u64| {
        // SAFETY: RDTSC exists on every x86-64 CPU and only reads the counter.
        black_box(unsafe { core::arch::x86_64::_rdtsc() });
        black_box(i);
        // SAFETY: as above.
        black_box(unsafe { core::arch::x86_64::_rdtsc() });
    };
    let mut clock_instant = |i: u64| {
        black_box(Instant::now());
        black_box(i);
        black_box(Instant::now());
    };
    let mut cases: [(&str, &mut dyn FnMut(u64)); 6] = [
        ("hrx", &mut hrx),
        ("tracy", &mut tracy),
        ("hrx_monotonic", &mut hrx_monotonic),
        ("clock_hrx", &mut clock_hrx),
        ("clock_rdtsc", &mut clock_rdtsc),
        ("clock_instant", &mut clock_instant),
    ];
    let n = cases.len();
    let mut next = 0u64;
    // Warm-up: every case's code and the rings' pages.
    for _ in 0..20 {
        for (_, zone) in cases.iter_mut() {
            burst(*zone, &mut next);
        }
    }
    let mut cpu = vec![Vec::with_capacity(rounds); n];
    let mut wall = vec![Vec::with_capacity(rounds); n];
    let started = Instant::now();
    for round in 0..rounds {
        for k in 0..n {
            let case = (round + k) % n;
            let (c, w) = burst(cases[case].1, &mut next);
            cpu[case].push(c);
            wall[case].push(w);
        }
    }
    let elapsed = started.elapsed();
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0, "the recorder dropped records");

    let tracy_index = 1;
    println!(
        "zone: {rounds} rounds x {n} cases x {BURST} zones in {:.1} s; hrx clock {}; \
         {} records written ({} bytes)",
        elapsed.as_secs_f64(),
        hrx_capture::clock::source().name(),
        summary.records,
        summary.bytes
    );
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11}",
        "case", "cpu p25", "cpu p50", "cpu p75", "wall p50", "cpu ratio", "wall ratio"
    );
    for (k, (name, _)) in cases.iter().enumerate() {
        let ratio = |samples: &[Vec<f64>]| {
            let ratios: Vec<f64> = samples[k]
                .iter()
                .zip(&samples[tracy_index])
                .map(|(a, b)| a / b)
                .collect();
            quantile(&ratios, 0.5)
        };
        println!(
            "{:<14} {:>9.2} {:>9.2} {:>9.2} {:>10.2} {:>9.3}x {:>10.3}x",
            name,
            quantile(&cpu[k], 0.25),
            quantile(&cpu[k], 0.5),
            quantile(&cpu[k], 0.75),
            quantile(&wall[k], 0.5),
            ratio(&cpu),
            ratio(&wall)
        );
    }
    println!("(ns per zone; ratios: the median over rounds of the case against tracy in the same round)");
    // Closing the connection lets Tracy's exit handler finish (it waits for its server).
    let _ = server.shutdown(Shutdown::Both);
    drop(client);
}
