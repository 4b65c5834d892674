//! Step 1 of a replay: a fresh runtime recording into a memory sink, sized for the plan's
//! buffers, with the plan's kernels loaded (built-in code by entry name, else the captured
//! code).

use super::Loaded;
use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{Event, KernelPlan, RuntimePlan};
use hrx::kernels::{KernelSpec, NpuKernelSpec, builtin_code};
use hrx::{
    Access, BindingContract, Error, GpuLane, KernelContract, Placement, Runtime, RuntimeOptions,
    TraceDigests,
};
use hrx_capture::schema::{self as s};
use hrx_capture::{Recorder, RecorderOptions, Sink};
use std::sync::Arc;
use std::time::Duration;

pub(super) fn access(access: s::Access) -> Access {
    match access {
        s::Access::Read => Access::Read,
        s::Access::Write => Access::Write,
        s::Access::ReadWrite => Access::ReadWrite,
    }
}

pub(super) fn lane(lane: s::Lane) -> GpuLane {
    match lane {
        s::Lane::Upload => GpuLane::Upload,
        s::Lane::Compute => GpuLane::Compute,
        s::Lane::Download => GpuLane::Download,
    }
}

/// Refuses a trace whose buffers cannot fit: GPU-local ones in the device's memory (where the
/// backend knows it), all of them in host memory on the software device and host-visible
/// ones anywhere. A trace is untrusted; a few bytes can declare terabytes of buffers, and
/// allocating them would swap or exhaust the machine before failing. What counts is the most
/// the replay holds at once ([`held_bytes`]): a program that frees buffers to fit a device
/// declares more than it ever holds.
pub(super) fn check_memory(runtime: &Runtime, plan: &RuntimePlan<'_>) -> Result<(), ReplayError> {
    let total = |filter: &dyn Fn(s::Placement) -> bool| held_bytes(plan, filter);
    let info = runtime.device_info();
    let device_local = total(&|p| matches!(p, s::Placement::GpuLocal));
    let on_host = match info.backend {
        "sim" => total(&|_| true),
        _ => total(&|p| !matches!(p, s::Placement::GpuLocal)),
    };
    let refuse = |what: &str, bytes: u64, limit: u64| ReplayError::Unreplayable {
        why: format!(
            "runtime {} declares {bytes} bytes of {what} buffers, more than the {limit} bytes of {what} memory here",
            plan.id.0
        ),
    };
    if info.backend != "sim" && info.memory_bytes > 0 && device_local > info.memory_bytes {
        return Err(refuse("device", device_local, info.memory_bytes));
    }
    if let Some(host) = host_memory_bytes()
        && on_host > host
    {
        return Err(refuse("host", on_host, host));
    }
    Ok(())
}

/// The most bytes of the buffers `filter` takes that a replay of `plan` holds at once: each
/// from the timeline's first need of it (module `objects`) to its release.
pub(super) fn held_bytes(plan: &RuntimePlan<'_>, filter: &dyn Fn(s::Placement) -> bool) -> u64 {
    // Per buffer: 0 not made, 1 held, 2 released.
    let mut state = vec![0u8; plan.buffers.len()];
    let (mut held, mut most) = (0u64, 0u64);
    let bytes = |b: usize| {
        let buffer = &plan.buffers[b];
        if filter(buffer.placement) {
            buffer.len as u64
        } else {
            0
        }
    };
    let need = |b: usize, state: &mut [u8], held: &mut u64| {
        if state[b] == 0 {
            state[b] = 1;
            *held = held.saturating_add(bytes(b));
        }
    };
    for event in &plan.timeline {
        match *event {
            Event::HostWrite(i) => {
                let b = plan.buffer_index[&plan.host_writes[i].buffer];
                need(b, &mut state, &mut held);
            }
            Event::Submit(position) => {
                let graph = plan.submissions[position].graph;
                for &b in &plan.graphs[graph].buffers {
                    need(b, &mut state, &mut held);
                }
            }
            Event::Release(b) => {
                most = most.max(held);
                if std::mem::replace(&mut state[b], 2) == 1 {
                    held = held.saturating_sub(bytes(b));
                }
            }
        }
    }
    most.max(held)
}

