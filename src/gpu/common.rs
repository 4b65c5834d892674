//! What the CUDA and HIP backends share, written once.
//!
//! The two vendor APIs have the same shape (HIP mirrors the CUDA runtime and driver APIs), so
//! the rules that come from the backend contract rather than from a vendor live here:
//!
//! - [`StickySlot`]: the first device loss is kept and answered by every later call (both
//!   vendors' sticky errors leave the context/device unusable), and errors met in `Drop` are
//!   recorded there and surface on the next call (never a panic in `Drop`, cudarc's rule).
//! - [`DeviceContext`]: entering a context (sticky check, then make it current) and the error
//!   paths through the backend's `map_error` and the slot, over three backend methods.
//! - [`Modules`]: code modules loaded once per device and code, unloaded with the device.
//! - [`FallbackNote`]: why `auto` skipped the backend.
//! - [`owned_allocation`], [`owned_kernel`], [`owned_graph`]: a backend accepts only objects it
//!   made on the same device ([`foreign_object`] otherwise).
//! - [`write_through`], [`read_through`]: synchronous host access, by host pointer where the
//!   memory is mapped, else through the device.
//! - [`KernelArguments`]: the kernel parameter ABI below (HIP's is CUDA's).
//! - [`Nodes`]: the native graph builder's node list (dependencies must precede, leaves).
//! - [`span_ending_at`]: a batch's event-measured duration placed on the host trace clock.
//!
//! # Kernel parameter ABI
//!
//! A dispatch passes, in order: one 64-bit device address per binding (view address =
//! allocation address + view offset), then each 4-byte little-endian constant word as its own
//! 32-bit parameter. In CUDA C, bindings are pointers and words are `unsigned` or `float`:
//! `extern "C" __global__ void hrx_saxpy(const float* x, float* y, unsigned n, float a)`.
//! Constant bytes must be a whole number of words. The driver copies the values when the
//! kernel node is added (`cuGraphAddKernelNode`'s and `hipGraphAddKernelNode`'s
//! `kernelParams`: an array of pointers, one per parameter).

use super::{
    DeviceSpan, GraphNode, Kernel, NativeAllocation, NativeGraphExec, NativeKernel, View,
    foreign_object,
};
use crate::sync::lock;
use crate::{Error, Result};
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Errors of one device recorded where they could not be returned.
#[derive(Default)]
struct Sticky {
    /// The first device loss: every later call answers it.
    lost: Option<String>,
    /// A non-fatal error from a `Drop`, answered once by the next call.
    deferred: Option<Error>,
}

/// A device's sticky error slot: the first device loss, and an error deferred from `Drop`.
pub(crate) struct StickySlot {
    /// `CUDA` or `HIP`, for the message.
    backend: &'static str,
    ordinal: usize,
    /// Whether the slot holds anything (the fast path of every call reads only this).
    flagged: AtomicBool,
    slot: Mutex<Sticky>,
}

impl StickySlot {
    /// An empty slot for device `ordinal` of `backend`.
    pub(crate) fn new(backend: &'static str, ordinal: usize) -> Self {
        Self {
            backend,
            ordinal,
            flagged: AtomicBool::new(false),
            slot: Mutex::default(),
        }
    }

    /// Answers the device loss, or a deferred error (once); `Ok` when the slot is empty.
    ///
    /// # Errors
    /// [`Error::DeviceLost`] naming the first cause; a deferred error as it was recorded.
    pub(crate) fn check(&self) -> Result<()> {
        if !self.flagged.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut slot = lock(&self.slot);
        if let Some(cause) = &slot.lost {
            return Err(Error::DeviceLost(format!(
                "{} device {} was lost earlier: {cause}",
                self.backend, self.ordinal
            )));
        }
        let deferred = slot.deferred.take();
        self.flagged.store(false, Ordering::Release);
        deferred.map_or(Ok(()), Err)
    }

    /// Passes a mapped error on; a device loss also fills the slot (the first one stays).
    pub(crate) fn note(&self, mapped: Error) -> Error {
        if mapped.is_device_loss() {
            lock(&self.slot)
                .lost
                .get_or_insert_with(|| mapped.to_string());
            self.flagged.store(true, Ordering::Release);
        }
        mapped
    }

