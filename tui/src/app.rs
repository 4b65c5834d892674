//! The terminal and the event loop of `hrx-trace view`.
//!
//! [`run`] opens the trace first ([`crate::open_or_summarise`]), so an unreadable file fails
//! with the reader's one-line error before the terminal is touched. A large trace not in
//! the view cache is shown at once as its summary frame ([`crate::Overview`]: the whole
//! trace zoomed out from the recorder's block summaries, saying so) while the index is
//! built on another thread with its progress in the status line; only `q` works until it
//! is ready, then the timeline takes over at the same zoom. It then takes the terminal (raw mode,
//! alternate screen, mouse capture) behind a guard that gives it back on every exit path:
//! on return, on error, and on panic through a panic hook installed for the session (the
//! previous hook runs after the terminal is restored, so the panic message is readable).
//!
//! Each input event becomes at most one [`Action`] ([`map_event`]), applied with
//! [`ViewState::update`]; then the screen is drawn again, each frame in one write
//! ([`crate::frames`]: never half a frame on the screen).
//!
//! With `follow` (`view --follow`), the loop also wakes every [`FOLLOW_POLL`] and, when the
//! file grew (the writer flushes every 100 ms; the reader recovers an unclosed file), reads
//! only the blocks appended since and updates the one model it shows in place
//! ([`crate::follow::TraceTail`]: the loop borrows it from the follower), carries the view
//! over to it ([`ViewState::carry_over`], by keys taken before the refresh) and draws it,
//! so new blocks are on screen within about one flush and one poll. The record rate is measured over the last second or more of reads.
//! A refresh reads for [`FOLLOW_READ`] at most, then draws what it has: a recording written
//! faster than the viewer reads it leaves it behind, which the status line says (`behind:
//! 310 MiB not read`), and the next refresh goes on at once. `view --follow` checks for a
//! terminal before it reads the trace, and opens a large trace that is already closed
//! cleanly as `view` does, through the view cache (it holds a followed trace's whole model
//! in memory, [`crate::follow`]), saying so.
//! A followed trace stops being live when it is closed, when its recorded process died
//! of a signal (a `FatalSignal`: the status says `crashed: SIGSEGV`), or when it is neither
//! and nobody writes it any more (no recorder holds its lock and it stopped growing,
//! [`hrx_capture::WriterWatch`]: a recorder killed with no note of it, a file cut short;
//! the status says `ended: not closed and no recorder is writing it`); a file truncated
//! and written again by a new recording is opened afresh, and the status says so.
//! Without `follow`, the trace opens through the view cache ([`crate::open`]).

use crate::follow::TraceTail;
use crate::frames::FrameWriter;
use crate::state::units;
use crate::state::{
    Action, LoadProgress, Model, Overview, OverviewMove, OverviewWindow, ViewState,
};
use crate::{Opening, TuiError, details_scroll_limit, render};
use crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use crossterm::{cursor, execute, terminal};
use hrx_analysis::stats_follow::ReadBudget;
use hrx_capture::ShowPath;
use hrx_capture::WriterWatch;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::IsTerminal;
use std::io::{self, Stdout};
use std::panic::{self, PanicHookInfo};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

/// The viewer's terminal: each frame goes to standard output in one write, as one
/// synchronized update ([`FrameWriter`]: a frame written 1 KiB at a time showed half-drawn).
type ViewTerminal = Terminal<CrosstermBackend<FrameWriter<Stdout>>>;

/// How often a followed trace is checked for growth.
pub const FOLLOW_POLL: Duration = Duration::from_millis(50);

/// How long one refresh of a followed trace reads at most before it draws what it read (a
/// recording may be written faster than it is read: the next refresh goes on from there).
pub const FOLLOW_READ: Duration = Duration::from_millis(200);

/// The budget of one read of a followed trace ([`FOLLOW_READ`] from now).
fn follow_budget() -> ReadBudget {
    ReadBudget::refresh(Instant::now() + FOLLOW_READ)
}

/// How long `view --follow` waits for a trace that does not exist yet, or is still empty
/// (a recording started just before the viewer).
pub const FOLLOW_WAIT: Duration = Duration::from_secs(30);

/// Opens the trace at `path` for following, waiting up to `wait` while it is missing or has
/// no complete header yet (the recorder creates the file, then writes), saying so once on
/// standard error. Any other error, or the last one after `wait`, is returned at once.
///
/// # Errors
///
/// [`TuiError::Read`] as [`crate::load`]; [`TuiError::NotWritten`] where it gave up waiting.
pub fn wait_for_trace(path: &Path, wait: Duration) -> Result<TraceTail, TuiError> {
    let open = |path: &Path| TraceTail::open_within(path, follow_budget());
    hrx_capture::wait_for_trace(path, wait, open).map_err(|w| match (w.gave_up_after, w.error) {
        (Some(waited), TuiError::Read { path, source }) => TuiError::NotWritten {
            path,
            waited,
            source,
        },
        (_, error) => error,
    })
}

/// Environment variable: `1` draws ASCII only (every glyph: borders, bars, text), `0`, empty
/// or unset Unicode ([`ascii_value`]).
pub const ASCII_ENV: &str = "HRX_TUI_ASCII";

/// Whether [`ASCII_ENV`], of value `value` (`None`: unset), asks for ASCII: `1` yes; `0`,
/// empty or unset no.
///
/// # Errors
///
/// The line naming the variable, for any other value, as every `HRX_` switch says it (it
/// took `yes`, `2` and empty for on).
pub fn ascii_value(value: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    hrx_capture::switch::switch_value(ASCII_ENV, value).map(|on| on.unwrap_or(false))
}

/// Environment variable for scripts, CI and benchmarks (documented in the README's
/// environment table): `WIDTHxHEIGHT` (e.g. `120x40`) makes [`run`] load the trace, draw its
/// first frame off-screen at that size, print it to standard output and return, without a
/// terminal (the time to the first frame measured so: `scripts/bench-view.sh`).
pub const HEADLESS_FRAME_ENV: &str = "HRX_TUI_HEADLESS_FRAME";

/// Environment variable for scripts and benchmarks: `1`, with [`HEADLESS_FRAME_ENV`], when the
/// first frame was drawn from the block summaries, also builds the index as `view` does
/// behind that frame, then prints the full frame after it, so the build's time and memory
/// can be measured too (and the view cache is written). `0`, empty or unset: not; any other
/// value is refused, naming it, as every `HRX_` switch's is.
pub const HEADLESS_INDEX_ENV: &str = "HRX_TUI_HEADLESS_INDEX";

