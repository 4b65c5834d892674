//! The device: opening it, allocation, streams, kernels, synchronous host reads and writes.

use super::api;
use super::context::Context;
use super::kernel::{CudaKernel, SlowedEntry, compile, timed_entry};
use super::memory::{CudaAllocation, allocation};
use super::nvml::{self, Nvml};
use super::stream::CudaStream;
use crate::gpu::common::DeviceContext as _;
use crate::gpu::common::{FallbackNote, read_through, write_through};
use crate::gpu::{Allocation, DeviceInfo, Kernel, NativeDevice, Stream, View};
use crate::gpu::{ClockReader, GpuClocksError};
use crate::kernels::KernelSpec;
use crate::{Error, Result};
use cudarc::driver::sys;
use std::sync::Arc;

/// Why CUDA cannot be used here, or `None`: checks the library and its symbols without
/// initializing the driver.
fn library_problem() -> Option<String> {
    // SAFETY: only tries to dlopen the driver library (running its initializers).
    if !unsafe { sys::is_culib_present() } {
        return Some(
            "CUDA driver library libcuda.so.1 not found (install the NVIDIA driver); the \
             software device (backend sim) needs none"
                .into(),
        );
    }
    // SAFETY: the library is present, so cudarc's loader does not panic.
    unsafe { api::missing_symbol() }.map(|name| {
        format!(
            "the NVIDIA driver's libcuda lacks {name} (update to driver 570 or newer); the \
             software device (backend sim) needs none"
        )
    })
}

/// The CUDA device.
pub(crate) struct CudaDevice {
    context: Arc<Context>,
    name: String,
    memory_bytes: u64,
}

/// Why [`CudaDevice::open`] last failed for `BackendChoice::Auto`.
static FALLBACK: FallbackNote = FallbackNote::new();

/// Records why `Auto` fell back to the software device.
pub(crate) fn note_fallback(reason: String) {
    FALLBACK.note(reason);
}

/// Why `Auto` last fell back to the software device, if it did.
#[allow(dead_code)] // For a `Runtime` accessor; the runtime's owner decides.
pub(crate) fn fallback_note() -> Option<String> {
    FALLBACK.get()
}

impl CudaDevice {
    /// Opens device `ordinal` on its primary context.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when libcuda is missing or too old, the driver does not
    /// initialize or the device does not exist; a mapped driver error otherwise.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        if let Some(problem) = library_problem() {
            return Err(Error::Unsupported(problem));
        }
        let context = Context::get(ordinal)?;
        // The CUDA backend is in use: NVTX ranges too, where libnvToolsExt loads.
        crate::nvtx::enable();
        let name = api::device_name(context.device).map_err(|e| context.error(e))?;
        let memory_bytes = api::device_total_mem(context.device).map_err(|e| context.error(e))?;
        Ok(Self {
            context,
            name,
            memory_bytes: memory_bytes as u64,
        })
    }
}

