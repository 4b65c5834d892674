//! Tests of the second pass: keying, windows and pairing.

use super::stream::{BATCH, BATCHES_AHEAD, match_within};
use super::*;
use crate::matching::RegionKey;
use crate::synthetic::{PipelineSpec, pipeline};
use hrx_capture::schema::{BufferId, GraphId, OpKind, OutputDigest, Payload, PreparedId, Status};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A pipeline trace of `submissions` with one digest of buffer 4 after each completion
/// (`flip`: submissions whose digest differs; `failed`: one whose outcome is failed).
pub(super) fn trace(submissions: u64, flip: &[u64], failed: Option<u64>) -> Vec<Record> {
    let spec = PipelineSpec {
        submissions,
        ..PipelineSpec::ops(0)
    };
    let mut out = Vec::new();
    for r in pipeline(spec) {
        if let Record::SubmissionDone(d) = &r {
            let n = d.submission.0;
            out.push(Record::OutputDigest(OutputDigest {
                runtime: d.runtime,
                submission: d.submission,
                buffer: BufferId(4),
                start: 0,
                end: 1 << 20,
                xxh3: 7 + u64::from(flip.contains(&n)),
                contents: Payload::Omitted { len_bytes: 1 << 20 },
            }));
            if failed == Some(n) {
                let mut d = d.clone();
                d.status = Status::Failed {
                    error: "injected".into(),
                };
                out.push(Record::SubmissionDone(d));
                continue;
            }
        }
        out.push(r);
    }
    out
}

pub(super) fn matched(base: &[Record], new: &[Record]) -> Matched {
    matched_within(base, new, MATCH_WINDOW)
}

fn matched_within(base: &[Record], new: &[Record], window: usize) -> Matched {
    let (bp, np) = (profile_records(base), profile_records(new));
    match_within((&bp, stream(base)), (&np, stream(new)), window).unwrap()
}

fn stream(records: &[Record]) -> Records<'_> {
    Box::new(records.iter().map(|r| Ok(r.clone())))
}

/// [`matched`] with the profiles given (one marked incomplete, say).
pub(super) fn matched_profiled(
    (bp, base): (&Profile, &[Record]),
    (np, new): (&Profile, &[Record]),
) -> Matched {
    match_within((bp, stream(base)), (np, stream(new)), MATCH_WINDOW).unwrap()
}

#[test]
fn identical_traces_match_everything_with_a_nearly_empty_window() {
    let submissions = 3 * LIVE_WINDOW as u64;
    let records = trace(submissions, &[], None);
    let m = matched(&records, &records);
    assert!(m.by_graph);
    assert_eq!(m.identical, submissions);
    assert!(m.differing.is_empty());
    assert_eq!(m.outcomes_compared, submissions);
    assert_eq!(
        (m.outputs_one_sided, m.submissions_one_sided),
        ([0; 2], [0; 2])
    );
    assert_eq!((m.unmatched_past_window, m.late_records), ([0; 2], [0; 2]));
    // Bounded by the batches in flight, not by the trace.
    assert!(
        m.peak_pending < 8 * (BATCH * (BATCHES_AHEAD + 2)),
        "{}",
        m.peak_pending
    );
}

#[test]
fn differing_outputs_and_outcomes_are_found_in_key_order() {
    let base = trace(50, &[], None);
    let new = trace(50, &[30, 4], Some(12));
    let m = matched(&base, &new);
    let keys: Vec<u64> = m.differing.iter().map(|d| d.base.2).collect();
    assert_eq!(keys, [4, 30]);
    assert_eq!(m.differing[0].key.2, 4, "the graph's 5th submission");
    // Placed by the operation writing it (the download, node 3's second use).
    assert!(
        matches!(
            m.differing[0].key.3,
            Place::Op {
                node: 3,
                use_: 1,
                nth: 1,
                ..
            }
        ),
        "{:?}",
        m.differing[0].key.3
    );
    assert_eq!(m.changed.len(), 1);
    assert_eq!(
        (m.changed[0].key, m.changed[0].base, m.changed[0].new),
        ((0, 0, 12), Outcome::Ok, Outcome::Failed)
    );
}

#[test]
fn another_run_length_is_one_sided_and_keyed_by_graph() {
    let base = trace(40, &[], None);
    let new = trace(30, &[], None);
    let m = matched(&base, &new);
    assert!(m.by_graph);
    assert_eq!(m.identical, 30);
    assert_eq!(m.outputs_one_sided, [10, 0]);
    assert_eq!(m.submissions_one_sided, [10, 0]);
    assert_eq!(m.unmatched_past_window, [0; 2]);
}

