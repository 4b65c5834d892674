//! Kernels, contracts, graph building and lowering.

use crate::common::{bytes_of, words};
use hrx::{
    Access, BindingError, Error, GpuAccess, GpuLane, HazardKind, Placement, Queue, RegionKind,
    Runtime, RuntimeOptions, kernels,
};

fn sim() -> Runtime {
    Runtime::new(RuntimeOptions::sim()).unwrap()
}

conformance! {
    fn saxpy_and_iota_compute_on_the_device(rt) {
        let n = 1000;
        let x = rt.buffer(n * 4, Placement::HostVisible).unwrap();
        let y = rt.buffer(n * 4, Placement::GpuLocal).unwrap();
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        x.write(0, &xs.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
        let iota = rt.kernel(&kernels::iota(n, 1, 0)).unwrap();
        let saxpy = rt.kernel(&kernels::saxpy(n, 3.0)).unwrap();
        let mut graph = rt.graph();
        graph.gpu(&iota, &[y.whole()]).unwrap();
        graph.gpu(&saxpy, &[x.whole(), y.whole()]).unwrap();
        graph.prepare().unwrap().submit().unwrap().wait().unwrap();
        let out = y.to_vec().unwrap();
        for (i, chunk) in out.chunks_exact(4).enumerate() {
            let got = f32::from_le_bytes(chunk.try_into().unwrap());
            // iota wrote the integer 1, reinterpreted as f32 bits.
            assert_eq!(got, 3.0 * xs[i] + f32::from_bits(1), "element {i}");
        }
    }
}

#[test]
fn contracts_reject_short_misaligned_miscounted_and_aliased_bindings() {
    let rt = sim();
    let buffer = rt.buffer(4096, Placement::GpuLocal).unwrap();
    let saxpy = rt.kernel(&kernels::saxpy(256, 1.0)).unwrap();
    let mut graph = rt.graph();
    let short = graph.gpu(
        &saxpy,
        &[
            buffer.view(0..1024).unwrap(),
            buffer.view(1024..2000).unwrap(),
        ],
    );
    assert!(
        matches!(
            short,
            Err(Error::Binding(BindingError::TooShort {
                index: 1,
                len_bytes: 976,
                extent_bytes: 1024
            }))
        ),
        "{short:?}"
    );
    let misaligned = graph.gpu(
        &saxpy,
        &[
            buffer.view(2..1026).unwrap(),
            buffer.view(2048..3072).unwrap(),
        ],
    );
    assert!(
        matches!(
            misaligned,
            Err(Error::Binding(BindingError::Misaligned {
                index: 0,
                alignment: 4,
                ..
            }))
        ),
        "{misaligned:?}"
    );
    let count = graph.gpu(&saxpy, &[buffer.view(0..1024).unwrap()]);
    assert!(matches!(
        count,
        Err(Error::Binding(BindingError::Count {
            expected: 2,
            actual: 1
        }))
    ));
    let aliased = graph.gpu(
        &saxpy,
        &[
            buffer.view(0..1024).unwrap(),
            buffer.view(512..1536).unwrap(),
        ],
    );
    match aliased {
        Err(Error::Binding(BindingError::AliasedWrite {
            written: 1,
            other: 0,
            range,
            ..
        })) => assert_eq!(range, 512..1024),
        other => panic!("expected an aliasing error, got {other:?}"),
    }
    assert!(graph.is_empty(), "rejected operations are not added");
    // SAFETY: saxpy reads x[i] before writing y[i] at the same index: exact aliasing is safe.
    unsafe {
        graph
            .gpu_aliasing(
                &saxpy,
                &[buffer.view(0..1024).unwrap(), buffer.view(0..1024).unwrap()],
            )
            .unwrap();
        let still_short = graph.gpu_aliasing(
            &saxpy,
            &[buffer.view(0..1024).unwrap(), buffer.view(0..100).unwrap()],
        );
        assert!(matches!(
            still_short,
            Err(Error::Binding(BindingError::TooShort { .. }))
        ));
        let still_misaligned = graph.gpu_aliasing(
            &saxpy,
            &[buffer.view(1..1025).unwrap(), buffer.view(0..1024).unwrap()],
        );
        assert!(matches!(
            still_misaligned,
            Err(Error::Binding(BindingError::Misaligned { .. }))
        ));
    }
    assert_eq!(graph.len(), 1);
}

#[test]
fn copies_pick_their_lane_from_placements() {
    let rt = sim();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    let device = rt.buffer(64, Placement::GpuLocal).unwrap();
    let device2 = rt.buffer(64, Placement::GpuLocal).unwrap();
    let host2 = rt.buffer(64, Placement::HostVisible).unwrap();
    let lane_of = |dst: &hrx::Buffer, src: &hrx::Buffer| {
        let mut graph = rt.graph();
        graph.copy(dst.whole(), src.whole()).unwrap();
        graph.prepare().unwrap().describe()[0].queue
    };
    assert_eq!(lane_of(&device, &host), Queue::GpuUpload);
    assert_eq!(lane_of(&host, &device), Queue::GpuDownload);
    assert_eq!(lane_of(&device2, &device), Queue::GpuCompute);
    assert_eq!(lane_of(&host2, &host), Queue::GpuCompute);
    // The seed's choice reads the host pointer, which an NPU buffer object has.
    let npu = rt.buffer(64, Placement::NpuShared { group: 0 }).unwrap();
    assert_eq!(lane_of(&device, &npu), Queue::GpuUpload);
    assert_eq!(lane_of(&npu, &device), Queue::GpuDownload);
    assert_eq!(lane_of(&npu, &host), Queue::GpuCompute);
    let mut graph = rt.graph();
    graph
        .copy_on(device.whole(), host.whole(), GpuLane::Download)
        .unwrap();
    assert_eq!(
        graph.prepare().unwrap().describe()[0].queue,
        Queue::GpuDownload
    );
}

#[test]
fn bad_copies_and_empty_graphs_are_typed_errors() {
    let rt = sim();
    let a = rt.buffer(100, Placement::GpuLocal).unwrap();
    let b = rt.buffer(100, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    assert!(matches!(
        graph.copy(a.view(0..10).unwrap(), b.view(0..11).unwrap()),
        Err(Error::InvalidCopy { .. })
    ));
    let overlap = graph
        .copy(a.view(0..10).unwrap(), a.view(5..15).unwrap())
        .unwrap_err();
    assert!(overlap.to_string().contains("nonoverlapping"), "{overlap}");
    graph
        .copy(a.view(0..10).unwrap(), a.view(10..20).unwrap())
        .unwrap();
    assert!(matches!(rt.graph().prepare(), Err(Error::EmptyGraph)));
}

#[test]
fn another_runtimes_buffers_and_kernels_are_refused() {
    let (rt, other) = (sim(), sim());
    assert!(rt.same_domain(&rt.clone()) && !rt.same_domain(&other));
    let foreign = other.buffer(64, Placement::GpuLocal).unwrap();
    let local = rt.buffer(64, Placement::GpuLocal).unwrap();
    let foreign_kernel = other.kernel(&kernels::iota(16, 0, 1)).unwrap();
    let mut graph = rt.graph();
    assert!(matches!(
        graph.fill(foreign.whole(), 0),
        Err(Error::ForeignRuntime { what: "buffer" })
    ));
    assert!(matches!(
        graph.copy(local.whole(), foreign.whole()),
        Err(Error::ForeignRuntime { what: "buffer" })
    ));
    assert!(matches!(
        graph.gpu(&foreign_kernel, &[local.whole()]),
        Err(Error::ForeignRuntime { what: "kernel" })
    ));
    let npu = other.npu_kernel(&kernels::npu_threshold(64, 1)).unwrap();
    let a = rt.buffer(64, Placement::NpuShared { group: 0 }).unwrap();
    let b = rt.buffer(64, Placement::NpuShared { group: 1 }).unwrap();
    assert!(matches!(
        graph.npu(&npu, &[a.whole(), b.whole()]),
        Err(Error::ForeignRuntime { what: "kernel" })
    ));
}

/// The seed's builder checks an operation's own arguments before the runtime identity of
/// what it names: `gpu` runs the kernel's contract (binding count) before asking whose
/// kernel it is, `copy_on` its equal, non-overlapping ranges before `push` asks whose
/// buffers they are. A refused operation takes no node index.
#[test]
fn an_operations_own_checks_come_before_runtime_identity() {
    let (rt, other) = (sim(), sim());
    let local = rt.buffer(64, Placement::GpuLocal).unwrap();
    let foreign = other.buffer(64, Placement::GpuLocal).unwrap();
    let foreign_kernel = other.kernel(&kernels::iota(16, 0, 1)).unwrap();
    let mut graph = rt.graph();
    let error = graph
        .gpu(&foreign_kernel, &[local.whole(), local.whole()])
        .unwrap_err();
    assert!(
        matches!(error, Error::Binding(BindingError::Count { .. })),
        "{error:?}"
    );
    let error = graph
        .copy(local.view(0..8).unwrap(), foreign.view(0..9).unwrap())
        .unwrap_err();
    assert!(matches!(error, Error::InvalidCopy { .. }), "{error:?}");
    let error = graph
        .copy(local.view(0..8).unwrap(), foreign.view(0..8).unwrap())
        .unwrap_err();
    assert!(
        matches!(error, Error::ForeignRuntime { what: "buffer" }),
        "{error:?}"
    );
    assert_eq!(graph.fill(local.whole(), 0).unwrap().index(), 0);
}

/// The seed's `gpu_aliasing` asks whose kernel it is before anything else (no contract check
/// runs first, unlike `gpu`), and checks each binding's alignment before `push` asks whose
/// buffers they are: a foreign kernel with a short binding is refused as foreign, a
/// misaligned binding of a foreign buffer as misaligned, through `gpu` and `gpu_aliasing`.
#[test]
fn gpu_aliasing_asks_its_kernels_runtime_first_and_alignment_before_its_buffers() {
    let (rt, other) = (sim(), sim());
    let n = 16;
    let local = rt.buffer(n * 4 + 4, Placement::GpuLocal).unwrap();
    let foreign = other.buffer(n * 4 + 4, Placement::GpuLocal).unwrap();
    let foreign_kernel = other.kernel(&kernels::iota(n, 0, 1)).unwrap();
    let iota = rt.kernel(&kernels::iota(n, 0, 1)).unwrap();
    let mut graph = rt.graph();
    // SAFETY: refused before anything is recorded or launched.
    let error =
        unsafe { graph.gpu_aliasing(&foreign_kernel, &[local.view(0..4).unwrap()]) }.unwrap_err();
    assert!(
        matches!(error, Error::ForeignRuntime { what: "kernel" }),
        "{error:?}"
    );
    let misaligned = foreign.view(2..2 + n * 4).unwrap();
    let error = graph
        .gpu(&iota, std::slice::from_ref(&misaligned))
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Binding(BindingError::Misaligned {
                allocation: "GPU",
                ..
            })
        ),
        "{error:?}"
    );
    // SAFETY: as above.
    let error = unsafe { graph.gpu_aliasing(&iota, &[misaligned]) }.unwrap_err();
    assert!(
        matches!(error, Error::Binding(BindingError::Misaligned { .. })),
        "{error:?}"
    );
    assert!(graph.is_empty());
}

