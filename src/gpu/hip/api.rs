//! Checked wrappers over the HIP runtime and hipRTC, one per call, each returning
//! [`HipResult`]. Reference: the HIP runtime API
//! (<https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/modules.html>).
//!
//! # Why the calls are declared here, with an `i32` result
//!
//! hip-runtime-sys 0.1.2 declares every function as returning its Rust enum `hipError_t`
//! (generated from the HIP 5.4 headers). A foreign function that returns a value with no
//! variant in that enum (Debian ships HIP 5.2; a newer ROCm returns codes added after 5.4) is
//! undefined behaviour in Rust the moment the value exists, before any `match` can look at
//! it. So the backend declares the few functions it calls itself, with the C ABI's real
//! result type, a 32-bit `int` (`hipError_t` is a C enum with values within `int`; the same
//! symbol, the same calling convention), and converts the integer through
//! [`super::codes::known`], a table lookup. The bindings still provide the types (handles,
//! `hipKernelNodeParams`, `hipMemsetParams`, `hipMemcpyKind` as an argument, where every value
//! the backend passes is a valid variant) and link libamdhip64. hipRTC (in libamdhip64 for HIP
//! 5.x) has no bindings there and is declared the same way.

use hip_runtime_sys::{
    hipDevice_t, hipEvent_t, hipFunction_t, hipGraph_t, hipGraphExec_t, hipGraphNode_t,
    hipKernelNodeParams, hipMemcpyKind, hipMemsetParams, hipModule_t, hipStream_t,
};
use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};
use std::ptr::null_mut;

/// A failed HIP call: its name and raw result code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HipError {
    /// The function, e.g. `hipMalloc`.
    pub call: &'static str,
    /// What it returned, unconverted.
    pub code: i32,
}

/// One HIP call's result.
pub(crate) type HipResult<T> = std::result::Result<T, HipError>;

/// `hipSuccess`.
const SUCCESS: i32 = 0;

fn check(call: &'static str, code: i32) -> HipResult<()> {
    match code {
        SUCCESS => Ok(()),
        code => Err(HipError { call, code }),
    }
}

/// An opaque hipRTC program.
type RtcProgram = *mut c_void;

