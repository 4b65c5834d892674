//! Operation timings (`OpTiming`): the operations of a region as sub-spans of its span.
//!
//! A region's span says how long its native graph (or copy batch) ran; where the backend
//! timed each operation inside it, the model keeps those times as [`OpSpan`]s in one column
//! sorted by *region slot*, then start:
//!
//! ```text
//! region_spans  [slot 0][slot 1][slot 2] ...      (submission's region base + region index)
//! op_spans      [s1 n1][s1 n2][s2 n1][s2 n2] ...  sorted by (slot, start_ns, node)
//! ```
//!
//! A span's operations are found by two binary searches on the slot
//! ([`Model::span_ops`]), so a frame reads the operations of the regions it draws as bars
//! and nothing else; a trace without operation timings has an empty column. A slot is
//! numbered when its submission's `Submit` is joined and never renumbered (sorting
//! submissions moves rows, not region bases), so the column does not depend on the
//! submissions' order and each builder fills it alike: [`super::ModelBuilder`] in memory,
//! the streaming builder ([`super::stream`]) through a spill file and its external sort,
//! the live builder ([`super::LiveBuilder`]) by sorting what came since its last publish
//! into the end of the column.
//!
//! **Times.** Each operation keeps its host span and, where the backend measured one, its
//! device span (on the device clock, as a region's). Durations prefer the device's
//! ([`OpSpan::time`]); the timeline places an operation at its device span mapped through
//! the runtime's clock calibration where both exist, else at its host span
//! ([`OpSpan::placed_ns`]). An operation's outcome is its region's: the operations of a
//! failed region are marked by its span's status, not stored apart.

use super::column::Plain;
use super::lanes::{Span, pack_device, unpack_device};
use super::model::{LaneRef, Model};
use hrx_capture::schema::{ClockCalibration, DeviceSpan, NodeIndex};

/// One operation's timing inside a region's execution (40 bytes, stored as they are in
/// the view cache's `op_spans` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct OpSpan {
    /// Host time when it started, ns since the session start.
    pub start_ns: u64,
    /// Host time when it ended.
    pub end_ns: u64,
    /// Device clock at the start (see [`pack_device`]).
    device_start_ns: u64,
    /// Device duration as [`pack_device`] stores it.
    device_len_ns: u32,
    /// The region slot of its span (see the module docs).
    slot: u32,
    /// The operation's index in its graph ([`NodeIndex`]).
    node: u32,
    _pad: u32,
}

const _: () = assert!(size_of::<OpSpan>() == 8 * 3 + 4 * 4);
// SAFETY: integer fields, no padding (asserted above).
unsafe impl Plain for OpSpan {}

/// Which clock an operation's duration ([`OpSpan::time`]) was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClock {
    /// The device's timestamps (preferred).
    Device,
    /// The host's: the backend recorded no device time (the software device).
    Host,
}

impl OpSpan {
    /// An operation `node` of region slot `slot`, timed `start_ns..end_ns` on the host
    /// and `device` on the device clock where measured.
    pub(crate) fn new(
        slot: u32,
        node: NodeIndex,
        start_ns: u64,
        end_ns: u64,
        device: Option<DeviceSpan>,
    ) -> OpSpan {
        let (device_start_ns, device_len_ns) = pack_device(device);
        OpSpan {
            start_ns,
            end_ns: end_ns.max(start_ns),
            device_start_ns,
            device_len_ns,
            slot,
            node: node.0,
            _pad: 0,
        }
    }

    /// The operation's index in its graph (a [`GraphOp`](hrx_capture::schema::GraphOp)'s
    /// `node`; its region's `nodes` list it).
    pub fn node(&self) -> NodeIndex {
        NodeIndex(self.node)
    }

    /// The column's order: region slot, then start, then node.
    pub(crate) fn key(&self) -> (u32, u64, u32) {
        (self.slot, self.start_ns, self.node)
    }

    /// Host duration in ns.
    pub fn host_duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// Device clock start and end, where the backend recorded them.
    pub fn device_ns(&self) -> Option<(u64, u64)> {
        unpack_device(self.device_start_ns, self.device_len_ns)
    }

