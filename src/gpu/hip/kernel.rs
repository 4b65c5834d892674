//! Kernels: built-in CUDA C sources compiled with hipRTC to AMD code objects, loaded per
//! device.

use super::api;
use super::context::Context;
use crate::gpu::NativeKernel;
use crate::sync::lock;
use crate::{Error, Result};
use hip_runtime_sys as sys;
use std::any::Any;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, OnceLock};

/// The architecture option for hipRTC: `HRX_HIP_ARCH`, else none (hipRTC then compiles for
/// the current device).
pub(super) fn arch_options() -> Vec<CString> {
    let mut options = vec![CString::new("-ffp-contract=off").expect("no NUL")];
    if let Ok(arch) = std::env::var("HRX_HIP_ARCH")
        && !arch.is_empty()
        && let Ok(option) = CString::new(format!("--offload-arch={arch}"))
    {
        options.push(option);
    }
    options
}

/// A code object of a built-in kernel source, compiled once per process and option set.
pub(super) fn compile(entry: &str, source: &'static str, options: &[CString]) -> Result<Arc<[u8]>> {
    type Cache = HashMap<(&'static str, Vec<CString>), Arc<[u8]>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let key = (source, options.to_vec());
    if let Some(code) = lock(CACHE.get_or_init(Default::default)).get(&key) {
        return Ok(code.clone());
    }
    let text = CString::new(source)
        .map_err(|_| Error::Message(format!("kernel {entry}: source contains NUL")))?;
    let name = CString::new(format!("{entry}.hip")).expect("entry names have no NUL");
    let refs: Vec<&std::ffi::CStr> = options.iter().map(CString::as_c_str).collect();
    let code: Arc<[u8]> = api::rtc_compile(&text, &name, &refs)
        .map_err(|(error, log)| {
            Error::Unsupported(format!(
                "hipRTC could not compile kernel {entry} ({} returned hiprtcResult {}): {}",
                error.call,
                error.code,
                log.trim()
            ))
        })?
        .into();
    lock(CACHE.get_or_init(Default::default)).insert(key, code.clone());
    Ok(code)
}

/// A function of a loaded code object, with the parameter counts of its built-in source.
pub(super) struct HipKernel {
    pub(super) context: Arc<Context>,
    pub(super) entry: String,
    pub(super) function: sys::hipFunction_t,
    /// `(bindings, words)` for built-in sources, checked at dispatch.
    pub(super) parameters: Option<(usize, usize)>,
}

// SAFETY: a function handle may be used from any thread; its module lives as long as the
// device state this value holds.
unsafe impl Send for HipKernel {}
// SAFETY: as above; never mutated.
unsafe impl Sync for HipKernel {}

impl NativeKernel for HipKernel {
    fn entry(&self) -> &str {
        &self.entry
    }
    // No `code()`: traces store PTX for kernels' code, and an AMD code object is not PTX;
    // replay rebuilds built-in kernels from their entry names.
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiprtc_compiles_the_builtin_kernels_to_amd_code_objects() {
        // No device needed: an explicit architecture (MI200, gfx90a).
        let options = vec![
            CString::new("-ffp-contract=off").unwrap(),
            CString::new("--offload-arch=gfx90a").unwrap(),
        ];
        for entry in crate::kernels::builtin_entries() {
            let Some(source) = crate::kernels::cuda_source(entry) else {
                continue;
            };
            let compiled = compile(entry, source, &options);
            if *entry == "hrx_fail" {
                // Its store to an unmapped address is inline PTX.
                let error = compiled.expect_err("PTX assembly is not HIP");
                assert!(
                    matches!(&error, Error::Unsupported(m) if m.contains("hrx_fail")),
                    "{error}"
                );
                continue;
            }
            let code = compiled.unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert!(
                code.starts_with(b"\x7fELF"),
                "{entry}: not an ELF code object"
            );
            assert!(
                code.windows(entry.len()).any(|w| w == entry.as_bytes()),
                "{entry}: symbol missing from the code object"
            );
        }
    }
}
