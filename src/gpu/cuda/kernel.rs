//! Kernels: PTX from a spec or compiled from a built-in CUDA C source with NVRTC, loaded per
//! context.

use super::api;
use super::context::Context;
use crate::gpu::NativeKernel;
use crate::sync::lock;
use crate::{Error, Result};
use cudarc::driver::sys;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// PTX of a built-in kernel's source, compiled once per process per entry.
pub(super) fn compile(entry: &str, source: &str) -> Result<Arc<str>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<str>>>> = OnceLock::new();
    let mut cache = lock(CACHE.get_or_init(Default::default));
    if let Some(ptx) = cache.get(entry) {
        return Ok(ptx.clone());
    }
    // SAFETY: only tries to dlopen libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Unsupported(format!(
            "kernel {entry}: the NVRTC library libnvrtc.so was not found (install the CUDA \
             toolkit's NVRTC, e.g. the cuda-nvrtc package), or give the spec PTX"
        )));
    }
    let options = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        ftz: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        name: Some(format!("{entry}.cu")),
        ..Default::default()
    };
    // cudarc panics on a missing NVRTC symbol; answer an error instead.
    let compiled = std::panic::catch_unwind(|| {
        cudarc::nvrtc::compile_ptx_with_opts(source, options).map(|ptx| ptx.to_src())
    })
    .map_err(|_| Error::Unsupported(format!("kernel {entry}: NVRTC could not be loaded")))?;
    let ptx: Arc<str> = compiled
        .map_err(|error| {
            let detail = match error {
                cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. } => {
                    format!("{nvrtc:?}: {}", log.to_string_lossy())
                }
                other => format!("{other:?}"),
            };
            Error::Message(format!("NVRTC could not compile kernel {entry}: {detail}"))
        })?
        .into();
    cache.insert(entry.to_owned(), ptx.clone());
    Ok(ptx)
}

/// A built-in kernel's self-timing entry and its module's collector
/// ([`crate::kernels::TIMED_SUFFIX`]).
#[derive(Clone, Copy)]
pub(super) struct TimedEntry {
    pub(super) function: sys::CUfunction,
    pub(super) collect: sys::CUfunction,
    /// The module's start marker ([`crate::kernels::MARK_ENTRY`]); `None` in the PTX of
    /// builds before it (a replayed trace's), whose timed graphs keep their start event.
    pub(super) mark: Option<sys::CUfunction>,
    /// Its largest block (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`): it needs a few more
    /// registers than the plain entry, so a larger block launches the plain one.
    pub(super) max_threads: u32,
}

/// The timed entry of `entry` in the module of `ptx`, where the PTX declares both it and the
/// collector (built-in kernels compiled here, and their PTX as a trace stores it); `None`
/// otherwise, and where the driver does not find them (the kernel then runs untimed). The
/// context is current.
pub(super) fn timed_entry(context: &Context, ptx: &Arc<str>, entry: &str) -> Option<TimedEntry> {
    use crate::kernels::{COLLECT_ENTRY, MARK_ENTRY, TIMED_SUFFIX};
    let timed = format!("{entry}{TIMED_SUFFIX}");
    let declares = |name: &str| ptx.contains(&format!(".entry {name}("));
    if !declares(&timed) || !declares(COLLECT_ENTRY) {
        return None;
    }
    let function = context.function(ptx, &timed).ok()?;
    Some(TimedEntry {
        function,
        collect: context.function(ptx, COLLECT_ENTRY).ok()?,
        mark: declares(MARK_ENTRY)
            .then(|| context.function(ptx, MARK_ENTRY).ok())
            .flatten(),
        max_threads: api::function_max_threads(function).ok()?,
    })
}

/// A built-in kernel's slowed entry ([`crate::kernels::SLOWED_SUFFIX`]): a test of a
/// regression gate that graphs launch instead of the plain or timed entry.
#[derive(Clone, Copy)]
pub(super) struct SlowedEntry {
    pub(super) function: sys::CUfunction,
    /// Its largest block (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub(super) max_threads: u32,
    /// How much longer each block stays resident, in percent of its own time.
    pub(super) percent: u32,
}

/// A function of a loaded PTX module, with the PTX and the parameter counts of its built-in
/// source.
pub(super) struct CudaKernel {
    pub(super) context: Arc<Context>,
    pub(super) entry: String,
    pub(super) function: sys::CUfunction,
    /// `(bindings, words)` for built-in sources, checked at dispatch.
    pub(super) parameters: Option<(usize, usize)>,
    /// The PTX the module was loaded from (the trace stores it; replay needs no NVRTC).
    pub(super) ptx: std::sync::Arc<str>,
    /// The self-timing entry, for built-in kernels: a traced graph launches it instead.
    pub(super) timed: Option<TimedEntry>,
    /// The slowed entry, where asked ([`crate::kernels::KernelCode::slowdown_percent`]).
    pub(super) slowed: Option<SlowedEntry>,
}

// SAFETY: a function handle may be used from any thread with its context current; its module
// lives as long as the context this value holds.
unsafe impl Send for CudaKernel {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for CudaKernel {}

impl NativeKernel for CudaKernel {
    fn code(&self) -> Option<&[u8]> {
        Some(self.ptx.as_bytes())
    }
    fn entry(&self) -> &str {
        &self.entry
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_gpu_kernel_has_a_cuda_source_with_its_entry() {
        for entry in crate::kernels::builtin_entries() {
            if *entry == "hrx_npu_threshold" {
                assert!(crate::kernels::cuda_source(entry).is_none());
                continue;
            }
            let source = crate::kernels::cuda_source(entry).expect("CUDA source");
            assert!(
                source.contains(&format!("extern \"C\" __global__ void {entry}(")),
                "{entry}"
            );
            let (bindings, words) = crate::kernels::cuda_parameters(entry).unwrap();
            let signature = source.split(&format!("void {entry}(")).nth(1).unwrap();
            let signature = &signature[..signature.find(')').unwrap()];
            assert_eq!(signature.matches('*').count(), bindings, "{entry}");
            assert_eq!(
                signature.matches(',').count() + 1,
                bindings + words,
                "{entry}"
            );
        }
    }
}
