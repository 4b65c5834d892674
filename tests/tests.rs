//! Integration tests, one binary.
//!
//! Tests declared with `conformance!` are the backend conformance suite: each runs on the
//! software device and again on every backend named in `HRX_TEST_BACKENDS` (comma-separated,
//! e.g. `HRX_TEST_BACKENDS=sim,cuda`), so the same assertions hold on real hardware.

#[macro_use]
mod common;
mod runtime;
