//! Hand-built traces for unit tests: terse constructors for the records a test needs.

use super::model::Model;
use hrx_capture::schema::*;

pub(crate) const RT: RuntimeId = RuntimeId(7);

/// A dependency edge on `buffer` bytes `start..end`.
pub(crate) fn dep(
    producer: u32,
    consumer: u32,
    kind: HazardKind,
    buffer: u64,
    range: (u64, u64),
) -> Edge {
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
pub(crate) fn region(
    queue: Queue,
    kind: RegionKind,
    nodes: &[u32],
    dependencies: Vec<Edge>,
) -> Region {
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
pub(crate) struct Fixture {
    pub records: Vec<Record>,
}

impl Fixture {
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

    pub fn push(&mut self, record: impl Into<Record>) -> &mut Fixture {
        self.records.push(record.into());
        self
    }

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

    pub fn model(&self) -> Model {
        Model::from_records(&self.records)
    }
}

/// A failed status.
pub(crate) fn failed(error: &str) -> Status {
    Status::Failed {
        error: error.into(),
    }
}

/// A cancelled status.
pub(crate) fn cancelled(reason: &str) -> Status {
    Status::Cancelled {
        reason: reason.into(),
    }
}

/// Three regions (upload copy → `saxpy` kernel → download copy) of prepared graph 1, built
/// from graph 1: RAW on buffer 1 bytes 0..1024, then RAW on buffer 2 bytes 0..512.
pub(crate) fn three_stage() -> Fixture {
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
