//! Tests of [`super`]: snapshots from synthetic traces.

use super::*;

/// A trace of one runtime: buffer 1 (16 bytes), read by every submission of its one
/// graph; `contents[i]`, when set, is written by the host before submission i+1, stored
/// as a blob once per distinct contents, as the recorder stores them.
fn trace(contents: &[Option<[u8; 16]>]) -> Vec<u8> {
    use hrx_capture::schema::*;
    let rt = RuntimeId(1);
    let mut records = vec![
        Record::RuntimeStart(RuntimeStart {
            runtime: rt,
            backend: "sim".into(),
            device: String::new(),
            graph_slots: 2,
            capacity: 8,
            fault: None,
            time_ns: 0,
        }),
        Record::BufferCreated(BufferCreated {
            runtime: rt,
            buffer: BufferId(1),
            len_bytes: 16,
            placement: Placement::HostVisible,
            device_address: 0,
            time_ns: 0,
        }),
        Record::GraphOp(GraphOp {
            runtime: rt,
            graph: GraphId(1),
            node: NodeIndex(0),
            op: OpKind::Host,
            lane: Lane::Compute,
            uses: vec![Use {
                buffer: BufferId(1),
                start: 0,
                end: 16,
                access: Access::Read,
            }],
        }),
        Record::Prepared(Prepared {
            runtime: rt,
            graph: GraphId(1),
            prepared: PreparedId(1),
            slots: 2,
            parallel: false,
            regions: Vec::new(),
            time_ns: 0,
        }),
    ];
    let mut stored = HashSet::new();
    for (i, bytes) in contents.iter().enumerate() {
        let t = 10 * i as u64;
        if let Some(bytes) = bytes {
            let hash = BlobHash(xxhash_rust::xxh3::xxh3_64(bytes));
            if stored.insert(hash) {
                records.push(Record::Blob(Blob {
                    hash,
                    bytes: bytes.to_vec(),
                }));
            }
            records.push(Record::HostWrite(HostWrite {
                runtime: rt,
                buffer: BufferId(1),
                offset: 0,
                len_bytes: 16,
                xxh3: hash.0,
                contents: Payload::Blob {
                    hash,
                    len_bytes: 16,
                },
                time_ns: t + 1,
            }));
        }
        records.push(Record::Submit(Submit {
            runtime: rt,
            prepared: PreparedId(1),
            submission: SubmissionIndex(i as u64 + 1),
            slot: 0,
            producers: Vec::new(),
            time_ns: t + 2,
        }));
    }
    let mut writer = TraceWriter::new(Vec::new()).unwrap();
    for r in &records {
        writer.write(r).unwrap();
    }
    writer.finish().unwrap().0
}

fn snapshots(bytes: &[u8], selection: Selection) -> (TrimSummary, Vec<BufferSnapshot>) {
    let open = || TraceReader::new(bytes);
    let (summary, out) = trim(open, selection, "t.hrxt", Vec::new()).unwrap();
    let trimmed = hrx_capture::Trace::from_bytes(&out).unwrap();
    assert!(trimmed.recovery.is_complete());
    let snaps = trimmed
        .records
        .into_iter()
        .filter_map(|r| match r {
            Record::BufferSnapshot(s) => Some(s),
            _ => None,
        })
        .collect();
    (summary, snaps)
}

#[test]
fn a_snapshot_holds_the_last_host_write_before_the_range_even_a_repeated_blob() {
    let (a, b) = ([1u8; 16], [2u8; 16]);
    // Submission 4 reads what the third write left, a blob first stored (and
    // referenced) by the first write: the snapshot holds it.
    let bytes = trace(&[Some(a), Some(b), Some(a), None]);
    let start_at = |start| Selection::Submissions { start, end: None };
    let (summary, snaps) = snapshots(&bytes, start_at(4));
    assert_eq!((summary.runtimes[0].start, summary.runtimes[0].end), (4, 5));
    assert_eq!(summary.unknown_bytes(), 0);
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].contents, Payload::Inline(a.to_vec()));
    assert_eq!((snaps[0].offset, snaps[0].len_bytes), (0, 16));
    // A range whose own host write precedes every read needs nothing.
    let (_, snaps) = snapshots(&bytes, start_at(3));
    assert!(snaps.is_empty(), "{snaps:?}");
    // A time window: submissions submitted at or after 22 ns (3 and 4).
    let time = Selection::Time {
        start_ns: 22,
        end_ns: None,
    };
    let (summary, _) = snapshots(&bytes, time);
    assert_eq!((summary.runtimes[0].start, summary.runtimes[0].end), (3, 5));
}