    /// Records a mapped error that cannot be returned (in `Drop`): a device loss as by
    /// [`StickySlot::note`], anything else for the next call (the first one stays).
    pub(crate) fn record(&self, mapped: Error) {
        let mapped = self.note(mapped);
        if !mapped.is_device_loss() {
            lock(&self.slot).deferred.get_or_insert(mapped);
            self.flagged.store(true, Ordering::Release);
        }
    }
}

/// A vendor context (CUDA's primary context, HIP's current device): what the shared entry and
/// error paths need from a backend. Every operation enters first; every failed call goes
/// through the backend's one `map_error` and the sticky slot.
pub(crate) trait DeviceContext {
    /// A failed vendor call: its name and raw code.
    type CallError;

    /// The context's sticky slot.
    fn sticky(&self) -> &StickySlot;

    /// The backend's one mapping from a failed call to an [`Error`].
    fn map_error(error: Self::CallError) -> Error;

    /// Makes the context current on this thread (`cuCtxSetCurrent`, `hipSetDevice`: both are
    /// per-thread state, and runtime workers are different threads).
    ///
    /// # Errors
    /// The failed call.
    fn make_current(&self) -> std::result::Result<(), Self::CallError>;

    /// Fails with the sticky error, if any; else makes the context current on this thread.
    ///
    /// # Errors
    /// As [`StickySlot::check`]; a failed `make_current`, mapped.
    fn enter(&self) -> Result<()> {
        self.sticky().check()?;
        self.make_current().map_err(|e| self.error(e))
    }

    /// Maps `error`; a device loss also fills the sticky slot.
    fn error(&self, error: Self::CallError) -> Error {
        self.sticky().note(Self::map_error(error))
    }

    /// Records an error that cannot be returned (in `Drop`).
    fn record(&self, error: Self::CallError) {
        self.sticky().record(Self::map_error(error));
    }

    /// For `Drop`: makes the context current, recording a failure; whether that worked.
    fn enter_for_drop(&self) -> bool {
        match self.make_current() {
            Ok(()) => true,
            Err(error) => {
                self.record(error);
                false
            }
        }
    }
}

/// A device's loaded code modules, by the code they were loaded from.
pub(crate) struct Modules<K, M> {
    loaded: Mutex<HashMap<K, M>>,
}

impl<K, M> Default for Modules<K, M> {
    fn default() -> Self {
        Self {
            loaded: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, M: Copy> Modules<K, M> {
    /// Function `entry` of the module of `code`, loaded by `load` on first use; `lookup`
    /// finds the function in the module. The device is current.
    ///
    /// # Errors
    /// [`Error::Message`] when `entry` contains NUL; what `load` and `lookup` return.
    pub(crate) fn function<F>(
        &self,
        code: &K,
        entry: &str,
        load: impl FnOnce() -> Result<M>,
        lookup: impl FnOnce(M, &CStr) -> Result<F>,
    ) -> Result<F> {
        let name = CString::new(entry)
            .map_err(|_| Error::Message(format!("kernel entry {entry:?} contains NUL")))?;
        let mut loaded = lock(&self.loaded);
        let module = match loaded.get(code) {
            Some(module) => *module,
            None => {
                let module = load()?;
                loaded.insert(code.clone(), module);
                module
            }
        };
        lookup(module, &name)
    }

    /// Every module, forgotten here (for the device's `Drop` to unload).
    pub(crate) fn drain(&self) -> Vec<M> {
        lock(&self.loaded)
            .drain()
            .map(|(_, module)| module)
            .collect()
    }
}

/// Why `auto` last skipped a backend (surfaced with `HRX_VERBOSE`; kept for a later `Runtime`
/// accessor).
pub(crate) struct FallbackNote(Mutex<Option<String>>);

impl FallbackNote {
    /// No note yet.
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(None))
    }

    /// Records why `auto` skipped the backend.
    pub(crate) fn note(&self, reason: String) {
        *lock(&self.0) = Some(reason);
    }

    /// The last reason, if any.
    pub(crate) fn get(&self) -> Option<String> {
        lock(&self.0).clone()
    }
}

/// The backend's allocation behind `view`, if `ours` says it was made on this device.
///
/// # Errors
/// [`Error::Message`] (another backend's or device's allocation).
pub(crate) fn owned_allocation<'a, T: NativeAllocation>(
    view: &View<'a>,
    ours: impl FnOnce(&T) -> bool,
) -> Result<&'a T> {
    view.owner()
        .native()
        .as_any()
        .downcast_ref::<T>()
        .filter(|a| ours(a))
        .ok_or_else(|| foreign_object("allocation"))
}

