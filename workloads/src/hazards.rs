//! Producers and consumers on shared, partly overlapping byte ranges across submissions.
//!
//! Six buffers (X, Z, Y GPU-local; P host-visible source, Q its GPU-local copy; H a
//! host-visible readback) and four graphs, submitted back to back without any wait in
//! between, in the order A, D, B, C. Ranges are bytes; iota and `fill_u32` write `u32`
//! words (`start + i * step`, wrapping). Some device-to-device copies are placed on the
//! Upload or Download lane on purpose ([`Graph::copy_on`]), so that dependent operations
//! run on different queues and every ordering is enforced by the scheduler, not by one
//! worker's FIFO order.
//!
//! | graph | op | operation                                | queue        | region |
//! |-------|----|------------------------------------------|--------------|--------|
//! | A     | A0 | iota X[0..4096] (0, +1)                  | GPU Compute  | 0      |
//! |       | A1 | copy Y[0..2048] <- X[2048..4096]         | GPU Upload   | 1      |
//! |       | A2 | iota X[1024..3072] (1 000 000, +3)       | GPU Compute  | 2      |
//! | D     | D0 | copy Q[0..4096] <- P[0..4096]            | GPU Upload   | 0      |
//! | B     | B0 | copy Z[0..4096] <- X[2048..6144]         | GPU Download | 0      |
//! |       | B1 | fill_u32 Y[1024..3072] (0xDEADBEEF)      | GPU Compute  | 1      |
//! |       | B2 | iota Z[2048..4096] (7, +11)              | GPU Compute  | 1      |
//! | C     | C0 | iota X[4096..8192] (500, +2)             | GPU Compute  | 0      |
//! |       | C1 | copy X[0..2048] <- Z[1024..3072]         | GPU Compute  | 0      |
//! |       | C2 | copy Y[3072..4096] <- X[0..1024]         | GPU Compute  | 0      |
//! |       | C3 | fill Z[1024..2048] (0x33)                | GPU Compute  | 0      |
//! |       | C4 | fill X[7168..8192] (0x11)                | GPU Compute  | 0      |
//! |       | C5 | copy H[0..8192] <- X[0..8192]            | GPU Download | 1      |
//!
//! Hazards inside graphs:
//! - between regions: A1 on A0 read-after-write (X 2048..4096); A2 on A0 write-after-write
//!   (X 1024..3072) and on A1 write-after-read (X 2048..3072); B's Compute region on B0
//!   write-after-write (Z 2048..4096); C5 on C's Compute region read-after-write (all of X);
//! - inside C's native graph: C2 on C1 read-after-write (X 0..1024), C3 on C1
//!   write-after-read (Z 1024..2048), C4 on C0 write-after-write (X 7168..8192).
//!
//! Hazards across submissions (the scheduler orders the later region after the earlier):
//! - read-after-write: B0 on A (X 2048..4096), C1 on B (Z 1024..3072), C5 on A and B;
//! - write-after-read: C0 on B0 (X 4096..6144: C may not overwrite what B still reads);
//! - write-after-write: B1 on A1 (Y 1024..2048), C1 on A (X 0..2048), C3 on B (Z).
//!
//! D touches only P and Q, which nothing else uses: it conflicts with nobody and may run
//! on the Upload queue while A, B and C occupy the others.
//!
//! Every buffer is first written by the host with a fixed pattern, so every byte read is
//! defined on any backend. After all four submissions retired, every buffer is read back
//! and compared with [`sequential_reference`]: the same operations applied one after the
//! other on the CPU. Any difference is a hazard the runtime failed to order.

use hrx::{Access, Buffer, Error, GpuLane, Graph, HazardKind, Placement, Result, Runtime, kernels};
use std::collections::BTreeSet;
use std::ops::Range;

const X: usize = 0;
const Y: usize = 1;
const Z: usize = 2;
const P: usize = 3;
const Q: usize = 4;
const H: usize = 5;

/// Name, length in bytes and placement of each buffer, by index.
const BUFFERS: [(&str, usize, Placement); 6] = [
    ("X", 8192, Placement::GpuLocal),
    ("Y", 4096, Placement::GpuLocal),
    ("Z", 4096, Placement::GpuLocal),
    ("P", 4096, Placement::HostVisible),
    ("Q", 4096, Placement::GpuLocal),
    ("H", 8192, Placement::HostVisible),
];

