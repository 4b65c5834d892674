//! Traces that cannot be replayed give a typed error (exit code 2), never a panic.

use crate::common::*;
use crate::records;
use hrx_capture::schema::{self as s, Record};
use hrx_replay::{ReplayError, ReplayOptions, replay, replay_file};

fn error_of(trace: &hrx_capture::Trace) -> ReplayError {
    let error = replay(trace, &ReplayOptions::default()).expect_err("unreplayable");
    assert_eq!(error.exit_code(), 2);
    println!("{error}");
    error
}

#[test]
fn a_host_write_without_contents_is_unreplayable() {
    let trace = rewrite(hazards_trace(), |record, _| {
        if let Record::HostWrite(w) = record {
            w.contents = s::Payload::Omitted {
                len_bytes: w.len_bytes,
            };
        }
        true
    });
    let error = error_of(&trace);
    assert!(matches!(error, ReplayError::Unreplayable { .. }));
    assert!(error.to_string().contains("were not captured"), "{error}");
}

/// An output whose stored contents are lost (their blob's block damaged) keeps its digest,
/// which is what replay compares: compared by it, with a note, where the whole replay was
/// refused (a break-it pass). A host write's lost contents stay unreplayable (above).
#[test]
fn an_output_whose_stored_contents_are_lost_is_compared_by_its_digest() {
    let mut lost = 0;
    let trace = rewrite(hazards_trace(), |record, _| {
        if let Record::OutputDigest(o) = record
            && !matches!(o.contents, s::Payload::Omitted { .. })
        {
            lost += 1;
            o.contents = s::Payload::Blob {
                hash: s::BlobHash(0x5eed_0000_0000_0001 + lost),
                len_bytes: o.end - o.start,
            };
        }
        true
    });
    assert!(lost > 0, "the hazards trace stores its outputs' contents");
    let report = replay(&trace, &ReplayOptions::default()).expect("replays");
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    assert!(report.summary.outputs_matched > 0, "{}", report.to_text());
    let said = format!("the stored contents of {lost} outputs are not in the trace");
    assert!(
        report.notes.iter().any(|n| n.contains(&said)),
        "{:?}",
        report.notes
    );
}

/// A few bytes of trace can declare buffers of any size: more than this machine's memory is
/// refused before anything is allocated (it swapped, or aborted, before).
#[test]
fn buffers_larger_than_the_machine_are_refused_before_allocation() {
    let trace = rewrite(hazards_trace(), |record, _| {
        if let Record::BufferCreated(b) = record {
            b.len_bytes = 1 << 38; // 256 GiB each: under the 1 TiB cap on one buffer
        }
        true
    });
    let error = error_of(&trace);
    assert!(matches!(error, ReplayError::Unreplayable { .. }), "{error}");
    assert!(
        error.to_string().contains("bytes of host memory here"),
        "{error}"
    );
}

