//! Kernel times: each operation's device start and end through CUPTI's activity API
//! (<https://docs.nvidia.com/cupti/main/main.html#cupti-activity-api>), for the kernels,
//! memsets and copies of native graphs and of copy batches. Opt-in (`RuntimeOptions::
//! kernel_times`, `HRX_TRACE_KERNELS=1`, `record --kernel-times`): CUPTI's kernel activity
//! serializes and instruments launches (1.1-1.5x on graphs of short kernels on the H200,
//! issue 20), so region timing alone stays the default.
//!
//! - **Loading.** libcupti is opened at run time, as libcuda is (cudarc's `cupti` bindings with
//!   dynamic loading). It usually lives outside the loader's path
//!   (`$CUDA_HOME/extras/CUPTI/lib64`), so the usual directories are tried by full path first
//!   (`HRX_CUPTI_PATH` names the library itself); the library is then found by its soname.
//!   Every symbol used is resolved before the first call (cudarc panics on a missing one). A
//!   missing library or symbol is one warning and regions keep their times.
//! - **Records.** CUPTI hands records in buffers hrx gives it (8 MiB each); a forced flush
//!   (`cuptiActivityFlushAll(FORCED)`) after each synchronize delivers those of the work just
//!   finished. The fields read (`start`, `end`, `streamId`, `graphNodeId`) lie in the prefix
//!   that every version of the kernel, memcpy and memset records shares (`CUpti_ActivityKernel9`
//!   to `13`, `Memcpy6`/`7`, `Memset4`/`5`), so a newer libcupti's records read the same.
//! - **Correlation.** A graph's operation is known by its node's CUPTI id
//!   (`cuptiGetGraphNodeId` on the node as added). Instantiating a graph clones its nodes;
//!   CUPTI reports the clone's id, and its resource callback
//!   (`CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED`) says whose clone each is, so records are mapped
//!   back to the node added. A copy batch's copies carry no node: they are known by their
//!   stream's CUPTI id, in start order. Records of work hrx did not register (the
//!   application's own CUDA calls) are dropped as they arrive.
//! - **Scope.** CUPTI's activity is per process: once the first stream with kernel times
//!   starts it, every launch of the process is instrumented, an untraced runtime's and the
//!   application's own too (their records are dropped), until the process ends.
//! - **Clock.** CUPTI's timestamps are in ns on its own clock (`cuptiGetTimestamp`); each flush
//!   samples it between two readings of the session clock and maps records by that offset.

use crate::gpu::{DeviceSpan, OpSpan};
use crate::sync::lock;
use cudarc::cupti::sys as cupti;
use cudarc::driver::sys;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

/// Bytes of each activity buffer handed to CUPTI.
const BUFFER_BYTES: usize = 8 << 20;
/// Their alignment (CUPTI asks for 8).
const BUFFER_ALIGN: usize = 8;

/// The symbols hrx calls, resolved before the first call.
const SYMBOLS: &[&str] = &[
    "cuptiSubscribe",
    "cuptiEnableCallback",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiGetTimestamp",
    "cuptiGetGraphNodeId",
    "cuptiGetStreamIdEx",
    "cuptiGetResultString",
];

/// One activity record of registered work.
#[derive(Clone, Copy, Debug)]
struct Activity {
    start: u64,
    end: u64,
}

impl Activity {
    /// Whether CUPTI timed it: both timestamps given, in order.
    fn timed(&self) -> bool {
        self.start != 0 && self.end >= self.start
    }
}

#[derive(Default)]
struct State {
    /// Node ids of the graphs' operations as added (registered at build).
    nodes: HashSet<u64>,
    /// A cloned node's id -> the id of the node it was cloned from.
    clone_of: HashMap<u64, u64>,
    /// Records of graph nodes not taken yet, by the id of the node as added.
    by_node: HashMap<u64, Vec<Activity>>,
    /// CUPTI ids of registered streams (copy batches).
    streams: HashSet<u32>,
    /// Records of copies and memsets outside graphs not taken yet, by stream.
    by_stream: HashMap<u32, Vec<Activity>>,
    /// Records dropped as not registered (the application's own work).
    foreign: u64,
}

/// The process's CUPTI activity session, started by the first stream that asks for kernel
/// times.
pub(super) struct Cupti {
    state: Mutex<State>,
}

static CUPTI: OnceLock<Result<Cupti, String>> = OnceLock::new();

