//! Concurrency stress: 100,000 random submissions from 16 threads over shared, partly
//! overlapping buffers, traced, and a checker that proves from the trace alone that
//! conflicting work never overlapped in time and ran in submission order.
//!
//! # The checker
//!
//! It reads `Prepared` (each region's declared uses), `Submit` (submission order),
//! `RegionTiming` (host start/end of every region that ran), `RegionDone`,
//! `SubmissionDone` and `CrossWait` records, and proves:
//!
//! 1. **Order.** Two region executions conflict when they touch an overlapping byte
//!    range of one buffer and at least one writes. Walking executions in submission order
//!    (submission index, then region index), each one must start no earlier than every
//!    earlier conflicting execution ended: per byte it keeps the latest end of any earlier
//!    writer (read-after-write, write-after-write) and of any earlier access
//!    (write-after-read). This implies both "no two conflicting operations overlapped in
//!    time" and "conflicting work ran in submission order".
//! 2. **Cross waits are sound.** Every `CrossWait` points to an earlier submission, names
//!    a hazard that the two regions' declared uses really have, and its producer ended
//!    before its consumer started.
//! 3. **Cross waits are complete.** Submit and completion records are stamped under the
//!    scheduler lock on one clock, so a region whose `RegionDone` is later than a later
//!    submission's `Submit` was unfinished at that submit: if they conflict, the later
//!    submission must have recorded a `CrossWait` on it, or on a region of that submission
//!    that depends on it, transitively (a large graph's waits name the regions at its
//!    frontier's end only, which come after every region before them that they conflict
//!    with); or one of the later region's ancestors in its own graph recorded one (a region
//!    waits across only for bytes no earlier region of its graph wrote, `CrossUses`).
//! 4. Every submission retired once and succeeded, and every region ran once.
//!
//! The unit tests at the bottom feed it synthetic record streams with injected
//! violations (shifted timings, reversed order, a missing cross wait) and a real trace
//! with one timing shifted, and check it rejects each.

use hrx::{Access, GpuAccess, Placement, Runtime, RuntimeOptions};
use hrx_capture::schema::{self as s, Record};
use hrx_capture::{MemorySink, Recorder, RecorderOptions, Trace};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the checker proved.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Submissions checked.
    pub submissions: usize,
    /// Region executions checked.
    pub executions: usize,
    /// Pairs of executions found conflicting and ordered (per byte, the latest one).
    pub ordered_pairs: u64,
    /// `CrossWait` records verified.
    pub cross_waits: usize,
    /// Conflicting (earlier unfinished, later submitted) pairs whose `CrossWait` was found.
    pub required_cross_waits: usize,
}

fn writes(access: s::Access) -> bool {
    matches!(access, s::Access::Write | s::Access::ReadWrite)
}

fn conflict(a: &s::Use, b: &s::Use) -> bool {
    a.buffer == b.buffer
        && a.start < b.end
        && b.start < a.end
        && (writes(a.access) || writes(b.access))
}

fn regions_conflict(a: &s::Region, b: &s::Region) -> bool {
    a.uses.iter().any(|u| b.uses.iter().any(|v| conflict(u, v)))
}

/// Per buffer byte: the latest end time (and which execution) of earlier writers and of
/// earlier accesses.
#[derive(Clone, Copy, Default)]
struct Last {
    write: (u64, u64, u32),
    access: (u64, u64, u32),
}

