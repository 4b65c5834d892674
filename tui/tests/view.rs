//! Snapshot tests of the terminal timeline (ratatui `TestBackend` through
//! [`hrx_tui::render_to_string`], 120×40) on traces recorded from the real workloads:
//! `pipeline`, `hazards` and `faults`, run in this process on the software device.
//!
//! Times, ids and run slots are normalised before the model is built (see `record`), so
//! the snapshots (in `view/snapshots/`) change only when the views or the workloads do.
//! Review changes with `cargo insta review`, or accept them with
//! `INSTA_UPDATE=always cargo test -p hrx-tui --test view`.

#[path = "view/record.rs"]
mod record;

#[path = "view/cuda.rs"]
mod cuda;
#[path = "view/faults.rs"]
mod faults;
#[path = "view/hazards.rs"]
mod hazards;
#[path = "view/pipeline.rs"]
mod pipeline;