/// The seed's `gpu_scoped` checks no aliasing between a callback's bindings (its safety
/// contract makes the callback answer for how it uses them), and its region's uses are
/// their union: a later write waits on exactly the bytes the bindings cover together.
#[test]
fn a_scoped_callbacks_bindings_may_overlap_and_order_later_work_by_their_union() {
    let rt = sim();
    let buffer = rt.buffer(64, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(
                &[
                    GpuAccess::new(buffer.view(0..32).unwrap(), Access::Write),
                    GpuAccess::new(buffer.view(16..48).unwrap(), Access::ReadWrite),
                ],
                |views| {
                    assert_eq!(views.len(), 2);
                    Ok(())
                },
            )
            .unwrap();
    }
    graph.fill(buffer.view(40..64).unwrap(), 1).unwrap();
    let executable = graph.prepare().unwrap();
    let regions = executable.describe();
    let hazards: Vec<_> = regions[1]
        .hazards
        .iter()
        .map(|h| (h.producer, h.kind, h.buffer, h.range.clone()))
        .collect();
    assert_eq!(
        hazards,
        vec![(0, HazardKind::WriteAfterWrite, buffer.id(), 40..48)]
    );
    executable.submit().unwrap().wait().unwrap();
}

/// The seed's `gpu_scoped` takes any number of bindings, none too: such a callback is still a
/// region of its own on the Compute queue, run on a worker with no views.
#[test]
fn a_scoped_callback_without_bindings_is_a_region_of_its_own() {
    let rt = sim();
    let views = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = views.clone();
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory and owns no native resource.
    unsafe {
        graph
            .gpu_scoped(&[], move |bound| {
                *seen.lock().unwrap() = Some(bound.len());
                Ok(())
            })
            .unwrap();
    }
    let executable = graph.prepare().unwrap();
    let shape = crate::common::region_shapes(&executable.describe());
    assert_eq!(shape, vec![(Queue::GpuCompute, RegionKind::Scoped, 0..1)]);
    executable.submit().unwrap().wait().unwrap();
    assert_eq!(*views.lock().unwrap(), Some(0));
}

