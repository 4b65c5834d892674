//! Appending records to a trace whose recorder is gone without closing it: `hrx-trace record`
//! notes there that the recorded process died of a signal ([`crate::schema::FatalSignal`]),
//! where the process's own handler could not (SIGKILL), or did not run.
//!
//! The records go in one uncompressed records block at the end of the file. A recorder
//! killed in the middle of a block leaves a torn block there: when its header is whole, the
//! file is first padded with zeros to the end the header declares (see
//! [`append_to_unclosed`]; nothing is removed, the torn block reads as skipped); when only
//! part of a header was written, the reader resynchronizes on the appended block's marker.
//! Either way the note reads back. The file lock proves no recorder still writes the file.

use crate::ShowPath;
use crate::format::{BLOCK_HEADER_LEN, BlockEncoder, BlockHeader, BlockKind, FrameEncoder};
use crate::reader::WarningKind;
use crate::{MappedTrace, Record};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Appends `records` as one block to the trace at `path`, which no recorder may hold.
///
/// A file that ends inside a block (a recorder killed in the middle of writing it) is first
/// padded with zeros to the end that block's header declares, so that the reader, which
/// takes a block to be as long as its header says, finds the appended block right after
/// it: the torn block then reads as one whose payload does not verify (skipped, its
/// declared records counted as skipped, `complete_blocks` unchanged), and nothing written is
/// removed. Appended straight after the torn bytes, the note was read as the rest of the
/// torn block's payload, or as running past the file's end, and discarded with it (the
/// break-it pass of 2026-12-02, F9). A tail too short to hold a block header needs no
/// padding: the reader resynchronizes on the appended block's marker.
///
/// # Errors
///
/// [`io::ErrorKind::WouldBlock`] while a recorder holds the file; open, encode and write
/// errors.
pub fn append_to_unclosed(path: &Path, records: &[Record]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)?;
    if !crate::writer::lock_exclusive(&file)? {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is being written by a recorder", path.shown()),
        ));
    }
    let mut frames = FrameEncoder::new();
    let mut payload = Vec::new();
    for record in records {
        frames
            .encode(record, &mut payload)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    }
    let mut block = Vec::new();
    BlockEncoder::new(None)?.encode_with(
        BlockKind::RECORDS,
        &payload,
        records.len() as u32,
        false,
        &mut block,
    )?;
    let padding = torn_tail_padding(path)?;
    if padding > 0 {
        io::copy(&mut io::repeat(0).take(padding), &mut file)?;
    }
    file.write_all(&block)?;
    file.sync_data()
}

/// Zero bytes that take the file at `path` to the end its last, torn block declares: 0 when
/// it ends at a block boundary, or with less than a block header.
fn torn_tail_padding(path: &Path) -> io::Result<u64> {
    let len = std::fs::metadata(path)?.len();
    let Ok(mapped) = MappedTrace::open(path) else {
        return Ok(0); // no file header: nothing the reader would take as a block
    };
    let Some(torn_at) = mapped.warnings().iter().rev().find_map(|w| match w.kind {
        WarningKind::TruncatedTail { .. } => Some(w.offset),
        _ => None,
    }) else {
        return Ok(0);
    };
    let mut raw = [0u8; BLOCK_HEADER_LEN];
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(torn_at))?;
    if file.read_exact(&mut raw).is_err() {
        return Ok(0);
    }
    Ok(BlockHeader::decode(&raw).map_or(0, |header| {
        (torn_at + header.block_len()).saturating_sub(len)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{FatalSignal, SignalWitness};
    use crate::{Recorder, RecorderOptions, read_all};

    /// What `record` appends for a program killed by SIGKILL.
    fn sigkill_note() -> Record {
        Record::FatalSignal(FatalSignal {
            time_ns: 5,
            signal: 9,
            witness: SignalWitness::Parent,
            fault_address: None,
        })
    }

    #[test]
    fn a_note_appended_to_a_torn_trace_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        recorder.close().unwrap();
        // Cut into the footer, as a process killed while writing a block leaves it.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 30]).unwrap();
        let note = sigkill_note();
        append_to_unclosed(&path, std::slice::from_ref(&note)).unwrap();
        let trace = read_all(&path).unwrap();
        assert_eq!(trace.records.last(), Some(&note), "{:?}", trace.warnings);
        assert!(!trace.recovery.closed);
    }

    /// A trace killed in the middle of a 1,000-byte block: the header declares 1,000 bytes,
    /// 400 were written. The note reads back, the torn block is counted as skipped (not
    /// removed), and the bytes before it are all read.
    #[test]
    fn a_note_appended_after_a_torn_1000_byte_block_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        recorder.close().unwrap();
        // Unclosed: cut at the footer's block, then a torn block after the last whole one.
        let footer = MappedTrace::open(&path)
            .unwrap()
            .blocks()
            .last()
            .unwrap()
            .offset;
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(footer as usize);
        std::fs::write(&path, &bytes).unwrap();
        let before = read_all(&path).unwrap();
        let good = bytes.len();
        let mut frames = FrameEncoder::new();
        let mut payload = Vec::new();
        let filler = Record::FatalSignal(FatalSignal {
            time_ns: 1,
            signal: 6,
            witness: SignalWitness::Handler,
            fault_address: None,
        });
        while payload.len() < 1000 - crate::format::BLOCK_HEADER_LEN {
            frames.encode(&filler, &mut payload).unwrap();
        }
        let mut block = Vec::new();
        BlockEncoder::new(None)
            .unwrap()
            .encode_with(BlockKind::RECORDS, &payload, 1, false, &mut block)
            .unwrap();
        assert!(block.len() >= 1000, "{}", block.len());
        let mut torn = bytes.clone();
        torn.extend_from_slice(&block[..400]);
        std::fs::write(&path, &torn).unwrap();
        let note = sigkill_note();
        append_to_unclosed(&path, std::slice::from_ref(&note)).unwrap();
        let after = std::fs::read(&path).unwrap();
        assert_eq!(
            &after[..good + 400],
            &torn[..],
            "nothing written is removed"
        );
        let trace = read_all(&path).unwrap();
        assert_eq!(trace.records.last(), Some(&note), "{:?}", trace.warnings);
        assert_eq!(trace.records.len(), before.records.len() + 1);
        assert_eq!(trace.recovery.skipped_blocks, 1, "{:?}", trace.warnings);
        assert!(!trace.recovery.closed);
    }
}