#[link(name = "amdhip64")]
unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> i32;
    fn hipSetDevice(ordinal: c_int) -> i32;
    fn hipDeviceGet(device: *mut hipDevice_t, ordinal: c_int) -> i32;
    fn hipDeviceGetName(name: *mut c_char, len: c_int, device: hipDevice_t) -> i32;
    fn hipDeviceTotalMem(bytes: *mut usize, device: hipDevice_t) -> i32;
    fn hipRuntimeGetVersion(version: *mut c_int) -> i32;
    fn hipDeviceSynchronize() -> i32;
    fn hipMalloc(pointer: *mut *mut c_void, len: usize) -> i32;
    fn hipFree(pointer: *mut c_void) -> i32;
    fn hipHostMalloc(pointer: *mut *mut c_void, len: usize, flags: c_uint) -> i32;
    fn hipHostGetDevicePointer(device: *mut *mut c_void, host: *mut c_void, flags: c_uint) -> i32;
    fn hipHostFree(pointer: *mut c_void) -> i32;
    fn hipMemset(dst: *mut c_void, value: c_int, len: usize) -> i32;
    fn hipMemcpyHtoD(dst: *mut c_void, src: *mut c_void, len: usize) -> i32;
    fn hipMemcpyDtoH(dst: *mut c_void, src: *mut c_void, len: usize) -> i32;
    fn hipMemcpyAsync(
        dst: *mut c_void,
        src: *const c_void,
        len: usize,
        kind: hipMemcpyKind,
        stream: hipStream_t,
    ) -> i32;
    fn hipStreamCreateWithFlags(stream: *mut hipStream_t, flags: c_uint) -> i32;
    fn hipStreamDestroy(stream: hipStream_t) -> i32;
    fn hipStreamSynchronize(stream: hipStream_t) -> i32;
    fn hipEventCreate(event: *mut hipEvent_t) -> i32;
    fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> i32;
    fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, end: hipEvent_t) -> i32;
    fn hipEventDestroy(event: hipEvent_t) -> i32;
    fn hipGraphCreate(graph: *mut hipGraph_t, flags: c_uint) -> i32;
    fn hipGraphDestroy(graph: hipGraph_t) -> i32;
    fn hipGraphAddEmptyNode(
        node: *mut hipGraphNode_t,
        graph: hipGraph_t,
        deps: *const hipGraphNode_t,
        count: usize,
    ) -> i32;
    fn hipGraphAddMemsetNode(
        node: *mut hipGraphNode_t,
        graph: hipGraph_t,
        deps: *const hipGraphNode_t,
        count: usize,
        params: *const hipMemsetParams,
    ) -> i32;
    fn hipGraphAddMemcpyNode1D(
        node: *mut hipGraphNode_t,
        graph: hipGraph_t,
        deps: *const hipGraphNode_t,
        count: usize,
        dst: *mut c_void,
        src: *const c_void,
        len: usize,
        kind: hipMemcpyKind,
    ) -> i32;
    fn hipGraphAddKernelNode(
        node: *mut hipGraphNode_t,
        graph: hipGraph_t,
        deps: *const hipGraphNode_t,
        count: usize,
        params: *const hipKernelNodeParams,
    ) -> i32;
    fn hipGraphAddEventRecordNode(
        node: *mut hipGraphNode_t,
        graph: hipGraph_t,
        deps: *const hipGraphNode_t,
        count: usize,
        event: hipEvent_t,
    ) -> i32;
    fn hipGraphInstantiateWithFlags(
        exec: *mut hipGraphExec_t,
        graph: hipGraph_t,
        flags: c_ulonglong,
    ) -> i32;
    fn hipGraphExecDestroy(exec: hipGraphExec_t) -> i32;
    fn hipGraphLaunch(exec: hipGraphExec_t, stream: hipStream_t) -> i32;
    fn hipModuleLoadData(module: *mut hipModule_t, image: *const c_void) -> i32;
    fn hipModuleGetFunction(
        function: *mut hipFunction_t,
        module: hipModule_t,
        name: *const c_char,
    ) -> i32;
    fn hipModuleUnload(module: hipModule_t) -> i32;
    fn hiprtcCreateProgram(
        program: *mut RtcProgram,
        source: *const c_char,
        name: *const c_char,
        headers: c_int,
        header_sources: *const *const c_char,
        header_names: *const *const c_char,
    ) -> i32;
    fn hiprtcCompileProgram(
        program: RtcProgram,
        count: c_int,
        options: *const *const c_char,
    ) -> i32;
    fn hiprtcGetProgramLogSize(program: RtcProgram, len: *mut usize) -> i32;
    fn hiprtcGetProgramLog(program: RtcProgram, log: *mut c_char) -> i32;
    fn hiprtcGetCodeSize(program: RtcProgram, len: *mut usize) -> i32;
    fn hiprtcGetCode(program: RtcProgram, code: *mut c_char) -> i32;
    fn hiprtcDestroyProgram(program: *mut RtcProgram) -> i32;
}

/// [`hipGetDeviceCount`](https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/group___device.html):
/// `hipErrorNoDevice` (100) where no AMD GPU is usable.
pub fn device_count() -> HipResult<i32> {
    let mut count = 0;
    // SAFETY: writes one int.
    check("hipGetDeviceCount", unsafe {
        hipGetDeviceCount(&mut count)
    })?;
    Ok(count)
}

/// `hipSetDevice`: the calling thread's current device (HIP's state is per thread).
pub fn set_device(ordinal: i32) -> HipResult<()> {
    // SAFETY: no pointers.
    check("hipSetDevice", unsafe { hipSetDevice(ordinal) })
}

/// `hipDeviceGet`.
pub fn device(ordinal: i32) -> HipResult<hipDevice_t> {
    let mut device = 0;
    // SAFETY: writes one handle.
    check("hipDeviceGet", unsafe {
        hipDeviceGet(&mut device, ordinal)
    })?;
    Ok(device)
}