/// A run of copies only is a copy batch on the lane's cached copy stream, on the Compute
/// lane too (device-to-device copies), as in the seed: no native graph is built for it, and
/// its bytes count on the Compute lane once it ran.
#[test]
fn a_run_of_device_copies_is_a_copy_batch_on_the_compute_lane() {
    let rt = sim();
    let a = rt.buffer(64, Placement::GpuLocal).unwrap();
    let b = rt.buffer(64, Placement::GpuLocal).unwrap();
    a.write(0, &[3; 64]).unwrap();
    let mut graph = rt.graph();
    graph
        .copy(b.view(0..32).unwrap(), a.view(0..32).unwrap())
        .unwrap();
    graph
        .copy(b.view(32..64).unwrap(), a.view(32..64).unwrap())
        .unwrap();
    let executable = graph.prepare().unwrap();
    let regions = executable.describe();
    assert_eq!(
        regions
            .iter()
            .map(|r| (r.queue, r.kind, r.nodes.clone(), r.copy_bytes))
            .collect::<Vec<_>>(),
        vec![(Queue::GpuCompute, RegionKind::CopyBatch, 0..2, 64)]
    );
    let counters = rt.counters();
    assert_eq!(
        (
            counters.native_graphs_prepared,
            counters.copy_streams_created
        ),
        (0, 1)
    );
    executable.submit().unwrap().wait().unwrap();
    assert_eq!(rt.counters().lane_copy_bytes, [0, 64, 0]);
    assert_eq!(b.to_vec().unwrap(), vec![3; 64]);
}

