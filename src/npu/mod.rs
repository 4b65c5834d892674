//! NPU programs, kernels and buffer objects.
//!
//! The model follows XRT: a device loads a program (an xclbin) into a hardware context; a
//! kernel's arguments each live in a memory-bank group (`kernel.group_id(arg)`); buffers
//! are buffer objects (BOs) allocated in a group, host-only or imported from host memory,
//! with sub-BOs for views; a run is prepared once with its arguments and started per
//! submission; `bo.sync` makes host writes visible to the NPU and NPU writes to the host.
//!
//! [`sim`] is the NPU simulator (always built): BOs are the buffer's host memory, runs call
//! the kernel's host implementation, and syncs only count. `xrt` (feature `xrt`, off by
//! default) drives a real device through XRT's C++ API and the project's shim (`raw`).
//! [`Bo`] and [`PreparedRun`] dispatch to the backend the runtime's NPU was opened with, so
//! the graph (contract, device and memory-bank checks, prepared runs) and the buffers'
//! visibility tracking are the same code on both.
//!
//! Backend selection ([`NpuBackendChoice`], `RuntimeOptions::npu_backend`, `HRX_NPU_BACKEND`):
//! `auto` opens XRT device 0 when this build has XRT and XRT finds a device, else the
//! simulator (with `HRX_VERBOSE=1` it says why); `xrt` without a device is
//! [`crate::Error::Unsupported`] naming XRT, never a crash.

#[cfg(feature = "xrt")]
pub(crate) mod raw;
pub(crate) mod sim;
#[cfg(feature = "xrt")]
pub(crate) mod xrt;

use crate::kernels::{HostKernelFn, NpuKernelSpec};
use crate::{Error, Result};
use std::str::FromStr;
use std::sync::Arc;

/// Which NPU backend a runtime uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NpuBackendChoice {
    /// `HRX_NPU_BACKEND` if set, else XRT when this build has it (feature `xrt`) and XRT
    /// finds device 0, else the simulator (also the simulator when a fault is injected).
    #[default]
    Auto,
    /// The NPU simulator.
    Sim,
    /// An NPU through XRT (feature `xrt`): without a device, `Runtime::new` answers
    /// [`Error::Unsupported`] naming XRT.
    Xrt,
}

impl NpuBackendChoice {
    /// The names [`FromStr`] takes, as its errors list them.
    const NAMES: &str = "auto, sim or xrt";

    /// The NPU backend an environment variable's `text` names, refused in the shape of
    /// every bad variable (`HRX_NPU_BACKEND: expected ..., got "x"`).
    ///
    /// # Errors
    ///
    /// [`Error::Message`] naming `variable` for a name no NPU backend has.
    pub fn from_variable(variable: &str, text: &str) -> Result<Self> {
        Self::named(text).ok_or_else(|| {
            Error::Message(format!(
                "{variable}: expected {}, got {text:?}",
                Self::NAMES
            ))
        })
    }

    /// The NPU backend `text` names; `None` for a name none has.
    fn named(text: &str) -> Option<Self> {
        Some(match text.to_ascii_lowercase().as_str() {
            "auto" | "" => NpuBackendChoice::Auto,
            "sim" | "software" => NpuBackendChoice::Sim,
            "xrt" => NpuBackendChoice::Xrt,
            _ => return None,
        })
    }
}

impl FromStr for NpuBackendChoice {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        Self::named(text).ok_or_else(|| {
            Error::Message(format!(
                "unknown NPU backend {:?} (expected {})",
                text.to_ascii_lowercase(),
                Self::NAMES
            ))
        })
    }
}

/// What the runtime's NPU says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpuInfo {
    /// Backend name (`sim`, `xrt`).
    pub backend: &'static str,
    /// Device name.
    pub name: String,
    /// Device index.
    pub index: u32,
}

