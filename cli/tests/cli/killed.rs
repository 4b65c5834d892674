//! `hrx-trace record --workload pipeline` killed with SIGKILL at 100 instants: every trace
//! opens, every complete block reads back, and the trace holds exactly what the writer
//! reported written before the kill (plus at most the one block it wrote but had not reported
//! yet).
//!
//! # Structure, not wall-clock lag
//!
//! The writer appends a line to a flush report after every block reaches the file
//! (`HRX_TRACE_FLUSH_REPORT`, see `hrx_capture::FLUSH_REPORT_ENV`): blocks written, the
//! offset past the last one, records in them. After a kill the last complete line names B
//! blocks, offset E, R records. The trace must then read with no damaged block or record,
//! `info` must call it not closed, and either exactly B blocks and R records recovered, ending
//! at byte E (the rest, if any, a torn tail), or B + 1 blocks and more than R records (killed
//! between the block's write and its line). So nothing the writer wrote is lost, and nothing
//! appears that it did not write.
//!
//! Half the kills wait for a random number of reported blocks (2 to 9) before a short random
//! delay, so they land while the pipeline runs on any machine, however loaded; the others land
//! at a random instant of the first 400 ms (starting, decoding the photograph), where the
//! only requirement is no file, or a trace that opens with its session start. How much time a
//! kill loses on an idle machine is a benchmark: `scripts/reliability-kill.sh`, figures in
//! RELIABILITY.md.

use crate::util::{code, hrx_trace, run, stderr, stdout};
use hrx_capture::Record;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

/// Kills.
const KILLS: u64 = 100;

/// xorshift64*, seeded: the kill instants are reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The last complete line of a flush report: (blocks, end offset, records).
fn last_report(path: &Path) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = &text[..text.rfind('\n')? + 1];
    let line = complete.lines().last()?;
    let words: Vec<&str> = line.split(' ').collect();
    let [_, blocks, _, end, _, records] = words[..] else {
        panic!("a malformed flush report line: {line:?}")
    };
    Some((
        blocks.parse().unwrap(),
        end.parse().unwrap(),
        records.parse().unwrap(),
    ))
}

/// Waits until the writer reported `blocks` blocks, or the child exited (a failure).
fn wait_for_blocks(child: &mut Child, report: &Path, blocks: u64, context: &str) {
    while last_report(report).is_none_or(|(b, _, _)| b < blocks) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{context}: the recorder exited ({status}) before writing {blocks} blocks");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_recording_killed_at_100_instants_keeps_every_block_the_writer_reported() {
    let Some(photo) = crate::util::photo() else {
        return;
    };
    let seed = std::env::var("HRX_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64 | 1);
    println!("kill seed {seed} (rerun with HRX_KILL_SEED={seed})");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let (mut no_file, mut running, mut exact, mut one_more) = (0, 0, 0, 0);
    for attempt in 0..KILLS {
        let file = format!("k{attempt}.hrxt");
        let report = dir.path().join(format!("k{attempt}.flushes"));
        let mut child = hrx_trace(dir.path())
            .args(["record", "--workload", "pipeline", "--frames", "1000000"])
            .args(["--max-width", "160", "--input", photo.to_str().unwrap()])
            .args(["-o", &file])
            .env("HRX_TRACE_FLUSH_REPORT", &report)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let while_running = attempt % 2 == 0;
        let context = if while_running {
            // Each records block is followed by its summary block (format 1.9), and the
            // writer reports both: 4-19 blocks are 2-9 records blocks.
            let blocks = 4 + rng.next() % 16;
            let delay_ms = rng.next() % 50;
            let context = format!("seed {seed}, kill {attempt} {delay_ms} ms after block {blocks}");
            wait_for_blocks(&mut child, &report, blocks, &context);
            std::thread::sleep(Duration::from_millis(delay_ms));
            context
        } else {
            let delay_ms = rng.next() % 400;
            std::thread::sleep(Duration::from_millis(delay_ms));
            format!("seed {seed}, kill {attempt} at {delay_ms} ms")
        };
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(status.code().is_none(), "{context}: it exited by itself");

        let path = dir.path().join(&file);
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        let reported = last_report(&report);
        if len == 0 {
            // Killed before the recorder's first write (header and session start together).
            assert_eq!(reported, None, "{context}: a reported block is missing");
            no_file += 1;
            continue;
        }
        let trace = check_one(dir.path(), &file, &context);
        let recovery = &trace.recovery;
        let Some((blocks, end, records)) = reported else {
            // Killed between the first write and its report line.
            assert_eq!(recovery.complete_blocks, 1, "{context}: {recovery:?}");
            continue;
        };
        if recovery.complete_blocks == blocks {
            assert_eq!(recovery.records, records, "{context}: {recovery:?}");
            assert_eq!(
                len - recovery.bytes_discarded,
                end,
                "{context}: {recovery:?}"
            );
            exact += 1;
        } else {
            assert_eq!(
                recovery.complete_blocks,
                blocks + 1,
                "{context}: the writer reported {blocks} blocks ({records} records): {recovery:?}"
            );
            assert!(recovery.records > records, "{context}: {recovery:?}");
            one_more += 1;
        }
        if trace.records.iter().any(|r| matches!(r, Record::Submit(_))) {
            running += 1;
        }
        let _ = std::fs::remove_file(&path);
    }
    println!(
        "{KILLS} kills: {no_file} before the first write; {exact} traces ended at the last \
         reported block, {one_more} one block later; {running} recovered submissions"
    );
    // Each kill that waited for its blocks leaves a trace; the pipeline submits from its
    // second block on, so most of them hold submissions.
    assert!(exact + one_more >= KILLS / 2, "{exact} + {one_more}");
    assert!(
        running >= KILLS / 4,
        "only {running} traces hold a submission"
    );
}

/// Reads a killed recording: `info` describes it as recovered with the reader's record
/// count, nothing in it is damaged, and the session start comes first.
fn check_one(dir: &Path, file: &str, context: &str) -> hrx_capture::Trace {
    let info = run(dir, &["info", file]);
    let text = stdout(&info);
    assert_eq!(code(&info), 0, "{context}: {}", stderr(&info));
    assert!(
        crate::util::field(&text, "recovered").starts_with("not closed cleanly"),
        "{context}: {text}"
    );
    assert!(
        crate::util::field(&text, "capture").starts_with("cut short"),
        "{context}: {text}"
    );
    let trace = hrx_capture::read_all(dir.join(file)).expect(context);
    let recovery = &trace.recovery;
    assert!(!recovery.closed, "{context}");
    assert_eq!(recovery.skipped_blocks, 0, "{context}: {recovery:?}");
    assert_eq!(recovery.skipped_records, 0, "{context}: {recovery:?}");
    assert_eq!(
        crate::util::number(&text, "records"),
        trace.records.len() as u64,
        "{context}"
    );
    assert!(
        matches!(trace.records.first(), Some(Record::SessionStart(_))),
        "{context}: the session start is not the first record recovered"
    );
    trace
}
