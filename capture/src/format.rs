//! The trace file container and record codec (the only module that knows the byte layout).
//!
//! A trace file is a fixed header followed by self-framed blocks. Records are serde values
//! ([`crate::schema::Record`]) encoded with postcard 1.x, whose wire format is documented and
//! frozen. bincode is not used: its 3.0.0 release is an empty crate that fails to compile and
//! the project has stopped (RUSTSEC-2025-0141).
//!
//! # Layout
//!
//! All integers are little-endian. The file header is never compressed.
//!
//! | Offset | Size | File header field                                                    |
//! |-------:|-----:|----------------------------------------------------------------------|
//! | 0      | 8    | magic `b"HRXTRACE"`                                                  |
//! | 8      | 2    | format major (a reader refuses any other major)                      |
//! | 10     | 2    | format minor (a newer minor is read, with a warning)                 |
//! | 12     | 1    | codec id: 1 = postcard                                               |
//! | 13     | 1    | compression id the writer uses: 0 = none, 1 = zstd                   |
//! | 14     | 2    | reserved, 0                                                          |
//! | 16     | 4    | flags (none defined in 1.0; unknown bits are ignored)                |
//! | 20     | 4    | header length in bytes (32; a newer minor may extend the header)     |
//! | 24     | 4    | reserved, 0                                                          |
//! | 28     | 4    | low 32 bits of xxh3-64 of bytes 0..28                                |
//!
//! Bytes 0..12 keep this meaning in every future major version, so a reader can always name
//! the version it refuses. Then blocks follow, each a 32-byte header and its payload:
//!
//! | Offset | Size | Block header field                                                  |
//! |-------:|-----:|---------------------------------------------------------------------|
//! | 0      | 4    | marker `b"HRXB"` (lets a reader resynchronize after damage)         |
//! | 4      | 2    | kind: 1 = records, 2 = footer, 3 = summary (1.9); unknown: skipped  |
//! | 6      | 2    | flags: bit 0 = payload is one zstd frame                            |
//! | 8      | 4    | stored payload length in bytes                                      |
//! | 12     | 4    | uncompressed payload length in bytes                                |
//! | 16     | 4    | number of records in the payload                                    |
//! | 20     | 8    | xxh3-64 of the stored payload                                       |
//! | 28     | 4    | low 32 bits of xxh3-64 of header bytes 0..28                        |
//!
//! A records payload (after decompression) is a sequence of frames: a varint length (postcard
//! `u32` encoding, at most 5 bytes) then that many bytes of one postcard-encoded record.
//! Length-prefixing lets a reader skip one record it cannot decode (a variant added by a
//! newer minor) and keep the rest of the block. The two timing records are the exception to
//! plain postcard: they are stored as small deltas from the previous timing in the same
//! block ([`FrameEncoder`] has the table), which halves their size on disk; the deltas
//! restart at every block, so each block decodes on its own. A footer payload is one postcard-encoded
//! [`Footer`] (the block index, written on clean close), and the file then ends with a
//! 16-byte trailer: the footer block's offset (`u64`) and `b"HRXTEND!"`.
//!
//! Both lengths of a block are capped at [`MAX_BLOCK_BYTES`] by writer and reader. A zstd
//! payload is further bounded: it decompresses to at most [`MAX_ZSTD_PAYLOAD_BYTES`] (2 MiB)
//! and to at most [`MAX_ZSTD_RATIO`] (64) times the block's length on disk (header
//! included); [`BlockEncoder`] stores a payload as is when compressing it would break either
//! bound (a larger block, or an exceptionally compressible one), and a reader refuses a zstd
//! block that declares more. zstd output is decoded into a buffer that grows with the actual
//! output, stopping one byte past the declared length. So the decompressed bytes of a whole
//! file are at most 64 times its size, and no single block makes a reader allocate more than
//! about 2 MiB beyond the bytes it read: a hostile file cannot make a reader allocate much
//! more than its own size (a 4 KiB crafted block could decompress to 128 MiB before these
//! bounds).

use crate::schema::{
    Blob, BlobHash, BufferId, DeviceSpan, NodeIndex, OpTiming, Poison, Record, RegionIndex,
    RegionTiming, RuntimeId, SubmissionIndex, TraceRange,
};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};
use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64;

/// First eight bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"HRXTRACE";
/// Length in bytes of the file header written by this version.
pub const FILE_HEADER_LEN: usize = 32;
/// Largest file header length a reader accepts (newer minors may extend the header).
pub const MAX_FILE_HEADER_LEN: u32 = 4096;
/// Length in bytes of a block header.
pub const BLOCK_HEADER_LEN: usize = 32;
/// First four bytes of every block header.
pub const BLOCK_MARKER: [u8; 4] = *b"HRXB";
/// Last eight bytes of a cleanly closed trace.
pub const TRAILER_MAGIC: [u8; 8] = *b"HRXTEND!";
/// Length in bytes of the trailer after the footer block.
pub const TRAILER_LEN: usize = 16;
/// Largest stored or uncompressed block payload, in bytes.
pub const MAX_BLOCK_BYTES: u32 = 128 << 20;
/// Largest uncompressed length of a zstd-compressed block payload, in bytes. Larger payloads
/// are stored uncompressed, so their size on disk bounds what a reader allocates for them.
pub const MAX_ZSTD_PAYLOAD_BYTES: u32 = 2 << 20;
/// Largest ratio of a zstd block's uncompressed payload length to its length on disk
/// (header included). The traces of the built-in workloads stay under 40; a payload that
/// would compress better is stored uncompressed.
pub const MAX_ZSTD_RATIO: u64 = 64;
/// Largest encoded record, in bytes; the writer drops (and counts) larger ones.
pub const MAX_RECORD_BYTES: usize = 64 << 20;
/// Block flag: the payload is one zstd frame.
pub const BLOCK_FLAG_ZSTD: u16 = 1;
/// Longest varint length prefix of a record frame, in bytes.
pub const MAX_FRAME_PREFIX: usize = 5;
/// Largest zstd window (log2 bytes) a reader accepts: 2^21 = [`MAX_ZSTD_PAYLOAD_BYTES`]
/// (levels 1-3 never use a window larger than the payload, nor than 2^21).
const ZSTD_WINDOW_LOG_MAX: u32 = 21;
const _: () = assert!(1 << ZSTD_WINDOW_LOG_MAX == MAX_ZSTD_PAYLOAD_BYTES);

/// Whether a zstd payload of `uncompressed_len` bytes stored in `stored_len` bytes is within
/// [`MAX_ZSTD_PAYLOAD_BYTES`] and [`MAX_ZSTD_RATIO`].
pub fn zstd_payload_allowed(stored_len: u64, uncompressed_len: u64) -> bool {
    uncompressed_len <= u64::from(MAX_ZSTD_PAYLOAD_BYTES)
        && uncompressed_len <= MAX_ZSTD_RATIO * (stored_len + BLOCK_HEADER_LEN as u64)
}

/// The format's major version: readers refuse any major they were not written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FormatMajor(pub u16);

/// The format's minor version: additions a reader of an older minor can skip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FormatMinor(pub u16);

/// A format version, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FormatVersion {
    /// Major version.
    pub major: FormatMajor,
    /// Minor version.
    pub minor: FormatMinor,
}

