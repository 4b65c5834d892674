use super::*;
use crate::format::FrameEncoder;
use crate::schema::{Engine, GraphId, Prepared, Region, RegionIndex, RegionKind, Submit};
use crate::{Recorder, RecorderOptions, TraceReader};
use std::time::Duration;

const QUEUES: [Queue; 3] = [Queue::GpuUpload, Queue::GpuCompute, Queue::GpuDownload];

fn prepared(runtime: u32, id: u64) -> Record {
    let region = |queue| Region {
        queue,
        engine: Engine::Gpu,
        kind: RegionKind::NativeGraph,
        nodes: Vec::new(),
        internal_edges: Vec::new(),
        dependencies: Vec::new(),
        uses: Vec::new(),
        copy_bytes: 0,
    };
    Record::Prepared(Prepared {
        runtime: RuntimeId(runtime),
        graph: GraphId(1),
        prepared: PreparedId(id),
        slots: 2,
        parallel: false,
        regions: QUEUES.iter().map(|&q| region(q)).collect(),
        time_ns: 0,
    })
}

fn submit(runtime: u32, prepared: u64, submission: u64) -> Record {
    Record::Submit(Submit {
        runtime: RuntimeId(runtime),
        prepared: PreparedId(prepared),
        submission: SubmissionIndex(submission),
        slot: 0,
        producers: vec![SubmissionIndex(submission.saturating_sub(1))],
        time_ns: submission * 100,
    })
}

fn timing(runtime: u32, submission: u64, region: u32, start_ns: u64, end_ns: u64) -> RegionTiming {
    RegionTiming {
        runtime: RuntimeId(runtime),
        submission: SubmissionIndex(submission),
        region: RegionIndex(region),
        start_ns,
        end_ns,
        device: None,
    }
}

fn frame(record: &Record) -> Vec<u8> {
    let mut out = Vec::new();
    FrameEncoder::new().encode(record, &mut out).unwrap();
    out
}

/// A pipeline: `n` submissions of three regions, region r of submission s running
/// [s*100 + r*30, +20) (so each lane is busy 20 ns in every 100).
fn write_pipeline(path: &Path, n: u64) -> Vec<RegionTiming> {
    let options = RecorderOptions {
        block_bytes: 4 << 10,
        full_buffer_wait: Duration::from_secs(5),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).unwrap();
    recorder.record(&prepared(0, 7));
    let mut timings = Vec::new();
    for s in 1..=n {
        // A block every 100 submissions (the writer otherwise drains its rings into
        // blocks as large as what it finds there).
        if s % 100 == 0 {
            recorder.flush().unwrap();
        }
        recorder.record(&submit(0, 7, s));
        for r in 0..3u32 {
            let start = s * 100 + u64::from(r) * 30;
            let t = timing(0, s, r, start, start + 20);
            recorder.record(&Record::RegionTiming(t));
            timings.push(t);
        }
    }
    recorder.close().unwrap();
    timings
}

#[test]
fn record_tags_are_the_postcard_variant_indices() {
    assert_eq!(Record::KIND_NAMES[TAG_BLOB as usize], "Blob");
    assert_eq!(Record::KIND_NAMES[TAG_PREPARED as usize], "Prepared");
    assert_eq!(Record::KIND_NAMES[TAG_SUBMIT as usize], "Submit");
    let submit = frame(&submit(3, 4, 5));
    let (len, prefix) = crate::format::read_varint_u32(&submit).unwrap();
    assert_eq!(submit.len(), prefix + len as usize);
    assert_eq!(submit[prefix], TAG_SUBMIT as u8);
}

