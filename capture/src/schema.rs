//! The trace schema: every event the runtime records, as serde types.
//!
//! A trace is a sequence of [`Record`]s. Each record is self-contained: it names the objects
//! it is about by id, never by file position, so a reader can skip a damaged block and still
//! make sense of the rest, and records from several threads may be interleaved freely.
//!
//! # Design choices
//!
//! - **Ids are newtypes** over the integer the runtime uses ([`RuntimeId`] is `u32`, every
//!   other id `u64`, region and operation indices `u32`), so a buffer id cannot be passed where
//!   a graph id is expected. They encode exactly like the bare integer (a postcard varint).
//! - **Several runtimes share one trace.** Every record that belongs to a runtime carries its
//!   [`RuntimeId`]; all other ids are scoped to that runtime. [`crate::Recorder::next_runtime_id`]
//!   hands out runtime ids.
//! - **Clocks are explicit.** Every field ending in `_ns` is a host time in nanoseconds on the
//!   session's monotonic clock, relative to [`SessionStart::monotonic_base_ns`] (so the first
//!   record is near zero). Device times appear only inside [`DeviceSpan`], on the device clock
//!   of the record's runtime; [`ClockCalibration`] maps them onto the host clock.
//! - **Byte ranges** are half-open `start..end` offsets in bytes into a buffer.
//! - **Large payloads live out of line.** Buffer contents and kernel code are stored once per
//!   xxh3-64 content hash in a [`Blob`] record and referenced by [`BlobHash`]; small contents
//!   are inlined ([`Payload`]). The writer guarantees a blob precedes, in file order, every
//!   record recorded after it was interned.
//! - **Timing records are hot and tiny.** [`RegionTiming`] and [`OpTiming`] are the only
//!   records the codec does not store as their plain postcard form: it stores them as deltas
//!   from the previous timing in the same block (see [`crate::format`]), about 10 bytes per
//!   timing with a device span on disk for a realistic stream (a writer test checks <= 16).
//! - **Evolution.** postcard is not self-describing, so within one format major version the
//!   schema only grows by appending new [`Record`] variants (and new block kinds). Records are
//!   length-prefixed in the file, so an older reader skips a variant it does not know with a
//!   warning instead of failing. Changing an existing struct is a major version bump.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident($int:ty)) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $int);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<$int> for $name {
            fn from(value: $int) -> Self {
                Self(value)
            }
        }
    };
}

id_newtype!(
    /// A runtime within the traced process; scopes every other id.
    RuntimeId(u32)
);
id_newtype!(
    /// A buffer allocated by a runtime.
    BufferId(u64)
);
id_newtype!(
    /// A loaded GPU or NPU kernel.
    KernelId(u64)
);
id_newtype!(
    /// A graph while it is being built (before `prepare`).
    GraphId(u64)
);
id_newtype!(
    /// A prepared (executable) graph.
    PreparedId(u64)
);
id_newtype!(
    /// A submission of a prepared graph; increases with submission order within a runtime.
    SubmissionIndex(u64)
);
id_newtype!(
    /// A region of a prepared graph (index into [`Prepared::regions`]).
    RegionIndex(u32)
);
id_newtype!(
    /// An operation (node) of a graph, in build order (index of its [`GraphOp`]).
    NodeIndex(u32)
);
id_newtype!(
    /// The name of an application annotation, interned once per session by an
    /// [`AnnotationName`] record (format 1.14).
    AnnotationId(u32)
);
/// The xxh3-64 hash of a [`Blob`]'s bytes, which names it. In JSON it is a hex string
/// ([`hex64`]); in the trace a plain `u64`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct BlobHash(#[serde(with = "hex64")] pub u64);

impl fmt::Display for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<u64> for BlobHash {
    fn from(value: u64) -> Self {
        Self(value)
    }
}

/// Serde forms of the values that use all 64 bits (digests, blob hashes, device addresses).
///
/// A human-readable serializer (JSON: `dump --json`, the reports' JSON) gets a string, `"0x"`
/// and 16 lowercase hex digits: jq and JavaScript hold numbers as 64-bit floats and would
/// round them past 2^53. The binary trace (postcard) keeps the plain `u64`, so the file format
/// is unchanged. Reading accepts both forms. Counters and indexes (submission, buffer, kernel
/// ids) stay JSON numbers: they count from 0 and stay far below 2^53, and jq compares them.
pub mod hex64 {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    /// The JSON text of `value`: `0x` and 16 hex digits.
    pub fn text(value: u64) -> String {
        format!("{value:#018x}")
    }

    /// Serializes `value` (a string when human-readable, else a `u64`).
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&text(*value))
        } else {
            serializer.serialize_u64(*value)
        }
    }

    /// Deserializes a `u64` or its hex string (`0x` optional).
    ///
    /// # Errors
    ///
    /// Neither a number nor a hex string of at most 16 digits.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(Hex64)
        } else {
            deserializer.deserialize_u64(Hex64)
        }
    }

    struct Hex64;

    impl Visitor<'_> for Hex64 {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a 64-bit value or its hex string")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            let digits = v.strip_prefix("0x").unwrap_or(v);
            u64::from_str_radix(digits, 16)
                .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }

    /// The same for an `Option<u64>` (`null` when `None`).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        #[derive(Serialize, Deserialize)]
        #[serde(transparent)]
        struct Hex(#[serde(with = "super")] u64);

        /// Serializes `value` as [`super::serialize`] does, or none.
        ///
        /// # Errors
        ///
        /// The serializer's.
        pub fn serialize<S: Serializer>(
            value: &Option<u64>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            value.map(Hex).serialize(serializer)
        }

        /// Deserializes what [`serialize`] writes.
        ///
        /// # Errors
        ///
        /// As [`super::deserialize`].
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<u64>, D::Error> {
            Ok(Option::<Hex>::deserialize(deserializer)?.map(|h| h.0))
        }
    }
}

/// Serializes `Vec<u8>` as postcard bytes (a length then the raw bytes).
///
/// The wire form is identical to serde's default sequence of `u8`, but encoding and decoding
/// are one copy instead of one call per byte. A human-readable serializer (JSON) gets
/// `{"len": N, "base64": "..."}` (standard alphabet, padded): about 1.4 bytes of text a
/// byte, where a JSON array of numbers took 3.6. Reading accepts that object and the array.
mod bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::de::{self, MapAccess, SeqAccess, Visitor};
    use serde::ser::SerializeStruct;
    use serde::{Deserializer, Serializer};
    use std::fmt;

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            let mut text = serializer.serialize_struct("Bytes", 2)?;
            text.serialize_field("len", &bytes.len())?;
            text.serialize_field("base64", &STANDARD.encode(bytes))?;
            text.end()
        } else {
            serializer.serialize_bytes(bytes)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(BytesVisitor)
        } else {
            deserializer.deserialize_byte_buf(BytesVisitor)
        }
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("bytes")
        }

        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            // Cap the preallocation: the length hint comes from an untrusted file.
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(byte) = seq.next_element()? {
                out.push(byte);
            }
            Ok(out)
        }

        /// The JSON form, `{"len": N, "base64": "..."}`; `len` must agree.
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u8>, A::Error> {
            let (mut len, mut bytes) = (None::<usize>, None::<Vec<u8>>);
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "len" => len = Some(map.next_value()?),
                    "base64" => {
                        let text: String = map.next_value()?;
                        bytes = Some(STANDARD.decode(text.as_bytes()).map_err(|e| {
                            de::Error::custom(format_args!("bad base64 bytes: {e}"))
                        })?);
                    }
                    _ => return Err(de::Error::unknown_field(&key, &["len", "base64"])),
                }
            }
            let bytes = bytes.ok_or_else(|| de::Error::missing_field("base64"))?;
            match len {
                Some(len) if len != bytes.len() => Err(de::Error::custom(format_args!(
                    "bytes say len {len} but hold {}",
                    bytes.len()
                ))),
                _ => Ok(bytes),
            }
        }
    }
}

/// How an operation uses a byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Access {
    /// Only read.
    Read,
    /// Only written; previous contents are not read.
    Write,
    /// Read and written.
    ReadWrite,
}

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Placement {
    /// Device memory with no host pointer.
    GpuLocal,
    /// Pinned host memory mapped for the GPU.
    HostVisible,
    /// Host memory also imported as an NPU buffer object.
    NpuShared {
        /// The NPU memory-bank group of the buffer object.
        group: u32,
    },
}

/// The kind of engine that executes work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Engine {
    /// A GPU.
    Gpu,
    /// An NPU.
    Npu,
    /// The host CPU.
    Host,
}

/// A GPU scheduling lane of a graph operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lane {
    /// Host-to-device transfers.
    Upload,
    /// Kernels, fills and device-to-device copies.
    Compute,
    /// Device-to-host transfers.
    Download,
}

/// One of the runtime's five execution queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Queue {
    /// GPU upload lane.
    GpuUpload,
    /// GPU compute lane.
    GpuCompute,
    /// GPU download lane.
    GpuDownload,
    /// The NPU.
    Npu,
    /// Host worker threads.
    Host,
}

/// How a region of a prepared graph is executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RegionKind {
    /// One native GPU graph (CUDA/HIP graph, or the sim device's equivalent).
    NativeGraph,
    /// A batch of copies on the lane's cached copy stream.
    CopyBatch,
    /// A scoped native callback supplied by the application.
    Scoped,
    /// One NPU run.
    NpuRun,
    /// Host work.
    Host,
}

/// The kind of a memory hazard between two operations or regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HazardKind {
    /// The consumer reads what the producer wrote.
    ReadAfterWrite,
    /// The consumer overwrites what the producer read.
    WriteAfterRead,
    /// Both write.
    WriteAfterWrite,
}

impl HazardKind {
    /// The usual three-letter abbreviation (`RAW`, `WAR`, `WAW`).
    pub fn abbreviation(self) -> &'static str {
        match self {
            HazardKind::ReadAfterWrite => "RAW",
            HazardKind::WriteAfterRead => "WAR",
            HazardKind::WriteAfterWrite => "WAW",
        }
    }
}

