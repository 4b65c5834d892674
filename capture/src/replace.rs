//! A file replaced whole: written under a temporary name beside it, then renamed onto it
//! (a recording over an earlier trace, a trim, an export, a replay baseline).
//!
//! Every such writer takes its temporary file here ([`create_beside`]), so that each
//! - names it so that it fits a file name's limit ([`NAME_MAX`] bytes) whatever the name it
//!   replaces: `NAME.PID.partial` (or `.NAME.PID.new`) of a legal name of 241 to 255 bytes
//!   did not, and each write of such a name failed (a break-it pass);
//! - gives it the permission bits of the file it replaces, as `record` did: a baseline kept
//!   `chmod 600` came back readable by everyone, and a `chmod 444` one writable;
//! - and, with [`check_writable`] first, refuses to replace a file the user may not write
//!   (the rename needs only the folder's write permission: a write-protected baseline was
//!   replaced with exit 0).
//!
//! Every writer holds a lock on its temporary file while it lives, so that the next writer
//! of the same file removes one a killed writer left ([`remove_abandoned`]), and renames
//! onto where a symbolic link points ([`written_through`]).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The longest file name (one path component) a Linux file system takes, in bytes.
pub const NAME_MAX: usize = 255;

/// The temporary name beside `target` that becomes `target` once complete:
/// `{prefix}NAME.PID.{suffix}` (`NAME.PID.partial`, `.NAME.PID.new`), named for this process
/// so that two writers of one file never share it. Where that is longer than [`NAME_MAX`],
/// NAME is cut (at a character's boundary) and a hash of the whole name keeps it apart from
/// other names of the same start: `{prefix}START~HASH.PID.{suffix}`.
pub fn temporary_beside(target: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let name = target.file_name().unwrap_or_default();
    target.with_file_name(temporary_name(
        name.as_bytes(),
        prefix,
        suffix,
        std::process::id(),
    ))
}

/// Whether `candidate` is a name [`temporary_beside`] gives `target` for some process: a
/// temporary file of `target` that a writer killed may have left.
pub fn is_temporary_of(
    target: &Path,
    candidate: &std::ffi::OsStr,
    prefix: &str,
    suffix: &str,
) -> bool {
    let name = target.file_name().unwrap_or_default();
    let tail = format!(".{suffix}");
    let Some(rest) = candidate.as_bytes().strip_suffix(tail.as_bytes()) else {
        return false;
    };
    let digits = rest.rsplit(|&b| b == b'.').next().unwrap_or_default();
    let pid = std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u32>().ok());
    // Built again for that id: a name of another output that only looks alike is not this
    // one's (nor one with its id written otherwise, `007`).
    pid.is_some_and(|pid| temporary_name(name.as_bytes(), prefix, suffix, pid) == candidate)
}

/// [`temporary_beside`]'s name for `name` and process `pid`.
fn temporary_name(name: &[u8], prefix: &str, suffix: &str, pid: u32) -> OsString {
    let tail = format!(".{pid}.{suffix}");
    let room = NAME_MAX.saturating_sub(prefix.len() + tail.len());
    let mut out = prefix.as_bytes().to_vec();
    if name.len() <= room {
        out.extend_from_slice(name);
    } else {
        let mark = format!("~{:016x}", xxhash_rust::xxh3::xxh3_64(name));
        let mut keep = room.saturating_sub(mark.len()).min(name.len());
        // Not inside a UTF-8 character: a name that was text stays text.
        while keep > 0 && keep < name.len() && (name[keep] & 0xc0) == 0x80 {
            keep -= 1;
        }
        out.extend_from_slice(&name[..keep]);
        out.extend_from_slice(mark.as_bytes());
    }
    out.extend_from_slice(tail.as_bytes());
    OsString::from_vec(out)
}

