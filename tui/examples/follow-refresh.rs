//! Measures one `view --follow` refresh of a live trace of N regions: the read of the
//! appended blocks ([`TraceTail::read_appended`]) and the model's publish
//! ([`TraceTail::publish`]: what came after the settled submissions finished, in place)
//! timed separately, in wall clock and in this thread's CPU time, with what the publish
//! finished and the process's resident size; then one refresh that finishes the whole model
//! (what a record changing the settled part costs, [`TraceTail::unsettle`]). BENCHMARKS.md,
//! "Timeline at scale", sessions 15 and 16.
//!
//! ```text
//! cargo run --release -p hrx-tui --example follow-refresh -- --regions 1000000 \
//!     [--append-records 4000] [--refreshes 5]
//! ```
//!
//! The trace (the synthetic pipeline through the real recorder, in blocks of 32 KiB) is
//! generated in memory; all of it but the last `refreshes` windows of at least
//! `append-records` records each (and its closing block) is written to a temporary file and
//! opened with [`TraceTail::open`]; then each window is appended and read as one refresh.
//!
//! Linux only for the figures: CPU time is the thread's CPU clock, resident sizes
//! `/proc/self/status` (`VmHWM` reset through `/proc/self/clear_refs` before the refreshes,
//! and again before the whole one).

use hrx_capture::{MappedTrace, MemorySink, Recorder, RecorderOptions};
use hrx_tui::follow::TraceTail;
use hrx_tui::state::synthetic::{PipelineSpec, pipeline};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let mut regions: u64 = 100_000;
    let mut append_records: u64 = 4_000;
    let mut refreshes: usize = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().map(|v| v.replace('_', ""));
        let parsed = value.as_deref().and_then(|v| v.parse::<u64>().ok());
        match (arg.as_str(), parsed) {
            ("--regions", Some(n)) => regions = n,
            ("--append-records", Some(n)) => append_records = n,
            ("--refreshes", Some(n)) => refreshes = n.max(1) as usize,
            _ => {
                eprintln!(
                    "usage: follow-refresh [--regions N] [--append-records R] [--refreshes K]"
                );
                return ExitCode::FAILURE;
            }
        }
    }
    match measure(regions, append_records, refreshes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn measure(regions: u64, append_records: u64, refreshes: usize) -> Result<(), String> {
    let generated = Instant::now();
    let bytes = generate(regions)?;
    let mapped = MappedTrace::from_vec(bytes.clone()).map_err(|e| e.to_string())?;
    let blocks = mapped.blocks();
    // The windows, from the end: the closing block (the session end) is never appended, so
    // the trace stays live.
    let mut cuts = vec![blocks[blocks.len() - 1].offset as usize];
    let mut i = blocks.len() - 1;
    while cuts.len() <= refreshes && i > 1 {
        let mut records = 0u64;
        while records < append_records && i > 1 {
            i -= 1;
            records += u64::from(blocks[i].header.record_count);
        }
        cuts.push(blocks[i].offset as usize);
    }
    cuts.reverse();
    println!(
        "regions {regions}: {} bytes, {} blocks, generated in {:.1} s",
        bytes.len(),
        blocks.len(),
        generated.elapsed().as_secs_f64()
    );
    drop(mapped);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("live.hrxt");
    std::fs::write(&path, &bytes[..cuts[0]]).map_err(|e| e.to_string())?;
    // Only what is appended stays in memory (offsets below are from `cuts[0]`).
    let bytes = bytes[cuts[0]..].to_vec();
    let cuts: Vec<usize> = cuts.iter().map(|c| c - cuts[0]).collect();
    let (opened, cpu) = (Instant::now(), thread_cpu());
    let mut tail = TraceTail::open(&path).map_err(|e| e.to_string())?;
    let model = tail.model();
    println!(
        "open: {} records, {} spans, {:.2} s wall, {:.2} s CPU, RSS {} MiB",
        model.info().records,
        model.span_count(),
        opened.elapsed().as_secs_f64(),
        (thread_cpu() - cpu).as_secs_f64(),
        status_kib("VmRSS") / 1024
    );
    let mut shown = model.info().records;
    reset_peak();
    println!(
        "refresh | records | read wall | read CPU | publish wall | publish CPU | \
         submissions finished | spans finished | settled"
    );
    let (mut read_cpus, mut publish_cpus) = (Vec::new(), Vec::new());
    for (k, pair) in cuts.windows(2).enumerate() {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| e.to_string())?;
        file.write_all(&bytes[pair[0]..pair[1]])
            .map_err(|e| e.to_string())?;
        drop(file);
        let (wall, cpu) = (Instant::now(), thread_cpu());
        let new = tail.read_appended().map_err(|e| e.to_string())?;
        let (read_wall, read_cpu) = (wall.elapsed(), thread_cpu() - cpu);
        let (wall, cpu) = (Instant::now(), thread_cpu());
        let records = tail.publish().info().records;
        let (publish_wall, publish_cpu) = (wall.elapsed(), thread_cpu() - cpu);
        assert!(new, "a window appends records");
        let finished = tail.last_publish();
        println!(
            "{k} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {}{} | {} | {}",
            records - shown,
            ms(read_wall),
            ms(read_cpu),
            ms(publish_wall),
            ms(publish_cpu),
            finished.submissions,
            if finished.whole { " (whole)" } else { "" },
            finished.spans,
            finished.settled,
        );
        shown = records;
        read_cpus.push(read_cpu);
        publish_cpus.push(publish_cpu);
    }
    read_cpus.sort();
    publish_cpus.sort();
    println!(
        "median CPU per refresh: read {:.1} ms, publish {:.1} ms; RSS {} MiB, peak during \
         the refreshes {} MiB",
        ms(read_cpus[read_cpus.len() / 2]),
        ms(publish_cpus[publish_cpus.len() / 2]),
        status_kib("VmRSS") / 1024,
        status_kib("VmHWM") / 1024
    );
    reset_peak();
    tail.unsettle();
    let (wall, cpu) = (Instant::now(), thread_cpu());
    tail.publish();
    let (whole_wall, whole_cpu) = (wall.elapsed(), thread_cpu() - cpu);
    println!(
        "a publish that finishes the whole model ({} spans): {:.1} ms wall, {:.1} ms CPU; \
         peak {} MiB",
        tail.last_publish().spans,
        ms(whole_wall),
        ms(whole_cpu),
        status_kib("VmHWM") / 1024
    );
    Ok(())
}

/// The pipeline of about `regions` regions through the recorder, in 32 KiB blocks.
fn generate(regions: u64) -> Result<Vec<u8>, String> {
    let sink = MemorySink::new();
    let options = RecorderOptions {
        block_bytes: 32 << 10,
        // Small hand-overs, so blocks stay near `block_bytes` (a hand-over is never split).
        thread_buffer_bytes: 64 << 10,
        full_buffer_wait: Duration::from_secs(600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::with_sink(sink.clone(), options).map_err(|e| e.to_string())?;
    for record in pipeline(PipelineSpec::ops(regions)) {
        recorder.record(&record);
    }
    recorder.close().map_err(|e| e.to_string())?;
    Ok(sink.contents())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A `/proc/self/status` field in KiB (zero where it cannot be read).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Resets the peak resident size (`VmHWM`) to the current one.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
