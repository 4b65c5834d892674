//! Tests of the plan: attribution of digests to regions.

use super::check::attribute;
use super::*;

fn region(uses: &[(u64, u64, u64, Access)]) -> s::Region {
    s::Region {
        queue: s::Queue::GpuCompute,
        engine: Engine::Gpu,
        kind: RegionKind::NativeGraph,
        nodes: vec![s::NodeIndex(0)],
        internal_edges: Vec::new(),
        dependencies: Vec::new(),
        uses: uses
            .iter()
            .map(|&(buffer, start, end, access)| s::Use {
                buffer: BufferId(buffer),
                start,
                end,
                access,
            })
            .collect(),
        copy_bytes: 0,
    }
}

#[test]
fn digests_go_to_the_region_writing_exactly_that_range() {
    let regions = [
        region(&[(1, 0, 16, Access::Read), (2, 0, 16, Access::Write)]),
        region(&[(2, 0, 16, Access::ReadWrite), (3, 0, 8, Access::Write)]),
        region(&[(2, 0, 16, Access::Write)]),
    ];
    let keys = [
        (BufferId(2), 0, 16),
        (BufferId(3), 0, 8),
        (BufferId(2), 0, 16),
        (BufferId(2), 0, 16),
        (BufferId(2), 0, 16),
        (BufferId(1), 0, 16),
    ];
    assert_eq!(
        attribute(&regions, &keys),
        [Some(0), Some(1), Some(1), Some(2), Some(2), None]
    );
}

/// Runtimes that keep the device run first, in id order; then the first that loses the GPU
/// for good; the others that do are not replayed. With none that loses it, all run in id
/// order, and nothing is said.
#[test]
fn runtimes_that_lose_the_gpu_for_good_run_last_and_only_the_first_of_them() {
    let id = RuntimeId;
    let order = Order::of([(id(3), true), (id(1), true), (id(2), false), (id(4), false)]);
    assert_eq!(order.runs().collect::<Vec<_>>(), [id(2), id(4), id(1)]);
    assert_eq!(order.not_run, [id(3)]);
    assert!(order.replays(id(1)) && !order.replays(id(3)));
    let notes = order.notes(|_| Some((SubmissionIndex(2), "device lost: x; sticky: y".into())));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("runtime 1 replayed after every other runtime (runtimes 2, 4)"),
        "{notes:?}"
    );
    assert!(
        notes[1].starts_with(
            "runtime 3: not replayed, its submissions not compared: its capture lost the device \
             to a sticky error too (submission 2: device lost: x), and runtime 1's replay"
        ),
        "{notes:?}"
    );
    let calm = Order::of([(id(2), false), (id(1), false)]);
    assert_eq!(calm.runs().collect::<Vec<_>>(), [id(1), id(2)]);
    assert!(calm.notes(|_| None).is_empty());
    // Alone, it is run, and nothing is said of an order.
    assert!(Order::of([(id(1), true)]).notes(|_| None).is_empty());
}