/// The first frame of the trace at `path`, drawn off-screen at `width` x `height` (in ASCII
/// only with `ascii`), as text, and whether it was drawn from the block summaries (the
/// index not built yet).
///
/// # Errors
///
/// [`TuiError::Read`] as [`crate::load`]. The trace is opened as `view` opens it
/// ([`crate::open_or_summarise`]), asked first whether a recorder holds it, as `view` asks
/// ([`hrx_capture::being_recorded`]): the Trace pane of a trace being recorded says so.
pub fn first_frame(
    path: &Path,
    width: u16,
    height: u16,
    ascii: bool,
) -> Result<(String, bool), TuiError> {
    let held = hrx_capture::being_recorded(path);
    first_frame_of(path, width, height, ascii, held)
}

/// [`first_frame`], `held` saying whether a recorder held the trace as it was opened.
fn first_frame_of(
    path: &Path,
    width: u16,
    height: u16,
    ascii: bool,
    held: bool,
) -> Result<(String, bool), TuiError> {
    Ok(match crate::open_or_summarise(path)? {
        Opening::Ready(model) => (full_frame(&model, width, height, ascii, held), false),
        Opening::Summary(mut overview, _) => {
            overview.being_recorded = held;
            let progress = LoadProgress {
                total_bytes: overview.file_len,
                ..LoadProgress::default()
            };
            let frame = crate::overview_to_string(&overview, &progress, ascii, width, height);
            (frame, true)
        }
    })
}

/// The first frame of `model`, as `view` draws it; `held`: a recorder held the trace as it
/// was opened (its Trace pane read "not closed cleanly" of a trace being recorded, where
/// the interactive view said "being recorded now": a break-it pass).
fn full_frame(model: &Model, width: u16, height: u16, ascii: bool, held: bool) -> String {
    let mut state = ViewState::new(model, width, height);
    state.ascii = ascii;
    state.being_recorded = held;
    crate::render_to_string(model, &state, width, height)
}

/// The most cells a headless frame may have: a terminal's size many times over (a 4K
/// screen of 6-pixel cells is about 640x270). Each cell costs ratatui's buffer and the text
/// about 150 bytes: `65535x65535` passed as two `u16`s and the process aborted allocating
/// 206 GB (a break-it pass, session 58).
const MAX_HEADLESS_CELLS: u32 = 1_000_000;

/// `WIDTHxHEIGHT` as two non-zero sizes of at most [`MAX_HEADLESS_CELLS`] cells.
fn parse_size(text: &str) -> Option<(u16, u16)> {
    let (w, h) = text.split_once('x')?;
    let (w, h): (u16, u16) = (w.parse().ok()?, h.parse().ok()?);
    (w > 0 && h > 0 && u32::from(w) * u32::from(h) <= MAX_HEADLESS_CELLS).then_some((w, h))
}

/// Opens the trace at `path` and runs the viewer until the user quits (or, with
/// [`HEADLESS_FRAME_ENV`] set, prints the first frame and returns).
///
/// # Errors
///
/// [`TuiError::Read`] when the trace cannot be read (before the terminal is touched);
/// [`TuiError::NotATerminal`] when standard input or output is not a terminal (checked
/// before it is touched, so no escape sequences reach a pipe or file);
/// [`TuiError::NoAnswer`] when the terminal does not answer a query (a pseudo-terminal
/// nobody reads); [`TuiError::Terminal`] when the terminal cannot be set up or drawn.
pub fn run(path: &Path, follow: bool) -> Result<(), TuiError> {
    run_coloured(path, follow, !no_color(std::env::var_os("NO_COLOR")))
}

