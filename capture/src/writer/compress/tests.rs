//! The compression threads write the file the writer writes alone.

use super::Queue;
use crate::format::BlockKind;
use crate::reader::Trace;
use crate::schema::testgen::{KINDS, Rng, record};
use crate::schema::{Record, RegionIndex, RegionStarted, RegionTiming, RuntimeId, SubmissionIndex};
use crate::writer::Core;
use crate::writer::tests::FailingSink;
use crate::{CloseSummary, MappedTrace, MemorySink, Recorder, RecorderOptions, read_all, summary};
use std::sync::Arc;
use std::time::Duration;

fn timing(i: u64) -> Record {
    Record::RegionTiming(RegionTiming {
        runtime: RuntimeId(0),
        submission: SubmissionIndex(i),
        region: RegionIndex((i % 3) as u32),
        start_ns: i * 1000,
        end_ns: i * 1000 + 400 + i % 7,
        device: None,
    })
}

fn started(i: u64) -> Record {
    Record::RegionStarted(RegionStarted {
        runtime: RuntimeId(0),
        submission: SubmissionIndex(i),
        region: RegionIndex(0),
        time_ns: i,
    })
}

/// Options whose blocks are cut only where the test flushes: no periodic flush, small
/// blocks, batches below a quarter of the ring (which would wake the writer: a drain in the
/// middle of a batch, at a moment of the machine's choosing, cuts it into two blocks). The
/// ring is named, not the default: `recording`'s batch takes 67 KB of it, a quarter is
/// 256 KiB.
fn options(threads: usize) -> RecorderOptions {
    RecorderOptions {
        flush_interval: Duration::from_secs(3600),
        thread_buffer_bytes: 1 << 20,
        block_bytes: 4 << 10,
        compression_threads: Some(threads),
        ..RecorderOptions::default()
    }
}

/// Records made by the recorder itself, whose contents depend on the moment: its session's
/// start and end, and the clock's calibrations.
fn of_the_moment(r: &Record) -> bool {
    matches!(
        r,
        Record::SessionStart(_) | Record::SessionEnd(_) | Record::HostClock(_)
    )
}

/// Holds the compression threads back and puts `blocks` blocks of `per_block` records
/// (`make(1..)`, each block below `block_bytes`: nothing waits for them) in flight; returns
/// the queue, to let them go.
fn hold_in_flight(
    core: &mut Core,
    blocks: u64,
    per_block: u64,
    make: fn(u64) -> Record,
) -> Arc<Queue> {
    let queue = core.compressors.as_ref().unwrap().queue();
    queue.hold(true);
    for block in 0..blocks {
        for i in 0..per_block {
            core.append_record(&make(1 + block * per_block + i))
                .unwrap();
        }
        core.write_pending();
    }
    let in_flight = core.compressors.as_ref().unwrap().in_flight.len();
    assert_eq!(in_flight as u64, blocks);
    queue
}

/// The same recording, with `threads` compression threads: batches of timings and records
/// of every kind, small blobs (compressed with the records), a large one (stored as is, on
/// the writer), each batch flushed; the trace's bytes, what closing said, and the number
/// of records readable after each flush. `wake_late`: the threads wake the writer that long
/// after each block, into the next batch's recording (as on a loaded machine).
fn recording(threads: usize, wake_late: Duration) -> (Vec<u8>, CloseSummary, Vec<usize>) {
    let sink = MemorySink::new();
    let rec = Recorder::with_sink(sink.clone(), options(threads)).unwrap();
    match &rec.handle.shared.core().compressors {
        Some(compressors) => {
            assert!(threads > 0, "no compression threads asked for");
            compressors.queue().wake_late(wake_late);
        }
        None => assert_eq!(threads, 0, "compression threads asked for"),
    }
    let mut rng = Rng(7);
    let mut readable = Vec::new();
    for batch in 0..40u64 {
        // Drained at the flush into one block of its own (over `block_bytes`), the
        // calibration going into the next.
        for i in 0..2000 {
            rec.record(&timing(batch * 10_000 + i));
        }
        for k in 0..KINDS {
            rec.record(&record(&mut rng, k));
        }
        match batch % 10 {
            3 => drop(rec.intern_blob(&vec![batch as u8; 3000])),
            7 => drop(rec.intern_blob(&vec![batch as u8; 100 << 10])),
            _ => {}
        }
        rec.flush().unwrap();
        // Everything recorded is in the sink once the flush returns.
        readable.push(Trace::from_bytes(&sink.contents()).unwrap().records.len());
    }
    let summary = rec.close().unwrap();
    (sink.contents(), summary, readable)
}

