//! Thin checked wrappers over `cudarc::driver::sys`, one per driver call, each returning
//! [`CuResult`] and linking the CUDA driver API reference.
//!
//! Wrappers that take only handles and values are safe: the backend passes handles it owns and
//! keeps alive. Those that take host pointers or device ranges are `unsafe`.
#![allow(unsafe_op_in_unsafe_fn)]

use super::error::{CuResult, check};
use cudarc::driver::sys::{self, CUcontext, CUdevice, CUdeviceptr, CUevent, CUstream};
use cudarc::driver::sys::{CUfunction, CUgraph, CUgraphExec, CUgraphNode, CUmodule};
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

/// Every driver symbol the backend calls, resolved before the first call (cudarc panics on
/// a missing symbol; an old driver is answered with an error instead).
pub const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetPCIBusId",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer_v2",
    "cuMemFreeHost",
    "cuMemsetD8_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyAsync",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventElapsedTime_v2",
    "cuEventDestroy_v2",
    "cuGraphCreate",
    "cuGraphDestroy",
    "cuGraphAddEmptyNode",
    "cuGraphAddMemsetNode",
    "cuGraphAddMemcpyNode",
    "cuGraphAddKernelNode_v2",
    "cuGraphAddEventRecordNode",
    "cuGraphInstantiateWithFlags",
    "cuGraphExecDestroy",
    "cuGraphLaunch",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuFuncGetAttribute",
];

/// The name of the first symbol in [`SYMBOLS`] that libcuda lacks.
///
/// # Safety
/// libcuda must be loadable (`sys::is_culib_present()`), or cudarc panics.
pub unsafe fn missing_symbol() -> Option<&'static str> {
    let library = sys::culib();
    SYMBOLS
        .iter()
        .copied()
        .find(|name| library.get::<*const c_void>(name.as_bytes()).is_err())
}

/// [`cuInit`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html)
pub fn init() -> CuResult<()> {
    // SAFETY: no pointers.
    check("cuInit", unsafe { sys::cuInit(0) })
}

/// [`cuDriverGetVersion`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html)
pub fn driver_version() -> CuResult<i32> {
    let mut version = 0;
    // SAFETY: writes one int.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut version)
    })?;
    Ok(version)
}

/// [`cuDeviceGetCount`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html)
pub fn device_count() -> CuResult<i32> {
    let mut count = 0;
    // SAFETY: writes one int.
    check("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })?;
    Ok(count)
}

/// [`cuDeviceGet`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html)
pub fn device(ordinal: i32) -> CuResult<CUdevice> {
    let mut device = 0;
    // SAFETY: writes one handle.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    Ok(device)
}

/// [`cuDeviceGetName`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html)
pub fn device_name(device: CUdevice) -> CuResult<String> {
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
    })?;
    // SAFETY: NUL-terminated within the buffer (the driver truncates).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// [`cuDeviceTotalMem`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html)
pub fn device_total_mem(device: CUdevice) -> CuResult<usize> {
    let mut bytes = 0;
    // SAFETY: writes one size.
    check("cuDeviceTotalMem_v2", unsafe {
        sys::cuDeviceTotalMem_v2(&mut bytes, device)
    })?;
    Ok(bytes)
}

/// [`cuDeviceGetPCIBusId`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html):
/// `domain:bus:device.function` in hex (`0000:19:00.0`), the form NVML looks devices up by.
pub fn device_pci_bus_id(device: CUdevice) -> CuResult<String> {
    // The driver's documented form is 13 characters and a NUL; room to spare.
    let mut id = [0 as std::ffi::c_char; 64];
    // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
    check("cuDeviceGetPCIBusId", unsafe {
        sys::cuDeviceGetPCIBusId(id.as_mut_ptr(), id.len() as i32, device)
    })?;
    // SAFETY: NUL-terminated within the buffer.
    let id = unsafe { CStr::from_ptr(id.as_ptr()) };
    Ok(id.to_string_lossy().into_owned())
}

/// [`cuDevicePrimaryCtxRetain`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PRIMARY__CTX.html)
pub fn primary_ctx_retain(device: CUdevice) -> CuResult<CUcontext> {
    let mut context = null_mut();
    // SAFETY: writes one handle.
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut context, device)
    })?;
    Ok(context)
}

