//! Buffers, byte-range views, host access and cross-engine visibility.
//!
//! A [`Buffer`] is allocated by the runtime with a [`Placement`]. Every placement has a GPU
//! allocation; host-visible and NPU-shared buffers also have a host pointer (pinned memory,
//! GPU-mapped), and NPU-shared buffers an NPU buffer object in a memory-bank group.
//!
//! Host access and device use never race: while a submission that uses a range is in flight,
//! a conflicting host mapping answers [`Error::Busy`]; while a host mapping is live, a
//! conflicting `submit` answers `Busy`. Conflicts are exact byte ranges in pinned memory,
//! and any bytes of an NPU buffer object, whose syncs move the whole object (below). A
//! buffer written by a region that failed with an uncertain extent is *poisoned*, as a whole
//! (the seed keeps poison per buffer: an uncertain failure does not say which bytes it
//! reached): every later use of any of its bytes answers [`Error::DeviceLost`] naming the
//! cause ("poisoned by submission S region R"), including uses of bytes the failed region
//! never declared.
//!
//! Visibility is per buffer, as the seed's `wrote(engine)` after each writer: the last writer
//! recorded must be the last that wrote, so a host write mapping records the host's write
//! before it goes, while it still refuses every conflicting submit (after, a device writer
//! accepted in between could record its write first and be overwritten by the host's). For
//! the same reason a host access of an NPU buffer object conflicts with a device use of any of
//! its bytes, as the seed's `host_conflict(access)`, which takes no range: the host's and an
//! engine's writes to disjoint bytes at the same time cannot both survive one whole-object
//! sync.

pub use crate::access::Access;
use crate::context::Context;
use crate::sync::lock;
#[cfg(test)]
use crate::trace::Captured;
use crate::trace::Captures;
use crate::{Engine, Error, Result};
use std::ops::{Deref, DerefMut, Range};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Device memory with no host pointer; host helpers stage through the backend.
    GpuLocal,
    /// Pinned host memory mapped for the GPU.
    HostVisible,
    /// Host memory mapped for the GPU and imported as an NPU buffer object in memory-bank
    /// group `group` (XRT's `kernel.group_id(arg)`).
    NpuShared {
        /// The NPU memory-bank group the buffer object is allocated in.
        group: u32,
    },
}

impl Placement {
    /// Whether buffers of this placement have a host pointer.
    pub fn host_visible(self) -> bool {
        !matches!(self, Placement::GpuLocal)
    }
}

fn engine_bit(engine: Engine) -> u8 {
    1 << engine as u8
}

/// [`Visibility`] as one byte: the visible bits, and the last writer plus one above them
/// (0: none).
fn visibility_word(visibility: &Visibility) -> u8 {
    visibility.visible | visibility.last_writer.map_or(0, |e| (e as u8 + 1) << 3)
}

/// Which engines see a buffer's latest contents.
#[derive(Debug)]
pub(crate) struct Visibility {
    last_writer: Option<Engine>,
    visible: u8,
}

impl Visibility {
    pub fn new() -> Self {
        Self {
            last_writer: None,
            visible: 0b111,
        }
    }
    /// Record a write by `engine`: only it sees the new contents.
    pub fn wrote(&mut self, engine: Engine) {
        self.last_writer = Some(engine);
        self.visible = engine_bit(engine);
    }
}

#[derive(Debug)]
struct Mapping {
    token: u64,
    range: Range<usize>,
    access: Access,
}

#[derive(Debug, Default)]
pub(crate) struct HostState {
    pub poison: Option<String>,
    mappings: Vec<Mapping>,
}

/// Where a buffer's device uses are: the submissions in flight of the runtime that made it
/// (its scheduler, whose in-flight list is the registration: a submission's graph names the
/// byte ranges it uses). A host access is checked against them and registered while holding
/// their lock, which `submit` holds too while it checks the buffer's host mappings: neither
/// can slip in after the other's check. Kept here, not in each buffer, so that a round trip
/// registers and releases nothing per buffer (issue 16: two lock pairs fewer between a
/// device's completion and the next launch).
pub(crate) trait DeviceUses: Send + Sync {
    /// Runs `register` under the lock that orders submissions (a deferred retirement
    /// resolved first), once no submission in flight uses bytes of `range` of buffer
    /// `buffer` in a way that conflicts with `access`.
    ///
    /// # Errors
    /// [`Error::Busy`] naming the conflicting submission; else `register`'s.
    fn host_access(
        &self,
        buffer: u64,
        range: &Range<usize>,
        access: Access,
        register: &mut dyn FnMut() -> Result<u64>,
    ) -> Result<u64>;
}

/// Whether two byte ranges share a byte (an empty range shares none).
pub(crate) fn intersects(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end && a.start < a.end && b.start < b.end
}

pub(crate) struct Storage {
    pub id: u64,
    /// The runtime's devices, counters and trace.
    pub context: Arc<Context>,
    pub len: usize,
    pub placement: Placement,
    pub allocation: crate::gpu::Allocation,
    /// Host pointer, null for GPU-local buffers (the copy-lane choice reads this).
    pub pointer: *mut u8,
    pub bo: Option<crate::npu::Bo>,
    pub npu_device: Option<u32>,
    pub group: Option<u32>,
    pub host: Mutex<HostState>,
    /// The runtime's in-flight submissions ([`DeviceUses`]); dangling once the runtime is
    /// gone (then nothing is in flight).
    pub device_uses: std::sync::Weak<dyn DeviceUses>,
    /// Set with `host.poison` (under that lock), so that the check before every region runs
    /// needs no lock while nothing is poisoned.
    pub poisoned: AtomicBool,
    pub visibility: Mutex<Visibility>,
    /// `visibility` as [`visibility_word`] writes it, stored under that lock: a region that
    /// finds it already as it needs it (the steady state of a graph run again and again)
    /// takes no lock.
    pub visibility_seen: AtomicU8,
    /// Live host mappings (`host.mappings.len()`, stored under that lock): a submit checks
    /// a buffer without mappings for conflicts without the lock.
    pub mapped: AtomicUsize,
    pub captures: Captures,
    /// The process's fork count when the buffer was allocated ([`crate::sync::forks`]): in a
    /// child forked since, the buffer belongs to its parent's runtime, whose workers, trace
    /// and in-flight work are not in the child.
    pub forks: u64,
}