/// `hipDeviceGetName`.
pub fn device_name(device: hipDevice_t) -> HipResult<String> {
    let mut name = [0 as c_char; 256];
    // SAFETY: HIP writes at most `len` bytes, NUL-terminated.
    check("hipDeviceGetName", unsafe {
        hipDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device)
    })?;
    name[name.len() - 1] = 0;
    // SAFETY: NUL-terminated within the buffer.
    Ok(unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// `hipDeviceTotalMem` in bytes.
pub fn device_total_mem(device: hipDevice_t) -> HipResult<usize> {
    let mut bytes = 0;
    // SAFETY: writes one size.
    check("hipDeviceTotalMem", unsafe {
        hipDeviceTotalMem(&mut bytes, device)
    })?;
    Ok(bytes)
}

/// `hipRuntimeGetVersion` (HIP_VERSION: major * 10^7 + minor * 10^5 + patch).
pub fn runtime_version() -> HipResult<i32> {
    let mut version = 0;
    // SAFETY: writes one int.
    check("hipRuntimeGetVersion", unsafe {
        hipRuntimeGetVersion(&mut version)
    })?;
    Ok(version)
}

/// `hipDeviceSynchronize` (the current device).
pub fn device_synchronize() -> HipResult<()> {
    // SAFETY: no pointers.
    check("hipDeviceSynchronize", unsafe { hipDeviceSynchronize() })
}

/// `hipMalloc`.
pub fn malloc(len: usize) -> HipResult<*mut c_void> {
    let mut pointer = null_mut();
    // SAFETY: writes one pointer.
    check("hipMalloc", unsafe { hipMalloc(&mut pointer, len) })?;
    Ok(pointer)
}

/// `hipFree`.
///
/// # Safety
/// `pointer` came from [`malloc`], is freed once, and no pending work uses it.
pub unsafe fn free(pointer: *mut c_void) -> HipResult<()> {
    // SAFETY: the caller's obligations.
    check("hipFree", unsafe { hipFree(pointer) })
}

/// `hipHostMalloc(hipHostMallocMapped | hipHostMallocPortable)`: pinned host memory mapped
/// into the device address space.
pub fn host_malloc(len: usize) -> HipResult<*mut c_void> {
    let mut pointer = null_mut();
    let flags = hip_runtime_sys::hipHostMallocMapped | hip_runtime_sys::hipHostMallocPortable;
    // SAFETY: writes one pointer.
    check("hipHostMalloc", unsafe {
        hipHostMalloc(&mut pointer, len, flags)
    })?;
    Ok(pointer)
}

/// `hipHostGetDevicePointer`.
///
/// # Safety
/// `host` came from [`host_malloc`] and is live.
pub unsafe fn host_device_pointer(host: *mut c_void) -> HipResult<*mut c_void> {
    let mut device = null_mut();
    // SAFETY: the caller's obligations; writes one pointer.
    check("hipHostGetDevicePointer", unsafe {
        hipHostGetDevicePointer(&mut device, host, 0)
    })?;
    Ok(device)
}

/// `hipHostFree`.
///
/// # Safety
/// `host` came from [`host_malloc`], is freed once, and nothing uses it any more.
pub unsafe fn host_free(host: *mut c_void) -> HipResult<()> {
    // SAFETY: the caller's obligations.
    check("hipHostFree", unsafe { hipHostFree(host) })
}

/// `hipMemset` (on the null stream; may return before it completes).
///
/// # Safety
/// `dst..dst + len` is device memory owned by the caller.
pub unsafe fn memset(dst: *mut c_void, value: u8, len: usize) -> HipResult<()> {
    // SAFETY: the caller's obligations.
    check("hipMemset", unsafe {
        hipMemset(dst, c_int::from(value), len)
    })
}

/// `hipMemcpyHtoD` (synchronous with respect to the host for pageable memory).
///
/// # Safety
/// `dst..dst + data.len()` is device memory owned by the caller.
pub unsafe fn memcpy_htod(dst: *mut c_void, data: &[u8]) -> HipResult<()> {
    // SAFETY: the caller's obligations; HIP only reads `data`.
    check("hipMemcpyHtoD", unsafe {
        hipMemcpyHtoD(dst, data.as_ptr().cast_mut().cast(), data.len())
    })
}

/// `hipMemcpyDtoH` (synchronous).
///
/// # Safety
/// `src..src + out.len()` is device memory that nothing writes meanwhile.
pub unsafe fn memcpy_dtoh(out: &mut [u8], src: *mut c_void) -> HipResult<()> {
    // SAFETY: the caller's obligations.
    check("hipMemcpyDtoH", unsafe {
        hipMemcpyDtoH(out.as_mut_ptr().cast(), src, out.len())
    })
}

/// `hipMemcpyAsync(hipMemcpyDefault)` between addresses of the unified address space.
///
/// # Safety
/// Both ranges are live device-visible memory until `stream` finished the copy.
pub unsafe fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    stream: hipStream_t,
) -> HipResult<()> {
    // SAFETY: the caller's obligations.
    check("hipMemcpyAsync", unsafe {
        hipMemcpyAsync(dst, src, len, hipMemcpyKind::hipMemcpyDefault, stream)
    })
}

