//! Integration tests of hrx-replay, as one binary.
//!
//! Traces are recorded in-process into a memory sink through `RuntimeOptions::recorder`,
//! so the tests never touch the process-wide trace and run in parallel. Replays run on the
//! software device.

mod common;
mod contention;
mod corpus;
mod divergence;
mod fault_matrix;
mod fixtures;
mod loss_race;
mod streamed;
mod substitution;
mod unreplayable;
mod workloads;
