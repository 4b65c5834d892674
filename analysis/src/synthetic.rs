//! Generated traces: a four-region image pipeline submitted over and over, with optional
//! Busy refusals and an injected failure. Used by the tests, the snapshot tests and to
//! measure ingestion of large traces; records are produced lazily, so a million-operation
//! trace never exists in memory as records.
//!
//! Every submission runs one prepared graph:
//!
//! ```text
//! r0 GPU Upload   copy   buf0 → buf1 (1 MiB)          ┐ RAW buf1
//! r1 GPU Compute  blur, sobel  buf1 → buf2 → buf3      ┘ ┐ RAW buf3
//! r2 GPU Download copy   buf3 → buf4                     ┘ ┐ RAW buf4
//! r3 Host         host   reads buf4                        ┘
//! ```
//!
//! and waits on the previous submission write-after-read: its upload (buf1) on the
//! previous compute, its compute (buf3) on the previous download. Durations vary
//! deterministically; every 97th compute is five times longer.

use hrx_capture::schema::*;

/// Regions (spans) per submission.
pub const REGIONS_PER_SUBMISSION: u64 = 4;

/// Bytes of each copy.
pub const COPY_BYTES: u64 = 1 << 20;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineSpec {
    /// Submissions.
    pub submissions: u64,
    /// Host ns between submits.
    pub period_ns: u64,
    /// Refuse a submit as Busy before every n-th submission.
    pub busy_every: Option<u64>,
    /// Fail this submission's compute region with an injected device loss: its download
    /// and host regions are cancelled, the graph quarantined, buffer 3 poisoned, and the
    /// next submit refused; nothing runs after it.
    pub fail_at: Option<u64>,
}

impl PipelineSpec {
    /// About `ops` operations (spans), no failures.
    pub fn ops(ops: u64) -> PipelineSpec {
        PipelineSpec {
            submissions: ops.div_ceil(REGIONS_PER_SUBMISSION),
            period_ns: 60_000,
            busy_every: None,
            fail_at: None,
        }
    }
}

const RT: RuntimeId = RuntimeId(1);
const GRAPH: GraphId = GraphId(1);
const PREPARED: PreparedId = PreparedId(1);
const BLUR: KernelId = KernelId(10);
const SOBEL: KernelId = KernelId(11);
const DEVICE_OFFSET_NS: u64 = 1_000_000_000;

fn edge(producer: u32, consumer: u32, kind: HazardKind, buffer: u64) -> Edge {
    Edge {
        producer,
        consumer,
        kind,
        buffer: BufferId(buffer),
        start: 0,
        end: COPY_BYTES,
    }
}

fn uses(list: &[(u64, Access)]) -> Vec<Use> {
    list.iter()
        .map(|&(b, access)| Use {
            buffer: BufferId(b),
            start: 0,
            end: COPY_BYTES,
            access,
        })
        .collect()
}

