//! Statistics over spans: per kernel (label) durations, per lane utilisation, copy
//! bandwidth per lane. Computed once when the model is built.
//!
//! - Durations are host durations of spans that ran (untimed cancelled regions are left
//!   out). Percentiles use the nearest-rank method (p50 of `[1, 2, 3, 4]` is 2) through
//!   `hrx_analysis::sketch`, as `hrx-trace stats` computes them: exact up to its
//!   `EXACT_LIMIT` spans per label, within its `RELATIVE_ERROR` past that.
//! - Utilisation is the union of a lane's span intervals (overlaps counted once) over the
//!   trace span: first span start to last span end, over every lane.
//! - Copy bandwidth is the sum of `copy_bytes` of copy-batch regions over the sum of their
//!   durations, per lane (upload, compute, download).

use super::lanes::Span;
use super::model::{LabelId, LaneId, Model};
use hrx_analysis::sketch::Sketch;
use hrx_capture::schema::{Queue, RegionKind};
use serde::{Deserialize, Serialize};

/// Duration statistics of one kernel (span label).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelStats {
    /// The label.
    pub label: LabelId,
    /// Its text.
    pub name: String,
    /// Spans.
    pub count: u64,
    /// Sum of durations in ns.
    pub total_ns: u64,
    /// Mean duration in ns.
    pub mean_ns: u64,
    /// Median (nearest rank) in ns.
    pub p50_ns: u64,
    /// 99th percentile (nearest rank) in ns.
    pub p99_ns: u64,
    /// Shortest in ns.
    pub min_ns: u64,
    /// Longest in ns.
    pub max_ns: u64,
}

/// Utilisation of one lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaneStats {
    /// The lane.
    pub lane: LaneId,
    /// Spans that ran on it.
    pub spans: u64,
    /// Time with at least one span running, in ns.
    pub busy_ns: u64,
    /// `busy_ns` over the trace span, 0..=1.
    pub utilisation: f64,
}

/// Copy throughput of one GPU lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyStats {
    /// The lane.
    pub lane: LaneId,
    /// Copy batches that ran.
    pub batches: u64,
    /// Bytes they copied.
    pub bytes: u64,
    /// Sum of their durations in ns.
    pub busy_ns: u64,
    /// `bytes` over `busy_ns`, in bytes per second.
    pub bytes_per_s: f64,
}

/// Every statistic of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Per kernel, by total time (largest first).
    pub kernels: Vec<KernelStats>,
    /// Per lane with spans, in lane order.
    pub lanes: Vec<LaneStats>,
    /// Per GPU lane with copy batches, in lane order.
    pub copies: Vec<CopyStats>,
    /// The trace span in ns: first span start to last span end.
    pub span_ns: u64,
}

impl Stats {
    /// Rows of the statistics overlay: three headed tables (kernels, queues, copy
    /// bandwidth, the last at least one row) and a blank row between them. ↑/↓ scroll it.
    pub fn overlay_rows(&self) -> usize {
        3 + 2 + self.kernels.len() + self.lanes.len() + self.copies.len().max(1)
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted values; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Union length of intervals given in start order.
fn busy_ns<'a>(spans: impl Iterator<Item = &'a Span>) -> u64 {
    let mut busy: u64 = 0;
    let mut current: Option<(u64, u64)> = None;
    for s in spans {
        match &mut current {
            Some((_, end)) if s.start_ns <= *end => *end = (*end).max(s.end_ns),
            _ => {
                if let Some((a, b)) = current {
                    busy = busy.saturating_add(b - a);
                }
                current = Some((s.start_ns, s.end_ns));
            }
        }
    }
    busy.saturating_add(current.map_or(0, |(a, b)| b - a))
}

pub(crate) fn compute(model: &Model) -> Stats {
    let mut durations: Vec<Sketch> = vec![Sketch::new(); model.labels().len()];
    let mut stats = Stats::default();
    let mut first = u64::MAX;
    let mut last = 0;
    for (i, lane) in model.lanes().iter().enumerate() {
        let ran = || lane.spans().iter().filter(|s| s.ran());
        let mut copy = CopyStats {
            lane: LaneId(i as u32),
            batches: 0,
            bytes: 0,
            busy_ns: 0,
            bytes_per_s: 0.0,
        };
        let mut count = 0;
        for s in ran() {
            count += 1;
            first = first.min(s.start_ns);
            last = last.max(s.end_ns);
            let region = model.region(s.region);
            durations[region.label.get()].add(s.duration_ns());
            if region.kind == RegionKind::CopyBatch {
                copy.batches += 1;
                copy.bytes = copy.bytes.saturating_add(region.copy_bytes);
                copy.busy_ns = copy.busy_ns.saturating_add(s.duration_ns());
            }
        }
        if count > 0 {
            stats.lanes.push(LaneStats {
                lane: LaneId(i as u32),
                spans: count,
                busy_ns: busy_ns(ran()),
                utilisation: 0.0,
            });
        }
        let gpu = matches!(
            lane.queue,
            Queue::GpuUpload | Queue::GpuCompute | Queue::GpuDownload
        );
        if gpu && copy.batches > 0 {
            if copy.busy_ns > 0 {
                copy.bytes_per_s = copy.bytes as f64 * 1e9 / copy.busy_ns as f64;
            }
            stats.copies.push(copy);
        }
    }
    stats.span_ns = last.saturating_sub(first);
    for lane in &mut stats.lanes {
        if stats.span_ns > 0 {
            lane.utilisation = lane.busy_ns as f64 / stats.span_ns as f64;
        }
    }
    for (label, mut d) in durations.into_iter().enumerate() {
        if d.count() == 0 {
            continue;
        }
        stats.kernels.push(KernelStats {
            label: LabelId(label as u32),
            name: model.labels()[label].clone(),
            count: d.count(),
            total_ns: d.total(),
            mean_ns: d.total() / d.count(),
            p50_ns: d.percentile(50.0),
            p99_ns: d.percentile(99.0),
            min_ns: d.min(),
            max_ns: d.max(),
        });
    }
    stats.kernels.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[7], 99.0), 7);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 99.0), 99);
        assert_eq!(percentile(&hundred, 100.0), 100);
        assert_eq!(percentile(&hundred, 0.0), 1);
    }
}

