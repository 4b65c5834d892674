//! A runtime in a child process forked after it was created: its workers (and, on CUDA, its
//! device context) are the parent's, not in the child. It refuses work there with one error
//! instead of waiting for ever (a break-it pass: a forked child that used its parent's runtime
//! hung in `wait` under tracing, and panicked dropping it untraced), as CUDA refuses a context
//! used after `fork`.

use hrx::{Access, Error, GpuAccess, Placement, Runtime, RuntimeOptions};
use std::time::Duration;

/// The child's checks: 0 when each holds, else the number of the first that failed.
fn in_child(
    rt: Runtime,
    buffer: hrx::Buffer,
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
    // Host access to the parent runtime's buffer, bytes in flight at the fork or not: it
    // would wait for work and captures the parent's threads end.
    if !refused(buffer.write(200, &[1; 8])) || !refused(buffer.to_vec().map(drop)) {
        return 4;
    }
    // The last handles: the runtime goes without joining the parent's workers.
    drop((buffer, fill, held, pending));
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
        let (release, wait) = crate::common::gate(Duration::from_secs(60));
        let mut held = rt.graph();
        held.host(
            &[GpuAccess::new(buffer.view(0..128).unwrap(), Access::Write)],
            move |_| {
                wait();
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
            let code = in_child(rt, buffer, fill, held, pending);
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
            "traced: {traced}: the child's check {code} failed (1 submit, 2 wait, 3 wait_timeout, \
             4 host access; -1 it crashed, -2 it hung)"
        );
        assert_eq!(buffer.to_vec().unwrap()[128..], [7; 128]);
        drop((fill, held, pending, buffer, rt));
        if let Some(recorder) = recorder {
            recorder.close().unwrap();
            let trace = hrx_capture::read_all(&path).unwrap();
            assert!(trace.recovery.is_complete(), "{:?}", trace.recovery);
        }
    }
}

/// Host writes, twice to one buffer (the second waits for the first's capture), and a copy
/// read back: a new runtime's work in a forked child. 0 when it all held.
fn child_work(rt: &Runtime) -> i32 {
    let run = || -> hrx::Result<u8> {
        let (a, b) = (
            rt.buffer(1 << 20, Placement::HostVisible)?,
            rt.buffer(1 << 20, Placement::HostVisible)?,
        );
        let mut copy = rt.graph();
        copy.copy(b.whole(), a.whole())?;
        let copy = copy.prepare()?;
        for value in [3, 4] {
            a.write(0, &vec![value; 1 << 20])?;
            copy.submit()?.wait()?;
        }
        let mut out = [0u8; 1];
        b.read(0, &mut out)?;
        Ok(out[0])
    };
    match run() {
        Ok(4) => 0,
        _ => 1,
    }
}

/// A new runtime in a child forked from a traced process works, traced by the parent's
/// recorder (which writes nothing there) or by a trace of the child's own: its host writes'
/// captures went to the parent's writer and hashing threads, which are not in the child, so
/// the second write into a buffer waited at its capture fence for ever (a break-it pass).
#[test]
fn a_new_runtime_in_a_forked_child_of_a_traced_process_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parent.hrxt");
    let own = dir.path().join("child.hrxt");
    let recorder =
        hrx_capture::Recorder::create(&path, hrx_capture::RecorderOptions::default()).unwrap();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    // The parent's hashing threads and this thread's ring exist before the fork.
    assert_eq!(child_work(&rt), 0);
    for own_trace in [false, true] {
        // SAFETY: the child runs a runtime of its own and `_exit`s: no test harness, no exit
        // handlers of the parent's.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let options = RuntimeOptions::sim();
            let code = if own_trace {
                let mine =
                    hrx_capture::Recorder::create(&own, hrx_capture::RecorderOptions::default())
                        .unwrap();
                let code =
                    Runtime::new(options.recorder(mine.clone())).map_or(2, |rt| child_work(&rt));
                match mine.close() {
                    Ok(_)
                        if hrx_capture::read_all(&own).is_ok_and(|t| t.recovery.is_complete()) =>
                    {
                        code
                    }
                    _ => 3,
                }
            } else {
                Runtime::new(options.recorder(recorder.clone())).map_or(2, |rt| child_work(&rt))
            };
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let code = exit_code(pid);
        assert_eq!(
            code, 0,
            "own trace: {own_trace}: 1 the work failed, 2 no runtime, 3 no trace, -2 it hung"
        );
    }
    assert_eq!(child_work(&rt), 0);
    drop(rt);
    recorder.close().unwrap();
    assert!(hrx_capture::read_all(&path).unwrap().recovery.is_complete());
}