/// How a region, submission or operation ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Completed successfully.
    Ok,
    /// Ran and failed.
    Failed {
        /// The error, as the runtime displays it.
        error: String,
    },
    /// Never ran, because something it depended on failed or was cancelled.
    Cancelled {
        /// Why, e.g. "producer submission 11 failed".
        reason: String,
    },
}

/// Bytes captured from a buffer: inline, out of line in a [`Blob`], or not captured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Payload {
    /// The bytes themselves (small payloads).
    Inline(#[serde(with = "bytes")] Vec<u8>),
    /// The bytes are in the [`Blob`] record named `hash`.
    Blob {
        /// The blob's content hash.
        hash: BlobHash,
        /// The blob's length in bytes.
        len_bytes: u64,
    },
    /// The bytes were not captured (capture of contents was off, or they were too large).
    Omitted {
        /// The length in bytes of what was not captured.
        len_bytes: u64,
    },
}

/// The first record of every trace: who recorded it, where and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStart {
    /// The recording library and version, e.g. `hrx-capture 0.1.0`.
    pub producer: String,
    /// The file format version the writer used, as `(major, minor)`.
    pub format_version: (u16, u16),
    /// Wall-clock time at the session's monotonic base.
    pub wall_clock_utc: DateTime<Utc>,
    /// The host monotonic clock (`CLOCK_MONOTONIC` on Unix) at the session base, in ns;
    /// all other host `_ns` fields are relative to it. 0 where unavailable.
    pub monotonic_base_ns: u64,
    /// Host name.
    pub host: String,
    /// Process id of the traced process.
    pub pid: u32,
    /// Command line of the traced process.
    pub args: Vec<String>,
    /// Backend of the runtime that opened the trace (each runtime restates its own in
    /// [`RuntimeStart`]); may be empty.
    pub backend: String,
    /// Device description of the runtime that opened the trace; may be empty.
    pub device: String,
}

/// A runtime was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeStart {
    /// The runtime.
    pub runtime: RuntimeId,
    /// Backend name (`sim`, `cuda`, `hip`, ...).
    pub backend: String,
    /// Device description (name, memory, driver).
    pub device: String,
    /// Run slots reserved per prepared graph.
    pub graph_slots: u32,
    /// Maximum in-flight submissions.
    pub capacity: u32,
    /// The configured fault injection, if any (sim backend), as text.
    pub fault: Option<String>,
    /// Host time of creation.
    pub time_ns: u64,
}

/// A runtime was dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeEnd {
    /// The runtime.
    pub runtime: RuntimeId,
    /// Host time.
    pub time_ns: u64,
}

/// A buffer was allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferCreated {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The buffer.
    pub buffer: BufferId,
    /// Length in bytes.
    pub len_bytes: u64,
    /// Where its memory lives.
    pub placement: Placement,
    /// The device address of the allocation (for alignment checks on replay), 0 if none.
    #[serde(with = "hex64")]
    pub device_address: u64,
    /// Host time.
    pub time_ns: u64,
}

/// A buffer's memory was released (format 1.0): recorded when the runtime lets it go, that
/// is when the last of the program's handles, views and graphs of it is gone and every
/// submission using it retired (the runtime's storage is dropped), not when a handle drops;
/// on whichever thread let it go last, so it may come in the file before records of the
/// program's thread that precede it in time. Nothing names the buffer after it (ids are never
/// reused): replay lets go of its own buffer at this time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferDropped {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The buffer.
    pub buffer: BufferId,
    /// Host time.
    pub time_ns: u64,
}

/// Content-addressed bytes (kernel code, buffer contents), stored once per hash per trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob {
    /// xxh3-64 of `bytes`.
    pub hash: BlobHash,
    /// The contents.
    #[serde(with = "bytes")]
    pub bytes: Vec<u8>,
}

/// One binding of a kernel's contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingContract {
    /// How the kernel uses the binding.
    pub access: Access,
    /// Required extent in bytes.
    pub extent_bytes: u64,
    /// Required base alignment in bytes.
    pub alignment: u64,
}

/// A kernel was loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLoaded {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The kernel.
    pub kernel: KernelId,
    /// Entry point name (or built-in kernel name).
    pub entry: String,
    /// The module code (PTX, code object, xclbin) as a [`Blob`]; `None` for built-ins.
    pub code: Option<BlobHash>,
    /// One entry per argument binding.
    pub contract: Vec<BindingContract>,
    /// Constant argument bytes.
    #[serde(with = "bytes")]
    pub constants: Vec<u8>,
    /// Grid dimensions in blocks.
    pub grid: [u32; 3],
    /// Block dimensions in threads.
    pub block: [u32; 3],
    /// The engine it runs on.
    pub engine: Engine,
    /// NPU memory-bank group of each argument (empty for GPU kernels).
    pub npu_groups: Vec<u32>,
}

/// What a graph operation does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpKind {
    /// Fill the written range with a byte.
    Fill {
        /// The byte value.
        value: u8,
    },
    /// Copy the read range into the written range.
    Copy,
    /// Dispatch a GPU kernel.
    Kernel {
        /// The kernel.
        kernel: KernelId,
    },
    /// A scoped native callback (cannot be re-executed by replay).
    Scoped,
    /// Run an NPU kernel.
    Npu {
        /// The kernel.
        kernel: KernelId,
    },
    /// Host work run by a worker thread.
    Host,
}

/// One declared use of a buffer byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Use {
    /// The buffer.
    pub buffer: BufferId,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// How it is used.
    pub access: Access,
}

/// An operation was added to a graph under construction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphOp {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The graph being built.
    pub graph: GraphId,
    /// The operation's index in the graph (build order).
    pub node: NodeIndex,
    /// What it does.
    pub op: OpKind,
    /// Its GPU lane.
    pub lane: Lane,
    /// Its declared uses, bindings in order.
    pub uses: Vec<Use>,
}

/// An ordering edge from a producer to a consumer, with the hazard that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// The producer: a [`NodeIndex`] value for internal edges, a [`RegionIndex`] value for
    /// region dependencies.
    pub producer: u32,
    /// The consumer, in the same index space as `producer`.
    pub consumer: u32,
    /// Why the consumer waits.
    pub kind: HazardKind,
    /// The buffer of the conflicting ranges.
    pub buffer: BufferId,
    /// First byte of the conflicting range.
    pub start: u64,
    /// One past the last byte of the conflicting range.
    pub end: u64,
}

/// One region of a prepared graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// The queue it runs on.
    pub queue: Queue,
    /// The engine it runs on.
    pub engine: Engine,
    /// How it is executed.
    pub kind: RegionKind,
    /// The graph operations it contains, in order.
    pub nodes: Vec<NodeIndex>,
    /// Edges between its own operations (native graph dependencies).
    pub internal_edges: Vec<Edge>,
    /// Edges from earlier regions of the same graph.
    pub dependencies: Vec<Edge>,
    /// Its uses, summarized into the fewest disjoint ranges.
    pub uses: Vec<Use>,
    /// Bytes copied by its copy operations.
    pub copy_bytes: u64,
}

/// A graph was prepared (lowered into regions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prepared {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The graph that was prepared.
    pub graph: GraphId,
    /// The new prepared graph.
    pub prepared: PreparedId,
    /// Run slots reserved.
    pub slots: u32,
    /// Whether some region may run concurrently with its predecessor.
    pub parallel: bool,
    /// The regions, in order.
    pub regions: Vec<Region>,
    /// Host time when prepare finished.
    pub time_ns: u64,
}

/// A prepared graph was submitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submit {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The prepared graph.
    pub prepared: PreparedId,
    /// The new submission.
    pub submission: SubmissionIndex,
    /// The run slot it occupies.
    pub slot: u32,
    /// Explicit producers (`submit_after`).
    pub producers: Vec<SubmissionIndex>,
    /// Host time.
    pub time_ns: u64,
}

/// Why a submit was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefusalKind {
    /// Capacity or slots exhausted.
    Busy,
    /// The prepared graph is quarantined or the device was lost.
    DeviceLost,
    /// Any other error.
    Other,
}

/// A submit was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitRefused {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The prepared graph.
    pub prepared: PreparedId,
    /// The kind of refusal.
    pub kind: RefusalKind,
    /// The error, as the runtime displays it.
    pub reason: String,
    /// Host time.
    pub time_ns: u64,
}

/// A region waited on a region of an earlier submission (cross-submission ordering).
///
/// For example: submission 12 region 3 waited on submission 11 region 1, write-after-read
/// on buffer 7 bytes 0..4096. A small earlier graph (up to 8 regions) is waited on region
/// by region, each unfinished region that conflicts; a larger one at its frontier's end,
/// as a graph's own regions depend on each other: the last region to write the bytes and
/// those that read them since, which come after every earlier region of it that touched
/// them (its `Prepared` dependencies say how).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossWait {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The waiting submission.
    pub submission: SubmissionIndex,
    /// The waiting region.
    pub region: RegionIndex,
    /// The earlier submission.
    pub on_submission: SubmissionIndex,
    /// The region of the earlier submission waited on.
    pub on_region: RegionIndex,
    /// The hazard.
    pub kind: HazardKind,
    /// The buffer of the conflicting ranges.
    pub buffer: BufferId,
    /// First byte of the conflict.
    pub start: u64,
    /// One past the last byte of the conflict.
    pub end: u64,
}

/// A span on the device clock of the record's runtime (map with [`ClockCalibration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceSpan {
    /// Device clock at the start, in ns.
    pub start_ns: u64,
    /// Device clock at the end, in ns.
    pub end_ns: u64,
}

/// When a region of a submission ran (the hot record: one per region execution).
///
/// In a trace file the codec stores it in a compact block-local delta form (see
/// [`crate::format`]); its serde form, used by other formats such as JSON, is these fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionTiming {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission.
    pub submission: SubmissionIndex,
    /// The region.
    pub region: RegionIndex,
    /// Host time when it started.
    pub start_ns: u64,
    /// Host time when it ended.
    pub end_ns: u64,
    /// Device timestamps around it, where the backend has them.
    pub device: Option<DeviceSpan>,
}

