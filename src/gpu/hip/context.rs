//! Per-device state: making the device current, the sticky error slot, loaded modules.

use super::api::{self, HipError};
use super::error::map_error;
use crate::sync::lock;
use crate::{Error, Result};
use hip_runtime_sys as sys;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

/// Per-device state shared by everything made on it.
pub(super) struct Shared {
    pub(super) ordinal: i32,
    /// The first device loss; every later call answers it.
    pub(super) lost: Mutex<Option<String>>,
    /// A non-fatal error from a `Drop`, answered once by the next call.
    pub(super) deferred: Mutex<Option<Error>>,
    /// Modules by code object; unloaded with the device.
    pub(super) modules: Mutex<HashMap<Arc<[u8]>, Module>>,
}

pub(super) struct Module(sys::hipModule_t);

// SAFETY: HIP handles may be used from any thread once the device is current; mutable state
// is behind mutexes.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// Fails with the sticky or deferred error, else makes the device current on this thread.
    pub(super) fn enter(&self) -> Result<()> {
        if let Some(cause) = &*lock(&self.lost) {
            return Err(Error::DeviceLost(format!(
                "HIP device {} was lost earlier: {cause}",
                self.ordinal
            )));
        }
        if let Some(error) = lock(&self.deferred).take() {
            return Err(error);
        }
        api::set_device(self.ordinal).map_err(|e| self.error(e))
    }

    /// Maps `error`; a device loss also fills the sticky slot.
    pub(super) fn error(&self, error: HipError) -> Error {
        let mapped = map_error(error);
        if mapped.is_device_loss() {
            lock(&self.lost).get_or_insert_with(|| mapped.to_string());
        }
        mapped
    }

    /// Records an error that cannot be returned (in `Drop`).
    pub(super) fn record(&self, error: HipError) {
        let mapped = self.error(error);
        if !mapped.is_device_loss() {
            lock(&self.deferred).get_or_insert(mapped);
        }
    }

    /// For `Drop`: makes the device current; whether that worked.
    pub(super) fn enter_for_drop(&self) -> bool {
        match api::set_device(self.ordinal) {
            Ok(()) => true,
            Err(error) => {
                self.record(error);
                false
            }
        }
    }

    /// `entry` of the module loaded from `code`, loading it on first use. Device current.
    pub(super) fn function(&self, code: &Arc<[u8]>, entry: &str) -> Result<sys::hipFunction_t> {
        let name = CString::new(entry)
            .map_err(|_| Error::Message(format!("kernel entry {entry:?} contains NUL")))?;
        let mut modules = lock(&self.modules);
        let module = match modules.get(code) {
            Some(module) => module.0,
            None => {
                let module = api::module_load_data(code).map_err(|e| self.error(e))?;
                modules.insert(code.clone(), Module(module));
                module
            }
        };
        api::module_function(module, &name).map_err(|e| {
            if e.code == sys::hipError_t::hipErrorNotFound as i32 {
                Error::Unsupported(format!(
                    "kernel {entry}: its code object has no entry point of that name"
                ))
            } else {
                self.error(e)
            }
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if api::set_device(self.ordinal).is_ok() {
            for (_, module) in lock(&self.modules).drain() {
                let _ = api::module_unload(module.0);
            }
        }
    }
}
