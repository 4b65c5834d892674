//! Operation times inside a native graph as Nsight Compute counts a kernel's time (issue 20
//! point 5).
//!
//! A device measures when an operation's blocks ran (`%globaltimer` in hrx's built-in
//! kernels, CUPTI's activity records); Nsight Compute's `gpu__time_duration` of the same
//! kernel launched alone also counts its launch on the GPU (the front end taking the grid,
//! the first blocks scheduled) and the drain after its last block: about 1.3-1.7 µs a kernel
//! on the H200, a quarter of a 5 µs kernel (BENCHMARKS.md). Inside a graph the drain of what
//! an operation waits on and its own launch lie between that dependency's end and its first
//! block, so an operation's time runs from the latest end among the operations it waits on to
//! its own end: the times of a chain add up to the chain's span, as the software device's
//! (one clock reading between operations) and HIP's event-record nodes' (an event between
//! operations) already do.
//!
//! A root (nothing before it in the graph, or only untimed operations) of a graph whose
//! built-in kernels time themselves waits on the graph's start marker (a one-thread kernel
//! whose `%globaltimer` reading is the region's start, `gpu::cuda::graph`): it is counted from
//! that reading like any dependent, its launch included. On the H200 a kernel starts 0.77 µs
//! after the marker's reading, as after a kernel it depends on (BENCHMARKS.md, session 29). In
//! a graph bracketed by event-record nodes (regions only, CUPTI) a root keeps its own start:
//! there the region's start event is not its launch. The first kernel of the pipeline's graph
//! starts 4-5 µs after that event (the event's own cost, 3.3-3.7 µs of a two-kernel graph's
//! span, and under CUPTI up to milliseconds), which stays in the region's time, outside every
//! operation's. An operation the device did not time (a fill or copy where only built-in
//! kernels time themselves) passes on what it waited on: a kernel whose last wait was an
//! untimed copy includes that copy's time.
//!
//! Placement: with a start marker the backend's placement is exact (the markers and the nodes
//! read one clock). Otherwise, when every leaf of the graph is timed (the end event-record node
//! waits for the leaves only), the spans are shifted so the latest leaf's end falls on the
//! region's end, the end event (its recorded span ends there); else the backend's placement
//! stays (a collector kernel's reading or CUPTI's clock calibration, within a microsecond or
//! two).

use super::{DeviceSpan, OpSpan};

/// A native graph's dependencies, recorded as it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GraphShape {
    /// Each operation node's dependencies, by [`super::GraphNode`] index (always earlier
    /// nodes).
    pub(crate) dependencies: Box<[Box<[u32]>]>,
    /// The nodes nothing depends on.
    pub(crate) leaves: Box<[u32]>,
}

/// The span from the earliest start to the latest end of `ops` (host clock, ns); `None`
/// for no operation. A region timed by its operations alone (CUPTI's, `gpu::cuda`'s
/// stream) runs over it.
pub(crate) fn covering(ops: &[OpSpan]) -> Option<DeviceSpan> {
    let start_ns = ops.iter().map(|op| op.span.start_ns).min()?;
    let end_ns = ops.iter().map(|op| op.span.end_ns).max()?;
    Some(DeviceSpan { start_ns, end_ns })
}

