//! Terminal timeline of hrx traces: `hrx-trace view TRACE` (DESIGN.md section 6).
//!
//! # Layout
//!
//! - [`state`]: the [`ViewState`] with its [`Action`]s, the layout and the lanes as drawn,
//!   over the model of a trace (spans per queue, hazards, events, statistics, the first
//!   failure), which is `hrx-analysis`'s [`timeline`](hrx_analysis::timeline) and
//!   re-exported there. It imports nothing from ratatui or crossterm.
//! - [`view`]: drawing with ratatui, reading the model and the view state only.
//! - [`app`]: the terminal and the event loop ([`run`]): crossterm input → [`Action`] →
//!   [`ViewState::update`] → [`render`].
//! - [`follow`]: a trace still being written, read one appended block at a time.
//! - [`frames`]: each frame to the terminal in one write.
//!
//! `view` opens a trace with [`open_or_summarise`]: a small one is read whole, a large one
//! reopened from the view cache ([`state::cache`]) or, the first time, drawn from its block
//! summaries ([`Overview`]) while [`open_counting`] builds the index behind the first
//! frame; `view --follow` opens with [`follow::TraceTail`].
//!
//! For tests and tools: [`load`] a trace into a [`Model`], make a [`ViewState`], drive it
//! with actions, and [`render_to_string`] the screen.
//!
//! ```
//! use hrx_tui::state::{Action, Model, ViewState, synthetic};
//!
//! let records: Vec<_> = synthetic::pipeline(synthetic::PipelineSpec::ops(40)).collect();
//! let model = Model::from_records(&records);
//! let mut state = ViewState::new(&model, 120, 40);
//! state.update(&model, Action::Tab);
//! let screen = hrx_tui::render_to_string(&model, &state, 120, 40);
//! assert!(screen.contains("GPU Compute"));
//! ```
#![warn(missing_docs)]

pub mod app;
pub mod follow;
pub mod frames;
pub mod state;
pub mod view;

pub use app::run;
pub use state::{Action, Model, ViewState};
pub use state::{LoadProgress, Overview};
pub use view::{
    details_scroll_limit, overview_to_string, render, render_overview, render_to_string,
};

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use thiserror::Error;

/// Why the viewer could not start or stopped.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TuiError {
    /// The trace could not be read (the reader's one-line error).
    #[error("{path}: {source}")]
    Read {
        /// The trace.
        path: PathBuf,
        /// The reader's error.
        source: hrx_capture::ReadError,
    },
    /// A trace to follow was not written in the time `view --follow` waits for it (still
    /// missing, or shorter than a header).
    #[error("gave up waiting {} s for {path} to be written: {path}: {source}", waited.as_secs())]
    NotWritten {
        /// The trace.
        path: PathBuf,
        /// How long it waited.
        waited: std::time::Duration,
        /// The reader's last error.
        source: hrx_capture::ReadError,
    },
    /// A followed trace could not be reopened or read on (`view --follow`).
    #[error("{path}: {source}")]
    Follow {
        /// The trace.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// An environment variable of the view's has a bad value (the line naming it).
    #[error("{0}")]
    Variable(String),
    /// The terminal could not be set up, drawn or restored.
    #[error("terminal: {0}")]
    Terminal(#[from] io::Error),
    /// Standard input or output is not a terminal (a pipe, a file): nothing to draw on.
    #[error("view needs an interactive terminal, and standard input or output is not one")]
    NotATerminal,
    /// Standard input and output are terminals, but the terminal did not answer the query
    /// for its cursor position (a pseudo-terminal nobody reads, as under `script ...
    /// /dev/null`): it would not answer keys either.
    #[error(
        "the terminal did not answer view's query for its cursor position: nothing seems to \
         read it (as under `script -c ... /dev/null`)"
    )]
    NoAnswer {
        /// crossterm's error (it waits 2 s for the answer).
        source: io::Error,
    },
}

