//! The committed fuzz corpus (`fuzz/corpus/plan`, `fuzz/corpus/read`) and the inputs of
//! fixed fuzz findings (`fuzz/regressions`) replayed through the `plan` fuzz target's own
//! entry (`fuzz/src/plan.rs`): replay planning of every input ends in an error (the
//! backend is absent), never a panic, and the real traces among them plan completely.

#[path = "../../fuzz/src/plan.rs"]
mod plan;
#[path = "../../fuzz/src/read.rs"]
#[allow(dead_code)] // the reader checks are the `read` target's; `plan` needs `file_of`
mod read;

use std::path::Path;

#[test]
fn replay_planning_of_every_corpus_input_ends_in_an_error_not_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus/plan", "corpus/read", "regressions"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            files.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
        }
    }
    files.sort();
    assert!(files.len() >= 10, "the corpus is missing: {files:?}");
    let planned = files
        .iter()
        .filter(|path| plan::plan(&std::fs::read(path).unwrap()))
        .count();
    println!(
        "{planned} of {} corpus inputs planned completely",
        files.len()
    );
    // The seeds are real traces: planning them must get as far as opening the backend.
    assert!(planned >= 5, "only {planned} corpus inputs planned");
}
