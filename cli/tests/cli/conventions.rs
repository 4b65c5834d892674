//! The command-line conventions every verb shares (issue 19 point 5): `--json` reports with
//! their `schema_version`, 64-bit digests as hex strings and bytes as base64 in JSON, `-q`,
//! `--color` and `NO_COLOR`, and a `--version` that names the backends built.

use crate::util::{code, hrx_trace, record_hazards, run, stderr, stdout};
use base64::Engine as _;
use serde_json::Value;

fn json(output: &std::process::Output) -> Value {
    assert_eq!(code(output), 0, "{}", stderr(output));
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

#[test]
fn version_names_the_format_and_the_backends_built() {
    let dir = tempfile::tempdir().unwrap();
    let version = run(dir.path(), &["--version"]);
    assert_eq!(code(&version), 0);
    let text = stdout(&version);
    assert!(text.starts_with("hrx-trace 0."), "{text}");
    assert!(
        text.contains(&format!(
            "trace format {}",
            hrx_capture::format::FormatVersion::CURRENT
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("GPU backends: {}", hrx::GPU_BACKENDS.join(", "))),
        "{text}"
    );
    assert!(
        text.contains("GPU backends: sim"),
        "the software device is always built: {text}"
    );
    assert!(text.contains("NPU backends: sim"), "{text}");
}

#[test]
fn every_report_verb_has_json_with_its_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    record_hazards(dir.path(), "g.hrxt");
    let version = Value::from(hrx_analysis::JSON_SCHEMA_VERSION);
    let info = json(&run(dir.path(), &["info", "--json", "h.hrxt"]));
    let stats = json(&run(dir.path(), &["stats", "--json", "h.hrxt"]));
    let replay = json(&run(dir.path(), &["replay", "--report", "json", "h.hrxt"]));
    let diff = run(dir.path(), &["diff", "--json", "h.hrxt", "g.hrxt"]);
    let diff: Value = serde_json::from_str(&stdout(&diff)).unwrap();
    for (verb, report) in [
        ("info", &info),
        ("stats", &stats),
        ("replay", &replay),
        ("diff", &diff),
    ] {
        assert_eq!(report["schema_version"], version, "{verb}: {report}");
    }
    // `info --json` says what its text says, and its counts add up.
    let by_kind = info["records"]["by_kind"].as_object().unwrap();
    let sum: u64 = by_kind.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(info["records"]["total"].as_u64(), Some(sum), "{info}");
    assert_eq!(info["submissions"]["accepted"], by_kind["Submit"], "{info}");
    assert_eq!(info["closed"]["complete"], true);
    assert_eq!(info["closed"]["end"], "closed cleanly");
    assert_eq!(info["file"]["path"], "h.hrxt");
    assert!(
        info["session"]["pid"].as_u64().is_some_and(|p| p > 0),
        "{info}"
    );
    let text = stdout(&run(dir.path(), &["info", "h.hrxt"]));
    assert!(
        text.contains(&format!("records      {}", info["records"]["total"])),
        "{text}"
    );

    // `record --json`: one object a line per trace written, the trace's `info` inside.
    let recorded = run(
        dir.path(),
        &["record", "--json", "--workload", "hazards", "-o", "r.hrxt"],
    );
    let line = json(&recorded);
    assert_eq!(line["schema_version"], version);
    assert!(
        line["outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("ok")),
        "{line}"
    );
    assert_eq!(line["trace"]["file"]["path"], "r.hrxt");
    assert_eq!(line["trace"]["closed"]["complete"], true);
}

/// Digests past 2^53 are exact in JSON (jq reads numbers as doubles), and bytes are base64
/// with their length (arrays of numbers made a JSON dump 3.6 times the bytes).
#[test]
fn json_digests_are_hex_strings_and_bytes_base64() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = hrx_trace(dir.path())
        .env("HRX_TRACE_CONTENTS", "1")
        .args(["record", "--workload", "hazards", "-o", "c.hrxt"])
        .output()
        .unwrap();
    assert_eq!(code(&recorded), 0, "{}", stderr(&recorded));
    let dump = run(dir.path(), &["dump", "--json", "c.hrxt"]);
    assert_eq!(code(&dump), 0);
    let (mut digests, mut payloads) = (0, 0);
    let text = stdout(&dump);
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every blob's bytes decode to its length.
    let mut blobs = std::collections::HashMap::new();
    for blob in records.iter().filter_map(|r| r.get("Blob")) {
        let bytes = &blob["bytes"];
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(bytes["base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(bytes["len"].as_u64(), Some(decoded.len() as u64));
        blobs.insert(
            blob["hash"].as_str().unwrap().to_owned(),
            decoded.len() as u64,
        );
    }
    for digest in records.iter().filter_map(|r| r.get("OutputDigest")) {
        let hex = digest["xxh3"].as_str().expect("a digest is a string");
        assert!(hex.len() == 18 && hex.starts_with("0x"), "{hex}");
        assert!(u64::from_str_radix(&hex[2..], 16).is_ok(), "{hex}");
        digests += 1;
        let len = digest["end"].as_u64().unwrap() - digest["start"].as_u64().unwrap();
        let held = match (
            digest["contents"].get("Inline"),
            digest["contents"].get("Blob"),
        ) {
            (Some(inline), _) => base64::engine::general_purpose::STANDARD
                .decode(inline["base64"].as_str().unwrap())
                .unwrap()
                .len() as u64,
            (_, Some(blob)) => blobs[blob["hash"].as_str().expect("a hash is a string")],
            _ => continue,
        };
        assert_eq!(held, len, "{digest}");
        payloads += 1;
    }
    assert!(
        digests > 0 && payloads > 0,
        "{digests} digests, {payloads} with contents"
    );
    // Submission numbers stay numbers: `jq 'select(.Submit.submission == 3)'` works.
    let submit = records
        .iter()
        .find_map(|r| r.get("Submit"))
        .expect("a submit");
    assert!(
        submit["submission"].is_u64(),
        "counters are JSON numbers: {submit}"
    );
}

#[test]
fn quiet_drops_notes_and_summaries_never_warnings_or_reports() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = run(
        dir.path(),
        &["-q", "record", "--workload", "hazards", "-o", "h.hrxt"],
    );
    assert_eq!(code(&recorded), 0, "{}", stderr(&recorded));
    assert_eq!(stdout(&recorded), "", "no summary with -q");
    // Nothing but what the trace lacks, which `-q` keeps: on a loaded machine (CI's), the
    // host's load, as a warning.
    let said = stderr(&recorded);
    assert!(
        said.lines()
            .all(|l| l.starts_with("warning: the host was loaded while recording")),
        "{said}"
    );
    let replay = run(
        dir.path(),
        &[
            "replay",
            "-q",
            "h.hrxt",
            "--max-slowdown",
            "1000",
            "--repeat",
            "1",
        ],
    );
    assert!(stdout(&replay).contains("verdict: "), "the report stays");
    assert!(!stderr(&replay).contains("note:"), "{}", stderr(&replay));
    let noisy = run(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--max-slowdown",
            "1000",
            "--repeat",
            "1",
        ],
    );
    assert!(
        stderr(&noisy).contains("note: --max-slowdown"),
        "{}",
        stderr(&noisy)
    );
    // A warning about what the trace lacks is not silenced: a cut-short trace's.
    let bytes = std::fs::read(dir.path().join("h.hrxt")).unwrap();
    std::fs::write(dir.path().join("cut.hrxt"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let stats = run(dir.path(), &["stats", "-q", "cut.hrxt"]);
    assert!(
        stderr(&stats).contains("warning: cut.hrxt:"),
        "{}",
        stderr(&stats)
    );
    // `export -q` prints no summary, as `record -q` and `trim -q` (it printed one), but keeps
    // that warning.
    let export = run(dir.path(), &["export", "-q", "cut.hrxt", "-o", "cut.json"]);
    assert_eq!(code(&export), 0, "{}", stderr(&export));
    assert_eq!(stdout(&export), "", "no summary with -q");
    assert!(
        stderr(&export).contains("warning: cut.hrxt:"),
        "{}",
        stderr(&export)
    );
    assert!(dir.path().join("cut.json").exists());
    // Parquet too (it printed its summary with -q); without -q its summary names the mark
    // of the trace not read whole, as chrome's does.
    for (quiet, out) in [(true, "q.parquet"), (false, "n.parquet")] {
        let mut args = vec!["export", "--format", "parquet", "cut.hrxt", "-o", out];
        if quiet {
            args.insert(1, "-q");
        }
        let export = run(dir.path(), &args);
        assert_eq!(code(&export), 0, "{}", stderr(&export));
        assert!(
            stderr(&export).contains("warning: cut.hrxt:"),
            "{}",
            stderr(&export)
        );
        assert!(dir.path().join(out).join("events.parquet").exists());
        match quiet {
            true => assert_eq!(stdout(&export), "", "no summary with -q"),
            false => assert!(
                stdout(&export).contains(" (1 of them trace incomplete) (parquet)"),
                "{}",
                stdout(&export)
            ),
        }
    }
    // `-v` says what was read.
    let verbose = run(dir.path(), &["stats", "-v", "h.hrxt"]);
    assert!(
        stderr(&verbose).contains("note: h.hrxt: read ")
            && stderr(&verbose).contains(" records from "),
        "{}",
        stderr(&verbose)
    );
    let both = run(dir.path(), &["stats", "-q", "-v", "h.hrxt"]);
    assert_eq!(code(&both), 2, "-q and -v conflict");
}

#[test]
fn colour_follows_the_option_then_no_color_then_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    let replay = |color: Option<&str>, no_color: Option<&str>| {
        let mut command = hrx_trace(dir.path());
        command.env_remove("NO_COLOR");
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        if let Some(when) = color {
            command.args(["--color", when]);
        }
        let out = command.args(["replay", "h.hrxt"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
    };
    let green = "verdict: \x1b[32mSAME\x1b[0m (exit 0)";
    assert!(replay(Some("always"), None).contains(green));
    assert!(
        replay(Some("always"), Some("1")).contains(green),
        "--color always beats NO_COLOR"
    );
    for plain in [
        replay(None, None),
        replay(Some("never"), None),
        replay(Some("auto"), Some("1")),
    ] {
        assert!(
            plain.contains("verdict: SAME (exit 0)") && !plain.contains('\x1b'),
            "{plain}"
        );
    }
    let error = hrx_trace(dir.path())
        .args(["--color", "always", "info", "missing.hrxt"])
        .output()
        .unwrap();
    assert!(
        stderr(&error).starts_with("\x1b[1;31merror:\x1b[0m missing.hrxt"),
        "{}",
        stderr(&error)
    );
    let json = hrx_trace(dir.path())
        .args(["--color", "always", "info", "--json", "h.hrxt"])
        .output()
        .unwrap();
    assert!(!stdout(&json).contains('\x1b'), "JSON is never coloured");
}

/// The README's "Link your program" example is `examples/linked.rs` (which `cargo test`
/// compiles), word for word from its `use` line: the README cannot show code that no longer
/// builds.
#[test]
fn the_readme_example_is_the_compiled_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/linked.rs")).unwrap();
    let code = &example[example.find("use hrx::").expect("the example's imports")..];
    assert!(
        readme.contains(&format!("```rust\n{code}```")),
        "README.md's Link your program block differs from examples/linked.rs"
    );
    assert!(
        code.contains("hrx::annotate::range("),
        "the example shows an annotation"
    );
    assert!(code.lines().count() <= 25, "a short example");
}

/// The ordinary (not raw) string literals of the Rust source `text`: (line, the literal's
/// source text between its quotes). Comments, raw strings and character literals skipped.
fn string_literals(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let lines = |from: usize, to: usize| b[from..to].iter().filter(|&&c| c == b'\n').count();
    let ident = |at: usize| at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < b.len() {
        let rest = &b[i..];
        let raw = (!ident(i))
            .then(|| rest.strip_prefix(b"br").or_else(|| rest.strip_prefix(b"r")))
            .flatten()
            .and_then(|r| {
                let hashes = r.iter().position(|&c| c != b'#')?;
                (r[hashes] == b'"').then_some(hashes)
            });
        let end = if rest.starts_with(b"//") {
            i + rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            i + 2 + text[i + 2..].find("*/").unwrap() + 2
        } else if let Some(hashes) = raw {
            // A raw string: up to its quote and as many #.
            let start = i + rest.iter().position(|&c| c == b'"').unwrap() + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            start + text[start..].find(&close).unwrap() + close.len()
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line, &text[i + 1..j]));
            j + 1
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i + 2 + rest[2..].iter().position(|&c| c == b'\'').unwrap() + 1
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            i + 3
        } else {
            // Anything else one byte at a time: a lifetime, or a character literal of several
            // bytes ('é', whose bytes are no quote or newline).
            i + 1
        };
        line += lines(i, end);
        i = end;
    }
    out
}

/// Whether the string literal `literal` (its source text) carries a line's end into its
/// text: once its continuations (`\`, the newline and the next line's leading whitespace)
/// are taken out, a newline followed by source indentation (8 spaces), or a run of 10
/// spaces between words (lines joined, their indentation kept).
fn lost_continuation(literal: &str) -> bool {
    let mut text = String::new();
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('\n')) => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            ('\\', Some(&escaped)) => {
                text.extend([c, escaped]);
                chars.next();
            }
            _ => text.push(c),
        }
    }
    let indented = text.split('\n').skip(1).any(|l| l.starts_with("        "));
    let spaced = text.split('\n').any(|l| l.trim().contains(&" ".repeat(10)));
    indented || spaced
}

