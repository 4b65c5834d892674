//! Writing a trace from records that already exist (`hrx-trace trim`): one thread, no
//! per-thread rings, no clock. The layout is the recorder's ([`crate::format`]): the file
//! header, record blocks of about 1 MiB (zstd, except bulk contents over 64 KiB, stored as
//! they are, as the recorder does), then a footer index and the trailer, so the result reads
//! back as a cleanly closed trace.

use crate::format::{
    BlockEncoder, BlockKind, Compression, FileHeader, Footer, FrameEncoder, IndexEntry,
    MAX_RECORD_BYTES, encode_trailer,
};
use crate::schema::Record;
use std::io::{self, Write};

/// Blobs larger than this go out uncompressed in a block of their own.
const BULK_BYTES: usize = 64 << 10;
/// Target uncompressed size of a records block.
const BLOCK_BYTES: usize = 1 << 20;

/// Writes records into a new trace (see the module docs).
pub struct TraceWriter<W: Write> {
    out: W,
    encoder: BlockEncoder,
    frames: FrameEncoder,
    pending: Vec<u8>,
    pending_records: u32,
    block: Vec<u8>,
    offset: u64,
    index: Vec<IndexEntry>,
    records: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the file header (this crate's format version, zstd level 1) to `out`.
    ///
    /// # Errors
    ///
    /// Write errors; zstd failing to start.
    pub fn new(mut out: W) -> io::Result<Self> {
        let encoder = BlockEncoder::new(Some(1))?;
        debug_assert_eq!(encoder.compression(), Compression::Zstd);
        let header = FileHeader::current(encoder.compression()).encode();
        out.write_all(&header)?;
        Ok(TraceWriter {
            out,
            encoder,
            frames: FrameEncoder::new(),
            pending: Vec::new(),
            pending_records: 0,
            block: Vec::new(),
            offset: header.len() as u64,
            index: Vec::new(),
            records: 0,
        })
    }

    /// Records written so far (those still pending included).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far (pending records excluded).
    pub fn bytes(&self) -> u64 {
        self.offset
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// Write errors; [`io::ErrorKind::InvalidInput`] for a record larger than
    /// [`MAX_RECORD_BYTES`] encoded.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        let bulk = matches!(record, Record::Blob(blob) if blob.bytes.len() > BULK_BYTES);
        if bulk || self.pending.len() >= BLOCK_BYTES {
            self.write_pending(true)?;
        }
        let before = self.pending.len();
        self.frames
            .encode(record, &mut self.pending)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if self.pending.len() - before > MAX_RECORD_BYTES {
            self.pending.truncate(before);
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {} record is larger than a trace allows",
                    record.kind_name()
                ),
            ));
        }
        self.pending_records += 1;
        self.records += 1;
        if bulk {
            self.write_pending(false)?;
        }
        Ok(())
    }

    fn write_pending(&mut self, compress: bool) -> io::Result<()> {
        if self.pending_records == 0 {
            return Ok(());
        }
        self.block.clear();
        self.encoder.encode_with(
            BlockKind::RECORDS,
            &self.pending,
            self.pending_records,
            compress,
            &mut self.block,
        )?;
        self.out.write_all(&self.block)?;
        self.index.push(IndexEntry {
            offset: self.offset,
            kind: BlockKind::RECORDS,
            record_count: self.pending_records,
        });
        self.offset += self.block.len() as u64;
        self.pending.clear();
        self.pending_records = 0;
        self.frames.reset();
        Ok(())
    }

    /// Writes what is pending, the footer and the trailer, and returns the output and the
    /// file's length in bytes. The caller writes the [`crate::schema::SessionEnd`] first.
    ///
    /// # Errors
    ///
    /// Write errors.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.write_pending(true)?;
        let footer = Footer {
            blocks: self.index.clone(),
            records: self.records,
            dropped_records: 0,
        };
        let payload = postcard::to_stdvec(&footer).map_err(io::Error::other)?;
        let footer_offset = self.offset;
        self.block.clear();
        self.encoder
            .encode_with(BlockKind::FOOTER, &payload, 0, true, &mut self.block)?;
        self.out.write_all(&self.block)?;
        self.out.write_all(&encode_trailer(footer_offset))?;
        self.out.flush()?;
        let len = footer_offset + self.block.len() as u64 + encode_trailer(0).len() as u64;
        Ok((self.out, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Trace;
    use crate::schema::testgen::{KINDS, Rng, record};
    use crate::schema::{Blob, BlobHash, SessionEnd};

    #[test]
    fn a_rewritten_trace_reads_back_whole_and_equal() {
        let mut rng = Rng(11);
        let mut records: Vec<Record> = (0..KINDS * 20).map(|k| record(&mut rng, k)).collect();
        let bulk = vec![7u8; 200 << 10];
        records.push(Record::Blob(Blob {
            hash: BlobHash(xxhash_rust::xxh3::xxh3_64(&bulk)),
            bytes: bulk,
        }));
        let mut writer = TraceWriter::new(Vec::new()).unwrap();
        for r in &records {
            writer.write(r).unwrap();
        }
        let end = Record::SessionEnd(SessionEnd {
            time_ns: 1,
            records: writer.records(),
            dropped_records: 0,
        });
        writer.write(&end).unwrap();
        records.push(end);
        let (bytes, len) = writer.finish().unwrap();
        assert_eq!(len, bytes.len() as u64);
        let trace = Trace::from_bytes(&bytes).unwrap();
        assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
        assert_eq!(trace.records, records);
    }
}
