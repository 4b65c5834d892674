//! The submit stage: [`ExecutableGraph`], a prepared graph, and its submission into one of
//! its bounded, reusable slots; the scheduler ([`super::scheduler`]) then runs and retires it.

use super::completion::Signal;
use super::dependencies::Use;
use super::region::Region;
use super::shared::RuntimeOwner;
use super::types::RegionInfo;
use crate::trace::Tracer;
use crate::{Completion, Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A graph after `prepare`: regions, slots and signals.
pub(crate) struct Prepared {
    pub id: u64,
    pub quarantined: AtomicBool,
    pub runtime: Arc<RuntimeOwner>,
    pub parallel: bool,
    pub regions: Vec<Region>,
    pub uses: Vec<Use>,
    /// Whether each slot's submission is still in flight.
    /// Read and written only under the scheduler lock (atomics only to be shared).
    pub occupied: Box<[AtomicBool]>,
    pub signals: Vec<Arc<Signal>>,
    /// What a capture range's lazy snapshot needs of the graph (empty when untraced).
    pub snapshot: SnapshotUses,
}

/// The bytes a graph reads before writing them and the bytes it writes, worked out once at
/// `prepare` from its operations in build order (the order its hazards keep), for a capture
/// range's lazy snapshot (`crate::trace`).
#[derive(Default)]
pub(crate) struct SnapshotUses {
    /// (buffer id, byte range) read before the graph writes it.
    pub reads: Vec<(u64, std::ops::Range<u64>)>,
    /// The buffer of each of `reads`.
    pub read_buffers: Vec<crate::Buffer>,
    /// (buffer id, byte range) the graph writes.
    pub writes: Vec<(u64, std::ops::Range<u64>)>,
}

impl SnapshotUses {
    /// From the uses of each operation, in build order.
    pub fn of<'a>(operations: impl IntoIterator<Item = &'a [Use]>) -> SnapshotUses {
        use std::collections::BTreeMap;
        let mut written: BTreeMap<u64, crate::trace::RangeSet> = BTreeMap::new();
        let mut out = SnapshotUses::default();
        for uses in operations {
            for u in uses.iter().filter(|u| u.access != crate::Access::Write) {
                let range = u.view.range();
                let range = range.start as u64..range.end as u64;
                let id = u.buffer_id();
                let missing = match written.get(&id) {
                    Some(set) => set.missing(range),
                    None => vec![range],
                };
                for part in missing {
                    out.reads.push((id, part));
                    out.read_buffers.push(u.view.buffer().clone());
                }
            }
            for u in uses.iter().filter(|u| u.access != crate::Access::Read) {
                let range = u.view.range();
                written
                    .entry(u.buffer_id())
                    .or_default()
                    .insert(range.start as u64..range.end as u64);
            }
        }
        out.writes = written
            .into_iter()
            .flat_map(|(id, set)| set.into_ranges().into_iter().map(move |r| (id, r)))
            .collect();
        out
    }
}

impl Prepared {
    /// The runtime's trace.
    pub fn tracer(&self) -> &Tracer {
        &self.runtime.context().tracer
    }
}

/// A prepared graph with fixed bindings and bounded reusable submission slots.
#[derive(Clone)]
pub struct ExecutableGraph {
    pub(crate) inner: Arc<Prepared>,
}

impl ExecutableGraph {
    fn usable(&self) -> Result<()> {
        if self.inner.quarantined.load(Ordering::Acquire) {
            return Err(Error::DeviceLost(format!(
                "graph {} is quarantined after a native failure",
                self.inner.id
            )));
        }
        for use_ in &self.inner.uses {
            use_.view.buffer().storage.poisoned()?;
        }
        Ok(())
    }

    /// Enqueues without waiting for a device. Conflicting earlier work is ordered first.
    ///
    /// # Errors
    /// [`Error::Busy`] when the runtime's capacity or this graph's slots are exhausted or a
    /// live host mapping conflicts; [`Error::DeviceLost`] when the graph is quarantined or
    /// a buffer it uses is poisoned.
    pub fn submit(&self) -> Result<Completion> {
        self.submit_after(&[])
    }

    /// Submits to run after `producers` (completions of this runtime) succeed. A failed or
    /// cancelled producer cancels this submission, even when no byte range overlaps. A
    /// producer whose runtime is gone is accepted only if it already completed.
    ///
    /// # Errors
    /// As [`ExecutableGraph::submit`]; [`Error::ForeignRuntime`] for another runtime's
    /// completion; [`Error::Message`] for an orphaned incomplete producer.
    pub fn submit_after(&self, producers: &[Completion]) -> Result<Completion> {
        self.open_trace_range();
        let snapshot = &self.inner.snapshot;
        let pending = self
            .inner
            .tracer()
            .snapshot_reads(&snapshot.reads, |i, range| {
                let mut bytes = vec![0; usize::try_from(range.end - range.start).ok()?];
                snapshot.read_buffers[i]
                    .read(usize::try_from(range.start).ok()?, &mut bytes)
                    .ok()?;
                Some(bytes)
            });
        let result = self.try_submit(producers);
        if let (Some(pending), Ok(_)) = (pending, &result) {
            pending.submitted(&snapshot.writes);
        }
        if let Err(error) = &result {
            super::record::submit_refused(self.inner.tracer(), self.inner.id, error);
        }
        result
    }

