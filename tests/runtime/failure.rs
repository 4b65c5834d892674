//! Failure: injected faults, quarantine, poison, cancellation, unhealthy copy streams.

use hrx::{
    Access, Error, FaultSpec, GpuAccess, Placement, Runtime, RuntimeOptions, Status, kernels,
};
use std::time::Duration;

fn with_fault(spec: &str) -> Runtime {
    Runtime::new(RuntimeOptions::sim().fault(spec.parse::<FaultSpec>().unwrap())).unwrap()
}

/// upload -> gray(kernel) -> download, over small buffers.
struct Chain {
    input: hrx::Buffer,
    device_in: hrx::Buffer,
    device_out: hrx::Buffer,
    output: hrx::Buffer,
    executable: hrx::ExecutableGraph,
}

fn chain(rt: &Runtime) -> Chain {
    let (w, h) = (8, 4);
    let input = rt.buffer(w * h * 3, Placement::HostVisible).unwrap();
    let device_in = rt.buffer(w * h * 3, Placement::GpuLocal).unwrap();
    let device_out = rt.buffer(w * h, Placement::GpuLocal).unwrap();
    let output = rt.buffer(w * h, Placement::HostVisible).unwrap();
    let gray = rt.kernel(&kernels::rgb_to_gray(w, h)).unwrap();
    let mut graph = rt.graph();
    graph.copy(device_in.whole(), input.whole()).unwrap();
    graph
        .gpu(&gray, &[device_in.whole(), device_out.whole()])
        .unwrap();
    graph.copy(output.whole(), device_out.whole()).unwrap();
    Chain {
        input,
        device_in,
        device_out,
        output,
        executable: graph.prepare().unwrap(),
    }
}

#[test]
fn device_loss_quarantines_the_graph_and_poisons_what_its_region_writes() {
    // Operation 1 is the upload copy, 2 the kernel, 3 the download.
    let rt = with_fault("op=2:device-lost");
    let c = chain(&rt);
    c.input.write(0, &[200; 96]).unwrap();
    let completion = c.executable.submit().unwrap();
    let error = completion.wait().unwrap_err();
    assert!(error.is_device_loss(), "{error}");
    assert!(
        error
            .to_string()
            .contains("injected fault op=2:device-lost"),
        "{error}"
    );
    assert!(c.executable.quarantined());
    let poison = c
        .device_out
        .poisoned()
        .expect("the kernel's output is poisoned");
    assert!(
        poison.contains("poisoned by submission 1 region 1"),
        "{poison}"
    );
    assert!(
        c.device_in.poisoned().is_none(),
        "the kernel only read its input"
    );
    assert!(c.output.poisoned().is_none(), "the download never ran");
    assert!(matches!(completion.status(), Some(Status::Failed(_))));
    // Later use fails with DeviceLost naming the cause; nothing deadlocks.
    let again = c.executable.submit().unwrap_err();
    assert!(
        matches!(again, Error::DeviceLost(_)) && again.to_string().contains("quarantined"),
        "{again}"
    );
    let read = c.device_out.to_vec().unwrap_err();
    assert!(read.to_string().contains("poisoned"), "{read}");
    let mut graph = rt.graph();
    graph.copy(c.output.whole(), c.device_out.whole()).unwrap();
    let uses_poison = graph.prepare().unwrap().submit().unwrap_err();
    assert!(
        uses_poison
            .to_string()
            .contains("poisoned by submission 1 region 1"),
        "{uses_poison}"
    );
    // Unrelated work still runs.
    let fresh = rt.buffer(16, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(fresh.whole(), 1).unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
}

#[test]
fn a_kernel_error_fails_the_submission_without_quarantine_and_slots_recycle() {
    let rt = Runtime::new(
        RuntimeOptions::sim()
            .graph_slots(1)
            .fault("kernel=hrx_rgb_to_gray:kernel-error".parse().unwrap()),
    )
    .unwrap();
    let c = chain(&rt);
    c.input.write(0, &[90; 96]).unwrap();
    let error = c.executable.submit().unwrap().wait().unwrap_err();
    assert!(matches!(error, Error::Kernel(_)), "{error}");
    assert!(!c.executable.quarantined());
    assert!(c.device_out.poisoned().is_none());
    // The only slot was recycled: the next submission succeeds (the fault fired once).
    c.executable.submit().unwrap().wait().unwrap();
    assert_eq!(c.output.to_vec().unwrap(), vec![90; 32]);
}

#[test]
fn a_failing_kernel_reports_its_own_error() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let out = rt.buffer(16, Placement::GpuLocal).unwrap();
    let fail = rt.kernel(&kernels::fail_kernel(16)).unwrap();
    let mut graph = rt.graph();
    graph.gpu(&fail, &[out.whole()]).unwrap();
    let executable = graph.prepare().unwrap();
    let error = executable.submit().unwrap().wait().unwrap_err();
    assert!(
        matches!(&error, Error::Kernel(m) if m.contains("hrx_fail")),
        "{error}"
    );
    assert!(!executable.quarantined());
}

