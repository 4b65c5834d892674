//! `hrx-trace replay` of a program that lets go of buffers: the replay lets go of its own
//! where the trace says the program did (`BufferDropped`), so a program that stayed within a
//! device's memory replays within it.

use crate::util::{code, example, hrx_trace, stderr, stdout};

/// A program that lets go of each round's buffer before it allocates the next stays within a
/// device memory limit (`freeing 3 40` under `HRX_SIM_MEMORY=64M`: 40 MiB at a time, 120 MiB
/// in all), and so does its replay (its warm-up run first, on the software device's one
/// memory). The replay held every buffer the trace created until its end and failed out of
/// device memory ("cannot replay", exit 2).
#[test]
fn a_program_that_frees_buffers_to_fit_a_memory_limit_replays_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let record = hrx_trace(dir.path())
        .env("HRX_SIM_MEMORY", "64M")
        .args(["record", "-o", "f.hrxt", "--"])
        .arg(example("freeing"))
        .args(["3", "40"])
        .output()
        .unwrap();
    assert_eq!(code(&record), 0, "{}{}", stdout(&record), stderr(&record));
    let replay = |extra: &[&str]| {
        hrx_trace(dir.path())
            .env("HRX_SIM_MEMORY", "64M")
            .args(["replay", "f.hrxt"])
            .args(extra)
            .output()
            .unwrap()
    };
    for extra in [&[][..], &["--report", "json"]] {
        let out = replay(extra);
        assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    }
    let text = stdout(&replay(&[]));
    assert!(text.contains("verdict: SAME"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&replay(&["--report", "json"]))).unwrap();
    // Each round's output compared: the host write into a buffer allocated after the
    // previous round's was let go reached its copy.
    assert_eq!(json["summary"]["outputs_matched"], 3, "{}", json["summary"]);
}
