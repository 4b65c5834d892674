//! Device memory and pinned host memory mapped for the device.

use super::api;
use super::context::Context;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::owned_allocation;
use crate::gpu::{NativeAllocation, View};
use crate::{Error, Result};
use cudarc::driver::sys;
use std::any::Any;
use std::sync::Arc;

/// Alignment of host-visible memory (XRT's rule for imported host memory).
const PAGE: usize = 4096;

/// The allocation behind `view`, made on `context`.
///
/// # Errors
/// [`Error::Message`] for another backend's or context's allocation.
pub(super) fn allocation<'a>(
    context: &Arc<Context>,
    view: &View<'a>,
) -> Result<&'a CudaAllocation> {
    owned_allocation(view, |a: &CudaAllocation| Arc::ptr_eq(&a.context, context))
}

/// Device memory (`cuMemAlloc`) or pinned host memory mapped for the device
/// (`cuMemHostAlloc(DEVICEMAP | PORTABLE)`), freed on drop.
pub(super) struct CudaAllocation {
    context: Arc<Context>,
    /// Device address (of the mapping, for host memory).
    address: sys::CUdeviceptr,
    /// Pinned host memory (page-aligned, inside `host_base`'s allocation), or null for device
    /// memory.
    host: *mut u8,
    /// What `cuMemHostAlloc` returned, freed on drop.
    host_base: *mut u8,
    len: usize,
}

impl CudaAllocation {
    /// `len` zero-filled bytes (one at least); `host_visible`: pinned host memory mapped for
    /// the device, starting at a page boundary. The context is current.
    ///
    /// # Errors
    /// A mapped driver error (out of memory among them).
    pub(super) fn new(context: &Arc<Context>, len: usize, host_visible: bool) -> Result<Self> {
        let bytes = len.max(1);
        let allocation = if host_visible {
            // `cuMemHostAlloc` does not promise page alignment (1 byte came back 1 KiB-aligned
            // on the H200), but XRT imports host memory only at 4 KiB-aligned addresses: take
            // a page more and start at the first page boundary.
            let padded = bytes.checked_add(PAGE).ok_or_else(|| {
                Error::Message(format!("cannot allocate {len} bytes of pinned host memory"))
            })?;
            let base = api::mem_host_alloc(padded).map_err(|e| context.error(e))?;
            let offset = (base as usize).next_multiple_of(PAGE) - base as usize;
            // Owned from here: dropping it frees the host memory.
            let mut allocation = CudaAllocation {
                context: context.clone(),
                address: 0,
                // SAFETY: `offset < PAGE`, inside the allocation of `padded` bytes.
                host: unsafe { base.cast::<u8>().add(offset) },
                host_base: base.cast(),
                len,
            };
            // SAFETY: `host..host + bytes` lies in the live allocation, owned here; zeroed as
            // on the software device.
            unsafe { std::ptr::write_bytes(allocation.host, 0, bytes) };
            // SAFETY: `base` came from cuMemHostAlloc and is live; the mapping is linear.
            let device =
                unsafe { api::mem_host_device_pointer(base) }.map_err(|e| context.error(e))?;
            allocation.address = device + offset as u64;
            allocation
        } else {
            let address = api::mem_alloc(bytes).map_err(|e| context.error(e))?;
            let allocation = CudaAllocation {
                context: context.clone(),
                address,
                host: std::ptr::null_mut(),
                host_base: std::ptr::null_mut(),
                len,
            };
            // SAFETY: the fresh allocation of `bytes` bytes; waited for before returning
            // (non-blocking streams do not wait for the legacy stream).
            unsafe { api::memset_d8(address, 0, bytes) }.map_err(|e| context.error(e))?;
            api::stream_synchronize(std::ptr::null_mut()).map_err(|e| context.error(e))?;
            allocation
        };
        Ok(allocation)
    }
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
        // SAFETY: allocated in `CudaAllocation::new`, freed once here; the runtime drops a
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
    fn read_by_dma(&self) -> bool {
        // Pinned host memory: the GPU's copy engines reach it across the bus.
        !self.host.is_null()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
