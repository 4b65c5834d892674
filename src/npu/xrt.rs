//! The XRT NPU backend (feature `xrt`): the runtime's NPU path over XRT's C++ API, through the
//! project's shim ([`super::raw`]).
//!
//! - **Device.** [`XrtDevice::open`] asks XRT to enumerate devices first: with none (or with
//!   XRT unable to look, e.g. `XILINX_XRT` unset or the driver's `libxrt_core` missing) it
//!   answers [`Error::Unsupported`] naming XRT and what it said; it never crashes.
//! - **Programs and kernels.** On XRT an [`crate::kernels::NpuKernelSpec`]'s `instructions`
//!   are an xclbin image: it is parsed (`xrt::xclbin`), loaded (`device.load_xclbin`) into a
//!   hardware context where the XRT version has `xrt::hw_context` (2.14 and newer; Debian's
//!   2.13 loads onto the device), and the kernel opened by name. Each argument's memory-bank
//!   group comes from `kernel.group_id(arg)`; a spec naming other groups is refused. The
//!   built-in NPU kernel ships no xclbin, so loading it here is [`Error::Unsupported`].
//! - **Buffers.** An NPU-shared buffer's host memory is imported as a BO
//!   (`xrt::bo(device, ptr, len, flags::normal, group)`; XRT needs 4 KiB-aligned host memory);
//!   a view that is not the whole buffer becomes a sub-BO (`xrt::bo(parent, len, offset)`).
//!   Visibility is `bo.sync(XCL_BO_SYNC_BO_TO_DEVICE / FROM_DEVICE)`, called by the runtime's
//!   visibility tracking.
//! - **Runs.** Prepared once per NPU region at `prepare()` (`xrt::run(kernel)`, then
//!   `set_arg`: one BO per binding, in order, then one 32-bit scalar per constant word, the GPU
//!   backends' parameter ABI) and executed per submission (`run.start(); run.wait()`).
//! - **Errors.** [`map_error`] is the one function from a shim failure to an [`Error`]: a
//!   failed or abnormal run is a device loss ([`crate::DeviceError::Lost`], or [`Error::DeviceLost`]
//!   for an abnormal end state: what it wrote is unknown), "no device" is [`Error::Unsupported`],
//!   every other exception a [`crate::DeviceError`] naming the call.
//!
//! Verified here: built and linked against Debian's XRT 2.13, its no-device and exception
//! paths tested; not run on NPU hardware (AMD NPUs need a newer XRT with the xdna plugin).

use super::raw::{self, ErrorSlot, Status};
use crate::sync::lock;
use crate::{DeviceCall, DeviceError, Error, Result};
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, Weak};

/// A failed shim call: the call, the shim status and XRT's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct XrtError {
    /// The shim function, e.g. `hrx_xrt_bo_import`.
    pub call: &'static str,
    /// What it returned (`raw::EXCEPTION`, ...).
    pub status: Status,
    /// The `std::system_error` value, else 0.
    pub system_code: i32,
    /// XRT's message (`what()`).
    pub message: String,
}

/// Runs one shim call with a fresh error slot.
fn call(name: &'static str, body: impl FnOnce(*mut ErrorSlot) -> Status) -> Result<(), XrtError> {
    let mut slot = ErrorSlot::new();
    match body(&mut slot) {
        raw::OK => Ok(()),
        status => Err(XrtError {
            call: name,
            status,
            system_code: slot.system_code,
            message: slot.message(),
        }),
    }
}

