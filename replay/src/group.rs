//! The text report's submission table: equal rows of consecutive submissions grouped.
//!
//! Consecutive submissions of one runtime whose outcomes and output counts are equal share
//! one line, `first..=last` (the CLI's inclusive range notation), with the graphs they ran (a pipeline that rotates three frame
//! contexts submits three graphs in turn; its clean replay is still one line). A clean
//! replay of a million submissions is one line, not a million; `--report json` lists every
//! row. At most [`MAX_GROUPS`] lines are kept: what follows is counted.

use crate::report::{Outcome, SubmissionRow};
use serde::Serialize;

/// Most lines the table keeps.
pub const MAX_GROUPS: usize = 10_000;
/// Most graphs a line names (then `…`).
const MAX_GRAPHS: usize = 4;

/// One line of the table: equal rows of consecutive submissions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubmissionGroup {
    /// Captured runtime id.
    pub runtime: u32,
    /// First and last submission of the run.
    pub first: u64,
    /// See `first`.
    pub last: u64,
    /// The prepared graphs they ran, in order of first use (at most four kept).
    pub graphs: Vec<u64>,
    /// Whether more graphs ran than `graphs` lists.
    pub more_graphs: bool,
    /// The row's cells after the graph: captured, replayed, outputs, mark.
    pub cells: [String; 4],
}

impl SubmissionGroup {
    /// The cells of `row` after its graph.
    fn cells(row: &SubmissionRow) -> [String; 4] {
        let mut outputs = format!("{}/{} match", row.matched, row.outputs);
        if row.excluded > 0 {
            outputs.push_str(&format!(", {} excluded", row.excluded));
        }
        [
            row.captured.map_or("?", Outcome::name).to_string(),
            row.replayed.map_or("refused", Outcome::name).to_string(),
            outputs,
            if row.diverged {
                "DIVERGED"
            } else if row.timing_dependent {
                "timing-dependent"
            } else {
                ""
            }
            .to_string(),
        ]
    }

    /// `first..=last` (both included, as the CLI's ranges write it: `trim --submissions 4..=6`), or the one submission.
    pub fn submissions(&self) -> String {
        if self.first == self.last {
            self.first.to_string()
        } else {
            format!("{}..={}", self.first, self.last)
        }
    }

    /// The graphs, comma-separated.
    pub fn graphs_text(&self) -> String {
        let mut text = self
            .graphs
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        if self.more_graphs {
            text.push_str(",…");
        }
        text
    }
}

/// Builds the table row by row.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Grouper {
    /// The lines, in submission order.
    pub groups: Vec<SubmissionGroup>,
    /// Submissions after the last kept line (past [`MAX_GROUPS`] lines).
    pub omitted: u64,
}

impl Grouper {
    /// Adds the next row.
    pub fn push(&mut self, row: &SubmissionRow) {
        let cells = SubmissionGroup::cells(row);
        if let Some(last) = self.groups.last_mut()
            && self.omitted == 0
            && last.runtime == row.runtime
            && row.submission == last.last + 1
            && last.cells == cells
        {
            last.last = row.submission;
            if !last.graphs.contains(&row.graph) {
                if last.graphs.len() < MAX_GRAPHS {
                    last.graphs.push(row.graph);
                } else {
                    last.more_graphs = true;
                }
            }
            return;
        }
        if self.groups.len() >= MAX_GROUPS {
            self.omitted += 1;
            return;
        }
        self.groups.push(SubmissionGroup {
            runtime: row.runtime,
            first: row.submission,
            last: row.submission,
            graphs: vec![row.graph],
            more_graphs: false,
            cells,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Grouper;
    use crate::report::{Outcome, SubmissionRow};

    fn row(submission: u64) -> SubmissionRow {
        SubmissionRow {
            runtime: 1,
            submission,
            graph: 7,
            captured: Some(Outcome::Ok),
            captured_error: String::new(),
            replayed: Some(Outcome::Ok),
            replayed_error: String::new(),
            outputs: 1,
            matched: 1,
            excluded: 0,
            diverged: false,
            timing_dependent: false,
        }
    }

    /// A line's `first..=last` includes every submission between: a submission the table
    /// has no row for (not in the trace) starts a new line rather than hide in a range.
    #[test]
    fn a_line_holds_only_consecutive_submissions_written_inclusively() {
        let mut grouper = Grouper::default();
        for submission in [1, 2, 3, 5, 6, 8] {
            grouper.push(&row(submission));
        }
        let lines: Vec<String> = grouper.groups.iter().map(|g| g.submissions()).collect();
        assert_eq!(lines, ["1..=3", "5..=6", "8"]);
    }
}
