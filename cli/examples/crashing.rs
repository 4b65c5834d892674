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
//! Everything the runtime recorded before the signal must be in the trace: the submit, the
//! graph, the kernel, and the callback's region as started and never finished. The records
//! reach the file only through the fatal-signal flush: the program dies well within the
//! writer's 100 ms period after the submit (and `hang` is killed by a signal the recorder
//! handles).

use hrx::{Access, GpuAccess, Placement, Runtime, RuntimeOptions};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() {
    if let Err(error) = run() {
        eprintln!("crashing: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args()
        .nth(1)
        .ok_or("usage: crashing abort|segv|hang")?;
    if !matches!(mode.as_str(), "abort" | "segv" | "hang") {
        return Err(format!("unknown mode {mode:?}: expected abort, segv or hang").into());
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