/// `hipStreamCreateWithFlags(hipStreamNonBlocking)`.
pub fn stream_create() -> HipResult<hipStream_t> {
    let mut stream = null_mut();
    // SAFETY: writes one handle.
    check("hipStreamCreateWithFlags", unsafe {
        hipStreamCreateWithFlags(&mut stream, hip_runtime_sys::hipStreamNonBlocking)
    })?;
    Ok(stream)
}

/// `hipStreamDestroy`.
pub fn stream_destroy(stream: hipStream_t) -> HipResult<()> {
    // SAFETY: a stream the caller owns and destroys once.
    check("hipStreamDestroy", unsafe { hipStreamDestroy(stream) })
}

/// `hipStreamSynchronize` (null: the null stream).
pub fn stream_synchronize(stream: hipStream_t) -> HipResult<()> {
    // SAFETY: a live stream or null.
    check("hipStreamSynchronize", unsafe {
        hipStreamSynchronize(stream)
    })
}

/// `hipEventCreate` (timing enabled).
pub fn event_create() -> HipResult<hipEvent_t> {
    let mut event = null_mut();
    // SAFETY: writes one handle.
    check("hipEventCreate", unsafe { hipEventCreate(&mut event) })?;
    Ok(event)
}

/// [`hipEventRecord`](https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/group___event.html).
pub fn event_record(event: hipEvent_t, stream: hipStream_t) -> HipResult<()> {
    // SAFETY: live handles of one device.
    check("hipEventRecord", unsafe { hipEventRecord(event, stream) })
}

/// [`hipEventElapsedTime`](https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/group___event.html)
/// in milliseconds (a resolution of about 1 µs, HIP documents).
pub fn event_elapsed_ms(start: hipEvent_t, end: hipEvent_t) -> HipResult<f32> {
    let mut ms = 0.0;
    // SAFETY: writes one float; live handles.
    check("hipEventElapsedTime", unsafe {
        hipEventElapsedTime(&mut ms, start, end)
    })?;
    Ok(ms)
}

/// `hipEventDestroy`.
pub fn event_destroy(event: hipEvent_t) -> HipResult<()> {
    // SAFETY: an event the caller owns and destroys once.
    check("hipEventDestroy", unsafe { hipEventDestroy(event) })
}

/// `hipGraphCreate`.
pub fn graph_create() -> HipResult<hipGraph_t> {
    let mut graph = null_mut();
    // SAFETY: writes one handle.
    check("hipGraphCreate", unsafe { hipGraphCreate(&mut graph, 0) })?;
    Ok(graph)
}