impl FormatVersion {
    /// The version this crate writes and reads.
    pub const CURRENT: FormatVersion = FormatVersion {
        major: FormatMajor(1),
        // 1.2: `Record::SessionStopped`. 1.3: `Poison::submission` and `Poison::region`.
        // 1.4: `Record::RegionStarted`, `Record::FatalSignal`.
        // 1.5: `Record::TraceRange`, `Record::BufferSnapshot`.
        // 1.6: `Record::HostClock` (the session clock's calibrations).
        // 1.8: `Record::DigestSpan`.
        // 1.9: summary blocks (`BlockKind::SUMMARY`, after each records block).
        // 1.13: `TraceRange::fault`.
        // 1.14: `Record::ThreadName`, `HostSpan`, `AnnotationName`, `AnnotationRange`,
        // `AnnotationMarker`, `CounterSample` (host threads and application annotations).
        // 1.15: `HostSpanKind::CaptureFence` (a capture-fence wait on its thread's row; an
        // older reader skips such a span, keeping the `CaptureFence` record).
        // 1.16: `Record::OpTimes` (how a runtime times its operations).
        // 1.17: a device-timed `OpTiming` (CUDA's self-timed kernels, CUPTI) of a native graph
        // starts where what it waits on ended (launch included), not at its first block.
        minor: FormatMinor(17),
    };

    /// The version that brought the session clock's calibrations (`Record::HostClock`, 1.6):
    /// a trace of an older one holds none ([`crate::reader::Uncalibrated`]).
    pub const CALIBRATED: FormatVersion = FormatVersion {
        major: FormatMajor(1),
        minor: FormatMinor(6),
    };

    /// Whether a reader of version `reader` can read a file of this version.
    ///
    /// # Errors
    ///
    /// [`VersionError::NewerMajor`] or [`VersionError::OlderMajor`] when the majors differ;
    /// the message names both versions.
    pub fn check_readable_by(self, reader: FormatVersion) -> Result<Compatibility, VersionError> {
        use std::cmp::Ordering::*;
        match (self.major.cmp(&reader.major), self.minor.cmp(&reader.minor)) {
            (Greater, _) => Err(VersionError::NewerMajor { file: self, reader }),
            (Less, _) => Err(VersionError::OlderMajor { file: self, reader }),
            (Equal, Greater) => Ok(Compatibility::NewerMinor),
            (Equal, Less) => Ok(Compatibility::OlderMinor),
            (Equal, Equal) => Ok(Compatibility::Same),
        }
    }
}

impl fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major.0, self.minor.0)
    }
}

/// How a readable file's version relates to the reader's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compatibility {
    /// Same version.
    Same,
    /// Older minor of the same major: fully readable.
    OlderMinor,
    /// Newer minor: readable; unknown block kinds and record variants are skipped.
    NewerMinor,
}

/// A file's format version cannot be read by this reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum VersionError {
    /// The file was written by a newer, incompatible format.
    #[error(
        "trace format {file} is newer than this reader's format {reader}; upgrade hrx-trace to read it"
    )]
    NewerMajor {
        /// The file's version.
        file: FormatVersion,
        /// The reader's version.
        reader: FormatVersion,
    },
    /// The file was written by an older, unsupported format.
    #[error("trace format {file} is older than this reader's format {reader} and not supported")]
    OlderMajor {
        /// The file's version.
        file: FormatVersion,
        /// The reader's version.
        reader: FormatVersion,
    },
}

/// The record codec named in the file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Codec {
    /// postcard 1.x.
    Postcard = 1,
}

/// The compression named in the file header (blocks flag their own payloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Compression {
    /// Payloads are stored as is.
    None = 0,
    /// Payloads are zstd frames (levels 1-3).
    Zstd = 1,
}

/// Something in the file does not follow the format.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file does not start with [`MAGIC`].
    #[error(
        "not an hrx trace: it starts \"{}\", not \"HRXTRACE\"",
        .found[..usize::from(*.len).min(8)].escape_ascii()
    )]
    BadMagic {
        /// The first eight bytes, zero-padded past `len`.
        found: [u8; 8],
        /// How many of them the file has: fewer than 8 for a shorter file.
        len: u8,
    },
    /// The format version cannot be read.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// The file header checksum does not match.
    #[error("file header checksum mismatch")]
    HeaderChecksum,
    /// The file header declares an impossible length.
    #[error("file header length {len} is outside 32..={MAX_FILE_HEADER_LEN}")]
    HeaderLength {
        /// The declared length.
        len: u32,
    },
    /// The codec id is unknown.
    #[error("unknown record codec id {0}")]
    UnknownCodec(u8),
    /// The compression id is unknown.
    #[error("unknown compression id {0}")]
    UnknownCompression(u8),
    /// No block marker where a block header should start.
    #[error("no block header (marker missing)")]
    BadBlockMarker,
    /// The block header checksum does not match.
    #[error("block header checksum mismatch")]
    BlockHeaderChecksum,
    /// A block length exceeds [`MAX_BLOCK_BYTES`].
    #[error("block length {len} exceeds the maximum of {max} bytes")]
    BlockTooLarge {
        /// The declared length.
        len: u64,
        /// The maximum.
        max: u64,
    },
    /// The block flags have bits this reader does not know.
    #[error("unknown block flags {0:#06x}")]
    UnknownBlockFlags(u16),
    /// The stored payload's checksum does not match the block header.
    #[error("block payload checksum mismatch (header {stored:#018x}, payload {computed:#018x})")]
    PayloadChecksum {
        /// Checksum in the block header.
        stored: u64,
        /// Checksum of the payload read.
        computed: u64,
    },
    /// The payload did not decompress to the declared length.
    #[error("block payload is {found} bytes uncompressed, header declares {declared}")]
    UncompressedLength {
        /// Declared length.
        declared: u64,
        /// Length found (at most one byte past the declared length).
        found: u64,
    },
    /// A zstd block declares more than [`MAX_ZSTD_PAYLOAD_BYTES`] or [`MAX_ZSTD_RATIO`] allow.
    #[error(
        "zstd block declares {declared} bytes uncompressed from {stored} stored, over the \
         format's bound (at most {MAX_ZSTD_PAYLOAD_BYTES} bytes and {MAX_ZSTD_RATIO} times the \
         block's length)"
    )]
    CompressedTooLarge {
        /// Declared uncompressed length.
        declared: u64,
        /// Stored length.
        stored: u64,
    },
    /// zstd refused the payload.
    #[error("zstd: {0}")]
    Decompress(String),
    /// A record frame's length prefix is malformed or runs past the payload.
    #[error("record frame at payload byte {at} is malformed")]
    Frame {
        /// Offset of the frame within the uncompressed payload.
        at: usize,
    },
    /// A record could not be decoded.
    #[error("record does not decode: {0}")]
    Record(#[from] postcard::Error),
    /// A timing record is malformed, or follows one that is in the same block.
    #[error("timing record does not decode")]
    Timing,
    /// A blob's bytes are not those its hash names (damaged, or changed while they were
    /// written): the records that refer to it lack their contents.
    #[error("blob {:#018x} holds bytes whose xxh3 is {computed:#018x}: its contents are damaged", .hash.0)]
    BlobHash {
        /// The hash the blob is stored under.
        hash: BlobHash,
        /// The xxh3-64 of the bytes it holds.
        computed: u64,
    },
}

/// The file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version of the file.
    pub version: FormatVersion,
    /// Record codec.
    pub codec: Codec,
    /// Compression the writer used.
    pub compression: Compression,
    /// Flags (none defined in 1.0).
    pub flags: u32,
    /// Header length in bytes; blocks start at this offset.
    pub header_len: u32,
}

impl FileHeader {
    /// The header this crate writes.
    pub fn current(compression: Compression) -> FileHeader {
        FileHeader {
            version: FormatVersion::CURRENT,
            codec: Codec::Postcard,
            compression,
            flags: 0,
            header_len: FILE_HEADER_LEN as u32,
        }
    }