/// The one decision from a shim failure to an [`Error`]: runs (`hrx_xrt_run_execute`) fail
/// with uncertain extent ([`DeviceError::Lost`]); no device is [`Error::Unsupported`] (with
/// how to get one); an invalid argument is [`DeviceError::InvalidArgument`]; the rest
/// [`DeviceError::Other`], each naming the call, the shim status and XRT's message.
pub(crate) fn map_error(error: XrtError) -> Error {
    let XrtError {
        call,
        status,
        system_code,
        message,
    } = error;
    let kind = match status {
        raw::FOREIGN => "non-standard exception",
        raw::INVALID => "invalid argument",
        raw::NO_DEVICE => "no device",
        raw::SYSTEM => "system error",
        _ => "exception",
    };
    if status == raw::NO_DEVICE {
        Error::Unsupported(format!(
            "XRT NPU: no device ({message}); the xrt backend needs an NPU with its XRT driver \
             (libxrt_coreutil.so.2); use HRX_NPU_BACKEND=sim for the NPU simulator"
        ))
    } else {
        let device_call = DeviceCall {
            backend: "XRT",
            call,
            code: i64::from(status),
            name: kind.to_string(),
            detail: if system_code != 0 {
                format!("error value {system_code}: {message}")
            } else {
                message
            },
        };
        if call == "hrx_xrt_run_execute" {
            DeviceError::Lost(device_call).into()
        } else if status == raw::INVALID {
            DeviceError::InvalidArgument(device_call).into()
        } else {
            DeviceError::Other(device_call).into()
        }
    }
}

/// The XRT version the shim was built against, as `(major, minor)`.
pub(crate) fn version() -> (u32, u32) {
    // SAFETY: no arguments; returns a constant.
    let code = unsafe { raw::hrx_xrt_version_code() } as u32;
    (code >> 16, code & 0xffff)
}

/// Whether the shim loads programs into an `xrt::hw_context`.
#[cfg_attr(not(test), allow(dead_code))] // Tests check it against the version.
pub(crate) fn has_hw_context() -> bool {
    // SAFETY: no arguments; returns a constant.
    unsafe { raw::hrx_xrt_has_hw_context() != 0 }
}

/// An opened XRT device.
pub(crate) struct XrtDevice {
    raw: *mut raw::Device,
    index: u32,
    name: String,
    /// Loaded kernels by name, for the runs prepared over this device's BOs.
    kernels: Mutex<HashMap<String, Weak<XrtKernel>>>,
}

// SAFETY: XRT device objects are thread-safe reference-counted handles; the shim's handle is
// only read after creation and freed once in `Drop`.
unsafe impl Send for XrtDevice {}
// SAFETY: as above.
unsafe impl Sync for XrtDevice {}

impl Drop for XrtDevice {
    fn drop(&mut self) {
        // SAFETY: created by hrx_xrt_device_open, freed once.
        unsafe { raw::hrx_xrt_device_free(self.raw) };
    }
}

impl std::fmt::Debug for XrtDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrtDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .finish()
    }
}

impl XrtDevice {
    /// Opens XRT device `index`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming XRT when it finds no such device or cannot enumerate
    /// devices at all (no driver, `XILINX_XRT` unset); a mapped error otherwise.
    pub(crate) fn open(index: u32) -> Result<Arc<Self>> {
        let (major, minor) = version();
        let no_device = |detail: String| {
            Error::Unsupported(format!(
                "XRT NPU: no device {index} ({detail}); the xrt backend needs an NPU and its \
                 XRT driver (hrx links libxrt_coreutil.so.2 of XRT {major}.{minor}); use \
                 HRX_NPU_BACKEND=sim for the NPU simulator"
            ))
        };
        let mut device = std::ptr::null_mut();
        // SAFETY: `device` receives a new handle on success; the slot outlives the call.
        call("hrx_xrt_device_open", |e| unsafe {
            raw::hrx_xrt_device_open(index, &mut device, e)
        })
        .map_err(|e| no_device(e.message))?;
        let mut opened = XrtDevice {
            raw: device,
            index,
            name: String::new(),
            kernels: Mutex::default(),
        };
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: a live handle; the shim writes at most `len` bytes, NUL-terminated.
        call("hrx_xrt_device_name", |e| unsafe {
            raw::hrx_xrt_device_name(opened.raw, name.as_mut_ptr(), name.len(), e)
        })
        .map_err(map_error)?;
        // SAFETY: NUL-terminated within the buffer.
        opened.name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok(Arc::new(opened))
    }

