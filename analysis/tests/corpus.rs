//! The committed fuzz corpora of the trace reader (`fuzz/corpus/read`) and of the trace
//! index (`fuzz/corpus/index`: inputs of the `index` campaign that reach code the reader's
//! corpus does not) and the inputs of fixed fuzz findings (`fuzz/regressions`), replayed
//! through the `index` fuzz target's entry (`fuzz/src/index.rs`): every input is indexed
//! without a panic, errors are one line, and the mapped and streamed passes agree.

#[path = "../../fuzz/src/index.rs"]
mod index;
#[allow(dead_code)]
#[path = "../../fuzz/src/read.rs"]
mod read;

use std::path::Path;

#[test]
fn the_fuzz_corpus_indexes_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut inputs = 0;
    for dir in ["corpus/read", "corpus/index", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let input = std::fs::read(&path).unwrap();
            if let Some(file) = read::file_of(&input) {
                let outcome = std::panic::catch_unwind(|| index::index(&file));
                assert!(outcome.is_ok(), "{} panicked", path.display());
                inputs += 1;
            }
        }
    }
    assert!(inputs >= 100, "only {inputs} corpus inputs found");
}