/// The activity session, started on first use; `Err`: why kernel times cannot be had
/// (reported once by the caller).
pub(super) fn cupti() -> Result<&'static Cupti, &'static str> {
    CUPTI
        .get_or_init(|| {
            // SAFETY: loads libcupti and registers hrx's callbacks, once per process.
            unsafe { start() }
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Opens the first libcupti found by full path, globally, so that cudarc's load by soname
/// finds it; the handle is kept for the process's life.
fn preload() -> Option<String> {
    let mut candidates: Vec<std::path::PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("HRX_CUPTI_PATH") {
        candidates.push(path.into());
    }
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            let root = std::path::PathBuf::from(root);
            dirs.push(root.join("extras/CUPTI/lib64"));
            dirs.push(root.join("lib64"));
        }
    }
    for dir in [
        "/usr/local/cuda/extras/CUPTI/lib64",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu",
    ] {
        dirs.push(dir.into());
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libcupti.so"))
            })
            .collect();
        // The unversioned link first, then the shortest (the soname link).
        found.sort_by_key(|p| p.as_os_str().len());
        candidates.extend(found);
    }
    let mut last = None;
    for path in candidates {
        // SAFETY: opening a shared library runs its initializers; libcupti's are CUPTI's own.
        match unsafe {
            libloading::os::unix::Library::open(
                Some(&path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        } {
            Ok(library) => {
                std::mem::forget(library);
                return None;
            }
            Err(error) => last = Some(format!("{}: {error}", path.display())),
        }
    }
    last
}

/// Loads libcupti, checks its symbols, subscribes to graph-node clones and turns on the
/// kernel, memcpy and memset activity.
///
/// # Safety
/// Once per process (CUPTI allows one subscriber).
unsafe fn start() -> Result<Cupti, String> {
    let tried = preload();
    // SAFETY: only dlopens candidates of libcupti's name.
    if !unsafe { cupti::is_culib_present() } {
        return Err(format!(
            "libcupti not found ({}; set HRX_CUPTI_PATH to the library, or LD_LIBRARY_PATH to \
             CUDA's extras/CUPTI/lib64)",
            tried.unwrap_or_else(|| "none in CUDA_HOME, /usr/local/cuda".into())
        ));
    }
    // SAFETY: present, so cudarc's loader returns it.
    let library = unsafe { cupti::culib() };
    for name in SYMBOLS {
        // SAFETY: only looks the symbol up.
        if unsafe { library.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!(
                "libcupti lacks {name} (CUDA 12.4 or newer is needed)"
            ));
        }
    }
    let mut subscriber: cupti::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: the callback is a plain function; no user data.
    check("cuptiSubscribe", unsafe {
        cupti::cuptiSubscribe(&mut subscriber, Some(on_callback), std::ptr::null_mut())
    })
    .map_err(|e| format!("{e} (another CUPTI tool, such as Nsight, may be attached)"))?;
    // SAFETY: a valid subscriber, a valid domain and callback id.
    check("cuptiEnableCallback", unsafe {
        cupti::cuptiEnableCallback(
            1,
            subscriber,
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE,
            cupti::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED as u32,
        )
    })?;
    // SAFETY: both callbacks are plain functions honouring CUPTI's buffer contract.
    check("cuptiActivityRegisterCallbacks", unsafe {
        cupti::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
    })?;
    for kind in [
        cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
        cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
    ] {
        // SAFETY: a valid activity kind.
        check("cuptiActivityEnable", unsafe {
            cupti::cuptiActivityEnable(kind)
        })?;
    }
    Ok(Cupti {
        state: Mutex::new(State::default()),
    })
}

/// A CUPTI result as an error naming the call.
fn check(call: &str, result: cupti::CUptiResult) -> Result<(), String> {
    if result == cupti::CUptiResult::CUPTI_SUCCESS {
        return Ok(());
    }
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: CUPTI writes a pointer to a static string.
    let name = if unsafe { cupti::cuptiGetResultString(result, &mut text) }
        == cupti::CUptiResult::CUPTI_SUCCESS
        && !text.is_null()
    {
        // SAFETY: a NUL-terminated static string.
        unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("{result:?}")
    };
    Err(format!("{call} failed: {name}"))
}

impl Cupti {
    /// The CUPTI id of graph node `node` as added, registered so that its records are kept.
    pub(super) fn register_node(&self, node: sys::CUgraphNode) -> Option<u64> {
        let mut id = 0;
        // SAFETY: a node of a live graph.
        let result = unsafe { cupti::cuptiGetGraphNodeId(node.cast(), &mut id) };
        if result != cupti::CUptiResult::CUPTI_SUCCESS {
            return None;
        }
        lock(&self.state).nodes.insert(id);
        Some(id)
    }

