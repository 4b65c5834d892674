//! Files hrx-trace replaces whole, written beside them and renamed onto them (a replay
//! baseline, a trim, an export, a recording over an earlier trace): each keeps the earlier
//! file's permission bits, a file the user may not write is refused, and a name of up to
//! 255 bytes (a file name's limit) is written, the temporary name beside it fitting too.

use crate::util::{assert_error, code, partial_files, record_hazards, run, stderr, stdout};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The commands that replace `name` in a folder holding the trace `h.hrxt`: a baseline
/// added to and saved, a trim, an export, a recording.
fn replacing(name: &str) -> [(&'static str, Vec<String>); 5] {
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    [
        (
            "--add-to-baseline",
            args(&[
                "replay",
                "h.hrxt",
                "--repeat",
                "1",
                "--add-to-baseline",
                name,
            ]),
        ),
        (
            "--save-baseline",
            args(&["replay", "h.hrxt", "--repeat", "1", "--save-baseline", name]),
        ),
        (
            "trim",
            args(&["trim", "h.hrxt", "-o", name, "--submissions", "1..2"]),
        ),
        (
            "export",
            args(&["export", "h.hrxt", "--format", "chrome", "-o", name]),
        ),
        (
            "record",
            args(&["record", "--workload", "hazards", "-o", name]),
        ),
    ]
}

/// The file each of [`replacing`]'s commands writes (a baseline, a trace, an export).
fn file_for(what: &str) -> &'static str {
    match what {
        "--add-to-baseline" | "--save-baseline" => "b.json",
        "export" => "e.json",
        _ => "t.hrxt",
    }
}

/// A file replaced keeps the permission bits it had, as `record` kept them: a baseline
/// kept private (`chmod 600`) was rewritten readable by everyone (0644), as were trims and
/// exports (a break-it pass). Bits the umask would take away are kept too (0660).
#[test]
fn a_replaced_file_keeps_its_permission_bits() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for mode in [0o600, 0o660] {
        for (what, args) in replacing("NAME") {
            let file = file_for(what);
            let args: Vec<&str> = (args.iter())
                .map(|a| if a == "NAME" { file } else { a.as_str() })
                .collect();
            // The first write makes the file; the second replaces it.
            if !dir.path().join(file).exists() {
                let out = run(dir.path(), &args);
                assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
            }
            let path = dir.path().join(file);
            set_mode(&path, mode);
            let out = run(dir.path(), &args);
            assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
            assert_eq!(mode_of(&path), mode, "{what}: the mode was {mode:o}");
        }
    }
    assert_eq!(partial_files(dir.path()), Vec::<String>::new());
}

/// Whether this process runs as root (who writes a write-protected file).
pub(crate) fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs hrx-trace with `args` in `dir` as the user `nobody` where the test runs as root
/// (root may write any file), else as this user.
pub(crate) fn run_unprivileged(dir: &Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut command = crate::util::hrx_trace(dir);
    command.args(args);
    if root() {
        command.uid(65534).gid(65534);
    }
    command.output().unwrap()
}

/// A folder the user who runs [`run_unprivileged`] owns, holding the trace `h.hrxt`.
fn unprivileged_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    if root() {
        std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(dir.path().join("h.hrxt"), Some(65534), Some(65534)).unwrap();
    }
    dir
}

/// A file the user may not write is not replaced: a `chmod 444` baseline (trim, export,
/// trace) in a writable folder was renamed over with exit 0 and came back writable (the
/// rename asks only the folder's permission; `record` alone refused). Refused in one line
/// naming the file, exit 2, the file untouched; `--add-to-baseline` before it replays.
#[test]
fn a_write_protected_file_is_not_replaced() {
    let dir = unprivileged_folder();
    // Each file made by the user, then write-protected.
    for (what, args) in replacing("NAME") {
        let file = file_for(what);
        let args: Vec<&str> = (args.iter())
            .map(|a| if a == "NAME" { file } else { a.as_str() })
            .collect();
        let path = dir.path().join(file);
        if !path.exists() {
            let out = run_unprivileged(dir.path(), &args);
            assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        }
        set_mode(&path, 0o444);
        let before = std::fs::read(&path).unwrap();
        let out = run_unprivileged(dir.path(), &args);
        assert_error(&out, file);
        let err = stderr(&out);
        assert!(err.contains("Permission denied"), "{what}: {err}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{what}: replaced");
        assert_eq!(mode_of(&path), 0o444, "{what}");
        if what == "--add-to-baseline" {
            assert_eq!(stdout(&out), "", "replayed before it was refused");
        }
        set_mode(&path, 0o644);
    }
    assert_eq!(partial_files(dir.path()), Vec::<String>::new());
}

