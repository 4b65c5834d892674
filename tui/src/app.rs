//! The terminal and the event loop of `hrx-trace view`.
//!
//! [`run`] reads the whole trace first, so an unreadable file fails with the reader's
//! one-line error before the terminal is touched. It then takes the terminal (raw mode,
//! alternate screen, mouse capture) behind a guard that gives it back on every exit path:
//! on return, on error, and on panic through a panic hook installed for the session (the
//! previous hook runs after the terminal is restored, so the panic message is readable).
//!
//! Each input event becomes at most one [`Action`] ([`map_event`]), applied with
//! [`ViewState::update`]; then the screen is drawn again.

use crate::state::{Action, Model, ViewState};
use crate::{TuiError, render};
use crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::IsTerminal;
use std::io::{self, Stdout};
use std::panic::{self, PanicHookInfo};
use std::path::Path;
use std::sync::Arc;

/// Environment variable: when set (not `0`), draw ASCII symbols instead of Unicode ones.
pub const ASCII_ENV: &str = "HRX_TUI_ASCII";

/// Opens the trace at `path` and runs the viewer until the user quits.
///
/// # Errors
///
/// [`TuiError::Read`] when the trace cannot be read (before the terminal is touched);
/// [`TuiError::NotATerminal`] when standard input or output is not a terminal (checked
/// before it is touched, so no escape sequences reach a pipe or file);
/// [`TuiError::Terminal`] when the terminal cannot be set up or drawn.
pub fn run(path: &Path) -> Result<(), TuiError> {
    let model = crate::load(path)?;
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal);
    }
    let mut guard = TerminalGuard::enter()?;
    let size = guard.terminal.size()?;
    let mut state = ViewState::new(&model, size.width, size.height);
    state.ascii = std::env::var_os(ASCII_ENV).is_some_and(|v| v != "0");
    event_loop(&mut guard.terminal, &model, &mut state)?;
    guard.leave()?;
    Ok(())
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    model: &Model,
    state: &mut ViewState,
) -> io::Result<()> {
    while !state.quit {
        terminal.draw(|frame| render(model, state, frame))?;
        let event = event::read()?;
        if let Some(action) = map_event(&event, state) {
            state.update(model, action);
        }
    }
    Ok(())
}

/// The action of an input event, given the current state (search input takes keys).
pub fn map_event(event: &Event, state: &ViewState) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => map_key(key, state),
        Event::Mouse(mouse) => {
            let (column, row) = (mouse.column, mouse.row);
            match mouse.kind {
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

fn map_key(key: &KeyEvent, state: &ViewState) -> Option<Action> {
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
    terminal: Terminal<CrosstermBackend<Stdout>>,
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
            terminal: Terminal::new(CrosstermBackend::new(io::stdout()))?,
            previous_hook: Some(previous),
            active: true,
        };
        terminal::enable_raw_mode()?;
        execute!(
            io::stdout(),
            terminal::EnterAlternateScreen,
            event::EnableMouseCapture
        )?;
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

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        })
    }

    fn state() -> ViewState {
        let records: Vec<_> = pipeline(PipelineSpec::ops(8)).collect();
        let model = Model::from_records(&records);
        ViewState::new(&model, 120, 40)
    }

    #[test]
    fn keys_map_to_actions() {
        let s = state();
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
            (key(KeyCode::Char('/'), none), Action::StartSearch),
            (key(KeyCode::Char('?'), none), Action::ToggleHelp),
            (key(KeyCode::Char('c'), KeyModifiers::CONTROL), Action::Quit),
        ];
        for (event, action) in cases {
            assert_eq!(map_event(&event, &s), Some(action), "{event:?}");
        }
    }

    #[test]
    fn search_input_takes_letters() {
        let mut s = state();
        s.searching = true;
        let none = KeyModifiers::NONE;
        assert_eq!(
            map_event(&key(KeyCode::Char('q'), none), &s),
            Some(Action::Search('q'))
        );
        assert_eq!(
            map_event(&key(KeyCode::Esc, none), &s),
            Some(Action::ClearSearch)
        );
        assert_eq!(
            map_event(&key(KeyCode::Left, none), &s),
            Some(Action::SelectPrev)
        );
    }

    #[test]
    fn mouse_maps_to_click_and_wheel() {
        let s = state();
        let mouse = |kind| {
            Event::Mouse(MouseEvent {
                kind,
                column: 30,
                row: 5,
                modifiers: KeyModifiers::NONE,
            })
        };
        assert_eq!(
            map_event(&mouse(MouseEventKind::Down(MouseButton::Left)), &s),
            Some(Action::Click { column: 30, row: 5 })
        );
        assert_eq!(
            map_event(&mouse(MouseEventKind::ScrollUp), &s),
            Some(Action::Wheel {
                column: 30,
                row: 5,
                zoom_in: true
            })
        );
    }

    #[test]
    fn unreadable_trace_fails_before_the_terminal() {
        let err = run(Path::new("/nonexistent/trace.hrx")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("/nonexistent/trace.hrx: cannot open it: "),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }
}