// SAFETY: `pointer` is a host mapping owned by `allocation`, which is Send + Sync; every
// access through it is guarded by the host-mapping and in-flight bookkeeping in `host`.
unsafe impl Send for Storage {}
// SAFETY: as above.
unsafe impl Sync for Storage {}

static MAPPING_TOKENS: AtomicU64 = AtomicU64::new(1);

/// Test hooks, run on the thread that ends a host access.
#[cfg(test)]
pub(crate) mod test_hooks {
    use std::cell::Cell;

    type Hook = Box<dyn FnOnce()>;

    thread_local! {
        /// Run once, right after a host access's mapping is removed.
        pub(crate) static AFTER_UNMAP: Cell<Option<Hook>> = const { Cell::new(None) };
    }
}

impl Storage {
    /// `DeviceLost` naming the cause when poisoned. Checked per use at every submit and
    /// before every region: the unpoisoned answer is one inlined load.
    #[inline]
    pub fn poisoned(&self) -> Result<()> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        self.poison_error()
    }

    #[inline(never)]
    fn poison_error(&self) -> Result<()> {
        match &lock(&self.host).poison {
            Some(message) => Err(Error::DeviceLost(format!(
                "buffer {} is {message}",
                self.id
            ))),
            None => Ok(()),
        }
    }

    pub fn poison(&self, message: &str) {
        let mut host = lock(&self.host);
        if host.poison.is_none() {
            host.poison = Some(message.to_string());
            self.poisoned.store(true, Ordering::Release);
        }
    }

    /// `Busy` if a live host mapping conflicts with a device use of `range` (of any byte of
    /// an NPU buffer object: [`Storage::device_range`]). Called by `submit` under the
    /// scheduler lock, under which every mapping is made ([`DeviceUses`]): no lock while the
    /// buffer has no mapping.
    pub fn host_conflict(&self, range: &Range<usize>, access: Access) -> Result<()> {
        if self.mapped.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.mapping_conflict(&lock(&self.host), &self.device_range(range), access)
    }

    /// The bytes a host access and a device use of `range` are checked against each other
    /// on: `range` itself, except for an NPU buffer object, where it is the whole buffer.
    /// Visibility is per buffer, as in the seed (`make_visible(engine)` and `wrote(engine)`
    /// of the whole storage before and after each region, and `host_conflict(access)` with
    /// no range): one sync of the whole object to or from the device cannot keep both the
    /// host's and an engine's writes to disjoint bytes made at the same time (whichever side
    /// recorded its write last would have the other's bytes overwritten or left unsynced).
    /// Memory without syncs (pinned host memory, mapped by the GPU) keeps exact byte ranges.
    fn device_range(&self, range: &Range<usize>) -> Range<usize> {
        if self.bo.is_some() {
            0..self.len
        } else {
            range.clone()
        }
    }

    fn mapping_conflict(
        &self,
        host: &HostState,
        range: &Range<usize>,
        access: Access,
    ) -> Result<()> {
        for mapping in &host.mappings {
            if intersects(&mapping.range, range) && mapping.access.conflicts_with(access) {
                return Err(Error::Busy(format!(
                    "buffer {} bytes {}..{} is mapped for host {:?} access",
                    self.id, mapping.range.start, mapping.range.end, mapping.access
                )));
            }
        }
        Ok(())
    }

    /// Make the latest contents visible to `engine`, synchronizing an NPU buffer object when
    /// the last writer was on the other side of it.
    pub fn make_visible(&self, engine: Engine) -> Result<()> {
        // Conflicting regions are ordered by the scheduler, so no writer runs beside this
        // check: a set bit stays set until this region ends.
        if self.visibility_seen.load(Ordering::Acquire) & engine_bit(engine) != 0 {
            return Ok(());
        }
        let mut visibility = lock(&self.visibility);
        if visibility.visible & engine_bit(engine) != 0 {
            return Ok(());
        }
        if let Some(bo) = &self.bo {
            // XRT: `bo.sync(XCL_BO_SYNC_BO_TO_DEVICE)` before the NPU reads host-side
            // writes, `XCL_BO_SYNC_BO_FROM_DEVICE` before others read NPU writes. Between
            // the host and a GPU, mapped pinned memory needs no explicit sync.
            let synced = if engine == Engine::Npu {
                bo.sync_to_device()?;
                true
            } else if visibility.last_writer == Some(Engine::Npu) {
                bo.sync_from_device()?;
                true
            } else {
                false
            };
            if synced {
                self.context
                    .counters
                    .visibility_syncs
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        visibility.visible |= engine_bit(engine);
        self.visibility_seen
            .store(visibility_word(&visibility), Ordering::Release);
        Ok(())
    }

    /// Records a write by `engine` (only it sees the new contents); no lock when it already
    /// was the last writer and the only engine that sees them.
    pub fn wrote(&self, engine: Engine) {
        let only = Visibility {
            last_writer: Some(engine),
            visible: engine_bit(engine),
        };
        if self.visibility_seen.load(Ordering::Acquire) == visibility_word(&only) {
            return;
        }
        let mut visibility = lock(&self.visibility);
        visibility.wrote(engine);
        self.visibility_seen
            .store(visibility_word(&visibility), Ordering::Release);
    }

    /// In a child forked since the buffer was allocated: refused, as its runtime's `submit` is
    /// (a host access waits for in-flight work and capture fences the parent's threads would
    /// end, and none is in the child: it waited for ever; a break-it pass).
    fn usable_here(&self) -> Result<()> {
        if crate::sync::forks() != self.forks {
            return Err(crate::sync::forked_error());
        }
        Ok(())
    }

    fn map(&self, range: Range<usize>, access: Access) -> Result<(u64, *mut u8)> {
        self.usable_here()?;
        if self.pointer.is_null() {
            return Err(Error::Unsupported(format!(
                "buffer {} is GPU-local and has no host mapping; use read/write",
                self.id
            )));
        }
        self.check_range(&range)?;
        let token = self.register_host_access(range.clone(), access)?;
        if access.writes() {
            // Only now that the mapping is registered: no submission writing the mapped bytes
            // can be accepted any more, and every earlier one has ended, so the fences of
            // their digests have all been taken. Waiting before the check let a submission's
            // region take a fence and end in between, and the host then overwrote bytes
            // still being hashed.
            self.wait_for_captures();
        }
        if access.reads()
            && let Err(error) = self.make_visible(Engine::Host)
        {
            self.unmap(token, false);
            return Err(error);
        }
        // SAFETY: range checked against the allocation length above.
        Ok((token, unsafe { self.pointer.add(range.start) }))
    }

    /// Waits until no deferred capture reads this buffer (its capture fence); a traced wait
    /// long enough to matter is recorded on the calling thread ([`crate::trace::Hook::host_fence_waited`]):
    /// the program's host access took that much longer because of the trace.
    fn wait_for_captures(&self) {
        if !self.captures.busy() {
            return;
        }
        let hook = self.context.tracer.hook();
        let start_ns = hook.as_ref().map(|hook| hook.now_ns());
        self.captures.wait();
        if let (Some(hook), Some(start_ns)) = (hook, start_ns) {
            hook.host_fence_waited(start_ns);
        }
    }

    /// Registers a host access of `range` as a mapping (its token), once no submission in
    /// flight ([`DeviceUses`]) and no live mapping conflicts with it; `DeviceLost` on a
    /// poisoned buffer.
    fn register_host_access(&self, range: Range<usize>, access: Access) -> Result<u64> {
        // Poison first, as before any conflict: a poisoned buffer answers `DeviceLost`.
        self.poisoned()?;
        let mut register = || {
            let mut host = lock(&self.host);
            if let Some(message) = &host.poison {
                return Err(Error::DeviceLost(format!(
                    "buffer {} is {message}",
                    self.id
                )));
            }
            self.check_host_access(&host, &range, access)?;
            let token = MAPPING_TOKENS.fetch_add(1, Ordering::Relaxed);
            host.mappings.push(Mapping {
                token,
                range: range.clone(),
                access,
            });
            self.mapped.store(host.mappings.len(), Ordering::Release);
            Ok(token)
        };
        match self.device_uses.upgrade() {
            Some(uses) => {
                let device_range = self.device_range(&range);
                uses.host_access(self.id, &device_range, access, &mut register)
            }
            None => register(),
        }
    }

    fn check_host_access(
        &self,
        host: &HostState,
        range: &Range<usize>,
        access: Access,
    ) -> Result<()> {
        for mapping in &host.mappings {
            if intersects(&mapping.range, range) && mapping.access.conflicts_with(access) {
                return Err(Error::Busy(format!(
                    "buffer {} bytes {}..{} is already mapped for host {:?} access",
                    self.id, mapping.range.start, mapping.range.end, mapping.access
                )));
            }
        }
        Ok(())
    }

    /// Ends a host access; `wrote`: the host wrote, so it becomes the last writer. That is
    /// recorded *before* the mapping goes, while it still refuses every conflicting submit:
    /// recorded after, a device region accepted in between could run and record its own
    /// write first, which the host's late record then overwrote (an NPU write left unsynced).
    fn unmap(&self, token: u64, wrote: bool) {
        if wrote {
            self.wrote(Engine::Host);
        }
        let mut host = lock(&self.host);
        host.mappings.retain(|m| m.token != token);
        self.mapped.store(host.mappings.len(), Ordering::Release);
        drop(host);
        #[cfg(test)]
        if let Some(hook) = test_hooks::AFTER_UNMAP.take() {
            hook();
        }
    }

    /// Records a host write of `data` at `offset` in the trace: `data` is the caller's for a
    /// GPU-local buffer, else this buffer's own host mapping (captured later, fenced).
    ///
    /// `known`: the xxh3 of `data`, when it was taken as the bytes were copied in.
    fn traced_write(&self, offset: usize, data: &[u8], known: Option<u64>) {
        // Outside a capture range a later range snapshots the bytes if it reads them.
        let Some(hook) = self.context.tracer.open_hook() else {
            return;
        };
        let end = offset.saturating_add(data.len());
        self.context
            .tracer
            .host_wrote(self.id, offset as u64..end as u64);
        if !self.context.tracer.records_host_writes() {
            return;
        }
        let mapped = (!self.pointer.is_null()).then_some(&self.captures);
        // SAFETY: a host-mapped buffer's `data` is its mapping at `offset` (`HostWrite`'s
        // bytes): this storage's drop waits for the capture fences before the allocation is
        // freed, and every writer of the buffer (`Region::run`, write mappings) waits for them.
        unsafe { hook.host_write(self.id, offset, data, mapped, known) }
    }

    fn check_range(&self, range: &Range<usize>) -> Result<()> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::OutOfBounds {
                buffer: self.id,
                range: range.clone(),
                len_bytes: self.len,
            });
        }
        Ok(())
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if self.usable_here().is_err() {
            // A capture pending at the fork never ends in the child: the allocation is let go
            // without a wait (the parent frees its own), and nothing is recorded.
            return;
        }
        // The allocation is freed after this: no capture may still be reading it.
        self.wait_for_captures();
        self.context.tracer.buffer_gone(self.id);
        if let Some(hook) = self.context.tracer.hook() {
            hook.record(hrx_capture::schema::Record::BufferDropped(
                hrx_capture::schema::BufferDropped {
                    runtime: hook.runtime,
                    buffer: hrx_capture::schema::BufferId(self.id),
                    time_ns: hook.now_ns(),
                },
            ));
        }
    }
}

