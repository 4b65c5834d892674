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
//! The workloads take decoded data only: no file formats are parsed here. They live in
//! their own crate, over the runtime's public API only, so the runtime crate holds the
//! runtime alone (used by the `hrx-trace` CLI, the examples, the benches and the tests).
#![warn(missing_docs)]

pub mod hazards;
pub mod pipeline;

pub use hazards::{CrossHazard, HazardsReport, run_hazards, run_held_wait};
pub use pipeline::{Frame, FrameOutput, Pipeline, PipelineOptions, PipelineStats};

/// The photographs to feed the pipeline: `input` itself when it is a file, else the
/// `.jpg`, `.jpeg` and `.png` files directly in the directory, in name order (possibly none).
///
/// # Errors
/// The I/O error of reading `input` or listing the directory.
pub fn image_files(input: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    if std::fs::metadata(input)?.is_file() {
        return Ok(vec![input.to_path_buf()]);
    }
    let mut images = Vec::new();
    for entry in std::fs::read_dir(input)? {
        let path = entry?.path();
        let is_image = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["jpg", "jpeg", "png"].contains(&e.to_ascii_lowercase().as_str()));
        if is_image && path.is_file() {
            images.push(path);
        }
    }
    images.sort();
    Ok(images)
}
