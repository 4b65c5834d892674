//! The seed's failure rules (`shared/seed/graph.rs`), each exactly: a scoped callback's error
//! is an uncertain failure; any failed copy batch marks its lane's copy stream unhealthy;
//! every use, written-only ones too, is made visible to the region's engine before it runs;
//! poison is per buffer and names its cause.

use hrx::{Access, Engine, Error, GpuAccess, Placement, Runtime, RuntimeOptions, kernels};
use hrx_capture::schema::Record;
use std::sync::mpsc;
use std::time::Duration;

conformance! {
    /// The seed: "On an uncertain failure return an error; captured resources and bindings
    /// are then quarantined together". Any error, not only `DeviceLost`.
    fn a_scoped_callback_error_quarantines_its_graph_and_poisons_what_it_writes(rt) {
        let input = rt.buffer(64, Placement::GpuLocal).unwrap();
        let output = rt.buffer(64, Placement::GpuLocal).unwrap();
        let mut graph = rt.graph();
        // SAFETY: the callback touches no memory and owns no native resource.
        unsafe {
            graph
                .gpu_scoped(
                    &[
                        GpuAccess::new(input.whole(), Access::Read),
                        GpuAccess::new(output.view(0..16).unwrap(), Access::Write),
                    ],
                    |_| Err(Error::Kernel("private stream reported a launch failure".into())),
                )
                .unwrap();
        }
        let executable = graph.prepare().unwrap();
        let error = executable.submit().unwrap().wait().unwrap_err();
        assert!(error.is_device_loss(), "{error}");
        assert!(
            error.to_string().contains("private stream reported a launch failure"),
            "the callback's own error is kept: {error}"
        );
        assert!(executable.quarantined());
        let again = executable.submit().unwrap_err();
        assert!(again.is_device_loss(), "{again}");
        let cause = output.poisoned().expect("the written binding is poisoned");
        assert!(cause.contains("poisoned by submission"), "{cause}");
        assert!(input.poisoned().is_none(), "the callback only read its input");
    }
}

conformance! {
    /// The seed calls `make_visible` for every use before a region runs. A GPU fill of part
    /// of a buffer the NPU wrote last must first sync the NPU's bytes back from the buffer
    /// object, or the rest of the buffer would keep stale bytes once the GPU is its last
    /// writer (the host's next read then syncs nothing).
    fn a_written_only_use_is_made_visible_before_its_region_runs(rt) {
        let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
        let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
        let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
        let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
        input.write(0, &(0..64).map(|i| i * 4).collect::<Vec<u8>>()).unwrap();
        let mut npu = rt.graph();
        npu.npu(&kernel, &[input.whole(), output.whole()]).unwrap();
        npu.prepare().unwrap().submit().unwrap().wait().unwrap();
        assert!(!output.visible_to(Engine::Gpu), "the NPU wrote it last");
        let mut fill = rt.graph();
        fill.fill(output.view(0..8).unwrap(), 7).unwrap();
        let fill = fill.prepare().unwrap();
        let before = rt.counters().visibility_syncs;
        fill.submit().unwrap().wait().unwrap();
        assert_eq!(
            rt.counters().visibility_syncs,
            before + 1,
            "the written-only use synced the NPU's bytes before the fill"
        );
        let expected: Vec<u8> = (0..64)
            .map(|i| if i < 8 { 7 } else if i * 4 >= 100 { 255 } else { 0 })
            .collect();
        assert_eq!(output.to_vec().unwrap(), expected);
    }
}