/// A runtime-allocated buffer. Cloning shares the allocation.
#[derive(Clone)]
pub struct Buffer {
    pub(crate) storage: Arc<Storage>,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("id", &self.storage.id)
            .field("len_bytes", &self.storage.len)
            .field("placement", &self.storage.placement)
            .finish()
    }
}

impl Buffer {
    /// Process-unique id (the trace and error messages use it).
    pub fn id(&self) -> u64 {
        self.storage.id
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.storage.len
    }
    /// Whether the buffer has zero bytes.
    pub fn is_empty(&self) -> bool {
        self.storage.len == 0
    }
    /// Where the memory lives.
    pub fn placement(&self) -> Placement {
        self.storage.placement
    }
    /// The device address of the allocation's first byte.
    pub fn device_address(&self) -> u64 {
        self.storage.allocation.address()
    }

    /// A view of `range` (bytes).
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] when the range is reversed or exceeds the buffer.
    pub fn view(&self, range: Range<usize>) -> Result<BufferView> {
        self.storage.check_range(&range)?;
        Ok(BufferView {
            buffer: self.clone(),
            offset: range.start,
            len: range.end - range.start,
        })
    }

    /// A view of the whole buffer.
    pub fn whole(&self) -> BufferView {
        BufferView {
            buffer: self.clone(),
            offset: 0,
            len: self.storage.len,
        }
    }

    /// The poison message if a failed region left this buffer undefined.
    pub fn poisoned(&self) -> Option<String> {
        lock(&self.storage.host).poison.clone()
    }

    /// Map `range` for host reading.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for GPU-local buffers, and for every buffer in a child process
    /// forked after it was allocated (its runtime's work is not in the child); [`Error::Busy`]
    /// while an in-flight submission or a host write mapping writes an intersecting range
    /// (of an NPU-shared buffer, any of its bytes: see the module docs);
    /// [`Error::DeviceLost`] when poisoned; [`Error::OutOfBounds`].
    pub fn map_read(&self, range: Range<usize>) -> Result<HostRead<'_>> {
        let len = range.len();
        let (token, pointer) = self.storage.map(range, Access::Read)?;
        // SAFETY: the mapping is registered: no device use or host write of these bytes
        // can start until it is dropped.
        let bytes = unsafe { std::slice::from_raw_parts(pointer, len) };
        Ok(HostRead {
            buffer: self,
            token,
            bytes,
        })
    }

    /// Map `range` for host writing; on drop the host becomes the last writer.
    ///
    /// # Errors
    /// As [`Buffer::map_read`], with any intersecting in-flight use or mapping.
    pub fn map_write(&self, range: Range<usize>) -> Result<HostWrite<'_>> {
        let len = range.len();
        let (token, pointer) = self.storage.map(range, Access::ReadWrite)?;
        // SAFETY: the exclusive mapping is registered; nothing else touches these bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(pointer, len) };
        Ok(HostWrite {
            buffer: self,
            token,
            bytes,
            known: None,
        })
    }

    /// Copy `data` into the buffer at byte `offset` (staged through the backend for
    /// GPU-local buffers). Into a host-visible buffer on CUDA or HIP, on x86-64, 64 KiB or
    /// more are written with non-temporal stores, past the CPU's caches: the GPU then reads
    /// them from memory, which on the H200 took a 1280x800 frame's upload from 76.4-80.1 µs
    /// to 62.1-65.2 µs (BENCHMARKS.md, session 26). A write through [`Buffer::map_write`]
    /// is the caller's own stores.
    ///
    /// # Errors
    /// As [`Buffer::map_write`], except that GPU-local buffers are supported.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        let range = offset..offset.saturating_add(data.len());
        if self.storage.pointer.is_null() {
            let token = self.register_staging(range.clone(), Access::Write)?;
            let view = self.view(range.clone());
            let result = view.and_then(|view| {
                let gpu = view.gpu()?;
                self.storage.context.device.write(&gpu, data)
            });
            self.storage.unmap(token, result.is_ok());
            result?;
            self.storage.traced_write(offset, data, None);
        } else {
            // Into a host mapping; traced when the mapping drops.
            let mut mapping = self.map_write(range.clone())?;
            if data.len() >= crate::dma_memory::STREAMING_MIN_BYTES
                && self.storage.allocation.read_by_dma()
            {
                // Past the CPU's caches, so that the copy engine reads it from memory (module
                // `dma_memory`). Not hashed beside the copy: on an H100 host that made the
                // traced GPU pipeline dearer (`crate::trace::hash_beside`).
                crate::dma_memory::copy_streaming(&mut mapping, data);
            } else if self.storage.context.tracer.hashes_beside(data.len()) {
                let hook = self.storage.context.tracer.hook();
                let known = crate::trace::hash_beside(&mut mapping, data, hook.as_ref());
                mapping.known = known;
            } else {
                mapping.copy_from_slice(data);
            }
        }
        Ok(())
    }

    /// Copy the bytes at `offset` into `out`.
    ///
    /// # Errors
    /// As [`Buffer::map_read`], except that GPU-local buffers are supported.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let range = offset..offset.saturating_add(out.len());
        if self.storage.pointer.is_null() {
            let token = self.register_staging(range.clone(), Access::Read)?;
            let result = self.view(range).and_then(|view| {
                self.storage.make_visible(Engine::Host)?;
                self.storage.context.device.read(&view.gpu()?, out)
            });
            self.storage.unmap(token, false);
            result
        } else {
            out.copy_from_slice(&self.map_read(range)?);
            Ok(())
        }
    }

    /// Read the whole buffer into a new vector.
    ///
    /// # Errors
    /// As [`Buffer::read`].
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = vec![0; self.len()];
        self.read(0, &mut out)?;
        Ok(out)
    }

    fn register_staging(&self, range: Range<usize>, access: Access) -> Result<u64> {
        self.storage.usable_here()?;
        self.storage.check_range(&range)?;
        self.storage.register_host_access(range, access)
    }

    /// Make the latest contents visible to `engine` (an NPU buffer-object sync where needed).
    ///
    /// # Errors
    /// A backend error from the sync.
    pub fn make_visible(&self, engine: Engine) -> Result<()> {
        self.storage.make_visible(engine)
    }

    /// Record that `engine` wrote the buffer: other engines must `make_visible` first.
    pub fn wrote(&self, engine: Engine) {
        self.storage.wrote(engine);
    }

    /// Whether `engine` sees the latest contents without a sync.
    pub fn visible_to(&self, engine: Engine) -> bool {
        lock(&self.storage.visibility).visible & engine_bit(engine) != 0
    }
}

