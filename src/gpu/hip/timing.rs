//! Kernel times without a profiler library: the rules for timing each operation with event
//! pairs, written over generic node and event handles so that they are tested without a
//! device (the HIP calls that use them are in `graph.rs` and `stream.rs`).
//!
//! - [`wire_timed`]: how a timed operation node is fenced by its two event-record nodes.
//! - [`TimedOp`]: an operation and its event pair; [`read_op_spans`] reads a synchronized
//!   batch's pairs and places them on the host clock inside the batch's span.

use crate::gpu::{DeviceSpan, OpSpan};

/// One timed operation: its index ([`OpSpan::index`]: the graph node, or the copy's place in
/// its batch) and the events recorded just before and just after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TimedOp<E> {
    pub(super) index: usize,
    pub(super) before: E,
    pub(super) after: E,
}

/// Adds a timed operation to a graph: an event-record node for `events.0` after `deps`, the
/// operation (made by `add`) after that node alone, and an event-record node for `events.1`
/// after the operation. Returns the last record node, the one that the operation's dependents
/// must wait for, so that its event is recorded before they start (dependency edges run
/// through the record nodes; nothing else is ordered).
///
/// # Errors
/// What `record` or `add` returns.
pub(super) fn wire_timed<N: Copy, E, Err>(
    deps: &[N],
    events: (E, E),
    mut record: impl FnMut(&[N], E) -> Result<N, Err>,
    add: impl FnOnce(&[N]) -> Result<N, Err>,
) -> Result<N, Err> {
    let before = record(deps, events.0)?;
    let operation = add(&[before])?;
    record(&[operation], events.1)
}

/// Nanoseconds in `ms` event milliseconds (negative as 0).
fn ms_to_ns(ms: f32) -> u64 {
    (f64::from(ms.max(0.0)) * 1e6) as u64
}

/// The operation that ran `begin_ms` to `finish_ms` after the start of `batch` (the batch's
/// span on the host clock, from [`crate::gpu::common::span_ending_at`]), on the same clock:
/// each end is the batch's start plus its offset, kept inside the batch (event readings are
/// single-precision floats with a resolution of about 1 µs) and in order.
pub(super) fn place_in_batch(batch: DeviceSpan, begin_ms: f32, finish_ms: f32) -> DeviceSpan {
    let at = |ms| {
        batch
            .start_ns
            .saturating_add(ms_to_ns(ms))
            .min(batch.end_ns)
    };
    let start_ns = at(begin_ms);
    DeviceSpan {
        start_ns,
        end_ns: at(finish_ms).max(start_ns),
    }
}