/// Whether `NO_COLOR` (its value) asks for no colour: set and not empty
/// (<https://no-color.org>).
pub fn no_color(value: Option<std::ffi::OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

/// [`run`], in colour or not (`hrx-trace --color never view`, `NO_COLOR`): without colour,
/// every cell keeps its text and modifiers (bold, underline) and a cell drawn on a coloured
/// background is drawn reversed, so the selection and the failure marks still stand out.
///
/// # Errors
///
/// As [`run`].
pub fn run_coloured(path: &Path, follow: bool, colour: bool) -> Result<(), TuiError> {
    MONOCHROME.store(!colour, Ordering::Relaxed);
    // Read first, so that a bad value fails before anything is drawn, headless or not.
    let ascii = ascii_value(std::env::var_os(ASCII_ENV).as_deref()).map_err(TuiError::Variable)?;
    // A switch as every `HRX_` switch reads (any value but `0` was on: `yes`, `no`, empty).
    let headless_index = hrx_capture::switch::switch_value(
        HEADLESS_INDEX_ENV,
        std::env::var_os(HEADLESS_INDEX_ENV).as_deref(),
    )
    .map_err(TuiError::Variable)?
        == Some(true);
    if let Some(size) = std::env::var_os(HEADLESS_FRAME_ENV) {
        let size = size.to_string_lossy();
        // A bad value is the variable's error, not the terminal's (no `terminal:` before it).
        let (width, height) = parse_size(&size).ok_or_else(|| {
            TuiError::Variable(format!(
                "{HEADLESS_FRAME_ENV}: expected WIDTHxHEIGHT as 120x40, each at most 65535 \
                 and of at most {MAX_HEADLESS_CELLS} cells, got {size:?}"
            ))
        })?;
        // Asked before the read, as every reading verb asks.
        let held = hrx_capture::being_recorded(path);
        let (frame, summary) = first_frame_of(path, width, height, ascii, held)?;
        io::Write::write_all(&mut io::stdout().lock(), frame.as_bytes())?;
        if summary && headless_index {
            let model = crate::open(path)?;
            let frame = full_frame(&model, width, height, ascii, held);
            io::Write::write_all(&mut io::stdout().lock(), frame.as_bytes())?;
        }
        return Ok(());
    }
    // Before the trace is read: a followed one may take long to read, or not exist yet.
    let terminal = || io::stdin().is_terminal() && io::stdout().is_terminal();
    if follow && !terminal() {
        return Err(TuiError::NotATerminal);
    }
    let follow = follow && !opened_as_closed(path)?;
    // Asked before the read, as every reading verb asks: a recording may end during it.
    let held = !follow && hrx_capture::being_recorded(path);
    let opened = if follow {
        Opened::Followed(Box::new(wait_for_trace(path, FOLLOW_WAIT)?))
    } else {
        Opened::Read(crate::open_or_summarise(path)?)
    };
    if !terminal() {
        return Err(TuiError::NotATerminal);
    }
    let mut guard = TerminalGuard::enter()?;
    let mut shown = match opened {
        Opened::Followed(tail) => Shown::Followed(Box::new(Follower::new(path, *tail))),
        Opened::Read(Opening::Ready(model)) => Shown::Model(model),
        Opened::Read(Opening::Summary(mut overview, options)) => {
            overview.being_recorded = held;
            match wait_for_index(&mut guard.terminal, path, &overview, options, ascii)? {
                Some(model) => Shown::Model(Box::new(model)),
                None => return Ok(guard.leave()?),
            }
        }
    };
    let size = guard.terminal.size()?;
    let mut state = ViewState::new(shown.model(), size.width, size.height);
    state.ascii = ascii;
    state.being_recorded = held;
    if let Shown::Followed(f) = &shown {
        state.start_live();
        let model = f.tail.model();
        state.model_changed(model, model, 0.0);
        state.live_ended_by(f.ended_by());
        state.live_unclosed(f.unclosed);
        state.live_behind(f.tail.unread_bytes());
    }
    event_loop(&mut guard.terminal, &mut shown, &mut state)?;
    guard.leave()?;
    Ok(())
}

/// Whether `view --follow` of the trace at `path` opens it as `view` does, saying so on
/// standard error: it is large (the view cache's threshold, [`crate::open_or_summarise`])
/// and already closed cleanly ([`closed_and_large`]).
fn opened_as_closed(path: &Path) -> Result<bool, TuiError> {
    let options = crate::state::cache::CacheOptions::from_env().map_err(TuiError::Variable)?;
    let closed = closed_and_large(path, options.min_bytes);
    if closed {
        // A standard error that cannot be written loses the line, not the view.
        let _ = io::Write::write_fmt(
            &mut io::stderr(),
            format_args!(
                "note: {}: closed cleanly, nothing more to follow: opened as `view` opens it \
                 (a new recording to it is not followed)\n",
                path.shown()
            ),
        );
    }
    Ok(closed)
}

/// Whether the trace at `path` is large for the threshold `min_bytes`
/// ([`crate::state::cache::is_large`]: captured contents stored apart not counted) and ends
/// with an intact footer and
/// trailer: a recording that ended, with nothing more to follow. `view --follow` opens such
/// a trace through the view cache, as `view` does, since a followed trace's model is held
/// in memory whole (about 110-220 bytes a region: 2 GB for 3M regions). `false` when it
/// cannot be read (the follower then says why, or waits for it).
pub fn closed_and_large(path: &Path, min_bytes: u64) -> bool {
    crate::state::cache::is_large(path, min_bytes)
        && hrx_capture::TraceReader::open(path)
            .and_then(|r| r.ends_cleanly())
            .unwrap_or(false)
}

/// What [`run`] opened before it takes the terminal.
enum Opened {
    /// A followed trace (`view --follow`), read whole.
    Followed(Box<TraceTail>),
    /// A trace read through the view cache, or its summary while its index is built.
    Read(Opening),
}

/// What the event loop shows: a model it owns, or a followed trace's, which its follower
/// updates in place and the loop borrows between refreshes.
enum Shown<'a> {
    Model(Box<Model>),
    Followed(Box<Follower<'a>>),
}

impl Shown<'_> {
    fn model(&self) -> &Model {
        match self {
            Shown::Model(model) => model,
            Shown::Followed(f) => f.tail.model(),
        }
    }
}

/// Shows the summary frame of `overview` while the index of the trace at `path` is built on
/// another thread, until it is ready (`Some`) or the user quits (`q`, Esc, Ctrl-C: `None`).
/// Other keys do nothing yet: the status line says what waits for the index.
fn wait_for_index(
    terminal: &mut ViewTerminal,
    path: &Path,
    overview: &Overview,
    options: crate::state::cache::CacheOptions,
    ascii: bool,
) -> Result<Option<Model>, TuiError> {
    let read_bytes = Arc::new(AtomicU64::new(0));
    let (done, built) = mpsc::channel();
    // Streamed into the view cache, the index does not hold the trace's regions in
    // memory; without a cache it is built in memory, and may not fit.
    let too_large = match options.dir {
        Some(_) => None,
        None => index_too_large(overview.records, available_memory()),
    };
    if too_large.is_none() {
        let read_bytes = Arc::clone(&read_bytes);
        let path = path.to_owned();
        std::thread::Builder::new()
            .name("hrx-view-index".to_owned())
            .spawn(move || {
                let _ = done.send(crate::open_counting(&path, &options, &read_bytes));
            })?;
    }
    let mut window = OverviewWindow::fit(overview);
    loop {
        let progress = LoadProgress {
            read_bytes: read_bytes.load(Ordering::Relaxed),
            total_bytes: overview.file_len,
            failed: too_large.clone(),
        };
        terminal.draw(|frame| {
            let shown = window.map(|w| w.window);
            crate::render_overview(overview, shown, &progress, ascii, frame);
            monochrome(frame.buffer_mut());
        })?;
        match built.recv_timeout(LOADING_POLL) {
            Ok(model) => return model.map(Some),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Never started (too large for memory): the summary stays.
            Err(mpsc::RecvTimeoutError::Disconnected) if too_large.is_some() => {
                std::thread::sleep(LOADING_POLL);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the index builder stopped").into());
            }
        }
        while event::poll(Duration::ZERO)? {
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind == KeyEventKind::Release {
                continue;
            }
            let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
            let shift = key.modifiers.contains(KeyModifiers::SHIFT);
            let step = match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(None),
                KeyCode::Char('c') if ctrl => return Ok(None),
                KeyCode::Char('+' | '=') => OverviewMove::ZoomIn,
                KeyCode::Char('-' | '_') => OverviewMove::ZoomOut,
                KeyCode::Char('<') => OverviewMove::PanLeft,
                KeyCode::Char('>') => OverviewMove::PanRight,
                KeyCode::Left if shift => OverviewMove::PanLeft,
                KeyCode::Right if shift => OverviewMove::PanRight,
                KeyCode::Char('f') => OverviewMove::Fit,
                _ => continue,
            };
            if let Some(w) = window.as_mut() {
                w.apply(step);
            }
        }
    }
}

/// Bytes the index takes per record of the trace while it is built in memory (the view
/// cache off), rounded up from the 10M-region trace (1,139 MiB peak for 30M records:
/// BENCHMARKS.md, "Timeline at scale").
const INDEX_BYTES_PER_RECORD: u64 = 40;

