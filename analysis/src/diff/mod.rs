//! What `hrx-trace diff` reads of two traces, in memory proportional to graphs, buffers,
//! kernels and labels, never to submissions or regions (issue 21, point 2).
//!
//! Two streaming passes over each trace:
//!
//! 1. [`profile`]: the one pass of [`crate::scan`](mod@crate::scan) with a
//!    [`crate::StatsVisitor`] (per kernel statistics, the numbers `stats` prints) and per
//!    region duration [`Sketch`]es, keyed by [`RegionKey`] ([`crate::matching`], the rule
//!    `replay` uses too); with what the second
//!    pass needs to place outputs: prepared graphs by rank, each graph's writing uses, and how
//!    often each prepared graph was submitted (the *shape*); and per prepared graph a
//!    [`Fingerprint`] of what it read and wrote (its outputs' digests as a multiset, those
//!    of its first submission, the host's writes to what it reads before that), a few
//!    numbers a graph.
//! 2. [`match_files`]: both traces read at once, each on a thread of its own, walked in step
//!    by how many `Submit` records each has read: submission outcomes and output digests are
//!    keyed as they arrive and matched against the other side's pending keys. Keys wait in a
//!    window of at most [`MATCH_WINDOW`] per side; traces with the same submission sequence
//!    keep it nearly empty. Where the sequences differ (another run length, graphs submitted
//!    in another order) a key can leave the window unmatched: it is counted one-sided, and
//!    [`Matched::unmatched_past_window`] says how many were, never silently.
//!
//! Between the passes, [`align`] gives the new trace's prepared graphs the base's ranks where
//! a runtime of each prepared the same graph structures in another order (graphs built
//! concurrently by several threads), and where several graphs of one structure and
//! parameters (each thread's own, over its own data) were prepared in another order: those
//! pair by their [`Fingerprint`]s, and only where these do not tell them apart by order,
//! which [`Aligned::in_order`] says where it decides anything (session 57: the two threads
//! of a program recorded twice swapped graph ranks, and every output read as differing).
//!
//! Outputs are keyed as `diff` documents: by (runtime rank, prepared graph rank, the
//! submission's index among its graph's submissions, the first operation and use writing
//! the range, byte range) when both traces submitted the same prepared graphs (however
//! often each: a graph's extra submissions are one-sided, never paired with another
//! graph's), else by submission number, and by number too where either trace misses
//! submissions between those it holds (a damaged block took their records: a graph's n-th
//! would count one short from there). Outcomes are keyed alike, without the place.
//! Where either trace holds a range (a range recording or a trim, its `TraceRange`
//! records), only the submissions both hold are keyed, a graph's n-th counted among those
//! (a trim against its run pairs each submission with itself, whatever order the run's
//! threads submitted in): the rest are neither compared nor one-sided
//! ([`Matched::compared`]).
//! Timings obey the same rule: [`limit_timings`] reads a side that holds more than both
//! hold once more, keeping the timings of only the submissions both hold (a whole run
//! against its trim compares the trim's submissions' kernels and regions). Ranges with no
//! submission in common compare nothing, and say so ([`Comparison::nothing_compared`]).
//! A graph's n-th submission is counted in file order: a thread's records are written in
//! order, so a graph submitted from one thread is counted in submission order, and one
//! submitted from several threads has no order common to two runs anyway. A submission is
//! kept joinable for [`LIVE_WINDOW`] submits after its own; a digest or completion arriving
//! later than that (a hashing thread that many submissions behind) is counted in
//! [`Matched::late_records`] and compared as if its submit were missing. Digests come
//! joined to their submission from the one join of [`crate::scan`](mod@crate::scan)
//! ([`crate::scan::Visitor::output`]), which holds those read before their `Submit`.
//!
//! The files, one concern each:
//!
//! - `profile`: the first pass ([`Profile`], [`profile`]).
//! - `align`: prepared graphs paired by structure and what they computed between the
//!   passes ([`align`]).
//! - `range`: the submissions a range or a trim holds, and those both sides hold.
//! - `side`: one trace's second pass, keying outputs and outcomes as records arrive.
//! - `window`: the match windows of keys waiting for the other side, and their merge.
//! - `stream`: the second pass of both traces, each on a thread, walked in step
//!   ([`match_streams`], [`match_files`]).
//! - `verdict`: what the passes conclude: kernels judged by the one kernel rule
//!   ([`is_slow`]), regions paired, the verdict's counts and reasons ([`compare`]).

mod align;
mod profile;
mod range;
mod side;
mod stream;
mod verdict;
mod window;

