//! The replay runtime's objects along the timeline: made when the timeline first needs them,
//! let go where the trace says the program let go of a buffer.
//!
//! A captured program may free buffers to stay within a device's memory, and a long one
//! makes buffers as it goes; so the replay holds what the program held, not every buffer the
//! trace names:
//!
//! ```text
//!   Pending --first need--> Live --Release of the buffer (or of a buffer the graph uses)--> Released
//!      \______________________ Release _______________________________________________/
//! ```
//!
//! - A buffer is *needed* by a host write into it and by a submit of a graph using it; a
//!   graph by its submits. When a runtime opens, and as a streamed replay's chunk starts,
//!   every object its timeline needs before its first [`Event::Release`] is made at once, in
//!   capture order (buffers, then graphs): for a program that lets its buffers go only at its
//!   end, everything up front, as before releases were replayed. Objects needed after it are
//!   made at their first need (a graph prepared then, right before its first submit), so
//!   the replay never holds a buffer the program had not made yet, nor one it had let go.
//!   Objects the timeline never needs (a graph prepared but never submitted, a buffer nothing
//!   reads or writes) are never made.
//! - At a release, the replay waits for its submissions in flight that use the buffer (the
//!   program's had retired: its runtime lets a buffer's memory go only then), then lets go of
//!   the graphs using it and of the buffer: its memory is free before the next event.
//! - A later need of a released buffer (a submit, a host write: a damaged or edited trace)
//!   is [`ReplayError::Unreplayable`], "buffer N used after the trace released it".

use super::build::{add_op, same_lowering};
use super::open::{check_memory, load_kernel, placement};
use super::{EntryQueue, Loaded};
use crate::error::ReplayError;
use crate::options::ReplayOptions;
use crate::plan::{Event, RuntimePlan};
use hrx::{Buffer, ExecutableGraph, Runtime};
use hrx_capture::schema::BufferId;
use std::collections::{BTreeSet, HashMap};

/// Where an object is along the timeline.
pub(super) enum Slot<T> {
    /// Not made yet.
    Pending,
    /// Made.
    Live(T),
    /// Let go (a released buffer, a graph using one).
    Released,
}

/// What making an object needs: the replay runtime and the options.
#[derive(Clone, Copy)]
pub(super) struct Maker<'a> {
    pub runtime: &'a Runtime,
    pub options: &'a ReplayOptions,
}

/// The replay runtime's objects, parallel to the plan's vectors.
pub(super) struct Objects {
    buffers: Vec<Slot<Buffer>>,
    pub kernels: Vec<Loaded>,
    graphs: Vec<Slot<ExecutableGraph>>,
    /// Callback queues of substituted operations by (graph, node).
    pub queues: HashMap<(usize, usize), EntryQueue>,
    /// The captured id of every buffer made, by the replay's id (released ones too: the
    /// replay's records about them map back).
    pub buffer_of: HashMap<u64, BufferId>,
}

impl Objects {
    /// The objects of `plan` (its kernels loaded, what its timeline needs before its first
    /// release made), after checking that its buffers can fit.
    pub fn open(
        maker: Maker<'_>,
        plan: &RuntimePlan<'_>,
        notes: &mut Vec<String>,
    ) -> Result<Objects, ReplayError> {
        check_memory(maker.runtime, plan)?;
        let mut objects = Objects {
            buffers: Vec::with_capacity(plan.buffers.len()),
            kernels: Vec::with_capacity(plan.kernels.len()),
            graphs: Vec::with_capacity(plan.graphs.len()),
            queues: HashMap::new(),
            buffer_of: HashMap::new(),
        };
        objects.grow(maker, plan, notes)?;
        Ok(objects)
    }

