//! The whole trace zoomed out before its index is built: per-lane busy time from the
//! recorder's block summaries (format 1.9, [`hrx_capture::summary`]).
//!
//! Building the full model of a large trace means decoding every record (29 s for 10M
//! regions on the 2-core build machine); reading the summaries means two small reads per
//! block (about a thousand blocks for 10M regions) and nothing per region. Like Tracy and
//! Perfetto's UI, which draw zoomed-out tracks from per-range summaries rather than from
//! the events, the first frame of `view` is drawn from these while the index is built
//! behind it (`hrx-tui`'s app), and says so.
//!
//! Each summary entry says: this lane ran `regions` regions between `start_ns` and
//! `end_ns`, covering `busy_ns` of that time. A column's density is the busy time of the
//! entries it overlaps, each spread evenly over its own range. Where an entry lies inside
//! one column this is exactly what the index's density (`hrx-tui`'s lane coverage) shows;
//! an entry across a column edge splits its busy time by length, so the two differ only
//! in the columns such entries touch, by at most their busy time (the tests check both).
//! The overview holds one entry per lane per block: its size grows with the trace's bytes
//! over the writer's block size (1 MiB), never with regions.

use super::lanes::TimeWindow;
use super::model::queue_slot;
use hrx_capture::ReadError;
use hrx_capture::schema::{Queue, RuntimeId};
use hrx_capture::summary::{Summaries, read_summaries};
use std::path::Path;

/// How far the index of a trace being opened has got, for the summary frame's status line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadProgress {
    /// Bytes of the trace read so far.
    pub read_bytes: u64,
    /// The trace's length in bytes.
    pub total_bytes: u64,
    /// Why the index could not be built, once it failed.
    pub failed: Option<String>,
}

/// One lane's summary entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverviewLane {
    /// The runtime.
    pub runtime: RuntimeId,
    /// The queue.
    pub queue: Queue,
    /// Regions summarised.
    pub regions: u64,
    /// (start, end, busy) ns per summary, sorted by start.
    entries: Vec<(u64, u64, u64)>,
}

impl OverviewLane {
    /// The entries: (first start, last end, busy) ns of each summary, sorted by start.
    pub fn entries(&self) -> &[(u64, u64, u64)] {
        &self.entries
    }

    /// Per column of `window`, the share of its time the lane was busy, in ‰ (see the
    /// module docs), comparable with the coverage the view draws of a [`super::Lane`].
    pub fn coverage(&self, window: TimeWindow, cols: u16) -> Vec<u16> {
        let n = usize::from(cols);
        let bounds: Vec<u64> = (0..=cols).map(|c| window.col_start_ns(c, cols)).collect();
        let mut covered = vec![0u128; n];
        let first = self
            .entries
            .partition_point(|&(_, end, _)| end <= window.start_ns);
        for &(start, end, busy) in &self.entries[first.min(self.entries.len())..] {
            if start >= window.end_ns {
                break;
            }
            // An instant entry occupies [start, start + 1), as an instant span does.
            let end = end.max(start + 1);
            let len = u128::from(end - start);
            let mut c = usize::from(window.col(start.max(window.start_ns), cols));
            while c < n && bounds[c] < end {
                let overlap = end.min(bounds[c + 1]).saturating_sub(start.max(bounds[c]));
                covered[c] += u128::from(busy) * u128::from(overlap) / len;
                c += 1;
            }
        }
        (0..n)
            .map(|c| match bounds[c + 1] - bounds[c] {
                0 => 0,
                w => (covered[c] * 1000 / u128::from(w)).min(1000) as u16,
            })
            .collect()
    }
}

/// The trace as its block summaries describe it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overview {
    lanes: Vec<OverviewLane>,
    range: Option<TimeWindow>,
    /// Summary blocks read.
    pub blocks: usize,
    /// Records blocks in the trace (those after a damaged block not counted).
    pub records_blocks: u64,
    /// Records in the trace, from the block headers.
    pub records: u64,
    /// Timings the recorder could not place on a lane.
    pub unplaced: u64,
    /// Summary blocks that did not decode.
    pub bad_summaries: u64,
    /// The byte offset and reason where the summaries stop before the end of the file.
    pub stopped: Option<(u64, String)>,
    /// The trace's length in bytes.
    pub file_len: u64,
    /// Records the recorder dropped, from the footer of a trace closed cleanly; `None`
    /// without one.
    pub dropped_records: Option<u64>,
    /// Whether a recorder held the file as it was opened (set by the viewer): a trace
    /// without a footer is then being written, not cut short.
    pub being_recorded: bool,
}

impl Overview {
    /// Reads the summaries of the trace at `path` (see [`read_summaries`]).
    ///
    /// # Errors
    ///
    /// As [`read_summaries`]: the file cannot be opened or its header is unreadable.
    pub fn read(path: &Path) -> Result<Overview, ReadError> {
        Ok(Overview::from_summaries(&read_summaries(path)?))
    }