pub use align::{
    Aligned, Fingerprint, OpShape, Realigned, RegionShape, Signature, align, align_graphs,
    align_regions, kernel_params, params, signature, structure,
};
pub use profile::{
    OpKey, OpProfile, Profile, limit_timings, limit_timings_records, profile, profile_records,
};
pub use range::{Held, common as common_range, describe as describe_range};
pub use stream::{match_files, match_streams};
pub use verdict::{
    AnnotationRow, Comparison, GraphChange, KernelRow, NOISE_FLOOR_NS, NOTHING_COMPARED, OpTimes,
    RegionTimes, Regions, Relabelled, SAME_AS_FAR_AS_BOTH_GO, Side, arguments, compare, is_slow,
    judge,
};

use crate::scan::Outcome;
use hrx_capture::ReadError;
use hrx_capture::schema::Record;

/// Submissions kept joinable after their `Submit` (see the module docs).
pub const LIVE_WINDOW: usize = 1 << 16;

/// Completions kept waiting for their `Submit` (digests wait in the one join, at most
/// [`crate::scan::PARK_LIMIT`]).
pub const PARK_LIMIT: usize = 1 << 16;

/// Keys of one kind (outputs, outcomes) kept waiting for the other side, per side: far more
/// than the sides' lag in step (a few batches of 1,024), so only keys of sequences that
/// differ leave it.
pub const MATCH_WINDOW: usize = 1 << 18;

/// Where an output lives, independent of buffer ids: the first operation of the submitted
/// graph (node, then use index) that writes exactly that buffer range. Buffer ids depend on
/// how a run allocated. A digest whose graph is not known keeps its buffer id.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// Node and use index in the graph.
    Use(u32, u32),
    /// `diff`'s place of a [`Place::Use`]: the writing operation by xxh3 of its name (a
    /// kernel's entry, `fill`, `copy`, ...), which of the graph's operations of that name it
    /// is (from 0, in node order), and the use index. Node numbers shift when a kernel is
    /// added to a graph; this does not, so the outputs of the operations both graphs hold
    /// still pair. The node (`node`, the side's own) is carried for reports, not compared.
    Op {
        /// xxh3 of the operation's name.
        name: u64,
        /// Which of the graph's operations of that name, from 0.
        nth: u32,
        /// The use index.
        use_: u32,
        /// The operation's node in this side's graph.
        node: u32,
    },
    /// Raw buffer id, when the operation writing the range is unknown.
    Buffer(u64),
}

impl Place {
    /// The ids [`Place::Op`] names a graph's operations by, in node order, from their names
    /// (as [`crate::Index::op_name`] gives them): xxh3 of the name, and how many operations
    /// of that name came before. The one rule of `diff` and `replay`.
    pub fn op_ids<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Vec<(u64, u32)> {
        let mut seen: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
        names
            .into_iter()
            .map(|name| {
                let id = xxhash_rust::xxh3::xxh3_64(name.as_ref().as_bytes());
                let nth = seen.entry(id).or_default();
                *nth += 1;
                (id, *nth - 1)
            })
            .collect()
    }

    /// A [`Place::Use`] as its [`Place::Op`], where `id` (its graph's [`Place::op_ids`] by
    /// node) knows its node; any other place as it is.
    pub fn by_op(self, id: impl Fn(u32) -> Option<(u64, u32)>) -> Place {
        match self {
            Place::Use(node, use_) => id(node).map_or(self, |(name, nth)| Place::Op {
                name,
                nth,
                use_,
                node,
            }),
            _ => self,
        }
    }

    /// What two places are compared, ordered and hashed by (not an `Op`'s node).
    fn identity(&self) -> (u8, u64, u32, u32) {
        match *self {
            Place::Use(node, use_) => (0, u64::from(node), use_, 0),
            Place::Buffer(buffer) => (1, buffer, 0, 0),
            Place::Op {
                name, nth, use_, ..
            } => (2, name, nth, use_),
        }
    }
}