#[test]
fn compression_threads_write_the_blocks_the_writer_writes_alone() {
    let (inline, inline_summary, inline_readable) = recording(0, Duration::ZERO);
    // Late wakes: a wake that drained the rings cut a batch in two blocks (133 blocks
    // against 131 once under load).
    for (threads, late) in [(1, Duration::ZERO), (2, Duration::from_millis(20))] {
        let (threaded, summary, readable) = recording(threads, late);
        assert_eq!(
            readable, inline_readable,
            "{threads} threads: after each flush"
        );
        assert_eq!(
            (summary.records, summary.blocks, summary.dropped_records),
            (
                inline_summary.records,
                inline_summary.blocks,
                inline_summary.dropped_records
            ),
            "{threads} threads"
        );
        let (a, b) = (
            MappedTrace::from_vec(inline.clone()).unwrap(),
            MappedTrace::from_vec(threaded.clone()).unwrap(),
        );
        assert!(a.clean_close() && b.clean_close());
        assert_eq!(a.blocks().len(), b.blocks().len(), "{threads} threads");
        let mut compared = 0;
        for (i, (x, y)) in a.blocks().iter().zip(b.blocks()).enumerate() {
            let (hx, hy) = (x.header, y.header);
            assert_eq!(
                (hx.kind, hx.flags, hx.record_count),
                (hy.kind, hy.flags, hy.record_count),
                "{threads} threads: block {i}"
            );
            let (rx, ry) = (a.read_block(i).unwrap(), b.read_block(i).unwrap());
            assert!(rx.warnings.is_empty() && ry.warnings.is_empty());
            let plain = |records: &[Record]| {
                records
                    .iter()
                    .filter(|r| !of_the_moment(r))
                    .cloned()
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                plain(&rx.records),
                plain(&ry.records),
                "{threads} threads: block {i}"
            );
            // Blocks of the same records are the same bytes (the footer's index holds
            // offsets, which the blocks of the moment move).
            if hx.kind != BlockKind::FOOTER && rx.records == ry.records {
                let bytes = |trace: &[u8], at: u64| {
                    let at = at as usize;
                    trace[at..at + hx.block_len() as usize].to_vec()
                };
                assert_eq!(
                    bytes(&inline, x.offset),
                    bytes(&threaded, y.offset),
                    "{threads} threads: block {i}"
                );
                compared += 1;
            }
        }
        // Each batch's block and its summary, and each blob's: all but the calibrations'
        // and the session's start and end.
        assert!(
            compared >= 40 * 2 + 8,
            "{compared} of {} blocks compared byte for byte",
            a.blocks().len()
        );
        let (tx, ty) = (
            Trace::from_bytes(&inline).unwrap(),
            Trace::from_bytes(&threaded).unwrap(),
        );
        let plain = |t: &Trace| {
            t.records
                .iter()
                .filter(|r| !of_the_moment(r))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(plain(&tx), plain(&ty), "{threads} threads");
        assert!(tx.recovery.clean_close && ty.recovery.clean_close);
    }
}

/// The summaries that a reader hopping from header to header reads are the same, with the
/// same records blocks behind them.
#[test]
fn summaries_read_the_same_with_compression_threads() {
    let dir = tempfile::tempdir().unwrap();
    let read = |threads: usize| {
        let path = dir.path().join(format!("{threads}.hrxt"));
        let rec = Recorder::create(&path, options(threads)).unwrap();
        for batch in 0..20u64 {
            for i in 0..800 {
                rec.record(&timing(batch * 1000 + i));
            }
            rec.flush().unwrap();
        }
        rec.close().unwrap();
        let s = summary::read_summaries(&path).unwrap();
        assert!(s.stopped.is_none() && s.bad_summaries == 0);
        (s.blocks, s.records_blocks, s.records)
    };
    let inline = read(0);
    assert!(!inline.0.is_empty());
    assert_eq!(read(2), inline);
}

/// A fatal signal while blocks are in flight: the handler writes them first, uncompressed,
/// then what the rings held and the signal. Driven directly, with the core locked as the
/// handler holds it and the compression threads held back, so that the blocks are still in
/// flight.
/// The compression threads start with the first block handed over, not when the recorder
/// opens: the runtime's workers and the program's threads start after it, and these optional
/// ones must not take their room under a limit on threads (break-it pass: under `ulimit -u
/// 8`, `traced` recorded with two failed with "cannot start a worker thread" where it ran
/// with none). A recorder closing before its first block starts none.
#[test]
fn the_threads_start_with_the_first_block_not_at_open() {
    let threads = |rec: &Recorder| {
        let core = rec.handle.shared.core();
        core.compressors.as_ref().map(|c| c.threads.len())
    };
    let rec = Recorder::with_sink(MemorySink::new(), options(2)).unwrap();
    assert_eq!(threads(&rec), Some(0));
    for i in 0..2000 {
        rec.record(&timing(i));
    }
    rec.flush().unwrap();
    assert_eq!(threads(&rec), Some(2));
    rec.close().unwrap();

    let sink = MemorySink::new();
    let rec = Recorder::with_sink(sink.clone(), options(2)).unwrap();
    {
        let mut core = rec.handle.shared.core();
        // As `finish` finds it: closing, its last block written inline.
        core.closed = true;
        core.append_record(&started(1)).unwrap();
        core.write_pending();
        assert_eq!(core.compressors.as_ref().map(|c| c.threads.len()), Some(0));
        core.closed = false;
    }
    rec.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    assert!(
        trace
            .records
            .iter()
            .any(|r| matches!(r, Record::RegionStarted(_)))
    );
}

#[test]
fn a_fatal_signal_writes_the_blocks_in_flight_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    let rec = Recorder::create(&path, options(1)).unwrap();
    rec.record(&started(0));
    rec.flush().unwrap();
    let shared = rec.handle.shared.clone();
    let mut core = shared.core();
    // Two blocks in flight (the limit with one thread).
    let queue = hold_in_flight(&mut core, 2, 300, started);
    // Then records still in the ring.
    for i in 601..700 {
        rec.record(&started(i));
    }
    let (note, losses) = crate::writer::fatal::test_sigterm();
    core.write_on_signal(shared.signal_fd.unwrap(), &note, losses);
    assert!(core.compressors.as_ref().unwrap().in_flight.is_empty());
    queue.hold(false);
    drop(core);
    // A process that survives its signal (a handler that jumps out of `abort`) closes on.
    let summary = rec.close().unwrap();
    let trace = read_all(&path).unwrap();
    assert!(trace.recovery.clean_close, "{:?}", trace.warnings);
    let seen: Vec<&Record> = trace
        .records
        .iter()
        .filter(|r| matches!(r, Record::RegionStarted(_) | Record::FatalSignal(_)))
        .collect();
    let expected: Vec<Record> = (0..700).map(started).chain([note]).collect();
    assert_eq!(seen, expected.iter().collect::<Vec<_>>());
    assert_eq!(summary.records, trace.records.len() as u64);
    // The blocks in flight went out as they were, once: one uncompressed block each.
    let mapped = MappedTrace::open(&path).unwrap();
    let blocks_of_300: Vec<u16> = mapped
        .blocks()
        .iter()
        .filter(|b| b.header.kind == BlockKind::RECORDS && b.header.record_count == 300)
        .map(|b| b.header.flags)
        .collect();
    assert_eq!(blocks_of_300, [0, 0]);
}

