//! A file's path as one-line messages name it ([`ShowPath::shown`]).
//!
//! A path is the user's or a program's (`-o`, `HRX_TRACE`, a pattern's `%h`), and may hold
//! a newline or an escape sequence: written raw, `error: a` and `b.hrxt: cannot open it`
//! read as two lines, the second no message at all, and an escape sequence reached the
//! terminal (a fresh user's pass). Every message naming a path writes it through
//! [`ShowPath::shown`]: a plain name as it is, one holding a character that breaks or
//! rearranges a line ([`needs_escape`]: a control character, a line or paragraph separator,
//! a bidirectional override) or a byte that is no UTF-8 quoted and escaped as Rust's `{:?}`
//! writes a string (`"a\nb.hrxt"`, `"a\xE9.hrxt"`), so the message stays one line, reads
//! in order, and the name can be told from the words around it and from other names.

use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Whether `c` is escaped where a one-line message shows a name holding it: a control
/// character (`char::is_control`: `\n`, ESC, NEL U+0085), and those that are none but
/// still end a line or reorder it on a terminal (a break-it pass): the line and paragraph
/// separators U+2028 and U+2029, the bidirectional embeddings and overrides U+202A..U+202E,
/// isolates U+2066..U+2069 and marks (U+200E, U+200F, U+061C), with which a name such as
/// `a\u{202e}txt.exe` reads as another.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
        )
}

/// A path as messages show it: [`ShowPath::shown`].
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a>(&'a Path);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0.as_os_str().as_bytes();
        if let Ok(text) = std::str::from_utf8(bytes)
            && !text.chars().any(needs_escape)
        {
            return f.write_str(text);
        }
        // Quoted: its valid stretches as `{:?}` writes a string (which escapes these
        // characters too), each byte that is no UTF-8 as `\xE9`, so that two names
        // differing in such a byte are not both shown `a\u{fffd}.hrxt`.
        f.write_char('"')?;
        for chunk in bytes.utf8_chunks() {
            let valid = format!("{:?}", chunk.valid());
            f.write_str(&valid[1..valid.len() - 1])?;
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02X}")?;
            }
        }
        f.write_char('"')
    }
}

/// A path as a command a hint prints names it, for the user to paste into a shell:
/// [`ShowPath::for_shell`].
#[derive(Clone, Copy, Debug)]
pub struct ForShell<'a>(&'a Path);

/// The bytes a word holds unquoted in a shell command and means itself.
fn plain_in_shell(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_./%+,:=@-".contains(&byte)
}

impl fmt::Display for ForShell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0.as_os_str().as_bytes();
        // A leading `-` would be read as an option: `./-a.hrxt` names the same file.
        let (dot, bytes) = match bytes.first() {
            Some(b'-') => ("./", bytes),
            _ => ("", bytes),
        };
        f.write_str(dot)?;
        if !bytes.is_empty() && bytes.iter().all(|&b| plain_in_shell(b)) {
            // All ASCII, so UTF-8.
            return f.write_str(std::str::from_utf8(bytes).unwrap_or_default());
        }
        let text = std::str::from_utf8(bytes).ok();
        match text.filter(|t| !t.chars().any(needs_escape)) {
            // Single quotes keep everything but a single quote, written `'\''`.
            Some(text) => {
                f.write_char('\'')?;
                f.write_str(&text.replace('\'', r"'\''"))?;
                f.write_char('\'')
            }
            // A control character (or a byte that is no UTF-8) cannot be pasted inside
            // single quotes as one line: `$'...'` writes it escaped (bash, zsh, ksh).
            None => {
                f.write_str("$'")?;
                for chunk in bytes.utf8_chunks() {
                    for c in chunk.valid().chars() {
                        match c {
                            '\'' | '\\' => write!(f, "\\{c}")?,
                            '\n' => f.write_str("\\n")?,
                            '\t' => f.write_str("\\t")?,
                            '\r' => f.write_str("\\r")?,
                            c if c.is_ascii() && needs_escape(c) => {
                                write!(f, "\\x{:02X}", c as u32)?
                            }
                            c if needs_escape(c) => write!(f, "\\u{:04X}", c as u32)?,
                            c => f.write_char(c)?,
                        }
                    }
                    for byte in chunk.invalid() {
                        write!(f, "\\x{byte:02X}")?;
                    }
                }
                f.write_char('\'')
            }
        }
    }
}

/// How messages name a path (see the module docs).
pub trait ShowPath {
    /// The path as it is where it holds no character [`needs_escape`] and is UTF-8 (as
    /// `Path::display`), else quoted with them escaped (`"a\nb.hrxt"`, `"\u{1b}[2J.hrxt"`,
    /// `"a\u{2028}b.hrxt"`, `"a\xE9.hrxt"`).
    fn shown(&self) -> Shown<'_>;