impl NativeDevice for CudaDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            backend: "cuda",
            name: self.name.clone(),
            ordinal: self.context.ordinal,
            memory_bytes: self.memory_bytes,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        self.context.enter()?;
        let allocation = CudaAllocation::new(&self.context, len, host_visible)?;
        Ok(Allocation::new(Arc::new(allocation)))
    }

    fn stream(&self) -> Result<Stream> {
        self.context.enter()?;
        Ok(Box::new(CudaStream::new(self.context.clone())?))
    }

    /// A kernel from its spec's PTX, or from hrx's built-in source: its self-timing build where
    /// the source rewrites, else the plain source. A slowdown
    /// ([`crate::kernels::KernelCode::slowdown_percent`]) compiles the slowed build into a
    /// module of its own (the stored PTX a trace keeps never holds that entry); it needs the
    /// built-in source (`Error::Unsupported` for PTX or an unknown entry).
    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        let percent = spec.code.slowdown_percent;
        let slowed_name = format!("{}{}", spec.entry, crate::kernels::SLOWED_SUFFIX);
        let (ptx, parameters) = match &spec.code.ptx {
            Some(_) if percent > 0 => {
                return Err(Error::Unsupported(format!(
                    "kernel {}: a slowdown needs hrx's built-in CUDA source (it is given as PTX)",
                    spec.entry
                )));
            }
            Some(ptx) => (ptx.clone(), None),
            None => {
                let source = crate::kernels::cuda_instrumented_source(&spec.entry, percent > 0)
                    .or_else(|| {
                        (percent == 0)
                            .then(|| crate::kernels::cuda_source(&spec.entry).map(str::to_owned))
                            .flatten()
                    })
                    .ok_or_else(|| {
                        Error::Unsupported(if percent > 0 {
                            format!(
                                "kernel {}: a slowdown needs hrx's built-in CUDA source (it has \
                                 none)",
                                spec.entry
                            )
                        } else {
                            format!(
                                "kernel {} has no PTX and no built-in CUDA source",
                                spec.entry
                            )
                        })
                    })?;
                let key = if percent > 0 {
                    &slowed_name
                } else {
                    &spec.entry
                };
                let parameters = crate::kernels::cuda_parameters(&spec.entry);
                (compile(key, &source)?, parameters)
            }
        };
        self.context.enter()?;
        let function = self.context.function(&ptx, &spec.entry)?;
        let timed = timed_entry(&self.context, &ptx, &spec.entry);
        let slowed = if percent > 0 {
            let function = self.context.function(&ptx, &slowed_name)?;
            Some(SlowedEntry {
                function,
                max_threads: api::function_max_threads(function)
                    .map_err(|e| self.context.error(e))?,
                percent,
            })
        } else {
            None
        };
        Ok(Arc::new(CudaKernel {
            context: self.context.clone(),
            entry: spec.entry.clone(),
            function,
            parameters,
            ptx,
            timed,
            slowed,
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        allocation(&self.context, dst)?;
        write_through(dst, data, |address, data| {
            self.context.enter()?;
            // SAFETY: the view is in bounds of the allocation; the caller registered exclusive
            // access. The legacy stream is synchronized before returning.
            unsafe { api::memcpy_htod(address, data) }.map_err(|e| self.context.error(e))?;
            api::stream_synchronize(std::ptr::null_mut()).map_err(|e| self.context.error(e))
        })
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        allocation(&self.context, src)?;
        read_through(src, out, |address, out| {
            self.context.enter()?;
            // SAFETY: the view is in bounds; nothing writes it meanwhile (registered access).
            unsafe { api::memcpy_dtoh(out, address) }.map_err(|e| self.context.error(e))
        })
    }

    /// NVML opened at this device's PCI bus id (module `nvml`).
    fn clock_reader(&self) -> std::result::Result<ClockReader, GpuClocksError> {
        let bus_id =
            api::device_pci_bus_id(self.context.device).map_err(|e| GpuClocksError::NoBusId {
                why: format!("{} returned {:?}", e.call, e.code),
            })?;
        let nvml = Nvml::open(nvml::LIBRARY, &bus_id)?;
        Ok(ClockReader::new(Box::new(nvml)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeOptions;

    fn libcuda_present() -> bool {
        // SAFETY: only tries to dlopen the driver library.
        unsafe { sys::is_culib_present() }
    }

    #[test]
    fn without_libcuda_open_is_unsupported_and_names_the_library() {
        if libcuda_present() {
            eprintln!("skipped: libcuda is present on this machine");
            return;
        }
        let error = CudaDevice::open(0).err().expect("no driver, no device");
        assert!(
            matches!(&error, Error::Unsupported(m) if m.contains("libcuda.so.1")),
            "{error}"
        );
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let options = RuntimeOptions::default().backend(crate::BackendChoice::Cuda);
        let error = crate::runtime::open_device(&options, &faults)
            .err()
            .unwrap();
        assert!(error.to_string().contains("libcuda.so.1"), "{error}");
    }

    #[test]
    fn without_libcuda_auto_falls_back_to_the_software_device() {
        if libcuda_present() {
            eprintln!("skipped: libcuda is present on this machine");
            return;
        }
        let faults = Arc::new(crate::fault::FaultInjector::new(None));
        let device = crate::runtime::open_device(&RuntimeOptions::default(), &faults).unwrap();
        assert_eq!(device.info().backend, "sim");
        assert!(fallback_note().unwrap().contains("libcuda.so.1"));
    }
}
