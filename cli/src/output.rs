//! How much the verbs say on standard error, and in colour or not: the global options `-q`,
//! `-v` and `--color`, read once at start ([`init`]).
//!
//! - `-q`/`--quiet`: no progress bars and no `note:` lines. Warnings stay: a trace that lacks
//!   something (lost records, damage, nothing compared) is never quiet about it, and the
//!   report a verb was asked for is still printed (`record -q` prints no summary).
//! - `-v`/`--verbose`: `note:` lines about the reading itself as well (records and blocks
//!   read, in how long).
//! - JSON reports carry their `schema_version` ([`versioned`]).
//! - `--color auto|always|never`: verdicts (`MATCH`, `REGRESSION`, ...) and the `error:`,
//!   `warning:` and `note:` prefixes in colour. `auto` colours a stream that is a terminal
//!   unless the environment sets `NO_COLOR` to anything non-empty (<https://no-color.org>);
//!   `always` and `never` override it, as `ls`, `git` and `cargo` do. JSON is never coloured.

use hrx_capture::ShowPath;
use std::io::IsTerminal;
use std::sync::OnceLock;

/// When to colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Always (even into a pipe or with `NO_COLOR`).
    Always,
    /// Never.
    Never,
}

/// The settings, once parsed.
#[derive(Clone, Copy, Debug)]
struct Settings {
    quiet: bool,
    verbose: bool,
    stdout_color: bool,
    stderr_color: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// When [`init`] ran: `-v`'s notes say how long the verb took so far.
static STARTED: OnceLock<std::time::Instant> = OnceLock::new();

/// Time since [`init`].
pub fn since_start() -> std::time::Duration {
    STARTED.get_or_init(std::time::Instant::now).elapsed()
}

fn settings() -> Settings {
    *SETTINGS.get_or_init(|| Settings {
        quiet: false,
        verbose: false,
        stdout_color: false,
        stderr_color: false,
    })
}

/// Whether `auto` colours: a terminal, and `NO_COLOR` unset or empty.
fn auto(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Reads the global options; later calls keep the first.
pub fn init(quiet: bool, verbose: bool, color: ColorChoice) {
    since_start();
    let pick = |terminal: bool| match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => auto(terminal, std::env::var_os("NO_COLOR")),
    };
    let _ = SETTINGS.set(Settings {
        quiet,
        verbose,
        stdout_color: pick(std::io::stdout().is_terminal()),
        stderr_color: pick(std::io::stderr().is_terminal()),
    });
}

/// `-q`: no progress bars, no notes.
pub fn quiet() -> bool {
    settings().quiet
}

/// `-v`: notes about the reading as well.
pub fn verbose() -> bool {
    settings().verbose
}

/// A colour of a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Success (green).
    Good,
    /// Failure (bold red).
    Bad,
    /// Attention (yellow).
    Warn,
    /// Aside (cyan).
    Aside,
}