/// Records that set the pipeline up: session, runtime, buffers, kernels, graph, prepare.
pub fn setup_records() -> Vec<Record> {
    let mut out = vec![Record::SessionStart(SessionStart {
        producer: "hrx-capture synthetic".into(),
        format_version: (1, 0),
        wall_clock_utc: chrono_epoch(),
        monotonic_base_ns: 0,
        host: "synthetic".into(),
        pid: 1,
        args: vec!["pipeline".into()],
        backend: "sim".into(),
        device: "sim device".into(),
    })];
    out.push(Record::RuntimeStart(RuntimeStart {
        runtime: RT,
        backend: "sim".into(),
        device: "sim device".into(),
        graph_slots: 2,
        capacity: 4,
        fault: None,
        time_ns: 0,
    }));
    for (b, placement) in [
        (0, Placement::HostVisible),
        (1, Placement::GpuLocal),
        (2, Placement::GpuLocal),
        (3, Placement::GpuLocal),
        (4, Placement::HostVisible),
    ] {
        out.push(Record::BufferCreated(BufferCreated {
            runtime: RT,
            buffer: BufferId(b),
            len_bytes: COPY_BYTES,
            placement,
            device_address: 0x1000_0000 * (b + 1),
            time_ns: 100 + b,
        }));
    }
    for (kernel, entry, constants) in [(BLUR, "blur", 16), (SOBEL, "sobel", 8)] {
        out.push(Record::KernelLoaded(KernelLoaded {
            runtime: RT,
            kernel,
            entry: entry.into(),
            code: None,
            contract: vec![
                BindingContract {
                    access: Access::Read,
                    extent_bytes: COPY_BYTES,
                    alignment: 256,
                },
                BindingContract {
                    access: Access::Write,
                    extent_bytes: COPY_BYTES,
                    alignment: 256,
                },
            ],
            constants: vec![0; constants],
            grid: [64, 64, 1],
            block: [16, 16, 1],
            engine: Engine::Gpu,
            npu_groups: Vec::new(),
        }));
    }
    let ops = [
        (
            OpKind::Copy,
            Lane::Upload,
            uses(&[(0, Access::Read), (1, Access::Write)]),
        ),
        (
            OpKind::Kernel { kernel: BLUR },
            Lane::Compute,
            uses(&[(1, Access::Read), (2, Access::Write)]),
        ),
        (
            OpKind::Kernel { kernel: SOBEL },
            Lane::Compute,
            uses(&[(2, Access::Read), (3, Access::Write)]),
        ),
        (
            OpKind::Copy,
            Lane::Download,
            uses(&[(3, Access::Read), (4, Access::Write)]),
        ),
        (OpKind::Host, Lane::Compute, uses(&[(4, Access::Read)])),
    ];
    for (node, (op, lane, uses)) in ops.into_iter().enumerate() {
        out.push(Record::GraphOp(GraphOp {
            runtime: RT,
            graph: GRAPH,
            node: NodeIndex(node as u32),
            op,
            lane,
            uses,
        }));
    }
    let region = |queue, engine, kind, nodes: &[u32], deps, region_uses, copy_bytes| Region {
        queue,
        engine,
        kind,
        nodes: nodes.iter().map(|&n| NodeIndex(n)).collect(),
        internal_edges: if nodes.len() > 1 {
            vec![edge(nodes[0], nodes[1], HazardKind::ReadAfterWrite, 2)]
        } else {
            Vec::new()
        },
        dependencies: deps,
        uses: region_uses,
        copy_bytes,
    };
    out.push(Record::Prepared(Prepared {
        runtime: RT,
        graph: GRAPH,
        prepared: PREPARED,
        slots: 2,
        parallel: true,
        regions: vec![
            region(
                Queue::GpuUpload,
                Engine::Gpu,
                RegionKind::CopyBatch,
                &[0],
                vec![],
                uses(&[(0, Access::Read), (1, Access::Write)]),
                COPY_BYTES,
            ),
            region(
                Queue::GpuCompute,
                Engine::Gpu,
                RegionKind::NativeGraph,
                &[1, 2],
                vec![edge(0, 1, HazardKind::ReadAfterWrite, 1)],
                uses(&[
                    (1, Access::Read),
                    (2, Access::ReadWrite),
                    (3, Access::Write),
                ]),
                0,
            ),
            region(
                Queue::GpuDownload,
                Engine::Gpu,
                RegionKind::CopyBatch,
                &[3],
                vec![edge(1, 2, HazardKind::ReadAfterWrite, 3)],
                uses(&[(3, Access::Read), (4, Access::Write)]),
                COPY_BYTES,
            ),
            region(
                Queue::Host,
                Engine::Host,
                RegionKind::Host,
                &[4],
                vec![edge(2, 3, HazardKind::ReadAfterWrite, 4)],
                uses(&[(4, Access::Read)]),
                0,
            ),
        ],
        time_ns: 1_000,
    }));
    out.push(Record::ClockCalibration(ClockCalibration {
        runtime: RT,
        host_ns: 1_000,
        device_ns: 1_000 + DEVICE_OFFSET_NS,
        device_offset_ns: -(DEVICE_OFFSET_NS as i64),
        uncertainty_ns: 50,
    }));
    out
}

