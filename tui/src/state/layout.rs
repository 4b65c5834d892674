//! Where everything goes on the screen, as plain numbers.
//!
//! The layout is a pure function of the terminal size, the model and the [`ViewState`],
//! computed by the views to draw and by [`ViewState::update`] to map a mouse click back to
//! what was under it, so both always agree without the views writing anything back.
//!
//! ```text
//! row 0        header: file, window, span count
//! row 1        ruler            (gutter: lane names, GUTTER columns wide)
//! row 2        submits ticks | and Busy ticks B
//! row 3        event markers ✖ ☠ ∅ ! B
//! rows 4..     one lane per visible queue, 2 rows each when there is room
//!              (bars with labels, then submission/duration under them); with `o`, a
//!              row under each queue whose regions have operation timings (each GPU
//!              queue in a trace without any): its regions' operations as sub-spans
//! then         one row per host thread (format 1.14) while the panes keep 8 rows:
//!              its submits, waits, host callbacks and annotation ranges, its markers
//! lower area   details | hazards or events list        (or: statistics, whole width)
//! last row     status line: keys, search, messages
//! ```

use super::view_state::ViewState;
use super::{LaneRef, Model};

/// Columns of the lane-name gutter left of the timeline.
pub const GUTTER: u16 = 14;

/// A rectangle of terminal cells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Area {
    /// Left column.
    pub x: u16,
    /// Top row.
    pub y: u16,
    /// Columns.
    pub width: u16,
    /// Rows.
    pub height: u16,
}

impl Area {
    /// An area.
    pub const fn new(x: u16, y: u16, width: u16, height: u16) -> Area {
        Area {
            x,
            y,
            width,
            height,
        }
    }

    /// Whether the cell `(col, row)` is inside.
    pub fn contains(&self, col: u16, row: u16) -> bool {
        col >= self.x && col < self.x + self.width && row >= self.y && row < self.y + self.height
    }

    /// The area inside a one-cell border.
    pub fn inner(&self) -> Area {
        Area::new(
            self.x + 1,
            self.y + 1,
            self.width.saturating_sub(2),
            self.height.saturating_sub(2),
        )
    }
}

/// One visible lane and its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneRow {
    /// The lane.
    pub lane: LaneRef,
    /// Its rows, gutter included.
    pub area: Area,
    /// The row of its regions' operations under them ([`ViewState::show_ops`]; lanes
    /// with operation timings), gutter included.
    pub ops: Option<Area>,
}

/// Whether a lane gets a row of operations when they are shown: a lane whose regions have
/// operation timings; in a trace without any, each GPU queue (its row says that none were
/// recorded), not only those that could have had them.
fn has_ops_row(model: &Model, lane: LaneRef) -> bool {
    use hrx_capture::schema::Queue;
    if model.has_op_timings() {
        model.lane_op_span_count(lane) > 0
    } else {
        matches!(
            model.lane(lane).queue,
            Queue::GpuUpload | Queue::GpuCompute | Queue::GpuDownload
        )
    }
}

/// One visible host thread's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadRowArea {
    /// The row in [`Model::threads`].
    pub row: usize,
    /// Its one row, gutter included.
    pub area: Area,
}

/// What a screen cell shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A lane, at a timeline column.
    Lane {
        /// The lane.
        lane: LaneRef,
        /// Column within the timeline (0 = first time column).
        col: u16,
    },
    /// The ruler, submit ticks or event markers, at a timeline column.
    Axis {
        /// Column within the timeline.
        col: u16,
        /// Whether it is the event marker row.
        markers: bool,
    },
    /// An item of the open list.
    ListItem(usize),
    /// Nothing actionable.
    Nothing,
}

/// The screen layout (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenLayout {
    /// Header row.
    pub header: Area,
    /// Ruler row (whole width; time starts at column `GUTTER`).
    pub ruler: Area,
    /// Submit and Busy ticks row.
    pub ticks: Area,
    /// Event markers row.
    pub markers: Area,
    /// Visible lanes, top to bottom.
    pub lanes: Vec<LaneRow>,
    /// Rows per lane (1 or 2).
    pub lane_height: u16,
    /// Visible host threads' rows, below the lanes.
    pub threads: Vec<ThreadRowArea>,
    /// Details pane (with border).
    pub details: Option<Area>,
    /// The open list (with border).
    pub list: Option<Area>,
    /// Statistics (with border), replacing details and list.
    pub stats: Option<Area>,
    /// Status line.
    pub status: Area,
    /// Help overlay (with border).
    pub help: Option<Area>,
    /// Number of timeline columns.
    pub timeline_cols: u16,
}