/// A message written over several source lines continues each with `\`, which drops the
/// newline and the next line's indentation. A line that ends inside a string literal
/// without it carries the newline and the indentation into the message (or, joined, a run
/// of spaces: the `--pace` hint read "save a baseline of this" and 26 spaces before "pace",
/// a break-it pass). No string literal of the CLI and of the crates it prints from does
/// ([`lost_continuation`]; tables' columns are narrower, help texts start at column 0).
#[test]
fn string_literals_are_continued_with_a_backslash() {
    // The check finds the defect in either form, and passes a continued literal.
    let source = "let a = \"one \\\n             two\";\nlet b = 'x'; // \"not a literal\n\
                  let c = \"one\n             two\";\nlet d = \"one                two\";\n\
                  let e = r#\"raw\n             \"#;\n";
    let found: Vec<(usize, bool)> = string_literals(source)
        .into_iter()
        .map(|(line, l)| (line, lost_continuation(l)))
        .collect();
    assert_eq!(found, [(1, false), (4, true), (6, true)], "{source}");

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<std::path::PathBuf> = [
        "cli/src",
        "replay/src",
        "analysis/src",
        "capture/src",
        "tui/src",
        "src",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    let (mut bad, mut literals) = (Vec::new(), 0);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (line, literal) in string_literals(&text) {
                    literals += 1;
                    if lost_continuation(literal) {
                        let file = path.strip_prefix(&root).unwrap_or(&path);
                        bad.push(format!("{}:{line}: \"{literal}\"", file.display()));
                    }
                }
            }
        }
    }
    assert!(literals > 1000, "{literals} string literals found");
    assert!(
        bad.is_empty(),
        "string literals continued without \\:\n{}",
        bad.join("\n")
    );
}

/// Sizes on one line read in one form: `record`'s `bytes` line wrote a rounded size with two
/// decimals beside a whole one without (`2.48 KiB on disk, 21 KiB copied`; fresh-user pass).
#[test]
fn sizes_on_one_line_read_in_one_form() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["record", "--workload", "hazards", "-o", "h.hrxt"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = stdout(&out);
    let line = (summary.lines())
        .find(|l| l.starts_with("bytes "))
        .unwrap_or_else(|| panic!("no bytes line: {summary}"));
    let sizes: Vec<&str> = (line.split([' ', ',']))
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].ends_with("iB"))
        .map(|w| w[0])
        .collect();
    assert_eq!(sizes.len(), 2, "on disk and copied: {line}");
    assert_eq!(sizes[0].contains('.'), sizes[1].contains('.'), "{line}");
}