/// Why the index of a trace of `records` records is not built when `available` bytes of
/// memory are free (more than 80% of them needed); `None` when it fits or the free memory
/// is unknown. The summary frame then stays, saying so, rather than the viewer being
/// killed for memory.
pub fn index_too_large(records: u64, available: Option<u64>) -> Option<String> {
    let need = records.saturating_mul(INDEX_BYTES_PER_RECORD);
    let available = available?;
    (need > available / 10 * 8).then(|| {
        let [need, available] = units::bytes_alike([need, available]);
        format!("index not built: it would take about {need} of memory, {available} is free")
    })
}

/// `MemAvailable` of `/proc/meminfo`, in bytes (Linux; `None` elsewhere).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// How often the summary frame's progress is redrawn and input is read while the index is
/// built.
const LOADING_POLL: Duration = Duration::from_millis(100);

fn event_loop(
    terminal: &mut ViewTerminal,
    shown: &mut Shown<'_>,
    state: &mut ViewState,
) -> io::Result<()> {
    while !state.quit {
        terminal.draw(|frame| {
            render(shown.model(), state, frame);
            monochrome(frame.buffer_mut());
        })?;
        // Behind the recording: the next refresh reads on at once.
        let poll = match shown {
            Shown::Followed(f) if f.tail.unread_bytes() > 0 => Duration::ZERO,
            _ => FOLLOW_POLL,
        };
        if let Shown::Followed(f) = shown
            && !event::poll(poll)?
        {
            // Taken before the refresh changes the model in place.
            let carried = state.carried(f.tail.model());
            if let Some(read) = f.reread() {
                if read.reloaded {
                    state.live_reloaded();
                }
                state.carry_over(carried, f.tail.model(), read.rate);
                state.live_ended_by(f.ended_by());
            }
            state.live_unclosed(f.unclosed);
            state.live_behind(f.tail.unread_bytes());
            continue;
        }
        let event = event::read()?;
        let model = shown.model();
        if let Some(action) = map_event(&event, model, state) {
            state.update(model, action);
        }
    }
    Ok(())
}

/// Reads what a followed trace appended when it grows, and measures its record rate.
struct Follower<'a> {
    path: &'a Path,
    tail: TraceTail,
    /// The file's length and modification time at the last read.
    seen: Option<(u64, SystemTime)>,
    /// (when, records) of past reads, the oldest at least a second before the newest
    /// when there are enough.
    samples: std::collections::VecDeque<(Instant, u64)>,
    closed: bool,
    /// Asked while the file does not change whether the recording ended without a close.
    watch: WriterWatch,
    /// It did: neither closed nor crashed, and nobody writes it any more.
    unclosed: bool,
}

/// A followed trace read again (its model, [`TraceTail::model`], updated).
struct Reread {
    /// Records per second.
    rate: f64,
    /// The file was truncated and written again by a new recording, and opened afresh.
    reloaded: bool,
}

impl<'a> Follower<'a> {
    fn new(path: &'a Path, tail: TraceTail) -> Follower<'a> {
        let info = tail.model().info();
        Follower {
            path,
            seen: Self::stamp(path),
            samples: [(Instant::now(), info.records)].into(),
            closed: info.end.is_some(),
            tail,
            watch: WriterWatch::default(),
            unclosed: false,
        }
    }

    /// How the recorded process ended, when a signal ended it (`crashed: SIGSEGV`).
    fn ended_by(&self) -> Option<String> {
        self.tail.fatal().map(|f| f.describe())
    }

    fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
        let m = std::fs::metadata(path).ok()?;
        Some((m.len(), m.modified().ok()?))
    }

    /// The record rate when the file changed since the last read and the model was updated
    /// with what it read (or opened afresh); `None` when it did not, when it was closed or
    /// its process died (until a new recording writes the file again), or when it cannot be
    /// read now (a later poll tries again, and the view keeps what it shows). While it does not change, and is neither closed
    /// nor crashed, whether anyone still writes it is asked ([`WriterWatch`]): when nobody
    /// does, it is `unclosed`. What is appended after that (`hrx-trace record`'s note of a
    /// program's death, late) is still read.
    fn reread(&mut self) -> Option<Reread> {
        let stamp = Self::stamp(self.path);
        // What the last read left is read whether the file changed or not.
        let behind = self.tail.unread_bytes() > 0;
        if !behind && (stamp.is_none() || stamp == self.seen) {
            if !self.closed && self.tail.fatal().is_none() && self.watch.ended(self.path) {
                self.unclosed = true;
            }
            return None;
        }
        if self.tail.replaced() {
            // A header not yet written is tried again at the next poll.
            let tail = TraceTail::open_within(self.path, follow_budget()).ok()?;
            let info = tail.model().info();
            self.closed = info.end.is_some();
            self.samples = [(Instant::now(), info.records)].into();
            self.tail = tail;
            self.seen = stamp;
            (self.watch, self.unclosed) = (WriterWatch::default(), false);
            return Some(Reread {
                rate: 0.0,
                reloaded: true,
            });
        }
        if !behind && (self.closed || self.tail.fatal().is_some()) {
            self.seen = stamp;
            return None;
        }
        // An error (the file replaced, a read failing) is tried again at the next poll; what
        // was read before it is in the model, and shown.
        let before = self.tail.model().info().records;
        if self.tail.read_new_within(follow_budget()).is_ok() {
            self.seen = stamp;
        }
        let info = self.tail.model().info();
        if info.records == before {
            return None;
        }
        self.closed = info.end.is_some();
        let now = Instant::now();
        let records = info.records;
        while self.samples.len() > 1
            && now.duration_since(self.samples[1].0) >= Duration::from_secs(1)
        {
            self.samples.pop_front();
        }
        let (then, before) = self.samples[0];
        let seconds = now.duration_since(then).as_secs_f64();
        let rate = if seconds > 0.0 {
            records.saturating_sub(before) as f64 / seconds
        } else {
            0.0
        };
        self.samples.push_back((now, records));
        Some(Reread {
            rate,
            reloaded: false,
        })
    }
}