    /// Device name (`xrt::info::device::name`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Device index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Imports `len` bytes of host memory at `pointer` as a BO in memory-bank `group`.
    ///
    /// # Safety
    /// `pointer..pointer + len` is host memory that outlives the returned BO and every BO
    /// made from it (the runtime's buffer owns both).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when `pointer` is not 4 KiB-aligned (XRT's rule for user
    /// pointers) or null; a mapped XRT error otherwise.
    pub(crate) unsafe fn import(
        self: &Arc<Self>,
        pointer: *mut u8,
        len: usize,
        group: u32,
    ) -> Result<XrtBo> {
        if pointer.is_null() || !(pointer as usize).is_multiple_of(4096) {
            return Err(Error::Unsupported(format!(
                "XRT imports host memory at 4 KiB-aligned addresses only; this buffer's host \
                 memory is at {pointer:p}"
            )));
        }
        let mut bo = std::ptr::null_mut();
        // SAFETY: the caller keeps the memory alive; `bo` receives a new handle.
        call("hrx_xrt_bo_import", |e| unsafe {
            raw::hrx_xrt_bo_import(self.raw, pointer.cast(), len, group, &mut bo, e)
        })
        .map_err(map_error)?;
        XrtBo::wrap(bo, self.clone(), None, len)
    }

    /// Loads the xclbin image `xclbin` and opens kernel `name` with `arguments` arguments.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when `xclbin` is not an xclbin image; a mapped XRT error when
    /// loading it or opening the kernel fails.
    pub(crate) fn load_kernel(
        self: &Arc<Self>,
        name: &str,
        xclbin: &[u8],
        arguments: usize,
    ) -> Result<Arc<XrtKernel>> {
        if !xclbin.starts_with(b"xclbin2") {
            return Err(Error::Unsupported(format!(
                "NPU kernel {name}: on XRT its instructions must be an xclbin image (magic \
                 \"xclbin2\"); the built-in NPU kernels ship none"
            )));
        }
        let c_name = CString::new(name)
            .map_err(|_| Error::Message(format!("NPU kernel name {name:?} contains NUL")))?;
        let mut image = std::ptr::null_mut();
        // SAFETY: the shim copies `xclbin` during the call; `image` receives a new handle.
        call("hrx_xrt_xclbin_from_bytes", |e| unsafe {
            raw::hrx_xrt_xclbin_from_bytes(xclbin.as_ptr().cast(), xclbin.len(), &mut image, e)
        })
        .map_err(map_error)?;
        let mut program = std::ptr::null_mut();
        // SAFETY: live handles; `program` receives a new handle.
        let loaded = call("hrx_xrt_program_load", |e| unsafe {
            raw::hrx_xrt_program_load(self.raw, image, &mut program, e)
        });
        // SAFETY: created above, freed once; the program does not need it any more.
        unsafe { raw::hrx_xrt_xclbin_free(image) };
        loaded.map_err(map_error)?;
        let program = Program(program);
        let mut kernel = std::ptr::null_mut();
        // SAFETY: live handles; `kernel` receives a new handle.
        call("hrx_xrt_kernel_open", |e| unsafe {
            raw::hrx_xrt_kernel_open(program.0, c_name.as_ptr(), &mut kernel, e)
        })
        .map_err(map_error)?;
        let mut opened = XrtKernel {
            raw: kernel,
            _program: program,
            name: name.to_string(),
            groups: Vec::with_capacity(arguments),
        };
        for arg in 0..arguments {
            let mut group = 0;
            // SAFETY: a live kernel handle; writes one int.
            call("hrx_xrt_kernel_group_id", |e| unsafe {
                raw::hrx_xrt_kernel_group_id(opened.raw, arg as i32, &mut group, e)
            })
            .map_err(map_error)?;
            opened.groups.push(group as u32);
        }
        let opened = Arc::new(opened);
        lock(&self.kernels).insert(name.to_string(), Arc::downgrade(&opened));
        Ok(opened)
    }