/// The first item shown by a list of `len` items in `rows` rows with its cursor at
/// `cursor`: the cursor stays in the middle once the list scrolls.
pub fn list_offset(cursor: usize, len: usize, rows: usize) -> usize {
    if len <= rows || cursor < rows / 2 {
        0
    } else {
        (cursor - rows / 2).min(len - rows)
    }
}

impl ScreenLayout {
    /// The layout for a `width`×`height` terminal.
    pub fn compute(width: u16, height: u16, model: &Model, state: &ViewState) -> ScreenLayout {
        let row = |y: u16| Area::new(0, y.min(height.saturating_sub(1)), width, 1);
        let lanes = state.visible_lanes(model);
        // Top rows, status line, and at least 8 rows for the panes.
        let room = height.saturating_sub(4 + 1 + 8);
        let count = lanes.len() as u16;
        let ops_rows = if state.show_ops {
            lanes.iter().filter(|&&l| has_ops_row(model, l)).count() as u16
        } else {
            0
        };
        let lane_height = if count > 0 && room >= 2 * count + ops_rows {
            2
        } else {
            1
        };
        let mut y = 4;
        let mut rows = Vec::with_capacity(lanes.len());
        for lane in lanes {
            if y + lane_height > height.saturating_sub(1) {
                break;
            }
            let area = Area::new(0, y, width, lane_height);
            y += lane_height;
            let ops = (state.show_ops && has_ops_row(model, lane) && y < height.saturating_sub(1))
                .then(|| {
                    y += 1;
                    Area::new(0, y - 1, width, 1)
                });
            rows.push(LaneRow { lane, area, ops });
        }
        // Host threads below the queues, one row each, while the panes keep 8 rows.
        let mut threads = Vec::new();
        for i in 0..model.threads().len() {
            if y + 1 + 8 > height.saturating_sub(1) {
                break;
            }
            threads.push(ThreadRowArea {
                row: i,
                area: Area::new(0, y, width, 1),
            });
            y += 1;
        }
        let status = row(height.saturating_sub(1));
        let lower = Area::new(0, y.min(status.y), width, status.y.saturating_sub(y));
        let (mut details, mut list, mut stats) = (None, None, None);
        if lower.height >= 3 {
            if state.show_stats {
                stats = Some(lower);
            } else if state.list.is_some() {
                let left = width / 2;
                details = Some(Area::new(0, lower.y, left, lower.height));
                list = Some(Area::new(left, lower.y, width - left, lower.height));
            } else {
                details = Some(lower);
            }
        }
        let help = state.show_help.then(|| {
            let w = width.min(72);
            let h = height.min(super::view_state::KEYS.len() as u16 + 4);
            Area::new((width - w) / 2, (height - h) / 2, w, h)
        });
        ScreenLayout {
            header: row(0),
            ruler: row(1),
            ticks: row(2),
            markers: row(3),
            lanes: rows,
            lane_height,
            threads,
            details,
            list,
            stats,
            status,
            help,
            timeline_cols: width.saturating_sub(GUTTER),
        }
    }

    /// What is at `(col, row)`.
    pub fn hit(&self, col: u16, row: u16, list_len: usize, list_cursor: usize) -> Hit {
        if self.help.is_some() {
            return Hit::Nothing;
        }
        let time_col = col.checked_sub(GUTTER);
        for lane in &self.lanes {
            // A click on the operations' row selects the region above them.
            if lane.area.contains(col, row) || lane.ops.is_some_and(|a| a.contains(col, row)) {
                return match time_col {
                    Some(col) => Hit::Lane {
                        lane: lane.lane,
                        col,
                    },
                    None => Hit::Nothing,
                };
            }
        }
        if let Some(col) = time_col
            && (self.ruler.contains(0, row)
                || self.ticks.contains(0, row)
                || self.markers.contains(0, row))
        {
            return Hit::Axis {
                col,
                markers: self.markers.contains(0, row),
            };
        }
        if let Some(list) = self.list
            && list.inner().contains(col, row)
        {
            let rows = usize::from(list.inner().height);
            let item = list_offset(list_cursor, list_len, rows) + usize::from(row - list.y - 1);
            if item < list_len {
                return Hit::ListItem(item);
            }
        }
        Hit::Nothing
    }
}