#[test]
fn keys_past_the_window_are_counted_one_sided_and_said() {
    // New has 12,000 submissions more at its end: as many outputs and outcomes wait for
    // a partner that never comes; a window of 8,192 keys (more than the two sides' lag
    // in step, a few batches) keeps 8,192 of each kind and lets the rest go, counted.
    let window = 8192;
    let base = trace(3000, &[], None);
    let new = trace(15_000, &[], None);
    let m = matched_within(&base, &new, window);
    assert_eq!(m.identical, 3000);
    assert_eq!(m.outcomes_compared, 3000);
    assert_eq!(m.outputs_one_sided, [0, 12_000]);
    assert_eq!(m.submissions_one_sided, [0, 12_000]);
    assert_eq!(m.unmatched_past_window, [0, 2 * (12_000 - window as u64)]);
    // The whole window: nothing leaves it, the counts are the same.
    let m = matched(&base, &new);
    assert_eq!(m.unmatched_past_window, [0, 0]);
    assert_eq!(m.outputs_one_sided, [0, 12_000]);
}

/// A cut copy of a trace longer than the window: the keys past its end leave the window
/// as past its end, not as a sequence difference (they read as "the submission sequences
/// differ" at scale: a break-it pass).
#[test]
fn keys_past_a_cut_traces_end_are_not_said_to_have_left_the_window() {
    let window = 8192;
    let base = trace(15_000, &[], None);
    let cut = trace(3000, &[], None);
    let (bp, mut np) = (profile_records(&base), profile_records(&cut));
    np.recovery = Some(hrx_capture::Recovery::default());
    let m = match_within((&bp, stream(&base)), (&np, stream(&cut)), window).unwrap();
    assert_eq!(m.identical, 3000);
    assert_eq!(m.unmatched_past_window, [0, 0], "{m:?}");
    assert_eq!(m.outputs_one_sided, [12_000, 0]);
    assert_eq!(m.outputs_past_end[0], m.outputs_one_sided[0]);
    assert_eq!(m.submissions_past_end[0], m.submissions_one_sided[0]);
}

#[test]
fn digests_before_their_submit_are_keyed_by_graph() {
    let base = trace(20, &[], None);
    // Every digest ahead of every record of its submission.
    let (digests, rest): (Vec<Record>, Vec<Record>) = base
        .iter()
        .cloned()
        .partition(|r| matches!(r, Record::OutputDigest(_)));
    let first = rest
        .iter()
        .position(|r| matches!(r, Record::Submit(_)))
        .unwrap();
    let mut new = rest[..first].to_vec();
    new.extend(digests);
    new.extend_from_slice(&rest[first..]);
    let m = matched(&base, &new);
    assert_eq!(m.identical, 20);
    assert_eq!(m.outputs_one_sided, [0; 2]);
}

#[test]
fn a_digest_whose_submit_never_comes_is_keyed_by_number_and_not_late() {
    let base = trace(20, &[], None);
    // The new side lost the last submission's `Submit` (a cut): its digest is handed over
    // without it at the end and keyed by submission number, so it meets nothing.
    let mut new = base.clone();
    new.retain(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 19));
    let m = matched(&base, &new);
    assert!(m.by_graph);
    assert_eq!((m.identical, m.differing.len()), (19, 0));
    assert_eq!(m.outputs_one_sided, [1, 1]);
    assert_eq!(m.late_records, [0; 2]);
}

#[test]
fn several_digests_of_one_key_in_a_submission_are_paired_in_order() {
    // An upload into a range, then a kernel filling it: two digests of one key per
    // submission, told apart only by their order.
    let mut records = Vec::new();
    for r in trace(50, &[], None) {
        if let Record::OutputDigest(d) = &r {
            let mut filled = d.clone();
            filled.xxh3 = 1000 + d.submission.0;
            records.push(r.clone());
            records.push(Record::OutputDigest(filled));
        } else {
            records.push(r);
        }
    }
    let m = matched(&records, &records);
    assert_eq!(m.identical, 100);
    assert!(m.differing.is_empty(), "{:?}", m.differing.first());
    assert_eq!(m.outputs_one_sided, [0; 2]);
    // One side lacks the second digest of submission 7: counted one-sided, the rest
    // still meet their partners.
    let mut fewer = records.clone();
    let at = fewer
        .iter()
        .position(|r| matches!(r, Record::OutputDigest(d) if d.xxh3 == 1007))
        .unwrap();
    fewer.remove(at);
    let m = matched(&records, &fewer);
    assert_eq!((m.identical, m.differing.len()), (99, 0));
    assert_eq!(m.outputs_one_sided, [1, 0]);
}

/// [`trace`] with a second prepared graph of the same structure: submissions alternate
/// between the two, x first (`yx`: y first), and each digest tells its graph and its
/// index among that graph's submissions apart.
fn two_graphs(submissions: u64, yx: bool, failed: Option<u64>) -> Vec<Record> {
    let mut out = Vec::new();
    let mut of = HashMap::new();
    let mut nth = [0u64; 2];
    for r in trace(submissions, &[], failed) {
        match r {
            Record::Prepared(p) => {
                let mut y = p.clone();
                y.prepared = PreparedId(p.prepared.0 + 1);
                out.push(Record::Prepared(p));
                out.push(Record::Prepared(y));
            }
            Record::Submit(mut s) => {
                let graph = (s.submission.0 % 2) ^ u64::from(yx);
                s.prepared = PreparedId(s.prepared.0 + graph);
                of.insert(s.submission, (graph, nth[graph as usize]));
                nth[graph as usize] += 1;
                out.push(Record::Submit(s));
            }
            Record::OutputDigest(mut d) => {
                let (graph, nth) = of[&d.submission];
                d.xxh3 = (graph << 32) | nth;
                out.push(Record::OutputDigest(d));
            }
            r => out.push(r),
        }
    }
    out
}

