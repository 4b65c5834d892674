//! The runtime's one monotonic time source.
//!
//! Region start and end times, and the host times backends place device timestamps on, are
//! read here and nowhere else, in ns since a process-wide base. A thin wrapper over
//! [`std::time::Instant`] on purpose: the trace's recorder has a clock of its own (each
//! recorder its base), and [`to_session_ns`] maps this clock's readings onto it, so the
//! runtime can later read the recorder's clock directly by changing this file alone.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Host monotonic time in ns since the process-wide base.
pub(crate) fn now_ns() -> u64 {
    base().elapsed().as_nanos() as u64
}

/// A reading of [`now_ns`] on a clock whose zero is `session_base`, in ns (0 for readings
/// before that base).
pub(crate) fn to_session_ns(process_ns: u64, session_base: Instant) -> u64 {
    (base() + Duration::from_nanos(process_ns))
        .saturating_duration_since(session_base)
        .as_nanos() as u64
}
