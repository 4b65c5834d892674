//! Application annotations: ranges, instant markers and counters in the trace, beside the
//! runtime's own records (NVTX's ranges and marks, Tracy's zones and plots).
//!
//! ```
//! // A range lasts until its guard drops, on the thread that opened it.
//! {
//!     let _decode = hrx::annotate::range("decode");
//!     // ... decode a photograph ...
//! }
//! hrx::annotate::marker("frame ready");
//! hrx::annotate::counter("frames in flight", 3.0);
//! ```
//!
//! They go to the process's trace (the one `HRX_TRACE`, `RuntimeOptions::trace` or
//! `hrx-trace record` opened), whichever runtime is recording into it, and cost one relaxed
//! atomic load and a branch when no trace is open. Recording one costs about what a region's
//! timing costs: a name is interned once per session (an `AnnotationName` record) and cached
//! per thread, so a range is two clock readings, one lookup of its name in the thread's
//! cache and one fixed-size entry in the thread's buffer (`AnnotationRange`). Each record
//! carries the thread's index in the session, whose name and OS thread id are recorded once
//! (`ThreadName`): readers show annotations on the thread's row.
//!
//! A range still open when the process dies of a signal, or when the trace closes (the
//! program exits inside it, the last runtime drops), is not lost: the recorder records it to
//! that moment under the name `NAME (open at end)` (interned with the name, the first time
//! the thread opens a range of it), as Nsight Systems draws an NVTX range left open at the
//! end of its capture. Each thread tracks its innermost 32 open ranges for this (a few
//! relaxed stores at open and close, in its buffer's shared state); ranges further out are
//! not tracked.
//!
//! On CUDA, ranges and markers are also NVTX ranges and marks (Nsight Systems shows them),
//! where `libnvToolsExt` loads; counters are not (NVTX 2 has none).
//!
//! Times are the session's host clock (ns); a counter's value is an `f64` in the
//! application's own unit, held until its next sample.

use hrx_capture::schema as s;
use std::marker::PhantomData;

/// An open range: recorded as an [`s::AnnotationRange`] when dropped. Not `Send`: a range
/// closes on the thread that opened it.
#[must_use = "a range ends when its guard drops: bind it (`let _r = ...`)"]
pub struct Range {
    /// The range in the trace, when one was open.
    open: Option<hrx_capture::OpenRange>,
    /// Its NVTX range, on CUDA (see `crate::nvtx`).
    _nvtx: Option<crate::nvtx::Range>,
    _not_send: PhantomData<*const ()>,
}

/// Opens a range named `name` on the calling thread, closed when the returned guard drops
/// (ranges nest). Nothing is recorded when no trace is open.
#[inline]
pub fn range(name: &str) -> Range {
    let open = if hrx_capture::enabled() {
        open_range(name)
    } else {
        None
    };
    Range {
        open,
        _nvtx: crate::nvtx::range(|| name.to_owned()),
        _not_send: PhantomData,
    }
}

#[inline(never)]
fn open_range(name: &str) -> Option<hrx_capture::OpenRange> {
    hrx_capture::open_range(name)
}

impl Range {
    /// Whether the range is being recorded (a trace was open when it opened).
    pub fn is_recorded(&self) -> bool {
        self.open.is_some()
    }
}

impl Drop for Range {
    #[inline]
    fn drop(&mut self) {
        if let Some(open) = &self.open {
            close_range(open);
        }
    }
}

#[inline(never)]
fn close_range(open: &hrx_capture::OpenRange) {
    hrx_capture::close_range(open);
}

/// Records an instant marker named `name` on the calling thread, now.
#[inline]
pub fn marker(name: &str) {
    if hrx_capture::enabled() {
        record_marker(name);
    }
    crate::nvtx::mark(name);
}

#[inline(never)]
fn record_marker(name: &str) {
    let Some(name) = hrx_capture::annotation_name(name) else {
        return;
    };
    let time_ns = hrx_capture::now_ns();
    hrx_capture::record_on_thread(|thread| {
        s::Record::AnnotationMarker(s::AnnotationMarker {
            thread,
            name,
            time_ns,
        })
    });
}

/// Sets counter `name` to `value` (in the application's unit) now; it holds that value until
/// its next sample.
#[inline]
pub fn counter(name: &str, value: f64) {
    if hrx_capture::enabled() {
        record_counter(name, value);
    }
}

#[inline(never)]
fn record_counter(name: &str, value: f64) {
    let Some(name) = hrx_capture::annotation_name(name) else {
        return;
    };
    let time_ns = hrx_capture::now_ns();
    hrx_capture::record_on_thread(|thread| {
        s::Record::CounterSample(s::CounterSample {
            thread,
            name,
            time_ns,
            value: s::CounterValue(value),
        })
    });
}