#[test]
fn a_kernel_missing_on_the_backend_is_named() {
    let trace = rewrite(hazards_trace(), |record, _| {
        if let Record::KernelLoaded(k) = record
            && k.entry == "hrx_iota"
        {
            k.entry = "vendor_secret_kernel".into();
        }
        true
    });
    match error_of(&trace) {
        ReplayError::KernelMissing { entry, backend, .. } => {
            assert_eq!(
                (entry.as_str(), backend.as_str()),
                ("vendor_secret_kernel", "sim")
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_missing_graph_operation_is_unreplayable() {
    let mut dropped = false;
    let trace = rewrite(hazards_trace(), |record, _| {
        if let Record::GraphOp(op) = record
            && op.node.0 == 0
            && !dropped
        {
            dropped = true;
            return false;
        }
        true
    });
    let error = error_of(&trace);
    assert!(error.to_string().contains("lacks operation 0"), "{error}");
}

/// A recording cut short before its first submit holds buffers, kernels and graphs but
/// nothing to compare: an error, not a match of nothing.
#[test]
fn a_trace_without_submissions_is_unreplayable() {
    let mut submitted = false;
    let trace = rewrite(hazards_trace(), |record, _| {
        submitted |= matches!(record, Record::Submit(_));
        !submitted
    });
    assert!(
        trace
            .records
            .iter()
            .any(|r| matches!(r, Record::Prepared(_)))
    );
    let error = error_of(&trace);
    assert!(
        matches!(
            error,
            ReplayError::NoSubmissions {
                runtimes: 1,
                incomplete: None
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("no submission to compare (1 runtime)"),
        "{error}"
    );
}

#[test]
fn an_unreadable_file_is_a_read_error() {
    let dir = std::env::temp_dir().join(format!("hrx-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("garbage.hrxt");
    std::fs::write(&path, b"not a trace at all").unwrap();
    let error = replay_file(&path, &ReplayOptions::default()).expect_err("garbage");
    assert!(matches!(error, ReplayError::Read { .. }), "{error}");
    assert_eq!(error.exit_code(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_newer_format_major_is_refused_naming_both_versions() {
    use hrx_capture::format::{FILE_HEADER_LEN, FileHeader, FormatMajor};
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hazards-v1.0.hrxt");
    let mut bytes = std::fs::read(fixture).unwrap();
    let fixed: [u8; FILE_HEADER_LEN] = bytes[..FILE_HEADER_LEN].try_into().unwrap();
    let (mut header, _) = FileHeader::decode(&fixed).unwrap();
    header.version.major = FormatMajor(header.version.major.0 + 1);
    bytes[..FILE_HEADER_LEN].copy_from_slice(&header.encode());
    let dir = std::env::temp_dir().join(format!("hrx-replay-major-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("future.hrxt");
    std::fs::write(&path, bytes).unwrap();
    let error = replay_file(&path, &ReplayOptions::default()).expect_err("newer major");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(error.exit_code(), 2);
    let text = error.to_string();
    assert!(text.contains("2.0") && text.contains("1.17"), "{text}");
}

/// SplitMix64, for deterministic mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn value(&mut self, old: u64) -> u64 {
        match self.next() % 5 {
            0 => 0,
            1 => old.wrapping_add(1),
            2 => old.wrapping_sub(1),
            3 => u64::MAX - self.next() % 3,
            _ => self.next() % 100_000,
        }
    }
}

/// Damages one numeric field of one record.
fn mutate(record: &mut Record, rng: &mut Rng) {
    match record {
        Record::BufferCreated(b) => match rng.next() % 2 {
            0 => b.len_bytes = rng.value(b.len_bytes),
            _ => b.buffer.0 = rng.value(b.buffer.0),
        },
        Record::GraphOp(op) => {
            if let Some(u) = op.uses.first_mut() {
                match rng.next() % 3 {
                    0 => u.start = rng.value(u.start),
                    1 => u.end = rng.value(u.end),
                    _ => u.buffer.0 = rng.value(u.buffer.0),
                }
            } else {
                op.node.0 = rng.value(op.node.0.into()) as u32;
            }
        }
        Record::Prepared(p) => match rng.next() % 2 {
            0 => p.prepared.0 = rng.value(p.prepared.0),
            _ => {
                if let Some(r) = p.regions.first_mut() {
                    r.nodes.push(s::NodeIndex(rng.value(0) as u32));
                }
            }
        },
        Record::Submit(x) => match rng.next() % 2 {
            0 => x.prepared.0 = rng.value(x.prepared.0),
            _ => x
                .producers
                .push(s::SubmissionIndex(rng.value(x.submission.0))),
        },
        Record::HostWrite(w) => match rng.next() % 2 {
            0 => w.offset = rng.value(w.offset),
            _ => w.len_bytes = rng.value(w.len_bytes),
        },
        Record::OutputDigest(o) => match rng.next() % 3 {
            0 => o.start = rng.value(o.start),
            1 => o.submission.0 = rng.value(o.submission.0),
            _ => o.xxh3 = rng.value(o.xxh3),
        },
        Record::KernelLoaded(k) => {
            if let Some(c) = k.contract.first_mut() {
                match rng.next() % 2 {
                    0 => c.extent_bytes = rng.value(c.extent_bytes),
                    _ => c.alignment = rng.value(c.alignment),
                }
            }
        }
        Record::RegionTiming(t) => t.region.0 = rng.value(t.region.0.into()) as u32,
        Record::RuntimeStart(r) => r.capacity = rng.value(r.capacity.into()) as u32,
        _ => {}
    }
}

#[test]
fn damaged_records_never_panic() {
    let base = hazards_trace();
    let mut outcomes = [0usize; 3];
    for seed in 0..40u64 {
        let mut rng = Rng(seed);
        let target = (rng.next() as usize) % base.records.len();
        let mut index = 0;
        let trace = rewrite(base, |record, _| {
            index += 1;
            if index == target {
                mutate(record, &mut rng);
            }
            true
        });
        match replay(&trace, &ReplayOptions::default()) {
            Ok(report) => outcomes[report.exit_code() as usize] += 1,
            Err(error) => {
                assert_eq!(error.exit_code(), 2);
                outcomes[2] += 1;
            }
        }
    }
    println!("match/regression/unreplayable: {outcomes:?}");
    assert!(outcomes[2] > 0);
}

/// Both replays of `trace`, whole and streamed a submission at a time, fail with the same
/// error, which says `said`.
fn both_refuse(trace: &hrx_capture::Trace, said: &str) {
    let error = error_of(trace);
    assert!(
        matches!(error, ReplayError::Unreplayable { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(said), "{error}");
    let (_dir, path) = file(trace, "released.hrxt");
    let options = ReplayOptions::default().chunk_submissions(1);
    let streamed = replay_file(&path, &options).expect_err("unreplayable streamed");
    assert_eq!(streamed.to_string(), error.to_string());
}

/// Round `round`'s (1 or 2) records of [`rounds_trace`]: its big buffer, its prepared graph
/// and its submission.
fn round(round: usize) -> (s::BufferId, s::PreparedId, s::SubmissionIndex) {
    let trace = rounds_trace();
    let big = records!(trace, BufferCreated)
        .filter(|b| b.placement == s::Placement::GpuLocal)
        .nth(round - 1)
        .expect("round's buffer")
        .buffer;
    let submit = records!(trace, Submit)
        .nth(round - 1)
        .expect("round's submit");
    (big, submit.prepared, submit.submission)
}

/// A record naming a buffer after the trace released it (an edited or damaged trace: the
/// program's runtime lets a buffer go only once nothing uses it) is one clear error, in a
/// whole and in a streamed replay: a submit of a graph using it, a host write into it.
#[test]
fn a_buffer_used_after_the_trace_released_it_is_unreplayable() {
    let ((first, graph, _), (_, _, second)) = (round(1), round(2));
    // Round 2 submits round 1's graph, whose buffers round 1 let go of.
    let trace = rewrite(rounds_trace(), |record, _| {
        if let Record::Submit(s) = record
            && s.submission == second
        {
            s.prepared = graph;
        }
        true
    });
    both_refuse(
        &trace,
        &format!("buffer {first} used after the trace released it (by submission {second})"),
    );
    // Round 2's host write goes into round 1's buffer.
    let trace = rewrite(rounds_trace(), |record, _| {
        if let Record::HostWrite(w) = record
            && w.buffer != first
        {
            w.buffer = first;
        }
        true
    });
    both_refuse(
        &trace,
        &format!("buffer {first} used after the trace released it (by a host write at byte 0)"),
    );
}

/// A buffer released twice is a damaged trace.
#[test]
fn a_buffer_released_twice_is_unreplayable() {
    let (first, ..) = round(1);
    let trace = rewrite(rounds_trace(), |record, recorder| {
        if let Record::BufferDropped(d) = record
            && d.buffer == first
        {
            recorder.record(record);
        }
        true
    });
    both_refuse(&trace, &format!("buffer {first} is released twice"));
}
