//! Help, version and usage errors.

use crate::util::*;

#[test]
fn every_verb_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for (verb, mentions) in [
        ("record", "HRX_TRACE"),
        ("info", "not closed cleanly"),
        ("dump", "--json"),
    ] {
        let output = run(dir.path(), &[verb, "--help"]);
        assert_eq!(code(&output), 0, "{verb}");
        assert!(
            stdout(&output).contains(mentions),
            "{verb}: {}",
            stdout(&output)
        );
    }
    let top = run(dir.path(), &["--help"]);
    assert_eq!(code(&top), 0);
    for verb in ["record", "info", "dump", "Exit codes"] {
        assert!(stdout(&top).contains(verb), "{}", stdout(&top));
    }
}

/// `-q`, `-v` and `--color` are global options, under a heading of their own after a verb's
/// own options (and the top level's): they sat among each verb's options, as if `stats -q`
/// were an option of `stats`.
#[test]
fn global_options_have_a_heading_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--help"][..], &["stats", "--help"], &["diff", "--help"]] {
        let out = run(dir.path(), args);
        assert_eq!(code(&out), 0, "{args:?}");
        let help = stdout(&out);
        let (own, global) = help
            .split_once("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{args:?}: no global heading:\n{help}"));
        for option in ["-q, --quiet", "-v, --verbose", "--color <WHEN>"] {
            assert!(global.contains(option), "{args:?}: {option}:\n{help}");
            assert!(!own.contains(option), "{args:?}: {option}:\n{help}");
        }
        if args[0] == "stats" {
            assert!(own.contains("--follow"), "{help}");
            assert!(!global.contains("--follow"), "{help}");
        }
    }
    // Still taken before or after the verb.
    let out = run(dir.path(), &["-q", "stats", "--help"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn version() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["--version"]);
    assert_eq!(code(&output), 0);
    // The release, then what it writes and holds (conventions::version_names_...).
    assert!(
        stdout(&output).starts_with(&format!(
            "hrx-trace {} (trace format ",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        stdout(&output)
    );
}

#[test]
fn bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["info"][..],
        &["info", "--bogus", "x"],
        &["dump"],
        &["record"],
        &["record", "--input", "x", "--", "true"],
        &["record", "--workload", "hazards", "--", "true"],
        &["record", "--workload", "pipeline", "--frames", "many"],
        &["frobnicate"],
        &[],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(code(&output), 2, "{args:?}: {}", stderr(&output));
        assert!(!stderr(&output).contains("panicked"), "{args:?}");
    }
    assert!(!dir.path().join("hrx.hrxt").exists());
}

/// A verb missing what it needs is hinted at with its usage as `--help` prints it: options
/// given (`-o`, `--frames`) are not shown as if required (clap's usage in the error read
/// `hrx-trace record --output <FILE> <--workload <NAME>|PROGRAM [ARGS]...>`, although
/// `--output` has a default).
#[test]
fn the_usage_in_a_hint_shows_options_as_optional() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["record", "-o", "x.hrxt"][..],
        &["record", "--frames", "2"],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(code(&output), 2, "{args:?}: {}", stderr(&output));
        let err = stderr(&output);
        let hint = err.lines().nth(1).unwrap_or_default();
        assert_eq!(
            hint,
            "hint: usage: hrx-trace record [OPTIONS] <--workload <NAME>|PROGRAM [ARGS]...>; \
             more with --help",
            "{args:?}: {err}"
        );
    }
}