    /// The header's 32 bytes.
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.major.0.to_le_bytes());
        b[10..12].copy_from_slice(&self.version.minor.0.to_le_bytes());
        b[12] = self.codec as u8;
        b[13] = self.compression as u8;
        b[16..20].copy_from_slice(&self.flags.to_le_bytes());
        b[20..24].copy_from_slice(&self.header_len.to_le_bytes());
        let check = xxh3_64(&b[0..28]) as u32;
        b[28..32].copy_from_slice(&check.to_le_bytes());
        b
    }

    /// Parses the first 32 bytes of a file and checks the version against
    /// [`FormatVersion::CURRENT`].
    ///
    /// # Errors
    ///
    /// [`FormatError::BadMagic`], [`FormatError::Version`] (a different major; checked before
    /// the checksum so that a future layout still gets a clear message),
    /// [`FormatError::HeaderChecksum`], [`FormatError::HeaderLength`],
    /// [`FormatError::UnknownCodec`], [`FormatError::UnknownCompression`].
    pub fn decode(b: &[u8; FILE_HEADER_LEN]) -> Result<(FileHeader, Compatibility), FormatError> {
        let magic: [u8; 8] = b[0..8].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(FormatError::BadMagic {
                found: magic,
                len: 8,
            });
        }
        let version = FormatVersion {
            major: FormatMajor(u16_at(b, 8)),
            minor: FormatMinor(u16_at(b, 10)),
        };
        let compatibility = version.check_readable_by(FormatVersion::CURRENT)?;
        if u32_at(b, 28) != xxh3_64(&b[0..28]) as u32 {
            return Err(FormatError::HeaderChecksum);
        }
        let header_len = u32_at(b, 20);
        if !(FILE_HEADER_LEN as u32..=MAX_FILE_HEADER_LEN).contains(&header_len) {
            return Err(FormatError::HeaderLength { len: header_len });
        }
        let codec = match b[12] {
            1 => Codec::Postcard,
            other => return Err(FormatError::UnknownCodec(other)),
        };
        let compression = match b[13] {
            0 => Compression::None,
            1 => Compression::Zstd,
            other => return Err(FormatError::UnknownCompression(other)),
        };
        let header = FileHeader {
            version,
            codec,
            compression,
            flags: u32_at(b, 16),
            header_len,
        };
        Ok((header, compatibility))
    }
}

/// The kind of a block. Unknown kinds (from a newer minor) are skipped by readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BlockKind(pub u16);

impl BlockKind {
    /// Length-prefixed records.
    pub const RECORDS: BlockKind = BlockKind(1);
    /// The block index, written on clean close.
    pub const FOOTER: BlockKind = BlockKind(2);
    /// What the records block before it timed, per lane (format 1.9,
    /// [`crate::summary::BlockSummary`]); uncompressed, record count 0.
    pub const SUMMARY: BlockKind = BlockKind(3);

    /// Whether this reader knows the kind.
    pub fn is_known(self) -> bool {
        self == Self::RECORDS || self == Self::FOOTER || self == Self::SUMMARY
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::RECORDS => f.write_str("records"),
            Self::FOOTER => f.write_str("footer"),
            Self::SUMMARY => f.write_str("summary"),
            BlockKind(other) => write!(f, "kind {other}"),
        }
    }
}

/// A block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// What the payload holds.
    pub kind: BlockKind,
    /// Flags ([`BLOCK_FLAG_ZSTD`]).
    pub flags: u16,
    /// Stored payload length in bytes.
    pub stored_len: u32,
    /// Uncompressed payload length in bytes.
    pub uncompressed_len: u32,
    /// Records in the payload.
    pub record_count: u32,
    /// xxh3-64 of the stored payload.
    pub checksum: u64,
}

impl BlockHeader {
    /// The header's 32 bytes.
    pub fn encode(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[0..4].copy_from_slice(&BLOCK_MARKER);
        b[4..6].copy_from_slice(&self.kind.0.to_le_bytes());
        b[6..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.stored_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.uncompressed_len.to_le_bytes());
        b[16..20].copy_from_slice(&self.record_count.to_le_bytes());
        b[20..28].copy_from_slice(&self.checksum.to_le_bytes());
        let check = xxh3_64(&b[0..28]) as u32;
        b[28..32].copy_from_slice(&check.to_le_bytes());
        b
    }

    /// Parses and validates a block header.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadBlockMarker`], [`FormatError::BlockHeaderChecksum`],
    /// [`FormatError::BlockTooLarge`].
    pub fn decode(b: &[u8; BLOCK_HEADER_LEN]) -> Result<BlockHeader, FormatError> {
        if b[0..4] != BLOCK_MARKER {
            return Err(FormatError::BadBlockMarker);
        }
        if u32_at(b, 28) != xxh3_64(&b[0..28]) as u32 {
            return Err(FormatError::BlockHeaderChecksum);
        }
        let header = BlockHeader {
            kind: BlockKind(u16_at(b, 4)),
            flags: u16_at(b, 6),
            stored_len: u32_at(b, 8),
            uncompressed_len: u32_at(b, 12),
            record_count: u32_at(b, 16),
            checksum: u64::from_le_bytes(b[20..28].try_into().expect("8 bytes")),
        };
        for len in [header.stored_len, header.uncompressed_len] {
            if len > MAX_BLOCK_BYTES {
                return Err(FormatError::BlockTooLarge {
                    len: len.into(),
                    max: MAX_BLOCK_BYTES.into(),
                });
            }
        }
        Ok(header)
    }

    /// Total length of the block on disk (header and payload), in bytes.
    pub fn block_len(&self) -> u64 {
        BLOCK_HEADER_LEN as u64 + u64::from(self.stored_len)
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Verifies a block's stored payload and returns it uncompressed.
///
/// # Errors
///
/// [`FormatError::PayloadChecksum`], [`FormatError::UnknownBlockFlags`],
/// [`FormatError::Decompress`], [`FormatError::UncompressedLength`].
pub fn decode_payload<'a>(
    header: &BlockHeader,
    stored: &'a [u8],
) -> Result<Cow<'a, [u8]>, FormatError> {
    let computed = xxh3_64(stored);
    if computed != header.checksum {
        return Err(FormatError::PayloadChecksum {
            stored: header.checksum,
            computed,
        });
    }
    let declared = u64::from(header.uncompressed_len);
    match header.flags {
        0 => {
            if stored.len() as u64 != declared {
                return Err(FormatError::UncompressedLength {
                    declared,
                    found: stored.len() as u64,
                });
            }
            Ok(Cow::Borrowed(stored))
        }
        BLOCK_FLAG_ZSTD if !zstd_payload_allowed(stored.len() as u64, declared) => {
            Err(FormatError::CompressedTooLarge {
                declared,
                stored: stored.len() as u64,
            })
        }
        BLOCK_FLAG_ZSTD => decompress_bounded(stored, declared).map(Cow::Owned),
        other => Err(FormatError::UnknownBlockFlags(other)),
    }
}