/// Physical memory of this machine, where the OS says.
pub(super) fn host_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

pub(super) fn placement(placement: s::Placement) -> Placement {
    match placement {
        s::Placement::GpuLocal => Placement::GpuLocal,
        s::Placement::HostVisible => Placement::HostVisible,
        s::Placement::NpuShared { group } => Placement::NpuShared { group },
    }
}

/// Whether the repeats time every operation (CUPTI on CUDA): where the trace says how the
/// capture timed operations (format 1.16), when that was every operation (CUPTI, the
/// software device, HIP's events); in an older trace, when the capture timed operations that
/// hrx's self-timing kernels cannot time: copies, fills, kernels whose stored code has no
/// self-timing entry.
pub(crate) fn times_more_than_kernels(plan: &RuntimePlan<'_>) -> bool {
    match plan.op_time_source {
        Some(s::OpTimeSource::Cupti | s::OpTimeSource::Host | s::OpTimeSource::Events) => {
            return true;
        }
        Some(s::OpTimeSource::BuiltinKernels | s::OpTimeSource::Off) => return false,
        None => {}
    }
    timed_ops(plan).any(|op| match op {
        s::OpKind::Kernel { kernel } => !plan
            .kernel_index
            .get(kernel)
            .and_then(|&k| plan.kernels[k].code)
            .is_some_and(hrx::kernels::declares_timed_entry),
        _ => true,
    })
}

/// Whether the capture timed any of its kernels.
fn times_kernels(plan: &RuntimePlan<'_>) -> bool {
    if plan.op_time_source == Some(s::OpTimeSource::Off) {
        return false;
    }
    timed_ops(plan).any(|op| matches!(op, s::OpKind::Kernel { .. }))
}

/// The operations the capture timed.
fn timed_ops<'p>(plan: &'p RuntimePlan<'_>) -> impl Iterator<Item = &'p s::OpKind> {
    plan.op_times
        .keys()
        .filter_map(|&(graph, node)| plan.graphs[graph].ops.get(node as usize))
        .map(|op| &op.op)
}

/// What the replay digests: what the capture did. A GPU-local range is digested by reading it
/// back from the device after its region, on the thread that ran it: a replay digesting more
/// than its capture (every intermediate of a pipeline, several MB a frame) keeps the device
/// and the host busier than the capture did, and its copy regions read 1.2-2x the captured
/// times on the H200 (BENCHMARKS.md, session 22). The comparison uses only what the capture
/// digested (`read_back`).
pub(crate) fn digests(plan: &RuntimePlan<'_>) -> TraceDigests {
    if plan.digests_all {
        TraceDigests::All
    } else {
        TraceDigests::Outputs
    }
}

