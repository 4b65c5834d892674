//! The software device: always compiled, the default when no GPU is found.
//!
//! Memory is 256-byte-aligned host memory (host-visible memory page-aligned) with stable
//! fake device addresses (a separate
//! address space starting at `0x7f00_0000_0000`, so code that confuses host and device
//! addresses fails). A stream executes its work on the thread that enqueues it — the
//! runtime's queue worker *is* the stream — so `synchronize` only reports. Native graphs run
//! node by node in insertion order, which is a topological order because every dependency
//! names an earlier node. Kernels are host functions from the built-in library or
//! registered by the application. Every operation passes the [`FaultInjector`] first.

use super::{
    Allocation, DeviceInfo, DeviceSpan, GraphExec, GraphNode, Kernel, NativeAllocation,
    NativeDevice, NativeGraphBuilder, NativeGraphExec, NativeKernel, NativeStream, OpSpan, Stream,
    View, foreign_object,
};
use crate::fault::FaultInjector;
use crate::huge_pages::HugeRegion;
use crate::kernels::{HostBinding, HostKernelFn, HostLaunch, KernelSpec};
use crate::{Error, Result};
use std::alloc::Layout;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const ALIGNMENT: usize = 256;
/// Alignment of host-visible allocations (a page).
const HOST_ALIGNMENT: usize = 4096;
const ADDRESS_BASE: u64 = 0x7f00_0000_0000;

/// The software device's memory, `HRX_SIM_MEMORY` bytes (`K`, `M`, `G`: KiB, MiB, GiB; at
/// least 1), unlimited when unset: one device shared by every runtime of the process, as a
/// GPU's memory is shared by its contexts, so that running out of device memory can be
/// reproduced without a GPU (a replay's repeats side by side, an application on a smaller
/// card). Only device-local allocations count: host-visible ones stand for pinned host
/// memory, which a GPU's memory does not hold.
pub(crate) const MEMORY_ENV: &str = "HRX_SIM_MEMORY";

/// `HRX_SIM_MEMORY` read once: `Ok(None)` unlimited; `Err`: the line saying what is wrong.
pub(crate) fn memory_limit() -> std::result::Result<Option<u64>, &'static str> {
    static LIMIT: std::sync::OnceLock<std::result::Result<Option<u64>, String>> =
        std::sync::OnceLock::new();
    LIMIT
        .get_or_init(|| match std::env::var(MEMORY_ENV) {
            Err(_) => Ok(None),
            Ok(text) => parse_bytes(&text)
                .filter(|&bytes| bytes > 0)
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "{MEMORY_ENV}: expected a size in bytes above 0 such as 1048576, 64M \
                         or 2G, got {text:?}"
                    )
                }),
        })
        .as_ref()
        .copied()
        .map_err(String::as_str)
}

/// `N`, `NK`, `NM` or `NG` (KiB, MiB, GiB); `None` for anything else or an overflow.
fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// Bytes of the software device's memory in use by every runtime of the process, counted
/// only under a [`memory_limit`].
static IN_USE: AtomicU64 = AtomicU64::new(0);

/// The software device.
pub(crate) struct SimDevice {
    ordinal: usize,
    next_address: AtomicU64,
    faults: Arc<FaultInjector>,
}

impl SimDevice {
    pub fn new(ordinal: usize, faults: Arc<FaultInjector>) -> Self {
        Self {
            ordinal,
            next_address: AtomicU64::new(ADDRESS_BASE),
            faults,
        }
    }
}

struct SimAllocation {
    pointer: *mut u8,
    /// What `pointer` lies in when the allocation is on huge pages ([`HugeRegion`]); else
    /// `pointer` came from the global allocator with `layout`.
    huge: Option<HugeRegion>,
    layout: Layout,
    len: usize,
    address: u64,
    host_visible: bool,
    /// Poses as pinned memory a device reads by DMA ([`test_hooks::READ_BY_DMA`]).
    #[cfg(test)]
    read_by_dma: bool,
}

// SAFETY: the allocation is plain host memory owned by this value; concurrent access is
// ordered by the runtime's hazard tracking.
unsafe impl Send for SimAllocation {}
// SAFETY: as above.
unsafe impl Sync for SimAllocation {}

impl Drop for SimAllocation {
    fn drop(&mut self) {
        if !self.host_visible
            && let Ok(Some(_)) = memory_limit()
        {
            IN_USE.fetch_sub(self.layout.size() as u64, Ordering::Relaxed);
        }
        if self.huge.is_none() {
            // SAFETY: allocated in `allocate` with this layout.
            unsafe { std::alloc::dealloc(self.pointer, self.layout) }
        }
    }
}