/// When one operation inside a region ran (where the backend can time operations).
///
/// Inside a native graph an operation's time runs from when what it waits on completed (its
/// dependencies' latest end) to its end, counting its launch as Nsight Compute's
/// `gpu__time_duration` does; a root's from its own start. The times of a chain add up to the
/// chain's span, at most the region's time. The software device and HIP's event nodes always
/// measured so; CUDA's device-timed operations since format 1.17 (before, each from its own
/// start).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpTiming {
    /// The timing of the operation; `region` is the region containing it.
    pub timing: RegionTiming,
    /// The operation.
    pub node: NodeIndex,
}

/// A measured relation between a runtime's device clock and the host clock.
///
/// `host_ns = device_ns + device_offset_ns` (wrapping), within `uncertainty_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockCalibration {
    /// The runtime whose device clock this maps.
    pub runtime: RuntimeId,
    /// Host time of the sample.
    pub host_ns: u64,
    /// Device clock at the sample, in ns.
    pub device_ns: u64,
    /// Offset to add to a device time to get a host time, in ns.
    pub device_offset_ns: i64,
    /// Half-width of the sampling interval, in ns.
    pub uncertainty_ns: u64,
}

impl ClockCalibration {
    /// Maps a device-clock time onto the session's host clock, in ns.
    pub fn to_host_ns(&self, device_ns: u64) -> u64 {
        device_ns.wrapping_add(self.device_offset_ns as u64)
    }
}

/// A region of a submission finished, failed or was cancelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionDone {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission.
    pub submission: SubmissionIndex,
    /// The region.
    pub region: RegionIndex,
    /// How it ended.
    pub status: Status,
    /// Host time: for a region that ran and succeeded, its [`RegionTiming::end_ns`] (hrx
    /// records it with the timing, no clock reading of its own); else when the failure or
    /// cancellation was decided.
    pub time_ns: u64,
}

/// A submission finished (all its regions are done).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmissionDone {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission.
    pub submission: SubmissionIndex,
    /// How it ended (the first failure, if any).
    pub status: Status,
    /// Host time.
    pub time_ns: u64,
}

/// A prepared graph was quarantined after a native failure of uncertain extent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The prepared graph.
    pub prepared: PreparedId,
    /// The submission whose failure caused it, if any.
    pub submission: Option<SubmissionIndex>,
    /// The region whose failure caused it, if any.
    pub region: Option<RegionIndex>,
    /// The failure.
    pub cause: String,
    /// Host time.
    pub time_ns: u64,
}

/// A buffer was poisoned (later use fails with device lost).
///
/// `submission` and `region` (format 1.3) name the failure that poisoned it, so a reader
/// need not parse `cause`. They are the record's last fields: a 1.2 reader decodes the rest
/// and ignores them, and this reader decodes a 1.2 record with both `None`
/// ([`crate::format::FrameDecoder`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poison {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The poisoned buffer.
    pub buffer: BufferId,
    /// The failure.
    pub cause: String,
    /// Host time.
    pub time_ns: u64,
    /// The submission whose failure poisoned it (`None` in a 1.2 trace).
    pub submission: Option<SubmissionIndex>,
    /// The failed region of that submission (`None` in a 1.2 trace).
    pub region: Option<RegionIndex>,
}

/// A lane's cached copy stream was marked unhealthy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyStreamUnhealthy {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The lane.
    pub lane: Lane,
    /// The failure.
    pub cause: String,
    /// Host time.
    pub time_ns: u64,
}

/// An injected fault fired (sim backend fault injection).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultInjected {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission it hit, if known.
    pub submission: Option<SubmissionIndex>,
    /// The region it hit, if known.
    pub region: Option<RegionIndex>,
    /// What was injected, e.g. "device lost at operation 3".
    pub description: String,
    /// Host time.
    pub time_ns: u64,
}

/// The host wrote into a buffer (so replay can reproduce inputs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostWrite {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The buffer.
    pub buffer: BufferId,
    /// Byte offset of the write.
    pub offset: u64,
    /// Length of the write in bytes.
    pub len_bytes: u64,
    /// xxh3-64 of the written bytes.
    #[serde(with = "hex64")]
    pub xxh3: u64,
    /// The written bytes.
    pub contents: Payload,
    /// Host time.
    pub time_ns: u64,
}

/// Digest (and optionally contents) of a written range at a submission's completion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputDigest {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission that wrote it.
    pub submission: SubmissionIndex,
    /// The buffer.
    pub buffer: BufferId,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// xxh3-64 of bytes `start..end`.
    #[serde(with = "hex64")]
    pub xxh3: u64,
    /// The bytes, when full contents were captured; [`Payload::Omitted`] otherwise.
    pub contents: Payload,
}

/// A snapshot of a runtime's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// The runtime.
    pub runtime: RuntimeId,
    /// Host time of the snapshot.
    pub time_ns: u64,
    /// Submissions accepted.
    pub submissions: u64,
    /// Native GPU graphs prepared.
    pub native_graphs_prepared: u64,
    /// Copy streams created.
    pub copy_streams_created: u64,
    /// Bytes copied, all lanes.
    pub copied_bytes: u64,
    /// Bytes copied per lane: upload, compute, download.
    pub lane_copy_bytes: [u64; 3],
}

/// The last record of a cleanly closed trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnd {
    /// Host time of close.
    pub time_ns: u64,
    /// Records written before this one.
    pub records: u64,
    /// Records the recorder had to drop (full buffers, oversized records, write errors).
    pub dropped_records: u64,
}

/// A recording thread waited for the recorder (lossless mode): its buffer was full, so it
/// handed what it held to the writer itself before recording on; or a host write's contents
/// waited for the trace file while the writer held it; or a host access to a buffer (a write,
/// a write mapping, the buffer's release) waited at its capture fence for capture work still
/// reading the bytes (then `runtime` names the buffer's runtime and `submission` and `region`
/// are empty).
///
/// The wait happens while a record is being recorded, which is after the times that record
/// carries were read: it is never inside a region's measured span, but it does delay what the
/// thread does next, so it is shown beside the regions. `runtime`, `submission` and `region`
/// name the region whose record was being recorded, when it was one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderWait {
    /// The recording thread: its index within the session (in order of first record).
    pub thread: u32,
    /// The thread's name, or "" when it has none.
    pub thread_name: String,
    /// Host time when the wait began.
    pub start_ns: u64,
    /// Host time when the thread could record again.
    pub end_ns: u64,
    /// The runtime of the record being recorded, if it belongs to one.
    pub runtime: Option<RuntimeId>,
    /// The submission of the record being recorded, if it names one.
    pub submission: Option<SubmissionIndex>,
    /// The region of the record being recorded, if it names one.
    pub region: Option<RegionIndex>,
}

/// How many records of one kind were lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostKind {
    /// The record kind ([`Record::kind_name`]), or `"unknown"` for records lost to a write
    /// error (a whole block, whose kinds are not kept).
    pub kind: String,
    /// Records lost.
    pub records: u64,
}

/// Records the recorder lost so far in this session, cumulative: a later one supersedes an
/// earlier one. Written at the first flush after a loss and at close, so a trace cut short
/// still says what it lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsLost {
    /// Host time of the count.
    pub time_ns: u64,
    /// Whether the session ran in lossy mode (a full thread buffer drops records); `false`
    /// means the losses came from write errors, records too large to store, or deferred
    /// captures that a fatal signal left unrun (each then written where the job stood).
    pub lossy: bool,
    /// Records lost, all kinds.
    pub total: u64,
    /// Records lost, by kind (kinds with none omitted).
    pub by_kind: Vec<LostKind>,
}

/// A region waited for capture work (hashing or storing an earlier submission's output) to
/// let go of a buffer it writes: the capture fence. Recorded instead of being hidden in the
/// region's time; the region's [`RegionTiming`] starts after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureFence {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission of the waiting region.
    pub submission: SubmissionIndex,
    /// The waiting region.
    pub region: RegionIndex,
    /// The buffer the capture held.
    pub buffer: BufferId,
    /// Host time when the wait began.
    pub start_ns: u64,
    /// Host time when the buffer was free.
    pub end_ns: u64,
}

/// The capture work behind an [`OutputDigest`] taken off the region's thread (format 1.8):
/// when the trace hashed (and, with contents traced, stored) bytes `start..end` of `buffer`
/// that `submission` wrote, on the thread that did it. It starts after the writing region's
/// [`RegionTiming`] ends, so capture work is visible as its own span and never part of a
/// region's time; a later region overwriting the buffer meanwhile waits at a
/// [`CaptureFence`]. Outputs small enough to hash on the region's thread right after its end
/// (4 KiB, about 0.2 µs) have no span: recording one would cost more than the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestSpan {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission that wrote the bytes.
    pub submission: SubmissionIndex,
    /// The buffer.
    pub buffer: BufferId,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Host time when the work began.
    pub start_ns: u64,
    /// Host time when it ended.
    pub end_ns: u64,
}

/// A recording thread's identity (format 1.14): written once per thread and session, when
/// the thread first records, so that records carrying a `thread` index ([`HostSpan`],
/// [`AnnotationRange`], [`RecorderWait`], ...) need not repeat its name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadName {
    /// The thread's index within the session (in order of first record; as
    /// [`RecorderWait::thread`]).
    pub thread: u32,
    /// The operating system's thread id (Linux `gettid`), 0 where unknown.
    pub os_tid: u64,
    /// The thread's name, or "" when it has none.
    pub name: String,
}

/// What a thread did during a [`HostSpan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HostSpanKind {
    /// The `submit` call that made the submission (accepted: a refused submit has a
    /// [`SubmitRefused`] instead).
    Submit,
    /// `Completion::wait` for the submission, only when it blocked (a wait that found the
    /// submission finished records nothing).
    Wait,
    /// A host callback (a [`RegionKind::Host`] region) run by this thread; its
    /// [`RegionTiming`] is the same span on the Host queue.
    HostCallback,
    /// The thread about to run `region` waited at the capture fence (format 1.15): capture
    /// work still read a buffer the region writes. The same wait as the [`CaptureFence`]
    /// record (which names the buffer), on the row of the thread that waited.
    CaptureFence,
}

