//! Graphs, hazards, scheduling and completion: the runtime's stages, one file each.
//!
//! Three stages, as in the field's APIs (vulkano's build -> submit -> retire) and in the
//! seed (`shared/seed/graph.rs`, the reference design of this module):
//!
//! ```text
//!   build (build.rs) ──prepare (prepare.rs)──> regions (region.rs) ──submit (submit.rs)──>
//!   scheduler (scheduler.rs, worker.rs) ──retire──> completion (completion.rs)
//! ```
//!
//! - [`types`]: the vocabulary every stage uses (lanes, queues, region kinds, nodes);
//! - [`build`]: [`crate::Graph`]; each operation declares the byte ranges it reads and writes;
//!   contracts, alignment and runtime identity are checked here;
//! - [`prepare`]: [`crate::Graph::prepare`] lowers operations into *regions*, each one unit of
//!   native work on one queue;
//! - [`region`]: what a region is and how it runs on a worker;
//! - [`submit`]: [`crate::ExecutableGraph::submit`] into one of the graph's bounded, reusable
//!   slots;
//! - [`scheduler`]: in-flight submissions, readiness, retirement, failure;
//! - [`worker`]: the queues' worker threads, and waiters that run their own regions;
//! - [`completion`]: the host's handle on one submission, and the slot protocol;
//! - [`defer`]: a waiter's retirement of its own lone launch, left to the next lock holder;
//! - [`shared`]: the state the runtime's handles, its workers and the stages share;
//! - [`dependencies`]: the hazard frontier over byte ranges;
//! - [`record`]: the trace records of the stages, built here and handed to the trace hooks.
//!
//! Layers: this folder imports the buffers, contracts, backends, the context and the trace
//! hooks below it, and only `runtime.rs` imports it; nothing below imports it back.
//!
//! Import cycles: five files of the run-time ownership loop import each other, and only
//! they: `submit.rs` (a prepared graph holds the runtime owner, as the seed's `Prepared`
//! holds its `runtime`, so that work in flight keeps the workers running after every
//! handle is dropped), `shared.rs` (the owner holds the scheduler's core and starts the
//! workers), `scheduler.rs` (it holds each in-flight submission's prepared graph and its
//! producers' completions), `worker.rs` (it runs the scheduler's regions) and
//! `completion.rs` (a waiting completion runs its own regions through the workers). The
//! other stages (types, dependencies, build, prepare, region, record, the kernels) are
//! layered below or above that loop.

pub(crate) mod build;
pub mod completion;
pub(crate) mod defer;
pub mod dependencies;
pub(crate) mod gpu_kernel;
pub(crate) mod npu_kernel;
pub(crate) mod prepare;
pub(crate) mod record;
pub(crate) mod region;
pub(crate) mod scheduler;
pub(crate) mod shared;
pub(crate) mod submit;
#[cfg(test)]
pub(crate) mod test_util;
pub(crate) mod types;
pub(crate) mod worker;

/// Loom models of the slot, signal and completion protocol: see RELIABILITY.md.
#[cfg(all(test, feature = "model-check"))]
mod model_check;
