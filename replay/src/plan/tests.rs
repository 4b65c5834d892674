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
