//! Per-device state (HIP's counterpart of a CUDA context: HIP's current device is per thread):
//! making the device current, the sticky error slot, loaded modules.

use super::api::{self, HipError, HipResult};
use super::error::map_error;
use crate::gpu::common::{DeviceContext, Modules, StickySlot};
use crate::{Error, Result};
use hip_runtime_sys as sys;
use std::ffi::CStr;
use std::sync::Arc;

/// Per-device state shared by everything made on it.
pub(super) struct Context {
    pub(super) ordinal: i32,
    sticky: StickySlot,
    /// Modules by code object; unloaded with the device.
    modules: Modules<Arc<[u8]>, sys::hipModule_t>,
}

// SAFETY: HIP handles may be used from any thread once the device is current; mutable state
// is behind mutexes and atomics.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Context {
    /// The state of device `ordinal` (a valid index), with an empty sticky slot.
    pub(super) fn new(ordinal: i32) -> Self {
        Self {
            ordinal,
            sticky: StickySlot::new("HIP", ordinal as usize),
            modules: Modules::default(),
        }
    }

    /// `entry` of the module loaded from `code`, loading it on first use. Device current.
    pub(super) fn function(&self, code: &Arc<[u8]>, entry: &str) -> Result<sys::hipFunction_t> {
        let load = || api::module_load_data(code).map_err(|e| self.error(e));
        let lookup = |module, name: &CStr| {
            api::module_function(module, name).map_err(|e| {
                if e.code == sys::hipError_t::hipErrorNotFound as i32 {
                    Error::Unsupported(format!(
                        "kernel {entry}: its code object has no entry point of that name"
                    ))
                } else {
                    self.error(e)
                }
            })
        };
        self.modules.function(code, entry, load, lookup)
    }
}

impl DeviceContext for Context {
    type CallError = HipError;

    fn sticky(&self) -> &StickySlot {
        &self.sticky
    }

    fn map_error(error: HipError) -> Error {
        map_error(error)
    }

    fn make_current(&self) -> HipResult<()> {
        api::set_device(self.ordinal)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if api::set_device(self.ordinal).is_ok() {
            for module in self.modules.drain() {
                let _ = api::module_unload(module);
            }
        }
    }
}