    /// Before a submit: when the trace's capture range is closed and the next submission
    /// is inside it, drains the runtime (the snapshots the range's submissions take must
    /// read the bytes as they are at its start) and opens the range (see `crate::trace`).
    fn open_trace_range(&self) {
        let tracer = self.inner.tracer();
        if !tracer.range_closed() {
            return; // untraced, or recording: one branch, no lock
        }
        let core = self.inner.runtime.core();
        let next = core.scheduler().peek_submission();
        if !tracer.opens_range(next) {
            return;
        }
        // Bounded: a submission that never finishes (a hung device) must not hang the
        // program's submit too; the snapshot then reads what is there.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while core.scheduler().occupied() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        let context = self.inner.runtime.context();
        let operations = core.scheduler().operations_numbered();
        let fault = super::record::range_fault(&context.faults, next, operations);
        tracer.open_range(next, fault);
    }

    fn try_submit(&self, producers: &[Completion]) -> Result<Completion> {
        self.usable()?;
        let core = self.inner.runtime.core();
        for producer in producers {
            match producer.core().upgrade() {
                Some(owner) if !Arc::ptr_eq(core, &owner) => {
                    return Err(Error::ForeignRuntime { what: "completion" });
                }
                Some(_) => {}
                None if !producer.is_complete() => {
                    return Err(Error::Message(
                        "orphaned incomplete producer: its runtime was dropped".into(),
                    ));
                }
                None => {}
            }
        }
        let mut scheduler = core.scheduler();
        if scheduler.occupied() >= scheduler.capacity {
            return Err(Error::Busy(format!(
                "runtime submission capacity of {} is exhausted; wait for or drop completions",
                scheduler.capacity
            )));
        }
        for use_ in &self.inner.uses {
            use_.view
                .buffer()
                .storage
                .host_conflict(&use_.view.range(), use_.access)?;
        }
        let occupied = &self.inner.occupied;
        let signals = &self.inner.signals;
        let mut slot = super::completion::claim_slot(occupied, signals);
        // A retired submission's slot is free once the worker that published its completion
        // drops its reference, a moment after a waiter may already have returned: when no
        // `Completion` holds such a slot, wait for that drop rather than answer a spurious
        // `Busy` to a submit right after `wait` (bounded, in case the worker is descheduled
        // for long). A slot a caller's `Completion` holds answers `Busy` at once.
        if slot.is_none() && signals.iter().any(|s| s.settling()) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while slot.is_none()
                && signals.iter().any(|s| s.settling())
                && std::time::Instant::now() < deadline
            {
                std::thread::yield_now();
                slot = super::completion::claim_slot(occupied, signals);
            }
        }
        let slot = slot.ok_or_else(|| {
                Error::Busy(format!(
                    "all {} slots of graph {} are occupied; drop completed completions or reserve more graph_slots",
                    occupied.len(),
                    self.inner.id
                ))
            })?;
        // Registered only now that the submit cannot fail otherwise (a registered use makes
        // conflicting host maps `Busy`), each checked again under its lock: a host mapping
        // made since the check above refuses the submit, which withdraws what it registered.
        let submission = scheduler.peek_submission();
        for (index, use_) in self.inner.uses.iter().enumerate() {
            let storage = &use_.view.buffer().storage;
            if let Err(error) = storage.begin_device_use(submission, use_.view.range(), use_.access)
            {
                for registered in &self.inner.uses[..index] {
                    registered.view.buffer().storage.end_device_use(submission);
                }
                occupied[slot].store(false, Ordering::Relaxed);
                return Err(error);
            }
        }
        let numbered = scheduler.next_submission();
        debug_assert_eq!(numbered, submission);
        self.inner.signals[slot].reset(submission);
        let completion = Completion::new(self.inner.signals[slot].clone(), submission);
        super::record::submitted(
            self.inner.tracer(),
            self.inner.id,
            submission,
            slot,
            producers.iter().map(Completion::submission),
        );
        let wake = scheduler.enqueue(self.inner.clone(), submission, slot, producers.to_vec());
        drop(scheduler);
        core.wake(wake);
        Ok(completion)
    }

    /// Number of prepared regions (a native-graph region may hold many kernels).
    pub fn regions(&self) -> usize {
        self.inner.regions.len()
    }

    /// Whether some region does not depend on its predecessor (regions can overlap).
    pub fn parallel(&self) -> bool {
        self.inner.parallel
    }

    /// Whether a native failure quarantined this graph.
    pub fn quarantined(&self) -> bool {
        self.inner.quarantined.load(Ordering::Acquire)
    }

    /// Process-unique id (the id of the graph it was prepared from).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Describes each region: queue, kind, operations and hazards.
    pub fn describe(&self) -> Vec<RegionInfo> {
        self.inner
            .regions
            .iter()
            .map(|r| RegionInfo {
                queue: r.queue(),
                kind: r.kind,
                nodes: r.nodes.clone(),
                hazards: r.hazards.clone(),
                internal: r.internal.clone(),
                copy_bytes: r.copy_bytes,
            })
            .collect()
    }
}
