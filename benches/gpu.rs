//! hrx on a real CUDA GPU against the raw CUDA driver API, measured in the same run.
//!
//! ```text
//! cargo bench -p hrx --bench gpu
//! ```
//!
//! Where CUDA is unavailable (no driver, no GPU, or hrx built with `--no-default-features`)
//! the bench prints one line saying why it was skipped and exits 0.
//!
//! Groups (each measures hrx and its raw baseline in the same process, on the primary
//! context of device 0, both on a non-blocking stream):
//!
//! - `one_kernel/{hrx,raw}`: submit-to-complete of a prepared graph with one `hrx_iota` kernel
//!   over a 1 MiB GPU-local buffer (`submit()` + `wait()`), against an explicit CUDA graph with
//!   the same kernel node (same PTX, grid, block and parameters) launched with
//!   `cuGraphLaunch` + `cuStreamSynchronize`. Target: hrx <= 1.15x raw.
//! - `hundred_kernels/{hrx,raw}`: the same with 100 dependent `hrx_iota` kernels on the same
//!   buffer (write-after-write chain: a 100-node graph; raw: the same 100-node chain).
//! - `copy_bandwidth/{hrx,raw}`: a 64 MiB host-visible (pinned, mapped) -> GPU-local copy, as
//!   an hrx Upload-lane copy batch, against `cuMemcpyHtoDAsync` from pinned memory +
//!   `cuStreamSynchronize`. Reported as throughput.
//! - `pipeline_traced/{untraced,traced,untraced_again}`: the image pipeline
//!   (`hrx_workloads::Pipeline`, 8 synthetic 1280x720 frames, 3 in flight) on CUDA, without
//!   and with a runtime-local trace recorder writing a trace file (output digests on, the
//!   default). `untraced_again` repeats the baseline to show the run-to-run spread.
//!   Target: traced <= 1.01x untraced. Then the same pipelines in paired rounds
//!   (`HRX_BENCH_ROUNDS`, default 400), reported as the per-round ratio: untraced, a second
//!   untraced runtime (the control: what two runtimes of the same options differ by) and
//!   traced in turn, the trace flushed before each timed run, on fresh runtimes every
//!   `HRX_BENCH_ROUNDS / HRX_BENCH_EPOCHS` rounds (default 10 epochs), since one runtime's
//!   threads and memory placement shift all its rounds alike.
//!   The traced turn of those rounds traces regions only (the plain kernels). Then rounds
//!   whose control turn traces regions only and whose traced turn lets hrx's built-in kernels
//!   time themselves (the default when traced): their paired ratio is what that timing costs.
//!   The paired rounds again with kernel times on in the traced turn (CUPTI, issue 20):
//!   what timing each operation costs beside region-only tracing. CUPTI's activity, once on,
//!   covers the whole process, so those rounds' untraced turns pay it too: compare their
//!   traced median with the region-only rounds' untraced one, measured before it started.
//!
//! After each of `one_kernel`, `hundred_kernels` and `copy_bandwidth` the same work runs in
//! paired rounds (raw and hrx alternating, timed batches of 100, 8 and 1 launches,
//! `HRX_BENCH_ROUNDS` rounds): consecutive criterion groups drift apart on a shared machine by
//! more than the 15% margin, so the paired per-round ratio decides the targets. The summary
//! prints the criterion medians' ratios, then the paired ratios.
//!
//! After `copy_bandwidth`, when measuring, a `one_kernel ablation` (printed only, no target):
//! the raw one-kernel round trip with one of hrx's additions at a time (its driver calls, its
//! locks and atomics, a spinning worker's doorbell, its whole software-device round trip), in
//! the same paired rounds as raw and hrx, so that one run tells what each addition costs.
//!
//! Before the groups, a short `span check` (not criterion) verifies the device spans that the
//! CUDA backend records for native graphs and copy batches: raw CUDA timings of the same work
//! (the kernel alone between stream events, stream events around `cuGraphLaunch`, event-record
//! nodes inside the graph, host launch-to-synchronize), then the `RegionTiming` device spans of
//! a traced hrx run, then the cost of each timing method on launch-to-synchronize latency.
//! After the groups, a summary table reads the medians from criterion's `estimates.json`
//! (`$CRITERION_HOME`, else `target/criterion`).
//!
//! `HRX_BENCH_ONLY=one_kernel,hundred_kernels` (names among `one_kernel`, `hundred_kernels`,
//! `copy_bandwidth`, `ablation`, `pipeline_traced`) runs only those groups and their paired
//! rounds; by default all run.
//!
//! Measurement is short (1 s warm-up, 3 s measurement, 40 samples; 30 samples for the copy,
//! 30 samples over 5 s for the pipeline) so the whole bench runs in about a minute on an H200.

#[cfg(feature = "cuda")]
fn main() {
    gpu::main();
}

#[cfg(not(feature = "cuda"))]
fn main() {
    println!("GPU benchmarks skipped: hrx was built without the `cuda` feature");
}

#[cfg(feature = "cuda")]
mod common;

#[cfg(feature = "cuda")]
mod gpu {
    use super::common::{self, frame};
    use criterion::{Criterion, SamplingMode, Throughput};
    use hrx::{BackendChoice, ExecutableGraph, Placement, Runtime, RuntimeOptions, kernels};
    use hrx_workloads::{Frame, Pipeline, PipelineOptions};
    use std::collections::BTreeMap;
    use std::hint::black_box;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    /// 1 MiB of `u32`s for the kernel groups.
    const KERNEL_ELEMENTS: usize = 1 << 18;
    /// 64 MiB of `u32`s for the span check (a kernel long enough to time well).
    const BIG_ELEMENTS: usize = 16 << 20;
    /// Bytes of the copy group.
    const COPY_BYTES: usize = 64 << 20;
    const CHAIN: usize = 100;
    /// Round trips per timed batch of [`one_kernel_ablation`].
    const ABLATION_BATCH: usize = 100;

    fn cuda_options() -> RuntimeOptions {
        RuntimeOptions::default().backend(BackendChoice::Cuda)
    }

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        // As criterion decides: `--bench` without `--test` measures; anything else tests.
        let benchmarking = has("--bench") && !has("--test") && !has("--list");
        common::keep_heap();
        common::backtrace_on_crash();
        let runtime = match Runtime::new(cuda_options()) {
            Ok(runtime) => runtime,
            Err(error) => {
                println!("GPU benchmarks skipped: the CUDA backend is unavailable: {error}");
                return;
            }
        };
        let info = runtime.device_info();
        println!(
            "device: {} ({} MiB), backend {}",
            info.name,
            info.memory_bytes >> 20,
            info.backend
        );
        let spec = kernels::iota(KERNEL_ELEMENTS, 1, 3);
        let cuda = raw::Cuda::new(&spec);

        if !has("--list") {
            span_check(&cuda, benchmarking);
        }