/// Creates the temporary file `temp` (new: never one already there, nor through a symbolic
/// link) with the permission bits `mode` exactly (the umask does not take any away), or,
/// with `mode` `None`, as a new file is created (0666 less the umask). A file left at
/// `temp` by an earlier process of this one's id (killed) is removed first.
///
/// # Errors
///
/// When the file cannot be created.
pub fn create_temporary(temp: &Path, mode: Option<u32>) -> io::Result<File> {
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .open(temp)
    };
    let file = match open() {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(temp)?;
            open()?
        }
        other => other?,
    };
    if let Some(mode) = mode {
        // Only the bits the umask took away are at stake (created with `mode`, the file
        // is no more open than asked): where a file system refuses, it keeps those.
        let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
    }
    Ok(file)
}

/// The permission bits of the file at `target`, which its replacement takes; `None` where
/// there is none (or it cannot be asked).
pub fn mode_of(target: &Path) -> Option<u32> {
    let meta = std::fs::metadata(target).ok()?;
    meta.is_file().then(|| meta.permissions().mode() & 0o7777)
}

/// The temporary file that replaces `target` ([`temporary_beside`]`(target, "", suffix)`),
/// created with `target`'s permission bits where it exists ([`create_temporary`]): its
/// path, and the file open for writing.
///
/// # Errors
///
/// When the file cannot be created.
pub fn create_beside(target: &Path, suffix: &str) -> io::Result<(PathBuf, File)> {
    let temp = temporary_beside(target, "", suffix);
    let file = create_temporary(&temp, mode_of(target))?;
    Ok((temp, file))
}

/// How many symbolic links [`written_through`] follows before it calls the chain a loop, as
/// the kernel does (`ELOOP` after 40).
const MAX_LINKS: usize = 40;

