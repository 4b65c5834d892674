//! The submit stage: [`ExecutableGraph`], a prepared graph, and its submission into one of
//! its bounded, reusable slots; the scheduler ([`super::scheduler`]) then runs and retires it.
//!
//! # Early launch
//!
//! When the submission's native graph region is runnable at once (the oldest ready region of
//! its idle queue: no hazard wait, no producers), its stream's launch only enqueues
//! ([`crate::gpu::NativeStream::launches_asynchronously`]: CUDA, HIP) and the submission is
//! untraced, `submit` claims the region and launches it on the calling thread before it
//! returns, as a raw `cuGraphLaunch` would be: the rest of `submit`, and of `wait` up to
//! its stream synchronize, then overlaps the device's execution instead of preceding it.
//! The region stays *launched* (its queue busy) until a thread claims it to synchronize and
//! record the outcome: the submission's waiter ([`crate::Completion::wait`]) or, when nobody
//! waits, the queue's worker (its doorbell shows the region claimable). The software
//! device runs a graph inside its launch, so its `submit` never runs work.
//!
//! The seed (`shared/seed/graph.rs`, `Region::run`) orders a region's steps: poison check,
//! every use made visible to its engine, `launch`, `synchronize`, then the written buffers'
//! last writer. The early launch keeps that order, split across two threads at the point
//! where the seed itself hands the work to the device: `submit` does the checks, the
//! visibility and the launch; the claimer does the synchronize and what follows. Its
//! `submit` "enqueue[s] without waiting for a device", as the seed's does: a launch does not
//! wait. A failed launch is the region's outcome at once, with the same quarantine and
//! poison as a failed run. What happens between the synchronize and `wait` returning stays
//! as it was: the submission's buffer uses end and its prepared graph is let go before its
//! outcome is published, so that a host map right after `wait` is not `Busy` and a returned
//! waiter can rely on the runtime having let go ([`super::completion`]).
//!
//! # Refusals
//!
//! In the seed's order, each in its words (then the runtime's ids): the graph's usability
//! first, "graph quarantined after native failure" and then a poisoned buffer it uses (both
//! `DeviceLost`: nothing it could wait for makes the graph usable again); a producer of
//! another runtime; "runtime submission capacity exhausted"; a live host mapping of bytes it
//! uses; "prepared run slots are occupied; drop completed observers or reserve more slots"
//! (the last three `Busy`). A caller told `Busy` may retry; one told `DeviceLost` may not.

use super::completion::Signal;
use super::dependencies::{CrossUses, Tail, Use};
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
    /// The device operations of the regions before each region, one more entry than
    /// `regions` (the last the graph's total): a claimed region's first operation's number
    /// without a sum over the regions before it (quadratic in a graph of 100,000 regions).
    pub operations_before: Vec<u64>,
    /// For a graph of at least [`super::scheduler::TRACKED_REGIONS`] regions, the regions
    /// that depend on each region ([`Dependents`]); empty for a smaller one.
    pub dependents: Dependents,
    /// For a graph of at least [`super::scheduler::TRACKED_REGIONS`] regions, its
    /// frontier after its last region ([`Tail`]): what a later submission's regions wait
    /// for; empty for a smaller one.
    pub tail: Tail,
    /// Per region, the bytes a later submission of this graph waits across for
    /// ([`CrossUses`]).
    pub cross_uses: CrossUses,
    pub uses: Vec<Use>,
    /// Whether each slot's submission is still in flight.
    /// Read and written only under the scheduler lock (atomics only to be shared).
    pub occupied: Box<[AtomicBool]>,
    pub signals: Vec<Arc<Signal>>,
    /// The graph's handles and its submission's deferred retirement ([`super::defer`]).
    pub defer: super::defer::Deferral,
    /// What a capture range's lazy snapshot needs of the graph (empty when untraced).
    pub snapshot: SnapshotUses,
}

/// Per region, the regions that depend on it, once per entry of their `Region::dependencies`:
/// two flat vectors, so that dropping a prepared graph stays two frees (a vector per region
/// made the drop glue of every `Arc<Prepared>` holder larger, and the untraced round trip
/// lost inlining worth about 90 instructions, session 58's callgrind).
#[derive(Default)]
pub(crate) struct Dependents {
    /// Region `r`'s dependents are `of[start[r]..start[r + 1]]`.
    start: Vec<u32>,
    of: Vec<u32>,
}

