//! What the trace readers find in a file that is not one recording read whole, said by
//! every verb that reads a trace (`info`, `stats` and its JSON `warnings`, `export`, `diff`,
//! `replay`): another trace joined after a cut one (`cat`), records of a newer minor version
//! this reader cannot decode, two sessions in one file.

use crate::util::*;
use hrx_capture::format::{
    BLOCK_HEADER_LEN, BlockEncoder, BlockHeader, BlockKind, FILE_HEADER_LEN, FileHeader, Footer,
    FormatMinor, FrameEncoder, IndexEntry, TRAILER_LEN, decode_payload, decode_trailer,
    encode_trailer,
};
use std::path::Path;

/// Runs every reading verb on `dir/name`; returns, per verb, its exit code and what it
/// printed (standard output and error), `stats --json`'s `warnings` among them.
fn every_verb(dir: &Path, name: &str) -> Vec<(String, i32, String)> {
    let verbs: [&[&str]; 6] = [
        &["info", name],
        &["stats", name],
        &["stats", "--json", name],
        &["export", name, "--format", "chrome", "-o", "out.json"],
        &["diff", name, name],
        &["replay", name],
    ];
    verbs
        .iter()
        .map(|args| {
            let out = run(dir, args);
            let mut said = format!("{}{}", stdout(&out), stderr(&out));
            if args[1] == "--json" {
                let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
                said = format!("{}", json["warnings"]);
            }
            (args.join(" "), code(&out), said)
        })
        .collect()
}

/// What the verbs said of these files before: damage.
const DAMAGE: [&str; 3] = ["damaged parts", "damaged block", "skipped record"];

/// Asserts that every verb says `text` of `dir/name`, and none calls it damage.
fn said_by_every_verb(dir: &Path, name: &str, text: &str) {
    for (verb, code, said) in every_verb(dir, name) {
        assert!(
            said.contains(text),
            "{verb} (exit {code}) does not say {text:?}: {said}"
        );
        for not in DAMAGE {
            assert!(
                !said.contains(not),
                "{verb} (exit {code}) says {not:?}: {said}"
            );
        }
    }
}

