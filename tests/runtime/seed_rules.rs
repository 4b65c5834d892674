//! The seed's rules (`shared/seed/graph.rs`), each exactly: a scoped callback's error is an
//! uncertain failure, and the callback runs on a worker only; any failed copy batch marks its
//! lane's copy stream unhealthy, for good; every use, written-only ones too, is made visible
//! to the region's engine before it runs and checked for poison; poison is per buffer and
//! names its cause; an NPU run is a region of its own over exactly its views' bytes, and its
//! failures are classified as any native failure's; conflicts across submissions are exact
//! byte ranges across lanes and views; a quarantined graph answers `DeviceLost` before `Busy`,
//! and every refusal of `submit` comes in the seed's order; the builder's and `submit`'s
//! refusals say the seed's words; a lane serializes by its name.

use crate::common::gate;
use hrx::{
    Access, Engine, Error, GpuAccess, GpuLane, Placement, Queue, RegionKind, Runtime,
    RuntimeOptions, kernels,
};
use hrx_capture::schema::Record;
use std::sync::mpsc;
use std::time::Duration;

/// A graph whose scoped callback writes bytes 0..32 of `shared` and reads `order`, waits until
/// the returned sender sends (at most 20 s), then fails with `DeviceLost`: an uncertain
/// failure, whose graph is quarantined and `shared` poisoned, while later work ordered after it
/// (a write-after-read on `order`) waits.
fn gated_uncertain_failure(
    rt: &Runtime,
    shared: &hrx::Buffer,
    order: &hrx::Buffer,
) -> (hrx::ExecutableGraph, mpsc::Sender<()>) {
    let (release, wait) = gate(Duration::from_secs(20));
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
                    wait();
                    Err(Error::DeviceLost("the callback's stream faulted".into()))
                },
            )
            .unwrap();
    }
    (failing.prepare().unwrap(), release)
}

conformance! {
    /// The seed: "On an uncertain failure return an error; captured resources and bindings
    /// are then quarantined together". Any error, not only `DeviceLost`; and its `run` passes
    /// the callback's error up as it is (`callback(&views)?`): the submission fails with the
    /// callback's own error, not one the runtime made of it.
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
        assert!(
            matches!(&error, Error::Kernel(m) if m == "private stream reported a launch failure"),
            "the callback's own error, as it is: {error:?}"
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
        let (failing, release) = gated_uncertain_failure(&rt, &shared, &order);
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
    let (recorder, sink) = crate::common::memory_recorder();
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
        later.to_string().contains("copy stream is quarantined"),
        "{later}"
    );
    assert!(
        !second.quarantined() && other.poisoned().is_none(),
        "the refusal came before any copy: nothing to quarantine or poison"
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

/// The seed's `prepare`: an NPU run is a region of its own, so it ends a run of same-lane
/// GPU operations (an NPU entry is on the Compute lane too): fill, NPU run, fill is three
/// regions, not the fills lowered into one native graph around it.
#[test]
fn an_npu_run_is_a_region_of_its_own_between_same_lane_operations() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
    let other = rt.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(input.whole(), 200).unwrap();
    graph
        .npu(&kernel, &[input.whole(), output.whole()])
        .unwrap();
    graph.fill(other.whole(), 1).unwrap();
    let executable = graph.prepare().unwrap();
    let shape = crate::common::region_shapes(&executable.describe());
    assert_eq!(
        shape,
        vec![
            (Queue::GpuCompute, RegionKind::NativeGraph, 0..1),
            (Queue::Npu, RegionKind::NpuRun, 1..2),
            (Queue::GpuCompute, RegionKind::NativeGraph, 2..3),
        ]
    );
    executable.submit().unwrap().wait().unwrap();
    assert_eq!(output.to_vec().unwrap(), vec![255; 64]);
}

/// The seed's `prepare` imports an NPU binding as its whole buffer object only when the view
/// is the whole buffer, and as a sub-buffer object at the view's offset otherwise: an NPU run
/// over views reads and writes exactly their bytes.
#[test]
fn an_npu_run_over_partial_views_touches_exactly_their_bytes() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let kernel = rt.npu_kernel(&kernels::npu_threshold(32, 100)).unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    let input = rt.buffer(96, Placement::NpuShared { group: g0 }).unwrap();
    let output = rt.buffer(96, Placement::NpuShared { group: g1 }).unwrap();
    // Input bytes 64..96 are above the level, the rest below it.
    let bytes: Vec<u8> = (0..96).map(|i| if i >= 64 { 150 } else { 50 }).collect();
    input.write(0, &bytes).unwrap();
    output.write(0, &[7; 96]).unwrap();
    let mut graph = rt.graph();
    graph
        .npu(
            &kernel,
            &[input.view(64..96).unwrap(), output.view(16..48).unwrap()],
        )
        .unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    let expected: Vec<u8> = (0..96)
        .map(|i| if (16..48).contains(&i) { 255 } else { 7 })
        .collect();
    assert_eq!(output.to_vec().unwrap(), expected);
}