/// Opens the trace at `path` for the timeline through the view cache
/// ([`state::cache`], configured from the environment): a trace opened before and
/// unchanged since is reopened by mapping its cached model, without reading the trace; any
/// other is read with [`load`] and cached for the next time.
///
/// # Errors
///
/// As [`load`]; [`TuiError::Variable`] for a bad view-cache variable.
pub fn open(path: &Path) -> Result<Model, TuiError> {
    let options = state::cache::CacheOptions::from_env().map_err(TuiError::Variable)?;
    state::cache::open(path, &options, None, || load(path))
}

/// What [`open_or_summarise`] found.
#[derive(Debug)]
pub enum Opening {
    /// The model, ready: a small trace read whole, or a large one reopened from the view
    /// cache.
    Ready(Box<Model>),
    /// A large trace not in the view cache: its block summaries, to draw while the index is
    /// built with [`open_counting`] (empty for a trace written before format 1.9), and the
    /// view cache's options to build it with.
    Summary(Overview, state::cache::CacheOptions),
}

/// Opens the trace at `path` as `view` does: a trace below the view cache's threshold is
/// read whole (fast); a larger one is reopened from the cache when it is current, and
/// otherwise only its block summaries are read ([`Overview::read`]), so the first frame
/// does not wait for the index.
///
/// # Errors
///
/// [`TuiError::Read`] as [`load`] (for a large trace: its header is unreadable);
/// [`TuiError::Variable`] for a bad view-cache variable.
pub fn open_or_summarise(path: &Path) -> Result<Opening, TuiError> {
    let options = state::cache::CacheOptions::from_env().map_err(TuiError::Variable)?;
    open_or_summarise_with(path, &options)
}

/// [`open_or_summarise`] with the view cache's options given.
///
/// # Errors
///
/// As [`open_or_summarise`].
pub fn open_or_summarise_with(
    path: &Path,
    options: &state::cache::CacheOptions,
) -> Result<Opening, TuiError> {
    if !state::cache::is_large(path, options.min_bytes) {
        return state::cache::open(path, options, None, || load(path))
            .map(|model| Opening::Ready(Box::new(model)));
    }
    let mut options = options.clone();
    if let Err(warning) = state::cache::usable(&options) {
        // Said now, before the terminal is taken; the index is then built without it.
        // A standard error that cannot be written loses the line, not the view.
        let _ =
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("warning: {warning}\n"));
        options.dir = None;
    }
    if let Some(dir) = &options.dir
        && let Ok(model) = state::cache::reopen(dir, path)
    {
        return Ok(Opening::Ready(Box::new(model)));
    }
    match Overview::read(path) {
        Ok(overview) => Ok(Opening::Summary(overview, options)),
        Err(source) => Err(TuiError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// As [`open`] with the view cache's `options`, counting the bytes of the trace read into
/// `read_bytes` as it goes (the summary frame's progress).
///
/// # Errors
///
/// As [`load`].
pub fn open_counting(
    path: &Path,
    options: &state::cache::CacheOptions,
    read_bytes: &AtomicU64,
) -> Result<Model, TuiError> {
    state::cache::open(path, options, Some(read_bytes), || {
        let read_error = |source| TuiError::Read {
            path: path.to_owned(),
            source,
        };
        let file = hrx_capture::open_file(path).map_err(read_error)?;
        let counting = state::stream::Counting::as_long_as_now(file, read_bytes).map_err(|e| {
            read_error(hrx_capture::ReadError {
                offset: 0,
                kind: e.into(),
            })
        })?;
        let reader = hrx_capture::TraceReader::new(counting).map_err(read_error)?;
        Model::from_reader(reader.check_submission_numbers()).map_err(read_error)
    })
}

/// Reads the trace at `path` into a model, streaming (records are not kept).
///
/// # Errors
///
/// [`TuiError::Read`] when the file cannot be opened or its header is unreadable, or an
/// I/O error occurs while reading; damaged blocks are skipped and reported in
/// [`state::TraceInfo::warnings`].
pub fn load(path: &Path) -> Result<Model, TuiError> {
    let read_error = |source| TuiError::Read {
        path: path.to_owned(),
        source,
    };
    // Submission numbers are checked: a gap (a block lost whole) is a warning.
    let reader = hrx_capture::TraceReader::open(path).map_err(read_error)?;
    Model::from_reader(reader.check_submission_numbers()).map_err(read_error)
}