#[test]
fn outcomes_are_paired_by_graph_as_outputs_are() {
    // Graph x's 5th submission fails in both: submission 8 of xy..., 9 of yx...
    let base = two_graphs(50, false, Some(8));
    let new = two_graphs(50, true, Some(9));
    let m = matched(&base, &new);
    assert!(m.by_graph);
    assert_eq!((m.identical, m.differing.len()), (50, 0));
    assert!(m.changed.is_empty(), "{:?}", m.changed);
    assert_eq!(m.outcomes_compared, 50);
    // Graph x's 5th failing in one only: one changed outcome, keyed by graph and index,
    // with both submission numbers.
    let m = matched(&base, &two_graphs(50, true, None));
    assert_eq!(m.changed.len(), 1);
    assert_eq!(
        (m.changed[0].key, m.changed[0].submission),
        ((0, 0, 4), [8, 9])
    );
}

#[test]
fn another_run_length_of_the_same_graphs_pairs_by_graph() {
    // Two more submissions, one of each graph, in another order: every output of base
    // meets its graph's, the new ones are one-sided, none is compared with another
    // graph's.
    let base = two_graphs(50, false, None);
    let new = two_graphs(52, true, None);
    let m = matched(&base, &new);
    assert!(m.by_graph);
    assert_eq!((m.identical, m.differing.len()), (50, 0));
    assert_eq!(m.outputs_one_sided, [0, 2]);
    assert_eq!((m.outcomes_compared, m.submissions_one_sided), (50, [0, 2]));
}

#[test]
fn region_durations_are_kept_per_region_key() {
    let records = trace(10, &[], None);
    let p = profile_records(&records);
    assert_eq!(p.regions.len(), 4);
    let (label, sketch) = &p.regions[&RegionKey {
        runtime: 0,
        prepared: 0,
        region: 1,
    }];
    assert_eq!(label, "blur +1");
    assert_eq!(sketch.count(), 10);
    assert_eq!(p.submissions, 10);
    assert_eq!(p.shape, BTreeMap::from([((0, 0), 10)]));
}

/// [`trace`] as a program preparing two graphs of one shape that differ only in what their
/// first operation computes: a fill of `fills[0]` (prepared first), then of `fills[1]`.
/// Submissions alternate between them; each digest tells the fill value of its graph and
/// its index among that graph's submissions apart.
pub(super) fn two_fills(submissions: u64, fills: [u8; 2]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut of = HashMap::new();
    let mut nth = [0u64; 2];
    for r in trace(submissions, &[], None) {
        match r {
            Record::GraphOp(op) => {
                for (g, value) in fills.into_iter().enumerate() {
                    let mut op = op.clone();
                    op.graph = GraphId(op.graph.0 + g as u64);
                    if op.node.0 == 0 {
                        op.op = OpKind::Fill { value };
                    }
                    out.push(Record::GraphOp(op));
                }
            }
            Record::Prepared(p) => {
                let mut y = p.clone();
                y.prepared = PreparedId(p.prepared.0 + 1);
                y.graph = GraphId(p.graph.0 + 1);
                out.push(Record::Prepared(p));
                out.push(Record::Prepared(y));
            }
            Record::Submit(mut s) => {
                let graph = s.submission.0 % 2;
                s.prepared = PreparedId(s.prepared.0 + graph);
                of.insert(s.submission, (fills[graph as usize], nth[graph as usize]));
                nth[graph as usize] += 1;
                out.push(Record::Submit(s));
            }
            Record::OutputDigest(mut d) => {
                let (fill, nth) = of[&d.submission];
                d.xxh3 = (u64::from(fill) << 32) | nth;
                out.push(Record::OutputDigest(d));
            }
            r => out.push(r),
        }
    }
    out
}

#[test]
fn graphs_of_one_shape_pair_by_what_they_compute() {
    // Two programs prepare the same two graphs, the fill of 1 and the fill of 2, in
    // opposite orders. Their regions, labels and byte ranges are the same: only the fill
    // values tell them apart. Aligned by structure alone, rank 0 paired the fill of 1 with
    // the fill of 2 and every output differed.
    let base = two_fills(50, [1, 2]);
    let new: Vec<Record> = two_fills(50, [2, 1])
        .into_iter()
        .map(another_process)
        .collect();
    let (bp, mut np) = (profile_records(&base), profile_records(&new));
    assert_eq!(align(&bp, &mut np), 2);
    fn stream(records: &[Record]) -> Records<'_> {
        Box::new(records.iter().map(|r| Ok(r.clone())))
    }
    let m = match_streams((&bp, stream(&base)), (&np, stream(&new))).unwrap();
    assert!(m.by_graph);
    assert_eq!(
        (m.identical, m.differing.len()),
        (50, 0),
        "{:?}",
        m.differing
    );
    assert_eq!(m.outputs_one_sided, [0; 2]);
    // The same program twice: nothing moves, everything matches.
    let mut again = profile_records(&base);
    assert_eq!(align(&bp, &mut again), 0);
}

