//! The hrx runtime, through its public API.

mod backends;
mod buffers;
mod failure;
mod fork;
mod graphs;
mod properties;
mod range_snapshot;
mod seed_rules;
mod stress;
mod submission;
mod threads;
mod tracing;