    /// The CUPTI id of `stream`, registered so that its copies' records are kept.
    pub(super) fn register_stream(
        &self,
        context: sys::CUcontext,
        stream: sys::CUstream,
    ) -> Option<u32> {
        let mut id = 0;
        // SAFETY: a live stream of a live context.
        let result =
            unsafe { cupti::cuptiGetStreamIdEx(context.cast(), stream.cast(), 0, &mut id) };
        if result != cupti::CUptiResult::CUPTI_SUCCESS {
            return None;
        }
        lock(&self.state).streams.insert(id);
        Some(id)
    }

    /// Delivers the records of finished work and the offset from CUPTI's clock to the
    /// session clock ([`crate::clock::now_ns`]) at this moment, in ns.
    fn flush(&self) -> i128 {
        // SAFETY: a valid flag; the completion callback runs on this thread or CUPTI's.
        let _ = unsafe {
            cupti::cuptiActivityFlushAll(1) // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
        };
        let before = crate::clock::now_ns();
        let mut cupti_ns = 0;
        // SAFETY: writes one u64.
        let _ = unsafe { cupti::cuptiGetTimestamp(&mut cupti_ns) };
        let after = crate::clock::now_ns();
        i128::from(before / 2 + after / 2) - i128::from(cupti_ns)
    }

    /// The times of the operations of the graph launch just synchronized: `nodes[i]` is the
    /// CUPTI id of its node `i` (`None`: not timed, an empty node), appended as
    /// [`OpSpan`]s with `index` `i`, device-measured.
    pub(super) fn take_graph(&self, nodes: &[Option<u64>], out: &mut Vec<OpSpan>) {
        let offset = self.flush();
        let mut state = lock(&self.state);
        for (index, id) in nodes.iter().enumerate() {
            let Some(records) = id.and_then(|id| state.by_node.remove(&id)) else {
                continue;
            };
            // One launch at a time per graph: a record left from an earlier launch (a flush
            // that came late) is older than this launch's, which is the last. A record
            // without timestamps (0: CUPTI could not take them; seen once on the H200 among
            // 12 launches) times nothing.
            if let Some(last) = records.iter().filter(|r| r.timed()).max_by_key(|r| r.start) {
                out.push(span(index, *last, offset));
            }
        }
    }

    /// The times of the copies of the batch just synchronized on stream `stream` (a CUPTI
    /// id), in start order: the batch's copies in the order they were enqueued.
    pub(super) fn take_stream(&self, stream: u32, out: &mut Vec<OpSpan>) {
        let offset = self.flush();
        let mut records = lock(&self.state)
            .by_stream
            .remove(&stream)
            .unwrap_or_default();
        records.retain(Activity::timed);
        records.sort_by_key(|r| r.start);
        out.extend(
            records
                .into_iter()
                .enumerate()
                .map(|(index, r)| span(index, r, offset)),
        );
    }

    /// Records dropped so far as the application's own work.
    #[cfg(test)]
    pub(super) fn foreign(&self) -> u64 {
        lock(&self.state).foreign
    }

    fn add(&self, node: u64, stream: u32, activity: Activity) {
        let mut state = lock(&self.state);
        if node != 0 {
            let node = state.clone_of.get(&node).copied().unwrap_or(node);
            if state.nodes.contains(&node) {
                state.by_node.entry(node).or_default().push(activity);
                return;
            }
        } else if state.streams.contains(&stream) {
            state.by_stream.entry(stream).or_default().push(activity);
            return;
        }
        state.foreign += 1;
    }

    fn cloned(&self, clone: u64, original: u64) {
        let mut state = lock(&self.state);
        // A clone of a clone maps to the node as added.
        let original = state.clone_of.get(&original).copied().unwrap_or(original);
        if state.nodes.contains(&original) {
            state.clone_of.insert(clone, original);
        }
    }
}

/// An activity record as an operation's span on the session clock.
fn span(index: usize, record: Activity, offset: i128) -> OpSpan {
    let at = |ns: u64| (i128::from(ns) + offset).max(0) as u64;
    OpSpan {
        index,
        span: DeviceSpan {
            start_ns: at(record.start),
            end_ns: at(record.end.max(record.start)),
        },
        device: true,
    }
}