/// A baseline the user may not read: `--add-to-baseline` (and `--save-baseline`) say the
/// read's error, as `--baseline` does; it said "refusing to overwrite it: it is not a
/// replay baseline", of a baseline.
#[test]
fn an_unreadable_baseline_says_why_it_cannot_be_read() {
    let dir = unprivileged_folder();
    let out = run_unprivileged(
        dir.path(),
        &[
            "replay",
            "h.hrxt",
            "--repeat",
            "1",
            "--save-baseline",
            "b.json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = dir.path().join("b.json");
    set_mode(&path, 0o000);
    let before = std::fs::read(&path).unwrap();
    for option in ["--baseline", "--add-to-baseline", "--save-baseline"] {
        let out = run_unprivileged(dir.path(), &["replay", "h.hrxt", option, "b.json"]);
        assert_error(&out, "b.json: cannot read it: Permission denied");
        assert!(!stderr(&out).contains("not a replay baseline"), "{option}");
        assert_eq!(stdout(&out), "", "{option}: replayed before it was refused");
    }
    set_mode(&path, 0o644);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// A name of 250 bytes (legal: a file name holds up to 255) is written, and written again
/// over itself: the temporary names beside it (`NAME.PID.partial`, `.NAME.PID.new`) passed
/// the limit, and each write failed ("File name too long") at its first write, or a
/// recording over the same name did.
#[test]
fn a_name_of_250_bytes_is_written_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    record_hazards(dir.path(), "h.hrxt");
    for (what, args) in replacing("NAME") {
        let extension = if file_for(what).ends_with(".json") {
            ".json"
        } else {
            ".hrxt"
        };
        let name = "n".repeat(250 - extension.len()) + extension;
        assert_eq!(name.len(), 250);
        let args: Vec<&str> = (args.iter())
            .map(|a| {
                if a == "NAME" {
                    name.as_str()
                } else {
                    a.as_str()
                }
            })
            .collect();
        for time in ["written", "replaced"] {
            let out = run(dir.path(), &args);
            assert_eq!(code(&out), 0, "{what} {time}: {}", stderr(&out));
            assert!(dir.path().join(&name).is_file(), "{what} {time}");
        }
        std::fs::remove_file(dir.path().join(&name)).unwrap();
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["h.hrxt"], "temporary files left");
}

/// A recording over an earlier trace removes the hidden new files (`.NAME.PID.new`) that
/// recorders of it killed before their rename left, whatever process id a name holds (here
/// this test's own, a live process, and one no process has), deciding by the file's lock:
/// one a live writer holds is kept, as are other traces' new files and the earlier trace's
/// own name. A signal in a traced program's first milliseconds (before its runtime's
/// handlers) left an empty hidden file at each such start, which nothing removed (break-it
/// D9). Both ways a recording is made: `record --workload` (hrx-trace's own recorder) and
/// `record -- PROGRAM` (the program's runtime).
#[test]
fn a_recording_removes_the_new_files_killed_recorders_left() {
    let dir = tempfile::tempdir().unwrap();
    let traced = crate::util::example("traced");
    let runs: [Vec<&std::ffi::OsStr>; 2] = [
        ["record", "--workload", "hazards", "-o", "t.hrxt"]
            .map(std::ffi::OsStr::new)
            .to_vec(),
        vec![
            "record".as_ref(),
            "-o".as_ref(),
            "t.hrxt".as_ref(),
            "--".as_ref(),
            traced.as_os_str(),
            "3".as_ref(),
        ],
    ];
    record_hazards(dir.path(), "t.hrxt");
    for args in runs {
        let left: Vec<String> = [std::process::id(), 1, 4_000_000]
            .iter()
            .map(|pid| format!(".t.hrxt.{pid}.new"))
            .collect();
        for name in &left {
            // As a killed recorder leaves it: empty, or a first block, its lock gone.
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        // A live writer's (its lock held), another trace's, and one of no process id.
        let held = std::fs::File::create(dir.path().join(".t.hrxt.77.new")).unwrap();
        held.lock().unwrap();
        let kept = [".t.hrxt.77.new", ".u.hrxt.5.new", ".t.hrxt.new"];
        for name in &kept[1..] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let out = crate::util::hrx_trace(dir.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        for name in &left {
            assert!(!names.contains(name), "{args:?}: {name} left: {names:?}");
        }
        for name in kept {
            assert!(names.iter().any(|n| n == name), "{args:?}: {name} removed");
        }
        let info = stdout(&run(dir.path(), &["info", "t.hrxt"]));
        assert!(info.contains("whole"), "{args:?}: {info}");
        drop(held);
        for name in kept {
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
    }
}
