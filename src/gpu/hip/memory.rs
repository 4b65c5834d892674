//! Device memory and pinned host memory mapped for the device.

use super::api;
use super::context::Context;
use crate::Result;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::owned_allocation;
use crate::gpu::{NativeAllocation, View};
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

/// The allocation behind `view`, made on `context`'s device.
///
/// # Errors
/// [`crate::Error::Message`] for another backend's or device's allocation.
pub(super) fn allocation<'a>(context: &Arc<Context>, view: &View<'a>) -> Result<&'a HipAllocation> {
    owned_allocation(view, |a: &HipAllocation| Arc::ptr_eq(&a.context, context))
}

/// A device address as HIP's pointer type.
pub(super) fn pointer(address: u64) -> *mut c_void {
    address as usize as *mut c_void
}

/// The device address of `view`'s first byte as HIP's pointer type.
pub(super) fn device_pointer(view: &View<'_>) -> *mut c_void {
    pointer(view.address())
}

/// Device memory (`hipMalloc`) or pinned host memory mapped for the device
/// (`hipHostMalloc(Mapped | Portable)`), freed on drop.
pub(super) struct HipAllocation {
    context: Arc<Context>,
    /// Device address (of the mapping, for host memory).
    address: u64,
    /// Pinned host memory, or null for device memory.
    host: *mut u8,
    len: usize,
}

impl HipAllocation {
    /// `len` zero-filled bytes (one at least); `host_visible`: pinned host memory mapped for
    /// the device. The device is current.
    ///
    /// # Errors
    /// A mapped HIP error (out of memory among them).
    pub(super) fn new(context: &Arc<Context>, len: usize, host_visible: bool) -> Result<Self> {
        let bytes = len.max(1);
        // Owned from here: dropping it frees whatever was allocated.
        let mut allocation = HipAllocation {
            context: context.clone(),
            address: 0,
            host: std::ptr::null_mut(),
            len,
        };
        if host_visible {
            let host = api::host_malloc(bytes).map_err(|e| context.error(e))?;
            allocation.host = host.cast();
            // SAFETY: a live allocation of `bytes` bytes, owned here; zeroed as on the
            // software device.
            unsafe { std::ptr::write_bytes(allocation.host, 0, bytes) };
            // SAFETY: `host` came from hipHostMalloc and is live.
            let device = unsafe { api::host_device_pointer(host) }.map_err(|e| context.error(e))?;
            allocation.address = device as usize as u64;
        } else {
            let device = api::malloc(bytes).map_err(|e| context.error(e))?;
            allocation.address = device as usize as u64;
            // SAFETY: the fresh allocation of `bytes` bytes; waited for before returning.
            unsafe { api::memset(device, 0, bytes) }.map_err(|e| context.error(e))?;
            api::device_synchronize().map_err(|e| context.error(e))?;
        }
        Ok(allocation)
    }
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
        if !self.context.enter_for_drop() {
            return;
        }
        // SAFETY: allocated in `HipAllocation::new`, freed once; the runtime drops a buffer
        // only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::free(self.address as usize as *mut c_void)
            } else {
                api::host_free(self.host.cast())
            }
        };
        if let Err(error) = result {
            self.context.record(error);
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
    fn read_by_dma(&self) -> bool {
        // Pinned host memory: the GPU's copy engines reach it across the bus.
        !self.host.is_null()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