/// `dir/from` with a records block of `frames` (`records` frames) added before its footer,
/// the footer's index and trailer rewritten (closed cleanly still), and its minor version
/// raised by `newer`.
fn with_block(dir: &Path, from: &str, to: &str, frames: &[u8], records: u32, newer: u16) {
    let bytes = std::fs::read(dir.join(from)).unwrap();
    let footer_at = decode_trailer(&bytes[bytes.len() - TRAILER_LEN..]).unwrap();
    let at = footer_at as usize;
    let header = BlockHeader::decode(bytes[at..at + BLOCK_HEADER_LEN].try_into().unwrap());
    let header = header.unwrap();
    let stored = &bytes[at + BLOCK_HEADER_LEN..at + header.block_len() as usize];
    let mut footer: Footer =
        postcard::from_bytes(&decode_payload(&header, stored).unwrap()).unwrap();
    let mut out = bytes[..at].to_vec();
    let (mut file, _) = FileHeader::decode(out[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
    file.version.minor = FormatMinor(file.version.minor.0 + newer);
    out[..FILE_HEADER_LEN].copy_from_slice(&file.encode());
    let mut encoder = BlockEncoder::new(None).unwrap();
    footer.blocks.push(IndexEntry {
        offset: footer_at,
        kind: BlockKind::RECORDS,
        record_count: records,
    });
    footer.records += u64::from(records);
    encoder
        .encode(BlockKind::RECORDS, frames, records, &mut out)
        .unwrap();
    let new_footer_at = out.len() as u64;
    let payload = postcard::to_allocvec(&footer).unwrap();
    encoder
        .encode(BlockKind::FOOTER, &payload, 0, &mut out)
        .unwrap();
    out.extend_from_slice(&encode_trailer(new_footer_at));
    std::fs::write(dir.join(to), out).unwrap();
}

/// `head -c N a.hrxt > cut; cat cut b.hrxt > joined`: the torn last block's declared length
/// reached into the second trace, which was read as the first's (19 submissions where the
/// first held 7), every verb saying only that damaged parts were skipped. Now the first
/// trace ends at its cut, and every verb says another trace starts there.
#[test]
fn a_trace_joined_after_a_cut_one_is_said_by_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    record_hazards(dir.path(), "b.hrxt");
    // The first in a block a record, so that its first two thirds hold submissions.
    let records = hrx_capture::read_all(dir.path().join("h.hrxt"))
        .unwrap()
        .records;
    let recorder = hrx_capture::Recorder::create(
        dir.path().join("a.hrxt"),
        hrx_capture::RecorderOptions::default(),
    )
    .unwrap();
    for record in &records {
        if !matches!(
            record,
            hrx_capture::Record::SessionStart(_) | hrx_capture::Record::SessionEnd(_)
        ) {
            recorder.record(record);
            recorder.flush().unwrap();
        }
    }
    recorder.close().unwrap();
    let a = std::fs::read(dir.path().join("a.hrxt")).unwrap();
    let b = std::fs::read(dir.path().join("b.hrxt")).unwrap();
    let cut = a.len() * 2 / 3;
    std::fs::write(dir.path().join("cut.hrxt"), &a[..cut]).unwrap();
    std::fs::write(dir.path().join("joined.hrxt"), [&a[..cut], &b[..]].concat()).unwrap();
    let another = format!(
        "byte {cut}: another trace starts here (two files joined?): its {} bytes are not read",
        b.len()
    );
    said_by_every_verb(dir.path(), "joined.hrxt", &another);
    // The first trace as the cut alone reads.
    let submissions = |name: &str| {
        let out = run(dir.path(), &["info", name]);
        field(&stdout(&out), "submissions").to_owned()
    };
    assert_eq!(submissions("joined.hrxt"), submissions("cut.hrxt"));
}

/// `trim` of a trace joined after one cut before its first submission: the selection finds
/// no submission, and the error came alone ("the trace holds no submission") of a file
/// whose second trace holds several. What the read found is said first, as every verb says
/// it: the cut, and that another trace starts there.
#[test]
fn a_trim_that_finds_no_submission_says_another_trace_starts() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "a.hrxt");
    record_hazards(dir.path(), "b.hrxt");
    let a = std::fs::read(dir.path().join("a.hrxt")).unwrap();
    let b = std::fs::read(dir.path().join("b.hrxt")).unwrap();
    let cut = FILE_HEADER_LEN + 100;
    std::fs::write(dir.path().join("joined.hrxt"), [&a[..cut], &b[..]].concat()).unwrap();
    let out = run(
        dir.path(),
        &[
            "trim",
            "joined.hrxt",
            "-o",
            "t.hrxt",
            "--submissions",
            "1..3",
        ],
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("selects no submission"), "{err}");
    let another = format!(
        "byte {cut}: another trace starts here (two files joined?): its {} bytes are not read",
        b.len()
    );
    assert!(err.contains(&another), "{err}");
    assert!(!dir.path().join("t.hrxt").exists());
}

/// A record of a newer minor version this reader cannot decode (in a block whose checksum
/// verified) is said as such by every verb, not as damage ("skipped record 1 of the block",
/// "closed, but damaged parts were skipped").
#[test]
fn records_of_a_newer_minor_are_said_by_every_verb_not_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    // A variant a newer minor appended: tag 200, some body.
    with_block(
        dir.path(),
        "h.hrxt",
        "newer.hrxt",
        &[3, 0xc8, 0x01, 0x05],
        1,
        1,
    );
    let bytes = std::fs::read(dir.path().join("newer.hrxt")).unwrap();
    let (file, _) = FileHeader::decode(bytes[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
    let text = format!(
        "1 records this reader cannot decode (written by a newer minor version {}; update \
         hrx-trace)",
        file.version
    );
    said_by_every_verb(dir.path(), "newer.hrxt", &text);
}

/// A crafted file with two sessions (`record` writes one) read as one session, without a
/// word; every verb now says so, and that its figures cover both.
#[test]
fn two_sessions_in_one_file_are_said_by_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let trace = hrx_capture::read_all(dir.path().join("h.hrxt")).unwrap();
    let start = trace.records.first().unwrap().clone();
    assert!(matches!(start, hrx_capture::Record::SessionStart(_)));
    let mut frames = Vec::new();
    FrameEncoder::new().encode(&start, &mut frames).unwrap();
    with_block(dir.path(), "h.hrxt", "two.hrxt", &frames, 1, 0);
    let text = "2 sessions in one file (the second starts here; a recording writes one): the \
                figures cover them all together";
    said_by_every_verb(dir.path(), "two.hrxt", text);
}
