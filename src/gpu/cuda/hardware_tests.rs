//! Tests on a real NVIDIA GPU, skipped unless `HRX_CUDA_HARDWARE` is set: every built-in
//! kernel against its host implementation, graph nodes on both placements, and (only with
//! `HRX_CUDA_HARDWARE=fault`, in a process of its own) the faulting kernel.
//!
//! ```text
//! HRX_CUDA_HARDWARE=1 cargo test -p hrx --lib gpu::cuda::hardware_tests -- --skip hardware_fault
//! HRX_CUDA_HARDWARE=fault cargo test -p hrx --lib gpu::cuda::hardware_tests::hardware_fault
//! ```

use super::*;
use crate::RuntimeOptions;
use crate::gpu::{Allocation, NativeDevice, View};
use crate::kernels::KernelSpec;

/// One hardware test at a time: CUPTI, which `hardware_kernel_times` turns on for the whole
/// process, is attached while other tests' threads launch work when they run in parallel, and
/// the parallel run crashed in 2 of 4 tries on the H200 (BENCHMARKS.md, session 20).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether hardware tests run: `HRX_CUDA_HARDWARE` set (to `fault` for the faulting one).
fn hardware(fault: bool) -> bool {
    match std::env::var("HRX_CUDA_HARDWARE") {
        Ok(value) if !fault || value == "fault" => true,
        _ => {
            eprintln!(
                "skipped: set HRX_CUDA_HARDWARE={} on a machine with an NVIDIA GPU",
                if fault { "fault" } else { "1" }
            );
            false
        }
    }
}

/// Deterministic pseudo-random bytes (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next_u32() >> 24) as u8).collect()
    }
    /// `n` finite floats in about ±5000 (no NaN payloads to compare).
    fn floats(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|_| {
                let unit = self.next_u32() as f32 / u32::MAX as f32 - 0.5;
                (unit * 1e4).to_le_bytes()
            })
            .collect()
    }
}

/// Runs `spec` on the host implementation over copies of `inputs`.
fn run_on_host(spec: &KernelSpec, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let host = crate::kernels::builtin_code(&spec.entry)
        .unwrap()
        .host
        .unwrap();
    // u32 storage: the host implementations check 4-byte alignment.
    let mut memory: Vec<Vec<u32>> = inputs
        .iter()
        .map(|b| vec![0u32; b.len().div_ceil(4).max(1)])
        .collect();
    let bindings: Vec<crate::kernels::HostBinding> = memory
        .iter_mut()
        .zip(inputs)
        .map(|(words, bytes)| {
            let ptr: *mut u8 = words.as_mut_ptr().cast();
            // SAFETY: `words` holds at least `bytes.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
            crate::kernels::HostBinding {
                ptr,
                len: bytes.len(),
            }
        })
        .collect();
    host(&crate::kernels::HostLaunch {
        entry: &spec.entry,
        grid: spec.grid,
        block: spec.block,
        constants: &spec.contract.constants,
        bindings: &bindings,
    })
    .unwrap();
    bindings
        .iter()
        // SAFETY: each binding is `len` live bytes of `memory`.
        .map(|b| unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec())
        .collect()
}

/// Runs `spec` on CUDA in a native graph over `inputs` (binding `i` host-visible when bit
/// `i` of `mapped` is set) and reads every binding back.
fn run_on_cuda(
    device: &CudaDevice,
    spec: &KernelSpec,
    inputs: &[Vec<u8>],
    mapped: u32,
) -> Vec<Vec<u8>> {
    let kernel = device.load_kernel(spec).unwrap();
    let allocations: Vec<Allocation> = inputs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let allocation = device.allocate(bytes.len(), mapped >> i & 1 == 1).unwrap();
            device
                .write(&View::new(&allocation, 0, bytes.len()), bytes)
                .unwrap();
            allocation
        })
        .collect();
    let views: Vec<View<'_>> = allocations
        .iter()
        .zip(inputs)
        .map(|(a, b)| View::new(a, 0, b.len()))
        .collect();
    let mut stream = device.stream().unwrap();
    let mut graph = stream.graph().unwrap();
    // SAFETY: the views match the spec's contract; the allocations outlive the launch.
    unsafe {
        graph
            .dispatch(
                &[],
                &kernel,
                spec.grid,
                spec.block,
                &spec.contract.constants,
                &views,
            )
            .unwrap();
    }
    let mut exec = graph.finish().unwrap();
    stream.launch(exec.as_mut()).unwrap();
    stream.synchronize().unwrap();
    views
        .iter()
        .map(|view| {
            let mut out = vec![0; view.len()];
            device.read(view, &mut out).unwrap();
            out
        })
        .collect()
}

