//! The backend's one mapping from a raw HIP result code to an [`Error`].

use super::api::HipError;
use super::codes;
use crate::{DeviceCall, DeviceError, Error};
use hip_runtime_sys as sys;

/// The name of a raw HIP result code: the bindings' variant name, or a description of a code
/// they do not know.
pub(crate) fn code_name(code: i32) -> String {
    match codes::known(code) {
        Some(known) => format!("{known:?}"),
        None => format!(
            "unknown hipError_t {code} (not in the HIP 5.4 headers of hip-runtime-sys 0.1.2)"
        ),
    }
}

/// Whether `code` is a sticky error of uncertain extent. Codes the bindings do not know are
/// treated as uncertain: nothing says what they left behind.
fn is_uncertain(code: i32) -> bool {
    use sys::hipError_t::*;
    match codes::known(code) {
        None => true,
        Some(known) => matches!(
            known,
            hipErrorIllegalAddress
                | hipErrorLaunchFailure
                | hipErrorLaunchTimeOut
                | hipErrorAssert
                | hipErrorECCNotCorrectable
                | hipErrorContextIsDestroyed
                | hipErrorDeinitialized
                | hipErrorIllegalState
                | hipErrorUnknown
                | hipErrorRuntimeOther
        ),
    }
}

/// The one decision from a HIP error to an [`Error`] (a [`DeviceError`] naming the call and
/// the code): kernel faults and other sticky or unknown codes are device losses
/// ([`Error::is_device_loss`]); out of memory, invalid arguments and unsupported calls keep
/// their kind; the rest is [`DeviceError::Other`].
pub(crate) fn map_error(error: HipError) -> Error {
    use sys::hipError_t::*;
    let HipError { call, code } = error;
    let uncertain = is_uncertain(code);
    let device_call = DeviceCall {
        backend: "HIP",
        call,
        code: i64::from(code),
        name: code_name(code),
        // Taken to follow CUDA's rule (`DeviceCall::STICKY`): not measured, no AMD GPU here.
        detail: if uncertain {
            format!(
                "{}the HIP device may not be usable again in this process",
                DeviceCall::STICKY
            )
        } else {
            String::new()
        },
    };
    match codes::known(code) {
        Some(
            hipErrorIllegalAddress | hipErrorLaunchFailure | hipErrorLaunchTimeOut | hipErrorAssert,
        ) => DeviceError::KernelFault(device_call),
        _ if uncertain => DeviceError::Lost(device_call),
        Some(hipErrorOutOfMemory) => DeviceError::OutOfMemory(device_call),
        Some(
            hipErrorInvalidValue
            | hipErrorInvalidHandle
            | hipErrorInvalidDevice
            | hipErrorInvalidContext
            | hipErrorInvalidImage
            | hipErrorInvalidDeviceFunction
            | hipErrorInvalidDevicePointer
            | hipErrorInvalidConfiguration
            | hipErrorLaunchOutOfResources
            | hipErrorNotFound,
        ) => DeviceError::InvalidArgument(device_call),
        Some(hipErrorNotSupported | hipErrorNoBinaryForGpu) => {
            DeviceError::Unsupported(device_call)
        }
        _ => DeviceError::Other(device_call),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_codes_convert_by_lookup_and_unknown_ones_without_ub() {
        assert_eq!(codes::known(0), Some(sys::hipError_t::hipSuccess));
        assert_eq!(codes::known(100), Some(sys::hipError_t::hipErrorNoDevice));
        assert_eq!(
            codes::known(700),
            Some(sys::hipError_t::hipErrorIllegalAddress)
        );
        // Values no variant has: a code newer than the bindings, a negative one, the gap.
        for code in [5000, -1, 1055, i32::MAX, i32::MIN] {
            assert_eq!(codes::known(code), None, "{code}");
            let name = code_name(code);
            assert!(
                name.contains(&format!("unknown hipError_t {code}")),
                "{name}"
            );
            let error = map_error(HipError {
                call: "hipTest",
                code,
            });
            assert!(
                error.is_device_loss(),
                "unknown codes are uncertain: {error}"
            );
            assert!(error.to_string().contains("hipTest"), "{error}");
        }
        // Every variant round-trips through its integer value.
        for &variant in codes::KNOWN {
            let code = variant as u32 as i32;
            assert_eq!(codes::known(code), Some(variant));
        }
    }

    #[test]
    fn error_mapping_table() {
        let map = |code: sys::hipError_t| {
            map_error(HipError {
                call: "hipTest",
                code: code as u32 as i32,
            })
        };
        use sys::hipError_t::*;
        for code in [
            hipErrorIllegalAddress,
            hipErrorLaunchFailure,
            hipErrorAssert,
            hipErrorECCNotCorrectable,
            hipErrorUnknown,
        ] {
            let error = map(code);
            assert!(error.is_device_loss(), "{code:?} -> {error}");
            assert!(error.to_string().contains(&format!("{code:?}")), "{error}");
        }
        assert!(matches!(
            map(hipErrorIllegalAddress),
            Error::Device(DeviceError::KernelFault(_))
        ));
        let oom = map(hipErrorOutOfMemory);
        assert!(
            matches!(&oom, Error::Device(DeviceError::OutOfMemory(c)) if c.call == "hipTest"),
            "{oom}"
        );
        assert!(oom.to_string().starts_with("out of device memory"), "{oom}");
        for code in [
            hipErrorInvalidValue,
            hipErrorInvalidHandle,
            hipErrorNotFound,
        ] {
            let error = map(code);
            assert!(
                matches!(&error, Error::Device(DeviceError::InvalidArgument(_))),
                "{code:?} -> {error}"
            );
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("invalid argument: HIP hipTest failed: {code:?}")),
                "{code:?} -> {error}"
            );
        }
        let other = map(hipErrorHostMemoryAlreadyRegistered);
        assert!(
            matches!(&other, Error::Device(DeviceError::Other(_))) && !other.is_device_loss(),
            "{other}"
        );
    }
}