/// [`trace`] as a program whose two threads each prepare a graph of one signature over
/// buffers of their own (the first prepared over buffers 0-4, the second over 100-104) and
/// submit it in turn: `threads[k]` is what the k-th prepared graph computes, the digest of
/// its every output and (`Some`) that of the host's write to its input buffer (0, 100)
/// before the first submission. The same program with its threads preparing in the other
/// order swaps `threads`.
fn two_threads(submissions: u64, threads: [(u64, Option<u64>); 2]) -> Vec<Record> {
    two_threads_by(submissions, threads, |s| s % 2)
}

/// [`two_threads`] with submission `s` made of graph `graph_of(s)` (0 or 1): the threads'
/// submits interleaved another way.
fn two_threads_by(
    submissions: u64,
    threads: [(u64, Option<u64>); 2],
    graph_of_submission: impl Fn(u64) -> u64,
) -> Vec<Record> {
    use hrx_capture::schema::HostWrite;
    let moved = |b: BufferId, g: u64| BufferId(b.0 + 100 * g);
    let mut out = Vec::new();
    let mut graph_of = HashMap::new();
    let mut written = false;
    for r in trace(submissions, &[], None) {
        match r {
            Record::BufferCreated(b) => {
                for g in 0..2 {
                    let mut b = b.clone();
                    b.buffer = moved(b.buffer, g);
                    out.push(Record::BufferCreated(b));
                }
            }
            Record::GraphOp(op) => {
                for g in 0..2 {
                    let mut op = op.clone();
                    op.graph = GraphId(op.graph.0 + g);
                    for u in &mut op.uses {
                        u.buffer = moved(u.buffer, g);
                    }
                    out.push(Record::GraphOp(op));
                }
            }
            Record::Prepared(p) => {
                for g in 0..2 {
                    let mut p = p.clone();
                    p.prepared = PreparedId(p.prepared.0 + g);
                    p.graph = GraphId(p.graph.0 + g);
                    out.push(Record::Prepared(p));
                }
            }
            Record::Submit(mut s) => {
                for (g, &(_, input)) in threads.iter().enumerate().filter(|_| !written) {
                    let Some(xxh3) = input else { continue };
                    out.push(Record::HostWrite(HostWrite {
                        runtime: s.runtime,
                        buffer: moved(BufferId(0), g as u64),
                        offset: 0,
                        len_bytes: 256,
                        xxh3,
                        contents: Payload::Omitted { len_bytes: 256 },
                        time_ns: s.time_ns,
                    }));
                }
                written = true;
                let g = graph_of_submission(s.submission.0);
                s.prepared = PreparedId(s.prepared.0 + g);
                graph_of.insert(s.submission, g);
                out.push(Record::Submit(s));
            }
            Record::OutputDigest(mut d) => {
                let g = graph_of[&d.submission];
                d.buffer = moved(d.buffer, g);
                d.xxh3 = threads[g as usize].0;
                out.push(Record::OutputDigest(d));
            }
            r => out.push(r),
        }
    }
    out
}

/// `base` and `new` profiled, aligned ([`align_graphs`]) and matched, `new` as another
/// recording (another process: the synthetic records share one session).
fn aligned(base: &[Record], new: &[Record]) -> (Aligned, Matched) {
    let new: Vec<Record> = new.iter().cloned().map(another_process).collect();
    aligned_as_recorded(base, &new)
}

/// `record`, of another process (pid 2) where it is a session's start.
fn another_process(record: Record) -> Record {
    match record {
        Record::SessionStart(mut s) => {
            s.pid = 2;
            Record::SessionStart(s)
        }
        r => r,
    }
}

/// [`aligned`] with both sessions as they are.
fn aligned_as_recorded(base: &[Record], new: &[Record]) -> (Aligned, Matched) {
    let (bp, mut np) = (profile_records(base), profile_records(new));
    let aligned = align_graphs(&bp, &mut np);
    let m = match_streams((&bp, stream(base)), (&np, stream(new))).unwrap();
    (aligned, m)
}

#[test]
fn graphs_of_one_signature_pair_by_what_they_computed_whichever_thread_prepared_first() {
    // Session 57: two threads each prepare a graph of one signature over data of their
    // own; which prepares first is a race. Paired by id order, graph 1 of one run was the
    // other thread's graph of the next, and every output differed: a regression.
    let (a, b) = ((0xa, Some(0x1a)), (0xb, Some(0x1b)));
    let base = two_threads(50, [a, b]);
    let (done, m) = aligned(&base, &two_threads(50, [b, a]));
    assert_eq!((done.moved, done.in_order.len()), (2, 0), "{done:?}");
    assert!(m.by_graph);
    assert_eq!((m.identical, m.differing.len()), (50, 0));
    assert_eq!(m.outputs_one_sided, [0; 2]);
    // The same order: nothing moves.
    let (done, m) = aligned(&base, &base);
    assert_eq!((done, m.identical), (Aligned::default(), 50));
    // Thread a's output changed (its inputs not), prepared second: its 25 outputs differ,
    // named on its graph in base (rank 0), none of b's.
    let (done, m) = aligned(&base, &two_threads(50, [b, (0xaa, a.1)]));
    assert_eq!((done.moved, done.in_order.len()), (2, 0), "{done:?}");
    assert_eq!((m.identical, m.differing.len()), (25, 25));
    assert!(
        m.differing
            .iter()
            .all(|d| d.key.1 == 0 && (d.base.0, d.new.0) == (0xa, 0xaa)),
        "{:?}",
        m.differing.first()
    );
    // Thread a's output and inputs changed: b pairs by its outputs, a with what is left.
    let (done, m) = aligned(&base, &two_threads(50, [b, (0xaa, Some(0x2a))]));
    assert_eq!((done.moved, done.in_order.len()), (2, 0), "{done:?}");
    assert!(
        m.differing.iter().all(|d| d.key.1 == 0),
        "{:?}",
        m.differing
    );
}