fn chrono_epoch() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(1_750_000_000, 0).unwrap_or_default()
}

/// A deterministic jitter in `0..range` for submission `i`, region `r`.
fn jitter(i: u64, r: u64, range: u64) -> u64 {
    let mut z = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ r.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 29)) % range.max(1)
}

/// Per-submission generator state: when each queue frees up.
#[derive(Default)]
struct Schedule {
    compute_end: u64,
    download_end: u64,
    host_end: u64,
    stopped: bool,
}

impl Schedule {
    fn submission(&mut self, spec: &PipelineSpec, i: u64) -> Vec<Record> {
        let mut out = Vec::with_capacity(12);
        if self.stopped {
            return out;
        }
        let sub = SubmissionIndex(i);
        let submit_ns = 10_000 + i * spec.period_ns;
        if spec
            .busy_every
            .is_some_and(|n| n > 0 && i > 0 && i.is_multiple_of(n))
        {
            out.push(Record::SubmitRefused(SubmitRefused {
                runtime: RT,
                prepared: PREPARED,
                kind: RefusalKind::Busy,
                reason: "busy: both run slots are in flight".into(),
                time_ns: submit_ns - 2_000,
            }));
        }
        out.push(Record::Submit(Submit {
            runtime: RT,
            prepared: PREPARED,
            submission: sub,
            slot: (i % 2) as u32,
            producers: Vec::new(),
            time_ns: submit_ns,
        }));
        if i > 0 {
            for (region, on_region, buffer) in [(0, 1, 1), (1, 2, 3)] {
                out.push(Record::CrossWait(CrossWait {
                    runtime: RT,
                    submission: sub,
                    region: RegionIndex(region),
                    on_submission: SubmissionIndex(i - 1),
                    on_region: RegionIndex(on_region),
                    kind: HazardKind::WriteAfterRead,
                    buffer: BufferId(buffer),
                    start: 0,
                    end: COPY_BYTES,
                }));
            }
        }
        let long = if i % 97 == 13 { 5 } else { 1 };
        let up = (submit_ns + 1_000).max(self.compute_end);
        let up_end = up + 18_000 + jitter(i, 0, 4_000);
        let compute = up_end.max(self.download_end) + 500;
        let compute_end = compute + (40_000 + jitter(i, 1, 20_000)) * long;
        let failing = spec.fail_at == Some(i);
        let timing = |region: u32, start_ns: u64, end_ns: u64, device: bool| {
            Record::RegionTiming(RegionTiming {
                runtime: RT,
                submission: sub,
                region: RegionIndex(region),
                start_ns,
                end_ns,
                device: device.then_some(DeviceSpan {
                    start_ns: start_ns + DEVICE_OFFSET_NS + 300,
                    end_ns: end_ns + DEVICE_OFFSET_NS - 200,
                }),
            })
        };
        let done = |region: u32, status: Status, time_ns: u64| {
            Record::RegionDone(RegionDone {
                runtime: RT,
                submission: sub,
                region: RegionIndex(region),
                status,
                time_ns,
            })
        };
        out.push(timing(0, up, up_end, true));
        out.push(done(0, Status::Ok, up_end + 200));
        if failing {
            let fail_ns = compute + 7_000;
            out.push(Record::FaultInjected(FaultInjected {
                runtime: RT,
                submission: Some(sub),
                region: Some(RegionIndex(1)),
                description: "device lost at operation 2".into(),
                time_ns: fail_ns,
            }));
            out.push(timing(1, compute, fail_ns, true));
            let error =
                "device lost: injected fault op=2:device-lost at device operation 2 (sobel)"
                    .to_owned();
            out.push(done(
                1,
                Status::Failed {
                    error: error.clone(),
                },
                fail_ns + 100,
            ));
            for (region, t) in [(2, fail_ns + 300), (3, fail_ns + 400)] {
                let reason = "producer region 1 failed".to_owned();
                out.push(done(region, Status::Cancelled { reason }, t));
            }
            out.push(Record::Quarantine(Quarantine {
                runtime: RT,
                prepared: PREPARED,
                submission: Some(sub),
                region: Some(RegionIndex(1)),
                cause: error.clone(),
                time_ns: fail_ns + 500,
            }));
            out.push(Record::Poison(Poison {
                runtime: RT,
                buffer: BufferId(3),
                cause: error.clone(),
                time_ns: fail_ns + 600,
                submission: Some(sub),
                region: Some(RegionIndex(1)),
            }));
            out.push(Record::SubmissionDone(SubmissionDone {
                runtime: RT,
                submission: sub,
                status: Status::Failed { error },
                time_ns: fail_ns + 700,
            }));
            out.push(Record::SubmitRefused(SubmitRefused {
                runtime: RT,
                prepared: PREPARED,
                kind: RefusalKind::DeviceLost,
                reason: "prepared graph 1 is quarantined".into(),
                time_ns: (submit_ns + spec.period_ns).max(fail_ns + 800),
            }));
            self.stopped = true;
            return out;
        }
        let download = compute_end.max(self.host_end) + 500;
        let download_end = download + 14_000 + jitter(i, 2, 3_000);
        let host = download_end + 1_000;
        let host_end = host + 4_000 + jitter(i, 3, 2_000);
        out.push(timing(1, compute, compute_end, true));
        out.push(done(1, Status::Ok, compute_end + 200));
        out.push(timing(2, download, download_end, true));
        out.push(done(2, Status::Ok, download_end + 200));
        out.push(timing(3, host, host_end, false));
        out.push(done(3, Status::Ok, host_end + 100));
        out.push(Record::SubmissionDone(SubmissionDone {
            runtime: RT,
            submission: sub,
            status: Status::Ok,
            time_ns: host_end + 300,
        }));
        self.compute_end = compute_end;
        self.download_end = download_end;
        self.host_end = host_end;
        out
    }
}

