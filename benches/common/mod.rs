//! What the runtime and GPU benches share: the synthetic frames of the pipeline groups and an
//! interleaved A/B measurement for small ratios.

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup};
use hrx::{Runtime, RuntimeOptions};
use hrx_capture::{Recorder, RecorderOptions};
use hrx_workloads::{Frame, Pipeline, PipelineOptions};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

/// Keeps glibc's heap for the process: allocations up to 32 MiB come from the heap, and
/// freed memory is not handed back to the kernel. The pipeline groups hand their frames
/// (2.7 MB each) to the pipeline, which frees each once written: with glibc's defaults, the
/// free of a round's last frame trimmed the heap inside the timed run in some processes
/// (1.3 ms, one round in two) and every frame was a fresh mapping to fault in in others,
/// slowing both turns of a pair by up to 2x and hiding what tracing costs (BENCHMARKS.md,
/// capture, session 30). What the benches measure is the runtime, not the allocator.
#[allow(dead_code)] // the GPU bench only
pub fn keep_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; called before the groups allocate.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// Prints the crashing thread's name and backtrace to stderr on SIGSEGV, SIGBUS, SIGILL and
/// SIGFPE, then lets the signal's default action end the process: a bench that dies on a
/// device host says where (session 40's CUPTI-turn crashes left only their signal). Not
/// async-signal-safe (it allocates): a diagnostic for a process that is ending anyway. Not
/// SIGABRT: glibc aborts on heap corruption holding its allocator's lock, which the
/// backtrace would wait for. A trace recorder installed later runs its own handler first,
/// then this one (it passes signals on).
#[allow(dead_code)] // the GPU bench's
pub fn backtrace_on_crash() {
    extern "C" fn on_crash(signal: libc::c_int) {
        let thread = std::thread::current();
        let backtrace = std::backtrace::Backtrace::force_capture();
        eprintln!(
            "bench: signal {signal} on thread {:?}:\n{backtrace}",
            thread.name()
        );
    }
    for signal in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
        // SAFETY: a zeroed sigaction with a plain handler, reset to the default action once
        // it ran (the faulting instruction then ends the process).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_crash as *const () as usize;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// A deterministic synthetic RGB8 frame (a gradient with per-row and per-seed variation).
pub fn frame(width: usize, height: usize, seed: usize) -> Frame {
    let rgb = (0..width * height * 3)
        .map(|i| ((i * 7 + seed * 13) ^ (i / (width * 3) * 5)) as u8)
        .collect();
    Frame { width, height, rgb }
}

/// The times of two workloads measured alternately.
pub struct Interleaved {
    /// Median time of `a`, ms.
    pub a_ms: f64,
    /// Median time of `b`, ms.
    pub b_ms: f64,
    /// Quartiles (p25, p50, p75) of the per-round ratio `b / a`.
    pub ratio: [f64; 3],
    /// Rounds measured.
    pub rounds: usize,
}

/// The times (ms) of `N` workloads run in turn for `rounds` rounds (after one warm-up round
/// each), the first to run rotating every round, so that drifts of the machine (clocks,
/// other load) hit all alike; only the workloads are timed, each on a fresh input from
/// `setup`. A ratio of a few percent is below the run-to-run spread of consecutive criterion
/// groups on a shared machine; rounds like these resolve it.
pub fn rotated<I, const N: usize>(
    rounds: usize,
    mut setup: impl FnMut() -> I,
    mut workloads: [&mut dyn FnMut(I); N],
) -> [Vec<f64>; N] {
    let mut time = |f: &mut dyn FnMut(I)| {
        let input = setup();
        let start = Instant::now();
        f(input);
        start.elapsed().as_secs_f64() * 1e3
    };
    for f in workloads.iter_mut() {
        time(*f);
    }
    let mut times = [(); N].map(|()| Vec::with_capacity(rounds));
    for round in 0..rounds.max(1) {
        for turn in 0..N {
            let i = (round + turn) % N;
            times[i].push(time(workloads[i]));
        }
    }
    times
}

impl Interleaved {
    /// The summary of `a_ms[i]` and `b_ms[i]` measured in round `i`.
    pub fn new(mut a_ms: Vec<f64>, mut b_ms: Vec<f64>) -> Self {
        assert_eq!(a_ms.len(), b_ms.len(), "one time of each per round");
        let mut ratios: Vec<f64> = a_ms.iter().zip(&b_ms).map(|(a, b)| b / a).collect();
        let quantile = |v: &mut Vec<f64>, q: f64| {
            v.sort_by(f64::total_cmp);
            v[((v.len() - 1) as f64 * q).round() as usize]
        };
        Interleaved {
            a_ms: quantile(&mut a_ms, 0.5),
            b_ms: quantile(&mut b_ms, 0.5),
            ratio: [
                quantile(&mut ratios, 0.25),
                quantile(&mut ratios, 0.5),
                quantile(&mut ratios, 0.75),
            ],
            rounds: ratios.len(),
        }
    }

    /// Standard error of the median ratio: that of the median of a normal sample, its sigma
    /// estimated from the interquartile range.
    pub fn standard_error(&self) -> f64 {
        1.2533 * (self.ratio[2] - self.ratio[0]) / 1.349 / (self.rounds as f64).sqrt()
    }
}

impl std::fmt::Display for Interleaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let se = self.standard_error();
        write!(
            f,
            "{} interleaved rounds: a {:.3} ms, b {:.3} ms (medians); b/a per round: median \
             {:.4} [p25 {:.4}, p75 {:.4}], standard error of the median {se:.4}",
            self.rounds, self.a_ms, self.b_ms, self.ratio[1], self.ratio[0], self.ratio[2]
        )
    }
}