#[test]
fn graphs_whose_outputs_all_changed_pair_by_their_inputs_else_in_order_and_say_so() {
    // Both threads' outputs changed (a kernel they share computes otherwise): the host's
    // writes to their inputs still tell them apart.
    let (a, b) = ((0xa, Some(0x1a)), (0xb, Some(0x1b)));
    let base = two_threads(50, [a, b]);
    let (done, m) = aligned(&base, &two_threads(50, [(0xbb, b.1), (0xaa, a.1)]));
    assert_eq!((done.moved, done.in_order.len()), (2, 0), "{done:?}");
    assert_eq!(m.differing.len(), 50);
    let on = |graph: u64| {
        let d = m.differing.iter().filter(|d| d.key.1 == graph);
        d.map(|d| (d.base.0, d.new.0)).collect::<BTreeSet<_>>()
    };
    assert_eq!(on(0), BTreeSet::from([(0xa, 0xaa)]));
    assert_eq!(on(1), BTreeSet::from([(0xb, 0xbb)]));
    // Nothing recorded of their inputs: nothing tells them apart, so they pair in the
    // order they were prepared, and that is said (graphs 0 and 1 of runtime 0).
    let base = two_threads(50, [(0xa, None), (0xb, None)]);
    let (done, m) = aligned(&base, &two_threads(50, [(0xbb, None), (0xaa, None)]));
    assert_eq!(done.moved, 0);
    assert_eq!(done.in_order, [(0, vec![0, 1])]);
    assert_eq!(m.differing.len(), 50);
    // Without inputs recorded, outputs alone still pair a swap; identical graphs (what
    // they computed the same) pair in order without a word.
    let (done, _) = aligned(&base, &two_threads(50, [(0xb, None), (0xa, None)]));
    assert_eq!((done.moved, done.in_order.len()), (2, 0), "{done:?}");
    let same = two_threads(50, [(0xa, None), (0xa, None)]);
    let (done, m) = aligned(&same, &same);
    assert_eq!((done, m.identical), (Aligned::default(), 50));
}

/// A trim of a recording (its session, its graphs' ids) against the whole: its graphs pair
/// by id, nothing moves and nothing is said, though what each computed over the trim's
/// submissions matches none of the whole's (a break-it pass warned of "graphs 1, 2, 3 ...
/// paired in the order they were prepared" against the README's own trim). Another
/// process's recording of the threads in the other order is still paired by what each
/// computed.
#[test]
fn a_trim_pairs_with_its_recording_by_id_without_a_warning() {
    // Each submission's output its own (a pipeline's frames), no input recorded: over the
    // trim's submissions no fingerprint part matches the whole's.
    let frames = |records: Vec<Record>| -> Vec<Record> {
        let vary = |r: Record| match r {
            Record::OutputDigest(mut d) => {
                d.xxh3 ^= d.submission.0 << 40;
                Record::OutputDigest(d)
            }
            r => r,
        };
        records.into_iter().map(vary).collect()
    };
    let whole = frames(two_threads(50, [(0xa, None), (0xb, None)]));
    let part = trimmed(&whole, 10, 20);
    let (done, m) = aligned_as_recorded(&whole, &part);
    assert_eq!(done, Aligned::default());
    assert!(m.differing.is_empty(), "{:?}", m.differing.first());
    assert!(m.identical > 0);
    // As another process's recording, nothing tells them apart: paired in order, said.
    let (done, _) = aligned(&whole, &part);
    assert_eq!(done.in_order, [(0, vec![0, 1])]);
}

