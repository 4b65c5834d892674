//! Device memory and pinned host memory mapped for the device.

use super::api;
use super::context::Context;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::owned_allocation;
use crate::gpu::{NativeAllocation, View};
use crate::huge_pages::HugeRegion;
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
/// (`cuMemHostAlloc(DEVICEMAP | PORTABLE)`; from [`crate::huge_pages::MIN_BYTES`] on, huge
/// pages registered with `cuMemHostRegister` with the same flags, so that where the buffer
/// lies in physical memory moves its copies and the host's work on it no longer from one
/// process to the next: `crate::huge_pages`), freed on drop.
pub(super) struct CudaAllocation {
    context: Arc<Context>,
    /// Device address (of the mapping, for host memory).
    address: sys::CUdeviceptr,
    /// Pinned host memory (page-aligned, inside `host_base`'s allocation), or null for device
    /// memory.
    host: *mut u8,
    /// What `cuMemHostAlloc` returned, freed on drop (null for huge pages).
    host_base: *mut u8,
    /// The huge pages `host` starts, registered with the driver; unregistered, then
    /// unmapped, on drop.
    huge: Option<HugeRegion>,
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
        if host_visible {
            // A bad `HRX_HUGE_PAGES` fails as on the software device.
            crate::huge_pages::enabled().map_err(Error::Message)?;
        }
        // A region the driver refuses to register (a limit on pinned memory) is given back,
        // and `cuMemHostAlloc` tried as for a smaller buffer: it answers the same limit with
        // its own error.
        let huge = host_visible
            .then(|| HugeRegion::new(bytes))
            .flatten()
            .filter(|region| {
                // Pinned pages a forked child would share copy-on-write: a write by the
                // parent after a fork could move its page away from the one the device maps
                // (older kernels; what `ibv_fork_init` guards against with the same advice).
                // The child gets no mapping, as it gets none of `cuMemHostAlloc`'s memory.
                region.keep_from_forks();
                // SAFETY: the region is mapped, and stays so until it is unregistered on
                // drop (below: the allocation owns it from its registration on).
                unsafe { api::mem_host_register(region.as_ptr().cast(), region.len()) }.is_ok()
            });
        let allocation = if let Some(region) = huge {
            let host = region.as_ptr();
            // Owned from here: dropping it unregisters and unmaps the memory (zeroed: an
            // anonymous mapping).
            let mut allocation = CudaAllocation {
                context: context.clone(),
                address: 0,
                host,
                host_base: std::ptr::null_mut(),
                huge: Some(region),
                len,
            };
            // SAFETY: `host` is registered (above) and live.
            allocation.address = unsafe { api::mem_host_device_pointer(host.cast()) }
                .map_err(|e| context.error(e))?;
            allocation
        } else if host_visible {
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
                huge: None,
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
                huge: None,
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
            // Still registered with a driver this drop cannot reach: kept mapped (leaked, as
            // `cuMemHostAlloc`'s memory is here), never unmapped under pages the device may
            // still map.
            std::mem::forget(self.huge.take());
            return;
        }
        // SAFETY: allocated in `CudaAllocation::new`, freed once here; the runtime drops a
        // buffer only after every graph and submission using it.
        let result = unsafe {
            if self.host.is_null() {
                api::mem_free(self.address)
            } else if self.huge.is_some() {
                // The region itself is unmapped after this, as the field drops.
                api::mem_host_unregister(self.host.cast())
            } else {
                api::mem_free_host(self.host_base.cast())
            }
        };
        if let Err(error) = result {
            // Not unregistered: kept mapped, as above.
            std::mem::forget(self.huge.take());
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