/// One operation of the workload. Buffers are indices into [`BUFFERS`]; offsets are bytes.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `u32` words `start + i * step` at `offset`.
    Iota {
        buffer: usize,
        offset: usize,
        words: usize,
        start: u32,
        step: u32,
    },
    /// `u32` words `value` at `offset`.
    FillU32 {
        buffer: usize,
        offset: usize,
        words: usize,
        value: u32,
    },
    /// Bytes `value` at `offset`.
    Fill {
        buffer: usize,
        offset: usize,
        len: usize,
        value: u8,
    },
    /// `len` bytes from `src` at `src_offset` to `dst` at `dst_offset`, on `lane` (`None`:
    /// the lane the placements imply).
    Copy {
        lane: Option<GpuLane>,
        dst: usize,
        dst_offset: usize,
        src: usize,
        src_offset: usize,
        len: usize,
    },
}

impl Op {
    /// The declared uses: (buffer, byte range, access).
    fn uses(&self) -> Vec<(usize, Range<usize>, Access)> {
        match *self {
            Op::Iota {
                buffer,
                offset,
                words,
                ..
            }
            | Op::FillU32 {
                buffer,
                offset,
                words,
                ..
            } => {
                vec![(buffer, offset..offset + words * 4, Access::Write)]
            }
            Op::Fill {
                buffer,
                offset,
                len,
                ..
            } => vec![(buffer, offset..offset + len, Access::Write)],
            Op::Copy {
                dst,
                dst_offset,
                src,
                src_offset,
                len,
                ..
            } => vec![
                (dst, dst_offset..dst_offset + len, Access::Write),
                (src, src_offset..src_offset + len, Access::Read),
            ],
        }
    }

    /// The kernel the operation dispatches, if any.
    fn kernel(&self) -> Option<kernels::KernelSpec> {
        match *self {
            Op::Iota {
                words, start, step, ..
            } => Some(kernels::iota(words, start, step)),
            Op::FillU32 { words, value, .. } => Some(kernels::fill_u32(words, value)),
            Op::Fill { .. } | Op::Copy { .. } => None,
        }
    }

    /// Adds the operation to `graph`.
    fn add(&self, graph: &mut Graph, runtime: &Runtime, buffers: &[Buffer]) -> Result<()> {
        match *self {
            Op::Iota {
                buffer,
                offset,
                words,
                ..
            }
            | Op::FillU32 {
                buffer,
                offset,
                words,
                ..
            } => {
                let spec = self.kernel().expect("Iota and FillU32 dispatch a kernel");
                let kernel = runtime.kernel(&spec)?;
                graph.gpu(
                    &kernel,
                    &[buffers[buffer].view(offset..offset + words * 4)?],
                )?;
            }
            Op::Fill {
                buffer,
                offset,
                len,
                value,
            } => {
                graph.fill(buffers[buffer].view(offset..offset + len)?, value)?;
            }
            Op::Copy {
                lane,
                dst,
                dst_offset,
                src,
                src_offset,
                len,
            } => {
                let destination = buffers[dst].view(dst_offset..dst_offset + len)?;
                let source = buffers[src].view(src_offset..src_offset + len)?;
                match lane {
                    Some(lane) => graph.copy_on(destination, source, lane)?,
                    None => graph.copy(destination, source)?,
                };
            }
        }
        Ok(())
    }

    /// Applies the operation to host copies of the buffers.
    fn apply(&self, memory: &mut [Vec<u8>]) {
        let words = |memory: &mut [Vec<u8>],
                     buffer: usize,
                     offset: usize,
                     values: &mut dyn Iterator<Item = u32>| {
            for (chunk, value) in memory[buffer][offset..].chunks_exact_mut(4).zip(values) {
                chunk.copy_from_slice(&value.to_le_bytes());
            }
        };
        match *self {
            Op::Iota {
                buffer,
                offset,
                words: n,
                start,
                step,
            } => words(
                memory,
                buffer,
                offset,
                &mut (0..n as u32).map(|i| start.wrapping_add(i.wrapping_mul(step))),
            ),
            Op::FillU32 {
                buffer,
                offset,
                words: n,
                value,
            } => words(memory, buffer, offset, &mut std::iter::repeat_n(value, n)),
            Op::Fill {
                buffer,
                offset,
                len,
                value,
            } => memory[buffer][offset..offset + len].fill(value),
            Op::Copy {
                dst,
                dst_offset,
                src,
                src_offset,
                len,
                ..
            } => {
                let bytes = memory[src][src_offset..src_offset + len].to_vec();
                memory[dst][dst_offset..dst_offset + len].copy_from_slice(&bytes);
            }
        }
    }
}

