//! NVTX ranges and marks for Nsight Systems (issue 19): on CUDA, hrx's regions and the
//! application's annotations ([`crate::annotate`]) are also pushed as NVTX ranges, so that
//! they appear in Nsight Systems for users who run both.
//!
//! Only when the CUDA backend is in use: a runtime that opens a CUDA device turns it on
//! ([`enable`]), and only when a tool listens:
//! - a tool named by `NVTX_INJECTION64_PATH`, attached through NVTX 3's injection protocol
//!   ([`injection`]): what Nsight Systems and Nsight Compute's `--nvtx` set, and the only way
//!   on CUDA 13, which ships no `libnvToolsExt`;
//! - otherwise `libnvToolsExt` (NVTX 2, CUDA 12 and older), loaded at run time as libcuda is
//!   (cudarc's `nvtx` feature with `dynamic-loading`): a missing library is no error, just
//!   no NVTX (cudarc would panic on the first call, so it is looked for once, first).
//!
//! Off, a range costs one relaxed atomic load. Without hrx's `cuda` feature this module is
//! compiled out ([`active`] is `false`).
//!
//! A range is pushed and popped on one thread (NVTX's push/pop ranges are per thread):
//! [`Range`] is not `Send`, and a region's range is pushed and popped by the thread that
//! runs it.

use std::marker::PhantomData;

#[cfg(feature = "cuda")]
mod injection;

/// Whether NVTX calls are made: a CUDA runtime was opened and a tool or `libnvToolsExt` loaded.
#[inline]
pub(crate) fn active() -> bool {
    imp::active()
}

/// Turns NVTX on when a tool attaches or `libnvToolsExt` loads (a CUDA device was opened);
/// nothing otherwise.
/// Returns whether it is on.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn enable() -> bool {
    imp::enable()
}

/// An NVTX range pushed on this thread, popped when dropped.
pub(crate) struct Range {
    _not_send: PhantomData<*const ()>,
}

/// Pushes a range named `name` when NVTX is on; `None` when nothing was pushed (then
/// nothing is popped).
#[inline]
pub(crate) fn range(name: impl FnOnce() -> String) -> Option<Range> {
    if !active() || !imp::push(&name()) {
        return None;
    }
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
    use super::injection::{INJECTION_PATH_VAR, Tool};
    use cudarc::nvtx::sys;
    use std::ffi::CString;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Where NVTX calls go.
    enum Sink {
        /// A tool attached through NVTX 3's injection protocol (`NVTX_INJECTION64_PATH`).
        Tool(Tool),
        /// `libnvToolsExt` (NVTX 2, CUDA 12 and older), through cudarc.
        Library,
    }

    static ON: AtomicBool = AtomicBool::new(false);
    /// Where NVTX calls go, looked for once; `None` when nowhere.
    static SINK: OnceLock<Option<Sink>> = OnceLock::new();

    #[inline]
    pub(super) fn active() -> bool {
        ON.load(Ordering::Relaxed)
    }

    /// A tool named by `NVTX_INJECTION64_PATH` first (what Nsight Systems and Nsight Compute
    /// set, and all a CUDA 13 host offers), then `libnvToolsExt`. A tool that does not load
    /// is said once on stderr, as the program's NVTX ranges would be missing from the tool's
    /// report without a word otherwise.
    fn find() -> Option<Sink> {
        if let Some(path) = std::env::var_os(INJECTION_PATH_VAR).filter(|p| !p.is_empty()) {
            match Tool::load(&path) {
                Ok(tool) => return Some(Sink::Tool(tool)),
                Err(err) => {
                    crate::error::to_stderr(format_args!("hrx: warning: no NVTX ranges: {err}"))
                }
            }
        }
        // SAFETY: only opens the library (dlopen) to see whether it loads.
        unsafe { sys::is_culib_present() }.then_some(Sink::Library)
    }

    pub(super) fn enable() -> bool {
        let present = SINK.get_or_init(find).is_some();
        if present {
            ON.store(true, Ordering::Relaxed);
        }
        present
    }

    /// A C string of `text`, NUL bytes dropped (NVTX takes C strings).
    fn c_string(text: &str) -> CString {
        CString::new(text.replace('\0', "")).unwrap_or_default()
    }

    /// Whether a push was sent.
    pub(super) fn push(name: &str) -> bool {
        let name = c_string(name);
        match SINK.get() {
            Some(Some(Sink::Tool(tool))) => tool.push(&name),
            // SAFETY: the library is present (the sink is `Library` only then), `name` is a
            // valid C string that outlives the call.
            Some(Some(Sink::Library)) => unsafe {
                sys::nvtxRangePushA(name.as_ptr());
                true
            },
            _ => false,
        }
    }

    pub(super) fn pop() {
        match SINK.get() {
            Some(Some(Sink::Tool(tool))) => tool.pop(),
            // SAFETY: pushed on this thread by `push` (`Range` is not `Send`).
            Some(Some(Sink::Library)) => unsafe {
                sys::nvtxRangePop();
            },
            _ => {}
        }
    }

    pub(super) fn mark(name: &str) {
        let name = c_string(name);
        match SINK.get() {
            Some(Some(Sink::Tool(tool))) => tool.mark(&name),
            // SAFETY: as in `push`.
            Some(Some(Sink::Library)) => unsafe {
                sys::nvtxMarkA(name.as_ptr());
            },
            _ => {}
        }
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
    pub(super) fn push(_: &str) -> bool {
        false
    }
    pub(super) fn pop() {}
    pub(super) fn mark(_: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where no tool listens (no `NVTX_INJECTION64_PATH`) and `libnvToolsExt` is missing (this
    /// build machine, a GPU host with CUDA 13), turning NVTX on does nothing and fails
    /// nothing, and ranges and marks are no-ops.
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
