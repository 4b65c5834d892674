//! The trace-index fuzz entry, shared by the `index` fuzz target and by
//! `analysis/tests/corpus.rs`, which replays the committed `read` corpus through it in CI.
//!
//! An input is the `read` target's (one mode byte, then the file; see [`crate::read`]'s
//! `file_of`, included here by path so this file stands alone in the analysis tests).
//! The file is indexed twice by `hrx-analysis`: mapped (`scan_mapped`) and streamed from
//! memory (`Joiner` over a `TraceReader`), each gathering the statistics `hrx-trace stats`
//! prints. Checked: no panic; an error is one line naming a byte offset; both passes agree
//! on what they read and on the statistics; the figures are consistent (outcomes never
//! exceed submissions, every joined span's and region completion's lane and region exist).
//! Then the file is exported in both formats (`hrx_analysis::export`) into a sink: no panic,
//! errors one line.

use hrx_analysis::{
    Index, JoinedEvent, JoinedLink, JoinedRegion, JoinedSpan, JoinedSubmission, Joiner, Outcome,
    StatsVisitor, Visitor, scan_mapped,
};
use hrx_capture::schema::{NodeIndex, Record, Submit};
use hrx_capture::{MappedTrace, TraceReader};

/// Checks every joined span and region completion against the index, and passes every call
/// on: the mapped pass's statistics must see what the streamed pass's see. (It once kept
/// region completions to itself, so that a failed region's kernel was counted as run in
/// one pass and failed in the other: the two disagreed on the faults workload's trace.)
struct Checked(StatsVisitor);

impl Visitor for Checked {
    fn record(&mut self, index: &Index, record: &Record) {
        self.0.record(index, record);
    }
    fn span(&mut self, index: &Index, span: &JoinedSpan) {
        let region = index.region(span.region);
        assert_eq!(index.lane(span.lane).queue, region.queue);
        assert_eq!(index.lane(span.lane).runtime, span.runtime);
        self.0.span(index, span);
    }
    fn op_span(&mut self, index: &Index, span: &JoinedSpan, node: NodeIndex) {
        self.0.op_span(index, span, node);
    }
    fn outcome(
        &mut self,
        index: &Index,
        submission: &JoinedSubmission,
        previous: Option<Outcome>,
        outcome: Outcome,
    ) {
        self.0.outcome(index, submission, previous, outcome);
    }
    fn submitted(&mut self, index: &Index, submission: &JoinedSubmission, submit: &Submit) {
        self.0.submitted(index, submission, submit);
    }
    fn region_outcome(
        &mut self,
        index: &Index,
        region: &JoinedRegion,
        outcome: Outcome,
        time_ns: u64,
    ) {
        assert_eq!(
            index.region_of(region.prepared, region.index),
            Some(region.region)
        );
        assert_eq!(
            index.lane(region.lane).queue,
            index.region(region.region).queue
        );
        self.0.region_outcome(index, region, outcome, time_ns);
    }
    fn link(&mut self, index: &Index, link: &JoinedLink) {
        self.0.link(index, link);
    }
    fn event(&mut self, index: &Index, event: &JoinedEvent) {
        self.0.event(index, event);
    }
}

/// Indexes `file` (the bytes after the mode byte, resealed or not) both ways.
///
/// # Panics
///
/// On any violated property: that is the finding.
pub fn index(file: &[u8]) {
    let one_line = |e: &dyn std::fmt::Display| {
        let text = e.to_string();
        assert!(!text.contains('\n'), "a multi-line error: {text:?}");
    };
    let mapped = match MappedTrace::from_vec(file.to_vec()) {
        Ok(m) => m,
        Err(e) => return one_line(&e),
    };
    let mut visitor = Checked(StatsVisitor::new());
    let first = match scan_mapped(&mapped, &mut visitor) {
        Ok(summary) => {
            let stats = visitor.0.finish(&summary);
            let s = &stats.submissions;
            assert!(s.ok + s.failed + s.cancelled <= s.accepted, "{s:?}");
            assert_eq!(
                s.unknown,
                s.accepted.saturating_sub(s.ok + s.failed + s.cancelled)
            );
            Some((summary.records, summary.submissions, stats))
        }
        Err(e) => {
            one_line(&e);
            None
        }
    };
    let Ok(mut reader) = TraceReader::new(file) else {
        panic!("the mapped reader opened a file the streaming reader refuses");
    };
    let mut joiner = Joiner::new();
    let mut visitor = StatsVisitor::new();
    let mut failed = false;
    for item in reader.by_ref() {
        match item {
            Ok((_, record)) => joiner.push(&record, &mut visitor),
            Err(e) => {
                one_line(&e);
                failed = true;
                break;
            }
        }
    }
    let summary = joiner.finish(
        &mut visitor,
        Some(*reader.recovery()),
        reader.warnings().to_vec(),
    );
    if let (Some((records, submissions, stats)), false) = (first, failed) {
        assert_eq!(records, summary.records);
        assert_eq!(submissions, summary.submissions);
        assert_eq!(stats, visitor.finish(&summary));
    }
    export(file);
}

/// Exports `file` in both formats (`hrx-trace export`'s one pass) into a sink: no panic,
/// and an error is one line.
fn export(file: &[u8]) {
    use hrx_analysis::export::{Format, read_session, write};
    for format in [Format::Chrome, Format::Perfetto] {
        let (Ok(reader), Ok(start)) = (TraceReader::new(file), TraceReader::new(file)) else {
            return;
        };
        match write(reader, read_session(start), format, std::io::sink()) {
            Ok(_) => {}
            Err(e) => assert!(!e.to_string().contains('\n'), "a multi-line error: {e}"),
        }
    }
}
