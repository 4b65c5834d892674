//! CUDA driver results and the backend's one mapping from a `CUresult` to an [`Error`].

use crate::{DeviceCall, DeviceError, Error};
use cudarc::driver::sys::CUresult;

/// A failed driver call: its name and result code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CuError {
    /// The driver function, e.g. `cuMemAlloc_v2`.
    pub call: &'static str,
    /// What it returned.
    pub code: CUresult,
}

pub(super) type CuResult<T> = std::result::Result<T, CuError>;

pub(super) fn check(call: &'static str, code: CUresult) -> CuResult<()> {
    match code {
        CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(CuError { call, code }),
    }
}

/// Whether `code` is a sticky error of uncertain extent: the context is corrupted and device
/// memory written by in-flight work is undefined. Every kernel fault is one.
fn is_uncertain(code: CUresult) -> bool {
    use CUresult::*;
    is_kernel_fault(code)
        || matches!(
            code,
            CUDA_ERROR_ECC_UNCORRECTABLE
                | CUDA_ERROR_NVLINK_UNCORRECTABLE
                | CUDA_ERROR_CONTAINED
                | CUDA_ERROR_TENSOR_MEMORY_LEAK
                | CUDA_ERROR_EXTERNAL_DEVICE
                | CUDA_ERROR_CONTEXT_IS_DESTROYED
                | CUDA_ERROR_DEINITIALIZED
                | CUDA_ERROR_MPS_CONNECTION_FAILED
                | CUDA_ERROR_MPS_RPC_FAILURE
                | CUDA_ERROR_MPS_CLIENT_TERMINATED
                | CUDA_ERROR_UNKNOWN
        )
}

/// Whether `code` says a kernel faulted (a sticky error, part of [`is_uncertain`]).
fn is_kernel_fault(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
    )
}

/// The one decision from a driver error to an [`Error`] (a [`DeviceError`] naming the call
/// and the CUDA code): kernel faults and other sticky errors are device losses
/// ([`Error::is_device_loss`]); out of memory, invalid arguments and unsupported calls keep
/// their kind; the rest is [`DeviceError::Other`].
pub(crate) fn map_error(error: CuError) -> Error {
    use CUresult::*;
    let CuError { call, code } = error;
    let uncertain = is_uncertain(code);
    let device_call = DeviceCall {
        backend: "CUDA",
        call,
        code: code as i64,
        name: format!("{code:?}"),
        // The driver's rule for its sticky codes ("To continue using CUDA, the process must
        // be terminated and relaunched", documented for the kernel faults; the others leave
        // the context so): a fresh runtime of this process fails the same way.
        detail: if is_kernel_fault(code) {
            format!(
                "{}CUDA cannot be used again in this process (the driver's rule for a kernel \
                 fault: the process must end)",
                DeviceCall::STICKY
            )
        } else if uncertain {
            format!(
                "{}the CUDA context cannot be used again, nor may CUDA in this process",
                DeviceCall::STICKY
            )
        } else {
            String::new()
        },
    };
    match code {
        code if is_kernel_fault(code) => DeviceError::KernelFault(device_call),
        _ if uncertain => DeviceError::Lost(device_call),
        CUDA_ERROR_OUT_OF_MEMORY => DeviceError::OutOfMemory(device_call),
        CUDA_ERROR_INVALID_VALUE
        | CUDA_ERROR_INVALID_HANDLE
        | CUDA_ERROR_INVALID_DEVICE
        | CUDA_ERROR_INVALID_CONTEXT
        | CUDA_ERROR_INVALID_IMAGE
        | CUDA_ERROR_INVALID_PTX
        | CUDA_ERROR_INVALID_SOURCE
        | CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        | CUDA_ERROR_NOT_FOUND => DeviceError::InvalidArgument(device_call),
        CUDA_ERROR_NOT_SUPPORTED
        | CUDA_ERROR_NOT_PERMITTED
        | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | CUDA_ERROR_NO_BINARY_FOR_GPU => DeviceError::Unsupported(device_call),
        _ => DeviceError::Other(device_call),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use CUresult::*;

    #[test]
    fn error_mapping_table() {
        let map = |code| {
            map_error(CuError {
                call: "cuTest",
                code,
            })
        };
        for code in [
            CUDA_ERROR_ILLEGAL_ADDRESS,
            CUDA_ERROR_LAUNCH_FAILED,
            CUDA_ERROR_MISALIGNED_ADDRESS,
            CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUDA_ERROR_ECC_UNCORRECTABLE,
            CUDA_ERROR_ASSERT,
            CUDA_ERROR_UNKNOWN,
        ] {
            let error = map(code);
            assert!(error.is_device_loss(), "{code:?} -> {error}");
            assert!(error.to_string().contains(&format!("{code:?}")), "{error}");
            assert!(error.to_string().contains("cuTest"), "{error}");
            // A reader of the recorded text knows a replay of it cannot go on in-process.
            assert!(DeviceCall::is_sticky_loss(&error.to_string()), "{error}");
        }
        assert!(
            map(CUDA_ERROR_ILLEGAL_ADDRESS)
                .to_string()
                .contains("CUDA cannot be used again in this process"),
        );
        assert!(!DeviceCall::is_sticky_loss(
            &map(CUDA_ERROR_OUT_OF_MEMORY).to_string()
        ));
        assert!(matches!(
            map(CUDA_ERROR_ILLEGAL_ADDRESS),
            Error::Device(DeviceError::KernelFault(_))
        ));
        assert!(matches!(
            map(CUDA_ERROR_ECC_UNCORRECTABLE),
            Error::Device(DeviceError::Lost(_))
        ));
        let oom = map(CUDA_ERROR_OUT_OF_MEMORY);
        assert!(
            matches!(&oom, Error::Device(DeviceError::OutOfMemory(c)) if c.call == "cuTest" && c.name == "CUDA_ERROR_OUT_OF_MEMORY"),
            "{oom}"
        );
        assert!(!oom.is_device_loss());
        assert!(oom.to_string().starts_with("out of device memory"), "{oom}");
        for code in [
            CUDA_ERROR_INVALID_VALUE,
            CUDA_ERROR_INVALID_HANDLE,
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            CUDA_ERROR_INVALID_PTX,
            CUDA_ERROR_NOT_FOUND,
        ] {
            let error = map(code);
            assert!(
                matches!(&error, Error::Device(DeviceError::InvalidArgument(c)) if c.code == code as i64),
                "{code:?} -> {error}"
            );
            assert!(
                error
                    .to_string()
                    .contains(&format!("CUDA cuTest failed: {code:?}")),
                "{error}"
            );
        }
        assert!(matches!(
            map(CUDA_ERROR_NOT_SUPPORTED),
            Error::Device(DeviceError::Unsupported(_))
        ));
    }
}
