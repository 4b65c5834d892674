//! Device memory and pinned host memory mapped for the device.

use super::api;
use super::context::Context;
use crate::Result;
use crate::gpu::{NativeAllocation, View, foreign_object};
use cudarc::driver::sys;
use std::any::Any;
use std::sync::Arc;

/// Alignment of host-visible memory (XRT's rule for imported host memory).
pub(super) const PAGE: usize = 4096;

pub(super) fn allocation<'a>(
    context: &Arc<Context>,
    view: &View<'a>,
) -> Result<&'a CudaAllocation> {
    view.owner()
        .native()
        .as_any()
        .downcast_ref::<CudaAllocation>()
        .filter(|a| Arc::ptr_eq(&a.context, context))
        .ok_or_else(|| foreign_object("allocation"))
}

pub(super) struct CudaAllocation {
    pub(super) context: Arc<Context>,
    /// Device address (of the mapping, for host memory).
    pub(super) address: sys::CUdeviceptr,
    /// Pinned host memory (page-aligned, inside `host_base`'s allocation), or null for device
    /// memory.
    pub(super) host: *mut u8,
    /// What `cuMemHostAlloc` returned, freed on drop.
    pub(super) host_base: *mut u8,
    pub(super) len: usize,
}

// SAFETY: device memory and pinned host memory may be used from any thread; concurrent access
// is ordered by the runtime's hazard tracking.
unsafe impl Send for CudaAllocation {}
// SAFETY: as above.
unsafe impl Sync for CudaAllocation {}

impl Drop for CudaAllocation {
    fn drop(&mut self) {
        if !self.context.enter_for_drop() {
            return;
        }
        // SAFETY: allocated in `CudaDevice::allocate`, freed once here; the runtime drops a
        // buffer only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::mem_free(self.address)
            } else {
                api::mem_free_host(self.host_base.cast())
            }
        };
        if let Err(error) = result {
            self.context.record(error);
        }
    }
}

impl NativeAllocation for CudaAllocation {
    fn device_address(&self) -> u64 {
        self.address
    }
    fn host_pointer(&self) -> *mut u8 {
        self.host
    }
    fn len(&self) -> usize {
        self.len
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