impl HostSpanKind {
    /// The kind's name as readers show it: `"submit"`, `"wait"`, `"host callback"` or
    /// `"capture fence"`.
    pub fn label(self) -> &'static str {
        match self {
            HostSpanKind::Submit => "submit",
            HostSpanKind::Wait => "wait",
            HostSpanKind::HostCallback => "host callback",
            HostSpanKind::CaptureFence => "capture fence",
        }
    }
}

/// A span of a host thread's time spent in the runtime for a submission (format 1.14): a
/// `submit` call, a blocking `Completion::wait`, a host callback. Shown on the thread's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpan {
    /// The thread ([`ThreadName::thread`]).
    pub thread: u32,
    /// What the thread did.
    pub kind: HostSpanKind,
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission.
    pub submission: SubmissionIndex,
    /// The region, for a [`HostSpanKind::HostCallback`] or [`HostSpanKind::CaptureFence`].
    pub region: Option<RegionIndex>,
    /// Host time when the span began.
    pub start_ns: u64,
    /// Host time when it ended.
    pub end_ns: u64,
}

/// The name behind an [`AnnotationId`] (format 1.14): written once per session and name,
/// before the annotations that use it are recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnotationName {
    /// The id the annotations carry.
    pub name: AnnotationId,
    /// The name as the application gave it.
    pub text: String,
}

/// An application's range (format 1.14): `hrx::annotate::range`, closed when its guard
/// dropped, on the thread that opened it (NVTX's push/pop range, a Tracy zone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnotationRange {
    /// The thread ([`ThreadName::thread`]).
    pub thread: u32,
    /// The range's name.
    pub name: AnnotationId,
    /// Host time when the range opened.
    pub start_ns: u64,
    /// Host time when it closed.
    pub end_ns: u64,
}

/// An application's instant marker (format 1.14): `hrx::annotate::marker`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnotationMarker {
    /// The thread ([`ThreadName::thread`]).
    pub thread: u32,
    /// The marker's name.
    pub name: AnnotationId,
    /// Host time.
    pub time_ns: u64,
}

/// A counter's value as recorded: an `f64` compared by its bits (so that records stay
/// `Eq`; a NaN equals itself).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CounterValue(pub f64);

impl PartialEq for CounterValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for CounterValue {}

/// The counter a traced runtime sets at its start and at its end (a [`CounterSample`] of
/// its own name): the host's 1-minute load average divided by the CPUs available to the
/// process. At 1 or more the host was loaded: the recording's host-side times include waits
/// for a CPU, a poor reference for a replay's `--max-slowdown` (readers say so).
pub const HOST_LOAD_COUNTER: &str = "hrx: host load per CPU";

/// The host's 1-minute load average (`/proc/loadavg`), `None` where the system does not say.
pub fn load_average_now() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// [`load_average_now`] per CPU available to the process: the value of
/// [`HOST_LOAD_COUNTER`].
pub fn host_load_per_cpu_now() -> Option<f64> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    load_average_now().map(|load| load / cpus as f64)
}

/// One value of an application's counter (format 1.14): `hrx::annotate::counter`, a named
/// value over time (a Tracy plot, a Perfetto counter track). The counter holds the value
/// until its next sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSample {
    /// The thread that set it ([`ThreadName::thread`]).
    pub thread: u32,
    /// The counter's name.
    pub name: AnnotationId,
    /// Host time.
    pub time_ns: u64,
    /// The value, in the application's unit.
    pub value: CounterValue,
}

/// How a runtime times the operations inside its regions (format 1.16): written once after its
/// [`RuntimeStart`] when traced, so readers say what an [`OpTiming`] measures and a replay
/// times its repeats the same way. A trace without it (older than 1.16) says nothing of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpTimes {
    /// The runtime.
    pub runtime: RuntimeId,
    /// The method.
    pub source: OpTimeSource,
}

/// How operation times ([`OpTiming`]) are measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpTimeSource {
    /// None are: regions only (CUDA with `HRX_TRACE_KERNELS=0`, or kernel times asked where
    /// they could not be had).
    Off,
    /// The host clock around each operation (the software device, which runs them on the
    /// calling thread).
    Host,
    /// hrx's built-in kernels time themselves (CUDA: `%globaltimer`, to the last block's end,
    /// from the end of what each waits on: [`OpTiming`]); other operations are not timed.
    BuiltinKernels,
    /// CUPTI's activity API (CUDA): every kernel, memset and copy (in a graph from the end of
    /// what each waits on, [`OpTiming`]; a copy batch's copies as CUPTI times them).
    Cupti,
    /// Event-record nodes around each operation (HIP).
    Events,
}

impl OpTimeSource {
    /// In words, for the readers' `clock` and `operations` lines.
    pub fn describe(self) -> &'static str {
        match self {
            OpTimeSource::Off => "not timed (regions only)",
            OpTimeSource::Host => "host clock, one reading between two operations",
            OpTimeSource::BuiltinKernels => {
                "hrx's built-in kernels timed themselves (from the end of what each waits on to \
                 its last block's end); other operations not timed"
            }
            OpTimeSource::Cupti => "CUPTI's activity API (every kernel, memset and copy)",
            OpTimeSource::Events => "event-record nodes around each operation",
        }
    }
}

/// The recording was stopped before the program's own end: a signal asked it to stop, or
/// the program stopped on an error (the program then closed the trace, so the trace reads
/// as closed), after `done` of `asked`
/// units of work where the program counts them (a workload's frames). Written just before
/// [`SessionEnd`] by whoever stopped the work; `info` says "stopped by SIGINT after 11 of 400
/// frames" instead of calling the trace whole. Format 1.2; an older reader skips it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStopped {
    /// Host time.
    pub time_ns: u64,
    /// The signal number (2 for SIGINT, 15 for SIGTERM, ...); 0 where no signal stopped
    /// it but the program's own error (a workload's photograph that does not decode).
    pub signal: i32,
    /// Units of work done, when counted.
    pub done: Option<u64>,
    /// Units of work asked for, when counted.
    pub asked: Option<u64>,
}

/// A region is about to run (format 1.4): written on the worker thread before the region's
/// host start time is read, so it is never inside the region's measured span. A region with
/// a [`RegionStarted`] and no [`RegionTiming`] was still running when the trace ended: the
/// region a hang or a crash was in. An older reader skips it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionStarted {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The submission.
    pub submission: SubmissionIndex,
    /// The region within the submission's prepared graph.
    pub region: RegionIndex,
    /// Host time just before the region ran (its [`RegionTiming::start_ns`] follows).
    pub time_ns: u64,
}

/// Who saw a [`FatalSignal`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SignalWitness {
    /// The traced process's own recorder, from its signal handler, as it wrote out every
    /// thread's pending records (the signal then went on to the program's handler, or
    /// ended the process).
    #[default]
    Handler,
    /// `hrx-trace record`, which saw the process die of the signal and appended this to the
    /// trace the process left unclosed.
    Parent,
}

/// The traced process received a signal that ends it (format 1.4): a crash (SIGSEGV,
/// SIGBUS, SIGILL, SIGFPE, SIGABRT) or a termination signal (SIGTERM, SIGINT, SIGHUP,
/// SIGQUIT) whose action was the default one, or, seen by `hrx-trace record`, any death by a
/// signal (SIGKILL too). `info` says "crashed: SIGSEGV during submission 12, region 2
/// running". A signal that a handler of the program's survived (a JVM's expected fault, a
/// `kill -SEGV` that Rust's handler returns from) is not one: nothing is recorded for it.
/// An older reader skips it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FatalSignal {
    /// Host time.
    pub time_ns: u64,
    /// The signal number (11 for SIGSEGV, 6 for SIGABRT, ...).
    pub signal: i32,
    /// Who saw it.
    pub witness: SignalWitness,
    /// The faulting address, for a fault the kernel raised (SIGSEGV, SIGBUS, SIGILL,
    /// SIGFPE); `None` for a signal sent by a process (`kill`, `abort`).
    #[serde(with = "hex64::option")]
    pub fault_address: Option<u64>,
}

impl FatalSignal {
    /// How the process ended, in `info`'s words: `crashed: SIGSEGV` for a crash (SIGSEGV,
    /// SIGBUS, SIGILL, SIGFPE, SIGABRT), else `killed by SIGTERM` (`signal N` for a number
    /// without a name here).
    pub fn describe(&self) -> String {
        let name = signal_name(self.signal)
            .map_or_else(|| format!("signal {}", self.signal), str::to_owned);
        // SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (Linux numbers).
        let crash = matches!(self.signal, 11 | 7 | 4 | 8 | 6);
        if crash {
            format!("crashed: {name}")
        } else {
            format!("killed by {name}")
        }
    }
}

/// The name of Linux signal number `signal` (`SIGSEGV` for 11), for the signals a
/// [`FatalSignal`] names; `None` for another number.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        24 => "SIGXCPU",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        _ => return None,
    })
}

/// What part of a recording a trace holds for one runtime: a capture range, or a trim
/// (format 1.5; an older reader skips it and reads the trace as whole).
///
/// A trace of a range holds every definition (buffers, kernels, graphs, prepares) and the
/// submissions, their timings and outcomes, and host writes inside the range. A recording
/// with a range writes one `TraceRange` with `end: None` when the range opens (before the
/// range's [`BufferSnapshot`]s and first submit) and one with the same `start` and `end`
/// set when it closes; `hrx-trace trim` writes one with both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRange {
    /// The runtime whose submissions the range counts.
    pub runtime: RuntimeId,
    /// The first submission in the range.
    pub start: SubmissionIndex,
    /// One past the last submission in the range; `None` while the range is open (a trace
    /// that ends with it open holds every submission from `start` on).
    pub end: Option<SubmissionIndex>,
    /// What chose the range, as the user wrote it: `submissions:3..7`, `time:1.5s..3s`,
    /// `api` (the program's own start and stop calls).
    pub trigger: String,
    /// The trace this one was trimmed from (its path as given to `trim`); `None` for a
    /// range recorded at run time. When that trace was not a whole recording (cut short, its
    /// process crashed, damaged blocks skipped, or itself trimmed from such a trace), `trim`
    /// says why after the path: `cut.hrxt (incomplete: cut short, never closed)`,
    /// `c.hrxt (incomplete: the process crashed: SIGABRT)` (`hrx_analysis::trim::source_note`
    /// parts them): the trimmed trace is closed by `trim`, and would read as whole.
    pub trimmed_from: Option<String>,
    /// Host time.
    pub time_ns: u64,
    /// The recorded run's injected fault as the range counts it, when the runtime injects
    /// one and the range starts after the run's first submission: `op=N` and `kernel#N`
    /// count from the run's start, which the range lacks (format 1.13; `None` in an older
    /// trace, whose replay counts from the range's start).
    pub fault: Option<RangeFault>,
}