/// A fresh runtime recording into a memory sink.
pub(super) fn open_runtime(
    plan: &RuntimePlan<'_>,
    options: &ReplayOptions,
    fault: Option<hrx::FaultSpec>,
    contents: bool,
    sink: impl Sink,
) -> Result<(Runtime, Recorder), ReplayError> {
    let recorder = Recorder::with_sink(
        sink,
        RecorderOptions {
            // The replay must not lose its own measurements: a full ring waits for the
            // writer rather than dropping.
            full_buffer_wait: Duration::from_secs(2),
            ..RecorderOptions::default()
        },
    )
    .map_err(|e| ReplayError::Measurement { why: e.to_string() })?;
    let mut runtime_options = RuntimeOptions::default()
        .backend(options.backend)
        .graph_slots(plan.graph_slots as usize)
        .capacity(plan.capacity as usize)
        .trace_contents(contents)
        .trace_digests(digests(plan))
        // The replay re-applies the trace's host writes: recording them again would keep a
        // copy of each one's bytes per repeat.
        .trace_host_writes(false)
        // Operations timed inside their graphs (`--per-op`): hrx's built-in kernels time
        // themselves whenever traced; CUPTI's activity (CUDA) only where the capture timed
        // other operations too, as a capture with kernel times does. The software device times
        // them anyway.
        .kernel_times(options.per_op && !options.isolated && times_more_than_kernels(plan))
        // Built-in kernels time themselves in the repeats only where the capture timed its
        // kernels: a capture of regions only replays the plain builds, so that its regions
        // compare like with like.
        .builtin_kernel_times(times_kernels(plan))
        // The replayed run is what the trace and the options say, not the environment.
        .environment(false)
        .recorder(recorder.clone());
    if let Some(fault) = fault {
        runtime_options = runtime_options.fault(fault);
    }
    let runtime = Runtime::new(runtime_options).map_err(|source| ReplayError::Runtime {
        runtime: plan.id.0,
        context: "opening the replay backend".into(),
        source,
    })?;
    // A slowdown judged against another backend's times would be noise (or hide one):
    // refused before anything runs (`auto` may pick a backend the capture did not use).
    let replaying = runtime.device_info().backend;
    if options.max_slowdown.is_some()
        && !hrx_analysis::compare::timings_comparable(&plan.backend, replaying)
    {
        return Err(ReplayError::TimingsNotComparable {
            runtime: plan.id.0,
            recorded: plan.backend.clone(),
            replaying: replaying.to_owned(),
        });
    }
    Ok((runtime, recorder))
}

pub(super) fn load_kernel(
    runtime: &Runtime,
    plan: &RuntimePlan<'_>,
    k: &KernelPlan<'_>,
    options: &ReplayOptions,
) -> Result<Loaded, ReplayError> {
    let contract = KernelContract {
        bindings: k
            .contract
            .iter()
            .map(|c| {
                BindingContract::new(
                    access(c.access),
                    c.extent_bytes as usize,
                    c.alignment as usize,
                )
            })
            .collect(),
        constants: k.constants.clone(),
    };
    let backend = runtime.device_info().backend.to_string();
    let missing = |error: Error| match error {
        Error::Unsupported(reason) => ReplayError::KernelMissing {
            runtime: plan.id.0,
            kernel: k.id.0,
            entry: k.entry.clone(),
            backend: backend.clone(),
            reason,
        },
        source => ReplayError::Runtime {
            runtime: plan.id.0,
            context: format!("loading kernel {} ({})", k.id, k.entry),
            source,
        },
    };
    let override_host = options.override_for(&k.entry);
    match k.engine {
        s::Engine::Gpu => {
            let mut code = builtin_code(&k.entry).unwrap_or_default();
            if code.host.is_none() && code.ptx.is_none() {
                // Not a built-in: the captured module (PTX text on CUDA).
                code.ptx = k
                    .code
                    .and_then(|bytes| std::str::from_utf8(bytes).ok())
                    .map(Arc::from);
            }
            if override_host.is_some() {
                code.host = override_host;
            }
            code.slowdown_percent = options.slowdown_for(&k.entry);
            let spec = KernelSpec {
                entry: k.entry.clone(),
                contract,
                grid: k.grid,
                block: k.block,
                code,
            };
            runtime.kernel(&spec).map(Loaded::Gpu).map_err(missing)
        }
        s::Engine::Npu => {
            let spec = NpuKernelSpec {
                name: k.entry.clone(),
                contract,
                groups: k.npu_groups.clone(),
                instructions: k.code.map(<[u8]>::to_vec).unwrap_or_default(),
                host: override_host.or_else(|| builtin_code(&k.entry).and_then(|c| c.host)),
            };
            runtime.npu_kernel(&spec).map(Loaded::Npu).map_err(missing)
        }
        s::Engine::Host => Err(ReplayError::unreplayable(format!(
            "runtime {}: kernel {} ({}) runs on the host, which no backend loads",
            plan.id, k.id, k.entry
        ))),
    }
}