/// The action of an input event, given the current state (search input takes keys).
pub fn map_event(event: &Event, model: &Model, state: &ViewState) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => map_key(key, model, state),
        Event::Mouse(mouse) => {
            let (column, row) = (mouse.column, mouse.row);
            // The wheel over the details pane scrolls it (3 lines, as terminals do).
            let over_details = state
                .layout(model)
                .details
                .is_some_and(|d| d.contains(column, row));
            match mouse.kind {
                MouseEventKind::ScrollUp | MouseEventKind::ScrollDown if over_details => {
                    let up = mouse.kind == MouseEventKind::ScrollUp;
                    Some(Action::ScrollDetails {
                        lines: if up { -3 } else { 3 },
                        limit: details_scroll_limit(model, state).0,
                    })
                }
                MouseEventKind::Down(MouseButton::Left) => Some(Action::Click { column, row }),
                MouseEventKind::ScrollUp => Some(Action::Wheel {
                    column,
                    row,
                    zoom_in: true,
                }),
                MouseEventKind::ScrollDown => Some(Action::Wheel {
                    column,
                    row,
                    zoom_in: false,
                }),
                _ => None,
            }
        }
        Event::Resize(width, height) => Some(Action::Resize {
            width: *width,
            height: *height,
        }),
        _ => None,
    }
}

fn map_key(key: &KeyEvent, model: &Model, state: &ViewState) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    if ctrl && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    if state.searching {
        match key.code {
            KeyCode::Char(c) if !ctrl => return Some(Action::Search(c)),
            KeyCode::Backspace => return Some(Action::SearchBackspace),
            KeyCode::Enter => return Some(Action::EndSearch),
            KeyCode::Esc => return Some(Action::ClearSearch),
            _ => {}
        }
    }
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Left if shift => Action::PanLeft,
        KeyCode::Right if shift => Action::PanRight,
        KeyCode::Left => Action::SelectPrev,
        KeyCode::Right => Action::SelectNext,
        KeyCode::Char('<') => Action::PanLeft,
        KeyCode::Char('>') => Action::PanRight,
        KeyCode::Up => Action::PrevQueue,
        KeyCode::Down => Action::NextQueue,
        KeyCode::Char('+' | '=') => Action::ZoomIn,
        KeyCode::Char('-' | '_') => Action::ZoomOut,
        KeyCode::Char('f') => Action::Fit,
        KeyCode::Char('F') => Action::ResumeFollow,
        KeyCode::Char('z') => Action::ZoomToSelection,
        KeyCode::Home => Action::Home,
        KeyCode::End => Action::End,
        KeyCode::Tab => Action::Tab,
        KeyCode::BackTab => Action::BackTab,
        KeyCode::Char('h') => Action::ToggleHazards,
        KeyCode::Char('p') => Action::JumpToProducer,
        KeyCode::Char('n') => Action::NextEvent,
        KeyCode::Char('N') => Action::PrevEvent,
        KeyCode::Char('e') => Action::ToggleEvents,
        KeyCode::Char('s') => Action::ToggleStats,
        KeyCode::Char('a') => Action::ToggleEmptyLanes,
        KeyCode::Char('o') => Action::ToggleOps,
        KeyCode::PageDown | KeyCode::PageUp | KeyCode::Char('J' | 'K') => {
            let (limit, page) = details_scroll_limit(model, state);
            let page = page.min(i16::MAX as u16) as i16;
            let down = matches!(key.code, KeyCode::PageDown | KeyCode::Char('J'));
            Action::ScrollDetails {
                lines: if down { page } else { -page },
                limit,
            }
        }
        KeyCode::Char('/') => Action::StartSearch,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Enter => Action::Activate,
        KeyCode::Esc => Action::Escape,
        _ => return None,
    })
}

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Owns the terminal while the viewer runs; restores it when dropped.
struct TerminalGuard {
    terminal: ViewTerminal,
    previous_hook: Option<Arc<Hook>>,
    active: bool,
}

