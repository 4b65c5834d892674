//! Step 2 of a replay: a prepared graph rebuilt operation by operation with the captured
//! byte ranges (module `objects` says when), scoped callbacks and host operations replaced
//! by callbacks that write the captured contents (or fail as the capture's did).

use super::objects::Objects;
use super::open::{access, lane};
use super::{Entry, EntryQueue, Loaded, lock};
use crate::plan::{OpPlan, RuntimePlan};
use hrx::{BufferView, Error, GpuAccess, HostViews};
use hrx_capture::schema::{self as s, OpKind};

/// Runs the next queued entry of a replaced callback: nothing, the captured failure, or
/// the captured bytes handed to `write` (binding index, bytes).
pub(super) fn apply_next(
    queue: &EntryQueue,
    mut write: impl FnMut(usize, &[u8]) -> hrx::Result<()>,
) -> hrx::Result<()> {
    let entry = lock(queue).pop_front();
    match entry {
        None | Some(Entry::Noop) => Ok(()),
        Some(Entry::Fail {
            device_lost,
            message,
        }) => Err(failure(device_lost, message)),
        Some(Entry::Write(writes)) => writes
            .into_iter()
            .try_for_each(|(binding, bytes)| write(binding, &bytes)),
    }
}

pub(super) fn length_mismatch(what: &str, binding: usize, captured: usize, len: usize) -> Error {
    Error::Message(format!(
        "replayed {what} binding {binding}: {captured} captured bytes for {len} bytes"
    ))
}

/// The callback replacing a scoped native callback: it writes captured bytes through the
/// bindings' host mappings, fails as the captured one failed, or does nothing.
pub(super) fn scoped_callback(
    queue: EntryQueue,
) -> impl FnMut(&[hrx::gpu::View<'_>]) -> hrx::Result<()> + Send + 'static {
    move |views| {
        apply_next(&queue, |binding, bytes| {
            let view = views.get(binding).ok_or_else(|| {
                Error::Message(format!("replayed callback has no binding {binding}"))
            })?;
            let pointer = view.host_pointer().ok_or_else(|| {
                Error::Unsupported(format!(
                    "replayed callback binding {binding} has no host mapping"
                ))
            })?;
            if bytes.len() != view.len() {
                return Err(length_mismatch(
                    "callback",
                    binding,
                    bytes.len(),
                    view.len(),
                ));
            }
            // SAFETY: the binding was declared written; the runtime orders every
            // conflicting use around this callback; `pointer` maps `view.len()` bytes of
            // host-visible memory, exactly the length copied.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), pointer, bytes.len()) };
            Ok(())
        })
    }
}

/// The callback replacing a host operation (see [`scoped_callback`]).
pub(super) fn host_callback(
    queue: EntryQueue,
) -> impl FnMut(&mut HostViews<'_>) -> hrx::Result<()> + Send + 'static {
    move |views| {
        apply_next(&queue, |binding, bytes| {
            let target = views.write(binding)?;
            if target.len() != bytes.len() {
                return Err(length_mismatch(
                    "host callback",
                    binding,
                    bytes.len(),
                    target.len(),
                ));
            }
            target.copy_from_slice(bytes);
            Ok(())
        })
    }
}

pub(super) fn failure(device_lost: bool, message: String) -> Error {
    let message = format!("replayed failure of the captured callback: {message}");
    if device_lost {
        Error::DeviceLost(message)
    } else {
        Error::Kernel(message)
    }
}

/// Whether a kernel operation binds a written range that overlaps another binding (the
/// capture used `gpu_aliasing`).
pub(super) fn aliases(op: &OpPlan) -> bool {
    op.uses.iter().enumerate().any(|(i, a)| {
        op.uses.iter().skip(i + 1).any(|b| {
            (a.access != s::Access::Read || b.access != s::Access::Read)
                && a.buffer == b.buffer
                && a.start < b.end
                && b.start < a.end
        })
    })
}

/// Adds captured operation `op` to `graph` (its buffers made).
pub(super) fn add_op(
    graph: &mut hrx::Graph,
    plan: &RuntimePlan<'_>,
    objects: &Objects,
    op: &OpPlan,
    queue: Option<EntryQueue>,
) -> hrx::Result<()> {
    let views = op
        .uses
        .iter()
        .map(|u| {
            (objects.live_buffer(plan.buffer_index[&u.buffer]))
                .and_then(|b| b.view(u.start as usize..u.end as usize))
        })
        .collect::<hrx::Result<Vec<BufferView>>>()?;
    let bindings = || {
        views
            .iter()
            .zip(&op.uses)
            .map(|(view, u)| GpuAccess::new(view.clone(), access(u.access)))
            .collect::<Vec<_>>()
    };
    let queue = queue.unwrap_or_default();
    match &op.op {
        OpKind::Fill { value } => graph.fill(views[0].clone(), *value)?,
        OpKind::Copy => graph.copy_on(views[0].clone(), views[1].clone(), lane(op.lane))?,
        OpKind::Kernel { kernel } => {
            let Loaded::Gpu(kernel) = &objects.kernels[plan.kernel_index[kernel]] else {
                return Err(Error::Message(format!(
                    "kernel {kernel} is not a GPU kernel"
                )));
            };
            if aliases(op) {
                // SAFETY: the captured application made this same call with these ranges
                // (the plan checked them against the kernel's contract), so it vouched for
                // the kernel being valid for the aliased bindings.
                unsafe { graph.gpu_aliasing(kernel, &views)? }
            } else {
                graph.gpu(kernel, &views)?
            }
        }
        OpKind::Npu { kernel } => {
            let Loaded::Npu(kernel) = &objects.kernels[plan.kernel_index[kernel]] else {
                return Err(Error::Message(format!(
                    "kernel {kernel} is not an NPU kernel"
                )));
            };
            graph.npu(kernel, &views)?
        }
        // SAFETY: the callback retains no native resource, writes only bindings declared
        // written (through their host mappings, within their length), lets nothing escape,
        // and reports a captured device loss as `DeviceLost`.
        OpKind::Scoped => unsafe { graph.gpu_scoped(&bindings(), scoped_callback(queue))? },
        OpKind::Host => graph.host(&bindings(), host_callback(queue))?,
    };
    Ok(())
}

/// Whether the replay lowered a graph as the capture did.
pub(super) fn same_lowering(captured: &[s::Region], replayed: &[hrx::RegionInfo]) -> bool {
    captured.len() == replayed.len()
        && captured.iter().zip(replayed).all(|(c, r)| {
            let kind = match r.kind {
                hrx::RegionKind::NativeGraph => s::RegionKind::NativeGraph,
                hrx::RegionKind::CopyBatch => s::RegionKind::CopyBatch,
                hrx::RegionKind::Scoped => s::RegionKind::Scoped,
                hrx::RegionKind::NpuRun => s::RegionKind::NpuRun,
                hrx::RegionKind::HostCallback => s::RegionKind::Host,
            };
            c.kind == kind && c.nodes.iter().map(|n| n.0 as usize).eq(r.nodes.clone())
        })
}
