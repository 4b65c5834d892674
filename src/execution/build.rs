//! The build stage: [`Graph`], a pipeline builder. Each operation declares its lane and the
//! byte ranges it reads and writes; contracts, alignment and runtime identity are checked as
//! it is added, and the trace records it.
//!
//! Error variants follow the seed (`shared/seed/graph.rs`). Where the seed answers
//! `Message` for a validation failure the runtime answers a narrower validation variant
//! ([`Error::Binding`], [`Error::InvalidCopy`], [`Error::ForeignRuntime`]); where it answers
//! `Unsupported`, so does the runtime. An NPU binding whose buffer object is on another NPU
//! device, or in another memory bank than the program's argument, is
//! [`Error::Unsupported`], as in the seed's `Graph::npu`, like a binding with no NPU import:
//! the program cannot use that placement, whatever the binding's extent and alignment, and a
//! caller who matches the seed's variant must find it (it was [`Error::Binding`], a
//! binding the kernel's contract rejects).
//!
//! Each refusal's text holds the seed's words, beside the ids, ranges and addresses the
//! runtime adds: "buffer belongs to another runtime", "copy needs equal, nonoverlapping
//! ranges", "GPU allocation does not satisfy kernel alignment" (and "NPU ..." for a buffer
//! object), "missing NPU import", "NPU binding device or host memory bank differs from the
//! program", "cannot prepare an empty graph". The variants are narrower than the seed's
//! `Message`, the text is not: a program or a check that looks for the seed's words finds them
//! (they read "non-overlapping", "is not aligned to", "has no NPU import" before session 55).

