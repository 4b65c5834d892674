//! Appending records to a trace whose recorder is gone without closing it: `hrx-trace record`
//! notes there that the recorded process died of a signal ([`crate::schema::FatalSignal`]),
//! where the process's own handler could not (SIGKILL), or did not run.
//!
//! The records go in one uncompressed records block at the end of the file. A recorder
//! killed in the middle of a block leaves a torn block there; the reader then skips the torn
//! bytes (counted as discarded) and resynchronizes on the appended block's marker, so the
//! note reads back either way. The file lock proves no recorder still writes the file.

use crate::Record;
use crate::format::{BlockEncoder, BlockKind, FrameEncoder};
use std::io::{self, Write};
use std::path::Path;

/// Appends `records` as one block to the trace at `path`, which no recorder may hold.
///
/// # Errors
///
/// [`io::ErrorKind::WouldBlock`] while a recorder holds the file; open, encode and write
/// errors.
pub fn append_to_unclosed(path: &Path, records: &[Record]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    file.try_lock().map_err(|_| {
        io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is being written by a recorder", path.display()),
        )
    })?;
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
    file.write_all(&block)?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{FatalSignal, SignalWitness};
    use crate::{Recorder, RecorderOptions, read_all};

    #[test]
    fn a_note_appended_to_a_torn_trace_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        recorder.close().unwrap();
        // Cut into the footer, as a process killed while writing a block leaves it.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 30]).unwrap();
        let note = Record::FatalSignal(FatalSignal {
            time_ns: 5,
            signal: 9,
            witness: SignalWitness::Parent,
            fault_address: None,
        });
        append_to_unclosed(&path, std::slice::from_ref(&note)).unwrap();
        let trace = read_all(&path).unwrap();
        assert_eq!(trace.records.last(), Some(&note), "{:?}", trace.warnings);
        assert!(!trace.recovery.closed);
    }
}
