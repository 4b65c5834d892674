//! Why a trace could not be replayed (exit code 2).
//!
//! A [`ReplayError`] means no verdict could be reached: the trace is unreadable or
//! inconsistent, something it needs is missing on this backend, or the replay runtime
//! could not be set up. A replay that ran and found differences is not an error: it is a
//! [`crate::Report`] with the verdict [`crate::Verdict::Regression`].

use hrx_capture::ShowPath;
use std::path::PathBuf;
use thiserror::Error;

/// The trace could not be replayed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The trace file could not be read (including a format major version this reader
    /// refuses).
    #[error("cannot read trace {}: {source}", path.shown())]
    Read {
        /// The file.
        path: PathBuf,
        /// The reader's error (it names the byte offset).
        source: hrx_capture::ReadError,
    },
    /// The trace is inconsistent or lacks data replay needs (contents of a host write,
    /// a blob, an operation of a prepared graph, ...).
    #[error("the trace cannot be replayed: {why}")]
    Unreplayable {
        /// What is wrong, naming the record and ids involved.
        why: String,
    },
    /// The recorder lost records while recording (lossy mode) that replay cannot do without
    /// (a `Submit`, a host write or an object's definition: refused before anything is
    /// replayed), or the trace does not hold together without what it lost: a replay cannot
    /// be exact, and this one cannot run. A trace that lost only records
    /// replay does without (region timings, ...) replays, its report opening with
    /// `cannot be exact`.
    #[error("cannot be exact: {lost} while recording, and replay needs what was lost: {why}")]
    RecordsLost {
        /// The losses, as [`hrx_capture::Lost`] says them (`N records lost (Submit 3, ...)
        /// in lossy mode`).
        lost: String,
        /// What does not hold together without them, naming the record and ids involved.
        why: String,
        /// Whether the recorder ran in lossy mode (else the losses came from write errors or
        /// from captures a fatal signal left unrun).
        lossy: bool,
    },
    /// The file is damaged or cut short ([`hrx_capture::Recovery::is_complete`] is false),
    /// and what it lacks leaves the rest inconsistent (a block with a `Submit` lost while a
    /// later one names its submission).
    #[error(
        "the trace cannot be replayed: the trace is incomplete ({how}), and replay needs what \
         it lacks: {why}"
    )]
    Incomplete {
        /// How the file ends ([`hrx_capture::Recovery::end`]) and the submissions missing.
        how: String,
        /// What does not hold together, naming the record and ids involved.
        why: String,
    },
    /// Captured contents a record refers to (a host write's, a range's snapshot, an output's)
    /// are not in the trace: the block that held their blob was lost (a damaged or cut-short
    /// file, records lost while recording). Names the record, the blob and the first
    /// submission that needs it, so that a trim before it replays.
    #[error(
        "the trace cannot be replayed: {}{what}: blob {hash:#018x} is not in the trace{}",
        context.as_deref().map(|c| format!("{c}, and replay needs what it lacks: ")).unwrap_or_default(),
        submission.map(|s| format!(", and submission {s} of runtime {runtime} needs it")).unwrap_or_default()
    )]
    BlobMissing {
        /// The captured runtime.
        runtime: u32,
        /// The record that refers to the blob.
        what: String,
        /// The blob's content hash.
        hash: u64,
        /// The first submission that needs it (the output's own; the first submitted at or
        /// after a host write or snapshot); `None` when none does.
        submission: Option<u64>,
        /// What the trace lacks, when it says so: `the trace is incomplete (HOW)` or
        /// `cannot be exact: N records lost ...`.
        context: Option<String>,
    },
    /// A float tolerance was asked for, but the trace holds no output contents to compare
    /// within it (only digests, which compare exactly).
    #[error(
        "--tolerance compares output contents, and this trace holds none (it was recorded \
         without HRX_TRACE_CONTENTS=1): only exact digests can be compared"
    )]
    ToleranceWithoutContents,
    /// A kernel has no code for the replay backend.
    #[error(
        "kernel {entry} (kernel {kernel} of runtime {runtime}) cannot be loaded on {backend}: {reason}"
    )]
    KernelMissing {
        /// The captured runtime.
        runtime: u32,
        /// The captured kernel id.
        kernel: u64,
        /// Entry name.
        entry: String,
        /// The replay backend.
        backend: String,
        /// The runtime's explanation.
        reason: String,
    },
    /// The replay runtime failed outside of the replayed work itself (opening the backend,
    /// allocating buffers, building or preparing graphs).
    #[error("replaying runtime {runtime}: {context}: {source}")]
    Runtime {
        /// The captured runtime.
        runtime: u32,
        /// What replay was doing.
        context: String,
        /// The runtime's error.
        source: hrx::Error,
    },
    /// A maximum slowdown was asked for, but a runtime replays on another backend than the
    /// one it was recorded on: its times are not comparable, so no slowdown can be judged.
    #[error(
        "runtime {runtime} was recorded on {recorded} and replays on {replaying}: timings are \
         not comparable, so no slowdown can be judged"
    )]
    TimingsNotComparable {
        /// The captured runtime.
        runtime: u32,
        /// The backend it was recorded on.
        recorded: String,
        /// The backend it replays on.
        replaying: String,
    },
    /// The trace holds no submission: nothing to compare, which is not a match (a recording
    /// cut short before its first submit, or a program that never submitted).
    #[error(
        "the trace cannot be replayed: it holds no submission to compare ({runtimes} runtime{}){}",
        if *runtimes == 1 { "" } else { "s" },
        incomplete_clause(*incomplete)
    )]
    NoSubmissions {
        /// Runtimes the trace holds.
        runtimes: usize,
        /// How the trace ended where it was not read whole, in `info`'s words
        /// ([`hrx_capture::Recovery::end`]: `not closed cleanly`, `closed, but damaged parts
        /// were skipped`, ...); `None` where it was.
        incomplete: Option<&'static str>,
    },
    /// `until` keeps none of the submissions the trace holds: a range or trim that starts
    /// past it (submissions are numbered as in the whole recording).
    #[error(
        "--until {until} keeps none of the submissions the trace holds: its first is \
         submission {first} (numbered as in the whole recording)"
    )]
    UntilKeepsNothing {
        /// The `until` asked for.
        until: u64,
        /// The first submission the trace holds.
        first: u64,
    },
    /// The replay's own measurements (its in-memory trace) could not be recorded or read.
    #[error("recording the replay's measurements: {why}")]
    Measurement {
        /// What failed.
        why: String,
    },
    /// A baseline file ([`crate::Baseline`]) could not be read or written, or is none.
    #[error("baseline {}: {why}", path.shown())]
    Baseline {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// What [`ReplayError::NoSubmissions`] adds for a trace not read whole, `incomplete` saying
/// how it ended: a recording not closed may have stopped before its first submission; a
/// closed one lost them in what it lacks (a damaged block: it read "not closed cleanly" of a
/// closed trace whose records block a flipped bit cost, where `info` said "closed, but
/// damaged parts were skipped"; a break-it pass).
fn incomplete_clause(incomplete: Option<&'static str>) -> String {
    match incomplete {
        None => String::new(),
        Some(end) if end == hrx_capture::Recovery::NOT_CLOSED => {
            "; it was not closed cleanly, so the recording may have stopped before them".to_owned()
        }
        Some(end) => format!("; it was {end}, so they may have been in what it lacks"),
    }
}

impl ReplayError {
    /// The process exit code for this error: always 2 ("the trace could not be replayed").
    pub fn exit_code(&self) -> i32 {
        2
    }

    /// Whether the trace lost a runtime's `RuntimeStart` (its block damaged or cut): no
    /// trim of it replays, as a trim keeps only what the trace holds.
    pub fn lacks_runtime_start(&self) -> bool {
        match self {
            ReplayError::Unreplayable { why } | ReplayError::Incomplete { why, .. } => {
                why.contains(NO_RUNTIME_START)
            }
            ReplayError::RecordsLost { why, .. } => why.contains(NO_RUNTIME_START),
            _ => false,
        }
    }

    pub(crate) fn unreplayable(why: impl Into<String>) -> ReplayError {
        ReplayError::Unreplayable { why: why.into() }
    }

    /// [`ReplayError::Incomplete`] of a file read with `recovery`: how it ends and the
    /// submissions missing, then `why`.
    pub(crate) fn incomplete(recovery: &hrx_capture::Recovery, why: String) -> ReplayError {
        ReplayError::Incomplete {
            how: incomplete_how(recovery),
            why,
        }
    }

    /// A [`ReplayError::BlobMissing`] said with `context` (what the trace lacks); any other
    /// error as it is.
    pub(crate) fn blob_context(self, said: String) -> ReplayError {
        match self {
            ReplayError::BlobMissing {
                runtime,
                what,
                hash,
                submission,
                context: None,
            } => ReplayError::BlobMissing {
                runtime,
                what,
                hash,
                submission,
                context: Some(said),
            },
            other => other,
        }
    }
}

/// How a file read with `recovery` ends, and the submissions missing.
pub(crate) fn incomplete_how(recovery: &hrx_capture::Recovery) -> String {
    let missing = match recovery.missing_submissions {
        0 => String::new(),
        1 => ", 1 submission missing".to_owned(),
        n => format!(", {n} submissions missing"),
    };
    format!("{}{missing}", recovery.end())
}

/// What a runtime's records say when its `RuntimeStart` is not in the trace
/// ([`ReplayError::lacks_runtime_start`]).
pub(crate) const NO_RUNTIME_START: &str = "has records but no RuntimeStart";
