//! A real CUDA failure: `hrx-trace record --workload faults --backend cuda --max-width 96`
//! recorded on the NVIDIA H200 (committed as `tests/data/faults-cuda-h200.hrxt`; see
//! BENCHMARKS.md, GPU section). Frame 2's graph runs `hrx_fail`, an out-of-bounds store:
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, a sticky device loss, so its graph is quarantined and what
//! its compute region writes is poisoned, and the frames in flight behind it fail the same
//! way on the dead context. The timeline must show all of it from the file as recorded.

use crate::record::{SCREEN, view};
use hrx_tui::Action;
use hrx_tui::state::EventKind;
use std::path::Path;

fn model() -> hrx_tui::Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/faults-cuda-h200.hrxt");
    hrx_tui::load(&path).expect("the committed CUDA trace loads")
}

#[test]
fn quarantine_and_poison_of_a_real_illegal_address() {
    let model = model();
    let count = |kind| model.events().iter().filter(|e| e.kind == kind).count();
    // Three graphs failed on the lost context: each quarantined, each compute region's
    // writes poisoned (11 buffers in all, as `record` summarised on the H200).
    assert_eq!(count(EventKind::Quarantine), 3);
    assert_eq!(count(EventKind::Poison), 11);
    assert_eq!(count(EventKind::RegionFailed), 3);
    assert!(count(EventKind::RegionCancelled) >= 6);
    assert_eq!(
        count(EventKind::FaultInjected),
        0,
        "a real fault, not an injected one"
    );

    // `n` walks to the first failure: the quarantine of frame 2's graph, whose details pane
    // lists `hrx_fail`, with the CUDA error as recorded.
    let mut state = view(&model);
    let mut steps = 0;
    while state
        .event_cursor
        .is_none_or(|i| !model.events()[i].kind.is_failure())
    {
        state.update(&model, Action::NextEvent);
        steps += 1;
        assert!(steps <= model.events().len(), "no failure event");
    }
    let first = &model.events()[state.event_cursor.unwrap()];
    assert_eq!(first.kind, EventKind::Quarantine);
    assert!(
        first.text.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{}",
        first.text
    );
    let text = hrx_tui::render_to_string(&model, &state, SCREEN.0, SCREEN.1);
    for expected in [
        "cuda",
        "NVIDIA H200",
        "quarantine",
        "poison",
        "device lost",
        // CUDA's error names no operation, and the details say so.
        "not named by the error",
    ] {
        assert!(text.contains(expected), "{expected:?} missing:\n{text}");
    }
    insta::assert_snapshot!(text);
    // The operation list goes on below: scrolled, the pane shows `hrx_fail`.
    let (limit, page) = hrx_tui::details_scroll_limit(&model, &state);
    let mut scrolled = text.clone();
    while !scrolled.contains("hrx_fail") && state.details_scroll < limit {
        state.update(
            &model,
            Action::ScrollDetails {
                lines: page as i16,
                limit,
            },
        );
        scrolled = hrx_tui::render_to_string(&model, &state, SCREEN.0, SCREEN.1);
    }
    assert!(scrolled.contains("hrx_fail"), "{scrolled}");
}