/// A trim of one recording against another recording of the program, whose threads
/// interleaved their submits otherwise: the trim's range holds one thread's submissions
/// only, the other's the same numbers of both. Their graphs pair by what they computed and
/// a graph's submissions by their order among its own in the range (one-sided where one
/// side holds more), not by submission number, which names another thread's submission in
/// the other recording: that read every output as differing, a regression (a break-it
/// pass, session 58; `diff b.hrxt at.hrxt` of two recordings of `host_visible 2000 4`).
#[test]
fn a_trim_against_another_recording_pairs_by_graph_though_a_graph_is_not_in_its_range() {
    let threads = [(0xa, None), (0xb, None)];
    let base = two_threads(40, threads);
    // The other recording: the first thread ran its submits first, the second after.
    let other = two_threads_by(40, threads, |s| u64::from(s >= 20));
    let part: Vec<Record> = trimmed(&other, 25, 35)
        .into_iter()
        .map(another_process)
        .collect();
    let (bp, mut np) = (profile_records(&base), profile_records(&part));
    align_graphs(&bp, &mut np);
    let m = match_streams((&bp, stream(&base)), (&np, stream(&part))).unwrap();
    assert!(m.differing.is_empty(), "{:?}", m.differing.first());
    assert!(m.identical > 0, "{m:?}");
    // The one-sided submissions are said to come of the numbering, not of a change.
    let c = compare(&bp, &np, &m, 2.0);
    assert_eq!(c.verdict_name(), "different", "{:?}", c.reasons);
    assert!(
        (c.reasons.iter()).any(|r| r.contains("the range new holds")
            && r.contains("(by submission number: in another recording")),
        "{:?}",
        c.reasons
    );
    // Against its own recording, no such words: the numbers are the same submissions.
    let own = trimmed(&other, 25, 35);
    let (op, mut tp) = (profile_records(&other), profile_records(&own));
    align_graphs(&op, &mut tp);
    let m = match_streams((&op, stream(&other)), (&tp, stream(&own))).unwrap();
    let c = compare(&op, &tp, &m, 2.0);
    assert!(
        !(c.reasons.iter()).any(|r| r.contains("by submission number")),
        "{:?}",
        c.reasons
    );
}

/// A recording that lost submissions (lossy, or damaged) pairs outputs by submission number;
/// against another run of a multi-threaded program, whose threads submitted in another
/// order, two different graphs' outputs at one number are not compared and are said, not
/// read as differing: a lossy run of `host_visible 3000000 8` against a whole one read
/// 294,933 differing outputs, a regression (a fresh user's pass, session 59). A run whose
/// threads' order matches still compares each output.
#[test]
fn outputs_of_other_graphs_at_one_number_are_not_compared() {
    let threads = [(0xa, None), (0xb, None)];
    let base = two_threads(40, threads);
    let lost = |records: Vec<Record>| -> Vec<Record> {
        (records.into_iter())
            .filter(|r| !matches!(r, Record::Submit(s) if s.submission.0 == 3))
            .map(another_process)
            .collect()
    };
    let matched_lossy = |new: &[Record]| {
        let (bp, mut np) = (profile_records(&base), profile_records(new));
        np.recovery = Some(hrx_capture::Recovery {
            missing_submissions: 1,
            ..Default::default()
        });
        align_graphs(&bp, &mut np);
        let m = match_streams((&bp, stream(&base)), (&np, stream(new))).unwrap();
        let c = compare(&bp, &np, &m, 2.0);
        (m, c)
    };
    // The threads submitted in another order: half the numbers name the other graph.
    let (m, c) = matched_lossy(&lost(two_threads_by(40, threads, |s| u64::from(s >= 20))));
    assert!(m.differing.is_empty(), "{:?}", m.differing.first());
    assert!(m.outputs_of_other_graphs > 0, "{m:?}");
    assert!(m.identical > 0, "{m:?}");
    assert_ne!(c.verdict_name(), "regression", "{:?}", c.reasons);
    assert!(
        (c.reasons.iter()).any(|r| r.contains(
            "not compared: at one submission number the \
             traces ran different graphs"
        )),
        "{:?}",
        c.reasons
    );
    // In the same order: every output compared, none set aside.
    let (m, _) = matched_lossy(&lost(two_threads(40, threads)));
    assert_eq!(m.outputs_of_other_graphs, 0, "{m:?}");
    assert!(m.differing.is_empty(), "{:?}", m.differing.first());
}

/// `records` as `trim --submissions start..end` writes them: the records of submissions
/// outside the range left out, a `TraceRange` naming it.
fn trimmed(records: &[Record], start: u64, end: u64) -> Vec<Record> {
    use hrx_capture::schema::{RuntimeId, SubmissionIndex, TraceRange};
    let outside = |s: &SubmissionIndex| !(start..end).contains(&s.0);
    let mut out = Vec::new();
    for r in records {
        let dropped = match r {
            Record::Submit(s) => outside(&s.submission),
            Record::RegionTiming(t) => outside(&t.submission),
            Record::RegionStarted(t) => outside(&t.submission),
            Record::RegionDone(d) => outside(&d.submission),
            Record::SubmissionDone(d) => outside(&d.submission),
            Record::OutputDigest(d) => outside(&d.submission),
            Record::CrossWait(w) => outside(&w.submission) || outside(&w.on_submission),
            _ => false,
        };
        if !dropped {
            out.push(r.clone());
        }
        if let Record::SessionStart(_) = r {
            out.push(Record::TraceRange(TraceRange {
                runtime: RuntimeId(1),
                start: SubmissionIndex(start),
                end: Some(SubmissionIndex(end)),
                trigger: format!("submissions:{start}..{end}"),
                trimmed_from: Some("whole.hrxt".to_owned()),
                time_ns: 0,
                fault: None,
            }));
        }
    }
    out
}

