//! The NPU simulator: BOs over host memory, runs as host functions.

use crate::fault::FaultInjector;
use crate::kernels::{HostBinding, HostKernelFn, HostLaunch};
use crate::{Error, Result};
use std::sync::Arc;

/// A buffer object: host memory imported for the NPU, or a sub-range of one.
#[derive(Clone, Debug)]
pub(crate) struct Bo {
    pointer: *mut u8,
    len: usize,
    address: u64,
}

// SAFETY: the pointer is into memory owned by the buffer that owns this BO; access is
// ordered by the runtime's hazard tracking.
unsafe impl Send for Bo {}
// SAFETY: as above.
unsafe impl Sync for Bo {}

impl Bo {
    /// Imports `len` bytes of host memory at `pointer` whose device-visible address is
    /// `address` (XRT: `xrt::bo(device, ptr, size, xrt::bo::flags::normal, group)`).
    pub fn import(pointer: *mut u8, len: usize, address: u64) -> Self {
        Self {
            pointer,
            len,
            address,
        }
    }
    /// Device address of the first byte.
    pub fn address(&self) -> std::result::Result<u64, String> {
        Ok(self.address)
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// A sub-BO of `len` bytes at `offset` (XRT: `xrt::bo(parent, size, offset)`).
    pub fn sub(&self, len: usize, offset: usize) -> std::result::Result<Bo, String> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(format!(
                "sub-BO {offset}+{len} exceeds its parent of {} bytes",
                self.len
            ));
        }
        Ok(Bo {
            // SAFETY: in bounds, checked above.
            pointer: unsafe { self.pointer.add(offset) },
            len,
            address: self.address + offset as u64,
        })
    }
    /// Makes host writes visible to the NPU (`XCL_BO_SYNC_BO_TO_DEVICE`).
    pub fn sync_to_device(&self) -> Result<()> {
        Ok(())
    }
    /// Makes NPU writes visible to the host (`XCL_BO_SYNC_BO_FROM_DEVICE`).
    pub fn sync_from_device(&self) -> Result<()> {
        Ok(())
    }
}

/// A run prepared once with fixed arguments, executed per submission.
pub(crate) struct PreparedRun {
    name: String,
    host: HostKernelFn,
    constants: Vec<u8>,
    arguments: Vec<HostBinding>,
    faults: Arc<FaultInjector>,
}

// SAFETY: the argument pointers are into BOs kept alive by the prepared graph's views.
unsafe impl Send for PreparedRun {}

impl PreparedRun {
    /// Prepares a run of `name` with `arguments` (XRT: `xrt::run(kernel)` + `set_arg`).
    pub fn new(
        name: &str,
        host: HostKernelFn,
        constants: &[u8],
        arguments: Vec<Bo>,
        faults: Arc<FaultInjector>,
    ) -> Self {
        Self {
            name: name.to_string(),
            host,
            constants: constants.to_vec(),
            arguments: arguments
                .iter()
                .map(|bo| HostBinding {
                    ptr: bo.pointer,
                    len: bo.len,
                })
                .collect(),
            faults,
        }
    }

    /// Starts the run and waits for it (XRT: `run.start(); run.wait()`).
    pub fn execute(&mut self) -> Result<()> {
        self.faults.check(Some(&self.name), &self.name)?;
        (self.host)(&HostLaunch {
            entry: &self.name,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            constants: &self.constants,
            bindings: &self.arguments,
        })
        .map_err(|message| Error::Kernel(format!("NPU {}: {message}", self.name)))
    }
}