/// `hipGraphDestroy`.
pub fn graph_destroy(graph: hipGraph_t) -> HipResult<()> {
    // SAFETY: a graph the caller owns and destroys once.
    check("hipGraphDestroy", unsafe { hipGraphDestroy(graph) })
}

/// `hipGraphAddEmptyNode`.
pub fn graph_add_empty(graph: hipGraph_t, deps: &[hipGraphNode_t]) -> HipResult<hipGraphNode_t> {
    let mut node = null_mut();
    // SAFETY: `deps` are nodes of `graph`; writes one handle.
    check("hipGraphAddEmptyNode", unsafe {
        hipGraphAddEmptyNode(&mut node, graph, deps.as_ptr(), deps.len())
    })?;
    Ok(node)
}

/// `hipGraphAddMemsetNode` (HIP copies the parameters).
///
/// # Safety
/// The memset's range is live device memory whenever the graph runs.
pub unsafe fn graph_add_memset(
    graph: hipGraph_t,
    deps: &[hipGraphNode_t],
    params: &hipMemsetParams,
) -> HipResult<hipGraphNode_t> {
    let mut node = null_mut();
    // SAFETY: the caller's obligations; writes one handle.
    check("hipGraphAddMemsetNode", unsafe {
        hipGraphAddMemsetNode(&mut node, graph, deps.as_ptr(), deps.len(), params)
    })?;
    Ok(node)
}

/// `hipGraphAddMemcpyNode1D(hipMemcpyDefault)`.
///
/// # Safety
/// Both ranges are live device-visible memory whenever the graph runs.
pub unsafe fn graph_add_memcpy(
    graph: hipGraph_t,
    deps: &[hipGraphNode_t],
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
) -> HipResult<hipGraphNode_t> {
    let mut node = null_mut();
    // SAFETY: the caller's obligations; writes one handle.
    check("hipGraphAddMemcpyNode1D", unsafe {
        hipGraphAddMemcpyNode1D(
            &mut node,
            graph,
            deps.as_ptr(),
            deps.len(),
            dst,
            src,
            len,
            hipMemcpyKind::hipMemcpyDefault,
        )
    })?;
    Ok(node)
}

/// `hipGraphAddKernelNode` (HIP copies the parameter values).
///
/// # Safety
/// `params.kernelParams` points to one valid pointer per kernel parameter, each to a value of
/// the parameter's size, live for this call; the memory behind pointer arguments is live
/// whenever the graph runs.
pub unsafe fn graph_add_kernel(
    graph: hipGraph_t,
    deps: &[hipGraphNode_t],
    params: &hipKernelNodeParams,
) -> HipResult<hipGraphNode_t> {
    let mut node = null_mut();
    // SAFETY: the caller's obligations; writes one handle.
    check("hipGraphAddKernelNode", unsafe {
        hipGraphAddKernelNode(&mut node, graph, deps.as_ptr(), deps.len(), params)
    })?;
    Ok(node)
}

/// [`hipGraphAddEventRecordNode`](https://rocm.docs.amd.com/projects/HIP/en/latest/doxygen/html/group___graph.html)
/// (beta in HIP 5.2; exported since HIP 4.5): a node that records `event` when its
/// dependencies are done, as `hipEventRecord` would on the graph's stream.
pub fn graph_add_event_record(
    graph: hipGraph_t,
    deps: &[hipGraphNode_t],
    event: hipEvent_t,
) -> HipResult<hipGraphNode_t> {
    let mut node = null_mut();
    // SAFETY: `deps` are nodes of `graph`; `event` is live while the graph exists (its owner
    // outlives the executable graph); writes one handle.
    check("hipGraphAddEventRecordNode", unsafe {
        hipGraphAddEventRecordNode(&mut node, graph, deps.as_ptr(), deps.len(), event)
    })?;
    Ok(node)
}

/// `hipGraphInstantiateWithFlags`.
pub fn graph_instantiate(graph: hipGraph_t) -> HipResult<hipGraphExec_t> {
    let mut exec = null_mut();
    // SAFETY: a live graph; writes one handle.
    check("hipGraphInstantiateWithFlags", unsafe {
        hipGraphInstantiateWithFlags(&mut exec, graph, 0)
    })?;
    Ok(exec)
}