/// CUPTI asks for a buffer to fill.
extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN)
        .expect("a valid constant layout");
    // SAFETY: a non-zero size; CUPTI hands the buffer back to `buffer_completed`, which frees
    // it with the same layout. The out-pointers are CUPTI's.
    unsafe {
        let pointer = std::alloc::alloc(layout);
        *buffer = pointer;
        *size = if pointer.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

/// CUPTI hands back a buffer: its records are kept where registered, then it is freed.
extern "C" fn buffer_completed(
    _context: sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    if let Some(Ok(session)) = CUPTI.get() {
        let mut record: *mut cupti::CUpti_Activity = std::ptr::null_mut();
        // SAFETY: CUPTI walks its own records within `valid` bytes.
        while unsafe { cupti::cuptiActivityGetNextRecord(buffer, valid, &mut record) }
            == cupti::CUptiResult::CUPTI_SUCCESS
        {
            // SAFETY: a record CUPTI wrote, of the kind its first field says.
            if let Some((node, stream, activity)) = unsafe { read(record) } {
                session.add(node, stream, activity);
            }
        }
    }
    let layout = std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN)
        .expect("a valid constant layout");
    // SAFETY: allocated by `buffer_requested` with this layout.
    unsafe { std::alloc::dealloc(buffer, layout) };
}

/// The node, stream and times of a kernel, memcpy or memset record.
///
/// # Safety
/// `record` points at a record CUPTI wrote.
unsafe fn read(record: *const cupti::CUpti_Activity) -> Option<(u64, u32, Activity)> {
    use cupti::CUpti_ActivityKind as Kind;
    // SAFETY: every record starts with its kind; each kind's prefix is read as its oldest
    // layout with these fields (see the module docs).
    unsafe {
        // The node, stream and times of a record of layout `$layout`.
        macro_rules! fields {
            ($layout:ty) => {{
                let r = &*(record as *const $layout);
                let activity = Activity {
                    start: r.start,
                    end: r.end,
                };
                Some((r.graphNodeId, r.streamId, activity))
            }};
        }
        match (*record).kind {
            Kind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL | Kind::CUPTI_ACTIVITY_KIND_KERNEL => {
                fields!(cupti::CUpti_ActivityKernel9)
            }
            Kind::CUPTI_ACTIVITY_KIND_MEMCPY => fields!(cupti::CUpti_ActivityMemcpy6),
            Kind::CUPTI_ACTIVITY_KIND_MEMSET => fields!(cupti::CUpti_ActivityMemset4),
            _ => None,
        }
    }
}

/// CUPTI's callback: a graph node was cloned (when a graph is instantiated).
unsafe extern "C" fn on_callback(
    _user: *mut std::ffi::c_void,
    domain: cupti::CUpti_CallbackDomain,
    id: cupti::CUpti_CallbackId,
    data: *const std::ffi::c_void,
) {
    if domain != cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE
        || id != cupti::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED as u32
        || data.is_null()
    {
        return;
    }
    let Some(Ok(session)) = CUPTI.get() else {
        return;
    };
    // SAFETY: for this domain and id, CUPTI passes resource data whose descriptor is the
    // graph data, valid during the call.
    let graph = unsafe {
        let resource = &*(data as *const cupti::CUpti_ResourceData);
        if resource.resourceDescriptor.is_null() {
            return;
        }
        &*(resource.resourceDescriptor as *const cupti::CUpti_GraphData)
    };
    let (mut clone, mut original) = (0, 0);
    // SAFETY: both nodes are live during the callback.
    let ok = unsafe {
        cupti::cuptiGetGraphNodeId(graph.node, &mut clone) == cupti::CUptiResult::CUPTI_SUCCESS
            && cupti::cuptiGetGraphNodeId(graph.originalNode, &mut original)
                == cupti::CUptiResult::CUPTI_SUCCESS
    };
    if ok {
        session.cloned(clone, original);
    }
}

#[cfg(test)]
mod tests {
    /// Without libcupti (this build machine, CI), asking for kernel times is an error that
    /// names the library and how to point hrx at it, not a panic in cudarc's loader. Where
    /// libcupti is installed (the H200 host) there is nothing to check here.
    #[test]
    fn a_missing_libcupti_is_a_clear_error() {
        // SAFETY: only dlopens candidates of libcupti's name.
        if unsafe { cudarc::cupti::sys::is_culib_present() } {
            return;
        }
        let error = super::cupti().err().expect("no libcupti here");
        assert!(error.starts_with("libcupti not found"), "{error}");
        assert!(error.contains("HRX_CUPTI_PATH"), "{error}");
    }
}
