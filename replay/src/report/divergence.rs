//! What differs between the capture and the replay, and its one-line text.

use super::Outcome;
use serde::Serialize;
use std::fmt;

/// What differs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DivergenceKind {
    /// An output range has a different digest.
    Output {
        /// Captured digest (JSON: a hex string).
        #[serde(with = "hrx_capture::schema::hex64")]
        expected: u64,
        /// Replay digest (JSON: a hex string).
        #[serde(with = "hrx_capture::schema::hex64")]
        replayed: u64,
        /// Largest `f32` difference, when compared with a tolerance.
        max_abs_diff: Option<f64>,
    },
    /// The capture recorded an output the replay did not produce.
    MissingOutput {
        /// Captured digest (JSON: a hex string).
        #[serde(with = "hrx_capture::schema::hex64")]
        expected: u64,
    },
    /// The replay produced an output the capture did not record.
    ExtraOutput {
        /// Replay digest (JSON: a hex string).
        #[serde(with = "hrx_capture::schema::hex64")]
        replayed: u64,
    },
    /// The submission ended differently.
    Status {
        /// Captured outcome.
        expected: Outcome,
        /// Captured error text.
        expected_error: String,
        /// Replay outcome.
        replayed: Outcome,
        /// Replay error text.
        replayed_error: String,
    },
    /// The replay refused a submit the capture accepted.
    Refused {
        /// The refusal.
        error: String,
    },
    /// One side quarantined the graph, the other did not.
    Quarantine {
        /// Captured.
        expected: bool,
        /// Replayed.
        replayed: bool,
    },
    /// A host write failed at replay (it succeeded in the capture).
    HostWrite {
        /// The error.
        error: String,
    },
}

/// A difference between capture and replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// Captured runtime id.
    pub runtime: u32,
    /// Captured submission index (for a host write: the submission it preceded).
    pub submission: u64,
    /// Region, where known.
    pub region: Option<u32>,
    /// The region, described: queue, kind and the operations involved.
    pub region_label: Option<String>,
    /// The operation writing an output (node in the graph), as `diff` places it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// That operation's use (binding) writing it.
    #[serde(rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_index: Option<u32>,
    /// Buffer, for output and host-write divergences.
    pub buffer: Option<u64>,
    /// Byte range in the buffer.
    pub range: Option<(u64, u64)>,
    /// Which repeat (from 0) showed it first.
    pub repeat: usize,
    /// In how many repeats it showed.
    pub repeats: usize,
    /// What differs.
    #[serde(flatten)]
    pub kind: DivergenceKind,
    /// Why it depends on when a concurrent failure happened, when it does (then it is listed
    /// in [`Report::timing_dependent`], not a regression).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing_dependent: Option<String>,
    #[serde(skip)]
    pub(crate) show_runtime: bool,
    #[serde(skip)]
    pub(crate) of_repeats: usize,
}

impl Divergence {
    /// Whether `other` is the same divergence (seen in another repeat).
    pub(crate) fn same_as(&self, other: &Divergence) -> bool {
        (
            self.runtime,
            self.submission,
            self.region,
            self.node,
            self.use_index,
            self.buffer,
            self.range,
        ) == (
            other.runtime,
            other.submission,
            other.region,
            other.node,
            other.use_index,
            other.buffer,
            other.range,
        ) && std::mem::discriminant(&self.kind) == std::mem::discriminant(&other.kind)
    }

    /// Sort key: runtime, submission, region, then buffer.
    pub(crate) fn key(&self) -> (u32, u64, u32, u8, u64, u64, usize) {
        let rank = match self.kind {
            DivergenceKind::HostWrite { .. } => 0,
            DivergenceKind::Refused { .. } => 1,
            DivergenceKind::Status { .. } => 2,
            DivergenceKind::Quarantine { .. } => 3,
            _ => 4,
        };
        (
            self.runtime,
            self.submission,
            self.region.unwrap_or(u32::MAX),
            rank,
            self.buffer.unwrap_or(0),
            self.range.map_or(0, |r| r.0),
            self.repeat,
        )
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.show_runtime {
            write!(f, "runtime {} ", self.runtime)?;
        }
        if matches!(self.kind, DivergenceKind::HostWrite { .. }) {
            write!(f, "before submission {}", self.submission)?;
        } else {
            write!(f, "submission {}", self.submission)?;
        }
        if let Some(region) = self.region {
            write!(f, " region {region}")?;
            if let Some(label) = &self.region_label {
                write!(f, " ({label})")?;
            }
        }
        // An output named as `diff` names it: the operation and use writing it, then its
        // buffer.
        match (self.node, self.use_index, self.buffer) {
            (Some(node), Some(use_index), Some(buffer)) => {
                write!(f, " node {node} use {use_index} (buffer {buffer})")?;
            }
            (_, _, Some(buffer)) => write!(f, " buffer {buffer}")?,
            _ => {}
        }
        if let Some((start, end)) = self.range {
            write!(f, " bytes {start}..{end}")?;
        }
        if self.repeats < self.of_repeats {
            write!(f, " (in {} of {} repeats", self.repeats, self.of_repeats)?;
            if self.repeat > 0 {
                write!(f, ", first in repeat {}", self.repeat + 1)?;
            }
            f.write_str(")")?;
        }
        match &self.kind {
            DivergenceKind::Output {
                expected,
                replayed,
                max_abs_diff,
            } => {
                write!(f, ": digest {replayed:#018x} expected {expected:#018x}")?;
                if let Some(diff) = max_abs_diff {
                    write!(f, " (max |diff| {diff:e} as f32, past the tolerance)")?;
                }
                Ok(())
            }
            DivergenceKind::MissingOutput { expected } => {
                write!(
                    f,
                    ": not written at replay, expected digest {expected:#018x}"
                )
            }
            DivergenceKind::ExtraOutput { replayed } => {
                write!(
                    f,
                    ": written at replay (digest {replayed:#018x}), not in the capture"
                )
            }
            DivergenceKind::Status {
                expected,
                expected_error,
                replayed,
                replayed_error,
            } => {
                write!(f, ": replay {}", replayed.name())?;
                if !replayed_error.is_empty() {
                    write!(f, " ({replayed_error})")?;
                }
                write!(f, ", capture {}", expected.name())?;
                if !expected_error.is_empty() {
                    write!(f, " ({expected_error})")?;
                }
                Ok(())
            }
            DivergenceKind::Refused { error } => {
                write!(
                    f,
                    ": the replay refused the submit ({error}); the capture accepted it"
                )
            }
            DivergenceKind::Quarantine { expected, replayed } => write!(
                f,
                ": graph quarantined at replay: {replayed}, in the capture: {expected}"
            ),
            DivergenceKind::HostWrite { error } => {
                write!(f, ": host write failed at replay: {error}")
            }
        }
    }
}