    /// The live kernel last loaded under `name` on this device.
    fn kernel(&self, name: &str) -> Option<Arc<XrtKernel>> {
        lock(&self.kernels).get(name).and_then(Weak::upgrade)
    }
}

/// A loaded program (xclbin, hardware context where available).
struct Program(*mut raw::Program);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by hrx_xrt_program_load, freed once.
        unsafe { raw::hrx_xrt_program_free(self.0) };
    }
}

/// A kernel of a loaded program.
pub(crate) struct XrtKernel {
    raw: *mut raw::Kernel,
    /// Dropped after `raw` (fields drop in order): the program outlives its kernel.
    _program: Program,
    name: String,
    groups: Vec<u32>,
}

// SAFETY: XRT kernel objects are thread-safe handles; only read after creation.
unsafe impl Send for XrtKernel {}
// SAFETY: as above.
unsafe impl Sync for XrtKernel {}

impl Drop for XrtKernel {
    fn drop(&mut self) {
        // SAFETY: created by hrx_xrt_kernel_open, freed once, before its program.
        unsafe { raw::hrx_xrt_kernel_free(self.raw) };
    }
}

impl XrtKernel {
    /// Memory-bank group of each argument (`kernel.group_id`).
    pub(crate) fn groups(&self) -> &[u32] {
        &self.groups
    }
}

struct BoInner {
    raw: *mut raw::Bo,
    device: Arc<XrtDevice>,
    /// The parent of a sub-BO, kept alive as long as the sub-BO.
    _parent: Option<Arc<BoInner>>,
    len: usize,
    address: u64,
}

impl Drop for BoInner {
    fn drop(&mut self) {
        // SAFETY: created by the shim, freed once, before its parent.
        unsafe { raw::hrx_xrt_bo_free(self.raw) };
    }
}

/// An XRT buffer object: imported host memory, or a sub-BO of one.
#[derive(Clone)]
pub(crate) struct XrtBo {
    inner: Arc<BoInner>,
}

// SAFETY: XRT BOs are thread-safe handles, freed once in `Drop`; syncs and runs over them
// are ordered by the runtime's hazard tracking.
unsafe impl Send for BoInner {}
// SAFETY: as above.
unsafe impl Sync for BoInner {}

impl std::fmt::Debug for XrtBo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrtBo")
            .field("address", &self.inner.address)
            .field("len", &self.inner.len)
            .finish()
    }
}

impl XrtBo {
    fn wrap(
        raw_bo: *mut raw::Bo,
        device: Arc<XrtDevice>,
        parent: Option<Arc<BoInner>>,
        len: usize,
    ) -> Result<Self> {
        let mut inner = BoInner {
            raw: raw_bo,
            device,
            _parent: parent,
            len,
            address: 0,
        };
        let mut address = 0;
        // SAFETY: a live BO handle (owned by `inner` from here); writes one u64.
        call("hrx_xrt_bo_address", |e| unsafe {
            raw::hrx_xrt_bo_address(inner.raw, &mut address, e)
        })
        .map_err(map_error)?;
        inner.address = address;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Device address of the first byte.
    pub(crate) fn address(&self) -> u64 {
        self.inner.address
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.inner.len
    }

    /// A sub-BO of `len` bytes at `offset`.
    ///
    /// # Errors
    /// Out of the parent's range, or a mapped XRT error.
    pub(crate) fn sub(&self, len: usize, offset: usize) -> Result<XrtBo> {
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.inner.len)
        {
            return Err(Error::Message(format!(
                "sub-BO {offset}+{len} exceeds its parent of {} bytes",
                self.inner.len
            )));
        }
        let mut bo = std::ptr::null_mut();
        // SAFETY: a live parent handle; `bo` receives a new handle.
        call("hrx_xrt_bo_sub", |e| unsafe {
            raw::hrx_xrt_bo_sub(self.inner.raw, len, offset, &mut bo, e)
        })
        .map_err(map_error)?;
        XrtBo::wrap(bo, self.inner.device.clone(), Some(self.inner.clone()), len)
    }

