//! A small program that uses hrx, for the tests of `hrx-trace record -- PROGRAM` (built by
//! `cargo test` with the other examples; the tests find it beside their own executable).
//!
//! `traced SUBMISSIONS [PAUSE_MS]`: creates a runtime on the software device (so `HRX_TRACE`
//! and the other variables apply), prints `started PID` and waits PAUSE_MS (so that several
//! processes overlap), then submits a one-fill graph SUBMISSIONS times, waiting for each, and
//! exits 0; the runtime closes its trace at exit. Errors print one line and exit 1.
//!
//! With `TRACED_TOGETHER=N` in the environment it then creates `opened.PID` in the current
//! directory and waits (before its pause) until N such files are there: N processes started
//! together all have their traces open before any goes on, however late a loaded machine
//! starts one (a pause alone let one end before another opened its trace). A process still
//! waiting after two minutes fails.
//!
//! With `TRACED_FORK=N` in the environment it then forks (without exec) a child that records
//! N counter samples named `child` (more than a thread's buffer holds for N of 300,000), then
//! exits with `exit(0)`, running the trace's close at exit as the parent's copy of it; the
//! parent waits for the child, submits once more and exits 0. With `TRACED_FORK_HOLD=1` too,
//! the child then creates `held.PID` in the current directory and waits to be killed (its
//! trace left open; after two minutes it fails).
//!
//! With `TRACED_FORK_CLOSED=1` it then closes its trace (`hrx::close_trace()`) and forks
//! (without exec) a child that creates a runtime of its own (which opens a trace from
//! `HRX_TRACE`), submits once and exits 0; the parent waits for the child and exits 0.
//!
//! With `TRACED_EXEC=open` (or `closed`) it then replaces itself with `exec` by `traced 1`
//! (`TRACED_EXEC` removed), its trace left open (or closed first with
//! `hrx::close_trace()`).

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() {
    if let Err(error) = run() {
        eprintln!("traced: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let submissions: u64 = args
        .first()
        .ok_or("usage: traced SUBMISSIONS [PAUSE_MS]")?
        .parse()?;
    let pause_ms: u64 = args.get(1).map_or(Ok(0), |a| a.parse())?;
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    println!("started {}", std::process::id());
    if let Some(together) = std::env::var_os("TRACED_TOGETHER") {
        let together: usize = together
            .to_str()
            .ok_or("TRACED_TOGETHER: not a number")?
            .parse()?;
        wait_for_the_others(together)?;
    }
    std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    let buffer = runtime.buffer(4096, Placement::GpuLocal)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x5A)?;
    let graph = graph.prepare()?;
    for _ in 0..submissions {
        graph.submit()?.wait()?;
    }
    if let Some(samples) = std::env::var_os("TRACED_FORK") {
        let samples: u64 = samples
            .to_str()
            .ok_or("TRACED_FORK: not a number")?
            .parse()?;
        fork_and_wait(|| {
            for i in 0..samples {
                hrx::annotate::counter("child", i as f64);
            }
            if std::env::var_os("TRACED_FORK_HOLD").is_some() {
                std::fs::write(format!("held.{}", std::process::id()), "")?;
                std::thread::sleep(std::time::Duration::from_secs(120));
                return Err("held for two minutes and not killed".into());
            }
            Ok(())
        })?;
        graph.submit()?.wait()?;
    }
    if std::env::var_os("TRACED_FORK_CLOSED").is_some() {
        hrx::close_trace()?;
        fork_and_wait(forked_child_records)?;
    }
    if let Some(exec) = std::env::var_os("TRACED_EXEC") {
        use std::os::unix::process::CommandExt;
        if exec == "closed" {
            hrx::close_trace()?;
        }
        let error = std::process::Command::new(std::env::current_exe()?)
            .arg("1")
            .env_remove("TRACED_EXEC")
            .exec();
        return Err(error.into());
    }
    Ok(())
}

/// `TRACED_TOGETHER`: notes this process's trace open (`opened.PID`) and waits until
/// `together` processes have.
fn wait_for_the_others(together: usize) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::write(format!("opened.{}", std::process::id()), "")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let opened = std::fs::read_dir(".")?
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("opened."))
            })
            .count();
        if opened >= together {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!("{opened} of {together} processes opened their traces").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `TRACED_FORK_CLOSED`'s child: a runtime of its own, one submission, its trace closed.
fn forked_child_records() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    println!("child {}", std::process::id());
    let buffer = runtime.buffer(4096, Placement::GpuLocal)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x3C)?;
    graph.prepare()?.submit()?.wait()?;
    drop(runtime);
    hrx::close_trace()?;
    Ok(())
}

/// Forks (without exec) a child that runs `child` and exits with `exit` (0, or 1 after
/// printing its error), and waits for it.
///
/// # Errors
///
/// The fork's error, or the child's failure.
fn fork_and_wait(
    child: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: the child runs only this process's own Rust code, then exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    if pid == 0 {
        let code = match child() {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("traced (forked child): {error}");
                1
            }
        };
        std::process::exit(code);
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid
        || !libc::WIFEXITED(status)
        || libc::WEXITSTATUS(status) != 0
    {
        return Err(format!("the forked child failed (wait status {status})").into());
    }
    Ok(())
}
