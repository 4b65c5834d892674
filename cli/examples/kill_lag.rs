//! Reliability benchmark: how much of a recording a SIGKILL loses, in milliseconds.
//!
//! `kill_lag HRX_TRACE_BINARY PHOTO [KILLS] [SEED]` records `--workload pipeline` and kills it
//! with SIGKILL at KILLS (default 100) random instants in its first second; for each kill that
//! lands while the pipeline runs (a `Submit` recovered, at least 400 ms after the session
//! base) it prints how much older than the kill the newest recovered record is, then the
//! median, 90th percentile and maximum. Every timed record carries a host time relative to
//! `SessionStart::monotonic_base_ns` (`CLOCK_MONOTONIC`), the clock read just before the kill.
//! The writer flushes every 100 ms, so on an idle machine the lag should stay near that;
//! a loaded machine adds its scheduling delays, which is why this is a benchmark
//! (`scripts/reliability-kill.sh`, figures in RELIABILITY.md) and the kill test checks
//! structure instead.

use hrx_capture::Record;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `CLOCK_MONOTONIC` in ns, the clock of `SessionStart::monotonic_base_ns`.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A record's host time (ns since the session base), where it has one.
fn host_time_ns(record: &Record) -> Option<u64> {
    let value = serde_json::to_value(record).ok()?;
    let (_, body) = value.as_object()?.iter().next()?;
    let body = body.get("timing").unwrap_or(body);
    ["end_ns", "time_ns", "host_ns"]
        .iter()
        .find_map(|key| body.get(key)?.as_u64())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(binary), Some(photo)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: kill_lag HRX_TRACE_BINARY PHOTO [KILLS] [SEED]");
        std::process::exit(2);
    };
    let kills: u64 = args.get(3).map_or(100, |k| k.parse().expect("KILLS"));
    let mut rng = args
        .get(4)
        .map_or(monotonic_ns() | 1, |s| s.parse().expect("SEED"));
    println!("seed {rng}");
    let dir = std::env::temp_dir().join(format!("kill-lag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join("k.hrxt");
    let mut lags_ms = Vec::new();
    for _ in 0..kills {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        let delay_ms = rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % 1000;
        let mut child = Command::new(binary)
            .args(["record", "--workload", "pipeline", "--frames", "1000000"])
            .args(["--max-width", "160", "--input", photo, "-o"])
            .arg(&path)
            .env_remove("HRX_TRACE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start hrx-trace");
        std::thread::sleep(Duration::from_millis(delay_ms));
        let kill_ns = monotonic_ns();
        child.kill().expect("kill");
        child.wait().expect("wait");
        let Ok(trace) = hrx_capture::read_all(&path) else {
            continue; // killed before the first write
        };
        let _ = std::fs::remove_file(&path);
        let Some(Record::SessionStart(session)) = trace.records.first() else {
            continue;
        };
        let base = session.monotonic_base_ns;
        let running = trace.records.iter().any(|r| matches!(r, Record::Submit(_)));
        if !running || kill_ns.saturating_sub(base) < 400_000_000 {
            continue;
        }
        let Some(newest) = trace.records.iter().filter_map(host_time_ns).max() else {
            continue;
        };
        let lag_ms = kill_ns.saturating_sub(base + newest) as f64 / 1e6;
        println!("kill at {delay_ms} ms: newest record {lag_ms:.1} ms before the kill");
        lags_ms.push(lag_ms);
    }
    let _ = std::fs::remove_dir_all(&dir);
    lags_ms.sort_by(f64::total_cmp);
    let at = |q: usize| lags_ms.get(lags_ms.len() * q / 100).copied().unwrap_or(0.0);
    println!(
        "{kills} kills, {} while the pipeline ran: newest record {:.1} ms (median) / {:.1} ms \
         (90th percentile) / {:.1} ms (max) before the kill",
        lags_ms.len(),
        at(50),
        at(90),
        lags_ms.last().copied().unwrap_or(0.0)
    );
}