/// Every built-in kernel on CUDA equals its host implementation byte for byte.
#[test]
fn hardware_builtin_kernels_match_the_host() {
    use crate::kernels::*;
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    let mut rng = Lcg(42);
    let mut cases: Vec<(KernelSpec, Vec<Vec<u8>>)> = Vec::new();
    for n in [0, 1, 1000, 100_003] {
        cases.push((saxpy(n, -1.37), vec![rng.floats(n), rng.floats(n)]));
        cases.push((iota(n, u32::MAX - 2, 3), vec![rng.bytes(4 * n)]));
        cases.push((fill_u32(n, 0xDEAD_BEEF), vec![rng.bytes(4 * n)]));
        cases.push((threshold(n, 128), vec![rng.bytes(n), rng.bytes(n)]));
        let mut counts = rng.bytes(1024);
        counts[1020..].fill(0xFF); // bin 255 wraps
        cases.push((histogram256(n), vec![rng.bytes(n), counts]));
    }
    for n in [0, 1, 255, 256, 257, 4099, 65_536 + 77, 1_000_000] {
        cases.push((reduce_sum(n), vec![rng.floats(n), rng.bytes(4)]));
    }
    // The documented order, by hand: slots 1 and 3 meet first, so their 2 survives.
    let big = 16_777_216.0f32;
    let mut x = vec![0.0f32; 768];
    (x[0], x[1], x[3], x[256], x[512]) = (big, 1.0, 1.0, 1.0, 1.0);
    let x: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    cases.push((reduce_sum(768), vec![x, vec![0; 4]]));
    for (w, h) in [
        (1, 1),
        (1, 7),
        (7, 1),
        (2, 2),
        (17, 5),
        (640, 480),
        (1001, 333),
    ] {
        let n = w * h;
        cases.push((rgb_to_gray(w, h), vec![rng.bytes(3 * n), rng.bytes(n)]));
        cases.push((blur_horizontal(w, h), vec![rng.bytes(n), rng.bytes(n)]));
        cases.push((blur_vertical(w, h), vec![rng.bytes(n), rng.bytes(n)]));
        cases.push((sobel(w, h), vec![rng.bytes(n), rng.bytes(n)]));
    }
    let mut failures = Vec::new();
    for (index, (spec, inputs)) in cases.iter().enumerate() {
        let expected = run_on_host(spec, inputs);
        let actual = run_on_cuda(&device, spec, inputs, index as u32 % 4);
        for (binding, (e, a)) in expected.iter().zip(&actual).enumerate() {
            if e != a {
                let first = e.iter().zip(a).position(|(x, y)| x != y);
                failures.push(format!(
                    "{} constants {:?} binding {binding}: first difference at byte {first:?}",
                    spec.entry, spec.contract.constants
                ));
            }
        }
    }
    eprintln!(
        "{} kernel cases, {} mismatches",
        cases.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Fills and copies on host-visible and device memory in one native graph, a stream copy,
/// and a timed span.
#[test]
fn hardware_graph_nodes_and_stream_copies() {
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    eprintln!("device: {:?}", device.info());
    let host = device.allocate(64, true).unwrap();
    let local = device.allocate(64, false).unwrap();
    let back = device.allocate(64, true).unwrap();
    assert!(!host.host_pointer().is_null() && local.host_pointer().is_null());
    let mut stream = device.stream().unwrap();
    let mut graph = stream.graph().unwrap();
    let fill = graph.fill(&[], &View::new(&host, 0, 64), 7).unwrap();
    let up = graph
        .copy(&[fill], &View::new(&local, 8, 32), &View::new(&host, 0, 32))
        .unwrap();
    let empty = graph.fill(&[up], &View::new(&local, 0, 0), 1).unwrap();
    let fill_local = graph.fill(&[empty], &View::new(&local, 60, 4), 9).unwrap();
    graph
        .copy(
            &[fill_local],
            &View::new(&back, 0, 64),
            &View::new(&local, 0, 64),
        )
        .unwrap();
    let mut exec = graph.finish().unwrap();
    stream.launch(exec.as_mut()).unwrap();
    stream.synchronize().unwrap();
    let span = stream.last_span().expect("a timed launch");
    eprintln!("graph span: {} ns", span.end_ns - span.start_ns);
    let mut expected = [0u8; 64];
    expected[8..40].fill(7);
    expected[60..].fill(9);
    let mut read = [0u8; 64];
    device.read(&View::new(&back, 0, 64), &mut read).unwrap();
    assert_eq!(read, expected);
    device.read(&View::new(&local, 0, 64), &mut read).unwrap();
    assert_eq!(read, expected);
    // Stream copies: device -> host-visible and host-visible -> device.
    let other = device.allocate(64, false).unwrap();
    stream
        .copy(&View::new(&other, 0, 32), &View::new(&back, 32, 32))
        .unwrap();
    stream
        .copy(&View::new(&host, 0, 64), &View::new(&local, 0, 64))
        .unwrap();
    stream.synchronize().unwrap();
    device
        .read(&View::new(&other, 0, 32), &mut read[..32])
        .unwrap();
    assert_eq!(read[..32], expected[32..]);
    device.read(&View::new(&host, 0, 64), &mut read).unwrap();
    assert_eq!(read, expected);
}

/// A large host write into pinned memory is streamed (non-temporal stores, `dma_memory`) and
/// lands byte for byte at an unaligned offset; the GPU copies it as written.
#[test]
fn hardware_streamed_host_write_lands_and_uploads() {
    use crate::{BackendChoice, Placement, Runtime};
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    assert!(device.allocate(64, true).unwrap().read_by_dma());
    assert!(!device.allocate(64, false).unwrap().read_by_dma());
    let rt = Runtime::new(RuntimeOptions::default().backend(BackendChoice::Cuda)).unwrap();
    let len = crate::dma_memory::STREAMING_MIN_BYTES * 3 + 77;
    let data = Lcg(26).bytes(len);
    let host = rt.buffer(len + 16, Placement::HostVisible).unwrap();
    host.write(3, &data).unwrap();
    let mut read = vec![0u8; len];
    host.read(3, &mut read).unwrap();
    assert_eq!(read, data);
    let local = rt.buffer(len, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph
        .copy(local.view(0..len).unwrap(), host.view(3..3 + len).unwrap())
        .unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    assert_eq!(local.to_vec().unwrap(), data);
}

/// The deliberately faulting kernel, submitted through the runtime, answers `DeviceLost`
/// naming `CUDA_ERROR_ILLEGAL_ADDRESS`; the graph is quarantined, its output poisoned, and
/// the sticky slot answers the next device call, and a runtime opened after every other was
/// dropped fails the same way (the driver's rule: CUDA cannot be used again in the process).
/// Only with `HRX_CUDA_HARDWARE=fault`, in a process of its own: the fault leaves CUDA
/// unusable for every other test.
#[test]
fn hardware_fault() {
    use crate::{BackendChoice, Placement, Runtime, kernels};
    if !hardware(true) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let rt = Runtime::new(RuntimeOptions::default().backend(BackendChoice::Cuda)).unwrap();
    let out = rt.buffer(64, Placement::GpuLocal).unwrap();
    let fail = rt.kernel(&kernels::fail_kernel(64)).unwrap();
    let mut graph = rt.graph();
    graph.gpu(&fail, &[out.whole()]).unwrap();
    let executable = graph.prepare().unwrap();
    let error = executable.submit().unwrap().wait().unwrap_err();
    eprintln!("hrx_fail on CUDA: {error}");
    assert!(error.is_device_loss(), "{error}");
    assert!(
        error.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{error}"
    );
    assert!(executable.quarantined());
    eprintln!("poisoned: {:?}", out.poisoned());
    assert!(out.poisoned().is_some());
    let later = rt.buffer(16, Placement::GpuLocal).expect_err("sticky");
    eprintln!("next call: {later}");
    assert!(later.is_device_loss(), "{later}");
    assert!(
        crate::DeviceCall::is_sticky_loss(&error.to_string()),
        "a trace's reader tells it sticky: {error}"
    );
    // Every runtime gone, the context released: the driver keeps CUDA unusable in this
    // process all the same (its documented rule), so a fresh runtime fails as the first did.
    drop((later, executable, fail, out, rt));
    let fresh = Runtime::new(RuntimeOptions::default().backend(BackendChoice::Cuda))
        .and_then(|rt| rt.buffer(16, Placement::GpuLocal).map(drop))
        .expect_err("CUDA stays unusable in this process");
    eprintln!("a fresh runtime: {fresh}");
    assert!(fresh.is_device_loss(), "{fresh}");
    assert!(
        fresh
            .to_string()
            .contains("CUDA cannot be used again in this process"),
        "{fresh}"
    );
}

/// A stream operation after the application cleared (or switched) the thread's current
/// context still runs in the device's context and leaves it current: the backend asks the
/// driver which context is current before each operation rather than remembering what it
/// set last.
#[test]
fn hardware_context_made_current_again_after_the_application_switched() {
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    let local = device.allocate(64, false).unwrap();
    let mut stream = device.stream().unwrap();
    let mut graph = stream.graph().unwrap();
    graph.fill(&[], &View::new(&local, 0, 64), 3).unwrap();
    let mut exec = graph.finish().unwrap();
    stream.launch_and_synchronize(exec.as_mut()).unwrap();
    let primary = api::ctx_get_current().unwrap();
    assert!(
        !primary.is_null(),
        "the device's context is current after a launch"
    );
    for round in 0..2 {
        // The application's own code on this thread, between two of the runtime's calls.
        api::ctx_set_current(std::ptr::null_mut()).unwrap();
        let mut graph = stream.graph().unwrap();
        graph
            .fill(&[], &View::new(&local, 0, 64), 5 + round)
            .unwrap();
        let mut exec = graph.finish().unwrap();
        api::ctx_set_current(std::ptr::null_mut()).unwrap();
        stream.launch_and_synchronize(exec.as_mut()).unwrap();
        assert_eq!(api::ctx_get_current().unwrap(), primary, "round {round}");
        let mut read = [0u8; 64];
        device.read(&View::new(&local, 0, 64), &mut read).unwrap();
        assert_eq!(read, [5 + round; 64]);
    }
}

/// Launches `exec` on `stream`, synchronizes, and returns its operation spans (all device
/// spans) and the launch's span, printed for the H200 run's log.
fn launch_timed(
    stream: &mut dyn crate::gpu::NativeStream,
    exec: &mut dyn crate::gpu::NativeGraphExec,
    launch: usize,
) -> (Vec<crate::gpu::OpSpan>, crate::gpu::DeviceSpan) {
    let mut spans = Vec::new();
    stream.launch(exec).unwrap();
    stream.synchronize().unwrap();
    stream.op_spans(&mut spans);
    let region = stream.last_span().expect("a timed launch");
    eprintln!("launch {launch}: region {region:?} ops {spans:?}");
    assert!(spans.iter().all(|s| s.device));
    (spans, region)
}

/// Kernel times (CUPTI): a graph of a memset, a kernel and a copy, launched five times,
/// gives each launch one device span per operation, by node, each but the first counted from
/// the end of the one before, the region running from the first one's start to the last one's
/// end; a copy batch's two copies are timed in order, the batch running over them. Prints the
/// spans and the CUPTI session's dropped records for the H200 run's log.
#[test]
fn hardware_kernel_times() {
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    let n = 1 << 22;
    let spec = crate::kernels::iota(n, 0, 1);
    let kernel = device.load_kernel(&spec).unwrap();
    let local = device.allocate(n * 4, false).unwrap();
    let host = device.allocate(n * 4, true).unwrap();
    let mut stream = device.stream().unwrap();
    stream.set_timed(true);
    stream.set_kernel_times(true);
    let mut graph = stream.graph().unwrap();
    let whole = View::new(&local, 0, n * 4);
    let fill = graph.fill(&[], &whole, 0).unwrap();
    // SAFETY: the view matches iota's contract; the allocations outlive the launches.
    let iota = unsafe {
        graph
            .dispatch(
                &[fill],
                &kernel,
                spec.grid,
                spec.block,
                &spec.contract.constants,
                &[View::new(&local, 0, n * 4)],
            )
            .unwrap()
    };
    graph
        .copy(&[iota], &View::new(&host, 0, n * 4), &whole)
        .unwrap();
    let mut exec = graph.finish().unwrap();
    for launch in 0..5 {
        let (spans, region) = launch_timed(stream.as_mut(), exec.as_mut(), launch);
        let indexes: Vec<_> = spans.iter().map(|s| s.index).collect();
        assert_eq!(indexes, [0, 1, 2], "one span per operation, by node");
        // A chain, every node timed: the times tile the region (`op_times`).
        for pair in spans.windows(2) {
            assert_eq!(pair[0].span.end_ns, pair[1].span.start_ns, "{pair:?}");
        }
        // CUPTI's own work before the first node (0.4-0.7 ms a launch, session 36) is not
        // the region's: it runs from its first operation's start.
        assert_eq!(
            spans[0].span.start_ns, region.start_ns,
            "{spans:?} {region:?}"
        );
        assert_eq!(spans[2].span.end_ns, region.end_ns, "{spans:?} {region:?}");
        assert!(spans[1].span.end_ns > spans[1].span.start_ns);
    }
    let other = device.allocate(n * 4, false).unwrap();
    stream.copy(&View::new(&other, 0, n * 4), &whole).unwrap();
    stream
        .copy(&View::new(&host, 0, n * 4), &View::new(&other, 0, n * 4))
        .unwrap();
    stream.synchronize().unwrap();
    let mut spans = Vec::new();
    stream.op_spans(&mut spans);
    let batch = stream.last_span().expect("a timed batch");
    eprintln!("copy batch: {batch:?} {spans:?}");
    assert_eq!(spans.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
    assert!(spans[0].span.end_ns <= spans[1].span.start_ns + 1_000);
    // The batch runs over its copies, as CUPTI timed them.
    assert_eq!(
        (batch.start_ns, batch.end_ns),
        (spans[0].span.start_ns, spans[1].span.end_ns)
    );
    // Batches in a row, as a lane runs them (session 36: a copy's record came after its
    // batch's flush and the next batch took it): each batch gets its own two copies, inside
    // the time from its first enqueue to its synchronize's return.
    let small = 64 << 10;
    for round in 0..20 {
        let before = crate::clock::now_ns();
        stream
            .copy(&View::new(&other, 0, small), &View::new(&local, 0, small))
            .unwrap();
        stream
            .copy(&View::new(&host, 0, small), &View::new(&other, 0, small))
            .unwrap();
        stream.synchronize().unwrap();
        let after = crate::clock::now_ns();
        let mut spans = Vec::new();
        stream.op_spans(&mut spans);
        let batch = stream.last_span().expect("a timed batch");
        assert_eq!(
            spans.iter().map(|s| s.index).collect::<Vec<_>>(),
            [0, 1],
            "round {round}: {spans:?}"
        );
        // CUPTI's clock is mapped at each flush, within a microsecond or two.
        for s in &spans {
            assert!(
                s.span.start_ns + 5_000 >= before && s.span.end_ns <= after + 5_000,
                "round {round}: {before}..{after} {spans:?}"
            );
        }
        assert_eq!(
            (batch.start_ns, batch.end_ns),
            (spans[0].span.start_ns, spans[1].span.end_ns)
        );
    }
    let cupti = super::activity::cupti().unwrap();
    eprintln!(
        "records of unregistered work dropped: {}; late records dropped: {}",
        cupti.foreign(),
        cupti.late()
    );
}

/// Built-in kernels that time themselves (`%globaltimer`, no CUPTI): a memset and two
/// kernels, launched five times, give each launch one span per kernel (not the memset), by
/// node, the first counted from the graph's start marker (the region's start), the second
/// from the first's end, the region ending with it, and the timed entries compute what the
/// plain ones do; plain entries still give the region a span; a graph of 70 kernels (three
/// chunks of timed nodes) gives 70 spans tiling its region. Prints the spans for the H200
/// run's log.
#[test]
fn hardware_builtin_kernel_times() {
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    let n = 1 << 22;
    let iota = crate::kernels::iota(n, 7, 3);
    let fill = crate::kernels::fill_u32(n, 0xDEAD_BEEF);
    let (iota_kernel, fill_kernel) = (
        device.load_kernel(&iota).unwrap(),
        device.load_kernel(&fill).unwrap(),
    );
    let a = device.allocate(n * 4, false).unwrap();
    let b = device.allocate(n * 4, false).unwrap();
    let mut stream = device.stream().unwrap();
    stream.set_timed(true);
    stream.set_builtin_kernel_times(true);
    let mut graph = stream.graph().unwrap();
    let zero = graph.fill(&[], &View::new(&a, 0, n * 4), 0).unwrap();
    // SAFETY: the views match the kernels' contracts; the allocations outlive the launches.
    let first = unsafe {
        graph
            .dispatch(
                &[zero],
                &iota_kernel,
                iota.grid,
                iota.block,
                &iota.contract.constants,
                &[View::new(&a, 0, n * 4)],
            )
            .unwrap()
    };
    // SAFETY: as above.
    let second = unsafe {
        graph
            .dispatch(
                &[first],
                &fill_kernel,
                fill.grid,
                fill.block,
                &fill.contract.constants,
                &[View::new(&b, 0, n * 4)],
            )
            .unwrap()
    };
    assert_eq!((first.0, second.0), (1, 2));
    let mut exec = graph.finish().unwrap();
    for launch in 0..5 {
        let (spans, region) = launch_timed(stream.as_mut(), exec.as_mut(), launch);
        let indexes: Vec<_> = spans.iter().map(|s| s.index).collect();
        assert_eq!(indexes, [1, 2], "one span per built-in kernel, by node");
        for span in &spans {
            assert!(span.span.end_ns > span.span.start_ns, "{span:?}");
        }
        // Counted from what each waits on (`op_times`): the iota after the untimed memset
        // (a root) from the graph's start marker (the region's start), the fill from the
        // iota's end; the region ends with the leaf (the fill, timed).
        assert_eq!(
            spans[0].span.start_ns, region.start_ns,
            "{spans:?} {region:?}"
        );
        assert_eq!(spans[0].span.end_ns, spans[1].span.start_ns, "{spans:?}");
        assert_eq!(spans[1].span.end_ns, region.end_ns, "{spans:?} {region:?}");
        let sum: u64 = spans.iter().map(|s| s.span.end_ns - s.span.start_ns).sum();
        eprintln!(
            "  sum of kernels {sum} ns, region {} ns",
            region.end_ns - region.start_ns
        );
    }
    let mut out = vec![0u8; n * 4];
    device.read(&View::new(&a, 0, n * 4), &mut out).unwrap();
    for (i, word) in out.chunks_exact(4).enumerate().step_by(4099) {
        let expected = 7u32.wrapping_add(3u32.wrapping_mul(i as u32));
        assert_eq!(
            u32::from_le_bytes(word.try_into().unwrap()),
            expected,
            "iota[{i}]"
        );
    }
    device.read(&View::new(&b, 0, n * 4), &mut out).unwrap();
    assert!(
        out.chunks_exact(4)
            .all(|w| w == 0xDEAD_BEEFu32.to_le_bytes())
    );

    // Regions only (plain entries): the start marker and the collector still time the
    // region, and no kernel has a span.
    stream.set_builtin_kernel_times(false);
    let mut graph = stream.graph().unwrap();
    // SAFETY: as above.
    unsafe {
        graph
            .dispatch(
                &[],
                &iota_kernel,
                iota.grid,
                iota.block,
                &iota.contract.constants,
                &[View::new(&a, 0, n * 4)],
            )
            .unwrap()
    };
    let mut plain = graph.finish().unwrap();
    for launch in 0..2 {
        let (spans, region) = launch_timed(stream.as_mut(), plain.as_mut(), launch);
        assert!(spans.is_empty(), "{spans:?}");
        assert!(region.end_ns > region.start_ns, "{region:?}");
    }
    stream.set_builtin_kernel_times(true);

    // 70 kernels in a chain: three chunks of timed nodes, each collected.
    let small = crate::kernels::iota(1024, 0, 1);
    let mut graph = stream.graph().unwrap();
    let mut last = Vec::new();
    for _ in 0..70 {
        // SAFETY: as above.
        let node = unsafe {
            graph
                .dispatch(
                    &last,
                    &iota_kernel,
                    small.grid,
                    small.block,
                    &small.contract.constants,
                    &[View::new(&a, 0, 4096)],
                )
                .unwrap()
        };
        last = vec![node];
    }
    let mut exec = graph.finish().unwrap();
    for _ in 0..2 {
        stream.launch_and_synchronize(exec.as_mut()).unwrap();
        let mut spans = Vec::new();
        stream.op_spans(&mut spans);
        let indexes: Vec<_> = spans.iter().map(|s| s.index).collect();
        assert_eq!(indexes, (0..70).collect::<Vec<_>>());
        for pair in spans.windows(2) {
            assert_eq!(pair[0].span.end_ns, pair[1].span.start_ns, "{pair:?}");
        }
        // The chain tiles its region: from the start marker to the last kernel's end.
        let region = stream.last_span().expect("a timed launch");
        assert_eq!(spans[0].span.start_ns, region.start_ns, "{region:?}");
        assert_eq!(spans[69].span.end_ns, region.end_ns, "{region:?}");
        let mut ns: Vec<_> = spans
            .iter()
            .map(|s| s.span.end_ns - s.span.start_ns)
            .collect();
        ns.sort_unstable();
        eprintln!(
            "70 iota kernels of 4 blocks: median {} ns, max {} ns",
            ns[35], ns[69]
        );
    }
}

/// The GPU's clocks through NVML at the device's PCI bus id: figures an H200 can have, read
/// twice through one reader (NVML stays open between readings).
#[test]
fn hardware_clocks_through_nvml() {
    if !hardware(false) {
        return;
    }
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    let device = CudaDevice::open(0).expect("CUDA device 0");
    let context = context::Context::get(0).unwrap();
    let bus_id = api::device_pci_bus_id(context.device).unwrap();
    eprintln!("device 0 at PCI bus id {bus_id}");
    let reader = device
        .clock_reader()
        .unwrap_or_else(|e| panic!("NVML opens at {bus_id}: {e}"));
    for _ in 0..2 {
        let clocks = reader.read().expect("NVML reads the clocks");
        eprintln!("{clocks} (limit bits {:#x})", clocks.limits.0);
        assert!(
            clocks.max_sm_mhz > 0 && clocks.max_mem_mhz > 0,
            "{clocks:?}"
        );
        assert!(clocks.sm_mhz > 0 && clocks.mem_mhz > 0, "{clocks:?}");
        assert!(clocks.sm_mhz <= clocks.max_sm_mhz, "{clocks:?}");
        assert!(clocks.temperature_c.is_some_and(|t| t < 120), "{clocks:?}");
    }
}
