//! The runtime's one host time source.
//!
//! Region start and end times, and the host times backends place device timestamps on, are
//! read here and nowhere else, in ns on the host clock of [`hrx_capture::clock`]: the CPU's
//! invariant TSC where there is one (a read costs a third of an `Instant::now`), calibrated
//! against `CLOCK_MONOTONIC` by every recorder at each flush, else `CLOCK_MONOTONIC` itself.
//! Every recorder's session clock is that same clock less the session's zero, so
//! [`to_session_ns`] is a subtraction and the runtime's readings and the recorder's own are
//! on one time line.

/// Host time in ns on the process's host clock (the `CLOCK_MONOTONIC` time line).
#[inline]
pub(crate) fn now_ns() -> u64 {
    hrx_capture::clock::now_ns()
}

/// A reading of [`now_ns`] on a session clock whose zero is `session_base_ns` on the same
/// clock, in ns (0 for readings before that zero).
pub(crate) fn to_session_ns(process_ns: u64, session_base_ns: u64) -> u64 {
    process_ns.saturating_sub(session_base_ns)
}
