//! The project's own bindings to its XRT shim (`src/npu/shim/xrt_shim.cpp`, built by
//! `build.rs` with the `xrt` feature).
//!
//! No usable `xrt-sys` crate exists (the `xrt` crate is AGPL), and XRT's API is C++, so a
//! small C++ shim exposes `extern "C"` functions over `xrt::device`, `xrt::xclbin`,
//! `xrt::hw_context` (XRT 2.14 and newer), `xrt::kernel`, `xrt::bo` and `xrt::run`. XRT reports
//! errors by throwing; a C++ exception crossing into Rust aborts, so every shim entry point
//! catches everything (`catch (...)` last) and returns a [`Status`] code with the message in
//! an [`ErrorSlot`]. Handles are opaque heap objects owned by the Rust side and freed once
//! with their `*_free` function (which accepts null).
//!
//! XRT reference: <https://xilinx.github.io/XRT/master/html/xrt_native_apis.html>.

// The shim's whole API is declared; the backend does not call every entry (the test entry,
// the device count, file xclbins and host-only BOs serve tests and future callers).
#![allow(dead_code)]

use std::ffi::{c_char, c_void};

/// A shim status: 0 success, else one of the `HRX_XRT_*` codes below.
pub type Status = i32;
/// Success.
pub const OK: Status = 0;
/// A `std::exception` was thrown (the message is its `what()`).
pub const EXCEPTION: Status = 1;
/// Something that is not a `std::exception` was thrown (caught by `catch (...)`).
pub const FOREIGN: Status = 2;
/// A null handle or argument, refused before calling XRT.
pub const INVALID: Status = 3;
/// XRT enumerates no device at the requested index.
pub const NO_DEVICE: Status = 4;
/// A `std::system_error` (its error value is in [`ErrorSlot::system_code`]).
pub const SYSTEM: Status = 5;

/// `ERT_CMD_STATE_COMPLETED` (XRT's `ert.h`): the state of a run that finished normally.
pub const ERT_CMD_STATE_COMPLETED: i32 = 4;

/// Where a failing shim call writes its message (`struct hrx_xrt_error`).
#[repr(C)]
pub struct ErrorSlot {
    /// The `std::system_error`'s value, else 0.
    pub system_code: i32,
    /// NUL-terminated message.
    pub message: [c_char; 1024],
}