/// Decompresses one zstd frame, producing at most `declared + 1` bytes.
fn decompress_bounded(stored: &[u8], declared: u64) -> Result<Vec<u8>, FormatError> {
    let zstd_error = |e: io::Error| FormatError::Decompress(e.to_string());
    let mut decoder = zstd::stream::read::Decoder::with_buffer(stored)
        .map_err(zstd_error)?
        .single_frame();
    decoder
        .window_log_max(ZSTD_WINDOW_LOG_MAX)
        .map_err(zstd_error)?;
    // Start small: the declared length is untrusted; the Vec grows with the real output.
    let initial = declared.min(stored.len() as u64 * 4 + 4096) as usize;
    let mut out = Vec::with_capacity(initial);
    decoder
        .take(declared + 1)
        .read_to_end(&mut out)
        .map_err(zstd_error)?;
    if out.len() as u64 != declared {
        return Err(FormatError::UncompressedLength {
            declared,
            found: out.len() as u64,
        });
    }
    Ok(out)
}

/// Encodes payloads into blocks (header and stored payload), compressing with zstd.
pub struct BlockEncoder {
    compressor: Option<zstd::bulk::Compressor<'static>>,
    scratch: Vec<u8>,
}

impl BlockEncoder {
    /// An encoder compressing at zstd `level` (clamped to 1..=3), or storing payloads as is
    /// when `level` is `None`.
    ///
    /// # Errors
    ///
    /// When zstd cannot create a compression context.
    pub fn new(level: Option<i32>) -> io::Result<BlockEncoder> {
        let compressor = match level {
            Some(level) => Some(zstd::bulk::Compressor::new(level.clamp(1, 3))?),
            None => None,
        };
        Ok(BlockEncoder {
            compressor,
            scratch: Vec::new(),
        })
    }

    /// The compression id to write in the file header.
    pub fn compression(&self) -> Compression {
        if self.compressor.is_some() {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// Appends one block (header and payload) to `out`. The payload is stored compressed
    /// only when that makes it smaller and stays within [`MAX_ZSTD_PAYLOAD_BYTES`] and
    /// [`MAX_ZSTD_RATIO`].
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] when the payload exceeds [`MAX_BLOCK_BYTES`]; zstd
    /// errors.
    pub fn encode(
        &mut self,
        kind: BlockKind,
        payload: &[u8],
        record_count: u32,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.encode_with(kind, payload, record_count, true, out)
    }

    /// As [`BlockEncoder::encode`]; with `compress` false the payload is stored as is
    /// (bulk data such as captured images: zstd's fast levels shrink a photograph by about
    /// 1.4x at roughly 150 MB/s, too slow for the recording thread).
    ///
    /// # Errors
    ///
    /// As [`BlockEncoder::encode`].
    pub fn encode_with(
        &mut self,
        kind: BlockKind,
        payload: &[u8],
        record_count: u32,
        compress: bool,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        if payload.len() > MAX_BLOCK_BYTES as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("block payload of {} bytes is too large", payload.len()),
            ));
        }
        let mut flags = 0;
        let mut stored = payload;
        let compress = compress && payload.len() <= MAX_ZSTD_PAYLOAD_BYTES as usize;
        if let Some(compressor) = self.compressor.as_mut().filter(|_| compress) {
            self.scratch.clear();
            self.scratch
                .reserve(zstd::zstd_safe::compress_bound(payload.len()));
            compressor.compress_to_buffer(payload, &mut self.scratch)?;
            if self.scratch.len() < payload.len()
                && zstd_payload_allowed(self.scratch.len() as u64, payload.len() as u64)
            {
                stored = &self.scratch;
                flags = BLOCK_FLAG_ZSTD;
            }
        }
        let header = BlockHeader {
            kind,
            flags,
            stored_len: stored.len() as u32,
            uncompressed_len: payload.len() as u32,
            record_count,
            checksum: xxh3_64(stored),
        };
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(stored);
        Ok(())
    }

    /// Appends the header of a block stored as is whose payload is `head` followed by
    /// `tail`, then `head`; the caller writes `tail` right after. The bytes are those of
    /// [`BlockEncoder::encode_with`] over `head` and `tail` joined, uncompressed, without
    /// the copy: for captured contents of megabytes (a blob), each copy is another pass
    /// through memory that a copy between host and device shares.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] when the payload exceeds [`MAX_BLOCK_BYTES`].
    pub fn encode_stored_head(
        kind: BlockKind,
        head: &[u8],
        tail: &[u8],
        record_count: u32,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let len = head.len() + tail.len();
        if len > MAX_BLOCK_BYTES as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("block payload of {len} bytes is too large"),
            ));
        }
        let mut checksum = xxhash_rust::xxh3::Xxh3::new();
        checksum.update(head);
        checksum.update(tail);
        let header = BlockHeader {
            kind,
            flags: 0,
            stored_len: len as u32,
            uncompressed_len: len as u32,
            record_count,
            checksum: checksum.digest(),
        };
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(head);
        Ok(())
    }
}

/// The frame of a [`Record::Blob`] of `len_bytes` bytes hashed `hash`, up to its bytes: the
/// frame's length prefix and the body's start (its tag, hash and byte count). The bytes
/// follow it in the frame, as [`FrameEncoder::encode`] writes it whole.
///
/// # Errors
///
/// [`postcard::Error::SerializeBufferFull`] when the frame would exceed [`MAX_RECORD_BYTES`].
pub fn blob_frame_head(hash: BlobHash, len_bytes: usize) -> Result<Vec<u8>, postcard::Error> {
    let empty = Record::Blob(Blob {
        hash,
        bytes: Vec::new(),
    });
    let mut body_head = postcard::to_stdvec(&empty)?;
    // An empty blob ends with its byte count, the one-byte varint 0.
    if body_head.pop() != Some(0) {
        return Err(postcard::Error::SerializeBufferFull);
    }
    write_varint_u32(&mut body_head, u32::try_from(len_bytes).unwrap_or(u32::MAX));
    let body_len = body_head.len() + len_bytes;
    if len_bytes > u32::MAX as usize || body_len > MAX_RECORD_BYTES {
        return Err(postcard::Error::SerializeBufferFull);
    }
    let mut frame = Vec::with_capacity(body_head.len() + 5);
    write_varint_u32(&mut frame, body_len as u32);
    frame.extend_from_slice(&body_head);
    Ok(frame)
}

