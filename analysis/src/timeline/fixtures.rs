//! Hand-built traces for tests (this crate's and `hrx-tui`'s): terse constructors for the
//! records a test needs.

use super::lanes::{Span, SpanStatus};
use super::model::{Model, RegionRef, SubId};
use crate::synthetic::{PipelineSpec, pipeline};
use hrx_capture::RecorderOptions;
use hrx_capture::schema::*;

/// The runtime of every fixture.
pub const RT: RuntimeId = RuntimeId(7);

/// A dependency edge on `buffer` bytes `start..end`.
pub fn dep(producer: u32, consumer: u32, kind: HazardKind, buffer: u64, range: (u64, u64)) -> Edge {
    Edge {
        producer,
        consumer,
        kind,
        buffer: BufferId(buffer),
        start: range.0,
        end: range.1,
    }
}

/// A region on `queue` holding `nodes`.
pub fn region(queue: Queue, kind: RegionKind, nodes: &[u32], dependencies: Vec<Edge>) -> Region {
    Region {
        queue,
        engine: match queue {
            Queue::Npu => Engine::Npu,
            Queue::Host => Engine::Host,
            _ => Engine::Gpu,
        },
        kind,
        nodes: nodes.iter().map(|&n| NodeIndex(n)).collect(),
        internal_edges: Vec::new(),
        dependencies,
        uses: Vec::new(),
        copy_bytes: if kind == RegionKind::CopyBatch {
            4096
        } else {
            0
        },
    }
}

/// Records of one runtime, built step by step.
pub struct Fixture {
    /// The records, in the order pushed.
    pub records: Vec<Record>,
}

impl Default for Fixture {
    fn default() -> Fixture {
        Fixture::new()
    }
}

impl Fixture {
    /// A runtime's start ([`RT`], the `sim` backend) and nothing else.
    pub fn new() -> Fixture {
        Fixture {
            records: vec![Record::RuntimeStart(RuntimeStart {
                runtime: RT,
                backend: "sim".into(),
                device: "test".into(),
                graph_slots: 2,
                capacity: 4,
                fault: None,
                time_ns: 0,
            })],
        }
    }

    /// Appends `record`.
    pub fn push(&mut self, record: impl Into<Record>) -> &mut Fixture {
        self.records.push(record.into());
        self
    }

    /// A kernel `id` loaded with entry point `entry`.
    pub fn kernel(&mut self, id: u64, entry: &str) -> &mut Fixture {
        self.push(KernelLoaded {
            runtime: RT,
            kernel: KernelId(id),
            entry: entry.into(),
            code: None,
            contract: Vec::new(),
            constants: vec![0; 12],
            grid: [8, 1, 1],
            block: [256, 1, 1],
            engine: Engine::Gpu,
            npu_groups: Vec::new(),
        })
    }

    /// Operation `node` of `graph`, using `(buffer, start, end, access)` byte ranges.
    pub fn op(
        &mut self,
        graph: u64,
        node: u32,
        op: OpKind,
        uses: &[(u64, u64, u64, Access)],
    ) -> &mut Fixture {
        self.push(GraphOp {
            runtime: RT,
            graph: GraphId(graph),
            node: NodeIndex(node),
            op,
            lane: Lane::Compute,
            uses: uses
                .iter()
                .map(|&(b, start, end, access)| Use {
                    buffer: BufferId(b),
                    start,
                    end,
                    access,
                })
                .collect(),
        })
    }

    /// Graph `graph` prepared as `prepared` with `regions`.
    pub fn prepared(&mut self, prepared: u64, graph: u64, regions: Vec<Region>) -> &mut Fixture {
        self.push(Prepared {
            runtime: RT,
            graph: GraphId(graph),
            prepared: PreparedId(prepared),
            slots: 2,
            parallel: false,
            regions,
            time_ns: 1,
        })
    }