use super::dependencies::Use;
use super::gpu_kernel::GpuKernel;
use super::record::{OpKind, graph_op};
use super::region::{HostCallback, HostViews, ScopedGpu};
use super::shared::RuntimeOwner;
use super::types::{GpuAccess, GpuLane, Node};
use crate::{Access, BufferView, Error, KernelContract, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

static GRAPH_IDS: AtomicU64 = AtomicU64::new(1);

pub(super) enum Description {
    Fill(BufferView, u8),
    Copy(BufferView, BufferView),
    Gpu(GpuKernel, Vec<BufferView>),
    Scoped(Arc<Mutex<ScopedGpu>>, Vec<BufferView>),
    Npu(crate::NpuKernel, Vec<BufferView>),
    Host(Arc<Mutex<HostCallback>>, Vec<(BufferView, Access)>),
}

pub(super) struct Entry {
    pub operation: Description,
    pub uses: Vec<Use>,
    pub lane: GpuLane,
}

/// A pipeline builder. Each operation declares its placement (lane) and the byte ranges it
/// reads and writes; ordering is inferred from those declarations.
pub struct Graph {
    pub(super) id: u64,
    pub(super) owner: Arc<RuntimeOwner>,
    /// Submission slots each prepared graph reserves.
    pub(super) slots: usize,
    pub(super) entries: Vec<Entry>,
}

impl Graph {
    /// An empty graph of `owner`'s runtime whose prepared graphs reserve `slots` slots.
    pub(crate) fn new(owner: Arc<RuntimeOwner>, slots: usize) -> Self {
        Self {
            id: GRAPH_IDS.fetch_add(1, Ordering::Relaxed),
            owner,
            slots,
            entries: Vec::new(),
        }
    }

    /// Number of operations added so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no operation was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Process-unique graph id (the trace uses it).
    pub fn id(&self) -> u64 {
        self.id
    }

    fn push(&mut self, operation: Description, uses: Vec<Use>, lane: GpuLane) -> Result<Node> {
        for use_ in &uses {
            if !Arc::ptr_eq(&use_.view.buffer().storage.context, self.owner.context()) {
                return Err(Error::ForeignRuntime { what: "buffer" });
            }
        }
        let node = Node(self.entries.len());
        graph_op(
            &self.owner.context().tracer,
            self.id,
            node.0,
            &operation_kind(&operation),
            lane,
            &uses,
        );
        self.entries.push(Entry {
            operation,
            uses,
            lane,
        });
        Ok(node)
    }

    /// Fills `destination` with the byte `value` (on the Compute lane).
    ///
    /// # Errors
    /// [`Error::ForeignRuntime`] for another runtime's buffer.
    pub fn fill(&mut self, destination: BufferView, value: u8) -> Result<Node> {
        destination.gpu()?;
        self.push(
            Description::Fill(destination.clone(), value),
            vec![Use {
                view: destination,
                access: Access::Write,
            }],
            GpuLane::Compute,
        )
    }

    /// Copies `source` to `destination`. The lane follows the placements: host-visible to
    /// GPU-local is Upload, GPU-local to host-visible is Download, anything else Compute.
    ///
    /// # Errors
    /// [`Error::InvalidCopy`] for unequal or overlapping ranges; [`Error::ForeignRuntime`].
    pub fn copy(&mut self, destination: BufferView, source: BufferView) -> Result<Node> {
        let lane = match (
            source.buffer().storage.pointer.is_null(),
            destination.buffer().storage.pointer.is_null(),
        ) {
            (false, true) => GpuLane::Upload,
            (true, false) => GpuLane::Download,
            _ => GpuLane::Compute,
        };
        self.copy_on(destination, source, lane)
    }

    /// Copies on an explicit lane, keeping the same cross-lane hazard checks.
    ///
    /// # Errors
    /// As [`Graph::copy`].
    pub fn copy_on(
        &mut self,
        destination: BufferView,
        source: BufferView,
        lane: GpuLane,
    ) -> Result<Node> {
        destination.gpu()?;
        source.gpu()?;
        if destination.len() != source.len()
            || destination.overlaps(&source)
            || destination.conflicts(&source)
        {
            return Err(Error::InvalidCopy {
                dst_buffer: destination.buffer().id(),
                dst: destination.range(),
                src_buffer: source.buffer().id(),
                src: source.range(),
            });
        }
        self.push(
            Description::Copy(destination.clone(), source.clone()),
            vec![
                Use {
                    view: destination,
                    access: Access::Write,
                },
                Use {
                    view: source,
                    access: Access::Read,
                },
            ],
            lane,
        )
    }

    /// Invokes a GPU kernel; binding count, extents, alignment and writable aliasing are
    /// checked.
    ///
    /// # Errors
    /// [`Error::Binding`] for a rejected binding; [`Error::ForeignRuntime`].
    pub fn gpu(&mut self, kernel: &GpuKernel, bindings: &[BufferView]) -> Result<Node> {
        kernel.contract.check(bindings)?;
        // SAFETY: `check` above rejected every writable alias.
        unsafe { self.gpu_aliasing(kernel, bindings) }
    }

    /// Invokes a GPU kernel permitting writable argument aliases. Extents, alignment,
    /// runtime identity and cross-operation hazards remain checked.
    ///
    /// # Safety
    /// - the kernel must be valid for the overlapping argument ranges supplied: no data race
    ///   between its threads and no unsupported in-place access.
    ///
    /// # Errors
    /// As [`Graph::gpu`], without the aliasing check.
    pub unsafe fn gpu_aliasing(
        &mut self,
        kernel: &GpuKernel,
        bindings: &[BufferView],
    ) -> Result<Node> {
        if !Arc::ptr_eq(&kernel.runtime, &self.owner) {
            return Err(Error::ForeignRuntime { what: "kernel" });
        }
        kernel.contract.check_extents(bindings)?;
        for (index, binding) in bindings.iter().enumerate() {
            let address = binding.gpu()?.owner().allocation_address()? + binding.offset() as u64;
            kernel.contract.check_alignment(index, "GPU", address)?;
        }
        let uses = bindings
            .iter()
            .zip(&kernel.contract.bindings)
            .map(|(view, c)| Use {
                view: view.clone(),
                access: c.access,
            })
            .collect();
        self.push(
            Description::Gpu(kernel.clone(), bindings.to_vec()),
            uses,
            GpuLane::Compute,
        )
    }

    /// Integrates owned native GPU work into this graph's hazards and producer
    /// dependencies. The callback runs on a worker, never in `poll`/`wait`, as a region of
    /// its own on the Compute queue.
    ///
    /// # Safety
    /// - the callback retains every private native resource it uses;
    /// - it accesses these views only as declared and synchronizes every stream touching
    ///   them before returning;
    /// - it lets no raw pointer or view escape its scope, and its private storage is not
    ///   reachable outside it;
    /// - it returns an error only for a failure it cannot bound: any error it returns is
    ///   an uncertain failure (the runtime cannot see into its streams), whatever its
    ///   variant: the graph is then quarantined and its written bindings poisoned, and the
    ///   submission fails with the callback's error as it returned it (as in the seed).
    ///
    /// # Errors
    /// [`Error::ForeignRuntime`].
    pub unsafe fn gpu_scoped(
        &mut self,
        bindings: &[GpuAccess],
        callback: impl FnMut(&[crate::gpu::View<'_>]) -> Result<()> + Send + 'static,
    ) -> Result<Node> {
        for binding in bindings {
            binding.view.gpu()?;
        }
        self.push(
            Description::Scoped(
                Arc::new(Mutex::new(Box::new(callback))),
                bindings.iter().map(|b| b.view.clone()).collect(),
            ),
            bindings
                .iter()
                .map(|b| Use {
                    view: b.view.clone(),
                    access: b.access,
                })
                .collect(),
            GpuLane::Compute,
        )
    }

    /// Invokes an NPU kernel, checking its contract, the alignment of each binding's BO
    /// address, and that each binding lives on the program's device in the memory bank of
    /// the argument's group. Host-only and imported BOs may come from another program
    /// context on the same device and bank.
    ///
    /// # Errors
    /// [`Error::Binding`] for a binding its contract rejects (count, extent, aliasing,
    /// alignment); [`Error::Unsupported`] for a binding without an NPU import or on another
    /// NPU device or memory bank than the argument's; [`Error::ForeignRuntime`].
    pub fn npu(&mut self, kernel: &crate::NpuKernel, bindings: &[BufferView]) -> Result<Node> {
        if !Arc::ptr_eq(&kernel.inner.runtime, &self.owner) {
            return Err(Error::ForeignRuntime { what: "kernel" });
        }
        kernel.contract().check(bindings)?;
        for (index, (binding, group)) in bindings.iter().zip(&kernel.inner.groups).enumerate() {
            let storage = &binding.buffer().storage;
            let bo = storage.bo.as_ref().ok_or_else(|| {
                Error::Unsupported(format!(
                    "binding {index}: missing NPU import: buffer {} has none (allocate it with Placement::NpuShared)",
                    storage.id
                ))
            })?;
            let address = bo.address().map_err(Error::Message)? + binding.offset() as u64;
            kernel.contract().check_alignment(index, "NPU", address)?;
            if storage.npu_device != Some(kernel.inner.device)
                || storage.group.map(crate::npu::memory_bank)
                    != Some(crate::npu::memory_bank(*group))
            {
                // The seed's variant: a placement the program cannot use is unsupported,
                // not a binding its contract rejects (see the module docs).
                return Err(Error::Unsupported(format!(
                    "NPU binding device or host memory bank differs from the program: binding {index}, buffer {} is on NPU device {:?} group {:?}, the kernel needs device {} and the memory bank of group {}",
                    storage.id, storage.npu_device, storage.group, kernel.inner.device, group
                )));
            }
        }
        let uses = bindings
            .iter()
            .zip(&kernel.contract().bindings)
            .map(|(view, c)| Use {
                view: view.clone(),
                access: c.access,
            })
            .collect();
        self.push(
            Description::Npu(kernel.clone(), bindings.to_vec()),
            uses,
            GpuLane::Compute,
        )
    }

    /// Runs `callback` on the Host queue, as a region of its own, ordered by the declared
    /// uses like any other operation (a CUDA host node). Bindings must be host-visible.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a GPU-local binding; [`Error::Binding`] when a written
    /// binding overlaps another; [`Error::ForeignRuntime`].
    pub fn host(
        &mut self,
        bindings: &[GpuAccess],
        callback: impl FnMut(&mut HostViews<'_>) -> Result<()> + Send + 'static,
    ) -> Result<Node> {
        for (index, binding) in bindings.iter().enumerate() {
            if binding.view.buffer().storage.pointer.is_null() {
                return Err(Error::Unsupported(format!(
                    "host callback binding {index}: buffer {} is GPU-local",
                    binding.view.buffer().id()
                )));
            }
        }
        let contract = KernelContract {
            bindings: bindings
                .iter()
                .map(|b| crate::BindingContract::new(b.access, 0, 1))
                .collect(),
            constants: Vec::new(),
        };
        let views: Vec<BufferView> = bindings.iter().map(|b| b.view.clone()).collect();
        contract.check(&views)?;
        self.push(
            Description::Host(
                Arc::new(Mutex::new(Box::new(callback))),
                bindings
                    .iter()
                    .map(|b| (b.view.clone(), b.access))
                    .collect(),
            ),
            bindings
                .iter()
                .map(|b| Use {
                    view: b.view.clone(),
                    access: b.access,
                })
                .collect(),
            GpuLane::Compute,
        )
    }
}

fn operation_kind(operation: &Description) -> OpKind {
    match operation {
        Description::Fill(_, value) => OpKind::Fill(*value),
        Description::Copy(..) => OpKind::Copy,
        Description::Gpu(kernel, _) => OpKind::Kernel(kernel.id),
        Description::Scoped(..) => OpKind::Scoped,
        Description::Npu(kernel, _) => OpKind::Npu(kernel.inner.id),
        Description::Host(..) => OpKind::Host,
    }
}