    /// Its duration in ns and the clock it was read from: the device's where recorded,
    /// else the host's.
    pub fn time(&self) -> (u64, OpClock) {
        match self.device_ns() {
            Some((d0, d1)) => (d1 - d0, OpClock::Device),
            None => (self.host_duration_ns(), OpClock::Host),
        }
    }

    /// Where it sits on the timeline (host clock, ns): its device span mapped through
    /// `clock` where both exist, else its host span.
    pub fn placed_ns(&self, clock: Option<&ClockCalibration>) -> (u64, u64) {
        match (self.device_ns(), clock) {
            (Some((d0, d1)), Some(c)) => {
                let start = c.to_host_ns(d0);
                (start, start.saturating_add(d1 - d0))
            }
            _ => (self.start_ns, self.end_ns),
        }
    }
}

impl Model {
    /// The region slot of `span` (see the module docs).
    fn slot_of(&self, span: &Span) -> u64 {
        let base = self.submission(span.submission).region_base;
        u64::from(base) + u64::from(self.region(span.region).index.0)
    }

    /// The timed operations of a span's region execution, by start (empty where none was
    /// recorded: see [`Model::has_op_timings`]).
    pub fn span_ops(&self, span: &Span) -> &[OpSpan] {
        let slot = self.slot_of(span);
        let ops: &[OpSpan] = &self.op_spans;
        let first = ops.partition_point(|o| u64::from(o.slot) < slot);
        let len = ops[first..].partition_point(|o| u64::from(o.slot) == slot);
        &ops[first..first + len]
    }

    /// Whether the trace recorded any operation timing (`OpTiming`); without any, a view
    /// says that the trace has no per-operation times rather than showing none.
    pub fn has_op_timings(&self) -> bool {
        self.info.op_timings > 0
    }

    /// Operation timings joined to a region of the timeline.
    pub fn op_span_count(&self) -> usize {
        self.op_spans.len()
    }

    /// Operation timings of the regions of lane `lane`.
    pub fn lane_op_span_count(&self, lane: LaneRef) -> u64 {
        self.lane_op_spans.get(lane.get()).copied().unwrap_or(0)
    }

    /// Counts an operation timing of a region on `lane` (every builder, as it joins one).
    pub(crate) fn count_op_span(&mut self, lane: LaneRef) {
        if self.lane_op_spans.len() <= lane.get() {
            self.lane_op_spans.resize(lane.get() + 1, 0);
        }
        self.lane_op_spans[lane.get()] += 1;
    }
}

