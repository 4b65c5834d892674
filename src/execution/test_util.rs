//! Helpers shared by the execution tests.

use crate::{Buffer, Completion, ExecutableGraph, Placement, Runtime, kernels};
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

/// The NPU threshold kernel (64 bytes at 100) prepared on two NPU-shared buffers of its two
/// memory-bank groups, its input holding 200s: `(input, output, graph)`; a run writes 255s
/// into `output`, the NPU then its last writer.
pub(crate) fn npu_threshold(rt: &Runtime) -> (Buffer, Buffer, ExecutableGraph) {
    let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
    input.write(0, &[200; 64]).unwrap();
    let mut npu = rt.graph();
    npu.npu(&kernel, &[input.whole(), output.whole()]).unwrap();
    (input, output, npu.prepare().unwrap())
}