impl Dependents {
    /// Of `regions`, each with its dependencies.
    pub fn new(regions: &[super::region::Region]) -> Dependents {
        let mut count = vec![0u32; regions.len() + 1];
        for region in regions {
            for &d in &region.dependencies {
                count[d + 1] += 1;
            }
        }
        for r in 1..count.len() {
            count[r] += count[r - 1];
        }
        let mut next = count.clone();
        let mut of = vec![0u32; count[regions.len()] as usize];
        for (index, region) in regions.iter().enumerate() {
            for &d in &region.dependencies {
                of[next[d] as usize] = index as u32;
                next[d] += 1;
            }
        }
        Dependents { start: count, of }
    }

    /// The regions that depend on `region`.
    pub fn of(&self, region: usize) -> &[u32] {
        &self.of[self.start[region] as usize..self.start[region + 1] as usize]
    }
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
    /// Whether all of these bytes are held already (see `crate::trace`'s snapshot).
    pub settled: crate::trace::Settled,
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
pub struct ExecutableGraph {
    pub(crate) inner: Arc<Prepared>,
}

impl Clone for ExecutableGraph {
    fn clone(&self) -> Self {
        self.inner.defer.handle_added();
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for ExecutableGraph {
    /// A submission of this graph whose retirement its waiter deferred is retired now, under
    /// the scheduler lock, while this handle still holds the graph ([`super::defer`]).
    fn drop(&mut self) {
        if self.inner.defer.handle_dropped() {
            drop(self.inner.runtime.core().scheduler());
        }
    }
}

impl ExecutableGraph {
    fn usable(&self) -> Result<()> {
        if self.inner.quarantined.load(Ordering::Acquire) {
            return Err(Error::DeviceLost(format!(
                "graph quarantined after native failure (graph {})",
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
    /// a buffer it uses is poisoned; [`Error::Unsupported`] in a child process forked after
    /// the runtime was created (its workers are not in the child).
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
        // Before the trace's hooks, whose capture fences would wait for the parent's writer.
        if self.inner.runtime.core().forked() {
            return Err(crate::sync::forked_error());
        }
        // The call's span, for the submitting thread's row: one branch untraced.
        let start_ns = self.inner.tracer().on().then(crate::clock::now_ns);
        self.open_trace_range();
        let snapshot = &self.inner.snapshot;
        let pending =
            self.inner
                .tracer()
                .snapshot_reads(&snapshot.reads, &snapshot.settled, |i, range| {
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
        match (&result, start_ns) {
            (Err(error), _) => {
                super::record::submit_refused(self.inner.tracer(), self.inner.id, error);
            }
            (Ok(completion), Some(start_ns)) => super::record::host_span(
                self.inner.tracer(),
                hrx_capture::schema::HostSpanKind::Submit,
                completion.submission(),
                start_ns,
            ),
            (Ok(_), None) => {}
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
                "runtime submission capacity exhausted: {} submissions in flight; wait for or drop completions",
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
                    "prepared run slots are occupied; drop completed observers or reserve more slots (all {} of graph {}; RuntimeOptions::graph_slots)",
                    occupied.len(),
                    self.inner.id
                ))
            })?;
        // No registration per buffer: the in-flight entry `enqueue` makes is the buffers'
        // device-use registration, which host accesses check under this lock
        // (`buffer::DeviceUses`), as this submit checked their mappings above.
        let submission = scheduler.next_submission();
        let signal = &self.inner.signals[slot];
        signal.reset(submission);
        super::record::submitted(
            self.inner.tracer(),
            self.inner.id,
            submission,
            slot,
            producers.iter().map(Completion::submission),
        );
        let launch = !self.inner.tracer().traces(submission);
        let (wake, early) = scheduler.enqueue(
            self.inner.clone(),
            submission,
            slot,
            producers.to_vec(),
            launch,
        );
        // The completion holds the slot's signal (see `super::completion`) before anything can
        // retire the submission: under the lock, unless `submit` launches it, which makes it
        // after the launch and before the region is shown to other threads (two reference
        // counts fewer before the launch, issue 16).
        let make = || Completion::new(signal.clone(), submission);
        let completion = if early.is_none() { Some(make()) } else { None };
        drop(scheduler);
        let completion = match early {
            Some(task) => super::worker::launch(core, task, make),
            None => completion.expect("made under the lock"),
        };
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

#[cfg(test)]
mod tests {
    use crate::gpu::sim::test_hooks::{ASYNCHRONOUS, LAUNCHES};
    use crate::{ExecutableGraph, Placement, Runtime, RuntimeOptions};

    /// A runtime and a one-fill graph of a 4 KiB buffer (one native-graph region), its
    /// streams made while `asynchronous` is set (the software device's test hook).
    fn fill_graph(asynchronous: bool, value: u8) -> (Runtime, crate::Buffer, ExecutableGraph) {
        fill_graph_on(RuntimeOptions::sim(), asynchronous, value)
    }

    fn fill_graph_on(
        options: RuntimeOptions,
        asynchronous: bool,
        value: u8,
    ) -> (Runtime, crate::Buffer, ExecutableGraph) {
        let rt = Runtime::new(options).unwrap();
        let buffer = rt.buffer(4096, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), value).unwrap();
        ASYNCHRONOUS.set(asynchronous);
        let graph = graph.prepare().unwrap();
        ASYNCHRONOUS.set(false);
        (rt, buffer, graph)
    }

    fn bytes(buffer: &crate::Buffer) -> Vec<u8> {
        let mut out = vec![0; 4096];
        buffer.read(0, &mut out).unwrap();
        out
    }

    #[test]
    fn a_runnable_asynchronous_graph_is_launched_by_submit_on_the_submitting_thread() {
        let (rt, buffer, graph) = fill_graph(true, 7);
        for round in 1..=3 {
            let before = LAUNCHES.get();
            let completion = graph.submit().unwrap();
            // Launched here, before `submit` returned: the queue's worker cannot have.
            assert_eq!(LAUNCHES.get(), before + 1, "round {round}");
            completion.wait().unwrap();
            // Completed by this thread's `wait` or by the worker; never launched again.
            assert_eq!(LAUNCHES.get(), before + 1, "round {round}");
        }
        assert_eq!(bytes(&buffer), vec![7; 4096]);
        assert_eq!(rt.in_flight(), 0);
    }

    #[test]
    fn an_early_launch_rings_its_queues_doorbell_once_after_the_launch_not_before() {
        let (rt, buffer, graph) = fill_graph(true, 3);
        let doorbell = || {
            let core = graph.inner.runtime.core();
            core.doorbell(crate::execution::types::Queue::GpuCompute)
                .epoch()
        };
        let before = doorbell();
        for _ in 0..5 {
            graph.submit().unwrap().wait().unwrap();
        }
        // Each round trip moves the epoch once, when `launched` shows the region to the
        // worker; a ring at the enqueue (before the claim) would move it twice.
        assert_eq!(doorbell() - before, 5);
        assert_eq!(bytes(&buffer), vec![3; 4096]);
        assert_eq!(rt.in_flight(), 0);
    }

    /// A waiter that completed its own early launch, or ran its own region (the software
    /// device's synchronous launch), alone in flight, publishes it and leaves its retirement
    /// to the next scheduler lock holder (`execution::defer`): the scheduler still lists it
    /// until then, and every lock holder sees it retired. The runtime has no Compute worker
    /// (`shared::test_hooks`), so that the waiter, not a worker whose claim grace a loaded
    /// machine's waiter can outlast, runs every round's region and defers every retirement.
    #[test]
    fn a_waiter_leaves_its_lone_regions_retirement_to_the_next_lock_holder() {
        for asynchronous in [true, false] {
            leaves_its_lone_regions_retirement(asynchronous);
        }
    }

    fn leaves_its_lone_regions_retirement(asynchronous: bool) {
        // No Compute worker: its claim after a grace, which a loaded machine's waiter can
        // outlast, would make the deferral a matter of timing; here the waiter runs every
        // round's region, so every round defers.
        use crate::execution::shared::test_hooks::WITHOUT_WORKER;
        WITHOUT_WORKER.set(Some(crate::execution::types::Queue::GpuCompute));
        let (rt, buffer, graph) = fill_graph(asynchronous, 4);
        WITHOUT_WORKER.set(None);
        let core = graph.inner.runtime.core().clone();
        let mut deferred = 0;
        for round in 1..=50 {
            let completion = graph.submit().unwrap();
            completion.wait().unwrap();
            assert!(completion.is_complete());
            // Left listed for the next lock holder; another queue's worker taking the lock
            // to park (once, after its first idle spin) may have been that holder.
            let listed = core.scheduler_unresolved().occupied();
            assert!(listed <= 1, "round {round}: {listed} in flight");
            deferred += listed;
            // A host read right after `wait`: the buffer's device use was released (the
            // read, the next lock holder, retires the submission first).
            assert_eq!(bytes(&buffer), vec![4; 4096]);
            drop(completion);
            assert_eq!(rt.in_flight(), 0, "round {round}");
            assert_eq!(core.scheduler_unresolved().occupied(), 0);
        }
        assert!(
            deferred > 0,
            "no waiter deferred its retirement in 50 rounds (asynchronous: {asynchronous})"
        );
        // The next submit retires it too, and reuses its slot.
        graph.submit().unwrap().wait().unwrap();
        let again = graph.submit().unwrap();
        assert!(
            core.scheduler_unresolved().occupied() <= 1,
            "only the new one"
        );
        again.wait().unwrap();
    }

    /// A deferred retirement never keeps a runtime alive after the program let it go: the
    /// last handle of the graph retires it before dropping the graph, and a waiter whose
    /// graph has no handle left retires through the scheduler as before.
    #[test]
    fn a_deferred_retirement_does_not_outlive_the_graphs_handles() {
        for (drop_graph_first, asynchronous) in
            [(false, true), (true, true), (false, false), (true, false)]
        {
            let (rt, buffer, graph) = fill_graph(asynchronous, 6);
            let core = std::sync::Arc::downgrade(graph.inner.runtime.core());
            let clone = graph.clone();
            let completion = graph.submit().unwrap();
            if drop_graph_first {
                drop((graph, clone));
                completion.wait().unwrap();
            } else {
                completion.wait().unwrap();
                drop(graph);
                // A handle still lives: the retirement may still be left to a lock holder.
                drop(clone);
            }
            let core_now = core.upgrade().unwrap();
            assert_eq!(
                core_now.scheduler_unresolved().occupied(),
                0,
                "graph dropped first: {drop_graph_first}, asynchronous: {asynchronous}"
            );
            drop(core_now);
            drop((completion, buffer, rt));
            assert!(
                core.upgrade().is_none(),
                "the runtime outlived its handles (graph dropped first: {drop_graph_first}, asynchronous: {asynchronous})"
            );
        }
    }

    /// Deferred retirements beside everything that resolves them: one thread submits and
    /// waits on its lone early launch (deferring), another reads and maps its buffer (host
    /// accesses resolve under the scheduler lock), clones and drops its graph's handle (a
    /// drop resolves), and submits work of its own (an enqueue resolves); a third asks
    /// `in_flight`. Every round's bytes are right, nothing hangs, and the runtime goes when
    /// the handles do.
    #[test]
    fn deferred_retirements_beside_host_access_handle_drops_and_other_submits() {
        for asynchronous in [true, false] {
            deferred_retirements_beside(asynchronous);
        }
    }

    fn deferred_retirements_beside(asynchronous: bool) {
        let (rt, buffer, graph) = fill_graph(asynchronous, 2);
        let core = std::sync::Arc::downgrade(graph.inner.runtime.core());
        let other = rt.buffer(4096, Placement::HostVisible).unwrap();
        let mut fill = rt.graph();
        fill.fill(other.whole(), 9).unwrap();
        let fill = fill.prepare().unwrap();
        // Filled once first: every read below then finds the fill's bytes or answers Busy.
        graph.submit().unwrap().wait().unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _done = crate::execution::test_util::SetOnDrop(&done);
                for _ in 0..500 {
                    // Busy while the other thread reads the buffer (its staging mapping).
                    crate::execution::test_util::submit_when_free(&graph)
                        .wait()
                        .unwrap();
                }
            });
            scope.spawn(|| {
                let mut round = 0u32;
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    round += 1;
                    // A host read: Busy while a round is in flight, else the fill's bytes.
                    let mut out = vec![0; 64];
                    match buffer.read(0, &mut out) {
                        Ok(()) => assert_eq!(out, vec![2; 64]),
                        Err(crate::Error::Busy(_)) => {}
                        Err(error) => panic!("{error}"),
                    }
                    drop(graph.clone());
                    if round.is_multiple_of(4) {
                        fill.submit().unwrap().wait().unwrap();
                        assert_eq!(other.map_read(0..16).unwrap()[..], [9; 16]);
                    }
                }
            });
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    assert!(rt.in_flight() <= 2);
                    std::thread::yield_now();
                }
            });
        });
        assert_eq!(rt.in_flight(), 0);
        assert_eq!(bytes(&buffer), vec![2; 4096]);
        drop((graph, fill, buffer, other, rt));
        assert!(core.upgrade().is_none(), "the runtime outlived its handles");
    }

    #[test]
    fn a_synchronous_graph_is_still_run_by_the_waiter_or_the_worker_not_by_submit() {
        let (_rt, buffer, graph) = fill_graph(false, 9);
        let before = LAUNCHES.get();
        let completion = graph.submit().unwrap();
        assert_eq!(
            LAUNCHES.get(),
            before,
            "the software device's submit does not run work"
        );
        completion.wait().unwrap();
        assert_eq!(bytes(&buffer), vec![9; 4096]);
    }

    #[test]
    fn a_launched_region_nobody_waits_for_is_completed_by_the_worker() {
        let (rt, buffer, graph) = fill_graph(true, 5);
        let before = LAUNCHES.get();
        // Never waited for: the queue's worker completes each launch, or a later
        // submission of the same queue would never run.
        drop(graph.submit().unwrap());
        let second = graph.submit();
        let second = match second {
            Ok(completion) => completion,
            // The first one's slot may still be settling on a loaded machine.
            Err(crate::Error::Busy(_)) => {
                while rt.in_flight() != 0 {
                    std::thread::yield_now();
                }
                graph.submit().unwrap()
            }
            Err(error) => panic!("{error}"),
        };
        second
            .wait_timeout(std::time::Duration::from_secs(60))
            .unwrap();
        while rt.in_flight() != 0 {
            std::thread::yield_now();
        }
        assert!(LAUNCHES.get() > before);
        assert_eq!(bytes(&buffer), vec![5; 4096]);
    }

    #[test]
    fn a_graph_waiting_on_a_hazard_is_not_launched_by_submit() {
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let buffer = rt.buffer(4096, Placement::HostVisible).unwrap();
        // A host callback that writes the buffer and holds its queue until released.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let mut writer = rt.graph();
        let binding = crate::execution::types::GpuAccess {
            view: buffer.whole(),
            access: crate::Access::Write,
        };
        writer
            .host(&[binding], move |views| {
                released.lock().unwrap().recv().unwrap();
                views.write(0)?.fill(1);
                Ok(())
            })
            .unwrap();
        let writer = writer.prepare().unwrap();
        let mut fill = rt.graph();
        fill.fill(buffer.whole(), 3).unwrap();
        ASYNCHRONOUS.set(true);
        let fill = fill.prepare().unwrap();
        ASYNCHRONOUS.set(false);
        let first = writer.submit().unwrap();
        let before = LAUNCHES.get();
        // The fill writes what the unfinished callback writes: it waits on that hazard, so
        // `submit` leaves it to the scheduler.
        let second = fill.submit().unwrap();
        assert_eq!(LAUNCHES.get(), before);
        release.send(()).unwrap();
        first.wait().unwrap();
        second.wait().unwrap();
        assert_eq!(bytes(&buffer), vec![3; 4096]);
    }

    /// The seed makes every use visible to the region's engine before its launch, written-only
    /// uses too; `submit`'s early launch keeps that step: a fill of part of a buffer the NPU
    /// wrote last, launched by `submit`, first syncs the NPU's bytes back, or the rest of the
    /// buffer would keep stale bytes once the GPU is its last writer.
    #[test]
    fn an_early_launch_makes_every_use_visible_before_it_launches() {
        use crate::Engine;
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let (_input, output, npu) = super::super::test_util::npu_threshold(&rt);
        npu.submit().unwrap().wait().unwrap();
        assert!(!output.visible_to(Engine::Gpu), "the NPU wrote it last");
        let mut fill = rt.graph();
        fill.fill(output.view(0..8).unwrap(), 7).unwrap();
        ASYNCHRONOUS.set(true);
        let fill = fill.prepare().unwrap();
        ASYNCHRONOUS.set(false);
        let (launches, syncs) = (LAUNCHES.get(), rt.counters().visibility_syncs);
        let completion = fill.submit().unwrap();
        assert_eq!(LAUNCHES.get(), launches + 1, "launched by submit");
        assert_eq!(
            rt.counters().visibility_syncs,
            syncs + 1,
            "the written-only use synced the NPU's bytes before the launch"
        );
        completion.wait().unwrap();
        let mut expected = vec![255; 64];
        expected[..8].fill(7);
        assert_eq!(output.to_vec().unwrap(), expected);
    }

    #[test]
    fn a_failed_early_launch_fails_its_submission_as_a_failed_run_does() {
        let outcome = |asynchronous: bool, spec: &str| {
            let options = RuntimeOptions::sim().fault(spec.parse().unwrap());
            let (rt, buffer, graph) = fill_graph_on(options, asynchronous, 1);
            let before = LAUNCHES.get();
            let error = graph.submit().unwrap().wait().unwrap_err();
            let launched_here = LAUNCHES.get() - before;
            let again = graph.submit().map(|_| ()).map_err(|e| e.to_string());
            let poisoned = buffer.storage.poisoned().is_err();
            assert!(rt.fault_fired());
            (
                error.to_string(),
                graph.quarantined(),
                poisoned,
                again.is_ok(),
                launched_here,
            )
        };
        for spec in ["op=1:kernel-error", "op=1:device-lost"] {
            let (error, quarantined, poisoned, again, launched_here) = outcome(true, spec);
            assert_eq!(launched_here, 1, "{spec}: launched by submit");
            // The same outcome, quarantine and poison as the region run by a worker or waiter.
            let run = outcome(false, spec);
            assert_eq!(
                (&error, quarantined, poisoned, again),
                (&run.0, run.1, run.2, run.3)
            );
        }
    }

    #[test]
    fn launched_regions_from_several_threads_all_complete() {
        let rt = Runtime::new(RuntimeOptions::sim().graph_slots(4)).unwrap();
        let shared = rt.buffer(4096, Placement::GpuLocal).unwrap();
        std::thread::scope(|scope| {
            for thread in 0..4u8 {
                let (rt, shared) = (&rt, &shared);
                scope.spawn(move || {
                    let own = rt.buffer(4096, Placement::GpuLocal).unwrap();
                    let mut graph = rt.graph();
                    graph.fill(own.whole(), 0).unwrap();
                    graph.fill(shared.view(0..64).unwrap(), thread).unwrap();
                    ASYNCHRONOUS.set(true);
                    let graph = graph.prepare().unwrap();
                    ASYNCHRONOUS.set(false);
                    let mut kept = Vec::new();
                    for round in 0..300u32 {
                        let completion = loop {
                            match graph.submit() {
                                Ok(completion) => break completion,
                                Err(crate::Error::Busy(_)) => {
                                    for c in kept.drain(..) {
                                        let c: crate::Completion = c;
                                        c.wait_timeout(std::time::Duration::from_secs(60)).unwrap();
                                    }
                                }
                                Err(error) => panic!("{error}"),
                            }
                        };
                        // Waited at once, kept and waited later, or dropped unwaited.
                        match round % 3 {
                            0 => completion
                                .wait_timeout(std::time::Duration::from_secs(60))
                                .unwrap(),
                            1 => kept.push(completion),
                            _ => drop(completion),
                        }
                    }
                    for c in kept {
                        c.wait_timeout(std::time::Duration::from_secs(60)).unwrap();
                    }
                });
            }
        });
        while rt.in_flight() != 0 {
            std::thread::yield_now();
        }
        let mut out = vec![0; 64];
        shared.read(0, &mut out).unwrap();
        assert!(out.iter().all(|&b| b == out[0] && b < 4), "{out:?}");
    }
}
/// The early launch's round trip on the software device, for instruction counts under
/// callgrind (BENCHMARKS.md, GPU section, session 28): `N` round trips (default 20,000) of a
/// one-fill graph whose stream launches asynchronously, as CUDA's does. Ignored by default:
///
/// ```text
/// cargo test -p hrx --release --lib --no-run
/// N=30000 valgrind --tool=callgrind target/release/deps/hrx-<hash> --ignored --exact \
///     execution::submit::callgrind::early_launch_round_trips
/// ```
#[cfg(test)]
mod callgrind {
    #[test]
    #[ignore = "a profiling harness: run it under callgrind"]
    fn early_launch_round_trips() {
        use crate::gpu::sim::test_hooks::{ASYNCHRONOUS, LAUNCHES};
        use crate::{Placement, Runtime, RuntimeOptions};
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let buffer = rt.buffer(64, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), 1).unwrap();
        ASYNCHRONOUS.set(true);
        let graph = graph.prepare().unwrap();
        ASYNCHRONOUS.set(false);
        let n: u64 = std::env::var("N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(20_000);
        let before = LAUNCHES.get();
        for _ in 0..n {
            graph.submit().unwrap().wait().unwrap();
        }
        // Every round trip launched by its `submit`, on this thread.
        assert_eq!(LAUNCHES.get() - before, n);
        assert_eq!(buffer.to_vec().unwrap(), vec![1; 64]);
    }
}
