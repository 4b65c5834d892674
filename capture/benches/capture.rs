//! Instrumentation costs.
//!
//! ```text
//! cargo bench -p hrx-capture --bench capture
//! ```
//!
//! - `hook_off/gate`: a hook with tracing off: [`hrx_capture::enabled`] (one relaxed atomic
//!   load) and the untaken branch, as the process-wide gate is used.
//! - `hook_off/runtime`: the runtime's own form, a branch on its `Option<Recorder>` being
//!   `None` (what every hook in `hrx` does).
//! - `timing_record`: one `RegionTiming` recorded on the calling thread into a file-backed
//!   recorder (the background writer compresses and writes meanwhile).
//! - `timed_zone`: what a zone costs the recording thread: two reads of the session clock and
//!   one `RegionTiming` recorded (bursts with pauses, as `timing_record/burst`).
//! - `timed_zone_started`: the same zone as the runtime times a region since format 1.3: a
//!   clock read and a `RegionStarted` recorded before the zone's start is read (so a hang or a
//!   crash shows what was running), then `timed_zone`'s work. Against `timed_zone` in the
//!   same run: the cost of the region-start record.
//! - `lossless/threads_N`: sustained lossless throughput, N threads recording timings back to
//!   back until all are recorded and flushed (the hand-overs of full buffers included) into
//!   a trace file; criterion reports it in records per second.
//! - `timing_bytes`: not timed; prints the on-disk bytes per timing record of a realistic
//!   stream (a repeating pipeline of 4 regions, monotonically increasing times).
//! - `bulk_contents/frame`: captured contents of one 1280x800 RGB frame (3,072,000 bytes,
//!   a distinct blob each time) stored by `Recorder::payload` on the calling thread: its
//!   hash, the blob's block and the write into a sink that keeps nothing (so the figure is
//!   the recorder's own passes through memory, not the file system's).
//! - `timing_bytes_clocked`: not timed; the same with times read on the session clock around
//!   a little work (run again with `HRX_TRACE_CLOCK=monotonic` for the other clock).

use criterion::{Criterion, criterion_group, criterion_main};
use hrx_capture::schema::{
    DeviceSpan, Record, RegionIndex, RegionStarted, RegionTiming, RuntimeId, SubmissionIndex,
};
use hrx_capture::{MemorySink, Recorder, RecorderOptions};
use std::hint::black_box;

/// A timing of a 4-region pipeline: region `i % 4` of submission `i / 4`, starting about
/// 2.5 µs after the previous one and lasting about 1.8 µs, both with pseudo-random jitter
/// (real timings do not repeat exactly, which matters for compression).
fn timing(i: u64) -> Record {
    // splitmix64's finalizer: consecutive inputs give unrelated outputs.
    let jitter = |salt: u64| {
        let mut z = (i * 2 + salt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) >> 54
    };
    let start_ns = 1_000_000 + i * 2_500 + jitter(1);
    Record::RegionTiming(RegionTiming {
        runtime: RuntimeId(1),
        submission: SubmissionIndex(i / 4 + 1),
        region: RegionIndex((i % 4) as u32),
        start_ns,
        end_ns: start_ns + 1_800 + jitter(2),
        device: None,
    })
}

fn hook_off(c: &mut Criterion) {
    let mut group = c.benchmark_group("hook_off");
    group.bench_function("gate", |b| {
        b.iter(|| {
            if hrx_capture::enabled() {
                hrx_capture::record(black_box(&timing(0)));
            }
        })
    });
    let recorder: Option<Recorder> = black_box(None);
    group.bench_function("runtime", |b| {
        b.iter(|| {
            if let Some(recorder) = black_box(&recorder) {
                recorder.record(&timing(0));
            }
        })
    });
    group.finish();
}

