//! `hipError_t` codes known to hip-runtime-sys 0.1.2 (HIP 5.4 headers), for converting raw
//! codes without undefined behaviour: a raw `i32` is looked up in this table of enum values
//! (each a valid variant, cast to an integer), never transmuted into the enum.

use hip_runtime_sys::hipError_t::{self, *};

/// Every variant of the bindings' `hipError_t`.
pub(super) const KNOWN: &[hipError_t] = &[
    hipSuccess,
    hipErrorInvalidValue,
    hipErrorOutOfMemory,
    hipErrorNotInitialized,
    hipErrorDeinitialized,
    hipErrorProfilerDisabled,
    hipErrorProfilerNotInitialized,
    hipErrorProfilerAlreadyStarted,
    hipErrorProfilerAlreadyStopped,
    hipErrorInvalidConfiguration,
    hipErrorInvalidPitchValue,
    hipErrorInvalidSymbol,
    hipErrorInvalidDevicePointer,
    hipErrorInvalidMemcpyDirection,
    hipErrorInsufficientDriver,
    hipErrorMissingConfiguration,
    hipErrorPriorLaunchFailure,
    hipErrorInvalidDeviceFunction,
    hipErrorNoDevice,
    hipErrorInvalidDevice,
    hipErrorInvalidImage,
    hipErrorInvalidContext,
    hipErrorContextAlreadyCurrent,
    hipErrorMapFailed,
    hipErrorUnmapFailed,
    hipErrorArrayIsMapped,
    hipErrorAlreadyMapped,
    hipErrorNoBinaryForGpu,
    hipErrorAlreadyAcquired,
    hipErrorNotMapped,
    hipErrorNotMappedAsArray,
    hipErrorNotMappedAsPointer,
    hipErrorECCNotCorrectable,
    hipErrorUnsupportedLimit,
    hipErrorContextAlreadyInUse,
    hipErrorPeerAccessUnsupported,
    hipErrorInvalidKernelFile,
    hipErrorInvalidGraphicsContext,
    hipErrorInvalidSource,
    hipErrorFileNotFound,
    hipErrorSharedObjectSymbolNotFound,
    hipErrorSharedObjectInitFailed,
    hipErrorOperatingSystem,
    hipErrorInvalidHandle,
    hipErrorIllegalState,
    hipErrorNotFound,
    hipErrorNotReady,
    hipErrorIllegalAddress,
    hipErrorLaunchOutOfResources,
    hipErrorLaunchTimeOut,
    hipErrorPeerAccessAlreadyEnabled,
    hipErrorPeerAccessNotEnabled,
    hipErrorSetOnActiveProcess,
    hipErrorContextIsDestroyed,
    hipErrorAssert,
    hipErrorHostMemoryAlreadyRegistered,
    hipErrorHostMemoryNotRegistered,
    hipErrorLaunchFailure,
    hipErrorCooperativeLaunchTooLarge,
    hipErrorNotSupported,
    hipErrorStreamCaptureUnsupported,
    hipErrorStreamCaptureInvalidated,
    hipErrorStreamCaptureMerge,
    hipErrorStreamCaptureUnmatched,
    hipErrorStreamCaptureUnjoined,
    hipErrorStreamCaptureIsolation,
    hipErrorStreamCaptureImplicit,
    hipErrorCapturedEvent,
    hipErrorStreamCaptureWrongThread,
    hipErrorGraphExecUpdateFailure,
    hipErrorUnknown,
    hipErrorRuntimeMemory,
    hipErrorRuntimeOther,
    hipErrorTbd,
];

/// The bindings' variant whose value is `code`, or `None` for a code they do not know (a newer
/// or older HIP than the headers they were generated from).
pub(super) fn known(code: i32) -> Option<hipError_t> {
    KNOWN
        .iter()
        .copied()
        .find(|&k| k as u32 as i64 == i64::from(code))
}
