//! Host-thread rows (format 1.14): one row per recording thread that submitted, waited,
//! ran host callbacks, waited for the recorder or annotated, beside the device queues, so
//! that "why is the GPU idle" is answered by looking (the decoder thread busy decoding, the
//! main thread waiting for it).
//!
//! A row holds its thread's spans sorted by start: `submit` calls, blocking waits, host
//! callbacks, capture-fence waits (format 1.15) and recorder waits ([`ThreadWhat`]), and the
//! application's ranges, which nest
//! (a range's depth is its nesting on the thread); and its markers. A range closed out of
//! order (it crosses another: neither inside it nor after it) goes on a row of its own after
//! its thread's, `NAME (crossing ranges)`, by the rule `export` puts it on a track of its own
//! (`crate::nesting`): drawn on the thread's row it hid the end of the range it crossed, which
//! then seemed to end where the crossing one began. Unlike the queues'
//! lanes, rows are kept in memory (24 bytes a span) and not in the view cache's mapped
//! columns: at most [`ROW_SPANS_LIMIT`] spans and as many markers a row are kept, the rest
//! counted ([`ThreadRow::not_kept`]) and said by the view.

use crate::Index;
use crate::nesting::{CrossingTracks, track_name};
use hrx_capture::schema::{AnnotationId, HostSpanKind, Record, SubmissionIndex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Spans (and markers) kept per row; a row's later ones are counted, not kept.
pub const ROW_SPANS_LIMIT: usize = 1 << 20;

/// What a thread did during a [`ThreadSpan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreadWhat {
    /// A runtime span: `submit`, a blocking wait, a host callback, a capture-fence wait
    /// before one of its regions, of this submission.
    Host(HostSpanKind, SubmissionIndex),
    /// The thread waited for the recorder (its buffer was full).
    RecorderWait,
    /// An application range of this name.
    Range(AnnotationId),
}

/// One span on a thread's row, host ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSpan {
    /// Start.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// What it was.
    pub what: ThreadWhat,
}

/// One recording thread's row, or one of its rows of crossing ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadRow {
    /// The thread's index in the session.
    pub thread: u32,
    /// 0: the thread's own row; from 1, its `(crossing ranges)` rows (see the module docs).
    pub level: u8,
    /// Its name as the index gives it (`thread N` without one), `NAME (crossing ranges)`
    /// for a row of crossing ranges.
    pub name: String,
    /// Its spans, sorted by start (then longest first, so an enclosing range comes before
    /// what it holds).
    pub spans: Vec<ThreadSpan>,
    /// Its markers: time and name, sorted by time.
    pub markers: Vec<(u64, AnnotationId)>,
    /// The longest span's length, ns (bounds the search for spans in a window).
    pub max_len_ns: u64,
    /// Spans and markers past [`ROW_SPANS_LIMIT`], not kept.
    pub not_kept: u64,
}

impl ThreadRow {
    /// The spans overlapping `start_ns..end_ns`, in start order.
    pub fn visible(&self, start_ns: u64, end_ns: u64) -> impl Iterator<Item = &ThreadSpan> {
        let from = self
            .spans
            .partition_point(|s| s.start_ns < start_ns.saturating_sub(self.max_len_ns));
        let to = self.spans.partition_point(|s| s.start_ns < end_ns);
        self.spans[from..to.max(from)]
            .iter()
            .filter(move |s| s.end_ns > start_ns || s.start_ns >= start_ns)
    }

    /// The markers in `start_ns..end_ns`.
    pub fn markers_in(&self, start_ns: u64, end_ns: u64) -> &[(u64, AnnotationId)] {
        let from = self.markers.partition_point(|m| m.0 < start_ns);
        let to = self.markers.partition_point(|m| m.0 < end_ns);
        &self.markers[from..to.max(from)]
    }

    /// The label of `span`: the runtime span's kind and submission, `recorder wait`, or the
    /// range's name.
    pub fn label(&self, index: &Index, span: &ThreadSpan) -> String {
        match span.what {
            ThreadWhat::Host(kind, submission) => format!("{} #{submission}", kind.label()),
            ThreadWhat::RecorderWait => "recorder wait".to_owned(),
            ThreadWhat::Range(name) => index.annotation_name(name).into_owned(),
        }
    }
}

/// Gathers the rows in a pass ([`HostThreads::record`]); [`HostThreads::rows`] finishes them.
#[derive(Clone, Debug, Default)]
pub(crate) struct HostThreads {
    /// By (thread, level).
    rows: BTreeMap<(u32, u8), ThreadRow>,
    /// Which of a thread's rows each span goes on.
    tracks: CrossingTracks,
}

impl HostThreads {
    fn row(&mut self, thread: u32, level: u8) -> &mut ThreadRow {
        self.rows
            .entry((thread, level))
            .or_insert_with(|| ThreadRow {
                thread,
                level,
                ..ThreadRow::default()
            })
    }

    fn span(&mut self, thread: u32, start_ns: u64, end_ns: u64, what: ThreadWhat) {
        let end_ns = end_ns.max(start_ns);
        let level = self.tracks.place(thread, start_ns, end_ns);
        let row = self.row(thread, level);
        if row.spans.len() >= ROW_SPANS_LIMIT {
            row.not_kept += 1;
            return;
        }
        row.max_len_ns = row.max_len_ns.max(end_ns - start_ns);
        row.spans.push(ThreadSpan {
            start_ns,
            end_ns,
            what,
        });
    }