/// Gives the terminal back: mouse capture off, main screen, cooked mode, cursor shown.
/// Safe to call more than once.
fn restore_terminal() -> io::Result<()> {
    let mouse = execute!(
        io::stdout(),
        event::DisableMouseCapture,
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
    terminal::disable_raw_mode()?;
    mouse
}

impl TerminalGuard {
    fn enter() -> Result<TerminalGuard, TuiError> {
        let previous: Arc<Hook> = Arc::new(panic::take_hook());
        let chained = Arc::clone(&previous);
        panic::set_hook(Box::new(move |info| {
            let _ = restore_terminal();
            chained(info);
        }));
        let mut guard = TerminalGuard {
            // Only queries the size; the terminal is taken just below.
            terminal: Terminal::new(CrosstermBackend::new(FrameWriter::new(io::stdout())))?,
            previous_hook: Some(previous),
            active: true,
        };
        terminal::enable_raw_mode()?;
        execute!(
            io::stdout(),
            terminal::EnterAlternateScreen,
            event::EnableMouseCapture
        )?;
        // Ask the terminal where its cursor is before anything waits on it: one that does
        // not answer (crossterm gives up after 2 s) is said as such, not as a raw I/O error
        // from the first clear, which asks the same.
        cursor::position().map_err(|source| TuiError::NoAnswer { source })?;
        guard.terminal.clear()?;
        Ok(guard)
    }

    /// Restores the terminal and the previous panic hook.
    fn leave(&mut self) -> io::Result<()> {
        if !self.active {
            return Ok(());
        }
        self.active = false;
        let restored = restore_terminal();
        if let Some(previous) = self.previous_hook.take() {
            // Dropping our hook releases its clone of the previous one.
            drop(panic::take_hook());
            if let Ok(previous) = Arc::try_unwrap(previous) {
                panic::set_hook(previous);
            }
        }
        restored
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = self.leave();
        } else {
            let _ = restore_terminal();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::synthetic::{PipelineSpec, pipeline};
    use crossterm::event::{KeyEventState, MouseEvent};
    use hrx_capture::TraceReader;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        })
    }

    fn state() -> (Model, ViewState) {
        let records: Vec<_> = pipeline(PipelineSpec::ops(8)).collect();
        let model = Model::from_records(&records);
        let state = ViewState::new(&model, 120, 40);
        (model, state)
    }

    #[test]
    fn keys_map_to_actions() {
        let (m, s) = state();
        let none = KeyModifiers::NONE;
        let cases = [
            (key(KeyCode::Char('q'), none), Action::Quit),
            (key(KeyCode::Left, none), Action::SelectPrev),
            (key(KeyCode::Right, KeyModifiers::SHIFT), Action::PanRight),
            (key(KeyCode::Up, none), Action::PrevQueue),
            (key(KeyCode::Char('='), none), Action::ZoomIn),
            (key(KeyCode::Char('_'), none), Action::ZoomOut),
            (key(KeyCode::Char('f'), none), Action::Fit),
            (key(KeyCode::Char('z'), none), Action::ZoomToSelection),
            (key(KeyCode::Home, none), Action::Home),
            (key(KeyCode::Tab, none), Action::Tab),
            (key(KeyCode::Char('h'), none), Action::ToggleHazards),
            (key(KeyCode::Char('p'), none), Action::JumpToProducer),
            (
                key(KeyCode::Char('N'), KeyModifiers::SHIFT),
                Action::PrevEvent,
            ),
            (key(KeyCode::Char('e'), none), Action::ToggleEvents),
            (key(KeyCode::Char('s'), none), Action::ToggleStats),
            (key(KeyCode::Char('o'), none), Action::ToggleOps),
            (key(KeyCode::Char('/'), none), Action::StartSearch),
            (key(KeyCode::Char('?'), none), Action::ToggleHelp),
            (key(KeyCode::Char('c'), KeyModifiers::CONTROL), Action::Quit),
        ];
        for (event, action) in cases {
            assert_eq!(map_event(&event, &m, &s), Some(action), "{event:?}");
        }
    }

    #[test]
    fn search_input_takes_letters() {
        let (m, mut s) = state();
        s.searching = true;
        let none = KeyModifiers::NONE;
        assert_eq!(
            map_event(&key(KeyCode::Char('q'), none), &m, &s),
            Some(Action::Search('q'))
        );
        assert_eq!(
            map_event(&key(KeyCode::Esc, none), &m, &s),
            Some(Action::ClearSearch)
        );
        assert_eq!(
            map_event(&key(KeyCode::Left, none), &m, &s),
            Some(Action::SelectPrev)
        );
    }

    #[test]
    fn mouse_maps_to_click_and_wheel() {
        let (m, s) = state();
        let mouse = |kind| {
            Event::Mouse(MouseEvent {
                kind,
                column: 30,
                row: 5,
                modifiers: KeyModifiers::NONE,
            })
        };
        assert_eq!(
            map_event(&mouse(MouseEventKind::Down(MouseButton::Left)), &m, &s),
            Some(Action::Click { column: 30, row: 5 })
        );
        assert_eq!(
            map_event(&mouse(MouseEventKind::ScrollUp), &m, &s),
            Some(Action::Wheel {
                column: 30,
                row: 5,
                zoom_in: true
            })
        );
    }

    #[test]
    fn follow_waits_for_a_trace_that_is_not_written_yet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.hrxt");
        let records: Vec<_> = pipeline(PipelineSpec::ops(8)).collect();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                let recorder =
                    hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default())
                        .unwrap();
                for r in &records {
                    recorder.record(r);
                }
                recorder.close().unwrap();
            })
        };
        // Whatever it caught of the recording, it opened it (not "cannot open it").
        let opened = wait_for_trace(&path, Duration::from_secs(600));
        writer.join().unwrap();
        assert!(opened.is_ok(), "{:?}", opened.err());
        // A missing file past the wait, and a file that is not a trace, fail as before.
        let missing = wait_for_trace(&dir.path().join("never"), Duration::ZERO);
        assert!(missing.unwrap_err().to_string().contains("cannot open it"));
        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![7u8; 4096]).unwrap();
        assert!(wait_for_trace(&junk, Duration::from_secs(600)).is_err());
    }

    /// Writes to `path` the blocks before the middle one of a 400-operation recording: a
    /// recording that ended between two blocks without being closed.
    fn write_half_of_a_recording(path: &Path) {
        let bytes = recording(400);
        let blocks = hrx_capture::MappedTrace::from_vec(bytes.clone()).unwrap();
        let cut = blocks.blocks()[blocks.blocks().len() / 2].offset as usize;
        std::fs::write(path, &bytes[..cut]).unwrap();
    }

    /// A recording of `ops` pipeline operations, closed, as its bytes.
    fn recording(ops: u64) -> Vec<u8> {
        let sink = hrx_capture::MemorySink::new();
        let options = hrx_capture::RecorderOptions {
            block_bytes: 1 << 10,
            compression_level: None,
            ..hrx_capture::RecorderOptions::default()
        };
        let recorder = hrx_capture::Recorder::with_sink(sink.clone(), options).unwrap();
        // The recorder writes the session's start and end itself.
        for r in pipeline(PipelineSpec::ops(ops)) {
            if !matches!(
                r,
                hrx_capture::Record::SessionStart(_) | hrx_capture::Record::SessionEnd(_)
            ) {
                recorder.record(&r);
            }
        }
        recorder.close().unwrap();
        sink.contents()
    }

    /// A followed file truncated and written again by a new recording (closed or still
    /// growing when it happens) is opened afresh: the model is the new recording's (the
    /// follower kept the old one, or read the new file from the old offset).
    #[test]
    fn a_followed_trace_written_again_by_a_new_recording_is_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let old = recording(400);
        // Longer than the old one (its first block tells them apart), and shorter; in place
        // (a folder not writable), and renamed over it (as a recorder replaces a trace).
        for (old_len, new_ops, renamed) in [
            (old.len(), 800, false),
            (old.len() * 2 / 3, 800, false),
            (old.len(), 40, false),
            (old.len(), 800, true),
            (old.len() * 2 / 3, 40, true),
        ] {
            let new = recording(new_ops);
            let whole_new = Model::from_reader(TraceReader::new(&new[..]).unwrap()).unwrap();
            std::fs::write(&path, &old[..old_len]).unwrap();
            let tail = TraceTail::open(&path).unwrap();
            let mut follower = Follower::new(&path, tail);
            let mut state = ViewState::new(follower.tail.model(), 120, 40);
            state.start_live();
            let carried = state.carried(follower.tail.model());
            if renamed {
                let beside = dir.path().join(".t.hrxt.1.new");
                std::fs::write(&beside, &new).unwrap();
                std::fs::rename(&beside, &path).unwrap();
            } else {
                std::fs::write(&path, &new).unwrap();
            }
            let read = follower.reread().expect("the new recording");
            assert!(read.reloaded, "{old_len} {renamed}");
            let model = follower.tail.model();
            assert_eq!(model.info().records, whole_new.info().records);
            assert_eq!(model.span_count(), whole_new.span_count());
            state.live_reloaded();
            state.carry_over(carried, model, read.rate);
            let screen = crate::render_to_string(model, &state, 120, 40);
            assert!(
                screen.contains("written again by a new recording"),
                "{screen}"
            );
            assert!(follower.reread().is_none(), "unchanged since");
        }
    }

    /// A follower left behind by its refreshes' budget reads on although the file did not
    /// change since (it waited for the file to change, so it stayed behind until the
    /// recording wrote again), and the status line says how far behind it is until it has
    /// read the last of it; the model is then a whole read's.
    #[test]
    fn a_follower_behind_reads_on_while_the_file_is_unchanged_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let bytes = recording(800);
        std::fs::write(&path, &bytes).unwrap();
        let budget = ReadBudget::bytes(bytes.len() as u64 / 10);
        let tail = TraceTail::open_within(&path, budget).unwrap();
        let behind = tail.unread_bytes();
        assert!(behind > 0);
        let mut follower = Follower::new(&path, tail);
        let mut state = ViewState::new(follower.tail.model(), 160, 40);
        state.start_live();
        state.live_behind(behind);
        let screen = crate::render_to_string(follower.tail.model(), &state, 160, 40);
        let said = format!("behind: {} not read", units::bytes(behind));
        assert!(screen.contains(&said), "{said}: {screen}");
        let mut reads = 0;
        while follower.tail.unread_bytes() > 0 {
            let carried = state.carried(follower.tail.model());
            let read = follower
                .reread()
                .expect("what was left, the file unchanged");
            state.carry_over(carried, follower.tail.model(), read.rate);
            state.live_behind(follower.tail.unread_bytes());
            reads += 1;
            assert!(reads < 1000, "it never caught up");
        }
        let screen = crate::render_to_string(follower.tail.model(), &state, 160, 40);
        assert!(!screen.contains("behind:"), "{screen}");
        let whole = Model::from_reader(TraceReader::new(&bytes[..]).unwrap()).unwrap();
        hrx_analysis::timeline::fixtures::assert_same(follower.tail.model(), &whole);
        assert!(follower.reread().is_none(), "nothing more");
    }

    /// `view --follow` opens a large trace that is already closed cleanly as `view` does
    /// (through the view cache, not holding its whole model in memory); a trace still being
    /// written, or below the threshold, is followed.
    #[test]
    fn only_a_large_cleanly_closed_trace_is_opened_as_view_opens_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let bytes = recording(400);
        std::fs::write(&path, &bytes).unwrap();
        assert!(closed_and_large(&path, 0));
        assert!(closed_and_large(&path, bytes.len() as u64));
        assert!(!closed_and_large(&path, bytes.len() as u64 + 1));
        std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
        assert!(!closed_and_large(&path, 0), "still being written");
        assert!(!closed_and_large(&dir.path().join("gone.hrxt"), 0));
    }

    /// A followed trace whose process died of a signal stops being live and says how.
    #[test]
    fn a_followed_trace_stops_at_its_fatal_signal() {
        use hrx_capture::schema::{FatalSignal, Record, SignalWitness};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        // Crashed in the middle of the recording: whole blocks (the fatal-signal flush
        // writes whole blocks), no end.
        write_half_of_a_recording(&path);
        let tail = TraceTail::open(&path).unwrap();
        let mut follower = Follower::new(&path, tail);
        assert_eq!(follower.ended_by(), None);
        let mut state = ViewState::new(follower.tail.model(), 120, 40);
        state.start_live();
        let carried = state.carried(follower.tail.model());
        let fatal = Record::FatalSignal(FatalSignal {
            time_ns: 1,
            signal: 11,
            witness: SignalWitness::Handler,
            fault_address: None,
        });
        hrx_capture::append_to_unclosed(&path, std::slice::from_ref(&fatal)).unwrap();
        let read = follower.reread().expect("the signal");
        assert_eq!(follower.ended_by().as_deref(), Some("crashed: SIGSEGV"));
        let model = follower.tail.model();
        state.carry_over(carried, model, read.rate);
        state.live_ended_by(follower.ended_by());
        let screen = crate::render_to_string(model, &state, 120, 40);
        assert!(
            screen.contains("crashed: SIGSEGV (the recording ended)") && !screen.contains("live ·"),
            "{screen}"
        );
        // Nothing after the signal is read: the recording is over.
        hrx_capture::append_to_unclosed(&path, &[fatal]).unwrap();
        assert!(follower.reread().is_none());
    }

    /// A followed trace that is neither closed nor crashed stops being live once nobody
    /// writes it any more (no recorder holds its lock, and it stopped growing), and says so.
    #[test]
    fn a_followed_trace_nobody_writes_any_more_stops_being_live() {
        use hrx_capture::schema::{FatalSignal, Record, SignalWitness};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        // Killed between two blocks (no note of it), or cut there.
        write_half_of_a_recording(&path);
        let tail = TraceTail::open(&path).unwrap();
        let mut follower = Follower::new(&path, tail);
        follower.watch = WriterWatch::new(Duration::ZERO);
        // Nothing changes it until the note below: a copy to draw while it is followed.
        let model = follower.tail.model().clone();
        let mut state = ViewState::new(&model, 160, 40);
        state.start_live();
        state.model_changed(&model, &model, 0.0);
        // A recorder holds it (its exclusive lock): quiet, but live.
        let holder = std::fs::File::open(&path).unwrap();
        holder.try_lock().unwrap();
        for _ in 0..3 {
            assert!(follower.reread().is_none());
            assert!(!follower.unclosed);
        }
        drop(holder);
        // The first probe that finds it free concludes nothing; the next one does.
        assert!(follower.reread().is_none());
        assert!(!follower.unclosed);
        state.live_unclosed(follower.unclosed);
        let screen = crate::render_to_string(&model, &state, 160, 40);
        assert!(screen.contains("live ·"), "{screen}");
        assert!(follower.reread().is_none());
        assert!(follower.unclosed);
        state.live_unclosed(follower.unclosed);
        let screen = crate::render_to_string(&model, &state, 160, 40);
        assert!(
            screen.contains("ended: not closed and no recorder is writing it")
                && !screen.contains("live ·"),
            "{screen}"
        );
        // A note of the program's death appended late is still read, and says how.
        let killed = Record::FatalSignal(FatalSignal {
            time_ns: 1,
            signal: 9,
            witness: SignalWitness::Parent,
            fault_address: None,
        });
        hrx_capture::append_to_unclosed(&path, &[killed]).unwrap();
        assert!(follower.reread().is_some());
        assert_eq!(follower.ended_by().as_deref(), Some("killed by SIGKILL"));
    }

    #[test]
    fn the_headless_first_frame_is_the_rendered_screen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipeline.hrxt");
        let records: Vec<_> = pipeline(PipelineSpec::ops(40)).collect();
        let recorder =
            hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
        for r in &records {
            recorder.record(r);
        }
        recorder.close().unwrap();
        let (frame, summary) = first_frame(&path, 120, 40, false).unwrap();
        assert!(!summary, "a small trace is read whole");
        let model = crate::load(&path).unwrap();
        let state = ViewState::new(&model, 120, 40);
        assert_eq!(frame, crate::render_to_string(&model, &state, 120, 40));
        assert!(frame.contains("GPU Compute"), "{frame}");
        assert_eq!(parse_size("80x24"), Some((80, 24)));
        assert_eq!(parse_size("80x0"), None);
        assert_eq!(parse_size("1000x1000"), Some((1000, 1000)));
        assert_eq!(parse_size("1000x1001"), None);
        assert_eq!(parse_size("65535x65535"), None);
        assert_eq!(parse_size("wide"), None);
        assert!(first_frame(&dir.path().join("missing"), 80, 24, false).is_err());
        // HRX_TUI_ASCII=1: ASCII only, borders and all (only the timeline's symbols were).
        assert!(!frame.is_ascii());
        let (ascii, _) = first_frame(&path, 120, 40, true).unwrap();
        assert!(ascii.is_ascii(), "{ascii}");
        assert!(ascii.contains("GPU Compute"), "{ascii}");
    }

    /// `HRX_TUI_ASCII` reads as every `HRX_` switch: `1`, `0` or empty, else an error
    /// naming it (`yes`, `2` and empty all turned it on, silently).
    #[test]
    fn the_ascii_switch_takes_0_or_1() {
        use std::ffi::OsStr;
        assert_eq!(ascii_value(Some(OsStr::new("1"))), Ok(true));
        for off in [None, Some(OsStr::new("0")), Some(OsStr::new(""))] {
            assert_eq!(ascii_value(off), Ok(false), "{off:?}");
        }
        assert_eq!(
            ascii_value(Some(OsStr::new("yes"))),
            Err("HRX_TUI_ASCII: expected 0 or 1, got \"yes\"".to_owned())
        );
        assert!(ascii_value(Some(OsStr::new("2"))).is_err());
    }

    #[test]
    fn a_large_trace_not_cached_opens_as_its_summary_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipeline.hrxt");
        let recorder =
            hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
        for r in pipeline(PipelineSpec::ops(4_000)) {
            recorder.record(&r);
        }
        recorder.close().unwrap();
        // Every trace counts as large here, and the cache is empty.
        let options = crate::state::cache::CacheOptions {
            dir: Some(dir.path().join("cache")),
            min_bytes: 0,
        };
        let Opening::Summary(overview, _) = crate::open_or_summarise_with(&path, &options).unwrap()
        else {
            panic!("expected the summary");
        };
        assert_eq!(overview.regions(), 4_000);
        let progress = LoadProgress {
            read_bytes: 0,
            total_bytes: overview.file_len,
            failed: None,
        };
        let frame = crate::overview_to_string(&overview, &progress, false, 120, 40);
        let ascii = crate::overview_to_string(&overview, &progress, true, 120, 40);
        assert!(ascii.is_ascii(), "{ascii}");
        // Honest: it says it is a summary, what it leaves out, and how far the index is.
        assert!(
            frame.contains("summary of 4000 timed regions from"),
            "{frame}"
        );
        assert!(
            frame.contains("summary frame: busy time per column"),
            "{frame}"
        );
        assert!(frame.contains("building the index: 0% of"), "{frame}");
        for lane in ["GPU Upload", "GPU Compute", "GPU Download", "Host"] {
            assert!(frame.contains(lane), "{lane}: {frame}");
        }
        // Once built and cached, the same trace opens ready.
        let model =
            crate::state::cache::open(&path, &options, None, || crate::load(&path)).unwrap();
        assert_eq!(model.span_count(), 4_000);
        assert!(matches!(
            crate::open_or_summarise_with(&path, &options).unwrap(),
            Opening::Ready(_)
        ));
    }

    #[test]
    fn an_index_too_large_for_memory_is_not_built() {
        // 300M records (100M regions) need about 12 GB.
        let why = index_too_large(300_000_000, Some(8 << 30)).unwrap();
        assert!(
            why.starts_with("index not built: it would take about 11"),
            "{why}"
        );
        assert!(why.ends_with(" of memory, 8.00 GiB is free"), "{why}");
        assert_eq!(index_too_large(30_000_000, Some(8 << 30)), None);
        assert_eq!(index_too_large(300_000_000, None), None, "unknown: try");
    }

    #[test]
    fn unreadable_trace_fails_before_the_terminal() {
        let err = run(Path::new("/nonexistent/trace.hrx"), false).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("/nonexistent/trace.hrx: cannot open it: "),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }
}