#[cfg(test)]
mod model_tests {
    use super::super::fixtures::*;
    use hrx_capture::schema::Queue;

    #[test]
    fn statistics_from_known_spans() {
        let mut f = three_stage();
        // saxpy (compute) durations 10, 20, 30 and 40; uploads 100 each (4096 B copies).
        for (i, d) in [10u64, 20, 30, 40].into_iter().enumerate() {
            let i = i as u64;
            let t = 1_000 * i;
            f.submit(1, i, &[], t)
                .ran(i, 0, t, t + 100)
                .ran(i, 1, t + 200, t + 200 + d);
        }
        let model = f.model();
        let stats = model.stats();
        let saxpy = stats.kernels.iter().find(|k| k.name == "saxpy").unwrap();
        assert_eq!(
            (
                saxpy.count,
                saxpy.total_ns,
                saxpy.mean_ns,
                saxpy.p50_ns,
                saxpy.p99_ns,
                saxpy.min_ns,
                saxpy.max_ns
            ),
            (4, 100, 25, 20, 40, 10, 40)
        );
        // Sorted by total time: uploads (400 ns) first.
        assert_eq!(stats.kernels[0].name, "upload");
        // Trace span: 0 .. 3240.
        assert_eq!(stats.span_ns, 3_240);
        let lane_stats = |q| {
            stats
                .lanes
                .iter()
                .find(|l| model.lane(l.lane).queue == q)
                .unwrap()
        };
        assert_eq!(lane_stats(Queue::GpuUpload).busy_ns, 400);
        assert!((lane_stats(Queue::GpuCompute).utilisation - 100.0 / 3_240.0).abs() < 1e-12);
        let copy = &stats.copies[0];
        assert_eq!(model.lane(copy.lane).queue, Queue::GpuUpload);
        assert_eq!((copy.batches, copy.bytes, copy.busy_ns), (4, 4 * 4096, 400));
        assert!((copy.bytes_per_s - 4096.0 / 100e-9).abs() < 1.0);
    }

    #[test]
    fn overlapping_spans_count_once_in_utilisation() {
        let mut f = three_stage();
        f.submit(1, 0, &[], 0)
            .submit(1, 1, &[], 0)
            .ran(0, 1, 0, 100)
            .ran(1, 1, 50, 150);
        let model = f.model();
        let lane = &model.stats().lanes[0];
        assert_eq!((lane.spans, lane.busy_ns), (2, 150));
        assert!((lane.utilisation - 1.0).abs() < 1e-12);
    }
}

#[cfg(test)]
mod agreement_tests {
    use crate::state::Model;
    use crate::state::synthetic::{PipelineSpec, pipeline};

    /// The timeline's statistics and `hrx-trace stats` (the streaming pass of
    /// `hrx-analysis`) give the same figures, past the sketches' exact limit too.
    #[test]
    fn timeline_and_streaming_statistics_agree() {
        let spec = PipelineSpec {
            busy_every: Some(7),
            fail_at: Some(1_500),
            ..PipelineSpec::ops(8_000)
        };
        let records: Vec<_> = pipeline(spec).collect();
        let model = Model::from_records(&records);
        let (streamed, summary) = hrx_analysis::stats::stats_of(&records);
        assert_eq!(summary.unplaced_timings, 0);
        let timeline = model.stats();
        assert_eq!(streamed.span_ns, timeline.span_ns);
        assert_eq!(streamed.kernels.len(), timeline.kernels.len());
        for (s, t) in streamed.kernels.iter().zip(&timeline.kernels) {
            assert_eq!(
                (
                    &s.name, s.count, s.total_ns, s.p50_ns, s.p99_ns, s.min_ns, s.max_ns
                ),
                (
                    &t.name, t.count, t.total_ns, t.p50_ns, t.p99_ns, t.min_ns, t.max_ns
                )
            );
        }
        assert!(streamed.kernels.iter().any(|k| !k.exact));
        for (s, t) in streamed.lanes.iter().zip(&timeline.lanes) {
            assert_eq!(s.lane.0, t.lane.0);
            assert_eq!((s.spans, s.busy_ns), (t.spans, t.busy_ns));
        }
        assert_eq!(streamed.lanes.len(), timeline.lanes.len());
        for (s, t) in streamed.copies.iter().zip(&timeline.copies) {
            assert_eq!(
                (s.batches, s.bytes, s.busy_ns),
                (t.batches, t.bytes, t.busy_ns)
            );
        }
        assert_eq!(streamed.copies.len(), timeline.copies.len());
        let subs = model.submissions();
        assert_eq!(streamed.submissions.accepted, subs.len() as u64);
        assert_eq!(
            streamed.submissions.busy_refusals,
            model.busy_times().len() as u64
        );
        assert!(streamed.submissions.failed >= 1);
        assert!(streamed.failures.regions_cancelled >= 1);
    }
}
