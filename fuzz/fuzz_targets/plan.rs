//! Fuzzes replay planning (`hrx_replay::replay` on a backend this build lacks, so it plans
//! and stops); see `src/plan.rs`.
#![no_main]

use hrx_fuzz::plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    plan::plan(input);
});