#[test]
fn a_failed_region_cancels_the_rest_of_its_submission() {
    let rt = with_fault("op=1:kernel-error");
    let c = chain(&rt);
    assert!(c.executable.submit().unwrap().wait().is_err());
    assert_eq!(
        rt.counters().lane_copy_bytes[2],
        0,
        "the download was cancelled, not run"
    );
}

/// A cancelled submission's error says `cancelled:` once, then its cause, down the chain of
/// producers: it said `cancelled: cancelled: producer submission 1 failed: ...` (the cause,
/// itself an `Error::Cancelled`, wrapped in another), and a dependent of a cancelled producer
/// `... was cancelled: cancelled: producer submission 1 failed: ...`.
#[test]
fn a_cancelled_submissions_error_says_cancelled_once() {
    let rt = with_fault("op=1:kernel-error");
    let (a, b, c) = (
        rt.buffer(8, Placement::GpuLocal).unwrap(),
        rt.buffer(8, Placement::GpuLocal).unwrap(),
        rt.buffer(8, Placement::GpuLocal).unwrap(),
    );
    let graph_of = |buffer: &hrx::Buffer| {
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), 1).unwrap();
        graph.prepare().unwrap()
    };
    let (producer, middle, last) = (graph_of(&a), graph_of(&b), graph_of(&c));
    let p = producer.submit().unwrap();
    let m = middle.submit_after(std::slice::from_ref(&p)).unwrap();
    let l = last.submit_after(std::slice::from_ref(&m)).unwrap();
    let failure = p.wait().unwrap_err().to_string();
    let (pn, mn) = (p.submission(), m.submission());
    assert_eq!(
        m.wait().unwrap_err().to_string(),
        format!("cancelled: producer submission {pn} failed: {failure}")
    );
    assert_eq!(
        l.wait().unwrap_err().to_string(),
        format!(
            "cancelled: producer submission {mn} was cancelled: producer submission {pn} failed: {failure}"
        )
    );
    // The status holds the same error as `wait` answers.
    let Some(Status::Cancelled(cause)) = m.status() else {
        panic!("{:?}", m.status())
    };
    assert_eq!(cause.to_string(), m.wait().unwrap_err().to_string());
}

#[test]
fn a_failed_producer_cancels_its_dependents_transitively_even_without_overlap() {
    let rt = with_fault("op=1:device-lost");
    let a = rt.buffer(8, Placement::GpuLocal).unwrap();
    let b = rt.buffer(8, Placement::HostVisible).unwrap();
    let c = rt.buffer(8, Placement::HostVisible).unwrap();
    let graph_of = |buffer: &hrx::Buffer, value| {
        let mut graph = rt.graph();
        graph.fill(buffer.whole(), value).unwrap();
        graph.prepare().unwrap()
    };
    let (producer, middle, last) = (graph_of(&a, 1), graph_of(&b, 2), graph_of(&c, 3));
    let p = producer.submit().unwrap();
    let m = middle.submit_after(std::slice::from_ref(&p)).unwrap();
    let l = last.submit_after(std::slice::from_ref(&m)).unwrap();
    assert!(p.wait().unwrap_err().is_device_loss());
    let cancelled = m.wait().unwrap_err();
    assert!(
        matches!(&cancelled, Error::Cancelled(m) if m.contains("producer submission 1 failed")),
        "{cancelled}"
    );
    assert!(matches!(l.status(), Some(Status::Cancelled(_))) || l.wait().is_err());
    let transitively = l.wait().unwrap_err().to_string();
    assert!(
        transitively.contains("producer submission 2 was cancelled"),
        "{transitively}"
    );
    assert_eq!(b.to_vec().unwrap(), vec![0; 8], "cancelled work never ran");
    assert_eq!(c.to_vec().unwrap(), vec![0; 8]);
    // A submission naming an already-failed producer is cancelled at once.
    let late = middle.submit_after(&[p]).unwrap();
    assert!(matches!(late.wait(), Err(Error::Cancelled(_))));
    drop((m, late));
    // The dependents were not quarantined: they run again without the producer.
    middle.submit().unwrap().wait().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![2; 8]);
}