/// Paired rounds to run: `HRX_BENCH_ROUNDS`, else `default`.
pub fn rounds(default: usize) -> usize {
    env_count("HRX_BENCH_ROUNDS", default)
}

/// Epochs of fresh runtimes for [`traced_rounds`]: `HRX_BENCH_EPOCHS`, else `default`.
pub fn epochs(default: usize) -> usize {
    env_count("HRX_BENCH_EPOCHS", default)
}

fn env_count(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

/// The traced pipeline against the untraced one in paired rounds, with a control.
pub struct TracedRounds {
    /// Untraced (a) vs traced (b).
    pub traced: Interleaved,
    /// Untraced (a) vs a second untraced runtime (b): how far two runtimes of the same options
    /// differ, which bounds the ratio that `traced` can resolve; with
    /// [`traced_rounds_against`]'s control options, untraced vs that traced control turn.
    pub control: Interleaved,
    /// Whether the control turn traced ([`traced_rounds_against`]), which its label says.
    pub control_traced: bool,
    /// The control turn (a) vs traced (b): where the control turn traces too
    /// ([`traced_rounds_against`]), what the traced turn's options add to its.
    #[allow(dead_code)] // read by the GPU bench only
    pub against_control: Interleaved,
    /// Fresh sets of runtimes the rounds were spread over.
    pub epochs: usize,
    /// Where the traced turn's host time went, read back from its traces (where the control
    /// turn does not trace into them too).
    pub spans: Option<TracedSpans>,
}

/// The traced turn's host spans, capture fences, recorder waits, annotations and digests,
/// summed over its timed and untimed runs alike (the traces hold both), per run: what a
/// traced run spends where (issue 17 (d): the traced pipeline's extra on the GPU).
#[derive(Default)]
pub struct TracedSpans {
    /// Pipeline runs the traces hold (timed and warm-up).
    runs: usize,
    /// Label -> (spans, total ns).
    totals: std::collections::BTreeMap<String, (u64, u64)>,
}

impl TracedSpans {
    fn add(&mut self, label: String, (start_ns, end_ns): (u64, u64)) {
        let entry = self.totals.entry(label).or_default();
        entry.0 += 1;
        entry.1 += end_ns.saturating_sub(start_ns);
    }

    /// Adds what the trace at `path` holds, `runs` pipeline runs.
    fn read(&mut self, path: &Path, runs: usize) {
        use hrx_capture::schema::Record;
        let Ok(trace) = hrx_capture::read_all(path) else {
            return;
        };
        self.runs += runs;
        let mut names = std::collections::HashMap::new();
        for record in &trace.records {
            match record {
                Record::AnnotationName(n) => {
                    names.insert(n.name, n.text.clone());
                }
                Record::HostSpan(s) => self.add(s.kind.label().into(), (s.start_ns, s.end_ns)),
                // A host access held at a capture fence names no submission; a full
                // ring's wait does.
                Record::RecorderWait(w) => self.add(
                    format!(
                        "{} {}",
                        if w.submission.is_some() {
                            "ring full"
                        } else {
                            "host fence"
                        },
                        w.thread_name
                    ),
                    (w.start_ns, w.end_ns),
                ),
                Record::DigestSpan(d) => {
                    self.add("digest (capture)".into(), (d.start_ns, d.end_ns))
                }
                Record::AnnotationRange(a) => {
                    let name = names.get(&a.name).cloned().unwrap_or_default();
                    self.add(format!("range {name}"), (a.start_ns, a.end_ns));
                }
                Record::RegionTiming(t) => {
                    self.add("region (host)".into(), (t.start_ns, t.end_ns));
                    if let Some(d) = t.device {
                        self.add("region (device)".into(), (d.start_ns, d.end_ns));
                    }
                }
                _ => {}
            }
        }
        self.place_fence_waits(&trace.records);
    }

    /// Each host access held at a capture fence, by the frame of its run it preceded
    /// (submissions counted in time order, 8 a run), with the time since the end of the
    /// first region (the upload) of the submission 3 before (the frame whose host write
    /// last filled the slot's input: 3 frames in flight).
    fn place_fence_waits(&mut self, records: &[hrx_capture::schema::Record]) {
        use hrx_capture::schema::Record;
        let mut submits: Vec<(u64, u64)> = records
            .iter()
            .filter_map(|r| match r {
                Record::Submit(s) => Some((s.time_ns, s.submission.0)),
                _ => None,
            })
            .collect();
        submits.sort_unstable();
        let mut first_region_end = std::collections::HashMap::new();
        for record in records {
            if let Record::RegionTiming(t) = record
                && t.region.0 == 0
            {
                first_region_end.insert(t.submission.0, t.end_ns);
            }
        }
        // A probe build records each host write's hash as a digest of submission `u64::MAX`.
        let hashes: Vec<(u64, u64)> = records
            .iter()
            .filter_map(|r| match r {
                Record::DigestSpan(d) if d.submission.0 == u64::MAX => Some((d.start_ns, d.end_ns)),
                _ => None,
            })
            .collect();
        for record in records {
            let Record::RecorderWait(w) = record else {
                continue;
            };
            if w.submission.is_some() {
                continue;
            }
            let next = submits.partition_point(|&(time, _)| time < w.start_ns);
            // The hash the wait waited for ends nearest the wait's end.
            let hash = hashes
                .iter()
                .copied()
                .min_by_key(|&(_, end)| end.abs_diff(w.end_ns));
            if let Some((start, end)) = hash {
                self.add(
                    format!("  .. its hash ran (frame {})", next % 8),
                    (start, end),
                );
                self.add(
                    format!(
                        "  .. its hash ended, to the wait's end (frame {})",
                        next % 8
                    ),
                    (end.min(w.end_ns), w.end_ns.max(end)),
                );
                if let Some(upload_end) = next
                    .checked_sub(3)
                    .and_then(|i| first_region_end.get(&submits[i].1))
                {
                    self.add(
                        format!("  .. upload end to its hash's start (frame {})", next % 8),
                        (*upload_end, start),
                    );
                }
            }
            self.add(
                format!("  fence before frame {}", next % 8),
                (w.start_ns, w.end_ns),
            );
            if let Some(end) = next
                .checked_sub(3)
                .and_then(|i| first_region_end.get(&submits[i].1))
            {
                self.add(
                    format!("  .. since frame {}'s slot's upload end", next % 8),
                    (*end, w.start_ns),
                );
            }
        }
    }
}

impl std::fmt::Display for TracedSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runs = self.runs.max(1) as f64;
        write!(f, "traced turn's spans per run ({} runs):", self.runs)?;
        for (label, (count, ns)) in &self.totals {
            write!(
                f,
                "\n    {label:<24} {:>7.1} spans {:>10.1} µs",
                *count as f64 / runs,
                *ns as f64 / runs / 1e3
            )?;
        }
        Ok(())
    }
}

