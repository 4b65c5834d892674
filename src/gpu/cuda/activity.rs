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
//! - **Batches.** A record can reach hrx after its batch's synchronize and forced flush (on the
//!   H200 a copy's came with the next batch of its lane, 10 ms later, session 36), and a
//!   graph's nodes keep records of earlier launches. So each batch is known by its window on
//!   the session clock: its records start after the midpoint between the previous
//!   synchronize's return and the batch's first enqueue (the previous batch's work ended
//!   before the first, this one's starts after the second; the midpoint leaves half the gap
//!   for the clocks' mapping). Older records are another batch's, come late: dropped and
//!   counted (`State::late`). While a batch lacks a record of an operation it enqueued, CUPTI
//!   is flushed again, a few times over about 4 ms; then it keeps what came (its missing
//!   operations untimed, its region on its events). After three such batches in a row, one
//!   flush a batch until one is complete again.
//! - **Regions.** With kernel times on, a graph launch's start event ran 0.4-0.7 ms before its
//!   first node on the H200 (session 36: CUPTI's own work for the launch), and a copy batch's
//!   events took in the waits of its copies' calls behind other threads' flushes (a 70 µs
//!   upload read 1.5 ms). A region or copy batch whose every operation CUPTI timed therefore
//!   runs from its first operation's start to its last one's end (`gpu::cuda`'s stream), so
//!   that CUPTI's cost stays out of the times, as capture work must. Only a batch whose every
//!   operation's record came in its window: one taken from another batch would take that
//!   batch's span.

use crate::gpu::{DeviceSpan, OpSpan};
use crate::sync::lock;
use cudarc::cupti::sys as cupti;
use cudarc::driver::sys;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Bytes of each activity buffer handed to CUPTI.
const BUFFER_BYTES: usize = 8 << 20;
/// Their alignment (CUPTI asks for 8).
const BUFFER_ALIGN: usize = 8;
/// The waits before each further flush while a batch lacks records (module docs): 4.3 ms
/// in all, once per batch at most.
const REFLUSH_WAITS_US: [u64; 10] = [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000];
/// Batches left incomplete in a row after which a batch waits no more ([`Cupti::flushed_until`]).
const GIVE_UP_AFTER: u32 = 3;

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
    /// Records of registered work that came after their batch was taken (module docs).
    late: u64,
}

/// Where a batch's records begin on the session clock (ns): the midpoint between the
/// previous synchronize's return (`synced_ns`, 0: none) and the batch's first enqueue
/// (`enqueued_ns`). Records starting before it are an earlier batch's (module docs).
pub(super) fn batch_boundary(synced_ns: u64, enqueued_ns: u64) -> u64 {
    if synced_ns == 0 || enqueued_ns <= synced_ns {
        return synced_ns.min(enqueued_ns);
    }
    synced_ns + (enqueued_ns - synced_ns) / 2
}

/// A CUPTI timestamp on the session clock, through `offset` (ns).
fn session_ns(cupti_ns: u64, offset: i128) -> u64 {
    u64::try_from((i128::from(cupti_ns) + offset).max(0)).unwrap_or(u64::MAX)
}

impl State {
    /// Drops the records in `records` that start before `boundary` (session clock, through
    /// `offset`) and counts them late; whether one of those left is timed.
    fn keep_from(records: &mut Vec<Activity>, boundary: u64, offset: i128, late: &mut u64) -> bool {
        let before = records.len();
        records.retain(|r| !r.timed() || session_ns(r.start, offset) >= boundary);
        *late += (before - records.len()) as u64;
        records.iter().any(Activity::timed)
    }

    /// Whether every node of `nodes` has a timed record in the batch from `boundary`,
    /// older ones dropped.
    fn graph_ready(&mut self, nodes: &[Option<u64>], boundary: u64, offset: i128) -> bool {
        let mut ready = true;
        for id in nodes.iter().flatten() {
            ready &= match self.by_node.get_mut(id) {
                Some(records) => Self::keep_from(records, boundary, offset, &mut self.late),
                None => false,
            };
        }
        ready
    }

    /// Takes the batch's records of `nodes` (the last launch's of each node, module docs) as
    /// [`OpSpan`]s indexed by node.
    fn take_graph(&mut self, nodes: &[Option<u64>], offset: i128, out: &mut Vec<OpSpan>) {
        for (index, id) in nodes.iter().enumerate() {
            let Some(records) = id.and_then(|id| self.by_node.remove(&id)) else {
                continue;
            };
            // Two launches of one graph in a batch: the last is the one whose nodes the
            // stream knows. A record without timestamps (0: CUPTI could not take them; seen
            // once on the H200 among 12 launches) times nothing.
            if let Some(last) = records.iter().filter(|r| r.timed()).max_by_key(|r| r.start) {
                out.push(span(index, *last, offset));
            }
        }
    }