/// The graphs, in submission order.
#[rustfmt::skip]
const SUBMISSIONS: [(&str, &[Op]); 4] = [
    (
        "A",
        &[
            Op::Iota { buffer: X, offset: 0, words: 1024, start: 0, step: 1 },
            Op::Copy { lane: Some(GpuLane::Upload), dst: Y, dst_offset: 0, src: X, src_offset: 2048, len: 2048 },
            Op::Iota { buffer: X, offset: 1024, words: 512, start: 1_000_000, step: 3 },
        ],
    ),
    ("D", &[Op::Copy { lane: None, dst: Q, dst_offset: 0, src: P, src_offset: 0, len: 4096 }]),
    (
        "B",
        &[
            Op::Copy { lane: Some(GpuLane::Download), dst: Z, dst_offset: 0, src: X, src_offset: 2048, len: 4096 },
            Op::FillU32 { buffer: Y, offset: 1024, words: 512, value: 0xDEAD_BEEF },
            Op::Iota { buffer: Z, offset: 2048, words: 512, start: 7, step: 11 },
        ],
    ),
    (
        "C",
        &[
            Op::Iota { buffer: X, offset: 4096, words: 1024, start: 500, step: 2 },
            Op::Copy { lane: None, dst: X, dst_offset: 0, src: Z, src_offset: 1024, len: 2048 },
            Op::Copy { lane: None, dst: Y, dst_offset: 3072, src: X, src_offset: 0, len: 1024 },
            Op::Fill { buffer: Z, offset: 1024, len: 1024, value: 0x33 },
            Op::Fill { buffer: X, offset: 7168, len: 1024, value: 0x11 },
            Op::Copy { lane: None, dst: H, dst_offset: 0, src: X, src_offset: 0, len: 8192 },
        ],
    ),
];

/// The entry names of the kernels the workload dispatches, in first use: known before a run,
/// so that a fault naming another kernel, which could never fire, is refused up front.
pub fn kernel_entries() -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for spec in SUBMISSIONS
        .iter()
        .flat_map(|(_, ops)| ops.iter().filter_map(Op::kernel))
    {
        if !entries.contains(&spec.entry) {
            entries.push(spec.entry);
        }
    }
    entries
}

/// The host's initial contents of buffer `index`: a fixed byte pattern per buffer.
fn initial(index: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 31 + 17 * (index + 1)) as u8)
        .collect()
}

/// An ordering required between two submissions, derived from their declared ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrossHazard {
    /// The earlier submission's graph name.
    pub earlier: &'static str,
    /// The later submission's graph name.
    pub later: &'static str,
    /// Why the later one waits.
    pub kind: HazardKind,
    /// Buffer name.
    pub buffer: &'static str,
    /// The bytes both touch.
    pub range: Range<usize>,
}

/// What [`run_hazards`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HazardsReport {
    /// Final contents of every buffer by name (X, Y, Z, P, Q, H), equal to
    /// [`sequential_reference`].
    pub buffers: Vec<(&'static str, Vec<u8>)>,
    /// Graph names in submission order.
    pub submissions: Vec<&'static str>,
    /// Hazard kinds the runtime inferred inside the prepared graphs: native-graph edges and
    /// region dependencies, as [`hrx::ExecutableGraph::describe`] reports them.
    pub in_graph: BTreeSet<HazardKind>,
    /// Every pair of operations of different submissions that touch intersecting bytes with
    /// at least one write, from the workload's declarations (the scheduler's cross-submission
    /// waits are a subset of these: it waits on the latest writer and readers only).
    pub across_submissions: Vec<CrossHazard>,
}

impl HazardsReport {
    /// The final contents of the buffer called `name`.
    pub fn buffer(&self, name: &str) -> Option<&[u8]> {
        self.buffers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b.as_slice())
    }
}

