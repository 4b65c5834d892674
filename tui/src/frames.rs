//! Whole frames to the terminal: [`FrameWriter`], the writer under the viewer's ratatui
//! backend.
//!
//! ratatui writes a frame as the escape sequences of the cells that changed, then flushes.
//! Straight into [`std::io::Stdout`] (a line writer with a 1 KiB buffer, and a frame has
//! no newline) that became one `write(2)` per KiB: a detail pane's change of about 3 KiB
//! went out as writes of 1023, 1024 and 762 bytes. A viewer descheduled between two of
//! them (a loaded machine) left the terminal showing the top of the new frame over the
//! bottom of the old one until its next write: a selected span's details cut after a few
//! lines with the previous pane's last lines below them and no "more lines" mark, which
//! is what a loaded CI run captured in tmux. Here a frame's bytes are held until ratatui
//! flushes, then written with one `write_all`, between the begin and end of a synchronized
//! update (DEC private mode 2026: terminals that know it show the frame only once it is
//! whole, including its part of a write the kernel splits; others ignore the mode).
//!
//! tmux before 3.6 does not honour mode 2026 from an application, and parses what it reads
//! from a pane 4 KiB at a time, so a `capture-pane` can still land inside one large frame
//! there: the tmux tests wait for a screen that two captures agree on.

use std::io::{self, Write};

/// Begin a synchronized update (DEC private mode 2026 set): crossterm's
/// `BeginSynchronizedUpdate`.
pub const BEGIN_SYNC: &[u8] = b"\x1b[?2026h";

/// End a synchronized update (DEC private mode 2026 reset): crossterm's
/// `EndSynchronizedUpdate`.
pub const END_SYNC: &[u8] = b"\x1b[?2026l";

/// Holds everything written until [`Write::flush`], then writes it to the terminal `W` in
/// one `write_all` between [`BEGIN_SYNC`] and [`END_SYNC`] (see the module docs). A flush
/// with nothing held writes nothing.
#[derive(Debug)]
pub struct FrameWriter<W: Write> {
    inner: W,
    frame: Vec<u8>,
}

impl<W: Write> FrameWriter<W> {
    /// A frame writer over the terminal `inner`.
    pub fn new(inner: W) -> FrameWriter<W> {
        FrameWriter {
            inner,
            frame: Vec::new(),
        }
    }

    /// The terminal written to.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.frame.is_empty() {
            self.frame.extend_from_slice(BEGIN_SYNC);
        }
        self.frame.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.frame.is_empty() {
            self.frame.extend_from_slice(END_SYNC);
            let written = self.inner.write_all(&self.frame);
            // A failed write is not retried with the next frame's bytes appended.
            self.frame.clear();
            written?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::synthetic::{PipelineSpec, pipeline};
    use crate::state::{Action, Model, ViewState};
    use ratatui::Terminal;
    use ratatui::backend::CrosstermBackend;

    /// A terminal that keeps each `write` call it receives apart (shared, to be read while
    /// the backend owns it).
    #[derive(Clone, Default)]
    struct Writes(std::rc::Rc<std::cell::RefCell<Vec<Vec<u8>>>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Each frame of the viewer, the first (every cell) and one after a selection (the
    /// details pane changes), reaches the terminal in one write, as one synchronized
    /// update: straight into standard output's line writer, as before, the first frame went
    /// out in 5 writes of at most 1 KiB, and a reader of the terminal between two of them
    /// saw half a frame.
    #[test]
    fn each_frame_reaches_the_terminal_in_one_write() {
        let records: Vec<_> = pipeline(PipelineSpec::ops(40)).collect();
        let model = Model::from_records(&records);
        let mut state = ViewState::new(&model, 120, 40);
        // Standard output's own buffering, under the frame writer as in the viewer.
        let writes = Writes::default();
        let stdout_like = io::LineWriter::new(writes.clone());
        let backend = CrosstermBackend::new(FrameWriter::new(stdout_like));
        let mut terminal = Terminal::with_options(
            backend,
            ratatui::TerminalOptions {
                viewport: ratatui::Viewport::Fixed(ratatui::layout::Rect::new(0, 0, 120, 40)),
            },
        )
        .unwrap();
        let mut sizes = Vec::new();
        for action in [None, Some(Action::Tab)] {
            if let Some(action) = action {
                state.update(&model, action);
            }
            let before = writes.0.borrow().len();
            terminal
                .draw(|frame| crate::render(&model, &state, frame))
                .unwrap();
            let frames = &writes.0.borrow()[before..];
            assert_eq!(frames.len(), 1, "one frame in {} writes", frames.len());
            let frame = &frames[0];
            assert!(frame.starts_with(BEGIN_SYNC) && frame.ends_with(END_SYNC));
            sizes.push(frame.len());
        }
        // Both frames are larger than standard output's 1 KiB buffer (else the test proves
        // nothing about it).
        assert!(sizes.iter().all(|&n| n > 1024), "{sizes:?}");
        let all = writes.0.borrow().concat();
        let text = String::from_utf8_lossy(&all);
        assert!(text.contains("Compute"), "the frame was drawn: {text:?}");
    }

    #[test]
    fn a_flush_with_nothing_held_writes_nothing() {
        let mut writer = FrameWriter::new(Writes::default());
        writer.flush().unwrap();
        assert!(writer.get_ref().0.borrow().is_empty());
        writer.write_all(b"ab").unwrap();
        writer.write_all(b"cd").unwrap();
        writer.flush().unwrap();
        writer.flush().unwrap();
        assert_eq!(
            *writer.get_ref().0.borrow(),
            vec![b"\x1b[?2026habcd\x1b[?2026l".to_vec()]
        );
    }
}