/// A run's injected fault seen from a range that starts mid-run ([`TraceRange::fault`],
/// format 1.13).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeFault {
    /// The fault counted from the range's first submission, as `RuntimeStart::fault` writes
    /// it: `op=3:device-lost` for the run's `op=7:device-lost` when the submissions before
    /// the range ran 4 device operations. What a replay of the range injects; `None` when
    /// the fault fired (or its count passed) before the range: a replay injects nothing.
    pub from_start: Option<String>,
    /// The submission it fired in before the range, when known.
    pub fired_in: Option<SubmissionIndex>,
}

/// The contents of a buffer's bytes when a range opens: the state replay needs to start
/// mid-run (GFXReconstruct's state snapshot), applied like a host write before the range's
/// first submission (format 1.5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSnapshot {
    /// The owning runtime.
    pub runtime: RuntimeId,
    /// The buffer.
    pub buffer: BufferId,
    /// Byte offset of the snapshot range.
    pub offset: u64,
    /// Length of the snapshot range in bytes.
    pub len_bytes: u64,
    /// xxh3-64 of the bytes; 0 when they are not known.
    #[serde(with = "hex64")]
    pub xxh3: u64,
    /// The bytes; [`Payload::Omitted`] when the source of a trim did not hold them (the
    /// trace then cannot be replayed exactly, and says so).
    pub contents: Payload,
    /// Host time.
    pub time_ns: u64,
}

/// Where the session's host times come from (see [`HostClock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HostClockSource {
    /// The CPU's invariant time-stamp counter (`rdtsc`), mapped onto `CLOCK_MONOTONIC`.
    Tsc,
    /// `CLOCK_MONOTONIC` itself (where there is no invariant TSC, or when asked for).
    Monotonic,
}

impl HostClockSource {
    /// A short name: `TSC` or `CLOCK_MONOTONIC`.
    pub fn name(self) -> &'static str {
        match self {
            HostClockSource::Tsc => "TSC",
            HostClockSource::Monotonic => "CLOCK_MONOTONIC",
        }
    }
}

/// A calibration of the session's host clock against `CLOCK_MONOTONIC`, written at the
/// session's start, at every flush and at its close (format 1.6; an older reader skips it,
/// and reads the same host times, which records carry in ns).
///
/// The clock maps raw readings (`ticks`: TSC ticks, or `CLOCK_MONOTONIC` ns) to session ns
/// piecewise linearly; this record states the pair measured (`ticks` with `monotonic_ns`,
/// within `error_ns`), what the clock read at `ticks` (`session_ns`), and the piece in force
/// from `ticks` until the next calibration ([`HostClock::to_session_ns`]).
/// `monotonic_ns - (SessionStart::monotonic_base_ns + session_ns)` is the clock's offset from
/// `CLOCK_MONOTONIC` at that instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostClock {
    /// The clock's source.
    pub source: HostClockSource,
    /// The raw reading.
    pub ticks: u64,
    /// The session clock at `ticks`, before this calibration (the time records carry).
    pub session_ns: u64,
    /// `CLOCK_MONOTONIC` at the same instant, absolute, in ns.
    pub monotonic_ns: u64,
    /// The pair's own error: half the window of the monotonic reads around the tick read,
    /// in ns (0 for [`HostClockSource::Monotonic`], which reads that clock itself).
    pub error_ns: u64,
    /// Where the piece in force from here starts, in session ns (at `ticks`). Equal to
    /// `session_ns` but where the clock was stepped forward.
    pub next_session_ns: u64,
    /// The piece's slope: ns per tick as 32.32 fixed point (`1 << 32` for the monotonic
    /// source).
    pub ns_per_tick_q32: u64,
}

impl HostClock {
    /// A raw reading at or after `ticks` (until the next calibration) in session ns, as the
    /// recorder mapped it.
    pub fn to_session_ns(&self, ticks: u64) -> u64 {
        let d = u128::from(ticks.saturating_sub(self.ticks));
        self.next_session_ns
            .saturating_add(((d * u128::from(self.ns_per_tick_q32)) >> 32) as u64)
    }

    /// The clock's ticks per second, from the piece's slope.
    pub fn ticks_per_second(&self) -> f64 {
        1e9 * (1u64 << 32) as f64 / self.ns_per_tick_q32.max(1) as f64
    }

    /// `CLOCK_MONOTONIC` minus the session clock at this calibration, in ns, given the
    /// session's monotonic base ([`SessionStart::monotonic_base_ns`]).
    pub fn offset_ns(&self, monotonic_base_ns: u64) -> i64 {
        self.monotonic_ns
            .wrapping_sub(monotonic_base_ns.wrapping_add(self.session_ns)) as i64
    }

    /// `CLOCK_MONOTONIC` minus the session clock just after this calibration (where the piece
    /// in force from `ticks` starts, `next_session_ns`), in ns, given the session's monotonic
    /// base. Equal to [`HostClock::offset_ns`] but where the clock was stepped forward.
    pub fn offset_after_ns(&self, monotonic_base_ns: u64) -> i64 {
        self.monotonic_ns
            .wrapping_sub(monotonic_base_ns.wrapping_add(self.next_session_ns)) as i64
    }

    /// A session time placed on `CLOCK_MONOTONIC` (absolute ns), from the session's
    /// calibrations in file order and its monotonic base
    /// ([`SessionStart::monotonic_base_ns`]).
    ///
    /// Between two calibrations the session clock is linear in ticks, and so, within the
    /// calibrations' own errors, is `CLOCK_MONOTONIC`: the offset is interpolated linearly
    /// between the offset after the calibration before `session_ns` and the offset at the one
    /// after it. Before the first calibration the first's offset holds, after the last the
    /// last's. `None` without calibrations (a trace of format 1.5 or older, whose host times
    /// are `CLOCK_MONOTONIC` less the base already).
    pub fn monotonic_ns_at(
        calibrations: &[HostClock],
        monotonic_base_ns: u64,
        session_ns: u64,
    ) -> Option<u64> {
        let after = calibrations.partition_point(|c| c.session_ns <= session_ns);
        let offset = match (
            after.checked_sub(1).map(|i| &calibrations[i]),
            calibrations.get(after),
        ) {
            (None, None) => return None,
            (None, Some(first)) => first.offset_ns(monotonic_base_ns),
            (Some(last), None) => last.offset_after_ns(monotonic_base_ns),
            (Some(before), Some(next)) => {
                let (s0, o0) = (
                    before.next_session_ns,
                    before.offset_after_ns(monotonic_base_ns),
                );
                let (s1, o1) = (next.session_ns, next.offset_ns(monotonic_base_ns));
                if session_ns <= s0 || s1 <= s0 {
                    o0
                } else {
                    let along = i128::from(session_ns - s0);
                    let span = i128::from(s1 - s0);
                    (i128::from(o0) + (i128::from(o1) - i128::from(o0)) * along / span) as i64
                }
            }
        };
        Some(
            monotonic_base_ns
                .wrapping_add(session_ns)
                .wrapping_add_signed(offset),
        )
    }
}

/// One trace record.
///
/// Variants are only ever appended (see the module docs); match with a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Record {
    /// See [`SessionStart`].
    SessionStart(SessionStart),
    /// See [`RuntimeStart`].
    RuntimeStart(RuntimeStart),
    /// See [`RuntimeEnd`].
    RuntimeEnd(RuntimeEnd),
    /// See [`BufferCreated`].
    BufferCreated(BufferCreated),
    /// See [`BufferDropped`].
    BufferDropped(BufferDropped),
    /// See [`Blob`].
    Blob(Blob),
    /// See [`KernelLoaded`].
    KernelLoaded(KernelLoaded),
    /// See [`GraphOp`].
    GraphOp(GraphOp),
    /// See [`Prepared`].
    Prepared(Prepared),
    /// See [`Submit`].
    Submit(Submit),
    /// See [`SubmitRefused`].
    SubmitRefused(SubmitRefused),
    /// See [`CrossWait`].
    CrossWait(CrossWait),
    /// See [`RegionTiming`].
    RegionTiming(RegionTiming),
    /// See [`OpTiming`].
    OpTiming(OpTiming),
    /// See [`ClockCalibration`].
    ClockCalibration(ClockCalibration),
    /// See [`RegionDone`].
    RegionDone(RegionDone),
    /// See [`SubmissionDone`].
    SubmissionDone(SubmissionDone),
    /// See [`Quarantine`].
    Quarantine(Quarantine),
    /// See [`Poison`] (its cause's submission and region: format 1.3).
    Poison(Poison),
    /// See [`CopyStreamUnhealthy`].
    CopyStreamUnhealthy(CopyStreamUnhealthy),
    /// See [`FaultInjected`].
    FaultInjected(FaultInjected),
    /// See [`HostWrite`].
    HostWrite(HostWrite),
    /// See [`OutputDigest`].
    OutputDigest(OutputDigest),
    /// See [`Counters`].
    Counters(Counters),
    /// See [`SessionEnd`].
    SessionEnd(SessionEnd),
    /// See [`RecorderWait`] (format 1.1).
    RecorderWait(RecorderWait),
    /// See [`RecordsLost`] (format 1.1).
    RecordsLost(RecordsLost),
    /// See [`CaptureFence`] (format 1.1).
    CaptureFence(CaptureFence),
    /// See [`SessionStopped`] (format 1.2).
    SessionStopped(SessionStopped),
    /// See [`RegionStarted`] (format 1.4).
    RegionStarted(RegionStarted),
    /// See [`FatalSignal`] (format 1.4).
    FatalSignal(FatalSignal),
    /// See [`TraceRange`] (format 1.5).
    TraceRange(TraceRange),
    /// See [`BufferSnapshot`] (format 1.5).
    BufferSnapshot(BufferSnapshot),
    /// See [`HostClock`] (format 1.6).
    HostClock(HostClock),
    /// See [`DigestSpan`] (format 1.8).
    DigestSpan(DigestSpan),
    /// See [`ThreadName`] (format 1.14).
    ThreadName(ThreadName),
    /// See [`HostSpan`] (format 1.14).
    HostSpan(HostSpan),
    /// See [`AnnotationName`] (format 1.14).
    AnnotationName(AnnotationName),
    /// See [`AnnotationRange`] (format 1.14).
    AnnotationRange(AnnotationRange),
    /// See [`AnnotationMarker`] (format 1.14).
    AnnotationMarker(AnnotationMarker),
    /// See [`CounterSample`] (format 1.14).
    CounterSample(CounterSample),
    /// See [`OpTimes`] (format 1.16).
    OpTimes(OpTimes),
}

