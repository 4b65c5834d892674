//! Buffers, views, host access, poisoning and visibility.

use hrx::{Access, Engine, Error, GpuAccess, Placement, Runtime, RuntimeOptions};
use std::sync::mpsc;
use std::time::Duration;

conformance! {
    fn host_write_and_read_round_trip_on_every_placement(rt) {
        for placement in [Placement::GpuLocal, Placement::HostVisible, Placement::NpuShared { group: 0 }] {
            let buffer = rt.buffer(1000, placement).unwrap();
            let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
            buffer.write(0, &data).unwrap();
            assert_eq!(buffer.to_vec().unwrap(), data, "{placement:?}");
            let mut middle = [0u8; 10];
            buffer.read(500, &mut middle).unwrap();
            assert_eq!(&middle[..], &data[500..510]);
        }
    }
}

conformance! {
    fn gpu_local_buffers_have_no_host_mapping(rt) {
        let buffer = rt.buffer(64, Placement::GpuLocal).unwrap();
        assert!(matches!(buffer.map_read(0..64), Err(Error::Unsupported(_))));
        let host = rt.buffer(64, Placement::HostVisible).unwrap();
        host.map_write(0..64).unwrap().fill(3);
        assert!(host.map_read(0..64).unwrap().iter().all(|&b| b == 3));
    }
}

conformance! {
    /// Host-visible and NPU-shared memory is page-aligned (pinned memory is; XRT imports host
    /// memory into BOs only at 4 KiB-aligned addresses).
    fn host_mapped_memory_is_page_aligned(rt) {
        for placement in [Placement::HostVisible, Placement::NpuShared { group: 0 }] {
            for len in [1, 100, 4097] {
                let buffers: Vec<_> = (0..3).map(|_| rt.buffer(len, placement).unwrap()).collect();
                for buffer in &buffers {
                    let address = buffer.map_read(0..len).unwrap().as_ptr() as usize;
                    assert_eq!(address % 4096, 0, "{placement:?} {len} bytes at {address:#x}");
                }
            }
        }
    }
}

#[test]
fn views_out_of_bounds_are_rejected() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(100, Placement::HostVisible).unwrap();
    let error = buffer.view(90..101).unwrap_err();
    assert!(
        matches!(error, Error::OutOfBounds { len_bytes: 100, .. }),
        "{error}"
    );
    assert!(buffer.write(95, &[0; 10]).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = buffer.view(10..5);
    assert!(reversed.is_err());
}

/// A length no memory can hold is refused with an error for every placement, up to
/// `usize::MAX`. The software device rounded the length up to its alignment unchecked: a
/// debug build panicked, and a release build wrapped to an empty allocation behind a buffer
/// of `len` bytes, which a write then ran past.
#[test]
fn a_length_no_memory_can_hold_is_refused_for_every_placement() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    for len in [usize::MAX, usize::MAX - 255, isize::MAX as usize + 1] {
        for placement in [
            Placement::GpuLocal,
            Placement::HostVisible,
            Placement::NpuShared { group: 0 },
        ] {
            let error = rt.buffer(len, placement).unwrap_err();
            assert!(
                error.to_string().contains(&format!("{len} bytes")),
                "{placement:?} {len}: {error}"
            );
        }
    }
    // The runtime goes on allocating.
    assert_eq!(rt.buffer(64, Placement::GpuLocal).unwrap().len(), 64);
}

#[test]
fn overlaps_and_conflicts_are_exact_byte_range_tests() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let a = rt.buffer(100, Placement::GpuLocal).unwrap();
    let b = rt.buffer(100, Placement::GpuLocal).unwrap();
    let v = |buffer: &hrx::Buffer, r: std::ops::Range<usize>| buffer.view(r).unwrap();
    assert!(v(&a, 0..10).overlaps(&v(&a, 9..20)));
    assert!(
        !v(&a, 0..10).overlaps(&v(&a, 10..20)),
        "touching ranges share no byte"
    );
    assert!(!v(&a, 0..10).overlaps(&v(&b, 0..10)), "other buffer");
    assert!(!v(&a, 5..5).overlaps(&v(&a, 0..10)), "empty view");
    assert!(v(&a, 0..10).conflicts(&v(&a, 9..20)));
    assert!(!v(&a, 0..10).conflicts(&v(&a, 10..20)));
    assert!(!v(&a, 0..100).conflicts(&v(&b, 0..100)));
}

#[test]
fn overlapping_host_mappings_are_busy_disjoint_ones_are_not() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(100, Placement::HostVisible).unwrap();
    let write = buffer.map_write(0..50).unwrap();
    assert!(matches!(buffer.map_read(40..60), Err(Error::Busy(_))));
    let disjoint = buffer.map_read(50..100).unwrap();
    drop(write);
    let reads = buffer.map_read(0..60).unwrap();
    drop((reads, disjoint));
}

