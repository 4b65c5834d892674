//! The trace files one `record -- PROGRAM` may leave: every process of the program that
//! uses hrx writes its own (DESIGN.md section 4, as Nsight Systems' `-o` patterns).
//!
//! `-o` may hold `%p` (process id), `%h` (host name), `%n` (a sequence number, the first
//! free one) and `%%`, which the runtime of each process expands. Without `%p` or `%n`, a
//! process that finds the file taken by another process of the same recording writes
//! `NAME.PID.EXT` beside it (the runtime says so on standard error). Each process says which
//! file it writes in the directory `record` names by `HRX_TRACE_PATHS` ([`reported`]): a
//! concurrent recording's files (reported in its own directory) are then not taken for this
//! one's. Files no process reported (a program built with an older hrx, a process the
//! variable did not reach) are still found: those in `-o`'s directory whose names fit the
//! pattern, or its `NAME.PID.EXT` form, and that are new or changed since the program
//! started ([`Snapshot`] tells them apart).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One piece of a file name pattern.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Literal(String),
    Digits,
}

/// A file name pattern from `-o`'s file name.
#[derive(Debug)]
struct Pattern(Vec<Piece>);

impl Pattern {
    fn new(name: &str, host: &str) -> Pattern {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = name.chars();
        while let Some(c) = chars.next() {
            match (c, chars.clone().next()) {
                ('%', Some('p' | 'n')) => {
                    chars.next();
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    pieces.push(Piece::Digits);
                }
                ('%', Some('h')) => {
                    chars.next();
                    literal.push_str(host);
                }
                ('%', Some('%')) => {
                    chars.next();
                    literal.push('%');
                }
                _ => literal.push(c),
            }
        }
        pieces.push(Piece::Literal(literal));
        pieces.retain(|p| *p != Piece::Literal(String::new()));
        Pattern(pieces)
    }

    /// The `NAME.PID.EXT` form: `.DIGITS` before the last extension of the last literal.
    fn own(&self) -> Pattern {
        let mut pieces = self.0.clone();
        if let Some(Piece::Literal(last)) = pieces.last().cloned() {
            let cut = last.rfind('.').filter(|&i| i > 0).unwrap_or(last.len());
            pieces.pop();
            pieces.push(Piece::Literal(format!("{}.", &last[..cut])));
            pieces.push(Piece::Digits);
            if cut < last.len() {
                pieces.push(Piece::Literal(last[cut..].to_owned()));
            }
        } else {
            pieces.push(Piece::Literal(".".into()));
            pieces.push(Piece::Digits);
        }
        Pattern(pieces)
    }

    fn matches(&self, name: &str) -> bool {
        fn go(pieces: &[Piece], s: &str) -> bool {
            match pieces.split_first() {
                None => s.is_empty(),
                Some((Piece::Literal(l), rest)) => {
                    s.strip_prefix(l.as_str()).is_some_and(|s| go(rest, s))
                }
                Some((Piece::Digits, rest)) => {
                    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
                    (1..=digits).any(|n| go(rest, &s[n..]))
                }
            }
        }
        go(&self.0, name)
    }
}

/// The files that could be traces of this recording, with what each was before it.
#[derive(Debug)]
pub struct Snapshot {
    dir: PathBuf,
    patterns: [Pattern; 2],
    before: BTreeMap<String, String>,
}

impl Snapshot {
    /// Takes the snapshot of `-o`'s directory for the pattern `output`.
    pub fn take(output: &Path) -> Snapshot {
        let dir = match output.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) => dir.to_owned(),
            None => PathBuf::from("."),
        };
        let name = output.file_name().unwrap_or_default().to_string_lossy();
        let host = hrx_capture::expand_path("%h")
            .to_string_lossy()
            .into_owned();
        let pattern = Pattern::new(&name, &host);
        let own = pattern.own();
        let mut snapshot = Snapshot {
            dir,
            patterns: [pattern, own],
            before: BTreeMap::new(),
        };
        snapshot.before = snapshot.candidates();
        snapshot
    }

    /// Name -> identity of every file in the directory that fits a pattern.
    fn candidates(&self) -> BTreeMap<String, String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return BTreeMap::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| self.patterns.iter().any(|p| p.matches(name)))
            .map(|name| {
                let identity = hrx_capture::file_identity(&self.dir.join(&name));
                (name, identity)
            })
            .collect()
    }

    /// The files created or changed since the snapshot, by name, with `-o`'s directory
    /// prefix as the user gave it.
    pub fn written(&self) -> Vec<PathBuf> {
        self.candidates()
            .into_iter()
            .filter(|(name, identity)| self.before.get(name) != Some(identity))
            .map(|(name, _)| {
                if self.dir == Path::new(".") {
                    PathBuf::from(name)
                } else {
                    self.dir.join(name)
                }
            })
            .collect()
    }
}