/// A write that fails behind the compression threads fails as one on the writer: its
/// records and every later block's are counted lost, and close names the first failure.
#[test]
fn a_failed_write_of_a_compressed_block_is_reported_and_counted() {
    for writes in [1, 4] {
        let rec = Recorder::with_sink(FailingSink { writes }, options(2)).unwrap();
        for batch in 0..10 {
            for i in 0..1000 {
                rec.record(&timing(batch * 1000 + i));
            }
            if batch == 0 && writes > 1 {
                rec.flush().unwrap();
            }
        }
        rec.flush().unwrap_err();
        assert!(rec.write_failed());
        assert!(rec.dropped_records() >= 9000, "{}", rec.dropped_records());
        let err = rec.close().unwrap_err().to_string();
        assert!(
            err.contains(" at byte ") && err.ends_with("disk full"),
            "{err}"
        );
    }
}

/// A child forked without `exec` while the parent's compression threads hold blocks has
/// none of those threads: its copy of the recorder writes nothing and never waits for them;
/// the parent's trace is whole.
#[cfg(unix)]
#[test]
fn a_forked_child_never_waits_for_its_parents_compression_threads() {
    let sink = MemorySink::new();
    let rec = Recorder::with_sink(sink.clone(), options(2)).unwrap();
    rec.record(&timing(0));
    rec.flush().unwrap();
    let mut core = rec.handle.shared.core();
    // Three blocks in flight (the limit with two threads).
    let queue = hold_in_flight(&mut core, 3, 200, timing);
    drop(core);
    for i in 601..700 {
        rec.record(&timing(i));
    }
    let pid = crate::fork::child::spawn(|| {
        rec.record(&timing(1 << 40));
        let flushed = rec.flush();
        let blob = rec.intern_blob(&[7; 8192]);
        matches!(flushed, Err(crate::WriteError::Closed)) && blob.is_none()
    });
    assert!(crate::fork::child::held(pid), "the child hung or recorded");
    queue.hold(false);
    rec.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    assert!(trace.recovery.clean_close);
    let timings: Vec<Record> = trace
        .records
        .into_iter()
        .filter(|r| matches!(r, Record::RegionTiming(_)))
        .collect();
    assert_eq!(timings, (0..700).map(timing).collect::<Vec<_>>());
}