/// The NPU a runtime opened.
#[derive(Clone)]
pub(crate) enum NpuDevice {
    /// The NPU simulator.
    Sim,
    /// An XRT device.
    #[cfg(feature = "xrt")]
    Xrt(Arc<xrt::XrtDevice>),
}

/// Why `auto` last chose the simulator although this build has XRT.
#[cfg(feature = "xrt")]
static FALLBACK_NOTE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Why `auto` last chose the NPU simulator over XRT, if it did.
#[cfg(feature = "xrt")]
#[allow(dead_code)] // Read by tests; kept for a `Runtime` accessor like CUDA's.
pub(crate) fn fallback_note() -> Option<String> {
    crate::sync::lock(&FALLBACK_NOTE).clone()
}

/// Opens the NPU `choice` asks for (device 0); `fault`: a fault is injected (simulator only).
///
/// # Errors
/// [`Error::Unsupported`] when `xrt` is chosen and this build lacks it, XRT finds no device,
/// or a fault is injected.
pub(crate) fn open(choice: NpuBackendChoice, fault: bool) -> Result<NpuDevice> {
    match choice {
        NpuBackendChoice::Sim => Ok(NpuDevice::Sim),
        NpuBackendChoice::Auto => {
            #[cfg(feature = "xrt")]
            {
                let opened = if fault {
                    Err(Error::Unsupported(
                        "a fault is injected, which only the NPU simulator supports".into(),
                    ))
                } else {
                    xrt::XrtDevice::open(0)
                };
                match opened {
                    Ok(device) => return Ok(NpuDevice::Xrt(device)),
                    Err(error) => {
                        if crate::switch::verbose() {
                            crate::error::to_stderr(format_args!(
                                "hrx: using the NPU simulator: {error}"
                            ));
                        }
                        *crate::sync::lock(&FALLBACK_NOTE) = Some(error.to_string());
                    }
                }
            }
            let _ = fault;
            Ok(NpuDevice::Sim)
        }
        #[cfg(feature = "xrt")]
        NpuBackendChoice::Xrt => {
            if fault {
                return Err(Error::Unsupported(
                    "fault injection works on the NPU simulator only; use HRX_NPU_BACKEND=sim"
                        .into(),
                ));
            }
            Ok(NpuDevice::Xrt(xrt::XrtDevice::open(0)?))
        }
        #[cfg(not(feature = "xrt"))]
        NpuBackendChoice::Xrt => Err(Error::Unsupported(
            "the XRT NPU backend is not built into this hrx (rebuild with --features xrt; it \
             links libxrt_coreutil from XRT, Debian package libxrt-dev); use \
             HRX_NPU_BACKEND=sim"
                .into(),
        )),
    }
}

impl NpuDevice {
    /// Name, backend and index.
    pub(crate) fn info(&self) -> NpuInfo {
        match self {
            NpuDevice::Sim => NpuInfo {
                backend: "sim",
                name: "hrx NPU simulator".into(),
                index: 0,
            },
            #[cfg(feature = "xrt")]
            NpuDevice::Xrt(device) => NpuInfo {
                backend: "xrt",
                name: device.name().to_string(),
                index: device.index(),
            },
        }
    }

    /// Imports `len` bytes of host memory at `pointer` (device-visible at `address` on the
    /// simulator) as a BO in memory-bank `group`.
    ///
    /// # Safety
    /// `pointer..pointer + len` is host memory that outlives the BO and every sub-BO of it.
    ///
    /// # Errors
    /// XRT's refusal (unaligned memory, no such bank, ...); never on the simulator.
    pub(crate) unsafe fn import(
        &self,
        pointer: *mut u8,
        len: usize,
        address: u64,
        group: u32,
    ) -> Result<Bo> {
        match self {
            NpuDevice::Sim => {
                let _ = group;
                Ok(Bo::Sim(sim::Bo::import(pointer, len, address)))
            }
            #[cfg(feature = "xrt")]
            // SAFETY: the caller's obligation, passed on.
            NpuDevice::Xrt(device) => Ok(Bo::Xrt(unsafe { device.import(pointer, len, group) }?)),
        }
    }
}