fn timing_record(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::create(dir.path().join("bench.hrxt"), RecorderOptions::default())
        .expect("recorder");
    let mut group = c.benchmark_group("timing_record");
    let mut i = 0u64;
    let records: Vec<Record> = (0..1024).map(timing).collect();
    // Bursts of 1024 records with the writer given time to drain between them: the cost
    // on the recording thread when the writer keeps up (a runtime records a few thousand
    // timings a second).
    group.bench_function("burst", |b| {
        b.iter_custom(|iterations| {
            let mut timed = std::time::Duration::ZERO;
            let mut left = iterations;
            while left > 0 {
                let batch = left.min(records.len() as u64) as usize;
                let started = std::time::Instant::now();
                for record in &records[..batch] {
                    recorder.record(black_box(record));
                }
                timed += started.elapsed();
                left -= batch as u64;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            timed
        })
    });
    // Back to back without pause: the writer thread competes for the second core and full
    // rings make the recording thread wait (or drop and count).
    group.bench_function("sustained", |b| {
        b.iter(|| {
            i += 1;
            recorder.record(black_box(&records[(i % 1024) as usize]));
        })
    });
    group.finish();
    let summary = recorder.close().expect("close");
    eprintln!("timing_record: {summary:?}");
}

fn timed_zone(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::create(dir.path().join("zone.hrxt"), RecorderOptions::default())
        .expect("recorder");
    c.bench_function("timed_zone", |b| {
        b.iter_custom(|iterations| {
            let mut timed = std::time::Duration::ZERO;
            let mut left = iterations;
            let mut i = 0u64;
            while left > 0 {
                let batch = left.min(1024);
                let started = std::time::Instant::now();
                for _ in 0..batch {
                    let start_ns = recorder.now_ns();
                    black_box(&mut i);
                    recorder.record(&Record::RegionTiming(RegionTiming {
                        runtime: RuntimeId(1),
                        submission: SubmissionIndex(i),
                        region: RegionIndex(0),
                        start_ns,
                        end_ns: recorder.now_ns(),
                        device: None,
                    }));
                    i += 1;
                }
                timed += started.elapsed();
                left -= batch;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            timed
        })
    });
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0);
}

fn timed_zone_started(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let recorder = Recorder::create(dir.path().join("zone.hrxt"), RecorderOptions::default())
        .expect("recorder");
    c.bench_function("timed_zone_started", |b| {
        b.iter_custom(|iterations| {
            let mut timed = std::time::Duration::ZERO;
            let mut left = iterations;
            let mut i = 0u64;
            while left > 0 {
                let batch = left.min(1024);
                let started = std::time::Instant::now();
                for _ in 0..batch {
                    recorder.record(&Record::RegionStarted(RegionStarted {
                        runtime: RuntimeId(1),
                        submission: SubmissionIndex(i),
                        region: RegionIndex(0),
                        time_ns: recorder.now_ns(),
                    }));
                    let start_ns = recorder.now_ns();
                    black_box(&mut i);
                    recorder.record(&Record::RegionTiming(RegionTiming {
                        runtime: RuntimeId(1),
                        submission: SubmissionIndex(i),
                        region: RegionIndex(0),
                        start_ns,
                        end_ns: recorder.now_ns(),
                        device: None,
                    }));
                    i += 1;
                }
                timed += started.elapsed();
                left -= batch;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            timed
        })
    });
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0);
}

fn lossless(c: &mut Criterion) {
    let mut group = c.benchmark_group("lossless");
    group.throughput(criterion::Throughput::Elements(1));
    for threads in [1u64, 4] {
        // A trace file, as a program writes: an in-memory sink's growing Vec (copied on
        // every doubling, its fresh pages zeroed) cost the writer more than the records.
        let dir = tempfile::tempdir().expect("temp dir");
        let recorder =
            Recorder::create(dir.path().join("lossless.hrxt"), RecorderOptions::default())
                .expect("recorder");
        let records: Vec<Record> = (0..1024).map(timing).collect();
        group.bench_function(format!("threads_{threads}"), |b| {
            b.iter_custom(|iterations| {
                let per_thread = iterations.div_ceil(threads);
                let started = std::time::Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            for i in 0..per_thread {
                                recorder.record(black_box(&records[(i % 1024) as usize]));
                            }
                        });
                    }
                });
                recorder.flush().expect("flush");
                started.elapsed()
            })
        });
        let summary = recorder.close().expect("close");
        assert_eq!(summary.dropped_records, 0, "lossless mode dropped records");
    }
    group.finish();
}