    /// The path as a command printed for the user to copy names it (a hint's `hrx-trace
    /// trim FILE -o OUT ...`), one word to a shell: as it is where it holds only letters,
    /// digits and `_./%+,:=@-`; else in single quotes (a quote as `'\''`), or as `$'...'`
    /// where it holds a character [`needs_escape`] or a byte that is no UTF-8 (`$'a\nb'`);
    /// `./` before a leading `-`, which would read as an option.
    fn for_shell(&self) -> ForShell<'_>;
}

impl ShowPath for Path {
    fn shown(&self) -> Shown<'_> {
        Shown(self)
    }

    fn for_shell(&self) -> ForShell<'_> {
        ForShell(self)
    }
}

#[cfg(test)]
mod tests {
    use super::ShowPath;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    #[test]
    fn a_plain_path_is_shown_as_it_is_and_one_with_control_characters_quoted_and_escaped() {
        for plain in ["t.hrxt", "dir/a b.hrxt", "/tmp/ünï \"q\".hrxt", ""] {
            assert_eq!(
                Path::new(plain).shown().to_string(),
                Path::new(plain).display().to_string()
            );
        }
        assert_eq!(Path::new("a\nb.hrxt").shown().to_string(), r#""a\nb.hrxt""#);
        assert_eq!(
            Path::new("x\u{1b}[2J\"y\".hrxt").shown().to_string(),
            r#""x\u{1b}[2J\"y\".hrxt""#
        );
        assert!(
            !Path::new("a\r\tb")
                .shown()
                .to_string()
                .contains(['\r', '\t'])
        );
    }

    /// Characters that are no control characters but end a line or reorder it on a
    /// terminal, and bytes that are no UTF-8, are escaped too (a break-it pass: a name
    /// with U+2028 split its message, one with U+202E read backwards, and `a\xE9.hrxt` and
    /// `a\xE8.hrxt` were both shown `a\u{fffd}.hrxt`).
    #[test]
    fn separators_bidirectional_overrides_and_bytes_that_are_no_utf8_are_escaped() {
        for (name, shown) in [
            ("a\u{2028}b.hrxt", r#""a\u{2028}b.hrxt""#),
            ("a\u{2029}b.hrxt", r#""a\u{2029}b.hrxt""#),
            ("a\u{85}b.hrxt", r#""a\u{85}b.hrxt""#),
            ("a\u{202e}txt.exe", r#""a\u{202e}txt.exe""#),
            ("a\u{202a}b", r#""a\u{202a}b""#),
            ("a\u{2066}b\u{2069}", r#""a\u{2066}b\u{2069}""#),
            ("a\u{200f}b", r#""a\u{200f}b""#),
        ] {
            assert_eq!(Path::new(name).shown().to_string(), shown, "{name:?}");
        }
        let raw = |bytes: &[u8]| {
            Path::new(std::ffi::OsStr::from_bytes(bytes))
                .shown()
                .to_string()
        };
        assert_eq!(raw(b"a\xe9.hrxt"), r#""a\xE9.hrxt""#);
        assert_eq!(raw(b"a\xe8.hrxt"), r#""a\xE8.hrxt""#);
        assert_eq!(raw(b"\xff\n\xc3"), r#""\xFF\n\xC3""#);
        assert_eq!(raw(b"\xc3\xbcn\xe9"), r#""ün\xE9""#);
    }

    /// A path in a command a hint prints is one shell word that names the file: quoted
    /// where it holds a space, a quote or a shell character, `$'...'` with a control
    /// character, `./` before a leading `-` (a break-it pass pasted `hrx-trace trim bad
    /// blob.hrxt -o OUT ...` and trimmed `bad`).
    #[test]
    fn a_path_for_a_shell_is_one_word_naming_the_file() {
        let word = |name: &[u8]| {
            Path::new(std::ffi::OsStr::from_bytes(name))
                .for_shell()
                .to_string()
        };
        for (name, shell) in [
            (&b"t.hrxt"[..], "t.hrxt"),
            (b"dir/a-b_1.hrxt", "dir/a-b_1.hrxt"),
            (b"bad blob.hrxt", "'bad blob.hrxt'"),
            (b"it's.hrxt", r"'it'\''s.hrxt'"),
            (b"$HOME`x`*.hrxt", "'$HOME`x`*.hrxt'"),
            (b"~a.hrxt", "'~a.hrxt'"),
            (b"-badblob.hrxt", "./-badblob.hrxt"),
            (b"-bad blob.hrxt", "./'-bad blob.hrxt'"),
            (b"bad\nblob.hrxt", r"$'bad\nblob.hrxt'"),
            (b"a\x1b[1m'\\.hrxt", r"$'a\x1B[1m\'\\.hrxt'"),
            (b"a\xe9.hrxt", r"$'a\xE9.hrxt'"),
            ("ü\u{2028}.hrxt".as_bytes(), r"$'ü\u2028.hrxt'"),
            ("ünï.hrxt".as_bytes(), "'ünï.hrxt'"),
            (b"", "''"),
        ] {
            assert_eq!(word(name), shell, "{name:?}");
        }
    }
}
