//! A recording killed with SIGKILL at arbitrary instants leaves a trace whose complete
//! blocks all read back, reported as recovered.

use crate::util::{code, hrx_trace, run, stderr, stdout};
use std::time::{Duration, Instant};

#[test]
fn a_recording_killed_at_arbitrary_instants_leaves_a_readable_trace() {
    let Some(photo) = crate::util::photo() else {
        eprintln!("skipped: mate-backgrounds is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Delays after the trace file appears; varied so the kill lands in different phases.
    for (attempt, delay_ms) in [0u64, 30, 120, 250, 600].into_iter().enumerate() {
        let file = format!("k{attempt}.hrxt");
        let mut child = hrx_trace(dir.path())
            .args([
                "record",
                "--workload",
                "pipeline",
                "--frames",
                "400",
                "--max-width",
                "320",
            ])
            .args(["--input", photo.to_str().unwrap(), "-o", &file])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let path = dir.path().join(&file);
        let started = Instant::now();
        while std::fs::metadata(&path).map_or(true, |m| m.len() == 0) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no trace file appeared"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let info = run(dir.path(), &["info", &file]);
        assert_eq!(code(&info), 0, "attempt {attempt}: {}", stderr(&info));
        let text = stdout(&info);
        assert!(
            !text.contains("closed       cleanly"),
            "attempt {attempt}: {text}"
        );
        let dump = run(dir.path(), &["dump", &file]);
        assert_eq!(code(&dump), 0, "attempt {attempt}: {}", stderr(&dump));
        if delay_ms >= 30 {
            // By then the session start (written when the file is created) is on disk.
            assert!(
                stdout(&dump).contains("session"),
                "attempt {attempt}: the session start survived"
            );
        }
    }
}
