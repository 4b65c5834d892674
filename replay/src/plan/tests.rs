//! Tests of the plan: attribution of digests to regions.

use super::check::attribute;
use super::*;

fn region(uses: &[(u64, u64, u64, Access)]) -> s::Region {
    region_of(&[0], uses)
}

fn region_of(nodes: &[u32], uses: &[(u64, u64, u64, Access)]) -> s::Region {
    s::Region {
        queue: s::Queue::GpuCompute,
        engine: Engine::Gpu,
        kind: RegionKind::NativeGraph,
        nodes: nodes.iter().map(|&n| s::NodeIndex(n)).collect(),
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
    let regions = vec![
        region(&[(1, 0, 16, Access::Read), (2, 0, 16, Access::Write)]),
        region(&[(2, 0, 16, Access::ReadWrite), (3, 0, 8, Access::Write)]),
        region(&[(2, 0, 16, Access::Write)]),
    ];
    let graph = GraphPlan::new(PreparedId(1), vec![fill(); 1], regions, Vec::new());
    let keys = [
        (BufferId(2), 0, 16),
        (BufferId(3), 0, 8),
        (BufferId(2), 0, 16),
        (BufferId(2), 0, 16),
        (BufferId(2), 0, 16),
        (BufferId(1), 0, 16),
    ];
    assert_eq!(
        attribute(&graph, &keys),
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

fn fill() -> OpPlan {
    OpPlan {
        op: OpKind::Fill { value: 0 },
        lane: Lane::Compute,
        uses: Vec::new(),
    }
}

/// A graph's operations and written ranges are looked up in tables made once (a scan of the
/// regions for each made a graph of 100,000 regions take minutes to plan): each operation
/// in the first region naming it, none for an operation no region names or past the
/// graph's; each range's writers in order, a region writing it twice once.
#[test]
fn a_graphs_operations_and_written_ranges_are_found_in_their_regions() {
    let regions = vec![
        region_of(
            &[0, 1],
            &[(2, 0, 16, Access::Write), (2, 0, 16, Access::ReadWrite)],
        ),
        region_of(&[2], &[(2, 0, 16, Access::Read), (3, 0, 8, Access::Write)]),
        // Names operation 2 again (a damaged trace): the first region keeps it.
        region_of(
            &[3, 2],
            &[(2, 0, 16, Access::Write), (3, 0, 4, Access::Write)],
        ),
    ];
    let graph = GraphPlan::new(PreparedId(1), vec![fill(); 5], regions, Vec::new());
    let found: Vec<Option<u32>> = (0..6).map(|node| graph.region_of_node(node)).collect();
    assert_eq!(found, [Some(0), Some(0), Some(1), Some(2), None, None]);
    assert_eq!(graph.writers(BufferId(2), 0, 16), [0, 2]);
    assert_eq!(graph.writers(BufferId(3), 0, 8), [1]);
    assert_eq!(graph.writers(BufferId(3), 0, 4), [2]);
    assert!(graph.writers(BufferId(3), 0, 16).is_empty());
    assert!(graph.writers(BufferId(1), 0, 16).is_empty());
}