/// The seed orders conflicting work across submissions by exact byte ranges, across lanes
/// ("memory hazards apply across every lane"), whichever view names the bytes: while a
/// blocked submission writes bytes 0..32, work on the adjacent bytes 32..64 runs (through a
/// view of a clone of the buffer), while a write of bytes 31..33 (write-after-write) and a
/// read of byte 16 (read-after-write) wait for it.
#[test]
fn conflicts_across_submissions_are_exact_byte_ranges_through_any_view_and_lane() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
    let clone = buffer.clone();
    let source = rt.buffer(64, Placement::HostVisible).unwrap();
    let sink = rt.buffer(1, Placement::HostVisible).unwrap();
    source.write(0, &[5; 64]).unwrap();
    let (release, wait) = gate(Duration::from_secs(20));
    let mut writer = rt.graph();
    // SAFETY: the callback touches no memory and owns no native resource.
    unsafe {
        writer
            .gpu_scoped(
                &[GpuAccess::new(buffer.view(0..32).unwrap(), Access::Write)],
                move |_| {
                    wait();
                    Ok(())
                },
            )
            .unwrap();
    }
    let writer = writer.prepare().unwrap();
    let upload = |dst: hrx::BufferView, src: hrx::BufferView| {
        let mut graph = rt.graph();
        graph.copy_on(dst, src, hrx::GpuLane::Upload).unwrap();
        graph.prepare().unwrap()
    };
    let adjacent = upload(clone.view(32..64).unwrap(), source.view(32..64).unwrap());
    let overlapping = upload(clone.view(31..33).unwrap(), source.view(0..2).unwrap());
    let mut reader = rt.graph();
    reader
        .copy_on(
            sink.whole(),
            buffer.view(16..17).unwrap(),
            hrx::GpuLane::Download,
        )
        .unwrap();
    let reader = reader.prepare().unwrap();
    let first = writer.submit().unwrap();
    adjacent
        .submit()
        .unwrap()
        .wait_timeout(Duration::from_secs(20))
        .expect("adjacent bytes do not conflict");
    let waw = overlapping.submit().unwrap();
    let raw = reader.submit().unwrap();
    for (completion, what) in [(&waw, "write-after-write"), (&raw, "read-after-write")] {
        assert!(
            matches!(
                completion.wait_timeout(Duration::from_millis(50)),
                Err(Error::Timeout(_))
            ),
            "a {what} on one byte must wait"
        );
    }
    release.send(()).unwrap();
    first.wait().unwrap();
    waw.wait().unwrap();
    raw.wait().unwrap();
    assert_eq!(&buffer.to_vec().unwrap()[31..64], &[5; 33][..]);
}

/// The seed checks every use of a region for poison before it runs, written-only uses too: a
/// region ordered after a concurrent uncertain failure that only writes other bytes of the
/// poisoned buffer fails with `DeviceLost` without running (its other writes never happen).
#[test]
fn a_written_only_use_of_a_poisoned_buffer_fails_its_region_without_running() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let shared = rt.buffer(64, Placement::GpuLocal).unwrap();
    let order = rt.buffer(16, Placement::GpuLocal).unwrap();
    let (failing, release) = gated_uncertain_failure(&rt, &shared, &order);
    let mut writer = rt.graph();
    // One native graph: a write-after-read on `order` orders it after the callback; its
    // other write is to bytes of `shared` that the callback never declared.
    writer.fill(order.whole(), 1).unwrap();
    writer.fill(shared.view(32..64).unwrap(), 2).unwrap();
    let writer = writer.prepare().unwrap();
    assert_eq!(writer.regions(), 1);
    let first = failing.submit().unwrap();
    let second = writer.submit().unwrap();
    release.send(()).unwrap();
    assert!(first.wait().unwrap_err().is_device_loss());
    let error = second.wait().unwrap_err();
    assert!(
        error.is_device_loss() && error.to_string().contains("poisoned by submission"),
        "{error}"
    );
    assert_eq!(order.to_vec().unwrap(), vec![0; 16], "the region never ran");
    assert!(
        order.poisoned().is_none(),
        "a refused region poisons nothing"
    );
    assert!(
        !writer.quarantined(),
        "a refused region quarantines nothing"
    );
}