/// A range whose host write refers to contents the source lost (a damaged block skipped)
/// says so: the trimmed trace lacks them and would not replay (a break-it pass's trim exited
/// 0 without a word, and its replay then failed on the missing blob).
#[test]
fn contents_the_source_lacks_are_counted() {
    let (a, b) = ([1u8; 16], [2u8; 16]);
    let whole = hrx_capture::Trace::from_bytes(&trace(&[Some(a), Some(b), Some(a)])).unwrap();
    let lost = BlobHash(xxhash_rust::xxh3::xxh3_64(&b));
    let mut writer = TraceWriter::new(Vec::new()).unwrap();
    for record in &whole.records {
        match record {
            Record::Blob(blob) if blob.hash == lost => {}
            Record::SessionStart(_) | Record::HostClock(_) | Record::SessionEnd(_) => {}
            other => writer.write(other).unwrap(),
        }
    }
    let bytes = writer.finish().unwrap().0;
    let range = |start, end| Selection::Submissions {
        start,
        end: Some(end),
    };
    let open = || TraceReader::new(&bytes[..]);
    let (summary, _) = trim(open, range(2, 3), "t.hrxt", Vec::new()).unwrap();
    assert_eq!(summary.missing_blobs, 1);
    let (summary, _) = trim(open, range(3, 4), "t.hrxt", Vec::new()).unwrap();
    assert_eq!(summary.missing_blobs, 0);
}

#[test]
fn ranges_merge_and_answer_what_is_missing() {
    let mut r = Ranges::default();
    r.add(10, 20);
    r.add(30, 40);
    r.add(18, 31);
    assert_eq!(r.0, [(10, 40)]);
    r.add(50, 60);
    assert_eq!(r.missing(0, 70), [(0, 10), (40, 50), (60, 70)]);
    assert_eq!(r.missing(12, 38), []);
}

#[test]
fn the_last_writer_decides_a_spans_contents() {
    let mut shadow = Shadow(vec![Span {
        start: 0,
        end: 8,
        host: None,
        submission: None,
        digest: None,
    }]);
    // A host write of bytes 0..8 at t=5, then submission 3 (submitted at t=7) writes
    // 4..8 with its digest captured, submission 4 (t=9) writes 6..8 without one.
    shadow.update(0, 8, |s, at| {
        s.host = Some((5, Some(slice(b"abcdefgh", at, s.end - s.start))))
    });
    shadow.update(4, 8, |s, _| s.submission = Some((3, 7, PreparedId(1))));
    shadow.update(4, 8, |s, at| {
        s.digest = Some((3, vec![((4, 8), slice(b"WXYZ", at, s.end - s.start))]))
    });
    shadow.update(6, 8, |s, _| s.submission = Some((4, 9, PreparedId(1))));
    let spans: Vec<_> = shadow
        .0
        .iter()
        .map(|s| {
            let contents = s.contents(|_, _| Some(0));
            (s.start, s.end, contents.map(|c| c.map(<[u8]>::to_vec)))
        })
        .collect();
    assert_eq!(
        spans,
        [
            (0, 4, Some(Some(b"abcd".to_vec()))),
            (4, 6, Some(Some(b"WX".to_vec()))),
            (6, 8, Some(None)),
        ]
    );
}