impl NativeAllocation for SimAllocation {
    fn device_address(&self) -> u64 {
        self.address
    }
    fn host_pointer(&self) -> *mut u8 {
        if self.host_visible {
            self.pointer
        } else {
            std::ptr::null_mut()
        }
    }
    fn len(&self) -> usize {
        self.len
    }
    #[cfg(test)]
    fn read_by_dma(&self) -> bool {
        self.read_by_dma
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The host address of a view's first byte.
fn host_address(view: &View<'_>) -> Result<*mut u8> {
    let allocation = view
        .owner()
        .native()
        .as_any()
        .downcast_ref::<SimAllocation>()
        .ok_or_else(|| foreign_object("allocation"))?;
    // SAFETY: views are range-checked against their buffer, whose length is the allocation's.
    Ok(unsafe { allocation.pointer.add(view.offset()) })
}

struct SimKernel {
    entry: String,
    host: HostKernelFn,
    /// [`crate::kernels::KernelCode::slowdown_percent`].
    slowdown_percent: u32,
}

impl NativeKernel for SimKernel {
    fn entry(&self) -> &str {
        &self.entry
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl NativeDevice for SimDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            backend: "sim",
            name: "hrx software device".into(),
            ordinal: self.ordinal,
            memory_bytes: 0,
        }
    }

    fn allocate(&self, len: usize, host_visible: bool) -> Result<Allocation> {
        // Host-visible memory is page-aligned, as pinned memory from `cuMemHostAlloc` is and
        // as XRT's import of host memory into a BO requires.
        let alignment = if host_visible {
            HOST_ALIGNMENT
        } else {
            ALIGNMENT
        };
        // Checked: a length within an alignment of `usize::MAX` rounds past it (unchecked,
        // a debug build panicked and a release build wrapped to an empty allocation that a
        // `len`-byte buffer then wrote past). Refused as a length no layout takes is.
        let cannot = || Error::Message(format!("cannot allocate {len} bytes"));
        let rounded = len
            .max(1)
            .checked_next_multiple_of(alignment)
            .ok_or_else(cannot)?;
        let layout = Layout::from_size_align(rounded, alignment).map_err(|_| cannot())?;
        // The software device out of memory: `name` says whose limit, `detail` how.
        let out_of_memory = |name: &str, detail: String| -> Error {
            crate::DeviceError::OutOfMemory(crate::DeviceCall {
                backend: "sim",
                call: "alloc",
                code: 0,
                name: name.into(),
                detail,
            })
            .into()
        };
        let limit = memory_limit().map_err(|why| Error::Message(why.to_owned()))?;
        // A bad `HRX_HUGE_PAGES` fails every allocation, as a bad limit does: a replay's
        // runtime, which reads no runtime variable, would otherwise go on with huge pages.
        crate::huge_pages::enabled().map_err(Error::Message)?;
        // Device memory only: a host-visible allocation stands for pinned host memory.
        let limit = limit.filter(|_| !host_visible);
        if let Some(limit) = limit {
            let before = IN_USE.fetch_add(rounded as u64, Ordering::Relaxed);
            if before + rounded as u64 > limit {
                IN_USE.fetch_sub(rounded as u64, Ordering::Relaxed);
                return Err(out_of_memory(
                    "over HRX_SIM_MEMORY",
                    format!("allocating {len} bytes with {before} of {limit} in use"),
                ));
            }
        }
        // A large buffer (device memory too: the software device's is host memory) on huge
        // pages, whose layout in physical memory is the same from process to process
        // (`crate::huge_pages`).
        let huge = HugeRegion::new(rounded);
        let pointer = match &huge {
            // Zeroed, as below.
            Some(region) => region.as_ptr(),
            // SAFETY: layout has a non-zero size. Zeroed, as cudaMalloc'd memory is not
            // guaranteed to be but deterministic contents make runs comparable.
            None => unsafe { std::alloc::alloc_zeroed(layout) },
        };
        if pointer.is_null() {
            if limit.is_some() {
                IN_USE.fetch_sub(rounded as u64, Ordering::Relaxed);
            }
            return Err(out_of_memory(
                "null",
                format!("allocating {len} bytes of host memory"),
            ));
        }
        let address = self
            .next_address
            .fetch_add(rounded as u64, Ordering::Relaxed);
        Ok(Allocation::new(Arc::new(SimAllocation {
            pointer,
            huge,
            layout,
            len,
            address,
            host_visible,
            #[cfg(test)]
            read_by_dma: host_visible && test_hooks::READ_BY_DMA.get(),
        })))
    }

    fn stream(&self) -> Result<Stream> {
        Ok(Box::new(SimStream {
            faults: self.faults.clone(),
            timed: true,
            ops: Vec::new(),
            #[cfg(test)]
            asynchronous: test_hooks::ASYNCHRONOUS.get(),
        }))
    }

    fn load_kernel(&self, spec: &KernelSpec) -> Result<Kernel> {
        let host = spec.code.host.ok_or_else(|| {
            Error::Unsupported(format!(
                "kernel {} has no host implementation for the software device",
                spec.entry
            ))
        })?;
        Ok(Arc::new(SimKernel {
            entry: spec.entry.clone(),
            host,
            slowdown_percent: spec.code.slowdown_percent,
        }))
    }

    fn write(&self, dst: &View<'_>, data: &[u8]) -> Result<()> {
        let pointer = host_address(dst)?;
        // SAFETY: the caller registered exclusive host access to `dst`, of data.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), pointer, data.len().min(dst.len())) };
        Ok(())
    }

    fn read(&self, src: &View<'_>, out: &mut [u8]) -> Result<()> {
        let pointer = host_address(src)?;
        // SAFETY: the caller registered host read access to `src`.
        unsafe {
            std::ptr::copy_nonoverlapping(pointer, out.as_mut_ptr(), out.len().min(src.len()))
        };
        Ok(())
    }
}

struct SimStream {
    faults: Arc<FaultInjector>,
    /// Whether operations are timed ([`NativeStream::set_timed`]).
    timed: bool,
    /// The operations run since the last [`NativeStream::op_spans`], when timed.
    ops: Vec<OpSpan>,
    /// Test hook: the stream claims asynchronous launches (it still runs the graph in the
    /// call, as a device that finishes at once would), so that the runtime's early launch
    /// from `submit` can be observed on the software device.
    #[cfg(test)]
    asynchronous: bool,
}

enum Node {
    Fill {
        dst: HostBinding,
        value: u8,
    },
    Copy {
        dst: HostBinding,
        src: HostBinding,
    },
    Dispatch {
        entry: String,
        host: HostKernelFn,
        slowdown_percent: u32,
        grid: [u32; 3],
        block: [u32; 3],
        constants: Vec<u8>,
        bindings: Vec<HostBinding>,
    },
}

// SAFETY: nodes hold raw pointers into allocations that the prepared graph keeps alive
// (the dispatch contract); they are dereferenced only during a launch.
unsafe impl Send for Node {}

fn run_node(faults: &FaultInjector, node: &Node) -> Result<()> {
    match node {
        Node::Fill { dst, value } => {
            faults.check(None, "fill")?;
            // SAFETY: the range was checked when the view was made; hazards order access.
            unsafe { std::ptr::write_bytes(dst.ptr, *value, dst.len) };
        }
        Node::Copy { dst, src } => {
            faults.check(None, "copy")?;
            // SAFETY: equal, non-overlapping ranges (checked by `Graph::copy_on`).
            unsafe { std::ptr::copy_nonoverlapping(src.ptr, dst.ptr, dst.len.min(src.len)) };
        }
        Node::Dispatch {
            entry,
            host,
            slowdown_percent,
            grid,
            block,
            constants,
            bindings,
        } => {
            faults.check(Some(entry), entry)?;
            let begin = (*slowdown_percent > 0).then(std::time::Instant::now);
            host(&HostLaunch {
                entry,
                grid: *grid,
                block: *block,
                constants,
                bindings,
            })
            .map_err(|message| Error::Kernel(format!("{entry}: {message}")))?;
            if let Some(begin) = begin {
                slow_down(begin, *slowdown_percent);
            }
        }
    }
    Ok(())
}

/// Spins `percent` of the time since `begin` more ([`crate::kernels::KernelCode::slowdown_percent`]):
/// a spin, not a sleep, so the added time is as exact as the clock, not the scheduler's tick.
fn slow_down(begin: std::time::Instant, percent: u32) {
    let spent = begin.elapsed();
    let until = begin + spent + spent * percent / 100;
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn binding(view: &View<'_>) -> Result<HostBinding> {
    Ok(HostBinding {
        ptr: host_address(view)?,
        len: view.len(),
    })
}

impl SimStream {
    /// Runs `nodes` in order on this thread, each timed when timing is on: one clock
    /// reading between two operations, as they run back to back (the device's operations
    /// are its host's work). A failing operation is timed to its failure.
    fn run<'n>(&mut self, nodes: impl Iterator<Item = &'n Node>, first: usize) -> Result<()> {
        if !self.timed {
            return nodes
                .into_iter()
                .try_for_each(|n| run_node(&self.faults, n));
        }
        let mut start_ns = crate::clock::now_ns();
        for (index, node) in nodes.enumerate() {
            let result = run_node(&self.faults, node);
            let end_ns = crate::clock::now_ns();
            self.ops.push(OpSpan {
                index: first + index,
                span: DeviceSpan { start_ns, end_ns },
                device: false,
            });
            result?;
            start_ns = end_ns;
        }
        Ok(())
    }
}

impl NativeStream for SimStream {
    fn copy(&mut self, dst: &View<'_>, src: &View<'_>) -> Result<()> {
        let node = Node::Copy {
            dst: binding(dst)?,
            src: binding(src)?,
        };
        // A copy batch's copies are numbered in order since the last `op_spans`.
        let first = self.ops.len();
        self.run(std::iter::once(&node), first)
    }

    fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }

    fn op_spans(&mut self, out: &mut Vec<OpSpan>) {
        out.append(&mut self.ops);
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }

    fn graph(&mut self) -> Result<Box<dyn NativeGraphBuilder>> {
        Ok(Box::new(SimGraph { nodes: Vec::new() }))
    }

    #[cfg(test)]
    fn launches_asynchronously(&self) -> bool {
        self.asynchronous
    }

    fn launch(&mut self, graph: &mut dyn NativeGraphExec) -> Result<()> {
        #[cfg(test)]
        test_hooks::LAUNCHES.set(test_hooks::LAUNCHES.get() + 1);
        let graph = graph
            .as_any_mut()
            .downcast_mut::<SimGraph>()
            .ok_or_else(|| foreign_object("graph"))?;
        // Nodes run in insertion order, so a node's index is its `GraphNode`. A launch
        // starts a new unit of work: what an earlier one left untaken is not its.
        self.ops.clear();
        self.run(graph.nodes.iter(), 0)
    }
}

struct SimGraph {
    nodes: Vec<Node>,
}

impl SimGraph {
    fn add(&mut self, dependencies: &[GraphNode], node: Node) -> Result<GraphNode> {
        let index = self.nodes.len();
        if let Some(bad) = dependencies.iter().find(|d| d.0 >= index) {
            return Err(Error::Message(format!(
                "graph node {index} depends on node {} that does not precede it",
                bad.0
            )));
        }
        self.nodes.push(node);
        Ok(GraphNode(index))
    }
}

