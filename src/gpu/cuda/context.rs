//! The device's primary context: making it current, the sticky error slot, loaded modules.

use super::api;
use super::error::{CuError, map_error};
use crate::sync::lock;
use crate::{Error, Result};
use cudarc::driver::sys::{self, CUresult};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The oldest driver with every call the backend makes (`cuEventElapsedTime_v2`: 12.8).
pub(super) const MIN_DRIVER_VERSION: i32 = 12080;

/// Errors recorded where they could not be returned.
#[derive(Default)]
pub(super) struct Sticky {
    /// The first device loss: every later call answers it.
    pub(super) lost: Option<String>,
    /// A non-fatal error from a `Drop`, answered once by the next call.
    pub(super) deferred: Option<Error>,
}

/// A loaded module.
pub(super) struct Module(sys::CUmodule);

/// A device's primary context, shared by every runtime of the process on that device.
pub(super) struct Context {
    pub(super) ordinal: usize,
    pub(super) device: sys::CUdevice,
    pub(super) raw: sys::CUcontext,
    /// Whether the sticky slot holds anything (the fast path reads only this).
    pub(super) flagged: AtomicBool,
    pub(super) sticky: Mutex<Sticky>,
    /// Modules by PTX text; unloaded with the context.
    pub(super) modules: Mutex<HashMap<Arc<str>, Module>>,
}

// SAFETY: the driver API is thread-safe; a context handle may be made current on any thread.
unsafe impl Send for Context {}
// SAFETY: as above; mutable state is behind mutexes and atomics.
unsafe impl Sync for Context {}

impl Context {
    /// The process's context for `ordinal`, retained on first use.
    pub(super) fn get(ordinal: usize) -> Result<Arc<Context>> {
        static CONTEXTS: OnceLock<Mutex<HashMap<usize, Weak<Context>>>> = OnceLock::new();
        let mut contexts = lock(CONTEXTS.get_or_init(Default::default));
        if let Some(context) = contexts.get(&ordinal).and_then(Weak::upgrade) {
            return Ok(context);
        }
        let unsupported = |what: String| Error::Unsupported(format!("CUDA: {what}"));
        api::init().map_err(|e| {
            unsupported(format!(
                "the driver did not initialize ({:?}); is the NVIDIA kernel module loaded and \
                 a GPU visible?",
                e.code
            ))
        })?;
        let version = api::driver_version().map_err(map_error)?;
        if version < MIN_DRIVER_VERSION {
            return Err(unsupported(format!(
                "driver supports CUDA {}.{}, the backend needs {}.{} or newer",
                version / 1000,
                version % 1000 / 10,
                MIN_DRIVER_VERSION / 1000,
                MIN_DRIVER_VERSION % 1000 / 10
            )));
        }
        let count = api::device_count().map_err(map_error)?;
        let index = i32::try_from(ordinal)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| {
                unsupported(format!("no device {ordinal} ({count} CUDA devices found)"))
            })?;
        let device = api::device(index).map_err(map_error)?;
        let raw = api::primary_ctx_retain(device).map_err(map_error)?;
        let context = Arc::new(Context {
            ordinal,
            device,
            raw,
            flagged: AtomicBool::new(false),
            sticky: Mutex::default(),
            modules: Mutex::default(),
        });
        contexts.insert(ordinal, Arc::downgrade(&context));
        Ok(context)
    }

    /// Fails with the sticky error, if any; else makes the context current on this thread.
    pub(super) fn enter(&self) -> Result<()> {
        self.check()?;
        api::ctx_set_current(self.raw).map_err(|e| self.error(e))
    }

    /// The sticky slot: the device loss, or a deferred error (answered once).
    pub(super) fn check(&self) -> Result<()> {
        if !self.flagged.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut sticky = lock(&self.sticky);
        if let Some(cause) = &sticky.lost {
            return Err(Error::DeviceLost(format!(
                "CUDA device {} was lost earlier: {cause}",
                self.ordinal
            )));
        }
        let deferred = sticky.deferred.take();
        self.flagged.store(false, Ordering::Release);
        deferred.map_or(Ok(()), Err)
    }

    /// Maps `error`; a device loss also fills the sticky slot.
    pub(super) fn error(&self, error: CuError) -> Error {
        let mapped = map_error(error);
        if mapped.is_device_loss() {
            lock(&self.sticky)
                .lost
                .get_or_insert_with(|| mapped.to_string());
            self.flagged.store(true, Ordering::Release);
        }
        mapped
    }

    /// Records an error that cannot be returned (in `Drop`).
    pub(super) fn record(&self, error: CuError) {
        let mapped = self.error(error);
        if !mapped.is_device_loss() {
            lock(&self.sticky).deferred.get_or_insert(mapped);
            self.flagged.store(true, Ordering::Release);
        }
    }

    /// For `Drop`: makes the context current, recording a failure; whether that worked.
    pub(super) fn enter_for_drop(&self) -> bool {
        match api::ctx_set_current(self.raw) {
            Ok(()) => true,
            Err(error) => {
                self.record(error);
                false
            }
        }
    }

    /// `entry` from the module of `ptx`, loading it on first use. The context is current.
    pub(super) fn function(&self, ptx: &Arc<str>, entry: &str) -> Result<sys::CUfunction> {
        let name = CString::new(entry)
            .map_err(|_| Error::Message(format!("kernel entry {entry:?} contains NUL")))?;
        let mut modules = lock(&self.modules);
        let module = match modules.get(ptx) {
            Some(module) => module.0,
            None => {
                let text = CString::new(ptx.as_bytes())
                    .map_err(|_| Error::Message(format!("PTX of kernel {entry} contains NUL")))?;
                let module = api::module_load_data(&text).map_err(|e| self.error(e))?;
                modules.insert(ptx.clone(), Module(module));
                module
            }
        };
        api::module_function(module, &name).map_err(|e| match e.code {
            CUresult::CUDA_ERROR_NOT_FOUND => Error::Unsupported(format!(
                "kernel {entry}: its PTX has no entry point of that name"
            )),
            _ => self.error(e),
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Errors here have nowhere left to go: the context and its slot end now.
        if api::ctx_set_current(self.raw).is_ok() {
            for (_, module) in lock(&self.modules).drain() {
                let _ = api::module_unload(module.0);
            }
            let _ = api::ctx_set_current(std::ptr::null_mut());
        }
        let _ = api::primary_ctx_release(self.device);
    }
}