/// Appends to `out` the span of each of `ops`, by `elapsed(from, to)` (event milliseconds)
/// from the batch's start event `start` to each event, placed inside `batch`, sorted by start
/// (the order they ran; ties keep the order of `ops`), `device: true`.
///
/// # Errors
/// The first failed `elapsed`; the spans read before it are appended, the failing one and
/// those after it are not.
pub(super) fn read_op_spans<E: Copy, Err>(
    start: E,
    batch: DeviceSpan,
    ops: impl IntoIterator<Item = TimedOp<E>>,
    mut elapsed: impl FnMut(E, E) -> Result<f32, Err>,
    out: &mut Vec<OpSpan>,
) -> Result<(), Err> {
    let first = out.len();
    let mut result = Ok(());
    for op in ops {
        let read = elapsed(start, op.before).and_then(|b| Ok((b, elapsed(start, op.after)?)));
        match read {
            Ok((begin_ms, finish_ms)) => out.push(OpSpan {
                index: op.index,
                span: place_in_batch(batch, begin_ms, finish_ms),
                device: true,
            }),
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    out[first..].sort_by_key(|op| op.span.start_ns);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake graph: each node is its name and the names it depends on.
    #[derive(Default)]
    struct Graph {
        nodes: Vec<(String, Vec<String>)>,
    }

    impl Graph {
        fn add(&mut self, name: &str, deps: &[usize]) -> Result<usize, String> {
            if name == "refused" {
                return Err(format!("{name} refused"));
            }
            let deps = deps.iter().map(|&d| self.nodes[d].0.clone()).collect();
            self.nodes.push((name.to_owned(), deps));
            Ok(self.nodes.len() - 1)
        }

        fn edges(&self) -> Vec<(&str, Vec<&str>)> {
            self.nodes
                .iter()
                .map(|(n, d)| (n.as_str(), d.iter().map(String::as_str).collect()))
                .collect()
        }
    }

    #[test]
    fn a_timed_operation_is_fenced_by_its_records_and_its_dependents_wait_for_the_last() {
        let graph = std::cell::RefCell::new(Graph::default());
        let root = graph.borrow_mut().add("root", &[]).unwrap();
        let other = graph.borrow_mut().add("other", &[]).unwrap();
        let record = |deps: &[usize], event: &str| graph.borrow_mut().add(event, deps);
        let last = wire_timed(&[root, other], ("before", "after"), record, |deps| {
            graph.borrow_mut().add("kernel", deps)
        })
        .unwrap();
        let dependent = graph.borrow_mut().add("dependent", &[last]).unwrap();
        assert_eq!(dependent, 5);
        assert_eq!(
            graph.borrow().edges(),
            [
                ("root", vec![]),
                ("other", vec![]),
                ("before", vec!["root", "other"]),
                ("kernel", vec!["before"]),
                ("after", vec!["kernel"]),
                ("dependent", vec!["after"]),
            ]
        );
        // A root operation's first record is a root too.
        let graph = std::cell::RefCell::new(Graph::default());
        let record = |deps: &[usize], event: &str| graph.borrow_mut().add(event, deps);
        wire_timed(&[], ("b", "a"), record, |deps| {
            graph.borrow_mut().add("fill", deps)
        })
        .unwrap();
        assert_eq!(
            graph.borrow().edges(),
            [("b", vec![]), ("fill", vec!["b"]), ("a", vec!["fill"])]
        );
    }

    #[test]
    fn a_refused_node_stops_the_wiring_with_its_error() {
        let graph = std::cell::RefCell::new(Graph::default());
        let record = |deps: &[usize], event: &str| graph.borrow_mut().add(event, deps);
        let error = wire_timed(&[], ("b", "refused"), record, |deps| {
            graph.borrow_mut().add("copy", deps)
        })
        .unwrap_err();
        assert_eq!(error, "refused refused");
        let record = |deps: &[usize], event: &str| graph.borrow_mut().add(event, deps);
        let error = wire_timed(&[], ("b2", "a2"), record, |deps| {
            graph.borrow_mut().add("refused", deps)
        })
        .unwrap_err();
        assert_eq!(error, "refused refused");
        let graph = graph.borrow();
        let names: Vec<_> = graph.edges().into_iter().map(|e| e.0).collect();
        assert_eq!(names, ["b", "copy", "b2"], "nothing added after a refusal");
    }

    #[test]
    fn operations_are_placed_from_the_batch_start_and_kept_inside_it() {
        let batch = DeviceSpan {
            start_ns: 1_000_000,
            end_ns: 5_000_000,
        };
        let span = |start_ns, end_ns| DeviceSpan { start_ns, end_ns };
        assert_eq!(place_in_batch(batch, 0.5, 1.25), span(1_500_000, 2_250_000));
        assert_eq!(place_in_batch(batch, 0.0, 0.0), span(1_000_000, 1_000_000));
        // Past the batch's end (float rounding, or a synchronize that returned early): cut.
        assert_eq!(place_in_batch(batch, 3.5, 4.5), span(4_500_000, 5_000_000));
        assert_eq!(place_in_batch(batch, 9.0, 9.5), span(5_000_000, 5_000_000));
        // Negative readings are 0; an end read before its start is the start.
        assert_eq!(place_in_batch(batch, -1.0, 0.5), span(1_000_000, 1_500_000));
        assert_eq!(place_in_batch(batch, 2.0, 1.0), span(3_000_000, 3_000_000));
    }

    /// Events as instants in ms after the batch's start event (event 0).
    fn elapsed_of(times: &[f32]) -> impl FnMut(usize, usize) -> Result<f32, String> + '_ {
        |from, to| match (times.get(from), times.get(to)) {
            (Some(a), Some(b)) => Ok(b - a),
            _ => Err(format!("event {to} not recorded")),
        }
    }

    #[test]
    fn event_pairs_become_operation_spans_by_index_in_the_order_they_ran() {
        // Event 0 starts the batch; node 0 ran from 1 to 2 ms, node 2 (independent of node
        // 0, started first) from 0.5 to 3 ms, node 1 from 3 to 4 ms.
        let times = [0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 3.0];
        let ops = [
            TimedOp {
                index: 0,
                before: 1,
                after: 2,
            },
            TimedOp {
                index: 1,
                before: 3,
                after: 4,
            },
            TimedOp {
                index: 2,
                before: 5,
                after: 6,
            },
        ];
        let batch = DeviceSpan {
            start_ns: 10_000_000,
            end_ns: 14_500_000,
        };
        let earlier = OpSpan {
            index: 9,
            span: batch,
            device: false,
        };
        let mut out = vec![earlier];
        read_op_spans(0, batch, ops, elapsed_of(&times), &mut out).unwrap();
        let ms = |m: u64| 10_000_000 + m * 500_000;
        let expected = [(2, ms(1), ms(6)), (0, ms(2), ms(4)), (1, ms(6), ms(8))];
        assert_eq!(out[0], earlier, "what `out` held stays first");
        let read: Vec<_> = out[1..]
            .iter()
            .map(|o| (o.index, o.span.start_ns, o.span.end_ns))
            .collect();
        assert_eq!(read, expected);
        assert!(out[1..].iter().all(|o| o.device));
    }

    #[test]
    fn a_failed_reading_keeps_the_spans_read_before_it() {
        let times = [0.0, 1.0, 2.0];
        let ops = (0..3).map(|index| TimedOp {
            index,
            before: [1, 1, 7][index],
            after: [2, 8, 2][index],
        });
        let batch = DeviceSpan {
            start_ns: 0,
            end_ns: 3_000_000,
        };
        let mut out = Vec::new();
        let error = read_op_spans(0, batch, ops, elapsed_of(&times), &mut out).unwrap_err();
        assert_eq!(error, "event 8 not recorded");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].index, 0);
        assert_eq!(
            out[0].span,
            DeviceSpan {
                start_ns: 1_000_000,
                end_ns: 2_000_000
            }
        );
    }
}