/// The seed's `usable` check comes first in `submit`: a quarantined graph answers
/// `DeviceLost`, not `Busy`, even while its only slot is held and the runtime's capacity is
/// exhausted.
#[test]
fn a_quarantined_graph_answers_device_lost_before_busy() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1).capacity(1)).unwrap();
    let buffer = rt.buffer(8, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory and owns no native resource.
    unsafe {
        graph
            .gpu_scoped(&[GpuAccess::new(buffer.whole(), Access::Write)], |_| {
                Err(Error::DeviceLost("lost".into()))
            })
            .unwrap();
    }
    let executable = graph.prepare().unwrap();
    let held = executable.submit().unwrap();
    assert!(held.wait().unwrap_err().is_device_loss());
    // Capacity taken by a blocked submission of another graph.
    let other = rt.buffer(8, Placement::HostVisible).unwrap();
    let (release, wait) = gate(Duration::from_secs(20));
    let mut blocked = rt.graph();
    blocked
        .host(&[GpuAccess::new(other.whole(), Access::Write)], move |_| {
            wait();
            Ok(())
        })
        .unwrap();
    let blocked = blocked.prepare().unwrap();
    let in_flight = blocked.submit().unwrap();
    let error = executable.submit().unwrap_err();
    assert!(
        matches!(error, Error::DeviceLost(_)) && error.to_string().contains("quarantined"),
        "{error}"
    );
    release.send(()).unwrap();
    in_flight.wait().unwrap();
    drop(held);
}

/// The seed caches one copy stream per lane and never replaces it: once a batch failed, a
/// copy graph prepared afterwards gets the same unhealthy stream and fails too, and the
/// failed batch counted no copied bytes.
#[test]
fn an_unhealthy_copy_stream_is_kept_for_graphs_prepared_after_the_failure() {
    let rt =
        Runtime::new(RuntimeOptions::sim().fault("op=1:kernel-error".parse().unwrap())).unwrap();
    let host = rt.buffer(8, Placement::HostVisible).unwrap();
    let device = rt.buffer(8, Placement::GpuLocal).unwrap();
    let upload = || {
        let mut graph = rt.graph();
        graph.copy(device.whole(), host.whole()).unwrap();
        graph.prepare().unwrap()
    };
    assert!(upload().submit().unwrap().wait().is_err());
    assert_eq!(rt.counters().lane_copy_bytes, [0, 0, 0]);
    let later = upload().submit().unwrap().wait().unwrap_err();
    assert!(
        later.to_string().contains("copy stream is quarantined"),
        "{later}"
    );
    assert_eq!(rt.counters().copy_streams_created, 1);
    assert_eq!(rt.counters().copied_bytes, 0);
}

/// Failures of an NPU run are classified as any native failure's: a device loss (uncertain
/// extent) quarantines its graph and poisons what the run writes, not what it reads; a
/// kernel error (known extent) does neither, and the graph runs again.
#[test]
fn an_npu_runs_failure_is_classified_as_any_native_failure() {
    for (kind, uncertain) in [("device-lost", true), ("kernel-error", false)] {
        let rt = Runtime::new(RuntimeOptions::sim().fault(format!("op=1:{kind}").parse().unwrap()))
            .unwrap();
        let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
        let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
        let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
        let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
        input.write(0, &[200; 64]).unwrap();
        let mut graph = rt.graph();
        graph
            .npu(&kernel, &[input.whole(), output.whole()])
            .unwrap();
        let executable = graph.prepare().unwrap();
        let error = executable.submit().unwrap().wait().unwrap_err();
        assert!(rt.fault_fired(), "{kind}");
        assert_eq!(error.is_device_loss(), uncertain, "{kind}: {error}");
        assert_eq!(executable.quarantined(), uncertain, "{kind}");
        assert_eq!(output.poisoned().is_some(), uncertain, "{kind}");
        assert!(
            input.poisoned().is_none(),
            "{kind}: the run only read its input"
        );
        if !uncertain {
            executable.submit().unwrap().wait().unwrap();
            assert_eq!(output.to_vec().unwrap(), vec![255; 64]);
        }
    }
}