#[test]
fn a_live_mapping_makes_a_conflicting_submit_busy_and_a_disjoint_one_run() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(128, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.view(0..64).unwrap(), 9).unwrap();
    let fill_low = graph.prepare().unwrap();
    let mapping = buffer.map_read(32..128).unwrap();
    let error = fill_low.submit().unwrap_err();
    assert!(matches!(error, Error::Busy(_)), "{error}");
    assert!(error.to_string().contains("mapped"), "{error}");
    // Reading bytes 64..128 while the device writes 0..64 is fine.
    let mut other = rt.graph();
    other.fill(buffer.view(0..32).unwrap(), 1).unwrap();
    other.prepare().unwrap().submit().unwrap().wait().unwrap();
    drop(mapping);
    fill_low.submit().unwrap().wait().unwrap();
    assert_eq!(&buffer.to_vec().unwrap()[..64], &[9; 64]);
}

/// A submission writing `view` (a scoped callback that touches no memory), held in flight
/// until the sender sends (or 10 s pass).
fn write_held(rt: &Runtime, view: hrx::BufferView) -> (hrx::Completion, mpsc::Sender<()>) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let mut graph = rt.graph();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(&[GpuAccess::new(view, Access::Write)], move |_| {
                gate.lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(10))
                    .ok();
                Ok(())
            })
            .unwrap();
    }
    (graph.prepare().unwrap().submit().unwrap(), release)
}

#[test]
fn host_access_during_a_conflicting_submission_is_busy_never_a_race() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(64, Placement::HostVisible).unwrap();
    let (completion, release) = write_held(&rt, buffer.view(0..32).unwrap());
    assert!(matches!(buffer.map_read(0..16), Err(Error::Busy(_))));
    assert!(matches!(buffer.write(16, &[1; 4]), Err(Error::Busy(_))));
    buffer.map_read(32..64).unwrap();
    release.send(()).unwrap();
    completion.wait().unwrap();
    buffer.map_read(0..16).unwrap();
}

/// A zero-length view shares no byte with anything (conflicts are exact byte-range tests, as
/// in the seed and DESIGN): every builder call takes one, a copy between two empty views at
/// the same offset is no overlap, a zero-length buffer is a buffer, and an empty use orders
/// nothing: no hazard inside a graph or between its regions, no wait behind a submission in
/// flight that writes every byte, no `Busy` beside an in-flight write or a live host mapping
/// of every byte, both ways.
#[test]
fn a_zero_length_view_conflicts_with_nothing() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let host = rt.buffer(64, Placement::HostVisible).unwrap();
    let device = rt.buffer(64, Placement::GpuLocal).unwrap();
    let nothing = rt.buffer(0, Placement::HostVisible).unwrap();
    let mut graph = rt.graph();
    graph.fill(device.whole(), 1).unwrap();
    graph.fill(device.view(64..64).unwrap(), 2).unwrap();
    graph
        .copy(device.view(5..5).unwrap(), device.view(5..5).unwrap())
        .unwrap();
    graph
        .copy(device.view(0..0).unwrap(), host.view(3..3).unwrap())
        .unwrap();
    graph
        .copy(nothing.whole(), device.view(7..7).unwrap())
        .unwrap();
    // SAFETY: the callback touches no memory.
    unsafe {
        graph
            .gpu_scoped(
                &[GpuAccess::new(host.view(8..8).unwrap(), Access::Write)],
                |_| Ok(()),
            )
            .unwrap();
    }
    let executable = graph.prepare().unwrap();
    let regions = executable.describe();
    assert_eq!(regions.len(), 4, "{regions:?}");
    assert!(
        regions
            .iter()
            .all(|r| r.hazards.is_empty() && r.internal.is_empty()),
        "an empty use ordered something: {regions:?}"
    );
    // A submission in flight writes every byte of `host`; empty uses of it go by.
    let (held, release) = write_held(&rt, host.whole());
    let mapping = host.map_write(10..10).unwrap();
    let mut beside = rt.graph();
    beside
        .copy(host.view(20..20).unwrap(), device.view(0..0).unwrap())
        .unwrap();
    let beside = beside.prepare().unwrap();
    assert_eq!(beside.describe()[0].queue, hrx::Queue::GpuDownload);
    beside.submit().unwrap().wait().unwrap();
    assert!(
        !held.is_complete(),
        "an empty write waited for the write in flight"
    );
    drop(mapping);
    release.send(()).unwrap();
    held.wait().unwrap();
    // A live mapping of every byte: empty uses still submit.
    let all = host.map_write(0..64).unwrap();
    executable.submit().unwrap().wait().unwrap();
    beside.submit().unwrap().wait().unwrap();
    drop(all);
    assert_eq!(device.to_vec().unwrap(), vec![1; 64]);
}

