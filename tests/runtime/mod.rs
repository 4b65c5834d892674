//! The hrx runtime, through its public API.

mod buffers;
mod failure;
mod graphs;
mod properties;
mod submission;
mod tracing;
