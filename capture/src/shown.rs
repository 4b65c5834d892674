//! A file's path as one-line messages name it ([`ShowPath::shown`]).
//!
//! A path is the user's or a program's (`-o`, `HRX_TRACE`, a pattern's `%h`), and may hold
//! a newline or an escape sequence: written raw, `error: a` and `b.hrxt: cannot open it`
//! read as two lines, the second no message at all, and an escape sequence reached the
//! terminal (a fresh user's pass). Every message naming a path writes it through
//! [`ShowPath::shown`]: a plain name as it is, one holding a control character quoted and
//! escaped as Rust's `{:?}` writes a string (`"a\nb.hrxt"`), so the message stays one line
//! and the name can be told from the words around it.

use std::fmt;
use std::path::Path;

/// A path as messages show it: [`ShowPath::shown`].
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a>(&'a Path);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string_lossy();
        if text.chars().any(char::is_control) {
            write!(f, "{text:?}")
        } else {
            f.write_str(&text)
        }
    }
}

/// How messages name a path (see the module docs).
pub trait ShowPath {
    /// The path as it is where it holds no control character (as `Path::display`), else
    /// quoted with them escaped (`"a\nb.hrxt"`, `"\u{1b}[2J.hrxt"`).
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
}