#[test]
fn summaries_place_every_timing_on_its_lane() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipeline.hrxt");
    let timings = write_pipeline(&path, 3_000);
    let summaries = read_summaries(&path).unwrap();
    assert!(summaries.stopped.is_none(), "{:?}", summaries.stopped);
    assert_eq!(summaries.bad_summaries, 0);
    // Small blocks: many summaries, one per records block with timings at most.
    assert!(summaries.blocks.len() > 10, "{}", summaries.blocks.len());
    assert!(summaries.blocks.len() as u64 <= summaries.records_blocks);
    assert_eq!(summaries.regions(), timings.len() as u64);
    assert!(summaries.blocks.iter().all(|b| b.unplaced == 0));
    for (r, queue) in QUEUES.iter().enumerate() {
        let lane: Vec<_> = summaries
            .blocks
            .iter()
            .flat_map(|b| b.lanes.iter().filter(|l| l.queue == *queue))
            .collect();
        let mine: Vec<_> = timings
            .iter()
            .filter(|t| t.region.0 as usize == r)
            .collect();
        let regions: u64 = lane.iter().map(|l| u64::from(l.regions)).sum();
        assert_eq!(regions, mine.len() as u64);
        // Spans of one lane never overlap here: busy time is their total duration.
        let busy: u64 = lane.iter().map(|l| l.busy_ns).sum();
        assert_eq!(
            busy,
            mine.iter().map(|t| t.end_ns - t.start_ns).sum::<u64>()
        );
        assert_eq!(
            lane.iter().map(|l| l.first_start_ns).min(),
            mine.iter().map(|t| t.start_ns).min()
        );
        assert_eq!(
            lane.iter().map(|l| l.last_end_ns).max(),
            mine.iter().map(|t| t.end_ns).max()
        );
        // In file order, each summary's range follows the previous one's.
        for pair in lane.windows(2) {
            assert!(pair[0].last_end_ns <= pair[1].first_start_ns);
        }
    }
    // The record reader knows the kind: no warning, every record read.
    let mut reader = TraceReader::open(&path).unwrap();
    let records = reader.by_ref().filter(|r| r.is_ok()).count() as u64;
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    assert_eq!(records, summaries.records);
}

#[test]
fn a_timing_drained_before_its_submit_waits_for_it() {
    let mut b = SummaryBuilder::default();
    b.observe_frame(&frame(&prepared(0, 1)));
    b.observe_timing(&timing(0, 9, 1, 10, 30));
    b.observe_timing(&timing(0, 10, 0, 40, 50)); // never submitted
    assert_eq!(b.take(), None, "nothing placed yet, nothing unplaced yet");
    b.observe_frame(&frame(&submit(0, 1, 9)));
    let first = b.take().unwrap();
    // The one never submitted has waited through a summary already: unplaced now.
    assert_eq!(first.unplaced, 1);
    assert_eq!(
        first.lanes,
        vec![LaneSummary {
            runtime: RuntimeId(0),
            queue: Queue::GpuCompute,
            regions: 1,
            first_start_ns: 10,
            last_end_ns: 30,
            busy_ns: 20,
        }]
    );
    // Counted once.
    assert_eq!(b.take(), None);
}

#[test]
fn overlapping_timings_count_their_union() {
    let mut b = SummaryBuilder::default();
    b.observe_frame(&frame(&prepared(0, 1)));
    b.observe_frame(&frame(&submit(0, 1, 1)));
    for (start, end) in [(0, 10), (5, 20), (8, 12), (30, 40)] {
        b.observe_timing(&timing(0, 1, 0, start, end));
    }
    let s = b.take().unwrap();
    assert_eq!(s.lanes.len(), 1);
    assert_eq!((s.lanes[0].regions, s.lanes[0].busy_ns), (4, 30));
}

#[test]
fn the_writer_remembers_a_bounded_window_of_submissions() {
    let mut b = SummaryBuilder::default();
    for s in 0..5 * SUBMISSION_WINDOW {
        b.submitted(RuntimeId(0), PreparedId(1), SubmissionIndex(s));
    }
    assert!(b.submissions.len() as u64 <= 2 * SUBMISSION_WINDOW + 1);
    // The newest are kept.
    let newest = SubmissionIndex(5 * SUBMISSION_WINDOW - 1);
    assert!(b.submissions.contains_key(&(RuntimeId(0), newest)));
    // Parked timings are bounded too: the rest are unplaced at once.
    for s in 0..PARKED_MAX as u64 + 10 {
        b.observe_timing(&timing(1, s, 0, 0, 1));
    }
    assert_eq!(b.parked.len(), PARKED_MAX);
    assert_eq!(b.unplaced, 10);
}

#[test]
fn a_cut_or_damaged_trace_gives_the_summaries_before_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipeline.hrxt");
    write_pipeline(&path, 2_000);
    let whole = read_summaries(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() / 2);
    let cut = dir.path().join("cut.hrxt");
    std::fs::write(&cut, &bytes).unwrap();
    let half = read_summaries(&cut).unwrap();
    let (at, why) = half.stopped.clone().unwrap();
    assert!(at < bytes.len() as u64 && !why.is_empty());
    assert!(!half.blocks.is_empty() && half.blocks.len() < whole.blocks.len());
    assert_eq!(half.blocks[..], whole.blocks[..half.blocks.len()]);
    // Not a trace: the reader's one-line error.
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    assert!(read_summaries(&junk).is_err());
    assert!(read_summaries(&dir.path().join("missing")).is_err());
}