fn paint(text: &str, tone: Tone, on: bool) -> String {
    if !on {
        return text.to_owned();
    }
    let code = match tone {
        Tone::Good => "32",
        Tone::Bad => "1;31",
        Tone::Warn => "33",
        Tone::Aside => "36",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// `text` coloured for standard output (when colouring it).
pub fn paint_out(text: &str, tone: Tone) -> String {
    paint(text, tone, settings().stdout_color)
}

/// `text` coloured for standard error (when colouring it).
pub fn paint_err(text: &str, tone: Tone) -> String {
    paint(text, tone, settings().stderr_color)
}

/// The tone of a verdict word (`match`, `regression`, `same`, `different`, ...).
pub fn verdict_tone(verdict: &str) -> Tone {
    match verdict.to_ascii_lowercase().as_str() {
        "match" | "same" => Tone::Good,
        "regression" => Tone::Bad,
        _ => Tone::Warn,
    }
}

/// `report` with its `schema_version` ([`hrx_analysis::JSON_SCHEMA_VERSION`]), as every
/// JSON report carries it.
pub fn versioned(mut report: serde_json::Value) -> serde_json::Value {
    if let Some(fields) = report.as_object_mut() {
        fields.insert(
            "schema_version".into(),
            hrx_analysis::JSON_SCHEMA_VERSION.into(),
        );
    }
    report
}

/// Prints `warning: {message}` on standard error (always, `-q` too), and keeps it where
/// [`keep_warnings`] asked for them.
pub fn warn(message: impl std::fmt::Display) {
    let message = message.to_string();
    eline(format_args!(
        "{} {message}",
        paint_err("warning:", Tone::Warn)
    ));
    if let Some(kept) = kept().as_mut() {
        kept.push(message);
    }
}

/// The lines [`warn`] printed since [`keep_warnings`], without their `warning: `; `None`
/// while nobody asked for them (a `stats --follow` of hours keeps nothing).
static KEPT: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(None);

fn kept() -> std::sync::MutexGuard<'static, Option<Vec<String>>> {
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// From now on, keeps each line [`warn`] prints, for a JSON report's `warnings` to list
/// what standard error warned, every line of it ([`kept_warnings`]): `replay`'s warnings
/// come from a dozen places (the reading, the options, the gate, the baseline).
pub fn keep_warnings() {
    kept().get_or_insert_with(Vec::new);
}

/// The lines [`warn`] printed since [`keep_warnings`], without their `warning: `, in order
/// (none where it was not called).
pub fn kept_warnings() -> Vec<String> {
    kept().clone().unwrap_or_default()
}

/// Prints `note: {message}` on standard error, unless `-q`.
pub fn note(message: impl std::fmt::Display) {
    if !quiet() {
        eline(format_args!(
            "{} {message}",
            paint_err("note:", Tone::Aside)
        ));
    }
}

/// Says what a trace lacks that is no damage (a loaded host, lossy mode): a `note:`, and
/// under `-q` a `warning:`, since `-q` never silences what a trace lacks (README, "What a
/// trace may lack"), as `record -q` says it.
pub fn lacks(message: impl std::fmt::Display) {
    if quiet() {
        warn(message);
    } else {
        note(message);
    }
}

/// Prints `note: {message}` on standard error with `-v` only.
pub fn detail(message: impl std::fmt::Display) {
    if verbose() && !quiet() {
        eline(format_args!(
            "{} {message}",
            paint_err("note:", Tone::Aside)
        ));
    }
}

/// A progress bar on standard error (hidden off a terminal, as indicatif does, and with
/// `-q`).
pub fn progress(len: u64) -> indicatif::ProgressBar {
    if quiet() {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(len)
    }
}

/// A progress bar's style from `template`, whose `{rate}` is the items a second to one
/// decimal (indicatif's `{per_sec}` wrote `56.8952/s`: a fresh user's pass); `=> ` bars.
pub fn bar_style(template: &str) -> indicatif::ProgressStyle {
    let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{:.1}/s", state.per_sec());
    };
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .with_key("rate", rate)
        .progress_chars("=> ")
}

/// `text` padded with spaces to `width` terminal columns, for a name column of a text
/// table (`{:<width}` pads characters: a wide character, CJK or an emoji, takes two
/// columns and pushed the row's figures right); a longer one as it is.
pub fn padded(text: &str, width: usize) -> String {
    let columns = unicode_width::UnicodeWidthStr::width(text);
    format!("{text}{}", " ".repeat(width.saturating_sub(columns)))
}

/// A copy of `report` whose strings show their control characters escaped (`\u{1b}`,
/// `\n`), and the other characters messages escape in a path ([`hrx_capture::needs_escape`]:
/// line separators, bidirectional overrides), for text output: names come from the traced program (its annotations, threads,
/// kernels, path), and one holding an escape sequence or a newline must not clear a
/// terminal, retitle it or fake a line of output (a break-it pass), as `dump` already
/// escapes them. A name (a field whose key ends in `name`) longer than [`NAME_SHOWN_CHARS`]
/// is shortened in its middle, saying how long it is, so that one 10,000-byte annotation
/// name does not push a table's columns off every screen (a break-it pass); its head and tail
/// tell names with a common prefix apart. JSON output keeps the strings as recorded (JSON
/// escapes them itself).
pub fn printable(report: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match report {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| {
                    let shown = printable(value);
                    let shown = match shown {
                        Value::String(text) if key.ends_with("name") => {
                            Value::String(shortened(text))
                        }
                        other => other,
                    };
                    (key.clone(), shown)
                })
                .collect(),
        ),
        Value::String(text) if text.chars().any(hrx_capture::needs_escape) => {
            Value::String(shown_text(text).into_owned())
        }
        Value::Array(items) => Value::Array(items.iter().map(printable).collect()),
        other => other.clone(),
    }
}

