//! Telling a followed trace that ended without a close from one that is only quiet.
//!
//! A recording ends with its session end (closed) or, when its program died of a signal, a
//! `FatalSignal` record. A recorder killed by SIGKILL with no `hrx-trace record` to note it,
//! or a trace cut short (`head -c`, a copy of a live file), has neither: a follower would
//! wait for it forever. But a recorder holds an exclusive lock on the file it writes
//! ([`crate::FileSink::create`]), so a follower can ask whether anyone still writes it
//! ([`crate::recorder_holds`]). [`WriterWatch`] concludes that nobody will: the file is not
//! empty, no recorder held it at two probes at least [`WriterWatch::SETTLE`] apart, and it
//! did not grow between them. The follower reads after each probe, so the second probe comes
//! after a read of everything the file holds.
//!
//! Why two probes, apart: a recorder creates the file, then locks it (the file is empty until
//! it has); `hrx-trace record` appends its note of a program's death once the program is gone
//! (it locks the file while it does); and the probe itself is a shared lock that a writer
//! locking the file in that instant has to wait out, so it is asked about once a
//! [`WriterWatch::SETTLE`], not at every poll.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

/// How a follower says a trace ended without a close and with nobody writing it.
pub const UNCLOSED_ENDING: &str = "not closed and no recorder is writing it (killed, or cut short)";

/// How a reader says that a trace it read without its end was held by a recorder as it was
/// read (`diff`'s verdict, `view`'s Trace pane): written as far as it was read, not cut
/// short.
pub const BEING_RECORDED: &str = "being recorded now: its end is not written yet";

/// Watches a followed trace for the end of a recording that was not closed (see the module
/// docs). Ask [`WriterWatch::ended`] after each read that found the trace neither closed nor
/// crashed.
#[derive(Debug)]
pub struct WriterWatch {
    settle: Duration,
    /// When the last probe was made, and the file's length then if no recorder held it.
    last: Option<(Instant, Option<u64>)>,
}

impl Default for WriterWatch {
    fn default() -> WriterWatch {
        WriterWatch::new(WriterWatch::SETTLE)
    }
}

impl WriterWatch {
    /// The least time between two probes; the two that conclude are at least this far
    /// apart.
    pub const SETTLE: Duration = Duration::from_secs(1);

    /// A watch whose probes are at least `settle` apart (tests use zero).
    pub fn new(settle: Duration) -> WriterWatch {
        WriterWatch { settle, last: None }
    }

    /// Whether the recording of the trace at `path` is over without a close: nobody held its
    /// lock at this probe and at the one before, at least a settle time earlier, and the
    /// file, not empty, kept its length in between. `false` until then, and whenever the
    /// file cannot be probed (a later call tries again).
    pub fn ended(&mut self, path: &Path) -> bool {
        self.probe(|| {
            std::fs::metadata(path)
                .ok()
                .map(|m| m.len())
                .filter(|&len| len > 0)
                .filter(|_| matches!(crate::recorder_holds(path), Ok(false)))
        })
    }

    /// [`WriterWatch::ended`], an empty file included: one a follower waits for, short of a
    /// header, that nobody has held for a settle time (a recorder locks the file it creates
    /// at once; the settle time covers that instant).
    pub fn abandoned(&mut self, path: &Path) -> bool {
        self.probe(|| {
            std::fs::metadata(path)
                .ok()
                .map(|m| m.len())
                .filter(|_| matches!(crate::recorder_holds(path), Ok(false)))
        })
    }

    /// [`WriterWatch::ended`] of a trace file the follower holds open (it reads on in it
    /// when a new recording is renamed over its path).
    pub fn ended_file(&mut self, file: &File) -> bool {
        self.probe(|| {
            file.metadata()
                .ok()
                .map(|m| m.len())
                .filter(|&len| len > 0)
                .filter(|_| matches!(crate::recorder_holds_file(file), Ok(false)))
        })
    }

    /// A probe by `free_len`: the file's length when nobody holds it, else `None`.
    fn probe(&mut self, free_len: impl FnOnce() -> Option<u64>) -> bool {
        let now = Instant::now();
        if let Some((at, _)) = self.last
            && now.duration_since(at) < self.settle
        {
            return false;
        }
        let free_len = free_len();
        let before = self.last.and_then(|(_, len)| len);
        self.last = Some((now, free_len));
        free_len.is_some() && free_len == before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Recorder, RecorderOptions};

    #[test]
    fn only_a_file_nobody_writes_twice_in_a_row_at_one_length_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        let mut watch = WriterWatch::new(Duration::ZERO);
        // Missing, then empty (a recorder that created it and has not locked it yet).
        assert!(!watch.ended(&path));
        std::fs::write(&path, b"").unwrap();
        assert!(!watch.ended(&path) && !watch.ended(&path));
        // Written by a live recorder: held, however often asked.
        let recorder = Recorder::create(&path, RecorderOptions::default()).unwrap();
        assert!(crate::recorder_holds(&path).unwrap());
        for _ in 0..3 {
            assert!(!watch.ended(&path));
        }
        // The recorder's lock is untouched: a second recorder is still refused.
        assert!(matches!(
            crate::FileSink::create(&path),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        ));
        recorder.close().unwrap();
        // Closed and released: free, but a first free probe concludes nothing ...
        assert!(!crate::recorder_holds(&path).unwrap());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(!watch.ended(&path));
        // ... the file growing since does not either ...
        std::fs::write(&path, &bytes[..bytes.len() * 3 / 4]).unwrap();
        assert!(!watch.ended(&path));
        // ... the second at the same length does.
        assert!(watch.ended(&path));
        // A probe releases its shared lock: the file is free to record into again.
        drop(Recorder::create(&path, RecorderOptions::default()).unwrap());
    }

    #[test]
    fn probes_closer_than_the_settle_time_conclude_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hrxt");
        std::fs::write(&path, b"HRXTRACE cut short").unwrap();
        let mut watch = WriterWatch::new(Duration::from_secs(3600));
        for _ in 0..3 {
            assert!(!watch.ended(&path));
        }
        let mut watch = WriterWatch::new(Duration::ZERO);
        assert!(!watch.ended(&path));
        assert!(watch.ended(&path));
    }
}
