//! Device memory and pinned host memory mapped for the device.

use super::api;
use super::context::Shared;
use crate::Result;
use crate::gpu::{NativeAllocation, View, foreign_object};
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

pub(super) fn allocation<'a>(shared: &Arc<Shared>, view: &View<'a>) -> Result<&'a HipAllocation> {
    view.owner()
        .native()
        .as_any()
        .downcast_ref::<HipAllocation>()
        .filter(|a| Arc::ptr_eq(&a.shared, shared))
        .ok_or_else(|| foreign_object("allocation"))
}

pub(super) fn device_pointer(view: &View<'_>) -> *mut c_void {
    view.address() as usize as *mut c_void
}

pub(super) struct HipAllocation {
    pub(super) shared: Arc<Shared>,
    /// Device address (of the mapping, for host memory).
    pub(super) address: u64,
    /// Pinned host memory, or null for device memory.
    pub(super) host: *mut u8,
    pub(super) len: usize,
}

// SAFETY: device and pinned host memory may be used from any thread; access is ordered by the
// runtime's hazard tracking.
unsafe impl Send for HipAllocation {}
// SAFETY: as above.
unsafe impl Sync for HipAllocation {}

impl Drop for HipAllocation {
    fn drop(&mut self) {
        if self.address == 0 && self.host.is_null() {
            return;
        }
        if !self.shared.enter_for_drop() {
            return;
        }
        // SAFETY: allocated in `HipDevice::allocate`, freed once; the runtime drops a buffer
        // only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::free(self.address as usize as *mut c_void)
            } else {
                api::host_free(self.host.cast())
            }
        };
        if let Err(error) = result {
            self.shared.record(error);
        }
    }
}

impl NativeAllocation for HipAllocation {
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
