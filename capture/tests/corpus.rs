//! The committed fuzz corpora (`fuzz/corpus/read`, `fuzz/corpus/plan`, `fuzz/corpus/index`)
//! and the inputs of fixed fuzz findings (`fuzz/regressions`) replayed through the `read`
//! fuzz target's own entry (`fuzz/src/read.rs`), with its counting allocator: every
//! input reads without a panic, with one-line errors and warnings, and within the
//! allocation bounds.
//!
//! One test, so that nothing else allocates while the allocator counts.

#[path = "../../fuzz/src/alloc.rs"]
mod alloc;
#[path = "../../fuzz/src/read.rs"]
mod read;

use hrx_capture::format::{
    BLOCK_FLAG_ZSTD, BlockHeader, BlockKind, Compression, FileHeader, MAX_BLOCK_BYTES,
};
use std::io::Write;
use std::path::Path;
use xxhash_rust::xxh3::xxh3_64;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// The largest peak of each reader over the corpus: (peak, bound), by reader name.
static PEAKS: std::sync::Mutex<Vec<(String, usize, usize)>> = std::sync::Mutex::new(Vec::new());

/// [`alloc::measure`], noting the largest peak of each reader.
fn measure_noting(what: &str, bound: usize, body: &mut dyn FnMut()) {
    let base = alloc::live();
    alloc::reset_peak();
    body();
    let peak = alloc::peak_since(base);
    assert!(
        peak <= bound,
        "{what} held {peak} bytes live, over its bound of {bound}"
    );
    let mut peaks = PEAKS.lock().unwrap();
    match peaks.iter_mut().find(|(name, ..)| name == what) {
        Some(entry) if entry.1 < peak => *entry = (what.to_owned(), peak, bound),
        Some(_) => {}
        None => peaks.push((what.to_owned(), peak, bound)),
    }
}

/// Every file of the corpus directories, sorted.
fn corpus() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus/read", "corpus/plan", "corpus/index", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        files.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

/// A trace whose one block is a zstd frame of `MAX_BLOCK_BYTES` zeros, declared as such:
/// about 4 KiB that decompressed to 128 MiB before zstd blocks were bounded.
fn zstd_bomb() -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    encoder
        .set_pledged_src_size(Some(MAX_BLOCK_BYTES.into()))
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(MAX_BLOCK_BYTES >> 20) {
        encoder.write_all(&zeros).unwrap();
    }
    let stored = encoder.finish().unwrap();
    let header = BlockHeader {
        kind: BlockKind::RECORDS,
        flags: BLOCK_FLAG_ZSTD,
        stored_len: stored.len() as u32,
        uncompressed_len: MAX_BLOCK_BYTES,
        record_count: 1,
        checksum: xxh3_64(&stored),
    };
    let mut file = vec![0u8]; // mode byte: as is
    file.extend_from_slice(&FileHeader::current(Compression::Zstd).encode());
    file.extend_from_slice(&header.encode());
    file.extend_from_slice(&stored);
    file
}

#[test]
fn every_corpus_input_reads_within_its_allocation_bounds() {
    let bomb = zstd_bomb();
    assert!(bomb.len() < 8 << 10, "{}", bomb.len());
    read::read(&bomb, alloc::measure);
    let trace = hrx_capture::Trace::from_bytes(&bomb[1..]).unwrap();
    assert_eq!(trace.recovery.skipped_blocks, 1);
    assert!(
        trace.warnings[0]
            .to_string()
            .contains("over the format's bound"),
        "{}",
        trace.warnings[0]
    );

    let files = corpus();
    assert!(files.len() >= 10, "the corpus is missing: {files:?}");
    for path in &files {
        let input = std::fs::read(path).unwrap();
        println!("{} ({} bytes)", path.display(), input.len());
        read::read(&input, measure_noting);
    }
    for (what, peak, bound) in PEAKS.lock().unwrap().iter() {
        println!("{what}: largest peak {peak} bytes live (its bound there {bound})");
    }
}