impl Record {
    /// Every variant's name ([`Record::kind_name`]), in declaration order.
    pub const KIND_NAMES: [&'static str; 42] = [
        "SessionStart",
        "RuntimeStart",
        "RuntimeEnd",
        "BufferCreated",
        "BufferDropped",
        "Blob",
        "KernelLoaded",
        "GraphOp",
        "Prepared",
        "Submit",
        "SubmitRefused",
        "CrossWait",
        "RegionTiming",
        "OpTiming",
        "ClockCalibration",
        "RegionDone",
        "SubmissionDone",
        "Quarantine",
        "Poison",
        "CopyStreamUnhealthy",
        "FaultInjected",
        "HostWrite",
        "OutputDigest",
        "Counters",
        "SessionEnd",
        "RecorderWait",
        "RecordsLost",
        "CaptureFence",
        "SessionStopped",
        "RegionStarted",
        "FatalSignal",
        "TraceRange",
        "BufferSnapshot",
        "HostClock",
        "DigestSpan",
        "ThreadName",
        "HostSpan",
        "AnnotationName",
        "AnnotationRange",
        "AnnotationMarker",
        "CounterSample",
        "OpTimes",
    ];

    /// The variant's index in [`Record::KIND_NAMES`].
    pub fn kind_index(&self) -> usize {
        let name = self.kind_name();
        Record::KIND_NAMES
            .iter()
            .position(|n| *n == name)
            .expect("every kind is named")
    }

    /// The variant's name, e.g. `"RegionTiming"`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Record::SessionStart(_) => "SessionStart",
            Record::RuntimeStart(_) => "RuntimeStart",
            Record::RuntimeEnd(_) => "RuntimeEnd",
            Record::BufferCreated(_) => "BufferCreated",
            Record::BufferDropped(_) => "BufferDropped",
            Record::Blob(_) => "Blob",
            Record::KernelLoaded(_) => "KernelLoaded",
            Record::GraphOp(_) => "GraphOp",
            Record::Prepared(_) => "Prepared",
            Record::Submit(_) => "Submit",
            Record::SubmitRefused(_) => "SubmitRefused",
            Record::CrossWait(_) => "CrossWait",
            Record::RegionTiming(_) => "RegionTiming",
            Record::OpTiming(_) => "OpTiming",
            Record::ClockCalibration(_) => "ClockCalibration",
            Record::RegionDone(_) => "RegionDone",
            Record::SubmissionDone(_) => "SubmissionDone",
            Record::Quarantine(_) => "Quarantine",
            Record::Poison(_) => "Poison",
            Record::CopyStreamUnhealthy(_) => "CopyStreamUnhealthy",
            Record::FaultInjected(_) => "FaultInjected",
            Record::HostWrite(_) => "HostWrite",
            Record::OutputDigest(_) => "OutputDigest",
            Record::Counters(_) => "Counters",
            Record::SessionEnd(_) => "SessionEnd",
            Record::RecorderWait(_) => "RecorderWait",
            Record::RecordsLost(_) => "RecordsLost",
            Record::CaptureFence(_) => "CaptureFence",
            Record::SessionStopped(_) => "SessionStopped",
            Record::RegionStarted(_) => "RegionStarted",
            Record::FatalSignal(_) => "FatalSignal",
            Record::TraceRange(_) => "TraceRange",
            Record::BufferSnapshot(_) => "BufferSnapshot",
            Record::HostClock(_) => "HostClock",
            Record::DigestSpan(_) => "DigestSpan",
            Record::ThreadName(_) => "ThreadName",
            Record::HostSpan(_) => "HostSpan",
            Record::AnnotationName(_) => "AnnotationName",
            Record::AnnotationRange(_) => "AnnotationRange",
            Record::AnnotationMarker(_) => "AnnotationMarker",
            Record::CounterSample(_) => "CounterSample",
            Record::OpTimes(_) => "OpTimes",
        }
    }

    /// The runtime the record belongs to; `None` for session-level records.
    pub fn runtime(&self) -> Option<RuntimeId> {
        Some(match self {
            Record::SessionStart(_)
            | Record::Blob(_)
            | Record::SessionEnd(_)
            | Record::RecordsLost(_) => return None,
            Record::RecorderWait(r) => return r.runtime,
            Record::CaptureFence(r) => r.runtime,
            Record::SessionStopped(_)
            | Record::FatalSignal(_)
            | Record::HostClock(_)
            | Record::ThreadName(_)
            | Record::AnnotationName(_)
            | Record::AnnotationRange(_)
            | Record::AnnotationMarker(_)
            | Record::CounterSample(_) => {
                return None;
            }
            Record::HostSpan(r) => r.runtime,
            Record::OpTimes(r) => r.runtime,
            Record::RegionStarted(r) => r.runtime,
            Record::RuntimeStart(r) => r.runtime,
            Record::RuntimeEnd(r) => r.runtime,
            Record::BufferCreated(r) => r.runtime,
            Record::BufferDropped(r) => r.runtime,
            Record::KernelLoaded(r) => r.runtime,
            Record::GraphOp(r) => r.runtime,
            Record::Prepared(r) => r.runtime,
            Record::Submit(r) => r.runtime,
            Record::SubmitRefused(r) => r.runtime,
            Record::CrossWait(r) => r.runtime,
            Record::RegionTiming(r) => r.runtime,
            Record::OpTiming(r) => r.timing.runtime,
            Record::ClockCalibration(r) => r.runtime,
            Record::RegionDone(r) => r.runtime,
            Record::SubmissionDone(r) => r.runtime,
            Record::Quarantine(r) => r.runtime,
            Record::Poison(r) => r.runtime,
            Record::CopyStreamUnhealthy(r) => r.runtime,
            Record::FaultInjected(r) => r.runtime,
            Record::HostWrite(r) => r.runtime,
            Record::OutputDigest(r) => r.runtime,
            Record::Counters(r) => r.runtime,
            Record::TraceRange(r) => r.runtime,
            Record::BufferSnapshot(r) => r.runtime,
            Record::DigestSpan(r) => r.runtime,
        })
    }
}

macro_rules! record_from {
    ($($variant:ident),* $(,)?) => {
        $(
            impl From<$variant> for Record {
                fn from(value: $variant) -> Self {
                    Record::$variant(value)
                }
            }
        )*
    };
}

record_from!(
    SessionStart,
    RuntimeStart,
    RuntimeEnd,
    BufferCreated,
    BufferDropped,
    Blob,
    KernelLoaded,
    GraphOp,
    Prepared,
    Submit,
    SubmitRefused,
    CrossWait,
    RegionTiming,
    OpTiming,
    ClockCalibration,
    RegionDone,
    SubmissionDone,
    Quarantine,
    Poison,
    CopyStreamUnhealthy,
    FaultInjected,
    HostWrite,
    OutputDigest,
    Counters,
    SessionEnd,
    RecorderWait,
    RecordsLost,
    CaptureFence,
    SessionStopped,
    RegionStarted,
    FatalSignal,
    TraceRange,
    BufferSnapshot,
    HostClock,
    DigestSpan,
    ThreadName,
    HostSpan,
    AnnotationName,
    AnnotationRange,
    AnnotationMarker,
    CounterSample,
    OpTimes,
);

/// Pseudo-random records of every kind, shared by the crate's tests.
#[cfg(test)]
pub(crate) mod testgen {
    use super::*;

    /// The number of [`Record`] variants; [`record`] cycles through all of them.
    pub const KINDS: u64 = 42;

