//! A program that uses hrx and then dies, for the crash-safety tests of `hrx-trace record`
//! (built by `cargo test` with the other examples; the tests find it beside their own
//! executable).
//!
//! `crashing MODE`: creates a runtime on the software device (so `HRX_TRACE` applies), loads
//! a kernel and submits one graph: a fill, the kernel (`iota`), then a host callback reading
//! what the kernel wrote. Inside the callback, the program prints `running PID` and then, by
//! MODE:
//!
//! - `abort`: aborts (SIGABRT) in the callback;
//! - `segv`: waits while the main thread, right after the submit returned and the callback
//!   began, writes to an unmapped address (SIGSEGV);
//! - `hang`: hangs until it is killed.
//!
//! Two more modes, for a program that survives signals (no callback; each submission a
//! fill, waited for):
//!
//! - `survive`: installs its own SIGSEGV handler before the runtime (as JVMs and wasm
//!   runtimes do: a fault on its guard page is expected and fixed, any other fault puts the
//!   default action back and repeats), submits 5 times, survives a fault on its guard page
//!   (prints `survived PID`), submits 7 more times, then writes to an unmapped address: a
//!   real crash, which the recorder must still flush, after all 12 submissions;
//! - `sent`: submits once, sends itself SIGSEGV and SIGBUS with `kill` (as `kill -SEGV`
//!   does: Rust's own handler returns from a signal that is not a stack overflow, and the
//!   program runs on), prints `survived PID`, submits once more and hangs until it is
//!   killed.
//!
//! Everything the runtime recorded before the signal must be in the trace: the submit, the
//! graph, the kernel, and the callback's region as started and never finished. The records
//! reach the file only through the fatal-signal flush: the program dies well within the
//! writer's 100 ms period after the submit (and `hang` is killed by a signal the recorder
//! handles).

use hrx::{Access, GpuAccess, Placement, Runtime, RuntimeOptions};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn main() {
    if let Err(error) = run() {
        eprintln!("crashing: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args()
        .nth(1)
        .ok_or("usage: crashing abort|segv|hang|survive|sent")?;
    if matches!(mode.as_str(), "survive" | "sent") {
        return survive(&mode);
    }
    if !matches!(mode.as_str(), "abort" | "segv" | "hang") {
        return Err(
            format!("unknown mode {mode:?}: expected abort, segv, hang, survive or sent").into(),
        );
    }
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let n = 1024;
    let buffer = runtime.buffer(n * 4, Placement::HostVisible)?;
    let iota = runtime.kernel(&hrx::kernels::iota(n, 0, 1))?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 0)?;
    graph.gpu(&iota, &[buffer.whole()])?;
    let started = Arc::new(AtomicBool::new(false));
    let in_callback = started.clone();
    let callback_mode = mode.clone();
    graph.host(
        &[GpuAccess::new(buffer.whole(), Access::Read)],
        move |_views| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "running {}", std::process::id());
            let _ = out.flush();
            drop(out);
            in_callback.store(true, Ordering::SeqCst);
            if callback_mode == "abort" {
                std::process::abort();
            }
            loop {
                std::thread::park();
            }
        },
    )?;
    let graph = graph.prepare()?;
    let _completion = graph.submit()?;
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    if mode == "segv" {
        // SAFETY: none: this write to an unmapped page is the crash under test.
        unsafe { std::ptr::write_volatile(16 as *mut u64, 1) };
    }
    loop {
        std::thread::park();
    }
}

/// The guard page the program's own handler owns (`survive`), else 0.
static GUARD_PAGE: AtomicUsize = AtomicUsize::new(0);
const PAGE: usize = 4096;

/// The program's own SIGSEGV handler (`survive`): a fault on its guard page is expected
/// (the page is made writable and the access repeats); any other puts the default action
/// back, so that the repeated fault ends the process.
extern "C" fn own_handler(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let page = GUARD_PAGE.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo_t; si_addr is valid for a fault.
    let address = unsafe { (*info).si_addr() } as usize;
    // SAFETY: mprotect of the page `survive` mapped; sigaction with a zeroed (default)
    // action. Both are async-signal-safe.
    unsafe {
        if page != 0 && (page..page + PAGE).contains(&address) {
            libc::mprotect(page as *mut _, PAGE, libc::PROT_READ | libc::PROT_WRITE);
        } else {
            let action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Modes `survive` and `sent`.
fn survive(mode: &str) -> Result<(), Box<dyn std::error::Error>> {
    if mode == "survive" {
        // SAFETY: a fresh anonymous mapping, and a handler of the SA_SIGINFO shape.
        unsafe {
            let page = libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if page == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error().into());
            }
            GUARD_PAGE.store(page as usize, Ordering::SeqCst);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = own_handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            if libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error().into());
            }
        }
    }
    let runtime = Runtime::new(RuntimeOptions::sim())?;
    let buffer = runtime.buffer(4096, Placement::HostVisible)?;
    let mut graph = runtime.graph();
    graph.fill(buffer.whole(), 7)?;
    let graph = graph.prepare()?;
    let submit = |times: usize| -> Result<(), hrx::Error> {
        for _ in 0..times {
            graph.submit()?.wait()?;
        }
        Ok(())
    };
    submit(if mode == "survive" { 5 } else { 1 })?;
    if mode == "survive" {
        // SAFETY: a write to the guard page mapped above: the program's handler makes it
        // writable and the write repeats.
        unsafe { std::ptr::write_volatile(GUARD_PAGE.load(Ordering::SeqCst) as *mut u64, 7) };
    } else {
        // SAFETY: kill has no memory preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGSEGV);
            libc::kill(libc::getpid(), libc::SIGBUS);
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "survived {}", std::process::id())?;
    out.flush()?;
    drop(out);
    if mode == "survive" {
        submit(7)?;
        // SAFETY: none: this write to an unmapped page is the crash under test.
        unsafe { std::ptr::write_volatile(16 as *mut u64, 1) };
        unreachable!("the fault ends the process");
    }
    submit(1)?;
    loop {
        std::thread::park();
    }
}