/// The records of a pipeline trace, produced lazily (see the module docs).
pub fn pipeline(spec: PipelineSpec) -> impl Iterator<Item = Record> {
    let mut schedule = Schedule::default();
    let end_ns = 10_000 + (spec.submissions + 2) * spec.period_ns * 2;
    setup_records()
        .into_iter()
        .chain((0..spec.submissions).flat_map(move |i| schedule.submission(&spec, i)))
        .chain(std::iter::once(Record::SessionEnd(SessionEnd {
            time_ns: end_ns,
            records: 0,
            dropped_records: 0,
        })))
}

/// `records` (a [`pipeline`]) with an [`OpTiming`] for each operation of every compute
/// region after its [`RegionTiming`], as a backend that times a native graph's operations
/// records them: `blur` (node 1) over the first 45% of the region, `sobel` (node 2) from
/// 5% later to its end, each 200 ns inside the region's host span and, where the region has
/// a device span, on the device clock likewise. A failed compute region keeps both, as a
/// backend that timed the operations before the fault would: readers must leave them out.
pub fn with_op_timings(records: impl Iterator<Item = Record>) -> impl Iterator<Item = Record> {
    records.flat_map(|record| {
        let mut out = vec![record.clone()];
        if let Record::RegionTiming(t) = record
            && t.region == RegionIndex(1)
        {
            let split = |(start, end): (u64, u64)| {
                let len = end.saturating_sub(start);
                [
                    (start + 200, start + len * 45 / 100),
                    (start + len / 2, end.saturating_sub(200)),
                ]
            };
            let host = split((t.start_ns, t.end_ns));
            let device = t.device.map(|d| split((d.start_ns, d.end_ns)));
            for (i, (start_ns, end_ns)) in host.into_iter().enumerate() {
                out.push(Record::OpTiming(OpTiming {
                    timing: RegionTiming {
                        start_ns,
                        end_ns,
                        device: device.map(|d| DeviceSpan {
                            start_ns: d[i].0,
                            end_ns: d[i].1,
                        }),
                        ..t
                    },
                    node: NodeIndex(1 + i as u32),
                }));
            }
        }
        out
    })
}