    /// How many timed records stream `stream` holds in the batch from `boundary`, older
    /// ones dropped.
    fn stream_ready(&mut self, stream: u32, boundary: u64, offset: i128) -> usize {
        let Some(records) = self.by_stream.get_mut(&stream) else {
            return 0;
        };
        Self::keep_from(records, boundary, offset, &mut self.late);
        records.iter().filter(|r| r.timed()).count()
    }

    /// Takes the batch's copies on `stream` in start order, indexed in that order.
    fn take_stream(&mut self, stream: u32, offset: i128, out: &mut Vec<OpSpan>) {
        let mut records = self.by_stream.remove(&stream).unwrap_or_default();
        records.retain(Activity::timed);
        records.sort_by_key(|r| r.start);
        out.extend(
            records
                .into_iter()
                .enumerate()
                .map(|(index, r)| span(index, r, offset)),
        );
    }
}

/// The process's CUPTI activity session, started by the first stream that asks for kernel
/// times.
pub(super) struct Cupti {
    state: Mutex<State>,
    /// Batches left without some of their records in a row ([`Cupti::flushed_until`]).
    incomplete_in_a_row: AtomicU32,
}

static CUPTI: OnceLock<Result<Cupti, String>> = OnceLock::new();

/// A batch left without some of its records, said once per process.
static INCOMPLETE: std::sync::Once = std::sync::Once::new();

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
            Err(error) => {
                last = Some(format!(
                    "{}: {error}",
                    hrx_capture::ShowPath::shown(path.as_path())
                ))
            }
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
        incomplete_in_a_row: AtomicU32::new(0),
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

    /// Flushes until `ready` says the batch has all its records, or the waits of
    /// [`REFLUSH_WAITS_US`] are spent; returns the state, locked, and the last flush's clock
    /// offset. After [`GIVE_UP_AFTER`] batches in a row were left incomplete, one flush only
    /// until a batch is complete again: work whose records never come (a kind CUPTI does not
    /// report) must not add 4 ms to every batch.
    fn flushed_until(
        &self,
        mut ready: impl FnMut(&mut State, i128) -> bool,
    ) -> (std::sync::MutexGuard<'_, State>, i128) {
        let mut offset = self.flush();
        let waits = if self.incomplete_in_a_row.load(Ordering::Relaxed) >= GIVE_UP_AFTER {
            &[][..]
        } else {
            &REFLUSH_WAITS_US[..]
        };
        for &wait in waits {
            let mut state = lock(&self.state);
            if ready(&mut state, offset) {
                self.incomplete_in_a_row.store(0, Ordering::Relaxed);
                return (state, offset);
            }
            drop(state);
            std::thread::sleep(Duration::from_micros(wait));
            offset = self.flush();
        }
        let mut state = lock(&self.state);
        if ready(&mut state, offset) {
            self.incomplete_in_a_row.store(0, Ordering::Relaxed);
        } else {
            self.incomplete_in_a_row.fetch_add(1, Ordering::Relaxed);
            INCOMPLETE.call_once(|| {
                crate::error::to_stderr(format_args!(
                    "hrx: kernel times: CUPTI had not delivered every record of a batch 4 ms \
                     after it finished; its missing operations keep no time and its region \
                     keeps its event span (said once)"
                ));
            });
        }
        (state, offset)
    }

    /// The times of the operations of the graph launch just synchronized, its batch starting
    /// at `boundary` ([`batch_boundary`]): `nodes[i]` is the CUPTI id of its node `i`
    /// (`None`: not timed, an empty node), appended as [`OpSpan`]s with `index` `i`,
    /// device-measured.
    pub(super) fn take_graph(&self, nodes: &[Option<u64>], boundary: u64, out: &mut Vec<OpSpan>) {
        let (mut state, offset) =
            self.flushed_until(|state, offset| state.graph_ready(nodes, boundary, offset));
        state.take_graph(nodes, offset, out);
    }

    /// The times of the `copies` copies of the batch just synchronized on stream `stream` (a
    /// CUPTI id), its batch starting at `boundary`, in start order: the batch's copies in the
    /// order they were enqueued.
    pub(super) fn take_stream(
        &self,
        stream: u32,
        boundary: u64,
        copies: usize,
        out: &mut Vec<OpSpan>,
    ) {
        let (mut state, offset) = self
            .flushed_until(|state, offset| state.stream_ready(stream, boundary, offset) >= copies);
        state.take_stream(stream, offset, out);
    }

    /// Records of registered work that came after their batch was taken, so far (dropped).
    #[cfg(test)]
    pub(super) fn late(&self) -> u64 {
        lock(&self.state).late
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
    OpSpan {
        index,
        span: DeviceSpan {
            start_ns: session_ns(record.start, offset),
            end_ns: session_ns(record.end.max(record.start), offset),
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
    use super::{Activity, State, batch_boundary};

    fn at(start: u64, end: u64) -> Activity {
        Activity { start, end }
    }

    /// The boundary lies halfway between the previous synchronize and the first enqueue;
    /// without a previous synchronize every record counts.
    #[test]
    fn a_batch_starts_halfway_from_the_last_synchronize() {
        assert_eq!(batch_boundary(0, 5_000), 0);
        assert_eq!(batch_boundary(10_000, 14_000), 12_000);
        // Clocks read out of order (never expected): the earlier one.
        assert_eq!(batch_boundary(10_000, 9_000), 9_000);
    }

    /// Session 36's defect: a copy's record that came after its batch was taken was read
    /// by the lane's next batch as its own. Now a batch keeps only records from its
    /// boundary on, counts the older one late, and waits for as many as it enqueued.
    #[test]
    fn a_copy_batch_takes_only_its_own_records_and_counts_a_late_one() {
        let mut state = State::default();
        state.streams.insert(7);
        // CUPTI's clock is 1,000 ns behind the session clock: offset +1,000.
        let offset = 1_000;
        // Batch 1 (enqueued at 10,000 session ns) was taken with one record missing; it came
        // now, with batch 2's two copies (enqueued at 30,000 after a synchronize at 20,000).
        let late = at(12_000, 18_000);
        let mine = [at(30_500, 31_000), at(31_200, 39_000)];
        let boundary = batch_boundary(20_000, 30_000);
        state.by_stream.insert(7, vec![mine[1], late]);
        assert_eq!(
            state.stream_ready(7, boundary, offset),
            1,
            "one of two so far"
        );
        assert_eq!(state.late, 1);
        state.by_stream.get_mut(&7).unwrap().push(mine[0]);
        assert_eq!(state.stream_ready(7, boundary, offset), 2);
        let mut out = Vec::new();
        state.take_stream(7, offset, &mut out);
        let spans: Vec<_> = out
            .iter()
            .map(|o| (o.index, o.span.start_ns, o.span.end_ns))
            .collect();
        assert_eq!(spans, [(0, 31_500, 32_000), (1, 32_200, 40_000)]);
        assert!(out.iter().all(|o| o.device));
        assert_eq!(state.stream_ready(7, boundary, offset), 0, "all taken");
    }

    /// A graph's nodes keep records of earlier launches whose flush came late: a launch
    /// is ready only when each timed node has a record from its boundary on, and takes
    /// that one, never the older.
    #[test]
    fn a_graph_launch_waits_for_each_node_and_never_takes_an_earlier_launchs_record() {
        let mut state = State::default();
        let nodes = [Some(1), None, Some(2)];
        state.nodes.extend([1, 2]);
        let boundary = 50_000;
        // Node 1: the previous launch's record (late) and this one's; node 2: only the
        // previous launch's so far.
        state
            .by_node
            .insert(1, vec![at(41_000, 42_000), at(51_000, 52_000)]);
        state.by_node.insert(2, vec![at(42_000, 43_000)]);
        assert!(!state.graph_ready(&nodes, boundary, 0));
        assert_eq!(state.late, 2);
        // A record CUPTI could not time (start 0) does not make the node ready.
        state.by_node.get_mut(&2).unwrap().push(at(0, 0));
        assert!(!state.graph_ready(&nodes, boundary, 0));
        state.by_node.get_mut(&2).unwrap().push(at(52_000, 55_000));
        assert!(state.graph_ready(&nodes, boundary, 0));
        let mut out = Vec::new();
        state.take_graph(&nodes, 0, &mut out);
        let spans: Vec<_> = out
            .iter()
            .map(|o| (o.index, o.span.start_ns, o.span.end_ns))
            .collect();
        assert_eq!(spans, [(0, 51_000, 52_000), (2, 52_000, 55_000)]);
        assert!(state.by_node.is_empty());
    }

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
