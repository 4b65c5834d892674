//! Graphs, hazards, scheduling and completion.

pub mod completion;
pub mod dependencies;
pub mod graph;
pub(crate) mod scheduler;