/// The traces the program's processes wrote ([`reported`]).
#[derive(Debug, Default)]
pub struct Written {
    /// Every trace, sorted: absolute paths.
    pub paths: Vec<PathBuf>,
    /// Those of `paths` no process said it wrote, found by their names: a process built with
    /// an older hrx, or one `HRX_TRACE_PATHS` did not reach (`record` says so for each).
    pub unclaimed: Vec<PathBuf>,
    /// Files a process reported writing that are no longer there (deleted or moved while
    /// they were recorded): traces lost, which `record` says.
    pub gone: Vec<PathBuf>,
    /// The processes (pids) that reported each of `paths` they claim: the trace there is
    /// one of theirs only while its `SessionStart` names one of them ([`replaced_by`]).
    pub reporters: BTreeMap<PathBuf, Vec<u32>>,
}

/// The process whose trace the file holds now, when it is none of the processes of this
/// recording that reported writing it (`reporters`): another recording replaced it since
/// (`-o` replaces a closed trace), and what it holds is not this recording's. `session_pid`
/// is the pid its `SessionStart` names (`None`, unread: nothing can be told). `None` where
/// it is theirs, or no process reported it (found by its name: nothing to compare).
pub fn replaced_by(session_pid: Option<u32>, reporters: Option<&Vec<u32>>) -> Option<u32> {
    let pid = session_pid?;
    let reporters = reporters.filter(|r| !r.is_empty())?;
    (!reporters.contains(&pid)).then_some(pid)
}

/// The pid the `SessionStart` of the trace at `path` names, read from its first records
/// only (a trace of hundreds of megabytes is not read whole for it); `None` where it cannot
/// be read there.
pub fn session_pid(path: &Path) -> Option<u32> {
    let reader = hrx_capture::TraceReader::open(path).ok()?;
    reader
        .filter_map(Result::ok)
        .take(16)
        .find_map(|(_, record)| match record {
            hrx_capture::Record::SessionStart(start) => Some(start.pid),
            _ => None,
        })
}

/// The traces the program's processes wrote: the paths they reported in `reports`
/// ([`hrx_capture::TRACE_PATHS_ENV`]), so that a concurrent recording to the same `-o`
/// (whose processes fall back to `NAME.PID.EXT`) is never taken for this one's; and the
/// files `snapshot` sees written that no process of any recording reported (a process built
/// with an older hrx, or one the variable did not reach: nothing is left out for want of a
/// report). A file another recording's process reported, in a sibling reports directory
/// still present, is that recording's. When no process reported, the files `snapshot` sees.
pub fn reported(reports: Option<&Path>, snapshot: &Snapshot) -> Written {
    let by_pid = reports.map(read_reported_by_pid).unwrap_or_default();
    let mut reporters: BTreeMap<PathBuf, Vec<u32>> = BTreeMap::new();
    for (pid, path) in by_pid {
        reporters.entry(path).or_default().push(pid);
    }
    let (ours, gone): (Vec<PathBuf>, Vec<PathBuf>) =
        reporters.keys().cloned().partition(|path| path.is_file());
    if ours.is_empty() {
        return Written {
            paths: snapshot.written(),
            unclaimed: Vec::new(),
            gone,
            reporters: BTreeMap::new(),
        };
    }
    let key = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let claimed: std::collections::BTreeSet<PathBuf> = ours.iter().map(|p| key(p)).collect();
    // Other recordings' reports beside ours (`hrx-trace-paths-*` in the same directory).
    let others: std::collections::BTreeSet<PathBuf> = reports
        .and_then(|dir| Some((dir, std::fs::read_dir(dir.parent()?).ok()?)))
        .map(|(dir, entries)| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.as_path() != dir)
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(REPORTS_PREFIX))
                })
                .flat_map(|p| read_reports(&p))
                .map(|p| key(&p))
                .collect()
        })
        .unwrap_or_default();
    let mut written = Written {
        paths: ours,
        unclaimed: Vec::new(),
        gone,
        reporters,
    };
    for path in snapshot.written() {
        let k = key(&path);
        if !claimed.contains(&k) && !others.contains(&k) {
            written.unclaimed.push(path.clone());
            written.paths.push(path);
        }
    }
    written.paths.sort();
    written.paths.dedup();
    written
}

