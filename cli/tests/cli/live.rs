//! `view --follow` and `stats --follow` end to end, against a recording in progress: a
//! `record --workload pipeline` of many frames runs in the background, the viewer and the
//! summary follow its trace in tmux panes, and SIGINT then ends the recording (the workload
//! stops and closes its trace). Asserted: structure (the status line says live with a
//! record rate, the span count grows, `-` stops following and `F` resumes it, the
//! recording's end shows as closed and ends `stats --follow`), never how fast.

use crate::util::*;
use crate::view::{Tmux, quote};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The `N spans` count of the viewer's header.
fn spans(screen: &str) -> Option<u64> {
    let header = screen.lines().next()?;
    let words: Vec<&str> = header.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "spans")?;
    words.get(at.checked_sub(1)?)?.parse().ok()
}

/// The background recording; stopped (SIGINT, then killed) when dropped.
struct Recording(Child);

impl Recording {
    fn start(dir: &Path) -> Recording {
        let args = ["record", "-o", "live.hrxt", "--workload", "pipeline"];
        let child = hrx_trace(dir)
            .args(args)
            .args(["--frames", "1000000", "--max-width", "32"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the recording");
        let recording = Recording(child);
        // Until the trace has its first blocks (a debug build on a loaded machine).
        let deadline = Instant::now() + crate::view::STEP_TIMEOUT;
        let trace = dir.join("live.hrxt");
        while std::fs::metadata(&trace).map_or(0, |m| m.len()) < 4096 {
            assert!(Instant::now() < deadline, "the recording wrote nothing");
            std::thread::sleep(Duration::from_millis(25));
        }
        recording
    }

    /// SIGINT: the workload stops and closes its trace.
    fn interrupt(&self) {
        // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGINT);
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn view_and_stats_follow_a_recording_in_progress() {
    if !Tmux::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let recording = Recording::start(dir.path());
    let trace = dir.path().join("live.hrxt");
    let binary = quote(Path::new(env!("CARGO_BIN_EXE_hrx-trace")));
    let view_dir = dir.path().join("view");
    let stats_dir = dir.path().join("stats");
    std::fs::create_dir_all(&view_dir).unwrap();
    std::fs::create_dir_all(&stats_dir).unwrap();
    let view = Tmux::start(
        &view_dir,
        120,
        40,
        &format!("{binary} view --follow {}", quote(&trace)),
    );
    let stats = Tmux::start(
        &stats_dir,
        120,
        60,
        &format!(
            "{binary} stats --follow {}; echo \"stats exited: $?\"; read -r _",
            quote(&trace)
        ),
    );

    // Live, with a rate, following; new spans appear as the recorder flushes.
    let first = view.wait_for("the live status", |s| {
        s.contains("live · ") && s.contains("records/s · following") && spans(s).is_some()
    });
    let before = spans(&first).unwrap();
    view.wait_for("new spans", |s| spans(s).is_some_and(|n| n > before));
    // A zoom stops following; F follows again.
    view.send(&["-"]);
    view.wait_for("following to stop", |s| s.contains("records/s · F follows"));
    view.send(&["F"]);
    view.wait_for("following again", |s| s.contains("records/s · following"));

    // The summary, refreshed: its record count grows.
    let records = |s: &str| -> Option<u64> {
        let line = s.lines().rev().find(|l| l.starts_with("live: "))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let summary = stats.wait_for("the live summary", |s| {
        records(s).is_some() && s.contains("records/s") && s.contains("kernel")
    });
    let n = records(&summary).unwrap();
    stats.wait_for("a refreshed summary", |s| records(s).is_some_and(|m| m > n));

    // The recording ends: the viewer says so, and the summary's last report ends it.
    recording.interrupt();
    view.wait_for("the closed status", |s| {
        s.contains("closed (the recording ended)")
    });
    let end = stats.wait_for("stats to end", |s| s.contains("stats exited: "));
    assert!(end.contains("stats exited: 0"), "{end}");
    view.send(&["q"]);
    view.wait_for_exit();
}

/// `stats --follow --json live.hrxt` in `dir`, started, and the lines of its stdout and
/// stderr as they come.
fn stats_follow_json(
    dir: &std::path::Path,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    std::sync::mpsc::Receiver<String>,
) {
    let mut stats = hrx_trace(dir)
        .args(["stats", "--follow", "--json", "live.hrxt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines_of(stats.stdout.take().unwrap());
    let err = lines_of(stats.stderr.take().unwrap());
    (stats, out, err)
}

/// The lines a child writes to `stream`, as they come.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

/// The next line, failing after [`crate::view::STEP_TIMEOUT`] (a liveness guard, not a
/// time bound).
fn next_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    lines
        .recv_timeout(crate::view::STEP_TIMEOUT)
        .unwrap_or_else(|_| panic!("no {what}"))
}

#[test]
fn stats_follow_waits_for_the_trace_then_its_counts_grow_to_the_final_totals() {
    let dir = tempfile::tempdir().unwrap();
    // Started before the trace exists: it waits instead of failing.
    let (mut stats, out, err) = stats_follow_json(dir.path());
    let waiting = next_line(&err, "waiting line");
    assert!(waiting.starts_with("waiting for live.hrxt"), "{waiting}");

    let recording = Recording::start(dir.path());
    // Live summaries, one JSON object a line: the record count grows.
    let live = |line: &str| -> u64 {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        v["live"]["records"].as_u64().expect("a live record count")
    };
    let first = live(&next_line(&out, "live summary"));
    let mut last = first;
    while last == first {
        let now = live(&next_line(&out, "refreshed summary"));
        assert!(now >= last, "{now} < {last}");
        last = now;
    }

    // The recording ends: the final report, then exit 0.
    recording.interrupt();
    let mut rest = String::new();
    while let Ok(line) = out.recv_timeout(crate::view::STEP_TIMEOUT) {
        rest.push_str(&line);
        rest.push('\n');
    }
    let status = stats.wait().unwrap();
    assert!(status.success(), "{status:?}");
    // Live lines until the close was read, then the final report: one object a line too.
    let lines: Vec<&str> = rest.lines().collect();
    let (final_line, live_lines) = lines.split_last().expect("the final report");
    for line in live_lines {
        let now = live(line);
        assert!(now >= last, "{now} < {last}");
        last = now;
    }
    let report: serde_json::Value = serde_json::from_str(final_line).expect("one line");
    assert_eq!(report["follow"]["ended"], "closed");
    let total = report["follow"]["records"].as_u64().unwrap();
    assert!(total >= last, "{total} < {last}");
    // The final totals are the whole trace's, as `stats` reads it.
    let mut recording = recording;
    recording.0.wait().unwrap();
    let whole = crate::util::run(dir.path(), &["stats", "--json", "live.hrxt"]);
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    assert_eq!(report["regions"], whole["regions"]);
    assert_eq!(report["submissions"], whole["submissions"]);
    assert_eq!(report["complete"], true);
    assert_eq!(report["end"], whole["end"]);
}

/// A trace written faster than `stats --follow` reads it: each refresh reads a bounded slice
/// (here `HRX_FOLLOW_READ_BYTES`, so that the test need not race a recorder), prints what it
/// has with how much of the file is not read yet, and the next refresh goes on from there at
/// once; the final report is the whole trace's, as `stats` reads it. (A refresh read to the
/// file's end, which kept moving under a fast recorder: two lines in four minutes.)
#[test]
fn stats_follow_behind_the_trace_prints_each_slice_then_the_whole_trace() {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::{Record, Recorder, RecorderOptions};
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.hrxt");
    // Many small blocks, closed cleanly: a read bounded in bytes stops at a block.
    let options = RecorderOptions {
        backend: "sim".into(),
        device: "synthetic".into(),
        full_buffer_wait: Duration::from_secs(600),
        ..hrx_analysis::timeline::fixtures::small_blocks()
    };
    let recorder = Recorder::create(&trace, options).unwrap();
    for record in pipeline(PipelineSpec::ops(3_000)) {
        if !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&record);
        }
    }
    assert_eq!(recorder.close().unwrap().dropped_records, 0);
    let len = std::fs::metadata(&trace).unwrap().len();
    let records = hrx_capture::read_all(&trace).unwrap().records.len() as u64;
    let slice = (len / 8).to_string();

    let out = hrx_trace(dir.path())
        .args(["stats", "--follow", "--json", "big.hrxt"])
        .env(hrx_analysis::stats_follow::READ_BYTES_ENV, &slice)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines = json_lines(&text);
    let (report, live) = lines.split_last().expect("the final report");
    // A summary for each slice, each saying how much is left, less each time.
    assert!(live.len() >= 4, "{} live lines: {text}", live.len());
    let mut shown = (0, u64::MAX);
    for line in live {
        let now = (
            line["live"]["records"].as_u64().unwrap(),
            line["live"]["unread_bytes"].as_u64().unwrap(),
        );
        assert!(
            now.0 > shown.0 && now.1 < shown.1 && now.1 > 0,
            "{now:?} after {shown:?}"
        );
        assert!(now.1 < len, "{now:?}");
        shown = now;
    }
    // The final report: the whole trace, as `stats` reads it.
    assert_eq!(report["follow"]["ended"], "closed");
    assert_eq!(report["follow"]["records"], records);
    let whole = crate::util::run(dir.path(), &["stats", "--json", "big.hrxt"]);
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    for key in ["kernels", "submissions", "regions", "complete", "end"] {
        assert_eq!(report[key], whole[key], "{key}");
    }
    assert_eq!(report["complete"], true);

    // In text, the `live:` line says how far behind it is.
    let out = hrx_trace(dir.path())
        .args(["stats", "--follow", "big.hrxt"])
        .env(hrx_analysis::stats_follow::READ_BYTES_ENV, &slice)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let behind = text
        .lines()
        .filter(|l| l.starts_with("live: ") && l.contains(" not read yet (refreshed each second"))
        .count();
    assert!(behind >= 4, "{text}");
    assert!(text.contains("live: ended: closed ("), "{text}");
}

/// A closed recording of `ops` operations in many small blocks, as `record` would leave it,
/// as its bytes (written at `path` first).
fn small_block_recording(path: &Path, ops: u64) -> Vec<u8> {
    use hrx_analysis::synthetic::{PipelineSpec, pipeline};
    use hrx_capture::{Record, Recorder, RecorderOptions};
    let options = RecorderOptions {
        backend: "sim".into(),
        device: "synthetic".into(),
        full_buffer_wait: Duration::from_secs(600),
        ..hrx_analysis::timeline::fixtures::small_blocks()
    };
    let recorder = Recorder::create(path, options).unwrap();
    for record in pipeline(PipelineSpec::ops(ops)) {
        if !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&record);
        }
    }
    assert_eq!(recorder.close().unwrap().dropped_records, 0);
    std::fs::read(path).unwrap()
}

/// A `stats --follow --json` following `live.hrxt` in `dir`: a third of an earlier
/// recording written, its writer's lock held by the returned file, and the first live line
/// read; with the earlier and a new recording's bytes.
struct FollowedEarlier {
    earlier: std::fs::File,
    earlier_bytes: Vec<u8>,
    new_bytes: Vec<u8>,
    stats: std::process::Child,
    out: std::sync::mpsc::Receiver<String>,
    err: std::sync::mpsc::Receiver<String>,
}

fn follow_an_earlier_recording(dir: &std::path::Path) -> FollowedEarlier {
    use std::io::Write;
    let earlier_bytes = small_block_recording(&dir.join("earlier.hrxt"), 2_000);
    let new_bytes = small_block_recording(&dir.join("new.hrxt"), 300);
    let mut earlier = std::fs::File::create(dir.join("live.hrxt")).unwrap();
    earlier.lock().unwrap();
    earlier
        .write_all(&earlier_bytes[..earlier_bytes.len() / 3])
        .unwrap();
    let (stats, out, err) = stats_follow_json(dir);
    let live: serde_json::Value =
        serde_json::from_str(&next_line(&out, "live summary")).expect("one JSON object");
    assert_eq!(live["live"]["recorded_again"], false);
    FollowedEarlier {
        earlier,
        earlier_bytes,
        new_bytes,
        stats,
        out,
        err,
    }
}

impl FollowedEarlier {
    /// Lets go of the earlier recording's file (its writer ends, closed or killed), then
    /// waits for the follower's end: its final report and its standard error's lines.
    fn end(self) -> (serde_json::Value, Vec<String>) {
        let FollowedEarlier {
            earlier,
            mut stats,
            out,
            err,
            ..
        } = self;
        drop(earlier);
        let mut lines = Vec::new();
        while let Ok(line) = out.recv_timeout(crate::view::STEP_TIMEOUT) {
            lines.push(line);
        }
        let status = stats.wait().unwrap();
        let mut errors = Vec::new();
        while let Ok(line) = err.recv_timeout(crate::view::STEP_TIMEOUT) {
            errors.push(line);
        }
        assert!(status.success(), "{status:?} {errors:?}");
        let report = serde_json::from_str(lines.last().expect("the final report")).unwrap();
        (report, errors)
    }
}

/// A trace recorded again while `stats --follow` follows it: the new recording is renamed
/// over the path (as a recorder replaces an earlier trace) while the earlier one is still
/// being written (here the test holds its lock and writes its last blocks after the
/// rename). `stats --follow` reads the earlier recording to its end, whole, in the file it
/// holds, and says under its report that the path names a new one (`note:`, and
/// `recorded_again` in `--json`'s `live` and `follow`). It reopened the path at each read,
/// so it went on in the new file (a restart, the earlier recording's report lost) or, when
/// the rename came during its last read, ended with the earlier report without a word.
#[test]
fn stats_follow_of_a_trace_recorded_again_reports_the_earlier_and_says_so() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.hrxt");
    // The earlier recording, a third written, its writer's lock held.
    let mut followed = follow_an_earlier_recording(dir.path());

    // The new recording takes the name; the earlier one's last blocks go to its file.
    let beside = dir.path().join(".live.hrxt.1.new");
    std::fs::write(&beside, &followed.new_bytes).unwrap();
    std::fs::rename(&beside, &path).unwrap();
    let third = followed.earlier_bytes.len() / 3;
    let rest = followed.earlier_bytes[third..].to_vec();
    followed.earlier.write_all(&rest).unwrap();
    let (report, errors) = followed.end();
    // The earlier recording, whole, as `stats` reads it.
    let whole = crate::util::run(dir.path(), &["stats", "--json", "earlier.hrxt"]);
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    for key in ["kernels", "submissions", "regions", "complete", "end"] {
        assert_eq!(report[key], whole[key], "{key}");
    }
    assert_eq!(report["follow"]["ended"], "closed");
    assert_eq!(report["follow"]["recorded_again"], true);
    let note = "note: live.hrxt was recorded again while it was followed; this report is of \
                the earlier recording (read live.hrxt again for the new one)";
    assert_eq!(
        errors.iter().filter(|l| l.as_str() == note).count(),
        1,
        "{errors:?}"
    );
    assert!(
        !errors
            .iter()
            .any(|l| l.contains("following it from its start")),
        "{errors:?}"
    );
}

/// A recording killed while `stats --follow` follows it, then recorded again (the new
/// recording renamed over the path, and still being written): the report of the earlier
/// recording says how it ended, "not closed cleanly", not "being recorded now (a recorder
/// holds it)": that is the new recording, which the path names. It asked the path, and
/// said both under one report (a break-it pass: `host_visible` killed with SIGKILL and run
/// again into the same file).
#[test]
fn stats_follow_of_a_killed_recording_recorded_again_says_how_the_earlier_ended() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.hrxt");
    // The earlier recording, a third written, its writer's lock held.
    let followed = follow_an_earlier_recording(dir.path());