impl NativeGraphBuilder for SimGraph {
    fn fill(&mut self, dependencies: &[GraphNode], dst: &View<'_>, value: u8) -> Result<GraphNode> {
        let dst = binding(dst)?;
        self.add(dependencies, Node::Fill { dst, value })
    }

    fn copy(
        &mut self,
        dependencies: &[GraphNode],
        dst: &View<'_>,
        src: &View<'_>,
    ) -> Result<GraphNode> {
        let (dst, src) = (binding(dst)?, binding(src)?);
        self.add(dependencies, Node::Copy { dst, src })
    }

    unsafe fn dispatch(
        &mut self,
        dependencies: &[GraphNode],
        kernel: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        constants: &[u8],
        views: &[View<'_>],
    ) -> Result<GraphNode> {
        let kernel = kernel
            .as_any()
            .downcast_ref::<SimKernel>()
            .ok_or_else(|| foreign_object("kernel"))?;
        let bindings = views.iter().map(binding).collect::<Result<Vec<_>>>()?;
        self.add(
            dependencies,
            Node::Dispatch {
                entry: kernel.entry.clone(),
                host: kernel.host,
                slowdown_percent: kernel.slowdown_percent,
                grid,
                block,
                constants: constants.to_vec(),
                bindings,
            },
        )
    }

    fn finish(self: Box<Self>) -> Result<GraphExec> {
        Ok(self)
    }
}

impl NativeGraphExec for SimGraph {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Hooks for the runtime's unit tests: per thread, so that parallel tests do not meet.
#[cfg(test)]
pub(crate) mod test_hooks {
    use std::cell::Cell;

    thread_local! {
        /// Streams made on this thread claim asynchronous launches.
        pub(crate) static ASYNCHRONOUS: Cell<bool> = const { Cell::new(false) };
        /// Graph launches made on this thread.
        pub(crate) static LAUNCHES: Cell<u64> = const { Cell::new(0) };
        /// Host-visible allocations made on this thread pose as pinned memory that a device
        /// reads by DMA (`NativeAllocation::read_by_dma`).
        pub(crate) static READ_BY_DMA: Cell<bool> = const { Cell::new(false) };
    }
}

#[cfg(test)]
mod tests {
    /// `HRX_SIM_MEMORY`'s sizes: bytes or binary units, nothing else.
    #[test]
    fn the_software_devices_memory_size_reads_bytes_and_binary_units() {
        use super::parse_bytes;
        assert_eq!(parse_bytes("1048576"), Some(1 << 20));
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes("2g"), Some(2 << 30));
        assert_eq!(parse_bytes(" 3K "), Some(3 << 10));
        for bad in [
            "",
            "M",
            "1.5G",
            "-1",
            "12T",
            "1 G",
            "99999999999999999999",
            "17179869184G",
        ] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }

    use super::*;

    /// A timed stream times each node of a launch and each copy of a batch, once each
    /// (taken spans are forgotten); an untimed one times nothing.
    #[test]
    fn operations_are_timed_only_when_timing_is_on() {
        let device = SimDevice::new(0, Arc::new(FaultInjector::default()));
        let memory = device.allocate(1024, false).unwrap();
        let (low, high) = (View::new(&memory, 0, 512), View::new(&memory, 512, 512));
        let mut stream = device.stream().unwrap();
        let mut graph = stream.graph().unwrap();
        let first = graph.fill(&[], &low, 1).unwrap();
        graph.copy(&[first], &high, &low).unwrap();
        let mut graph = graph.finish().unwrap();
        let mut spans = Vec::new();
        stream.launch_and_synchronize(graph.as_mut()).unwrap();
        stream.op_spans(&mut spans);
        assert_eq!(spans.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
        assert!(
            spans
                .iter()
                .all(|s| !s.device && s.span.start_ns <= s.span.end_ns)
        );
        assert!(spans[0].span.end_ns <= spans[1].span.start_ns);
        stream.copy(&high, &low).unwrap();
        stream.copy(&low, &high).unwrap();
        spans.clear();
        stream.op_spans(&mut spans);
        assert_eq!(spans.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
        spans.clear();
        stream.op_spans(&mut spans);
        assert!(spans.is_empty(), "taken spans are forgotten");
        stream.set_timed(false);
        stream.launch_and_synchronize(graph.as_mut()).unwrap();
        stream.copy(&high, &low).unwrap();
        stream.op_spans(&mut spans);
        assert!(spans.is_empty(), "an untimed stream times nothing");
    }

    /// Sleeps 2 ms, then writes 7 into its binding.
    fn sleepy(launch: &HostLaunch<'_>) -> std::result::Result<(), String> {
        std::thread::sleep(std::time::Duration::from_millis(2));
        // SAFETY: the binding is the kernel's one byte range, registered by the test.
        unsafe { std::ptr::write_bytes(launch.bindings[0].ptr, 7, launch.bindings[0].len) };
        Ok(())
    }

    /// A slowed kernel (`KernelCode::slowdown_percent`) spins that share of its own time
    /// after its work: its span is at least (1 + percent) times its work's, which sleeps
    /// 2 ms; its output is the kernel's.
    #[test]
    fn a_slowed_kernel_runs_its_share_longer_with_the_same_output() {
        let device = SimDevice::new(0, Arc::new(FaultInjector::default()));
        let memory = device.allocate(64, false).unwrap();
        let out = View::new(&memory, 0, 64);
        let spec = |slowdown_percent| KernelSpec {
            entry: "sleepy".into(),
            contract: crate::contract::KernelContract {
                bindings: vec![crate::contract::BindingContract::new(
                    crate::access::Access::Write,
                    64,
                    1,
                )],
                constants: Vec::new(),
            },
            grid: [1, 1, 1],
            block: [1, 1, 1],
            code: crate::kernels::KernelCode {
                host: Some(sleepy),
                slowdown_percent,
                ..Default::default()
            },
        };
        let mut stream = device.stream().unwrap();
        for percent in [0, 150] {
            let kernel = device.load_kernel(&spec(percent)).unwrap();
            let mut graph = stream.graph().unwrap();
            // SAFETY: the view is the kernel's declared range; `memory` outlives the launch.
            unsafe { graph.dispatch(&[], &kernel, [1, 1, 1], [1, 1, 1], &[], &[out]) }.unwrap();
            let mut graph = graph.finish().unwrap();
            stream.launch_and_synchronize(graph.as_mut()).unwrap();
            let mut spans = Vec::new();
            stream.op_spans(&mut spans);
            let ns = spans[0].span.end_ns - spans[0].span.start_ns;
            assert!(
                ns >= 2_000_000 * u64::from(100 + percent) / 100,
                "{percent}%: {ns} ns"
            );
            let mut bytes = [0u8; 64];
            device.read(&out, &mut bytes).unwrap();
            assert_eq!(bytes, [7; 64]);
            device.write(&out, &[0; 64]).unwrap();
        }
    }
}