/// The prefix of the temporary directory `record` names in `HRX_TRACE_PATHS`; the
/// directory is `PREFIX` + `record`'s pid + `-` + a random part ([`reports_prefix`]).
pub const REPORTS_PREFIX: &str = "hrx-trace-paths-";

/// The prefix of this process's reports directory: [`REPORTS_PREFIX`], its pid and `-`,
/// so that [`sweep_reports`] can tell one whose `record` no longer runs.
pub fn reports_prefix() -> String {
    format!("{REPORTS_PREFIX}{}-", std::process::id())
}

/// Removes from `dir` the reports directories of `record`s no longer running (a SIGKILLed
/// `record` runs no clean-up and left its own, a break-it pass; and a reports directory
/// still present claims its files as another recording's, [`reported`]). One named without
/// a pid (an older `record`) is left: its owner cannot be told. Best effort.
pub fn sweep_reports(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(REPORTS_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let running = Path::new(&format!("/proc/{pid}")).exists();
        if !running && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A `record`'s claim on the trace it is about to record ([`claim`]): the hidden file
/// `.NAME.claim` beside the trace (in its folder as [`trace_key`] names it), locked while the
/// claim stands, naming the claiming `record`'s pid and reports directory. Dropped, it is
/// removed (still locked, so that no `record` takes the lock of a file no longer there
/// unawares: [`claim`] checks that the path still names the file it locked).
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    /// Holds the lock; closed after `drop` removed the path.
    file: std::fs::File,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The longest file name Linux's file systems take, in bytes (`NAME_MAX`).
const NAME_MAX_BYTES: usize = 255;

/// The claim file of the trace `key` ([`trace_key`]): `.NAME.claim` beside it. Where that
/// name would be longer than a file name may be (a trace named with 249 bytes or more), its
/// `NAME` is shortened and followed by a hash of the whole name (`.NAME…-HASH.claim`): a
/// claim that could not be made was no claim, and two `record`s to such a name both ran (a
/// break-it pass).
fn claim_path(key: &Path) -> PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let trace = key.file_name().unwrap_or_default().as_bytes();
    let mut name = b".".to_vec();
    if 1 + trace.len() + ".claim".len() <= NAME_MAX_BYTES {
        name.extend_from_slice(trace);
    } else {
        // xxh3, as the trace's checksums: the same name in every build of hrx-trace (std's
        // hasher may change between Rust releases, and two `record`s must agree).
        let hash = xxhash_rust::xxh3::xxh3_64(trace);
        let suffix = format!("-{hash:016x}.claim");
        let mut keep = NAME_MAX_BYTES - 1 - suffix.len();
        // Not in the middle of a UTF-8 character where the name is UTF-8.
        while keep > 0 && (trace[keep] & 0xc0) == 0x80 {
            keep -= 1;
        }
        name.extend_from_slice(&trace[..keep]);
        name.extend_from_slice(&suffix.as_bytes()[..suffix.len() - ".claim".len()]);
    }
    name.extend_from_slice(b".claim");
    key.with_file_name(std::ffi::OsString::from_vec(name))
}

/// Claims the trace `trace` (`-o` as this process expands it, without `%p` or `%n`) for the
/// recording whose reports directory is `reports` (none for `record --workload`, whose
/// process writes no report), or refuses it as `check_output` refuses a trace another
/// recorder is writing ([`crate::record::refuse_live`]): the same refusal whether the other
/// recording's program has opened the trace yet or not. `record -- PROGRAM` and `record
/// --workload` both claim theirs, and hold the [`Claim`] until their program ended or their
/// workload closed its trace.
///
/// `check_output`'s probe of the trace's lock alone let two `record`s started together
/// both through (neither program had opened the trace yet): both programs ran, and the
/// second took the first's new trace for a sibling's (`HRX_TRACE_SESSION`, what the file
/// was before either started, is the same for both) and recorded into `NAME.PID.EXT`,
/// "written by another process of this recording" (a break-it pass: 2 of 10 tries). So a
/// `record` claims its trace before its program starts, and a later one is refused while
/// that claim stands: its `record` holds the claim file's lock and no process of its
/// recording has reported writing the trace yet (once one has, the trace's own lock refuses
/// others while it is written; once it is closed, a later recording replaces it, as `-o`
/// does, and the first `record` says its trace was replaced). Of two `record`s started in
/// the same instant exactly one takes the lock.
///
/// The claim sits beside the trace, where every `record` into it looks: kept in the
/// claiming `record`'s temporary directory (session 56), it was not seen by a `record` with
/// another `TMPDIR`, and both recorded (a break-it pass). Its lock tells a `record` still
/// running from one killed: a `record` SIGKILLed runs no clean-up and leaves the file,
/// unlocked, which the next `record` takes over. A folder where no claim file can be made
/// (an earlier trace writable in a folder that is not, which a recording empties in place)
/// gets none: the trace's own lock still refuses a second recorder once the first writes.
///
/// # Errors
///
/// A [`Failure`] naming the trace: another recorder writes it, or another `record` (its
/// pid in the hint, where its claim says it) claimed it.
pub fn claim(
    reports: Option<&Path>,
    trace: &Path,
) -> Result<Option<Claim>, crate::failure::Failure> {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let key = trace_key(trace);
    let path = claim_path(&key);
    // A `record` run by another's program (`record -- sh -c 'hrx-trace record --workload
    // ...'`) is a process of that recording: its claim is no other recorder's (the nested
    // recording's program, or workload, writes the trace the outer one claimed).
    let canonical = |dir: &Path| dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let enclosing = std::env::var_os(hrx_capture::TRACE_PATHS_ENV)
        .filter(|dir| !dir.is_empty())
        .map(|dir| canonical(Path::new(&dir)));
    // Tried again where the file locked was removed meanwhile (its `record` ended).
    for _ in 0..16 {
        // Not through a symbolic link, and only a file of its own: a claim is written
        // (emptied, then the pid), and a `.NAME.claim` that was a link to another file
        // emptied that file and wrote the pid into it (a break-it pass). Such a name, as one
        // that cannot be opened, gets no claim (the trace's own lock still refuses).
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .ok()
            .filter(|file| {
                file.metadata()
                    .is_ok_and(|m| m.file_type().is_file() && m.nlink() == 1)
            });
        let Some(file) = opened else {
            crate::record::refuse_live(trace, "the trace")?;
            return Ok(None);
        };
        match file.try_lock() {
            Ok(()) if !same_file(&file, &path) => continue,
            Ok(()) => {
                // None, or one a killed `record` left: this recording's from now on.
                let claim = Claim {
                    path: path.clone(),
                    file,
                };
                // After the claim: a claim given up since, its program having opened the
                // trace, left the trace's lock in its place.
                crate::record::refuse_live(trace, "the trace")?;
                let mut text = format!("{}\n", std::process::id()).into_bytes();
                text.extend_from_slice(reports.map(Path::as_os_str).unwrap_or_default().as_bytes());
                let mut file = &claim.file;
                let _ = file.set_len(0).and_then(|()| file.write_all(&text));
                return Ok(Some(claim));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let (pid, dir) = claimant(&std::fs::read(&path).unwrap_or_default());
                if let Some(dir) = &dir {
                    if enclosing.as_deref() == Some(canonical(dir).as_path()) {
                        return Ok(None);
                    }
                    // Its program opened the trace: the trace's own lock says the rest.
                    if read_reported(dir).iter().any(|p| trace_key(p) == key) {
                        crate::record::refuse_live(trace, "the trace")?;
                        return Ok(None);
                    }
                }
                return Err(crate::failure::Failure::new(format!(
                    "cannot write the trace to {}: another recorder is writing it",
                    hrx_capture::ShowPath::shown(trace)
                ))
                .hint(format!(
                    "`hrx-trace record`{} records into it (its program or workload may not \
                     have opened it yet): choose another -o file, or wait for that recording \
                     to end",
                    pid.map_or_else(String::new, |pid| format!(" (pid {pid})"))
                )));
            }
            Err(std::fs::TryLockError::Error(_)) => {
                crate::record::refuse_live(trace, "the trace")?;
                return Ok(None);
            }
        }
    }
    crate::record::refuse_live(trace, "the trace")?;
    Ok(None)
}

/// Whether `path` names the open `file` (not removed or replaced since it was opened).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// What a claim file holds: the claiming `record`'s pid, then its reports directory (empty
/// for a workload's); `None` for what is not there yet (a claim being written).
fn claimant(text: &[u8]) -> (Option<u32>, Option<PathBuf>) {
    use std::os::unix::ffi::OsStrExt;
    let (pid, dir) = match text.iter().position(|&b| b == b'\n') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, &[][..]),
    };
    let pid = std::str::from_utf8(pid).ok().and_then(|p| p.parse().ok());
    let dir = (!dir.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(dir)));
    (pid, dir)
}