/// A sink that keeps nothing (`bulk_contents`).
struct Discard;

impl hrx_capture::Sink for Discard {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        black_box(bytes);
        Ok(())
    }
}

fn bulk_contents(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_contents");
    let mut frame: Vec<u8> = (0..3_072_000u32)
        .map(|i| (i * 7 + i / 4096) as u8)
        .collect();
    group.throughput(criterion::Throughput::Bytes(frame.len() as u64));
    let recorder = Recorder::with_sink(Discard, RecorderOptions::default()).expect("recorder");
    let mut n = 0u64;
    group.bench_function("frame", |b| {
        b.iter(|| {
            // Another frame each time: a blob seen before is only hashed.
            n += 1;
            frame[..8].copy_from_slice(&n.to_le_bytes());
            black_box(recorder.payload(&frame))
        })
    });
    group.finish();
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0, "contents were dropped");
}

fn timing_bytes(_: &mut Criterion) {
    let records = 1_000_000u64;
    for device in [false, true] {
        let sink = MemorySink::new();
        let recorder =
            Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
        let before = {
            recorder.flush().expect("flush");
            sink.contents().len()
        };
        for i in 0..records {
            let mut record = timing(i);
            if device && let Record::RegionTiming(t) = &mut record {
                t.device = Some(DeviceSpan {
                    start_ns: t.start_ns + 40,
                    end_ns: t.end_ns - 30,
                });
            }
            recorder.record(&record);
        }
        let summary = recorder.close().expect("close");
        assert_eq!(
            recorder.dropped_records(),
            0,
            "no record may be dropped: {summary:?}"
        );
        let bytes = sink.contents().len() - before;
        println!(
            "timing_bytes (device span: {device}): {records} records, {bytes} bytes, {:.2} bytes/record",
            bytes as f64 / records as f64
        );
    }
}

/// On-disk bytes per timing record of times read on the session clock itself (the clock's
/// own low-order digits, which the synthetic stream of `timing_bytes` does not have): 4-region
/// submissions whose regions run a few hundred ns of work each, back to back, with the
/// writer's flushes (and their calibrations) as in a recording. Run once as it is and once
/// with `HRX_TRACE_CLOCK=monotonic` (the clock is chosen once per process) for the two
/// clocks' figures.
fn timing_bytes_clocked(_: &mut Criterion) {
    let records = 1_000_000u64;
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).expect("recorder");
    let before = {
        recorder.flush().expect("flush");
        sink.contents().len()
    };
    let mut work = 0u64;
    for i in 0..records {
        let start_ns = recorder.now_ns();
        // A few hundred ns of work, varying with the region.
        for k in 0..(64 + (i % 4) * 32) {
            work = black_box(work.wrapping_mul(31).wrapping_add(k));
        }
        recorder.record(&Record::RegionTiming(RegionTiming {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(i / 4 + 1),
            region: RegionIndex((i % 4) as u32),
            start_ns,
            end_ns: recorder.now_ns(),
            device: None,
        }));
        if i % 4096 == 4095 {
            // Let the writer keep up, as between a program's submissions.
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    let summary = recorder.close().expect("close");
    assert_eq!(summary.dropped_records, 0, "no record may be dropped");
    let bytes = sink.contents().len() - before;
    println!(
        "timing_bytes_clocked ({}): {records} records, {bytes} bytes, {:.2} bytes/record",
        hrx_capture::clock::source().name(),
        bytes as f64 / records as f64
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = hook_off, timing_record, timed_zone, timed_zone_started, lossless, bulk_contents,
        timing_bytes, timing_bytes_clocked
}
criterion_main!(benches);
