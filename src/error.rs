//! The runtime's error type.
//!
//! Validation errors (bad bindings, foreign buffers, bad copies) stay distinct from device
//! errors: a failed vendor call is a [`DeviceError`] (out of memory, lost, kernel fault,
//! invalid argument, unsupported, other) carrying the backend, the call and the vendor's
//! code, made by one mapping function per backend (`map_error` in `gpu::cuda`, `gpu::hip`,
//! `npu::xrt`). [`Error`] keeps the seed's variants (`Message`, `Busy`, `DeviceLost`,
//! `Unsupported`, ...) and wraps device errors as [`Error::Device`].
//! [`Error::is_device_loss`] is the one place that decides whether an error has an
//! uncertain extent: quarantine and poisoning flow from it, through the region's
//! `uncertain` (`execution::region`), which adds the seed's one rule by kind: every error of
//! a scoped native callback is uncertain, whatever its variant, and is answered as it is.

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
    #[error(
        "binding {index}: {allocation} allocation does not satisfy kernel alignment: address {address:#x} is not aligned to {alignment} bytes"
    )]
    Misaligned {
        /// Binding index.
        index: usize,
        /// Whose allocation: `"GPU"` ([`crate::Graph::gpu`]) or `"NPU"` (the buffer object,
        /// [`crate::Graph::npu`]).
        allocation: &'static str,
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
}

/// The device call that failed: which backend, which vendor function, and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCall {
    /// The backend ("CUDA", "HIP", "XRT", "sim").
    pub backend: &'static str,
    /// The vendor function, e.g. `cuMemAlloc_v2`, `hipGraphLaunch`.
    pub call: &'static str,
    /// The vendor's result code (`CUresult`, `hipError_t`, an XRT shim status), as a number;
    /// 0 where no vendor call returned one (the software device), and then not displayed.
    pub code: i64,
    /// The code's vendor name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
    pub name: String,
    /// What else the vendor said (an exception message, a sticky-state note); may be empty.
    pub detail: String,
}

impl std::fmt::Display for DeviceCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} failed: {}", self.backend, self.call, self.name)?;
        // No vendor returns 0 for a failure (the software device's own limits do): a `(0)`
        // read as a limit of zero (a fresh-user pass: "over HRX_SIM_MEMORY (0)").
        if self.code != 0 {
            write!(f, " ({})", self.code)?;
        }
        if !self.detail.is_empty() {
            write!(f, "; {}", self.detail)?;
        }
        Ok(())
    }
}

impl DeviceCall {
    /// How [`DeviceCall::detail`] starts for a vendor's sticky error: a device loss after
    /// which the device may not be used again in this process. CUDA documents for its
    /// kernel faults: "This leaves the process in an inconsistent state and any further CUDA
    /// work will return the same error. To continue using CUDA, the process must be
    /// terminated and relaunched." (On an H100, session 56: after a fault, every runtime
    /// dropped and the primary context released, `cuDevicePrimaryCtxRetain` answered the
    /// same `CUDA_ERROR_ILLEGAL_ADDRESS`.)
    pub const STICKY: &'static str = "sticky: ";

    /// Whether `error`, an [`Error`]'s display text as a trace records it, is a device loss
    /// of a sticky vendor error ([`DeviceCall::STICKY`]): a process that reproduces it, a
    /// replay's, cannot use that device again.
    pub fn is_sticky_loss(error: &str) -> bool {
        error.starts_with("device lost:")
            && error
                .split("; ")
                .skip(1)
                .any(|part| part.starts_with(Self::STICKY))
    }
}

/// A failed device call, classified by one mapping function per backend (`map_error` in
/// `gpu::cuda`, `gpu::hip`, `npu::xrt`). Only [`DeviceError::Lost`] and
/// [`DeviceError::KernelFault`] are failures of uncertain extent ([`Error::is_device_loss`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The device (or pinned host memory) is out of memory. Nothing was changed.
    #[error("out of device memory: {0}")]
    OutOfMemory(DeviceCall),
    /// The device or its context is unusable (ECC, reset, driver deinitialized, unknown
    /// sticky errors): what in-flight work wrote is undefined.
    #[error("device lost: {0}")]
    Lost(DeviceCall),
    /// A kernel faulted (illegal address, illegal instruction, launch failure, timeout).
    /// CUDA and HIP make these sticky for the whole context: an uncertain failure.
    #[error("device lost: kernel fault: {0}")]
    KernelFault(DeviceCall),
    /// The driver rejected an argument (a bug above the backend or a limit of the device).
    #[error("invalid argument: {0}")]
    InvalidArgument(DeviceCall),
    /// The device or driver does not support the call.
    #[error("unsupported: {0}")]
    Unsupported(DeviceCall),
    /// Any other failed call: known extent, the device stays usable.
    #[error("{0}")]
    Other(DeviceCall),
}