/// What two names of one trace file have in common: through a symbolic link its target
/// (where the recorder writes), in its folder's canonical path.
fn trace_key(path: &Path) -> PathBuf {
    let target = hrx_capture::replace::written_through(path).unwrap_or_else(|_| path.to_owned());
    match (target.parent(), target.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            dir.canonicalize()
                .map_or(target.clone(), |dir| dir.join(name))
        }
        _ => target,
    }
}

/// The existing files named in the reports of directory `dir`, sorted.
fn read_reports(dir: &Path) -> Vec<PathBuf> {
    let mut paths = read_reported(dir);
    paths.retain(|path| path.is_file());
    paths
}

/// The files named in the reports of directory `dir`, existing or not, sorted.
fn read_reported(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = read_reported_by_pid(dir)
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The reports of directory `dir`: each reporting process's pid and the file it named
/// ([`hrx_capture::reports_by_pid`]); none where `dir` cannot be read.
fn read_reported_by_pid(dir: &Path) -> Vec<(u32, PathBuf)> {
    hrx_capture::reports_by_pid(dir).unwrap_or_default()
}

/// Whether `output` holds a pattern that gives each process its own file.
pub fn per_process(output: &Path) -> bool {
    let text = output.to_string_lossy().replace("%%", "");
    text.contains("%p") || text.contains("%n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reports directories of `record`s no longer running go; this one's, one named
    /// without a pid, and anything else stay.
    #[test]
    fn only_the_reports_of_records_no_longer_running_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        // Past Linux's largest pid (2^22): never running.
        let gone = dir.path().join(format!("{REPORTS_PREFIX}4194305-abc"));
        let ours = dir.path().join(format!("{}xyz", reports_prefix()));
        let older = dir.path().join(format!("{REPORTS_PREFIX}QWErty"));
        let other = dir.path().join("hrx-trace-view");
        for d in [&gone, &ours, &older, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("123"), "t.hrxt\n").unwrap();
        }
        sweep_reports(dir.path());
        assert!(!gone.exists());
        assert!(ours.exists() && older.exists() && other.exists());
    }

    /// A trace another running `record` claimed is refused, naming that `record`, until a
    /// process of its recording reports writing it; a claim no `record` holds (left by one
    /// killed) is taken over; a claim is made where none stands, beside the trace, and goes
    /// when dropped; a `record` run by the claimant's program is not refused.
    #[test]
    fn a_claim_stands_until_its_recording_reports_the_trace() {
        let tmp = tempfile::tempdir().unwrap();
        let traces = tempfile::tempdir().unwrap();
        let trace = traces.path().join("t.hrxt");
        let beside = traces.path().join(".t.hrxt.claim");
        // A claim its `record` no longer holds, whose pid a process has now (this one):
        // left by a `record` killed before its program opened the trace.
        std::fs::write(&beside, format!("{}\n/gone", std::process::id())).unwrap();
        let ours = tmp.path().join(format!("{}ours", reports_prefix()));
        std::fs::create_dir(&ours).unwrap();
        let held = claim(Some(&ours), &trace).unwrap().expect("a claim");
        assert_eq!(
            claimant(&std::fs::read(&beside).unwrap()),
            (Some(std::process::id()), Some(ours.clone()))
        );
        // Another `record` (another reports directory, as a `TMPDIR` of its own gives) is
        // refused while the claim stands, a workload's too.
        let other = tempfile::tempdir().unwrap();
        for reports in [Some(other.path()), None] {
            let refused = claim(reports, &trace).unwrap_err().to_string();
            assert!(
                refused.contains("another recorder is writing it"),
                "{refused}"
            );
        }
        // Its program's process reported writing the trace: the claim gives way (the
        // trace's own lock refuses others while it is written).
        std::fs::write(ours.join("123"), trace.as_os_str().as_encoded_bytes()).unwrap();
        assert!(claim(Some(other.path()), &trace).unwrap().is_none());
        // No report: the claim file is not one, nor in the reports directory.
        assert_eq!(
            read_reported_by_pid(&ours),
            [(123, trace.clone())],
            "{ours:?}"
        );
        // Dropped, it is gone, and the next `record` claims the trace.
        drop(held);
        assert!(!beside.exists());
        let next = claim(Some(other.path()), &trace).unwrap();
        assert!(next.is_some() && beside.exists());
    }

    /// A `.NAME.claim` that is a symbolic or hard link to another file is not written
    /// through: that file keeps its contents (it was emptied and given the pid). The trace
    /// then has no claim, as in a folder where none can be made; a directory there alike.
    #[test]
    fn a_claim_is_never_written_through_a_link() {
        let traces = tempfile::tempdir().unwrap();
        let trace = traces.path().join("t.hrxt");
        let beside = traces.path().join(".t.hrxt.claim");
        let precious = traces.path().join("precious.txt");
        std::fs::write(&precious, "the user's file").unwrap();
        std::os::unix::fs::symlink(&precious, &beside).unwrap();
        assert!(claim(None, &trace).unwrap().is_none());
        assert_eq!(
            std::fs::read_to_string(&precious).unwrap(),
            "the user's file"
        );
        assert!(beside.is_symlink());
        // A link to no file: none is created where it points.
        let nowhere = traces.path().join("nowhere");
        std::fs::remove_file(&beside).unwrap();
        std::os::unix::fs::symlink(&nowhere, &beside).unwrap();
        assert!(claim(None, &trace).unwrap().is_none());
        assert!(!nowhere.exists());
        std::fs::remove_file(&beside).unwrap();
        std::fs::hard_link(&precious, &beside).unwrap();
        assert!(claim(None, &trace).unwrap().is_none());
        assert_eq!(
            std::fs::read_to_string(&precious).unwrap(),
            "the user's file"
        );
        std::fs::remove_file(&beside).unwrap();
        std::fs::create_dir(&beside).unwrap();
        assert!(claim(None, &trace).unwrap().is_none());
        assert!(beside.is_dir());
    }

    /// A trace whose name leaves no room for `.NAME.claim` (255 bytes at most) is claimed
    /// under a shortened name with a hash of the whole one: a second `record` is refused (it
    /// could not be claimed, and both ran); two such names that differ only at their end
    /// have two claims. The shortened name is cut between UTF-8 characters.
    #[test]
    fn a_trace_with_a_long_name_is_claimed() {
        let traces = tempfile::tempdir().unwrap();
        for stem in ["a".repeat(245), "\u{e9}".repeat(122)] {
            let trace = traces.path().join(format!("{stem}.hrxt"));
            let other = traces.path().join(format!("{stem}.hrxz"));
            let held = claim(None, &trace).unwrap().expect("a claim");
            let refused = claim(None, &trace).unwrap_err().to_string();
            assert!(
                refused.contains("another recorder is writing it"),
                "{refused}"
            );
            let beside = claim_path(&trace);
            let name = beside.file_name().unwrap();
            assert!(
                name.len() <= NAME_MAX_BYTES && name.to_str().is_some(),
                "{name:?}"
            );
            assert!(beside.exists() && name.to_str().unwrap().ends_with(".claim"));
            let next = claim(None, &other).unwrap();
            assert!(next.is_some());
            drop((held, next));
            assert!(!beside.exists());
        }
    }

    #[test]
    fn patterns_match_what_the_runtime_writes() {
        let p = Pattern::new("t%p.hrxt", "box");
        assert!(p.matches("t123.hrxt") && !p.matches("t.hrxt") && !p.matches("tx.hrxt"));
        let p = Pattern::new("run-%h-%n.hrxt", "box");
        assert!(p.matches("run-box-2.hrxt") && !p.matches("run-cat-2.hrxt"));
        let p = Pattern::new("t.hrxt", "box");
        assert!(p.matches("t.hrxt") && !p.matches("t.4.hrxt"));
        assert!(p.own().matches("t.4.hrxt") && !p.own().matches("t.hrxt"));
        assert!(Pattern::new("trace", "h").own().matches("trace.77"));
        assert!(Pattern::new("100%%.hrxt", "h").matches("100%.hrxt"));
    }
}
