//! NPU kernels as the runtime holds them: a backend's loaded kernel plus its id, its
//! runtime and its contract. The backend part (how a run executes, the argument groups) is
//! [`crate::npu::NpuDevice::load_kernel`]; this module numbers the kernel and records it in
//! the trace, so the NPU backend imports nothing of the runtime, the execution stages or the
//! trace.

use super::record::{KernelRecord, kernel_loaded};
use super::shared::RuntimeOwner;
use crate::kernels::{HostKernelFn, NpuKernelSpec};
use crate::{KernelContract, Result};
use std::sync::Arc;

pub(crate) struct NpuKernelInner {
    pub id: u64,
    pub runtime: Arc<RuntimeOwner>,
    pub device: u32,
    pub name: String,
    pub contract: KernelContract,
    pub groups: Vec<u32>,
    pub instructions: Vec<u8>,
    pub host: HostKernelFn,
    /// The XRT kernel, kept alive for the runs prepared from it (they find it by name).
    #[cfg(feature = "xrt")]
    #[allow(dead_code)] // Held, never read.
    pub xrt: Option<Arc<crate::npu::xrt::XrtKernel>>,
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

/// Loads `spec` on `runtime`'s NPU, numbers it and records it in the trace.
///
/// # Errors
/// As [`crate::npu::NpuDevice::load_kernel`].
pub(crate) fn load(runtime: &Arc<RuntimeOwner>, spec: &NpuKernelSpec) -> Result<NpuKernel> {
    let context = runtime.context();
    let loaded = context.npu.load_kernel(spec)?;
    let id = super::gpu_kernel::KERNEL_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    kernel_loaded(
        &context.tracer,
        KernelRecord {
            id,
            entry: &spec.name,
            code: Some(&spec.instructions),
            contract: &spec.contract,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            engine: crate::Engine::Npu,
            npu_groups: &loaded.groups,
        },
    );
    Ok(NpuKernel {
        inner: Arc::new(NpuKernelInner {
            id,
            runtime: runtime.clone(),
            device: context.npu_device,
            name: spec.name.clone(),
            contract: spec.contract.clone(),
            groups: loaded.groups,
            instructions: spec.instructions.clone(),
            host: loaded.host,
            #[cfg(feature = "xrt")]
            xrt: loaded.xrt,
        }),
    })
}
