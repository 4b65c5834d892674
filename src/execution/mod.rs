//! Graphs, hazards, scheduling and completion.

pub mod completion;
pub mod dependencies;
pub mod graph;
pub(crate) mod npu_kernel;
pub(crate) mod scheduler;

/// Loom models of the slot, signal and completion protocol: see RELIABILITY.md.
#[cfg(all(test, feature = "model-check"))]
mod model_check;