/// The backend's kernel behind `kernel`, if `ours` says it was loaded on this device.
///
/// # Errors
/// [`Error::Message`] (another backend's or device's kernel).
pub(crate) fn owned_kernel<T: NativeKernel>(
    kernel: &Kernel,
    ours: impl FnOnce(&T) -> bool,
) -> Result<&T> {
    kernel
        .as_any()
        .downcast_ref::<T>()
        .filter(|k| ours(k))
        .ok_or_else(|| foreign_object("kernel"))
}

/// The backend's executable graph behind `graph`, if `ours` says it was made on this device.
///
/// # Errors
/// [`Error::Message`] (another backend's or device's graph).
pub(crate) fn owned_graph<T: NativeGraphExec>(
    graph: &mut dyn NativeGraphExec,
    ours: impl FnOnce(&T) -> bool,
) -> Result<&mut T> {
    graph
        .as_any_mut()
        .downcast_mut::<T>()
        .filter(|g| ours(g))
        .ok_or_else(|| foreign_object("graph"))
}

/// A synchronous host-to-device write of `data` (cut to the view's length): by host pointer
/// where the memory is mapped, else `device(address, bytes)` for the view's device address.
///
/// # Errors
/// What `device` returns.
pub(crate) fn write_through(
    dst: &View<'_>,
    data: &[u8],
    device: impl FnOnce(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let data = &data[..data.len().min(dst.len())];
    if let Some(host) = dst.host_pointer() {
        // SAFETY: the caller registered exclusive host access to `dst`, which holds at least
        // `data.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
        return Ok(());
    }
    if data.is_empty() {
        return Ok(());
    }
    device(dst.address(), data)
}

/// A synchronous device-to-host read into `out` (cut to the view's length): by host pointer
/// where the memory is mapped, else `device(address, bytes)` for the view's device address.
///
/// # Errors
/// What `device` returns.
pub(crate) fn read_through(
    src: &View<'_>,
    out: &mut [u8],
    device: impl FnOnce(u64, &mut [u8]) -> Result<()>,
) -> Result<()> {
    let len = out.len().min(src.len());
    let out = &mut out[..len];
    if let Some(host) = src.host_pointer() {
        // SAFETY: the caller registered host read access to `src`, which holds `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(host, out.as_mut_ptr(), len) };
        return Ok(());
    }
    if out.is_empty() {
        return Ok(());
    }
    device(src.address(), out)
}

/// A dispatch's parameter values in the kernel parameter ABI (module doc).
pub(crate) struct KernelArguments {
    addresses: Vec<u64>,
    words: Vec<u32>,
}

impl KernelArguments {
    /// The values for `views` and `constants`; `parameters` is the kernel's
    /// `(bindings, words)` where known (built-in sources), checked here.
    ///
    /// # Errors
    /// [`Error::Message`] when the constants are not whole words or the counts differ from
    /// `parameters`.
    pub(crate) fn new(
        entry: &str,
        parameters: Option<(usize, usize)>,
        constants: &[u8],
        views: &[View<'_>],
    ) -> Result<Self> {
        if !constants.len().is_multiple_of(4) {
            return Err(Error::Message(format!(
                "kernel {entry}: {} constant bytes are not whole 4-byte words (the CUDA parameter ABI)",
                constants.len()
            )));
        }
        let words: Vec<u32> = constants
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        if let Some((bindings, count)) = parameters
            && (bindings, count) != (views.len(), words.len())
        {
            return Err(Error::Message(format!(
                "kernel {entry} takes {bindings} bindings and {count} constant words, got {} and {}",
                views.len(),
                words.len()
            )));
        }
        Ok(Self {
            addresses: views.iter().map(View::address).collect(),
            words,
        })
    }

    /// One pointer per parameter, each to its value in `self` (valid while `self` lives):
    /// the `kernelParams` array.
    pub(crate) fn pointers(&self) -> Vec<*mut c_void> {
        self.addresses
            .iter()
            .map(|a| std::ptr::from_ref(a).cast_mut().cast())
            .chain(
                self.words
                    .iter()
                    .map(|w| std::ptr::from_ref(w).cast_mut().cast()),
            )
            .collect()
    }
}

/// `kernelParams` for `pointers`: null when the kernel takes no parameters.
pub(crate) fn kernel_params(pointers: &mut [*mut c_void]) -> *mut *mut c_void {
    if pointers.is_empty() {
        std::ptr::null_mut()
    } else {
        pointers.as_mut_ptr()
    }
}

/// A native graph builder's operation nodes, by [`GraphNode`] index.
pub(crate) struct Nodes<N> {
    nodes: Vec<N>,
    /// Whether each node has a dependent (the leaves have none).
    has_dependents: Vec<bool>,
    /// Each node's dependencies, by index.
    #[cfg(feature = "cuda")]
    dependencies: Vec<Box<[u32]>>,
}

impl<N> Default for Nodes<N> {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            has_dependents: Vec::new(),
            #[cfg(feature = "cuda")]
            dependencies: Vec::new(),
        }
    }
}

