//! Ranges that cross: a thread's application ranges nest when closed in the reverse order
//! of their opening, and cross when not (`A` opened, `B` opened, `A` closed, `B` closed).
//! A track of nested slices cannot show a crossing one (Perfetto and chrome://tracing
//! draw it as if it ended where the next began, or drop it), so each reader puts such a
//! slice on a track of its own beside the thread's: `NAME (crossing ranges)`, and one that
//! crosses a slice there too on `NAME (crossing ranges 2)`, up to [`CROSSING_LEVELS`].
//! `export` and `view` place slices by this one rule, in record order (a thread records a
//! range or span when it closes).

/// `(crossing ranges)` tracks a thread may have: a slice that crosses one on each goes on
/// the last (ranges crossing that much are not drawn apart).
pub(crate) const CROSSING_LEVELS: u8 = 15;

/// The slices of one track, as they come in the order they ended, that a later slice may
/// still overlap: a stack of intervals each after or around the ones below it. A slice
/// crosses when it starts inside the last one it does not contain. At most
/// [`Nesting::DEPTH`] are kept (the oldest go: a slice reaching back past them is taken as
/// nested).
#[derive(Clone, Debug, Default)]
struct Nesting(Vec<(u64, u64)>);

impl Nesting {
    const DEPTH: usize = 256;

    /// Whether `[start, end)` crosses a slice before it; if not, it is kept.
    fn crosses(&mut self, start: u64, end: u64) -> bool {
        let stack = &mut self.0;
        while let Some(&(s, e)) = stack.last()
            && s >= start
            && e <= end
        {
            stack.pop();
        }
        if let Some(&(s, e)) = stack.last()
            && start < e
            && !(s <= start && end <= e)
        {
            return true;
        }
        if stack.len() == Self::DEPTH {
            stack.remove(0);
        }
        stack.push((start, end));
        false
    }
}

/// The tracks of each host thread: its own (level 0) and its `(crossing ranges)` tracks
/// (levels from 1), with the slices on each that a later one may cross. Few threads a
/// trace: a list.
#[derive(Clone, Debug, Default)]
pub(crate) struct CrossingTracks(Vec<((u32, u8), Nesting)>);

impl CrossingTracks {
    /// Forgets every track (the next trace's pass).
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// The level of the first of `thread`'s tracks where the slice `[start_ns, end_ns)`
    /// crosses nothing (0: the thread's own), the slice then kept there.
    pub(crate) fn place(&mut self, thread: u32, start_ns: u64, end_ns: u64) -> u8 {
        let mut level = 0;
        loop {
            let key = (thread, level);
            let at = match self.0.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    self.0.push((key, Nesting::default()));
                    self.0.len() - 1
                }
            };
            if level == CROSSING_LEVELS || !self.0[at].1.crosses(start_ns, end_ns) {
                return level;
            }
            level += 1;
        }
    }
}

/// The name of a thread's track at `level`: the thread's own name, then `NAME (crossing
/// ranges)`, `NAME (crossing ranges 2)`, ...
pub(crate) fn track_name(thread_name: &str, level: u8) -> String {
    match level {
        0 => thread_name.to_owned(),
        1 => format!("{thread_name} (crossing ranges)"),
        n => format!("{thread_name} (crossing ranges {n})"),
    }
}

#[cfg(test)]
mod tests {
    use super::{CROSSING_LEVELS, CrossingTracks, track_name};

    #[test]
    fn nested_slices_stay_on_the_thread_and_crossing_ones_go_a_level_out() {
        let mut tracks = CrossingTracks::default();
        // In the order they close: inner, outer around it, then one starting inside outer
        // and ending after it, then one crossing both outer and the crossing one.
        assert_eq!(tracks.place(7, 20, 30), 0);
        assert_eq!(tracks.place(7, 10, 40), 0);
        assert_eq!(tracks.place(7, 35, 50), 1);
        assert_eq!(tracks.place(7, 38, 60), 2);
        // After them all: the thread's own track. Another thread's tracks are its own.
        assert_eq!(tracks.place(7, 70, 80), 0);
        assert_eq!(tracks.place(8, 35, 50), 0);
        assert_eq!(track_name("main", 0), "main");
        assert_eq!(track_name("main", 1), "main (crossing ranges)");
        assert_eq!(track_name("main", 2), "main (crossing ranges 2)");
        tracks.clear();
        assert_eq!(tracks.place(7, 35, 50), 0);
    }

    #[test]
    fn slices_crossing_every_track_share_the_last() {
        let mut tracks = CrossingTracks::default();
        // Each starts inside the one before and ends after it: each crosses all before.
        let levels: Vec<u8> = (0..20u64)
            .map(|i| tracks.place(1, 10 * i, 10 * i + 15))
            .collect();
        assert_eq!(levels[..3], [0, 1, 0]);
        assert!(levels.iter().all(|&l| l <= CROSSING_LEVELS));
    }
}