/// A trace where submission 1's two regions both write buffer 1 (16 bytes): region 0
/// writes `first` (its range and bytes), then region 1 writes `second`; their digests
/// (with contents) are in the file in the opposite order, as two recording threads'
/// rings may leave them. Submission 2 reads the whole buffer.
fn two_regions_digested_out_of_order(
    first: ((u64, u64), &[u8]),
    second: ((u64, u64), &[u8]),
) -> Vec<u8> {
    use hrx_capture::schema::*;
    let rt = RuntimeId(1);
    let uses = |(start, end): (u64, u64), access| {
        vec![Use {
            buffer: BufferId(1),
            start,
            end,
            access,
        }]
    };
    let region = |range, node| Region {
        queue: Queue::GpuCompute,
        engine: Engine::Gpu,
        kind: RegionKind::CopyBatch,
        nodes: vec![NodeIndex(node)],
        internal_edges: Vec::new(),
        dependencies: Vec::new(),
        uses: uses(range, Access::Write),
        copy_bytes: 0,
    };
    let op = |graph, node, range, access| {
        Record::GraphOp(GraphOp {
            runtime: rt,
            graph: GraphId(graph),
            node: NodeIndex(node),
            op: OpKind::Fill { value: 0 },
            lane: Lane::Compute,
            uses: uses(range, access),
        })
    };
    let prepared = |graph, regions| {
        Record::Prepared(Prepared {
            runtime: rt,
            graph: GraphId(graph),
            prepared: PreparedId(graph),
            slots: 1,
            parallel: true,
            regions,
            time_ns: 0,
        })
    };
    let submit = |n: u64| {
        Record::Submit(Submit {
            runtime: rt,
            prepared: PreparedId(n),
            submission: SubmissionIndex(n),
            slot: 0,
            producers: Vec::new(),
            time_ns: 10 * n,
        })
    };
    let digest = |((start, end), bytes): ((u64, u64), &[u8])| {
        Record::OutputDigest(OutputDigest {
            runtime: rt,
            submission: SubmissionIndex(1),
            buffer: BufferId(1),
            start,
            end,
            xxh3: xxhash_rust::xxh3::xxh3_64(bytes),
            contents: Payload::Inline(bytes.to_vec()),
        })
    };
    let records = [
        Record::RuntimeStart(RuntimeStart {
            runtime: rt,
            backend: "sim".into(),
            device: String::new(),
            graph_slots: 2,
            capacity: 8,
            fault: None,
            time_ns: 0,
        }),
        Record::BufferCreated(BufferCreated {
            runtime: rt,
            buffer: BufferId(1),
            len_bytes: 16,
            placement: Placement::HostVisible,
            device_address: 0,
            time_ns: 0,
        }),
        op(1, 0, first.0, Access::Write),
        op(1, 1, second.0, Access::Write),
        prepared(1, vec![region(first.0, 0), region(second.0, 1)]),
        op(2, 0, (0, 16), Access::Read),
        prepared(2, Vec::new()),
        submit(1),
        digest(second),
        digest(first),
        submit(2),
    ];
    let mut writer = TraceWriter::new(Vec::new()).unwrap();
    for r in &records {
        writer.write(r).unwrap();
    }
    writer.finish().unwrap().0
}