/// Turns the spans of the operations of one launch of a graph shaped `shape` that ran as
/// `region` (host clock, ns) into operation times counted from what each waits on (module
/// docs): each span's start moves back to the latest end among its dependencies (untimed ones
/// pass on their own dependencies'), never later than its own start; a root is counted from
/// the region's start when `from_start` (the graph's start marker is that start), else keeps
/// its own. Spans of nodes the shape does not know are left alone.
pub(crate) fn launch_inclusive(
    ops: &mut [OpSpan],
    shape: &GraphShape,
    region: DeviceSpan,
    from_start: bool,
) {
    let n = shape.dependencies.len();
    let mut span_of = vec![None; n];
    for (i, op) in ops.iter().enumerate() {
        if op.index < n {
            span_of[op.index] = Some(i);
        }
    }
    let leaf_ends: Option<Vec<u64>> = shape
        .leaves
        .iter()
        .map(|&l| span_of[l as usize].map(|i| ops[i].span.end_ns))
        .collect();
    if let Some(latest) = leaf_ends
        .filter(|_| !from_start)
        .and_then(|ends| ends.into_iter().max())
    {
        let shift = i128::from(region.end_ns) - i128::from(latest);
        let moved = |t: u64| u64::try_from(i128::from(t) + shift).unwrap_or(0);
        for &i in span_of.iter().flatten() {
            let span = &mut ops[i].span;
            (span.start_ns, span.end_ns) = (moved(span.start_ns), moved(span.end_ns));
        }
    }
    // When each node's dependents may start: its end, or (untimed) what it waited on; `None`
    // where nothing timed precedes it.
    let mut done: Vec<Option<u64>> = vec![None; n];
    for node in 0..n {
        // Never before the region's start: a dependency's span from outside this launch
        // (a stale or misplaced record) must not stretch its dependents.
        let dependencies = &shape.dependencies[node];
        let ready = if dependencies.is_empty() {
            from_start.then_some(region.start_ns)
        } else {
            dependencies
                .iter()
                .filter_map(|&d| done.get(d as usize).copied().flatten())
                .max()
                .map(|ready| ready.max(region.start_ns))
        };
        done[node] = match span_of[node] {
            Some(i) => {
                let span = &mut ops[i].span;
                if let Some(ready) = ready {
                    span.start_ns = span.start_ns.min(ready);
                }
                Some(span.end_ns)
            }
            None => ready,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dependencies: &[&[u32]], leaves: &[u32]) -> GraphShape {
        GraphShape {
            dependencies: dependencies.iter().map(|d| (*d).into()).collect(),
            leaves: leaves.into(),
        }
    }

    fn op(index: usize, start_ns: u64, end_ns: u64) -> OpSpan {
        OpSpan {
            index,
            span: DeviceSpan { start_ns, end_ns },
            device: true,
        }
    }

    fn spans(ops: &[OpSpan]) -> Vec<(usize, u64, u64)> {
        ops.iter()
            .map(|o| (o.index, o.span.start_ns, o.span.end_ns))
            .collect()
    }

    #[test]
    fn a_region_timed_by_its_operations_covers_them_all() {
        assert_eq!(covering(&[]), None);
        // Copies in start order, a gap between them; a graph's out of order.
        let copies = [op(0, 1_000, 1_500), op(1, 1_600, 9_000)];
        assert_eq!(
            covering(&copies),
            Some(DeviceSpan {
                start_ns: 1_000,
                end_ns: 9_000
            })
        );
        let graph = [
            op(2, 5_000, 7_000),
            op(0, 2_000, 3_000),
            op(1, 3_000, 6_000),
        ];
        assert_eq!(
            covering(&graph),
            Some(DeviceSpan {
                start_ns: 2_000,
                end_ns: 7_000
            })
        );
    }

    #[test]
    fn a_chain_tiles_its_span_with_each_launch_counted_in_its_kernel() {
        // Three kernels, 1 µs launch gaps, placed 700 ns early (the collector ran late):
        // shifted so the last ends at the region's end, each from its predecessor's end, the
        // root from its own start (the 300 ns before it stay the region's).
        let mut ops = vec![
            op(0, 1_300, 3_300),
            op(1, 4_300, 5_300),
            op(2, 6_300, 9_300),
        ];
        let region = DeviceSpan {
            start_ns: 1_000,
            end_ns: 10_000,
        };
        launch_inclusive(&mut ops, &shape(&[&[], &[0], &[1]], &[2]), region, false);
        assert_eq!(
            spans(&ops),
            [(0, 2_000, 4_000), (1, 4_000, 6_000), (2, 6_000, 10_000)]
        );
        let total: u64 = ops.iter().map(|o| o.span.end_ns - o.span.start_ns).sum();
        assert_eq!(total, region.end_ns - 2_000);
    }

    #[test]
    fn after_a_start_marker_roots_count_from_the_region_start_and_nothing_is_shifted() {
        // The marker's reading is the region's start, the collector's its end: the placement
        // is exact, so the leaves keep their ends; the root (0) and the kernel after an untimed
        // root (2 after fill 1) start at the marker like dependents at their dependency.
        let spans_read = || {
            vec![
                op(0, 1_800, 4_000),
                op(2, 1_900, 6_000),
                op(3, 6_800, 9_200),
            ]
        };
        let mut ops = spans_read();
        let region = DeviceSpan {
            start_ns: 1_000,
            end_ns: 10_000,
        };
        let graph = shape(&[&[], &[], &[1], &[0, 2]], &[3]);
        launch_inclusive(&mut ops, &graph, region, true);
        assert_eq!(
            spans(&ops),
            [(0, 1_000, 4_000), (2, 1_000, 6_000), (3, 6_000, 9_200)]
        );
        // Without the marker, the same spans: shifted onto the end, roots from their own start.
        let mut ops = spans_read();
        launch_inclusive(&mut ops, &graph, region, false);
        assert_eq!(
            spans(&ops),
            [(0, 2_600, 4_800), (2, 2_700, 6_800), (3, 6_800, 10_000)]
        );
    }

    #[test]
    fn an_untimed_fill_passes_on_what_it_waited_for() {
        // The pipeline's region: a chain 0 -> 1, a fill 2 (a root, untimed) and 3 after both.
        let mut ops = vec![
            op(0, 2_000, 4_000),
            op(1, 5_000, 7_000),
            op(3, 8_000, 9_000),
        ];
        let region = DeviceSpan {
            start_ns: 1_000,
            end_ns: 9_000,
        };
        launch_inclusive(
            &mut ops,
            &shape(&[&[], &[0], &[], &[1, 2]], &[3]),
            region,
            false,
        );
        assert_eq!(
            spans(&ops),
            [(0, 2_000, 4_000), (1, 4_000, 7_000), (3, 7_000, 9_000)]
        );
        // An untimed node after a timed one: its dependent starts at the timed one's end.
        let mut ops = vec![op(0, 2_000, 4_000), op(2, 6_000, 9_000)];
        launch_inclusive(&mut ops, &shape(&[&[], &[0], &[1]], &[2]), region, false);
        assert_eq!(spans(&ops), [(0, 2_000, 4_000), (2, 4_000, 9_000)]);
        // After an untimed root only: a root itself.
        let mut ops = vec![op(1, 3_000, 9_000)];
        launch_inclusive(&mut ops, &shape(&[&[], &[0]], &[1]), region, false);
        assert_eq!(spans(&ops), [(1, 3_000, 9_000)]);
    }

    #[test]
    fn an_untimed_leaf_keeps_the_backends_placement() {
        // Leaf 1 (a copy) is untimed: no shift.
        let mut ops = vec![op(0, 1_500, 3_000)];
        let region = DeviceSpan {
            start_ns: 1_000,
            end_ns: 9_000,
        };
        launch_inclusive(&mut ops, &shape(&[&[], &[0]], &[1]), region, false);
        assert_eq!(spans(&ops), [(0, 1_500, 3_000)]);
        // Parallel branches: each from its own dependency, never later than its own start.
        let mut ops = vec![
            op(0, 1_000, 2_000),
            op(1, 1_200, 8_000),
            op(2, 1_900, 9_000),
        ];
        launch_inclusive(&mut ops, &shape(&[&[], &[], &[0]], &[1, 2]), region, false);
        assert_eq!(
            spans(&ops),
            [(0, 1_000, 2_000), (1, 1_200, 8_000), (2, 1_900, 9_000)]
        );
        // A dependency's span from before the region (a stale record) stretches nothing.
        let mut ops = vec![op(0, 10, 10), op(1, 3_000, 9_000)];
        launch_inclusive(&mut ops, &shape(&[&[], &[0]], &[1]), region, false);
        assert_eq!(spans(&ops), [(0, 10, 10), (1, 1_000, 9_000)]);
        // A node the shape does not know (a copy of the batch) is left alone.
        let mut ops = vec![op(5, 3_000, 4_000)];
        launch_inclusive(&mut ops, &shape(&[&[]], &[0]), region, false);
        assert_eq!(spans(&ops), [(5, 3_000, 4_000)]);
    }
}