#[test]
fn npu_bindings_need_an_import_in_the_arguments_memory_bank() {
    let rt = sim();
    let kernel = rt.npu_kernel(&kernels::npu_threshold(64, 100)).unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    let input = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let output = rt.buffer(64, Placement::NpuShared { group: g1 }).unwrap();
    let plain = rt.buffer(64, Placement::HostVisible).unwrap();
    let wrong_bank = rt.buffer(64, Placement::NpuShared { group: g0 }).unwrap();
    let mut graph = rt.graph();
    assert!(matches!(
        graph.npu(&kernel, &[plain.whole(), output.whole()]),
        Err(Error::Unsupported(_))
    ));
    let error = graph
        .npu(&kernel, &[input.whole(), wrong_bank.whole()])
        .unwrap_err();
    // The seed's variant (`runtime::seed_rules::an_npu_binding_in_another_memory_bank_is_unsupported`).
    assert!(matches!(error, Error::Unsupported(_)), "{error}");
    input
        .write(0, &(0..64).map(|i| i * 4).collect::<Vec<u8>>())
        .unwrap();
    graph
        .npu(&kernel, &[input.whole(), output.whole()])
        .unwrap();
    let executable = graph.prepare().unwrap();
    assert_eq!(executable.describe()[0].queue, Queue::Npu);
    executable.submit().unwrap().wait().unwrap();
    let expected: Vec<u8> = (0..64)
        .map(|i| if i * 4 >= 100 { 255 } else { 0 })
        .collect();
    assert_eq!(output.to_vec().unwrap(), expected);
}

