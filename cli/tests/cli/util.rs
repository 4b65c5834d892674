//! Running the binary and reading its output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The photograph the pipeline tests use.
pub const PHOTO: &str = "/usr/share/backgrounds/mate/nature/FreshFlower.jpg";

/// `hrx-trace` with a clean environment for tracing, run in `dir`.
pub fn hrx_trace(dir: &Path) -> Command {
    cleaned(Command::new(env!("CARGO_BIN_EXE_hrx-trace")), dir)
}

/// `hrx-trace` as [`hrx_trace`], killed (exit 137) if it runs past `seconds`: for a test
/// whose failure would be a wait for ever.
pub fn hrx_trace_bounded(dir: &Path, seconds: u32) -> Command {
    let mut command = Command::new("timeout");
    command
        .args(["-s", "KILL", &seconds.to_string()])
        .arg(env!("CARGO_BIN_EXE_hrx-trace"));
    cleaned(command, dir)
}

/// `command` run in `dir` with a clean environment for tracing and default signals.
fn cleaned(mut command: Command, dir: &Path) -> Command {
    command
        .current_dir(dir)
        .env_remove("HRX_TRACE")
        .env_remove("HRX_FAULT")
        .env_remove("HRX_TRACE_CONTENTS")
        .env_remove("HRX_TRACE_KERNELS")
        .env_remove("HRX_SIM_MEMORY")
        .env_remove("HRX_HUGE_PAGES")
        .env_remove(hrx_capture::clock::CLOCK_ENV);
    // SIGINT, SIGQUIT, SIGHUP and SIGTERM at their default actions, whatever the test
    // runner inherited: a shell starts a background job (`cargo test &`) with SIGINT and
    // SIGQUIT ignored, `nohup cargo test` SIGHUP, `hrx-trace` keeps a signal it was started
    // with ignored (as `nohup` asks), and a test interrupting a recording then waited on it
    // forever, or a trim sent SIGHUP finished and exited 0 (a fresh user's `nohup` run).
    // SAFETY: pre_exec runs in the child before exec; signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    command
}

/// A `sh -c` script running `hrx-trace ARGS` under a 2 KiB file size limit (dash's
/// `ulimit -f` counts 512-byte blocks) with SIGXFSZ ignored, so that writes past it fail with
/// EFBIG, as on a full disk.
pub fn size_limited(args: &str) -> String {
    format!(
        "ulimit -f 4; trap '' XFSZ; {} {args}",
        env!("CARGO_BIN_EXE_hrx-trace")
    )
}

/// Runs `hrx-trace ARGS` in `dir` with its standard output closed before it can write.
pub fn run_into_closed_stdout(dir: &Path, args: &[&str]) -> Output {
    let mut child = hrx_trace(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hrx-trace");
    drop(child.stdout.take());
    child.wait_with_output().expect("wait for hrx-trace")
}

/// Runs `hrx-trace ARGS` in `dir` under an address-space limit (`ulimit -v`, KiB): an
/// allocation past it fails, which aborts the process.
pub fn run_memory_limited(dir: &Path, limit_kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .current_dir(dir)
        .env_remove("HRX_TRACE")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hrx-trace"))
        .args(args)
        .output()
        .expect("run hrx-trace")
}

/// `/dev/full` opened for writing (every write fails with ENOSPC), or `None` after printing
/// why the test is skipped.
pub fn dev_full() -> Option<std::fs::File> {
    match std::fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(file) => Some(file),
        Err(error) => {
            println!("skipped: /dev/full: {error}");
            None
        }
    }
}

/// The example program `name` (`cli/examples/NAME.rs`), beside this test executable
/// (`target/debug/examples/NAME`), which `cargo test -p hrx-trace` builds.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "{path:?} is missing: `cargo test -p hrx-trace` builds it (with `--test cli` alone, \
         run `cargo build -p hrx-trace --example {name}` first)"
    );
    path
}

/// The count `info` lists for record kind `kind` (0 when it lists none).
pub fn info_count(info: &str, kind: &str) -> u64 {
    info.lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(kind))
                .then(|| words.next().and_then(|n| n.parse().ok()))
                .flatten()
        })
        .unwrap_or(0)
}

/// Runs `hrx-trace ARGS` in `dir`.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    hrx_trace(dir).args(args).output().expect("run hrx-trace")
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The exit code (panics on a signal).
pub fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