/// `records` (a [`pipeline`], with or without [`with_op_timings`]) with a third kernel
/// `name` (kernel 12, node 5) appended to the compute region (region 1) of its graph, timed
/// as `sobel` is where the trace times operations: a graph that gained a kernel, for
/// `diff`'s tests.
pub fn with_kernel_added(
    records: impl Iterator<Item = Record>,
    name: &str,
) -> impl Iterator<Item = Record> {
    let name = name.to_owned();
    records.flat_map(move |r| match r {
        Record::KernelLoaded(ref k) if k.kernel == SOBEL => {
            let added = KernelLoaded {
                kernel: KernelId(12),
                entry: name.clone(),
                ..k.clone()
            };
            vec![r, Record::KernelLoaded(added)]
        }
        Record::GraphOp(ref op) if op.node == NodeIndex(2) => {
            let added = GraphOp {
                node: NodeIndex(5),
                op: OpKind::Kernel {
                    kernel: KernelId(12),
                },
                ..op.clone()
            };
            vec![r, Record::GraphOp(added)]
        }
        Record::Prepared(mut p) => {
            p.regions[1].nodes.push(NodeIndex(5));
            vec![Record::Prepared(p)]
        }
        Record::OpTiming(t) if t.node == NodeIndex(2) => vec![
            Record::OpTiming(t),
            Record::OpTiming(OpTiming {
                node: NodeIndex(5),
                ..t
            }),
        ],
        r => vec![r],
    })
}

/// `records` (a [`pipeline`], with or without [`with_op_timings`]) as a build whose graph
/// lacks region `gone`: its records left out, later regions one index lower (its
/// operations stay in the graph, in no region): a graph that lost a region, for `diff`'s
/// tests (the other way round, one that gained it).
pub fn with_region_removed(
    records: impl Iterator<Item = Record>,
    gone: u32,
) -> impl Iterator<Item = Record> {
    let shift = move |r: &mut RegionIndex| {
        let keep = r.0 != gone;
        if r.0 > gone {
            r.0 -= 1;
        }
        keep
    };
    records.filter_map(move |mut r| {
        let keep = match &mut r {
            Record::Prepared(p) => {
                p.regions.remove(gone as usize);
                true
            }
            Record::RegionStarted(x) => shift(&mut x.region),
            Record::RegionTiming(x) => shift(&mut x.region),
            Record::OpTiming(x) => shift(&mut x.timing.region),
            Record::RegionDone(x) => shift(&mut x.region),
            Record::CrossWait(x) => shift(&mut x.region) & shift(&mut x.on_region),
            _ => true,
        };
        keep.then_some(r)
    })
}