/// The option first, then the variable, then the rule; at most two threads, none for
/// blocks stored uncompressed; anything else than `auto`, `0`, `1` or `2` in the variable
/// is refused, as a bad `HRX_TRACE_MODE` is.
#[test]
fn the_thread_count_comes_from_the_option_then_the_variable() {
    use super::{automatic_compression_threads, threads_with};
    use std::env::VarError::NotPresent;
    let env = |text: &str| Ok(text.to_owned());
    assert_eq!(threads_with(Some(1), Some(1), env("2")).unwrap(), 1);
    assert_eq!(threads_with(Some(9), Some(1), Err(NotPresent)).unwrap(), 2);
    assert_eq!(threads_with(Some(2), None, Err(NotPresent)).unwrap(), 0);
    assert_eq!(threads_with(None, Some(1), env("2")).unwrap(), 2);
    assert_eq!(threads_with(None, Some(1), env("0")).unwrap(), 0);
    assert_eq!(threads_with(None, None, env("2")).unwrap(), 0);
    let auto = automatic_compression_threads();
    assert_eq!(threads_with(None, Some(1), env("auto")).unwrap(), auto);
    assert_eq!(threads_with(None, Some(1), env("")).unwrap(), auto);
    assert_eq!(threads_with(None, Some(1), Err(NotPresent)).unwrap(), auto);
    let err = threads_with(None, Some(1), env("many")).unwrap_err();
    assert!(
        err.to_string()
            .contains("HRX_TRACE_COMPRESSION_THREADS: expected auto, 0, 1 or 2, got \"many\""),
        "{err}"
    );
}

/// The variable takes what its message and the README list, `auto`, `0`, `1` or `2`: a
/// number past two, a sign, a leading zero or a space is refused by name (`3` and `99` were
/// cut to two and `+1` read as one, silently, while the error said "expected auto, 0, 1 or
/// 2"; break-it pass). The option alone is cut to two, as its documentation says.
#[test]
fn the_variable_takes_only_the_values_it_lists() {
    use super::{threads_in_env, threads_with};
    let env = |text: &str| Ok(text.to_owned());
    for bad in ["3", "99", "-1", "+1", "00", " 2", "2 ", "AUTO", "many"] {
        let err = threads_with(None, Some(1), env(bad)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("HRX_TRACE_COMPRESSION_THREADS: expected auto, 0, 1 or 2, got {bad:?}")
        );
        assert!(threads_in_env(env(bad)).is_err(), "{bad:?}");
    }
    for (good, threads) in [("0", Some(0)), ("1", Some(1)), ("2", Some(2))] {
        assert_eq!(threads_in_env(env(good)).unwrap(), threads);
    }
    assert_eq!(threads_in_env(env("auto")).unwrap(), None);
    assert_eq!(threads_in_env(env("")).unwrap(), None);
    assert_eq!(
        threads_in_env(Err(std::env::VarError::NotPresent)).unwrap(),
        None
    );
    assert_eq!(threads_with(Some(3), Some(1), env("many")).unwrap(), 2);
}