impl ErrorSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self {
            system_code: 0,
            message: [0; 1024],
        }
    }

    /// The message, up to its NUL (lossy UTF-8).
    pub fn message(&self) -> String {
        let bytes: Vec<u8> = self
            .message
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

macro_rules! opaque {
    ($($name:ident),*) => {$(
        /// An opaque shim handle.
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(Device, Xclbin, Program, Kernel, Bo, Run);

// SAFETY (for every declaration below): each matches its definition in xrt_shim.cpp (C
// linkage, `int32_t` status, pointers to the opaque structs above, `hrx_xrt_error*` as
// `*mut ErrorSlot`); none unwinds, since each body is wrapped in a catch-everything guard.
unsafe extern "C" {
    /// `XRT_VERSION_CODE` the shim was compiled against (`major << 16 | minor`).
    pub fn hrx_xrt_version_code() -> i32;
    /// 1 when the shim uses `xrt::hw_context` (XRT 2.14+ headers), else 0.
    pub fn hrx_xrt_has_hw_context() -> i32;
    /// Throws an exception of `kind` (1 runtime_error, 2 system_error, 3 a non-std type,
    /// 4 bad_alloc; 0 none) inside the shim's guard: tests the catching.
    pub fn hrx_xrt_test_throw(kind: i32, error: *mut ErrorSlot) -> Status;
    /// `xrt::system::enumerate_devices()`.
    pub fn hrx_xrt_device_count(count: *mut u32, error: *mut ErrorSlot) -> Status;
    /// `xrt::device(index)`, or [`NO_DEVICE`] when the index is not enumerated.
    pub fn hrx_xrt_device_open(index: u32, out: *mut *mut Device, error: *mut ErrorSlot) -> Status;
    /// `device.get_info<xrt::info::device::name>()` into `name` (NUL-terminated, truncated).
    pub fn hrx_xrt_device_name(
        device: *const Device,
        name: *mut c_char,
        len: usize,
        error: *mut ErrorSlot,
    ) -> Status;
    /// Frees a device handle (null is ignored).
    pub fn hrx_xrt_device_free(device: *mut Device);
    /// `xrt::xclbin(path)`: reads and parses an xclbin file.
    pub fn hrx_xrt_xclbin_from_file(
        path: *const c_char,
        out: *mut *mut Xclbin,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `xrt::xclbin(std::vector<char>)`: parses an xclbin image (copied).
    pub fn hrx_xrt_xclbin_from_bytes(
        data: *const c_char,
        len: usize,
        out: *mut *mut Xclbin,
        error: *mut ErrorSlot,
    ) -> Status;
    /// Frees an xclbin handle (null is ignored).
    pub fn hrx_xrt_xclbin_free(xclbin: *mut Xclbin);
    /// `device.load_xclbin(xclbin)`, then `xrt::hw_context(device, uuid)` where available.
    pub fn hrx_xrt_program_load(
        device: *const Device,
        xclbin: *const Xclbin,
        out: *mut *mut Program,
        error: *mut ErrorSlot,
    ) -> Status;
    /// Frees a program handle (null is ignored).
    pub fn hrx_xrt_program_free(program: *mut Program);
    /// `xrt::kernel(hw_context, name)` (or `(device, uuid, name)` before hw_context).
    pub fn hrx_xrt_kernel_open(
        program: *const Program,
        name: *const c_char,
        out: *mut *mut Kernel,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `kernel.group_id(arg)`: the memory-bank group of argument `arg`.
    pub fn hrx_xrt_kernel_group_id(
        kernel: *const Kernel,
        arg: i32,
        group: *mut i32,
        error: *mut ErrorSlot,
    ) -> Status;
    /// Frees a kernel handle (null is ignored).
    pub fn hrx_xrt_kernel_free(kernel: *mut Kernel);
    /// `xrt::bo(device, host, len, xrt::bo::flags::normal, group)`: imports host memory.
    pub fn hrx_xrt_bo_import(
        device: *const Device,
        host: *mut c_void,
        len: usize,
        group: u32,
        out: *mut *mut Bo,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `xrt::bo(device, len, xrt::bo::flags::host_only, group)` and its `map()`.
    pub fn hrx_xrt_bo_alloc_host_only(
        device: *const Device,
        len: usize,
        group: u32,
        out: *mut *mut Bo,
        host: *mut *mut c_void,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `xrt::bo(parent, len, offset)`: a sub-BO.
    pub fn hrx_xrt_bo_sub(
        parent: *const Bo,
        len: usize,
        offset: usize,
        out: *mut *mut Bo,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `bo.address()`: the device address of its first byte.
    pub fn hrx_xrt_bo_address(bo: *const Bo, address: *mut u64, error: *mut ErrorSlot) -> Status;
    /// `bo.sync(XCL_BO_SYNC_BO_TO_DEVICE)` when `to_device` is non-zero, else `FROM_DEVICE`.
    pub fn hrx_xrt_bo_sync(bo: *mut Bo, to_device: i32, error: *mut ErrorSlot) -> Status;
    /// Frees a BO handle (null is ignored); XRT keeps a parent alive while sub-BOs live.
    pub fn hrx_xrt_bo_free(bo: *mut Bo);
    /// `xrt::run(kernel)`.
    pub fn hrx_xrt_run_create(
        kernel: *const Kernel,
        out: *mut *mut Run,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `run.set_arg(index, bo)`.
    pub fn hrx_xrt_run_set_bo(
        run: *mut Run,
        index: i32,
        bo: *const Bo,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `run.set_arg(index, value)` for a 32-bit scalar.
    pub fn hrx_xrt_run_set_u32(
        run: *mut Run,
        index: i32,
        value: u32,
        error: *mut ErrorSlot,
    ) -> Status;
    /// `run.start(); state = run.wait(timeout_ms)` (0: no timeout).
    pub fn hrx_xrt_run_execute(
        run: *mut Run,
        timeout_ms: u32,
        state: *mut i32,
        error: *mut ErrorSlot,
    ) -> Status;
    /// Frees a run handle (null is ignored).
    pub fn hrx_xrt_run_free(run: *mut Run);
}