/// One string as [`printable`] shows it: its control characters (and the others
/// [`hrx_capture::needs_escape`] names) escaped; borrowed where it has none.
pub fn shown_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(hrx_capture::needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| {
            if hrx_capture::needs_escape(c) {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// One name as [`printable`] shows a field whose key ends in `name`: escaped
/// ([`shown_text`]), then shortened in its middle past [`NAME_SHOWN_CHARS`].
pub fn shown_name(name: &str) -> String {
    shortened(shown_text(name).into_owned())
}

/// The longest name [`printable`] shows whole, in characters.
pub const NAME_SHOWN_CHARS: usize = 120;

/// `name` whole when it is at most [`NAME_SHOWN_CHARS`] characters, otherwise its first and
/// last characters around `...(N chars)...`, at most [`NAME_SHOWN_CHARS`] in all.
fn shortened(name: String) -> String {
    let count = name.chars().count();
    if count <= NAME_SHOWN_CHARS {
        return name;
    }
    let middle = format!("...({count} chars)...");
    let kept = NAME_SHOWN_CHARS.saturating_sub(middle.len());
    let head: String = name.chars().take(kept - kept / 3).collect();
    let tail: String = name.chars().skip(count - kept / 3).collect();
    format!("{head}{middle}{tail}")
}

/// Whether `path` is standard output: `-`, or a path to the file standard output is
/// (`/dev/stdout`, `/proc/self/fd/1`, or the file it was redirected to), which a verb must
/// write through standard output itself: a second opening of it is written over by what is
/// printed there.
pub fn is_standard_output(path: &std::path::Path) -> bool {
    path.as_os_str() == "-" || standard_stream(path) == Some(StandardStream::Output)
}

/// Which of the process's standard streams `path` names the file of, if any: standard
/// output or standard error (`/dev/stderr`, or the file it was redirected to).
pub fn standard_stream(path: &std::path::Path) -> Option<StandardStream> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::metadata(path).ok()?;
    let same = |fd: std::os::fd::BorrowedFd<'_>| {
        let Ok(fd) = fd.try_clone_to_owned() else {
            return false;
        };
        std::fs::File::from(fd)
            .metadata()
            .is_ok_and(|out| (out.dev(), out.ino()) == (target.dev(), target.ino()))
    };
    if same(std::io::stdout().as_fd()) {
        Some(StandardStream::Output)
    } else if same(std::io::stderr().as_fd()) {
        Some(StandardStream::Error)
    } else {
        None
    }
}

/// A standard stream an output path names ([`standard_stream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandardStream {
    /// Standard output.
    Output,
    /// Standard error.
    Error,
}

/// Writes one line on standard error, in one `write`: every `warning:`, `note:` and
/// `error:` line goes out here. One that cannot be written (a closed pipe, a full disk) is
/// lost rather than ending the run: `eprintln!` panics there, and the panic hook's own
/// message then aborted the process (exit 134), whatever the program's exit code was.
/// Formatted first, not written with `writeln!`: standard error is unbuffered, so that wrote
/// `warning:`, ` `, the text and the newline one `write` each, and an interruption's line
/// ([`crate::partial`]) said between two of them was glued on (`warning:error: interrupted
/// ...`, a break-it pass).
pub fn eline(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `written`, a verb's report or summary written to standard output, with a closed pipe
/// (its reader went away: `| head -c 100`) said in one `warning:` line, once a run, and taken
/// as no error: `standard output was closed before {what} was printed whole (...): it is cut
/// short; the exit code is {code}, unless an error follows` (`the verdict's`, `the run's`;
/// said before the verb ends, when a later error, such as a baseline that cannot be written,
/// exit 2, may still change it: the line promised the verdict's code there, break-it D5). A
/// verdict's exit code is
/// the answer to the question asked, and a gate that reads only the start of a report still
/// fails on a regression; the cut was silent (break-it E5). A full disk, or any other
/// error, is returned: the verb's one `error:` line.
///
/// # Errors
///
/// `written`'s, but a closed pipe.
pub fn closed_stdout_said(
    written: std::io::Result<()>,
    what: &str,
    code: &str,
) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SAID: AtomicBool = AtomicBool::new(false);
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            if !SAID.swap(true, Ordering::SeqCst) {
                warn(format_args!(
                    "standard output was closed before {what} was printed whole (its reader \
                     went away, as `| head` does): it is cut short; the exit code is {code}, \
                     unless an error follows"
                ));
            }
            Ok(())
        }
        other => other,
    }
}

/// Warns that `n` spans or ranges of `path` end before they start (crafted or damaged times),
/// each taken as 0 ns long by `verb` ("compared", "exported"); nothing when `n` is 0.
/// Returns the line warned, without its `warning: ` (a JSON report's `warnings`).
pub fn warn_ends_before_start(path: &std::path::Path, n: u64, verb: &str) -> Option<String> {
    if n == 0 {
        return None;
    }
    let line = format!(
        "{}: {} (crafted or damaged times): each {verb} as 0 ns long",
        path.shown(),
        match n {
            1 => "1 span or range ends before it starts".to_owned(),
            n => format!("{n} spans or ranges end before they start"),
        }
    );
    warn(&line);
    Some(line)
}