#[test]
fn a_failed_copy_marks_the_copy_stream_unhealthy() {
    let rt = with_fault("op=1:device-lost");
    let host = rt.buffer(8, Placement::HostVisible).unwrap();
    let device = rt.buffer(8, Placement::GpuLocal).unwrap();
    let other = rt.buffer(8, Placement::GpuLocal).unwrap();
    let upload = |dst: &hrx::Buffer| {
        let mut graph = rt.graph();
        graph.copy(dst.whole(), host.whole()).unwrap();
        graph.prepare().unwrap()
    };
    other.write(0, &[0xab; 8]).unwrap();
    let (first, second) = (upload(&device), upload(&other));
    assert!(first.submit().unwrap().wait().unwrap_err().is_device_loss());
    assert!(first.quarantined() && device.poisoned().is_some());
    let error = second.submit().unwrap().wait().unwrap_err();
    assert!(
        error.to_string().contains("copy stream is quarantined"),
        "{error}"
    );
    assert_eq!(rt.counters().copy_streams_created, 1);
    // The unhealthy stream refused before any copy: the second graph is not quarantined and
    // its destination keeps its bytes, readable (they were poisoned, for good).
    assert!(!second.quarantined(), "a refusal quarantines nothing");
    assert_eq!(other.poisoned(), None);
    assert_eq!(other.to_vec().unwrap(), [0xab; 8]);
    // A fill of it on the Compute lane runs.
    let mut fill = rt.graph();
    fill.fill(other.whole(), 7).unwrap();
    fill.prepare().unwrap().submit().unwrap().wait().unwrap();
    assert_eq!(other.to_vec().unwrap(), [7; 8]);
}

/// A graph of one scoped callback writing `buffer` that answers `outcome`, and a flag its
/// captures set when they are dropped.
fn guarded_callback(
    rt: &Runtime,
    buffer: &hrx::Buffer,
    outcome: fn() -> hrx::Result<()>,
) -> (
    hrx::ExecutableGraph,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = Guard(dropped.clone());
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(
                &[GpuAccess::new(buffer.whole(), Access::Write)],
                move |_| {
                    let _held = &guard;
                    outcome()
                },
            )
            .unwrap();
    }
    (graph.prepare().unwrap(), dropped)
}

/// The seed's `gpu_scoped`: "On an uncertain failure return an error; captured resources and
/// bindings are then quarantined together, preserving native lifetimes". The callback (with
/// what it captured) and its bound buffers outlive the program's graph and buffer handles,
/// until the runtime is dropped: work the callback queued on its own streams may still
/// write them. One that succeeds is dropped with its graph, as before.
#[test]
fn a_failed_scoped_callbacks_captures_and_bindings_live_until_the_runtime_is_dropped() {
    use std::sync::atomic::Ordering;
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(8, Placement::GpuLocal).unwrap();
    let (executable, dropped) = guarded_callback(&rt, &buffer, || {
        Err(Error::DeviceLost("private stream failed".into()))
    });
    let error = executable.submit().unwrap().wait().unwrap_err();
    assert!(error.is_device_loss(), "{error}");
    assert!(executable.quarantined());
    drop((executable, buffer));
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the failed callback's captures were freed with the program's handles"
    );
    drop(rt);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the runtime's drop releases them"
    );

    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(8, Placement::GpuLocal).unwrap();
    let (executable, dropped) = guarded_callback(&rt, &buffer, || Ok(()));
    executable.submit().unwrap().wait().unwrap();
    drop(executable);
    assert!(dropped.load(Ordering::SeqCst), "a callback that succeeded");
}

