//! The replay-planning fuzz entry, shared by the `plan` fuzz target and by
//! `replay/tests/corpus.rs`, which replays the committed corpus through it in CI.
//!
//! An input is a trace as `read.rs` describes it (a mode byte, then the file). The trace is
//! read, then replayed on the HIP backend, which this build does not have: `hrx_replay::replay`
//! plans the whole trace (buffers, kernels, graphs, regions, submissions, expected outputs,
//! every consistency check on the untrusted records) and then fails to open the runtime,
//! so planning runs to completion without executing anything. Checked: no panic, and the
//! answer is an error (never a report: nothing was executed).

use hrx::BackendChoice;
use hrx_capture::Trace;
use hrx_replay::{ReplayError, ReplayOptions, replay};

/// Plans the replay of the trace `input` describes; returns whether planning succeeded
/// (the replay then stopped at the missing backend).
///
/// # Panics
///
/// On any violated property: that is the finding.
pub fn plan(input: &[u8]) -> bool {
    let Some(file) = super::read::file_of(input) else {
        return false;
    };
    let Ok(trace) = Trace::from_bytes(&file) else {
        return false;
    };
    let options = ReplayOptions::default().backend(BackendChoice::Hip);
    match replay(&trace, &options) {
        Ok(report) => panic!("replayed without a backend: {:?}", report.verdict),
        // A trace without submissions was planned whole before it was found empty.
        Err(ReplayError::Runtime { .. } | ReplayError::NoSubmissions { .. }) => true,
        Err(
            ReplayError::Unreplayable { .. }
            | ReplayError::BlobMissing { .. }
            | ReplayError::KernelMissing { .. },
        ) => false,
        Err(other) => panic!("planning answered {other}"),
    }
}