impl DeviceError {
    /// The failed call.
    pub fn call(&self) -> &DeviceCall {
        match self {
            DeviceError::OutOfMemory(c)
            | DeviceError::Lost(c)
            | DeviceError::KernelFault(c)
            | DeviceError::InvalidArgument(c)
            | DeviceError::Unsupported(c)
            | DeviceError::Other(c) => c,
        }
    }
}

/// Errors of the hrx runtime.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A validation failure that fits no narrower variant.
    #[error("{0}")]
    Message(String),
    /// An `HRX_` environment variable the runtime reads as it starts holds a value it does
    /// not take: the line names the variable (`HRX_BACKEND: expected auto, sim, cuda or hip,
    /// got "x"`), and is the whole message, as a command-line flag's error is.
    #[error("{0}")]
    Variable(String),
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
        "copy needs equal, nonoverlapping ranges: destination buffer {dst_buffer} bytes {}..{}, source buffer {src_buffer} bytes {}..{}",
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
    Binding(BindingError),
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
    /// A device call failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Without a `source`: the message already holds the binding error's, which a chain of
/// causes printed again (`invalid binding: X: X`).
impl From<BindingError> for Error {
    fn from(error: BindingError) -> Self {
        Error::Binding(error)
    }
}

impl Error {
    /// Whether this error means a native failure of uncertain extent: the prepared graph is
    /// quarantined, the buffers the failed region writes are poisoned and a copy stream is
    /// marked unhealthy. The single decision point for device loss.
    pub fn is_device_loss(&self) -> bool {
        matches!(
            self,
            Error::DeviceLost(_)
                | Error::Device(DeviceError::Lost(_) | DeviceError::KernelFault(_))
        )
    }
}

/// Writes one line of the runtime's own (a fallback, a file it cannot trace to) on standard
/// error. A standard error that cannot be written (closed, a full disk) loses the line:
/// `eprintln!` would panic there, inside the program that uses hrx.
pub(crate) fn to_stderr(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    // Formatted first and written in one `write`: `writeln!` on unbuffered standard error
    // writes each piece apart, and another line (a signal handler's, `hrx-trace`'s
    // interruption) could land between them, on the same line.
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded device loss is told sticky by its vendor's note wherever the note lies (a
    /// later loss names the first inside its text), in the wording traces of earlier
    /// versions hold too; an injected loss, a loss of known cause and other errors are not.
    #[test]
    fn a_sticky_loss_is_told_from_its_recorded_text() {
        let cuda = "device lost: kernel fault: CUDA cuStreamSynchronize failed: \
                    CUDA_ERROR_ILLEGAL_ADDRESS (700); sticky: CUDA cannot be used again in this \
                    process (the driver's rule for a kernel fault: the process must end)";
        let earlier = "device lost: kernel fault: CUDA cuStreamSynchronize failed: \
                       CUDA_ERROR_ILLEGAL_ADDRESS (700); sticky: the CUDA context is unusable \
                       until every runtime on the device is dropped";
        let later = format!("device lost: CUDA device 0 was lost earlier: {cuda}");
        for sticky in [cuda, earlier, &later] {
            assert!(DeviceCall::is_sticky_loss(sticky), "{sticky}");
        }
        for not in [
            "device lost: injected fault: op 7",
            "device lost: graph quarantined after native failure (graph 3)",
            "kernel error: hrx_fail: deliberate kernel error; sticky: no",
            "out of device memory: CUDA cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
            "device lost: a note that says sticky: inside a sentence",
        ] {
            assert!(!DeviceCall::is_sticky_loss(not), "{not}");
        }
    }

    /// An error and its causes as `anyhow`'s `{:#}` prints them: joined by `: `.
    fn chain(error: &Error) -> String {
        let mut said = error.to_string();
        let mut cause = std::error::Error::source(error);
        while let Some(c) = cause {
            said = format!("{said}: {c}");
            cause = c.source();
        }
        said
    }

    /// A device error or a binding error is said once in the chain of causes: `hrx-trace
    /// record` printed "out of device memory: sim alloc failed: ...: out of device
    /// memory: sim alloc failed: ..." (the message, then its source, the same text). The
    /// software device's code (0, no vendor's) is not displayed.
    #[test]
    fn a_device_or_binding_error_is_said_once_in_its_chain() {
        let device = Error::from(DeviceError::OutOfMemory(DeviceCall {
            backend: "sim",
            call: "alloc",
            code: 0,
            name: "over HRX_SIM_MEMORY".into(),
            detail: "allocating 8192 bytes".into(),
        }));
        assert_eq!(
            chain(&device).matches("allocating 8192 bytes").count(),
            1,
            "{}",
            chain(&device)
        );
        assert!(!chain(&device).contains("(0)"), "{}", chain(&device));
        let binding = Error::from(BindingError::Count {
            expected: 2,
            actual: 3,
        });
        assert_eq!(
            chain(&binding),
            "invalid binding: kernel takes 2 bindings, got 3"
        );
    }
}