/// The final buffer contents when every operation runs one after the other on the CPU,
/// by name (X, Y, Z, P, Q, H).
pub fn sequential_reference() -> Vec<(&'static str, Vec<u8>)> {
    let mut memory: Vec<Vec<u8>> = BUFFERS
        .iter()
        .enumerate()
        .map(|(i, (_, len, _))| initial(i, *len))
        .collect();
    for (_, ops) in SUBMISSIONS {
        for op in ops {
            op.apply(&mut memory);
        }
    }
    BUFFERS.iter().map(|(name, ..)| *name).zip(memory).collect()
}

fn cross_hazards() -> Vec<CrossHazard> {
    let mut found: Vec<CrossHazard> = Vec::new();
    for (i, (earlier, earlier_ops)) in SUBMISSIONS.iter().enumerate() {
        for (later, later_ops) in &SUBMISSIONS[i + 1..] {
            for a in earlier_ops.iter().flat_map(Op::uses) {
                for b in later_ops.iter().flat_map(Op::uses) {
                    let range = a.1.start.max(b.1.start)..a.1.end.min(b.1.end);
                    if a.0 != b.0 || range.is_empty() {
                        continue;
                    }
                    if let Some(kind) = HazardKind::between(a.2, b.2) {
                        let hazard = CrossHazard {
                            earlier,
                            later,
                            kind,
                            buffer: BUFFERS[a.0].0,
                            range,
                        };
                        if !found.contains(&hazard) {
                            found.push(hazard);
                        }
                    }
                }
            }
        }
    }
    found
}