/// Appends `value` as a postcard `u32` varint.
pub fn write_varint_u32(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a postcard `u32` varint; returns the value and the bytes it took, or `None` when
/// `data` ends first or the varint is longer than 5 bytes or overflows.
pub fn read_varint_u32(data: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (i, &byte) in data.iter().take(MAX_FRAME_PREFIX).enumerate() {
        let bits = u32::from(byte & 0x7f);
        if i == 4 && bits > 0x0f {
            return None;
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// postcard variant index of [`Record::RegionTiming`].
const REGION_TIMING_TAG: u8 = 12;
/// postcard variant index of [`Record::OpTiming`].
const OP_TIMING_TAG: u8 = 13;
/// Longest timing frame: prefix, tag, 3 u32 and 5 u64 varints, the option tag.
pub(crate) const MAX_TIMING_FRAME: usize = 1 + 1 + 3 * 5 + 5 * 10 + 1;

/// The block-local state of the timing encoding; every block starts from zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TimingState {
    submission: u64,
    start_ns: u64,
    /// Device start minus host start (wrapping) of the last timing with a device span.
    skew_ns: u64,
}

fn zigzag(value: u64) -> u64 {
    let value = value as i64;
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> u64 {
    ((value >> 1) as i64 ^ -((value & 1) as i64)) as u64
}

/// Encodes records into the frames of one block.
///
/// Every record but the timings is its plain postcard encoding. A timing frame body is the
/// variant tag (12 [`Record::RegionTiming`], 13 [`Record::OpTiming`]) then postcard varints,
/// wrapping deltas zigzag-encoded:
///
/// | Field     | Stored as                                                               |
/// |-----------|-------------------------------------------------------------------------|
/// | runtime   | varint                                                                  |
/// | submission| zigzag delta from the previous timing's submission in the block         |
/// | region    | varint                                                                  |
/// | start     | zigzag delta from the previous timing's start in the block              |
/// | end       | varint duration, end - start                                            |
/// | device    | 0 for none; else 1, zigzag delta of the skew (device start - host       |
/// |           | start) from the previous device skew in the block, then zigzag of       |
/// |           | device duration - host duration                                         |
/// | node      | varint (tag 13 only)                                                    |
///
/// "Previous" values start at zero in every block, so blocks stay independent. Regions of a
/// pipeline repeat, so the deltas are small and alike: about 10 bytes per timing with a
/// device span after zstd, against about 16 for the plain fields.
#[derive(Debug, Default)]
pub struct FrameEncoder {
    timing: TimingState,
}

impl FrameEncoder {
    /// An encoder at the start of a block.
    pub fn new() -> FrameEncoder {
        FrameEncoder::default()
    }

    /// Starts a new block.
    pub fn reset(&mut self) {
        self.timing = TimingState::default();
    }

    /// Appends `record` as one frame (varint length, then the body) to `out`.
    ///
    /// # Errors
    ///
    /// postcard serialization errors (none for the schema's types).
    pub fn encode(&mut self, record: &Record, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
        match record {
            Record::RegionTiming(t) => self.encode_timing(t, None, out),
            Record::OpTiming(t) => self.encode_timing(&t.timing, Some(t.node.0), out),
            _ => {
                let body = postcard::to_stdvec(record)?;
                write_varint_u32(out, body.len() as u32);
                out.extend_from_slice(&body);
            }
        }
        Ok(())
    }

    /// Appends a timing frame (an [`Record::OpTiming`] when `node` is given).
    #[inline]
    pub(crate) fn encode_timing(&mut self, t: &RegionTiming, node: Option<u32>, out: &mut Vec<u8>) {
        let mut frame = [0u8; MAX_TIMING_FRAME];
        // The body is shorter than 128 bytes, so the length prefix is the single byte frame[0].
        let mut pos = 1;
        frame[pos] = if node.is_some() {
            OP_TIMING_TAG
        } else {
            REGION_TIMING_TAG
        };
        pos += 1;
        let previous = self.timing;
        put_varint(&mut frame, &mut pos, u64::from(t.runtime.0));
        put_varint(
            &mut frame,
            &mut pos,
            zigzag(t.submission.0.wrapping_sub(previous.submission)),
        );
        put_varint(&mut frame, &mut pos, u64::from(t.region.0));
        put_varint(
            &mut frame,
            &mut pos,
            zigzag(t.start_ns.wrapping_sub(previous.start_ns)),
        );
        let duration = t.end_ns.wrapping_sub(t.start_ns);
        put_varint(&mut frame, &mut pos, duration);
        self.timing.submission = t.submission.0;
        self.timing.start_ns = t.start_ns;
        match t.device {
            None => {
                frame[pos] = 0;
                pos += 1;
            }
            Some(d) => {
                frame[pos] = 1;
                pos += 1;
                let skew = d.start_ns.wrapping_sub(t.start_ns);
                put_varint(
                    &mut frame,
                    &mut pos,
                    zigzag(skew.wrapping_sub(previous.skew_ns)),
                );
                let device_duration = d.end_ns.wrapping_sub(d.start_ns);
                put_varint(
                    &mut frame,
                    &mut pos,
                    zigzag(device_duration.wrapping_sub(duration)),
                );
                self.timing.skew_ns = skew;
            }
        }
        if let Some(node) = node {
            put_varint(&mut frame, &mut pos, u64::from(node));
        }
        debug_assert!(pos - 1 < 0x80);
        frame[0] = (pos - 1) as u8;
        // A fixed-size copy (inlined) then a truncate: a copy of `pos` bytes is a call to
        // memmove per record, a fifth of the writer's time at 20M records/s.
        let len = out.len();
        out.extend_from_slice(&frame);
        out.truncate(len + pos);
    }
}

#[inline(always)]
pub(crate) fn put_varint(out: &mut [u8], pos: &mut usize, mut value: u64) {
    while value >= 0x80 {
        out[*pos] = value as u8 | 0x80;
        *pos += 1;
        value >>= 7;
    }
    out[*pos] = value as u8;
    *pos += 1;
}

/// Encodes a record that is not a timing as one frame in `scratch` (no block state needed)
/// and returns it, a subslice of `scratch`. Allocation free.
///
/// # Errors
///
/// `postcard::Error::SerializeBufferFull` when the frame does not fit in `scratch`, or when
/// `record` is a timing (which needs the block's [`FrameEncoder`]).
pub(crate) fn encode_untimed_frame_in<'a>(
    record: &Record,
    scratch: &'a mut [u8],
) -> Result<&'a [u8], postcard::Error> {
    if matches!(record, Record::RegionTiming(_) | Record::OpTiming(_))
        || scratch.len() <= MAX_FRAME_PREFIX
    {
        return Err(postcard::Error::SerializeBufferFull);
    }
    let (prefix, body) = scratch.split_at_mut(MAX_FRAME_PREFIX);
    let len = postcard::to_slice(record, body)?.len();
    // Write the varint right-aligned against the body so the frame is contiguous.
    let mut bytes = [0u8; MAX_FRAME_PREFIX];
    let mut n = 0;
    put_varint(&mut bytes, &mut n, len as u64);
    prefix[MAX_FRAME_PREFIX - n..].copy_from_slice(&bytes[..n]);
    Ok(&scratch[MAX_FRAME_PREFIX - n..MAX_FRAME_PREFIX + len])
}

/// Decodes the frames of one block, undoing [`FrameEncoder`]'s timing deltas.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    timing: TimingState,
    /// A timing failed to decode: later timings of the block cannot be trusted.
    broken: bool,
}

impl FrameDecoder {
    /// A decoder at the start of a block.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Decodes the next frame body of the block. Trailing bytes are ignored.
    ///
    /// # Errors
    ///
    /// [`FormatError::Record`] for a record that does not decode (e.g. a variant this reader
    /// does not know); [`FormatError::Timing`] for a malformed timing, and for every timing
    /// after one in the same block; [`FormatError::BlobHash`] for a blob whose bytes are not
    /// those its hash names.
    pub fn decode(&mut self, body: &[u8]) -> Result<Record, FormatError> {
        match body.first() {
            Some(&tag @ (REGION_TIMING_TAG | OP_TIMING_TAG)) => {
                if self.broken {
                    return Err(FormatError::Timing);
                }
                let record = self.decode_timing(tag == OP_TIMING_TAG, &body[1..]);
                self.broken = record.is_none();
                record.ok_or(FormatError::Timing)
            }
            _ => match postcard::take_from_bytes(body) {
                // A blob is named by the xxh3 of its bytes: bytes that are not those are
                // damage the block's checksum cannot see (the checksum is taken over what
                // was written).
                Ok((Record::Blob(blob), _)) => {
                    let computed = xxhash_rust::xxh3::xxh3_64(&blob.bytes);
                    if computed == blob.hash.0 {
                        Ok(Record::Blob(blob))
                    } else {
                        Err(FormatError::BlobHash {
                            hash: blob.hash,
                            computed,
                        })
                    }
                }
                Ok((record, _)) => Ok(record),
                Err(error) => legacy_poison(body)
                    .or_else(|| legacy_trace_range(body))
                    .ok_or(FormatError::from(error)),
            },
        }
    }

    fn decode_timing(&mut self, op: bool, body: &[u8]) -> Option<Record> {
        let mut c = Cursor(body);
        let previous = self.timing;
        let runtime = RuntimeId(u32::try_from(c.varint()?).ok()?);
        let submission = previous.submission.wrapping_add(unzigzag(c.varint()?));
        let region = RegionIndex(u32::try_from(c.varint()?).ok()?);
        let start_ns = previous.start_ns.wrapping_add(unzigzag(c.varint()?));
        let duration = c.varint()?;
        self.timing.submission = submission;
        self.timing.start_ns = start_ns;
        let device = match c.byte()? {
            0 => None,
            1 => {
                let skew = previous.skew_ns.wrapping_add(unzigzag(c.varint()?));
                let device_duration = duration.wrapping_add(unzigzag(c.varint()?));
                self.timing.skew_ns = skew;
                let start_ns = start_ns.wrapping_add(skew);
                Some(DeviceSpan {
                    start_ns,
                    end_ns: start_ns.wrapping_add(device_duration),
                })
            }
            _ => return None,
        };
        let timing = RegionTiming {
            runtime,
            submission: SubmissionIndex(submission),
            region,
            start_ns,
            end_ns: start_ns.wrapping_add(duration),
            device,
        };
        Some(if op {
            let node = NodeIndex(u32::try_from(c.varint()?).ok()?);
            Record::OpTiming(OpTiming { timing, node })
        } else {
            Record::RegionTiming(timing)
        })
    }
}

/// A `Poison` record as format 1.0-1.2 wrote it (without `submission` and `region`).
#[derive(Serialize, Deserialize)]
struct PoisonBefore13 {
    runtime: RuntimeId,
    buffer: BufferId,
    cause: String,
    time_ns: u64,
}

/// Decodes `body` as a 1.2 `Poison` frame, the only record whose fields grew: the new
/// fields are at its end, so a 1.2 frame ends early for this reader's `Poison`.
fn legacy_poison(body: &[u8]) -> Option<Record> {
    let index = Record::KIND_NAMES.iter().position(|n| *n == "Poison")?;
    let (&tag, rest) = body.split_first()?;
    if usize::from(tag) != index {
        return None;
    }
    let old: PoisonBefore13 = postcard::take_from_bytes(rest).ok()?.0;
    Some(Record::Poison(Poison {
        runtime: old.runtime,
        buffer: old.buffer,
        cause: old.cause,
        time_ns: old.time_ns,
        submission: None,
        region: None,
    }))
}

/// A `TraceRange` record as format 1.5-1.12 wrote it (without `fault`).
#[derive(Serialize, Deserialize)]
struct TraceRangeBefore113 {
    runtime: RuntimeId,
    start: SubmissionIndex,
    end: Option<SubmissionIndex>,
    trigger: String,
    trimmed_from: Option<String>,
    time_ns: u64,
}

/// Decodes `body` as a 1.5-1.12 `TraceRange` frame: `fault` (1.13) is at its end, so such a
/// frame ends early for this reader's `TraceRange`.
fn legacy_trace_range(body: &[u8]) -> Option<Record> {
    let index = Record::KIND_NAMES.iter().position(|n| *n == "TraceRange")?;
    let (&tag, rest) = body.split_first()?;
    if usize::from(tag) != index {
        return None;
    }
    let old: TraceRangeBefore113 = postcard::take_from_bytes(rest).ok()?.0;
    Some(Record::TraceRange(TraceRange {
        runtime: old.runtime,
        start: old.start,
        end: old.end,
        trigger: old.trigger,
        trimmed_from: old.trimmed_from,
        time_ns: old.time_ns,
        fault: None,
    }))
}

/// Reads postcard varints from untrusted bytes.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    /// A `u64` varint: at most 10 bytes, no bits past 64.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = self.byte()?;
            if i == 9 && byte > 1 {
                return None;
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
}

/// Iterates over the frame bodies of a records payload.
///
/// Yields `(offset within payload, body)`; stops after the first malformed frame, which it
/// yields as [`FormatError::Frame`].
pub struct Frames<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Frames<'a> {
    /// Frames of `payload`.
    pub fn new(payload: &'a [u8]) -> Frames<'a> {
        Frames {
            data: payload,
            pos: 0,
        }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<(usize, &'a [u8]), FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        let rest = &self.data[at..];
        let frame = read_varint_u32(rest).and_then(|(len, n)| {
            let end = n.checked_add(len as usize)?;
            rest.get(n..end).map(|body| (body, end))
        });
        match frame {
            Some((body, taken)) => {
                self.pos += taken;
                Some(Ok((at, body)))
            }
            None => {
                self.pos = self.data.len();
                Some(Err(FormatError::Frame { at }))
            }
        }
    }
}

/// One entry of the footer's block index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// File offset of the block header.
    pub offset: u64,
    /// Block kind.
    pub kind: BlockKind,
    /// Records in the block.
    pub record_count: u32,
}

/// The footer: an index of every block before it, written on clean close.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footer {
    /// Every block before the footer, in file order.
    pub blocks: Vec<IndexEntry>,
    /// Total records in those blocks.
    pub records: u64,
    /// Records the writer dropped.
    pub dropped_records: u64,
}

