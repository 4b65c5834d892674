//! NVTX ranges and marks for Nsight Systems (issue 19): on CUDA, hrx's regions and the
//! application's annotations ([`crate::annotate`]) are also pushed as NVTX ranges, so that
//! they appear in Nsight Systems for users who run both.
//!
//! Only when the CUDA backend is in use: a runtime that opens a CUDA device turns it on
//! ([`enable`]), and only when `libnvToolsExt` loads. It is loaded at run time as libcuda
//! is (cudarc's `nvtx` feature with `dynamic-loading`): a missing library is no error, just
//! no NVTX (cudarc would panic on the first call, so it is looked for once, first). Off, a
//! range costs one relaxed atomic load. Without hrx's `cuda` feature this module is
//! compiled out ([`active`] is `false`).
//!
//! A range is pushed and popped on one thread (NVTX's push/pop ranges are per thread):
//! [`Range`] is not `Send`, and a region's range is pushed and popped by the thread that
//! runs it.

use std::marker::PhantomData;

/// Whether NVTX calls are made: a CUDA runtime was opened and `libnvToolsExt` loaded.
#[inline]
pub(crate) fn active() -> bool {
    imp::active()
}

/// Turns NVTX on when `libnvToolsExt` loads (a CUDA device was opened); nothing otherwise.
/// Returns whether it is on.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn enable() -> bool {
    imp::enable()
}

/// An NVTX range pushed on this thread, popped when dropped.
pub(crate) struct Range {
    _not_send: PhantomData<*const ()>,
}

/// Pushes a range named `name` when NVTX is on.
#[inline]
pub(crate) fn range(name: impl FnOnce() -> String) -> Option<Range> {
    if !active() {
        return None;
    }
    imp::push(&name());
    Some(Range {
        _not_send: PhantomData,
    })
}

/// Marks the instant `name` when NVTX is on.
#[inline]
pub(crate) fn mark(name: &str) {
    if active() {
        imp::mark(name);
    }
}

impl Drop for Range {
    fn drop(&mut self) {
        imp::pop();
    }
}

#[cfg(feature = "cuda")]
mod imp {
    use cudarc::nvtx::sys;
    use std::ffi::CString;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    static ON: AtomicBool = AtomicBool::new(false);
    /// Whether `libnvToolsExt` loads, looked for once.
    static PRESENT: OnceLock<bool> = OnceLock::new();

    #[inline]
    pub(super) fn active() -> bool {
        ON.load(Ordering::Relaxed)
    }

    pub(super) fn enable() -> bool {
        // SAFETY: only opens the library (dlopen) to see whether it loads.
        let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
        if present {
            ON.store(true, Ordering::Relaxed);
        }
        present
    }

    /// A C string of `text`, NUL bytes dropped (NVTX takes C strings).
    fn c_string(text: &str) -> CString {
        CString::new(text.replace('\0', "")).unwrap_or_default()
    }

    pub(super) fn push(name: &str) {
        let name = c_string(name);
        // SAFETY: the library is present (`ON` is set only then), `name` is a valid C string
        // that outlives the call.
        unsafe { sys::nvtxRangePushA(name.as_ptr()) };
    }

    pub(super) fn pop() {
        // SAFETY: pushed on this thread by `push` (`Range` is not `Send`).
        unsafe { sys::nvtxRangePop() };
    }

    pub(super) fn mark(name: &str) {
        let name = c_string(name);
        // SAFETY: as in `push`.
        unsafe { sys::nvtxMarkA(name.as_ptr()) };
    }
}

#[cfg(not(feature = "cuda"))]
mod imp {
    #[inline]
    pub(super) fn active() -> bool {
        false
    }
    #[allow(dead_code)]
    pub(super) fn enable() -> bool {
        false
    }
    pub(super) fn push(_: &str) {}
    pub(super) fn pop() {}
    pub(super) fn mark(_: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `libnvToolsExt` is missing (this build machine, a GPU host with CUDA 13 and no
    /// NVTX 2 library), turning NVTX on does nothing and fails nothing, and ranges and marks
    /// are no-ops.
    #[test]
    fn without_the_library_nvtx_stays_off_and_ranges_are_no_ops() {
        let present = enable();
        assert_eq!(active(), present);
        if !present {
            assert!(range(|| "region".into()).is_none());
            mark("marked");
        }
    }
}
