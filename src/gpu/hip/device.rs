//! The device: opening it, allocation, streams, kernels, synchronous host reads and writes.

use super::api;
use super::context::Context;
use super::error::code_name;
use super::kernel::{HipKernel, arch_options, compile};
use super::memory::{HipAllocation, allocation, pointer};
use super::stream::HipStream;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{FallbackNote, read_through, write_through};
use crate::gpu::{Allocation, DeviceInfo, Kernel, NativeDevice, Stream, View};
use crate::kernels::KernelSpec;
use crate::{Error, Result};
use std::sync::Arc;

/// `hipErrorNoDevice`.
const NO_DEVICE: i32 = 100;

/// Why `Auto` last skipped HIP.
static FALLBACK: FallbackNote = FallbackNote::new();

/// Records why `Auto` skipped HIP.
pub(crate) fn note_fallback(reason: String) {
    FALLBACK.note(reason);
}

/// Why `Auto` last skipped HIP, if it did.
#[allow(dead_code)] // Read by tests; kept for a `Runtime` accessor like CUDA's.
pub(crate) fn fallback_note() -> Option<String> {
    FALLBACK.get()
}

/// The HIP device.
pub(crate) struct HipDevice {
    context: Arc<Context>,
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
        let context = Arc::new(Context::new(index));
        context.enter()?;
        let device = api::device(index).map_err(|e| context.error(e))?;
        let name = api::device_name(device).map_err(|e| context.error(e))?;
        let memory_bytes = api::device_total_mem(device).map_err(|e| context.error(e))? as u64;
        Ok(Self {
            context,
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
            ordinal: self.context.ordinal as usize,
            memory_bytes: self.memory_bytes,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        self.context.enter()?;
        let allocation = HipAllocation::new(&self.context, len, host_visible)?;
        Ok(Allocation::new(Arc::new(allocation)))
    }

    fn stream(&self) -> Result<Stream> {
        self.context.enter()?;
        Ok(Box::new(HipStream::new(self.context.clone())?))
    }

    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        if spec.code.slowdown_percent > 0 {
            return Err(Error::Unsupported(format!(
                "kernel {}: HIP has no slowed build (a slowdown is a test option of the \
                 software device and CUDA)",
                spec.entry
            )));
        }
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
        self.context.enter()?;
        let code = compile(&spec.entry, source, &arch_options())?;
        let function = self.context.function(&code, &spec.entry)?;
        Ok(Arc::new(HipKernel {
            context: self.context.clone(),
            entry: spec.entry.clone(),
            function,
            parameters: crate::kernels::cuda_parameters(&spec.entry),
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        allocation(&self.context, dst)?;
        write_through(dst, data, |address, data| {
            self.context.enter()?;
            // SAFETY: the view is in bounds; the caller registered exclusive access.
            unsafe { api::memcpy_htod(pointer(address), data) }
                .map_err(|e| self.context.error(e))?;
            api::device_synchronize().map_err(|e| self.context.error(e))
        })
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        allocation(&self.context, src)?;
        read_through(src, out, |address, out| {
            self.context.enter()?;
            // SAFETY: the view is in bounds; nothing writes it meanwhile (registered access).
            unsafe { api::memcpy_dtoh(out, pointer(address)) }.map_err(|e| self.context.error(e))
        })
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