    /// `bo.sync(XCL_BO_SYNC_BO_TO_DEVICE)` or `FROM_DEVICE`.
    ///
    /// # Errors
    /// A mapped XRT error.
    pub(crate) fn sync(&self, to_device: bool) -> Result<()> {
        // SAFETY: a live BO handle.
        call("hrx_xrt_bo_sync", |e| unsafe {
            raw::hrx_xrt_bo_sync(self.inner.raw, i32::from(to_device), e)
        })
        .map_err(map_error)
    }

    /// The device the BO lives on.
    pub(crate) fn device(&self) -> &Arc<XrtDevice> {
        &self.inner.device
    }
}

/// A run prepared once with its arguments, started per submission.
pub(crate) struct XrtRun {
    raw: *mut raw::Run,
    kernel: Arc<XrtKernel>,
    /// The BOs set as arguments, alive as long as the run.
    _arguments: Vec<XrtBo>,
}

// SAFETY: executed only through `&mut self`; XRT run objects may be used from any thread.
unsafe impl Send for XrtRun {}

impl Drop for XrtRun {
    fn drop(&mut self) {
        // SAFETY: created by hrx_xrt_run_create, freed once.
        unsafe { raw::hrx_xrt_run_free(self.raw) };
    }
}

impl XrtRun {
    /// Prepares a run of the kernel named `name` on the arguments' device: one BO per binding,
    /// then one 32-bit scalar per constant word.
    ///
    /// # Errors
    /// [`Error::Message`] when no kernel of that name is loaded on the device or the
    /// constants are not whole words; a mapped XRT error otherwise.
    pub(crate) fn prepare(name: &str, constants: &[u8], arguments: Vec<XrtBo>) -> Result<Self> {
        let device = arguments.first().map(XrtBo::device).ok_or_else(|| {
            Error::Unsupported(format!(
                "NPU kernel {name}: XRT runs need at least one buffer argument"
            ))
        })?;
        let kernel = device.kernel(name).ok_or_else(|| {
            Error::Message(format!(
                "NPU kernel {name} is not loaded on XRT device {}",
                device.index
            ))
        })?;
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "NPU kernel {name}: {} constant bytes are not whole 4-byte words",
                constants.len()
            )));
        }
        let mut run = std::ptr::null_mut();
        // SAFETY: a live kernel handle; `run` receives a new handle.
        call("hrx_xrt_run_create", |e| unsafe {
            raw::hrx_xrt_run_create(kernel.raw, &mut run, e)
        })
        .map_err(map_error)?;
        let prepared = XrtRun {
            raw: run,
            kernel,
            _arguments: arguments,
        };
        for (index, bo) in prepared._arguments.iter().enumerate() {
            // SAFETY: live handles; the run keeps the BO alive.
            call("hrx_xrt_run_set_bo", |e| unsafe {
                raw::hrx_xrt_run_set_bo(prepared.raw, index as i32, bo.inner.raw, e)
            })
            .map_err(map_error)?;
        }
        for (offset, word) in constants.chunks_exact(4).enumerate() {
            let value = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            let index = (prepared._arguments.len() + offset) as i32;
            // SAFETY: a live run handle.
            call("hrx_xrt_run_set_u32", |e| unsafe {
                raw::hrx_xrt_run_set_u32(prepared.raw, index, value, e)
            })
            .map_err(map_error)?;
        }
        Ok(prepared)
    }

    /// Starts the run and waits for it.
    ///
    /// # Errors
    /// [`Error::DeviceLost`] when XRT throws or the run ends in any state but completed.
    pub(crate) fn execute(&mut self) -> Result<()> {
        let mut state = 0;
        // SAFETY: a live run handle; writes one int.
        call("hrx_xrt_run_execute", |e| unsafe {
            raw::hrx_xrt_run_execute(self.raw, 0, &mut state, e)
        })
        .map_err(map_error)?;
        if state != raw::ERT_CMD_STATE_COMPLETED {
            return Err(Error::DeviceLost(format!(
                "XRT run of NPU kernel {} ended in ERT command state {state}, not completed",
                self.kernel.name
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throw(kind: i32) -> Result<(), XrtError> {
        // SAFETY: the test entry takes only the slot.
        call("hrx_xrt_test_throw", |e| unsafe {
            raw::hrx_xrt_test_throw(kind, e)
        })
    }

    #[test]
    fn the_shim_catches_every_exception_and_returns_its_message() {
        assert_eq!(throw(0), Ok(()));
        let runtime = throw(1).unwrap_err();
        assert_eq!(runtime.status, raw::EXCEPTION);
        assert_eq!(runtime.message, "hrx shim test: std::runtime_error");
        let system = throw(2).unwrap_err();
        assert_eq!(system.status, raw::SYSTEM);
        assert_eq!(system.system_code, 19, "ENODEV");
        assert!(
            system
                .message
                .starts_with("hrx shim test: std::system_error")
        );
        let foreign = throw(3).unwrap_err();
        assert_eq!(foreign.status, raw::FOREIGN);
        assert!(
            foreign.message.contains("non-standard"),
            "{}",
            foreign.message
        );
        let oom = throw(4).unwrap_err();
        assert_eq!(oom.status, raw::EXCEPTION);
        assert!(oom.message.contains("bad_alloc"), "{}", oom.message);
        let mapped = map_error(system);
        assert!(
            matches!(&mapped, Error::Device(DeviceError::Other(c)) if c.call == "hrx_xrt_test_throw")
                && mapped.to_string().contains("error value 19"),
            "{mapped}"
        );
    }

    #[test]
    fn a_missing_xclbin_file_is_an_error_with_xrts_message() {
        let path = CString::new("/nonexistent/hrx-test.xclbin").unwrap();
        let mut image = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; `image` receives a handle only on success.
        let error = call("hrx_xrt_xclbin_from_file", |e| unsafe {
            raw::hrx_xrt_xclbin_from_file(path.as_ptr(), &mut image, e)
        })
        .unwrap_err();
        assert!(image.is_null());
        assert_eq!(error.status, raw::EXCEPTION);
        assert!(
            error.message.contains("/nonexistent/hrx-test.xclbin"),
            "{}",
            error.message
        );
    }

    #[test]
    fn null_handles_are_refused_by_the_shim() {
        let mut address = 0;
        // SAFETY: the shim checks for null before touching anything.
        let error = call("hrx_xrt_bo_address", |e| unsafe {
            raw::hrx_xrt_bo_address(std::ptr::null(), &mut address, e)
        })
        .unwrap_err();
        assert_eq!(error.status, raw::INVALID);
    }

    #[test]
    fn version_is_the_headers_and_hw_context_follows_it() {
        let (major, minor) = version();
        assert!(major >= 2, "{major}.{minor}");
        if (major, minor) < (2, 14) {
            assert!(
                !has_hw_context(),
                "XRT {major}.{minor} has no xrt::hw_context"
            );
        }
    }

    #[test]
    fn without_a_device_open_is_unsupported_and_names_xrt() {
        match XrtDevice::open(0) {
            Ok(device) => eprintln!("skipped: XRT device {} is present", device.name()),
            Err(error) => {
                assert!(
                    matches!(&error, Error::Unsupported(m) if m.contains("XRT NPU: no device 0") && m.contains("libxrt_coreutil")),
                    "{error}"
                );
            }
        }
    }
}
