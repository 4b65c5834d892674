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

/// How messages name a path (see the module docs).
pub trait ShowPath {
    /// The path as it is where it holds no character [`needs_escape`] and is UTF-8 (as
    /// `Path::display`), else quoted with them escaped (`"a\nb.hrxt"`, `"\u{1b}[2J.hrxt"`,
    /// `"a\u{2028}b.hrxt"`, `"a\xE9.hrxt"`).
    fn shown(&self) -> Shown<'_>;
}

impl ShowPath for Path {
    fn shown(&self) -> Shown<'_> {
        Shown(self)
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
}