    /// The overview of `summaries`.
    pub fn from_summaries(summaries: &Summaries) -> Overview {
        let mut lanes: Vec<OverviewLane> = Vec::new();
        let mut unplaced = 0;
        for block in &summaries.blocks {
            unplaced += u64::from(block.unplaced);
            for l in &block.lanes {
                let at = match lanes
                    .iter()
                    .position(|x| x.runtime == l.runtime && x.queue == l.queue)
                {
                    Some(at) => at,
                    None => {
                        lanes.push(OverviewLane {
                            runtime: l.runtime,
                            queue: l.queue,
                            regions: 0,
                            entries: Vec::new(),
                        });
                        lanes.len() - 1
                    }
                };
                let lane = &mut lanes[at];
                lane.regions += u64::from(l.regions);
                let end = l.last_end_ns.max(l.first_start_ns);
                lane.entries
                    .push((l.first_start_ns, end, l.busy_ns.min(end - l.first_start_ns)));
            }
        }
        lanes.sort_by_key(|l| (l.runtime, queue_slot(l.queue)));
        for lane in &mut lanes {
            lane.entries.sort_unstable();
            lane.entries.shrink_to_fit();
        }
        let start = lanes
            .iter()
            .filter_map(|l| l.entries.first())
            .map(|e| e.0)
            .min();
        let end = lanes
            .iter()
            .flat_map(|l| l.entries.iter().map(|e| e.1))
            .max();
        let range = start
            .zip(end)
            .map(|(s, e)| TimeWindow::new(s, e.max(s + 1)));
        Overview {
            lanes,
            range,
            blocks: summaries.blocks.len(),
            records_blocks: summaries.records_blocks,
            records: summaries.records,
            unplaced,
            bad_summaries: summaries.bad_summaries,
            stopped: summaries.stopped.clone(),
            file_len: summaries.file_len,
            dropped_records: summaries.dropped_records,
            being_recorded: false,
        }
    }

    /// Whether there is nothing to draw (a trace without summaries: written before format
    /// 1.9, or with no timings).
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// The lanes with timings, by runtime and in [`QUEUES`](crate::QUEUES) order.
    pub fn lanes(&self) -> &[OverviewLane] {
        &self.lanes
    }

    /// The time range the summaries cover (`None` when empty).
    pub fn time_range(&self) -> Option<TimeWindow> {
        self.range
    }

    /// Regions summarised, on all lanes.
    pub fn regions(&self) -> u64 {
        self.lanes.iter().map(|l| l.regions).sum()
    }

    /// Summary entries held, over all lanes: what the overview's memory grows with.
    pub fn entry_count(&self) -> usize {
        self.lanes.iter().map(|l| l.entries.len()).sum()
    }

    /// The display name of a lane, as [`super::Model::lane_name`] names it.
    pub fn lane_name(&self, lane: &OverviewLane) -> String {
        let name = super::model::queue_name(lane.queue);
        if self.lanes.iter().any(|l| l.runtime != lane.runtime) {
            format!("r{} {name}", lane.runtime)
        } else {
            name.to_owned()
        }
    }
}

/// The window over the summary frame: zoom and pan work on it before the index is ready
/// (each column is then drawn from the summaries it overlaps, so a deep zoom shows the
/// summaries' own resolution, one block's busy time spread over its range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverviewWindow {
    /// What is shown.
    pub window: TimeWindow,
    /// The whole trace's range (fit).
    pub range: TimeWindow,
}

/// A key on the summary frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverviewMove {
    /// Half the width, around the centre.
    ZoomIn,
    /// Twice the width, within the range.
    ZoomOut,
    /// A quarter of the width earlier.
    PanLeft,
    /// A quarter of the width later.
    PanRight,
    /// The whole range.
    Fit,
}

impl OverviewWindow {
    /// The whole range of `overview`, if it has one.
    pub fn fit(overview: &Overview) -> Option<OverviewWindow> {
        let range = overview.time_range()?;
        Some(OverviewWindow {
            window: range,
            range,
        })
    }

    /// Applies `step`; the window stays inside the range and at least
    /// [`super::MIN_WINDOW_NS`] wide.
    pub fn apply(&mut self, step: OverviewMove) {
        let (r, w) = (self.range, self.window);
        let width = w.width_ns();
        let centre = w.start_ns + width / 2;
        let (start, width) = match step {
            OverviewMove::Fit => (r.start_ns, r.width_ns()),
            OverviewMove::ZoomIn => {
                let new = (width / 2).max(super::MIN_WINDOW_NS);
                (centre.saturating_sub(new / 2), new)
            }
            OverviewMove::ZoomOut => {
                let new = width.saturating_mul(2).min(r.width_ns());
                (centre.saturating_sub(new / 2), new)
            }
            OverviewMove::PanLeft => (w.start_ns.saturating_sub(width / 4), width),
            OverviewMove::PanRight => (w.start_ns.saturating_add(width / 4), width),
        };
        let width = width.min(r.width_ns()).max(1);
        let start = start.clamp(r.start_ns, r.end_ns - width);
        self.window = TimeWindow::new(start, start + width);
    }
}

#[cfg(test)]
mod tests;
