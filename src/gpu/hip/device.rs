//! The device: opening it, allocation, streams, kernels, synchronous host reads and writes.

use super::api;
use super::context::Shared;
use super::error::code_name;
use super::kernel::{HipKernel, arch_options, compile};
use super::memory::{HipAllocation, allocation, device_pointer};
use super::stream::HipStream;
use crate::gpu::{Allocation, DeviceInfo, Kernel, NativeDevice, Stream, View};
use crate::kernels::KernelSpec;
use crate::sync::lock;
use crate::{Error, Result};
use std::sync::{Arc, Mutex};

/// `hipErrorNoDevice`.
pub(super) const NO_DEVICE: i32 = 100;

/// Why `Auto` last skipped HIP.
pub(super) static FALLBACK_NOTE: Mutex<Option<String>> = Mutex::new(None);

/// Records why `Auto` skipped HIP.
pub(crate) fn note_fallback(reason: String) {
    *lock(&FALLBACK_NOTE) = Some(reason);
}

/// Why `Auto` last skipped HIP, if it did.
#[allow(dead_code)] // Read by tests; kept for a `Runtime` accessor like CUDA's.
pub(crate) fn fallback_note() -> Option<String> {
    lock(&FALLBACK_NOTE).clone()
}

/// The HIP device.
pub(crate) struct HipDevice {
    shared: Arc<Shared>,
    name: String,
    memory_bytes: u64,
}

impl HipDevice {
    /// Opens device `ordinal`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming libamdhip64 when HIP finds no device (or not that many);
    /// a mapped HIP error otherwise.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        let version = api::runtime_version().unwrap_or(0);
        let no_device = |detail: String| {
            Error::Unsupported(format!(
                "HIP: no device {ordinal} ({detail}; hrx links libamdhip64.so.5, HIP runtime \
                 {}.{}); the hip backend needs an AMD GPU with the ROCm driver (/dev/kfd); the \
                 software device (backend sim) needs none",
                version / 10_000_000,
                version / 100_000 % 100
            ))
        };
        let count = match api::device_count() {
            Ok(count) => count,
            Err(e) if e.code == NO_DEVICE => return Err(no_device(code_name(e.code))),
            Err(e) => {
                return Err(no_device(format!(
                    "hipGetDeviceCount: {}",
                    code_name(e.code)
                )));
            }
        };
        let index = i32::try_from(ordinal)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| no_device(format!("{count} HIP devices found")))?;
        let shared = Arc::new(Shared {
            ordinal: index,
            lost: Mutex::default(),
            deferred: Mutex::default(),
            modules: Mutex::default(),
        });
        shared.enter()?;
        let device = api::device(index).map_err(|e| shared.error(e))?;
        let name = api::device_name(device).map_err(|e| shared.error(e))?;
        let memory_bytes = api::device_total_mem(device).map_err(|e| shared.error(e))? as u64;
        Ok(Self {
            shared,
            name,
            memory_bytes,
        })
    }
}

impl NativeDevice for HipDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            backend: "hip",
            name: self.name.clone(),
            ordinal: self.shared.ordinal as usize,
            memory_bytes: self.memory_bytes,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        let shared = &self.shared;
        shared.enter()?;
        let bytes = len.max(1);
        let mut allocation = HipAllocation {
            shared: shared.clone(),
            address: 0,
            host: std::ptr::null_mut(),
            len,
        };
        if host_visible {
            let host = api::host_malloc(bytes).map_err(|e| shared.error(e))?;
            allocation.host = host.cast();
            // SAFETY: a live allocation of `bytes` bytes, owned here; zeroed as on the
            // software device.
            unsafe { std::ptr::write_bytes(allocation.host, 0, bytes) };
            // SAFETY: `host` came from hipHostMalloc and is live.
            let device = unsafe { api::host_device_pointer(host) }.map_err(|e| shared.error(e))?;
            allocation.address = device as usize as u64;
        } else {
            let device = api::malloc(bytes).map_err(|e| shared.error(e))?;
            allocation.address = device as usize as u64;
            // SAFETY: the fresh allocation of `bytes` bytes; waited for before returning.
            unsafe { api::memset(device, 0, bytes) }.map_err(|e| shared.error(e))?;
            api::device_synchronize().map_err(|e| shared.error(e))?;
        }
        Ok(Allocation::new(Arc::new(allocation)))
    }

    fn stream(&self) -> Result<Stream> {
        self.shared.enter()?;
        Ok(Box::new(HipStream::new(self.shared.clone())?))
    }

    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        let source = crate::kernels::cuda_source(&spec.entry).ok_or_else(|| {
            Error::Unsupported(format!(
                "kernel {}: HIP needs an AMD code object and hrx has no built-in source of \
                 that name{}",
                spec.entry,
                if spec.code.ptx.is_some() {
                    " (its PTX is for CUDA only)"
                } else {
                    ""
                }
            ))
        })?;
        self.shared.enter()?;
        let code = compile(&spec.entry, source, &arch_options())?;
        let function = self.shared.function(&code, &spec.entry)?;
        Ok(Arc::new(HipKernel {
            shared: self.shared.clone(),
            entry: spec.entry.clone(),
            function,
            parameters: crate::kernels::cuda_parameters(&spec.entry),
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        allocation(&self.shared, dst)?;
        let data = &data[..data.len().min(dst.len())];
        if let Some(host) = dst.host_pointer() {
            // SAFETY: the caller registered exclusive host access to `dst`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        self.shared.enter()?;
        // SAFETY: the view is in bounds; the caller registered exclusive access.
        unsafe { api::memcpy_htod(device_pointer(dst), data) }.map_err(|e| self.shared.error(e))?;
        api::device_synchronize().map_err(|e| self.shared.error(e))
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        allocation(&self.shared, src)?;
        let len = out.len().min(src.len());
        let out = &mut out[..len];
        if let Some(host) = src.host_pointer() {
            // SAFETY: the caller registered host read access to `src`.
            unsafe { std::ptr::copy_nonoverlapping(host, out.as_mut_ptr(), len) };
            return Ok(());
        }
        if out.is_empty() {
            return Ok(());
        }
        self.shared.enter()?;
        // SAFETY: the view is in bounds; nothing writes it meanwhile (registered access).
        unsafe { api::memcpy_dtoh(out, device_pointer(src)) }.map_err(|e| self.shared.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeOptions;

    fn device_present() -> bool {
        api::device_count().is_ok_and(|n| n > 0)
    }

    #[test]
    fn without_a_device_open_is_unsupported_and_names_the_library() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        let Err(error) = HipDevice::open(0) else {
            panic!("no device, yet HIP opened one");
        };
        assert!(
            matches!(&error, Error::Unsupported(m) if m.contains("HIP: no device 0") && m.contains("libamdhip64")),
            "{error}"
        );
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default()
            .environment(false)
            .backend(crate::BackendChoice::Hip);
        let error = crate::runtime::open_device(&options, &faults)
            .err()
            .unwrap();
        assert!(error.to_string().contains("libamdhip64"), "{error}");
    }

    #[test]
    fn without_a_device_auto_skips_hip() {
        if device_present() {
            eprintln!("skipped: an AMD GPU is present");
            return;
        }
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default().environment(false);
        let device = crate::runtime::open_device(&options, &faults).unwrap();
        assert_ne!(device.info().backend, "hip");
        assert!(fallback_note().unwrap().contains("HIP: no device"));
    }
}