/// [`cuDevicePrimaryCtxRelease`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PRIMARY__CTX.html)
pub fn primary_ctx_release(device: CUdevice) -> CuResult<()> {
    // SAFETY: no pointers.
    check("cuDevicePrimaryCtxRelease_v2", unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(device)
    })
}

/// [`cuCtxSetCurrent`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html)
pub fn ctx_set_current(context: CUcontext) -> CuResult<()> {
    // SAFETY: a handle the caller keeps retained.
    check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(context) })
}

/// [`cuCtxGetCurrent`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html)
/// (null when no context is current on this thread).
pub fn ctx_get_current() -> CuResult<CUcontext> {
    let mut context = null_mut();
    // SAFETY: writes one handle.
    check("cuCtxGetCurrent", unsafe {
        sys::cuCtxGetCurrent(&mut context)
    })?;
    Ok(context)
}

/// [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
pub fn mem_alloc(len: usize) -> CuResult<CUdeviceptr> {
    let mut address = 0;
    // SAFETY: writes one address.
    check("cuMemAlloc_v2", unsafe {
        sys::cuMemAlloc_v2(&mut address, len)
    })?;
    Ok(address)
}

/// [`cuMemFree`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
///
/// # Safety
/// `address` came from [`mem_alloc`], is freed once, and no pending work uses it.
pub unsafe fn mem_free(address: CUdeviceptr) -> CuResult<()> {
    check("cuMemFree_v2", sys::cuMemFree_v2(address))
}

/// [`cuMemHostAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
/// with `DEVICEMAP | PORTABLE`: pinned host memory mapped into the device address space.
pub fn mem_host_alloc(len: usize) -> CuResult<*mut c_void> {
    let mut pointer = null_mut();
    let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
    // SAFETY: writes one pointer.
    check("cuMemHostAlloc", unsafe {
        sys::cuMemHostAlloc(&mut pointer, len, flags)
    })?;
    Ok(pointer)
}

/// [`cuMemHostGetDevicePointer`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
///
/// # Safety
/// `pointer` came from [`mem_host_alloc`] and is live.
pub unsafe fn mem_host_device_pointer(pointer: *mut c_void) -> CuResult<CUdeviceptr> {
    let mut address = 0;
    check(
        "cuMemHostGetDevicePointer_v2",
        sys::cuMemHostGetDevicePointer_v2(&mut address, pointer, 0),
    )?;
    Ok(address)
}

/// [`cuMemFreeHost`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
///
/// # Safety
/// `pointer` came from [`mem_host_alloc`], is freed once, and nothing uses it any more.
pub unsafe fn mem_free_host(pointer: *mut c_void) -> CuResult<()> {
    check("cuMemFreeHost", sys::cuMemFreeHost(pointer))
}

/// [`cuMemsetD8`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
/// (on the legacy stream; may return before it completes).
///
/// # Safety
/// `address..address + len` is device memory owned by the caller.
pub unsafe fn memset_d8(address: CUdeviceptr, value: u8, len: usize) -> CuResult<()> {
    check("cuMemsetD8_v2", sys::cuMemsetD8_v2(address, value, len))
}

/// [`cuMemcpyHtoD`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
/// (on the legacy stream; may return before the DMA completes).
///
/// # Safety
/// `dst..dst + data.len()` is device memory owned by the caller.
pub unsafe fn memcpy_htod(dst: CUdeviceptr, data: &[u8]) -> CuResult<()> {
    check(
        "cuMemcpyHtoD_v2",
        sys::cuMemcpyHtoD_v2(dst, data.as_ptr().cast(), data.len()),
    )
}

/// [`cuMemcpyDtoH`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
/// (synchronous).
///
/// # Safety
/// `src..src + out.len()` is device memory that nothing writes meanwhile.
pub unsafe fn memcpy_dtoh(out: &mut [u8], src: CUdeviceptr) -> CuResult<()> {
    check(
        "cuMemcpyDtoH_v2",
        sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), src, out.len()),
    )
}

/// [`cuMemcpyAsync`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)
/// (addresses in the unified address space).
///
/// # Safety
/// Both ranges are live device-visible memory until `stream` finished the copy.
pub unsafe fn memcpy_async(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    len: usize,
    stream: CUstream,
) -> CuResult<()> {
    check("cuMemcpyAsync", sys::cuMemcpyAsync(dst, src, len, stream))
}

