//! The vocabulary of the execution stages: GPU lanes, the five queues, what a region lowers
//! to, operation nodes, scoped-callback bindings, the description of a prepared region, and
//! how a submission ended.
//!
//! [`GpuLane`] serializes (serde), each lane by its name, as the seed's (`shared/seed/graph.rs`)
//! derives `serde::Serialize`: a lane is part of what a program reports of its pipeline (a JSON
//! summary naming each copy's lane), so a program written against the seed must compile and
//! print the same names here.

use super::dependencies::Hazard;
use crate::{Access, BufferView, Error, Result};
use std::ops::Range;
use std::sync::Arc;

/// Independent GPU scheduling lanes. Memory hazards apply across every lane.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum GpuLane {
    /// Host-to-device transfers.
    Upload,
    /// Kernels, fills and device-to-device copies.
    #[default]
    Compute,
    /// Device-to-host transfers.
    Download,
}

/// The five queues served by the runtime's workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    /// GPU host-to-device copies.
    GpuUpload = 0,
    /// GPU kernels, fills, device copies, scoped callbacks.
    GpuCompute = 1,
    /// GPU device-to-host copies.
    GpuDownload = 2,
    /// NPU runs.
    Npu = 3,
    /// Host work.
    Host = 4,
}

impl Queue {
    /// All queues in index order.
    pub const ALL: [Queue; 5] = [
        Queue::GpuUpload,
        Queue::GpuCompute,
        Queue::GpuDownload,
        Queue::Npu,
        Queue::Host,
    ];
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Queue::GpuUpload => "GPU Upload",
            Queue::GpuCompute => "GPU Compute",
            Queue::GpuDownload => "GPU Download",
            Queue::Npu => "NPU",
            Queue::Host => "Host",
        }
    }
}

/// What a region lowers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    /// One native GPU graph.
    NativeGraph,
    /// Copies on the cached per-lane copy stream.
    CopyBatch,
    /// A scoped native callback.
    Scoped,
    /// One prepared NPU run.
    NpuRun,
    /// A host callback on the Host queue.
    HostCallback,
}

/// A binding of a scoped native callback: a view and how the callback uses it.
#[derive(Clone, Debug)]
pub struct GpuAccess {
    /// The bytes.
    pub view: BufferView,
    /// How the callback uses them.
    pub access: Access,
}

impl GpuAccess {
    /// A binding of `view` with `access`.
    pub fn new(view: BufferView, access: Access) -> Self {
        Self { view, access }
    }
}

/// An operation's index in its graph, for diagnostics. Ordering is inferred from access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub(crate) usize);

impl Node {
    /// The index.
    pub fn index(self) -> usize {
        self.0
    }
}

/// What a region of a prepared graph is, for tools and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// The queue it runs on.
    pub queue: Queue,
    /// What it lowers to.
    pub kind: RegionKind,
    /// The graph operations in it.
    pub nodes: Range<usize>,
    /// Region-level hazards (producer = region index).
    pub hazards: Vec<Hazard>,
    /// Edges between its operations inside a native graph: (consumer node, hazard).
    pub internal: Vec<(usize, Hazard)>,
    /// Bytes copied per run.
    pub copy_bytes: usize,
}

/// How a submission ended.
#[derive(Clone, Debug)]
pub enum Status {
    /// Every region ran and succeeded.
    Succeeded,
    /// A region failed; the error is the first failure's.
    Failed(Arc<Error>),
    /// Nothing more ran because a producer failed or was cancelled.
    Cancelled(Arc<Error>),
}

impl Status {
    /// Whether the submission succeeded.
    pub fn succeeded(&self) -> bool {
        matches!(self, Status::Succeeded)
    }
    /// `Ok` on success, the failure or cancellation otherwise.
    ///
    /// # Errors
    /// The failure's error, or [`Error::Cancelled`] naming the cause. A cancellation's error
    /// is an [`Error::Cancelled`] already and is answered as it is (wrapped again, it read
    /// `cancelled: cancelled: ...`).
    pub fn into_result(self) -> Result<()> {
        match self {
            Status::Succeeded => Ok(()),
            Status::Failed(error) => Err((*error).clone()),
            Status::Cancelled(cause) => Err(match &*cause {
                Error::Cancelled(_) => (*cause).clone(),
                other => Error::Cancelled(other.to_string()),
            }),
        }
    }
}
