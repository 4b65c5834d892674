//! The one trace model every hrx-trace reader builds on (DESIGN.md section 9).
//!
//! - [`index`]: the structural tables (runtimes, lanes, buffers, kernels, operations,
//!   prepared graphs, regions) with every region's label interned once.
//! - [`scan`](mod@scan): one streaming pass over a trace (a file, a mapped trace or records
//!   in memory) that joins every
//!   region timing and submission outcome to its submission, prepared graph, region, queue
//!   and lane once, and hands the joined records to a [`Visitor`]. Memory grows with graphs,
//!   buffers, kernels and labels, not with submissions or regions.
//! - [`stats`]: per-kernel durations (bounded [`sketch`]es), lane utilisation, copy
//!   bandwidth, outcomes: `hrx-trace stats` and the timeline's statistics.
//! - [`info`]: what `hrx-trace info` and `record`'s summary say of a trace: the pass's
//!   joins (submissions in flight, regions running at the end) and per-record counts.
//! - [`stats_follow`]: the same statistics of a trace still being written, read one new
//!   block at a time (`hrx-trace stats --follow`).
//! - [`timeline`]: the timeline's model of a trace (spans per lane with their block index,
//!   submissions, regions, events, hazards, the first failure), its in-memory and
//!   streaming builders, the first frame from block summaries and the view cache that
//!   reopens a model by mapping its columns: what `hrx-trace view` draws.
//! - [`export`]: Chrome JSON and Perfetto protobuf exports, one streaming pass.
//! - [`compare`]: the one comparison engine of `diff` and `replay`: the rule for each kind
//!   (kernels, regions, outputs, outcomes, timings) and the verdict of their judgements.
//! - [`matching`]: the one matching rule for kernels and regions of `diff` and `replay`.
//! - [`diff`]: what `diff` reads of two traces, in two bounded streaming passes.
//! - [`dump`]: one readable line per record (`hrx-trace dump`), and [`dump::host_time_ns`].
//! - [`trim`]: cuts a trace down to a range of submissions with the state it needs
//!   (`hrx-trace trim`).
//! - [`hash`]: the fast hasher of the readers' integer-keyed maps.
//! - [`units`]: the one formatter of times, sizes and rates.
//! - [`synthetic`]: generated traces of any size for tests and benchmarks.
//!
//! ```
//! use hrx_analysis::{StatsVisitor, scan_records, synthetic};
//!
//! let records: Vec<_> = synthetic::pipeline(synthetic::PipelineSpec::ops(40)).collect();
//! let mut visitor = StatsVisitor::new();
//! let summary = scan_records(&records, &mut visitor);
//! let stats = visitor.finish(&summary);
//! assert_eq!(stats.submissions.accepted, 10);
//! // 40 timed regions: 10 kernel regions, 20 copy batches and 10 host callbacks (copies
//! // and host callbacks are no kernels).
//! assert_eq!(stats.kernels.iter().map(|k| k.count).sum::<u64>(), 10);
//! assert_eq!(stats.copies.iter().map(|c| c.batches).sum::<u64>(), 20);
//! assert_eq!(stats.host_callbacks.iter().map(|k| k.count).sum::<u64>(), 10);
//! ```
#![warn(missing_docs)]

pub mod compare;
pub mod diff;
pub mod dump;
pub mod export;
pub mod hash;
pub mod index;
pub mod info;
pub mod matching;
mod nesting;
pub mod scan;
pub mod sketch;
pub mod stats;
pub mod stats_follow;
pub mod synthetic;
pub mod timeline;
pub mod trim;
pub mod units;

/// The version of the JSON reports' layout: the `schema_version` field of every report a verb
/// prints with `--json` (`info`, `stats`, `diff`, `replay`, `record`). 2 (this one): digests,
/// blob hashes and addresses are hex strings (`"0x"` and 16 digits, which jq reads exactly)
/// and `dump --json`'s bytes base64 with their length; 1 (unversioned): they were numbers.
/// A change that removes or retypes a field moves it on; an added field does not.
pub const JSON_SCHEMA_VERSION: u32 = 2;

/// The operation a native failure's text names, where it names one: the runtime ends the
/// errors it raises with the operation it was running in parentheses (`… at device
/// operation 9 (hrx_blur_h)`: a kernel's entry name, `fill` or `copy`); a failure's record
/// names only its region. `None` for an error that names none (a native graph failing as a
/// whole, as CUDA reports it, whose parentheses explain rather than name).
pub fn failed_operation(error: &str) -> Option<&str> {
    let inner = error.trim_end().strip_suffix(')')?;
    let name = &inner[inner.rfind('(')? + 1..];
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

pub use index::{
    Index, LabelRef, LaneInfo, LaneRef, PreparedInfo, PreparedRef, QUEUES, RegionInfo, RegionRef,
    copy_name, is_copy_region, is_gpu_queue, label_region, listed_op_name, queue_name, queue_slot,
};
pub use scan::{
    JoinedEvent, JoinedLink, JoinedRegion, JoinedSpan, JoinedSubmission, Joiner, LinkBeforeRange,
    Outcome, RUNNING_AT_END, RunningRegion, ScanSummary, Visitor, decode_threads, running_mark,
    running_state, scan, scan_mapped, scan_reader, scan_reader_threaded, scan_records,
};
pub use stats::{
    AnnotationStats, CopyStats, CounterStats, FailureCounts, KernelStats, LaneStats, MarkerStats,
    NO_LABEL, OperationStats, OperationTimes, Stats, StatsVisitor, SubmissionCounts, ThreadStats,
    Timings,
};