/// The photograph, or `None` after printing why the test is skipped.
pub fn photo() -> Option<PathBuf> {
    let path = PathBuf::from(PHOTO);
    if path.is_file() {
        Some(path)
    } else {
        println!("skipped: {PHOTO} is absent (install the Debian package mate-backgrounds)");
        None
    }
}

/// The value of the summary or info line `key` (`records      148 (17 kinds)` -> `148 (17
/// kinds)`).
pub fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(key)
                .filter(|rest| rest.starts_with(' '))
                .map(str::trim)
        })
        .unwrap_or_else(|| panic!("no {key:?} line in:\n{text}"))
}

/// The first number of the line `key`.
pub fn number(text: &str, key: &str) -> u64 {
    let value = field(text, key);
    value
        .split(|c: char| !c.is_ascii_digit())
        .find(|part| !part.is_empty())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {key:?} line {value:?}"))
}

/// Asserts an error exit: code 2, one `error:` line, optionally one `hint:` line, no panic.
pub fn assert_error(output: &Output, contains: &str) {
    let err = stderr(output);
    assert_eq!(code(output), 2, "stderr: {err}");
    let lines: Vec<_> = err.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.starts_with("error: ")),
        "first line is not `error: ...`: {err}"
    );
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: ")),
        "more than an error and a hint: {err}"
    );
    assert!(err.contains(contains), "{contains:?} not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Records the `hazards` workload into `dir/name`; panics unless it exits 0.
pub fn record_hazards(dir: &Path, name: &str) {
    let out = run(dir, &["record", "--workload", "hazards", "-o", name]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// Records the `crashing` example's `segv` into `dir/name`: a trace cut short (never
/// closed) whose one submission has no outcome and which replays, as far as it goes.
pub fn record_crashed(dir: &Path, name: &str) {
    let out = hrx_trace(dir)
        .args(["record", "-o", name, "--"])
        .arg(example("crashing"))
        .arg("segv")
        .output()
        .expect("run hrx-trace");
    assert_eq!(code(&out), 128 + libc::SIGSEGV, "{}", stderr(&out));
}

/// Records the `hazards` workload into `dir/whole.hrxt` and trims its submissions 2..4 into
/// `dir/t.hrxt`; panics unless both exit 0.
pub fn record_hazards_trimmed(dir: &Path) {
    record_hazards(dir, "whole.hrxt");
    let trim = run(
        dir,
        &[
            "trim",
            "whole.hrxt",
            "-o",
            "t.hrxt",
            "--submissions",
            "2..4",
        ],
    );
    assert_eq!(code(&trim), 0, "{}", stderr(&trim));
}

/// Records the pipeline over the photograph into `dir/name`; returns the output.
pub fn record_pipeline(dir: &Path, name: &str, photo: &Path) -> Output {
    run(
        dir,
        &[
            "record",
            "-o",
            name,
            "--workload",
            "pipeline",
            "--input",
            photo.to_str().expect("utf-8 path"),
            "--frames",
            "3",
            "--max-width",
            "320",
        ],
    )
}

/// Records `cli/examples/regions.rs` with `args` (`N [SUBMISSIONS [PIECES]]`) into
/// `dir/name` (`record -o NAME -- regions ARGS`, `-q` where `quiet`).
pub fn record_regions(dir: &Path, name: &str, args: &[&str], quiet: bool) -> Output {
    let regions = example("regions");
    let mut command = vec!["record"];
    if quiet {
        command.push("-q");
    }
    command.extend(["-o", name, "--", regions.to_str().expect("utf-8 path")]);
    command.extend(args);
    run(dir, &command)
}

/// Records the `faults` workload on `photo` at 160 pixels wide into `dir/name`; panics
/// unless it exits 0.
pub fn record_faults(dir: &Path, name: &str, photo: &Path) {
    let out = run(
        dir,
        &[
            "record",
            "--workload",
            "faults",
            "--input",
            photo.to_str().expect("utf-8 path"),
            "--max-width",
            "160",
            "-o",
            name,
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// Writes `records` (a synthetic trace, `hrx_analysis::synthetic`) to a trace at `path`
/// through the recorder, as `hrx-analysis`'s gen-trace does: the recorder writes its own
/// session start and end.
pub fn write_records(path: &Path, records: impl Iterator<Item = hrx_capture::Record>) {
    write_records_ending(path, records, false);
}

/// [`write_records`]; `apart`: the records flushed before the close, so that the session's
/// end is the last records block alone (a test cuts it off to stand for a killed recording:
/// a file cut after its session's end was closed by its recorder).
pub fn write_records_ending(
    path: &Path,
    records: impl Iterator<Item = hrx_capture::Record>,
    apart: bool,
) {
    use hrx_capture::{Record, Recorder, RecorderOptions};
    let options = RecorderOptions {
        backend: "sim".into(),
        device: "synthetic".into(),
        // The generator outruns the writer thread: wait for room instead of dropping.
        thread_buffer_bytes: 16 << 20,
        full_buffer_wait: std::time::Duration::from_secs(600),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(path, options).unwrap();
    for record in records {
        if !matches!(record, Record::SessionStart(_) | Record::SessionEnd(_)) {
            recorder.record(&record);
        }
    }
    if apart {
        recorder.flush().unwrap();
    }
    assert_eq!(recorder.close().unwrap().dropped_records, 0);
}

/// Where the last records block of the trace `bytes` starts (a closed trace's: its session's
/// end).
pub fn last_records_block(bytes: &[u8]) -> usize {
    let trace = hrx_capture::MappedTrace::from_vec(bytes.to_vec()).unwrap();
    (trace.blocks().iter())
        .rfind(|b| b.header.kind == hrx_capture::format::BlockKind::RECORDS)
        .unwrap()
        .offset as usize
}

/// Writes `dir/to`: the trace `dir/from` as if recorded on a loaded host, its runtimes'
/// `hrx: host load per CPU` samples set to `load`.
pub fn loaded_copy(dir: &Path, from: &str, to: &str, load: f64) {
    use hrx_capture::Record;
    use hrx_capture::schema::HOST_LOAD_COUNTER;
    let trace = hrx_capture::read_all(dir.join(from)).unwrap();
    let (mut name, mut samples) = (None, 0);
    let records: Vec<Record> = trace
        .records
        .into_iter()
        .map(|mut record| {
            match &mut record {
                Record::AnnotationName(n) if n.text == HOST_LOAD_COUNTER => name = Some(n.name),
                Record::CounterSample(c) if Some(c.name) == name => {
                    c.value.0 = load;
                    samples += 1;
                }
                _ => {}
            }
            record
        })
        .collect();
    assert!(samples > 0, "{from} holds no host load sample");
    write_records(&dir.join(to), records.into_iter());
}

/// The `.partial` files left in `dir` (a trim's or an export's temporary output).
pub fn partial_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".partial"))
        .collect()
}

/// Sends `signal` to `pid` twice "at once", as coreutils `timeout` does (to its child, then
/// to the child's process group): 2 ms apart, so that the second is not merged with the
/// first while pending. Whether both went within 100 ms: `record -- PROGRAM` counts a signal
/// within 200 ms of the last one it handled as the same delivery (`record --workload` folds
/// every later signal into its first stop), and a loaded machine that deschedules this
/// thread between the two sends two signals a person could have sent, which the caller does
/// not judge (it tries again).
pub fn send_twice_at_once(pid: u32, signal: libc::c_int) -> bool {
    let start = std::time::Instant::now();
    for _ in 0..2 {
        // SAFETY: kill has no memory preconditions; the pid is the caller's child.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    start.elapsed() < std::time::Duration::from_millis(100)
}

/// Stops `pid`, our child not yet reaped, with SIGSTOP and waits until it has stopped or
/// exited (`kill` returns before the child stops): whether it stopped. WNOWAIT leaves either
/// state to be reaped by the caller.
pub fn stop(pid: libc::pid_t) -> bool {
    // SAFETY: kill has no memory preconditions; `pid` is our child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // SAFETY: a zeroed siginfo_t is valid to be written by waitid; `pid` is our child.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WSTOPPED | libc::WEXITED | libc::WNOWAIT;
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) == 0
            && info.si_code == libc::CLD_STOPPED
    }
}

/// Waits until `waits(pid)` says `child` waits (for a lock), `what` naming that wait: a
/// liveness limit of two minutes, not a timing, where `waits` cannot see it wait (its `/proc`
/// file unreadable) it would wait for ever. Panics with `ended` and its standard error where
/// it ends first.
pub fn wait_until_it_waits(
    child: &mut std::process::Child,
    waits: impl Fn(u32) -> bool,
    what: &str,
    ended: &str,
) {
    use std::io::Read;
    let pid = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !waits(pid) {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{pid} never showed {what}");
        }
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                stderr.read_to_string(&mut err).unwrap();
            }
            panic!("{ended}: {err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Sends `signal` to `child` once it handles it: once its `/proc` status lists a handler
/// for `signal` (`SigCgt`), the child is stopped (SIGSTOP), sent `signal` and continued, so
/// that the signal meets the handler however the machine schedules this thread. `false`
/// where it never handled `signal` while it ran (it exited first, or had let go of its
/// handler by the time it stopped: its work was done), the signal not sent.
pub fn signal_once_handled(child: &mut std::process::Child, signal: libc::c_int) -> bool {
    signals_together_once_handled(child, &[signal])
}

/// [`signal_once_handled`] for several signals sent together: once the child handles them
/// all, it is stopped, sent each in turn and continued, so that they are all pending when it
/// runs again, as signals sent together by two senders may be (a supervisor's SIGTERM and a
/// closed terminal's SIGHUP).
pub fn signals_together_once_handled(
    child: &mut std::process::Child,
    signals: &[libc::c_int],
) -> bool {
    let pid = child.id() as libc::pid_t;
    let handled = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| signals.iter().all(|s| mask & (1 << (s - 1)) != 0))
    };
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if handled() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let caught = stop(pid) && handled();
    // SAFETY: as above; the signal waits for SIGCONT.
    unsafe {
        if caught {
            for &signal in signals {
                libc::kill(pid, signal);
            }
        }
        libc::kill(pid, libc::SIGCONT);
    }
    caught
}

/// Whether a thread of `pid` is blocked in `write(fd, ...)` (its `/proc/PID/task/TID/syscall`
/// says `write` with `fd` as its first argument; where that file is not ours to read, its
/// `wchan` says `pipe_write`): a write to a full pipe that nobody reads waits there until
/// the pipe is read.
pub fn blocked_writing(pid: u32, fd: u32) -> bool {
    in_call(pid, &format!("{} {fd:#x} ", libc::SYS_write), "pipe_write")
}

/// Whether a thread of `pid` waits in `poll` or `ppoll` (as [`blocked_writing`] tells it;
/// `wchan` `do_sys_poll`).
pub fn blocked_polling(pid: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    let poll = in_call(pid, &format!("{} ", libc::SYS_poll), "poll");
    #[cfg(not(target_arch = "x86_64"))]
    let poll = false;
    poll || in_call(pid, &format!("{} ", libc::SYS_ppoll), "poll")
}

/// Whether a thread of `pid` is in the system call `syscall` begins with, or, where that
/// file cannot be read (another user's ptrace rules), whose `wchan` contains `wchan`.
fn in_call(pid: u32, syscall: &str, wchan: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        match std::fs::read_to_string(task.path().join("syscall")) {
            Ok(call) => call.starts_with(syscall),
            Err(_) => {
                std::fs::read_to_string(task.path().join("wchan")).is_ok_and(|w| w.contains(wchan))
            }
        }
    })
}

/// A pipe of one page (4096 bytes, `F_SETPIPE_SZ`) holding `held` bytes already, its read
/// end and its write end: a write to it that does not fit in what is left waits until it
/// is read (the kernel writes up to a page's worth at once, nothing of a short write that
/// does not fit).
pub fn small_pipe(held: &[u8]) -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array, which we own from then on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both are open descriptors that nothing else owns.
    let (read, write) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    // SAFETY: fcntl on a descriptor we own.
    assert_eq!(
        unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) },
        4096
    );
    let mut writer = std::fs::File::from(write.try_clone().unwrap());
    writer.write_all(held).unwrap();
    (read, write)
}

/// `child`'s exit status once it ended, or `None` where it still ran after a minute (a hang:
/// then killed and reaped). A liveness limit, not a measurement.
pub fn ended_within_a_minute(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Sends SIGTERM to `child` once `waits` shows it waiting ([`wait_until_it_waits`], whose
/// `what` and `ended` it takes).
pub fn terminate_once_it_waits(
    child: &mut std::process::Child,
    waits: impl Fn(u32) -> bool,
    what: &str,
    ended: &str,
) {
    wait_until_it_waits(child, waits, what, ended);
    // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
}