/// Visibility is per buffer, as in the seed (`make_visible` and `wrote` of the whole storage,
/// `host_conflict(access)` with no range): on an NPU buffer object, whose syncs move the
/// whole object, a host access and a device use conflict at any bytes, both ways; pinned
/// memory keeps exact byte ranges (the two tests above).
#[test]
fn on_an_npu_buffer_object_host_access_and_device_use_conflict_at_any_bytes() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(64, Placement::NpuShared { group: 0 }).unwrap();
    let mut graph = rt.graph();
    graph.fill(buffer.view(0..32).unwrap(), 9).unwrap();
    let fill_low = graph.prepare().unwrap();
    let mapping = buffer.map_read(32..64).unwrap();
    let error = fill_low.submit().unwrap_err();
    assert!(matches!(error, Error::Busy(_)), "{error}");
    assert!(error.to_string().contains("mapped"), "{error}");
    drop(mapping);

    let (completion, release) = write_held(&rt, buffer.view(0..32).unwrap());
    assert!(matches!(buffer.map_read(32..64), Err(Error::Busy(_))));
    assert!(matches!(buffer.write(40, &[1; 4]), Err(Error::Busy(_))));
    release.send(()).unwrap();
    completion.wait().unwrap();
    buffer.write(40, &[1; 4]).unwrap();
    fill_low.submit().unwrap().wait().unwrap();
    let bytes = buffer.to_vec().unwrap();
    assert_eq!((&bytes[..32], &bytes[40..44]), (&[9; 32][..], &[1; 4][..]));
}

#[test]
fn visibility_is_tracked_between_engines() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let buffer = rt.buffer(64, Placement::NpuShared { group: 0 }).unwrap();
    assert!(buffer.visible_to(Engine::Npu) && buffer.visible_to(Engine::Gpu));
    buffer.wrote(Engine::Gpu);
    assert!(!buffer.visible_to(Engine::Npu) && !buffer.visible_to(Engine::Host));
    let before = rt.counters().visibility_syncs;
    buffer.make_visible(Engine::Npu).unwrap();
    assert!(buffer.visible_to(Engine::Npu) && !buffer.visible_to(Engine::Host));
    buffer.make_visible(Engine::Npu).unwrap();
    assert_eq!(
        rt.counters().visibility_syncs,
        before + 1,
        "a second make_visible is free"
    );
    // A host write makes only the host current.
    buffer.write(0, &[1]).unwrap();
    assert!(buffer.visible_to(Engine::Host) && !buffer.visible_to(Engine::Gpu));
}

#[test]
fn device_work_syncs_visibility_before_running() {
    let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
    let src = rt.buffer(64, Placement::HostVisible).unwrap();
    let dst = rt.buffer(64, Placement::GpuLocal).unwrap();
    src.write(0, &[5; 64]).unwrap();
    assert!(!src.visible_to(Engine::Gpu));
    let mut graph = rt.graph();
    graph.copy(dst.whole(), src.whole()).unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    assert!(src.visible_to(Engine::Gpu));
    assert!(dst.visible_to(Engine::Gpu) && !dst.visible_to(Engine::Host));
    assert_eq!(dst.to_vec().unwrap(), vec![5; 64]);
    assert!(dst.visible_to(Engine::Host));
}

/// A buffer's release (`BufferDropped`) is recorded when the runtime lets its memory go, not
/// when the program drops its handle: a submission in flight that uses it keeps it until it
/// retired, and so does a view of it (a replay lets go of its own buffer there: with a
/// release recorded at the handle's drop, it would free memory its submissions still use).
#[test]
fn a_buffer_is_recorded_released_when_its_memory_goes_not_when_its_handle_drops() {
    let (recorder, sink) = crate::common::memory_recorder();
    let rt = Runtime::new(RuntimeOptions::sim().recorder(recorder.clone())).unwrap();
    let used = rt.buffer(64, Placement::HostVisible).unwrap();
    let viewed = rt.buffer(64, Placement::HostVisible).unwrap();
    let view = viewed.view(0..8).unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let mut graph = rt.graph();
    let write = GpuAccess::new(used.whole(), Access::Write);
    graph
        .host(&[write], move |_| {
            gate.lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10))
                .ok();
            Ok(())
        })
        .unwrap();
    // The prepared graph goes at once: the submission in flight holds it.
    let completion = graph.prepare().unwrap().submit().unwrap();
    let (used_id, viewed_id) = (used.id(), viewed.id());
    drop((used, viewed));
    let handles_dropped = recorder.now_ns();
    release.send(()).unwrap();
    completion.wait().unwrap();
    drop(completion);
    let retired = recorder.now_ns();
    drop(view);
    drop(rt);
    recorder.close().unwrap();
    let trace = hrx_capture::Trace::from_bytes(&sink.contents()).unwrap();
    let released = |id: u64| {
        let mut times = trace.records.iter().filter_map(|r| match r {
            hrx_capture::schema::Record::BufferDropped(d) if d.buffer.0 == id => Some(d.time_ns),
            _ => None,
        });
        let time = times
            .next()
            .unwrap_or_else(|| panic!("buffer {id} is released"));
        assert_eq!(times.next(), None, "buffer {id} is released once");
        time
    };
    let done = (trace.records.iter())
        .find_map(|r| match r {
            hrx_capture::schema::Record::SubmissionDone(d) => Some(d.time_ns),
            _ => None,
        })
        .expect("the submission's outcome");
    let used_at = released(used_id);
    assert!(
        used_at > handles_dropped && used_at > done,
        "released at {used_at} ns: its handle dropped at {handles_dropped}, its submission \
         retired at {done}"
    );
    let viewed_at = released(viewed_id);
    assert!(
        viewed_at > retired,
        "released at {viewed_at} ns, before its view dropped (after {retired})"
    );
}