#[test]
fn prepare_lowers_regions_as_the_seed_specifies() {
    let rt = sim();
    let host = rt.buffer(4096, Placement::HostVisible).unwrap();
    let a = rt.buffer(4096, Placement::GpuLocal).unwrap();
    let b = rt.buffer(4096, Placement::GpuLocal).unwrap();
    let out = rt.buffer(4096, Placement::HostVisible).unwrap();
    let iota = rt.kernel(&kernels::iota(1024, 0, 1)).unwrap();
    let mut graph = rt.graph();
    graph
        .copy(a.view(0..2048).unwrap(), host.view(0..2048).unwrap())
        .unwrap(); // 0 upload
    graph
        .copy(a.view(2048..4096).unwrap(), host.view(2048..4096).unwrap())
        .unwrap(); // 1 upload
    graph.gpu(&iota, &[b.whole()]).unwrap(); // 2 compute
    graph
        .copy(b.view(0..1024).unwrap(), a.view(0..1024).unwrap())
        .unwrap(); // 3 compute (device copy)
    // SAFETY: touches no memory.
    unsafe {
        graph
            .gpu_scoped(&[GpuAccess::new(b.whole(), Access::ReadWrite)], |_| Ok(()))
            .unwrap()
    }; // 4 scoped
    graph.fill(a.whole(), 0).unwrap(); // 5 compute
    graph.copy(out.whole(), b.whole()).unwrap(); // 6 download
    let executable = graph.prepare().unwrap();
    let regions = executable.describe();
    let shape = crate::common::region_shapes(&regions);
    assert_eq!(
        shape,
        vec![
            (Queue::GpuUpload, RegionKind::CopyBatch, 0..2),
            (Queue::GpuCompute, RegionKind::NativeGraph, 2..4),
            (Queue::GpuCompute, RegionKind::Scoped, 4..5),
            (Queue::GpuCompute, RegionKind::NativeGraph, 5..6),
            (Queue::GpuDownload, RegionKind::CopyBatch, 6..7),
        ]
    );
    // Inside region 1: the device copy overwrites bytes iota wrote (WAW on b 0..1024) and
    // reads bytes the upload wrote (that edge is region-level).
    assert_eq!(regions[1].internal.len(), 1);
    let (consumer, hazard) = &regions[1].internal[0];
    assert_eq!(
        (
            *consumer,
            hazard.producer,
            hazard.kind,
            hazard.range.clone()
        ),
        (3, 2, HazardKind::WriteAfterWrite, 0..1024)
    );
    let deps = |r: usize| {
        regions[r]
            .hazards
            .iter()
            .map(|h| (h.producer, h.kind))
            .collect::<Vec<_>>()
    };
    assert_eq!(deps(1), vec![(0, HazardKind::ReadAfterWrite)]);
    assert_eq!(deps(2), vec![(1, HazardKind::ReadAfterWrite)]);
    assert_eq!(
        deps(3),
        vec![
            (0, HazardKind::WriteAfterWrite),
            (1, HazardKind::WriteAfterRead)
        ]
    );
    assert_eq!(deps(4), vec![(2, HazardKind::ReadAfterWrite)]);
    assert_eq!(regions[0].copy_bytes, 4096);
    assert!(
        executable.parallel(),
        "region 3 does not depend on region 2"
    );
    let counters = rt.counters();
    assert_eq!(counters.native_graphs_prepared, 2);
    assert_eq!(
        counters.copy_streams_created, 2,
        "Upload and Download copy streams"
    );
    host.write(0, &bytes_of(&(0..1024).map(|i| i * 3).collect::<Vec<_>>()))
        .unwrap();
    executable.submit().unwrap().wait().unwrap();
    let result = words(&out.to_vec().unwrap());
    assert_eq!(
        &result[..256],
        &(0..256).map(|i| i * 3).collect::<Vec<_>>()[..],
        "copied from a"
    );
    assert_eq!(&result[256..], &(256..1024).collect::<Vec<_>>()[..], "iota");
    let counters = rt.counters();
    assert_eq!(counters.lane_copy_bytes, [4096, 1024, 4096]);
    assert_eq!(counters.copied_bytes, 9216);
    assert_eq!(counters.submissions, 1);
}