/// Sorts `ops[from..]` into the column's order, merging it with the sorted `ops[..from]`:
/// only the sorted part's items that sort after the new ones' first are moved, so ops
/// arriving in slot order (the usual case) cost what arrived.
pub(crate) fn sort_from(ops: &mut [OpSpan], from: usize) {
    let from = from.min(ops.len());
    ops[from..].sort_unstable_by_key(OpSpan::key);
    let Some(first) = ops.get(from).map(OpSpan::key) else {
        return;
    };
    let p = ops[..from].partition_point(|o| o.key() <= first);
    // Two sorted runs: the standard stable sort merges them in linear time.
    ops[p..].sort_by_key(OpSpan::key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::SpanStatus;
    use crate::timeline::fixtures::{Fixture, failed, region};
    use hrx_capture::schema::{KernelId, OpKind, Queue, RegionKind};

    /// One native graph on the compute queue: a fill (node 0), then kernel `saxpy`
    /// (node 1).
    fn fill_then_saxpy() -> Fixture {
        let mut f = Fixture::new();
        f.kernel(5, "saxpy")
            .op(1, 0, OpKind::Fill { value: 0 }, &[])
            .op(
                1,
                1,
                OpKind::Kernel {
                    kernel: KernelId(5),
                },
                &[],
            )
            .prepared(
                1,
                1,
                vec![region(
                    Queue::GpuCompute,
                    RegionKind::NativeGraph,
                    &[0, 1],
                    vec![],
                )],
            );
        f
    }

    /// The span of submission `sub`'s only region.
    fn span_of(model: &Model, sub: u64) -> Span {
        let lane = &model.lanes()[1];
        *lane
            .spans()
            .iter()
            .find(|s| model.submission(s.submission).index.0 == sub)
            .unwrap()
    }

    #[test]
    fn a_regions_operations_are_found_from_its_span_in_start_order() {
        let mut f = fill_then_saxpy();
        // Submission 1's timings reach the file before its submit (another thread's
        // buffer): the joiner holds them until it comes.
        f.op_timing((1, 0, 1), 1_300, 1_390, None)
            .op_timing((1, 0, 0), 1_210, 1_290, None)
            .submit(1, 0, &[], 0)
            .op_timing((0, 0, 1), 300, 390, Some((10_300, 10_380)))
            .op_timing((0, 0, 0), 210, 290, Some((10_210, 10_250)))
            .ran(0, 0, 200, 400)
            .submit(1, 1, &[], 1_000)
            .timing(1, 0, 1_200, 1_400)
            .done(1, 0, failed("kernel error (saxpy)"), 1_401)
            .submit(1, 2, &[], 2_000)
            .ran(2, 0, 2_200, 2_400);
        let model = f.model();
        assert!(model.has_op_timings());
        assert_eq!(model.op_span_count(), 4);
        let ops = model.span_ops(&span_of(&model, 0));
        let nodes: Vec<u32> = ops.iter().map(|o| o.node().0).collect();
        assert_eq!(nodes, [0, 1], "by start, not by arrival");
        // Device time where recorded.
        assert_eq!(ops[0].time(), (40, OpClock::Device));
        assert_eq!(ops[1].host_duration_ns(), 90);
        // The failed region's operations are there; its span says it failed.
        let failed_span = span_of(&model, 1);
        assert_eq!(failed_span.status(), SpanStatus::Failed);
        let ops = model.span_ops(&failed_span);
        assert_eq!(
            ops.iter()
                .map(|o| (o.node().0, o.time()))
                .collect::<Vec<_>>(),
            [(0, (80, OpClock::Host)), (1, (90, OpClock::Host))]
        );
        // A region without operation timings has none.
        assert!(model.span_ops(&span_of(&model, 2)).is_empty());
    }

    #[test]
    fn a_trace_without_operation_timings_says_so() {
        let mut f = fill_then_saxpy();
        f.submit(1, 0, &[], 0).ran(0, 0, 200, 400);
        let model = f.model();
        assert!(!model.has_op_timings());
        assert!(model.span_ops(&span_of(&model, 0)).is_empty());
    }

    fn op(slot: u32, start: u64) -> OpSpan {
        OpSpan::new(slot, NodeIndex(start as u32), start, start + 1, None)
    }

    #[test]
    fn sort_from_merges_late_arrivals_into_the_sorted_part() {
        let mut ops = vec![op(0, 5), op(2, 1), op(3, 0), op(1, 9), op(4, 2), op(0, 1)];
        sort_from(&mut ops, 3);
        let keys: Vec<(u32, u64)> = ops.iter().map(|o| (o.slot, o.start_ns)).collect();
        assert_eq!(keys, [(0, 1), (0, 5), (1, 9), (2, 1), (3, 0), (4, 2)]);
    }

    #[test]
    fn device_time_is_preferred_and_placed_through_the_calibration() {
        let device = DeviceSpan {
            start_ns: 10_500,
            end_ns: 10_800,
        };
        let op = OpSpan::new(0, NodeIndex(1), 400, 1_000, Some(device));
        assert_eq!(op.time(), (300, OpClock::Device));
        let clock = ClockCalibration {
            runtime: hrx_capture::schema::RuntimeId(0),
            host_ns: 0,
            device_ns: 10_000,
            device_offset_ns: -10_000,
            uncertainty_ns: 0,
        };
        assert_eq!(op.placed_ns(Some(&clock)), (500, 800));
        assert_eq!(op.placed_ns(None), (400, 1_000));
        let host = OpSpan::new(0, NodeIndex(1), 400, 1_000, None);
        assert_eq!(host.time(), (600, OpClock::Host));
        assert_eq!(host.placed_ns(Some(&clock)), (400, 1_000));
    }
}