/// Checks a trace's records (module docs); the error names the first violation.
pub fn check(records: &[Record]) -> Result<Checked, String> {
    let mut prepared: HashMap<u64, &s::Prepared> = HashMap::new();
    let mut submits: BTreeMap<u64, &s::Submit> = BTreeMap::new();
    let mut timing: HashMap<(u64, u32), (u64, u64)> = HashMap::new();
    let mut region_done: HashMap<(u64, u32), u64> = HashMap::new();
    let mut done: HashMap<u64, u64> = HashMap::new();
    let mut cross: HashSet<(u64, u32, u64, u32)> = HashSet::new();
    let mut cross_records = Vec::new();
    for record in records {
        match record {
            Record::Prepared(p) => {
                prepared.insert(p.prepared.0, p);
            }
            Record::Submit(x) => {
                let previous = submits.insert(x.submission.0, x);
                if previous.is_some() {
                    return Err(format!("submission {} submitted twice", x.submission.0));
                }
            }
            Record::RegionTiming(t) => {
                if t.end_ns < t.start_ns {
                    return Err(format!(
                        "{}/{} ends before it starts",
                        t.submission.0, t.region.0
                    ));
                }
                if timing
                    .insert((t.submission.0, t.region.0), (t.start_ns, t.end_ns))
                    .is_some()
                {
                    return Err(format!("{}/{} ran twice", t.submission.0, t.region.0));
                }
            }
            Record::RegionDone(d) => {
                if d.status != s::Status::Ok {
                    return Err(format!("{}/{}: {:?}", d.submission.0, d.region.0, d.status));
                }
                region_done.insert((d.submission.0, d.region.0), d.time_ns);
            }
            Record::SubmissionDone(d) => {
                if d.status != s::Status::Ok {
                    return Err(format!("submission {}: {:?}", d.submission.0, d.status));
                }
                if done.insert(d.submission.0, d.time_ns).is_some() {
                    return Err(format!("submission {} retired twice", d.submission.0));
                }
            }
            Record::SessionEnd(end) if end.dropped_records != 0 => {
                return Err(format!(
                    "the trace dropped {} records: nothing can be proved",
                    end.dropped_records
                ));
            }
            Record::CrossWait(w) => {
                cross.insert((w.submission.0, w.region.0, w.on_submission.0, w.on_region.0));
                cross_records.push(w);
            }
            _ => {}
        }
    }
    let mut checked = Checked::default();
    let graph_of = |submission: u64| -> Result<&s::Prepared, String> {
        let submit = submits
            .get(&submission)
            .ok_or_else(|| format!("submission {submission} has no Submit"))?;
        prepared
            .get(&submit.prepared.0)
            .copied()
            .ok_or_else(|| format!("submission {submission}: unknown graph"))
    };

    // 1. Order, per byte.
    let mut bytes: HashMap<u64, Vec<Last>> = HashMap::new();
    for &submission in submits.keys() {
        let graph = graph_of(submission)?;
        if !done.contains_key(&submission) {
            return Err(format!("submission {submission} never retired"));
        }
        checked.submissions += 1;
        for (index, region) in graph.regions.iter().enumerate() {
            let index = index as u32;
            let Some(&(start, end)) = timing.get(&(submission, index)) else {
                return Err(format!("{submission}/{index} never ran"));
            };
            checked.executions += 1;
            // Check against every earlier execution first, then record this one.
            for use_ in &region.uses {
                let last = bytes.entry(use_.buffer.0).or_default();
                if last.len() < use_.end as usize {
                    last.resize(use_.end as usize, Last::default());
                }
                for byte in use_.start..use_.end {
                    let last = &last[byte as usize];
                    let (kind, (prior_end, prior_sub, prior_region)) = if writes(use_.access) {
                        ("write", last.access)
                    } else {
                        ("read", last.write)
                    };
                    if prior_sub == 0 {
                        continue;
                    }
                    checked.ordered_pairs += 1;
                    if prior_end > start {
                        return Err(format!(
                            "conflict not ordered: {submission}/{index} ({kind} of buffer {} byte {byte}) started at {start} ns before {prior_sub}/{prior_region} ended at {prior_end} ns",
                            use_.buffer.0
                        ));
                    }
                }
            }
            for use_ in &region.uses {
                let last = bytes.get_mut(&use_.buffer.0).expect("sized above");
                for byte in use_.start..use_.end {
                    let last = &mut last[byte as usize];
                    let me = (end, submission, index);
                    if end >= last.access.0 {
                        last.access = me;
                    }
                    if writes(use_.access) && end >= last.write.0 {
                        last.write = me;
                    }
                }
            }
        }
    }

    // 2. Every CrossWait is sound.
    for w in &cross_records {
        let (later, earlier) = (
            (w.submission.0, w.region.0),
            (w.on_submission.0, w.on_region.0),
        );
        if earlier.0 >= later.0 {
            return Err(format!(
                "cross wait {later:?} on a later submission {earlier:?}"
            ));
        }
        let a = &graph_of(earlier.0)?.regions[earlier.1 as usize];
        let b = &graph_of(later.0)?.regions[later.1 as usize];
        // Every byte of the named range must lie where a written use of one side overlaps a
        // use of the other: a hazard's touching ranges of one kind are merged, so it may span
        // several uses of a side (a read and a read-write of adjacent bytes over one write).
        let mut overlaps: Vec<(u64, u64)> = (a.uses.iter())
            .flat_map(|u| b.uses.iter().map(move |v| (u, v)))
            .filter(|(u, v)| conflict(u, v) && u.buffer == w.buffer)
            .map(|(u, v)| (u.start.max(v.start), u.end.min(v.end)))
            .collect();
        overlaps.sort_unstable();
        let mut covered = w.start;
        for &(start, end) in &overlaps {
            if start <= covered {
                covered = covered.max(end);
            }
        }
        let real = w.start < w.end && covered >= w.end;
        if !real {
            return Err(format!(
                "cross wait {later:?} on {earlier:?}: no such hazard on buffer {} {}..{}",
                w.buffer.0, w.start, w.end
            ));
        }
        let (Some(&(_, end)), Some(&(start, _))) = (timing.get(&earlier), timing.get(&later))
        else {
            return Err(format!(
                "cross wait {later:?} on {earlier:?}: a side never ran"
            ));
        };
        if end > start {
            return Err(format!(
                "cross wait {later:?} on {earlier:?} not honoured: {end} > {start}"
            ));
        }
        checked.cross_waits += 1;
    }

    // 3. Every required CrossWait exists. `active`: earlier submissions not retired at the
    // current Submit (Submit times grow with the submission index: stamped under the lock).
    let mut active: Vec<u64> = Vec::new();
    // Per prepared graph, each region's transitive dependencies.
    let mut ancestors: HashMap<u64, Vec<Vec<bool>>> = HashMap::new();
    let mut ancestors_of = |graph: &s::Prepared| -> Vec<Vec<bool>> {
        (ancestors.entry(graph.prepared.0).or_insert_with(|| {
            let mut rows: Vec<Vec<bool>> = Vec::new();
            for (index, region) in graph.regions.iter().enumerate() {
                let mut row = vec![false; graph.regions.len()];
                for edge in &region.dependencies {
                    let p = edge.producer as usize;
                    if p < index {
                        row[p] = true;
                        for (j, &a) in rows[p].iter().enumerate() {
                            row[j] |= a;
                        }
                    }
                }
                rows.push(row);
            }
            rows
        }))
        .clone()
    };
    let mut waited_on: HashMap<(u64, u32, u64), Vec<u32>> = HashMap::new();
    for &(submission, region, earlier, on) in &cross {
        waited_on
            .entry((submission, region, earlier))
            .or_default()
            .push(on);
    }
    for (&submission, submit) in &submits {
        active.retain(|earlier| done[earlier] > submit.time_ns);
        let graph = graph_of(submission)?;
        let later_before = ancestors_of(graph);
        for &earlier in &active {
            let earlier_graph = graph_of(earlier)?;
            let before = ancestors_of(earlier_graph);
            for (er, earlier_region) in earlier_graph.regions.iter().enumerate() {
                let Some(&finished) = region_done.get(&(earlier, er as u32)) else {
                    continue;
                };
                if finished <= submit.time_ns {
                    continue;
                }
                for (r, region) in graph.regions.iter().enumerate() {
                    if regions_conflict(earlier_region, region) {
                        // A wait of the region, or of one of its ancestors in its graph (it
                        // runs only after they are done), on the earlier region or one that
                        // depends on it.
                        let waits = |x: usize| {
                            (waited_on.get(&(submission, x as u32, earlier))).is_some_and(|on| {
                                on.iter()
                                    .any(|&o| o as usize == er || before[o as usize][er])
                            })
                        };
                        let covered = waits(r) || (0..r).any(|a| later_before[r][a] && waits(a));
                        if !covered {
                            return Err(format!(
                                "missing cross wait: {submission}/{r} was submitted at {} ns while the conflicting {earlier}/{er} was unfinished (done at {finished} ns)",
                                submit.time_ns
                            ));
                        }
                        checked.required_cross_waits += 1;
                    }
                }
            }
        }
        active.push(submission);
    }
    Ok(checked)
}

