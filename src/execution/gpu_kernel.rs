//! GPU kernels as the runtime holds them: a backend's loaded kernel with its id, launch
//! dimensions, contract and runtime; loading records it in the trace.

use super::record::{KernelRecord, kernel_loaded};
use super::shared::RuntimeOwner;
use crate::{Engine, KernelContract, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Kernel ids, shared by GPU and NPU kernels.
pub(crate) static KERNEL_IDS: AtomicU64 = AtomicU64::new(1);

/// A loaded GPU kernel with fixed launch dimensions and argument contract.
#[derive(Clone)]
pub struct GpuKernel {
    pub(crate) id: u64,
    pub(crate) entry: Arc<str>,
    pub(crate) raw: crate::gpu::Kernel,
    pub(crate) contract: KernelContract,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) runtime: Arc<RuntimeOwner>,
}

impl std::fmt::Debug for GpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuKernel")
            .field("entry", &self.entry)
            .field("grid", &self.grid)
            .field("block", &self.block)
            .finish()
    }
}

impl GpuKernel {
    /// Loads `spec` on `runtime`'s GPU, numbers it and records it in the trace.
    pub(crate) fn load(
        runtime: &Arc<RuntimeOwner>,
        spec: &crate::kernels::KernelSpec,
    ) -> Result<Self> {
        let raw = runtime.context().device.load_kernel(spec)?;
        let kernel = Self {
            id: KERNEL_IDS.fetch_add(1, Ordering::Relaxed),
            entry: spec.entry.as_str().into(),
            raw,
            contract: spec.contract.clone(),
            grid: spec.grid,
            block: spec.block,
            runtime: runtime.clone(),
        };
        kernel_loaded(
            &runtime.context().tracer,
            KernelRecord {
                id: kernel.id,
                entry: &spec.entry,
                code: kernel.raw.code(),
                contract: &spec.contract,
                grid: spec.grid,
                block: spec.block,
                engine: Engine::Gpu,
                npu_groups: &[],
            },
        );
        Ok(kernel)
    }
    /// Fixed invocation contract.
    pub fn contract(&self) -> &KernelContract {
        &self.contract
    }
    /// Entry point name.
    pub fn entry(&self) -> &str {
        &self.entry
    }
    /// Grid dimensions in blocks.
    pub fn grid(&self) -> [u32; 3] {
        self.grid
    }
    /// Block dimensions in threads.
    pub fn block(&self) -> [u32; 3] {
        self.block
    }
}