    /// Takes in the objects of `plan` that these lack (a later chunk of a streamed trace
    /// names every object of the earlier ones first, in the same order): kernels loaded,
    /// buffers and graphs pending; then makes what its timeline needs before its first
    /// release.
    pub fn grow(
        &mut self,
        maker: Maker<'_>,
        plan: &RuntimePlan<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ReplayError> {
        self.buffers
            .resize_with(plan.buffers.len().max(self.buffers.len()), || Slot::Pending);
        self.graphs
            .resize_with(plan.graphs.len().max(self.graphs.len()), || Slot::Pending);
        for k in plan.kernels.iter().skip(self.kernels.len()) {
            let loaded = load_kernel(maker.runtime, plan, k, maker.options)?;
            self.kernels.push(loaded);
        }
        for sub in &plan.substitutions {
            self.queues.entry((sub.graph, sub.node)).or_default();
        }
        // One released in an earlier chunk is left to the walk, which names its user.
        let (buffers, graphs) = needed_before_release(plan);
        for b in buffers {
            if matches!(self.buffers[b], Slot::Pending) {
                self.buffer(maker, plan, b, &String::new)?;
            }
        }
        for g in graphs {
            let released =
                (plan.graphs[g].buffers.iter()).any(|&b| matches!(self.buffers[b], Slot::Released));
            if matches!(self.graphs[g], Slot::Pending) && !released {
                self.graph(maker, plan, g, notes, &String::new)?;
            }
        }
        Ok(())
    }

    /// The buffer host write `i` of `plan` writes into, made if pending, and the write.
    ///
    /// # Errors
    /// As [`Objects::buffer`].
    pub fn host_write_target<'p, 't>(
        &mut self,
        maker: Maker<'_>,
        plan: &'p RuntimePlan<'t>,
        i: usize,
    ) -> Result<(&Buffer, &'p crate::plan::HostWritePlan<'t>), ReplayError> {
        let w = &plan.host_writes[i];
        let user = || format!("by a host write at byte {}", w.offset);
        let buffer = self.buffer(maker, plan, plan.buffer_index[&w.buffer], &user)?;
        Ok((buffer, w))
    }

    /// Buffer `index`, made if pending; `user` says what needs it.
    ///
    /// # Errors
    /// [`ReplayError::Unreplayable`] where the buffer was released;
    /// [`ReplayError::Runtime`] where it cannot be allocated.
    pub fn buffer(
        &mut self,
        maker: Maker<'_>,
        plan: &RuntimePlan<'_>,
        index: usize,
        user: &dyn Fn() -> String,
    ) -> Result<&Buffer, ReplayError> {
        let b = &plan.buffers[index];
        match &self.buffers[index] {
            Slot::Live(_) => {}
            Slot::Released => return Err(used_after_release(plan, b.id, user)),
            Slot::Pending => {
                let buffer = (maker.runtime)
                    .buffer(b.len, placement(b.placement))
                    .map_err(|source| ReplayError::Runtime {
                        runtime: plan.id.0,
                        context: format!(
                            "allocating buffer {} ({} bytes, {:?})",
                            b.id, b.len, b.placement
                        ),
                        source,
                    })?;
                self.buffer_of.insert(buffer.id(), b.id);
                self.buffers[index] = Slot::Live(buffer);
            }
        }
        match &self.buffers[index] {
            Slot::Live(buffer) => Ok(buffer),
            _ => unreachable!("made above"),
        }
    }

    /// Buffer `index` where it is made (what [`add_op`] binds).
    pub fn live_buffer(&self, index: usize) -> hrx::Result<&Buffer> {
        match &self.buffers[index] {
            Slot::Live(buffer) => Ok(buffer),
            _ => Err(hrx::Error::Message(format!(
                "replay buffer {index} is not allocated"
            ))),
        }
    }

    /// Prepared graph `index`, rebuilt (its buffers made) and prepared if pending; `user`
    /// says what needs it; `notes` gets a lowering that differs from the capture's.
    ///
    /// # Errors
    /// [`ReplayError::Unreplayable`] where a buffer it uses was released;
    /// [`ReplayError::Runtime`] where it cannot be rebuilt or prepared.
    pub fn graph(
        &mut self,
        maker: Maker<'_>,
        plan: &RuntimePlan<'_>,
        index: usize,
        notes: &mut Vec<String>,
        user: &dyn Fn() -> String,
    ) -> Result<&ExecutableGraph, ReplayError> {
        let g = &plan.graphs[index];
        if !matches!(self.graphs[index], Slot::Live(_)) {
            // A released graph names the buffer that took it.
            for &b in &g.buffers {
                self.buffer(maker, plan, b, user)?;
            }
            let runtime_error = |context: String| {
                move |source| ReplayError::Runtime {
                    runtime: plan.id.0,
                    context,
                    source,
                }
            };
            let mut graph = maker.runtime.graph();
            for (node, op) in g.ops.iter().enumerate() {
                let queue = self.queues.get(&(index, node)).cloned();
                add_op(&mut graph, plan, self, op, queue).map_err(runtime_error(format!(
                    "rebuilding graph {} operation {node} ({})",
                    g.prepared,
                    plan.op_name(op)
                )))?;
            }
            let executable = graph
                .prepare()
                .map_err(runtime_error(format!("preparing graph {}", g.prepared)))?;
            if !same_lowering(&g.regions, &executable.describe()) {
                notes.push(format!(
                    "runtime {}: graph {} lowers into different regions at replay ({} captured, {} replayed): region attribution may be off",
                    plan.id,
                    g.prepared,
                    g.regions.len(),
                    executable.regions()
                ));
            }
            self.graphs[index] = Slot::Live(executable);
        }
        match &self.graphs[index] {
            Slot::Live(graph) => Ok(graph),
            _ => unreachable!("made above"),
        }
    }

    /// Lets go of buffer `index` and of the graphs using it (their submissions retired: the
    /// caller waited for them), so that its memory is free.
    pub fn release(&mut self, plan: &RuntimePlan<'_>, index: usize) {
        for &g in &plan.buffers[index].graphs {
            self.graphs[g] = Slot::Released;
        }
        self.buffers[index] = Slot::Released;
    }
}

/// The buffers and graphs `plan`'s timeline needs before its first release (all it needs
/// where it releases nothing), in capture order.
fn needed_before_release(plan: &RuntimePlan<'_>) -> (BTreeSet<usize>, BTreeSet<usize>) {
    let (mut buffers, mut graphs) = (BTreeSet::new(), BTreeSet::new());
    for event in &plan.timeline {
        match *event {
            Event::HostWrite(i) => {
                buffers.insert(plan.buffer_index[&plan.host_writes[i].buffer]);
            }
            Event::Submit(position) => {
                let graph = plan.submissions[position].graph;
                graphs.insert(graph);
                buffers.extend(plan.graphs[graph].buffers.iter().copied());
            }
            Event::Release(_) => break,
        }
    }
    (buffers, graphs)
}

fn used_after_release(
    plan: &RuntimePlan<'_>,
    buffer: BufferId,
    user: &dyn Fn() -> String,
) -> ReplayError {
    let user = user();
    ReplayError::unreplayable(format!(
        "runtime {}: buffer {buffer} used after the trace released it{}",
        plan.id,
        if user.is_empty() {
            String::new()
        } else {
            format!(" ({user})")
        }
    ))
}