    /// Submission `sub` of `prepared` at `time_ns`, after the submissions `producers`.
    pub fn submit(
        &mut self,
        prepared: u64,
        sub: u64,
        producers: &[u64],
        time_ns: u64,
    ) -> &mut Fixture {
        self.push(Submit {
            runtime: RT,
            prepared: PreparedId(prepared),
            submission: SubmissionIndex(sub),
            slot: (sub % 2) as u32,
            producers: producers.iter().map(|&p| SubmissionIndex(p)).collect(),
            time_ns,
        })
    }

    /// The timing of region `region` of submission `sub`: `start_ns..end_ns`.
    pub fn timing(&mut self, sub: u64, region: u32, start_ns: u64, end_ns: u64) -> &mut Fixture {
        self.push(RegionTiming {
            runtime: RT,
            submission: SubmissionIndex(sub),
            region: RegionIndex(region),
            start_ns,
            end_ns,
            device: None,
        })
    }

    /// The timing of operation `node` inside region `region` of submission `sub`:
    /// `start_ns..end_ns` on the host clock, `device` on the device clock where given.
    pub fn op_timing(
        &mut self,
        (sub, region, node): (u64, u32, u32),
        start_ns: u64,
        end_ns: u64,
        device: Option<(u64, u64)>,
    ) -> &mut Fixture {
        self.push(OpTiming {
            timing: RegionTiming {
                runtime: RT,
                submission: SubmissionIndex(sub),
                region: RegionIndex(region),
                start_ns,
                end_ns,
                device: device.map(|(start_ns, end_ns)| DeviceSpan { start_ns, end_ns }),
            },
            node: NodeIndex(node),
        })
    }

    /// Region `region` of submission `sub` ended with `status` at `time_ns`.
    pub fn done(&mut self, sub: u64, region: u32, status: Status, time_ns: u64) -> &mut Fixture {
        self.push(RegionDone {
            runtime: RT,
            submission: SubmissionIndex(sub),
            region: RegionIndex(region),
            status,
            time_ns,
        })
    }

    /// A region that ran `start..end` and completed.
    pub fn ran(&mut self, sub: u64, region: u32, start_ns: u64, end_ns: u64) -> &mut Fixture {
        self.timing(sub, region, start_ns, end_ns)
            .done(sub, region, Status::Ok, end_ns + 1)
    }

    /// Region `region` of `sub` waited on region `on.1` of submission `on.0` (`kind` on
    /// `buffer` bytes `range`).
    pub fn cross(
        &mut self,
        sub: u64,
        region: u32,
        on: (u64, u32),
        kind: HazardKind,
        buffer: u64,
        range: (u64, u64),
    ) -> &mut Fixture {
        self.push(CrossWait {
            runtime: RT,
            submission: SubmissionIndex(sub),
            region: RegionIndex(region),
            on_submission: SubmissionIndex(on.0),
            on_region: RegionIndex(on.1),
            kind,
            buffer: BufferId(buffer),
            start: range.0,
            end: range.1,
        })
    }

    /// The model of the records.
    pub fn model(&self) -> Model {
        Model::from_records(&self.records)
    }
}

/// A failed status.
pub fn failed(error: &str) -> Status {
    Status::Failed {
        error: error.into(),
    }
}

/// A cancelled status.
pub fn cancelled(reason: &str) -> Status {
    Status::Cancelled {
        reason: reason.into(),
    }
}

/// Three regions (upload copy → `saxpy` kernel → download copy) of prepared graph 1, built
/// from graph 1: RAW on buffer 1 bytes 0..1024, then RAW on buffer 2 bytes 0..512.
pub fn three_stage() -> Fixture {
    let mut f = Fixture::new();
    f.kernel(5, "saxpy")
        .op(
            1,
            0,
            OpKind::Copy,
            &[(0, 0, 1024, Access::Read), (1, 0, 1024, Access::Write)],
        )
        .op(
            1,
            1,
            OpKind::Kernel {
                kernel: KernelId(5),
            },
            &[(1, 0, 1024, Access::Read), (2, 0, 512, Access::Write)],
        )
        .op(
            1,
            2,
            OpKind::Copy,
            &[(2, 0, 512, Access::Read), (3, 0, 512, Access::Write)],
        )
        .prepared(
            1,
            1,
            vec![
                region(Queue::GpuUpload, RegionKind::CopyBatch, &[0], vec![]),
                region(
                    Queue::GpuCompute,
                    RegionKind::NativeGraph,
                    &[1],
                    vec![dep(0, 1, HazardKind::ReadAfterWrite, 1, (0, 1024))],
                ),
                region(
                    Queue::GpuDownload,
                    RegionKind::CopyBatch,
                    &[2],
                    vec![dep(1, 2, HazardKind::ReadAfterWrite, 2, (0, 512))],
                ),
            ],
        );
    f
}

