//! A runtime in a child process forked after it was created: its workers (and, on CUDA, its
//! device context) are the parent's, not in the child. It refuses work there with one error
//! instead of waiting for ever (a break-it pass: a forked child that used its parent's runtime
//! hung in `wait` under tracing, and panicked dropping it untraced), as CUDA refuses a context
//! used after `fork`.

use hrx::{Access, Error, GpuAccess, Placement, Runtime, RuntimeOptions};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

/// The child's checks: 0 when each holds, else the number of the first that failed.
fn in_child(
    rt: Runtime,
    fill: hrx::ExecutableGraph,
    held: hrx::ExecutableGraph,
    pending: hrx::Completion,
) -> i32 {
    let refused = |result: hrx::Result<()>| matches!(result, Err(Error::Unsupported(message)) if message.contains("forked"));
    if !refused(fill.submit().map(drop)) {
        return 1;
    }
    if !refused(pending.wait()) {
        return 2;
    }
    if !refused(pending.wait_timeout(Duration::from_secs(1))) {
        return 3;
    }
    // The last handles: the runtime goes without joining the parent's workers.
    drop((fill, held, pending));
    drop(rt);
    0
}

/// Waits for child `pid`: its exit code, or -1 when it did not exit normally. A child that
/// hangs is killed after two minutes (the old runtime's behaviour), so the test fails
/// rather than hangs.
fn exit_code(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    for _ in 0..1200 {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above; the child is killed and reaped.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    -2
}

#[test]
fn a_runtime_refuses_work_in_a_child_forked_after_it_was_created() {
    for traced in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fork.hrxt");
        let recorder = traced.then(|| {
            hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap()
        });
        let mut options = RuntimeOptions::sim();
        if let Some(recorder) = &recorder {
            options = options.recorder(recorder.clone());
        }
        let rt = Runtime::new(options).unwrap();
        let buffer = rt.buffer(256, Placement::HostVisible).unwrap();
        let mut fill = rt.graph();
        fill.fill(buffer.view(128..256).unwrap(), 7).unwrap();
        let fill = fill.prepare().unwrap();
        fill.submit().unwrap().wait().unwrap();
        // In flight at the fork: a host callback held by the parent's gate.
        let (release, gate) = mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        let mut held = rt.graph();
        held.host(
            &[GpuAccess::new(buffer.view(0..128).unwrap(), Access::Write)],
            move |_| {
                gate.lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(60))
                    .ok();
                Ok(())
            },
        )
        .unwrap();
        let held = held.prepare().unwrap();
        let pending = held.submit().unwrap();
        // SAFETY: the child runs `in_child` (the runtime's refusals, and drops) and `_exit`s:
        // no test harness, no exit handlers of the parent's.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = in_child(rt, fill, held, pending);
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let code = exit_code(pid);
        // The parent's runtime is untouched by the child.
        release.send(()).unwrap();
        pending.wait().unwrap();
        fill.submit().unwrap().wait().unwrap();
        assert_eq!(
            code, 0,
            "traced: {traced}: the child's check {code} failed (1 submit, 2 wait, 3 wait_timeout; \
             -1 it crashed, -2 it hung)"
        );
        drop((fill, held, pending, buffer, rt));
        if let Some(recorder) = recorder {
            recorder.close().unwrap();
            let trace = hrx_capture::read_all(&path).unwrap();
            assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
        }
    }
}