    /// Takes what `record` puts on a thread's row.
    pub(crate) fn record(&mut self, record: &Record) {
        match record {
            Record::HostSpan(h) => {
                let what = ThreadWhat::Host(h.kind, h.submission);
                self.span(h.thread, h.start_ns, h.end_ns, what);
            }
            Record::RecorderWait(w) => {
                self.span(w.thread, w.start_ns, w.end_ns, ThreadWhat::RecorderWait);
            }
            Record::AnnotationRange(a) => {
                self.span(a.thread, a.start_ns, a.end_ns, ThreadWhat::Range(a.name));
            }
            Record::AnnotationMarker(m) => {
                let row = self.row(m.thread, 0);
                if row.markers.len() >= ROW_SPANS_LIMIT {
                    row.not_kept += 1;
                } else {
                    row.markers.push((m.time_ns, m.name));
                }
            }
            _ => {}
        }
    }

    /// The rows, by thread index, named from `index`, spans and markers sorted.
    pub(crate) fn rows(&self, index: &Index) -> Vec<ThreadRow> {
        self.rows
            .values()
            .map(|row| {
                let mut row = row.clone();
                row.name = track_name(&index.thread_name(row.thread), row.level);
                row.spans.sort_by(|a, b| {
                    a.start_ns
                        .cmp(&b.start_ns)
                        .then_with(|| b.end_ns.cmp(&a.end_ns))
                });
                row.markers.sort_unstable();
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Model;

    #[test]
    fn each_thread_is_a_row_of_its_spans_ranges_and_markers() {
        let mut records: Vec<Record> =
            crate::synthetic::pipeline(crate::synthetic::PipelineSpec::ops(8)).collect();
        records.extend(crate::synthetic::annotations(8, 10_000_000, 1_000_000));
        let model = Model::from_records(&records);
        let rows = model.threads();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["main", "decoder"]);
        let (main, decoder) = (&rows[0], &rows[1]);
        assert_eq!(main.spans.len(), 16);
        assert_eq!(main.markers.len(), 8);
        assert_eq!(decoder.spans.len(), 8);
        let index = model.index();
        assert_eq!(main.label(index, &main.spans[0]), "submit #0");
        assert_eq!(main.label(index, &main.spans[1]), "wait #0");
        assert_eq!(decoder.label(index, &decoder.spans[0]), "decode");
        // A window over the third submission: its decode (1 ms before its submit), submit
        // and wait.
        let at = 10_000_000 + 2 * 1_000_000;
        let seen: Vec<_> = main
            .visible(at, at + 110_000)
            .map(|s| main.label(index, s))
            .collect();
        assert_eq!(seen, ["submit #2", "wait #2"]);
        // The third frame's decode, and the fourth's, which takes two periods.
        assert_eq!(decoder.visible(at - 10, at).count(), 2);
        assert_eq!(decoder.visible(at - 1_000_010, at - 1_000_000).count(), 1);
        assert_eq!(main.markers_in(at, at + 110_001).len(), 1);
        assert_eq!(rows.iter().map(|r| r.not_kept).sum::<u64>(), 0);
    }

    /// A range closed out of order goes on a row of its own after its thread's (as `export`
    /// puts it on a track of its own); ranges that nest stay on the thread's row.
    #[test]
    fn a_crossing_range_goes_on_a_row_of_its_own() {
        use hrx_capture::schema::{AnnotationName, AnnotationRange, ThreadName};
        let range = |thread, name, start_ns, end_ns| {
            Record::AnnotationRange(AnnotationRange {
                thread,
                name: AnnotationId(name),
                start_ns,
                end_ns,
            })
        };
        let mut records = vec![Record::ThreadName(ThreadName {
            thread: 0,
            os_tid: 1000,
            name: "main".into(),
        })];
        for (id, text) in ["inner", "outer", "crossing", "later"]
            .into_iter()
            .enumerate()
        {
            records.push(Record::AnnotationName(AnnotationName {
                name: AnnotationId(id as u32),
                text: text.into(),
            }));
        }
        // In the order they close: inner, outer around it, a range that began inside outer
        // and closed after it, then one after them all.
        records.extend([
            range(0, 0, 200, 300),
            range(0, 1, 100, 400),
            range(0, 2, 350, 500),
            range(0, 3, 600, 700),
        ]);
        let model = Model::from_records(&records);
        let index = model.index();
        let rows: Vec<(&str, u8, Vec<String>)> = model
            .threads()
            .iter()
            .map(|r| {
                let labels = r.spans.iter().map(|s| r.label(index, s)).collect();
                (r.name.as_str(), r.level, labels)
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "main",
                    0,
                    vec!["outer".into(), "inner".into(), "later".into()]
                ),
                ("main (crossing ranges)", 1, vec!["crossing".to_owned()]),
            ]
        );
        assert!(model.threads().iter().all(|r| r.thread == 0));
    }

    /// The trace's time range (what `f` fits) holds a thread's markers: a thread that only
    /// marks, long after the GPU's last span, was left out of it.
    #[test]
    fn the_time_range_holds_markers_past_every_span() {
        let mut records: Vec<Record> =
            crate::synthetic::pipeline(crate::synthetic::PipelineSpec::ops(8)).collect();
        records.extend(crate::synthetic::annotations(8, 10_000_000, 1_000_000));
        let late = 900_000_000;
        records.push(Record::AnnotationMarker(
            hrx_capture::schema::AnnotationMarker {
                thread: 1,
                name: AnnotationId(1),
                time_ns: late,
            },
        ));
        let range = Model::from_records(&records).time_range().unwrap();
        assert!(range.end_ns > late, "{range:?}");
    }
}