/// [`three_stage`] submitted `n` times one after another (submission `s` runs its regions
/// at `100 s + 1..=6`), then once after all of them, latest first (as the break-it pass's
/// crafted trace named them; `submit_after` names them in the order given): submission `n`
/// at `100 n`, running at `100 n + 1..=6`.
pub fn fan_in(n: u64) -> Fixture {
    let mut f = three_stage();
    for s in 0..=n {
        let named: Vec<u64> = if s == n {
            (0..n).rev().collect()
        } else {
            Vec::new()
        };
        let t = 100 * s;
        f.submit(1, s, &named, t)
            .ran(s, 0, t + 1, t + 2)
            .ran(s, 1, t + 3, t + 4)
            .ran(s, 2, t + 5, t + 6);
    }
    f
}

/// Three submissions of [`three_stage`] that ran, then region 1 of a fourth, started at
/// 350 ns, whose `Submit` the trace lacks (a trace cut before it, its submitting thread's
/// records written after the cut): running at the end, its queue unknown.
pub fn running_past_the_cut() -> Fixture {
    let mut f = three_stage();
    for s in 0..3 {
        let t = 100 * s;
        f.submit(1, s, &[], t)
            .ran(s, 0, t + 1, t + 2)
            .ran(s, 1, t + 3, t + 4)
            .ran(s, 2, t + 5, t + 6);
    }
    f.push(RegionStarted {
        runtime: RT,
        submission: SubmissionIndex(3),
        region: RegionIndex(1),
        time_ns: 350,
    });
    f
}

/// Every table of the two models is the same.
pub fn assert_same(a: &Model, b: &Model) {
    assert_eq!(a.lanes.len(), b.lanes.len());
    for (x, y) in a.lanes.iter().zip(&b.lanes) {
        assert_eq!((x.runtime, x.queue), (y.runtime, y.queue));
        assert_eq!(x.spans(), y.spans());
        assert!(x.columns().1[..] == y.columns().1[..], "blocks");
    }
    assert_eq!(a.submissions(), b.submissions());
    assert_eq!(&*a.region_spans, &*b.region_spans);
    assert_eq!(&*a.explicit_producers, &*b.explicit_producers);
    assert_eq!(&*a.explicit_edges, &*b.explicit_edges);
    assert_eq!(&*a.explicit_by_consumer, &*b.explicit_by_consumer);
    assert_eq!(&*a.cross, &*b.cross);
    assert_eq!(&*a.cross_by_producer, &*b.cross_by_producer);
    assert_eq!(a.submit_times(), b.submit_times());
    assert_eq!(&*a.op_spans, &*b.op_spans);
    assert_eq!(a.lane_op_spans, b.lane_op_spans);
    assert_eq!(a.busy_times(), b.busy_times());
    assert_eq!(a.events(), b.events());
    assert_eq!(a.span_events, b.span_events);
    assert_eq!(a.labels(), b.labels());
    assert_eq!(a.label_span_counts(), b.label_span_counts());
    assert_eq!(a.search_texts, b.search_texts);
    assert_eq!(a.search_key_spans, b.search_key_spans);
    assert_eq!(a.time_range(), b.time_range());
    assert_eq!(a.stats(), b.stats());
    assert_eq!(a.first_failure(), b.first_failure());
    assert_eq!(a.untimed_span_count(), b.untimed_span_count());
    let facts = |m: &Model| {
        let i = m.info();
        (
            i.records,
            i.unplaced_timings,
            i.unresolved_waits,
            i.op_timings,
            i.explicit_producers_left_out,
        )
    };
    assert_eq!(facts(a), facts(b));
}