/// The flake of `range::a_trim_that_needs_earlier_contents_has_them_or_says_so`: the
/// hazards workload's first graph writes bytes of X in region 0 and again in region 2;
/// when region 2's digest reached the file first, the snapshot took region 0's bytes,
/// and replay found submission 3's output wrong. The last region decides, whatever the
/// file order; digests whose regions cannot be told apart leave differing bytes unknown.
#[test]
fn the_last_region_of_a_submission_decides_whatever_the_file_order() {
    let (a, b) = ([0xaa; 16], [0xbb; 8]);
    let after_one = Selection::Submissions {
        start: 2,
        end: None,
    };
    let bytes = two_regions_digested_out_of_order(((0, 16), &a), ((8, 16), &b));
    let (summary, snaps) = snapshots(&bytes, after_one);
    assert_eq!(summary.unknown_bytes(), 0);
    let mut held: Vec<(u64, Vec<u8>)> = snaps
        .iter()
        .map(|s| match &s.contents {
            Payload::Inline(bytes) => (s.offset, bytes.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    held.sort();
    let joined: Vec<u8> = held.into_iter().flat_map(|(_, b)| b).collect();
    assert_eq!(joined, [[0xaa; 8], [0xbb; 8]].concat());

    // Both regions write all 16 bytes: which digest is the last writer's is unknown.
    let bytes = two_regions_digested_out_of_order(((0, 16), &a), ((0, 16), &[0xbb; 16]));
    let (summary, snaps) = snapshots(&bytes, after_one);
    assert_eq!(summary.unknown_bytes(), 16);
    assert!(
        snaps
            .iter()
            .all(|s| matches!(s.contents, Payload::Omitted { .. })),
        "{snaps:?}"
    );
    // The same bytes from both: known.
    let bytes = two_regions_digested_out_of_order(((0, 16), &a), ((0, 16), &a));
    let (summary, _) = snapshots(&bytes, after_one);
    assert_eq!(summary.unknown_bytes(), 0);
}

/// A trim of a trim that starts at its first submission: no submission precedes the range
/// to derive its state at, so the source's snapshot is the state, and it is kept (it was
/// dropped: the range read zeros and its replay failed). Likewise a trim of that ending
/// earlier, and one starting later, which derives it from the source's snapshot.
#[test]
fn a_trim_of_a_trim_keeps_the_snapshot_it_starts_from() {
    let (a, b) = ([1u8; 16], [2u8; 16]);
    let bytes = trace(&[Some(a), Some(b), Some(a), None, None]);
    let start_at = |start, end| Selection::Submissions { start, end };
    let open = || TraceReader::new(&bytes[..]);
    let (_, first) = trim(open, start_at(4, None), "t.hrxt", Vec::new()).unwrap();
    for (selection, kept) in [
        (start_at(4, None), (4, 6)),
        (start_at(4, Some(5)), (4, 5)),
        (start_at(5, None), (5, 6)),
        (
            Selection::Time {
                start_ns: 0,
                end_ns: None,
            },
            (4, 6),
        ),
    ] {
        let (summary, snaps) = snapshots(&first, selection);
        let r = &summary.runtimes[0];
        assert_eq!((r.start, r.end), kept, "{selection:?}");
        assert_eq!(summary.unknown_bytes(), 0, "{selection:?}");
        assert_eq!(snaps.len(), 1, "{selection:?}: {snaps:?}");
        assert_eq!(
            snaps[0].contents,
            Payload::Inline(a.to_vec()),
            "{selection:?}"
        );
        assert_eq!((r.snapshots, r.snapshot_bytes), (1, 16), "{selection:?}");
    }
}

#[test]
fn a_source_note_parts_the_name_from_why() {
    assert_eq!(source_note("t.hrxt"), ("t.hrxt", None));
    assert_eq!(
        source_note("a (1).hrxt (incomplete: cut short, never closed)"),
        ("a (1).hrxt", Some("cut short, never closed"))
    );
    assert_eq!(
        source_note("c.hrxt (incomplete: the process crashed: SIGABRT)"),
        ("c.hrxt", Some("the process crashed: SIGABRT"))
    );
    // A whole source's name that happens to hold the words is not read as a note
    // unless it ends as one.
    assert_eq!(
        source_note("x (incomplete: y).hrxt"),
        ("x (incomplete: y).hrxt", None)
    );
}

/// A selection that falls where the trace lacks the Submit records (lost, or damaged) says
/// how many of the numbers it spans the trace holds: "submissions 1..=8" alone read as if
/// the selection were outside them (break-it pass, a lossy trace).
#[test]
fn an_empty_selection_inside_missing_submissions_says_how_many_are_held() {
    let whole = hrx_capture::Trace::from_bytes(&trace(&[None; 8])).unwrap();
    let mut writer = TraceWriter::new(Vec::new()).unwrap();
    for r in &whole.records {
        let gap = matches!(r, Record::Submit(s) if (4..=6).contains(&s.submission.0));
        if !gap && !matches!(r, Record::SessionStart(_) | Record::SessionEnd(_)) {
            writer.write(r).unwrap();
        }
    }
    let bytes = writer.finish().unwrap().0;
    let selection = Selection::Submissions {
        start: 4,
        end: Some(7),
    };
    let open = || TraceReader::new(&bytes[..]);
    let Err(error) = trim(open, selection, "t.hrxt", Vec::new()) else {
        panic!("nothing selected")
    };
    let text = error.to_string();
    assert!(
        text.contains("submissions 1..=8 (5 of them, the others' Submit records missing; "),
        "{text}"
    );
    // A trace holding every number says only its span.
    let bytes = trace(&[None; 3]);
    let selection = Selection::Submissions {
        start: 5,
        end: None,
    };
    let Err(error) = trim(
        || TraceReader::new(&bytes[..]),
        selection,
        "t.hrxt",
        Vec::new(),
    ) else {
        panic!("nothing selected")
    };
    assert!(
        error.to_string().contains("submissions 1..=3 (submitted "),
        "{error}"
    );
}