impl PartialEq for Place {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for Place {}

impl std::hash::Hash for Place {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl PartialOrd for Place {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Place {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.identity().cmp(&other.identity())
    }
}

impl Place {
    /// Where `buffer[start..end]` is written in a graph whose writing uses are `writes`
    /// ((node, use index, buffer, start, end), any order): the first use, by node then use
    /// index, writing exactly that range; [`Place::Buffer`] when none does. The one rule of
    /// `diff` and `replay` for an output's place.
    pub fn of(writes: &[(u32, u32, u64, u64, u64)], buffer: u64, start: u64, end: u64) -> Place {
        writes
            .iter()
            .filter(|w| (w.2, w.3, w.4) == (buffer, start, end))
            .min_by_key(|w| (w.0, w.1))
            .map_or(Place::Buffer(buffer), |w| Place::Use(w.0, w.1))
    }
}

/// The graph rank of an output whose submit the trace lacks, or of every output keyed by
/// submission number.
pub const UNKNOWN_GRAPH: u64 = u64::MAX;

/// An output's key: (runtime rank, prepared graph rank or [`UNKNOWN_GRAPH`], the
/// submission's index among its graph's submissions or its number, place, start, end).
pub type OutputKey = (u32, u64, u64, Place, u64, u64);

/// An output as recorded: (xxh3, buffer id, submission number).
pub type OutputValue = (u64, u64, u64);

/// A submission's key, keyed as outputs are: (runtime rank, prepared graph rank or
/// [`UNKNOWN_GRAPH`], the submission's index among its graph's submissions or its number).
pub type SubmissionKey = (u32, u64, u64);

/// An output digest that differs between the two traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DifferingOutput {
    /// Its key.
    pub key: OutputKey,
    /// The base trace's digest, buffer and submission.
    pub base: OutputValue,
    /// The new trace's.
    pub new: OutputValue,
}

/// A submission whose outcome changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangedOutcome {
    /// Its key.
    pub key: SubmissionKey,
    /// Its submission number in the base trace, in the new.
    pub submission: [u64; 2],
    /// The base trace's outcome.
    pub base: Outcome,
    /// The new trace's.
    pub new: Outcome,
}

/// The second pass's counts and rows (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matched {
    /// Whether outputs and outcomes were keyed by graph and index (both traces submitted
    /// the same prepared graphs, however often each), else by submission number.
    pub by_graph: bool,
    /// Where either trace holds a range (a range recording, a trim): the submissions
    /// compared, those both hold, per runtime rank ([`common_range`]); a graph's n-th
    /// submission is counted among those. `None` when both are whole.
    pub compared: Option<std::collections::BTreeMap<u32, Held>>,
    /// Outputs compared and equal.
    pub identical: u64,
    /// Outputs compared and different, in key order.
    pub differing: Vec<DifferingOutput>,
    /// Outputs only in base, only in new.
    pub outputs_one_sided: [u64; 2],
    /// Pairs of outputs at one submission number made by different graphs, not compared:
    /// keyed by number for a trace's lost submissions though both prepared the same graphs,
    /// a multi-threaded program's runs number their submissions as the threads ran.
    pub outputs_of_other_graphs: u64,
    /// Of `outputs_one_sided`, those past the other trace's end where it is incomplete
    /// (its submission after the other's last of its graph): not a difference.
    pub outputs_past_end: [u64; 2],
    /// Submissions whose outcomes were compared.
    pub outcomes_compared: u64,
    /// Submissions on both sides with no recorded outcome on one of them: not compared.
    pub outcomes_unknown: u64,
    /// Submissions whose outcome changed, in key order.
    pub changed: Vec<ChangedOutcome>,
    /// Submissions only in base, only in new.
    pub submissions_one_sided: [u64; 2],
    /// Of `submissions_one_sided`, those past the other trace's end where it is incomplete.
    pub submissions_past_end: [u64; 2],
    /// Keys (outputs and submissions) of base, of new, that left the match window
    /// unmatched, included in the one-sided counts: where the submission sequences differ,
    /// some may have been matched by a pass holding every key (see the module docs). Keys
    /// past the other trace's end (it is incomplete) are not among them: they are counted
    /// in `outputs_past_end` and `submissions_past_end`.
    pub unmatched_past_window: [u64; 2],
    /// Digests and completions of base, of new, that arrived more than [`LIVE_WINDOW`]
    /// submits after their own submission, or waited for it past [`PARK_LIMIT`] (a
    /// digest: past [`crate::scan::PARK_LIMIT`]).
    pub late_records: [u64; 2],
    /// The most keys waiting in the match windows at once (both sides, both kinds).
    pub peak_pending: usize,
}
/// Which trace a [`DiffError`] is about.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The base trace could not be read.
    #[error("{0}")]
    Base(ReadError),
    /// The new trace could not be read.
    #[error("{0}")]
    New(ReadError),
}

/// Records of one side for [`match_streams`].
pub type Records<'a> = Box<dyn Iterator<Item = Result<Record, ReadError>> + Send + 'a>;

#[cfg(test)]
mod tests;
