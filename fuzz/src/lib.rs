//! Shared code of the fuzz targets: the entries (also replayed over the committed corpus by
//! `capture/tests/corpus.rs` and `replay/tests/corpus.rs`) and the counting allocator.

pub mod alloc;
pub mod index;
pub mod plan;
pub mod read;