/// The seed's `Graph::npu` answers `Error::Unsupported` for a binding whose buffer object
/// lives on another NPU device or in another memory bank than the program's argument needs,
/// as it does for a binding with no NPU import at all: the placement is not supported by
/// that program, whatever the binding's extent or alignment. It was `Error::Binding`, the
/// variant of a binding the kernel's contract rejects.
#[test]
fn an_npu_binding_in_another_memory_bank_is_unsupported() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    assert_ne!(g0, g1, "the kernel's arguments are in two banks");
    let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let wrong_bank = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let mut graph = rt.graph();
    let error = graph
        .npu(&kernel, &[input.whole(), wrong_bank.whole()])
        .unwrap_err();
    assert!(matches!(error, Error::Unsupported(_)), "{error:?}");
    let said = error.to_string();
    assert!(
        said.contains("binding 1") && said.contains(&format!("buffer {}", wrong_bank.id())),
        "the message names the binding and its buffer: {said}"
    );
    assert!(graph.is_empty(), "nothing was added");
}

/// The seed's `GpuLane` derives `serde::Serialize` beside its comparisons: a lane is part of
/// what a program reports (a JSON summary of its pipeline names each copy's lane), and the
/// runtime's type must serialize as the seed's does, each lane by its name. It derived no
/// `Serialize`, so a program serializing a lane did not compile.
#[test]
fn gpu_lanes_serialize_by_name() {
    let lanes = [GpuLane::Upload, GpuLane::Compute, GpuLane::Download];
    assert_eq!(
        serde_json::to_string(&lanes).unwrap(),
        r#"["Upload","Compute","Download"]"#
    );
    assert_eq!(GpuLane::default(), GpuLane::Compute);
}

