//! A traced program that does what daemons and thread-heavy servers do while recording, for
//! the reliability tests of `hrx-trace record -- PROGRAM` (built by `cargo test` with the
//! other examples; the tests find it beside their own executable).
//!
//! `daemonish MODE [N]`: creates a runtime on the software device (so `HRX_TRACE` applies),
//! submits a one-fill graph once and marks `before`, then by MODE:
//!
//! - `close-fds`: closes every descriptor from 3 to 1023 (as a daemon does), opens
//!   `daemonish-log.txt` in the working directory, writes `log line` to it, submits 10
//!   times, flushes the trace (the file gets its number: the recorder must not write there)
//!   and writes `log line 2`;
//! - `close-fds-loop N`: N times, closes every descriptor from 3 to 1023, submits and
//!   flushes the trace;
//! - `close-all`: closes every descriptor from 0 to 1023, standard streams included, opens
//!   the log (which takes number 0), writes `log line`, submits, flushes the trace, prints a
//!   line on standard output and on standard error, and writes `log line 2`;
//! - `dup2-fds`: `dup2`s `/dev/null` (read-only) over every descriptor from 3 to 1023,
//!   submits once and flushes the trace;
//! - `chdir DIR`: changes the working directory to DIR;
//! - `threads N`: starts N short-lived threads one after another, each recording a range
//!   `work` and a marker `tick`, joined before the next starts, then prints `peak resident
//!   N kB` and `peak virtual N kB` (the process's peak resident and virtual memory,
//!   `VmHWM` and `VmPeak`);
//! - `exit-thread`: starts 4 threads recording ranges in a loop, then one thread calls
//!   `std::process::exit(0)`;
//! - `underscore-exit`: starts 4 threads recording in a loop, then calls `libc::_exit(0)`;
//! - `return`: starts 4 threads recording in a loop, then returns from `main`;
//! - `sleep N`: sleeps N ms between two submissions (SIGSTOP it meanwhile);
//! - `wait-line`: flushes the trace, prints `waiting` and reads a line from standard input.
//!
//! Then (for the modes that go on) submits once more, marks `after`, prints `done` and exits
//! 0. Errors print one line and exit 1.

use hrx::{Placement, Runtime, RuntimeOptions};
use std::io::Write;

fn main() {
    if let Err(error) = run() {
        eprintln!("daemonish: {error}");
        std::process::exit(1);
    }
}

/// Writes what the process's recorder holds now (`hrx-trace record` set `HRX_TRACE`).
fn flush() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(recorder) = hrx_capture::current() {
        recorder.flush()?;
    }
    Ok(())
}

fn spin_recorders(count: usize) {
    for _ in 0..count {
        std::thread::spawn(|| {
            loop {
                let _r = hrx::annotate::range("spin");
                hrx::annotate::marker("spin tick");
            }
        });
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().ok_or("usage: daemonish MODE [N]")?.clone();
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let buffer = runtime.buffer(4096, Placement::GpuLocal)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0x5A)?;
    let graph = graph.prepare()?;
    graph.submit()?.wait()?;
    hrx::annotate::marker("before");
    match mode.as_str() {
        "close-fds" => {
            for fd in 3..1024 {
                // SAFETY: closing descriptors is what the mode tests.
                unsafe { libc::close(fd) };
            }
            let mut log = std::fs::File::create("daemonish-log.txt")?;
            log.write_all(b"log line\n")?;
            for _ in 0..10 {
                graph.submit()?.wait()?;
            }
            // Writes what was recorded now, while the log holds the trace's old number.
            flush()?;
            log.write_all(b"log line 2\n")?;
        }
        "close-fds-loop" => {
            let rounds: u32 = args.get(1).ok_or("close-fds-loop N")?.parse()?;
            for _ in 0..rounds {
                for fd in 3..1024 {
                    // SAFETY: closing descriptors is what the mode tests.
                    unsafe { libc::close(fd) };
                }
                graph.submit()?.wait()?;
                flush()?;
            }
        }
        "close-all" => {
            for fd in 0..1024 {
                // SAFETY: closing descriptors is what the mode tests.
                unsafe { libc::close(fd) };
            }
            let mut log = std::fs::File::create("daemonish-log.txt")?;
            log.write_all(b"log line\n")?;
            graph.submit()?.wait()?;
            flush()?;
            // To the closed standard streams, or to whatever file took their numbers.
            println!("printed after closing every descriptor");
            eprintln!("printed after closing every descriptor");
            log.write_all(b"log line 2\n")?;
        }
        "dup2-fds" => {
            let null = std::fs::File::open("/dev/null")?;
            use std::os::fd::AsRawFd;
            for fd in 3..1024 {
                if fd != null.as_raw_fd() {
                    // SAFETY: as above.
                    unsafe { libc::dup2(null.as_raw_fd(), fd) };
                }
            }
            graph.submit()?.wait()?;
            flush()?;
        }
        "chdir" => {
            std::env::set_current_dir(args.get(1).ok_or("chdir DIR")?)?;
        }
        "threads" => {
            let n: usize = args.get(1).ok_or("threads N")?.parse()?;
            for _ in 0..n {
                std::thread::spawn(|| {
                    let _r = hrx::annotate::range("work");
                    hrx::annotate::marker("tick");
                })
                .join()
                .map_err(|_| "a thread panicked")?;
            }
            let status = std::fs::read_to_string("/proc/self/status")?;
            let field = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::trim)
                    .ok_or(format!("no {key} in /proc/self/status"))
            };
            println!("peak resident {}", field("VmHWM:")?);
            println!("peak virtual {}", field("VmPeak:")?);
        }
        "exit-thread" => {
            spin_recorders(4);
            let _ = std::thread::spawn(|| std::process::exit(0)).join();
            loop {
                std::thread::park();
            }
        }
        "underscore-exit" => {
            spin_recorders(4);
            // SAFETY: ends the process without running atexit.
            unsafe { libc::_exit(0) };
        }
        "return" => {
            spin_recorders(4);
            return Ok(());
        }
        "wait-line" => {
            flush()?;
            println!("waiting");
            std::io::stdout().flush()?;
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
        }
        "sleep" => {
            let n: u64 = args.get(1).ok_or("sleep N")?.parse()?;
            std::thread::sleep(std::time::Duration::from_millis(n));
        }
        other => return Err(format!("unknown mode {other:?}").into()),
    }
    graph.submit()?.wait()?;
    hrx::annotate::marker("after");
    println!("done");
    Ok(())
}