/// [`cuStreamCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html)
/// with `CU_STREAM_NON_BLOCKING`.
pub fn stream_create() -> CuResult<CUstream> {
    let mut stream = null_mut();
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: writes one handle.
    check("cuStreamCreate", unsafe {
        sys::cuStreamCreate(&mut stream, flags)
    })?;
    Ok(stream)
}

/// [`cuStreamDestroy`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html)
pub fn stream_destroy(stream: CUstream) -> CuResult<()> {
    // SAFETY: a stream the caller owns and destroys once.
    check("cuStreamDestroy_v2", unsafe {
        sys::cuStreamDestroy_v2(stream)
    })
}

/// [`cuStreamSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html)
/// (null: the legacy default stream).
pub fn stream_synchronize(stream: CUstream) -> CuResult<()> {
    // SAFETY: a live stream or null.
    check("cuStreamSynchronize", unsafe {
        sys::cuStreamSynchronize(stream)
    })
}

/// [`cuEventCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html)
/// (timing enabled).
pub fn event_create() -> CuResult<CUevent> {
    let mut event = null_mut();
    let flags = sys::CUevent_flags::CU_EVENT_DEFAULT as u32;
    // SAFETY: writes one handle.
    check("cuEventCreate", unsafe {
        sys::cuEventCreate(&mut event, flags)
    })?;
    Ok(event)
}

/// [`cuEventRecord`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html)
pub fn event_record(event: CUevent, stream: CUstream) -> CuResult<()> {
    // SAFETY: live handles of one context.
    check("cuEventRecord", unsafe {
        sys::cuEventRecord(event, stream)
    })
}

/// [`cuEventElapsedTime`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html)
/// in milliseconds (about 0.5 µs resolution).
pub fn event_elapsed_ms(start: CUevent, end: CUevent) -> CuResult<f32> {
    let mut ms = 0.0;
    // SAFETY: writes one float; live handles.
    check("cuEventElapsedTime_v2", unsafe {
        sys::cuEventElapsedTime_v2(&mut ms, start, end)
    })?;
    Ok(ms)
}

/// [`cuEventDestroy`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html)
pub fn event_destroy(event: CUevent) -> CuResult<()> {
    // SAFETY: an event the caller owns and destroys once.
    check("cuEventDestroy_v2", unsafe {
        sys::cuEventDestroy_v2(event)
    })
}

/// [`cuGraphCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_create() -> CuResult<CUgraph> {
    let mut graph = null_mut();
    // SAFETY: writes one handle.
    check("cuGraphCreate", unsafe {
        sys::cuGraphCreate(&mut graph, 0)
    })?;
    Ok(graph)
}

/// [`cuGraphDestroy`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_destroy(graph: CUgraph) -> CuResult<()> {
    // SAFETY: a graph the caller owns and destroys once.
    check("cuGraphDestroy", unsafe { sys::cuGraphDestroy(graph) })
}

/// [`cuGraphAddEmptyNode`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_add_empty(graph: CUgraph, deps: &[CUgraphNode]) -> CuResult<CUgraphNode> {
    let mut node = null_mut();
    // SAFETY: `deps` are nodes of `graph`; writes one handle.
    check("cuGraphAddEmptyNode", unsafe {
        sys::cuGraphAddEmptyNode(&mut node, graph, deps.as_ptr(), deps.len())
    })?;
    Ok(node)
}

/// [`cuGraphAddMemsetNode`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
///
/// # Safety
/// The memset's range is live device memory whenever the graph runs.
pub unsafe fn graph_add_memset(
    graph: CUgraph,
    deps: &[CUgraphNode],
    params: &sys::CUDA_MEMSET_NODE_PARAMS,
    context: CUcontext,
) -> CuResult<CUgraphNode> {
    let mut node = null_mut();
    check(
        "cuGraphAddMemsetNode",
        sys::cuGraphAddMemsetNode(&mut node, graph, deps.as_ptr(), deps.len(), params, context),
    )?;
    Ok(node)
}

/// [`cuGraphAddMemcpyNode`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
///
/// # Safety
/// The copy's ranges are live memory whenever the graph runs.
pub unsafe fn graph_add_memcpy(
    graph: CUgraph,
    deps: &[CUgraphNode],
    params: &sys::CUDA_MEMCPY3D,
    context: CUcontext,
) -> CuResult<CUgraphNode> {
    let mut node = null_mut();
    check(
        "cuGraphAddMemcpyNode",
        sys::cuGraphAddMemcpyNode(&mut node, graph, deps.as_ptr(), deps.len(), params, context),
    )?;
    Ok(node)
}