/// The image pipeline over `frames` in `rounds` paired rounds spread over `epochs` epochs.
/// Each epoch makes three runtimes of `options`, an untraced one, a second untraced one (the
/// control) and one tracing into a new trace file in `dir` (output digests on, the default),
/// in an order rotated every epoch, then runs the three pipelines in turn (see
/// [`rotated`]), the trace flushed before each. With `HRX_BENCH_NO_HOST_WRITES` set the
/// traced runtime records no host write's bytes (`RuntimeOptions::trace_host_writes`). Fresh runtimes spread over the epochs
/// average out what one runtime's threads and memory placement add to all its rounds alike.
pub fn traced_rounds(
    options: impl Fn() -> RuntimeOptions,
    dir: &Path,
    frames: &[Frame],
    rounds: usize,
    epochs: usize,
) -> TracedRounds {
    traced_rounds_against(&options, None, dir, frames, rounds, epochs)
}

/// [`traced_rounds`] whose control turn, given `control`, is a runtime of those options
/// tracing into the same file: `against_control` then pairs two ways of tracing round by
/// round (a cost too small for two separate sets of rounds to resolve).
pub fn traced_rounds_against(
    options: &dyn Fn() -> RuntimeOptions,
    control_options: Option<&dyn Fn() -> RuntimeOptions>,
    dir: &Path,
    frames: &[Frame],
    rounds: usize,
    epochs: usize,
) -> TracedRounds {
    let (width, height) = (frames[0].width, frames[0].height);
    let epochs = epochs.clamp(1, rounds.max(1));
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    let mut spans = control_options.is_none().then(TracedSpans::default);
    for epoch in 0..epochs {
        let recorder = Recorder::create(
            dir.join(format!("rounds-{epoch}.hrxt")),
            RecorderOptions::default(),
        )
        .expect("recorder");
        let mut runtimes: [Option<Runtime>; 3] = [None, None, None];
        for turn in 0..3 {
            let i = (epoch + turn) % 3;
            let runtime_options = match (i, control_options) {
                // A diagnostic: `HRX_BENCH_NO_HOST_WRITES` set, the traced turn records no
                // host write's bytes (what capturing the frames costs, session 43).
                (2, _) => options()
                    .recorder(recorder.clone())
                    .trace_host_writes(std::env::var_os("HRX_BENCH_NO_HOST_WRITES").is_none()),
                (1, Some(control)) => control().recorder(recorder.clone()),
                _ => options(),
            };
            runtimes[i] = Some(Runtime::new(runtime_options).expect("runtime"));
        }
        let runtimes = runtimes.map(|r| r.expect("made above"));
        let mut pipelines = runtimes.each_ref().map(|runtime| {
            Pipeline::new(runtime, width, height, PipelineOptions::default()).expect("pipeline")
        });
        let run = |pipeline: &mut Pipeline, frames: Vec<Frame>| {
            pipeline
                .run(frames, |_, output| drop(black_box(output)))
                .expect("run");
        };
        let [untraced, control, traced] = &mut pipelines;
        let share = rounds / epochs + usize::from(epoch < rounds % epochs);
        // The trace writer catches up before every timed run: the traced run's writing,
        // unfinished when it returns, would otherwise slow whichever run follows it.
        let settled = || {
            recorder.flush().expect("flush the rounds' trace");
            frames.to_vec()
        };
        let epoch_times = rotated(
            share,
            settled,
            [
                &mut |f| run(untraced, f),
                &mut |f| run(control, f),
                &mut |f| run(traced, f),
            ],
        );
        for (all, epoch) in times.iter_mut().zip(epoch_times) {
            all.extend(epoch);
        }
        drop(pipelines);
        drop(runtimes);
        recorder.close().expect("close the rounds' trace");
        if let Some(spans) = &mut spans {
            // `rotated`'s runs of the traced turn: one untimed warm-up and `share` timed.
            spans.read(&dir.join(format!("rounds-{epoch}.hrxt")), share.max(1) + 1);
        }
    }
    let [untraced, control, traced] = times;
    TracedRounds {
        against_control: Interleaved::new(control.clone(), traced.clone()),
        traced: Interleaved::new(untraced.clone(), traced),
        control: Interleaved::new(untraced, control),
        control_traced: control_options.is_some(),
        epochs,
        spans,
    }
}

impl std::fmt::Display for TracedRounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let second = if self.control_traced {
            "the control turn's traced runtime"
        } else {
            "a second untraced runtime"
        };
        write!(
            f,
            "untraced (a) vs traced (b), {} epochs of fresh runtimes, {}\n  control: untraced \
             (a) vs {second} (b), {}",
            self.epochs, self.traced, self.control
        )?;
        if let Some(spans) = &self.spans {
            write!(f, "\n  {spans}")?;
        }
        Ok(())
    }
}

/// One criterion function per `(name, runtime)`: the image pipeline over `frames` (copied
/// outside the timed part), 3 frames in flight.
pub fn pipeline_functions(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtimes: &[(&str, &Runtime)],
    frames: &[Frame],
) {
    let (width, height) = (frames[0].width, frames[0].height);
    for &(name, runtime) in runtimes {
        let mut pipeline =
            Pipeline::new(runtime, width, height, PipelineOptions::default()).expect("pipeline");
        group.bench_function(name, |b| {
            b.iter_batched(
                || frames.to_vec(),
                |frames| {
                    pipeline
                        .run(frames, |_, output| drop(black_box(output)))
                        .expect("run")
                },
                BatchSize::LargeInput,
            )
        });
    }
}
