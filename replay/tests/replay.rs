//! Integration tests of hrx-replay, as one binary.
//!
//! Traces are recorded in-process into a memory sink through `RuntimeOptions::recorder`,
//! so the tests never touch the process-wide trace and run in parallel. Replays run on the
//! software device.

mod common;
mod contention;
mod corpus;
mod divergence;
mod fault_matrix;
mod fixtures;
mod loss_race;
mod streamed;
mod substitution;
mod unreplayable;
mod workloads;

/// A capture whose runtimes found the host loaded (the host-load counter they set at their
/// start and end at 1 per CPU or more) is said to be a poor timing reference, before the
/// verdict; one on a quiet host is not (the runtime sets the counter from `/proc/loadavg`,
/// so the test sets its samples).
#[test]
fn a_capture_on_a_loaded_host_is_said_to_be_a_poor_timing_reference() {
    let recorded = common::hazards_trace();
    let samples = recorded
        .records
        .iter()
        .filter(|r| matches!(r, hrx_capture::Record::CounterSample(_)))
        .count();
    if samples == 0 {
        println!("skipped: no /proc/loadavg here, so the runtime set no host-load counter");
        return;
    }
    let said = "the capture ran on a loaded host";
    for (load, loaded) in [(2.5, true), (0.25, false)] {
        let trace = common::rewrite(recorded, |record, _| {
            if let hrx_capture::Record::CounterSample(sample) = record {
                sample.value = hrx_capture::schema::CounterValue(load);
            }
            true
        });
        let report = common::replay_with(&trace, &hrx_replay::ReplayOptions::default());
        assert_eq!(
            report.notes.iter().any(|n| n.starts_with(said)),
            loaded,
            "load {load}: {:?}",
            report.notes
        );
    }
}

/// At one instant of the session clock, a host write comes before the submit, and a buffer's
/// release after it: the program wrote what it submitted, and its runtime lets a buffer go
/// only once every submission using it retired. Each round's write and its buffers' release
/// moved to the instant of its submit replay as recorded; the release placed first would
/// fail the replay ("used after the trace released it"), the write placed after the submit
/// would change its output.
#[test]
fn a_write_and_a_release_at_the_instant_of_a_submit_go_before_and_after_it() {
    use hrx_capture::schema::Record;
    let trace = common::rounds_trace();
    let submits: Vec<u64> = records!(trace, Submit).map(|s| s.time_ns).collect();
    // Buffers are created in order, two a round (big, out); each round writes once. Their
    // ids are process-wide (tests running beside this one take ids in between), so a
    // buffer's round is its place among the trace's creations, not its id's offset.
    let created: Vec<u64> = records!(trace, BufferCreated).map(|b| b.buffer.0).collect();
    let round_of = |buffer: hrx_capture::schema::BufferId| {
        created
            .iter()
            .position(|&id| id == buffer.0)
            .expect("a buffer the trace creates")
            / 2
    };
    let edited = common::rewrite(trace, |record, _| {
        match record {
            Record::BufferDropped(d) => d.time_ns = submits[round_of(d.buffer)],
            Record::HostWrite(w) => w.time_ns = submits[round_of(w.buffer)],
            _ => {}
        }
        true
    });
    let report = common::replay_with(&edited, &hrx_replay::ReplayOptions::default());
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    assert_eq!(report.summary.outputs_matched, 2, "{}", report.to_text());
}