/// A buffer object of the runtime's NPU backend.
#[derive(Clone, Debug)]
pub(crate) enum Bo {
    /// The simulator's: host memory.
    Sim(sim::Bo),
    /// An XRT BO.
    #[cfg(feature = "xrt")]
    Xrt(xrt::XrtBo),
}

impl Bo {
    /// Device address of the first byte.
    pub fn address(&self) -> std::result::Result<u64, String> {
        match self {
            Bo::Sim(bo) => bo.address(),
            #[cfg(feature = "xrt")]
            Bo::Xrt(bo) => Ok(bo.address()),
        }
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Bo::Sim(bo) => bo.len(),
            #[cfg(feature = "xrt")]
            Bo::Xrt(bo) => bo.len(),
        }
    }
    /// A sub-BO of `len` bytes at `offset` (XRT: `xrt::bo(parent, size, offset)`).
    pub fn sub(&self, len: usize, offset: usize) -> std::result::Result<Bo, String> {
        match self {
            Bo::Sim(bo) => bo.sub(len, offset).map(Bo::Sim),
            #[cfg(feature = "xrt")]
            Bo::Xrt(bo) => bo.sub(len, offset).map(Bo::Xrt).map_err(|e| e.to_string()),
        }
    }
    /// Makes host writes visible to the NPU (`XCL_BO_SYNC_BO_TO_DEVICE`).
    pub fn sync_to_device(&self) -> Result<()> {
        match self {
            Bo::Sim(bo) => bo.sync_to_device(),
            #[cfg(feature = "xrt")]
            Bo::Xrt(bo) => bo.sync(true),
        }
    }
    /// Makes NPU writes visible to the host (`XCL_BO_SYNC_BO_FROM_DEVICE`).
    pub fn sync_from_device(&self) -> Result<()> {
        match self {
            Bo::Sim(bo) => bo.sync_from_device(),
            #[cfg(feature = "xrt")]
            Bo::Xrt(bo) => bo.sync(false),
        }
    }
}

/// A run prepared once with fixed arguments, executed per submission.
pub(crate) enum PreparedRun {
    /// On the simulator.
    Sim(sim::PreparedRun),
    /// On XRT.
    #[cfg(feature = "xrt")]
    Xrt(xrt::XrtRun),
}

impl PreparedRun {
    /// Prepares a run of `name` with `arguments` (XRT: `xrt::run(kernel)` + `set_arg`, for
    /// the kernel of that name loaded on the arguments' device), once, at `prepare()`.
    ///
    /// # Errors
    /// XRT's failure to prepare the run, or arguments that mix XRT and simulator buffers:
    /// `prepare()` fails with it, as the seed's does when its `PreparedRun::new` fails.
    #[cfg_attr(not(feature = "xrt"), allow(clippy::unnecessary_wraps))]
    pub fn new(
        name: &str,
        host: HostKernelFn,
        constants: &[u8],
        arguments: Vec<Bo>,
        faults: Arc<crate::fault::FaultInjector>,
    ) -> Result<Self> {
        #[cfg(feature = "xrt")]
        if arguments.iter().any(|bo| matches!(bo, Bo::Xrt(_))) {
            let bos: Option<Vec<xrt::XrtBo>> = arguments
                .into_iter()
                .map(|bo| match bo {
                    Bo::Xrt(bo) => Some(bo),
                    Bo::Sim(_) => None,
                })
                .collect();
            let Some(bos) = bos else {
                return Err(Error::Message(format!(
                    "NPU kernel {name}: its arguments mix XRT and simulator buffers"
                )));
            };
            return xrt::XrtRun::prepare(name, constants, bos).map(PreparedRun::Xrt);
        }
        #[cfg(feature = "xrt")]
        let arguments = arguments
            .into_iter()
            .filter_map(|bo| match bo {
                Bo::Sim(bo) => Some(bo),
                Bo::Xrt(_) => None,
            })
            .collect();
        #[cfg(not(feature = "xrt"))]
        let arguments = arguments.into_iter().map(|Bo::Sim(bo)| bo).collect();
        Ok(PreparedRun::Sim(sim::PreparedRun::new(
            name, host, constants, arguments, faults,
        )))
    }