/// Runs the workload on `runtime`: allocates and initializes the buffers, prepares the four
/// graphs, submits them back to back (A, D, B, C) without waiting in between, waits for
/// all, and checks every buffer against [`sequential_reference`].
///
/// # Errors
/// The runtime's errors (allocation, kernel loading, `prepare`, `submit` — [`Error::Busy`]
/// when the runtime's capacity has fewer than four free submissions — and the
/// submissions' failures); [`Error::Message`] naming the buffer and the first differing
/// byte when a result differs from the sequential reference.
pub fn run_hazards(runtime: &Runtime) -> Result<HazardsReport> {
    let buffers = BUFFERS
        .iter()
        .map(|(_, len, placement)| runtime.buffer(*len, *placement))
        .collect::<Result<Vec<_>>>()?;
    for (index, buffer) in buffers.iter().enumerate() {
        buffer.write(0, &initial(index, buffer.len()))?;
    }
    let graphs = SUBMISSIONS
        .iter()
        .map(|(_, ops)| {
            let mut graph = runtime.graph();
            for op in *ops {
                op.add(&mut graph, runtime, &buffers)?;
            }
            graph.prepare()
        })
        .collect::<Result<Vec<_>>>()?;
    let in_graph = graphs
        .iter()
        .flat_map(|graph| graph.describe())
        .flat_map(|region| {
            let internal = region.internal.into_iter().map(|(_, hazard)| hazard.kind);
            region
                .hazards
                .into_iter()
                .map(|hazard| hazard.kind)
                .chain(internal)
        })
        .collect();

    // Back to back: every submission is accepted before any is waited for.
    let completions = graphs
        .iter()
        .map(|graph| graph.submit())
        .collect::<Result<Vec<_>>>()?;
    let mut first_error = None;
    for completion in &completions {
        if let Err(error) = completion.wait() {
            first_error.get_or_insert(error);
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    drop(completions);

    let mut contents = Vec::with_capacity(buffers.len());
    for ((name, ..), buffer) in BUFFERS.iter().zip(&buffers) {
        contents.push((*name, buffer.to_vec()?));
    }
    for ((name, got), (_, expected)) in contents.iter().zip(sequential_reference()) {
        if let Some(at) = got.iter().zip(&expected).position(|(g, e)| g != e) {
            return Err(Error::Message(format!(
                "hazards workload: buffer {name} differs from the sequential reference at byte {at}: \
                 got {:#04x}, expected {:#04x} (an unordered hazard)",
                got[at], expected[at]
            )));
        }
    }
    Ok(HazardsReport {
        buffers: contents,
        submissions: SUBMISSIONS.iter().map(|(name, _)| *name).collect(),
        in_graph,
        across_submissions: cross_hazards(),
    })
}

/// One wait across submissions, every time: a host callback writing a buffer is held
/// running until a second submission, reading it, was submitted, so that the second is
/// enqueued behind an unfinished region and records its wait (`CrossWait`). The hazards
/// workload's waits depend on timing: a wait is recorded only where the earlier region is
/// still unfinished at the submit.
///
/// # Errors
/// What creating the buffer, building, preparing, submitting or waiting returns.
pub fn run_held_wait(runtime: &Runtime) -> Result<()> {
    let buffer = runtime.buffer(64, Placement::HostVisible)?;
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    let mut producer = runtime.graph();
    producer.host(
        &[hrx::GpuAccess::new(buffer.whole(), Access::Write)],
        move |_| {
            // A poisoned lock or a dropped sender: nothing to wait for any more.
            if let Ok(held) = held.lock() {
                held.recv().ok();
            }
            Ok(())
        },
    )?;
    let producer = producer.prepare()?;
    let mut consumer = runtime.graph();
    consumer.host(&[hrx::GpuAccess::new(buffer.whole(), Access::Read)], |_| {
        Ok(())
    })?;
    let consumer = consumer.prepare()?;
    let first = producer.submit()?;
    let second = consumer.submit();
    // Released whatever the second submit did, so that the first never hangs.
    let _ = release.send(());
    first.wait()?;
    second?.wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hrx::RuntimeOptions;

    fn word(bytes: &[u8], index: usize) -> u32 {
        u32::from_le_bytes(bytes[index * 4..index * 4 + 4].try_into().expect("4 bytes"))
    }

    #[test]
    fn results_equal_the_sequential_reference() {
        let runtime = Runtime::new(RuntimeOptions::sim()).expect("runtime");
        let report = run_hazards(&runtime).expect("hazards");
        assert_eq!(report.buffers, sequential_reference());
        assert_eq!(report.submissions, ["A", "D", "B", "C"]);

        // A few words by hand, independent of the reference interpreter.
        let x = report.buffer("X").expect("X");
        assert_eq!(
            word(x, 0),
            768,
            "C1 copied Z[1024..], which B0 took from A0's X[3072..]"
        );
        assert_eq!(word(x, 255), 1023);
        assert_eq!(word(x, 256), 7, "C1 copied B2's iota");
        assert_eq!(word(x, 511), 7 + 11 * 255);
        assert_eq!(word(x, 600), 1_000_000 + 3 * (600 - 256), "A2 after A0");
        assert_eq!(word(x, 800), 800, "A0");
        assert_eq!(word(x, 1024), 500, "C0");
        assert_eq!(word(x, 1791), 500 + 2 * 767);
        assert_eq!(word(x, 2047), 0x1111_1111, "C4 after C0");
        let y = report.buffer("Y").expect("Y");
        assert_eq!(
            word(y, 0),
            512,
            "A1 read X after A0 and before A2 overwrote it"
        );
        assert_eq!(word(y, 256), 0xDEAD_BEEF, "B1 after A1");
        assert_eq!(word(y, 768), 768, "C2 copied X[0..1024] after C1");
        let z = report.buffer("Z").expect("Z");
        assert_eq!(z[1024..2048], [0x33; 1024], "C3 after C1 read it");
        assert_eq!(word(z, 0), 1_000_000 + 3 * 256, "B0 read X after A2");
        assert_eq!(
            report.buffer("H"),
            Some(x),
            "C5 read X after C's compute region"
        );
        assert_eq!(report.buffer("Q"), Some(&initial(P, 4096)[..]));

        let all: BTreeSet<_> = [
            HazardKind::ReadAfterWrite,
            HazardKind::WriteAfterRead,
            HazardKind::WriteAfterWrite,
        ]
        .into();
        assert_eq!(report.in_graph, all);
        let across: BTreeSet<_> = report.across_submissions.iter().map(|h| h.kind).collect();
        assert_eq!(across, all);
        assert!(report.across_submissions.iter().any(|h| h.earlier == "B"
            && h.later == "C"
            && h.kind == HazardKind::WriteAfterRead
            && h.buffer == "X"
            && h.range == (4096..6144)));
        assert!(
            report
                .across_submissions
                .iter()
                .all(|h| h.earlier != "D" && h.later != "D")
        );
    }

    #[test]
    fn repeated_runs_agree() {
        let runtime = Runtime::new(RuntimeOptions::sim()).expect("runtime");
        let first = run_hazards(&runtime).expect("first");
        for _ in 0..20 {
            assert_eq!(run_hazards(&runtime).expect("again"), first);
        }
    }
}