/// The blocks that hold one captured content alone (a blob over 64 KiB) are counted as
/// contents, not as the timeline's bytes: a trace of a few timings and 4 MiB of contents
/// has a timeline of a few KiB (`view` took the pipeline's 35 MiB of photos for a large
/// trace: a fresh user's pass). Small blobs, among other records, are not told apart.
#[test]
fn contents_stored_alone_are_not_the_timelines_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("photos.hrxt");
    let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
    recorder.record(&prepared(0, 7));
    let big: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 251) as u8).collect();
    let small: Vec<u8> = (0..(1u32 << 10)).map(|i| (i % 13) as u8).collect();
    for s in 1..=3u64 {
        recorder.record(&submit(0, 7, s));
        let mut frame = big.clone();
        frame[0] = s as u8;
        recorder.intern_blob(&frame).unwrap();
        recorder
            .intern_blob(&small[..small.len() - s as usize])
            .unwrap();
        recorder.record(&Record::RegionTiming(timing(
            0,
            s,
            1,
            s * 100,
            s * 100 + 20,
        )));
    }
    recorder.close().unwrap();
    let summaries = read_summaries(&path).unwrap();
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(summaries.file_len, file_len);
    // Each block: its header, the frame's head (a varint length, the tag, the hash, the
    // byte count: under 24 bytes) and the bytes.
    let bytes = 3 * (BLOCK_HEADER_LEN + big.len()) as u64;
    assert!(
        (bytes..bytes + 3 * 24).contains(&summaries.contents_bytes),
        "{} of {bytes}",
        summaries.contents_bytes
    );
    assert!(
        summaries.timeline_bytes() < 64 << 10,
        "{}",
        summaries.timeline_bytes()
    );
    assert_eq!(
        summaries.timeline_bytes(),
        file_len - summaries.contents_bytes
    );
    // Only timings and records: nothing counted as contents.
    let plain = dir.path().join("plain.hrxt");
    write_pipeline(&plain, 300);
    let plain = read_summaries(&plain).unwrap();
    assert_eq!(plain.contents_bytes, 0);
    assert_eq!(plain.timeline_bytes(), plain.file_len);
}

/// A timing drained before its submit waits through the next summary, and a captured
/// content stored meanwhile (a block of its own) does not count as one: the pipeline's
/// upload timings, drained while the main thread's records waited for their frame's hash,
/// were given up on at the frame's blob (2 to 7 of its 48 regions on no lane in the view's
/// summary frame: a fresh user's pass).
#[test]
fn a_timing_waiting_for_its_submit_is_not_given_up_at_a_stored_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.hrxt");
    let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
    recorder.record(&prepared(0, 7));
    recorder.record(&Record::RegionTiming(timing(0, 1, 0, 100, 120)));
    // Its block written: the timing waits for its submit through one summary.
    recorder.flush().unwrap();
    let frame: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    recorder.intern_blob(&frame).unwrap();
    recorder.record(&submit(0, 7, 1));
    recorder.close().unwrap();
    let summaries = read_summaries(&path).unwrap();
    assert!(summaries.contents_bytes > 1 << 20);
    assert_eq!(summaries.regions(), 1);
    assert!(
        summaries.blocks.iter().all(|b| b.unplaced == 0),
        "{:?}",
        summaries.blocks
    );
}

/// The footer's count of dropped records comes with the summaries (what a viewer's summary
/// frame says a trace lacks): 0 for a trace closed cleanly that dropped nothing, `None` for
/// one cut before its footer.
#[test]
fn the_footer_says_how_many_records_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hrxt");
    let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
    recorder.record(&prepared(0, 7));
    recorder.record(&submit(0, 7, 1));
    recorder.record(&Record::RegionTiming(timing(0, 1, 1, 100, 120)));
    recorder.close().unwrap();
    let closed = read_summaries(&path).unwrap();
    assert_eq!(closed.dropped_records, Some(0));
    let bytes = std::fs::read(&path).unwrap();
    // The trailer and the footer's last byte gone: no footer read.
    std::fs::write(
        &path,
        &bytes[..bytes.len() - crate::format::TRAILER_LEN - 1],
    )
    .unwrap();
    let cut = read_summaries(&path).unwrap();
    assert_eq!(cut.dropped_records, None);
    assert_eq!(cut.blocks.len(), closed.blocks.len());
}
