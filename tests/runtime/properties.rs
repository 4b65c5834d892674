//! Property tests: random graphs over random overlapping views, submitted concurrently
//! from several threads, leave exactly the bytes that a sequential execution in submission
//! order leaves, and no two conflicting operations ever run at the same time.

use hrx::{Access, GpuAccess, GpuLane, Placement, Runtime, RuntimeOptions};
use proptest::prelude::*;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const BUFFERS: usize = 3;
const LEN: usize = 64;

#[derive(Clone, Debug)]
enum Op {
    Fill {
        buffer: usize,
        range: Range<usize>,
        value: u8,
    },
    Copy {
        dst: (usize, usize),
        src: (usize, usize),
        len: usize,
        lane: u8,
    },
    /// Host queue: bytes += k.
    HostAdd {
        buffer: usize,
        range: Range<usize>,
        k: u8,
    },
    /// Compute queue (scoped callback): dst[i] = src[i] ^ k.
    ScopedXor {
        dst: (usize, usize),
        src: (usize, usize),
        len: usize,
        k: u8,
    },
}

fn range() -> impl Strategy<Value = Range<usize>> {
    (0..LEN, 1..=LEN).prop_map(|(start, len)| start..(start + len).min(LEN))
}

/// Two equal-length ranges that do not overlap if they are in the same buffer.
fn pair() -> impl Strategy<Value = ((usize, usize), (usize, usize), usize)> {
    (0..BUFFERS, 0..BUFFERS, 1..=LEN / 2, 0..LEN / 2, 0..LEN / 2).prop_map(|(d, s, len, a, b)| {
        if d == s {
            // Disjoint halves of one buffer.
            let len = len.min(LEN / 2);
            ((d, 0), (s, LEN / 2), len)
        } else {
            ((d, a.min(LEN - len)), (s, b.min(LEN - len)), len)
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..BUFFERS, range(), any::<u8>()).prop_map(|(buffer, range, value)| Op::Fill {
            buffer,
            range,
            value
        }),
        (pair(), 0..3u8).prop_map(|((dst, src, len), lane)| Op::Copy {
            dst,
            src,
            len,
            lane
        }),
        (0..BUFFERS, range(), 1..=255u8).prop_map(|(buffer, range, k)| Op::HostAdd {
            buffer,
            range,
            k
        }),
        (pair(), any::<u8>()).prop_map(|((dst, src, len), k)| Op::ScopedXor { dst, src, len, k }),
    ]
}

/// One stamped execution of a callback: when, and which byte ranges how.
#[derive(Clone, Debug)]
struct Stamp {
    start: Instant,
    end: Instant,
    uses: Vec<(usize, Range<usize>, Access)>,
}

type Log = Arc<Mutex<Vec<Stamp>>>;

fn apply(memory: &mut [Vec<u8>], op: &Op) {
    match op {
        Op::Fill {
            buffer,
            range,
            value,
        } => memory[*buffer][range.clone()].fill(*value),
        Op::Copy { dst, src, len, .. } => {
            let data = memory[src.0][src.1..src.1 + len].to_vec();
            memory[dst.0][dst.1..dst.1 + len].copy_from_slice(&data);
        }
        Op::HostAdd { buffer, range, k } => memory[*buffer][range.clone()]
            .iter_mut()
            .for_each(|b| *b = b.wrapping_add(*k)),
        Op::ScopedXor { dst, src, len, k } => {
            let data: Vec<u8> = memory[src.0][src.1..src.1 + len]
                .iter()
                .map(|b| b ^ k)
                .collect();
            memory[dst.0][dst.1..dst.1 + len].copy_from_slice(&data);
        }
    }
}

fn build(rt: &Runtime, buffers: &[hrx::Buffer], ops: &[Op], log: &Log) -> hrx::ExecutableGraph {
    let mut graph = rt.graph();
    let view =
        |(b, offset): (usize, usize), len: usize| buffers[b].view(offset..offset + len).unwrap();
    for op in ops {
        match op.clone() {
            Op::Fill {
                buffer,
                range,
                value,
            } => {
                graph
                    .fill(buffers[buffer].view(range).unwrap(), value)
                    .unwrap();
            }
            Op::Copy {
                dst,
                src,
                len,
                lane,
            } => {
                let lane = [GpuLane::Upload, GpuLane::Compute, GpuLane::Download][lane as usize];
                graph.copy_on(view(dst, len), view(src, len), lane).unwrap();
            }
            Op::HostAdd { buffer, range, k } => {
                let log = log.clone();
                let uses = vec![(buffer, range.clone(), Access::ReadWrite)];
                graph
                    .host(
                        &[GpuAccess::new(
                            buffers[buffer].view(range).unwrap(),
                            Access::ReadWrite,
                        )],
                        move |views| {
                            let start = Instant::now();
                            views
                                .write(0)?
                                .iter_mut()
                                .for_each(|b| *b = b.wrapping_add(k));
                            std::thread::yield_now();
                            log.lock().unwrap().push(Stamp {
                                start,
                                end: Instant::now(),
                                uses: uses.clone(),
                            });
                            Ok(())
                        },
                    )
                    .unwrap();
            }
            Op::ScopedXor { dst, src, len, k } => {
                let log = log.clone();
                let uses = vec![
                    (dst.0, dst.1..dst.1 + len, Access::Write),
                    (src.0, src.1..src.1 + len, Access::Read),
                ];
                let bindings = [
                    GpuAccess::new(view(dst, len), Access::Write),
                    GpuAccess::new(view(src, len), Access::Read),
                ];
                // SAFETY: the callback writes only binding 0 and reads only binding 1, within
                // their lengths, through host pointers of host-visible memory, synchronously.
                unsafe {
                    graph
                        .gpu_scoped(&bindings, move |views| {
                            let start = Instant::now();
                            let (d, s) = (
                                views[0].host_pointer().unwrap(),
                                views[1].host_pointer().unwrap(),
                            );
                            for i in 0..len {
                                *d.add(i) = *s.add(i) ^ k;
                            }
                            std::thread::yield_now();
                            log.lock().unwrap().push(Stamp {
                                start,
                                end: Instant::now(),
                                uses: uses.clone(),
                            });
                            Ok(())
                        })
                        .unwrap();
                }
            }
        }
    }
    graph.prepare().unwrap()
}

fn conflicting(a: &Stamp, b: &Stamp) -> bool {
    a.uses.iter().any(|(ba, ra, xa)| {
        b.uses.iter().any(|(bb, rb, xb)| {
            ba == bb && ra.start < rb.end && rb.start < ra.end && xa.conflicts_with(*xb)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn concurrent_submissions_match_sequential_execution(
        initial in proptest::collection::vec(proptest::collection::vec(any::<u8>(), LEN), BUFFERS),
        graphs in proptest::collection::vec((proptest::collection::vec(op(), 1..16), 1..4usize), 2..5),
    ) {
        let rt = Runtime::new(RuntimeOptions::sim().graph_slots(4)).unwrap();
        let buffers: Vec<_> = initial.iter().map(|bytes| {
            let b = rt.buffer(LEN, Placement::HostVisible).unwrap();
            b.write(0, bytes).unwrap();
            b
        }).collect();
        let log: Log = Arc::default();
        let executables: Vec<_> = graphs.iter().map(|(ops, _)| build(&rt, &buffers, ops, &log)).collect();
        let submitted: Mutex<Vec<(u64, usize)>> = Mutex::default();
        std::thread::scope(|scope| {
            for (g, (executable, (_, repeats))) in executables.iter().zip(&graphs).enumerate() {
                let submitted = &submitted;
                scope.spawn(move || {
                    let completions: Vec<_> = (0..*repeats).map(|_| executable.submit().unwrap()).collect();
                    for completion in completions {
                        completion.wait().unwrap();
                        submitted.lock().unwrap().push((completion.submission(), g));
                    }
                });
            }
        });
        let mut order = submitted.into_inner().unwrap();
        order.sort();
        let mut expected = initial.clone();
        for (_, g) in &order {
            for op in &graphs[*g].0 {
                apply(&mut expected, op);
            }
        }
        for (b, buffer) in buffers.iter().enumerate() {
            prop_assert_eq!(buffer.to_vec().unwrap(), expected[b].clone(), "buffer {} after {:?}", b, order);
        }
        let stamps = log.lock().unwrap();
        for (i, a) in stamps.iter().enumerate() {
            for b in &stamps[i + 1..] {
                if conflicting(a, b) {
                    prop_assert!(a.end <= b.start || b.end <= a.start, "conflicting callbacks overlapped: {:?} {:?}", a, b);
                }
            }
        }
    }
}