        let mut criterion = Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .sample_size(40)
            .configure_from_args();
        let wanted = wanted_groups();
        let mut paired = Vec::new();
        if wanted("one_kernel") {
            paired.push(kernel_chain(
                &mut criterion,
                &runtime,
                &cuda,
                "one_kernel",
                1,
            ));
        }
        if wanted("hundred_kernels") {
            paired.push(kernel_chain(
                &mut criterion,
                &runtime,
                &cuda,
                "hundred_kernels",
                CHAIN,
            ));
        }
        if wanted("copy_bandwidth") {
            paired.push(copy_bandwidth(&mut criterion, &runtime, &cuda));
        }
        if benchmarking && wanted("ablation") {
            one_kernel_ablation(&runtime, &cuda);
        }
        drop(runtime);
        let traced = wanted("pipeline_traced").then(|| pipeline_traced(&mut criterion));
        criterion.final_summary();
        if benchmarking {
            summary(&paired, traced.as_ref());
        }
    }

    /// Which groups run, paired rounds included: `HRX_BENCH_ONLY` (comma-separated names
    /// among `one_kernel`, `hundred_kernels`, `copy_bandwidth`, `ablation`,
    /// `pipeline_traced`), else all. Criterion's filter only skips criterion's own groups;
    /// this skips their paired rounds too, so that one device call fits more processes of
    /// the groups it compares.
    fn wanted_groups() -> impl Fn(&str) -> bool {
        let only = std::env::var("HRX_BENCH_ONLY").ok();
        move |group| {
            only.as_deref()
                .is_none_or(|only| only.split(',').any(|name| name.trim() == group))
        }
    }

    /// A prepared graph of `count` dependent iota kernels over one GPU-local buffer.
    fn iota_chain(
        runtime: &Runtime,
        elements: usize,
        count: usize,
    ) -> (hrx::Buffer, ExecutableGraph) {
        let buffer = runtime
            .buffer(elements * 4, Placement::GpuLocal)
            .expect("buffer");
        let kernel = runtime
            .kernel(&kernels::iota(elements, 1, 3))
            .expect("iota kernel");
        let mut graph = runtime.graph();
        for _ in 0..count {
            graph.gpu(&kernel, &[buffer.whole()]).expect("dispatch");
        }
        let graph = graph.prepare().expect("prepare");
        assert_eq!(graph.regions(), 1, "one native graph");
        (buffer, graph)
    }

    /// A prepared Upload-lane copy batch of `bytes` (host-visible -> GPU-local).
    fn upload(runtime: &Runtime, bytes: usize) -> (hrx::Buffer, hrx::Buffer, ExecutableGraph) {
        let src = runtime
            .buffer(bytes, Placement::HostVisible)
            .expect("host buffer");
        let pattern: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
        src.write(0, &pattern).expect("host write");
        let dst = runtime.buffer(bytes, Placement::GpuLocal).expect("buffer");
        let mut graph = runtime.graph();
        graph.copy(dst.whole(), src.whole()).expect("copy");
        let graph = graph.prepare().expect("prepare");
        (src, dst, graph)
    }

    fn check_iota(buffer: &hrx::Buffer, elements: usize) {
        let bytes = buffer.to_vec().expect("read back");
        for i in [0, 1, elements / 2, elements - 1] {
            let word = u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
            assert_eq!(
                word,
                1u32.wrapping_add(3u32.wrapping_mul(i as u32)),
                "iota[{i}]"
            );
        }
    }

    /// Paired rounds of the benches (`HRX_BENCH_ROUNDS`, default 400).
    fn rounds() -> usize {
        common::rounds(400)
    }

    /// `a` and `b` alternating in [`rounds`] paired rounds, which goes first swapped every
    /// round (see [`common::rotated`]).
    fn paired(mut a: impl FnMut(), mut b: impl FnMut()) -> common::Interleaved {
        let [a_ms, b_ms] = common::rotated(rounds(), || (), [&mut |()| a(), &mut |()| b()]);
        common::Interleaved::new(a_ms, b_ms)
    }

    /// `name/{hrx,raw}`: submit-to-complete of a chain of `count` iota kernels, checked
    /// first, against the same raw CUDA graph; then the two in paired rounds (raw is `a`).
    fn kernel_chain(
        c: &mut Criterion,
        runtime: &Runtime,
        cuda: &raw::Cuda,
        name: &'static str,
        count: usize,
    ) -> (&'static str, common::Interleaved) {
        let (buffer, graph) = iota_chain(runtime, KERNEL_ELEMENTS, count);
        graph.submit().expect("submit").wait().expect("wait");
        check_iota(&buffer, KERNEL_ELEMENTS);
        let raw_buffer = cuda.alloc(KERNEL_ELEMENTS * 4);
        let raw_graph = cuda.iota_graph(raw_buffer, count, raw::Timing::None);
        cuda.launch_sync(&raw_graph);
        cuda.check_iota(raw_buffer);

        let before = runtime.counters();
        let mut group = c.benchmark_group(name);
        group.bench_function("hrx", |b| {
            b.iter(|| graph.submit().expect("submit").wait().expect("wait"))
        });
        let after = runtime.counters();
        group.bench_function("raw", |b| b.iter(|| cuda.launch_sync(&raw_graph)));
        group.finish();
        let submissions = after.submissions - before.submissions;
        // Zero when a filter skipped the criterion group.
        if submissions > 0 {
            println!(
                "{name}: the waiting thread ran {} of {submissions} submissions' regions itself",
                after.regions_run_by_waiters - before.regions_run_by_waiters,
            );
        }
        // About a millisecond per timed batch: far above the clock's resolution.
        let batch = if count == 1 { 100 } else { 8 };
        let before = runtime.counters();
        let paired = paired(
            || (0..batch).for_each(|_| cuda.launch_sync(&raw_graph)),
            || (0..batch).for_each(|_| graph.submit().expect("submit").wait().expect("wait")),
        );
        let after = runtime.counters();
        println!("{name}: raw (a) vs hrx (b), batches of {batch} launches, {paired}");
        // Where hrx's round trip goes beyond raw's: a region left to a worker, a parked
        // worker woken (a syscall on the submitting thread).
        println!(
            "{name}: of {} submissions in those rounds, the waiting thread ran {} itself; \
             parked workers woken {} times",
            after.submissions - before.submissions,
            after.regions_run_by_waiters - before.regions_run_by_waiters,
            after.worker_wakes - before.worker_wakes,
        );
        cuda.free(raw_buffer);
        (name, paired)
    }

    /// What each piece of hrx's round trip costs on top of a raw one-kernel round trip:
    /// the raw baseline with one of hrx's additions at a time, all in the same paired rounds
    /// (batches of [`ABLATION_BATCH`] round trips, the first variant rotating), each reported
    /// as its per-round ratio to raw and as µs added per round trip. Printed only, never part
    /// of the targets' ratios (issue 16 point 4: which of hrx's additions to remove).
    ///
    /// - `hrx`: `submit()` + `wait()` of the same one-kernel graph (as `one_kernel/hrx`);
    /// - `+cuCtxSetCurrent`: the call hrx made before every launch until it asked first;
    /// - `+cuCtxGetCurrent`: what hrx makes before every launch now (it sets only when
    ///   another context is current, as cudarc's `bind_to_thread` does);
    /// - `event wait`: `cuEventRecord` of a timing-disabled event + `cuEventSynchronize`
    ///   instead of `cuStreamSynchronize` (an alternative way to wait);
    /// - `+locks`: the synchronization of hrx's round trip without a second thread: six
    ///   uncontended mutex lock/unlock pairs (scheduler at submit, claim and finish, the
    ///   buffer's host state at submit and retire, the region's stream) and sixteen atomic
    ///   read-modify-writes (counted in the source at `341f9e9`, two fewer since the
    ///   completion reaches the core through its signal: the `Completion`'s signal clone, core
    ///   downgrade and count, the prepared graph's clone at enqueue, the core's upgrade in
    ///   `wait`, the task's clone and drop, the retired signal's clone, `complete`, the
    ///   retired graph's drop, `publish`, the signal clone's drop, the core's drop, and the
    ///   `Completion`'s three drops);
    /// - `+doorbell`: a thread spinning on a word (as an idle hrx worker watches its queue's
    ///   doorbell) that the launching thread stores to twice per round trip (submit's ring,
    ///   the claim's), each store followed by a mutex unlock as in hrx, then one more
    ///   lock/unlock after the synchronize: the cross-core cache-line transfers;
    /// - `+sim round trip`: a software-device `submit()` + `wait()` of a 4 KiB fill after each
    ///   launch: hrx's whole bookkeeping, measured here.
    fn one_kernel_ablation(runtime: &Runtime, cuda: &raw::Cuda) {
        use crossbeam_utils::CachePadded;
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

        let (_buffer, graph) = iota_chain(runtime, KERNEL_ELEMENTS, 1);
        let raw_buffer = cuda.alloc(KERNEL_ELEMENTS * 4);
        let raw_graph = cuda.iota_graph(raw_buffer, 1, raw::Timing::None);
        let event = cuda.sync_event();
        let sim = Runtime::new(RuntimeOptions::sim()).expect("software device");
        let fill_buffer = sim.buffer(4096, Placement::GpuLocal).expect("sim buffer");
        let mut fill = sim.graph();
        fill.fill(fill_buffer.whole(), 0x5A).expect("fill");
        let fill = fill.prepare().expect("prepare");
        let locks: [Mutex<u64>; 6] = Default::default();
        let counts: [AtomicUsize; 16] = Default::default();
        let doorbell = std::sync::Arc::new(CachePadded::new(AtomicU64::new(0)));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let spinner = {
            let (doorbell, stop) = (doorbell.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    seen = seen.wrapping_add(doorbell.load(Ordering::Acquire));
                    std::hint::spin_loop();
                }
                black_box(seen);
            })
        };
        let lock_pair = |i: usize| *locks[i].lock().unwrap() += 1;
        let rmw = |atomics: &[AtomicUsize]| {
            for atomic in atomics {
                atomic.fetch_add(1, Ordering::AcqRel);
            }
        };
        let batch = |f: &mut dyn FnMut()| (0..ABLATION_BATCH).for_each(|_| f());
        let mut rung = 0u64;
        let names = [
            "raw",
            "hrx",
            "+cuCtxSetCurrent",
            "+cuCtxGetCurrent",
            "event wait",
            "+locks",
            "+doorbell",
            "+sim round trip",
        ];
        let times = common::rotated(
            rounds(),
            || (),
            [
                &mut |()| batch(&mut || cuda.launch_sync(&raw_graph)),
                &mut |()| batch(&mut || graph.submit().expect("submit").wait().expect("wait")),
                &mut |()| {
                    batch(&mut || {
                        cuda.set_current();
                        cuda.launch_sync(&raw_graph);
                    })
                },
                &mut |()| {
                    batch(&mut || {
                        black_box(cuda.is_current());
                        cuda.launch_sync(&raw_graph);
                    })
                },
                &mut |()| batch(&mut || cuda.launch_event_sync(&raw_graph, event)),
                &mut |()| {
                    batch(&mut || {
                        // submit: scheduler, host state; four reference counts
                        lock_pair(0);
                        lock_pair(1);
                        rmw(&counts[..4]);
                        // wait: the core's upgrade, claim, the task's reference, the stream
                        rmw(&counts[4..5]);
                        lock_pair(2);
                        rmw(&counts[5..6]);
                        lock_pair(3);
                        cuda.launch_sync(&raw_graph);
                        // finish, retire, publish, the completion's drop
                        rmw(&counts[6..7]);
                        lock_pair(4);
                        lock_pair(5);
                        rmw(&counts[7..]);
                    })
                },
                &mut |()| {
                    batch(&mut || {
                        rung += 2;
                        doorbell.store(rung | 1, Ordering::Release);
                        lock_pair(0);
                        doorbell.store(rung, Ordering::Release);
                        lock_pair(0);
                        cuda.launch_sync(&raw_graph);
                        lock_pair(0);
                    })
                },
                &mut |()| {
                    batch(&mut || {
                        cuda.launch_sync(&raw_graph);
                        fill.submit().expect("submit").wait().expect("wait");
                    })
                },
            ],
        );
        stop.store(true, Ordering::Relaxed);
        spinner.join().expect("spinner");
        let [raw_ms, rest @ ..] = times;
        let mut sorted = raw_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let raw_us = sorted[sorted.len() / 2] * 1e3 / ABLATION_BATCH as f64;
        println!(
            "one_kernel ablation ({} paired rounds of {ABLATION_BATCH} round trips each; raw \
             cuGraphLaunch + cuStreamSynchronize {raw_us:.3} µs per round trip, median):",
            raw_ms.len()
        );
        for (name, ms) in names[1..].iter().zip(rest) {
            let p = common::Interleaved::new(raw_ms.clone(), ms);
            println!(
                "  {name}: {:.4}x raw [p25 {:.4}, p75 {:.4}], standard error {:.4}; {:+.3} µs \
                 per round trip",
                p.ratio[1],
                p.ratio[0],
                p.ratio[2],
                p.standard_error(),
                (p.ratio[1] - 1.0) * raw_us
            );
        }
        // Whether a launch needs a current context at all (if not, hrx could skip even the
        // read): the same graph and stream from a thread on which no context was ever made
        // current, the driver's answers printed, not asserted.
        struct Handles<'a>(&'a raw::Cuda, &'a raw::RawGraph);
        // SAFETY: driver handles may be used from any thread; the main thread waits meanwhile.
        unsafe impl Send for Handles<'_> {}
        let handles = Handles(cuda, &raw_graph);
        let answers = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let handles = handles;
                    handles.0.launch_sync_answers(handles.1)
                })
                .join()
                .expect("launch thread")
        });
        println!(
            "  on a thread with no current context: cuGraphLaunch {:?}, cuStreamSynchronize {:?}",
            answers.0, answers.1
        );
        cuda.destroy_event(event);
        cuda.free(raw_buffer);
    }

    fn copy_bandwidth(
        c: &mut Criterion,
        runtime: &Runtime,
        cuda: &raw::Cuda,
    ) -> (&'static str, common::Interleaved) {
        let (src, dst, graph) = upload(runtime, COPY_BYTES);
        graph.submit().expect("submit").wait().expect("wait");
        assert_eq!(
            dst.to_vec().expect("read back"),
            src.to_vec().expect("read")
        );
        let host = cuda.host_alloc(COPY_BYTES);
        let device = cuda.alloc(COPY_BYTES);

        let mut group = c.benchmark_group("copy_bandwidth");
        group
            .throughput(Throughput::Bytes(COPY_BYTES as u64))
            .sampling_mode(SamplingMode::Flat)
            .sample_size(30);
        group.bench_function("hrx", |b| {
            b.iter(|| graph.submit().expect("submit").wait().expect("wait"))
        });
        group.bench_function("raw", |b| {
            b.iter(|| cuda.upload_sync(device, host, COPY_BYTES))
        });
        group.finish();
        let paired = paired(
            || cuda.upload_sync(device, host, COPY_BYTES),
            || graph.submit().expect("submit").wait().expect("wait"),
        );
        println!("copy_bandwidth: raw (a) vs hrx (b), {paired}");
        cuda.free(device);
        cuda.free_host(host);
        ("copy_bandwidth", paired)
    }

    fn pipeline_traced(c: &mut Criterion) -> common::TracedRounds {
        let (width, height) = (1280, 720);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("gpu-bench.hrxt");
        let recorder =
            hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default())
                .expect("recorder");
        let untraced = Runtime::new(cuda_options().graph_slots(8)).expect("CUDA runtime");
        let traced = Runtime::new(cuda_options().graph_slots(8).recorder(recorder.clone()))
            .expect("traced CUDA runtime");
        let frames: Vec<Frame> = (0..8).map(|seed| frame(width, height, seed)).collect();

        // The same outputs traced and untraced.
        let mut outputs = [Vec::new(), Vec::new()];
        for (runtime, out) in [&untraced, &traced].into_iter().zip(&mut outputs) {
            let mut pipeline = Pipeline::new(runtime, width, height, PipelineOptions::default())
                .expect("pipeline");
            pipeline
                .run(frames.clone(), |_, output| out.push(output))
                .expect("run");
        }
        assert_eq!(outputs[0], outputs[1], "traced and untraced outputs differ");

        // What tracing must hash per frame: the host write of the RGB input (content hash
        // of its blob) and the digests of the two host-observable outputs.
        let rgb = &frames[0].rgb;
        let hash_us = median_us(51, || {
            let t = Instant::now();
            black_box(xxhash_rust::xxh3::xxh3_64(black_box(rgb)));
            black_box(xxhash_rust::xxh3::xxh3_64(black_box(
                &rgb[..width * height],
            )));
            black_box(xxhash_rust::xxh3::xxh3_64(black_box(
                &rgb[width * height..2 * width * height],
            )));
            t.elapsed().as_secs_f64() * 1e3
        });
        println!(
            "pipeline_traced: xxh3 of one frame's traced bytes ({} B input + 2 x {} B outputs): \
             {hash_us:.1} µs",
            rgb.len(),
            width * height
        );

        let mut group = c.benchmark_group("pipeline_traced");
        group
            .throughput(Throughput::Elements(8))
            .sampling_mode(SamplingMode::Flat)
            .measurement_time(Duration::from_secs(5))
            .sample_size(30);
        common::pipeline_functions(
            &mut group,
            &[
                ("untraced", &untraced),
                ("traced", &traced),
                ("untraced_again", &untraced),
            ],
            &frames,
        );
        group.finish();
        drop(traced);
        drop(untraced);
        // The ratio again, untraced, control and traced in turn round by round, on fresh
        // runtimes every epoch. Region-only tracing: the plain kernels.
        let paired = common::traced_rounds(
            || cuda_options().graph_slots(8).builtin_kernel_times(false),
            dir.path(),
            &frames,
            rounds(),
            common::epochs(10),
        );
        println!("pipeline_traced (regions only): {paired}");
        // Built-in kernels timing themselves (issue 20 point 4, the default when traced):
        // the control turn traces regions only, so `against_control` is their cost.
        let builtin = common::traced_rounds_against(
            &|| cuda_options().graph_slots(8),
            Some(&|| cuda_options().graph_slots(8).builtin_kernel_times(false)),
            dir.path(),
            &frames,
            rounds(),
            common::epochs(10),
        );
        println!(
            "pipeline_traced with built-in kernel times: {builtin}\n  regions only (a) vs \
             built-in kernel times (b), same rounds: {}",
            builtin.against_control
        );
        // Kernel times (issue 20): the traced turn also times each operation through CUPTI;
        // the same rounds, so its ratio stands beside region-only tracing's above.
        let kernel_times = common::traced_rounds(
            || cuda_options().graph_slots(8).kernel_times(true),
            dir.path(),
            &frames,
            rounds(),
            common::epochs(10),
        );
        println!("pipeline_traced with kernel times (CUPTI): {kernel_times}");
        let summary = recorder.close().expect("close");
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!("pipeline_traced: trace file {bytes} bytes; {summary:?}");
        match hrx_capture::read_all(&path) {
            Ok(trace) => {
                println!(
                    "pipeline_traced: device spans by region (medians over the criterion groups):"
                );
                print_spans(&trace, false);
            }
            Err(error) => println!("pipeline_traced: could not read the trace back: {error}"),
        }
        paired
    }

    /// Raw and hrx timings of the same work, and the cost of each timing method.
    fn span_check(cuda: &raw::Cuda, benchmarking: bool) {
        let reps = if benchmarking { 200 } else { 5 };
        let latency_reps = if benchmarking { 3000 } else { 5 };
        println!("span check (medians of {reps} launches; µs):");

        // 1. Raw CUDA, the same work timed several ways.
        let big = cuda.alloc(BIG_ELEMENTS * 4);
        let small = cuda.alloc(KERNEL_ELEMENTS * 4);
        let big_cuda = raw::Cuda::with_elements(cuda, BIG_ELEMENTS);
        for (label, graph_cuda, buffer, count) in [
            ("1 x iota 64 MiB", &big_cuda, big, 1),
            ("100 x iota 1 MiB", cuda, small, CHAIN),
        ] {
            let kernel_alone = median_us(reps, || graph_cuda.kernels_between_events(buffer, count));
            let plain = graph_cuda.iota_graph(buffer, count, raw::Timing::None);
            let host = median_us(reps, || {
                let t = Instant::now();
                graph_cuda.launch_sync(&plain);
                t.elapsed().as_secs_f64() * 1e3
            });
            let around = median_us(reps, || graph_cuda.launch_between_stream_events(&plain));
            let nodes = graph_cuda.iota_graph(buffer, count, raw::Timing::Nodes);
            let inside = median_us(reps, || {
                graph_cuda.launch_sync(&nodes);
                nodes.elapsed_ms()
            });
            println!(
                "  raw {label}: kernels alone (stream events around cuLaunchKernel) {kernel_alone:.2}; \
                 graph: stream events around cuGraphLaunch {around:.2}; event-record nodes in \
                 the graph {inside:.2}; host launch->synchronized {host:.2}"
            );
        }
        for len in [64, 16 << 20] {
            let host = cuda.host_alloc(len);
            let back = cuda.host_alloc(len);
            let local = cuda.alloc(len);
            let plain = cuda.copy_graph(host, local, back, len, raw::Timing::None);
            let nodes = cuda.copy_graph(host, local, back, len, raw::Timing::Nodes);
            let host_us = median_us(reps, || {
                let t = Instant::now();
                cuda.launch_sync(&plain);
                t.elapsed().as_secs_f64() * 1e3
            });
            let around = median_us(reps, || cuda.launch_between_stream_events(&plain));
            let inside = median_us(reps, || {
                cuda.launch_sync(&nodes);
                nodes.elapsed_ms()
            });
            // SAFETY: `back` holds `len` bytes written by the last launch, now idle.
            let out = unsafe { std::slice::from_raw_parts(back.cast::<u8>(), len) };
            let ok =
                out[..len / 2].iter().all(|&b| b == 7) && out[len / 2..].iter().all(|&b| b == 9);
            println!(
                "  raw memset/memcpy graph (hardware test's shape, {len} B, output {}): stream \
                 events around cuGraphLaunch {around:.3}; event-record nodes {inside:.3}; host \
                 launch->synchronized {host_us:.2}",
                if ok { "right" } else { "WRONG" }
            );
            cuda.free(local);
            cuda.free_host(host);
            cuda.free_host(back);
        }
        let host = cuda.host_alloc(COPY_BYTES);
        let device = cuda.alloc(COPY_BYTES);
        let copy = median_us(reps.min(50), || {
            cuda.upload_between_events(device, host, COPY_BYTES)
        });
        println!("  raw 64 MiB pinned upload: stream events around cuMemcpyHtoDAsync {copy:.2}");
        cuda.free(device);
        cuda.free_host(host);

        // 2. hrx with a trace recorder: the RegionTiming device spans.
        let sink = hrx_capture::MemorySink::new();
        let recorder =
            hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
                .expect("recorder");
        let runtime =
            Runtime::new(cuda_options().recorder(recorder.clone())).expect("traced runtime");
        {
            let (_big, big_graph) = iota_chain(&runtime, BIG_ELEMENTS, 1);
            let (_small, chain_graph) = iota_chain(&runtime, KERNEL_ELEMENTS, CHAIN);
            let (_src, _dst, copy_graph) = upload(&runtime, COPY_BYTES);
            let a = runtime
                .buffer(COPY_BYTES, Placement::GpuLocal)
                .expect("buffer");
            let b = runtime
                .buffer(COPY_BYTES, Placement::GpuLocal)
                .expect("buffer");
            let mut graph = runtime.graph();
            graph.fill(a.whole(), 0x5A).expect("fill");
            graph
                .copy_on(b.whole(), a.whole(), hrx::GpuLane::Compute)
                .expect("copy");
            let fill_copy = graph.prepare().expect("prepare");
            assert_eq!(fill_copy.regions(), 1, "one native graph");
            for graph in [&big_graph, &chain_graph, &copy_graph, &fill_copy] {
                for _ in 0..reps.min(20) {
                    graph.submit().expect("submit").wait().expect("wait");
                }
            }
        }
        drop(runtime);
        recorder.close().expect("close");
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).expect("read trace");
        println!(
            "  hrx traced (graph 0: 1 x iota 64 MiB, graph 1: 100 x iota 1 MiB, graph 2: 64 MiB \
             upload, graph 3: 64 MiB fill + 64 MiB device copy in one native graph), \
             RegionTiming spans:"
        );
        print_spans(&trace, true);

        // 3. What each timing method costs on launch-to-synchronized latency (raw).
        for (label, count) in [("1 x iota 1 MiB", 1), ("100 x iota 1 MiB", CHAIN)] {
            let plain = cuda.iota_graph(small, count, raw::Timing::None);
            let nodes = cuda.iota_graph(small, count, raw::Timing::Nodes);
            let host_us = |f: &mut dyn FnMut()| {
                median_us(latency_reps, || {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e3
                })
            };
            let untimed = host_us(&mut || cuda.launch_sync(&plain));
            let stream = host_us(&mut || {
                black_box(cuda.launch_between_stream_events(&plain));
            });
            let in_graph = host_us(&mut || {
                cuda.launch_sync(&nodes);
                black_box(nodes.elapsed_ms());
            });
            let untimed_again = host_us(&mut || cuda.launch_sync(&plain));
            println!(
                "  cost, raw {label} launch->synchronized (median of {latency_reps}): untimed \
                 {untimed:.2} (again {untimed_again:.2}), stream event pair {stream:.2}, \
                 event-record nodes {in_graph:.2}"
            );
        }
        cuda.free(big);
        cuda.free(small);
    }

    /// Median of `reps` calls of `f` (milliseconds in), in µs.
    fn median_us(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
        f();
        let mut v: Vec<f64> = (0..reps.max(1)).map(|_| f() * 1e3).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// Median host and device durations of each traced region (`by_graph`: per prepared graph
    /// and region; else per queue and region kind), with a few samples.
    fn print_spans(trace: &hrx_capture::Trace, by_graph: bool) {
        use hrx_capture::Record;
        let mut prepared = BTreeMap::new();
        let mut order = Vec::new();
        let mut submissions = BTreeMap::new();
        let mut groups: BTreeMap<String, Vec<(u64, Option<u64>)>> = BTreeMap::new();
        for record in &trace.records {
            match record {
                Record::Prepared(p) => {
                    order.push(p.prepared);
                    prepared.insert(p.prepared, (order.len() - 1, p.regions.clone()));
                }
                Record::Submit(s) => {
                    submissions.insert(s.submission, s.prepared);
                }
                Record::RegionTiming(t) => {
                    let Some((index, regions)) =
                        submissions.get(&t.submission).and_then(|p| prepared.get(p))
                    else {
                        continue;
                    };
                    let Some(region) = regions.get(t.region.0 as usize) else {
                        continue;
                    };
                    let key = if by_graph {
                        format!(
                            "graph {index} region {} ({:?}, {:?}, {} ops)",
                            t.region.0,
                            region.queue,
                            region.kind,
                            region.nodes.len()
                        )
                    } else {
                        format!("{:?} {:?}", region.queue, region.kind)
                    };
                    groups.entry(key).or_default().push((
                        t.end_ns.saturating_sub(t.start_ns),
                        t.device.map(|d| d.end_ns.saturating_sub(d.start_ns)),
                    ));
                }
                _ => {}
            }
        }
        for (key, timings) in groups {
            let mut host: Vec<u64> = timings.iter().map(|t| t.0).collect();
            let mut device: Vec<u64> = timings.iter().filter_map(|t| t.1).collect();
            host.sort_unstable();
            device.sort_unstable();
            let median = |v: &[u64]| {
                v.get(v.len() / 2)
                    .map_or("none".to_string(), |ns| format!("{:.2}", *ns as f64 / 1e3))
            };
            let first: Vec<String> = timings
                .iter()
                .take(3)
                .map(|(h, d)| {
                    format!(
                        "{:.2}/{}",
                        *h as f64 / 1e3,
                        d.map_or("-".to_string(), |d| format!("{:.2}", d as f64 / 1e3))
                    )
                })
                .collect();
            println!(
                "    {key}: {} timings, {} with a device span; median host {} µs, device {} µs; \
                 first host/device: {}",
                timings.len(),
                device.len(),
                median(&host),
                median(&device),
                first.join(", ")
            );
        }
    }

    /// The median of a criterion benchmark from its `estimates.json`, in ns.
    fn criterion_median(group: &str, bench: &str) -> Option<f64> {
        let home = std::env::var_os("CRITERION_HOME")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("criterion"))
            })
            .unwrap_or_else(|| PathBuf::from("target/criterion"));
        let text = std::fs::read_to_string(home.join(group).join(bench).join("new/estimates.json"))
            .ok()?;
        let after = &text[text.find("\"median\"")?..];
        let after = &after[after.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
        let end = after.find([',', '}'])?;
        after[..end].trim().parse().ok()
    }

    /// The criterion medians' ratios, then the paired rounds' median ratios (which decide
    /// the targets: consecutive criterion groups drift apart by more than the margins).
    fn summary(paired: &[(&str, common::Interleaved)], traced: Option<&common::TracedRounds>) {
        println!();
        println!("summary (criterion medians):");
        println!(
            "| group | hrx | baseline | ratio | target | met |\n| --- | --- | --- | --- | --- | --- |"
        );
        let fmt = |ns: f64| {
            if ns >= 1e6 {
                format!("{:.3} ms", ns / 1e6)
            } else {
                format!("{:.2} µs", ns / 1e3)
            }
        };
        for (group, hrx, base, target) in [
            ("one_kernel", "hrx", "raw", 1.15),
            ("hundred_kernels", "hrx", "raw", 1.15),
            ("copy_bandwidth", "hrx", "raw", 1.15),
            ("pipeline_traced", "traced", "untraced", 1.01),
            ("pipeline_traced", "untraced_again", "untraced", 1.01),
        ] {
            match (criterion_median(group, hrx), criterion_median(group, base)) {
                (Some(h), Some(b)) => {
                    let ratio = h / b;
                    let extra = if group == "copy_bandwidth" {
                        let gbps = |ns: f64| COPY_BYTES as f64 / ns;
                        format!(" ({:.1} vs {:.1} GB/s)", gbps(h), gbps(b))
                    } else {
                        String::new()
                    };
                    println!(
                        "| {group} ({hrx} vs {base}) | {} | {}{extra} | {ratio:.3}x | <= {target}x | {} |",
                        fmt(h),
                        fmt(b),
                        if ratio <= target { "yes" } else { "no" }
                    );
                }
                _ => println!("| {group} ({hrx} vs {base}) | n/a | n/a | | | |"),
            }
        }
        println!();
        println!(
            "summary (paired rounds: per-round ratio hrx / raw, traced / untraced, second \
             untraced / untraced):"
        );
        println!(
            "| group | median ratio [p25, p75] | standard error | rounds | target | met |\n\
             | --- | --- | --- | --- | --- | --- |"
        );
        let rows = paired
            .iter()
            .map(|(group, p)| (*group, p, Some(1.15)))
            .chain(traced.into_iter().flat_map(|traced| {
                [
                    ("pipeline_traced", &traced.traced, Some(1.01)),
                    ("pipeline_traced control", &traced.control, None),
                ]
            }));
        for (group, p, target) in rows {
            let (target, met) = match target {
                Some(t) => (
                    format!("<= {t}x"),
                    if p.ratio[1] <= t { "yes" } else { "no" },
                ),
                None => (String::new(), ""),
            };
            println!(
                "| {group} | {:.3}x [{:.3}, {:.3}] | {:.4} | {} | {target} | {met} |",
                p.ratio[1],
                p.ratio[0],
                p.ratio[2],
                p.standard_error(),
                p.rounds,
            );
        }
    }

    /// The raw CUDA baseline: driver API calls through `cudarc::driver::sys`, on device 0's
    /// primary context (the one hrx uses), with a non-blocking stream like hrx's.
    mod raw {
        use cudarc::driver::sys::{self, CUresult};
        use std::ffi::{CString, c_void};
        use std::ptr::null_mut;

        fn ok(result: CUresult, call: &str) {
            assert_eq!(result, CUresult::CUDA_SUCCESS, "{call}");
        }

        /// How a raw graph is timed.
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub enum Timing {
            None,
            /// Event-record nodes before the roots and after the leaves (what hrx does).
            Nodes,
        }

        pub struct Cuda {
            context: sys::CUcontext,
            stream: sys::CUstream,
            function: sys::CUfunction,
            grid: [u32; 3],
            block: [u32; 3],
            /// The kernel constants: n, start, step.
            words: [u32; 3],
            start: sys::CUevent,
            end: sys::CUevent,
        }

        pub struct RawGraph {
            exec: sys::CUgraphExec,
            events: Option<(sys::CUevent, sys::CUevent)>,
        }

        impl RawGraph {
            /// Elapsed time between the event-record nodes of the last launch, in ms.
            pub fn elapsed_ms(&self) -> f64 {
                let (start, end) = self.events.expect("a timed graph");
                let mut ms = 0.0f32;
                // SAFETY: live events, recorded by a completed launch.
                ok(
                    unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) },
                    "elapsed",
                );
                f64::from(ms)
            }
        }

        impl Cuda {
            /// Device 0's primary context, a stream, and `spec`'s kernel compiled from the
            /// built-in CUDA source with hrx's NVRTC options.
            pub fn new(spec: &hrx::kernels::KernelSpec) -> Self {
                let source = hrx::kernels::cuda_source(&spec.entry).expect("CUDA source");
                let options = cudarc::nvrtc::CompileOptions {
                    fmad: Some(false),
                    ftz: Some(false),
                    prec_div: Some(true),
                    prec_sqrt: Some(true),
                    name: Some(format!("{}.cu", spec.entry)),
                    ..Default::default()
                };
                let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, options)
                    .expect("NVRTC")
                    .to_src();
                let c = &spec.contract.constants;
                let word = |i: usize| u32::from_le_bytes(c[i * 4..i * 4 + 4].try_into().unwrap());
                // SAFETY: plain driver calls; every out-pointer is a local.
                unsafe {
                    ok(sys::cuInit(0), "cuInit");
                    let mut device = 0;
                    ok(sys::cuDeviceGet(&mut device, 0), "cuDeviceGet");
                    let mut context = null_mut();
                    ok(
                        sys::cuDevicePrimaryCtxRetain(&mut context, device),
                        "retain",
                    );
                    ok(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent");
                    let mut stream = null_mut();
                    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
                    ok(sys::cuStreamCreate(&mut stream, flags), "cuStreamCreate");
                    let text = CString::new(ptx).unwrap();
                    let mut module = null_mut();
                    ok(
                        sys::cuModuleLoadData(&mut module, text.as_ptr().cast()),
                        "load",
                    );
                    let name = CString::new(spec.entry.as_str()).unwrap();
                    let mut function = null_mut();
                    ok(
                        sys::cuModuleGetFunction(&mut function, module, name.as_ptr()),
                        "function",
                    );
                    let mut cuda = Cuda {
                        context,
                        stream,
                        function,
                        grid: spec.grid,
                        block: spec.block,
                        words: [word(0), word(1), word(2)],
                        start: null_mut(),
                        end: null_mut(),
                    };
                    cuda.start = event();
                    cuda.end = event();
                    cuda
                }
            }

            /// The same kernel and stream over `elements` elements (grid as hrx's spec).
            pub fn with_elements(other: &Cuda, elements: usize) -> Self {
                let spec = hrx::kernels::iota(elements, other.words[1], other.words[2]);
                Cuda {
                    grid: spec.grid,
                    block: spec.block,
                    words: [elements as u32, other.words[1], other.words[2]],
                    start: event(),
                    end: event(),
                    ..*other
                }
            }

            fn current(&self) {
                // SAFETY: the retained primary context.
                ok(
                    unsafe { sys::cuCtxSetCurrent(self.context) },
                    "cuCtxSetCurrent",
                );
            }

            /// `cuCtxSetCurrent` of the primary context (an ablation: what hrx added per
            /// launch).
            pub fn set_current(&self) {
                self.current();
            }

            /// Whether the primary context is current (`cuCtxGetCurrent`).
            pub fn is_current(&self) -> bool {
                let mut current = null_mut();
                // SAFETY: writes one handle.
                ok(
                    unsafe { sys::cuCtxGetCurrent(&mut current) },
                    "cuCtxGetCurrent",
                );
                current == self.context
            }

            /// A timing-disabled event to wait on.
            pub fn sync_event(&self) -> sys::CUevent {
                self.current();
                let mut event = null_mut();
                let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
                // SAFETY: writes one handle; the context is current.
                ok(
                    unsafe { sys::cuEventCreate(&mut event, flags) },
                    "cuEventCreate",
                );
                event
            }

            pub fn destroy_event(&self, event: sys::CUevent) {
                self.current();
                // SAFETY: from `sync_event`, idle.
                ok(unsafe { sys::cuEventDestroy_v2(event) }, "cuEventDestroy");
            }

            /// `cuGraphLaunch`, then `cuEventRecord` of `event` + `cuEventSynchronize`
            /// instead of `cuStreamSynchronize`.
            pub fn launch_event_sync(&self, graph: &RawGraph, event: sys::CUevent) {
                // SAFETY: live handles.
                unsafe {
                    ok(sys::cuGraphLaunch(graph.exec, self.stream), "cuGraphLaunch");
                    ok(sys::cuEventRecord(event, self.stream), "cuEventRecord");
                    ok(sys::cuEventSynchronize(event), "cuEventSynchronize");
                }
            }

            pub fn alloc(&self, len: usize) -> sys::CUdeviceptr {
                self.current();
                let mut address = 0;
                // SAFETY: writes one address.
                ok(
                    unsafe { sys::cuMemAlloc_v2(&mut address, len) },
                    "cuMemAlloc",
                );
                address
            }

            pub fn free(&self, address: sys::CUdeviceptr) {
                self.current();
                // SAFETY: from `alloc`, idle.
                ok(unsafe { sys::cuMemFree_v2(address) }, "cuMemFree");
            }

            /// Pinned host memory with hrx's flags (mapped, portable), filled with a pattern.
            pub fn host_alloc(&self, len: usize) -> *mut c_void {
                self.current();
                let mut pointer = null_mut();
                let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
                // SAFETY: writes one pointer; then fills the `len` bytes it owns.
                unsafe {
                    ok(
                        sys::cuMemHostAlloc(&mut pointer, len, flags),
                        "cuMemHostAlloc",
                    );
                    let bytes = std::slice::from_raw_parts_mut(pointer.cast::<u8>(), len);
                    for (i, b) in bytes.iter_mut().enumerate() {
                        *b = (i * 31 + 7) as u8;
                    }
                }
                pointer
            }

            pub fn free_host(&self, pointer: *mut c_void) {
                self.current();
                // SAFETY: from `host_alloc`, idle.
                ok(unsafe { sys::cuMemFreeHost(pointer) }, "cuMemFreeHost");
            }

            /// The kernel's parameter values for `out`.
            fn launch_params(&self, out: &sys::CUdeviceptr) -> [*mut c_void; 4] {
                [
                    std::ptr::from_ref(out).cast_mut().cast(),
                    std::ptr::from_ref(&self.words[0]).cast_mut().cast(),
                    std::ptr::from_ref(&self.words[1]).cast_mut().cast(),
                    std::ptr::from_ref(&self.words[2]).cast_mut().cast(),
                ]
            }

            /// An executable graph of `count` dependent iota kernels on `out`.
            pub fn iota_graph(
                &self,
                out: sys::CUdeviceptr,
                count: usize,
                timing: Timing,
            ) -> RawGraph {
                self.current();
                let mut params = self.launch_params(&out);
                let node_params = sys::CUDA_KERNEL_NODE_PARAMS {
                    func: self.function,
                    gridDimX: self.grid[0],
                    gridDimY: self.grid[1],
                    gridDimZ: self.grid[2],
                    blockDimX: self.block[0],
                    blockDimY: self.block[1],
                    blockDimZ: self.block[2],
                    sharedMemBytes: 0,
                    kernelParams: params.as_mut_ptr(),
                    extra: null_mut(),
                    kern: null_mut(),
                    ctx: null_mut(),
                };
                // SAFETY: driver calls on live handles; parameters outlive each call.
                unsafe {
                    let mut graph = null_mut();
                    ok(sys::cuGraphCreate(&mut graph, 0), "cuGraphCreate");
                    let events = (timing == Timing::Nodes).then(|| (event(), event()));
                    let mut last: Option<sys::CUgraphNode> = None;
                    if let Some((start, _)) = events {
                        let mut node = null_mut();
                        ok(
                            sys::cuGraphAddEventRecordNode(&mut node, graph, null_mut(), 0, start),
                            "event node",
                        );
                        last = Some(node);
                    }
                    for _ in 0..count {
                        let deps: Vec<sys::CUgraphNode> = last.into_iter().collect();
                        let mut node = null_mut();
                        ok(
                            sys::cuGraphAddKernelNode_v2(
                                &mut node,
                                graph,
                                deps.as_ptr(),
                                deps.len(),
                                &node_params,
                            ),
                            "kernel node",
                        );
                        last = Some(node);
                    }
                    if let Some((_, end)) = events {
                        let deps: Vec<sys::CUgraphNode> = last.into_iter().collect();
                        let mut node = null_mut();
                        ok(
                            sys::cuGraphAddEventRecordNode(
                                &mut node,
                                graph,
                                deps.as_ptr(),
                                deps.len(),
                                end,
                            ),
                            "event node",
                        );
                    }
                    let mut exec = null_mut();
                    ok(
                        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0),
                        "instantiate",
                    );
                    ok(sys::cuGraphDestroy(graph), "cuGraphDestroy");
                    RawGraph { exec, events }
                }
            }

            /// The hardware test's shape over `len` bytes (`host`: pinned, mapped; `back`:
            /// pinned): fill `host` with 7 -> copy its first half into `local` -> fill the
            /// second half of `local` with 9 -> copy `local` into `back`. Memset and memcpy
            /// nodes only, as hrx builds them.
            pub fn copy_graph(
                &self,
                host: *mut c_void,
                local: sys::CUdeviceptr,
                back: *mut c_void,
                len: usize,
                timing: Timing,
            ) -> RawGraph {
                self.current();
                let memset =
                    |dst: sys::CUdeviceptr, value: u32, len: usize| sys::CUDA_MEMSET_NODE_PARAMS {
                        dst,
                        pitch: len,
                        value,
                        elementSize: 1,
                        width: len,
                        height: 1,
                    };
                let memcpy = |src: (sys::CUmemorytype, *mut c_void, sys::CUdeviceptr),
                              dst: (sys::CUmemorytype, *mut c_void, sys::CUdeviceptr),
                              len: usize| sys::CUDA_MEMCPY3D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcZ: 0,
                    srcLOD: 0,
                    srcMemoryType: src.0,
                    srcHost: src.1,
                    srcDevice: src.2,
                    srcArray: null_mut(),
                    reserved0: null_mut(),
                    srcPitch: len,
                    srcHeight: 1,
                    dstXInBytes: 0,
                    dstY: 0,
                    dstZ: 0,
                    dstLOD: 0,
                    dstMemoryType: dst.0,
                    dstHost: dst.1,
                    dstDevice: dst.2,
                    dstArray: null_mut(),
                    reserved1: null_mut(),
                    dstPitch: len,
                    dstHeight: 1,
                    WidthInBytes: len,
                    Height: 1,
                    Depth: 1,
                };
                use sys::CUmemorytype::{
                    CU_MEMORYTYPE_DEVICE as DEVICE, CU_MEMORYTYPE_HOST as HOST,
                };
                // SAFETY: driver calls on live handles and memory of `len` bytes each.
                unsafe {
                    let mut host_device = 0;
                    ok(
                        sys::cuMemHostGetDevicePointer_v2(&mut host_device, host, 0),
                        "device pointer",
                    );
                    let mut graph = null_mut();
                    ok(sys::cuGraphCreate(&mut graph, 0), "cuGraphCreate");
                    let events = (timing == Timing::Nodes).then(|| (event(), event()));
                    let mut last: Vec<sys::CUgraphNode> = Vec::new();
                    if let Some((start, _)) = events {
                        let mut node = null_mut();
                        ok(
                            sys::cuGraphAddEventRecordNode(&mut node, graph, null_mut(), 0, start),
                            "event node",
                        );
                        last = vec![node];
                    }
                    let half = len / 2;
                    let mut node = null_mut();
                    let p = memset(host_device, 7, len);
                    ok(
                        sys::cuGraphAddMemsetNode(
                            &mut node,
                            graph,
                            last.as_ptr(),
                            last.len(),
                            &p,
                            self.context,
                        ),
                        "memset",
                    );
                    last = vec![node];
                    let p = memcpy((HOST, host, 0), (DEVICE, null_mut(), local), half);
                    ok(
                        sys::cuGraphAddMemcpyNode(
                            &mut node,
                            graph,
                            last.as_ptr(),
                            last.len(),
                            &p,
                            self.context,
                        ),
                        "memcpy",
                    );
                    last = vec![node];
                    let p = memset(local + half as u64, 9, len - half);
                    ok(
                        sys::cuGraphAddMemsetNode(
                            &mut node,
                            graph,
                            last.as_ptr(),
                            last.len(),
                            &p,
                            self.context,
                        ),
                        "memset",
                    );
                    last = vec![node];
                    let p = memcpy((DEVICE, null_mut(), local), (HOST, back, 0), len);
                    ok(
                        sys::cuGraphAddMemcpyNode(
                            &mut node,
                            graph,
                            last.as_ptr(),
                            last.len(),
                            &p,
                            self.context,
                        ),
                        "memcpy",
                    );
                    last = vec![node];
                    if let Some((_, end)) = events {
                        ok(
                            sys::cuGraphAddEventRecordNode(
                                &mut node,
                                graph,
                                last.as_ptr(),
                                last.len(),
                                end,
                            ),
                            "event node",
                        );
                    }
                    let mut exec = null_mut();
                    ok(
                        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0),
                        "instantiate",
                    );
                    ok(sys::cuGraphDestroy(graph), "cuGraphDestroy");
                    RawGraph { exec, events }
                }
            }

            pub fn launch_sync(&self, graph: &RawGraph) {
                // SAFETY: live handles.
                unsafe {
                    ok(sys::cuGraphLaunch(graph.exec, self.stream), "cuGraphLaunch");
                    ok(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize");
                }
            }

            /// `cuGraphLaunch` + `cuStreamSynchronize`, their answers returned, not checked.
            pub fn launch_sync_answers(&self, graph: &RawGraph) -> (CUresult, CUresult) {
                // SAFETY: live handles.
                unsafe {
                    let launch = sys::cuGraphLaunch(graph.exec, self.stream);
                    (launch, sys::cuStreamSynchronize(self.stream))
                }
            }

            /// Stream events around `cuGraphLaunch` (hrx's former method), in ms.
            pub fn launch_between_stream_events(&self, graph: &RawGraph) -> f64 {
                // SAFETY: live handles.
                unsafe {
                    ok(sys::cuEventRecord(self.start, self.stream), "record");
                    ok(sys::cuGraphLaunch(graph.exec, self.stream), "cuGraphLaunch");
                    ok(sys::cuEventRecord(self.end, self.stream), "record");
                    ok(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize");
                }
                self.elapsed_ms()
            }

            /// `count` kernels launched one by one between stream events, in ms.
            pub fn kernels_between_events(&self, out: sys::CUdeviceptr, count: usize) -> f64 {
                let mut params = self.launch_params(&out);
                // SAFETY: live handles; the parameters outlive the launches.
                unsafe {
                    ok(sys::cuEventRecord(self.start, self.stream), "record");
                    for _ in 0..count {
                        ok(
                            sys::cuLaunchKernel(
                                self.function,
                                self.grid[0],
                                self.grid[1],
                                self.grid[2],
                                self.block[0],
                                self.block[1],
                                self.block[2],
                                0,
                                self.stream,
                                params.as_mut_ptr(),
                                null_mut(),
                            ),
                            "cuLaunchKernel",
                        );
                    }
                    ok(sys::cuEventRecord(self.end, self.stream), "record");
                    ok(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize");
                }
                self.elapsed_ms()
            }

            pub fn upload_sync(&self, dst: sys::CUdeviceptr, src: *mut c_void, len: usize) {
                // SAFETY: pinned `src` and device `dst` of `len` bytes each.
                unsafe {
                    ok(
                        sys::cuMemcpyHtoDAsync_v2(dst, src, len, self.stream),
                        "cuMemcpyHtoDAsync",
                    );
                    ok(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize");
                }
            }

            /// A pinned upload between stream events, in ms.
            pub fn upload_between_events(
                &self,
                dst: sys::CUdeviceptr,
                src: *mut c_void,
                len: usize,
            ) -> f64 {
                // SAFETY: live handles; pinned `src` and device `dst` of `len` bytes each.
                unsafe {
                    ok(sys::cuEventRecord(self.start, self.stream), "record");
                    ok(
                        sys::cuMemcpyHtoDAsync_v2(dst, src, len, self.stream),
                        "cuMemcpyHtoDAsync",
                    );
                    ok(sys::cuEventRecord(self.end, self.stream), "record");
                    ok(sys::cuStreamSynchronize(self.stream), "cuStreamSynchronize");
                }
                self.elapsed_ms()
            }

            fn elapsed_ms(&self) -> f64 {
                let mut ms = 0.0f32;
                // SAFETY: completed events.
                ok(
                    unsafe { sys::cuEventElapsedTime_v2(&mut ms, self.start, self.end) },
                    "elapsed",
                );
                f64::from(ms)
            }

            /// Checks a few words of an iota output.
            pub fn check_iota(&self, out: sys::CUdeviceptr) {
                let n = self.words[0] as usize;
                let mut bytes = vec![0u8; n * 4];
                self.current();
                // SAFETY: `out` holds `n` words; synchronous copy.
                ok(
                    unsafe { sys::cuMemcpyDtoH_v2(bytes.as_mut_ptr().cast(), out, bytes.len()) },
                    "cuMemcpyDtoH",
                );
                for i in [0, 1, n / 2, n - 1] {
                    let word = u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
                    let expected = self.words[1].wrapping_add(self.words[2].wrapping_mul(i as u32));
                    assert_eq!(word, expected, "raw iota[{i}]");
                }
            }
        }

        fn event() -> sys::CUevent {
            let mut event = null_mut();
            let flags = sys::CUevent_flags::CU_EVENT_DEFAULT as u32;
            // SAFETY: writes one handle; the context is current.
            ok(
                unsafe { sys::cuEventCreate(&mut event, flags) },
                "cuEventCreate",
            );
            event
        }
    }
}