/// `hipGraphExecDestroy`.
pub fn graph_exec_destroy(exec: hipGraphExec_t) -> HipResult<()> {
    // SAFETY: an executable graph the caller owns and destroys once.
    check("hipGraphExecDestroy", unsafe { hipGraphExecDestroy(exec) })
}

/// `hipGraphLaunch`.
pub fn graph_launch(exec: hipGraphExec_t, stream: hipStream_t) -> HipResult<()> {
    // SAFETY: live handles of one device.
    check("hipGraphLaunch", unsafe { hipGraphLaunch(exec, stream) })
}

/// `hipModuleLoadData` from a code object (an AMDGPU ELF image).
pub fn module_load_data(image: &[u8]) -> HipResult<hipModule_t> {
    let mut module = null_mut();
    // SAFETY: `image` is read during the call only (HIP copies the code object).
    check("hipModuleLoadData", unsafe {
        hipModuleLoadData(&mut module, image.as_ptr().cast())
    })?;
    Ok(module)
}

/// `hipModuleGetFunction`.
pub fn module_function(module: hipModule_t, name: &CStr) -> HipResult<hipFunction_t> {
    let mut function = null_mut();
    // SAFETY: a live module; `name` is NUL-terminated.
    check("hipModuleGetFunction", unsafe {
        hipModuleGetFunction(&mut function, module, name.as_ptr())
    })?;
    Ok(function)
}

/// `hipModuleUnload`.
pub fn module_unload(module: hipModule_t) -> HipResult<()> {
    // SAFETY: a module the caller owns and unloads once.
    check("hipModuleUnload", unsafe { hipModuleUnload(module) })
}

/// Compiles HIP C++ `source` with hipRTC (`hiprtcCreateProgram`, `hiprtcCompileProgram`,
/// `hiprtcGetCode`) into a code object: `Ok(code)`, or `Err((call, code, log))` with the
/// compiler's log.
pub fn rtc_compile(
    source: &CStr,
    name: &CStr,
    options: &[&CStr],
) -> std::result::Result<Vec<u8>, (HipError, String)> {
    let mut program: RtcProgram = null_mut();
    // SAFETY: NUL-terminated strings read during the call; no headers.
    check("hiprtcCreateProgram", unsafe {
        hiprtcCreateProgram(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })
    .map_err(|e| (e, String::new()))?;
    let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let result = (|| {
        // SAFETY: a live program; `count` NUL-terminated options.
        let compiled = check("hiprtcCompileProgram", unsafe {
            hiprtcCompileProgram(program, pointers.len() as c_int, pointers.as_ptr())
        });
        if let Err(error) = compiled {
            let mut len = 0;
            let mut log = String::new();
            // SAFETY: a live program; writes one size, then `len` bytes.
            if unsafe { hiprtcGetProgramLogSize(program, &mut len) } == SUCCESS && len > 0 {
                let mut bytes = vec![0u8; len];
                // SAFETY: `bytes` holds `len` bytes.
                if unsafe { hiprtcGetProgramLog(program, bytes.as_mut_ptr().cast()) } == SUCCESS {
                    let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
                    log = String::from_utf8_lossy(&bytes[..end]).into_owned();
                }
            }
            return Err((error, log));
        }
        let mut len = 0;
        // SAFETY: a compiled program; writes one size.
        check("hiprtcGetCodeSize", unsafe {
            hiprtcGetCodeSize(program, &mut len)
        })
        .map_err(|e| (e, String::new()))?;
        let mut code = vec![0u8; len];
        // SAFETY: `code` holds `len` bytes.
        check("hiprtcGetCode", unsafe {
            hiprtcGetCode(program, code.as_mut_ptr().cast())
        })
        .map_err(|e| (e, String::new()))?;
        Ok(code)
    })();
    // SAFETY: created above, destroyed once.
    unsafe { hiprtcDestroyProgram(&mut program) };
    result
}
