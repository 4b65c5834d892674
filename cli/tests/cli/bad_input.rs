//! Bad input across every verb that reads a trace: one `error:` line (and at most a
//! `hint:`), exit code 2, nothing on standard output, and no file left behind.

use crate::util::*;
use std::path::Path;

/// The files no verb can read, with what the error must say.
fn unusable(dir: &Path) -> Vec<(&'static str, &'static str)> {
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("empty.hrxt"), b"").unwrap();
    std::fs::write(
        dir.join("magic.hrxt"),
        b"GIF89a\x01\x00 not a trace at all, longer than a header",
    )
    .unwrap();
    let output = run(dir, &["record", "-o", "ok.hrxt", "--workload", "hazards"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let mut newer = std::fs::read(dir.join("ok.hrxt")).unwrap();
    newer[8..10].copy_from_slice(&2u16.to_le_bytes());
    std::fs::write(dir.join("v2.hrxt"), &newer).unwrap();
    std::fs::write(dir.join("cut.hrxt"), &newer[..20]).unwrap();
    vec![
        ("missing.hrxt", "missing.hrxt: byte 0: "),
        ("sub", "directory"),
        ("empty.hrxt", "byte 0: the file is empty"),
        ("magic.hrxt", "not an hrx trace"),
        (
            "v2.hrxt",
            "trace format 2.0 is newer than this reader's format 1.0",
        ),
        (
            "cut.hrxt",
            "byte 20: the file ends after 20 bytes, inside the 32-byte header",
        ),
    ]
}

#[test]
fn every_reading_verb_refuses_unusable_files_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = unusable(dir.path());
    let before = listing(dir.path());
    for verb in ["info", "dump", "replay", "view"] {
        for (file, says) in &cases {
            let output = run(dir.path(), &[verb, file]);
            assert_error(&output, says);
            assert!(
                stdout(&output).is_empty(),
                "{verb} {file}: {}",
                stdout(&output)
            );
        }
    }
    assert_eq!(listing(dir.path()), before, "a verb left a file behind");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bad_flags_are_one_line_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["info", "--bogus", "x"][..],
            "unexpected argument '--bogus'",
        ),
        (&["dump", "a", "b"], "unexpected argument 'b'"),
        (
            &["record", "--frames", "many", "--workload", "pipeline"],
            "invalid value 'many'",
        ),
        (
            &["replay", "--report", "xml", "t.hrxt"],
            "invalid value 'xml'",
        ),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (
            &["record", "--input", "x", "--", "true"],
            "cannot be used with",
        ),
    ] {
        let output = run(dir.path(), args);
        assert_error(&output, says);
        assert!(
            stderr(&output).contains("\nhint: "),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A missing required argument is named on the error line itself.
#[test]
fn a_missing_argument_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["export", "x.hrxt", "-o", "x.json"]);
    assert_error(&out, "--format");
    let out = run(dir.path(), &["completions"]);
    assert_error(&out, "<SHELL>");
}