/// Host threads and application annotations (format 1.14) beside `submissions` submissions
/// `period_ns` apart from `first_ns`: thread 0 `main` submits each submission (a `submit` of
/// a hundredth of the period at its submit time) and waits for it (a tenth); thread 1
/// `decoder` decodes a frame before each (a `decode` range of one period, two every fourth,
/// from 0 at the earliest); thread 0 marks `frame ready` after each wait and sets counter
/// `in flight` to 1 then 0 around it. Each name and thread is named before its first use.
pub fn annotations(submissions: u64, first_ns: u64, period_ns: u64) -> Vec<Record> {
    let thread = |thread, name: &str| {
        Record::ThreadName(ThreadName {
            thread,
            os_tid: 1000 + u64::from(thread),
            name: name.into(),
        })
    };
    let name = |id, text: &str| {
        Record::AnnotationName(AnnotationName {
            name: AnnotationId(id),
            text: text.into(),
        })
    };
    let mut out = vec![
        thread(0, "main"),
        thread(1, "decoder"),
        name(0, "decode"),
        name(1, "frame ready"),
        name(2, "in flight"),
    ];
    for i in 0..submissions {
        let at = first_ns + i * period_ns;
        let decode_ns = if i % 4 == 3 { 2 * period_ns } else { period_ns };
        let (submit_ns, wait_ns) = (period_ns / 100, period_ns / 10);
        out.push(Record::AnnotationRange(AnnotationRange {
            thread: 1,
            name: AnnotationId(0),
            start_ns: at.saturating_sub(decode_ns),
            end_ns: at,
        }));
        let span = |kind, start_ns, end_ns| {
            Record::HostSpan(HostSpan {
                thread: 0,
                kind,
                runtime: RuntimeId(0),
                submission: SubmissionIndex(i),
                region: None,
                start_ns,
                end_ns,
            })
        };
        out.push(span(HostSpanKind::Submit, at, at + submit_ns));
        let counter = |time_ns, value| {
            Record::CounterSample(CounterSample {
                thread: 0,
                name: AnnotationId(2),
                time_ns,
                value: CounterValue(value),
            })
        };
        let waited = at + submit_ns + wait_ns;
        out.push(counter(at + submit_ns, 1.0));
        out.push(span(HostSpanKind::Wait, at + submit_ns, waited));
        out.push(counter(waited, 0.0));
        out.push(Record::AnnotationMarker(AnnotationMarker {
            thread: 0,
            name: AnnotationId(1),
            time_ns: waited,
        }));
    }
    out
}

/// A wait of `thread` on the recorder from `start_ns` to `end_ns`, while recording no region's
/// record (a host write's, an annotation's).
pub fn recorder_wait(thread: u32, start_ns: u64, end_ns: u64) -> Record {
    Record::RecorderWait(RecorderWait {
        thread,
        thread_name: String::new(),
        start_ns,
        end_ns,
        runtime: None,
        submission: None,
        region: None,
    })
}

/// A range of annotation `name` on thread 0, from `start_ns` to `end_ns`.
pub fn range_on_first_thread(name: AnnotationId, start_ns: u64, end_ns: u64) -> Record {
    Record::AnnotationRange(AnnotationRange {
        thread: 0,
        name,
        start_ns,
        end_ns,
    })
}

/// `records` with every `runtime` field set to `id`: a second runtime's copy of a trace
/// (tests).
#[cfg(test)]
pub(crate) fn on_runtime(records: &[Record], id: u32) -> Vec<Record> {
    fn set(value: &mut serde_json::Value, id: u32) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if key == "runtime" {
                        *v = serde_json::json!(id);
                    } else {
                        set(v, id);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| set(v, id)),
            _ => {}
        }
    }
    (records.iter())
        .map(|r| {
            let mut value = serde_json::to_value(r).expect("a record as JSON");
            set(&mut value, id);
            serde_json::from_value(value).expect("a record from JSON")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two operation timings per compute region, inside its host and device spans, in
    /// node order and apart.
    #[test]
    fn op_timings_lie_inside_their_compute_region() {
        let records: Vec<_> = with_op_timings(pipeline(PipelineSpec::ops(40))).collect();
        let mut ops = 0;
        for (i, record) in records.iter().enumerate() {
            let Record::RegionTiming(region) = record else {
                continue;
            };
            if region.region != RegionIndex(1) {
                continue;
            }
            let [Record::OpTiming(a), Record::OpTiming(b)] = &records[i + 1..i + 3] else {
                panic!("two operation timings after compute region {region:?}");
            };
            assert_eq!((a.node, b.node), (NodeIndex(1), NodeIndex(2)));
            for op in [a, b] {
                assert_eq!(op.timing.submission, region.submission);
                assert!(op.timing.start_ns >= region.start_ns);
                assert!(op.timing.end_ns <= region.end_ns);
                let (d, r) = (op.timing.device.unwrap(), region.device.unwrap());
                assert!(d.start_ns >= r.start_ns && d.end_ns <= r.end_ns);
            }
            assert!(a.timing.end_ns < b.timing.start_ns);
            ops += 2;
        }
        assert_eq!(ops, 2 * 10);
    }
}