/// The seed's `submit_after` refuses in one order: the graph's usability (quarantine, then
/// poison of any buffer it uses), then a producer of another runtime, then the runtime's
/// capacity, then a live host mapping of bytes it uses, then the graph's slots. Each
/// refusal here is the first of several that hold at once, told apart by the seed's words.
#[test]
fn submits_refusals_come_in_the_seeds_order() {
    let rt = Runtime::new(RuntimeOptions::sim().graph_slots(1).capacity(1)).unwrap();
    let other = Runtime::new(RuntimeOptions::sim()).unwrap();
    let foreign = {
        let buffer = other.buffer(8, Placement::HostVisible).unwrap();
        let mut graph = other.graph();
        graph.fill(buffer.whole(), 1).unwrap();
        graph.prepare().unwrap().submit().unwrap()
    };
    // `poisoned` is poisoned by an uncertain failure; `reader` only reads it.
    let poisoned = rt.buffer(8, Placement::GpuLocal).unwrap();
    let copied = rt.buffer(8, Placement::GpuLocal).unwrap();
    let mut lost = rt.graph();
    // SAFETY: the callback touches no memory and owns no native resource.
    unsafe {
        lost.gpu_scoped(&[GpuAccess::new(poisoned.whole(), Access::Write)], |_| {
            Err(Error::Message("lost".into()))
        })
        .unwrap();
    }
    let lost = lost.prepare().unwrap();
    assert!(lost.submit().unwrap().wait().is_err());
    let mut reader = rt.graph();
    reader.copy(copied.whole(), poisoned.whole()).unwrap();
    let reader = reader.prepare().unwrap();
    // `graph` fills a host-visible buffer; its only slot is held by a retired submission.
    let mapped = rt.buffer(8, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(mapped.whole(), 1).unwrap();
    let graph = graph.prepare().unwrap();
    let held = graph.submit().unwrap();
    held.wait().unwrap();
    // The capacity of 1 taken by a blocked submission of a third graph.
    let blocker = rt.buffer(8, Placement::HostVisible).unwrap();
    let (release, wait) = gate(Duration::from_secs(20));
    let mut blocked = rt.graph();
    blocked
        .host(
            &[GpuAccess::new(blocker.whole(), Access::Write)],
            move |_| {
                wait();
                Ok(())
            },
        )
        .unwrap();
    let in_flight = blocked.prepare().unwrap().submit().unwrap();
    let mapping = mapped.map_write(0..8).unwrap();
    let refusal = |result: hrx::Result<hrx::Completion>| result.unwrap_err();

    let quarantined = refusal(lost.submit_after(std::slice::from_ref(&foreign)));
    assert!(
        matches!(&quarantined, Error::DeviceLost(m) if m.contains("graph quarantined after native failure")),
        "{quarantined}"
    );
    let poison = refusal(reader.submit_after(std::slice::from_ref(&foreign)));
    assert!(
        matches!(&poison, Error::DeviceLost(m) if m.contains("poisoned by submission 1 region 0")),
        "{poison}"
    );
    let foreign_producer = refusal(graph.submit_after(std::slice::from_ref(&foreign)));
    assert!(
        foreign_producer
            .to_string()
            .contains("completion belongs to another runtime"),
        "{foreign_producer}"
    );
    let capacity = refusal(graph.submit());
    assert!(
        matches!(&capacity, Error::Busy(m) if m.contains("runtime submission capacity exhausted")),
        "{capacity}"
    );
    release.send(()).unwrap();
    in_flight.wait().unwrap();
    let host_mapping = refusal(graph.submit());
    assert!(
        matches!(&host_mapping, Error::Busy(m) if m.contains("is mapped for host")),
        "{host_mapping}"
    );
    drop(mapping);
    let slots = refusal(graph.submit());
    assert!(
        matches!(&slots, Error::Busy(m) if m.contains(
            "prepared run slots are occupied; drop completed observers or reserve more slots"
        )),
        "{slots}"
    );
    drop(held);
    graph.submit().unwrap().wait().unwrap();
}

/// The builder's refusals say what the seed's say (`Graph::copy_on`, `Graph::gpu_aliasing`,
/// `Graph::npu`, `push`, `prepare`), in its words, beside the ids and ranges the runtime adds:
/// a program or a check that looks for the seed's text finds it.
#[test]
fn the_builders_refusals_say_the_seeds_words() {
    let (rt, other) = (
        Runtime::new(RuntimeOptions::sim()).unwrap(),
        Runtime::new(RuntimeOptions::sim()).unwrap(),
    );
    let says = |error: Error, words: &str| {
        assert!(
            error.to_string().contains(words),
            "{error:?} lacks {words:?}"
        );
    };
    let local = rt.buffer(64, Placement::GpuLocal).unwrap();
    let foreign = other.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    says(
        graph.fill(foreign.whole(), 0).unwrap_err(),
        "buffer belongs to another runtime",
    );
    says(
        graph
            .copy(local.view(0..8).unwrap(), local.view(4..12).unwrap())
            .unwrap_err(),
        "copy needs equal, nonoverlapping ranges",
    );
    says(
        graph
            .copy(local.view(0..8).unwrap(), local.view(8..24).unwrap())
            .unwrap_err(),
        "copy needs equal, nonoverlapping ranges",
    );
    let foreign_kernel = other.kernel(&kernels::iota(4, 0, 1)).unwrap();
    says(
        graph
            .gpu(&foreign_kernel, &[local.view(0..16).unwrap()])
            .unwrap_err(),
        "kernel belongs to another runtime",
    );
    let iota = rt.kernel(&kernels::iota(4, 0, 1)).unwrap();
    says(
        graph.gpu(&iota, &[local.view(2..18).unwrap()]).unwrap_err(),
        "GPU allocation does not satisfy kernel alignment",
    );
    // An NPU kernel whose first argument must be 8-byte aligned.
    let mut spec = kernels::npu_threshold(16, 1);
    spec.contract.bindings[0].alignment = 8;
    let npu = rt.npu_kernel(&spec).unwrap();
    let (g0, g1) = (npu.group(0).unwrap(), npu.group(1).unwrap());
    let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
    says(
        graph
            .npu(
                &npu,
                &[input.view(1..17).unwrap(), output.view(0..16).unwrap()],
            )
            .unwrap_err(),
        "NPU allocation does not satisfy kernel alignment",
    );
    says(
        graph
            .npu(
                &npu,
                &[local.view(0..16).unwrap(), output.view(0..16).unwrap()],
            )
            .unwrap_err(),
        "missing NPU import",
    );
    says(
        graph
            .npu(
                &npu,
                &[input.view(0..16).unwrap(), input.view(16..32).unwrap()],
            )
            .unwrap_err(),
        "NPU binding device or host memory bank differs from the program",
    );
    assert!(graph.is_empty());
    says(
        graph.prepare().err().expect("an empty graph is refused"),
        "cannot prepare an empty graph",
    );
}