    /// A small deterministic generator (SplitMix64).
    pub struct Rng(pub u64);

    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        /// Mostly small numbers, sometimes extreme ones (varint edge cases).
        pub fn int(&mut self) -> u64 {
            match self.next() % 4 {
                0 => self.next() % 128,
                1 => self.next() % 100_000,
                2 => self.next(),
                _ => [0, 127, 128, u32::MAX as u64, u64::MAX][(self.next() % 5) as usize],
            }
        }
        pub fn u32(&mut self) -> u32 {
            self.int() as u32
        }
        pub fn bool(&mut self) -> bool {
            self.next() & 1 == 0
        }
        pub fn string(&mut self) -> String {
            let len = self.next() % 12;
            (0..len)
                .map(|_| ['a', 'Z', '0', ' ', 'é', '→', '\n'][(self.next() % 7) as usize])
                .collect()
        }
        pub fn bytes(&mut self) -> Vec<u8> {
            let len = self.next() % 40;
            (0..len).map(|_| self.next() as u8).collect()
        }
        pub fn vec<T>(&mut self, mut f: impl FnMut(&mut Self) -> T) -> Vec<T> {
            let len = self.next() % 4;
            (0..len).map(|_| f(self)).collect()
        }
        pub fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
            self.bool().then(|| f(self))
        }
        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            items[(self.next() % items.len() as u64) as usize]
        }
        fn access(&mut self) -> Access {
            self.pick(&[Access::Read, Access::Write, Access::ReadWrite])
        }
        fn hazard(&mut self) -> HazardKind {
            self.pick(&[
                HazardKind::ReadAfterWrite,
                HazardKind::WriteAfterRead,
                HazardKind::WriteAfterWrite,
            ])
        }
        fn lane(&mut self) -> Lane {
            self.pick(&[Lane::Upload, Lane::Compute, Lane::Download])
        }
        fn engine(&mut self) -> Engine {
            self.pick(&[Engine::Gpu, Engine::Npu, Engine::Host])
        }
        fn status(&mut self) -> Status {
            match self.next() % 3 {
                0 => Status::Ok,
                1 => Status::Failed {
                    error: self.string(),
                },
                _ => Status::Cancelled {
                    reason: self.string(),
                },
            }
        }
        fn payload(&mut self) -> Payload {
            match self.next() % 3 {
                0 => Payload::Inline(self.bytes()),
                1 => Payload::Blob {
                    hash: BlobHash(self.next()),
                    len_bytes: self.int(),
                },
                _ => Payload::Omitted {
                    len_bytes: self.int(),
                },
            }
        }
        fn uses(&mut self) -> Vec<Use> {
            self.vec(|r| Use {
                buffer: BufferId(r.int()),
                start: r.int(),
                end: r.int(),
                access: r.access(),
            })
        }
        fn edges(&mut self) -> Vec<Edge> {
            self.vec(|r| Edge {
                producer: r.u32(),
                consumer: r.u32(),
                kind: r.hazard(),
                buffer: BufferId(r.int()),
                start: r.int(),
                end: r.int(),
            })
        }
        pub fn timing(&mut self) -> RegionTiming {
            RegionTiming {
                runtime: RuntimeId(self.u32()),
                submission: SubmissionIndex(self.int()),
                region: RegionIndex(self.u32()),
                start_ns: self.int(),
                end_ns: self.int(),
                device: self.opt(|r| DeviceSpan {
                    start_ns: r.int(),
                    end_ns: r.int(),
                }),
            }
        }
    }

    /// A pseudo-random record of kind `kind % KINDS`.
    pub fn record(r: &mut Rng, kind: u64) -> Record {
        let runtime = RuntimeId(r.u32());
        match kind % KINDS {
            0 => Record::SessionStart(SessionStart {
                producer: r.string(),
                format_version: (r.u32() as u16, r.u32() as u16),
                wall_clock_utc: DateTime::from_timestamp(
                    (r.next() % 4_000_000_000) as i64,
                    (r.next() % 1_000_000_000) as u32,
                )
                .unwrap(),
                monotonic_base_ns: r.int(),
                host: r.string(),
                pid: r.u32(),
                args: r.vec(Rng::string),
                backend: r.string(),
                device: r.string(),
            }),
            1 => Record::RuntimeStart(RuntimeStart {
                runtime,
                backend: r.string(),
                device: r.string(),
                graph_slots: r.u32(),
                capacity: r.u32(),
                fault: r.opt(Rng::string),
                time_ns: r.int(),
            }),
            2 => Record::RuntimeEnd(RuntimeEnd {
                runtime,
                time_ns: r.int(),
            }),
            3 => Record::BufferCreated(BufferCreated {
                runtime,
                buffer: BufferId(r.int()),
                len_bytes: r.int(),
                placement: match r.next() % 3 {
                    0 => Placement::GpuLocal,
                    1 => Placement::HostVisible,
                    _ => Placement::NpuShared { group: r.u32() },
                },
                device_address: r.int(),
                time_ns: r.int(),
            }),
            4 => Record::BufferDropped(BufferDropped {
                runtime,
                buffer: BufferId(r.int()),
                time_ns: r.int(),
            }),
            5 => {
                let bytes = r.bytes();
                Record::Blob(Blob {
                    hash: BlobHash(xxhash_rust::xxh3::xxh3_64(&bytes)),
                    bytes,
                })
            }
            6 => Record::KernelLoaded(KernelLoaded {
                runtime,
                kernel: KernelId(r.int()),
                entry: r.string(),
                code: r.opt(|r| BlobHash(r.next())),
                contract: r.vec(|r| BindingContract {
                    access: r.access(),
                    extent_bytes: r.int(),
                    alignment: r.int(),
                }),
                constants: r.bytes(),
                grid: [r.u32(), r.u32(), r.u32()],
                block: [r.u32(), r.u32(), r.u32()],
                engine: r.engine(),
                npu_groups: r.vec(Rng::u32),
            }),
            7 => Record::GraphOp(GraphOp {
                runtime,
                graph: GraphId(r.int()),
                node: NodeIndex(r.u32()),
                op: match r.next() % 6 {
                    0 => OpKind::Fill {
                        value: r.next() as u8,
                    },
                    1 => OpKind::Copy,
                    2 => OpKind::Kernel {
                        kernel: KernelId(r.int()),
                    },
                    3 => OpKind::Scoped,
                    4 => OpKind::Host,
                    _ => OpKind::Npu {
                        kernel: KernelId(r.int()),
                    },
                },
                lane: r.lane(),
                uses: r.uses(),
            }),
            8 => Record::Prepared(Prepared {
                runtime,
                graph: GraphId(r.int()),
                prepared: PreparedId(r.int()),
                slots: r.u32(),
                parallel: r.bool(),
                regions: r.vec(|r| Region {
                    queue: r.pick(&[
                        Queue::GpuUpload,
                        Queue::GpuCompute,
                        Queue::GpuDownload,
                        Queue::Npu,
                        Queue::Host,
                    ]),
                    engine: r.engine(),
                    kind: r.pick(&[
                        RegionKind::NativeGraph,
                        RegionKind::CopyBatch,
                        RegionKind::Scoped,
                        RegionKind::NpuRun,
                        RegionKind::Host,
                    ]),
                    nodes: r.vec(|r| NodeIndex(r.u32())),
                    internal_edges: r.edges(),
                    dependencies: r.edges(),
                    uses: r.uses(),
                    copy_bytes: r.int(),
                }),
                time_ns: r.int(),
            }),
            9 => Record::Submit(Submit {
                runtime,
                prepared: PreparedId(r.int()),
                submission: SubmissionIndex(r.int()),
                slot: r.u32(),
                producers: r.vec(|r| SubmissionIndex(r.int())),
                time_ns: r.int(),
            }),
            10 => Record::SubmitRefused(SubmitRefused {
                runtime,
                prepared: PreparedId(r.int()),
                kind: r.pick(&[
                    RefusalKind::Busy,
                    RefusalKind::DeviceLost,
                    RefusalKind::Other,
                ]),
                reason: r.string(),
                time_ns: r.int(),
            }),
            11 => Record::CrossWait(CrossWait {
                runtime,
                submission: SubmissionIndex(r.int()),
                region: RegionIndex(r.u32()),
                on_submission: SubmissionIndex(r.int()),
                on_region: RegionIndex(r.u32()),
                kind: r.hazard(),
                buffer: BufferId(r.int()),
                start: r.int(),
                end: r.int(),
            }),
            12 => Record::RegionTiming(r.timing()),
            13 => Record::OpTiming(OpTiming {
                timing: r.timing(),
                node: NodeIndex(r.u32()),
            }),
            14 => Record::ClockCalibration(ClockCalibration {
                runtime,
                host_ns: r.int(),
                device_ns: r.int(),
                device_offset_ns: r.int() as i64,
                uncertainty_ns: r.int(),
            }),
            15 => Record::RegionDone(RegionDone {
                runtime,
                submission: SubmissionIndex(r.int()),
                region: RegionIndex(r.u32()),
                status: r.status(),
                time_ns: r.int(),
            }),
            16 => Record::SubmissionDone(SubmissionDone {
                runtime,
                submission: SubmissionIndex(r.int()),
                status: r.status(),
                time_ns: r.int(),
            }),
            17 => Record::Quarantine(Quarantine {
                runtime,
                prepared: PreparedId(r.int()),
                submission: r.opt(|r| SubmissionIndex(r.int())),
                region: r.opt(|r| RegionIndex(r.u32())),
                cause: r.string(),
                time_ns: r.int(),
            }),
            18 => Record::Poison(Poison {
                runtime,
                buffer: BufferId(r.int()),
                cause: r.string(),
                time_ns: r.int(),
                submission: r.opt(|r| SubmissionIndex(r.int())),
                region: r.opt(|r| RegionIndex(r.u32())),
            }),
            19 => Record::CopyStreamUnhealthy(CopyStreamUnhealthy {
                runtime,
                lane: r.lane(),
                cause: r.string(),
                time_ns: r.int(),
            }),
            20 => Record::FaultInjected(FaultInjected {
                runtime,
                submission: r.opt(|r| SubmissionIndex(r.int())),
                region: r.opt(|r| RegionIndex(r.u32())),
                description: r.string(),
                time_ns: r.int(),
            }),
            21 => Record::HostWrite(HostWrite {
                runtime,
                buffer: BufferId(r.int()),
                offset: r.int(),
                len_bytes: r.int(),
                xxh3: r.next(),
                contents: r.payload(),
                time_ns: r.int(),
            }),
            22 => Record::OutputDigest(OutputDigest {
                runtime,
                submission: SubmissionIndex(r.int()),
                buffer: BufferId(r.int()),
                start: r.int(),
                end: r.int(),
                xxh3: r.next(),
                contents: r.payload(),
            }),
            23 => Record::Counters(Counters {
                runtime,
                time_ns: r.int(),
                submissions: r.int(),
                native_graphs_prepared: r.int(),
                copy_streams_created: r.int(),
                copied_bytes: r.int(),
                lane_copy_bytes: [r.int(), r.int(), r.int()],
            }),
            24 => Record::SessionEnd(SessionEnd {
                time_ns: r.int(),
                records: r.int(),
                dropped_records: r.int(),
            }),
            25 => Record::RecorderWait(RecorderWait {
                thread: r.u32(),
                thread_name: r.string(),
                start_ns: r.int(),
                end_ns: r.int(),
                runtime: r.opt(|r| RuntimeId(r.u32())),
                submission: r.opt(|r| SubmissionIndex(r.int())),
                region: r.opt(|r| RegionIndex(r.u32())),
            }),
            26 => Record::RecordsLost(RecordsLost {
                time_ns: r.int(),
                lossy: r.bool(),
                total: r.int(),
                by_kind: r.vec(|r| LostKind {
                    kind: r.string(),
                    records: r.int(),
                }),
            }),
            27 => Record::CaptureFence(CaptureFence {
                runtime,
                submission: SubmissionIndex(r.int()),
                region: RegionIndex(r.u32()),
                buffer: BufferId(r.int()),
                start_ns: r.int(),
                end_ns: r.int(),
            }),
            28 => Record::SessionStopped(SessionStopped {
                time_ns: r.int(),
                signal: r.u32() as i32,
                done: r.opt(Rng::int),
                asked: r.opt(Rng::int),
            }),
            29 => Record::RegionStarted(RegionStarted {
                runtime,
                submission: SubmissionIndex(r.int()),
                region: RegionIndex(r.u32()),
                time_ns: r.int(),
            }),
            30 => Record::FatalSignal(FatalSignal {
                time_ns: r.int(),
                signal: r.u32() as i32,
                witness: if r.bool() {
                    SignalWitness::Handler
                } else {
                    SignalWitness::Parent
                },
                fault_address: r.opt(Rng::int),
            }),
            31 => Record::TraceRange(TraceRange {
                runtime,
                start: SubmissionIndex(r.int()),
                end: r.opt(|r| SubmissionIndex(r.int())),
                trigger: r.string(),
                trimmed_from: r.opt(Rng::string),
                time_ns: r.int(),
                fault: r.opt(|r| RangeFault {
                    from_start: r.opt(Rng::string),
                    fired_in: r.opt(|r| SubmissionIndex(r.int())),
                }),
            }),
            32 => Record::BufferSnapshot(BufferSnapshot {
                runtime,
                buffer: BufferId(r.int()),
                offset: r.int(),
                len_bytes: r.int(),
                xxh3: r.next(),
                contents: r.payload(),
                time_ns: r.int(),
            }),
            33 => Record::HostClock(HostClock {
                source: if r.bool() {
                    HostClockSource::Tsc
                } else {
                    HostClockSource::Monotonic
                },
                ticks: r.int(),
                session_ns: r.int(),
                monotonic_ns: r.int(),
                error_ns: r.int(),
                next_session_ns: r.int(),
                ns_per_tick_q32: r.int(),
            }),
            34 => Record::DigestSpan(DigestSpan {
                runtime,
                submission: SubmissionIndex(r.int()),
                buffer: BufferId(r.int()),
                start: r.int(),
                end: r.int(),
                start_ns: r.int(),
                end_ns: r.int(),
            }),
            35 => Record::ThreadName(ThreadName {
                thread: r.u32(),
                os_tid: r.int(),
                name: r.string(),
            }),
            36 => Record::HostSpan(HostSpan {
                thread: r.u32(),
                kind: r.pick(&[
                    HostSpanKind::Submit,
                    HostSpanKind::Wait,
                    HostSpanKind::HostCallback,
                    HostSpanKind::CaptureFence,
                ]),
                runtime,
                submission: SubmissionIndex(r.int()),
                region: r.opt(|r| RegionIndex(r.u32())),
                start_ns: r.int(),
                end_ns: r.int(),
            }),
            37 => Record::AnnotationName(AnnotationName {
                name: AnnotationId(r.u32()),
                text: r.string(),
            }),
            38 => Record::AnnotationRange(AnnotationRange {
                thread: r.u32(),
                name: AnnotationId(r.u32()),
                start_ns: r.int(),
                end_ns: r.int(),
            }),
            39 => Record::AnnotationMarker(AnnotationMarker {
                thread: r.u32(),
                name: AnnotationId(r.u32()),
                time_ns: r.int(),
            }),
            40 => Record::CounterSample(CounterSample {
                thread: r.u32(),
                name: AnnotationId(r.u32()),
                time_ns: r.int(),
                value: CounterValue(f64::from_bits(r.next())),
            }),
            _ => Record::OpTimes(OpTimes {
                runtime: RuntimeId(r.u32()),
                source: r.pick(&[
                    OpTimeSource::Off,
                    OpTimeSource::Host,
                    OpTimeSource::BuiltinKernels,
                    OpTimeSource::Cupti,
                    OpTimeSource::Events,
                ]),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testgen::{KINDS, Rng, record};
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn round_trip(rec: &Record) -> Record {
        let bytes = postcard::to_stdvec(rec).unwrap();
        postcard::from_bytes(&bytes).unwrap()
    }

    #[test]
    fn generator_covers_every_kind() {
        let mut rng = Rng(1);
        let names: BTreeSet<_> = (0..KINDS)
            .map(|k| record(&mut rng, k).kind_name())
            .collect();
        assert_eq!(names.len() as u64, KINDS);
    }

    #[test]
    fn every_kind_round_trips() {
        let mut rng = Rng(7);
        for i in 0..KINDS * 40 {
            let rec = record(&mut rng, i);
            assert_eq!(round_trip(&rec), rec, "{}", rec.kind_name());
        }
    }

    #[test]
    fn bytes_fields_use_the_sequence_wire_form() {
        // `serialize_bytes` and a sequence of u8 are the same bytes on the wire.
        let as_seq = postcard::to_stdvec(&vec![1u8, 2, 3]).unwrap();
        let as_payload = postcard::to_stdvec(&Payload::Inline(vec![1, 2, 3])).unwrap();
        assert_eq!(&as_payload[1..], &as_seq[..]);
    }

    #[test]
    fn every_kind_round_trips_through_json() {
        let mut rng = Rng(11);
        for i in 0..KINDS * 20 {
            let rec = record(&mut rng, i);
            let text = serde_json::to_string(&rec).unwrap();
            let back: Record = serde_json::from_str(&text).unwrap();
            assert_eq!(back, rec, "{}: {text}", rec.kind_name());
        }
    }

    #[test]
    fn json_writes_digests_as_hex_and_bytes_as_base64() {
        let digest = Record::OutputDigest(OutputDigest {
            runtime: RuntimeId(1),
            submission: SubmissionIndex(12),
            buffer: BufferId(3),
            start: 0,
            end: 3,
            xxh3: u64::MAX - 1,
            contents: Payload::Inline(vec![0xff, 0, 7]),
        });
        let json: serde_json::Value = serde_json::to_value(&digest).unwrap();
        let fields = &json["OutputDigest"];
        // Past 2^53 a JSON number would be rounded by jq; the string is exact.
        assert_eq!(fields["xxh3"], "0xfffffffffffffffe");
        assert_eq!(fields["submission"], 12, "counters stay numbers");
        assert_eq!(fields["contents"]["Inline"]["len"], 3);
        assert_eq!(fields["contents"]["Inline"]["base64"], "/wAH");
        let blob = serde_json::to_value(Payload::Blob {
            hash: BlobHash(0xabc),
            len_bytes: 9,
        })
        .unwrap();
        assert_eq!(blob["Blob"]["hash"], "0x0000000000000abc");
        // The binary form is the bare integer's: the file format did not change.
        assert_eq!(
            postcard::to_stdvec(&BlobHash(1 << 40)).unwrap(),
            postcard::to_stdvec(&(1u64 << 40)).unwrap()
        );
    }

    #[test]
    fn json_reads_the_older_forms_and_refuses_bad_ones() {
        // dump --json before these forms wrote numbers and byte arrays.
        let old: Payload = serde_json::from_str(r#"{"Inline":[1,2,3]}"#).unwrap();
        assert_eq!(old, Payload::Inline(vec![1, 2, 3]));
        let hash: BlobHash = serde_json::from_str("2748").unwrap();
        assert_eq!(hash, BlobHash(0xabc));
        for bad in [
            r#"{"Inline":{"len":4,"base64":"/wAH"}}"#,
            r#"{"Inline":{"len":3,"base64":"not base64!"}}"#,
            r#"{"Inline":{"len":3}}"#,
        ] {
            assert!(serde_json::from_str::<Payload>(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<BlobHash>(r#""0xnothex""#).is_err());
    }

    #[test]
    fn calibration_maps_device_time() {
        let c = ClockCalibration {
            runtime: RuntimeId(0),
            host_ns: 1_000,
            device_ns: 50_000,
            device_offset_ns: -49_000,
            uncertainty_ns: 10,
        };
        assert_eq!(c.to_host_ns(50_500), 1_500);
    }

    #[test]
    fn runtime_of_session_records_is_none() {
        let mut rng = Rng(3);
        for k in 0..KINDS {
            let rec = record(&mut rng, k);
            let session = match &rec {
                Record::SessionStart(_)
                | Record::SessionEnd(_)
                | Record::Blob(_)
                | Record::RecordsLost(_)
                | Record::SessionStopped(_)
                | Record::FatalSignal(_)
                | Record::HostClock(_)
                | Record::ThreadName(_)
                | Record::AnnotationName(_)
                | Record::AnnotationRange(_)
                | Record::AnnotationMarker(_)
                | Record::CounterSample(_) => true,
                Record::RecorderWait(wait) => wait.runtime.is_none(),
                _ => false,
            };
            assert_eq!(rec.runtime().is_none(), session, "{}", rec.kind_name());
        }
    }

    #[test]
    fn kind_names_follow_the_variants() {
        let mut rng = Rng(5);
        for k in 0..KINDS {
            let rec = record(&mut rng, k);
            assert_eq!(rec.kind_index() as u64, k);
            assert_eq!(Record::KIND_NAMES[k as usize], rec.kind_name());
        }
    }

    proptest! {
        #[test]
        fn arbitrary_records_round_trip(seed in any::<u64>(), kind in 0..KINDS) {
            let rec = record(&mut Rng(seed), kind);
            prop_assert_eq!(round_trip(&rec), rec);
        }

        #[test]
        fn arbitrary_timings_round_trip(seed in any::<u64>()) {
            let t = Rng(seed).timing();
            prop_assert_eq!(round_trip(&Record::RegionTiming(t)), Record::RegionTiming(t));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = postcard::from_bytes::<Record>(&bytes);
        }
    }
}
