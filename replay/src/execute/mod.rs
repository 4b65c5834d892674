//! Stage 2: re-execute one captured runtime in a fresh replay runtime.
//!
//! build -> walk the timeline -> retire -> read the replay's own trace:
//!
//! 1. A new [`Runtime`] records into a runtime-local [`Recorder`] over a [`MemorySink`],
//!    so the replay's region timings, output digests and failures come back as trace
//!    records of the same schema as the capture's, without touching the process's trace.
//! 2. Kernels are loaded (built-in code by entry name, else the captured code); buffers
//!    are created and prepared graphs rebuilt operation by operation with the captured byte
//!    ranges, and prepared, in capture order: those the timeline needs before the program
//!    let go of its first buffer up front, the others when the timeline first needs them
//!    (module `objects`). Captured ids map to the new objects through the plan's indices;
//!    the replay's own ids map back through the returned tables.
//! 3. The timeline is walked: host writes with [`hrx::Buffer::write`], submits in
//!    submission order with [`hrx::ExecutableGraph::submit_after`] for captured producers,
//!    releases where the program let go of a buffer (its submissions in flight waited for,
//!    then the buffer and the graphs using it let go). Whenever the runtime answers `Busy`
//!    (capacity, slots, a host write conflicting with work in flight), the oldest
//!    outstanding submission is waited for and the call retried.
//! 4. Scoped callbacks and host operations are replaced by callbacks that write the
//!    captured contents of their written bindings (or fail as the capture's did); see
//!    [`crate::substitute`] for what is substituted.
//!
//! The files: this one holds what a replay hands back ([`Observed`]); `open` opens the
//! runtime and loads kernels (1); `objects` keeps the objects along the timeline (2);
//! `build` rebuilds a graph and the callbacks that replace captured ones (2, 4); `session` keeps a runtime across the
//! chunks of a streamed trace ([`Session`], [`run`]); `walk` walks the timeline (3);
//! `read_back` reads the replay's own trace back onto captured ids; `timing` times each
//! operation on its own ([`time_ops`]).

mod build;
mod objects;
pub(crate) mod open;
pub(crate) use open::times_more_than_kernels;
mod read_back;
mod session;
mod timing;
mod walk;

pub(crate) use session::{ChunkRun, Session, run};
pub(crate) use timing::{op_times_in_graphs, time_ops};
pub(crate) use walk::ChunkPlace;

use crate::plan::Sample;
use crate::report::Outcome;
use hrx::{GpuKernel, NpuKernel};
use hrx_capture::schema::{BufferId, SubmissionIndex};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Counts work done for the progress callback.
pub(crate) struct Ticker<'o> {
    pub done: u64,
    pub total: u64,
    pub callback: Option<&'o (dyn Fn(u64, u64) + Send + Sync)>,
}

impl Ticker<'_> {
    pub fn tick(&mut self) {
        self.done += 1;
        if let Some(callback) = self.callback {
            callback(self.done.min(self.total), self.total);
        }
    }

    /// Reports completion (work planned but skipped, such as failed per-op runs).
    pub fn finish(&mut self) {
        if self.done < self.total {
            self.done = self.total;
            if let Some(callback) = self.callback {
                callback(self.total, self.total);
            }
        }
    }
}

/// An output digest the replay recorded, mapped back to captured ids.
#[derive(Clone, Debug)]
pub(crate) struct ReplayOutput {
    pub buffer: BufferId,
    pub start: u64,
    pub end: u64,
    pub xxh3: u64,
    pub contents: Option<Vec<u8>>,
}

/// What one replay of one runtime did, keyed by captured ids.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub backend: String,
    pub device: String,
    pub statuses: HashMap<SubmissionIndex, (Outcome, String)>,
    pub refused: HashMap<SubmissionIndex, String>,
    /// Host writes that failed: (host write index, error).
    pub host_write_errors: Vec<(usize, String)>,
    pub outputs: HashMap<SubmissionIndex, Vec<ReplayOutput>>,
    pub failed_region: HashMap<SubmissionIndex, u32>,
    /// When the failed region failed (the replay's clock).
    pub failed_at: HashMap<SubmissionIndex, u64>,
    /// Buffers the replay poisoned, mapped to captured ids.
    pub poisons: Vec<crate::concurrent::PoisonEvent>,
    pub quarantined: HashSet<SubmissionIndex>,
    pub region_times: HashMap<(usize, u32), Vec<Sample>>,
    /// Operation times by (graph index, node), where the replay's backend timed them.
    pub op_times: HashMap<(usize, u32), Vec<Sample>>,
    pub notes: Vec<String>,
}

/// What a substituted callback does in its next run.
enum Entry {
    Write(Vec<(usize, Arc<[u8]>)>),
    Fail { device_lost: bool, message: String },
    Noop,
}

type EntryQueue = Arc<Mutex<VecDeque<Entry>>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

enum Loaded {
    Gpu(GpuKernel),
    Npu(NpuKernel),
}

pub(crate) fn outcome(status: &hrx::Status) -> (Outcome, String) {
    match status {
        hrx::Status::Succeeded => (Outcome::Ok, String::new()),
        hrx::Status::Failed(error) => (Outcome::Failed, error.to_string()),
        hrx::Status::Cancelled(cause) => (Outcome::Cancelled, cause.to_string()),
    }
}
