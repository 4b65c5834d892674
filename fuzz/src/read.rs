//! The trace-reader fuzz entry, shared by the `read` fuzz target and by
//! `capture/tests/corpus.rs`, which replays the committed corpus through it in CI.
//!
//! An input is one mode byte, then the file. Mode bit 0 set: before reading, every block
//! checksum (and the file header's) is recomputed ([`reseal`]), so that mutations reach the
//! decoders behind the checksums instead of stopping at them. Both readers read the file:
//! the streaming reader to the end (as `hrx-trace info` and `dump` do), the mapped reader
//! block by block. Checked: no panic, errors and warnings are one line, the recovery figures
//! agree with what was read, and an intact file reads the same through both readers.
//!
//! Allocation is measured by the caller (see `alloc.rs`) around each reader: the streaming
//! reader must not hold more than [`stream_bound`] bytes live at any point, the mapped
//! reader more than [`mapped_bound`].

use hrx_capture::format::{BLOCK_HEADER_LEN, BLOCK_MARKER, FILE_HEADER_LEN, MAGIC};
use hrx_capture::{MappedTrace, TraceReader};
use std::borrow::Cow;
use xxhash_rust::xxh3::xxh3_64;

/// Most bytes the streaming reader may hold live reading a file of `len` bytes: one block's
/// stored bytes and its payload, which decompresses to at most 64 times the block's size
/// (`hrx_capture::format::MAX_ZSTD_RATIO`), zstd's window of at most the payload's size, and
/// 4 MiB for buffers and zstd's contexts. Records are decoded one at a time.
pub fn stream_bound(len: usize) -> usize {
    len * (1 + 2 * 64) + (4 << 20)
}

/// Most bytes the mapped reader may hold live reading a file of `len` bytes, every block
/// decoded in turn: the file itself and its block list, one block's payload (as above) and
/// the block's decoded records, which take up to 64 times their encoded size in memory (a
/// 160-byte `Record` from a 4-byte frame, plus what its vectors hold), and 4 MiB.
pub fn mapped_bound(len: usize) -> usize {
    len * (2 + 2 * 64 + 64 * 64) + (4 << 20)
}

/// Runs `body`, checking it against `bound` bytes live; `what` names it in the failure.
pub type Measure = fn(what: &str, bound: usize, body: &mut dyn FnMut());

/// The file an input describes: the bytes after the mode byte, resealed when bit 0 is set.
pub fn file_of(input: &[u8]) -> Option<Cow<'_, [u8]>> {
    let (&mode, file) = input.split_first()?;
    Some(if mode & 1 == 1 {
        Cow::Owned(reseal(file))
    } else {
        Cow::Borrowed(file)
    })
}

/// Reads the file `input` describes with both readers and checks what they report.
///
/// # Panics
///
/// On any violated property: that is the finding.
pub fn read(input: &[u8], measure: Measure) {
    let Some(file) = file_of(input) else {
        return;
    };
    let (mut streamed, mut mapped) = (None, None);
    measure(
        "the streaming reader",
        stream_bound(file.len()),
        &mut || {
            streamed = stream(&file);
        },
    );
    measure("the mapped reader", mapped_bound(file.len()), &mut || {
        mapped = self::mapped(&file);
    });
    if let (Some((records, true)), Some((mapped_records, true))) = (streamed, mapped) {
        assert_eq!(
            records, mapped_records,
            "the readers disagree on an intact file"
        );
    }
}

fn one_line(text: &str) {
    assert!(!text.contains('\n'), "not one line: {text:?}");
    assert!(text.starts_with("byte "), "no byte offset: {text:?}");
}

/// Streams every record; returns the count and whether the file read back intact.
fn stream(file: &[u8]) -> Option<(u64, bool)> {
    let mut reader = match TraceReader::new(file) {
        Ok(reader) => reader,
        Err(error) => {
            one_line(&error.to_string());
            return None;
        }
    };
    let mut records = 0u64;
    for item in reader.by_ref() {
        match item {
            Ok(_) => records += 1,
            Err(error) => panic!("an I/O error from a byte slice: {error}"),
        }
    }
    let r = *reader.recovery();
    assert_eq!(r.records, records, "{r:?}");
    assert!(!r.clean_close || r.closed, "{r:?}");
    assert!(r.bytes_discarded <= file.len() as u64, "{r:?}");
    for warning in reader.warnings() {
        one_line(&warning.to_string());
    }
    Some((records, r.is_complete() && reader.warnings().is_empty()))
}

/// Reads every block of the mapped reader; returns the count and whether it was intact.
fn mapped(file: &[u8]) -> Option<(u64, bool)> {
    let trace = match MappedTrace::from_vec(file.to_vec()) {
        Ok(trace) => trace,
        Err(error) => {
            one_line(&error.to_string());
            return None;
        }
    };
    assert!(!trace.clean_close() || trace.closed());
    let mut records = 0u64;
    let mut intact = trace.clean_close() && trace.warnings().is_empty();
    for (i, block) in trace.blocks().iter().enumerate() {
        assert!(block.offset + block.header.block_len() <= file.len() as u64);
        match trace.read_block(i) {
            Ok(read) => {
                records += read.records.len() as u64;
                intact &= read.warnings.is_empty();
                for warning in &read.warnings {
                    one_line(&warning.to_string());
                }
            }
            Err(error) => {
                intact = false;
                one_line(&error.to_string());
            }
        }
    }
    for warning in trace.warnings() {
        one_line(&warning.to_string());
    }
    Some((records, intact))
}

/// `file` with the file header's checksum and every block's header and payload checksums
/// recomputed, walking blocks from the header's length while their lengths fit in the file.
pub fn reseal(file: &[u8]) -> Vec<u8> {
    let mut out = file.to_vec();
    if out.len() < FILE_HEADER_LEN || out[..8] != MAGIC {
        return out;
    }
    let check = xxh3_64(&out[..28]) as u32;
    out[28..32].copy_from_slice(&check.to_le_bytes());
    let header_len = u32::from_le_bytes(out[20..24].try_into().expect("4 bytes")) as usize;
    let mut at = header_len.max(FILE_HEADER_LEN);
    while at + BLOCK_HEADER_LEN <= out.len() && out[at..at + 4] == BLOCK_MARKER {
        let stored = u32::from_le_bytes(out[at + 8..at + 12].try_into().expect("4 bytes"));
        let start = at + BLOCK_HEADER_LEN;
        let Some(end) = start
            .checked_add(stored as usize)
            .filter(|&end| end <= out.len())
        else {
            break;
        };
        let sum = xxh3_64(&out[start..end]);
        out[at + 20..at + 28].copy_from_slice(&sum.to_le_bytes());
        let check = xxh3_64(&out[at..at + 28]) as u32;
        out[at + 28..at + 32].copy_from_slice(&check.to_le_bytes());
        at = end;
    }
    out
}