    // The new recording takes the name, its writer's lock held, a third written; the
    // earlier one's writer is gone (killed: nothing more, no close).
    let beside = dir.path().join(".live.hrxt.1.new");
    let mut new = std::fs::File::create(&beside).unwrap();
    new.lock().unwrap();
    let new_bytes = &followed.new_bytes;
    new.write_all(&new_bytes[..new_bytes.len() / 3]).unwrap();
    std::fs::rename(&beside, &path).unwrap();
    let (report, errors) = followed.end();
    drop(new);
    assert_eq!(report["follow"]["ended"], hrx_capture::UNCLOSED_ENDING);
    assert_eq!(report["follow"]["recorded_again"], true);
    assert!(
        errors.iter().any(|l| l.starts_with(
            "warning: live.hrxt: not closed cleanly; these figures cover only what was recovered: "
        )),
        "{errors:?}"
    );
    assert!(
        !errors.iter().any(|l| l.contains("being recorded now")),
        "{errors:?}"
    );
}

/// `stats --follow` gives no rate before it has two record counts: its first `live:` line
/// says `rate: measuring` (JSON `records_per_s` null), where it said `0 records/s`, as if
/// the recording had stalled; the lines after it have a rate. A closed trace read in slices
/// (`HRX_FOLLOW_READ_BYTES`) gives several live lines without racing a recorder.
#[test]
fn stats_follow_gives_no_rate_before_two_counts() {
    let dir = tempfile::tempdir().unwrap();
    let len = small_block_recording(&dir.path().join("big.hrxt"), 3_000).len() as u64;
    let follow = |json: bool| {
        let mut args = vec!["stats", "--follow", "big.hrxt"];
        if json {
            args.push("--json");
        }
        let out = hrx_trace(dir.path())
            .args(&args)
            .env(
                hrx_analysis::stats_follow::READ_BYTES_ENV,
                (len / 8).to_string(),
            )
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
    };
    let text = follow(false);
    let live: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("live: ") && !l.starts_with("live: ended"))
        .collect();
    assert!(live.len() >= 2, "{text}");
    assert!(
        live[0].contains(" records, rate: measuring") && !live[0].contains("records/s"),
        "{}",
        live[0]
    );
    for line in &live[1..] {
        assert!(
            line.contains(" records/s") && !line.contains("measuring"),
            "{line}"
        );
    }
    let text = follow(true);
    let lines = json_lines(&text);
    let (_, live) = lines.split_last().expect("the final report");
    assert!(live.len() >= 2, "{text}");
    assert!(
        live[0]["live"]["records_per_s"].is_null(),
        "{}",
        live[0]["live"]
    );
    for line in &live[1..] {
        assert!(line["live"]["records_per_s"].is_f64(), "{}", line["live"]);
    }
}