/// [`cuGraphAddKernelNode`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
/// (the driver copies the parameter values; the storage need only outlive this call).
///
/// # Safety
/// `params.kernelParams` points to one valid pointer per kernel parameter, each to a value
/// of the parameter's size; the memory behind pointer arguments is live whenever the graph
/// runs.
pub unsafe fn graph_add_kernel(
    graph: CUgraph,
    deps: &[CUgraphNode],
    params: &sys::CUDA_KERNEL_NODE_PARAMS,
) -> CuResult<CUgraphNode> {
    let mut node = null_mut();
    check(
        "cuGraphAddKernelNode_v2",
        sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), params),
    )?;
    Ok(node)
}

/// [`cuGraphAddDependencies_v2`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
/// (CUDA 12.3): edges from `from` to each of `to`, with default edge data (a null array).
pub fn graph_add_dependencies(
    graph: CUgraph,
    from: CUgraphNode,
    to: &[CUgraphNode],
) -> CuResult<()> {
    if to.is_empty() {
        return Ok(());
    }
    let from = vec![from; to.len()];
    // SAFETY: `from` and `to` are nodes of `graph`, each array `to.len()` long; a null edge
    // data array asks for the default edges.
    check("cuGraphAddDependencies_v2", unsafe {
        sys::cuGraphAddDependencies_v2(
            graph,
            from.as_ptr(),
            to.as_ptr(),
            std::ptr::null(),
            to.len(),
        )
    })
}

/// [`cuGraphAddEventRecordNode`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
/// (records `event` when the node runs; the graph refers to the event, it does not own it).
pub fn graph_add_event_record(
    graph: CUgraph,
    deps: &[CUgraphNode],
    event: CUevent,
) -> CuResult<CUgraphNode> {
    let mut node = null_mut();
    // SAFETY: `deps` are nodes of `graph`; `event` is a live event of the graph's context
    // that outlives every executable graph made from it; writes one handle.
    check("cuGraphAddEventRecordNode", unsafe {
        sys::cuGraphAddEventRecordNode(&mut node, graph, deps.as_ptr(), deps.len(), event)
    })?;
    Ok(node)
}

/// [`cuGraphInstantiateWithFlags`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_instantiate(graph: CUgraph) -> CuResult<CUgraphExec> {
    let mut exec = null_mut();
    // SAFETY: a live graph; writes one handle.
    check("cuGraphInstantiateWithFlags", unsafe {
        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
    })?;
    Ok(exec)
}

/// [`cuGraphExecDestroy`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_exec_destroy(exec: CUgraphExec) -> CuResult<()> {
    // SAFETY: an executable graph the caller owns and destroys once.
    check("cuGraphExecDestroy", unsafe {
        sys::cuGraphExecDestroy(exec)
    })
}

/// [`cuGraphLaunch`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)
pub fn graph_launch(exec: CUgraphExec, stream: CUstream) -> CuResult<()> {
    // SAFETY: live handles of one context.
    check("cuGraphLaunch", unsafe { sys::cuGraphLaunch(exec, stream) })
}

/// [`cuModuleLoadData`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html)
/// from NUL-terminated PTX text.
pub fn module_load_data(ptx: &CStr) -> CuResult<CUmodule> {
    let mut module = null_mut();
    // SAFETY: `ptx` is NUL-terminated text, read during the call only.
    check("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast())
    })?;
    Ok(module)
}

/// [`cuModuleGetFunction`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html)
pub fn module_function(module: CUmodule, name: &CStr) -> CuResult<CUfunction> {
    let mut function = null_mut();
    // SAFETY: a live module; `name` is NUL-terminated.
    check("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut function, module, name.as_ptr())
    })?;
    Ok(function)
}

/// [`cuFuncGetAttribute`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html)
/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the largest block `function` launches with.
pub fn function_max_threads(function: CUfunction) -> CuResult<u32> {
    let mut threads = 0;
    // SAFETY: a live function; writes one int.
    check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(
            &mut threads,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            function,
        )
    })?;
    Ok(u32::try_from(threads).unwrap_or(0))
}

/// [`cuModuleUnload`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html)
pub fn module_unload(module: CUmodule) -> CuResult<()> {
    // SAFETY: a module the caller owns and unloads once.
    check("cuModuleUnload", unsafe { sys::cuModuleUnload(module) })
}