/// Standard output whose write errors name it: `error: cannot write to standard output: No
/// space left on device (os error 28)` where a verb's output went to `/dev/full`, not the
/// bare OS error (a fresh user's pass: `stats T > /dev/full`). A closed pipe and an
/// interrupted write keep their own error, which the callers that take a closed pipe as no
/// error ([`crate::failure::report`], [`closed_stdout_said`]) and `write_all` look for.
pub struct Stdout<W>(W);

/// Standard output, locked, for a verb's report ([`Stdout`]).
pub fn stdout() -> Stdout<std::io::StdoutLock<'static>> {
    Stdout(std::io::stdout().lock())
}

/// Standard output, not locked (a writer another thread owns), for a verb's output
/// ([`Stdout`]).
pub fn stdout_unlocked() -> Stdout<std::io::Stdout> {
    Stdout(std::io::stdout())
}

impl<W: std::io::Write> std::io::Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            match self.0.write(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_for_stdout(),
                written => return written.map_err(named_stdout),
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        loop {
            match self.0.flush() {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_for_stdout(),
                flushed => return flushed.map_err(named_stdout),
            }
        }
    }
}

/// Waits until standard output takes a write: one left non-blocking by whoever shares it (a
/// parent that set `O_NONBLOCK` on a pipe it reads slowly) answered `EAGAIN`, which ended a
/// verb with `error: Resource temporarily unavailable` part way through its output (a
/// break-it pass: `dump` after 70 KB).
pub(crate) fn wait_for_stdout() {
    let mut writable = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd. An error or POLLERR is left to the write that follows.
    unsafe { libc::poll(&mut writable, 1, -1) };
}

fn named_stdout(error: std::io::Error) -> std::io::Error {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::BrokenPipe | ErrorKind::Interrupted => error,
        kind => std::io::Error::new(kind, format!("cannot write to standard output: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_control_characters_in_every_string_and_keeps_the_rest() {
        let report = serde_json::json!({
            "name": "\u{1b}[2J\u{1b}]0;pwned\u{7}EVIL\nerror: fake",
            "rows": [{"name": "plain", "count": 3}],
        });
        let shown = printable(&report);
        assert_eq!(
            shown["name"],
            "\\u{1b}[2J\\u{1b}]0;pwned\\u{7}EVIL\\nerror: fake"
        );
        assert_eq!(shown["rows"], report["rows"]);
        // As a path in a message: separators and bidirectional overrides too.
        let report = serde_json::json!({"name": "a\u{2028}b\u{202e}c\u{85}"});
        assert_eq!(printable(&report)["name"], "a\\u{2028}b\\u{202e}c\\u{85}");
    }

    #[test]
    fn printable_shortens_a_long_name_in_its_middle_and_nothing_else() {
        let long = format!("head{}tail", "x".repeat(10_000));
        let message = "y".repeat(500);
        let report = serde_json::json!({
            "rows": [{"name": long, "thread_name": long, "short_name": "plain"}],
            "message": message,
        });
        let shown = printable(&report);
        let row = &shown["rows"][0];
        for key in ["name", "thread_name"] {
            let name = row[key].as_str().unwrap();
            assert!(name.chars().count() <= NAME_SHOWN_CHARS, "{name}");
            assert!(
                name.starts_with("headxx") && name.ends_with("xxtail"),
                "{name}"
            );
            assert!(name.contains("...(10008 chars)..."), "{name}");
        }
        assert_eq!(row["short_name"], "plain");
        // Only names: a message is shown whole.
        assert_eq!(shown["message"], message.as_str());
        let exact = "z".repeat(NAME_SHOWN_CHARS);
        assert_eq!(
            printable(&serde_json::json!({"name": exact}))["name"],
            exact.as_str()
        );
    }

    #[test]
    fn no_color_turns_auto_off_only_when_set_and_not_empty() {
        assert!(auto(true, None));
        assert!(auto(true, Some("".into())));
        assert!(!auto(true, Some("1".into())));
        assert!(!auto(false, None), "never into a pipe or a file");
    }

    #[test]
    fn painting_wraps_in_sgr_only_when_on() {
        assert_eq!(paint("MATCH", Tone::Good, false), "MATCH");
        assert_eq!(paint("MATCH", Tone::Good, true), "\x1b[32mMATCH\x1b[0m");
        assert_eq!(verdict_tone("REGRESSION"), Tone::Bad);
        assert_eq!(verdict_tone("same"), Tone::Good);
    }
}