/// A live host read mapping; dereferences to the mapped bytes.
pub struct HostRead<'a> {
    buffer: &'a Buffer,
    token: u64,
    bytes: &'a [u8],
}

impl Deref for HostRead<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl Drop for HostRead<'_> {
    fn drop(&mut self) {
        self.buffer.storage.unmap(self.token, false);
    }
}

/// A live host write mapping; dereferences to the mapped bytes.
pub struct HostWrite<'a> {
    buffer: &'a Buffer,
    token: u64,
    bytes: &'a mut [u8],
    /// The xxh3 of `bytes`, taken while [`Buffer::write`] copied them in (for the trace).
    known: Option<u64>,
}

impl Deref for HostWrite<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl DerefMut for HostWrite<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.bytes
    }
}

impl Drop for HostWrite<'_> {
    fn drop(&mut self) {
        let storage = &self.buffer.storage;
        // The mapping's address minus the buffer's host pointer is its offset.
        let offset = self.bytes.as_ptr() as usize - storage.pointer as usize;
        storage.traced_write(offset, self.bytes, self.known);
        storage.unmap(self.token, true);
    }
}

/// A byte range of a buffer: (buffer, offset, length).
#[derive(Clone)]
pub struct BufferView {
    pub(crate) buffer: Buffer,
    offset: usize,
    len: usize,
}