    /// Starts the run and waits for it (XRT: `run.start(); run.wait()`).
    pub fn execute(&mut self) -> Result<()> {
        match self {
            PreparedRun::Sim(run) => run.execute(),
            #[cfg(feature = "xrt")]
            PreparedRun::Xrt(run) => run.execute(),
        }
    }
}

/// The memory bank of an argument group. On the simulator each group is its own bank.
pub(crate) fn memory_bank(group: u32) -> u32 {
    group
}

/// The host implementation of a kernel that runs on XRT (never called: XRT runs execute).
#[cfg(feature = "xrt")]
fn runs_on_xrt(_: &crate::kernels::HostLaunch<'_>) -> std::result::Result<(), String> {
    Err("this NPU kernel runs on XRT, not on the simulator".into())
}

/// What the NPU backend made of a kernel spec: how a run executes and the argument groups.
pub(crate) struct LoadedNpuKernel {
    /// The host implementation (the simulator's), or a stub for XRT kernels.
    pub host: HostKernelFn,
    /// The memory-bank group of each argument.
    pub groups: Vec<u32>,
    /// The XRT kernel, kept alive for the runs prepared from it (they find it by name).
    #[cfg(feature = "xrt")]
    pub xrt: Option<Arc<xrt::XrtKernel>>,
}

impl NpuDevice {
    /// Loads `spec` on this device: the simulator takes its host implementation, XRT loads
    /// the instructions and reports the argument groups.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a kernel without a simulator implementation or without
    /// buffer arguments on XRT; [`Error::Message`] when the groups disagree with the
    /// contract or with XRT's; XRT's errors.
    pub(crate) fn load_kernel(&self, spec: &NpuKernelSpec) -> Result<LoadedNpuKernel> {
        #[cfg(feature = "xrt")]
        let mut xrt_kernel = None;
        #[cfg_attr(not(feature = "xrt"), allow(unused_mut))]
        let mut groups = spec.groups.clone();
        let host = match self {
            NpuDevice::Sim => spec.host.ok_or_else(|| {
                crate::Error::Unsupported(format!(
                    "NPU kernel {} has no implementation for the NPU simulator",
                    spec.name
                ))
            })?,
            #[cfg(feature = "xrt")]
            NpuDevice::Xrt(device) => {
                if spec.contract.bindings.is_empty() {
                    return Err(Error::Unsupported(format!(
                        "NPU kernel {}: XRT runs need at least one buffer argument",
                        spec.name
                    )));
                }
                let kernel = device.load_kernel(
                    &spec.name,
                    &spec.instructions,
                    spec.contract.bindings.len(),
                )?;
                // The memory banks are the device's: a spec naming others is refused.
                if !spec.groups.is_empty() && spec.groups != kernel.groups() {
                    return Err(Error::Message(format!(
                        "NPU kernel {} names argument groups {:?}; XRT reports {:?}",
                        spec.name,
                        spec.groups,
                        kernel.groups()
                    )));
                }
                groups = kernel.groups().to_vec();
                xrt_kernel = Some(kernel);
                runs_on_xrt
            }
        };
        if groups.len() != spec.contract.bindings.len() {
            return Err(crate::Error::Message(format!(
                "NPU kernel {} names {} argument groups for {} bindings",
                spec.name,
                groups.len(),
                spec.contract.bindings.len()
            )));
        }
        Ok(LoadedNpuKernel {
            host,
            groups,
            #[cfg(feature = "xrt")]
            xrt: xrt_kernel,
        })
    }
}