/// The trailer that ends a cleanly closed file.
pub fn encode_trailer(footer_offset: u64) -> [u8; TRAILER_LEN] {
    let mut b = [0u8; TRAILER_LEN];
    b[0..8].copy_from_slice(&footer_offset.to_le_bytes());
    b[8..16].copy_from_slice(&TRAILER_MAGIC);
    b
}

/// The footer offset named by a trailer, or `None` if `b` is not a trailer.
pub fn decode_trailer(b: &[u8]) -> Option<u64> {
    let b: &[u8; TRAILER_LEN] = b.try_into().ok()?;
    (b[8..16] == TRAILER_MAGIC).then(|| u64::from_le_bytes(b[0..8].try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::testgen::{KINDS, Rng, record};
    use proptest::prelude::*;

    proptest! {
        /// A blob written in parts (its frame head and block header built apart from its
        /// bytes, which are written where they lie) is byte for byte the blob encoded whole.
        #[test]
        fn a_blob_written_in_parts_is_the_blob_encoded_whole(
            hash in any::<u64>(),
            // Around the one- to three-byte varint lengths, and a bulk size.
            len in prop_oneof![0usize..300, 16_000usize..17_000, Just(3 << 20)],
            seed in any::<u8>(),
        ) {
            let bytes: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
            let record = Record::Blob(Blob { hash: BlobHash(hash), bytes: bytes.clone() });
            let mut whole_frame = Vec::new();
            FrameEncoder::new().encode(&record, &mut whole_frame).unwrap();
            let head = blob_frame_head(BlobHash(hash), len).unwrap();
            prop_assert_eq!(&whole_frame[..head.len()], &head[..]);
            prop_assert_eq!(&whole_frame[head.len()..], &bytes[..]);

            let mut whole_block = Vec::new();
            BlockEncoder::new(Some(1))
                .unwrap()
                .encode_with(BlockKind::RECORDS, &whole_frame, 1, false, &mut whole_block)
                .unwrap();
            let mut parts = Vec::new();
            BlockEncoder::encode_stored_head(BlockKind::RECORDS, &head, &bytes, 1, &mut parts)
                .unwrap();
            parts.extend_from_slice(&bytes);
            prop_assert_eq!(parts, whole_block);
        }
    }

    #[test]
    fn a_blob_past_the_largest_record_has_no_frame() {
        assert!(blob_frame_head(BlobHash(7), MAX_RECORD_BYTES).is_err());
        assert!(blob_frame_head(BlobHash(7), MAX_RECORD_BYTES - 16).is_ok());
    }

    #[test]
    fn file_header_round_trips() {
        for compression in [Compression::None, Compression::Zstd] {
            let header = FileHeader::current(compression);
            let (decoded, compat) = FileHeader::decode(&header.encode()).unwrap();
            assert_eq!(decoded, header);
            assert_eq!(compat, Compatibility::Same);
        }
    }

    #[test]
    fn newer_major_is_refused_naming_both_versions() {
        let mut header = FileHeader::current(Compression::Zstd);
        header.version = FormatVersion {
            major: FormatMajor(2),
            minor: FormatMinor(7),
        };
        let mut bytes = header.encode();
        bytes[28] ^= 0xff; // a future layout: the checksum need not be where it is now
        let err = FileHeader::decode(&bytes).unwrap_err().to_string();
        assert!(err.contains("2.7") && err.contains("1.17"), "{err}");
    }

    #[test]
    fn version_compatibility() {
        let v = |major, minor| FormatVersion {
            major: FormatMajor(major),
            minor: FormatMinor(minor),
        };
        assert_eq!(
            v(1, 4).check_readable_by(v(1, 2)),
            Ok(Compatibility::NewerMinor)
        );
        assert_eq!(
            v(1, 1).check_readable_by(v(1, 2)),
            Ok(Compatibility::OlderMinor)
        );
        assert!(v(0, 9).check_readable_by(v(1, 0)).is_err());
        assert!(v(2, 0).check_readable_by(v(1, 0)).is_err());
    }

    #[test]
    fn header_errors() {
        let good = FileHeader::current(Compression::Zstd).encode();
        let mut bad = good;
        bad[0] = b'X';
        assert!(matches!(
            FileHeader::decode(&bad),
            Err(FormatError::BadMagic { .. })
        ));
        let mut bad = good;
        bad[16] ^= 1;
        assert!(matches!(
            FileHeader::decode(&bad),
            Err(FormatError::HeaderChecksum)
        ));
    }

    /// Bytes of 4 random bits each: they compress about 2x, within [`MAX_ZSTD_RATIO`].
    fn compressible(len: usize) -> Vec<u8> {
        let mut rng = Rng(9);
        (0..len).map(|_| (rng.next() % 16) as u8).collect()
    }

    #[test]
    fn block_round_trips_compressed_and_not() {
        let payload = compressible(20_000);
        for level in [None, Some(1), Some(3)] {
            let mut encoder = BlockEncoder::new(level).unwrap();
            let mut out = Vec::new();
            encoder
                .encode(BlockKind::RECORDS, &payload, 9, &mut out)
                .unwrap();
            let header = BlockHeader::decode(out[..32].try_into().unwrap()).unwrap();
            assert_eq!(header.record_count, 9);
            assert_eq!(header.flags == BLOCK_FLAG_ZSTD, level.is_some());
            assert_eq!(header.block_len(), out.len() as u64);
            let decoded = decode_payload(&header, &out[32..]).unwrap();
            assert_eq!(&*decoded, &payload[..]);
        }
    }

    #[test]
    fn incompressible_payload_is_stored() {
        let mut rng = Rng(5);
        let payload: Vec<u8> = (0..300).map(|_| rng.next() as u8).collect();
        let mut out = Vec::new();
        BlockEncoder::new(Some(3))
            .unwrap()
            .encode(BlockKind::RECORDS, &payload, 1, &mut out)
            .unwrap();
        let header = BlockHeader::decode(out[..32].try_into().unwrap()).unwrap();
        assert_eq!(header.flags, 0);
    }

    #[test]
    fn zstd_blocks_are_bounded_in_size_and_ratio() {
        // Larger than the cap, or more compressible than the ratio: stored as is.
        let mut encoder = BlockEncoder::new(Some(1)).unwrap();
        for len in [MAX_ZSTD_PAYLOAD_BYTES as usize + 1, 64 << 10] {
            let payload = vec![0u8; len];
            let mut out = Vec::new();
            encoder
                .encode(BlockKind::RECORDS, &payload, 1, &mut out)
                .unwrap();
            let header = BlockHeader::decode(out[..32].try_into().unwrap()).unwrap();
            assert_eq!(header.flags, 0, "{len}");
            assert_eq!(&*decode_payload(&header, &out[32..]).unwrap(), &payload[..]);
        }
        // A crafted 4 KiB block of zeros that decompresses to 2 MiB is refused before any
        // decompression (it could decompress to 128 MiB before the bound).
        let payload = vec![0u8; 2 << 20];
        let stored = zstd::bulk::compress(&payload, 1).unwrap();
        assert!(stored.len() < 4096, "{}", stored.len());
        let header = BlockHeader {
            kind: BlockKind::RECORDS,
            flags: BLOCK_FLAG_ZSTD,
            stored_len: stored.len() as u32,
            uncompressed_len: payload.len() as u32,
            record_count: 1,
            checksum: xxh3_64(&stored),
        };
        let err = decode_payload(&header, &stored).unwrap_err();
        assert!(
            matches!(err, FormatError::CompressedTooLarge { declared, .. } if declared == 2 << 20),
            "{err}"
        );
        // Within the ratio, past the cap: refused too.
        assert!(!zstd_payload_allowed(
            1 << 20,
            u64::from(MAX_ZSTD_PAYLOAD_BYTES) + 1
        ));
        assert!(zstd_payload_allowed(4096, 64 * (4096 + 32)));
        assert!(!zstd_payload_allowed(4096, 64 * (4096 + 32) + 1));
    }

    #[test]
    fn lying_uncompressed_length_is_caught() {
        let payload = compressible(10_000);
        let mut out = Vec::new();
        BlockEncoder::new(Some(1))
            .unwrap()
            .encode(BlockKind::RECORDS, &payload, 1, &mut out)
            .unwrap();
        let mut header = BlockHeader::decode(out[..32].try_into().unwrap()).unwrap();
        header.uncompressed_len = 100;
        let err = decode_payload(&header, &out[32..]).unwrap_err();
        assert!(
            matches!(
                err,
                FormatError::UncompressedLength {
                    declared: 100,
                    found: 101
                }
            ),
            "{err}"
        );
    }

    fn encode_block(records: &[Record]) -> Vec<u8> {
        let mut encoder = FrameEncoder::new();
        let mut payload = Vec::new();
        let mut scratch = vec![0u8; 4096];
        for (i, rec) in records.iter().enumerate() {
            match encode_untimed_frame_in(rec, &mut scratch) {
                Ok(frame) if i % 2 == 0 => payload.extend_from_slice(frame),
                _ => encoder.encode(rec, &mut payload).unwrap(),
            }
        }
        payload
    }

    fn decode_block(payload: &[u8]) -> Vec<Record> {
        let mut decoder = FrameDecoder::new();
        Frames::new(payload)
            .map(|f| decoder.decode(f.unwrap().1).unwrap())
            .collect()
    }

    #[test]
    fn poison_of_format_1_2_reads_without_its_cause_fields_and_1_2_readers_read_1_3() {
        let tag = Record::KIND_NAMES
            .iter()
            .position(|n| *n == "Poison")
            .unwrap() as u8;
        let old = PoisonBefore13 {
            runtime: RuntimeId(3),
            buffer: BufferId(7),
            cause: "poisoned by submission 4 region 1".into(),
            time_ns: 99,
        };
        // A 1.2 writer's frame body: the variant tag, then the four fields.
        let mut body = vec![tag];
        body.extend(postcard::to_allocvec(&old).unwrap());
        let expected = Poison {
            runtime: RuntimeId(3),
            buffer: BufferId(7),
            cause: old.cause.clone(),
            time_ns: 99,
            submission: None,
            region: None,
        };
        assert_eq!(
            FrameDecoder::new().decode(&body).unwrap(),
            Record::Poison(expected.clone())
        );
        // A 1.3 frame: a 1.2 reader decodes the same four fields and ignores the rest.
        let new = Record::Poison(Poison {
            submission: Some(SubmissionIndex(4)),
            region: Some(RegionIndex(1)),
            ..expected
        });
        let mut scratch = [0u8; 256];
        let frame = encode_untimed_frame_in(&new, &mut scratch).unwrap();
        let (_, body) = Frames::new(frame).next().unwrap().unwrap();
        assert_eq!(body[0], tag);
        let (read, _) = postcard::take_from_bytes::<PoisonBefore13>(&body[1..]).unwrap();
        assert_eq!(
            (read.runtime, read.buffer, read.time_ns),
            (RuntimeId(3), BufferId(7), 99)
        );
        assert_eq!(FrameDecoder::new().decode(body).unwrap(), new);
    }

    #[test]
    fn a_trace_range_without_its_fault_decodes_as_before_1_13() {
        let tag = Record::KIND_NAMES
            .iter()
            .position(|n| *n == "TraceRange")
            .unwrap() as u8;
        let old = TraceRangeBefore113 {
            runtime: RuntimeId(2),
            start: SubmissionIndex(4),
            end: Some(SubmissionIndex(9)),
            trigger: "submissions:4..9".into(),
            trimmed_from: Some("whole.hrxt".into()),
            time_ns: 77,
        };
        let mut body = vec![tag];
        body.extend(postcard::to_allocvec(&old).unwrap());
        let Record::TraceRange(read) = FrameDecoder::new().decode(&body).unwrap() else {
            panic!("not a TraceRange");
        };
        assert_eq!(
            (read.start, read.end, read.time_ns, read.fault),
            (SubmissionIndex(4), Some(SubmissionIndex(9)), 77, None)
        );
        assert_eq!(read.trimmed_from.as_deref(), Some("whole.hrxt"));
    }

    #[test]
    fn frames_round_trip() {
        let mut rng = Rng(11);
        let mut records: Vec<_> = (0..KINDS * 3).map(|k| record(&mut rng, k)).collect();
        records.extend((0..40).map(|_| Record::RegionTiming(rng.timing())));
        let payload = encode_block(&records);
        assert_eq!(Frames::new(&payload).count(), records.len());
        assert_eq!(decode_block(&payload), records);
    }

    #[test]
    fn timing_frames_are_small() {
        let timing = |i: u64| RegionTiming {
            runtime: RuntimeId(0),
            submission: SubmissionIndex(1_000 + i / 4),
            region: RegionIndex((i % 4) as u32),
            start_ns: 5_000_000_000 + i * 30_000,
            end_ns: 5_000_000_000 + i * 30_000 + 20_000,
            device: Some(DeviceSpan {
                start_ns: 1_700_000_000_000_000_000 + i * 30_000,
                end_ns: 1_700_000_000_000_000_000 + i * 30_000 + 19_500,
            }),
        };
        let mut encoder = FrameEncoder::new();
        let mut first = Vec::new();
        encoder.encode_timing(&timing(0), None, &mut first);
        let mut next = Vec::new();
        encoder.encode_timing(&timing(1), None, &mut next);
        // prefix, tag, runtime, submission delta, region, start delta (3), duration (3),
        // some, skew delta, device duration delta (2).
        assert_eq!(next.len(), 15, "{next:?}");
        assert!(first.len() > next.len());
        encoder.reset();
        let mut again = Vec::new();
        encoder.encode_timing(&timing(0), None, &mut again);
        assert_eq!(again, first);
    }

    #[test]
    fn a_bad_timing_breaks_the_rest_of_the_block_only() {
        let mut rng = Rng(2);
        let records: Vec<_> = (0..4).map(|_| Record::RegionTiming(rng.timing())).collect();
        let payload = encode_block(&records);
        let mut bodies: Vec<_> = Frames::new(&payload)
            .map(|f| f.unwrap().1.to_vec())
            .collect();
        bodies[1].truncate(3);
        let mut decoder = FrameDecoder::new();
        let results: Vec<_> = bodies.iter().map(|b| decoder.decode(b)).collect();
        assert_eq!(results[0].as_ref().unwrap(), &records[0]);
        assert!(
            results[1..]
                .iter()
                .all(|r| matches!(r, Err(FormatError::Timing)))
        );
        let mut fresh = FrameDecoder::new();
        assert_eq!(fresh.decode(&bodies[0]).unwrap(), records[0]);
    }

    #[test]
    fn frame_in_too_small_scratch_fails() {
        let rec = record(&mut Rng(1), 0);
        assert!(encode_untimed_frame_in(&rec, &mut [0u8; 8]).is_err());
        assert!(encode_untimed_frame_in(&rec, &mut [0u8; 3]).is_err());
        let timing = Record::RegionTiming(Rng(1).timing());
        assert!(encode_untimed_frame_in(&timing, &mut [0u8; 256]).is_err());
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [0u64, 1, u64::MAX, i64::MAX as u64, i64::MIN as u64, 12345] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(u64::MAX), 1); // -1
    }

    #[test]
    fn varints() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut out = Vec::new();
            write_varint_u32(&mut out, v);
            assert_eq!(read_varint_u32(&out), Some((v, out.len())));
            assert_eq!(out, postcard::to_stdvec(&v).unwrap());
        }
        assert_eq!(read_varint_u32(&[0x80, 0x80]), None);
        assert_eq!(read_varint_u32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None);
        assert_eq!(read_varint_u32(&[0x80; 6]), None);
    }

    #[test]
    fn trailer() {
        assert_eq!(decode_trailer(&encode_trailer(1234)), Some(1234));
        assert_eq!(decode_trailer(&[0u8; 16]), None);
        assert_eq!(decode_trailer(&[0u8; 3]), None);
    }

    proptest! {
        #[test]
        fn arbitrary_blocks_round_trip(seed in any::<u64>(), n in 0usize..80) {
            let mut rng = Rng(seed);
            let records: Vec<_> = (0..n)
                .map(|_| match rng.next() % 3 {
                    0 => Record::RegionTiming(rng.timing()),
                    1 => Record::OpTiming(crate::schema::OpTiming {
                        timing: rng.timing(),
                        node: NodeIndex(rng.u32()),
                    }),
                    _ => { let k = rng.next(); record(&mut rng, k) }
                })
                .collect();
            prop_assert_eq!(decode_block(&encode_block(&records)), records);
        }

        #[test]
        fn frames_of_garbage_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut decoder = FrameDecoder::new();
            for (_, body) in Frames::new(&bytes).flatten() {
                let _ = decoder.decode(body);
            }
            let _ = FrameDecoder::new().decode(&bytes);
            let mut timing = bytes.clone();
            timing.insert(0, REGION_TIMING_TAG);
            let _ = FrameDecoder::new().decode(&timing);
            timing[0] = OP_TIMING_TAG;
            let _ = FrameDecoder::new().decode(&timing);
        }

        #[test]
        fn block_headers_of_garbage_never_panic(bytes in proptest::array::uniform32(any::<u8>())) {
            if let Ok(header) = BlockHeader::decode(&bytes) {
                let _ = decode_payload(&header, &[]);
            }
            let _ = FileHeader::decode(&bytes);
        }
    }
}