/// The failing pipeline's records in file order, with its compute regions' operation
/// timings (the failed one's included).
pub fn in_order() -> Vec<Record> {
    crate::synthetic::with_op_timings(pipeline(PipelineSpec {
        fail_at: Some(3),
        ..PipelineSpec::ops(24)
    }))
    .collect()
}

/// What a worker thread records while a region runs or ends.
fn worker(record: &Record) -> bool {
    matches!(
        record,
        Record::RegionStarted(_)
            | Record::RegionTiming(_)
            | Record::OpTiming(_)
            | Record::RegionDone(_)
            | Record::SubmissionDone(_)
            | Record::OutputDigest(_)
            | Record::CrossWait(_)
            | Record::FaultInjected(_)
            | Record::Quarantine(_)
            | Record::Poison(_)
    )
}

/// What the thread that built and prepared the graph records.
fn definition(record: &Record) -> bool {
    matches!(
        record,
        Record::BufferCreated(_)
            | Record::KernelLoaded(_)
            | Record::GraphOp(_)
            | Record::Prepared(_)
    )
}

/// The session's first records, then every worker record, then the submits (and what else
/// the submitting thread records), then the definitions: each thread's records in its own
/// order, the threads' buffers written out in the worst order.
pub fn adverse(records: &[Record]) -> Vec<Record> {
    let (head, rest) = records.split_at(2);
    assert!(matches!(head[0], Record::SessionStart(_)), "{:?}", head[0]);
    let mut out = head.to_vec();
    out.extend(rest.iter().filter(|r| worker(r)).cloned());
    out.extend(
        rest.iter()
            .filter(|r| !worker(r) && !definition(r))
            .cloned(),
    );
    out.extend(rest.iter().filter(|r| definition(r)).cloned());
    out
}

/// Recorder options for a trace of many small blocks (about 1 KiB of records each, stored
/// uncompressed), whose thread buffers wait for room rather than drop: what the followers'
/// tests cut and append block by block.
pub fn small_blocks() -> RecorderOptions {
    RecorderOptions {
        block_bytes: 1 << 10,
        thread_buffer_bytes: 4 << 10,
        compression_level: None,
        full_buffer_wait: std::time::Duration::from_secs(5),
        ..RecorderOptions::default()
    }
}

/// A timed span `start..end` of submission 0, region 0, with `status`.
pub fn span(start: u64, end: u64, status: SpanStatus) -> Span {
    let mut s = Span::timed(start, end, None, SubId(0), RegionRef(0));
    s.set_status(status);
    s
}

/// A Compute lane of successful spans `(start, end)`, sorted and indexed.
pub fn lane(spans: &[(u64, u64)]) -> super::lanes::Lane {
    let mut lane = super::lanes::Lane::new(RuntimeId(0), Queue::GpuCompute);
    for &(a, b) in spans {
        lane.push(span(a, b, SpanStatus::Ok));
    }
    lane.sort();
    lane.build_index();
    lane
}

/// A trace file `trace.hrxt` in `dir` of the pipeline `spec` with its compute regions'
/// operation timings ([`crate::synthetic::with_op_timings`]), written through the real
/// recorder.
pub fn trace_file(dir: &std::path::Path, spec: PipelineSpec) -> std::path::PathBuf {
    let sink = hrx_capture::MemorySink::new();
    let recorder = hrx_capture::Recorder::with_sink(sink.clone(), RecorderOptions::default())
        .expect("a recorder into memory");
    for record in crate::synthetic::with_op_timings(pipeline(spec)) {
        recorder.record(&record);
    }
    recorder.close().expect("the recorder closes");
    let path = dir.join("trace.hrxt");
    std::fs::write(&path, sink.contents()).expect("the trace file is written");
    path
}
