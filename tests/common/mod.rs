//! Shared test helpers.

use hrx::{BackendChoice, NpuBackendChoice, Runtime, RuntimeOptions};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

/// A gate for a callback: the wait it calls returns once the sender sends (or is dropped),
/// or after `limit`, so that a test that fails never hangs on it.
pub fn gate(limit: Duration) -> (mpsc::Sender<()>, impl Fn() + Send + Sync + 'static) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let wait = move || {
        let _ = gate.lock().unwrap().recv_timeout(limit);
    };
    (release, wait)
}

/// The backends the conformance suite runs on: `sim`, plus `HRX_TEST_BACKENDS` (GPU backends
/// `cuda`, `hip`; `xrt` is the software GPU with the XRT NPU).
pub fn backends() -> Vec<RuntimeOptions> {
    let mut choices = vec![(BackendChoice::Sim, NpuBackendChoice::Sim)];
    if let Ok(list) = std::env::var("HRX_TEST_BACKENDS") {
        for name in list.split(',').filter(|n| !n.is_empty()) {
            let choice = if name.eq_ignore_ascii_case("xrt") {
                (BackendChoice::Sim, NpuBackendChoice::Xrt)
            } else {
                let gpu: BackendChoice = name.parse().expect("HRX_TEST_BACKENDS names a backend");
                (gpu, NpuBackendChoice::Sim)
            };
            if !choices.contains(&choice) {
                choices.push(choice);
            }
        }
    }
    choices
        .into_iter()
        .map(|(gpu, npu)| RuntimeOptions::default().backend(gpu).npu_backend(npu))
        .collect()
}

/// A runtime per conformance backend, with `configure` applied to its options.
pub fn runtimes(configure: impl Fn(RuntimeOptions) -> RuntimeOptions) -> Vec<Runtime> {
    backends()
        .into_iter()
        .map(|options| Runtime::new(configure(options)).expect("backend opens"))
        .collect()
}

/// Declares a test that runs its body once per conformance backend.
macro_rules! conformance {
    ($(#[$meta:meta])* fn $name:ident($rt:ident) $body:block) => {
        $(#[$meta])*
        #[test]
        fn $name() {
            for $rt in crate::common::runtimes(|o| o) {
                eprintln!("backend: {} (NPU {})", $rt.device_info().backend, $rt.npu_info().backend);
                $body
            }
        }
    };
}

/// Bytes as little-endian u32s.
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// u32s as little-endian bytes.
pub fn bytes_of(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A recorder with default options writing into memory, and its sink (read it with
/// `hrx_capture::Trace::from_bytes(&sink.contents())` once the recorder is closed).
pub fn memory_recorder() -> (hrx_capture::Recorder, hrx_capture::MemorySink) {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    (recorder, sink)
}

/// Each region of `regions` (`ExecutableGraph::describe`) as (queue, kind, its nodes): the
/// shape the lowering tests compare.
pub fn region_shapes(
    regions: &[hrx::RegionInfo],
) -> Vec<(hrx::Queue, hrx::RegionKind, std::ops::Range<usize>)> {
    regions
        .iter()
        .map(|r| (r.queue, r.kind, r.nodes.clone()))
        .collect()
}
