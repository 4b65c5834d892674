//! Fuzzes the trace index of `hrx-analysis` (every reader's one pass); see `src/index.rs`.
#![no_main]

use hrx_fuzz::{index, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if let Some(file) = read::file_of(input) {
        index::index(&file);
    }
});
