//! NPU programs, kernels and buffer objects.
//!
//! The model follows XRT: a device loads a program (an xclbin) into a hardware context; a
//! kernel's arguments each live in a memory-bank group (`kernel.group_id(arg)`); buffers
//! are buffer objects (BOs) allocated in a group, host-only or imported from host memory,
//! with sub-BOs for views; a run is prepared once with its arguments and started per
//! submission; `bo.sync` makes host writes visible to the NPU and NPU writes to the host.
//!
//! [`sim`] is the NPU simulator (always built): BOs are the buffer's host memory, runs call
//! the kernel's host implementation, and syncs only count.

pub(crate) mod sim;

use crate::kernels::{HostKernelFn, NpuKernelSpec};
use crate::runtime::RuntimeOwner;
use crate::{KernelContract, Result};
use std::sync::Arc;

pub(crate) use sim::{Bo, PreparedRun};

/// The memory bank of an argument group. On the simulator each group is its own bank.
pub(crate) fn memory_bank(group: u32) -> u32 {
    group
}

pub(crate) struct NpuKernelInner {
    pub id: u64,
    pub runtime: Arc<RuntimeOwner>,
    pub device: u32,
    pub name: String,
    pub contract: KernelContract,
    pub groups: Vec<u32>,
    pub instructions: Vec<u8>,
    pub host: HostKernelFn,
}

/// A kernel of a loaded NPU program, with its contract and argument groups.
#[derive(Clone)]
pub struct NpuKernel {
    pub(crate) inner: Arc<NpuKernelInner>,
}

impl std::fmt::Debug for NpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpuKernel")
            .field("name", &self.inner.name)
            .field("groups", &self.inner.groups)
            .finish()
    }
}

impl NpuKernel {
    /// Fixed invocation contract.
    pub fn contract(&self) -> &KernelContract {
        &self.inner.contract
    }
    /// Kernel name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// Memory-bank group of argument `index`: allocate its buffer with
    /// `Placement::NpuShared { group }`.
    pub fn group(&self, index: usize) -> Option<u32> {
        self.inner.groups.get(index).copied()
    }
    /// The kernel's instruction stream (opaque to the runtime).
    pub fn instructions(&self) -> &[u8] {
        &self.inner.instructions
    }
    /// The NPU device the program was loaded on.
    pub fn device(&self) -> u32 {
        self.inner.device
    }
}

pub(crate) fn load_kernel(runtime: &Arc<RuntimeOwner>, spec: &NpuKernelSpec) -> Result<NpuKernel> {
    let host = spec.host.ok_or_else(|| {
        crate::Error::Unsupported(format!(
            "NPU kernel {} has no implementation for the NPU simulator",
            spec.name
        ))
    })?;
    if spec.groups.len() != spec.contract.bindings.len() {
        return Err(crate::Error::Message(format!(
            "NPU kernel {} names {} argument groups for {} bindings",
            spec.name,
            spec.groups.len(),
            spec.contract.bindings.len()
        )));
    }
    let id = crate::execution::graph::KERNEL_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::trace::kernel_loaded(
        &runtime.core,
        crate::trace::KernelRecord {
            id,
            entry: &spec.name,
            code: Some(&spec.instructions),
            contract: &spec.contract,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            engine: crate::Engine::Npu,
            npu_groups: &spec.groups,
        },
    );
    Ok(NpuKernel {
        inner: Arc::new(NpuKernelInner {
            id,
            runtime: runtime.clone(),
            device: runtime.npu_device,
            name: spec.name.clone(),
            contract: spec.contract.clone(),
            groups: spec.groups.clone(),
            instructions: spec.instructions.clone(),
            host,
        }),
    })
}