/// Shared buffers: six host-visible and six GPU-local, 128 bytes each.
const BUFFERS: usize = 6;
const BYTES: usize = 128;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// A random range of `len` bytes.
    fn range(&mut self, len: usize) -> std::ops::Range<usize> {
        let start = self.below(BYTES - len + 1);
        start..start + len
    }
}

/// One random graph of `ops` (a count drawn from the range) tiny operations over the shared
/// buffers, across the Upload, Compute, Download and Host queues.
fn random_graph(
    rt: &Runtime,
    (host, device): (&[hrx::Buffer], &[hrx::Buffer]),
    rng: &mut Rng,
    ops: std::ops::Range<usize>,
) -> hrx::ExecutableGraph {
    let mut graph = rt.graph();
    for _ in 0..ops.start + rng.below(ops.len()) {
        let len = 4 + rng.below(28);
        let (h, d) = (&host[rng.below(BUFFERS)], &device[rng.below(BUFFERS)]);
        let (hr, dr) = (rng.range(len), rng.range(len));
        match rng.below(4) {
            0 => graph
                .copy(d.view(dr).unwrap(), h.view(hr).unwrap())
                .map(drop)
                .unwrap(),
            1 => graph
                .copy(h.view(hr).unwrap(), d.view(dr).unwrap())
                .map(drop)
                .unwrap(),
            2 => graph
                .fill(d.view(dr).unwrap(), rng.below(256) as u8)
                .map(drop)
                .unwrap(),
            _ => {
                let access = [Access::Read, Access::Write, Access::ReadWrite][rng.below(3)];
                graph
                    .host(&[GpuAccess::new(h.view(hr).unwrap(), access)], |_| Ok(()))
                    .map(drop)
                    .unwrap()
            }
        }
    }
    graph.prepare().unwrap()
}

