//! Helpers shared by the execution tests.

use crate::{Completion, ExecutableGraph};
use std::sync::atomic::{AtomicBool, Ordering};

/// Submits `graph`, retrying while its slots are `Busy` (another thread's host access or a
/// slot still settling); panics on any other error.
pub(crate) fn submit_when_free(graph: &ExecutableGraph) -> Completion {
    loop {
        match graph.submit() {
            Ok(completion) => return completion,
            Err(crate::Error::Busy(_)) => std::thread::yield_now(),
            Err(error) => panic!("{error}"),
        }
    }
}

/// Sets its flag when dropped, however the thread holding it ends (a panic included), so
/// that the test's other threads stop.
pub(crate) struct SetOnDrop<'a>(pub &'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
