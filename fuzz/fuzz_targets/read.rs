//! Fuzzes both trace readers (streaming and mapped); see `src/read.rs`. Fails when a reader
//! holds more bytes live than its bound (`read::stream_bound`, `read::mapped_bound`).
#![no_main]

use hrx_fuzz::{alloc, read};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

fuzz_target!(|input: &[u8]| read::read(input, alloc::measure));