/// The file a write to `path` reaches: `path` itself, or where a symbolic link at `path`
/// points, following a chain of links to its end (resolved whole where the target exists,
/// else each link relative to its own folder). Every writer that replaces a file by a rename
/// (`export`, `trim`, a replay's baseline) renames onto this, so that a link is written
/// through, not replaced by a file: a baseline saved through a dangling link replaced the
/// link, where an export wrote to its target (a break-it pass), and through a chain
/// `c2 -> c1 -> real/b.json` (b.json not yet made) one `read_link` replaced the middle link
/// `c1` with a file, `real/b.json` never made (break-it D2). `record -o` opens its trace
/// with `O_CREAT`, which the kernel resolves the same way.
///
/// # Errors
///
/// A chain longer than 40 links, or a loop (`ELOOP`: "Too many levels of symbolic links").
pub fn written_through(path: &Path) -> io::Result<PathBuf> {
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link(path) {
        return Ok(path.to_owned());
    }
    let mut at = path.to_owned();
    for _ in 0..=MAX_LINKS {
        if !is_link(&at) {
            return Ok(at);
        }
        match std::fs::canonicalize(&at) {
            Ok(whole) => return Ok(whole),
            Err(error) if error.raw_os_error() == Some(libc::ELOOP) => return Err(error),
            Err(_) => {}
        }
        at = match std::fs::read_link(&at) {
            Ok(target) if target.is_relative() => at
                .parent()
                .map_or_else(|| target.clone(), |dir| dir.join(&target)),
            Ok(target) => target,
            Err(_) => return Ok(at),
        };
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// An exclusive lock on the file or directory at `path` (std's `File::try_lock`: `flock` on
/// Linux, as a trace's writer takes on its file), held until the file is dropped. `None`
/// where it is not had: held by another, or a file system that has none (NFS), where the
/// caller goes on unlocked.
pub fn lock(path: &Path) -> Option<File> {
    let file = File::open(path).ok()?;
    file.try_lock().is_ok().then_some(file)
}

/// Removes, with `remove`, each entry of `dir` that `left` takes for a temporary output and
/// whose lock can be taken ([`lock`]): no live writer holds it, so a killed one left it,
/// which would stay, as large as its output, for ever. Decided by the lock, not by the
/// process id in the name, which another process may have taken since. The caller makes
/// sure no writer is between creating such a file and locking it: `export` and `trim` hold
/// the folder's lock (`NAME.PID.partial`), a recorder the earlier trace's (`.NAME.PID.new`).
pub fn remove_abandoned(
    dir: &Path,
    left: impl Fn(&std::fs::DirEntry) -> bool,
    remove: impl Fn(&Path),
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if left(&entry) {
            let path = entry.path();
            if let Some(_held) = lock(&path) {
                remove(&path);
            }
        }
    }
}

/// Whether the user may write the file at `path`, which a rename onto it replaces: `Ok`
/// where there is none, else `access(W_OK)` as the real user (the rename needs only the
/// folder's permission, so a write-protected file would be replaced all the same).
///
/// # Errors
///
/// The system's error where the file may not be written (`Permission denied`, a read-only
/// file system).
pub fn check_writable(path: &Path) -> io::Result<()> {
    let Ok(name) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: `name` is a valid NUL-terminated string; access reads it only.
    if unsafe { libc::access(name.as_ptr(), libc::W_OK) } == 0 {
        return Ok(());
    }
    match io::Error::last_os_error() {
        error if error.kind() == io::ErrorKind::NotFound => Ok(()),
        error => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::{NAME_MAX, is_temporary_of, temporary_name};
    use std::path::Path;

    #[test]
    fn a_temporary_name_is_told_from_other_names() {
        let out = Path::new("dir/k.json");
        let of = |name: &str| is_temporary_of(out, name.as_ref(), "", "partial");
        assert!(of("k.json.1878.partial"));
        assert!(of(&format!("k.json.{}.partial", u32::MAX)));
        for other in [
            "k.json",
            "k.json.partial",
            "k.json..partial",
            "k.json.12x.partial",
            "k.json.007.partial",
            "k.json.1878.new",
            "kk.json.1878.partial",
            "x.k.json.1878.partial",
            "k.json.99999999999.partial",
        ] {
            assert!(!of(other), "{other}");
        }
        // A long name, shortened with its hash, is known as its own, not another's.
        let long = "é".repeat(125) + "-1.hrxt";
        let temp = temporary_name(long.as_bytes(), "", "partial", 42);
        assert!(is_temporary_of(Path::new(&long), &temp, "", "partial"));
        let other = "é".repeat(125) + "-2.hrxt";
        assert!(!is_temporary_of(Path::new(&other), &temp, "", "partial"));
    }
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_temporary_name_fits_a_file_name_whatever_the_name_it_replaces() {
        // A short name keeps its form.
        assert_eq!(
            temporary_name(b"t.hrxt", "", "partial", 42),
            "t.hrxt.42.partial"
        );
        assert_eq!(temporary_name(b"t.hrxt", ".", "new", 42), ".t.hrxt.42.new");
        for len in [200, 240, 241, 245, 250, 255] {
            let name = vec![b'a'; len];
            for (prefix, suffix) in [("", "partial"), (".", "new")] {
                let temp = temporary_name(&name, prefix, suffix, u32::MAX);
                assert!(temp.len() <= NAME_MAX, "{len}: {} bytes", temp.len());
                assert!(
                    temp.as_bytes()
                        .ends_with(format!(".{}.{suffix}", u32::MAX).as_bytes())
                );
            }
        }
        // Two long names of one start get two names; a UTF-8 name is cut between characters.
        let (a, b) = ("é".repeat(125) + "-1.hrxt", "é".repeat(125) + "-2.hrxt");
        let (ta, tb) = (
            temporary_name(a.as_bytes(), "", "partial", 7),
            temporary_name(b.as_bytes(), "", "partial", 7),
        );
        assert_ne!(ta, tb);
        assert!(ta.to_str().is_some(), "{ta:?}");
        assert!(ta.len() <= NAME_MAX);
    }
}
