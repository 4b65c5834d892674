//! The runtime's error type.
//!
//! Validation errors (bad bindings, foreign buffers, bad copies) stay distinct from device
//! errors. [`Error::is_device_loss`] is the one place that decides whether a native failure
//! has an uncertain extent: quarantine and poisoning flow from it.

use std::ops::Range;

/// Result alias for the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a kernel or NPU binding was rejected by its contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// The number of bindings differs from the contract.
    #[error("kernel takes {expected} bindings, got {actual}")]
    Count {
        /// Bindings in the contract.
        expected: usize,
        /// Bindings supplied.
        actual: usize,
    },
    /// A binding is shorter than the extent the contract requires.
    #[error("binding {index} is {len_bytes} bytes, the kernel needs at least {extent_bytes}")]
    TooShort {
        /// Binding index.
        index: usize,
        /// Length of the supplied view in bytes.
        len_bytes: usize,
        /// Required extent in bytes.
        extent_bytes: usize,
    },
    /// Allocation address plus view offset is not a multiple of the required alignment.
    #[error("binding {index} at address {address:#x} is not aligned to {alignment} bytes")]
    Misaligned {
        /// Binding index.
        index: usize,
        /// Device (or NPU) address of the view's first byte.
        address: u64,
        /// Required alignment in bytes.
        alignment: usize,
    },
    /// A written binding overlaps another binding of the same operation.
    #[error(
        "binding {written} ({written_access:?}) aliases binding {other} ({other_access:?}) on buffer {buffer} bytes {}..{}",
        range.start, range.end
    )]
    AliasedWrite {
        /// The written binding.
        written: usize,
        /// Its access.
        written_access: crate::Access,
        /// The binding it overlaps.
        other: usize,
        /// That binding's access.
        other_access: crate::Access,
        /// Buffer id.
        buffer: u64,
        /// The overlapping byte range.
        range: Range<usize>,
    },
    /// The NPU binding's device or memory bank differs from the program's.
    #[error("binding {index}: {reason}")]
    Placement {
        /// Binding index.
        index: usize,
        /// What differs.
        reason: String,
    },
}

/// Errors of the hrx runtime.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A validation failure that fits no narrower variant.
    #[error("{0}")]
    Message(String),
    /// The runtime's submission capacity or the graph's slots are exhausted, or a live host
    /// mapping conflicts with the submission. Retry after completions were dropped.
    #[error("busy: {0}")]
    Busy(String),
    /// A native failure of uncertain extent, or use of something it poisoned or quarantined.
    #[error("device lost: {0}")]
    DeviceLost(String),
    /// A kernel reported a failure of known extent: its written bindings are undefined, the
    /// device and the prepared graph stay usable.
    #[error("kernel error: {0}")]
    Kernel(String),
    /// The operation or backend is not available here.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A buffer, kernel, graph or completion of another runtime was used.
    #[error("{what} belongs to another runtime")]
    ForeignRuntime {
        /// What was foreign ("buffer", "kernel", "graph", "completion").
        what: &'static str,
    },
    /// A copy whose ranges differ in length or overlap.
    #[error(
        "copy needs equal, non-overlapping ranges: destination buffer {dst_buffer} bytes {}..{}, source buffer {src_buffer} bytes {}..{}",
        dst.start, dst.end, src.start, src.end
    )]
    InvalidCopy {
        /// Destination buffer id.
        dst_buffer: u64,
        /// Destination byte range.
        dst: Range<usize>,
        /// Source buffer id.
        src_buffer: u64,
        /// Source byte range.
        src: Range<usize>,
    },
    /// A binding rejected by the kernel's contract.
    #[error("invalid binding: {0}")]
    Binding(#[from] BindingError),
    /// `prepare` on a graph without operations.
    #[error("cannot prepare an empty graph")]
    EmptyGraph,
    /// A view or host access outside its buffer.
    #[error("byte range {}..{} is outside buffer {buffer} of {len_bytes} bytes", range.start, range.end)]
    OutOfBounds {
        /// Buffer id.
        buffer: u64,
        /// Requested range.
        range: Range<usize>,
        /// Buffer length in bytes.
        len_bytes: usize,
    },
    /// A submission was cancelled because a producer failed or was cancelled.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// `wait_timeout` ran out before the submission completed.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
}

impl Error {
    /// Whether this error means a native failure of uncertain extent: the prepared graph is
    /// quarantined, the buffers the failed region writes are poisoned and a copy stream is
    /// marked unhealthy. The single decision point for device loss.
    pub fn is_device_loss(&self) -> bool {
        matches!(self, Error::DeviceLost(_))
    }
}
