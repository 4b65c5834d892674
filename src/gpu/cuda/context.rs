//! The device's primary context: making it current, the sticky error slot, loaded modules.

use super::api;
use super::error::{CuError, CuResult, map_error};
use crate::gpu::common::{DeviceContext, Modules, StickySlot};
use crate::sync::lock;
use crate::{Error, Result};
use cudarc::driver::sys::{self, CUresult};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The oldest driver with every call the backend makes (`cuEventElapsedTime_v2`: 12.8).
const MIN_DRIVER_VERSION: i32 = 12080;

/// A device's primary context, shared by every runtime of the process on that device.
pub(super) struct Context {
    pub(super) ordinal: usize,
    pub(super) device: sys::CUdevice,
    pub(super) raw: sys::CUcontext,
    sticky: StickySlot,
    /// Modules by PTX text; unloaded with the context.
    modules: Modules<Arc<str>, sys::CUmodule>,
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
            sticky: StickySlot::new("CUDA", ordinal),
            modules: Modules::default(),
        });
        contexts.insert(ordinal, Arc::downgrade(&context));
        Ok(context)
    }

    /// `entry` from the module of `ptx`, loading it on first use. The context is current.
    pub(super) fn function(&self, ptx: &Arc<str>, entry: &str) -> Result<sys::CUfunction> {
        let load = || {
            let text = CString::new(ptx.as_bytes())
                .map_err(|_| Error::Message(format!("PTX of kernel {entry} contains NUL")))?;
            api::module_load_data(&text).map_err(|e| self.error(e))
        };
        let lookup = |module, name: &CStr| {
            api::module_function(module, name).map_err(|e| match e.code {
                CUresult::CUDA_ERROR_NOT_FOUND => Error::Unsupported(format!(
                    "kernel {entry}: its PTX has no entry point of that name"
                )),
                _ => self.error(e),
            })
        };
        self.modules.function(ptx, entry, load, lookup)
    }
}

impl DeviceContext for Context {
    type CallError = CuError;

    fn sticky(&self) -> &StickySlot {
        &self.sticky
    }

    fn map_error(error: CuError) -> Error {
        map_error(error)
    }

    /// Asks first and sets only when another context (or none) is current, as cudarc's
    /// `CudaContext::bind_to_thread` does: a thread that waits on its submissions keeps the
    /// context current from one launch to the next, so the per-launch call is then a read of
    /// the thread's current context rather than a set (`benches/gpu.rs`'s `one_kernel
    /// ablation` measures both calls). Asking, not remembering what was set: the application
    /// may make another context current on its own thread between two calls.
    fn make_current(&self) -> CuResult<()> {
        if api::ctx_get_current()? == self.raw {
            return Ok(());
        }
        api::ctx_set_current(self.raw)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Errors here have nowhere left to go: the context and its slot end now.
        if api::ctx_set_current(self.raw).is_ok() {
            for module in self.modules.drain() {
                let _ = api::module_unload(module);
            }
            let _ = api::ctx_set_current(std::ptr::null_mut());
        }
        let _ = api::primary_ctx_release(self.device);
    }
}