impl<N: Copy> Nodes<N> {
    /// The driver nodes of `dependencies`, each of which must precede the next node.
    ///
    /// # Errors
    /// [`Error::Message`] naming a dependency that is not an earlier node.
    pub(crate) fn dependencies(&self, dependencies: &[GraphNode]) -> Result<Vec<N>> {
        let index = self.nodes.len();
        dependencies
            .iter()
            .map(|d| {
                self.nodes.get(d.0).copied().ok_or_else(|| {
                    Error::Message(format!(
                        "graph node {index} depends on node {} that does not precede it",
                        d.0
                    ))
                })
            })
            .collect()
    }

    /// Appends `node`, added after `dependencies` (checked by [`Nodes::dependencies`]).
    pub(crate) fn push(&mut self, node: N, dependencies: &[GraphNode]) -> GraphNode {
        for dependency in dependencies {
            self.has_dependents[dependency.0] = true;
        }
        self.nodes.push(node);
        self.has_dependents.push(false);
        #[cfg(feature = "cuda")]
        self.dependencies
            .push(dependencies.iter().map(|d| d.0 as u32).collect());
        GraphNode(self.nodes.len() - 1)
    }

    #[cfg(feature = "cuda")]
    /// The nodes that depend on no other.
    pub(crate) fn roots(&self) -> Vec<N> {
        self.nodes
            .iter()
            .zip(&self.dependencies)
            .filter(|(_, dependencies)| dependencies.is_empty())
            .map(|(&node, _)| node)
            .collect()
    }

    #[cfg(feature = "cuda")]
    /// The graph's dependencies and leaves, for [`super::op_times::launch_inclusive`].
    pub(crate) fn shape(&self) -> super::op_times::GraphShape {
        super::op_times::GraphShape {
            dependencies: self.dependencies.clone().into(),
            leaves: (0..self.nodes.len() as u32)
                .filter(|&i| !self.has_dependents[i as usize])
                .collect(),
        }
    }

    /// The nodes no other node depends on.
    pub(crate) fn leaves(&self) -> Vec<N> {
        self.nodes
            .iter()
            .zip(&self.has_dependents)
            .filter(|(_, has)| !**has)
            .map(|(node, _)| *node)
            .collect()
    }
}