/// A whole run against its trim: the kernels and regions are timed over the trim's
/// submissions on both sides, as its outputs and outcomes are compared (the whole run's
/// were timed over every submission: other counts, and here ten times slower outside it).
#[test]
fn timings_are_compared_over_the_submissions_both_traces_hold() {
    let records = trace(20, &[], None);
    let whole: Vec<Record> = records
        .iter()
        .cloned()
        .map(|r| match r {
            Record::RegionTiming(mut t) if !(4..7).contains(&t.submission.0) => {
                t.end_ns = t.start_ns + 10 * (t.end_ns - t.start_ns);
                Record::RegionTiming(t)
            }
            r => r,
        })
        .collect();
    let trim = trimmed(&records, 4, 7);
    let (mut b, mut n) = (profile_records(&whole), profile_records(&trim));
    assert_ne!(b.kernels, n.kernels);
    limit_timings_records((&mut b, &whole), (&mut n, &trim));
    assert_eq!(b.kernels, n.kernels);
    let runs: u64 = b.kernels.values().map(|k| k.count).sum();
    assert_eq!(runs, 3 * crate::synthetic::REGIONS_PER_SUBMISSION);
    assert_eq!(b.regions.len(), n.regions.len());
    for ((key, (_, base)), (_, new)) in b.regions.iter().zip(n.regions.values()) {
        assert_eq!(base.count(), 3, "{key:?}");
        let p50 = |s: &crate::sketch::Sketch| s.clone().percentile(50.0);
        assert_eq!(p50(base), p50(new), "{key:?}");
    }
    // Both sides hold only the trim's: neither is read again.
    let (mut t1, mut t2) = (profile_records(&trim), profile_records(&trim));
    limit_timings_records((&mut t1, &[]), (&mut t2, &[]));
    assert_eq!(t1.kernels, n.kernels);
    let c = compare(&b, &n, &matched(&whole, &trim), 2.0);
    assert_eq!(c.verdict_name(), "same", "{:?}", c.reasons);
    assert!(c.kernels.iter().all(|k| k.ratio() == Some(1.0)));
    assert!(c.regions.times.iter().all(|t| t.ratio() == Some(1.0)));
}

/// Two ranges with no submission in common: nothing is compared, which is said in one
/// line and is no match (exit 2); overlapping ones compare what both hold.
#[test]
fn ranges_without_a_submission_in_common_compare_nothing_and_say_so() {
    let records = trace(30, &[], None);
    let (base, new) = (trimmed(&records, 0, 10), trimmed(&records, 20, 30));
    let (mut b, mut n) = (profile_records(&base), profile_records(&new));
    limit_timings_records((&mut b, &base), (&mut n, &new));
    assert!(b.kernels.is_empty() && n.kernels.is_empty());
    let c = compare(&b, &n, &matched(&base, &new), 2.0);
    let line = "the traces hold no submission in common (base 0..10, new 20..30): nothing compared";
    assert_eq!(c.nothing_compared.as_deref(), Some(line));
    assert_eq!(c.reasons[0], line);
    assert_eq!((c.verdict_name(), c.exit_code()), (NOTHING_COMPARED, 2));
    // 5..10 in common.
    let new = trimmed(&records, 5, 30);
    let (mut b, mut n) = (profile_records(&base), profile_records(&new));
    limit_timings_records((&mut b, &base), (&mut n, &new));
    let m = matched(&base, &new);
    assert_eq!((m.identical, m.outcomes_compared), (5, 5));
    let c = compare(&b, &n, &m, 2.0);
    assert_eq!(c.nothing_compared, None);
    assert_eq!(
        (c.verdict_name(), c.exit_code()),
        ("same", 0),
        "{:?}",
        c.reasons
    );
}

/// Diff's rule for where an output lives ([`Place::of`]), which replay keys by too.
#[test]
fn an_output_is_placed_at_the_first_use_writing_exactly_its_range() {
    // (node, use, buffer, start, end), out of order; node 1 writes buffer 7 twice.
    let writes = [
        (2, 0, 7, 0, 64),
        (1, 1, 7, 0, 64),
        (1, 0, 7, 0, 32),
        (0, 0, 8, 0, 64),
    ];
    assert_eq!(Place::of(&writes, 7, 0, 64), Place::Use(1, 1));
    assert_eq!(Place::of(&writes, 7, 0, 32), Place::Use(1, 0));
    // A sub-range or another buffer is no use's: the buffer stands for it.
    assert_eq!(Place::of(&writes, 7, 0, 16), Place::Buffer(7));
    assert_eq!(Place::of(&[], 9, 0, 64), Place::Buffer(9));
}