impl std::fmt::Debug for BufferView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "buffer {} bytes {}..{}",
            self.buffer.id(),
            self.offset,
            self.offset + self.len
        )
    }
}

impl BufferView {
    /// The viewed buffer.
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }
    /// Byte offset into the buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The byte range within the buffer.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len
    }
    /// Whether both views are of the same buffer and share at least one byte.
    pub fn overlaps(&self, other: &BufferView) -> bool {
        Arc::ptr_eq(&self.buffer.storage, &other.buffer.storage)
            && intersects(&self.range(), &other.range())
    }
    /// Whether both views can touch the same memory: the same allocation and intersecting
    /// device address ranges. Hazards use this test.
    pub fn conflicts(&self, other: &BufferView) -> bool {
        let a = &self.buffer.storage.allocation;
        let b = &other.buffer.storage.allocation;
        a.same_memory(b) && {
            let base_a = a.address() as usize;
            let base_b = b.address() as usize;
            intersects(
                &(base_a + self.offset..base_a + self.offset + self.len),
                &(base_b + other.offset..base_b + other.offset + other.len),
            )
        }
    }
    /// The GPU view of these bytes.
    ///
    /// # Errors
    /// None today: every placement has a GPU allocation. The `Result` is the seed's, whose
    /// placements need not all be GPU-visible. Poison is not checked here but where the
    /// bytes are used: at `submit` and before every region runs.
    pub fn gpu(&self) -> Result<crate::gpu::View<'_>> {
        Ok(crate::gpu::View::new(
            &self.buffer.storage.allocation,
            self.offset,
            self.len,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Placement, Runtime, RuntimeOptions};
    use hrx_capture::schema::{Record, RuntimeId};
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    /// The seed tracks visibility per buffer through each writer's `wrote(engine)`
    /// (`shared/seed/graph.rs` 583-594): the last writer recorded must be the last that
    /// wrote. A host write mapping records the host's write before it goes: an NPU region
    /// accepted once it went and run to its end must stay the last writer.
    #[test]
    fn a_host_write_is_recorded_before_its_mapping_lets_device_writers_in() {
        use super::test_hooks::AFTER_UNMAP;
        use crate::Engine;
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let (_input, output, run) = crate::execution::test_util::npu_threshold(&rt);
        // Between the mapping's removal and the end of `unmap`, the NPU writes `output`.
        AFTER_UNMAP.set(Some(Box::new(move || {
            run.submit().unwrap().wait().unwrap();
        })));
        output.map_write(0..8).unwrap()[0] = 1;
        assert!(AFTER_UNMAP.take().is_none(), "the hook ran");
        assert!(
            !output.visible_to(Engine::Host),
            "the NPU wrote last: the host must sync its bytes back before reading"
        );
        let syncs = rt.counters().visibility_syncs;
        assert_eq!(output.to_vec().unwrap(), vec![255; 64]);
        assert_eq!(rt.counters().visibility_syncs, syncs + 1);
    }

    /// A sink whose writes wait while its gate is shut, saying when one waits: a trace
    /// writer stalled on a slow disk.
    struct GatedSink {
        bytes: hrx_capture::MemorySink,
        gate: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
        stalled: std::sync::mpsc::SyncSender<()>,
    }

    impl hrx_capture::Sink for GatedSink {
        fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            let (shut, opened) = &*self.gate;
            let mut guard = shut.lock().unwrap();
            if *guard {
                let _ = self.stalled.try_send(());
            }
            while *guard {
                guard = opened.wait(guard).unwrap();
            }
            drop(guard);
            self.bytes.write_all(bytes)
        }
    }

    /// A large host write's bytes are copied aside once hashed, so the program's next write
    /// into the buffer does not wait for the trace writer to store them: with the writer
    /// stalled on its sink, a second write goes through (it waited at the capture fence until
    /// the writer had stored the first, for ever here), and the trace holds both writes'
    /// bytes as written.
    #[test]
    fn a_host_write_does_not_wait_for_the_writer_to_store_the_one_before() {
        let bytes = hrx_capture::MemorySink::new();
        let gate = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let (stalled, stall) = std::sync::mpsc::sync_channel(1);
        let sink = GatedSink {
            bytes: bytes.clone(),
            gate: gate.clone(),
            stalled,
        };
        let recorder =
            hrx_capture::Recorder::with_sink(sink, hrx_capture::RecorderOptions::default())
                .unwrap();
        let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        let len = 1 << 20;
        let buffer = rt.buffer(len, Placement::HostVisible).unwrap();
        let open = |gate: &(std::sync::Mutex<bool>, std::sync::Condvar)| {
            *gate.0.lock().unwrap() = false;
            gate.1.notify_all();
        };
        // The writing thread records once before the stall: a thread's first record takes
        // the trace file's lock to get its buffer (not what this test is about).
        let (ready, is_ready) = std::sync::mpsc::channel();
        let (go, goes) = std::sync::mpsc::channel::<()>();
        let (wrote, written) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            buffer.write(0, &[0; 16]).unwrap();
            ready.send(()).unwrap();
            goes.recv().unwrap();
            buffer.write(0, &vec![1; len]).unwrap();
            buffer.write(0, &vec![2; len]).unwrap();
            let _ = wrote.send(());
            buffer
        });
        is_ready.recv().unwrap();
        // Stall the writer: a flush blocks in the sink, holding the trace file.
        *gate.0.lock().unwrap() = true;
        let flusher = {
            let recorder = recorder.clone();
            std::thread::spawn(move || recorder.flush())
        };
        stall.recv().unwrap();
        go.send(()).unwrap();
        // A hang (the second write at the fence) fails the test rather than the run.
        let through = written.recv_timeout(Duration::from_secs(60));
        open(&gate);
        through.expect("the second write waited for the stalled trace writer");
        let buffer = writer.join().unwrap();
        flusher.join().unwrap().unwrap();
        drop((buffer, rt));
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&bytes.contents()).unwrap();
        let hashes = host_write_hashes(&trace);
        let expected = [xxhash_rust::xxh3::xxh3_64(&[0; 16])]
            .into_iter()
            .chain([1u8, 2].map(|b| xxhash_rust::xxh3::xxh3_64(&vec![b; len])))
            .collect::<Vec<_>>();
        assert_eq!(hashes, expected, "each write's own bytes");
        let blobs = trace.blobs();
        for &hash in &expected[1..] {
            let blob = blobs[&hrx_capture::schema::BlobHash(hash)];
            assert_eq!(xxhash_rust::xxh3::xxh3_64(blob), hash, "the bytes stored");
        }
    }

    /// A large host write's hash waits until a region that reads the buffer has run (it read
    /// the bytes while the upload's copy engine did, BENCHMARKS.md sessions 26 and 40), then
    /// runs: the trace holds the write's bytes under their hash. The trace writer, which
    /// starts a parked hash itself at its tick or once it has held the write's record for its
    /// hold limit, is given an hour of each.
    #[test]
    fn a_large_host_writes_hash_waits_for_a_region_that_reads_the_buffer() {
        let sink = hrx_capture::MemorySink::new();
        let options = hrx_capture::RecorderOptions {
            flush_interval: std::time::Duration::from_secs(3600),
            hold_limit: std::time::Duration::from_secs(3600),
            ..hrx_capture::RecorderOptions::default()
        };
        let recorder = hrx_capture::Recorder::with_sink(sink.clone(), options).unwrap();
        let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        let len = 1 << 20;
        let staging = rt.buffer(len, Placement::HostVisible).unwrap();
        let device = rt.buffer(len, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        graph.copy(device.whole(), staging.whole()).unwrap();
        let graph = graph.prepare().unwrap();
        let frame = vec![7u8; len];
        let captures = &staging.storage.captures;
        staging.write(0, &frame).unwrap();
        assert!(captures.parked() && captures.busy(), "hashed at the write");
        graph.submit().unwrap().wait().unwrap();
        assert!(
            !captures.parked(),
            "the upload ran and its hash did not start"
        );
        captures.wait();
        drop((graph, staging, device, rt));
        recorder.close().unwrap();
        assert_one_host_write_stored(&sink, &frame);
    }

    /// A large host write's hash that no region releases (nothing reads the buffer) is
    /// started by the trace writer when it reaches the write's record: a flush returns, and
    /// the trace holds the write's bytes.
    #[test]
    fn a_parked_hash_nothing_releases_is_started_by_the_trace_writer() {
        let (sink, recorder, rt) = traced_sim();
        let len = 1 << 20;
        let staging = rt.buffer(len, Placement::HostVisible).unwrap();
        let frame: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        staging.write(0, &frame).unwrap();
        recorder.flush().unwrap();
        assert!(!staging.storage.captures.parked(), "started by the writer");
        drop((staging, rt));
        recorder.close().unwrap();
        assert_one_host_write_stored(&sink, &frame);
    }

    /// A large host write is hashed as it is copied in (`trace::hash_beside`): contents the
    /// trace holds already are recorded at once, by name, with no capture fence left on the
    /// buffer (the program's next write into it never waits for a hash of the bytes), and
    /// new contents are captured as before. A write streamed past the caches (memory a
    /// device reads by DMA) is not (measured dearer on a GPU host): its hash waits, fenced,
    /// for a region that reads the buffer, every time. Either way the trace names each write
    /// by its bytes' xxh3 and stores each content once.
    #[test]
    fn a_frame_written_again_is_recorded_by_name_without_a_capture_fence() {
        for read_by_dma in [true, false] {
            frame_written_again(read_by_dma);
        }
    }

    fn frame_written_again(read_by_dma: bool) {
        use crate::gpu::sim::test_hooks::READ_BY_DMA;
        // The trace writer starts a parked hash itself at its tick or after its hold limit:
        // an hour of each, so that a descheduled test thread still finds the fence.
        let (sink, recorder, rt) = traced_sim_holding();
        let len = 1 << 20;
        READ_BY_DMA.set(read_by_dma);
        let staging = rt.buffer(len, Placement::HostVisible).unwrap();
        READ_BY_DMA.set(false);
        let streamed = crate::dma_memory::STREAMED.get();
        let frame = |seed: u8| -> Vec<u8> {
            (0..len as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 ^ seed)
                .collect()
        };
        let (a, b) = (frame(1), frame(2));
        let captures = &staging.storage.captures;
        crate::trace::BESIDE_WAITS.set(true);
        staging.write(0, &a).unwrap();
        assert!(captures.busy(), "new contents are captured behind a fence");
        recorder.flush().unwrap();
        captures.wait();
        staging.write(0, &a).unwrap();
        if read_by_dma {
            assert!(
                captures.parked() && captures.busy(),
                "a streamed write's hash waits"
            );
            captures.wait();
            recorder.flush().unwrap();
        } else {
            assert!(
                !captures.busy() && !captures.parked(),
                "a frame the trace holds took a capture fence"
            );
        }
        staging.write(0, &b).unwrap();
        assert!(captures.busy(), "new contents are captured behind a fence");
        crate::trace::BESIDE_WAITS.set(false);
        let streamed = crate::dma_memory::STREAMED.get() - streamed;
        assert_eq!(streamed, if read_by_dma { 3 } else { 0 });
        drop((staging, rt));
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let (ha, hb) = (
            xxhash_rust::xxh3::xxh3_64(&a),
            xxhash_rust::xxh3::xxh3_64(&b),
        );
        assert_eq!(host_write_hashes(&trace), [ha, ha, hb]);
        let blobs = trace.blobs();
        assert_eq!(blobs[&hrx_capture::schema::BlobHash(ha)], &a[..]);
        assert_eq!(blobs[&hrx_capture::schema::BlobHash(hb)], &b[..]);
    }

    /// A large write's wait for its own hash, taken beside its copy by a hashing thread that
    /// was then preempted (slowed here by 30 ms), is capture work inside the program's `write`:
    /// it is recorded as a wait on the recorder on the writing thread, so that `info` says it
    /// and `stats` leaves it out of the program's ranges. Before, nothing recorded it (session
    /// 56's fresh user: 2.76 MB frames written in 1.7-4.4 ms on a loaded host, one 53 µs wait
    /// recorded).
    #[test]
    fn a_writes_wait_for_its_own_hash_is_recorded_as_a_wait_on_the_recorder() {
        use hrx_capture::schema::Record;
        let delay = Duration::from_millis(30);
        let waits = || {
            let (sink, recorder, rt) = traced_sim();
            let staging = rt.buffer(1 << 20, Placement::HostVisible).unwrap();
            let frame: Vec<u8> = (0..1u32 << 20).map(|i| (i >> 3) as u8).collect();
            crate::trace::BESIDE_WAITS.set(true);
            crate::trace::BESIDE_HASH_DELAY.set(delay);
            staging.write(0, &frame).unwrap();
            crate::trace::BESIDE_HASH_DELAY.set(Duration::ZERO);
            crate::trace::BESIDE_WAITS.set(false);
            drop((staging, rt));
            recorder.close().unwrap();
            let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
            let main = std::thread::current().name().unwrap_or("").to_owned();
            (trace.records.iter())
                .filter_map(|r| match r {
                    Record::RecorderWait(w) if w.thread_name == main => Some(w.end_ns - w.start_ns),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        // The hash sleeps once its writer has begun to wait for it: the writer waits at least
        // that long, whatever the machine's load.
        let slow = waits();
        assert!(
            slow.iter()
                .any(|&ns| ns >= delay.as_nanos() as u64 * 9 / 10),
            "the write's wait for its hash: {slow:?}"
        );
    }

    /// A software-device runtime recording into a memory sink, with the recorder's defaults.
    fn traced_sim() -> (hrx_capture::MemorySink, hrx_capture::Recorder, Runtime) {
        traced_sim_with(hrx_capture::RecorderOptions::default())
    }

    /// As [`traced_sim`], whose trace writer holds a parked hash until a flush (its tick and
    /// hold limit an hour).
    fn traced_sim_holding() -> (hrx_capture::MemorySink, hrx_capture::Recorder, Runtime) {
        traced_sim_with(hrx_capture::RecorderOptions {
            flush_interval: Duration::from_secs(3600),
            hold_limit: Duration::from_secs(3600),
            ..hrx_capture::RecorderOptions::default()
        })
    }

    fn traced_sim_with(
        options: hrx_capture::RecorderOptions,
    ) -> (hrx_capture::MemorySink, hrx_capture::Recorder, Runtime) {
        let sink = hrx_capture::MemorySink::new();
        let recorder = hrx_capture::Recorder::with_sink(sink.clone(), options).unwrap();
        let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
        (sink, recorder, rt)
    }

    /// `len` bytes of memory mapped twice (a `memfd`): what one mapping holds, another thread
    /// can change through the other, as a frame in memory shared with another process.
    fn shared_twice(len: usize) -> (*mut u8, *mut u8) {
        // SAFETY: plain libc calls; the mappings are never unmapped (the test's process ends).
        unsafe {
            let fd = libc::memfd_create(c"hrx-test".as_ptr(), 0);
            assert!(fd >= 0);
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
            let map = || {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                p.cast::<u8>()
            };
            let both = (map(), map());
            libc::close(fd);
            both
        }
    }

    /// A host write whose source another thread changes meanwhile (memory shared with a
    /// producer) is recorded as the bytes the buffer then holds, and every blob the trace
    /// stores hashes to its name. The hash taken beside the copy is of the buffer, not of the
    /// source: hashed from the source, 57 of 100 writes were recorded as contents the buffer
    /// did not hold, and a new frame's blob was stored under another frame's name, so that
    /// readers skipped it and later writes of that frame named a blob the trace lacked (a
    /// helper's break-it pass, session 49).
    #[test]
    fn a_write_whose_source_changes_is_recorded_as_what_the_buffer_holds() {
        use std::sync::atomic::AtomicBool;
        use xxhash_rust::xxh3::xxh3_64;
        let len: usize = 1 << 20;
        let k = len / 2;
        let (a, b) = shared_twice(len);
        let x: Vec<u8> = (0..len as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let mut y = x.clone();
        y[k] ^= 1;
        // SAFETY: `a` maps `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(x.as_ptr(), a, len) };
        let (sink, recorder, rt) = traced_sim();
        let staging = rt.buffer(len, Placement::HostVisible).unwrap();
        crate::trace::BESIDE_WAITS.set(true);
        // `x` stored: a later write of it is recorded by name; `y` is new to the trace.
        staging.write(0, &x).unwrap();
        recorder.flush().unwrap();
        staging.storage.captures.wait();
        let stop = AtomicBool::new(false);
        let b = b as usize;
        let held: Vec<u64> = std::thread::scope(|scope| {
            scope.spawn(|| {
                let p = (b + k) as *mut u8;
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: within the second mapping.
                    unsafe {
                        std::ptr::write_volatile(p, x[k]);
                        std::ptr::write_volatile(p, y[k]);
                    }
                }
            });
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _stop = Stop(&stop);
            (0..40)
                .map(|round| {
                    // SAFETY: `a` maps `len` bytes (the other mapping changes one of them).
                    let source = unsafe { std::slice::from_raw_parts(a.cast_const(), len) };
                    staging.write(0, source).unwrap();
                    if round % 4 == 0 {
                        // New contents stored now: the next writes of them go by name.
                        recorder.flush().unwrap();
                        staging.storage.captures.wait();
                    }
                    xxh3_64(&staging.to_vec().unwrap())
                })
                .collect()
        });
        // A stable `y`, written three times.
        for _ in 0..3 {
            staging.write(0, &y).unwrap();
        }
        crate::trace::BESIDE_WAITS.set(false);
        drop((staging, rt));
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let blobs = trace.blobs();
        for (hash, bytes) in &blobs {
            assert_eq!(xxh3_64(bytes), hash.0, "blob {hash:?} holds other bytes");
        }
        let recorded = host_write_hashes(&trace);
        let wrong = recorded[1..41]
            .iter()
            .zip(&held)
            .filter(|(r, h)| r != h)
            .count();
        assert_eq!(wrong, 0, "{wrong} of 40 writes recorded as other contents");
        for w in &recorded[41..] {
            assert_eq!(blobs[&hrx_capture::schema::BlobHash(*w)], &y[..]);
        }
    }

    /// The hashes of the host writes `trace` records, in its order.
    fn host_write_hashes(trace: &hrx_capture::Trace) -> Vec<u64> {
        trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::HostWrite(w) => Some(w.xxh3),
                _ => None,
            })
            .collect()
    }

    /// The trace in `sink` records one host write, of `frame`, whose bytes it stores.
    fn assert_one_host_write_stored(sink: &hrx_capture::MemorySink, frame: &[u8]) {
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let hash = xxhash_rust::xxh3::xxh3_64(frame);
        assert_eq!(host_write_hashes(&trace), [hash]);
        let blob = trace.blobs()[&hrx_capture::schema::BlobHash(hash)];
        assert_eq!(blob, frame, "the bytes stored");
    }

    /// A host write held at its buffer's capture fence (a capture still reads the bytes) is
    /// recorded as a `RecorderWait` of the runtime on the writing thread, so that the trace
    /// says what it cost the program; it was not recorded at all.
    #[test]
    fn a_host_write_held_at_the_capture_fence_records_the_wait() {
        let (sink, recorder, rt) = traced_sim();
        let runtime = RuntimeId(rt.id());
        let buffer = rt.buffer(4096, Placement::HostVisible).unwrap();
        let storage = buffer.storage.clone();
        // A capture of the buffer's first bytes, as a deferred hash holds one.
        // SAFETY: the bytes lie in the buffer's mapping, which `storage` keeps allocated past
        // the fence; nothing writes them while it lives (the write below waits for it).
        let fence = unsafe {
            super::Captured::new(
                &storage.captures,
                std::slice::from_raw_parts(storage.pointer, 16),
            )
        };
        let releaser = std::thread::spawn(move || {
            // The write has registered its mapping: it is at the fence (or about to be).
            while storage.mapped.load(Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            drop(fence);
        });
        buffer.write(0, &[2; 4096]).unwrap();
        releaser.join().unwrap();
        // The write's own capture has run: the buffer's release does not wait for it.
        recorder.flush().unwrap();
        drop((buffer, rt));
        recorder.close().unwrap();
        let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
        let waits: Vec<_> = trace
            .records
            .iter()
            .filter_map(|r| match r {
                Record::RecorderWait(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(waits.len(), 1, "{waits:?}");
        let wait = waits[0];
        assert_eq!(
            (wait.runtime, wait.submission, wait.region),
            (Some(runtime), None, None)
        );
        assert!(wait.end_ns >= wait.start_ns + 10_000, "{wait:?}");
    }
}
