//! The prepare stage: lowering a [`Graph`] into regions, as the seed
//! (`shared/seed/graph.rs`) lowers it:
//! - a scoped native callback ([`Graph::gpu_scoped`]), an NPU run ([`Graph::npu`]) or a host
//!   callback ([`Graph::host`]) is a region of its own;
//! - otherwise maximal runs of consecutive operations on the same [`GpuLane`] form a region;
//! - a region of copies only is a *copy batch* on the runtime's cached per-lane copy stream;
//! - any other region becomes one native GPU graph whose internal edges come from the hazard
//!   frontier over its operations;
//! - region dependencies come from the frontier over each region's summarized uses.

use super::build::{Description, Graph};
use super::completion::Signal;
use super::dependencies::{CrossUses, Frontier, Use, summarize};
use super::region::{Backend, Region};
use super::submit::{ExecutableGraph, Prepared};
use super::types::{GpuLane, RegionKind};
use crate::sync::Exclusive;
use crate::{BufferView, Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

impl Graph {
    /// Lowers the graph into regions, builds native graphs and NPU runs once, and reserves
    /// the runtime's `graph_slots` reusable submission slots.
    ///
    /// # Errors
    /// [`Error::EmptyGraph`]; backend errors from building native work.
    pub fn prepare(self) -> Result<ExecutableGraph> {
        if self.entries.is_empty() {
            return Err(Error::EmptyGraph);
        }
        let owner = &self.owner;
        let context = owner.context();
        let mut regions: Vec<Region> = Vec::new();
        let mut index = 0;
        while index < self.entries.len() {
            let entry = &self.entries[index];
            let single = match &entry.operation {
                Description::Scoped(callback, bindings) => Some((
                    RegionKind::Scoped,
                    Backend::Scoped(callback.clone(), bindings.clone()),
                )),
                Description::Npu(kernel, bindings) => {
                    let arguments = bindings
                        .iter()
                        .map(|view| {
                            let bo = view.buffer().storage.bo.as_ref().ok_or_else(|| {
                                Error::Unsupported("NPU binding lacks an import".into())
                            })?;
                            if view.offset() == 0 && view.len() == bo.len() {
                                Ok(bo.clone())
                            } else {
                                bo.sub(view.len(), view.offset()).map_err(Error::Message)
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let run = crate::npu::PreparedRun::new(
                        &kernel.inner.name,
                        kernel.inner.host,
                        &kernel.inner.contract.constants,
                        arguments,
                        context.faults.clone(),
                    )?;
                    Some((RegionKind::NpuRun, Backend::Npu(Exclusive::new(run))))
                }
                Description::Host(callback, bindings) => Some((
                    RegionKind::HostCallback,
                    Backend::Host(callback.clone(), bindings.clone()),
                )),
                _ => None,
            };
            if let Some((kind, backend)) = single {
                regions.push(Region {
                    lane: GpuLane::Compute,
                    kind,
                    copy_bytes: 0,
                    backend,
                    uses: entry.uses.clone(),
                    nodes: index..index + 1,
                    internal: Vec::new(),
                    hazards: Vec::new(),
                    dependencies: Vec::new(),
                });
                index += 1;
                continue;
            }
            let start = index;
            let lane = entry.lane;
            while index < self.entries.len()
                && self.entries[index].lane == lane
                && !matches!(
                    self.entries[index].operation,
                    Description::Scoped(..) | Description::Npu(..) | Description::Host(..)
                )
            {
                index += 1;
            }
            let run = &self.entries[start..index];
            let uses: Vec<Use> = run.iter().flat_map(|e| e.uses.iter().cloned()).collect();
            let copy_bytes = run
                .iter()
                .map(|e| match &e.operation {
                    Description::Copy(dst, _) => dst.len(),
                    _ => 0,
                })
                .sum();
            if run
                .iter()
                .all(|e| matches!(e.operation, Description::Copy(..)))
            {
                // Copy batches need hazard scheduling and retained owners, but no native
                // executable graph or per-submission stream.
                let stream = owner.copy_stream(lane)?;
                let copies = run
                    .iter()
                    .map(|e| match &e.operation {
                        Description::Copy(dst, src) => (dst.clone(), src.clone()),
                        _ => unreachable!("all copies"),
                    })
                    .collect();
                regions.push(Region {
                    lane,
                    kind: RegionKind::CopyBatch,
                    copy_bytes,
                    backend: Backend::Copies(stream, copies),
                    uses,
                    nodes: start..index,
                    internal: Vec::new(),
                    hazards: Vec::new(),
                    dependencies: Vec::new(),
                });
                continue;
            }
            let mut stream = context.device.stream()?;
            stream.set_timed(context.tracer.on());
            stream.set_kernel_times(context.tracer.times_kernels());
            stream.set_builtin_kernel_times(context.tracer.times_builtin_kernels());
            let mut graph = stream.graph()?;
            let mut nodes = Vec::with_capacity(run.len());
            let mut internal = Vec::new();
            let mut frontier = Frontier::default();
            for (i, entry) in run.iter().enumerate() {
                let hazards = frontier.hazards(i, &entry.uses);
                let mut dependencies: Vec<_> = hazards.iter().map(|h| nodes[h.producer]).collect();
                dependencies.dedup();
                internal.extend(hazards.into_iter().map(|mut h| {
                    h.producer += start;
                    (start + i, h)
                }));
                let node = match &entry.operation {
                    Description::Fill(dst, value) => {
                        graph.fill(&dependencies, &dst.gpu()?, *value)?
                    }
                    Description::Copy(dst, src) => {
                        graph.copy(&dependencies, &dst.gpu()?, &src.gpu()?)?
                    }
                    Description::Gpu(kernel, bindings) => {
                        let views = bindings
                            .iter()
                            .map(BufferView::gpu)
                            .collect::<Result<Vec<_>>>()?;
                        // SAFETY: `Graph::gpu`/`gpu_aliasing` checked the contract; the
                        // prepared graph keeps every bound buffer alive.
                        unsafe {
                            graph.dispatch(
                                &dependencies,
                                &kernel.raw,
                                kernel.grid,
                                kernel.block,
                                &kernel.contract.constants,
                                &views,
                            )?
                        }
                    }
                    Description::Scoped(..) | Description::Npu(..) | Description::Host(..) => {
                        unreachable!("regions of their own")
                    }
                };
                nodes.push(node);
            }
            let executable = graph.finish()?;
            context
                .counters
                .native_graphs_prepared
                .fetch_add(1, Ordering::Relaxed);
            let asynchronous = stream.launches_asynchronously();
            regions.push(Region {
                lane,
                kind: RegionKind::NativeGraph,
                copy_bytes,
                backend: Backend::Gpu(Box::new(Exclusive::new((stream, executable))), asynchronous),
                uses,
                nodes: start..index,
                internal,
                hazards: Vec::new(),
                dependencies: Vec::new(),
            });
        }
        let mut frontier = Frontier::default();
        let mut narrowed = Vec::new();
        for (index, region) in regions.iter_mut().enumerate() {
            region.uses = summarize(std::mem::take(&mut region.uses));
            if let Some(uses) = frontier.unwritten(&region.uses) {
                narrowed.push((index, uses));
            }
            region.hazards = frontier.hazards(index, &region.uses);
            region.dependencies = region.hazards.iter().map(|h| h.producer).collect();
            region.dependencies.dedup();
        }
        // A later submission's cross waits on a large graph are looked up in its frontier's
        // end (`Tail`); a small one's regions are compared pair by pair.
        let tail = if regions.len() >= super::scheduler::TRACKED_REGIONS {
            frontier.into_tail()
        } else {
            Default::default()
        };
        let uses = summarize(regions.iter().flat_map(|r| r.uses.iter().cloned()));
        let slots = self.slots;
        let parallel = regions
            .iter()
            .enumerate()
            .skip(1)
            .any(|(i, r)| !r.dependencies.contains(&(i - 1)));
        let operations_before = std::iter::once(0)
            .chain(regions.iter().scan(0, |total, region| {
                *total += super::scheduler::device_operations(region);
                Some(*total)
            }))
            .collect();
        let dependents = if regions.len() >= super::scheduler::TRACKED_REGIONS {
            super::submit::Dependents::new(&regions)
        } else {
            Default::default()
        };
        let prepared = Arc::new(Prepared {
            id: self.id,
            quarantined: AtomicBool::new(false),
            signals: (0..slots)
                .map(|_| Signal::new(Arc::downgrade(self.owner.core())))
                .collect(),
            occupied: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            defer: super::defer::Deferral::new(),
            runtime: self.owner.clone(),
            parallel,
            regions,
            operations_before,
            dependents,
            tail,
            cross_uses: CrossUses::new(narrowed),
            uses,
            snapshot: if context.tracer.on() {
                super::submit::SnapshotUses::of(self.entries.iter().map(|e| &e.uses[..]))
            } else {
                Default::default()
            },
        });
        super::record::prepared(
            &context.tracer,
            prepared.id,
            prepared.signals.len(),
            prepared.parallel,
            prepared
                .regions
                .iter()
                .enumerate()
                .map(|(i, r)| r.record(i)),
        );
        Ok(ExecutableGraph { inner: prepared })
    }
}