/// `stats --follow` of a trace nobody writes, cut short: no live line says it is being
/// recorded (the first two did, until the follower concluded nobody writes it), and the final
/// report says how it ended. A file of a few bytes nobody writes fails once that is clear,
/// without waiting out the 30 s given a recorder's first write (a break-it pass).
#[test]
fn stats_follow_of_a_cut_trace_never_calls_it_being_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = small_block_recording(&dir.path().join("whole.hrxt"), 3_000);
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() / 2]).unwrap();
    let out = hrx_trace(dir.path())
        .args(["stats", "--follow", "--json", "cut.hrxt"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines = json_lines(&text);
    let (last, live) = lines.split_last().expect("the final report");
    for line in live {
        let ended = line["ended"].as_str().unwrap_or_default();
        assert!(!ended.contains("being recorded"), "{ended}");
    }
    assert_eq!(last["follow"]["ended"], hrx_capture::UNCLOSED_ENDING);

    for (name, len) in [("eight.hrxt", 8), ("empty.hrxt", 0)] {
        std::fs::write(dir.path().join(name), &bytes[..len]).unwrap();
        let out = hrx_trace(dir.path())
            .args(["stats", "--follow", name])
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            !stderr(&out).contains("gave up waiting"),
            "{}",
            stderr(&out)
        );
    }
}

/// `stats --follow --json`'s output: one JSON object a line, the live ones, then the report.
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect()
}