#[test]
fn a_panicking_callback_is_an_uncertain_failure_not_a_dead_worker() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(8, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(&[GpuAccess::new(buffer.whole(), Access::Write)], |_| {
                panic!("deliberate test panic")
            })
            .unwrap();
    }
    let executable = graph.prepare().unwrap();
    let error = executable.submit().unwrap().wait().unwrap_err();
    assert!(
        error.is_device_loss() && error.to_string().contains("panicked"),
        "{error}"
    );
    assert!(executable.quarantined() && buffer.poisoned().is_some());
    // The Compute worker survived.
    let fresh = rt.buffer(8, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(fresh.whole(), 3).unwrap();
    graph
        .prepare()
        .unwrap()
        .submit()
        .unwrap()
        .wait_timeout(Duration::from_secs(10))
        .unwrap();
}

#[test]
fn named_backends_that_are_missing_say_which_library() {
    let error = Runtime::new(RuntimeOptions::default().backend(hrx::BackendChoice::Hip))
        .err()
        .unwrap();
    assert!(
        matches!(error, Error::Unsupported(_)) && error.to_string().contains("libamdhip64"),
        "{error}"
    );
    assert!("quantum".parse::<hrx::BackendChoice>().is_err());
    assert_eq!(
        "CUDA".parse::<hrx::BackendChoice>().unwrap(),
        hrx::BackendChoice::Cuda
    );
}

/// Runs this test binary again with `env` set, executing only `child_test`.
pub(super) fn run_child(child_test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([child_test, "--exact", "--nocapture", "--test-threads=1"])
        .env("HRX_TEST_CHILD", "1");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

#[test]
fn environment_child() {
    if std::env::var_os("HRX_TEST_CHILD").is_none() {
        return;
    }
    match Runtime::new(RuntimeOptions::default()) {
        Ok(rt) => {
            let buffer = rt.buffer(8, Placement::GpuLocal).unwrap();
            let mut graph = rt.graph();
            graph.fill(buffer.whole(), 1).unwrap();
            let outcome = graph.prepare().unwrap().submit().unwrap().wait();
            println!(
                "CHILD backend={} outcome={outcome:?}",
                rt.device_info().backend
            );
        }
        Err(error) => println!("CHILD error={error}"),
    }
}

#[test]
fn hrx_backend_and_hrx_fault_are_read_from_the_environment() {
    let stdout = |env: &[(&str, &str)]| {
        String::from_utf8(run_child("runtime::failure::environment_child", env).stdout).unwrap()
    };
    let plain = stdout(&[("HRX_BACKEND", "sim")]);
    assert!(
        plain.contains("CHILD backend=sim outcome=Ok(())"),
        "{plain}"
    );
    let bad = stdout(&[("HRX_BACKEND", "warp-drive")]);
    assert!(
        bad.contains(
            "CHILD error=HRX_BACKEND: expected auto, sim, cuda or hip, got \"warp-drive\""
        ),
        "{bad}"
    );
    let faulted = stdout(&[("HRX_BACKEND", "sim"), ("HRX_FAULT", "op=1:device-lost")]);
    assert!(
        faulted.contains("outcome=Err(DeviceLost(\"injected fault op=1:device-lost"),
        "{faulted}"
    );
    let bad_fault = stdout(&[("HRX_FAULT", "op=zero:device-lost")]);
    assert!(
        bad_fault.contains(
            "CHILD error=HRX_FAULT: expected op=N:KIND or kernel=NAME[#N]:KIND (KIND \
             device-lost or kernel-error), got \"op=zero:device-lost\": the count must be a \
             whole number from 1"
        ),
        "{bad_fault}"
    );
}

/// The seed counts a region's copied bytes only after its native work succeeded: a native
/// graph (a fill and a device copy) whose fill failed counted none, on its lane or in all;
/// run again (a kernel error quarantines nothing), it counts them.
#[test]
fn copied_bytes_count_only_regions_that_succeeded() {
    let rt = with_fault("op=1:kernel-error");
    let a = rt.buffer(64, Placement::GpuLocal).unwrap();
    let b = rt.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(a.whole(), 7).unwrap();
    graph.copy(b.whole(), a.whole()).unwrap();
    let executable = graph.prepare().unwrap();
    assert_eq!(executable.describe()[0].copy_bytes, 64);
    assert!(executable.submit().unwrap().wait().is_err());
    assert_eq!(
        (rt.counters().copied_bytes, rt.counters().lane_copy_bytes),
        (0, [0, 0, 0])
    );
    executable.submit().unwrap().wait().unwrap();
    assert_eq!(
        (rt.counters().copied_bytes, rt.counters().lane_copy_bytes),
        (64, [0, 64, 0])
    );
    assert_eq!(b.to_vec().unwrap(), vec![7; 64]);
}