/// A trim pairs as the traces it was cut from: a graph's n-th submission is counted among
/// the submissions both sides hold. A trim of every submission of a run whose threads
/// submitted x and y in one order, against a run that submitted them in the other, matches
/// as the two whole runs do (paired by number, x's submissions met y's: every output
/// differed); a trim of the middle against its own run pairs each submission with itself.
#[test]
fn a_trim_pairs_its_submissions_by_graph_as_whole_traces_do() {
    let (xy, yx) = (two_graphs(50, false, None), two_graphs(50, true, None));
    let whole = matched(&xy, &yx);
    assert_eq!((whole.identical, whole.differing.len()), (50, 0));
    let numbers: Vec<u64> = xy
        .iter()
        .filter_map(|r| match r {
            Record::Submit(s) => Some(s.submission.0),
            _ => None,
        })
        .collect();
    let (first, last) = (numbers[0], numbers[numbers.len() - 1]);
    assert_eq!(last - first + 1, 50);
    let all = trimmed(&xy, first, last + 1);
    for (base, new) in [(&all, &yx), (&yx, &all)] {
        let m = matched(base, new);
        assert!(m.by_graph);
        assert_eq!(
            (m.identical, m.differing.len()),
            (50, 0),
            "{:?}",
            m.differing
        );
        assert!(m.changed.is_empty(), "{:?}", m.changed);
    }
    let middle = trimmed(&xy, first + 10, first + 20);
    let m = matched(&xy, &middle);
    assert_eq!(
        (m.identical, m.differing.len()),
        (10, 0),
        "{:?}",
        m.differing
    );
    assert_eq!(m.outputs_one_sided, [0, 0]);
}

/// `records` with a fill inserted before the download (node 3 becomes node 4, and so on),
/// into the compute region: a graph that gained an operation before the writer of its
/// output.
fn with_fill_before_download(records: &[Record]) -> Vec<Record> {
    let shift = |n: u32| if n >= 3 { n + 1 } else { n };
    let mut out = Vec::new();
    for r in records {
        let mut r = r.clone();
        match &mut r {
            Record::GraphOp(op) => {
                if op.node.0 == 3 {
                    let mut fill = op.clone();
                    fill.op = OpKind::Fill { value: 9 };
                    fill.uses.truncate(1);
                    fill.uses[0].buffer = BufferId(9);
                    fill.uses[0].access = hrx_capture::schema::Access::Write;
                    out.push(Record::GraphOp(fill));
                }
                op.node.0 = shift(op.node.0);
            }
            Record::Prepared(p) => {
                for region in &mut p.regions {
                    for n in &mut region.nodes {
                        n.0 = shift(n.0);
                    }
                }
                p.regions[1].nodes.push(hrx_capture::schema::NodeIndex(3));
            }
            _ => {}
        }
        out.push(r);
    }
    out
}

/// An operation added to a graph before the one that writes an output shifts that
/// operation's node; its outputs still pair with the base's (by the writer's name and rank),
/// so a changed digest is a differing output, not one output only in base and another only
/// in new (found by a new user: a clobbered download passed as "0 compared").
#[test]
fn outputs_pair_across_an_operation_added_before_their_writer() {
    let base = trace(20, &[], None);
    let new = with_fill_before_download(&trace(20, &[7], None));
    let m = matched(&base, &new);
    assert_eq!(m.outputs_one_sided, [0, 0]);
    assert_eq!(m.identical, 19);
    assert_eq!(m.differing.len(), 1);
    assert_eq!(m.differing[0].base.2, 7);
    // Placed by the download (the graph's second copy, its second use).
    assert!(matches!(
        m.differing[0].key.3,
        Place::Op {
            nth: 1,
            use_: 1,
            node: 3 | 4,
            ..
        }
    ));
}

/// Runtimes rank among those the trace started, not only among those that did work: a
/// recording cut while its first-created runtime had done nothing yet ranks its second one
/// as the whole run does. It ranked it first, so `diff` compared it with the whole run's
/// first runtime (a false regression of a cut copy: a break-it pass).
#[test]
fn a_runtime_that_did_nothing_yet_keeps_its_rank() {
    let first = trace(4, &[], None);
    let is_start = |r: &&Record| matches!(r, Record::RuntimeStart(_));
    let start: Vec<Record> = first.iter().filter(is_start).cloned().collect();
    assert_eq!(start.len(), 1);
    let second = crate::synthetic::on_runtime(&trace(4, &[], None), 7);
    // The first runtime is created first and works last.
    let mut whole = start.clone();
    whole.extend(second.iter().cloned());
    whole.extend(first.iter().filter(|r| !is_start(r)).cloned());
    let mut cut = start;
    cut.extend(second.iter().cloned());
    let (w, c) = (profile_records(&whole), profile_records(&cut));
    let first_id = match first.iter().find(is_start) {
        Some(Record::RuntimeStart(s)) => s.runtime,
        _ => unreachable!(),
    };
    let second_id = hrx_capture::schema::RuntimeId(7);
    for ranks in [
        |p: &Profile| p.places.outcome_runtime.clone(),
        |p: &Profile| p.places.output_runtime.clone(),
        |p: &Profile| p.places.graph_runtime.clone(),
    ] {
        assert_eq!(ranks(&w).get(&second_id), Some(&1), "{:?}", ranks(&w));
        assert_eq!(ranks(&c).get(&second_id), Some(&1), "{:?}", ranks(&c));
        assert_eq!(ranks(&c).get(&first_id), Some(&0), "{:?}", ranks(&c));
    }
}