#[test]
fn copy_streams_are_cached_per_lane_across_graphs() {
    let rt = sim();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    let device = rt.buffer(64, Placement::GpuLocal).unwrap();
    for _ in 0..3 {
        let mut graph = rt.graph();
        graph.copy(device.whole(), host.whole()).unwrap();
        graph.prepare().unwrap();
    }
    assert_eq!(rt.counters().copy_streams_created, 1);
    assert_eq!(rt.counters().native_graphs_prepared, 0);
}

#[test]
fn a_chain_is_not_parallel() {
    let rt = sim();
    let a = rt.buffer(64, Placement::GpuLocal).unwrap();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(a.whole(), 1).unwrap();
    graph.copy(host.whole(), a.whole()).unwrap();
    let executable = graph.prepare().unwrap();
    assert_eq!(executable.regions(), 2);
    assert!(!executable.parallel());
}

#[test]
fn host_callbacks_run_on_the_host_queue_in_hazard_order() {
    let rt = sim();
    let a = rt.buffer(16, Placement::HostVisible).unwrap();
    let b = rt.buffer(16, Placement::HostVisible).unwrap();
    let device = rt.buffer(16, Placement::GpuLocal).unwrap();
    let mut graph = rt.graph();
    graph.fill(device.whole(), 7).unwrap();
    graph.copy(a.whole(), device.whole()).unwrap();
    graph
        .host(
            &[
                GpuAccess::new(a.whole(), Access::Read),
                GpuAccess::new(b.whole(), Access::Write),
            ],
            |views| {
                let doubled: Vec<u8> = views.read(0)?.iter().map(|v| v * 2).collect();
                views.write(1)?.copy_from_slice(&doubled);
                assert!(views.write(0).is_err(), "binding 0 is read-only");
                Ok(())
            },
        )
        .unwrap();
    let executable = graph.prepare().unwrap();
    assert_eq!(executable.describe()[2].queue, Queue::Host);
    executable.submit().unwrap().wait().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![14; 16]);
    let mut graph = rt.graph();
    let error = graph
        .host(&[GpuAccess::new(device.whole(), Access::Read)], |_| Ok(()))
        .unwrap_err();
    assert!(matches!(error, Error::Unsupported(_)), "{error}");
}

#[test]
fn kernels_without_code_for_the_backend_are_unsupported() {
    let rt = sim();
    let mut spec = kernels::iota(4, 0, 1);
    spec.code.host = None;
    assert!(matches!(rt.kernel(&spec), Err(Error::Unsupported(_))));
}
