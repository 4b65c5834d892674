//! Runtime benchmarks (placeholder).
fn main() {}