/// A recorder into memory that loses nothing: large per-thread rings, uncompressed blocks,
/// and producers that wait for the writer rather than drop (the checker refuses a trace
/// with drops).
fn lossless_recorder() -> (MemorySink, Recorder) {
    let sink = MemorySink::new();
    let options = RecorderOptions {
        thread_buffer_bytes: 4 << 20,
        compression_level: None,
        full_buffer_wait: Duration::from_secs(30),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::with_sink(sink.clone(), options).unwrap();
    (sink, recorder)
}

/// Runs `total` accepted submissions of random graphs of `ops` operations from `threads`
/// threads; returns the trace.
fn stress(threads: usize, total: u64, seed: u64, ops: std::ops::Range<usize>) -> Trace {
    let (sink, recorder) = lossless_recorder();
    {
        let rt = Runtime::new(
            RuntimeOptions::sim()
                .capacity(16)
                .graph_slots(4)
                .recorder(recorder.clone()),
        )
        .unwrap();
        let host: Vec<_> = (0..BUFFERS)
            .map(|_| rt.buffer(BYTES, Placement::HostVisible).unwrap())
            .collect();
        let device: Vec<_> = (0..BUFFERS)
            .map(|_| rt.buffer(BYTES, Placement::GpuLocal).unwrap())
            .collect();
        let mut rng = Rng(seed);
        let graphs: Arc<Vec<_>> = Arc::new(
            (0..96)
                .map(|_| random_graph(&rt, (&host, &device), &mut rng, ops.clone()))
                .collect(),
        );
        let accepted = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(600);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (graphs, accepted) = (graphs.clone(), accepted.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let mut window = std::collections::VecDeque::new();
                    while accepted.load(Ordering::Relaxed) < total {
                        assert!(
                            Instant::now() < deadline,
                            "stress did not finish: deadlock?"
                        );
                        let graph = &graphs[rng.below(graphs.len())];
                        match graph.submit() {
                            Ok(completion) => {
                                accepted.fetch_add(1, Ordering::Relaxed);
                                window.push_back(completion);
                            }
                            // Full: retire own work first (or let others), rather than
                            // spin on refusals (each one is traced).
                            Err(hrx::Error::Busy(_)) => match window.pop_front() {
                                Some(oldest) => oldest
                                    .wait_timeout(Duration::from_secs(60))
                                    .expect("retires in time"),
                                None => std::thread::sleep(Duration::from_micros(50)),
                            },
                            Err(error) => panic!("submit: {error}"),
                        }
                        if window.len() > 3 || (!window.is_empty() && rng.below(4) == 0) {
                            let completion: hrx::Completion = window.pop_front().unwrap();
                            completion
                                .wait_timeout(Duration::from_secs(60))
                                .expect("retires in time");
                        }
                    }
                    for completion in window {
                        completion
                            .wait_timeout(Duration::from_secs(60))
                            .expect("retires in time");
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("worker");
        }
    }
    recorder.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
    trace
}

#[test]
fn a_hundred_thousand_random_submissions_from_16_threads_keep_conflicts_ordered() {
    let total = 100_000;
    let started = Instant::now();
    let trace = stress(16, total, 0x5eed, 1..4);
    let ran = started.elapsed();
    let checked = check(&trace.records).unwrap_or_else(|violation| panic!("{violation}"));
    println!(
        "stress: {checked:?}, {} records; ran in {ran:?}, checked in {:?}",
        trace.records.len(),
        started.elapsed() - ran
    );
    // The 16 threads may overshoot the target by at most one submission each.
    assert!(checked.submissions as u64 >= total && checked.submissions as u64 <= total + 16);
    assert!(checked.executions >= checked.submissions);
    // The run was contended: conflicts across submissions were really waited on.
    assert!(checked.cross_waits > 1000, "{checked:?}");
    assert!(checked.required_cross_waits > 1000, "{checked:?}");
    assert!(checked.ordered_pairs > 100_000, "{checked:?}");
}

/// Random graphs of 9 to 40 operations (most of them 9 regions or more: the scheduler's
/// frontier ends, ready sets, counted cross waits and waits only for bytes a graph has not
/// written itself), several in flight from 4 threads: the checker proves from the trace that
/// conflicting work never overlapped and ran in submission order, and that every cross wait
/// needed was recorded, by the region or an ancestor of it in its graph.
#[test]
fn random_large_graphs_from_4_threads_keep_conflicts_ordered() {
    let trace = stress(4, 3_000, 0x1a7e, 9..41);
    let checked = check(&trace.records).unwrap_or_else(|violation| panic!("{violation}"));
    let large = (trace.records.iter())
        .filter(|r| matches!(r, Record::Prepared(p) if p.regions.len() >= 9))
        .count();
    assert!(large >= 24, "{large} of 96 graphs large");
    assert!(checked.submissions >= 3_000, "{checked:?}");
    assert!(checked.cross_waits > 100, "{checked:?}");
    assert!(checked.required_cross_waits > 100, "{checked:?}");
}

/// Two graphs of 2,000 regions in flight at once, a third behind them: each later region
/// waits for the regions of the earlier submissions at their graph's frontier's end, not for
/// every earlier region it conflicts with (the scheduler compared every pair of regions,
/// quadratic: with one region chain per piece, about half a million cross waits a
/// submission here). The checker proves the order from the trace as for the random graphs.
#[test]
fn large_graphs_in_flight_together_wait_on_their_frontiers_in_order() {
    use super::submission::{pieces_expected, pieces_graph};
    const SHAPE: (usize, usize, usize) = (2_000, 4, 16);
    let (sink, recorder) = lossless_recorder();
    let staged: Vec<u8> = (0..SHAPE.1 * SHAPE.2).map(|i| 100 + i as u8).collect();
    let bytes = {
        let options = RuntimeOptions::sim().graph_slots(3);
        let rt = Runtime::new(options.recorder(recorder.clone())).unwrap();
        let (graph, device) = pieces_graph(&rt, SHAPE, &staged);
        let completions: Vec<_> = (0..3).map(|_| graph.submit().unwrap()).collect();
        for completion in completions {
            completion.wait().unwrap();
        }
        device.to_vec().unwrap()
    };
    assert_eq!(bytes, pieces_expected(SHAPE, &staged));
    recorder.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    let checked = check(&trace.records).unwrap_or_else(|violation| panic!("{violation}"));
    assert_eq!(checked.submissions, 3);
    // Only a piece's first writer in a later graph waits across (each later region that
    // touches the piece depends on it), at most once a piece for each earlier submission:
    // every pair was quadratic, and a wait per region linear.
    assert!(checked.cross_waits <= 2 * 2 * SHAPE.1, "{checked:?}");
    assert!(checked.required_cross_waits > 0, "{checked:?}");
}

/// N regions reading a buffer, then, in a later submission still in flight beside them, N
/// regions writing it in turn: the first writer waits across for every reader, and the
/// writers after it wait through it (in-graph), not for the readers again: N waits where
/// there were N x N, and as many `CrossWait` records. The checker proves the order from the
/// trace, a wait of a writer's in-graph ancestor standing for its own.
#[test]
fn many_readers_then_many_writers_wait_once_a_reader() {
    const N: usize = 24;
    let (sink, recorder) = lossless_recorder();
    {
        let options = RuntimeOptions::sim().graph_slots(2);
        let rt = Runtime::new(options.recorder(recorder.clone())).unwrap();
        // Host callbacks: each one a region of its own.
        let shared = rt.buffer(64, Placement::HostVisible).unwrap();
        // The first reader holds the host queue until the writers are submitted: every
        // reader is unfinished then.
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = std::sync::Mutex::new(gate);
        let mut readers = rt.graph();
        let read = || GpuAccess::new(shared.whole(), Access::Read);
        readers
            .host(&[read()], move |_| {
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(60));
                Ok(())
            })
            .unwrap();
        for _ in 1..N {
            readers.host(&[read()], |_| Ok(())).unwrap();
        }
        let mut writers = rt.graph();
        for _ in 0..N {
            let write = GpuAccess::new(shared.whole(), Access::Write);
            writers.host(&[write], |_| Ok(())).unwrap();
        }
        let (readers, writers) = (readers.prepare().unwrap(), writers.prepare().unwrap());
        assert!(
            readers.regions() >= 9 && writers.regions() >= 9,
            "both large"
        );
        let first = readers.submit().unwrap();
        let second = writers.submit().unwrap();
        release.send(()).unwrap();
        first.wait().unwrap();
        second.wait().unwrap();
    }
    recorder.close().unwrap();
    let trace = Trace::from_bytes(&sink.contents()).unwrap();
    let checked = check(&trace.records).unwrap_or_else(|violation| panic!("{violation}"));
    let waits: Vec<_> = (trace.records.iter())
        .filter_map(|r| match r {
            Record::CrossWait(w) => Some((w.submission.0, w.region.0)),
            _ => None,
        })
        .collect();
    assert_eq!(waits.len(), N, "one a reader: {waits:?}");
    assert!(
        waits.iter().all(|&(_, region)| region == 0),
        "only the first writer waits across: {waits:?}"
    );
    assert_eq!(checked.submissions, 2);
}

#[cfg(test)]
mod checker {
    use super::*;

    const RT: s::RuntimeId = s::RuntimeId(1);

    fn use_(buffer: u64, start: u64, end: u64, access: s::Access) -> s::Use {
        s::Use {
            buffer: s::BufferId(buffer),
            start,
            end,
            access,
        }
    }

    fn prepared(id: u64, regions: Vec<Vec<s::Use>>) -> Record {
        Record::Prepared(s::Prepared {
            runtime: RT,
            graph: s::GraphId(id),
            prepared: s::PreparedId(id),
            slots: 2,
            parallel: true,
            regions: regions
                .into_iter()
                .map(|uses| s::Region {
                    queue: s::Queue::Host,
                    engine: s::Engine::Host,
                    kind: s::RegionKind::Host,
                    nodes: vec![s::NodeIndex(0)],
                    internal_edges: vec![],
                    dependencies: vec![],
                    uses,
                    copy_bytes: 0,
                })
                .collect(),
            time_ns: 0,
        })
    }

    /// A submission of `graph` at `submit_ns` whose single region ran `start..end` and
    /// retired at `end + 1`.
    fn run(submission: u64, graph: u64, submit_ns: u64, (start, end): (u64, u64)) -> Vec<Record> {
        let sub = s::SubmissionIndex(submission);
        vec![
            Record::Submit(s::Submit {
                runtime: RT,
                prepared: s::PreparedId(graph),
                submission: sub,
                slot: 0,
                producers: vec![],
                time_ns: submit_ns,
            }),
            Record::RegionTiming(s::RegionTiming {
                runtime: RT,
                submission: sub,
                region: s::RegionIndex(0),
                start_ns: start,
                end_ns: end,
                device: None,
            }),
            Record::RegionDone(s::RegionDone {
                runtime: RT,
                submission: sub,
                region: s::RegionIndex(0),
                status: s::Status::Ok,
                time_ns: end + 1,
            }),
            Record::SubmissionDone(s::SubmissionDone {
                runtime: RT,
                submission: sub,
                status: s::Status::Ok,
                time_ns: end + 1,
            }),
        ]
    }

    fn wait(submission: u64, on: u64, buffer: u64) -> Record {
        Record::CrossWait(s::CrossWait {
            runtime: RT,
            submission: s::SubmissionIndex(submission),
            region: s::RegionIndex(0),
            on_submission: s::SubmissionIndex(on),
            on_region: s::RegionIndex(0),
            kind: s::HazardKind::WriteAfterWrite,
            buffer: s::BufferId(buffer),
            start: 4,
            end: 8,
        })
    }

    /// Graph 1 writes buffer 7 bytes 0..8; graph 2 writes bytes 4..12 (they conflict on
    /// 4..8); graph 3 reads bytes 0..8; graph 4 writes buffer 8; graph 5 reads bytes 0..4
    /// and reads and writes 4..8 (two uses); graph 6 reads 0..2 and 6..8.
    fn graphs() -> Vec<Record> {
        vec![
            prepared(1, vec![vec![use_(7, 0, 8, s::Access::Write)]]),
            prepared(2, vec![vec![use_(7, 4, 12, s::Access::Write)]]),
            prepared(3, vec![vec![use_(7, 0, 8, s::Access::Read)]]),
            prepared(4, vec![vec![use_(8, 0, 8, s::Access::Write)]]),
            prepared(
                5,
                vec![vec![
                    use_(7, 0, 4, s::Access::Read),
                    use_(7, 4, 8, s::Access::ReadWrite),
                ]],
            ),
            prepared(
                6,
                vec![vec![
                    use_(7, 0, 2, s::Access::Read),
                    use_(7, 6, 8, s::Access::Read),
                ]],
            ),
        ]
    }

    /// A read-after-write over 0..8 on graph 1's region by a region of `graph`.
    fn read_after_write(graph: u64) -> Vec<Record> {
        let mut records = trace(vec![run(1, 1, 0, (10, 20)), run(2, graph, 5, (21, 30))]);
        records.push(Record::CrossWait(s::CrossWait {
            runtime: RT,
            submission: s::SubmissionIndex(2),
            region: s::RegionIndex(0),
            on_submission: s::SubmissionIndex(1),
            on_region: s::RegionIndex(0),
            kind: s::HazardKind::ReadAfterWrite,
            buffer: s::BufferId(7),
            start: 0,
            end: 8,
        }));
        records
    }

    /// A cross wait whose merged range spans two uses of its region (a read and a
    /// read-write of adjacent bytes over one write, one hazard kind) is sound; one over bytes
    /// the region does not touch is not (a break-it pass: the check asked one pair of uses
    /// to hold the whole range).
    #[test]
    fn a_cross_wait_over_several_uses_is_sound_and_over_a_gap_is_not() {
        check(&read_after_write(5)).unwrap_or_else(|e| panic!("{e}"));
        let error = check(&read_after_write(6)).unwrap_err();
        assert!(error.contains("no such hazard on buffer 7 0..8"), "{error}");
    }

    fn trace(parts: Vec<Vec<Record>>) -> Vec<Record> {
        graphs()
            .into_iter()
            .chain(parts.into_iter().flatten())
            .collect()
    }

    #[test]
    fn ordered_conflicts_pass_and_independent_work_may_overlap() {
        let records = trace(vec![
            run(1, 1, 0, (10, 20)),
            run(2, 2, 5, (21, 30)),
            vec![wait(2, 1, 7)],
            // Reads of the same bytes overlap each other: no conflict. A write of another
            // buffer overlaps everything: no conflict.
            run(3, 3, 40, (50, 60)),
            run(4, 3, 41, (55, 65)),
            run(5, 4, 42, (50, 70)),
        ]);
        let checked = check(&records).unwrap();
        assert_eq!(checked.submissions, 5);
        assert_eq!(checked.cross_waits, 1);
        assert_eq!(checked.required_cross_waits, 1);
        assert!(checked.ordered_pairs > 0);
    }

    #[test]
    fn an_overlap_in_time_is_caught() {
        // Submission 2 starts at 19, one ns before submission 1 ends.
        let records = trace(vec![
            run(1, 1, 0, (10, 20)),
            run(2, 2, 5, (19, 30)),
            vec![wait(2, 1, 7)],
        ]);
        let error = check(&records).unwrap_err();
        assert!(error.contains("conflict not ordered: 2/0"), "{error}");
    }

    #[test]
    fn conflicting_work_out_of_submission_order_is_caught() {
        // No overlap, but the later submission ran first; the earlier retired before the
        // later was submitted, so no cross wait is required.
        let records = trace(vec![run(1, 1, 0, (30, 40)), run(2, 3, 50, (10, 20))]);
        let error = check(&records).unwrap_err();
        assert!(error.contains("conflict not ordered: 2/0 (read"), "{error}");
    }

    #[test]
    fn a_missing_cross_wait_is_caught() {
        let records = trace(vec![run(1, 1, 0, (10, 20)), run(2, 2, 5, (21, 30))]);
        let error = check(&records).unwrap_err();
        assert!(error.contains("missing cross wait: 2/0"), "{error}");
    }

    /// A later graph of two regions writing buffer 7 bytes 4..8 in turn, the second
    /// depending on the first when `chained`: only the first waits across on graph 1's region
    /// (the runtime waits across only for bytes no earlier region of the graph wrote). With
    /// the dependency the second is covered; without it, its wait is missing.
    #[test]
    fn a_wait_of_an_ancestor_in_the_later_graph_covers_a_region() {
        let records = |chained: bool| {
            let write = || vec![use_(7, 4, 8, s::Access::Write)];
            let Record::Prepared(mut later) = prepared(9, vec![write(), write()]) else {
                unreachable!()
            };
            if chained {
                later.regions[1].dependencies.push(s::Edge {
                    producer: 0,
                    consumer: 1,
                    kind: s::HazardKind::WriteAfterWrite,
                    buffer: s::BufferId(7),
                    start: 4,
                    end: 8,
                });
            }
            let mut records = trace(vec![run(1, 1, 0, (10, 20)), run(2, 9, 5, (21, 30))]);
            records.insert(0, Record::Prepared(later));
            records.push(Record::RegionTiming(s::RegionTiming {
                runtime: RT,
                submission: s::SubmissionIndex(2),
                region: s::RegionIndex(1),
                start_ns: 31,
                end_ns: 40,
                device: None,
            }));
            records.push(wait(2, 1, 7));
            records
        };
        let checked = check(&records(true)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(checked.required_cross_waits, 2);
        let error = check(&records(false)).unwrap_err();
        assert!(error.contains("missing cross wait: 2/1"), "{error}");
    }

    #[test]
    fn a_bogus_cross_wait_is_caught() {
        let records = trace(vec![
            run(1, 1, 0, (10, 20)),
            run(2, 4, 5, (21, 30)),
            vec![wait(2, 1, 8)],
        ]);
        let error = check(&records).unwrap_err();
        assert!(error.contains("no such hazard"), "{error}");
    }

    #[test]
    fn a_real_trace_with_one_shifted_timing_is_caught() {
        let trace = stress(4, 2_000, 7, 1..4);
        check(&trace.records).expect("the real trace is ordered");
        // Shift the first region that waited on an earlier one to start before it ended.
        let (later, earlier) = trace
            .records
            .iter()
            .find_map(|r| match r {
                Record::CrossWait(w) => {
                    Some(((w.submission, w.region), (w.on_submission, w.on_region)))
                }
                _ => None,
            })
            .expect("a cross wait");
        let end = trace
            .records
            .iter()
            .find_map(|r| match r {
                Record::RegionTiming(t) if (t.submission, t.region) == earlier => Some(t.end_ns),
                _ => None,
            })
            .unwrap();
        let mut records = trace.records.clone();
        for record in &mut records {
            if let Record::RegionTiming(t) = record
                && (t.submission, t.region) == later
            {
                t.start_ns = end - 1;
            }
        }
        let error = check(&records).unwrap_err();
        assert!(error.contains("not"), "{error}");
    }
}