/// Set by [`run_coloured`]: draw without colour.
static MONOCHROME: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes the colours out of a drawn frame when [`MONOCHROME`] is set (see [`run_coloured`]).
fn monochrome(buffer: &mut ratatui::buffer::Buffer) {
    if MONOCHROME.load(Ordering::Relaxed) {
        strip_colours(buffer);
    }
}

/// Every cell in the terminal's default colours; one on a coloured background reversed.
pub fn strip_colours(buffer: &mut ratatui::buffer::Buffer) {
    use ratatui::style::{Color, Modifier};
    for cell in &mut buffer.content {
        if cell.bg != Color::Reset {
            cell.modifier.insert(Modifier::REVERSED);
        }
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

#[cfg(test)]
mod colour_tests {
    use super::*;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::{Color, Modifier, Style};

    #[test]
    fn no_color_is_set_and_not_empty() {
        assert!(!no_color(None));
        assert!(!no_color(Some("".into())));
        assert!(no_color(Some("1".into())));
    }

    #[test]
    fn stripping_keeps_text_and_reverses_coloured_backgrounds() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 3, 1));
        buffer.set_string(0, 0, "ab", Style::default().fg(Color::Red));
        buffer.set_string(
            2,
            0,
            "c",
            Style::default()
                .bg(Color::Blue)
                .add_modifier(Modifier::BOLD),
        );
        strip_colours(&mut buffer);
        let cells = &buffer.content;
        assert_eq!(cells.iter().map(|c| c.symbol()).collect::<String>(), "abc");
        assert!(
            cells
                .iter()
                .all(|c| c.fg == Color::Reset && c.bg == Color::Reset)
        );
        assert!(!cells[0].modifier.contains(Modifier::REVERSED));
        assert!(
            cells[2]
                .modifier
                .contains(Modifier::REVERSED | Modifier::BOLD)
        );
    }
}
