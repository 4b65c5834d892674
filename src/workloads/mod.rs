//! Built-in workloads: complete programs over the runtime's public API.
//!
//! They serve three purposes: they are examples of how an application drives hrx (build a
//! graph once, prepare it, submit it many times, keep several submissions in flight); they
//! are the inputs `hrx-trace record --workload NAME` captures; and their tests check the
//! runtime end to end against independent CPU computations.
//!
//! - [`pipeline`]: an image pipeline over RGB8 frames. Each frame crosses four queues
//!   (GPU Upload, GPU Compute, GPU Download, NPU) and up to N frames are in flight, each in
//!   its own ring slot of buffers and prepared graph.
//! - [`hazards`]: producers and consumers on shared, partly overlapping byte ranges across
//!   several back-to-back submissions, so that read-after-write, write-after-read and
//!   write-after-write occur both inside graphs and between submissions; the final bytes
//!   are checked against a sequential CPU computation.
//!
//! The workloads take decoded data only: no file formats are parsed here.

pub mod hazards;
pub mod pipeline;

pub use hazards::{CrossHazard, HazardsReport, run_hazards};
pub use pipeline::{Frame, FrameOutput, Pipeline, PipelineOptions, PipelineStats};