/// The span of a batch that took `elapsed_ms` by its events, on the host trace clock: vendor
/// events have no absolute time, so the end is `end_ns`, the host time (`clock::now_ns`) at
/// which the synchronize returned (late by its wake-up latency, microseconds).
pub(crate) fn span_ending_at(end_ns: u64, elapsed_ms: f32) -> DeviceSpan {
    let elapsed_ns = (f64::from(elapsed_ms.max(0.0)) * 1e6) as u64;
    DeviceSpan {
        start_ns: end_ns.saturating_sub(elapsed_ns),
        end_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Allocation;
    use crate::{DeviceCall, DeviceError};
    use std::any::Any;
    use std::sync::Arc;

    fn call(name: &str) -> DeviceCall {
        DeviceCall {
            backend: "TEST",
            call: "testCall",
            code: 1,
            name: name.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn sticky_slot_keeps_the_first_loss_and_answers_a_deferred_error_once() {
        let slot = StickySlot::new("TEST", 3);
        assert!(slot.check().is_ok());
        // A non-loss error passes through and leaves the slot empty.
        let invalid = slot.note(DeviceError::InvalidArgument(call("invalid")).into());
        assert!(!invalid.is_device_loss());
        assert!(slot.check().is_ok());
        // An error from `Drop` is answered by the next call only.
        slot.record(DeviceError::OutOfMemory(call("deferred")).into());
        let deferred = slot.check().expect_err("deferred error");
        assert!(deferred.to_string().contains("deferred"), "{deferred}");
        assert!(slot.check().is_ok());
        // The first loss is answered by every later call, naming the device and the cause.
        slot.note(DeviceError::Lost(call("first")).into());
        slot.record(DeviceError::KernelFault(call("second")).into());
        for _ in 0..2 {
            let lost = slot.check().expect_err("device lost");
            assert!(
                matches!(&lost, Error::DeviceLost(m)
                if m.starts_with("TEST device 3 was lost earlier") && m.contains("first") && !m.contains("second")),
                "{lost}"
            );
        }
    }

    /// A context whose `make_current` fails with the queued kinds, in order.
    struct FakeContext {
        sticky: StickySlot,
        failures: std::sync::Mutex<Vec<&'static str>>,
    }

    impl DeviceContext for FakeContext {
        type CallError = &'static str;
        fn sticky(&self) -> &StickySlot {
            &self.sticky
        }
        fn map_error(kind: &'static str) -> Error {
            match kind {
                "lost" => DeviceError::Lost(call(kind)),
                _ => DeviceError::InvalidArgument(call(kind)),
            }
            .into()
        }
        fn make_current(&self) -> std::result::Result<(), &'static str> {
            self.failures.lock().unwrap().pop().map_or(Ok(()), Err)
        }
    }

    #[test]
    fn a_context_enters_through_its_sticky_slot_and_records_drop_failures() {
        let context = FakeContext {
            sticky: StickySlot::new("TEST", 0),
            failures: std::sync::Mutex::new(vec!["invalid", "invalid"]),
        };
        // A failed `make_current` in `Drop` is recorded and answered by the next call, once.
        assert!(!context.enter_for_drop());
        let deferred = context.enter().expect_err("deferred");
        assert!(matches!(
            deferred,
            Error::Device(DeviceError::InvalidArgument(_))
        ));
        // A failed `make_current` on entry is returned, not kept.
        assert!(context.enter().is_err());
        assert!(context.enter().is_ok());
        // A device loss from any call is answered by every later entry.
        let lost = context.error("lost");
        assert!(lost.is_device_loss());
        assert!(matches!(context.enter(), Err(Error::DeviceLost(_))));
        assert!(matches!(context.enter(), Err(Error::DeviceLost(_))));
    }

    #[test]
    fn modules_load_once_per_code_and_refuse_nul_in_entry_names() {
        let modules: Modules<&str, u32> = Modules::default();
        let mut loads = 0;
        for _ in 0..3 {
            let function = modules.function(
                &"code",
                "entry",
                || {
                    loads += 1;
                    Ok(7)
                },
                |module, name| Ok((module, name.to_str().unwrap().to_owned())),
            );
            assert_eq!(function.unwrap(), (7, "entry".to_owned()));
        }
        assert_eq!(loads, 1);
        let nul = modules.function(&"code", "a\0b", || Ok(1), |m, _| Ok(m));
        assert!(matches!(nul, Err(Error::Message(m)) if m.contains("contains NUL")));
        assert_eq!(modules.drain(), vec![7]);
        assert!(modules.drain().is_empty());
    }

    /// Host memory posing as a backend allocation: mapped (host pointer) or not.
    struct HostMemory {
        bytes: Vec<u8>,
        mapped: bool,
    }

    impl NativeAllocation for HostMemory {
        fn device_address(&self) -> u64 {
            0x1000
        }
        fn host_pointer(&self) -> *mut u8 {
            if self.mapped {
                self.bytes.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            }
        }
        fn len(&self) -> usize {
            self.bytes.len()
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn memory(len: usize, mapped: bool) -> Allocation {
        Allocation::new(Arc::new(HostMemory {
            bytes: vec![0; len],
            mapped,
        }))
    }

    #[test]
    fn host_access_goes_by_host_pointer_where_mapped_else_through_the_device() {
        let mapped = memory(8, true);
        let view = View::new(&mapped, 2, 4);
        write_through(&view, &[1, 2, 3, 4, 5, 6], |_, _| panic!("mapped memory")).unwrap();
        let mut out = [0u8; 6];
        read_through(&view, &mut out, |_, _| panic!("mapped memory")).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 0, 0], "cut to the view's 4 bytes");

        let device = memory(8, false);
        let view = View::new(&device, 2, 4);
        let mut seen = None;
        write_through(&view, &[9; 6], |address, data| {
            seen = Some((address, data.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, Some((0x1002, 4)));
        let mut out = [0u8; 2];
        read_through(&view, &mut out, |address, out| {
            assert_eq!((address, out.len()), (0x1002, 2));
            out.fill(5);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, [5, 5]);
        // Nothing to move: the device is not called.
        write_through(&view, &[], |_, _| panic!("empty write")).unwrap();
        read_through(&view, &mut [], |_, _| panic!("empty read")).unwrap();
        // A foreign allocation type is refused.
        let foreign = owned_allocation(&view, |_: &ForeignMemory| true);
        assert!(matches!(foreign, Err(Error::Message(m)) if m.contains("another backend")));
        assert!(owned_allocation(&view, |_: &HostMemory| false).is_err());
        assert!(owned_allocation(&view, |_: &HostMemory| true).is_ok());
    }

    struct ForeignMemory;

    impl NativeAllocation for ForeignMemory {
        fn device_address(&self) -> u64 {
            0
        }
        fn host_pointer(&self) -> *mut u8 {
            std::ptr::null_mut()
        }
        fn len(&self) -> usize {
            0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn kernel_arguments_follow_the_parameter_abi() {
        let a = memory(64, false);
        let views = [View::new(&a, 0, 16), View::new(&a, 16, 16)];
        let constants = [7u32.to_le_bytes(), 1.5f32.to_le_bytes()].concat();
        let arguments = KernelArguments::new("k", Some((2, 2)), &constants, &views).unwrap();
        let mut pointers = arguments.pointers();
        assert_eq!(pointers.len(), 4);
        // SAFETY: each pointer points at a live u64 (bindings) or u32 (words) in `arguments`.
        unsafe {
            assert_eq!(*pointers[0].cast::<u64>(), 0x1000);
            assert_eq!(*pointers[1].cast::<u64>(), 0x1010);
            assert_eq!(*pointers[2].cast::<u32>(), 7);
            assert_eq!(*pointers[3].cast::<u32>(), 1.5f32.to_bits());
        }
        assert_eq!(kernel_params(&mut pointers), pointers.as_mut_ptr());
        assert!(kernel_params(&mut []).is_null());

        let ragged = KernelArguments::new("k", None, &[1, 2, 3], &views);
        assert!(matches!(ragged, Err(Error::Message(m)) if m.contains("not whole 4-byte words")));
        let counts = KernelArguments::new("k", Some((1, 2)), &constants, &views);
        assert!(matches!(counts, Err(Error::Message(m))
            if m.contains("takes 1 bindings and 2 constant words, got 2 and 2")));
        assert!(KernelArguments::new("k", None, &constants, &views).is_ok());
    }

    #[test]
    fn nodes_need_earlier_dependencies_and_know_their_leaves() {
        let mut nodes: Nodes<char> = Nodes::default();
        assert_eq!(nodes.dependencies(&[]).unwrap(), vec![]);
        let a = nodes.push('a', &[]);
        let b = nodes.push('b', &[]);
        assert_eq!(nodes.dependencies(&[b, a]).unwrap(), vec!['b', 'a']);
        let c = nodes.push('c', &[a]);
        assert_eq!(c, GraphNode(2));
        assert_eq!(nodes.leaves(), vec!['b', 'c']);
        #[cfg(feature = "cuda")]
        {
            let shape = nodes.shape();
            assert_eq!(&*shape.leaves, &[1, 2]);
            assert_eq!(
                shape
                    .dependencies
                    .iter()
                    .map(|d| d.to_vec())
                    .collect::<Vec<_>>(),
                [vec![], vec![], vec![0]]
            );
        }
        let error = nodes.dependencies(&[GraphNode(3)]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("graph node 3 depends on node 3 that does not precede it"),
            "{error}"
        );
    }

    #[test]
    fn spans_end_at_the_synchronize_and_never_start_before_zero() {
        let span = span_ending_at(10_000_000, 2.5);
        assert_eq!(
            span,
            DeviceSpan {
                start_ns: 7_500_000,
                end_ns: 10_000_000
            }
        );
        assert_eq!(span_ending_at(1_000, 1.0).start_ns, 0);
        assert_eq!(
            span_ending_at(1_000, -1.0).start_ns,
            1_000,
            "a negative elapsed time is 0"
        );
    }
}
