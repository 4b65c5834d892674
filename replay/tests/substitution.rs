//! Scoped callbacks and host operations: replaced by their captured outputs, or excluded.

use crate::common::*;
use hrx::{Access, GpuAccess, Placement, Runtime, RuntimeOptions, TraceDigests, kernels};
use hrx_replay::{OutputResult, ReplayOptions};

const LEN: usize = 64;

fn pattern(round: u8) -> Vec<u8> {
    (0..LEN as u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(round * 40))
        .collect()
}

/// host op (input -> staged, x3) -> scoped callback (staged -> scratch, reversed) ->
/// threshold kernel (scratch -> out), three rounds with new input each time.
fn callbacks(rt: &Runtime, scratch_placement: Placement) {
    let input = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let staged = rt.buffer(LEN, Placement::HostVisible).unwrap();
    let scratch = rt.buffer(LEN, scratch_placement).unwrap();
    let out = rt.buffer(LEN, Placement::GpuLocal).unwrap();
    let threshold = rt.kernel(&kernels::threshold(LEN, 100)).unwrap();
    let mut graph = rt.graph();
    graph
        .host(
            &[
                GpuAccess::new(input.whole(), Access::Read),
                GpuAccess::new(staged.whole(), Access::Write),
            ],
            |views| {
                let source = views.read(0)?.to_vec();
                for (d, s) in views.write(1)?.iter_mut().zip(source) {
                    *d = s.wrapping_mul(3);
                }
                Ok(())
            },
        )
        .unwrap();
    // SAFETY: the callback reads and writes only its two bindings, through their host
    // mappings (a GPU-local scratch is left alone), and keeps nothing.
    unsafe {
        graph
            .gpu_scoped(
                &[
                    GpuAccess::new(staged.whole(), Access::Read),
                    GpuAccess::new(scratch.whole(), Access::Write),
                ],
                |views| {
                    let (Some(src), Some(dst)) = (views[0].host_pointer(), views[1].host_pointer())
                    else {
                        return Ok(());
                    };
                    for i in 0..LEN {
                        *dst.add(i) = *src.add(LEN - 1 - i);
                    }
                    Ok(())
                },
            )
            .unwrap();
    }
    graph
        .gpu(&threshold, &[scratch.whole(), out.whole()])
        .unwrap();
    let executable = graph.prepare().unwrap();
    assert_eq!(executable.regions(), 3);
    for round in 0..3 {
        input.write(0, &pattern(round)).unwrap();
        executable.submit().unwrap().wait().unwrap();
    }
}

#[test]
fn captured_contents_stand_in_for_callbacks() {
    let (trace, ()) = record(
        RuntimeOptions::sim()
            .trace_digests(TraceDigests::All)
            .trace_contents(true),
        |rt| callbacks(rt, Placement::HostVisible),
    );
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.substitutions.len(), 2);
    for sub in &report.substitutions {
        assert_eq!((sub.substituted, sub.unavailable), (3, 0), "{sub:?}");
    }
    assert_eq!(report.summary.outputs_excluded, 0);
    assert_eq!(report.summary.outputs_matched, 9);
    let text = report.to_text();
    assert!(
        text.contains("host callback, region 0): captured contents written in 3 submissions"),
        "{text}"
    );
    assert!(
        text.contains("scoped callback, region 1): captured contents written in 3 submissions"),
        "{text}"
    );
}

#[test]
fn without_contents_callback_outputs_and_their_readers_are_excluded() {
    let (trace, ()) = record(
        RuntimeOptions::sim().trace_digests(TraceDigests::All),
        |rt| callbacks(rt, Placement::HostVisible),
    );
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    // Every output depends on a callback: staged (host op), scratch (scoped), out (reads
    // scratch).
    assert_eq!(report.summary.outputs_excluded, 9);
    assert_eq!(report.summary.outputs_compared, 0);
    let excluded_out = report
        .outputs
        .iter()
        .find(|o| o.region == Some(2))
        .expect("the kernel's output");
    match &excluded_out.result {
        OutputResult::Excluded { why } => {
            assert!(why.contains("scoped callback in submission"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let text = report.to_text();
    assert!(text.contains("NOT REPLAYABLE in 3"), "{text}");
}

#[test]
fn a_scoped_callback_writing_gpu_local_memory_cannot_be_substituted() {
    let (trace, ()) = record(
        RuntimeOptions::sim()
            .trace_digests(TraceDigests::All)
            .trace_contents(true),
        |rt| callbacks(rt, Placement::GpuLocal),
    );
    let report = replay_with(&trace, &ReplayOptions::default());
    assert_eq!(report.exit_code(), 0);
    let scoped = report
        .substitutions
        .iter()
        .find(|s| s.kind == "scoped callback")
        .expect("scoped row");
    assert_eq!(scoped.unavailable, 3);
    assert!(
        scoped
            .why
            .as_deref()
            .unwrap_or_default()
            .contains("GPU-local"),
        "{scoped:?}"
    );
    // The host op's output still compares; the scoped one and the kernel's do not.
    assert_eq!(report.summary.outputs_matched, 3);
    assert_eq!(report.summary.outputs_excluded, 6);
}