conformance! {
    /// The seed keeps poison per buffer. A submission ordered after a concurrent uncertain
    /// failure (here by a write-after-read on another buffer) fails when it reads bytes of
    /// the poisoned buffer that the failed region never declared.
    fn poison_is_per_buffer_and_names_the_submission_and_region(rt) {
        let shared = rt.buffer(64, Placement::GpuLocal).unwrap();
        let order = rt.buffer(16, Placement::GpuLocal).unwrap();
        let sink = rt.buffer(32, Placement::GpuLocal).unwrap();
        let (release, gate) = mpsc::channel::<()>();
        let gate = std::sync::Mutex::new(gate);
        let mut failing = rt.graph();
        // SAFETY: the callback touches no memory and owns no native resource.
        unsafe {
            failing
                .gpu_scoped(
                    &[
                        GpuAccess::new(shared.view(0..32).unwrap(), Access::Write),
                        GpuAccess::new(order.whole(), Access::Read),
                    ],
                    move |_| {
                        gate.lock().unwrap().recv_timeout(Duration::from_secs(10)).ok();
                        Err(Error::DeviceLost("the callback's stream faulted".into()))
                    },
                )
                .unwrap();
        }
        let failing = failing.prepare().unwrap();
        let mut reader = rt.graph();
        reader.fill(order.whole(), 1).unwrap();
        reader.copy(sink.whole(), shared.view(32..64).unwrap()).unwrap();
        let reader = reader.prepare().unwrap();
        let first = failing.submit().unwrap();
        // Submitted while the failure is still in flight: its fill waits for the callback
        // (write-after-read on `order`), its copy reads only bytes the callback never wrote.
        let second = reader.submit().unwrap();
        release.send(()).unwrap();
        assert!(first.wait().unwrap_err().is_device_loss());
        let error = second.wait().unwrap_err();
        assert!(error.is_device_loss(), "{error}");
        let submission = first.submission();
        assert!(
            error
                .to_string()
                .contains(&format!("poisoned by submission {submission} region 0")),
            "{error}"
        );
        assert!(sink.poisoned().is_none(), "the copy never ran");
        // Host access to the disjoint bytes fails too.
        let read = shared.read(32, &mut [0; 32]).unwrap_err();
        assert!(read.is_device_loss(), "{read}");
        drop((first, second));
    }
}

/// The poison record of the trace names the submission and region that caused it, in its
/// text and in its fields.
#[test]
fn the_trace_poison_record_names_its_cause() {
    let sink = hrx_capture::MemorySink::new();
    let recorder =
        hrx_capture::Recorder::with_sink(sink.clone(), hrx_capture::RecorderOptions::default())
            .unwrap();
    let rt = Runtime::new(
        RuntimeOptions::sim()
            .recorder(recorder.clone())
            .fault("op=1:device-lost".parse().unwrap()),
    )
    .unwrap();
    let buffer = rt.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.view(0..8).unwrap(), 1).unwrap();
    let completion = graph.prepare().unwrap().submit().unwrap();
    assert!(completion.wait().unwrap_err().is_device_loss());
    let submission = completion.submission();
    drop((completion, buffer, rt));
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let poison = trace
        .records
        .iter()
        .find_map(|r| match r {
            Record::Poison(p) => Some(p),
            _ => None,
        })
        .expect("a poison record");
    assert!(
        poison
            .cause
            .starts_with(&format!("poisoned by submission {submission} region 0 ")),
        "{}",
        poison.cause
    );
    // And as fields (format 1.3), so a reader (replay) need not parse the text.
    assert_eq!(
        (poison.submission, poison.region),
        (
            Some(hrx_capture::schema::SubmissionIndex(submission)),
            Some(hrx_capture::schema::RegionIndex(0))
        )
    );
}

/// The seed sets `healthy = false` on every error of a copy batch: a kernel error (known
/// extent for a kernel, but a copy stream's queued work is not known) too. Later copies on
/// that lane answer `DeviceLost`.
#[test]
fn any_failed_copy_batch_marks_its_lanes_copy_stream_unhealthy() {
    let rt =
        Runtime::new(RuntimeOptions::sim().fault("op=1:kernel-error".parse().unwrap())).unwrap();
    let host = rt.buffer(8, Placement::HostVisible).unwrap();
    let device = rt.buffer(8, Placement::GpuLocal).unwrap();
    let other = rt.buffer(8, Placement::GpuLocal).unwrap();
    let upload = |dst: &hrx::Buffer| {
        let mut graph = rt.graph();
        graph.copy(dst.whole(), host.whole()).unwrap();
        graph.prepare().unwrap()
    };
    let (first, second) = (upload(&device), upload(&other));
    let error = first.submit().unwrap().wait().unwrap_err();
    assert!(matches!(error, Error::Kernel(_)), "{error}");
    assert!(
        !first.quarantined(),
        "a kernel error alone quarantines nothing"
    );
    let later = second.submit().unwrap().wait().unwrap_err();
    assert!(later.is_device_loss(), "{later}");
    assert!(
        later.to_string().contains("copy stream is unhealthy"),
        "{later}"
    );
    // Other lanes are unaffected: a download still runs.
    let mut download = rt.graph();
    download.copy(host.whole(), device.whole()).unwrap();
    download
        .prepare()
        .unwrap()
        .submit()
        .unwrap()
        .wait()
        .unwrap();
}
