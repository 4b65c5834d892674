//! A capture range opened mid-run snapshots lazily: only the bytes its submissions read
//! before the range writes them, taken before the submission that reads them, never inside
//! a measured time (`src/trace/snapshot.rs`).

use hrx::{Error, Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::{self as s, Record};
use hrx_capture::{CaptureRange, MemorySink, Recorder, RecorderOptions, Trace};

/// A runtime recording into memory with `range`.
fn recording(range: &str) -> (Runtime, Recorder, MemorySink) {
    let sink = MemorySink::new();
    let recorder = Recorder::with_sink(sink.clone(), RecorderOptions::default()).unwrap();
    let mut options = RuntimeOptions::sim().recorder(recorder.clone());
    options.trace_range = Some(range.parse::<CaptureRange>().unwrap());
    (Runtime::new(options).unwrap(), recorder, sink)
}

fn snapshots(trace: &Trace) -> Vec<&s::BufferSnapshot> {
    trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::BufferSnapshot(b) => Some(b),
            _ => None,
        })
        .collect()
}

/// Submissions 3 and 4 of a graph copying GPU-local `input` into `middle`, then `middle`
/// into host-visible `out`, with the first 16 bytes of `input` written by the host before
/// each submit, and a large buffer written before the range that the range never reads:
/// the range holds one snapshot, `input` as it was when the range opened (the host write
/// before submission 3 came before the opening; the one before 4 is recorded in the
/// range), taken before submission 3 and before its regions ran. `middle` is written before
/// it is read. Before, the opening snapshotted every live buffer whole (1 MiB + 12 KiB here).
#[test]
fn a_range_snapshots_only_what_it_reads_before_writing() {
    let (rt, recorder, sink) = recording("submissions:3..5");
    let unread = rt.buffer(1 << 20, Placement::GpuLocal).unwrap();
    unread.write(0, &vec![9; 1 << 20]).unwrap();
    let input = rt.buffer(4096, Placement::GpuLocal).unwrap();
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    input.write(0, &pattern).unwrap();
    let middle = rt.buffer(4096, Placement::GpuLocal).unwrap();
    let out = rt.buffer(4096, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.copy(middle.whole(), input.whole()).unwrap();
    graph.copy(out.whole(), middle.whole()).unwrap();
    let graph = graph.prepare().unwrap();
    for i in 1..=5u8 {
        input.write(0, &[i; 16]).unwrap();
        graph.submit().unwrap().wait().unwrap();
    }
    drop((unread, input, middle, out, graph, rt));
    recorder.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    let taken = snapshots(&trace);
    assert_eq!(taken.len(), 1, "{taken:?}");
    let snap = taken[0];
    assert_eq!((snap.offset, snap.len_bytes), (0, 4096));
    let mut at_open = pattern.clone();
    at_open[..16].fill(3);
    assert_eq!(snap.xxh3, xxhash_rust::xxh3::xxh3_64(&at_open));
    // Before submission 3's submit and everything it ran: outside every measured time.
    let submit = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Submit(s) if s.submission.0 == 3 => Some(s.time_ns),
            _ => None,
        })
        .unwrap();
    assert!(snap.time_ns <= submit, "{} after {submit}", snap.time_ns);
    let first_region = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::RegionTiming(t) => Some(t.start_ns),
            _ => None,
        })
        .min()
        .unwrap();
    assert!(submit <= first_region);
    // In the file before the submit it serves (replay applies it before the range).
    let at = |f: &dyn Fn(&Record) -> bool| trace.records.iter().position(f).unwrap();
    assert!(
        at(&|r| matches!(r, Record::BufferSnapshot(_)))
            < at(&|r| matches!(r, Record::Submit(s) if s.submission.0 == 3))
    );
}

/// A submit refused (`Busy`: a host mapping of a buffer it writes) writes nothing, so the
/// bytes it would have written are still snapshotted when a later submission reads them.
#[test]
fn a_refused_submit_does_not_hold_what_it_would_have_written() {
    let (rt, recorder, sink) = recording("submissions:1..");
    let shared = rt.buffer(64, Placement::GpuLocal).unwrap();
    shared.write(0, &[5; 64]).unwrap();
    let blocker = rt.buffer(64, Placement::HostVisible).unwrap();
    let out = rt.buffer(64, Placement::HostVisible).unwrap();
    // Writes `shared` and `blocker`.
    let mut writer = rt.graph();
    writer.fill(shared.whole(), 1).unwrap();
    writer.fill(blocker.whole(), 1).unwrap();
    let writer = writer.prepare().unwrap();
    // Reads `shared`.
    let mut reader = rt.graph();
    reader.copy(out.whole(), shared.whole()).unwrap();
    let reader = reader.prepare().unwrap();
    {
        let _mapped = blocker.map_write(0..64).unwrap();
        assert!(matches!(writer.submit(), Err(Error::Busy(_))));
    }
    reader.submit().unwrap().wait().unwrap();
    drop((shared, blocker, out, writer, reader, rt));
    recorder.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    let taken: Vec<_> = snapshots(&trace)
        .iter()
        .map(|b| (b.offset, b.len_bytes, b.xxh3))
        .collect();
    assert_eq!(taken, vec![(0, 64, xxhash_rust::xxh3::xxh3_64(&[5; 64]))]);
}
